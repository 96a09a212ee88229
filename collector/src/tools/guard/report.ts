import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { UsageError } from '../common/args.ts';
import type { HookIdentity } from './hook-identity.ts';
import type { GuardField } from './trim.ts';

/** Event name of the record the guard sends per trimmed output; hookwatch's ingest recognises it. */
export { GUARD_TRIM_EVENT } from '../../../../shared/src/guard-trims.ts';

/** What one guarded run reports: the hook, and each output string it shortened. */
export interface GuardReport extends HookIdentity {
  trims: { field: GuardField; sentChars: number; keptChars: number }[];
}

/**
 * The OTLP/HTTP logs URL for what the user gave: a base URL gets `/v1/logs`, a full `/v1/logs` URL is kept.
 * Checked when the guard starts, so a typo is an error at once rather than a report silently lost later.
 */
export function logsUrl(target: string): string {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new UsageError(`--report: not a URL: "${target}" (expected e.g. http://hookwatch:4318)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--report: expected an http(s) URL, got "${target}"`);
  if (!url.pathname.endsWith('/v1/logs')) url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/logs`;
  return url.toString();
}

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
