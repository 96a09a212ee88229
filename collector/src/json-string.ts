/** Where a JSON string closes, for code that reads JSON text without parsing all of it. */

/** The index of the unescaped `"` that closes the JSON string opened by the quote at `open`, or -1 when the text ends first. */
export function jsonStringEnd(text: string, open: number): number {
  let q = text.indexOf('"', open + 1);
  while (q !== -1) {
    let backslashes = 0;
    while (text.charCodeAt(q - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return q;
    q = text.indexOf('"', q + 1);
  }
  return -1;
}
