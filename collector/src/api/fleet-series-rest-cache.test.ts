/**
 * GET /api/v1/fleet/series on SQLite, whose store keeps the closed buckets of the rest's sums: those of "every hook
 * but these" and those of "these hooks only" are different sums, whatever the hooks named.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetSeriesResponse } from '../../../shared/src/api.ts';
import { persistedAtLeast } from '../../../shared/src/cliff.ts';
import { hookId } from '../hooks/extract.ts';
import type { HookEvent } from '../hooks/model.ts';
import { SqliteStore } from '../store/sqlite/index.ts';
import { serveApi, type ApiServer } from '../../test/support/api-server.ts';

const HOUR = 3_600_000;
const store = new SqliteStore({ path: ':memory:', dimensions: ['team'] });
let api: ApiServer;
// The store keeps buckets before the one being written (by its own clock): the range ends now.
const now = Math.max(Date.now(), Math.floor(Date.now() / HOUR) * HOUR + 1000);
const id = (name: string): string => hookId('PostToolUse', `PostToolUse:${name}`);

function execution(name: string, i: number, timeMs: number, over: boolean): HookEvent {
  const hookName = `PostToolUse:${name}`;
  return {
    kind: 'complete', dedupKey: `k-${name}-${i}`, hookId: id(name), hookEvent: 'PostToolUse', hookName,
    timeMs, numHooks: 1, numSuccess: 1, numBlocking: 0, numNonBlockingError: 0, numCancelled: 0, durationMs: 10,
    stdoutChars: over ? 60_000 : 1000 + i, additionalContextChars: null, systemMessageChars: null, initialUserMessageChars: null, outputsPersisted: over ? 1 : 0,
    sizesKnown: true, status: over ? 'over' : 'ok', serviceName: 'claude-code', serviceVersion: '2.1.332', sessionId: 's', userId: 'u', userEmail: '',
    userAccountUuid: '', organizationId: '', terminalType: '', source: 'otlp', extra: { team: 'web' },
  };
}

async function fleet(query: string): Promise<FleetSeriesResponse> {
  const res = await fetch(`${api.base}/api/v1/fleet/series?from=now-6h&step=1h${query}`, { signal: AbortSignal.timeout(10_000) });
  expect(res.status).toBe(200);
  return (await res.json()) as FleetSeriesResponse;
}

beforeAll(async () => {
  const hour = Math.floor(now / HOUR) * HOUR;
  // Two hooks over the cap (the riskiest), four under it, in the closed hours only.
  const events: HookEvent[] = [];
  ['a', 'b', 'c', 'd', 'e', 'x'].forEach((name, h) => {
    for (let i = 0; i < 2 + h; i++) events.push(execution(name, i, hour - (1 + ((h + i) % 5)) * HOUR + 60_000 * h, name === 'a' || name === 'b'));
  });
  await store.ingest(events);
  api = await serveApi(store, now);
});
afterAll(async () => {
  await api.close();
  await store.close();
});

describe('the fleet series\' rest kept for its closed buckets', () => {
  it('is not the rest of every hook but the ones a later request names as its rest', async () => {
    const all = await fleet('&limit=2');
    expect(all.hooks.map((h) => h.id).sort()).toEqual([id('a'), id('b')].sort());
    // x becomes the riskiest in the hour being written: the closed hours kept stay as they were.
    await store.ingest(Array.from({ length: 5 }, (_v, i) => execution('x', 100 + i, now - 1, true)));
    const some = await fleet(`&limit=1&ids=${[id('a'), id('b'), id('x')].join(',')}`);
    expect(some.hooks.map((h) => h.id)).toEqual([id('x')]);
    // The rest is a and b, as the first answer gave them per bucket.
    const [a, b] = [all.hooks.find((h) => h.id === id('a'))!, all.hooks.find((h) => h.id === id('b'))!];
    const perBucket = (f: (h: typeof a, i: number) => number): number[] => all.buckets.map((_t, i) => f(a, i) + f(b, i));
    expect(some.buckets).toEqual(all.buckets);
    expect(some.rest).toEqual({
      hooks: 2, hooksWithPersisted: 2,
      largest: all.buckets.map((_t, i) => (a.largest[i] === null && b.largest[i] === null ? null : Math.max(a.largest[i] ?? 0, b.largest[i] ?? 0))),
      persisted: perBucket((h, i) => persistedAtLeast({ outputsPersisted: h.outputsPersisted[i]!, executionsWithPersisted: h.executionsWithPersisted[i]! })),
      measuredOnly: all.buckets.map(() => 0),
      executions: perBucket((h, i) => h.executions[i]!),
      sizeUnknownExecutions: all.buckets.map(() => 0),
    });
    expect(some.rest!.executions.reduce((s, n) => s + n, 0)).toBe(2 + 3);
  });
});

describe('a minute-step fleet series kept for its closed buckets', () => {
  it('is kept per start: two ranges beginning in one hour each get the whole hour the rollups counted, said as covered', async () => {
    const at = Date.now();
    // Minutes older than 2 h are read from the hour rollups: a range's first hour is read whole, and the answer
    // names the range it covered, from the hour's start.
    const hour = Math.floor(at / HOUR) * HOUR - 5 * HOUR;
    const open = (): SqliteStore => new SqliteStore({ path: ':memory:', dimensions: ['team'], retention: { eventsMs: 2 * HOUR, minuteRollupsMs: 2 * HOUR }, now: () => hour });
    const [kept, fresh] = [open(), open()];
    const events = [execution('a', 1, hour + 20 * 60_000, true), execution('x', 1, hour + 25 * 60_000, false), execution('x', 2, hour + 90 * 60_000, false)];
    await kept.ingest(events);
    await fresh.ingest(events);
    const [keptApi, freshApi] = [await serveApi(kept, at), await serveApi(fresh, at)];
    try {
      const get = async (base: string, fromMin: number): Promise<FleetSeriesResponse> => {
        const range = `from=${new Date(hour + fromMin * 60_000).toISOString()}&to=${new Date(hour + (fromMin + 60) * 60_000).toISOString()}`;
        const res = await fetch(`${base}/api/v1/fleet/series?${range}&step=1m&limit=2`, { signal: AbortSignal.timeout(10_000) });
        expect(res.status).toBe(200);
        return (await res.json()) as FleetSeriesResponse;
      };
      const first = await get(keptApi.base, 5);
      expect(first.total).toBe(2);
      const second = await get(keptApi.base, 17);
      for (const [answer, fromMin] of [[first, 5], [second, 17]] as const) {
        expect(Date.parse(answer.buckets[0]!)).toBe(hour);
        expect(Date.parse(answer.from)).toBe(hour);
        expect(answer.coverage).toMatchObject({ askedFrom: new Date(hour + fromMin * 60_000).toISOString() });
      }
      expect(second).toEqual(await get(freshApi.base, 17));
      expect(first).toEqual(await get(freshApi.base, 5));
    } finally {
      await Promise.all([keptApi.close(), freshApi.close()]);
      await Promise.all([kept.close(), fresh.close()]);
    }
  });
});
