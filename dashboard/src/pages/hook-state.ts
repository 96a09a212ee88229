/**
 * The hook page's state, without the DOM: the hook and breakdown the URL names, the queries every figure is
 * asked over, the key figures, the charts' numbers and summaries, the alert timeline and the breakdown rows.
 * The page turns these into charts and tables. Unit-tested in Node against API-shaped responses.
 */
import type { AlertSummary, BreakdownResponse, HookSummary, SeriesBucket, SeriesResponse } from '../../../shared/src/api.ts';
import { OUTPUT_CAP_CHARS, OUTPUT_KINDS, deliveredChars, largestOutput, measuredOnly, persistedAtLeast, sizesMaySum, type DeliveryStatus, type OutputKind } from '../../../shared/src/cliff.ts';
import type { Point } from '../../../shared/src/forecast.ts';
import type { GuardField, GuardTrimsResponse } from '../../../shared/src/guard-trims.ts';
import type { TranscriptCommandsResponse } from '../../../shared/src/transcript-api.ts';
import type { Query } from '../api.ts';
import { anyPositive, type Band } from '../charts.ts';
import { supersededBy } from './alerts-state.ts';
import { FORECAST_DAYS, type ForecastReading } from '../forecast.ts';
import { bucketCell, bucketCovers, bucketStartHeader, chars, dateTime, headroomText, num, pct, plural, type BucketCover } from '../format.ts';
import { apiQuery, buildUrl, bucketsRange, chartStep, filterList, followRange, keptParams, rangeLabel, shownValue, type CoveredAnswer, type ViewState } from '../state.ts';

/** The string kinds the cliff chart draws; initialUserMessage joins only when a bucket reports it. */
const CHART_KINDS: OutputKind[] = ['additionalContext', 'stdout', 'systemMessage'];
/** The breakdown a hook page opens with. */
export const DEFAULT_BREAKDOWN = 'user.id';

/** The hook id of a hook page ('' on any other page). */
export function hookIdOf(state: ViewState): string {
  return state.route.page === 'hook' ? state.route.hookId : '';
}

/** The dimension the second breakdown is by (`by=`). */
export function breakdownBy(params: URLSearchParams): string {
  return params.get('by') || DEFAULT_BREAKDOWN;
}

/** The dimensions the breakdown select offers (client version has its own table), the current one chosen. */
export function dimensionOptions(dims: readonly string[], by: string): { value: string; selected: boolean }[] {
  return dims.filter((d) => d !== 'service.version').map((d) => ({ value: d, selected: d === by }));
}

/** The URL of this hook broken down by another dimension. */
export function breakdownUrl(state: ViewState, hookId: string, by: string): string {
  return buildUrl(`/hooks/${hookId}`, state, { ...keptParams(state.params), by });
}

/** The overview, with this page's range, filters and sort. */
export function backUrl(state: ViewState): string {
  return buildUrl('/', state, keptParams(state.params));
}

/** This hook zoomed to the buckets i..j of its series. */
export function zoomUrl(state: ViewState, hookId: string, series: SeriesResponse | undefined, i: number, j: number): string | undefined {
  const a = series?.buckets[i];
  const b = series?.buckets[j];
  if (!series || !a || !b) return undefined;
  return buildUrl(`/hooks/${hookId}`, { range: bucketsRange(series, a.start, b.start), filters: state.filters }, keptParams(state.params));
}

/**
 * The queries after the first answer: every later call covers the span it resolved, so the key figures and the
 * breakdowns agree while events keep arriving. The chart step follows the range. Transcript commands and guard
 * trims are not kept per dimension: their routes take the range only (and refuse a filter as unknown).
 */
export function followQueries(state: ViewState, resolved: CoveredAnswer, by: string): { range: Query; series: Query; versions: Query; dimension: Query; commands: Query; guardTrims: Query } {
  const span = followRange(resolved);
  const range = { ...apiQuery(state), ...span };
  const step = String(chartStep(state.range));
  return {
    range, series: { ...range, step }, versions: { ...range, dimension: 'service.version' }, dimension: { ...range, dimension: by },
    commands: span, guardTrims: { ...span, step },
  };
}

