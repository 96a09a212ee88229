/**
 * One process per SQLite store. Two `hookwatch serve` on one file would each be the leader: every alert notified
 * twice (with different webhook ids, so receivers cannot deduplicate them) and retention run twice. The process
 * that serves a store holds an exclusive SQLite lock on a file beside it (`<db>.lock`) until it stops; the
 * operating system lets go of it when the process dies, so a crash leaves nothing to clean up. Other SQLite files
 * one process at a time may use (the forwarding queue) are locked the same way (lockSqliteFile).
 */
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createPrivateFile } from './database.ts';

const LOCK_SUFFIX = '.lock';

/** Another process serves the store (or uses the file). */
export class StoreInUseError extends Error {}

/** What a locked file is, for the error a second process gets. */
export interface LockedFile {
  /** The setting that names the file (`db`, `forward.queue.path`). */
  setting: string;
  /** Why one process at a time, and what to do instead of a second one. */
  advice: string;
}

const STORE: LockedFile = { setting: 'db', advice: 'a SQLite store is served by one process at a time; stop the other one, or run replicas on PostgreSQL' };

export interface StoreLock {
  /** Lets go of the lock; safe twice. */
  release(): void;
}

/**
 * Lock files this process holds. A POSIX lock goes with any descriptor of the file its process closes, so this
 * process must not open one of them again (even to find it taken): it is refused from here instead.
 */
const held = new Set<string>();

function inUse(dbPath: string, path: string, file: LockedFile): StoreInUseError {
  return new StoreInUseError(`another hookwatch process uses ${file.setting} ${dbPath} (it holds ${path}): ${file.advice}`);
}

/** Takes the lock of the store at `dbPath`, or throws StoreInUseError at once (it does not wait). */
export function lockSqliteStore(dbPath: string): StoreLock {
  return lockSqliteFile(dbPath, STORE);
}

/** Takes the lock of the SQLite file at `dbPath` (`<dbPath>.lock`), or throws StoreInUseError naming `file`. */
export function lockSqliteFile(dbPath: string, file: LockedFile): StoreLock {
  if (dbPath === ':memory:' || dbPath === '') return { release: () => {} };
  const path = resolve(`${dbPath}${LOCK_SUFFIX}`);
  if (held.has(path)) throw inUse(dbPath, path, file);
  // The database file first: a path that names a folder (or a file hookwatch may not open) fails here, with the
  // file system's error for the caller to name the setting, before a lock file is left beside it.
  createPrivateFile(dbPath);
  createPrivateFile(path);
  const db = new DatabaseSync(path, { timeout: 0 });
  try {
    // In exclusive locking mode a connection keeps the lock of its first write until it closes. The write is a row
    // naming the holder, for whoever looks at the file once it is free (the lock keeps everyone out meanwhile).
    db.exec('PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS holder (host TEXT NOT NULL, pid INTEGER NOT NULL, started_ms INTEGER NOT NULL); DELETE FROM holder;');
    db.prepare('INSERT INTO holder (host, pid, started_ms) VALUES (?, ?, ?)').run(hostname(), process.pid, Date.now());
    db.exec('COMMIT');
  } catch (err) {
    db.close();
    if ((err as { errcode?: number }).errcode === 5 || /locked|busy/i.test((err as Error).message)) throw inUse(dbPath, path, file);
    throw err;
  }
  held.add(path);
  let released = false;
  return {
    release: () => {
      if (released) return;
      released = true;
      db.close();
      held.delete(path);
    },
  };
}
