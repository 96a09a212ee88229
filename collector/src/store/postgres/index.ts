/**
 * The shared store for several replicas: PostgreSQL through `pg`. Versioned migrations run at start under an
 * advisory lock, so replicas starting together apply each migration once. Each ingest is one transaction:
 * events go in with ON CONFLICT (hook, time_ms, key) DO NOTHING RETURNING (looked for under every hook the event
 * can be stored under), and only the returned (new) events are added
 * to the rollups by upsert, so a batch retried on another replica is never counted twice and concurrent
 * replicas never lose a count. Rows are written in key order so concurrent batches cannot deadlock each other.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type pg from 'pg';
import type { BreakdownRow, ClientVersion, HookCounters } from '../model.ts';
import { isOverflowHook, type HookEvent } from '../../hooks/model.ts';
import type { Logger } from '../../telemetry/logger.ts';
import { ThrottledLine } from '../../telemetry/throttled-line.ts';
import { MAX_COUNT } from '../../hooks/extract.ts';
import { MIN_SECRET_CHARS, urlPasswords } from '../../config/values.ts';
import { COUNTER_COLUMNS, COUNT_SUM_COLUMNS, FIRST_COUNTER_COLUMNS, GRANULARITIES, MAX_COLUMNS, fromDbRow, groupForRollups, hooksSeen, mergeRow, toCounters, type CounterRow } from '../counters.ts';
import { DAY as DAY_MS, HOUR as HOUR_MS, MINUTE as MINUTE_MS, floorSql, granularityForStep, segments, type Granularity } from '../segments.ts';
import { KeptRows } from '../kept-rows.ts';
import { coveredRange, eventsPruneBound, laterBounds, mergeFleet, mergeSeries, minuteRollupsPruneBound, minuteSources, NOTHING_PRUNED, parseBounds, PRUNED_BEFORE_META, readEdges, hookEdgeRows, resolveSegment, seriesSpans, type Coverage, type EdgeRows, type MinuteRetention, type SeriesEdge, type PrunedBounds } from '../minute-sources.ts';
import { ATTR_ROLLUP_TABLE, attrRollupDdl, attrRollupPruneSql, attrRollupQuery, groupForAttrRollups } from '../attr-rollups.ts';
import { type DimFamily, type DimGranularity, type DimRollupGroup, DIM_CLIENT_FAMILY, DIM_CLIENT_TABLES, DIM_GRANULARITIES, DIM_HOOK_FAMILY, DIM_ROLLUP_TABLES, dimClientPruneSql, dimRollupRekeyDdl, DIM_PRUNE_HOOKS, ROLLED_DIMENSIONS_META, dimChanges, dimPruneSql, dimGranularity, dimRemoveSql, dimRollupDdl, eventGroupExprs, groupForDimRollups, groupsPerHook, newestFilteredEvent, planRead, rolledDimensions, rollupGroupColumns, rollupWhere, type Grouping } from '../dim-rollups.ts';
import { DEFAULT_MAX_HOOKS, KnownHooks, foldNewHooks, overflowIds, storedHookIds } from '../hook-limit.ts';
import { AttrSetCache, LAST_MS_SLACK, attrWork, type AttrWork } from '../attr-sets.ts';
import { ATTR_FIRST_MS_SOURCE, COUNTER_TABLES, attrFirstMsColumnDdl, ARRIVAL_INDEX, LATE_ARRIVAL_INDEX, OVER_ARRIVAL_INDEX, attrGroupedEventsQuery, hookGroupedEventsQuery, attrSetIndexChanges, ATTR_SET_INDEX_PREFIX, quoteIdent, counterColumnsDdl, type RollupFilter, ATTR_COLUMNS, KIND_CODES, attrFilter, COUNT_COLUMNS, compactEventColumnsDdl, compactEventsDdl, compactKey, hookRef, hookRefOf, keyTimeMs, EVENT_COLUMNS, LEGACY_KEYS_BEFORE, ORPHAN_HOOKS, OVERFLOW_HOOKS, arrivalTimeDdl, eventValues, hookScope, lateArrivalsQuery, latePersistedQuery, toArrivals, seriesQuery, fleetSeriesQuery, fleetRestQuery, shiftParams, toFleetBucket, toFleetRest, edgeFleetBuckets, ROLLUP_TABLES, coreSchemaDdl, sqlString, timeOrderedKeysDdl, toInfo, dimensionExpr, dimRebuildFromEventsSql, rollupAggregates, sizesMaySumDdl, upsertSetClause } from '../sql.ts';
import type { TranscriptCommandRow } from '../model.ts';
import type { TranscriptFinding } from '../../hooks/transcript-findings.ts';
import { FINDING_COLUMNS, FINDING_ON_CONFLICT, commandsQuery, redactStoredCommands, findingValues, notStoredUnderPreviousId, toCommandRow, transcriptFindingsDdl, uniqueFindings, type FindingsResult } from '../transcript-findings.ts';
import { guardTrimSql, guardTrimStats, guardTrimValues, guardTrimsDdl, type GuardTrim, type GuardTrimStats } from '../guard-trims.ts';
import { inTransaction, isAnswerTimeout, isConnectTimeout, keepAlive, liftAnswerTimeout } from './connection.ts';
import { boundPause, holdLease, leaseHeld, type LeaseFence } from './fence.ts';
import { BlockedWatch, buildEventsIndex, fillColumn, inMigrationTransaction, MigrationBlockedError, MigrationLockWaitError, OWN_NAMESPACE, shortSteps, withMigrationLock, type Migration } from './migrate.ts';
import { ConnectionSockets, CuttablePool } from './sockets.ts';
import { NotLeaderError, StoreUnavailableError, fleetBreakdownFrom, hookCountersFrom, splitExpired, expiredBefore, untilStopped, type Arrival, type ArrivalQuery, type HookInfo, type LatePersistedQuery, type IngestResult, type PruneResult, type RangeQuery, type SeriesQuery, type Store, type StoreSize, type FleetBucket, type FleetRestBucket, addFleetRest, hooksDigest } from '../store.ts';

export interface PostgresStoreOptions {
  /** postgres:// URL; its password never appears in logs or errors. */
  url: string;
  /** Extra dimension attribute keys (config `dimensions`). */
  dimensions?: readonly string[];
  /** Connections in this replica's pool (ingest and other writes). */
  poolSize?: number;
  /** store.readers: connections of the read pool that answers queries, apart from the writers (default 2). */
  readers?: number;
  /**
   * retention.events and retention.minuteRollups: minutes older than the minute horizon are read from the raw
   * events, and beyond the events from whole hours (minute-sources.ts). Without it minute rollups serve every minute.
   */
  retention?: MinuteRetention;
  /**
   * The clock an ingest judges events by against retention.events (IngestResult.expired): the service's, which the
   * receivers' time checks read too. Date.now when not given.
   */
  now?: () => number;
  logger?: Logger;
  /** Rows deleted per statement by prune (bounded so retention never holds long locks). */
  pruneBatch?: number;
  /** store.maxHooks: events of further hook names are counted under overflow hooks (by all replicas together). */
  maxHooks?: number;
  /**
   * How long a read may count on the retention bounds this replica last read (PrunedBounds) before reading them
   * again: another replica's prune notes them before it deletes. Default BOUNDS_REFRESH_MS.
   */
  boundsRefreshMs?: number;
  /** The server's bound on one statement, and on a transaction left idle (default STATEMENT_TIMEOUT_MS; tests). */
  statementTimeoutMs?: number;
  /** How long a connection is idle before TCP keepalive probes it (default KEEPALIVE_MS; tests). */
  keepAliveMs?: number;
  /**
   * Called by open once it holds the migration lock, before it changes anything: from then on it may change the
   * schema (open.ts StoreWait). What it throws ends the open.
   */
  onMigrationLock?: () => void;
  /** Called by open when another replica holds the migration lock, once, as it begins to wait for it. */
  onMigrationLockWait?: () => void;
  /**
   * How long open waits for another replica's migration lock before it fails with MigrationLockWaitError, having
   * changed nothing (default: no bound).
   */
  migrationLockWaitMs?: number;
  /** How long a migration waits for another session's lock or snapshot before it gives up (default MIGRATION_BLOCKED_MS; tests). */
  migrationBlockedMs?: number;
}

/** A stuck statement must not hold an OTLP request (and its row locks) forever. */
const STATEMENT_TIMEOUT_MS = 60_000;
/**
 * How much longer than the statement timeout a statement is waited for before it is given up on here: the
 * server ends a slow statement itself, but a connection the network dropped without a reset (a partition, a NAT
 * or firewall forgetting the flow, a host gone) brings neither its answer nor an error.
 */
const ANSWER_GRACE_MS = 5_000;
/**
 * How long the readiness check (ping, /readyz) waits for the database, connecting included. A readiness probe
 * gives up after a few seconds (1 s by default in Kubernetes): a replica cut off from the database says so within
 * this, and says it is ready again within this of the network healing, not a statement bound later.
 */
const READY_TIMEOUT_MS = 2_000;

/**
 * How long the retention bounds read from store_meta are trusted (PostgresStoreOptions.boundsRefreshMs). They only
 * matter where this replica keeps more than the one that prunes (a retention raised on some replicas first):
 * its reads then stop counting on what that prune deletes within this long of the prune starting.
 */
export const BOUNDS_REFRESH_MS = 5_000;

/** Advisory lock key that serialises migrations across replicas (any constant; "hookwatch" in ASCII, truncated). */
export const MIGRATION_LOCK_KEY = 0x686f6f6b77;
/** Advisory lock key that serialises creating event partitions across replicas. */
export const PARTITION_LOCK_KEY = 0x686f6f6b78;

/**
 * Event partitions are named by their day number since the epoch (events_d20514 holds 2026-03-02 UTC; a day
 * before 1970 has a negative number, events_d-1 holding 1969-12-31).
 */
const PARTITION_PREFIX = 'events_d';
/** The name of day `d`'s partition. */
const partitionName = (d: number): string => `${PARTITION_PREFIX}${d}`;
/** The partition of day `d` in SQL: quoted, as a negative day's name is no plain identifier. */
const partitionTable = (d: number): string => quoteIdent(partitionName(d));
/** Days of partitions created ahead at open (and whenever an ingest meets a day without one). */
const DAYS_AHEAD = 2;
/** SQLSTATE of an insert that found no partition for its row (dropped by retention on another replica). */
const NO_PARTITION = '23514';
/** SQLSTATE lock_not_available: a statement gave up waiting for a lock (lock_timeout). */
const LOCK_NOT_AVAILABLE = '55P03';
/**
 * How long DDL on the events table (a partition created, an old day's detached) waits for its lock. While it
 * waits, every later statement on events that conflicts with it queues behind it; and what it waits for can last
 * hours (a pg_dump holds ACCESS SHARE on every table until it ends, a long read until it has read). Past this it
 * gives up: retention leaves the day to its next run, an ingest answers 503 and its exporter sends it again.
 */
const PARTITION_DDL_LOCK_TIMEOUT_MS = 1000;
/**
 * An ingest transaction's bounds on waiting, never on work. Its statements go back to back, each sent as soon as
 * the one before is answered, with the little work of preparing the next between them (a request of up to
 * ONE_COMMIT_EVENTS events is one transaction, a larger one goes in parts aimed at 20 ms of work, each a
 * transaction of its own: pipeline/hook-ingest.ts); the work of a statement is bounded by the statement timeout
 * alone.
 * - A statement waits for a lock (the fold lock, an attribute set's, the hook's or a rollup's row) at most
 *   INGEST_LOCK_TIMEOUT_MS, then fails with 55P03: the batch is answered 503 with Retry-After well within an
 *   OTLP exporter's 10 s timeout, where it waited for the lock's holder for up to the statement bound (60 s) and
 *   its exporter gave up on it first.
 * - The server ends an ingest transaction left idle between its statements for INGEST_IDLE_TIMEOUT_MS (and its
 *   connection): a replica paused inside one (SIGSTOP, a VM freeze, a partition) holds the rows it locked, which
 *   every replica's batches of the same hooks need, for that long, not the statement bound. Nothing of it was
 *   committed or acknowledged; resumed, the replica answers its request 503 and the exporter sends it again.
 */
const INGEST_LOCK_TIMEOUT_MS = 3000;
const INGEST_IDLE_TIMEOUT_MS = 5000;
/**
 * How often, at most, ingest logs that it gave up waiting for a lock (with how many since the last line): a
 * replica paused inside its commit has every other replica's batches of the same hooks give up, one a request.
 */
const LOCK_TIMEOUT_LOG_MS = 10_000;
/** How often, at most, a store that is open logs that the server refuses its connections (refusedLine). */
const REFUSED_LOG_MS = 60_000;
/**
 * How an ingest transaction begins: in one round trip with its bounds, neither above the statement timeout
 * (PostgresStoreOptions.statementTimeoutMs, which bounds every transaction left idle).
 */
function ingestBegin(statementTimeoutMs: number): string {
  const bound = (ms: number): number => Math.max(1, Math.min(ms, statementTimeoutMs));
  return `BEGIN; SET LOCAL lock_timeout = ${bound(INGEST_LOCK_TIMEOUT_MS)}; SET LOCAL idle_in_transaction_session_timeout = ${bound(INGEST_IDLE_TIMEOUT_MS)}`;
}
/**
 * Advisory lock key between ingests that fold events onto overflow hooks (exclusive) and all others (shared):
 * two deliveries of one event racing with different fold decisions would otherwise both find no copy.
 */
export const FOLD_LOCK_KEY = 0x686f6f6b79;

/** A batch taken for one of known hooks created a hook row: rolled back, to be counted against store.maxHooks. */
class HookRecreated extends Error {
  constructor() {
    super('a hook taken for known was created again');
  }
}

/** store_meta key: the last day whose events partition has had its unique index rebuilt packed. */
const PACKED_THROUGH = 'events_index_packed_through';
/** A day's partition is rebuilt packed this long after the day ends (events arriving later split a page or two). */
const PACK_AFTER_MS = 3_600_000;
/**
 * An index is rebuilt again once its share of its table's size has grown this much past the share it had right
 * after its last rebuild (store_meta `index_packed_share:<index>`): pages split in halves by writes in the middle of the key order (a
 * rollup row's hook or hour, late events into a finished day) take up to twice the room.
 */
const REPACK_GROWTH = 1.3;
/** Indexes, and tables, smaller than this (16 pages of 8 KiB) are never rebuilt for their size: nothing to gain. */
const REPACK_MIN_BYTES = 16 * 8192;
/** store_meta key prefix of the share of its table an index had right after its last rebuild. */
const PACKED_SHARE = 'index_packed_share:';
/**
 * A rebuild's limits: it waits for transactions older than it (a long report, a backup) at most LOCK_TIMEOUT and
 * runs at most STATEMENT_TIMEOUT; cut short, it leaves an invalid copy that the next run drops, then tries again.
 */
const REBUILD_LOCK_TIMEOUT = '5min';
const REBUILD_STATEMENT_TIMEOUT = '1h';
/**
 * Heap pages per BRIN range of events_time: about 640 events at the compact row size (a partial hour at a
 * range's edge reads a range's worth of rows at most beyond its own). Migration 11 made it with 32 pages a range:
 * a team's 46 minutes at 10 M events a month read 25,000 rows for 12,000 (7.0 ms); with 8, 16,000 (4.1 ms).
 */
export const BRIN_PAGES_PER_RANGE = 8;

/**
 * The migration's copies of sql.ts compactKey and attrDigest, in SQL (session-local, dropped at its end): a
 * stored text key becomes the same 16 bytes ingest computes, so a retry after the upgrade finds it. The
 * attribute digest hashes extra as jsonb text, which may differ from the JSON ingest writes: such a tuple gets a
 * second set on its next event (filters and breakdowns match by value, so both count).
 */
const PG_MIGRATION_FUNCTIONS = `CREATE FUNCTION pg_temp.hookwatch_key(k text) RETURNS bytea LANGUAGE sql IMMUTABLE AS $f$
    SELECT CASE WHEN k ~ '^[0-9a-z]{9}[A-Za-z0-9_-]{27}$'
      THEN substring(int8send((SELECT SUM((strpos('0123456789abcdefghijklmnopqrstuvwxyz', substr(k, i, 1)) - 1) * (36::numeric ^ (9 - i))) FROM generate_series(1, 9) AS i)::bigint) FROM 3 FOR 6)
        || substring(sha256(convert_to(k, 'UTF8')) FROM 1 FOR 10)
      ELSE substring(sha256(convert_to(k, 'UTF8')) FROM 1 FOR 16) END $f$;
  CREATE FUNCTION pg_temp.hookwatch_attr_digest(VARIADIC v text[]) RETURNS bytea LANGUAGE sql IMMUTABLE AS $f$
    SELECT substring(sha256(convert_to(string_agg(octet_length(x) || ':' || x, '' ORDER BY i), 'UTF8')) FROM 1 FOR 16)
    FROM unnest(v) WITH ORDINALITY AS u(x, i) $f$;`;

/** A part of a series range and how it is read (seriesQuery's arguments and the parameters). */
interface SeriesPart {
  fromMs: number;
  toMs: number;
  filterWhere: string | null;
  rollup: RollupFilter | undefined;
  params: unknown[];
  granularity?: Granularity;
}

const GUARD_SQL = guardTrimSql((n) => `$${n}`);

/**
 * Change generations per UTC day (migration 19), in DAY_CHANGE_SLOTS rows a day, by which the replicas keep the
 * closed buckets of the fleet series and the hooks' counters between calls (PostgresStore.dayGenerations): a
 * commit that changes a day's rollups adds 1 to one of that day's rows, in its own transaction, so a read sees a
 * day's generations and its rows of one snapshot, and a day whose generations are as they were when its rows were
 * kept has the same rows. The database bumps them itself, by statement triggers on the rollups, not the
 * store's code: every writer does, a replica of the previous release still running during a rolling update too.
 * Inserts and updates of the minute and hour rollups bump nothing: a hand change of those alone is not seen by
 * the replicas until it touches the day's rollup_1d too or they restart. Every ingest commit writes the day rollup of each day it touches
 * (its inserts and updates bump those days); retention deletes from all three (each delete bumps the days it
 * deleted from). A migration that changes rollup rows in place must write the day's rollup_1d too, as a hand
 * change must: clearing day_changes instead would start a day's sums again from 0, where a kept key could match.
 *
 * The row bumped is the one of the day and the slot of the writing connection (its backend pid modulo the
 * slots): concurrent ingest transactions of several connections, each holding its row's lock from its day
 * rollup statement (the last of the transaction: applyRollups) to its commit, mostly bump different rows instead
 * of waiting on one a day; a replica paused there holds up the connections of its slot only, one in 256. Each statement
 * takes its rows in day order; two batches of one slot each inserting into one day and updating another can
 * still deadlock, which ingest retries as it does any conflict. The sum of a day's rows only grows, until
 * retention deletes them with the day's rollups (pruneDayChanges): a day before DayChangesPruned.beforeDay reads
 * under the count of those deletes instead.
 */
