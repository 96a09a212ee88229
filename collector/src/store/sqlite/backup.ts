/**
 * An online copy of a SQLite store, taken while `hookwatch serve` keeps writing to it: SQLite's backup API
 * (node:sqlite `backup`) on a read-only connection of this process. The connection holds one read transaction
 * from the first page to the last, so the copy is the store as it was at one commit, the WAL's committed frames
 * included. In WAL mode a reader never blocks the writer: ingest goes on committing meanwhile (into the WAL, which
 * the next checkpoint folds back once the backup ends, and the commit after it cuts back to WAL_SIZE_LIMIT_BYTES:
 * until then the WAL grows by every commit, as docs/deploy.md measures). Without that transaction each step would start a read of its own, and any commit between two steps
 * would start the copy over: under a steady feed it would never end.
 *
 * The service's process lock (`<db>.lock`, process-lock.ts) is a file of its own, so a backup is not refused by it
 * and takes nothing from it. The copy is written to a temporary file beside the target, synced, and renamed over
 * the target only once whole: a failed or interrupted backup leaves no file that looks like a backup. An abort
 * (`signal`: the command's SIGINT, SIGTERM or SIGHUP) stops the copy between two steps, or the sync and the check that
 * follow it at once (they run off the main thread, left to end unwatched), and removes the temporary file.
 * Before the rename the copy is read back with `PRAGMA quick_check`: the pages are copied as they are, so a damaged
 * store (or a write that did not reach the disk intact) gives a damaged copy, which is refused rather than kept
 * as a backup. It reads the file once more, a fraction of the time the copy takes.
 * What a killed backup left (SIGKILL, a crash) is removed by the next backup to the same target, once the process
 * that wrote it no longer runs.
 */
