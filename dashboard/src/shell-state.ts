/**
 * The shell's decisions as pure functions of the URL and the user's input: which refresh period the header
 * shows, what a pause or a custom range or a filter turns the URL into, how the last update reads. No DOM, no
 * history, no timers here (main.ts applies them), so each decision is unit-tested without a browser.
 */
import { MAX_RANGE_MS, type AlertSummary } from '../../shared/src/api.ts';
import { ApiFailure } from './api.ts';
import { ago, clockTime, dateTime, inputDateTimeProblem, inputDateTimeRuns, isolated, num, plural, shortOffset, type TimeZoneChoice } from './format.ts';
import { DEFAULT_RANGE, RANGE_PRESETS, buildUrl, filterList, rangeLabel, rangeReads, refreshMs, refreshOff, refreshReads, routePath, samePageParams, widerRange, withParam, type Range, type Route, type ViewState } from './state.ts';
import type { ThemeChoice } from './theme.ts';

/** Refresh periods offered in the header (the URL's `refresh=` takes any). */
export const REFRESH_CHOICES: readonly (readonly [string, string])[] = [['5s', 'every 5 s'], ['15s', 'every 15 s'], ['1m', 'every minute'], ['5m', 'every 5 minutes']];
/** The period a URL without `refresh=` refreshes at, as the select names it. */
const DEFAULT_REFRESH = '15s';

/** The refresh control as the URL states it. */
export interface RefreshView {
  /** The option shown as chosen (the last period when paused). */
  selected: string;
  paused: boolean;
  /** A period from the URL that is not one of REFRESH_CHOICES, offered as its own option. */
  extra: { value: string; text: string } | null;
  pauseLabel: 'Pause' | 'Resume';
}

export function refreshView(params: URLSearchParams): RefreshView {
  const given = params.get('refresh');
  // One the page does not take (`refresh=5`) refreshes at the default: the select says that one (ignoredViewNote why).
  // Off (`off`, or a period of zero) shows the default period, greyed, as chosen.
  const current = given !== null && refreshReads(given) && !refreshOff(given) ? given : null;
  const paused = refreshMs(params) === null;
  const chosen = current ?? DEFAULT_REFRESH;
  const extra = current && !REFRESH_CHOICES.some(([v]) => v === current) ? { value: current, text: `every ${current}` } : null;
  return { selected: chosen, paused, extra, pauseLabel: paused ? 'Resume' : 'Pause' };
}

/**
 * What the header says of a `range=` or `refresh=` of the URL the page does not take (`range=2h`, `refresh=5`, a
 * custom range whose ends do not read), and what it uses instead, as it says of filters a page does not apply;
 * null when the URL has none such. The values are isolated: a right-to-left one reorders nothing after it.
 */
export function ignoredViewNote(params: URLSearchParams): string | null {
  const said: string[] = [];
  const range = params.get('range');
  if (range !== null && !rangeReads(params)) {
    const instead = `it shows the ${rangeLabel(DEFAULT_RANGE)}.`;
    said.push(range === 'custom'
      ? `The custom range in the link (from=${isolated(params.get('from') ?? '')}, to=${isolated(params.get('to') ?? '')}) is not a time span this page reads: ${instead}`
      : `range=${isolated(range)} in the link is not a range this page takes (${RANGE_PRESETS.join(', ')} or custom): ${instead}`);
  }
  const refresh = params.get('refresh');
  if (refresh !== null && !refreshReads(refresh)) {
    const every = REFRESH_CHOICES.find(([v]) => v === DEFAULT_REFRESH)?.[1] ?? DEFAULT_REFRESH;
    said.push(`refresh=${isolated(refresh)} in the link is not an interval this page takes (such as 5s, 1m or off): it refreshes ${every}.`);
  }
  return said.length ? said.join(' ') : null;
}

/** The `refresh=` value for a period picked in the select (the default leaves the URL clean). */
export function refreshParam(selected: string): string | undefined {
  return selected === DEFAULT_REFRESH ? undefined : selected;
}

