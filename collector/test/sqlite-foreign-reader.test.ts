/**
 * `hookwatch serve` on SQLite while another process opens the store and closes it: an operator's `sqlite3
 * hookwatch.db .tables`, a backup tool, a script reading a count. SQLite lets the last connection to close fold
 * the -wal into the database and delete it, and tells "last" by the locks the others hold: hookwatch's
 * connections must keep theirs for as long as they are open, or its next commits go to a deleted -wal.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { getJson, tempDir } from './helpers.ts';
import { emitExecutions } from './support/service.ts';
import { startReplica, type Replica } from './support/serve-process.ts';
import { haveSqliteShell } from './support/tools.ts';

const tmp = tempDir('hookwatch-foreign-reader-');
afterAll(() => tmp.cleanup());
let replicas: Replica[] = [];
afterEach(async () => {
  for (const r of replicas) await r.stop();
  replicas = [];
});

/** An operator's look at the live store: the sqlite3 shell opens it, counts its tables and closes it. */
function readElsewhere(db: string): number {
  const r = spawnSync('sqlite3', [db, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"], { encoding: 'utf8', timeout: 30_000 });
  expect(r.stderr).toBe('');
  return Number(r.stdout.trim());
}

/** The byte ranges process `pid` holds POSIX locks on in `file` (/proc/locks), as `start-end`. */
function locksOn(pid: number, file: string): string[] {
  const ino = statSync(file).ino;
  return readFileSync('/proc/locks', 'utf8').split('\n').map((line) => line.trim().split(/\s+/))
    .filter((f) => f[1] === 'POSIX' && f[4] === String(pid) && f[5]?.endsWith(`:${ino}`))
    .map((f) => `${f[6]}-${f[7]}`);
}

async function executions(httpUrl: string, hookName: string): Promise<number | undefined> {
  const now = Date.now();
  const range = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 3_600_000).toISOString()}`;
  const { status, body } = await getJson<{ hooks: { hookName: string; executions: number }[] }>(httpUrl, `/api/v1/hooks?${range}`);
  expect(status).toBe(200);
  return body.hooks.find((h) => h.hookName === hookName)?.executions;
}

describe('hookwatch serve on SQLite, the store opened and closed by another process', () => {
  it.runIf(haveSqliteShell())('keeps its -wal, commits what it acknowledges after, and has it all after a restart', async () => {
    const db = join(tmp.dir, 'hookwatch.db');
    const first = await startReplica({ db, cwd: tmp.dir });
    replicas.push(first);
    const send = async (r: Replica, n: number): Promise<number[]> =>
      (await emitExecutions(r.otlpHttpUrl, Array.from({ length: n }, () => ({ hookEvent: 'Stop', hookName: 'kept', stdoutChars: 10 })))).codes;
    expect(await send(first, 3)).toEqual([0]);
    expect(existsSync(`${db}-wal`)).toBe(true);
    // Its connections hold their shared lock on the database file, which tells another connection it is not the last.
    expect(locksOn(first.pid, db)).not.toEqual([]);

    expect(readElsewhere(db)).toBeGreaterThan(10);
    // The other process was not the last connection: the -wal and -shm stay, with hookwatch's connections on them.
    expect(['-wal', '-shm'].filter((suffix) => !existsSync(db + suffix))).toEqual([]);
    expect(await send(first, 2)).toEqual([0]);
    expect(await executions(first.httpUrl, 'kept')).toBe(5);

    // What was acknowledged is in the database file and its -wal, not in a deleted file: all of it after a restart.
    await first.stop();
    replicas = [];
    const reopened = new DatabaseSync(db, { readOnly: true });
    try {
      expect(reopened.prepare('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
    } finally {
      reopened.close();
    }
    const second = await startReplica({ db, cwd: tmp.dir });
    replicas.push(second);
    expect(await executions(second.httpUrl, 'kept')).toBe(5);
  }, 90_000);
});
