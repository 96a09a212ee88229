/** Which notifications an evaluation creates: repeats, silences, resolutions, and stable webhook-ids. */
import { describe, expect, it } from 'vitest';
import { alertRecord } from '../../test/support/alerting.ts';
import type { Transition } from './lifecycle.ts';
import type { AlertRecord } from './model.ts';
import { notification, planNotifications, type PlanOptions } from './notification-plan.ts';

const NOW = 10_000_000;
const HOUR = 3_600_000;
const receivers = [{ name: 'ops', sendResolved: true }, { name: 'chat', sendResolved: false }];
const opts = (over: Partial<PlanOptions> = {}): PlanOptions => ({ now: NOW, receivers, repeatIntervalMs: 4 * HOUR, muted: () => false, hadFiring: () => true, ...over });

describe('planNotifications', () => {
  it('notifies a new firing alert once per receiver, marks it notified and saves it with the outbox', () => {
    const a = alertRecord({ id: 'a' });
    const upsert: AlertRecord[] = [];
    const out = planNotifications([a], [], upsert, opts());
    expect(out.map((n) => [n.receiver, n.status, n.alert.id])).toEqual([['ops', 'firing', 'a'], ['chat', 'firing', 'a']]);
    expect(a).toMatchObject({ notifySeq: 1, lastNotifiedMs: NOW, notifiedFiring: true });
    expect(upsert).toEqual([a]);
    // Already in the changes: not added twice.
    expect(planNotifications([a], [], upsert, opts({ now: NOW + 5 * HOUR }))).toHaveLength(2);
    expect(upsert).toEqual([a]);
  });

  it('repeats a still-firing alert after repeat_interval, not before; never a pending one', () => {
    const a = alertRecord({ id: 'a', lastNotifiedMs: NOW - 4 * HOUR + 1, notifiedFiring: true, notifySeq: 1 });
    const p = alertRecord({ id: 'p', state: 'pending' });
    expect(planNotifications([a, p], [], [], opts())).toEqual([]);
    expect(planNotifications([a, p], [], [], opts({ now: NOW + 1 })).map((n) => n.alert.id)).toEqual(['a', 'a']);
  });

  it('creates nothing for a muted alert, nor for its resolution', () => {
    const a = alertRecord({ id: 'a' });
    const r = alertRecord({ id: 'r', state: 'resolved', notifiedFiring: true });
    const resolved: Transition[] = [{ alert: r, from: 'firing', to: 'resolved' }];
    const upsert: AlertRecord[] = [];
    expect(planNotifications([a], resolved, upsert, opts({ muted: () => true }))).toEqual([]);
    expect(upsert).toEqual([]);
    expect(a.notifySeq).toBe(0);
  });

  it('notifies a resolution to receivers with sendResolved, only when its firing was notified', () => {
    const notified = alertRecord({ id: 'n', state: 'resolved', notifiedFiring: true, notifySeq: 1 });
    const never = alertRecord({ id: 'q', state: 'resolved', notifiedFiring: false });
    const t = (alert: AlertRecord): Transition => ({ alert, from: 'firing', to: 'resolved' });
    const out = planNotifications([], [t(notified), t(never)], [], opts());
    expect(out.map((n) => [n.receiver, n.status, n.alert.id])).toEqual([['ops', 'resolved', 'n']]);
    expect(notified.notifySeq).toBe(2);
  });

  it('notifies a resolution only to the receivers that had its firing, and nothing when none had it', () => {
    const both = [{ name: 'ops', sendResolved: true }, { name: 'chat', sendResolved: true }];
    const had = alertRecord({ id: 'h', state: 'resolved', notifiedFiring: true, notifySeq: 1 });
    const refused = alertRecord({ id: 'x', state: 'resolved', notifiedFiring: true, notifySeq: 1 });
    const t = (alert: AlertRecord): Transition => ({ alert, from: 'firing', to: 'resolved' });
    const upsert: AlertRecord[] = [];
    const out = planNotifications([], [t(had), t(refused)], upsert, opts({ receivers: both, hadFiring: (a, receiver) => a.id === 'h' && receiver === 'chat' }));
    expect(out.map((n) => [n.receiver, n.status, n.alert.id])).toEqual([['chat', 'resolved', 'h']]);
    expect([had.notifySeq, refused.notifySeq]).toEqual([2, 1]);
    expect(upsert).toEqual([had]);
  });

  it('creates nothing without receivers (alerts still show in the API)', () => {
    const a = alertRecord({ id: 'a' });
    expect(planNotifications([a], [], [], opts({ receivers: [] }))).toEqual([]);
    expect(a.lastNotifiedMs).toBeNull();
  });
});

describe('notification', () => {
  it('has a webhook-id stable for the same episode, transition and receiver, and different otherwise', () => {
    const a = alertRecord({ id: 'a', notifySeq: 1 });
    const id = notification(a, 'ops', 'firing', NOW).webhookId;
    expect(id).toMatch(/^msg_[A-Za-z0-9_-]{27}$/);
    expect(notification({ ...a }, 'ops', 'firing', NOW + 999).webhookId).toBe(id);
    expect(new Set([
      id,
      notification(a, 'chat', 'firing', NOW).webhookId,
      notification(a, 'ops', 'resolved', NOW).webhookId,
      notification({ ...a, notifySeq: 2 }, 'ops', 'firing', NOW).webhookId,
    ]).size).toBe(4);
  });

  it('carries the alert in the webhook shape: startsAt from firing (or pending) time, endsAt when resolved', () => {
    const n = notification(alertRecord({ id: 'a', state: 'resolved', startsAtMs: Date.UTC(2026, 0, 1), endsAtMs: Date.UTC(2026, 0, 2) }), 'ops', 'resolved', NOW);
    expect(n.alert).toMatchObject({ id: 'a', startsAt: '2026-01-01T00:00:00.000Z', endsAt: '2026-01-02T00:00:00.000Z' });
    expect(notification(alertRecord({ id: 'p', state: 'pending', activeAtMs: Date.UTC(2026, 0, 3) }), 'ops', 'firing', NOW).alert.startsAt).toBe('2026-01-03T00:00:00.000Z');
  });
});
