/**
 * The embedded default store: SQLite through node:sqlite (no native addon to compile). WAL mode; each ingest
 * is one transaction, committed (and with synchronous=FULL, synced) before the OTLP 200 goes out.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { existsSync, rmSync, statSync } from 'node:fs';
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import type { BreakdownRow, ClientVersion, HookCounters } from '../model.ts';
import { isOverflowHook, type HookEvent } from '../../hooks/model.ts';
import type { Logger } from '../../telemetry/logger.ts';
import { COUNTER_COLUMNS, GRANULARITIES, fromDbRow, groupForRollups, hooksSeen, mergeRow, toCounters, type CounterRow } from '../counters.ts';
import { HOUR, MINUTE, granularityForStep, segments, type Granularity, type Segment } from '../segments.ts';
import { coveredRange, eventsPruneBound, laterBounds, mergeFleet, mergeSeries, minuteRollupsPruneBound, minuteSources, NOTHING_PRUNED, parseBounds, PRUNED_BEFORE_META, readEdges, hookEdgeRows, resolveSegment, seriesSpans, type Coverage, type EdgeRows, type MinuteRetention, type SeriesEdge, type PrunedBounds } from '../minute-sources.ts';
import { DIM_CLIENT_TABLES, DIM_FAMILY, DIM_FAMILY_NAMES, DIM_GRANULARITIES, DIM_ROLLUP_TABLES, type DimFamilyName, dimClientPruneSql, DIM_PRUNE_HOOKS, dimPruneSql, dimGranularity, eventGroupExprs, groupForDimRollups, groupsPerHook, newestFilteredEvent, planRead, rolledDimensions, rollupGroupColumns, rollupWhere, type DimGranularity, type Grouping } from '../dim-rollups.ts';
import { DEFAULT_MAX_HOOKS, KnownHooks, foldNewHooks } from '../hook-limit.ts';
import { AttrSetCache, ATTR_INSERT_COLUMNS, coveringBounds } from '../attr-sets.ts';
import { ATTR_ROLLUP_KEY, ATTR_ROLLUP_TABLE, attrRollupPruneSql, attrRollupQuery, groupForAttrRollups } from '../attr-rollups.ts';
import { attrGroupedEventsQuery, hookGroupedEventsQuery, liveLead, type LiveTo, type RollupFilter, attrDigest, attrFilter, compactKey, hookRef, hookRefOf, KIND_CODES, LEGACY_KEYS_BEFORE, ORPHAN_HOOKS, OVERFLOW_HOOKS, eventValues, hookScope, lateArrivalsQuery, latePersistedQuery, toArrivals, seriesQuery, fleetSeriesQuery, fleetRestQuery, toFleetBucket, toFleetRest, edgeFleetBuckets, ROLLUP_TABLES, sqlString, toInfo, rollupAggregates, upsertSetClause } from '../sql.ts';
import { SQLITE_BUSY, Statements, createPrivateFile, describeSqliteError, inTransaction, sqliteFault, sqliteFileBytes } from './database.ts';
import { SqliteReaders, type ReadSession } from './reader.ts';
import { attrExpr, logMigrated, migrateOnWorker, openMigrated, schemaFailure } from './schema.ts';
import { runPaced } from '../../paced.ts';
import { EventRowInserts } from './event-rows.ts';
import type { TranscriptCommandRow } from '../model.ts';
import type { TranscriptFinding } from '../../hooks/transcript-findings.ts';
import { FINDING_COLUMNS, FINDING_ON_CONFLICT, commandsQuery, findingValues, notStoredUnderPreviousId, toCommandRow, uniqueFindings, type FindingsResult } from '../transcript-findings.ts';
import { guardTrimSql, guardTrimStats, guardTrimValues, type GuardTrim, type GuardTrimStats } from '../guard-trims.ts';
import { StoreUnavailableError, fleetBreakdownFrom, hookCountersFrom, untilStopped, splitExpired, expiredBefore, type Arrival, type ArrivalQuery, type HookInfo, type LatePersistedQuery, type IngestResult, type PruneResult, type RangeQuery, type SeriesQuery, type Store, type StoreSize, type FleetBucket, type FleetRestBucket, addFleetRest, hooksDigest } from '../store.ts';
import { isInMemory } from '../settings.ts';
import { KeptRows } from '../kept-rows.ts';

export interface SqliteStoreOptions {
  path: string;
  synchronous?: 'full' | 'normal';
  /** sqlite.cacheBytes: the page cache of the connection ingest writes on (default DEFAULT_WRITE_CACHE_BYTES). */
  cacheBytes?: number;
  /** Extra dimension attribute keys (config `dimensions`). */
  dimensions?: readonly string[];
  /** store.maxHooks: events of further hook names are counted under overflow hooks. */
  maxHooks?: number;
  /** Where the store says it lost its file and when it is back (one line each). */
  logger?: Logger;
  /** How often the file is checked to still be the one opened (also checked on every commit and /readyz). */
  checkIntervalMs?: number;
  /** store.readers: worker threads answering read queries, each on its own read-only connection (default 2). */
  readers?: number;
  /** store.readerMaxOldSpace: each read worker's old space (default DEFAULT_READER_MAX_OLD_SPACE). */
  readerMaxOldSpace?: number;
  /**
   * retention.events and retention.minuteRollups: minutes older than the minute horizon are read from the raw
   * events, and beyond the events from whole hours (minute-sources.ts). Without it minute rollups serve every minute.
   */
  retention?: MinuteRetention;
  /**
   * The clock an ingest judges events by against retention.events (IngestResult.expired): the service's, which
   * retention and the receivers' time checks read too. Date.now when not given.
   */
  now?: () => number;
}

/**
 * The write connection's page cache. Under a busy feed one commit touches hundreds of index pages: the rows of
 * concurrent sessions interleave in time, so the time-ordered indexes take them all over their recent end. With
 * SQLite's default 2 MiB those pages are dropped and read back from the file at every commit.
 */
export const DEFAULT_WRITE_CACHE_BYTES = 64 * 1024 * 1024;

export { MIGRATIONS } from './schema.ts';

/** The two parts of the persisted alert's late query, each with the index it reads named (sql.ts latePersistedQuery). */
export const LATE_PERSISTED_EVENTS = { late: 'events INDEXED BY events_late_arrival', arrivals: 'events INDEXED BY events_over_arrival' };

/** The two parts of the hook_limit alert's late-arrival query, each with the index it reads named (sql.ts lateArrivalsQuery). */
export const LATE_ARRIVAL_EVENTS = { late: 'events INDEXED BY events_late_arrival', arrivals: 'events INDEXED BY events_arrival' };

/** A part of a series range and how it is read (seriesQuery's arguments and the filter parameters). */
interface SeriesPart {
  fromMs: number;
  toMs: number;
  filterWhere: string | null;
  rollup: RollupFilter | undefined;
  params: SQLInputValue[];
  granularity?: Granularity;
}

// Numbered, because the step appears twice and before the range in the bucket query.
const GUARD_SQL = guardTrimSql((n) => `?${n}`);


/**
 * Every hook's rows of an hour or day rollup over a long range, read a hook at a time through the primary key
 * (hook_id, bucket, ...): `hook_id IN (SELECT hook_id FROM hooks ...)`, `also` narrowing the hooks. Left to
 * itself the planner reads such a range through the bucket index, a lookup in the table for every row: over
 * 10,000 hooks and 30 days of hour rows (605,000), 5 to 7 s against 0.05 s for the rows read in key order, already
 * grouped by hook. Minutes are not read so (at most an hour's worth, through the bucket index: a seek per hook
 * would cost more than an empty minute's rows).
 */
function everyHookByKey(column: string, also = ''): string {
  return `${column} IN (SELECT hook_id FROM hooks${also === '' ? '' : ` WHERE ${also}`})`;
}

/** Cached closed segments at most (a 30-day view needs about five). */
const CLOSED_SEGMENT_CACHE_SIZE = 512;
/**
 * Rows the cache holds at most over all segments: with thousands of hooks, each segment grouped by hook holds a
 * row per hook, and a bound on the number of segments alone would let the cache take gigabytes.
 */
const CLOSED_SEGMENT_ROW_BUDGET = 100_000;

const CORRUPT_CAUSE = 'the database file is corrupt';
const MIN_RECOVERY_GAP_MS = 1000;

/** Rows one retention statement deletes at most (SqliteStore.prune). */
const PRUNE_BATCH = 5000;

/** Changes (ingest commits, prunes) the store remembers for the reads under way (SqliteStore.changedSince). */
const CHANGE_LOG_SIZE = 1024;

/**
 * An answer being read (SqliteStore.snapshot): its session on a read worker (undefined for ':memory:', read in
 * this thread), and the number of the last change before it began.
 */
interface Answer {
  session: ReadSession | undefined;
  since: number;
}

