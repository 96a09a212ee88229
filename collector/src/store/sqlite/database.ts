/**
 * What every SQLite file of hookwatch shares: how it is opened, transactions, prepared statements, and how its
 * failures are told apart (a lock held elsewhere, a file that failed).
 */
import { accessSync, chmodSync, closeSync, constants, fchmodSync, openSync, statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { makeDir } from '../../make-dir.ts';
import { isInMemory } from '../settings.ts';
import { StoreUnavailableError } from '../store.ts';

/** How long a connection waits for another connection's lock before SQLite gives up ("database is locked"). */
export const BUSY_TIMEOUT_MS = 5000;

/**
 * The size a `-wal` is cut back to once a checkpoint has folded it all into the database (PRAGMA
 * journal_size_limit): SQLite otherwise writes over the file from its start again and never makes it smaller, so a
 * WAL grown while a reader held it (a backup's read transaction, which no checkpoint gets past) would keep that size
 * until the last connection closes. Above the WAL of a steady feed (checkpointed at about 4 MiB, 1000 pages), which
 * is never cut; the first commit after a checkpoint cuts a larger file back to this size.
 */
export const WAL_SIZE_LIMIT_BYTES = 16 * 1024 * 1024;

/**
 * Opens (creating its folder) a database in WAL mode, waiting up to BUSY_TIMEOUT_MS for another connection's lock,
 * its `-wal` cut back to WAL_SIZE_LIMIT_BYTES after a checkpoint.
 * The files hold telemetry about people (who ran which hook, when), so only hookwatch's user may read them:
 * a folder it creates is 0700, the database file is created (or tightened) to 0600 before SQLite opens it,
 * and SQLite gives its -wal and -shm files the database file's mode.
 */
export function openSqlite(path: string, synchronous: 'full' | 'normal' = 'full'): DatabaseSync {
  const onDisk = !isInMemory(path);
  if (onDisk) createPrivateFile(path);
  const db = new DatabaseSync(path, { timeout: BUSY_TIMEOUT_MS });
  try {
    db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = ${synchronous === 'normal' ? 'NORMAL' : 'FULL'}; PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT_BYTES};`);
  } catch (err) {
    // A file locked or not a database: the caller gets the error, not a connection it would never close.
    db.close();
    throw err;
  }
  if (onDisk) {
    // Files left by an earlier version (created 0644) are tightened too.
    for (const suffix of ['-wal', '-shm']) {
      try {
        chmodSync(path + suffix, 0o600);
      } catch {
        // Not there (yet): SQLite creates it with the database file's mode.
      }
    }
  }
  return db;
}

/**
 * Bytes a database takes on disk: its file and its write-ahead log (`-wal`; 0 once a checkpoint truncated it,
 * or before its first write). Two stat calls on the thread pool, never a query: cheap to read at every scrape.
 * Undefined for an in-memory database, which has no file.
 */
export async function sqliteFileBytes(path: string): Promise<{ database: number; wal: number } | undefined> {
  if (isInMemory(path)) return undefined;
  const database = (await stat(path)).size;
  const wal = await stat(`${path}-wal`).then((s) => s.size, (err: unknown) => {
    if ((err as { code?: string }).code === 'ENOENT') return 0;
    throw err;
  });
  return { database, wal };
}

/** Creates `path` (and its folder) readable by hookwatch's user only, or tightens an existing file to 0600. */
export function createPrivateFile(path: string): void {
  // An existing folder (a mounted volume, the working directory) keeps its mode; only new ones are private.
  makeDir(dirname(path), 0o700);
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    tightenExisting(path);
    return;
  }
  try {
    fchmodSync(fd, 0o600);
  } finally {
    closeSync(fd);
  }
}

/**
 * An existing file made 0600 without opening it: closing any descriptor of a file drops every lock this process
 * holds on it (POSIX record locks belong to the process and the file, not to the descriptor), SQLite's included.
 * A connection opened after another of this process (the alert state's, a reader's) would leave the first one's
 * locks gone, and another process's connection (the sqlite3 shell, a backup tool) closing last would then take the
 * -wal and -shm away under hookwatch's feet: its next commits went to a deleted file. What opening the file would
 * have refused (a folder, a file this user may not write) is refused here with the same error.
 */
function tightenExisting(path: string): void {
  // As Node words an open of a folder (accessSync takes one).
  if (statSync(path).isDirectory()) throw Object.assign(new Error(`EISDIR: illegal operation on a directory, open '${path}'`), { code: 'EISDIR', syscall: 'open', path });
  // Its own error (code and path) where this user may not read or write the file.
  accessSync(path, constants.R_OK | constants.W_OK);
  try {
    chmodSync(path, 0o600);
  } catch {
    // A file owned by another user (shared through a group) cannot be tightened by us; it still opens.
  }
}

/** Runs `fn` in one write transaction: committed when it returns, rolled back when it throws. */
export function inTransaction<T>(db: DatabaseSync, fn: () => T): T {
  db.exec('BEGIN IMMEDIATE');
  try {
    const result = fn();
    db.exec('COMMIT');
    return result;
  } catch (err) {
    try {
      db.exec('ROLLBACK');
    } catch {
      // SQLite may already have rolled back (some I/O errors end the transaction).
    }
    throw err;
  }
}

/** Statements prepared once and reused, by SQL text; the least recently used go beyond `max`. */
export class Statements {
  private readonly db: DatabaseSync;
  private readonly max: number;
  private readonly byText = new Map<string, StatementSync>();

  constructor(db: DatabaseSync, max = 256) {
    this.db = db;
    this.max = max;
  }

  get(sql: string): StatementSync {
    let s = this.byText.get(sql);
    if (s) this.byText.delete(sql);
    else {
      s = this.db.prepare(sql);
      if (this.byText.size >= this.max) this.byText.delete(this.byText.keys().next().value as string);
    }
    this.byText.set(sql, s);
    return s;
  }
}

/**
 * Contention (another connection holds the lock), or the connection closed while the file is being reopened:
 * the next attempt will likely pass.
 */
export const SQLITE_BUSY = /SQLITE_(BUSY|LOCKED)|database is locked|database is not open/i;
/**
 * The file itself failed: I/O error, corruption, disk full, read-only, gone. Retryable for the client (503), but
 * the store is not ready until the fault clears: the first such error is logged once, with the path.
 */
const FAULTS: [RegExp, string][] = [
  [/SQLITE_(CORRUPT|NOTADB)|malformed|not a database/i, 'the database file is corrupt'],
  [/SQLITE_FULL|disk is full|database or disk is full/i, 'the disk is full'],
  [/SQLITE_READONLY|readonly|read-only/i, 'the database file is read-only'],
  [/SQLITE_IOERR|disk I\/O error/i, 'I/O error on the database file'],
  [/SQLITE_(CANTOPEN|PERM)|unable to open|permission/i, 'the database file cannot be opened'],
];

/** A failure's message and SQLite error string together, for classification. */
export function describeSqliteError(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  const str = (err as { errstr?: string } | undefined)?.errstr ?? '';
  return str && !msg.includes(str) ? `${msg} (${str})` : msg;
}

/** What kind of file fault an error is, or undefined for other errors. */
export function sqliteFault(err: unknown): string | undefined {
  const text = describeSqliteError(err);
  return FAULTS.find(([re]) => re.test(text))?.[1];
}

/**
 * A SQLite failure as the store classifies it, for the other users of its database file (the alert state): a file
 * fault or lock contention is retryable (StoreUnavailableError, 503 with Retry-After), anything else stays as is.
 * `what` names what failed, for the message.
 */
export function classifySqliteError(err: unknown, what: string): Error {
  if (err instanceof StoreUnavailableError) return err;
  const fault = sqliteFault(err);
  if (fault) return new StoreUnavailableError(`${what}: ${fault}: ${describeSqliteError(err)}`);
  if (SQLITE_BUSY.test(describeSqliteError(err))) return new StoreUnavailableError(`${what}: the database is locked: ${describeSqliteError(err)}`);
  return err instanceof Error ? err : new Error(String(err));
}
