/**
 * Fault test on three real replicas sharing one real PostgreSQL (short lease ttl): the leader is retrying a
 * notification (the receiver answers 503) when it is paused (SIGSTOP) past its lease; another replica takes over
 * and delivers it with the same webhook-id. Resumed (SIGCONT), the old leader must not send it again.
 */
import { expect, it } from 'vitest';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { persistedOutputBody, takenOver, writeAlertingConfig, type WebhookDelivery } from '../../../test/support/postgres/replicas.ts';
import { waitFor } from '../../../test/support/serve-process.ts';

const TTL_MS = 2000;
/** This test's hook: its alert's notifications are told apart from any other on the machine's loopback. */
const HOOK_NAME = 'PostToolUse:PauseFence';
const fx = useReplicaFixture();

it('a leader paused past its lease while retrying never delivers again what its successor delivered', async () => {
  const hook = await fx.webhook();
  hook.answer(503);
  const { db, leader, followers } = await fx.cluster({ HOOKWATCH_POSTGRES_LEASE_TTL: `${TTL_MS}ms`,
    HOOKWATCH_CONFIG: writeAlertingConfig(fx.dir(), hook.url),
    HOOKWATCH_ALERT_DELIVERY_INITIAL_BACKOFF: '200ms',
    HOOKWATCH_ALERT_DELIVERY_MAX_BACKOFF: '400ms',
  });
  const ours = (): WebhookDelivery[] => hook.deliveries.filter((d) => d.labels['hook_name'] === HOOK_NAME);
  await fx.post(leader, persistedOutputBody(Date.now(), 'pause-session', HOOK_NAME));
  // The leader is retrying: several refused attempts of one webhook-id.
  await waitFor('the leader retrying', async () => (ours().length >= 2 ? true : undefined), 15_000);
  const webhookId = ours()[0]!.webhookId;
  expect(new Set(ours().map((d) => d.webhookId))).toEqual(new Set([webhookId]));

  leader.child.kill('SIGSTOP');
  const next = await takenOver(db, leader, 20_000, 50);
  expect(followers.map((f) => f.pid)).toContain(next);
  hook.answer(200);
  const delivered = await waitFor('the new leader to deliver', async () => ours().find((d) => d.answered === 200), 20_000);
  expect(delivered.webhookId).toBe(webhookId);

  leader.child.kill('SIGCONT');
  const resumedAt = Date.now();
  // Many of the old leader's backoff periods (at most 400 ms each) and a lease renewal or two.
  await new Promise((r) => setTimeout(r, 3000));
  // Each replica names itself in the body (externalURL, its own HTTP address): the old leader's requests apart.
  const fromOld = (d: WebhookDelivery): boolean => d.externalUrl.replace(/\/+$/, '') === leader.httpUrl.replace(/\/+$/, '');
  const oldAfterResume = ours().filter((d) => fromOld(d) && d.at >= resumedAt);
  // eslint-disable-next-line no-console
  console.log(`paused leader: ${ours().filter((d) => d.answered === 200).length} accepted deliveries of ${webhookId}; every request received: ${JSON.stringify(hook.deliveries.map((d) => ({ id: d.webhookId, hook: d.labels['hook_name'], from: d.externalUrl, answered: d.answered, at: d.at - delivered.at })))}`);
  expect(ours().some(fromOld)).toBe(true);
  expect(fromOld(delivered)).toBe(false);
  // Woken, the old leader sends nothing more: its successor owns the notification.
  expect(oldAfterResume).toEqual([]);
  expect(ours().filter((d) => fromOld(d) && d.answered === 200)).toEqual([]);
  expect(leader.child.exitCode).toBeNull();
  await waitFor('the old leader to log its loss', async () => (leader.lines.some((l) => l.includes('leader lease lost')) ? true : undefined), 5000);
  const outbox = await db.query<{ webhook_id: string; done: string | null }>('SELECT webhook_id, done FROM alert_notifications');
  expect(outbox.rows).toEqual([{ webhook_id: webhookId, done: 'delivered' }]);
}, 120_000);
