/**
 * GET /api/v1/fleet/series?ids=: the overview asks it for the sparklines of rows past the fleet series' riskiest, a
 * screenful at a time, so what each request reads must follow the hooks it names, not the size of the fleet.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetSeriesResponse } from '../../../shared/src/api.ts';
import { hookId } from '../hooks/extract.ts';
import type { HookEvent } from '../hooks/model.ts';
import { SqliteStore } from '../store/sqlite/index.ts';
import type { RangeQuery } from '../store/store.ts';
import { serveApi, type ApiServer } from '../../test/support/api-server.ts';

const NOW = Date.parse('2026-11-30T12:00:00Z');
const HOOKS = Array.from({ length: 12 }, (_v, i) => `PostToolUse:h${String(i).padStart(2, '0')}`);
const store = new SqliteStore({ path: ':memory:', dimensions: ['team'] });
/** What the API asked the store, per method. */
const asked: { fleetSeries: RangeQuery[]; hookCounters: RangeQuery[] } = { fleetSeries: [], hookCounters: [] };
let api: ApiServer;
let base: string;

function execution(hookName: string, i: number): HookEvent {
  return {
    kind: 'complete', dedupKey: `k-${hookName}-${i}`, hookId: hookId('PostToolUse', hookName), hookEvent: 'PostToolUse', hookName,
    timeMs: NOW - (i + 1) * 3_600_000, numHooks: 1, numSuccess: 1, numBlocking: 0, numNonBlockingError: 0, numCancelled: 0, durationMs: 10,
    stdoutChars: 1000 + i * 1000, additionalContextChars: null, systemMessageChars: null, initialUserMessageChars: null, outputsPersisted: 0,
    sizesKnown: true, status: 'ok', serviceName: 'claude-code', serviceVersion: '2.1.332', sessionId: 's', userId: 'u', userEmail: '',
    userAccountUuid: '', organizationId: '', terminalType: '', source: 'otlp', extra: { team: i % 2 ? 'web' : 'infra' },
  };
}

