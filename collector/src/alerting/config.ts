/**
 * `alerting.rules` and `alerting.receivers`: parsed strictly once (the schema's validators call the same
 * parsers), with messages that name the bad key and never echo a secret.
 */
import { readFileSync } from 'node:fs';
import { parseDuration } from '../config/values.ts';
import { alertmanagerAlertsUrl } from '../notify/alertmanager-api.ts';
import type { ReceiverConfig, ReceiverTls } from '../notify/model.ts';
import { signingSecretProblem } from '../notify/signing.ts';

/** The rule kinds hookwatch evaluates. */
export const RULE_KINDS = ['persisted', 'persisted_ratio', 'headroom', 'growth', 'blind', 'silence', 'never_completed', 'hook_limit'] as const;
export type RuleKind = (typeof RULE_KINDS)[number];

/** One rule, with every default filled in. */
export interface RuleConfig {
  /** The alertname label; unique. Defaults to the kind. */
  name: string;
  kind: RuleKind;
  /** How long the condition must hold before pending becomes firing. */
  forMs: number;
  /** How long a firing alert stays firing after its condition clears. */
  keepFiringForMs: number;
  severity: string;
  /** Range the rule looks at (growth: days of history). */
  windowMs: number;
  /** Dimension to split each hook's alert by (e.g. team, organization.id); null for none. */
  groupBy: string | null;
  /** persisted_ratio: share of executions (0..1); headroom: fraction of the cap (0..1). */
  threshold: number;
  /** persisted_ratio: fewest executions in the window before the ratio means anything. */
  minExecutions: number;
  /** growth: alert when the trend reaches the cap within this many days. */
  horizonDays: number;
  /** silence: quiet time before alerting; never_completed: grace for a complete still in flight. */
  afterMs: number;
  /** silence: one alert per hook, or one for the whole feed. */
  scope: 'hook' | 'feed';
}

const DAY = 86_400_000;

const KIND_DEFAULTS: Record<RuleKind, Omit<RuleConfig, 'name' | 'kind' | 'forMs' | 'keepFiringForMs' | 'groupBy' | 'scope'> & { scope?: 'hook' | 'feed' }> = {
  persisted: { severity: 'critical', windowMs: 3_600_000, threshold: 0, minExecutions: 1, horizonDays: 0, afterMs: 0 },
  persisted_ratio: { severity: 'warning', windowMs: DAY, threshold: 0.05, minExecutions: 20, horizonDays: 0, afterMs: 0 },
  headroom: { severity: 'warning', windowMs: DAY, threshold: 0.8, minExecutions: 1, horizonDays: 0, afterMs: 0 },
  growth: { severity: 'warning', windowMs: 14 * DAY, threshold: 0, minExecutions: 1, horizonDays: 14, afterMs: 0 },
  blind: { severity: 'warning', windowMs: DAY, threshold: 0, minExecutions: 1, horizonDays: 0, afterMs: 0 },
  silence: { severity: 'warning', windowMs: 7 * DAY, threshold: 0, minExecutions: 1, horizonDays: 0, afterMs: 3_600_000, scope: 'hook' },
  never_completed: { severity: 'warning', windowMs: 3_600_000, threshold: 0, minExecutions: 1, horizonDays: 0, afterMs: 300_000 },
  hook_limit: { severity: 'warning', windowMs: 3_600_000, threshold: 0, minExecutions: 1, horizonDays: 0, afterMs: 0 },
};

/** Rules on with zero configuration. `silence` and `persisted_ratio` need a team's knowledge of its traffic. */
export const DEFAULT_RULE_KINDS: readonly RuleKind[] = ['persisted', 'headroom', 'growth', 'blind', 'never_completed', 'hook_limit'];

/** A problem in the alerting configuration; the message names the key. */
export class AlertingConfigError extends Error {
  override name = 'AlertingConfigError';
}

const RULE_KEYS = ['name', 'kind', 'for', 'keepFiringFor', 'severity', 'window', 'groupBy', 'threshold', 'minExecutions', 'horizonDays', 'after', 'scope'];
const NAME = /^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/;
const MAX_RULES = 100;
const MAX_RECEIVERS = 20;

function isMap(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function duration(v: unknown, key: string, min: number, max: number): number {
  const ms = parseDuration(v);
  if (ms === undefined) throw new AlertingConfigError(`${key}: expected a duration such as 30s, 5m, 1h or 14d`);
  if (ms < min || ms > max) throw new AlertingConfigError(`${key}: must be between ${min} ms and ${max} ms`);
  return ms;
}

function num(v: unknown, key: string, min: number, max: number, integer = false): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v))) throw new AlertingConfigError(`${key}: expected ${integer ? 'a whole number' : 'a number'}`);
  if (v < min || v > max) throw new AlertingConfigError(`${key}: must be between ${min} and ${max}`);
  return v;
}

