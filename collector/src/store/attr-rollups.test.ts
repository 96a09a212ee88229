/**
 * The hourly rollup per (hook, attribute set), on both backends: a breakdown by user or session, a filter on a
 * user (across every hook too) read over whole hours and days must stay an exact fold of the raw events stored
 * when events arrive late into an old hour, when a batch is sent again, when a hook is folded into an overflow
 * hook, when retention cuts an hour in two, and on a database written before the rollup existed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hookId } from '../hooks/extract.ts';
import type { HookEvent } from '../hooks/model.ts';
import { useTestServer } from '../../test/support/postgres/fixture.ts';
import { queryOnce } from '../../test/support/postgres/server.ts';
import { foldBy, model, strip } from '../../test/support/store-model.ts';
import { ATTR_ROLLUP_TABLE } from './attr-rollups.ts';
import { eventsPruneBound } from './minute-sources.ts';
import { DIM_TABLE_NAMES, ROLLED_DIMENSIONS_META, dimRollupDdl } from './dim-rollups.ts';
import { COUNT_COLUMNS, counterColumnsDdl } from './sql.ts';
import { FIRST_COUNTER_COLUMNS } from './counters.ts';
import type { HookCounters } from './model.ts';
import { MIGRATIONS as PG_MIGRATIONS, PostgresStore } from './postgres/index.ts';
import { DAY, HOUR, MINUTE } from './segments.ts';
import { MIGRATIONS as SQLITE_MIGRATIONS, SqliteStore } from './sqlite/index.ts';
import type { Store } from './store.ts';
import { PG_UNDO_LATER_MIGRATIONS, sqliteUndoLaterMigrations } from '../../test/support/downgrade.ts';

/** 2026-03-02T00:00:00Z. */
const T0 = Date.UTC(2026, 2, 2);
const DAYS = 3;
const RANGE = { fromMs: T0, toMs: T0 + DAYS * DAY };
const HOOKS = ['PostToolUse:Bash', 'PreToolUse:Edit', 'Stop:notify', 'PostToolUse:Write'] as const;

let seq = 0;
function ev(over: Partial<HookEvent> & { hookName?: string } = {}): HookEvent {
  const hookName = over.hookName ?? HOOKS[0];
  const hookEvent = hookName.split(':')[0]!;
  seq++;
  return {
    kind: 'complete', dedupKey: `k-${seq}-${Math.random().toString(36).slice(2)}`, hookId: hookId(hookEvent, hookName), hookEvent, hookName,
    timeMs: T0 + 10 * MINUTE, numHooks: 1, numSuccess: 1, numBlocking: 0, numNonBlockingError: 0, numCancelled: 0, durationMs: 25,
    stdoutChars: 1200, additionalContextChars: null, systemMessageChars: null, initialUserMessageChars: null, outputsPersisted: 0,
    sizesKnown: true, status: 'ok', serviceName: 'claude-code', serviceVersion: '2.1.332', sessionId: 's-1', userId: 'u-1',
    userEmail: 'a@example.com', userAccountUuid: 'acc-1', organizationId: 'org-1', terminalType: 'vscode', source: 'otlp', extra: {},
    ...over,
  };
}

/** Deterministic events over three days: sessions of one user each, every status, starts among completes. */
function history(count: number, salt = 0): HookEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const n = i + salt * 7919;
    const timeMs = T0 + ((n * 7_777_777) % (DAYS * DAY));
    const size = n % 7 === 3 ? null : [300, 9_000, 12_500, 40][n % 4]!;
    const start = n % 9 === 4;
    const status = start || size === null ? 'unknown' : size > 10_000 ? 'over' : size > 8_000 ? 'near' : 'ok';
    const user = n % 5;
    return ev({
      kind: start ? 'start' : 'complete', hookName: HOOKS[n % HOOKS.length], timeMs, numHooks: 1 + (n % 3),
      stdoutChars: start ? null : size, sizesKnown: !start && size !== null, outputsPersisted: start || size === null ? null : size > 10_000 ? 1 : 0,
      status, durationMs: 10 + (n % 50), userId: `u-${user}`, userEmail: `user${user}@example.com`, sessionId: `s-${user}-${Math.floor(timeMs / (2 * HOUR))}`,
      serviceVersion: n % 3 ? '2.1.332' : '2.1.300', extra: { team: user % 2 ? 'web' : 'infra' },
    });
  });
}

/** The model of a breakdown: events of `hook` in [from, to) folded by `key`. */
function foldByHook(events: HookEvent[], hook: string, fromMs: number, toMs: number, key: (e: HookEvent) => string): Map<string | number, HookCounters> {
  return foldBy(events, fromMs, toMs, key, (e) => e.hookId === hook);
}

function byValue(rows: { value: string }[]): Map<string, HookCounters> {
  return new Map(rows.map(({ value, ...c }) => [value, c as HookCounters]));
}

