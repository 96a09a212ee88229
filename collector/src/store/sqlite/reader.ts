/**
 * Where the SQLite store's read queries run: worker threads (read-worker.ts), each with its own read-only
 * connection to the store's file. node:sqlite is synchronous, so a query on the main connection holds the event
 * loop for as long as it runs (seconds for a 30-day filtered view at millions of events), and every OTLP request
 * and ingest commit waits behind it. On workers, the event loop only posts the query and takes the rows back.
 */
import type { Worker } from 'node:worker_threads';
import type { SQLInputValue } from 'node:sqlite';
import { DEFAULT_READER_MAX_OLD_SPACE } from '../settings.ts';
import { StoreUnavailableError } from '../store.ts';
import type { ReadRequest, ReadResponse } from './read-worker.ts';
import { heapLimits, startWorker } from '../../worker-thread.ts';

type Row = Record<string, unknown>;

const MiB = 1024 * 1024;

interface Pending {
  resolve: (rows: Row[]) => void;
  reject: (err: Error) => void;
}

interface Reader {
  worker: Worker;
  pending: Map<number, Pending>;
  /** Sessions open on it: each keeps a read transaction (and a connection) until it ends. */
  sessions: number;
}

/**
 * The queries of one answer, all on one worker in one read transaction (read-worker.ts): each sees the state the
 * first saw, whatever ingest commits meanwhile. `begin` takes that state at once (before any query of the
 * answer); `end` once the answer is read: the transaction lasts until then.
 */
export interface ReadSession {
  begin(): Promise<void>;
  all(sql: string, params: readonly SQLInputValue[]): Promise<Row[]>;
  one(sql: string, params: readonly SQLInputValue[]): Promise<Row | undefined>;
  end(): void;
}

export class SqliteReaders {
  private readonly path: string;
  /** Workers at most: read queries that can run at once. */
  private readonly count: number;
  private readonly readers: Reader[] = [];
  /** store.readerMaxOldSpace: each worker's old space (heapLimits). */
  private readonly maxOldSpaceBytes: number;
  private nextId = 1;
  private closed = false;

  /**
   * `count` workers at most, started on the first queries (a store nobody queries starts none), each with an old
   * space of `maxOldSpaceBytes`: a query whose rows outgrow it fails alone (503), its worker replaced.
   */
  constructor(path: string, count: number, maxOldSpaceBytes = DEFAULT_READER_MAX_OLD_SPACE) {
    this.path = path;
    this.count = Math.max(1, count);
    this.maxOldSpaceBytes = maxOldSpaceBytes;
  }

  /** Rows of a read query. */
  all(sql: string, params: readonly SQLInputValue[]): Promise<Row[]> {
    return this.send(sql, params, false);
  }

  /** The first row of a read query, or undefined. */
  async one(sql: string, params: readonly SQLInputValue[]): Promise<Row | undefined> {
    return (await this.send(sql, params, true))[0];
  }

  /** A session on the least busy worker (ReadSession). */
  session(): ReadSession {
    const id = this.nextId++;
    let reader: Reader | undefined;
    let ended = false;
    const pinned = (): Reader => {
      // A query after the end would begin a transaction of its own that nothing ends (WAL checkpoints would wait
      // on it for ever).
      if (ended) throw new StoreUnavailableError('read after the end of its answer');
      if (!reader) {
        reader = this.pick();
        reader.sessions++;
      }
      return reader;
    };
    return {
      // Any read of the file fixes the transaction's snapshot; the schema table is the one every file has.
      begin: async () => {
        await this.send('SELECT 1 FROM sqlite_master LIMIT 1', [], true, { reader: pinned(), id });
      },
      all: async (sql, params) => this.send(sql, params, false, { reader: pinned(), id }),
      one: async (sql, params) => (await this.send(sql, params, true, { reader: pinned(), id }))[0],
      end: () => {
        if (ended) return;
        ended = true;
        if (!reader) return;
        reader.sessions--;
        reader.worker.postMessage({ type: 'end', session: id } satisfies ReadRequest);
      },
    };
  }

