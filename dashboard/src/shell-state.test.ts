import { afterEach, describe, expect, it } from 'vitest';
import { inputDateTime, setTimeZone } from './format.ts';
import { alert } from './testdata/api-responses.ts';
import {
  IDLE_RELOAD_MS, MAX_RETRY_AFTER_MS, MAX_RETRY_MS, UPDATE_AGAIN_NOTICE, UPDATE_NOTICE, addFilter, customFieldBounds, firingBadge, firingUnknown, customRangeFrom, customRunChoices, failureNote, filterProblem, filtersApply, ignoredViewNote, filtersUrl, isPlainClick, keptViewFor, keptViewText, nextTheme, notFilteredNote, notFoundView, rangeUrl, refreshParam, refreshView,
  RELOAD_AGAIN_MS, reloadHeldUntil, reloadedBuilds, reloadedText, removeFilter, retryDelay, selfReloadDue, signInReloadFrom, signedOutNote, toggledRefresh, updatedText, withRefresh, zoneChoice,
} from './shell-state.ts';
import { readState } from './state.ts';

const at = (url: string) => {
  const u = new URL(url, 'http://x');
  return readState({ pathname: u.pathname, search: u.search });
};
const params = (qs: string) => new URLSearchParams(qs);

const TZ = process.env['TZ'];
afterEach(() => {
  if (TZ === undefined) delete process.env['TZ'];
  else process.env['TZ'] = TZ;
  setTimeZone('local');
});

describe('filters', () => {
  it('narrow the overview and hook pages only, and the other pages say so instead of showing chips', () => {
    expect(filtersApply(at('/?f.team=a').route)).toBe(true);
    expect(filtersApply(at('/hooks/0123456789abcdef?f.team=a').route)).toBe(true);
    expect(filtersApply(at('/alerts?f.team=a').route)).toBe(false);
    expect(filtersApply(at('/forwarding?f.team=a').route)).toBe(false);
    expect(notFilteredNote({ 'service.version': '9.9.9' })).toBe('This page is not filtered: it shows the whole fleet. The filter service.version = \u20689.9.9\u2069 applies to the overview and hook pages.');
    expect(notFilteredNote({ team: 'a', 'user.id': 'b' })).toBe('This page is not filtered: it shows the whole fleet. The filters team = \u2068a\u2069, user.id = \u2068b\u2069 apply to the overview and hook pages.');
    expect(notFilteredNote({})).toBeNull();
    // The alerts page filtered to a hook does not show the whole fleet: it says only that the filters do not apply.
    expect(notFilteredNote({ team: 'a' }, true)).toBe('The filter team = \u2068a\u2069 applies to the overview and hook pages, not to this one.');
  });
});

