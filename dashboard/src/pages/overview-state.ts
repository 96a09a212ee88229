/**
 * The overview's state, without the DOM: the sort a URL asks for, hooks ranked by risk with their forecasts,
 * the KPIs, the client versions, the fleet chart's numbers and the empty states, each as plain data the page
 * then draws. Unit-tested in Node against API-shaped responses.
 */
import type { AlertSummary, FleetSeriesHook, FleetSeriesResponse, HookSummary, OtlpRefusal, OverviewResponse } from '../../../shared/src/api.ts';
import { largestOutput, measuredOnly, persistedAtLeast, type DeliveryStatus } from '../../../shared/src/cliff.ts';
import type { Forecast } from '../../../shared/src/forecast.ts';
import { isNotRefused } from '../../../shared/src/otlp-refusals.ts';
import type { Query } from '../api.ts';
import { forecastReading, type ForecastReading } from '../forecast.ts';
import { ago, bucketCell, bucketCovers, bucketLabel, bucketStartHeader, chars, dateTime, headroomText, num, partialNote, partialTitles, pct, plural, shownStatus } from '../format.ts';
import { HOOK_PARAM, buildUrl, bucketsRange, filterList, keptParams, rangeLabel, withParam, type Range, type ViewState } from '../state.ts';
import { lowerBoundWhy, persistedBound, persistedKnown } from './hook-state.ts';

/** Rows whose forecast the overview fits (one daily series request each), riskiest first. */
export const FORECAST_ROWS = 20;
/** Rows drawn before "Show all". */
export const ROW_LIMIT = 200;
/** Hooks drawn on their own in the fleet chart; the rest are one "other hooks" series. */
export const FLEET_TOP = 5;
/** A fitted forecast is fitted again after this long. */
export const FORECAST_TTL_MS = 300_000;

export type SortKey = 'risk' | 'name' | 'executions' | 'persisted' | 'largest' | 'headroom' | 'forecast' | 'lastSeen';
export type SortDir = 'asc' | 'desc';
/** `opt` columns give way on a phone: status, hook, persisted and largest output stay. */
export const COLUMNS: { key: SortKey | null; label: string; opt?: boolean }[] = [
  { key: 'risk', label: 'Status' },
  { key: 'name', label: 'Hook' },
  { key: null, label: 'Largest output over time', opt: true },
  { key: 'executions', label: 'Executions', opt: true },
  { key: null, label: 'Commands OK', opt: true },
  { key: 'persisted', label: 'Persisted' },
  { key: 'largest', label: 'Largest output' },
  { key: 'headroom', label: 'Headroom', opt: true },
  { key: 'forecast', label: 'Crosses the cap', opt: true },
  { key: 'lastSeen', label: 'Last seen', opt: true },
];
/** The direction a column sorts in on its first click: the riskiest or largest first. */
const FIRST_DIR: Record<SortKey, SortDir> = {
  risk: 'asc', name: 'asc', executions: 'desc', persisted: 'desc', largest: 'desc', headroom: 'asc', forecast: 'asc', lastSeen: 'desc',
};
const SORT_KEYS = COLUMNS.map((c) => c.key).filter((k): k is SortKey => k !== null);
const RISK: Record<DeliveryStatus, number> = { over: 0, near: 1, unknown: 2, ok: 3 };

/** A hook's fitted forecast and when it was fitted. */
export interface ForecastEntry {
  forecast: Forecast | null;
  /** Days with size data the fit had. */
  days: number;
  at: number;
}

/** The sort the URL asks for: risk unless a known column is named, in that column's first direction unless told. */
export function readSort(params: URLSearchParams): { sort: SortKey; dir: SortDir } {
  const sortParam = params.get('sort');
  const sort: SortKey = (SORT_KEYS as string[]).includes(sortParam ?? '') ? (sortParam as SortKey) : 'risk';
  const dirParam = params.get('dir');
  return { sort, dir: dirParam === 'asc' || dirParam === 'desc' ? dirParam : FIRST_DIR[sort] };
}

/** A column header: its label, whether and how it is sorted, and the URL its click goes to. */
export interface HeaderCell {
  key: SortKey | null;
  label: string;
  opt: boolean;
  ariaSort: 'ascending' | 'descending' | 'none';
  /** " ▲" or " ▼" on the sorted column. */
  arrow: string;
  url: string | null;
}

export function headerCells(state: ViewState, sort: SortKey, dir: SortDir): HeaderCell[] {
  return COLUMNS.map((c) => {
    const key = c.key;
    if (!key) return { key, label: c.label, opt: c.opt === true, ariaSort: 'none', arrow: '', url: null };
    const active = key === sort;
    const nextDir = active ? (dir === 'asc' ? 'desc' : 'asc') : FIRST_DIR[key];
    return {
      key, label: c.label, opt: c.opt === true,
      ariaSort: active ? (dir === 'asc' ? 'ascending' : 'descending') : 'none',
      arrow: active ? (dir === 'asc' ? ' ▲' : ' ▼') : '',
      url: buildUrl('/', state, { sort: key, dir: nextDir, refresh: state.params.get('refresh') ?? undefined, name: state.params.get('name') ?? undefined }),
    };
  });
}

