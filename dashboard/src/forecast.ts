/** The growth forecast as the dashboard shows it: the shared least-squares line through daily largest outputs. */
import type { SeriesResponse } from '../../shared/src/api.ts';
import { OUTPUT_CAP_CHARS, type DeliveryStatus } from '../../shared/src/cliff.ts';
import { forecastCrossing, type Forecast, type Point } from '../../shared/src/forecast.ts';
import { api, type Query } from './api.ts';
import { largestOutput } from '../../shared/src/cliff.ts';
import { dateTime, day, num, plural } from './format.ts';

/** Days of history the forecast fits. */
export const FORECAST_DAYS = 30;
/** Points the fit needs. */
export const FORECAST_MIN_DAYS = 3;
/** Beyond this a fitted line says "not soon" more honestly than a date. */
const HORIZON_DAYS = 365;

/** Daily largest outputs (days without size data left out: unknown is not zero). */
export function dailyPoints(series: SeriesResponse): Point[] {
  const out: Point[] = [];
  for (const b of series.buckets) {
    const v = largestOutput(b);
    if (b.executions > 0 && v !== null) out.push({ t: Date.parse(b.start), value: v });
  }
  return out;
}

/** The query of the daily series that feeds the forecast: FORECAST_DAYS days ending at `to` (RFC 3339 or now). */
export function dailySeriesQuery(to: string, filters: Record<string, string>): Query {
  // Relative while the range is: the server's clock decides what "now" is, for every call alike.
  if (to === 'now') return { ...filters, from: `now-${FORECAST_DAYS}d`, to: 'now', step: '86400' };
  const toMs = Date.parse(to);
  const from = new Date(toMs - FORECAST_DAYS * 86_400_000).toISOString();
  return { ...filters, from, to: new Date(toMs).toISOString(), step: '86400' };
}

/** The daily series that feeds the forecast. */
export function dailySeries(hookId: string, to: string, filters: Record<string, string>, signal?: AbortSignal): Promise<SeriesResponse> {
  return api.series(hookId, dailySeriesQuery(to, filters), signal);
}

/** Fits the forecast, counted from the series' end (now, or a past range's end); null with fewer than three days of size data. */
export function forecastFrom(series: SeriesResponse): { forecast: Forecast | null; points: Point[] } {
  const points = dailyPoints(series);
  return { forecast: forecastCrossing(points, Date.parse(series.to)), points };
}

/** How a forecast reads: a short value (a table cell, a KPI), a note under it, and a full sentence. */
export interface ForecastReading {
  kind: 'over' | 'crossing' | 'soon' | 'far' | 'flat' | 'quiet' | 'insufficient' | 'unknown';
  value: string;
  note: string | null;
  sentence: string;
  /** Days to the cap for sorting; null when there is no crossing ahead. */
  days: number | null;
}

/** Slope per day as words; under one character a day is flat, whatever its sign. */
function slopeText(slope: number): string {
  if (Math.abs(slope) < 1) return 'flat (under 1 char/day)';
  return `${slope > 0 ? 'growing' : 'shrinking'} ${plural(Math.abs(slope), 'char')}/day`;
}

/**
 * One consistent reading of a hook's forecast. A hook already over the cap is over, whatever the number of
 * days with data; a crossing under a day away is "now", never also a date; a line that grows under a
 * character a day is flat, not a crossing decades out. Only the hook's status says "over": the sizes are upper
 * bounds (summed over the commands of one execution, stdout with the JSON around it), so a size past the cap
 * with nothing persisted is at the cap, not over it.
 */
