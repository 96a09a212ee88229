/**
 * Setting values as people write them, parsed: `30s`, `1h30m`, `20MiB`; URLs with their password redacted; a
 * file's text given where its path belongs, recognised; and secrets too short to keep out of logs, refused.
 * A leaf that imports nothing, so the loader, the API's query parameters and each stage's settings module can
 * all use it without importing the loader.
 */
/** PEM text (a certificate or a private key) or any multi-line text, where a file's path belongs. */
export const FILE_CONTENTS = /-----BEGIN|[\r\n]/;
/** Why such a value is refused; the value itself is never echoed. */
export const FILE_CONTENTS_PROBLEM = 'expected the path of a file, not its contents: write the PEM text to a file (e.g. a mounted Secret) and give its path';

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const BYTE_UNITS: Record<string, number> = { '': 1, b: 1, kb: 1000, mb: 1e6, gb: 1e9, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 };

const DURATION_UNITS_LARGEST_FIRST: [number, string][] = [[604_800_000, 'w'], [86_400_000, 'd'], [3_600_000, 'h'], [60_000, 'm'], [1000, 's']];

const BINARY_UNITS_LARGEST_FIRST: [number, string][] = [[1024 ** 3, 'GiB'], [1024 ** 2, 'MiB'], [1024, 'KiB']];

/** 20971520 -> `20MiB`; a size no binary unit divides stays a plain number of bytes. */
export function formatSize(n: number): string {
  for (const [size, unit] of BINARY_UNITS_LARGEST_FIRST) if (n >= size && n % size === 0) return `${n / size}${unit}`;
  return String(n);
}

/** 1_500 -> `1500ms`, 25_000 -> `25s`, 30 days -> `30d`: the largest unit that divides evenly. */
export function formatDuration(ms: number): string {
  for (const [size, unit] of DURATION_UNITS_LARGEST_FIRST) if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** The number as written and the unit of each part of `30s`, `1h30m`, `1.5h`, in the order written; undefined for other text. */
function durationParts(text: string): [string, string][] | undefined {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/gy;
  const parts: [string, string][] = [];
  let matched = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    parts.push([m[1] as string, m[2] as string]);
    matched = re.lastIndex;
  }
  return matched === text.length && matched > 0 ? parts : undefined;
}

/** True when each unit comes after every larger one, and once (`1h30m`, not `30m1h` or `1h1h`). */
function inUnitOrder(parts: [string, string][]): boolean {
  const size = (unit: string): number => DURATION_UNITS[unit] as number;
  return parts.every(([, unit], i) => i === 0 || size(unit) < size((parts[i - 1] as [string, string])[1]));
}

/**
 * `count` (decimal digits, `1.5`) of `unitSize` units as an exact fraction: the numerator and the power of ten
 * below it. Exact where a double is not (1.1 * 1000 is 1100.0000000000002), so a whole number reads as one.
 */
function exactly(count: string, unitSize: number): { numerator: bigint; scale: bigint } {
  const [whole = '0', fraction = ''] = count.split('.');
  const scale = 10n ** BigInt(fraction.length);
  return { numerator: (BigInt(whole) * scale + BigInt(fraction || '0')) * BigInt(unitSize), scale };
}

/** A duration's parts added up in milliseconds, exactly: `whole` when that is a whole number, else the ms either side. */
function durationMs(parts: [string, string][]): { whole: number } | { below: number; above: number } {
  let ms = 0n;
  let rest = { numerator: 0n, scale: 1n };
  for (const [count, unit] of parts) {
    const { numerator, scale } = exactly(count, DURATION_UNITS[unit] as number);
    ms += numerator / scale;
    // Fractions of a millisecond, over the larger of the two powers of ten.
    const common = scale > rest.scale ? scale : rest.scale;
    rest = { numerator: rest.numerator * (common / rest.scale) + (numerator % scale) * (common / scale), scale: common };
  }
  ms += rest.numerator / rest.scale;
  const left = rest.numerator % rest.scale;
  return left === 0n ? { whole: Number(ms) } : { below: Number(ms), above: Number(ms) + 1 };
}

/**
 * Parses `30s`, `5m`, `1h30m`, `1.5h`, `30d`, or a number of milliseconds (settings refuse those:
 * unitlessDuration). Units go from the largest to the smallest, each at most once, as Prometheus reads them:
 * `1h1h` and `30m1h` are no durations (durationOrderProblem says why). A duration is a whole number of
 * milliseconds, the smallest unit Prometheus counts: a decimal is read when it is one (`1.5s`), and `1.5ms` or
 * `100us` is no duration (durationFractionProblem says why), where it was rounded without a word.
 */
