/**
 * How the PostgreSQL schema is migrated while other replicas keep ingesting. One replica at a time migrates,
 * holding a session advisory lock on a connection of its own; each versioned migration is one transaction
 * (DDL that changes what rows look like), an index of the events built without holding writes, or a column added
 * and filled from the events without holding writes. The index is made on the partitioned table alone (ON ONLY,
 * invalid, no rows read), each partition's index is built with CREATE INDEX CONCURRENTLY and attached, and the
 * parent index becomes valid once every partition has its own, PostgreSQL's documented way for a partitioned table.
 * The column is added with a default (no row rewritten), its values read from the events (which inserts do not
 * wait for) and written a batch of rows at a time, each batch a short transaction of its own. Every step can run
 * again after the process died halfway: a build cut short leaves an invalid index, which is dropped and built
 * again; a fill cut short is done again from the start.
 */
import type pg from 'pg';
import type { Logger } from '../../telemetry/logger.ts';
import { quoteIdent, type EventIndex } from '../sql.ts';
import { liftAnswerTimeout } from './connection.ts';

/**
 * An index of the events built partition by partition without holding writes. `before` and `after`: short
 * statements run first and once every partition has its index (putting aside, or dropping, the index it
 * replaces); each must be idempotent (IF EXISTS), as the whole build may run again.
 */
export interface EventsIndexBuild {
  index: EventIndex;
  before?: string;
  after?: string;
}

/**
 * A column added to a table and filled from the events without holding writes to either (fillColumn). The table
 * has an integer primary key `id`.
 */
export interface ColumnFill {
  table: string;
  column: string;
  /** Adds the column with a default, so no row is rewritten; idempotent (IF NOT EXISTS), as the fill may run again. */
  add: string;
  /** The values: a query of rows (id, value), read once. */
  source: string;
  /** The column ingest locks the table's rows in order of (several rows in one statement), so a batch locks them so too. */
  lockOrder: string;
}

/**
 * A versioned migration: SQL applied in one transaction, an index of the events built concurrently, a column
 * filled in batches, or rows rewritten by code SQL cannot run (`rewrite`, given the migration's connection, in one
 * transaction with the version's record).
 */
export type Migration = string | { build: EventsIndexBuild } | { fill: ColumnFill } | { rewrite: (client: pg.ClientBase) => Promise<void> };

/**
 * How long a short step (creating the empty parent index, attaching a partition's index, dropping or renaming an
 * index) waits for its lock before giving up and trying again: while it waits, writes to the events queue behind
 * it, so it never waits long; a long dashboard read or a stuck write then holds up the migration, not ingest.
 */
export const MIGRATION_STEP_LOCK_TIMEOUT_MS = 1000;

/**
 * The namespace (schema) of hookwatch's tables in SQL: current_schema() quoted first, as a schema named in the
 * URL's search_path may need quoting ("Hook-Watch"), which ::regnamespace would otherwise fold to lower case.
 */
export const OWN_NAMESPACE = 'quote_ident(current_schema())::regnamespace';
/** Attempts of a short step, and of one partition's build (a deadlock with another index build is retried). */
const STEP_ATTEMPTS = 60;
/**
 * Rows of a column fill written per transaction: the rows ingest waits for while a batch holds them, each for
 * milliseconds (a few thousand rows' update).
 */
export const FILL_BATCH_ROWS = 1000;
/** The smallest BIGINT: the id a fill's first batch starts after. */
const MIN_ID = '-9223372036854775808';
/** How often a replica waiting for another one's migration asks for the lock again. */
const LOCK_POLL_MS = 500;

/** SQLSTATEs after which a step is tried again: lock_not_available (lock_timeout), deadlock_detected. */
const RETRY_STEP = new Set(['55P03', '40P01']);
/** SQLSTATE of a relation that went away meanwhile (retention dropped a day's partition). */
const UNDEFINED_TABLE = '42P01';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const codeOf = (err: unknown): string => (err as { code?: string }).code ?? '';

/**
 * How long one wait of a migration for another session's lock or snapshot (a long report, a backup, a session left
 * idle in a transaction) may last before it gives up (MigrationBlockedError). Each wait is bounded on its own, not
 * the waits of a migration together: a long one (an index built partition by partition) waits for many sessions in
 * turn, each briefly, and goes on meanwhile. hookwatch's own sessions never hold one that long: a read ends within
 * the statement timeout (60 s), an ingest transaction left idle within 5 s.
 */