/**
 * How a hook's forecast reads in its row: over the cap whatever the fit, unknown without size data, and
 * undefined (a dash) while it has not been fitted.
 */
export function forecastOf(hk: HookSummary, forecasts: ReadonlyMap<string, ForecastEntry>, pastRange = false): ForecastReading | undefined {
  const status = shownStatus(hk);
  if (status === 'over') return forecastReading(null, { status, pastRange });
  const f = forecasts.get(hk.id);
  if (!f) return status === 'unknown' && largestOutput(hk) === null ? forecastReading(null, { status }) : undefined;
  return forecastReading(f.forecast, { status, latest: largestOutput(hk), unmeasured: hk.sizeUnknownExecutions, days: f.days, pastRange });
}

/** The hooks in the order the table shows them; ties keep the API's order. */
export function sortHooks(hooks: readonly HookSummary[], sort: SortKey, dir: SortDir, forecasts: ReadonlyMap<string, ForecastEntry>): HookSummary[] {
  const sign = dir === 'asc' ? 1 : -1;
  // Unknown values sort last in either direction: unknown is not zero, nor the smallest.
  const known = (a: number | null | undefined, b: number | null | undefined): number => {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1;
    if (b === null || b === undefined) return -1;
    return sign * (a - b);
  };
  const days = (hk: HookSummary): number | null | undefined => forecastOf(hk, forecasts)?.days;
  const list = hooks.map((hk, i) => ({ hk, i }));
  const compare = (x: { hk: HookSummary; i: number }, y: { hk: HookSummary; i: number }): number => {
    const a = x.hk;
    const b = y.hk;
    switch (sort) {
      case 'name': return sign * a.hookName.localeCompare(b.hookName);
      case 'executions': return sign * (a.executions - b.executions);
      case 'persisted': return sign * (persistedAtLeast(a) - persistedAtLeast(b));
      case 'largest': return known(largestOutput(a), largestOutput(b));
      case 'headroom': return known(a.headroom, b.headroom);
      case 'forecast': return known(days(a), days(b));
      case 'lastSeen': return sign * (Date.parse(a.lastSeen) - Date.parse(b.lastSeen));
      default: {
        // The API ranks by status, persisted outputs and headroom; a hook partly without size data ranks as
        // unknown, and the forecast breaks the remaining ties.
        const risk = RISK[shownStatus(a)] - RISK[shownStatus(b)];
        if (risk) return sign * risk;
        const tie = a.status === b.status && a.outputsPersisted === b.outputsPersisted && a.headroom === b.headroom;
        return (tie ? known(days(a), days(b)) : 0) || sign * (x.i - y.i);
      }
    }
  };
  list.sort((x, y) => compare(x, y) || x.i - y.i);
  return list.map((x) => x.hk);
}

/**
 * The hooks whose forecast to fit now: near, ok, or unknown with some executions measured (the server calls a
 * partly measured hook unknown, and its measured sizes still grow towards the cap; over needs none), riskiest
 * first, not fitted in the last five minutes.
 */
export function forecastTodo(hooks: readonly HookSummary[], forecasts: ReadonlyMap<string, ForecastEntry>, nowMs: number): HookSummary[] {
  const fits = (hk: HookSummary): boolean => hk.status === 'near' || hk.status === 'ok' || (hk.status === 'unknown' && largestOutput(hk) !== null);
  return hooks.filter(fits).slice(0, FORECAST_ROWS)
    .filter((hk) => (forecasts.get(hk.id)?.at ?? 0) < nowMs - FORECAST_TTL_MS);
}

/** One row's cells as text. */
export interface HookRow {
  id: string;
  status: DeliveryStatus;
  executions: string;
  success: string;
  persisted: string;
  /** Said when the count is a lower bound: executions without size data, or measured over the cap only. */
  persistedTitle: string;
  largest: string;
  /** Said when the largest output is of the measured executions only (at least), as the headroom's (at most). */
  largestTitle: string;
  headroom: string;
  headroomTitle: string;
  forecast: string;
  forecastTitle: string;
  lastSeen: string;
  lastSeenTitle: string;
}

export function hookRow(hk: HookSummary, reading: ForecastReading | undefined, nowMs: number): HookRow {
  const persisted = persistedKnown(hk);
  // Executions without size data are not measured: the largest output is then at least, the headroom at most.
  const h = hk.headroom;
  const unmeasured = hk.sizeUnknownExecutions > 0 && h !== null ? `${plural(hk.sizeUnknownExecutions, 'execution')} sent no size data` : null;
  const largest = unmeasured === null ? chars(largestOutput(hk)) : `at least ${chars(largestOutput(hk))}`;
  const bound = (text: string): string => (unmeasured === null ? text : `${h !== null && h < 0 ? 'at least' : 'at most'} ${text}`);
  return {
    id: hk.id,
    status: shownStatus(hk),
    executions: num(hk.executions),
    success: num(hk.success),
    persisted: persisted.text,
    persistedTitle: persisted.why === null ? '' : `${persisted.text}: ${persisted.why}`,
    largest,
    largestTitle: unmeasured === null ? '' : `${largest}: ${unmeasured}`,
    headroom: h === null ? 'unknown' : bound(h < 0 ? `${chars(-h)} over` : chars(h)),
    headroomTitle: unmeasured === null ? headroomText(h) : `${h === 0 ? 'at the cap or over it' : bound(headroomText(h))}: ${unmeasured}`,
    forecast: reading ? reading.value : '–',
    forecastTitle: reading?.sentence ?? '',
    lastSeen: ago(hk.lastSeen, nowMs),
    lastSeenTitle: dateTime(hk.lastSeen),
  };
}

