/**
 * The durable forwarding queue for one destination: a SQLite file (node:sqlite, WAL). A request is committed
 * here before the client gets its 200, so a crash or SIGKILL after the answer loses nothing; delivery takes
 * requests in order of arrival. Bounded by the bytes of the request bodies it holds: over the bound, enqueue
 * refuses (the receivers answer 503 / UNAVAILABLE with Retry-After) instead of accepting and dropping.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { inTransaction, openSqlite } from '../store/sqlite/database.ts';
import type { Encoding } from '../otlp/encode.ts';
import type { Signal } from '../pipeline/consumer.ts';
import { wellFramed } from '../otlp/skim-proto.ts';

/** One queued request, oldest first. */
export interface QueuedRequest {
  id: number;
  signal: Signal;
  encoding: Encoding;
  body: Buffer;
  receivedAtMs: number;
  /** Failed delivery attempts so far (kept across restarts). */
  attempts: number;
}

/** A request the destination refused for good (a 4xx other than 429, or a permanent gRPC code). */
export interface DeadLetter {
  id: number;
  signal: Signal;
  bytes: number;
  receivedAtMs: number;
  failedAtMs: number;
  attempts: number;
  /** HTTP status or gRPC code of the refusal; null for failures without one. */
  status: number | null;
  reason: string;
}

export interface QueueOptions {
  path: string;
  /** Bound on the request bytes held (not counting dead letters). */
  maxBytes: number;
  /** Dead letters kept with their bodies for inspection; older ones are removed but stay counted. */
  maxDeadLetters?: number;
  synchronous?: 'full' | 'normal';
}

