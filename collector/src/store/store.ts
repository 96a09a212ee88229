/**
 * The Store: where hook events become durable, and where every per-hook question is answered.
 * One interface, one folder per backend (sqlite/, postgres/), one conformance suite for all of them.
 */
import type { BreakdownRow, ClientVersion, HookCounters } from '../../../shared/src/api.ts';
import type { HookEvent } from '../hooks/model.ts';

export interface IngestResult {
  /** Events stored by this call. */
  inserted: HookEvent[];
  /** Events already stored (a retried batch), not counted again. */
  duplicates: number;
}

/** A time range [fromMs, toMs) plus optional dimension filters (attribute name -> value). */
export interface RangeQuery {
  fromMs: number;
  toMs: number;
  filters?: Record<string, string>;
  /** Only this hook (hookCounters): a hook's own page need not aggregate every other hook. */
  hookId?: string;
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
  sizeUnknownExecutions: number;
  /** Largest output of any kind; null when no execution carried size data. */
  largest: number | null;
}

export interface PruneResult {
  events: number;
  rollups: number;
}

export interface Store {
  /** The backend's name, for logs and /metrics ('sqlite', 'postgres'). */
  readonly kind: string;
  /** Commits the events; resolves only once they are durable (the OTLP 200 waits for this). */
  ingest(events: HookEvent[]): Promise<IngestResult>;
  /** Known hooks (ever seen). */
  hook(id: string): Promise<HookInfo | undefined>;
  /** Per-hook counters over a range; only hooks with events in the range. */
  hookCounters(q: RangeQuery): Promise<Map<string, HookCounters & { info: HookInfo }>>;
  /** Time buckets for one hook. Buckets with no events are omitted. */
  series(hookId: string, q: SeriesQuery): Promise<Map<number, HookCounters>>;
  /** Every hook's time buckets, the few figures a sparkline draws; empty buckets omitted. */
  fleetSeries(q: SeriesQuery): Promise<FleetBucket[]>;
  /** Client versions seen in the range, with how many executions lacked size data. */
  clientVersions(q: RangeQuery): Promise<ClientVersion[]>;
  /** One hook's counters grouped by a dimension (attribute name). */
  breakdown(hookId: string, dimension: string, q: RangeQuery): Promise<Omit<BreakdownRow, 'status'>[]>;
  /** Time of the newest event (matching the filters, when given), or null. */
  lastEventMs(filters?: Record<string, string>): Promise<number | null>;
  /** Deletes raw events older than eventsBeforeMs and rollups older than rollupsBeforeMs, in bounded batches. */
  prune(eventsBeforeMs: number, rollupsBeforeMs: number): Promise<PruneResult>;
  /** Throws when the store cannot serve (for /readyz). */
  ping(): Promise<void>;
  /** Safe to call twice. */
  close(): Promise<void>;
}

/** The store cannot take writes right now (disk full, read-only, locked): retryable, 503 + Retry-After. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}

/** A filter or dimension the store does not know. */
export class UnknownDimensionError extends Error {
  override name = 'UnknownDimensionError';
}

