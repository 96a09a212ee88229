/**
 * The SQLite store's schema: its versioned migrations, and what follows the configured dimensions (their rollups,
 * attr_sets' indexes). A file written by an older hookwatch may take minutes to migrate: `serve` migrates it on a
 * worker thread of its own (migrateOnWorker, migrate-worker.ts), its event loop answering probes meanwhile, then
 * opens the store, whose own pass (migrateSchema) finds nothing left to do.
 */
import type { DatabaseSync } from 'node:sqlite';
import { ATTR_SET_INDEX_PREFIX, MIGRATION_FUNCTIONS, sizesMaySumDdl, arrivalIndexDdl, arrivalTimeDdl, attrDigest, attrFirstMsDdl, attrSetIndexChanges, compactEventColumnsDdl, compactEventsDdl, compactKey, coreSchemaDdl, counterColumnsDdl, dimensionExpr, dimRebuildFromEventsSql, hookRef, lateArrivalIndexDdl, overArrivalDdl, rollupAggregates, sqlString, timeOrderedKeysDdl } from '../sql.ts';
import { ROLLED_DIMENSIONS_META, dimChanges, dimRemoveSql, dimRollupDdl, dimRollupRekeyDdl, rolledDimensions } from '../dim-rollups.ts';
import { attrRollupDdl } from '../attr-rollups.ts';
import { redactStoredCommandsSql, transcriptFindingsDdl } from '../transcript-findings.ts';
import { redactStoredCommand } from '../../hooks/transcript-findings.ts';
import { guardTrimsDdl } from '../guard-trims.ts';
import { StoreUnavailableError } from '../store.ts';
import { FIRST_COUNTER_COLUMNS } from '../counters.ts';
import { startWorker } from '../../worker-thread.ts';
import type { Logger } from '../../telemetry/logger.ts';
import { formatDuration } from '../../config/values.ts';
import { BUSY_TIMEOUT_MS, describeSqliteError, inTransaction, openSqlite, sqliteFault } from './database.ts';
import { unopenedStoreFile, unopenedStoreFileProblem } from './file-owner.ts';

/** Versioned migrations; append only. Version n is MIGRATIONS[n - 1]. */
export const MIGRATIONS: readonly string[] = [
  coreSchemaDdl({ int: 'INTEGER', flag: 'INTEGER', id: 'INTEGER PRIMARY KEY', json: 'TEXT', rollupTableOptions: ' WITHOUT ROWID' }),
  // 2: keys begin with the event time.
  timeOrderedKeysDdl({ nowMs: "CAST(unixepoch('subsec') * 1000 AS INTEGER)", greatest: 'MAX' }),
  // 3: transcript findings, apart from telemetry.
  transcriptFindingsDdl('INTEGER'),
  // 4: outputs trimmed by hookwatch guard.
  guardTrimsDdl('INTEGER'),
  // 5: when each event arrived.
  arrivalTimeDdl('INTEGER'),
  // 6: rollups per dimension (dim-rollups.ts); filled from the raw events when the store opens (syncDimensions).
  dimRollupDdl(counterColumnsDdl('INTEGER', 'INTEGER', false, FIRST_COUNTER_COLUMNS), 'INTEGER', ' WITHOUT ROWID'),
  // 7: the compact event layout (sql.ts compactEventsDdl). A rowid table: the unique key index answers dedup,
  // (hook, time_ms) a hook's reads, (time_ms) the reads across hooks and retention, the partial arrival index
  // the late-persisted alert. The key, hook and attribute digests come from the functions registered by
  // registerMigrationFunctions, the same code ingest uses.
  compactEventsDdl({
    int: 'INTEGER', json: 'TEXT', attrId: 'INTEGER PRIMARY KEY',
    eventsTable: `CREATE TABLE events_compact (id INTEGER PRIMARY KEY, key BLOB NOT NULL, ${compactEventColumnsDdl('INTEGER', 'INTEGER')});`,
    indexes: `CREATE UNIQUE INDEX events_key ON events (key);
    CREATE INDEX events_hook_time ON events (hook, time_ms);
    CREATE INDEX events_time ON events (time_ms);
    CREATE INDEX events_persisted_arrival ON events (received_ms) WHERE outputs_persisted > 0;`,
    attrDigest: (cols) => `${MIGRATION_FUNCTIONS.attrDigest}(${cols})`,
    key: (e) => `${MIGRATION_FUNCTIONS.key}(${e})`,
    hookRef: (e) => `${MIGRATION_FUNCTIONS.hookRef}(${e})`,
    copyOrder: 'e.id',
  }),
  // 8: the hourly rollup per (hook, attribute set) (attr-rollups.ts), filled from the events stored.
  attrRollupDdl(counterColumnsDdl('INTEGER', 'INTEGER', false, FIRST_COUNTER_COLUMNS), 'INTEGER', 'INTEGER', ' WITHOUT ROWID', FIRST_COUNTER_COLUMNS),
  // 9: dimension rollups keyed (dimension, value, bucket, hook), the client versions per value apart
  // (dim-rollups.ts dimRollupRekeyDdl), folded from the tables they replace.
  dimRollupRekeyDdl(counterColumnsDdl('INTEGER', 'INTEGER', false, FIRST_COUNTER_COLUMNS), rollupAggregates(FIRST_COUNTER_COLUMNS), 'INTEGER', ' WITHOUT ROWID', false, FIRST_COUNTER_COLUMNS),
  // 10: the time index carries each event's attribute set, so a filtered read across hooks tests the filter in
  // the index and reads only the rows that match (a team's hour of events at 10 M a month: 2 ms, not 7).
  `DROP INDEX events_time;
  CREATE INDEX events_time ON events (time_ms, attrs);`,
  // 11: each attribute set's earliest event time, so a filter over an old stretch finds the few sets live in it.
  attrFirstMsDdl('INTEGER'),
  // 12: the arrival index holds every event classified over the cap, measured or reported (sql.ts overArrivalDdl).
  overArrivalDdl(),
  // 13: an arrival index of every event with a receive time, those folded into an overflow hook too (sql.ts
  // arrivalIndexDdl), beside the index of the events over the cap.
  arrivalIndexDdl(),
  // 14: an index of the events that arrived late (sql.ts lateArrivalIndexDdl), so the hook_limit alert's late
  // arrivals read those and a few minutes of arrivals, not every event folded in the rule's window.
  lateArrivalIndexDdl(),
  // 15: every counters row counts its executions with size data whose sizes may be sums (counters.ts
  // sizes_may_sum), 0 in the rows written before (no row rewritten).
  sizesMaySumDdl('INTEGER NOT NULL DEFAULT 0'),
  // 16: the commands of transcript findings stored as sent, credentials in them redacted as the server now does
  // when it takes a finding (transcript-findings.ts redactStoredCommandsSql).
  redactStoredCommandsSql(MIGRATION_FUNCTIONS.redactCommand),
];

