/**
 * One conformance suite for the Store interface, run against every backend: SQLite (a temp file) and
 * PostgreSQL (a throwaway cluster from Debian's binaries). Answers are checked against an in-memory model that
 * folds the same events with counters.ts, so a backend that drops, double counts or mis-buckets shows up.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientVersion, HookCounters } from './model.ts';
import { overflowHookName, type HookEvent } from '../hooks/model.ts';
import type { TranscriptFinding } from '../hooks/transcript-findings.ts';
import { hookId } from '../hooks/extract.ts';
import { PostgresStore } from './postgres/index.ts';
import { startTestServer, type TestServer } from '../../test/support/postgres/server.ts';
import { DAY, HOUR, MINUTE } from './segments.ts';
import { SqliteStore } from './sqlite/index.ts';
import { MAX_OVERFLOW_HOOKS } from './hook-limit.ts';
import { foldBy, foldPerHook, model, strip } from '../../test/support/store-model.ts';
import { alignRange } from './segments.ts';
import { UnknownDimensionError, type FleetBucket, type Store } from './store.ts';
import { evaluateRule } from '../alerting/rules.ts';
import { parseRules } from '../alerting/settings.ts';
import { LATE_ARRIVAL_MS } from './sql.ts';

const DIMENSIONS = ['team', 'project'];
/** 2026-03-02T00:00:00Z, a Monday: UTC day, hour and minute aligned. */
const T0 = Date.UTC(2026, 2, 2);

let seq = 0;
/** A complete execution with size data unless overridden. */
function ev(over: Partial<HookEvent> = {}): HookEvent {
  const hookEvent = over.hookEvent ?? 'PostToolUse';
  const hookName = over.hookName ?? 'PostToolUse:Bash';
  seq++;
  return {
    kind: 'complete',
    dedupKey: `k-${seq}-${Math.random().toString(36).slice(2)}`,
    hookId: hookId(hookEvent, hookName),
    hookEvent,
    hookName,
    timeMs: T0 + 10 * MINUTE,
    numHooks: 1,
    numSuccess: 1,
    numBlocking: 0,
    numNonBlockingError: 0,
    numCancelled: 0,
    durationMs: 25,
    stdoutChars: 1200,
    additionalContextChars: null,
    systemMessageChars: null,
    initialUserMessageChars: null,
    outputsPersisted: 0,
    sizesKnown: true,
    status: 'ok',
    serviceName: 'claude-code',
    serviceVersion: '2.1.332',
    sessionId: 's-1',
    userId: 'u-1',
    userEmail: 'a@example.com',
    userAccountUuid: 'acc-1',
    organizationId: 'org-1',
    terminalType: 'vscode',
    source: 'otlp',
    extra: {},
    ...over,
  };
}

/**
 * Random events over four days and their hours, with several hooks, teams, projects, client versions, users and
 * organisations (some without a team or project, some with an empty team or user), starts among the completes,
 * unknown sizes among the known.
 */
function dimensionEvents(seed: number, count: number, days = 4): HookEvent[] {
  const arb = fc.record({
    t: fc.integer({ min: 0, max: days * DAY - 1 }),
    hook: fc.constantFrom('PostToolUse:Bash', 'PostToolUse:Edit', 'SessionStart:startup'),
    team: fc.constantFrom('infra', 'web', 'data', '', undefined),
    project: fc.constantFrom('x', 'y', undefined),
    version: fc.constantFrom('2.1.332', '2.1.279', '2.2.0'),
    user: fc.constantFrom('u-1', 'u-2', 'u-3', 'u-4', 'u-5', ''),
    org: fc.constantFrom('org-1', 'org-2'),
    start: fc.constantFrom(false, false, false, true),
    size: fc.option(fc.integer({ min: 0, max: 30_000 }), { nil: null, freq: 4 }),
    // Now and then none: a client that does not say how many commands ran.
    numHooks: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null, freq: 6 }),
  });
  return fc.sample(fc.array(arb, { minLength: count, maxLength: count }), { numRuns: 1, seed })[0]!.map((x) => {
    const hookEvent = x.hook.split(':')[0]!;
    const size = x.start ? null : x.size;
    const over = size !== null && size > 10_000;
    return ev({
      kind: x.start ? 'start' : 'complete', timeMs: T0 + x.t, hookName: x.hook, hookEvent, hookId: hookId(hookEvent, x.hook),
      stdoutChars: size, sizesKnown: size !== null, numHooks: x.numHooks, numSuccess: x.numHooks,
      outputsPersisted: size === null ? null : over ? 1 : 0, status: size === null ? 'unknown' : over ? 'over' : 'ok',
      serviceVersion: x.version, userId: x.user, organizationId: x.org,
      extra: { ...(x.team === undefined ? {} : { team: x.team }), ...(x.project === undefined ? {} : { project: x.project }) },
    });
  });
}

/** Filters the dimension tests ask, with what each keeps: rolled, base-rollup, combined, several and raw-only dimensions. */
const DIMENSION_FILTERS: [Record<string, string>, (e: HookEvent) => boolean][] = [
  [{ team: 'infra' }, (e) => e.extra['team'] === 'infra'],
  [{ team: 'web' }, (e) => e.extra['team'] === 'web'],
  [{ 'service.version': '2.1.279' }, (e) => e.serviceVersion === '2.1.279'],
  [{ team: 'data', 'service.version': '2.2.0' }, (e) => e.extra['team'] === 'data' && e.serviceVersion === '2.2.0'],
  [{ team: 'infra', project: 'x' }, (e) => e.extra['team'] === 'infra' && e.extra['project'] === 'x'],
  [{ 'organization.id': 'org-2' }, (e) => e.organizationId === 'org-2'],
  [{ 'user.id': 'u-3' }, (e) => e.userId === 'u-3'],
  [{ team: 'nobody' }, () => false],
  // The empty value: the events without the attribute and those with it empty, rolled and raw.
  [{ team: '' }, (e) => (e.extra['team'] ?? '') === ''],
  [{ team: '', 'service.version': '2.2.0' }, (e) => (e.extra['team'] ?? '') === '' && e.serviceVersion === '2.2.0'],
  [{ 'user.id': '' }, (e) => e.userId === ''],
];

/** A breakdown as a map from value to counters (the model's shape). */
function byValue(rows: { value: string }[]): Map<string | number, HookCounters> {
  return new Map(rows.map(({ value, ...c }) => [value, c as HookCounters]));
}

/** Every hook's breakdown at once as a map from hook id to its breakdown in the model's shape. */
function byHookValue(breakdowns: Map<string, { value: string }[]>): Map<string, Map<string | number, HookCounters>> {
  return new Map([...breakdowns].map(([id, rows]) => [id, byValue(rows)]));
}

interface OpenOptions {
  maxHooks?: number;
  dimensions?: string[];
  retention?: { eventsMs: number; minuteRollupsMs: number };
}

/**
 * Takes a database back to what a store from before dimension rollups leaves (SQLite migration 6, PostgreSQL
 * migration 8 create empty tables; the rows come from the raw events when a store opens): no rows, no record of
 * the dimensions rolled up. Later migrations (the compact event layout) stay applied.
 */
const UNDO_DIM_ROLLUPS = (): string => `DELETE FROM rollup_dim_1h; DELETE FROM rollup_dim_1d; DELETE FROM rollup_dim_client_1h; DELETE FROM rollup_dim_client_1d; DELETE FROM store_meta WHERE key = 'rolled_dimensions';`;

interface Backend {
  name: string;
  setup(): Promise<void>;
  open(opts?: OpenOptions): Promise<Store>;
  /** A second handle on the same data (another replica), or undefined when the backend has one writer. */
  openSibling?(of: Store): Promise<Store>;
  /**
   * Closes the store, opens the window in which events may be stored under their bare-hash key (as the migration
   * to time-prefixed keys does for a database written before it), and opens it again.
   */
  reopenAsUpgrade(of: Store): Promise<Store>;
  /** Closes the store and opens its data again (a restart), with other options when given. */
  reopen(of: Store, opts?: OpenOptions): Promise<Store>;
  /**
   * Closes the store, takes its database back to the schema before dimension rollups existed (the schema a
   * database written by the previous version has), and opens it again, which migrates it.
   */
  reopenBeforeDimRollups(of: Store): Promise<Store>;
  /**
   * From now on, `between` (a commit) runs once the store's first read statement has answered, and every later
   * read statement waits for it; the returned function restores the store's reads.
   */
  betweenReads(store: Store, between: () => Promise<void>): () => void;
  teardown(): Promise<void>;
}

/**
 * A read statement runner (`send`) whose first statement runs at once, and every later one after `between` ran,
 * which waits for the first statement's answer: a commit lands between an answer's first statement and the others.
 */
function afterFirstRead<A extends unknown[], R>(send: (...args: A) => Promise<R>, between: () => Promise<void>): (...args: A) => Promise<R> {
  let first: Promise<unknown> | undefined;
  let gate: Promise<void> | undefined;
  return (...args) => {
    if (!first) {
      const answer = send(...args);
      first = answer.catch(() => undefined);
      return answer;
    }
    gate ??= first.then(between);
    return gate.then(() => send(...args));
  };
}

