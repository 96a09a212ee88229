/**
 * The SQLite store's reads on worker threads: a read that began before a commit never fills the closed-segment
 * cache with what the commit changed, the readers follow the store when it writes a lost file back, a reader's
 * file fault is classified like any other, and closing the store ends the workers (an idle store never keeps
 * the process alive, a query in flight does until it is answered).
 */
import { execFileSync } from 'node:child_process';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { getHeapStatistics } from 'node:v8';
import type { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import type { HookEvent } from '../../hooks/model.ts';
import { tempDir } from '../../../test/helpers.ts';
import { historyBatches, loadHistory } from '../../../test/support/history.ts';
import { StoreUnavailableError } from '../store.ts';
import { SqliteStore } from './index.ts';
import { SqliteReaders } from './reader.ts';

const tmp = tempDir('hookwatch-reader-');
afterAll(() => tmp.cleanup());

const DAY = 86_400_000;
const MINUTE = 60_000;
const MIB = 1024 * 1024;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const executions = (m: Map<string, { executions: number }>): number => [...m.values()].reduce((n, c) => n + c.executions, 0);

/** `count` executions of `team` at `timeMs`, new each call. */
let late = 0;
function lateEvents(timeMs: number, count = 1, team = 'team-1'): HookEvent[] {
  const [batch] = historyBatches({ events: count, fromMs: timeMs, toMs: timeMs + 1, teams: 1, users: 1, seed: 1000 + ++late }, count);
  return (batch ?? []).map((e) => ({ ...e, extra: { team } }));
}

/** Filters that match every event of the race test's history, each read from the rollup per attribute set. */
const RACE_FILTERS: Record<string, string>[] = [
  { 'terminal.type': 'vscode' },
  { 'hookwatch.source': 'otlp' },
  { team: 'team-0', 'terminal.type': 'vscode' },
  { team: 'team-0', 'hookwatch.source': 'otlp' },
  { 'terminal.type': 'vscode', 'hookwatch.source': 'otlp' },
  { team: 'team-0', 'terminal.type': 'vscode', 'hookwatch.source': 'otlp' },
  { 'service.name': 'claude-code', 'terminal.type': 'vscode' },
  { 'service.name': 'claude-code', 'hookwatch.source': 'otlp', team: 'team-0' },
];

describe('SQLite reads on worker threads', () => {
  it('a read that began before a commit does not keep pre-commit rows once the commit has dropped them', { timeout: 60_000 }, async () => {
    const store = new SqliteStore({ path: join(tmp.dir, 'race.db'), synchronous: 'normal', dimensions: ['team'], readers: 1 });
    try {
      const now = Date.now();
      // One event per session, one team: as many attribute sets as events, all matching the filter below, so the
      // hourly rollup per attribute set that answers it holds a row per event and its 29-day read is slow enough
      // to race.
      await loadHistory(store, { events: 25_000, fromMs: now - 30 * DAY, toMs: now - DAY, sessionEvents: 1, teams: 1 });
      let raced = 0;
      for (let attempt = 0; attempt < 8 && raced < 2; attempt++) {
        // A filter not asked before (so no kept segment answers it), naming a dimension that is not rolled up, so
        // its 29-day segment is read from the rollup per attribute set (slowly) while the late event lands in it.
        // Every one matches every event.
        const filters = RACE_FILTERS[attempt % RACE_FILTERS.length] ?? {};
        const range = { fromMs: now - 30 * DAY, toMs: now, filters };
        // The same events counted through other segments (the history starts after now - 30 d).
        const count = async (): Promise<number> => executions(await store.hookCounters({ fromMs: now - 31 * DAY, toMs: now, filters }));
        // Timed, to land the commit inside the next read: a read of the same kind and length (its first, nothing kept).
        const started = performance.now();
        const expected = (await count()) + 1;
        const readMs = performance.now() - started;
        let answered = false;
        const first = store.hookCounters(range).then((r) => ((answered = true), r));
        // A quarter of the way into it: begun on its worker even on a loaded machine, far from done.
        await sleep(Math.max(5, readMs / 4));
        // Late, into the range's long segment (whole days from the rollup per attribute set), so the commit lands
        // while that read runs.
        await store.ingest(lateEvents(Math.ceil((range.fromMs + 10 * DAY) / MINUTE) * MINUTE + attempt * 1000, 1, 'team-0'));
        // Still in flight when the commit resolved, and answered what was there before it.
        const inFlight = !answered;
        if (executions(await first) === expected - 1 && inFlight) raced++;
        // Whatever the first read saw, the next answers have the late event (kept segments must not predate it).
        expect(await count()).toBe(expected);
        expect(executions(await store.hookCounters(range))).toBe(expected);
        expect(executions(await store.hookCounters(range))).toBe(expected);
      }
      // The race above really happened (a read answered from before the commit), so the check meant something.
      expect(raced).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });

  it('after an ingest resolves, a query sees its events (read-your-writes across threads)', async () => {
    const store = new SqliteStore({ path: join(tmp.dir, 'ryw.db'), dimensions: ['team'] });
    try {
      const now = Date.now();
      const range = { fromMs: now - DAY, toMs: now + 60_000 };
      for (let i = 1; i <= 5; i++) {
        await store.ingest(lateEvents(now - i * 60_000, 3));
        expect(executions(await store.hookCounters(range))).toBe(3 * i);
        expect(executions(await store.hookCounters({ ...range, filters: { team: 'team-1' } }))).toBe(3 * i);
      }
    } finally {
      await store.close();
    }
  });

  it('when the store writes its deleted file back, the readers read the new file', async () => {
    const path = join(tmp.dir, 'lost.db');
    const store = new SqliteStore({ path, checkIntervalMs: 60_000 });
    try {
      const now = Date.now();
      const range = { fromMs: now - DAY, toMs: now + 60_000 };
      await store.ingest(lateEvents(now - 120_000, 2));
      // The readers hold the file open now.
      expect(executions(await store.hookCounters(range))).toBe(2);
      for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
      // The next batch notices the loss (refused, 503); the one after writes the file back and commits into it.
      await expect(store.ingest(lateEvents(now - 60_000, 1))).rejects.toBeInstanceOf(StoreUnavailableError);
      let recovered = false;
      for (let i = 0; i < 30 && !recovered; i++) {
        try {
          await store.ingest(lateEvents(now - 30_000, 4));
          recovered = true;
        } catch (err) {
          expect(err).toBeInstanceOf(StoreUnavailableError);
          await sleep(200);
        }
      }
      expect(recovered).toBe(true);
      // Only the file written back has the last batch: readers still on the deleted file would answer 2 or 3.
      const after = executions(await store.hookCounters(range));
      expect(after).toBeGreaterThanOrEqual(6);
      expect(after).toBe(executions(await store.hookCounters({ ...range, filters: {} })));
    } finally {
      await store.close();
    }
  });

  it('a reader that cannot open the file is a file fault: 503 (StoreUnavailableError) naming the path, the store failed until it recovers', async () => {
    const dir = join(tmp.dir, 'gone');
    const path = join(dir, 'h.db');
    const store = new SqliteStore({ path, checkIntervalMs: 60_000 });
    try {
      const now = Date.now();
      await store.ingest(lateEvents(now - 60_000, 2));
      // No query yet, so no reader has opened the file; now it is gone.
      rmSync(dir, { recursive: true, force: true });
      const err = await store.hookCounters({ fromMs: now - DAY, toMs: now }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect(String((err as Error).message)).toContain(path);
      expect(String((err as Error).message)).toMatch(/cannot be opened|deleted/);
      // Failed: not ready until the file is back. Recovery writes it back from the writer's open copy, and the
      // readers then read it, with everything committed before the loss.
      let ready = false;
      for (let i = 0; i < 20 && !ready; i++) ready = await store.ping().then(() => true, async () => (await sleep(300), false));
      expect(ready).toBe(true);
      expect(executions(await store.hookCounters({ fromMs: now - DAY, toMs: now + 60_000 }))).toBe(2);
    } finally {
      await store.close();
    }
  });

  it('a read session ends its transaction: a checkpoint then completes, and a query after the end is refused', async () => {
    const path = join(tmp.dir, 'session.db');
    const store = new SqliteStore({ path, dimensions: ['team'], readers: 1 });
    const readers = new SqliteReaders(path, 1);
    try {
      const now = Date.now();
      await store.ingest(lateEvents(now - MINUTE));
      const session = readers.session();
      await session.begin();
      expect(await session.all('SELECT count(*) AS n FROM events', [])).toEqual([{ n: 1 }]);
      // While the session reads, its snapshot holds the WAL: a full checkpoint cannot finish.
      await store.ingest(lateEvents(now - MINUTE));
      const writer = new DatabaseSync(path);
      try {
        const busy = (): number => Number((writer.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as { busy: number }).busy);
        expect(busy()).toBe(1);
        session.end();
        await expect(session.all('SELECT count(*) AS n FROM events', [])).rejects.toBeInstanceOf(StoreUnavailableError);
        // The end reaches the worker after the refused query would have: the checkpoint completes once it has.
        await readers.all('SELECT 1', []);
        expect(busy()).toBe(0);
      } finally {
        writer.close();
      }
    } finally {
      await readers.close();
      await store.close();
    }
  });

  it('a query whose rows outgrow the worker\'s heap fails alone (503, naming store.readerMaxOldSpace); the next query gets a new worker', { timeout: 60_000 }, async () => {
    const path = join(tmp.dir, 'heap.db');
    const store = new SqliteStore({ path });
    // A worker of 16 MiB of old space; the rows below are some 200 MiB of strings.
    const readers = new SqliteReaders(path, 1, 16 * MIB);
    try {
      const big = 'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000) SELECT i, printf(\'%.*c\', 1000, \'x\') AS pad FROM n';
      const failed = await readers.all(big, []).then(() => 'answered', (e: unknown) => e);
      expect(failed).toBeInstanceOf(StoreUnavailableError);
      expect((failed as Error).message).toBe('the SQLite read worker ran out of its heap (store.readerMaxOldSpace, 16 MiB of old space) answering a query; it is replaced for the next one');
      expect(readers.size).toBe(0);
      // This process (the event loop, the store's own connection) goes on; the next query has a new worker.
      expect(await readers.all('SELECT 1 AS one', [])).toEqual([{ one: 1 }]);
      expect(readers.size).toBe(1);
      expect(await store.lastEventMs()).toBeNull();
      // Rows within the bound are answered whole.
      const rows = await readers.all('WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) SELECT i, printf(\'%.*c\', 1000, \'x\') AS pad FROM n', []);
      expect(rows).toHaveLength(2000);
      expect(rows[1999]).toEqual({ i: 2000, pad: 'x'.repeat(1000) });
    } finally {
      await readers.close();
      await store.close();
    }
  });

  it('each worker has the heap bound it is given, the main thread\'s left as it is', async () => {
    const path = join(tmp.dir, 'bound.db');
    const store = new SqliteStore({ path });
    const started: Worker[] = [];
    const onWorker = (m: unknown): void => {
      started.push((m as { worker: Worker }).worker);
    };
    subscribe('worker_threads', onWorker);
    const small = new SqliteReaders(path, 1, 40 * MIB);
    const large = new SqliteReaders(path, 1, 300 * MIB);
    try {
      await small.all('SELECT 1', []);
      await large.all('SELECT 1', []);
      expect(started).toHaveLength(2);
      const [a, b] = await Promise.all(started.map((w) => w.getHeapStatistics()));
      // The old space given, and the young generation's 24 MiB (WORKER_YOUNG_GENERATION_MB, as V8 counts it).
      expect(a?.heap_size_limit).toBe((40 + 24) * MIB);
      expect(b?.heap_size_limit).toBe((300 + 24) * MIB);
      expect(getHeapStatistics().heap_size_limit).not.toBe(a?.heap_size_limit);
    } finally {
      unsubscribe('worker_threads', onWorker);
      await small.close();
      await large.close();
      await store.close();
    }
  });

  it('close() ends the workers and refuses queries in flight and after it', async () => {
    const store = new SqliteStore({ path: join(tmp.dir, 'close.db'), dimensions: ['team'], readers: 2 });
    const now = Date.now();
    await loadHistory(store, { events: 10_000, fromMs: now - 30 * DAY, toMs: now - DAY });
    const inFlight = store.hookCounters({ fromMs: now - 30 * DAY, toMs: now, filters: { team: 'team-2' } }).then(() => 'answered', (e: unknown) => e);
    await store.close();
    const outcome = await inFlight;
    // Either answered before the close or refused as retryable; never left hanging.
    if (outcome !== 'answered') expect(outcome).toBeInstanceOf(StoreUnavailableError);
    await expect(store.hookCounters({ fromMs: now - DAY, toMs: now })).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('an idle store keeps no process alive, a query in flight is answered before the process exits', () => {
    const script = join(tmp.dir, 'exit.ts');
    const storeUrl = new URL('./index.ts', import.meta.url).href;
    writeFileSync(script, `
      import { SqliteStore } from ${JSON.stringify(storeUrl)};
      const store = new SqliteStore({ path: ${JSON.stringify(join(tmp.dir, 'exit.db'))} });
      await store.lastEventMs();
      // Nothing awaits this query and nothing else keeps the loop busy: it must still be answered.
      store.hookCounters({ fromMs: 0, toMs: Date.now() }).then((r) => console.log('answered', r.size));
    `);
    const out = execFileSync(process.execPath, [script], { encoding: 'utf8', timeout: 20_000 });
    expect(out).toContain('answered 0');
  });
});