export const MIGRATION_BLOCKED_MS = 300_000;
/** How often a migration under way is looked at for a session it waits for. */
const BLOCKED_CHECK_MS = 500;
/**
 * A migration waiting for a lock again within this long of its last wait still waits for the same thing: a short
 * step's attempts (MIGRATION_STEP_LOCK_TIMEOUT_MS each, then a pause of up to 2 s) count as one wait.
 */
const BLOCKED_GAP_MS = 5_000;
/** How often, at most, a migration that still waits logs what for. */
const BLOCKED_LOG_MS = 10_000;

/** A session a migration waits for: one holding a lock it asks for, or a snapshot an index build waits out. */
export interface Blocker {
  pid: number;
  application: string;
  user: string | null;
  client: string | null;
  state: string | null;
  /** How long its transaction has been open, in seconds (null: none open). */
  transactionSeconds: number | null;
}

/** A blocker in words, for the log and the error: who it is and what it does, never its query's text. */
export function describeBlocker(b: Blocker): string {
  const parts = [`application ${JSON.stringify(b.application)}`];
  if (b.user) parts.push(`user ${JSON.stringify(b.user)}`);
  if (b.client) parts.push(`from ${b.client}`);
  if (b.state) parts.push(b.state);
  if (b.transactionSeconds !== null) parts.push(`its transaction open ${b.transactionSeconds} s`);
  return `PostgreSQL backend ${b.pid} (${parts.join(', ')})`;
}

/** What a migration throws once another session kept it waiting past MIGRATION_BLOCKED_MS, naming that session. */
export class MigrationBlockedError extends Error {
  readonly waitedMs: number;
  readonly blockers: readonly Blocker[];
  constructor(waitedMs: number, blockers: readonly Blocker[]) {
    const who = blockers.length > 0 ? blockers.map(describeBlocker).join('; ') : 'another session';
    const end = blockers.map((b) => `SELECT pg_terminate_backend(${b.pid})`).join('; ');
    super(`the schema migration waited ${Math.round(waitedMs / 1000)} s for a lock or snapshot held by ${who}, and gave up, having changed nothing it cannot take up again: let that session finish${end ? ` or end it (${end})` : ''}, then start hookwatch again`);
    this.name = 'MigrationBlockedError';
    this.waitedMs = waitedMs;
    this.blockers = blockers;
  }
}

/** The watch over a migration's connection (BlockedWatch), as its short steps see it. */
const watches = new WeakMap<pg.PoolClient, BlockedWatch>();

/**
 * Looks at the migration's connection every BLOCKED_CHECK_MS from another one (`pool`, not the one the
 * migration's connection came from: it may be its only one) for the sessions it waits for (pg_blocking_pids: a
 * lock, or an index build waiting out an older snapshot). While it waits it logs them (at once, then every
 * BLOCKED_LOG_MS); kept waiting `boundMs` in one wait, it cancels the statement and the migration ends with
 * MigrationBlockedError naming them. A migration's statement that waits for a lock otherwise
 * waits without a bound (an ALTER, an index build's wait for older transactions), and nothing would say why.
 */
export class BlockedWatch {
  private since: number | undefined;
  private lastSeen = -Infinity;
  private lastLogged = -Infinity;
  private blockers: Blocker[] = [];
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;
  /** Set once the bound has passed: the migration's error is this, should it fail (failure). */
  gaveUp: MigrationBlockedError | undefined;
  private loggedGaveUp = false;

  private readonly pool: pg.Pool;
  private readonly client: pg.PoolClient;
  private readonly pid: number;
  private readonly logger: Logger | undefined;
  /** How long a wait may last before the migration is given up. */
  readonly boundMs: number;

  private constructor(pool: pg.Pool, client: pg.PoolClient, pid: number, logger: Logger | undefined, boundMs: number) {
    this.pool = pool;
    this.client = client;
    this.pid = pid;
    this.logger = logger;
    this.boundMs = boundMs;
  }

  static async start(pool: pg.Pool, client: pg.PoolClient, logger: Logger | undefined, boundMs = MIGRATION_BLOCKED_MS): Promise<BlockedWatch> {
    const r = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const watch = new BlockedWatch(pool, client, Number(r.rows[0]?.pid), logger, boundMs);
    watches.set(client, watch);
    watch.timer = setInterval(() => {
      watch.checking ??= watch.check().catch(() => undefined).finally(() => (watch.checking = undefined));
    }, BLOCKED_CHECK_MS);
    return watch;
  }

