/**
 * `hookwatch restore --from <backup>` as an operator runs it: a real `hookwatch serve` fed over OTLP, a backup, more
 * telemetry, the service killed so that its WAL (holding the later events) stays beside the store, then the
 * restore, and a hookwatch started on the result serves exactly what the backup held, while the store it replaced
 * is kept whole beside it. Then what restore refuses, leaving the store as it was: a running service on the store,
 * a file that is no SQLite database, a SQLite database that is no hookwatch store, a damaged backup, one from a
 * newer release; a full disk part way through the copy; a copy not written whole; a signal during it; a lock
 * file or a store folder the restoring user cannot open.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, closeSync, copyFileSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, watch, writeFileSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { openSqlite } from '../src/store/sqlite/database.ts';
import { MIGRATIONS } from '../src/store/sqlite/index.ts';
import { lockSqliteStore } from '../src/store/sqlite/process-lock.ts';
import { HOOKWATCH_VERSION } from '../src/version.ts';
import { getJson, tempDir } from './helpers.ts';
import { hookwatchBackup, hookwatchRestore, paddedStore, startRestore, views } from './support/backup.ts';
import { startReplica, type Replica } from './support/serve-process.ts';
import { oldSchemaFile, OLD_SCHEMA, OLD_SCHEMA_EVENTS } from './support/old-schema.ts';
import { emitExecutions } from './support/service.ts';
import { mountTmpfs, unmountTmpfs } from './support/tmpfs.ts';
import { requireTool } from './required-tool.ts';
import { canRunAsUser, canStrace } from './support/tools.ts';

const tmp = tempDir('hookwatch-restore-');
afterAll(() => tmp.cleanup());
let replicas: Replica[] = [];
let after: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const r of replicas) await r.stop();
  replicas = [];
  for (const f of after) await f();
  after = [];
});

/** `count` executions of `hookName`, one OTLP batch, acknowledged. */
async function ingest(otlpHttpUrl: string, hookName: string, count: number): Promise<void> {
  const exporter = await emitExecutions(otlpHttpUrl, Array.from({ length: count }, () => ({ hookEvent: 'Stop', hookName, stdoutChars: 100 })));
  expect(exporter.codes).toEqual([0]);
}

