/**
 * GET /api/v1/alerts over a real socket when more alerts resolved than the list holds: a script reading the list
 * learns it was cut, and how many were left out; one hook's alerts, asked for alone, are not cut by the others'.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlertsResponse } from '../../../shared/src/api.ts';
import { alertRecord } from '../../test/support/alerting.ts';
import { getJson } from '../../test/helpers.ts';
import { AlertSet } from '../alerting/alert-set.ts';
import { AlertReadModel, MAX_RESOLVED_LISTED } from '../alerting/read-model.ts';
import type { Silences } from '../alerting/silencing.ts';
import type { Dispatcher } from '../notify/dispatcher.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { createAlertsRouter } from './alerts.ts';
import { apiErrorHandler } from './index.ts';

const NOW = Date.UTC(2026, 10, 30, 10);
const set = new AlertSet();
/** An alert id as the API takes it: <16 hex>-<base36>. */
const resolvedId = (i: number): string => `${i.toString(16).padStart(16, '0')}-r`;
/** A hook whose alerts resolved before every other one: past the newest MAX_RESOLVED_LISTED of the fleet's. */
const OLD_HOOK = '00000000000000aa';
const oldHookAlerts = ['eeeeeeeeeeeeeee1-p', 'eeeeeeeeeeeeeee2-r', 'eeeeeeeeeeeeeee3-r'];
let server: ReturnType<express.Express['listen']>;
let base: string;
/** The alert ids each answer asked the state store for the deliveries of. */
const deliveriesAsked: string[][] = [];

beforeAll(async () => {
  set.replace([
    alertRecord({ id: 'ffffffffffffffff-f', state: 'firing', fingerprint: 'firing', startsAtMs: NOW - 1000 }),
    ...Array.from({ length: MAX_RESOLVED_LISTED + 3 }, (_, i) => alertRecord({ id: resolvedId(i), state: 'resolved', fingerprint: `fp${i}`, endsAtMs: NOW - i, hookId: 'ffffffffffffffff' })),
    alertRecord({ id: 'eeeeeeeeeeeeeee1-p', state: 'pending', fingerprint: 'old-pending', hookId: OLD_HOOK }),
    alertRecord({ id: 'eeeeeeeeeeeeeee2-r', state: 'resolved', fingerprint: 'old-1', endsAtMs: NOW - 10_000, hookId: OLD_HOOK }),
    alertRecord({ id: 'eeeeeeeeeeeeeee3-r', state: 'resolved', fingerprint: 'old-2', endsAtMs: NOW - 20_000, hookId: OLD_HOOK }),
  ]);
  const alerts = new AlertReadModel({
    alerts: set, silences: { mutedBy: () => [] }, stateStore: { attempts: async () => [], lastAttempts: async (ids) => (deliveriesAsked.push([...ids]), []) }, receivers: [], now: () => NOW,
  });
  const app = express();
  // The silences and receivers are not asked for by these routes.
  app.use(createAlertsRouter({ alerts, silences: {} as Silences, dispatcher: {} as Dispatcher, now: () => NOW }));
  app.use(apiErrorHandler(silentLogger));
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
});

describe('GET /api/v1/alerts past its bound', () => {
  it('lists the newest resolved alerts and says how many older ones it left out', async () => {
    const all = await getJson<AlertsResponse>(base, '/api/v1/alerts');
    expect(all.status).toBe(200);
    expect(all.body.alerts).toHaveLength(2 + MAX_RESOLVED_LISTED);
    expect(all.body.alerts.at(-1)?.id).toBe(resolvedId(MAX_RESOLVED_LISTED - 1));
    expect(all.body.resolvedOmitted).toBe(5);
    const resolved = await getJson<AlertsResponse>(base, '/api/v1/alerts?state=resolved');
    expect([resolved.body.alerts.length, resolved.body.resolvedOmitted]).toEqual([MAX_RESOLVED_LISTED, 5]);
    // Firing alerts are never cut, so nothing is left out of them.
    const firing = await getJson<AlertsResponse>(base, '/api/v1/alerts?state=firing');
    expect([firing.body.alerts.map((a) => a.id), firing.body.resolvedOmitted]).toEqual([['ffffffffffffffff-f'], 0]);
    // One left out of the list is still there by its id.
    expect((await getJson(base, `/api/v1/alerts/${resolvedId(MAX_RESOLVED_LISTED + 2)}`)).status).toBe(200);
  });

  it('asks for the deliveries of the alerts in the state filtered on only, not of every resolved one', async () => {
    // The dashboard's header asks for the firing alerts at each refresh of every open page: a fleet's thousand
    // resolved alerts are not looked up each time.
    deliveriesAsked.length = 0;
    const firing = await getJson<AlertsResponse>(base, '/api/v1/alerts?state=firing');
    expect(firing.body.alerts.map((a) => a.id)).toEqual(['ffffffffffffffff-f']);
    expect(deliveriesAsked).toEqual([['ffffffffffffffff-f']]);
  });

  it('lists one hook\'s alerts alone, its resolved ones not cut by the rest of the fleet\'s', async () => {
    // The dashboard's alerts page filtered to a hook (the overview's firing marker leads there): the hook's alerts
    // resolved long ago are past the fleet's newest 1,000, and still listed.
    const hook = await getJson<AlertsResponse>(base, `/api/v1/alerts?hook=${OLD_HOOK}`);
    expect(hook.status).toBe(200);
    expect([hook.body.alerts.map((a) => a.id), hook.body.resolvedOmitted]).toEqual([oldHookAlerts, 0]);
    // With the state filter as well; a hook with no alert has none.
    const resolved = await getJson<AlertsResponse>(base, `/api/v1/alerts?state=resolved&hook=${OLD_HOOK}`);
    expect(resolved.body.alerts.map((a) => a.id)).toEqual(oldHookAlerts.slice(1));
    expect((await getJson<AlertsResponse>(base, '/api/v1/alerts?hook=0123456789abcdef')).body.alerts).toEqual([]);
    // The hook with more resolved alerts than the list holds: cut as the fleet's list is, and saying so.
    const many = await getJson<AlertsResponse>(base, '/api/v1/alerts?hook=ffffffffffffffff');
    expect([many.body.alerts.length, many.body.resolvedOmitted]).toEqual([MAX_RESOLVED_LISTED, 3]);
  });

  it('refuses a hook that is no hook id, naming the parameter', async () => {
    for (const bad of ['Stop:loud-report', '0123456789ABCDEF', '0123456789abcde', '']) {
      const r = await getJson<{ error: { code: string; parameter: string; message: string } }>(base, `/api/v1/alerts?hook=${encodeURIComponent(bad)}`);
      expect([r.status, r.body.error.code, r.body.error.parameter]).toEqual([400, 'bad_parameter', 'hook']);
      expect(r.body.error.message).toContain('GET /api/v1/hooks');
    }
    const twice = await getJson<{ error: { parameter: string } }>(base, `/api/v1/alerts?hook=${OLD_HOOK}&hook=${OLD_HOOK}`);
    expect([twice.status, twice.body.error.parameter]).toEqual([400, 'hook']);
  });
});