/** The functions the compact-events migration calls, in JS: the same digests ingest computes. */
function registerMigrationFunctions(db: DatabaseSync): void {
  db.function(MIGRATION_FUNCTIONS.key, { deterministic: true }, (k) => compactKey(String(k)));
  db.function(MIGRATION_FUNCTIONS.hookRef, { deterministic: true }, (id) => hookRef(String(id)));
  db.function(MIGRATION_FUNCTIONS.attrDigest, { deterministic: true, varargs: true }, (...values) => attrDigest(values.map(String)));
  db.function(MIGRATION_FUNCTIONS.redactCommand, { deterministic: true }, (command) => redactStoredCommand(String(command)));
}


/** A file a later release wrote: this one cannot read it, nor undo that release's migrations. */
class NewerSchemaError extends Error {
  override name = 'NewerSchemaError';
}

/** Applies the migrations the file lacks; the version it was at. */
function migrate(db: DatabaseSync, migrating: () => void): number {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
  const row = db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null };
  const current = row.v ?? 0;
  if (current > MIGRATIONS.length) {
    throw new NewerSchemaError(`the database schema is version ${current}, newer than this hookwatch (${MIGRATIONS.length}); upgrade hookwatch`);
  }
  if (current < MIGRATIONS.length) migrating();
  for (let v = current; v < MIGRATIONS.length; v++) {
    inTransaction(db, () => {
      db.exec(MIGRATIONS[v] as string);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(v + 1, Date.now());
    });
  }
  return current;
}

/**
 * Brings the dimension rollups in line with the configured dimensions (dim-rollups.ts dimSyncSql), in one
 * transaction. It runs after every migration, so it reads the events table as the current schema stores it;
 * on a database written before dimension rollups existed it fills them from every stored event.
 */