/** The connection and what is prepared on it; replaced whole when the file is reopened. */
interface Connection {
  db: DatabaseSync;
  /** Statements of queries and prunes, prepared once. */
  sql: Statements;
  insertEvents: EventRowInserts;
  legacyKeyExists: StatementSync;
  attrFind: StatementSync;
  attrInsert: StatementSync;
  attrTouch: StatementSync;
  upsertHook: StatementSync;
  upserts: Record<Granularity, StatementSync>;
  dimUpserts: Record<DimFamilyName, Record<DimGranularity, StatementSync>>;
  attrUpsert: StatementSync;
  hookExists: StatementSync;
  hookCount: StatementSync;
  /** Identity of the file opened, to notice it deleted or replaced underneath. */
  file: { dev: number; ino: number } | undefined;
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  readonly maxHooks: number;
  private c: Connection;
  private readonly path: string;
  private readonly synchronous: 'full' | 'normal';
  private readonly cacheBytes: number;
  private readonly logger: Logger | undefined;
  private readonly dims: readonly string[];
  /** Dimensions with rollups of their own (dim-rollups.ts). */
  private readonly rolled: readonly string[];
  private readonly retention: MinuteRetention | undefined;
  private readonly now: () => number;
  /** How far retention has deleted (minute-sources.ts PrunedBounds): read when the store opens, moved by prune. */
  private pruned: PrunedBounds = NOTHING_PRUNED;
  private closed = false;
  /** Batches waiting for the next group commit. */
  private readonly waiting: { events: HookEvent[]; resolve: (r: IngestResult) => void; reject: (e: Error) => void }[] = [];
  private flushScheduled = false;
  /** Transactions committed by ingest (one per group of batches). */
  commits = 0;
  /**
   * Aggregates of rollup segments that ended before the current minute, by segment and grouping, each the same
   * since change `since` (changedSince).
   */
  private readonly closedSegments = new KeptRows<{ toMs: number; since: number; rows: [string, CounterRow][] }>(CLOSED_SEGMENT_CACHE_SIZE, CLOSED_SEGMENT_ROW_BUDGET, CLOSED_SEGMENT_ROW_BUDGET / 4);
  /**
   * Fleet series (or their sums per bucket: fleetRest) over closed buckets, dropped like closedSegments when an
   * event for their time arrives.
   */
  private readonly closedFleet = new KeptRows<{ toMs: number; since: number; rows: readonly unknown[] }>(16, Infinity, Infinity);
  /** Events before this time may already be stored under their bare-hash key (see sql.ts timeOrderedKeysDdl). */
  private legacyKeysBefore = -Infinity;
  private readonly known: KnownHooks;
  /** Attribute sets known to be committed (dictionary encoding, attr-sets.ts). */
  private readonly attrs = new AttrSetCache();
  /** Why the store cannot keep data now (file gone, corrupt, disk full...); undefined when healthy. */
  private fault: string | undefined;
  private lastRecoveryMs = 0;
  private readonly checkTimer: NodeJS.Timeout | undefined;
  /**
   * Where read queries run: worker threads with their own connections, so no dashboard query ever holds the
   * event loop that receives OTLP and commits ingest. Undefined for ':memory:': an in-memory database belongs to
   * its one connection and cannot be opened from another thread, so its reads stay on the main connection.
   */
  private readonly readers: SqliteReaders | undefined;
  /** The answer being read, where its queries run (`snapshot`). */
  private readonly answers = new AsyncLocalStorage<Answer>();
  /**
   * Changes so far, and the last CHANGE_LOG_SIZE of them, each with the earliest time it touched (-Infinity:
   * any). Rows read for an answer may be kept for a closed segment only if nothing changed its time since the
   * answer began: the answer's snapshot may predate a commit that dropped the segment while it was read.
   */
  private changes = 0;
  private readonly changeLog: { n: number; fromMs: number }[] = [];

  constructor(opts: SqliteStoreOptions) {
    this.path = opts.path;
    this.synchronous = opts.synchronous ?? 'full';
    this.cacheBytes = opts.cacheBytes ?? DEFAULT_WRITE_CACHE_BYTES;
    this.logger = opts.logger;
    this.dims = opts.dimensions ?? [];
    this.rolled = rolledDimensions(this.dims);
    this.retention = opts.retention;
    this.now = opts.now ?? Date.now;
    this.maxHooks = opts.maxHooks ?? DEFAULT_MAX_HOOKS;
    this.known = new KnownHooks(this.maxHooks);
    this.c = this.connect();
    this.readers = this.path === ':memory:' ? undefined : new SqliteReaders(this.path, opts.readers ?? 2, opts.readerMaxOldSpace);
    if (this.path !== ':memory:') {
      this.checkTimer = setInterval(() => this.check(), opts.checkIntervalMs ?? 2000);
      this.checkTimer.unref();
    }
  }

  /**
   * Migrates the file on a worker thread (schema.ts migrateOnWorker), then opens the store on this one: the event
   * loop answers meanwhile, however long the migration takes. `onMigrating` is called if the file is to change.
   * An in-memory database belongs to its one connection: it is migrated as it opens.
   */
  static async open(opts: SqliteStoreOptions, onMigrating?: () => void): Promise<SqliteStore> {
    if (!isInMemory(opts.path)) {
      logMigrated(opts.logger, await migrateOnWorker({ path: opts.path, synchronous: opts.synchronous ?? 'full', cacheBytes: opts.cacheBytes ?? DEFAULT_WRITE_CACHE_BYTES, dimensions: opts.dimensions ?? [] }, onMigrating));
    }
    return new SqliteStore(opts);
  }

  /** Opens the file, migrates it and prepares the statements ingest uses. */
  private connect(): Connection {
    const { db, migrated } = openMigrated({ path: this.path, synchronous: this.synchronous, cacheBytes: this.cacheBytes, dimensions: this.dims });
    logMigrated(this.logger, migrated);
    try {
      const legacy = db.prepare('SELECT value FROM store_meta WHERE key = ?').get(LEGACY_KEYS_BEFORE) as { value: string } | undefined;
      this.legacyKeysBefore = legacy ? Number(legacy.value) : -Infinity;
      const pruned = db.prepare('SELECT value FROM store_meta WHERE key = ?').get(PRUNED_BEFORE_META) as { value: string } | undefined;
      this.pruned = laterBounds(this.pruned, parseBounds(pruned?.value));
      const cols = ['hook_id', 'bucket', 'service_name', 'service_version', ...COUNTER_COLUMNS];
      const upsert = (table: string): StatementSync =>
        db.prepare(
          `INSERT INTO ${table} AS t (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})
           ON CONFLICT (hook_id, bucket, service_name, service_version) DO UPDATE SET ${upsertSetClause()}`,
        );
      const dimUpsert = (table: string, key: readonly string[]): StatementSync => {
        const dimCols = [...key, ...COUNTER_COLUMNS];
        return db.prepare(
          `INSERT INTO ${table} AS t (${dimCols.join(', ')}) VALUES (${dimCols.map(() => '?').join(', ')})
           ON CONFLICT (${key.join(', ')}) DO UPDATE SET ${upsertSetClause()}`,
        );
      };
      let file: Connection['file'];
      if (this.path !== ':memory:') {
        const st = statSync(this.path);
        file = { dev: st.dev, ino: st.ino };
      }
      return {
        db,
        sql: new Statements(db),
        insertEvents: new EventRowInserts(db),
        legacyKeyExists: db.prepare('SELECT 1 AS x FROM events WHERE key = ?'),
        attrFind: db.prepare('SELECT id, last_ms, first_ms FROM attr_sets WHERE digest = ?'),
        // The new set's id is the insert's rowid: with attr_sets' indexes, RETURNING id made each insert cost
        // three times as much (measured: some 30 µs a set instead of 10).
        attrInsert: db.prepare(`INSERT INTO attr_sets (${ATTR_INSERT_COLUMNS.join(', ')}) VALUES (${ATTR_INSERT_COLUMNS.map(() => '?').join(', ')})`),
        attrTouch: db.prepare('UPDATE attr_sets SET last_ms = MAX(last_ms, ?), first_ms = MIN(first_ms, ?) WHERE id = ?'),
        upsertHook: db.prepare(
          `INSERT INTO hooks AS t (hook_id, hook_event, hook_name, first_seen, last_seen, ref) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT (hook_id) DO UPDATE SET first_seen = MIN(t.first_seen, excluded.first_seen), last_seen = MAX(t.last_seen, excluded.last_seen)`,
        ),
        upserts: { minute: upsert(ROLLUP_TABLES.minute), hour: upsert(ROLLUP_TABLES.hour), day: upsert(ROLLUP_TABLES.day) },
        dimUpserts: Object.fromEntries(DIM_FAMILY_NAMES.map((name) => {
          const f = DIM_FAMILY[name];
          return [name, { hour: dimUpsert(f.tables.hour, f.key), day: dimUpsert(f.tables.day, f.key) }];
        })) as Record<DimFamilyName, Record<DimGranularity, StatementSync>>,
        attrUpsert: db.prepare(
          `INSERT INTO ${ATTR_ROLLUP_TABLE} AS t (${[...ATTR_ROLLUP_KEY, ...COUNTER_COLUMNS].join(', ')}) VALUES (${[...ATTR_ROLLUP_KEY, ...COUNTER_COLUMNS].map(() => '?').join(', ')})
           ON CONFLICT (${ATTR_ROLLUP_KEY.join(', ')}) DO UPDATE SET ${upsertSetClause()}`,
        ),
        hookExists: db.prepare('SELECT 1 AS x FROM hooks WHERE hook_id = ?'),
        hookCount: db.prepare('SELECT COUNT(*) AS n FROM hooks'),
        file,
      };
    } catch (err) {
      db.close();
      throw schemaFailure(this.path, err);
    }
  }

