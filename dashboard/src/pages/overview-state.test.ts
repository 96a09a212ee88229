import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FleetSeriesHook, FleetSeriesResponse, FleetSeriesRest, OverviewResponse } from '../../../shared/src/api.ts';
import type { Forecast } from '../../../shared/src/forecast.ts';
import { setTimeZone } from '../format.ts';
import { readState } from '../state.ts';
import { seededRandom } from '../../../collector/test/support/random.ts';
import SEEDED_FLEET_VIEW from '../testdata/fleet-view-seeded.json' with { type: 'json' };
import SEEDED_SPARKLINES from '../testdata/sparklines-seeded.json' with { type: 'json' };
import { BLIND, NEAR, NOW, OK, OVER, PARTIAL, alert, fleet, fleetHook, hook, overview } from '../testdata/api-responses.ts';
import {
  FORECAST_ROWS, ROW_LIMIT, bucketRange, emptyTable, firingByHook, firingLabel, fleetClickUrl, fleetPartial, fleetView, forecastOf, linePointRadii, forecastTodo, headerCells, hookAlertsUrl, hookRow, hookUrl, kpis, readSort,
  persistedSeries, refusalsView, searchOf, searchUrl, setupView, showsSetup, sortHooks, sparkLabel, sparkQuery, sparkViews, tableView, uniqueHooks, versionsView, zoomUrl, type ForecastEntry, type Kpi,
} from './overview-state.ts';

const at = (url: string) => {
  const u = new URL(url, 'http://x');
  return readState({ pathname: u.pathname, search: u.search });
};
const DAY = 86_400_000;
const fit = (daysToCap: number | null, over: Partial<Forecast> = {}): ForecastEntry => ({
  forecast: { slopePerDay: 100, current: 9_000, crossesAtMs: daysToCap === null ? null : NOW + daysToCap * DAY, daysToCap, points: 10, lastMs: NOW, stale: false, ...over },
  days: 10, at: NOW,
});
const names = (hooks: { hookName: string }[]): string[] => hooks.map((h) => h.hookName);

/**
 * A fleet answer of 40 hooks over 12 buckets, most buckets empty, and 3 hooks more summed past its limit: sizes
 * unknown (null largest, size-unknown executions), outputs reported persisted, and executions measured over the
 * cap without a reported count, placed by a seeded generator.
 */
function seededFleet(seed: number): FleetSeriesResponse {
  const rnd = seededRandom(seed);
  const n = 12;
  const pick = <T>(f: (i: number) => T): T[] => Array.from({ length: n }, (_v, i) => f(i));
  const starts = pick((i) => new Date(Date.parse('2026-11-29T06:00:00.000Z') + i * 7_200_000).toISOString());
  const hooks = Array.from({ length: 40 }, (_v, k): FleetSeriesHook => {
    const executions = pick(() => (rnd() < 0.3 ? 1 + Math.floor(rnd() * 4) : 0));
    const sizeUnknownExecutions = executions.map((e) => (e > 0 && rnd() < 0.3 ? 1 : 0));
    const largest = executions.map((e, i) => (e > (sizeUnknownExecutions[i] ?? 0) ? Math.floor(rnd() * 14_000) : null));
    const executionsWithPersisted = largest.map((v) => (v !== null && v > 10_000 ? 1 : 0));
    const outputsPersisted = executionsWithPersisted.map((w) => (w > 0 && rnd() < 0.5 ? 1 + Math.floor(rnd() * 3) : 0));
    return { id: `hook-${k}`, hookEvent: 'Stop', hookName: `Stop:seeded-${k}`, largest, outputsPersisted, executionsWithPersisted, executions, sizeUnknownExecutions };
  });
  const rest: FleetSeriesRest = {
    hooks: 3, hooksWithPersisted: 1, largest: pick((i) => (i % 4 === 1 ? 11_000 : i % 4 === 2 ? 500 : null)), persisted: pick((i) => (i % 4 === 1 ? 2 : 0)),
    measuredOnly: pick((i) => (i % 8 === 1 ? 1 : 0)), executions: pick((i) => (i % 4 === 0 ? 0 : 3)), sizeUnknownExecutions: pick((i) => (i % 4 === 3 ? 3 : 0)),
  };
  return { from: starts[0] ?? '', to: '2026-11-30T06:00:00.000Z', step: 7_200, buckets: starts, ends: [...starts.slice(1), '2026-11-30T06:00:00.000Z'], hooks, rest, total: 43 };
}

const NONE = new Map<string, ForecastEntry>();

beforeEach(() => setTimeZone('UTC'));
afterEach(() => setTimeZone('local'));

describe('sort in the URL', () => {
  it('ranks by risk unless a known column is named, each column in its own first direction', () => {
    expect(readSort(new URLSearchParams(''))).toEqual({ sort: 'risk', dir: 'asc' });
    expect(readSort(new URLSearchParams('sort=persisted'))).toEqual({ sort: 'persisted', dir: 'desc' });
    expect(readSort(new URLSearchParams('sort=name&dir=desc'))).toEqual({ sort: 'name', dir: 'desc' });
    expect(readSort(new URLSearchParams('sort=evil&dir=sideways'))).toEqual({ sort: 'risk', dir: 'asc' });
  });

  it('marks the sorted column and links each header to its next sort, keeping the refresh period', () => {
    const s = at('/?range=7d&f.team=platform&sort=largest&dir=desc&refresh=off');
    const cells = headerCells(s, 'largest', 'desc');
    const largest = cells.find((c) => c.key === 'largest');
    expect(largest).toMatchObject({ ariaSort: 'descending', arrow: ' ▼', url: '/?range=7d&f.team=platform&sort=largest&dir=asc&refresh=off' });
    expect(cells.find((c) => c.key === 'executions')).toMatchObject({ ariaSort: 'none', arrow: '', url: '/?range=7d&f.team=platform&sort=executions&dir=desc&refresh=off' });
    expect(cells.filter((c) => c.url === null).map((c) => c.label)).toEqual(['Largest output over time', 'Commands OK']);
    expect(cells.filter((c) => !c.opt).map((c) => c.label)).toEqual(['Status', 'Hook', 'Persisted', 'Largest output']);
  });
});

