/** The typed configuration the rest of hookwatch sees. Built once at start from the loaded settings. */
import type { LoadedConfig } from './load.ts';

export interface HookwatchConfig {
  otlp: {
    http: { addr: string };
    maxRequestBytes: number;
    requestTimeoutMs: number;
    maxPendingRequests: number;
    ingestToken: string;
  };
  http: { addr: string };
  db: string;
  sqlite: { synchronous: 'full' | 'normal' };
  retention: { eventsMs: number; rollupsMs: number };
  delivery: { nearThreshold: number };
  dimensions: string[];
  log: { level: 'debug' | 'info' | 'warn' | 'error' };
  metrics: { maxHookSeries: number };
  shutdown: { timeoutMs: number };
}

export function toConfig(loaded: LoadedConfig): HookwatchConfig {
  const v = <T>(key: string): T => loaded.values.get(key) as T;
  return {
    otlp: {
      http: { addr: v('otlp.http.addr') },
      maxRequestBytes: v('otlp.maxRequestBytes'),
      requestTimeoutMs: v('otlp.requestTimeout'),
      maxPendingRequests: v('otlp.maxPendingRequests'),
      ingestToken: v('otlp.ingestToken'),
    },
    http: { addr: v('http.addr') },
    db: v('db'),
    sqlite: { synchronous: v('sqlite.synchronous') },
    retention: { eventsMs: v('retention.events'), rollupsMs: v('retention.rollups') },
    delivery: { nearThreshold: v('delivery.nearThreshold') },
    dimensions: v('dimensions'),
    log: { level: v('log.level') },
    metrics: { maxHookSeries: v('metrics.maxHookSeries') },
    shutdown: { timeoutMs: v('shutdown.timeout') },
  };
}

/** Splits `host:port` / `[::1]:port` into parts for net.listen. */
export function splitAddr(addr: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(addr);
  if (!m) throw new Error(`not host:port: ${addr}`);
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port: Number(m[3]) };
}

export { loadConfig, ConfigError, effectiveDocument, redact, parseDuration } from './load.ts';
export { SETTINGS, flagName } from './schema.ts';
