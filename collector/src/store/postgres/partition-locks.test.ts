/**
 * The DDL on the partitioned events table (retention detaching an old day, a new day's partition created) against
 * the locks other sessions hold on it: a pg_dump (ACCESS SHARE on every table until it ends), an ANALYZE. Ingest
 * never queues behind DDL waiting on them: the DDL gives way after a short wait and is tried again later.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { mapError } from '../../pipeline/errors.ts';
import { createLogger } from '../../telemetry/logger.ts';
import { StoreUnavailableError } from '../store.ts';
import { PostgresStore } from './index.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { logEntries } from '../../../test/support/serve-process.ts';
import { hookEvent } from '../../../test/support/alerting.ts';

const DAY = 86_400_000;
/** A hang guard only: what waits on a lock for good fails the test here instead of at the test's timeout. */
const HANG_MS = 20_000;

const t = useTestServer();

function within<T>(what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${HANG_MS} ms`)), HANG_MS);
  });
  return Promise.race([p, hung]).finally(() => clearTimeout(timer));
}

async function session(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  t.defer(async () => {
    await c.query('ROLLBACK').catch(() => {});
    await c.end();
  });
  return c;
}

async function partitionNames(c: pg.Client): Promise<string[]> {
  const r = await c.query<{ name: string }>(`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass ORDER BY 1`);
  return r.rows.map((x) => x.name);
}

describe('event partitions and the locks of other sessions', () => {
  it('keeps ingesting while a dump runs; retention leaves the old day to its next run, then drops it', async () => {
    const url = await t.server().createDatabase();
    const lines: string[] = [];
    const store = t.track(await PostgresStore.open({ url, poolSize: 3, logger: createLogger({ level: 'debug', write: (l) => lines.push(l) }) }));
    const now = Date.now();
    const today = Math.floor(now / DAY);
    const oldDay = today - 40;
    await store.ingest([hookEvent({ timeMs: oldDay * DAY + 3_600_000 }), hookEvent({ timeMs: now - 60_000 })]);
    // A first run with a retention longer than the old day: nothing goes, the finished days' indexes are rebuilt
    // (a rebuild waits for a dump as it would for any older transaction: not what this test is about).
    expect((await store.prune(now - 100 * DAY, now - 400 * DAY)).events).toBe(0);

    const admin = await session(url);
    expect(await partitionNames(admin)).toContain(`events_d${oldDay}`);
    // What pg_dump does: one snapshot, ACCESS SHARE on every table it dumps, held until it ends.
    const dump = await session(url);
    await dump.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    await dump.query('SELECT count(*) FROM events');

    let pruned = false;
    const pruning = store.prune(now - 30 * DAY, now - 400 * DAY).finally(() => {
      pruned = true;
    });
    // Batches keep committing while retention runs (into today's partition, and a backfill into a day that has none).
    let stored = 0;
    for (let i = 0; !pruned || i < 3; i++) {
      const r = await within('an ingest during the dump', store.ingest([hookEvent({ timeMs: now - i * 1000 })]));
      stored += r.inserted.length;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(stored).toBeGreaterThanOrEqual(3);
    const backfillDay = today - 10;
    expect((await within('a backfill during the dump', store.ingest([hookEvent({ timeMs: backfillDay * DAY + 1000 })]))).inserted).toHaveLength(1);

    const first = await within('retention during the dump', pruning);
    expect(first.partitionsDeferred).toBeGreaterThan(0);
    // The old day is left whole, not deleted from row by row meanwhile.
    expect(first.events).toBe(0);
    expect(await partitionNames(admin)).toContain(`events_d${oldDay}`);
    expect(await partitionNames(admin)).toContain(`events_d${backfillDay}`);
    const waited = logEntries(lines, 'event partitions left to the next retention run: a lock on events was not granted in time');
    expect(waited).toHaveLength(1);

    await dump.query('COMMIT');
    const second = await within('retention after the dump', store.prune(now - 30 * DAY, now - 400 * DAY));
    expect(second.partitionsDeferred ?? 0).toBe(0);
    expect(second.events).toBe(1);
    const left = await partitionNames(admin);
    expect(left).not.toContain(`events_d${oldDay}`);
    for (const d of [backfillDay, today, today + 1, today + 2]) expect(left).toContain(`events_d${d}`);
    const counted = await admin.query<{ n: string }>('SELECT count(*)::text AS n FROM events');
    expect(Number(counted.rows[0]?.n)).toBe(1 + stored + 1);
  }, 90_000);

  it('answers 503 for a day whose partition cannot be made yet, and goes on ingesting into the others', async () => {
    const url = await t.server().createDatabase();
    const store = t.track(await PostgresStore.open({ url, poolSize: 3 }));
    const now = Date.now();
    const backfillDay = Math.floor(now / DAY) - 12;
    // What an ANALYZE of events holds while it samples every partition: inserts go on beside it.
    const analyze = await session(url);
    await analyze.query('BEGIN');
    await analyze.query('LOCK TABLE events IN SHARE UPDATE EXCLUSIVE MODE');

    const backfill = [hookEvent({ timeMs: backfillDay * DAY + 1000 })];
    const refused = within('a backfill while events is locked', store.ingest(backfill)).then(() => undefined, (e: unknown) => e);
    const r = await within('an ingest while a backfill waits', store.ingest([hookEvent({ timeMs: now - 1000 })]));
    expect(r.inserted).toHaveLength(1);
    const err = await refused;
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(mapError(err).httpStatus).toBe(503);
    expect(String((err as Error).message)).toMatch(/lock/);

    await analyze.query('COMMIT');
    expect((await within('the backfill sent again', store.ingest(backfill))).inserted).toHaveLength(1);
  }, 90_000);

  it('makes a partition with the columns and indexes CREATE TABLE ... PARTITION OF gives it', async () => {
    const url = await t.server().createDatabase();
    const store = t.track(await PostgresStore.open({ url, poolSize: 2 }));
    const day = Math.floor(Date.now() / DAY) - 5;
    await store.ingest([hookEvent({ timeMs: day * DAY + 1000 })]);
    const admin = await session(url);
    await admin.query(`CREATE TABLE events_d${day - 1} PARTITION OF events FOR VALUES FROM (${(day - 1) * DAY}) TO (${day * DAY})`);
    const shape = async (d: number): Promise<unknown> => {
      const name = `events_d${d}`;
      const cols = await admin.query(`SELECT attname, format_type(atttypid, atttypmod) AS type, attnotnull, attstorage, attcompression FROM pg_attribute
        WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, [name]);
      const idx = await admin.query<{ indexname: string; indexdef: string; parent: string }>(`SELECT i.indexname, i.indexdef, p.relname AS parent FROM pg_indexes i
        JOIN pg_inherits h ON h.inhrelid = to_regclass(i.indexname) JOIN pg_class p ON p.oid = h.inhparent
        WHERE i.tablename = $1 ORDER BY p.relname`, [name]);
      return { cols: cols.rows, idx: idx.rows.map((r) => ({ ...r, indexname: r.indexname.replace(name, '?'), indexdef: r.indexdef.split(name).join('?') })) };
    };
    const made = await shape(day);
    expect((made as { idx: unknown[] }).idx.length).toBeGreaterThan(0);
    expect(made).toEqual(await shape(day - 1));
  }, 90_000);

  it('keeps the days ahead across retention runs, empty or holding events stamped ahead (acknowledged, kept until old)', async () => {
    const url = await t.server().createDatabase();
    const store = t.track(await PostgresStore.open({ url, poolSize: 2 }));
    const now = Date.now();
    const today = Math.floor(now / DAY);
    const admin = await session(url);
    const oids = async (): Promise<Map<string, string>> => {
      const r = await admin.query<{ name: string; oid: string }>(`SELECT c.relname AS name, c.oid::text AS oid FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass`);
      return new Map(r.rows.map((x) => [x.name, x.oid]));
    };
    const ahead = [`events_d${today + 1}`, `events_d${today + 2}`];
    const before = await oids();
    for (const name of ahead) expect(before.has(name)).toBe(true);
    await store.prune(now - 30 * DAY, now - 400 * DAY);
    const after = await oids();
    // The same tables: not detached, dropped and made again.
    for (const name of ahead) expect(after.get(name)).toBe(before.get(name));

    // An event two days ahead (a replica's clock running ahead) was acknowledged: it and its day stay.
    await store.ingest([hookEvent({ timeMs: (today + 2) * DAY + 1000 })]);
    const r = await store.prune(now - 30 * DAY, now - 400 * DAY);
    expect(r.events).toBe(0);
    const again = await oids();
    for (const name of ahead) expect(again.get(name)).toBe(before.get(name));
  });
});