/** Parses `alerting.rules` (null or absent: the default rules). */
export function parseRules(raw: unknown, knownDimensions?: readonly string[]): RuleConfig[] {
  if (raw === null || raw === undefined) return DEFAULT_RULE_KINDS.map((kind) => parseRule({ kind }, 0, knownDimensions));
  if (!Array.isArray(raw)) throw new AlertingConfigError('alerting.rules: expected a list of rules');
  if (raw.length > MAX_RULES) throw new AlertingConfigError(`alerting.rules: at most ${MAX_RULES} rules`);
  const rules = raw.map((r, i) => parseRule(r, i, knownDimensions));
  const seen = new Set<string>();
  rules.forEach((r, i) => {
    if (seen.has(r.name)) throw new AlertingConfigError(`alerting.rules[${i}].name: ${JSON.stringify(r.name)} is used by an earlier rule; names must be unique`);
    seen.add(r.name);
  });
  return rules;
}

function parseRule(raw: unknown, i: number, knownDimensions?: readonly string[]): RuleConfig {
  const at = `alerting.rules[${i}]`;
  if (!isMap(raw)) throw new AlertingConfigError(`${at}: expected a mapping with at least "kind"`);
  for (const k of Object.keys(raw)) {
    if (!RULE_KEYS.includes(k)) throw new AlertingConfigError(`${at}: unknown key ${JSON.stringify(k)} (known: ${RULE_KEYS.join(', ')})`);
  }
  const kind = raw['kind'];
  if (typeof kind !== 'string' || !(RULE_KINDS as readonly string[]).includes(kind)) {
    throw new AlertingConfigError(`${at}.kind: expected one of ${RULE_KINDS.join(', ')}`);
  }
  const k = kind as RuleKind;
  const d = KIND_DEFAULTS[k];
  const name = raw['name'] ?? k;
  if (typeof name !== 'string' || !NAME.test(name)) throw new AlertingConfigError(`${at}.name: expected letters, digits and _ (at most 64), starting with a letter or _`);
  const severity = raw['severity'] ?? d.severity;
  if (typeof severity !== 'string' || !/^[a-z]{1,20}$/.test(severity)) throw new AlertingConfigError(`${at}.severity: expected a lowercase word such as critical, warning or info`);
  const groupBy = raw['groupBy'] ?? null;
  if (groupBy !== null) {
    if (typeof groupBy !== 'string' || groupBy.length === 0) throw new AlertingConfigError(`${at}.groupBy: expected a dimension name such as team`);
    if (!['persisted', 'persisted_ratio', 'headroom', 'never_completed'].includes(k)) throw new AlertingConfigError(`${at}.groupBy: not supported for kind ${k}`);
    if (knownDimensions && !knownDimensions.includes(groupBy)) throw new AlertingConfigError(`${at}.groupBy: unknown dimension ${JSON.stringify(groupBy)}; known: ${knownDimensions.join(', ')} (add it to dimensions)`);
  }
  const scope = raw['scope'] ?? d.scope ?? 'hook';
  if (scope !== 'hook' && scope !== 'feed') throw new AlertingConfigError(`${at}.scope: expected hook or feed`);
  if (raw['scope'] !== undefined && k !== 'silence') throw new AlertingConfigError(`${at}.scope: only for kind silence`);
  const thresholdMax = 1;
  return {
    name,
    kind: k,
    forMs: raw['for'] === undefined ? 0 : duration(raw['for'], `${at}.for`, 0, 30 * DAY),
    keepFiringForMs: raw['keepFiringFor'] === undefined ? 0 : duration(raw['keepFiringFor'], `${at}.keepFiringFor`, 0, 30 * DAY),
    severity,
    windowMs: raw['window'] === undefined ? d.windowMs : duration(raw['window'], `${at}.window`, 1000, 400 * DAY),
    groupBy: groupBy as string | null,
    threshold: raw['threshold'] === undefined ? d.threshold : num(raw['threshold'], `${at}.threshold`, 0, thresholdMax),
    minExecutions: raw['minExecutions'] === undefined ? d.minExecutions : num(raw['minExecutions'], `${at}.minExecutions`, 1, 1e9, true),
    horizonDays: raw['horizonDays'] === undefined ? d.horizonDays : num(raw['horizonDays'], `${at}.horizonDays`, 1, 365),
    afterMs: raw['after'] === undefined ? d.afterMs : duration(raw['after'], `${at}.after`, 100, 30 * DAY),
    scope,
  };
}

