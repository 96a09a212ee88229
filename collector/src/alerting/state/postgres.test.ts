/** Alert state on PostgreSQL: fencing by the leader lease (the contract shared with SQLite is in store.test.ts). */
import { describe, expect, it } from 'vitest';
import type { Notification } from '../../notify/model.ts';
import { PostgresStore } from '../../store/postgres/index.ts';
import { PostgresLease } from '../../store/postgres/lease.ts';
import type { AlertRecord } from '../model.ts';
import { NotLeaderError } from '../../store/store.ts';
import { PostgresAlertStateStore } from './postgres.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';

const pg = useTestServer();

function alert(id: string, state: AlertRecord['state']): AlertRecord {
  return {
    id, fingerprint: 'fp-' + id, rule: 'persisted', state, labels: { alertname: 'persisted' }, annotations: {}, hookId: null,
    activeAtMs: 1000, startsAtMs: state === 'pending' ? null : 2000, endsAtMs: null, lastActiveMs: 2000, lastNotifiedMs: null, notifiedFiring: false, notifySeq: 0,
  };
}

function notification(a: AlertRecord, webhookId: string): Notification {
  return { webhookId, receiver: 'r', status: 'firing', alert: a as unknown as Notification['alert'], createdAtMs: 3000 };
}

async function setup(): Promise<{ store: PostgresStore; url: string }> {
  const url = await pg.server().createDatabase();
  const store = await PostgresStore.open({ url, poolSize: 2 });
  pg.defer(() => store.close());
  return { store, url };
}

