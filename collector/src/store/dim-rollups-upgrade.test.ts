/**
 * The dimension rollups' key on databases written before it: the previous version kept one table per
 * granularity keyed (hook, dimension, bucket, value, client name, client version). A database in that state,
 * filled as that version filled it, is opened by the store, which folds each old table into the table keyed
 * (dimension, value, bucket, hook) and the client table of its granularity. The rollups are not rebuilt from the
 * events (the dimension is already marked rolled), so every answer below comes from the folded rows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hookId } from '../hooks/extract.ts';
import type { HookEvent } from '../hooks/model.ts';
import { useTestServer } from '../../test/support/postgres/fixture.ts';
import { queryOnce } from '../../test/support/postgres/server.ts';
import { foldBy, model, strip } from '../../test/support/store-model.ts';
import { COUNT_SUM_COLUMNS, FIRST_COUNTER_COLUMNS, MAX_COLUMNS, addEvent, emptyRow, type CounterColumn, type CounterRow } from './counters.ts';
import { DIM_CLIENT_TABLES, DIM_ROLLUP_TABLES, DIM_TABLE_NAMES, dimRollupDdl } from './dim-rollups.ts';
import { MIGRATIONS as PG_MIGRATIONS, PostgresStore } from './postgres/index.ts';
import { DAY, HOUR, MINUTE, alignRange } from './segments.ts';
import { counterColumnsDdl } from './sql.ts';
import { MIGRATIONS as SQLITE_MIGRATIONS, SqliteStore } from './sqlite/index.ts';
import type { Store } from './store.ts';
import { PG_UNDO_LATER_MIGRATIONS, sqliteUndoLaterMigrations } from '../../test/support/downgrade.ts';

/** 2026-03-02T00:00:00Z. */
const T0 = Date.UTC(2026, 2, 2);
const HOOKS = [['PostToolUse', 'PostToolUse:Bash'], ['PreToolUse', 'PreToolUse:Edit'], ['Stop', 'Stop:notify']] as const;
const TEAMS = ['web', 'infra'];
const VERSIONS = ['2.1.332', '2.1.300', '2.1.279'];

/** Three days of executions: three hooks, two teams, three client versions, every status, some sizes unknown. */
function history(): HookEvent[] {
  return Array.from({ length: 240 }, (_, i) => {
    const [hookEvent, hookName] = HOOKS[i % 3]!;
    const timeMs = T0 + Math.floor(i / 80) * DAY + (i % 80) * 17 * MINUTE + (i % 7) * 1000;
    const kind = i % 6 === 5 ? 'start' : 'complete';
    const size = kind === 'start' ? null : [100, 9_000, 12_000, null, 4_000][i % 5]!;
    const status = size === null ? 'unknown' : size > 10_000 ? 'over' : size > 8_000 ? 'near' : 'ok';
    return {
      kind, dedupKey: `${timeMs.toString(36).padStart(9, '0')}k${String(i).padStart(25, '0')}`, legacyKey: `k${i}`,
      hookId: hookId(hookEvent, hookName), hookEvent, hookName, timeMs, receivedMs: timeMs + 1000,
      numHooks: 1, numSuccess: kind === 'complete' ? 1 : null, numBlocking: i % 11 === 0 ? 1 : 0, numNonBlockingError: 0, numCancelled: 0,
      durationMs: 20 + i, stdoutChars: size, additionalContextChars: i % 4 === 0 ? 300 : null, systemMessageChars: null, initialUserMessageChars: null,
      outputsPersisted: size === null ? null : size > 10_000 ? 1 : 0, sizesKnown: size !== null, status,
      serviceName: 'claude-code', serviceVersion: VERSIONS[i % 3 === 0 ? 0 : (i >> 2) % 3]!, sessionId: `s-${i % 9}`, userId: `u-${i % 5}`,
      userEmail: `u${i % 5}@example.com`, userAccountUuid: `acc-${i % 5}`, organizationId: 'org-1', terminalType: 'vscode', source: 'otlp',
      extra: { team: TEAMS[(i >> 1) % 2]! },
    } satisfies HookEvent;
  });
}

/** The previous version's rows of one granularity: (hook, 'team', bucket, value, client name, client version). */
function oldRows(events: HookEvent[], size: number): { key: (string | number)[]; row: CounterRow }[] {
  const out = new Map<string, { key: (string | number)[]; row: CounterRow }>();
  for (const e of events) {
    const key = [e.hookId, 'team', Math.floor(e.timeMs / size) * size, e.extra['team'] ?? '', e.serviceName, e.serviceVersion];
    const id = JSON.stringify(key);
    let g = out.get(id);
    if (!g) out.set(id, (g = { key, row: emptyRow() }));
    addEvent(g.row, e);
  }
  return [...out.values()];
}

