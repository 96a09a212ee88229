import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BreakdownResponse, SeriesBucket, SeriesResponse } from '../../../shared/src/api.ts';
import { forecastFrom, forecastReading } from '../forecast.ts';
import { bucketLabel, setTimeZone, statusTitle } from '../format.ts';
import { readState } from '../state.ts';
import { BLIND, NEAR, NOW, OK, OVER, PARTIAL, alert, bucket, counters, dailySeriesOf } from '../testdata/api-responses.ts';
import {
  alertBands, alertRows, backUrl, breakdownBy, breakdownCut, breakdownRows, breakdownUrl, cliffView, drillUrl, curveRows, curveSummary, deliveryView, persistedKnown,
  commandRows, dayTicks, dimensionOptions, facts, filterEmpty, followQueries, growthCovers, growthRows, growthUnmeasured, guardTrimsView, hookIdOf, kindsIn, noSuchHook, observedSizes, subtitle, unfilteredPanelNote, zoomUrl,
  type Fact,
} from './hook-state.ts';

const at = (url: string) => {
  const u = new URL(url, 'http://x');
  return readState({ pathname: u.pathname, search: u.search });
};
const iso = (ms: number): string => new Date(ms).toISOString();
const HOUR = 3_600_000;

/** Four hourly buckets of the over-the-cap hook: quiet, measured, over the cap, old clients only. */
const series: SeriesResponse = {
  hook: { id: OVER.id, hookEvent: OVER.hookEvent, hookName: OVER.hookName },
  from: '2026-11-30T04:30:00.000Z', to: '2026-11-30T08:30:00.000Z', step: 3600,
  buckets: [
    bucket('2026-11-30T04:00:00.000Z', { ...counters({ executions: 0, numHooks: 0, success: 0 }), status: null, maxChars: { additionalContext: null, stdout: null, systemMessage: null, initialUserMessage: null } }),
    bucket('2026-11-30T05:00:00.000Z', { maxChars: { additionalContext: 0, stdout: 4_000, systemMessage: null, initialUserMessage: null } }),
    bucket('2026-11-30T06:00:00.000Z', {
      status: 'over', outputsPersisted: 2, executionsWithPersisted: 1, success: 12,
      maxChars: { additionalContext: 0, stdout: 10_500, systemMessage: null, initialUserMessage: null },
    }),
    bucket('2026-11-30T07:00:00.000Z', {
      status: null, executions: 3, sizeUnknownExecutions: 3, outputsPersisted: 1, executionsWithPersisted: 1, success: 3,
      maxChars: { additionalContext: null, stdout: null, systemMessage: null, initialUserMessage: null },
    }),
  ],
};

beforeEach(() => setTimeZone('UTC'));
afterEach(() => setTimeZone('local'));

describe('the hook page in the URL', () => {
  it('reads the hook and the breakdown, and keeps the range, filters and page parameters in its links', () => {
    const s = at(`/hooks/${OVER.id}?range=7d&f.team=platform&by=team&sort=name`);
    expect(hookIdOf(s)).toBe(OVER.id);
    expect(hookIdOf(at('/alerts'))).toBe('');
    expect(breakdownBy(s.params)).toBe('team');
    expect(breakdownBy(new URLSearchParams(''))).toBe('user.id');
    expect(breakdownUrl(s, OVER.id, 'session.id')).toBe(`/hooks/${OVER.id}?range=7d&f.team=platform&sort=name&by=session.id`);
    expect(backUrl(s)).toBe('/?range=7d&f.team=platform&sort=name&by=team');
    expect(dimensionOptions(['service.version', 'user.id', 'team'], 'team')).toEqual([{ value: 'user.id', selected: false }, { value: 'team', selected: true }]);
  });

  it('asks every later figure over the range the first answer resolved', () => {
    const s = at(`/hooks/${OVER.id}?range=24h&f.team=platform&by=team`);
    const q = followQueries(s, { from: '2026-11-29T08:30:00.000Z', to: '2026-11-30T08:30:00.000Z' }, 'team');
    expect(q.range).toEqual({ from: '2026-11-29T08:30:00.000Z', to: '2026-11-30T08:30:00.000Z', team: 'platform' });
    expect(q.series).toEqual({ ...q.range, step: '1800' });
    expect(q.versions).toEqual({ ...q.range, dimension: 'service.version' });
    expect(q.dimension).toEqual({ ...q.range, dimension: 'team' });
    expect(q.commands).toEqual({ from: '2026-11-29T08:30:00.000Z', to: '2026-11-30T08:30:00.000Z' });
    expect(q.guardTrims).toEqual({ ...q.commands, step: '1800' });
  });

  it('zooms to the dragged buckets', () => {
    const s = at(`/hooks/${OVER.id}?by=team`);
    expect(zoomUrl(s, OVER.id, series, 1, 2)).toBe(`/hooks/${OVER.id}?range=custom&from=2026-11-30T05%3A00%3A00.000Z&to=2026-11-30T07%3A00%3A00.000Z&by=team`);
    expect(zoomUrl(s, OVER.id, undefined, 1, 2)).toBeUndefined();
    expect(zoomUrl(s, OVER.id, series, 1, 9)).toBeUndefined();
    // The first bucket counts from the range's start (04:30), not its own (04:00): the zoom shows what it drew.
    expect(zoomUrl(s, OVER.id, series, 0, 1)).toBe(`/hooks/${OVER.id}?range=custom&from=2026-11-30T04%3A30%3A00.000Z&to=2026-11-30T06%3A00%3A00.000Z&by=team`);
    expect(zoomUrl(s, OVER.id, { ...series, to: '2026-11-30T07:45:00.000Z' }, 2, 3)).toBe(`/hooks/${OVER.id}?range=custom&from=2026-11-30T06%3A00%3A00.000Z&to=2026-11-30T07%3A45%3A00.000Z&by=team`);
  });

  it('names the bucket width and the hook that is not there', () => {
    expect(subtitle(OVER, at('/'), 1800)).toBe('Stop · last 24 hours · buckets of 30 min');
    expect(subtitle(OVER, at('/?range=7d'), 10_800)).toBe('Stop · last 7 days · buckets of 3 h');
    expect(noSuchHook('0000000000000000')).toBe('hookwatch has no hook with id 0000000000000000. It may have been pruned by retention.');
  });
});

