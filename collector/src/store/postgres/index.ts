/**
 * The shared store for several replicas: PostgreSQL through `pg`. Versioned migrations run at start under an
 * advisory lock, so replicas starting together apply each migration once. Each ingest is one transaction:
 * events go in with ON CONFLICT (dedup_key) DO NOTHING RETURNING, and only the returned (new) events are added
 * to the rollups by upsert, so a batch retried on another replica is never counted twice and concurrent
 * replicas never lose a count. Rows are written in key order so concurrent batches cannot deadlock each other.
 */
import pg from 'pg';
import type { BreakdownRow, ClientVersion, HookCounters } from '../../../../shared/src/api.ts';
import type { HookEvent } from '../../hooks/model.ts';
import type { Logger } from '../../telemetry/logger.ts';
import { COUNTER_COLUMNS, GRANULARITIES, fromDbRow, groupForRollups, mergeRow, toCounters, type CounterRow } from '../counters.ts';
import { alignRange, segments } from '../segments.ts';
import { DEFAULT_MAX_HOOKS, KnownHooks, foldNewHooks, overflowIds } from '../hook-limit.ts';
import { EVENT_COLUMNS, LEGACY_KEYS_BEFORE, ORPHAN_HOOKS, OVERFLOW_HOOKS, arrivalTimeDdl, eventValues, latePersistedQuery, seriesQuery, fleetSeriesQuery, toFleetBucket, ROLLUP_TABLES, coreSchemaDdl, sqlString, timeOrderedKeysDdl, toInfo, dimensionExpr, eventAggregates, rollupAggregates, upsertSetClause } from '../sql.ts';
import type { TranscriptCommandRow } from '../../../../shared/src/transcript-api.ts';
import type { TranscriptFinding } from '../../hooks/transcript-findings.ts';
import { FINDING_COLUMNS, commandsQuery, findingValues, toCommandRow, transcriptFindingsDdl, type FindingsResult } from '../transcript-findings.ts';
import { guardTrimSql, guardTrimStats, guardTrimValues, guardTrimsDdl, type GuardTrim, type GuardTrimStats } from '../guard-trims.ts';
import { inTransaction } from './connection.ts';
import { StoreUnavailableError, type Arrival, type ArrivalQuery, type HookInfo, type IngestResult, type PruneResult, type RangeQuery, type SeriesQuery, type Store, type FleetBucket } from '../store.ts';

export interface PostgresStoreOptions {
  /** postgres:// URL; its password never appears in logs or errors. */
  url: string;
  /** Extra dimension attribute keys (config `dimensions`). */
  dimensions?: readonly string[];
  /** Connections in this replica's pool (ingest and other writes). */
  poolSize?: number;
  /** store.readers: connections of the read pool that answers queries, apart from the writers (default 2). */
  readers?: number;
  logger?: Logger;
  /** Rows deleted per statement by prune (bounded so retention never holds long locks). */
  pruneBatch?: number;
  /** store.maxHooks: events of further hook names are counted under overflow hooks (approximate across replicas). */
  maxHooks?: number;
}

/** Advisory lock key that serialises migrations across replicas (any constant; "hookwatch" in ASCII, truncated). */
const MIGRATION_LOCK_KEY = 0x686f6f6b77;

const GUARD_SQL = guardTrimSql((n) => `$${n}`);

/** Versioned migrations; append only. Version n is MIGRATIONS[n - 1]. */
export const MIGRATIONS: readonly string[] = [
  `${coreSchemaDdl({ int: 'BIGINT', flag: 'SMALLINT', id: 'BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY', json: 'JSONB', rollupTableOptions: '' })}
  CREATE TABLE leader_lease (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    epoch BIGINT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
  );`,
  // 2: alert state shared by replicas (alerting/state-store.ts contract).
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
];

