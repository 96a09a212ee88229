import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AlertDetailResponse, AlertsResponse, Silence } from '../../../shared/src/api.ts';
import { setTimeZone } from '../format.ts';
import { rangeUrl } from '../shell-state.ts';
import { keptParams, readState } from '../state.ts';
import { NEAR, NOW, OVER, alert } from '../testdata/api-responses.ts';
import {
  alertSubject, alertsView, attemptRows, cardView, clockOffset, hookFilter, hookFilterName, hookFilterUrl, hookMatchers, linkMatchers, linkedAlertText, matcherText, rangeBounds, silencePrompt, silenceRequest, silenceRows,
  silencedText, stateNote, supersededBy,
} from './alerts-state.ts';
import { silenceQuery } from '../../../shared/src/silence-link.ts';

const at = (url: string) => {
  const u = new URL(url, 'http://x');
  return readState({ pathname: u.pathname, search: u.search });
};
const HOUR = 3_600_000;
const iso = (ms: number): string => new Date(ms).toISOString();

const firing = alert('a1');
const headroomResolved = alert('a2', {
  rule: 'headroom', state: 'resolved', labels: { alertname: 'HookNearCap', rule: 'headroom', hook_event: 'Stop', hook_name: OVER.hookName },
  activeAt: iso(NOW - 5 * HOUR), startsAt: iso(NOW - 5 * HOUR), endsAt: iso(NOW - 10 * 60_000),
});
const pendingNear = alert('a3', {
  rule: 'growth', state: 'pending', labels: { alertname: 'HookGrowing', rule: 'growth', hook_event: 'SessionStart', hook_name: NEAR.hookName },
  hookId: NEAR.id, startsAt: null, lastNotifiedAt: null, deliveries: [], activeAt: iso(NOW - 2 * HOUR),
});
const oldResolved = alert('a4', { state: 'resolved', activeAt: iso(NOW - 3 * 86_400_000), endsAt: iso(NOW - 2 * 86_400_000) });
const clients = alert('a5', {
  rule: 'blind-clients', labels: { alertname: 'ClientsWithoutSizes', rule: 'blind-clients', service_name: 'claude-code', service_version: '2.1.250' }, hookId: null,
});
const response = (over: Partial<AlertsResponse> = {}): AlertsResponse => ({
  alerts: [firing, headroomResolved, pendingNear, oldResolved, clients], receivers: ['team-webhook'], now: iso(NOW), ...over,
});

beforeEach(() => setTimeZone('UTC'));
afterEach(() => setTimeZone('local'));

