/**
 * openStore and startCoordination: the URL picks the backend; replicas on PostgreSQL elect one leader.
 * openStoreWhenReachable: a wait given up before the migration lock changes nothing; a database out of reach is
 * logged once, then at most once per 10 s with the attempts since, however often waiting requests hurry them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import pgClient from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, toConfig, type HookwatchConfig } from '../config/index.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { openStore, openStoreWhenReachable, startCoordination, StoreWait, StoreWaitGivenUpError, type Coordination } from './open.ts';
import { MIGRATION_LOCK_KEY, PostgresStore } from './postgres/index.ts';
import { freePort } from '../../test/support/free-port.ts';
import { useTestServer } from '../../test/support/postgres/fixture.ts';
import { recordingLogger, type Logged } from '../../test/support/recording-logger.ts';
import { waitFor } from '../../test/support/serve-process.ts';
import { queryOnce } from '../../test/support/postgres/server.ts';
import { SqliteStore } from './sqlite/index.ts';
import type { Store } from './store.ts';

const pg = useTestServer();
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'hookwatch-open-'));
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function config(env: Record<string, string>): HookwatchConfig {
  return toConfig(loadConfig({ env }));
}

async function open(cfg: HookwatchConfig): Promise<Store> {
  const s = await openStore(cfg, { logger: silentLogger });
  pg.defer(() => s.close());
  return s;
}

function coordinate(store: Store, cfg: HookwatchConfig): Coordination {
  const c = startCoordination(store, cfg, silentLogger);
  pg.defer(() => c.stop());
  return c;
}

describe('openStore and startCoordination', () => {
  it('opens SQLite for a path: one process, always the leader, alert state left to alerting', async () => {
    const cfg = config({ HOOKWATCH_DB: join(dir, 'h.db') });
    const store = await open(cfg);
    expect(store).toBeInstanceOf(SqliteStore);
    const c = coordinate(store, cfg);
    expect(c.leader.isLeader()).toBe(true);
    expect(c.alertStateStore).toBeUndefined();
    // No connection listens for other replicas: unknown, not "down" (no sample on /metrics).
    expect(c.signalsListening()).toBeUndefined();
    let acquired = 0;
    c.onAcquired(() => acquired++);
    expect(acquired).toBe(0);
  });

  it('gives SQLite\'s write connection the page cache of sqlite.cacheBytes (64 MiB unless set)', async () => {
    const cacheKiB = (s: Store): number => {
      const db = (s as unknown as { c: { db: DatabaseSync } }).c.db;
      return -Number((db.prepare('PRAGMA cache_size').get() as { cache_size: number }).cache_size);
    };
    expect(cacheKiB(await open(config({ HOOKWATCH_DB: join(dir, 'cache-default.db') })))).toBe(64 * 1024);
    expect(cacheKiB(await open(config({ HOOKWATCH_DB: join(dir, 'cache-8.db'), HOOKWATCH_SQLITE_CACHE_BYTES: '8MiB' })))).toBe(8 * 1024);
    expect(() => config({ HOOKWATCH_SQLITE_CACHE_BYTES: '512KiB' })).toThrow(/sqlite\.cacheBytes/);
  });

  it('opens PostgreSQL for a postgres:// URL, and replicas elect exactly one leader', async () => {
    const url = await pg.server().createDatabase();
    const cfg = config({ HOOKWATCH_DB: url.replace(/^postgres:/, 'postgresql:'), HOOKWATCH_POSTGRES_LEASE_TTL: '1s' });
    const stores = [await open(cfg), await open(cfg), await open(cfg)];
    for (const s of stores) expect(s).toBeInstanceOf(PostgresStore);
    const acquired: number[] = [];
    const cs = stores.map((s, i) => {
      const c = coordinate(s, cfg);
      c.onAcquired(() => acquired.push(i));
      return c;
    });
    expect(cs.every((c) => c.alertStateStore !== undefined)).toBe(true);
    const deadline = Date.now() + 5000;
    while (cs.filter((c) => c.leader.isLeader()).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(cs.filter((c) => c.leader.isLeader())).toHaveLength(1);
    const leader = cs.findIndex((c) => c.leader.isLeader());
    expect(acquired).toEqual([leader]);
    // A clean stop hands over: another replica acquires within a renewal period or two.
    await cs[leader]!.stop();
    const handover = Date.now() + 3000;
    while (cs.filter((c) => c.leader.isLeader()).length === 0 && Date.now() < handover) await new Promise((r) => setTimeout(r, 20));
    const next = cs.findIndex((c) => c.leader.isLeader());
    expect(next).not.toBe(-1);
    expect(next).not.toBe(leader);
    expect(acquired).toEqual([leader, next]);
  });

  it('deletes in bounded batches and still removes everything due', async () => {
    const url = await pg.server().createDatabase();
    const store = await PostgresStore.open({ url, pruneBatch: 7 });
    pg.defer(() => store.close());
    const pool = store.connectionPool;
    // Inserted directly into day 10 (its partition made here): 30 events before the bound (noon) and 5 after it.
    // The bound's day is deleted from in batches (5 batches of 7), not dropped; the day before goes whole.
    const day = 86_400_000;
    await pool.query(`CREATE TABLE IF NOT EXISTS events_d9 PARTITION OF events FOR VALUES FROM (${9 * day}) TO (${10 * day});
      CREATE TABLE IF NOT EXISTS events_d10 PARTITION OF events FOR VALUES FROM (${10 * day}) TO (${11 * day})`);
    await pool.query(`INSERT INTO events (key, kind, hook, time_ms, sizes_known, status, attrs)
      SELECT i, 1, 1, ${10 * day} + i * 60000, 0, 4, 1 FROM generate_series(1, 30) AS i
      UNION ALL SELECT i, 1, 1, ${10 * day + day / 2} + i * 60000, 0, 4, 1 FROM generate_series(31, 35) AS i
      UNION ALL SELECT i, 1, 1, ${9 * day} + i * 60000, 0, 4, 1 FROM generate_series(36, 40) AS i`);
    const r = await store.prune(10 * day + day / 2, 10 * day + day / 2);
    expect(r.events).toBe(35);
    expect((await pool.query('SELECT count(*)::int AS n FROM events')).rows[0]).toEqual({ n: 5 });
    expect((await pool.query(`SELECT count(*)::int AS n FROM pg_class WHERE relname IN ('events_d9', 'events_d10')`)).rows[0]).toEqual({ n: 1 });
  });
});

describe('openStoreWhenReachable with its wait given up', () => {
  it('rejects at once while another replica holds the migration lock, and the attempt that takes it afterwards changes nothing', async () => {
    const url = await pg.server().createDatabase();
    const migrating = new pgClient.Client({ connectionString: url });
    await migrating.connect();
    pg.defer(() => migrating.end());
    await migrating.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const connections = async (): Promise<number> => (await queryOnce<{ n: number }>(url, `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'hookwatch'`))[0]!.n;
    const wait = new StoreWait();
    const opening = openStoreWhenReachable(config({ HOOKWATCH_DB: url }), { logger: silentLogger, wait });
    opening.catch(() => {});
    await waitFor('the attempt asking for the migration lock', async () => ((await connections()) > 0 ? true : undefined), 10_000);
    expect(wait.giveUp()).toBe(true);
    await expect(opening).rejects.toBeInstanceOf(StoreWaitGivenUpError);
    // The attempt goes on by itself: it takes the lock within its poll (0.5 s) and stops there, its connections closed.
    await migrating.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    await waitFor('the attempt left running to end', async () => ((await connections()) === 0 ? true : undefined), 10_000);
    expect(await queryOnce<{ t: string | null }>(url, `SELECT to_regclass('schema_migrations')::text AS t`)).toEqual([{ t: null }]);
  });

  it('refuses to give up once the migration lock is held: the start migrates and opens', async () => {
    const url = await pg.server().createDatabase();
    const wait = new StoreWait();
    const store = await openStoreWhenReachable(config({ HOOKWATCH_DB: url }), { logger: silentLogger, wait });
    pg.defer(() => store.close());
    expect(wait.giveUp()).toBe(false);
    expect(await (store as PostgresStore).schemaVersion()).toBeGreaterThan(0);
  });
});

describe('openStoreWhenReachable while the database is out of reach', () => {
  /** The fields of each line with this message and level. */
  const fieldsOf = (lines: readonly Logged[], level: string, msg: string): Record<string, unknown>[] =>
    lines.filter((l) => l.level === level && l.msg.startsWith(`${msg} {`)).map((l) => JSON.parse(l.msg.slice(msg.length + 1)) as Record<string, unknown>);

  it('logs the first failure at once, then at most once per 10 s with the attempts since, each attempt at debug', async () => {
    // A port nothing listens on: every attempt is refused at once.
    const url = `postgres://hookwatch:out-of-reach-pw@127.0.0.1:${await freePort()}/hookwatch`;
    const { logger, lines } = recordingLogger();
    const wait = new StoreWait();
    const opening = openStoreWhenReachable(config({ HOOKWATCH_DB: url }), { logger, wait });
    opening.catch(() => {});
    // Requests waiting for the store all along (OpeningIntake tells the wait of each): an attempt about every second.
    const hurrying = setInterval(() => wait.hurry(), 50);
    try {
      await new Promise((r) => setTimeout(r, 11_500));
    } finally {
      clearInterval(hurrying);
    }
    const warned = fieldsOf(lines, 'warn', 'postgres not reachable at start; trying again');
    const attempts = fieldsOf(lines, 'debug', 'postgres start attempt failed');
    // Hurried: about one a second, not the 0.5, 1, 2, 4 s of the backoff (which would make 5 in this time).
    expect(attempts.length).toBeGreaterThanOrEqual(9);
    expect(attempts[0]).toMatchObject({ attempt: 1, retryWithinMs: 500, err: expect.stringContaining('ECONNREFUSED') });
    // Each pause is bounded as the backoff says; waiting requests only shorten it.
    expect(attempts.map((a) => a['retryWithinMs'])).toEqual([500, 1000, 2000, 4000, 8000, ...Array<number>(attempts.length - 5).fill(10_000)]);
    // The first at once, the next 10 s later with the attempts that failed since.
    expect(warned).toHaveLength(2);
    expect(warned[0]).toEqual({ attempt: 1, attempts: 1, err: expect.stringContaining('ECONNREFUSED') });
    expect(warned[1]).toMatchObject({ attempt: 1 + (warned[1]!['attempts'] as number) });
    expect(warned[1]!['attempts']).toBeGreaterThanOrEqual(8);
    // Given up: what was held back is written, every failed attempt counted once.
    wait.giveUp();
    await expect(opening).rejects.toBeInstanceOf(StoreWaitGivenUpError);
    const all = fieldsOf(lines, 'warn', 'postgres not reachable at start; trying again');
    expect(all.reduce((n, w) => n + (w['attempts'] as number), 0)).toBe(fieldsOf(lines, 'debug', 'postgres start attempt failed').length);
    expect(lines.map((l) => l.msg).join('\n')).not.toContain('out-of-reach-pw');
  }, 30_000);
});