function sqliteBackend(): Backend {
  let dir = '';
  let n = 0;
  const paths = new WeakMap<Store, string>();
  /** Closes the store, runs `sql` on its file (back to an older schema), and opens it again (migrating it). */
  const reopenAfter = async (of: Store, sql: string): Promise<Store> => {
    const path = paths.get(of);
    if (!path) throw new Error('unknown store');
    await of.close();
    const db = new DatabaseSync(path);
    db.exec(sql);
    db.close();
    const store = new SqliteStore({ path, synchronous: 'normal', dimensions: DIMENSIONS });
    paths.set(store, path);
    return store;
  };
  return {
    name: 'sqlite',
    async setup() {
      dir = mkdtempSync(join(tmpdir(), 'hookwatch-conf-'));
    },
    async open(opts = {}) {
      const path = join(dir, `s${++n}.db`);
      const store = new SqliteStore({ path, synchronous: 'normal', dimensions: DIMENSIONS, ...opts });
      paths.set(store, path);
      return store;
    },
    async reopen(of: Store, opts = {}) {
      const path = paths.get(of);
      if (!path) throw new Error('unknown store');
      await of.close();
      const store = new SqliteStore({ path, synchronous: 'normal', dimensions: DIMENSIONS, ...opts });
      paths.set(store, path);
      return store;
    },
    // What migration 2 records for a database that already holds events (the window of bare-hash keys). The whole
    // upgrade from a database written by the previous layout is tested in store/upgrade.test.ts.
    reopenAsUpgrade: (of: Store) => reopenAfter(of, `DELETE FROM store_meta WHERE key = 'legacy_keys_before'; INSERT INTO store_meta (key, value) SELECT 'legacy_keys_before', CAST(MAX(time_ms) + 86400000 AS TEXT) FROM events;`),
    reopenBeforeDimRollups: (of: Store) => reopenAfter(of, UNDO_DIM_ROLLUPS()),
    betweenReads(store, between) {
      // Every read statement goes to the read workers through their `send`.
      const readers = (store as unknown as { readers: { send: (...args: unknown[]) => Promise<unknown> } }).readers;
      const send = readers.send.bind(readers);
      readers.send = afterFirstRead(send, between);
      return () => {
        readers.send = send;
      };
    },
    async teardown() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postgresBackend(): Backend {
  let server: TestServer | undefined;
  const urls = new WeakMap<Store, string>();
  /** Closes the store, runs `sql` on its database (back to an older schema), and opens it again (migrating it). */
  const reopenAfter = async (of: Store, sql: string): Promise<Store> => {
    const url = urls.get(of);
    if (!url) throw new Error('unknown store');
    await of.close();
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
    const store = await PostgresStore.open({ url, dimensions: DIMENSIONS, poolSize: 4 });
    urls.set(store, url);
    return store;
  };
  return {
    name: 'postgres',
    async setup() {
      server = await startTestServer();
    },
    async open(opts = {}) {
      if (!server) throw new Error('PostgreSQL test server did not start');
      const url = await server.createDatabase();
      const store = await PostgresStore.open({ url, dimensions: DIMENSIONS, poolSize: 4, ...opts });
      urls.set(store, url);
      return store;
    },
    async openSibling(of: Store) {
      const url = urls.get(of);
      if (!url) throw new Error('unknown store');
      const store = await PostgresStore.open({ url, dimensions: DIMENSIONS, poolSize: 4 });
      urls.set(store, url);
      return store;
    },
    async reopen(of: Store, opts = {}) {
      const url = urls.get(of);
      if (!url) throw new Error('unknown store');
      await of.close();
      const store = await PostgresStore.open({ url, dimensions: DIMENSIONS, poolSize: 4, ...opts });
      urls.set(store, url);
      return store;
    },
    reopenAsUpgrade: (of: Store) => reopenAfter(of, `DELETE FROM store_meta WHERE key = 'legacy_keys_before'; INSERT INTO store_meta (key, value) SELECT 'legacy_keys_before', (MAX(time_ms) + 86400000)::text FROM events;`),
    reopenBeforeDimRollups: (of: Store) => reopenAfter(of, UNDO_DIM_ROLLUPS()),
    betweenReads(_store, between) {
      // The read statements (not BEGIN, COMMIT or session settings) of the read pool's connections ('hookwatch-read').
      type Query = (this: pg.Client, ...args: unknown[]) => unknown;
      const query = pg.Client.prototype.query as unknown as Query;
      const held = afterFirstRead((client: pg.Client, args: unknown[]) => query.apply(client, args) as Promise<unknown>, between);
      const wrapped: Query = function (...args) {
        const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text ?? '';
        const app = (this as unknown as { connectionParameters: { application_name?: string } }).connectionParameters.application_name;
        if (app !== 'hookwatch-read' || !/^\s*(SELECT|WITH)\b/i.test(text)) return query.apply(this, args);
        // The pool asks with a callback, a client held for a transaction without one.
        const callback = typeof args.at(-1) === 'function' ? (args.pop() as (err: unknown, r?: unknown) => void) : undefined;
        const answer = held(this, args);
        if (!callback) return answer;
        answer.then((r) => callback(null, r), (err: unknown) => callback(err));
        return undefined;
      };
      pg.Client.prototype.query = wrapped as unknown as typeof pg.Client.prototype.query;
      return () => {
        pg.Client.prototype.query = query as unknown as typeof pg.Client.prototype.query;
      };
    },
    async teardown() {
      await server?.stop();
    },
  };
}

describe.each([sqliteBackend(), postgresBackend()])('Store conformance: $name', (backend) => {
  const opened: Store[] = [];
  const open = async (opts?: OpenOptions): Promise<Store> => {
    const s = await backend.open(opts);
    opened.push(s);
    return s;
  };

  beforeAll(async () => {
    await backend.setup();
  });
  afterAll(async () => {
    await Promise.all(opened.map((s) => s.close()));
    await backend.teardown();
  });

  it('an event stored under its bare key before keys began with the event time is not stored again', async () => {
    const old = await open();
    const t = T0 + 5 * MINUTE;
    const bare = `bare-${seq}`;
    // What the previous version stored: the bare hash.
    expect((await old.ingest([ev({ dedupKey: bare, timeMs: t })])).inserted).toHaveLength(1);
    const store = await backend.reopenAsUpgrade(old);
    opened.push(store);
    // The same event again (a client retry, a transcript imported twice), now with a time-prefixed key.
    const fresh = ev({ dedupKey: `000000001fresh-${seq}`, legacyKey: `fresh-${seq}`, timeMs: t });
    const r = await store.ingest([ev({ dedupKey: `000000001${bare}`, legacyKey: bare, timeMs: t }), fresh]);
    expect(r.inserted.map((e) => e.dedupKey)).toEqual([fresh.dedupKey]);
    expect(r.duplicates).toBe(1);
    expect([...(await store.hookCounters({ fromMs: T0, toMs: T0 + HOUR })).values()][0]?.executions).toBe(2);
  });

  it('a hook\'s first and last seen never run ahead of the store\'s clock, while its events keep their own time', async () => {
    const store = await open();
    const future = Date.now() + 7 * DAY;
    const e = ev({ hookEvent: 'Stop', hookName: 'Stop', hookId: hookId('Stop', 'Stop'), timeMs: future });
    const before = Date.now();
    await store.ingest([e]);
    const info = await store.hook(e.hookId);
    expect(info?.lastSeenMs).toBeGreaterThanOrEqual(before);
    expect(info?.lastSeenMs).toBeLessThanOrEqual(Date.now());
    expect(info?.firstSeenMs).toBeLessThanOrEqual(Date.now());
    expect(await store.lastEventMs()).toBeLessThanOrEqual(Date.now());
    expect((await store.hookCounters({ fromMs: future - HOUR, toMs: future + HOUR })).get(e.hookId)?.executions).toBe(1);
  });

  it('counts the executions whose sizes may be sums in every rollup and in the raw events alike', async () => {
    const store = await open();
    // Two commands, a count not sent, one command, two commands without sizes, a start: the first two count.
    const events = [
      ev({ timeMs: T0 + MINUTE, numHooks: 2, numSuccess: 2, stdoutChars: 9000, status: 'near', extra: { team: 'web' } }),
      ev({ timeMs: T0 + 2 * MINUTE, numHooks: null, numSuccess: null, stdoutChars: 3000, extra: { team: 'web' } }),
      ev({ timeMs: T0 + 3 * MINUTE, stdoutChars: 300, extra: { team: 'infra' } }),
      ev({ timeMs: T0 + 4 * MINUTE, numHooks: 2, numSuccess: 2, stdoutChars: null, outputsPersisted: null, sizesKnown: false, status: 'unknown', extra: { team: 'infra' } }),
      ev({ timeMs: T0 + 5 * MINUTE, kind: 'start', numHooks: null, stdoutChars: null, outputsPersisted: null, sizesKnown: false, status: 'unknown', extra: { team: 'web' } }),
    ];
    await store.ingest(events);
    const id = events[0]!.hookId;
    // Counted here apart from the model's fold: executions with sizes whose num_hooks is over 1 or not sent.
    const mayBeSums = (keep: (e: HookEvent) => boolean): number => events.filter((e) => keep(e) && e.kind === 'complete' && e.sizesKnown && (e.numHooks === null || e.numHooks > 1)).length;
    const hour = { fromMs: T0, toMs: T0 + HOUR };
    const partly = { fromMs: T0 + 30_000, toMs: T0 + 10 * MINUTE };
    const c = (await store.hookCounters(hour)).get(id)!;
    // Two commands for two executions among the sized ones, yet two of them may be sums.
    expect([c.executions, c.numHooks, c.sizesMaySumExecutions]).toEqual([4, 5, mayBeSums(() => true)]);
    expect(mayBeSums(() => true)).toBe(2);
    expect((await store.hookCounters(partly)).get(id)?.sizesMaySumExecutions).toBe(2);
    expect((await store.hookCounters({ ...hour, filters: { team: 'web' } })).get(id)?.sizesMaySumExecutions).toBe(mayBeSums((e) => e.extra['team'] === 'web'));
    expect((await store.hookCounters({ ...hour, filters: { team: 'infra' } })).get(id)?.sizesMaySumExecutions).toBe(0);
    expect((await store.hookCounters({ ...partly, filters: { 'user.id': 'u-1' } })).get(id)?.sizesMaySumExecutions).toBe(mayBeSums((e) => e.userId === 'u-1'));
    expect(Object.fromEntries((await store.breakdown(id, 'team', hour)).map((r) => [r.value, r.sizesMaySumExecutions]))).toEqual({ web: 2, infra: 0 });
    expect((await store.breakdown(id, 'session.id', hour)).reduce((n, r) => n + r.sizesMaySumExecutions, 0)).toBe(2);
    const series = [...await store.series(id, { ...hour, stepMs: MINUTE })];
    expect(series.filter(([, b]) => b.sizesMaySumExecutions > 0).map(([t, b]) => [t, b.sizesMaySumExecutions])).toEqual([[T0 + MINUTE, 1], [T0 + 2 * MINUTE, 1]]);
    for (const day of [{ fromMs: T0, toMs: T0 + DAY }, { fromMs: T0 - DAY, toMs: T0 + 2 * DAY }]) {
      expect(strip(await store.hookCounters(day))).toEqual(model(events, day.fromMs, day.toMs));
    }
  });

  it('takes no lower bound of one string from an execution without num_hooks, in every rollup and in the raw events alike', async () => {
    const store = await open();
    // A count not sent (12,000: a sum over any number of commands), two commands (3,000: one string at least 1,500).
    const events = [
      ev({ timeMs: T0 + MINUTE, numHooks: null, numSuccess: null, stdoutChars: 12_000, outputsPersisted: null, status: 'near', extra: { team: 'web' } }),
      ev({ timeMs: T0 + 2 * MINUTE, numHooks: 2, numSuccess: 2, stdoutChars: 3000, extra: { team: 'infra' } }),
    ];
    await store.ingest(events);
    const id = events[0]!.hookId;
    const bounds = (c: { maxChars: { stdout: number | null }; maxCharsLowerBound: { stdout: number | null } } | undefined) => [c?.maxChars.stdout, c?.maxCharsLowerBound.stdout];
    const hour = { fromMs: T0, toMs: T0 + HOUR };
    const partly = { fromMs: T0 + 30_000, toMs: T0 + 10 * MINUTE };
    expect(bounds((await store.hookCounters(hour)).get(id))).toEqual([12_000, 1500]);
    expect(bounds((await store.hookCounters(partly)).get(id))).toEqual([12_000, 1500]);
    expect(bounds((await store.hookCounters({ ...hour, filters: { team: 'web' } })).get(id))).toEqual([12_000, null]);
    expect(bounds((await store.hookCounters({ ...partly, filters: { 'user.id': 'u-1' } })).get(id))).toEqual([12_000, 1500]);
    expect(Object.fromEntries((await store.breakdown(id, 'team', hour)).map((r) => [r.value, bounds(r)]))).toEqual({ web: [12_000, null], infra: [3000, 1500] });
    expect((await store.breakdown(id, 'session.id', hour)).map((r) => bounds(r))).toEqual([[12_000, 1500]]);
    const series = [...await store.series(id, { ...hour, stepMs: MINUTE })];
    expect(series.filter(([, b]) => b.executions > 0).map(([t, b]) => [t, ...bounds(b)])).toEqual([[T0 + MINUTE, 12_000, null], [T0 + 2 * MINUTE, 3000, 1500]]);
    for (const day of [{ fromMs: T0, toMs: T0 + DAY }, { fromMs: T0 - DAY, toMs: T0 + 2 * DAY }]) {
      expect(strip(await store.hookCounters(day))).toEqual(model(events, day.fromMs, day.toMs));
    }
  });

  it('counts executions, starts and outcomes per hook', async () => {
    const store = await open();
    const other = { hookEvent: 'UserPromptSubmit', hookName: 'UserPromptSubmit' };
    const events = [
      ev({ numHooks: 2, numSuccess: 2, stdoutChars: 9000, durationMs: 40 }),
      ev({ numSuccess: 0, numBlocking: 1, stdoutChars: 300, durationMs: 10 }),
      ev({ stdoutChars: 24000, outputsPersisted: 1, status: 'over', durationMs: 70 }),
      ev({ kind: 'start', numHooks: 1, numSuccess: null, numBlocking: null, numNonBlockingError: null, numCancelled: null, durationMs: null, stdoutChars: null, outputsPersisted: null, sizesKnown: false, status: 'unknown' }),
      ev({ ...other, hookId: hookId(other.hookEvent, other.hookName), additionalContextChars: 8500, stdoutChars: null, status: 'near' }),
    ];
    const r = await store.ingest(events);
    expect(r.inserted).toHaveLength(5);
    expect(r.duplicates).toBe(0);
    const got = await store.hookCounters({ fromMs: T0, toMs: T0 + HOUR });
    const a = got.get(events[0]!.hookId);
    expect(a).toMatchObject({
      executions: 3, starts: 1, numHooks: 4, success: 3, blocking: 1, outputsPersisted: 1, executionsWithPersisted: 1,
      sizeUnknownExecutions: 0, durationMsSum: 120, durationMsMax: 70,
    });
    expect(a?.maxChars.stdout).toBe(24000);
    expect(a?.maxCharsLowerBound.stdout).toBe(24000);
    expect(a?.sumChars.stdout).toBe(33300);
    expect(a?.info).toMatchObject({ hookEvent: 'PostToolUse', hookName: 'PostToolUse:Bash' });
    const b = got.get(events[4]!.hookId);
    expect(b).toMatchObject({ executions: 1, nearExecutions: 1 });
    expect(b?.maxChars.additionalContext).toBe(8500);
    expect(strip(got)).toEqual(model(events, T0, T0 + HOUR));
    expect(await store.lastEventMs()).toBe(T0 + 10 * MINUTE);
    expect(await store.hook(events[0]!.hookId)).toMatchObject({ firstSeenMs: T0 + 10 * MINUTE, lastSeenMs: T0 + 10 * MINUTE });
    expect(await store.hook('0000000000000000')).toBeUndefined();
    // Many in one read: the known ones, by id; an unknown id is left out.
    const many = await store.hooks([events[0]!.hookId, events[4]!.hookId, '0000000000000000']);
    expect([...many.keys()].sort()).toEqual([events[0]!.hookId, events[4]!.hookId].sort());
    expect(many.get(events[0]!.hookId)).toEqual(await store.hook(events[0]!.hookId));
    expect(many.get(events[4]!.hookId)).toEqual(await store.hook(events[4]!.hookId));
    expect(await store.hooks([])).toEqual(new Map());
  });

  it('counts a retried batch once, across calls and within one batch', async () => {
    const store = await open();
    const events = Array.from({ length: 50 }, (_, i) => ev({ timeMs: T0 + i * 7 * MINUTE }));
    expect((await store.ingest(events)).inserted).toHaveLength(50);
    const again = await store.ingest(events);
    expect(again.inserted).toHaveLength(0);
    expect(again.duplicates).toBe(50);
    const fresh = ev({ timeMs: T0 + 3 * MINUTE });
    const mixed = await store.ingest([events[3]!, fresh, fresh, events[7]!]);
    expect(mixed.inserted.map((e) => e.dedupKey)).toEqual([fresh.dedupKey]);
    expect(mixed.duplicates).toBe(3);
    const got = await store.hookCounters({ fromMs: T0, toMs: T0 + DAY });
    expect(got.get(fresh.hookId)?.executions).toBe(51);
    expect(strip(got)).toEqual(model([...events, fresh], T0, T0 + DAY));
    expect(await store.ingest([])).toEqual({ inserted: [], duplicates: 0 });
  });

  it('tells the stored events from the duplicates wherever these fall in a large batch', async () => {
    const store = await open();
    const events = Array.from({ length: 150 }, (_, i) => ev({ timeMs: T0 + i * MINUTE }));
    const odd = events.filter((_, i) => i % 2 === 1);
    expect((await store.ingest(odd)).inserted).toHaveLength(75);
    // Every other event stored already, and one of the new ones sent twice within the batch.
    const batch = [...events.slice(0, 100), events[40]!, ...events.slice(100)];
    const r = await store.ingest(batch);
    const even = events.filter((_, i) => i % 2 === 0);
    // In no promised order: PostgreSQL answers in key order.
    expect(r.inserted.map((e) => e.dedupKey).sort()).toEqual(even.map((e) => e.dedupKey).sort());
    expect(r.duplicates).toBe(76);
    expect(strip(await store.hookCounters({ fromMs: T0, toMs: T0 + DAY }))).toEqual(model(events, T0, T0 + DAY));
  });

  it('stores every event with its own attributes when one batch brings many new attribute sets, some repeated in it and some stored before', async () => {
    let store = await open();
    const old = (i: number, timeMs: number): HookEvent => ev({ timeMs, sessionId: `s-old-${i}`, userId: `u-old-${i}`, extra: { team: `t-${i % 3}` } });
    const stored = Array.from({ length: 10 }, (_, i) => old(i, T0 + 2 * HOUR + i * MINUTE));
    await store.ingest(stored);
    // Reopened, so the batch finds the stored sets in the database rather than in memory.
    store = await backend.reopen(store);
    opened.push(store);
    const fresh = Array.from({ length: 300 }, (_, i) => ev({ timeMs: T0 + (i % 60) * MINUTE, sessionId: `s-new-${i}`, userId: `u-new-${i % 70}`, extra: { team: `t-${i % 4}`, project: `p-${i}` } }));
    // Sessions of the batch seen again later in it (their sets' last_ms moves within the commit), and the stored
    // sessions both hours before and hours after their sets' bounds.
    const repeated = Array.from({ length: 100 }, (_, i) => ({ ...(fresh[i % 50] as HookEvent), dedupKey: `again-${seq}-${i}`, timeMs: T0 + 4 * HOUR + i * MINUTE }));
    const known = Array.from({ length: 20 }, (_, i) => old(i % 10, i % 2 === 0 ? T0 + 10 * MINUTE : T0 + 5 * HOUR + i * MINUTE));
    const batch = [...fresh, ...repeated, ...known].map((e, i) => ({ e, k: (i * 7919) % 421 })).sort((a, b) => a.k - b.k).map((x) => x.e);
    expect((await store.ingest(batch)).inserted).toHaveLength(420);
    const all = [...stored, ...batch];
    const id = all[0]!.hookId;
    const day = { fromMs: T0, toMs: T0 + 6 * HOUR };
    expect(byValue(await store.breakdown(id, 'session.id', day))).toEqual(foldBy(all, day.fromMs, day.toMs, (e) => e.sessionId));
    expect(byValue(await store.breakdown(id, 'user.id', day))).toEqual(foldBy(all, day.fromMs, day.toMs, (e) => e.userId));
    expect(byValue(await store.breakdown(id, 'project', day))).toEqual(foldBy(all, day.fromMs, day.toMs, (e) => e.extra['project'] ?? ''));
    // Filters find each set over any stretch its events fall in: whole hours, and minutes read from the events.
    const cases: [string, number, number][] = [
      ['s-old-4', T0, T0 + HOUR], ['s-old-3', T0 + 5 * HOUR, T0 + 6 * HOUR], ['s-old-5', T0 + 2 * HOUR, T0 + 2 * HOUR + 10 * MINUTE],
      ['s-new-7', T0 + 4 * HOUR, T0 + 5 * HOUR], ['s-new-7', T0, T0 + 30 * MINUTE], ['s-new-299', T0, T0 + HOUR],
    ];
    for (const [session, fromMs, toMs] of cases) {
      const keep = (e: HookEvent): boolean => e.sessionId === session;
      expect(strip(await store.hookCounters({ fromMs, toMs, filters: { 'session.id': session } })), `${session} ${fromMs - T0}`).toEqual(model(all, fromMs, toMs, keep));
    }
    expect(strip(await store.hookCounters({ ...day, filters: { team: 't-1' } }))).toEqual(model(all, day.fromMs, day.toMs, (e) => e.extra['team'] === 't-1'));
  });

  it('counts once an event sent again with another time than its key was made from (moved from the far future to the receive time)', async () => {
    const store = await open();
    // The key carries the time the client stamped (a day ahead); each receipt moved the event to its receive time.
    const ahead = T0 + DAY + 5 * MINUTE;
    const key = ahead.toString(36).padStart(9, '0') + 'x'.repeat(27);
    const first = ev({ dedupKey: key, timeMs: T0 + 10 * MINUTE });
    expect((await store.ingest([first])).inserted).toHaveLength(1);
    const retry = await store.ingest([{ ...first, timeMs: T0 + 40 * MINUTE }]);
    expect(retry.inserted).toHaveLength(0);
    expect(retry.duplicates).toBe(1);
    expect([...(await store.hookCounters({ fromMs: T0, toMs: T0 + HOUR, filters: { team: 'none' } })).values()]).toEqual([]);
    expect((await store.breakdown(first.hookId, 'user.id', { fromMs: T0, toMs: T0 + HOUR })).map((r) => [r.value, r.executions])).toEqual([['u-1', 1]]);
  });

  it('keeps unknown sizes null: blind executions never read as zero', async () => {
    const store = await open();
    const blind = (t: number): HookEvent => ev({ timeMs: t, stdoutChars: null, sizesKnown: false, status: 'unknown', outputsPersisted: null });
    await store.ingest([blind(T0), blind(T0 + MINUTE)]);
    const only = (await store.hookCounters({ fromMs: T0, toMs: T0 + HOUR })).values().next().value;
    expect(only?.executions).toBe(2);
    expect(only?.sizeUnknownExecutions).toBe(2);
    expect(only?.maxChars).toEqual({ stdout: null, additionalContext: null, systemMessage: null, initialUserMessage: null });
    expect(only?.sumChars.stdout).toBeNull();
    // A known size later fills in the max; a later blind execution never overwrites it with null.
    await store.ingest([ev({ timeMs: T0 + 2 * MINUTE, stdoutChars: 500 })]);
    await store.ingest([blind(T0 + 2 * MINUTE)]);
    const c = (await store.hookCounters({ fromMs: T0, toMs: T0 + HOUR })).values().next().value;
    expect(c?.maxChars.stdout).toBe(500);
    expect(c?.sumChars.stdout).toBe(500);
    expect(c?.maxChars.systemMessage).toBeNull();
    expect(c?.sizeUnknownExecutions).toBe(3);
    // The same through the raw-event path (a filter forces it).
    const f = (await store.hookCounters({ fromMs: T0, toMs: T0 + HOUR, filters: { 'service.name': 'claude-code' } })).values().next().value;
    expect(f?.maxChars.stdout).toBe(500);
    expect(f?.maxChars.systemMessage).toBeNull();
    expect(f?.sizeUnknownExecutions).toBe(3);
  });

  it('answers ranges spanning minute, hour and day rollups exactly to the minute', async () => {
    const store = await open();
    // Events over four days at irregular times, including bucket edges.
    const times = [0, 59_999, MINUTE, 17 * MINUTE + 30_000, HOUR - 1, HOUR, 5 * HOUR + 3 * MINUTE, DAY - MINUTE, DAY, DAY + 13 * HOUR + 41 * MINUTE,
      2 * DAY + 7 * MINUTE, 2 * DAY + 22 * HOUR, 3 * DAY - 1, 3 * DAY + 2 * HOUR + 59 * MINUTE + 59_999, 3 * DAY + 4 * HOUR];
    const events = times.map((t, i) => ev({ timeMs: T0 + t, stdoutChars: 100 * (i + 1), hookName: i % 2 ? 'PostToolUse:Bash' : 'PostToolUse:Edit', hookId: hookId('PostToolUse', i % 2 ? 'PostToolUse:Bash' : 'PostToolUse:Edit') }));
    await store.ingest(events);
    const ranges: [number, number][] = [
      [T0, T0 + 4 * DAY],
      [T0 + 30_000, T0 + 3 * DAY + 3 * HOUR],
      [T0 + 17 * MINUTE, T0 + DAY + 13 * HOUR + 41 * MINUTE],
      [T0 + HOUR, T0 + 2 * DAY + 22 * HOUR + 1],
      [T0 + DAY - MINUTE, T0 + DAY + MINUTE],
      [T0 + 5 * HOUR, T0 + 5 * HOUR + 4 * MINUTE],
      [T0 + 2 * DAY, T0 + 2 * DAY],
    ];
    for (const [from, to] of ranges) {
      expect(strip(await store.hookCounters({ fromMs: from, toMs: to })), `range ${new Date(from).toISOString()}..${new Date(to).toISOString()}`).toEqual(model(events, from, to));
    }
  });

  it('agrees with the model on random events and ranges', async () => {
    const store = await open();
    const arbEvent = fc.record({
      t: fc.integer({ min: 0, max: 5 * DAY }),
      hook: fc.constantFrom('PostToolUse:Bash', 'PostToolUse:Edit', 'SessionStart'),
      size: fc.option(fc.integer({ min: 0, max: 60_000 }), { nil: null }),
      numHooks: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null, freq: 6 }),
      persisted: fc.integer({ min: 0, max: 2 }),
      version: fc.constantFrom('2.1.332', '2.1.279'),
    });
    const events = fc.sample(fc.array(arbEvent, { minLength: 200, maxLength: 200 }), { numRuns: 1, seed: 42 })[0]!.map((x) =>
      ev({
        timeMs: T0 + x.t, hookName: x.hook, hookEvent: x.hook.split(':')[0]!, hookId: hookId(x.hook.split(':')[0]!, x.hook), stdoutChars: x.size,
        sizesKnown: x.size !== null, numHooks: x.numHooks, numSuccess: x.numHooks, outputsPersisted: x.size === null ? null : x.persisted,
        status: x.size === null ? 'unknown' : x.persisted ? 'over' : 'ok', serviceVersion: x.version,
      }),
    );
    await store.ingest(events);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: -DAY, max: 6 * DAY }), fc.integer({ min: 0, max: 4 * DAY }), async (a, len) => {
        const got = strip(await store.hookCounters({ fromMs: T0 + a, toMs: T0 + a + len }));
        expect(got).toEqual(model(events, T0 + a, T0 + a + len));
      }),
      { numRuns: 25, seed: 7 },
    );
  });

  it('refuses a series step that is not a positive whole number of ms (it is written into the SQL)', async () => {
    const store = await open();
    for (const stepMs of [0, -60_000, 1.5, Number.NaN, 2 ** 60]) {
      await expect(store.series('0000000000000000', { fromMs: T0, toMs: T0 + HOUR, stepMs })).rejects.toThrow(RangeError);
    }
  });

  it('returns series buckets for minute, hour, day and uneven steps', async () => {
    const store = await open();
    const events = [0, 30_000, 2 * MINUTE, 61 * MINUTE, 3 * HOUR + 5 * MINUTE, DAY + 1, DAY + 2 * HOUR, 2 * DAY + 23 * HOUR + 59 * MINUTE].map((t) => ev({ timeMs: T0 + t }));
    await store.ingest(events);
    const id = events[0]!.hookId;
    for (const step of [MINUTE, 5 * MINUTE, HOUR, 90 * MINUTE, DAY]) {
      const got = await store.series(id, { fromMs: T0, toMs: T0 + 3 * DAY, stepMs: step });
      const want = new Map<number, number>();
      for (const e of events) {
        const b = Math.floor(e.timeMs / step) * step;
        want.set(b, (want.get(b) ?? 0) + 1);
      }
      expect(new Map([...got].map(([b, c]) => [b, c.executions])), `step ${step}`).toEqual(want);
    }
    // Filtered series read raw events.
    const filtered = await store.series(id, { fromMs: T0, toMs: T0 + 3 * DAY, stepMs: DAY, filters: { 'user.id': 'u-1' } });
    expect([...filtered.values()].reduce((s, c) => s + c.executions, 0)).toBe(events.length);
    expect((await store.series(id, { fromMs: T0, toMs: T0 + 3 * DAY, stepMs: DAY, filters: { 'user.id': 'nobody' } })).size).toBe(0);
  });

  it('answers every hook\'s series at once, the same as one hook at a time, filtered or not', async () => {
    const store = await open();
    const events = [
      ...[0, 30 * MINUTE, 2 * HOUR, DAY + HOUR].map((t) => ev({ timeMs: T0 + t, extra: { team: 'infra' } })),
      ...[5 * MINUTE, 3 * HOUR].map((t) => ev({ hookName: 'SessionStart:startup', hookEvent: 'SessionStart', timeMs: T0 + t, stdoutChars: 12_000, outputsPersisted: 1, status: 'over', extra: { team: 'web' } })),
      // A client that does not report num_outputs_persisted, measured over the cap: an execution over, no output count.
      ev({ hookName: 'Stop:report', hookEvent: 'Stop', timeMs: T0 + 2 * HOUR + 30 * MINUTE, additionalContextChars: 12_500, outputsPersisted: null, status: 'over', extra: { team: 'web' } }),
    ];
    await store.ingest(events);
    for (const [stepMs, filters] of [[HOUR, undefined], [DAY, undefined], [HOUR, { team: 'web' }]] as const) {
      const q = { fromMs: T0, toMs: T0 + 2 * DAY, stepMs, ...(filters ? { filters } : {}) };
      const fleet = await store.fleetSeries(q);
      const ids = [...new Set(events.filter((e) => !filters || e.extra['team'] === filters.team).map((e) => e.hookId))];
      expect([...new Set(fleet.map((r) => r.hookId))].sort(), `${stepMs} ${JSON.stringify(filters)}`).toEqual(ids.sort());
      for (const id of ids) {
        const want = [...(await store.series(id, q))].map(([bucketMs, c]) => ({
          hookId: id, bucketMs, executions: c.executions, outputsPersisted: c.outputsPersisted, executionsWithPersisted: c.executionsWithPersisted, sizeUnknownExecutions: c.sizeUnknownExecutions,
          largest: Math.max(...Object.values(c.maxChars).filter((v): v is number => v !== null)),
        }));
        expect(fleet.filter((r) => r.hookId === id).sort((a, b) => a.bucketMs - b.bucketMs), `${id} ${stepMs}`).toEqual(want.sort((a, b) => a.bucketMs - b.bucketMs));
        // Asked for this hook only (with one the store does not know), the same rows.
        expect((await store.fleetSeries({ ...q, hookIds: [id, 'ffffffffffffffff'] })).sort((a, b) => a.bucketMs - b.bucketMs), `${id} ${stepMs} alone`).toEqual(want);
      }
      expect(await store.fleetSeries({ ...q, hookIds: [] })).toEqual([]);
      expect((await store.hookCounters({ ...q, hookIds: [] })).size).toBe(0);
    }
    // A late event for a bucket already answered shows in the next answer (nothing kept hides it).
    const q = { fromMs: T0, toMs: T0 + 2 * DAY, stepMs: HOUR };
    const before = (await store.fleetSeries(q)).find((r) => r.hookId === events[0]!.hookId && r.bucketMs === T0)?.executions ?? 0;
    await store.ingest([ev({ timeMs: T0 + 20 * MINUTE })]);
    expect((await store.fleetSeries(q)).find((r) => r.hookId === events[0]!.hookId && r.bucketMs === T0)?.executions).toBe(before + 1);
    // The newest event matching a filter, and none for a filter nothing matches.
    expect(await store.lastEventMs({ team: 'web' })).toBe(T0 + 3 * HOUR);
    expect(await store.lastEventMs({ team: 'infra' })).toBe(T0 + DAY + HOUR);
    expect(await store.lastEventMs({ team: 'nobody' })).toBeNull();
  });

  it('filters and breaks down by built-in and configured extra dimensions', async () => {
    const store = await open();
    const events = [
      ev({ userEmail: 'a@example.com', extra: { team: 'infra' }, stdoutChars: 100 }),
      ev({ userEmail: 'a@example.com', extra: { team: 'infra', project: 'x' }, stdoutChars: 200 }),
      ev({ userEmail: 'b@example.com', extra: { team: 'web' }, stdoutChars: 12_000, outputsPersisted: 1, status: 'over' }),
      ev({ userEmail: 'c@example.com', extra: {}, serviceVersion: '2.1.279', stdoutChars: null, sizesKnown: false, status: 'unknown' }),
      ev({ userEmail: "o'brien@example.com", extra: { team: "q'a" } }),
    ];
    await store.ingest(events);
    const range = { fromMs: T0, toMs: T0 + HOUR };
    const id = events[0]!.hookId;
    const cases: [Record<string, string>, (e: HookEvent) => boolean][] = [
      [{ team: 'infra' }, (e) => e.extra['team'] === 'infra'],
      [{ team: "q'a" }, (e) => e.extra['team'] === "q'a"],
      [{ 'user.email': 'b@example.com' }, (e) => e.userEmail === 'b@example.com'],
      [{ 'service.version': '2.1.279' }, (e) => e.serviceVersion === '2.1.279'],
      [{ team: 'infra', project: 'x' }, (e) => e.extra['team'] === 'infra' && e.extra['project'] === 'x'],
      [{ team: 'nobody' }, () => false],
    ];
    for (const [filters, keep] of cases) {
      expect(strip(await store.hookCounters({ ...range, filters })), JSON.stringify(filters)).toEqual(model(events, range.fromMs, range.toMs, keep));
    }
    const byTeam = await store.breakdown(id, 'team', range);
    expect(byTeam.map((r) => [r.value, r.executions])).toEqual(expect.arrayContaining([['infra', 2], ['web', 1], ['', 1], ["q'a", 1]]));
    expect(byTeam[0]).toMatchObject({ value: 'infra', executions: 2 });
    expect(byTeam.find((r) => r.value === 'web')?.outputsPersisted).toBe(1);
    const byVersion = await store.breakdown(id, 'service.version', { ...range, filters: { team: 'infra' } });
    expect(byVersion.map((r) => [r.value, r.executions])).toEqual([['2.1.332', 2]]);
    await expect(store.breakdown(id, 'password', range)).rejects.toBeInstanceOf(UnknownDimensionError);
    await expect(store.hookCounters({ ...range, filters: { "team') OR 1=1 --": 'x' } })).rejects.toBeInstanceOf(UnknownDimensionError);
  });

  it('answers every hook\'s breakdown at once as each hook\'s own, unknown sizes unknown, the minute being written included', async () => {
    const store = await open();
    const now = Date.now();
    const teams = ['infra', 'web', '', undefined];
    // Over the last 26 hours, up to the minute being written; those of team web from a client without size data.
    const at = (i: number, timeMs: number): HookEvent => {
      const hookName = `PostToolUse:tool${i % 7}`;
      const team = teams[i % teams.length];
      const blind = team === 'web';
      return ev({
        timeMs, hookName, hookId: hookId('PostToolUse', hookName), userId: `u-${i % 3}`, serviceVersion: i % 2 ? '2.1.332' : '2.1.279', extra: team === undefined ? {} : { team },
        stdoutChars: blind ? null : 150 * i, sizesKnown: !blind, status: blind ? 'unknown' : 'ok', outputsPersisted: blind ? null : 0,
      });
    };
    const events = Array.from({ length: 90 }, (_, i) => at(i, now - ((i * 97 * MINUTE) % (26 * HOUR))));
    await store.ingest(events);
    // A rule's window: its day up to a few minutes ahead.
    const q = { fromMs: now - DAY, toMs: now + 5 * MINUTE };
    const r = alignRange(q.fromMs, q.toMs);
    const attribute: Record<string, (e: HookEvent) => string> = { team: (e) => e.extra['team'] ?? '', 'user.id': (e) => e.userId, 'service.version': (e) => e.serviceVersion };
    const check = async (all: HookEvent[], label: string): Promise<void> => {
      for (const [dimension, key] of Object.entries(attribute)) {
        const got = await store.fleetBreakdown(dimension, q);
        expect(byHookValue(got), `${label} by ${dimension}`).toEqual(foldPerHook(all, r.fromMs, r.toMs, key));
        // In the order of each hook's own breakdown: most executions first.
        for (const [id, rows] of got) expect(rows.map((x) => x.executions), `${label} ${id} by ${dimension}`).toEqual((await store.breakdown(id, dimension, q)).map((x) => x.executions));
      }
    };
    await check(events, 'stored');
    // Unknown, not zero, where no execution had size data.
    const web = [...(await store.fleetBreakdown('team', q)).values()].flatMap((rows) => rows.filter((x) => x.value === 'web'));
    expect(web.length).toBeGreaterThan(3);
    for (const x of web) expect([x.executions > 0, x.sizeUnknownExecutions === x.executions, x.maxChars.stdout, x.sumChars.stdout]).toEqual([true, true, null, null]);
    // Executions of the minute being written, one of a value not seen before: read again, not kept from the answer before.
    const more = [at(1, Date.now()), at(2, Date.now()), { ...at(3, Date.now()), extra: { team: 'data' } }];
    await store.ingest(more);
    await check([...events, ...more], 'more');
    expect(await store.fleetBreakdown('team', { ...q, hookIds: [] })).toEqual(new Map());
    await expect(store.fleetBreakdown('password', q)).rejects.toBeInstanceOf(UnknownDimensionError);
  });

  it('a filter on the empty value matches the events without the attribute and those with it empty, as a breakdown\'s "" row counts them, on every read', async () => {
    const store = await open();
    // Each combination of team (missing, "", "x": a rolled dimension) and user.id ("", "x": read raw; a missing
    // built-in is stored as "") at the edges of a range and in its whole hours and days.
    const events: HookEvent[] = [];
    for (const [i, t] of [10 * MINUTE, 40 * MINUTE, HOUR + 5 * MINUTE, 3 * HOUR, DAY + 20 * MINUTE, DAY + 50 * MINUTE].entries()) {
      for (const team of [undefined, '', 'x']) {
        for (const userId of ['', 'x']) {
          const hookName = i % 2 ? 'PostToolUse:Edit' : 'PostToolUse:Bash';
          events.push(ev({ timeMs: T0 + t, hookName, hookId: hookId('PostToolUse', hookName), extra: team === undefined ? {} : { team }, userId, serviceVersion: userId ? '2.1.332' : '2.1.279' }));
        }
      }
    }
    await store.ingest(events);
    // The attribute as an event carries it, missing read as "" (the value a breakdown names it by).
    const attribute = (e: HookEvent, dim: string): string => (dim === 'user.id' ? e.userId : (e.extra[dim] ?? ''));
    const q = { fromMs: T0 + 30 * MINUTE, toMs: T0 + DAY + 30 * MINUTE };
    const hooks = [...new Set(events.map((e) => e.hookId))];
    const cases: Record<string, string>[] = [{ team: '' }, { team: 'x' }, { 'user.id': '' }, { 'user.id': 'x' }, { team: '', 'user.id': '' }, { team: '', 'service.version': '2.1.279' }];
    for (const filters of cases) {
      const keep = (e: HookEvent): boolean => Object.entries(filters).every(([dim, v]) => (dim === 'service.version' ? e.serviceVersion : attribute(e, dim)) === v);
      const label = JSON.stringify(filters);
      expect(strip(await store.hookCounters({ ...q, filters })), label).toEqual(model(events, q.fromMs, q.toMs, keep));
      expect(new Map((await store.clientVersions({ ...q, filters })).map((v) => [v.version, v.executions])), label)
        .toEqual(new Map([...foldBy(events, q.fromMs, q.toMs, (e) => e.serviceVersion, keep)].map(([v, c]) => [v, c.executions])));
      const times = events.filter(keep).map((e) => e.timeMs);
      expect(await store.lastEventMs(filters), label).toBe(Math.max(...times));
      for (const stepMs of [15 * MINUTE, HOUR, DAY]) {
        const fleet = await store.fleetSeries({ ...q, stepMs, filters });
        for (const id of hooks) {
          const want = foldBy(events.filter((e) => e.hookId === id), q.fromMs, q.toMs, (e) => Math.floor(e.timeMs / stepMs) * stepMs, keep);
          expect(new Map(await store.series(id, { ...q, stepMs, filters })), `${label} ${stepMs}`).toEqual(want);
          expect(new Map(fleet.filter((b) => b.hookId === id).map((b) => [b.bucketMs, b.executions])), `${label} ${stepMs} fleet`).toEqual(new Map([...want].map(([b, c]) => [b, c.executions])));
        }
      }
      for (const id of hooks) {
        const mine = events.filter((e) => e.hookId === id);
        expect(strip(await store.hookCounters({ ...q, filters, hookId: id })), label).toEqual(model(mine, q.fromMs, q.toMs, keep));
        for (const dimension of ['team', 'user.id']) {
          expect(byValue(await store.breakdown(id, dimension, { ...q, filters })), `${label} by ${dimension}`).toEqual(foldBy(mine, q.fromMs, q.toMs, (e) => attribute(e, dimension), keep));
        }
      }
    }
    // What a breakdown's "" row counts is what the filter on "" answers.
    for (const id of hooks) {
      for (const dimension of ['team', 'user.id']) {
        const unset = byValue(await store.breakdown(id, dimension, q)).get('');
        expect(unset?.executions).toBeGreaterThan(0);
        expect(strip(await store.hookCounters({ ...q, filters: { [dimension]: '' }, hookId: id })).get(id), `${id} by ${dimension}`).toEqual(unset);
      }
    }
  });

  it('keeps clients apart whatever characters their names and versions hold', async () => {
    const store = await open();
    await store.ingest([ev({ serviceName: 'a|b', serviceVersion: 'c' }), ev({ serviceName: 'a|b', serviceVersion: 'c' }), ev({ serviceName: 'a', serviceVersion: 'b|c' })]);
    const got = await store.clientVersions({ fromMs: T0, toMs: T0 + DAY });
    expect(got.map((v) => [v.serviceName, v.version, v.executions])).toEqual([['a|b', 'c', 2], ['a', 'b|c', 1]]);
  });

  it('lists client versions with the share of executions lacking size data', async () => {
    const store = await open();
    await store.ingest([
      ev({ serviceVersion: '2.1.332' }), ev({ serviceVersion: '2.1.332' }), ev({ serviceVersion: '2.1.332', stdoutChars: null, sizesKnown: false, status: 'unknown' }),
      ev({ serviceVersion: '2.1.279', stdoutChars: null, sizesKnown: false, status: 'unknown' }),
      ev({ serviceVersion: '2.1.332', kind: 'start', stdoutChars: null, sizesKnown: false, status: 'unknown' }),
      ev({ serviceVersion: '9.9.9', timeMs: T0 + 2 * DAY }),
    ]);
    const got = await store.clientVersions({ fromMs: T0, toMs: T0 + DAY });
    expect(got).toEqual([
      { serviceName: 'claude-code', version: '2.1.332', executions: 3, sizeUnknownExecutions: 1, hasSizeData: true },
      { serviceName: 'claude-code', version: '2.1.279', executions: 1, sizeUnknownExecutions: 1, hasSizeData: false },
    ]);
    const filtered = await store.clientVersions({ fromMs: T0, toMs: T0 + DAY, filters: { 'service.version': '2.1.279' } });
    expect(filtered).toEqual([{ serviceName: 'claude-code', version: '2.1.279', executions: 1, sizeUnknownExecutions: 1, hasSizeData: false }]);
  });

  it('prunes old events and rollups, keeping what is newer', async () => {
    const store = await open();
    const events = Array.from({ length: 30 }, (_, i) => ev({ timeMs: T0 + i * 4 * HOUR }));
    await store.ingest(events);
    const eventsBefore = T0 + 2 * DAY;
    const rollupsBefore = T0 + DAY;
    const r = await store.prune(eventsBefore, rollupsBefore);
    expect(r.events).toBe(events.filter((e) => e.timeMs < eventsBefore).length);
    // Minute rollups go with events (12 buckets), hour rollups before rollupsBefore (6), day rollups before it (1).
    expect(r.rollups).toBe(12 + 6 + 1);
    // PostgreSQL drops the two whole days before the bound with their partitions; SQLite has none.
    expect(r.partitions).toBe(store.kind === 'postgres' ? 2 : undefined);
    const again = await store.prune(eventsBefore, rollupsBefore);
    expect({ ...again, partitions: again.partitions ?? 0 }).toEqual({ events: 0, rollups: 0, hooks: 0, guardTrims: 0, partitions: 0 });
    // Data newer than the cut answers as before; raw-event queries no longer see pruned events.
    const after = { fromMs: eventsBefore, toMs: T0 + 6 * DAY };
    expect(strip(await store.hookCounters(after))).toEqual(model(events, after.fromMs, after.toMs));
    const all = await store.hookCounters({ fromMs: T0, toMs: T0 + 6 * DAY, filters: { 'user.id': 'u-1' } });
    expect(all.get(events[0]!.hookId)?.executions).toBe(events.length - r.events);
    // A pruned event's key may come again (a very late retry): with its first copy deleted it could not be told
    // from a first delivery, so it is not stored.
    expect(await store.ingest([events[0]!])).toMatchObject({ inserted: [], expired: 1 });
  });

  it('stores and counts events stamped before 1970 beside later ones, and retention removes them with their days', async () => {
    const store = await open();
    // 1969-12-29T01:00Z, the last millisecond of 1969, and one of 2026, in one batch.
    const events = [ev({ timeMs: -3 * DAY + HOUR }), ev({ timeMs: -1 }), ev({ timeMs: T0 })];
    expect((await store.ingest(events)).inserted).toHaveLength(3);
    const range = { fromMs: -4 * DAY, toMs: T0 + DAY };
    expect(strip(await store.hookCounters(range))).toEqual(model(events, range.fromMs, range.toMs));
    expect((await store.hookCounters({ fromMs: -4 * DAY, toMs: 0 })).get(events[0]!.hookId)?.executions).toBe(2);
    const r = await store.prune(T0 - DAY, T0 - DAY);
    expect(r.events).toBe(2);
    // PostgreSQL drops both days before 1970 with their partitions.
    expect(r.partitions).toBe(store.kind === 'postgres' ? 2 : undefined);
    expect(strip(await store.hookCounters(range))).toEqual(model(events.slice(2), range.fromMs, range.toMs));
  });

  it('puts events stamped before 1970 in the series buckets that hold them, from the raw events and from every rollup', async () => {
    const store = await open({ dimensions: ['team'] });
    // 1969-12-29T01:20Z, 1969-12-31T22:10Z and its last millisecond, then 1970's first, one of each team.
    const events = [-3 * DAY + HOUR + 20 * MINUTE, -2 * HOUR + 10 * MINUTE, -1, 0].map((timeMs, i) => ev({ timeMs, extra: { team: i % 2 ? 'web' : 'infra', project: 'x' } }));
    expect((await store.ingest(events)).inserted).toHaveLength(4);
    // A dimension added later: its rollups are folded from the stored events.
    const again = await backend.reopen(store, { dimensions: ['team', 'project'] });
    opened.push(again);
    const id = events[0]!.hookId;
    const from = -4 * DAY;
    const to = DAY;
    for (const stepMs of [15 * MINUTE, HOUR, 3 * HOUR, DAY]) {
      const bucket = (e: HookEvent): number => Math.floor(e.timeMs / stepMs) * stepMs;
      // No filter (base rollups), a rolled dimension, one folded from the events, and one only the events keep.
      const cases: [Record<string, string> | undefined, (e: HookEvent) => boolean][] = [[undefined, () => true], [{ team: 'web' }, (e) => e.extra['team'] === 'web'], [{ project: 'x' }, () => true], [{ 'user.id': 'u-1' }, () => true]];
      for (const [filters, keep] of cases) {
        const q = { fromMs: from, toMs: to, stepMs, ...(filters ? { filters } : {}) };
        const want = foldBy(events, from, to, bucket, keep);
        expect(await again.series(id, q), `${stepMs} ${JSON.stringify(filters)}`).toEqual(want);
        const fleet = (await again.fleetSeries(q)).map((b) => [b.bucketMs, b.executions]);
        expect(fleet, `fleet ${stepMs} ${JSON.stringify(filters)}`).toEqual([...want].map(([b, c]) => [b, c.executions]).sort((a, b) => Number(a[0]) - Number(b[0])));
      }
    }
  });

  it('serves ping until closed, and closes twice safely', async () => {
    const store = await open();
    await expect(store.ping()).resolves.toBeUndefined();
    expect(await store.lastEventMs()).toBeNull();
    await store.close();
    await store.close();
    await expect(store.ping()).rejects.toThrow();
  });

  it('keeps a meta value: created once, the first writer wins, on every replica and after a restart (the privacy hash key)', async () => {
    const store = await open();
    expect(await store.metaValue('privacy.hash_key', () => 'first')).toBe('first');
    expect(await store.metaValue('privacy.hash_key', () => 'second')).toBe('first');
    if (backend.openSibling) {
      const sibling = await backend.openSibling(store);
      opened.push(sibling);
      expect(await sibling.metaValue('privacy.hash_key', () => 'sibling')).toBe('first');
    }
    const again = await backend.reopen(store);
    opened.push(again);
    expect(await again.metaValue('privacy.hash_key', () => 'third')).toBe('first');
  });

  // Replicas share only a PostgreSQL store; a SQLite file has one writing process, so this case is PostgreSQL's.
  if (backend.openSibling) it('never double counts overlapping batches ingested concurrently by several replicas', async () => {
    const first = await open();
    const replicas = [first];
    for (let i = 0; i < 3; i++) {
      const s = await backend.openSibling!(first);
      opened.push(s);
      replicas.push(s);
    }
    const events = Array.from({ length: 1200 }, (_, i) => ev({
      timeMs: T0 + (i % 97) * 13 * MINUTE,
      hookName: `PostToolUse:tool${i % 5}`, hookId: hookId('PostToolUse', `PostToolUse:tool${i % 5}`),
      stdoutChars: (i * 37) % 15_000, serviceVersion: i % 3 ? '2.1.332' : '2.1.300', userId: `u-${i % 7}`,
    }));
    // Each replica sends every event at least once, in overlapping batches of varying size and order.
    const rand = fc.sample(fc.integer({ min: 0, max: 1_000_000 }), { numRuns: 10_000, seed: 3 });
    let ri = 0;
    const next = (): number => rand[ri++ % rand.length]!;
    const work = replicas.map(async (store) => {
      const order = [...events].sort(() => (next() % 2 ? 1 : -1));
      let inserted = 0;
      for (let i = 0; i < order.length;) {
        const size = 20 + (next() % 150);
        const batch = order.slice(i, i + size);
        // Repeat a few events of the previous batch: a retry that overlaps.
        if (i > 0) batch.push(...order.slice(Math.max(0, i - 5), i));
        inserted += (await store.ingest(batch)).inserted.length;
        i += size;
      }
      return inserted;
    });
    const counts = await Promise.all(work);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(events.length);
    for (const store of replicas) {
      expect(strip(await store.hookCounters({ fromMs: T0, toMs: T0 + 2 * DAY }))).toEqual(model(events, T0, T0 + 2 * DAY));
    }
    const byUser = await first.breakdown(events[0]!.hookId, 'user.id', { fromMs: T0, toMs: T0 + 2 * DAY });
    expect(byUser.reduce((s, r) => s + r.executions, 0)).toBe(events.filter((e) => e.hookId === events[0]!.hookId).length);
  });

  it('keeps transcript findings apart from telemetry and stores each finding id once', async () => {
    const store = await open();
    const hook = hookId('SessionStart', 'SessionStart:startup');
    const finding = (id: string, over: Partial<TranscriptFinding> = {}): TranscriptFinding => ({
      id, kind: 'output', hookId: hook, hookEvent: 'SessionStart', hookName: 'SessionStart:startup', command: 'emit ctx 12000',
      sessionId: 's-1', timeMs: T0 + MINUTE, field: 'additionalContext', outcome: 'persisted', chars: 12_000, ...over,
    });
    const batch = [
      finding('run-1', { kind: 'run', field: 'success', outcome: '', chars: null }),
      finding('saved:/a.txt'),
      finding('run-2', { kind: 'run', field: 'success', outcome: '', chars: null, command: 'emit ctx 10000', sessionId: 's-2' }),
      finding('out-2', { command: 'emit ctx 10000', outcome: 'delivered', chars: 10_000, sessionId: 's-2' }),
      finding('out-3', { command: 'emit ctx 10000', outcome: 'unconfirmed', chars: 20, sessionId: 's-2' }),
      // Outside the range asked below.
      finding('late', { timeMs: T0 + DAY }),
    ];
    expect(await store.recordTranscriptFindings(batch)).toEqual({ inserted: 6, duplicates: 0 });
    // The same transcripts sent again: nothing new.
    expect(await store.recordTranscriptFindings(batch.slice(0, 4))).toEqual({ inserted: 0, duplicates: 4 });
    expect(await store.transcriptCommands(hook, { fromMs: T0, toMs: T0 + HOUR })).toEqual([
      { command: 'emit ctx 12000', runs: 1, outputs: 1, delivered: 0, persisted: 1, unconfirmed: 0, largestOutputChars: 12_000, largestDeliveredChars: null, sessions: 1 },
      { command: 'emit ctx 10000', runs: 1, outputs: 1, delivered: 1, persisted: 0, unconfirmed: 1, largestOutputChars: 10_000, largestDeliveredChars: 10_000, sessions: 1 },
    ]);
    // Telemetry figures do not see them.
    expect((await store.hookCounters({ fromMs: T0, toMs: T0 + 2 * DAY })).size).toBe(0);
    // Retention removes them with the raw events.
    expect(await store.pruneTranscriptFindings(T0 + HOUR)).toBe(5);
    expect(await store.transcriptCommands(hook, { fromMs: T0, toMs: T0 + 2 * DAY })).toEqual([
      { command: 'emit ctx 12000', runs: 0, outputs: 1, delivered: 0, persisted: 1, unconfirmed: 0, largestOutputChars: 12_000, largestDeliveredChars: null, sessions: 1 },
    ]);
  });

  it('stores the outcome learned later of an output first sent unconfirmed, and never the other way round', async () => {
    const store = await open();
    const hook = hookId('SessionStart', 'SessionStart:startup');
    const output = (id: string, outcome: string, chars: number): TranscriptFinding => ({
      id, kind: 'output', hookId: hook, hookEvent: 'SessionStart', hookName: 'SessionStart:startup', command: 'emit ctx 12000',
      sessionId: 's-1', timeMs: T0 + MINUTE, field: 'additionalContext', outcome, chars,
    });
    // A transcript sent while its delivery record was still being written, then complete, then an old copy again.
    expect(await store.recordTranscriptFindings([output('run-1#additionalContext', 'unconfirmed', 12_000), output('run-2#additionalContext', 'unconfirmed', 9_000)])).toEqual({ inserted: 2, duplicates: 0 });
    expect(await store.recordTranscriptFindings([output('run-1#additionalContext', 'persisted', 12_000), output('run-2#additionalContext', 'delivered', 9_000)])).toEqual({ inserted: 2, duplicates: 0 });
    expect(await store.recordTranscriptFindings([output('run-1#additionalContext', 'unconfirmed', 12_000)])).toEqual({ inserted: 0, duplicates: 1 });
    // One request naming an output twice (its old and its new outcome) is taken whole.
    expect(await store.recordTranscriptFindings([output('run-3#additionalContext', 'unconfirmed', 20), output('run-3#additionalContext', 'delivered', 20)])).toEqual({ inserted: 1, duplicates: 1 });
    expect(await store.transcriptCommands(hook, { fromMs: T0, toMs: T0 + HOUR })).toEqual([
      { command: 'emit ctx 12000', runs: 0, outputs: 3, delivered: 2, persisted: 1, unconfirmed: 0, largestOutputChars: 12_000, largestDeliveredChars: 9_000, sessions: 1 },
    ]);
  });

  it('does not store again an output the previous release stored under its previous id', async () => {
    const store = await open();
    const hook = hookId('SessionStart', 'SessionStart:startup');
    const output = (id: string, outcome: string, chars: number, previousId?: string): TranscriptFinding => ({
      id, ...(previousId === undefined ? {} : { previousId }), kind: 'output', hookId: hook, hookEvent: 'SessionStart', hookName: 'SessionStart:startup',
      command: 'emit ctx 12000', sessionId: 's-1', timeMs: T0 + MINUTE, field: 'additionalContext', outcome, chars,
    });
    // As the previous release stored them: a persisted output under its saved file, a delivered one under its
    // delivery record's place.
    expect(await store.recordTranscriptFindings([
      output('saved:/p/s/tool-results/hook-a-additionalContext.txt', 'persisted', 12_000),
      output('rec-2#1', 'delivered', 9_000),
    ])).toEqual({ inserted: 2, duplicates: 0 });
    // The same transcripts sent after the upgrade, and an output the previous release never saw.
    expect(await store.recordTranscriptFindings([
      output('run-1#additionalContext', 'persisted', 12_000, 'saved:/p/s/tool-results/hook-a-additionalContext.txt'),
      output('run-2#additionalContext', 'delivered', 9_000, 'rec-2#1'),
      output('run-4#additionalContext', 'delivered', 700, 'rec-4#0'),
    ])).toEqual({ inserted: 1, duplicates: 2 });
    expect(await store.recordTranscriptFindings([output('run-4#additionalContext', 'delivered', 700, 'rec-4#0')])).toEqual({ inserted: 0, duplicates: 1 });
    expect(await store.transcriptCommands(hook, { fromMs: T0, toMs: T0 + HOUR })).toEqual([
      { command: 'emit ctx 12000', runs: 0, outputs: 3, delivered: 2, persisted: 1, unconfirmed: 0, largestOutputChars: 12_000, largestDeliveredChars: 9_000, sessions: 1 },
    ]);
  });

  it('past store.maxHooks, events of new hook names are counted under one overflow hook per hook event, none dropped', async () => {
    const store = await open({ maxHooks: 3 });
    const names = Array.from({ length: 8 }, (_, i) => `PreToolUse:tool-${i}`);
    const first = await store.ingest(names.slice(0, 2).map((n) => ev({ hookEvent: 'PreToolUse', hookName: n })));
    expect(first.folded ?? 0).toBe(0);
    // One more name fits; the next five of PreToolUse and two of Stop go to overflow hooks.
    const batch = [
      ...names.slice(2).map((n) => ev({ hookEvent: 'PreToolUse', hookName: n, outputsPersisted: 1, status: 'over' })),
      ev({ hookEvent: 'Stop', hookName: 'Stop:a' }),
      ev({ hookEvent: 'Stop', hookName: 'Stop:b' }),
      // A known hook stays itself.
      ev({ hookEvent: 'PreToolUse', hookName: names[0]! }),
    ];
    const r = await store.ingest(batch);
    expect(r.inserted).toHaveLength(batch.length);
    expect(r.folded).toBe(7);
    expect(new Set(r.overflowHooks)).toEqual(new Set(['PreToolUse:(overflow)', 'Stop:(overflow)']));
    const all = await store.hookCounters({ fromMs: T0, toMs: T0 + HOUR });
    const byName = new Map([...all.values()].map((c) => [c.info.hookName, c]));
    expect([...byName.keys()].sort()).toEqual([names[0], names[1], names[2], 'PreToolUse:(overflow)', 'Stop:(overflow)'].sort());
    expect(byName.get('PreToolUse:(overflow)')?.executions).toBe(5);
    expect(byName.get('PreToolUse:(overflow)')?.outputsPersisted).toBe(5);
    expect(byName.get('Stop:(overflow)')?.executions).toBe(2);
    expect((await store.overflowHooks()).map((h) => h.hookName).sort()).toEqual(['PreToolUse:(overflow)', 'Stop:(overflow)']);
    const total = [...all.values()].reduce((n, c) => n + c.executions, 0);
    expect(total).toBe(2 + batch.length);
    // A retry of the same batch is a duplicate, not a second count, and still folded the same way.
    const again = await store.ingest(batch);
    expect(again.inserted).toHaveLength(0);
    expect(again.duplicates).toBe(batch.length);
  });

  it('holds store.maxHooks when batches of new hook names arrive at the same time', async () => {
    const store = await open({ maxHooks: 5 });
    const batches = Array.from({ length: 12 }, (_, i) => [ev({ hookEvent: 'PreToolUse', hookName: `PreToolUse:mh${i}` })]);
    const results = await Promise.all(batches.map((b) => store.ingest(b)));
    expect(results.reduce((n, r) => n + (r.folded ?? 0), 0)).toBe(7);
    const names = [...(await store.hookCounters({ fromMs: T0, toMs: T0 + HOUR })).values()].map((c) => c.info.hookName);
    expect(names.filter((n) => n !== 'PreToolUse:(overflow)')).toHaveLength(5);
    expect(names).toContain('PreToolUse:(overflow)');
  });

  it('does not store again events older than what retention deleted: their retry cannot be told from a first delivery', async () => {
    const store = await open();
    const old = [ev({ hookName: 'SessionStart:startup', timeMs: T0 }), ev({ hookName: 'SessionStart:startup', timeMs: T0 + MINUTE })];
    const kept = ev({ hookName: 'SessionStart:startup', timeMs: T0 + 3 * DAY });
    await store.ingest([...old, kept]);
    const count = async (): Promise<number> => (await store.hookCounters({ fromMs: T0, toMs: T0 + 4 * DAY })).get(kept.hookId)?.executions ?? 0;
    expect(await count()).toBe(3);
    await store.prune(T0 + 2 * DAY, T0 - DAY);
    const again = await store.ingest([...old, kept]);
    expect(again).toMatchObject({ inserted: [], duplicates: 1, expired: 2, expiredBeforeMs: T0 + 2 * DAY });
    expect(await count()).toBe(3);
  });

  it('refuses events older than retention.events before any retention run, as expired: no old day is stored', async () => {
    const store = await open({ retention: { eventsMs: 30 * DAY, minuteRollupsMs: 2 * DAY } });
    const before = Date.now();
    const hookName = 'SessionStart:resume';
    // Within retention: a day and 29 days back. Past it: 31 days, 40 years, and before 1970.
    const kept = [ev({ hookName, timeMs: before - DAY }), ev({ hookName, timeMs: before - 29 * DAY })];
    const old = [ev({ hookName, timeMs: before - 31 * DAY }), ev({ hookName, timeMs: before - 40 * 365 * DAY }), ev({ hookName, timeMs: -5 * DAY })];
    const r = await store.ingest([...old, ...kept]);
    const after = Date.now();
    expect({ inserted: r.inserted.length, duplicates: r.duplicates, expired: r.expired }).toEqual({ inserted: 2, duplicates: 0, expired: 3 });
    // The bound is the hour holding now - retention.events, where retention would delete from.
    expect([Math.floor((before - 30 * DAY) / HOUR) * HOUR, Math.floor((after - 30 * DAY) / HOUR) * HOUR]).toContain(r.expiredBeforeMs);
    const counters = await store.hookCounters({ fromMs: -10 * DAY, toMs: after + HOUR });
    expect(counters.get(kept[0]!.hookId)?.executions).toBe(2);
    // Sent again: the kept ones are duplicates, the old ones expired again.
    expect(await store.ingest([...old, ...kept])).toMatchObject({ inserted: [], duplicates: 2, expired: 3 });
  });

  it('retention removes hooks with nothing left, which frees room under store.maxHooks', async () => {
    const store = await open({ maxHooks: 2 });
    await store.ingest([ev({ hookName: 'PostToolUse:old', timeMs: T0 }), ev({ hookName: 'PostToolUse:kept', timeMs: T0 + 3 * DAY })]);
    const old = ev({ hookName: 'PostToolUse:old' }).hookId;
    expect(await store.hook(old)).toBeDefined();
    const r = await store.prune(T0 + 2 * DAY, T0 + 2 * DAY);
    expect(r.hooks).toBe(1);
    expect(await store.hook(old)).toBeUndefined();
    expect(await store.hook(ev({ hookName: 'PostToolUse:kept' }).hookId)).toBeDefined();
    const next = await store.ingest([ev({ hookName: 'PostToolUse:new', timeMs: T0 + 3 * DAY })]);
    expect(next.folded ?? 0).toBe(0);
  });

  it('an event first folded into an overflow hook is a duplicate when its retry maps to its own hook', async () => {
    // Time-prefixed keys, as ingest makes them: a key determines the event's time and hook, not where it is stored.
    const key = (at: number): string => `${at.toString(36).padStart(9, '0')}${`folded-${++seq}`.padEnd(27, '_')}`;
    const t = T0 + 3 * DAY;
    let store = await open({ maxHooks: 4 });
    await store.ingest([...[1, 2, 3].map((i) => ev({ hookName: `PostToolUse:old-${i}`, timeMs: T0 })), ev({ hookName: 'PostToolUse:kept', timeMs: t })]);
    // At the limit: into PostToolUse:(overflow).
    const batch = [1, 2].map((m) => ev({ hookName: 'PostToolUse:late', timeMs: t + m * MINUTE, dedupKey: key(t + m * MINUTE) }));
    expect((await store.ingest(batch)).folded).toBe(2);
    // Retention frees room (the overflow hook counts too), and another event of the hook takes it.
    expect((await store.prune(T0 + 2 * DAY, T0 + 2 * DAY)).hooks).toBe(3);
    const other = ev({ hookName: 'PostToolUse:late', timeMs: t + 3 * MINUTE, dedupKey: key(t + 3 * MINUTE) });
    expect((await store.ingest([other])).folded ?? 0).toBe(0);
    // The client retries the batch: now its events belong to PostToolUse:late, yet they were stored already.
    const again = await store.ingest(batch);
    expect(again.inserted).toHaveLength(0);
    expect(again.duplicates).toBe(2);
    const total = async (s: Store): Promise<number> => [...(await s.hookCounters({ fromMs: t, toMs: t + HOUR })).values()].reduce((n, c) => n + c.executions, 0);
    expect(await total(store)).toBe(4);

    // Past MAX_OVERFLOW_HOOKS hook events, one more goes to the catch-all hook; a restart with a larger limit
    // maps its retry (and the others') to their own hooks.
    const many = Array.from({ length: MAX_OVERFLOW_HOOKS + 3 }, (_, i) => ev({ hookEvent: `E${i}`, hookName: `E${i}:x`, timeMs: t + 4 * MINUTE, dedupKey: key(t + 4 * MINUTE) }));
    const folded = await store.ingest(many);
    // The first takes the last room; the last two find no room for an overflow hook of their own.
    expect(folded.folded).toBe(many.length - 1);
    expect(folded.overflowHooks).toContain(overflowHookName('(overflow)'));
    store = await backend.reopen(store, { maxHooks: 1000 });
    opened.push(store);
    const retried = await store.ingest(many);
    expect(retried.folded ?? 0).toBe(0);
    expect(retried.inserted).toHaveLength(0);
    expect(await total(store)).toBe(4 + many.length);
  });

  it('keeps rows stamped ahead: what ingest accepted stays until it is old', async () => {
    const store = await open();
    await store.ingest([ev({ timeMs: T0 }), ev({ timeMs: T0 + 30 * DAY })]);
    const r = await store.prune(T0 - DAY, T0 - DAY);
    expect(r.events).toBe(0);
    expect(r.rollups).toBe(0);
    expect((await store.hookCounters({ fromMs: T0, toMs: T0 + 40 * DAY })).get(ev().hookId)?.executions).toBe(2);
    // The dimension rollups of the day ahead stay too.
    expect((await store.hookCounters({ fromMs: T0, toMs: T0 + 40 * DAY, filters: { 'organization.id': 'org-1' } })).get(ev().hookId)?.executions).toBe(2);
  });

  it('finds persisted outputs by arrival time whose event time is older than the window', async () => {
    const store = await open();
    const now = T0 + 5 * HOUR;
    const late = ev({ timeMs: now - 61 * MINUTE, receivedMs: now - MINUTE, outputsPersisted: 2, status: 'over', stdoutChars: 30_000 });
    const onTime = ev({ hookName: 'PostToolUse:Edit', timeMs: now - 2 * MINUTE, receivedMs: now - MINUTE, outputsPersisted: 1, status: 'over' });
    const oldArrival = ev({ hookName: 'PostToolUse:Old', timeMs: now - 3 * HOUR, receivedMs: now - 2 * HOUR, outputsPersisted: 1, status: 'over' });
    // Measured over the cap by a client that does not report persistence: late all the same.
    const measured = ev({ hookName: 'SessionStart:startup', timeMs: now - 62 * MINUTE, receivedMs: now - MINUTE, additionalContextChars: 14_000, outputsPersisted: null, status: 'over' });
    await store.ingest([late, onTime, oldArrival, measured, ev({ timeMs: now - 70 * MINUTE, receivedMs: now - MINUTE })]);
    const m = await store.latePersisted({ receivedFromMs: now - HOUR, receivedToMs: now, eventBeforeMs: now - HOUR });
    expect(new Set(m.keys())).toEqual(new Set([late.hookId, measured.hookId]));
    expect(m.get(measured.hookId)).toMatchObject({ executions: 1, executionsWithPersisted: 1, outputsPersisted: 0, firstEventMs: measured.timeMs });
    const a = m.get(late.hookId)!;
    expect(a.outputsPersisted).toBe(2);
    expect(a.executions).toBe(1);
    expect(a.firstEventMs).toBe(late.timeMs);
    expect(a.lastEventMs).toBe(late.timeMs);
    expect(a.info.hookName).toBe('PostToolUse:Bash');
  });
  it('counts a persisted output stamped just before the window once, however little or much later it arrived', async () => {
    const store = await open();
    const now = T0 + 5 * HOUR;
    const from = now - HOUR;
    const over = (hookName: string, timeMs: number, receivedMs: number): HookEvent => ev({ hookName, timeMs, receivedMs, outputsPersisted: 1, status: 'over', stdoutChars: 30_000 });
    await store.ingest([
      // Late by seconds, across the window's start: among the arrivals just after it.
      over('PostToolUse:a', from - 1_000, from + 1_000),
      // Late by exactly LATE_ARRIVAL_MS, and by a millisecond more: one read by each part of the query.
      over('PostToolUse:b', from - 1, from - 1 + LATE_ARRIVAL_MS),
      over('PostToolUse:b', from - 2, from - 1 + LATE_ARRIVAL_MS),
      // Late by more than LATE_ARRIVAL_MS, arriving long after the window's start.
      over('PostToolUse:c', from - 10 * MINUTE, now - MINUTE),
      // In the window by event time, or arrived before it: not late arrivals of the window.
      over('PostToolUse:d', from, from + 2_000),
      over('PostToolUse:d', from - 2 * MINUTE, from - 1),
      // Arrived at the window's end: outside [from, to).
      over('PostToolUse:d', from - MINUTE, now),
    ]);
    const m = await store.latePersisted({ receivedFromMs: from, receivedToMs: now, eventBeforeMs: from });
    const byName = Object.fromEntries([...m.values()].map((a) => [a.info.hookName, { outputsPersisted: a.outputsPersisted, firstEventMs: a.firstEventMs, lastEventMs: a.lastEventMs }]));
    expect(byName).toEqual({
      'PostToolUse:a': { outputsPersisted: 1, firstEventMs: from - 1_000, lastEventMs: from - 1_000 },
      'PostToolUse:b': { outputsPersisted: 2, firstEventMs: from - 2, lastEventMs: from - 1 },
      'PostToolUse:c': { outputsPersisted: 1, firstEventMs: from - 10 * MINUTE, lastEventMs: from - 10 * MINUTE },
    });
    // Split by a dimension, the same outputs.
    const byTeam = await store.latePersisted({ receivedFromMs: from, receivedToMs: now, eventBeforeMs: from, dimension: 'team' });
    expect(Object.fromEntries([...byTeam.values()].map((a) => [a.info.hookName, a.outputsPersisted]))).toEqual({ 'PostToolUse:a': 1, 'PostToolUse:b': 2, 'PostToolUse:c': 1 });
  });
  it('splits late persisted outputs by the value of a dimension, and the persisted rule with groupBy counts each for its own value', async () => {
    const store = await open();
    const now = T0 + 5 * HOUR;
    const lateAt = (timeMs: number, over: Partial<HookEvent>): HookEvent => ev({ timeMs, receivedMs: now - MINUTE, outputsPersisted: 1, status: 'over', stdoutChars: 30_000, ...over });
    await store.ingest([
      lateAt(now - 90 * MINUTE, { extra: { team: 'infra' } }),
      lateAt(now - 70 * MINUTE, { extra: { team: 'infra' }, outputsPersisted: 2, organizationId: 'org-2' }),
      lateAt(now - 80 * MINUTE, { extra: { team: 'web' } }),
      // Without the dimension: grouped under '', as breakdown names it.
      lateAt(now - 75 * MINUTE, {}),
      // In the window by event time: the team has other events there, none persisted.
      ev({ timeMs: now - 10 * MINUTE, receivedMs: now - 10 * MINUTE, extra: { team: 'web' } }),
      // On time, of a team with no late arrival.
      ev({ timeMs: now - 5 * MINUTE, receivedMs: now - 5 * MINUTE, outputsPersisted: 1, status: 'over', stdoutChars: 30_000, extra: { team: 'data' } }),
    ]);
    const q = { receivedFromMs: now - HOUR, receivedToMs: now, eventBeforeMs: now - HOUR };
    const hook = ev().hookId;
    const byTeam = (await store.latePersisted({ ...q, dimension: 'team' })).get(hook)!;
    // The hook's own figures are those asked without a dimension.
    const { byValue: none, ...plain } = (await store.latePersisted(q)).get(hook)!;
    expect(none).toBeUndefined();
    const { byValue, ...total } = byTeam;
    expect(total).toEqual(plain);
    expect(total).toMatchObject({ outputsPersisted: 5, executions: 4, firstEventMs: now - 90 * MINUTE, lastEventMs: now - 70 * MINUTE });
    expect(new Set(byValue!.keys())).toEqual(new Set(['infra', 'web', '']));
    expect(byValue!.get('infra')).toMatchObject({ outputsPersisted: 3, executions: 2, executionsWithPersisted: 2, firstEventMs: now - 90 * MINUTE, lastEventMs: now - 70 * MINUTE });
    expect(byValue!.get('web')).toMatchObject({ outputsPersisted: 1, executions: 1, firstEventMs: now - 80 * MINUTE, lastEventMs: now - 80 * MINUTE });
    expect(byValue!.get('')).toMatchObject({ outputsPersisted: 1, executions: 1, firstEventMs: now - 75 * MINUTE });
    // A built-in dimension, a column of the attribute set.
    const byOrg = (await store.latePersisted({ ...q, dimension: 'organization.id' })).get(hook)!.byValue!;
    expect(Object.fromEntries([...byOrg].map(([v, a]) => [v, a.outputsPersisted]))).toEqual({ 'org-1': 3, 'org-2': 2 });
    await expect(store.latePersisted({ ...q, dimension: 'nope' })).rejects.toThrow(UnknownDimensionError);

    const [rule] = parseRules([{ kind: 'persisted', window: '1h', groupBy: 'team' }], [...DIMENSIONS, 'organization.id']);
    const alerts = (await evaluateRule(rule!, { store, now })).map((c) => ({ ...c.labels, ...c.annotations }));
    const of = (team: string | undefined): Record<string, string> | undefined => alerts.find((a) => a['team'] === team);
    expect(alerts).toHaveLength(4);
    // Only late arrivals: alerted with the team's label, so a route by team gets it.
    expect(of('infra')).toMatchObject({ alertname: 'persisted', hook_name: 'PostToolUse:Bash', late_outputs_persisted: '3', first_event_time: new Date(now - 90 * MINUTE).toISOString(), event_time: new Date(now - 70 * MINUTE).toISOString() });
    // Late arrivals beside the team's own events of the window: counted, not hidden by them.
    expect(of('web')).toMatchObject({ late_outputs_persisted: '1', event_time: new Date(now - 80 * MINUTE).toISOString() });
    expect(of('web')?.['description']).toMatch(/^1 of 2 executions lost output/);
    expect(of('data')).toMatchObject({ alertname: 'persisted' });
    expect(of('data')?.['late_outputs_persisted']).toBeUndefined();
    // Events without the dimension: the hook's labels alone, as breakdown's '' row gets.
    expect(of(undefined)).toMatchObject({ late_outputs_persisted: '1', hook_name: 'PostToolUse:Bash' });
  });

  it('the hook_limit rule counts events folded into an overflow hook when they arrive, however old their event time', async () => {
    const store = await open({ maxHooks: 2 });
    const now = T0 + 5 * HOUR;
    const [rule] = parseRules([{ kind: 'hook_limit' }]);
    const evaluate = async (): Promise<Record<string, string>[]> => (await evaluateRule(rule!, { store, now })).map((c) => ({ ...c.labels, ...c.annotations }));
    await store.ingest([ev({ hookName: 'PostToolUse:a', timeMs: now - 3 * HOUR, receivedMs: now - 3 * HOUR }), ev({ hookName: 'PostToolUse:b', timeMs: now - 3 * HOUR, receivedMs: now - 3 * HOUR })]);
    // Folded two hours ago: past the rule's window by arrival and by event time.
    expect((await store.ingest([ev({ hookName: 'PostToolUse:c', timeMs: now - 2 * HOUR, receivedMs: now - 2 * HOUR })])).folded).toBe(1);
    expect(await evaluate()).toEqual([]);
    // Folded a minute ago, stamped three hours before (a Collector queue draining after an outage): the store
    // is at its limit now.
    const late = [ev({ hookName: 'PostToolUse:d', timeMs: now - 3 * HOUR, receivedMs: now - MINUTE }), ev({ hookName: 'PostToolUse:e', timeMs: now - 90 * MINUTE, receivedMs: now - MINUTE })];
    expect((await store.ingest(late)).folded).toBe(2);
    expect(await evaluate()).toEqual([expect.objectContaining({
      alertname: 'hook_limit', hook_name: 'PostToolUse:(overflow)', folded_events: '2', late_folded_events: '2',
      first_event_time: new Date(now - 3 * HOUR).toISOString(), event_time: new Date(now - 90 * MINUTE).toISOString(),
    })]);
    // One folded on time counts beside them, once.
    await store.ingest([ev({ hookName: 'PostToolUse:f', timeMs: now - 5 * MINUTE, receivedMs: now - MINUTE })]);
    expect(await evaluate()).toEqual([expect.objectContaining({ folded_events: '3', late_folded_events: '2' })]);
    // An event over the cap of a hook of its own that arrived late is the persisted rule's, not this one's.
    await store.ingest([ev({ hookName: 'PostToolUse:a', timeMs: now - 2 * HOUR, receivedMs: now - MINUTE, outputsPersisted: 1, status: 'over' })]);
    expect(await evaluate()).toEqual([expect.objectContaining({ folded_events: '3' })]);
  });

  it('counts every folded event that arrived in the window stamped before it once, however late, on either side of LATE_ARRIVAL_MS', async () => {
    const store = await open({ maxHooks: 1 });
    const now = T0 + 5 * HOUR;
    const from = now - HOUR;
    await store.ingest([ev({ hookName: 'PostToolUse:a', timeMs: from - 2 * HOUR, receivedMs: from - 2 * HOUR })]);
    let n = 0;
    const folded = (timeMs: number, receivedMs: number): HookEvent => ev({ hookName: `PostToolUse:n${n++}`, timeMs, receivedMs });
    const late = [
      folded(from - 1000, from + 1000), // seconds late, across the window's start
      folded(from - 1, from - 1 + LATE_ARRIVAL_MS), // exactly LATE_ARRIVAL_MS late: not in the late index
      folded(from - 1, from + LATE_ARRIVAL_MS), // one millisecond more
      folded(from - 10 * MINUTE, from + MINUTE),
      folded(from - 3 * HOUR, now - MINUTE), // a queue drained after an outage
    ];
    const notLate = [
      folded(from + MINUTE, from + 2 * MINUTE), // stamped in the window
      folded(from - 2 * HOUR, from - 1), // arrived before it
      folded(from - 2 * MINUTE, now + MINUTE), // arrived after it
    ];
    expect((await store.ingest([...late, ...notLate])).folded).toBe(late.length + notLate.length);
    const m = await store.lateFolded({ receivedFromMs: from, receivedToMs: now, eventBeforeMs: from });
    expect([...m.values()].map((a) => [a.info.hookName, a.executions, a.firstEventMs, a.lastEventMs])).toEqual([['PostToolUse:(overflow)', late.length, from - 3 * HOUR, from - 1]]);
  });

  it('answers filtered views, series, client versions and breakdowns as a fold of the raw events (dimension rollups and their raw edges)', async () => {
    const store = await open();
    const events = dimensionEvents(11, 400);
    await store.ingest(events);
    const hooks = [...new Set(events.map((e) => e.hookId))];
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: -HOUR, max: 4 * DAY }), fc.integer({ min: 1, max: 3 * DAY }), fc.constantFrom(...hooks), async (a, len, id) => {
        const q = { fromMs: T0 + a, toMs: T0 + a + len };
        const r = alignRange(q.fromMs, q.toMs);
        for (const [filters, keep] of DIMENSION_FILTERS) {
          const label = `${JSON.stringify(filters)} ${a}+${len}`;
          const want = foldBy(events, r.fromMs, r.toMs, (e) => e.serviceVersion, keep);
          const byVersion = (versions: ClientVersion[]): Map<string, number[]> => new Map(versions.map((v) => [v.version, [v.executions, v.sizeUnknownExecutions]]));
          const wantVersions = new Map([...want].map(([v, c]) => [v, [c.executions, c.sizeUnknownExecutions]]));
          // First asked at once, as the overview asks them (nothing kept yet), then each on its own.
          const [together, versionsTogether] = await Promise.all([store.hookCounters({ ...q, filters }), store.clientVersions({ ...q, filters })]);
          expect(strip(together), label).toEqual(model(events, q.fromMs, q.toMs, keep));
          expect(byVersion(versionsTogether), label).toEqual(wantVersions);
          expect(strip(await store.hookCounters({ ...q, filters })), label).toEqual(model(events, q.fromMs, q.toMs, keep));
          expect(strip(await store.hookCounters({ ...q, filters, hookId: id })), label).toEqual(model(events.filter((e) => e.hookId === id), q.fromMs, q.toMs, keep));
          // A few hooks (the sparklines of rows past the fleet series' riskiest), an unknown one among them.
          const few = [id, hooks.find((h) => h !== id)!, 'ffffffffffffffff'];
          expect(strip(await store.hookCounters({ ...q, filters, hookIds: few })), label).toEqual(model(events.filter((e) => few.includes(e.hookId)), q.fromMs, q.toMs, keep));
          expect(byVersion(await store.clientVersions({ ...q, filters })), label).toEqual(wantVersions);
        }
        const mine = events.filter((e) => e.hookId === id);
        const breakdowns: [string, Record<string, string>, (e: HookEvent) => string, (e: HookEvent) => boolean][] = [
          ['team', {}, (e) => e.extra['team'] ?? '', () => true],
          ['project', {}, (e) => e.extra['project'] ?? '', () => true],
          ['user.id', {}, (e) => e.userId, () => true],
          ['service.version', {}, (e) => e.serviceVersion, () => true],
          ['team', { 'service.version': '2.1.332' }, (e) => e.extra['team'] ?? '', (e) => e.serviceVersion === '2.1.332'],
          ['service.version', { team: 'web' }, (e) => e.serviceVersion, (e) => e.extra['team'] === 'web'],
          ['team', { team: 'web' }, (e) => e.extra['team'] ?? '', (e) => e.extra['team'] === 'web'],
          ['user.id', { team: 'infra' }, (e) => e.userId, (e) => e.extra['team'] === 'infra'],
        ];
        for (const [dimension, filters, key, keep] of breakdowns) {
          const label = `${dimension} by ${JSON.stringify(filters)} ${a}+${len}`;
          const got = byValue(await store.breakdown(id, dimension, { ...q, filters }));
          expect(got, label).toEqual(foldBy(mine, r.fromMs, r.toMs, key, keep));
          // Every hook's at once, and a few hooks' (an unknown one among them): each hook's as its own.
          expect(byHookValue(await store.fleetBreakdown(dimension, { ...q, filters })), `${label} every hook`).toEqual(foldPerHook(events, r.fromMs, r.toMs, key, keep));
          expect(byHookValue(await store.fleetBreakdown(dimension, { ...q, filters, hookIds: [id, 'ffffffffffffffff'] })), `${label} few`).toEqual(foldPerHook(mine, r.fromMs, r.toMs, key, keep));
        }
      }),
      { numRuns: 12, seed: 3 },
    );
    // The newest execution matching each filter (the overview's "last event"), found through the hourly rollups.
    for (const [filters, keep] of DIMENSION_FILTERS) {
      const times = events.filter((e) => e.kind === 'complete' && keep(e)).map((e) => e.timeMs);
      expect(await store.lastEventMs(filters), JSON.stringify(filters)).toBe(times.length > 0 ? Math.max(...times) : null);
    }
    // Series and the fleet series under a filter, for steps the dimension rollups serve (hours, days) and one
    // they do not (15 minutes: raw events).
    for (const stepMs of [15 * MINUTE, HOUR, 3 * HOUR, DAY]) {
      for (const [filters, keep] of DIMENSION_FILTERS) {
        const q = { fromMs: T0 + 90 * MINUTE, toMs: T0 + 3 * DAY + 20 * MINUTE, stepMs, filters };
        // Buckets start on the step; the first counts from `from`, the last until `to`.
        const from = q.fromMs;
        const to = q.toMs;
        const bucket = (e: HookEvent): number => Math.floor(e.timeMs / stepMs) * stepMs;
        const fleet = await store.fleetSeries(q);
        const byBucket = (rows: FleetBucket[]): FleetBucket[] => [...rows].sort((a, b) => a.hookId.localeCompare(b.hookId) || a.bucketMs - b.bucketMs);
        for (const id of hooks) {
          const want = foldBy(events.filter((e) => e.hookId === id), from, to, bucket, keep);
          const label = `${stepMs} ${JSON.stringify(filters)} ${id}`;
          expect(new Map(await store.series(id, q)), label).toEqual(want);
          const few = [id, 'ffffffffffffffff'];
          expect(byBucket(await store.fleetSeries({ ...q, hookIds: few })), label).toEqual(byBucket(fleet.filter((b) => b.hookId === id)));
          expect(new Map(fleet.filter((b) => b.hookId === id).map((b) => [b.bucketMs, [b.executions, b.outputsPersisted, b.executionsWithPersisted, b.sizeUnknownExecutions]])), label)
            .toEqual(new Map([...want].map(([b, c]) => [b, [c.executions, c.outputsPersisted, c.executionsWithPersisted, c.sizeUnknownExecutions]])));
        }
      }
    }
  });

  // A batch committed while an answer is being read (an execution in every segment of its range) is in all of it or
  // in none: an answer read partly before and partly after it would hold totals the store never held.
  const SNAPSHOT_ANSWERS: [string, (s: Store, q: { fromMs: number; toMs: number; filters?: Record<string, string> }, id: string) => Promise<unknown>][] = [
    ['hook counters', (s, q) => s.hookCounters(q).then(strip)],
    ['one hook\'s counters', (s, q, id) => s.hookCounters({ ...q, hookId: id }).then(strip)],
    ['filtered hook counters', (s, q) => s.hookCounters({ ...q, filters: { team: 'infra' } }).then(strip)],
    ['client versions', (s, q) => s.clientVersions(q)],
    ['a breakdown', (s, q, id) => s.breakdown(id, 'team', q)],
    ['every hook\'s breakdown', (s, q) => s.fleetBreakdown('team', q)],
    ['a few hooks\' breakdown by a dimension read raw', (s, q, id) => s.fleetBreakdown('user.id', { ...q, hookIds: [id] })],
    ['a series', (s, q, id) => s.series(id, { ...q, stepMs: HOUR })],
    ['the fleet series', (s, q) => s.fleetSeries({ ...q, stepMs: HOUR })],
    ['the filtered fleet series', (s, q) => s.fleetSeries({ ...q, stepMs: 15 * MINUTE, filters: { team: 'infra' } })],
  ];
  const snapshotRange = { fromMs: T0 + 50 * MINUTE, toMs: T0 + DAY + 3 * HOUR + 10 * MINUTE };
  /** Executions every 10 minutes of the range (in every segment of it), of one team. */
  const everySegment = (): HookEvent[] => {
    const batch: HookEvent[] = [];
    for (let t = snapshotRange.fromMs; t < snapshotRange.toMs; t += 10 * MINUTE) batch.push(ev({ timeMs: t, extra: { team: 'infra' } }));
    return batch;
  };
  /** The answer read while `batch` is committed (between its first statement and the others), and the one after. */
  const readWhileCommitting = async (store: Store, answer: (typeof SNAPSHOT_ANSWERS)[number][1], id: string, batch: HookEvent[]): Promise<{ during: unknown; after: unknown }> => {
    let committed = false;
    const commit = async (): Promise<void> => {
      committed = true;
      await store.ingest(batch);
    };
    const restore = backend.betweenReads(store, commit);
    let during: unknown;
    try {
      during = await answer(store, snapshotRange, id);
    } finally {
      restore();
    }
    // An answer read by one statement saw one state anyway: the batch comes after it.
    if (!committed) await commit();
    return { during, after: await answer(store, snapshotRange, id) };
  };
  it.each(SNAPSHOT_ANSWERS)('reads %s from one state of the store, whatever is committed while it is read', async (_name, answer) => {
    const store = await open();
    const batch = everySegment();
    const id = batch[0]!.hookId;
    // The answer of an empty range, asked first: what a store reads once and keeps (PostgreSQL's pruned bounds) is
    // read before, and the range asked is not (nothing of it kept).
    const empty = await answer(store, { fromMs: snapshotRange.fromMs - 7 * DAY, toMs: snapshotRange.toMs - 7 * DAY }, id);
    const { during, after } = await readWhileCommitting(store, answer, id, batch);
    // The batch counts (the answer after it is not the empty one), and the answer read while it was committed is
    // the one of the state its first statement saw: before the batch, when the range was empty.
    expect(after).not.toEqual(empty);
    expect(during).toEqual(empty);
  });
  it.each(SNAPSHOT_ANSWERS)('reads %s from one state of the store when parts of it were read before and kept, whatever is committed while it is read', async (_name, answer) => {
    const store = await open();
    const first = everySegment();
    const id = first[0]!.hookId;
    await store.ingest(first);
    // Asked once: a store may keep what it read of time that no longer changes (SQLite's closed segments).
    const before = await answer(store, snapshotRange, id);
    const { during, after } = await readWhileCommitting(store, answer, id, everySegment());
    expect(after).not.toEqual(before);
    expect(during).toEqual(before);
  });

  it('counts in a series\' buckets what the figures of its range count: the first bucket from `from`, the last until `to`', async () => {
    const store = await open();
    const events = dimensionEvents(17, 400);
    await store.ingest(events);
    const hooks = [...new Set(events.map((e) => e.hookId))];
    const filters: [Record<string, string> | undefined, (e: HookEvent) => boolean][] = [[undefined, () => true], ...DIMENSION_FILTERS];
    /** What a sum of buckets and the figures both give: the counts added, the largest output the largest of any. */
    const figures = (cs: Iterable<HookCounters>): number[] => {
      const out = [0, 0, 0, 0, 0, 0, -1];
      for (const c of cs) {
        [c.executions, c.starts, c.numHooks, c.outputsPersisted, c.executionsWithPersisted, c.sizeUnknownExecutions].forEach((v, i) => (out[i]! += v));
        out[6] = Math.max(out[6]!, ...Object.values(c.maxChars).map((v) => v ?? -1));
      }
      return out;
    };
    const fleetFigures = (bs: Iterable<FleetBucket>): number[] => {
      const out = [0, 0, 0, 0, -1];
      for (const b of bs) {
        [b.executions, b.outputsPersisted, b.executionsWithPersisted, b.sizeUnknownExecutions].forEach((v, i) => (out[i]! += v));
        out[4] = Math.max(out[4]!, b.largest ?? -1);
      }
      return out;
    };
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: -HOUR, max: 4 * DAY }), fc.integer({ min: 1, max: 3 * DAY }), fc.constantFrom(MINUTE, 5 * MINUTE, 30 * MINUTE, HOUR, 3 * HOUR, 6 * HOUR, DAY, 7 * DAY),
        fc.constantFrom(...hooks), fc.integer({ min: 0, max: filters.length - 1 }),
        async (a, len, stepMs, id, f) => {
          const [filter, keep] = filters[f]!;
          // Steps over an hour cover at least two of their buckets, as a chart's range does (at most 2,000 minutes).
          const q = { fromMs: T0 + a, toMs: T0 + a + Math.min(Math.max(len, 2 * stepMs), 2000 * stepMs), stepMs, ...(filter ? { filters: filter } : {}) };
          const r = alignRange(q.fromMs, q.toMs);
          const label = `${JSON.stringify(filter)} ${a}+${q.toMs - q.fromMs} step ${stepMs} ${id}`;
          const counted = await store.hookCounters(q);
          const series = await store.series(id, q);
          // Each bucket at its aligned start, counting only what falls in the range.
          expect(new Map(series), label).toEqual(foldBy(events.filter((e) => e.hookId === id), r.fromMs, r.toMs, (e) => Math.floor(e.timeMs / stepMs) * stepMs, keep));
          const mine = counted.get(id);
          expect(figures(series.values()), label).toEqual(figures(mine ? [mine] : []));
          // The fleet series: each hook's buckets add up to its figures, every hook of the figures and only those.
          const fleet = await store.fleetSeries(q);
          expect(new Set(fleet.map((b) => b.hookId)), label).toEqual(new Set(counted.keys()));
          for (const [hook, c] of counted) {
            const want = figures([c]);
            expect(fleetFigures(fleet.filter((b) => b.hookId === hook)), `${label} fleet ${hook}`).toEqual([want[0], want[3], want[4], want[5], want[6]]);
          }
          expect(fleet.every((b) => b.bucketMs % stepMs === 0 && b.bucketMs >= Math.floor(r.fromMs / stepMs) * stepMs && b.bucketMs < r.toMs), label).toBe(true);
          // A few hooks asked alone: the same buckets.
          const few = await store.fleetSeries({ ...q, hookIds: [id, 'ffffffffffffffff'] });
          const byBucket = (rows: FleetBucket[]): FleetBucket[] => [...rows].sort((x, y) => x.bucketMs - y.bucketMs);
          expect(byBucket(few), label).toEqual(byBucket(fleet.filter((b) => b.hookId === id)));
        },
      ),
      { numRuns: 40, seed: 5 },
    );
  });

  it('serves filtered views of whole hours and days from dimension rollups after the raw events are pruned', async () => {
    const store = await open();
    const events = dimensionEvents(5, 200, 3);
    await store.ingest(events);
    // Raw events go after a day; rollups stay.
    await store.prune(T0 + 3 * DAY, T0 - DAY);
    const id = events[0]!.hookId;
    for (const q of [{ fromMs: T0, toMs: T0 + 2 * DAY }, { fromMs: T0 + 5 * HOUR, toMs: T0 + DAY + 7 * HOUR }]) {
      expect(strip(await store.hookCounters({ ...q, filters: { team: 'infra' } }))).toEqual(model(events, q.fromMs, q.toMs, (e) => e.extra['team'] === 'infra'));
      // The empty value too: the rollups fold the events without a team and those with an empty one under it.
      expect(strip(await store.hookCounters({ ...q, filters: { team: '' } }))).toEqual(model(events, q.fromMs, q.toMs, (e) => (e.extra['team'] ?? '') === ''));
      expect(byValue(await store.breakdown(id, 'team', q))).toEqual(foldBy(events.filter((e) => e.hookId === id), q.fromMs, q.toMs, (e) => e.extra['team'] ?? ''));
      // user.id is never rolled up: its events are gone with retention.events.
      expect(await store.breakdown(id, 'user.id', q)).toEqual([]);
    }
    // Dimension rollups go with retention.rollups, and hooks with nothing left go with them.
    await store.prune(T0 + 3 * DAY, T0 + 3 * DAY);
    expect((await store.hookCounters({ fromMs: T0, toMs: T0 + 3 * DAY, filters: { team: 'infra' } })).size).toBe(0);
    expect(await store.hook(id)).toBeUndefined();
  });

  it('fills the dimension rollups from the stored events when a database written before they existed is upgraded', async () => {
    const old = await open();
    const events = dimensionEvents(21, 300);
    await old.ingest(events);
    const store = await backend.reopenBeforeDimRollups(old);
    opened.push(store);
    const q = { fromMs: T0 + 30 * MINUTE, toMs: T0 + 4 * DAY };
    for (const [filters, keep] of DIMENSION_FILTERS) {
      expect(strip(await store.hookCounters({ ...q, filters })), JSON.stringify(filters)).toEqual(model(events, q.fromMs, q.toMs, keep));
    }
    const id = events[0]!.hookId;
    expect(byValue(await store.breakdown(id, 'team', q))).toEqual(foldBy(events.filter((e) => e.hookId === id), q.fromMs, q.toMs, (e) => e.extra['team'] ?? ''));
    // Events after the upgrade add to the filled rollups, not beside them.
    const more = dimensionEvents(22, 100);
    await store.ingest(more);
    const all = [...events, ...more];
    expect(strip(await store.hookCounters({ ...q, filters: { team: 'web' } }))).toEqual(model(all, q.fromMs, q.toMs, (e) => e.extra['team'] === 'web'));
  });

  it('counts a dimension configured later over every stored event, and again after it was left out for a while', async () => {
    let store = await open({ dimensions: ['team'] });
    const first = dimensionEvents(31, 150);
    await store.ingest(first);
    store = await backend.reopen(store, { dimensions: ['team', 'project'] });
    opened.push(store);
    const q = { fromMs: T0 + 10 * MINUTE, toMs: T0 + 4 * DAY };
    const check = async (events: HookEvent[]): Promise<void> => {
      for (const value of ['x', 'y']) {
        expect(strip(await store.hookCounters({ ...q, filters: { project: value } })), value).toEqual(model(events, q.fromMs, q.toMs, (e) => e.extra['project'] === value));
      }
      const id = events[0]!.hookId;
      expect(byValue(await store.breakdown(id, 'project', q))).toEqual(foldBy(events.filter((e) => e.hookId === id), q.fromMs, q.toMs, (e) => e.extra['project'] ?? ''));
      expect(strip(await store.hookCounters({ ...q, filters: { team: 'data' } }))).toEqual(model(events, q.fromMs, q.toMs, (e) => e.extra['team'] === 'data'));
    };
    await check(first);
    const second = dimensionEvents(32, 100);
    await store.ingest(second);
    await check([...first, ...second]);
    // Left out of `dimensions`: events ingested meanwhile write no project rollups; listed again, it is rebuilt.
    store = await backend.reopen(store, { dimensions: ['team'] });
    opened.push(store);
    const third = dimensionEvents(33, 100);
    await store.ingest(third);
    store = await backend.reopen(store, { dimensions: ['team', 'project'] });
    opened.push(store);
    await check([...first, ...second, ...third]);
  });
});
