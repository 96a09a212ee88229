/**
 * The strings of a hook's JSON output that Claude Code measures against the 10,000-character cap, each on its
 * own: `hookwatch check` measures these and `hookwatch guard` trims these, so what check calls over is what the
 * guard cuts. Claude Code reads additionalContext under hookSpecificOutput only (the 2.1.332 fixtures: its
 * additional_context_chars and num_outputs_persisted count that one); a top-level additionalContext reaches
 * neither the model nor the cap, and is left as it is. initialUserMessage counts under hookSpecificOutput, or
 * at the top level when hookSpecificOutput has none. Anything else in the object is not measured.
 */
import type { OutputKind } from '../../../../shared/src/cliff.ts';

/** Where a capped string sits in a JSON output. */
export type CappedJsonField = 'hookSpecificOutput.additionalContext' | 'systemMessage' | 'hookSpecificOutput.initialUserMessage' | 'initialUserMessage';

/** One capped string of a JSON output, and the object that holds it (so the guard can replace it). */
export interface CappedString {
  field: CappedJsonField;
  kind: OutputKind;
  holder: Record<string, unknown>;
  key: string;
  value: string;
}

/** A JSON object (not null, not an array), as the tools read hook outputs, settings files and transcripts. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The capped strings of a hook's JSON output object, in a stable order. */
export function cappedStrings(output: Record<string, unknown>): CappedString[] {
  const specific = isObject(output.hookSpecificOutput) ? output.hookSpecificOutput : undefined;
  const out: CappedString[] = [];
  const add = (holder: Record<string, unknown> | undefined, key: string, field: CappedJsonField, kind: OutputKind): boolean => {
    const value = holder?.[key];
    if (holder === undefined || typeof value !== 'string') return false;
    out.push({ field, kind, holder, key, value });
    return true;
  };
  add(specific, 'additionalContext', 'hookSpecificOutput.additionalContext', 'additionalContext');
  add(output, 'systemMessage', 'systemMessage', 'systemMessage');
  if (!add(specific, 'initialUserMessage', 'hookSpecificOutput.initialUserMessage', 'initialUserMessage')) add(output, 'initialUserMessage', 'initialUserMessage', 'initialUserMessage');
  return out;
}
