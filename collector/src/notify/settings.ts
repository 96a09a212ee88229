/**
 * Notification delivery's settings: the receivers (`alerting.receivers`, parsed strictly once, with messages
 * that name the bad key and never echo a secret), the link base, alert events as OTLP logs, and the delivery
 * retry schedule and queue. Their keys sit under `alerting.*`, the stage that drives delivery, so
 * alerting/settings.ts places these rows in the table. A leaf: it imports only config/setting.ts,
 * config/values.ts, the client TLS settings of net/settings.ts and the receiver types of model.ts.
 */
import { ConfigError, SettingError, durationWithin as duration, isMapping as isMap, validator, type Setting, type SettingValues } from '../config/setting.ts';
import { FILE_CONTENTS, FILE_CONTENTS_PROBLEM, INVALID_HEADER_VALUE_CHAR, MIN_SECRET_CHARS, backoffOrderProblem, headerSecretProblem, headerSecrets, quotedKey, readBoolean, redactHttpUrl, shortSecretProblem, urlPasswordProblem } from '../config/values.ts';
import { TLS_DEFAULTS, TLS_MIN_VERSIONS, clientTlsConfig, clientTlsProblem, clientTlsSettings, clientTlsWithoutUrlProblem, fetchPortProblem, plainUrlProblem, type ClientTlsConfig } from '../net/settings.ts';
import type { ReceiverConfig } from './model.ts';

const DAY = 86_400_000;
const MAX_RECEIVERS = 20;

/** Typed notification settings, part of the alerting configuration. */
export interface NotifyConfig {
  receivers: ReceiverConfig[];
  externalUrl: string;
  /** tls: alerting.otlp.tls.*; undefined for the system's CAs, no client certificate. */
  otlp: { endpoint: string; headers: Record<string, string>; tls?: ClientTlsConfig };
  delivery: { deadlineMs: number; initialBackoffMs: number; maxBackoffMs: number; maxQueue: number };
}

export const RECEIVERS_SETTING: Setting = {
  key: 'alerting.receivers', type: 'object', default: [], secret: true, redactValue: redactReceivers, validate: validator(parseReceivers), reloadable: true,
  description: 'Where alerts go (file only): a list of {name, type: webhook|slack|alertmanager, url, headers, signingSecret (whsec_<base64>, Standard Webhooks), basicAuth {username, password} or bearerToken, tls {caFile, certFile, keyFile, serverName, insecureSkipVerify, minVersion (1.2 or 1.3, default 1.2), reloadInterval}, timeout, sendResolved, resendInterval (alertmanager)}. `webhook` sends the Alertmanager v4 JSON body; `alertmanager` pushes to its v2 API. user:password@ in a url becomes Basic authorization. URLs, header values, passwords, tokens and signing secrets are secret: the password of a url, a header value, a bearerToken or a basicAuth password shorter than 4 characters, too short to be scrubbed from logs, is refused at start. The tls files are read and checked at start (a file that cannot be used stops hookwatch, naming the setting) and read again every tls.reloadInterval (default 30s): a rotated CA, client certificate or key is used for the next notification without a restart, and a new set that cannot be used is logged once and the files in use kept.',
};

