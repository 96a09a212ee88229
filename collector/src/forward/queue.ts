/**
 * The durable forwarding queue for one destination: a SQLite file (node:sqlite, WAL). A request is committed
 * here before the client gets its 200, so a crash or SIGKILL after the answer loses nothing; delivery takes
 * requests in order of arrival. Bounded by the bytes of the request bodies it holds: over the bound, enqueue
 * refuses (the receivers answer 503 / UNAVAILABLE with Retry-After) instead of accepting and dropping.
 *
 * A body over BODY_CHUNK_BYTES is kept as several rows of body_chunks, each written, read and deleted by its own
 * statement with the event loop served between them (paced.ts), so a maximum-size request never holds the process
 * for the whole of its write, read or overwrite (secure_delete). No transaction stays open across those pauses
 * (on node:sqlite's one connection every other statement would join it): the chunks of a body are committed one
 * by one under a key nothing refers to yet, and the body becomes a request only when its queue row, naming the
 * key, is committed. A crash before that leaves chunks nothing refers to, removed at the next open; a delivered,
 * evicted or expired body's row goes first, its chunks after it.
 *
 * One process uses a queue file at a time (`<path>.lock`, process-lock.ts): a second would forward the same
 * requests again, and its open-time cleanup would take the chunks of a body the first is writing.
 */
import { statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { inTransaction, openSqlite } from '../store/sqlite/database.ts';
import { lockSqliteFile, type LockedFile, type StoreLock } from '../store/sqlite/process-lock.ts';
import type { Encoding } from '../otlp/encode.ts';
import type { Signal } from '../pipeline/consumer.ts';
import { wellFramed } from '../otlp/skim-proto.ts';
import { runPaced, type Steps } from '../paced.ts';

/** One queued request, oldest first. */
export interface QueuedRequest {
  id: number;
  signal: Signal;
  encoding: Encoding;
  body: Buffer;
  receivedAtMs: number;
  /** Failed delivery attempts so far (kept across restarts). */
  attempts: number;
  /**
   * When the destination first refused it in a way that may be permanent (see ExportResult.bounded), since its
   * clock last ran out while the destination was away (null then, see DurableQueue.retry).
   */
  refusedSinceMs: number | null;
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

/** What an operator sees of the dead letters as a whole. */
export interface DeadLetterSummary {
  count: number;
  bytes: number;
  maxBytes: number;
  oldestFailedAtMs: number | null;
  /** The refusal of the most recent dead letter. */
  lastReason: string | null;
}

export interface QueueOptions {
  path: string;
  /** Bound on the request bytes held (not counting dead letters). */
  maxBytes: number;
  /** Bound on the dead letters' body bytes, kept apart from the queue's; the oldest go first (counted). */
  deadLetterMaxBytes?: number;
  synchronous?: 'full' | 'normal';
}

/** The default bound on dead letters' bytes: a quarter of the default queue bound. */
export const DEFAULT_DEAD_LETTER_MAX_BYTES = 256 * 1024 * 1024;

/** Bodies larger than this are stored, read and deleted in chunks of this size (see the top of this file). */
export const BODY_CHUNK_BYTES = 1024 * 1024;

/**
 * How many bytes of bodies held in their row one transaction of a replay moves, or of an eviction removes, at most
 * (each is copied, or overwritten where it was: secure_delete), the event loop served between; at least one row.
 */
const SLICE_BYTES = 2 * BODY_CHUNK_BYTES;
/** How many rows one such transaction moves or removes at most (those of chunked bodies copy no body). */
const SLICE_ROWS = 1000;

const QUEUE_FILE: LockedFile = {
  setting: 'forward.queue.path',
  advice: 'a forwarding queue file is used by one process at a time, or both would forward the same requests; stop the other one, or give each process a forward.queue.path of its own',
};

/**
 * The queue file's format (`PRAGMA user_version`): 1 since bodies may be held in chunks (body_chunks, an empty body
 * column), which a release that knows no chunks would send as empty bodies. A file without it (0) was written
 * before the mark, in a format this release reads; one of a later format is refused at open, not misread.
 */
export const QUEUE_FORMAT = 1;

/** The most a readiness probe of a queue file that could not take writes writes to it (probeWrite). */
const PROBE_WRITE_BYTES = 64 * 1024;

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
  attempts INTEGER NOT NULL DEFAULT 0,
  refused_since INTEGER,
  body_key INTEGER
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
  reason TEXT NOT NULL,
  body_key INTEGER
);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS body_chunks (
  body INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (body, seq)
);
CREATE INDEX IF NOT EXISTS queue_received ON queue (received_at);
CREATE INDEX IF NOT EXISTS dead_letters_received ON dead_letters (received_at);
CREATE INDEX IF NOT EXISTS dead_letters_failed ON dead_letters (failed_at);
CREATE INDEX IF NOT EXISTS queue_body_key ON queue (body_key) WHERE body_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS dead_letters_body_key ON dead_letters (body_key) WHERE body_key IS NOT NULL;
`;

function format(db: DatabaseSync): number {
  return (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
}

/** Refuses a queue file a later release wrote (QUEUE_FORMAT), before anything reads or changes it. */
function checkFormat(db: DatabaseSync, path: string): void {
  const found = format(db);
  if (found <= QUEUE_FORMAT) return;
  throw new Error(`forward.queue.path ${path}: the forwarding queue file is format ${found}, newer than this hookwatch's (${QUEUE_FORMAT}): a later release wrote it; run that release until GET /api/v1/forwarding shows the queue and dead letters empty, or move the file away (what it holds is then not forwarded)`);
}