describe('key figures', () => {
  it('says over the cap, by how much, and that the largest output is an upper bound where an execution ran more than one command', () => {
    const f = facts(OVER, forecastReading(null, { status: 'over' }));
    expect(f.map((x) => [x.id, x.value])).toEqual([
      ['executions', '12'], ['persisted', '1'], ['largest', '10,500 chars'], ['headroom', '500 chars over the cap'], ['forecast', 'over the cap now'], ['size-unknown', '0'],
    ]);
    expect(f.find((x) => x.id === 'size-unknown')?.note).toBeNull();
    // Each of its 12 executions ran one command: the size is its output's, said plainly.
    expect(f.find((x) => x.id === 'largest')?.note).toBeNull();
    const summed = facts({ ...OVER, numHooks: 13 }, forecastReading(null, { status: 'over' }));
    expect(summed.find((x) => x.id === 'largest')?.note).toBe('upper bound: Claude Code reports sums over the hook commands of one execution');
    // One ran two commands and one did not say how many: 12 commands for 12 executions, and still a sum.
    const uncounted = facts({ ...OVER, sizesMaySumExecutions: 2 }, forecastReading(null, { status: 'over' }));
    expect(uncounted.find((x) => x.id === 'largest')?.note).toBe('upper bound: Claude Code reports sums over the hook commands of one execution');
  });

  it('keeps unknown sizes unknown and says how much was not measured', () => {
    const blind = facts(BLIND, forecastReading(null, { status: 'unknown' }));
    // An unknown size is no bound of anything: its note says why it is unknown, not "upper bound".
    expect(blind.find((x) => x.id === 'largest')).toMatchObject({ value: 'unknown', note: 'no execution in this range sent size data' });
    expect(blind.find((x) => x.id === 'headroom')?.value).toBe('unknown');
    expect(blind.find((x) => x.id === 'forecast')).toMatchObject({ value: 'unknown', note: 'no size data' });
    // Unknown is not zero: no persisted output is known of executions that sent no size data.
    expect(blind.find((x) => x.id === 'persisted')).toMatchObject({ value: 'none known', note: '12 executions sent no size data' });
    const partial = facts(PARTIAL, forecastReading(null, { status: 'unknown', latest: 400, days: 1 }));
    expect(partial.find((x) => x.id === 'size-unknown')).toEqual({ id: 'size-unknown', label: 'Without size data', value: '17 of 33', note: 'executions from clients older than 2.1.280: not measured' });
    // Partly measured: short of days for a forecast, not without data; the headroom says what it comes from.
    expect(partial.find((x) => x.id === 'forecast')).toMatchObject({ value: 'not enough data', note: '1 day with size data; needs 3' });
    expect(partial.find((x) => x.id === 'headroom')).toMatchObject({ value: 'at most 9,600 chars below the cap', note: 'from the 16 measured executions of 33' });
    // The measured figures are bounds of the hook's: the largest at least, the headroom at most (past the cap, at least over).
    expect(partial.find((x) => x.id === 'largest')).toMatchObject({ value: 'at least 400 chars', note: 'from the 16 measured executions of 33' });
    const partlySummed = facts({ ...PARTIAL, numHooks: 34 }, forecastReading(null, { status: 'unknown', latest: 400, days: 1 }));
    expect(partlySummed.find((x) => x.id === 'largest')).toMatchObject({ value: 'at least 400 chars', note: 'from the 16 measured executions of 33; an upper bound of each: Claude Code reports sums over the hook commands of one execution' });
    const over = (h: number): Fact | undefined => facts({ ...OVER, headroom: h, sizeUnknownExecutions: 2 }, forecastReading(null, { status: 'unknown' })).find((x) => x.id === 'headroom');
    expect(over(-500)?.value).toBe('at least 500 chars over the cap');
    expect(over(0)?.value).toBe('at the cap or over it');
    expect(blind.find((x) => x.id === 'headroom')?.note).toBe('no execution in this range sent size data');
    expect(facts(OVER, forecastReading(null, { status: 'over' })).find((x) => x.id === 'headroom')?.note).toBeNull();
  });
});

