import { describe, expect, it } from 'vitest';
import type { Forecast } from '../../shared/src/forecast.ts';
import { dailyPoints, dailySeriesQuery, forecastFrom, forecastReading } from './forecast.ts';
import { setTimeZone } from './format.ts';
import { NEAR, OK, dailySeriesOf } from './testdata/api-responses.ts';

const DAY = 86_400_000;
const T = Date.parse('2026-11-30T00:00:00Z');
const f = (over: Partial<Forecast>): Forecast => ({ slopePerDay: 100, current: 9_000, crossesAtMs: T + 10 * DAY, daysToCap: 10, points: 10, lastMs: T, stale: false, ...over });

describe('forecast wording', () => {
  setTimeZone('UTC');

  it('says "over the cap now" for a hook over the cap, even with one day of data', () => {
    const r = forecastReading(null, { status: 'over', days: 1 });
    expect(r.value).toBe('over the cap now');
    expect(r.sentence).not.toMatch(/not enough/);
  });

  it('never pairs a date with "crossing now"', () => {
    const r = forecastReading(f({ daysToCap: 0.3, crossesAtMs: T + 0.3 * DAY }), { status: 'near' });
    expect(r.value).toBe('within a day');
    expect(`${r.value} ${r.note} ${r.sentence}`).not.toMatch(/\d\d\/\d\d\/\d{4}/);
  });

  it('gives a date and agreeing days when the crossing is near', () => {
    const r = forecastReading(f({}), { status: 'near' });
    expect(r.value).toBe('10/12/2026');
    expect(r.note).toBe('in 10 days');
    expect(r.sentence).toBe('Trend growing 100 chars/day; it reaches the 10,000 cap around 10/12/2026 (in 10 days).');
    expect(forecastReading(f({ daysToCap: 1.2, crossesAtMs: T + DAY }), {}).note).toBe('in 1 day');
  });

  it('calls under a char a day flat, not a crossing in 2043', () => {
    const r = forecastReading(f({ slopePerDay: 0.3, daysToCap: 6_000, crossesAtMs: T + 6_000 * DAY }), { status: 'ok' });
    expect(r.kind).toBe('flat');
    expect(r.sentence).toBe('Trend flat (under 1 char/day): not heading for the cap.');
    expect(r.sentence).not.toMatch(/0 chars\/day|2043/);
  });

  it('says a slow crossing is not within a year', () => {
    const r = forecastReading(f({ slopePerDay: 5, daysToCap: 800, crossesAtMs: T + 800 * DAY }), {});
    expect(r.value).toBe('not within a year');
    expect(r.sentence).toContain('growing 5 chars/day');
  });

  it('counts the days it has, with the right plural', () => {
    expect(forecastReading(null, { status: 'ok', days: 1 }).note).toBe('1 day with size data; needs 3');
    expect(forecastReading(null, { status: 'ok', days: 2 }).note).toBe('2 days with size data; needs 3');
    expect(forecastReading(null, { status: 'unknown' }).value).toBe('unknown');
  });
});