/**
 * Queue files written before refused_since, or before bodies were chunked (body_key: null for a body held whole
 * in the body column, as every body of those files is), get the columns, and then the rest of SCHEMA.
 */
function migrate(db: DatabaseSync): void {
  const has = (table: string, column: string): boolean => {
    const rows = db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[];
    // A table not there yet is created by SCHEMA with every column.
    return rows.length === 0 || rows.some((c) => c.name === column);
  };
  if (!has('queue', 'refused_since')) db.exec('ALTER TABLE queue ADD COLUMN refused_since INTEGER');
  if (!has('queue', 'body_key')) db.exec('ALTER TABLE queue ADD COLUMN body_key INTEGER');
  if (!has('dead_letters', 'body_key')) db.exec('ALTER TABLE dead_letters ADD COLUMN body_key INTEGER');
  db.exec(SCHEMA);
  if (format(db) !== QUEUE_FORMAT) db.exec(`PRAGMA user_version = ${QUEUE_FORMAT}`);
  // Chunks of a body whose write or deletion a crash or a closed queue cut short: nothing refers to them.
  db.exec('DELETE FROM body_chunks WHERE body NOT IN (SELECT body_key FROM queue WHERE body_key IS NOT NULL) AND body NOT IN (SELECT body_key FROM dead_letters WHERE body_key IS NOT NULL)');
}

/** Totals kept in the queue file so they survive restarts. */
export type QueueCounter = 'delivered' | 'retries' | 'deadLetters' | 'refusedFull' | 'deadLettersEvicted' | 'expired' | 'replayed';

/**
 * Opens (creating when missing) the queue file readable by its owner only, in a folder it creates 0700: it holds
 * raw request bodies, user emails included. SQLite gives its -wal and -shm files the database file's permissions.
 */
function openPrivate(path: string, synchronous: 'full' | 'normal' | undefined): DatabaseSync {
  const db = openSqlite(path, synchronous);
  // Deleted bodies (delivered, expired) are overwritten rather than left in free pages.
  db.exec('PRAGMA secure_delete = ON');
  return db;
}

type Row = { id: number; signal: Signal; encoding: Encoding; body: Uint8Array; bytes: number; received_at: number; attempts: number; refused_since: number | null; body_key: number | null };

const ROW = 'id, signal, encoding, body, bytes, received_at, attempts, refused_since, body_key';

function toRequest(row: Row, body: Buffer): QueuedRequest {
  return { id: row.id, signal: row.signal, encoding: row.encoding, body, receivedAtMs: row.received_at, attempts: row.attempts, refusedSinceMs: row.refused_since };
}

