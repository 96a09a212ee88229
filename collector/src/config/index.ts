/** The typed configuration the rest of hookwatch sees. Built once at start from the loaded settings. */
import { ConfigError, type LoadedConfig } from './load.ts';
import { AlertingConfigError, parseHeaders, parseReceivers, parseRules, type RuleConfig } from '../alerting/config.ts';
import type { ReceiverConfig } from '../notify/model.ts';
import { knownDimensions } from '../store/sql.ts';
import { parseForwardHeaders } from '../forward/headers.ts';
import { privacyProblem } from '../privacy/index.ts';

export interface HookwatchConfig {
  otlp: {
    http: { addr: string };
    maxRequestBytes: number;
    requestTimeoutMs: number;
    maxPendingRequests: number;
    maxFutureSkewMs: number;
    ingestToken: string;
    maxInflightBytes: number;
  };
  http: { addr: string; auth: HttpAuthConfig };
  db: string;
  sqlite: { synchronous: 'full' | 'normal' };
  /** Used when db is a postgres:// URL. */
  postgres: { poolSize: number; leaseTtlMs: number };
  retention: { eventsMs: number; rollupsMs: number };
  store: { maxHooks: number };
  delivery: { nearThreshold: number };
  dimensions: string[];
  privacy: { hash: string[]; hashKey: string; drop: string[] };
  log: { level: 'debug' | 'info' | 'warn' | 'error' };
  /** OTLP/gRPC receiver. */
  otlpGrpc: { addr: string };
  /** Forwarding to a downstream OTLP endpoint; endpoint '' is fan-out mode (nothing forwarded). */
  forward: ForwardConfig;
  metrics: { maxHookSeries: number };
  shutdown: { timeoutMs: number };
  alerting: AlertingConfig;
}

/** Typed `alerting.*` settings: rules and receivers parsed, durations in ms. */
export interface AlertingConfig {
  rules: RuleConfig[];
  receivers: ReceiverConfig[];
  evaluationIntervalMs: number;
  repeatIntervalMs: number;
  externalUrl: string;
  otlp: { endpoint: string; headers: Record<string, string> };
  delivery: { deadlineMs: number; initialBackoffMs: number; maxBackoffMs: number; maxQueue: number };
}

/** Typed `forward.*` settings. */
export interface ForwardConfig {
  endpoint: string;
  protocol: 'http/protobuf' | 'http/json' | 'grpc';
  headers: Record<string, string>;
  compression: 'gzip' | 'none';
  timeoutMs: number;
  queue: { path: string; maxBytes: number };
  retry: { initialMs: number; maxMs: number; maxElapsedMs: number };
  deadLetters: { maxBytes: number };
  enrich: boolean;
}

export function toConfig(loaded: LoadedConfig): HookwatchConfig {
  const v = <T>(key: string): T => loaded.values.get(key) as T;
  return {
    otlp: {
      http: { addr: v('otlp.http.addr') },
      maxRequestBytes: v('otlp.maxRequestBytes'),
      requestTimeoutMs: v('otlp.requestTimeout'),
      maxPendingRequests: v('otlp.maxPendingRequests'),
      maxFutureSkewMs: v('otlp.maxFutureSkew'),
      ingestToken: v('otlp.ingestToken'),
      maxInflightBytes: inflightBytes(v('otlp.maxInflightBytes'), v('otlp.maxRequestBytes'), loaded.sources.get('otlp.maxInflightBytes') === 'default'),
    },
    http: {
      addr: v('http.addr'),
      auth: httpAuth(v('http.auth.mode'), v('http.auth.username'), v('http.auth.password'), v('http.auth.token'), v<string>('http.auth.proxyHeader').trim().toLowerCase()),
    },
    db: nonEmptyDb(v('db')),
    sqlite: { synchronous: v('sqlite.synchronous') },
    postgres: { poolSize: v('postgres.poolSize'), leaseTtlMs: v('postgres.leaseTtl') },
    retention: { eventsMs: v('retention.events'), rollupsMs: v('retention.rollups') },
    store: { maxHooks: v('store.maxHooks') },
    delivery: { nearThreshold: v('delivery.nearThreshold') },
    dimensions: v('dimensions'),
    privacy: privacyConfig(v('privacy.hash'), v('privacy.hashKey'), v('privacy.drop'), v('dimensions')),
    log: { level: v('log.level') },
    otlpGrpc: { addr: v('otlp.grpc.addr') },
    forward: {
      endpoint: v<string>('forward.endpoint').trim(),
      protocol: v('forward.protocol'),
      headers: parseForwardHeaders(v('forward.headers')) as Record<string, string>,
      compression: v('forward.compression'),
      timeoutMs: v('forward.timeout'),
      queue: { path: v('forward.queue.path'), maxBytes: v('forward.queue.maxBytes') },
      retry: { initialMs: v('forward.retry.initialInterval'), maxMs: v('forward.retry.maxInterval'), maxElapsedMs: v('forward.retry.maxElapsedTime') },
      deadLetters: { maxBytes: v('forward.deadLetters.maxBytes') },
      enrich: v('forward.enrich'),
    },
    metrics: { maxHookSeries: v('metrics.maxHookSeries') },
    shutdown: { timeoutMs: v('shutdown.timeout') },
    alerting: alertingConfig(v, v('dimensions')),
  };
}