/**
 * Every hook of pages asked one after another, each once (its first answer kept). The API ranks the hooks anew
 * for each page, so a hook whose risk changed between two requests can come on both sides of their boundary.
 */
export function uniqueHooks(pages: readonly (readonly HookSummary[])[]): HookSummary[] {
  const byId = new Map<string, HookSummary>();
  for (const hooks of pages) for (const hk of hooks) if (!byId.has(hk.id)) byId.set(hk.id, hk);
  return [...byId.values()];
}

/** The longest hook name search the overview sends (the API's limit). */
export const SEARCH_MAX = 512;

/** The overview's hook name search from the URL's `name=`, without the spaces around it; '' for none. */
export function searchOf(params: URLSearchParams): string {
  return (params.get('name') ?? '').trim().slice(0, SEARCH_MAX);
}

/** The URL (path and query) with the hook name search set, or removed when empty; everything else kept. */
export function searchUrl(loc: { pathname: string; search: string }, search: string): string {
  const s = search.trim().slice(0, SEARCH_MAX);
  return withParam(loc, 'name', s === '' ? undefined : s);
}

/**
 * The rows drawn (the first ROW_LIMIT until "Show all"), the note under the table and the button's label. `total`
 * is how many hooks match over all the API's pages: when fewer were loaded (the riskiest first), the note says
 * so and "Show all" offers every one of them. With a search, the count is of the hooks whose name matches.
 */
export function tableView(sorted: readonly HookSummary[], showAll: boolean, total = sorted.length, search = ''): { shown: HookSummary[]; count: string; note: string; showAllLabel: string | null } {
  const shown = showAll ? [...sorted] : sorted.slice(0, ROW_LIMIT);
  const all = Math.max(total, sorted.length);
  const matching = search === '' ? '' : ` with "${search}" in the name`;
  const count = all > sorted.length ? `${num(sorted.length)} of ${plural(all, 'hook')}${matching} (the riskiest)` : `${plural(all, 'hook')}${matching}`;
  return {
    shown,
    count: `${count}.`,
    note: `${count}. Forecasts are fitted for the ${FORECAST_ROWS} riskiest hooks that are not over the cap (daily largest output, last 30 days).`,
    showAllLabel: all > shown.length ? ` Show all ${num(all)}` : null,
  };
}

export interface Kpi {
  id: string;
  label: string;
  value: string;
  /** The time a relative value ("3 min ago") counts from, so it can keep counting. */
  agoOf?: string | undefined;
  note?: string | undefined;
}

/**
 * The fleet KPIs; the status counts are counted from the rows as the table shows them (partly unmeasured is
 * unknown), or taken from the server's counts over every hook while only the riskiest are loaded.
 */
export function kpis(overview: OverviewResponse, hooks: readonly HookSummary[], filters: Record<string, string>, nowMs: number): Kpi[] {
  const t = overview.totals;
  const sc: Record<DeliveryStatus, number> = { over: 0, near: 0, ok: 0, unknown: 0 };
  if (hooks.length < overview.hooks) Object.assign(sc, overview.statusCounts);
  else for (const hk of hooks) sc[shownStatus(hk)]++;
  const filtered = Object.keys(filters).length > 0;
  // The sum of the hooks' figures, as the hooks table and the fleet chart give them; a lower bound says so, and
  // why, as a hook's figure does: unknown is not zero.
  const persisted = persistedBound(overview.persisted, t.sizeUnknownExecutions, overview.measuredOnly);
  // Executions without size data may have lost output unseen: the count of those that did is then a lower bound.
  const lost = t.sizeUnknownExecutions === 0 ? `${plural(t.executionsWithPersisted, 'execution')} lost output to the cap`
    : t.executionsWithPersisted === 0 ? 'no execution is known to have lost output to the cap'
    : `at least ${plural(t.executionsWithPersisted, 'execution')} lost output to the cap`;
  return [
    { id: 'executions', label: 'Executions', value: num(t.executions), note: `${plural(t.numHooks, 'hook command')} run` },
    { id: 'success', label: 'Commands reporting success', value: num(t.success), note: t.numHooks ? pct(t.success / t.numHooks) : undefined },
    { id: 'persisted', label: 'Outputs persisted', value: persisted.text, note: persisted.why === null ? lost : `${lost}; ${persisted.why}` },
    { id: 'hooks', label: 'Hooks', value: num(overview.hooks), note: `${num(sc.over)} over · ${num(sc.near)} near · ${num(sc.ok)} ok · ${num(sc.unknown)} unknown` },
    { id: 'size-share', label: 'Events with size data', value: pct(overview.sizeDataShare), note: `${plural(t.sizeUnknownExecutions, 'execution')} without sizes` },
    filtered
      ? {
        id: 'last-event', label: 'Last matching event', value: overview.lastEventAt === null ? 'none' : ago(overview.lastEventAt, nowMs), agoOf: overview.lastEventAt ?? undefined,
        note: overview.lastEventAt === null ? `nothing matches ${filterList(filters)}` : dateTime(overview.lastEventAt),
      }
      : { id: 'last-event', label: 'Last event', value: ago(overview.lastEventAt, nowMs), agoOf: overview.lastEventAt ?? undefined, note: dateTime(overview.lastEventAt) },
  ];
}

