/**
 * A read worker of the SQLite store (reader.ts): answers read queries on its own read-only connection to the
 * store's file, off the event loop that receives OTLP and commits ingest. WAL lets it read beside the writer:
 * each query sees every transaction committed before it started.
 */
import { setPriority } from 'node:os';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';
import { Statements } from './database.ts';

/** What the store sends a read worker. */
export type ReadRequest =
  | { type: 'query'; id: number; sql: string; params: SQLInputValue[]; first: boolean }
  /** The store reopened its file (recovered from a loss): read the file now at the path from the next query on. */
  | { type: 'reopen' };

/** A failure as SQLite reported it, rebuilt on the store's side for the same classification as in-thread reads. */
export interface ReadFailure {
  message: string;
  errstr?: string;
  code?: string;
}

/** What a read worker answers, one message per query. */
export type ReadResponse = { id: number; rows: Record<string, unknown>[] } | { id: number; error: ReadFailure };

const { path } = workerData as { path: string };

// On Linux a nice value belongs to the thread that sets it (pid 0 is this thread, not the process): when the
// cores are busy, the event loop that acknowledges OTLP gets them before a dashboard query does. Elsewhere this
// may lower the whole process or be refused; either way reads still run.
try {
  if (process.platform === 'linux') setPriority(0, 10);
} catch {
  // Not permitted here: reads keep the default priority.
}
let conn: { db: DatabaseSync; sql: Statements } | undefined;

/**
 * Opened on the first query (and again after a reopen). Read-only, so a path whose file has gone is never
 * created empty by a reader; query_only besides, so nothing prepared here can write.
 */
function connection(): { db: DatabaseSync; sql: Statements } {
  if (!conn) {
    const db = new DatabaseSync(path, { readOnly: true, timeout: 5000 });
    try {
      db.exec('PRAGMA query_only = ON');
    } catch (err) {
      db.close();
      throw err;
    }
    conn = { db, sql: new Statements(db) };
  }
  return conn;
}

function close(): void {
  try {
    conn?.db.close();
  } catch {
    // The file may be unreadable; a new connection is opened on the next query anyway.
  }
  conn = undefined;
}

function failure(err: unknown): ReadFailure {
  const e = err as { message?: string; errstr?: string; code?: string };
  return { message: e.message ?? String(err), ...(e.errstr ? { errstr: e.errstr } : {}), ...(e.code ? { code: e.code } : {}) };
}

parentPort?.on('message', (m: ReadRequest) => {
  if (m.type === 'reopen') {
    close();
    return;
  }
  let response: ReadResponse;
  try {
    const stmt = connection().sql.get(m.sql);
    const rows = m.first ? [stmt.get(...m.params)].filter((r) => r !== undefined) : stmt.all(...m.params);
    response = { id: m.id, rows: rows as Record<string, unknown>[] };
  } catch (err) {
    response = { id: m.id, error: failure(err) };
    // A connection that failed (I/O error, corruption) is not trusted: the next query opens a new one.
    close();
  }
  parentPort?.postMessage(response);
});