describe('while the server fails', () => {
  it('waits twice as long after each failure in a row, up to a minute, and the chosen period again after a success', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 9].map((n) => retryDelay(5000, n))).toEqual([5000, 5000, 10_000, 20_000, 40_000, MAX_RETRY_MS, MAX_RETRY_MS, MAX_RETRY_MS]);
    // A period longer than a minute is never shortened.
    expect(retryDelay(300_000, 4)).toBe(300_000);
  });

  it('waits at least as long as the last failure\'s Retry-After asked, up to five minutes', () => {
    // Longer than its own backoff: what was asked; shorter: its own backoff.
    expect([1, 2, 3].map((n) => retryDelay(15_000, n, 120_000))).toEqual([120_000, 120_000, 120_000]);
    expect([1, 2, 3].map((n) => retryDelay(15_000, n, 5000))).toEqual([15_000, 30_000, MAX_RETRY_MS]);
    expect(retryDelay(1000, 1, 5000)).toBe(5000);
    // An hour asked is held to five minutes; a period chosen longer stays.
    expect(retryDelay(15_000, 1, 3_600_000)).toBe(MAX_RETRY_AFTER_MS);
    expect(MAX_RETRY_AFTER_MS).toBe(300_000);
    expect(retryDelay(600_000, 1, 3_600_000)).toBe(600_000);
    // Once a refresh succeeds, the chosen period again.
    expect(retryDelay(15_000, 0, 120_000)).toBe(15_000);
    setTimeZone('UTC');
    const t = Date.parse('2026-11-30T08:30:00Z');
    expect(failureNote({ lastUpdated: t, nowMs: t + 4000, periodMs: 15_000, failures: 1, retryAfterMs: 120_000 })).toBe('showing data from 08:30, 4 s ago; retrying every 2 min');
    expect(failureNote({ lastUpdated: t, nowMs: t + 4000, periodMs: 1000, failures: 1, retryAfterMs: 5000 })).toBe('showing data from 08:30, 4 s ago; retrying every 5 s');
    expect(failureNote({ lastUpdated: t, nowMs: t + 4000, periodMs: 15_000, failures: 2, retryAfterMs: 3_600_000 })).toBe('showing data from 08:30, 4 s ago; retrying less often, every 5 min');
  });

  it('says how old the data shown is, by the clock in the page\'s zone and counting on, and when it tries again', () => {
    setTimeZone('UTC');
    const t = Date.parse('2026-11-30T08:30:00Z');
    expect(failureNote({ lastUpdated: t, nowMs: t + 4000, periodMs: 5000, failures: 1 })).toBe('showing data from 08:30, 4 s ago; retrying every 5 s');
    expect(failureNote({ lastUpdated: t, nowMs: t + 120_000, periodMs: 5000, failures: 4 })).toBe('showing data from 08:30, 2 min ago; retrying less often, every 40 s');
    expect(failureNote({ lastUpdated: t, nowMs: t + 600_000, periodMs: 5000, failures: 9 })).toBe('showing data from 08:30, 10 min ago; retrying less often, every 1 min');
    expect(failureNote({ lastUpdated: undefined, nowMs: t, periodMs: 1000, failures: 1 })).toBe('nothing to show yet; retrying every 1 s');
    expect(failureNote({ lastUpdated: t, nowMs: t + 60_000, periodMs: null, failures: 3 })).toBe('showing data from 08:30, 1 min ago; refresh is paused: Refresh now tries again');
    // Past midnight, the day too.
    expect(failureNote({ lastUpdated: t, nowMs: t + 86_400_000, periodMs: 5000, failures: 9 })).toBe('showing data from 30/11, 08:30, 1 day ago; retrying less often, every 1 min');
    // A request hookwatch refused (400) is not retried, refresh running or paused.
    expect(failureNote({ lastUpdated: undefined, nowMs: t, periodMs: 15_000, failures: 1, refused: true })).toBe('nothing to show yet; not retried: hookwatch would refuse it again');
    expect(failureNote({ lastUpdated: t, nowMs: t + 4000, periodMs: null, failures: 2, refused: true })).toBe('showing data from 08:30, 4 s ago; not retried: hookwatch would refuse it again');
  });

  it('says, signed out, how old the data shown is, by the clock and counting on, and that refresh stopped', () => {
    setTimeZone('UTC');
    const t = Date.parse('2026-11-30T08:30:00Z');
    expect(signedOutNote(t, t + 180_000)).toBe('showing data from 08:30, 3 min ago; refresh stopped');
    expect(signedOutNote(undefined, t)).toBe('nothing to show; refresh stopped');
    // Signed out by a sign-in proxy: the page reloads by itself, now or from a later time.
    expect(signedOutNote(t, t + 60_000, t + 60_000)).toBe('showing data from 08:30, 1 min ago; refresh stopped; reloads by itself to sign in again once unused for 10 min');
    expect(signedOutNote(undefined, t, t + 3_600_000)).toBe('nothing to show; refresh stopped; reloads by itself to sign in again from 09:30, once unused for 10 min');
  });

  it('reloads by itself to sign in again at once, or an hour after a reload for it that brought no data', () => {
    const t = Date.parse('2026-11-30T08:30:00Z');
    expect(signInReloadFrom(null, t)).toBe(t);
    expect(signInReloadFrom('', t)).toBe(t);
    expect(signInReloadFrom('not a time', t)).toBe(t);
    expect(signInReloadFrom(String(t - 60_000), t)).toBe(t - 60_000 + RELOAD_AGAIN_MS);
    expect(signInReloadFrom(String(t - RELOAD_AGAIN_MS), t)).toBe(t);
  });
});

