/**
 * attr_sets' indexes on dimension values (the configured ones and the many-valued built-ins), on both backends:
 * a filter on a dimension finds its attribute sets through the index (the plan uses it, so the cost of a
 * filtered read does not grow with the sessions of the whole history), the indexes follow the configured
 * dimensions across restarts, and filtered answers (counters, the newest matching execution) stay an exact fold
 * of the raw events whatever the dimension's name holds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hookId } from '../hooks/extract.ts';
import type { HookEvent } from '../hooks/model.ts';
import { startTestServer, type TestServer } from '../../test/support/postgres/server.ts';
import { model, strip } from '../../test/support/store-model.ts';
import { PostgresStore } from './postgres/index.ts';
import { DAY, HOUR, MINUTE } from './segments.ts';
import { ATTR_SET_INDEX_PREFIX, INDEXED_BUILTIN_DIMENSIONS, attrFilter } from './sql.ts';
import { SqliteStore } from './sqlite/index.ts';
import type { Store } from './store.ts';

/** 2026-03-02T00:00:00Z. */
const T0 = Date.UTC(2026, 2, 2);
/** A dimension whose name needs quoting everywhere: in a JSON path, in an SQL literal. */
const ODD = `it's "odd".key`;
const DIMS = ['team', ODD];
/** Indexes on built-in dimensions, whatever the configuration. */
const BUILTIN = INDEXED_BUILTIN_DIMENSIONS.length;
/** Indexes of each configured dimension: its value with last_ms, and with first_ms. */
const PER_DIM = 2;

function history(count: number): HookEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const hookName = ['PostToolUse:Bash', 'Stop:notify', 'PreToolUse:Edit'][i % 3] as string;
    const hookEvent = hookName.split(':')[0] as string;
    const user = i % 7;
    return {
      kind: 'complete', dedupKey: `ix-${i}`, hookId: hookId(hookEvent, hookName), hookEvent, hookName,
      timeMs: T0 + ((i * 7_777_777) % (2 * DAY)), numHooks: 1, numSuccess: 1, numBlocking: 0, numNonBlockingError: 0, numCancelled: 0,
      durationMs: 20, stdoutChars: i % 5 === 0 ? 12_000 : 800, additionalContextChars: null, systemMessageChars: null, initialUserMessageChars: null,
      outputsPersisted: i % 5 === 0 ? 1 : 0, sizesKnown: true, status: i % 5 === 0 ? 'over' : 'ok', serviceName: 'claude-code', serviceVersion: '2.1.332',
      sessionId: `s-${user}-${Math.floor(i / 40)}`, userId: `u-${user}`, userEmail: `u${user}@example.com`, userAccountUuid: 'acc', organizationId: 'org',
      terminalType: user % 4 === 0 ? 'iterm' : 'vscode', source: 'otlp', extra: { team: `team-${user % 3}`, [ODD]: `v-${user % 2}` },
    };
  });
}

/** Filtered reads over ranges with partial hours (raw edges) and whole days, against the fold of the events. */
async function expectFiltered(store: Store, events: HookEvent[]): Promise<void> {
  // The newest matching execution, by filters only raw events and the rollup per attribute set answer: a value
  // with an execution in the newest hour, one without, and one with none at all.
  const newest = (keep: (e: HookEvent) => boolean): number | null => {
    const t = events.filter((e) => e.kind === 'complete' && keep(e)).map((e) => e.timeMs);
    return t.length > 0 ? Math.max(...t) : null;
  };
  for (const [filters, keep] of [
    [{ 'terminal.type': 'vscode' }, (e: HookEvent) => e.terminalType === 'vscode'],
    [{ 'user.id': 'u-3' }, (e: HookEvent) => e.userId === 'u-3'],
    [{ 'session.id': 's-1-0' }, (e: HookEvent) => e.sessionId === 's-1-0'],
    [{ 'user.id': 'u-4', team: 'team-1' }, (e: HookEvent) => e.userId === 'u-4' && e.extra['team'] === 'team-1'],
    [{ 'user.id': 'u-4', team: 'team-2' }, () => false],
    [{ 'session.id': 'nobody' }, () => false],
  ] as const) {
    expect(await store.lastEventMs(filters), JSON.stringify(filters)).toBe(newest(keep));
  }
  for (const range of [{ fromMs: T0, toMs: T0 + 2 * DAY }, { fromMs: T0 + 13 * MINUTE, toMs: T0 + DAY + 5 * HOUR + 7 * MINUTE }]) {
    for (const [filters, keep] of [
      [{ team: 'team-1' }, (e: HookEvent) => e.extra['team'] === 'team-1'],
      [{ [ODD]: 'v-0' }, (e: HookEvent) => e.extra[ODD] === 'v-0'],
      // Two dimensions at once: read from the rollup per attribute set and raw events, through both indexes.
      [{ team: 'team-2', [ODD]: 'v-1' }, (e: HookEvent) => e.extra['team'] === 'team-2' && e.extra[ODD] === 'v-1'],
    ] as const) {
      expect(strip(await store.hookCounters({ ...range, filters })), JSON.stringify(filters)).toEqual(model(events, range.fromMs, range.toMs, keep));
    }
  }
}

