/**
 * Three real replicas sharing one real PostgreSQL, the leader stopped cleanly (SIGTERM) as a rolling update
 * does. The lease ttl is long (30 s, renewed every 10 s) and the leader is stopped right after every follower
 * tried the lease, so a follower waiting for its next renewal would take over 4 s or more later at best. Told
 * of the hand-back, one of them leads within 2 s, and an alert that comes due after that is notified by it.
 */
import { expect, it } from 'vitest';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { leaseHolderPid, logEntries, persistedOutputBody, renewalAgesMs, waitFor, writeAlertingConfig } from '../../../test/support/postgres/replicas.ts';

const TTL_MS = 30_000;
const RENEW_MS = TTL_MS / 3;
/** How long before its next renewal each follower is when the leader is stopped, at least. */
const TIMER_MARGIN_MS = 4000;
const fx = useReplicaFixture();

it('a leader stopped cleanly: a follower leads within 2 s, not at its next renewal, and notifies the next alert', async () => {
  const hook = await fx.webhook();
  const { db, leader, followers } = await fx.cluster({ HOOKWATCH_POSTGRES_LEASE_TTL: `${TTL_MS}ms`, HOOKWATCH_CONFIG: writeAlertingConfig(fx.dir(), hook.url) });
  const epochBefore = Number((await db.query<{ epoch: string }>("SELECT epoch::text AS epoch FROM leader_lease WHERE name = 'hookwatch'")).rows[0]?.epoch);
  // Whatever the followers' phases, there is a moment when each renewed at most RENEW_MS - TIMER_MARGIN_MS ago.
  await waitFor('every follower just after a renewal', async () => {
    const ages = await renewalAgesMs(db);
    return followers.every((f) => (ages.get(f.pid) ?? Infinity) <= RENEW_MS - TIMER_MARGIN_MS) ? true : undefined;
  }, 2 * RENEW_MS, 100);
  const stoppedAt = Date.now();
  const stopped = leader.stop();
  const next = await waitFor('a follower to take the lease', async () => {
    const pid = await leaseHolderPid(db);
    return pid !== undefined && pid !== leader.pid ? pid : undefined;
  }, TTL_MS, 20);
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
  expect(firing.externalUrl.replace(/\/+$/, '')).toBe(newLeader!.httpUrl.replace(/\/+$/, ''));
  expect(firing.at - postedAt).toBeLessThan(2000);
  await new Promise((r) => setTimeout(r, 1000));
  expect(hook.deliveries.filter((d) => d.status === 'firing')).toHaveLength(1);
}, 120_000);