describe('refresh control', () => {
  it('shows 15 s by default, the URL\'s period otherwise, and an odd period as its own option', () => {
    expect(refreshView(params(''))).toEqual({ selected: '15s', paused: false, extra: null, pauseLabel: 'Pause' });
    expect(refreshView(params('refresh=1m'))).toEqual({ selected: '1m', paused: false, extra: null, pauseLabel: 'Pause' });
    expect(refreshView(params('refresh=30s'))).toEqual({ selected: '30s', paused: false, extra: { value: '30s', text: 'every 30s' }, pauseLabel: 'Pause' });
    expect(refreshView(params('refresh=off'))).toEqual({ selected: '15s', paused: true, extra: null, pauseLabel: 'Resume' });
    // A period of zero is off, not "every 0s".
    for (const zero of ['0s', '0m', '0']) expect(refreshView(params(`refresh=${zero}`)), zero).toEqual({ selected: '15s', paused: true, extra: null, pauseLabel: 'Resume' });
    // One the page does not take refreshes at the default, which the select then shows, not "every 5".
    expect(refreshView(params('refresh=5'))).toEqual({ selected: '15s', paused: false, extra: null, pauseLabel: 'Pause' });
  });

  it('says of a range or refresh interval of the link it does not take what it uses instead, and nothing of one it takes', () => {
    const plain = (s: string | null): string | null => s?.replace(/[\u2068\u2069]/g, '') ?? null;
    expect(plain(ignoredViewNote(params('range=2h')))).toBe('range=2h in the link is not a range this page takes (1h, 24h, 7d, 30d or custom): it shows the last 24 hours.');
    expect(plain(ignoredViewNote(params('refresh=5')))).toBe('refresh=5 in the link is not an interval this page takes (such as 5s, 1m or off): it refreshes every 15 s.');
    expect(plain(ignoredViewNote(params('range=custom&from=2026-11-30T09:00:00Z&to=2026-11-30T08:00:00Z')))).toBe('The custom range in the link (from=2026-11-30T09:00:00Z, to=2026-11-30T08:00:00Z) is not a time span this page reads: it shows the last 24 hours.');
    expect(ignoredViewNote(params('range=2h'))).toContain('\u20682h\u2069');
    expect(plain(ignoredViewNote(params('refresh=-5s')))).toBe('refresh=-5s in the link is not an interval this page takes (such as 5s, 1m or off): it refreshes every 15 s.');
    for (const ok of ['', 'range=24h', 'range=30d&refresh=off', 'refresh=0s', 'refresh=0', 'refresh=30s', 'range=custom&from=2026-11-30T08:00:00Z&to=2026-11-30T09:00:00Z']) expect(ignoredViewNote(params(ok))).toBeNull();
  });

  it('pauses to off and resumes at the chosen period, keeping the default out of the URL', () => {
    expect(toggledRefresh(params('refresh=1m'), '1m')).toBe('off');
    expect(toggledRefresh(params(''), '15s')).toBe('off');
    expect(toggledRefresh(params('refresh=off'), '5m')).toBe('5m');
    expect(toggledRefresh(params('refresh=off'), '15s')).toBeUndefined();
    expect(toggledRefresh(params('refresh=0s'), '15s')).toBeUndefined();
    expect(refreshParam('15s')).toBeUndefined();
    expect(refreshParam('5s')).toBe('5s');
  });

  it('sets refresh= in the URL without touching the rest of it', () => {
    expect(withRefresh({ pathname: '/hooks/0123456789abcdef', search: '?range=7d&f.team=platform' }, 'off')).toBe('/hooks/0123456789abcdef?range=7d&f.team=platform&refresh=off');
    expect(withRefresh({ pathname: '/alerts', search: '?refresh=off&state=firing' }, '5s')).toBe('/alerts?refresh=5s&state=firing');
    expect(withRefresh({ pathname: '/', search: '?refresh=off' }, undefined)).toBe('/');
    expect(withRefresh({ pathname: '/', search: '' }, undefined)).toBe('/');
  });

  it('says how long ago it last updated, counting on, and that it is paused, with the time in its title', () => {
    setTimeZone('UTC');
    const t = Date.parse('2026-11-30T08:30:00Z');
    expect(updatedText(undefined, params(''), t)).toBeNull();
    expect(updatedText(t, params(''), t + 12_000)).toEqual({ text: 'Updated 12 s ago', title: 'Last updated 30/11/2026, 08:30' });
    expect(updatedText(t, params(''), t + 180_000)?.text).toBe('Updated 3 min ago');
    expect(updatedText(t, params('refresh=off'), t + 7_200_000)?.text).toBe('Updated 2 h ago · paused');
  });
});