export class DurableQueue {
  readonly path: string;
  readonly maxBytes: number;
  private readonly db: DatabaseSync;
  private readonly lock: StoreLock;
  readonly deadLetterMaxBytes: number;
  private bytesHeld: number;
  private depthHeld: number;
  /** Dead letters' count and bytes, kept in memory: summing a column stored after the bodies reads them all. */
  private deadCount: number;
  private deadBytes: number;
  /** Bytes of chunked bodies being written: counted against the bound, not yet held. */
  private reserved = 0;
  /** The key the next chunked body is stored under. */
  private nextBodyKey: number;
  private readonly freedListeners: (() => void)[] = [];
  private closed = false;
  private readonly stmt: {
    insert: StatementSync;
    insertChunked: StatementSync;
    chunk: StatementSync;
    readChunk: StatementSync;
    deleteChunk: StatementSync;
    head: StatementSync;
    headRefused: StatementSync;
    headId: StatementSync;
    following: StatementSync;
    byId: StatementSync;
    remove: StatementSync;
    attempt: StatementSync;
    dead: StatementSync;
    deadOldest: StatementSync;
    evictDead: StatementSync;
    refused: StatementSync;
    away: StatementSync;
    replayable: StatementSync;
    lastDeadId: StatementSync;
    requeue: StatementSync;
    removeDead: StatementSync;
    expireQueue: StatementSync;
    expireDead: StatementSync;
    oldest: StatementSync;
    bump: StatementSync;
    counters: StatementSync;
    deadList: StatementSync;
  };