/** The rows after the alerting intervals: the link base, alert events over OTLP, and delivery. */
export const DELIVERY_SETTINGS: readonly Setting[] = [
  {
    key: 'alerting.externalUrl', env: 'HOOKWATCH_EXTERNAL_URL', type: 'string', default: '', redactValue: redactHttpUrl,
    // Links go out under it, and its host is let in: without a scheme they would be relative, and it no host.
    validate: (v) => urlProblem(v, 'https://hookwatch.example.com'),
    description: 'hookwatch\'s URL as people reach it (e.g. https://hookwatch.example.com); notifications link to the dashboard under it (the webhook body\'s `externalURL`, each alert\'s `generatorURL` and `silence_url` annotation, Slack\'s links, the `generatorURL` pushed to Alertmanager). Unset, it is where the HTTP port listens, `http://<host>:<port>` of `http.addr` (the port bound when it is 0), with the machine\'s host name for a wildcard address such as `0.0.0.0`, as Alertmanager defaults its own to its listen address; set it when people reach hookwatch through a proxy, TLS or another name. Anything but an http:// or https:// URL is refused at start and by a reload. A password in it (user:password@, ?token=) is redacted in `hookwatch config` and logs, and refused when shorter than 4 characters, too short to be scrubbed from logs; a user name and password, and a query or fragment, are left out of the links notifications carry.',
  },
  {
    key: 'alerting.otlp.endpoint', env: 'HOOKWATCH_ALERT_OTLP_ENDPOINT', type: 'string', default: '', redactValue: redactHttpUrl, validate: (v) => urlProblem(v, 'http://collector:4318'),
    description: 'When set, every alert transition is also sent as an OTLP log record (OTLP/HTTP JSON) to this endpoint (`/v1/logs` appended to its path unless present, any query kept after it); https:// for TLS (see alerting.otlp.tls.*). A password in it (user:password@, ?password=) shorter than 4 characters, too short to be scrubbed from logs, is refused at start.',
  },
  {
    key: 'alerting.otlp.headers', type: 'object', default: {}, secret: true, redactValue: redactHeaders, validate: validator((v) => parseHeaders(v, 'alerting.otlp.headers')),
    description: 'Headers for the alert OTLP export (file only), e.g. an Authorization header; values are secret, and one shorter than 4 characters (or the credential after `Bearer `/`Basic `), too short to be scrubbed from logs, is refused at start.',
  },
  ...clientTlsSettings('alerting.otlp.tls', 'HOOKWATCH_ALERT_OTLP_TLS', 'the alert event endpoint', 'alerting.otlp.endpoint'),
  {
    key: 'alerting.delivery.deadline', env: 'HOOKWATCH_ALERT_DELIVERY_DEADLINE', type: 'duration', default: 600_000, min: 1000, max: DAY, reloadable: true,
    description: 'How long a notification is retried (exponential backoff with full jitter, Retry-After honoured) before it is recorded as failed.',
  },
  {
    key: 'alerting.delivery.initialBackoff', env: 'HOOKWATCH_ALERT_DELIVERY_INITIAL_BACKOFF', type: 'duration', default: 500, min: 1, max: 600_000, reloadable: true,
    description: 'Backoff ceiling of the first retry; it doubles per attempt up to alerting.delivery.maxBackoff (the wait is random below it). Longer than alerting.delivery.maxBackoff, it is refused at start and by a reload, naming both.',
  },
  {
    key: 'alerting.delivery.maxBackoff', env: 'HOOKWATCH_ALERT_DELIVERY_MAX_BACKOFF', type: 'duration', default: 30_000, min: 1, max: 3_600_000, reloadable: true,
    description: 'Largest backoff ceiling between delivery attempts; at least alerting.delivery.initialBackoff.',
  },
  {
    key: 'alerting.delivery.maxQueue', env: 'HOOKWATCH_ALERT_DELIVERY_MAX_QUEUE', type: 'int', default: 1000, min: 1, max: 1_000_000, reloadable: true,
    description: 'Notifications waiting per receiver; more are recorded as failed (and logged) instead of growing memory.',
  },
];

/**
 * alerting.otlp.endpoint and alerting.externalUrl: empty (unset) or an http(s) URL, whose password, if any, is long
 * enough to scrub; checked when the config loads, not by the exporter at start. `example` shows one.
 */
function urlProblem(raw: unknown, example: string): string | undefined {
  const text = typeof raw === 'string' ? raw.trim() : '';
  if (text === '') return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `expected an http:// or https:// URL such as ${example}`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `the scheme must be http or https, not ${url.protocol.replace(':', '')}`;
  return urlPasswordProblem(text);
}