/** "PostToolUse · last 24 hours · buckets of 30 min". */
export function subtitle(hk: HookSummary, state: ViewState, step: number): string {
  return `${hk.hookEvent} · ${rangeLabel(state.range)} · buckets of ${step >= 3600 ? `${step / 3600} h` : `${step / 60} min`}`;
}

export interface Fact {
  id: string;
  label: string;
  value: string;
  note?: string | null;
}

/** The key figures: unknown sizes say unknown, a partly unmeasured hook says how much was not measured. */
export function facts(hk: HookSummary, reading: ForecastReading): Fact[] {
  // Executions without size data are not measured: the largest output is then at least, the headroom at most.
  const largest = largestOutput(hk);
  const h = hk.headroom;
  const unmeasured = hk.sizeUnknownExecutions > 0;
  const measured = `from the ${plural(hk.executions - hk.sizeUnknownExecutions, 'measured execution')} of ${num(hk.executions)}`;
  const unsized = hk.executions > 0 ? 'no execution in this range sent size data' : null;
  return [
    {
      id: 'executions', label: 'Executions', value: num(hk.executions),
      note: hk.starts > hk.executions ? `${plural(hk.starts, 'start')}: ${num(hk.starts - hk.executions)} without a completion in this range`
        : hk.executions === 0 ? `none in this range; last seen ${dateTime(hk.lastSeen)}` : null,
    },
    { id: 'persisted', label: 'Outputs persisted', value: persistedKnown(hk).text, note: persistedKnown(hk).why },
    {
      id: 'largest', label: 'Largest output', value: largestKnownText(hk),
      // An upper bound only where some execution ran more than one command: one command's size is its output's.
      note: largest === null ? unsized : !sizesMaySum(hk) ? (unmeasured ? measured : null) : unmeasured ? `${measured}; an upper bound of each: ${SUMMED}` : `upper bound: ${SUMMED}`,
    },
    {
      // Of the measured executions only: the unmeasured may have come nearer the cap, or past it.
      id: 'headroom', label: 'Headroom',
      value: headroomText(h, unmeasured),
      note: h === null ? unsized : unmeasured ? measured : null,
    },
    { id: 'forecast', label: 'Crosses the cap', value: reading.value, note: reading.note },
    {
      id: 'size-unknown', label: 'Without size data', value: hk.sizeUnknownExecutions === 0 ? '0' : `${num(hk.sizeUnknownExecutions)} of ${num(hk.executions)}`,
      note: hk.sizeUnknownExecutions > 0 ? 'executions from clients older than 2.1.280: not measured' : null,
    },
  ];
}

/** A largest output as far as it is known: unknown with none measured, "at least" beside executions that sent no size data. */
export function largestKnownText(c: Pick<SeriesBucket, 'maxChars' | 'sizeUnknownExecutions'>): string {
  const largest = largestOutput(c);
  return largest !== null && c.sizeUnknownExecutions > 0 ? `at least ${chars(largest)}` : chars(largest);
}

/** Why a reported size is an upper bound of one string. */
const SUMMED = 'Claude Code reports sums over the hook commands of one execution';

/** The kinds with any output in the range: a kind never used draws nothing, not a row of dots on 0. */
export function kindsIn(buckets: readonly SeriesBucket[]): OutputKind[] {
  const used = [...CHART_KINDS, 'initialUserMessage' as const].filter((k) => anyPositive(buckets.map((b) => b.maxChars[k])));
  return used.length ? used : ['additionalContext'];
}

/** What each bucket of the series counted (bucketCovers): the first from the range's start, the last until its end. */
export function seriesCovers(series: SeriesResponse): BucketCover[] {
  return bucketCovers(series, series.buckets.map((b) => b.start), series.buckets.map((b) => b.end));
}

/** A data table's rows, one per bucket with executions, its first cell the bucket as bucketCell writes it. */
function bucketRows(series: SeriesResponse, cells: (b: SeriesBucket) => string[]): string[][] {
  const covers = seriesCovers(series);
  return series.buckets.flatMap((b, i) => (b.executions > 0 ? [[bucketCell(b.start, covers[i], series.step), ...cells(b)]] : []));
}

