/**
 * Rollups answer exactly what the raw events answer: for random events (starts and completes, unknown sizes,
 * several hooks and versions) and random ranges and steps, the SQLite store's rollup path (minute, hour and day
 * segments), its dimension-rollup path (a filter on a rolled dimension that matches everything: hours and days
 * from the dimension rollups, edges from raw events), its raw-event path (a filter on a raw-only dimension) and a
 * fold of the events in memory agree.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { HookCounters } from './model.ts';
import { classifyExecution, hasSizeData } from '../hooks/cliff.ts';
import { hookId } from '../hooks/extract.ts';
import type { HookEvent } from '../hooks/model.ts';
import { addEvent, emptyRow, toCounters, type CounterRow } from './counters.ts';
import { DAY, HOUR, MINUTE, alignRange, granularityMs, segments } from './segments.ts';
import { SqliteStore } from './sqlite/index.ts';
import { dimensionExpr } from './sql.ts';
import { UnknownDimensionError } from './store.ts';

/** 2026-03-02T00:00:00Z. */
const T0 = Date.UTC(2026, 2, 2);
const HOOKS = ['PostToolUse:Bash', 'SessionStart:startup', 'Stop'];
const STEPS = [60, 120, 300, 900, 3600, 7200, 21600, 86400, 604800].map((s) => s * 1000);

const size = fc.option(fc.integer({ min: 0, max: 40_000 }), { nil: null, freq: 3 });
const count = fc.option(fc.integer({ min: 0, max: 3 }), { nil: null, freq: 4 });

const arbEvent = fc.record({
  t: fc.oneof(fc.integer({ min: 0, max: 3 * DAY }), fc.constantFrom(0, HOUR - 1, HOUR, DAY - 1, DAY, DAY + MINUTE - 1, 2 * DAY)),
  start: fc.boolean(),
  hook: fc.constantFrom(...HOOKS),
  version: fc.constantFrom('2.1.332', '2.1.279'),
  numHooks: fc.option(fc.integer({ min: 0, max: 4 }), { nil: null, freq: 5 }),
  success: count,
  persisted: count,
  stdout: size,
  ac: size,
  sm: size,
  ium: size,
  duration: fc.option(fc.integer({ min: 0, max: 5000 }), { nil: null, freq: 4 }),
});

let n = 0;
type Raw = typeof arbEvent extends fc.Arbitrary<infer T> ? T : never;

function toEvent(x: Raw): HookEvent {
  const hookEvent = x.hook.split(':')[0] as string;
  const complete = !x.start;
  const facts = {
    numHooks: x.numHooks,
    stdoutChars: complete ? x.stdout : null,
    additionalContextChars: complete ? x.ac : null,
    systemMessageChars: complete ? x.sm : null,
    initialUserMessageChars: complete ? x.ium : null,
    outputsPersisted: complete ? x.persisted : null,
  };
  return {
    kind: complete ? 'complete' : 'start',
    dedupKey: `e${n++}`,
    hookId: hookId(hookEvent, x.hook),
    hookEvent,
    hookName: x.hook,
    timeMs: T0 + x.t,
    // extract.ts reads the outcome counts of a start too when a client sends them; rollups count completes only.
    numSuccess: x.success,
    numBlocking: complete ? 0 : x.success,
    numNonBlockingError: x.success,
    numCancelled: complete ? x.success : null,
    durationMs: x.duration,
    ...facts,
    sizesKnown: complete && hasSizeData(facts),
    status: complete ? classifyExecution(facts, 8000) : 'unknown',
    serviceName: 'claude-code',
    serviceVersion: x.version,
    sessionId: 's',
    userId: 'u',
    userEmail: '',
    userAccountUuid: '',
    organizationId: '',
    terminalType: '',
    source: 'otlp',
    extra: {},
  };
}

/** The model: fold the events whose time falls in [from, to) keyed by `key`. */
function fold(events: HookEvent[], from: number, to: number, key: (e: HookEvent) => string | number): Map<string | number, HookCounters> {
  const rows = new Map<string | number, CounterRow>();
  for (const e of events) {
    if (e.timeMs < from || e.timeMs >= to) continue;
    const k = key(e);
    let row = rows.get(k);
    if (!row) rows.set(k, (row = emptyRow()));
    addEvent(row, e);
  }
  return new Map([...rows].map(([k, r]) => [k, toCounters(r)]));
}

