/** Query parameter parsing for /api/v1: times (RFC 3339 or now-24h), steps, filters. Errors name the parameter. */
import { stamp } from '../../../shared/src/alert-range.ts';
import { MAX_RANGE_MS } from '../../../shared/src/api.ts';
import { DELIVERY_STATUSES, type DeliveryStatus } from '../../../shared/src/cliff.ts';
import { parseDuration } from '../config/values.ts';
import { BadParameterError, echoed } from '../request-error.ts';
import { parseRfc3339 } from '../rfc3339.ts';
import { alignRange } from '../store/segments.ts';

/** A query parameter or path segment the API cannot accept. */
export class ParamError extends BadParameterError {
  override name = 'ParamError';
}

/** Largest time a JavaScript Date holds (ECMA-262: 8.64e15 ms either side of the epoch). */
const MAX_DATE_MS = 8.64e15;

/** Largest Unix time in seconds taken (9999-12-31T23:59:59Z): a larger one is milliseconds, as Grafana writes them. */
const MAX_UNIX_SECONDS = 253_402_300_799;
/** Smallest Unix time in seconds taken (1973-03-03T09:46:40Z, the first with 9 digits). */
const MIN_UNIX_SECONDS = 100_000_000;

/** `now`, `now-24h`, `now-7d`, `now+5m`, Unix seconds (`1764489600`, `1764489600.5`), or an RFC 3339 timestamp. */
export function parseTime(value: string, now: number, parameter: string): number {
  const v = value.trim();
  const rel = /^now(?:([+-])(.+))?$/.exec(v);
  if (rel) {
    if (!rel[1]) return now;
    // A bare number has no unit: now-24 is not 24 milliseconds ago to whoever wrote it.
    const d = /^\d+$/.test(rel[2] ?? '') ? undefined : parseDuration(rel[2]);
    if (d === undefined) throw new ParamError(parameter, `${parameter}: ${echoed(value)} is not a relative time such as now-24h (units ms, s, m, h, d, w)`);
    const t = rel[1] === '-' ? now - d : now + d;
    // Past what a Date holds the response could not even print the time (RangeError, a 500).
    if (!(Math.abs(t) <= MAX_DATE_MS)) throw new ParamError(parameter, `${parameter}: ${echoed(value)} is outside the range of dates`);
    return t;
  }
  // Unix seconds, as Prometheus takes them.
  if (/^\d{1,15}(\.\d{1,9})?$/.test(v)) {
    const seconds = Number(v);
    if (seconds > MAX_UNIX_SECONDS) throw new ParamError(parameter, `${parameter}: ${JSON.stringify(v)} is past the year 9999 as Unix seconds (milliseconds? divide by 1000)`);
    // Before 1973 as Unix seconds: a year ("2026") or a date written without dashes ("20261130") far more likely
    // than a time hookwatch never saw, which would answer an empty range without a word.
    if (seconds < MIN_UNIX_SECONDS) throw new ParamError(parameter, `${parameter}: ${JSON.stringify(v)} is before 1973 as Unix seconds, which have 10 digits since 2001 (1764489600 is 2025-11-30); write a date as RFC 3339 (2026-11-30T08:00:00Z)`);
    return Math.round(seconds * 1000);
  }
  const t = parseRfc3339(v);
  if (t !== undefined) return t;
  // A "+" left as it is in a query string is a space (form encoding; curl sends a URL as given), so an offset
  // (+05:30) or now+1h arrives with a space in it: name the cause, not only that the value is no time.
  if (v.includes(' ') && readsAsTime(v.replaceAll(' ', '+'), now)) {
    throw new ParamError(parameter, `${parameter}: ${echoed(value)} is not a time; a "+" in a URL's query is read as a space, so write it as %2B: ${echoed(v.replaceAll(' ', '%2B'))}`);
  }
  throw new ParamError(parameter, `${parameter}: ${echoed(value)} is not an RFC 3339 time (2026-11-30T08:00:00Z), Unix seconds (1764489600) or a relative time (now-24h)`);
}

