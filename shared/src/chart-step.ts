/**
 * The bucket width of the dashboard's time charts for a range, shared with the links notifications carry: a
 * range whose ends fall on its chart's bucket boundaries is counted alike by the page's figures and its charts.
 */

/** Bucket widths the API accepts for charts (seconds). */
const CHART_STEPS = [60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400] as const;
/** At most this many buckets on a chart: bars stay bars, not hairlines, on a 7-day view. */
export const CHART_BUCKETS = 60;

/** The bucket width (seconds) for a chart spanning `spanMs`: the smallest that keeps it within CHART_BUCKETS. */
export function chartStepForSpan(spanMs: number): number {
  // Two weeks and more in whole days: day rollups answer those across a thousand hooks in one read.
  if (spanMs >= 14 * 86_400_000) return 86_400 * Math.max(1, Math.ceil(spanMs / 86_400_000 / CHART_BUCKETS));
  return CHART_STEPS.find((s) => spanMs / (s * 1000) <= CHART_BUCKETS) ?? 86_400;
}
