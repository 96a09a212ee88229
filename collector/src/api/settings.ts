/**
 * The HTTP port's settings (`http.*`): where the API and dashboard listen, TLS, and how callers authenticate,
 * checked together so a mode never starts without its credentials. A leaf: config/ composes these rows.
 */
import { isIP } from 'node:net';

import { ConfigError, type Setting, type SettingValues } from '../config/setting.ts';
import { formatDuration, shortSecretProblem } from '../config/values.ts';
import { bearerTokenProblem, keepAliveSetting, tlsConfig, tlsSettings, type TlsConfig } from '../net/settings.ts';

/** The shortest `http.auth.password` accepted, as NIST SP 800-63B has it for passwords people choose. */
export const MIN_PASSWORD_CHARS = 8;

/** The default `http.tls.hstsMaxAge`: one year, as HSTS preload lists ask. */
const HSTS_MAX_AGE_MS = 365 * 86_400_000;

export const API_SETTINGS: readonly Setting[] = [
  {
    key: 'http.addr', env: 'HOOKWATCH_HTTP_ADDR', type: 'addr', default: '127.0.0.1:9318',
    description: 'Where the API (/api/v1), the dashboard (/), /healthz and /readyz listen.',
  },
  {
    key: 'http.requestTimeout', env: 'HOOKWATCH_HTTP_REQUEST_TIMEOUT', type: 'duration', default: 30_000, min: 1000, max: 600_000,
    description: 'Time a client of the HTTP port has to send a whole request (headers and body; with `http.tls`, its TLS handshake too); slower clients get 408 and are cut off so they cannot hold connections open. The time taken to answer is not bounded by it.',
  },
  keepAliveSetting('http.keepAliveTimeout', 'HOOKWATCH_HTTP_KEEP_ALIVE_TIMEOUT', 'the HTTP port (API, dashboard, /metrics, probes)'),
  {
    key: 'http.maxPendingQueries', env: 'HOOKWATCH_HTTP_MAX_PENDING_QUERIES', type: 'int', default: 32, min: 1, max: 100_000,
    description: 'Store reads the API may have asked for and not had answered at once (running on one of the `store.readers` read connections or waiting for one; an overview asks three, other queries one or two). Past it the query routes (`/api/v1/hooks`, `/api/v1/overview`, `/api/v1/fleet/series`) answer 503 with Retry-After instead of making every later request wait behind a burst (a request no query route answers, such as `POST /api/v1/hooks`, still gets its 405 or 404); the dashboard shows it and asks again at its next refresh, not before the Retry-After.',
  },
  {
    key: 'http.allowedHosts', env: 'HOOKWATCH_HTTP_ALLOWED_HOSTS', type: 'list', default: [],
    description: 'Host names the HTTP port answers to (the Host header), besides IP addresses, `localhost` and the host of `alerting.externalUrl` (unset: of its default, the machine\'s host name when `http.addr` is a wildcard address); `*` allows any. A name is the same with a trailing dot (`localhost.`, `hookwatch.internal.`). While `http.addr` is a loopback address any other name gets 403 there (and on the OTLP/HTTP port while `otlp.http.addr` is), so a web page cannot reach hookwatch through its own DNS name rebound to 127.0.0.1 (DNS rebinding). Listening on other addresses, any name is answered unless this lists some. An entry no Host header can match (with a scheme, a path, or a wildcard within a name such as `*.example.com`) is refused at start, naming it.',
  },
  {
    key: 'http.auth.mode', env: 'HOOKWATCH_HTTP_AUTH_MODE', type: 'enum', default: 'none', values: ['none', 'basic', 'bearer', 'proxy-header'],
    description: 'Authentication on the HTTP port: everything but GET /healthz (dashboard, API, /metrics, /readyz) then needs credentials (401 otherwise). `basic` prompts browsers; `bearer` is for scripts and Prometheus; `proxy-header` trusts a header set by an authenticating reverse proxy.',
  },
  {
    key: 'http.auth.username', env: 'HOOKWATCH_HTTP_AUTH_USERNAME', type: 'string', default: '',
    description: 'User name for `http.auth.mode: basic`; set with another mode, hookwatch does not start (it would be ignored).',
  },
  {
    key: 'http.auth.password', env: 'HOOKWATCH_HTTP_AUTH_PASSWORD', type: 'string', default: '', secret: true,
    validate: (v) => shortSecretProblem(String(v), MIN_PASSWORD_CHARS),
    description: 'Password for `http.auth.mode: basic`, at least 8 characters (a shorter one is refused at start); set with another mode, hookwatch does not start (it would be ignored).',
  },
  {
    key: 'http.auth.token', env: 'HOOKWATCH_HTTP_AUTH_TOKEN', type: 'string', default: '', secret: true, validate: bearerTokenProblem,
    description: 'Token for `http.auth.mode: bearer`: requests need `Authorization: Bearer <token>`. At least 16 characters of printable ASCII without white space at either end, e.g. from `openssl rand -hex 32`; a shorter token, or one no header can carry, is refused at start, and so is one set with another mode (left at `none`, the port would be open).',
  },
  {
    key: 'http.auth.proxyHeader', env: 'HOOKWATCH_HTTP_AUTH_PROXY_HEADER', type: 'string', default: '',
    description: 'Header for `http.auth.mode: proxy-header`, e.g. `x-forwarded-user`: requests without it (or with it empty) get 401. Only safe when the proxy is the sole way in and strips the header from client requests. Set with another mode, hookwatch does not start (it would be ignored).',
  },
  ...tlsSettings('http.tls', 'HOOKWATCH_HTTP_TLS', 'the HTTP port (API, dashboard, /metrics, /healthz, /readyz)', 'https'),
  {
    key: 'http.tls.hstsMaxAge', env: 'HOOKWATCH_HTTP_TLS_HSTS_MAX_AGE', type: 'duration', default: HSTS_MAX_AGE_MS, min: 0, max: 2 * HSTS_MAX_AGE_MS,
    description: 'With `http.tls.certFile`, every answer of the HTTP port carries `Strict-Transport-Security: max-age=<this, in seconds>` (HSTS), so it is a whole number of seconds (`500ms` is refused at start, naming it): a browser that reached the dashboard over https once goes there over https only for that long, never over plain http that anyone on the path could read or change. A browser applies it to the host name on every port, not only this one: for a host name that also serves plain http on another port, set `0` (`max-age=0`: browsers keep no such rule, and forget one they kept). Never sent over plain http, where a browser ignores it; behind a proxy that ends TLS, the proxy sends its own. Set to another value than its default without `http.tls.certFile`, it would apply to nothing, so hookwatch does not start, naming it.',
  },
];