const RECEIVER_KEYS = ['name', 'type', 'url', 'headers', 'signingSecret', 'timeout', 'sendResolved', 'basicAuth', 'bearerToken', 'tls', 'resendInterval'];
const RECEIVER_TYPES = ['webhook', 'slack', 'alertmanager'];
const TLS_KEYS = ['caFile', 'certFile', 'keyFile', 'serverName', 'insecureSkipVerify'];
/** Headers hookwatch sets itself; a receiver may not override them. */
const RESERVED_HEADERS = ['content-type', 'content-length', 'host', 'webhook-id', 'webhook-timestamp', 'webhook-signature'];

/** Parses `alerting.receivers` (absent: none; alerts still show in the API and dashboard). */
export function parseReceivers(raw: unknown): ReceiverConfig[] {
  if (raw === null || raw === undefined) return [];
  if (!Array.isArray(raw)) throw new AlertingConfigError('alerting.receivers: expected a list of receivers');
  if (raw.length > MAX_RECEIVERS) throw new AlertingConfigError(`alerting.receivers: at most ${MAX_RECEIVERS} receivers`);
  const seen = new Set<string>();
  return raw.map((r, i) => {
    const at = `alerting.receivers[${i}]`;
    if (!isMap(r)) throw new AlertingConfigError(`${at}: expected a mapping with name, type and url`);
    for (const k of Object.keys(r)) {
      if (!RECEIVER_KEYS.includes(k)) throw new AlertingConfigError(`${at}: unknown key ${JSON.stringify(k)} (known: ${RECEIVER_KEYS.join(', ')})`);
    }
    const name = r['name'];
    if (typeof name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(name)) throw new AlertingConfigError(`${at}.name: expected letters, digits, _ or - (at most 64)`);
    if (seen.has(name)) throw new AlertingConfigError(`${at}.name: ${JSON.stringify(name)} is used by an earlier receiver`);
    seen.add(name);
    const type = r['type'] ?? 'webhook';
    if (typeof type !== 'string' || !RECEIVER_TYPES.includes(type)) throw new AlertingConfigError(`${at}.type: expected ${RECEIVER_TYPES.join(', ')}`);
    const url = r['url'];
    let parsed: URL | undefined;
    try {
      parsed = typeof url === 'string' ? new URL(url) : undefined;
    } catch {
      parsed = undefined;
    }
    // The URL is secret (it often holds a token): the message says what is wrong without echoing it.
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) throw new AlertingConfigError(`${at}.url: expected an http:// or https:// URL`);
    const headers = r['headers'] ?? {};
    if (!isMap(headers)) throw new AlertingConfigError(`${at}.headers: expected a mapping of header names to values`);
    for (const [h, v] of Object.entries(headers)) {
      if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/.test(h)) throw new AlertingConfigError(`${at}.headers: ${JSON.stringify(h.slice(0, 100))} is not a valid header name`);
      if (RESERVED_HEADERS.includes(h.toLowerCase())) throw new AlertingConfigError(`${at}.headers.${h}: set by hookwatch itself`);
      if (typeof v !== 'string' || /[\r\n]/.test(v)) throw new AlertingConfigError(`${at}.headers.${h}: expected a single-line string`);
    }
    const signingSecret = r['signingSecret'] ?? '';
    if (typeof signingSecret !== 'string') throw new AlertingConfigError(`${at}.signingSecret: expected a string such as whsec_<base64>`);
    if (signingSecret !== '') {
      const problem = signingSecretProblem(signingSecret);
      if (problem) throw new AlertingConfigError(`${at}.signingSecret: ${problem}`);
    }
    const sendResolved = r['sendResolved'] ?? true;
    if (typeof sendResolved !== 'boolean') throw new AlertingConfigError(`${at}.sendResolved: expected true or false`);
    const authorization = authorizationHeader(r, at, headers);
    if (r['resendInterval'] !== undefined && type !== 'alertmanager') throw new AlertingConfigError(`${at}.resendInterval: only for type alertmanager`);
    return {
      name,
      type: type as ReceiverConfig['type'],
      // An Alertmanager is named by its base URL (as in Prometheus' alertmanager_config); alerts go to its v2 API.
      url: type === 'alertmanager' ? alertmanagerAlertsUrl(url as string) : (url as string),
      headers: { ...(headers as Record<string, string>), ...authorization },
      signingSecret,
      timeoutMs: r['timeout'] === undefined ? 10_000 : duration(r['timeout'], `${at}.timeout`, 100, 300_000),
      sendResolved,
      resendIntervalMs: r['resendInterval'] === undefined ? 60_000 : duration(r['resendInterval'], `${at}.resendInterval`, 1000, 3_600_000),
      tls: parseTls(r['tls'], `${at}.tls`),
    };
  });
}

