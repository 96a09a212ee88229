/**
 * `hookwatch backup` as an operator runs it: hookwatch serves a SQLite store and keeps taking telemetry from the
 * real OpenTelemetry exporter while `hookwatch backup --to <file>` runs in another process. The copy holds every
 * event acknowledged before the backup started, passes `PRAGMA integrity_check`, and a hookwatch started on it (put
 * in place with `hookwatch restore`) serves the hooks, alerts and silences the original served, and notifies on-call
 * again only of what the copy holds undelivered, then the resolutions. Then the ways a backup fails: no database, a
 * target that exists or is a folder, a folder that cannot be written, a full disk (a file size limit, and a real
 * small tmpfs), a read-only file system, a file the service uses under any name (never replaced, even with --force),
 * a check of the copy that cannot run (each cause said once); and a backup stopped by Ctrl-C or SIGTERM, or killed
 * (the next backup removes what it left); and a damaged store, whose copy fails PRAGMA quick_check.
 */
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, chownSync, closeSync, existsSync, linkSync, mkdirSync, openSync, readFileSync, readdirSync, statSync, symlinkSync, utimesSync, watch, writeFileSync, writeSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { KIND_CODES } from '../src/store/sql.ts';
import { openSqlite } from '../src/store/sqlite/database.ts';
import { MIGRATIONS } from '../src/store/sqlite/index.ts';
import { startTestService, tempDir, type TestService } from './helpers.ts';
import { ALERTING, hookwatchBackup, hookwatchRestore, notificationsAcrossRestore, paddedStore, run, seedHistory, startBackup, Stream, views } from './support/backup.ts';
import { emitExecutions } from './support/service.ts';
import { mountTmpfs, unmountTmpfs } from './support/tmpfs.ts';
import { requireTool } from './required-tool.ts';
import { canRunAsUser } from './support/tools.ts';

let services: TestService[] = [];
let after: (() => Promise<void>)[] = [];
const tmp = tempDir('hookwatch-backup-');
afterAll(() => tmp.cleanup());
afterEach(async () => {
  for (const s of services) await s.close();
  services = [];
  for (const f of after) await f();
  after = [];
});

/**
 * A folder of its own holding an empty store with a `padding` table of `padRows` rows of 4,000 random bytes
 * (about a page each), where its root page is, and an empty folder for copies.
 */
async function scratchStore(name: string, padRows = 0): Promise<{ dir: string; path: string; copies: string; root: number; pageSize: number }> {
  const store = await paddedStore(join(tmp.dir, name), padRows);
  const copies = join(store.dir, 'copies');
  mkdirSync(copies);
  return { ...store, copies };
}

/** `hookwatch restore --from <backup>` into `dir`, where no store is yet, as an operator runs it. */
async function restoreInto(backup: string, dir: string): Promise<void> {
  const db = join(dir, 'hookwatch.db');
  const out = await hookwatchRestore(['--from', backup], { HOOKWATCH_DB: db });
  expect(out.stderr).toBe('');
  expect(out.status).toBe(0);
  expect(out.stdout).toMatch(new RegExp(`^restored ${backup} to ${db}: \\d+\\.\\d [KM]iB \\(schema version ${MIGRATIONS.length}\\); there was no store to replace\\n$`));
}