describe('forecast from the daily series', () => {
  setTimeZone('UTC');
  const day = (i: number): string => new Date(Date.parse('2026-11-20T00:00:00Z') + i * DAY).toISOString().slice(0, 10);

  it('leaves out days without size data and days without executions: unknown is not zero', () => {
    const s = dailySeriesOf(NEAR, [
      { day: day(0), largest: 8_000 }, { day: day(1), largest: null }, { day: day(2), largest: 8_200, executions: 0 }, { day: day(3), largest: 8_300 },
    ]);
    expect(dailyPoints(s)).toEqual([{ t: Date.parse(`${day(0)}T00:00:00Z`), value: 8_000 }, { t: Date.parse(`${day(3)}T00:00:00Z`), value: 8_300 }]);
  });

  it('needs three days with size data, and says how many it has', () => {
    const two = forecastFrom(dailySeriesOf(NEAR, [{ day: day(0), largest: 8_000 }, { day: day(1), largest: null }, { day: day(2), largest: 8_200 }]));
    expect(two.forecast).toBeNull();
    expect(two.points).toHaveLength(2);
    const r = forecastReading(two.forecast, { status: 'near', latest: 8_200, days: two.points.length });
    expect(r.kind).toBe('insufficient');
    expect(r.sentence).toBe('Not enough days with size data for a forecast (2 of the 3 needed in the last 30 days).');
    expect(forecastReading(null, { status: 'near', days: 0 }).note).toBe('0 days with size data; needs 3');
  });

  it('carries a growing hook to the cap and gives the day it crosses, counted from now', () => {
    // 9,000 growing 50 a day from 20/11: 9,450 on 29/11, the cap on 10/12; the series ends (now) 30/11 08:30.
    const { forecast, points } = forecastFrom(dailySeriesOf(NEAR, Array.from({ length: 10 }, (_v, i) => ({ day: day(i), largest: 9_000 + 50 * i }))));
    expect(points).toHaveLength(10);
    expect(forecast?.slopePerDay).toBeCloseTo(50, 6);
    const r = forecastReading(forecast, { status: 'near', latest: 9_450, days: points.length });
    expect(r.kind).toBe('soon');
    expect(r.value).toBe('10/12/2026');
    expect(r.note).toBe('in 10 days');
    expect(r.sentence).toBe('Trend growing 50 chars/day; it reaches the 10,000 cap around 10/12/2026 (in 10 days).');
    // 100 a day: 9,900 on 29/11 and the line at the cap at midnight, before now: within a day, never a past date.
    const close = forecastFrom(dailySeriesOf(NEAR, Array.from({ length: 10 }, (_v, i) => ({ day: day(i), largest: 9_000 + 100 * i }))));
    expect(forecastReading(close.forecast, { status: 'near', latest: 9_900, days: 10 })).toMatchObject({ kind: 'crossing', value: 'within a day' });
  });

  it('gives no crossing for a hook with no size data in the last four days', () => {
    // The same growth, but its days end on 25/11: on 30/11 the line says "crossed", the hook says nothing.
    const quiet = forecastFrom(dailySeriesOf(NEAR, Array.from({ length: 6 }, (_v, i) => ({ day: day(i), largest: 9_000 + 100 * i }))));
    expect(quiet.forecast).toMatchObject({ stale: true, crossesAtMs: null, daysToCap: null });
    expect(forecastReading(quiet.forecast, { status: 'near', latest: 9_500, days: 6 })).toMatchObject({ kind: 'quiet', value: 'no recent data', note: 'last size data 25/11/2026', days: null });
  });

  it('calls a shrinking hook not growing, and never flat when it is over the cap', () => {
    const shrinking = forecastFrom(dailySeriesOf(OK, Array.from({ length: 5 }, (_v, i) => ({ day: day(i + 5), largest: 6_000 - 250 * i }))));
    const r = forecastReading(shrinking.forecast, { status: 'ok', latest: 5_000, days: 5 });
    expect(r).toMatchObject({ kind: 'flat', value: 'not growing', note: 'shrinking 250 chars/day', days: null });
    // Sizes are upper bounds: past the cap with nothing persisted (the server says near) is at the cap, never
    // "over" or "persisted already"; only the status says over.
    expect(forecastReading(shrinking.forecast, { status: 'near', latest: 12_000 })).toMatchObject({ kind: 'crossing', value: 'at the cap', note: 'sizes past it, nothing persisted', days: 0 });
    expect(forecastReading(f({ crossesAtMs: null, daysToCap: null, current: 10_400, slopePerDay: -3 }), {}).value).toBe('at the cap');
    // Sizes under the cap in the range (a hook wrapped with hookwatch guard) beside a 30-day line still past it:
    // under the cap now, never "sizes past it, nothing persisted", which the range does not show.
    expect(forecastReading(f({ crossesAtMs: null, daysToCap: null, current: 17_500, slopePerDay: 800 }), { status: 'near', latest: 9_721 }))
      .toMatchObject({ kind: 'flat', value: 'under the cap now', note: 'the 30-day trend is past it', days: null });
    // With executions in the range that sent no size data, under the cap is only as far as measured.
    const pastTrend = f({ crossesAtMs: null, daysToCap: null, current: 17_500, slopePerDay: 800 });
    const partly = forecastReading(pastTrend, { status: 'near', latest: 9_721, unmeasured: 1 });
    expect(partly).toMatchObject({ kind: 'flat', value: 'measured under the cap now', note: '1 execution not measured; the 30-day trend is past it', days: null });
    expect(partly.sentence).toBe('Under the 10,000 cap in this range as far as measured (largest at least 9,721 chars; 1 execution sent no size data), but the trend fitted to the last 30 days\' daily largest outputs is past it, at about 17,500 chars: it does not say when the cap is crossed again.');
    expect(forecastReading(pastTrend, { status: 'near', latest: 9_721, unmeasured: 2, pastRange: true }).value).toBe('measured under the cap');
    // Past the cap with nothing persisted: every string measured arrived whole, the others are not known to have.
    expect(forecastReading(shrinking.forecast, { status: 'near', latest: 12_000, unmeasured: 3 }).sentence)
      .toBe('At the 10,000 cap: its sizes pass it (sums over the commands of one execution, stdout with the JSON around it), but Claude Code persisted nothing of the measured executions, so each of their strings still arrived whole; 3 executions sent no size data and are not known to have.');
    expect(forecastReading(null, { status: 'over', latest: 9_000 }).value).toBe('over the cap now');
    // A custom range that has ended says what happened in it, not "now".
    expect(forecastReading(null, { status: 'over', pastRange: true })).toMatchObject({ value: 'over the cap', note: 'outputs were persisted in this range' });
    expect(forecastReading(f({ crossesAtMs: null, daysToCap: null, current: 17_500, slopePerDay: 800 }), { status: 'near', latest: 9_721, pastRange: true }))
      .toMatchObject({ kind: 'flat', value: 'under the cap', note: 'the 30-day trend is past it', days: null });
    expect(forecastReading(null, { latest: 10_000 }).kind).toBe('insufficient');
  });

  it('asks for thirty daily buckets ending where the range ends, relative while the range is', () => {
    expect(dailySeriesQuery('now', { team: 'platform' })).toEqual({ team: 'platform', from: 'now-30d', to: 'now', step: '86400' });
    expect(dailySeriesQuery('2026-11-30T08:30:00Z', {})).toEqual({ from: '2026-10-31T08:30:00.000Z', to: '2026-11-30T08:30:00.000Z', step: '86400' });
  });
});
