import { spawn } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync, renameSync, rmSync, unlinkSync } from 'node:fs';
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
/** The file's copies being written or taken, `report-failed.txt.<pid>` (sayFailure, takeReportFailure). */
const REPORT_FAILED_COPY = /^report-failed\.txt\.\d+$/;
/**
 * A copy left this long is one whose process ended before removing it (killed, or the machine stopped): one lives
 * for the few microseconds of a write and a rename, or of a rename, a read and a removal.
 */
const STALE_COPY_MS = 60_000;

/**
 * Why an earlier report failed, once (the file is removed), as one line for stderr; undefined when none did. Only a
 * run that reports looks for it: it has saved its output in the folder already. The copies of it that a process
 * ended before removing left are removed first, or each would stay in the folder for good.
 */
export function takeReportFailure(dir: string): string | undefined {
  removeStaleCopies(dir);
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
 * Removes the copies of the failure line (REPORT_FAILED_COPY) last modified more than STALE_COPY_MS ago: only
 * regular files of this user, never a link followed. A process's pid says nothing here: the folder may be shared
 * with another pid namespace (a container), where a pid not running here is a sender writing. Best effort: a copy
 * that cannot be removed is tried again by the next run.
 */
function removeStaleCopies(dir: string, now = Date.now()): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  const uid = process.getuid?.();
  for (const name of names) {
    if (!REPORT_FAILED_COPY.test(name)) continue;
    const path = join(dir, name);
    try {
      const st = lstatSync(path);
      if (st.isFile() && (uid === undefined || st.uid === uid) && now - st.mtimeMs > STALE_COPY_MS) unlinkSync(path);
    } catch {
      // Removed meanwhile by a run beside this one, or not this run's to remove.
    }
  }
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