describe('charts\' numbers', () => {
  it('draws only the kinds used, marks persisted buckets (on the cap when unmeasured), and keeps unknown apart from zero', () => {
    const v = cliffView(series);
    expect(v.kinds).toEqual(['stdout']);
    expect(v.persisted).toEqual([null, null, 10_500, 10_000]);
    expect(v.peak).toBe(10_500);
    // A bucket of executions without size data may have lost output unseen: the count is a lower bound, said so.
    expect(v.summary).toBe('Largest output at least 10,500 chars against the 10,000 cap; at least 2 of 4 buckets had persisted outputs (1 bucket holds executions that sent no size data).');
    const measured = { ...series, buckets: series.buckets.slice(0, 3) };
    expect(cliffView(measured).summary).toBe('Largest output 10,500 chars against the 10,000 cap; 1 of 3 buckets had persisted outputs.');
    const quiet = { ...series, buckets: series.buckets.slice(1, 2).map((b) => ({ ...b, executions: 14, sizeUnknownExecutions: 2 })) };
    expect(cliffView(quiet).summary).toBe('Largest output at least 4,000 chars against the 10,000 cap; no bucket is known to have had persisted outputs (1 bucket holds executions that sent no size data).');
    // Its size cells as the summary gives the largest: at least what was measured in a bucket of unmeasured executions.
    expect(cliffView(quiet).rows).toEqual([['30/11/2026, 05:00', 'at least 4,000', 'none known']]);
    expect(v.headers).toEqual(['Bucket start', 'stdout', 'Outputs persisted']);
    // A bucket's persisted outputs read as the delivery chart's table gives them: "at least" where a lower bound.
    expect(v.rows).toEqual([['30/11/2026, 05:00', '4,000', '0'], ['30/11/2026, 06:00', '10,500', '2'], ['30/11/2026, 07:00', 'unknown', 'at least 1']]);
    expect(kindsIn([])).toEqual(['additionalContext']);
  });

  it('says there is no size data rather than drawing zeros', () => {
    const blind = { ...series, buckets: series.buckets.slice(3) };
    expect(cliffView(blind).summary).toBe('No size data in this range.');
    expect(cliffView(blind).peak).toBeNull();
    expect(curveSummary(BLIND)).toBe('No size data in this range: delivery cannot be measured (client older than 2.1.280).');
    // Started, never completed (a blocking hook in -p mode, one killed): not an old client's fault.
    const startsOnly = { ...BLIND, executions: 0, starts: 3, sizeUnknownExecutions: 0, maxChars: { stdout: null, additionalContext: null, systemMessage: null, initialUserMessage: null } };
    expect(curveSummary(startsOnly)).toBe('3 starts and no execution completed in this range: nothing was delivered to measure. A hook that starts and never completes was blocked, killed or timed out.');
    expect(facts(startsOnly, forecastReading(null, { status: 'unknown' }))[0]).toMatchObject({ id: 'executions', value: '0', note: '3 starts: 3 without a completion in this range' });
    expect(statusTitle({ status: 'unknown', executions: 0, sizeUnknownExecutions: 0, starts: 3 })).toBe('no execution completed in this range, only starts: nothing was delivered to measure');
    expect(statusTitle({ status: 'unknown', executions: 12, sizeUnknownExecutions: 12, starts: 12 })).toBe('no size data (client older than 2.1.280): not measurable, never assumed healthy');
  });

  it('says a range without executions has none, and when the hook was last seen, blaming no client', () => {
    const quiet = { ...BLIND, executions: 0, starts: 0, numHooks: 0, success: 0, sizeUnknownExecutions: 0, lastSeen: '2026-11-29T06:10:00.000Z', maxChars: { stdout: null, additionalContext: null, systemMessage: null, initialUserMessage: null } };
    expect(curveSummary(quiet)).toBe('No executions in this range: nothing to measure. The hook was last seen 29/11/2026, 06:10.');
    expect(statusTitle(quiet)).toBe('no executions in this range: nothing to measure');
    const empty = { ...series, buckets: series.buckets.map((b) => ({ ...b, ...counters({ executions: 0, starts: 0, maxChars: { stdout: null, additionalContext: null, systemMessage: null, initialUserMessage: null } }) })) };
    expect(cliffView(empty).summary).toBe('No executions in this range.');
    // The forecast reads the 30 days before the range's end: days with sizes there are short of days, not without data.
    const some = facts(quiet, forecastReading(null, { status: 'unknown', latest: null, days: 1, quietSince: quiet.lastSeen }));
    expect(some.find((x) => x.id === 'forecast')).toMatchObject({ value: 'not enough data', note: '1 day with size data; needs 3' });
    expect(some.find((x) => x.id === 'executions')).toMatchObject({ value: '0', note: 'none in this range; last seen 29/11/2026, 06:10' });
    const none = forecastReading(null, { status: 'unknown', latest: null, days: 0, quietSince: quiet.lastSeen });
    expect(none).toMatchObject({ value: 'unknown', note: 'no executions in this range' });
    expect(none.sentence).toBe('No executions in this range (last seen 29/11/2026, 06:10) nor size data in the 30 days before its end: no forecast.');
    for (const text of [curveSummary(quiet), statusTitle(quiet), none.sentence, none.note ?? '']) expect(text).not.toMatch(/client|2\.1\.280/);
  });

  it('counts success against persisted outputs with agreeing verbs', () => {
    // The last bucket's executions sent no size data: what they lost is not known, so the count is a lower bound.
    expect(deliveryView(series).summary).toBe('27 hook commands reported success; at least 3 outputs were persisted instead of delivered (3 executions sent no size data).');
    const sized = { ...series, buckets: series.buckets.slice(0, 3) };
    expect(deliveryView(sized).summary).toBe('24 hook commands reported success; 2 outputs were persisted instead of delivered.');
    const one = { ...series, buckets: [series.buckets[2] ?? bucket('x')].map((b) => ({ ...b, success: 1, outputsPersisted: 1 })) };
    expect(deliveryView(one).summary).toBe('1 hook command reported success; 1 output was persisted instead of delivered.');
    expect(deliveryView(series).rows[0]).toEqual(['30/11/2026, 05:00', '12', '12', '0', '0', '0']);
  });

  it('says a persisted count is a lower bound where executions sent no size data, and why', () => {
    expect(deliveryView(series).rows[2]).toEqual(['30/11/2026, 07:00', '3', '3', 'at least 1', '1', '3']);
    const none = { ...series, buckets: series.buckets.map((b, i) => (i === 1 ? { ...b, sizeUnknownExecutions: 1 } : { ...b, outputsPersisted: 0, executionsWithPersisted: 0, sizeUnknownExecutions: 0 })) };
    expect(deliveryView(none).summary).toBe('27 hook commands reported success; no output is known to have been persisted instead of delivered (1 execution sent no size data).');
    expect(deliveryView(none).rows[0]).toEqual(['30/11/2026, 05:00', '12', '12', 'none known', '0', '1']);
    expect(persistedKnown({ outputsPersisted: 3, executionsWithPersisted: 2, sizeUnknownExecutions: 0 })).toEqual({ count: 3, text: '3', why: null });
    expect(persistedKnown({ outputsPersisted: 1, executionsWithPersisted: 2, sizeUnknownExecutions: 4 }))
      .toEqual({ count: 2, text: 'at least 2', why: '4 executions sent no size data; 2 executions measured over the cap, counted as one output each' });
  });

  it('counts executions measured over the cap as persisted outputs, at least, when the client reports none', () => {
    const measured = { ...series, buckets: series.buckets.map((b, i) => (i === 2 ? { ...b, outputsPersisted: 0, executionsWithPersisted: 2 } : b)) };
    expect(cliffView(measured).persisted[2]).toBe(10_500);
    expect(cliffView(measured).rows[1]).toEqual(['30/11/2026, 06:00', '10,500', 'at least 2']);
    expect(deliveryView(measured).summary).toBe('27 hook commands reported success; at least 3 outputs were persisted instead of delivered (3 executions sent no size data; 2 executions measured over the cap, counted as one output each).');
    expect(deliveryView(measured).rows[1]).toEqual(['30/11/2026, 06:00', '12', '12', 'at least 2', '2', '0']);
    const hk = { ...OVER, outputsPersisted: 0, executionsWithPersisted: 4 };
    expect(facts(hk, forecastReading(null, { status: 'over' })).find((x) => x.id === 'persisted')).toMatchObject({ value: 'at least 4', note: '4 executions measured over the cap, counted as one output each' });
  });

  it('places observed sizes on the cliff: what the model saw and what it lost', () => {
    expect(observedSizes(series)).toEqual([{ kind: 'stdout', sent: 4_000, delivered: 4_000 }, { kind: 'stdout', sent: 10_500, delivered: 2_000 }]);
    expect(curveRows(observedSizes(series))).toEqual([['stdout', '4,000', '4,000', '0'], ['stdout', '10,500', '2,000', '8,500']]);
    expect(curveSummary(OVER)).toBe('Largest output 10,500 chars: the model saw about 2,000 chars, losing 8,500 chars (81.0%).');
    // A bound, not one string's size: two commands' outputs summed, or stdout around a JSON field over the cap.
    const twoCommands = { ...OVER, maxChars: { ...OVER.maxChars, stdout: 20_000 }, maxCharsLowerBound: { ...OVER.maxCharsLowerBound, stdout: 10_000 } };
    expect(curveSummary(twoCommands)).toBe('Largest output up to 20,000 chars (summed over the hook\'s commands, or stdout with the JSON around it): a string over the 10,000 cap reaches the model as a ~2,000-character preview, so up to 18,000 chars (90.0%) was lost.');
    const jsonAround = { ...OVER, maxChars: { ...OVER.maxChars, stdout: 12_578, additionalContext: 12_000 }, maxCharsLowerBound: { ...OVER.maxCharsLowerBound, stdout: 12_578, additionalContext: 12_000 } };
    // The JSON field inside is measured alone: its size is the one the summary states.
    expect(curveSummary(jsonAround)).toBe('Largest string measured alone 12,000 chars (additionalContext): the model saw about 2,000 chars, losing 10,000 chars (83.3%). The larger 12,578 chars is a bound (summed over the hook\'s commands, or stdout with the JSON around it).');
    expect(curveSummary(NEAR)).toBe('Largest output 9,100 chars: delivered whole, 900 chars of headroom.');
    // Past the cap with nothing persisted (two commands of 6,000 summed, or stdout with the JSON around a
    // 10,000-character context): an upper bound, delivered whole, never "the model saw about 2,000".
    const summed = { ...NEAR, status: 'near' as const, outputsPersisted: 0, executionsWithPersisted: 0, maxChars: { ...NEAR.maxChars, additionalContext: 12_000 } };
    expect(curveSummary(summed)).toBe('Largest output 12,000 chars, past the 10,000 cap, but nothing was persisted: the size is an upper bound (summed over the hook\'s commands, stdout with the JSON around it), and every string arrived whole.');
    const unpersisted = { ...series, buckets: series.buckets.map((b) => ({ ...b, outputsPersisted: 0, executionsWithPersisted: 0 })) };
    expect(observedSizes(unpersisted)).toEqual([{ kind: 'stdout', sent: 4_000, delivered: 4_000 }, { kind: 'stdout', sent: 10_500, delivered: 10_500 }]);
    expect(curveRows(observedSizes(unpersisted))[1]).toEqual(['stdout', '10,500', '10,500', '0']);
    expect(curveSummary({ ...OK, maxChars: { ...OK.maxChars, additionalContext: 10_000, stdout: 0 } })).toBe('Largest output 10,000 chars: delivered whole, 0 chars of headroom.');
    // Executions without size data are not on the cliff: never said to have arrived whole, the headroom at most.
    expect(curveSummary(PARTIAL)).toBe('Largest output 400 chars: delivered whole, at most 9,600 chars of headroom. 17 of 33 executions sent no size data: not measured, so not known to have arrived whole.');
    expect(curveSummary({ ...summed, sizeUnknownExecutions: 2 })).toBe('Largest output 12,000 chars, past the 10,000 cap, but no measured output was persisted: the size is an upper bound (summed over the hook\'s commands, stdout with the JSON around it), and every measured string arrived whole. 2 of 12 executions sent no size data: not measured, so not known to have arrived whole.');
    expect(curveSummary({ ...OVER, sizeUnknownExecutions: 1 })).toMatch(/losing 8,500 chars \(81\.0%\)\. 1 of \d+ executions sent no size data: not measured, so not known to have arrived whole\.$/);
    expect(growthRows([{ t: Date.parse('2026-11-28T00:00:00Z'), value: 9_000 }])).toEqual([['28/11/2026', '9,000']]);
    // Days without size data are not in the trend: the summary says how many executions, and of the latest days.
    const daily = dailySeriesOf(OK, [{ day: '2026-11-26', largest: 5_000 }, { day: '2026-11-27', largest: 6_000 }, { day: '2026-11-28', largest: 7_000 }, { day: '2026-11-29', largest: null }, { day: '2026-11-30', largest: null, executions: 2 }]);
    daily.buckets[1] = { ...daily.buckets[1] as SeriesBucket, sizeUnknownExecutions: 1 };
    const pts = forecastFrom(daily).points;
    expect(growthUnmeasured(daily, pts)).toEqual({ sentence: '6 of 20 executions in these 30 days sent no size data: not measured, so not in the trend. None was measured on the latest 2 days the hook ran.', partly: [false, true, false] });
    expect(growthRows(pts, [], growthUnmeasured(daily, pts).partly).map((r) => r[1])).toEqual(['5,000', 'at least 6,000', '7,000']);
    const measured = dailySeriesOf(OK, [{ day: '2026-11-29', largest: 5_000 }, { day: '2026-11-30', largest: 6_000 }]);
    expect(growthUnmeasured(measured, forecastFrom(measured).points)).toEqual({ sentence: '', partly: [false, false] });
    // West of UTC a day bucket starts the evening before: still labelled with its own (UTC) date.
    const tz = process.env['TZ'];
    process.env['TZ'] = 'America/New_York';
    setTimeZone('local');
    try {
      expect(new Date(Date.parse('2026-11-30T00:00:00Z')).getDate()).toBe(29);
      expect(growthRows([{ t: Date.parse('2026-11-30T00:00:00Z'), value: 12_578 }])).toEqual([['30/11/2026', '12,578']]);
      expect(bucketLabel('2026-11-30T00:00:00.000Z', 86_400)).toBe('30/11');
      // The data tables under the charts give day buckets the date their axis label has.
      const daily: SeriesResponse = {
        ...series, from: '2026-11-30T00:00:00.000Z', to: '2026-12-01T00:00:00.000Z', step: 86_400,
        buckets: [bucket('2026-11-30T00:00:00.000Z', { end: '2026-12-01T00:00:00.000Z', maxChars: { additionalContext: 9_000, stdout: 10, systemMessage: null, initialUserMessage: null } })],
      };
      expect(cliffView(daily).headers[0]).toBe('Day (UTC)');
      expect(cliffView(daily).rows[0]?.[0]).toBe('30/11/2026');
      expect(deliveryView(daily).headers[0]).toBe('Day (UTC)');
      expect(deliveryView(daily).rows[0]?.[0]).toBe('30/11/2026');
      // A day the range cuts says what it covers, in UTC as its date is.
      const cut = { ...daily, to: '2026-11-30T08:30:00.000Z', buckets: daily.buckets.map((b) => ({ ...b, end: '2026-11-30T08:30:00.000Z' })) };
      expect(cliffView(cut).rows[0]?.[0]).toBe('30/11/2026 00:00–08:30 (UTC, partial)');
      // So does the growth chart's newest day, found by its day past days without size data (no point).
      const days: SeriesResponse = {
        ...cut, from: '2026-11-28T08:30:00.000Z', buckets: [
          bucket('2026-11-28T00:00:00.000Z', { end: '2026-11-29T00:00:00.000Z', maxChars: { additionalContext: 8_000, stdout: null, systemMessage: null, initialUserMessage: null } }),
          bucket('2026-11-29T00:00:00.000Z', { end: '2026-11-30T00:00:00.000Z', sizeUnknownExecutions: 2, maxChars: { additionalContext: null, stdout: null, systemMessage: null, initialUserMessage: null } }),
          ...cut.buckets,
        ],
      };
      const points = [{ t: Date.parse('2026-11-28T00:00:00Z'), value: 8_000 }, { t: Date.parse('2026-11-30T00:00:00Z'), value: 9_000 }];
      expect(growthRows(points, growthCovers(days, points))).toEqual([['28/11/2026 08:30–24:00 (UTC, partial)', '8,000'], ['30/11/2026 00:00–08:30 (UTC, partial)', '9,000']]);
      // Shorter buckets keep their local start.
      expect(cliffView(series).rows[0]?.[0]).toBe('30/11/2026, 00:00');
      expect(deliveryView(series).headers[0]).toBe('Bucket start');
    } finally {
      if (tz === undefined) delete process.env['TZ'];
      else process.env['TZ'] = tz;
      setTimeZone('UTC');
    }
  });
});

