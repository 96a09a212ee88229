/**
 * Puts a backup (backup.ts) in place of a SQLite store that no process serves. The steps an operator would take by
 * hand, in the order that leaves a usable store whatever step fails or is stopped:
 * 1. The backup is checked, read-only and as a plain file: a SQLite database, a hookwatch store (its
 *    schema_migrations table), of this release's schema or an older one (an older one is migrated when hookwatch
 *    starts, as on an upgrade), passing `PRAGMA quick_check`. Nothing is written before this passes.
 * 2. The store's process lock (`<db>.lock`, process-lock.ts) is taken, so no `hookwatch serve` runs on it, nor
 *    starts while the restore runs.
 * 3. The backup is copied beside the store under a temporary name (`.<db>.<pid>.partial`, 0600, owned as the store
 *    it replaces, or as its folder when there is none: so is the lock file when the restore made it), synced, and
 *    read back as the backup was (`PRAGMA quick_check`, the same schema version): a write that reported success
 *    but did not land whole (a short write, a file system error) must not become the store. The read comes mostly
 *    from the system's cache: it vouches for what was written, not for the disk under it.
 * 4. The store being replaced is made whole in one file: its WAL checkpointed into it (a killed service leaves
 *    one), or, when that cannot be done (a full disk, a damaged store, a main file missing or empty), moved along
 *    with it.
 * 5. It is renamed to `<db>.replaced-<UTC time>`, its `-wal` (if kept) and `-journal` with it, the stale `-shm`
 *    removed, the copy renamed into place and the folder synced. A WAL without its main file is kept alone, as
 *    `<db>.replaced-<UTC time>.wal-only`: beside an empty main file, SQLite would delete it at the first open. A WAL left beside the copy would be applied to it
 *    by SQLite when it opens: the restored store would hold pages of the one it replaced, a mixed or corrupt store.
 * Until the copy is renamed into place, a failure or a signal leaves the store as it was, the copy removed.
 */
import { chownSync, closeSync, createReadStream, createWriteStream, existsSync, fchownSync, openSync, readSync, renameSync, rmSync, statSync, type Stats } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { DatabaseSync } from 'node:sqlite';
import { BackupAbortedError, BackupError, errnoCode, fileProblem, quickCheckApart, removeQuietly, removeStalePartials, serviceFile, statIfThere, storeSchemaVersion, syncApart, syncFolder, unseenProblem, untilAborted } from './backup.ts';
import { BUSY_TIMEOUT_MS, describeSqliteError, sqliteFault } from './database.ts';
import { unopenedStoreFile, unopenedStoreFileProblem } from './file-owner.ts';
import { lockSqliteStore, StoreInUseError } from './process-lock.ts';
import { MIGRATIONS } from './schema.ts';
import { isInMemory, sqliteFiles } from '../settings.ts';

export interface RestoreOptions {
  /** The store's database file (config `db`). */
  db: string;
  /** The backup to put in its place. */
  from: string;
  /** This hookwatch's version, named when a backup is from a newer one. */
  version: string;
  /** Stops the restore until the copy is renamed into place; restoreSqlite then rejects with BackupAbortedError. */
  signal?: AbortSignal;
  /** For the name of the replaced store (tests). */
  now?: () => Date;
}

export interface RestoreResult {
  /** The store's path, absolute. */
  path: string;
  bytes: number;
  /** The backup's schema version (its highest migration). */
  schemaVersion: number;
  /** Where the store it replaced is kept (its WAL alone when `replacedWalOnly`); undefined when there was none. */
  replaced: string | undefined;
  /** The replaced store's WAL, kept beside it when it could not be folded into it. */
  replacedWal: string | undefined;
  /**
   * The replaced store had no main file (missing or empty) beside its WAL: `replacedWal` (`replaced` too) holds all
   * there was of it, kept as it was under a name SQLite pairs with no database (`<db>.replaced-<UTC time>.wal-only`).
   */
  replacedWalOnly: boolean;
  /** Temporary files of earlier restores, which were stopped before they could remove them (names). */
  removedPartials: string[];
}