/** Whether parseTime takes `value` (which has no space, so this asks no further). */
function readsAsTime(value: string, now: number): boolean {
  try {
    parseTime(value, now, '');
    return true;
  } catch {
    return false;
  }
}

/** A range of whole minutes: from rounded down, to rounded up. */
export interface TimeRange {
  fromMs: number;
  toMs: number;
}

export function parseRange(query: Record<string, unknown>, now: number, defaultSpanMs = 86_400_000): TimeRange {
  const from = single(query, 'from');
  const to = single(query, 'to');
  const toMs = to === undefined ? now : parseTime(to, now, 'to');
  const fromMs = from === undefined ? toMs - defaultSpanMs : parseTime(from, now, 'from');
  // from equal to to is an empty range, as Prometheus takes start equal to end: an answer wholly before the events
  // kept names one (coverage), and a client sending it back gets it answered, counting nothing.
  if (fromMs > toMs) throw new ParamError('from', 'from must be earlier than to, or equal to it (an empty range)');
  if (toMs - fromMs > MAX_RANGE_MS) throw new ParamError('from', `the range from..to is longer than the maximum of ${MAX_RANGE_MS / 86_400_000} days`);
  // The store counts whole minutes (segments.ts): the answer names the range it covered. An empty range stays
  // empty, at the minute from rounds down to, not the minute around it.
  const aligned = alignRange(fromMs, toMs);
  const range = fromMs === toMs ? { fromMs: aligned.fromMs, toMs: aligned.fromMs } : aligned;
  // The answer writes both ends in RFC 3339, whose years have four digits: past them toISOString() writes
  // +010000-01-01T00:00:00.000Z, which no client (nor this API, asked again) reads as a time.
  if (range.toMs > LAST_MINUTE_MS) throw new ParamError('to', `to: the range must end by ${stamp(LAST_MINUTE_MS)} (counted to the whole minute), the last time RFC 3339 writes`);
  if (range.fromMs < FIRST_MS) throw new ParamError(from === undefined ? 'to' : 'from', `${from === undefined ? 'to: the default range (24 hours before to)' : 'from: the range'} must start at ${stamp(FIRST_MS)} or later, the first time RFC 3339 writes`);
  return range;
}

/** The first and the last minute an answer can write in RFC 3339 (years 0000 to 9999). */
const FIRST_MS = Date.parse('0000-01-01T00:00:00Z');
const LAST_MINUTE_MS = Date.parse('9999-12-31T23:59:00Z');

/** The only steps a series uses: whole minutes that tile hours and days. */
export const STEPS_SECONDS = [60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800] as const;
export const MAX_BUCKETS = 2000;
const TARGET_BUCKETS = 240;

/** A step in seconds: given (`60`, `5m`, `1h`), or chosen so the range fits about 240 buckets. */
export function parseStep(query: Record<string, unknown>, range: TimeRange): number {
  const raw = single(query, 'step');
  const span = range.toMs - range.fromMs;
  if (raw === undefined) {
    return STEPS_SECONDS.find((s) => span / (s * 1000) <= TARGET_BUCKETS) ?? 604800;
  }
  const ms = /^\d+$/.test(raw) ? Number(raw) * 1000 : parseDuration(raw);
  if (ms === undefined || ms < 60_000 || ms % 60_000 !== 0) {
    throw new ParamError('step', 'step must be a whole number of minutes, at least 60 (seconds) or 1m');
  }
  // Counted as bucketStarts makes them: a first bucket the grid starts before `from` is one more than span / step.
  if (Math.ceil(range.toMs / ms) - Math.floor(range.fromMs / ms) > MAX_BUCKETS) throw new ParamError('step', `step too small: the range would need more than ${MAX_BUCKETS} buckets`);
  // Buckets are aligned to multiples of the step since 1970: a longer one would start decades before the range.
  if (ms > MAX_RANGE_MS) throw new ParamError('step', `step must be at most ${MAX_RANGE_MS / 86_400_000}d (${MAX_RANGE_MS / 1000} seconds), the longest range`);
  return ms / 1000;
}