/** The client versions table and the versions that send no sizes. */
export function versionsView(overview: OverviewResponse): { rows: { version: string; cells: string[] }[]; blind: string | null } {
  const blind = overview.clientVersions.filter((v) => !v.hasSizeData);
  return {
    rows: overview.clientVersions.map((v) => ({
      version: v.version,
      cells: [v.serviceName, v.version, num(v.executions), num(v.sizeUnknownExecutions), v.hasSizeData ? 'reported' : 'missing (older than 2.1.280: upgrade to see delivery)'],
    })),
    blind: blind.length ? `Without size data: ${blind.map((v) => `${v.serviceName} ${v.version}`).join(', ')}` : null,
  };
}

/** Nothing was ever received (and no filter hides it): the page shows how to send telemetry instead. */
export function showsSetup(overview: OverviewResponse, filters: Record<string, string>): boolean {
  return overview.lastEventAt === null && Object.keys(filters).length === 0;
}

/**
 * Why the table is empty: a search no hook name matches while the range has hooks (clearSearch: the way out), a
 * filter that matches nothing (with a way out), or a quiet range.
 */
export function emptyTable(state: ViewState, overview: OverviewResponse, nowMs: number, search = ''): { text: string; clearUrl: string | null; clearSearch?: true } {
  if (search !== '' && overview.hooks > 0) {
    const filtered = Object.keys(state.filters).length > 0 ? ` matching ${filterList(state.filters)}` : '';
    return { text: `No hook${filtered} in the ${rangeLabel(state.range)} has "${search}" in its name. `, clearUrl: null, clearSearch: true };
  }
  if (Object.keys(state.filters).length > 0) {
    return { text: `No hook executions match ${filterList(state.filters)} in the ${rangeLabel(state.range)}. `, clearUrl: buildUrl('/', { range: state.range, filters: {} }, keptParams(state.params)) };
  }
  return { text: `No hook executions in the ${rangeLabel(state.range)}; the newest event is stamped ${ago(overview.lastEventAt, nowMs)}. Try a longer range.`, clearUrl: null };
}

/** A hook's page over the overview's range (or a bucket's), with the overview's filters. */
export function hookUrl(state: ViewState, id: string, range: Range = state.range): string {
  // The overview's sort, pause and refresh ride along, so "← Overview" (and Back) come back to them.
  return buildUrl(`/hooks/${id}`, { range, filters: state.filters }, keptParams(state.params));
}

/**
 * Per hook, the rules of its firing alerts that no silence mutes, each once, in the API's order (the newest
 * firing first): what its row's marker names. A silenced alert is left out, as Alertmanager's alert list leaves it
 * out by default (the header does not count it either); an alert of no single hook (`blind`, a quiet feed) has no
 * row, and counts in the header only.
 */
export function firingByHook(alerts: readonly AlertSummary[]): Map<string, string[]> {
  const byHook = new Map<string, string[]>();
  for (const a of alerts) {
    if (a.state !== 'firing' || a.silencedBy.length > 0 || a.hookId === null) continue;
    const rules = byHook.get(a.hookId) ?? [];
    if (!rules.includes(a.rule)) rules.push(a.rule);
    byHook.set(a.hookId, rules);
  }
  return byHook;
}

/**
 * What the hooks table says, once, when the alerts API could not answer: which hooks fire is unknown, which is not
 * none firing, so no row is marked (the last markers may be gone since) until an answer marks them again.
 */
export const FIRING_UNKNOWN = 'Alert state unavailable: hooks with an alert firing are not marked until the alerts API answers again.';

/** A row's firing marker's title and accessible name: "Firing: silence, persisted". */
export function firingLabel(rules: readonly string[]): string {
  return `Firing: ${rules.join(', ')}`;
}

/**
 * Where a row's firing marker leads: the alerts page filtered to the hook, its alerts alone, firing first, each with
 * its notifications and a way to silence it; with the overview's range, filters and sort, as the hook's own link.
 */
export function hookAlertsUrl(state: ViewState, id: string): string {
  return buildUrl('/alerts', state, { ...keptParams(state.params), [HOOK_PARAM]: id });
}

/** The range of one fleet bucket. */
export function bucketRange(fleet: FleetSeriesResponse | undefined, i: number): Range | undefined {
  const start = fleet?.buckets[i];
  if (!fleet || !start) return undefined;
  return bucketsRange(fleet, start, start);
}