/** The first bytes of every SQLite database file. */
const SQLITE_MAGIC = 'SQLite format 3\0';

/** The backup's schema version, after checking it is a hookwatch store of this release or an older one. */
function backupVersion(from: string, version: string): number {
  const head = Buffer.alloc(SQLITE_MAGIC.length);
  try {
    const fd = openSync(from, 'r');
    try {
      readSync(fd, head, 0, head.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    throw new BackupError(`cannot read ${from}: ${fileProblem(err)}`);
  }
  if (head.toString('latin1') !== SQLITE_MAGIC) throw new BackupError(`${from} is not a SQLite database: give a file hookwatch backup wrote`);
  // immutable: read as a plain file, with no -wal or -shm made beside it (the copy carries the store's WAL mode).
  const url = pathToFileURL(from);
  url.searchParams.set('immutable', '1');
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(url, { readOnly: true });
  } catch (err) {
    throw new BackupError(`cannot open ${from}: ${sqliteFault(err) ?? describeSqliteError(err)}`);
  }
  try {
    let v: number;
    try {
      v = storeSchemaVersion(db, from);
    } catch (err) {
      if (err instanceof BackupError) throw err;
      if (sqliteFault(err) === 'the database file is corrupt') throw damaged(from, [describeSqliteError(err)]);
      throw new BackupError(`cannot read ${from}: ${sqliteFault(err) ?? describeSqliteError(err)}`);
    }
    if (v > MIGRATIONS.length) throw new BackupError(`${from} is from a newer hookwatch (schema version ${v}) than this one (${version}, schema version ${MIGRATIONS.length}): restore it with the release that wrote it, or a later one`);
    return v;
  } finally {
    db.close();
  }
}

/**
 * What is wrong with the copy at `path` of a backup of schema version `schemaVersion`, read back before it replaces
 * the store (as the backup was read before it was copied); undefined when it is whole and that backup's. A write that
 * did not land whole, or a backup changed during the copy, shows here.
 */
async function copyProblem(path: string, schemaVersion: number, signal: AbortSignal | undefined, aborted: () => BackupAbortedError): Promise<string | undefined> {
  try {
    const problems = await quickCheckApart(path, signal, aborted);
    if (problems.length > 0) return `fails PRAGMA quick_check: ${problems.join('; ')}`;
  } catch (err) {
    if (err instanceof BackupError) throw err;
    const fault = sqliteFault(err);
    return `fails PRAGMA quick_check: ${fault ? `${fault}: ${describeSqliteError(err)}` : describeSqliteError(err)}`;
  }
  const url = pathToFileURL(path);
  url.searchParams.set('immutable', '1');
  let copy: DatabaseSync | undefined;
  let v: number;
  try {
    copy = new DatabaseSync(url, { readOnly: true });
    v = storeSchemaVersion(copy, path);
  } catch (err) {
    if (err instanceof BackupError) return `holds no hookwatch store (the backup is schema version ${schemaVersion})`;
    return `cannot be read back: ${sqliteFault(err) ?? describeSqliteError(err)}`;
  } finally {
    copy?.close();
  }
  return v === schemaVersion ? undefined : `is schema version ${v}, the backup ${schemaVersion}`;
}

function damaged(from: string, problems: string[]): BackupError {
  return new BackupError(`${from} fails PRAGMA quick_check, so the backup is damaged: ${problems.join('; ')}. Nothing was changed: restore another backup`);
}

/**
 * Gives the file open at `fd` (or at `path`) the owner of the store it replaces (`owner`), so that the service's user
 * can open the restored store when root ran the restore (sudo). Only root can: for anyone else the file stays
 * theirs (EPERM). Nor can root give it to a user it has no id for (EINVAL: in rootless podman or a
 * user-namespace-remapped Docker, a file of a user outside the namespace shows as 65534): it stays root's, as when
 * anyone else restores.
 */
function ownLike(file: number | string, owner: Stats | undefined): void {
  if (owner === undefined || (owner.uid === process.geteuid?.() && owner.gid === process.getegid?.())) return;
  try {
    // By path for the lock file: a descriptor of it opened and closed here would let go of the lock this process holds.
    if (typeof file === 'number') fchownSync(file, owner.uid, owner.gid);
    else chownSync(file, owner.uid, owner.gid);
  } catch (err) {
    const code = errnoCode(err);
    if (code !== 'EPERM' && code !== 'EINVAL') throw err;
  }
}

/**
 * Why the store's lock (or the store's file, which the lock opens first) could not be taken, naming the file. One
 * another user owns and this one may not open (left by `sudo hookwatch serve`) is named with its owner and what to
 * do (file-owner.ts).
 */
function lockProblem(err: unknown, from: string, db: string): string {
  const unopened = unopenedStoreFile(db, err);
  if (unopened !== undefined) return `${unopenedStoreFileProblem(db, unopened.file, unopened.err, 'restore')}; the store was left as it was`;
  const path = (err as NodeJS.ErrnoException | undefined)?.path;
  const what = path === undefined ? '' : `cannot ${(err as NodeJS.ErrnoException).syscall === 'mkdir' ? 'make' : 'open'} ${path}: `;
  return `cannot restore ${from} to ${db}: ${what}${fileProblem(err)}; the store was left as it was`;
}

/**
 * The suffix of a replaced store's WAL kept without its main file (missing or empty): a name SQLite pairs with no
 * database. As `<name>-wal` beside an empty `<name>`, the first sqlite3 to open `<name>` would find a database of no
 * pages and delete the WAL.
 */
const WAL_ONLY = '.wal-only';

/** `<db>.replaced-<YYYYMMDD-HHMMSS>` (UTC), with `-2`, `-3`... when that name is taken. */
function replacedName(db: string, now: Date): string {
  const stamp = now.toISOString().replace(/\.\d+Z$/, '').replace(/-|:/g, '').replace('T', '-');
  let name = `${db}.replaced-${stamp}`;
  for (let n = 2; [name, `${name}-wal`, `${name}-shm`, `${name}-journal`, `${name}${WAL_ONLY}`].some((f) => existsSync(f)); n++) name = `${db}.replaced-${stamp}-${n}`;
  return name;
}

/**
 * Folds the WAL of the store at `db` into it, so that it is whole in one file; false when that cannot be done (its
 * WAL is then kept beside it when it moves).
 */
function checkpoint(db: string): boolean {
  let conn: DatabaseSync | undefined;
  try {
    conn = new DatabaseSync(db, { timeout: BUSY_TIMEOUT_MS });
    const row = conn.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as { busy: number } | undefined;
    return row?.busy === 0;
  } catch {
    return false;
  } finally {
    try {
      conn?.close();
    } catch {
      // Closing after a failed checkpoint: the WAL stays, and moves with the store.
    }
  }
}

/** Renames `from` to `to` if `from` is there; true when it was. */
function moveIfThere(from: string, to: string): boolean {
  if (!existsSync(from)) return false;
  renameSync(from, to);
  return true;
}

/** Puts the backup at `opts.from` in place of the SQLite store at `opts.db`, keeping the store it replaces. */
export async function restoreSqlite(opts: RestoreOptions): Promise<RestoreResult> {
  const { from, version, signal } = opts;
  if (isInMemory(opts.db)) throw new BackupError('the store is in memory (db is ":memory:"): there is no file to restore to');
  const db = resolve(opts.db);
  let used;
  try {
    used = serviceFile(from, db, undefined);
  } catch (err) {
    // The backup's file, or one of the store's (its folder closed to this user): named by unseenProblem.
    throw new BackupError(`cannot tell whether the backup ${from} is a file of the store ${opts.db}, so nothing was changed: ${unseenProblem(err)}; run restore as the service's user`);
  }
  if (used !== undefined) throw new BackupError(`the backup ${from} is ${used}: give the file hookwatch backup wrote`);
  const fromStat = statIfThere(from);
  if (fromStat === undefined) throw new BackupError(`no backup at ${from}`);
  if (!fromStat.isFile()) throw new BackupError(`${from} is not a file: give the file hookwatch backup wrote`);
  if ((statIfThere(`${from}-wal`)?.size ?? 0) > 0) throw new BackupError(`${from}-wal exists: a process has ${from} open, or did not close it, and what it wrote is in that file; stop it, and restore once ${from}-wal is gone`);
  const aborted = (): BackupAbortedError => new BackupAbortedError(`restore of ${from} to ${opts.db} stopped (${String(signal?.reason)}): the store was left as it was, the partial copy removed`);

  // 1. The backup, before anything is written.
  const schemaVersion = backupVersion(from, version);
  let problems: string[];
  try {
    problems = await quickCheckApart(from, signal, aborted);
  } catch (err) {
    if (err instanceof BackupError) throw err;
    if (sqliteFault(err) === 'the database file is corrupt') throw damaged(from, [describeSqliteError(err)]);
    throw new BackupError(`cannot check ${from}: ${sqliteFault(err) ?? describeSqliteError(err)}`);
  }
  if (problems.length > 0) throw damaged(from, problems);
  if (signal?.aborted) throw aborted();

  /**
   * A file of the store (or its folder) once the lock is held, or undefined when there is none; a BackupError naming
   * it when it cannot be looked at (EACCES: a folder on its path this user may not search, an NFS export that
   * squashes root), with what to do.
   */
  const lookAt = (path: string): Stats | undefined => {
    try {
      return statIfThere(path);
    } catch (err) {
      const code = errnoCode(err);
      const advice = code === 'EACCES' || code === 'EPERM' ? ": run restore as the service's user" : '';
      throw new BackupError(`cannot restore ${from} to ${opts.db}: ${unseenProblem(err)}${advice}; the store was left as it was`);
    }
  };

  // 2. No service on the store while it is replaced.
  let lock;
  const lockFile = `${db}.lock`;
  const lockMade = !existsSync(lockFile);
  try {
    lock = lockSqliteStore(db);
  } catch (err) {
    if (err instanceof StoreInUseError) {
      const who = err.holder ? `hookwatch serve (pid ${err.holder.pid} on ${err.holder.host})` : `another process (it holds ${err.lock})`;
      throw new BackupError(`${who} uses the store ${opts.db}: stop it first (in Kubernetes, scale the Deployment to 0), then restore`);
    }
    throw new BackupError(lockProblem(err, from, opts.db));
  }
  try {
    // Where SQLite keeps the store (a link followed): its -wal and -shm are beside that file.
    const store = (sqliteFiles(db)[0] as { file: string }).file;
    const temp = join(dirname(store), `.${basename(store)}.${process.pid}.partial`);
    // Every pid's: no other restore runs while this one holds the lock, and a pid that runs tells nothing (in a
    // container restore is pid 1 at every run, the pid of the one that was killed).
    const removedPartials = removeStalePartials(store, true);
    // The store's owner, given to the copy: its main file's, or its WAL's when the main file is empty (the lock
    // above makes an empty one where there was none); where there is neither (a fresh volume), its folder's.
    const main = lookAt(store);
    const walFile = lookAt(`${store}-wal`);
    const owner = (main?.size ?? 0) > 0 ? main : (walFile?.size ?? 0) > 0 ? walFile : lookAt(dirname(store));
    // The lock file made above, the service's to open at every start: its owner too.
    if (lockMade) {
      try {
        ownLike(lockFile, owner);
      } catch (err) {
        throw new BackupError(`cannot restore ${from} to ${opts.db}: ${fileProblem(err)}; the store was left as it was`);
      }
    }

    // 3. The copy beside the store, private, whole on disk before it is used.
    try {
      // Created here: private (0600) like the store, whatever the backup's mode, and owned as the store is.
      const fd = openSync(temp, 'wx', 0o600);
      try {
        ownLike(fd, owner);
      } finally {
        closeSync(fd);
      }
      const copy = createWriteStream(temp, { flags: 'r+' });
      await (signal ? pipeline(createReadStream(from), copy, { signal }) : pipeline(createReadStream(from), copy));
      // Seconds on a large copy or a slow disk: a signal meanwhile stops the restore at once, not after it.
      await untilAborted(syncApart(temp), signal, aborted);
      // Read back before it replaces anything: a short write, or a disk that returns other bytes than it was given,
      // would otherwise become the store.
      const problem = await copyProblem(temp, schemaVersion, signal, aborted);
      if (problem !== undefined) throw new BackupError(`the copy of ${from} written beside the store ${problem}, so it is not the backup: what was written under ${dirname(store)} did not land whole (or ${from} changed during the copy). The copy was removed, the store left as it was: check the disk, then restore again`);
      if (signal?.aborted) throw aborted();
    } catch (err) {
      removeQuietly(temp);
      if (err instanceof BackupError) throw err;
      if (signal?.aborted) throw aborted();
      throw new BackupError(`cannot restore ${from} to ${opts.db}: ${fileProblem(err)}; the store was left as it was`);
    }

    // 4. The store it replaces, whole in one file where its WAL can be folded in.
    let current: Stats | undefined;
    let wal: Stats | undefined;
    try {
      current = lookAt(store);
      wal = lookAt(`${store}-wal`);
    } catch (err) {
      removeQuietly(temp);
      throw err;
    }
    const hasFile = (current?.size ?? 0) > 0;
    const hasStore = hasFile || (wal?.size ?? 0) > 0;
    // A WAL beside a missing or empty main file is not checkpointed: opening the store would make an empty
    // database, and SQLite deletes the WAL of a database of no pages. For the same reason it is not kept beside the
    // empty main file: it is moved aside as it is, alone, under a name SQLite pairs with no database (WAL_ONLY); the
    // empty main file gives its place to the copy, and the -shm (an index SQLite makes again from the WAL) goes.
    const walOnly = hasStore && !hasFile;
    const walKept = hasStore && wal !== undefined && (walOnly || !checkpoint(store)) && existsSync(`${store}-wal`);
    if (signal?.aborted) {
      removeQuietly(temp);
      throw aborted();
    }

    // 5. The renames: the store and what belongs to it aside, the copy in its place.
    const replaced = hasStore ? replacedName(store, (opts.now ?? (() => new Date()))()) : undefined;
    const moved: [string, string][] = [];
    try {
      if (replaced !== undefined && walOnly) {
        if (moveIfThere(`${store}-wal`, replaced + WAL_ONLY)) moved.push([`${store}-wal`, replaced + WAL_ONLY]);
      } else if (replaced !== undefined) {
        if (moveIfThere(store, replaced)) moved.push([store, replaced]);
        for (const suffix of ['-wal', '-journal']) {
          if (suffix === '-wal' && !walKept) continue;
          if (moveIfThere(store + suffix, replaced + suffix)) moved.push([store + suffix, replaced + suffix]);
        }
      }
      // What is left of the store's files is stale: applied to the copy, it would mix the two stores.
      for (const suffix of ['-wal', '-shm', '-journal']) rmSync(store + suffix, { force: true });
      renameSync(temp, store);
      syncFolder(dirname(store));
    } catch (err) {
      // Put back what was moved: the store as it was.
      for (const [back, aside] of moved.reverse()) {
        try {
          renameSync(aside, back);
        } catch {
          // Named in the message below.
        }
      }
      removeQuietly(temp);
      throw new BackupError(`cannot restore ${from} to ${opts.db}: ${fileProblem(err)}${replaced !== undefined && existsSync(replaced) ? `; the store is kept as ${replaced}` : '; the store was left as it was'}`);
    }
    const replacedWal = walKept && replaced !== undefined ? (walOnly ? replaced + WAL_ONLY : `${replaced}-wal`) : undefined;
    return { path: store, bytes: statSync(store).size, schemaVersion, replaced: walOnly ? replacedWal : replaced, replacedWal, replacedWalOnly: walOnly, removedPartials };
  } finally {
    lock.release();
  }
}