/** PostgreSQL type of each event column, for the unnest() batch insert. */
const EVENT_TYPES: Record<(typeof EVENT_COLUMNS)[number], string> = {
  dedup_key: 'text', kind: 'text', hook_id: 'text', time_ms: 'int8', num_hooks: 'int8', num_success: 'int8', num_blocking: 'int8',
  num_non_blocking_error: 'int8', num_cancelled: 'int8', duration_ms: 'int8', stdout_chars: 'int8', additional_context_chars: 'int8',
  system_message_chars: 'int8', initial_user_message_chars: 'int8', outputs_persisted: 'int8', sizes_known: 'int2', status: 'text',
  service_name: 'text', service_version: 'text', session_id: 'text', user_id: 'text', user_email: 'text', user_account_uuid: 'text',
  organization_id: 'text', terminal_type: 'text', source: 'text', extra: 'jsonb', received_ms: 'int8',
};

const ROLLUP_KEY = ['hook_id', 'bucket', 'service_name', 'service_version'] as const;

/**
 * SQLSTATE classes where a retry can help: connection exceptions (08), serialization failure and deadlock (40),
 * insufficient resources (53), operator intervention such as a shutdown or failover (57), read-only replica (25006).
 */
const RETRYABLE_SQLSTATE = /^(08|40|53|57)|^25006$/;
const RETRYABLE_NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
/** Conflicts between concurrent transactions that a fresh attempt of the same transaction resolves. */
const CONFLICT_SQLSTATE = new Set(['40001', '40P01']);
const INGEST_ATTEMPTS = 4;

/** Removes the URL's password (raw and percent-encoded) from a message. */
export function scrubSecret(message: string, url: string): string {
  let out = message;
  try {
    const u = new URL(url);
    for (const s of [url, u.password, decodeURIComponent(u.password)]) {
      if (s && s.length >= 4) out = out.split(s).join(s === url ? '<db url>' : '<redacted>');
    }
  } catch {
    out = out.split(url).join('<db url>');
  }
  return out;
}

export class PostgresStore implements Store {
  /** Events before this time may already be stored under their bare-hash key (see sql.ts timeOrderedKeysDdl). */
  private legacyKeysBefore = -Infinity;
  readonly kind = 'postgres';
  readonly maxHooks: number;
  private readonly known: KnownHooks;
  private readonly pool: pg.Pool;
  /**
   * Queries (the API, the dashboard, alert evaluation) run on their own pool: a burst of dashboard queries holds
   * these connections, never the ones an ingest transaction needs, so an OTLP request never waits behind one.
   */
  private readonly readPool: pg.Pool;
  private readonly url: string;
  private readonly dims: readonly string[];
  private readonly logger: Logger | undefined;
  private readonly pruneBatch: number;
  private closed: Promise<void> | undefined;

  private constructor(opts: PostgresStoreOptions) {
    this.url = opts.url;
    this.dims = opts.dimensions ?? [];
    this.logger = opts.logger;
    this.pruneBatch = opts.pruneBatch ?? 5000;
    this.maxHooks = opts.maxHooks ?? DEFAULT_MAX_HOOKS;
    this.known = new KnownHooks(this.maxHooks);
    const pool = (max: number, applicationName: string): pg.Pool => {
      const p = new pg.Pool({
        connectionString: opts.url,
        max,
        connectionTimeoutMillis: 10_000,
        idleTimeoutMillis: 30_000,
        application_name: applicationName,
        // A stuck statement must not hold an OTLP request (and its row locks) forever.
        statement_timeout: 60_000,
        idle_in_transaction_session_timeout: 60_000,
      });
      // An idle connection dropped by the server (restart, failover) must not crash the process.
      p.on('error', (err) => this.logger?.warn('postgres connection lost', { err: this.describe(err) }));
      return p;
    };
    this.pool = pool(opts.poolSize ?? 10, 'hookwatch');
    this.readPool = pool(opts.readers ?? 2, 'hookwatch-read');
  }

