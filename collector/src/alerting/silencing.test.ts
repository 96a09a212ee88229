/** Silences CRUD on a real SQLite state store: saved before they count, expired early on request, muting what they match. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SilenceRecord } from './model.ts';
import { parseSilence, SilenceError, silenceMatches, silenceWarnings } from './silences.ts';
import { MAX_SILENCES, SilenceLimitError, Silences } from './silencing.ts';
import { SqliteAlertStateStore } from './state/sqlite.ts';

const T0 = Date.parse('2026-11-30T10:00:00Z');
const MIN = 60_000;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function setup(): { silences: Silences; store: SqliteAlertStateStore; clock: { t: number }; expired: () => number; db: string } {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-silences-'));
  const db = join(dir, 'h.db');
  const store = new SqliteAlertStateStore(db);
  const clock = { t: T0 };
  let expired = 0;
  const silences = new Silences({ store, now: () => clock.t, onExpired: () => void expired++ });
  cleanups.push(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { silences, store, clock, expired: () => expired, db };
}

const silence = (over: Partial<Parameters<typeof parseSilence>[0] & object> = {}): SilenceRecord =>
  parseSilence({ matchers: [{ name: 'hook_name', value: 'Session.*', isRegex: true }], endsAt: new Date(T0 + 10 * MIN).toISOString(), createdBy: 'ops', comment: 'deploy', ...over }, T0);

describe('Silences', () => {
  it(`holds at most ${MAX_SILENCES} silences not yet expired, and takes new ones again once some expire`, async () => {
    let t = T0;
    const silences = new Silences({ store: { putSilence: async () => undefined, silences: async () => [] }, now: () => t });
    for (let i = 0; i < MAX_SILENCES; i++) await silences.add(silence({ comment: `s${i}` }));
    await expect(silences.add(silence())).rejects.toThrow(SilenceLimitError);
    await expect(silences.add(silence())).rejects.toThrow(`${MAX_SILENCES} silences have not expired yet`);
    await silences.expire(silences.list()[0]!.id);
    expect(await silences.add(silence())).toMatchObject({ state: 'active' });
    t = T0 + 11 * MIN;
    expect(await silences.add(silence({ endsAt: new Date(t + MIN).toISOString() }))).toMatchObject({ state: 'active' });
  });

  it('saves a silence before it counts: another reader of the store sees it, and it mutes matching labels', async () => {
    const { silences, db } = setup();
    const s = silence();
    expect(await silences.add(s)).toMatchObject({ id: s.id, state: 'active', createdBy: 'ops' });
    expect(silences.mutedBy({ hook_name: 'SessionStart:startup' }, T0)).toEqual([s.id]);
    expect(silences.mutedBy({ hook_name: 'UserPromptSubmit' }, T0)).toEqual([]);
    const other = new SqliteAlertStateStore(db);
    cleanups.push(() => other.close());
    const fresh = new Silences({ store: other, now: () => T0 });
    await fresh.reload();
    expect(fresh.list().map((x) => x.id)).toEqual([s.id]);
  });

  it('mutes only between startsAt and endsAt', async () => {
    const { silences } = setup();
    const s = silence({ startsAt: new Date(T0 + MIN).toISOString() });
    expect((await silences.add(s)).state).toBe('pending');
    expect(silences.mutedBy({ hook_name: 'SessionStart' }, T0)).toEqual([]);
    expect(silences.mutedBy({ hook_name: 'SessionStart' }, T0 + MIN)).toEqual([s.id]);
    expect(silences.mutedBy({ hook_name: 'SessionStart' }, T0 + 10 * MIN)).toEqual([]);
  });

  it('expires a silence now, persisted, and says so once; unknown ids are undefined', async () => {
    const { silences, store, clock, expired } = setup();
    const s = silence();
    await silences.add(s);
    clock.t = T0 + 2 * MIN;
    expect(await silences.expire(s.id)).toMatchObject({ state: 'expired', endsAt: new Date(T0 + 2 * MIN).toISOString() });
    expect(expired()).toBe(1);
    expect((await store.silences())[0]?.endsAtMs).toBe(T0 + 2 * MIN);
    expect(silences.mutedBy({ hook_name: 'SessionStart' }, clock.t)).toEqual([]);
    // Already expired: nothing changes, nothing to notify.
    clock.t += MIN;
    expect(await silences.expire(s.id)).toMatchObject({ state: 'expired', endsAt: new Date(T0 + 2 * MIN).toISOString() });
    expect(expired()).toBe(1);
    expect(await silences.expire('00000000-0000-0000-0000-000000000000')).toBeUndefined();
  });

  it('lists newest first and forgets silences expired before the retention', async () => {
    const { silences } = setup();
    const a = silence();
    const b = { ...silence(), createdAtMs: T0 + 1, endsAtMs: T0 + 20 * MIN };
    await silences.add(a);
    await silences.add(b);
    expect(silences.list().map((x) => x.id)).toEqual([b.id, a.id]);
    silences.forgetExpiredBefore(T0 + 15 * MIN);
    expect(silences.list().map((x) => x.id)).toEqual([b.id]);
  });
});

describe('silence matchers', () => {
  const matching = (name: string, isEqual = true): unknown => ({ matchers: [{ name: 'alertname', value: 'persisted' }, { name, value: 'acme', isEqual }], endsAt: new Date(T0 + 10 * MIN).toISOString(), createdBy: 'ops', comment: 'maintenance' });

  it('name labels as alerts carry them: a dimension\'s dotted name is refused with the label it stands for', () => {
    // groupBy organization.id labels alerts organization_id: a matcher on organization.id would match no label,
    // muting nothing (=) or every persisted alert, acme's included (!=).
    for (const isEqual of [true, false]) {
      expect(() => parseSilence(matching('organization.id', isEqual), T0)).toThrow(SilenceError);
      expect(() => parseSilence(matching('organization.id', isEqual), T0)).toThrow('matchers[1].name must be a label name: alert labels write dots as _ (organization_id)');
    }
    expect(() => parseSilence(matching('1team'), T0)).toThrow('matchers[1].name must be a label name (letters, digits and _, not starting with a digit)');
    const s = parseSilence(matching('organization_id'), T0);
    expect(s.matchers[1]).toEqual({ name: 'organization_id', value: 'acme', isRegex: false, isEqual: true });
  });

  it('reads a dotted name kept from before such names were refused as the label it stands for', () => {
    // Stored as it was made: a dotted name would match no label, muting nothing (=) or every persisted alert (!=).
    const kept = (isEqual: boolean): SilenceRecord => ({ ...parseSilence(matching('organization_id'), T0), matchers: [{ name: 'alertname', value: 'persisted', isRegex: false, isEqual: true }, { name: 'organization.id', value: 'acme', isRegex: false, isEqual }] });
    const acme = { alertname: 'persisted', organization_id: 'acme' };
    const other = { alertname: 'persisted', organization_id: 'globex' };
    expect([silenceMatches(kept(true), acme), silenceMatches(kept(true), other)]).toEqual([true, false]);
    expect([silenceMatches(kept(false), acme), silenceMatches(kept(false), other)]).toEqual([false, true]);
  });

  it('names the closest label alerts carry for a label none carries, not the first one near it', () => {
    // stat is two edits from stage, listed first, and one from state.
    const labels = { carried: ['alertname', 'stage', 'state'], external: [] };
    expect(silenceWarnings([{ name: 'stat', value: 'acme' }], labels)).toEqual([
      'matchers[0]: no alert rule configured gives alerts the label stat (did you mean state?); until one does, this matcher reads it as empty and matches no alert: the silence mutes nothing (alerts carry: alertname, stage, state)',
    ]);
  });
});

describe('silence times', () => {
  const until = (endsAt: string, startsAt?: string): unknown => ({ matchers: [{ name: 'alertname', value: 'persisted' }], endsAt, ...(startsAt ? { startsAt } : {}), createdBy: 'ops', comment: 'maintenance' });

  it('refuses a day that is not on the calendar instead of rolling it over into the next month', () => {
    expect(() => parseSilence(until('2027-02-30T12:00:00Z'), T0)).toThrow('endsAt must be an RFC 3339 time such as 2026-11-30T12:00:00Z, on a day of the calendar');
    expect(() => parseSilence(until('2027-03-01T12:00:00Z', '2026-11-31T12:00:00Z'), T0)).toThrow('startsAt must be an RFC 3339 time');
    expect(() => parseSilence(until('2026-12-01T24:00:00Z'), T0)).toThrow(SilenceError);
    // A real day, lower-case t and z included, is taken.
    expect(parseSilence(until('2028-02-29t12:00:00z'), T0).endsAtMs).toBe(Date.parse('2028-02-29T12:00:00Z'));
  });
});
