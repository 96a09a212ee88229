/**
 * Turns decoded OTLP log records into hook events. Claude Code 2.1.332 sends every hook value as a
 * stringValue ("num_success": "2"); intValue (number or string) and integral doubleValue are accepted too.
 * A record with a bad count is rejected on its own (reported as partial success), never the batch.
 */
import { createHash, hash as oneShotHash } from 'node:crypto';
import type { DeliveryStatus } from '../../../shared/src/cliff.ts';
import type { AnyValue, Attributes, LogRecord, LogsRequest, ResourceLogs, ScopeLogs } from '../otlp/model.ts';
import { classifyExecution, hasSizeData } from './cliff.ts';
import { isOverflowHook, type EventSource, type HookEvent, type HookEventKind } from './model.ts';
import type { RecordCollector } from './record-extract.ts';
import { echoed } from '../request-error.ts';
import { runToEnd } from '../paced.ts';

export interface ExtractOptions {
  nearThreshold: number;
  /** Extra attribute keys kept per event (e.g. team). */
  dimensions: readonly string[];
  /** Clock for events with no timestamp at all, and the receive time. */
  now?: () => number;
  /** Events stamped further than this ahead of the receive time are stored at the receive time. */
  maxFutureSkewMs?: number;
  /** Collectors of other kinds of records, shown every record of the same walk (each record is read once). */
  others?: readonly RecordCollector<unknown>[];
}

export interface ExtractResult {
  events: HookEvent[];
  /** Hook records that could not be used. */
  rejected: number;
  /** Human-readable reasons, the first few. */
  problems: string[];
  /** Log records that are not hook events (passed over, not rejected). */
  otherRecords: number;
  /** Each log record's delivery status in wire order; undefined for records that are not usable executions. */
  statuses: (DeliveryStatus | undefined)[];
  /** Events stamped more than maxFutureSkewMs ahead, moved to the receive time. */
  clamped: number;
  /**
   * Events whose event.timestamp names no offset or is no time at all ("2026-11-30T08:00:00", "1"): timed by the
   * record's timeUnixNano instead (else observedTimeUnixNano, else the receive time).
   */
  unzoned: number;
}

const MAX_PROBLEMS = 5;
const MAX_HOOK_NAME = 1024;
const MAX_DIMENSION_VALUE = 512;

// A Map, not an object literal: an event named "constructor" or "toString" must not find Object.prototype members.
const KIND_BY_NAME = new Map<string, HookEventKind>([
  ['hook_execution_complete', 'complete'],
  ['claude_code.hook_execution_complete', 'complete'],
  ['hook_execution_start', 'start'],
  ['claude_code.hook_execution_start', 'start'],
]);

/** The names a hook event goes by (attribute event.name, LogRecord event_name or the body string). */
export const HOOK_EVENT_NAMES: readonly string[] = [...KIND_BY_NAME.keys()];

/** Recognises a hook event by attribute event.name, by LogRecord event_name, or by the body string. */
export function hookEventKind(rec: LogRecord): HookEventKind | undefined {
  const byAttr = rec.attributes.get('event.name');
  const kind = (typeof byAttr === 'string' ? KIND_BY_NAME.get(byAttr) : undefined)
    ?? (rec.eventName ? KIND_BY_NAME.get(rec.eventName) : undefined)
    ?? (typeof rec.body === 'string' ? KIND_BY_NAME.get(rec.body) : undefined);
  return kind;
}

class RecordProblem extends Error {}

/**
 * Largest count or size accepted (2^31 - 1): far above any real hook output (2 billion characters) or duration
 * (24 days), small enough that PostgreSQL stores each in 4 bytes, and billions of records are needed before a sum
 * over a range overflows the stores' 64-bit integers.
 */
export const MAX_COUNT = 0x7fffffff;

/** How many ASCII digits `s` begins with. */
function leadingDigits(s: string): number {
  let i = 0;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) break;
    i++;
  }
  return i;
}