describe('hook name search', () => {
  it('lives in the URL\'s name=, without the spaces around it, and rides along with every link the overview draws', () => {
    expect(searchOf(new URLSearchParams('name=%20brief%20'))).toBe('brief');
    expect(searchOf(new URLSearchParams('name=%20'))).toBe('');
    expect(searchOf(new URLSearchParams(''))).toBe('');
    expect(searchUrl({ pathname: '/', search: '?range=7d&sort=name' }, ' Session Start ')).toBe('/?range=7d&sort=name&name=Session+Start');
    expect(searchUrl({ pathname: '/', search: '?range=7d&name=x' }, '  ')).toBe('/?range=7d');
    const s = at('/?range=7d&f.team=platform&name=brief');
    expect(headerCells(s, 'risk', 'asc').find((c) => c.key === 'name')?.url).toBe('/?range=7d&f.team=platform&sort=name&dir=asc&name=brief');
    expect(hookUrl(s, OK.id)).toBe(`/hooks/${OK.id}?range=7d&f.team=platform&name=brief`);
  });

  it('counts the hooks whose name matches, and says so when none does while the range has hooks', () => {
    expect(tableView([OK, NEAR], false, 2, 'o')).toMatchObject({ count: '2 hooks with "o" in the name.', note: expect.stringMatching(/^2 hooks with "o" in the name\. Forecasts/) as unknown });
    const page = Array.from({ length: 1000 }, (_v, i) => hook(i.toString(16).padStart(16, '0'), `Stop:h${i}`));
    expect(tableView(page, false, 1500, 'h').count).toBe('1,000 of 1,500 hooks with "h" in the name (the riskiest).');
    expect(emptyTable(at('/?range=1h&name=zzz'), overview(), NOW, 'zzz')).toEqual({ text: 'No hook in the last hour has "zzz" in its name. ', clearUrl: null, clearSearch: true });
    expect(emptyTable(at('/?range=1h&f.team=a&name=zzz'), overview(), NOW, 'zzz').text).toBe('No hook matching team = \u2068a\u2069 in the last hour has "zzz" in its name. ');
    // No hook at all in the range: the filters or the quiet range are why, not the search.
    expect(emptyTable(at('/?range=1h&f.team=nobody&name=zzz'), overview({ hooks: 0 }), NOW, 'zzz'))
      .toEqual({ text: 'No hook executions match team = \u2068nobody\u2069 in the last hour. ', clearUrl: '/?range=1h&name=zzz' });
  });
});

describe('hooks ranked by risk', () => {
  const hooks = [OVER, NEAR, OK, PARTIAL, BLIND];

  it('puts over first, then near, then unknown (partly unmeasured included), then ok', () => {
    expect(names(sortHooks([OK, PARTIAL, BLIND, NEAR, OVER], 'risk', 'asc', NONE))).toEqual([OVER, NEAR, PARTIAL, BLIND, OK].map((h) => h.hookName));
  });

  it('breaks a tie on status, persisted and headroom with the sooner forecast crossing', () => {
    const a = hook('aaaaaaaaaaaaaaaa', 'A:slow', { headroom: 5_000 });
    const b = hook('bbbbbbbbbbbbbbbb', 'B:fast', { headroom: 5_000 });
    const fits = new Map([[a.id, fit(40)], [b.id, fit(4)]]);
    expect(names(sortHooks([a, b], 'risk', 'asc', fits))).toEqual(['B:fast', 'A:slow']);
    expect(names(sortHooks([a, b], 'risk', 'asc', NONE))).toEqual(['A:slow', 'B:fast']);
  });

  it('sorts unknown sizes last in either direction: unknown is not zero', () => {
    expect(names(sortHooks(hooks, 'largest', 'desc', NONE)).at(-1)).toBe(BLIND.hookName);
    expect(names(sortHooks(hooks, 'largest', 'asc', NONE)).at(-1)).toBe(BLIND.hookName);
    expect(names(sortHooks(hooks, 'headroom', 'asc', NONE))).toEqual([OVER, NEAR, OK, PARTIAL, BLIND].map((h) => h.hookName));
    expect(names(sortHooks(hooks, 'largest', 'desc', NONE))[0]).toBe(OVER.hookName);
  });

  it('sorts by forecast days with unfitted hooks last, and by name and executions', () => {
    const fits = new Map([[OK.id, fit(30)], [NEAR.id, fit(2)]]);
    // Over reads "0 days" (over now); the blind hook has no crossing; PARTIAL is not fitted.
    expect(names(sortHooks(hooks, 'forecast', 'asc', fits)).slice(0, 3)).toEqual([OVER, NEAR, OK].map((h) => h.hookName));
    expect(names(sortHooks(hooks, 'name', 'asc', NONE))).toEqual([...names(hooks)].sort((x, y) => x.localeCompare(y)));
    expect(names(sortHooks(hooks, 'executions', 'desc', NONE))[0]).toBe(PARTIAL.hookName);
  });

  it('fits forecasts for near, ok and partly measured hooks only, the riskiest first, and not again within five minutes', () => {
    const many = Array.from({ length: 30 }, (_v, i) => hook(i.toString(16).padStart(16, '0'), `Stop:h${i}`));
    expect(forecastTodo(many, NONE, NOW)).toHaveLength(FORECAST_ROWS);
    expect(forecastTodo(hooks, NONE, NOW).map((h) => h.id)).toEqual([NEAR.id, OK.id, PARTIAL.id]);
    const fresh = new Map([[NEAR.id, { ...fit(3), at: NOW - 60_000 }], [OK.id, { ...fit(3), at: NOW - 600_000 }]]);
    expect(forecastTodo(hooks, fresh, NOW).map((h) => h.id)).toEqual([OK.id, PARTIAL.id]);
  });
});

describe('fleet line', () => {
  it('draws points on short ranges, and on long ones only where a bucket stands alone between gaps', () => {
    expect(linePointRadii([1, null, 3])).toBe(2);
    const long = Array.from({ length: 50 }, (_v, i) => (i < 10 ? 100 : i === 20 ? 200 : i === 30 || i === 31 ? 300 : null));
    const radii = linePointRadii(long) as number[];
    expect(radii.flatMap((r, i) => (r > 0 ? [i] : []))).toEqual([20]);
    // A bucket alone is the line's only mark there: larger than a point on a short line, so it shows.
    expect(radii[20]).toBe(4);
  });
});

