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
import { DAY, HOUR, alignRange, checkStep, granularityForStep, type Segment } from './segments.ts';
import type { FleetBucket } from './store.ts';

/** How long raw events and per-minute rollups are kept (the store's `retention` option). */
export interface MinuteRetention {
  eventsMs: number;
  minuteRollupsMs: number;
  /** How long hour and day rollups are kept (retention.rollups); absent: kept for good. */
  rollupsMs?: number;
}

export interface MinuteSources {
  /** Minute rollups serve buckets from here on (a whole hour). */
  minuteFrom: number;
  /** Raw events serve [eventsFrom, minuteFrom) (a whole hour); before it, whole hours come from the hour rollups. */
  eventsFrom: number;
  /**
   * Hour and day rollups answer from here on (a whole hour); before it retention.rollups deleted them, so only
   * the raw events and minute rollups (when kept longer) count there (resolveSegment). Absent: nothing deleted.
   */
  rollupsFrom?: number;
}

/** No retention configured: minute rollups serve every minute (they are kept with the events). */
export const ALL_MINUTES: MinuteSources = { minuteFrom: -Infinity, eventsFrom: -Infinity, rollupsFrom: -Infinity };

/**
 * Within this much of the hour's end a read already treats the hour the events retention is about to drop as
 * gone: a prune starting while the read runs (queries time out after 60 s) never deletes events it counts.
 */
const EVENTS_READ_LEAD_MS = 60_000;

/**
 * How far retention has deleted so far (kept in store_meta, PRUNED_BEFORE_META): raw events before
 * `eventsBeforeMs`, minute rollups before `minutesBeforeMs`, hour and day rollups before `rollupsBeforeMs`. A
 * retention raised since (a longer retention.minuteRollups, retention.events or retention.rollups) does not bring
 * those rows back, so reads never count on them.
 */
export interface PrunedBounds {
  eventsBeforeMs: number;
  minutesBeforeMs: number;
  rollupsBeforeMs: number;
}

export const NOTHING_PRUNED: PrunedBounds = { eventsBeforeMs: -Infinity, minutesBeforeMs: -Infinity, rollupsBeforeMs: -Infinity };

/** store_meta key of the store's PrunedBounds (JSON). */
export const PRUNED_BEFORE_META = 'pruned_before';

/** The later of each bound: what a store knows after a prune, or after reading what another process noted. */
export function laterBounds(a: PrunedBounds, b: PrunedBounds): PrunedBounds {
  return {
    eventsBeforeMs: Math.max(a.eventsBeforeMs, b.eventsBeforeMs),
    minutesBeforeMs: Math.max(a.minutesBeforeMs, b.minutesBeforeMs),
    rollupsBeforeMs: Math.max(a.rollupsBeforeMs, b.rollupsBeforeMs),
  };
}

/** PrunedBounds from their store_meta value (absent or unreadable: nothing pruned). */
export function parseBounds(value: string | undefined): PrunedBounds {
  if (value === undefined) return NOTHING_PRUNED;
  try {
    const v = JSON.parse(value) as Partial<Record<keyof PrunedBounds, unknown>>;
    const num = (x: unknown): number => (typeof x === 'number' && Number.isFinite(x) ? x : -Infinity);
    return { eventsBeforeMs: num(v.eventsBeforeMs), minutesBeforeMs: num(v.minutesBeforeMs), rollupsBeforeMs: num(v.rollupsBeforeMs) };
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
    rollupsFrom: rollupsFrom(nowMs, r, pruned),
  };
}

/**
 * Where hour and day rollups start at `nowMs`: retention.rollups deletes hours and days before its bound (the
 * hour and the day holding it with them), so reads count from the whole hour after it (range reads take hours up
 * to the first whole day, which starts after the bound too), with a minute's lead for a prune starting while the
 * read runs; never before what a prune already deleted.
 */
function rollupsFrom(nowMs: number, r: MinuteRetention | undefined, pruned: PrunedBounds): number {
  const configured = r?.rollupsMs === undefined ? -Infinity : Math.ceil((nowMs + EVENTS_READ_LEAD_MS - r.rollupsMs) / HOUR) * HOUR;
  return Math.max(configured, Math.ceil(pruned.rollupsBeforeMs / HOUR) * HOUR);
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
 * filter no rollup keeps), so nothing before the events horizon does. An hour or day segment before the rollups
 * horizon is read from the minutes still kept there (raw events, minute rollups), when retention.events is the
 * longer; what neither holds is left out (coveredRange starts the range after it).
 */