beforeAll(async () => {
  await store.ingest(HOOKS.flatMap((name, i) => Array.from({ length: 1 + (i % 3) }, (_v, j) => execution(name, i + j))));
  // The store as the API sees it, noting what it is asked.
  const watched = new Proxy(store, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      if (prop === 'fleetSeries' || prop === 'hookCounters') {
        return (q: RangeQuery) => {
          asked[prop].push(q);
          return (value as (q: RangeQuery) => unknown).call(target, q);
        };
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
  api = await serveApi(watched, NOW);
  base = api.base;
});
afterAll(async () => {
  await api.close();
  await store.close();
});

async function fleet(query: string): Promise<FleetSeriesResponse> {
  const res = await fetch(`${base}/api/v1/fleet/series?from=now-1d&step=1h${query}`, { signal: AbortSignal.timeout(10_000) });
  expect(res.status).toBe(200);
  return (await res.json()) as FleetSeriesResponse;
}

describe('GET /api/v1/fleet/series with ids', () => {
  it('asks the store for the hooks named only, and answers as the whole fleet answer does for them', async () => {
    for (const filter of ['', '&team=web']) {
      const all = await fleet(filter);
      const ids = [hookId('PostToolUse', HOOKS[3]!), hookId('PostToolUse', HOOKS[8]!), hookId('PostToolUse', HOOKS[11]!)];
      asked.fleetSeries = [];
      asked.hookCounters = [];
      const some = await fleet(`${filter}&ids=${ids.join(',')}`);
      // Each read is of the hooks named, with the filters: not of every hook, to be narrowed after.
      for (const q of [...asked.fleetSeries, ...asked.hookCounters]) {
        expect([...(q.hookIds ?? [])].sort(), filter).toEqual([...ids].sort());
        expect(q.filters, filter).toEqual(filter ? { team: 'web' } : {});
      }
      expect([asked.fleetSeries.length, asked.hookCounters.length]).toEqual([1, 1]);
      const named = all.hooks.filter((h) => ids.includes(h.id));
      expect(some.hooks, filter).toEqual(named);
      expect([some.total, some.rest, some.buckets], filter).toEqual([named.length, null, all.buckets]);
    }
  });

  it('reads the rows of each bucket for the hooks it lists only, the rest as sums', async () => {
    for (const filter of ['', '&team=web']) {
      asked.fleetSeries = [];
      const some = await fleet(`${filter}&limit=3`);
      expect(some.hooks).toHaveLength(3);
      expect(some.rest?.hooks, filter).toBe(some.total - 3);
      // One read of the hooks' rows, of the three listed: the others are summed per bucket by the store.
      expect(asked.fleetSeries.map((q) => [...(q.hookIds ?? ['(every hook)'])].sort()), filter).toEqual([some.hooks.map((h) => h.id).sort()]);
    }
  });

  it('sums the hooks named past `limit` as the rest, as for the whole fleet', async () => {
    const ids = HOOKS.slice(0, 5).map((name) => hookId('PostToolUse', name));
    const some = await fleet(`&limit=2&ids=${ids.join(',')}`);
    expect(some.hooks).toHaveLength(2);
    expect(some.total).toBe(5);
    expect(some.rest?.hooks).toBe(3);
    const all = await fleet('&limit=5000');
    const restIds = ids.filter((id) => !some.hooks.some((h) => h.id === id));
    const executions = all.hooks.filter((h) => restIds.includes(h.id)).reduce((n, h) => n + h.executions.reduce((a, b) => a + b, 0), 0);
    expect(some.rest?.executions.reduce((a, b) => a + b, 0)).toBe(executions);
  });
});

describe('GET /api/v1/fleet/series over a large fleet', () => {
  // 130 hooks in 2,000 one-minute buckets: 260,000 hook-buckets, each five arrays, past the bound of 250,000.
  const many = Array.from({ length: 130 }, (_v, i) => `PostToolUse:m${String(i).padStart(3, '0')}`);
  const big = new SqliteStore({ path: ':memory:', dimensions: ['team'] });
  let bigApi: ApiServer;
  beforeAll(async () => {
    await big.ingest(many.map((name, i) => execution(name, i % 24)));
    bigApi = await serveApi(big, NOW);
  });
  afterAll(async () => {
    await bigApi.close();
    await big.close();
  });
  const ask = async (query: string, step = '1m'): Promise<{ status: number; body: FleetSeriesResponse & { error?: { code: string; parameter: string; message: string } } }> => {
    const res = await fetch(`${bigApi.base}/api/v1/fleet/series?from=now-2000m&step=${step}${query}`, { signal: AbortSignal.timeout(10_000) });
    return { status: res.status, body: (await res.json()) as FleetSeriesResponse & { error?: { code: string; parameter: string; message: string } } };
  };

  it('refuses an answer of more hooks × buckets than the bound, naming limit and the most hooks that step allows', async () => {
    const { status, body } = await ask('');
    expect([status, body.error?.code, body.error?.parameter]).toEqual([400, 'bad_parameter', 'limit']);
    expect(body.error?.message).toBe('limit: 130 hooks × 2000 buckets is more than 250000 hook-buckets in one answer; at this step ask for at most 125 hooks (limit), or give a longer step');
    expect((await ask('&limit=126')).status).toBe(400);
  });

  it('answers within the bound: fewer hooks (the rest summed), hooks named by id, or a longer step', async () => {
    const fewer = await ask('&limit=125');
    expect([fewer.status, fewer.body.hooks.length, fewer.body.buckets.length, fewer.body.rest?.hooks, fewer.body.total]).toEqual([200, 125, 2000, 5, 130]);
    const named = await ask(`&ids=${many.slice(0, 100).map((name) => hookId('PostToolUse', name)).join(',')}`);
    expect([named.status, named.body.hooks.length]).toEqual([200, 100]);
    const longer = await ask('', '10m');
    expect([longer.status, longer.body.hooks.length, longer.body.buckets.length]).toEqual([200, 130, 200]);
  });
});
