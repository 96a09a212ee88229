/**
 * Fault test on real replicas and a real PostgreSQL: the leader's listening connection is dropped by the network
 * without a word (a NAT, a firewall or a load balancer forgetting an idle flow; a partition): no FIN, no reset,
 * its bytes go nowhere. Nothing arrives on it any more, so nothing tells the leader it is gone but asking. The
 * leader must find out within seconds, say so on /metrics, listen again on a new connection and evaluate, so a
 * follower's alert is still notified without waiting for the evaluation timer (set to 10 minutes here).
 */
import { expect, it } from 'vitest';
import pg from 'pg';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { startFlowProxy } from '../../../test/support/postgres/flow-proxy.ts';
import { leading, logEntries, persistedOutputBody, waitFor, writeAlertingConfig, type Replica } from '../../../test/support/postgres/replicas.ts';

const fx = useReplicaFixture();

async function signalsListening(r: Replica): Promise<string | undefined> {
  const text = await (await fetch(`${r.httpUrl}/metrics`)).text();
  return /^hookwatch_cluster_signals_listening (\d)$/m.exec(text)?.[1];
}

it('a listening connection the network dropped silently is found out within seconds, and a follower\'s alert still notifies', async () => {
  const hook = await fx.webhook();
  const url = await fx.server().createDatabase();
  const proxy = await startFlowProxy(fx.server());
  fx.defer(() => proxy.close());
  const env = { HOOKWATCH_CONFIG: writeAlertingConfig(fx.dir(), hook.url), HOOKWATCH_POSTGRES_LEASE_TTL: '60s', HOOKWATCH_ALERT_EVALUATION_INTERVAL: '10m' };
  // The leader reaches the database through the proxy, the follower directly.
  const leader = await fx.replica(proxy.via(url), env);
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  fx.defer(() => db.end());
  await leading(db, leader);
  const follower = await fx.replica(url, env);
  expect(await signalsListening(leader)).toBe('1');

  expect(proxy.drop('hookwatch-listen')).toBe(1);
  const dropped = Date.now();
  await fx.post(follower, persistedOutputBody(Date.now(), 'dropped-flow', 'PostToolUse:DroppedFlow'));
  const d = await waitFor('the webhook for the follower\'s batch', async () => hook.deliveries.find((x) => x.labels['hook_name'] === 'PostToolUse:DroppedFlow'), 10_000, 20);
  const lost = logEntries(leader.lines, 'replica signal connection lost; reconnecting');
  // eslint-disable-next-line no-console
  console.log(`listening flow dropped: notified ${d.at - dropped} ms later; ${JSON.stringify(lost)}`);
  expect(d.at - dropped).toBeLessThan(4000);
  expect(lost).toHaveLength(1);
  // Found out by a check left unanswered, and said so.
  expect(lost[0]?.['err']).toBe('a check was not answered within 2000 ms');
  expect(logEntries(leader.lines, 'replica signal connection restored')).toHaveLength(1);
  expect(await signalsListening(leader)).toBe('1');
  // Still the leader: notified by it after it listened again, not by a takeover.
  expect(d.externalUrl.replace(/\/+$/, '')).toBe(leader.httpUrl.replace(/\/+$/, ''));
}, 120_000);