export function parseDuration(raw: unknown): number | undefined {
  if (typeof raw === 'number') return Number.isInteger(raw) && raw >= 0 ? raw : undefined;
  if (typeof raw !== 'string') return undefined;
  const text = raw.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const parts = durationParts(text);
  if (parts === undefined || !inUnitOrder(parts)) return undefined;
  const ms = durationMs(parts);
  return 'whole' in ms ? ms.whole : undefined;
}

/** The message for a duration that gives a unit twice or out of order (`1h1h`, `30m1h`), or undefined. */
export function durationOrderProblem(raw: unknown): string | undefined {
  const text = typeof raw === 'string' ? raw.trim() : '';
  const parts = durationParts(text);
  if (parts === undefined || inUnitOrder(parts)) return undefined;
  return `${text} gives a unit twice or out of order: write the units from the largest to the smallest, each at most once (1h30m)`;
}

/** The whole values either side of a fraction, as a setting would be written: `below or above` (`above` alone when below is 0). */
function eitherSide(below: number, above: number, format: (n: number) => string): string {
  return (below > 0 ? [below, above] : [above]).map(format).join(' or ');
}

/**
 * The message for a duration finer than a millisecond, or undefined: a fraction of one (`1.5ms`, `1.0005s`), with
 * the whole durations either side of it, or a unit below ms (`100us`, `5ns`).
 */
export function durationFractionProblem(raw: unknown): string | undefined {
  const text = typeof raw === 'string' ? raw.trim() : '';
  if (/^(?:\d+(?:\.\d+)?(?:ms|us|µs|μs|ns|s|m|h|d|w))+$/.test(text) && /\d(?:us|µs|μs|ns)/.test(text)) {
    return `${text} is in a unit finer than hookwatch counts: the smallest is ms, as in Prometheus`;
  }
  const parts = durationParts(text);
  if (parts === undefined || !inUnitOrder(parts)) return undefined;
  const ms = durationMs(parts);
  if ('whole' in ms) return undefined;
  return `${text} is not a whole number of milliseconds, the smallest unit hookwatch counts (as Prometheus does): write ${eitherSide(ms.below, ms.above, formatDuration)}`;
}

/** Why `raw` is no setting's duration though it reads as a number of units: no unit, units twice or out of order, or finer than a millisecond. */
export function durationProblem(raw: unknown): string | undefined {
  return unitlessDuration(raw) ?? durationOrderProblem(raw) ?? durationFractionProblem(raw);
}

/**
 * The message for a duration setting written without a unit (other than 0), or undefined. Prometheus and the
 * OpenTelemetry Collector refuse them too: `window: 3600` meant an hour to whoever wrote it, and would be 3.6 s.
 */
export function unitlessDuration(raw: unknown): string | undefined {
  const text = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw.trim() : undefined;
  if (text === undefined || !/^\d+(\.\d+)?$/.test(text) || Number(text) === 0) return undefined;
  // A decimal number of milliseconds is no duration (durationFractionProblem): not offered.
  if (text.includes('.')) return `${text} has no unit: write ${text}s, ${text}m, ${text}h or ${text}d`;
  return `${text} has no unit: write ${text}s, ${text}m, ${text}h, ${text}d or ${text}ms`;
}

/**
 * A key (or header name) as a message quotes it. Written without the space after its colon in a flow mapping
 * (`{password:hunter2}`), a key and its value read as one key: what follows the colon, maybe a secret, is left out.
 */
export function quotedKey(key: string): string {
  const colon = key.indexOf(':');
  if (colon < 0) return JSON.stringify(key);
  return `${JSON.stringify(`${key.slice(0, colon + 1)}…`)} (a value run into its key: write a space after the colon)`;
}

/**
 * A boolean as the file writes it, or as text, which is what the environment and `${env:NAME}` give: true, false,
 * and as text also True, TRUE, False, FALSE (the spellings YAML's core schema reads as booleans), 1 and 0, past the
 * space around it; undefined for anything else (`tRuE`, which the file reads as a string, too).
 */
export function readBoolean(raw: unknown): boolean | undefined {
  if (typeof raw === 'boolean') return raw;
  const text = typeof raw === 'string' ? raw.trim() : raw;
  if (text === 'true' || text === 'True' || text === 'TRUE' || text === '1') return true;
  if (text === 'false' || text === 'False' || text === 'FALSE' || text === '0') return false;
  return undefined;
}

