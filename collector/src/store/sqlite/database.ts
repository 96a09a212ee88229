/** What every SQLite file of hookwatch shares: how it is opened, transactions, and prepared statements. */
import { chmodSync, closeSync, fchmodSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';

/**
 * Opens (creating its folder) a database in WAL mode, waiting up to 5 s for another connection's lock.
 * The files hold telemetry about people (who ran which hook, when), so only hookwatch's user may read them:
 * a folder it creates is 0700, the database file is created (or tightened) to 0600 before SQLite opens it,
 * and SQLite gives its -wal and -shm files the database file's mode.
 */
export function openSqlite(path: string, synchronous: 'full' | 'normal' = 'full'): DatabaseSync {
  const onDisk = path !== ':memory:' && path !== '';
  if (onDisk) createPrivateFile(path);
  const db = new DatabaseSync(path, { timeout: 5000 });
  try {
    db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = ${synchronous === 'normal' ? 'NORMAL' : 'FULL'};`);
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

/** Creates `path` (and its folder) readable by hookwatch's user only, or tightens an existing file to 0600. */
export function createPrivateFile(path: string): void {
  // An existing folder (a mounted volume, the working directory) keeps its mode; only new ones are private.
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const fd = openSync(path, 'a', 0o600);
  try {
    fchmodSync(fd, 0o600);
  } catch {
    // A file owned by another user (shared through a group) cannot be tightened by us; it still opens.
  } finally {
    closeSync(fd);
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