/** Reads the notification settings; a bad receiver or header throws SettingError naming the key. */
export function notifyConfig(r: SettingValues): NotifyConfig {
  const endpoint = r.string('alerting.otlp.endpoint').trim();
  const tls = clientTlsConfig(r, 'alerting.otlp.tls');
  // As forward.tls.*: settings beside an http:// endpoint would be ignored, so they are refused.
  const plain = plainUrlProblem(tls, endpoint, 'alerting.otlp.endpoint', 'the alert event endpoint', 'endpoint') ?? clientTlsWithoutUrlProblem(r, 'alerting.otlp.tls', endpoint, 'alerting.otlp.endpoint', 'the alert event endpoint');
  if (plain) throw new ConfigError(plain);
  const order = backoffOrderProblem('alerting.delivery.initialBackoff', r.number('alerting.delivery.initialBackoff'), 'alerting.delivery.maxBackoff', r.number('alerting.delivery.maxBackoff'));
  if (order) throw new ConfigError(order);
  return {
    receivers: parseReceivers(r.raw('alerting.receivers')),
    externalUrl: r.string('alerting.externalUrl').trim(),
    otlp: { endpoint, headers: parseHeaders(r.raw('alerting.otlp.headers'), 'alerting.otlp.headers'), ...(tls ? { tls } : {}) },
    delivery: {
      deadlineMs: r.number('alerting.delivery.deadline'),
      initialBackoffMs: r.number('alerting.delivery.initialBackoff'),
      maxBackoffMs: r.number('alerting.delivery.maxBackoff'),
      maxQueue: r.number('alerting.delivery.maxQueue'),
    },
  };
}

const RECEIVER_KEYS = ['name', 'type', 'url', 'headers', 'signingSecret', 'timeout', 'sendResolved', 'basicAuth', 'bearerToken', 'tls', 'resendInterval'];
const RECEIVER_TYPES = ['webhook', 'slack', 'alertmanager'];
const TLS_KEYS = ['caFile', 'certFile', 'keyFile', 'serverName', 'insecureSkipVerify', 'minVersion', 'reloadInterval'];
/** Files of a receiver's `tls`, read and checked when alerting starts (net/tls.ts). */
const TLS_FILE_KEYS = ['caFile', 'certFile', 'keyFile'] as const;
/** Headers hookwatch sets itself; a receiver may not override them. */
const RESERVED_HEADERS = ['content-type', 'content-length', 'host', 'webhook-id', 'webhook-timestamp', 'webhook-signature'];

