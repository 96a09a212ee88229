/**
 * GET /api/v1/fleet/series over a few hundred hooks of random events, on both stores: the answer (the listed hooks'
 * rows and the rest summed by the store per bucket) is the one folded from every hook's rows (Store.fleetSeries over
 * the whole fleet), at steps of days, hours and minutes (one that does not divide the hour), filtered or not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetSeriesResponse } from '../../../shared/src/api.ts';
import { measuredOnly, persistedAtLeast } from '../../../shared/src/cliff.ts';
import { hookId } from '../hooks/extract.ts';
import type { HookEvent } from '../hooks/model.ts';
import type { Store } from '../store/store.ts';
import { serveApi, type ApiServer } from '../../test/support/api-server.ts';
import { backendStores } from '../../test/support/backend-store.ts';

const NOW = Date.parse('2026-11-30T12:00:00Z');
const HOUR = 3_600_000;

/** A random number generator of its own seed, so a failure can be run again. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1_103_515_245 + 12_345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

function events(): HookEvent[] {
  const r = random(20261130);
  const out: HookEvent[] = [];
  for (let h = 0; h < 300; h++) {
    const hookName = `PostToolUse:r${String(h).padStart(3, '0')}`;
    for (let i = 0, n = 1 + Math.floor(r() * 6); i < n; i++) {
      const over = r() < 0.3;
      const sized = r() < 0.85;
      out.push({
        kind: 'complete', dedupKey: `k-${h}-${i}`, hookId: hookId('PostToolUse', hookName), hookEvent: 'PostToolUse', hookName,
        timeMs: NOW - Math.floor(r() * 3 * 24 * HOUR), numHooks: 1, numSuccess: 1, numBlocking: 0, numNonBlockingError: 0, numCancelled: 0, durationMs: 10,
        stdoutChars: sized ? Math.floor(r() * 20_000) : null, additionalContextChars: sized && r() < 0.3 ? Math.floor(r() * 15_000) : null, systemMessageChars: null, initialUserMessageChars: null,
        // Reported, or not (a client without num_outputs_persisted, measured over the cap).
        outputsPersisted: over ? (r() < 0.5 ? 1 + Math.floor(r() * 2) : null) : 0,
        sizesKnown: sized, status: over ? 'over' : 'ok', serviceName: 'claude-code', serviceVersion: '2.1.332', sessionId: `s${i}`, userId: 'u', userEmail: '',
        userAccountUuid: '', organizationId: '', terminalType: '', source: 'otlp', extra: { team: r() < 0.5 ? 'web' : 'infra' },
      });
    }
  }
  return out;
}

/** The answer's rest as folded from every hook's rows, those of the hooks it does not list. */
async function restFolded(store: Store, body: FleetSeriesResponse, filters: Record<string, string>): Promise<FleetSeriesResponse['rest']> {
  const fromMs = Date.parse(body.from);
  const toMs = Date.parse(body.to);
  const stepMs = body.step * 1000;
  const counters = await store.hookCounters({ fromMs, toMs, filters });
  const listed = new Set(body.hooks.map((h) => h.id));
  const starts = body.buckets.map((b) => Math.floor(Date.parse(b) / stepMs) * stepMs);
  const rest = { largest: starts.map((): number | null => null), persisted: starts.map(() => 0), measuredOnly: starts.map(() => 0), executions: starts.map(() => 0), sizeUnknownExecutions: starts.map(() => 0) };
  for (const r of await store.fleetSeries({ fromMs, toMs, stepMs, filters })) {
    const i = (r.bucketMs - starts[0]!) / stepMs;
    if (i < 0 || i >= starts.length || listed.has(r.hookId) || !counters.has(r.hookId)) continue;
    const largest = rest.largest[i] ?? null;
    rest.largest[i] = r.largest === null ? largest : Math.max(largest ?? 0, r.largest);
    rest.persisted[i]! += persistedAtLeast(r);
    rest.measuredOnly[i]! += measuredOnly(r);
    rest.executions[i]! += r.executions;
    rest.sizeUnknownExecutions[i]! += r.sizeUnknownExecutions;
  }
  const restCounters = [...counters.values()].filter((c) => !listed.has(c.info.id));
  return restCounters.length === 0 ? null : { hooks: restCounters.length, hooksWithPersisted: restCounters.filter((c) => persistedAtLeast(c) > 0).length, ...rest };
}

const stores = backendStores();
afterAll(async () => {
  await stores.stop();
});

describe.each(['sqlite', 'postgres'] as const)('the fleet series\' rest on %s', (backend) => {
  let store: Store;
  let api: ApiServer;
  beforeAll(async () => {
    store = await stores.open(backend, { dimensions: ['team'] });
    await store.ingest(events());
    api = await serveApi(store, NOW);
  }, 120_000);
  afterAll(async () => {
    await api.close();
    await store.close();
  });

  it.each([
    ['from=now-3d&step=1d', 40], ['from=now-3d&step=1h', 100], ['from=now-50h&to=now-3h&step=1h', 7], ['from=now-1d&step=24m', 60], ['from=now-6h&step=7m', 25], ['from=now-3d&step=1h&team=web', 30],
  ])('answers %s with limit %i as folded from every hook\'s rows', async (query, limit) => {
    const res = await fetch(`${api.base}/api/v1/fleet/series?${query}&limit=${limit}`, { signal: AbortSignal.timeout(30_000) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as FleetSeriesResponse;
    expect(body.hooks).toHaveLength(limit);
    expect(body.rest?.hooks).toBeGreaterThan(0);
    const filters: Record<string, string> = query.includes('team=web') ? { team: 'web' } : {};
    expect(body.rest).toEqual(await restFolded(store, body, filters));
    expect(body.rest!.persisted.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    expect(body.rest!.measuredOnly.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  });
});
