/**
 * The delivery cliff of Claude Code hook output, shared by the collector, the dashboard and the CLI tools.
 *
 * Each hook output string (plain stdout, additionalContext, systemMessage, initialUserMessage) is capped at
 * 10,000 characters counted as JavaScript string length (UTF-16 code units). Exactly 10,000 arrives whole;
 * 10,001 is saved to a file and the model sees about the first 2,000 characters (the preview).
 */

/** Largest output, in UTF-16 code units, that Claude Code delivers whole. */
export const OUTPUT_CAP_CHARS = 10_000;

/** About how many characters the model sees of an output that went over the cap. */
export const PREVIEW_CHARS = 2_000;

/** Default threshold above which an output is "near" the cap (80% of it). */
export const DEFAULT_NEAR_THRESHOLD_CHARS = 8_000;

/** First Claude Code version whose hook_execution_complete events carry the size attributes. */
export const FIRST_VERSION_WITH_SIZES = '2.1.280';

/** The output kinds Claude Code measures against the cap, as named in the API. */
export const OUTPUT_KINDS = ['stdout', 'additionalContext', 'systemMessage', 'initialUserMessage'] as const;
export type OutputKind = (typeof OUTPUT_KINDS)[number];

/** Delivery status of an execution or a hook: over the cap, near it, healthy, or not measurable. */
export const DELIVERY_STATUSES = ['over', 'near', 'ok', 'unknown'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** Characters that reach the model for an output of `sent` characters: the cliff. */
export function deliveredChars(sent: number): number {
  if (sent <= OUTPUT_CAP_CHARS) return sent;
  return PREVIEW_CHARS;
}

/** Length as Claude Code measures it: UTF-16 code units (an emoji outside the BMP counts 2). */
export function measuredLength(text: string): number {
  return text.length;
}

/** True when a string of `sent` characters is saved to a file instead of delivered. */
export function isPersisted(sent: number): boolean {
  return sent > OUTPUT_CAP_CHARS;
}

/** The largest known value; null when none is known (unknown is not zero). */
export function largestKnown(values: Iterable<number | null>): number | null {
  let max: number | null = null;
  for (const v of values) if (v !== null && (max === null || v > max)) max = v;
  return max;
}

/**
 * Outputs persisted, at least: the count the client reports, or, when its executions over the cap were only
 * measured (a client that does not send num_outputs_persisted), one for each of them, since each lost at least one.
 */
export function persistedAtLeast(c: { outputsPersisted: number; executionsWithPersisted: number }): number {
  return Math.max(c.outputsPersisted, c.executionsWithPersisted);
}

/**
 * The executions persistedAtLeast counts as one output each (measured over the cap, the count itself not
 * reported): what makes the count a lower bound among measured executions; 0 when the reported count stands.
 */
export function measuredOnly(c: { outputsPersisted: number; executionsWithPersisted: number }): number {
  return c.executionsWithPersisted > c.outputsPersisted ? c.executionsWithPersisted : 0;
}

/**
 * Whether a counters row's sizes may be sums over more than one hook command (Claude Code reports an execution's
 * sizes summed over the num_hooks commands it ran): true when an execution with sizes ran more than one or did not
 * say how many (sizesMaySumExecutions), or when the commands run differ from the executions (some ran more than
 * one, or did not say: all a row stored before that count had tells); false when each ran exactly one, which makes
 * every size that of one command's output. The count is needed beside the commands run: an execution of two
 * commands and one that did not say how many add up to two commands for two executions.
 */
export function sizesMaySum(c: { executions: number; numHooks: number; sizesMaySumExecutions: number }): boolean {
  return c.sizesMaySumExecutions > 0 || c.numHooks !== c.executions;
}

/**
 * A counters row's largest output over every kind (an upper bound on its largest single string when sizesMaySum),
 * or null.
 */
export function largestOutput(c: { maxChars: Record<OutputKind, number | null> }): number | null {
  return largestKnown(Object.values(c.maxChars));
}
