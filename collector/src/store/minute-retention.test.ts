/**
 * Per-minute rollups are kept for retention.minuteRollups only (minute-sources.ts): minutes older than that are
 * answered from the raw events, exact to the minute, whether or not retention already deleted their minute
 * rollups; beyond retention.events a range covers the whole hours it touches. Both backends, against a fold of
 * the same events, with times relative to now (the store decides the sources by its clock, as a server does).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HookEvent } from '../hooks/model.ts';
import { hookId } from '../hooks/extract.ts';
import { PostgresStore } from './postgres/index.ts';
import { DAY, HOUR, MINUTE, alignRange } from './segments.ts';
import { SqliteStore } from './sqlite/index.ts';
import type { Store } from './store.ts';
import { foldBy, model, strip } from '../../test/support/store-model.ts';
import { startTestServer, type TestServer } from '../../test/support/postgres/server.ts';

const DIMENSIONS = ['team'];
const RETENTION = { eventsMs: 30 * DAY, minuteRollupsMs: 2 * DAY };
const NOW = Date.now();
/** Ten days ago: older than the minute horizon, within the events retention. */
const OLD = Math.floor((NOW - 10 * DAY) / HOUR) * HOUR;
/** Forty days ago: beyond the events retention. */
const ANCIENT = Math.floor((NOW - 40 * DAY) / HOUR) * HOUR;

let seq = 0;
function ev(timeMs: number, i: number): HookEvent {
  const hookName = i % 3 === 0 ? 'PostToolUse:Edit' : 'PostToolUse:Bash';
  const size = (i * 997) % 14_000;
  const over = size > 10_000;
  return {
    kind: 'complete', dedupKey: `m-${++seq}-${Math.random().toString(36).slice(2)}`, hookId: hookId('PostToolUse', hookName),
    hookEvent: 'PostToolUse', hookName, timeMs, numHooks: 1, numSuccess: 1, numBlocking: 0, numNonBlockingError: 0,
    numCancelled: 0, durationMs: 10 + i, stdoutChars: size, additionalContextChars: null, systemMessageChars: null,
    initialUserMessageChars: null, outputsPersisted: over ? 1 : 0, sizesKnown: true, status: over ? 'over' : 'ok',
    serviceName: 'claude-code', serviceVersion: i % 2 === 0 ? '2.1.332' : '2.1.279', sessionId: `s-${i % 4}`,
    userId: `u-${i % 3}`, userEmail: 'a@example.com', userAccountUuid: 'acc-1', organizationId: 'org-1',
    terminalType: 'vscode', source: 'otlp', extra: { team: i % 4 === 0 ? 'infra' : 'web' },
  };
}

/** Events every 7 minutes (and a few seconds) over five hours from `start`. */
function spread(start: number): HookEvent[] {
  return Array.from({ length: 43 }, (_, i) => ev(start + i * 7 * MINUTE + 13_000 + i * 500, i));
}

const old = spread(OLD);
const recent = spread(Math.floor((NOW - 6 * HOUR) / MINUTE) * MINUTE);
const ancient = spread(ANCIENT);
const all = [...ancient, ...old, ...recent];

interface Backend {
  name: string;
  setup(): Promise<void>;
  /** A new database's store, under RETENTION unless told. */
  open(retention?: typeof RETENTION): Promise<Store>;
  /** Minute rollup buckets left before `beforeMs`. */
  minuteRows(store: Store, beforeMs: number): Promise<number>;
  /** The database of `store` opened again under another retention: a restart with a new setting, or another replica. */
  reopen(store: Store, retention: typeof RETENTION, opts?: { boundsRefreshMs?: number }): Promise<Store>;
  teardown(): Promise<void>;
}

