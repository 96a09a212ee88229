/**
 * Text from outside (a file name, a hook command or name, a transcript's fields) as a line of a report or a message
 * may show it: every character that would not read as itself written out as an escape (`\n`, `\u202e`), so the
 * line reads as its bytes.
 *
 * Written out: control characters (C0, DEL, C1), so a line break cannot forge a line of the report (a verdict such
 * as "OK:") and a terminal escape cannot reach the terminal; the line and paragraph separators; and the invisible
 * format characters (Unicode's Cf), among them the bidirectional marks, embeddings, overrides and isolates, which
 * turn the text after them around ("Trojan Source": `#\u202Ehs.kcatta` shows as `#attack.sh`), and the zero-width
 * space, the byte order mark and the tag characters, which hide text.
 *
 * Kept: the format characters that are part of an emoji, the zero-width joiner between two pictographs
 * (👩‍💻, 🏳️‍🌈) and the tags of a subdivision flag (🏴 + tags + cancel tag); and the zero-width joiner and
 * non-joiner after a letter or mark of a script that writes with them (Arabic and Persian, Syriac, Mongolian, the
 * Indic scripts; JOINING_LETTER_END), where they change how the letters join and nothing else.
 */

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * A subdivision flag (after U+1F3F4, the tags of a subdivision code, 3 to 7 lower-case letters and digits such as
 * `gbsct`, ended by the cancel tag), or one character that does not read as itself. Tags of anything else (capitals,
 * spaces, punctuation) would carry hidden words inside a flag.
 */
const FLAG = String.raw`\u{1F3F4}[\u{E0030}-\u{E0039}\u{E0061}-\u{E007A}]{3,7}\u{E007F}`;
const UNSEEN_CHARACTER = String.raw`[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]`;
const UNSEEN = new RegExp(`${FLAG}|${UNSEEN_CHARACTER}`, 'gu');
const UNSEEN_BUT_LINES = new RegExp(`${FLAG}|(?![\n\t])${UNSEEN_CHARACTER}`, 'gu');

const ZWNJ = '\u200C';
const ZWJ = '\u200D';
/** What may end the emoji before a joiner of an emoji sequence: the pictograph, a skin tone, or the emoji presentation selector. */
const EMOJI_END = /[\p{Extended_Pictographic}\p{Emoji_Modifier}\uFE0F]$/u;
const EMOJI_START = /^\p{Extended_Pictographic}/u;
/**
 * A letter or mark of a script that writes with the joiner and non-joiner: the cursive scripts (Arabic, Syriac,
 * N'Ko, Mongolian) and those of India and South-East Asia whose conjuncts they shape. Elsewhere (Latin, Han, Kana,
 * Hangul, Hebrew, ...) a joiner changes nothing that shows, and would only hide that two names differ, as it does
 * after a digit, punctuation mark or symbol of those scripts.
 */
const JOINING_LETTER_END = /(?=[\p{L}\p{M}])[\p{Script=Arabic}\p{Script=Syriac}\p{Script=Nko}\p{Script=Mongolian}\p{Script=Devanagari}\p{Script=Bengali}\p{Script=Gurmukhi}\p{Script=Gujarati}\p{Script=Oriya}\p{Script=Tamil}\p{Script=Telugu}\p{Script=Kannada}\p{Script=Malayalam}\p{Script=Sinhala}\p{Script=Myanmar}\p{Script=Khmer}\p{Script=Tibetan}]$/u;

/** `\uXXXX` of one UTF-16 code unit. */
const unit = (u: number): string => `\\u${u.toString(16).padStart(4, '0')}`;

/** How a character beyond U+FFFF is written: `\u{...}`, or as a JSON string or a YAML double-quoted one reads it. */
type Wide = 'braces' | 'json' | 'yaml';

/**
 * The escape of `c`; one beyond U+FFFF for `json` as the two `\uXXXX` of its UTF-16 pair, which JSON reads, and for
 * `yaml` as the `\UXXXXXXXX` of a YAML double-quoted string.
 */
function escape(c: string, wide: Wide): string {
  const code = c.codePointAt(0) ?? 0;
  if (NAMED[c] !== undefined) return NAMED[c];
  if (code <= 0xffff) return unit(code);
  if (wide === 'json') return unit(c.charCodeAt(0)) + unit(c.charCodeAt(1));
  if (wide === 'yaml') return `\\U${code.toString(16).padStart(8, '0')}`;
  return `\\u{${code.toString(16)}}`;
}

/** Whether the joiner or non-joiner at `at` of `text` joins what is around it as it is meant to (see above). */
function joins(c: string, text: string, at: number): boolean {
  const before = text.slice(Math.max(0, at - 2), at);
  if (c === ZWJ && EMOJI_END.test(before) && EMOJI_START.test(text.slice(at + 1, at + 3))) return true;
  return JOINING_LETTER_END.test(before);
}

/**
 * `text` with what would not read as itself escaped (see above); with `keepLines`, line feeds and tabs stay. With
 * `json`, `text` is a JSON string (JSON.stringify's) and stays one: an escape beyond U+FFFF is written as a JSON
 * string takes it, the two `\uXXXX` of its UTF-16 pair, not `\u{...}`. With `yaml`, `text` is a YAML double-quoted
 * string and stays one: such an escape is written `\UXXXXXXXX`.
 */
export function printable(text: string, options: { keepLines?: boolean; json?: boolean; yaml?: boolean } = {}): string {
  const wide: Wide = options.json === true ? 'json' : options.yaml === true ? 'yaml' : 'braces';
  return text.replace(options.keepLines === true ? UNSEEN_BUT_LINES : UNSEEN, (c: string, at: number) => {
    if (c.length > 2) return c;
    if ((c === ZWJ || c === ZWNJ) && joins(c, text, at)) return c;
    return escape(c, wide);
  });
}

/** Whether `text` holds a character that printable() writes out (a control, separator or invisible format character). */
export function hasUnseen(text: string): boolean {
  return printable(text) !== text;
}
