/**
 * The compact event layout on databases written before it: a database laid out by the previous migrations and
 * filled the way the previous version wrote events is opened by the store, which migrates it in place. Every
 * event is still counted once, filters and breakdowns still answer right, a batch retried after the upgrade is
 * not stored twice. Then PostgreSQL's daily event partitions: retention drops whole days, an event for a day
 * without a partition is stored.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_COUNT, hookId } from '../hooks/extract.ts';
import type { HookEvent } from '../hooks/model.ts';
import type { HookCounters } from './model.ts';
import { queryOnce, startTestServer, type TestServer } from '../../test/support/postgres/server.ts';
import { BRIN_PAGES_PER_RANGE, MIGRATIONS as PG_MIGRATIONS, PostgresStore } from './postgres/index.ts';
import { DAY, HOUR, MINUTE } from './segments.ts';
import { DIM_TABLE_NAMES } from './dim-rollups.ts';
import { MIGRATIONS as SQLITE_MIGRATIONS, SqliteStore } from './sqlite/index.ts';
import type { Store } from './store.ts';
import { foldBy, model, strip } from '../../test/support/store-model.ts';
import { PG_UNDO_SIZES_MAY_SUM, sqliteUndoSizesMaySum } from '../../test/support/downgrade.ts';
import { ATTR_ROLLUP_TABLE, COUNT_COLUMNS, ROLLUP_TABLES } from './sql.ts';
import { addEvent, emptyRow, toCounters, totalCounters, type CounterRow } from './counters.ts';

/** Every table of counters rows. */
const COUNTER_TABLES = [...Object.values(ROLLUP_TABLES), ...DIM_TABLE_NAMES, ATTR_ROLLUP_TABLE];

const DIMENSIONS = ['team'];
/** 2026-03-02T00:00:00Z. */
const T0 = Date.UTC(2026, 2, 2);
const HOOKS = [['PostToolUse', 'PostToolUse:Bash'], ['PreToolUse', 'PreToolUse:Edit'], ['Stop', 'Stop:notify']] as const;
const USERS = ['ann@example.com', 'bo@example.com', "o'brien@example.com"];

/** A time-prefixed key as hooks/extract.ts makes them, and its bare hash. */
function keys(timeMs: number, n: number): { dedupKey: string; legacyKey: string } {
  const legacyKey = `h${String(n).padStart(26, '0')}`;
  return { dedupKey: timeMs.toString(36).padStart(9, '0') + legacyKey, legacyKey };
}

/** Events over three days: starts and completes, every status, three users in two teams, three hooks. */
function history(): HookEvent[] {
  return Array.from({ length: 90 }, (_, i) => {
    const [hookEvent, hookName] = HOOKS[i % 3]!;
    const timeMs = T0 + Math.floor(i / 30) * DAY + (i % 30) * 7 * MINUTE;
    const kind = i % 5 === 4 ? 'start' : 'complete';
    const size = kind === 'start' ? null : [100, 9_000, 12_000, null][i % 4]!;
    const status = size === null ? 'unknown' : size > 10_000 ? 'over' : size > 8_000 ? 'near' : 'ok';
    const user = USERS[i % 3]!;
    return {
      kind, ...keys(timeMs, i), hookId: hookId(hookEvent, hookName), hookEvent, hookName, timeMs, receivedMs: timeMs + 1000,
      numHooks: 1, numSuccess: kind === 'complete' ? 1 : null, numBlocking: 0, numNonBlockingError: 0, numCancelled: 0,
      durationMs: 20 + i, stdoutChars: size, additionalContextChars: null, systemMessageChars: null, initialUserMessageChars: null,
      outputsPersisted: size === null ? null : size > 10_000 ? 1 : 0, sizesKnown: size !== null, status,
      serviceName: 'claude-code', serviceVersion: i % 2 ? '2.1.332' : '2.1.300', sessionId: `s-${i % 4}`, userId: `u-${i % 3}`,
      userEmail: user, userAccountUuid: `acc-${i % 3}`, organizationId: 'org-1', terminalType: 'vscode', source: 'otlp',
      extra: { team: user === 'bo@example.com' ? 'web' : 'infra' },
    } satisfies HookEvent;
  });
}

/** What the previous version wrote per event, in its column order (received_ms from its fifth migration on). */
const OLD_COLUMNS = [
  'dedup_key', 'kind', 'hook_id', 'time_ms', 'num_hooks', 'num_success', 'num_blocking', 'num_non_blocking_error',
  'num_cancelled', 'duration_ms', 'stdout_chars', 'additional_context_chars', 'system_message_chars',
  'initial_user_message_chars', 'outputs_persisted', 'sizes_known', 'status', 'service_name', 'service_version',
  'session_id', 'user_id', 'user_email', 'user_account_uuid', 'organization_id', 'terminal_type', 'source', 'extra',
];
function oldValues(e: HookEvent, bareKey: boolean): unknown[] {
  return [
    bareKey ? e.legacyKey : e.dedupKey, e.kind, e.hookId, e.timeMs, e.numHooks, e.numSuccess, e.numBlocking, e.numNonBlockingError,
    e.numCancelled, e.durationMs, e.stdoutChars, e.additionalContextChars, e.systemMessageChars, e.initialUserMessageChars,
    e.outputsPersisted, e.sizesKnown ? 1 : 0, e.status, e.serviceName, e.serviceVersion, e.sessionId, e.userId, e.userEmail,
    e.userAccountUuid, e.organizationId, e.terminalType, e.source, JSON.stringify(e.extra),
  ];
}
const OLD_HOOK = 'INSERT INTO hooks (hook_id, hook_event, hook_name, first_seen, last_seen) VALUES ';