/** A non-negative whole number from a string, int or integral double; null when absent. */
export function parseCount(value: AnyValue | undefined, key: string): number | null {
  if (value === undefined || value === null) return null;
  let n: number;
  if (typeof value === 'string') {
    const digits = leadingDigits(value);
    // The usual case, a plain run of digits ("0", "12000"): no trimmed copy, no regular expression.
    if (digits === value.length && digits > 0 && digits <= 15) n = Number(value);
    else {
      const t = value.trim();
      if (!/^\d{1,15}$/.test(t)) throw new RecordProblem(`${key} ${JSON.stringify(value.slice(0, 40))} is not a non-negative whole number`);
      n = Number(t);
    }
  } else if (typeof value === 'number') {
    n = value;
  } else if (typeof value === 'bigint') {
    throw new RecordProblem(`${key} ${value} is out of range`);
  } else {
    throw new RecordProblem(`${key} has a ${Array.isArray(value) ? 'array' : typeof value} value, expected a number`);
  }
  if (!Number.isFinite(n) || !Number.isInteger(n) || n < 0) {
    throw new RecordProblem(`${key} ${n} is not a non-negative whole number`);
  }
  if (n > MAX_COUNT) throw new RecordProblem(`${key} ${n} is out of range (at most ${MAX_COUNT})`);
  return n;
}

function text(value: AnyValue | undefined, limit = MAX_DIMENSION_VALUE): string {
  if (value === undefined || value === null) return '';
  let s: string;
  if (typeof value === 'string') s = value;
  else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') s = String(value);
  else return '';
  return s.length > limit ? s.slice(0, limit) : s;
}

/**
 * Ids already computed, by hook event then hook name: looked up by the two strings themselves, which repeat on
 * every event of a hook, rather than by a joined key built and hashed anew each time.
 */
const hookIdCache = new Map<string, Map<string, string>>();
let hookIdCacheSize = 0;

/** Stable, URL-safe id of a hook: 16 hex characters of SHA-256(hookEvent NUL hookName). */
export function hookId(hookEvent: string, hookName: string): string {
  let byName = hookIdCache.get(hookEvent);
  let id = byName?.get(hookName);
  if (id === undefined) {
    id = createHash('sha256').update(`${hookEvent}\u0000${hookName}`).digest('hex').slice(0, 16);
    if (hookIdCacheSize > 10_000) {
      hookIdCache.clear();
      hookIdCacheSize = 0;
      byName = undefined;
    }
    if (byName === undefined) {
      byName = new Map();
      hookIdCache.set(hookEvent, byName);
    }
    byName.set(hookName, id);
    hookIdCacheSize++;
  }
  return id;
}

function stable(v: AnyValue | undefined): string {
  if (v === undefined || v === null) return 'null';
  if (typeof v === 'bigint') return `${v}n`;
  if (v instanceof Uint8Array) return `b:${Buffer.from(v).toString('base64')}`;
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (typeof v === 'object') return `{${[...v.kvlist.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, x]) => `${JSON.stringify(k)}:${stable(x)}`).join(',')}}`;
  return JSON.stringify(v);
}

/** Width of the time prefix: 36^9 ms reaches past the year 5000. */
const TIME_PREFIX_WIDTH = 9;
const TIME_PREFIX_LIMIT = 36 ** TIME_PREFIX_WIDTH;
/** ASCII digit at `i` of `s`. */
function digitAt(s: string, i: number): boolean {
  const c = s.charCodeAt(i);
  return c >= 48 && c <= 57;
}

/**
 * An ISO 8601 time that names its offset (ends in Z, ±hh:mm or ±hhmm): the same instant whatever the receiver's
 * time zone. Read off the last characters: every hook event has a timestamp.
 */
function zonedTime(s: string): boolean {
  const n = s.length;
  const last = s.charCodeAt(n - 1);
  if (last === 90 || last === 122) return true; // Z, z
  if (n < 5 || !digitAt(s, n - 1) || !digitAt(s, n - 2)) return false;
  const sign = (i: number): boolean => i >= 0 && (s.charCodeAt(i) === 43 || s.charCodeAt(i) === 45); // +, -
  if (digitAt(s, n - 3) && digitAt(s, n - 4) && sign(n - 5)) return true; // ±hhmm
  return s.charCodeAt(n - 3) === 58 && digitAt(s, n - 4) && digitAt(s, n - 5) && sign(n - 6); // ±hh:mm
}