/** What Pause/Resume sets `refresh=` to: off when running, back to the selected period when paused. */
export function toggledRefresh(params: URLSearchParams, selected: string): string | undefined {
  return refreshMs(params) === null ? refreshParam(selected) : 'off';
}

/** The URL (path and query) with `refresh=` set or removed, everything else kept as it is. */
export function withRefresh(loc: { pathname: string; search: string }, value: string | undefined): string {
  return withParam(loc, 'refresh', value);
}

/**
 * How old the data shown is, read again as time passes: "Updated 12 s ago", "Updated 3 min ago · paused" (a wall
 * screen shows it going stale, outage or not), and the time itself for its title; null before the first load.
 */
export function updatedText(lastUpdated: number | undefined, params: URLSearchParams, nowMs: number): { text: string; title: string } | null {
  if (lastUpdated === undefined) return null;
  return {
    text: `Updated ${ago(new Date(lastUpdated).toISOString(), nowMs)}${refreshMs(params) === null ? ' · paused' : ''}`,
    title: `Last updated ${dateTime(lastUpdated)}`,
  };
}

/** What the header's Alerts link says of the alerts firing, read again at each refresh. */
export interface FiringBadge {
  /** Firing alerts no silence mutes; null when the alert state could not be read (firingUnknown). */
  count: number | null;
  /** The number beside "Alerts" ('?' when unknown); '' when none fires (no number shown). */
  text: string;
  /** The link's accessible name: "Alerts, 2 firing", or "Alerts". */
  label: string;
  /** Its tooltip: how many fire, and how many more fire silenced, or why it is unknown; null when none fires. */
  title: string | null;
}

/**
 * The header's count of firing alerts, as Alertmanager's alert list shows them by default: a silenced alert is
 * known and handled, and a wall screen does not call for it; the tooltip names it apart ("1 firing alert
 * silenced, not counted"). Alerts of no single hook (`blind`, a quiet feed) count as any other.
 */
export function firingBadge(alerts: readonly Pick<AlertSummary, 'state' | 'silencedBy'>[]): FiringBadge {
  const firing = alerts.filter((a) => a.state === 'firing');
  const silenced = firing.filter((a) => a.silencedBy.length > 0).length;
  const count = firing.length - silenced;
  const title = [count > 0 ? `${plural(count, 'alert')} firing` : '', silenced > 0 ? `${plural(silenced, 'firing alert')} silenced, not counted` : ''].filter(Boolean).join('; ');
  return { count, text: count > 0 ? num(count) : '', label: count > 0 ? `Alerts, ${num(count)} firing` : 'Alerts', title: title || null };
}

/**
 * The header's Alerts link when the alerts API could not answer: the alert state is unknown, which is not "none
 * firing" (no number) nor the last count (which may have changed since), as Grafana marks a panel it could not
 * refresh. "Alerts ?", the reason in its tooltip and its name; the next answer counts again.
 */
export function firingUnknown(reason: string): FiringBadge {
  const title = `alert state unavailable: ${reason}`;
  return { count: null, text: '?', label: `Alerts, ${title}`, title };
}

/**
 * How often a page whose refreshes hookwatch keeps answering with a failure (a route not found, an answer in a shape
 * it cannot read: a new version deployed) asks which dashboard hookwatch serves; it asks at the first such failure.
 */
export const BUILD_RECHECK_MS = 60_000;

/** The longest wait between two tries while the server keeps failing (unless the chosen period is longer). */
export const MAX_RETRY_MS = 60_000;

/** The longest a Retry-After holds the next try back: a page left open comes back on its own when asked for longer. */
export const MAX_RETRY_AFTER_MS = 5 * 60_000;

/**
 * How long to wait before the next refresh: the chosen period, doubled after each failure in a row up to a
 * minute (a failing server is not asked every few seconds by every open dashboard), back to the period once a
 * refresh succeeds (`failures` 0). Never sooner than the last failure's Retry-After asked (`retryAfterMs`), up to
 * MAX_RETRY_AFTER_MS.
 */