/**
 * A series' bucket starts: multiples of the step (a chart keeps its axis), from the one holding `fromMs` to the
 * one before `toMs`. The hook series, the fleet series and the guard trims share them, so their buckets line up.
 */
export function bucketStarts(range: TimeRange, stepMs: number): number[] {
  const starts: number[] = [];
  // An empty range (from equal to to) has no bucket, though the step's grid may start one before it.
  if (range.fromMs >= range.toMs) return starts;
  for (let t = Math.floor(range.fromMs / stepMs) * stepMs; t < range.toMs; t += stepMs) starts.push(t);
  return starts;
}

/**
 * Where an answer says the bucket starting at `startMs` (on the step's grid) starts: there, except a first bucket
 * that would start before 0000-01-01 (a range from the first day RFC 3339 writes, with a step that grid does not
 * start a bucket on, such as 1w), which starts at `from`: its counts start there anyway, and an answer never writes
 * a time this API would refuse. Counts are still looked up by `startMs`.
 */
export function bucketStart(range: Pick<TimeRange, 'fromMs'>, startMs: number): number {
  return startMs < FIRST_MS ? range.fromMs : startMs;
}

/**
 * Where the bucket starting at `startMs` ends: a step later, at `toMs` when the range ends inside it, or at `nowMs`
 * (rounded up to the second, as `start` is written) when it is still filling: in a range ending now, whose `toMs`
 * is rounded up to the whole minute the store counts (the last hour's newest minute would read as whole), and at a
 * `toMs` later than now, as a firing alert's link widened to whole buckets asks. It is partial then, not a dip. A
 * bucket wholly ahead of now is not cut.
 */
export function bucketEnd(range: Pick<TimeRange, 'toMs'>, startMs: number, stepMs: number, nowMs: number): number {
  const end = Math.min(startMs + stepMs, range.toMs);
  const now = Math.ceil(nowMs / 1000) * 1000;
  return startMs < now && now < end ? now : end;
}

/**
 * Most hook-buckets (hooks listed × buckets) one fleet series answer holds, each hook carrying five arrays of a value
 * per bucket: 5,000 hooks in 2,000 buckets was a 126 MB answer that held the event loop for seconds. The default
 * limit at the default step (at most 241 buckets) fits.
 */
export const MAX_FLEET_HOOK_BUCKETS = 250_000;

/** Hooks (or breakdown rows) per page of /api/v1/hooks (and a breakdown) by default, and at most. */
export const DEFAULT_PAGE_SIZE = 1000;
export const MAX_PAGE_SIZE = 5000;

/** `limit`: 1..max, `fallback` when absent. */
export function parseLimit(query: Record<string, unknown>, max = MAX_PAGE_SIZE, fallback = DEFAULT_PAGE_SIZE): number {
  return parseCount(query, 'limit', 1, max, fallback);
}

/**
 * A count parameter: digits only, min..max, `fallback` when absent. Not Number(): it reads "" and " " as 0, "0x10"
 * as 16 and "1e2" as 100, answers to a question nobody asked.
 */
export function parseCount(query: Record<string, unknown>, name: string, min: number, max: number, fallback: number): number {
  const raw = single(query, name);
  if (raw === undefined) return fallback;
  if (!/^\d{1,7}$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new ParamError(name, `${name} must be a whole number from ${min} to ${max}`);
  return Number(raw);
}

/** The 400 for a `cursor` that is not a nextCursor this route gave. */
export function badCursor(): ParamError {
  return new ParamError('cursor', 'cursor must be the nextCursor of a previous page');
}

/** Where a breakdown page ended: its last row's executions and value. */
interface BreakdownPosition {
  executions: number;
  value: string;
}

/** A breakdown's order: most executions first, ties by value (the same from one page to the next). */
export function breakdownOrder(a: BreakdownPosition, b: BreakdownPosition): number {
  return b.executions - a.executions || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0);
}