describe('which alerts the page lists', () => {
  it('says under the resolved list how many older resolved alerts the API left out', () => {
    const v = alertsView(response({ resolvedOmitted: 1234 }), at('/alerts'), NOW);
    expect(v.groups.map((g) => [g.state, g.more])).toEqual([['firing', null], ['pending', null], ['resolved', '…and 1,234 older resolved alerts not shown']]);
    expect(alertsView(response({ resolvedOmitted: 1 }), at('/alerts?state=resolved'), NOW).groups.map((g) => g.more)).toEqual(['…and 1 older resolved alert not shown']);
    // No resolved list, nothing to add to.
    expect(alertsView(response({ resolvedOmitted: 5 }), at('/alerts?state=firing'), NOW).groups.map((g) => g.more)).toEqual([null]);
  });

  it('groups the alerts active in the range, firing first, and counts the older ones', () => {
    const v = alertsView(response(), at('/alerts'), NOW);
    expect(v.groups.map((g) => [g.heading, g.alerts.map((a) => a.id)])).toEqual([['Firing (2)', ['a1', 'a5']], ['Pending (1)', ['a3']], ['Resolved (1)', ['a2']]]);
    expect(v.groups.map((g) => g.more)).toEqual([null, null, null]);
    expect(v.rangeNote).toBe('Alerts active in the last 24 hours; 1 older alert outside the range is not shown.');
    expect(v.noReceivers).toBe(false);
    expect(v.empty).toBeNull();
  });

  it('lists firing alerts the most severe first, error beside critical and in any case, the newest first within one', () => {
    const firingAt = (id: string, severity: string | undefined, minutesAgo: number) => alert(id, {
      labels: { alertname: id, ...(severity === undefined ? {} : { severity }) }, startsAt: iso(NOW - minutesAgo * 60_000), activeAt: iso(NOW - minutesAgo * 60_000),
    });
    const alerts = [firingAt('info', 'info', 1), firingAt('none', undefined, 2), firingAt('warning', 'warning', 3), firingAt('Critical', 'Critical', 9), firingAt('error', 'error', 4), firingAt('critical', 'critical', 5), firingAt('page', 'page', 6)];
    const v = alertsView(response({ alerts }), at('/alerts'), NOW);
    expect(v.groups[0]?.alerts.map((a) => a.id)).toEqual(['error', 'critical', 'Critical', 'warning', 'info', 'none', 'page']);
  });

  it('follows the range on the server\'s clock, not the browser\'s', () => {
    const skewed = alertsView(response(), at('/alerts?range=1h'), NOW + 30 * 86_400_000);
    // Still active (no end) or resolved ten minutes ago: in the last hour; resolved two days ago: not.
    expect(skewed.groups.flatMap((g) => g.alerts.map((a) => a.id))).toEqual(['a1', 'a5', 'a3', 'a2']);
    expect(skewed.rangeNote).toBe('Alerts active in the last hour; 1 older alert outside the range is not shown.');
    // Without the server's time, the browser's: a month ahead, only the alerts that never ended are in its last hour.
    const noClock = alertsView(response({ now: undefined }), at('/alerts?range=1h'), NOW + 30 * 86_400_000);
    expect(noClock.groups.flatMap((g) => g.alerts.map((a) => a.id))).toEqual(['a1', 'a5', 'a3']);
    expect(noClock.rangeNote).toBe('Alerts active in the last hour; 2 older alerts outside the range are not shown.');
    expect(rangeBounds({ kind: 'custom', from: '2026-11-01T00:00:00Z', to: '2026-11-02T00:00:00Z' }, NOW)).toEqual([Date.parse('2026-11-01T00:00:00Z'), Date.parse('2026-11-02T00:00:00Z')]);
  });

  it('filters by state and says what it did not find', () => {
    const v = alertsView(response(), at('/alerts?state=pending'), NOW);
    expect(v.groups.map((g) => g.state)).toEqual(['pending']);
    expect(alertsView(response({ alerts: [firing] }), at('/alerts?state=resolved&range=7d'), NOW).empty).toBe('No resolved alerts in the last 7 days.');
    expect(alertsView(response({ alerts: [] }), at('/alerts'), NOW).empty).toMatch(/^Nothing was pending, firing or resolved in the last 24 hours\./);
  });

  it('shows all states for a state in the link that is not one, and says so', () => {
    for (const bad of ['Firing', 'weird']) {
      const v = alertsView(response({ alerts: [firing] }), at(`/alerts?state=${bad}`), NOW);
      expect(v.groups.map((g) => g.state)).toEqual(['firing']);
      expect(stateNote(new URLSearchParams({ state: bad }))).toBe(`state=\u2068${bad}\u2069 in the link is not a state (firing, pending, resolved): it shows all states.`);
    }
    for (const ok of ['', 'state=', 'state=firing']) expect(stateNote(new URLSearchParams(ok))).toBeNull();
  });

  it('filters by hook, named as its alerts name it, and says what it did not find of it', () => {
    expect(hookFilter(at(`/alerts?hook=${OVER.id}`).params)).toBe(OVER.id);
    expect(hookFilter(at('/alerts').params)).toBeNull();
    // Named by its alerts' hook_name; by its id while none of them is listed.
    expect(hookFilterName(OVER.id, [clients, firing])).toBe(OVER.hookName);
    expect(hookFilterName(NEAR.id, [firing])).toBe(NEAR.id);
    const empty = (url: string, name: string): string | null => alertsView(response({ alerts: [] }), at(url), NOW, name).empty;
    expect(empty(`/alerts?hook=${OVER.id}`, OVER.hookName)).toBe(`Nothing of \u2068${OVER.hookName}\u2069 was pending, firing or resolved in the last 24 hours.`);
    expect(empty(`/alerts?hook=${OVER.id}&state=firing&range=7d`, OVER.hookName)).toBe(`No firing alerts of \u2068${OVER.hookName}\u2069 in the last 7 days.`);
  });

  it('keeps the hook filter through range and state changes, and removes it alone', () => {
    const s = at(`/alerts?range=7d&f.team=platform&state=firing&hook=${OVER.id}&silence.alertname=persisted`);
    expect(rangeUrl(s, { kind: 'preset', preset: '1h' })).toBe(`/alerts?range=1h&f.team=platform&state=firing&silence.alertname=persisted&hook=${OVER.id}`);
    expect(hookFilterUrl(s, undefined)).toBe('/alerts?range=7d&f.team=platform&state=firing&silence.alertname=persisted');
    // The header's links, to the alerts page too, lead to every hook's alerts.
    expect(keptParams(s.params)).not.toHaveProperty('hook');
    expect(rangeUrl(at(`/?hook=${OVER.id}`), { kind: 'preset', preset: '7d' })).toBe('/?range=7d');
  });

  it('says nobody is notified when no receiver is configured, and not when the server does not say', () => {
    expect(alertsView(response({ receivers: [] }), at('/alerts'), NOW).noReceivers).toBe(true);
    expect(alertsView(response({ receivers: undefined }), at('/alerts'), NOW).noReceivers).toBe(false);
  });
});