/** Typed `http.auth.*` settings: what the HTTP port asks for (mode none: nothing). */
export interface HttpAuthConfig {
  mode: 'none' | 'basic' | 'bearer' | 'proxy-header';
  username: string;
  password: string;
  token: string;
  /** Lower-case header name (Node lower-cases incoming names). */
  proxyHeader: string;
}

export interface ApiSettings {
  /** tls: undefined for plain HTTP. */
  /** hstsMaxAgeSeconds: undefined when no Strict-Transport-Security is sent (plain HTTP). */
  http: { addr: string; requestTimeoutMs: number; keepAliveTimeoutMs: number; maxPendingQueries: number; allowedHosts: string[]; auth: HttpAuthConfig; tls: TlsConfig | undefined; hstsMaxAgeSeconds: number | undefined };
}

export function apiConfig(r: SettingValues): ApiSettings {
  const tls = tlsConfig(r, 'http.tls');
  const hstsMaxAgeMs = r.number('http.tls.hstsMaxAge');
  // The header counts seconds: 500ms cut to max-age=0 would tell browsers to forget the rule, without a word.
  if (hstsMaxAgeMs % 1000 !== 0) throw new ConfigError(`http.tls.hstsMaxAge must be a whole number of seconds (Strict-Transport-Security counts its max-age in seconds): ${formatDuration(hstsMaxAgeMs)} is not`);
  // Without TLS no such header is sent: a value other than the default would apply to nothing (the default
  // written out, as `hookwatch config` prints it, changes nothing and is accepted, as *.tls.minVersion is).
  if (!tls && hstsMaxAgeMs !== HSTS_MAX_AGE_MS) throw new ConfigError('http.tls.hstsMaxAge is set but http.tls.certFile and http.tls.keyFile are not, so no TLS is served: set both, or unset http.tls.*');
  return {
    http: {
      addr: r.string('http.addr'),
      requestTimeoutMs: r.number('http.requestTimeout'),
      keepAliveTimeoutMs: r.number('http.keepAliveTimeout'),
      maxPendingQueries: r.number('http.maxPendingQueries'),
      allowedHosts: allowedHosts(r.list('http.allowedHosts')),
      auth: httpAuth(r.oneOf('http.auth.mode', ['none', 'basic', 'bearer', 'proxy-header']), r.string('http.auth.username'), r.string('http.auth.password'), r.string('http.auth.token'), r.string('http.auth.proxyHeader').trim().toLowerCase()),
      tls,
      hstsMaxAgeSeconds: tls ? hstsMaxAgeMs / 1000 : undefined,
    },
  };
}