  /**
   * The store opened its file again (a lost file written back, a replaced file): every worker reads the file
   * now at the path from its next query on. Queries already posted run first, on the connection they were sent to.
   */
  reopen(): void {
    for (const r of this.readers) r.worker.postMessage({ type: 'reopen' } satisfies ReadRequest);
  }

  /** Ends every worker; queries in flight are refused. Nothing is left to keep the process alive. */
  async close(): Promise<void> {
    this.closed = true;
    const readers = this.readers.splice(0);
    for (const r of readers) this.fail(r, new StoreUnavailableError('store is closed'));
    await Promise.all(readers.map((r) => r.worker.terminate()));
  }

  /** A query on the least busy worker, or on the worker of a session, in its transaction. */
  private send(sql: string, params: readonly SQLInputValue[], first: boolean, session?: { reader: Reader; id: number }): Promise<Row[]> {
    if (this.closed) return Promise.reject(new StoreUnavailableError('store is closed'));
    // A session whose worker stopped cannot go on elsewhere: another connection would read another state.
    if (session && !this.readers.includes(session.reader)) return Promise.reject(new StoreUnavailableError('the SQLite read worker of this read stopped'));
    const reader = session?.reader ?? this.pick();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      reader.pending.set(id, { resolve, reject });
      // Referenced only while a query is in flight: an idle store never keeps the process alive.
      if (reader.pending.size === 1) reader.worker.ref();
      reader.worker.postMessage({ type: 'query', id, sql, params: [...params], first, ...(session ? { session: session.id } : {}) } satisfies ReadRequest);
    });
  }

  /** The least busy worker (queries in flight and sessions open), or a new one while fewer than `count` run and every one is busy. */
  private pick(): Reader {
    const load = (r: Reader): number => r.pending.size + r.sessions;
    let best: Reader | undefined;
    for (const r of this.readers) if (!best || load(r) < load(best)) best = r;
    if (best && (load(best) === 0 || this.readers.length >= this.count)) return best;
    return this.start();
  }

  private start(): Reader {
    const worker = startWorker(new URL('./read-worker.ts', import.meta.url), { workerData: { path: this.path }, resourceLimits: heapLimits(this.maxOldSpaceBytes) });
    worker.unref();
    const reader: Reader = { worker, pending: new Map(), sessions: 0 };
    worker.on('message', (m: ReadResponse) => {
      const p = reader.pending.get(m.id);
      if (!p) return;
      reader.pending.delete(m.id);
      if (reader.pending.size === 0) worker.unref();
      if ('error' in m) p.reject(Object.assign(new Error(m.error.message), { ...(m.error.errstr ? { errstr: m.error.errstr } : {}), ...(m.error.code ? { code: m.error.code } : {}) }));
      else p.resolve(m.rows);
    });
    // A worker that dies takes only its queries in flight with it; the next query starts another.
    const gone = (err: Error): void => {
      const i = this.readers.indexOf(reader);
      if (i >= 0) this.readers.splice(i, 1);
      this.fail(reader, err);
    };
    worker.on('error', (err) => gone(new StoreUnavailableError((err as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY'
      ? `the SQLite read worker ran out of its heap (store.readerMaxOldSpace, ${Math.ceil(this.maxOldSpaceBytes / MiB)} MiB of old space) answering a query; it is replaced for the next one`
      : `the SQLite read worker failed: ${err.message}`)));
    worker.on('exit', (code) => gone(new StoreUnavailableError(`the SQLite read worker stopped (exit code ${code})`)));
    this.readers.push(reader);
    return reader;
  }

  /** A worker stopped (crashed, or the store closed) with queries in flight: they are refused as retryable (503). */
  private fail(reader: Reader, err: Error): void {
    for (const p of reader.pending.values()) p.reject(err);
    reader.pending.clear();
  }

  /** Workers running now (for tests). */
  get size(): number {
    return this.readers.length;
  }
}