function sorted<K, V>(m: Map<K, V>): [K, V][] {
  return [...m.entries()].sort(([a], [b]) => (String(a) < String(b) ? -1 : 1));
}

/** Matches every event: through the dimension rollups. */
const ALL = { 'hookwatch.source': 'otlp' };
/** Matches every event: through the raw events (user.* is never rolled up). */
const ALL_RAW = { 'user.id': 'u' };

/** A fresh in-memory store holding `events`, closed after `fn` whatever happens. */
async function withEvents(events: HookEvent[], fn: (store: SqliteStore) => Promise<void>): Promise<void> {
  const store = new SqliteStore({ path: ':memory:' });
  try {
    await store.ingest(events);
    await fn(store);
  } finally {
    await store.close();
  }
}

describe('rollups agree with raw events', () => {
  it('per-hook counters over random ranges: rollup path = event path = model', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(arbEvent, { minLength: 1, maxLength: 60 }),
      fc.integer({ min: -DAY, max: 4 * DAY }),
      fc.integer({ min: 1, max: 4 * DAY }),
      async (xs, a, len) => {
        const events = xs.map(toEvent);
        await withEvents(events, async (store) => {
          const q = { fromMs: T0 + a, toMs: T0 + a + len };
          const { fromMs, toMs } = alignRange(q.fromMs, q.toMs);
          const want = sorted(fold(events, fromMs, toMs, (e) => e.hookId));
          const strip = (m: Map<string, HookCounters & { info: unknown }>): [string, HookCounters][] =>
            sorted(new Map([...m].map(([k, { info: _info, ...c }]) => [k, c])));
          expect(strip(await store.hookCounters(q))).toEqual(want);
          expect(strip(await store.hookCounters({ ...q, filters: ALL }))).toEqual(want);
          expect(strip(await store.hookCounters({ ...q, filters: ALL_RAW }))).toEqual(want);
        });
      },
    ), { numRuns: 120 });
  });

  it('series over random ranges and steps: rollup path = event path = model', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(arbEvent, { minLength: 1, maxLength: 60 }),
      fc.integer({ min: -DAY, max: 4 * DAY }),
      fc.integer({ min: 1, max: 4 * DAY }),
      fc.constantFrom(...STEPS),
      async (xs, a, len, stepMs) => {
        const events = xs.map(toEvent);
        const id = events[0]?.hookId as string;
        await withEvents(events, async (store) => {
          const q = { fromMs: T0 + a, toMs: T0 + a + len, stepMs };
          // Buckets start on the step; the first counts from `from`, the last until `to` (both to the minute).
          const { fromMs: from, toMs: to } = alignRange(q.fromMs, q.toMs);
          const want = sorted(fold(events.filter((e) => e.hookId === id), from, to, (e) => Math.floor(e.timeMs / stepMs) * stepMs));
          expect(sorted(await store.series(id, q))).toEqual(want);
          expect(sorted(await store.series(id, { ...q, filters: ALL }))).toEqual(want);
          expect(sorted(await store.series(id, { ...q, filters: ALL_RAW }))).toEqual(want);
        });
      },
    ), { numRuns: 120 });
  });

  it('client versions and breakdowns agree with the model', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(arbEvent, { minLength: 1, maxLength: 60 }),
      fc.integer({ min: -DAY, max: 4 * DAY }),
      fc.integer({ min: 1, max: 4 * DAY }),
      async (xs, a, len) => {
        const events = xs.map(toEvent);
        const id = events[0]?.hookId as string;
        await withEvents(events, async (store) => {
          const q = { fromMs: T0 + a, toMs: T0 + a + len };
          const { fromMs, toMs } = alignRange(q.fromMs, q.toMs);
          const byVersion = fold(events, fromMs, toMs, (e) => e.serviceVersion);
          const versions = await store.clientVersions(q);
          expect(Object.fromEntries(versions.map((v) => [v.version, [v.executions, v.sizeUnknownExecutions]]))).toEqual(
            Object.fromEntries([...byVersion].map(([v, c]) => [v, [c.executions, c.sizeUnknownExecutions]])),
          );
          const rows = await store.breakdown(id, 'service.version', q);
          const want = fold(events.filter((e) => e.hookId === id), fromMs, toMs, (e) => e.serviceVersion);
          expect(sorted(new Map(rows.map(({ value, ...c }) => [value, c])))).toEqual(sorted(want));
          // The same figures grouped by a rolled dimension (one value: every event's source).
          const bySource = await store.breakdown(id, 'hookwatch.source', q);
          const all = fold(events.filter((e) => e.hookId === id), fromMs, toMs, (e) => e.source);
          expect(sorted(new Map(bySource.map(({ value, ...c }) => [value, c])))).toEqual(sorted(all));
        });
      },
    ), { numRuns: 80 });
  });
});

