/** Quoting of shell words, as guard and check write them into command lines (and guard reads them back). */

/** A plain word passes through the shell unchanged; anything else is single-quoted. */
export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_/.:=@%+,-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** The inverse of shellQuote for one word; undefined when `word` is not something shellQuote produces. */
export function shellUnquote(word: string): string | undefined {
  if (/^[A-Za-z0-9_/.:=@%+,-]+$/.test(word)) return word;
  const match = /^'((?:[^']|'\\'')*)'$/.exec(word);
  return match ? (match[1] ?? '').replace(/'\\''/g, `'`) : undefined;
}