/** Every read the rollup serves, checked against the model of `events` over `range`. */
async function expectFold(store: Store, events: HookEvent[], range: { fromMs: number; toMs: number } = RANGE, written: 'now' | 'before sizes_may_sum' = 'now'): Promise<void> {
  // Rows written before the count of executions whose sizes may be sums (SQLite migration 15, PostgreSQL 20) read 0.
  const as = <K>(m: Map<K, HookCounters>): Map<K, HookCounters> => (written === 'now' ? m : new Map([...m].map(([k, c]) => [k, { ...c, sizesMaySumExecutions: 0 }])));
  for (const name of HOOKS) {
    const hook = ev({ hookName: name }).hookId;
    expect(byValue(await store.breakdown(hook, 'user.id', range)), `${name} by user`).toEqual(as(foldByHook(events, hook, range.fromMs, range.toMs, (e) => e.userId)));
    expect(byValue(await store.breakdown(hook, 'session.id', range)), `${name} by session`).toEqual(as(foldByHook(events, hook, range.fromMs, range.toMs, (e) => e.sessionId)));
  }
  // A filter on one user across every hook; two dimensions at once.
  expect(strip(await store.hookCounters({ ...range, filters: { 'user.id': 'u-3' } }))).toEqual(as(model(events, range.fromMs, range.toMs, (e) => e.userId === 'u-3')));
  expect(strip(await store.hookCounters({ ...range, filters: { team: 'web', 'user.email': 'user1@example.com' } })))
    .toEqual(as(model(events, range.fromMs, range.toMs, (e) => e.extra['team'] === 'web' && e.userEmail === 'user1@example.com')));
}

interface Backend {
  open: (opts?: { maxHooks?: number }) => Promise<Store>;
  /** Rows of the rollup table. */
  rows: () => Promise<number>;
  /** Takes the database back to the schema before the rollup (the events stay). */
  downgrade: () => Promise<void>;
}

function suite(backend: () => Backend): void {
  it('answers breakdowns by user and session and user filters over whole hours and days as a fold of the raw events', async () => {
    const b = backend();
    const store = await b.open();
    const events = history(600);
    await store.ingest(events);
    // Read from the rollup for the whole hours: far fewer rows than events.
    const rows = await b.rows();
    expect(rows).toBeGreaterThan(0);
    expect(rows).toBeLessThan(events.length);
    await expectFold(store, events);
    // A range with partial hours at both edges.
    await expectFold(store, events, { fromMs: T0 + 17 * MINUTE, toMs: T0 + 2 * DAY + 5 * HOUR + 42 * MINUTE });
  });

  it('counts late events into an old hour and never a batch sent again', async () => {
    const b = backend();
    const store = await b.open();
    const events = history(300);
    await store.ingest(events);
    await expectFold(store, events);
    // Late events for hours already read, with new users and users already there.
    const late = history(120, 1).map((e, i) => ({ ...e, timeMs: T0 + HOUR + (i % 40) * MINUTE, userId: i % 2 ? e.userId : 'u-late' }));
    expect((await store.ingest(late)).inserted).toHaveLength(late.length);
    await expectFold(store, [...events, ...late]);
    // The same batches again, and one mixing old and new events: only the new ones count.
    expect((await store.ingest(events)).duplicates).toBe(events.length);
    const fresh = history(10, 2);
    expect((await store.ingest([...late.slice(0, 30), ...fresh])).inserted).toHaveLength(fresh.length);
    await expectFold(store, [...events, ...late, ...fresh]);
  });

  it('counts the events of hooks past store.maxHooks under their overflow hook', async () => {
    const b = backend();
    const store = await b.open({ maxHooks: 2 });
    const events = history(200);
    const r = await store.ingest(events);
    expect(r.folded).toBeGreaterThan(0);
    const overflow = await store.overflowHooks();
    expect(overflow.length).toBeGreaterThan(0);
    // The events as stored: those of hooks beyond the limit under the overflow hook of their hook event.
    const kept = new Set((await store.hookCounters(RANGE)).keys());
    const stored = events.map((e) => (kept.has(e.hookId) ? e : { ...e, hookId: overflow.find((o) => o.hookEvent === e.hookEvent)!.id }));
    for (const o of overflow) {
      expect(byValue(await store.breakdown(o.id, 'user.id', RANGE))).toEqual(foldByHook(stored, o.id, RANGE.fromMs, RANGE.toMs, (e) => e.userId));
    }
    expect(strip(await store.hookCounters({ ...RANGE, filters: { 'user.id': 'u-2' } }))).toEqual(model(stored, RANGE.fromMs, RANGE.toMs, (e) => e.userId === 'u-2'));
  });

  it('goes with the events at retention, the hour holding the bound folded again from what is left', async () => {
    const b = backend();
    const store = await b.open();
    const events = history(600);
    await store.ingest(events);
    const bound = T0 + DAY + 5 * HOUR + 23 * MINUTE;
    await store.prune(bound, T0);
    // Events go in whole hours (before the hour holding the bound).
    const left = events.filter((e) => e.timeMs >= eventsPruneBound(bound));
    await expectFold(store, left);
    // Nothing older than the bound's hour is kept.
    expect(await b.rows()).toBeLessThan(events.length);
    // Retention with nothing left deletes every row.
    await store.prune(T0 + DAYS * DAY, T0);
    expect(await b.rows()).toBe(0);
  });

  it('fills the rollup from the stored events when a database written before it is upgraded', async () => {
    const b = backend();
    const events = history(400);
    const before = await b.open();
    await before.ingest(events);
    await before.close();
    await b.downgrade();
    const store = await b.open();
    expect(await b.rows()).toBeGreaterThan(0);
    // Filled by the migration of that version, before the count of executions whose sizes may be sums: none counted.
    expect(events.some((e) => e.sizesKnown && e.numHooks !== 1)).toBe(true);
    await expectFold(store, events, RANGE, 'before sizes_may_sum');
  });
}