function sqliteBackend(): Backend {
  let dir = '';
  let n = 0;
  const paths = new WeakMap<Store, string>();
  return {
    name: 'sqlite',
    async setup() {
      dir = mkdtempSync(join(tmpdir(), 'hookwatch-minutes-'));
    },
    async open(retention = RETENTION) {
      const path = join(dir, `m${++n}.db`);
      const store = new SqliteStore({ path, synchronous: 'normal', dimensions: DIMENSIONS, retention });
      paths.set(store, path);
      return store;
    },
    async reopen(store, retention) {
      const path = paths.get(store)!;
      const again = new SqliteStore({ path, synchronous: 'normal', dimensions: DIMENSIONS, retention });
      paths.set(again, path);
      return again;
    },
    async minuteRows(store, beforeMs) {
      const db = new DatabaseSync(paths.get(store)!, { readOnly: true });
      try {
        return Number((db.prepare('SELECT COUNT(*) AS n FROM rollup_1m WHERE bucket < ?').get(beforeMs) as { n: number }).n);
      } finally {
        db.close();
      }
    },
    async teardown() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postgresBackend(): Backend {
  let server: TestServer | undefined;
  const urls = new WeakMap<Store, string>();
  return {
    name: 'postgres',
    async setup() {
      server = await startTestServer();
    },
    async open(retention = RETENTION) {
      const url = await server!.createDatabase();
      const store = await PostgresStore.open({ url, dimensions: DIMENSIONS, poolSize: 2, retention });
      urls.set(store, url);
      return store;
    },
    async reopen(store, retention, opts = {}) {
      const url = urls.get(store)!;
      const again = await PostgresStore.open({ url, dimensions: DIMENSIONS, poolSize: 2, retention, ...opts });
      urls.set(again, url);
      return again;
    },
    async minuteRows(store, beforeMs) {
      const c = new pg.Client({ connectionString: urls.get(store)! });
      await c.connect();
      try {
        return Number((await c.query('SELECT COUNT(*) AS n FROM rollup_1m WHERE bucket < $1', [beforeMs])).rows[0].n);
      } finally {
        await c.end();
      }
    },
    async teardown() {
      await server?.stop();
    },
  };
}

const BASH = hookId('PostToolUse', 'PostToolUse:Bash');

/**
 * A store under RETENTION holding `events`, ANCIENT's among them: stored while they were within retention (by a
 * store under a longer one, opened again), since an ingest refuses events older than retention.events keeps.
 */
async function holding(backend: Backend, events: HookEvent[]): Promise<Store> {
  const writer = await backend.open({ ...RETENTION, eventsMs: 60 * DAY });
  expect((await writer.ingest(events)).inserted).toHaveLength(events.length);
  await writer.close();
  return backend.reopen(writer, RETENTION);
}

/** What the dashboard asks about a range of minutes: overview (filtered or not), breakdown, series and fleet at 1 minute. */
async function expectExact(store: Store, events: HookEvent[], fromMs: number, toMs: number): Promise<void> {
  const range = { fromMs, toMs };
  expect(strip(await store.hookCounters(range))).toEqual(model(events, fromMs, toMs));
  // A base-rollup filter, a rolled dimension and one only the raw events keep.
  expect(strip(await store.hookCounters({ ...range, filters: { 'service.version': '2.1.279' } }))).toEqual(model(events, fromMs, toMs, (e) => e.serviceVersion === '2.1.279'));
  expect(strip(await store.hookCounters({ ...range, filters: { team: 'infra' } }))).toEqual(model(events, fromMs, toMs, (e) => e.extra['team'] === 'infra'));
  expect(strip(await store.hookCounters({ ...range, filters: { 'user.id': 'u-1' } }))).toEqual(model(events, fromMs, toMs, (e) => e.userId === 'u-1'));
  const byTeam = new Map((await store.breakdown(BASH, 'team', range)).map(({ value, ...c }) => [value, c]));
  expect(byTeam).toEqual(foldBy(events, fromMs, toMs, (e) => String(e.extra['team']), (e) => e.hookId === BASH));
  for (const stepMs of [MINUTE, 5 * MINUTE, 7 * MINUTE]) {
    const bucket = (e: HookEvent): number => Math.floor(e.timeMs / stepMs) * stepMs;
    // Buckets start on the step; the first counts from the range's start, the last until its end, as the figures do.
    const aligned = alignRange(fromMs, toMs);
    expect(await store.series(BASH, { ...range, stepMs })).toEqual(foldBy(events, aligned.fromMs, aligned.toMs, bucket, (e) => e.hookId === BASH));
    expect(await store.series(BASH, { ...range, stepMs, filters: { team: 'web' } })).toEqual(foldBy(events, aligned.fromMs, aligned.toMs, bucket, (e) => e.hookId === BASH && e.extra['team'] === 'web'));
    const fleet = (await store.fleetSeries({ ...range, stepMs })).map((b) => `${b.hookId} ${b.bucketMs} ${b.executions} ${b.outputsPersisted}`).sort();
    const want = [...foldBy(events, aligned.fromMs, aligned.toMs, (e) => `${e.hookId} ${bucket(e)}`)].map(([k, c]) => `${k} ${c.executions} ${c.outputsPersisted}`).sort();
    expect(fleet).toEqual(want);
  }
}

describe.each([sqliteBackend(), postgresBackend()])('minute rollups kept for their own horizon ($name)', (backend) => {
  beforeAll(() => backend.setup(), 120_000);
  afterAll(() => backend.teardown());

  it('answers minutes older than the minute horizon from the raw events, exact to the minute, before and after retention ran', async () => {
    const store = await holding(backend, all);
    // Partial hours at both edges, as the overview's oldest hour or a chart of a few hours ten days ago.
    const ranges: [number, number][] = [[OLD + 13 * MINUTE, OLD + 4 * HOUR + 29 * MINUTE], [OLD + 61 * MINUTE, OLD + 118 * MINUTE], [OLD - DAY + 5 * MINUTE, OLD + 2 * HOUR + MINUTE]];
    for (const [a, b] of ranges) await expectExact(store, all, a, b);
    await store.prune(NOW - RETENTION.eventsMs, NOW - 400 * DAY);
    for (const [a, b] of ranges) await expectExact(store, all, a, b);
    // A range from ten days ago up to now reads all three sources: the same answer.
    await expectExact(store, all, OLD + 13 * MINUTE, NOW);
    // A late event for those minutes (its minute rollup written again, past the horizon): answers kept for the
    // closed minutes follow it, and the stray minute row is never read.
    const late = [...all, ev(OLD + 20 * MINUTE + 5_000, 7)];
    await store.ingest([late.at(-1)!]);
    for (const [a, b] of ranges) await expectExact(store, late, a, b);
    await store.close();
  }, 60_000);

  it('deletes minute rollups older than the minute horizon and keeps the recent ones, the hour and day rollups', async () => {
    const store = await holding(backend, all);
    const horizon = NOW - RETENTION.minuteRollupsMs - 2 * HOUR;
    expect(await backend.minuteRows(store, horizon)).toBeGreaterThan(0);
    await store.prune(NOW - RETENTION.eventsMs, NOW - 400 * DAY);
    expect(await backend.minuteRows(store, horizon)).toBe(0);
    expect(await backend.minuteRows(store, Number.MAX_SAFE_INTEGER)).toBe(new Set(recent.map((e) => `${e.hookId} ${Math.floor(e.timeMs / MINUTE)} ${e.serviceVersion}`)).size);
    // The hour rollups still answer whole hours of the pruned minutes and of the events beyond their retention.
    expect(strip(await store.hookCounters({ fromMs: OLD, toMs: OLD + 3 * HOUR }))).toEqual(model(all, OLD, OLD + 3 * HOUR));
    expect(strip(await store.hookCounters({ fromMs: ANCIENT, toMs: ANCIENT + 3 * HOUR }))).toEqual(model(all, ANCIENT, ANCIENT + 3 * HOUR));
    await store.close();
  }, 60_000);

  it('after the retentions are raised, what an earlier prune deleted is never counted on: minutes from the raw events, beyond them whole hours', async () => {
    // Four days ago: past the minute horizon of 2 days, within one of 7.
    const mid = spread(Math.floor((NOW - 4 * DAY) / HOUR) * HOUR);
    const events = [...all, ...mid];
    const first = await holding(backend, events);
    await first.prune(NOW - RETENTION.eventsMs, NOW - 400 * DAY);
    await first.close();
    const store = await backend.reopen(first, { eventsMs: 60 * DAY, minuteRollupsMs: 7 * DAY });
    try {
      const start = mid[0]!.timeMs - 13_000;
      for (const [a, b] of [[start + 13 * MINUTE, start + 4 * HOUR + 29 * MINUTE], [start + 61 * MINUTE, start + 118 * MINUTE]] as const) {
        await expectExact(store, events, a, b);
      }
      // Forty days ago the raw events went with the old events retention: whole hours, as before the raise.
      expect(strip(await store.hookCounters({ fromMs: ANCIENT + 70 * MINUTE, toMs: ANCIENT + 130 * MINUTE }))).toEqual(model(events, ANCIENT + HOUR, ANCIENT + 3 * HOUR));
      // The bounds hold after the next prune under the longer retentions too.
      await store.prune(NOW - 60 * DAY, NOW - 400 * DAY);
      await expectExact(store, events, start + 13 * MINUTE, start + 4 * HOUR + 29 * MINUTE);
    } finally {
      await store.close();
    }
  }, 60_000);

  it('beyond the events retention, a range covers the whole hours it touches, whether or not retention already ran', async () => {
    const store = await holding(backend, all);
    const check = async (): Promise<void> => {
      // Minutes 10 to 20 and 70 to 130 of hours that only the hour rollups keep: the hours they touch.
      expect(strip(await store.hookCounters({ fromMs: ANCIENT + 10 * MINUTE, toMs: ANCIENT + 20 * MINUTE }))).toEqual(model(all, ANCIENT, ANCIENT + HOUR));
      expect(strip(await store.hookCounters({ fromMs: ANCIENT + 70 * MINUTE, toMs: ANCIENT + 130 * MINUTE }))).toEqual(model(all, ANCIENT + HOUR, ANCIENT + 3 * HOUR));
      expect(strip(await store.hookCounters({ fromMs: ANCIENT + 70 * MINUTE, toMs: ANCIENT + 130 * MINUTE, filters: { team: 'infra' } }))).toEqual(model(all, ANCIENT + HOUR, ANCIENT + 3 * HOUR, (e) => e.extra['team'] === 'infra'));
      // Only raw events know a user: none are left to answer.
      expect((await store.hookCounters({ fromMs: ANCIENT, toMs: ANCIENT + 3 * HOUR, filters: { 'user.id': 'u-1' } })).size).toBe(0);
      expect((await store.series(BASH, { fromMs: ANCIENT, toMs: ANCIENT + 3 * HOUR, stepMs: HOUR, filters: { 'user.id': 'u-1' } })).size).toBe(0);
      expect((await store.fleetSeries({ fromMs: ANCIENT, toMs: ANCIENT + 3 * HOUR, stepMs: 5 * MINUTE, filters: { 'user.id': 'u-1' } })).length).toBe(0);
      // A 5-minute series there: each hour's total in the bucket holding its start, the first hour in the first bucket.
      const from = ANCIENT + 70 * MINUTE;
      const series = await store.series(BASH, { fromMs: from, toMs: ANCIENT + 130 * MINUTE, stepMs: 5 * MINUTE });
      const hours = foldBy(all, ANCIENT + HOUR, ANCIENT + 3 * HOUR, (e) => Math.max(from, Math.floor(e.timeMs / HOUR) * HOUR), (e) => e.hookId === BASH);
      expect(series).toEqual(hours);
      // Whatever the step, a series' buckets add up to the figures of its range: the same whole hours.
      for (const stepMs of [5 * MINUTE, HOUR, 3 * HOUR, DAY]) {
        for (const [a, b] of [[ANCIENT + 10 * MINUTE, ANCIENT + 20 * MINUTE], [ANCIENT + 70 * MINUTE, ANCIENT + 130 * MINUTE], [ANCIENT - 50 * MINUTE, ANCIENT + 5 * HOUR + 7 * MINUTE]] as const) {
          const q = { fromMs: a, toMs: b, stepMs };
          const figures = (await store.hookCounters(q)).get(BASH);
          const buckets = [...(await store.series(BASH, q)).values()];
          expect(buckets.reduce((n, c) => n + c.executions, 0), `${stepMs} ${a}..${b}`).toBe(figures?.executions ?? 0);
          const fleet = (await store.fleetSeries(q)).filter((x) => x.hookId === BASH);
          expect(fleet.reduce((n, x) => n + x.executions, 0), `fleet ${stepMs} ${a}..${b}`).toBe(figures?.executions ?? 0);
        }
      }
    };
    await check();
    await store.prune(NOW - RETENTION.eventsMs, NOW - 400 * DAY);
    await check();
    await store.close();
  }, 60_000);
});

describe('replicas of one PostgreSQL database under different retentions', () => {
  const backend = postgresBackend();
  beforeAll(() => backend.setup(), 120_000);
  afterAll(() => backend.teardown());

  it('a replica keeping more than the one that prunes stops counting on what that prune deletes', async () => {
    const mid = spread(Math.floor((NOW - 4 * DAY) / HOUR) * HOUR);
    const events = [...all, ...mid];
    const leader = await holding(backend, events);
    // Open before the prune, with the retentions raised on it first (a rolling change of the setting).
    const replica = await backend.reopen(leader, { eventsMs: 60 * DAY, minuteRollupsMs: 7 * DAY }, { boundsRefreshMs: 0 });
    try {
      const start = mid[0]!.timeMs - 13_000;
      await expectExact(replica, events, start + 13 * MINUTE, start + 4 * HOUR + 29 * MINUTE);
      // The leader, on the shorter retentions, deletes the raw events of forty days ago and the minutes of four.
      await leader.prune(NOW - RETENTION.eventsMs, NOW - 400 * DAY);
      await expectExact(replica, events, start + 13 * MINUTE, start + 4 * HOUR + 29 * MINUTE);
      expect(strip(await replica.hookCounters({ fromMs: ANCIENT + 70 * MINUTE, toMs: ANCIENT + 130 * MINUTE }))).toEqual(model(events, ANCIENT + HOUR, ANCIENT + 3 * HOUR));
      expect(strip(await replica.hookCounters({ fromMs: ANCIENT + 70 * MINUTE, toMs: ANCIENT + 130 * MINUTE, filters: { team: 'infra' } }))).toEqual(model(events, ANCIENT + HOUR, ANCIENT + 3 * HOUR, (e) => e.extra['team'] === 'infra'));
    } finally {
      await replica.close();
      await leader.close();
    }
  }, 60_000);
});
