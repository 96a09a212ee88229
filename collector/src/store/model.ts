/**
 * What the store answers with: the collector's own figures, in milliseconds and plain counts. The JSON API maps
 * them to its wire shapes (api/wire.ts, shared/src/api.ts) so storage, alerting and the other in-process
 * readers never depend on how the API spells a field. The names match the wire ones where the meaning does.
 */
import type { OutputKind } from '../../../shared/src/cliff.ts';

/** Largest (or summed) value per output kind; null when no execution carried size data. */
export type CharsByKind = Record<OutputKind, number | null>;

/**
 * HookCounters' counts, each a plain number that adds up across events and buckets (SUM on merge, counters.ts):
 * complete and start events, commands run, outcomes, outputs persisted (and executions with one), executions
 * without size data (unknown, never healthy), executions near the cap, executions with size data whose sizes may
 * be sums over more than one command (num_hooks over 1, or not sent), and the summed duration.
 */
export const COUNT_FIELDS = [
  'executions', 'starts', 'numHooks', 'success', 'blocking', 'nonBlockingError', 'cancelled',
  'outputsPersisted', 'executionsWithPersisted', 'sizeUnknownExecutions', 'nearExecutions', 'sizesMaySumExecutions', 'durationMsSum',
] as const;
export type CountField = (typeof COUNT_FIELDS)[number];

/**
 * HookCounters' sizes per output kind: the largest reported size (a sum over num_hooks commands, so an upper
 * bound of the largest single string), its lower bound (ceil(sum / num_hooks)), and the sum.
 */
export const SIZE_FIELDS = ['maxChars', 'maxCharsLowerBound', 'sumChars'] as const;
export type SizeField = (typeof SIZE_FIELDS)[number];

/** The counters every rollup carries, per hook and per time bucket; durationMsMax is null without a duration. */
export type HookCounters = Record<CountField, number> & Record<SizeField, CharsByKind> & { durationMsMax: number | null };

/** One value of a dimension with the counters of one hook's events carrying it (the API adds the status). */
export type BreakdownRow = HookCounters & { value: string };

/**
 * A client version seen in a range, with its executions and those without size data; hasSizeData is false when
 * every one of them lacked it (a client older than 2.1.280).
 */
export type ClientVersion = { serviceName: string; version: string; hasSizeData: boolean } & Pick<HookCounters, 'executions' | 'sizeUnknownExecutions'>;

/**
 * One command of a hook as the stored transcript findings show it: runs, outputs with a known outcome and how
 * many were delivered, persisted or unconfirmed, sessions it ran in; largest output and largest delivered output
 * in UTF-16 code units (null when no size is known).
 */
export type TranscriptCommandRow = { command: string; largestOutputChars: number | null; largestDeliveredChars: number | null }
  & Record<'runs' | 'outputs' | 'delivered' | 'persisted' | 'unconfirmed' | 'sessions', number>;

/** One replica as the shared store has it (times in ms since the epoch). */
export interface ReplicaState {
  /** host:pid:random, as in the lease row. */
  replica: string;
  leader: boolean;
  /** The replica that read this state. */
  self: boolean;
  startedAtMs: number;
  lastHeartbeatMs: number;
  /** Seconds since the last heartbeat, by the database clock. */
  heartbeatAgeSeconds: number;
  /** Heartbeat within the lease ttl. */
  alive: boolean;
}

/** Who leads and which replicas run. A single process leads with no lease, so its lease never expires (null). */
export interface ClusterState {
  backend: 'postgres' | 'sqlite';
  self: string;
  leader: { replica: string; epoch: number; expiresAtMs: number | null } | null;
  leaseTtlSeconds: number | null;
  replicas: ReplicaState[];
}