describe('alerts and breakdowns', () => {
  const colors = { firing: 'red', pending: 'amber', resolved: 'grey' };

  it('lays this hook\'s alerts over the buckets they were active in', () => {
    const mine = alert('a1', { activeAt: '2026-11-30T05:30:00.000Z', startsAt: '2026-11-30T06:00:00.000Z' });
    const resolved = alert('a2', { rule: 'headroom', state: 'resolved', activeAt: '2026-11-30T04:00:00.000Z', startsAt: null, endsAt: '2026-11-30T05:00:00.000Z' });
    const before = alert('a3', { state: 'resolved', activeAt: iso(NOW - 72 * HOUR), endsAt: iso(NOW - 48 * HOUR) });
    expect(alertBands([mine, resolved, before], series, colors)).toEqual([
      { fromIndex: 1.5, toIndex: 3.5, label: 'persisted firing', color: 'red' },
      // Resolved while the hook's persisted alert fires: superseded, as the alerts page says, never "resolved".
      { fromIndex: -0.5, toIndex: 0.5, label: 'headroom superseded', color: 'grey' },
    ]);
    expect(alertRows([resolved])).toEqual([{ state: 'resolved', cells: ['headroom', 'resolved', '30/11/2026, 04:00', '–', '30/11/2026, 05:00'] }]);
    expect(alertRows([mine, resolved])[1]).toEqual({ state: 'superseded', cells: ['headroom', 'superseded', '30/11/2026, 04:00', '–', '30/11/2026, 05:00'] });
  });

  it('names an unset value and keeps a partly unmeasured row from reading healthy', () => {
    const r: BreakdownResponse = {
      hookId: PARTIAL.id, dimension: 'user.id', from: series.from, to: series.to,
      rows: [
        { ...counters({ executions: 17, sizeUnknownExecutions: 17, maxChars: { additionalContext: null, stdout: null, systemMessage: null, initialUserMessage: null } }), value: '', status: 'unknown' },
        { ...counters({ executions: 16 }), value: 'alice', status: 'ok' },
        { ...counters({ executions: 5, sizeUnknownExecutions: 2 }), value: 'bob', status: 'unknown' },
      ],
      total: 3, nextCursor: null,
    };
    const rows = breakdownRows(r);
    // Partly measured: the largest output is at least the measured one.
    expect(rows[2]?.cells).toEqual(['5', '12', 'none known', 'at least 4,200 chars', '2']);
    expect(rows[0]).toEqual({ value: '(not set)', url: null, status: 'unknown', counts: r.rows[0], cells: ['17', '12', 'none known', 'unknown', '17'] });
    expect(rows[1]?.cells).toEqual(['16', '12', '0', '4,200 chars', '0']);
    expect(breakdownCut(r)).toBeNull();
    // A breakdown by session or user past one page: the table says it shows the first rows only.
    expect(breakdownCut({ ...r, total: 2500, nextCursor: '2' })).toBe('The 3 values with the most executions, of 2,500.');
  });
});

