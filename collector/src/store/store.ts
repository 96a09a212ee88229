/**
 * The Store: where hook events become durable, and where every per-hook question is answered.
 * One interface, one folder per backend (sqlite/, postgres/), one conformance suite for all of them.
 */
import { createHash } from 'node:crypto';
import type { BreakdownRow, ClientVersion, HookCounters, TranscriptCommandRow } from './model.ts';
import type { HookEvent } from '../hooks/model.ts';
import type { TranscriptFinding } from '../hooks/transcript-findings.ts';
import type { FindingsResult } from './transcript-findings.ts';
import type { GuardTrim, GuardTrimStats } from './guard-trims.ts';
import { toCounters, type CounterRow } from './counters.ts';
import { eventsPruneBound, type Coverage } from './minute-sources.ts';
import { measuredOnly, persistedAtLeast } from '../../../shared/src/cliff.ts';

export interface IngestResult {
  /** Events stored by this call. */
  inserted: HookEvent[];
  /** Events already stored (a retried batch), not counted again. */
  duplicates: number;
  /** Events of this batch counted under an overflow hook because the store holds store.maxHooks hooks. */
  folded?: number;
  /** Names of the overflow hooks they went to. */
  overflowHooks?: string[];
  /**
   * Events stamped before `expiredBeforeMs`, not stored: older than retention.events keeps (the hour holding now -
   * retention.events, where retention deletes from), or than what retention already deleted. Retention would
   * delete them at its next run; each past day would have cost PostgreSQL a partition until then; and a retry of
   * one whose first copy retention deleted could not be told from a first delivery.
   */
  expired?: number;
  expiredBeforeMs?: number;
}

/**
 * The time an ingest at `nowMs` refuses events before (IngestResult.expired): what retention.events (`eventsMs`,
 * unset in tests of the store alone) keeps, in whole hours as retention deletes, and never less than what retention
 * already deleted (`prunedBeforeMs`: a leader's retention shorter than this replica's, a clock behind).
 */
export function expiredBefore(nowMs: number, eventsMs: number | undefined, prunedBeforeMs: number): number {
  const kept = eventsMs === undefined ? -Infinity : eventsPruneBound(nowMs - eventsMs);
  return Math.max(kept, prunedBeforeMs);
}

/** The events of a batch retention has already passed (see IngestResult.expired), and the rest. */
export function splitExpired(events: readonly HookEvent[], eventsBeforeMs: number): { kept: HookEvent[]; expired: number } {
  if (!(eventsBeforeMs > -Infinity) || events.every((e) => e.timeMs >= eventsBeforeMs)) return { kept: events as HookEvent[], expired: 0 };
  const kept = events.filter((e) => e.timeMs >= eventsBeforeMs);
  return { kept, expired: events.length - kept.length };
}

/**
 * The hooks a RangeQuery asks for: one (hookId), a few (hookIds, each once, sorted), every hook (undefined), or none
 * (null: hookIds empty, or without hookId).
 */
function hookSelection(q: Pick<RangeQuery, 'hookId' | 'hookIds'>): string | string[] | undefined | null {
  if (q.hookIds === undefined) return q.hookId;
  if (q.hookId !== undefined) return q.hookIds.includes(q.hookId) ? q.hookId : null;
  return q.hookIds.length === 0 ? null : [...new Set(q.hookIds)].sort();
}

/**
 * hookCounters as every store answers it, from its counter rows of the hooks asked for (`hookRows`, by hook id)
 * and those hooks' rows (`infos`): a hook whose row is gone is left out.
 */
export async function hookCountersFrom(
  q: RangeQuery,
  hookRows: (hooks: string | readonly string[] | undefined) => Promise<Map<string, CounterRow>>,
  infos: (ids: string[]) => Promise<Map<string, HookInfo>>,
): Promise<Map<string, HookCounters & { info: HookInfo }>> {
  const out = new Map<string, HookCounters & { info: HookInfo }>();
  const hooks = hookSelection(q);
  if (hooks === null) return out;
  const rows = await hookRows(hooks);
  if (rows.size === 0) return out;
  const byId = await infos([...rows.keys()]);
  for (const [id, row] of rows) {
    const info = byId.get(id);
    if (info) out.set(id, Object.assign(toCounters(row), { info }));
  }
  return out;
}

/**
 * fleetBreakdown as every store answers it, from its counter rows per hook and value of the hooks asked for
 * (`hookRows`: hook id, value, row): each hook's rows in breakdown's order, most executions first.
 */
