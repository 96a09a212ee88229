/** The typed configuration the rest of hookwatch sees. Built once at start from the loaded settings. */
import { ConfigError, type LoadedConfig } from './load.ts';
import { SettingReader } from './setting-reader.ts';
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
  store: { maxHooks: number; readers: number };
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
  const r = new SettingReader(loaded.values);
  const dimensions = r.list('dimensions');
  return {
    otlp: {
      http: { addr: r.string('otlp.http.addr') },
      maxRequestBytes: r.number('otlp.maxRequestBytes'),
      requestTimeoutMs: r.number('otlp.requestTimeout'),
      maxPendingRequests: r.number('otlp.maxPendingRequests'),
      maxFutureSkewMs: r.number('otlp.maxFutureSkew'),
      ingestToken: r.string('otlp.ingestToken'),
      maxInflightBytes: inflightBytes(r.number('otlp.maxInflightBytes'), r.number('otlp.maxRequestBytes'), loaded.sources.get('otlp.maxInflightBytes') === 'default'),
    },
    http: {
      addr: r.string('http.addr'),
      auth: httpAuth(r.oneOf('http.auth.mode', ['none', 'basic', 'bearer', 'proxy-header']), r.string('http.auth.username'), r.string('http.auth.password'), r.string('http.auth.token'), r.string('http.auth.proxyHeader').trim().toLowerCase()),
    },
    db: nonEmptyDb(r.string('db')),
    sqlite: { synchronous: r.oneOf('sqlite.synchronous', ['full', 'normal']) },
    postgres: { poolSize: r.number('postgres.poolSize'), leaseTtlMs: r.number('postgres.leaseTtl') },
    retention: { eventsMs: r.number('retention.events'), rollupsMs: r.number('retention.rollups') },
    store: { maxHooks: r.number('store.maxHooks'), readers: r.number('store.readers') },
    delivery: { nearThreshold: r.number('delivery.nearThreshold') },
    dimensions,
    privacy: privacyConfig(r.list('privacy.hash'), r.string('privacy.hashKey'), r.list('privacy.drop'), dimensions),
    log: { level: r.oneOf('log.level', ['debug', 'info', 'warn', 'error']) },
    otlpGrpc: { addr: r.string('otlp.grpc.addr') },
    forward: {
      endpoint: r.string('forward.endpoint').trim(),
      protocol: r.oneOf('forward.protocol', ['http/protobuf', 'http/json', 'grpc']),
      headers: parseForwardHeaders(r.raw('forward.headers')) as Record<string, string>,
      compression: r.oneOf('forward.compression', ['gzip', 'none']),
      timeoutMs: r.number('forward.timeout'),
      queue: { path: r.string('forward.queue.path'), maxBytes: r.number('forward.queue.maxBytes') },
      retry: { initialMs: r.number('forward.retry.initialInterval'), maxMs: r.number('forward.retry.maxInterval'), maxElapsedMs: r.number('forward.retry.maxElapsedTime') },
      deadLetters: { maxBytes: r.number('forward.deadLetters.maxBytes') },
      enrich: r.boolean('forward.enrich'),
    },
    metrics: { maxHookSeries: r.number('metrics.maxHookSeries') },
    shutdown: { timeoutMs: r.number('shutdown.timeout') },
    alerting: alertingConfig(r, dimensions),
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

function alertingConfig(r: SettingReader, dimensions: string[]): AlertingConfig {
  try {
    return {
      // groupBy needs the configured dimensions, so rules are checked against them here, once.
      rules: parseRules(r.raw('alerting.rules'), knownDimensions(dimensions)),
      receivers: parseReceivers(r.raw('alerting.receivers')),
      evaluationIntervalMs: r.number('alerting.evaluationInterval'),
      repeatIntervalMs: r.number('alerting.repeatInterval'),
      externalUrl: r.string('alerting.externalUrl').trim(),
      otlp: { endpoint: r.string('alerting.otlp.endpoint').trim(), headers: parseHeaders(r.raw('alerting.otlp.headers'), 'alerting.otlp.headers') },
      delivery: {
        deadlineMs: r.number('alerting.delivery.deadline'),
        initialBackoffMs: r.number('alerting.delivery.initialBackoff'),
        maxBackoffMs: r.number('alerting.delivery.maxBackoff'),
        maxQueue: r.number('alerting.delivery.maxQueue'),
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

export { loadConfig, ConfigError, effectiveDocument, redact } from './load.ts';
export { parseDuration } from './values.ts';
export { SETTINGS, flagName } from './schema.ts';
