/**
 * Growth forecast: a least-squares line through a hook's daily largest output, and when that line reaches the
 * cap. Shared by the `growth` alert rule and the dashboard so both tell the same date.
 */
import { OUTPUT_CAP_CHARS } from './cliff.ts';

export interface Point {
  /** Time in ms since the epoch (e.g. the start of a day). */
  t: number;
  /** Largest output in that period. */
  value: number;
}

export interface Forecast {
  /** Characters per day (may be negative). */
  slopePerDay: number;
  /** Fitted value at the last point's time. */
  current: number;
  /** When the fitted line reaches the cap; null when it is flat or shrinking, or already past the cap. */
  crossesAtMs: number | null;
  /** Days from the last point to crossing; null as above. */
  daysToCap: number | null;
  points: number;
}

const DAY_MS = 86_400_000;

/** Fits a line through at least `minPoints` points; null with fewer. */
export function forecastCrossing(points: readonly Point[], cap = OUTPUT_CAP_CHARS, minPoints = 3): Forecast | null {
  if (points.length < minPoints) return null;
  const n = points.length;
  const t0 = points[0]?.t ?? 0;
  let sx = 0;
  let sy = 0;
  let sxx = 0;
  let sxy = 0;
  for (const p of points) {
    const x = (p.t - t0) / DAY_MS;
    sx += x;
    sy += p.value;
    sxx += x * x;
    sxy += x * p.value;
  }
  const denom = n * sxx - sx * sx;
  if (denom === 0) return null;
  const slope = (n * sxy - sx * sy) / denom;
  const intercept = (sy - slope * sx) / n;
  const lastT = points[n - 1]?.t ?? t0;
  const lastX = (lastT - t0) / DAY_MS;
  const current = intercept + slope * lastX;
  let crossesAtMs: number | null = null;
  let daysToCap: number | null = null;
  if (slope > 0 && current <= cap) {
    const xCross = (cap - intercept) / slope;
    daysToCap = Math.max(0, xCross - lastX);
    crossesAtMs = lastT + daysToCap * DAY_MS;
  }
  return { slopePerDay: slope, current, crossesAtMs, daysToCap, points: n };
}