/**
 * http.allowedHosts, lower case. An entry a Host header can never match (a URL, a path, a wildcard within a name)
 * would leave the name it meant refused with 403: refused at start, naming the entry and the form expected.
 */
function allowedHosts(entries: readonly string[]): string[] {
  const hosts = entries.map((h) => h.trim().toLowerCase()).filter((h) => h !== '');
  for (const host of hosts) {
    // An IP address always passes (allowed-hosts.ts): listed, with brackets or without (`::1`), it asks for nothing.
    if (host === '*' || isIP(host.replace(/^\[(.*)\]$/, '$1')) !== 0) continue;
    const why = /^[a-z][a-z0-9+.-]*:\/\//.test(host) ? 'has a scheme'
      : host.includes('/') ? 'has a path'
        : host.includes('*') ? 'has a wildcard, which matches no name (* alone allows any)'
          : !/^(?:\[[0-9a-f:.]+\]|[a-z0-9\-._~%]+)(?::\d+)?$/.test(host) ? 'is not a host name' : undefined;
    if (why) throw new ConfigError(`http.allowedHosts entry ${JSON.stringify(host)} ${why}: list each name as a Host header gives it, a host name or IP address alone (hookwatch.example.com, [::1]), or with its port`);
  }
  return hosts;
}

/**
 * A mode without its credentials would lock everyone out (or, worse, accept an empty secret): refuse at start.
 * Credentials of another mode would be ignored, leaving the port open (a token set and the mode forgotten): refused
 * too, naming the setting, never its value.
 */
function httpAuth(mode: HttpAuthConfig['mode'], username: string, password: string, token: string, proxyHeader: string): HttpAuthConfig {
  const need = (value: string, key: string): void => {
    if (value === '') throw new ConfigError(`${key} is required when http.auth.mode is ${mode}`);
  };
  const credentials = [['http.auth.username', username, 'basic'], ['http.auth.password', password, 'basic'], ['http.auth.token', token, 'bearer'], ['http.auth.proxyHeader', proxyHeader, 'proxy-header']] as const;
  for (const [key, value, its] of credentials) {
    if (value !== '' && its !== mode) throw new ConfigError(`${key} is set but http.auth.mode is ${mode}, so it would be ignored${mode === 'none' ? ' and the HTTP port left open' : ''}; set http.auth.mode to ${its} to ask for it, or unset ${key}`);
  }
  if (mode === 'basic') {
    need(username, 'http.auth.username');
    need(password, 'http.auth.password');
    if (username.includes(':')) throw new ConfigError('invalid http.auth.username: it must not contain ":" (basic auth splits on the first one)');
  }
  if (mode === 'bearer') need(token, 'http.auth.token');
  if (mode === 'proxy-header') {
    need(proxyHeader, 'http.auth.proxyHeader');
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(proxyHeader)) throw new ConfigError(`invalid http.auth.proxyHeader "${proxyHeader}": expected an HTTP header name`);
  }
  return { mode, username, password, token, proxyHeader };
}
