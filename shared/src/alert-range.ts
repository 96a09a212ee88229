/**
 * The time range that shows one alert on a hook's page: from an hour before the first evidence it was raised on
 * to when it resolved (or to when it is looked at, while it fires), in whole buckets of the page's charts.
 * Notifications link to the hook over it, so a link opened days later, for outputs that arrived late, or for an
 * alert raised on outputs hours into a long window, shows the outputs the alert counted and not whatever the last
 * 24 hours hold.
 */

import { MAX_RANGE_MS } from './api.ts';
import { chartStepForSpan } from './chart-step.ts';

/** How far before an alert's first evidence its range starts: the hook as it was just before. */
export const ALERT_RANGE_LEAD_MS = 3_600_000;

const MINUTE = 60_000;

/** What an alert's range is read from: as notifications and the alerts API carry an alert. */
export interface AlertTimes {
  /** When it started firing (a notification's startsAt); null or absent while pending. */
  startsAt?: string | null;
  /** When its condition first held (the API's activeAt), when known. */
  activeAt?: string | null;
  /** When it resolved; null while active. */
  endsAt: string | null;
  /**
   * When the evidence it was raised on begins over its whole episode (its late outputs, stamped before the rule's
   * window, and what the rule counted in the window when it became active), kept once they leave the window; null
   * when unknown; absent where not carried (a notification queued by an earlier release).
   */
  firstEventAt?: string | null;
  /** `first_event_time`: the earliest event time of the late outputs in the window now. */
  annotations: Record<string, string>;
}

/**
 * The dashboard page that shows an alert over its range: its hook's page; the overview for a quiet feed's alert
 * (`scope: feed`: no single hook, the whole feed stopped); null for any other alert of no single hook. Notifications
 * and the alerts page's cards link to it alike.
 */
export function alertPagePath(alert: { hookId: string | null; labels: Record<string, string> }): string | null {
  if (alert.hookId) return `/hooks/${alert.hookId}`;
  return alert.labels['scope'] === 'feed' ? '/' : null;
}

/** The alerts page's hook filter: the id of the hook whose alerts it lists alone (`hook=`, as the alerts API takes it). */
export const HOOK_PARAM = 'hook';

/**
 * Whether an alert ended because retention removed its hook's data (the `data_expired` annotation a quiet hook's
 * alert ends with): hookwatch no longer keeps the hook, whose page says "No such hook".
 */
export function hookDataExpired(alert: { annotations: Record<string, string> }): boolean {
  return alert.annotations['data_expired'] === 'true';
}

/** A time in RFC 3339, UTC, its milliseconds left out when they are 0: 2026-11-30T08:00:00Z, as links and messages show a range's ends. */
export function stamp(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

/**
 * The range as RFC 3339 `from` and `to`: from an hour before the earliest of when the alert became active, started
 * firing and its evidence began (firstEventAt, or its late outputs in the window now), to when it resolved or
 * `nowMs` while it fires, widened to whole buckets of the chart the dashboard draws for it.
 */
export function alertRange(a: AlertTimes, nowMs: number): { from: string; to: string } {
  const times = [a.activeAt, a.startsAt, a.firstEventAt, a.annotations['first_event_time']]
    .map((t) => (t ? Date.parse(t) : NaN))
    .filter((t) => Number.isFinite(t));
  const first = times.length ? Math.min(...times) : nowMs;
  const ended = a.endsAt ? Date.parse(a.endsAt) : NaN;
  const end = Number.isFinite(ended) ? ended : nowMs;
  let toMs = Math.ceil(end / MINUTE) * MINUTE;
  // An alert active for longer than the API answers shows its last stretch: a link to a range it refuses would
  // open on an error.
  let fromMs = Math.max(Math.floor((first - ALERT_RANGE_LEAD_MS) / MINUTE) * MINUTE, toMs - MAX_RANGE_MS);
  toMs = Math.max(toMs, fromMs + MINUTE);
  // Widened to the bucket boundaries of the page's charts (which count whole buckets), so its figures and its
  // charts count the same executions. A wider range may take wider buckets: a few rounds settle it.
  for (let i = 0; i < 4; i++) {
    const step = chartStepForSpan(toMs - fromMs) * 1000;
    const f = Math.floor(fromMs / step) * step;
    const t = Math.ceil(toMs / step) * step;
    if (f === fromMs && t === toMs) break;
    fromMs = f;
    toMs = t;
  }
  // Widened past the longest range: its first buckets go, whole ones, so the rest stay aligned.
  const step = chartStepForSpan(toMs - fromMs) * 1000;
  while (toMs - fromMs > MAX_RANGE_MS) fromMs += step;
  return { from: stamp(fromMs), to: stamp(toMs) };
}
