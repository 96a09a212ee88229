/**
 * `hookwatch restore --from <backup>`: puts a backup `hookwatch backup` wrote in place of the SQLite store, once
 * hookwatch serve is stopped (store/sqlite/restore.ts). It finds the store as serve and backup do (defaults <
 * config file < environment < flags), and keeps the store it replaces beside it.
 */
import { resolve } from 'node:path';
import { restoreSqlite } from '../store/sqlite/restore.ts';
import { UsageError } from '../tools/common/args.ts';
import { formatBytes, printable } from '../tools/common/format.ts';
import type { ToolIO } from '../tools/common/io.ts';
import { HOOKWATCH_VERSION } from '../version.ts';
import { MIGRATIONS } from '../store/sqlite/schema.ts';
import type { ParsedArgs } from './args.ts';
import { stoppable, storePaths } from './backup.ts';

/** The flags restore takes besides every setting flag: the backup to put back. */
export const RESTORE_FLAGS = { values: ['from'], booleans: [] } as const;

export async function runRestore(parsed: ParsedArgs, io: ToolIO): Promise<number> {
  const { from, ...settingFlags } = parsed.flags;
  if (from === undefined || from === '') throw new UsageError('restore needs --from <file>: the backup to put in place of the store');
  const { db } = storePaths(settingFlags, io, 'restore puts back a SQLite backup', 'restore PostgreSQL from a pg_dump with pg_restore');
  const run = await stoppable(io, (signal) => restoreSqlite({ db, from: resolve(io.cwd, from), version: HOOKWATCH_VERSION, signal }));
  if ('exit' in run) return run.exit;
  const { result } = run;
  if (result.removedPartials.length > 0) io.stdout(`removed ${printable(result.removedPartials.join(', '))} beside ${printable(result.path)}: left by restores that were killed\n`);
  const migrated = result.schemaVersion < MIGRATIONS.length ? `, migrated to ${MIGRATIONS.length} when hookwatch starts` : '';
  const kept = result.replaced === undefined
    ? 'there was no store to replace'
    : result.replacedWalOnly
      ? `the store it replaced had no database file beside its WAL (missing or empty): the empty database file is removed, the WAL kept as it was, alone, as ${result.replacedWal} (a name SQLite pairs with no database, so that no open deletes it)`
      : `the store it replaced is kept as ${result.replaced}${result.replacedWal === undefined ? '' : ` (with its WAL, ${result.replacedWal}, which could not be folded into it)`}`;
  io.stdout(printable(`restored ${resolve(io.cwd, from)} to ${db}: ${formatBytes(result.bytes)} (schema version ${result.schemaVersion}${migrated}); ${kept}`) + '\n');
  return 0;
}
