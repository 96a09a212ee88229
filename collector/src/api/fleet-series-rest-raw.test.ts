/**
 * GET /api/v1/fleet/series on both stores: the rest (the hooks past `limit`, summed per bucket) is the one folded
 * here from the raw events sent, not from the store's own rows: hooks that persist in some buckets only, hooks
 * measured over the cap without a reported count, hooks near the cap, hooks of unknown sizes, several hooks per
 * execution, and hooks past store.maxHooks counted under their event's overflow hook.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetSeriesResponse } from '../../../shared/src/api.ts';
import { hookId } from '../hooks/extract.ts';
import { isOverflowHook, overflowHookName, type HookEvent } from '../hooks/model.ts';
import type { Store } from '../store/store.ts';
import { serveApi, type ApiServer } from '../../test/support/api-server.ts';
import { seededRandom as random } from '../../test/support/random.ts';
import { backendStores } from '../../test/support/backend-store.ts';

const NOW = Date.parse('2026-11-30T12:00:00Z');
const HOUR = 3_600_000;
const MAX_HOOKS = 150;

function events(): HookEvent[] {
  const r = random(20261207);
  const out: HookEvent[] = [];
  for (let h = 0; h < 200; h++) {
    const hookEvent = h % 3 === 0 ? 'Stop' : 'PostToolUse';
    const hookName = `${hookEvent}:r${String(h).padStart(3, '0')}`;
    // Some hooks persist often, most rarely or never: persisted outputs in some buckets only.
    const overRate = h % 5 === 0 ? 0.5 : h % 5 === 1 ? 0.1 : 0;
    for (let i = 0, n = 1 + Math.floor(r() * 8); i < n; i++) {
      const roll = r();
      const status = roll < overRate ? 'over' : roll < overRate + 0.15 ? 'near' : 'ok';
      const sized = r() < 0.8;
      const numHooks = r() < 0.2 ? 2 : 1;
      const stdout = status === 'over' ? 10_001 + Math.floor(r() * 9_000) : status === 'near' ? 8_000 + Math.floor(r() * 2_000) : Math.floor(r() * 5_000);
      out.push({
        kind: 'complete', dedupKey: `raw-${h}-${i}`, hookId: hookId(hookEvent, hookName), hookEvent, hookName,
        timeMs: NOW - 1 - Math.floor(r() * 3 * 24 * HOUR), numHooks, numSuccess: numHooks, numBlocking: 0, numNonBlockingError: 0, numCancelled: 0, durationMs: 10,
        stdoutChars: sized ? stdout : null, additionalContextChars: sized && r() < 0.3 ? Math.floor(r() * 15_000) : null, systemMessageChars: null, initialUserMessageChars: null,
        // Reported (1 or 2 outputs), or not (a client without num_outputs_persisted, measured over the cap).
        outputsPersisted: status === 'over' ? (r() < 0.5 ? 1 + Math.floor(r() * 2) : null) : 0,
        sizesKnown: sized, status, serviceName: 'claude-code', serviceVersion: '2.1.332', sessionId: `s${i}`, userId: 'u', userEmail: '',
        userAccountUuid: '', organizationId: '', terminalType: '', source: 'otlp', extra: { team: r() < 0.5 ? 'web' : 'infra' },
      });
    }
  }
  return out;
}

interface Fold {
  executions: number;
  outputsPersisted: number;
  executionsWithPersisted: number;
  sizeUnknown: number;
  largest: number | null;
}

/**
 * The rest of `body` folded from the raw events: per hook and bucket (a hook not `admitted` under its event's
 * overflow hook), then summed.
 */
