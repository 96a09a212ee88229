import { afterEach, describe, expect, it } from 'vitest';
import {
  ago, bucketAxisTitle, bucketCell, bucketCovers, bucketLabel, bytes, chars, clockTime, dateTime, day, dayMonth, headroomText, inputDateTime, inputDateTimeProblem, inputDateTimeRuns, num, partialBucketTitle, pct, plural, setTimeZone, shortOffset, shownStatus,
  statusTitle, timeOfDaySeconds, timeZone, timeZoneLabel,
} from './format.ts';

const TZ = process.env['TZ'];
afterEach(() => {
  // Node applies a change of TZ at once; the formats are made again for the zone in force.
  if (TZ === undefined) delete process.env['TZ'];
  else process.env['TZ'] = TZ;
  setTimeZone('local');
});

/** Shows times in the browser's own zone, as a browser in `tz` would. */
function browserIn(tz: string): void {
  process.env['TZ'] = tz;
  setTimeZone('local');
}

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
    // Of the measured executions only: bounds, never a bare figure.
    expect([headroomText(-600, true), headroomText(1_450, true), headroomText(0, true), headroomText(null, true)]).toEqual(['at least 600 chars over the cap', 'at most 1,450 chars below the cap', 'at the cap or over it', 'unknown']);
  });

  it('shows DD/MM/YYYY 24-hour times in the chosen zone', () => {
    setTimeZone('UTC');
    expect(dateTime('2026-11-30T20:05:00Z')).toBe('30/11/2026, 20:05');
    expect(timeZoneLabel()).toBe('UTC');
    expect(inputDateTime(Date.parse('2026-11-30T20:05:00Z'))).toBe('30/11/2026 20:05');
    expect(inputDateTimeRuns('30/11/2026 20:05')).toEqual([Date.parse('2026-11-30T20:05:00Z')]);
    expect(inputDateTimeRuns('31/02/2026 10:00')).toBeNull();
    expect(inputDateTimeRuns('11/30/2026')).toBeNull();
  });

  it('labels buckets without repeating one day', () => {
    setTimeZone('UTC');
    const hours = [0, 1, 2].map((i) => bucketLabel(Date.parse('2026-11-30T00:00:00Z') + i * 1_800_000, 1800, 86_400_000));
    expect(new Set(hours).size).toBe(3);
    expect(bucketLabel('2026-11-30T00:00:00Z', 86_400, 30 * 86_400_000)).toBe('30/11');
    expect(bucketLabel('2026-11-30T06:00:00Z', 21_600, 7 * 86_400_000)).toBe('30/11, 06:00');
  });

  it('says what a bucket the range cuts covers, and finds none cut in a range aligned to the step', () => {
    setTimeZone('UTC');
    const day = { from: '2026-11-29T14:23:00.000Z', to: '2026-11-30T14:23:00.000Z', step: 600 };
    const starts = ['2026-11-29T14:20:00.000Z', '2026-11-29T14:30:00.000Z', '2026-11-30T14:20:00.000Z'];
    const covers = bucketCovers(day, starts, ['2026-11-29T14:30:00.000Z', '2026-11-29T14:40:00.000Z', '2026-11-30T14:23:00.000Z']);
    expect(covers.map((c) => c.partial)).toEqual([true, false, true]);
    expect(partialBucketTitle(covers[0]!, 600, 86_400_000)).toBe('14:23–14:30 (partial)');
    expect(partialBucketTitle(covers[2]!, 600, 86_400_000)).toBe('14:20–14:23 (partial)');
    expect(bucketCell(starts[2]!, covers[2], 600)).toBe('30/11/2026, 14:20–14:23 (partial)');
    expect(bucketCell(starts[1]!, covers[1], 600)).toBe('29/11/2026, 14:30');
    // Three-hour buckets over a week: the day too, and the end's day when it is another.
    const week = { from: '2026-11-23T08:30:00.000Z', to: '2026-11-30T08:30:00.000Z', step: 10_800 };
    const last = bucketCovers(week, ['2026-11-30T06:00:00.000Z'], ['2026-11-30T08:30:00.000Z'])[0]!;
    expect(partialBucketTitle(last, 10_800, 7 * 86_400_000)).toBe('30/11, 06:00–08:30 (partial)');
    browserIn('America/Los_Angeles');
    expect(partialBucketTitle(last, 10_800, 7 * 86_400_000)).toBe('29/11, 22:00–30/11, 00:30 (partial)');
    // Without the ends (an older answer) the cuts are the range's own; aligned, none is partial.
    expect(bucketCovers({ from: '2026-11-30T00:00:00.000Z', to: '2026-11-30T02:00:00.000Z', step: 3600 }, ['2026-11-30T00:00:00.000Z', '2026-11-30T01:00:00.000Z']).map((c) => c.partial)).toEqual([false, false]);
  });

  it('gives the seconds of the bucket still filling, which the answer ends at its own time, not on the minute', () => {
    setTimeZone('UTC');
    // The last hour at 11:23:27: minute buckets, the newest run 27 seconds ("11:23–11:23" would say nothing).
    const hour = { from: '2026-11-30T10:23:00.000Z', to: '2026-11-30T11:24:00.000Z', step: 60 };
    const covers = bucketCovers(hour, ['2026-11-30T11:22:00.000Z', '2026-11-30T11:23:00.000Z'], ['2026-11-30T11:23:00.000Z', '2026-11-30T11:23:27.000Z']);
    expect(covers.map((c) => c.partial)).toEqual([false, true]);
    expect(partialBucketTitle(covers[1]!, 60, 3_660_000)).toBe('11:23–11:23:27 (partial)');
    expect(bucketCell('2026-11-30T11:23:00.000Z', covers[1], 60)).toBe('30/11/2026, 11:23–11:23:27 (partial)');
    const tenMinutes = bucketCovers({ ...hour, step: 600 }, ['2026-11-30T11:20:00.000Z'], ['2026-11-30T11:23:27.000Z'])[0]!;
    expect(partialBucketTitle(tenMinutes, 600, 86_460_000)).toBe('30/11, 11:20–11:23:27 (partial)');
    // A day bucket keeps its minutes, as its axis does.
    const today = bucketCovers({ ...hour, from: '2026-11-01T11:23:00.000Z', step: 86_400 }, ['2026-11-30T00:00:00.000Z'], ['2026-11-30T11:23:27.000Z'])[0]!;
    expect(partialBucketTitle(today, 86_400, 30 * 86_400_000)).toBe('30/11 00:00–11:23 (UTC, partial)');
  });

  it('names the end\'s day of a partial bucket longer than a day, as the charts of ranges over 60 days draw them', () => {
    browserIn('America/Los_Angeles');
    const span = 90 * 86_400_000;
    // 90 days in two-day buckets: the last, from 29/11, cut on 30/11 at 08:30, covers a day and a half.
    const twoDays = { from: '2026-09-01T08:30:00.000Z', to: '2026-11-30T08:30:00.000Z', step: 172_800 };
    const last = bucketCovers(twoDays, ['2026-11-29T00:00:00.000Z'], ['2026-11-30T08:30:00.000Z'])[0]!;
    expect(last.partial).toBe(true);
    expect(partialBucketTitle(last, 172_800, span)).toBe('29/11 00:00–30/11 08:30 (UTC, partial)');
    expect(bucketCell('2026-11-29T00:00:00.000Z', last, 172_800)).toBe('29/11/2026 00:00–30/11/2026 08:30 (UTC, partial)');
    // The first of three-day buckets, cut on 01/09 at 08:30, runs to the end of 03/09.
    const threeDays = { ...twoDays, step: 259_200 };
    const first = bucketCovers(threeDays, ['2026-09-01T00:00:00.000Z'], ['2026-09-04T00:00:00.000Z'])[0]!;
    expect(partialBucketTitle(first, 259_200, span)).toBe('01/09 08:30–03/09 24:00 (UTC, partial)');
    expect(bucketCell('2026-09-01T00:00:00.000Z', first, 259_200)).toBe('01/09/2026 08:30–03/09/2026 24:00 (UTC, partial)');
    // Cut within one day, the end's day goes without saying, as in a day bucket.
    const early = bucketCovers(twoDays, ['2026-11-29T00:00:00.000Z'], ['2026-11-29T08:30:00.000Z'])[0]!;
    expect(partialBucketTitle(early, 172_800, span)).toBe('29/11 00:00–08:30 (UTC, partial)');
    const dayCut = bucketCovers({ ...twoDays, step: 86_400 }, ['2026-09-01T00:00:00.000Z'], ['2026-09-02T00:00:00.000Z'])[0]!;
    expect(partialBucketTitle(dayCut, 86_400, span)).toBe('01/09 08:30–24:00 (UTC, partial)');
  });

  it('titles an axis of day buckets as UTC days, whatever the zone chosen, and an axis of shorter buckets not at all', () => {
    browserIn('America/Los_Angeles');
    // The bucket starting at 00:00 UTC on 30/11 is the evening of 29/11 here; its label is the UTC day.
    expect(bucketLabel('2026-11-30T00:00:00Z', 86_400, 30 * 86_400_000)).toBe('30/11');
    expect(bucketAxisTitle(86_400)).toBe('day (UTC)');
    expect(bucketAxisTitle(2 * 86_400)).toBe('day (UTC)');
    expect(bucketAxisTitle(21_600)).toBeNull();
  });

  it('does not call a hook healthy when some executions lack size data', () => {
    const c = { status: 'ok' as const, executions: 33, sizeUnknownExecutions: 17 };
    expect(shownStatus(c)).toBe('unknown');
    expect(statusTitle(c)).toContain('17 of 33 executions had no size data');
    expect(shownStatus({ ...c, sizeUnknownExecutions: 0 })).toBe('ok');
    expect(shownStatus({ ...c, status: 'over' })).toBe('over');
    // What the server itself now answers for such a hook.
    expect(statusTitle({ ...c, status: 'unknown' })).toContain('17 of 33 executions had no size data');
  });

  it('shows unknown as unknown, never as zero', () => {
    expect(num(null)).toBe('unknown');
    expect(num(undefined)).toBe('unknown');
    expect(num(0)).toBe('0');
    expect(num(1_234.6)).toBe('1,235');
    expect(chars(null)).toBe('unknown');
    expect(chars(0)).toBe('0 chars');
    expect(chars(10_000)).toBe('10,000 chars');
    expect([chars(1), chars(-1), headroomText(-1), headroomText(1)]).toEqual(['1 char', '-1 chars', '1 char over the cap', '1 char below the cap']);
    expect(pct(null)).toBe('unknown');
    expect(pct(0)).toBe('0.0%');
    expect(pct(0.975)).toBe('97.5%');
    expect(pct(52 / 81)).toBe('64.2%');
    expect(pct(1)).toBe('100.0%');
    // Only all is 100%, only none is 0%.
    expect(pct(47_000 / 47_003)).toBe('>99.9%');
    expect(pct(0.999)).toBe('99.9%');
    expect(pct(3 / 47_003)).toBe('<0.1%');
  });

  it('agrees nouns with rounded counts', () => {
    expect(plural(1.4, 'day')).toBe('1 day');
    expect(plural(0.6, 'day')).toBe('1 day');
    expect(plural(1.5, 'day')).toBe('2 days');
    expect(plural(3, 'child', 'children')).toBe('3 children');
  });

  it('sizes bytes in binary units', () => {
    expect(bytes(0)).toBe('0 B');
    expect(bytes(1_023)).toBe('1,023 B');
    expect(bytes(1_024)).toBe('1.0 KiB');
    expect(bytes(10 * 1_024)).toBe('10 KiB');
    expect(bytes(1.5 * 1_048_576)).toBe('1.5 MiB');
    expect(bytes(256 * 1_048_576)).toBe('256 MiB');
    expect(bytes(3 * 1_024 ** 5)).toBe('3072 TiB');
  });

  it('says how long ago, with one day in the singular and a clock ahead of the event as now', () => {
    const now = Date.parse('2026-11-30T08:30:00Z');
    expect(ago(null, now)).toBe('never');
    expect(ago('2026-11-30T08:29:30Z', now)).toBe('30 s ago');
    expect(ago('2026-11-30T08:31:00Z', now)).toBe('0 s ago');
    expect(ago('2026-11-30T08:27:00Z', now)).toBe('3 min ago');
    expect(ago('2026-11-30T05:30:00Z', now)).toBe('3 h ago');
    expect(ago('2026-11-29T08:30:00Z', now)).toBe('1 day ago');
    expect(ago('2026-11-20T08:30:00Z', now)).toBe('10 days ago');
  });

  it('shows the time of day, the day and the day and month in the chosen zone', () => {
    setTimeZone('UTC');
    const t = Date.parse('2026-11-30T23:45:00Z');
    expect(timeOfDaySeconds(t)).toBe('23:45:00');
    expect(day(t)).toBe('30/11/2026');
    expect(dayMonth(t)).toBe('30/11');
    expect(dateTime(null)).toBe('never');
    // A clock's time: the day too once it is another day there.
    expect(clockTime(t, t + 600_000)).toBe('23:45');
    expect(clockTime(t, t + 1_200_000)).toBe('30/11, 23:45');
    browserIn('Australia/Adelaide');
    expect(timeOfDaySeconds(t)).toBe('10:15:00');
    expect(day(t)).toBe('01/12/2026');
    expect(dayMonth(t)).toBe('01/12');
    expect(clockTime(t, t + 1_200_000)).toBe('10:15');
  });

  it('shows times in the browser\'s zone, half-hour offsets and daylight saving included', () => {
    browserIn('America/St_Johns');
    expect(timeZone()).toBe('local');
    expect(dateTime('2026-11-30T20:05:00Z')).toBe('30/11/2026, 16:35');
    expect(timeZoneLabel(Date.parse('2026-11-30T12:00:00Z'))).toBe('America/St_Johns (UTC-03:30)');
    expect(timeZoneLabel(Date.parse('2026-07-01T12:00:00Z'))).toBe('America/St_Johns (UTC-02:30)');
    expect(inputDateTime(Date.parse('2026-11-30T20:05:00Z'))).toBe('30/11/2026 16:35');
    expect(inputDateTimeRuns('30/11/2026 16:35')).toEqual([Date.parse('2026-11-30T20:05:00Z')]);
    browserIn('Australia/Adelaide');
    expect(timeZoneLabel(Date.parse('2026-11-30T12:00:00Z'))).toBe('Australia/Adelaide (UTC+10:30)');
    // The custom range's days roll over at the browser's midnight, not UTC's.
    expect(inputDateTimeRuns('01/12/2026')).toEqual([Date.parse('2026-11-30T13:30:00Z')]);
  });

  it('names both offsets of a range over a change of daylight saving time, and refuses a time the clocks skip', () => {
    browserIn('Europe/Berlin');
    // The clocks go back on 25/10/2026 at 03:00 CEST.
    expect(timeZoneLabel(Date.parse('2026-10-24T10:00:00Z'), 'local', Date.parse('2026-10-26T11:00:00Z'))).toBe('Europe/Berlin (UTC+02:00 to UTC+01:00)');
    expect(timeZoneLabel(Date.parse('2026-10-26T10:00:00Z'), 'local', Date.parse('2026-10-27T11:00:00Z'))).toBe('Europe/Berlin (UTC+01:00)');
    expect(timeZoneLabel(Date.parse('2026-10-24T10:00:00Z'), 'UTC', Date.parse('2026-10-26T11:00:00Z'))).toBe('UTC');
    // They go forward on 29/03/2026 from 02:00 to 03:00: 02:30 is no time in Berlin.
    expect(inputDateTimeRuns('29/03/2026 02:30')).toBeNull();
    expect(inputDateTimeProblem('29/03/2026 02:30')).toBe('29/03/2026 02:30 does not exist in Europe/Berlin: the clocks skip it when daylight saving time starts.');
    expect(inputDateTimeRuns('29/03/2026 03:00')).toEqual([Date.parse('2026-03-29T01:00:00Z')]);
    // 02:30 on 25/10 happens twice: in summer time, then in winter time; 01:59 and 03:00 once.
    expect(inputDateTimeRuns('25/10/2026 02:30')).toEqual([Date.parse('2026-10-25T00:30:00Z'), Date.parse('2026-10-25T01:30:00Z')]);
    expect(inputDateTimeRuns('25/10/2026 02:00')).toEqual([Date.parse('2026-10-25T00:00:00Z'), Date.parse('2026-10-25T01:00:00Z')]);
    expect(inputDateTimeRuns('25/10/2026 01:59')).toEqual([Date.parse('2026-10-24T23:59:00Z')]);
    expect(inputDateTimeRuns('25/10/2026 03:00')).toEqual([Date.parse('2026-10-25T02:00:00Z')]);
    setTimeZone('UTC');
    expect(inputDateTimeRuns('29/03/2026 02:30')).toEqual([Date.parse('2026-03-29T02:30:00Z')]);
  });

  it('tells the two runs of the hour the clocks repeat apart by their offsets, and only those', () => {
    browserIn('Europe/Berlin');
    // The clocks go back from 03:00 CEST to 02:00 CET at 01:00 UTC on 25/10/2026: 02:00 to 02:59 happen twice.
    const at = (iso: string): number => Date.parse(iso);
    const hour = 3_600_000;
    expect(['2026-10-24T23:30:00Z', '2026-10-25T00:00:00Z', '2026-10-25T00:30:00Z', '2026-10-25T01:00:00Z', '2026-10-25T01:30:00Z', '2026-10-25T02:00:00Z']
      .map((t) => bucketLabel(t, 1800, 86_400_000))).toEqual(['01:30', '02:00 UTC+2', '02:30 UTC+2', '02:00 UTC+1', '02:30 UTC+1', '03:00']);
    expect(bucketLabel('2026-10-25T00:00:00Z', 3600, 7 * 86_400_000)).toBe('25/10, 02:00 UTC+2');
    expect(dateTime('2026-10-25T01:59:00Z')).toBe('25/10/2026, 02:59 UTC+1');
    expect(dateTime('2026-10-25T02:00:00Z')).toBe('25/10/2026, 03:00');
    expect(bucketCell('2026-10-25T00:00:00Z', undefined, 3600)).toBe('25/10/2026, 02:00 UTC+2');
    expect(bucketCell('2026-10-25T01:00:00Z', undefined, 3600)).toBe('25/10/2026, 02:00 UTC+1');
    const cut = { fromMs: at('2026-10-25T01:00:00Z'), toMs: at('2026-10-25T01:23:00Z'), partial: true };
    expect(partialBucketTitle(cut, 1800, 86_400_000)).toBe('02:00 UTC+1–02:23 UTC+1 (partial)');
    expect(timeOfDaySeconds(at('2026-10-25T00:15:30Z'))).toBe('02:15:30 UTC+2');
    expect(clockTime(at('2026-10-25T01:15:00Z'), at('2026-10-25T01:20:00Z'))).toBe('02:15 UTC+1');
    // A custom range's field holds the time as the clock shows it, with no offset: one in that hour names both runs,
    // told apart by their offsets.
    expect(inputDateTime(at('2026-10-25T01:30:00Z'))).toBe('25/10/2026 02:30');
    expect(inputDateTimeRuns('25/10/2026 02:30')?.map(shortOffset)).toEqual(['UTC+2', 'UTC+1']);
    // The hour the clocks skip in spring happens once, like every other.
    expect(dateTime(at('2026-03-29T01:00:00Z') - hour / 2)).toBe('29/03/2026, 01:30');
    expect(dateTime('2026-03-29T01:00:00Z')).toBe('29/03/2026, 03:00');
    // Half-hour offsets keep their minutes: Lord Howe Island goes back by half an hour, on 05/04/2026 at 02:00.
    browserIn('Australia/Lord_Howe');
    expect(dateTime('2026-04-04T14:45:00Z')).toBe('05/04/2026, 01:45 UTC+11');
    expect(dateTime('2026-04-04T15:15:00Z')).toBe('05/04/2026, 01:45 UTC+10:30');
    expect(inputDateTimeRuns('05/04/2026 01:45')).toEqual([at('2026-04-04T14:45:00Z'), at('2026-04-04T15:15:00Z')]);
    // In UTC no time repeats.
    setTimeZone('UTC');
    expect(dateTime('2026-10-25T00:30:00Z')).toBe('25/10/2026, 00:30');
  });

  it('labels the browser\'s zone for the picker while UTC is chosen', () => {
    browserIn('America/St_Johns');
    setTimeZone('UTC');
    const at = Date.parse('2026-11-30T12:00:00Z');
    expect(timeZoneLabel(at)).toBe('UTC');
    expect(timeZoneLabel(at, 'local')).toBe('America/St_Johns (UTC-03:30)');
    expect(timeZone()).toBe('UTC');
    expect(dateTime('2026-11-30T20:05:00Z')).toBe('30/11/2026, 20:05');
    browserIn('UTC');
    expect(timeZoneLabel(at, 'local')).toBe('UTC+00:00');
  });

  it('refuses dates that are not real, and times out of range', () => {
    setTimeZone('UTC');
    expect(inputDateTimeRuns('29/02/2026')).toBeNull();
    expect(inputDateTimeRuns('29/02/2028')).toEqual([Date.parse('2028-02-29T00:00:00Z')]);
    expect(inputDateTimeRuns('30/11/2026 24:00')).toBeNull();
    expect(inputDateTimeRuns('30/11/2026 10:60')).toBeNull();
    expect(inputDateTimeRuns('00/11/2026')).toBeNull();
    expect(inputDateTimeRuns('30/13/2026')).toBeNull();
    expect(inputDateTimeRuns(' 1/2/2026 9:05 ')).toEqual([Date.parse('2026-02-01T09:05:00Z')]);
    expect(inputDateTimeRuns('')).toBeNull();
  });

  it('explains each status, and reads no status as unknown', () => {
    expect(shownStatus({ status: null, executions: 0, sizeUnknownExecutions: 0 })).toBe('unknown');
    expect(statusTitle({ status: 'over', executions: 3, sizeUnknownExecutions: 0 })).toMatch(/^outputs were persisted/);
    expect(statusTitle({ status: 'unknown', executions: 3, sizeUnknownExecutions: 3 })).toBe('no size data (client older than 2.1.280): not measurable, never assumed healthy');
    expect(statusTitle({ status: 'ok', executions: 1, sizeUnknownExecutions: 1 })).toBe('1 of 1 execution had no size data (client older than 2.1.280): not measurable, never assumed healthy');
    expect(statusTitle({ status: 'ok', executions: 5, sizeUnknownExecutions: 0 })).toBe('every output was delivered whole');
  });
});
