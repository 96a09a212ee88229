/**
 * Bounds that keep the tools safe on huge or hostile input: nothing the tools read is held whole unless it is
 * below these sizes.
 */

/** A transcript line longer than this is skipped (and counted) without being buffered. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

/**
 * Hook stdout kept in memory for JSON parsing, while it may be a JSON object (its first character other than white
 * space is `{`). Past it the tool still counts every character, but treats the output as plain text (a JSON object
 * that large is over the cap many times anyway).
 */
export const MAX_CAPTURED_STDOUT_BYTES = 64 * 1024 * 1024;

/**
 * Hook stdout kept in memory once it cannot be a JSON object: plain text is measured by its length, counted over
 * all of it, and only its head is ever shown (the preview, --show-content).
 */
export const MAX_KEPT_PLAIN_STDOUT_BYTES = 1024 * 1024;

/**
 * Most hook stdout `check` reads. Past it the output is over the cap however it goes on, and a hook such as `yes`
 * would be read (and counted) until its timeout: check stops reading there and stops the hook.
 */
export const MAX_READ_STDOUT_BYTES = 256 * 1024 * 1024;

/**
 * Most hook stderr `check` reads, as much as of stdout. Stderr is not measured, and only its head is kept; but a hook
 * such as `yes >&2` would be read until its timeout, a core busy all the while: check stops reading there and
 * stops the hook, as for stdout.
 */
export const MAX_READ_STDERR_BYTES = MAX_READ_STDOUT_BYTES;

/** Largest settings file `check --settings` reads. */
export const MAX_SETTINGS_BYTES = 10 * 1024 * 1024;
