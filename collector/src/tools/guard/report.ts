import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { otlpLogsUrl } from '../common/args.ts';
import type { HookIdentity } from './hook-identity.ts';
import type { GuardField } from './trim.ts';

/** Event name of the record the guard sends per trimmed output; hookwatch's ingest recognises it. */
export { GUARD_TRIM_EVENT, GUARD_TRIM_UID } from '../../../../shared/src/guard-trims.ts';

/** What one guarded run reports: the hook, and each output string it shortened. */
export interface GuardReport extends HookIdentity {
  trims: { field: GuardField; sentChars: number; keptChars: number }[];
}

/**
 * The OTLP/HTTP logs URL for --report (or `source`, where the target came from): a base URL gets `/v1/logs`, a
 * full `/v1/logs` URL is kept.
 */
export const logsUrl = (target: string, source = '--report'): string => otlpLogsUrl(target, source);

/**
 * Sends the report from a detached process with no stdio of its own: the guard writes the hook's output and
 * exits at once, Claude Code does not wait for the pipes, and a slow or down hookwatch costs the hook nothing.
 */
export function reportInBackground(target: string, report: GuardReport): void {
  const sender = fileURLToPath(new URL('./report-send.ts', import.meta.url));
  try {
    const child = spawn(process.execPath, [...process.execArgv, sender, logsUrl(target), JSON.stringify(report)], { detached: true, stdio: 'ignore' });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // Reporting is best effort: it must never fail the hook.
  }
}
