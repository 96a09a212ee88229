/**
 * Number, size and time formatting: one place and one locale (en-GB: 12,345 and DD/MM/YYYY 24-hour), so the
 * same value reads the same on every page. Times are in the chosen time zone: the browser's own, or UTC.
 * No DOM here except statusBadge, so the wording is unit-tested without a browser.
 */
import type { DeliveryStatus } from '../../shared/src/cliff.ts';
import { h } from './dom.ts';

/** The one locale for dates and numbers. */
export const LOCALE = 'en-GB';
const NUM = new Intl.NumberFormat(LOCALE);

export type TimeZoneChoice = 'local' | 'UTC';
let zone: TimeZoneChoice = 'local';
let formats = makeFormats();

function makeFormats(): { dateTime: Intl.DateTimeFormat; dateTimeSeconds: Intl.DateTimeFormat; short: Intl.DateTimeFormat; time: Intl.DateTimeFormat; seconds: Intl.DateTimeFormat; day: Intl.DateTimeFormat; dayMonth: Intl.DateTimeFormat } {
  const tz = zone === 'UTC' ? { timeZone: 'UTC' } : {};
  const base = { ...tz, hourCycle: 'h23' as const };
  return {
    dateTime: new Intl.DateTimeFormat(LOCALE, { ...base, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' }),
    dateTimeSeconds: new Intl.DateTimeFormat(LOCALE, { ...base, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' }),
    short: new Intl.DateTimeFormat(LOCALE, { ...base, month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' }),
    time: new Intl.DateTimeFormat(LOCALE, { ...base, hour: '2-digit', minute: '2-digit' }),
    seconds: new Intl.DateTimeFormat(LOCALE, { ...base, hour: '2-digit', minute: '2-digit', second: '2-digit' }),
    day: new Intl.DateTimeFormat(LOCALE, { ...tz, year: 'numeric', month: '2-digit', day: '2-digit' }),
    dayMonth: new Intl.DateTimeFormat(LOCALE, { ...tz, month: '2-digit', day: '2-digit' }),
  };
}

/** Sets the time zone every date is shown in. */
export function setTimeZone(z: TimeZoneChoice): void {
  zone = z;
  formats = makeFormats();
}

export function timeZone(): TimeZoneChoice {
  return zone;
}

/** The browser's offset from UTC at a time, in minutes east. */
const offsetMinutes = (ms: number): number => -new Date(ms).getTimezoneOffset();

/** The browser's offset from UTC at a time: "UTC+05:30". */
function utcOffset(ms: number): string {
  const off = offsetMinutes(ms);
  const sign = off < 0 ? '-' : '+';
  const a = Math.abs(off);
  return `UTC${sign}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
}

/**
 * Whether the time of day at `ms` is one the clocks of the chosen zone show twice: the hour they go back over when
 * daylight saving time ends (02:00 to 02:59 on 25/10/2026 in Berlin, first in summer time, then in winter time).
 * It is when the other offset in force within a few hours, applied to the same wall time, is in force at the
 * instant it gives.
 */
function repeatedTime(ms: number): boolean {
  if (zone === 'UTC') return false;
  const own = offsetMinutes(ms);
  return [offsetMinutes(ms - 6 * 3_600_000), offsetMinutes(ms + 6 * 3_600_000)].some((other) => other !== own && offsetMinutes(ms + (own - other) * 60_000) === other);
}

/** An offset as short as a label allows: "UTC+2", "UTC+10:30", "UTC-3:30". */
export function shortOffset(ms: number): string {
  const off = offsetMinutes(ms);
  const a = Math.abs(off);
  return `UTC${off < 0 ? '-' : '+'}${Math.floor(a / 60)}${a % 60 ? `:${String(a % 60).padStart(2, '0')}` : ''}`;
}

/**
 * A time as `format` writes it, followed by the offset in force when it is one the clocks show twice ("02:00 UTC+2",
 * then "02:00 UTC+1" an hour later): two buckets, ticks or events in the hour repeated read apart. Every other
 * time reads as the clock showed it, the zone being in the header.
 */
function zoned(format: Intl.DateTimeFormat, ms: number): string {
  const text = format.format(new Date(ms));
  return repeatedTime(ms) ? `${text} ${shortOffset(ms)}` : text;
}

/**
 * The zone as shown beside the range: "UTC", or the browser's zone with its offset now (the chosen zone unless
 * named). Given `untilMs` too, the offsets at both times: a range over a change of daylight saving time ends in
 * another offset than it starts in ("Europe/Berlin (UTC+02:00 to UTC+01:00)"), and its end read in the offset of
 * its start would be an hour off.
 */
export function timeZoneLabel(nowMs = Date.now(), of: TimeZoneChoice = zone, untilMs = nowMs): string {
  if (of === 'UTC') return 'UTC';
  const name = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const from = utcOffset(nowMs);
  const to = utcOffset(untilMs);
  const offset = from === to ? from : `${from} to ${to}`;
  return name && name !== 'UTC' ? `${name} (${offset})` : offset;
}

/**
 * A client string inside plain text (a sentence, the tab title, where no markup can go): between FIRST STRONG
 * ISOLATE and POP DIRECTIONAL ISOLATE, so a right-to-left override (U+202E) or an unbalanced right-to-left run in
 * it reorders only itself, never the words and links after it, as dom.ts's breakable does with <bdi>.
 */
export function isolated(text: string): string {
  return `\u2068${text}\u2069`;
}

/** 12,345, or "unknown" for null: unknown is never shown as zero. */
export function num(n: number | null | undefined): string {
  return n === null || n === undefined ? 'unknown' : NUM.format(Math.round(n));
}

/** "1 hook", "2 hooks", "1,000 executions": the count and its noun, agreeing. */
export function plural(n: number, singular: string, pluralForm = `${singular}s`): string {
  return `${num(n)} ${Math.round(n) === 1 ? singular : pluralForm}`;
}

/** Characters: "12,000 chars", "1 char" (a hook one over the cap is common) or "unknown". */
export function chars(n: number | null | undefined): string {
  return n === null || n === undefined ? 'unknown' : plural(n, 'char');
}

/** "1.5 MiB"-style sizes. */
export function bytes(n: number): string {
  if (n < 1024) return `${num(n)} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** A 0..1 share as "97.5%", or "unknown". */
export function pct(share: number | null | undefined): string {
  if (share === null || share === undefined) return 'unknown';
  // Never rounded to a whole 100% or 0%: 3 executions without sizes in 47,000 are not "100.0%" measured.
  if (share < 1 && share >= 0.9995) return '>99.9%';
  if (share > 0 && share < 0.0005) return '<0.1%';
  return `${(Math.round(share * 1000) / 10).toFixed(1)}%`;
}

/**
 * Distance from the cap in words: "69 chars below the cap", "69 chars over the cap", "at the cap"; never a
 * negative number "below" it. `unmeasured`: the figure is of the measured executions only (others sent no size
 * data and may have come nearer the cap, or past it): "at most 69 chars below the cap", "at least 69 chars over
 * the cap", "at the cap or over it".
 */
export function headroomText(headroom: number | null, unmeasured = false): string {
  if (headroom === null) return 'unknown';
  if (headroom === 0) return unmeasured ? 'at the cap or over it' : 'at the cap';
  const bound = !unmeasured ? '' : headroom > 0 ? 'at most ' : 'at least ';
  return headroom > 0 ? `${bound}${chars(headroom)} below the cap` : `${bound}${chars(-headroom)} over the cap`;
}

/** A full date and time in the chosen zone. */
export function dateTime(iso: string | number | null): string {
  if (iso === null) return 'never';
  return zoned(formats.dateTime, new Date(iso).getTime());
}

/** A full date and time to the second in the chosen zone: events seconds apart (a notification's retries) read apart. */
export function dateTimeSeconds(iso: string | number): string {
  return zoned(formats.dateTimeSeconds, new Date(iso).getTime());
}

/** A time of day to the second in the chosen zone (two refreshes a minute apart or less read apart). */
export function timeOfDaySeconds(ms: number): string {
  return zoned(formats.seconds, ms);
}

/**
 * A time as a clock on the wall reads it, in the chosen zone: "14:02" on the day of `nowMs` there, "29/11, 14:02"
 * on an earlier one.
 */
export function clockTime(ms: number, nowMs: number): string {
  return zoned(day(ms) === day(nowMs) ? formats.time : formats.short, ms);
}

/**
 * A bucket label that fits the bucket width and the span: days for day buckets, times of day when every bucket
 * falls on one day, day and time otherwise (never "30/11 30/11 30/11").
 */
export function bucketLabel(iso: string | number, stepSeconds: number, spanMs = 0): string {
  const d = new Date(iso);
  if (stepSeconds >= 86_400) return utcDayMonth(d.getTime());
  return zoned(spanMs > 0 && spanMs <= 86_400_000 && stepSeconds < 3600 ? formats.time : formats.short, d.getTime());
}

/** A date only. */
export function day(ms: number): string {
  return formats.day.format(new Date(ms));
}

const UTC_DAY = new Intl.DateTimeFormat(LOCALE, { timeZone: 'UTC', year: 'numeric', month: '2-digit', day: '2-digit' });
const UTC_DAY_MONTH = new Intl.DateTimeFormat(LOCALE, { timeZone: 'UTC', month: '2-digit', day: '2-digit' });

/**
 * The date of a day bucket. The API's day buckets are UTC days (they start at 00:00 UTC): shown in a zone west of
 * UTC, their start falls on the evening before, and the day would carry the wrong date.
 */
export function utcDay(ms: number): string {
  return UTC_DAY.format(new Date(ms));
}

/** A day bucket's day and month ("30/11"), as utcDay. */
export function utcDayMonth(ms: number): string {
  return UTC_DAY_MONTH.format(new Date(ms));
}

/**
 * A bucket's start in a data table: its UTC date for day (and longer) buckets, as the chart's axis labels it,
 * the date and time in the chosen zone otherwise.
 */
export function bucketStart(iso: string, stepSeconds: number): string {
  return stepSeconds >= 86_400 ? utcDay(Date.parse(iso)) : dateTime(iso);
}

/** What a bucket of a series counted: from the later of its start and the range's `from` until its end. */
export interface BucketCover {
  fromMs: number;
  toMs: number;
  /** Less than a step: a bucket the range cuts (the last one still filling in a range ending now), no dip. */
  partial: boolean;
}

/**
 * What each bucket of a series counted, from its starts and the ends the API gives (`end`, the fleet's `ends`);
 * an answer without them ends each bucket a step later or at `to`, as the API cuts them.
 */
export function bucketCovers(series: { from: string; to: string; step: number }, starts: readonly string[], ends?: readonly (string | undefined)[]): BucketCover[] {
  const from = Date.parse(series.from);
  const to = Date.parse(series.to);
  const stepMs = series.step * 1000;
  return starts.map((s, i) => {
    const start = Date.parse(s);
    const end = ends?.[i];
    const toMs = end === undefined ? Math.min(start + stepMs, to) : Date.parse(end);
    const fromMs = Math.max(start, from);
    return { fromMs, toMs, partial: toMs - fromMs < stepMs };
  });
}

const UTC_TIME = new Intl.DateTimeFormat(LOCALE, { timeZone: 'UTC', hourCycle: 'h23', hour: '2-digit', minute: '2-digit' });

/** A UTC time of day, a day's end as 24:00 (a first day bucket the range cuts runs to midnight, not from it). */
function utcTime(ms: number, end: boolean): string {
  return end && ms % 86_400_000 === 0 ? '24:00' : UTC_TIME.format(new Date(ms));
}

/**
 * The time a partial day (or longer) bucket covers, in UTC: from its day and time to its end's, the end's day named
 * when it is another (a bucket of several days, on a chart over more than 60 days), written by `dayOf`.
 */
function utcSpan(c: BucketCover, dayOf: (ms: number) => string): string {
  const endDay = utcDay(c.toMs - 1) === utcDay(c.fromMs) ? '' : `${dayOf(c.toMs - 1)} `;
  return `${dayOf(c.fromMs)} ${utcTime(c.fromMs, false)}–${endDay}${utcTime(c.toMs, true)} (UTC, partial)`;
}

/**
 * The end of a span starting `fromMs`: its time alone on the same day (or when `timeOnly`), with its day otherwise.
 * The bucket still filling ends at the time of the answer, not on a minute: its time then has its seconds, or a
 * minute bucket would read "11:23–11:23".
 */
function spanEnd(fromMs: number, toMs: number, timeOnly: boolean, withDay: Intl.DateTimeFormat): string {
  const time = toMs % 60_000 === 0 ? formats.time : formats.seconds;
  return zoned(timeOnly || day(fromMs) === day(toMs - 1) ? time : withDay, toMs);
}

/**
 * The title of a hovered partial bucket: the time it covers, as its axis label writes times, and that it is
 * partial ("14:00–14:23 (partial)"; a day bucket in UTC, "30/11 00:00–08:30 (UTC, partial)").
 */
export function partialBucketTitle(c: BucketCover, stepSeconds: number, spanMs = 0): string {
  if (stepSeconds >= 86_400) return utcSpan(c, utcDayMonth);
  const start = bucketLabel(c.fromMs, stepSeconds, spanMs);
  const timeOnly = spanMs > 0 && spanMs <= 86_400_000 && stepSeconds < 3600;
  return `${start}–${spanEnd(c.fromMs, c.toMs, timeOnly, formats.short)} (partial)`;
}

/**
 * Each bucket's title when it is partial (partialBucketTitle: "14:00–14:23 (partial)"), null for a whole one: what
 * the tooltips, the chart (ChartPanel.setPartial) and its summary say of it.
 */
export function partialTitles(covers: readonly BucketCover[], stepSeconds: number, spanMs: number): (string | null)[] {
  return covers.map((c) => (c.partial ? partialBucketTitle(c, stepSeconds, spanMs) : null));
}

/**
 * What a chart's summary and a sparkline's text alternative say of the buckets partialTitles names ("partial
 * bucket, covering less time than the others: 14:00–14:23 (partial)"), so a lower value there is not read as a
 * dip; undefined when the range cuts none.
 */
export function partialNote(partial: readonly (string | null)[]): string | undefined {
  const cut = partial.filter((t) => t !== null);
  return cut.length === 0 ? undefined : `${cut.length === 1 ? 'partial bucket' : 'partial buckets'}, covering less time than the others: ${cut.join('; ')}`;
}

/**
 * A bucket in a data table's first column: bucketStart for a whole bucket; for a partial one the time it covers
 * and that it is partial ("30/11/2026, 14:00–14:23 (partial)"), as its tooltip says.
 */
export function bucketCell(start: string, c: BucketCover | undefined, stepSeconds: number): string {
  if (!c?.partial) return bucketStart(start, stepSeconds);
  if (stepSeconds >= 86_400) return utcSpan(c, utcDay);
  return `${dateTime(c.fromMs)}–${spanEnd(c.fromMs, c.toMs, false, formats.dateTime)} (partial)`;
}

/** The heading of the column bucketStart fills. */
export function bucketStartHeader(stepSeconds: number): string {
  return stepSeconds >= 86_400 ? 'Day (UTC)' : 'Bucket start';
}

/**
 * The title of a time axis bucketLabel labels: day buckets are UTC days, unlike every other time on the page (in
 * the chosen zone, which the header names), so their axis says so; other axes need none.
 */
export function bucketAxisTitle(stepSeconds: number): string | null {
  return stepSeconds >= 86_400 ? 'day (UTC)' : null;
}

/**
 * The title of a hovered bucket: its axis label, and for a day bucket "(UTC)" after it ("30/11 (UTC)"), as
 * bucketAxisTitle titles the axis.
 */
export function bucketTooltipTitle(label: string, stepSeconds: number): string {
  return stepSeconds >= 86_400 ? `${label} (UTC)` : label;
}

/** Day and month only ("30/11"). */
export function dayMonth(ms: number): string {
  return formats.dayMonth.format(new Date(ms));
}

/** "3 min ago" style age. */
export function ago(iso: string | null, now = Date.now()): string {
  if (iso === null) return 'never';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`;
  return `${plural(Math.round(s / 86_400), 'day')} ago`;
}

const pad = (n: number): string => String(n).padStart(2, '0');

/** A time as the custom-range inputs show it: "DD/MM/YYYY HH:MM" in the chosen zone. */
export function inputDateTime(ms: number): string {
  const d = new Date(ms);
  if (zone === 'UTC') return `${pad(d.getUTCDate())}/${pad(d.getUTCMonth() + 1)}/${d.getUTCFullYear()} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
  return `${pad(d.getDate())}/${pad(d.getMonth() + 1)}/${d.getFullYear()} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** "DD/MM/YYYY HH:MM" read in the chosen zone: the time, or why it is none. */
function readInputDateTime(text: string): number | 'malformed' | 'skipped' {
  const m = /^\s*(\d{1,2})\/(\d{1,2})\/(\d{4})(?:[ T,]+(\d{1,2}):(\d{2}))?\s*$/.exec(text);
  if (!m) return 'malformed';
  const [dd, mm, yyyy, hh = 0, mi = 0] = m.slice(1).map((x) => (x === undefined ? undefined : Number(x))) as number[];
  if (mm === undefined || dd === undefined || yyyy === undefined) return 'malformed';
  if (mm < 1 || mm > 12 || dd < 1 || dd > 31 || hh > 23 || mi > 59) return 'malformed';
  const ms = zone === 'UTC' ? Date.UTC(yyyy, mm - 1, dd, hh, mi) : new Date(yyyy, mm - 1, dd, hh, mi).getTime();
  const back = new Date(ms);
  // 31/02 rolls over to March in Date: refuse it instead of silently moving the range.
  const dayBack = zone === 'UTC' ? back.getUTCDate() : back.getDate();
  if (dayBack !== dd) return 'malformed';
  // A time the clocks skip when daylight saving time starts (02:30 in Berlin on 29/03/2026) is moved an hour on by
  // Date: refused too.
  if (zone !== 'UTC' && (back.getHours() !== hh || back.getMinutes() !== mi)) return 'skipped';
  return ms;
}

/**
 * The instants "DD/MM/YYYY HH:MM" (or "DD/MM/YYYY") names in the chosen zone: one, or two, the first run first, for
 * a time in the hour the clocks repeat when they go back (02:30 on 25/10/2026 in Berlin, in summer time then in
 * winter time); null when it is not a real date and time there.
 */
export function inputDateTimeRuns(text: string): number[] | null {
  const t = readInputDateTime(text);
  if (typeof t !== 'number' || !repeatedTime(t)) return typeof t === 'number' ? [t] : null;
  const own = offsetMinutes(t);
  const others = [offsetMinutes(t - 6 * 3_600_000), offsetMinutes(t + 6 * 3_600_000)].filter((o) => o !== own);
  const runs = others.map((o) => t + (own - o) * 60_000).filter((ms) => inputDateTime(ms) === inputDateTime(t));
  return [...new Set([t, ...runs])].sort((a, b) => a - b);
}

/** What is wrong with a custom-range field inputDateTimeRuns refuses, for the person who typed it. */
export function inputDateTimeProblem(text: string): string | null {
  const t = readInputDateTime(text);
  if (t === 'malformed') return 'Write dates as DD/MM/YYYY HH:MM.';
  if (t === 'skipped') return `${text.trim()} does not exist in ${Intl.DateTimeFormat().resolvedOptions().timeZone}: the clocks skip it when daylight saving time starts.`;
  return null;
}

const STATUS_TEXT: Record<DeliveryStatus, string> = { over: 'over', near: 'near', ok: 'ok', unknown: 'unknown' };
const STATUS_TITLE: Record<DeliveryStatus, string> = {
  over: 'outputs were persisted: over the 10,000-character cap, the model saw a ~2,000-character preview',
  near: 'the largest output may be close to the cap',
  ok: 'every output was delivered whole',
  unknown: 'no size data (client older than 2.1.280): not measurable, never assumed healthy',
};

/**
 * The status a person should read for a hook: "ok" only when every execution carried size data. A hook with
 * 17 of 33 executions unmeasured is not known to be healthy (unknown is never healthy).
 */
export function shownStatus(c: { status: DeliveryStatus | null; executions: number; sizeUnknownExecutions: number }): DeliveryStatus {
  const s = c.status ?? 'unknown';
  if (s === 'ok' && c.sizeUnknownExecutions > 0) return 'unknown';
  return s;
}

/** Why shownStatus says what it says, for the badge's title. */
export function statusTitle(c: { status: DeliveryStatus | null; executions: number; sizeUnknownExecutions: number; starts?: number }): string {
  const s = shownStatus(c);
  // Some executions measured, some not (the server calls such a hook unknown; an older one called it ok).
  const partial = c.sizeUnknownExecutions > 0 && (c.status === 'ok' || c.sizeUnknownExecutions < c.executions);
  if (s === 'unknown' && partial) {
    return `${num(c.sizeUnknownExecutions)} of ${plural(c.executions, 'execution')} had no size data (client older than 2.1.280): not measurable, never assumed healthy`;
  }
  // Listed with no execution completed, only starts (blocked, killed or timed out), whatever the client.
  if (s === 'unknown' && c.executions === 0 && (c.starts ?? 0) > 0) return 'no execution completed in this range, only starts: nothing was delivered to measure';
  // Nothing ran in the range at all: no client is to blame.
  if (s === 'unknown' && c.executions === 0) return 'no executions in this range: nothing to measure';
  return STATUS_TITLE[s];
}

/** A status badge whose meaning is in the text, not only the colour. */
export function statusBadge(status: DeliveryStatus | null, counts?: { executions: number; sizeUnknownExecutions: number; starts?: number }): HTMLSpanElement {
  const c = { status, executions: counts?.executions ?? 0, sizeUnknownExecutions: counts?.sizeUnknownExecutions ?? 0, starts: counts?.starts ?? 0 };
  const s = shownStatus(c);
  return h('span', { class: `status status-${s}`, title: statusTitle(c) }, STATUS_TEXT[s]);
}