/** The cliff chart's numbers: kinds drawn, the persisted markers, the peak, its summary and data table. */
export function cliffView(series: SeriesResponse): { kinds: OutputKind[]; persisted: (number | null)[]; peak: number | null; summary: string; headers: string[]; rows: string[][] } {
  const kinds = kindsIn(series.buckets);
  const withData = series.buckets.filter((b) => largestOutput(b) !== null);
  const over = series.buckets.filter((b) => persistedAtLeast(b) > 0);
  const peak = withData.reduce<number | null>((m, b) => Math.max(m ?? 0, largestOutput(b) ?? 0), null);
  // A bucket of executions without size data may have lost output unseen: the count of buckets is then a lower bound.
  const blind = series.buckets.filter((b) => b.sizeUnknownExecutions > 0).length;
  const buckets = plural(series.buckets.length, 'bucket');
  const persistedBuckets = blind === 0 ? `${num(over.length)} of ${buckets} had persisted outputs`
    : `${over.length === 0 ? 'no bucket is known to have had' : `at least ${num(over.length)} of ${buckets} had`} persisted outputs (${plural(blind, 'bucket')} ${blind === 1 ? 'holds' : 'hold'} executions that sent no size data)`;
  return {
    kinds,
    // A bucket with persisted outputs but no sizes is marked on the cap: it was over it.
    persisted: series.buckets.map((b) => (persistedAtLeast(b) > 0 ? largestOutput(b) ?? OUTPUT_CAP_CHARS : null)),
    peak,
    summary: withData.length === 0
      ? series.buckets.some((b) => b.executions > 0 || b.starts > 0) ? 'No size data in this range.' : 'No executions in this range.'
      : `Largest output ${blind === 0 ? '' : 'at least '}${chars(peak)} against the 10,000 cap; ${persistedBuckets}.`,
    headers: [bucketStartHeader(series.step), ...kinds, 'Outputs persisted'],
    // A bucket's sizes are of its measured executions: at least, where some sent no size data (unknown stays unknown).
    rows: bucketRows(series, (b) => [...kinds.map((k) => (b.sizeUnknownExecutions > 0 && b.maxChars[k] !== null ? `at least ${num(b.maxChars[k])}` : num(b.maxChars[k]))), persistedKnown(b).text]),
  };
}

/**
 * Outputs persisted as far as they are known, for a bucket or a range: the count (persistedAtLeast), its words,
 * and why it is only a lower bound when it is one. Executions without size data (clients before 2.1.280) may
 * have lost output unseen; executions a client measured over the cap without reporting num_outputs_persisted
 * count one output each.
 */
export function persistedKnown(c: Pick<SeriesBucket, 'outputsPersisted' | 'executionsWithPersisted' | 'sizeUnknownExecutions'>): { count: number; text: string; why: string | null } {
  return persistedBound(persistedAtLeast(c), c.sizeUnknownExecutions, measuredOnly(c));
}

/**
 * A count of persisted outputs (at least) in words, from the executions that make it a lower bound: without size
 * data, or measured over the cap only (lowerBoundWhy).
 */
export function persistedBound(count: number, sizeUnknown: number, measured: number): { count: number; text: string; why: string | null } {
  const why = lowerBoundWhy(sizeUnknown, measured);
  return { count, text: why === null ? num(count) : count === 0 ? 'none known' : `at least ${num(count)}`, why };
}

/** Why a count of persisted outputs is a lower bound, or null when it is exact. */
export function lowerBoundWhy(sizeUnknown: number, measured: number): string | null {
  const why = [
    sizeUnknown > 0 ? `${plural(sizeUnknown, 'execution')} sent no size data` : null,
    measured > 0 ? `${plural(measured, 'execution')} measured over the cap, counted as one output each` : null,
  ].filter((x) => x !== null);
  return why.length === 0 ? null : why.join('; ');
}

