import { DEFAULT_NEAR_THRESHOLD_CHARS, isPersisted, measuredLength, OUTPUT_CAP_CHARS, PREVIEW_CHARS } from '../../../../shared/src/cliff.ts';
import type { OutputKind } from '../../../../shared/src/cliff.ts';
import { cappedStrings, isObject } from '../common/capped-fields.ts';
import type { CappedJsonField } from '../common/capped-fields.ts';
import { countCodePoints, headCodeUnits } from '../common/format.ts';

/** Where a measured string came from in the hook's output. */
export type OutputField = 'stdout' | CappedJsonField;

/**
 * over: past the cap, saved to a file (fails the check); over-budget: delivered but past --budget (fails the
 * check); near: past 80% of the cap (a warning); ok.
 */
export type OutputStatus = 'over' | 'over-budget' | 'near' | 'ok';

/** One string Claude Code measures against the cap, measured the same way. */
export interface MeasuredOutput {
  kind: OutputKind;
  field: OutputField;
  /** Length in UTF-16 code units (JS string length): what Claude Code compares with 10,000. */
  sent: number;
  /** Unicode code points, for explaining emoji-heavy output where the two differ. */
  codePoints: number;
  /**
   * What reaches the model, in UTF-16 code units: all of it up to the cap, the preview past it. The preview is
   * the first 2,000 code units, or 1,999 when the 2,000th is the first half of an emoji: half of one is no
   * character the model can read, so it is neither shown nor counted, and the report and --json say the same.
   */
  delivered: number;
  /** Characters left before the cap; negative when over. */
  headroom: number;
  persisted: boolean;
  overBudget: boolean;
  status: OutputStatus;
  /** The first characters the model sees instead of the output; set only when persisted. */
  preview: string | undefined;
  /** The whole string (or what was captured of it); printed only with --show-content. */
  content: string;
}

/** How the hook's stdout was read: empty, plain text, or a JSON object with fields. */
export interface MeasuredStdout {
  format: 'empty' | 'plain' | 'json';
  /** Why stdout starting with `{` was taken as plain text. */
  jsonError?: string;
  outputs: MeasuredOutput[];
}

/**
 * Measures one string; `sent` may exceed text.length when only the head of the output was captured, and then
 * `codePoints` gives the code points of all of it (without it, each code unit past the head counts as one).
 */
export function measureString(kind: OutputKind, field: OutputField, text: string, budget: number | undefined, sent = measuredLength(text), codePoints = countCodePoints(text) + (sent - text.length)): MeasuredOutput {
  const persisted = isPersisted(sent);
  const preview = persisted ? headCodeUnits(text, PREVIEW_CHARS) : undefined;
  const overBudget = budget !== undefined && sent > budget;
  let status: OutputStatus = 'ok';
  if (persisted) status = 'over';
  else if (overBudget) status = 'over-budget';
  else if (sent > DEFAULT_NEAR_THRESHOLD_CHARS) status = 'near';
  return {
    kind,
    field,
    sent,
    codePoints,
    delivered: preview === undefined ? sent : preview.length,
    headroom: OUTPUT_CAP_CHARS - sent,
    persisted,
    overBudget,
    status,
    preview,
    content: text,
  };
}

/**
 * The strings Claude Code measures in a successful hook's stdout: a JSON object's capped strings (cappedStrings,
 * the ones the guard trims), each on its own; otherwise the plain stdout
 * as a whole. With JSON output the wrapper itself is not measured (the 2.1.332 fixtures: a 12,078-character
 * JSON stdout with a 12,000-character additionalContext counts as one persisted output, not two).
 */
export function measureStdout(stdout: string, stdoutChars: number, complete: boolean, budget: number | undefined, stdoutCodePoints?: number): MeasuredStdout {
  if (stdoutChars === 0) return { format: 'empty', outputs: [] };
  const trimmed = stdout.trim();
  let jsonError: string | undefined;
  if (trimmed.startsWith('{')) {
    if (!complete) {
      jsonError = 'output too large to parse as JSON';
    } else {
      try {
        const parsed: unknown = JSON.parse(trimmed);
        if (isObject(parsed)) return { format: 'json', outputs: measureJsonFields(parsed, budget) };
        jsonError = 'not a JSON object';
      } catch (error) {
        jsonError = error instanceof Error ? error.message : String(error);
      }
    }
  }
  const outputs = [measureString('stdout', 'stdout', stdout, budget, stdoutChars, stdoutCodePoints)];
  return jsonError === undefined ? { format: 'plain', outputs } : { format: 'plain', jsonError, outputs };
}

function measureJsonFields(output: Record<string, unknown>, budget: number | undefined): MeasuredOutput[] {
  return cappedStrings(output).map((c) => measureString(c.kind, c.field, c.value, budget));
}
