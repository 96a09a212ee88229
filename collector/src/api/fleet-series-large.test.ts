/**
 * GET /api/v1/fleet/series at the most hook-buckets it answers (MAX_FLEET_HOOK_BUCKETS): the listed hooks' rows,
 * one per hook and bucket, are well past what a function call takes as arguments.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetSeriesResponse } from '../../../shared/src/api.ts';
import { hookId } from '../hooks/extract.ts';
import type { HookEvent } from '../hooks/model.ts';
import type { Store } from '../store/store.ts';
import { serveApi, type ApiServer } from '../../test/support/api-server.ts';
import { backendStores } from '../../test/support/backend-store.ts';
import { MAX_FLEET_HOOK_BUCKETS } from './params.ts';

const MINUTE = 60_000;
const HOOKS = 200;
const MINUTES = 800;
const NOW = Math.floor(Date.now() / MINUTE) * MINUTE;

function execution(h: number, m: number): HookEvent {
  const hookName = `PostToolUse:h${String(h).padStart(3, '0')}`;
  return {
    kind: 'complete', dedupKey: `k-${h}-${m}`, hookId: hookId('PostToolUse', hookName), hookEvent: 'PostToolUse', hookName,
    timeMs: NOW - (m + 1) * MINUTE + 1000, numHooks: 1, numSuccess: 1, numBlocking: 0, numNonBlockingError: 0, numCancelled: 0, durationMs: 10,
    stdoutChars: 1000 + h, additionalContextChars: null, systemMessageChars: null, initialUserMessageChars: null, outputsPersisted: 0,
    sizesKnown: true, status: 'ok', serviceName: 'claude-code', serviceVersion: '2.1.332', sessionId: 's', userId: 'u', userEmail: '',
    userAccountUuid: '', organizationId: '', terminalType: '', source: 'otlp', extra: { team: 'web' },
  };
}

const stores = backendStores();
afterAll(async () => {
  await stores.stop();
});

describe.each(['sqlite', 'postgres'] as const)('GET /api/v1/fleet/series with many hook-buckets on %s', (backend) => {
  let store: Store;
  let api: ApiServer;
  beforeAll(async () => {
    store = await stores.open(backend, { dimensions: ['team'] });
    // A hook's execution in every minute: a row per hook and minute.
    for (let m = 0; m < MINUTES; m += 50) {
      const batch: HookEvent[] = [];
      for (let k = m; k < m + 50; k++) for (let h = 0; h < HOOKS; h++) batch.push(execution(h, k));
      await store.ingest(batch);
    }
    api = await serveApi(store, NOW);
  }, 600_000);
  afterAll(async () => {
    await api.close();
    await store.close();
  });

  it('answers every listed hook\'s rows', { timeout: 120_000 }, async () => {
    const res = await fetch(`${api.base}/api/v1/fleet/series?from=now-${MINUTES}m&step=1m&limit=${HOOKS}`, { signal: AbortSignal.timeout(110_000) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as FleetSeriesResponse;
    expect(body.buckets).toHaveLength(MINUTES);
    expect(body.hooks.length * body.buckets.length).toBeLessThanOrEqual(MAX_FLEET_HOOK_BUCKETS);
    expect([body.hooks.length, body.total, body.rest]).toEqual([HOOKS, HOOKS, null]);
    for (const h of body.hooks) expect(h.executions, h.id).toEqual(body.buckets.map(() => 1));
  });
});
