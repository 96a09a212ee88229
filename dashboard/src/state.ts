/**
 * Everything a view shows is decided by its URL (page, range, filters, sort, chosen dimension), so a link can be
 * shared and a reload keeps the view. Filters are `f.<dimension>=value` to stay clear of the view's own keys.
 */
import { HOOK_PARAM } from '../../shared/src/alert-range.ts';
import { chartStepForSpan } from '../../shared/src/chart-step.ts';
import { SILENCE_PARAM, silenceLabels } from '../../shared/src/silence-link.ts';
import type { RangeCoverage } from '../../shared/src/api.ts';
import type { Query } from './api.ts';
import { dateTime, isolated, timeZone, timeZoneLabel } from './format.ts';

export const RANGE_PRESETS = ['1h', '24h', '7d', '30d'] as const;
export type RangePreset = (typeof RANGE_PRESETS)[number];

export type Route =
  | { page: 'overview' }
  | { page: 'hook'; hookId: string }
  | { page: 'alerts' }
  | { page: 'forwarding' }
  | { page: 'not-found' };

/** The range as the URL states it: a preset relative to now, or fixed RFC 3339 bounds. */
export type Range = { kind: 'preset'; preset: RangePreset } | { kind: 'custom'; from: string; to: string };

export interface ViewState {
  route: Route;
  range: Range;
  filters: Record<string, string>;
  params: URLSearchParams;
}

export const DEFAULT_RANGE: Range = { kind: 'preset', preset: '24h' };

const HOOK_PATH = /^\/hooks\/([0-9a-f]{16})\/?$/;

/** Reads the view from a location. */
export function readState(loc: { pathname: string; search: string }): ViewState {
  const params = new URLSearchParams(loc.search);
  let route: Route;
  const m = HOOK_PATH.exec(loc.pathname);
  if (loc.pathname === '/' || loc.pathname === '') route = { page: 'overview' };
  else if (m?.[1]) route = { page: 'hook', hookId: m[1] };
  else if (loc.pathname === '/alerts' || loc.pathname === '/alerts/') route = { page: 'alerts' };
  else if (loc.pathname === '/forwarding' || loc.pathname === '/forwarding/') route = { page: 'forwarding' };
  else route = { page: 'not-found' };
  const filters: Record<string, string> = {};
  for (const [k, v] of params) if (k.startsWith('f.') && k.length > 2) filters[k.slice(2)] = v;
  return { route, range: readRange(params), filters, params };
}

function readRange(params: URLSearchParams): Range {
  const r = params.get('range');
  if (r === 'custom') {
    const from = params.get('from');
    const to = params.get('to');
    if (from && to && Number.isFinite(Date.parse(from)) && Number.isFinite(Date.parse(to)) && Date.parse(from) < Date.parse(to)) {
      return { kind: 'custom', from, to };
    }
    return DEFAULT_RANGE;
  }
  return (RANGE_PRESETS as readonly string[]).includes(r ?? '') ? { kind: 'preset', preset: r as RangePreset } : DEFAULT_RANGE;
}

/** The API's from/to for a range (presets stay relative: the server resolves `now`). */
export function rangeQuery(range: Range): { from: string; to: string } {
  if (range.kind === 'custom') return { from: new Date(range.from).toISOString(), to: new Date(range.to).toISOString() };
  return { from: `now-${range.preset}`, to: 'now' };
}

/** What the dashboard calls a dimension's empty value: the events without the attribute (or with it empty). */
const NOT_SET = '(not set)';

/**
 * A dimension's value as the dashboard shows it: the empty value named NOT_SET, never shown as nothing; one that
 * starts or ends with white space quoted, so "data " does not read as "data", which it does not match.
 */
export function shownValue(value: string): string {
  if (value === '') return NOT_SET;
  return value.trim() === value ? value : JSON.stringify(value);
}

/**
 * The filters as people read them: "team = a, user.id = b", "team = (not set)"; '' with none. Each value shown
 * (shownValue) and isolated:
 * a client's string with a right-to-left override reorders nothing after it in the sentence.
 */
export function filterList(filters: Record<string, string>): string {
  return Object.entries(filters).map(([k, v]) => `${k} = ${v === '' ? NOT_SET : isolated(shownValue(v))}`).join(', ');
}

/** Range plus filters, as API query parameters. */
export function apiQuery(state: ViewState): Query {
  return { ...rangeQuery(state.range), ...state.filters };
}

