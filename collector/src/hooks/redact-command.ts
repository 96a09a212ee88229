/**
 * Hook commands are reported per command by `hookwatch scan` (and with --send, stored by hookwatch and shown on its
 * dashboard), but a command line can carry a credential (`API_TOKEN=... node hook.js`, `--password x`,
 * `https://u:p@host`, a header, a webhook URL). Values that look like one are replaced before a command is reported
 * anywhere, and again by the server when it takes a finding (transcript-findings.ts), whoever sent it. Replacing
 * them twice changes nothing more: a command redacted by `scan` is stored as it was sent.
 */
import { RE2JS } from 're2js';

export const REDACTED = '[redacted]';

const SECRET_NAME = '[A-Za-z0-9_.-]*(?:token|secret|passw(?:or)?d|pwd|api[_-]?key|apikey|private[_-]?key|access[_-]?key|auth|credential|cookie)[A-Za-z0-9_.-]*';
/** A name ending in "key": `--key`, `--ssh-key`, `STRIPE_KEY`. */
const KEY_NAME = '[A-Za-z0-9_.-]*key';
const VALUE = `(?:"(?:[^"\\\\]|\\\\.)*"|'[^']*'|[^\\s;&|]+)`;
/** An HTTP header whose value is a credential: X-Api-Key, X-Auth-Token, Cookie, X-Hub-Signature... */
const HEADER_NAME = '[A-Za-z0-9_-]*(?:key|token|secret|passw(?:or)?d|cookie|signature|credential)';
/** Token formats recognisable on their own: prefix (kept, it tells which kind of credential it was) and rest. */
const TOKEN = [
  '(gh[pousr]_)[A-Za-z0-9]{16,}',
  '(github_pat_)[A-Za-z0-9_]{16,}',
  '(sk-(?:ant-|proj-)?)[A-Za-z0-9_-]{10,}',
  '([sr]k_(?:live|test)_)[A-Za-z0-9]{8,}',
  '(xox[abpr]-)[A-Za-z0-9-]{4,}',
  '(glpat-)[A-Za-z0-9_-]{16,}',
  '(AKIA|ASIA)[A-Z0-9]{16}',
].join('|');

// RE2 semantics (re2js): a command comes from a transcript, anyone's text, and with JavaScript's backtracking
// the unanchored SECRET_NAME rules took time cubic in its length (12,000 characters of "-token": 17 s).
const RULES: [RE2JS, string | ((...args: (string | null | number)[]) => string)][] = [
  // Webhook URLs and URLs whose path or query carries an opaque value: only scheme and host are kept.
  [RE2JS.compile(`\\b([a-z][a-z0-9+.-]*://[^\\s/?#"']+)([/?#][^\\s"']*)`, RE2JS.CASE_INSENSITIVE), (match, origin, rest) => redactUrl(String(match), String(origin), String(rest))],
  // NAME=value (environment assignments, key=value arguments).
  [RE2JS.compile(`(^|[\\s;&|(])(${SECRET_NAME}|${KEY_NAME})=${VALUE}`, RE2JS.CASE_INSENSITIVE), `$1$2=${REDACTED}`],
  // --name=value and --name value.
  [RE2JS.compile(`(--?(?:${SECRET_NAME}|${KEY_NAME}))(=|\\s+)${VALUE}`, RE2JS.CASE_INSENSITIVE), `$1$2${REDACTED}`],
  // scheme://user:password@host
  [RE2JS.compile('(\\b[a-z][a-z0-9+.-]*://[^\\s:/@]+:)[^\\s@/]+@', RE2JS.CASE_INSENSITIVE), `$1${REDACTED}@`],
  // Authorization headers; the scheme (Bearer, Basic, token...) is kept.
  [RE2JS.compile(`\\b((?:proxy-)?authorization):[ \\t]*((?:[a-z][a-z0-9_-]*[ \\t]+)?)[^\\s"']+`, RE2JS.CASE_INSENSITIVE), `$1: $2${REDACTED}`],
  [RE2JS.compile('\\b(Bearer|Basic)\\s+[A-Za-z0-9._~+/=-]{8,}'), `$1 ${REDACTED}`],
  // Other credential headers: quoted ("Cookie: a=1; b=2") up to the closing quote, else up to a space.
  [RE2JS.compile(`"(${HEADER_NAME}):[^"]*"`, RE2JS.CASE_INSENSITIVE), `"$1: ${REDACTED}"`],
  [RE2JS.compile(`'(${HEADER_NAME}):[^']*'`, RE2JS.CASE_INSENSITIVE), `'$1: ${REDACTED}'`],
  [RE2JS.compile(`(^|\\s)(${HEADER_NAME}):[ \\t]*[^\\s"']+`, RE2JS.CASE_INSENSITIVE), `$1$2: ${REDACTED}`],
  // curl -u user:password, --user user:password.
  [RE2JS.compile(`(^|\\s)(-u[ \\t]*|--user[= \\t][ \\t]*)(["']?[^\\s:"'-][^\\s:"']*):[^\\s"']+`), `$1$2$3:${REDACTED}`],
  // mysql -ppassword (the password glued to -p).
  [RE2JS.compile('\\b(mysql[a-z]*|mariadb[a-z-]*)([^;&|]*?\\s)-p[^\\s;&|]+'), `$1$2-p${REDACTED}`],
  // Tokens by their format, wherever they are.
  [RE2JS.compile(`\\b(?:${TOKEN})`), (...groups) => `${groups.slice(1, 8).find((g) => typeof g === 'string' && g !== '') ?? ''}${REDACTED}`],
];

/** Hosts whose every URL is a webhook with its secret in the path. */
const WEBHOOK_HOST = RE2JS.compile('^(?:hooks\\.slack\\.com|hooks\\.zapier\\.com)$', RE2JS.CASE_INSENSITIVE);
/** Discord's /api/webhooks/, Microsoft Teams' /webhookb2/, and the like. */
const WEBHOOK_PATH = RE2JS.compile('/webhooks?[a-z0-9]*/', RE2JS.CASE_INSENSITIVE);
/** A path segment or query value that looks generated: 16 or more characters with letters and digits in it. */
const OPAQUE_PART = RE2JS.compile('[A-Za-z0-9_~%+=.-]{16,}');
const SECRET_PARAMETER = RE2JS.compile(`[?&;](?:${SECRET_NAME}|${KEY_NAME}|sig|signature)=`, RE2JS.CASE_INSENSITIVE);

function redactUrl(url: string, origin: string, rest: string): string {
  const host = origin.replace(/^[^:]*:\/\/(?:[^@]*@)?/, '').replace(/:[0-9]*$/, '');
  let opaque = false;
  for (const parts = OPAQUE_PART.matcher(rest); !opaque && parts.find(); ) opaque = /[A-Za-z]/.test(parts.group() ?? '') && /[0-9]/.test(parts.group() ?? '');
  if (opaque || WEBHOOK_HOST.matcher(host).find() || WEBHOOK_PATH.matcher(rest).find() || SECRET_PARAMETER.matcher(rest).find()) return `${origin}/${REDACTED}`;
  return url;
}

/** The command with credential-looking values replaced by [redacted]; linear in its length, idempotent. */
export function redactCommand(command: string): string {
  let out = command;
  for (const [pattern, replacement] of RULES) out = pattern.matcher(out).replaceAll(replacement);
  return out;
}