  private async check(): Promise<void> {
    const r = await this.pool.query<Blocker>(
      `SELECT a.pid, a.application_name AS application, a.usename AS user, host(a.client_addr) AS client, a.state,
         floor(extract(epoch FROM now() - a.xact_start))::int AS "transactionSeconds"
       FROM pg_stat_activity a WHERE a.pid = ANY(pg_blocking_pids($1)) ORDER BY a.pid`,
      [this.pid],
    );
    const now = performance.now();
    if (r.rows.length === 0) {
      if (now - this.lastSeen > BLOCKED_GAP_MS) this.since = undefined;
      return;
    }
    this.blockers = r.rows;
    this.lastSeen = now;
    this.since ??= now;
    const waitedMs = now - this.since;
    if (this.gaveUp) {
      // Still waiting once given up: the cancel landed between statements (or was refused); this one is cancelled.
      await this.pool.query('SELECT pg_cancel_backend($1)', [this.pid]);
      return;
    }
    if (waitedMs >= this.boundMs) {
      // Logged once the migration fails with it (failure): one whose statement ended meanwhile may succeed.
      this.gaveUp = new MigrationBlockedError(waitedMs, this.blockers);
      // The statement waiting ends (57014); a short step between attempts sees gaveUp.
      await this.pool.query('SELECT pg_cancel_backend($1)', [this.pid]);
      return;
    }
    if (now - this.lastLogged >= BLOCKED_LOG_MS) {
      this.lastLogged = now;
      this.logger?.warn('schema migration waiting for a lock or snapshot held by another session', { waitedS: Math.round(waitedMs / 1000), giveUpAfterS: Math.round(this.boundMs / 1000), blockers: this.blockers.map(describeBlocker) });
    }
  }

  /**
   * Gives the migration up after `waitedMs` of a short step's attempts, which the watch did not see (every look at
   * the sessions failed: no read connection free, the database slow to answer), naming the sessions last seen.
   */
  giveUp(waitedMs: number): MigrationBlockedError {
    this.gaveUp ??= new MigrationBlockedError(waitedMs, performance.now() - this.lastSeen <= BLOCKED_GAP_MS ? this.blockers : []);
    return this.gaveUp;
  }

  /** What the migration fails with: MigrationBlockedError once given up (logged), `err` otherwise. */
  failure(err: unknown): unknown {
    const gaveUp = this.gaveUp;
    if (!gaveUp) return err;
    if (!this.loggedGaveUp) {
      this.loggedGaveUp = true;
      this.logger?.error('schema migration given up: another session kept it waiting', { waitedS: Math.round(gaveUp.waitedMs / 1000), blockers: gaveUp.blockers.map(describeBlocker) });
    }
    return gaveUp;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    watches.delete(this.client);
    await this.checking;
  }
}

/** What withMigrationLock throws once another holder kept the lock past the wait it was given (`waitMs`). */
export class MigrationLockWaitError extends Error {
  constructor(waitMs: number) {
    super(`another replica held the schema migration lock for ${waitMs} ms`);
    this.name = 'MigrationLockWaitError';
  }
}

/**
 * Runs fn on a connection of its own holding the migration lock (a session advisory lock). The lock is asked for
 * with pg_try_advisory_lock every LOCK_POLL_MS, never waited on in a statement: a statement waiting on the lock
 * holds a snapshot, which the holder's CREATE INDEX CONCURRENTLY would wait for in turn. The connection is closed
 * afterwards, which releases the lock (a process that dies releases it with its connection). `waiting` is called
 * once, as it begins to wait for another holder; with `waitMs`, a lock still held by another that long after the
 * first try ends the wait with MigrationLockWaitError, having changed nothing.
 */
export async function withMigrationLock<T>(pool: pg.Pool, lockKey: number, logger: Logger | undefined, fn: (c: pg.PoolClient) => Promise<T>, opts: { waiting?: () => void; waitMs?: number } = {}): Promise<T> {
  const client = await pool.connect();
  // A lost connection rejects the query in flight; this only keeps the process alive.
  const onError = (): void => {};
  client.on('error', onError);
  try {
    // A migration may rewrite a table or build an index over every event: longer than any ingest statement may.
    liftAnswerTimeout(client);
    await client.query('SET statement_timeout = 0');
    const began = performance.now();
    let waited = false;
    for (;;) {
      const r = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [lockKey]);
      if (r.rows[0]?.ok) break;
      if (!waited) {
        logger?.info('waiting for another replica to finish migrating the schema');
        opts.waiting?.();
      }
      waited = true;
      const left = opts.waitMs === undefined ? LOCK_POLL_MS : opts.waitMs - (performance.now() - began);
      if (left <= 0) throw new MigrationLockWaitError(opts.waitMs ?? 0);
      // The last try is made at the bound, not given up on before it.
      await sleep(Math.min(LOCK_POLL_MS, left));
    }
    return await fn(client);
  } finally {
    // Closed, not handed back: it holds the lock and session settings no other query should run with.
    client.release(true);
  }
}