/** `basicAuth` or `bearerToken` as an Authorization header (never both, nor beside a configured one). */
function authorizationHeader(r: Record<string, unknown>, at: string, headers: Record<string, unknown>): Record<string, string> {
  const basic = r['basicAuth'];
  const bearer = r['bearerToken'];
  if (basic === undefined && bearer === undefined) return {};
  if (basic !== undefined && bearer !== undefined) throw new AlertingConfigError(`${at}: set basicAuth or bearerToken, not both`);
  if (Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) throw new AlertingConfigError(`${at}.headers.Authorization: set by ${basic !== undefined ? 'basicAuth' : 'bearerToken'}; remove one of them`);
  if (bearer !== undefined) {
    if (typeof bearer !== 'string' || bearer === '' || /[\r\n]/.test(bearer)) throw new AlertingConfigError(`${at}.bearerToken: expected a single-line string`);
    return { Authorization: `Bearer ${bearer}` };
  }
  if (!isMap(basic)) throw new AlertingConfigError(`${at}.basicAuth: expected a mapping with username and password`);
  for (const k of Object.keys(basic)) if (k !== 'username' && k !== 'password') throw new AlertingConfigError(`${at}.basicAuth: unknown key ${JSON.stringify(k)} (known: username, password)`);
  const { username, password } = basic;
  if (typeof username !== 'string' || username === '' || username.includes(':')) throw new AlertingConfigError(`${at}.basicAuth.username: expected a string without ":"`);
  if (typeof password !== 'string') throw new AlertingConfigError(`${at}.basicAuth.password: expected a string`);
  return { Authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}` };
}

function readPem(file: unknown, key: string): string {
  if (typeof file !== 'string' || file === '') throw new AlertingConfigError(`${key}: expected a file path`);
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new AlertingConfigError(`${key}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** `tls` of a receiver: the files are read now, so a missing one stops hookwatch at start rather than at the first alert. */
function parseTls(raw: unknown, at: string): ReceiverTls | null {
  if (raw === undefined || raw === null) return null;
  if (!isMap(raw)) throw new AlertingConfigError(`${at}: expected a mapping with caFile, certFile, keyFile, serverName or insecureSkipVerify`);
  for (const k of Object.keys(raw)) if (!TLS_KEYS.includes(k)) throw new AlertingConfigError(`${at}: unknown key ${JSON.stringify(k)} (known: ${TLS_KEYS.join(', ')})`);
  if ((raw['certFile'] === undefined) !== (raw['keyFile'] === undefined)) throw new AlertingConfigError(`${at}: certFile and keyFile go together`);
  const insecureSkipVerify = raw['insecureSkipVerify'] ?? false;
  if (typeof insecureSkipVerify !== 'boolean') throw new AlertingConfigError(`${at}.insecureSkipVerify: expected true or false`);
  const serverName = raw['serverName'];
  if (serverName !== undefined && (typeof serverName !== 'string' || serverName === '')) throw new AlertingConfigError(`${at}.serverName: expected a host name`);
  return {
    ...(raw['caFile'] !== undefined ? { ca: readPem(raw['caFile'], `${at}.caFile`) } : {}),
    ...(raw['certFile'] !== undefined ? { cert: readPem(raw['certFile'], `${at}.certFile`), key: readPem(raw['keyFile'], `${at}.keyFile`) } : {}),
    ...(serverName !== undefined ? { serverName } : {}),
    insecureSkipVerify,
  };
}

/** Parses `alerting.otlp.headers`. */
export function parseHeaders(raw: unknown, key: string): Record<string, string> {
  if (raw === null || raw === undefined) return {};
  if (!isMap(raw)) throw new AlertingConfigError(`${key}: expected a mapping of header names to values`);
  for (const [h, v] of Object.entries(raw)) {
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/.test(h)) throw new AlertingConfigError(`${key}: ${JSON.stringify(h.slice(0, 100))} is not a valid header name`);
    if (typeof v !== 'string' || /[\r\n]/.test(v)) throw new AlertingConfigError(`${key}.${h}: expected a single-line string`);
  }
  return raw as Record<string, string>;
}

/** Wraps a parser as a schema `validate` function (message or undefined). */
export function validator(parse: (raw: unknown) => unknown): (raw: unknown) => string | undefined {
  return (raw) => {
    try {
      parse(raw);
      return undefined;
    } catch (err) {
      if (err instanceof AlertingConfigError) return err.message;
      throw err;
    }
  };
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
    out.push(r.url, r.signingSecret, ...Object.values(r.headers));
    // The credential inside an Authorization header (basicAuth, bearerToken) must not leak on its own either.
    for (const [h, v] of Object.entries(r.headers)) {
      if (h.toLowerCase() !== 'authorization') continue;
      const credential = v.replace(/^(Basic|Bearer)\s+/i, '');
      out.push(credential);
      if (/^Basic\s/i.test(v)) {
        const pair = Buffer.from(credential, 'base64').toString('utf8');
        out.push(pair.slice(pair.indexOf(':') + 1));
      }
    }
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
  out.push(...Object.values(otlpHeaders));
  return out.filter((s) => s.length >= 4);
}