/** A number as the file writes it, or as decimal text (`'0.25'`, `' 12 '`) as a variable gives it; else undefined. */
export function readNumber(raw: unknown): number | undefined {
  if (typeof raw === 'number') return raw;
  return typeof raw === 'string' && /^-?\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw) : undefined;
}

/** A size's number as written and its unit's bytes (`1.5`, 1024 for `1.5KiB`), or undefined for other text. */
function sizeParts(raw: unknown): [string, number] | undefined {
  if (typeof raw !== 'string') return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(raw);
  if (!m) return undefined;
  const name = (m[2] as string).toLowerCase();
  // Own keys only: "constructor" would find Object.prototype.constructor and give NaN, which passes every bound.
  const unit = Object.hasOwn(BYTE_UNITS, name) ? BYTE_UNITS[name] : undefined;
  return unit === undefined ? undefined : [m[1] as string, unit];
}

/**
 * Parses `20MiB`, `1.5GB` or a plain number of bytes (decimal and binary units). A size is a whole number of
 * bytes: a decimal is read when it comes to one (`1.5KiB`, 1536), and `1.3KiB` (1331.2) is no size
 * (sizeFractionProblem says why), where it was rounded without a word.
 */
export function parseBytes(raw: unknown): number | undefined {
  if (typeof raw === 'number') return Number.isInteger(raw) && raw >= 0 ? raw : undefined;
  const parts = sizeParts(raw);
  if (parts === undefined) return undefined;
  const { numerator, scale } = exactly(...parts);
  return numerator % scale === 0n ? Number(numerator / scale) : undefined;
}

/** The message for a size that is not a whole number of bytes (`1.3KiB`, `1.5B`), with the sizes either side; or undefined. */
export function sizeFractionProblem(raw: unknown): string | undefined {
  const parts = sizeParts(raw);
  if (parts === undefined) return undefined;
  const { numerator, scale } = exactly(...parts);
  if (numerator % scale === 0n) return undefined;
  const below = Number(numerator / scale);
  return `${String(raw).trim()} is not a whole number of bytes: write ${eitherSide(below, below + 1, formatSize)}`;
}

/**
 * A character an HTTP header value cannot hold (RFC 9110 field-value: visible ASCII, space, tab, obs-text).
 * Node's HTTP client refuses such a value on every request, so a setting holding one is refused at start.
 */
export const INVALID_HEADER_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

/** A libpq keyword/value connection string (`host=db dbname=hookwatch password=...`), not a URL or a path. */
export const LIBPQ_KEYWORDS = /(?:^|\s)(?:host|hostaddr|port|dbname|user|password|passfile|sslmode|service)\s*=/i;

/** The host a URL without one is read with (readUrl). */
const NO_HOST = 'hookwatch-no-host';

/**
 * A URL as node-postgres reads it: `new URL`, or for one with user info and no host
 * (`postgres://user:pw@/hookwatch?host=/var/run/postgresql`, a Unix socket libpq and node-postgres connect to, which
 * `new URL` refuses) the same with a placeholder host; `hostless` says which. Throws when neither reads.
 */
function readUrl(text: string): { url: URL; hostless: boolean } {
  try {
    return { url: new URL(text), hostless: false };
  } catch (err) {
    if (!text.includes('@/')) throw err;
    return { url: new URL(text.replace('@/', `@${NO_HOST}/`)), hostless: true };
  }
}

/** What a secret query parameter holds while its URL is written back (then `<redacted>`). */
const QUERY_REDACTED = 'hookwatch-redacted-value';

/** Query parameters that carry a secret (`?password=`, `?token=`, `?api_key=`): redacted and scrubbed as a password is. */
const SECRET_PARAM = /pass|secret|token|key/i;

/**
 * `postgres://user:secret@host/db` -> `postgres://user:<redacted>@host/db`; in a libpq keyword/value string,
 * `password=secret` -> `password=<redacted>`. Whatever the URL parser reads credentials from is redacted, also
 * written without `//` (`https:/user:secret@host`, `https:user:secret@host`, which it reads as `https://`).
 */
