import { describe, expect, it } from 'vitest';
import type { Forecast } from '../../shared/src/forecast.ts';
import { forecastReading } from './forecast.ts';
import { setTimeZone } from './format.ts';

const DAY = 86_400_000;
const T = Date.parse('2026-11-30T00:00:00Z');
const f = (over: Partial<Forecast>): Forecast => ({ slopePerDay: 100, current: 9_000, crossesAtMs: T + 10 * DAY, daysToCap: 10, points: 10, ...over });

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