/** Success against persisted outputs: the summary and the data table. */
export function deliveryView(series: SeriesResponse): { summary: string; headers: string[]; rows: string[][] } {
  const success = series.buckets.reduce((s, b) => s + b.success, 0);
  const persisted = series.buckets.reduce((s, b) => s + persistedAtLeast(b), 0);
  // A lower bound says so, and why: unknown is not zero.
  const why = lowerBoundWhy(series.buckets.reduce((s, b) => s + b.sizeUnknownExecutions, 0), series.buckets.reduce((s, b) => s + measuredOnly(b), 0));
  const lost = why === null ? `${plural(persisted, 'output')} ${persisted === 1 ? 'was' : 'were'} persisted instead of delivered.`
    : persisted === 0 ? `no output is known to have been persisted instead of delivered (${why}).`
      : `at least ${plural(persisted, 'output')} ${persisted === 1 ? 'was' : 'were'} persisted instead of delivered (${why}).`;
  return {
    summary: `${plural(success, 'hook command')} reported success; ${lost}`,
    headers: [bucketStartHeader(series.step), 'Executions', 'Commands OK', 'Outputs persisted', 'Executions with persisted', 'Without size data'],
    rows: bucketRows(series, (b) => [num(b.executions), num(b.success), persistedKnown(b).text, num(b.executionsWithPersisted), num(b.sizeUnknownExecutions)]),
  };
}

/** An observed size and what the model saw of it. */
export interface Observed {
  kind: OutputKind;
  sent: number;
  delivered: number;
}

/**
 * Each distinct observed size per kind, smallest first, to place on the cliff curve. A size past the cap in a
 * bucket where nothing was persisted was delivered whole: sizes are upper bounds (sums over the commands of one
 * execution, stdout with the JSON around it), and only a persisted output proves a string was over.
 */
export function observedSizes(series: SeriesResponse): Observed[] {
  const seen = new Map<string, Observed>();
  const kinds = kindsIn(series.buckets);
  for (const b of series.buckets) {
    const persisted = persistedAtLeast(b) > 0;
    for (const k of kinds) {
      const v = b.maxChars[k];
      if (v === null || v <= 0) continue;
      const delivered = persisted ? deliveredChars(v) : v;
      seen.set(`${k}:${v}:${delivered}`, { kind: k, sent: v, delivered });
    }
  }
  return [...seen.values()].sort((a, b) => a.sent - b.sent);
}

/** What the model saw of the hook's largest output. */
export function curveSummary(hook: HookSummary): string {
  const peak = largestOutput(hook);
  const lost = peak === null ? null : peak - deliveredChars(peak);
  // The largest size that is one string's: the peak itself, or a smaller one beside a peak that is a bound.
  const one = largestOneString(hook);
  const peakIsOne = peak !== null && one?.chars === peak;
  const exact = peakIsOne ? null : one;
  // Executions without size data are not on the cliff: what is said of the measured ones is not said of them.
  const blind = hook.sizeUnknownExecutions > 0;
  const unmeasured = blind ? ` ${num(hook.sizeUnknownExecutions)} of ${plural(hook.executions, 'execution')} sent no size data: not measured, so not known to have arrived whole.` : '';
  return peak === null && hook.executions === 0 && hook.starts > 0
    ? `${plural(hook.starts, 'start')} and no execution completed in this range: nothing was delivered to measure. A hook that starts and never completes was blocked, killed or timed out.`
    : peak === null && hook.executions === 0
    ? `No executions in this range: nothing to measure. The hook was last seen ${dateTime(hook.lastSeen)}.`
    : peak === null
    ? 'No size data in this range: delivery cannot be measured (client older than 2.1.280).'
    : (lost && lost > 0 && persistedAtLeast(hook) === 0
      ? `Largest output ${chars(peak)}, past the 10,000 cap, but ${blind ? 'no measured output' : 'nothing'} was persisted: the size is an upper bound (summed over the hook's commands, stdout with the JSON around it), and every ${blind ? 'measured ' : ''}string arrived whole.`
    : lost && lost > 0 && exact && exact.chars > OUTPUT_CAP_CHARS
      ? `Largest string measured alone ${chars(exact.chars)} (${exact.kind}): the model saw about ${chars(deliveredChars(exact.chars))}, losing ${chars(exact.chars - deliveredChars(exact.chars))} (${pct((exact.chars - deliveredChars(exact.chars)) / exact.chars)}). The larger ${chars(peak)} is a bound (summed over the hook's commands, or stdout with the JSON around it).`
    : lost && lost > 0 && !peakIsOne
      ? `Largest output up to ${chars(peak)} (summed over the hook's commands, or stdout with the JSON around it): a string over the 10,000 cap reaches the model as a ~2,000-character preview, so up to ${chars(lost)} (${pct(lost / peak)}) was lost.`
    : lost && lost > 0
      ? `Largest output ${chars(peak)}: the model saw about ${chars(deliveredChars(peak))}, losing ${chars(lost)} (${pct(lost / peak)}).`
      : `Largest output ${chars(peak)}: delivered whole, ${blind ? 'at most ' : ''}${chars(OUTPUT_CAP_CHARS - peak)} of headroom.`) + unmeasured;
}