import { accessSync, closeSync, constants, existsSync, fsyncSync, lstatSync, openSync, readdirSync, renameSync, rmSync, statSync, type BigIntStats, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { backup, DatabaseSync } from 'node:sqlite';
import { describeSqliteError, sqliteFault } from './database.ts';
import { isInMemory, sqliteFiles, type SqliteFile } from '../settings.ts';
import { startWorker } from '../../worker-thread.ts';

/** A backup that could not be taken; the message says why and what to do. */
export class BackupError extends Error {
  override name = 'BackupError';
}

/** A backup stopped by its `signal`; the temporary file is removed. */
export class BackupAbortedError extends BackupError {
  override name = 'BackupAbortedError';
}

export interface BackupOptions {
  /** The store's database file (config `db`). */
  db: string;
  /** Where the copy goes. */
  to: string;
  /** Replace an existing file at `to` (never one the service uses: the store's, or the forwarding queue's). */
  force?: boolean;
  /** The forwarding queue's file (config `forward.queue.path`), whose files the copy may not replace either. */
  forwardQueue?: string;
  /** Pages copied per step (default 128: 512 KiB of 4 KiB pages); the progress callback runs after each. */
  pagesPerStep?: number;
  /** Called after each step with the pages left and in all. */
  onProgress?: (progress: { remainingPages: number; totalPages: number }) => void;
  /**
   * Stops the copy at the next step, or the sync and check after it at once, until the rename; backupSqlite then
   * rejects with BackupAbortedError.
   */
  signal?: AbortSignal;
}

export interface BackupResult {
  /** The copy's path, absolute. */
  path: string;
  bytes: number;
  pages: number;
  /** The schema version of the copy (its highest migration). */
  schemaVersion: number;
  durationMs: number;
  /** Temporary files of earlier backups to the same target whose process no longer runs, removed (names). */
  removedPartials: string[];
}

const DEFAULT_PAGES_PER_STEP = 128;

export function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** Why a file operation on the target failed, in words; another failure as its message says. */
export function fileProblem(err: unknown): string {
  switch (errnoCode(err)) {
    case 'ENOENT': return 'its folder does not exist';
    case 'EACCES':
    case 'EPERM': return 'permission denied';
    case 'EROFS': return 'the file system is read-only';
    case 'ENOSPC': return 'the disk is full';
    case 'EISDIR': return 'it is a folder';
    case 'ENOTDIR': return 'a part of its path is not a folder';
    default: return describeSqliteError(err);
  }
}

/**
 * Why serviceFile could not tell what a path is: the file it could not look at (the store's, the forwarding queue's,
 * or the one given), and why. A file that cannot be looked at cannot be proven another one, so the caller refuses.
 */
export function unseenProblem(err: unknown): string {
  const path = (err as NodeJS.ErrnoException | undefined)?.path;
  return path === undefined ? fileProblem(err) : `cannot look at ${path}: ${fileProblem(err)}`;
}

/** The file at `path` (links followed), or undefined when there is none; any other failure (EACCES...) is thrown. */
export function statIfThere(path: string): Stats | undefined;
export function statIfThere(path: string, opts: { bigint: true }): BigIntStats | undefined;
export function statIfThere(path: string, opts?: { bigint: true }): Stats | BigIntStats | undefined {
  try {
    return opts ? statSync(path, opts) : statSync(path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/** Removes a file if it is there; a failure to remove is not the error that matters. */
export function removeQuietly(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // Left behind; named in the error the caller reports.
  }
}

/** Whether a process with this pid runs (EPERM: it does, as another user's). */
function pidRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoCode(err) === 'EPERM';
  }
}

/** How long another target's partial copy of a dead pid must have been left unwritten before a backup removes it. */
const OTHER_PARTIAL_STALE_MS = 3_600_000;

/**
 * Removes what backups left when they were killed before they could clean up: files named exactly
 * `.<name>.<pid>.partial` (or its `-journal`) of a pid that no longer runs, beside `target`. Any `<name>` by default:
 * a backup to a dated file finds those of the backups to other names in its folder (their pid gone and unwritten
 * for an hour, they are no copy under way). Returns the names removed. `everyPid`: those of `target` only, whatever their pid, for a caller
 * that holds a lock no other writer of such files runs without (a restore holds the store's lock). A pid alone does
 * not tell: in a container the command is pid 1 at every run.
 */
export function removeStalePartials(target: string, everyPid = false): string[] {
  const folder = dirname(target);
  const prefix = `.${basename(target)}.`;
  let entries: string[];
  try {
    entries = readdirSync(folder);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const entry of entries) {
    const pid = everyPid
      ? (entry.startsWith(prefix) ? /^([1-9][0-9]*)\.partial(-journal)?$/.exec(entry.slice(prefix.length))?.[1] : undefined)
      : /^\..+\.([1-9][0-9]*)\.partial(-journal)?$/.exec(entry)?.[1];
    if (pid === undefined || (!everyPid && (Number(pid) === process.pid || pidRuns(Number(pid))))) continue;
    const path = join(folder, entry);
    try {
      const st = lstatSync(path);
      if (!st.isFile()) continue;
      // Another target's copy: its pid may be of another pid namespace (a backup from another container into a
      // shared volume), so only one nothing has written to for an hour is taken for left behind.
      if (!everyPid && !entry.startsWith(prefix) && Date.now() - st.mtimeMs < OTHER_PARTIAL_STALE_MS) continue;
      rmSync(path);
      removed.push(entry);
    } catch {
      // Left for the next backup: it is not this one's copy.
    }
  }
  return removed.sort();
}

/** Flushes a folder to disk (a rename in it). */
export function syncFolder(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * `work`, or BackupAbortedError from `aborted` as soon as `signal` aborts: the work is then left to end unwatched
 * (its outcome ignored), as a file sync or a check under way cannot be cut short.
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined, aborted: () => BackupAbortedError): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const stop = (): void => reject(aborted());
    if (signal.aborted) stop();
    signal.addEventListener('abort', stop, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop));
  });
}

/** Flushes a file to disk on the thread pool, so the event loop (and a signal) is not held meanwhile. */
export async function syncApart(path: string): Promise<void> {
  const file = await open(path, 'r+');
  try {
    await file.sync();
  } finally {
    await file.close();
  }
}

