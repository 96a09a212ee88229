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
import { HOUR, alignRange, granularityForStep, segments } from '../segments.ts';
import { DIM_GRANULARITIES, DIM_ROLLUP_KEY, DIM_ROLLUP_TABLES, DIM_PRUNE_HOOKS, ROLLED_DIMENSIONS_META, dimChanges, dimPruneSql, dimGranularity, dimRebuildSql, dimRemoveSql, dimRollupDdl, eventGroupExprs, groupForDimRollups, planRead, rolledDimensions, rollupGroupColumns, rollupWhere, type Grouping } from '../dim-rollups.ts';
import { DEFAULT_MAX_HOOKS, KnownHooks, foldNewHooks, overflowIds } from '../hook-limit.ts';
import { counterColumnsDdl, type RollupFilter, EVENT_COLUMNS, LEGACY_KEYS_BEFORE, ORPHAN_HOOKS, OVERFLOW_HOOKS, arrivalTimeDdl, eventValues, latePersistedQuery, seriesQuery, fleetSeriesQuery, toFleetBucket, ROLLUP_TABLES, coreSchemaDdl, sqlString, timeOrderedKeysDdl, toInfo, dimensionExpr, eventAggregates, rollupAggregates, upsertSetClause } from '../sql.ts';
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
  /** Connections in this replica's pool. */
  poolSize?: number;
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
  // 8: rollups per dimension (dim-rollups.ts); filled from the raw events right after, under the same lock.
  dimRollupDdl(counterColumnsDdl('BIGINT'), 'BIGINT', ''),
];

/** PostgreSQL type of each event column, for the unnest() batch insert. */
const EVENT_TYPES: Record<(typeof EVENT_COLUMNS)[number], string> = {
  dedup_key: 'text', kind: 'text', hook_id: 'text', time_ms: 'int8', num_hooks: 'int8', num_success: 'int8', num_blocking: 'int8',
  num_non_blocking_error: 'int8', num_cancelled: 'int8', duration_ms: 'int8', stdout_chars: 'int8', additional_context_chars: 'int8',
  system_message_chars: 'int8', initial_user_message_chars: 'int8', outputs_persisted: 'int8', sizes_known: 'int2', status: 'text',
  service_name: 'text', service_version: 'text', session_id: 'text', user_id: 'text', user_email: 'text', user_account_uuid: 'text',
  organization_id: 'text', terminal_type: 'text', source: 'text', extra: 'jsonb', received_ms: 'int8',
};

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

/**
 * One multi-row upsert of a commit's rollup rows into `table`: one array per column through unnest(), in the
 * rows' (key) order, so concurrent commits take row locks in the same order. `key`: the key columns and types.
 */
async function upsertRollups(client: pg.PoolClient, table: string, key: readonly [string, string][], keys: readonly unknown[][], rows: readonly CounterRow[]): Promise<void> {
  if (rows.length === 0) return;
  const cols = [...key.map(([c]) => c), ...COUNTER_COLUMNS];
  const types = [...key.map(([, t]) => t), ...COUNTER_COLUMNS.map(() => 'int8')];
  const params: unknown[][] = key.map((_, i) => keys.map((k) => k[i]));
  for (const c of COUNTER_COLUMNS) params.push(rows.map((r) => r[c]));
  await client.query(
    `INSERT INTO ${table} AS t (${cols.join(', ')})
     SELECT ${cols.join(', ')} FROM unnest(${types.map((ty, i) => `$${i + 1}::${ty}[]`).join(', ')}) WITH ORDINALITY AS u(${cols.join(', ')}, ord) ORDER BY ord
     ON CONFLICT (${key.map(([c]) => c).join(', ')}) DO UPDATE SET ${upsertSetClause()}`,
    params,
  );
}

export class PostgresStore implements Store {
  /** Events before this time may already be stored under their bare-hash key (see sql.ts timeOrderedKeysDdl). */
  private legacyKeysBefore = -Infinity;
  readonly kind = 'postgres';
  readonly maxHooks: number;
  private readonly known: KnownHooks;
  private readonly pool: pg.Pool;
  private readonly url: string;
  private readonly dims: readonly string[];
  /** Dimensions with rollups of their own (dim-rollups.ts). */
  private readonly rolled: readonly string[];
  private readonly logger: Logger | undefined;
  private readonly pruneBatch: number;
  private closed: Promise<void> | undefined;