/**
 * Runs step with MIGRATION_STEP_LOCK_TIMEOUT_MS, again while its lock is not granted in time (or it met a
 * deadlock): a write waits behind it that long at most, never behind a queue of steps.
 */
export async function shortSteps<T>(client: pg.PoolClient, logger: Logger | undefined, step: () => Promise<T>): Promise<T> {
  await client.query(`SET lock_timeout = ${MIGRATION_STEP_LOCK_TIMEOUT_MS}`);
  const watch = watches.get(client);
  const began = performance.now();
  try {
    for (let attempt = 1; ; attempt++) {
      // Given up while no statement was under way (the cancel then reached none): no attempt more.
      if (watch?.gaveUp) throw watch.gaveUp;
      try {
        return await step();
      } catch (err) {
        if (watch?.gaveUp) throw watch.gaveUp;
        if (!RETRY_STEP.has(codeOf(err))) throw err;
        // Watched (BlockedWatch), a step is tried again until the watch gives up, or, should the watch see nothing,
        // until its bound and a wait's gap have passed; otherwise STEP_ATTEMPTS times.
        if (!watch && attempt >= STEP_ATTEMPTS) throw err;
        const waitedMs = performance.now() - began;
        if (watch && waitedMs >= watch.boundMs + BLOCKED_GAP_MS) throw watch.giveUp(waitedMs);
        logger?.info('schema migration step waiting for a lock; trying again', { attempt });
        await sleep(Math.min(100 * attempt, 2000));
      }
    }
  } finally {
    await client.query('SET lock_timeout = 0');
  }
}

/** Runs a short DDL statement with MIGRATION_STEP_LOCK_TIMEOUT_MS, again while its lock is not granted in time. */
async function shortStep(client: pg.PoolClient, sql: string, logger: Logger | undefined): Promise<void> {
  await shortSteps(client, logger, () => client.query(sql));
}

/** The name of a partition's part of an events index: the partition's name and the index's after `events_`. */
export function partIndexName(partition: string, index: string): string {
  return `${partition}_${index.replace(/^events_/, '')}`;
}

/**
 * Builds an events index without holding writes (see the top of this file). Ingest on other replicas goes on:
 * a partition's build takes a lock that writes do not wait for, and the short steps wait at most
 * MIGRATION_STEP_LOCK_TIMEOUT_MS at a time. A partition made meanwhile (ingest, retention) gets its part of the
 * index from PostgreSQL as it is created; one dropped meanwhile is skipped.
 */
export async function buildEventsIndex(client: pg.PoolClient, build: EventsIndexBuild, logger: Logger | undefined): Promise<void> {
  const { name, def } = build.index;
  if (build.before) await shortStep(client, build.before, logger);
  await shortStep(client, `CREATE INDEX IF NOT EXISTS ${name} ON ONLY events ${def}`, logger);
  for (let round = 1; ; round++) {
    // The partitions without a part of the index attached to it.
    const missing = await client.query<{ part: string }>(
      `SELECT c.relname AS part FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = 'events'::regclass AND NOT EXISTS (
         SELECT 1 FROM pg_inherits j JOIN pg_index x ON x.indexrelid = j.inhrelid WHERE j.inhparent = $1::regclass AND x.indrelid = c.oid)
       ORDER BY 1`,
      [name],
    );
    if (missing.rows.length === 0) break;
    if (round > STEP_ATTEMPTS) throw new Error(`the index ${name} still misses partitions after ${STEP_ATTEMPTS} rounds: ${missing.rows.map((r) => r.part).join(', ')}`);
    for (const { part } of missing.rows) {
      try {
        await buildPart(client, part, build.index, logger);
      } catch (err) {
        // Retention dropped the day meanwhile, or the build met another one in a deadlock: the next round sees.
        if (codeOf(err) !== UNDEFINED_TABLE && !RETRY_STEP.has(codeOf(err))) throw err;
        logger?.info('schema migration index build of a partition to be tried again', { index: name, partition: part, code: codeOf(err) });
      }
    }
  }
  const valid = await client.query<{ valid: boolean }>('SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = $1::regclass', [name]);
  if (!valid.rows[0]?.valid) throw new Error(`the index ${name} is not valid after every partition's part was attached`);
  if (build.after) await shortStep(client, build.after, logger);
}