  constructor(opts: QueueOptions) {
    this.path = opts.path;
    this.maxBytes = opts.maxBytes;
    this.deadLetterMaxBytes = opts.deadLetterMaxBytes ?? DEFAULT_DEAD_LETTER_MAX_BYTES;
    // Before the file is opened: the open-time cleanup below must never run on a file another process uses.
    this.lock = lockSqliteFile(opts.path, QUEUE_FILE);
    try {
      this.db = openPrivate(opts.path, opts.synchronous);
    } catch (err) {
      this.lock.release();
      throw err;
    }
    try {
      checkFormat(this.db, opts.path);
      migrate(this.db);
      const totals = this.db.prepare('SELECT count(*) AS n, coalesce(sum(bytes), 0) AS b FROM queue').get() as { n: number; b: number };
      this.depthHeld = totals.n;
      const dead = this.db.prepare('SELECT count(*) AS n, coalesce(sum(bytes), 0) AS b FROM dead_letters').get() as { n: number; b: number };
      this.deadCount = dead.n;
      this.deadBytes = dead.b;
      this.bytesHeld = totals.b;
      this.nextBodyKey = (this.db.prepare('SELECT coalesce(max(body), 0) + 1 AS k FROM body_chunks').get() as { k: number }).k;
      this.stmt = {
        insert: this.db.prepare('INSERT INTO queue (signal, encoding, body, bytes, received_at) VALUES (?, ?, ?, ?, ?)'),
        insertChunked: this.db.prepare("INSERT INTO queue (signal, encoding, body, bytes, received_at, body_key) VALUES (?, ?, X'', ?, ?, ?)"),
        chunk: this.db.prepare('INSERT INTO body_chunks (body, seq, data) VALUES (?, ?, ?)'),
        readChunk: this.db.prepare('SELECT data FROM body_chunks WHERE body = ? AND seq = ?'),
        deleteChunk: this.db.prepare('DELETE FROM body_chunks WHERE body = ?1 AND seq = (SELECT min(seq) FROM body_chunks WHERE body = ?1)'),
        head: this.db.prepare(`SELECT ${ROW} FROM queue ORDER BY id LIMIT 1`),
        headRefused: this.db.prepare('SELECT refused_since FROM queue ORDER BY id LIMIT 1'),
        headId: this.db.prepare('SELECT id FROM queue ORDER BY id LIMIT 1'),
        byId: this.db.prepare(`SELECT ${ROW} FROM queue WHERE id = ?`),
        following: this.db.prepare('SELECT id, signal, encoding, bytes, received_at, attempts FROM queue WHERE id > ? ORDER BY id LIMIT ?'),
        remove: this.db.prepare('DELETE FROM queue WHERE id = ? RETURNING bytes, body_key'),
        attempt: this.db.prepare('UPDATE queue SET attempts = attempts + 1 WHERE id = ?'),
        dead: this.db.prepare('INSERT INTO dead_letters (id, signal, encoding, body, bytes, received_at, failed_at, attempts, status, reason, body_key) SELECT id, signal, encoding, body, bytes, received_at, ?, attempts, ?, ?, body_key FROM queue WHERE id = ?'),
        deadOldest: this.db.prepare('SELECT min(failed_at) AS oldest, (SELECT reason FROM dead_letters ORDER BY failed_at DESC, id DESC LIMIT 1) AS last FROM dead_letters'),
        evictDead: this.db.prepare('DELETE FROM dead_letters WHERE id = (SELECT id FROM dead_letters ORDER BY failed_at LIMIT 1) RETURNING bytes, body_key'),
        refused: this.db.prepare('UPDATE queue SET refused_since = coalesce(refused_since, ?) WHERE id = ?'),
        away: this.db.prepare('UPDATE queue SET refused_since = NULL WHERE id = ? AND refused_since <= ?'),
        replayable: this.db.prepare('SELECT id, received_at, bytes, body_key FROM dead_letters WHERE id <= ?1 AND (received_at, id) > (?2, ?3) ORDER BY received_at, id LIMIT 1'),
        lastDeadId: this.db.prepare('SELECT coalesce(max(id), 0) AS id FROM dead_letters'),
        requeue: this.db.prepare('INSERT INTO queue (signal, encoding, body, bytes, received_at, body_key) SELECT signal, encoding, body, bytes, received_at, body_key FROM dead_letters WHERE id = ?'),
        removeDead: this.db.prepare('DELETE FROM dead_letters WHERE id = ?'),
        expireQueue: this.db.prepare('DELETE FROM queue WHERE received_at < ? RETURNING bytes, body_key'),
        expireDead: this.db.prepare('DELETE FROM dead_letters WHERE received_at < ? RETURNING bytes, body_key'),
        oldest: this.db.prepare('SELECT received_at FROM queue ORDER BY id LIMIT 1'),
        bump: this.db.prepare('INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = value + excluded.value'),
        counters: this.db.prepare('SELECT name, value FROM counters'),
        deadList: this.db.prepare('SELECT id, signal, bytes, received_at, failed_at, attempts, status, reason FROM dead_letters ORDER BY id DESC LIMIT ?'),
      };
    } catch (err) {
      // Not a queue this version can use (a corrupt file, tables it cannot use, a lock held by another program):
      // the handle is not kept, nor the lock.
      this.db.close();
      this.lock.release();
      throw err;
    }
  }

  /** Requests waiting. */
  get depth(): number {
    return this.depthHeld;
  }

  /** Request bytes waiting (the bounded quantity). */
  get bytes(): number {
    return this.bytesHeld;
  }

  /** What takes the room, for a refusal: bytes queued, bytes of bodies being written, and the bound. */
  fill(): string {
    return `${this.bytesHeld} bytes queued + ${this.reserved} being written of ${this.maxBytes}`;
  }

  /** Whether a body of `size` bytes would fit now. */
  hasRoom(size: number): boolean {
    return this.bytesHeld + this.reserved + size <= this.maxBytes;
  }

  /**
   * Calls `listener` each time requests leave the queue (delivered, dead letters, expired), their bytes no longer
   * held, or a large body being written is given up (a write failure, the queue closed), its room no longer taken:
   * the OTLP/gRPC exports held for want of room (receiver/otlp-grpc/store-hold.ts) try again then.
   */
  onFreed(listener: () => void): void {
    this.freedListeners.push(listener);
  }

  private freed(): void {
    for (const l of this.freedListeners) l();
  }