describe('rows', () => {
  it('reads over the cap as over, never as a date, and an unfitted hook as a dash', () => {
    expect(forecastOf(OVER, NONE)?.value).toBe('over the cap now');
    expect(forecastOf(OK, NONE)).toBeUndefined();
    expect(forecastOf(BLIND, NONE)?.value).toBe('unknown');
    expect(forecastOf(NEAR, new Map([[NEAR.id, fit(10)]]))?.value).toBe('10/12/2026');
    // Under the cap in the range beside a 30-day trend past it: "now" only while the range ends now.
    const past = new Map([[NEAR.id, fit(null, { current: 17_500, slopePerDay: 800 })]]);
    expect(forecastOf(NEAR, past)?.value).toBe('under the cap now');
    expect(forecastOf(NEAR, past, true)?.value).toBe('under the cap');
  });

  it('shows headroom below and over the cap, and never a healthy status for partial size data', () => {
    const over = hookRow(OVER, forecastOf(OVER, NONE), NOW);
    expect(over).toMatchObject({ status: 'over', headroom: '500 chars over', headroomTitle: '500 chars over the cap', largest: '10,500 chars', persisted: '1', forecast: 'over the cap now' });
    expect(over).toMatchObject({ largestTitle: '' });
    // Executions without size data are not measured: the largest output is at least, the headroom at most, said why.
    expect(hookRow(PARTIAL, undefined, NOW)).toMatchObject({
      status: 'unknown', largest: 'at least 400 chars', largestTitle: 'at least 400 chars: 17 executions sent no size data',
      headroom: 'at most 9,600 chars', headroomTitle: 'at most 9,600 chars below the cap: 17 executions sent no size data', forecast: '–', forecastTitle: '', executions: '33',
    });
    expect(hookRow({ ...OVER, sizeUnknownExecutions: 2 }, undefined, NOW)).toMatchObject({ headroom: 'at least 500 chars over', headroomTitle: 'at least 500 chars over the cap: 2 executions sent no size data' });
    expect(hookRow({ ...PARTIAL, headroom: 0 }, undefined, NOW)).toMatchObject({ headroom: 'at most 0 chars', headroomTitle: 'at the cap or over it: 17 executions sent no size data' });
    expect(hookRow(BLIND, forecastOf(BLIND, NONE), NOW)).toMatchObject({ status: 'unknown', headroom: 'unknown', headroomTitle: 'unknown', largest: 'unknown' });
    expect(hookRow(OK, undefined, NOW)).toMatchObject({ lastSeen: '3 min ago', lastSeenTitle: '30/11/2026, 08:27' });
  });

  it('counts executions measured over the cap as persisted outputs, at least, when the client reports none', () => {
    const measured = { ...OVER, id: 'measured', hookName: 'SessionStart:measured', outputsPersisted: 0, executionsWithPersisted: 3 };
    expect(hookRow(measured, undefined, NOW)).toMatchObject({ persisted: 'at least 3', persistedTitle: 'at least 3: 3 executions measured over the cap, counted as one output each' });
    expect(hookRow(OVER, undefined, NOW).persistedTitle).toBe('');
    expect(names(sortHooks([OK, measured, OVER], 'persisted', 'desc', NONE))).toEqual([measured, OVER, OK].map((h) => h.hookName));
  });

  it('draws the first rows and offers the rest, with the count in the note', () => {
    const many = Array.from({ length: ROW_LIMIT + 5 }, (_v, i) => hook(i.toString(16).padStart(16, '0'), `Stop:h${i}`));
    const first = tableView(many, false);
    expect(first.shown).toHaveLength(ROW_LIMIT);
    expect(first.showAllLabel).toBe(' Show all 205');
    expect(first.note).toMatch(/^205 hooks\. Forecasts are fitted for the 20 riskiest/);
    expect(tableView(many, true)).toMatchObject({ showAllLabel: null });
    expect(tableView([OK], false)).toMatchObject({ showAllLabel: null, note: expect.stringMatching(/^1 hook\. /) as unknown });
  });

  it('says when only the riskiest page of hooks is loaded, and offers every hook', () => {
    const page = Array.from({ length: 1000 }, (_v, i) => hook(i.toString(16).padStart(16, '0'), `Stop:h${i}`));
    const v = tableView(page, false, 1001);
    expect(v.note).toMatch(/^1,000 of 1,001 hooks \(the riskiest\)\. Forecasts/);
    expect(v.showAllLabel).toBe(' Show all 1,001');
    // Every loaded row drawn is still short of every hook.
    expect(tableView(page, true, 1001)).toMatchObject({ showAllLabel: ' Show all 1,001' });
    expect(tableView(page.slice(0, 3), false, 1001).showAllLabel).toBe(' Show all 1,001');
    expect(tableView([...page, OK], true, 1001)).toMatchObject({ showAllLabel: null, note: expect.stringMatching(/^1,001 hooks\. /) as unknown });
  });

  it('lists a hook that came on two pages once: the ranking moved between the requests', () => {
    const [a, b, c] = ['a', 'b', 'c'].map((x) => hook(x.repeat(16), `Stop:${x}`)) as [ReturnType<typeof hook>, ReturnType<typeof hook>, ReturnType<typeof hook>];
    expect(names(uniqueHooks([[a, b], [{ ...b, executions: 99 }, c]]))).toEqual(['Stop:a', 'Stop:b', 'Stop:c']);
    expect(uniqueHooks([[a, b], [{ ...b, executions: 99 }, c]])[1]).toBe(b);
  });

  it('opens a hook with the overview\'s range and filters, or at a bucket', () => {
    const s = at('/?range=7d&f.team=platform&sort=name');
    // The sort (and a paused or changed refresh) rides along, so the way back finds them.
    expect(hookUrl(s, OK.id)).toBe(`/hooks/${OK.id}?range=7d&f.team=platform&sort=name`);
    expect(hookUrl(at('/?refresh=off&sort=name&dir=asc'), OK.id)).toBe(`/hooks/${OK.id}?range=24h&sort=name&dir=asc&refresh=off`);
    const f = fleet([]);
    expect(bucketRange(f, 1)).toEqual({ kind: 'custom', from: '2026-11-29T12:00:00.000Z', to: '2026-11-29T18:00:00.000Z' });
    expect(bucketRange(f, 9)).toBeUndefined();
    expect(bucketRange(undefined, 0)).toBeUndefined();
    // A range starting and ending inside buckets: the first counts from its start, the last until its end.
    const inside = { ...f, from: '2026-11-29T07:13:00.000Z', to: '2026-11-30T01:30:00.000Z' };
    expect(bucketRange(inside, 0)).toEqual({ kind: 'custom', from: '2026-11-29T07:13:00.000Z', to: '2026-11-29T12:00:00.000Z' });
    expect(bucketRange(inside, 3)).toEqual({ kind: 'custom', from: '2026-11-30T00:00:00.000Z', to: '2026-11-30T01:30:00.000Z' });
    expect(zoomUrl(s, inside, 0, 3)).toBe('/?range=custom&from=2026-11-29T07%3A13%3A00.000Z&to=2026-11-30T01%3A30%3A00.000Z&f.team=platform&sort=name');
    expect(zoomUrl(s, f, 1, 2)).toBe('/?range=custom&from=2026-11-29T12%3A00%3A00.000Z&to=2026-11-30T00%3A00%3A00.000Z&f.team=platform&sort=name');
  });
});