/** The queue refused a request because it is full. */
export class QueueFullError extends Error {
  override name = 'QueueFullError';
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS queue (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  signal TEXT NOT NULL,
  encoding TEXT NOT NULL,
  body BLOB NOT NULL,
  bytes INTEGER NOT NULL,
  received_at INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS dead_letters (
  id INTEGER PRIMARY KEY,
  signal TEXT NOT NULL,
  encoding TEXT NOT NULL,
  body BLOB NOT NULL,
  bytes INTEGER NOT NULL,
  received_at INTEGER NOT NULL,
  failed_at INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  status INTEGER,
  reason TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
`;

/** Totals kept in the queue file so they survive restarts. */
export type QueueCounter = 'delivered' | 'retries' | 'deadLetters' | 'refusedFull';

export class DurableQueue {
  readonly path: string;
  readonly maxBytes: number;
  private readonly db: DatabaseSync;
  private readonly maxDeadLetters: number;
  private bytesHeld: number;
  private depthHeld: number;
  private closed = false;
  private readonly stmt: {
    insert: StatementSync;
    head: StatementSync;
    following: StatementSync;
    byId: StatementSync;
    remove: StatementSync;
    attempt: StatementSync;
    dead: StatementSync;
    trimDead: StatementSync;
    oldest: StatementSync;
    bump: StatementSync;
    counters: StatementSync;
    deadList: StatementSync;
  };

  constructor(opts: QueueOptions) {
    this.path = opts.path;
    this.maxBytes = opts.maxBytes;
    this.maxDeadLetters = opts.maxDeadLetters ?? 1000;
    this.db = openSqlite(opts.path, opts.synchronous);
    this.db.exec(SCHEMA);
    const totals = this.db.prepare('SELECT count(*) AS n, coalesce(sum(bytes), 0) AS b FROM queue').get() as { n: number; b: number };
    this.depthHeld = totals.n;
    this.bytesHeld = totals.b;
    this.stmt = {
      insert: this.db.prepare('INSERT INTO queue (signal, encoding, body, bytes, received_at) VALUES (?, ?, ?, ?, ?)'),
      head: this.db.prepare('SELECT id, signal, encoding, body, received_at, attempts FROM queue ORDER BY id LIMIT 1'),
      byId: this.db.prepare('SELECT id, signal, encoding, body, received_at, attempts FROM queue WHERE id = ?'),
      following: this.db.prepare('SELECT id, signal, encoding, bytes, received_at, attempts FROM queue WHERE id > ? ORDER BY id LIMIT ?'),
      remove: this.db.prepare('DELETE FROM queue WHERE id = ? RETURNING bytes'),
      attempt: this.db.prepare('UPDATE queue SET attempts = attempts + 1 WHERE id = ?'),
      dead: this.db.prepare('INSERT INTO dead_letters (id, signal, encoding, body, bytes, received_at, failed_at, attempts, status, reason) SELECT id, signal, encoding, body, bytes, received_at, ?, attempts, ?, ? FROM queue WHERE id = ?'),
      trimDead: this.db.prepare('DELETE FROM dead_letters WHERE id NOT IN (SELECT id FROM dead_letters ORDER BY id DESC LIMIT ?)'),
      oldest: this.db.prepare('SELECT received_at FROM queue ORDER BY id LIMIT 1'),
      bump: this.db.prepare('INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = value + excluded.value'),
      counters: this.db.prepare('SELECT name, value FROM counters'),
      deadList: this.db.prepare('SELECT id, signal, bytes, received_at, failed_at, attempts, status, reason FROM dead_letters ORDER BY id DESC LIMIT ?'),
    };
  }

  /** Requests waiting. */
  get depth(): number {
    return this.depthHeld;
  }

  /** Request bytes waiting (the bounded quantity). */
  get bytes(): number {
    return this.bytesHeld;
  }

  /** Whether a body of `size` bytes would fit now. */
  hasRoom(size: number): boolean {
    return this.bytesHeld + size <= this.maxBytes;
  }

  /** Counts a request refused because the queue was full (shown to operators as refusedFull). */
  countRefused(): void {
    this.bump('refusedFull', 1);
  }

  /** Commits a request to disk (synced per `synchronous`); throws QueueFullError over the bound. */
  enqueue(signal: Signal, encoding: Encoding, body: Buffer, receivedAtMs: number): number {
    if (!this.hasRoom(body.length)) {
      this.countRefused();
      throw new QueueFullError(`the forwarding queue holds ${this.bytesHeld} of ${this.maxBytes} bytes`);
    }
    // One statement, one commit: the fsync that makes the 200 safe is the only disk wait on the ingest path.
    const r = this.stmt.insert.run(signal, encoding, body, body.length, receivedAtMs);
    this.bytesHeld += body.length;
    this.depthHeld++;
    return Number(r.lastInsertRowid);
  }

  /** The oldest request, or undefined when empty. */
  head(): QueuedRequest | undefined {
    const row = this.stmt.head.get() as { id: number; signal: Signal; encoding: Encoding; body: Uint8Array; received_at: number; attempts: number } | undefined;
    if (!row) return undefined;
    return { id: row.id, signal: row.signal, encoding: row.encoding, body: Buffer.from(row.body.buffer, row.body.byteOffset, row.body.byteLength), receivedAtMs: row.received_at, attempts: row.attempts };
  }

  /**
   * The oldest requests that can travel as one: the head, then the protobuf requests of the same signal right
   * behind it, within `maxCount` and `maxBytes` (the head always comes, whatever its size). Protobuf messages of
   * one type merge by concatenation (repeated fields append), so the batch carries exactly the same content in
   * the same order; OTLP/JSON cannot be merged that way and always travels alone.
   */
  batch(maxCount: number, maxBytes: number): QueuedRequest[] {
    const head = this.head();
    if (!head) return [];
    const out = [head];
    // Only requests whose framing is whole are merged (checked on arrival too; this covers older queue files).
    if (head.encoding !== 'protobuf' || maxCount <= 1 || !wellFramed(head.body)) return out;
    let bytes = head.body.length;
    const rows = this.stmt.following.all(head.id, maxCount - 1) as { id: number; signal: Signal; encoding: Encoding; bytes: number }[];
    const ids: number[] = [];
    for (const r of rows) {
      if (r.signal !== head.signal || r.encoding !== 'protobuf' || bytes + r.bytes > maxBytes) break;
      bytes += r.bytes;
      ids.push(r.id);
    }
    for (const id of ids) {
      const row = this.stmt.byId.get(id) as { id: number; signal: Signal; encoding: Encoding; body: Uint8Array; received_at: number; attempts: number } | undefined;
      if (!row) break;
      const body = Buffer.from(row.body.buffer, row.body.byteOffset, row.body.byteLength);
      if (!wellFramed(body)) break;
      out.push({ id: row.id, signal: row.signal, encoding: row.encoding, body, receivedAtMs: row.received_at, attempts: row.attempts });
    }
    return out;
  }

  /** Removes delivered requests, in one transaction. */
  ack(...ids: number[]): void {
    const removedBytes = inTransaction(this.db, () => {
      const removed: number[] = [];
      for (const id of ids) {
        const r = this.stmt.remove.get(id) as { bytes: number } | undefined;
        if (r) removed.push(r.bytes);
      }
      if (removed.length) this.stmt.bump.run('delivered', removed.length);
      return removed;
    });
    for (const b of removedBytes) {
      this.bytesHeld -= b;
      this.depthHeld--;
    }
  }

  /** Records one failed attempt (of a request or a batch) that will be retried. */
  retry(...ids: number[]): void {
    inTransaction(this.db, () => {
      for (const id of ids) this.stmt.attempt.run(id);
      this.stmt.bump.run('retries', 1);
    });
  }

  /** Moves a request the destination refused for good to the dead letters, in one transaction. */
  deadLetter(id: number, failedAtMs: number, status: number | null, reason: string): void {
    const r = inTransaction(this.db, () => {
      this.stmt.attempt.run(id);
      this.stmt.dead.run(failedAtMs, status, reason.slice(0, 1000), id);
      const removed = this.stmt.remove.get(id) as { bytes: number } | undefined;
      this.stmt.bump.run('deadLetters', 1);
      this.stmt.trimDead.run(this.maxDeadLetters);
      return removed;
    });
    if (r) {
      this.bytesHeld -= r.bytes;
      this.depthHeld--;
    }
  }

  /** Arrival time of the oldest waiting request. */
  oldestReceivedAtMs(): number | undefined {
    const row = this.stmt.oldest.get() as { received_at: number } | undefined;
    return row?.received_at;
  }

  /** Totals since the queue file was created. */
  counters(): Record<QueueCounter, number> {
    const out: Record<QueueCounter, number> = { delivered: 0, retries: 0, deadLetters: 0, refusedFull: 0 };
    for (const row of this.stmt.counters.all() as { name: QueueCounter; value: number }[]) out[row.name] = row.value;
    return out;
  }

  /** The most recent dead letters (without bodies). */
  deadLetters(limit = 50): DeadLetter[] {
    return (this.stmt.deadList.all(limit) as { id: number; signal: Signal; bytes: number; received_at: number; failed_at: number; attempts: number; status: number | null; reason: string }[]).map((r) => ({
      id: r.id,
      signal: r.signal,
      bytes: r.bytes,
      receivedAtMs: r.received_at,
      failedAtMs: r.failed_at,
      attempts: r.attempts,
      status: r.status,
      reason: r.reason,
    }));
  }

  /** Safe to call twice. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }

  private bump(name: QueueCounter, by: number): void {
    this.stmt.bump.run(name, by);
  }
}
