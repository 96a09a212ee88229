/**
 * The marker Claude Code leaves in a transcript where an output went over the 10,000-character cap and was
 * saved to a file instead of delivered:
 *
 *   <persisted-output>
 *   Output too large (17.7KB). Full output saved to: /home/u/.claude/projects/p/s/tool-results/hook-<id>-....txt
 *
 *   Preview (first 2KB):
 *   ...
 *   </persisted-output>
 */

const MARKER_OPEN = '<persisted-output>';
const MARKER_CLOSE = '</persisted-output>';
/** A marker at the start of a string, after any white space. */
const MARKER_FIRST = new RegExp(`^\\s*${MARKER_OPEN}`);

/** One output that Claude Code saved to a file, as read from its marker. */
export interface PersistedOutput {
  /** The file the full output was saved to, when the marker names it. */
  savedPath: string | undefined;
  /**
   * Size as Claude Code wrote it (e.g. "17.7KB"): the output's length in UTF-16 code units over 1,024, rounded to
   * one decimal (labelChars), so near its character count but not it.
   */
  sizeLabel: string | undefined;
  /** The preview the model got instead of the output. */
  preview: string;
}

/** True when the text may hold a marker; a cheap test before the regular expressions run. */
export function mayHoldMarker(text: string): boolean {
  return text.includes(MARKER_OPEN);
}

/**
 * True when an output string of a hook record is a marker: Claude Code puts the marker in place of the whole
 * output, so the string starts with it. A hook output that only mentions the tag (a hook telling the model about
 * markers) reached the model as it is.
 */
export function isMarkerText(text: string): boolean {
  return MARKER_FIRST.test(text);
}

/** Every persisted-output marker in the text, in order (an unclosed marker runs to the end of the text). */
export function findPersistedOutputs(text: string): PersistedOutput[] {
  const found: PersistedOutput[] = [];
  let from = 0;
  for (;;) {
    const open = text.indexOf(MARKER_OPEN, from);
    if (open === -1) break;
    const bodyStart = open + MARKER_OPEN.length;
    const close = text.indexOf(MARKER_CLOSE, bodyStart);
    const body = text.slice(bodyStart, close === -1 ? text.length : close);
    found.push(parseMarkerBody(body));
    if (close === -1) break;
    from = close + MARKER_CLOSE.length;
  }
  return found;
}

/** True when a saved-output path is one of a hook (`tool-results/hook-<id>-...`), not of a tool call. */
export function isHookOutputPath(savedPath: string | undefined): boolean {
  return savedPath !== undefined && /(^|[/\\])hook-[^/\\]*$/.test(savedPath);
}

/**
 * The session a saved output belongs to: Claude Code saves it in the session's own folder beside the transcript,
 * `<project>/<session id>/tool-results/hook-...txt`. Undefined when the path is not laid out that way.
 */
export function savedPathSession(savedPath: string | undefined): string | undefined {
  // Split, not one unanchored regex: that would be quadratic in a long path without separators.
  const parts = savedPath?.split(/[/\\]/) ?? [];
  return parts.length >= 3 && parts[parts.length - 2] === 'tool-results' ? parts[parts.length - 3] || undefined : undefined;
}

function parseMarkerBody(body: string): PersistedOutput {
  const size = /Output too large \(([^)\n]{1,32})\)/.exec(body);
  // The path runs to the end of its line, as Claude Code writes it unquoted: a home folder such as
  // `C:\Users\John Smith` holds a space.
  const saved = /Full output saved to:[ \t]*([^\r\n]*\S)/.exec(body);
  const previewAt = /Preview \([^)\n]{0,64}\):[ \t]*\r?\n?/.exec(body);
  const preview = previewAt ? body.slice(previewAt.index + previewAt[0].length) : '';
  return {
    sizeLabel: size?.[1],
    savedPath: saved?.[1],
    // trimEnd, not /\s+$/: the regex restarts at every whitespace run, quadratic in a long run of blanks.
    preview: preview.trimEnd(),
  };
}
