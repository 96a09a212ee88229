import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { printable } from './printable.ts';

describe('printable', () => {
  it('writes out controls, separators, bidirectional controls and other invisible format characters', () => {
    expect(printable('a\nb\r\t\u001b[2J\u0085\u2028\u2029')).toBe('a\\nb\\r\\t\\u001b[2J\\u0085\\u2028\\u2029');
    expect(printable('#\u202Ehs.kcatta \u202A\u202B\u202C\u202D\u2066\u2067\u2068\u2069\u200E\u200F\u061C')).toBe(
      '#\\u202ehs.kcatta \\u202a\\u202b\\u202c\\u202d\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\\u061c',
    );
    expect(printable('r\u200Bm \uFEFF\u00AD\u2060x\u{E0041}\u{E0001}')).toBe('r\\u200bm \\ufeff\\u00ad\\u2060x\\u{e0041}\\u{e0001}');
  });

  it('with json, keeps a JSON string one: a character beyond U+FFFF written as the escapes of its UTF-16 pair', () => {
    const text = JSON.stringify('x\u202E\u{E0041}\u{1F4BB}\u200D');
    const shown = printable(text, { json: true });
    expect(shown).toBe('"x\\u202e\\udb40\\udc41\u{1F4BB}\\u200d"');
    expect(JSON.parse(shown)).toBe('x\u202E\u{E0041}\u{1F4BB}\u200D');
  });

  it('with yaml, keeps a YAML double-quoted string one: a character beyond U+FFFF written as its \\U escape', () => {
    const shown = printable('"x\u202E\u{E0041}\u{1F4BB}\u007F"', { yaml: true });
    expect(shown).toBe('"x\\u202e\\U000e0041\u{1F4BB}\\u007f"');
    expect(parseYaml(shown)).toBe('x\u202E\u{E0041}\u{1F4BB}\u007F');
  });

  it('keeps line feeds and tabs with keepLines, and writes out the rest', () => {
    expect(printable('a\n\tb\r\u202E', { keepLines: true })).toBe('a\n\tb\\r\\u202e');
  });

  it('keeps the joiners and tags an emoji is made of, and a joiner outside one is written out', () => {
    for (const emoji of ['\u{1F469}\u{1F3FD}\u200D\u{1F4BB}', '\u{1F3F3}\uFE0F\u200D\u{1F308}', '\u{1F43B}\u200D\u2744\uFE0F', '\u{1F9D1}\u200D\u{1F91D}\u200D\u{1F9D1}', '\u{1F3F4}\u{E0067}\u{E0062}\u{E0077}\u{E006C}\u{E0073}\u{E007F}']) {
      expect(printable(`x ${emoji} y`)).toBe(`x ${emoji} y`);
    }
    expect(printable('a\u200Db \u200D\u{1F4BB} \u{1F4BB}\u200D \u200C')).toBe('a\\u200db \\u200d\u{1F4BB} \u{1F4BB}\\u200d \\u200c');
    // Tags that end no flag hide text: written out, the flag they follow kept.
    expect(printable('\u{1F3F4}\u{E0067}\u{E0062}')).toBe('\u{1F3F4}\\u{e0067}\\u{e0062}');
    // A flag of tags no subdivision code is made of (capitals, spaces, punctuation: hidden words) is written out.
    expect(printable('\u{1F3F4}\u{E0052}\u{E004D}\u{E0020}\u{E002D}\u{E0072}\u{E007F}')).toBe('\u{1F3F4}\\u{e0052}\\u{e004d}\\u{e0020}\\u{e002d}\\u{e0072}\\u{e007f}');
    expect(printable(`\u{1F3F4}${'\u{E0061}'.repeat(12)}\u{E007F}`)).toBe(`\u{1F3F4}${'\\u{e0061}'.repeat(12)}\\u{e007f}`);
  });

  it('keeps the joiner and non-joiner after a letter of a script that writes with them, not after a Latin, Greek or Cyrillic one', () => {
    for (const text of ['\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645', '\u0915\u094D\u200D\u0937', '\u0D28\u0D4D\u200D']) expect(printable(text)).toBe(text);
    expect(printable('e\u0301\u200D \u0436\u200C \u03B1\u200D')).toBe('e\u0301\\u200d \u0436\\u200c \u03B1\\u200d');
    // Han, Kana, Hangul and Hebrew do not write with them: there a joiner only hides, and is written out.
    expect(printable('\u540D\u524D\u200D \u30AB\u200C \uD55C\u200D \u05D0\u200C')).toBe('\u540D\u524D\\u200d \u30AB\\u200c \uD55C\\u200d \u05D0\\u200c');
    // Only after a letter or mark: after a digit, a punctuation mark or a symbol of those scripts a joiner joins nothing.
    expect(printable('\u0661\u200D \u0967\u200C \u06D4\u200D \u0F04\u200D \u1040\u200C')).toBe('\u0661\\u200d \u0967\\u200c \u06D4\\u200d \u0F04\\u200d \u1040\\u200c');
  });
});
