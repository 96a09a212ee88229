import { spawn } from 'node:child_process';
import { readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { otlpLogsUrl } from '../common/args.ts';
import { printable } from '../../../../shared/src/printable.ts';
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

/** The file in the guard's folder where a report's sender leaves why it failed, for the next run to say. */
const REPORT_FAILED_FILE = 'report-failed.txt';
/**
 * Why an earlier report failed, once (the file is removed), as one line for stderr; undefined when none did. Only a
 * run that reports looks for it: it has saved its output in the folder already. The copies of it that a process
 * ended before removing left are removed with the old saved outputs (pruneSaved), which such a run removes too.
 */
export function takeReportFailure(dir: string): string | undefined {
  const path = join(dir, REPORT_FAILED_FILE);
  // Moved aside first, then read: a sender's next line, renamed into place meanwhile, is left for the next run, and
  // of two runs beside each other only one takes it.
  const taken = `${path}.${process.pid}`;
  let words: string;
  try {
    renameSync(path, taken);
  } catch {
    return undefined;
  }
  try {
    words = readFileSync(taken, 'utf8').trim();
  } catch {
    return undefined;
  } finally {
    rmSync(taken, { force: true });
  }
  return words === '' ? undefined : `hookwatch guard: an earlier trim report was not delivered: ${printable(words.slice(0, 500))}\n`;
}

/**
 * Sends the report from a detached process with no stdio of its own: the guard writes the hook's output and
 * exits at once, Claude Code does not wait for the pipes, and a slow or down hookwatch costs the hook nothing.
 */
export function reportInBackground(target: string, report: GuardReport, dir: string): void {
  const sender = fileURLToPath(new URL('./report-send.ts', import.meta.url));
  try {
    // At a terminal (a person trying the guard) the sender says a failure there itself; under Claude Code stderr is
    // a pipe it reads to its end, which the sender must not hold open: a failure is left for the next run to say.
    const atTerminal = process.stderr.isTTY;
    const failureTo = atTerminal ? '-' : join(dir, REPORT_FAILED_FILE);
    const child = spawn(process.execPath, [...process.execArgv, sender, logsUrl(target), JSON.stringify(report), failureTo], { detached: true, stdio: atTerminal ? ['ignore', 'ignore', 'inherit'] : 'ignore' });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // Reporting is best effort: it must never fail the hook.
  }
}