describe('a breakdown row leads to the hook filtered by its value', () => {
  const FILTERABLE = ['service.version', 'user.id', 'team'];
  const r: BreakdownResponse = {
    hookId: OVER.id, dimension: 'team', from: series.from, to: series.to,
    rows: [
      { ...counters({ executions: 9 }), value: '', status: 'ok' },
      { ...counters({ executions: 3 }), value: 'platform', status: 'ok' },
    ],
    total: 2, nextCursor: null,
  };

  it('links each value, "(not set)" to the empty value, keeping the range, the other filters and the page\'s parameters', () => {
    const s = at(`/hooks/${OVER.id}?range=7d&f.user.id=alice&by=team&refresh=off`);
    const rows = breakdownRows(r, { state: s, filterable: FILTERABLE });
    expect(rows.map((row) => [row.value, row.url])).toEqual([
      ['(not set)', `/hooks/${OVER.id}?range=7d&f.user.id=alice&f.team=&by=team&refresh=off`],
      ['platform', `/hooks/${OVER.id}?range=7d&f.user.id=alice&f.team=platform&by=team&refresh=off`],
    ]);
    // The link is read back as the filter on the empty value, and asks the API for it.
    const followed = at(rows[0]?.url ?? '');
    expect(followed.filters).toEqual({ 'user.id': 'alice', team: '' });
    expect(followQueries(followed, { from: series.from, to: series.to }, 'team').range).toMatchObject({ team: '', 'user.id': 'alice' });
    // A custom range is kept as it is.
    const custom = at(`/hooks/${OVER.id}?range=custom&from=2026-11-29T00:00:00.000Z&to=2026-11-30T00:00:00.000Z`);
    expect(drillUrl(custom, OVER.id, 'team', '', FILTERABLE)).toBe(`/hooks/${OVER.id}?range=custom&from=2026-11-29T00%3A00%3A00.000Z&to=2026-11-30T00%3A00%3A00.000Z&f.team=`);
  });

  it('replaces a filter on the same dimension, and leads nowhere from the value the page is filtered by already', () => {
    const s = at(`/hooks/${OVER.id}?f.team=platform`);
    expect(breakdownRows(r, { state: s, filterable: FILTERABLE }).map((row) => row.url)).toEqual([`/hooks/${OVER.id}?range=24h&f.team=`, null]);
    expect(drillUrl(at(`/hooks/${OVER.id}?f.team=`), OVER.id, 'team', '', FILTERABLE)).toBeNull();
  });

  it('leads nowhere on a dimension the API does not take as a filter, or before the page knows which it takes', () => {
    const s = at(`/hooks/${OVER.id}`);
    expect(breakdownRows(r, { state: s, filterable: ['service.version', 'user.id'] }).map((row) => row.url)).toEqual([null, null]);
    expect(breakdownRows(r, { state: s, filterable: null }).map((row) => row.url)).toEqual([null, null]);
    expect(breakdownRows(r).map((row) => row.url)).toEqual([null, null]);
  });

  it('breaks down by the default dimension when the URL names none', () => {
    expect(breakdownBy(new URLSearchParams('by='))).toBe('user.id');
  });
});

