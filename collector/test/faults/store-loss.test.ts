/**
 * The SQLite store losing its file underneath a running hookwatch (the real CLI in a child process):
 *  - the database files deleted, and the folder replaced by a plain file so nothing can be created there: every
 *    batch gets 503 + Retry-After (never a 200 for data it cannot keep), /readyz 503, exactly one log line
 *    naming the path and the cause; once the path is usable again the store writes the deleted database back
 *    from its still-open copy, and after a restart every acknowledged event is there, once;
 *  - a corrupted database: 503 (retryable), not 500, and /readyz 503.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readdirSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { HOOK_EVENT_SHARE, batchTemplate, stamp } from '../../../bench/lib/batch.ts';
import { agentFor, post } from '../../../bench/lib/harness.ts';
import { exited, startCli, type Cli } from '../cli.ts';
import { tempDir } from '../helpers.ts';
const RECORDS = 16;
const PER_BATCH = RECORDS * HOOK_EVENT_SHARE;

const children: ChildProcess[] = [];
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const f of cleanups.splice(0)) f();
});

async function stopCli(cli: Cli): Promise<void> {
  if (cli.child.exitCode !== null || cli.child.signalCode !== null) return;
  cli.child.kill('SIGTERM');
  await exited(cli.child);
}

const readyz = async (cli: Cli): Promise<number> => (await fetch(`${cli.http}/readyz`)).status;

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function sessionCounts(path: string): Map<string, number> {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    expect((db.prepare('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check).toBe('ok');
    return new Map((db.prepare('SELECT a.session_id AS s, COUNT(*) AS n FROM events JOIN attr_sets a ON a.id = events.attrs GROUP BY a.session_id').all() as { s: string; n: number }[]).map((r) => [r.s, Number(r.n)]));
  } finally {
    db.close();
  }
}

const lossLines = (cli: Cli): Record<string, unknown>[] => cli.logs.filter((l) => String(l['msg']).startsWith('store cannot keep data'));

describe('the store loses its file', () => {
  it('deleted files: 503 + Retry-After and /readyz 503 with one log line, then the database is written back and nothing acknowledged is lost', { timeout: 180_000 }, async () => {
    const { dir, cleanup } = tempDir('hookwatch-loss-');
    cleanups.push(cleanup);
    const dataDir = join(dir, 'data');
    const dbPath = join(dataDir, 'hookwatch.db');
    const template = batchTemplate(RECORDS, 'protobuf');
    const headers = { 'content-type': template.contentType };
    const cli = await startCli(dbPath, dir, children);
    // A client resends the same bytes when it retries.
    const bodies = new Map<string, Buffer>();
    const send = (session: string): Promise<Response> => {
      let body = bodies.get(session);
      if (!body) bodies.set(session, (body = stamp(template, session)));
      return fetch(`${cli.otlp}/v1/logs`, { method: 'POST', headers, body: new Uint8Array(body) });
    };
    const acked: string[] = [];

    const before = randomUUID();
    expect((await send(before)).status).toBe(200);
    acked.push(before);

    // The files go, and the folder becomes a plain file: nothing can be created at the path for now.
    rmSync(dataDir, { recursive: true, force: true });
    writeFileSync(dataDir, 'not a folder');

    const lost = randomUUID();
    const refused = await send(lost);
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    for (let i = 0; i < 5; i++) expect((await send(randomUUID())).status).toBe(503);
    expect(await readyz(cli)).toBe(503);
    const readyBody = await (await fetch(`${cli.http}/readyz`)).json() as { reason?: string };
    expect(readyBody.reason).toContain(dbPath);
    // One line for the whole outage, with the path and the cause.
    expect(lossLines(cli)).toHaveLength(1);
    expect(lossLines(cli)[0]).toMatchObject({ level: 'error', path: dbPath, cause: 'the database file was deleted' });

    // The path is usable again: the store writes the deleted database back and takes data.
    rmSync(dataDir, { force: true });
    mkdirSync(dataDir);
    await until('/readyz 200 after the path is usable again', async () => (await readyz(cli)) === 200);
    expect(cli.logs.some((l) => l['msg'] === 'store database is usable again' && l['path'] === dbPath)).toBe(true);
    // The client retries the refused batch (same records) and sends a new one.
    expect((await send(lost)).status).toBe(200);
    acked.push(lost);
    const after = randomUUID();
    expect((await send(after)).status).toBe(200);
    acked.push(after);
    expect(lossLines(cli)).toHaveLength(1);
    await stopCli(cli);

    const counts = sessionCounts(dbPath);
    for (const s of acked) expect(counts.get(s), `acknowledged batch ${s}`).toBe(PER_BATCH);
  });

  it('alert state written after the deleted database was written back is still there after a restart', { timeout: 180_000 }, async () => {
    const { dir, cleanup } = tempDir('hookwatch-loss-alerts-');
    cleanups.push(cleanup);
    const dbPath = join(dir, 'hookwatch.db');
    let cli = await startCli(dbPath, dir, children);
    const silence = async (hook: string): Promise<number> =>
      (await fetch(`${cli.http}/api/v1/silences`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ matchers: [{ name: 'hook_name', value: hook }], endsAt: new Date(Date.now() + 3_600_000).toISOString(), createdBy: 'test', comment: 'store loss' }),
      })).status;
    expect(await silence('Before:loss')).toBe(201);
    for (const suffix of ['', '-wal', '-shm']) rmSync(dbPath + suffix, { force: true });
    // The periodic check notices the loss and writes the database back from the store's open copy.
    await until('the database written back', async () => cli.logs.some((l) => l['msg'] === 'store database is usable again'));
    expect(await silence('After:loss')).toBe(201);
    await stopCli(cli);

    cli = await startCli(dbPath, dir, children);
    const listed = (await (await fetch(`${cli.http}/api/v1/silences`)).json()) as { silences: { matchers: { value: string }[] }[] };
    expect(listed.silences.map((s) => s.matchers[0]?.value).sort()).toEqual(['After:loss', 'Before:loss']);
    await stopCli(cli);
  });

  it('a data folder deleted with the database is written back readable by hookwatch\'s user only (0700, files 0600)', { timeout: 180_000 }, async () => {
    const { dir, cleanup } = tempDir('hookwatch-loss-folder-');
    cleanups.push(cleanup);
    const dataDir = join(dir, 'data');
    const dbPath = join(dataDir, 'hookwatch.db');
    const cli = await startCli(dbPath, dir, children);
    const template = batchTemplate(RECORDS, 'protobuf');
    const send = async (): Promise<number> => (await fetch(`${cli.otlp}/v1/logs`, { method: 'POST', headers: { 'content-type': template.contentType }, body: new Uint8Array(stamp(template, randomUUID())) })).status;
    expect(await send()).toBe(200);
    expect((statSync(dataDir).mode & 0o777).toString(8)).toBe('700');

    rmSync(dataDir, { recursive: true, force: true });
    // The store notices the loss, then creates the folder again and writes the database back into it.
    await until('the database written back', async () => cli.logs.some((l) => l['msg'] === 'store database is usable again'));
    expect(await send()).toBe(200);
    expect((statSync(dataDir).mode & 0o777).toString(8), 'mode of the data folder written back').toBe('700');
    for (const f of readdirSync(dataDir)) expect((statSync(join(dataDir, f)).mode & 0o777).toString(8), `mode of ${f}`).toBe('600');
    await stopCli(cli);
  });

  it('a database corrupted while running answers 503 (retryable), not 500, and /readyz 503', { timeout: 180_000 }, async () => {
    const { dir, cleanup } = tempDir('hookwatch-corrupt-');
    cleanups.push(cleanup);
    const dbPath = join(dir, 'hookwatch.db');
    const template = batchTemplate(RECORDS, 'protobuf');
    const headers = { 'content-type': template.contentType };
    // A database with data, closed cleanly.
    const first = await startCli(dbPath, dir, children);
    const agent = agentFor(1);
    for (let i = 0; i < 20; i++) expect((await post(agent, `${first.otlp}/v1/logs`, stamp(template, randomUUID()), headers)).status).toBe(200);
    await stopCli(first);
    expect(readdirSync(dir).filter((f) => f.startsWith('hookwatch.db-wal'))).toEqual([]);
    // Running again; then garbage over every page after the schema page: the tables' b-trees become unreadable
    // (the pages read at start, schema and migrations, stay in the connection's cache).
    const cli = await startCli(dbPath, dir, children);
    const size = statSync(dbPath).size;
    const fd = openSync(dbPath, 'r+');
    try {
      const page = 4096;
      writeSync(fd, Buffer.alloc(size - page, 0xa5), 0, size - page, page);
    } finally {
      closeSync(fd);
    }

    const res = await post(agent, `${cli.otlp}/v1/logs`, stamp(template, randomUUID()), headers);
    agent.destroy();
    expect(res.status, res.body.toString()).toBe(503);
    expect(await readyz(cli)).toBe(503);
    expect(lossLines(cli)).toHaveLength(1);
    expect(lossLines(cli)[0]).toMatchObject({ path: dbPath, cause: 'the database file is corrupt' });
  });
});