function restFromEvents(sent: readonly HookEvent[], admitted: ReadonlySet<string>, body: FleetSeriesResponse, team: string | undefined): FleetSeriesResponse['rest'] {
  const fromMs = Date.parse(body.from);
  const toMs = Date.parse(body.to);
  const stepMs = body.step * 1000;
  const starts = body.buckets.map((b) => Date.parse(b));
  const listed = new Set(body.hooks.map((h) => h.id));
  const perHook = new Map<string, Map<number, Fold>>();
  for (const e of sent) {
    if (e.timeMs < fromMs || e.timeMs >= toMs || (team !== undefined && e.extra['team'] !== team)) continue;
    const id = admitted.has(e.hookId) ? e.hookId : hookId(e.hookEvent, overflowHookName(e.hookEvent));
    if (listed.has(id)) continue;
    const buckets = perHook.get(id) ?? new Map<number, Fold>();
    perHook.set(id, buckets);
    const at = Math.floor(e.timeMs / stepMs) * stepMs;
    const f = buckets.get(at) ?? { executions: 0, outputsPersisted: 0, executionsWithPersisted: 0, sizeUnknown: 0, largest: null };
    buckets.set(at, f);
    f.executions += 1;
    f.outputsPersisted += e.outputsPersisted ?? 0;
    f.executionsWithPersisted += e.status === 'over' ? 1 : 0;
    f.sizeUnknown += e.sizesKnown ? 0 : 1;
    for (const chars of [e.stdoutChars, e.additionalContextChars, e.systemMessageChars, e.initialUserMessageChars]) {
      if (chars !== null && (f.largest === null || chars > f.largest)) f.largest = chars;
    }
  }
  if (perHook.size === 0) return null;
  const rest = { largest: starts.map((): number | null => null), persisted: starts.map(() => 0), measuredOnly: starts.map(() => 0), executions: starts.map(() => 0), sizeUnknownExecutions: starts.map(() => 0) };
  let hooksWithPersisted = 0;
  for (const buckets of perHook.values()) {
    let op = 0;
    let ewp = 0;
    for (const [at, f] of buckets) {
      const i = starts.indexOf(at);
      expect(i, `bucket ${new Date(at).toISOString()}`).toBeGreaterThanOrEqual(0);
      rest.executions[i]! += f.executions;
      rest.persisted[i]! += Math.max(f.outputsPersisted, f.executionsWithPersisted);
      rest.measuredOnly[i]! += f.executionsWithPersisted > f.outputsPersisted ? f.executionsWithPersisted : 0;
      rest.sizeUnknownExecutions[i]! += f.sizeUnknown;
      if (f.largest !== null && (rest.largest[i] === null || f.largest > rest.largest[i]!)) rest.largest[i] = f.largest;
      op += f.outputsPersisted;
      ewp += f.executionsWithPersisted;
    }
    if (Math.max(op, ewp) > 0) hooksWithPersisted++;
  }
  return { hooks: perHook.size, hooksWithPersisted, ...rest };
}

const stores = backendStores();
afterAll(async () => {
  await stores.stop();
});

describe.each(['sqlite', 'postgres'] as const)('the fleet series\' rest on %s, against the raw events', (backend) => {
  let store: Store;
  let api: ApiServer;
  const sent = events();
  beforeAll(async () => {
    store = await stores.open(backend, { dimensions: ['team'], maxHooks: MAX_HOOKS });
    await store.ingest(sent);
    api = await serveApi(store, NOW);
  }, 120_000);
  afterAll(async () => {
    await api.close();
    await store.close();
  });

  it.each([
    ['from=2026-11-27T00:00:00Z&to=2026-11-30T00:00:00Z&step=1d', 20],
    ['from=2026-11-28T00:00:00Z&to=2026-11-30T00:00:00Z&step=1h', 10],
    ['from=2026-11-27T12:00:00Z&to=2026-11-30T12:00:00Z&step=6h', 5],
    ['from=2026-11-29T06:00:00Z&to=2026-11-30T12:00:00Z&step=1h&team=web', 8],
    ['from=2026-11-30T00:00:00Z&to=2026-11-30T12:00:00Z&step=30m', 10],
    // Starting and ending mid-hour and mid-day, the last minute still open.
    ['from=2026-11-28T00:20:00Z&to=2026-11-29T23:40:00Z&step=1h', 10],
    ['from=2026-11-27T05:30:00Z&to=2026-11-30T11:59:30Z&step=1d', 20],
  ])('answers %s with limit %i as folded from the events sent', async (query, limit) => {
    const res = await fetch(`${api.base}/api/v1/fleet/series?${query}&limit=${limit}`, { signal: AbortSignal.timeout(30_000) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as FleetSeriesResponse;
    expect(body.hooks).toHaveLength(limit);
    const team = /team=(\w+)/.exec(query)?.[1];
    const expected = restFromEvents(sent, await admitted(), body, team);
    expect(expected?.hooks).toBeGreaterThan(0);
    expect(expected!.persisted.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    expect(expected!.measuredOnly.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    expect(body.rest).toEqual(expected);
  });

  /** The hooks the store admitted under their own names (which ones past store.maxHooks is the store's choice). */
  async function admitted(): Promise<Set<string>> {
    const all = await store.hookCounters({ fromMs: 0, toMs: NOW + HOUR, filters: {} });
    const ids = new Set([...all.values()].filter((c) => !isOverflowHook(c.info)).map((c) => c.info.id));
    expect(ids.size).toBe(MAX_HOOKS);
    return ids;
  }

  it('counts hooks past the limit under their event\'s overflow hook', async () => {
    const overflow = await store.overflowHooks();
    expect(overflow.map((h) => h.hookName).sort()).toEqual([overflowHookName('PostToolUse'), overflowHookName('Stop')]);
  });
});