/** What the migrated store must answer: the old events, once each, through filters and breakdowns. */
async function checkUpgraded(store: Store, events: HookEvent[]): Promise<void> {
  const range = { fromMs: T0, toMs: T0 + 3 * DAY };
  // A filter every event matches: read from the raw events, each counted once.
  expect(strip(await store.hookCounters({ ...range, filters: { 'hookwatch.source': 'otlp' } }))).toEqual(model(events, range.fromMs, range.toMs));
  expect(strip(await store.hookCounters({ ...range, filters: { team: 'web' } }))).toEqual(model(events, range.fromMs, range.toMs, (e) => e.extra['team'] === 'web'));
  expect(strip(await store.hookCounters({ ...range, filters: { 'user.email': "o'brien@example.com", 'service.version': '2.1.332' } })))
    .toEqual(model(events, range.fromMs, range.toMs, (e) => e.userEmail === "o'brien@example.com" && e.serviceVersion === '2.1.332'));
  const hook = events[0]!.hookId;
  const byUser = await store.breakdown(hook, 'user.email', range);
  for (const user of USERS) {
    const want = model(events, range.fromMs, range.toMs, (e) => e.userEmail === user).get(hook);
    expect(byUser.find((r) => r.value === user)?.executions, user).toBe(want?.executions);
  }
  // Whole days by session and by user: from the rollup per attribute set, filled from the old events by the migration.
  for (const [h] of HOOKS) {
    const id = events.find((e) => e.hookEvent === h)!.hookId;
    for (const [dim, key] of [['session.id', (e: HookEvent) => e.sessionId], ['user.id', (e: HookEvent) => e.userId]] as const) {
      const want = new Map<string, HookCounters>();
      for (const v of new Set(events.filter((e) => e.hookId === id).map(key))) want.set(v, model(events, range.fromMs, range.toMs, (e) => key(e) === v).get(id)!);
      expect(new Map((await store.breakdown(id, dim, range)).map(({ value, ...c }) => [value, c])), `${h} by ${dim}`).toEqual(want);
    }
  }
  const series = await store.series(hook, { ...range, stepMs: DAY, filters: { team: 'infra' } });
  expect([...series.values()].reduce((n, c) => n + c.executions, 0)).toBe(model(events, range.fromMs, range.toMs, (e) => e.extra['team'] === 'infra').get(hook)?.executions);
  // Persisted outputs keep their arrival time.
  const late = await store.latePersisted({ receivedFromMs: T0, receivedToMs: T0 + 3 * DAY, eventBeforeMs: T0 + 3 * DAY });
  expect([...late.values()].reduce((n, a) => n + a.outputsPersisted, 0)).toBe(events.filter((e) => (e.outputsPersisted ?? 0) > 0 && e.kind === 'complete').length);

  // The same batch retried after the upgrade (now with time-prefixed keys): nothing stored twice.
  const retry = await store.ingest(events);
  expect(retry.inserted).toEqual([]);
  expect(retry.duplicates).toBe(events.length);
  // New events are stored next to the migrated ones.
  const fresh = { ...events[1]!, ...keys(T0 + 2 * DAY + 5 * MINUTE, 1000), timeMs: T0 + 2 * DAY + 5 * MINUTE };
  expect((await store.ingest([fresh])).inserted).toHaveLength(1);
  expect(strip(await store.hookCounters({ ...range, filters: { team: fresh.extra['team']! } })))
    .toEqual(model([...events, fresh], range.fromMs, range.toMs, (e) => e.extra['team'] === fresh.extra['team']));
}

describe('upgrade to the compact event layout: SQLite', () => {
  let dir = '';
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'hookwatch-upgrade-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('migrates a database written by the previous layout in place', async () => {
    const path = join(dir, 'old.db');
    const events = history();
    const db = new DatabaseSync(path);
    db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
    const apply = (v: number): void => {
      db.exec(SQLITE_MIGRATIONS[v - 1] as string);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(v, Date.now());
    };
    const insert = (e: HookEvent, bareKey: boolean): void => {
      const cols = bareKey ? OLD_COLUMNS : [...OLD_COLUMNS, 'received_ms'];
      const values = bareKey ? oldValues(e, true) : [...oldValues(e, false), e.receivedMs];
      db.prepare(`INSERT INTO events (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`).run(...(values as SQLInputValue[]));
      db.prepare(`${OLD_HOOK} (?, ?, ?, ?, ?) ON CONFLICT (hook_id) DO UPDATE SET last_seen = MAX(last_seen, excluded.last_seen)`).run(e.hookId, e.hookEvent, e.hookName, e.timeMs, e.timeMs);
    };
    // The first event was stored under its bare hash, before keys began with the event time (migration 2).
    apply(1);
    insert(events[0]!, true);
    for (let v = 2; v <= 5; v++) apply(v);
    for (const e of events.slice(1)) insert(e, false);
    db.close();

    const store = new SqliteStore({ path, synchronous: 'normal', dimensions: DIMENSIONS });
    try {
      await checkUpgraded(store, events);
    } finally {
      await store.close();
    }
    const after = new DatabaseSync(path);
    expect(after.prepare('SELECT MAX(version) AS v FROM schema_migrations').get()).toEqual({ v: SQLITE_MIGRATIONS.length });
    // Sessions share their attribute tuple: far fewer sets than events.
    expect(Number((after.prepare('SELECT COUNT(*) AS n FROM attr_sets').get() as { n: number }).n)).toBeLessThan(events.length / 4);
    // The time index carries each event's set, so a filter across hooks is tested in the index.
    expect((after.prepare("SELECT name FROM pragma_index_info('events_time') ORDER BY seqno").all() as { name: string }[]).map((c) => c.name)).toEqual(['time_ms', 'attrs']);
    after.close();
  });
});

