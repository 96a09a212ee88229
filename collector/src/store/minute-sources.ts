/**
 * Where minute-granularity data comes from, by age (see docs/architecture.md, "Resolutions and retention"):
 * per-minute rollups for the recent `retention.minuteRollups`, raw events before that (exact, as long as
 * `retention.events`), and beyond the events only hour and day rollups, so a range edge there resolves to
 * whole hours: the range covers every hour it touches.
 *
 * The choice is made once per read, by time and by how far retention has deleted (PrunedBounds, noted by every
 * prune before it deletes), never by what rows happen to exist: under unchanged retention a read gives the same
 * answer whether or not retention already deleted what it does not use; after a retention is raised, what an
 * earlier prune deleted is never counted on. Both bounds are whole hours, and retention deletes behind them (store
 * prune: events before the hour holding the bound, minute rollups an hour behind their horizon), so a read never
 * relies on rows a prune running at the same time may remove.
 */
import { mergeRow, type CounterRow } from './counters.ts';
import { HOUR, granularityForStep, type Segment } from './segments.ts';
import type { FleetBucket } from './store.ts';

/** How long raw events and per-minute rollups are kept (the store's `retention` option). */
export interface MinuteRetention {
  eventsMs: number;
  minuteRollupsMs: number;
}

export interface MinuteSources {
  /** Minute rollups serve buckets from here on (a whole hour). */
  minuteFrom: number;
  /** Raw events serve [eventsFrom, minuteFrom) (a whole hour); before it, whole hours come from the hour rollups. */
  eventsFrom: number;
}

/** No retention configured: minute rollups serve every minute (they are kept with the events). */
export const ALL_MINUTES: MinuteSources = { minuteFrom: -Infinity, eventsFrom: -Infinity };

/**
 * Within this much of the hour's end a read already treats the hour the events retention is about to drop as
 * gone: a prune starting while the read runs (queries time out after 60 s) never deletes events it counts.
 */
const EVENTS_READ_LEAD_MS = 60_000;

/**
 * How far retention has deleted so far (kept in store_meta, PRUNED_BEFORE_META): raw events before
 * `eventsBeforeMs`, minute rollups before `minutesBeforeMs`. A retention raised since (a longer
 * retention.minuteRollups or retention.events) does not bring those rows back, so reads never count on them.
 */
export interface PrunedBounds {
  eventsBeforeMs: number;
  minutesBeforeMs: number;
}

export const NOTHING_PRUNED: PrunedBounds = { eventsBeforeMs: -Infinity, minutesBeforeMs: -Infinity };

/** store_meta key of the store's PrunedBounds (JSON). */
export const PRUNED_BEFORE_META = 'pruned_before';

/** The later of each bound: what a store knows after a prune, or after reading what another process noted. */
export function laterBounds(a: PrunedBounds, b: PrunedBounds): PrunedBounds {
  return { eventsBeforeMs: Math.max(a.eventsBeforeMs, b.eventsBeforeMs), minutesBeforeMs: Math.max(a.minutesBeforeMs, b.minutesBeforeMs) };
}

/** PrunedBounds from their store_meta value (absent or unreadable: nothing pruned). */
export function parseBounds(value: string | undefined): PrunedBounds {
  if (value === undefined) return NOTHING_PRUNED;
  try {
    const v = JSON.parse(value) as Partial<Record<keyof PrunedBounds, unknown>>;
    const num = (x: unknown): number => (typeof x === 'number' && Number.isFinite(x) ? x : -Infinity);
    return { eventsBeforeMs: num(v.eventsBeforeMs), minutesBeforeMs: num(v.minutesBeforeMs) };
  } catch {
    return NOTHING_PRUNED;
  }
}

/**
 * The sources at `nowMs` under retention `r`, never before what retention already deleted (`pruned`): after a
 * retention is raised, the minutes whose minute rollups went are read from the raw events, and beyond the raw
 * events deleted, from whole hours, until the longer horizon has filled.
 */
export function minuteSources(nowMs: number, r: MinuteRetention | undefined, pruned: PrunedBounds = NOTHING_PRUNED): MinuteSources {
  const configured = r
    ? { minuteFrom: Math.ceil((nowMs - r.minuteRollupsMs) / HOUR) * HOUR, eventsFrom: Math.floor((nowMs + EVENTS_READ_LEAD_MS - r.eventsMs) / HOUR) * HOUR }
    : ALL_MINUTES;
  return {
    minuteFrom: Math.max(configured.minuteFrom, pruned.minutesBeforeMs),
    eventsFrom: Math.max(configured.eventsFrom, pruned.eventsBeforeMs),
  };
}

/** Where retention deletes raw events: before the hour holding the bound, so reads can count on whole hours. */
export function eventsPruneBound(eventsBeforeMs: number): number {
  return Math.floor(eventsBeforeMs / HOUR) * HOUR;
}

/**
 * Where retention deletes minute rollups at `nowMs`: an hour behind the horizon reads use, so a read that
 * started before the prune still finds every minute row it chose; never later than the events' bound.
 */
export function minuteRollupsPruneBound(nowMs: number, eventsBeforeMs: number, r: MinuteRetention | undefined): number {
  if (!r) return eventsBeforeMs;
  return Math.max(eventsBeforeMs, Math.floor((nowMs - r.minuteRollupsMs) / HOUR) * HOUR - HOUR);
}

