/**
 * Tests that need a program from the machine (Alertmanager, promtool, kubectl, docker-compose, a tmpfs mount):
 * under CI=true a missing one fails the test file, naming what to install, so CI never passes with checks
 * silently left out. Elsewhere the caller may skip, saying why.
 */
import { spawnSync } from 'node:child_process';

/** True when `cmd args` runs and exits 0. */
export function runs(cmd: string, args: readonly string[]): boolean {
  return spawnSync(cmd, args, { encoding: 'utf8', timeout: 30_000 }).status === 0;
}

/** Whether CI=true (as .ci/run sets it). */
export const IN_CI = process.env['CI'] === 'true';

/** Returns `available`; throws under CI=true when it is false, with `install` telling how to get it. */
export function requireTool(available: boolean, what: string, install: string): boolean {
  if (!available && IN_CI) throw new Error(`${what} is required under CI=true and missing: ${install}`);
  return available;
}