describe('PostgreSQL: upgrade to the compact event layout, and daily event partitions', () => {
  let server: TestServer;
  const stores: Store[] = [];
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await server.stop();
  });
  const open = async (url: string, opts: { maxHooks?: number; boundsRefreshMs?: number } = {}): Promise<PostgresStore> => {
    const s = await PostgresStore.open({ url, dimensions: DIMENSIONS, poolSize: 3, ...opts });
    stores.push(s);
    return s;
  };
  const partitions = async (c: pg.Client | pg.Pool): Promise<string[]> =>
    (await c.query<{ n: string }>(`SELECT c.relname AS n FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass ORDER BY 1`)).rows.map((r) => r.n);

  /**
   * A database the previous versions wrote: the old layout's rows (the first event before keys began with the
   * event time), then the migrations after 7 up to `upTo` applied as those versions did.
   */
  const writePrevious = async (url: string, events: HookEvent[], upTo = 7): Promise<void> => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())');
      const apply = async (v: number): Promise<void> => {
        await c.query(PG_MIGRATIONS[v - 1] as string);
        await c.query('INSERT INTO schema_migrations (version) VALUES ($1)', [v]);
      };
      const insert = async (e: HookEvent, bareKey: boolean): Promise<void> => {
        const cols = bareKey ? OLD_COLUMNS : [...OLD_COLUMNS, 'received_ms'];
        const values = bareKey ? oldValues(e, true) : [...oldValues(e, false), e.receivedMs];
        await c.query(`INSERT INTO events (${cols.join(', ')}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')})`, values);
        await c.query(`${OLD_HOOK} ($1, $2, $3, $4, $4) ON CONFLICT (hook_id) DO UPDATE SET last_seen = GREATEST(hooks.last_seen, excluded.last_seen)`, [e.hookId, e.hookEvent, e.hookName, e.timeMs]);
      };
      // Migration 3 began keys with the event time; the first event was stored before it.
      for (let v = 1; v <= 2; v++) await apply(v);
      await insert(events[0]!, true);
      for (let v = 3; v <= 7; v++) await apply(v);
      for (const e of events.slice(1)) await insert(e, false);
      for (let v = 8; v <= upTo; v++) await apply(v);
    } finally {
      await c.end();
    }
  };
  /** The indexes of the events table (partitioned) and of each of its partitions: name and definition. */
  const eventIndexes = async (c: pg.Pool): Promise<Map<string, { name: string; def: string }[]>> => {
    const r = await c.query<{ t: string; i: string; def: string }>(
      `SELECT t.relname AS t, i.relname AS i, pg_get_indexdef(i.oid) AS def FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid
       WHERE t.relname = 'events' OR t.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'events'::regclass) ORDER BY 1, 2`,
    );
    const out = new Map<string, { name: string; def: string }[]>();
    for (const row of r.rows) out.set(row.t, [...(out.get(row.t) ?? []), { name: row.i, def: row.def }]);
    return out;
  };

  it('migrates a database written by the previous layout in place, a partition per day it holds', async () => {
    const url = await server.createDatabase();
    const events = history();
    await writePrevious(url, events);
    const store = await open(url);
    expect(await store.schemaVersion()).toBe(PG_MIGRATIONS.length);
    const days = await partitions(store.connectionPool);
    for (let d = 0; d < 3; d++) expect(days).toContain(`events_d${Math.floor(T0 / DAY) + d}`);
    await checkUpgraded(store, events);
  });

  it('migrates a database holding events stamped before 1970, which versions before the compact layout stored as sent', async () => {
    const url = await server.createDatabase();
    // 1969-12-29T01:00Z, 1969-12-30T23:55Z and the last millisecond of 1969 (an event.timestamp such versions took
    // as it was), beside the days of 2026.
    const events = history().map((e, i) => {
      const timeMs = [-3 * DAY + HOUR, -DAY - 5 * MINUTE, -1][i - 1];
      return timeMs === undefined ? e : { ...e, ...keys(timeMs, i), timeMs, receivedMs: T0 };
    });
    await writePrevious(url, events);
    const store = await open(url);
    expect(await store.schemaVersion()).toBe(PG_MIGRATIONS.length);
    // Each in the partition of its own day.
    const days = await partitions(store.connectionPool);
    expect(days.filter((d) => d.startsWith('events_d-'))).toEqual(['events_d-1', 'events_d-2', 'events_d-3']);
    const old = { fromMs: -4 * DAY, toMs: 0 };
    // The previous layout kept no rollups here: filters read the raw events, a dimension's rollups folded from them.
    for (const filters of [{ 'hookwatch.source': 'otlp' }, { team: 'web' }, { 'user.id': 'u-1' }] as Record<string, string>[]) {
      const keep = (e: HookEvent): boolean => ('team' in filters ? e.extra['team'] === 'web' : 'user.id' in filters ? e.userId === 'u-1' : true);
      expect(strip(await store.hookCounters({ ...old, filters })), JSON.stringify(filters)).toEqual(model(events, old.fromMs, old.toMs, keep));
      // Hour by hour: where each event falls.
      for (const id of new Set(events.slice(1, 4).map((e) => e.hookId))) {
        const got = await store.series(id, { ...old, stepMs: HOUR, filters });
        expect(got, `${id} ${JSON.stringify(filters)}`).toEqual(foldBy(events, old.fromMs, old.toMs, (e) => Math.floor(e.timeMs / HOUR) * HOUR, (e) => e.hookId === id && keep(e)));
      }
    }
    await checkUpgraded(store, events);
  });

  it('moves the events from a unique (time_ms, key) and a (hook, time_ms) index to one unique (hook, time_ms, key) and a BRIN on time_ms', async () => {
    const url = await server.createDatabase();
    const events = history();
    // The compact layout (migration 9) as the previous version left it.
    await writePrevious(url, events, 9);
    const store = await open(url);
    expect(await store.schemaVersion()).toBe(PG_MIGRATIONS.length);
    const day0 = Math.floor(T0 / DAY);
    // Answers the same, and the batch re-sent after the upgrade is not stored twice.
    await checkUpgraded(store, events);
    // A day's partition made at ingest after the upgrade carries the same indexes.
    const later = { ...events[1]!, ...keys(T0 + 5 * DAY, 3000), timeMs: T0 + 5 * DAY };
    expect((await store.ingest([later])).inserted).toHaveLength(1);
    const indexes = await eventIndexes(store.connectionPool);
    expect(indexes.get('events')?.map((i) => i.name)).toEqual(['events_arrival', 'events_hook_time_key', 'events_late_arrival', 'events_over_arrival', 'events_time']);
    for (const d of [day0, day0 + 1, day0 + 2, day0 + 5]) {
      const defs = (indexes.get(`events_d${d}`) ?? []).map((i) => i.def.replace(/^.* USING /, ''));
      expect(defs.sort(), `events_d${d}`).toEqual([
        `brin (time_ms) WITH (pages_per_range='${BRIN_PAGES_PER_RANGE}', autosummarize='on')`,
        'btree (hook, time_ms, key) WITH (fillfactor=\'100\')',
        'btree (received_ms) WHERE (received_ms > (time_ms + 300000))',
        'btree (received_ms) WHERE (received_ms IS NOT NULL)',
        'btree (received_ms) WHERE (status = 1)',
      ]);
      expect(indexes.get(`events_d${d}`)?.find((i) => i.def.includes('(hook, time_ms, key)'))?.def).toMatch(/^CREATE UNIQUE INDEX/);
    }
  });

  /** The declared type of each column of `table` that `columns` names. */
  const columnTypes = async (c: pg.Pool, table: string, columns: readonly string[]): Promise<Record<string, string>> => {
    const r = await c.query<{ c: string; t: string }>('SELECT column_name AS c, data_type AS t FROM information_schema.columns WHERE table_name = $1 AND column_name = ANY($2)', [table, columns]);
    return Object.fromEntries(r.rows.map((x) => [x.c, x.t]));
  };

  it('narrows counts and sizes to 4 bytes and the key to 8 in place: a retry still finds its event, a count above 2^31 - 1 an earlier version took is kept as 2^31 - 1', async () => {
    const url = await server.createDatabase();
    const events = history();
    // The layout of the version before (migration 11), with one duration only the earlier bound (2^32 - 1) let in.
    await writePrevious(url, events, 11);
    await queryOnce(url, `UPDATE events SET duration_ms = 3000000000 WHERE (hook, time_ms, key) = (SELECT hook, time_ms, key FROM events WHERE kind = 1 ORDER BY time_ms LIMIT 1)`);
    const store = await open(url);
    const pool = store.connectionPool;
    expect(await columnTypes(pool, 'events', [...COUNT_COLUMNS, 'key'])).toEqual({ ...Object.fromEntries(COUNT_COLUMNS.map((col) => [col, 'integer'])), key: 'bigint' });
    expect(await columnTypes(pool, `events_d${Math.floor(T0 / DAY)}`, ['key', 'stdout_chars'])).toEqual({ key: 'bigint', stdout_chars: 'integer' });
    for (const t of ['rollup_1m', 'rollup_1h', 'rollup_1d', ...DIM_TABLE_NAMES, 'rollup_attrs_1h']) {
      expect(await columnTypes(pool, t, ['max_stdout', 'lmax_stdout', 'duration_max', 'sum_stdout', 'executions']), t).toEqual({ max_stdout: 'integer', lmax_stdout: 'integer', duration_max: 'integer', sum_stdout: 'bigint', executions: 'bigint' });
    }
    expect((await pool.query<{ m: number }>('SELECT MAX(duration_ms) AS m FROM events')).rows[0]?.m).toBe(MAX_COUNT);
    // Every event, the one stored under its bare key before keys began with the event time included, is found
    // under its converted key: nothing sent again is stored twice.
    expect((await store.ingest(events)).inserted).toEqual([]);
    expect((await pool.query<{ n: number }>('SELECT COUNT(*)::int AS n FROM events')).rows[0]?.n).toBe(events.length);
  });

  it('stores counts and sizes up to 2^31 - 1 and answers the largest exactly, from the raw events and the rollups alike', async () => {
    const store = await open(await server.createDatabase());
    const base = history()[0]!;
    // Recent, so a range of a few minutes is read from the raw events (older ones resolve to whole hours).
    const t0 = Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR;
    const big = Array.from({ length: 3 }, (_, i) => ({
      ...base, ...keys(t0 + i * MINUTE, 5000 + i), timeMs: t0 + i * MINUTE, kind: 'complete' as const, numHooks: 2, numSuccess: MAX_COUNT,
      durationMs: MAX_COUNT, stdoutChars: MAX_COUNT, additionalContextChars: 0, outputsPersisted: 1, sizesKnown: true, status: 'over' as const,
    }));
    expect((await store.ingest(big)).inserted).toHaveLength(3);
    const hour = { fromMs: t0, toMs: t0 + HOUR };
    const range = { fromMs: t0, toMs: t0 + 10 * MINUTE };
    // From the hour rollups, the rollup per attribute set, and the raw events (a few minutes under a user filter).
    const filters = { 'user.email': base.userEmail };
    for (const got of [await store.hookCounters(hour), await store.hookCounters({ ...hour, filters }), await store.hookCounters({ ...range, filters })]) {
      const c = got.get(base.hookId)!;
      expect(c.maxChars.stdout).toBe(MAX_COUNT);
      expect(c.maxCharsLowerBound.stdout).toBe(Math.ceil(MAX_COUNT / 2));
      expect(c.sumChars.stdout).toBe(3 * MAX_COUNT);
      expect(c.success).toBe(3 * MAX_COUNT);
      expect(c.durationMsMax).toBe(MAX_COUNT);
      expect(c.blocking).toBe(0);
    }
    for (const q of [hour, range]) {
      const rows = await store.breakdown(base.hookId, 'user.email', q);
      expect(rows.map((r) => [r.value, r.maxCharsLowerBound.stdout, r.success])).toEqual([[base.userEmail, Math.ceil(MAX_COUNT / 2), 3 * MAX_COUNT]]);
    }
    // The rollups' counts that are 0 take no bytes: NULL in the row, 0 in every answer above.
    const r = await store.connectionPool.query<{ n: number; z: number }>('SELECT COUNT(*)::int AS n, COUNT(*) FILTER (WHERE blocking IS NULL AND cancelled IS NULL)::int AS z FROM rollup_1h');
    expect(r.rows[0]).toEqual({ n: 1, z: 1 });
  });

  it('retention rebuilds the unique index of each finished day once, packed', async () => {
    const store = await open(await server.createDatabase());
    const events = history();
    await store.ingest(events);
    const day0 = Math.floor(T0 / DAY);
    const files = async (): Promise<Map<string, number>> => {
      const r = await store.connectionPool.query<{ i: string; f: string }>(
        `SELECT c.relname AS i, c.relfilenode::text AS f FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid WHERE h.inhparent = 'events_hook_time_key'::regclass`,
      );
      return new Map(r.rows.map((x) => [x.i, Number(x.f)]));
    };
    const before = await files();
    await store.prune(T0 - DAY, T0 - DAY);
    const after = await files();
    // Days 0..2 are long over: rebuilt (a new file); today's and the days ahead are still written to.
    const today = Math.floor(Date.now() / DAY);
    for (const [name, file] of after) {
      const day = Number(/^events_d(\d+)_/.exec(name)?.[1]);
      if (day >= day0 && day <= day0 + 2) expect(file, name).not.toBe(before.get(name));
      if (day >= today) expect(file, name).toBe(before.get(name));
    }
    // Once: the next run leaves them.
    await store.prune(T0 - DAY, T0 - DAY);
    expect(await files()).toEqual(after);
    expect((await store.ingest(events)).inserted).toEqual([]);
  });

  it('retention rebuilds a finished day\'s index again once late events have grown it, and the rollup indexes grown past their packed size', { timeout: 120_000 }, async () => {
    const store = await open(await server.createDatabase());
    const pool = store.connectionPool;
    const base = history()[0]!;
    const day = `events_d${Math.floor(T0 / DAY)}`;
    // A day of events across 20 hooks, every 5 s, each in a session of its own; `offset` puts a second delivery
    // between them, in the middle of each hook's entries (late events, a backfill).
    const dayOf = (offset: number, n0: number): HookEvent[] => Array.from({ length: 16_000 }, (_, i) => {
      const timeMs = T0 + i * 5000 + offset;
      return { ...base, ...keys(timeMs, n0 + i), timeMs, hookEvent: 'PostToolUse', hookName: `PostToolUse:h${i % 20}`, hookId: hookId('PostToolUse', `PostToolUse:h${i % 20}`), sessionId: `s-${n0 + i}` };
    });
    const files = async (): Promise<Map<string, string>> => new Map((await pool.query<{ i: string; f: string }>(
      `SELECT c.relname AS i, c.relfilenode::text AS f FROM pg_class c WHERE c.relname = ANY($1) OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'events_hook_time_key'::regclass)`,
      [['rollup_attrs_1h_pkey', 'rollup_1h_pkey']],
    )).rows.map((r) => [r.i, r.f]));
    const dayIndex = (m: Map<string, string>): string | undefined => [...m].find(([name]) => name.startsWith(`${day}_`))?.[1];
    const share = async (idx: string): Promise<number | undefined> => {
      const v = (await pool.query<{ value: string }>('SELECT value FROM store_meta WHERE key = $1', [`index_packed_share:${idx}`])).rows[0]?.value;
      return v === undefined ? undefined : Number(v);
    };
    /** The share of the day's partition its unique index takes now. */
    const dayShare = async (): Promise<number | undefined> => (await pool.query<{ s: number }>(`SELECT pg_relation_size(x.indexrelid)::float / pg_relation_size(x.indrelid) AS s FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid WHERE c.relname = $1 AND x.indisunique`, [day])).rows[0]?.s;
    expect((await store.ingest(dayOf(0, 10_000))).inserted).toHaveLength(16_000);
    const written = await files();
    await store.prune(T0 - DAY, T0 - DAY);
    const packed = await files();
    // The finished day packed once, its share noted; the rollup index big enough to matter rebuilt and noted too.
    expect(dayIndex(packed)).not.toBe(dayIndex(written));
    const dayIndexName = [...packed.keys()].find((name) => name.startsWith(`${day}_`))!;
    const eventsShare = await share(dayIndexName);
    expect(eventsShare).toBeGreaterThan(0.2);
    expect(eventsShare).toBeLessThan(0.5);
    expect(packed.get('rollup_attrs_1h_pkey')).not.toBe(written.get('rollup_attrs_1h_pkey'));
    expect(await share('rollup_attrs_1h_pkey')).toBeGreaterThan(0);
    // Nothing grew: the next run rebuilds nothing.
    await store.prune(T0 - DAY, T0 - DAY);
    expect(await files()).toEqual(packed);
    // As many events again into the finished day, between the others: its index grows past its packed share and
    // is rebuilt again, and every event is still there once.
    expect((await store.ingest(dayOf(2500, 50_000))).inserted).toHaveLength(16_000);
    const grown = await dayShare();
    expect(grown).toBeGreaterThan(eventsShare! * 1.3);
    await store.prune(T0 - DAY, T0 - DAY);
    const again = await files();
    expect(dayIndex(again)).not.toBe(dayIndex(packed));
    const after = await dayShare();
    expect(after).toBeLessThan(eventsShare! * 1.3);
    expect((await store.ingest(dayOf(0, 10_000))).inserted).toEqual([]);
    expect((await pool.query<{ n: number }>('SELECT COUNT(*)::int AS n FROM events')).rows[0]?.n).toBe(32_000);
  });

  it('retention drops the invalid indexes an interrupted rebuild leaves, and no other index', async () => {
    const store = await open(await server.createDatabase());
    await store.ingest(history());
    const day = `events_d${Math.floor(T0 / DAY)}`;
    const pool = store.connectionPool;
    // What REINDEX CONCURRENTLY leaves when cut short: an invalid copy named _ccnew (here made invalid by a
    // unique build that fails), and the same for _ccold. An invalid index of the user's own stays.
    for (const name of [`${day}_hook_time_ms_key_idx_ccnew`, `${day}_hook_time_ms_key_idx_ccold`, `${day}_mine`]) {
      await expect(pool.query(`CREATE UNIQUE INDEX CONCURRENTLY ${name} ON ${day} (kind)`)).rejects.toThrow(/duplicate key|could not create unique index/);
    }
    // The same left by a rollup index's rebuild.
    await expect(pool.query('CREATE UNIQUE INDEX CONCURRENTLY rollup_1h_pkey_ccnew ON rollup_1h (service_name)')).rejects.toThrow(/duplicate key|could not create unique index/);
    const invalid = async (): Promise<string[]> => (await pool.query<{ n: string }>(
      `SELECT c.relname AS n FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid WHERE NOT x.indisvalid ORDER BY 1`,
    )).rows.map((r) => r.n);
    expect(await invalid()).toEqual([`${day}_hook_time_ms_key_idx_ccnew`, `${day}_hook_time_ms_key_idx_ccold`, `${day}_mine`, 'rollup_1h_pkey_ccnew']);
    await store.prune(T0 - DAY, T0 - DAY);
    expect(await invalid()).toEqual([`${day}_mine`]);
  });

  it('retention drops whole days of events and deletes only inside the day holding the bound', async () => {
    const store = await open(await server.createDatabase());
    const events = history();
    await store.ingest(events);
    const day0 = Math.floor(T0 / DAY);
    // Bound: the third day at 01:00; days 1 and 2 go whole, the third keeps what is after 01:00.
    const bound = T0 + 2 * DAY + HOUR;
    const r = await store.prune(bound, bound);
    expect(r.events).toBe(events.filter((e) => e.timeMs < bound).length);
    const days = await partitions(store.connectionPool);
    expect(days).not.toContain(`events_d${day0}`);
    expect(days).not.toContain(`events_d${day0 + 1}`);
    expect(days).toContain(`events_d${day0 + 2}`);
    const left = events.filter((e) => e.timeMs >= bound);
    // Read from the raw events (user.* is never rolled up): the rollups went with the same bound, whole days too.
    const ann = (e: HookEvent): boolean => e.userEmail === USERS[0];
    expect(strip(await store.hookCounters({ fromMs: T0, toMs: T0 + 3 * DAY, filters: { 'user.email': USERS[0]! } }))).toEqual(model(left, T0, T0 + 3 * DAY, ann));
    // A late event for a dropped day is not stored: retention has passed it (a replica that has not heard of the
    // prune yet makes its partition anew, below).
    const late = { ...events[0]!, ...keys(T0 + 5 * MINUTE, 2000), timeMs: T0 + 5 * MINUTE };
    expect(await store.ingest([late])).toMatchObject({ inserted: [], expired: 1 });
    expect(await partitions(store.connectionPool)).not.toContain(`events_d${day0}`);
  });

  it('holds store.maxHooks on a replica whose known hooks another replica\'s retention removed', async () => {
    const url = await server.createDatabase();
    // a trusts what it read of the bounds for no time at all: the case of a batch coming boundsRefreshMs later.
    const a = await open(url, { maxHooks: 2, boundsRefreshMs: 0 });
    const b = await open(url, { maxHooks: 2 });
    const now = Date.now();
    const h1 = (t: number, n: number): HookEvent => ({ ...history()[0]!, ...keys(t, n), timeMs: t, hookId: hookId('Stop', 'Stop:h1'), hookEvent: 'Stop', hookName: 'Stop:h1' });
    const h = (name: string, n: number): HookEvent => ({ ...history()[0]!, ...keys(now, n), timeMs: now, hookId: hookId('Stop', name), hookEvent: 'Stop', hookName: name });
    await a.ingest([h1(now - 10 * DAY, 1), h('Stop:h2', 2)]);
    // Seen again, Stop:h1 is among the hooks a knows to exist.
    await a.ingest([h1(now - 10 * DAY + MINUTE, 5)]);
    // Retention on b removes Stop:h1 (nothing left of it), and b admits Stop:h3 in its place.
    expect((await b.prune(now - 5 * DAY, now - 5 * DAY)).hooks).toBe(1);
    expect((await b.ingest([h('Stop:h3', 3)])).folded ?? 0).toBe(0);
    // a once knew Stop:h1 exists; its new event must be counted against the limit, not let in as known.
    expect((await a.ingest([h1(now, 4)])).folded).toBe(1);
    const count = await a.connectionPool.query<{ n: string }>("SELECT COUNT(*) AS n FROM hooks WHERE hook_name NOT LIKE '%(overflow)'");
    expect(Number(count.rows[0]?.n)).toBe(2);
  });

  it('stores an event for a day with no partition yet; one for a day another replica dropped meanwhile is expired there too', async () => {
    const url = await server.createDatabase();
    const a = await open(url);
    const b = await open(url);
    const old = Date.UTC(2020, 0, 15, 12);
    const first = { ...history()[0]!, ...keys(old, 1), timeMs: old };
    expect((await a.ingest([first])).inserted).toHaveLength(1);
    expect(await partitions(a.connectionPool)).toContain(`events_d${Math.floor(old / DAY)}`);
    // Retention on the other replica drops the day; this replica still believes it has its partition, and has
    // not read the new bounds yet: an old event makes it read them before it writes, so neither a retry of the
    // first event nor another event of that day is stored (the first's copy is gone: it could not be told apart).
    expect((await b.prune(old + DAY, old + DAY)).events).toBe(1);
    expect(await partitions(a.connectionPool)).not.toContain(`events_d${Math.floor(old / DAY)}`);
    const second = { ...first, ...keys(old + MINUTE, 2), timeMs: old + MINUTE };
    expect(await a.ingest([first, second])).toMatchObject({ inserted: [], expired: 2 });
    expect(await partitions(a.connectionPool)).not.toContain(`events_d${Math.floor(old / DAY)}`);
  });
});

