/**
 * Hook commands are reported per command (and with --send, stored by hookwatch and shown on its dashboard), but a
 * command line can carry a credential (`API_TOKEN=... node hook.js`, `--password x`, `https://u:p@host`). Values
 * that look like one are replaced before a command is reported anywhere.
 */

export const REDACTED = '[redacted]';

const SECRET_NAME = '[A-Za-z0-9_.-]*(?:token|secret|passw(?:or)?d|pwd|api[_-]?key|apikey|private[_-]?key|access[_-]?key|auth|credential|cookie)[A-Za-z0-9_.-]*';
const VALUE = `(?:"(?:[^"\\\\]|\\\\.)*"|'[^']*'|[^\\s;&|]+)`;

const RULES: [RegExp, string][] = [
  // NAME=value (environment assignments, key=value arguments).
  [new RegExp(`(^|[\\s;&|(])(${SECRET_NAME})=${VALUE}`, 'gi'), `$1$2=${REDACTED}`],
  // --name=value and --name value.
  [new RegExp(`(--?${SECRET_NAME})(=|\\s+)${VALUE}`, 'gi'), `$1$2${REDACTED}`],
  // scheme://user:password@host
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+@/gi, `$1${REDACTED}@`],
  // Authorization headers.
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/g, `$1 ${REDACTED}`],
];

/** The command with credential-looking values replaced by [redacted]. */
export function redactCommand(command: string): string {
  let out = command;
  for (const [pattern, replacement] of RULES) out = out.replace(pattern, replacement);
  return out;
}