  /**
   * Throws while the file cannot take a body `bytes` long: its file system has less room than that (a full disk),
   * or a small write that leaves nothing behind (a row written and removed in one transaction) fails (a read-only
   * file, an I/O error). The room is read, not written: a write of the whole body would hold the event loop, and
   * past SQLite's largest blob never succeed.
   */
  probeWrite(bytes: number): void {
    const fs = statfsSync(dirname(this.path));
    const room = fs.bavail * fs.bsize;
    if (room < bytes) throw new Error(`${bytes} bytes do not fit on its file system (${room} bytes free)`);
    inTransaction(this.db, () => {
      // Removed in the same commit, its pages overwritten (secure_delete): written to the file all the same.
      this.db.prepare("INSERT INTO counters (name, value) VALUES ('write_probe', zeroblob(?))").run(Math.min(bytes, PROBE_WRITE_BYTES));
      this.db.prepare("DELETE FROM counters WHERE name = 'write_probe'").run();
    });
  }

  /** Counts a request refused because the queue was full (shown to operators as refusedFull). */
  countRefused(): void {
    this.bump('refusedFull', 1);
  }

  /**
   * Commits a request to disk (synced per `synchronous`); throws QueueFullError over the bound. A body over
   * BODY_CHUNK_BYTES is written chunk by chunk, the event loop served between; it is a request only once it is
   * whole (the queue row naming its chunks is the last commit), so the caller answers 200 after this resolves.
   */
  async enqueue(signal: Signal, encoding: Encoding, body: Buffer, receivedAtMs: number): Promise<number> {
    if (!this.hasRoom(body.length)) {
      this.countRefused();
      throw new QueueFullError(`the forwarding queue is full: ${this.fill()}; the request has ${body.length}`);
    }
    if (body.length <= BODY_CHUNK_BYTES) {
      // One statement, one commit: the fsync that makes the 200 safe is the only disk wait on the ingest path.
      const r = this.stmt.insert.run(signal, encoding, body, body.length, receivedAtMs);
      this.bytesHeld += body.length;
      this.depthHeld++;
      return Number(r.lastInsertRowid);
    }
    const key = this.nextBodyKey++;
    this.reserved += body.length;
    try {
      await runPaced(this.writeChunks(key, body));
      const r = this.stmt.insertChunked.run(signal, encoding, body.length, receivedAtMs, key);
      this.reserved -= body.length;
      this.bytesHeld += body.length;
      this.depthHeld++;
      return Number(r.lastInsertRowid);
    } catch (err) {
      // The room the body took is free again, as when requests leave the queue.
      this.reserved -= body.length;
      this.freed();
      // The chunks written so far are no request; what cannot be removed now (a closed queue) goes at the next open.
      await this.dropChunks(key).catch(() => undefined);
      throw err;
    }
  }

  /** The oldest request, or undefined when empty. */
  async head(): Promise<QueuedRequest | undefined> {
    for (;;) {
      const row = this.stmt.head.get() as Row | undefined;
      if (!row) return undefined;
      const item = await this.load(row);
      if (item) return item;
      // Retention removed it while its chunks were read: the next is the head now. Still there, it is damaged.
      if (this.stmt.byId.get(row.id)) throw new Error(`queued request ${row.id} has lost part of its body`);
    }
  }

  /** When the oldest request was first refused in a way that may be permanent; undefined when empty. Reads no body. */
  headRefusedSinceMs(): number | null | undefined {
    const row = this.stmt.headRefused.get() as { refused_since: number | null } | undefined;
    return row ? row.refused_since : undefined;
  }

  /** The id of the oldest request; undefined when empty. Reads no body. */
  headId(): number | undefined {
    const row = this.stmt.headId.get() as { id: number } | undefined;
    return row?.id;
  }

