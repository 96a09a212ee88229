/** The growth forecast as the dashboard shows it: the shared least-squares line through daily largest outputs. */
import type { SeriesResponse } from '../../shared/src/api.ts';
import { forecastCrossing, type Forecast, type Point } from '../../shared/src/forecast.ts';
import { api } from './api.ts';
import { largestOutput } from '../../shared/src/cliff.ts';

/** Days of history the forecast fits. */
export const FORECAST_DAYS = 30;

/** Daily largest outputs (days without size data left out: unknown is not zero). */
export function dailyPoints(series: SeriesResponse): Point[] {
  const out: Point[] = [];
  for (const b of series.buckets) {
    const v = largestOutput(b);
    if (b.executions > 0 && v !== null) out.push({ t: Date.parse(b.start), value: v });
  }
  return out;
}

/** The daily series that feeds the forecast: FORECAST_DAYS days ending at `to` (RFC 3339 or now). */
export function dailySeries(hookId: string, to: string, filters: Record<string, string>, signal?: AbortSignal): Promise<SeriesResponse> {
  // Relative while the range is: the server's clock decides what "now" is, for every call alike.
  if (to === 'now') return api.series(hookId, { ...filters, from: `now-${FORECAST_DAYS}d`, to: 'now', step: '86400' }, signal);
  const toMs = Date.parse(to);
  const from = new Date(toMs - FORECAST_DAYS * 86_400_000).toISOString();
  return api.series(hookId, { ...filters, from, to: new Date(toMs).toISOString(), step: '86400' }, signal);
}

/** Fits the forecast; null with fewer than three days of size data. */
export function forecastFrom(series: SeriesResponse): { forecast: Forecast | null; points: Point[] } {
  const points = dailyPoints(series);
  return { forecast: forecastCrossing(points), points };
}

/** One-line reading of a forecast. */
export function forecastText(f: Forecast | null, latest: number | null): string {
  if (!f) return 'not enough days with size data (needs 3)';
  if (f.crossesAtMs !== null && f.daysToCap !== null) {
    if (f.daysToCap < 1) return 'crossing the cap now';
    // A year out, a fitted line says "not soon" more honestly than a precise number of days.
    return f.daysToCap > 365 ? 'more than a year' : `${f.daysToCap.toFixed(1)} days`;
  }
  if (latest !== null && latest > 10_000) return 'already over the cap';
  if (f.current > 10_000) return 'already over the cap';
  return 'not growing';
}