describe('PostgresAlertStateStore', () => {
  it('refuses writes from a replica that does not hold the lease, and from one whose lease moved on', async () => {
    const { store, url } = await setup();
    const a = new PostgresLease({ url, holder: 'a', ttlMs: 60_000 });
    const b = new PostgresLease({ url, holder: 'b', ttlMs: 60_000 });
    pg.defer(() => a.stop(), () => b.stop());
    expect(await a.tick()).toBe(true);
    expect(await b.tick()).toBe(false);
    const asA = new PostgresAlertStateStore({ pool: store.connectionPool, fence: a });
    const asB = new PostgresAlertStateStore({ pool: store.connectionPool, fence: b });
    const change = { upsert: [alert('x', 'firing')], remove: [], notifications: [notification(alert('x', 'firing'), 'msg_x')] };
    await expect(asB.save(change)).rejects.toBeInstanceOf(NotLeaderError);
    await asA.save(change);
    // The lease moves behind a's back (it expired while a was paused, and b took it): a's local view says leader,
    // the database says otherwise, and the write is refused.
    await store.connectionPool.query("UPDATE leader_lease SET holder = 'b', epoch = epoch + 1");
    expect(a.isLeader()).toBe(true);
    await expect(asA.save({ upsert: [alert('y', 'firing')], remove: [], notifications: [] })).rejects.toBeInstanceOf(NotLeaderError);
    expect((await asA.load()).alerts.map((x) => x.id)).toEqual(['x']);
  });

  it('hands undelivered notifications to the leader only, once per leadership', async () => {
    const { store, url } = await setup();
    const a = new PostgresLease({ url, holder: 'a', ttlMs: 60_000 });
    const b = new PostgresLease({ url, holder: 'b', ttlMs: 60_000 });
    pg.defer(() => a.stop(), () => b.stop());
    expect(await a.tick()).toBe(true);
    const asA = new PostgresAlertStateStore({ pool: store.connectionPool, fence: a });
    const asB = new PostgresAlertStateStore({ pool: store.connectionPool, fence: b });
    await asA.save({ upsert: [alert('x', 'firing')], remove: [], notifications: [notification(alert('x', 'firing'), 'msg_x')] });
    // A follower sees the alerts but must not deliver the outbox (the leader does).
    const follower = await asB.load();
    expect(follower.alerts.map((x) => x.id)).toEqual(['x']);
    expect(follower.outbox).toEqual([]);
    expect((await asA.load()).outbox.map((n) => n.webhookId)).toEqual(['msg_x']);
    // A second load in the same leadership (start, then reload) does not resume it twice.
    expect((await asA.load()).outbox).toEqual([]);
    // Leadership moves to b: b resumes what a left undelivered.
    await a.stop();
    expect(await b.tick()).toBe(true);
    expect((await asB.load()).outbox.map((n) => n.webhookId)).toEqual(['msg_x']);
  });

  it('carries the fencing token: old-token writes and delivery attempts are refused, delivered is always recorded', async () => {
    const { store, url } = await setup();
    const a = new PostgresLease({ url, holder: 'a', ttlMs: 60_000 });
    pg.defer(() => a.stop());
    expect(await a.tick()).toBe(true);
    const epoch = a.epoch()!;
    const asA = new PostgresAlertStateStore({ pool: store.connectionPool, fence: a });
    await asA.save({ upsert: [alert('x', 'firing')], remove: [], notifications: [notification(alert('x', 'firing'), 'msg_x'), notification(alert('x', 'firing'), 'msg_y')] }, epoch);
    expect(await asA.confirmDelivery(epoch, 'msg_x')).toBe(true);
    const attempt = { alertId: 'x', receiver: 'r', webhookId: 'msg_x', attempt: 1, atMs: 3001, status: 'firing' as const, outcome: 'retrying' as const, httpStatus: 503, error: 'HTTP 503', durationMs: 5 };
    await asA.addAttempt(attempt, epoch);
    // The lease moved on (b held it for a while, then a took it back at a later epoch): work started under the
    // old token is refused even though a leads again.
    await store.connectionPool.query('UPDATE leader_lease SET epoch = epoch + 2');
    expect(await a.tick()).toBe(true);
    expect(a.epoch()).toBe(epoch + 2);
    expect(await asA.confirmDelivery(epoch, 'msg_x')).toBe(false);
    await expect(asA.addAttempt(attempt, epoch)).rejects.toBeInstanceOf(NotLeaderError);
    await expect(asA.save({ upsert: [alert('y', 'firing')], remove: [], notifications: [] }, epoch)).rejects.toBeInstanceOf(NotLeaderError);
    await expect(asA.finishNotification('msg_y', 'failed', epoch)).rejects.toBeInstanceOf(NotLeaderError);
    // A delivery that did happen is recorded whoever made it, so nobody sends it again.
    await asA.finishNotification('msg_x', 'delivered', epoch);
    const rows = await store.connectionPool.query<{ webhook_id: string; done: string | null }>('SELECT webhook_id, done FROM alert_notifications ORDER BY webhook_id');
    expect(rows.rows).toEqual([{ webhook_id: 'msg_x', done: 'delivered' }, { webhook_id: 'msg_y', done: null }]);
    expect((await asA.attempts('x')).length).toBe(1);
  });

  it('reads alerts and silences without the outbox, and hands the outbox out again after leadership lapsed', async () => {
    const { store, url } = await setup();
    const a = new PostgresLease({ url, holder: 'a', ttlMs: 60_000 });
    pg.defer(() => a.stop());
    expect(await a.tick()).toBe(true);
    const asA = new PostgresAlertStateStore({ pool: store.connectionPool, fence: a });
    await asA.save({ upsert: [alert('x', 'firing')], remove: [], notifications: [notification(alert('x', 'firing'), 'msg_x')] });
    await asA.putSilence({ id: 's1', matchers: [], startsAtMs: 0, endsAtMs: 10, createdBy: 'x', comment: '', createdAtMs: 0 });
    // An API read on the leader does not use up the outbox hand-out.
    const read = await asA.load({ outbox: false });
    expect(read.alerts.map((x) => x.id)).toEqual(['x']);
    expect(read.outbox).toEqual([]);
    expect((await asA.silences()).map((x) => x.id)).toEqual(['s1']);
    expect((await asA.load()).outbox.map((n) => n.webhookId)).toEqual(['msg_x']);
    expect((await asA.load()).outbox).toEqual([]);
    // The lease lapsed (its queue was dropped) and came back at the same epoch: the outbox is resumed again.
    asA.forgetOutbox();
    expect((await asA.load()).outbox.map((n) => n.webhookId)).toEqual(['msg_x']);
  });
});
