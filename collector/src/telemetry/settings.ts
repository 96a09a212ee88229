/**
 * hookwatch's own signals' settings: the log level and the bound on per-hook series on /metrics. A leaf:
 * config/ composes these rows into the one table.
 */
import type { Setting, SettingValues } from '../config/setting.ts';

export const TELEMETRY_SETTINGS: readonly Setting[] = [
  {
    key: 'log.level', env: 'HOOKWATCH_LOG_LEVEL', type: 'enum', default: 'info', values: ['debug', 'info', 'warn', 'error'], reloadable: true,
    description: 'Lowest level of hookwatch\'s own JSON log lines (written to stderr). A reload applies it to every line written after it: turn on debug while looking into a problem, and back, without a restart.',
  },
  {
    key: 'metrics.maxHookSeries', env: 'HOOKWATCH_METRICS_MAX_HOOK_SERIES', type: 'int', default: 500, min: 0, max: 100_000,
    description: 'Most hooks given their own labelled series on /metrics; events of further hooks go to overflow counters and hookwatch_hook_series_dropped counts them, so a flood of hook names cannot explode Prometheus. A hook idle for 25 hours gives its series up, and its slot goes to the next hook without one.',
  },
];

export interface TelemetrySettings {
  log: { level: 'debug' | 'info' | 'warn' | 'error' };
  metrics: { maxHookSeries: number };
}

export function telemetryConfig(r: SettingValues): TelemetrySettings {
  return { log: { level: r.oneOf('log.level', ['debug', 'info', 'warn', 'error']) }, metrics: { maxHookSeries: r.number('metrics.maxHookSeries') } };
}