describe('range and filters', () => {
  it('changes the range and keeps the page, its filters and its own parameters', () => {
    const s = at('/hooks/0123456789abcdef?range=7d&f.team=platform&by=user.id&refresh=off&junk=1');
    expect(rangeUrl(s, { kind: 'preset', preset: '1h' })).toBe('/hooks/0123456789abcdef?range=1h&f.team=platform&by=user.id&refresh=off');
    expect(rangeUrl(at('/'), { kind: 'preset', preset: '24h' })).toBe('/');
    expect(rangeUrl(at('/alerts?state=firing'), { kind: 'custom', from: '2026-11-29T00:00:00.000Z', to: '2026-11-30T00:00:00.000Z' }))
      .toBe('/alerts?range=custom&from=2026-11-29T00%3A00%3A00.000Z&to=2026-11-30T00%3A00%3A00.000Z&state=firing');
    // A silence link's labels stay with its form on the alerts page, and go nowhere else.
    const linked = at('/alerts?silence.alertname=persisted&silence.hook_name=Stop&state=firing');
    expect(rangeUrl(linked, { kind: 'preset', preset: '7d' })).toBe('/alerts?range=7d&state=firing&silence.alertname=persisted&silence.hook_name=Stop');
    expect(filtersUrl(linked, { team: 'platform' })).toBe('/alerts?range=24h&f.team=platform&state=firing&silence.alertname=persisted&silence.hook_name=Stop');
    expect(rangeUrl(at('/?silence.alertname=persisted'), { kind: 'preset', preset: '7d' })).toBe('/?range=7d');
  });

  it('adds, replaces and removes filters', () => {
    const s = at('/?range=7d&f.team=platform&sort=name');
    const added = addFilter(s.filters, 'user.id', 'alice');
    expect(added).toEqual({ team: 'platform', 'user.id': 'alice' });
    expect(filtersUrl(s, added ?? {})).toBe('/?range=7d&f.team=platform&f.user.id=alice&sort=name');
    expect(addFilter(s.filters, 'team', 'infra')).toEqual({ team: 'infra' });
    expect(addFilter(s.filters, 'team', '')).toBeNull();
    // "(not set)": the empty value, whatever the value box holds.
    expect(addFilter(s.filters, 'team', '', true)).toEqual({ team: '' });
    expect(addFilter(s.filters, 'team', 'infra', true)).toEqual({ team: '' });
    expect(addFilter(s.filters, '', 'x')).toBeNull();
    // A space copied along with the value is not part of it; spaces alone are no value.
    expect(addFilter(s.filters, 'team', ' data ')).toEqual({ team: 'data' });
    expect(addFilter(s.filters, 'team', '   ')).toBeNull();
    expect(filterProblem('team', '   ')).toBe('Spaces alone are no value: type one, or tick (not set) for the events without one.');
    expect(filterProblem('team', '')).toBe('No value: type one, or tick (not set) for the events without one.');
    expect(filterProblem('', 'x')).toBe('Choose a dimension to filter by.');
    expect([filterProblem('team', ' data'), filterProblem('team', '  ', true)]).toEqual([null, null]);
    expect(removeFilter(s.filters, 'team')).toEqual({});
    expect(s.filters).toEqual({ team: 'platform' });
    expect(filtersUrl(s, removeFilter(s.filters, 'team'))).toBe('/?range=7d&sort=name');
  });

  it('reads a custom range in the chosen zone and says what is wrong with a bad one', () => {
    setTimeZone('UTC');
    const now = Date.parse('2026-12-01T12:00:00Z');
    const range = (from: string, to: string): ReturnType<typeof customRangeFrom> => customRangeFrom({ text: from }, { text: to }, now);
    expect(range('29/11/2026 22:00', '30/11/2026 06:30')).toEqual({ range: { kind: 'custom', from: '2026-11-29T22:00:00.000Z', to: '2026-11-30T06:30:00.000Z' } });
    expect(range('30/11/2026', '01/12/2026')).toEqual({ range: { kind: 'custom', from: '2026-11-30T00:00:00.000Z', to: '2026-12-01T00:00:00.000Z' } });
    expect(range('11/30/2026 10:00', '01/12/2026 10:00')).toEqual({ error: 'Write dates as DD/MM/YYYY HH:MM.' });
    expect(range('31/02/2026 10:00', '01/03/2026 10:00')).toEqual({ error: 'Write dates as DD/MM/YYYY HH:MM.' });
    expect(range('30/11/2026 10:00', '30/11/2026 10:00')).toEqual({ error: 'The start must be before the end.' });
    expect(range('30/11/2026 10:00', '29/11/2026 10:00')).toEqual({ error: 'The start must be before the end.' });
    // Longer than the API answers for: refused here, rather than sent to fail at every refresh.
    expect(range('01/01/2020 00:00', '01/12/2026 00:00')).toEqual({ error: 'A range can be at most 400 days long.' });
    expect(range('26/10/2025 23:59', '01/12/2026 00:00')).toEqual({ error: 'A range can be at most 400 days long.' });
    expect(range('28/10/2025 00:00', '02/12/2026 00:00')).toEqual({ range: { kind: 'custom', from: '2025-10-28T00:00:00.000Z', to: '2026-12-02T00:00:00.000Z' } });
    expect(customRunChoices({ text: '29/11/2026 22:00' }, { text: 'soon' }, now)).toEqual({ from: null, to: null });
  });

  it('keeps the instant a field was filled with while its text is as filled, to the millisecond', () => {
    setTimeZone('UTC');
    const now = Date.parse('2026-11-30T08:30:12.345Z');
    const filled = (ms: number): { text: string; filled: { text: string; ms: number } } => ({ text: inputDateTime(ms), filled: { text: inputDateTime(ms), ms } });
    expect(customRangeFrom(filled(now - 86_400_000), filled(now), now)).toEqual({ range: { kind: 'custom', from: '2026-11-29T08:30:12.345Z', to: '2026-11-30T08:30:12.345Z' } });
    // Typed over, the field is read as typed.
    expect(customRangeFrom(filled(now - 86_400_000), { ...filled(now), text: '30/11/2026 08:00' }, now))
      .toEqual({ range: { kind: 'custom', from: '2026-11-29T08:30:12.345Z', to: '2026-11-30T08:00:00.000Z' } });
  });

  it('reads a time typed in the hour the clocks repeat as the run chosen, else the one just passed, or to come', () => {
    process.env['TZ'] = 'Europe/Berlin';
    setTimeZone('local');
    // The clocks go back from 03:00 CEST to 02:00 CET at 01:00 UTC on 25/10/2026: 02:00 to 02:59 happen twice.
    const winter0230 = Date.parse('2026-10-25T01:30:00.000Z');
    const first = (t: string): string => new Date(Date.parse(t) - 3_600_000).toISOString();
    const at = (from: string, to: string, nowMs: number, runs: { from?: number; to?: number } = {}): ReturnType<typeof customRangeFrom> =>
      customRangeFrom({ text: from, run: runs.from }, { text: to, run: runs.to }, nowMs);
    // Until now, offered at 02:30 winter time and left as filled: now, not an hour earlier.
    const untouched = { text: '25/10/2026 02:30', filled: { text: '25/10/2026 02:30', ms: winter0230 } };
    expect(customRangeFrom({ text: '24/10/2026 02:30' }, untouched, winter0230)).toEqual({ range: { kind: 'custom', from: '2026-10-24T00:30:00.000Z', to: '2026-10-25T01:30:00.000Z' } });
    expect(customRunChoices({ text: '24/10/2026 02:30' }, untouched, winter0230)).toEqual({ from: null, to: { offsets: ['UTC+2', 'UTC+1'], run: 1 } });
    // Typed at 02:45 winter time: both runs of 02:10 and 02:20 have passed, the later ones are taken.
    const later = Date.parse('2026-10-25T01:45:00Z');
    expect(at('25/10/2026 02:10', '25/10/2026 02:20', later)).toEqual({ range: { kind: 'custom', from: '2026-10-25T01:10:00.000Z', to: '2026-10-25T01:20:00.000Z' } });
    // 02:50 winter time is to come, 02:20 winter time has passed: the start is the 02:50 that makes a range.
    expect(at('25/10/2026 02:50', '25/10/2026 02:20', later)).toEqual({ range: { kind: 'custom', from: first('2026-10-25T01:50:00Z'), to: '2026-10-25T01:20:00.000Z' } });
    expect(customRunChoices({ text: '25/10/2026 02:50' }, { text: '25/10/2026 02:20' }, later)).toEqual({ from: { offsets: ['UTC+2', 'UTC+1'], run: 0 }, to: { offsets: ['UTC+2', 'UTC+1'], run: 1 } });
    // Typed in summer time, at 02:45 UTC+2: the second run is an hour away, so 02:20 is the first.
    expect(at('24/10/2026 12:00', '25/10/2026 02:20', later - 3_600_000)).toMatchObject({ range: { to: first('2026-10-25T01:20:00Z') } });
    // The run chosen beside the field is the one read, whatever the time now.
    expect(at('25/10/2026 02:10', '25/10/2026 02:20', later, { to: 0 })).toEqual({ range: { kind: 'custom', from: first('2026-10-25T01:10:00Z'), to: first('2026-10-25T01:20:00Z') } });
    expect(at('25/10/2026 02:10', '25/10/2026 02:20', later, { from: 1, to: 0 })).toEqual({ error: 'The start must be before the end.' });
    // Filled in the first run, a field keeps it; chosen otherwise, it takes the other.
    const summer = { text: '25/10/2026 02:30', filled: { text: '25/10/2026 02:30', ms: winter0230 - 3_600_000 } };
    expect(customRangeFrom(summer, { text: '25/10/2026 04:00' }, later)).toMatchObject({ range: { from: first('2026-10-25T01:30:00Z') } });
    expect(customRunChoices(summer, { text: '25/10/2026 04:00' }, later)).toEqual({ from: { offsets: ['UTC+2', 'UTC+1'], run: 0 }, to: null });
    expect(customRangeFrom({ ...summer, run: 1 }, { text: '25/10/2026 04:00' }, later)).toMatchObject({ range: { from: '2026-10-25T01:30:00.000Z' } });
    // Any other hour is read once, with nothing to choose.
    expect(customRunChoices({ text: '25/10/2026 01:30' }, { text: '25/10/2026 03:00' }, later)).toEqual({ from: null, to: null });
  });

  it('starts the custom fields at the URL\'s range, or the last day', () => {
    const now = Date.parse('2026-11-30T08:30:00Z');
    expect(customFieldBounds({ kind: 'preset', preset: '7d' }, now)).toEqual({ from: now - 86_400_000, to: now });
    expect(customFieldBounds({ kind: 'custom', from: '2026-11-01T00:00:00Z', to: '2026-11-02T00:00:00Z' }, now))
      .toEqual({ from: Date.parse('2026-11-01T00:00:00Z'), to: Date.parse('2026-11-02T00:00:00Z') });
  });
});

