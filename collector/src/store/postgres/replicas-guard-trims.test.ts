/**
 * Guard trims stored by a follower reach the leader's alerts, with real replicas: the follower that commits a trim
 * report signals the leader (NOTIFY hookwatch_ingest, naming the hooks), which reads that hook's trims and gives its
 * active alert the guard annotations; every replica then lists them, read from the shared state. The evaluation
 * timer is set to 10 minutes and evaluations never read the trims of an active alert: only the signal can.
 */
import { expect, it } from 'vitest';
import type { AlertSummary, AlertsResponse } from '../../../../shared/src/api.ts';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { persistedOutputBody, waitFor, writeAlertingConfig, type Replica } from '../../../test/support/postgres/replicas.ts';
import { sendReport } from '../../tools/guard/report-send.ts';

const fx = useReplicaFixture();
const HOOK = 'PreToolUse:fixed';

async function listed(r: Replica): Promise<AlertSummary | undefined> {
  const res = await fetch(`${r.httpUrl}/api/v1/alerts`);
  if (res.status !== 200) throw new Error(`${r.httpUrl}/api/v1/alerts: ${res.status} ${await res.text()}`);
  return ((await res.json()) as AlertsResponse).alerts.find((a) => a.labels['hook_name'] === HOOK);
}

it('guard trims a follower stores while an alert fires reach the alert, on every replica, and notify nothing', async () => {
  const hook = await fx.webhook();
  const { leader, followers } = await fx.cluster({ HOOKWATCH_CONFIG: writeAlertingConfig(fx.dir(), hook.url), HOOKWATCH_POSTGRES_LEASE_TTL: '60s', HOOKWATCH_ALERT_EVALUATION_INTERVAL: '10m' });
  await fx.post(followers[0]!, persistedOutputBody(Date.now(), 'before-guard', HOOK));
  await waitFor('the webhook of the alert', async () => hook.deliveries.find((d) => d.labels['hook_name'] === HOOK), 30_000);
  expect(Object.keys((await listed(leader))?.annotations ?? {}).filter((k) => k.startsWith('guard'))).toEqual([]);

  // The hook's author wraps it with guard: its report goes to the other follower.
  await sendReport(`${followers[1]!.otlpHttpUrl}/v1/logs`, { hookEvent: 'PreToolUse', hookName: HOOK, sessionId: 'after-guard', trims: [{ field: 'stdout', sentChars: 24_000, keptChars: 9_500 }] });
  for (const r of [leader, ...followers]) {
    const a = await waitFor(`${r.httpUrl} listing the guard annotations`, async () => {
      const x = await listed(r);
      return x?.annotations['guard_trims'] === '1' ? x : undefined;
    }, 30_000, 100);
    expect(a.annotations['guard_largest_output']).toBe('24000');
  }
  expect(hook.deliveries.filter((d) => d.labels['hook_name'] === HOOK)).toHaveLength(1);
}, 180_000);
