/**
 * The embedded default store: SQLite through node:sqlite (no native addon to compile). WAL mode; each ingest
 * is one transaction, committed (and with synchronous=FULL, synced) before the OTLP 200 goes out.
 */
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import type { BreakdownRow, ClientVersion, HookCounters } from '../../../../shared/src/api.ts';
import type { HookEvent } from '../../hooks/model.ts';
import { COUNTER_COLUMNS, GRANULARITIES, fromDbRow, groupForRollups, mergeRow, toCounters, type CounterRow } from '../counters.ts';
import { MINUTE, segments, type Granularity } from '../segments.ts';
import { EVENT_COLUMNS, LEGACY_KEYS_BEFORE, eventValues, seriesQuery, fleetSeriesQuery, toFleetBucket, ROLLUP_TABLES, coreSchemaDdl, sqlString, timeOrderedKeysDdl, toInfo, dimensionExpr, eventAggregates, rollupAggregates, upsertSetClause } from '../sql.ts';
import { Statements, inTransaction, openSqlite } from './database.ts';
import { StoreUnavailableError, type HookInfo, type IngestResult, type PruneResult, type RangeQuery, type SeriesQuery, type Store, type FleetBucket } from '../store.ts';

export interface SqliteStoreOptions {
  path: string;
  synchronous?: 'full' | 'normal';
  /** Extra dimension attribute keys (config `dimensions`). */
  dimensions?: readonly string[];
}

/** Versioned migrations; append only. Version n is MIGRATIONS[n - 1]. */
export const MIGRATIONS: readonly string[] = [
  coreSchemaDdl({ int: 'INTEGER', flag: 'INTEGER', id: 'INTEGER PRIMARY KEY', json: 'TEXT', rollupTableOptions: ' WITHOUT ROWID' }),
  // 2: keys begin with the event time.
  timeOrderedKeysDdl({ nowMs: "CAST(unixepoch('subsec') * 1000 AS INTEGER)", greatest: 'MAX' }),
];

/** Cached closed segments at most (a 30-day view needs about five). */
const CLOSED_SEGMENT_CACHE_SIZE = 512;

/** SQLite result codes that mean "cannot write now, try later" (read-only file, disk full, I/O, locked). */
const RETRYABLE = /SQLITE_(READONLY|FULL|IOERR|BUSY|LOCKED|CANTOPEN|PERM)|database is locked|readonly|disk is full|disk I\/O error|unable to open/i;

