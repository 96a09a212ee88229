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
import { pathToFileURL } from 'node:url';
import { isInMemory } from '../settings.ts';
import { createPrivateFile } from './database.ts';

const LOCK_SUFFIX = '.lock';

/** The process that holds a lock, as it wrote itself into the lock file. */
export interface LockHolder {
  pid: number;
  host: string;
}

/** Another process serves the store (or uses the file). */
export class StoreInUseError extends Error {
  /** The lock file the other process holds. */
  readonly lock: string;
  /** That process, when the lock file names it. */
  readonly holder: LockHolder | undefined;

  constructor(message: string, lock: string, holder: LockHolder | undefined) {
    super(message);
    this.lock = lock;
    this.holder = holder;
  }
}

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

/**
 * The holder a lock file names, read without taking any lock (immutable: its holder keeps it locked, and its row
 * is committed before it is held), or undefined when it cannot be read (a lock file of another program).
 */
function holderOf(path: string): LockHolder | undefined {
  const url = pathToFileURL(path);
  url.search = '?immutable=1';
  try {
    const db = new DatabaseSync(url, { readOnly: true });
    try {
      const row = db.prepare('SELECT pid, host FROM holder').get() as { pid: number; host: string } | undefined;
      return row ? { pid: row.pid, host: row.host } : undefined;
    } finally {
      db.close();
    }
  } catch {
    return undefined;
  }
}

/** `holder`: undefined when this process holds the lock, whose file it must not open (see `held`). */
function inUse(dbPath: string, path: string, file: LockedFile, holder?: LockHolder): StoreInUseError {
  const who = holder ? `pid ${holder.pid} on ${holder.host} holds ${path}` : `it holds ${path}`;
  return new StoreInUseError(`another hookwatch process uses ${file.setting} ${dbPath} (${who}): ${file.advice}`, path, holder);
}

/** Takes the lock of the store at `dbPath`, or throws StoreInUseError at once (it does not wait). */
export function lockSqliteStore(dbPath: string): StoreLock {
  return lockSqliteFile(dbPath, STORE);
}

/** Takes the lock of the SQLite file at `dbPath` (`<dbPath>.lock`), or throws StoreInUseError naming `file`. */
export function lockSqliteFile(dbPath: string, file: LockedFile): StoreLock {
  if (isInMemory(dbPath)) return { release: () => {} };
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
    if ((err as { errcode?: number }).errcode === 5 || /locked|busy/i.test((err as Error).message)) throw inUse(dbPath, path, file, holderOf(path));
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
