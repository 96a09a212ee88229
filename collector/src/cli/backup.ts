/**
 * `hookwatch backup --to <file>`: an online copy of the SQLite store, taken while `hookwatch serve` runs on it
 * (store/sqlite/backup.ts). It finds the store as serve does (defaults < config file < environment < flags), so
 * in a container `hookwatch backup --to /data/backup.db` copies the store of the process beside it.
 */
import { resolve } from 'node:path';
import { ConfigError, loadConfig, toConfig } from '../config/index.ts';
import { SettingReader } from '../config/setting-reader.ts';
import { isInMemory, isPostgresUrl, storeConfig } from '../store/settings.ts';
import { BackupAbortedError, backupSqlite } from '../store/sqlite/backup.ts';
import { UsageError } from '../tools/common/args.ts';
import { formatBytes, printable } from '../tools/common/format.ts';
import { exitBySignal } from '../tools/common/io.ts';
import type { ToolIO } from '../tools/common/io.ts';
import type { ParsedArgs } from './args.ts';

/** The flags backup takes besides every setting flag: where the copy goes, and whether it may replace a file. */
export const BACKUP_FLAGS = { values: ['to'], booleans: ['force'] } as const;

/** The exit status of a command stopped by a signal, as a shell reports it: 128 + the signal's number (in-process runs). */
const SIGNAL_EXIT = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 } as const;

/**
 * Runs `work` with Ctrl-C, SIGTERM (a stopped pod) and SIGHUP (its terminal or ssh session closed) aborting its
 * signal: it stops and removes its temporary file, as large as the store, instead of leaving it behind, and the
 * command ends killed by the same signal (in-process: 130, 143 or 129), so that a shell loop calling it stops too;
 * a second signal exits at once. Undefined when it ran to its end, the exit status
 * when a signal stopped it (the message said).
 */
export async function stoppable<T>(io: ToolIO, work: (signal: AbortSignal) => Promise<T>): Promise<{ result: T } | { exit: number }> {
  const controller = new AbortController();
  const onSignal = (signal: keyof typeof SIGNAL_EXIT): void => {
    if (controller.signal.aborted) exitBySignal(signal);
    controller.abort(signal);
  };
  for (const signal of Object.keys(SIGNAL_EXIT) as (keyof typeof SIGNAL_EXIT)[]) process.on(signal, onSignal);
  try {
    return { result: await work(controller.signal) };
  } catch (err) {
    if (!(err instanceof BackupAbortedError)) throw err;
    io.stderr(`hookwatch: ${printable(err.message)}\n`);
    // Killed by the same signal once the partial copy is removed.
    const signal = controller.signal.reason as keyof typeof SIGNAL_EXIT;
    await io.stoppedBy?.(signal);
    return { exit: SIGNAL_EXIT[signal] };
  } finally {
    for (const signal of Object.keys(SIGNAL_EXIT) as (keyof typeof SIGNAL_EXIT)[]) process.off(signal, onSignal);
  }
}

/** The settings backup and restore read: the files they copy, or whose files a copy must not replace. */
export const COPY_SETTINGS: ReadonlySet<string> = new Set(['db', 'forward.queue.path']);

/**
 * The store's path as serve finds it (defaults < config file < environment < flags), and the forwarding queue's.
 * Only those settings are checked: a configuration serve would refuse for another reason (an alert rule, the HTTP
 * port's authentication) does not stop a backup or restore, which says it ignored it.
 */
export function storePaths(settingFlags: Record<string, string | undefined>, io: ToolIO, command: string, postgres: string): { db: string; forwardQueue: string } {
  const loaded = loadConfig({ flags: settingFlags, env: io.env, only: COPY_SETTINGS });
  // The files' own checks still stop it (an empty db), before the rest's are said.
  const r = new SettingReader(loaded.values, loaded.sources);
  const [db, queue] = [storeConfig(r).db, r.string('forward.queue.path')];
  const ignored = [...(loaded.ignored ?? [])];
  try {
    toConfig(loaded);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    ignored.push(err.message);
  }
  const name = command.split(' ')[0] as string;
  for (const problem of ignored) io.stderr(`hookwatch: warning: ${printable(problem)} (ignored: ${name} reads only db and forward.queue.path)\n`);
  if (isPostgresUrl(db)) throw new Error(`db is a PostgreSQL URL: hookwatch ${command}; ${postgres}, as docs/postgres.md says under "Backup and restore"`);
  const onDisk = (path: string): string => (isInMemory(path) ? path : resolve(io.cwd, path));
  return { db: onDisk(db), forwardQueue: onDisk(queue) };
}

export async function runBackup(parsed: ParsedArgs, io: ToolIO): Promise<number> {
  const { to, ...settingFlags } = parsed.flags;
  if (to === undefined || to === '') throw new UsageError('backup needs --to <file>: where the copy goes');
  const { db, forwardQueue } = storePaths(settingFlags, io, 'backup copies a SQLite store', 'back PostgreSQL up with pg_dump and restore it with pg_restore');
  const run = await stoppable(io, (signal) => backupSqlite({ db, to: resolve(io.cwd, to), force: parsed.booleans.has('force'), forwardQueue, signal }));
  if ('exit' in run) return run.exit;
  const { result } = run;
  if (result.removedPartials.length > 0) io.stdout(`removed ${printable(result.removedPartials.join(', '))} beside ${printable(result.path)}: left by backups that were killed\n`);
  const seconds = (result.durationMs / 1000).toFixed(result.durationMs < 10_000 ? 2 : 1);
  io.stdout(`backed up ${printable(db)} to ${printable(result.path)}: ${formatBytes(result.bytes)} (${result.pages} pages, schema version ${result.schemaVersion}) in ${seconds}s\n`);
  return 0;
}