/** The overview zoomed to the buckets i..j of the fleet chart. */
export function zoomUrl(state: ViewState, fleet: FleetSeriesResponse | undefined, i: number, j: number): string | undefined {
  const a = fleet?.buckets[i];
  const b = fleet?.buckets[j];
  if (!fleet || !a || !b) return undefined;
  return buildUrl('/', { range: bucketsRange(fleet, a, b), filters: state.filters }, keptParams(state.params));
}

/** A chart element under the pointer: which dataset, which bucket. */
export interface ChartHit {
  datasetIndex: number;
  index: number;
}

/**
 * Where a click on the fleet chart goes: a hook's bar opens that hook at its bucket's time; the grouped bar (many
 * hooks) zooms the overview to that bucket; a bucket where nothing was persisted, the line and the gaps open
 * nothing. Only bars under the pointer with a value count, never the others of the same column.
 */
export function fleetClickUrl(state: ViewState, fleet: FleetSeriesResponse | undefined, view: Pick<FleetView, 'shown' | 'shownPersisted' | 'restPersisted' | 'restLabel'>, hits: readonly ChartHit[]): string | undefined {
  for (const hit of hits) {
    const shown = view.shown[hit.datasetIndex];
    if (shown) {
      if ((view.shownPersisted[hit.datasetIndex]?.[hit.index] ?? 0) <= 0) continue;
      const r = bucketRange(fleet, hit.index);
      return r ? hookUrl(state, shown.id, r) : undefined;
    }
    if (hit.datasetIndex === view.shown.length && view.restLabel !== null && (view.restPersisted[hit.index] ?? 0) > 0) {
      return zoomUrl(state, fleet, hit.index, hit.index);
    }
  }
  return undefined;
}

/**
 * A hook's outputs persisted per bucket, at least (persistedAtLeast): an execution measured over the cap counts
 * where its client does not report num_outputs_persisted, so the chart shows what the hook's status says.
 */
export function persistedSeries(f: FleetSeriesHook): number[] {
  return perBucket(f, persistedAtLeast);
}

/** A figure of a hook's persisted counts (persistedAtLeast, measuredOnly) per bucket. */
function perBucket(f: FleetSeriesHook, of: (c: { outputsPersisted: number; executionsWithPersisted: number }) => number): number[] {
  return f.outputsPersisted.map((v, i) => of({ outputsPersisted: v, executionsWithPersisted: f.executionsWithPersisted[i] ?? 0 }));
}

/** Hooks whose sparklines one request asks for by id (the API takes up to 200 `ids`). */
export const SPARK_BATCH = 100;

/**
 * The fleet series query for the sparklines of `ids`, rows past the fleet answer's limit: the answer's range and
 * step (its buckets, so the sparklines line up with the others) and the page's filters.
 */
export function sparkQuery(fleet: Pick<FleetSeriesResponse, 'from' | 'to' | 'step'>, filters: Record<string, string>, ids: readonly string[]): Query {
  return { ...filters, from: fleet.from, to: fleet.to, step: String(fleet.step), ids: ids.join(',') };
}

/**
 * The sparkline's text alternative; `partial` (fleetPartial) names the buckets the range cuts, the last one still
 * filling in a range ending now, so a lower value there is not read as a dip. Where executions sent no size data
 * the peak is at least the one measured, and a bucket of theirs with no persisted output known may have had one:
 * the count of buckets with persisted outputs is then at least, or none is known, never "0 buckets".
 */
export function sparkLabel(hookName: string, f: FleetSeriesHook, partial: readonly (string | null)[] = [], persisted: readonly number[] = persistedSeries(f)): string {
  const peak = f.largest.reduce<number | null>((m, v) => (v === null ? m : Math.max(m ?? 0, v)), null);
  const persistedBuckets = persisted.filter((v) => v > 0).length;
  const unknown = f.sizeUnknownExecutions.reduce((n, v) => n + v, 0);
  const unknownBuckets = f.sizeUnknownExecutions.filter((v) => v > 0).length;
  // A bucket of executions without size data that shows no persisted output may have had one.
  const atLeast = f.sizeUnknownExecutions.some((v, i) => v > 0 && !((persisted[i] ?? 0) > 0));
  const buckets = !atLeast ? `${plural(persistedBuckets, 'bucket')} with persisted outputs`
    : persistedBuckets > 0 ? `at least ${plural(persistedBuckets, 'bucket')} with persisted outputs` : 'no bucket is known to have persisted outputs';
  const unmeasured = unknown > 0 ? ` (${plural(unknown, 'execution')} in ${plural(unknownBuckets, 'bucket')} sent no size data)` : '';
  const note = partialNote(partial);
  return `${hookName}: largest output per bucket, peak ${unknown > 0 && peak !== null ? 'at least ' : ''}${chars(peak)}; ${buckets}${unmeasured}${note === undefined ? '' : `; ${note}`}`;
}

/** What a hook's sparkline draws from a fleet answer besides its largest outputs. */
export interface SparkView {
  /** Outputs persisted per bucket (persistedSeries). */
  persisted: number[];
  /** Its text alternative (sparkLabel). */
  label: string;
  /** The buckets the answer's range cuts (fleetPartial). */
  partial: (string | null)[];
}