/** One partition's part of an index: an invalid one left by an interrupted build is dropped, then built and attached. */
async function buildPart(client: pg.PoolClient, part: string, ix: EventIndex, logger: Logger | undefined): Promise<void> {
  const child = partIndexName(part, ix.name);
  const found = await client.query<{ valid: boolean }>(
    `SELECT x.indisvalid AS valid FROM pg_class c JOIN pg_index x ON x.indexrelid = c.oid WHERE c.relname = $1 AND c.relnamespace = ${OWN_NAMESPACE}`,
    [child],
  );
  if (found.rows[0] && !found.rows[0].valid) {
    await client.query(`DROP INDEX CONCURRENTLY IF EXISTS ${quoteIdent(child)}`);
    logger?.info('dropped an index left by an interrupted schema migration', { index: child });
  }
  if (!found.rows[0]?.valid) await client.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${quoteIdent(child)} ON ${quoteIdent(part)} ${ix.def}`);
  await shortStep(client, `ALTER INDEX ${ix.name} ATTACH PARTITION ${quoteIdent(child)}`, logger);
}

/**
 * Adds a column and fills it without holding writes (see the top of this file). The values are read into a
 * temporary table in one statement, which only reads the events: inserts and the other replicas' reads go on.
 * Then FILL_BATCH_ROWS rows at a time, in order of id, each batch its own transaction: its rows are locked in
 * the order ingest locks them (no deadlock with an ingest's upsert), waiting at most
 * MIGRATION_STEP_LOCK_TIMEOUT_MS for a row an ingest holds, and written. A process killed halfway leaves the
 * column and the batches written; the next start adds nothing and writes every batch again, with the values
 * read again. Rows the other replicas add after the values were read keep the column's default, as they would
 * after a fill in one transaction.
 */
export async function fillColumn(client: pg.PoolClient, fill: ColumnFill, logger: Logger | undefined): Promise<void> {
  const { table, column } = fill;
  await shortStep(client, fill.add, logger);
  await client.query('DROP TABLE IF EXISTS pg_temp.hookwatch_fill');
  await client.query('CREATE TEMPORARY TABLE hookwatch_fill (id BIGINT PRIMARY KEY, value BIGINT NOT NULL)');
  try {
    await client.query(`INSERT INTO pg_temp.hookwatch_fill (id, value) ${fill.source}`);
    // Autovacuum never analyzes a temporary table: without statistics a batch may scan it whole.
    await client.query('ANALYZE pg_temp.hookwatch_fill');
    let after = MIN_ID;
    for (let batches = 0; ; batches++) {
      const last = await shortSteps(client, logger, () => inMigrationTransaction(client, async () => {
        const b = await client.query<{ last: string | null }>(
          `SELECT max(id)::text AS last FROM (SELECT id FROM pg_temp.hookwatch_fill WHERE id > $1::bigint ORDER BY id LIMIT ${FILL_BATCH_ROWS}) AS b`,
          [after],
        );
        const upTo = b.rows[0]?.last ?? null;
        if (upTo === null) return null;
        const range = [after, upTo];
        await client.query(`SELECT 1 FROM ${table} WHERE id > $1::bigint AND id <= $2::bigint AND id IN (SELECT id FROM pg_temp.hookwatch_fill) ORDER BY ${fill.lockOrder} FOR UPDATE`, range);
        await client.query(`UPDATE ${table} AS t SET ${column} = f.value FROM pg_temp.hookwatch_fill AS f WHERE f.id = t.id AND f.id > $1::bigint AND f.id <= $2::bigint`, range);
        return upTo;
      }));
      if (last === null) {
        logger?.info('schema migration column filled', { table, column, batches });
        return;
      }
      after = last;
    }
  } finally {
    // A lost connection took the table with it.
    await client.query('DROP TABLE IF EXISTS pg_temp.hookwatch_fill').catch(() => undefined);
  }
}

/** Runs fn in a transaction on the migration's connection (closed afterwards, so a failed ROLLBACK leaves nothing). */
export async function inMigrationTransaction<T>(client: pg.PoolClient, fn: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const result = await fn();
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