/**
 * Human text of a range; a custom one in the page's date format and zone, as every other time on it, and naming
 * that zone: a link shared across zones shows each reader other clock times for the same range.
 */
export function rangeLabel(range: Range): string {
  if (range.kind === 'custom') return `${dateTime(range.from)} to ${dateTime(range.to)} ${timeZoneLabel(Date.parse(range.from), timeZone(), Date.parse(range.to))}`;
  return { '1h': 'last hour', '24h': 'last 24 hours', '7d': 'last 7 days', '30d': 'last 30 days' }[range.preset];
}

/** Builds a URL for a path, carrying the range and filters, plus extra parameters (undefined removes one). */
export function buildUrl(path: string, state: Pick<ViewState, 'range' | 'filters'>, extra: Record<string, string | undefined> = {}): string {
  const p = new URLSearchParams();
  if (state.range.kind === 'custom') {
    p.set('range', 'custom');
    p.set('from', state.range.from);
    p.set('to', state.range.to);
  } else if (state.range.preset !== '24h' || Object.keys(extra).length || Object.keys(state.filters).length) {
    p.set('range', state.range.preset);
  }
  for (const [k, v] of Object.entries(state.filters)) p.set(`f.${k}`, v);
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) p.set(k, v);
  const qs = p.toString();
  return qs ? `${path}?${qs}` : path;
}

/** The URL (path and query) with one parameter set, or removed when undefined; everything else kept as it is. */
export function withParam(loc: { pathname: string; search: string }, key: string, value: string | undefined): string {
  const params = new URLSearchParams(loc.search);
  if (value === undefined) params.delete(key);
  else params.set(key, value);
  const qs = params.toString();
  return loc.pathname + (qs ? `?${qs}` : '');
}

/** Path of the current route. */
export function routePath(route: Route): string {
  if (route.page === 'hook') return `/hooks/${route.hookId}`;
  if (route.page === 'alerts') return '/alerts';
  if (route.page === 'forwarding') return '/forwarding';
  return '/';
}

/**
 * Page-specific parameters of the current URL that a range or filter change keeps (sort, breakdown, refresh, the
 * overview's hook name search).
 */
export function keptParams(params: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of ['sort', 'dir', 'by', 'state', 'refresh', 'name']) {
    const v = params.get(k);
    if (v !== null) out[k] = v;
  }
  return out;
}

export { HOOK_PARAM } from '../../shared/src/alert-range.ts';

/**
 * What a range, filter or state filter change on the same page keeps: keptParams, and on the alerts page the
 * labels of a notification's silence link (silence-link.ts), so its form stays open until the silence is made or
 * the form closed, and its hook filter. Other pages, and links to them (the header's Alerts link included), take
 * none: the form and the filter are the alerts page's.
 */
export function samePageParams(state: Pick<ViewState, 'route' | 'params'>): Record<string, string> {
  const kept = keptParams(state.params);
  if (state.route.page !== 'alerts') return kept;
  for (const [k, v] of silenceLabels(state.params)) kept[`${SILENCE_PARAM}${k}`] = v;
  const hook = state.params.get(HOOK_PARAM);
  if (hook !== null) kept[HOOK_PARAM] = hook;
  return kept;
}

/** A refresh period as `refresh=` gives it: seconds or minutes (5s, 1m). */
const REFRESH_PERIOD = /^(\d+)(s|m)$/;

/**
 * Whether a `refresh=` value turns refresh off: `off`, or a period of zero (`0s`, `0m`, `0`), which is no period at
 * all: read as a period, it would ask again at once after every answer.
 */
export function refreshOff(value: string): boolean {
  return value === 'off' || /^0+[sm]?$/.test(value);
}

/** Whether a `refresh=` value is one the page takes: a period (REFRESH_PERIOD) or off; refreshMs reads any other as the default. */
export function refreshReads(value: string): boolean {
  return refreshOff(value) || REFRESH_PERIOD.test(value);
}

/** Whether the URL's `range=` (with `from` and `to` for a custom one) is absent or one readRange takes, not replaced by the default. */
export function rangeReads(params: URLSearchParams): boolean {
  const r = params.get('range');
  return r === null || r === '24h' || readRange(params) !== DEFAULT_RANGE;
}