/**
 * The sparklines of one fleet answer, each hook's worked out the first time it is drawn and kept with the answer:
 * a refresh draws the rows more than once (ahead of its fleet answer, when it comes, once the forecasts are fitted),
 * and a sort or a search draws them again, each row's sparkline from the same answer.
 */
export function sparkViews(fleet: FleetSeriesResponse): (hookName: string, f: FleetSeriesHook) => SparkView {
  const partial = fleetPartial(fleet);
  const views = new WeakMap<FleetSeriesHook, SparkView>();
  return (hookName, f) => {
    let v = views.get(f);
    if (v === undefined) {
      const persisted = persistedSeries(f);
      v = { persisted, label: sparkLabel(hookName, f, partial, persisted), partial };
      views.set(f, v);
    }
    return v;
  };
}

/** Per bucket of a fleet answer, its title when the range cuts it (partialTitles: "08:10–08:11 (partial)"), null when whole. */
export function fleetPartial(fleet: FleetSeriesResponse): (string | null)[] {
  return partialTitles(bucketCovers(fleet, fleet.buckets, fleet.ends), fleet.step, Date.parse(fleet.to) - Date.parse(fleet.from));
}

/**
 * The radius of each point of a line with gaps (unknown buckets are not bridged). Past `denseAfter` buckets the
 * line draws no points, except where a bucket stands alone between gaps: without its point it would not show,
 * and it is drawn larger (`alone`), as the line's only mark there.
 */
export function linePointRadii(values: readonly (number | null)[], radius = 2, denseAfter = 40, alone = 4): number | number[] {
  if (values.length <= denseAfter) return radius;
  const known = (i: number): boolean => i >= 0 && i < values.length && values[i] !== null;
  return values.map((_v, i) => (known(i) && !known(i - 1) && !known(i + 1) ? alone : 0));
}

/** The fleet chart's numbers: the top hooks by persisted outputs, the rest grouped, the fleet's largest output per bucket. */
export interface FleetView {
  labels: string[];
  /** Hooks drawn on their own (those with persisted outputs, up to the top N). */
  shown: FleetSeriesHook[];
  /** Each shown hook's outputs persisted per bucket (persistedSeries), in the order of `shown`. */
  shownPersisted: number[][];
  restPersisted: number[];
  /** shownPersisted and restPersisted in words (persistedBound): "at least" or "none known" where a bucket's is a lower bound. */
  shownText: string[][];
  restText: string[];
  /** "other hooks", "all hooks" (when none is drawn on its own), or null when the rest persisted nothing. */
  restLabel: string | null;
  largest: (number | null)[];
  peak: number | null;
  summary: string;
  tableHeaders: string[];
  tableRows: string[][];
  /** Hook id per bar dataset, null for the grouped rest. */
  topIds: (string | null)[];
  /** Per bucket, its title when the range cuts it (partialTitles), null when whole. */
  partial: (string | null)[];
}

/** Whether a hook persisted outputs (persistedAtLeast) in any bucket. */
function persistsAny(hk: FleetSeriesHook): boolean {
  return hk.outputsPersisted.some((v, i) => persistedAtLeast({ outputsPersisted: v, executionsWithPersisted: hk.executionsWithPersisted[i] ?? 0 }) > 0);
}

/** The fleet chart's sums per bucket: of the grouped rest (the hooks not drawn on their own), and of every hook. */
interface FleetSums {
  restPersisted: number[];
  restSizeUnknown: number[];
  restMeasured: number[];
  executions: number[];
  largest: (number | null)[];
  /** Over the whole range and every hook: persisted outputs, executions without size data, measured-only ones. */
  totals: { persisted: number; sizeUnknown: number; measured: number };
}

/**
 * The fleet chart's sums, those past the answer's limit (fleet.rest) included, in one pass over each hook's
 * buckets: a hook at a time, adding into each bucket's sums, so the work is the size of the answer (hooks ×
 * buckets) with nothing looked up or allocated per hook and bucket.
 */
function fleetSums(fleet: FleetSeriesResponse, shown: ReadonlySet<FleetSeriesHook>): FleetSums {
  const n = fleet.buckets.length;
  const beyond = fleet.rest;
  const from = (xs: readonly number[] | undefined): number[] => Array.from({ length: n }, (_v, i) => xs?.[i] ?? 0);
  const sum = (xs: readonly number[] | undefined): number => (xs ?? []).reduce((a, b) => a + b, 0);
  const s: FleetSums = {
    restPersisted: from(beyond?.persisted), restSizeUnknown: from(beyond?.sizeUnknownExecutions), restMeasured: from(beyond?.measuredOnly),
    executions: from(beyond?.executions), largest: Array.from({ length: n }, (_v, i) => beyond?.largest[i] ?? null),
    totals: { persisted: sum(beyond?.persisted), sizeUnknown: sum(beyond?.sizeUnknownExecutions), measured: sum(beyond?.measuredOnly) },
  };
  for (const hk of fleet.hooks) {
    const grouped = !shown.has(hk);
    for (let i = 0; i < n; i++) {
      const c = { outputsPersisted: hk.outputsPersisted[i] ?? 0, executionsWithPersisted: hk.executionsWithPersisted[i] ?? 0 };
      const persisted = persistedAtLeast(c);
      const measured = measuredOnly(c);
      const sizeUnknown = hk.sizeUnknownExecutions[i] ?? 0;
      s.totals.persisted += persisted;
      s.totals.sizeUnknown += sizeUnknown;
      s.totals.measured += measured;
      if (grouped) {
        s.restPersisted[i] = (s.restPersisted[i] ?? 0) + persisted;
        s.restSizeUnknown[i] = (s.restSizeUnknown[i] ?? 0) + sizeUnknown;
        s.restMeasured[i] = (s.restMeasured[i] ?? 0) + measured;
      }
      s.executions[i] = (s.executions[i] ?? 0) + (hk.executions[i] ?? 0);
      const v = hk.largest[i] ?? null;
      if (v !== null) s.largest[i] = Math.max(s.largest[i] ?? 0, v);
    }
  }
  return s;
}

