/**
 * Fault test on three real replicas sharing one real PostgreSQL (short lease ttl): the leader is killed, and a
 * persisted output sent right then to a follower is notified within ttl + ttl/3 (the takeover) + 1 s, because
 * the new leader evaluates as soon as it holds the lease instead of at its next timer tick.
 */
import { expect, it } from 'vitest';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { persistedOutputBody, writeAlertingConfig } from '../../../test/support/postgres/replicas.ts';
import { waitFor } from '../../../test/support/serve-process.ts';

const TTL_MS = 2000;
const fx = useReplicaFixture();

it('a leader killed: the next alert, sent to a follower right then, is notified within ttl + ttl/3 + 1 s', async () => {
  const hook = await fx.webhook();
  // The evaluation timer is the default (10 s): only evaluation on takeover meets the bound.
  const { leader, followers } = await fx.cluster({ HOOKWATCH_POSTGRES_LEASE_TTL: `${TTL_MS}ms`, HOOKWATCH_CONFIG: writeAlertingConfig(fx.dir(), hook.url) });
  leader.child.kill('SIGKILL');
  const killedAt = Date.now();
  await fx.post(followers[0]!, persistedOutputBody(Date.now(), 'failover-session'));
  const firing = await waitFor('the firing notification', async () => hook.deliveries.find((d) => d.status === 'firing'), 20_000, 20);
  const latencyMs = firing.at - killedAt;
  // eslint-disable-next-line no-console
  console.log(`leader killed: alert notified ${latencyMs} ms later (ttl ${TTL_MS} ms, bound ${TTL_MS + TTL_MS / 3 + 1000} ms)`);
  expect(latencyMs).toBeLessThan(TTL_MS + TTL_MS / 3 + 1000);
  await new Promise((r) => setTimeout(r, 1000));
  expect(hook.deliveries.filter((d) => d.status === 'firing')).toHaveLength(1);
}, 120_000);
