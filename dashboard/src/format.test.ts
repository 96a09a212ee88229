import { afterEach, describe, expect, it } from 'vitest';
import { bucketLabel, dateTime, headroomText, inputDateTime, parseInputDateTime, plural, setTimeZone, shownStatus, statusTitle, timeZoneLabel } from './format.ts';

afterEach(() => setTimeZone('local'));

describe('format', () => {
  it('agrees nouns with counts', () => {
    expect(plural(1, 'hook')).toBe('1 hook');
    expect(plural(2, 'hook')).toBe('2 hooks');
    expect(plural(0, 'execution')).toBe('0 executions');
    expect(plural(1_000, 'hook command')).toBe('1,000 hook commands');
    expect(plural(1, 'hook command')).toBe('1 hook command');
  });

  it('never says a negative number "below the cap"', () => {
    expect(headroomText(-69)).toBe('69 chars over the cap');
    expect(headroomText(1_200)).toBe('1,200 chars below the cap');
    expect(headroomText(0)).toBe('at the cap');
    expect(headroomText(null)).toBe('unknown');
  });

  it('shows DD/MM/YYYY 24-hour times in the chosen zone', () => {
    setTimeZone('UTC');
    expect(dateTime('2026-11-30T20:05:00Z')).toBe('30/11/2026, 20:05');
    expect(timeZoneLabel()).toBe('UTC');
    expect(inputDateTime(Date.parse('2026-11-30T20:05:00Z'))).toBe('30/11/2026 20:05');
    expect(parseInputDateTime('30/11/2026 20:05')).toBe(Date.parse('2026-11-30T20:05:00Z'));
    expect(parseInputDateTime('31/02/2026 10:00')).toBeNull();
    expect(parseInputDateTime('11/30/2026')).toBeNull();
  });

  it('labels buckets without repeating one day', () => {
    setTimeZone('UTC');
    const hours = [0, 1, 2].map((i) => bucketLabel(Date.parse('2026-11-30T00:00:00Z') + i * 1_800_000, 1800, 86_400_000));
    expect(new Set(hours).size).toBe(3);
    expect(bucketLabel('2026-11-30T00:00:00Z', 86_400, 30 * 86_400_000)).toBe('30/11');
    expect(bucketLabel('2026-11-30T06:00:00Z', 21_600, 7 * 86_400_000)).toBe('30/11, 06:00');
  });

  it('does not call a hook healthy when some executions lack size data', () => {
    const c = { status: 'ok' as const, executions: 33, sizeUnknownExecutions: 17 };
    expect(shownStatus(c)).toBe('unknown');
    expect(statusTitle(c)).toContain('17 of 33 executions had no size data');
    expect(shownStatus({ ...c, sizeUnknownExecutions: 0 })).toBe('ok');
    expect(shownStatus({ ...c, status: 'over' })).toBe('over');
  });
});