export function redactUrlPassword(value: unknown): unknown {
  if (typeof value === 'string' && LIBPQ_KEYWORDS.test(value)) return value.replace(/(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)/gi, '$1<redacted>');
  // Read past the space around it, as the settings holding a URL read it (and the URL parser does).
  if (typeof value !== 'string' || !/^[a-z][a-z0-9+.-]*:/i.test(value.trim())) return value;
  const authority = /^[a-z][a-z0-9+.-]*:\/\//i.test(value.trim());
  try {
    const { url, hostless } = readUrl(value.trim());
    const secretKeys = [...url.searchParams.keys()].filter((k) => SECRET_PARAM.test(k));
    // Without `//`, text the parser reads as a scheme and a path (a Windows path, `collector:4317`) is left as it is.
    if (!authority && !url.password && secretKeys.length === 0) return value;
    if (url.password) url.password = 'redacted';
    for (const key of secretKeys) url.searchParams.set(key, QUERY_REDACTED);
    // <redacted> as everywhere else (set as a token, since the URL would percent-encode the brackets), so a value
    // printed by `hookwatch config` and read back is refused, not used.
    const text = url.toString().replace(':redacted@', ':<redacted>@').replaceAll(QUERY_REDACTED, '<redacted>');
    return hostless ? text.replace(`@${NO_HOST}/`, '@/') : text;
  } catch {
    return authority ? UNPARSABLE_URL : value;
  }
}

const UNPARSABLE_URL = '<unparsable URL redacted>';

/**
 * redactUrlPassword for a setting that holds an http(s) URL, whose value may be refused and so quoted: what was
 * written is shown (`ftp://example.com`, `hookwatch.example.com/dashboard`, the scheme left out), unless it may be
 * credentials written wrongly, which no parser reads as such (`http//user:secret@host`, `user:secret@host`,
 * `host/?token=secret`): a value with an `@` before its query, or a secret-looking query key, is not shown at all.
 */
export function redactHttpUrl(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const text = value.trim();
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    // No URL: what is hidden is named so.
  }
  // What the parser reads an authority from (scheme://, and ftp:/ or ftp: of a special scheme) is redacted as a
  // URL: its password and secret query values. `localhost:9318/x` is read as a scheme and a path to it: no host.
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text) || (url !== undefined && url.host !== '')) {
    const redacted = redactUrlPassword(value);
    if (redacted !== UNPARSABLE_URL) return redacted;
  }
  const query = text.indexOf('?');
  const keys = query === -1 ? [] : [...new URLSearchParams(text.slice(query + 1).split('#')[0]).keys()];
  if (!(query === -1 ? text : text.slice(0, query)).includes('@') && !keys.some((k) => SECRET_PARAM.test(k))) return value;
  return url === undefined ? UNPARSABLE_URL : '<redacted>';
}