function classify(err: unknown): Error {
  const msg = err instanceof Error ? err.message : String(err);
  const code = (err as { errstr?: string; code?: string })?.errstr ?? '';
  if (RETRYABLE.test(msg) || RETRYABLE.test(code)) return new StoreUnavailableError(`store cannot write: ${msg}`);
  return err instanceof Error ? err : new Error(msg);
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  private readonly db: DatabaseSync;
  /** Statements of queries and prunes, prepared once. */
  private readonly sql: Statements;
  private readonly dims: readonly string[];
  private closed = false;
  /** Batches waiting for the next group commit. */
  private readonly waiting: { events: HookEvent[]; resolve: (r: IngestResult) => void; reject: (e: Error) => void }[] = [];
  private flushScheduled = false;
  /** Transactions committed by ingest (one per group of batches). */
  commits = 0;
  /** Aggregates of rollup segments that ended before the current minute, by segment and grouping. */
  private readonly closedSegments = new Map<string, { toMs: number; rows: [string, CounterRow][] }>();
  /** Fleet series over closed buckets, dropped like closedSegments when an event for their time arrives. */
  private readonly closedFleet = new Map<string, { toMs: number; rows: FleetBucket[] }>();
  private readonly insertEvent: StatementSync;
  private readonly legacyKeyExists: StatementSync;
  /** Events before this time may already be stored under their bare-hash key (see sql.ts timeOrderedKeysDdl). */
  private readonly legacyKeysBefore: number;
  private readonly upsertHook: StatementSync;
  private readonly upserts: Record<Granularity, StatementSync>;

  constructor(opts: SqliteStoreOptions) {
    this.db = openSqlite(opts.path, opts.synchronous);
    this.db.exec('PRAGMA foreign_keys = ON;');
    this.sql = new Statements(this.db);
    this.dims = opts.dimensions ?? [];
    this.migrate();
    this.insertEvent = this.db.prepare(
      `INSERT INTO events (${EVENT_COLUMNS.join(', ')}) VALUES (${EVENT_COLUMNS.map(() => '?').join(', ')}) ON CONFLICT (dedup_key) DO NOTHING`,
    );
    this.legacyKeyExists = this.db.prepare('SELECT 1 AS x FROM events WHERE dedup_key = ?');
    const legacy = this.db.prepare('SELECT value FROM store_meta WHERE key = ?').get(LEGACY_KEYS_BEFORE) as { value: string } | undefined;
    this.legacyKeysBefore = legacy ? Number(legacy.value) : -Infinity;
    this.upsertHook = this.db.prepare(
      `INSERT INTO hooks AS t (hook_id, hook_event, hook_name, first_seen, last_seen) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (hook_id) DO UPDATE SET first_seen = MIN(t.first_seen, excluded.first_seen), last_seen = MAX(t.last_seen, excluded.last_seen)`,
    );
    const cols = ['hook_id', 'bucket', 'service_name', 'service_version', ...COUNTER_COLUMNS];
    const upsert = (table: string): StatementSync =>
      this.db.prepare(
        `INSERT INTO ${table} AS t (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})
         ON CONFLICT (hook_id, bucket, service_name, service_version) DO UPDATE SET ${upsertSetClause()}`,
      );
    this.upserts = { minute: upsert(ROLLUP_TABLES.minute), hour: upsert(ROLLUP_TABLES.hour), day: upsert(ROLLUP_TABLES.day) };
  }

  private migrate(): void {
    this.db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
    const row = this.db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null };
    const current = row.v ?? 0;
    if (current > MIGRATIONS.length) {
      throw new Error(`the database schema is version ${current}, newer than this hookwatch (${MIGRATIONS.length}); upgrade hookwatch`);
    }
    for (let v = current; v < MIGRATIONS.length; v++) {
      inTransaction(this.db, () => {
        this.db.exec(MIGRATIONS[v] as string);
        this.db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(v + 1, Date.now());
      });
    }
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

  /** Commits every waiting batch in one transaction; on failure every one of them is refused. */
  private flush(): void {
    this.flushScheduled = false;
    const group = this.waiting.splice(0);
    if (group.length === 0) return;
    let results: IngestResult[];
    try {
      results = inTransaction(this.db, () => {
        const all: HookEvent[] = [];
        const out = group.map((w) => {
          const inserted: HookEvent[] = [];
          for (const e of w.events) {
            if (e.legacyKey !== undefined && e.timeMs < this.legacyKeysBefore && this.legacyKeyExists.get(e.legacyKey)) continue;
            const r = this.insertEvent.run(...(eventValues(e) as SQLInputValue[]));
            if (Number(r.changes) > 0) inserted.push(e);
          }
          all.push(...inserted);
          return { inserted, duplicates: w.events.length - inserted.length };
        });
        this.applyRollups(all);
        return out;
      });
    } catch (err) {
      const e = classify(err);
      for (const w of group) w.reject(e);
      return;
    }
    this.commits++;
    this.forgetSegmentsAfter(results.flatMap((r) => r.inserted));
    group.forEach((w, i) => w.resolve(results[i] as IngestResult));
  }


  /**
   * Drops the kept segments that the committed events fall into. A live feed only sends what just happened, so
   * only the last minutes' segments go; a late event drops everything from its time on.
   */
  private forgetSegmentsAfter(events: readonly HookEvent[]): void {
    if ((this.closedSegments.size === 0 && this.closedFleet.size === 0) || events.length === 0) return;
    let earliest = Infinity;
    for (const e of events) if (e.timeMs < earliest) earliest = e.timeMs;
    for (const [key, seg] of this.closedSegments) if (seg.toMs > earliest) this.closedSegments.delete(key);
    for (const [key, seg] of this.closedFleet) if (seg.toMs > earliest) this.closedFleet.delete(key);
  }

  private applyRollups(events: HookEvent[]): void {
    const { hooks, rows } = groupForRollups(events, Date.now());
    for (const [id, h] of hooks) this.upsertHook.run(id, h.event.hookEvent, h.event.hookName, h.firstMs, h.lastMs);
    for (const g of GRANULARITIES) {
      const stmt = this.upserts[g];
      for (const r of rows[g]) stmt.run(r.hookId, r.bucket, r.serviceName, r.serviceVersion, ...COUNTER_COLUMNS.map((c) => r.row[c]));
    }
  }

  async hook(id: string): Promise<HookInfo | undefined> {
    const r = this.sql.get('SELECT hook_id, hook_event, hook_name, first_seen, last_seen FROM hooks WHERE hook_id = ?').get(id) as Record<string, unknown> | undefined;
    return r ? toInfo(r) : undefined;
  }

  /** Rows of counter columns for [from, to), grouped by `groupBy` (SQL over rollups or events). */
  private aggregate(q: RangeQuery, groupBy: string, hookId?: string, forceEvents = false): Map<string, CounterRow> {
    const out = new Map<string, CounterRow>();
    const add = (key: string, row: CounterRow): void => {
      const cur = out.get(key);
      if (cur) mergeRow(cur, row);
      else out.set(key, row);
    };
    const hookClause = hookId ? 'AND hook_id = ?' : '';
    const hookParam = hookId ? [hookId] : [];
    const filters = q.filters ?? {};
    const fromEvents = forceEvents || Object.keys(filters).length > 0;
    const [where, filterParams] = fromEvents ? this.filterClause(filters) : ['', []];
    // Only minute segments reach into the minute still being written; everything before it is closed.
    const openFrom = Math.floor(Date.now() / MINUTE) * MINUTE;
    for (const seg of segments(q.fromMs, q.toMs, openFrom)) {
      // A closed segment only changes when an event for its time arrives or a prune removes rows (both drop it
      // from the cache), so a dashboard refreshing a 30-day view re-reads only the open minute, filtered or not.
      const cacheable = seg.toMs <= openFrom;
      const source = fromEvents ? `events|${JSON.stringify(Object.entries(filters).sort())}` : seg.granularity;
      const key = `${source}|${seg.fromMs}|${seg.toMs}|${groupBy}|${hookId ?? ''}`;
      const kept = cacheable ? this.closedSegments.get(key) : undefined;
      let rows = kept?.rows;
      if (kept) {
        // Most recently used last: eviction takes the oldest first, never the 30-day segments read every refresh.
        this.closedSegments.delete(key);
        this.closedSegments.set(key, kept);
      }
      if (!rows) {
        let sql: string;
        if (fromEvents) {
          // Filters and breakdowns need the raw events (rollups carry no per-user or per-team keys). Across all
          // hooks, read the time range through the time index: grouped by hook, the planner would rather
          // skip-scan (hook_id, time_ms) once per hook, 10 times slower over 30 days (9.7 s instead of 1.0 s
          // at 2 million events).
          const table = hookId ? 'events' : 'events INDEXED BY events_time';
          sql = `SELECT ${groupBy} AS g, ${eventAggregates()} FROM ${table} WHERE time_ms >= ? AND time_ms < ? ${hookClause} ${where} GROUP BY g`;
        } else {
          // Minutes across all hooks (at most an hour's worth, read on every refresh): through the bucket
          // index. Grouped by hook, the planner would rather seek the primary key once per hook (1,000 hooks:
          // 18 ms for an empty minute instead of 0.05); for the long hour and day segments that is the faster plan.
          const rollup = ROLLUP_TABLES[seg.granularity];
          const table = !hookId && seg.granularity === 'minute' ? `${rollup} INDEXED BY ${rollup}_bucket` : rollup;
          sql = `SELECT ${groupBy} AS g, ${rollupAggregates()} FROM ${table} WHERE bucket >= ? AND bucket < ? ${hookClause} GROUP BY g`;
        }
        const params = fromEvents ? [seg.fromMs, seg.toMs, ...hookParam, ...filterParams] : [seg.fromMs, seg.toMs, ...hookParam];
        rows = (this.sql.get(sql).all(...params) as Record<string, unknown>[]).map((r) => [String(r['g']), fromDbRow(r)]);
        if (cacheable) {
          if (this.closedSegments.size >= CLOSED_SEGMENT_CACHE_SIZE) this.closedSegments.delete(this.closedSegments.keys().next().value as string);
          this.closedSegments.set(key, { toMs: seg.toMs, rows });
        }
      }
      // Copies: merging mutates the row it merges into.
      for (const [g, row] of rows) add(g, { ...row });
    }
    return out;
  }

  private filterClause(filters: Record<string, string>): [string, string[]] {
    const parts: string[] = [];
    const params: string[] = [];
    for (const [dim, value] of Object.entries(filters)) {
      parts.push(`AND ${this.dimExpr(dim)} = ?`);
      params.push(value);
    }
    return [parts.join(' '), params];
  }

  private dimExpr(dim: string): string {
    return dimensionExpr(dim, this.dims, (key) => `json_extract(extra, '$.' || ${sqlString(JSON.stringify(key))})`);
  }

  async hookCounters(q: RangeQuery): Promise<Map<string, HookCounters & { info: HookInfo }>> {
    const rows = this.aggregate(q, 'hook_id', q.hookId);
    const out = new Map<string, HookCounters & { info: HookInfo }>();
    if (rows.size === 0) return out;
    // One statement for every hook's name rather than a lookup per hook: overviews list them all.
    const infos = q.hookId
      ? this.sql.get('SELECT hook_id, hook_event, hook_name, first_seen, last_seen FROM hooks WHERE hook_id = ?').all(q.hookId)
      : this.sql.get('SELECT hook_id, hook_event, hook_name, first_seen, last_seen FROM hooks').all();
    const byId = new Map((infos as Record<string, unknown>[]).map((r) => [String(r['hook_id']), r]));
    for (const [id, row] of rows) {
      const info = byId.get(id);
      if (info) out.set(id, { ...toCounters(row), info: toInfo(info) });
    }
    return out;
  }

  async series(hookId: string, q: SeriesQuery): Promise<Map<number, HookCounters>> {
    const [where, filterParams] = q.filters && Object.keys(q.filters).length > 0 ? this.filterClause(q.filters) : [null, []];
    const { sql, fromMs, toMs } = seriesQuery(q, where, () => '?');
    const rows = this.sql.get(sql).all(hookId, fromMs, toMs, ...filterParams) as Record<string, unknown>[];
    return new Map(rows.map((r) => [Number(r['b']), toCounters(fromDbRow(r))]));
  }

  async fleetSeries(q: SeriesQuery): Promise<FleetBucket[]> {
    const [where, filterParams] = q.filters && Object.keys(q.filters).length > 0 ? this.filterClause(q.filters) : [null, []];
    const { sql, fromMs, toMs } = fleetSeriesQuery(q, where, () => '?');
    // Across every hook, read the range through the time indexes, not a seek per hook.
    const indexed = where === null ? sql : sql.replace('FROM events WHERE', 'FROM events INDEXED BY events_time WHERE');
    const read = (a: number, b: number): FleetBucket[] => (b <= a ? [] : (this.sql.get(indexed).all(a, b, ...filterParams) as Record<string, unknown>[]).map(toFleetBucket));
    if (where !== null) return read(fromMs, toMs);
    // Buckets before the one being written only change when an event for their time arrives (which drops
    // them): an overview refreshing its 30-day fleet chart re-reads only the open bucket.
    const openFrom = Math.min(toMs, Math.max(fromMs, Math.floor(Date.now() / q.stepMs) * q.stepMs));
    const key = `${q.stepMs}|${fromMs}|${openFrom}`;
    let closed = this.closedFleet.get(key)?.rows;
    if (!closed) {
      closed = read(fromMs, openFrom);
      if (this.closedFleet.size >= 16) this.closedFleet.delete(this.closedFleet.keys().next().value as string);
      this.closedFleet.set(key, { toMs: openFrom, rows: closed });
    }
    return [...closed, ...read(openFrom, toMs)];
  }

  async clientVersions(q: RangeQuery): Promise<ClientVersion[]> {
    const rows = this.aggregate(q, `service_name || char(0) || service_version`);
    return [...rows.entries()].map(([key, row]) => {
      const [serviceName = '', version = ''] = key.split('\u0000');
      const c = toCounters(row);
      return { serviceName, version, executions: c.executions, sizeUnknownExecutions: c.sizeUnknownExecutions, hasSizeData: c.executions > c.sizeUnknownExecutions };
    }).sort((a, b) => b.executions - a.executions);
  }

  async breakdown(hookId: string, dimension: string, q: RangeQuery): Promise<Omit<BreakdownRow, 'status'>[]> {
    const expr = this.dimExpr(dimension);
    // Rollups carry no per-user or per-team keys: a breakdown reads the raw events (kept for retention.events).
    const rows = this.aggregate(q, `COALESCE(${expr}, '')`, hookId, true);
    return [...rows.entries()].map(([value, row]) => ({ value, ...toCounters(row) })).sort((a, b) => b.executions - a.executions);
  }

  async lastEventMs(filters?: Record<string, string>): Promise<number | null> {
    if (filters && Object.keys(filters).length > 0) {
      const [where, params] = this.filterClause(filters);
      const e = this.sql.get(`SELECT time_ms AS t FROM events INDEXED BY events_time WHERE kind = 'complete' ${where} ORDER BY time_ms DESC LIMIT 1`).get(...params) as { t: number } | undefined;
      return e ? Number(e.t) : null;
    }
    const r = this.sql.get('SELECT MAX(last_seen) AS t FROM hooks').get() as { t: number | null };
    return r.t === null ? null : Number(r.t);
  }

  async prune(eventsBeforeMs: number, rollupsBeforeMs: number): Promise<PruneResult> {
    const result: PruneResult = { events: 0, rollups: 0 };
    const batch = (sql: string, ...params: number[]): number => {
      let total = 0;
      for (;;) {
        const n = Number(this.sql.get(sql).run(...params).changes);
        total += n;
        if (n < 5000) return total;
      }
    };
    result.events = batch('DELETE FROM events WHERE id IN (SELECT id FROM events WHERE time_ms < ? LIMIT 5000)', eventsBeforeMs);
    const key = '(hook_id, bucket, service_name, service_version)';
    const rollups = (t: string, before: number): number => batch(`DELETE FROM ${t} WHERE ${key} IN (SELECT ${key.slice(1, -1)} FROM ${t} WHERE bucket < ? LIMIT 5000)`, before);
    result.rollups += rollups(ROLLUP_TABLES.minute, eventsBeforeMs);
    result.rollups += rollups(ROLLUP_TABLES.hour, rollupsBeforeMs);
    result.rollups += rollups(ROLLUP_TABLES.day, rollupsBeforeMs);
    if (result.events > 0 || result.rollups > 0) {
      this.closedSegments.clear();
      this.closedFleet.clear();
    }
    return result;
  }

  async ping(): Promise<void> {
    if (this.closed) throw new Error('store is closed');
    this.sql.get('SELECT 1').get();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // Batches already handed over are committed (and answered) before the file closes.
    this.flush();
    this.closed = true;
    this.db.close();
  }
}