function syncDimensions(db: DatabaseSync, dims: readonly string[], migrating: () => void): void {
  const rolled = rolledDimensions(dims);
  const row = db.prepare('SELECT value FROM store_meta WHERE key = ?').get(ROLLED_DIMENSIONS_META) as { value: string } | undefined;
  const { remove, rebuild } = dimChanges(row ? (JSON.parse(row.value) as string[]) : null, rolled);
  if (row && remove.length === 0 && rebuild.length === 0) return;
  migrating();
  inTransaction(db, () => {
    for (const dim of [...remove, ...rebuild]) for (const sql of dimRemoveSql(() => '?')) db.prepare(sql).run(dim);
    for (const dim of rebuild) {
      for (const sql of dimRebuildFromEventsSql(() => '?', (d) => attrExpr(dims, d), dim)) db.prepare(sql).run(dim);
    }
    db.prepare('INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(ROLLED_DIMENSIONS_META, JSON.stringify(rolled));
  });
}

/** Creates attr_sets' indexes on dimension values (attrSetIndexes), drops those no longer wanted. */
function syncAttrIndexes(db: DatabaseSync, dims: readonly string[], migrating: () => void): void {
  const have = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'attr_sets' AND substr(name, 1, ${ATTR_SET_INDEX_PREFIX.length}) = ?`).all(ATTR_SET_INDEX_PREFIX) as { name: string }[]).map((r) => r.name);
  for (const sql of attrSetIndexChanges(have, dims, (d) => attrExpr(dims, d))) {
    migrating();
    db.exec(sql);
  }
}

/** The SQL expression of dimension `dim`'s value in an attribute set's row, with `dims` configured. */
export function attrExpr(dims: readonly string[], dim: string): string {
  // One literal path (not built by concatenation in SQL), so the expression matches attr_sets' index on it.
  return dimensionExpr(dim, dims, (key) => `json_extract(extra, ${sqlString(`$.${JSON.stringify(key)}`)})`);
}

/** What a migration changed: the schema versions before and after (equal when only the rollups or indexes of the dimensions changed), and how long it took. */
export interface SchemaMigrated {
  from: number;
  to: number;
  durationMs: number;
}

/**
 * Brings the file opened on `db` to the current schema, with the rollups and indexes `dims` need. `onMigrating`
 * is called once, before the first change, if anything is to change. Each migration version is one transaction,
 * as is the dimension rollups' rebuild; each index is built by one statement: a process stopped meanwhile leaves
 * the file at a whole step, and the next start goes on from it. Returns what changed, undefined if nothing did.
 */
export function migrateSchema(db: DatabaseSync, dims: readonly string[], onMigrating: () => void = () => {}): SchemaMigrated | undefined {
  const started = performance.now();
  let told = false;
  const migrating = (): void => {
    if (told) return;
    told = true;
    onMigrating();
  };
  registerMigrationFunctions(db);
  const from = migrate(db, migrating);
  syncDimensions(db, dims, migrating);
  syncAttrIndexes(db, dims, migrating);
  return told ? { from, to: MIGRATIONS.length, durationMs: Math.round(performance.now() - started) } : undefined;
}

/** Logs a migration as PostgreSQL's is logged (`postgres schema migrated`), with how long it took. */
export function logMigrated(logger: Logger | undefined, migrated: SchemaMigrated | undefined): void {
  if (migrated) logger?.info('sqlite schema migrated', { from: migrated.from, to: migrated.to, durationMs: migrated.durationMs });
}

/**
 * The file at `path` locked by another connection past the busy timeout, told with the file and what to do:
 * SQLite's "database is locked" says neither. Undefined for any other failure.
 */
function lockedFailure(path: string, err: unknown): string | undefined {
  if (!/SQLITE_BUSY|database is locked/i.test(describeSqliteError(err))) return undefined;
  return `another process writes to db ${path}: it held the file's write lock past the busy timeout (${formatDuration(BUSY_TIMEOUT_MS)}), and SQLite does not say which; let it finish or stop it, then start hookwatch again`;
}

/**
 * A file of the store at `path` that this user may not open (its -wal or -shm left to root by `sudo hookwatch
 * serve`), named with what to do (file-owner.ts): SQLite says "unable to open database file" or "attempt to write
 * a readonly database" without saying which. Undefined for any other failure.
 */
function unopenedFailure(path: string, err: unknown): string | undefined {
  const unopened = unopenedStoreFile(path, err);
  return unopened && `db ${path}: ${unopenedStoreFileProblem(path, unopened.file, unopened.err)}`;
}

/** A failure to open the file at `path`: SQLite says "unable to open database file" without saying which. */
function openFailure(path: string, err: unknown): StoreUnavailableError {
  return new StoreUnavailableError(lockedFailure(path, err) ?? unopenedFailure(path, err) ?? `cannot open the SQLite database ${path}: ${describeSqliteError(err)}`);
}

/**
 * A failure to migrate or prepare the file at `path`: a file fault is retryable (StoreUnavailableError), a lock
 * held past the busy timeout says so (lockedFailure), anything else stays as is.
 */
export function schemaFailure(path: string, err: unknown): Error {
  const locked = lockedFailure(path, err);
  if (locked) return new Error(locked, { cause: err });
  // SQLite's file names no setting: which file it is, for a db the user did not expect (an old path, a restore).
  if (err instanceof NewerSchemaError) return new Error(`db ${path}: ${err.message}`, { cause: err });
  const fault = sqliteFault(err);
  if (fault) return new StoreUnavailableError(unopenedFailure(path, err) ?? `cannot open the SQLite database ${path}: ${fault}: ${describeSqliteError(err)}`);
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * What the store's write connection sets before it migrates, the worker's too: foreign keys enforced, as the
 * migrations were written for, and the page cache (a negative cache_size is in KiB).
 */
function writeConnectionPragmas(cacheBytes: number): string {
  return `PRAGMA foreign_keys = ON; PRAGMA cache_size = -${Math.max(1, Math.floor(cacheBytes / 1024))};`;
}

/**
 * The write connection to the store's file, as the store and the migration worker open it (`job`'s path,
 * synchronous and page cache), brought to the current schema (migrateSchema), with what changed. A failure closes
 * it and is thrown as the store throws it (openFailure, schemaFailure).
 */
export function openMigrated(job: MigrateJob, onMigrating?: () => void): { db: DatabaseSync; migrated: SchemaMigrated | undefined } {
  let db: DatabaseSync;
  try {
    db = openSqlite(job.path, job.synchronous);
  } catch (err) {
    throw openFailure(job.path, err);
  }
  try {
    db.exec(writeConnectionPragmas(job.cacheBytes));
    return { db, migrated: migrateSchema(db, job.dimensions, onMigrating) };
  } catch (err) {
    db.close();
    throw schemaFailure(job.path, err);
  }
}

/** What migrate-worker.ts is given. */
export interface MigrateJob {
  path: string;
  synchronous: 'full' | 'normal';
  cacheBytes: number;
  dimensions: readonly string[];
}

/**
 * What migrate-worker.ts is started with: the job, and where it marks that it has begun to change the file
 * (schemaChanging), read by this thread without waiting for its message.
 */
export interface MigrateWorkerData {
  job: MigrateJob;
  changing: Int32Array;
}

/** What migrate-worker.ts tells: it began to change the file, it is done, or it failed (the store's error, rebuilt). */
export type MigrateMessage = { type: 'migrating' } | { type: 'done'; migrated: SchemaMigrated | undefined } | { type: 'failed'; message: string; unavailable: boolean };

/**
 * migrateSchema on a worker thread with its own connection to the file (migrate-worker.ts): the event loop stays
 * free meanwhile. Resolves once the file is at the current schema, with what changed; rejects with the error opening the store on
 * this thread would have thrown. The caller holds the store's process lock (process-lock.ts): one process migrates.
 */
export function migrateOnWorker(job: MigrateJob, onMigrating: () => void = () => {}): Promise<SchemaMigrated | undefined> {
  // Marked by the worker itself as it begins, before its first change: its message may reach this thread only
  // after a signal is handled.
  const changing = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
  const data: MigrateWorkerData = { job, changing };
  const worker = startWorker(new URL('./migrate-worker.ts', import.meta.url), { workerData: data });
  onWorker.add(changing);
  return new Promise<SchemaMigrated | undefined>((resolve, reject) => {
    worker.on('message', (m: MigrateMessage) => {
      if (m.type === 'migrating') onMigrating();
      else if (m.type === 'done') resolve(m.migrated);
      else reject(m.unavailable ? new StoreUnavailableError(m.message) : new Error(m.message));
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the schema migration of ${job.path} ended (exit code ${code}) without an answer`)));
  }).finally(() => onWorker.delete(changing));
}

/** The marks of the migrations on a worker thread (migrateOnWorker) not ended yet: 1 once one has begun to change its file. */
const onWorker = new Set<Int32Array>();

/**
 * Whether a migration on a worker thread is changing its file now (schemaChanging). process.exit waits for a
 * worker thread's SQL statement under way, which JavaScript cannot interrupt (node:sqlite has no
 * sqlite3_interrupt): an index built over millions of events holds an exit for minutes, past any stop's grace
 * period. A process killed instead leaves the file at a whole version: SQLite rolls the unfinished transaction back
 * as the file is next opened.
 */
export function schemaChanging(): boolean {
  for (const changing of onWorker) if (Atomics.load(changing, 0) === 1) return true;
  return false;
}
