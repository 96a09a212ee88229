/**
 * The `hookwatch serve` command's own setting: how long a signal waits for the service to stop. A leaf:
 * config/ composes this row into the one table.
 */
import type { Setting, SettingValues } from '../config/setting.ts';

export const CLI_SETTINGS: readonly Setting[] = [
  {
    key: 'shutdown.timeout', env: 'HOOKWATCH_SHUTDOWN_TIMEOUT', type: 'duration', default: 25_000, min: 1000, max: 600_000,
    description: 'On SIGTERM/SIGINT, time allowed for the stop before exiting 1 anyway: intake closes; alert evaluation, deliveries and retention stop and, on replicas, the leader lease is handed back (a single process does this after the drain); in-flight requests drain; forwarding stops after its attempt in flight; API requests finish; replica signals and heartbeat end; the store closes. Keep it below the orchestrator\'s grace period (Kubernetes: 30s); a second signal exits at once. Each step that waits on another server has a bound of its own: one that waits on the database (PostgreSQL) the smaller of postgres.leaseTtl / 3 and a tenth of this (2.5s by default); the flush of alert events to alerting.otlp.endpoint the export\'s own 5s timeout and 1s more, at most a quarter of this (6s by default). Past its bound a step is logged (`shutdown step timed out`) and cut off, and hookwatch exits 1.',
  },
];

export interface CliSettings {
  shutdown: { timeoutMs: number };
}

export function cliConfig(r: SettingValues): CliSettings {
  return { shutdown: { timeoutMs: r.number('shutdown.timeout') } };
}
