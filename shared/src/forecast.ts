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
  /**
   * When the fitted line reaches the cap; null when it is flat or shrinking, already past the cap at the last
   * point, or stale.
   */
  crossesAtMs: number | null;
  /** Days from now to the crossing, 0 when the line has reached the cap by now; null as above. */
  daysToCap: number | null;
  points: number;
  /** Time of the last point. */
  lastMs: number;
  /**
   * The day of the last point ended more than four days before now (points are the starts of their days; a long
   * weekend without sessions is not stale): the hook has sent no size data since, and its trend says nothing
   * about when it reaches the cap.
   */
  stale: boolean;
}

const DAY_MS = 86_400_000;
/** A last point (the start of its day) older than this before now makes the forecast stale: its day plus four. */
const STALE_AFTER_MS = 5 * DAY_MS;

/**
 * Fits a line through at least `minPoints` points (null with fewer) and tells when it reaches the cap, counted
 * from `nowMs`: the end of the range the points cover (now, or a past range's end).
 */
export function forecastCrossing(points: readonly Point[], nowMs: number, cap = OUTPUT_CAP_CHARS, minPoints = 3): Forecast | null {
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
  const stale = nowMs - lastT > STALE_AFTER_MS;
  let crossesAtMs: number | null = null;
  let daysToCap: number | null = null;
  if (slope > 0 && current <= cap && !stale) {
    // On the line, not before its last point; what is left of it is counted from now.
    crossesAtMs = t0 + Math.max((cap - intercept) / slope, lastX) * DAY_MS;
    daysToCap = Math.max(0, (crossesAtMs - nowMs) / DAY_MS);
  }
  return { slopePerDay: slope, current, crossesAtMs, daysToCap, points: n, lastMs: lastT, stale };
}