describe('guard trims and commands', () => {
  it('says what the guard delivered instead of a preview, in the singular too, and nothing when it trimmed nothing', () => {
    const g = { hookId: OVER.id, from: series.from, to: series.to, step: 3600, trims: 1, largest: { field: 'stdout' as const, sentChars: 15_000, keptChars: 9_500, time: '2026-11-30T06:10:00.000Z' }, buckets: [] };
    expect(guardTrimsView(g)).toEqual({ value: '1 output', note: 'trimmed by guard: sent 15,000, delivered 9,500', field: 'stdout' });
    expect(guardTrimsView({ ...g, trims: 3 })?.value).toBe('3 outputs');
    expect(guardTrimsView({ ...g, trims: 0, largest: null })).toBeNull();
    expect(guardTrimsView(null)).toBeNull();
  });

  it('lists each command from transcripts, naming an unrecorded one and a command with nothing delivered', () => {
    const rows = commandRows({
      source: 'transcript', hookId: OVER.id, from: series.from, to: series.to,
      commands: [
        { command: 'npm run lint -- --format json', runs: 4, outputs: 4, delivered: 0, persisted: 4, unconfirmed: 0, largestOutputChars: 10_577, largestDeliveredChars: null, sessions: 2 },
        { command: '', runs: 1, outputs: 1, delivered: 1, persisted: 0, unconfirmed: 0, largestOutputChars: null, largestDeliveredChars: 120, sessions: 1 },
      ],
    });
    expect(rows).toEqual([
      { command: 'npm run lint -- --format json', over: true, cells: ['4', '10,577 chars', '4', '0', 'none delivered', '2'] },
      { command: '(command not recorded)', over: false, cells: ['1', 'unknown', '0', '1', '120 chars', '1'] },
    ]);
  });
});