/** The previous version's dimension tables, filled, in place of today's; the last migration not applied. */
function previousDimSql(int: string, tableOptions: string, rekeyVersion: number): string {
  return `${DIM_TABLE_NAMES.map((t) => `DROP TABLE ${t};`).join(' ')}
    ${dimRollupDdl(counterColumnsDdl(int, int, false, FIRST_COUNTER_COLUMNS), int, tableOptions)}
    DELETE FROM schema_migrations WHERE version >= ${rekeyVersion};`;
}
/** The version of each backend's migration to today's key (the one that folds the tables into `_next` ones). */
const rekeyVersion = (migrations: readonly unknown[]): number => migrations.findIndex((m) => typeof m === 'string' && m.includes('rollup_dim_1h_next')) + 1;
const SQLITE_REKEY_VERSION = rekeyVersion(SQLITE_MIGRATIONS);
const PG_REKEY_VERSION = rekeyVersion(PG_MIGRATIONS);
const OLD_COLUMNS = ['hook_id', 'dim', 'bucket', 'value', 'service_name', 'service_version', ...FIRST_COUNTER_COLUMNS];

interface Backend {
  open(): Promise<Store>;
  /** Puts the database in the previous version's state (its dimension tables filled from `events`). */
  downgrade(events: HookEvent[]): Promise<void>;
  count(table: string): Promise<number>;
  /** Columns of the primary key of `table`, in order, and the names of its other indexes. */
  keys(table: string): Promise<{ primary: string[]; indexes: string[] }>;
  prune(store: Store, rollupsBeforeMs: number): Promise<void>;
  /** What else the backend's migration must have done. */
  checkUpgraded?(): Promise<void>;
}