  private constructor(opts: PostgresStoreOptions) {
    this.url = opts.url;
    this.dims = opts.dimensions ?? [];
    this.rolled = rolledDimensions(this.dims);
    this.logger = opts.logger;
    this.pruneBatch = opts.pruneBatch ?? 5000;
    this.maxHooks = opts.maxHooks ?? DEFAULT_MAX_HOOKS;
    this.known = new KnownHooks(this.maxHooks);
    this.pool = new pg.Pool({
      connectionString: opts.url,
      max: opts.poolSize ?? 10,
      connectionTimeoutMillis: 10_000,
      idleTimeoutMillis: 30_000,
      application_name: 'hookwatch',
      // A stuck statement must not hold an OTLP request (and its row locks) forever.
      statement_timeout: 60_000,
      idle_in_transaction_session_timeout: 60_000,
    });
    // An idle connection dropped by the server (restart, failover) must not crash the process.
    this.pool.on('error', (err) => this.logger?.warn('postgres connection lost', { err: this.describe(err) }));
  }

  /** Connects, applies pending migrations (once across replicas) and returns the store. */
  static async open(opts: PostgresStoreOptions): Promise<PostgresStore> {
    const store = new PostgresStore(opts);
    try {
      await store.migrate();
    } catch (err) {
      await store.pool.end().catch(() => {});
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
      await this.syncDimensions(client);
      return from;
    }, this.onLost);
    if (current < MIGRATIONS.length) this.logger?.info('postgres schema migrated', { from: current, to: MIGRATIONS.length });
    const legacy = await this.pool.query<{ value: string }>('SELECT value FROM store_meta WHERE key = $1', [LEGACY_KEYS_BEFORE]);
    this.legacyKeysBefore = legacy.rows[0] ? Number(legacy.rows[0].value) : -Infinity;
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
      for (const sql of dimRebuildSql((n) => `$${n}`, (d) => this.dimExpr(d), { events: eventAggregates(), rollups: rollupAggregates() }, COUNTER_COLUMNS, dim)) await client.query(sql, [dim]);
    }
    await client.query('INSERT INTO store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [ROLLED_DIMENSIONS_META, JSON.stringify(this.rolled)]);
    if (rebuild.length > 0 || remove.length > 0) this.logger?.info('dimension rollups rebuilt from the stored events', { rebuilt: rebuild, removed: remove });
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
    const rows = await this.query('SELECT hook_id FROM hooks WHERE hook_id = ANY($1::text[])', [[...unknown, ...overflowIds(sorted)]]);
    const existing = new Set(rows.map((r) => String(r['hook_id'])));
    this.known.add(existing);
    if (unknown.every((id) => existing.has(id))) return none;
    const count = Number((await this.query('SELECT COUNT(*) AS n FROM hooks', []))[0]?.['n'] ?? 0);
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
    for (const g of GRANULARITIES) {
      const list = rows[g];
      await upsertRollups(client, ROLLUP_TABLES[g], [['hook_id', 'text'], ['bucket', 'int8'], ['service_name', 'text'], ['service_version', 'text']], list.map((x) => [x.hookId, x.bucket, x.serviceName, x.serviceVersion]), list.map((x) => x.row));
    }
    // Dimension rollups the same way: the batch's deltas folded in memory, one multi-row upsert per table.
    const dimRows = groupForDimRollups(events, this.rolled);
    const dimKey = DIM_ROLLUP_KEY.map((c): [string, string] => [c, c === 'bucket' ? 'int8' : 'text']);
    for (const g of DIM_GRANULARITIES) {
      const list = dimRows[g];
      await upsertRollups(client, DIM_ROLLUP_TABLES[g], dimKey, list.map((x) => [x.hookId, x.dim, x.bucket, x.value, x.serviceName, x.serviceVersion]), list.map((x) => x.row));
    }
  }

  async hook(id: string): Promise<HookInfo | undefined> {
    const r = await this.query('SELECT hook_id, hook_event, hook_name, first_seen, last_seen FROM hooks WHERE hook_id = $1', [id]);
    const row = r[0];
    return row ? toInfo(row) : undefined;
  }

  /**
   * Counter rows for [from, to), by grouping: from the base rollups, the dimension rollups (whole hours and days;
   * the rest from raw events) or the raw events, as planRead decides from the filters. One round trip: every
   * segment's rows in one UNION ALL, merged here.
   */
  private async aggregate(q: RangeQuery, grouping: Grouping, hookId?: string): Promise<Map<string, { keys: unknown[]; row: CounterRow }>> {
    const out = new Map<string, { keys: unknown[]; row: CounterRow }>();
    const add = (r: Record<string, unknown>): void => {
      const keys = rollupGroupColumns(grouping).map((_, i) => r[`g${i}`]);
      const k = JSON.stringify(keys);
      const row = fromDbRow(r);
      const cur = out.get(k);
      if (cur) mergeRow(cur.row, row);
      else out.set(k, { keys, row });
    };
    const filters = q.filters ?? {};
    const params: unknown[] = [];
    // Refuses a filter on an unknown dimension whatever is read; the clause itself is numbered on first use (a
    // parameter PostgreSQL sees no use of has no type and fails the statement).
    this.filterClause(filters, []);
    let where: string | undefined;
    const eventSelect = eventGroupExprs(grouping, (d) => this.dimExpr(d)).map((g, i) => `${g} AS g${i}`).join(', ');
    const rollupSelect = rollupGroupColumns(grouping).map((g, i) => `${g} AS g${i}`).join(', ');
    const group = rollupGroupColumns(grouping).map((_, i) => `g${i}`).join(', ');
    const hookParam = hookId ? `AND hook_id = $${params.push(hookId)}` : '';
    const plan = planRead(filters, grouping, this.rolled);
    const fromEvents = (a: number, b: number): string => {
      where ??= this.filterClause(filters, params);
      const pa = params.push(a);
      const pb = params.push(b);
      return `SELECT ${eventSelect}, ${eventAggregates()} FROM events WHERE time_ms >= $${pa} AND time_ms < $${pb} ${hookParam} ${where} GROUP BY ${group}`;
    };
    let parts: string[];
    if (plan.source === 'raw') {
      const { fromMs, toMs } = alignRange(q.fromMs, q.toMs);
      parts = toMs > fromMs ? [fromEvents(fromMs, toMs)] : [];
    } else {
      parts = segments(q.fromMs, q.toMs).map((seg) => {
        const dimG = plan.source === 'dims' ? dimGranularity(seg.granularity) : undefined;
        // A dimension has no minute rollups: the partial hours at the range's edges come from the raw events.
        if (plan.source === 'dims' && dimG === undefined) return fromEvents(seg.fromMs, seg.toMs);
        const table = dimG !== undefined ? DIM_ROLLUP_TABLES[dimG] : ROLLUP_TABLES[seg.granularity];
        const a = params.push(seg.fromMs);
        const b = params.push(seg.toMs);
        const cond = rollupWhere(plan, dimG !== undefined, (v) => `$${params.push(v)}`);
        return `SELECT ${rollupSelect}, ${rollupAggregates()} FROM ${table} WHERE bucket >= $${a} AND bucket < $${b} ${hookParam} ${cond} GROUP BY ${group}`;
      });
    }
    if (parts.length === 0) return out;
    for (const r of await this.query(parts.join('\nUNION ALL\n'), params)) add(r);
    return out;
  }

  /**
   * How a series under `q.filters` is read: base rollups, dimension rollups (steps of whole hours: their buckets
   * are exact, the hour being written included), or raw events. Returns seriesQuery's arguments; the filter
   * parameters go after the `first` ones.
   */
  private seriesSource(q: SeriesQuery, first: unknown[]): { filterWhere: string | null; rollup: RollupFilter | undefined; params: unknown[] } {
    const filters = q.filters ?? {};
    const rawParams = [...first];
    const where = this.filterClause(filters, rawParams);
    const plan = planRead(filters, 'hook', this.rolled);
    if (plan.source === 'raw' || (plan.source === 'dims' && granularityForStep(q.stepMs) === 'minute')) return { filterWhere: where, rollup: undefined, params: rawParams };
    const params = [...first];
    const dims = plan.source === 'dims';
    return { filterWhere: null, rollup: { dims, where: rollupWhere(plan, dims, (v) => `$${params.push(v)}`) }, params };
  }

  private filterClause(filters: Record<string, string>, params: unknown[]): string {
    return Object.entries(filters).map(([dim, value]) => `AND ${this.dimExpr(dim)} = $${params.push(value)}`).join(' ');
  }

  private dimExpr(dim: string): string {
    // dimensionExpr only lets configured names through; the key is still quoted as a literal, never spliced raw.
    return dimensionExpr(dim, this.dims, (key) => `(extra ->> ${sqlString(key)})`);
  }

  async hookCounters(q: RangeQuery): Promise<Map<string, HookCounters & { info: HookInfo }>> {
    const rows = await this.aggregate(q, 'hook', q.hookId);
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
    const { filterWhere, rollup, params } = this.seriesSource(q, [hookId, null, null]);
    const { sql, fromMs, toMs } = seriesQuery(q, filterWhere, (n) => `$${n}`, rollup);
    params[1] = fromMs;
    params[2] = toMs;
    const rows = await this.query(sql, params);
    return new Map(rows.map((r) => [Number(r['b']), toCounters(fromDbRow(r))]));
  }

  async fleetSeries(q: SeriesQuery): Promise<FleetBucket[]> {
    const { filterWhere, rollup, params } = this.seriesSource(q, [null, null]);
    const { sql, fromMs, toMs } = fleetSeriesQuery(q, filterWhere, (n) => `$${n}`, rollup);
    params[0] = fromMs;
    params[1] = toMs;
    return (await this.query(sql, params)).map(toFleetBucket);
  }

  async clientVersions(q: RangeQuery): Promise<ClientVersion[]> {
    const rows = await this.aggregate(q, 'client');
    return [...rows.values()].map(({ keys, row }) => {
      const c = toCounters(row);
      return { serviceName: String(keys[0] ?? ''), version: String(keys[1] ?? ''), executions: c.executions, sizeUnknownExecutions: c.sizeUnknownExecutions, hasSizeData: c.executions > c.sizeUnknownExecutions };
    }).sort((a, b) => b.executions - a.executions);
  }

  async breakdown(hookId: string, dimension: string, q: RangeQuery): Promise<Omit<BreakdownRow, 'status'>[]> {
    // A rolled dimension from its rollups; user.*, session.id from the raw events of this one hook (dim-rollups.ts).
    const rows = await this.aggregate(q, { dimension }, hookId);
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
      const hour = await this.newestFilteredHour(filters);
      if (hour === null) return null;
      // Within the newest hour holding a match when the dimension rollups tell it: one hour of events at most.
      const within = hour === undefined ? '' : `AND time_ms >= ${hour} AND time_ms < ${hour + HOUR}`;
      const e = await this.query(`SELECT time_ms AS t FROM events WHERE kind = 'complete' ${within} ${where} ORDER BY time_ms DESC LIMIT 1`, params);
      return e[0] ? Number(e[0]['t']) : null;
    }
    const r = await this.query('SELECT MAX(last_seen) AS t FROM hooks', []);
    const t = r[0]?.['t'];
    return t === null || t === undefined ? null : Number(t);
  }

  /**
   * The newest hour in which an execution matches one rolled dimension's filter, from its hourly rollups; null
   * when none does, undefined when the filter is not served by dimension rollups.
   */
  private async newestFilteredHour(filters: Record<string, string>): Promise<number | null | undefined> {
    const plan = planRead(filters, 'hook', this.rolled);
    if (plan.source !== 'dims') return undefined;
    const params: unknown[] = [];
    const cond = rollupWhere(plan, true, (v) => `$${params.push(v)}`);
    const r = await this.query(`SELECT MAX(bucket) AS b FROM ${DIM_ROLLUP_TABLES.hour} WHERE executions > 0 ${cond}`, params);
    const b = r[0]?.['b'];
    return b === null || b === undefined ? null : Number(b);
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
    // Dimension rollups are hours and days: they go with retention.rollups like the base ones (not counted in
    // `rollups`, which counts the base rows whatever the dimensions configured).
    const hookIds = (await this.query('SELECT hook_id FROM hooks', [])).map((r) => String(r['hook_id']));
    const dimPrune = async (op: '<' | '>=', bound: number): Promise<void> => {
      for (let i = 0; i < hookIds.length; i += DIM_PRUNE_HOOKS) {
        const chunk = hookIds.slice(i, i + DIM_PRUNE_HOOKS);
        for (const t of Object.values(DIM_ROLLUP_TABLES)) {
          for (const dim of this.rolled) await this.query(dimPruneSql(t, 'hook_id = ANY($1::text[])', op, (k) => `$${k}`), [chunk, dim, bound]);
        }
      }
    };
    await dimPrune('<', rollupsBeforeMs);
    if (futureFromMs !== undefined) {
      result.events += await batch('DELETE FROM events WHERE id IN (SELECT id FROM events WHERE time_ms >= $1 LIMIT $2)', futureFromMs);
      const future = (t: string): Promise<number> => batch(`DELETE FROM ${t} WHERE ctid IN (SELECT ctid FROM ${t} WHERE bucket >= $1 LIMIT $2)`, futureFromMs);
      for (const t of Object.values(ROLLUP_TABLES)) result.rollups += await future(t);
      await dimPrune('>=', futureFromMs);
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
    const rows = await this.query(
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
      const rows = await this.query('DELETE FROM transcript_findings WHERE finding_id IN (SELECT finding_id FROM transcript_findings WHERE time_ms < $1 LIMIT $2) RETURNING 1 AS x', [beforeMs, this.pruneBatch]);
      total += rows.length;
      if (rows.length < this.pruneBatch) return total;
    }
  }

  async transcriptCommands(hookId: string, q: RangeQuery): Promise<TranscriptCommandRow[]> {
    const rows = await this.query(commandsQuery((n) => `$${n}`), [hookId, q.fromMs, q.toMs]);
    return rows.map(toCommandRow);
  }

  async metaValue(key: string, create: () => string): Promise<string> {
    await this.query('INSERT INTO store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [key, create()]);
    const rows = await this.query('SELECT value FROM store_meta WHERE key = $1', [key]);
    return String(rows[0]?.['value']);
  }

  async ping(): Promise<void> {
    if (this.closed) throw new Error('store is closed');
    await this.query('SELECT 1', []);
  }

  close(): Promise<void> {
    this.closed ??= this.pool.end().catch(() => {});
    return this.closed;
  }

  private async query(sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    try {
      const r = await this.pool.query(sql, params);
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
