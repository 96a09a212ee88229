/**
 * GET /api/v1/fleet/series on PostgreSQL replicas sharing one database: a replica keeps the fleet chart's closed
 * buckets and the hooks' counters over them between calls (it does not read them again), yet an event another
 * replica commits into a closed bucket (a late event), a write of another writer to the rollups, or a database
 * restart (which may lose commits) makes it read them again: its answer is that of a replica keeping nothing. On
 * a schema without the generations it keeps nothing.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { FleetSeriesResponse, HooksResponse } from '../../../../shared/src/api.ts';
import { hookId } from '../../hooks/extract.ts';
import type { HookEvent } from '../../hooks/model.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { queryOnce } from '../../../test/support/postgres/server.ts';
import { PG_UNDO_DAY_CHANGES } from '../../../test/support/downgrade.ts';
import { serveApi, type ApiServer } from '../../../test/support/api-server.ts';
import { PostgresStore } from './index.ts';

const HOUR = 3_600_000;
const DAY = 86_400_000;
const pgServer = useTestServer();
const apis: ApiServer[] = [];
afterEach(async () => {
  await Promise.all(apis.splice(0).map((a) => a.close()));
});

const id = (name: string): string => hookId('PostToolUse', `PostToolUse:${name}`);

function execution(name: string, key: string, timeMs: number, over: boolean): HookEvent {
  return {
    kind: 'complete', dedupKey: `k-${name}-${key}`, hookId: id(name), hookEvent: 'PostToolUse', hookName: `PostToolUse:${name}`,
    timeMs, numHooks: 1, numSuccess: 1, numBlocking: 0, numNonBlockingError: 0, numCancelled: 0, durationMs: 10,
    stdoutChars: over ? 60_000 : 1000, additionalContextChars: null, systemMessageChars: null, initialUserMessageChars: null, outputsPersisted: over ? 1 : 0,
    sizesKnown: true, status: over ? 'over' : 'ok', serviceName: 'claude-code', serviceVersion: '2.1.332', sessionId: 's', userId: 'u', userEmail: '',
    userAccountUuid: '', organizationId: '', terminalType: '', source: 'otlp', extra: { team: 'web' },
  };
}

/**
 * A database of two hooks over the cap and four under it, in the last 5 hours of the day before today only (what
 * a replica keeps are whole days before today); `now`: the API's clock.
 */
async function replicas(n: number): Promise<{ url: string; now: number; stores: PostgresStore[] }> {
  const url = await pgServer.server().createDatabase();
  const stores = await Promise.all(Array.from({ length: n }, () => PostgresStore.open({ url, poolSize: 3, dimensions: ['team'] }).then((s) => pgServer.track(s))));
  // Kept are the buckets before the one being written (by the store's clock): the range ends now.
  const now = Math.max(Date.now(), Math.floor(Date.now() / HOUR) * HOUR + 1000);
  const hour = Math.floor(now / DAY) * DAY;
  const events: HookEvent[] = [];
  ['a', 'b', 'c', 'd', 'e', 'x'].forEach((name, h) => {
    for (let i = 0; i < 2 + h; i++) events.push(execution(name, String(i), hour - (1 + ((h + i) % 5)) * HOUR + 60_000 * h, name === 'a' || name === 'b'));
  });
  await stores[0]!.ingest(events);
  return { url, now, stores };
}

async function fleet(store: PostgresStore, now: number, range = 'from=now-2d&step=1h'): Promise<FleetSeriesResponse> {
  const api = await serveApi(store, now);
  apis.push(api);
  const res = await fetch(`${api.base}/api/v1/fleet/series?${range}&limit=2`, { signal: AbortSignal.timeout(10_000) });
  expect(res.status).toBe(200);
  return (await res.json()) as FleetSeriesResponse;
}

/** Changes the rollups' executions of hook `name` in every closed hour as no store does: no trigger fires. */
async function rewriteUnseen(url: string, name: string, executions: number): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('SET session_replication_role = replica');
    for (const t of ['rollup_1m', 'rollup_1h', 'rollup_1d']) await client.query(`UPDATE ${t} SET executions = executions + $2 WHERE hook_id = $1`, [id(name), executions]);
  } finally {
    await client.end();
  }
}

const restExecutions = (f: FleetSeriesResponse): number => f.rest!.executions.reduce((s, n) => s + n, 0);

