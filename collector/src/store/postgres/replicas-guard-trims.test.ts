/**
 * Guard trims stored by a follower reach the leader's alerts, with real replicas: the follower that commits a trim
 * report signals the leader (NOTIFY hookwatch_ingest, naming the hooks), which reads that hook's trims and gives its
 * active alert the guard annotations; every replica then lists them, read from the shared state. The evaluation
 * timer is set to 10 minutes and evaluations never read the trims of an active alert: only the signal can.
 * On /metrics each replica counts the trims it stored, so their sum over replicas is what the store holds.
 */
import { expect, it } from 'vitest';
import type { AlertSummary, AlertsResponse } from '../../../../shared/src/api.ts';
import type { GuardTrimsResponse } from '../../../../shared/src/guard-trims.ts';
import { hookId } from '../../hooks/extract.ts';
import { HttpDownstream } from '../../../test/support/downstream-recorder.ts';
import { parseExposition, sampleValue } from '../../../test/support/prometheus-text.ts';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { persistedOutputBody, writeAlertingConfig } from '../../../test/support/postgres/replicas.ts';
import { waitFor, type Replica } from '../../../test/support/serve-process.ts';
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

it('each replica counts on /metrics the guard trims it stored: a report retried to another replica counts on neither twice', async () => {
  const { leader, followers } = await fx.cluster({});
  // The guard's report as its exporter sent it, captured on its way: a retry resends these requests unchanged.
  const capture = new HttpDownstream();
  fx.defer(() => capture.stop());
  await sendReport(`${await capture.start()}/v1/logs`, {
    hookEvent: 'PreToolUse', hookName: HOOK, sessionId: 'guarded',
    trims: [{ field: 'stdout', sentChars: 24_000, keptChars: 9_500 }, { field: 'stdout', sentChars: 12_000, keptChars: 9_400 }],
  });
  const sent = capture.bodies('logs').map((b) => b.toString('utf8'));
  expect(sent.length).toBeGreaterThan(0);
  for (const body of sent) await fx.post(followers[0]!, body);
  // The first answer was lost on its way back: the exporter's retry lands on another replica.
  for (const body of sent) await fx.post(followers[1]!, body);

  const labels = { hook_id: hookId('PreToolUse', HOOK), hook_event: 'PreToolUse', hook_name: HOOK };
  const counted = async (r: Replica, name: string): Promise<number | undefined> => sampleValue(parseExposition(await (await fetch(`${r.httpUrl}/metrics`)).text()), name, labels);
  // The first render showing the hook's series shows it at 0 (hook-metrics.ts); the next one counts.
  expect(await counted(followers[0]!, 'hookwatch_hook_guard_trims_total')).toBe(0);
  expect(await counted(followers[0]!, 'hookwatch_hook_guard_trims_total')).toBe(2);
  expect(await counted(followers[0]!, 'hookwatch_hook_guard_sent_chars_total')).toBe(36_000);
  // Nothing new was stored there or on the leader: no trim counted, no series made for it.
  expect(await counted(followers[1]!, 'hookwatch_hook_guard_trims_total')).toBeUndefined();
  expect(await counted(leader, 'hookwatch_hook_guard_trims_total')).toBeUndefined();
  const res = await fetch(`${leader.httpUrl}/api/v1/hooks/${labels.hook_id}/guard-trims?from=now-1h&to=now%2B1h`);
  expect(((await res.json()) as GuardTrimsResponse).trims).toBe(2);
}, 180_000);
