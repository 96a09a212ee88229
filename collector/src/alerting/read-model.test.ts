/** The read model alone: what the API lists for a given alert set, silences and delivery attempts. */
import { describe, expect, it } from 'vitest';
import { alertRecord } from '../../test/support/alerting.ts';
import { AlertSet } from './alert-set.ts';
import type { StoredAttempt } from './model.ts';
import { AlertReadModel, MAX_RESOLVED_LISTED, type ReadModelOptions } from './read-model.ts';

const NOW = Date.UTC(2026, 10, 30, 10);

function model(set: AlertSet, over: Partial<ReadModelOptions> = {}): AlertReadModel {
  return new AlertReadModel({
    alerts: set,
    silences: { mutedBy: (labels) => (labels['hook_name'] === 'muted' ? ['s1'] : []) },
    stateStore: { attempts: async () => [], lastAttempts: async () => [] },
    receivers: [{ name: 'ops' }, { name: 'chat' }],
    now: () => NOW,
    ...over,
  });
}

describe('AlertReadModel', () => {
  it('lists firing, then pending, then resolved alerts, newest first within each', () => {
    const set = new AlertSet();
    set.replace([
      alertRecord({ id: 'r-old', state: 'resolved', endsAtMs: NOW - 5000 }),
      alertRecord({ id: 'p', state: 'pending', activeAtMs: NOW - 100 }),
      alertRecord({ id: 'f-old', state: 'firing', startsAtMs: NOW - 9000, fingerprint: 'f1' }),
      alertRecord({ id: 'r-new', state: 'resolved', endsAtMs: NOW - 10 }),
      alertRecord({ id: 'f-new', state: 'firing', startsAtMs: NOW - 1000, fingerprint: 'f2' }),
    ]);
    expect(model(set).alerts().map((a) => a.id)).toEqual(['f-new', 'f-old', 'p', 'r-new', 'r-old']);
  });

  it(`lists only the newest ${MAX_RESOLVED_LISTED} resolved alerts`, () => {
    const set = new AlertSet();
    set.replace(Array.from({ length: MAX_RESOLVED_LISTED + 3 }, (_, i) => alertRecord({ id: `r${i}`, state: 'resolved', fingerprint: `fp${i}`, endsAtMs: NOW - i })));
    const listed = model(set).alerts();
    expect(listed).toHaveLength(MAX_RESOLVED_LISTED);
    expect(listed.at(-1)?.id).toBe(`r${MAX_RESOLVED_LISTED - 1}`);
  });

  it('shows which silences mute an active alert, none for a resolved one, and times as RFC 3339', () => {
    const set = new AlertSet();
    set.replace([
      alertRecord({ id: 'm', labels: { alertname: 'persisted', hook_name: 'muted' }, fingerprint: 'a', lastNotifiedMs: NOW - 60_000 }),
      alertRecord({ id: 'o', labels: { alertname: 'persisted', hook_name: 'other' }, fingerprint: 'b' }),
      alertRecord({ id: 'r', labels: { alertname: 'persisted', hook_name: 'muted' }, state: 'resolved', fingerprint: 'c' }),
    ]);
    const view = model(set);
    expect(view.alert('m')).toMatchObject({ state: 'firing', silencedBy: ['s1'], lastNotifiedAt: new Date(NOW - 60_000).toISOString(), activeAt: new Date(1000).toISOString(), endsAt: null });
    expect(view.alert('o')).toMatchObject({ silencedBy: [], lastNotifiedAt: null });
    expect(view.alert('r')).toMatchObject({ state: 'resolved', silencedBy: [], endsAt: new Date(3000).toISOString() });
    expect(view.alert('nope')).toBeUndefined();
  });

  it('lists labels and annotations by name, whatever order they were stored in', () => {
    const set = new AlertSet();
    set.replace([alertRecord({ id: 'a', labels: { severity: 'warning', alertname: 'persisted', hook_name: 'h' }, annotations: { summary: 's', description: 'd' } })]);
    const a = model(set).alert('a');
    expect(Object.keys(a?.labels ?? {})).toEqual(['alertname', 'hook_name', 'severity']);
    expect(Object.keys(a?.annotations ?? {})).toEqual(['description', 'summary']);
  });

  it("serves an alert's delivery attempts in the API shape, and receiver names only", async () => {
    const stored: StoredAttempt = { alertId: 'a', receiver: 'ops', webhookId: 'msg_1', attempt: 2, atMs: NOW, status: 'firing', outcome: 'retrying', httpStatus: 503, error: 'HTTP 503', durationMs: 12 };
    const asked: string[] = [];
    const view = model(new AlertSet(), { stateStore: { attempts: async (id) => (asked.push(id), [stored]), lastAttempts: async (ids) => (ids.includes(stored.alertId) ? [stored] : []) } });
    expect(await view.attempts('a')).toEqual([{ receiver: 'ops', webhookId: 'msg_1', attempt: 2, at: new Date(NOW).toISOString(), status: 'firing', outcome: 'retrying', httpStatus: 503, error: 'HTTP 503', durationMs: 12 }]);
    expect(asked).toEqual(['a']);
    expect(view.receiverNames()).toEqual(['ops', 'chat']);
  });

  it('refreshes from shared state when told how, and is a no-op otherwise', async () => {
    let refreshed = 0;
    await model(new AlertSet(), { refresh: async () => void refreshed++ }).refresh();
    await model(new AlertSet()).refresh();
    expect(refreshed).toBe(1);
  });
});