describe('firing alerts on the rows', () => {
  it('names, per hook, the rules of its firing alerts no silence mutes, newest first, each once', () => {
    const byHook = firingByHook([
      alert('s', { rule: 'silence' }),
      alert('p', { rule: 'persisted' }),
      // Another label set of the same rule (a rule with its own labels): the rule is named once.
      alert('p2', { rule: 'persisted', fingerprint: 'fp-other' }),
      alert('o', { rule: 'silence', hookId: OK.id }),
      // Silenced: handled, not called for (the header does not count it either).
      alert('m', { rule: 'headroom', hookId: NEAR.id, silencedBy: ['s1'] }),
      // Of no single hook: counted in the header only.
      alert('b', { rule: 'blind', hookId: null }),
      alert('f', { rule: 'silence', hookId: null, labels: { alertname: 'silence', scope: 'feed' } }),
      alert('r', { rule: 'growth', hookId: BLIND.id, state: 'resolved' }),
      alert('q', { rule: 'growth', hookId: BLIND.id, state: 'pending' }),
    ]);
    expect([...byHook]).toEqual([[OVER.id, ['silence', 'persisted']], [OK.id, ['silence']]]);
    expect(firingLabel(['silence', 'persisted'])).toBe('Firing: silence, persisted');
  });

  it('links a hook\'s marker to the alerts page filtered to the hook, with the overview\'s range, filters and sort', () => {
    expect(hookAlertsUrl(at('/?range=7d&f.team=platform&sort=name'), OVER.id)).toBe(`/alerts?range=7d&f.team=platform&sort=name&hook=${OVER.id}`);
    expect(hookAlertsUrl(at('/'), OVER.id)).toBe(`/alerts?range=24h&hook=${OVER.id}`);
  });
});

