/**
 * `hookwatch backup --to <file>`: an online copy of the SQLite store, taken while `hookwatch serve` runs on it
 * (store/sqlite/backup.ts). It finds the store as serve does (defaults < config file < environment < flags), so
 * in a container `hookwatch backup --to /data/backup.db` copies the store of the process beside it.
 */
import { resolve } from 'node:path';
import { loadConfig, toConfig } from '../config/index.ts';
import { isPostgresUrl } from '../store/settings.ts';
import { BackupAbortedError, backupSqlite } from '../store/sqlite/backup.ts';
import { UsageError } from '../tools/common/args.ts';
import { formatBytes, printable } from '../tools/common/format.ts';
import { exitBySignal } from '../tools/common/io.ts';
import type { ToolIO } from '../tools/common/io.ts';
import type { ParsedArgs } from './args.ts';

/** The flags backup takes besides every setting flag: where the copy goes, and whether it may replace a file. */
export const BACKUP_FLAGS = { values: ['to'], booleans: ['force'] } as const;

/** The exit status of a command stopped by a signal, as a shell reports it: 128 + the signal's number (in-process runs). */
const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143 } as const;

export async function runBackup(parsed: ParsedArgs, io: ToolIO): Promise<number> {
  const { to, ...settingFlags } = parsed.flags;
  if (to === undefined || to === '') throw new UsageError('backup needs --to <file>: where the copy goes');
  const config = toConfig(loadConfig({ flags: settingFlags, env: io.env }));
  if (isPostgresUrl(config.db)) throw new Error('db is a PostgreSQL URL: hookwatch backup copies a SQLite store; back PostgreSQL up with pg_dump and restore it with pg_restore, as docs/postgres.md says under "Backup and restore"');
  const onDisk = (path: string): string => (path === ':memory:' || path === '' ? path : resolve(io.cwd, path));
  const db = onDisk(config.db);
  // Ctrl-C or SIGTERM (a stopped pod) stops the copy and removes its temporary file instead of leaving it behind;
  // a second one exits at once (the next backup beside the target removes what it left).
  const controller = new AbortController();
  const onSignal = (signal: keyof typeof SIGNAL_EXIT): void => {
    if (controller.signal.aborted) exitBySignal(signal);
    controller.abort(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let result;
  try {
    result = await backupSqlite({ db, to: resolve(io.cwd, to), force: parsed.booleans.has('force'), forwardQueue: onDisk(config.forward.queue.path), signal: controller.signal });
  } catch (err) {
    if (!(err instanceof BackupAbortedError)) throw err;
    io.stderr(`hookwatch: ${printable(err.message)}\n`);
    // Killed by the same signal once the partial copy is removed, so that a shell loop calling backup stops too.
    const signal = controller.signal.reason as keyof typeof SIGNAL_EXIT;
    await io.stoppedBy?.(signal);
    return SIGNAL_EXIT[signal];
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  if (result.removedPartials.length > 0) io.stdout(`removed ${printable(result.removedPartials.join(', '))} beside ${printable(result.path)}: left by backups that were killed\n`);
  const seconds = (result.durationMs / 1000).toFixed(result.durationMs < 10_000 ? 2 : 1);
  io.stdout(`backed up ${printable(db)} to ${printable(result.path)}: ${formatBytes(result.bytes)} (${result.pages} pages, schema version ${result.schemaVersion}) in ${seconds}s\n`);
  return 0;
}