/** Executions per hook name, as the API counts them over the last and next hour. */
async function executions(httpUrl: string): Promise<Record<string, number>> {
  const now = Date.now();
  const range = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 3_600_000).toISOString()}`;
  const { body } = await getJson<{ hooks: { hookName: string; executions: number }[] }>(httpUrl, `/api/v1/hooks?${range}`);
  return Object.fromEntries(body.hooks.map((h) => [h.hookName, h.executions]));
}

/** The number of events a store file holds, read from it (and its WAL) alone. */
function storedEvents(path: string): number {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    expect(db.prepare('PRAGMA integrity_check').all()).toEqual([{ integrity_check: 'ok' }]);
    return (db.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** A folder of its own holding an empty hookwatch store, with `padRows` rows of about a page each. */
function scratchStore(name: string, padRows = 0, dir = join(tmp.dir, name)): Promise<{ dir: string; path: string; root: number; pageSize: number }> {
  return paddedStore(dir, padRows);
}

/** A file's bytes and the names in its folder: what a refused restore must leave as they were. */
function snapshot(path: string, dir: string): { bytes: Buffer; names: string[] } {
  return { bytes: readFileSync(path), names: readdirSync(dir).sort() };
}

describe('hookwatch restore on SQLite', () => {
  it('puts a backup in place of a store whose service was killed: the backup\'s events served, not the stale WAL\'s, the replaced store kept whole', async () => {
    const dir = join(tmp.dir, 'live');
    mkdirSync(dir);
    const db = join(dir, 'hookwatch.db');
    const backup = join(tmp.dir, 'backups', 'hookwatch-backup.db');
    mkdirSync(join(tmp.dir, 'backups'));
    const original = await startReplica({ db, cwd: dir });
    replicas.push(original);
    await ingest(original.otlpHttpUrl, 'Stop:before', 40);
    await ingest(original.otlpHttpUrl, 'SessionStart:before', 7);
    const now = Date.now();
    const range = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 3_600_000).toISOString()}`;
    const seen = await views(original.httpUrl, range, []);
    const backedUp = await hookwatchBackup(['--to', backup], { HOOKWATCH_DB: db });
    expect(backedUp.stderr).toBe('');
    expect(backedUp.status).toBe(0);
    // Later telemetry, which the backup does not hold.
    await ingest(original.otlpHttpUrl, 'Stop:after', 30);
    expect(await executions(original.httpUrl)).toEqual({ 'Stop:before': 40, 'SessionStart:before': 7, 'Stop:after': 30 });

    // Refused while the service runs on the store, naming it; nothing changed.
    const before = snapshot(backup, dir);
    const refused = await hookwatchRestore(['--from', backup], { HOOKWATCH_DB: db });
    expect(refused).toEqual({ status: 1, stdout: '', stderr: `hookwatch: hookwatch serve (pid ${original.pid} on ${hostname()}) uses the store ${db}: stop it first (in Kubernetes, scale the Deployment to 0), then restore\n` });
    expect(snapshot(backup, dir)).toEqual(before);
    expect(await executions(original.httpUrl)).toEqual({ 'Stop:before': 40, 'SessionStart:before': 7, 'Stop:after': 30 });

    // Killed (a node lost, an OOM kill): its WAL, holding the later events, stays beside the store.
    original.child.kill('SIGKILL');
    await original.exited;
    replicas = [];
    expect(statSync(`${db}-wal`).size).toBeGreaterThan(0);
    /** The store's files, its process lock's aside (a killed holder may leave the lock's journal). */
    const storeFiles = (): string[] => readdirSync(dir).filter((n) => !n.startsWith('hookwatch.db.lock')).sort();
    expect(storeFiles()).toEqual(['hookwatch.db', 'hookwatch.db-shm', 'hookwatch.db-wal']);

    const restored = await hookwatchRestore(['--from', backup], { HOOKWATCH_DB: db });
    expect(restored.stderr).toBe('');
    expect(restored.status).toBe(0);
    const replaced = /the store it replaced is kept as (\S+)\n$/.exec(restored.stdout)?.[1] ?? '';
    expect(replaced).toMatch(new RegExp(`^${db}\\.replaced-\\d{8}-\\d{6}$`));
    expect(restored.stdout).toMatch(new RegExp(`^restored ${backup} to ${db}: \\d+\\.\\d KiB \\(schema version ${MIGRATIONS.length}\\); the store it replaced is kept as ${replaced}\\n$`));
    // The store's stale WAL and shared memory are gone, not applied to the copy; the replaced store is one file.
    expect(storeFiles()).toEqual(['hookwatch.db', replaced.slice(dir.length + 1)]);
    expect(statSync(db).mode & 0o777).toBe(0o600);
    expect(statSync(replaced).mode & 0o777).toBe(0o600);
    expect(readFileSync(db)).toEqual(readFileSync(backup));
    // The replaced store is whole, its WAL folded in: every event the killed service acknowledged.
    expect(storedEvents(replaced)).toBe(77);

    const again = await startReplica({ db, cwd: dir });
    replicas.push(again);
    expect(await executions(again.httpUrl)).toEqual({ 'Stop:before': 40, 'SessionStart:before': 7 });
    expect(await views(again.httpUrl, range, [])).toEqual(seen);
    // It ingests as before.
    await ingest(again.otlpHttpUrl, 'Stop:restored', 3);
    expect(await executions(again.httpUrl)).toEqual({ 'Stop:before': 40, 'SessionStart:before': 7, 'Stop:restored': 3 });
  }, 120_000);

  it('refuses a backup that is not a whole hookwatch store of this release or an older one, and leaves the store as it was', async () => {
    const { dir, path, root, pageSize: size } = await scratchStore('refused', 20);
    const env = { HOOKWATCH_DB: path };
    const backups = join(dir, 'backups');
    mkdirSync(backups);
    const before = snapshot(path, dir);

    const usage = await hookwatchRestore([], env);
    expect(usage).toEqual({ status: 2, stdout: '', stderr: 'hookwatch: restore needs --from <file>: the backup to put in place of the store\nRun "hookwatch restore --help" for the flags.\n' });

    const absent = join(backups, 'absent.db');
    expect(await hookwatchRestore(['--from', absent], env)).toEqual({ status: 1, stdout: '', stderr: `hookwatch: no backup at ${absent}\n` });

    const text = join(backups, 'notes.db');
    writeFileSync(text, 'these are not the pages of a database, just some words written to a file long enough to be read as one');
    expect(await hookwatchRestore(['--from', text], env)).toEqual({ status: 1, stdout: '', stderr: `hookwatch: ${text} is not a SQLite database: give a file hookwatch backup wrote\n` });

    const other = join(backups, 'other.db');
    const otherDb = new DatabaseSync(other);
    otherDb.exec('CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES (\'hello\')');
    otherDb.close();
    expect(await hookwatchRestore(['--from', other], env)).toEqual({ status: 1, stdout: '', stderr: `hookwatch: ${other} is not a hookwatch database (it has no schema_migrations table)\n` });

    // A damaged backup: the padding table's root page overwritten, the migrations table still readable.
    const damaged = join(backups, 'damaged.db');
    copyFileSync(path, damaged);
    const fd = openSync(damaged, 'r+');
    writeSync(fd, Buffer.alloc(size, 0x5a), 0, size, (root - 1) * size);
    closeSync(fd);
    const damagedOut = await hookwatchRestore(['--from', damaged], env);
    expect(damagedOut).toMatchObject({ status: 1, stdout: '' });
    expect(damagedOut.stderr).toMatch(new RegExp(`^hookwatch: ${damaged} fails PRAGMA quick_check, so the backup is damaged: .+\\. Nothing was changed: restore another backup\\n$`));

    // A backup from a newer release: its schema is past this one's.
    const newer = join(backups, 'newer.db');
    copyFileSync(path, newer);
    const newerDb = new DatabaseSync(newer);
    newerDb.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(MIGRATIONS.length + 1, Date.now());
    newerDb.close();
    expect(await hookwatchRestore(['--from', newer], env)).toEqual({ status: 1, stdout: '', stderr: `hookwatch: ${newer} is from a newer hookwatch (schema version ${MIGRATIONS.length + 1}) than this one (${HOOKWATCH_VERSION}, schema version ${MIGRATIONS.length}): restore it with the release that wrote it, or a later one\n` });

    // The store itself, and its own files.
    expect(await hookwatchRestore(['--from', path], env)).toEqual({ status: 1, stdout: '', stderr: `hookwatch: the backup ${path} is the database itself: give the file hookwatch backup wrote\n` });
    // The same file under another name (a hard link here; a second mount of the folder, or another letter case on
    // macOS, the same): still the store.
    const linked = join(backups, 'linked.db');
    linkSync(path, linked);
    expect(await hookwatchRestore(['--from', linked], env)).toEqual({ status: 1, stdout: '', stderr: `hookwatch: the backup ${linked} is the database itself: give the file hookwatch backup wrote\n` });

    // A PostgreSQL store: pg_restore, and the password never printed.
    const pg = await hookwatchRestore(['--from', other], { HOOKWATCH_DB: 'postgres://hookwatch:s3cret-pw@db.internal:5432/hookwatch' });
    expect(pg).toEqual({ status: 1, stdout: '', stderr: 'hookwatch: db is a PostgreSQL URL: hookwatch restore puts back a SQLite backup; restore PostgreSQL from a pg_dump with pg_restore, as docs/postgres.md says under "Backup and restore"\n' });

    expect(snapshot(path, dir)).toEqual(before);
    expect(readdirSync(backups).sort()).toEqual(['damaged.db', 'linked.db', 'newer.db', 'notes.db', 'other.db']);
    // No store was opened, and none was written.
    expect(readdirSync(dir).filter((n) => n.startsWith('hookwatch.db'))).toEqual(['hookwatch.db']);
  }, 60_000);

  it('restores an older release\'s backup, migrated when hookwatch starts, where there is no store yet', async () => {
    const backup = join(tmp.dir, 'older-backup.db');
    await oldSchemaFile(backup);
    const dir = join(tmp.dir, 'fresh');
    mkdirSync(dir);
    const db = join(dir, 'hookwatch.db');
    const out = await hookwatchRestore(['--from', backup], { HOOKWATCH_DB: db });
    expect(out.stderr).toBe('');
    expect(out.status).toBe(0);
    expect(out.stdout).toMatch(new RegExp(`^restored ${backup} to ${db}: \\d+\\.\\d KiB \\(schema version ${OLD_SCHEMA}, migrated to ${MIGRATIONS.length} when hookwatch starts\\); there was no store to replace\\n$`));
    expect(readdirSync(dir).sort()).toEqual(['hookwatch.db', 'hookwatch.db.lock']);
    const started = await startReplica({ db, cwd: dir });
    replicas.push(started);
    expect(await executions(started.httpUrl)).toEqual({ 'PostToolUse:Bash': OLD_SCHEMA_EVENTS });
  }, 60_000);

  it('on a disk that fills up part way through the copy: says so, leaves the store as it was and nothing beside it', async (ctx) => {
    const mount = mountTmpfs(2, 'hookwatch-restore-mount-');
    if (mount === undefined) return ctx.skip('no tmpfs can be mounted here (not root)');
    after.push(async () => unmountTmpfs(mount));
    // A store of about 0.5 MiB on the 2 MiB disk, a backup of about 2.4 MiB elsewhere.
    const { path } = await scratchStore('small', 100, join(mount, 'data'));
    const { path: backup } = await scratchStore('large', 600);
    const before = snapshot(path, join(mount, 'data'));
    const out = await hookwatchRestore(['--from', backup], { HOOKWATCH_DB: path });
    expect(out).toEqual({ status: 1, stdout: '', stderr: `hookwatch: cannot restore ${backup} to ${path}: the disk is full; the store was left as it was\n` });
    expect(snapshot(path, join(mount, 'data'))).toEqual({ ...before, names: [...before.names, 'hookwatch.db.lock'].sort() });
    const store = new DatabaseSync(path, { readOnly: true });
    try {
      expect(store.prepare('SELECT COUNT(*) AS n FROM padding').get()).toEqual({ n: 100 });
    } finally {
      store.close();
    }
  }, 60_000);

  it('stops on SIGINT, SIGTERM or SIGHUP during the copy: the store as it was, the partial copy removed, killed by the signal', async (ctx) => {
    if (!canStrace()) return ctx.skip('no strace here');
    const { path: backup } = await scratchStore('big-backup', 200);
    const { dir, path } = await scratchStore('stopped', 10);
    const before = snapshot(path, dir);
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      const watcher = watch(dir);
      let partial = '';
      const copying = new Promise<void>((resolve) => watcher.on('change', (_event, name) => {
        if (name === partial) resolve();
      }));
      // The copy's sync held for five minutes (strace, the tracer forked off so that hookwatch keeps the pid the
      // partial copy is named after): the restore cannot get past the copy before the signal.
      const held = `${realpathSync(dir)}/.hookwatch.db.$$.partial`;
      const { child, done } = startRestore(['--from', backup], { HOOKWATCH_DB: path }, undefined, `strace -D -f -qq -o /dev/null -P "${held}" -e trace=fsync -e inject=fsync:delay_enter=300000000`);
      // The copy appears beside the store once the backup is checked and the store's lock taken.
      partial = `.hookwatch.db.${child.pid}.partial`;
      await copying;
      watcher.close();
      child.kill(signal);
      expect(await done).toEqual({ status: -1, signal, stdout: '', stderr: `hookwatch: restore of ${backup} to ${path} stopped (${signal}): the store was left as it was, the partial copy removed\n` });
      expect(snapshot(path, dir)).toEqual({ ...before, names: [...new Set([...before.names, 'hookwatch.db.lock'])].sort() });
    }
  }, 60_000);

  it('reads the copy back before it replaces the store: a write that did not land whole leaves the store as it was, the copy removed', async (ctx) => {
    if (!canStrace()) return ctx.skip('no strace here');
    // A backup of whole 64 KiB chunks (the reads and writes of the copy), at least three of them.
    const { path: backup } = await scratchStore('unkept-backup', 40);
    const grow = new DatabaseSync(backup);
    const insert = grow.prepare('INSERT INTO padding VALUES (randomblob(4000))');
    for (let i = 0; i < 64 && statSync(backup).size % 65_536 !== 0; i++) {
      insert.run();
      grow.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    }
    grow.close();
    expect(statSync(backup).size % 65_536).toBe(0);
    expect(statSync(backup).size).toBeGreaterThanOrEqual(3 * 65_536);
    const { dir, path } = await scratchStore('unkept', 1);
    const before = snapshot(path, dir);
    const partial = `${realpathSync(dir)}/.hookwatch.db.$$.partial`;
    // Writes to the copy that report success but do not reach the file (strace skips them): the second one, then
    // every one. One thread for file writes, which strace counts per thread.
    const dropped = async (when: string): Promise<{ status: number; stdout: string; stderr: string }> => {
      const { status, stdout, stderr } = await startRestore(['--from', backup], { HOOKWATCH_DB: path, UV_THREADPOOL_SIZE: '1' }, undefined, `strace -D -f -qq -o /dev/null -P "${partial}" -e trace=write -e inject=write:retval=65536:when=${when}`).done;
      return { status, stdout, stderr };
    };
    const advice = `, so it is not the backup: what was written under ${dir} did not land whole (or ${backup} changed during the copy). The copy was removed, the store left as it was: check the disk, then restore again\n`;

    const skipped = await dropped('2');
    expect(skipped).toMatchObject({ status: 1, stdout: '' });
    expect(skipped.stderr).toMatch(new RegExp(`^hookwatch: the copy of ${backup} written beside the store fails PRAGMA quick_check: [^\\n]+${advice.replace(/[.()]/g, '\\$&')}$`));
    expect(snapshot(path, dir)).toEqual({ ...before, names: [...before.names, 'hookwatch.db.lock'].sort() });

    const empty = await dropped('1+');
    expect(empty).toEqual({ status: 1, stdout: '', stderr: `hookwatch: the copy of ${backup} written beside the store holds no hookwatch store (the backup is schema version ${MIGRATIONS.length})${advice}` });
    expect(snapshot(path, dir)).toEqual({ ...before, names: [...before.names, 'hookwatch.db.lock'].sort() });
    expect(storedEvents(path)).toBe(0);
  }, 60_000);

  it('names the store\'s file it cannot look at once it holds the lock, and what to do; the store left as it was, the copy removed', async (ctx) => {
    if (!canStrace()) return ctx.skip('no strace here');
    const { path: backup } = await scratchStore('unlooked-backup', 5);
    const { dir, path } = await scratchStore('unlooked', 1);
    const wal = `${realpathSync(dir)}/hookwatch.db-wal`;
    const lock = `${realpathSync(dir)}/hookwatch.db.lock`;
    // Which looks at the store's -wal (stat, links followed) come once the lock is held, in a restore that goes
    // through: the look for the copy's owner, then the one after the copy, before the store is moved aside.
    const trace = join(tmp.dir, 'unlooked.trace');
    const traced = await startRestore(['--from', backup], { HOOKWATCH_DB: path }, undefined, `strace -D -f -qq -o "${trace}" -P "${wal}" -P "${lock}" -e trace=statx,openat`).done;
    expect(traced).toMatchObject({ status: 0, stderr: '' });
    const calls = readFileSync(trace, 'utf8').split('\n').filter((l) => /\b(statx|openat)\(/.test(l));
    const locked = calls.findIndex((l) => l.includes(`openat(AT_FDCWD, "${lock}"`));
    const walLooks = calls.map((l, i) => ({ i, l })).filter(({ l }) => l.includes(`statx(AT_FDCWD, "${wal}"`));
    const afterLock = walLooks.flatMap(({ i, l }, n) => (i > locked && !l.includes('AT_SYMLINK_NOFOLLOW') ? [n + 1] : []));
    expect(locked).toBeGreaterThan(-1);
    expect(afterLock.length).toBeGreaterThanOrEqual(2);

    const { dir: dir2, path: path2 } = await scratchStore('unlooked-2', 1);
    const wal2 = `${realpathSync(dir2)}/hookwatch.db-wal`;
    const before = snapshot(path2, dir2);
    // Each of the first two refused (EACCES, as a folder this user may not search, or an NFS export squashing
    // root, refuses it), on a store like the one traced.
    for (const when of afterLock.slice(0, 2)) {
      const { status, stdout, stderr } = await startRestore(['--from', backup], { HOOKWATCH_DB: path2 }, undefined, `strace -D -f -qq -o /dev/null -P "${wal2}" -e trace=statx -e inject=statx:error=EACCES:when=${when}`).done;
      expect({ when, status, stdout, stderr }).toEqual({
        when, status: 1, stdout: '',
        stderr: `hookwatch: cannot restore ${backup} to ${path2}: cannot look at ${wal2}: permission denied: run restore as the service's user; the store was left as it was\n`,
      });
      expect(snapshot(path2, dir2)).toEqual({ ...before, names: [...before.names, 'hookwatch.db.lock'].sort() });
    }
  }, 60_000);

  it('removes the partial copy a killed restore left, whatever process now has its pid (in a container restore is pid 1 at every run)', async () => {
    const { path: backup } = await scratchStore('partial-backup', 5);
    const { dir, path } = await scratchStore('partial-left', 1);
    // Named after pids that run: pid 1, and this test's process.
    const left = [`.hookwatch.db.1.partial`, `.hookwatch.db.${process.pid}.partial`];
    for (const name of left) writeFileSync(join(dir, name), 'half a copy');
    const out = await hookwatchRestore(['--from', backup], { HOOKWATCH_DB: path });
    expect(out.stderr).toBe('');
    expect(out.status).toBe(0);
    const replaced = /the store it replaced is kept as (\S+)\n$/.exec(out.stdout)?.[1] ?? '';
    expect(out.stdout).toBe(`removed ${left.join(', ')} beside ${path}: left by restores that were killed\nrestored ${backup} to ${path}: ${(statSync(backup).size / 1024).toFixed(1)} KiB (schema version ${MIGRATIONS.length}); the store it replaced is kept as ${replaced}\n`);
    expect(readdirSync(dir).sort()).toEqual(['hookwatch.db', 'hookwatch.db.lock', replaced.slice(dir.length + 1)].sort());
    expect(readFileSync(path)).toEqual(readFileSync(backup));
  }, 60_000);

  for (const main of ['missing', 'empty'] as const) {
    it(`keeps the WAL of a store whose database file is ${main} as it was, alone, under a name SQLite pairs with no database`, async () => {
      const { path: backup } = await scratchStore(`wal-only-backup-${main}`, 5);
      const { dir, path } = await scratchStore(`wal-only-${main}`, 1);
      // A WAL holding commits, as a killed service leaves it, taken while the connection that wrote it is open.
      const conn = openSqlite(path);
      conn.exec('PRAGMA wal_autocheckpoint = 0');
      conn.prepare('INSERT INTO padding VALUES (randomblob(4000))').run();
      const wal = readFileSync(`${path}-wal`);
      const shm = readFileSync(`${path}-shm`);
      conn.close();
      expect(wal.length).toBeGreaterThan(4000);
      if (main === 'missing') rmSync(path);
      else writeFileSync(path, '');
      writeFileSync(`${path}-wal`, wal);
      writeFileSync(`${path}-shm`, shm);

      const out = await hookwatchRestore(['--from', backup], { HOOKWATCH_DB: path });
      expect(out.stderr).toBe('');
      expect(out.status).toBe(0);
      const kept = /, as (\S+) \(a name SQLite pairs with no database, so that no open deletes it\)\n$/.exec(out.stdout)?.[1] ?? '';
      expect(kept).toMatch(new RegExp(`^${path}\\.replaced-\\d{8}-\\d{6}\\.wal-only$`));
      expect(out.stdout).toBe(`restored ${backup} to ${path}: ${(statSync(backup).size / 1024).toFixed(1)} KiB (schema version ${MIGRATIONS.length}); the store it replaced had no database file beside its WAL (missing or empty): the empty database file is removed, the WAL kept as it was, alone, as ${kept} (a name SQLite pairs with no database, so that no open deletes it)\n`);
      // The empty database file (the lock makes one where there was none) gives its place to the copy; the -shm,
      // an index of the WAL, goes: nothing beside the WAL that SQLite could open with it, and delete it.
      expect(readdirSync(dir).sort()).toEqual(['hookwatch.db', 'hookwatch.db.lock', kept.slice(dir.length + 1)].sort());
      expect(readFileSync(kept)).toEqual(wal);
      expect(readFileSync(path)).toEqual(readFileSync(backup));
    }, 60_000);
  }

  it('gives the restored store the owner of the store it replaces, when root runs the restore', async (ctx) => {
    if (process.geteuid?.() !== 0) {
      requireTool(false, 'root, to give a file another owner', 'run the tests as root, as .ci/run does');
      return ctx.skip('not root');
    }
    const { path: backup } = await scratchStore('owned-backup', 5);
    const { dir, path } = await scratchStore('owned', 1);
    chownSync(dir, 1000, 1000);
    chownSync(path, 1000, 1000);
    const out = await hookwatchRestore(['--from', backup], { HOOKWATCH_DB: path });
    expect(out.stderr).toBe('');
    expect(out.status).toBe(0);
    const replaced = /the store it replaced is kept as (\S+)\n$/.exec(out.stdout)?.[1] ?? '';
    const restored = statSync(path);
    expect({ uid: restored.uid, gid: restored.gid, mode: restored.mode & 0o777 }).toEqual({ uid: 1000, gid: 1000, mode: 0o600 });
    expect(statSync(replaced)).toMatchObject({ uid: 1000, gid: 1000 });
    expect(readFileSync(path)).toEqual(readFileSync(backup));
  }, 60_000);

  it('gives the restored store and its lock file the owner of the store\'s folder when there was no store (a fresh volume, restored with sudo)', async (ctx) => {
    if (process.geteuid?.() !== 0) {
      requireTool(false, 'root, to give a file another owner', 'run the tests as root, as .ci/run does');
      return ctx.skip('not root');
    }
    const { path: backup } = await scratchStore('fresh-owned-backup', 5);
    const dir = join(tmp.dir, 'fresh-owned');
    mkdirSync(dir);
    chownSync(dir, 1000, 1000);
    const path = join(dir, 'hookwatch.db');
    const out = await hookwatchRestore(['--from', backup], { HOOKWATCH_DB: path });
    expect(out).toEqual({ status: 0, stderr: '', stdout: `restored ${backup} to ${path}: ${(statSync(backup).size / 1024).toFixed(1)} KiB (schema version ${MIGRATIONS.length}); there was no store to replace\n` });
    expect(readdirSync(dir).sort()).toEqual(['hookwatch.db', 'hookwatch.db.lock']);
    for (const file of [path, `${path}.lock`]) {
      const { uid, gid, mode } = statSync(file);
      expect({ file, uid, gid, mode: mode & 0o777 }).toEqual({ file, uid: 1000, gid: 1000, mode: 0o600 });
    }
    expect(readFileSync(path)).toEqual(readFileSync(backup));
  }, 60_000);

  it('keeps the restored store the restoring user\'s when the store\'s owner has no id where it runs (rootless podman, user-namespace-remapped Docker)', async (ctx) => {
    if (process.geteuid?.() !== 0) {
      requireTool(false, 'root, to give a file another owner', 'run the tests as root, as .ci/run does');
      return ctx.skip('not root');
    }
    if (!requireTool(spawnSync('unshare', ['-r', 'true']).status === 0, 'unshare -r (a user namespace)', 'allow user namespaces (in a container: a seccomp profile that permits unshare)')) return ctx.skip('no user namespace here');
    const { path: backup } = await scratchStore('unmapped-backup', 5);
    const { dir, path } = await scratchStore('unmapped', 1);
    // In a user namespace mapping root alone, uid 1000 is no one (it shows as 65534) and cannot be given a file.
    // The folder and store open to all, so that root there can still replace them.
    for (const file of [dir, path]) chownSync(file, 1000, 1000);
    execFileSync('chmod', ['0777', dir]);
    execFileSync('chmod', ['0666', path]);
    const { stdout, stderr, status } = await startRestore(['--from', backup], { HOOKWATCH_DB: path }, undefined, 'unshare -r').done;
    expect(stderr).toBe('');
    expect(status).toBe(0);
    const replaced = /the store it replaced is kept as (\S+)\n$/.exec(stdout)?.[1] ?? '';
    expect(stdout).toBe(`restored ${backup} to ${path}: ${(statSync(backup).size / 1024).toFixed(1)} KiB (schema version ${MIGRATIONS.length}); the store it replaced is kept as ${replaced}\n`);
    expect(statSync(path)).toMatchObject({ uid: 0, gid: 0 });
    expect(statSync(replaced)).toMatchObject({ uid: 1000, gid: 1000 });
    expect(readFileSync(path)).toEqual(readFileSync(backup));
  }, 60_000);

  /** The words that run restore as uid 1000 (setpriv), and whether they can here (under CI=true, a test fails when not). */
  const asUser = 'setpriv --reuid=1000 --regid=1000 --clear-groups';

  it('names a lock file left by a hookwatch run as root, which the restoring user cannot open, and what to do', async (ctx) => {
    if (process.geteuid?.() !== 0) {
      requireTool(false, 'root, to give a file another owner', 'run the tests as root, as .ci/run does');
      return ctx.skip('not root');
    }
    if (!canRunAsUser()) return ctx.skip('no setpriv here');
    chmodSync(tmp.dir, 0o755);
    const { dir: backups, path: backup } = await scratchStore('root-lock-backup', 5);
    const { dir, path } = await scratchStore('root-lock', 1);
    for (const file of [backups, backup, dir, path]) chownSync(file, 1000, 1000);
    // The lock file as a `sudo hookwatch serve` that has since stopped leaves it: root's, private.
    lockSqliteStore(path).release();
    const lock = `${path}.lock`;
    expect(statSync(lock)).toMatchObject({ uid: 0, gid: 0 });
    const before = snapshot(path, dir);
    const { status, stdout, stderr } = await startRestore(['--from', backup], { HOOKWATCH_DB: path }, undefined, asUser).done;
    expect({ status, stdout, stderr }).toEqual({
      status: 1, stdout: '',
      stderr: `hookwatch: cannot take the store's lock ${lock}: permission denied: it belongs to uid 0, not to this user (uid 1000), left by hookwatch run as that user (sudo hookwatch serve, say). Give it to this user (sudo chown 1000:1000 ${lock}), or run restore as root; the store was left as it was\n`,
    });
    expect(snapshot(path, dir)).toEqual(before);
    expect(statSync(lock)).toMatchObject({ uid: 0, gid: 0 });
  }, 60_000);

  it('names the store\'s file, not the backup, when it cannot look at the store', async (ctx) => {
    if (process.geteuid?.() !== 0) {
      requireTool(false, 'root, to give a file another owner', 'run the tests as root, as .ci/run does');
      return ctx.skip('not root');
    }
    if (!canRunAsUser()) return ctx.skip('no setpriv here');
    chmodSync(tmp.dir, 0o755);
    const { dir: backups, path: backup } = await scratchStore('unseen-store-backup', 5);
    for (const file of [backups, backup]) chownSync(file, 1000, 1000);
    // The store in a folder private to root, as the service's own user keeps it (0700).
    const { dir, path } = await scratchStore('unseen-store', 1);
    chmodSync(dir, 0o700);
    const before = snapshot(path, dir);
    const { status, stdout, stderr } = await startRestore(['--from', backup], { HOOKWATCH_DB: path }, undefined, asUser).done;
    expect({ status, stdout, stderr }).toEqual({
      status: 1, stdout: '',
      stderr: `hookwatch: cannot tell whether the backup ${backup} is a file of the store ${path}, so nothing was changed: cannot look at ${path}: permission denied; run restore as the service's user\n`,
    });
    expect(snapshot(path, dir)).toEqual(before);
  }, 60_000);
});