describe('one alert', () => {
  it('calls a resolved headroom alert superseded while its hook\'s persisted alert fires', () => {
    const all = response().alerts;
    expect(supersededBy(headroomResolved, all)?.id).toBe('a1');
    const v = cardView(headroomResolved, all, ['team-webhook']);
    expect(v.state).toBe('superseded');
    expect(v.times.join('')).toBe('active since 30/11/2026, 03:30 · firing since 30/11/2026, 03:30 · superseded 30/11/2026, 08:20 · ops notified of its firing 30/11/2026, 08:25, not of its resolution');
    expect(cardView(headroomResolved, [headroomResolved], ['team-webhook']).state).toBe('resolved');
    expect(supersededBy(oldResolved, all)).toBeUndefined();
  });

  it('calls a resolved alert superseded when the server says so, whatever the rules are named', () => {
    const lost = alert('b1', { rule: 'hook_output_lost', hookId: OVER.id });
    const nearCap = alert('b2', {
      rule: 'near_cap', state: 'resolved', hookId: OVER.id, labels: { alertname: 'near_cap', hook_name: OVER.hookName },
      annotations: { summary: 'Superseded: the hook went over the cap (alert hook_output_lost is firing).', superseded_by: 'hook_output_lost' },
      activeAt: iso(NOW - 5 * HOUR), startsAt: iso(NOW - 5 * HOUR), endsAt: iso(NOW - 10 * 60_000),
    });
    expect(supersededBy(nearCap, [lost, nearCap])?.id).toBe('b1');
    expect(cardView(nearCap, [lost, nearCap], ['team-webhook']).state).toBe('superseded');
    // Once the persisted alert is gone too, it reads as resolved, as a headroom rule named after its kind does.
    expect(cardView(nearCap, [nearCap], ['team-webhook']).state).toBe('resolved');
  });

  it('says a quiet-hook alert ended because the hook\'s data left retention, never that it resolved', () => {
    const expired = alert('b3', {
      rule: 'silence', state: 'resolved', labels: { alertname: 'silence', hook_event: 'Stop', hook_name: OVER.hookName },
      annotations: { summary: `${OVER.hookName}: the hook's data left retention with no execution since 2025-10-30T08:00:00Z: this alert ends because hookwatch no longer keeps the hook, not because it was heard again.`, last_seen: '2025-10-30T08:00:00Z', data_expired: 'true' },
      activeAt: iso(NOW - 5 * HOUR), startsAt: iso(NOW - 5 * HOUR), endsAt: '2026-11-30T08:28:00.000Z',
      deliveries: [{ receiver: 'ops', status: 'resolved', outcome: 'delivered', at: '2026-11-30T08:28:01.000Z', httpStatus: 200 }],
    });
    const v = cardView(expired, [expired], ['ops']);
    expect(v.state).toBe('data-expired');
    expect(v.times.join('')).toBe('active since 30/11/2026, 03:30 · firing since 30/11/2026, 03:30 · ended (hook data expired) 30/11/2026, 08:28 · ops notified of its end 30/11/2026, 08:28');
    // Only a resolved alert carrying the annotation: another resolution reads as before.
    expect(cardView({ ...expired, annotations: { ...expired.annotations, data_expired: 'false' } }, [], ['ops']).state).toBe('resolved');
  });

  it('tells a notification delivered from one that failed or is still retrying, per receiver', () => {
    const failed = alert('a9', {
      deliveries: [
        { receiver: 'oncall', status: 'firing', outcome: 'failed', at: '2026-11-30T08:25:02.000Z', httpStatus: 404 },
        { receiver: 'slack', status: 'firing', outcome: 'retrying', at: '2026-11-30T08:26:00.000Z', httpStatus: 503 },
      ],
    });
    expect(cardView(failed, [failed], ['oncall', 'slack']).times.at(-1)).toBe(' · delivery to oncall failed (HTTP 404) 30/11/2026, 08:25: nobody there was notified · delivery to slack retrying (HTTP 503), last tried 30/11/2026, 08:26');
    // Sent out, no attempt made yet: never "notified".
    expect(cardView(alert('a10', { deliveries: [] }), [], ['oncall']).times.at(-1)).toBe(' · notification sent out 30/11/2026, 08:25, not yet delivered');
  });

  it('says of a resolved alert whether each receiver heard of its resolution or only of its firing', () => {
    const resolved = { state: 'resolved' as const, endsAt: '2026-11-30T08:28:00.000Z' };
    // Resolved while a silence muted it: the receivers had its firing only, and are not told it cleared.
    const muted = alert('a11', { ...resolved, deliveries: [
      { receiver: 'oncall', status: 'firing', outcome: 'delivered', at: '2026-11-30T08:25:01.000Z', httpStatus: 200 },
      { receiver: 'slack', status: 'resolved', outcome: 'delivered', at: '2026-11-30T08:28:01.000Z', httpStatus: 200 },
    ] });
    expect(cardView(muted, [muted], ['oncall', 'slack']).times.at(-1)).toBe(' · oncall notified of its firing 30/11/2026, 08:25, not of its resolution · slack notified of its resolution 30/11/2026, 08:28');
    // Still firing: its firing is what "notified" means.
    expect(cardView(firing, [firing], ['ops']).times.at(-1)).toBe(' · ops notified 30/11/2026, 08:25');
  });

  it('says whether anyone was notified', () => {
    expect(cardView(pendingNear, [], ['team-webhook']).times.at(-1)).toBe(' · not notified yet');
    expect(cardView(pendingNear, [], []).times.at(-1)).toBe(' · no receiver is configured: shown here only, nobody is notified');
    expect(cardView(pendingNear, [], undefined).times.at(-1)).toBe(' · not notified yet');
  });

  it('lists labels then annotations, as text, and who silenced it', () => {
    const xss = alert('x', { labels: { hook_name: '<img src=x onerror=alert(1)>' }, annotations: { summary: 's' }, silencedBy: ['s1', 's2'] });
    const v = cardView(xss, [], []);
    expect(v.labels).toEqual([{ name: 'hook_name', text: '<img src=x onerror=alert(1)>', raw: null }, { name: 'summary', text: 's', raw: null }]);
    expect(v.silencedBy).toBe('silenced by s1, s2');
    // Who silenced it and until when, from the silences in force; the id of one not among them.
    const s1: Silence = { id: 's1', matchers: [], startsAt: iso(NOW - HOUR), endsAt: iso(NOW + HOUR), createdBy: 'alice', comment: 'rewrite', state: 'active' };
    expect(cardView(xss, [], [], [s1]).silencedBy).toBe('silenced by alice until 30/11/2026, 09:30, s2');
    expect(cardView(firing, [], []).silencedBy).toBeNull();
  });

  it('writes the counts, sizes and times hookwatch annotates as the rest of the dashboard does, keeping each raw value', () => {
    const a = alert('n', {
      // Labels are names, never numbers: a version or a rule's own label stays as it is.
      labels: { hook_name: 'Stop', service_version: '2.1.250', executions: '12345' },
      annotations: {
        summary: 'stamped 2026-11-30T08:00:00Z', largest_output: '14000', guard_largest_output: '1234567', headroom: '-600', outputs_persisted: '12345',
        event_time: '2026-11-30T08:00:00.000Z', last_seen: '2026-11-30T08:05:00Z', ratio: '0.1234', days_to_cap: '3.5', guard_trims: 'n/a', crosses_at: 'soon',
      },
    });
    const shown = (text: string, raw: string | null = null) => ({ text, raw });
    expect(Object.fromEntries(cardView(a, [], []).labels.map((l) => [l.name, { text: l.text, raw: l.raw }]))).toEqual({
      hook_name: shown('Stop'), service_version: shown('2.1.250'), executions: shown('12345'),
      // Free text with times in it stays as written.
      summary: shown('stamped 2026-11-30T08:00:00Z'),
      largest_output: shown('14,000 chars', '14000'), guard_largest_output: shown('1,234,567 chars', '1234567'), headroom: shown('600 chars over the cap', '-600'),
      outputs_persisted: shown('12,345', '12345'),
      event_time: shown('30/11/2026, 08:00', '2026-11-30T08:00:00.000Z'), last_seen: shown('30/11/2026, 08:05', '2026-11-30T08:05:00Z'),
      ratio: shown('12.3%', '0.1234'), days_to_cap: shown('3.5'),
      // Not what hookwatch writes there: shown as it is rather than as "NaN" or "Invalid Date".
      guard_trims: shown('n/a'), crosses_at: shown('soon'),
    });
    // Some executions sent no size data: the measured figures are bounds, as the summary says; the headroom as the
    // hook page words it, never "at most -600 chars".
    const blind = cardView({ ...a, annotations: { ...a.annotations, missing: '0', executions_without_sizes: '3' } }, [], []).labels;
    expect(Object.fromEntries(blind.filter((l) => l.raw !== null && !l.name.endsWith('_time') && l.name !== 'last_seen').map((l) => [l.name, l.text]))).toEqual({
      largest_output: 'at least 14,000 chars', guard_largest_output: '1,234,567 chars', headroom: 'at least 600 chars over the cap', outputs_persisted: 'at least 12,345', ratio: 'at least 12.3%',
    });
    const headroom = (raw: string, unmeasured: boolean): string | undefined => cardView({ ...a, annotations: { headroom: raw, ...(unmeasured ? { executions_without_sizes: '1' } : {}) } }, [], []).labels.find((l) => l.name === 'headroom')?.text;
    expect([headroom('1450', true), headroom('0', true), headroom('1450', false), headroom('0', false)]).toEqual(['at most 1,450 chars below the cap', 'at the cap or over it', '1,450 chars below the cap', 'at the cap']);
    // A count of 0 stays 0.
    expect(blind.find((l) => l.name === 'missing')).toEqual({ name: 'missing', text: '0', raw: null });
    // An alert raised before hookwatch left out a count its client did not report gives it as 0: not reported.
    const unreported = cardView({ ...a, annotations: { outputs_persisted: '0', late_outputs_persisted: '0', executions: '2' } }, [], []).labels;
    expect(unreported.map((l) => [l.name, l.text, l.raw])).toEqual([['hook_name', 'Stop', null], ['service_version', '2.1.250', null], ['executions', '12345', null], ['outputs_persisted', 'not reported', '0'], ['late_outputs_persisted', 'not reported', '0'], ['executions', '2', null]]);
    expect(blind.find((l) => l.name === 'executions_without_sizes')).toEqual({ name: 'executions_without_sizes', text: '3', raw: null });
    expect(cardView({ ...a, annotations: { outputs_persisted: '2', executions_without_sizes: '3' } }, [], []).labels.find((l) => l.name === 'outputs_persisted')?.text).toBe('at least 2');
    setTimeZone('local');
    expect(cardView(a, [], []).labels.find((l) => l.name === 'event_time')?.text).toBe(new Date('2026-11-30T08:00:00Z').toLocaleString('en-GB', { year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }));
  });

  it('names what an alert is about: a hook, a set of clients, the feed', () => {
    expect(alertSubject(firing)).toEqual({ text: OVER.hookName, kind: 'hook' });
    expect(alertSubject(clients)).toEqual({ text: 'claude-code 2.1.250 clients', kind: 'clients' });
    expect(alertSubject(alert('f', { labels: { alertname: 'NoTelemetry', scope: 'feed' }, hookId: null }))).toEqual({ text: 'all hooks (the whole feed)', kind: 'feed' });
    // A rule's own label named `hook` names no hook: the feed's alert stays the feed's, silenced by all its labels.
    const labelled = alert('l', { labels: { alertname: 'NoTelemetry', severity: 'warning', scope: 'feed', hook: 'nightly-sync' }, hookId: null });
    expect(alertSubject(labelled)).toEqual({ text: 'all hooks (the whole feed)', kind: 'feed' });
    expect(hookMatchers(labelled).map((m) => m.name)).toEqual(['severity', 'scope', 'hook']);
    expect(alertSubject(alert('g', { labels: { alertname: 'Other', service_version: '' }, hookId: null })).text).toBe('client (unknown version) clients');
    expect(alertSubject(alert('n', { labels: { alertname: 'Custom' }, hookId: null, rule: 'custom' }))).toEqual({ text: 'Custom', kind: 'alert' });
  });
});