/**
 * The count of executions whose sizes may be sums (SQLite migration 15, PostgreSQL 20) on a database the previous
 * schema holds: written by this version, then taken back (the column out of every counters table, the migration
 * not applied), as the release before it left it. The migration adds the column in place; the rows written before
 * read 0, and their sizes read as the commands run against the executions tell; what arrives after counts.
 */
describe('the count of executions whose sizes may be sums on a database of the previous schema', () => {
  const HOOK: [string, string] = ['PreToolUse', 'PreToolUse:Mixed'];
  /** One execution of two commands and one that did not say how many it ran, both with sizes, at `timeMs`. */
  const mixed = (timeMs: number, n: number): HookEvent[] => [2, null].map((numHooks, i) => {
    const [hookEvent, hookName] = HOOK;
    return {
      ...history()[1]!, ...keys(timeMs + i * 1000, n + i), hookId: hookId(hookEvent, hookName), hookEvent, hookName, kind: 'complete',
      timeMs: timeMs + i * 1000, receivedMs: timeMs + i * 1000, numHooks, numSuccess: numHooks, stdoutChars: 9_000 - i, outputsPersisted: 0,
      sizesKnown: true, status: 'near',
    } satisfies HookEvent;
  });
  const id = hookId(...HOOK);
  const before = mixed(T0 + HOUR, 5000);
  const after = mixed(T0 + 2 * HOUR, 6000);
  const day = { fromMs: T0, toMs: T0 + DAY };

  /** What the migrated store answers of the mixed hook: the rows before count none, the raw events and the rows after count. */
  const checkMigrated = async (store: Store): Promise<void> => {
    const old = (await store.hookCounters(day)).get(id)!;
    expect([old.executions, old.numHooks, old.sizesMaySumExecutions]).toEqual([2, 2, 0]);
    expect(strip(await store.hookCounters(day)).get(id)).toEqual({ ...model(before, day.fromMs, day.toMs).get(id)!, sizesMaySumExecutions: 0 });
    // Filtered within an hour, answered from the raw events, which the migration did not change: both counted.
    expect((await store.hookCounters({ fromMs: T0 + HOUR, toMs: T0 + HOUR + 10 * MINUTE, filters: { team: 'web' } })).get(id)?.sizesMaySumExecutions).toBe(2);
    expect((await store.ingest(after)).inserted).toHaveLength(2);
    const both = (await store.hookCounters(day)).get(id)!;
    expect([both.executions, both.numHooks, both.sizesMaySumExecutions]).toEqual([4, 4, 2]);
    expect(strip(await store.hookCounters({ fromMs: T0 + 2 * HOUR, toMs: T0 + 3 * HOUR })).get(id)).toEqual(model(after, T0, T0 + DAY).get(id));
    expect((await store.breakdown(id, 'team', day)).map((r) => [r.value, r.sizesMaySumExecutions])).toEqual([['web', 2]]);
  };

  it('SQLite: adds the column to every counters table in place, 0 in the rows written before', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-sizes-may-sum-'));
    try {
      const path = join(dir, 'hookwatch.db');
      const first = new SqliteStore({ path, synchronous: 'normal', dimensions: DIMENSIONS });
      await first.ingest(before);
      await first.close();
      const db = new DatabaseSync(path);
      sqliteUndoSizesMaySum(db);
      db.prepare('DELETE FROM schema_migrations WHERE version >= ?').run(SQLITE_MIGRATIONS.findIndex((m) => m.includes('sizes_may_sum')) + 1);
      db.close();

      const store = new SqliteStore({ path, synchronous: 'normal', dimensions: DIMENSIONS });
      try {
        await checkMigrated(store);
      } finally {
        await store.close();
      }
      const migrated = new DatabaseSync(path, { readOnly: true });
      try {
        expect(migrated.prepare('SELECT MAX(version) AS v FROM schema_migrations').get()).toEqual({ v: SQLITE_MIGRATIONS.length });
        for (const t of COUNTER_TABLES) {
          expect(migrated.prepare(`SELECT "notnull" AS required, dflt_value AS d FROM pragma_table_info('${t}') WHERE name = 'sizes_may_sum'`).get(), t).toEqual({ required: 1, d: '0' });
        }
      } finally {
        migrated.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('PostgreSQL', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer();
    });
    afterAll(async () => {
      await server.stop();
    });

    it('adds the column to every counters table in place, 0 in the rows written before', async () => {
      const url = await server.createDatabase();
      const first = await PostgresStore.open({ url, dimensions: DIMENSIONS, poolSize: 2 });
      await first.ingest(before);
      await first.close();
      await queryOnce(url, `${PG_UNDO_SIZES_MAY_SUM} DELETE FROM schema_migrations WHERE version >= ${PG_MIGRATIONS.findIndex((m) => JSON.stringify(m).includes('sizes_may_sum')) + 1};`);

      const store = await PostgresStore.open({ url, dimensions: DIMENSIONS, poolSize: 2 });
      try {
        expect(await store.schemaVersion()).toBe(PG_MIGRATIONS.length);
        await checkMigrated(store);
      } finally {
        await store.close();
      }
      const cols = await queryOnce<{ t: string; d: string | null; nullable: string }>(url, `SELECT table_name AS t, column_default AS d, is_nullable AS nullable FROM information_schema.columns
        WHERE column_name = 'sizes_may_sum' AND table_schema = current_schema() ORDER BY 1`);
      expect(cols).toEqual([...COUNTER_TABLES].sort().map((t) => ({ t, d: '0', nullable: 'YES' })));
    });

    /**
     * A replica of the previous release beside the migrated schema (a rolling update): it upserts its base rollup
     * rows as that release does (hookwatch c6836358, postgres/index.ts upsertRollups), naming its counter columns
     * only, without sizes_may_sum, in its SET clause too; zero counts as NULL. Its counters are that release's
     * (previousReleaseAddEvent): an execution without num_hooks gives its lower bound of one string.
     */
    const PREVIOUS_SUMS = ['executions', 'starts', 'num_hooks', 'success', 'blocking', 'non_blocking_error', 'cancelled', 'outputs_persisted',
      'executions_with_persisted', 'size_unknown', 'near_executions', 'sum_stdout', 'sum_additional_context', 'sum_system_message', 'sum_initial_user_message', 'duration_sum'];
    const PREVIOUS_MAXES = ['max_stdout', 'max_additional_context', 'max_system_message', 'max_initial_user_message',
      'lmax_stdout', 'lmax_additional_context', 'lmax_system_message', 'lmax_initial_user_message', 'duration_max'];
    const PREVIOUS_COUNT_SUMS = PREVIOUS_SUMS.filter((c) => !c.startsWith('sum_'));
    /**
     * The lower bound of one string the previous release writes (hookwatch c6836358, hooks/cliff.ts
     * singleStringBounds): ceil(sum / num_hooks), an execution without num_hooks counted as one command, so its
     * whole sum. This release's (counters.ts addEvent) is the same with num_hooks sent, none without.
     */
    const previousLowerBound = (sum: number, numHooks: number | null): number => Math.ceil(sum / (numHooks !== null && numHooks > 1 ? numHooks : 1));
    /**
     * An event added to a rollup row as the previous release adds it: as this release, but for the lower bounds.
     * (Its status is the event's: that release made an execution over from its sizes alone only without
     * num_outputs_persisted, which mixed() sends.)
     */
    const previousReleaseAddEvent = (row: CounterRow, e: HookEvent): void => {
      addEvent(row, e);
      if (e.kind === 'start') return;
      const bounds = [['lmax_stdout', e.stdoutChars], ['lmax_additional_context', e.additionalContextChars],
        ['lmax_system_message', e.systemMessageChars], ['lmax_initial_user_message', e.initialUserMessageChars]] as const;
      for (const [c, sum] of bounds) if (sum !== null) row[c] = Math.max(row[c] ?? 0, previousLowerBound(sum, e.numHooks));
    };
    /** The counters of `events` as the previous release's rows hold them. */
    const previousReleaseCounters = (events: readonly HookEvent[]): HookCounters => {
      const row = emptyRow();
      for (const e of events) previousReleaseAddEvent(row, e);
      return toCounters(row);
    };
    const previousReleaseUpsert = async (url: string, events: readonly HookEvent[]): Promise<void> => {
      const e0 = events[0]!;
      const key = [['hook_id', 'text'], ['bucket', 'int8'], ['service_name', 'text'], ['service_version', 'text']] as const;
      const counters = [...PREVIOUS_SUMS, ...PREVIOUS_MAXES];
      const cols = [...key.map(([c]) => c), ...counters];
      const types = [...key.map(([, t]) => t), ...counters.map(() => 'int8')];
      const set = [
        ...PREVIOUS_SUMS.map((c) => `${c} = CASE WHEN excluded.${c} IS NULL THEN t.${c} ELSE COALESCE(t.${c}, 0) + excluded.${c} END`),
        ...PREVIOUS_MAXES.map((c) => `${c} = CASE WHEN excluded.${c} IS NULL THEN t.${c} WHEN t.${c} IS NULL OR excluded.${c} > t.${c} THEN excluded.${c} ELSE t.${c} END`),
      ].join(',\n    ');
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        for (const [table, step] of [[ROLLUP_TABLES.minute, MINUTE], [ROLLUP_TABLES.hour, HOUR], [ROLLUP_TABLES.day, DAY]] as const) {
          const rows = new Map<number, CounterRow>();
          for (const e of events) {
            const bucket = Math.floor(e.timeMs / step) * step;
            const row = rows.get(bucket) ?? emptyRow();
            previousReleaseAddEvent(row, e);
            rows.set(bucket, row);
          }
          const list = [...rows].sort(([a], [b]) => a - b);
          const params: unknown[][] = [list.map(() => e0.hookId), list.map(([b]) => b), list.map(() => e0.serviceName), list.map(() => e0.serviceVersion)];
          for (const c of counters) params.push(list.map(([, r]) => (PREVIOUS_COUNT_SUMS.includes(c) && r[c as keyof typeof r] === 0 ? null : r[c as keyof typeof r])));
          await client.query(
            `INSERT INTO ${table} AS t (${cols.join(', ')})
             SELECT ${cols.join(', ')} FROM unnest(${types.map((ty, i) => `$${i + 1}::${ty}[]`).join(', ')}) WITH ORDINALITY AS u(${cols.join(', ')}, ord) ORDER BY ord
             ON CONFLICT (${key.map(([c]) => c).join(', ')}) DO UPDATE SET ${set}`,
            params,
          );
        }
      } finally {
        await client.end();
      }
    };

    it('reads the rows a replica of the previous release upserts after the migration, without the column, as counting none', async () => {
      const url = await server.createDatabase();
      const store = await PostgresStore.open({ url, dimensions: DIMENSIONS, poolSize: 2 });
      try {
        expect(await store.schemaVersion()).toBe(PG_MIGRATIONS.length);
        await store.ingest(before);
        // This release's rows: no lower bound from the execution without num_hooks, 4,500 (9,000 over 2 commands).
        expect((await store.hookCounters(day)).get(id)!.maxCharsLowerBound.stdout).toBe(4500);
        // The previous release's replica: two more executions into the same minute, hour and day rows (its upsert's
        // update), and two into an hour and minutes of their own (its insert, the column then its default).
        const sameRows = mixed(T0 + HOUR + 30_000, 7000).map((e) => ({ ...e, timeMs: T0 + HOUR + 1500 }));
        const ownRows = mixed(T0 + 3 * HOUR, 8000);
        await previousReleaseUpsert(url, [...sameRows, ...ownRows]);

        const whole = (await store.hookCounters(day)).get(id)!;
        for (const [k, v] of Object.entries(whole)) if (typeof v === 'number') expect(Number.isFinite(v), k).toBe(true);
        // The rows it wrote count none of their executions, whose sizes may all be sums; this release's count both of its own.
        expect([whole.executions, whole.numHooks, whole.sizesMaySumExecutions]).toEqual([6, 6, 2]);
        // They hold its lower bound, the 8,999-character sum without num_hooks read as one command's, and a row both
        // wrote takes the larger: a rolling update's old replica keeps giving the old bound.
        expect(whole.maxCharsLowerBound.stdout).toBe(8999);
        expect(strip(await store.hookCounters(day)).get(id))
          .toEqual({ ...totalCounters([model(before, day.fromMs, day.toMs).get(id)!, previousReleaseCounters([...sameRows, ...ownRows])]), sizesMaySumExecutions: 2 });
        for (const [from, to, counted] of [[T0 + HOUR, T0 + 2 * HOUR, 2], [T0 + 3 * HOUR, T0 + 4 * HOUR, 0]] as const) {
          expect((await store.hookCounters({ fromMs: from, toMs: to })).get(id)?.sizesMaySumExecutions, `hour ${from}`).toBe(counted);
        }
        expect(strip(await store.hookCounters({ fromMs: T0 + 3 * HOUR, toMs: T0 + 4 * HOUR })).get(id)).toEqual({ ...previousReleaseCounters(ownRows), sizesMaySumExecutions: 0 });
        // A whole minute written by both is read from the minute rollup: the same.
        const minute = (await store.hookCounters({ fromMs: T0 + HOUR, toMs: T0 + HOUR + MINUTE })).get(id)!;
        expect([minute.executions, minute.sizesMaySumExecutions]).toEqual([4, 2]);
        const cells = await queryOnce<{ t: string; n: string | null }>(url, `SELECT 'rollup_1h' AS t, sizes_may_sum AS n FROM rollup_1h WHERE bucket = ${T0 + 3 * HOUR}`);
        expect(cells).toEqual([{ t: 'rollup_1h', n: '0' }]);
        // This release beside it, in an hour of its own: its counters, its bound.
        expect((await store.ingest(after)).inserted).toHaveLength(2);
        const own = strip(await store.hookCounters({ fromMs: T0 + 2 * HOUR, toMs: T0 + 3 * HOUR })).get(id)!;
        expect(own).toEqual(model(after, T0, T0 + DAY).get(id));
        expect([own.maxCharsLowerBound.stdout, own.sizesMaySumExecutions]).toEqual([4500, 2]);
      } finally {
        await store.close();
      }
    });
  });
});