export function forecastReading(f: Forecast | null, opts: { status?: DeliveryStatus | null; latest?: number | null; days?: number; pastRange?: boolean; quietSince?: string | null; unmeasured?: number } = {}): ForecastReading {
  const latest = opts.latest ?? null;
  // Executions of the range that sent no size data: `latest` is of the others, at least the range's largest.
  const unmeasured = opts.unmeasured ?? 0;
  if (opts.status === 'over') {
    // A range that has ended (a custom one) tells what happened in it, not what happens now.
    return opts.pastRange
      ? { kind: 'over', value: 'over the cap', note: 'outputs were persisted in this range', sentence: 'Over the 10,000 cap in this range: outputs were persisted.', days: 0 }
      : { kind: 'over', value: 'over the cap now', note: 'outputs are persisted already', sentence: 'Already over the 10,000 cap: outputs are being persisted now.', days: 0 };
  }
  const trendPast = f !== null && f.crossesAtMs === null && f.current > OUTPUT_CAP_CHARS;
  if (trendPast && latest !== null && latest <= OUTPUT_CAP_CHARS) {
    // The range's own sizes are under the cap (a hook cut down, or wrapped with hookwatch guard) while the line
    // fitted to the 30 days before is past it: neither "at the cap" nor "nothing persisted" is known of those days.
    // With executions that sent no size data, under the cap only as far as measured: theirs may have passed it.
    const measured = unmeasured > 0 ? 'measured ' : '';
    return {
      // A range that has ended (a custom one) tells what was true in it, not what is true now.
      kind: 'flat', value: `${measured}${opts.pastRange ? 'under the cap' : 'under the cap now'}`,
      note: `${unmeasured > 0 ? `${plural(unmeasured, 'execution')} not measured; ` : ''}the 30-day trend is past it`,
      sentence: `Under the 10,000 cap in this range${unmeasured > 0 ? ` as far as measured (largest at least ${num(latest)} chars; ${plural(unmeasured, 'execution')} sent no size data)` : ` (largest ${num(latest)} chars)`}, but the trend fitted to the last ${FORECAST_DAYS} days' daily largest outputs is past it, at about ${num(f.current)} chars: it does not say when the cap is crossed again.`,
      days: null,
    };
  }
  if ((latest !== null && latest > OUTPUT_CAP_CHARS) || trendPast) {
    return {
      kind: 'crossing', value: 'at the cap', note: 'sizes past it, nothing persisted',
      sentence: `At the 10,000 cap: its sizes pass it (sums over the commands of one execution, stdout with the JSON around it), but Claude Code persisted nothing${unmeasured > 0
        ? ` of the measured executions, so each of their strings still arrived whole; ${plural(unmeasured, 'execution')} sent no size data and ${unmeasured === 1 ? 'is' : 'are'} not known to have.`
        : ', so every string still arrived whole.'}`,
      days: 0,
    };
  }
  if (!f) {
    // Unknown with some executions measured is short of days, not without data; so is a range without
    // executions (`quietSince`: when the hook was last seen) whose last 30 days had some with sizes.
    if (opts.status === 'unknown' && latest === null && !opts.days) {
      return opts.quietSince
        ? { kind: 'unknown', value: 'unknown', note: 'no executions in this range', sentence: `No executions in this range (last seen ${dateTime(opts.quietSince)}) nor size data in the ${FORECAST_DAYS} days before its end: no forecast.`, days: null }
        : { kind: 'unknown', value: 'unknown', note: 'no size data', sentence: 'No size data: no forecast.', days: null };
    }
    const have = opts.days ?? 0;
    return {
      kind: 'insufficient', value: 'not enough data',
      note: `${plural(have, 'day')} with size data; needs ${FORECAST_MIN_DAYS}`,
      sentence: `Not enough days with size data for a forecast (${num(have)} of the ${FORECAST_MIN_DAYS} needed in the last ${FORECAST_DAYS} days).`,
      days: null,
    };
  }
  if (f.stale) {
    return { kind: 'quiet', value: 'no recent data', note: `last size data ${day(f.lastMs)}`, sentence: `No size data since ${day(f.lastMs)}: the trend then says nothing about when it reaches the 10,000 cap.`, days: null };
  }
  const slope = slopeText(f.slopePerDay);
  if (f.crossesAtMs !== null && f.daysToCap !== null && f.slopePerDay >= 1) {
    if (f.daysToCap < 1) {
      return { kind: 'crossing', value: 'within a day', note: 'the trend is at the cap', sentence: `Trend ${slope}; it reaches the 10,000 cap within a day.`, days: f.daysToCap };
    }
    if (f.daysToCap > HORIZON_DAYS) {
      return { kind: 'far', value: 'not within a year', note: slope, sentence: `Trend ${slope}: it does not reach the 10,000 cap within a year.`, days: f.daysToCap };
    }
    const days = Math.round(f.daysToCap);
    return {
      kind: 'soon', value: day(f.crossesAtMs), note: `in ${plural(days, 'day')}`,
      sentence: `Trend ${slope}; it reaches the 10,000 cap around ${day(f.crossesAtMs)} (in ${plural(days, 'day')}).`, days: f.daysToCap,
    };
  }
  return { kind: 'flat', value: 'not growing', note: slope, sentence: `Trend ${slope}: not heading for the cap.`, days: null };
}