describe('silencing', () => {
  it('mutes the hook by its hook labels only, ending after the chosen time, with no start of its own', () => {
    const req = silenceRequest(hookMatchers(firing), 4 * HOUR, 'alice', 'fixing the lint report', NOW);
    expect(req).toEqual({
      matchers: [
        { name: 'hook_event', value: 'Stop', isRegex: false, isEqual: true },
        { name: 'hook_name', value: OVER.hookName, isRegex: false, isEqual: true },
      ],
      endsAt: '2026-11-30T12:30:00.000Z', createdBy: 'alice', comment: 'fixing the lint report',
    });
    expect(req).not.toHaveProperty('startsAt');
    // The hook name and label values isolated: a right-to-left override in them turns nothing after them around.
    expect(silencePrompt(firing)).toBe(`Silence \u2068${OVER.hookName}\u2069 (matching hook_event=\u2068Stop\u2069, hook_name=\u2068${OVER.hookName}\u2069) for `);
  });

  it('falls back to every label but alertname and rule when the alert names no hook', () => {
    expect(hookMatchers(clients).map((m) => m.name)).toEqual(['service_name', 'service_version']);
    expect(silencePrompt(alert('e', { labels: { alertname: 'X', rule: 'x' }, hookId: null }))).toBe('Silence \u2068X\u2069 (matching nothing) for ');
  });

  it('reads a notification\'s silence link back as equality matchers on every label of its alert', () => {
    const labels = { alertname: 'persisted', hook_name: 'PreToolUse:Write|Edit', hook_event: 'PreToolUse', team: 'a&b=c' };
    const state = at(`/alerts?range=7d&${silenceQuery(labels)}&silence.=x&f.team=a`);
    expect(linkMatchers(state.params)).toEqual(Object.entries(labels).map(([name, value]) => ({ name, value, isRegex: false, isEqual: true })));
    expect(linkMatchers(at('/alerts?state=firing').params)).toEqual([]);
    // A label given twice is one matcher, of its last value.
    expect(linkMatchers(at('/alerts?silence.a=1&silence.a=2').params)).toEqual([{ name: 'a', value: '2', isRegex: false, isEqual: true }]);
  });

  it('says whether the linked alert is listed, and who silenced it already', () => {
    const matchers = linkMatchers(at(`/alerts?${silenceQuery(firing.labels)}`).params);
    expect(linkedAlertText(matchers, [firing], [])).toBe('The alert is firing.');
    const silence: Silence = { id: 's-1', matchers, startsAt: iso(NOW), endsAt: iso(NOW + HOUR), createdBy: 'alice', comment: 'fixing it', state: 'active' };
    expect(linkedAlertText(matchers, [{ ...firing, silencedBy: ['s-1'] }], [silence])).toBe('The alert is firing, silenced by alice until 30/11/2026, 09:30.');
    // An alert with more labels than the link carries is another alert.
    expect(linkedAlertText(matchers.slice(1), [firing], [])).toBe('No alert with these labels is listed now; the silence mutes it should it fire.');
  });

  it('says until when, and which silence', () => {
    expect(silencedText(NOW + HOUR, 'sil-1')).toBe('Silenced until 30/11/2026, 09:30 (silence sil-1). ');
    expect(silencedText(NOW + HOUR, undefined)).toBe('Silenced until 30/11/2026, 09:30. ');
  });
});