describe('fleet figures', () => {
  it('counts statuses as the table shows them and agrees its nouns', () => {
    const k = kpis(overview(), [OVER, NEAR, OK, PARTIAL, BLIND], {}, NOW);
    expect(k.map((x) => [x.id, x.value, x.note])).toEqual([
      ['executions', '81', '81 hook commands run'],
      ['success', '80', '98.8%'],
      ['persisted', 'at least 1', 'at least 1 execution lost output to the cap; 29 executions sent no size data'],
      ['hooks', '5', '1 over · 1 near · 1 ok · 2 unknown'],
      ['size-share', '64.2%', '29 executions without sizes'],
      ['last-event', '3 min ago', '30/11/2026, 08:27'],
    ]);
    // The card keeps counting from the event, not from the last refresh.
    expect(k.at(-1)?.agoOf).toBe('2026-11-30T08:27:00.000Z');
  });

  it('says of the fleet\'s outputs persisted, as of a hook\'s, "at least N" or "none known" when executions sent no size data', () => {
    const persisted = (totals: Partial<OverviewResponse['totals']>, sum: Pick<OverviewResponse, 'persisted' | 'measuredOnly'>): Kpi | undefined =>
      kpis(overview({ totals: { ...overview().totals, ...totals }, ...sum }), [OVER, NEAR, OK, PARTIAL, BLIND], {}, NOW).find((x) => x.id === 'persisted');
    expect(persisted({ outputsPersisted: 0, executionsWithPersisted: 0 }, { persisted: 0, measuredOnly: 0 })).toMatchObject({ value: 'none known', note: 'no execution is known to have lost output to the cap; 29 executions sent no size data' });
    expect(persisted({ outputsPersisted: 0, executionsWithPersisted: 2, sizeUnknownExecutions: 0 }, { persisted: 2, measuredOnly: 2 })).toMatchObject({ value: 'at least 2', note: '2 executions lost output to the cap; 2 executions measured over the cap, counted as one output each' });
    // Every execution measured and reporting its count: exact.
    expect(persisted({ outputsPersisted: 3, executionsWithPersisted: 2, sizeUnknownExecutions: 0 }, { persisted: 3, measuredOnly: 0 })).toMatchObject({ value: '3', note: '2 executions lost output to the cap' });
    // A hook reporting 6 outputs of 3 executions and one measured over the cap twice without a count: the hooks'
    // figures summed (8), not the larger of the fleet's two sums (6), and the reason the count is a lower bound.
    expect(persisted({ outputsPersisted: 6, executionsWithPersisted: 5, sizeUnknownExecutions: 0 }, { persisted: 8, measuredOnly: 2 }))
      .toMatchObject({ value: 'at least 8', note: '5 executions lost output to the cap; 2 executions measured over the cap, counted as one output each' });
  });

  it('counts the statuses of every hook, not of the page loaded, when only the riskiest are loaded', () => {
    const k = kpis(overview({ hooks: 1001, statusCounts: { over: 3, near: 10, ok: 900, unknown: 88 } }), [OVER, NEAR, OK], {}, NOW);
    expect(k.find((x) => x.id === 'hooks')).toMatchObject({ value: '1,001', note: '3 over · 10 near · 900 ok · 88 unknown' });
  });

  it('follows a filter in the last-event card, and says when nothing matches', () => {
    const k = kpis(overview({ lastEventAt: null, totals: { ...overview().totals, numHooks: 0, executions: 0 } }), [], { team: 'nobody' }, NOW);
    expect(k.at(-1)).toEqual({ id: 'last-event', label: 'Last matching event', value: 'none', note: 'nothing matches team = \u2068nobody\u2069' });
    expect(k.find((x) => x.id === 'success')?.note).toBeUndefined();
    expect(showsSetup(overview({ lastEventAt: null }), { team: 'nobody' })).toBe(false);
    expect(showsSetup(overview({ lastEventAt: null }), {})).toBe(true);
    expect(showsSetup(overview(), {})).toBe(false);
  });

  it('names the client versions that send no sizes', () => {
    const v = versionsView(overview());
    expect(v.rows[1]).toEqual({ version: '2.1.250', cells: ['claude-code', '2.1.250', '29', '29', 'missing (older than 2.1.280: upgrade to see delivery)'] });
    expect(v.blind).toBe('Without size data: claude-code 2.1.250');
    expect(versionsView(overview({ clientVersions: [] }))).toEqual({ rows: [], blind: null });
  });

  it('explains an empty table: a filter to remove, or a quiet range', () => {
    expect(emptyTable(at('/?range=1h&f.team=nobody&sort=name'), overview(), NOW))
      .toEqual({ text: 'No hook executions match team = \u2068nobody\u2069 in the last hour. ', clearUrl: '/?range=1h&sort=name' });
    expect(emptyTable(at('/?range=1h'), overview(), NOW))
      .toEqual({ text: 'No hook executions in the last hour; the newest event is stamped 3 min ago. Try a longer range.', clearUrl: null });
  });

  it('stacks the hooks with persisted outputs, groups the rest, and takes the fleet\'s largest per bucket', () => {
    const f = fleet([
      fleetHook(OVER, [null, 2_000, 10_500, null], [0, 0, 1, 0]),
      fleetHook(NEAR, [9_000, 9_100, null, 8_000], [0, 0, 0, 0]),
      fleetHook(OK, [null, null, null, null], [0, 0, 0, 0], [0, 0, 0, 0]),
    ]);
    const v = fleetView(f);
    expect(v.labels).toEqual(['29/11, 06:00', '29/11, 12:00', '29/11, 18:00', '30/11, 00:00']);
    expect(v.shown.map((x) => x.id)).toEqual([OVER.id]);
    expect(v.topIds).toEqual([OVER.id, null]);
    expect(v.restLabel).toBeNull();
    expect(v.largest).toEqual([9_000, 9_100, 10_500, 8_000]);
    expect(v.peak).toBe(10_500);
    expect(v.summary).toBe('1 output persisted across 1 hook, in 1 of 4 buckets; the largest output in the fleet was 10,500 chars.');
    expect(v.tableHeaders).toEqual(['Bucket start', 'Executions', OVER.hookName, 'Other hooks', 'Largest output']);
    expect(v.tableRows[2]).toEqual(['29/11/2026, 18:00', '2', '1', '0', '10,500']);
    expect(fleetView(f, 0)).toMatchObject({ restLabel: 'all hooks', shown: [], restPersisted: [0, 0, 1, 0] });
  });

  it('labels day buckets in the data table by their UTC day, as the axis does, west of UTC too', () => {
    const tz = process.env['TZ'];
    process.env['TZ'] = 'America/Los_Angeles';
    setTimeZone('local');
    try {
      const days = { ...fleet([fleetHook(OVER, [10_500, 2_000], [1, 0])]), step: 86_400, buckets: ['2026-12-02T00:00:00.000Z', '2026-12-03T00:00:00.000Z'], ends: ['2026-12-03T00:00:00.000Z', '2026-12-04T00:00:00.000Z'], from: '2026-12-02T00:00:00.000Z', to: '2026-12-04T00:00:00.000Z' };
      const v = fleetView(days);
      expect(v.labels).toEqual(['02/12', '03/12']);
      expect(v.tableHeaders[0]).toBe('Day (UTC)');
      expect(v.tableRows.map((r) => r[0])).toEqual(['02/12/2026', '03/12/2026']);
      expect(v.partial).toEqual([null, null]);
      // A range from 06:00 until 14:23 UTC on the last day: both days are partial, in UTC as their dates are.
      const cut = fleetView({ ...days, from: '2026-12-02T06:00:00.000Z', to: '2026-12-03T14:23:00.000Z', ends: ['2026-12-03T00:00:00.000Z', '2026-12-03T14:23:00.000Z'] });
      expect(cut.partial).toEqual(['02/12 06:00–24:00 (UTC, partial)', '03/12 00:00–14:23 (UTC, partial)']);
      expect(cut.tableRows.map((r) => r[0])).toEqual(['02/12/2026 06:00–24:00 (UTC, partial)', '03/12/2026 00:00–14:23 (UTC, partial)']);
      // A row's sparkline names them as the chart does.
      expect(fleetPartial({ ...days, from: '2026-12-02T06:00:00.000Z', to: '2026-12-03T14:23:00.000Z', ends: ['2026-12-03T00:00:00.000Z', '2026-12-03T14:23:00.000Z'] })).toEqual(cut.partial);
      expect(sparkLabel(OVER.hookName, fleetHook(OVER, [10_500, 2_000], [1, 0]), [null, '03/12 00:00–14:23 (UTC, partial)']))
        .toBe('Stop:lint-report: largest output per bucket, peak 10,500 chars; 1 bucket with persisted outputs; partial bucket, covering less time than the others: 03/12 00:00–14:23 (UTC, partial)');
    } finally {
      if (tz === undefined) delete process.env['TZ'];
      else process.env['TZ'] = tz;
      setTimeZone('UTC');
    }
  });

  it('adds the hooks past the answer\'s limit to the grouped rest, the executions, the largest output and the summary', () => {
    const f = fleet([fleetHook(OVER, [null, 2_000, 10_500, null], [0, 0, 1, 0])],
      { hooks: 40, hooksWithPersisted: 2, largest: [11_000, null, 3_000, null], persisted: [2, 0, 1, 0], measuredOnly: [0, 0, 0, 0], executions: [5, 0, 3, 0], sizeUnknownExecutions: [0, 0, 0, 0] });
    const v = fleetView(f);
    expect(v.restPersisted).toEqual([2, 0, 1, 0]);
    expect(v.largest).toEqual([11_000, 2_000, 10_500, null]);
    expect(v.summary).toBe('4 outputs persisted across 3 hooks, in 2 of 4 buckets; the largest output in the fleet was 11,000 chars.');
    expect(v.tableRows.map((r) => r[1])).toEqual(['5', '2', '5']);
  });

  it('opens the hook of the bar under the pointer, zooms to the bucket for the grouped bar, and opens nothing on an empty bucket', () => {
    const s = at('/?range=7d&f.team=platform');
    const f = fleet([
      fleetHook(OVER, [null, 2_000, 10_500, 12_000], [0, 0, 1, 2]),
      fleetHook(NEAR, [9_000, 9_100, 11_000, 8_000], [0, 0, 3, 0]),
    ], { hooks: 4, hooksWithPersisted: 1, largest: [null, 12_000, null, null], persisted: [0, 1, 0, 0], measuredOnly: [0, 0, 0, 0], executions: [0, 1, 0, 0], sizeUnknownExecutions: [0, 0, 0, 0] });
    const v = fleetView(f, 2);
    // The second hook's bar, with the first hook's bar of the same bucket below it: the second hook opens.
    expect(fleetClickUrl(s, f, v, [{ datasetIndex: 1, index: 2 }])).toBe(`/hooks/${NEAR.id}?range=custom&from=2026-11-29T18%3A00%3A00.000Z&to=2026-11-30T00%3A00%3A00.000Z&f.team=platform`);
    expect(fleetClickUrl(s, f, v, [{ datasetIndex: 0, index: 3 }])).toBe(`/hooks/${OVER.id}?range=custom&from=2026-11-30T00%3A00%3A00.000Z&to=2026-11-30T06%3A00%3A00.000Z&f.team=platform`);
    // A bar of nothing (zero high) under the pointer is passed over for one with a value.
    expect(fleetClickUrl(s, f, v, [{ datasetIndex: 1, index: 3 }, { datasetIndex: 0, index: 3 }])).toMatch(new RegExp(`^/hooks/${OVER.id}\\?`));
    // The grouped hooks: the overview over that bucket, no single hook.
    expect(fleetClickUrl(s, f, v, [{ datasetIndex: 2, index: 1 }])).toBe(zoomUrl(s, f, 1, 1));
    // Nothing persisted in the bucket, the line, or nothing under the pointer: no page opens.
    expect(fleetClickUrl(s, f, v, [{ datasetIndex: 0, index: 0 }, { datasetIndex: 1, index: 0 }])).toBeUndefined();
    expect(fleetClickUrl(s, f, v, [{ datasetIndex: 3, index: 2 }])).toBeUndefined();
    expect(fleetClickUrl(s, f, v, [])).toBeUndefined();
    // Without a grouped bar, the dataset after the hooks' bars is the line.
    const alone = fleet([fleetHook(OVER, [null, 2_000, 10_500, 12_000], [0, 0, 1, 2])]);
    expect(fleetClickUrl(s, alone, fleetView(alone), [{ datasetIndex: 1, index: 2 }])).toBeUndefined();
  });

  it('counts an execution measured over the cap where the client does not report persisted outputs', () => {
    // A client without num_outputs_persisted: no output count, one execution over the cap in the third bucket.
    const measured = fleetHook(OVER, [null, 2_000, 12_500, null], [0, 0, 0, 0], [0, 2, 2, 0], [0, 0, 1, 0]);
    const v = fleetView(fleet([measured, fleetHook(NEAR, [9_000, 9_100, null, 8_000], [0, 0, 0, 0])]));
    expect(v.shown.map((x) => x.id)).toEqual([OVER.id]);
    expect(v.shownPersisted).toEqual([[0, 0, 1, 0]]);
    // One output at least, and the summary says so and why: the count was not reported.
    expect(v.summary).toBe('At least 1 output persisted across 1 hook, in 1 of 4 buckets (1 execution measured over the cap, counted as one output each); the largest output in the fleet was 12,500 chars.');
    expect(v.tableRows).toContainEqual(['29/11/2026, 18:00', '2', 'at least 1', '0', '12,500']);
    expect(sparkLabel(OVER.hookName, measured)).toBe('Stop:lint-report: largest output per bucket, peak 12,500 chars; 1 bucket with persisted outputs');
    // Where the client reports more outputs than executions over the cap, the reported count stands.
    expect(persistedSeries(fleetHook(OVER, [12_000, 30_000], [1, 3], [1, 1], [1, 1]))).toEqual([1, 3]);
  });

  it('draws a seeded fleet with gaps, unknown sizes and measured-only buckets as it always has', () => {
    // The numbers recorded from the chart as it was computed bucket by bucket, over every hook for each bucket.
    const f = seededFleet(7);
    expect(JSON.parse(JSON.stringify({ top: fleetView(f), noneShown: fleetView(f, 0) }))).toEqual(SEEDED_FLEET_VIEW);
  });

  it('draws the sparklines of a seeded fleet, over a range cutting its first and last buckets, as it always has', () => {
    // What each hook's sparkline draws, recorded as it was worked out for every row drawn; now once per answer.
    const seeded = seededFleet(7);
    const to = '2026-11-30T05:20:00.000Z';
    const f = { ...seeded, from: '2026-11-29T06:40:00.000Z', to, ends: [...seeded.ends.slice(0, -1), to] };
    const views = sparkViews(f);
    const drawn = f.hooks.map((hk) => views(hk.hookName, hk));
    expect(JSON.parse(JSON.stringify({ partial: drawn[0]?.partial, hooks: f.hooks.map((hk, i) => ({ id: hk.id, persisted: drawn[i]?.persisted, label: drawn[i]?.label })) })))
      .toEqual(SEEDED_SPARKLINES);
    for (const v of drawn) expect(v.partial).toEqual(SEEDED_SPARKLINES.partial);
    // Drawn again from the same answer (the forecasts fitted, a sort), a row's sparkline is the one worked out.
    expect(f.hooks.every((hk, i) => views(hk.hookName, hk) === drawn[i])).toBe(true);
  });

  it('says no output was persisted, and keeps unknown buckets unknown', () => {
    const v = fleetView(fleet([fleetHook(BLIND, [null, null, null, null], [0, 0, 0, 0], [3, 0, 0, 0])]));
    expect(v.summary).toBe('No outputs persisted in this range; the largest output in the fleet was unknown against the 10,000 cap.');
    expect(v.tableRows).toEqual([['29/11/2026, 06:00', '3', '0', 'unknown']]);
    expect(v.tableHeaders).toEqual(['Bucket start', 'Executions', 'All hooks', 'Largest output']);
    expect(sparkLabel(BLIND.hookName, fleetHook(BLIND, [null, null], [0, 0]))).toBe('UserPromptSubmit:context: largest output per bucket, peak unknown; 0 buckets with persisted outputs');
    expect(sparkLabel(OVER.hookName, fleetHook(OVER, [2_000, 10_500], [0, 1]))).toBe('Stop:lint-report: largest output per bucket, peak 10,500 chars; 1 bucket with persisted outputs');
  });

  it('says in a sparkline\'s text "at least" of the peak and the buckets with persisted outputs, or that none is known, while executions sent no size data', () => {
    const partly = (largest: (number | null)[], persisted: number[], unknown: number[]) => ({ ...fleetHook(OVER, largest, persisted, unknown.map((u) => u + 1)), sizeUnknownExecutions: unknown });
    expect(sparkLabel(OVER.hookName, partly([400, 300, null], [0, 0, 0], [2, 0, 1])))
      .toBe('Stop:lint-report: largest output per bucket, peak at least 400 chars; no bucket is known to have persisted outputs (3 executions in 2 buckets sent no size data)');
    expect(sparkLabel(OVER.hookName, partly([10_500, 300, 200], [1, 0, 0], [0, 1, 0])))
      .toBe('Stop:lint-report: largest output per bucket, peak at least 10,500 chars; at least 1 bucket with persisted outputs (1 execution in 1 bucket sent no size data)');
    // Executions without size data in a bucket with persisted outputs only: that bucket is counted, the rest known.
    expect(sparkLabel(OVER.hookName, partly([10_500, 300], [1, 0], [2, 0])))
      .toBe('Stop:lint-report: largest output per bucket, peak at least 10,500 chars; 1 bucket with persisted outputs (2 executions in 1 bucket sent no size data)');
    expect(sparkLabel(OVER.hookName, partly([null, null], [0, 0], [1, 1])))
      .toBe('Stop:lint-report: largest output per bucket, peak unknown; no bucket is known to have persisted outputs (2 executions in 2 buckets sent no size data)');
  });

  it('says "at least" of the outputs persisted, or that none is known, while executions in range sent no size data', () => {
    const blind = { ...fleetHook(BLIND, [null, null, null, null], [0, 0, 0, 0], [3, 0, 0, 0]), sizeUnknownExecutions: [3, 0, 0, 0] };
    expect(fleetView(fleet([blind])).summary)
      .toBe('No output is known to have been persisted in this range (3 executions sent no size data); the largest output in the fleet was unknown against the 10,000 cap.');
    const over = fleetHook(OVER, [null, 2_000, 10_500, null], [0, 0, 1, 0]);
    expect(fleetView(fleet([over, blind])).summary)
      .toBe('At least 1 output persisted across 1 hook, in 1 of 4 buckets (3 executions sent no size data); the largest output in the fleet was 10,500 chars.');
    // The table's grouped rest says so of its own buckets, as the hooks table does of the hook.
    expect(fleetView(fleet([over, blind])).tableRows).toEqual([
      ['29/11/2026, 06:00', '3', '0', 'none known', 'unknown'], ['29/11/2026, 12:00', '2', '0', '0', '2,000'], ['29/11/2026, 18:00', '2', '1', '0', '10,500'],
    ]);
    // The hooks past the answer's limit count too.
    const rest = { hooks: 40, hooksWithPersisted: 0, largest: [null, null, null, null], persisted: [0, 0, 0, 0], measuredOnly: [0, 0, 0, 0], executions: [1, 0, 0, 0], sizeUnknownExecutions: [1, 0, 0, 0] };
    expect(fleetView(fleet([over], rest)).summary)
      .toBe('At least 1 output persisted across 1 hook, in 1 of 4 buckets (1 execution sent no size data); the largest output in the fleet was 10,500 chars.');
    expect(fleetView(fleet([over], rest)).tableRows[0]).toEqual(['29/11/2026, 06:00', '1', '0', 'none known', 'unknown']);
    // And so do those of them measured over the cap without a count, though they come summed.
    const measuredRest = { ...rest, hooksWithPersisted: 1, persisted: [0, 2, 0, 0], measuredOnly: [0, 2, 0, 0], executions: [0, 2, 0, 0], sizeUnknownExecutions: [0, 0, 0, 0] };
    expect(fleetView(fleet([over], measuredRest)).summary)
      .toBe('At least 3 outputs persisted across 2 hooks, in 2 of 4 buckets (2 executions measured over the cap, counted as one output each); the largest output in the fleet was 10,500 chars.');
    expect(fleetView(fleet([over], measuredRest)).tableRows[0]).toEqual(['29/11/2026, 12:00', '4', '0', 'at least 2', '2,000']);
  });

  it('asks for the sparklines of rows past the fleet answer by id, over its range and step (its buckets), with the filters', () => {
    expect(sparkQuery(fleet([]), { team: 'platform' }, [OK.id, NEAR.id])).toEqual({
      team: 'platform', from: '2026-11-29T06:00:00.000Z', to: '2026-11-30T06:00:00.000Z', step: '21600', ids: `${OK.id},${NEAR.id}`,
    });
  });
});

