/**
 * Where the SQLite store's read queries run: worker threads (read-worker.ts), each with its own read-only
 * connection to the store's file. node:sqlite is synchronous, so a query on the main connection holds the event
 * loop for as long as it runs (seconds for a 30-day filtered view at millions of events), and every OTLP request
 * and ingest commit waits behind it. On workers, the event loop only posts the query and takes the rows back.
 */
import { Worker } from 'node:worker_threads';
import type { SQLInputValue } from 'node:sqlite';
import { StoreUnavailableError } from '../store.ts';
import type { ReadRequest, ReadResponse } from './read-worker.ts';

type Row = Record<string, unknown>;

interface Pending {
  resolve: (rows: Row[]) => void;
  reject: (err: Error) => void;
}

interface Reader {
  worker: Worker;
  pending: Map<number, Pending>;
}

export class SqliteReaders {
  private readonly path: string;
  /** Workers at most: read queries that can run at once. */
  readonly count: number;
  private readonly readers: Reader[] = [];
  private nextId = 1;
  private closed = false;

  /** `count` workers at most, started on the first queries (a store nobody queries starts none). */
  constructor(path: string, count: number) {
    this.path = path;
    this.count = Math.max(1, count);
  }

  /** Rows of a read query. */
  all(sql: string, params: readonly SQLInputValue[]): Promise<Row[]> {
    return this.send(sql, params, false);
  }

  /** The first row of a read query, or undefined. */
  async one(sql: string, params: readonly SQLInputValue[]): Promise<Row | undefined> {
    return (await this.send(sql, params, true))[0];
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

  private send(sql: string, params: readonly SQLInputValue[], first: boolean): Promise<Row[]> {
    if (this.closed) return Promise.reject(new StoreUnavailableError('store is closed'));
    const reader = this.pick();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      reader.pending.set(id, { resolve, reject });
      // Referenced only while a query is in flight: an idle store never keeps the process alive.
      if (reader.pending.size === 1) reader.worker.ref();
      reader.worker.postMessage({ type: 'query', id, sql, params: [...params], first } satisfies ReadRequest);
    });
  }

  /** The least busy worker, or a new one while fewer than `count` run and every one is busy. */
  private pick(): Reader {
    let best: Reader | undefined;
    for (const r of this.readers) if (!best || r.pending.size < best.pending.size) best = r;
    if (best && (best.pending.size === 0 || this.readers.length >= this.count)) return best;
    return this.start();
  }

  private start(): Reader {
    const worker = new Worker(new URL('./read-worker.ts', import.meta.url), { workerData: { path: this.path } });
    worker.unref();
    const reader: Reader = { worker, pending: new Map() };
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
    worker.on('error', (err) => gone(new StoreUnavailableError(`the SQLite read worker failed: ${err.message}`)));
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
