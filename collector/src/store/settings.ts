/**
 * The store's settings: which database (`db`), SQLite durability, PostgreSQL pool and leader lease, retention
 * and the per-hook limit. A leaf: config/ composes these rows into the one table.
 */
import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { ConfigError, type Setting, type SettingValues } from '../config/setting.ts';
import { LIBPQ_KEYWORDS, postgresUrlProblem, redactUrlPassword, urlPasswordProblem } from '../config/values.ts';

const DAY = 86_400_000;
const MiB = 1024 * 1024;
/**
 * The longest retention: 100 years (of 365 days), as Prometheus caps its own. Far beyond it the cut-off, now less
 * the retention, is no date at all (past 8.64e15 ms a Date is invalid), and retention and queries fail on it.
 */
const MAX_RETENTION = 36_500 * DAY;

/**
 * What SQLite and the process lock (store/sqlite/process-lock.ts) keep beside a database file: its write-ahead
 * log, shared memory and rollback journal, and the lock file with its own journal.
 */
const BESIDE = ['-wal', '-shm', '-journal', '.lock', '.lock-journal'];

/** Links to files not there yet followed in a row before giving up (a loop of them): Linux's own bound. */
const MAX_DANGLING_LINKS = 40;

/**
 * Where `path` is once symbolic links are followed, as far as its folders exist. A link to a file not there yet is
 * followed too: SQLite creates the file it points to.
 */
function realFile(path: string, links = 0): string {
  const full = resolve(path);
  try {
    return realpathSync(full);
  } catch {
    // Not there yet: its folder, linked or not, is where it will be created.
    const parent = dirname(full);
    if (parent === full) return full;
    const file = join(realFile(parent, links), basename(full));
    try {
      if (links < MAX_DANGLING_LINKS && lstatSync(file).isSymbolicLink()) return realFile(resolve(dirname(file), readlinkSync(file)), links + 1);
    } catch {
      // Not there at all.
    }
    return file;
  }
}

/** A file SQLite or the process lock uses for a database: `beside` is '' for the database file itself. */
export interface SqliteFile {
  beside: string;
  file: string;
}

/**
 * The files the SQLite database at `path` uses, each where it is once links are followed, so that two settings
 * naming one file in different words (relative and absolute, through a link) give the same entries. SQLite keeps
 * its files beside the file a link points to; the lock is beside the path as given: both are listed.
 */
export function sqliteFiles(path: string): SqliteFile[] {
  const file = realFile(path);
  return [{ beside: '', file }, ...BESIDE.flatMap((beside) => [...new Set([`${file}${beside}`, realFile(`${path}${beside}`)])].map((f) => ({ beside, file: f })))];
}

/** True for the paths SQLite takes for a database in memory, with no file: '' and ':memory:'. */
export function isInMemory(path: string): boolean {
  return path === '' || path === ':memory:';
}

/** True for postgres:// and postgresql:// URLs: the `db` values that name a PostgreSQL server. */
export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

/**
 * postgres:/u:pw@h/db, postgresql:u:pw@h/db, postgres//u:pw@h/db (a character missing), postgres;//… and
 * postgres ://… (one typed wrong), " postgres://…" and "\"postgres://…\"" (a space, or quotes an env file kept, before
 * it): a URL written wrong, not a file to create. postgres//h.db, with no user or port before the next slash, is a
 * path (a folder joined to a file name with a slash too many).
 */