/** Parses `alerting.receivers` (absent: none; alerts still show in the API and dashboard). */
export function parseReceivers(raw: unknown): ReceiverConfig[] {
  if (raw === null || raw === undefined) return [];
  if (!Array.isArray(raw)) throw new SettingError('alerting.receivers: expected a list of receivers');
  if (raw.length > MAX_RECEIVERS) throw new SettingError(`alerting.receivers: at most ${MAX_RECEIVERS} receivers`);
  const seen = new Set<string>();
  return raw.map((r, i) => {
    const at = `alerting.receivers[${i}]`;
    if (!isMap(r)) throw new SettingError(`${at}: expected a mapping with name, type and url`);
    for (const k of Object.keys(r)) {
      if (!RECEIVER_KEYS.includes(k)) throw new SettingError(`${at}: unknown key ${quotedKey(k)} (known: ${RECEIVER_KEYS.join(', ')})`);
    }
    const name = r['name'];
    if (typeof name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(name)) throw new SettingError(`${at}.name: expected letters, digits, _ or - (at most 64)`);
    if (seen.has(name)) throw new SettingError(`${at}.name: ${JSON.stringify(name)} is used by an earlier receiver`);
    seen.add(name);
    const type = r['type'] ?? 'webhook';
    if (typeof type !== 'string' || !RECEIVER_TYPES.includes(type)) throw new SettingError(`${at}.type: expected ${RECEIVER_TYPES.join(', ')}`);
    const url = r['url'];
    let parsed: URL | undefined;
    try {
      parsed = typeof url === 'string' ? new URL(url) : undefined;
    } catch {
      parsed = undefined;
    }
    // The URL is secret (it often holds a token): the message says what is wrong without echoing it.
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) throw new SettingError(`${at}.url: expected an http:// or https:// URL`);
    const shortPassword = urlPasswordProblem(url as string);
    if (shortPassword) throw new SettingError(`${at}.url: ${shortPassword}`);
    const headers = r['headers'] ?? {};
    if (!isMap(headers)) throw new SettingError(`${at}.headers: expected a mapping of header names to values`);
    for (const h of Object.keys(headers)) {
      if (RESERVED_HEADERS.includes(h.toLowerCase())) throw new SettingError(`${at}.headers.${h}: set by hookwatch itself`);
    }
    parseHeaders(headers, `${at}.headers`);
    const signingSecret = r['signingSecret'] ?? '';
    if (typeof signingSecret !== 'string') throw new SettingError(`${at}.signingSecret: expected a string such as whsec_<base64>`);
    if (signingSecret !== '') {
      const problem = signingSecretProblem(signingSecret);
      if (problem) throw new SettingError(`${at}.signingSecret: ${problem}`);
    }
    const sendResolved = readBoolean(r['sendResolved'] ?? true);
    if (sendResolved === undefined) throw new SettingError(`${at}.sendResolved: expected true or false`);
    const fromUrl = urlCredentials(parsed, at, r, headers);
    const authorization = fromUrl ? { Authorization: fromUrl.authorization } : authorizationHeader(r, at, headers);
    const target = fromUrl ? fromUrl.url : (url as string);
    if (r['resendInterval'] !== undefined && type !== 'alertmanager') throw new SettingError(`${at}.resendInterval: only for type alertmanager`);
    const badPort = fetchPortProblem(parsed);
    if (badPort) throw new SettingError(`${at}.url: ${badPort}`);
    const tls = parseTls(r['tls'], `${at}.tls`);
    // As forward.tls.*: tls beside an http:// URL would be ignored, so it is refused. The URL itself is not shown.
    const plain = plainUrlProblem(tls, target, `${at}.url`, 'the receiver', 'url');
    if (plain) throw new SettingError(plain);
    return {
      name,
      type: type as ReceiverConfig['type'],
      // An Alertmanager is named by its base URL (as in Prometheus' alertmanager_config); alerts go to its v2 API.
      url: type === 'alertmanager' ? alertmanagerAlertsUrl(target) : target,
      headers: { ...(headers as Record<string, string>), ...authorization },
      signingSecret,
      timeoutMs: r['timeout'] === undefined ? 10_000 : duration(r['timeout'], `${at}.timeout`, 100, 300_000),
      sendResolved,
      resendIntervalMs: r['resendInterval'] === undefined ? 60_000 : duration(r['resendInterval'], `${at}.resendInterval`, 1000, 3_600_000),
      tls,
    };
  });
}

/**
 * `user:password@` in a receiver's URL, as Basic authorization and the URL without it: fetch refuses a URL with
 * credentials, so it would fail every delivery (forward.endpoint and alerting.otlp.endpoint do the same).
 */
function urlCredentials(url: URL, at: string, r: Record<string, unknown>, headers: Record<string, unknown>): { authorization: string; url: string } | undefined {
  if (!url.username && !url.password) return undefined;
  const other = r['basicAuth'] !== undefined ? 'basicAuth' : r['bearerToken'] !== undefined ? 'bearerToken' : Object.keys(headers).some((h) => h.toLowerCase() === 'authorization') ? 'headers.Authorization' : undefined;
  if (other) throw new SettingError(`${at}.url: holds user:password@ and ${at}.${other} is set too; keep one of them`);
  let user: string;
  let password: string;
  try {
    user = decodeURIComponent(url.username);
    password = decodeURIComponent(url.password);
  } catch {
    throw new SettingError(`${at}.url: the user:password@ part is not valid percent-encoding`);
  }
  const bare = new URL(url);
  bare.username = '';
  bare.password = '';
  return { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`, url: bare.toString() };
}

/** `basicAuth` or `bearerToken` as an Authorization header (never both, nor beside a configured one). */
function authorizationHeader(r: Record<string, unknown>, at: string, headers: Record<string, unknown>): Record<string, string> {
  const basic = r['basicAuth'];
  const bearer = r['bearerToken'];
  if (basic === undefined && bearer === undefined) return {};
  if (basic !== undefined && bearer !== undefined) throw new SettingError(`${at}: set basicAuth or bearerToken, not both`);
  if (Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) throw new SettingError(`${at}.headers.Authorization: set by ${basic !== undefined ? 'basicAuth' : 'bearerToken'}; remove one of them`);
  if (bearer !== undefined) {
    if (typeof bearer !== 'string' || bearer === '' || INVALID_HEADER_VALUE_CHAR.test(bearer)) throw new SettingError(`${at}.bearerToken: expected a single-line string without control characters`);
    secretLongEnough(bearer, `${at}.bearerToken`);
    return { Authorization: `Bearer ${bearer}` };
  }
  if (!isMap(basic)) throw new SettingError(`${at}.basicAuth: expected a mapping with username and password`);
  for (const k of Object.keys(basic)) if (k !== 'username' && k !== 'password') throw new SettingError(`${at}.basicAuth: unknown key ${quotedKey(k)} (known: username, password)`);
  const { username, password } = basic;
  if (typeof username !== 'string' || username === '' || username.includes(':')) throw new SettingError(`${at}.basicAuth.username: expected a string without ":"`);
  if (typeof password !== 'string') throw new SettingError(`${at}.basicAuth.password: expected a string`);
  secretLongEnough(password, `${at}.basicAuth.password`);
  return { Authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}` };
}