export type MinuteSource = 'minute' | 'events' | 'hour';

/**
 * A range of minutes (a minute segment of a range read, or a series range at a minute step aligned to it) split
 * by source, oldest first, empty parts left out: beyond the events retention the whole hours it touches, then
 * raw events, then minute rollups.
 */
export function minuteParts(fromMs: number, toMs: number, s: MinuteSources): { source: MinuteSource; fromMs: number; toMs: number }[] {
  const out: { source: MinuteSource; fromMs: number; toMs: number }[] = [];
  const push = (source: MinuteSource, a: number, b: number): void => {
    if (b > a) out.push({ source, fromMs: a, toMs: b });
  };
  if (fromMs < s.eventsFrom) push('hour', Math.floor(fromMs / HOUR) * HOUR, Math.min(Math.ceil(toMs / HOUR) * HOUR, s.eventsFrom));
  push('events', Math.max(fromMs, s.eventsFrom), Math.min(toMs, s.minuteFrom));
  push('minute', Math.max(fromMs, s.minuteFrom), toMs);
  return out;
}

/**
 * A segment of a range read (segments.ts) as it is read: its granularity and range after minute resolution, with
 * `events` when raw events answer it; none when nothing does. `rawOnly`: only raw events can answer the read (a
 * filter no rollup keeps), so nothing before the events horizon does.
 */
export function resolveSegment(seg: Segment, rawOnly: boolean, s: MinuteSources): (Segment & { events: boolean })[] {
  if (rawOnly) {
    const fromMs = Math.max(seg.fromMs, s.eventsFrom);
    return seg.toMs > fromMs ? [{ ...seg, fromMs, events: true }] : [];
  }
  if (seg.granularity !== 'minute') return [{ ...seg, events: false }];
  return minuteParts(seg.fromMs, seg.toMs, s).map((p) => ({ granularity: p.source === 'hour' ? 'hour' : 'minute', fromMs: p.fromMs, toMs: p.toMs, events: p.source === 'events' }));
}

/** Where a part of a series range is read: as the filter's plan decides, from the raw events, or whole hours. */
export interface SeriesSpan {
  source: 'planned' | 'events' | 'hour';
  fromMs: number;
  toMs: number;
}

/**
 * A series' range aligned to its step, split by where each part is read: one part as the filter's plan decides,
 * or at a minute step split by age (minuteParts) into minute rollups (as planned), raw events and whole hours.
 * `rawOnly`: only raw events answer the filter, so nothing before the events horizon counts.
 */
export function seriesSpans(q: { fromMs: number; toMs: number; stepMs: number }, r: MinuteRetention | undefined, rawOnly: boolean, nowMs = Date.now(), pruned: PrunedBounds = NOTHING_PRUNED): { fromMs: number; toMs: number; spans: SeriesSpan[] } {
  const fromMs = Math.floor(q.fromMs / q.stepMs) * q.stepMs;
  const toMs = Math.ceil(q.toMs / q.stepMs) * q.stepMs;
  if (!r && pruned.minutesBeforeMs === -Infinity && pruned.eventsBeforeMs === -Infinity) return { fromMs, toMs, spans: [{ source: 'planned', fromMs, toMs }] };
  const s = minuteSources(nowMs, r, pruned);
  if (granularityForStep(q.stepMs) !== 'minute') {
    const from = rawOnly ? Math.max(fromMs, s.eventsFrom) : fromMs;
    return { fromMs, toMs, spans: toMs > from ? [{ source: 'planned', fromMs: from, toMs }] : [] };
  }
  const spans = minuteParts(fromMs, toMs, s)
    .filter((p) => !(rawOnly && p.source === 'hour'))
    .map((p): SeriesSpan => ({ source: p.source === 'minute' ? 'planned' : p.source, fromMs: p.fromMs, toMs: p.toMs }));
  return { fromMs, toMs, spans };
}

/**
 * Rows of a series read in parts, by bucket: parts meeting in one bucket (a step that does not divide the hour)
 * merge, and the whole hour at a range's start beyond the events retention counts in the range's first bucket.
 */
export function mergeSeries(rows: Iterable<[number, CounterRow]>, firstMs: number): Map<number, CounterRow> {
  const out = new Map<number, CounterRow>();
  for (const [b, row] of rows) {
    const at = Math.max(b, firstMs);
    const cur = out.get(at);
    if (cur) mergeRow(cur, row);
    else out.set(at, row);
  }
  return out;
}

/** Fleet buckets read in parts, merged by hook and bucket like mergeSeries. */
export function mergeFleet(buckets: readonly FleetBucket[], firstMs: number): FleetBucket[] {
  const out = new Map<string, FleetBucket>();
  for (const b of buckets) {
    const at = Math.max(b.bucketMs, firstMs);
    const key = `${b.hookId}\u0000${at}`;
    const cur = out.get(key);
    if (!cur) out.set(key, { ...b, bucketMs: at });
    else {
      cur.executions += b.executions;
      cur.outputsPersisted += b.outputsPersisted;
      cur.executionsWithPersisted += b.executionsWithPersisted;
      cur.sizeUnknownExecutions += b.sizeUnknownExecutions;
      if (b.largest !== null && (cur.largest === null || b.largest > cur.largest)) cur.largest = b.largest;
    }
  }
  return [...out.values()];
}