/** Within the events retention, past the minute horizon: minutes at T0 are read from the raw events. */
const LONG_RETENTION = { eventsMs: 400 * DAY, minuteRollupsMs: 2 * DAY };

/**
 * A session whose events arrive hours before its first one, after that is stored (once with its set in memory,
 * once after a restart): a filter over their stretch still finds the set (its first_ms moved back), on raw edges,
 * whole hours of the rollup per attribute set and the dimension rollups alike.
 */
async function expectLateEarlier(open: () => Promise<Store>): Promise<void> {
  const base = history(1)[0]!;
  const at = (i: number, timeMs: number): HookEvent => ({ ...base, dedupKey: `late-${i}`, timeMs, sessionId: 's-late', userId: 'u-late', extra: { team: 'team-late', [ODD]: 'v-late' } });
  const first = [at(1, T0 + 10 * HOUR + 5 * MINUTE), at(2, T0 + 10 * HOUR + 20 * MINUTE)];
  const late = [at(3, T0 + 2 * HOUR + 10 * MINUTE), at(4, T0 + 30 * MINUTE)];
  let store = await open();
  await store.ingest(first);
  await store.ingest([late[0]!]);
  await store.close();
  store = await open();
  try {
    await store.ingest([late[1]!]);
    const events = [...first, ...late];
    for (const range of [{ fromMs: T0 + 25 * MINUTE, toMs: T0 + 2 * HOUR + 40 * MINUTE }, { fromMs: T0 + 2 * HOUR + 5 * MINUTE, toMs: T0 + 2 * HOUR + 15 * MINUTE }, { fromMs: T0, toMs: T0 + DAY }]) {
      for (const [filters, keep] of [
        [{ team: 'team-late' }, (e: HookEvent) => e.extra['team'] === 'team-late'],
        [{ 'user.id': 'u-late' }, (e: HookEvent) => e.userId === 'u-late'],
        [{ team: 'team-late', [ODD]: 'v-late' }, (e: HookEvent) => e.extra['team'] === 'team-late'],
      ] as const) {
        const got = strip(await store.hookCounters({ ...range, filters }));
        expect(got, `${JSON.stringify(filters)} ${range.fromMs - T0}`).toEqual(model(events, range.fromMs, range.toMs, keep));
        expect(got.size).toBe(1);
      }
    }
  } finally {
    await store.close();
  }
}

/** How a store's filter on `dim` picks its sets: the SQL its attrFilter sends (`empty`: for the empty value). */
function setsQuery(store: Store, dim: string, param: string, empty = false): string {
  const expr = (store as unknown as { attrExpr: (d: string) => string }).attrExpr(dim);
  return attrFilter([[expr, param, empty]]).replace(/^attrs IN \((.*)\)$/, '$1');
}