/**
 * The largest output of a kind whose size is one string's, or null when none is: not a sum over several commands
 * (its lower bound is the same), and not a stdout that held JSON fields (those are measured on their own, the
 * stdout around them).
 */
function largestOneString(hook: HookSummary): { kind: OutputKind; chars: number } | null {
  let best: { kind: OutputKind; chars: number } | null = null;
  for (const kind of OUTPUT_KINDS) {
    const v = hook.maxChars[kind];
    if (v === null || v === 0 || hook.maxCharsLowerBound[kind] !== v) continue;
    if (kind === 'stdout' && OUTPUT_KINDS.some((k) => k !== 'stdout' && hook.maxChars[k])) continue;
    if (best === null || v > best.chars) best = { kind, chars: v };
  }
  return best;
}

/** The cliff curve's data table. */
export function curveRows(observed: readonly Observed[]): string[][] {
  return observed.map((o) => [o.kind, num(o.sent), num(o.delivered), num(o.sent - o.delivered)]);
}

export const DAY_MS = 86_400_000;

/** The growth chart's ticks: on the days' own points from `first`, every few days so that at most nine show. */
export function dayTicks(first: number, end: number): number[] {
  const step = DAY_MS * Math.max(1, Math.ceil((end - first) / DAY_MS / 8));
  const out: number[] = [];
  for (let t = first; t <= end; t += step) out.push(t);
  return out;
}

/**
 * What each point of the growth chart (dailyPoints of `daily`) counted: its day as seriesCovers has it, so the
 * newest day, still filling, is partial as the other charts' last bucket is.
 */
export function growthCovers(daily: SeriesResponse, points: readonly Point[]): BucketCover[] {
  const covers = seriesCovers(daily);
  const byStart = new Map(daily.buckets.map((b, i) => [Date.parse(b.start), covers[i]]));
  return points.map((p) => byStart.get(p.t) ?? { fromMs: p.t, toMs: p.t + DAY_MS, partial: false });
}

/**
 * The growth chart's data table: a day as bucketCell writes it (the hours a partial one covers), its largest output,
 * "at least" on a day some of whose executions sent no size data (`partly`, per point).
 */
export function growthRows(points: readonly Point[], covers: readonly BucketCover[] = [], partly: readonly boolean[] = []): string[][] {
  return points.map((p, i) => [bucketCell(new Date(p.t).toISOString(), covers[i], DAY_MS / 1000), `${partly[i] ? 'at least ' : ''}${num(p.value)}`]);
}

/**
 * What the growth chart leaves out of `daily`: the executions without size data, not in the trend (a sentence
 * saying how many, and whether none was measured on the latest days the hook ran; '' when every one was), and per
 * point whether its day held any (its largest output then at least).
 */