/** A hook's rollup rows deleted as retention deletes them: `store`'s next answer lacks it, as a fresh replica's does. */
async function expectRetentionDeleteSeen(url: string, store: PostgresStore, now: number, before: FleetSeriesResponse): Promise<void> {
  await queryOnce(url, `DELETE FROM rollup_1m WHERE hook_id = '${id('e')}'; DELETE FROM rollup_1h WHERE hook_id = '${id('e')}'; DELETE FROM rollup_1d WHERE hook_id = '${id('e')}'`);
  const pruned = await fleet(store, now);
  expect(pruned.rest!.hooks).toBe(before.rest!.hooks - 1);
  expect(restExecutions(pruned)).toBe(restExecutions(before) - 6);
  const fresh = pgServer.track(await PostgresStore.open({ url, poolSize: 2, dimensions: ['team'] }));
  expect(pruned).toEqual(await fleet(fresh, now));
}

describe('the fleet series on PostgreSQL replicas', () => {
  it('is kept for its closed buckets, and read again when another replica commits an event into one of them', async () => {
    const { url, now, stores: [a, b] } = await replicas(2);
    const first = await fleet(a!, now);
    expect(first.hooks.map((h) => h.id).sort()).toEqual([id('a'), id('b')].sort());
    expect(restExecutions(first)).toBe(4 + 5 + 6 + 7);
    // Kept, not read again: a change no trigger saw is not in the answer (only what the store itself writes
    // moves the days' generations).
    await rewriteUnseen(url, 'x', 100);
    expect(await fleet(a!, now)).toEqual(first);
    // Replica B commits a late event of hook c, over the cap, into a closed hour of a kept day.
    const hour = Math.floor(now / DAY) * DAY;
    await b!.ingest([execution('c', 'late', hour - 3 * HOUR + 5_000, true)]);
    const after = await fleet(a!, now);
    // Every closed hour of that day is read again (x's rewrite with them); the answer is a fresh replica's.
    const fresh = pgServer.track(await PostgresStore.open({ url, poolSize: 2, dimensions: ['team'] }));
    expect(after).toEqual(await fleet(fresh, now));
    expect(after.rest!.hooksWithPersisted).toBe(first.rest!.hooksWithPersisted + 1);
    const i = after.buckets.findIndex((t) => Date.parse(t) === hour - 3 * HOUR);
    expect(i).toBeGreaterThanOrEqual(0);
    expect(after.rest!.persisted[i]).toBe(first.rest!.persisted[i]! + 1);
  });

  it('keeps the closed days before today while replicas ingest into the bucket being written', async () => {
    // The hooks' events on the day before today; the chart's buckets of an hour span it and today.
    const { url, now, stores: [a, b] } = await replicas(2);
    const first = await fleet(a!, now);
    expect(restExecutions(first)).toBe(4 + 5 + 6 + 7);
    // Kept: a change no trigger saw stays out of the answer.
    await rewriteUnseen(url, 'x', 100);
    expect(await fleet(a!, now)).toEqual(first);
    // Replica B commits live traffic into the bucket being written (today's generations move, not yesterday's).
    await b!.ingest([execution('y', 'live', Math.floor(now / HOUR) * HOUR + 500, false)]);
    const after = await fleet(a!, now);
    // Yesterday's buckets are still those kept (x's rewrite is not read), and B's event is in the answer.
    expect(after.rest!.executions.slice(0, -1)).toEqual(first.rest!.executions.slice(0, -1));
    expect(after.rest!.executions.at(-1)).toBe(first.rest!.executions.at(-1)! + 1);
    expect(after.rest!.hooks).toBe(first.rest!.hooks + 1);
    // A late event into a kept day still reads that day again (x's rewrite with it).
    await b!.ingest([execution('c', 'late', Math.floor(now / DAY) * DAY - 2 * HOUR + 5_000, false)]);
    const late = await fleet(a!, now);
    const fresh = pgServer.track(await PostgresStore.open({ url, poolSize: 2, dimensions: ['team'] }));
    expect(late).toEqual(await fleet(fresh, now));
    // x's rewrite: 100 more in each of its 5 hours.
    expect(restExecutions(late)).toBe(restExecutions(after) + 1 + 5 * 100);
    // Every hook's counters: x's kept rows of yesterday and its rows of today, read on each call, merge into the
    // answer without the kept ones changing.
    await b!.ingest([execution('x', 'today', Math.floor(now / HOUR) * HOUR + 600, false)]);
    const executionsOfX = async (store: PostgresStore): Promise<number | undefined> => {
      const api = await serveApi(store, now);
      apis.push(api);
      const res = await fetch(`${api.base}/api/v1/hooks?from=now-2d`, { signal: AbortSignal.timeout(10_000) });
      expect(res.status).toBe(200);
      return ((await res.json()) as HooksResponse).hooks.find((h) => h.id === id('x'))?.executions;
    };
    const x = await executionsOfX(fresh);
    expect(x).toBeGreaterThan(7);
    for (let i = 0; i < 3; i++) expect(await executionsOfX(a!)).toBe(x);
  });

  it('keeps a minute-step chart per start: two ranges beginning in one hour each get the whole hour the rollups counted, said as covered', async () => {
    const url = await pgServer.server().createDatabase();
    // Minutes older than 2 h are read from the hour rollups: a range's first hour is read whole, and the answer
    // names the range it covered, from the hour's start.
    const open = (): Promise<PostgresStore> => PostgresStore.open({ url, poolSize: 3, dimensions: ['team'], retention: { eventsMs: 2 * HOUR, minuteRollupsMs: 2 * HOUR } }).then((s) => pgServer.track(s));
    const store = await open();
    const now = Date.now();
    // Hours of the day before today: what a replica keeps.
    const hour = Math.floor(now / DAY) * DAY - 5 * HOUR;
    // Written by a replica keeping them longer (this one would take them for expired).
    const writer = pgServer.track(await PostgresStore.open({ url, poolSize: 2, dimensions: ['team'] }));
    await writer.ingest([execution('a', '1', hour + 20 * 60_000, true), execution('x', '1', hour + 25 * 60_000, false), execution('x', '2', hour + 90 * 60_000, false)]);
    const range = (fromMin: number): string => `from=${new Date(hour + fromMin * 60_000).toISOString()}&to=${new Date(hour + (fromMin + 60) * 60_000).toISOString()}&step=1m`;
    const first = await fleet(store, now, range(5));
    expect(first.total).toBe(2);
    const second = await fleet(store, now, range(17));
    for (const [answer, fromMin] of [[first, 5], [second, 17]] as const) {
      expect(Date.parse(answer.buckets[0]!)).toBe(hour);
      expect(Date.parse(answer.from)).toBe(hour);
      expect(answer.coverage).toMatchObject({ askedFrom: new Date(hour + fromMin * 60_000).toISOString() });
    }
    const fresh = await open();
    expect(second).toEqual(await fleet(fresh, now, range(17)));
    expect(first).toEqual(await fleet(fresh, now, range(5)));
  });

  it('is read again after another writer changes a closed day\'s rollup_1d, as a replica of the previous release or retention would', async () => {
    const { url, now, stores: [a] } = await replicas(1);
    const first = await fleet(a!, now);
    // Plain UPDATEs of the rollups. One of the hour and minute rollups alone moves no generation (only inserts and
    // updates of rollup_1d do, as every ingest commit writes it): the chart stays as kept.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      for (const t of ['rollup_1m', 'rollup_1h']) await client.query(`UPDATE ${t} SET executions = executions + 100 WHERE hook_id = $1`, [id('x')]);
      expect(await fleet(a!, now)).toEqual(first);
      // Touching that day's rollup_1d too, as hookwatch's own writes do, the day is read again.
      await client.query('UPDATE rollup_1d SET executions = executions + 100 WHERE hook_id = $1', [id('x')]);
    } finally {
      await client.end();
    }
    const after = await fleet(a!, now);
    const fresh = pgServer.track(await PostgresStore.open({ url, poolSize: 2, dimensions: ['team'] }));
    expect(after).toEqual(await fleet(fresh, now));
    expect(restExecutions(after)).toBeGreaterThan(restExecutions(first));
    await expectRetentionDeleteSeen(url, a!, now, after);
  });

  it('keeps nothing, and still answers, on a schema put back before the days\' change generations', async () => {
    const { url, now, stores: [a] } = await replicas(1);
    const first = await fleet(a!, now);
    // A backup of the previous release restored under the running replica: no generations, no triggers.
    await queryOnce(url, PG_UNDO_DAY_CHANGES);
    await rewriteUnseen(url, 'x', 100);
    const after = await fleet(a!, now);
    expect(restExecutions(after)).toBeGreaterThan(restExecutions(first));
    await rewriteUnseen(url, 'x', 100);
    expect(restExecutions(await fleet(a!, now))).toBeGreaterThan(restExecutions(after));
  });

  it('drops what it kept when the database restarts: commits may have been lost there, so generations can repeat', async () => {
    const { url, now, stores: [a] } = await replicas(1);
    const first = await fleet(a!, now);
    await rewriteUnseen(url, 'x', 100);
    expect(await fleet(a!, now)).toEqual(first);
    await pgServer.server().restart();
    const after = await fleet(a!, now);
    const fresh = pgServer.track(await PostgresStore.open({ url, poolSize: 2, dimensions: ['team'] }));
    expect(after).toEqual(await fleet(fresh, now));
    expect(restExecutions(after)).toBeGreaterThan(restExecutions(first));
    await expectRetentionDeleteSeen(url, a!, now, after);
  });
});
