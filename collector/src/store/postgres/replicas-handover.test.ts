/**
 * Three real replicas sharing one real PostgreSQL, the leader stopped cleanly (SIGTERM) as a rolling update
 * does. The lease ttl is long (30 s, renewed every 10 s) and the leader is stopped right after every follower
 * tried the lease, so a follower waiting for its next renewal would take over 4 s or more later at best. Told
 * of the hand-back, one of them leads within 2 s, and an alert that comes due after that is notified by it.
 * The hand-back does not wait for the stopping leader's drain: while a slow upload keeps it draining for
 * seconds, a follower already leads and notifies, and the old leader notifies nothing. No evaluation timer runs
 * within a test (10 min): an alert notified was signalled to the new leader, whatever the signal took.
 */
import { expect, it } from 'vitest';
import { holdRequest } from '../../../test/support/held-request.ts';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { persistedOutputBody, renewalAgesMs, takenOver, writeAlertingConfig } from '../../../test/support/postgres/replicas.ts';
import { logEntries, waitFor } from '../../../test/support/serve-process.ts';

const TTL_MS = 30_000;
const RENEW_MS = TTL_MS / 3;
/** How long before its next renewal each follower is when the leader is stopped, at least. */
const TIMER_MARGIN_MS = 4000;
/** How long the stopping leader's slow upload keeps it draining. */
const DRAIN_MS = 4000;
const fx = useReplicaFixture();
/** An address without its trailing slash: a notification's externalURL names the HTTP address of its sender. */
const bare = (url: string): string => url.replace(/\/+$/, '');

it('a leader stopped cleanly: a follower leads within 2 s, not at its next renewal, and notifies the next alert', async () => {
  const hook = await fx.webhook();
  const { db, leader, followers } = await fx.cluster({ HOOKWATCH_POSTGRES_LEASE_TTL: `${TTL_MS}ms`, HOOKWATCH_CONFIG: writeAlertingConfig(fx.dir(), hook.url), HOOKWATCH_ALERT_EVALUATION_INTERVAL: '10m' });
  const epochBefore = Number((await db.query<{ epoch: string }>("SELECT epoch::text AS epoch FROM leader_lease WHERE name = 'hookwatch'")).rows[0]?.epoch);
  // Whatever the followers' phases, there is a moment when each renewed at most RENEW_MS - TIMER_MARGIN_MS ago.
  await waitFor('every follower just after a renewal', async () => {
    const ages = await renewalAgesMs(db);
    return followers.every((f) => (ages.get(f.pid) ?? Infinity) <= RENEW_MS - TIMER_MARGIN_MS) ? true : undefined;
  }, 2 * RENEW_MS, 100);
  const stoppedAt = Date.now();
  const stopped = leader.stop();
  const next = await takenOver(db, leader, TTL_MS, 20);
  const tookMs = Date.now() - stoppedAt;
  await stopped;
  const newLeader = followers.find((f) => f.pid === next);
  const other = followers.find((f) => f.pid !== next)!;
  expect(newLeader).toBeDefined();

  const postedAt = Date.now();
  await fx.post(other, persistedOutputBody(postedAt, 'handover-session'));
  const firing = await waitFor('the firing notification', async () => hook.deliveries.find((d) => d.status === 'firing'), 20_000, 20);
  // eslint-disable-next-line no-console
  console.log(`leader stopped cleanly: a follower led ${tookMs} ms later (renewal every ${RENEW_MS} ms); the next alert was notified ${firing.at - postedAt} ms after its export`);
  expect(tookMs).toBeLessThan(2000);
  // One takeover, by one follower: the other saw the hand-back too and lost the race.
  const epochAfter = Number((await db.query<{ epoch: string }>("SELECT epoch::text AS epoch FROM leader_lease WHERE name = 'hookwatch'")).rows[0]?.epoch);
  expect(epochAfter).toBe(epochBefore + 1);
  expect(logEntries(other.lines, 'leader lease acquired')).toEqual([]);
  expect(bare(firing.externalUrl)).toBe(bare(newLeader!.httpUrl));
  await new Promise((r) => setTimeout(r, 1000));
  expect(hook.deliveries.filter((d) => d.status === 'firing')).toHaveLength(1);
}, 120_000);

it('a leader stopped while a slow upload drains: a follower leads within 2 s and notifies meanwhile; the old leader never does', async () => {
  const hook = await fx.webhook();
  const { db, leader, followers } = await fx.cluster({
    HOOKWATCH_POSTGRES_LEASE_TTL: `${TTL_MS}ms`, HOOKWATCH_CONFIG: writeAlertingConfig(fx.dir(), hook.url), HOOKWATCH_ALERT_EVALUATION_INTERVAL: '10m',
    HOOKWATCH_OTLP_REQUEST_TIMEOUT: '60s', HOOKWATCH_SHUTDOWN_TIMEOUT: '60s',
  });
  // A slow client's upload to the leader: the second half of its body comes only when the test sends it.
  const held = await holdRequest(leader.otlpHttpUrl, persistedOutputBody(Date.now(), 'drained-session', 'Stop'));
  const stoppedAt = Date.now();
  leader.child.kill('SIGTERM');
  // Within DRAIN_MS: while the leader still drains.
  const next = await takenOver(db, leader, DRAIN_MS, 20);
  const tookMs = Date.now() - stoppedAt;
  expect(tookMs).toBeLessThan(2000);
  expect(leader.child.exitCode).toBeNull(); // still draining
  // Still running, it is still listed among the replicas: its heartbeat goes only when it stops.
  expect((await renewalAgesMs(db)).has(leader.pid)).toBe(true);
  const newLeader = followers.find((f) => f.pid === next)!;
  const other = followers.find((f) => f.pid !== next)!;
  const leaderUrl = bare(newLeader.httpUrl);

  // Raised on the other follower while the old leader drains: the new leader notifies it.
  const postedAt = Date.now();
  await fx.post(other, persistedOutputBody(postedAt, 'handover-session'));
  const firing = await waitFor('the notification of the alert raised during the drain', async () => hook.deliveries.find((d) => d.labels['hook_name'] === 'PostToolUse:Bash'), 20_000, 20);
  expect(bare(firing.externalUrl)).toBe(leaderUrl);

  // The upload completes seconds after the SIGTERM: the old leader stores it, and the new leader notifies its alert.
  await new Promise((r) => setTimeout(r, Math.max(0, stoppedAt + DRAIN_MS - Date.now())));
  expect(leader.child.exitCode).toBeNull();
  expect(await held.finish()).toBe(200);
  const drained = await waitFor('the notification of the drained upload', async () => hook.deliveries.find((d) => d.labels['hook_name'] === 'Stop'), 20_000, 20);
  expect(bare(drained.externalUrl)).toBe(leaderUrl);
  await leader.exited;
  // eslint-disable-next-line no-console
  console.log(`leader stopped while draining for ${DRAIN_MS} ms: a follower led ${tookMs} ms after the SIGTERM; the old leader exited ${Date.now() - stoppedAt} ms after it`);
  expect(leader.child.exitCode, leader.lines.join('\n')).toBe(0);
  expect((await renewalAgesMs(db)).has(leader.pid)).toBe(false);
  await new Promise((r) => setTimeout(r, 1000));
  // Every notification came from the new leader, once per alert: none from the old leader while it drained.
  expect(hook.deliveries.filter((d) => bare(d.externalUrl) !== leaderUrl)).toEqual([]);
  expect(hook.deliveries).toHaveLength(2);
}, 120_000);