export function resolveSegment(seg: Segment, rawOnly: boolean, s: MinuteSources): (Segment & { events: boolean })[] {
  if (rawOnly) {
    const fromMs = Math.max(seg.fromMs, s.eventsFrom);
    return seg.toMs > fromMs ? [{ ...seg, fromMs, events: true }] : [];
  }
  const rollupsFrom = s.rollupsFrom ?? -Infinity;
  if (seg.granularity !== 'minute' && seg.fromMs < rollupsFrom) {
    // Before the hour and day rollups kept, the minutes still kept answer (raw events, minute rollups), none
    // beyond them; from there on hours up to the first whole day, whose rollup starts after the bound.
    const cut = Math.min(seg.toMs, rollupsFrom);
    const finer = minuteParts(seg.fromMs, cut, s).filter((p) => p.source !== 'hour');
    const days = seg.granularity === 'day' ? Math.min(seg.toMs, Math.ceil(cut / DAY) * DAY) : seg.toMs;
    const rest: Segment[] = [{ granularity: 'hour', fromMs: cut, toMs: days }, { granularity: 'day', fromMs: days, toMs: seg.toMs }];
    return [...finer.map((p) => ({ granularity: 'minute' as const, fromMs: p.fromMs, toMs: p.toMs, events: p.source === 'events' })), ...rest.filter((r) => r.toMs > r.fromMs).map((r) => ({ ...r, events: false }))];
  }
  if (seg.granularity !== 'minute') return [{ ...seg, events: false }];
  return minuteParts(seg.fromMs, seg.toMs, s).map((p) => ({ granularity: p.source === 'hour' ? 'hour' : 'minute', fromMs: p.fromMs, toMs: p.toMs, events: p.source === 'events' }));
}

/** Why a read covers another range than the one asked: what retention.events or retention.rollups deleted. */
export type CoverageLimit = 'retention.events' | 'retention.rollups';

/** The range a read covers (both ends whole minutes), and what made it differ from the range asked, if anything. */
export interface Coverage {
  fromMs: number;
  toMs: number;
  limitedBy?: CoverageLimit;
}

/**
 * The range a read over [from, to) (aligned to the minute) counts, as resolveSegment reads it: beyond the events
 * horizon only whole hours remain, so an edge there widens to the hour holding it; a read only raw events answer
 * (`rawOnly`) counts nothing before the horizon, so its start moves up to it (a range wholly before it covers
 * nothing: from and to both at its end). An empty range (from equal to to) stays empty: whole hours around it
 * would count what it does not hold. Any other read counts nothing before every source kept (keptFrom: before
 * the rollups horizon retention.rollups deleted the hours and days, and the minutes kept answer them only as far
 * back as they go), so its start moves up to it likewise, and an empty range before it says so.
 */
export function coveredRange(fromMs: number, toMs: number, rawOnly: boolean, s: MinuteSources): Coverage {
  const kept = keptFrom(s);
  if (!rawOnly && fromMs < kept) {
    if (toMs <= kept) return { fromMs: toMs, toMs, limitedBy: 'retention.rollups' };
    return { ...coveredRange(kept, toMs, false, s), limitedBy: 'retention.rollups' };
  }
  if (rawOnly) {
    if (fromMs >= s.eventsFrom) return { fromMs, toMs };
    return { fromMs: Math.min(s.eventsFrom, toMs), toMs, limitedBy: 'retention.events' };
  }
  if (fromMs === toMs) return { fromMs, toMs };
  const from = fromMs < s.eventsFrom ? Math.floor(fromMs / HOUR) * HOUR : fromMs;
  const to = toMs < s.eventsFrom ? Math.ceil(toMs / HOUR) * HOUR : toMs;
  return from === fromMs && to === toMs ? { fromMs, toMs } : { fromMs: from, toMs: to, limitedBy: 'retention.events' };
}

/**
 * Where the oldest source any read but a raw-only one counts from starts (a whole hour): the hour and day rollups
 * kept, or the raw events or minute rollups kept before them, which answer those hours and days (resolveSegment).
 */
function keptFrom(s: MinuteSources): number {
  return Math.min(s.rollupsFrom ?? -Infinity, s.eventsFrom, s.minuteFrom);
}

/** Where a part of a series range is read: as the filter's plan decides, from the raw events, or whole hours. */
export interface SeriesSpan {
  source: 'planned' | 'events' | 'hour';
  fromMs: number;
  toMs: number;
}

/** A partial bucket at a series range's start or end: `bucketMs`, its start, counts what falls in [fromMs, toMs). */
export interface SeriesEdge {
  bucketMs: number;
  fromMs: number;
  toMs: number;
}