export async function fleetBreakdownFrom(
  q: RangeQuery,
  hookRows: (hooks: string | readonly string[] | undefined) => Promise<Iterable<readonly [string, string, CounterRow]>>,
): Promise<Map<string, BreakdownRow[]>> {
  const out = new Map<string, BreakdownRow[]>();
  const hooks = hookSelection(q);
  if (hooks === null) return out;
  for (const [id, value, row] of await hookRows(hooks)) {
    const r = { value, ...toCounters(row) };
    const rows = out.get(id);
    if (rows) rows.push(r);
    else out.set(id, [r]);
  }
  for (const rows of out.values()) rows.sort((a, b) => b.executions - a.executions);
  return out;
}

/** Late arrivals: events received in [receivedFromMs, receivedToMs) whose event time is before eventBeforeMs. */
export interface ArrivalQuery {
  receivedFromMs: number;
  receivedToMs: number;
  eventBeforeMs: number;
}

/** Late persisted outputs, per hook or per value of a dimension (ArrivalQuery.dimension). */
export interface LatePersistedQuery extends ArrivalQuery {
  /**
   * A dimension (attribute name): each hook's arrivals are also split by its value, read through the events'
   * attribute sets (Arrival.byValue), as `breakdown` splits the counters.
   */
  dimension?: string;
}

/** Late arrivals' counters, with the range of their event times. */
export interface ArrivalCounters extends HookCounters {
  firstEventMs: number;
  lastEventMs: number;
}

/** One hook's persisted outputs that arrived late, with the range of their event times. */
export interface Arrival extends ArrivalCounters {
  info: HookInfo;
  /**
   * Asked by a dimension: the same arrivals by its value ('' for events without it, as `breakdown` names them);
   * the hook's own figures are their sum.
   */
  byValue?: Map<string, ArrivalCounters>;
}

/** A time range [fromMs, toMs) plus optional dimension filters (attribute name -> value). */
export interface RangeQuery {
  fromMs: number;
  toMs: number;
  filters?: Record<string, string>;
  /** Only this hook (hookCounters): a hook's own page need not aggregate every other hook. */
  hookId?: string;
  /**
   * Only these hooks (hookCounters, fleetSeries, fleetBreakdown): a client showing hooks past the fleet series'
   * riskiest (their sparklines, a screenful at a time), or an alert rule reading its hooks some hundreds at a time,
   * reads what they hold, not every hook of the fleet. Empty: none.
   */
  hookIds?: readonly string[];
}

export interface SeriesQuery extends RangeQuery {
  stepMs: number;
}

export interface HookInfo {
  id: string;
  hookEvent: string;
  hookName: string;
  /**
   * Earliest and latest event time, neither later than when the store received the event: a client whose clock
   * runs ahead cannot make a hook look active in the future (and keep the `silence` rule quiet).
   */
  firstSeenMs: number;
  lastSeenMs: number;
}

/** One hook's bucket in a fleet series. */
export interface FleetBucket {
  hookId: string;
  bucketMs: number;
  executions: number;
  outputsPersisted: number;
  /** Executions over the cap, reported or measured (a client without num_outputs_persisted shows only these). */
  executionsWithPersisted: number;
  sizeUnknownExecutions: number;
  /** Largest output of any kind; null when no execution carried size data. */
  largest: number | null;
}

/**
 * One bucket of the fleet series summed over many hooks (Store.fleetRest): each hook's persisted outputs at least
 * (persistedAtLeast) and the executions it counts as one output each (measuredOnly), taken per hook and bucket
 * before they are summed, and the largest output of any of them.
 */
export interface FleetRestBucket {
  bucketMs: number;
  executions: number;
  persisted: number;
  measuredOnly: number;
  sizeUnknownExecutions: number;
  largest: number | null;
}

/** A short name of a set of hook ids (every hook: ''), to key what was read for them. */
export function hooksDigest(ids: readonly string[] | undefined): string {
  return ids === undefined ? '' : createHash('sha256').update([...ids].sort().join(',')).digest('base64url').slice(0, 22);
}

/** Sums, per bucket, `sums` (Store.fleetRest's rows) and the hooks' own rows `buckets`, firsts first. */
export function addFleetRest(sums: readonly FleetRestBucket[], buckets: readonly FleetBucket[]): FleetRestBucket[] {
  const out = new Map<number, FleetRestBucket>();
  const add = (r: FleetRestBucket): void => {
    const cur = out.get(r.bucketMs);
    if (!cur) {
      out.set(r.bucketMs, { ...r });
      return;
    }
    cur.executions += r.executions;
    cur.persisted += r.persisted;
    cur.measuredOnly += r.measuredOnly;
    cur.sizeUnknownExecutions += r.sizeUnknownExecutions;
    if (r.largest !== null && (cur.largest === null || r.largest > cur.largest)) cur.largest = r.largest;
  };
  for (const r of sums) add(r);
  for (const b of buckets) {
    add({ bucketMs: b.bucketMs, executions: b.executions, persisted: persistedAtLeast(b), measuredOnly: measuredOnly(b), sizeUnknownExecutions: b.sizeUnknownExecutions, largest: b.largest });
  }
  return [...out.values()];
}