describe('the server\'s clock', () => {
  it('reads how far the server\'s clock runs from the browser\'s, from when the alerts API said what time it is', () => {
    expect(clockOffset({ now: iso(NOW) }, NOW - 3 * HOUR)).toBe(3 * HOUR);
    expect(clockOffset({ now: iso(NOW) }, NOW + HOUR)).toBe(-HOUR);
    // A server that does not say: the browser's clock is all there is.
    expect(clockOffset({}, NOW)).toBe(0);
    expect(clockOffset({ now: 'not a time' }, NOW)).toBe(0);
  });
});

describe('delivery attempts', () => {
  it('lists each attempt, with a dash for no HTTP status', () => {
    const detail: AlertDetailResponse = {
      alert: firing,
      attempts: [
        { receiver: 'team-webhook', webhookId: 'w1', attempt: 1, at: iso(NOW), status: 'firing', outcome: 'retrying', httpStatus: null, error: 'connect ECONNREFUSED', durationMs: 1_204.6 },
        { receiver: 'team-webhook', webhookId: 'w1', attempt: 2, at: iso(NOW + 1000), status: 'firing', outcome: 'delivered', httpStatus: 200, error: null, durationMs: 12 },
      ],
    };
    expect(attemptRows(detail)).toEqual([
      ['team-webhook', 'firing', '1', '30/11/2026, 08:30:00', 'retrying', '–', 'connect ECONNREFUSED', '1,205 ms'],
      ['team-webhook', 'firing', '2', '30/11/2026, 08:30:01', 'delivered', '200', '', '12 ms'],
    ]);
    expect(attemptRows({ alert: firing, attempts: [] })).toBeNull();
  });

  it('says in words a network error stored as a bare code, the code kept; other errors as stored', () => {
    const attempt = (n: number, error: string): AlertDetailResponse['attempts'][number] => ({ receiver: 'team-webhook', webhookId: 'w1', attempt: n, at: iso(NOW), status: 'firing', outcome: 'retrying', httpStatus: null, error, durationMs: 3 });
    const rows = attemptRows({ alert: firing, attempts: [
      attempt(1, 'ECONNREFUSED'),
      attempt(2, 'ENOTFOUND; gave up: the next attempt would pass the delivery deadline'),
      attempt(3, 'connection refused (ECONNREFUSED): nothing listens at 10.0.0.7:443'),
      attempt(4, 'TLS handshake failed: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)'),
      attempt(5, 'timed out'),
    ] });
    expect(rows?.map((r) => r[6])).toEqual([
      'connection refused (ECONNREFUSED): nothing listens at that address',
      'name not found (ENOTFOUND): no address for that host name; gave up: the next attempt would pass the delivery deadline',
      'connection refused (ECONNREFUSED): nothing listens at 10.0.0.7:443',
      'TLS handshake failed: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)',
      'timed out',
    ]);
  });
});

