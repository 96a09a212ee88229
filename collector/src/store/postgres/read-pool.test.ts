/**
 * On PostgreSQL, queries run on a read pool of their own: a dashboard query holding every read connection (here
 * waiting on a lock another session holds) never makes an ingest transaction wait for a connection, and a query
 * after an ingest resolved sees its events.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hookEvent } from '../../../test/support/alerting.ts';
import { stuckRead } from '../../../test/support/postgres/stuck-read.ts';
import { startTestServer, type TestServer } from '../../../test/support/postgres/server.ts';
import { PostgresStore, READ_RANDOM_PAGE_COST, WIDE_READ_WORK_MEM_MB } from './index.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.stop();
});

const DAY = 86_400_000;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('PostgreSQL read pool', () => {
  // First in the file: the driver warns once per process, so a later test would not see it.
  it('applies its session settings before a new connection is handed out, not queued beside the first query on it', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.message);
    process.on('warning', onWarning);
    const store = await PostgresStore.open({ url: await server.createDatabase(), readers: 3, dimensions: ['team'] });
    try {
      // Queries at once, each on a connection of its own opened for it.
      await Promise.all(Array.from({ length: 6 }, (_, i) => store.hookCounters({ fromMs: 0, toMs: Date.now(), filters: { team: `t${i}` } })));
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
      await store.close();
    }
    // The driver's notice of a query asked while another runs (deprecated; refused from pg 9 on).
    expect(warnings.filter((m) => /already executing a query/.test(m))).toEqual([]);
  });

  it('an ingest commits while a query holds every read connection', { timeout: 60_000 }, async () => {
    // One connection each side: with a shared pool the ingest would queue behind the stuck query. Another session
    // holds the transcript findings table: a query of a hook's commands waits on it.
    const stuck = await stuckRead(server, 400, 200);
    const { store, locker, now, batches } = stuck;
    try {
      const order: string[] = [];
      const read = stuck.read.then(() => void order.push('query'));
      const ingest = store.ingest(batches[1] ?? []).then((r) => {
        order.push('ingest');
        return r;
      });
      // Bounded only so that a store without a read pool (the ingest stuck behind the query) ends the test.
      await Promise.race([ingest, sleep(10_000)]);
      await locker.query('COMMIT');
      const [result] = await Promise.all([ingest, read]);
      expect(order).toEqual(['ingest', 'query']);
      expect(result.inserted.length).toBe(200);
      // Read-your-writes: both batches are counted by the next query.
      const counters = await store.hookCounters({ fromMs: now - 3 * DAY, toMs: now });
      expect([...counters.values()].reduce((n, c) => n + c.executions, 0)).toBe(400);
    } finally {
      await stuck.close();
    }
  });

  it('plans reads for data in memory: no parallel workers, random pages as cheap as sequential ones, whatever options the URL sets; ingest connections keep the server\'s settings', async () => {
    // Server options in the URL (libpq's `options`) stay in force beside the read pool's own.
    const url = `${await server.createDatabase()}?options=${encodeURIComponent('-c work_mem=7MB')}`;
    const store = await PostgresStore.open({ url, readers: 1, dimensions: ['team'] });
    try {
      const pools = store as unknown as { readPool: pg.Pool; pool: pg.Pool };
      const settings = async (p: pg.Pool): Promise<Record<string, string>> =>
        (await p.query<{ w: string; r: string; m: string }>("SELECT current_setting('max_parallel_workers_per_gather') AS w, current_setting('random_page_cost') AS r, current_setting('work_mem') AS m")).rows[0] as Record<string, string>;
      expect(await settings(pools.readPool)).toEqual({ w: '0', r: String(READ_RANDOM_PAGE_COST), m: '7MB' });
      expect(await settings(pools.pool)).toEqual({ w: '2', r: '4', m: '7MB' });
      // A query of the store on a fresh read connection plans with them too.
      await store.hookCounters({ fromMs: 0, toMs: Date.now() });
      expect(await settings(pools.readPool)).toEqual({ w: '0', r: String(READ_RANDOM_PAGE_COST), m: '7MB' });
    } finally {
      await store.close();
    }
  });

  it('sums the fleet series\' rest with at least WIDE_READ_WORK_MEM_MB of work_mem, for that answer only, never less than the URL sets', async () => {
    const settingsUrl = async (workMem: string): Promise<string> => `${await server.createDatabase()}?options=${encodeURIComponent(`-c work_mem=${workMem}`)}`;
    // The work_mem each statement of an answer ran with, read on its connection right before it.
    const listed = hookEvent({ hookName: 'SessionStart:startup', timeMs: 0 }).hookId;
    const seen = async (url: string, ask: (store: PostgresStore, now: number) => Promise<unknown>): Promise<{ during: string[]; after: string }> => {
      const store = await PostgresStore.open({ url, readers: 1, dimensions: ['team'] });
      try {
        const now = Date.now();
        const events = [hookEvent({ hookName: 'SessionStart:startup', timeMs: now - DAY }), hookEvent({ hookName: 'SessionStart:resume', timeMs: now - 2 * DAY })];
        expect((await store.ingest(events)).inserted.length).toBe(2);
        const inner = store as unknown as { run: (c: pg.Pool | pg.PoolClient, sql: string, params: unknown[]) => Promise<Record<string, unknown>[]>; readPool: pg.Pool };
        const run = inner.run.bind(store);
        const during: string[] = [];
        inner.run = async (c, sql, params) => {
          // In an answer's snapshot, on its own connection (a pool is not one).
          if (!('totalCount' in c)) during.push(String((await c.query<{ m: string }>("SELECT current_setting('work_mem') AS m")).rows[0]?.m));
          return run(c, sql, params);
        };
        await ask(store, now);
        inner.run = run;
        const after = (await inner.readPool.query<{ m: string }>("SELECT current_setting('work_mem') AS m")).rows[0]?.m ?? '';
        return { during, after };
      } finally {
        await store.close();
      }
    };
    const wide = `${WIDE_READ_WORK_MEM_MB}MB`;
    const range = (now: number): { fromMs: number; toMs: number } => ({ fromMs: now - 30 * DAY, toMs: now });
    // The fleet series' rest: raised for the answer, the session's own after it.
    const rest = await seen(await settingsUrl('7MB'), (s, now) => s.fleetRest({ ...range(now), stepMs: 43_200_000 }, [listed]));
    expect(rest.during.length).toBeGreaterThan(0);
    expect(new Set(rest.during)).toEqual(new Set([wide]));
    expect(rest.after).toBe('7MB');
    // Other answers, every hook's counters and the listed hooks' series among them: the session's setting.
    for (const ask of [
      (s: PostgresStore, now: number) => s.hookCounters(range(now)),
      (s: PostgresStore, now: number) => s.fleetSeries({ ...range(now), stepMs: 43_200_000, hookIds: [listed] }),
    ]) {
      const other = await seen(await settingsUrl('7MB'), ask);
      expect(other.during.length).toBeGreaterThan(0);
      expect(new Set(other.during)).toEqual(new Set(['7MB']));
    }
    // A larger setting of the URL is kept.
    const larger = await seen(await settingsUrl('100MB'), (s, now) => s.fleetRest({ ...range(now), stepMs: 43_200_000 }, [listed]));
    expect(new Set(larger.during)).toEqual(new Set(['100MB']));
  });
});