/**
 * `tls` of a receiver, as `forward.tls.*` names it (Prometheus' tls_config). The paths are checked here; the files
 * are read and checked when alerting starts, and again as they rotate (net/tls.ts).
 */
function parseTls(raw: unknown, at: string): ClientTlsConfig | null {
  if (raw === undefined || raw === null) return null;
  if (!isMap(raw)) throw new SettingError(`${at}: expected a mapping with caFile, certFile, keyFile, serverName, insecureSkipVerify, minVersion or reloadInterval`);
  for (const k of Object.keys(raw)) if (!TLS_KEYS.includes(k)) throw new SettingError(`${at}: unknown key ${quotedKey(k)} (known: ${TLS_KEYS.join(', ')})`);
  const files: Record<(typeof TLS_FILE_KEYS)[number], string> = { caFile: TLS_DEFAULTS.caFile, certFile: TLS_DEFAULTS.certFile, keyFile: TLS_DEFAULTS.keyFile };
  for (const k of TLS_FILE_KEYS) {
    const file = raw[k];
    if (file === undefined) continue;
    // A key pasted where its path belongs must not reach a message.
    if (typeof file !== 'string' || file === '') throw new SettingError(`${at}.${k}: expected a file path`);
    if (FILE_CONTENTS.test(file)) throw new SettingError(`${at}.${k}: ${FILE_CONTENTS_PROBLEM}`);
    files[k] = file;
  }
  const insecureSkipVerify = readBoolean(raw['insecureSkipVerify'] ?? TLS_DEFAULTS.insecureSkipVerify);
  if (insecureSkipVerify === undefined) throw new SettingError(`${at}.insecureSkipVerify: expected true or false`);
  const serverName = raw['serverName'] ?? TLS_DEFAULTS.serverName;
  if (typeof serverName !== 'string' || (raw['serverName'] !== undefined && serverName === '')) throw new SettingError(`${at}.serverName: expected a host name`);
  // As the rows of forward.tls.minVersion take it: `1.3` or "1.3", a YAML number or a string.
  const minVersion = raw['minVersion'] === undefined ? TLS_DEFAULTS.minVersion : TLS_MIN_VERSIONS.find((v) => v === String(raw['minVersion']));
  if (!minVersion) throw new SettingError(`invalid value ${JSON.stringify(String(raw['minVersion']).slice(0, 20))} for ${at}.minVersion: expected one of ${TLS_MIN_VERSIONS.join(', ')}`);
  const config: ClientTlsConfig = {
    section: at,
    ...files,
    serverName,
    insecureSkipVerify,
    minVersion,
    reloadIntervalMs: raw['reloadInterval'] === undefined ? TLS_DEFAULTS.reloadInterval : duration(raw['reloadInterval'], `${at}.reloadInterval`, 1000, DAY),
  };
  const problem = clientTlsProblem(config);
  if (problem) throw new SettingError(problem);
  return config;
}