  /**
   * The oldest requests that can travel as one: the head, then the protobuf requests of the same signal right
   * behind it, within `maxCount` and `maxBytes` (the head always comes, whatever its size). Protobuf messages of
   * one type merge by concatenation (repeated fields append), so the batch carries exactly the same content in
   * the same order; OTLP/JSON cannot be merged that way and always travels alone.
   */
  async batch(maxCount: number, maxBytes: number): Promise<QueuedRequest[]> {
    const head = await this.head();
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
      const row = this.stmt.byId.get(id) as Row | undefined;
      const item = row && (await this.load(row));
      if (!item || !wellFramed(item.body)) break;
      out.push(item);
    }
    return out;
  }

  /**
   * Removes delivered requests, in one transaction; then the chunks of their bodies, one statement each with the
   * event loop served between (each overwritten: secure_delete).
   */
  async ack(...ids: number[]): Promise<void> {
    const removed = inTransaction(this.db, () => {
      const out: Removed[] = [];
      for (const id of ids) {
        const r = this.stmt.remove.get(id) as Removed | undefined;
        if (r) out.push(r);
      }
      if (out.length) this.stmt.bump.run('delivered', out.length);
      return out;
    });
    for (const r of removed) {
      this.bytesHeld -= r.bytes;
      this.depthHeld--;
    }
    if (removed.length) this.freed();
    await this.dropBodies(removed);
  }

  /**
   * Records one failed attempt (of a request or a batch) that will be retried. `{ refusedAtMs }`: a refusal that
   * may be permanent, starting each request's forward.retry.maxElapsedTime clock if not yet started.
   * `{ awayRunOutThroughMs }` (now less forward.retry.maxElapsedTime): the destination was away (unreachable,
   * 503...), which clears a clock started at or before that time, one that has run out; the count starts again at
   * the next such refusal, so one before an outage does not give the requests up the moment the destination is
   * back, while a clock still running keeps running (500s between 502s are given up in time). Undefined (a merged
   * attempt sent again smaller or alone): the clock as it was.
   */
  retry(ids: readonly number[], clock?: { refusedAtMs: number } | { awayRunOutThroughMs: number }): void {
    inTransaction(this.db, () => {
      for (const id of ids) {
        this.stmt.attempt.run(id);
        if (clock && 'refusedAtMs' in clock) this.stmt.refused.run(clock.refusedAtMs, id);
        else if (clock) this.stmt.away.run(id, clock.awayRunOutThroughMs);
      }
      this.stmt.bump.run('retries', 1);
    });
  }

  /**
   * Moves requests the destination refused for good to the dead letters, in one transaction; then evicts the
   * oldest dead letters beyond their byte bound (counted as deadLettersEvicted), a few MiB of bodies held in their
   * row per transaction with the event loop served between (each is overwritten: secure_delete), and deletes the
   * chunks of the evicted bodies as ack does. Returns how many were evicted.
   */
  async deadLetter(ids: readonly number[], failedAtMs: number, status: number | null, reason: string): Promise<number> {
    const moved = inTransaction(this.db, () => {
      const out: number[] = [];
      for (const id of ids) {
        this.stmt.attempt.run(id);
        this.stmt.dead.run(failedAtMs, status, reason.slice(0, 1000), id);
        const r = this.stmt.remove.get(id) as { bytes: number } | undefined;
        if (r) out.push(r.bytes);
      }
      this.stmt.bump.run('deadLetters', out.length);
      return out;
    });
    for (const b of moved) {
      this.bytesHeld -= b;
      this.depthHeld--;
      this.deadBytes += b;
      this.deadCount++;
    }
    if (moved.length) this.freed();
    const evicted = await runPaced(this.evictSlices());
    await this.dropBodies(evicted);
    return evicted.length;
  }

  /** Removes the oldest dead letters until they are within their bound, a slice per transaction; returns them. */
  private *evictSlices(): Steps<Removed[]> {
    const evicted: Removed[] = [];
    for (let first = true; !this.closed && this.deadBytes > this.deadLetterMaxBytes; first = false) {
      if (!first) yield;
      const slice = inTransaction(this.db, () => {
        const out: Removed[] = [];
        let bytes = this.deadBytes;
        let overwritten = 0;
        while (bytes > this.deadLetterMaxBytes && overwritten < SLICE_BYTES && out.length < SLICE_ROWS) {
          const e = this.stmt.evictDead.get() as Removed | undefined;
          if (!e) break;
          bytes -= e.bytes;
          out.push(e);
          if (e.body_key === null) overwritten += e.bytes;
        }
        if (out.length) this.stmt.bump.run('deadLettersEvicted', out.length);
        return out;
      });
      for (const e of slice) {
        this.deadBytes -= e.bytes;
        this.deadCount--;
      }
      evicted.push(...slice);
      if (slice.length === 0) break;
    }
    return evicted;
  }

  /**
   * Rewrites the stored reason of each dead letter as `scrub` gives it, in one transaction; returns how many changed.
   * A dead letter an earlier version stored may repeat a credential the destination echoed: run once at start with
   * the destination's secrets, it leaves none in the file (secure_delete overwrites the text replaced).
   */
  scrubDeadLetterReasons(scrub: (text: string) => string): number {
    if (this.deadCount === 0) return 0;
    return inTransaction(this.db, () => {
      const update = this.db.prepare('UPDATE dead_letters SET reason = ? WHERE id = ?');
      let changed = 0;
      for (const r of this.db.prepare('SELECT id, reason FROM dead_letters').all() as { id: number; reason: string }[]) {
        const clean = scrub(r.reason);
        if (clean !== r.reason) changed += Number(update.run(clean, r.id).changes);
      }
      return changed;
    });
  }

  /** Count, bytes and age of the dead letters held. */
  deadLetterSummary(): DeadLetterSummary {
    const o = this.deadCount ? (this.stmt.deadOldest.get() as { oldest: number | null; last: string | null }) : { oldest: null, last: null };
    return { count: this.deadCount, bytes: this.deadBytes, maxBytes: this.deadLetterMaxBytes, oldestFailedAtMs: o.oldest, lastReason: o.last };
  }

  /**
   * Puts the dead letters back at the end of the queue, oldest first, as many as the queue has room for
   * (the rest stay dead letters, to replay once it drained). Resolves to how many were requeued and how many
   * remain. Moved a few MiB of bodies per transaction, the event loop served between (paced.ts): each dead letter
   * is moved whole, in one commit, and the answer comes once all are. Those that become dead letters meanwhile
   * (a replayed request refused again) are not replayed again; a queue closed meanwhile ends it there.
   */
  async replayDeadLetters(): Promise<{ replayed: number; remaining: number }> {
    if (this.deadCount === 0) return { replayed: 0, remaining: 0 };
    // Dead letters keep the id they had queued, and requests queued from now on get higher ones.
    const last = (this.stmt.lastDeadId.get() as { id: number }).id;
    const replayed = await runPaced(this.replaySlices(last));
    return { replayed, remaining: this.deadCount };
  }

  /** Moves dead letters up to id `last` back to the queue, a slice per transaction; returns how many. */
  private *replaySlices(last: number): Steps<number> {
    let after = { receivedAt: Number.MIN_SAFE_INTEGER, id: 0 };
    let replayed = 0;
    for (let first = true; !this.closed; first = false) {
      if (!first) yield;
      const slice = inTransaction(this.db, () => {
        const taken: number[] = [];
        let copied = 0;
        let taking = 0;
        let full = false;
        while (copied < SLICE_BYTES && taken.length < SLICE_ROWS) {
          const r = this.stmt.replayable.get(last, after.receivedAt, after.id) as { id: number; received_at: number; bytes: number; body_key: number | null } | undefined;
          if (!r) break;
          if (!this.hasRoom(taking + r.bytes)) {
            full = true;
            break;
          }
          this.stmt.requeue.run(r.id);
          this.stmt.removeDead.run(r.id);
          after = { receivedAt: r.received_at, id: r.id };
          taken.push(r.bytes);
          taking += r.bytes;
          if (r.body_key === null) copied += r.bytes;
        }
        if (taken.length) this.stmt.bump.run('replayed', taken.length);
        return { taken, full };
      });
      for (const b of slice.taken) {
        this.bytesHeld += b;
        this.depthHeld++;
        this.deadBytes -= b;
        this.deadCount--;
      }
      replayed += slice.taken.length;
      if (slice.full || slice.taken.length === 0) break;
    }
    return replayed;
  }

  /**
   * Retention: removes queued requests and dead letters received before `beforeMs` (counted as expired) in one
   * transaction, then the chunks of their bodies as ack does, then truncates the write-ahead log so no copy of
   * their bodies stays on disk. Returns how many were removed. Once `signal` is aborted (a stop) no more chunks
   * are deleted: nothing refers to those left, removed at the next open.
   */
  async expire(beforeMs: number, signal?: AbortSignal): Promise<number> {
    const r = inTransaction(this.db, () => {
      const queued = this.stmt.expireQueue.all(beforeMs) as Removed[];
      const dead = this.stmt.expireDead.all(beforeMs) as Removed[];
      if (queued.length + dead.length) this.stmt.bump.run('expired', queued.length + dead.length);
      return { queued, dead };
    });
    for (const q of r.queued) {
      this.bytesHeld -= q.bytes;
      this.depthHeld--;
    }
    if (r.queued.length) this.freed();
    for (const d of r.dead) {
      this.deadBytes -= d.bytes;
      this.deadCount--;
    }
    await this.dropBodies([...r.queued, ...r.dead], signal);
    const n = r.queued.length + r.dead.length;
    // Closed or stopped meanwhile: the chunks left go at the next open, and the log with them.
    if (n && !this.closed && !signal?.aborted) this.db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    return n;
  }

  /** Arrival time of the oldest waiting request. */
  oldestReceivedAtMs(): number | undefined {
    const row = this.stmt.oldest.get() as { received_at: number } | undefined;
    return row?.received_at;
  }

  /** Totals since the queue file was created. */
  counters(): Record<QueueCounter, number> {
    const out: Record<QueueCounter, number> = { delivered: 0, retries: 0, deadLetters: 0, refusedFull: 0, deadLettersEvicted: 0, expired: 0, replayed: 0 };
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
    this.lock.release();
  }

  private bump(name: QueueCounter, by: number): void {
    this.stmt.bump.run(name, by);
  }

  /** `row` with its body: from the row, or from its chunks (undefined if they were deleted while being read). */
  private async load(row: Row): Promise<QueuedRequest | undefined> {
    if (row.body_key === null) return toRequest(row, Buffer.from(row.body.buffer, row.body.byteOffset, row.body.byteLength));
    const body = await runPaced(this.readChunks(row.body_key, row.bytes));
    return body && toRequest(row, body);
  }

  private *writeChunks(key: number, body: Buffer): Steps<void> {
    for (let seq = 0, at = 0; at < body.length; seq++, at += BODY_CHUNK_BYTES) {
      if (seq > 0) yield;
      // Each its own commit: no transaction is left open across the pause (see the top of this file).
      this.stmt.chunk.run(key, seq, body.subarray(at, at + BODY_CHUNK_BYTES));
    }
  }

  private *readChunks(key: number, bytes: number): Steps<Buffer | undefined> {
    const body = Buffer.allocUnsafe(bytes);
    let at = 0;
    for (let seq = 0; at < bytes; seq++) {
      if (seq > 0) yield;
      const r = this.stmt.readChunk.get(key, seq) as { data: Uint8Array } | undefined;
      if (!r || at + r.data.byteLength > bytes) return undefined;
      body.set(r.data, at);
      at += r.data.byteLength;
    }
    return body;
  }

  /**
   * Deletes the chunks under `key`, one statement each, the event loop served between. A queue closed meanwhile,
   * or work stopped (`signal`), stops there: nothing refers to the chunks left, removed at the next open.
   */
  private dropChunks(key: number, signal?: AbortSignal): Promise<void> {
    const stmt = this.stmt.deleteChunk;
    const closed = (): boolean => this.closed;
    return runPaced((function* () {
      while (!closed() && !signal?.aborted && Number(stmt.run(key).changes) > 0) yield;
    })());
  }

  /** The chunks of bodies whose rows a committed transaction removed, body after body (until `signal` stops it). */
  private async dropBodies(removed: readonly Removed[], signal?: AbortSignal): Promise<void> {
    for (const r of removed) if (r.body_key !== null) await this.dropChunks(r.body_key, signal);
  }
}

/** What removing a queue row or dead letter returns. */
type Removed = { bytes: number; body_key: number | null };