/** quickCheck on a worker thread (backup-check-worker.ts), which ends when the answer comes or the wait does. */
export async function quickCheckApart(path: string, signal: AbortSignal | undefined, aborted: () => BackupAbortedError): Promise<string[]> {
  const worker = startWorker(new URL('./backup-check-worker.ts', import.meta.url), { workerData: { path } });
  try {
    return await untilAborted(new Promise<string[]>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the check of the copy ended (exit code ${code}) without an answer`)));
    }), signal, aborted);
  } finally {
    void worker.terminate();
  }
}

/** The problems `PRAGMA quick_check` finds in the copy at `path` (none: empty). */
export function quickCheck(path: string): string[] {
  // immutable: read as a plain file, with no -wal or -shm made beside it (the copy carries the store's WAL mode).
  const url = pathToFileURL(path);
  url.searchParams.set('immutable', '1');
  const copy = new DatabaseSync(url, { readOnly: true });
  try {
    const rows = copy.prepare('PRAGMA quick_check(5)').all() as { quick_check: string }[];
    // One line per problem (a row may hold several, "*** in database main ***" first).
    return rows.flatMap((r) => r.quick_check.split('\n')).map((line) => line.trim()).filter((line) => line !== 'ok' && line !== '' && !line.startsWith('***'));
  } finally {
    copy.close();
  }
}

/**
 * Why this user cannot open the store at `db` to copy it, when a file of it is another user's: the store and its WAL
 * read, its shared memory read and written (a reader of a WAL store writes its read mark there). A store made by
 * `hookwatch serve` is its user's alone (0600): the way out is to run backup as that user, not to take the files
 * from the service. Undefined when every file is open to this user (the failure is something else).
 */
function unreadableStoreProblem(db: string): string | undefined {
  const uid = process.geteuid?.();
  for (const [suffix, mode] of [['', constants.R_OK], ['-wal', constants.R_OK], ['-shm', constants.R_OK | constants.W_OK]] as const) {
    const file = resolve(db + suffix);
    try {
      accessSync(file, mode);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') continue;
      const owner = statIfThere(file)?.uid;
      const what = `cannot open the store's file ${file}: ${fileProblem(err)}`;
      if (owner !== undefined && owner === uid) return `${what}: it is this user's, without the permission it needs; give it back (chmod u+rw ${file})`;
      if (owner === undefined || uid === undefined) return `${what}; run backup as the service's user`;
      return `${what}: it belongs to uid ${owner}, not to this user (uid ${uid}); run backup as ${owner === 0 ? 'root' : `uid ${owner} (the user hookwatch serve runs as) or as root`}`;
    }
  }
  return undefined;
}

/** Checks the source before anything is written: a file there, a SQLite database, a hookwatch store. */
function openSource(db: string): { source: DatabaseSync; schemaVersion: number } {
  if (isInMemory(db)) throw new BackupError('the store is in memory (db is ":memory:"): there is no file to back up');
  let isFile: boolean;
  try {
    isFile = statSync(db).isFile();
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') throw new BackupError(`no database at ${db}: give the path hookwatch serve uses (--db, HOOKWATCH_DB or db in the config file)`);
    throw new BackupError(`cannot read ${db}: ${fileProblem(err)}`);
  }
  if (!isFile) throw new BackupError(`${db} is not a file: give the path of the SQLite database (db)`);
  let source: DatabaseSync;
  try {
    source = new DatabaseSync(db, { readOnly: true, timeout: 5000 });
  } catch (err) {
    throw new BackupError(unreadableStoreProblem(db) ?? `cannot open ${db}: ${sqliteFault(err) ?? describeSqliteError(err)}`);
  }
  try {
    // One read transaction for the whole copy (see the top of this file); its first read fixes the snapshot.
    source.exec('BEGIN');
    return { source, schemaVersion: storeSchemaVersion(source, db) };
  } catch (err) {
    source.close();
    if (err instanceof BackupError) throw err;
    // The -wal and -shm are opened at the first read, not with the store's file.
    throw new BackupError(unreadableStoreProblem(db) ?? `cannot read ${db}: ${sqliteFault(err) ?? describeSqliteError(err)}`);
  }
}

const sameFile = (a: BigIntStats, b: BigIntStats): boolean => a.dev === b.dev && a.ino === b.ino;