function suite(make: () => Backend): void {
  it('folds the old tables into the rows of today\'s key in place: every filtered read, breakdown and client list still answers right', async () => {
    const b = make();
    const events = history();
    const writer = await b.open();
    await writer.ingest(events);
    await writer.close();
    await b.downgrade(events);
    expect(await b.count('rollup_dim_1h')).toBe(oldRows(events, HOUR).length);

    const store = await b.open();
    const distinct = (key: (e: HookEvent) => unknown[]): number => new Set(events.map((e) => JSON.stringify(key(e)))).size;
    const hour = (e: HookEvent): number => Math.floor(e.timeMs / HOUR);
    const day = (e: HookEvent): number => Math.floor(e.timeMs / DAY);
    expect(await b.count(DIM_ROLLUP_TABLES.hour)).toBe(distinct((e) => [e.extra['team'], hour(e), e.hookId]));
    expect(await b.count(DIM_ROLLUP_TABLES.day)).toBe(distinct((e) => [e.extra['team'], day(e), e.hookId]));
    expect(await b.count(DIM_CLIENT_TABLES.hour)).toBe(distinct((e) => [e.extra['team'], hour(e), e.serviceName, e.serviceVersion]));
    expect(await b.count(DIM_CLIENT_TABLES.day)).toBe(distinct((e) => [e.extra['team'], day(e), e.serviceName, e.serviceVersion]));
    expect(await b.keys(DIM_ROLLUP_TABLES.hour)).toEqual({ primary: ['dim', 'value', 'bucket', 'hook_id'], indexes: ['rollup_dim_1h_hook'] });
    expect(await b.keys(DIM_CLIENT_TABLES.day)).toEqual({ primary: ['dim', 'bucket', 'value', 'service_name', 'service_version'], indexes: [] });
    await b.checkUpgraded?.();

    // Whole days, and a range with partial hours and days at both edges (hours from the hour tables).
    for (const range of [{ fromMs: T0, toMs: T0 + 3 * DAY }, { fromMs: T0 + 90 * MINUTE + 20_000, toMs: T0 + 2 * DAY + 5 * HOUR + 30 * MINUTE }]) {
      for (const team of TEAMS) {
        const keep = (e: HookEvent): boolean => e.extra['team'] === team;
        expect(strip(await store.hookCounters({ ...range, filters: { team } })), team).toEqual(model(events, range.fromMs, range.toMs, keep));
        const clients = await store.clientVersions({ ...range, filters: { team } });
        const want = foldBy(events, range.fromMs, range.toMs, (e) => e.serviceVersion, keep);
        expect(new Map(clients.map((c) => [c.version, c.executions])), team).toEqual(new Map([...want].map(([v, c]) => [v, c.executions])));
        // With the client filtered too: the client tables' key columns.
        const v = VERSIONS[1]!;
        const one = await store.clientVersions({ ...range, filters: { team, 'service.version': v } });
        expect(one.map((c) => [c.version, c.executions, c.sizeUnknownExecutions])).toEqual([[v, want.get(v)?.executions, want.get(v)?.sizeUnknownExecutions]]);
        // A team and a version on the hook list: the rollup per attribute set.
        expect(strip(await store.hookCounters({ ...range, filters: { team, 'service.version': v } }))).toEqual(model(events, range.fromMs, range.toMs, (e) => keep(e) && e.serviceVersion === v));
      }
      for (const [hookEvent, hookName] of HOOKS) {
        const id = hookId(hookEvent, hookName);
        const byTeam = await store.breakdown(id, 'team', range);
        const want = foldBy(events, range.fromMs, range.toMs, (e) => e.extra['team'] ?? '', (e) => e.hookId === id);
        expect(new Map(byTeam.map(({ value, ...c }) => [value, c])), hookName).toEqual(want);
        const series = await store.series(id, { ...range, stepMs: HOUR, filters: { team: 'web' } });
        // The partial hours at the range's ends count from its start and until its end, as the figures do.
        const aligned = alignRange(range.fromMs, range.toMs);
        const wantSeries = foldBy(events, aligned.fromMs, aligned.toMs, (e) => Math.floor(e.timeMs / HOUR) * HOUR, (e) => e.hookId === id && e.extra['team'] === 'web');
        expect(new Map([...series].filter(([, c]) => c.executions + c.starts > 0)), hookName).toEqual(wantSeries);
      }
    }

    // New events add to the folded rows.
    const later = { ...events[4]!, dedupKey: `${(T0 + DAY + 3 * MINUTE).toString(36).padStart(9, '0')}later`, timeMs: T0 + DAY + 3 * MINUTE };
    expect((await store.ingest([later])).inserted).toHaveLength(1);
    const all = [...events, later];
    const range = { fromMs: T0, toMs: T0 + 3 * DAY };
    const team = later.extra['team']!;
    expect(strip(await store.hookCounters({ ...range, filters: { team } }))).toEqual(model(all, range.fromMs, range.toMs, (e) => e.extra['team'] === team));
    const clients = await store.clientVersions({ ...range, filters: { team } });
    expect(clients.find((c) => c.version === later.serviceVersion)?.executions).toBe(all.filter((e) => e.kind === 'complete' && e.extra['team'] === team && e.serviceVersion === later.serviceVersion).length);
    expect(await b.count(DIM_CLIENT_TABLES.hour)).toBe(new Set(all.map((e) => JSON.stringify([e.extra['team'], Math.floor(e.timeMs / HOUR), e.serviceVersion]))).size);

    // Retention takes the days before its bound from both families.
    await b.prune(store, T0 + DAY);
    const kept = all.filter((e) => e.timeMs >= T0 + DAY);
    expect(await b.count(DIM_ROLLUP_TABLES.day)).toBe(new Set(kept.map((e) => JSON.stringify([e.extra['team'], Math.floor(e.timeMs / DAY), e.hookId]))).size);
    expect(await b.count(DIM_CLIENT_TABLES.day)).toBe(new Set(kept.map((e) => JSON.stringify([e.extra['team'], Math.floor(e.timeMs / DAY), e.serviceVersion]))).size);
    expect(await b.count(DIM_CLIENT_TABLES.hour)).toBe(new Set(kept.map((e) => JSON.stringify([e.extra['team'], Math.floor(e.timeMs / HOUR), e.serviceVersion]))).size);
  });
}

describe('dimension rollups keyed by value first: SQLite upgrade', () => {
  let dir = '';
  const stores: Store[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'hookwatch-dim-upgrade-'));
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    rmSync(dir, { recursive: true, force: true });
  });
  let n = 0;
  suite(() => {
    const path = join(dir, `d${++n}.db`);
    const q = <T>(fn: (db: DatabaseSync) => T): T => {
      const db = new DatabaseSync(path);
      try {
        return fn(db);
      } finally {
        db.close();
      }
    };
    return {
      open: async () => {
        const s = new SqliteStore({ path, synchronous: 'normal', dimensions: ['team'] });
        stores.push(s);
        return s;
      },
      downgrade: async (events) => q((db) => {
        db.exec(previousDimSql('INTEGER', ' WITHOUT ROWID', SQLITE_REKEY_VERSION));
        sqliteUndoLaterMigrations(db);
        for (const [t, size] of [['rollup_dim_1h', HOUR], ['rollup_dim_1d', DAY]] as const) {
          const st = db.prepare(`INSERT INTO ${t} (${OLD_COLUMNS.join(', ')}) VALUES (${OLD_COLUMNS.map(() => '?').join(', ')})`);
          for (const r of oldRows(events, size)) st.run(...(r.key as SQLInputValue[]), ...FIRST_COUNTER_COLUMNS.map((c) => r.row[c as CounterColumn]));
        }
      }),
      count: async (table) => q((db) => Number((db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n)),
      keys: async (table) => q((db) => {
        const cols = db.prepare(`SELECT name, pk FROM pragma_table_info('${table}') WHERE pk > 0 ORDER BY pk`).all() as { name: string }[];
        const indexes = db.prepare(`SELECT name FROM pragma_index_list('${table}') WHERE origin = 'c' ORDER BY name`).all() as { name: string }[];
        return { primary: cols.map((c) => c.name), indexes: indexes.map((i) => i.name) };
      }),
      prune: async (store, bound) => {
        await store.prune(0, bound);
      },
    };
  });
});