export function retryDelay(periodMs: number, failures: number, retryAfterMs?: number): number {
  const asked = failures > 0 && retryAfterMs !== undefined ? Math.min(MAX_RETRY_AFTER_MS, retryAfterMs) : 0;
  if (failures <= 1) return Math.max(periodMs, asked);
  return Math.max(periodMs, asked, Math.min(MAX_RETRY_MS, periodMs * 2 ** (failures - 1)));
}

/**
 * Whether hookwatch refused the request itself (400 in its own JSON: a filter on a dimension it does not keep, a
 * range it does not take): asked again, it answers the same, so the page does not retry it. A 400 of something
 * else in its place (a proxy's page) may not last.
 */
export function refusedRequest(err: unknown): err is ApiFailure {
  return err instanceof ApiFailure && err.status === 400 && err.own;
}

/** "5 s", "2 min". */
function duration(ms: number): string {
  return ms >= 60_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 1000)} s`;
}

/**
 * What the error banner adds to a failure: how old the data on the page is (or that there is none) and when it
 * tries again by itself; `refused` (a 400, refusedRequest), that it does not. Read again as time passes, so the age
 * keeps counting during an outage.
 */
export function failureNote(o: { lastUpdated: number | undefined; nowMs: number; periodMs: number | null; failures: number; refused?: boolean; retryAfterMs?: number | undefined }): string {
  const shown = shownNote(o.lastUpdated, o.nowMs, 'nothing to show yet');
  const next = o.refused ? 'not retried: hookwatch would refuse it again'
    : o.periodMs === null ? 'refresh is paused: Refresh now tries again' : `retrying ${o.failures > 1 ? 'less often, ' : ''}every ${duration(retryDelay(o.periodMs, o.failures, o.retryAfterMs))}`;
  return `${shown}; ${next}`;
}

/**
 * What the signed-out banner adds: how old the data on the page is (or that there is none), counting on, that
 * refresh stopped, and, signed out by a sign-in proxy, that the page reloads by itself to sign in again
 * (`reloadsFrom`, signInReloadFrom; the clock time when that is held off until later).
 */
export function signedOutNote(lastUpdated: number | undefined, nowMs: number, reloadsFrom?: number): string {
  const stopped = `${shownNote(lastUpdated, nowMs, 'nothing to show')}; refresh stopped`;
  if (reloadsFrom === undefined) return stopped;
  const from = reloadsFrom > nowMs ? ` from ${clockTime(reloadsFrom, nowMs)},` : '';
  return `${stopped}; reloads by itself to sign in again${from} once unused for ${IDLE_RELOAD_MS / 60_000} min`;
}

/**
 * From when a page signed out by a sign-in proxy may reload itself to sign in again (selfReloadDue's `noticeAt`):
 * a reload goes through the proxy, which signs the browser in again at the identity provider, without a person
 * while the provider's own session lasts, so a wall screen comes back by itself. `stored`: when the tab last
 * reloaded itself for that and has not shown data since (epoch ms). Signed out again before any data came, that
 * reload did not help (a proxy that lets the page through but not its calls): the next waits until RELOAD_AGAIN_MS
 * after it, rather than every IDLE_RELOAD_MS for good.
 */
export function signInReloadFrom(stored: string | null, nowMs: number): number {
  const last = stored === null ? NaN : Number(stored);
  return Number.isFinite(last) && nowMs < last + RELOAD_AGAIN_MS ? last + RELOAD_AGAIN_MS : nowMs;
}

/**
 * "showing data from 14:02, 3 min ago", the clock time in the page's zone (a wall screen shows no tooltip), or
 * `none` when the page has shown no data.
 */
function shownNote(lastUpdated: number | undefined, nowMs: number, none: string): string {
  return lastUpdated === undefined ? none : `showing data from ${clockTime(lastUpdated, nowMs)}, ${ago(new Date(lastUpdated).toISOString(), nowMs)}`;
}

/** How long a page left unused runs an older dashboard than hookwatch serves before it reloads itself. */
export const IDLE_RELOAD_MS = 10 * 60_000;

/** What the page says when hookwatch serves a newer dashboard than it runs (the reload keeps the view: the URL holds it). */
export const UPDATE_NOTICE = `hookwatch was updated since this page was opened. The page reloads by itself to use the new version, on the same view, once unused for ${IDLE_RELOAD_MS / 60_000} minutes (never over a form filled in and not sent).`;

/** How long after reloading for a build the page does not reload by itself for it again (reloadHeldUntil). */
export const RELOAD_AGAIN_MS = 60 * 60_000;

/**
 * What the page says instead when the build hookwatch serves is one it reloaded for within RELOAD_AGAIN_MS
 * (reloadHeldUntil) and it still runs another: hookwatch's replicas serve both, and the page does not reload by
 * itself for it again before that hour is over.
 */
export const UPDATE_AGAIN_NOTICE = 'hookwatch was updated since this page was opened, but reloading the page brought back the version it runs: hookwatch runs both versions (an update under way). Reload the page once the update is over to use the new version; left unused, it tries again by itself an hour after the last reload.';

/** How many builds a tab remembers having reloaded for. */
const RELOADED_KEPT = 20;

/** A build the tab reloaded for, and when (epoch ms). */
export interface ReloadedFor {
  build: string;
  at: number;
}

/**
 * The builds this tab reloaded for, oldest first, each with when it last did (`stored`, as reloadedText wrote it to
 * sessionStorage; nothing from a value it did not write).
 */
export function reloadedBuilds(stored: string | null): ReloadedFor[] {
  try {
    const v: unknown = JSON.parse(stored ?? '[]');
    const entry = (e: unknown): e is [string, number] => Array.isArray(e) && e.length === 2 && typeof e[0] === 'string' && Number.isFinite(e[1]);
    return Array.isArray(v) && v.every(entry) ? v.map(([build, at]) => ({ build, at })) : [];
  } catch {
    return [];
  }
}

/** The builds reloaded for (reloadedBuilds), with `build` reloaded for at `nowMs`, the latest RELOADED_KEPT. */
export function reloadedText(stored: string | null, build: string, nowMs: number): string {
  const kept = [...reloadedBuilds(stored).filter((r) => r.build !== build), { build, at: nowMs }].slice(-RELOADED_KEPT);
  return JSON.stringify(kept.map((r) => [r.build, r.at]));
}

/**
 * Until when the page does not reload by itself for `build`, served while it runs another; undefined when it may.
 * Behind a load balancer whose replicas serve different builds (a canary, a rolling update), a reload may bring back
 * the build the page ran, and a check ten minutes later see the other one again: the page would otherwise reload
 * every ten or twenty minutes for as long as both are served. Held for RELOAD_AGAIN_MS after the tab last reloaded
 * for it, not for good: a wall screen whose reload fell in the minutes of a rolling update would otherwise run the
 * old version until someone reloads it.
 */
export function reloadHeldUntil(stored: string | null, build: string, nowMs: number): number | undefined {
  const last = reloadedBuilds(stored).find((r) => r.build === build);
  return last !== undefined && nowMs < last.at + RELOAD_AGAIN_MS ? last.at + RELOAD_AGAIN_MS : undefined;
}

/**
 * Whether a page that runs an older dashboard than hookwatch serves reloads itself now, so a wall screen nobody
 * touches does not run the old one for weeks: never while a form holds text typed or a choice made and not sent
 * (`typing`), which the reload would lose; at once when the tab is hidden and untouched since the notice appeared (nobody is reading
 * it); otherwise once unused (no pointer, key or scroll) for IDLE_RELOAD_MS since the later of the last use and the
 * notice, so whoever passes by reads the notice first and a reader at work is not interrupted. Never before the notice
 * counts (`noticeAt`, the end of the hour a build reloaded for is held off, reloadHeldUntil).
 */
export function selfReloadDue(o: { nowMs: number; noticeAt: number; usedAt: number; hidden: boolean; typing: boolean }): boolean {
  if (o.typing || o.nowMs < o.noticeAt) return false;
  if (o.hidden && o.usedAt < o.noticeAt) return true;
  return o.nowMs - Math.max(o.usedAt, o.noticeAt) >= IDLE_RELOAD_MS;
}

/** A section (a <details>) by its place: the nth in the part of the page matched by `scope`. */
export interface SectionPlace {
  scope: string;
  index: number;
}

/**
 * A part of the page as the page names it, `[data-chart="cliff"]`: one attribute of those that keep a part's identity,
 * its value a CSS string (CSS.escape's output, quoted). Anything else is no selector the page wrote, and one that is
 * no selector at all would make querySelector throw.
 */
const PART_SCOPE = /^\[(?:id|data-chart|data-alert-id|data-hook-id)="(?:[^"\\\n\r\f]|\\[^\n\r\f])*"\]$/;

/**
 * What a page keeps across a reload (its self-reload to a new version, or the browser's) and for the way back to it
 * (the browser's back and forward): its URL, where it was scrolled to and the sections open, which the page's
 * content, drawn once its data comes, would otherwise lose (the browser restores the scroll position before that,
 * on a page too short to hold it); and whether the page reloaded itself.
 */
export interface KeptView {
  url: string;
  x: number;
  /**
   * How far the page's content was scrolled past the top of the window, from the start of the content: a notice
   * above it, gone after the reload, does not move what the screen shows.
   */
  y: number;
  open: SectionPlace[];
  reloading: boolean;
}

/**
 * The view kept for this URL (`stored`, as keptViewText wrote it: as the last page in this tab went away, or in the
 * history entry gone back or forward to), when this load is a reload of that same URL or a way back to it: the page
 * reloading itself, or the browser reloading it or going back or forward (`navigation`, the Navigation Timing type,
 * "reload" or "back_forward"); null otherwise: a link followed or an address typed opens a page at its top, and
 * nothing is read from a value it did not write.
 */
export function keptViewFor(stored: string | null, url: string, navigation: string | undefined): KeptView | null {
  if (stored === null) return null;
  let v: unknown;
  try {
    v = JSON.parse(stored);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null) return null;
  const k = v as Partial<Record<keyof KeptView, unknown>>;
  const place = (p: unknown): p is SectionPlace => typeof p === 'object' && p !== null && typeof (p as SectionPlace).scope === 'string' && PART_SCOPE.test((p as SectionPlace).scope) && Number.isInteger((p as SectionPlace).index);
  if (k.url !== url || (navigation !== 'reload' && navigation !== 'back_forward' && k.reloading !== true)) return null;
  if (!Number.isFinite(k.x) || !Number.isFinite(k.y) || !Array.isArray(k.open) || !k.open.every(place)) return null;
  return { url, x: k.x as number, y: k.y as number, open: k.open, reloading: k.reloading === true };
}

/** A view as keptViewFor reads it back. */
export function keptViewText(view: KeptView): string {
  return JSON.stringify(view);
}

/** The URL of the same page over another range, with its filters and page parameters kept. */
export function rangeUrl(state: ViewState, range: Range): string {
  return buildUrl(routePath(state.route), { range, filters: state.filters }, samePageParams(state));
}

/** The URL of the same page zoomed out one step (widerRange); undefined at the widest range already. */
export function zoomOutUrl(state: ViewState, nowMs: number): string | undefined {
  const range = widerRange(state.range, nowMs);
  return range && rangeUrl(state, range);
}

/** The URL of the same page and range with other filters. */
export function filtersUrl(state: ViewState, filters: Record<string, string>): string {
  return buildUrl(routePath(state.route), { range: state.range, filters }, samePageParams(state));
}

/** Whether a page's figures follow the header's filters: the overview and the hook pages; alerts and forwarding are the whole fleet's. */
export function filtersApply(route: Route): boolean {
  return route.page === 'overview' || route.page === 'hook';
}

/**
 * What the header says instead of filter chips on a page the filters do not narrow (they stay in the URL for the
 * way back); null with no filters. `ownFilter`: the page is narrowed by a filter of its own (the alerts page's hook),
 * so it does not show the whole fleet either.
 */
export function notFilteredNote(filters: Record<string, string>, ownFilter = false): string | null {
  const list = filterList(filters);
  if (!list) return null;
  const one = Object.keys(filters).length === 1;
  const applies = `The filter${one ? '' : 's'} ${list} appl${one ? 'ies' : 'y'} to the overview and hook pages`;
  return ownFilter ? `${applies}, not to this one.` : `This page is not filtered: it shows the whole fleet. ${applies}.`;
}

/**
 * Why the filter form adds nothing as filled in: no dimension chosen, or no value (white space is none: "(not set)"
 * names the empty value); null when it adds a filter.
 */
export function filterProblem(dimension: string, value: string, notSet = false): string | null {
  if (!dimension) return 'Choose a dimension to filter by.';
  if (notSet || value.trim()) return null;
  return `${value ? 'Spaces alone are no value' : 'No value'}: type one, or tick (not set) for the events without one.`;
}

/**
 * The filters with one more (or a changed) dimension; null when the form is not filled in (filterProblem). The value
 * typed is trimmed: a space copied along with it would match nothing and read as the value it is not. `notSet`: the
 * events without the dimension or with it empty, as a breakdown's "(not set)" row (the filter on the empty value).
 */
export function addFilter(filters: Record<string, string>, dimension: string, value: string, notSet = false): Record<string, string> | null {
  if (filterProblem(dimension, value, notSet) !== null) return null;
  return { ...filters, [dimension]: notSet ? '' : value.trim() };
}

/** The filters without one dimension. */
export function removeFilter(filters: Record<string, string>, dimension: string): Record<string, string> {
  const next = { ...filters };
  delete next[dimension];
  return next;
}

/**
 * A custom-range field as the header holds it: its text; the instant the page filled it with (kept while the text
 * is still the one filled, so an untouched "now" stays now, whatever the hour); and the run a reader chose of a time
 * the clocks show twice (0 the first, 1 the second).
 */
export interface CustomField {
  text: string;
  filled?: { text: string; ms: number };
  run?: number;
}

/** The runs of a time a field names that the clocks show twice: their offsets ("UTC+2", "UTC+1") and the one taken. */
export interface RunChoice {
  offsets: string[];
  run: number;
}

/** A field read: its instants (two in the hour the clocks repeat) and the order they are tried in; or its problem. */
type FieldRuns = { runs: number[]; order: number[] } | { error: string };

/**
 * The instants a field names, and which to take: the run chosen; else the instant filled, while the text is as
 * filled; else the latest not after now, then the earliest after it (a time typed in the repeated hour is the one
 * just passed, or the one to come).
 */
function fieldRuns(f: CustomField, nowMs: number): FieldRuns {
  const problem = inputDateTimeProblem(f.text);
  if (problem !== null) return { error: problem };
  const runs = inputDateTimeRuns(f.text) as number[];
  const exact = f.filled?.text === f.text ? f.filled.ms : undefined;
  const filledRun = exact === undefined ? -1 : runs.findIndex((r) => r <= exact && exact < r + 60_000);
  if (filledRun >= 0) runs[filledRun] = exact as number;
  const chosen = f.run !== undefined && f.run < runs.length ? f.run : filledRun;
  if (chosen >= 0) return { runs, order: [chosen] };
  const byNearness = runs.map((_r, i) => i).sort((a, b) => {
    const [ra, rb] = [runs[a] as number, runs[b] as number];
    return ra <= nowMs === rb <= nowMs ? (ra <= nowMs ? rb - ra : ra - rb) : (ra <= nowMs ? -1 : 1);
  });
  return { runs, order: byNearness };
}

/**
 * The two fields read together: each field's runs in its order, the first pair that makes a range (a start before
 * the end) taken, else the first of each.
 */
function readFields(from: CustomField, to: CustomField, nowMs: number): { from: FieldRuns; to: FieldRuns; pick: [number, number] | null } {
  const f = fieldRuns(from, nowMs);
  const t = fieldRuns(to, nowMs);
  if ('error' in f || 'error' in t) return { from: f, to: t, pick: null };
  const pairs = f.order.flatMap((i) => t.order.map((j) => [i, j] as [number, number]));
  return { from: f, to: t, pick: pairs.find(([i, j]) => (f.runs[i] as number) < (t.runs[j] as number)) ?? pairs[0] ?? null };
}

/**
 * A custom range from the header's two DD/MM/YYYY HH:MM fields (in the chosen zone), or what is wrong with them. A
 * field as the page filled it keeps the instant filled; a time in the hour the clocks repeat is the run chosen, or
 * the one customRunChoices shows.
 */
export function customRangeFrom(from: CustomField, to: CustomField, nowMs: number): { range: Range } | { error: string } {
  const r = readFields(from, to, nowMs);
  if ('error' in r.from) return { error: r.from.error };
  if ('error' in r.to) return { error: r.to.error };
  const [i, j] = r.pick as [number, number];
  const [fromMs, toMs] = [r.from.runs[i] as number, r.to.runs[j] as number];
  if (fromMs >= toMs) return { error: 'The start must be before the end.' };
  // The API refuses a longer range: every refresh would fail the same way, the page never drawn.
  if (toMs - fromMs > MAX_RANGE_MS) return { error: `A range can be at most ${MAX_RANGE_MS / 86_400_000} days long.` };
  return { range: { kind: 'custom', from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString() } };
}

/**
 * The offsets offered beside each field whose time the clocks show twice, and the run customRangeFrom takes; null
 * for a field whose time they show once (or that names no time).
 */
export function customRunChoices(from: CustomField, to: CustomField, nowMs: number): { from: RunChoice | null; to: RunChoice | null } {
  const r = readFields(from, to, nowMs);
  const choice = (f: FieldRuns, picked: number | undefined): RunChoice | null =>
    'error' in f || f.runs.length < 2 ? null : { offsets: f.runs.map(shortOffset), run: picked ?? (f.order[0] as number) };
  return { from: choice(r.from, r.pick?.[0]), to: choice(r.to, r.pick?.[1]) };
}

/** The bounds the custom-range fields start with: the URL's custom range, or the last day. */
export function customFieldBounds(range: Range, nowMs: number): { from: number; to: number } {
  return range.kind === 'custom' ? { from: Date.parse(range.from), to: Date.parse(range.to) } : { from: nowMs - 86_400_000, to: nowMs };
}

/** The zone a select value stands for. */
export function zoneChoice(value: string): TimeZoneChoice {
  return value === 'UTC' ? 'UTC' : 'local';
}

const THEME_ORDER: ThemeChoice[] = ['auto', 'dark', 'light'];
export const THEME_LABEL: Record<ThemeChoice, string> = { auto: 'Theme: system', dark: 'Theme: dark', light: 'Theme: light' };

/** The theme the toggle moves to next: system, dark, light, and round again. */
export function nextTheme(choice: ThemeChoice): ThemeChoice {
  return THEME_ORDER[(THEME_ORDER.indexOf(choice) + 1) % THEME_ORDER.length] ?? 'auto';
}

/** Whether a click on a link is the app's to handle: a plain left click to the same origin (modified clicks open tabs). */
export function isPlainClick(e: { defaultPrevented: boolean; button: number; metaKey: boolean; ctrlKey: boolean; shiftKey: boolean; altKey: boolean }): boolean {
  return !(e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey);
}

/** The page title and text for a path the dashboard has no page at. */
export function notFoundView(pathname: string): { title: string; heading: string; text: string } {
  return { title: 'Not found · hookwatch', heading: 'No such page', text: `hookwatch has no page at ${pathname}. ` };
}