export function fleetView(fleet: FleetSeriesResponse, top = FLEET_TOP): FleetView {
  const span = Date.parse(fleet.to) - Date.parse(fleet.from);
  const labels = fleet.buckets.map((b) => bucketLabel(b, fleet.step, span));
  const covers = bucketCovers(fleet, fleet.buckets, fleet.ends);
  const withPersisted = fleet.hooks.filter(persistsAny);
  const shown = withPersisted.slice(0, top);
  const shownPersisted = shown.map(persistedSeries);
  // The hooks past the answer's limit come summed (fleet.rest): they belong to the grouped rest and the totals.
  const beyond = fleet.rest;
  const sums = fleetSums(fleet, new Set(shown));
  const { restPersisted, executions, largest } = sums;
  // Counts of persisted outputs per bucket in words, "at least" or "none known" where the bucket's is a lower bound.
  const inWords = (persistedPer: readonly number[], sizeUnknown: readonly number[], measuredPer: readonly number[]): string[] =>
    persistedPer.map((v, i) => persistedBound(v, sizeUnknown[i] ?? 0, measuredPer[i] ?? 0).text);
  const shownText = shown.map((hk) => inWords(persistedSeries(hk), hk.sizeUnknownExecutions, perBucket(hk, measuredOnly)));
  const restText = inWords(restPersisted, sums.restSizeUnknown, sums.restMeasured);
  const peak = largest.reduce<number | null>((m, v) => (v === null ? m : Math.max(m ?? 0, v)), null);
  const totalPersisted = sums.totals.persisted;
  const hooksWithPersisted = withPersisted.length + (beyond?.hooksWithPersisted ?? 0);
  const bucketsWith = restPersisted.map((v, i) => v + shownPersisted.reduce((s, p) => s + (p[i] ?? 0), 0)).filter((v) => v > 0).length;
  // A lower bound says so, and why, as the fleet's total does: unknown is not zero, and an execution measured over
  // the cap without its count reported is one output at least, in a hook drawn or past the answer's limit alike.
  const why = lowerBoundWhy(sums.totals.sizeUnknown, sums.totals.measured);
  const summary = totalPersisted === 0
    ? `${why === null ? 'No outputs persisted in this range' : `No output is known to have been persisted in this range (${why})`}; the largest output in the fleet was ${chars(peak)} against the 10,000 cap.`
    : `${why === null ? '' : 'At least '}${plural(totalPersisted, 'output')} persisted across ${plural(hooksWithPersisted, 'hook')}, in ${num(bucketsWith)} of ${plural(fleet.buckets.length, 'bucket')}${why === null ? '' : ` (${why})`}; the largest output in the fleet was ${chars(peak)}.`;
  const tableRows = fleet.buckets.map((b, i) => [bucketCell(b, covers[i], fleet.step), num(executions[i] ?? 0), ...shownText.map((t) => t[i] ?? '0'), restText[i] ?? '0', num(largest[i] ?? null)])
    .filter((_r, i) => (executions[i] ?? 0) > 0);
  return {
    labels, shown, shownPersisted, restPersisted, shownText, restText,
    restLabel: restPersisted.some((v) => v > 0) ? (shown.length ? 'other hooks' : 'all hooks') : null,
    largest, peak, summary,
    tableHeaders: [bucketStartHeader(fleet.step), 'Executions', ...shown.map((hk) => hk.hookName), shown.length ? 'Other hooks' : 'All hooks', 'Largest output'],
    tableRows,
    topIds: [...shown.map((hk) => hk.id), null],
    partial: fleetPartial(fleet),
  };
}

/** What the overview says of the OTLP receivers, all the setup snippet is made of besides the page's own host. */
export type SetupFacts = Pick<OverviewResponse, 'otlpHttpPort' | 'otlpHttpTls' | 'otlpIngestToken' | 'otlpClientCertificate' | 'otlpRefusals'>;