export const DAY_CHANGES = 'day_changes';
const DAY_CHANGE_SLOTS = 256;
/**
 * store_meta key of how far retention has deleted the days' change generations (DayChangesPruned, JSON): the rows
 * of the days whose rollups it has deleted go with them (prune), so the table holds the days within
 * retention.rollups, not every day since migration 19.
 */
const DAY_CHANGES_PRUNED_META = 'day_changes_pruned';

/**
 * The days before `beforeDay` have had their change generations deleted by retention, `prunes` the count of the
 * retention transactions that deleted some or moved `beforeDay` (never lowered). A day's rows going makes its sum
 * 0 again, as on a day never written (one written before migration 19), and a late commit into it counts from 1
 * again: what was kept for such a day must not be taken for unchanged by a sum come back. So a day before
 * `beforeDay` reads as its sum under `prunes` (dayGenerations), which every transaction deleting rows moves.
 */
interface DayChangesPruned {
  beforeDay: number;
  prunes: number;
}

function parseDayChangesPruned(value: unknown): DayChangesPruned {
  try {
    const v = JSON.parse(String(value)) as Partial<Record<keyof DayChangesPruned, unknown>>;
    if (typeof v.beforeDay === 'number' && Number.isSafeInteger(v.beforeDay) && typeof v.prunes === 'number' && Number.isSafeInteger(v.prunes)) return { beforeDay: v.beforeDay, prunes: v.prunes };
  } catch {
    // None yet (or not one this version wrote): nothing pruned.
  }
  return { beforeDay: -Infinity, prunes: 0 };
}

function dayChangesDdl(): string {
  const trigger = (table: string, event: 'INSERT' | 'UPDATE' | 'DELETE'): string =>
    `CREATE TRIGGER ${table}_${event.toLowerCase()}_day_changes AFTER ${event} ON ${table} REFERENCING ${event === 'DELETE' ? 'OLD' : 'NEW'} TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION hookwatch_day_changed();`;
  return `CREATE TABLE ${DAY_CHANGES} (day BIGINT NOT NULL, slot SMALLINT NOT NULL, generation BIGINT NOT NULL, PRIMARY KEY (day, slot));
  CREATE FUNCTION hookwatch_day_changed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $f$
  BEGIN
    INSERT INTO ${DAY_CHANGES} AS c (day, slot, generation)
    SELECT DISTINCT ${floorSql('bucket', DAY_MS)} / ${DAY_MS}, pg_backend_pid() % ${DAY_CHANGE_SLOTS}, 1 FROM changed ORDER BY 1
    ON CONFLICT (day, slot) DO UPDATE SET generation = c.generation + 1;
    RETURN NULL;
  END $f$;
  ${trigger(ROLLUP_TABLES.day, 'INSERT')}
  ${trigger(ROLLUP_TABLES.day, 'UPDATE')}
  ${Object.values(ROLLUP_TABLES).map((t) => trigger(t, 'DELETE')).join('\n  ')}`;
}

/**
 * The rollups' plain sums: nearly always 0 in a row (blocking, errors, cancels, persisted outputs, executions
 * near the cap or without sizes), written as NULL when 0, which the row's null bitmap holds instead of 8 bytes;
 * every read sums them and reads NULL as 0 (counters.ts toCounters). The size sums (sum_*) are not among them:
 * there NULL means unknown.
 */
const ZERO_AS_NULL_SUMS: ReadonlySet<string> = new Set(COUNT_SUM_COLUMNS);

/** random_page_cost of the read connections (see the read pool). */
export const READ_RANDOM_PAGE_COST = 1.1;

/**
 * work_mem of the fleet series' rest (Store.fleetRest), set for its transaction only (SET LOCAL), never lowered
 * below the server's or the URL's own. Its statement groups every hour row of the range per bucket and, apart,
 * per hook and bucket where outputs persist; the planner expects up to a group per hook and bucket, and under
 * PostgreSQL's default of 4 MB (8 MB for a hash, hash_mem_multiplier 2) plans its hash table in partitions for
 * disk. Over 10,000 hooks with 30 days of hour rows (531,000 rows): 290-300 ms of server CPU, 230-250 with this
 * (with hooks that persist among the rest, 30,000 groups and 20 MB spilled in 5 batches: 260 against 210 ms).
 * A hash table may grow to twice this before it spills, so each of the read pool's connections (store.readers)
 * holds at most 64 MB for it. The hooks' counters and the listed hooks' series keep the session's work_mem: their
 * plans read the rollups in key order, already grouped by hook, and hashed took as long (counters, 270 ms) or
 * longer (the listed hooks' series, 90 -> 150 ms).
 */
