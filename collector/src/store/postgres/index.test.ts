/**
 * PostgreSQL-only behaviour of the store (the shared behaviour is in ../conformance.test.ts): migrations when
 * replicas start together, errors classified as retryable or not, and the password kept out of every error.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mapError } from '../../pipeline/errors.ts';
import { createLogger } from '../../telemetry/logger.ts';
import { StoreUnavailableError } from '../store.ts';
import { MIGRATIONS, PostgresStore, scrubSecret } from './index.ts';
import { freePort } from '../../../test/support/free-port.ts';
import { startTestServer, type TestServer } from '../../../test/support/postgres/server.ts';
import { hookEvent } from '../../../test/support/alerting.ts';
import { DAY, HOUR } from '../segments.ts';
import { LATE_ARRIVAL_MS, lateArrivalsQuery } from '../sql.ts';

let server: TestServer;
const stores: PostgresStore[] = [];

beforeAll(async () => {
  server = await startTestServer();
});
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});
afterAll(async () => {
  await server?.stop();
});

async function open(url: string): Promise<PostgresStore> {
  const s = await PostgresStore.open({ url, poolSize: 2 });
  stores.push(s);
  return s;
}

describe('PostgresStore', () => {
  it('keeps a hook an ingest brings back while retention removes the hooks with nothing left', async () => {
    const url = await server.createDatabase();
    const store = await open(url);
    const old = Date.UTC(2020, 0, 1);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      // Two hooks with nothing left: one stays so, the other gets new data while retention runs.
      await c.query(`INSERT INTO hooks (hook_id, hook_event, hook_name, first_seen, last_seen, ref) VALUES
        ('00000000000000a1', 'Stop', 'Stop:gone', $1, $1, 161), ('00000000000000b2', 'Stop', 'Stop:back', $1, $1, 178)`, [old]);
      // What an ingest writes in its transaction: the hook's row upserted, then its data. Late events (a client
      // sending a day-old batch): last_seen stays well in the past.
      const now = Date.now();
      const late = now - 86_400_000;
      await other.query('BEGIN');
      await other.query(`UPDATE hooks SET last_seen = GREATEST(last_seen, $1) WHERE hook_id = '00000000000000b2'`, [late]);
      await other.query(`INSERT INTO rollup_1d (hook_id, bucket, service_name, service_version, executions) VALUES ('00000000000000b2', $1, 'claude-code', '2.1.332', 1)`, [Math.floor(late / 86_400_000) * 86_400_000]);
      // Retention starts while that ingest is uncommitted: its snapshot sees no data for either hook, and its
      // delete waits on the row the ingest holds.
      const pruning = store.prune(now - 30 * 86_400_000, now - 400 * 86_400_000);
      // Retention's statement on the hooks table waits for the ingest's transaction before that commits.
      const ingestPid = (await other.query('SELECT pg_backend_pid() AS p')).rows[0] as { p: number };
      let blocked = false;
      for (let i = 0; i < 400 && !blocked; i++) {
        const r = await c.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) AND query ILIKE '%FROM hooks%'`, [ingestPid.p]);
        blocked = (r.rows[0] as { n: number }).n > 0;
        if (!blocked) await new Promise((r) => setTimeout(r, 25));
      }
      expect(blocked, 'retention waited on the ingest').toBe(true);
      await other.query('COMMIT');
      expect((await pruning).hooks).toBe(1);
      const left = (await c.query(`SELECT hook_id FROM hooks ORDER BY hook_id`)).rows.map((r: { hook_id: string }) => r.hook_id);
      expect(left).toEqual(['00000000000000b2']);
    } finally {
      await other.end();
      await c.end();
    }
  });

  it('applies each migration once when several replicas start at the same moment', async () => {
    const url = await server.createDatabase();
    const replicas = await Promise.all(Array.from({ length: 6 }, () => open(url)));
    for (const r of replicas) expect(await r.schemaVersion()).toBe(MIGRATIONS.length);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const rows = (await c.query('SELECT version FROM schema_migrations ORDER BY version')).rows.map((r: { version: number }) => r.version);
      expect(rows).toEqual(MIGRATIONS.map((_, i) => i + 1));
      // A restart finds nothing to do.
      const again = await open(url);
      expect(await again.schemaVersion()).toBe(MIGRATIONS.length);
      // A schema newer than this build is refused rather than written with the wrong shape.
      await c.query('INSERT INTO schema_migrations (version) VALUES ($1)', [MIGRATIONS.length + 1]);
      await expect(open(url)).rejects.toThrow(/newer than this hookwatch/);
    } finally {
      await c.end();
    }
  });

  it('answers 503-retryable when the server cannot be reached, without the password', async () => {
    const port = await freePort();
    const url = `postgres://hookwatch:${encodeURIComponent(server.password)}@127.0.0.1:${port}/x`;
    const err = await PostgresStore.open({ url }).then(() => undefined, (e: unknown) => e as Error);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(mapError(err).httpStatus).toBe(503);
    expect(String(err?.message)).not.toContain(server.password);
  });

  it('keeps the password out of authentication errors and connection-loss logs', async () => {
    const wrong = 'wrong-' + server.password;
    const badUrl = server.url().replace(encodeURIComponent(server.password), encodeURIComponent(wrong));
    const err = await PostgresStore.open({ url: badUrl }).then(() => undefined, (e: unknown) => e as Error);
    expect(err?.message).toMatch(/password authentication failed/);
    // At start only a change of configuration cures it: not an outage to wait out, the process exits saying so.
    expect(err).not.toBeInstanceOf(StoreUnavailableError);
    expect(err?.message).not.toContain(wrong);
    expect(err?.message).not.toContain(server.password);

    // Connections killed by the server (failover, restart) are logged, scrubbed, and do not crash the process.
    const lines: string[] = [];
    const url = await server.createDatabase();
    const store = await PostgresStore.open({ url, logger: createLogger({ level: 'debug', write: (l) => lines.push(l) }) });
    stores.push(store);
    await store.ping();
    const admin = new pg.Client({ connectionString: server.url() });
    await admin.connect();
    try {
      const terminated = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [new URL(url).pathname.slice(1)]);
      expect(terminated.rowCount).toBeGreaterThan(0);
    } finally {
      await admin.end();
    }
    // The server ends each backend when it is next scheduled, and the pool hears of it when its socket closes: on a
    // loaded machine that can be later than any fixed wait.
    await expect.poll(() => lines.some((l) => l.includes('postgres connection lost')), { timeout: 10_000 }).toBe(true);
    // The pool replaces the lost connections: each of them is heard of when its socket closes, so a ping may still
    // meet one terminated but not yet heard of (57P01) before it does.
    await expect.poll(() => store.ping().then(() => true, () => false), { timeout: 10_000 }).toBe(true);
    expect(lines.join('\n')).not.toContain(server.password);
  });

  it('retries an ingest whose upsert meets a unique violation (an index swapped by a rebuild), counting it once', async () => {
    const url = await server.createDatabase();
    const store = await open(url);
    // The first rollup write of the database fails as an upsert meeting REINDEX CONCURRENTLY's new index can; a
    // sequence, not a table, counts the attempts, since the failed transaction rolls everything else back.
    await store.connectionPool.query(`CREATE SEQUENCE rollup_writes;
      CREATE FUNCTION fail_first() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
        IF nextval('rollup_writes') = 1 THEN RAISE unique_violation USING MESSAGE = 'duplicate key value violates unique constraint "rollup_1h_pkey_ccnew"'; END IF;
        RETURN NEW; END $$;
      CREATE TRIGGER fail_first BEFORE INSERT ON rollup_1h FOR EACH ROW EXECUTE FUNCTION fail_first();`);
    const t = Date.UTC(2026, 10, 30, 12);
    const events = [hookEvent({ timeMs: t }), hookEvent({ timeMs: t + 1000 })];
    expect((await store.ingest(events)).inserted).toHaveLength(2);
    expect((await store.connectionPool.query<{ n: string }>("SELECT last_value::text AS n FROM rollup_writes")).rows[0]?.n).not.toBe('1');
    expect([...(await store.hookCounters({ fromMs: t - 3_600_000, toMs: t + 3_600_000 })).values()].map((c) => c.executions)).toEqual([2]);
    expect((await store.ingest(events)).inserted).toEqual([]);
  });

  it('asks the connection of an answer its statements one after another, never while one is still running', async () => {
    // Minutes of the day before yesterday are read from the raw events (a day of minute rollups kept).
    const store = await PostgresStore.open({ url: await server.createDatabase(), poolSize: 2, retention: { minuteRollupsMs: 86_400_000, eventsMs: 7 * 86_400_000 } });
    stores.push(store);
    const t = Math.floor(Date.now() / HOUR) * HOUR - 2 * 86_400_000;
    expect((await store.ingest([hookEvent({ timeMs: t - 1_800_000 }), hookEvent({ timeMs: t }), hookEvent({ timeMs: t + 4_200_000 })])).inserted).toHaveLength(3);
    // pg deprecates a statement asked of a connection that has one queued already: it is to go in pg@9.0.
    const deprecated: string[] = [];
    const onWarning = (w: Error): void => {
      if (w.name === 'DeprecationWarning' && w.message.includes('pg@9.0')) deprecated.push(w.message);
    };
    process.on('warning', onWarning);
    try {
      // The partial hours at both ends from the raw events and the whole hours between from the rollups: three
      // statements of one answer, in its snapshot.
      const counters = await store.hookCounters({ fromMs: t - 2_700_000, toMs: t + 4_800_000 });
      expect([...counters.values()].map((c) => c.executions)).toEqual([3]);
      // Warnings are emitted on the next tick.
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    expect(deprecated).toEqual([]);
  });

  it('an index rebuild whose connection is lost fails on its own: logged, retention goes on, the process stays up', async () => {
    const lines: string[] = [];
    const url = await server.createDatabase();
    const store = await PostgresStore.open({ url, poolSize: 3, logger: createLogger({ level: 'debug', write: (l) => lines.push(l) }) });
    stores.push(store);
    // A finished day, so retention rebuilds its index.
    const t = Date.UTC(2026, 2, 2, 12);
    expect((await store.ingest([hookEvent({ timeMs: t }), hookEvent({ timeMs: t + 1000 })])).inserted).toHaveLength(2);
    // An open snapshot holds the rebuild (REINDEX CONCURRENTLY waits for older snapshots) while its connection dies.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await holder.query('SELECT count(*) FROM hooks');
      const pruning = store.prune(t - 86_400_000, t - 86_400_000);
      // The network drops under the waiting rebuild: its socket is reset (as a failover or a proxy would).
      type Internal = { activeQuery?: { text?: string }; connection: { stream: { destroy(e: Error): void } } };
      let killed = 0;
      for (let i = 0; i < 200 && killed === 0; i++) {
        await new Promise((r) => setTimeout(r, 25));
        const waiting = await admin.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'REINDEX%' AND state = 'active'`);
        if (waiting.rowCount === 0) continue;
        for (const c of (store.connectionPool as unknown as { _clients: Internal[] })._clients) {
          if (c.activeQuery?.text?.startsWith('REINDEX')) {
            c.connection.stream.destroy(new Error('connection reset'));
            killed++;
          }
        }
      }
      expect(killed).toBe(1);
      await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'REINDEX%'`);
      await expect(pruning).resolves.toBeDefined();
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      await holder.end();
      await admin.end();
    }
    expect(lines.some((l) => l.includes('events index rebuild failed'))).toBe(true);
    await store.ping();
    // The next run drops what the cut rebuild left and packs the day.
    await store.prune(t - 86_400_000, t - 86_400_000);
    expect(lines.some((l) => l.includes('rebuilt an index'))).toBe(true);
  });

  it('classifies a failed write during an outage as retryable, and recovers after', async () => {
    const url = await server.createDatabase();
    const store = await open(url);
    const admin = new pg.Client({ connectionString: server.url() });
    await admin.connect();
    const db = new URL(url).pathname.slice(1);
    try {
      // Refuse new connections and drop the existing ones: the store's next query fails.
      await admin.query(`ALTER DATABASE ${db} WITH ALLOW_CONNECTIONS false`);
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [db]);
      await new Promise((r) => setTimeout(r, 100));
      const err = await store.hookCounters({ fromMs: 0, toMs: 60_000 }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect(String((err as Error).message)).not.toContain(server.password);
    } finally {
      await admin.query(`ALTER DATABASE ${db} WITH ALLOW_CONNECTIONS true`);
      await admin.end();
    }
    await store.ping();
  });

  it('keeps every table in the schema the URL\'s search_path names, beside another application\'s tables of the same names', async () => {
    const url = await server.createDatabase();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      // A shared database: another application owns public.events and public.hooks.
      await admin.query('CREATE SCHEMA hookwatch; CREATE TABLE public.events (id int); CREATE TABLE public.hooks (id int)');
      const store = await open(`${url}?options=${encodeURIComponent('-c search_path=hookwatch')}`);
      const old = Date.UTC(2026, 2, 2, 12);
      const recent = Date.UTC(2026, 2, 20, 12);
      expect((await store.ingest([hookEvent({ timeMs: old }), hookEvent({ timeMs: recent }), hookEvent({ timeMs: recent + 1000 })])).inserted).toHaveLength(3);
      // Retention drops the old day's partition and rebuilds the finished days' indexes, in hookwatch's schema.
      const pruned = await store.prune(Date.UTC(2026, 2, 10), Date.UTC(2025, 0, 1));
      expect(pruned.partitions).toBeGreaterThan(0);
      expect([...(await store.hookCounters({ fromMs: Date.UTC(2026, 2, 15), toMs: Date.UTC(2026, 2, 21) })).values()].map((c) => c.executions)).toEqual([2]);
      // A restart finds its schema migrated and its partitions where it made them.
      await store.close();
      stores.splice(stores.indexOf(store), 1);
      const again = await open(`${url}?options=${encodeURIComponent('-c search_path=hookwatch')}`);
      expect(await again.schemaVersion()).toBe(MIGRATIONS.length);
      expect((await again.ingest([hookEvent({ timeMs: recent + 2000 })])).inserted).toHaveLength(1);
      const tables = async (schema: string): Promise<string[]> =>
        (await admin.query<{ t: string }>(`SELECT tablename AS t FROM pg_tables WHERE schemaname = $1 ORDER BY 1`, [schema])).rows.map((r) => r.t);
      expect(await tables('public')).toEqual(['events', 'hooks']);
      expect(await tables('hookwatch')).toEqual(expect.arrayContaining(['schema_migrations', 'leader_lease', 'hooks', `events_d${Math.floor(recent / 86_400_000)}`]));
      expect(await tables('hookwatch')).not.toContain(`events_d${Math.floor(old / 86_400_000)}`);
      expect((await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM public.events')).rows[0]?.n).toBe(0);
    } finally {
      await admin.end();
    }
  });

  it('makes no partition for the days of events older than retention.events, before any retention run', { timeout: 60_000 }, async () => {
    const url = await server.createDatabase();
    const store = await PostgresStore.open({ url, poolSize: 2, retention: { eventsMs: 30 * DAY, minuteRollupsMs: 2 * DAY } });
    stores.push(store);
    const partitions = async (): Promise<string[]> => (await store.connectionPool.query<{ t: string }>(
      `SELECT c.relname AS t FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass ORDER BY 1`)).rows.map((r) => r.t);
    const made = await partitions();
    // One broken or hostile client: 2,000 events, each on a day of its own, from 31 days back to 1965.
    const now = Date.now();
    const old = Array.from({ length: 2000 }, (_, i) => hookEvent({ timeMs: now - (31 + i * 11) * DAY }));
    const recent = hookEvent({ timeMs: now - 2 * DAY });
    const r = await store.ingest([...old, recent]);
    expect({ inserted: r.inserted.length, expired: r.expired }).toEqual({ inserted: 1, expired: 2000 });
    // Only the recent event's day is added to the days made at open (today and the next ones).
    expect(await partitions()).toEqual([...made, `events_d${Math.floor((now - 2 * DAY) / DAY)}`].sort());
  });

  it('scrubs the raw and percent-encoded password and the whole URL from messages', () => {
    const url = 'postgres://u:p%40ss%2Fw0rd@db.example:5432/h';
    expect(scrubSecret('failed for postgres://u:p%40ss%2Fw0rd@db.example:5432/h', url)).toBe('failed for <db url>');
    expect(scrubSecret('p%40ss%2Fw0rd and p@ss/w0rd', url)).toBe('<redacted> and <redacted>');
    // A Unix socket URL (no host, the socket folder in ?host=), which `new URL` refuses.
    const socket = 'postgres://u:p%40ss%2Fw0rd@/h?host=/var/run/postgresql';
    expect(scrubSecret(`failed for ${socket}: p%40ss%2Fw0rd and p@ss/w0rd`, socket)).toBe('failed for <db url>: <redacted> and <redacted>');
  });
});

describe('the hook_limit alert late-arrival query', () => {
  it('reads the late-arrival index and the arrival index, never the events folded across the window', { timeout: 60_000 }, async () => {
    const url = await server.createDatabase();
    const store = await PostgresStore.open({ url, poolSize: 2, maxHooks: 1 });
    stores.push(store);
    const now = Date.UTC(2026, 2, 2, 12);
    // At store.maxHooks: an hour of events folded on time, and a few that arrived an hour late.
    const folded = Array.from({ length: 2000 }, (_, i) => hookEvent({ hookName: `PostToolUse:n${i}`, timeMs: now - HOUR + i * 1500, receivedMs: now - HOUR + i * 1500 + 2000 }));
    const late = Array.from({ length: 5 }, (_, i) => hookEvent({ hookName: `PostToolUse:late${i}`, timeMs: now - 2 * HOUR, receivedMs: now - 10 * 60_000 }));
    for (let i = 0; i < folded.length; i += 500) await store.ingest(folded.slice(i, i + 500));
    await store.ingest(late);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query('ANALYZE events');
      // With sequential scans off the plan takes an index if, and only if, one fits each part of the query.
      await c.query('SET enable_seqscan = off');
      // Each partition's copy of the two partial indexes, named by PostgreSQL.
      const parts = async (index: string): Promise<string[]> => (await c.query<{ name: string }>(
        'SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = $1', [index],
      )).rows.map((r) => r.name);
      const lateParts = await parts('events_late_arrival');
      const arrivalParts = await parts('events_arrival');
      const plan = (await c.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${lateArrivalsQuery((n) => `$${n}`)}`, [now - HOUR, now, now - HOUR])).rows.map((r) => r['QUERY PLAN']).join('\n');
      const scanned = [...plan.matchAll(/Index (?:Only )?Scan using (\S+)/g)].map((x) => x[1]);
      expect(scanned.filter((name) => lateParts.includes(name!)).length, plan).toBeGreaterThan(0);
      expect(scanned.filter((name) => arrivalParts.includes(name!)).length, plan).toBeGreaterThan(0);
      // The arrival index is read over LATE_ARRIVAL_MS of arrivals only.
      expect(plan).toContain(`(received_ms < '${now - HOUR + LATE_ARRIVAL_MS}'::bigint)`);
      expect(plan).not.toMatch(/Seq Scan/);
    } finally {
      await c.end();
    }
    const m = await store.lateFolded({ receivedFromMs: now - HOUR, receivedToMs: now, eventBeforeMs: now - HOUR });
    expect([...m.values()].map((a) => a.executions)).toEqual([late.length]);
  });

  it('works in a schema of its own whose name needs quoting (capitals, a dash), named by the URL\'s search_path', async () => {
    const url = await server.createDatabase();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query('CREATE SCHEMA "Hook-Watch"');
      const inSchema = new URL(url);
      inSchema.searchParams.set('options', '-c search_path="Hook-Watch"');
      const store = await open(inSchema.toString());
      const now = Date.now();
      const day = 86_400_000;
      expect((await store.ingest([hookEvent({ timeMs: now - 3 * day }), hookEvent({ timeMs: now - 60_000 })])).inserted).toHaveLength(2);
      expect((await store.diskUsage()).events).toBeGreaterThan(0);
      const r = await store.prune(now - 2 * day, now - 400 * day);
      expect(r.events).toBe(1);
      expect(r.partitions).toBe(1);
      const tables = await admin.query<{ schema: string }>(`SELECT DISTINCT schemaname AS schema FROM pg_tables WHERE tablename IN ('events', 'hooks', 'store_meta')`);
      expect(tables.rows.map((x) => x.schema)).toEqual(['Hook-Watch']);
    } finally {
      await admin.end();
    }
  });
});