describe('attr_sets indexes: SQLite', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'hookwatch-attr-ix-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const indexes = (path: string): string[] => {
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      return (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'attr_sets'`).all() as { name: string }[]).map((r) => r.name).filter((n) => n.startsWith(ATTR_SET_INDEX_PREFIX)).sort();
    } finally {
      db.close();
    }
  };

  it('finds a filter\'s sets through an index on each indexed dimension, and follows the configuration', async () => {
    const path = join(dir, 'a.db');
    const events = history(900);
    let store = new SqliteStore({ path, dimensions: DIMS });
    await store.ingest(events);
    expect(indexes(path)).toHaveLength(BUILTIN + 2 * PER_DIM);
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      for (const dim of [...DIMS, ...INDEXED_BUILTIN_DIMENSIONS]) {
        // The empty value too, which also matches the sets without the attribute.
        for (const [value, empty] of [['x', false], ['', true]] as const) {
          const plan = (db.prepare(`EXPLAIN QUERY PLAN ${setsQuery(store, dim, '?', empty)}`).all(value) as { detail: string }[]).map((r) => r.detail).join('; ');
          expect(plan, `${dim} ${JSON.stringify(value)}`).toMatch(new RegExp(`USING (COVERING )?INDEX ${ATTR_SET_INDEX_PREFIX}`));
          expect(plan, `${dim} ${JSON.stringify(value)}`).not.toMatch(/SCAN attr_sets(?! USING)/);
        }
      }
    } finally {
      db.close();
    }
    await expectFiltered(store, events);
    await store.close();

    // A dimension left out loses its index; listed again, it gets it back.
    store = new SqliteStore({ path, dimensions: ['team'] });
    expect(indexes(path)).toHaveLength(BUILTIN + PER_DIM);
    await store.close();
    store = new SqliteStore({ path, dimensions: DIMS });
    expect(indexes(path)).toHaveLength(BUILTIN + 2 * PER_DIM);
    await expectFiltered(store, events);
    await store.close();
  });
});

describe('attr_sets first_ms: SQLite', () => {
  it('moves a set\'s first_ms back for events older than its first, so filters over their stretch find them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-attr-first-'));
    try {
      const path = join(dir, 'late.db');
      await expectLateEarlier(async () => new SqliteStore({ path, synchronous: 'normal', dimensions: DIMS, retention: LONG_RETENTION }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('attr_sets indexes: PostgreSQL', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.stop();
  });

  it('finds a filter\'s sets through an index on each indexed dimension, and follows the configuration', async () => {
    const url = await server.createDatabase();
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    const indexes = async (): Promise<string[]> => (await c.query<{ n: string }>(`SELECT indexname AS n FROM pg_indexes WHERE tablename = 'attr_sets' ORDER BY 1`)).rows.map((r) => r.n).filter((n) => n.startsWith(ATTR_SET_INDEX_PREFIX));
    let store: Store | undefined;
    try {
      const events = history(900);
      store = await PostgresStore.open({ url, dimensions: DIMS, poolSize: 3 });
      await store.ingest(events);
      expect(await indexes()).toHaveLength(BUILTIN + 2 * PER_DIM);
      // With sequential scans off the plan takes the index if, and only if, the filter's expression is the indexed one.
      await c.query('SET enable_seqscan = off');
      for (const dim of [...DIMS, ...INDEXED_BUILTIN_DIMENSIONS]) {
        // The empty value too, which also matches the sets without the attribute.
        for (const [value, empty] of [[`'x'`, false], [`''`, true]] as const) {
          const plan = (await c.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${setsQuery(store, dim, value, empty)}`)).rows.map((r) => r['QUERY PLAN']).join('\n');
          expect(plan, `${dim} ${value}`).toContain(ATTR_SET_INDEX_PREFIX);
        }
      }
      await expectFiltered(store, events);
      await store.close();

      store = await PostgresStore.open({ url, dimensions: ['team'], poolSize: 3 });
      expect(await indexes()).toHaveLength(BUILTIN + PER_DIM);
      await store.close();
      store = await PostgresStore.open({ url, dimensions: DIMS, poolSize: 3 });
      expect(await indexes()).toHaveLength(BUILTIN + 2 * PER_DIM);
      await expectFiltered(store, events);
    } finally {
      await store?.close().catch(() => undefined);
      await c.end();
    }
  });

  it('moves a set\'s first_ms back for events older than its first, so filters over their stretch find them', async () => {
    const url = await server.createDatabase();
    await expectLateEarlier(() => PostgresStore.open({ url, dimensions: DIMS, poolSize: 3, retention: LONG_RETENTION }));
  });
});