/**
 * Where a series over [from, to) (aligned to the minute, as every range read is) is read, so that its buckets add
 * up to the range's figures: bucket starts stay multiples of the step, but the first bucket counts from `from`
 * and the last until `to`. `fromMs` and `toMs` are the first bucket's start and the last one's end.
 *
 * At a minute step the rollups read hold minutes, so the spans simply cover [from, to): one part as the filter's
 * plan decides, or split by age (minuteParts) into minute rollups (as planned), raw events and whole hours (beyond
 * the events retention a range covers every hour it touches, as range reads do). At a step of whole hours or days
 * the spans cover the whole buckets inside the range, and the partial ones at its ends are `edges`, read as a
 * range read reads them (segments.ts: minutes up to the hour, hours up to the day).
 * `rawOnly`: only raw events answer the filter, so nothing before the events horizon counts. Otherwise whole
 * buckets before the rollups horizon are read from the raw events, where they are kept.
 */
export function seriesSpans(q: { fromMs: number; toMs: number; stepMs: number }, r: MinuteRetention | undefined, rawOnly: boolean, nowMs = Date.now(), pruned: PrunedBounds = NOTHING_PRUNED): { fromMs: number; toMs: number; spans: SeriesSpan[]; edges: SeriesEdge[] } {
  const step = q.stepMs;
  checkStep(step);
  const range = alignRange(q.fromMs, q.toMs);
  const fromMs = Math.floor(range.fromMs / step) * step;
  const toMs = Math.ceil(range.toMs / step) * step;
  if (range.toMs <= range.fromMs) return { fromMs, toMs, spans: [], edges: [] };
  const retained = r !== undefined || pruned.minutesBeforeMs !== -Infinity || pruned.eventsBeforeMs !== -Infinity || pruned.rollupsBeforeMs !== -Infinity;
  if (granularityForStep(step) === 'minute') {
    if (!retained) return { fromMs, toMs, spans: [{ source: 'planned', ...range }], edges: [] };
    const spans = minuteParts(range.fromMs, range.toMs, minuteSources(nowMs, r, pruned))
      .filter((p) => !(rawOnly && p.source === 'hour'))
      .map((p): SeriesSpan => ({ source: p.source === 'minute' ? 'planned' : p.source, fromMs: p.fromMs, toMs: p.toMs }));
    return { fromMs, toMs, spans, edges: [] };
  }
  // Whole buckets in [wholeFrom, wholeTo); none when the range lies within one bucket.
  const wholeFrom = Math.ceil(range.fromMs / step) * step;
  const wholeTo = Math.max(wholeFrom, Math.floor(range.toMs / step) * step);
  const edges: SeriesEdge[] = [];
  const edge = (a: number, b: number): void => {
    if (b > a) edges.push({ bucketMs: Math.floor(a / step) * step, fromMs: a, toMs: b });
  };
  edge(range.fromMs, Math.min(wholeFrom, range.toMs));
  if (wholeFrom < range.toMs) edge(Math.max(wholeTo, range.fromMs), range.toMs);
  const from = rawOnly && retained ? Math.max(wholeFrom, minuteSources(nowMs, r, pruned).eventsFrom) : wholeFrom;
  const spans: SeriesSpan[] = [];
  if (!rawOnly && retained) {
    // Whole buckets before the hour and day rollups kept: from the raw events, where they are kept.
    const s = minuteSources(nowMs, r, pruned);
    const rolled = Math.min(wholeTo, Math.max(from, Math.ceil((s.rollupsFrom ?? -Infinity) / step) * step));
    const eventsFrom = Math.max(from, s.eventsFrom);
    if (rolled > eventsFrom) spans.push({ source: 'events', fromMs: eventsFrom, toMs: rolled });
    if (wholeTo > rolled) spans.push({ source: 'planned', fromMs: rolled, toMs: wholeTo });
    return { fromMs, toMs, spans, edges };
  }
  return { fromMs, toMs, spans: wholeTo > from ? [{ source: 'planned', fromMs: from, toMs: wholeTo }] : [], edges };
}

/** Per hook, the counters of a series' partial buckets, each by its bucket start. */
export type EdgeRows = [bucketMs: number, byHook: Map<string, CounterRow>][];

/**
 * A series' partial buckets (seriesSpans' `edges`), each read at once by `read`: the store's range read per hook,
 * the one the range's figures come from, so the first and last buckets count what the figures count.
 */
export function readEdges(edges: readonly SeriesEdge[], read: (fromMs: number, toMs: number) => Promise<Map<string, CounterRow>>): Promise<EdgeRows> {
  return Promise.all(edges.map(async (e): Promise<EdgeRows[number]> => [e.bucketMs, await read(e.fromMs, e.toMs)]));
}

/** One hook's rows of a series' partial buckets, to merge with its whole buckets (mergeSeries). */
export function hookEdgeRows(edges: EdgeRows, hookId: string): [number, CounterRow][] {
  return edges.flatMap(([bucketMs, byHook]): [number, CounterRow][] => {
    const row = byHook.get(hookId);
    return row ? [[bucketMs, row]] : [];
  });
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
