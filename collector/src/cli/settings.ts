/**
 * The `hookwatch serve` command's own setting: how long a signal waits for the service to stop. A leaf:
 * config/ composes this row into the one table.
 */
import type { Setting, SettingValues } from '../config/setting.ts';

export const CLI_SETTINGS: readonly Setting[] = [
  {
    key: 'shutdown.timeout', env: 'HOOKWATCH_SHUTDOWN_TIMEOUT', type: 'duration', default: 25_000, min: 1000, max: 600_000,
    description: 'On SIGTERM/SIGINT, time allowed to finish in-flight requests, flush queues and close the store before exiting 1 anyway; keep it below the orchestrator\'s grace period (Kubernetes: 30s). A second signal exits at once. On PostgreSQL each step that waits on the database (requests waiting on a statement, the alert evaluation and deliveries in progress, handing back the leader lease, closing the connections) gets the smaller of postgres.leaseTtl / 3 and a tenth of this (2.5s by default); past it the step is logged (`shutdown step timed out`), its connections are closed without waiting for the server, and hookwatch exits 1.',
  },
];

export interface CliSettings {
  shutdown: { timeoutMs: number };
}

export function cliConfig(r: SettingValues): CliSettings {
  return { shutdown: { timeoutMs: r.number('shutdown.timeout') } };
}
