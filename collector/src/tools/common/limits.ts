/**
 * Bounds that keep the tools safe on huge or hostile input: nothing the tools read is held whole unless it is
 * below these sizes.
 */

/** A transcript line longer than this is skipped (and counted) without being buffered. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

/**
 * Hook stdout kept in memory for JSON parsing. Past it the tool still counts every character, but treats the
 * output as plain text (a JSON object that large is over the cap many times anyway).
 */
export const MAX_CAPTURED_STDOUT_BYTES = 64 * 1024 * 1024;

/** Largest settings file `check --settings` reads. */
export const MAX_SETTINGS_BYTES = 10 * 1024 * 1024;