export const WIDE_READ_WORK_MEM_MB = 32;
const WIDE_READ_BEGIN = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT set_config('work_mem', CASE WHEN pg_size_bytes(current_setting('work_mem')) < ${WIDE_READ_WORK_MEM_MB} * 1024 * 1024 THEN '${WIDE_READ_WORK_MEM_MB}MB' ELSE current_setting('work_mem') END, true)`;

/** The rollup tables migration 12 narrows (those of that version of the schema). */
const NARROWED_ROLLUP_TABLES = [...Object.values(ROLLUP_TABLES), 'rollup_dim_1h', 'rollup_dim_1d', ATTR_ROLLUP_TABLE];
/** Every rollup table: retention rebuilds their indexes when they have grown. */
const ROLLUP_TABLE_NAMES = COUNTER_TABLES;

/**
 * The rollups' counter columns as migration 12 left them: 8-byte sums (the plain ones NULL for 0), 4-byte
 * maxima. Tables created after it use the same.
 */
const NARROWED_COUNTER_COLUMNS = counterColumnsDdl('BIGINT', 'INTEGER', true, FIRST_COUNTER_COLUMNS);

/**
 * Migration 12. Event counts and sizes, and the rollups' maxima of them, become 4-byte integers
 * (hooks/extract.ts MAX_COUNT is 2^31 - 1; a value an earlier version accepted above it is kept as 2^31 - 1,
 * still far over the cap); the events' 16-byte key becomes its last 8 bytes as a number, which ingest computes
 * the same way (pgEventKey); the rollups' plain sums may hold NULL for 0. Sums stay 8 bytes.
 */
function narrowIntegersDdl(): string {
  const narrow = (c: string): string => `ALTER COLUMN ${c} TYPE INTEGER USING (CASE WHEN ${c} > ${MAX_COUNT} THEN ${MAX_COUNT} ELSE ${c} END)`;
  return [
    `ALTER TABLE events ${COUNT_COLUMNS.map(narrow).join(', ')},
      ALTER COLUMN key TYPE BIGINT USING ('x' || encode(substring(key FROM 9 FOR 8), 'hex'))::bit(64)::bigint;`,
    ...NARROWED_ROLLUP_TABLES.map((t) => `ALTER TABLE ${t} ${MAX_COLUMNS.map(narrow).join(', ')}, ${[...ZERO_AS_NULL_SUMS].filter((c) => FIRST_COUNTER_COLUMNS.includes(c)).map((c) => `ALTER COLUMN ${c} DROP NOT NULL`).join(', ')};`),
  ].join('\n');
}

/**
 * Versioned migrations; append only. Version n is MIGRATIONS[n - 1]. An index over the events is added as a
 * `build` (migrate.ts): built partition by partition while other replicas go on writing, never in a transaction
 * that holds writes to the events for the whole build.
 */
export const MIGRATIONS: readonly Migration[] = [
  `${coreSchemaDdl({ int: 'BIGINT', flag: 'SMALLINT', id: 'BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY', json: 'JSONB', rollupTableOptions: '' })}
  CREATE TABLE leader_lease (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    epoch BIGINT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
  );`,
  // 2: alert state shared by replicas (the contract of alerting/state/store.ts).
  `CREATE TABLE alert_instances (id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, state TEXT NOT NULL, data JSONB NOT NULL);
  CREATE TABLE alert_silences (id TEXT PRIMARY KEY, ends_at BIGINT NOT NULL, data JSONB NOT NULL);
  CREATE TABLE alert_notifications (webhook_id TEXT PRIMARY KEY, alert_id TEXT NOT NULL, created_at BIGINT NOT NULL, done TEXT, data JSONB NOT NULL);
  CREATE INDEX alert_notifications_pending ON alert_notifications (done, created_at);
  CREATE INDEX alert_notifications_alert ON alert_notifications (alert_id);
  CREATE TABLE alert_attempts (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, alert_id TEXT NOT NULL, at BIGINT NOT NULL, data JSONB NOT NULL);
  CREATE INDEX alert_attempts_alert ON alert_attempts (alert_id, id);`,
  // 3: keys begin with the event time.
  timeOrderedKeysDdl({ nowMs: '(EXTRACT(EPOCH FROM now()) * 1000)::bigint', greatest: 'GREATEST' }),
  // 4: transcript findings, apart from telemetry.
  transcriptFindingsDdl('BIGINT'),
  // 5: outputs trimmed by hookwatch guard.
  guardTrimsDdl('BIGINT'),
  // 6: each replica's heartbeat (written with every lease renewal), for GET /api/v1/cluster and /metrics.
  `CREATE TABLE IF NOT EXISTS replica_heartbeats (name TEXT NOT NULL, replica TEXT NOT NULL, started_at TIMESTAMPTZ NOT NULL, last_seen TIMESTAMPTZ NOT NULL, PRIMARY KEY (name, replica));`,
  // 7: when each event arrived.
  arrivalTimeDdl('BIGINT'),
  // 8: rollups per dimension (dim-rollups.ts); filled from the raw events right after, under the same lock.
  dimRollupDdl(counterColumnsDdl('BIGINT', 'BIGINT', false, FIRST_COUNTER_COLUMNS), 'BIGINT', ''),
  // 9: the compact event layout (sql.ts compactEventsDdl), RANGE-partitioned by day of time_ms: retention drops
  // whole partitions. Dedup is unique on (time_ms, key) (a unique index must hold the partition key), and the
  // same index serves reads of a time range across hooks; (hook, time_ms) serves a hook's reads; the partial
  // arrival index the late-persisted alert. Existing events are copied into a partition per day they cover (a day
  // before 1970 too, which versions before it stored as sent: floored, its name quoted).
  `${PG_MIGRATION_FUNCTIONS}
  ${compactEventsDdl({
    int: 'BIGINT', json: 'JSONB', attrId: 'INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY',
    eventsTable: `CREATE TABLE events_compact (${compactEventColumnsDdl('BIGINT', 'SMALLINT')}, key BYTEA NOT NULL) PARTITION BY RANGE (time_ms);
    DO $$ DECLARE d bigint; BEGIN
      FOR d IN SELECT DISTINCT ${floorSql('time_ms', DAY_MS)} / ${DAY_MS} FROM events LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF events_compact FOR VALUES FROM (%s) TO (%s)', '${PARTITION_PREFIX}' || d, d * ${DAY_MS}, (d + 1) * ${DAY_MS});
      END LOOP;
    END $$;`,
    // Keys arrive in time order, so the unique index fills its pages to the end (fillfactor 100, not 90).
    indexes: `CREATE UNIQUE INDEX events_key ON events (time_ms, key) WITH (fillfactor = 100);
    CREATE INDEX events_hook_time ON events (hook, time_ms);
    CREATE INDEX events_persisted_arrival ON events (received_ms) WHERE outputs_persisted > 0;
    DROP FUNCTION pg_temp.hookwatch_key(text); DROP FUNCTION pg_temp.hookwatch_attr_digest(VARIADIC text[]);`,
    attrDigest: (cols) => `pg_temp.hookwatch_attr_digest(${cols.replace(/\b((?:e\.)?extra)\b/, '$1::text')})`,
    key: (e) => `pg_temp.hookwatch_key(${e})`,
    hookRef: (e) => `('x' || ${e})::bit(64)::bigint`,
    copyOrder: 'e.time_ms',
  })}`,
  // 10: the hourly rollup per (hook, attribute set) (attr-rollups.ts), filled from the events stored.
  attrRollupDdl(counterColumnsDdl('BIGINT', 'BIGINT', false, FIRST_COUNTER_COLUMNS), 'BIGINT', 'INTEGER', '', FIRST_COUNTER_COLUMNS),
  // 11: one unique btree (hook, time_ms, key) is both the dedup and a hook's reads; reads of a time range across
  // hooks use a BRIN index on time_ms (events arrive in time order within a day's partition: a few KB for the
  // table). An event is stored under its own hook or an overflow hook (hook-limit.ts); ingest looks for its key
  // under the others too, so dedup stays exact with the hook in the key.
  // Its pages split in two as each hook's entries grow in the middle of the tree, so retention rebuilds each
  // finished day's part packed (packFinishedDays), once.
  `CREATE UNIQUE INDEX events_hook_time_key ON events (hook, time_ms, key) WITH (fillfactor = 100);
  CREATE INDEX events_time ON events USING brin (time_ms) WITH (pages_per_range = 32, autosummarize = on);
  DROP INDEX events_key;
  DROP INDEX events_hook_time;`,
  // 12: 4-byte counts and sizes, an 8-byte dedup key (pgEventKey) and zero counts stored as NULL in the rollups
  // (narrowIntegersDdl): 271 bytes per event before at the store benchmark's million events. Rewrites the events
  // and rollup tables once.
  narrowIntegersDdl(),
  // 13: dimension rollups keyed (dimension, value, bucket, hook), the client versions per value apart
  // (dim-rollups.ts dimRollupRekeyDdl), folded from the tables they replace. The packed share noted for the old
  // primary keys (retention's index rebuilds) does not describe the new ones, which take their names.
  `${dimRollupRekeyDdl(NARROWED_COUNTER_COLUMNS, rollupAggregates(FIRST_COUNTER_COLUMNS), 'BIGINT', '', true, FIRST_COUNTER_COLUMNS)}
  DELETE FROM store_meta WHERE key IN (${Object.values(DIM_ROLLUP_TABLES).map((t) => `'${PACKED_SHARE}${t}_pkey'`).join(', ')});`,
  // 14: the BRIN on time_ms with ranges of BRIN_PAGES_PER_RANGE pages, built again on every partition (a BRIN
  // build reads the heap once: seconds at 10 M events). The one of 32 pages a range is put aside under another
  // name (only while it has 32, so a build run again after the rename keeps the new one) and dropped once the new
  // one is built.
  {
    build: {
      index: { name: 'events_time', def: `USING brin (time_ms) WITH (pages_per_range = ${BRIN_PAGES_PER_RANGE}, autosummarize = on)` },
      before: `DO $$ BEGIN
        IF EXISTS (SELECT 1 FROM pg_class WHERE relname = 'events_time' AND relnamespace = ${OWN_NAMESPACE} AND reloptions @> ARRAY['pages_per_range=32']) THEN
          ALTER INDEX events_time RENAME TO events_time_32;
        END IF;
      END $$;`,
      after: 'DROP INDEX IF EXISTS events_time_32;',
    },
  },
  // 15: each attribute set's earliest event time, so a filter over an old stretch finds the few sets live in it.
  // Filled in batches (migrate.ts fillColumn), each locking its sets in digest order as ingest's upsert does: in
  // one UPDATE, the sets were locked for as long as reading every event took, and ingest with them.
  { fill: { table: 'attr_sets', column: 'first_ms', add: attrFirstMsColumnDdl('BIGINT', true), source: ATTR_FIRST_MS_SOURCE, lockOrder: 'digest' } },
  // 16: the arrival index holds every event classified over the cap, measured or reported (sql.ts overArrivalDdl),
  // built on every partition before the one it replaces is dropped.
  { build: { index: OVER_ARRIVAL_INDEX, after: 'DROP INDEX IF EXISTS events_persisted_arrival;' } },
  // 17: an arrival index of every event with a receive time, those folded into an overflow hook too (sql.ts
  // arrivalIndexDdl), built on every partition beside the index of the events over the cap.
  { build: { index: ARRIVAL_INDEX } },
  // 18: an index of the events that arrived late (sql.ts lateArrivalIndexDdl), built on every partition, so the
  // hook_limit alert's late arrivals read those and a few minutes of arrivals, not every event folded in its window.
  { build: { index: LATE_ARRIVAL_INDEX } },
  // 19: each day's change generations (dayChangesDdl), which the closed buckets a replica keeps are checked against.
  dayChangesDdl(),
  // 20: every counters row counts its executions with size data whose sizes may be sums (counters.ts
  // sizes_may_sum): a column with a default, so no row is rewritten, and the previous version's replicas, which
  // do not name it, write 0 during a rolling update; ingest writes NULL for 0, as the other counts since 12.
  sizesMaySumDdl('BIGINT DEFAULT 0', true),
  // 21: the commands of transcript findings stored as sent, credentials in them redacted as the server now does
  // when it takes a finding (transcript-findings.ts redactStoredCommands).
  { rewrite: async (client) => void (await redactStoredCommands((sql, params) => client.query<{ command: string }>(sql, params))) },
];

/**
 * The tables the migrations leave in hookwatch's schema (the events' daily partitions apart, PARTITION_NAME),
 * kept in step with MIGRATIONS (a test compares them): what the store's size counts, in a schema other
 * applications' tables may share.
 */
export const OWN_TABLES: readonly string[] = [
  'events', ...ROLLUP_TABLE_NAMES, 'hooks', 'attr_sets', 'store_meta', 'schema_migrations', 'leader_lease', 'replica_heartbeats',
  'alert_instances', 'alert_silences', 'alert_notifications', 'alert_attempts', 'transcript_findings', 'guard_trims',
  DAY_CHANGES,
];
/** The name of an events partition (PARTITION_PREFIX and a day number), as a regular expression. */
const PARTITION_NAME = `^${PARTITION_PREFIX}-?[0-9]+$`;

/**
 * A string literal that reads the same whatever the server's standard_conforming_strings: with it off (a legacy
 * setting), a backslash in a plain literal escapes the next character, so a string holding one is written as an
 * escape string (E'...'), its backslashes doubled. Others stay plain literals (attr_sets' index names hash them).
 */
function pgString(s: string): string {
  return s.includes('\\') ? `E${sqlString(s.replace(/\\/g, '\\\\'))}` : sqlString(s);
}

/** PostgreSQL type of each event column, for the unnest() batch insert. */
const EVENT_TYPES: Record<(typeof EVENT_COLUMNS)[number], string> = {
  key: 'int8', kind: 'int2', hook: 'int8', time_ms: 'int8', num_hooks: 'int4', num_success: 'int4', num_blocking: 'int4',
  num_non_blocking_error: 'int4', num_cancelled: 'int4', duration_ms: 'int4', stdout_chars: 'int4', additional_context_chars: 'int4',
  system_message_chars: 'int4', initial_user_message_chars: 'int4', outputs_persisted: 'int4', sizes_known: 'int2', status: 'int2',
  attrs: 'int4', received_ms: 'int8',
};

/**
 * The stored dedup key on PostgreSQL: the last 8 bytes of sql.ts compactKey as a signed 64-bit integer (the first
 * 6 bytes of a time-prefixed key repeat time_ms, which the unique index holds already). Unique per (hook,
 * time_ms): two distinct events of one hook in the same millisecond collide with odds of 2^-64. Migration 12
 * turns the stored 16-byte keys into the same number, so a retry after the upgrade finds its event. As text,
 * the form node-postgres sends and returns an int8 in.
 */
export function pgEventKey(dedupKey: string): string {
  return compactKey(dedupKey).readBigInt64BE(8).toString();
}

/**
 * SQLSTATE classes where a retry can help: connection exceptions (08), serialization failure and deadlock (40),
 * insufficient resources (53), operator intervention such as a shutdown or failover (57), system errors such as
 * an I/O error or a file the server cannot open (58), read-only replica (25006), a lock not granted within
 * lock_timeout (55P03: partition DDL giving way to a backup or a long read, an ingest giving way to a paused
 * replica's transaction).
 */
const RETRYABLE_SQLSTATE = /^(08|40|53|57|58)|^(25006|55P03)$/;
/**
 * An error the server ends the connection with (severity FATAL or PANIC), at startup or later, is unavailability
 * whatever its SQLSTATE: a server whose data disk is full fails every new connection with `could not write init
 * file` (XX000) once its relation cache's init file must be written again, while the statements of connections
 * already open get disk_full (53100). Not the ones only a change of configuration cures, which a retry meets
 * again: a refused password or role (28), a missing database (3D), no CONNECT privilege (42), while the store
 * opens; once it is open, those are unavailability too (classify).
 */
const ENDS_CONNECTION = new Set(['FATAL', 'PANIC']);
const CONFIGURATION_SQLSTATE = /^(28|3D|42)/;
const RETRYABLE_NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
/**
 * Conflicts between concurrent transactions that a fresh attempt of the same transaction resolves. A unique
 * violation (23505) is among them: every ingest write is an upsert or ON CONFLICT DO NOTHING, so it can only be
 * an upsert meeting an index while REINDEX CONCURRENTLY swaps it (retention's rebuilds).
 */
const CONFLICT_SQLSTATE = new Set(['40001', '40P01', '23505']);
const INGEST_ATTEMPTS = 4;

/** Removes the URL and its password (raw and percent-encoded, as urlPasswords reads it) from a message. */
export function scrubSecret(message: string, url: string): string {
  let out = url.length >= MIN_SECRET_CHARS ? message.split(url).join('<db url>') : message;
  for (const s of urlPasswords(url)) if (s.length >= MIN_SECRET_CHARS) out = out.split(s).join('<redacted>');
  return out;
}

/**
 * One multi-row upsert of a commit's rollup rows into `table`: one array per column through unnest(), in the
 * rows' (key) order, so concurrent commits take row locks in the same order. `key`: the key columns and types.
 */
async function upsertRollups(client: pg.PoolClient, table: string, key: readonly [string, string][], keys: readonly unknown[][], rows: readonly CounterRow[]): Promise<void> {
  if (rows.length === 0) return;
  const cols = [...key.map(([c]) => c), ...COUNTER_COLUMNS];
  const types = [...key.map(([, t]) => t), ...COUNTER_COLUMNS.map(() => 'int8')];
  const params: unknown[][] = key.map((_, i) => keys.map((k) => k[i]));
  for (const c of COUNTER_COLUMNS) params.push(ZERO_AS_NULL_SUMS.has(c) ? rows.map((r) => (r[c] === 0 ? null : r[c])) : rows.map((r) => r[c]));
  await client.query(
    `INSERT INTO ${table} AS t (${cols.join(', ')})
     SELECT ${cols.join(', ')} FROM unnest(${types.map((ty, i) => `$${i + 1}::${ty}[]`).join(', ')}) WITH ORDINALITY AS u(${cols.join(', ')}, ord) ORDER BY ord
     ON CONFLICT (${key.map(([c]) => c).join(', ')}) DO UPDATE SET ${upsertSetClause()}`,
    params,
  );
}

/** A family of dimension rollups' rows of a commit (dim-rollups.ts groupForDimRollups): one upsert per table. */
async function upsertDimFamily(client: pg.PoolClient, family: DimFamily, rows: Record<DimGranularity, DimRollupGroup[]>): Promise<void> {
  const key = family.key.map((c): [string, string] => [c, c === 'bucket' ? 'int8' : 'text']);
  for (const g of DIM_GRANULARITIES) {
    const list = rows[g];
    await upsertRollups(client, family.tables[g], key, list.map((x) => x.key), list.map((x) => x.row));
  }
}

/** An index and its table, their sizes, and the share of the table the index had after its last rebuild (if noted). */
interface IndexSizes {
  idx: string;
  table: string;
  indexBytes: number;
  tableBytes: number;
  share: number | undefined;
}

/** Whether an index (and its table) is big enough to matter and its share of the table grew past REPACK_GROWTH times `packedShare`. */
function grownPastPacked(p: { indexBytes: number; tableBytes: number }, packedShare: number): boolean {
  return p.indexBytes >= REPACK_MIN_BYTES && p.tableBytes >= REPACK_MIN_BYTES && p.indexBytes / p.tableBytes > packedShare * REPACK_GROWTH;
}

/**
 * Rows of closed buckets kept between calls (PostgresStore.closedSegments, closedFleet), with the generations of
 * the days they cover as they were in the snapshot they were read in (dayGenerations).
 */
interface Kept<T> {
  generations: string;
  rows: T;
}

/** Closed segments of the hooks' counters kept at most, and their rows together. */
const KEPT_SEGMENTS = 64;
const KEPT_SEGMENT_ROWS = 100_000;
/**
 * Fleet series (or their rests' sums) kept at most, and their rows together: a chart of 1,000 listed hooks over
 * 61 buckets holds 61,000, and 16 charts of a 250,000-bucket series alone would hold hundreds of megabytes.
 */
const KEPT_FLEETS = 16;
const KEPT_FLEET_ROWS = 500_000;

/** A kept row of the hooks' counters: its group key (as `aggregate` keys it), its group values and its counters. */
type KeptCounterRow = [key: string, keys: unknown[], row: CounterRow];

/** An answer's snapshot: its connection, in its transaction, asked one statement at a time (`query`). */
interface Snapshot {
  client: pg.PoolClient;
  /** Settles once the statement asked last is answered: the next one is sent after it. */
  last: Promise<unknown>;
  /** Why no further statement is sent: one failed (the transaction is aborted), or the answer was read. */
  over?: unknown;
}

export class PostgresStore implements Store {
  /** Events before this time may already be stored under their bare-hash key (see sql.ts timeOrderedKeysDdl). */
  private legacyKeysBefore = -Infinity;
  readonly kind = 'postgres';
  readonly maxHooks: number;
  private readonly known: KnownHooks;
  /** Ingests given up on a lock not granted within its bound (LOCK_NOT_AVAILABLE): lockTimeouts. */
  private ingestLockTimeouts = 0;
  /**
   * The lines saying so, one per bound waited (the ingest transaction's, the partition DDL's), each at most once per
   * LOCK_TIMEOUT_LOG_MS, with how many since the last and where the last waited (PostgreSQL's context: the
   * relation and row).
   */
  private readonly lockTimeoutLines = new Map<number, { line: ThrottledLine; lock: string | undefined }>();
  /** Set once open() has applied the migrations: a connection refused from then on is an outage (classify). */
  private opened = false;
  /** Why the server last refused a connection, as refusedLine says it (scrubbed of the password). */
  private refusedCause = '';
  /**
   * A password, role, database or privilege refused once the store is open (the password rotated on the server,
   * the role or database dropped): every request meets it, so it is said at most once per REFUSED_LOG_MS.
   */
  private readonly refusedLine = new ThrottledLine(REFUSED_LOG_MS, () => performance.now(), (refusals) => {
    this.logger?.warn(`postgres refuses this replica's connections: ${this.refusedCause}; the store is unavailable (503, not ready) until the server accepts them again`, { refusals });
  });
  private readonly pool: CuttablePool;
  /**
   * Queries (the API, the dashboard, alert evaluation) run on their own pool: a burst of dashboard queries holds
   * these connections, never the ones an ingest transaction needs, so an OTLP request never waits behind one.
   */
  private readonly readPool: CuttablePool;
  /**
   * The readiness check's connection, with READY_TIMEOUT_MS for everything: never queued behind ingest or queries,
   * nor behind a connection the network dropped, which the other pools only give up on after the statement bound.
   */
  private readonly readyPool: CuttablePool;
  /** Every pool of the store: what opens, drops, ends or cuts its connections does so on each. */
  private readonly pools: readonly CuttablePool[];
  private readonly url: string;
  private readonly dims: readonly string[];
  /** Dimensions with rollups of their own (dim-rollups.ts). */
  private readonly rolled: readonly string[];
  private readonly logger: Logger | undefined;
  private readonly pruneBatch: number;
  private readonly retention: MinuteRetention | undefined;
  private readonly now: () => number;
  /**
   * How far retention has deleted (minute-sources.ts PrunedBounds): read when the store opens, moved by prune, and
   * read again before a read when older than boundsRefreshMs (currentBounds), since any replica may prune.
   */
  private pruned: PrunedBounds = NOTHING_PRUNED;
  private readonly boundsRefreshMs: number;
  /** When the bounds were last read (performance.now()), and the read under way. */
  private boundsReadAt = -Infinity;
  private boundsRead: Promise<PrunedBounds> | undefined;
  /** Attribute sets known to be committed (dictionary encoding, attr-sets.ts). */
  private readonly attrs = new AttrSetCache();
  /** The snapshot (`snapshot`) of the answer being read, where its statements run. */
  private readonly answers = new AsyncLocalStorage<Snapshot>();
  /** Days whose event partition is known to exist. */
  private readonly partitions = new Set<number>();
  /** Whether retention's index rebuilds are under way (packFinishedDays, repackRollupIndexes). */
  private rebuilding = false;
  private closed: Promise<void> | undefined;
  /** The sockets of both pools' connections (cutConnections). */
  private readonly sockets = new ConnectionSockets();
  /** Set by cutConnections: the connections it closes are not reported as lost. */
  private cut = false;
  /** How long a statement's answer is waited for (statement timeout + ANSWER_GRACE_MS). */
  private readonly answerTimeoutMs: number;
  /** How an ingest transaction begins, with its bounds on waiting and idleness (ingestBegin). */
  private readonly ingestBegin: string;
  /** The leader lease that fences retention's writes (fenceRetention), on replicas. */
  private fence: LeaseFence | undefined;
  /** The readiness check under way (ping). */
  private pinging: Promise<void> | undefined;
  /** When the database was last found unreachable (performance.now()), until it answers again (databaseReachable). */
  private unreachableAt: number | undefined;
  /**
   * Every hook's counter rows of closed rollup segments (aggregate), by table and bounds, most recently used last:
   * the overview's 30 days re-read only what is still being written.
   */
  private readonly closedSegments = new KeptRows<Kept<KeptCounterRow[]>>(KEPT_SEGMENTS, KEPT_SEGMENT_ROWS, KEPT_SEGMENT_ROWS / 4);
  /** Fleet series (or their rests' sums: fleetRest) over closed buckets (wholeFleetBuckets). */
  private readonly closedFleet = new KeptRows<Kept<readonly unknown[]>>(KEPT_FLEETS, KEPT_FLEET_ROWS, KEPT_FLEET_ROWS / 2);
  /**
   * The server (its start time) and the table of generations what is kept was checked against (dayGenerations):
   * another server (a restart, a failover to a standby, a restore) may have lost commits, and another table
   * counts from 1 again, so generations can repeat.
   */
  private keptOn: string | undefined;

  private constructor(opts: PostgresStoreOptions) {
    this.url = opts.url;
    this.dims = opts.dimensions ?? [];
    this.rolled = rolledDimensions(this.dims);
    this.logger = opts.logger;
    this.pruneBatch = opts.pruneBatch ?? 5000;
    this.boundsRefreshMs = opts.boundsRefreshMs ?? BOUNDS_REFRESH_MS;
    this.retention = opts.retention;
    this.now = opts.now ?? Date.now;
    this.maxHooks = opts.maxHooks ?? DEFAULT_MAX_HOOKS;
    this.known = new KnownHooks(this.maxHooks);
    const statementTimeoutMs = opts.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS;
    this.answerTimeoutMs = statementTimeoutMs + ANSWER_GRACE_MS;
    this.ingestBegin = ingestBegin(statementTimeoutMs);
    // `boundMs`: one bound for connecting, each statement and its answer, instead of the statement timeout's.
    const pool = (max: number, applicationName: string, settings?: string, boundMs?: number): CuttablePool => {
      const p = new CuttablePool({
        connectionString: opts.url,
        max,
        connectionTimeoutMillis: boundMs ?? 10_000,
        idleTimeoutMillis: 30_000,
        application_name: applicationName,
        stream: this.sockets.stream,
        // An idle connection the network dropped without a word fails on its own and leaves the pool.
        ...keepAlive(opts.keepAliveMs),
        statement_timeout: boundMs ?? statementTimeoutMs,
        idle_in_transaction_session_timeout: boundMs ?? statementTimeoutMs,
        // Past it the call fails as on a lost connection (503, Retry-After) and the connection is dropped.
        query_timeout: boundMs ?? this.answerTimeoutMs,
        // Session settings as statements, not the startup `options` (which an `?options=` in the URL replaces),
        // run before the pool hands the new connection out: nothing asked of it runs before them. A setting the
        // server refuses leaves the connection on the server's defaults (plans, never answers, differ), and is
        // logged; a broken connection fails the query asked of it next, which reports that.
        ...(settings ? { onConnect: (client: pg.ClientBase) => client.query(settings).then(() => undefined, (err: unknown) => this.logger?.warn('postgres session settings not applied', { err: this.describe(err) })) } : {}),
      });
      // An idle connection dropped by the server (restart, failover) must not crash the process.
      p.on('error', (err, client) => {
        if (!this.cut && !p.wasDropped(client)) this.logger?.warn('postgres connection lost', { err: this.describe(err) });
      });
      return p;
    };
    this.pool = pool(opts.poolSize ?? 10, 'hookwatch');
    // Each answer is read on one read connection, in one snapshot (`snapshot`): the answers a page asks at once are
    // the parallelism. Parallel workers of each statement on top competed with the sibling statements for the
    // same cores (the 10 M filtered overview: p50 37-40 ms with them, 23-24 without, on 2 cores).
    // What reads touch besides the raw events (rollups, attribute sets) is small and stays in memory, so a
    // random page costs what a sequential one does (1.1, as for SSDs): at the default of 4 the planner hashed
    // every attribute set of the month (one a session) to join a few thousand rollup rows to theirs.
    this.readPool = pool(Math.max(1, opts.readers ?? 2), 'hookwatch-read', `SET max_parallel_workers_per_gather = 0; SET random_page_cost = ${READ_RANDOM_PAGE_COST}`);
    this.readyPool = pool(1, 'hookwatch-ready', undefined, READY_TIMEOUT_MS);
    this.pools = [this.pool, this.readPool, this.readyPool];
    for (const p of this.pools) p.on('connect', () => this.databaseReachable());
  }

  /** Connects, applies pending migrations (once across replicas) and returns the store. */
  static async open(opts: PostgresStoreOptions): Promise<PostgresStore> {
    const store = new PostgresStore(opts);
    try {
      await store.migrate(opts.onMigrationLock, opts.onMigrationLockWait, opts.migrationLockWaitMs, opts.migrationBlockedMs);
    } catch (err) {
      await store.close();
      throw store.classify(err, 'cannot open the PostgreSQL store');
    }
    store.opened = true;
    return store;
  }

  /** Ingests given up on a lock another transaction held past the ingest's bound (3 s), since the start. */
  lockTimeouts(): number {
    return this.ingestLockTimeouts;
  }

  /** The schema version after migrations (for tests and logs). */
  async schemaVersion(): Promise<number> {
    const r = await this.pool.query<{ v: string | null }>('SELECT MAX(version)::text AS v FROM schema_migrations');
    return Number(r.rows[0]?.v ?? 0);
  }

  /** The pool, for components sharing this database (the leader lease). */
  get connectionPool(): pg.Pool {
    return this.pool;
  }

  /** Calls cb each time a pool opens a new connection: the database answers (again, after an outage). */
  onConnected(cb: () => void): void {
    for (const p of this.pools) p.on('connect', () => cb());
  }

  /**
   * `locked`: called once the migration lock is held; `waiting`: as another replica holds it; `waitMs`: how long
   * that is waited for at most; `blockedMs`: how long the migration waits for other sessions (BlockedWatch).
   */
  private async migrate(locked?: () => void, waiting?: () => void, waitMs?: number, blockedMs?: number): Promise<void> {
    // Held until the end: a second replica starting now waits, then finds every migration applied. Each version is
    // recorded as it is applied, so a replica that dies halfway leaves the next one the versions after it.
    const migrated = await withMigrationLock(this.pool, MIGRATION_LOCK_KEY, this.logger, async (client) => {
      locked?.();
      // How long the migration takes, once this replica holds the lock.
      const started = performance.now();
      // Looked at from a read connection: the migration may hold the only connection of the ingest pool.
      const watch = await BlockedWatch.start(this.readPool, client, this.logger, blockedMs);
      try {
        return await this.migrateLocked(client, started);
      } catch (err) {
        throw watch.failure(err);
      } finally {
        await watch.stop();
      }
    }, { waiting, waitMs });
    // As SQLite's `sqlite schema migrated`: the versions, and how long it took.
    if (migrated.from < MIGRATIONS.length) this.logger?.info('postgres schema migrated', { from: migrated.from, to: MIGRATIONS.length, durationMs: migrated.durationMs });
    const legacy = await this.pool.query<{ value: string }>('SELECT value FROM store_meta WHERE key = $1', [LEGACY_KEYS_BEFORE]);
    this.legacyKeysBefore = legacy.rows[0] ? Number(legacy.rows[0].value) : -Infinity;
    await this.currentBounds();
    const today = Math.floor(Date.now() / DAY_MS);
    await this.ensurePartitions(Array.from({ length: DAYS_AHEAD + 1 }, (_, i) => today + i));
  }

  /**
   * The migrations, on the connection holding the migration lock. A version of SQL is one transaction, whose
   * locks are each waited for MIGRATION_STEP_LOCK_TIMEOUT_MS at most, the whole transaction tried again after that
   * (migrate.ts shortSteps): while it waits for an ACCESS EXCLUSIVE lock, every other replica's writes to the table
   * queue behind it.
   */
  private async migrateLocked(client: pg.PoolClient, started: number): Promise<{ from: number; durationMs: number }> {
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())');
    const r = await client.query<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations');
    const from = r.rows[0]?.v ?? 0;
    if (from > MIGRATIONS.length) {
      // A replica of an older version (a restart mid-rollout, a rollback) writes nothing to a schema it does not know.
      this.logger?.error('postgres schema newer than this hookwatch; not starting', { schemaVersion: from, knownVersion: MIGRATIONS.length });
      throw new Error(`the database schema is version ${from}, newer than this hookwatch (${MIGRATIONS.length}); upgrade hookwatch`);
    }
    if (from < MIGRATIONS.length) this.logger?.info('postgres schema migrating', { from, to: MIGRATIONS.length });
    const record = 'INSERT INTO schema_migrations (version) VALUES ($1)';
    for (let v = from; v < MIGRATIONS.length; v++) {
      const m = MIGRATIONS[v] as Migration;
      if (typeof m === 'string' || 'rewrite' in m) {
        await shortSteps(client, this.logger, () => inMigrationTransaction(client, async () => {
          if (typeof m === 'string') await client.query(m);
          else await m.rewrite(client);
          await client.query(record, [v + 1]);
        }));
      } else {
        if ('build' in m) await buildEventsIndex(client, m.build, this.logger);
        else await fillColumn(client, m.fill, this.logger);
        await client.query(record, [v + 1]);
      }
    }
    await inMigrationTransaction(client, async () => {
      await this.syncDimensions(client);
      await this.syncAttrIndexes(client);
    });
    return { from, durationMs: Math.round(performance.now() - started) };
  }

  /** The days that have an event partition, from the catalog (on `client` when given, in its transaction). */
  private async partitionDays(client: pg.ClientBase | pg.Pool = this.pool): Promise<number[]> {
    const r = await client.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass`,
    );
    return r.rows.map((x) => x.name).filter((n) => n.startsWith(PARTITION_PREFIX)).map((n) => Number(n.slice(PARTITION_PREFIX.length))).filter(Number.isSafeInteger);
  }

  /**
   * Creates the daily partitions of these days that do not exist yet, so an insert never meets a day without one
   * (a late event, a backfill). Once across replicas: under an advisory lock, IF NOT EXISTS.
   *
   * Each is made as a table of its own and attached: ATTACH PARTITION takes SHARE UPDATE EXCLUSIVE on events,
   * which neither inserts nor reads (a pg_dump's ACCESS SHARE) conflict with, where CREATE TABLE ... PARTITION OF
   * takes ACCESS EXCLUSIVE, waits for every read of events to end and holds every insert behind it meanwhile.
   * The attach gives each of events' indexes its part, as PARTITION OF does. What it still conflicts with (an
   * ANALYZE of events, another replica's partition DDL) it waits for at most PARTITION_DDL_LOCK_TIMEOUT_MS, then
   * fails with 55P03 (retryable: the batch is answered 503 and sent again).
   */
  private async ensurePartitions(days: Iterable<number>): Promise<void> {
    const missing = [...new Set(days)].filter((d) => !this.partitions.has(d)).sort((a, b) => a - b);
    if (missing.length === 0) return;
    await inTransaction(this.pool, async (client) => {
      await client.query(`SET LOCAL lock_timeout = ${PARTITION_DDL_LOCK_TIMEOUT_MS}`);
      await client.query('SELECT pg_advisory_xact_lock($1)', [PARTITION_LOCK_KEY]);
      const attached = new Set(await this.partitionDays(client));
      for (const d of missing.filter((x) => !attached.has(x))) {
        const name = partitionTable(d);
        await client.query(`CREATE TABLE IF NOT EXISTS ${name} (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)`);
        await client.query(`ALTER TABLE events ATTACH PARTITION ${name} FOR VALUES FROM (${d * DAY_MS}) TO (${(d + 1) * DAY_MS})`);
      }
    }, this.onLost);
    for (const d of missing) this.partitions.add(d);
  }

  /**
   * Brings the dimension rollups in line with the configured dimensions (dim-rollups.ts), inside the migration
   * transaction: replicas starting together wait on its lock, and the first one rebuilds. After every migration,
   * so it reads the events table as the current schema stores it. Replicas must share `dimensions`: one still
   * running an older list does not write rollups for a dimension added since.
   */
  private async syncDimensions(client: pg.PoolClient): Promise<void> {
    const r = await client.query<{ value: string }>('SELECT value FROM store_meta WHERE key = $1', [ROLLED_DIMENSIONS_META]);
    const row = r.rows[0];
    const { remove, rebuild } = dimChanges(row ? (JSON.parse(row.value) as string[]) : null, this.rolled);
    if (row && remove.length === 0 && rebuild.length === 0) return;
    for (const dim of [...remove, ...rebuild]) for (const sql of dimRemoveSql((n) => `$${n}`)) await client.query(sql, [dim]);
    for (const dim of rebuild) {
      for (const sql of dimRebuildFromEventsSql((n) => `$${n}`, (d) => this.attrExpr(d), dim)) await client.query(sql, [dim]);
    }
    await client.query('INSERT INTO store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [ROLLED_DIMENSIONS_META, JSON.stringify(this.rolled)]);
    if (rebuild.length > 0 || remove.length > 0) this.logger?.info('dimension rollups rebuilt from the stored events', { rebuilt: rebuild, removed: remove });
  }

  /**
   * Creates attr_sets' indexes on dimension values (attrSetIndexes), drops those no longer wanted; inside the
   * migration transaction, like syncDimensions.
   */
  private async syncAttrIndexes(client: pg.PoolClient): Promise<void> {
    const r = await client.query<{ name: string }>(`SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'attr_sets' AND left(indexname, ${ATTR_SET_INDEX_PREFIX.length}) = $1`, [ATTR_SET_INDEX_PREFIX]);
    for (const sql of attrSetIndexChanges(r.rows.map((x) => x.name), this.dims, (d) => this.attrExpr(d))) await client.query(sql);
  }

  /** A connection lost during a transaction: the request in flight gets a 503, the pool reconnects. */
  private readonly onLost = (err: Error): void => {
    this.logger?.warn('postgres connection lost during a transaction', { err: this.describe(err) });
  };

  async ingest(events: HookEvent[]): Promise<IngestResult> {
    if (events.length === 0) return { inserted: [], duplicates: 0 };
    // One row per dedup key, in key order: a batch repeating a key counts it once, and every transaction takes
    // its row locks in the same order, so overlapping batches from several replicas queue instead of deadlocking.
    // Refused before any partition is made: a batch stamped over many past days makes none for them.
    const bounds = await this.ingestBounds(events);
    const expiredBeforeMs = expiredBefore(this.now(), this.retention?.eventsMs, bounds.eventsBeforeMs);
    const { kept, expired } = splitExpired(events, expiredBeforeMs);
    const old = expired > 0 ? { expired, expiredBeforeMs } : {};
    if (kept.length === 0) return { inserted: [], duplicates: 0, ...old };
    const unique = new Map<string, HookEvent>();
    for (const e of kept) if (!unique.has(e.dedupKey)) unique.set(e.dedupKey, e);
    const sorted = [...unique.values()].sort((a, b) => (a.dedupKey < b.dedupKey ? -1 : a.dedupKey > b.dedupKey ? 1 : 0));
    // Once a hook taken for known turned out deleted (HookRecreated), the batch is counted as one with new hooks.
    let recount = false;
    for (let attempt = 1; ; attempt++) {
      // The bound of the lock waits under way: a partition's DDL, then the ingest transaction's.
      let waitBound = INGEST_LOCK_TIMEOUT_MS;
      try {
        const admitting = recount || (await this.admitsNewHooks(sorted));
        waitBound = PARTITION_DDL_LOCK_TIMEOUT_MS;
        await this.ensurePartitions(sorted.map((e) => Math.floor(e.timeMs / DAY_MS)));
        waitBound = INGEST_LOCK_TIMEOUT_MS;
        let inserted: HookEvent[];
        let fold: { folded: number; overflowHooks: string[] };
        try {
          ({ inserted, fold } = await this.ingestOnce(sorted, admitting));
        } catch (err) {
          this.attrs.discard();
          throw err;
        }
        this.attrs.commit();
        return { inserted, duplicates: kept.length - inserted.length, ...(fold.folded > 0 ? { folded: fold.folded, overflowHooks: fold.overflowHooks } : {}), ...old };
      } catch (err) {
        if (err instanceof HookRecreated) {
          // Retention deleted hooks this replica still took for known: the others it knows may be gone too.
          this.known.clear();
          recount = true;
          continue;
        }
        const code = (err as { code?: string }).code ?? '';
        if (CONFLICT_SQLSTATE.has(code)) {
          if (attempt < INGEST_ATTEMPTS) {
            await new Promise((r) => setTimeout(r, 10 * attempt));
            continue;
          }
          // Still conflicting after every attempt: the client should try again later, not drop the batch.
          throw new StoreUnavailableError(`store cannot write: ${this.describe(err)}`);
        }
        if (code === NO_PARTITION && attempt < INGEST_ATTEMPTS) {
          // Retention dropped a day this replica thought it had: look again and create it.
          this.partitions.clear();
          for (const d of await this.partitionDays()) this.partitions.add(d);
          continue;
        }
        if (code === LOCK_NOT_AVAILABLE) {
          // Another transaction holds a lock this one needs (a replica paused inside its commit, a long DDL):
          // counted for /metrics, and said with where it waited (a relation and row, never a value).
          this.ingestLockTimeouts++;
          this.noteLockTimeout(waitBound, (err as { where?: string }).where?.split('\n')[0]);
        }
        throw this.classify(err, 'store cannot write');
      }
    }
  }

  /** Logs an ingest given up on a lock after `waitedMs` (lockTimeoutLines). */
  private noteLockTimeout(waitedMs: number, lock: string | undefined): void {
    let said = this.lockTimeoutLines.get(waitedMs);
    if (!said) {
      const entry: { line: ThrottledLine; lock: string | undefined } = {
        lock,
        line: new ThrottledLine(LOCK_TIMEOUT_LOG_MS, () => performance.now(), (timeouts) => {
          this.logger?.warn('postgres ingest gave up waiting for a lock another transaction holds; answered 503 with Retry-After', { waitedMs, timeouts, lock: entry.lock });
        }),
      };
      said = entry;
      this.lockTimeoutLines.set(waitedMs, said);
    }
    said.lock = lock;
    said.line.note();
  }

  /**
   * Whether the batch names hooks the hooks table does not hold (a cheap look outside the transaction: a steady
   * feed of known hooks costs nothing). Only such a batch can pass store.maxHooks. The answer may be out of date
   * by the time the batch writes (retention, of this replica or another, deleting a hook it took for known): the
   * batch's own upsert of its hooks has the last word (ingestOnce).
   */
  private async admitsNewHooks(sorted: HookEvent[]): Promise<boolean> {
    const unknown = this.known.unknown(sorted);
    if (unknown.length === 0) return false;
    const rows = await this.write('SELECT hook_id FROM hooks WHERE hook_id = ANY($1::text[])', [unknown]);
    const existing = new Set(rows.map((r) => String(r['hook_id'])));
    this.known.add(existing);
    return !unknown.every((id) => existing.has(id));
  }

  /**
   * Moves the events of hooks past store.maxHooks onto overflow hooks, inside the ingest transaction and under the
   * exclusive fold lock: batches (of any replica) admitting new hooks count the table one after another, so
   * together they never pass the limit.
   */
  private async foldBeyondLimit(client: pg.PoolClient, sorted: HookEvent[]): Promise<{ events: HookEvent[]; fold: { folded: number; overflowHooks: string[] } }> {
    // Which hooks are stored and how many, in one statement (one snapshot): read apart, a hook retention deleted
    // in between would be taken for stored yet not counted, and stored again past the limit.
    const stored = await client.query<{ existing: string[]; n: string }>(
      'SELECT ARRAY(SELECT hook_id FROM hooks WHERE hook_id = ANY($1::text[])) AS existing, (SELECT COUNT(*) FROM hooks) AS n',
      [[...new Set(sorted.map((e) => e.hookId)), ...overflowIds(sorted)]],
    );
    const existing = new Set((stored.rows[0]?.existing ?? []).map(String));
    const count = Number(stored.rows[0]?.n ?? 0);
    const r = foldNewHooks(sorted, (id) => existing.has(id), count, this.maxHooks);
    // Folding changes hook ids only, not the dedup keys the rows are sorted by.
    return { events: r.events, fold: r };
  }

  /**
   * `original`: the batch's events in key order; `admitting`: it names hooks the table did not hold, so its
   * events are folded past store.maxHooks here, under the exclusive fold lock. A batch not admitting whose upsert
   * creates a hook row after all (retention deleted the hook after admitsNewHooks looked, maybe while an admitting
   * batch took its room) is rolled back with HookRecreated, to be counted under the exclusive lock.
   */
  private async ingestOnce(original: HookEvent[], admitting: boolean): Promise<{ inserted: HookEvent[]; fold: { folded: number; overflowHooks: string[] } }> {
    return inTransaction(this.pool, async (client) => {
      // Taken first, before any row lock. A batch that admits hooks (and may fold) waits for the ingests in
      // flight and they for it: the hooks table is counted by one batch at a time, and the copy of an event
      // stored under another of its hooks is committed before the other looks for it.
      await client.query(admitting ? 'SELECT pg_advisory_xact_lock($1)' : 'SELECT pg_advisory_xact_lock_shared($1)', [FOLD_LOCK_KEY]);
      const { events: sorted, fold } = admitting ? await this.foldBeyondLimit(client, original) : { events: original, fold: { folded: 0, overflowHooks: [] } };
      const attrs = await this.attrSets(client, sorted);
      const columns = EVENT_COLUMNS.map(() => [] as unknown[]);
      const keys = sorted.map((e) => pgEventKey(e.dedupKey));
      sorted.forEach((e, i) => eventValues(e, attrs[i] as number, keys[i]).forEach((v, c) => (columns[c] as unknown[]).push(typeof v === 'bigint' ? v.toString() : v)));
      // The bare-hash key of each event that may have been stored before keys began with the event time (at the
      // same event time: the unique index is on time and key).
      const legacy = sorted.map((e) => (e.legacyKey !== undefined && e.timeMs < this.legacyKeysBefore ? pgEventKey(e.legacyKey) : null));
      // Dedup is per event time. An event whose time is not the one its key was made from (stamped ahead and
      // moved to the receive time, or given the receive time for lack of any) can be sent again with another
      // time: it is also looked for under its key in the day before.
      const moved = sorted.map((e) => (keyTimeMs(e.dedupKey) === e.timeMs ? null : e.timeMs - DAY_MS));
      // The unique index holds the hook: the event is also looked for under the other hooks it can be stored
      // under (hook-limit.ts storedHookIds), where an earlier delivery folded otherwise may have put it.
      const others = sorted.map((e, i) => storedHookIds(original[i] as HookEvent).filter((id) => id !== e.hookId).map((id) => hookRef(id)?.toString() ?? null));
      const unnest = EVENT_COLUMNS.map((c, i) => `$${i + 1}::${EVENT_TYPES[c]}[]`).join(', ');
      const n = EVENT_COLUMNS.length;
      const anyHook = 'old.hook IN (u.hook, u.other1, u.other2)';
      // The days the batch's events can already be stored in, as constants the planner prunes the partitions by:
      // the probes' bounds come from the unnested rows, known only when they run, so each probe was planned (and
      // its tables locked) over every day partition, and a one-event request slowed with each day kept.
      let fromMs = Infinity;
      let toMs = -Infinity;
      sorted.forEach((e, i) => {
        fromMs = Math.min(fromMs, moved[i] ?? e.timeMs);
        toMs = Math.max(toMs, e.timeMs);
      });
      const days = `old.time_ms >= $${n + 6}::int8 AND old.time_ms <= $${n + 7}::int8`;
      // Only the other hooks in the hooks table can hold an event (a hook row lives as long as its events), read
      // once by the statement after the fold lock: without overflow hooks, no event is looked for twice. Each
      // probe is `... OR NOT EXISTS (...)`, a probe per row through the unique index; a bare NOT EXISTS would be
      // planned as an anti join, which reads every partition whole for each batch.
      const r = await client.query<{ key: string }>(
        `WITH alt AS MATERIALIZED (SELECT COALESCE(array_agg(ref), '{}') AS refs FROM hooks WHERE ref = ANY($${n + 5}::int8[]))
         INSERT INTO events (${EVENT_COLUMNS.join(', ')})
         SELECT ${EVENT_COLUMNS.map((c) => `u.${c}`).join(', ')}
         FROM alt, unnest(${unnest}, $${n + 1}::int8[], $${n + 2}::int8[], $${n + 3}::int8[], $${n + 4}::int8[]) WITH ORDINALITY AS u(${EVENT_COLUMNS.join(', ')}, legacy_key, moved_from, other1, other2, ord)
         WHERE (NOT (u.other1 = ANY(alt.refs) OR u.other2 = ANY(alt.refs)) OR NOT EXISTS (SELECT 1 FROM events old WHERE ${days} AND old.hook IN (u.other1, u.other2) AND old.time_ms = u.time_ms AND old.key = u.key))
           AND (u.legacy_key IS NULL OR NOT EXISTS (SELECT 1 FROM events old WHERE ${days} AND ${anyHook} AND old.time_ms = u.time_ms AND old.key = u.legacy_key))
           AND (u.moved_from IS NULL OR NOT EXISTS (SELECT 1 FROM events old WHERE ${days} AND ${anyHook} AND old.time_ms >= u.moved_from AND old.time_ms <= u.time_ms AND old.key = u.key))
         ORDER BY ord
         ON CONFLICT (hook, time_ms, key) DO NOTHING RETURNING key`,
        [...columns, legacy, moved, others.map((o) => o[0] ?? null), others.map((o) => o[1] ?? null), [...new Set(others.flat().filter((x) => x !== null))], fromMs, toMs],
      );
      const fresh = new Set(r.rows.map((row) => String(row.key)));
      const inserted = sorted.filter((_, i) => fresh.has(keys[i] as string));
      if (inserted.length > 0) {
        const attrOf = new Map(sorted.map((e, i) => [e, attrs[i] as number]));
        await this.applyRollups(client, inserted, inserted.map((e) => attrOf.get(e) as number), admitting);
      }
      return { inserted, fold };
    }, this.onLost, this.ingestBegin);
  }

  /**
   * Each event's attribute set id: sets not known to cover the event's time are created, or their last_ms moved,
   * in one statement (in digest order, so concurrent replicas take the row locks in the same order).
   */
  private async attrSets(client: pg.PoolClient, events: HookEvent[]): Promise<number[]> {
    const tuples = events.map((e) => AttrSetCache.tuple(e));
    const work = new Map<string, AttrWork>();
    const now = Date.now();
    tuples.forEach(({ tuple, values }, i) => {
      const timeMs = (events[i] as HookEvent).timeMs;
      if (this.attrs.get(tuple, timeMs, now)) return;
      const w = work.get(tuple);
      if (!w) work.set(tuple, attrWork(tuple, values, timeMs));
      else if (w.timeMs < timeMs) w.timeMs = timeMs;
      else if (w.firstTimeMs > timeMs) w.firstTimeMs = timeMs;
    });
    if (work.size > 0) {
      const list = [...work.values()].sort((a, b) => Buffer.compare(a.digest, b.digest));
      const params: unknown[][] = [list.map((w) => w.digest), list.map((w) => w.timeMs + LAST_MS_SLACK), list.map((w) => Math.max(0, w.firstTimeMs - LAST_MS_SLACK))];
      ATTR_COLUMNS.forEach((_, c) => params.push(list.map((w) => w.values[c])));
      const names = ATTR_COLUMNS.map((_, i) => `a${i}`).join(', ');
      const r = await client.query<{ id: number; digest: Buffer; last_ms: string; first_ms: string }>(
        `INSERT INTO attr_sets AS t (digest, last_ms, first_ms, ${ATTR_COLUMNS.join(', ')})
         SELECT d, l, f, ${names}
         FROM unnest($1::bytea[], $2::int8[], $3::int8[], ${ATTR_COLUMNS.map((c, i) => `$${i + 4}::${c === 'extra' ? 'jsonb' : 'text'}[]`).join(', ')}) WITH ORDINALITY AS u(d, l, f, ${names}, ord)
         ORDER BY ord
         ON CONFLICT (digest) DO UPDATE SET last_ms = GREATEST(t.last_ms, excluded.last_ms), first_ms = LEAST(t.first_ms, excluded.first_ms)
         RETURNING id, digest, last_ms, first_ms`,
        params,
      );
      const byDigest = new Map(r.rows.map((row) => [row.digest.toString('hex'), { id: Number(row.id), lastMs: Number(row.last_ms), firstMs: Number(row.first_ms) }]));
      for (const w of list) {
        const set = byDigest.get(w.digest.toString('hex'));
        if (set) this.attrs.note(w.tuple, set);
      }
    }
    return tuples.map(({ tuple }) => {
      const set = this.attrs.peek(tuple);
      if (!set) throw new Error('attribute set missing after its upsert');
      return set.id;
    });
  }

  /**
   * What the inserted events add, each table in one multi-row statement: the hooks, the base rollups, the
   * dimension rollups, the rollup per (hook, attribute set) (`attrIds`: each event's set), then the client rows
   * per dimension value: those are shared by every batch of a team whatever its hooks, so their row locks are
   * taken late, just before the commit that releases them; and the day rollup last, for the days' change
   * generations its triggers bump (DAY_CHANGES). Not `admitting` (ingestOnce), a hook row created is
   * HookRecreated, before any other row is locked: the row version an upsert's update writes carries its
   * transaction in xmax (the row lock it takes), an inserted one none.
   */
  private async applyRollups(client: pg.PoolClient, events: HookEvent[], attrIds: number[], admitting: boolean): Promise<void> {
    const rows = groupForRollups(events);
    const hookList = [...hooksSeen(events, this.now())];
    const upserted = await client.query<{ created: boolean }>(
      `INSERT INTO hooks AS t (hook_id, hook_event, hook_name, first_seen, last_seen, ref)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[], $6::int8[])
       ON CONFLICT (hook_id) DO UPDATE SET first_seen = LEAST(t.first_seen, excluded.first_seen), last_seen = GREATEST(t.last_seen, excluded.last_seen)
       RETURNING (t.xmax = 0) AS created`,
      [hookList.map(([id]) => id), hookList.map(([, h]) => h.event.hookEvent), hookList.map(([, h]) => h.event.hookName), hookList.map(([, h]) => h.firstMs), hookList.map(([, h]) => h.lastMs), hookList.map(([id]) => hookRef(id)?.toString() ?? null)],
    );
    if (!admitting && upserted.rows.some((r) => r.created)) throw new HookRecreated();
    const base = (g: Granularity): Promise<void> => {
      const list = rows[g];
      return upsertRollups(client, ROLLUP_TABLES[g], [['hook_id', 'text'], ['bucket', 'int8'], ['service_name', 'text'], ['service_version', 'text']], list.map((x) => [x.hookId, x.bucket, x.serviceName, x.serviceVersion]), list.map((x) => x.row));
    };
    for (const g of GRANULARITIES) if (g !== 'day') await base(g);
    // The batch's deltas folded in memory (dim-rollups.ts, attr-rollups.ts).
    const dimRows = groupForDimRollups(events, this.rolled);
    await upsertDimFamily(client, DIM_HOOK_FAMILY, dimRows.hooks);
    const attrRows = groupForAttrRollups(events, attrIds);
    await upsertRollups(client, ATTR_ROLLUP_TABLE, [['hook', 'int8'], ['bucket', 'int8'], ['attrs', 'int4']], attrRows.map((x) => [x.hook, x.bucket, x.attrs]), attrRows.map((x) => x.row));
    await upsertDimFamily(client, DIM_CLIENT_FAMILY, dimRows.clients);
    // The day rollup last: its statement bumps the days' change generations (DAY_CHANGES), whose row of the day
    // and this connection's slot the batches of every replica sharing that slot need. Taken just before the
    // commit, it is held for the commit only, not while this transaction waits on any other row.
    await base('day');
  }

  async hook(id: string): Promise<HookInfo | undefined> {
    const r = await this.query('SELECT hook_id, hook_event, hook_name, first_seen, last_seen FROM hooks WHERE hook_id = $1', [id]);
    const row = r[0];
    return row ? toInfo(row) : undefined;
  }

  hooks(ids: readonly string[]): Promise<Map<string, HookInfo>> {
    return ids.length === 0 ? Promise.resolve(new Map()) : this.infos([...ids]);
  }

  /**
   * Counter rows for [from, to), by grouping: from the base rollups, the dimension rollups (whole hours and days;
   * the rest from raw events) or the raw events, as planRead decides from the filters. Every rollup segment's
   * rows in one UNION ALL, each stretch of raw events a statement beside it, all at once, merged here.
   */
  private async aggregate(q: RangeQuery, grouping: Grouping, hooks?: string | readonly string[]): Promise<Map<string, { keys: unknown[]; row: CounterRow }>> {
    const out = new Map<string, { keys: unknown[]; row: CounterRow }>();
    // A row as `add` merges it: kept segments (closedSegments) keep these, not the database's rows.
    const counterRow = (r: Record<string, unknown>): KeptCounterRow => {
      const keys = rollupGroupColumns(grouping).map((_, i) => r[`g${i}`]);
      return [JSON.stringify(keys), keys, fromDbRow(r)];
    };
    // `row` is merged into, never kept as it is: a kept row stays as it was read.
    const addRow = ([k, keys, row]: KeptCounterRow): void => {
      const cur = out.get(k);
      if (cur) mergeRow(cur.row, row);
      else out.set(k, { keys, row: { ...row } });
    };
    const add = (r: Record<string, unknown>): void => addRow(counterRow(r));
    const filters = q.filters ?? {};
    const params: unknown[] = [];
    // Refuses a filter on an unknown dimension whatever is read; the clause itself is numbered where each
    // statement uses it (a parameter PostgreSQL sees no use of has no type and fails the statement).
    this.filterClause(filters, []);
    // Per hook and value, the hook's id is g0, named by the attribute sets' queries themselves (their `hookAs`).
    const hookAs = groupsPerHook(grouping) ? 'g0' : undefined;
    const valueAt = hookAs === undefined ? 0 : 1;
    // Over attr_sets' columns (attrGroupedEventsQuery); built first too, so an unknown dimension is refused.
    const eventExprs = grouping === 'hook' ? [] : eventGroupExprs(grouping, (d) => this.attrExpr(d));
    const eventSelect = eventExprs.map((g, i) => `${g} AS g${i + valueAt}`).join(', ');
    const eventGroup = eventExprs.map((_, i) => `g${i + valueAt}`).join(', ');
    const rollupSelect = rollupGroupColumns(grouping).map((g, i) => `${g} AS g${i}`).join(', ');
    const group = rollupGroupColumns(grouping).map((_, i) => `g${i}`).join(', ');
    // One hook (its page, a breakdown), or a few (RangeQuery.hookIds: rows past the fleet series' riskiest).
    const hookId = typeof hooks === 'string' && hooks !== '' ? hooks : undefined;
    const few = typeof hooks === 'object' ? hooks : undefined;
    const hookIndex = hookId ? params.push(hookId) : few ? params.push([...few]) : 0;
    const scope = few ? hookScope((column) => `${column} = ANY($${hookIndex}::text[])`) : undefined;
    const hookParam = hookId ? `AND hook_id = $${hookIndex}` : scope?.byId ?? '';
    // Events name their hook by number: grouped by it, the id is looked up once per group.
    const eventHookParam = hookId ? `AND hook = ${hookRefOf(`$${hookIndex}`)}` : scope?.byRef ?? '';
    const plan = planRead(filters, grouping, this.rolled);
    // A stretch of raw events, read by a statement of its own (its parameters after `params`, copied).
    const fromEvents = (a: number, b: number): (() => Promise<Record<string, unknown>[]>) => {
      // Only the sets live in the stretch (attrFilter): used since its start, begun before its end.
      const where = this.filterClause(filters, params, 'sets', a, b);
      const pa = params.push(a);
      const pb = params.push(b);
      const cond = `time_ms >= $${pa} AND time_ms < $${pb} ${eventHookParam} ${where}`;
      const own = [...params];
      // Folded first, per hook or, grouped by attributes (a user, a session, a client), per attribute set, each set
      // looked up once (sql.ts foldedEvents).
      const sql = grouping === 'hook' ? hookGroupedEventsQuery('g0', cond) : attrGroupedEventsQuery(eventSelect, eventGroup, cond, 'events', hookAs);
      return () => this.query(sql, own);
    };
    // Whole hours and days from the rollup per attribute set (attr-rollups.ts): its columns are named as the
    // events' (hook, attrs), so the same hook and filter clauses apply.
    const fromAttrRollups = (a: number, b: number): string => {
      const where = this.filterClause(filters, params, 'sets', a, b);
      const cond = `bucket >= $${params.push(a)} AND bucket < $${params.push(b)} ${eventHookParam} ${where}`;
      return attrRollupQuery(grouping === 'hook' ? null : eventSelect, grouping === 'hook' ? 'g0' : eventGroup, cond, hookAs);
    };
    // Decided once, by time: which minutes the minute rollups, the raw events or whole hours answer.
    const sources = minuteSources(Date.now(), this.retention, await this.currentBounds());
    if (plan.source === 'raw') {
      // One statement per segment: the partial hours at the edges from the raw events, everything else from the
      // rollup per attribute set; none before the events horizon (only raw events and that rollup answer, and
      // both go with retention.events).
      const runs = segments(q.fromMs, q.toMs)
        .flatMap((planned) => resolveSegment(planned, true, sources));
      const first = [...params];
      const statements = runs.map((run) => {
        // Each statement numbers its own parameters after the hook's.
        params.splice(0, params.length, ...first);
        if (run.granularity === 'minute') return fromEvents(run.fromMs, run.toMs);
        const sql = fromAttrRollups(run.fromMs, run.toMs);
        const own = [...params];
        return () => this.query(sql, own);
      });
      for (const rows of await Promise.all(statements.map((st) => st()))) for (const r of rows) add(r);
      return out;
    } else {
      const first = [...params];
      // Raw events (a range's partial hours under a dimension filter, minutes past the minute horizon) are each
      // a statement of their own, beside the one that reads every rollup segment.
      const eventParts: (() => Promise<Record<string, unknown>[]>)[] = [];
      const parts: string[] = [];
      const runs = segments(q.fromMs, q.toMs).flatMap((planned) => resolveSegment(planned, false, sources));
      // Every hook's counters of a rollup segment before the minute being written, read in an answer's snapshot
      // (hookCounters, the fleet series' partial buckets), are kept while its days' generations stay as they were
      // (closedSegments): the overview's 30 days of day rows are read once, not on every refresh.
      const closedTo = Math.floor(Date.now() / MINUTE_MS) * MINUTE_MS;
      const keeping = grouping === 'hook' && hooks === undefined && Object.keys(filters).length === 0 && this.answers.getStore() !== undefined;
      const closed = keeping ? runs.filter((seg) => !seg.events && seg.toMs <= closedTo) : [];
      const generations = closed.length === 0 ? undefined : await this.dayGenerations(Math.min(...closed.map((seg) => seg.fromMs)), Math.max(...closed.map((seg) => seg.toMs)));
      // What each part read is kept as (by its position in `parts`).
      const keepAs: ({ key: string; generations: string; rows: KeptCounterRow[] } | undefined)[] = [];
      for (const seg of runs) {
        const dimG = plan.source === 'dims' ? dimGranularity(seg.granularity) : undefined;
        // A dimension has no minute rollups: the partial hours at the range's edges come from the raw events.
        if (seg.events || (plan.source === 'dims' && dimG === undefined)) {
          const own = [...params];
          params.splice(0, params.length, ...first);
          eventParts.push(fromEvents(seg.fromMs, seg.toMs));
          params.splice(0, params.length, ...own);
          continue;
        }
        const table = dimG !== undefined ? (grouping === 'client' ? DIM_CLIENT_TABLES : DIM_ROLLUP_TABLES)[dimG] : ROLLUP_TABLES[seg.granularity];
        if (generations && closed.includes(seg)) {
          const key = `${table}|${seg.fromMs}|${seg.toMs}`;
          const now = generations(seg.fromMs, seg.toMs);
          // Most recently used last: eviction takes the oldest first, never the segments read every refresh.
          const found = this.closedSegments.get(key);
          if (found?.generations === now) {
            for (const r of found.rows) addRow(r);
            continue;
          }
          keepAs[parts.length] = { key, generations: now, rows: [] };
        }
        const a = params.push(seg.fromMs);
        const b = params.push(seg.toMs);
        const cond = rollupWhere(plan, dimG !== undefined, (v) => `$${params.push(v)}`);
        parts.push(`SELECT ${parts.length} AS part, ${rollupSelect}, ${rollupAggregates()} FROM ${table} WHERE bucket >= $${a} AND bucket < $${b} ${hookParam} ${cond} GROUP BY ${group}`);
      }
      const statements = parts.length > 0 ? [() => this.query(parts.join('\nUNION ALL\n'), params), ...eventParts] : eventParts;
      for (const rows of await Promise.all(statements.map((st) => st()))) {
        for (const r of rows) {
          const row = counterRow(r);
          addRow(row);
          keepAs[Number(r['part'])]?.rows.push(row);
        }
      }
      for (const k of keepAs) if (k) this.closedSegments.set(k.key, { generations: k.generations, rows: k.rows });
      return out;
    }
  }

  /**
   * How a series under `q.filters` is read: base rollups, dimension rollups or the rollup per attribute set
   * (steps of whole hours: their buckets are exact, the hour being written included), or raw events. Returns seriesQuery's arguments; the filter
   * parameters go after the `first` ones.
   */
  private seriesSource(q: SeriesQuery, first: unknown[]): { filterWhere: string | null; rollup: RollupFilter | undefined; params: unknown[] } {
    const filters = q.filters ?? {};
    const rawParams = [...first];
    const where = this.filterClause(filters, rawParams);
    const plan = planRead(filters, 'hook', this.rolled);
    const minuteStep = granularityForStep(q.stepMs) === 'minute';
    // What no rollup of a value keeps, at a step of whole hours: the rollup per attribute set.
    if (plan.source === 'raw' && !minuteStep) return { filterWhere: null, rollup: { dims: false, attrs: true, where }, params: rawParams };
    if (plan.source === 'raw' || (plan.source === 'dims' && minuteStep)) return { filterWhere: where, rollup: undefined, params: rawParams };
    const params = [...first];
    const dims = plan.source === 'dims';
    return { filterWhere: null, rollup: { dims, where: rollupWhere(plan, dims, (v) => `$${params.push(v)}`) }, params };
  }

  /** Filters on rows naming their attribute set, in attrFilter's form `form`. */
  private filterClause(filters: Record<string, string>, params: unknown[], form: 'sets' | 'row' = 'sets', liveFromMs?: number, liveToMs?: number): string {
    const conds = Object.entries(filters).map(([dim, value]) => [this.attrExpr(dim), `$${params.push(value)}`, value === ''] as const);
    const bound = (ms: number | undefined): string | undefined => (ms === undefined || conds.length === 0 ? undefined : `$${params.push(ms)}`);
    // The planner picks the bound whose index finds fewer sets (its statistics know both).
    const from = bound(liveFromMs);
    const to = bound(liveToMs);
    const clause = attrFilter(conds, form, from, to === undefined ? {} : { to });
    return clause === '' ? '' : `AND ${clause}`;
  }

  /** A dimension as an expression over attr_sets' columns. */
  private attrExpr(dim: string): string {
    // dimensionExpr only lets configured names through; the key is still quoted as a literal, never spliced raw.
    return dimensionExpr(dim, this.dims, (key) => `(extra ->> ${pgString(key)})`);
  }

  hookCounters(q: RangeQuery): Promise<Map<string, HookCounters & { info: HookInfo }>> {
    return this.snapshot(() => hookCountersFrom(q, (hooks) => this.hookRows(q, hooks), (ids) => this.infos(ids)));
  }

  /** Counter rows by hook id (aggregate's per-hook grouping). */
  private async hookRows(q: RangeQuery, hooks?: string | readonly string[]): Promise<Map<string, CounterRow>> {
    const rows = await this.aggregate(q, 'hook', hooks);
    return new Map([...rows.values()].map(({ keys, row }) => [String(keys[0]), row]));
  }

  private async infos(ids: string[]): Promise<Map<string, HookInfo>> {
    const infos = await this.query('SELECT hook_id, hook_event, hook_name, first_seen, last_seen FROM hooks WHERE hook_id = ANY($1::text[])', [ids]);
    return new Map(infos.map((r) => [String(r['hook_id']), toInfo(r)]));
  }

  async overflowHooks(): Promise<HookInfo[]> {
    return (await this.query(OVERFLOW_HOOKS, [])).map(toInfo);
  }

  async latePersisted(q: LatePersistedQuery): Promise<Map<string, Arrival>> {
    // Built first: an unknown dimension is refused whether or not anything arrived late.
    const sql = latePersistedQuery((n) => `$${n}`, q.dimension === undefined ? undefined : this.attrExpr(q.dimension));
    const rows = await this.query(sql, [q.receivedFromMs, q.receivedToMs, q.eventBeforeMs]);
    return rows.length === 0 ? new Map() : toArrivals(rows, await this.infos(rows.map((r) => String(r['g']))));
  }

  async lateFolded(q: ArrivalQuery): Promise<Map<string, Arrival>> {
    const rows = await this.query(lateArrivalsQuery((n) => `$${n}`), [q.receivedFromMs, q.receivedToMs, q.eventBeforeMs]);
    if (rows.length === 0) return new Map();
    // The late events over the cap of the other hooks are the persisted rule's.
    const infos = await this.infos(rows.map((r) => String(r['g'])));
    return toArrivals(rows, new Map([...infos].filter(([, info]) => isOverflowHook(info))));
  }

  series(hookId: string, q: SeriesQuery): Promise<Map<number, HookCounters>> {
    return this.snapshot(() => this.readSeries(hookId, q));
  }

  private async readSeries(hookId: string, q: SeriesQuery): Promise<Map<number, HookCounters>> {
    const { fromMs, parts, edges } = await this.seriesParts(q, [hookId, null, null]);
    const whole = async (): Promise<[number, CounterRow][]> => {
      const rows: [number, CounterRow][] = [];
      for (const part of parts) {
        const { sql } = seriesQuery(q, part.filterWhere, (n) => `$${n}`, part.rollup, part.granularity);
        part.params[1] = part.fromMs;
        part.params[2] = part.toMs;
        for (const r of await this.query(sql, part.params)) rows.push([Number(r['b']), fromDbRow(r)]);
      }
      return rows;
    };
    const [rows, partial] = await Promise.all([whole(), this.seriesEdges(q, edges, hookId)]);
    return new Map([...mergeSeries([...rows, ...hookEdgeRows(partial, hookId)], fromMs)].map(([b, row]) => [b, toCounters(row)]));
  }

  fleetSeries(q: SeriesQuery): Promise<FleetBucket[]> {
    return q.hookIds?.length === 0 ? Promise.resolve([]) : this.snapshot(() => this.readFleetSeries(q));
  }

  private async readFleetSeries(q: SeriesQuery): Promise<FleetBucket[]> {
    const { fromMs, readFromMs, readToMs, parts, edges } = await this.seriesParts(q, [null, null]);
    const read = async (a: number, b: number): Promise<FleetBucket[]> => {
      const out: FleetBucket[] = [];
      for (const part of parts) {
        // A part starting before `a` (the whole hour at the range's start) is read whole when `a` is the range's start.
        const [pa, pb] = [a <= readFromMs ? part.fromMs : Math.max(a, part.fromMs), Math.min(b, part.toMs)];
        if (pb <= pa) continue;
        const params = [...part.params];
        // A few hooks (RangeQuery.hookIds): their rows only, each hook's through its own index.
        const ids = q.hookIds ? params.push([...q.hookIds]) : 0;
        const scope = q.hookIds ? hookScope((column) => `${column} = ANY($${ids}::text[])`) : undefined;
        const { sql } = fleetSeriesQuery(q, part.filterWhere, (n) => `$${n}`, part.rollup, part.granularity, scope);
        params[0] = pa;
        params[1] = pb;
        // Row by row, not spread as arguments: a part holds up to MAX_FLEET_HOOK_BUCKETS rows, past what a call takes.
        for (const r of await this.query(sql, params)) out.push(toFleetBucket(r));
      }
      return parts.length === 1 && parts[0]?.granularity === undefined ? out : mergeFleet(out, fromMs);
    };
    // The partial buckets at the range's ends: buckets of their own, apart from the whole ones the parts read.
    const [out, partial] = await Promise.all([this.wholeFleetBuckets(q, `s${hooksDigest(q.hookIds)}`, fromMs, readFromMs, readToMs, parts, read), this.seriesEdges(q, edges, q.hookIds)]);
    return [...out, ...edgeFleetBuckets(partial)];
  }

  fleetRest(q: SeriesQuery, listed: readonly string[]): Promise<FleetRestBucket[]> {
    return q.hookIds?.length === 0 ? Promise.resolve([]) : this.snapshot(() => this.readFleetRest(q, listed), true);
  }

  private async readFleetRest(q: SeriesQuery, listed: readonly string[]): Promise<FleetRestBucket[]> {
    const except = new Set(listed);
    // A few hooks (RangeQuery.hookIds): those not listed, each through its own index; every hook: all but the listed.
    const rest = q.hookIds?.filter((id) => !except.has(id));
    if (rest?.length === 0) return [];
    const { fromMs, readFromMs, readToMs, parts, edges } = await this.seriesParts(q, [null, null]);
    const read = async (a: number, b: number): Promise<FleetRestBucket[]> => {
      // One statement over every part, each part's parameters after the one before.
      const statements: string[] = [];
      const params: unknown[] = [];
      for (const part of parts) {
        // A part starting before `a` (the whole hour at the range's start) is read whole when `a` is the range's start.
        const [pa, pb] = [a <= readFromMs ? part.fromMs : Math.max(a, part.fromMs), Math.min(b, part.toMs)];
        if (pb <= pa) continue;
        const own = [...part.params];
        const ids = own.push(rest ?? [...listed]);
        const scope = hookScope((column) => (rest ? `${column} = ANY($${ids}::text[])` : `${column} <> ALL($${ids}::text[])`));
        const { sql } = fleetSeriesQuery(q, part.filterWhere, (n) => `$${n}`, part.rollup, part.granularity, scope, false);
        own[0] = pa;
        own[1] = pb;
        statements.push(shiftParams(sql, params.length));
        params.push(...own);
      }
      return statements.length === 0 ? [] : (await this.query(fleetRestQuery(statements, fromMs), params)).map(toFleetRest);
    };
    // The partial buckets at the range's ends: read per hook as the range's figures are, those listed left out.
    // Kept as the sums of these hooks (r+) or of every hook but these (r-): the same ids name different sums.
    const [sums, partial] = await Promise.all([this.wholeFleetBuckets(q, rest ? `r+${hooksDigest(rest)}` : `r-${hooksDigest(listed)}`, fromMs, readFromMs, readToMs, parts, read), this.seriesEdges(q, edges, rest)]);
    return addFleetRest(sums, edgeFleetBuckets(partial).filter((b) => !except.has(b.hookId)));
  }

  /**
   * The change generations of the days of [fromMs, toMs) (DAY_CHANGES), read in the answer's snapshot, as a
   * function giving those of a stretch of them: what was kept for a stretch holds while its generations are the
   * ones it was read with, whichever replica commits meanwhile. Read on another server than the one what is kept
   * was checked against (a restart, a failover, a restore may have lost commits, so generations can come again),
   * or from another table of them, everything kept is dropped first. Undefined, and nothing kept, on a schema
   * without them (a database put back from a backup of an earlier version under running replicas, until they
   * restart and migrate it): every call then reads what it answers, as before.
   */
  private async dayGenerations(fromMs: number, toMs: number): Promise<((a: number, b: number) => string) | undefined> {
    const [head] = await this.query(
      'SELECT pg_postmaster_start_time()::text AS started, to_regclass($1)::oid::text AS generations, (SELECT value FROM store_meta WHERE key = $2) AS pruned',
      [DAY_CHANGES, DAY_CHANGES_PRUNED_META],
    );
    const table = head?.['generations'];
    const server = `${String(head?.['started'])}/${String(table)}`;
    if (server !== this.keptOn) {
      this.forgetKept();
      this.keptOn = server;
    }
    if (typeof table !== 'string') return undefined;
    const rows = await this.query(
      `SELECT day::text AS day, SUM(generation)::text AS generation FROM ${DAY_CHANGES} WHERE day >= $1 AND day <= $2 GROUP BY day`,
      [Math.floor(fromMs / DAY_MS), Math.floor((toMs - 1) / DAY_MS)],
    );
    const days = new Map(rows.map((r) => [Number(r['day']), String(r['generation'])]));
    // Days whose rows retention has deleted read under the count of its deletes: their sums start again from 0.
    const pruned = parseDayChangesPruned(head?.['pruned']);
    return (a, b) => {
      const out: string[] = [];
      for (let d = Math.floor(a / DAY_MS); d <= Math.floor((b - 1) / DAY_MS); d++) out.push(d < pruned.beforeDay ? `p${pruned.prunes}:${days.get(d) ?? '0'}` : (days.get(d) ?? '0'));
      return `${server}|${out.join(',')}`;
    };
  }

  private forgetKept(): void {
    this.closedSegments.clear();
    this.closedFleet.clear();
  }

  /**
   * The fleet series' whole buckets (or their sums: fleetRest), those of the whole UTC days before today kept while
   * the generations of their days stay as they were (dayGenerations). Today's buckets are read on every call: every
   * ingest commit of live traffic moves today's generations, which would make a kept range holding today miss on
   * each call. `scope` names what `read` reads beside the range (which hooks, summed or not); `fromMs` is the first bucket's
   * start, which the rows before it count in.
   */
  private async wholeFleetBuckets<T>(q: SeriesQuery, scope: string, fromMs: number, readFromMs: number, readToMs: number, parts: readonly SeriesPart[], read: (a: number, b: number) => Promise<T[]>): Promise<T[]> {
    // The buckets before the one being written and before today: an overview refreshing its 30-day fleet chart
    // re-reads today's buckets only, however much another replica ingests meanwhile.
    const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
    const keptTo = Math.min(readToMs, Math.max(readFromMs, Math.floor(today / q.stepMs) * q.stepMs));
    if (Object.keys(q.filters ?? {}).length > 0 || keptTo <= readFromMs || !this.answers.getStore()) return read(readFromMs, readToMs);
    // Where the parts meet is part of what was read: a kept chart is one of the same sources.
    // The first bucket's start too: rows before it (the whole hour a minute step's range starts in) count in it.
    const key = `${scope}|${q.stepMs}|${fromMs}|${readFromMs}|${keptTo}|${parts.map((p) => `${p.granularity ?? ''}${p.filterWhere === null ? 'r' : 'e'}${p.fromMs}`).join(',')}`;
    const changes = await this.dayGenerations(readFromMs, keptTo);
    if (!changes) return read(readFromMs, readToMs);
    const generations = changes(readFromMs, keptTo);
    // Most recently used last: eviction takes the oldest first.
    const found = this.closedFleet.get(key);
    let closed: readonly T[];
    if (found?.generations === generations) {
      closed = found.rows as readonly T[];
    } else {
      closed = await read(readFromMs, keptTo);
      this.closedFleet.set(key, { generations, rows: closed });
    }
    return [...closed, ...(await read(keptTo, readToMs))];
  }

  /** The partial buckets at a series range's ends (seriesSpans), each read as the range's figures read it. */
  private seriesEdges(q: SeriesQuery, edges: readonly SeriesEdge[], hooks?: string | readonly string[]): Promise<EdgeRows> {
    return readEdges(edges, (fromMs, toMs) => this.hookRows({ fromMs, toMs, filters: q.filters }, hooks));
  }

  /**
   * Where each part of a series is read: its whole buckets as seriesSource decides or, at a minute step, split by
   * age (minute-sources.ts) into whole hours, raw events and minute rollups; its partial buckets (`edges`) as
   * range reads read them. Each part's parameters begin with `first` (its range goes in there).
   */
  private async seriesParts(q: SeriesQuery, first: unknown[]): Promise<{ fromMs: number; readFromMs: number; readToMs: number; parts: SeriesPart[]; edges: SeriesEdge[] }> {
    const filters = q.filters ?? {};
    // Refuses a filter on an unknown dimension.
    this.filterClause(filters, []);
    const plan = planRead(filters, 'hook', this.rolled);
    const { fromMs, spans, edges } = seriesSpans(q, this.retention, plan.source === 'raw', Date.now(), await this.currentBounds());
    const parts = spans.map((span): SeriesPart => {
      if (span.source === 'planned') return { ...this.seriesSource(q, first), fromMs: span.fromMs, toMs: span.toMs };
      const params = [...first];
      if (span.source === 'events') return { filterWhere: this.filterClause(filters, params), rollup: undefined, params, fromMs: span.fromMs, toMs: span.toMs };
      const dims = plan.source === 'dims';
      return { filterWhere: null, rollup: { dims, where: rollupWhere(plan, dims, (v) => `$${params.push(v)}`) }, params, granularity: 'hour', fromMs: span.fromMs, toMs: span.toMs };
    });
    const readFromMs = parts[0]?.fromMs ?? fromMs;
    return { fromMs, readFromMs, readToMs: Math.max(readFromMs, parts.at(-1)?.toMs ?? readFromMs), parts, edges };
  }

  async clientVersions(q: RangeQuery): Promise<ClientVersion[]> {
    const rows = await this.snapshot(() => this.aggregate(q, 'client'));
    return [...rows.values()].map(({ keys, row }) => {
      const c = toCounters(row);
      return { serviceName: String(keys[0] ?? ''), version: String(keys[1] ?? ''), executions: c.executions, sizeUnknownExecutions: c.sizeUnknownExecutions, hasSizeData: c.executions > c.sizeUnknownExecutions };
    }).sort((a, b) => b.executions - a.executions);
  }

  async breakdown(hookId: string, dimension: string, q: RangeQuery): Promise<BreakdownRow[]> {
    // A rolled dimension from its rollups; user.*, session.id from the raw events of this one hook (dim-rollups.ts).
    const rows = await this.snapshot(() => this.aggregate(q, { dimension }, hookId));
    return [...rows.values()].map(({ keys, row }) => ({ value: String(keys[0] ?? ''), ...toCounters(row) })).sort((a, b) => b.executions - a.executions);
  }

  fleetBreakdown(dimension: string, q: RangeQuery): Promise<Map<string, BreakdownRow[]>> {
    return this.snapshot(() => fleetBreakdownFrom(q, async (hooks) => {
      const rows = await this.aggregate(q, { dimension, perHook: true }, hooks);
      return [...rows.values()].map(({ keys, row }) => [String(keys[0]), String(keys[1] ?? ''), row] as const);
    }));
  }

  async recordGuardTrims(trims: GuardTrim[]): Promise<GuardTrim[]> {
    if (trims.length === 0) return [];
    // One statement, so the whole batch commits (or fails) at once before the OTLP 200; it names the rows it
    // inserted, the trims no replica stored before.
    const sql = `${guardTrimSql((n) => `$${n}`, trims.length).insert} RETURNING dedup_key`;
    try {
      const r = await this.pool.query<{ dedup_key: string }>(sql, trims.flatMap(guardTrimValues));
      const inserted = new Set(r.rows.map((row) => row.dedup_key));
      return trims.filter((t) => inserted.delete(t.dedupKey));
    } catch (err) {
      throw this.classify(err, 'store write failed');
    }
  }

  async guardTrims(hookId: string, q: SeriesQuery): Promise<GuardTrimStats> {
    const params = [hookId, q.fromMs, q.toMs];
    const [buckets, largest] = await Promise.all([this.query(GUARD_SQL.buckets, [...params, q.stepMs]), this.query(GUARD_SQL.largest, params)]);
    return guardTrimStats(buckets, largest);
  }

  async coverage(q: RangeQuery, dimension?: string): Promise<Coverage> {
    const plan = planRead(q.filters ?? {}, dimension === undefined ? 'hook' : { dimension }, this.rolled);
    return coveredRange(q.fromMs, q.toMs, plan.source === 'raw', minuteSources(Date.now(), this.retention, await this.currentBounds()));
  }

  async lastEventMs(filters?: Record<string, string>): Promise<number | null> {
    if (filters && Object.keys(filters).length > 0) {
      // Built first: it refuses a filter on an unknown dimension.
      this.filterClause(filters, []);
      return newestFilteredEvent(planRead(filters, 'hook', this.rolled), {
        newestSeen: () => this.lastEventMs(),
        newestIn: async (fromMs, toMs) => {
          const params: unknown[] = [];
          // The matching sets first, of a bounded stretch only those used since its start: the time index is a
          // BRIN, so the whole hour is read either way, and testing each event's own set cost three times as much
          // (a team's newest hour at 10 M events a month: 3.8 ms, against 1.35).
          const where = this.filterClause(filters, params, 'sets', fromMs, fromMs === undefined ? undefined : toMs);
          const within = `${fromMs === undefined ? '' : `AND time_ms >= ${fromMs}`} ${toMs === undefined ? '' : `AND time_ms < ${toMs}`}`;
          const e = await this.query(`SELECT time_ms AS t FROM events WHERE kind = ${KIND_CODES.complete} ${within} ${where} ORDER BY time_ms DESC LIMIT 1`, params);
          return e[0] ? Number(e[0]['t']) : null;
        },
        newestHour: () => this.newestFilteredHour(filters),
      });
    }
    const r = await this.query('SELECT MAX(last_seen) AS t FROM hooks', []);
    const t = r[0]?.['t'];
    return t === null || t === undefined ? null : Number(t);
  }

  /**
   * The newest hour in which an execution matches the filter, from the hourly dimension rollups or the rollup
   * per attribute set; null when none does, undefined when the filter is on the base rollups' keys only.
   */
  private async newestFilteredHour(filters: Record<string, string>): Promise<number | null | undefined> {
    const plan = planRead(filters, 'hook', this.rolled);
    if (plan.source === 'rollups') return undefined;
    const params: unknown[] = [];
    // A filter no rollup of a value keeps: the rollup per attribute set, through its (attrs, bucket) index.
    const [table, cond] = plan.source === 'raw' ? [ATTR_ROLLUP_TABLE, this.filterClause(filters, params)] : [DIM_ROLLUP_TABLES.hour, rollupWhere(plan, true, (v) => `$${params.push(v)}`)];
    const r = await this.query(`SELECT MAX(bucket) AS b FROM ${table} WHERE executions > 0 ${cond}`, params);
    const b = r[0]?.['b'];
    return b === null || b === undefined ? null : Number(b);
  }

  /**
   * The retention bounds a read counts on: those of the last prune of any replica (store_meta), read again when
   * older than boundsRefreshMs; one read at a time, which every caller then waiting shares. Never earlier than
   * what this replica knew.
   */
  private async currentBounds(): Promise<PrunedBounds> {
    // An answer's snapshot read them just before it began (`snapshot`).
    if (this.answers.getStore()) return this.pruned;
    if (performance.now() - this.boundsReadAt < this.boundsRefreshMs) return this.pruned;
    this.boundsRead ??= (async () => {
      const startedAt = performance.now();
      try {
        this.notePruned(await this.storedBounds((sql, p) => this.query(sql, p)));
        this.boundsReadAt = startedAt;
        return this.pruned;
      } finally {
        this.boundsRead = undefined;
      }
    })();
    return this.boundsRead;
  }

  /**
   * Takes bounds read from store_meta. A later prune than this replica knew may have removed hooks too (retention
   * removes hooks with nothing left): the cache of hooks known to exist is dropped, so store.maxHooks counts again.
   */
  private notePruned(read: PrunedBounds): void {
    if (read.eventsBeforeMs > this.pruned.eventsBeforeMs) this.known.clear();
    this.pruned = laterBounds(this.pruned, read);
  }

  /**
   * The bounds an ingest refuses expired events by, read on the write pool (never waiting behind the API's
   * reads). A batch of events from the last hour (a live feed) takes what this replica read within
   * boundsRefreshMs; an older one (a backlog, a late retry) reads store_meta first, so another replica's prune a
   * moment ago is not missed and its deleted events are not stored again.
   */
  private async ingestBounds(events: readonly HookEvent[]): Promise<PrunedBounds> {
    let oldest = Infinity;
    for (const e of events) if (e.timeMs < oldest) oldest = e.timeMs;
    if (oldest >= Date.now() - HOUR_MS && performance.now() - this.boundsReadAt < this.boundsRefreshMs) return this.pruned;
    const startedAt = performance.now();
    this.notePruned(await this.storedBounds((sql, p) => this.write(sql, p)));
    this.boundsReadAt = Math.max(this.boundsReadAt, startedAt);
    return this.pruned;
  }

  /** The bounds the last prune of any replica noted in store_meta, read through `run` (a pool's query). */
  private async storedBounds(run: (sql: string, params: unknown[]) => Promise<Record<string, unknown>[]>): Promise<PrunedBounds> {
    const v = (await run('SELECT value FROM store_meta WHERE key = $1', [PRUNED_BEFORE_META]))[0]?.['value'];
    return parseBounds(v === undefined || v === null ? undefined : String(v));
  }

  /**
   * Fences retention by the leader lease (fence.ts): prune and pruneTranscriptFindings carry the epoch they began
   * under, and each of their transactions (a batch, a partition dropped) checks it before it commits (underLease).
   * A leader paused past its lease and resumed in the middle of a run deletes nothing more: its next batch is rolled
   * back (NotLeaderError), and a batch under way when it paused is rolled back by the server (fence.ts). Past
   * bounds read at the start of its run, it would otherwise delete what its successor keeps: rows of a retention
   * raised meanwhile.
   */
  fenceRetention(fence: LeaseFence): void {
    this.fence = fence;
  }

  /** The lease epoch a retention run begins under (0 without a fence); not the leader: NotLeaderError. */
  private retentionEpoch(): number {
    if (!this.fence) return 0;
    const epoch = this.fence.epoch();
    if (epoch === null) throw new NotLeaderError('not the leader: retention not run');
    return epoch;
  }

  /**
   * `fn`, the work of a transaction (`c`) of a retention run begun under `epoch`, then the check that the lease is
   * still this replica's (fenceRetention), just before the commit: the lease row is held from the check to the
   * commit only. Held from the start, a batch that took long (waiting on a row lock, a slow scan) held every renewal
   * of the lease as long, up to the statement timeout, and its leader lost the lease to its own retention (nor could
   * another replica take it over meanwhile).
   */
  private async underLease<T>(c: pg.PoolClient, epoch: number, fn: () => Promise<T>): Promise<T> {
    if (!this.fence) return fn();
    await boundPause(c, this.fence);
    const result = await fn();
    await holdLease(c, this.fence, epoch, 'retention stopped');
    return result;
  }

  /** One statement (or `fn`) of a retention run begun under `epoch`, in a transaction of its own, fenced. */
  private async fenced<T>(epoch: number, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.pool, (c) => this.underLease(c, epoch, () => fn(c)), this.onLost).catch(async (err: unknown) => {
      throw await this.retentionError(err, epoch);
    });
  }

  /**
   * What a fenced transaction of a retention run begun under `epoch` failed with: NotLeaderError when the lease,
   * read again after the error, is no longer this replica's at that epoch. A batch under way when its leader paused
   * is ended by the server (boundPause) and fails on resuming with a lost connection, though the cause is that the
   * lease has moved meanwhile. Still this replica's (or not readable): the failure as it is.
   */
  private async retentionError(err: unknown, epoch: number): Promise<Error> {
    if (this.fence && !(err instanceof NotLeaderError) && !(await leaseHeld(this.pool, this.fence, epoch).catch(() => true))) {
      return new NotLeaderError(`the leader lease moved to another replica: retention stopped (${this.describe(err)})`);
    }
    return this.classify(err, 'retention failed');
  }

  async prune(eventsBefore: number, rollupsBeforeMs: number, signal?: AbortSignal): Promise<PruneResult> {
    const result: PruneResult & { partitions: number } = { events: 0, rollups: 0, hooks: 0, guardTrims: 0, partitions: 0 };
    await untilStopped(this.pruneRun(result, eventsBefore, rollupsBeforeMs, signal), signal);
    return result;
  }

  /**
   * A retention run, what it deletes added to `result` as it goes. Each batch is its own transaction: once
   * `signal` aborts, the run ends before the next one (throwing signal.reason), and leaves the index rebuilds too.
   */
  private async pruneRun(result: PruneResult & { partitions: number }, eventsBefore: number, rollupsBeforeMs: number, signal: AbortSignal | undefined): Promise<void> {
    const epoch = this.retentionEpoch();
    const go = (): void => signal?.throwIfAborted();
    // Whole hours of events (minute-sources.ts), and minute rollups by their own horizon.
    const eventsBeforeMs = eventsPruneBound(eventsBefore);
    // The database's time, read once for the run (the replicas share its clock, not their own).
    const nowMs = await this.clockMs();
    const minutesBeforeMs = minuteRollupsPruneBound(nowMs, eventsBeforeMs, this.retention);
    // Noted before anything is deleted: from now on no read of this replica counts on what goes, nor any of
    // another replica begun more than its boundsRefreshMs later (currentBounds).
    this.pruned = laterBounds(laterBounds(this.pruned, await this.storedBounds((sql, p) => this.write(sql, p))), { eventsBeforeMs, minutesBeforeMs, rollupsBeforeMs });
    await this.fenced(epoch, (c) => c.query(
      `INSERT INTO store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      [PRUNED_BEFORE_META, JSON.stringify(this.pruned)],
    ));
    const n = this.pruneBatch;
    // Each batch is its own short transaction, fenced: ingest on other replicas never waits long behind retention.
    // The batch size is the last parameter ($2, or $1 without a bound); `count` is told what each one deleted.
    const batch = async (count: ((deleted: number) => void) | undefined, sql: string, ...bound: number[]): Promise<void> => {
      for (;;) {
        go();
        const r = await this.fenced(epoch, (c) => c.query(sql, [...bound, n]));
        count?.(r.rowCount ?? 0);
        if ((r.rowCount ?? 0) < n) return;
      }
    };
    const add = (kind: 'events' | 'rollups' | 'guardTrims') => (deleted: number): void => {
      result[kind] += deleted;
    };
    // Whole days go with their partition; only the day holding the bound is deleted from, in batches. A day whose
    // partition is left to the next run (a lock not granted in time) is not deleted from row by row meanwhile.
    const deferred: string[] = [];
    const old = await this.dropPartitions(epoch, (d) => (d + 1) * DAY_MS <= eventsBeforeMs, { signal });
    deferred.push(...old.deferred);
    result.events += old.events;
    result.partitions += old.partitions;
    const boundDayMs = Math.floor(eventsBeforeMs / DAY_MS) * DAY_MS;
    await batch(add('events'), 'DELETE FROM events WHERE (hook, time_ms, key) IN (SELECT hook, time_ms, key FROM events WHERE time_ms >= $1 AND time_ms < $2 ORDER BY time_ms LIMIT $3)', boundDayMs, eventsBeforeMs);
    await batch(add('guardTrims'), 'DELETE FROM guard_trims WHERE dedup_key IN (SELECT dedup_key FROM guard_trims WHERE time_ms < $1 LIMIT $2)', eventsBefore);
    const rollups = (t: string, before: number): Promise<void> => batch(add('rollups'), `DELETE FROM ${t} WHERE ctid IN (SELECT ctid FROM ${t} WHERE bucket < $1 LIMIT $2)`, before);
    // The rollup per attribute set goes with the events (attr-rollups.ts): whole hours past the bound in batches,
    // then the hour holding it folded again from its events left, in one transaction.
    const attrPrune = async (bound: number): Promise<void> => {
      const { old, edge } = attrRollupPruneSql(bound);
      await batch(undefined, `DELETE FROM ${ATTR_ROLLUP_TABLE} WHERE ctid IN (SELECT ctid FROM ${ATTR_ROLLUP_TABLE} WHERE ${old} LIMIT $1)`);
      if (edge.length === 0) return;
      await this.fenced(epoch, async (client) => {
        for (const sql of edge) await client.query(sql);
      });
    };
    await attrPrune(eventsBeforeMs);
    await rollups(ROLLUP_TABLES.minute, minutesBeforeMs);
    await rollups(ROLLUP_TABLES.hour, rollupsBeforeMs);
    await rollups(ROLLUP_TABLES.day, rollupsBeforeMs);
    // The change generations of the days now gone from all three (their deletes have just bumped them).
    await this.pruneDayChanges(epoch, Math.floor(Math.min(minutesBeforeMs, rollupsBeforeMs) / DAY_MS), go);
    // Dimension rollups are hours and days: they go with retention.rollups like the base ones (not counted in
    // `rollups`, which counts the base rows whatever the dimensions configured).
    const hookIds = (await this.query('SELECT hook_id FROM hooks', [])).map((r) => String(r['hook_id']));
    const dimPrune = async (bound: number): Promise<void> => {
      for (let i = 0; i < hookIds.length; i += DIM_PRUNE_HOOKS) {
        const chunk = hookIds.slice(i, i + DIM_PRUNE_HOOKS);
        for (const t of Object.values(DIM_ROLLUP_TABLES)) {
          for (const dim of this.rolled) {
            go();
            await this.fenced(epoch, (c) => c.query(dimPruneSql(t, 'hook_id = ANY($1::text[])', (k) => `$${k}`), [chunk, dim, bound]));
          }
        }
      }
      for (const t of Object.values(DIM_CLIENT_TABLES)) {
        for (const dim of this.rolled) {
          go();
          await this.fenced(epoch, (c) => c.query(dimClientPruneSql(t, (k) => `$${k}`), [dim, bound]));
        }
      }
    };
    await dimPrune(rollupsBeforeMs);
    result.hooks = await this.pruneOrphanHooks(epoch, n, signal);
    // Attribute sets no event in retention can reference (last_ms covers every event of the set).
    // The outer condition again: under READ COMMITTED a row another replica's ingest has just moved on (a
    // session resumed) is rechecked against the outer WHERE only, and must then stay.
    await batch((deleted) => {
      if (deleted > 0) this.attrs.clear();
    }, 'DELETE FROM attr_sets WHERE id IN (SELECT id FROM attr_sets WHERE last_ms < $1 LIMIT $2) AND last_ms < $1', eventsBeforeMs);
    // A stopping process leaves the rebuilds (each may wait on old transactions) and the days ahead to the next run.
    go();
    // Not fenced (a rebuild changes no row): one meeting another replica's on the same index fails on its lock.
    // One run's rebuilds at a time: a rebuild waiting on an old transaction may outlast the next run's start,
    // which would otherwise take it for an interrupted one and start the same rebuild beside it.
    if (!this.rebuilding) {
      this.rebuilding = true;
      try {
        await this.packFinishedDays();
        await this.repackRollupIndexes();
      } finally {
        this.rebuilding = false;
      }
    }
    // The next days' partitions, made here (on the leader, off the ingest path) before the first event needs them.
    // Not made now (a lock not granted in time): the next run makes them, or the first ingest that needs one.
    // Not fenced: any replica's ingest makes them too, once (IF NOT EXISTS under the advisory lock).
    const today = Math.floor(nowMs / DAY_MS);
    const ahead = Array.from({ length: DAYS_AHEAD + 1 }, (_, i) => today + i);
    await this.ensurePartitions(ahead).catch((err: unknown) => {
      if ((err as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw this.classify(err, 'retention failed');
      deferred.push(...ahead.filter((d) => !this.partitions.has(d)).map(partitionName));
    });
    if (deferred.length > 0) {
      result.partitionsDeferred = deferred.length;
      this.logger?.warn('event partitions left to the next retention run: a lock on events was not granted in time', { partitions: deferred, lockTimeoutMs: PARTITION_DDL_LOCK_TIMEOUT_MS });
    }
  }

  /**
   * Deletes the change generations of the days before `beforeDay` (DAY_CHANGES), pruneBatch rows a transaction,
   * each fenced as retention's other deletes and noting what it did in store_meta (DayChangesPruned) in the same
   * transaction: a read sees a day's rows gone and the count of prunes moved together, never one without the other.
   */
  private async pruneDayChanges(epoch: number, beforeDay: number, go: () => void): Promise<void> {
    for (;;) {
      go();
      const deleted = await this.fenced(epoch, async (c) => {
        const [meta] = (await c.query('SELECT value FROM store_meta WHERE key = $1 FOR UPDATE', [DAY_CHANGES_PRUNED_META])).rows as Record<string, unknown>[];
        const was = parseDayChangesPruned(meta?.['value']);
        const r = await c.query(`DELETE FROM ${DAY_CHANGES} WHERE (day, slot) IN (SELECT day, slot FROM ${DAY_CHANGES} WHERE day < $1 LIMIT $2)`, [beforeDay, this.pruneBatch]);
        const n = r.rowCount ?? 0;
        if (n > 0 || beforeDay > was.beforeDay) {
          const now: DayChangesPruned = { beforeDay: Math.max(beforeDay, was.beforeDay), prunes: was.prunes + 1 };
          await c.query('INSERT INTO store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [DAY_CHANGES_PRUNED_META, JSON.stringify(now)]);
        }
        return n;
      });
      if (deleted < this.pruneBatch) return;
    }
  }

  /**
   * Deletes the hooks with nothing left (no event, no rollup row), `n` at a time; returns how many. The check
   * that finds them reads one snapshot, which does not see an ingest committing meanwhile, and a delete checked
   * by it would take a hook whose new events that ingest just stored. So each batch first locks its hooks' rows:
   * an ingest that wrote to one of them holds the row (its upsert) until it commits, and a later one waits for
   * this transaction. The delete then checks again in a new statement, whose snapshot sees every such commit.
   * Locks are taken in hook id order, as ingest takes them. The cache of hooks known to exist is dropped after each
   * batch that deleted some: an ingest before the next batch counts a hook it deleted against store.maxHooks again.
   */
  private async pruneOrphanHooks(epoch: number, n: number, signal: AbortSignal | undefined): Promise<number> {
    let total = 0;
    for (;;) {
      // Stopping (Store.prune): the hooks deleted so far are counted, the caller ends the run.
      if (signal?.aborted) return total;
      const candidates = (await this.write(`${ORPHAN_HOOKS} ORDER BY hook_id LIMIT $1`, [n])).map((r) => String(r['hook_id']));
      if (candidates.length === 0) return total;
      const deleted = await this.fenced(epoch, async (client) => {
        await client.query('SELECT hook_id FROM hooks WHERE hook_id = ANY($1::text[]) ORDER BY hook_id FOR UPDATE', [candidates]);
        const r = await client.query(`DELETE FROM hooks WHERE hook_id = ANY($1::text[]) AND hook_id IN (${ORPHAN_HOOKS})`, [candidates]);
        return r.rowCount ?? 0;
      });
      total += deleted;
      if (deleted > 0) this.known.clear();
      // Fewer than a batch, or none of them gone after all (data arrived for each): nothing more to find now.
      if (candidates.length < n || deleted === 0) return total;
    }
  }

  /**
   * Rebuilds the unique index of each day's partition once the day is over: written hook by hook, its pages were
   * split in halves; rebuilt, they are full (fillfactor 100), about a third smaller. A finished day whose index
   * has grown again well past that (REPACK_GROWTH: late events, a backfill, each landing in the middle of its
   * hook's entries) is rebuilt again. CONCURRENTLY: ingest of late events into that day goes on meanwhile.
   */
  private async packFinishedDays(): Promise<void> {
    await this.dropInterruptedRebuilds();
    // Shares noted for day indexes that retention has since dropped go with them.
    await this.write(`DELETE FROM store_meta WHERE left(key, $1) = $2 AND to_regclass(quote_ident(substr(key, $1 + 1))) IS NULL`, [PACKED_SHARE.length, PACKED_SHARE]);
    const meta = await this.write('SELECT value FROM store_meta WHERE key = $1', [PACKED_THROUGH]);
    const through = meta[0] ? Number(meta[0]['value']) : -Infinity;
    const lastDone = Math.floor((Date.now() - PACK_AFTER_MS) / DAY_MS) - 1;
    const parts = (await this.indexSizes(`x.indexrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'events_hook_time_key'::regclass)`, []))
      .map((p) => ({ ...p, day: Number(p.table.slice(PARTITION_PREFIX.length)) }))
      .filter((p) => Number.isSafeInteger(p.day) && p.day <= lastDone)
      .sort((a, b) => a.day - b.day);
    const mark = (day: number): Promise<unknown> => this.setMeta(PACKED_THROUGH, String(day));
    for (const p of parts.filter((x) => x.day > through)) {
      if (!(await this.rebuildIndex(p, 'events index rebuild failed', 'packed once its day is over'))) return;
      await mark(p.day);
    }
    if (lastDone > through) await mark(lastDone);
    // Each day against the share its own index had when packed: a day of narrower rows (starts) has a larger one.
    for (const p of parts.filter((x) => x.day <= through && x.share !== undefined && grownPastPacked(x, x.share))) {
      if (!(await this.rebuildIndex(p, 'events index rebuild failed', 'grown past its packed size'))) return;
    }
  }

  /**
   * Rebuilds each rollup index whose share of its table has grown past REPACK_GROWTH times the share it had after
   * its last rebuild (or that was never rebuilt): rows are written hook by hook and hour by hour, and every
   * update that does not fit its page adds an entry, so their pages fill to about half.
   */
  private async repackRollupIndexes(): Promise<void> {
    const rows = await this.indexSizes(`ct.relname = ANY($2::text[]) AND ct.relnamespace = ${OWN_NAMESPACE} AND x.indisvalid`, [ROLLUP_TABLE_NAMES]);
    for (const p of rows) {
      const reason = p.share === undefined ? (p.indexBytes >= REPACK_MIN_BYTES ? 'never rebuilt' : undefined) : grownPastPacked(p, p.share) ? 'grown past its packed size' : undefined;
      if (reason === undefined) continue;
      if (!(await this.rebuildIndex(p, 'rollup index rebuild failed', reason))) return;
    }
  }

  /**
   * REINDEX INDEX CONCURRENTLY `p.idx` (a name from the catalog, never from input) and notes the share of its
   * table it takes afterwards (when the table is big enough to say). False when the rebuild failed: only space is
   * at stake, so retention goes on and the next run tries again.
   */
  private async rebuildIndex(p: IndexSizes, failure: string, reason: string): Promise<boolean> {
    try {
      // On a connection of its own, with limits of its own instead of an ingest statement's (a large index takes
      // longer to build than a minute), closed afterwards so the settings go with it.
      const client = await this.pool.connect();
      // A connection lost meanwhile fails the query below; without a listener its 'error' event would end the process.
      const onError = (err: Error): void => this.logger?.warn('postgres connection lost during an index rebuild', { index: p.idx, err: this.describe(err) });
      client.on('error', onError);
      try {
        liftAnswerTimeout(client);
        await client.query(`SET statement_timeout = '${REBUILD_STATEMENT_TIMEOUT}'; SET lock_timeout = '${REBUILD_LOCK_TIMEOUT}'`);
        await client.query(`REINDEX INDEX CONCURRENTLY ${quoteIdent(p.idx)}`);
      } finally {
        client.off('error', onError);
        client.release(true);
      }
    } catch (err) {
      this.logger?.warn(failure, { index: p.idx, err: this.describe(err) });
      return false;
    }
    const after = (await this.indexSizes('x.indexrelid = to_regclass($2)', [quoteIdent(p.idx)]))[0] ?? { indexBytes: 0, tableBytes: 0 };
    this.logger?.info('rebuilt an index', { index: p.idx, reason, bytesBefore: p.indexBytes, bytesAfter: after.indexBytes });
    if (after.tableBytes >= REPACK_MIN_BYTES) await this.setMeta(`${PACKED_SHARE}${p.idx}`, String(after.indexBytes / after.tableBytes));
    return true;
  }

  /** The indexes `where` picks (over pg_index x and its table ct; parameters from $2), with their sizes and noted shares. */
  private async indexSizes(where: string, params: unknown[]): Promise<IndexSizes[]> {
    const rows = await this.write(
      `SELECT ci.relname AS idx, ct.relname AS tbl, pg_relation_size(ci.oid) AS ib, pg_relation_size(ct.oid) AS tb, m.value AS share FROM pg_index x
       JOIN pg_class ci ON ci.oid = x.indexrelid JOIN pg_class ct ON ct.oid = x.indrelid
       LEFT JOIN store_meta m ON m.key = $1 || ci.relname
       WHERE ${where} ORDER BY 1`,
      [PACKED_SHARE, ...params],
    );
    return rows.map((r) => ({
      idx: String(r['idx']), table: String(r['tbl']), indexBytes: Number(r['ib']), tableBytes: Number(r['tb']),
      share: r['share'] === null || r['share'] === undefined ? undefined : Number(r['share']),
    }));
  }

  private async setMeta(key: string, value: string): Promise<void> {
    await this.write('INSERT INTO store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, value]);
  }

  /**
   * Drops what an interrupted rebuild left: a REINDEX CONCURRENTLY cut short (a restart, a lost connection, a
   * cancelled statement) leaves an invalid index named after the one it rebuilt with `_ccnew` (or `_ccold`),
   * which every insert into that day still maintains. Dropping it is PostgreSQL's documented recovery; the
   * day's rebuild is tried again by the next run. Only invalid indexes of event partitions with those names go.
   */
  private async dropInterruptedRebuilds(): Promise<void> {
    const left = await this.write(
      `SELECT ci.relname AS idx FROM pg_index x JOIN pg_class ci ON ci.oid = x.indexrelid JOIN pg_class ct ON ct.oid = x.indrelid
       WHERE NOT x.indisvalid AND ci.relname ~ '_cc(new|old)[0-9]*$' AND ct.relnamespace = ${OWN_NAMESPACE}
         AND (ct.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'events'::regclass) OR ct.relname = ANY($1::text[]))`,
      [ROLLUP_TABLE_NAMES],
    );
    for (const r of left) {
      const idx = String(r['idx']);
      try {
        // Names come from the catalog, never from input.
        await this.write(`DROP INDEX CONCURRENTLY IF EXISTS ${quoteIdent(idx)}`, []);
        this.logger?.info('dropped an index left by an interrupted rebuild', { index: idx });
      } catch (err) {
        this.logger?.warn('dropping an index left by an interrupted rebuild failed', { index: idx, err: this.describe(err) });
      }
    }
  }

  /**
   * Detaches and drops the event partitions of the days `due` picks, each in its own short transaction; returns
   * how many partitions went and how many events they held, and the partitions left for the next run.
   *
   * DETACH takes ACCESS EXCLUSIVE on events: it waits for every statement on events to end, and the inserts that
   * come meanwhile queue behind it. So it waits at most PARTITION_DDL_LOCK_TIMEOUT_MS: past that (a pg_dump or a
   * long read holds ACCESS SHARE) this day and the ones after it are left for the next run, which drops them.
   * Not DETACH ... CONCURRENTLY: it waits for those same transactions to end (a dump's, for hours), and cut short
   * by a timeout it leaves the partition pending, to be finished by hand or by the next run.
   */
  private async dropPartitions(epoch: number, due: (day: number) => boolean, opts: { signal?: AbortSignal | undefined } = {}): Promise<{ events: number; partitions: number; deferred: string[] }> {
    let events = 0;
    let partitions = 0;
    const days = (await this.partitionDays()).filter(due).sort((a, b) => a - b);
    for (const [i, d] of days.entries()) {
      // Stopping (Store.prune): the days dropped so far are counted, the caller ends the run.
      if (opts.signal?.aborted) break;
      const name = partitionTable(d);
      let held: number | undefined;
      try {
        held = await inTransaction(this.pool, (client) => this.underLease(client, epoch, async () => {
          await client.query(`SET LOCAL lock_timeout = ${PARTITION_DDL_LOCK_TIMEOUT_MS}`);
          await client.query('SELECT pg_advisory_xact_lock($1)', [PARTITION_LOCK_KEY]);
          if (!(await this.partitionDays(client)).includes(d)) return undefined;
          const n = await client.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${name}`);
          await client.query(`ALTER TABLE events DETACH PARTITION ${name}`);
          await client.query(`DROP TABLE ${name}`);
          return Number(n.rows[0]?.n ?? 0);
        }), this.onLost);
      } catch (err) {
        if ((err as { code?: string }).code === LOCK_NOT_AVAILABLE) return { events, partitions, deferred: days.slice(i).map(partitionName) };
        throw await this.retentionError(err, epoch);
      }
      this.partitions.delete(d);
      // Dropped by another replica meanwhile: not counted here.
      if (held === undefined) continue;
      partitions++;
      events += held;
    }
    return { events, partitions, deferred: [] };
  }

  async recordTranscriptFindings(findings: TranscriptFinding[]): Promise<FindingsResult> {
    if (findings.length === 0) return { inserted: 0, duplicates: 0 };
    // One statement (atomic) per batch: unnest() of one array per column.
    const types = ['text', 'text', 'text', 'text', 'text', 'text', 'text', 'int8', 'text', 'text', 'int8'];
    const unique = uniqueFindings(findings);
    const columns = [...FINDING_COLUMNS.map((_, c) => unique.map((f) => findingValues(f)[c])), unique.map((f) => f.previousId ?? null)];
    const rows = await this.write(
      `INSERT INTO transcript_findings (${FINDING_COLUMNS.join(', ')})
       SELECT ${FINDING_COLUMNS.map((c) => `f.${c}`).join(', ')}
       FROM unnest(${[...types, 'text'].map((t, i) => `$${i + 1}::${t}[]`).join(', ')}) AS f(${FINDING_COLUMNS.join(', ')}, previous_id)
       WHERE ${notStoredUnderPreviousId('f.previous_id')}
       ${FINDING_ON_CONFLICT} RETURNING finding_id`,
      columns,
    );
    return { inserted: rows.length, duplicates: findings.length - rows.length };
  }

  async pruneTranscriptFindings(beforeMs: number, signal?: AbortSignal): Promise<number> {
    const epoch = this.retentionEpoch();
    let total = 0;
    for (;;) {
      if (signal?.aborted) return total;
      const r = await this.fenced(epoch, (c) => c.query('DELETE FROM transcript_findings WHERE finding_id IN (SELECT finding_id FROM transcript_findings WHERE time_ms < $1 LIMIT $2)', [beforeMs, this.pruneBatch]));
      const deleted = r.rowCount ?? 0;
      total += deleted;
      if (deleted < this.pruneBatch) return total;
    }
  }

  async transcriptCommands(hookId: string, q: RangeQuery): Promise<TranscriptCommandRow[]> {
    const rows = await this.query(commandsQuery((n) => `$${n}`), [hookId, q.fromMs, q.toMs]);
    return rows.map(toCommandRow);
  }

  async metaValue(key: string, create: () => string): Promise<string> {
    await this.write('INSERT INTO store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [key, create()]);
    const rows = await this.query('SELECT value FROM store_meta WHERE key = $1', [key]);
    return String(rows[0]?.['value']);
  }

  /**
   * The tables of hookwatch's schema with their indexes and TOAST, by part (StoreSize): the event partitions, the
   * rollups, and the rest. A catalog query on the read pool: /metrics runs it periodically, never per scrape.
   */
  async diskUsage(): Promise<StoreSize> {
    const rows = await this.query(
      `SELECT CASE WHEN c.relname ~ $3 THEN 'events' WHEN c.relname = ANY($1::text[]) THEN 'rollups' ELSE 'other' END AS part,
              sum(pg_total_relation_size(c.oid))::text AS bytes
       FROM pg_class c WHERE c.relnamespace = ${OWN_NAMESPACE} AND c.relkind = 'r' AND (c.relname = ANY($2::text[]) OR c.relname ~ $3)
       GROUP BY 1`,
      [ROLLUP_TABLE_NAMES, OWN_TABLES, PARTITION_NAME],
    );
    const size: StoreSize = { events: 0, rollups: 0, other: 0 };
    for (const r of rows) size[String(r['part'])] = Number(r['bytes']);
    return size;
  }

  async clockMs(): Promise<number> {
    return Number((await this.write('SELECT floor(extract(epoch FROM now()) * 1000)::float8 AS ms', []))[0]?.['ms']);
  }

  /**
   * On the readiness check's own connection, answered or given up on within READY_TIMEOUT_MS, waiting for the
   * connection included. Whether the database answers, not whether the pools are busy: a replica under load stays
   * ready. A check asked for while one is under way gets its answer: queued behind it on the one connection, it
   * would give up before its turn came, and leave its connection attempt to hold up the check after it.
   */
  ping(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('store is closed'));
    this.pinging ??= this.readyCheck().finally(() => {
      this.pinging = undefined;
    });
    return this.pinging;
  }

  private async readyCheck(): Promise<void> {
    let answered = true;
    const unanswered = (): Error => {
      answered = false;
      return new StoreUnavailableError(`the database did not answer within ${READY_TIMEOUT_MS} ms`);
    };
    // Not logged: /readyz gives the reason, at every probe.
    const check = this.readyPool.query('SELECT 1').catch((err: unknown) => {
      throw isAnswerTimeout(err) || isConnectTimeout(err) ? unanswered() : this.classify(err, 'readiness check failed');
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(unanswered()), READY_TIMEOUT_MS);
    });
    try {
      await Promise.race([check, late]);
      this.databaseReachable();
    } catch (err) {
      if (!answered) this.unreachable();
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A statement, or the listening connection's check, went unanswered: the database may be unreachable, or only
   * that connection lost. The readiness check tells, and closes the idle connections if it is (unreachable).
   */
  checkReachable(): void {
    if (!this.closed) this.ping().catch(() => {});
  }

  /**
   * The database did not answer the readiness check in time: the network may have dropped every connection
   * without a word, and those idle in the pools would each hold the next request for the statement bound after
   * it heals. They are closed now, so the requests after the heal open new ones. Only on the readiness check's
   * silence, never on a slow statement: a database that is busy but answers keeps its connections.
   */
  private unreachable(): void {
    this.unreachableAt = performance.now();
    const dropped = this.pools.reduce((n, p) => n + p.dropIdle(), 0);
    if (dropped > 0) this.logger?.warn('postgres did not answer; idle connections closed', { connections: dropped, timeoutMs: READY_TIMEOUT_MS });
  }

  /**
   * The database answers again (a readiness check answered, a new connection opened, here or by another
   * connection to it: the lease's, the listening one's) after it was found unreachable. The connections in use
   * that have heard nothing from it since before then wait for answers to statements sent into the outage, which
   * the network may have dropped for good: each would hold its pool's slot for the statement bound (65 s), and a
   * burst of them (a dashboard refreshing) every read slot, so the queries after the heal would wait for a free
   * one until they give up. They are closed now: their callers get the lost connection's answer (503, retry
   * later; a batch is not acknowledged), and new work gets new connections. Never on a slow statement alone:
   * only after the readiness check went unanswered.
   */
  databaseReachable(): void {
    const since = this.unreachableAt;
    if (since === undefined) return;
    this.unreachableAt = undefined;
    const closed = this.pools.reduce((n, p) => n + p.dropSilentSince(since), 0);
    if (closed > 0) this.logger?.warn('postgres answers again; connections waiting since it did not closed', { connections: closed });
  }

  close(): Promise<void> {
    // What the lock-timeout lines held back is said before the store goes.
    for (const { line } of this.lockTimeoutLines.values()) line.flush();
    this.refusedLine.flush();
    this.closed ??= Promise.all(this.pools.map((p) => p.end().catch(() => {}))).then(() => {});
    return this.closed;
  }

  cutConnections(): void {
    this.cut = true;
    // Ended first, so nothing opens a connection again; then the calls waiting for a connection fail, and the
    // sockets go, and with them what waits on them.
    void this.close();
    const reason = new Error('Connection closed: the store was cut off from the database while stopping');
    for (const p of this.pools) p.cut(reason);
    this.sockets.destroyAll();
  }

  /**
   * A read query, on the read pool, or in the snapshot of the answer it is part of (`snapshot`). An answer asks
   * several at once (its segments, its edges): each is sent on the snapshot's connection once the one before is
   * answered, never queued in pg behind a statement still running. After a failure (its transaction is aborted)
   * the rest fail with the same error, unsent, as does a statement asked once the answer was read (its connection
   * may be back in the pool by then).
   */
  private query(sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    const snapshot = this.answers.getStore();
    if (!snapshot) return this.run(this.readPool, sql, params);
    const answered = snapshot.last.then(() => {
      if (snapshot.over !== undefined) throw snapshot.over;
      return this.run(snapshot.client, sql, params);
    });
    snapshot.last = answered.catch((err: unknown) => {
      snapshot.over ??= err;
    });
    return answered;
  }

  /**
   * Reads an answer built of several statements (time segments, then the hooks' rows) in one snapshot: one
   * connection of the read pool in a REPEATABLE READ READ ONLY transaction, so a batch another connection (or
   * replica) commits meanwhile is in all of the answer or in none of it, never counted by one segment and not the
   * next. The transaction lasts as long as the answer's statements; they run one after another on its connection.
   * The retention bounds the answer plans by are read before it begins (currentBounds): a snapshot holding a
   * connection never waits for another. A `wide` answer (the fleet series' rest) has at least
   * WIDE_READ_WORK_MEM_MB of work_mem in its transaction.
   */
  private async snapshot<T>(read: () => Promise<T>, wide = false): Promise<T> {
    if (this.answers.getStore()) return read();
    await this.currentBounds();
    // The answer's own failures are classified where they happen (`run`); the rest are the transaction's.
    let readFailed = false;
    const answer = (client: pg.PoolClient): Promise<T> => {
      const snapshot: Snapshot = { client, last: Promise.resolve() };
      return this.answers.run(snapshot, () => read().catch((err: unknown) => {
        readFailed = true;
        throw err;
      }).finally(() => {
        snapshot.over ??= new Error('store query asked after its answer was read');
      }));
    };
    try {
      return await inTransaction(this.readPool, answer, undefined, wide ? WIDE_READ_BEGIN : 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    } catch (err) {
      throw readFailed ? err : this.classify(err, 'store query failed');
    }
  }

  /** A statement of the write side (ingest's own lookups, side writes), on the pool ingest uses. */
  private write(sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    return this.run(this.pool, sql, params);
  }

  private async run(pool: pg.Pool | pg.PoolClient, sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    try {
      const r = await pool.query(sql, params);
      return r.rows as Record<string, unknown>[];
    } catch (err) {
      throw this.classify(err, 'store query failed');
    }
  }

  private describe(err: unknown): string {
    const e = err as { message?: string; code?: string };
    return scrubSecret(`${e.message ?? String(err)}${e.code ? ` (${e.code})` : ''}`, this.url);
  }

  /** Retryable failures become StoreUnavailableError (503 + Retry-After); every message is scrubbed of the password. */
  private classify(err: unknown, what: string): Error {
    if (err instanceof StoreUnavailableError || err instanceof NotLeaderError || err instanceof MigrationLockWaitError || err instanceof MigrationBlockedError) return err;
    const e = err as { code?: string; message?: string; severity?: string };
    const code = e.code ?? '';
    const message = `${what}: ${this.describe(err)}`;
    const unanswered = isAnswerTimeout(err);
    if (unanswered) {
      this.logger?.warn('postgres statement not answered in time; its connection is dropped', { what, timeoutMs: this.answerTimeoutMs });
      this.checkReachable();
    }
    // Refused for its configuration: at open, a mistake to fix before starting (the process exits); once open, the
    // server's configuration changed under a running store (a password rotated), an outage until it is set right.
    const refused = ENDS_CONNECTION.has(e.severity ?? '') && CONFIGURATION_SQLSTATE.test(code);
    if (refused && this.opened) {
      this.refusedCause = this.describe(err);
      this.refusedLine.note();
      return new StoreUnavailableError(message);
    }
    const unavailable = RETRYABLE_SQLSTATE.test(code) || RETRYABLE_NETWORK.has(code) || (ENDS_CONNECTION.has(e.severity ?? '') && !refused)
      || /timeout|terminat|Connection|connect|pool/i.test(e.message ?? '');
    // pg's timeout kept as the cause (its message is pg's own, nothing of the URL): the transaction of an answer's
    // snapshot then drops its connection rather than send a ROLLBACK behind the unanswered statement (inTransaction).
    return unavailable ? new StoreUnavailableError(message, unanswered ? { cause: err } : undefined) : new Error(message);
  }
}