describe('hookwatch backup on SQLite', () => {
  it('copies the store while it ingests: every acknowledged event, intact, and a hookwatch on the copy serves the same views', async () => {
    const dir = join(tmp.dir, 'live');
    mkdirSync(dir);
    writeFileSync(join(dir, 'hookwatch.yaml'), ALERTING);
    const env = { HOOKWATCH_CONFIG: join(dir, 'hookwatch.yaml') };
    const now = Date.now();
    const range = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 3_600_000).toISOString()}`;
    const original = await startTestService(env, { dir });
    services.push(original);

    // A store with some history (several MiB, so the copy takes many steps), an alert and a silence.
    await seedHistory(original, now, 60);
    const seen = await views(original.httpUrl, range, ['Stop:live']);

    // Telemetry keeps arriving while the backup runs.
    const live = new Stream(original.otlpHttpUrl, 'Stop:live', now - 40 * 60_000);
    const streaming = live.send(100_000, 20);
    await expect.poll(() => live.acked, { timeout: 10_000 }).toBeGreaterThan(100);
    const ackedBefore = live.acked;
    const copy = join(tmp.dir, 'copies', 'hookwatch-backup.db');
    mkdirSync(join(tmp.dir, 'copies'));
    const backup = await hookwatchBackup(['--to', copy], { HOOKWATCH_DB: join(dir, 'hookwatch.db') });
    const ackedAfter = live.acked;
    live.stop();
    await streaming;
    await live.shutdown();
    expect(backup.stderr).toBe('');
    expect(backup.status).toBe(0);
    expect(backup.stdout).toMatch(new RegExp(`^backed up ${join(dir, 'hookwatch.db')} to ${copy}: \\d+\\.\\d MiB \\(\\d+ pages, schema version ${MIGRATIONS.length}\\) in \\d+\\.\\d+s\\n$`));
    // Ingest was not held up: batches were acknowledged while the copy was taken, none refused.
    expect(ackedAfter).toBeGreaterThan(ackedBefore);
    expect(live.failures).toBe(0);
    // Nothing but the copy beside it: the temporary file was renamed.
    expect(readdirSync(join(tmp.dir, 'copies'))).toEqual(['hookwatch-backup.db']);
    // Private, as the store is: it holds session and user ids and the store's hash key.
    expect(statSync(copy).mode & 0o777).toBe(0o600);

    const db = new DatabaseSync(copy, { readOnly: true });
    try {
      expect(db.prepare('PRAGMA integrity_check').all()).toEqual([{ integrity_check: 'ok' }]);
      // The stream's events are a prefix of it: every one acknowledged before the backup started is there.
      const { n } = db.prepare('SELECT COUNT(*) AS n FROM events WHERE time_ms >= ? AND time_ms < ?').get(now - 40 * 60_000, now - 30 * 60_000) as { n: number };
      expect(n).toBeGreaterThanOrEqual(ackedBefore);
      expect(n).toBeLessThanOrEqual(ackedAfter + 20);
      const prefix = db.prepare('SELECT COUNT(*) AS n FROM events WHERE time_ms >= ? AND time_ms < ?').get(now - 40 * 60_000, now - 40 * 60_000 + ackedBefore) as { n: number };
      expect(prefix.n).toBe(ackedBefore);
      // One commit's snapshot: every rollup holds exactly the raw events' executions, starts and durations per hook.
      const { complete, start } = KIND_CODES;
      const raw = db.prepare(`SELECT h.hook_id AS hook, SUM(e.kind = ${complete}) AS executions, SUM(e.kind = ${start}) AS starts, SUM(CASE WHEN e.kind = ${complete} THEN e.duration_ms ELSE 0 END) AS duration FROM events e JOIN hooks h ON h.ref = e.hook GROUP BY h.hook_id ORDER BY h.hook_id`).all();
      expect(raw.length).toBeGreaterThan(1);
      for (const rollup of ['rollup_1m', 'rollup_1h', 'rollup_1d']) {
        expect(db.prepare(`SELECT hook_id AS hook, SUM(executions) AS executions, SUM(starts) AS starts, SUM(duration_sum) AS duration FROM ${rollup} GROUP BY hook_id ORDER BY hook_id`).all(), rollup).toEqual(raw);
      }
    } finally {
      db.close();
    }
    await original.stop();
    services = [];

    // Restore: the copy in place of the database file of a hookwatch that starts on it.
    const restoredDir = join(tmp.dir, 'restored');
    mkdirSync(restoredDir);
    writeFileSync(join(restoredDir, 'hookwatch.yaml'), ALERTING);
    await restoreInto(copy, restoredDir);
    const restored = await startTestService({ HOOKWATCH_CONFIG: join(restoredDir, 'hookwatch.yaml') }, { dir: restoredDir });
    services.push(restored);
    expect(await views(restored.httpUrl, range, ['Stop:live'])).toEqual(seen);
  }, 120_000);

  it('a restore notifies again only what the copy holds undelivered (same webhook-id), then the resolutions', async () => {
    const copy = join(tmp.dir, 'notified-backup.db');
    /** A folder with the config file, and a service on it (on the store already there, if any). */
    const serveIn = async (name: string, yaml: string, store?: string): Promise<TestService> => {
      const dir = join(tmp.dir, name);
      mkdirSync(dir);
      writeFileSync(join(dir, 'hookwatch.yaml'), yaml);
      if (store !== undefined) await restoreInto(store, dir);
      const s = await startTestService({ HOOKWATCH_CONFIG: join(dir, 'hookwatch.yaml') }, { dir });
      services.push(s);
      return s;
    };
    let original: TestService | undefined;
    await notificationsAcrossRestore({
      serve: async (yaml) => (original = await serveIn('notified', yaml)),
      backup: async () => {
        const out = await hookwatchBackup(['--to', copy], { HOOKWATCH_DB: join(tmp.dir, 'notified', 'hookwatch.db') });
        expect(out.status).toBe(0);
      },
      stop: async () => {
        await original?.stop();
        services = services.filter((s) => s !== original);
      },
      restore: (yaml) => serveIn('notified-restored', yaml, copy),
    });
  }, 120_000);

  it('fails with the reason, and leaves nothing half-written: no database, a target that exists, a folder it cannot write, a full disk', async () => {
    const { dir, path } = await scratchStore('failures', 300);
    const env = { HOOKWATCH_DB: path };

    const missing = await hookwatchBackup(['--to', join(dir, 'copy.db')], { HOOKWATCH_DB: join(dir, 'nothing-here.db') });
    expect(missing).toMatchObject({ status: 1, stdout: '' });
    expect(missing.stderr).toBe(`hookwatch: no database at ${join(dir, 'nothing-here.db')}: give the path hookwatch serve uses (--db, HOOKWATCH_DB or db in the config file)\n`);
    expect(readdirSync(dir)).not.toContain('nothing-here.db');

    const usage = await hookwatchBackup([], env);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain('backup needs --to <file>');

    const existing = join(dir, 'existing.db');
    writeFileSync(existing, 'an older backup', { mode: 0o644 });
    const refused = await hookwatchBackup(['--to', existing], env);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toBe(`hookwatch: ${existing} exists: give another path, or --force to replace it\n`);
    expect(readFileSync(existing, 'utf8')).toBe('an older backup');
    const replaced = await hookwatchBackup(['--to', existing, '--force'], env);
    expect(replaced.status).toBe(0);
    expect(statSync(existing).mode & 0o777).toBe(0o600);
    const copy = new DatabaseSync(existing, { readOnly: true });
    try {
      expect(copy.prepare('SELECT COUNT(*) AS n FROM padding').get()).toEqual({ n: 300 });
    } finally {
      copy.close();
    }

    // A folder (as cp takes one): refused, as sqlite3's .backup refuses it, naming a file to give instead.
    const folder = join(dir, 'backups');
    mkdirSync(folder);
    for (const to of [folder, `${folder}/`]) {
      const intoFolder = await hookwatchBackup(['--to', to], env);
      expect(intoFolder, to).toEqual({ status: 1, stdout: '', stderr: `hookwatch: cannot write ${folder}: it is a folder: give the path of the file to write, such as ${join(folder, 'hookwatch-backup.db')}\n` });
    }
    expect(readdirSync(folder)).toEqual([]);

    const noFolder = await hookwatchBackup(['--to', join(dir, 'absent', 'copy.db')], env);
    expect(noFolder.status).toBe(1);
    expect(noFolder.stderr).toBe(`hookwatch: cannot write beside ${join(dir, 'absent', 'copy.db')}: its folder does not exist\n`);

    // A file size limit below the database's size: the writes fail as on a full disk (SQLITE_FULL).
    const full = join(dir, 'full');
    mkdirSync(full);
    const diskFull = await hookwatchBackup(['--to', join(full, 'copy.db')], env, "trap '' XFSZ; ulimit -f 400");
    expect(diskFull.status).toBe(1);
    expect(diskFull.stderr).toMatch(/^hookwatch: backup of .*hookwatch\.db to .*copy\.db failed: (the disk is full|I\/O error on the database file): /);
    expect(readdirSync(full)).toEqual([]);
  }, 60_000);

  it('on a small file system of its own: a full disk, then the same mounted read-only, each said, nothing left', async (ctx) => {
    const { path } = await scratchStore('tmpfs', 600);
    const mount = mountTmpfs(1, 'hookwatch-backup-mount-');
    if (mount === undefined) return ctx.skip('no tmpfs can be mounted here (not root)');
    after.push(async () => unmountTmpfs(mount));
    const to = join(mount, 'copy.db');
    // The store is about 2.4 MiB: SQLite's writes fail with ENOSPC part way.
    const full = await hookwatchBackup(['--to', to], { HOOKWATCH_DB: path });
    expect(full).toEqual({ status: 1, stdout: '', stderr: `hookwatch: backup of ${path} to ${to} failed: the disk is full: database or disk is full\n` });
    expect(readdirSync(mount)).toEqual([]);
    // A read-only mount (a Kubernetes pod's root file system): refused before anything is read.
    await run('mount', ['-o', 'remount,ro', mount]);
    const readOnly = await hookwatchBackup(['--to', to], { HOOKWATCH_DB: path });
    expect(readOnly).toEqual({ status: 1, stdout: '', stderr: `hookwatch: cannot write beside ${to}: the file system is read-only\n` });
    expect(readdirSync(mount)).toEqual([]);
  }, 60_000);

  it('names a path holding a line break or a bidi control with them written out, in its report and its errors', async () => {
    const { dir, path } = await scratchStore('hostile\u202E\nOK');
    const shown = dir.replace('\u202E\n', '\\u202e\\n');
    const copied = await hookwatchBackup(['--to', join(dir, 'copy.db')], { HOOKWATCH_DB: path });
    expect(copied.status, copied.stderr).toBe(0);
    expect(copied.stdout.startsWith(`backed up ${join(shown, 'hookwatch.db')} to ${join(shown, 'copy.db')}: `), copied.stdout).toBe(true);
    expect(copied.stdout.split('\n')).toHaveLength(2);
    const missing = await hookwatchBackup(['--to', join(dir, 'copy2.db')], { HOOKWATCH_DB: join(dir, 'nothing-here.db') });
    expect(missing.stderr).toBe(`hookwatch: no database at ${join(shown, 'nothing-here.db')}: give the path hookwatch serve uses (--db, HOOKWATCH_DB or db in the config file)\n`);
    expect(missing.status).toBe(1);
  });

  it('says the cause once when the check of the copy cannot run, and leaves no file', async () => {
    const { dir, path, copies } = await scratchStore('check-fails');
    // A preload (NODE_OPTIONS, as operators set it) that fails in a worker thread: the check's thread cannot start.
    const preload = join(dir, 'preload.mjs');
    writeFileSync(preload, "import { isMainThread } from 'node:worker_threads';\nif (!isMainThread) await import('./absent.mjs');\n");
    const to = join(copies, 'copy.db');
    const out = await hookwatchBackup(['--to', to], { HOOKWATCH_DB: path, NODE_OPTIONS: `--import=${preload}` });
    expect(out).toMatchObject({ status: 1, stdout: '' });
    expect(out.stderr).toBe(`hookwatch: backup of ${path} to ${to} failed: Cannot find module '${join(dir, 'absent.mjs')}' imported from ${preload}\n`);
    expect(readdirSync(copies)).toEqual([]);
  }, 60_000);

  it('never writes over a file the service uses, even with --force: the store and its WAL (through a link, a hard link, another letter case too), shared memory, lock, and the forwarding queue', async () => {
    const dir = join(tmp.dir, 'own-files');
    mkdirSync(dir);
    const db = join(dir, 'hookwatch.db');
    const queue = join(dir, 'forward-queue.db');
    // Forwarding on, to a downstream that takes everything: the queue's files are there too.
    const downstream = createServer((req, res) => req.resume().on('end', () => res.end()));
    downstream.listen(0, '127.0.0.1');
    await once(downstream, 'listening');
    after.push(() => new Promise((done) => downstream.close(() => done())));
    const env = { HOOKWATCH_DB: db, HOOKWATCH_FORWARD_QUEUE_PATH: queue, HOOKWATCH_FORWARD_ENDPOINT: `http://127.0.0.1:${(downstream.address() as AddressInfo).port}` };
    const serving = await startTestService(env, { dir });
    services.push(serving);
    await emitExecutions(serving.otlpHttpUrl, [{ hookEvent: 'Stop', hookName: 'Stop', stdoutChars: 100 }]);
    // The files SQLite and the locks keep while the service runs, all there.
    expect(readdirSync(dir)).toEqual(expect.arrayContaining(['hookwatch.db', 'hookwatch.db-wal', 'hookwatch.db-shm', 'hookwatch.db.lock', 'forward-queue.db', 'forward-queue.db-wal', 'forward-queue.db.lock']));
    symlinkSync(dir, join(tmp.dir, 'own-files-link'));
    // Second names of the store and its WAL, as a second mount of the folder or another letter case gives them:
    // the same file, whatever its path says.
    const storeLink = join(tmp.dir, 'own-files-store-link.db');
    const walLink = join(tmp.dir, 'own-files-wal-link.db');
    linkSync(db, storeLink);
    linkSync(`${db}-wal`, walLink);
    const caseOnly = '(which a file system that ignores case, as macOS\'s does by default, takes for the same file)';
    const refusals: [string, string][] = [
      [join(tmp.dir, 'own-files-link', 'hookwatch.db'), 'the database itself'],
      [storeLink, 'the database itself'],
      [`${db}-wal`, `the -wal file of the store ${db}`],
      [walLink, `the -wal file of the store ${db}`],
      // Not there, as the store's own -journal is not: on macOS it would be that file.
      [join(dir, 'HOOKWATCH.db-Journal'), `the -journal file of the store ${db} but for letter case ${caseOnly}`],
      [`${db}-shm`, `the -shm file of the store ${db}`],
      [`${db}.lock`, `the .lock file of the store ${db}`],
      [queue, `the forwarding queue (forward.queue.path) ${queue}`],
      [`${queue}-wal`, `the -wal file of the forwarding queue (forward.queue.path) ${queue}`],
    ];
    const outs = [];
    for (const [to] of refusals) outs.push(await hookwatchBackup(['--to', to, '--force'], env));
    expect(outs).toEqual(refusals.map(([to, what]) => ({ status: 1, stdout: '', stderr: `hookwatch: the target ${to} is ${what}, which hookwatch serve uses: give another path\n` })));
    // Another letter case of a file that is there, where the two names are two files: a copy like any other.
    const otherCase = join(dir, 'HOOKWATCH.db-WAL');
    const written = await hookwatchBackup(['--to', otherCase], env);
    expect(written.stderr).toBe('');
    expect(written.status).toBe(0);
    expect(statSync(otherCase).ino).not.toBe(statSync(`${db}-wal`).ino);
    // The store still reads whole: a backup beside it is taken and checked.
    const copy = join(dir, 'copy.db');
    const out = await hookwatchBackup(['--to', copy], env);
    expect(out.stderr).toBe('');
    expect(out.status).toBe(0);
  }, 60_000);

  it('refuses a target it cannot tell apart from the service\'s files, naming the file it could not look at', async (ctx) => {
    // Root looks at any file; root in a user namespace mapping root alone does not, in a folder of a user who is no
    // one there (as a user other than the service's, which cannot look into the queue's 0700 folder).
    if (process.geteuid?.() !== 0) {
      requireTool(false, 'root, to give a file another owner', 'run the tests as root, as .ci/run does');
      return ctx.skip('not root');
    }
    if (!requireTool(spawnSync('unshare', ['-r', 'true']).status === 0, 'unshare -r (a user namespace)', 'allow user namespaces (in a container: a seccomp profile that permits unshare)')) return ctx.skip('no user namespace here');
    const { dir, path } = await scratchStore('unseen-queue', 1);
    const queueDir = join(dir, 'queue');
    mkdirSync(queueDir, { mode: 0o700 });
    chownSync(queueDir, 1000, 1000);
    const queue = join(queueDir, 'forward-queue.db');
    const to = join(dir, 'copy.db');
    const out = await startBackup(['--to', to], { HOOKWATCH_DB: path, HOOKWATCH_FORWARD_QUEUE_PATH: queue }, undefined, 'unshare -r').done;
    expect(out).toEqual({ status: 1, signal: null, stdout: '', stderr: `hookwatch: cannot tell whether ${to} is a file hookwatch serve uses, so it is not written: cannot look at ${queue}: permission denied; run backup as the service's user\n` });
    expect(existsSync(to)).toBe(false);
  }, 60_000);

  it('names the store\'s file this user cannot read, its owner, and whom to run backup as', async (ctx) => {
    if (process.geteuid?.() !== 0) {
      requireTool(false, 'root, to give a file another owner', 'run the tests as root, as .ci/run does');
      return ctx.skip('not root');
    }
    if (!canRunAsUser()) return ctx.skip('no setpriv here');
    const { dir, path } = await scratchStore('other-owner', 1);
    // As `hookwatch serve` leaves its store: private to the user it runs as (root here, uid 1001 below).
    chmodSync(path, 0o600);
    chmodSync(tmp.dir, 0o755);
    chmodSync(dir, 0o777);
    const to = join(dir, 'copy.db');
    const asUser = 'setpriv --reuid=1000 --regid=1000 --clear-groups';
    const byRoot = await startBackup(['--to', to], { HOOKWATCH_DB: path }, undefined, asUser).done;
    expect(byRoot).toEqual({ status: 1, signal: null, stdout: '', stderr: `hookwatch: cannot open the store's file ${path}: permission denied: it belongs to uid 0, not to this user (uid 1000); run backup as root\n` });
    chownSync(path, 1001, 1001);
    const byService = await startBackup(['--to', to], { HOOKWATCH_DB: path }, undefined, asUser).done;
    expect(byService).toEqual({ status: 1, signal: null, stdout: '', stderr: `hookwatch: cannot open the store's file ${path}: permission denied: it belongs to uid 1001, not to this user (uid 1000); run backup as uid 1001 (the user hookwatch serve runs as) or as root\n` });
    expect(existsSync(to)).toBe(false);
    // The store's file readable to all, its shared memory still the service's alone: named when the first read opens it.
    chmodSync(path, 0o644);
    const shm = `${path}-shm`;
    writeFileSync(shm, Buffer.alloc(32_768));
    chownSync(shm, 1001, 1001);
    chmodSync(shm, 0o600);
    const byShm = await startBackup(['--to', to], { HOOKWATCH_DB: path }, undefined, asUser).done;
    expect(byShm).toEqual({ status: 1, signal: null, stdout: '', stderr: `hookwatch: cannot open the store's file ${shm}: permission denied: it belongs to uid 1001, not to this user (uid 1000); run backup as uid 1001 (the user hookwatch serve runs as) or as root\n` });
    expect(existsSync(to)).toBe(false);
    // Run as the store's user, the same backup is made.
    const byOwner = await startBackup(['--to', to], { HOOKWATCH_DB: path }, undefined, 'setpriv --reuid=1001 --regid=1001 --clear-groups').done;
    expect(byOwner.stderr).toBe('');
    expect(byOwner.status).toBe(0);
    expect(existsSync(to)).toBe(true);
  }, 60_000);

  it('stops on SIGINT, SIGTERM or SIGHUP (its terminal closed), removes its temporary file and ends killed by the same signal', async () => {
    // Large enough (64 MiB, hundreds of steps) that the copy is still under way when the signal arrives.
    const { path, copies } = await scratchStore('stopped', 16_000);
    const to = join(copies, 'copy.db');
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      const watcher = watch(copies);
      const created = once(watcher, 'change');
      const { child, done } = startBackup(['--to', to], { HOOKWATCH_DB: path });
      // The temporary file appears as the copy starts.
      const [, name] = await created as [string, string];
      watcher.close();
      expect(name).toBe(`.copy.db.${child.pid}.partial`);
      child.kill(signal);
      // Killed by it, not exiting 130 or 143: a shell loop of backups stops on Ctrl-C too.
      expect(await done).toEqual({ status: -1, signal, stdout: '', stderr: `hookwatch: backup of ${path} to ${to} stopped (${signal}): the partial copy was removed\n` });
      expect(readdirSync(copies)).toEqual([]);
    }
  }, 60_000);

  it('stops on a signal during the sync and check after the copy, promptly, leaving no file, killed by the signal', async () => {
    const { path, copies } = await scratchStore('stopped-late');
    // A million indexed rows (about 60 MiB of b-tree pages): the check that reads the copy back takes a while.
    const db = openSqlite(path);
    db.exec('CREATE TABLE filler (k TEXT NOT NULL); WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 1000000) INSERT INTO filler SELECT hex(randomblob(12)) FROM n; CREATE INDEX filler_k ON filler (k)');
    db.close();
    const to = join(copies, 'copy.db');
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      const watcher = watch(copies);
      const { child, done } = startBackup(['--to', to], { HOOKWATCH_DB: path });
      const journal = join(copies, `.copy.db.${child.pid}.partial-journal`);
      // The copy's journal goes when its last step commits: from then on the copy is synced and checked.
      let journalSeen = false;
      await new Promise<void>((resolve) => {
        watcher.on('change', (_event, name) => {
          if (name !== `.copy.db.${child.pid}.partial-journal`) return;
          if (existsSync(journal)) journalSeen = true;
          else if (journalSeen) resolve();
        });
      });
      watcher.close();
      expect(readdirSync(copies)).toEqual([`.copy.db.${child.pid}.partial`]);
      child.kill(signal);
      expect(await done).toEqual({ status: -1, signal, stdout: '', stderr: `hookwatch: backup of ${path} to ${to} stopped (${signal}): the partial copy was removed\n` });
      expect(readdirSync(copies)).toEqual([]);
    }
  }, 60_000);

  it('removes the temporary files killed backups into the same folder left, to any target, and nothing else', async () => {
    const { path, copies } = await scratchStore('stale');
    // A process that ran and is gone: its pid no longer runs.
    const gone = spawnSync('true').pid;
    const running = process.pid;
    // A killed backup to yesterday's file is found by today's, to a file of another name, once nothing has written
    // it for an hour: a copy to another name just written may be a backup's from another pid namespace.
    const left = [`.copy.db.${gone}.partial`, `.copy.db.${gone}.partial-journal`, `.other.db.${gone}.partial`];
    const kept = [
      `.copy.db.${running}.partial`, `.other.db.${running}.partial`, `.copy.db.${gone}.partial.bak`, `copy.db.${gone}.partial`,
      `.copy.db.x${gone}.partial`, `.copy.db.0${gone}.partial`, `.${gone}.partial`, `.fresh.db.${gone}.partial`,
    ];
    for (const name of [...left, ...kept]) writeFileSync(join(copies, name), 'half a copy');
    const anHourAgo = new Date(Date.now() - 3_660_000);
    for (const name of [`.other.db.${gone}.partial`, `.other.db.${running}.partial`]) utimesSync(join(copies, name), anHourAgo, anHourAgo);
    mkdirSync(join(copies, `.copy.db.${gone}.partial-journal.d`));
    const to = join(copies, 'copy.db');
    const out = await hookwatchBackup(['--to', to], { HOOKWATCH_DB: path });
    expect(out.stderr).toBe('');
    expect(out.status).toBe(0);
    expect(out.stdout.split('\n')[0]).toBe(`removed ${left.join(', ')} beside ${to}: left by backups that were killed`);
    expect(readdirSync(copies).sort()).toEqual(['copy.db', ...kept, `.copy.db.${gone}.partial-journal.d`].sort());
  }, 60_000);

  it('backs up and restores over a configuration error in settings they do not read, saying they ignored it', async () => {
    const { dir, path, copies } = await scratchStore('unrelated-config', 1);
    // An alert rule serve would refuse, and a basic auth mode without its user: nothing a copy of the store uses.
    const config = join(dir, 'hookwatch.yaml');
    writeFileSync(config, `db: ${path}\nalerting:\n  rules:\n    - kind: persisted\n      name: p\n      threshold: 3\n`);
    const to = join(copies, 'copy.db');
    // A flag's invalid value of another setting too, as --help says: a warning, not a stop.
    const backup = await hookwatchBackup(['--config', config, '--to', to, '--log-level', 'bogus'], { HOOKWATCH_HTTP_AUTH_MODE: 'basic' });
    expect(backup.status, backup.stderr).toBe(0);
    expect(existsSync(to)).toBe(true);
    expect(backup.stderr).toContain('alerting.rules[0].threshold');
    expect(backup.stderr).toContain('http.auth.username');
    expect(backup.stderr).toContain('hookwatch: warning: flag --log-level: invalid value "bogus" for log.level');
    expect(backup.stderr.split('\n').filter((l) => l !== '').every((l) => l.startsWith('hookwatch: warning: ') && l.includes('backup reads only db and forward.queue.path'))).toBe(true);
    const restore = await hookwatchRestore(['--config', config, '--from', to, '--log-level', 'bogus'], { HOOKWATCH_HTTP_AUTH_MODE: 'basic' });
    expect(restore.status, restore.stderr).toBe(0);
    expect(restore.stderr).toContain('alerting.rules[0].threshold');
    expect(restore.stderr).toContain('hookwatch: warning: flag --log-level: invalid value "bogus" for log.level');
    // A db setting that cannot be read still stops it.
    const bad = await hookwatchBackup(['--config', config, '--to', to, '--force'], { HOOKWATCH_DB: '' });
    expect(bad.status).toBe(2);
  }, 60_000);

  it('refuses a copy that fails PRAGMA quick_check: a damaged store gives no backup', async () => {
    const { path, copies, root, pageSize: size } = await scratchStore('damaged', 300);
    // The table's root page overwritten: the migrations table still reads, the padding table no longer does.
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.alloc(size, 0x5a), 0, size, (root - 1) * size);
    closeSync(fd);
    const out = await hookwatchBackup(['--to', join(copies, 'copy.db')], { HOOKWATCH_DB: path });
    expect(out.status).toBe(1);
    expect(out.stderr).toMatch(new RegExp(`^hookwatch: the copy of ${path} fails PRAGMA quick_check, so the store itself is damaged \\(or the disk under ${join(copies, 'copy.db')}\\): .+\\. Check the store with sqlite3 ${path} 'PRAGMA integrity_check'\\n$`));
    expect(readdirSync(copies)).toEqual([]);
  }, 60_000);
});
