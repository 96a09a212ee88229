/**
 * A file of a SQLite store that this user cannot open, named with its owner and what to do. `sudo hookwatch serve`
 * leaves the store's files to root: the lock file (`<db>.lock`) always, which hookwatch makes, and the store, its
 * -wal and -shm when root made them. The service's user, or a restore run as that user, then gets "permission
 * denied" (or SQLite's "unable to open database file", which names no file) for a file it does not know of.
 * Changing their owner is the way out, safe even while a service holds the store.
 */
import { accessSync, constants } from 'node:fs';
import { resolve } from 'node:path';
import { errnoCode, fileProblem, statIfThere } from './backup.ts';
import { sqliteFault } from './database.ts';

/** The files beside the store that hookwatch or SQLite make, in the order they are opened. */
const STORE_FILES = ['', '.lock', '.lock-journal', '-wal', '-shm', '-journal'];

/** The faults SQLite gives when a file of the store cannot be opened for writing (sqliteFault's words). */
const CANNOT_WRITE = new Set(['the database file cannot be opened', 'the database file is read-only']);

/** What a store file is, for the message. */
function fileName(db: string, file: string): string {
  return file === `${db}.lock` ? "the store's lock" : "the store's file";
}

/** The store's files (of the store at `db`) that user `uid` owns: the ones to give to this user with `file`. */
function ownedBy(db: string, uid: number): string[] {
  const files: string[] = [];
  for (const suffix of STORE_FILES) {
    try {
      if (statIfThere(db + suffix)?.uid === uid) files.push(db + suffix);
    } catch {
      // Not even looked at: left out of the command.
    }
  }
  return files;
}

/**
 * The file of the store at `db` (a path as the user gave it) that `err` failed on, when this user may not open it,
 * as an absolute path: the file the error names (EACCES, EPERM), or, for SQLite's "unable to open database file"
 * and "attempt to write a readonly database" (which name none), the first of the store's files this user cannot
 * read and write. Undefined for any other failure.
 */
export function unopenedStoreFile(given: string, err: unknown): { file: string; err: unknown } | undefined {
  const db = resolve(given);
  const code = errnoCode(err);
  const path = (err as NodeJS.ErrnoException | undefined)?.path;
  if (code === 'EACCES' || code === 'EPERM') return path !== undefined && STORE_FILES.some((suffix) => resolve(path) === db + suffix) ? { file: resolve(path), err } : undefined;
  if (code !== undefined && /^E[A-Z]+$/.test(code)) return undefined;
  const fault = sqliteFault(err);
  if (fault === undefined || !CANNOT_WRITE.has(fault)) return undefined;
  for (const suffix of STORE_FILES) {
    try {
      accessSync(db + suffix, constants.R_OK | constants.W_OK);
    } catch (accessErr) {
      const c = errnoCode(accessErr);
      if (c === 'EACCES' || c === 'EPERM' || c === 'EROFS') return { file: db + suffix, err: accessErr };
    }
  }
  return undefined;
}

/**
 * Why `file` of the store at `db` could not be opened (`err`, as unopenedStoreFile found it), and what to do: a file
 * another user owns is named with its owner, and the store's other files that user owns go into the same chown.
 * `command`: the command that failed, when running it as root (or as the service's user) is a way out too
 * (restore); serve is not told to run as root.
 */
export function unopenedStoreFileProblem(given: string, file: string, err: unknown, command?: string): string {
  const db = resolve(given);
  const what = `cannot ${file === `${db}.lock` ? 'take' : 'open'} ${fileName(db, file)} ${file}: ${fileProblem(err)}`;
  let owner;
  try {
    owner = statIfThere(file);
  } catch {
    // Not even looked at: named without its owner.
  }
  const [uid, gid] = [process.geteuid?.(), process.getegid?.()];
  if (errnoCode(err) === 'EROFS') return `${what}: mount it read-write`;
  if (owner !== undefined && uid !== undefined && owner.uid !== uid) {
    const others = ownedBy(db, owner.uid).filter((f) => f !== file);
    const chown = `sudo chown ${uid}:${gid} ${[file, ...others].join(' ')}`;
    const give = others.length === 0 ? `Give it to this user (${chown})` : `Give it to this user, with the store's other files uid ${owner.uid} owns (${chown})`;
    return `${what}: it belongs to uid ${owner.uid}, not to this user (uid ${uid}), left by hookwatch run as that user (sudo hookwatch serve, say). ${give}${command === undefined ? '' : `, or run ${command} as root`}`;
  }
  return `${what}: give this user write access to it${command === undefined ? '' : `, or run ${command} as the service's user`}`;
}

/**
 * The lock of the SQLite file at `given` (`<given>.lock`, lockSqliteFile) could not be written for a full disk:
 * which file and what to do, as SQLite's "database or disk is full" names neither. `lock`: what the lock is, for
 * the message; `setting`: the setting that names the file. Undefined for any other failure.
 */
export function fullLockProblem(given: string, err: unknown, lock: string, setting: string): string | undefined {
  if (sqliteFault(err) !== 'the disk is full') return undefined;
  return `cannot take ${lock} ${resolve(given)}.lock: the disk is full: free space on its file system, or set ${setting} to a file on another one`;
}
