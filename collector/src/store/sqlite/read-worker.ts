/**
 * A read worker of the SQLite store (reader.ts): answers read queries on its own read-only connection to the
 * store's file, off the event loop that receives OTLP and commits ingest. WAL lets it read beside the writer:
 * each query sees every transaction committed before it started. The queries of one answer (a session) run in one
 * read transaction on a connection of their own: all of them see the state the first one saw.
 */
import { setPriority } from 'node:os';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';
import { Statements } from './database.ts';

/** What the store sends a read worker. */
export type ReadRequest =
  /** A query; with `session`, in that session's read transaction (begun by its first query). */
  | { type: 'query'; id: number; sql: string; params: SQLInputValue[]; first: boolean; session?: number }
  /** The session's answer is read: its transaction ends, its connection serves the next session. */
  | { type: 'end'; session: number }
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
interface Connection {
  db: DatabaseSync;
  sql: Statements;
  /** The file's opening it reads (`opened` when it was opened): one from before a reopen is not used again. */
  opened: number;
}

let conn: Connection | undefined;
/** Reopens so far. */
let opened = 0;
/** Sessions' connections, each in its read transaction; undefined for a session whose connection failed. */
const sessions = new Map<number, Connection | undefined>();
/** Connections of ended sessions, kept for the next ones (their statements prepared). */
const spare: Connection[] = [];
const SPARE_CONNECTIONS = 2;

/**
 * Read-only, so a path whose file has gone is never created empty by a reader; query_only besides, so nothing
 * prepared here can write.
 */
function open(): Connection {
  const db = new DatabaseSync(path, { readOnly: true, timeout: 5000 });
  try {
    db.exec('PRAGMA query_only = ON');
  } catch (err) {
    db.close();
    throw err;
  }
  return { db, sql: new Statements(db), opened };
}

/** Opened on the first query (and again after a reopen). */
function connection(): Connection {
  conn ??= open();
  return conn;
}

/**
 * A session's connection: on its first query, a spare one (or a new one) in a read transaction, whose snapshot
 * that query takes. A session whose connection failed fails its later queries: they must not read another state.
 */
function sessionConnection(session: number): Connection {
  if (sessions.has(session)) {
    const c = sessions.get(session);
    if (!c) throw new Error('the read transaction of this answer failed');
    return c;
  }
  let c: Connection | undefined;
  try {
    c = spare.pop() ?? open();
    c.db.exec('BEGIN');
  } catch (err) {
    closeConnection(c);
    sessions.set(session, undefined);
    throw err;
  }
  sessions.set(session, c);
  return c;
}

function endSession(session: number): void {
  const c = sessions.get(session);
  sessions.delete(session);
  if (!c) return;
  try {
    c.db.exec('COMMIT');
  } catch {
    closeConnection(c);
    return;
  }
  if (c.opened === opened && spare.length < SPARE_CONNECTIONS) spare.push(c);
  else closeConnection(c);
}

function closeConnection(c: Connection | undefined): void {
  try {
    c?.db.close();
  } catch {
    // The file may be unreadable; a new connection is opened on the next query anyway.
  }
}

function close(): void {
  closeConnection(conn);
  conn = undefined;
}

function failure(err: unknown): ReadFailure {
  const e = err as { message?: string; errstr?: string; code?: string };
  return { message: e.message ?? String(err), ...(e.errstr ? { errstr: e.errstr } : {}), ...(e.code ? { code: e.code } : {}) };
}

parentPort?.on('message', (m: ReadRequest) => {
  if (m.type === 'reopen') {
    close();
    opened++;
    for (const c of spare.splice(0)) closeConnection(c);
    return;
  }
  if (m.type === 'end') {
    endSession(m.session);
    return;
  }
  let response: ReadResponse;
  try {
    const stmt = (m.session === undefined ? connection() : sessionConnection(m.session)).sql.get(m.sql);
    const rows = m.first ? [stmt.get(...m.params)].filter((r) => r !== undefined) : stmt.all(...m.params);
    response = { id: m.id, rows: rows as Record<string, unknown>[] };
  } catch (err) {
    response = { id: m.id, error: failure(err) };
    // A connection that failed (I/O error, corruption) is not trusted: the next query opens a new one.
    if (m.session === undefined) close();
    else if (sessions.get(m.session)) {
      closeConnection(sessions.get(m.session));
      sessions.set(m.session, undefined);
    }
  }
  parentPort?.postMessage(response);
});