export interface PruneResult {
  events: number;
  rollups: number;
  /** Hooks with no event or rollup left. */
  hooks: number;
  /** Outputs trimmed by hookwatch guard (kept as long as the raw events; not events themselves). */
  guardTrims: number;
  /** Whole days of events dropped with their partition (PostgreSQL; their events are counted in `events`). */
  partitions?: number;
  /**
   * Partitions of the raw events (PostgreSQL) this run left to the next one: dropping or creating them needed a
   * lock on the events table that was not granted in time (a backup or a long read held it). Absent when none.
   */
  partitionsDeferred?: number;
}

/**
 * Bytes the store takes on disk, by part; the parts add up to the whole. SQLite: `database` (the file) and `wal`
 * (its write-ahead log). PostgreSQL: `events` (the daily partitions), `rollups` and `other` (hooks, alert state,
 * findings...), each with its indexes and TOAST.
 */
export type StoreSize = Record<string, number>;

export interface Store {
  /** The backend's name, for logs and /metrics ('sqlite', 'postgres'). */
  readonly kind: string;
  /** store.maxHooks: past it, events of new hook names are counted under overflow hooks (hook-limit.ts). */
  readonly maxHooks: number;
  /** Commits the events; resolves only once they are durable (the OTLP 200 waits for this). */
  ingest(events: HookEvent[]): Promise<IngestResult>;
  /**
   * Ingests given up since the start on a lock another transaction held past the ingest's bound (PostgreSQL's
   * lock_timeout: answered 503, sent again); a store without one (SQLite, a single writer) has none.
   */
  lockTimeouts?(): number;
  /** A known hook (one with events or rollups still in retention). */
  hook(id: string): Promise<HookInfo | undefined>;
  /** The known hooks among `ids`, by id, in one read (an unknown id is left out). */
  hooks(ids: readonly string[]): Promise<Map<string, HookInfo>>;
  /** Per-hook counters over a range; only hooks with events in the range. */
  hookCounters(q: RangeQuery): Promise<Map<string, HookCounters & { info: HookInfo }>>;
  /**
   * The range a read over q (hookCounters, series, or with `dimension` a breakdown by it) covers, by retention
   * (minute-sources.ts coveredRange): beyond retention.events a read that only raw events answer (q's filters or
   * the dimension keep no rollup) counts nothing, and any other has whole hours only.
   */
  coverage(q: RangeQuery, dimension?: string): Promise<Coverage>;
  /** Time buckets for one hook. Buckets with no events are omitted. */
  series(hookId: string, q: SeriesQuery): Promise<Map<number, HookCounters>>;
  /** Every hook's time buckets, the few figures a sparkline draws; empty buckets omitted. */
  fleetSeries(q: SeriesQuery): Promise<FleetBucket[]>;
  /**
   * The fleet series of every hook but `listed` (of q.hookIds, when given), summed per bucket: one row a bucket
   * however many hooks it sums, where fleetSeries would give one per hook and bucket. Empty buckets omitted.
   */
  fleetRest(q: SeriesQuery, listed: readonly string[]): Promise<FleetRestBucket[]>;
  /** Client versions seen in the range, with how many executions lacked size data. */
  clientVersions(q: RangeQuery): Promise<ClientVersion[]>;
  /** One hook's counters grouped by a dimension (attribute name). */
  breakdown(hookId: string, dimension: string, q: RangeQuery): Promise<BreakdownRow[]>;
  /**
   * Every hook's breakdown by a dimension at once (or only q.hookId's or q.hookIds'), by hook id: what `breakdown`
   * answers for each hook with events in the range, in one answer instead of a read per hook.
   */
  fleetBreakdown(dimension: string, q: RangeQuery): Promise<Map<string, BreakdownRow[]>>;
  /** Commits outputs trimmed by `hookwatch guard`; resolves with those that were new (retries store nothing twice). */
  recordGuardTrims(trims: GuardTrim[]): Promise<GuardTrim[]>;
  /** One hook's guard trims over a range, in buckets of q.stepMs. */
  guardTrims(hookId: string, q: SeriesQuery): Promise<GuardTrimStats>;
  /**
   * Commits transcript findings (`hookwatch scan --send`) to their own table, apart from telemetry; a finding
   * whose id is already stored is not stored again, except that an output stored as unconfirmed takes the outcome
   * sent since (FINDING_ON_CONFLICT); nor is one whose previousId is stored (the previous release stored the same
   * output under that id). Resolves once they are durable.
   */
  recordTranscriptFindings(findings: TranscriptFinding[]): Promise<FindingsResult>;
  /** Deletes transcript findings older than beforeMs, in bounded batches; returns how many (signal: as prune's). */
  pruneTranscriptFindings(beforeMs: number, signal?: AbortSignal): Promise<number>;
  /** Per-command figures of one hook from the transcript findings in the range. */
  transcriptCommands(hookId: string, q: RangeQuery): Promise<TranscriptCommandRow[]>;
  /**
   * A value kept in the store under `key` (store_meta), created by `create` the first time. The first writer
   * wins, so replicas sharing one database all get the same value (e.g. the privacy hash key).
   */
  metaValue(key: string, create: () => string): Promise<string>;
  /** The overflow hooks (hook-limit.ts) that exist: few, whatever the number of hooks. */
  overflowHooks(): Promise<HookInfo[]>;
  /**
   * Per-hook persisted outputs that arrived in a range of receive time with an event time before a bound; with
   * q.dimension, also split by its value (Arrival.byValue). Throws UnknownDimensionError for a dimension the store
   * does not know.
   */
  latePersisted(q: LatePersistedQuery): Promise<Map<string, Arrival>>;
  /**
   * Per overflow hook (hook-limit.ts), the events counted under it that arrived in a range of receive time with an
   * event time before a bound: folded when they arrived, whatever their event time.
   */
  lateFolded(q: ArrivalQuery): Promise<Map<string, Arrival>>;
  /** Time of the newest event (matching the filters, when given), or null. */
  lastEventMs(filters?: Record<string, string>): Promise<number | null>;
  /**
   * Deletes raw events older than eventsBeforeMs (in whole hours: from the start of the hour holding it), minute
   * rollups older than the store's retention.minuteRollups (minute-sources.ts) and rollups older than
   * rollupsBeforeMs, then hooks with nothing left, in bounded batches. Nothing is deleted for being ahead: an event
   * ingest accepted is kept until it is old, whatever clock stamped it (a replica's own clock judges the future skew,
   * and may run ahead of the one retention reads). A store whose retention is fenced by a leader lease throws
   * NotLeaderError once the lease has moved (prune and pruneTranscriptFindings alike). Once `signal` aborts (the
   * process stops), the run ends between two batches, each committed, and resolves with what it deleted until
   * then: the next run deletes the rest.
   */
  prune(eventsBeforeMs: number, rollupsBeforeMs: number, signal?: AbortSignal): Promise<PruneResult>;
  /**
   * What the store takes on disk (StoreSize); undefined for one without files (an in-memory database). A stat of
   * the files on SQLite; a catalog query on PostgreSQL, which /metrics runs periodically, never per scrape.
   */
  diskUsage?(): Promise<StoreSize | undefined>;
  /**
   * The time (ms since the epoch) by the clock the replicas share, the database server's (PostgreSQL): retention
   * deletes by it, so a leader whose own clock is off deletes no more and no less. Absent: the process's clock.
   */
  clockMs?(): Promise<number>;
  /** Throws when the store cannot serve (for /readyz). */
  ping(): Promise<void>;
  /** Safe to call twice. */
  close(): Promise<void>;
  /**
   * A store on a database server: closes its connections at once, without waiting for the server (a stop that
   * cannot wait on a database that does not answer). Calls in flight fail (503: nothing they carried was
   * acknowledged), as does every call after it. Safe twice, and after close().
   */
  cutConnections?(): void;
  /**
   * A store on a database server: calls `cb` each time it opens a new connection, the database answering (again,
   * after an outage). OTLP/gRPC exports held while the store was unavailable try again then.
   */
  onConnected?(cb: () => void): void;
}

/** The store cannot take writes right now (disk full, read-only, locked): retryable, 503 + Retry-After. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}

/**
 * A write refused because this replica is not (or no longer) the leader: a fenced write (PostgreSQL's lease fence,
 * postgres/fence.ts) found the lease moved. Retrying on this replica cannot help.
 */
export class NotLeaderError extends Error {
  override name = 'NotLeaderError';
}

/**
 * Retention work (prune, pruneTranscriptFindings) that throws `signal.reason` at its first pause between two
 * batches once `signal` aborts: that ends it quietly, each batch before committed on its own.
 */
export async function untilStopped(work: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  try {
    await work;
  } catch (err) {
    if (!signal?.aborted || err !== signal.reason) throw err;
  }
}

/** A filter or dimension the store does not know. */
export class UnknownDimensionError extends Error {
  override name = 'UnknownDimensionError';
}