describe('dimension rollups keyed by value first: PostgreSQL upgrade', () => {
  const pgs = useTestServer();
  suite(() => {
    let created: Promise<string> | undefined;
    const url = async (): Promise<string> => (created ??= pgs.server().createDatabase());
    const q = async <T extends pg.QueryResultRow>(text: string, params: unknown[] = []): Promise<T[]> => queryOnce<T>(await url(), text, params);
    return {
      open: async () => pgs.track(await PostgresStore.open({ url: await url(), dimensions: ['team'], poolSize: 3 })),
      // As migration 12 left the tables (4-byte maxima, plain sums that may be NULL) and the previous version
      // wrote them (a plain sum of 0 as NULL).
      downgrade: async (events) => {
        await q(`${previousDimSql('BIGINT', '', PG_REKEY_VERSION)} ${PG_UNDO_LATER_MIGRATIONS}`);
        for (const [t, size] of [['rollup_dim_1h', HOUR], ['rollup_dim_1d', DAY]] as const) {
          await q(`ALTER TABLE ${t} ${[...MAX_COLUMNS.map((c) => `ALTER COLUMN ${c} TYPE INTEGER`), ...COUNT_SUM_COLUMNS.filter((c) => FIRST_COUNTER_COLUMNS.includes(c)).map((c) => `ALTER COLUMN ${c} DROP NOT NULL`)].join(', ')}`);
          for (const r of oldRows(events, size)) {
            const values = FIRST_COUNTER_COLUMNS.map((c) => (COUNT_SUM_COLUMNS.includes(c) && r.row[c as CounterColumn] === 0 ? null : r.row[c as CounterColumn]));
            await q(`INSERT INTO ${t} (${OLD_COLUMNS.join(', ')}) VALUES (${OLD_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`, [...r.key, ...values]);
          }
        }
        // Retention had rebuilt the old primary keys and noted their packed share; the new keys take their names.
        await q(`INSERT INTO store_meta (key, value) VALUES ('index_packed_share:rollup_dim_1h_pkey', '0.4'), ('index_packed_share:rollup_1h_pkey', '0.3')
          ON CONFLICT (key) DO UPDATE SET value = excluded.value`);
      },
      checkUpgraded: async () => {
        const noted = await q<{ key: string }>(`SELECT key FROM store_meta WHERE key LIKE 'index_packed_share:%' ORDER BY key`);
        expect(noted.map((r) => r.key)).toEqual(['index_packed_share:rollup_1h_pkey']);
        const pkeys = await q<{ n: string }>(`SELECT conname AS n FROM pg_constraint WHERE contype = 'p' AND conrelid::regclass::text LIKE 'rollup_dim%' ORDER BY 1`);
        expect(pkeys.map((r) => r.n)).toEqual(['rollup_dim_1d_pkey', 'rollup_dim_1h_pkey', 'rollup_dim_client_1d_pkey', 'rollup_dim_client_1h_pkey']);
      },
      count: async (table) => Number((await q<{ n: string }>(`SELECT COUNT(*)::text AS n FROM ${table}`))[0]?.n),
      keys: async (table) => {
        const primary = await q<{ c: string }>(
          `SELECT a.attname AS c FROM pg_index x JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(attnum, ord) ON true
           JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum WHERE x.indrelid = $1::regclass AND x.indisprimary ORDER BY k.ord`, [table]);
        const indexes = await q<{ n: string }>(`SELECT i.relname AS n FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = $1::regclass AND NOT x.indisprimary ORDER BY 1`, [table]);
        return { primary: primary.map((r) => r.c), indexes: indexes.map((r) => r.n) };
      },
      prune: async (store, bound) => {
        await store.prune(0, bound);
      },
    };
  });
});
