/**
 * `hookwatch serve` run as the service's user (uid 1000, through setpriv) on a store whose files an earlier `sudo
 * hookwatch serve` left to root: the lock file, which hookwatch makes (a stopped service leaves it, and it stays
 * root's once the store is given to the service's user), and the store, its -wal and -shm when root made the store
 * and was killed. Serve exits 1 with one line naming the file, its owner and the chown that gives it back, with the
 * store's other files root owns; once that is run, it serves the store.
 */
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { getJson, tempDir } from './helpers.ts';
import { requireTool } from './required-tool.ts';
import { emitExecutions } from './support/service.ts';
import { startReplica, type Replica } from './support/serve-process.ts';
import { canRunAsUser } from './support/tools.ts';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));

const tmp = tempDir('hookwatch-store-owner-');
afterAll(() => tmp.cleanup());
let replicas: Replica[] = [];
afterEach(async () => {
  for (const r of replicas) await r.stop();
  replicas = [];
});

/** The words that run serve as uid 1000 (setpriv; whether they can here: canRunAsUser, under CI=true a test fails when not). */
const asUser = ['setpriv', '--reuid=1000', '--regid=1000', '--clear-groups'];

/** `hookwatch serve` on `db` as uid 1000, run to its end (one that starts is killed after a minute). */
function serveAsUser(db: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(asUser[0] as string, [...asUser.slice(1), process.execPath, MAIN, 'serve'], {
    env: { PATH: process.env['PATH'] ?? '', HOOKWATCH_DB: db, HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0', HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0', HOOKWATCH_HTTP_ADDR: '127.0.0.1:0' },
    timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** A replica on `db`, as root (`sudo hookwatch serve`) or as uid 1000, stopped after the test. */
async function serve(db: string, as: 'root' | 'user'): Promise<Replica> {
  const r = await startReplica({ db, cwd: tmp.dir, ...(as === 'user' ? { wrap: asUser } : {}) });
  replicas.push(r);
  return r;
}

/** Executions of `hookName` the API counts over the last and next hour. */
async function executions(httpUrl: string, hookName: string): Promise<number | undefined> {
  const now = Date.now();
  const range = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 3_600_000).toISOString()}`;
  const { body } = await getJson<{ hooks: { hookName: string; executions: number }[] }>(httpUrl, `/api/v1/hooks?${range}`);
  return body.hooks.find((h) => h.hookName === hookName)?.executions;
}

/** A folder of uid 1000's (the service's user), under a path it may reach. */
function serviceFolder(name: string): string {
  chmodSync(tmp.dir, 0o755);
  const dir = join(tmp.dir, name);
  mkdirSync(dir);
  chownSync(dir, 1000, 1000);
  return dir;
}

describe('hookwatch serve on a store whose files another user owns', () => {
  it('names a lock file left by a hookwatch run as root, and what to do; serves once it is given back', async (ctx) => {
    if (process.geteuid?.() !== 0) {
      requireTool(false, 'root, to give a file another owner', 'run the tests as root, as .ci/run does');
      return ctx.skip('not root');
    }
    if (!canRunAsUser()) return ctx.skip('no setpriv here');
    const db = join(serviceFolder('lock'), 'hookwatch.db');
    const lock = `${db}.lock`;
    // The store first served with sudo, stopped, then given to the service's user: not the lock file hookwatch made.
    const root = await serve(db, 'root');
    expect((await emitExecutions(root.otlpHttpUrl, [1, 2, 3].map(() => ({ hookEvent: 'Stop', hookName: 'kept', stdoutChars: 10 })))).codes).toEqual([0]);
    await root.stop();
    expect(['-wal', '-shm', '.lock-journal'].filter((suffix) => existsSync(db + suffix))).toEqual([]);
    chownSync(db, 1000, 1000);
    expect(statSync(db)).toMatchObject({ uid: 1000, gid: 1000 });
    expect(statSync(lock)).toMatchObject({ uid: 0, gid: 0 });

    expect(await serveAsUser(db)).toEqual({
      status: 1, stdout: '',
      stderr: `hookwatch: db ${db} (HOOKWATCH_DB, --db): cannot take the store's lock ${lock}: permission denied: it belongs to uid 0, not to this user (uid 1000), left by hookwatch run as that user (sudo hookwatch serve, say). Give it to this user (sudo chown 1000:1000 ${lock})\n`,
    });

    // What the line says to do.
    chownSync(lock, 1000, 1000);
    const again = await serve(db, 'user');
    expect(await executions(again.httpUrl, 'kept')).toBe(3);
  }, 120_000);

  it('names the store, then its -wal and -shm, left to root by a killed sudo hookwatch serve that made the store', async (ctx) => {
    if (process.geteuid?.() !== 0) {
      requireTool(false, 'root, to give a file another owner', 'run the tests as root, as .ci/run does');
      return ctx.skip('not root');
    }
    if (!canRunAsUser()) return ctx.skip('no setpriv here');
    const db = join(serviceFolder('wal'), 'hookwatch.db');
    const lock = `${db}.lock`;
    // Killed: what it committed is in its -wal, which stays beside the store, root's, as the -shm does.
    const root = await serve(db, 'root');
    expect((await emitExecutions(root.otlpHttpUrl, [1, 2, 3].map(() => ({ hookEvent: 'Stop', hookName: 'in-wal', stdoutChars: 10 })))).codes).toEqual([0]);
    root.child.kill('SIGKILL');
    await root.exited;
    expect(statSync(`${db}-wal`).size).toBeGreaterThan(0);
    // The lock's own journal, when the kill came while it was written.
    const lockJournal = existsSync(`${lock}-journal`) ? [`${lock}-journal`] : [];
    const rootFiles = [db, lock, ...lockJournal, `${db}-wal`, `${db}-shm`];
    for (const file of rootFiles) expect({ file, ...statSync(file) }).toMatchObject({ file, uid: 0, gid: 0 });

    expect(await serveAsUser(db)).toEqual({
      status: 1, stdout: '',
      stderr: `hookwatch: db ${db} (HOOKWATCH_DB, --db): cannot open the store's file ${db}: permission denied: it belongs to uid 0, not to this user (uid 1000), left by hookwatch run as that user (sudo hookwatch serve, say). Give it to this user, with the store's other files uid 0 owns (sudo chown 1000:1000 ${rootFiles.join(' ')})\n`,
    });

    // The files the operator knows of given back, not the -wal and -shm: SQLite says only "unable to open database file".
    for (const file of [db, lock, ...lockJournal]) chownSync(file, 1000, 1000);
    expect(await serveAsUser(db)).toEqual({
      status: 1, stdout: '',
      stderr: `hookwatch: db ${db}: cannot open the store's file ${db}-wal: permission denied: it belongs to uid 0, not to this user (uid 1000), left by hookwatch run as that user (sudo hookwatch serve, say). Give it to this user, with the store's other files uid 0 owns (sudo chown 1000:1000 ${db}-wal ${db}-shm)\n`,
    });

    // What the line says to do: the store served with what its -wal held.
    for (const file of [`${db}-wal`, `${db}-shm`]) chownSync(file, 1000, 1000);
    const service = await serve(db, 'user');
    expect(await executions(service.httpUrl, 'in-wal')).toBe(3);
  }, 120_000);
});
