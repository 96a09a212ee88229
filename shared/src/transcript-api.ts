/**
 * What the API says about transcript findings (`hookwatch scan --send`): per command of one hook, from the
 * transcripts, kept apart from the telemetry figures (which sum the commands of one event).
 */

/** One command of a hook, as the transcripts sent to hookwatch show it. */
export interface TranscriptCommandRow {
  command: string;
  /** Runs of the command (hook_success and hook error records). */
  runs: number;
  /** Output strings with a known outcome. */
  outputs: number;
  delivered: number;
  /** Outputs saved to a file instead of delivered. */
  persisted: number;
  /** JSON output strings whose delivery record the transcript lacks. */
  unconfirmed: number;
  /** Largest output of known size (UTF-16 code units), delivered or not; null when no size is known. */
  largestOutputChars: number | null;
  /** Largest delivered output; never over the cap. */
  largestDeliveredChars: number | null;
  sessions: number;
}

/** GET /api/v1/hooks/{id}/commands */
export interface TranscriptCommandsResponse {
  /** Always "transcript": these figures come from transcripts, not from telemetry. */
  source: 'transcript';
  hookId: string;
  from: string;
  to: string;
  commands: TranscriptCommandRow[];
}
