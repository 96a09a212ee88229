import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { OUTPUT_CAP_CHARS } from '../../../../shared/src/cliff.ts';
import { measureStdout } from '../check/measure.ts';
import { DEFAULT_GUARD_BUDGET, frontAtBoundary, guardStdout, MIN_GUARD_BUDGET, pointerLine, pointerLineWithoutPath, trimText } from './trim.ts';
import type { GuardField } from './trim.ts';

const PATH = '/tmp/hookwatch-guard/full.txt';
const pathFor = (field: GuardField): string => `/tmp/hookwatch-guard/${field}.txt`;

function hasLoneSurrogate(s: string): boolean {
  return /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
}

describe('trimText', () => {
  it('leaves a string of exactly the budget alone and trims one more code unit', () => {
    expect(trimText('a'.repeat(DEFAULT_GUARD_BUDGET), DEFAULT_GUARD_BUDGET, PATH)).toBeUndefined();
    const cut = trimText('a'.repeat(DEFAULT_GUARD_BUDGET + 1), DEFAULT_GUARD_BUDGET, PATH);
    expect(cut).toBeDefined();
    expect(cut?.text.length).toBeLessThanOrEqual(DEFAULT_GUARD_BUDGET);
    expect(cut?.text.endsWith(pointerLine(DEFAULT_GUARD_BUDGET + 1 - (cut?.keptFront.length ?? 0), PATH))).toBe(true);
  });

  it('counts UTF-16 code units: 4,750 emoji are exactly 9,500 and fit, one more does not', () => {
    const emoji = '😀'.repeat(4_750);
    expect(emoji.length).toBe(9_500);
    expect(trimText(emoji, 9_500, PATH)).toBeUndefined();
    const cut = trimText(`${emoji}😀`, 9_500, PATH);
    expect(cut).toBeDefined();
    expect(hasLoneSurrogate(cut?.text ?? '')).toBe(false);
    expect((cut?.text.length ?? Infinity) <= 9_500).toBe(true);
  });

  it('never cuts an emoji in half at the edge, whatever the budget', () => {
    const text = `x${'😀'.repeat(6_000)}`;
    for (let budget = 1_000; budget < 1_010; budget++) {
      const cut = trimText(text, budget, PATH);
      expect(hasLoneSurrogate(cut?.text ?? '')).toBe(false);
      expect(cut?.text.length).toBeLessThanOrEqual(budget);
    }
  });

  it('never cuts a letter from its marks, or an emoji sequence apart, at a hard cut; a run of marks longer than the budget is still cut', () => {
    // With no white space to cut at (Thai, Japanese decomposed as in macOS file names) the cut falls mid-text.
    // SARA AM (Thai) is a vowel sign that is no mark (\p{M}); an Arabic number sign and a Malayalam dot reph join
    // the character after them.
    for (const cluster of ['e\u0301', 'か\u3099', 'ก\u0e34\u0e48', 'ก\u0e33', '\u0600١', '\u0d4eക', '🇯🇵', '👨\u200d👩\u200d👧', '👍🏽']) {
      const text = `x${cluster.repeat(Math.ceil(3_000 / cluster.length))}`;
      for (let budget = 1_000; budget < 1_010; budget++) {
        const front = trimText(text, budget, PATH)?.keptFront ?? '';
        const label = `${JSON.stringify(cluster)} at ${budget}`;
        expect((front.length - 1) % cluster.length, label).toBe(0);
        expect(front.length, label).toBeGreaterThan(budget - 200);
      }
    }
    const marks = `a${'\u0301'.repeat(5_000)}`;
    expect(trimText(marks, 1_000, PATH)?.text.length).toBeLessThanOrEqual(1_000);
    expect(trimText(marks, 1_000, PATH)?.keptFront.length).toBeGreaterThan(800);
  });

  it('knows every code point that joins the one before or after it into one character, as the runtime\'s segmenter does', () => {
    // The cut spares the segmenter where no joining code point is near: one missing from that list is a cut
    // between a letter and what belongs to it. Checked against the runtime's own grapheme rules, every code point.
    const segmenter = new Intl.Segmenter('en', { granularity: 'grapheme' });
    const one = (s: string): boolean => [...segmenter.segment(s)].length === 1;
    const pad = 'x'.repeat(50);
    const missed: string[] = [];
    // Unassigned and private-use code points and Han ideographs join nothing; a letter ('a') takes every mark and
    // spacing mark, a Hangul syllable ('가') the vowels and trailing consonants Unicode joins to it.
    const joinsNothing = /[\p{Cn}\p{Co}\p{Script=Han}]/u;
    for (let cp = 0x20; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const c = String.fromCodePoint(cp);
      if (joinsNothing.test(c)) continue;
      for (const base of ['a', '가']) {
        if (one(base + c) && frontAtBoundary(`${pad}${base}${c}${pad}`, pad.length + base.length).length !== pad.length) missed.push(`U+${cp.toString(16)} after ${base}`);
      }
      if (one(`${c}a`) && frontAtBoundary(`${pad}${c}a${pad}`, pad.length + c.length).length !== pad.length) missed.push(`U+${cp.toString(16)} before a`);
    }
    expect(missed).toEqual([]);
  }, 60_000);

  it('cuts after a line break near the edge, or else after a space', () => {
    const lines = Array.from({ length: 500 }, (_, i) => `line ${i} ${'-'.repeat(20)}`).join('\n');
    const cut = trimText(lines, 1_000, PATH);
    expect(cut?.keptFront.endsWith('\n')).toBe(true);
    expect(lines.startsWith(cut?.keptFront ?? '-')).toBe(true);
    const words = 'word '.repeat(1_000);
    const byWord = trimText(words, 1_000, PATH);
    expect(byWord?.keptFront.endsWith('word ')).toBe(true);
    expect(byWord?.text).toContain(`word \n[hookwatch guard: `);
  });

  it('the pointer line states exactly how much was left out and where', () => {
    const text = 'z'.repeat(15_000);
    const cut = trimText(text, 9_500, PATH);
    const omitted = 15_000 - (cut?.keptFront.length ?? 0);
    expect(cut?.text).toBe(`${cut?.keptFront}\n[hookwatch guard: ${omitted.toLocaleString('en-US')} more characters left out; the full output is in ${PATH}]`);
    expect(cut?.keptFront.length).toBeGreaterThan(9_300);
  });

  it('property: the result fits the budget, is a front of the input plus the pointer, and has no lone surrogate', () => {
    const chunk = fc.constantFrom('a', ' ', '\n', '😀', 'é', '\t', '語');
    fc.assert(
      fc.property(fc.array(chunk, { minLength: 0, maxLength: 4_000 }), fc.integer({ min: 500, max: 3_000 }), (parts, budget) => {
        const text = parts.join('');
        const cut = trimText(text, budget, PATH);
        if (text.length <= budget) return cut === undefined;
        if (cut === undefined) return false;
        const pointer = pointerLine(text.length - cut.keptFront.length, PATH);
        return cut.text.length <= budget && text.startsWith(cut.keptFront) && cut.text.endsWith(pointer) && !hasLoneSurrogate(cut.text);
      }),
      { numRuns: 300 },
    );
  });

  it('leaves the path out of a pointer line that would not fit the budget, never past the budget', () => {
    const text = 'word '.repeat(2_000);
    for (const length of [300, 420, 480, 600, 5_000]) {
      const path = `/${'d'.repeat(length - 1)}`;
      const cut = trimText(text, MIN_GUARD_BUDGET, path);
      expect(cut?.text.length, String(length)).toBeLessThanOrEqual(MIN_GUARD_BUDGET);
      const omitted = text.length - (cut?.keptFront.length ?? 0);
      const fits = pointerLine(text.length, path).length <= MIN_GUARD_BUDGET;
      expect(cut?.text.endsWith(fits ? pointerLine(omitted, path) : pointerLineWithoutPath(omitted)), String(length)).toBe(true);
    }
  });

  it('says, with or without the path, that the file holds only the first bytes of an output cut where it is saved', () => {
    const text = 'word '.repeat(2_000);
    for (const length of [20, 600]) {
      const path = `/${'d'.repeat(length - 1)}`;
      const cut = trimText(text, MIN_GUARD_BUDGET, path, 3_000_000, MIN_GUARD_BUDGET, 1_048_576);
      expect(cut?.text.length, String(length)).toBeLessThanOrEqual(MIN_GUARD_BUDGET);
      const omitted = 3_000_000 - (cut?.keptFront.length ?? 0);
      const saved = length === 20
        ? `the first 1,048,576 bytes of the full output are in ${path}]`
        : 'the first 1,048,576 bytes of the full output are saved, its path is too long for the budget]';
      expect(cut?.text.endsWith(`\n[hookwatch guard: ${omitted.toLocaleString('en-US')} more characters left out; ${saved}`), String(length)).toBe(true);
    }
  });

  it('frontAtBoundary falls back to a hard cut when there is no boundary nearby', () => {
    expect(frontAtBoundary(`${'a'.repeat(10)}\n${'b'.repeat(5_000)}`, 4_000)).toBe(`${'a'.repeat(10)}\n${'b'.repeat(5_000)}`.slice(0, 4_000));
  });
});

