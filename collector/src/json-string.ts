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

/** Where a value sits in a JSON text: `start` at its first character, `end` just past its last. */
export interface JsonSpan {
  start: number;
  end: number;
}

const WHITE_SPACE = /[ \t\n\r]*/y;

/** The index of the first character at or after `from` that is not JSON white space. */
function skipWhiteSpace(text: string, from: number): number {
  WHITE_SPACE.lastIndex = from;
  WHITE_SPACE.exec(text);
  return WHITE_SPACE.lastIndex;
}

const SCALAR = /[^ \t\n\r,\]}]*/y;

/** Just past the JSON value that starts at `start` of a text JSON.parse accepts; -1 when the text ends first. */
export function jsonValueEnd(text: string, start: number): number {
  if (start >= text.length) return -1;
  const first = text[start];
  if (first === '"') {
    const close = jsonStringEnd(text, start);
    return close === -1 ? -1 : close + 1;
  }
  if (first !== '{' && first !== '[') {
    // A number, true, false or null: up to the next delimiter.
    SCALAR.lastIndex = start;
    SCALAR.exec(text);
    return SCALAR.lastIndex;
  }
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      i = jsonStringEnd(text, i);
      if (i === -1) return -1;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/**
 * The members of the JSON object whose `{` is at `open`, in a text JSON.parse accepts: each key (unescaped, as
 * JSON.parse reads it) and where its value sits. A key given twice is the last one, as JSON.parse keeps it. In
 * the head of such a text (a large hook input kept in part) the members before the cut are read, and the one it
 * cuts is left out: a number or literal too once it reaches the end of the head, as it may go on past it. In
 * text that is not JSON, the members are read up to a key that is no JSON string or has no colon after it.
 */
export function jsonMembers(text: string, open: number): Map<string, JsonSpan> {
  const members = new Map<string, JsonSpan>();
  let i = skipWhiteSpace(text, open + 1);
  while (text[i] === '"') {
    const keyEnd = jsonStringEnd(text, i);
    if (keyEnd === -1) break;
    let key: string;
    try {
      key = JSON.parse(text.slice(i, keyEnd + 1)) as string;
    } catch {
      // Not JSON after all (a bad escape): what came before is all that is read.
      break;
    }
    // Past the colon to the value; a head cut before the colon holds no value (the scan from past the end of the
    // text would start over at its first character).
    const colon = skipWhiteSpace(text, keyEnd + 1);
    if (text[colon] !== ':') break;
    const start = skipWhiteSpace(text, colon + 1);
    const end = jsonValueEnd(text, start);
    // A number or literal that reaches the end of the text may go on past a cut.
    if (end === -1 || (end === text.length && !'"[{'.includes(text.charAt(start)))) break;
    members.delete(key);
    members.set(key, { start, end });
    i = skipWhiteSpace(text, end);
    if (text[i] !== ',') break;
    i = skipWhiteSpace(text, i + 1);
  }
  return members;
}