describe('the rest of the header', () => {
  it('cycles the theme system, dark, light', () => {
    expect(nextTheme('auto')).toBe('dark');
    expect(nextTheme('dark')).toBe('light');
    expect(nextTheme('light')).toBe('auto');
  });

  it('takes the zone from the select, local unless UTC', () => {
    expect(zoneChoice('UTC')).toBe('UTC');
    expect(zoneChoice('local')).toBe('local');
    expect(zoneChoice('Europe/Berlin')).toBe('local');
  });

  it('handles plain left clicks itself and leaves modified clicks to the browser', () => {
    const plain = { defaultPrevented: false, button: 0, metaKey: false, ctrlKey: false, shiftKey: false, altKey: false };
    expect(isPlainClick(plain)).toBe(true);
    expect(isPlainClick({ ...plain, ctrlKey: true })).toBe(false);
    expect(isPlainClick({ ...plain, metaKey: true })).toBe(false);
    expect(isPlainClick({ ...plain, button: 1 })).toBe(false);
    expect(isPlainClick({ ...plain, defaultPrevented: true })).toBe(false);
  });

  it('names the path it has no page for', () => {
    expect(notFoundView('/nope')).toEqual({ title: 'Not found · hookwatch', heading: 'No such page', text: 'hookwatch has no page at /nope. ' });
  });
});