/** Refresh period from `refresh=` (e.g. 5s, 1m, off; null when off); 15 s by default, never faster than 1 s. */
export function refreshMs(params: URLSearchParams): number | null {
  const r = params.get('refresh');
  if (r !== null && refreshOff(r)) return null;
  const m = REFRESH_PERIOD.exec(r ?? '');
  if (!m) return 15_000;
  const ms = Number(m[1]) * (m[2] === 'm' ? 60_000 : 1000);
  return Math.max(1000, ms);
}

/** The bucket width (seconds) for a chart of a range (chart-step.ts). */
export function chartStep(range: Range): number {
  const span = range.kind === 'custom'
    ? Date.parse(range.to) - Date.parse(range.from)
    : { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 }[range.preset];
  return chartStepForSpan(span);
}

/** A custom range for a bucket span [fromMs, toMs), as a URL range. */
export function customRange(fromMs: number, toMs: number): Range {
  return { kind: 'custom', from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString() };
}

/**
 * What a series' buckets from the one starting at `first` to the one starting at `last` count, as a URL range: a
 * series' first bucket counts from its range's start and its last until its end, so a bar opened or a drag zoomed
 * to shows the figures its buckets drew.
 */
export function bucketsRange(series: { from: string; to: string; step: number }, first: string, last: string): Range {
  return customRange(Math.max(Date.parse(first), Date.parse(series.from)), Math.min(Date.parse(last) + series.step * 1000, Date.parse(series.to)));
}

/** The longest custom range zooming out gives (the API's own limit is longer). */
const WIDEST_MS = 365 * 86_400_000;

/**
 * The range one zoom-out step away: a preset widens to the next (the last hour to the last 24 hours…), a custom
 * range to twice its span around the same middle, its end never past `nowMs`; undefined at the widest already.
 */
export function widerRange(range: Range, nowMs: number): Range | undefined {
  if (range.kind === 'preset') {
    const next = RANGE_PRESETS[RANGE_PRESETS.indexOf(range.preset) + 1];
    return next === undefined ? undefined : { kind: 'preset', preset: next };
  }
  const from = Date.parse(range.from);
  const to = Date.parse(range.to);
  const span = Math.min(WIDEST_MS, (to - from) * 2);
  if (span <= to - from) return undefined;
  const end = Math.min(nowMs, (from + to + span) / 2);
  return customRange(Math.round(end - span), Math.round(end));
}

/** An answer's range: the one it covered, and with `coverage` the range asked, where retention made them differ. */
export interface CoveredAnswer {
  from: string;
  to: string;
  coverage?: RangeCoverage;
}

/**
 * The range the next calls of a page ask for, to agree with the answer they follow: the range it covered, or the
 * one asked where it covered none (a filter only raw events answer, wholly past retention.events, or any read
 * wholly past retention.rollups), which no range can be asked as.
 */
export function followRange(answer: CoveredAnswer): { from: string; to: string } {
  if (Date.parse(answer.from) < Date.parse(answer.to) || !answer.coverage) return { from: answer.from, to: answer.to };
  return { from: answer.coverage.askedFrom, to: answer.coverage.askedTo };
}

/**
 * What a page says when an answer covers another range than the one asked (its `coverage`), so a short count is
 * not read as a quiet fleet: past retention.events only whole hours are kept, and nothing a filter or breakdown
 * only raw events answer reads; past retention.rollups nothing is kept at all. Null when the answer covers the
 * range asked.
 */
export function coverageNote(answer: CoveredAnswer): string | null {
  const c = answer.coverage;
  if (!c) return null;
  const from = Date.parse(answer.from);
  if (c.limitedBy === 'retention.rollups') {
    if (from >= Date.parse(answer.to)) return 'Nothing counted: this range is older than the hourly and daily figures kept (retention.rollups).';
    return `Counted from ${dateTime(answer.from)} only, where the hourly and daily figures kept (retention.rollups) start.`;
  }
  if (from >= Date.parse(answer.to)) {
    return 'Nothing counted: this range is older than the raw events kept (retention.events), and what this view filters or breaks down by is read from them alone.';
  }
  if (from > Date.parse(c.askedFrom)) {
    return `Counted from ${dateTime(answer.from)} only, where the raw events kept (retention.events) start: what this view filters or breaks down by is read from them alone.`;
  }
  return `Counted over whole hours, ${dateTime(answer.from)} to ${dateTime(answer.to)}: past retention.events only hourly figures are kept.`;
}
