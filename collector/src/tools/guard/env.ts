/**
 * The environment variables `hookwatch guard` reads. A leaf: the configuration loader of `serve` and the other
 * commands imports it so that these, exported in the shell a guarded hook and the service share, are not taken
 * for misspelt settings.
 */
export const GUARD_ENV = {
  budget: 'HOOKWATCH_GUARD_BUDGET',
  killGrace: 'HOOKWATCH_GUARD_KILL_GRACE',
  report: 'HOOKWATCH_GUARD_REPORT',
  /** Set (to anything but the empty string), no trim is reported, whatever --report or HOOKWATCH_GUARD_REPORT say. */
  noReport: 'HOOKWATCH_GUARD_NO_REPORT',
  dir: 'HOOKWATCH_GUARD_DIR',
  keepFor: 'HOOKWATCH_GUARD_KEEP_FOR',
  keepSize: 'HOOKWATCH_GUARD_KEEP_SIZE',
  /** Stdout bytes held in memory before the rest goes to a file (for tests). */
  spillBytes: 'HOOKWATCH_GUARD_SPILL_BYTES',
} as const;

export const GUARD_ENV_NAMES: readonly string[] = Object.values(GUARD_ENV);