export function growthUnmeasured(daily: SeriesResponse, points: readonly Point[]): { sentence: string; partly: boolean[] } {
  const ran = daily.buckets.filter((b) => b.executions > 0);
  const unknown = ran.reduce((n, b) => n + b.sizeUnknownExecutions, 0);
  const byStart = new Map(ran.map((b) => [Date.parse(b.start), b.sizeUnknownExecutions > 0]));
  const partly = points.map((p) => byStart.get(p.t) ?? false);
  if (unknown === 0) return { sentence: '', partly };
  const last = points.at(-1)?.t ?? -Infinity;
  const latest = ran.filter((b) => Date.parse(b.start) > last).length;
  const executions = ran.reduce((n, b) => n + b.executions, 0);
  return {
    sentence: `${num(unknown)} of ${plural(executions, 'execution')} in these ${FORECAST_DAYS} days sent no size data: not measured, so not in the trend.`
      + (latest > 0 ? ` None was measured on the latest ${latest === 1 ? 'day' : `${num(latest)} days`} the hook ran.` : ''),
    partly,
  };
}

/** The id of the hook page's alert timeline, where a link to the hook's alerts (`#alert-timeline`) scrolls to. */
export const ALERT_TIMELINE = 'alert-timeline';

/**
 * The line under the cliff chart's title, saying what it draws: with the alert state known, the spans shaded
 * when this hook's alerts were active; while the alerts API fails, that the alert state is unknown instead.
 */
export function cliffDescription(alertsKnown: boolean): string {
  const alerts = alertsKnown ? 'shaded spans when alerts were active' : 'alert state unknown, so no alert spans are drawn';
  return `Largest output per bucket for each string kind, against the 10,000-character cap and the ~2,000-character preview; triangles mark buckets with persisted outputs, ${alerts}. Drag across to zoom.`;
}

/**
 * The line under the alert timeline's title: with the alert state known, that its spans are shaded on the cliff
 * chart too; while the alerts API fails, that the alert state is unknown, so none are drawn there.
 */
export function timelineDescription(alertsKnown: boolean): string {
  const shaded = alertsKnown ? 'the same spans are shaded on the cliff chart' : 'alert state unknown, so no alert spans are drawn on the cliff chart';
  return `When this hook's alerts became active and resolved; ${shaded}.`;
}

/** Alerts of this hook as bands over a bucketed chart: from when they became active to when they resolved. */
export function alertBands(alerts: readonly AlertSummary[], series: SeriesResponse, colors: { firing: string; pending: string; resolved: string }): Band[] {
  const stepMs = series.step * 1000;
  const first = Date.parse(series.buckets[0]?.start ?? series.from);
  const endMs = Date.parse(series.to);
  const at = (ms: number): number => (ms - first) / stepMs - 0.5;
  return alerts.flatMap((a) => {
    const from = Date.parse(a.startsAt ?? a.activeAt);
    const to = a.endsAt ? Date.parse(a.endsAt) : endMs;
    if (to < first || from > endMs) return [];
    return [{ fromIndex: Math.max(-0.5, at(from)), toIndex: Math.min(series.buckets.length - 0.5, at(to)), label: `${a.rule} ${alertState(a, alerts)}`, color: colors[a.state] }];
  });
}

/** An alert's state as the alerts page names it: `superseded` for one resolved because its hook went over the cap. */
function alertState(a: AlertSummary, alerts: readonly AlertSummary[]): AlertSummary['state'] | 'superseded' {
  return supersededBy(a, alerts) ? 'superseded' : a.state;
}

/** The alert timeline's rows: rule, state (superseded never read as resolved), active since, firing since, resolved. */
export function alertRows(alerts: readonly AlertSummary[]): { state: AlertSummary['state'] | 'superseded'; cells: string[] }[] {
  return alerts.map((a) => {
    const state = alertState(a, alerts);
    return { state, cells: [a.rule, state, dateTime(a.activeAt), a.startsAt ? dateTime(a.startsAt) : '–', a.endsAt ? dateTime(a.endsAt) : '–'] };
  });
}

/** One breakdown row: the value (named when empty), where it leads (drillUrl), its status and counts. */
export interface BreakdownRowView {
  value: string;
  url: string | null;
  status: DeliveryStatus;
  counts: { executions: number; sizeUnknownExecutions: number };
  cells: string[];
}