/** What each reason of refusal means to the person sending, by transport's status (the path, where known, follows). */
const REFUSAL_WORDS: Record<string, string> = {
  not_found: 'no OTLP endpoint',
  unauthenticated: 'missing or wrong bearer token',
  method_not_allowed: 'not a POST',
  unsupported_media_type: 'a Content-Type that is not OTLP',
  too_large: 'larger than otlp.maxRequestBytes',
  host_not_allowed: 'a Host this port does not answer',
  malformed: 'not OTLP over this port\'s protocol',
  bad_request: 'a body that does not decode',
  client_aborted: 'the client gave up before sending the whole request',
  request_timeout: 'timed out, not received whole within otlp.requestTimeout',
};

/**
 * The OTLP requests refused lately, for the empty overview: an exporter drops a refused batch silently, so a wrong
 * endpoint or a missing token would otherwise look like telemetry that never left. Those that did not arrive whole
 * are counted apart: hookwatch refused none of them. Null when there were none (or the server does not say). Each
 * line: the count, the transport's status, what it means with the last path asked, what was wrong with the last
 * body that did not decode, as its client was told, and the fix where hookwatch knows it.
 */
export function refusalsView(refusals: readonly OtlpRefusal[] | undefined, nowMs: number): { headline: string; lines: string[] } | null {
  const total = (refusals ?? []).reduce((n, r) => n + r.count, 0);
  if (!refusals || total === 0) return null;
  const notWhole = refusals.reduce((n, r) => (isNotRefused(r.reason) ? n + r.count : n), 0);
  const refused = total - notWhole;
  const what = refused === 0 ? `${plural(notWhole, 'OTLP request')} did not arrive whole`
    : `hookwatch refused ${plural(refused, 'OTLP request')}${notWhole ? `, and ${num(notWhole)} more did not arrive whole,` : ''}`;
  return {
    headline: `${what} in the last 15 minutes (as counted by the hookwatch process that answered this page):`,
    lines: refusals.map((r) => {
      const words = REFUSAL_WORDS[r.reason] ?? r.reason.replace(/_/g, ' ');
      const path = r.lastPath === undefined ? '' : r.reason === 'not_found' ? ` at ${r.lastPath}` : ` (last on ${r.lastPath})`;
      const problem = r.lastProblem === undefined ? '' : `: ${r.lastProblem}`;
      return `${num(r.count)} over OTLP/${r.transport === 'http' ? 'HTTP' : 'gRPC'}: ${words}${path}, the last ${ago(r.lastAt, nowMs)}${problem}${r.hint ? `; ${r.hint}` : ''}`;
    }),
  };
}

/**
 * How to point Claude Code at this hookwatch, shown until the first event arrives: shell lines that work when
 * pasted (this host, the OTLP/HTTP port it reports and the scheme that port speaks, which TLS on the dashboard's
 * own port says nothing of), the bearer header when the receivers require the ingest token (a placeholder: the
 * page never knows the token), under TLS a comment on the CA variable (the server cannot know whether clients
 * trust its CA), under mutual TLS the client certificate and key (paths to fill in), and a note on the port and on
 * clients without sizes. The comments hold no quote, parenthesis or redirection: zsh, unless told otherwise
 * (interactivecomments), reads a comment pasted at its prompt as a command, and one of those would take the lines
 * after it, or the whole paste, with it.
 */
export function setupView(loc: { protocol: string; hostname: string }, otlp: SetupFacts): { lines: string[]; note: string } {
  const { otlpHttpPort, otlpHttpTls, otlpIngestToken, otlpClientCertificate } = otlp;
  const port = otlpHttpPort ?? 4318;
  const scheme = otlpHttpTls === undefined ? loc.protocol : otlpHttpTls ? 'https:' : 'http:';
  return {
    lines: [
      'export CLAUDE_CODE_ENABLE_TELEMETRY=1',
      'export OTEL_LOGS_EXPORTER=otlp',
      'export OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf',
      `export OTEL_EXPORTER_OTLP_ENDPOINT=${scheme}//${loc.hostname}:${port}`,
      ...(scheme === 'https:' ? ['# if the certificate of hookwatch is from a CA this machine does not trust, also: export OTEL_EXPORTER_OTLP_CERTIFICATE=/path/to/ca.crt'] : []),
      ...(otlpClientCertificate === true ? [
        '# hookwatch requires a client certificate, mutual TLS: put yours and its key in place of these paths',
        'export OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=/path/to/client.crt',
        'export OTEL_EXPORTER_OTLP_CLIENT_KEY=/path/to/client.key',
      ] : []),
      ...(otlpIngestToken === true ? [
        '# hookwatch requires its ingest token, HOOKWATCH_INGEST_TOKEN: put it after Bearer, in place of the placeholder',
        'export OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer <token>"',
      ] : []),
      '# optional: lets you filter and break down by team',
      'export OTEL_RESOURCE_ATTRIBUTES=team=platform',
    ],
    note: otlpHttpPort === undefined
      ? 'The endpoint is hookwatch\'s OTLP/HTTP address (4318 unless HOOKWATCH_OTLP_HTTP_ADDR says otherwise; hookwatch logs it at start).'
      : `This hookwatch receives OTLP/HTTP on port ${port}. If Claude Code runs on another machine, use this host's address as it reaches it.`,
  };
}
