/**
 * Sender-side truncation of hook output. Claude Code delivers a string of up to 10,000 UTF-16 code units whole
 * and replaces a longer one with a ~2,000-character preview; keeping the front of an over-budget string and
 * saying where the rest is turns that cliff into a ceiling. Like a DNS server that truncates and sets TC, the
 * receiver is told that (and where) something was left out.
 */

import { OUTPUT_CAP_CHARS } from '../../../../shared/src/cliff.ts';
import type { GuardField } from '../../../../shared/src/guard-trims.ts';
import { cappedStrings, isObject } from '../common/capped-fields.ts';
import { jsonMembers } from '../../json-string.ts';
import type { JsonSpan } from '../../json-string.ts';

/**
 * Default budget in UTF-16 code units: what a string over the 10,000 cap is cut to, under the cap with headroom
 * for a pointer line and slack. With it, a string of up to 10,000 is left whole (see trimAbove).
 */
export const DEFAULT_GUARD_BUDGET = 9_500;

/**
 * The length above which a string is trimmed. Without a budget given that is Claude Code's cap: a string it would
 * deliver whole is never cut, one over it is cut to DEFAULT_GUARD_BUDGET. A budget given (--budget,
 * HOOKWATCH_GUARD_BUDGET) is the largest string kept: anything longer is cut to it, under the cap or not.
 */
export function trimAbove(givenBudget: number | undefined): number {
  return givenBudget ?? OUTPUT_CAP_CHARS;
}

/** Smallest budget accepted: the pointer line alone needs room. */
export const MIN_GUARD_BUDGET = 500;

/**
 * A boundary this close to the cut (in code units) is used; further back the cut falls mid-word instead. Kept
 * small: markdown paragraphs are often one line of 1,000 to 2,000 characters, and going back to the last line
 * break would give away that much of the budget, when a space next to the cut costs almost nothing.
 */
const BOUNDARY_SEARCH_CHARS = 300;

/** Where an output string sits in the hook's stdout. */
export type { GuardField };

/** One string the guard shortened. */
export interface Trimmed {
  field: GuardField;
  /** Length of the original, in UTF-16 code units (what Claude Code would have measured). */
  sentChars: number;
  /** Length of what is delivered instead, pointer line included. */
  keptChars: number;
  /** The full original text, for the file the pointer line names. */
  full: string;
}

/** What the saved file holds: the full output, or (`savedBytes` given) only its first bytes. */
function savedOutput(savedBytes: number | undefined): string {
  return savedBytes === undefined ? 'the full output is' : `the first ${savedBytes.toLocaleString('en-US')} bytes of the full output are`;
}

/**
 * The pointer line appended to a trimmed string; with `savedBytes`, it says the file holds only that many bytes
 * of the output (a stdout that went on past what is saved).
 */
export function pointerLine(omitted: number, path: string, savedBytes?: number): string {
  return `[hookwatch guard: ${omitted.toLocaleString('en-US')} more characters left out; ${savedOutput(savedBytes)} in ${path}]`;
}

/**
 * The pointer line when the file's path does not fit the budget with it (a long --dir, a small budget): it says
 * that the full output was saved but cannot be named in the space there is.
 */