  /** Why the file open is no longer the one at the path, or undefined while it is. */
  private fileProblem(): string | undefined {
    const opened = this.c.file;
    if (!opened) return undefined;
    try {
      const st = statSync(this.path);
      if (st.ino !== opened.ino || st.dev !== opened.dev) return 'the database file was replaced by another file';
      return undefined;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return code === 'ENOENT' || code === 'ENOTDIR' ? 'the database file was deleted' : `the database file cannot be checked (${code ?? 'error'})`;
    }
  }

  /** Enters the failed state: one log line with the path and the cause, not one per request. */
  private noteFault(cause: string, err?: unknown): void {
    if (this.fault !== undefined) return;
    this.fault = cause;
    this.logger?.error('store cannot keep data: refusing writes (503) until the database file is usable again', { path: this.path, cause, ...(err ? { error: describeSqliteError(err) } : {}) });
  }

  /** The periodic check: notices a lost file, and tries to recover while failed. */
  private check(): void {
    if (this.closed) return;
    const problem = this.fileProblem();
    if (problem) this.noteFault(problem);
    if (this.fault !== undefined) this.recover(true);
  }

  /**
   * Tries to leave the failed state (at most once a second unless forced). A deleted file is written back from
   * the connection that still holds it open (VACUUM INTO), so nothing committed before the loss is gone; when
   * that copy fails too a new empty database is created; a replaced file is opened as found. A fault of the file
   * itself (disk full, read-only, I/O) clears once a write goes through again; corruption only by replacing the file.
   */
  private recover(force = false): boolean {
    if (this.fault === undefined) return true;
    const now = Date.now();
    if (!force && now - this.lastRecoveryMs < MIN_RECOVERY_GAP_MS) return false;
    this.lastRecoveryMs = now;
    const problem = this.fileProblem();
    let how: string;
    try {
      if (problem !== undefined) {
        if (!existsSync(this.path)) {
          // The old WAL and shared-memory files belong to the lost database; a new file must not replay them.
          for (const suffix of ['-wal', '-shm', '-journal']) rmSync(this.path + suffix, { force: true });
          // The copy goes into an empty file made 0600, in a folder made 0700 when it is gone too: SQLite would
          // create the file with the umask's mode, readable by others for as long as the copy takes.
          createPrivateFile(this.path);
          try {
            this.c.db.exec(`VACUUM INTO ${sqlString(this.path)}`);
            how = 'restored every committed event from the still-open copy of the deleted file';
          } catch (err) {
            rmSync(this.path, { force: true });
            how = `created a new empty database (the open copy could not be read: ${describeSqliteError(err)})`;
          }
        } else {
          how = 'opened the file now at the path';
        }
        const old = this.c;
        try {
          old.db.close();
        } catch {
          // The old file may be unreadable; it is being replaced anyway.
        }
        this.c = this.connect();
        this.readers?.reopen();
        this.known.clear();
        this.attrs.clear();
        this.forgetAllSegments();
      } else {
        if (this.fault === CORRUPT_CAUSE) return false;
        // The same file: usable again once a write commits (space freed, made writable, device back).
        inTransaction(this.c.db, () => {
          this.c.sql.get(`INSERT INTO store_meta (key, value) VALUES ('write_probe', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`).run(String(now));
        });
        how = 'a write succeeded again';
      }
    } catch (err) {
      this.logger?.debug('store still cannot keep data', { path: this.path, error: describeSqliteError(err) });
      return false;
    }
    this.cleared(how);
    return true;
  }

  private cleared(how: string): void {
    // Connections that saw the fault are not trusted: the readers open the file afresh.
    this.readers?.reopen();
    this.logger?.info('store database is usable again', { path: this.path, previousCause: this.fault, recovery: how });
    this.fault = undefined;
  }

  /** The error for a request refused while failed. */
  private unavailable(): StoreUnavailableError {
    return new StoreUnavailableError(`store cannot keep data: ${this.fault ?? 'unknown fault'} (${this.path})`);
  }

  /** Maps a failure: file faults mark the store failed; they and lock contention are retryable (503). */
  private classify(err: unknown): Error {
    if (err instanceof StoreUnavailableError) return err;
    const fault = sqliteFault(err);
    if (fault) {
      // A file gone from its path explains the error it caused (a commit that cannot open its journal there):
      // that is the cause to report, whichever of the write and the periodic check notices it first.
      this.noteFault(this.fileProblem() ?? fault, err);
      return this.unavailable();
    }
    if (SQLITE_BUSY.test(describeSqliteError(err))) return new StoreUnavailableError(`store cannot write: ${describeSqliteError(err)}`);
    return err instanceof Error ? err : new Error(String(err));
  }