describe('before the first event', () => {
  it('gives shell lines for this host and the OTLP/HTTP port the server reports', () => {
    const v = setupView({ protocol: 'http:', hostname: 'hookwatch.internal' }, { otlpHttpPort: 14318 });
    expect(v.lines).toContain('export OTEL_EXPORTER_OTLP_ENDPOINT=http://hookwatch.internal:14318');
    expect(v.lines).toContain('export OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf');
    expect(v.lines.filter((l) => !l.startsWith('#')).every((l) => /^export [A-Z_]+=\S+$/.test(l))).toBe(true);
    expect(v.note).toBe('This hookwatch receives OTLP/HTTP on port 14318. If Claude Code runs on another machine, use this host\'s address as it reaches it.');
  });

  it('uses the scheme the OTLP/HTTP port speaks (otlp.tls), whatever the dashboard\'s page is served over (http.tls)', () => {
    expect(setupView({ protocol: 'https:', hostname: 'hookwatch.internal' }, { otlpHttpPort: 4318, otlpHttpTls: false }).lines).toContain('export OTEL_EXPORTER_OTLP_ENDPOINT=http://hookwatch.internal:4318');
    expect(setupView({ protocol: 'http:', hostname: 'hookwatch.internal' }, { otlpHttpPort: 4318, otlpHttpTls: true }).lines).toContain('export OTEL_EXPORTER_OTLP_ENDPOINT=https://hookwatch.internal:4318');
    expect(setupView({ protocol: 'https:', hostname: 'hookwatch.internal' }, { otlpHttpPort: 4318, otlpHttpTls: true }).lines).toContain('export OTEL_EXPORTER_OTLP_ENDPOINT=https://hookwatch.internal:4318');
  });

  it('sets the bearer header when the receivers require the ingest token, and only then', () => {
    const header = 'export OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer <token>"';
    const v = setupView({ protocol: 'http:', hostname: 'hookwatch.internal' }, { otlpHttpPort: 4318, otlpHttpTls: false, otlpIngestToken: true });
    expect(v.lines).toContain(header);
    expect(v.lines[v.lines.indexOf(header) - 1]).toBe('# hookwatch requires its ingest token, HOOKWATCH_INGEST_TOKEN: put it after Bearer, in place of the placeholder');
    expect(setupView({ protocol: 'http:', hostname: 'hookwatch.internal' }, { otlpHttpPort: 4318, otlpHttpTls: false, otlpIngestToken: false }).lines.join('\n')).not.toContain('OTEL_EXPORTER_OTLP_HEADERS');
  });

  it('under TLS, says in a comment what to set for a certificate from a private CA; over plain HTTP, nothing', () => {
    const caLine = '# if the certificate of hookwatch is from a CA this machine does not trust, also: export OTEL_EXPORTER_OTLP_CERTIFICATE=/path/to/ca.crt';
    const v = setupView({ protocol: 'http:', hostname: 'hookwatch.internal' }, { otlpHttpPort: 4318, otlpHttpTls: true });
    expect(v.lines[v.lines.indexOf('export OTEL_EXPORTER_OTLP_ENDPOINT=https://hookwatch.internal:4318') + 1]).toBe(caLine);
    expect(v.lines.join('\n')).not.toContain('CLIENT');
    expect(setupView({ protocol: 'https:', hostname: 'hookwatch.internal' }, { otlpHttpPort: 4318, otlpHttpTls: false }).lines.join('\n')).not.toContain('CERTIFICATE');
  });

  it('under mutual TLS, sets the client certificate and key, as paths to fill in, and only then', () => {
    const v = setupView({ protocol: 'http:', hostname: 'hookwatch.internal' }, { otlpHttpPort: 4318, otlpHttpTls: true, otlpClientCertificate: true });
    const cert = v.lines.indexOf('export OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=/path/to/client.crt');
    expect(v.lines.slice(cert - 1, cert + 2)).toEqual([
      '# hookwatch requires a client certificate, mutual TLS: put yours and its key in place of these paths',
      'export OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=/path/to/client.crt',
      'export OTEL_EXPORTER_OTLP_CLIENT_KEY=/path/to/client.key',
    ]);
    expect(v.lines).toContain('# if the certificate of hookwatch is from a CA this machine does not trust, also: export OTEL_EXPORTER_OTLP_CERTIFICATE=/path/to/ca.crt');
    expect(v.lines.filter((l) => !l.startsWith('#')).every((l) => /^export [A-Z_]+=\S+$/.test(l))).toBe(true);
    expect(setupView({ protocol: 'http:', hostname: 'hookwatch.internal' }, { otlpHttpPort: 4318, otlpHttpTls: true, otlpClientCertificate: false }).lines.join('\n')).not.toContain('CLIENT');
  });

  it('pasted whole into an interactive shell that does not take # for a comment (zsh\'s default), sets every variable', () => {
    // interactive_comments off: bash reads a comment's words as zsh does unless setopt interactivecomments, so a
    // quote, a parenthesis or a redirection in one would take the lines after it, or the whole paste, with it.
    const v = setupView({ protocol: 'http:', hostname: 'hookwatch.internal' }, { otlpHttpPort: 4318, otlpHttpTls: true, otlpIngestToken: true, otlpClientCertificate: true });
    const set = v.lines.flatMap((l) => /^export ([A-Z_]+)="?(.*?)"?$/.exec(l)?.slice(1, 3) ?? []);
    expect(set).toContain('OTEL_EXPORTER_OTLP_HEADERS');
    const names = set.filter((_x, i) => i % 2 === 0);
    const shell = spawnSync('bash', ['--norc', '--noprofile', '-i'], {
      input: ['shopt -u interactive_comments', ...v.lines, ...names.map((n) => `printf '%s\\n' ${n} "$${n}"`), 'exit', ''].join('\n'),
      encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', HOME: '/nonexistent' }, timeout: 10_000,
    });
    expect(shell.stdout.split('\n').slice(0, -1)).toEqual(set);
  });

  it('falls back to the default port and says where to find the real one', () => {
    const v = setupView({ protocol: 'https:', hostname: '10.0.0.5' }, {});
    expect(v.lines).toContain('export OTEL_EXPORTER_OTLP_ENDPOINT=https://10.0.0.5:4318');
    expect(v.note).toMatch(/^The endpoint is hookwatch's OTLP\/HTTP address \(4318 unless HOOKWATCH_OTLP_HTTP_ADDR/);
  });
});

describe('refusalsView', () => {
  const nowMs = Date.parse('2026-12-01T10:00:00Z');
  it('is null with no refusals, or from a server that does not say', () => {
    expect(refusalsView([], nowMs)).toBeNull();
    expect(refusalsView(undefined, nowMs)).toBeNull();
  });

  it('counts them all, then says each reason with its path, when and the fix', () => {
    const v = refusalsView([
      { transport: 'http', reason: 'not_found', count: 12, lastAt: '2026-12-01T09:59:30Z', lastPath: '/v1/logs/v1/logs', hint: 'OTEL_EXPORTER_OTLP_ENDPOINT is the base URL' },
      { transport: 'grpc', reason: 'unauthenticated', count: 1, lastAt: '2026-12-01T09:50:00Z', lastPath: '/opentelemetry.proto.collector.logs.v1.LogsService/Export' },
      { transport: 'http', reason: 'request_too_slow', count: 2, lastAt: '2026-12-01T09:58:00Z' },
    ], nowMs);
    expect(v).toEqual({
      headline: 'hookwatch refused 15 OTLP requests in the last 15 minutes (as counted by the hookwatch process that answered this page):',
      lines: [
        '12 over OTLP/HTTP: no OTLP endpoint at /v1/logs/v1/logs, the last 30 s ago; OTEL_EXPORTER_OTLP_ENDPOINT is the base URL',
        '1 over OTLP/gRPC: missing or wrong bearer token (last on /opentelemetry.proto.collector.logs.v1.LogsService/Export), the last 10 min ago',
        '2 over OTLP/HTTP: request too slow, the last 2 min ago',
      ],
    });
    expect(refusalsView([{ transport: 'http', reason: 'not_found', count: 1, lastAt: '2026-12-01T09:59:59Z', lastPath: '/' }], nowMs)?.headline).toMatch(/^hookwatch refused 1 OTLP request in/);
  });

  it('says what was wrong with the last body that did not decode', () => {
    expect(refusalsView([
      { transport: 'grpc', reason: 'bad_request', count: 2, lastAt: '2026-12-01T09:59:50Z', lastPath: '/opentelemetry.proto.collector.logs.v1.LogsService/Export', lastProblem: 'index out of range: 7 + 10 > 12' },
    ], nowMs)?.lines).toEqual(['2 over OTLP/gRPC: a body that does not decode (last on /opentelemetry.proto.collector.logs.v1.LogsService/Export), the last 10 s ago: index out of range: 7 + 10 > 12']);
  });

  it('says requests their clients gave up on, and those that timed out, apart from the refusals: hookwatch refused neither', () => {
    const aborted = { transport: 'http', reason: 'client_aborted', count: 3, lastAt: '2026-12-01T09:59:00Z', lastPath: '/v1/logs' } as const;
    const timedOut = { transport: 'grpc', reason: 'request_timeout', count: 1, lastAt: '2026-12-01T09:58:00Z', lastPath: '/opentelemetry.proto.collector.logs.v1.LogsService/Export' } as const;
    const notFound = { transport: 'http', reason: 'not_found', count: 2, lastAt: '2026-12-01T09:59:30Z', lastPath: '/v1/log' } as const;
    expect(refusalsView([aborted, timedOut], nowMs)).toEqual({
      headline: '4 OTLP requests did not arrive whole in the last 15 minutes (as counted by the hookwatch process that answered this page):',
      lines: [
        '3 over OTLP/HTTP: the client gave up before sending the whole request (last on /v1/logs), the last 1 min ago',
        '1 over OTLP/gRPC: timed out, not received whole within otlp.requestTimeout (last on /opentelemetry.proto.collector.logs.v1.LogsService/Export), the last 2 min ago',
      ],
    });
    expect(refusalsView([aborted, notFound], nowMs)?.headline).toBe('hookwatch refused 2 OTLP requests, and 3 more did not arrive whole, in the last 15 minutes (as counted by the hookwatch process that answered this page):');
    expect(refusalsView([{ ...aborted, count: 1 }], nowMs)?.headline).toMatch(/^1 OTLP request did not arrive whole in the last 15 minutes/);
    expect(refusalsView([notFound, { ...timedOut, count: 1 }], nowMs)?.headline).toMatch(/^hookwatch refused 2 OTLP requests, and 1 more did not arrive whole, in the last/);
  });
});
