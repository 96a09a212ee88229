/**
 * Reloading the configuration on two real replicas sharing one real PostgreSQL (POST /-/reload on each): the
 * leader's reload takes effect at its next evaluation, and its notifications use it; a follower's reload sends
 * nothing while it follows, and takes effect once it leads: a receiver it added then gets the alerts firing, and
 * what the outbox held for a receiver it removed is dropped. A replica started on a file with a receiver the leader's
 * lacks (a rolling update) notifies it of the alerts firing once it leads, as a reload would.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { expect, it } from 'vitest';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { leading, persistedOutputBody, startCluster, type WebhookReceiver } from '../../../test/support/postgres/replicas.ts';
import { logEntries, waitFor, type Replica } from '../../../test/support/serve-process.ts';

const fx = useReplicaFixture();

function alertingYaml(rules: string[], receivers: { name: string; url: string }[]): string {
  return [
    'alerting:',
    '  evaluationInterval: 200ms',
    '  repeatInterval: 1h',
    '  rules:',
    ...rules.map((name) => `    - { kind: persisted, name: ${name}, window: 1h }`),
    '  receivers:',
    ...receivers.map((r) => `    - { name: ${r.name}, type: webhook, url: "${r.url}" }`),
    '',
  ].join('\n');
}

async function reload(r: Replica): Promise<unknown> {
  const res = await fetch(`${r.httpUrl}/-/reload`, { method: 'POST' });
  return { status: res.status, body: await res.json() };
}

/** `status alertname` of every delivery, sorted. */
function firing(hook: WebhookReceiver): string[] {
  return hook.deliveries.map((d) => `${d.status} ${d.labels['alertname']}`).sort();
}

it('the leader notifies with the rule it reloaded; a follower\'s reload sends nothing until it leads, then takes effect', async () => {
  const ops = await fx.webhook();
  const oncall = await fx.webhook();
  // Never answers 2xx: its notifications stay undelivered in the outbox.
  const gone = await fx.webhook();
  gone.answer(503);
  const opsAndGone = [{ name: 'ops', url: ops.url }, { name: 'gone', url: gone.url }];
  const file = join(fx.dir(), 'reload.yaml');
  writeFileSync(file, alertingYaml(['persisted_output'], opsAndGone));
  const c = await startCluster(fx.server(), fx.dir(), { HOOKWATCH_CONFIG: file, HOOKWATCH_POSTGRES_LEASE_TTL: '2s' }, 2);
  fx.adopt(c.replicas);
  fx.defer(() => c.db.end());
  const [leader, follower] = [c.leader, c.followers[0]!];

  // The leader reloads a second rule; the output, posted to the follower (not reloaded), fires both at the leader.
  writeFileSync(file, alertingYaml(['persisted_output', 'persisted_too'], opsAndGone));
  expect(await reload(leader)).toEqual({ status: 200, body: { status: 'success', restartRequired: [] } });
  await fx.post(follower, persistedOutputBody(Date.now(), 'reload-a'));
  await waitFor('both rules notified', async () => (ops.deliveries.length >= 2 ? true : undefined), 20_000);
  expect(firing(ops)).toEqual(['firing persisted_output', 'firing persisted_too']);

  await waitFor('gone tried', async () => (gone.deliveries.length >= 2 ? true : undefined), 20_000);

  // The follower reloads with a new receiver, and without `gone` (the leader does not): while it follows, nothing
  // is sent to the new one nor dropped, and the leader's evaluations go on as before.
  writeFileSync(file, alertingYaml(['persisted_output', 'persisted_too'], [{ name: 'ops', url: ops.url }, { name: 'oncall', url: oncall.url }]));
  expect(await reload(follower)).toEqual({ status: 200, body: { status: 'success', restartRequired: [] } });
  expect(logEntries(follower.lines, 'configuration reloaded')).toHaveLength(1);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect(oncall.deliveries).toEqual([]);
  expect(firing(ops)).toEqual(['firing persisted_output', 'firing persisted_too']);
  const outbox = async (): Promise<string[]> => (await c.db.query<{ row: string }>("SELECT data->>'receiver' || ' ' || coalesce(done, 'pending') AS row FROM alert_notifications")).rows.map((r) => r.row).sort();
  expect(await outbox()).toEqual(['gone pending', 'gone pending', 'ops delivered', 'ops delivered']);

  // The leader stops; the follower leads with its reloaded configuration: its new receiver gets the alerts
  // firing, once, ops (which had them) is not notified again, and what `gone` had pending is dropped.
  await leader.stop();
  await leading(c.db, follower);
  await waitFor('the new receiver notified', async () => (oncall.deliveries.length >= 2 ? true : undefined), 20_000);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  expect(firing(oncall)).toEqual(['firing persisted_output', 'firing persisted_too']);
  expect(firing(ops)).toEqual(['firing persisted_output', 'firing persisted_too']);
  expect(new Set(oncall.deliveries.map((d) => d.webhookId)).size).toBe(2);
  // Every notification delivered or dropped, and recorded so: nothing left for a later leader to send again.
  const settled = ['gone dropped', 'gone dropped', 'oncall delivered', 'oncall delivered', 'ops delivered', 'ops delivered'];
  await waitFor('the outbox settled', async () => (JSON.stringify(await outbox()) === JSON.stringify(settled) ? true : undefined), 10_000);
  expect(logEntries(follower.lines, 'receiver no longer configured; its undelivered notifications are dropped')).toEqual([expect.objectContaining({ level: 'warn', receiver: 'gone' })]);
  expect(follower.lines.join('\n')).not.toContain(gone.url);
}, 180_000);

it('a replica started with a receiver the leader\'s file lacks notifies it of the alerts firing once it leads; an unchanged file notifies nobody', async () => {
  const ops = await fx.webhook();
  const oncall = await fx.webhook();
  const before = join(fx.dir(), 'rolling-before.yaml');
  const after = join(fx.dir(), 'rolling-after.yaml');
  writeFileSync(before, alertingYaml(['persisted_output'], [{ name: 'ops', url: ops.url }]));
  writeFileSync(after, alertingYaml(['persisted_output'], [{ name: 'ops', url: ops.url }, { name: 'oncall', url: oncall.url }]));
  const url = await fx.server().createDatabase();
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  fx.defer(() => db.end());
  const replica = (file: string): Promise<Replica> => fx.replica(url, { HOOKWATCH_CONFIG: file, HOOKWATCH_POSTGRES_LEASE_TTL: '2s' });
  const leads = (r: Replica): Promise<true> => leading(db, r);

  const old = await replica(before);
  await leads(old);
  await fx.post(old, persistedOutputBody(Date.now(), 'rolling-a'));
  await waitFor('ops notified', async () => (ops.deliveries.length >= 1 ? true : undefined), 20_000);

  // The new pod, on the changed file, follows; it leads once the old one stops: oncall gets the alert, once.
  const rolled = await replica(after);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  expect(oncall.deliveries).toEqual([]);
  await old.stop();
  await leads(rolled);
  await waitFor('oncall notified', async () => (oncall.deliveries.length >= 1 ? true : undefined), 20_000);

  // Another pod on the same file takes over: nobody is notified again.
  const next = await replica(after);
  await rolled.stop();
  await leads(next);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect(firing(oncall)).toEqual(['firing persisted_output']);
  expect(firing(ops)).toEqual(['firing persisted_output']);
  expect(oncall.deliveries[0]?.webhookId).not.toBe(ops.deliveries[0]?.webhookId);
}, 180_000);
