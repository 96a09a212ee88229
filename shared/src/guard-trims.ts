/**
 * What `hookwatch guard` reports and the API serves about it: outputs the guard shortened before Claude Code
 * measured them, so a hook that would have lost all but a ~2,000-character preview delivered its front instead.
 */

/** The event name of the OTLP log record the guard sends per trimmed output. */
export const GUARD_TRIM_EVENT = 'hookwatch.guard_trim';

/**
 * The attribute that identifies one trim (OpenTelemetry's `log.record.uid`, random per trim): a retried export
 * keeps it, two trims never share it. Guards before it sent none; theirs are told apart by their content.
 */
export const GUARD_TRIM_UID = 'log.record.uid';

/**
 * The output fields the guard reports trims of (stdout whole, or a JSON output's capped strings). A top-level
 * `additionalContext`, which Claude Code does not cap, is no longer trimmed; reports of it from earlier guards
 * are still accepted.
 */
export const GUARD_FIELDS = [
  'stdout',
  'additionalContext',
  'hookSpecificOutput.additionalContext',
  'systemMessage',
  'initialUserMessage',
  'hookSpecificOutput.initialUserMessage',
] as const;
export type GuardField = (typeof GUARD_FIELDS)[number];

/** One time bucket of a hook's trims. */
export interface GuardTrimBucket {
  /** Start of the bucket (inclusive), aligned like the series buckets (SeriesBucket.start). */
  start: string;
  /**
   * End of the bucket (exclusive), as SeriesBucket.end: start + step for a whole bucket, the answer's `to` for a
   * last bucket `to` cuts, the time of the answer for the one still filling (in a range ending now or later). A
   * bucket counts the trims from the later of `start` and `from` until `end`.
   */
  end: string;
  trims: number;
  /** Largest output the hook sent (before the guard) and largest the guard delivered, in the bucket. */
  maxSentChars: number;
  maxKeptChars: number;
}

/** GET /api/v1/hooks/:id/guard-trims */
export interface GuardTrimsResponse {
  hookId: string;
  from: string;
  to: string;
  /** Bucket width in seconds. */
  step: number;
  /** Outputs the guard trimmed in the range. */
  trims: number;
  /** The largest trimmed output: what the hook sent and what was delivered instead; null when none. */
  largest: { field: GuardField; sentChars: number; keptChars: number; time: string } | null;
  /** The buckets with at least one trim, oldest first (a bucket without trims is left out). */
  buckets: GuardTrimBucket[];
}