/** The dimension rollup tables of the versions before the rollup per attribute set, empty: the store refills them. */
function previousDimTables(int: string, tableOptions: string): string {
  return `${DIM_TABLE_NAMES.map((t) => `DROP TABLE ${t};`).join(' ')}
    ${dimRollupDdl(counterColumnsDdl(int, int, false, FIRST_COUNTER_COLUMNS), int, tableOptions)}
    DELETE FROM store_meta WHERE key = '${ROLLED_DIMENSIONS_META}';`;
}

describe('rollup per attribute set: SQLite', () => {
  let dir = '';
  let n = 0;
  const stores: Store[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'hookwatch-attr-rollups-'));
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    rmSync(dir, { recursive: true, force: true });
  });
  let path = '';
  suite(() => {
    path = join(dir, `s${++n}.db`);
    const open = async (opts: { maxHooks?: number } = {}): Promise<Store> => {
      const s = new SqliteStore({ path, synchronous: 'normal', dimensions: ['team'], ...opts });
      stores.push(s);
      return s;
    };
    return {
      open,
      rows: async () => {
        const db = new DatabaseSync(path, { readOnly: true });
        try {
          return Number((db.prepare(`SELECT COUNT(*) AS n FROM ${ATTR_ROLLUP_TABLE}`).get() as { n: number }).n);
        } finally {
          db.close();
        }
      },
      // What the previous version leaves: the same events, no rollup table, its migration and those after it
      // not applied (the dimension rollups of that version, rebuilt from the events when the store opens).
      downgrade: async () => {
        const version = SQLITE_MIGRATIONS.findIndex((m) => m.includes(ATTR_ROLLUP_TABLE)) + 1;
        const db = new DatabaseSync(path);
        db.exec(`DROP TABLE ${ATTR_ROLLUP_TABLE}; DELETE FROM schema_migrations WHERE version >= ${version};
          ${previousDimTables('INTEGER', ' WITHOUT ROWID')}`);
        sqliteUndoLaterMigrations(db);
        db.close();
      },
    };
  });
});

describe('rollup per attribute set: PostgreSQL', () => {
  const pgs = useTestServer();
  let url = '';
  const sql = <T extends pg.QueryResultRow>(text: string): Promise<T[]> => queryOnce<T>(url, text);
  suite(() => {
    let created: Promise<string> | undefined;
    const db = async (): Promise<string> => (url = await (created ??= pgs.server().createDatabase()));
    return {
      open: async (opts = {}) => {
        await db();
        return pgs.track(await PostgresStore.open({ url, dimensions: ['team'], poolSize: 3, ...opts }));
      },
      rows: async () => Number((await sql<{ n: string }>(`SELECT COUNT(*)::text AS n FROM ${ATTR_ROLLUP_TABLE}`))[0]?.n),
      downgrade: async () => {
        // Back to the version before the rollup: its table gone, and the events indexes of that version back.
        const version = PG_MIGRATIONS.findIndex((m) => typeof m === 'string' && m.includes(ATTR_ROLLUP_TABLE)) + 1;
        await sql(`DROP TABLE ${ATTR_ROLLUP_TABLE}; DELETE FROM schema_migrations WHERE version >= ${version};
          ${previousDimTables('BIGINT', '')}
          ${PG_UNDO_LATER_MIGRATIONS}
          DROP INDEX events_hook_time_key; DROP INDEX events_time;
          CREATE UNIQUE INDEX events_key ON events (time_ms, key) WITH (fillfactor = 100);
          CREATE INDEX events_hook_time ON events (hook, time_ms);
          ALTER TABLE events ALTER COLUMN key TYPE BYTEA USING ('\\x0000000000000000'::bytea || int8send(key)), ${COUNT_COLUMNS.map((c) => `ALTER COLUMN ${c} TYPE BIGINT`).join(', ')};`);
      },
    };
  });
});