/** A file name as a file system that ignores case (and Unicode normalization, as macOS's) compares it. */
const foldCase = (name: string): string => name.normalize('NFC').toLowerCase();

/**
 * What `path` is among the files hookwatch serve uses: the store, a file SQLite or the process lock keeps beside it
 * (-wal, -shm, -journal, .lock), or the same of the forwarding queue; undefined when none. Replacing one of them
 * under a running service (backup --force) would wreck it: a WAL replaced by a database copy reads as a corrupt
 * store to every new connection, and its committed frames are lost at the next crash; restoring one of them
 * (restore --from) puts the store back in place of itself without its WAL.
 * The same file is found under any name: once links are followed, as the same file (device and inode: a hard
 * link, a second mount of the folder, another letter case on a file system that ignores it); and, when neither is
 * there yet, as the same name but for letter case in the same folder, which a file system that ignores case (macOS's
 * by default, ext4 with casefold) takes for one file, and which cannot be told apart from two files until one is
 * written.
 */
export function serviceFile(path: string, db: string, queue: string | undefined): string | undefined {
  const target = (sqliteFiles(path)[0] as SqliteFile).file;
  const targetFile = statIfThere(target, { bigint: true });
  const owners = [{ path: db, itself: 'the database itself', name: `the store ${db}` }];
  if (queue !== undefined && !isInMemory(queue)) {
    const name = `the forwarding queue (forward.queue.path) ${queue}`;
    owners.push({ path: queue, itself: name, name });
  }
  let byCase: string | undefined;
  for (const owner of owners) {
    for (const hit of sqliteFiles(owner.path)) {
      const what = hit.beside === '' ? owner.itself : `the ${hit.beside} file of ${owner.name}`;
      if (hit.file === target) return what;
      const hitFile = statIfThere(hit.file, { bigint: true });
      if (hitFile !== undefined && targetFile !== undefined && sameFile(hitFile, targetFile)) return what;
      if (byCase !== undefined || hitFile !== undefined || targetFile !== undefined) continue;
      if (foldCase(basename(hit.file)) !== foldCase(basename(target))) continue;
      const [hitFolder, targetFolder] = [statIfThere(dirname(hit.file), { bigint: true }), statIfThere(dirname(target), { bigint: true })];
      if (hitFolder !== undefined && targetFolder !== undefined && sameFile(hitFolder, targetFolder)) {
        byCase = `${what} but for letter case (which a file system that ignores case, as macOS's does by default, takes for the same file)`;
      }
    }
  }
  return byCase;
}

/**
 * The checks on the target that need nothing copied: no file the service uses (whatever `force` says), not an
 * existing file unless `force`, and no -wal or -shm file beside it (SQLite would apply such a file to the new
 * copy when it opens).
 */
function checkTarget(db: string, to: string, force: boolean, queue: string | undefined): void {
  let used;
  try {
    used = serviceFile(to, db, queue);
  } catch (err) {
    throw new BackupError(`cannot tell whether ${to} is a file hookwatch serve uses, so it is not written: ${unseenProblem(err)}; run backup as the service's user`);
  }
  if (used !== undefined) throw new BackupError(`the target ${to} is ${used}, which hookwatch serve uses: give another path`);
  for (const suffix of ['-wal', '-shm']) {
    if (existsSync(to + suffix)) throw new BackupError(`${to + suffix} exists: a process has ${to} open, or did not close it; stop it, or remove the file if nothing uses it`);
  }
  let target;
  try {
    target = statSync(to);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return;
    throw new BackupError(`cannot write ${to}: ${fileProblem(err)}`);
  }
  // A folder is not taken as cp takes it (the copy inside it), as sqlite3's .backup does not: the file is named.
  if (target.isDirectory()) throw new BackupError(`cannot write ${to}: it is a folder: give the path of the file to write, such as ${join(to, 'hookwatch-backup.db')}`);
  if (!target.isFile()) throw new BackupError(`cannot write ${to}: it is not a file`);
  if (!force) throw new BackupError(`${to} exists: give another path, or --force to replace it`);
}