describe('silences in force', () => {
  it('lists active and pending silences with what they match, who made them, why and until when; not expired ones', () => {
    const base = { createdBy: 'platform on-call', comment: 'rolling out a fix', startsAt: iso(NOW - HOUR), endsAt: iso(NOW + 4 * HOUR) };
    const rows = silenceRows([
      { ...base, id: 's1', state: 'active', matchers: [{ name: 'hook_name', value: 'SessionStart:startup', isRegex: false, isEqual: true }, { name: 'alertname', value: 'near_.*', isRegex: true, isEqual: false }] },
      { ...base, id: 's2', state: 'pending', startsAt: iso(NOW + HOUR), matchers: [{ name: 'team', value: 'platform', isRegex: false, isEqual: false }] },
      { ...base, id: 's3', state: 'expired', endsAt: iso(NOW - 1), matchers: [{ name: 'team', value: 'a|b', isRegex: true, isEqual: true }] },
    ]);
    expect(rows).toEqual([
      { id: 's1', state: 'active', matchers: 'hook_name="SessionStart:startup", alertname!~"near_.*"', when: 'until 30/11/2026, 12:30', createdBy: 'platform on-call', comment: 'rolling out a fix' },
      { id: 's2', state: 'pending', matchers: 'team!="platform"', when: 'from 30/11/2026, 09:30 until 30/11/2026, 12:30', createdBy: 'platform on-call', comment: 'rolling out a fix' },
    ]);
    expect(matcherText({ name: 'team', value: 'a|b', isRegex: true })).toBe('team=~"a|b"');
  });
});
