/**
 * The cliff model applied to telemetry: classifies an execution as over / near / ok / unknown.
 *
 * Claude Code reports each char attribute as a sum over the num_hooks commands that ran, so a sum over the
 * cap does not prove any one string was over it. num_outputs_persisted is the ground truth for "not delivered".
 */
import { OUTPUT_CAP_CHARS, largestKnown, type DeliveryStatus } from '../../../shared/src/cliff.ts';

export interface SizeFacts {
  numHooks: number | null;
  stdoutChars: number | null;
  additionalContextChars: number | null;
  systemMessageChars: number | null;
  initialUserMessageChars: number | null;
  outputsPersisted: number | null;
}

/**
 * Bounds of the largest single string behind a sum over `numHooks` strings: ceil(sum / n) .. sum. Without
 * num_hooks the sum may be over any number of commands, so it bounds nothing from below (lower null).
 */
export function singleStringBounds(sum: number, numHooks: number | null): { lower: number | null; upper: number } {
  if (numHooks === null) return { lower: null, upper: sum };
  const n = numHooks > 1 ? numHooks : 1;
  return { lower: Math.ceil(sum / n), upper: sum };
}

/** True when the event carried any size attribute (clients 2.1.280 and later). */
export function hasSizeData(f: SizeFacts): boolean {
  return f.stdoutChars !== null || f.additionalContextChars !== null || f.systemMessageChars !== null || f.initialUserMessageChars !== null;
}

/**
 * over: outputs were persisted (or, without the persisted count, a string provably exceeded the cap: never from
 * the sizes of an execution without num_hooks, whose sums may be over any number of commands);
 * unknown: no size data; near: the largest string may exceed `nearThreshold`; ok otherwise.
 */
export function classifyExecution(f: SizeFacts, nearThreshold: number): DeliveryStatus {
  if (f.outputsPersisted !== null && f.outputsPersisted > 0) return 'over';
  if (!hasSizeData(f)) return 'unknown';
  if (f.outputsPersisted === null) {
    // stdout_chars includes the JSON wrapper of JSON output, so only the measured fields can prove a string was over.
    const provable = largestKnown([f.additionalContextChars, f.systemMessageChars, f.initialUserMessageChars]);
    const lower = provable === null ? null : singleStringBounds(provable, f.numHooks).lower;
    if (lower !== null && lower > OUTPUT_CAP_CHARS) return 'over';
  }
  const upper = largestKnown([f.stdoutChars, f.additionalContextChars, f.systemMessageChars, f.initialUserMessageChars]) ?? 0;
  return upper > nearThreshold ? 'near' : 'ok';
}

/**
 * Status of a hook (or bucket) from its counters over a range. `ok` only when every execution was measured: an
 * execution without size data (a client older than 2.1.280) may have been over the cap, so a hook with any is
 * `unknown` unless another execution already shows it over or near.
 */
export function classifyCounters(c: {
  executions: number;
  outputsPersisted: number;
  executionsWithPersisted: number;
  sizeUnknownExecutions: number;
  nearExecutions: number;
}): DeliveryStatus {
  if (c.outputsPersisted > 0 || c.executionsWithPersisted > 0) return 'over';
  if (c.executions > 0 && c.sizeUnknownExecutions >= c.executions) return 'unknown';
  if (c.nearExecutions > 0) return 'near';
  if (c.executions === 0 || c.sizeUnknownExecutions > 0) return 'unknown';
  return 'ok';
}