describe('the firing alerts in the header', () => {
  it('counts the firing alerts no silence mutes, as Alertmanager lists them by default, and names the silenced apart', () => {
    const firing = [alert('a'), alert('b', { rule: 'silence' }), alert('c', { hookId: null, rule: 'blind' })];
    expect(firingBadge(firing)).toEqual({ count: 3, text: '3', label: 'Alerts, 3 firing', title: '3 alerts firing' });
    expect(firingBadge([alert('a')])).toEqual({ count: 1, text: '1', label: 'Alerts, 1 firing', title: '1 alert firing' });
    // A silenced one is known and handled: the wall screen does not call for it, and its tooltip still says it fires.
    expect(firingBadge([...firing, alert('d', { silencedBy: ['s1'] })])).toEqual({ count: 3, text: '3', label: 'Alerts, 3 firing', title: '3 alerts firing; 1 firing alert silenced, not counted' });
    // Nothing to call for: no number, the link reads as it always did.
    expect(firingBadge([alert('d', { silencedBy: ['s1'] }), alert('e', { silencedBy: ['s1', 's2'] })])).toEqual({ count: 0, text: '', label: 'Alerts', title: '2 firing alerts silenced, not counted' });
    expect(firingBadge([])).toEqual({ count: 0, text: '', label: 'Alerts', title: null });
    // Pending and resolved alerts are not firing, whatever list they come in.
    expect(firingBadge([alert('p', { state: 'pending' }), alert('r', { state: 'resolved' })]).count).toBe(0);
  });

  it('says the alert state is unknown when the alerts API could not answer, never that none fires', () => {
    expect(firingUnknown('the store is not ready')).toEqual({
      count: null, text: '?', label: 'Alerts, alert state unavailable: the store is not ready', title: 'alert state unavailable: the store is not ready',
    });
  });
});