/** Parses `alerting.otlp.headers`. */
export function parseHeaders(raw: unknown, key: string): Record<string, string> {
  if (raw === null || raw === undefined) return {};
  if (!isMap(raw)) throw new SettingError(`${key}: expected a mapping of header names to values`);
  for (const [h, v] of Object.entries(raw)) {
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/.test(h)) throw new SettingError(`${key}: ${quotedKey(h.slice(0, 100))} is not a valid header name`);
    if (typeof v !== 'string' || INVALID_HEADER_VALUE_CHAR.test(v)) throw new SettingError(`${key}.${h}: expected a single-line string without control characters`);
    const short = headerSecretProblem(v);
    if (short) throw new SettingError(`${key}.${h}: ${short}`);
  }
  return raw as Record<string, string>;
}

/** A secret too short to be scrubbed from logs, refused as a SettingError naming `key` (never the secret). */
function secretLongEnough(secret: string, key: string): void {
  const problem = shortSecretProblem(secret);
  if (problem) throw new SettingError(`${key}: ${problem}`);
}

/** Receivers with their secret parts replaced, for `hookwatch config` and anything else that prints config. */
export function redactReceivers(raw: unknown): unknown {
  if (!Array.isArray(raw)) return raw;
  return raw.map((r) => {
    if (!isMap(r)) return r;
    const out: Record<string, unknown> = { ...r };
    if (typeof out['url'] === 'string') {
      try {
        out['url'] = `${new URL(out['url']).origin}/<redacted>`;
      } catch {
        out['url'] = '<redacted>';
      }
    }
    if (out['signingSecret']) out['signingSecret'] = '<redacted>';
    if (out['bearerToken']) out['bearerToken'] = '<redacted>';
    if (isMap(out['basicAuth'])) out['basicAuth'] = { ...out['basicAuth'], password: '<redacted>' };
    if (isMap(out['headers'])) out['headers'] = Object.fromEntries(Object.keys(out['headers']).map((h) => [h, '<redacted>']));
    return out;
  });
}

/** Header values with the values replaced. */
export function redactHeaders(raw: unknown): unknown {
  return isMap(raw) ? Object.fromEntries(Object.keys(raw).map((h) => [h, '<redacted>'])) : raw;
}

/** Every secret string in the alerting config, for the logger's scrubber. */
export function alertingSecrets(receivers: readonly ReceiverConfig[], otlpHeaders: Record<string, string>): string[] {
  const out: string[] = [];
  for (const r of receivers) {
    // The credential inside an Authorization header (basicAuth, bearerToken) must not leak on its own either.
    out.push(r.url, r.signingSecret, ...headerSecrets(r.headers));
    try {
      const u = new URL(r.url);
      // A token in the path (Slack: /services/T../B../secret) must not leak even without the host.
      // An Alertmanager's path is its public API path, not a secret: scrubbing it would only garble log lines.
      const apiPathOnly = r.type === 'alertmanager' && u.pathname === '/api/v2/alerts' && u.search === '';
      if (u.pathname.length >= 12 && !apiPathOnly) out.push(u.pathname + u.search);
    } catch {
      // Validated at load; nothing more to add.
    }
  }
  out.push(...headerSecrets(otlpHeaders));
  return out.filter((s) => s.length >= MIN_SECRET_CHARS);
}

/** Standard Webhooks signing secrets start with this; the base64 key follows. */
export const SIGNING_SECRET_PREFIX = 'whsec_';

/** Why a signing secret is unusable, or undefined when it is a valid `whsec_<base64>` key. The secret is never echoed. */
export function signingSecretProblem(secret: string): string | undefined {
  if (!secret.startsWith(SIGNING_SECRET_PREFIX)) return 'must start with whsec_ followed by a base64 key';
  const b64 = secret.slice(SIGNING_SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) return 'the part after whsec_ must be base64';
  if (Buffer.from(b64, 'base64').length < 16) return 'the key must be at least 16 bytes';
  return undefined;
}

const ALERTMANAGER_API_PATH = '/api/v2/alerts';

/** The `/api/v2/alerts` URL of an Alertmanager named by its base URL (a route prefix is kept). */
export function alertmanagerAlertsUrl(base: string): string {
  const u = new URL(base);
  const path = u.pathname.replace(/\/+$/, '');
  u.pathname = path.endsWith(ALERTMANAGER_API_PATH) ? path : path + ALERTMANAGER_API_PATH;
  return u.toString();
}