/** The password of a URL such as postgres://user:pw@host/db, as written and decoded, for the logger's secrets. */
export function urlPasswords(value: string): string[] {
  let url: URL;
  try {
    url = readUrl(value).url;
  } catch {
    // Not a URL to the parser (a bad port, say), but its credentials are still secret wherever the text goes.
    // The password runs to the authority's last '@', as the parser would read it.
    const m = /^(?:[a-z][a-z0-9+.-]*:\/\/|(?:https?|wss?|ftp):[\\/]*)[^/?#@:\s]*:([^/?#\s]+)@/i.exec(value);
    return m ? [m[1] as string] : [];
  }
  // The userinfo password, and a query parameter libpq and other clients take one from (`?password=`).
  const written = [url.password, ...[...url.searchParams].filter(([k]) => SECRET_PARAM.test(k)).map(([, v]) => v)].filter(Boolean);
  const out = new Set<string>();
  for (const w of written) {
    out.add(w);
    try {
      out.add(decodeURIComponent(w));
    } catch {
      // Malformed escapes: the written form is still scrubbed.
    }
  }
  // searchParams gives the decoded form: the form as written in the URL is scrubbed too.
  const raw = /[?&](?:[^=&#]*(?:pass|secret|token|key)[^=&#]*)=([^&#]+)/gi;
  for (let m = raw.exec(value); m; m = raw.exec(value)) out.add(m[1] as string);
  return [...out];
}

/**
 * The shortest secret a setting accepts. The log scrubber replaces every secret wherever it appears in a line; a
 * shorter one would match inside ordinary words and numbers, so it is left alone there, and is refused at start.
 */
export const MIN_SECRET_CHARS = 4;

const TOO_SHORT_TO_SCRUB = `shorter than ${MIN_SECRET_CHARS} characters, too short to be kept out of logs: use a longer one`;

/**
 * Why a secret is too short, or undefined (empty is "not set"); `min` above MIN_SECRET_CHARS for secrets that must
 * also resist guessing (bearer tokens, the privacy hash key). The message never holds the secret, nor its length.
 */
export function shortSecretProblem(secret: string, min = MIN_SECRET_CHARS): string | undefined {
  if (secret === '' || secret.length >= min) return undefined;
  if (min <= MIN_SECRET_CHARS) return TOO_SHORT_TO_SCRUB;
  return `shorter than ${min} characters, too short to be secret: use at least ${min} random characters, e.g. from \`openssl rand -hex 32\``;
}

/**
 * True when node-postgres reads `url` as it does at connect time: spaces and a `%` not starting an escape are
 * encoded first, an empty host before `/` stands for a Unix socket given as `?host=`, and the user name, password
 * and database name are decoded.
 */
function postgresUrlReads(url: string): boolean {
  try {
    const text = / |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(url) ? encodeURI(url).replace(/%25(\d\d)/g, '%$1') : url;
    const parsed = readUrl(text).url;
    decodeURIComponent(parsed.username);
    decodeURIComponent(parsed.password);
    decodeURI(parsed.pathname);
    return true;
  } catch {
    return false;
  }
}

/**
 * Why node-postgres cannot read a postgres:// URL, or undefined: most often a password with `/`, `?`, `#` or `%`
 * written as it is (one from `openssl rand -base64` holds `/`), which ends the authority early. Never the value.
 */
export function postgresUrlProblem(url: string): string | undefined {
  if (postgresUrlReads(url)) return undefined;
  // The user name and password (up to the last '@') encoded: if the URL reads then, they were what it tripped on.
  const m = /^([^:]+:\/\/)(.*)@([^@]*)$/s.exec(url);
  if (m) {
    const [user = '', ...password] = (m[2] as string).split(':');
    const userinfo = [user, ...(password.length > 0 ? [password.join(':')] : [])].map((part) => encodeURIComponent(part)).join(':');
    if (postgresUrlReads(`${m[1]}${userinfo}@${m[3]}`)) {
      return 'its user name or password holds a character a URL reserves: percent-encode them (/ as %2F, ? as %3F, # as %23, % as %25; encodeURIComponent in JavaScript, urllib.parse.quote(..., safe="") in Python)';
    }
  }
  return 'it cannot be read as a URL: check its host, port and database name (postgres://user:password@host:5432/hookwatch)';
}

/** Why a URL's password (or a secret query parameter: urlPasswords) is too short, or undefined. Never the value. */
export function urlPasswordProblem(url: string): string | undefined {
  return urlPasswords(url).some((p) => p.length < MIN_SECRET_CHARS) ? `its password is ${TOO_SHORT_TO_SCRUB}` : undefined;
}

/**
 * Why a header value kept secret (an API key, an Authorization header) is too short to keep out of logs, or
 * undefined: the whole value, and the credential of a Basic or Bearer one, which is scrubbed on its own too.
 */
export function headerSecretProblem(value: string): string | undefined {
  return shortSecretProblem(value) ?? shortSecretProblem(value.replace(/^(Basic|Bearer)\s+/i, ''));
}

/**
 * The secrets in header values (an API key, an Authorization header): each whole value, and the credential of a
 * Basic or Bearer one with, for Basic, the password it encodes, since a log line or a refusal may repeat the
 * credential alone ("invalid token <token>").
 */
export function headerSecrets(headers: Record<string, string>): string[] {
  const out: string[] = [];
  for (const v of Object.values(headers)) {
    out.push(v);
    const scheme = /^(Basic|Bearer)\s+/i.exec(v);
    if (!scheme) continue;
    const credential = v.slice(scheme[0].length);
    out.push(credential);
    if (/^Basic/i.test(scheme[1] as string)) {
      const pair = Buffer.from(credential, 'base64').toString('utf8');
      out.push(pair.slice(pair.indexOf(':') + 1));
    }
  }
  return out;
}

/**
 * Why a first wait longer than the longest is refused, or undefined: one of the two would be ignored (the
 * longest raised to the first, or the first cut to the longest) without a word. Names both settings.
 */
export function backoffOrderProblem(initialKey: string, initialMs: number, maxKey: string, maxMs: number): string | undefined {
  if (initialMs <= maxMs) return undefined;
  return `${initialKey} (${formatDuration(initialMs)}) is longer than ${maxKey} (${formatDuration(maxMs)}), the longest wait: set ${initialKey} to at most ${maxKey}, or raise ${maxKey}`;
}