describe('a new version served while the page is open', () => {
  const noticeAt = Date.parse('2026-11-30T12:00:00Z');
  const quiet = { noticeAt, usedAt: -Infinity, hidden: false, typing: false };

  it('reloads by itself once unused for ten minutes since the notice or the last use, whichever came later', () => {
    expect(IDLE_RELOAD_MS).toBe(600_000);
    // Unused since long before the notice: it shows the notice ten minutes first, for whoever passes by.
    expect(selfReloadDue({ ...quiet, nowMs: noticeAt })).toBe(false);
    expect(selfReloadDue({ ...quiet, nowMs: noticeAt + IDLE_RELOAD_MS - 1 })).toBe(false);
    expect(selfReloadDue({ ...quiet, nowMs: noticeAt + IDLE_RELOAD_MS })).toBe(true);
    // Used a while after the notice: ten minutes from that use.
    const usedAt = noticeAt + 9 * 60_000;
    expect(selfReloadDue({ ...quiet, usedAt, nowMs: noticeAt + IDLE_RELOAD_MS + 60_000 })).toBe(false);
    expect(selfReloadDue({ ...quiet, usedAt, nowMs: usedAt + IDLE_RELOAD_MS })).toBe(true);
  });

  it('reloads a hidden page untouched since the notice at once, one used since after ten minutes', () => {
    expect(selfReloadDue({ ...quiet, hidden: true, usedAt: noticeAt - 60_000, nowMs: noticeAt })).toBe(true);
    expect(selfReloadDue({ ...quiet, hidden: true, usedAt: noticeAt + 1000, nowMs: noticeAt + 2000 })).toBe(false);
    expect(selfReloadDue({ ...quiet, hidden: true, usedAt: noticeAt + 1000, nowMs: noticeAt + 1000 + IDLE_RELOAD_MS })).toBe(true);
  });

  it('never reloads over text typed and not sent, however long unused or hidden', () => {
    expect(selfReloadDue({ ...quiet, typing: true, nowMs: noticeAt + 24 * 3_600_000 })).toBe(false);
    expect(selfReloadDue({ ...quiet, typing: true, hidden: true, nowMs: noticeAt })).toBe(false);
  });

  it('says it reloads by itself, and when', () => {
    expect(UPDATE_NOTICE).toBe('hookwatch was updated since this page was opened. The page reloads by itself to use the new version, on the same view, once unused for 10 minutes (never over a form filled in and not sent).');
  });

  it('remembers the builds the tab reloaded for, and when, so it reloads once for each, however often replicas serve it', () => {
    const t = Date.parse('2026-12-06T07:00:00Z');
    expect(reloadedBuilds(null)).toEqual([]);
    const once = reloadedText(null, 'b0', t);
    expect(reloadedBuilds(once)).toEqual([{ build: 'b0', at: t }]);
    // Served again (replicas on different versions): remembered once, at the latest reload; another build after it.
    expect(reloadedBuilds(reloadedText(once, 'b0', t + 1000))).toEqual([{ build: 'b0', at: t + 1000 }]);
    expect(reloadedBuilds(reloadedText(once, 'b1', t + 1000))).toEqual([{ build: 'b0', at: t }, { build: 'b1', at: t + 1000 }]);
    // A tab open for months keeps the latest twenty.
    let many: string | null = null;
    for (let i = 0; i < 25; i++) many = reloadedText(many, `b${i}`, t + i);
    expect(reloadedBuilds(many)).toEqual(Array.from({ length: 20 }, (_v, i) => ({ build: `b${i + 5}`, at: t + i + 5 })));
    // Something else under the name (the list of names an earlier version wrote among them): nothing remembered.
    for (const other of ['{', '"b0"', 'null', '{"b0":1}', '[1]', '["b0"]', '[["b0", null]]', '[["b0", 1, 2]]']) expect(reloadedBuilds(other), other).toEqual([]);
    expect(reloadedBuilds(reloadedText('["b0"]', 'b2', t))).toEqual([{ build: 'b2', at: t }]);
  });

  it('holds a reload for a build it reloaded for off for an hour after that reload, not for good', () => {
    const t = Date.parse('2026-12-06T07:00:00Z');
    const stored = reloadedText(reloadedText(null, 'b0', t), 'b1', t + 30 * 60_000);
    expect(RELOAD_AGAIN_MS).toBe(3_600_000);
    expect(reloadHeldUntil(stored, 'b0', t + 10 * 60_000)).toBe(t + RELOAD_AGAIN_MS);
    expect(reloadHeldUntil(stored, 'b1', t + 40 * 60_000)).toBe(t + 30 * 60_000 + RELOAD_AGAIN_MS);
    // The hour over (the update long finished, a wall screen nobody reloads): not held, it reloads as for a new build.
    expect(reloadHeldUntil(stored, 'b0', t + RELOAD_AGAIN_MS)).toBeUndefined();
    expect(reloadHeldUntil(stored, 'b2', t)).toBeUndefined();
    expect(reloadHeldUntil(null, 'b0', t)).toBeUndefined();
    // Held, the notice counts from the hour's end: not before it, hidden or not; once unused ten minutes after it.
    const noticeAt = t + RELOAD_AGAIN_MS;
    expect(selfReloadDue({ nowMs: noticeAt - 1, noticeAt, usedAt: -Infinity, hidden: true, typing: false })).toBe(false);
    expect(selfReloadDue({ nowMs: noticeAt, noticeAt, usedAt: -Infinity, hidden: true, typing: false })).toBe(true);
    expect(selfReloadDue({ nowMs: noticeAt + IDLE_RELOAD_MS - 1, noticeAt, usedAt: -Infinity, hidden: false, typing: false })).toBe(false);
    expect(selfReloadDue({ nowMs: noticeAt + IDLE_RELOAD_MS, noticeAt, usedAt: -Infinity, hidden: false, typing: false })).toBe(true);
  });

  it('says when reloading did not bring the new version, and when it tries again by itself', () => {
    expect(UPDATE_AGAIN_NOTICE).toBe('hookwatch was updated since this page was opened, but reloading the page brought back the version it runs: hookwatch runs both versions (an update under way). Reload the page once the update is over to use the new version; left unused, it tries again by itself an hour after the last reload.');
  });
});

