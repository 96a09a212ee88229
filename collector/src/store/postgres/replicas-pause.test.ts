/**
 * Fault test on three real replicas sharing one real PostgreSQL (short lease ttl): the leader is retrying a
 * notification (the receiver answers 503) when it is paused (SIGSTOP) past its lease; another replica takes over
 * and delivers it with the same webhook-id. Resumed (SIGCONT), the old leader must not send it again.
 */
import { expect, it } from 'vitest';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { leaseHolderPid, persistedOutputBody, waitFor, writeAlertingConfig } from '../../../test/support/postgres/replicas.ts';

const TTL_MS = 2000;
const fx = useReplicaFixture();

it('a leader paused past its lease while retrying never delivers again what its successor delivered', async () => {
  const hook = await fx.webhook();
  hook.answer(503);
  const { db, leader, followers } = await fx.cluster({ HOOKWATCH_POSTGRES_LEASE_TTL: `${TTL_MS}ms`,
    HOOKWATCH_CONFIG: writeAlertingConfig(fx.dir(), hook.url),
    HOOKWATCH_ALERT_DELIVERY_INITIAL_BACKOFF: '200ms',
    HOOKWATCH_ALERT_DELIVERY_MAX_BACKOFF: '400ms',
  });
  await fx.post(leader, persistedOutputBody(Date.now(), 'pause-session'));
  // The leader is retrying: several refused attempts of one webhook-id.
  await waitFor('the leader retrying', async () => (hook.deliveries.length >= 2 ? true : undefined), 15_000);
  const webhookId = hook.deliveries[0]!.webhookId;
  expect(new Set(hook.deliveries.map((d) => d.webhookId))).toEqual(new Set([webhookId]));

  leader.child.kill('SIGSTOP');
  const next = await waitFor('another replica to take the lease', async () => {
    const pid = await leaseHolderPid(db);
    return pid !== undefined && pid !== leader.pid ? pid : undefined;
  }, 20_000, 50);
  expect(followers.map((f) => f.pid)).toContain(next);
  hook.answer(200);
  const delivered = await waitFor('the new leader to deliver', async () => hook.deliveries.find((d) => d.answered === 200), 20_000);
  expect(delivered.webhookId).toBe(webhookId);

  leader.child.kill('SIGCONT');
  // Many of the old leader's backoff periods (at most 400 ms each) and a lease renewal or two.
  await new Promise((r) => setTimeout(r, 3000));
  const accepted = hook.deliveries.filter((d) => d.answered === 200);
  const after = hook.deliveries.filter((d) => d.at > delivered.at);
  // eslint-disable-next-line no-console
  console.log(`paused leader: ${accepted.length} accepted deliveries of ${webhookId}, ${after.length} requests after the successor's delivery`);
  expect(accepted).toHaveLength(1);
  expect(after).toEqual([]);
  expect(leader.child.exitCode).toBeNull();
  await waitFor('the old leader to log its loss', async () => (leader.lines.some((l) => l.includes('leader lease lost')) ? true : undefined), 5000);
  const outbox = await db.query<{ webhook_id: string; done: string | null }>('SELECT webhook_id, done FROM alert_notifications');
  expect(outbox.rows).toEqual([{ webhook_id: webhookId, done: 'delivered' }]);
}, 120_000);
