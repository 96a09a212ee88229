/**
 * Hook commands are reported per command (and with --send, stored by hookwatch and shown on its dashboard), but a
 * command line can carry a credential (`API_TOKEN=... node hook.js`, `--password x`, `https://u:p@host`). Values
 * that look like one are replaced before a command is reported anywhere.
 */
import { RE2JS } from 're2js';

export const REDACTED = '[redacted]';

const SECRET_NAME = '[A-Za-z0-9_.-]*(?:token|secret|passw(?:or)?d|pwd|api[_-]?key|apikey|private[_-]?key|access[_-]?key|auth|credential|cookie)[A-Za-z0-9_.-]*';
const VALUE = `(?:"(?:[^"\\\\]|\\\\.)*"|'[^']*'|[^\\s;&|]+)`;

// RE2 semantics (re2js): a command comes from a transcript, anyone's text, and with JavaScript's backtracking
// the unanchored SECRET_NAME rules took time cubic in its length (12,000 characters of "-token": 17 s).
const RULES: [RE2JS, string][] = [
  // NAME=value (environment assignments, key=value arguments).
  [RE2JS.compile(`(^|[\\s;&|(])(${SECRET_NAME})=${VALUE}`, RE2JS.CASE_INSENSITIVE), `$1$2=${REDACTED}`],
  // --name=value and --name value.
  [RE2JS.compile(`(--?${SECRET_NAME})(=|\\s+)${VALUE}`, RE2JS.CASE_INSENSITIVE), `$1$2${REDACTED}`],
  // scheme://user:password@host
  [RE2JS.compile('(\\b[a-z][a-z0-9+.-]*://[^\\s:/@]+:)[^\\s@/]+@', RE2JS.CASE_INSENSITIVE), `$1${REDACTED}@`],
  // Authorization headers.
  [RE2JS.compile('\\b(Bearer|Basic)\\s+[A-Za-z0-9._~+/=-]{8,}'), `$1 ${REDACTED}`],
];

/** The command with credential-looking values replaced by [redacted]; linear in its length. */
export function redactCommand(command: string): string {
  let out = command;
  for (const [pattern, replacement] of RULES) out = pattern.matcher(out).replaceAll(replacement);
  return out;
}