describe('a reload, or the way back', () => {
  it('comes back to the view kept for its own URL only, and only when it is a reload or a way back', () => {
    const url = 'http://h/hooks/0123456789abcdef?range=7d';
    const view = { url, x: 0, y: 1234.5, open: [{ scope: '[data-chart="cliff"]', index: 0 }, { scope: '[id="app"]', index: 0 }, { scope: '[data-alert-id="a\\"b\\31 "]', index: 2 }], reloading: false };
    const kept = keptViewText(view);
    expect(keptViewFor(kept, url, 'reload')).toEqual(view);
    // The page reloading itself says so: whatever the browser calls the load (or when it says nothing).
    const self = { ...view, reloading: true };
    expect(keptViewFor(keptViewText(self), url, undefined)).toEqual(self);
    expect(keptViewFor(keptViewText(self), `${url}&f.team=a`, 'reload')).toBeNull();
    // Gone back or forward to: as it was left.
    expect(keptViewFor(kept, url, 'back_forward')).toEqual(view);
    expect(keptViewFor(kept, `${url}&f.team=a`, 'back_forward')).toBeNull();
    // Another view kept, or a link followed: the page opens as usual.
    expect(keptViewFor(kept, 'http://h/hooks/0123456789abcdef?range=24h', 'reload')).toBeNull();
    expect(keptViewFor(kept, url, 'navigate')).toBeNull();
    expect(keptViewFor(kept, url, undefined)).toBeNull();
    // Nothing kept, or something else under the name.
    expect(keptViewFor(null, url, 'reload')).toBeNull();
    for (const other of ['{', '"x"', 'null', JSON.stringify({ ...view, y: 'top' }), JSON.stringify({ ...view, open: [{ scope: 3, index: 0 }] }), JSON.stringify({ ...view, open: [{ scope: '[id="app"]', index: 0.5 }] }),
      // A part named otherwise than the page names it: never handed to querySelector, which would throw.
      ...['[[', '#app', '[id="app"', '[id="a"b"]', '[id="a\\"]', '[onclick="x"]', '[id="app"] details'].map((scope) => JSON.stringify({ ...view, open: [{ scope, index: 0 }] }))]) {
      expect(keptViewFor(other, url, 'reload'), other).toBeNull();
    }
  });
});
