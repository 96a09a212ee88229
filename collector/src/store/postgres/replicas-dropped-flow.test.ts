/**
 * Fault test on real replicas and a real PostgreSQL: the leader's listening connection is dropped by the network
 * without a word (a NAT, a firewall or a load balancer forgetting an idle flow; a partition): no FIN, no reset,
 * its bytes go nowhere. Nothing arrives on it any more, so nothing tells the leader it is gone but asking. The
 * leader must find out within seconds, say so on /metrics, listen again on a new connection and evaluate, so a
 * follower's alert is still notified without waiting for the evaluation timer (set to 10 minutes here). The same
 * once a network cut heals: a reconnect attempt made during the cut is never answered, and must not keep the
 * leader from listening again for longer than its bound.
 */
import { expect, it } from 'vitest';
import pg from 'pg';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { startFlowProxy, type FlowProxy } from '../../../test/support/postgres/flow-proxy.ts';
import { leading, persistedOutputBody, writeAlertingConfig, type WebhookReceiver } from '../../../test/support/postgres/replicas.ts';
import { logEntries, waitFor, type Replica } from '../../../test/support/serve-process.ts';

const fx = useReplicaFixture();
const LOST = 'replica signal connection lost; reconnecting';
const RESTORED = 'replica signal connection restored';

async function signalsListening(r: Replica): Promise<string | undefined> {
  const text = await (await fetch(`${r.httpUrl}/metrics`)).text();
  return /^hookwatch_cluster_signals_listening (\d)$/m.exec(text)?.[1];
}

/** A leader reaching the database through a flow proxy, a follower directly, both listening; no evaluation timer within a test. */
async function cluster(): Promise<{ leader: Replica; follower: Replica; proxy: FlowProxy; hook: WebhookReceiver }> {
  const hook = await fx.webhook();
  const url = await fx.server().createDatabase();
  const proxy = await startFlowProxy(fx.server());
  fx.defer(() => proxy.close());
  const env = { HOOKWATCH_CONFIG: writeAlertingConfig(fx.dir(), hook.url), HOOKWATCH_POSTGRES_LEASE_TTL: '60s', HOOKWATCH_ALERT_EVALUATION_INTERVAL: '10m' };
  const leader = await fx.replica(proxy.via(url), env);
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  fx.defer(() => db.end());
  await leading(db, leader);
  const follower = await fx.replica(url, env);
  expect(await signalsListening(leader)).toBe('1');
  return { leader, follower, proxy, hook };
}

it('a listening connection the network dropped silently is found out within seconds, and a follower\'s alert still notifies', async () => {
  const { leader, follower, proxy, hook } = await cluster();

  // Forgotten down to TCP: not even the proxy's operating system acknowledges what the leader sends on it.
  expect(await proxy.forget('hookwatch-listen')).toBe(1);
  const dropped = Date.now();
  await fx.post(follower, persistedOutputBody(Date.now(), 'dropped-flow', 'PostToolUse:DroppedFlow'));
  const d = await waitFor('the webhook for the follower\'s batch', async () => hook.deliveries.find((x) => x.labels['hook_name'] === 'PostToolUse:DroppedFlow'), 10_000, 20);
  const lost = logEntries(leader.lines, LOST);
  // eslint-disable-next-line no-console
  console.log(`listening flow dropped: notified ${d.at - dropped} ms later; ${JSON.stringify(lost)}`);
  expect(d.at - dropped).toBeLessThan(4000);
  expect(lost).toHaveLength(1);
  // Found out by a check left unanswered, and said so.
  expect(lost[0]?.['err']).toBe('a check was not answered within 2000 ms');
  expect(logEntries(leader.lines, RESTORED)).toHaveLength(1);
  expect(await signalsListening(leader)).toBe('1');
  // Still the leader: notified by it after it listened again, not by a takeover.
  expect(d.externalUrl.replace(/\/+$/, '')).toBe(leader.httpUrl.replace(/\/+$/, ''));
}, 120_000);

it('listens again within seconds after a network cut heals, though a reconnect attempt was under way during the cut', async () => {
  const { leader, follower, proxy, hook } = await cluster();
  expect(proxy.cutOff()).toBeGreaterThan(0);
  await waitFor('the listening connection to be found lost', async () => logEntries(leader.lines, LOST)[0], 10_000, 50);
  // Its next attempt goes out while the network is still cut: it is never answered.
  await waitFor('a reconnect attempt during the cut', async () => (proxy.unanswered('hookwatch-listen') > 0 ? true : undefined), 10_000, 20);
  proxy.heal();
  const healed = Date.now();
  // Told by the log, not by a scrape: the store may still hold connections the cut left dead.
  await waitFor('the listening connection restored', async () => logEntries(leader.lines, RESTORED)[0], 30_000, 50);
  const restoredMs = Date.now() - healed;
  // eslint-disable-next-line no-console
  console.log(`network cut healed: listening again ${restoredMs} ms later; ${JSON.stringify(logEntries(leader.lines, LOST))}`);
  expect(restoredMs, 'ms to listen again after the heal').toBeLessThan(5000);
  // The attempt made during the cut gave up, and the next one listened.
  expect(logEntries(leader.lines, LOST).map((e) => e['err'])).toContain('not connected within 2000 ms');
  expect(await signalsListening(leader)).toBe('1');

  // A follower's batch reaches the leader by its signal: the evaluation timer is 10 minutes away.
  const posted = Date.now();
  await fx.post(follower, persistedOutputBody(Date.now(), 'after-cut', 'PostToolUse:AfterCut'));
  const d = await waitFor('the webhook for the follower\'s batch', async () => hook.deliveries.find((x) => x.labels['hook_name'] === 'PostToolUse:AfterCut'), 10_000, 20);
  expect(d.at - posted).toBeLessThan(4000);
  expect(d.externalUrl.replace(/\/+$/, '')).toBe(leader.httpUrl.replace(/\/+$/, ''));
}, 120_000);