function privacyConfig(hash: string[], hashKey: string, drop: string[], dimensions: string[]): HookwatchConfig['privacy'] {
  const problem = privacyProblem(hash, drop, dimensions);
  if (problem) throw new ConfigError(problem);
  return { hash, hashKey, drop };
}

/**
 * A budget below one gRPC call's reservation (twice the largest request) would refuse every gRPC call: an
 * explicit one is refused at start; the default grows with a raised otlp.maxRequestBytes.
 */
function inflightBytes(inflight: number, maxRequest: number, isDefault: boolean): number {
  if (isDefault) return Math.max(inflight, 2 * maxRequest);
  if (inflight < 2 * maxRequest) throw new ConfigError(`otlp.maxInflightBytes (${inflight}) must be at least twice otlp.maxRequestBytes (${maxRequest})`);
  return inflight;
}

function alertingConfig(v: <T>(key: string) => T, dimensions: string[]): AlertingConfig {
  try {
    return {
      // groupBy needs the configured dimensions, so rules are checked against them here, once.
      rules: parseRules(v('alerting.rules'), knownDimensions(dimensions)),
      receivers: parseReceivers(v('alerting.receivers')),
      evaluationIntervalMs: v('alerting.evaluationInterval'),
      repeatIntervalMs: v('alerting.repeatInterval'),
      externalUrl: v<string>('alerting.externalUrl').trim(),
      otlp: { endpoint: v<string>('alerting.otlp.endpoint').trim(), headers: parseHeaders(v('alerting.otlp.headers'), 'alerting.otlp.headers') },
      delivery: {
        deadlineMs: v('alerting.delivery.deadline'),
        initialBackoffMs: v('alerting.delivery.initialBackoff'),
        maxBackoffMs: v('alerting.delivery.maxBackoff'),
        maxQueue: v('alerting.delivery.maxQueue'),
      },
    };
  } catch (err) {
    if (err instanceof AlertingConfigError) throw new ConfigError(`configuration: ${err.message}`);
    throw err;
  }
}

/** An empty db would open SQLite's private temporary database, deleted on close: acknowledged events lost on restart. */
function nonEmptyDb(db: string): string {
  if (db.trim() === '') throw new ConfigError('invalid value "" for db: expected a SQLite file path or a postgres:// URL');
  return db;
}

/** Typed `http.auth.*` settings: what the HTTP port asks for (mode none: nothing). */
export interface HttpAuthConfig {
  mode: 'none' | 'basic' | 'bearer' | 'proxy-header';
  username: string;
  password: string;
  token: string;
  /** Lower-case header name (Node lower-cases incoming names). */
  proxyHeader: string;
}

/** A mode without its credentials would lock everyone out (or, worse, accept an empty secret): refuse at start. */
function httpAuth(mode: HttpAuthConfig['mode'], username: string, password: string, token: string, proxyHeader: string): HttpAuthConfig {
  const need = (value: string, key: string): void => {
    if (value === '') throw new ConfigError(`${key} is required when http.auth.mode is ${mode}`);
  };
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

/** Splits `host:port` / `[::1]:port` into parts for net.listen. */
export function splitAddr(addr: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(addr);
  if (!m) throw new Error(`not host:port: ${addr}`);
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port: Number(m[3]) };
}

export { loadConfig, ConfigError, effectiveDocument, redact } from './load.ts';
export { parseDuration } from './values.ts';
export { SETTINGS, flagName } from './schema.ts';