/** The record's event.timestamp: the text (part of the natural key) and its instant, when it is a usable time. */
interface Timestamp {
  text: string;
  /** Milliseconds since the epoch, when the string parses to a time at or after 1970. */
  ms: number | undefined;
  /** True when the string names its offset, so `ms` is the same instant whatever the receiver's time zone. */
  zoned: boolean;
}

/** The number the two ASCII digits at `i` of `s` spell, else -1. */
function twoDigits(s: string, i: number): number {
  const a = s.charCodeAt(i) - 48;
  const b = s.charCodeAt(i + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

/**
 * The instant of a time in the form Claude Code sends (JavaScript's toISOString: `2026-12-07T06:40:00.123Z`) at or
 * after 1970, read off its characters as Date.parse reads it; NaN for anything else (Date.parse reads those). Every
 * hook event has one, and Date.parse's general parser cost about as much as the rest of its timestamp's handling.
 * Days past the 28th take the general path, which knows each month's length.
 */
function isoUtcMs(s: string): number {
  if (s.length !== 24 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || s.charCodeAt(10) !== 84 || s.charCodeAt(13) !== 58
    || s.charCodeAt(16) !== 58 || s.charCodeAt(19) !== 46 || s.charCodeAt(23) !== 90) return Number.NaN; // - - T : : . Z
  const century = twoDigits(s, 0);
  const yy = twoDigits(s, 2);
  const month = twoDigits(s, 5);
  const day = twoDigits(s, 8);
  const hour = twoDigits(s, 11);
  const minute = twoDigits(s, 14);
  const second = twoDigits(s, 17);
  const ms10 = twoDigits(s, 20);
  const ms1 = s.charCodeAt(22) - 48;
  if (century < 19 || yy < 0 || (century === 19 && yy < 70) || month < 1 || month > 12 || day < 1 || day > 28
    || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 || ms10 < 0 || ms1 < 0 || ms1 > 9) return Number.NaN;
  return Date.UTC(century * 100 + yy, month - 1, day, hour, minute, second, ms10 * 10 + ms1);
}

function readTimestamp(value: AnyValue | undefined): Timestamp {
  if (typeof value !== 'string') return { text: text(value), ms: undefined, zoned: false };
  const iso = isoUtcMs(value);
  if (iso === iso) return { text: value, ms: iso, zoned: true }; // not NaN: 24 characters, ending in Z
  const ms = Date.parse(value);
  // Before 1970 is no real Claude Code time, and negative times break the stores' integer bucket arithmetic.
  return { text: text(value), ms: Number.isFinite(ms) && ms >= 0 ? ms : undefined, zoned: zonedTime(value) };
}

interface Keys {
  /** The stored key: the hash, after the record's own time when it has one. */
  dedupKey: string;
  /** The bare hash, when a time prefix was added: the key of the same event stored before prefixes existed. */
  legacyKey?: string;
}

/**
 * The idempotency key of a hook record. A SHA-1 of the session, sequence number, timestamp and hook name (or of
 * the whole content where those are absent), after the event's own time in fixed-width base 36, so keys sort by
 * time: a batch's events land next to each other at the recent end of the unique index instead of on a random
 * page each, and a commit writes a few index pages, not one per event, whatever the size of the table.
 * The time is only ever taken from what the hash covers (event.timestamp with its offset, or timeUnixNano in a
 * content key), so the same record always gets the same key; a record without such a time keeps the bare hash.
 */
function dedupKey(kind: HookEventKind, rec: LogRecord, resource: Attributes, session: string, sequence: string, hookName: string, timestamp: Timestamp): Keys {
  let material: string;
  let prefixMs = timestamp.zoned ? timestamp.ms : undefined;
  if (session && (sequence || timestamp.text)) {
    material = `k|${kind}|${session}|${sequence}|${timestamp.text}|${hookName}`;
  } else {
    // No natural key: the record's whole content identifies it (a retry resends the same bytes).
    const attrs = [...resource.entries(), ...rec.attributes.entries()].map(([k, v]) => `${k}=${stable(v)}`).sort().join('\u0001');
    material = `c|${kind}|${rec.timeUnixNano}|${attrs}`;
    if (prefixMs === undefined && rec.timeUnixNano > 0n) prefixMs = Number(rec.timeUnixNano / 1_000_000n);
  }
  // One-shot: no Hash object per event.
  const hash = oneShotHash('sha1', material, 'base64url');
  if (prefixMs === undefined || prefixMs >= TIME_PREFIX_LIMIT) return { dedupKey: hash };
  return { dedupKey: prefixMs.toString(36).padStart(TIME_PREFIX_WIDTH, '0') + hash, legacyKey: hash };
}

/**
 * When the event happened: its event.timestamp when that is an instant (it names its offset); else the record's
 * timeUnixNano, its observedTimeUnixNano, or the receive time. A timestamp without an offset is read by Date.parse
 * in the receiver's own time zone, so the same record would land hours apart on two replicas in different zones;
 * Date.parse also reads "1" or "Dec 5" as local times of its own choosing.
 */
function eventTime(rec: LogRecord, timestamp: Timestamp, now: () => number): number {
  if (timestamp.ms !== undefined && timestamp.zoned) return timestamp.ms;
  if (rec.timeUnixNano > 0n) return Number(rec.timeUnixNano / 1_000_000n);
  if (rec.observedTimeUnixNano > 0n) return Number(rec.observedTimeUnixNano / 1_000_000n);
  return now();
}

/**
 * When a record of hookwatch's own (a guard trim, a transcript finding) happened, timed as hook events are: its
 * event.timestamp `stamp` when that names its offset, else its timeUnixNano, observedTimeUnixNano or `now`.
 */
export function recordTime(rec: LogRecord, stamp: AnyValue | undefined, now: () => number): number {
  return eventTime(rec, readTimestamp(stamp), now);
}

/** Extracts hook events from every record of a request; other records are counted and passed over. */
export function extractHookEvents(req: LogsRequest, opts: ExtractOptions): ExtractResult {
  return runToEnd(extractHookEventsSteps(req, opts));
}

/** Records extracted between two pauses of extractHookEventsSteps: some 10 ms; a 512-record batch has no pause. */
export const EXTRACT_SLICE_RECORDS = 2048;

/** extractHookEvents in slices of EXTRACT_SLICE_RECORDS records. */
export function* extractHookEventsSteps(req: LogsRequest, opts: ExtractOptions): Generator<void, ExtractResult, void> {
  const clock = opts.now ?? Date.now;
  // One receive time for the whole request.
  const receivedMs = clock();
  const now = (): number => receivedMs;
  const result: ExtractResult = { events: [], rejected: 0, problems: [], otherRecords: 0, statuses: [], clamped: 0, unzoned: 0 };
  // Records left in the current slice. The loop over records is a plain function's: the optimizing compiler
  // does not take over a generator's long-running loop (no on-stack replacement), so it would stay slow.
  let room = EXTRACT_SLICE_RECORDS;
  for (let i = 0; i < req.resourceLogs.length; i++) {
    const rl = req.resourceLogs[i] as ResourceLogs;
    for (let j = 0; j < rl.scopeLogs.length; j++) {
      const records = (rl.scopeLogs[j] as ScopeLogs).logRecords;
      for (let k = 0; k < records.length;) {
        if (room === 0) {
          room = EXTRACT_SLICE_RECORDS;
          yield;
        }
        const to = Math.min(records.length, k + room);
        extractRecords(records, k, to, rl.resource, i, j, opts, now, result);
        room -= to - k;
        k = to;
      }
    }
  }
  return result;
}

/** Records [from, to) of the scope j of resource i, extracted into `result` (and shown to `opts.others`). */
function extractRecords(records: readonly LogRecord[], from: number, to: number, resource: Attributes, i: number, j: number, opts: ExtractOptions, now: () => number, result: ExtractResult): void {
  const others = opts.others ?? [];
  for (let k = from; k < to; k++) {
    const rec = records[k] as LogRecord;
    for (const c of others) c.visit(rec, i, j, k);
    extractRecord(rec, resource, opts, now, result, i, j, k);
  }
}

/** One record's hook event (or its problem, or that it is no hook event) added to `result`. */
function extractRecord(rec: LogRecord, resource: Attributes, opts: ExtractOptions, now: () => number, result: ExtractResult, i: number, j: number, k: number): void {
  const receivedMs = now();
  const kind = hookEventKind(rec);
  if (!kind) {
    result.otherRecords++;
    result.statuses.push(undefined);
    return;
  }
  try {
    const event = toHookEvent(kind, rec, resource, opts, now, result);
    event.receivedMs = receivedMs;
    // A clock running ahead would put the event where no window looks until that time comes (and keep the
    // feed looking alive): it cannot have happened after it arrived, so it is kept at the receive time.
    if (opts.maxFutureSkewMs !== undefined && event.timeMs > receivedMs + opts.maxFutureSkewMs) {
      event.timeMs = receivedMs;
      result.clamped++;
    }
    result.events.push(event);
    result.statuses.push(kind === 'complete' ? event.status : undefined);
  } catch (err) {
    result.statuses.push(undefined);
    if (!(err instanceof RecordProblem)) throw err;
    result.rejected++;
    if (result.problems.length < MAX_PROBLEMS) {
      result.problems.push(`resourceLogs[${i}].scopeLogs[${j}].logRecords[${k}]: ${err.message}`);
    }
  }
}

/** A record's attribute, else its resource's (Claude Code copies OTEL_RESOURCE_ATTRIBUTES onto both). */
function attr(rec: LogRecord, resource: Attributes, key: string): AnyValue | undefined {
  const v = rec.attributes.get(key);
  return v === undefined ? resource.get(key) : v;
}

/** A count attribute of the record (else of its resource), parseCount'ed under its own name. */
function count(rec: LogRecord, resource: Attributes, key: string): number | null {
  return parseCount(attr(rec, resource, key), key);
}

function toHookEvent(kind: HookEventKind, rec: LogRecord, resource: Attributes, opts: ExtractOptions, now: () => number, counts: Pick<ExtractResult, 'unzoned'>): HookEvent {
  // Record attributes win over resource attributes. Read through a module function, not a closure made per event.
  const hookEventRaw = attr(rec, resource, 'hook_event');
  const hookNameRaw = attr(rec, resource, 'hook_name');
  if (hookEventRaw !== undefined && hookEventRaw !== null && typeof hookEventRaw !== 'string') throw new RecordProblem('hook_event must be a string');
  if (hookNameRaw !== undefined && hookNameRaw !== null && typeof hookNameRaw !== 'string') throw new RecordProblem('hook_name must be a string');
  const hookEvent = (hookEventRaw ?? '').trim();
  // A hook without a matcher is named by its event alone (e.g. UserPromptSubmit).
  const hookName = (hookNameRaw ?? '').trim() || hookEvent;
  if (!hookEvent) throw new RecordProblem('hook_event is missing');
  // The event first: a hook without a matcher is named by it, and the event is what its client should shorten.
  if (hookEvent.length > MAX_HOOK_NAME) throw new RecordProblem(`hook_event longer than ${MAX_HOOK_NAME} characters`);
  if (hookName.length > MAX_HOOK_NAME) throw new RecordProblem(`hook_name longer than ${MAX_HOOK_NAME} characters`);
  // Its id is the overflow hook's: its executions would be counted there, and raise hook_limit below the limit.
  if (isOverflowHook({ hookEvent, hookName })) throw new RecordProblem(`hook_name ${echoed(hookName)} is the name of the hook that counts new hook names past store.maxHooks`);

  const complete = kind === 'complete';
  // Read (and refused) in this order: the first bad count is the one the rejection names.
  const numHooks = count(rec, resource, 'num_hooks');
  const stdoutChars = complete ? count(rec, resource, 'stdout_chars') : null;
  const additionalContextChars = complete ? count(rec, resource, 'additional_context_chars') : null;
  const systemMessageChars = complete ? count(rec, resource, 'system_message_chars') : null;
  const initialUserMessageChars = complete ? count(rec, resource, 'initial_user_message_chars') : null;
  const outputsPersisted = complete ? count(rec, resource, 'num_outputs_persisted') : null;
  const extra: Record<string, string> = {};
  for (const key of opts.dimensions) {
    const v = text(attr(rec, resource, key));
    if (v) extra[key] = v;
  }
  const sourceAttr = text(attr(rec, resource, 'hookwatch.source'));
  const source: EventSource = sourceAttr === 'transcript' ? 'transcript' : 'otlp';
  const sessionId = text(attr(rec, resource, 'session.id'));
  const timestamp = readTimestamp(attr(rec, resource, 'event.timestamp'));
  const keys = dedupKey(kind, rec, resource, sessionId, text(attr(rec, resource, 'event.sequence')), hookName, timestamp);
  // Fields one by one, not spread from `keys`: a spread in the middle of a literal builds the object on V8's slow
  // path, once per event. The size facts are the event's own fields: classified once it is built.
  const event: HookEvent = {
    kind,
    dedupKey: keys.dedupKey,
    hookId: hookId(hookEvent, hookName),
    hookEvent,
    hookName,
    timeMs: eventTime(rec, timestamp, now),
    numSuccess: count(rec, resource, 'num_success'),
    numBlocking: count(rec, resource, 'num_blocking'),
    numNonBlockingError: count(rec, resource, 'num_non_blocking_error'),
    numCancelled: count(rec, resource, 'num_cancelled'),
    durationMs: count(rec, resource, 'total_duration_ms'),
    numHooks,
    stdoutChars,
    additionalContextChars,
    systemMessageChars,
    initialUserMessageChars,
    outputsPersisted,
    sizesKnown: false,
    status: 'unknown',
    serviceName: text(attr(rec, resource, 'service.name')),
    serviceVersion: text(attr(rec, resource, 'service.version')),
    sessionId,
    userId: text(attr(rec, resource, 'user.id')),
    userEmail: text(attr(rec, resource, 'user.email')),
    userAccountUuid: text(attr(rec, resource, 'user.account_uuid')),
    organizationId: text(attr(rec, resource, 'organization.id')),
    terminalType: text(attr(rec, resource, 'terminal.type')),
    source,
    extra,
  };
  if (complete) {
    event.sizesKnown = hasSizeData(event);
    event.status = classifyExecution(event, opts.nearThreshold);
  }
  if (keys.legacyKey !== undefined) event.legacyKey = keys.legacyKey;
  assertStorable(event);
  // Counted once the record is known to be usable: a rejected one is reported for its own problem.
  if (timestamp.text !== '' && !(timestamp.zoned && timestamp.ms !== undefined)) counts.unzoned++;
  return event;
}

/** The attribute each stored text field comes from, for the rejection message. */
const STORED_TEXT: readonly (readonly [keyof HookEvent, string])[] = [
  ['hookEvent', 'hook_event'], ['hookName', 'hook_name'], ['serviceName', 'service.name'], ['serviceVersion', 'service.version'],
  ['sessionId', 'session.id'], ['userId', 'user.id'], ['userEmail', 'user.email'], ['userAccountUuid', 'user.account_uuid'],
  ['organizationId', 'organization.id'], ['terminalType', 'terminal.type'],
];

/**
 * PostgreSQL cannot store U+0000 in text or JSON (22021, 22P05), while SQLite can: a record carrying one is
 * rejected on its own on both backends, so the good records of its batch are stored either way.
 */
function assertStorable(e: HookEvent): void {
  // The fields read directly first: nearly every event has no NUL anywhere, and then none is looked up by name.
  const nul = (v: string): boolean => v.includes('\u0000');
  if (nul(e.hookEvent) || nul(e.hookName) || nul(e.serviceName) || nul(e.serviceVersion) || nul(e.sessionId) || nul(e.userId) || nul(e.userEmail) || nul(e.userAccountUuid) || nul(e.organizationId) || nul(e.terminalType)) {
    for (const [field, attribute] of STORED_TEXT) {
      const v = e[field];
      if (typeof v === 'string' && v.includes('\u0000')) throw new RecordProblem(`${attribute} contains a NUL character (U+0000), which hookwatch does not store`);
    }
  }
  // for...in, not Object.entries: no array per event (extra is a plain object of its own string values).
  for (const key in e.extra) {
    const v = e.extra[key] as string;
    if (v.includes('\u0000') || key.includes('\u0000')) throw new RecordProblem(`${key.replaceAll('\u0000', '\\0')} contains a NUL character (U+0000), which hookwatch does not store`);
  }
}