/** A breakdown page's nextCursor: where it ended (the last row's executions and value), opaque to clients. */
function breakdownCursor(p: BreakdownPosition): string {
  return Buffer.from(`${p.executions}:${p.value}`).toString('base64url');
}

/** `cursor`: a nextCursor breakdownCursor gave; undefined when absent (the first page). */
export function parseBreakdownCursor(query: Record<string, unknown>): BreakdownPosition | undefined {
  const v = single(query, 'cursor');
  if (v === undefined) return undefined;
  const text = v.length <= 4096 ? Buffer.from(v, 'base64url').toString('utf8') : '';
  const m = /^(\d{1,15}):(.*)$/s.exec(text);
  // Only what breakdownCursor gives: bytes that are not UTF-8, or another spelling of the same bytes, are refused.
  if (!m || breakdownCursor({ executions: Number(m[1]), value: String(m[2]) }) !== v) throw badCursor();
  return { executions: Number(m[1]), value: String(m[2]) };
}

/**
 * One page of `limit` breakdown rows (sorted by breakdownOrder) after the row `after` names, with the count over
 * every page and the next page's cursor (null on the last). The cursor names a row, not a count: a value that gains
 * executions between two requests makes the next page neither repeat a row nor skip another (that value, moved up
 * past the cursor, is not listed again).
 */
export function breakdownPageOf<T extends BreakdownPosition>(sorted: readonly T[], limit: number, after: BreakdownPosition | undefined): { items: T[]; total: number; nextCursor: string | null } {
  return pageAfter(sorted, limit, after, breakdownOrder, breakdownCursor);
}

/**
 * One page of `limit` items of `sorted` after the position `after` names (`order` ranks a position against an item
 * as the list is sorted), with the count over every page and the next page's cursor (`cursor` of its last item,
 * null on the last page). A position past the last item is an empty page.
 */
export function pageAfter<T, P>(sorted: readonly T[], limit: number, after: P | undefined, order: (a: P, b: T) => number, cursor: (last: T) => string): { items: T[]; total: number; nextCursor: string | null } {
  const found = after === undefined ? 0 : sorted.findIndex((item) => order(after, item) < 0);
  const start = found === -1 ? sorted.length : found;
  const items = sorted.slice(start, start + limit);
  const last = items.at(-1);
  return { items, total: sorted.length, nextCursor: start + limit < sorted.length && last !== undefined ? cursor(last) : null };
}

/** Where a hook list page ended: its last hook's rank (status, persisted outputs at least, headroom, name) and id. */
export interface HookPosition {
  status: DeliveryStatus;
  persisted: number;
  headroom: number | null;
  hookName: string;
  id: string;
}

/** A hook list page's nextCursor: where it ended, opaque to clients. */
export function hookCursor(p: HookPosition): string {
  return Buffer.from(JSON.stringify([p.status, p.persisted, p.headroom, p.hookName, p.id])).toString('base64url');
}

/**
 * Longest cursor hookCursor gives: a hook name of 1,024 characters (hooks/extract.ts) written in JSON, 6 bytes each at
 * most (\u0001), in base64.
 */
const MAX_HOOK_CURSOR_CHARS = 9000;

/** `cursor`: a nextCursor hookCursor gave; undefined when absent (the first page). */
export function parseHookCursor(query: Record<string, unknown>): HookPosition | undefined {
  const v = single(query, 'cursor');
  if (v === undefined) return undefined;
  let fields: unknown;
  try {
    fields = JSON.parse(v.length <= MAX_HOOK_CURSOR_CHARS ? Buffer.from(v, 'base64url').toString('utf8') : '');
  } catch {
    throw badCursor();
  }
  const [status, persisted, headroom, hookName, id] = Array.isArray(fields) && fields.length === 5 ? (fields as unknown[]) : [];
  if (!DELIVERY_STATUSES.includes(status as DeliveryStatus) || !Number.isSafeInteger(persisted) || !(headroom === null || Number.isSafeInteger(headroom))
    || typeof hookName !== 'string' || typeof id !== 'string' || !HOOK_ID.test(id)) throw badCursor();
  const position = { status, persisted, headroom, hookName, id } as HookPosition;
  // Only what hookCursor gives: another spelling of the same position is refused.
  if (hookCursor(position) !== v) throw badCursor();
  return position;
}