  /**
   * Runs a read; a file fault becomes a 503 and the failed state instead of a 500. Reads are tried even while
   * writes are refused: a full disk or a read-only file still serves the dashboard.
   */
  private read<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw this.classify(err);
    }
  }

  /**
   * Rows of a read query. Every query the API and the dashboard ask goes through here or `one`, so where reads
   * run (which connection, which thread) is decided in one place: on the read workers, or in this thread for
   * ':memory:'. A read issued after an ingest resolved sees its events (WAL: a read sees every earlier commit).
   */
  private async all(sql: string, params: readonly SQLInputValue[] = []): Promise<Record<string, unknown>[]> {
    if (!this.readers) return this.read(() => this.c.sql.get(sql).all(...params)) as Record<string, unknown>[];
    if (this.closed) throw new StoreUnavailableError('store is closed');
    try {
      return await (this.answers.getStore()?.session ?? this.readers).all(sql, params);
    } catch (err) {
      throw this.classify(err);
    }
  }

  /** The first row of a read query, or undefined. */
  private async one(sql: string, params: readonly SQLInputValue[] = []): Promise<Record<string, unknown> | undefined> {
    if (!this.readers) return this.read(() => this.c.sql.get(sql).get(...params)) as Record<string, unknown> | undefined;
    if (this.closed) throw new StoreUnavailableError('store is closed');
    try {
      return await (this.answers.getStore()?.session ?? this.readers).one(sql, params);
    } catch (err) {
      throw this.classify(err);
    }
  }

  /**
   * Reads an answer built of several queries (time segments, then the hooks' rows) in one snapshot: a session on
   * one read worker, in one read transaction (read-worker.ts), so a batch committed meanwhile is in all of the
   * answer or in none of it, never counted by one segment and not the next. The transaction lasts as long as the
   * answer's queries (no longer: WAL checkpoints wait for it); they run one after another on that worker. For
   * ':memory:' the queries run in this thread, none waiting for a later turn (an ingest commit does), so no
   * commit comes between them.
   *
   * The snapshot is taken before the answer looks at the closed segments kept (closedSegments): a segment kept
   * since before the answer began and still kept then is the same in the snapshot, whatever is committed later.
   */
  private async snapshot<T>(read: () => Promise<T>): Promise<T> {
    if (this.answers.getStore()) return read();
    const since = this.changes;
    const session = this.readers?.session();
    try {
      try {
        await session?.begin();
      } catch (err) {
        throw this.classify(err);
      }
      return await this.answers.run({ session, since }, read);
    } finally {
      session?.end();
    }
  }

  /** The change after which segments read now are the same (the start of the answer being read). */
  private get readSince(): number {
    return this.answers.getStore()?.since ?? this.changes;
  }

  /** Whether a change after change `since` touched time before `toMs` (true when the log no longer reaches back). */
  private changedSince(since: number, toMs: number): boolean {
    if (since >= this.changes) return false;
    if ((this.changeLog[0]?.n ?? Infinity) > since + 1) return true;
    for (let i = this.changeLog.length - 1; i >= 0 && (this.changeLog[i] as { n: number }).n > since; i--) {
      if ((this.changeLog[i] as { fromMs: number }).fromMs < toMs) return true;
    }
    return false;
  }

  private noteChange(fromMs: number): void {
    this.changeLog.push({ n: ++this.changes, fromMs });
    if (this.changeLog.length > CHANGE_LOG_SIZE) this.changeLog.shift();
  }

  /**
   * Runs a read whose rows may be kept for the closed time before `toMs`; `keep` says whether they still may, and
   * `since` from which change they hold.
   */
  private async readForCache<T>(toMs: number, fn: () => Promise<T>): Promise<{ rows: T; keep: boolean; since: number }> {
    const since = this.readSince;
    const rows = await fn();
    return { rows, keep: !this.changedSince(since, toMs), since };
  }

  /**
   * Group commit: batches that arrive while the event loop is busy wait for the next turn and are committed
   * together in one transaction (one sync to disk), each answered with its own result once it is durable.
   */
  ingest(events: HookEvent[]): Promise<IngestResult> {
    if (events.length === 0) return Promise.resolve({ inserted: [], duplicates: 0 });
    if (this.closed) return Promise.reject(new StoreUnavailableError('store is closed'));
    return new Promise((resolve, reject) => {
      this.waiting.push({ events, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /**
   * Commits every waiting batch in one transaction; on failure every one of them is refused. The file is checked
   * to still be the one at the path after the commit: a commit into a deleted file is not acknowledged.
   */
  private flush(): void {
    this.flushScheduled = false;
    const group = this.waiting.splice(0);
    if (group.length === 0) return;
    let results: IngestResult[];
    try {
      // A lost file is reopened (or written back) first; any other fault is probed by the commit itself.
      if (this.fault !== undefined && this.fileProblem() !== undefined && !this.recover()) throw this.unavailable();
      const nowMs = this.now();
      const expiredBeforeMs = expiredBefore(nowMs, this.retention?.eventsMs, this.pruned.eventsBeforeMs);
      results = inTransaction(this.c.db, () => {
        const all: HookEvent[] = [];
        const allAttrs: number[] = [];
        const out = group.map((w) => {
          const { kept, expired } = splitExpired(w.events, expiredBeforeMs);
          const { events, folded, overflowHooks } = this.foldBeyondLimit(kept);
          const candidates: HookEvent[] = [];
          const candidateAttrs: number[] = [];
          const rows: unknown[][] = [];
          for (const e of events) {
            if (e.legacyKey !== undefined && e.timeMs < this.legacyKeysBefore && this.c.legacyKeyExists.get(compactKey(e.legacyKey))) continue;
            const attrs = this.attrSet(e);
            candidates.push(e);
            candidateAttrs.push(attrs);
            rows.push(eventValues(e, attrs));
          }
          const inserted: HookEvent[] = [];
          this.c.insertEvents.insert(rows).forEach((stored, i) => {
            if (!stored) return;
            inserted.push(candidates[i] as HookEvent);
            allAttrs.push(candidateAttrs[i] as number);
          });
          all.push(...inserted);
          // The hooks table per batch: the next batch's fold sees the hooks this one added.
          this.applyHooks(inserted, nowMs);
          return { inserted, duplicates: kept.length - inserted.length, ...(folded > 0 ? { folded, overflowHooks } : {}), ...(expired > 0 ? { expired, expiredBeforeMs } : {}) };
        });
        // Once per commit: every batch's deltas folded together, one upsert per rollup row (the batches of a live
        // feed share their hooks and minutes: one upsert where each batch made its own).
        this.applyRollups(all);
        this.applyDimRollups(all);
        this.applyAttrRollups(all, allAttrs);
        return out;
      });
      const lost = this.fileProblem();
      if (lost !== undefined) {
        this.noteFault(lost);
        throw this.unavailable();
      }
      if (this.fault !== undefined) this.cleared('a commit succeeded again');
    } catch (err) {
      // Hooks and attribute sets admitted inside a rolled-back transaction were never written.
      this.known.clear();
      this.attrs.discard();
      const e = this.classify(err);
      for (const w of group) w.reject(e);
      return;
    }
    this.commits++;
    this.attrs.commit();
    this.forgetSegmentsAfter(results.flatMap((r) => r.inserted));
    group.forEach((w, i) => w.resolve(results[i] as IngestResult));
  }

  /** The id of the event's attribute set, created or its last_ms moved as needed (inside the ingest transaction). */
  private attrSet(e: HookEvent): number {
    const { tuple, values } = AttrSetCache.tuple(e);
    const hit = this.attrs.get(tuple, e.timeMs);
    if (hit) return hit.id;
    let set = this.attrs.peek(tuple);
    if (!set) {
      const digest = attrDigest(values);
      const row = this.c.attrFind.get(digest) as { id: number; last_ms: number; first_ms: number } | undefined;
      if (!row) {
        const { lastMs, firstMs } = coveringBounds(e.timeMs);
        const { lastInsertRowid } = this.c.attrInsert.run(digest, lastMs, firstMs, ...values);
        set = { id: Number(lastInsertRowid), lastMs, firstMs };
        this.attrs.note(tuple, set);
        return set.id;
      }
      set = { id: Number(row.id), lastMs: Number(row.last_ms), firstMs: Number(row.first_ms) };
    }
    if (set.lastMs < e.timeMs || set.firstMs > e.timeMs) {
      const { lastMs, firstMs } = coveringBounds(e.timeMs, set);
      this.c.attrTouch.run(lastMs, firstMs, set.id);
      set = { id: set.id, lastMs, firstMs };
    }
    this.attrs.note(tuple, set);
    return set.id;
  }

  /** Moves the events of hooks past store.maxHooks onto overflow hooks (inside the ingest transaction). */
  private foldBeyondLimit(events: HookEvent[]): { events: HookEvent[]; folded: number; overflowHooks: string[] } {
    const unknown = this.known.unknown(events);
    if (unknown.length === 0) return { events, folded: 0, overflowHooks: [] };
    const existing = new Set(unknown.filter((id) => this.c.hookExists.get(id) !== undefined));
    this.known.add(existing);
    if (existing.size === unknown.length) return { events, folded: 0, overflowHooks: [] };
    const count = Number((this.c.hookCount.get() as { n: number }).n);
    const r = foldNewHooks(events, (id) => this.known.has(id) || existing.has(id) || this.c.hookExists.get(id) !== undefined, count, this.maxHooks);
    this.known.add(r.events.map((e) => e.hookId));
    return r;
  }

  /**
   * Drops the kept segments that the committed events fall into. A live feed only sends what just happened, so
   * only the last minutes' segments go; a late event drops everything from its time on.
   */
  private forgetSegmentsAfter(events: readonly HookEvent[]): void {
    if (events.length === 0) return;
    let earliest = Infinity;
    for (const e of events) if (e.timeMs < earliest) earliest = e.timeMs;
    this.noteChange(earliest);
    this.closedSegments.deleteWhere((seg) => seg.toMs > earliest);
    this.closedFleet.deleteWhere((seg) => seg.toMs > earliest);
  }

  private forgetAllSegments(): void {
    this.noteChange(-Infinity);
    this.closedSegments.clear();
    this.closedFleet.clear();
  }

  /** The hooks table's rows of one batch's inserted events: their names, first and last seen (not after `nowMs`). */
  private applyHooks(events: HookEvent[], nowMs: number): void {
    if (events.length === 0) return;
    for (const [id, h] of hooksSeen(events, nowMs)) this.c.upsertHook.run(id, h.event.hookEvent, h.event.hookName, h.firstMs, h.lastMs, hookRef(id));
  }

  /** The minute, hour and day rollups of a commit's inserted events: one upsert per (hook, bucket, client). */
  private applyRollups(events: HookEvent[]): void {
    if (events.length === 0) return;
    const rows = groupForRollups(events);
    for (const g of GRANULARITIES) {
      const stmt = this.c.upserts[g];
      for (const r of rows[g]) stmt.run(r.hookId, r.bucket, r.serviceName, r.serviceVersion, ...COUNTER_COLUMNS.map((c) => r.row[c]));
    }
  }

  private applyDimRollups(events: HookEvent[]): void {
    if (events.length === 0) return;
    const dimRows = groupForDimRollups(events, this.rolled);
    for (const family of DIM_FAMILY_NAMES) {
      for (const g of DIM_GRANULARITIES) {
        const stmt = this.c.dimUpserts[family][g];
        for (const r of dimRows[family][g]) stmt.run(...r.key, ...COUNTER_COLUMNS.map((c) => r.row[c]));
      }
    }
  }

  /** The hourly rollup per (hook, attribute set) (attr-rollups.ts): one upsert per row per commit. */
  private applyAttrRollups(events: HookEvent[], attrIds: number[]): void {
    if (events.length === 0) return;
    for (const r of groupForAttrRollups(events, attrIds)) this.c.attrUpsert.run(BigInt(r.hook), r.bucket, r.attrs, ...COUNTER_COLUMNS.map((c) => r.row[c]));
  }

  async hook(id: string): Promise<HookInfo | undefined> {
    const r = await this.one('SELECT hook_id, hook_event, hook_name, first_seen, last_seen FROM hooks WHERE hook_id = ?', [id]);
    return r ? toInfo(r) : undefined;
  }

  hooks(ids: readonly string[]): Promise<Map<string, HookInfo>> {
    return ids.length === 0 ? Promise.resolve(new Map()) : this.infos(ids);
  }

  /**
   * Rows of counter columns for [from, to), by grouping: from the base rollups, the dimension rollups (whole
   * hours and days; the rest from raw events) or the raw events, as planRead decides from the filters.
   */
  private async aggregate(q: RangeQuery, grouping: Grouping, hooks?: string | readonly string[]): Promise<Map<string, CounterRow>> {
    const out = new Map<string, CounterRow>();
    // A copy of a row the first time its key comes (merging mutates the row it merges into, and segments kept in
    // closedSegments are read again), merged into after that.
    const add = (key: string, row: CounterRow): void => {
      const cur = out.get(key);
      if (cur) mergeRow(cur, row);
      else out.set(key, { ...row });
    };
    // One hook (its page, a breakdown), or a few (RangeQuery.hookIds: rows past the fleet series' riskiest).
    const hookId = typeof hooks === 'string' && hooks !== '' ? hooks : undefined;
    const few = typeof hooks === 'object' ? hooks : undefined;
    const scope = few ? hookScope((column) => `${column} IN (SELECT value FROM json_each(?))`) : undefined;
    const hookParam = hookId ? [hookId] : few ? [JSON.stringify(few)] : [];
    const someHooks = hookId !== undefined || few !== undefined;
    const filters = q.filters ?? {};
    // Built first: each refuses a filter on an unknown dimension whatever is read. A stretch picks the matching
    // sets live in it (used since its start, begun before its end) through whichever bound finds fewer
    // (liveLead); the filter values, then the two bounds, are the parameters.
    const [liveFirst, filterParams] = this.filterClause(filters, 'sets', [], true, { to: '?', lead: 'first' });
    const [liveLast] = this.filterClause(filters, 'sets', [], true, { to: '?', lead: 'last' });
    const live = { first: liveFirst, last: liveLast };
    // One hook's partial hours at a range's edges: its few events each look up their own set (attrFilter 'row').
    const [rowWhere] = this.filterClause(filters, 'row');
    const liveParams = (fromMs: number, toMs: number): SQLInputValue[] => (filterParams.length > 0 ? [...filterParams, fromMs, toMs] : filterParams);
    const rollupHookClause = hookId ? 'AND hook_id = ?' : scope?.byId ?? '';
    // Events name their hook by number: grouped by it, the id is looked up once per group.
    const eventHookClause = hookId ? `AND hook = ${hookRefOf('?')}` : scope?.byRef ?? '';
    // Over attr_sets' columns (attrGroupedEventsQuery); built first too, so an unknown dimension is refused.
    const attrGroup = grouping === 'hook' ? '' : eventGroupExprs(grouping, (d) => this.attrExpr(d)).join(' || char(0) || ');
    const rollupGroup = rollupGroupColumns(grouping).join(' || char(0) || ');
    // Per hook and value: the rollups' key is the hook's id and the value; the attribute sets' queries name the
    // hook's id (`h`) apart from the value, joined to the same key here.
    const hookAs = groupsPerHook(grouping) ? 'h' : undefined;
    const keyOf = (r: Record<string, unknown>): string => (r['h'] === undefined ? String(r['g']) : `${String(r['h'])}\u0000${String(r['g'])}`);
    const plan = planRead(filters, grouping, this.rolled);
    const filterKey = JSON.stringify(Object.entries(filters).sort());
    // Only minute segments reach into the minute still being written; everything before it is closed.
    const nowMs = Date.now();
    const openFrom = Math.floor(nowMs / MINUTE) * MINUTE;
    // Decided once, by time: which minutes the minute rollups, the raw events or whole hours answer.
    const sources = minuteSources(nowMs, this.retention, this.pruned);
    const liveWhere = (seg: Segment): string => live[liveLead(seg.fromMs, seg.toMs, nowMs, sources.eventsFrom)];
    type Part = Segment & { events: boolean };
    // What the rollups cannot serve reads the rollup per attribute set for its whole hours and days
    // (attr-rollups.ts), the raw events for the rest.
    const attrRolled = (seg: Part): boolean => plan.source === 'raw' && seg.granularity !== 'minute';
    const readsEvents = (seg: Part): boolean => (plan.source === 'raw' ? !attrRolled(seg) : seg.events) || (plan.source === 'dims' && dimGranularity(seg.granularity) === undefined);
    // Segments are read in the answer's snapshot (`snapshot`), one after another on its read worker.
    const parts: Part[] = segments(q.fromMs, q.toMs, openFrom).flatMap((planned) => resolveSegment(planned, plan.source === 'raw', sources));
    const read = async (seg: Part): Promise<[string, CounterRow][]> => {
      const dimG = plan.source === 'dims' ? dimGranularity(seg.granularity) : undefined;
      const fromEvents = readsEvents(seg);
      const fromAttrs = attrRolled(seg);
      const source = fromEvents ? 'events' : fromAttrs ? ATTR_ROLLUP_TABLE : dimG !== undefined ? (grouping === 'client' ? DIM_CLIENT_TABLES : DIM_ROLLUP_TABLES)[dimG] : ROLLUP_TABLES[seg.granularity];
      // A closed segment only changes when an event for its time arrives or a prune removes rows (both drop it
      // from the cache), so a dashboard refreshing a 30-day view re-reads only the open minute, filtered or not.
      // Not a few hooks' (asked once per screenful of rows): kept, they would push out what every refresh reads.
      const cacheable = seg.toMs <= openFrom && few === undefined;
      const key = `${source}|${filterKey}|${seg.fromMs}|${seg.toMs}|${JSON.stringify(grouping)}|${hookId ?? ''}`;
      // Kept since before this answer began: the same in its snapshot.
      const found = cacheable ? this.closedSegments.get(key) : undefined;
      // Found, it is the most recently used: eviction takes the oldest first, never the 30-day segments read every refresh.
      const kept = found && found.since <= this.readSince ? found : undefined;
      let rows = kept?.rows;
      if (!rows) {
        let fetch: () => Promise<Record<string, unknown>[]>;
        if (fromEvents) {
          // Across all hooks, read the time range through the time index: grouped by hook, the planner would
          // rather skip-scan (hook_id, time_ms) once per hook, 10 times slower over 30 days (9.7 s instead of
          // 1.0 s at 2 million events).
          const table = someHooks ? 'events' : 'events INDEXED BY events_time';
          // Across hooks, the matching sets live in the stretch are tested in the index (events_time
          // holds each event's set), even for a range's partial hours at its edges: cheaper than looking up each
          // event's own set (a team's 46 minutes at 10 M events a month: 2.0 ms against 7.4).
          const byRow = someHooks && seg.toMs - seg.fromMs <= HOUR;
          const cond = `time_ms >= ? AND time_ms < ? ${eventHookClause} ${byRow ? rowWhere : liveWhere(seg)}`;
          const params = [seg.fromMs, seg.toMs, ...hookParam, ...(byRow ? filterParams : liveParams(seg.fromMs, seg.toMs))];
          // Folded first, per hook or, grouped by attributes (a user, a session, a client), per attribute set,
          // each set looked up once (sql.ts foldedEvents).
          const sql = grouping === 'hook' ? hookGroupedEventsQuery('g', cond, table) : attrGroupedEventsQuery(`${attrGroup} AS g`, 'g', cond, table, hookAs);
          fetch = () => this.all(sql, params);
        } else if (fromAttrs) {
          // Its columns are named as the events' (hook, attrs): the same hook and filter clauses apply.
          const sql = attrRollupQuery(grouping === 'hook' ? null : `${attrGroup} AS g`, 'g', `bucket >= ? AND bucket < ? ${eventHookClause} ${liveWhere(seg)}`, hookAs);
          const params = [seg.fromMs, seg.toMs, ...hookParam, ...liveParams(seg.fromMs, seg.toMs)];
          fetch = () => this.all(sql, params);
        } else {
          const rollupParams: SQLInputValue[] = [];
          const cond = rollupWhere(plan, dimG !== undefined, (v) => {
            rollupParams.push(v);
            return '?';
          });
          // Minutes across all hooks (at most an hour's worth, read on every refresh): through the bucket
          // index. Grouped by hook, the planner would rather seek the primary key once per hook (1,000 hooks:
          // 18 ms for an empty minute instead of 0.05); for the long hour and day segments that is the faster plan.
          const table = !someHooks && seg.granularity === 'minute' && dimG === undefined ? `${source} INDEXED BY ${source}_bucket` : source;
          // Hours and days across all hooks: a hook at a time through the primary key (everyHookByKey).
          const byKey = !someHooks && seg.granularity !== 'minute' && dimG === undefined ? `AND ${everyHookByKey('hook_id')}` : '';
          const sql = `SELECT ${rollupGroup} AS g, ${rollupAggregates()} FROM ${table} WHERE bucket >= ? AND bucket < ? ${rollupHookClause} ${byKey} ${cond} GROUP BY g`;
          const params = [seg.fromMs, seg.toMs, ...hookParam, ...rollupParams];
          fetch = () => this.all(sql, params);
        }
        const result = await this.readForCache(seg.toMs, fetch);
        rows = result.rows.map((r) => [keyOf(r), fromDbRow(r)]);
        // In place of a stale entry under the same key, whose rows no longer count.
        if (cacheable && result.keep) this.closedSegments.set(key, { toMs: seg.toMs, since: result.since, rows });
      }
      return rows;
    };
    for (const rows of await Promise.all(parts.map(read))) for (const [g, row] of rows) add(g, row);
    return out;
  }

  /**
   * How a series under `q.filters` is read: base rollups, dimension rollups or the rollup per attribute set
   * (steps of whole hours: their buckets are exact, the hour being written included), or raw events. Returns seriesQuery's arguments and the filter
   * parameters.
   */
  private seriesSource(q: SeriesQuery): { filterWhere: string | null; rollup: RollupFilter | undefined; params: SQLInputValue[] } {
    const filters = q.filters ?? {};
    const [where, filterParams] = this.filterClause(filters);
    const plan = planRead(filters, 'hook', this.rolled);
    const minuteStep = granularityForStep(q.stepMs) === 'minute';
    // What no rollup of a value keeps, at a step of whole hours: the rollup per attribute set.
    if (plan.source === 'raw' && !minuteStep) return { filterWhere: null, rollup: { dims: false, attrs: true, where }, params: filterParams };
    if (plan.source === 'raw' || (plan.source === 'dims' && minuteStep)) return { filterWhere: where, rollup: undefined, params: filterParams };
    const params: SQLInputValue[] = [];
    const dims = plan.source === 'dims';
    const rollupCond = rollupWhere(plan, dims, (v) => {
      params.push(v);
      return '?';
    });
    return { filterWhere: null, rollup: { dims, where: rollupCond }, params };
  }

  /** Filters on rows naming their attribute set, in attrFilter's form `form`. */
  private filterClause(filters: Record<string, string>, form: 'sets' | 'row' = 'sets', params: SQLInputValue[] = [], liveFrom = false, live: LiveTo = {}): [string, SQLInputValue[]] {
    const entries = Object.entries(filters);
    // With liveFrom the clause ends in one more placeholder: the rows' earliest time (attrFilter liveFrom), and
    // with `live.to` another, their end.
    const clause = attrFilter(entries.map(([dim, value]) => [this.attrExpr(dim), '?', value === ''] as const), form, liveFrom ? '?' : undefined, live);
    params.push(...entries.map(([, value]) => value));
    return [clause === '' ? '' : `AND ${clause}`, params];
  }

  /** A dimension as an expression over attr_sets' columns. */
  private attrExpr(dim: string): string {
    return attrExpr(this.dims, dim);
  }

  hookCounters(q: RangeQuery): Promise<Map<string, HookCounters & { info: HookInfo }>> {
    return this.snapshot(() => hookCountersFrom(q, (hooks) => this.aggregate(q, 'hook', hooks), (ids) => this.infos(ids)));
  }

  /** The named hooks' rows in one statement: the cost follows the hooks in range, not every hook in the table. */
  private async infos(ids: readonly string[]): Promise<Map<string, HookInfo>> {
    const rows = await this.all('SELECT hook_id, hook_event, hook_name, first_seen, last_seen FROM hooks WHERE hook_id IN (SELECT value FROM json_each(?))', [JSON.stringify(ids)]);
    return new Map(rows.map((r) => [String(r['hook_id']), toInfo(r)]));
  }

  async overflowHooks(): Promise<HookInfo[]> {
    return (await this.all(OVERFLOW_HOOKS)).map(toInfo);
  }

  async latePersisted(q: LatePersistedQuery): Promise<Map<string, Arrival>> {
    // Built first: an unknown dimension is refused whether or not anything arrived late.
    const sql = latePersistedQuery((n) => `?${n}`, q.dimension === undefined ? undefined : this.attrExpr(q.dimension), LATE_PERSISTED_EVENTS);
    const rows = await this.all(sql, [q.receivedFromMs, q.receivedToMs, q.eventBeforeMs]);
    return rows.length === 0 ? new Map() : toArrivals(rows, await this.infos(rows.map((r) => String(r['g']))));
  }

  async lateFolded(q: ArrivalQuery): Promise<Map<string, Arrival>> {
    const rows = await this.all(lateArrivalsQuery((n) => `?${n}`, LATE_ARRIVAL_EVENTS), [q.receivedFromMs, q.receivedToMs, q.eventBeforeMs]);
    if (rows.length === 0) return new Map();
    // The late events over the cap of the other hooks are the persisted rule's.
    const infos = await this.infos(rows.map((r) => String(r['g'])));
    return toArrivals(rows, new Map([...infos].filter(([, info]) => isOverflowHook(info))));
  }

  series(hookId: string, q: SeriesQuery): Promise<Map<number, HookCounters>> {
    return this.snapshot(() => this.readSeries(hookId, q));
  }

  private async readSeries(hookId: string, q: SeriesQuery): Promise<Map<number, HookCounters>> {
    const { fromMs, parts, edges } = this.seriesParts(q);
    const whole = async (): Promise<[number, CounterRow][]> => {
      const rows: [number, CounterRow][] = [];
      for (const part of parts) {
        const { sql } = seriesQuery(q, part.filterWhere, () => '?', part.rollup, part.granularity);
        for (const r of await this.all(sql, [hookId, part.fromMs, part.toMs, ...part.params])) rows.push([Number(r['b']), fromDbRow(r)]);
      }
      return rows;
    };
    const [rows, partial] = await Promise.all([whole(), this.seriesEdges(q, edges, hookId)]);
    return new Map([...mergeSeries([...rows, ...hookEdgeRows(partial, hookId)], fromMs)].map(([b, row]) => [b, toCounters(row)]));
  }

  /** The partial buckets at a series range's ends (seriesSpans), each read as the range's figures read it. */
  private seriesEdges(q: SeriesQuery, edges: readonly SeriesEdge[], hooks?: string | readonly string[]): Promise<EdgeRows> {
    return readEdges(edges, (fromMs, toMs) => this.aggregate({ fromMs, toMs, filters: q.filters }, 'hook', hooks));
  }

  /**
   * Where each part of a series is read: its whole buckets as seriesSource decides or, at a minute step, split by
   * age (minute-sources.ts) into whole hours, raw events and minute rollups; its partial buckets (`edges`) as
   * range reads read them. `readFromMs` and `readToMs` bound what the parts read.
   */
  private seriesParts(q: SeriesQuery): { fromMs: number; readFromMs: number; readToMs: number; parts: SeriesPart[]; edges: SeriesEdge[] } {
    const filters = q.filters ?? {};
    // Built first: it refuses a filter on an unknown dimension.
    const [eventsWhere, eventsParams] = this.filterClause(filters);
    const plan = planRead(filters, 'hook', this.rolled);
    const { fromMs, spans, edges } = seriesSpans(q, this.retention, plan.source === 'raw', Date.now(), this.pruned);
    const parts = spans.map((span): SeriesPart => {
      if (span.source === 'planned') return { ...this.seriesSource(q), fromMs: span.fromMs, toMs: span.toMs };
      if (span.source === 'events') return { filterWhere: eventsWhere, rollup: undefined, params: [...eventsParams], fromMs: span.fromMs, toMs: span.toMs };
      const params: SQLInputValue[] = [];
      const dims = plan.source === 'dims';
      const where = rollupWhere(plan, dims, (v) => {
        params.push(v);
        return '?';
      });
      return { filterWhere: null, rollup: { dims, where }, params, granularity: 'hour', fromMs: span.fromMs, toMs: span.toMs };
    });
    const readFromMs = parts[0]?.fromMs ?? fromMs;
    return { fromMs, readFromMs, readToMs: Math.max(readFromMs, parts.at(-1)?.toMs ?? readFromMs), parts, edges };
  }


  fleetSeries(q: SeriesQuery): Promise<FleetBucket[]> {
    return q.hookIds?.length === 0 ? Promise.resolve([]) : this.snapshot(() => this.readFleetSeries(q));
  }

  private async readFleetSeries(q: SeriesQuery): Promise<FleetBucket[]> {
    const { fromMs, readFromMs, readToMs, parts, edges } = this.seriesParts(q);
    // A few hooks (RangeQuery.hookIds): their rows only, each hook's through its own index.
    const scope = q.hookIds ? hookScope((column) => `${column} IN (SELECT value FROM json_each(?))`) : undefined;
    const scopeParams = q.hookIds ? [JSON.stringify(q.hookIds)] : [];
    const readPart = async (part: SeriesPart, a: number, b: number): Promise<FleetBucket[]> => {
      if (b <= a) return [];
      // Every hook's hours or days: a hook at a time through the primary key (everyHookByKey).
      const byKey = !scope && this.longRollup(q, part) ? { byId: `AND ${everyHookByKey('hook_id')}`, byRef: '' } : scope;
      const { sql } = fleetSeriesQuery(q, part.filterWhere, () => '?', part.rollup, part.granularity, byKey);
      // Across every hook, read the range through the time indexes, not a seek per hook.
      const indexed = part.filterWhere === null || scope ? sql : sql.replace('FROM events WHERE', 'FROM events INDEXED BY events_time WHERE');
      return (await this.all(indexed, [a, b, ...scopeParams, ...part.params])).map(toFleetBucket);
    };
    const read = async (a: number, b: number): Promise<FleetBucket[]> => {
      const out: FleetBucket[] = [];
      // A part starting before `a` (the whole hour at the range's start) is read whole when `a` is the range's start.
      // Row by row, not spread as arguments: a part holds up to MAX_FLEET_HOOK_BUCKETS rows, past what a call takes.
      for (const part of parts) for (const r of await readPart(part, a <= readFromMs ? part.fromMs : Math.max(a, part.fromMs), Math.min(b, part.toMs))) out.push(r);
      // One part of the step's own table (the dashboard's recent charts) has nothing to merge.
      return parts.length === 1 && parts[0]?.granularity === undefined ? out : mergeFleet(out, fromMs);
    };
    // The partial buckets at the range's ends: buckets of their own, apart from the whole ones the parts read.
    const [whole, partial] = await Promise.all([this.wholeFleetBuckets(q, `s${hooksDigest(q.hookIds)}`, fromMs, readFromMs, readToMs, parts, read), this.seriesEdges(q, edges, q.hookIds)]);
    return [...whole, ...edgeFleetBuckets(partial)];
  }

  fleetRest(q: SeriesQuery, listed: readonly string[]): Promise<FleetRestBucket[]> {
    return q.hookIds?.length === 0 ? Promise.resolve([]) : this.snapshot(() => this.readFleetRest(q, listed));
  }

  private async readFleetRest(q: SeriesQuery, listed: readonly string[]): Promise<FleetRestBucket[]> {
    const { fromMs, readFromMs, readToMs, parts, edges } = this.seriesParts(q);
    const except = new Set(listed);
    // A few hooks (RangeQuery.hookIds): those not listed, each through its own index; every hook: all but the listed.
    const rest = q.hookIds?.filter((id) => !except.has(id));
    if (rest?.length === 0) return [];
    const scope = hookScope((column) => `${column} ${rest ? 'IN' : 'NOT IN'} (SELECT value FROM json_each(?))`);
    // Every hook but the listed, in hours or days: a hook at a time through the primary key (everyHookByKey).
    const byKey = { byId: `AND ${everyHookByKey('hook_id', 'hook_id NOT IN (SELECT value FROM json_each(?))')}`, byRef: '' };
    const scopeParams = [JSON.stringify(rest ?? listed)];
    const read = async (a: number, b: number): Promise<FleetRestBucket[]> => {
      const statements: string[] = [];
      const params: SQLInputValue[] = [];
      for (const part of parts) {
        // A part starting before `a` (the whole hour at the range's start) is read whole when `a` is the range's start.
        const [pa, pb] = [a <= readFromMs ? part.fromMs : Math.max(a, part.fromMs), Math.min(b, part.toMs)];
        if (pb <= pa) continue;
        const { sql } = fleetSeriesQuery(q, part.filterWhere, () => '?', part.rollup, part.granularity, !rest && this.longRollup(q, part) ? byKey : scope, false);
        // Across the fleet, read the range through the time indexes, not a seek per hook.
        statements.push(part.filterWhere === null || rest ? sql : sql.replace('FROM events WHERE', 'FROM events INDEXED BY events_time WHERE'));
        params.push(pa, pb, ...scopeParams, ...part.params);
      }
      return statements.length === 0 ? [] : (await this.all(fleetRestQuery(statements, fromMs), params)).map(toFleetRest);
    };
    // The partial buckets at the range's ends: read per hook as the range's figures are, those listed left out.
    // Kept as the sums of these hooks (r+) or of every hook but these (r-): the same ids name different sums.
    const [whole, partial] = await Promise.all([this.wholeFleetBuckets(q, rest ? `r+${hooksDigest(rest)}` : `r-${hooksDigest(listed)}`, fromMs, readFromMs, readToMs, parts, read), this.seriesEdges(q, edges, rest)]);
    return addFleetRest(whole, edgeFleetBuckets(partial).filter((b) => !except.has(b.hookId)));
  }

  /** Whether a part of a series reads a base rollup of hours or days, keyed by hook id first (everyHookByKey). */
  private longRollup(q: SeriesQuery, part: SeriesPart): boolean {
    return part.filterWhere === null && part.rollup?.attrs !== true && part.rollup?.dims !== true && (part.granularity ?? granularityForStep(q.stepMs)) !== 'minute';
  }

  /**
   * The fleet series' whole buckets (or their sums: fleetRest), those before the one being written kept until an
   * event for their time arrives. `scope` names what `read` reads beside the range (which hooks, summed or not);
   * `fromMs` is the first bucket's start, which the rows before it count in.
   */
  private async wholeFleetBuckets<T>(q: SeriesQuery, scope: string, fromMs: number, readFromMs: number, readToMs: number, parts: readonly SeriesPart[], read: (a: number, b: number) => Promise<T[]>): Promise<T[]> {
    if (Object.keys(q.filters ?? {}).length > 0) return read(readFromMs, readToMs);
    // Buckets before the one being written only change when an event for their time arrives (which drops
    // them): an overview refreshing its 30-day fleet chart re-reads only the open bucket.
    const openFrom = Math.min(readToMs, Math.max(readFromMs, Math.floor(Date.now() / q.stepMs) * q.stepMs));
    // Where the parts meet is part of what was read: a cached chart is one of the same sources.
    // The first bucket's start too: rows before it (the whole hour a minute step's range starts in) count in it.
    const key = `${scope}|${q.stepMs}|${fromMs}|${readFromMs}|${openFrom}|${parts.map((p) => `${p.granularity ?? ''}${p.filterWhere === null ? 'r' : 'e'}${p.fromMs}`).join(',')}`;
    const found = this.closedFleet.get(key);
    let closed = found && found.since <= this.readSince ? (found.rows as readonly T[]) : undefined;
    if (!closed) {
      const r = await this.readForCache(openFrom, () => read(readFromMs, openFrom));
      closed = r.rows;
      if (r.keep) this.closedFleet.set(key, { toMs: openFrom, since: r.since, rows: closed });
    }
    return [...closed, ...(await read(openFrom, readToMs))];
  }

  async clientVersions(q: RangeQuery): Promise<ClientVersion[]> {
    const rows = await this.snapshot(() => this.aggregate(q, 'client'));
    return [...rows.entries()].map(([key, row]) => {
      const [serviceName = '', version = ''] = key.split('\u0000');
      const c = toCounters(row);
      return { serviceName, version, executions: c.executions, sizeUnknownExecutions: c.sizeUnknownExecutions, hasSizeData: c.executions > c.sizeUnknownExecutions };
    }).sort((a, b) => b.executions - a.executions);
  }

  async breakdown(hookId: string, dimension: string, q: RangeQuery): Promise<BreakdownRow[]> {
    // A rolled dimension from its rollups; user.*, session.id from the raw events of this one hook (dim-rollups.ts).
    const rows = await this.snapshot(() => this.aggregate(q, { dimension }, hookId));
    return [...rows.entries()].map(([value, row]) => ({ value, ...toCounters(row) })).sort((a, b) => b.executions - a.executions);
  }

  fleetBreakdown(dimension: string, q: RangeQuery): Promise<Map<string, BreakdownRow[]>> {
    return this.snapshot(() => fleetBreakdownFrom(q, async (hooks) => {
      const rows = await this.aggregate(q, { dimension, perHook: true }, hooks);
      // The key is the hook's id, then the value (which may itself hold the separator).
      return [...rows].map(([key, row]) => {
        const at = key.indexOf('\u0000');
        return [key.slice(0, at), key.slice(at + 1), row] as const;
      });
    }));
  }

  async recordGuardTrims(trims: GuardTrim[]): Promise<GuardTrim[]> {
    if (trims.length === 0) return [];
    return this.sideWrite(() => trims.filter((t) => Number(this.c.sql.get(GUARD_SQL.insert).run(...guardTrimValues(t)).changes) > 0));
  }

  async guardTrims(hookId: string, q: SeriesQuery): Promise<GuardTrimStats> {
    const params = [hookId, q.fromMs, q.toMs];
    const buckets = await this.all(GUARD_SQL.buckets, [...params, q.stepMs]);
    return guardTrimStats(buckets, await this.all(GUARD_SQL.largest, params));
  }

  async coverage(q: RangeQuery, dimension?: string): Promise<Coverage> {
    const plan = planRead(q.filters ?? {}, dimension === undefined ? 'hook' : { dimension }, this.rolled);
    return coveredRange(q.fromMs, q.toMs, plan.source === 'raw', minuteSources(Date.now(), this.retention, this.pruned));
  }

  async lastEventMs(filters?: Record<string, string>): Promise<number | null> {
    if (filters && Object.keys(filters).length > 0) {
      // Built first: it refuses a filter on an unknown dimension.
      this.filterClause(filters);
      return newestFilteredEvent(planRead(filters, 'hook', this.rolled), {
        newestSeen: () => this.lastEventMs(),
        newestIn: async (fromMs, toMs) => {
          // A bounded stretch looks up each event's own set; an unbounded one picks the matching sets first.
          const [where, params] = this.filterClause(filters, fromMs === undefined ? 'sets' : 'row');
          const within = `${fromMs === undefined ? '' : `AND time_ms >= ${fromMs}`} ${toMs === undefined ? '' : `AND time_ms < ${toMs}`}`;
          const e = await this.one(`SELECT time_ms AS t FROM events INDEXED BY events_time WHERE kind = ${KIND_CODES.complete} ${within} ${where} ORDER BY time_ms DESC LIMIT 1`, params);
          return e ? Number(e['t']) : null;
        },
        newestHour: () => this.newestFilteredHour(filters),
      });
    }
    const r = await this.one('SELECT MAX(last_seen) AS t FROM hooks');
    return r?.['t'] === null || r?.['t'] === undefined ? null : Number(r['t']);
  }

  /**
   * The newest hour in which an execution matches the filter, from the hourly dimension rollups or the rollup
   * per attribute set; null when none does, undefined when the filter is on the base rollups' keys only.
   */
  private async newestFilteredHour(filters: Record<string, string>): Promise<number | null | undefined> {
    const plan = planRead(filters, 'hook', this.rolled);
    if (plan.source === 'rollups') return undefined;
    const params: SQLInputValue[] = [];
    // A filter no rollup of a value keeps: the rollup per attribute set, through its (attrs, bucket) index.
    const [table, cond] = plan.source === 'raw'
      ? [ATTR_ROLLUP_TABLE, this.filterClause(filters, 'sets', params)[0]]
      : [DIM_ROLLUP_TABLES.hour, rollupWhere(plan, true, (v) => {
        params.push(v);
        return '?';
      })];
    const r = await this.one(`SELECT MAX(bucket) AS b FROM ${table} WHERE executions > 0 ${cond}`, params);
    return r?.['b'] === null || r?.['b'] === undefined ? null : Number(r['b']);
  }

  /**
   * Retention, statement by statement with a turn of the event loop between them (paced.ts): a first pass over a
   * large file (thousands of hooks, a day of minute rollups) deletes hundreds of thousands of rows on the
   * connection ingest commits on, and held the event loop for seconds, OTLP requests and /healthz waiting. Each
   * statement commits on its own, so an ingest commit between two finds every table consistent, and a pass
   * stopped at a pause (signal) leaves the rest to the next one.
   */
  async prune(eventsBefore: number, rollupsBeforeMs: number, signal?: AbortSignal): Promise<PruneResult> {
    const result: PruneResult = { events: 0, rollups: 0, hooks: 0, guardTrims: 0 };
    await untilStopped(runPaced(this.pruneSteps(result, eventsBefore, rollupsBeforeMs), undefined, signal), signal);
    return result;
  }

  /**
   * One retention statement, `yield` after it. Caches of what it may have deleted are dropped at once, before the
   * pause: an ingest commit or a read in the pause must not count on a hook, an attribute set or a segment gone.
   */
  private runPrune(sql: string, params: readonly SQLInputValue[], forget?: 'hooks' | 'attrs' | 'segments'): number {
    if (this.closed) throw new StoreUnavailableError('store is closed');
    const n = Number(this.read(() => this.c.sql.get(sql).run(...params).changes));
    if (n > 0 && forget === 'hooks') this.known.clear();
    if (n > 0 && forget === 'attrs') this.attrs.clear();
    if (n > 0 && forget === 'segments') this.forgetAllSegments();
    return n;
  }

  /**
   * A delete of at most PRUNE_BATCH rows, run again until it deletes fewer; `count` is told what each one deleted
   * (a pass stopped between two keeps what they deleted until then).
   */
  private *pruneBatches(sql: string, params: readonly SQLInputValue[], forget?: 'hooks' | 'attrs' | 'segments', count?: (n: number) => void): Generator<void, void, void> {
    for (;;) {
      const n = this.runPrune(sql, params, forget);
      count?.(n);
      if (n < PRUNE_BATCH) return;
      yield;
    }
  }

  /** The statements of a pass, what they delete added to `result` as they go. */
  private *pruneSteps(result: PruneResult, eventsBefore: number, rollupsBeforeMs: number): Generator<void, void, void> {
    const add = (kind: 'events' | 'rollups' | 'hooks' | 'guardTrims') => (n: number): void => {
      result[kind] += n;
    };
    // Whole hours of events (minute-sources.ts), and minute rollups by their own horizon.
    const eventsBeforeMs = eventsPruneBound(eventsBefore);
    const minutesBeforeMs = minuteRollupsPruneBound(Date.now(), eventsBeforeMs, this.retention);
    // Noted before anything is deleted: from now on no read counts on what goes.
    this.pruned = laterBounds(this.pruned, { eventsBeforeMs, minutesBeforeMs, rollupsBeforeMs });
    this.read(() => this.c.sql.get('INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(PRUNED_BEFORE_META, JSON.stringify(this.pruned)));
    yield* this.pruneBatches(`DELETE FROM events WHERE id IN (SELECT id FROM events WHERE time_ms < ? LIMIT ${PRUNE_BATCH})`, [eventsBeforeMs], 'segments', add('events'));
    yield* this.pruneBatches(`DELETE FROM guard_trims WHERE dedup_key IN (SELECT dedup_key FROM guard_trims WHERE time_ms < ? LIMIT ${PRUNE_BATCH})`, [eventsBefore], undefined, add('guardTrims'));
    const key = '(hook_id, bucket, service_name, service_version)';
    const rollups = (t: string, where: string, bound: number): Generator<void, void, void> => this.pruneBatches(`DELETE FROM ${t} WHERE ${key} IN (SELECT ${key.slice(1, -1)} FROM ${t} WHERE ${where} LIMIT ${PRUNE_BATCH})`, [bound], 'segments', add('rollups'));
    const hookIds = (this.read(() => this.c.sql.get('SELECT hook_id FROM hooks').all()) as { hook_id: string }[]).map((r) => r.hook_id);
    yield* this.pruneAttrRollups(eventsBeforeMs);
    yield* rollups(ROLLUP_TABLES.minute, 'bucket < ?', minutesBeforeMs);
    yield* rollups(ROLLUP_TABLES.hour, 'bucket < ?', rollupsBeforeMs);
    yield* rollups(ROLLUP_TABLES.day, 'bucket < ?', rollupsBeforeMs);
    // Dimension rollups are hours and days: they go with retention.rollups like the base ones (not counted in
    // `rollups`, which counts the base rows whatever the dimensions configured).
    yield* this.pruneDims(hookIds, rollupsBeforeMs);
    yield* this.pruneBatches(`DELETE FROM hooks WHERE hook_id IN (${ORPHAN_HOOKS} LIMIT ${PRUNE_BATCH})`, [], 'hooks', add('hooks'));
    // Attribute sets no event in retention can reference (last_ms covers every event of the set).
    yield* this.pruneBatches(`DELETE FROM attr_sets WHERE id IN (SELECT id FROM attr_sets WHERE last_ms < ? LIMIT ${PRUNE_BATCH})`, [eventsBeforeMs], 'attrs');
  }

  /** The dimension rollups' rows past the bound, a statement per few hooks, table and dimension. */
  private *pruneDims(hookIds: readonly string[], bound: number): Generator<void, void, void> {
    for (let i = 0; i < hookIds.length; i += DIM_PRUNE_HOOKS) {
      const chunk = JSON.stringify(hookIds.slice(i, i + DIM_PRUNE_HOOKS));
      for (const t of Object.values(DIM_ROLLUP_TABLES)) {
        const sql = dimPruneSql(t, 'hook_id IN (SELECT value FROM json_each(?1))', (k) => `?${k}`);
        for (const dim of this.rolled) {
          this.runPrune(sql, [chunk, dim, bound], 'segments');
          yield;
        }
      }
    }
    for (const t of Object.values(DIM_CLIENT_TABLES)) {
      const sql = dimClientPruneSql(t, (k) => `?${k}`);
      for (const dim of this.rolled) {
        this.runPrune(sql, [dim, bound], 'segments');
        yield;
      }
    }
  }

  /**
   * The rollup per attribute set goes with the events (attr-rollups.ts): whole hours past the bound in batches,
   * then the hour holding it folded again from its events left, in one transaction.
   */
  private *pruneAttrRollups(bound: number): Generator<void, void, void> {
    const { old, edge } = attrRollupPruneSql(bound);
    const key = `(${ATTR_ROLLUP_KEY.join(', ')})`;
    yield* this.pruneBatches(`DELETE FROM ${ATTR_ROLLUP_TABLE} WHERE ${key} IN (SELECT ${ATTR_ROLLUP_KEY.join(', ')} FROM ${ATTR_ROLLUP_TABLE} WHERE ${old} LIMIT ${PRUNE_BATCH})`, [], 'segments');
    if (this.closed) throw new StoreUnavailableError('store is closed');
    if (edge.length === 0) return;
    this.read(() => inTransaction(this.c.db, () => { for (const s of edge) this.c.db.exec(s); }));
    // A read in a pause before may have kept the hour as it was.
    this.forgetAllSegments();
  }

  async recordTranscriptFindings(findings: TranscriptFinding[]): Promise<FindingsResult> {
    if (findings.length === 0) return { inserted: 0, duplicates: 0 };
    const inserted = this.sideWrite(() => {
      const insert = this.c.sql.get(
        `INSERT INTO transcript_findings (${FINDING_COLUMNS.join(', ')}) SELECT ${FINDING_COLUMNS.map(() => '?').join(', ')}
         WHERE ${notStoredUnderPreviousId('?')} ${FINDING_ON_CONFLICT}`,
      );
      return uniqueFindings(findings).reduce((n, f) => n + Number(insert.run(...findingValues(f), f.previousId ?? null).changes), 0);
    });
    return { inserted, duplicates: findings.length - inserted };
  }

  async pruneTranscriptFindings(beforeMs: number, signal?: AbortSignal): Promise<number> {
    let total = 0;
    await untilStopped(runPaced(this.pruneBatches(`DELETE FROM transcript_findings WHERE finding_id IN (SELECT finding_id FROM transcript_findings WHERE time_ms < ? LIMIT ${PRUNE_BATCH})`, [beforeMs], undefined, (n) => {
      total += n;
    }), undefined, signal), signal);
    return total;
  }

  async transcriptCommands(hookId: string, q: RangeQuery): Promise<TranscriptCommandRow[]> {
    const rows = await this.all(commandsQuery(() => '?'), [hookId, q.fromMs, q.toMs]);
    return rows.map(toCommandRow);
  }

  async metaValue(key: string, create: () => string): Promise<string> {
    this.sideWrite(() => this.c.sql.get('INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING').run(key, create()));
    return String((await this.one('SELECT value FROM store_meta WHERE key = ?', [key]))?.['value']);
  }

  /**
   * A write outside the grouped ingest commit (transcript findings, guard trims, store_meta), under the same
   * rules: refused while the file is lost, faults mark the store failed and answer 503.
   */
  private sideWrite<T>(fn: () => T): T {
    if (this.closed) throw new StoreUnavailableError('store is closed');
    try {
      if (this.fault !== undefined && this.fileProblem() !== undefined && !this.recover()) throw this.unavailable();
      const result = inTransaction(this.c.db, fn);
      const lost = this.fileProblem();
      if (lost !== undefined) {
        this.noteFault(lost);
        throw this.unavailable();
      }
      return result;
    } catch (err) {
      throw this.classify(err);
    }
  }

  async diskUsage(): Promise<StoreSize | undefined> {
    return sqliteFileBytes(this.path);
  }

  /** Ready when the file opened is still the one at the path and the last fault has cleared. */
  async ping(): Promise<void> {
    if (this.closed) throw new Error('store is closed');
    const problem = this.fileProblem();
    if (problem) this.noteFault(problem);
    if (this.fault !== undefined && !this.recover()) throw new Error(`store cannot keep data: ${this.fault} (${this.path})`);
    this.read(() => this.c.sql.get('SELECT 1').get());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.checkTimer) clearInterval(this.checkTimer);
    // Batches already handed over are committed (and answered) before the file closes.
    this.flush();
    this.closed = true;
    await this.readers?.close();
    this.c.db.close();
  }
}