describe('growth chart ticks', () => {
  it('sit on the days\' points, every few days on a long axis, at most nine', () => {
    const first = Date.parse('2026-11-01T00:00:00Z');
    expect(dayTicks(first, first + 86_400_000)).toEqual([first, first + 86_400_000]);
    const month = dayTicks(first, first + 29 * 86_400_000);
    expect(month.length).toBeLessThanOrEqual(9);
    expect(month.every((t) => (t - first) % (4 * 86_400_000) === 0)).toBe(true);
    expect(month.map((t) => new Date(t).toISOString().slice(11))).toEqual(month.map(() => '00:00:00.000Z'));
  });
});

describe('panels not kept per dimension', () => {
  it('say under a filter that they count everyone, and nothing without one', () => {
    expect(unfilteredPanelNote({}, 'guard trims')).toBeNull();
    expect(unfilteredPanelNote({ 'user.id': 'u1', team: 'a' }, 'transcripts')).toBe('Not filtered: transcripts are not kept per dimension, so these figures count everyone, not only user.id = \u2068u1\u2069, team = \u2068a\u2069.');
  });

  it('say when the filters match none of the hook\'s executions, with a link that removes only them', () => {
    const quiet = { ...OK, executions: 0, starts: 0 };
    expect(filterEmpty(quiet, at(`/hooks/${OK.id}?range=7d&f.team=a&by=session.id&refresh=5s`))).toEqual({
      text: 'No executions of this hook match team = \u2068a\u2069 in the last 7 days. ', clearUrl: `/hooks/${OK.id}?range=7d&by=session.id&refresh=5s`,
    });
    expect(filterEmpty(quiet, at(`/hooks/${OK.id}?range=7d`))).toBeNull();
    expect(filterEmpty(OK, at(`/hooks/${OK.id}?f.team=a`))).toBeNull();
    expect(filterEmpty({ ...quiet, starts: 2 }, at(`/hooks/${OK.id}?f.team=a`))).toBeNull();
  });
});