export function pointerLineWithoutPath(omitted: number, savedBytes?: number): string {
  return `[hookwatch guard: ${omitted.toLocaleString('en-US')} more characters left out; ${savedOutput(savedBytes)} saved, its path is too long for the budget]`;
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

/**
 * Code points that may join the one before them into one user-perceived character (marks, emoji modifiers, a
 * Hangul jamo, the vowel signs SARA AM of Thai and AM of Lao, which are no marks, and Kirat Rai's vowel signs, which
 * Unicode joins as it joins Hangul vowels), or the one after (ZWJ, a regional
 * indicator of a flag, a virama, a Hangul jamo, and those that are written before it: Prepend in Unicode's grapheme
 * rules, such as an Arabic number sign or a Malayalam dot reph).
 */
const JOINING =
  /[\p{M}\p{Grapheme_Extend}\p{Emoji_Modifier}\p{Regional_Indicator}\u200d\u1100-\u11ff\ua960-\ua97f\ud7b0-\ud7ff\u0e33\u0eb3\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\u0d4e\u{110bd}\u{110cd}\u{111c2}\u{111c3}\u{113d1}\u{1193f}\u{11941}\u{11a3a}\u{11a84}-\u{11a89}\u{11d46}\u{11f02}\u{16d63}\u{16d67}-\u{16d6a}]/u;

/**
 * The end of the last whole user-perceived character (grapheme cluster) within the first `max` code units of
 * `text`: a letter keeps its combining marks (Thai vowels, a decomposed が), an emoji sequence (a flag, a skin
 * tone, a family joined by ZWJ) stays whole. 0 when the first one is longer than `max`.
 */
function graphemeEnd(text: string, max: number): number {
  let end = 0;
  // The code point after `max` too (two code units, if a surrogate pair): it says whether a character ends there.
  for (const { index } of new Intl.Segmenter(undefined, { granularity: 'grapheme' }).segment(text.slice(0, max + 2))) {
    if (index > max) break;
    end = index;
  }
  return end;
}

/**
 * The front of `text` of at most `max` code units, cut after the last line break or else the last whitespace
 * within BOUNDARY_SEARCH_CHARS of `max`, else after the last whole character (graphemeEnd) within it, else at
 * `max`; never between the two halves of a surrogate pair.
 */
export function frontAtBoundary(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 0) return '';
  const floor = Math.max(1, max - BOUNDARY_SEARCH_CHARS);
  const newline = text.lastIndexOf('\n', max - 1);
  if (newline + 1 >= floor) return text.slice(0, newline + 1);
  for (let i = max - 1; i + 1 >= floor; i--) {
    const unit = text.charCodeAt(i);
    if (unit === 0x20 || unit === 0x09 || unit === 0x0d) return text.slice(0, i + 1);
  }
  const hard = isHighSurrogate(text.charCodeAt(max - 1)) ? max - 1 : max;
  // Most text has no joining code point near the cut: the segmenter (and the ICU data it loads) is spared there.
  if (!JOINING.test(text.slice(Math.max(0, hard - 2), hard + 2))) return text.slice(0, hard);
  const whole = graphemeEnd(text, max);
  return text.slice(0, whole >= floor ? whole : hard);
}

/**
 * `text` cut to fit `budget` code units with the pointer line, or undefined when it is no longer than `limit` (the
 * budget unless told: see trimAbove). `text` may be only the head of a longer output of `totalChars` (a spilled
 * stdout, of which the file holds `savedBytes` only when given). The pointer's own length depends on the
 * count it states, so the front is sized for the longest possible count first. A pointer line that would not fit
 * the budget leaves the path out (pointerLineWithoutPath), so the result never overruns the budget.
 */
export function trimText(text: string, budget: number, path: string, totalChars = text.length, limit = budget, savedBytes?: number): { text: string; keptFront: string } | undefined {
  if (totalChars <= limit) return undefined;
  const withPath = pointerLine(totalChars, path, savedBytes).length <= budget;
  const pointer = (omitted: number): string => (withPath ? pointerLine(omitted, path, savedBytes) : pointerLineWithoutPath(omitted, savedBytes));
  const room = budget - pointer(totalChars).length - 1;
  const front = frontAtBoundary(text, Math.max(0, room));
  const separator = front.endsWith('\n') || front === '' ? '' : '\n';
  return { text: `${front}${separator}${pointer(totalChars - front.length)}`, keptFront: front };
}

/** Names the file that will hold a trimmed field's full text; called only for fields that are trimmed. */
export type FullOutputPath = (field: GuardField) => string;

/** The guard's verdict on a whole stdout. */
export interface GuardedStdout {
  /** The stdout to deliver; undefined when nothing was over budget (then the original bytes pass unchanged). */
  replacement: string | undefined;
  format: 'plain' | 'json';
  trimmed: Trimmed[];
}