  /** Connects, applies pending migrations (once across replicas) and returns the store. */
  static async open(opts: PostgresStoreOptions): Promise<PostgresStore> {
    const store = new PostgresStore(opts);
    try {
      await store.migrate();
    } catch (err) {
      await store.pool.end().catch(() => {});
      await store.readPool.end().catch(() => {});
      throw store.classify(err, 'cannot open the PostgreSQL store');
    }
    return store;
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

  private async migrate(): Promise<void> {
    const current = await inTransaction(this.pool, async (client) => {
      // Held until COMMIT: a second replica starting now waits here, then finds every migration applied.
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())');
      const r = await client.query<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations');
      const from = r.rows[0]?.v ?? 0;
      if (from > MIGRATIONS.length) {
        throw new Error(`the database schema is version ${from}, newer than this hookwatch (${MIGRATIONS.length}); upgrade hookwatch`);
      }
      for (let v = from; v < MIGRATIONS.length; v++) {
        await client.query(MIGRATIONS[v] as string);
        await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [v + 1]);
      }
      return from;
    }, this.onLost);
    if (current < MIGRATIONS.length) this.logger?.info('postgres schema migrated', { from: current, to: MIGRATIONS.length });
    const legacy = await this.pool.query<{ value: string }>('SELECT value FROM store_meta WHERE key = $1', [LEGACY_KEYS_BEFORE]);
    this.legacyKeysBefore = legacy.rows[0] ? Number(legacy.rows[0].value) : -Infinity;
  }

  /** A connection lost during a transaction: the request in flight gets a 503, the pool reconnects. */
  private readonly onLost = (err: Error): void => {
    this.logger?.warn('postgres connection lost during a transaction', { err: this.describe(err) });
  };

  async ingest(events: HookEvent[]): Promise<IngestResult> {
    if (events.length === 0) return { inserted: [], duplicates: 0 };
    // One row per dedup key, in key order: a batch repeating a key counts it once, and every transaction takes
    // its row locks in the same order, so overlapping batches from several replicas queue instead of deadlocking.
    const unique = new Map<string, HookEvent>();
    for (const e of events) if (!unique.has(e.dedupKey)) unique.set(e.dedupKey, e);
    const sorted = [...unique.values()].sort((a, b) => (a.dedupKey < b.dedupKey ? -1 : a.dedupKey > b.dedupKey ? 1 : 0));
    for (let attempt = 1; ; attempt++) {
      try {
        const { events: folded, fold } = await this.foldBeyondLimit(sorted);
        const inserted = await this.ingestOnce(folded);
        return { inserted, duplicates: events.length - inserted.length, ...(fold.folded > 0 ? { folded: fold.folded, overflowHooks: fold.overflowHooks } : {}) };
      } catch (err) {
        const code = (err as { code?: string }).code ?? '';
        if (CONFLICT_SQLSTATE.has(code) && attempt < INGEST_ATTEMPTS) continue;
        throw this.classify(err, 'store cannot write');
      }
    }
  }

  /**
   * Moves the events of hooks past store.maxHooks onto overflow hooks. Read outside the ingest transaction:
   * replicas admitting new hooks at the same moment may together pass the limit by a batch's worth of names.
   */
  private async foldBeyondLimit(sorted: HookEvent[]): Promise<{ events: HookEvent[]; fold: { folded: number; overflowHooks: string[] } }> {
    const unknown = this.known.unknown(sorted);
    const none = { events: sorted, fold: { folded: 0, overflowHooks: [] } };
    if (unknown.length === 0) return none;
    const rows = await this.write('SELECT hook_id FROM hooks WHERE hook_id = ANY($1::text[])', [[...unknown, ...overflowIds(sorted)]]);
    const existing = new Set(rows.map((r) => String(r['hook_id'])));
    this.known.add(existing);
    if (unknown.every((id) => existing.has(id))) return none;
    const count = Number((await this.write('SELECT COUNT(*) AS n FROM hooks', []))[0]?.['n'] ?? 0);
    const r = foldNewHooks(sorted, (id) => this.known.has(id) || existing.has(id), count, this.maxHooks);
    // Folding changes hook ids only, not the dedup keys the rows are sorted by.
    return { events: r.events, fold: r };
  }

  private async ingestOnce(sorted: HookEvent[]): Promise<HookEvent[]> {
    return inTransaction(this.pool, async (client) => {
      const columns = EVENT_COLUMNS.map(() => [] as unknown[]);
      for (const e of sorted) eventValues(e).forEach((v, i) => (columns[i] as unknown[]).push(v));
      // The bare-hash key of each event that may have been stored before keys began with the event time.
      const legacy = sorted.map((e) => (e.legacyKey !== undefined && e.timeMs < this.legacyKeysBefore ? e.legacyKey : null));
      const unnest = EVENT_COLUMNS.map((c, i) => `$${i + 1}::${EVENT_TYPES[c]}[]`).join(', ');
      const r = await client.query<{ dedup_key: string }>(
        `INSERT INTO events (${EVENT_COLUMNS.join(', ')})
         SELECT ${EVENT_COLUMNS.map((c) => `u.${c}`).join(', ')}
         FROM unnest(${unnest}, $${EVENT_COLUMNS.length + 1}::text[]) WITH ORDINALITY AS u(${EVENT_COLUMNS.join(', ')}, legacy_key, ord)
         WHERE u.legacy_key IS NULL OR NOT EXISTS (SELECT 1 FROM events old WHERE old.dedup_key = u.legacy_key)
         ORDER BY ord
         ON CONFLICT (dedup_key) DO NOTHING RETURNING dedup_key`,
        [...columns, legacy],
      );
      const fresh = new Set(r.rows.map((row) => row.dedup_key));
      const inserted = sorted.filter((e) => fresh.has(e.dedupKey));
      if (inserted.length > 0) await this.applyRollups(client, inserted);
      return inserted;
    }, this.onLost);
  }

  private async applyRollups(client: pg.PoolClient, events: HookEvent[]): Promise<void> {
    const { hooks, rows } = groupForRollups(events, Date.now());
    const hookList = [...hooks.entries()];
    await client.query(
      `INSERT INTO hooks AS t (hook_id, hook_event, hook_name, first_seen, last_seen)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[])
       ON CONFLICT (hook_id) DO UPDATE SET first_seen = LEAST(t.first_seen, excluded.first_seen), last_seen = GREATEST(t.last_seen, excluded.last_seen)`,
      [hookList.map(([id]) => id), hookList.map(([, h]) => h.event.hookEvent), hookList.map(([, h]) => h.event.hookName), hookList.map(([, h]) => h.firstMs), hookList.map(([, h]) => h.lastMs)],
    );
    const cols = [...ROLLUP_KEY, ...COUNTER_COLUMNS];
    const types = ['text', 'int8', 'text', 'text', ...COUNTER_COLUMNS.map(() => 'int8')];
    for (const g of GRANULARITIES) {
      const list = rows[g];
      const params: unknown[][] = [list.map((x) => x.hookId), list.map((x) => x.bucket), list.map((x) => x.serviceName), list.map((x) => x.serviceVersion)];
      for (const c of COUNTER_COLUMNS) params.push(list.map((x) => x.row[c]));
      await client.query(
        `INSERT INTO ${ROLLUP_TABLES[g]} AS t (${cols.join(', ')})
         SELECT ${cols.join(', ')} FROM unnest(${types.map((ty, i) => `$${i + 1}::${ty}[]`).join(', ')}) WITH ORDINALITY AS u(${cols.join(', ')}, ord) ORDER BY ord
         ON CONFLICT (${ROLLUP_KEY.join(', ')}) DO UPDATE SET ${upsertSetClause()}`,
        params,
      );
    }
  }

  async hook(id: string): Promise<HookInfo | undefined> {
    const r = await this.query('SELECT hook_id, hook_event, hook_name, first_seen, last_seen FROM hooks WHERE hook_id = $1', [id]);
    const row = r[0];
    return row ? toInfo(row) : undefined;
  }

  /** Counter rows for [from, to) grouped by SQL expressions (over rollups, or raw events when filtered). */
  private async aggregate(q: RangeQuery, groupBy: string[], hookId?: string, forceEvents = false): Promise<Map<string, { keys: unknown[]; row: CounterRow }>> {
    const out = new Map<string, { keys: unknown[]; row: CounterRow }>();
    const add = (r: Record<string, unknown>): void => {
      const keys = groupBy.map((_, i) => r[`g${i}`]);
      const k = JSON.stringify(keys);
      const row = fromDbRow(r);
      const cur = out.get(k);
      if (cur) mergeRow(cur.row, row);
      else out.set(k, { keys, row });
    };
    const select = groupBy.map((g, i) => `${g} AS g${i}`).join(', ');
    const group = groupBy.map((_, i) => `g${i}`).join(', ');
    if (forceEvents || (q.filters && Object.keys(q.filters).length > 0)) {
      const { fromMs, toMs } = alignRange(q.fromMs, q.toMs);
      const params: unknown[] = [fromMs, toMs];
      const hookClause = hookId ? `AND hook_id = $${params.push(hookId)}` : '';
      const where = this.filterClause(q.filters ?? {}, params);
      const sql = `SELECT ${select}, ${eventAggregates()} FROM events WHERE time_ms >= $1 AND time_ms < $2 ${hookClause} ${where} GROUP BY ${group}`;
      for (const r of await this.query(sql, params)) add(r);
      return out;
    }
    const segs = segments(q.fromMs, q.toMs);
    if (segs.length === 0) return out;
    // One round trip: every segment's rows in one UNION ALL, merged here.
    const params: unknown[] = [];
    const hookParam = hookId ? `AND hook_id = $${params.push(hookId)}` : '';
    const parts = segs.map((seg) => {
      const a = params.push(seg.fromMs);
      const b = params.push(seg.toMs);
      return `SELECT ${select}, ${rollupAggregates()} FROM ${ROLLUP_TABLES[seg.granularity]} WHERE bucket >= $${a} AND bucket < $${b} ${hookParam} GROUP BY ${group}`;
    });
    for (const r of await this.query(parts.join('\nUNION ALL\n'), params)) add(r);
    return out;
  }

  private filterClause(filters: Record<string, string>, params: unknown[]): string {
    return Object.entries(filters).map(([dim, value]) => `AND ${this.dimExpr(dim)} = $${params.push(value)}`).join(' ');
  }

  private dimExpr(dim: string): string {
    // dimensionExpr only lets configured names through; the key is still quoted as a literal, never spliced raw.
    return dimensionExpr(dim, this.dims, (key) => `(extra ->> ${sqlString(key)})`);
  }

  async hookCounters(q: RangeQuery): Promise<Map<string, HookCounters & { info: HookInfo }>> {
    const rows = await this.aggregate(q, ['hook_id'], q.hookId);
    const out = new Map<string, HookCounters & { info: HookInfo }>();
    if (rows.size === 0) return out;
    const byId = await this.infos([...rows.values()].map((x) => String(x.keys[0])));
    for (const { keys, row } of rows.values()) {
      const info = byId.get(String(keys[0]));
      if (info) out.set(info.id, { ...toCounters(row), info });
    }
    return out;
  }

  private async infos(ids: string[]): Promise<Map<string, HookInfo>> {
    const infos = await this.query('SELECT hook_id, hook_event, hook_name, first_seen, last_seen FROM hooks WHERE hook_id = ANY($1::text[])', [ids]);
    return new Map(infos.map((r) => [String(r['hook_id']), toInfo(r)]));
  }

  async overflowHooks(): Promise<HookInfo[]> {
    return (await this.query(OVERFLOW_HOOKS, [])).map(toInfo);
  }

  async latePersisted(q: ArrivalQuery): Promise<Map<string, Arrival>> {
    const rows = await this.query(latePersistedQuery((n) => `$${n}`), [q.receivedFromMs, q.receivedToMs, q.eventBeforeMs]);
    const out = new Map<string, Arrival>();
    if (rows.length === 0) return out;
    const byId = await this.infos(rows.map((r) => String(r['g'])));
    for (const r of rows) {
      const info = byId.get(String(r['g']));
      if (info) out.set(info.id, { ...toCounters(fromDbRow(r)), info, firstEventMs: Number(r['first_event']), lastEventMs: Number(r['last_event']) });
    }
    return out;
  }

  async series(hookId: string, q: SeriesQuery): Promise<Map<number, HookCounters>> {
    const params: unknown[] = [hookId, null, null];
    const where = q.filters && Object.keys(q.filters).length > 0 ? this.filterClause(q.filters, params) : null;
    const { sql, fromMs, toMs } = seriesQuery(q, where, (n) => `$${n}`);
    params[1] = fromMs;
    params[2] = toMs;
    const rows = await this.query(sql, params);
    return new Map(rows.map((r) => [Number(r['b']), toCounters(fromDbRow(r))]));
  }

  async fleetSeries(q: SeriesQuery): Promise<FleetBucket[]> {
    const params: unknown[] = [null, null];
    const where = q.filters && Object.keys(q.filters).length > 0 ? this.filterClause(q.filters, params) : null;
    const { sql, fromMs, toMs } = fleetSeriesQuery(q, where, (n) => `$${n}`);
    params[0] = fromMs;
    params[1] = toMs;
    return (await this.query(sql, params)).map(toFleetBucket);
  }

  async clientVersions(q: RangeQuery): Promise<ClientVersion[]> {
    const rows = await this.aggregate(q, ['service_name', 'service_version']);
    return [...rows.values()].map(({ keys, row }) => {
      const c = toCounters(row);
      return { serviceName: String(keys[0] ?? ''), version: String(keys[1] ?? ''), executions: c.executions, sizeUnknownExecutions: c.sizeUnknownExecutions, hasSizeData: c.executions > c.sizeUnknownExecutions };
    }).sort((a, b) => b.executions - a.executions);
  }

  async breakdown(hookId: string, dimension: string, q: RangeQuery): Promise<Omit<BreakdownRow, 'status'>[]> {
    const expr = this.dimExpr(dimension);
    // Rollups carry no per-user or per-team keys: a breakdown reads the raw events (kept for retention.events).
    const rows = await this.aggregate(q, [`COALESCE(${expr}, '')`], hookId, true);
    return [...rows.values()].map(({ keys, row }) => ({ value: String(keys[0] ?? ''), ...toCounters(row) })).sort((a, b) => b.executions - a.executions);
  }

  async recordGuardTrims(trims: GuardTrim[]): Promise<number> {
    if (trims.length === 0) return 0;
    // One statement, so the whole batch commits (or fails) at once before the OTLP 200.
    const sql = guardTrimSql((n) => `$${n}`, trims.length).insert;
    try {
      const r = await this.pool.query(sql, trims.flatMap(guardTrimValues));
      return r.rowCount ?? 0;
    } catch (err) {
      throw this.classify(err, 'store write failed');
    }
  }

  async guardTrims(hookId: string, q: SeriesQuery): Promise<GuardTrimStats> {
    const params = [hookId, q.fromMs, q.toMs];
    const [buckets, largest] = await Promise.all([this.query(GUARD_SQL.buckets, [...params, q.stepMs]), this.query(GUARD_SQL.largest, params)]);
    return guardTrimStats(buckets, largest);
  }

  async lastEventMs(filters?: Record<string, string>): Promise<number | null> {
    if (filters && Object.keys(filters).length > 0) {
      const params: unknown[] = [];
      const where = this.filterClause(filters, params);
      const e = await this.query(`SELECT time_ms AS t FROM events WHERE kind = 'complete' ${where} ORDER BY time_ms DESC LIMIT 1`, params);
      return e[0] ? Number(e[0]['t']) : null;
    }
    const r = await this.query('SELECT MAX(last_seen) AS t FROM hooks', []);
    const t = r[0]?.['t'];
    return t === null || t === undefined ? null : Number(t);
  }

  async prune(eventsBeforeMs: number, rollupsBeforeMs: number, futureFromMs?: number): Promise<PruneResult> {
    const result: PruneResult = { events: 0, rollups: 0, hooks: 0 };
    const n = this.pruneBatch;
    // Each batch is its own short transaction: ingest on other replicas never waits long behind retention.
    // The batch size is the last parameter ($2, or $1 without a bound).
    const batch = async (sql: string, ...bound: number[]): Promise<number> => {
      let total = 0;
      for (;;) {
        const r = await this.pool.query(sql, [...bound, n]).catch((err: unknown) => {
          throw this.classify(err, 'retention failed');
        });
        total += r.rowCount ?? 0;
        if ((r.rowCount ?? 0) < n) return total;
      }
    };
    result.events = await batch('DELETE FROM events WHERE id IN (SELECT id FROM events WHERE time_ms < $1 ORDER BY time_ms LIMIT $2)', eventsBeforeMs);
    result.events += await batch('DELETE FROM guard_trims WHERE dedup_key IN (SELECT dedup_key FROM guard_trims WHERE time_ms < $1 LIMIT $2)', eventsBeforeMs);
    const rollups = (t: string, before: number): Promise<number> => batch(`DELETE FROM ${t} WHERE ctid IN (SELECT ctid FROM ${t} WHERE bucket < $1 LIMIT $2)`, before);
    result.rollups += await rollups(ROLLUP_TABLES.minute, eventsBeforeMs);
    result.rollups += await rollups(ROLLUP_TABLES.hour, rollupsBeforeMs);
    result.rollups += await rollups(ROLLUP_TABLES.day, rollupsBeforeMs);
    if (futureFromMs !== undefined) {
      result.events += await batch('DELETE FROM events WHERE id IN (SELECT id FROM events WHERE time_ms >= $1 LIMIT $2)', futureFromMs);
      for (const t of Object.values(ROLLUP_TABLES)) result.rollups += await batch(`DELETE FROM ${t} WHERE ctid IN (SELECT ctid FROM ${t} WHERE bucket >= $1 LIMIT $2)`, futureFromMs);
    }
    result.hooks = await batch(`DELETE FROM hooks WHERE hook_id IN (${ORPHAN_HOOKS} LIMIT $1)`);
    if (result.hooks > 0) this.known.clear();
    return result;
  }

  async recordTranscriptFindings(findings: TranscriptFinding[]): Promise<FindingsResult> {
    if (findings.length === 0) return { inserted: 0, duplicates: 0 };
    // One statement (atomic) per batch: unnest() of one array per column.
    const types = ['text', 'text', 'text', 'text', 'text', 'text', 'text', 'int8', 'text', 'text', 'int8'];
    const columns = FINDING_COLUMNS.map((_, c) => findings.map((f) => findingValues(f)[c]));
    const rows = await this.write(
      `INSERT INTO transcript_findings (${FINDING_COLUMNS.join(', ')})
       SELECT * FROM unnest(${types.map((t, i) => `$${i + 1}::${t}[]`).join(', ')})
       ON CONFLICT (finding_id) DO NOTHING RETURNING finding_id`,
      columns,
    );
    return { inserted: rows.length, duplicates: findings.length - rows.length };
  }

  async pruneTranscriptFindings(beforeMs: number): Promise<number> {
    let total = 0;
    for (;;) {
      const rows = await this.write('DELETE FROM transcript_findings WHERE finding_id IN (SELECT finding_id FROM transcript_findings WHERE time_ms < $1 LIMIT $2) RETURNING 1 AS x', [beforeMs, this.pruneBatch]);
      total += rows.length;
      if (rows.length < this.pruneBatch) return total;
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

  async ping(): Promise<void> {
    if (this.closed) throw new Error('store is closed');
    await Promise.all([this.write('SELECT 1', []), this.query('SELECT 1', [])]);
  }

  close(): Promise<void> {
    this.closed ??= Promise.all([this.pool.end().catch(() => {}), this.readPool.end().catch(() => {})]).then(() => {});
    return this.closed;
  }

  /** A read query, on the read pool. */
  private query(sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    return this.run(this.readPool, sql, params);
  }

  /** A statement of the write side (ingest's own lookups, side writes), on the pool ingest uses. */
  private write(sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    return this.run(this.pool, sql, params);
  }

  private async run(pool: pg.Pool, sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
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
    if (err instanceof StoreUnavailableError) return err;
    const e = err as { code?: string; message?: string };
    const code = e.code ?? '';
    const message = `${what}: ${this.describe(err)}`;
    const unavailable = RETRYABLE_SQLSTATE.test(code) || RETRYABLE_NETWORK.has(code) || /timeout|terminat|Connection|connect|pool/i.test(e.message ?? '');
    return unavailable ? new StoreUnavailableError(message) : new Error(message);
  }
}