/**
 * The URL a breakdown row leads to: this hook filtered by the breakdown's dimension = the row's value ('' for the
 * "(not set)" row: the filter on the empty value matches the events it counts), the range, the other filters and
 * the page's parameters kept, so its figures are the row's. Null on a dimension the API does not take as a filter
 * (`filterable`, from /api/v1/dimensions; null while unknown) and for the value the page is filtered by already.
 */
export function drillUrl(state: ViewState, hookId: string, dimension: string, value: string, filterable: readonly string[] | null): string | null {
  if (!filterable?.includes(dimension) || state.filters[dimension] === value) return null;
  return buildUrl(`/hooks/${hookId}`, { range: state.range, filters: { ...state.filters, [dimension]: value } }, keptParams(state.params));
}

/** The breakdown's rows; with `drill`, each leads to the hook filtered by its value (drillUrl). */
export function breakdownRows(r: BreakdownResponse, drill: { state: ViewState; filterable: readonly string[] | null } | null = null): BreakdownRowView[] {
  return r.rows.map((row) => ({
    value: shownValue(row.value),
    url: drill && drillUrl(drill.state, r.hookId, r.dimension, row.value, drill.filterable),
    status: row.status,
    counts: row,
    cells: [num(row.executions), num(row.success), persistedKnown(row).text, largestKnownText(row), num(row.sizeUnknownExecutions)],
  }));
}

/** What a breakdown cut to its first page says about the rows left out; null when it shows every row. */
export function breakdownCut(r: BreakdownResponse): string | null {
  if (r.total <= r.rows.length) return null;
  return `The ${num(r.rows.length)} values with the most executions, of ${num(r.total)}.`;
}

/** The page for a hook id the API does not know. */
export function noSuchHook(hookId: string): string {
  return `hookwatch has no hook with id ${hookId}. It may have been pruned by retention.`;
}

/**
 * What the page says when its filters match none of the hook's executions in the range, with the link that removes
 * them (range, breakdown and refresh kept); null without filters or with executions.
 */
export function filterEmpty(hk: HookSummary, state: ViewState): { text: string; clearUrl: string } | null {
  const list = filterList(state.filters);
  if (!list || hk.executions > 0 || hk.starts > 0) return null;
  return {
    text: `No executions of this hook match ${list} in the ${rangeLabel(state.range)}. `,
    clearUrl: buildUrl(`/hooks/${hk.id}`, { range: state.range, filters: {} }, keptParams(state.params)),
  };
}

/**
 * What a panel whose figures are not kept per dimension (guard trims, transcript commands) says on a page narrowed
 * by filters: that it counts every value of them, so its figures are not read as the filtered ones; null with no
 * filters.
 */
export function unfilteredPanelNote(filters: Record<string, string>, what: string): string | null {
  const list = filterList(filters);
  if (!list) return null;
  return `Not filtered: ${what} are not kept per dimension, so these figures count everyone, not only ${list}.`;
}

/** What `hookwatch guard` did for the hook, beside Claude Code's counters; null when it trimmed nothing (or the server cannot say). */
export function guardTrimsView(g: GuardTrimsResponse | null): { value: string; note: string; field: GuardField } | null {
  if (!g?.largest) return null;
  const { sentChars, keptChars, field } = g.largest;
  return { value: `${num(g.trims)} output${g.trims === 1 ? '' : 's'}`, note: `trimmed by guard: sent ${num(sentChars)}, delivered ${num(keptChars)}`, field };
}

/** The commands table from transcripts: one row per command; an unrecorded command and nothing delivered are named. */
export function commandRows(r: TranscriptCommandsResponse): { command: string; over: boolean; cells: string[] }[] {
  return r.commands.map((c) => ({
    command: c.command === '' ? '(command not recorded)' : c.command,
    over: c.persisted > 0,
    cells: [num(c.runs), chars(c.largestOutputChars), num(c.persisted), num(c.delivered), c.delivered === 0 ? 'none delivered' : chars(c.largestDeliveredChars), num(c.sessions)],
  }));
}