/**
 * Applies the budget to a complete stdout the way Claude Code measures it: a JSON object's capped strings
 * (cappedStrings: additionalContext under hookSpecificOutput, systemMessage, initialUserMessage) each on its own,
 * everything else untouched; anything else, invalid JSON included, as one plain string. A string longer than
 * `limit` (the budget unless told: see trimAbove) is cut to the budget.
 */
export function guardStdout(stdout: string, budget: number, pathFor: FullOutputPath, limit = budget): GuardedStdout {
  // Trimmed as `hookwatch check` reads it (measureStdout): a byte order mark or other white space that JSON.parse
  // would refuse before the object does not make a JSON output plain text, to be cut with its decision fields.
  const trimmed = stdout.trim();
  if (trimmed.startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      parsed = undefined;
    }
    if (isObject(parsed)) return guardJson(stdout, parsed, budget, pathFor, limit);
  }
  const cut = trimText(stdout, budget, pathFor('stdout'), stdout.length, limit);
  if (cut === undefined) return { replacement: undefined, format: 'plain', trimmed: [] };
  return { replacement: cut.text, format: 'plain', trimmed: [{ field: 'stdout', sentChars: stdout.length, keptChars: cut.text.length, full: stdout }] };
}

/**
 * Where the string JSON.parse reads for a field (`systemMessage`, `hookSpecificOutput.additionalContext`) sits in
 * the text of a JSON object output: the last of a key given twice, as JSON.parse keeps it. Each object's members
 * are scanned once, however many of its fields are asked for.
 */
function fieldSpans(stdout: string): (field: GuardField) => JsonSpan | undefined {
  const scanned = new Map<number, Map<string, JsonSpan>>();
  const members = (open: number): Map<string, JsonSpan> => {
    const known = scanned.get(open) ?? jsonMembers(stdout, open);
    scanned.set(open, known);
    return known;
  };
  return (field) => {
    // The object's `{` is the first one: only white space, which JSON.parse was spared, comes before it.
    let span: JsonSpan | undefined = { start: stdout.indexOf('{'), end: stdout.length };
    for (const key of field.split('.')) {
      if (span === undefined || stdout[span.start] !== '{') return undefined;
      span = members(span.start).get(key);
    }
    return span !== undefined && stdout[span.start] === '"' ? span : undefined;
  };
}

function guardJson(stdout: string, output: Record<string, unknown>, budget: number, pathFor: FullOutputPath, limit: number): GuardedStdout {
  const trimmed: Trimmed[] = [];
  const edits: { span: JsonSpan | undefined; text: string }[] = [];
  const spanOf = fieldSpans(stdout);
  // The strings `hookwatch check` measures, and only those: a field Claude Code does not cap is not cut.
  for (const { field, holder, key, value } of cappedStrings(output)) {
    const cut = trimText(value, budget, pathFor(field), value.length, limit);
    if (cut === undefined) continue;
    holder[key] = cut.text;
    trimmed.push({ field, sentChars: value.length, keptChars: cut.text.length, full: value });
    edits.push({ span: spanOf(field), text: JSON.stringify(cut.text) });
  }
  if (trimmed.length === 0) return { replacement: undefined, format: 'json', trimmed };
  // Only the trimmed strings change, each at its place in the text: numbers (1.0, 1e3), key order, escapes, white
  // space and the rest of the output stay as the hook wrote them.
  if (edits.some((edit) => edit.span === undefined)) return { replacement: `${JSON.stringify(output)}\n`, format: 'json', trimmed };
  let replacement = stdout;
  for (const { span, text } of edits.sort((a, b) => (b.span?.start ?? 0) - (a.span?.start ?? 0))) {
    if (span !== undefined) replacement = `${replacement.slice(0, span.start)}${text}${replacement.slice(span.end)}`;
  }
  return { replacement, format: 'json', trimmed };
}