describe('guardStdout', () => {
  it('passes output within budget unchanged', () => {
    expect(guardStdout('hello\n', 9_500, pathFor)).toEqual({ replacement: undefined, format: 'plain', trimmed: [] });
    expect(guardStdout(JSON.stringify({ systemMessage: 'x'.repeat(9_500) }), 9_500, pathFor).replacement).toBeUndefined();
  });

  it('measures plain stdout whole', () => {
    const out = `${'line of text\n'.repeat(1_000)}`;
    const guarded = guardStdout(out, 9_500, pathFor);
    expect(guarded.format).toBe('plain');
    expect(guarded.replacement?.length).toBeLessThanOrEqual(9_500);
    expect(guarded.trimmed).toEqual([{ field: 'stdout', sentChars: out.length, keptChars: guarded.replacement?.length, full: out }]);
  });

  it('trims each JSON field over budget on its own, leaves the rest untouched and keeps the JSON valid', () => {
    const input = {
      continue: true,
      additionalContext: 'top '.repeat(3_000),
      systemMessage: 's'.repeat(10_001),
      suppressOutput: false,
      hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: 'ctx\n'.repeat(4_000), initialUserMessage: 'short', extra: { keep: [1, 2, 3] } },
    };
    const guarded = guardStdout(JSON.stringify(input), 9_500, pathFor);
    expect(guarded.format).toBe('json');
    const out = JSON.parse(guarded.replacement ?? '') as typeof input;
    // A top-level additionalContext is not one Claude Code reads or caps: left whole, as check leaves it unmeasured.
    expect(guarded.trimmed.map((t) => t.field).sort()).toEqual(['hookSpecificOutput.additionalContext', 'systemMessage']);
    expect(out.additionalContext).toBe(input.additionalContext);
    for (const value of [out.systemMessage, out.hookSpecificOutput.additionalContext]) {
      expect(value.length).toBeLessThanOrEqual(9_500);
      expect(value).toMatch(/\[hookwatch guard: [\d,]+ more characters left out; the full output is in \/tmp\/hookwatch-guard\/[\w.]+\.txt\]$/);
    }
    expect(out.hookSpecificOutput.additionalContext).toContain(pathFor('hookSpecificOutput.additionalContext'));
    expect({ ...out, systemMessage: '', hookSpecificOutput: { ...out.hookSpecificOutput, additionalContext: '' } }).toEqual({
      ...input,
      systemMessage: '',
      hookSpecificOutput: { ...input.hookSpecificOutput, additionalContext: '' },
    });
    for (const t of guarded.trimmed) expect(t.keptChars).toBeLessThan(OUTPUT_CAP_CHARS);
  });

  it('trims exactly the strings hookwatch check measures over the budget, so check and guard agree', () => {
    const long = 'w '.repeat(6_000);
    const outputs: unknown[] = [
      { additionalContext: long },
      { initialUserMessage: long },
      { initialUserMessage: long, hookSpecificOutput: { hookEventName: 'SessionStart', initialUserMessage: 'short' } },
      { initialUserMessage: 'short', hookSpecificOutput: { hookEventName: 'SessionStart', initialUserMessage: long } },
      { systemMessage: long, reason: long, hookSpecificOutput: { hookEventName: 'PostToolUse', additionalContext: long, permissionDecisionReason: long } },
      { hookSpecificOutput: long, additionalContext: long },
    ];
    for (const output of outputs) {
      const stdout = JSON.stringify(output);
      const measured = measureStdout(stdout, stdout.length, true, 9_500).outputs.filter((o) => o.overBudget).map((o) => o.field);
      const trimmed = guardStdout(stdout, 9_500, pathFor).trimmed.map((t) => t.field);
      expect(trimmed, stdout.slice(0, 80)).toEqual(measured);
      // What check measures of the guarded output is within the budget.
      const after = guardStdout(stdout, 9_500, pathFor).replacement ?? stdout;
      expect(measureStdout(after, after.length, true, 9_500).outputs.filter((o) => o.overBudget), stdout.slice(0, 80)).toEqual([]);
    }
  });

  it('changes only the trimmed strings of a JSON output, at their exact place: every other byte stays as written', () => {
    const big = 'word '.repeat(2_500);
    const escaped = (value: string): string => JSON.stringify(value).replace(/é/g, '\\u00e9').replace(/\n/g, '\\n');
    const message = `${'é line\n'.repeat(2_000)}end`;
    // The parts of the text; `context` and `message` are where the strings JSON.parse reads (and Claude Code
    // measures) sit, the last of each duplicate key.
    const parts = {
      head: `\uFEFF{\n  "version": 1.0, "big": 1e3, "neg": -0.50E+2, "esc": "\\u00e9\\/\\u2028",\n  "hookSpecificOutput": {"hookEventName": "Old", "additionalContext": ${JSON.stringify(big)}},\n  "additionalContext": ${JSON.stringify(big)},\n  "hookSpecificOutput" : {\t"hookEventName": "Session\\u0053tart", "nested": {"additionalContext": ${JSON.stringify(big)}, "n": [1.0, {"x": "}"}]}, "additionalContext": "dup", "additionalContext":\n      `,
      context: JSON.stringify(big),
      middle: `  },\n  "systemMessage": ${JSON.stringify(big)}, "\\u0073ystemMessage": `,
      message: escaped(message),
      tail: ` ,"last": 2.50}\n\n`,
    };
    const stdout = Object.values(parts).join('');
    const parsed = JSON.parse(stdout.slice(1)) as { hookSpecificOutput: { additionalContext: string }; systemMessage: string };
    expect([parsed.hookSpecificOutput.additionalContext, parsed.systemMessage]).toEqual([big, message]);
    const guarded = guardStdout(stdout, 9_500, pathFor);
    expect(guarded.trimmed.map((t) => [t.field, t.full])).toEqual([['hookSpecificOutput.additionalContext', big], ['systemMessage', message]]);
    const out = JSON.parse((guarded.replacement ?? '').replace(/^\uFEFF/, '')) as typeof parsed;
    for (const value of [out.hookSpecificOutput.additionalContext, out.systemMessage]) expect(value).toMatch(/more characters left out; the full output is in \S+\]$/);
    expect(out.hookSpecificOutput.additionalContext.length).toBeLessThanOrEqual(9_500);
    expect(guarded.replacement).toBe(Object.values({ ...parts, context: JSON.stringify(out.hookSpecificOutput.additionalContext), message: JSON.stringify(out.systemMessage) }).join(''));
  });

  it('treats invalid JSON and non-object JSON as plain text', () => {
    const broken = `{"additionalContext": "${'q'.repeat(12_000)}"`;
    const guarded = guardStdout(broken, 9_500, pathFor);
    expect(guarded.format).toBe('plain');
    expect(guarded.trimmed[0]?.field).toBe('stdout');
    expect(guarded.replacement?.startsWith('{"additionalContext": "qqq')).toBe(true);
    expect(guardStdout(`["${'q'.repeat(12_000)}"]`, 9_500, pathFor).trimmed[0]?.field).toBe('stdout');
  });

  it('reads a JSON output as hookwatch check does, white space or a byte order mark before it included', () => {
    const json = JSON.stringify({ decision: 'block', reason: 'stop here', hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: 'word '.repeat(3_000) } });
    for (const before of ['\uFEFF', '\u00A0\n', '\n\t ']) {
      const stdout = `${before}${json}\n`;
      expect(measureStdout(stdout, stdout.length, true, undefined).format, JSON.stringify(before)).toBe('json');
      const guarded = guardStdout(stdout, 9_500, pathFor);
      expect(guarded.format, JSON.stringify(before)).toBe('json');
      expect(guarded.trimmed.map((t) => t.field)).toEqual(['hookSpecificOutput.additionalContext']);
      // What came before the object stays, and is read past the same way.
      const replacement = guarded.replacement ?? '';
      expect(replacement.startsWith(`${before}{`)).toBe(true);
      expect(measureStdout(replacement, replacement.length, true, undefined).format).toBe('json');
      const delivered = JSON.parse(replacement.trim()) as { decision: string; reason: string; hookSpecificOutput: { additionalContext: string } };
      expect(delivered).toMatchObject({ decision: 'block', reason: 'stop here' });
      expect(delivered.hookSpecificOutput.additionalContext.length).toBeLessThanOrEqual(9_500);
    }
  });
});