const MISWRITTEN_POSTGRES_URL = /^(?:[\s"'`]+postgres(?:ql)?\s*[:;]|postgres(?:ql)?(?:\s+[:;]|;\/|:\/?(?!\/)|\/\/[^/]*[@:]))/i;

/**
 * store.readerMaxOldSpace's default: a SQLite read worker's old space (worker-thread.ts heapLimits). Over a store of
 * a million events of some 9,000 hooks (store.maxHooks is 10,000), the largest answers were read in 32 MiB of old
 * space and not in 24, the dashboard's own views and the hooks list in 24: four times the most, for the rows of
 * larger stores. The fleet series reads the rows of the hooks it lists only and the rest as one row per bucket:
 * over 10,000 hooks with events in each of the 30-day chart's 61 buckets (605,000 events), the dashboard's fleet
 * chart (1,000 hooks listed, a step of 12 hours) is answered in 40 MiB and not in 32, its largest read the hooks'
 * counters (a row per hook), where reading every hook's rows failed at 128 MiB. A worker that needs more fails the
 * query it held (503) and is replaced.
 */
export const DEFAULT_READER_MAX_OLD_SPACE = 128 * MiB;

export const STORE_SETTINGS: readonly Setting[] = [
  {
    key: 'db', env: 'HOOKWATCH_DB', type: 'string', default: './data/hookwatch.db', pathDefault: true,
    description: 'The store: a SQLite file path (created if missing), or a postgres:// URL (its password is redacted everywhere, and refused at start when shorter than 4 characters, too short to be scrubbed from logs; a user name or password holding / ? # or % is percent-encoded, / as %2F).',
    // A URL written wrong holds its password where the URL parser cannot find it: all of it is withheld.
    redactValue: (v) => (typeof v === 'string' && MISWRITTEN_POSTGRES_URL.test(v) ? '<redacted>' : redactUrlPassword(v)),
    // Taken for a file name, a keyword/value string, or a URL of another scheme (postgress://, mysql://, file://),
    // would become a SQLite file named after the password, and hookwatch would run on it instead of the server.
    validate: (v) => {
      const db = String(v);
      if (LIBPQ_KEYWORDS.test(db)) return 'a libpq keyword/value connection string is not accepted: give a postgres:// URL, e.g. postgres://user:password@host:5432/hookwatch';
      const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(db)?.[1];
      if (scheme !== undefined && !isPostgresUrl(db)) return `a ${scheme}:// URL is not a store hookwatch opens: give a SQLite file path, or a postgres:// (or postgresql://) URL`;
      if (MISWRITTEN_POSTGRES_URL.test(db)) return 'this looks like a postgres:// URL written wrong (the value must begin with postgres:// or postgresql://, with no quotes or spaces): give a SQLite file path, or a postgres:// (or postgresql://) URL';
      return (isPostgresUrl(db) ? postgresUrlProblem(db) : undefined) ?? urlPasswordProblem(db);
    },
  },
  {
    key: 'sqlite.synchronous', env: 'HOOKWATCH_SQLITE_SYNCHRONOUS', type: 'enum', default: 'full', values: ['full', 'normal'],
    description: 'SQLite durability: `full` syncs every committed batch to disk before the 200 (survives power loss); `normal` survives process crashes only.',
  },
  {
    key: 'sqlite.cacheBytes', env: 'HOOKWATCH_SQLITE_CACHE_BYTES', type: 'bytes', default: 64 * MiB, min: MiB, max: 64 * 1024 * MiB,
    description: 'Page cache of the SQLite connection that ingest writes on, held in memory once the database is that large. A commit under a busy feed touches hundreds of index pages; a cache smaller than those reads them back from the file at every commit.',
  },
  {
    key: 'postgres.poolSize', env: 'HOOKWATCH_POSTGRES_POOL_SIZE', type: 'int', default: 10, min: 1, max: 1000,
    description: 'PostgreSQL connections ingest uses per replica (db is a postgres:// URL). Each replica opens pool size + store.readers + 3 (the leader lease, the signal listener and the /readyz check): replicas x that must stay below the server\'s max_connections.',
  },
  {
    key: 'postgres.leaseTtl', env: 'HOOKWATCH_POSTGRES_LEASE_TTL', type: 'duration', default: 15_000, min: 1000, max: 600_000,
    description: 'Replicas on one PostgreSQL elect one leader (alert evaluation, notifications, retention) with a lease renewed every third of this; when the leader dies another takes over within ttl + ttl/3, and one stopped cleanly hands over at once.',
  },
  {
    key: 'postgres.startTimeout', env: 'HOOKWATCH_POSTGRES_START_TIMEOUT', type: 'duration', default: 0, min: 0, max: 30 * DAY,
    description: 'How long `serve` keeps trying to reach the PostgreSQL server at start (db is a postgres:// URL) before it exits 1. Until the database answers and the schema is migrated, every port listens: /healthz answers ok, /readyz and the API 503, OTLP requests 503 (gRPC UNAVAILABLE) with Retry-After; the first failed attempt is logged at once (`postgres not reachable at start; trying again`), then at most one line per 10 s with the attempts since (each attempt at debug); the next attempt follows after 0.5 s, doubling up to 10 s, and within 1 s of the last while OTLP requests wait for it. Only a database out of reach or refusing connections for now is waited for: a refused password or a missing database exits 1 at once. The wait for another replica migrating the schema counts within it. 0: never give up (a database that comes up after hookwatch, as in Kubernetes).',
  },
  {
    key: 'retention.events', env: 'HOOKWATCH_RETENTION_EVENTS', type: 'duration', default: 30 * DAY, min: 3_600_000, max: MAX_RETENTION,
    description: 'How long raw hook events are kept (deleted in whole hours: an event goes with the hour that holds it). Within it every answer is exact to the minute. Each retention.* is at most 36500d (100 years), as Prometheus caps its own retention: a longer one is refused at start and by a reload, naming the setting.',
  },
  {
    key: 'retention.minuteRollups', env: 'HOOKWATCH_RETENTION_MINUTE_ROLLUPS', type: 'duration', default: 2 * DAY, min: 3_600_000, max: MAX_RETENTION,
    description: 'How long per-minute rollups are kept (cut to retention.events when longer). Minutes older than this are read from the raw events instead (exact, slower); the default covers the dashboard\'s last-hour and last-24-hours views and the alert windows\' recent edges.',
  },
  {
    key: 'retention.rollups', env: 'HOOKWATCH_RETENTION_ROLLUPS', type: 'duration', default: 400 * DAY, min: DAY, max: MAX_RETENTION,
    description: 'How long hourly and daily rollups are kept.',
  },
  {
    key: 'store.maxHooks', env: 'HOOKWATCH_MAX_HOOKS', type: 'int', default: 10_000, min: 1, max: 1_000_000,
    description: 'Most distinct hooks (hook event + hook name) the store keeps. Past it, events of new hook names are counted under one `<hook_event>:(overflow)` hook per hook event (counts kept, never dropped), the client is told in the OTLP partial-success message, hookwatch_hook_events_folded_total counts them and the `hook_limit` alert fires. Hooks with nothing left in retention are removed.',
  },
  {
    key: 'store.readers', env: 'HOOKWATCH_STORE_READERS', type: 'int', default: 2, min: 1, max: 64,
    description: 'Connections that answer API and dashboard queries, apart from the ones ingest writes on, so no query makes an OTLP request wait. SQLite: worker threads, each with its own read-only connection to the file (an in-memory database reads on its one connection). PostgreSQL: the size of a read pool beside the postgres.poolSize connections that ingest uses.',
  },
  {
    key: 'store.readerMaxOldSpace', env: 'HOOKWATCH_STORE_READER_MAX_OLD_SPACE', type: 'bytes', default: DEFAULT_READER_MAX_OLD_SPACE, min: 16 * MiB, max: 64 * 1024 * MiB,
    description: 'SQLite: the old space of each of the store.readers worker threads, as node\'s --max-old-space-size sets the main thread\'s (the young generation adds 24MiB to each worker\'s heap). A query whose rows need more fails alone with 503 (the worker is replaced for the next one) instead of growing the process to the container\'s memory limit; its 503 names this setting. The default is four times what the largest answers of a store of a million events over some 9,000 hooks needed; raise it with store.maxHooks, or when the fleet series of a much larger store at a fine step answers 503. PostgreSQL reads on connections, not threads: unused.',
  },
];

export interface StoreSettings {
  db: string;
  sqlite: { synchronous: 'full' | 'normal'; cacheBytes: number };
  /** Used when db is a postgres:// URL; startTimeoutMs 0: the start waits for the database without a bound. */
  postgres: { poolSize: number; leaseTtlMs: number; startTimeoutMs: number };
  retention: { eventsMs: number; rollupsMs: number; minuteRollupsMs: number };
  store: { maxHooks: number; readers: number; readerMaxOldSpace: number };
}

export function storeConfig(r: SettingValues): StoreSettings {
  return {
    db: nonEmptyDb(r.string('db')),
    sqlite: { synchronous: r.oneOf('sqlite.synchronous', ['full', 'normal']), cacheBytes: r.number('sqlite.cacheBytes') },
    postgres: { poolSize: r.number('postgres.poolSize'), leaseTtlMs: r.number('postgres.leaseTtl'), startTimeoutMs: r.number('postgres.startTimeout') },
    retention: retentionOf(r),
    store: { maxHooks: r.number('store.maxHooks'), readers: r.number('store.readers'), readerMaxOldSpace: r.number('store.readerMaxOldSpace') },
  };
}

/**
 * Per-minute rollups are a recent copy of the raw events, read instead of them for speed: kept longer than the
 * events they would be the only minute data left, so they are cut to retention.events (a shorter events
 * retention alone keeps working as before, the minute rollups following it).
 */
function retentionOf(r: SettingValues): StoreSettings['retention'] {
  const eventsMs = r.number('retention.events');
  return { eventsMs, rollupsMs: r.number('retention.rollups'), minuteRollupsMs: Math.min(r.number('retention.minuteRollups'), eventsMs) };
}

/** An empty db would open SQLite's private temporary database, deleted on close: acknowledged events lost on restart. */
function nonEmptyDb(db: string): string {
  if (db.trim() === '') throw new ConfigError('invalid value "" for db: expected a SQLite file path or a postgres:// URL');
  return db;
}