/** Longest `name` a hook list is narrowed by, as for a filter's value. */
export const MAX_NAME_CHARS = 512;

/**
 * `name`: only the hooks whose name contains it, whatever the case (case folded with toLowerCase, so the same
 * in every locale); undefined when absent or empty.
 */
export function parseNameFilter(query: Record<string, unknown>): string | undefined {
  const v = single(query, 'name');
  if (v === undefined || v === '') return undefined;
  if (v.length > MAX_NAME_CHARS) throw new ParamError('name', `name is longer than ${MAX_NAME_CHARS} characters`);
  refuseNul('name', v);
  return v.toLowerCase();
}

/**
 * Refuses a value holding NUL: no stored value contains one (such records are rejected at ingest), so it could
 * match nothing, and PostgreSQL refuses it in a query.
 */
function refuseNul(name: string, v: string): void {
  if (v.includes('\u0000')) throw new ParamError(name, `${name} contains a NUL character (%00), which no stored value has`);
}

/** Whether a hook's name contains `needle` (as parseNameFilter returns it, already lower case). */
export function nameMatches(hookName: string, needle: string | undefined): boolean {
  return needle === undefined || hookName.toLowerCase().includes(needle);
}

export function single(query: Record<string, unknown>, name: string): string | undefined {
  const v = query[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new ParamError(name, `${name} must be given once`);
  return v;
}

/**
 * Refuses a parameter the route does not take, and one given more than once, as a 400 naming it: a misspelt
 * filter must not answer as if there were none.
 */
export function onlyParams(query: Record<string, unknown>, allowed: readonly string[]): void {
  for (const name of Object.keys(query)) {
    if (!allowed.includes(name)) {
      const takes = allowed.length === 0 ? 'this route takes no query parameters' : `this route takes: ${allowed.join(', ')}`;
      throw new ParamError(name, `unknown parameter ${echoed(name)}; ${takes}`);
    }
    single(query, name);
  }
}

/** Dimension filters: every parameter that is not a reserved one must be a known dimension. */
export function parseFilters(query: Record<string, unknown>, reserved: readonly string[], known: readonly string[]): Record<string, string> {
  const filters: Record<string, string> = {};
  for (const name of Object.keys(query)) {
    if (reserved.includes(name)) continue;
    if (!known.includes(name)) throw new ParamError(name, `unknown parameter ${echoed(name)}; filters: ${known.join(', ')}`);
    const v = single(query, name) as string;
    if (v.length > 512) throw new ParamError(name, `${name} is longer than 512 characters`);
    refuseNul(name, v);
    filters[name] = v;
  }
  return filters;
}

/** A hook id as the hooks API gives it (hooks/extract.ts). */
export const HOOK_ID = /^[0-9a-f]{16}$/;

/** Hooks one fleet series request may name in `ids`: 200 ids keep its URL under 4 KB. */
export const MAX_IDS = 200;

/** `ids`: hook ids separated by commas (at most MAX_IDS); undefined when absent. */
export function parseHookIds(query: Record<string, unknown>): Set<string> | undefined {
  const v = single(query, 'ids');
  if (v === undefined) return undefined;
  const ids = v.length > MAX_IDS * 17 ? [] : v.split(',');
  if (ids.length === 0 || ids.length > MAX_IDS) throw new ParamError('ids', `ids lists 1 to ${MAX_IDS} hook ids, separated by commas`);
  for (const id of ids) {
    if (!HOOK_ID.test(id)) throw new ParamError('ids', `ids: ${echoed(id)} is not a hook id (16 lowercase hex characters, see GET /api/v1/hooks)`);
  }
  return new Set(ids);
}

export function parseHookId(id: string): string {
  if (!HOOK_ID.test(id)) throw new ParamError('id', 'hook id must be 16 lowercase hex characters (see GET /api/v1/hooks)');
  return id;
}