/** Takes an online, consistent copy of the SQLite store at `opts.db` into `opts.to`. */
export async function backupSqlite(opts: BackupOptions): Promise<BackupResult> {
  const started = performance.now();
  const force = opts.force ?? false;
  checkTarget(opts.db, opts.to, force, opts.forwardQueue);
  const { source, schemaVersion } = openSource(opts.db);
  const target = resolve(opts.to);
  const temp = join(dirname(target), `.${basename(target)}.${process.pid}.partial`);
  const removedPartials = removeStalePartials(target);
  let pages: number;
  try {
    try {
      // Created here, not by SQLite: private (0600) like the store, and a clear error for a folder we cannot write.
      closeSync(openSync(temp, 'wx', 0o600));
    } catch (err) {
      throw new BackupError(`cannot write beside ${opts.to}: ${fileProblem(err)}`);
    }
    const { signal, onProgress } = opts;
    const aborted = (): BackupAbortedError => new BackupAbortedError(`backup of ${opts.db} to ${opts.to} stopped (${String(signal?.reason)}): the partial copy was removed`);
    try {
      // A step runs on a worker thread; the progress callback runs between two, when nothing writes the file.
      // Throwing from it ends the copy there and rejects.
      const progress = (p: { remainingPages: number; totalPages: number }): void => {
        if (signal?.aborted) throw aborted();
        onProgress?.(p);
      };
      pages = await backup(source, temp, { rate: opts.pagesPerStep ?? DEFAULT_PAGES_PER_STEP, progress });
      // Stopped during the last step (no progress call comes after it): the copy is whole, but not wanted.
      if (signal?.aborted) throw aborted();
      // Seconds on a large copy or a slow disk: a signal meanwhile stops the backup at once, not after them.
      await untilAborted(syncApart(temp), signal, aborted);
      const problems = await quickCheckApart(temp, signal, aborted);
      if (problems.length > 0) throw new BackupError(`the copy of ${opts.db} fails PRAGMA quick_check, so the store itself is damaged (or the disk under ${opts.to}): ${problems.join('; ')}. Check the store with sqlite3 ${opts.db} 'PRAGMA integrity_check'`);
    } catch (err) {
      if (err instanceof BackupError) throw err;
      // A SQLite fault in words, then SQLite's own; a file error in words; anything else (the check's thread that
      // could not start) as it says: each cause once.
      const fault = sqliteFault(err);
      throw new BackupError(`backup of ${opts.db} to ${opts.to} failed: ${fault ? `${fault}: ${describeSqliteError(err)}` : fileProblem(err)}`);
    }
    // Checked again: another backup may have written the target meanwhile.
    if (!force && existsSync(target)) throw new BackupError(`${opts.to} exists: give another path, or --force to replace it`);
    // The last moment a signal stops the backup: once renamed, the copy is whole and kept.
    if (signal?.aborted) throw aborted();
    try {
      renameSync(temp, target);
      syncFolder(dirname(target));
    } catch (err) {
      throw new BackupError(`cannot write ${opts.to}: ${fileProblem(err)}`);
    }
  } catch (err) {
    removeQuietly(temp);
    removeQuietly(`${temp}-journal`);
    throw err;
  } finally {
    // Ends the read transaction: the service's next checkpoint folds the WAL back into the file.
    source.close();
  }
  return { path: target, bytes: statSync(target).size, pages, schemaVersion, durationMs: performance.now() - started, removedPartials };
}

/**
 * The schema version of the hookwatch store open as `db` (`path` in messages). A database that is not a hookwatch
 * store (no schema_migrations table, or no migration run on it) is a BackupError; other errors are thrown as they are.
 */
export function storeSchemaVersion(db: DatabaseSync, path: string): number {
  let version: unknown;
  try {
    version = (db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: unknown } | undefined)?.v;
  } catch (err) {
    if (/no such table/i.test(describeSqliteError(err))) throw new BackupError(`${path} is not a hookwatch database (it has no schema_migrations table)`);
    throw err;
  }
  if (typeof version !== 'number') throw new BackupError(`${path} is not a hookwatch database (no migration has run on it)`);
  return version;
}