describe('segments', () => {
  it('tile the minute-aligned range exactly, each segment on its own granularity, coarsest in the middle', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 4e12 }), fc.integer({ min: 1, max: 400 * DAY }), (from, len) => {
      const segs = segments(from, from + len);
      const { fromMs, toMs } = alignRange(from, from + len);
      let at = fromMs;
      for (const s of segs) {
        expect(s.fromMs).toBe(at);
        expect(s.toMs).toBeGreaterThan(s.fromMs);
        const g = granularityMs(s.granularity);
        expect(s.fromMs % g).toBe(0);
        expect(s.toMs % g).toBe(0);
        at = s.toMs;
      }
      expect(at).toBe(toMs);
      // At most minute, hour, day, hour, minute.
      expect(segs.length).toBeLessThanOrEqual(5);
    }), { numRuns: 2000 });
  });

  it('with an open minute, still tile the range, and one minute segment covers the open minute on', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 4e12 }), fc.integer({ min: 1, max: 400 * DAY }), fc.integer({ min: -500 * 24 * 60, max: 500 * 24 * 60 }), (from, len, minutesFromStart) => {
      const openFrom = (Math.floor(from / MINUTE) + minutesFromStart) * MINUTE;
      const segs = segments(from, from + len, openFrom);
      const { fromMs, toMs } = alignRange(from, from + len);
      let at = fromMs;
      for (const s of segs) {
        expect(s.fromMs).toBe(at);
        expect(s.toMs).toBeGreaterThan(s.fromMs);
        const g = granularityMs(s.granularity);
        expect(s.fromMs % g).toBe(0);
        expect(s.toMs % g).toBe(0);
        if (s.toMs > openFrom) expect(s).toEqual({ granularity: 'minute', fromMs: Math.max(openFrom, fromMs), toMs });
        at = s.toMs;
      }
      expect(at).toBe(toMs);
      expect(segs.length).toBeLessThanOrEqual(6);
    }), { numRuns: 2000 });
    expect(() => segments(0, DAY, MINUTE + 1)).toThrow(RangeError);
  });
});

describe('dimension names', () => {
  it('only own built-in keys and configured extras reach SQL; Object.prototype names are unknown', () => {
    const json = (k: string): string => `json(${k})`;
    expect(dimensionExpr('user.id', [], json)).toBe('user_id');
    expect(dimensionExpr('team', ['team'], json)).toBe('json(team)');
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      expect(() => dimensionExpr(name, [], json)).toThrow(UnknownDimensionError);
    }
  });
});

describe('rollups stay exact while batches keep arriving', () => {
  it('queries interleaved with late batches on one store agree with the model (kept closed segments are refreshed)', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(fc.array(arbEvent, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 6 }),
      fc.array(fc.tuple(fc.integer({ min: -DAY, max: 3 * DAY }), fc.integer({ min: 1, max: 3 * DAY })), { minLength: 1, maxLength: 3 }),
      async (batches, ranges) => {
        const store = new SqliteStore({ path: ':memory:' });
        const stored: HookEvent[] = [];
        try {
          for (const batch of batches) {
            const events = batch.map(toEvent);
            await store.ingest(events);
            stored.push(...events);
            for (const [a, len] of ranges) {
              const q = { fromMs: T0 + a, toMs: T0 + a + len };
              const { fromMs, toMs } = alignRange(q.fromMs, q.toMs);
              const got = new Map([...(await store.hookCounters(q))].map(([k, { info: _info, ...c }]) => [k, c]));
              expect(sorted(got)).toEqual(sorted(fold(stored, fromMs, toMs, (e) => e.hookId)));
            }
          }
        } finally {
          await store.close();
        }
      },
    ), { numRuns: 60 });
  });
});
