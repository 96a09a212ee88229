/**
 * The durable queue on a real SQLite file, and the delivery loop's retry schedule with an in-memory exporter
 * (the stage next door) whose answers the test scripts.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, type ForwardConfig } from '../config/index.ts';
import { silentLogger } from '../telemetry/logger.ts';
import type { ExportItem, ExportResult, Exporter } from './exporter.ts';
import { Forwarder, backoffDelay, DEFAULT_BACKOFF } from './forwarder.ts';
import { checkEndpoint, parseForwardHeaders } from './settings.ts';
import { BODY_CHUNK_BYTES, DurableQueue, QueueFullError } from './queue.ts';
import { StoreInUseError } from '../store/sqlite/process-lock.ts';
import { SqliteStore } from '../store/sqlite/index.ts';
import { Retention } from '../store/retention.ts';

const dirs: string[] = [];
const queues: DurableQueue[] = [];
afterEach(() => {
  for (const q of queues.splice(0)) q.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(path?: string, maxBytes = 1000, deadLetterMaxBytes?: number): DurableQueue {
  let p = path;
  if (!p) {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-queue-'));
    dirs.push(dir);
    p = join(dir, 'q.db');
  }
  const q = new DurableQueue({ path: p, maxBytes, ...(deadLetterMaxBytes === undefined ? {} : { deadLetterMaxBytes }) });
  queues.push(q);
  return q;
}

describe('DurableQueue', () => {
  it('probes for room for a body by reading its file system, not by writing the body: a 20 MiB probe writes no 20 MiB', () => {
    const q = open();
    const walBefore = statSync(`${q.path}-wal`).size;
    q.probeWrite(20 * 1024 * 1024);
    expect(statSync(`${q.path}-wal`).size - walBefore).toBeLessThan(1024 * 1024);
    // Past any file system's room (and past SQLite's largest blob): said in words, not "string or blob too big".
    expect(() => q.probeWrite(Number.MAX_SAFE_INTEGER)).toThrow(/bytes do not fit on its file system \(\d+ bytes free\)/);
  });

  it('replays dead letters oldest first, only as many as the queue has room for', async () => {
    const q = open(undefined, 25);
    for (let i = 0; i < 3; i++) await q.deadLetter([await q.enqueue('logs', 'json', Buffer.from(`dead-${i}-xx`), i)], 10 + i, 400, 'bad');
    await q.enqueue('logs', 'json', Buffer.alloc(5), 9);
    // 5 bytes queued, room for 20: two of the three 9-byte dead letters.
    expect(await q.replayDeadLetters()).toEqual({ replayed: 2, remaining: 1 });
    expect(q.depth).toBe(3);
    expect(q.bytes).toBe(23);
    await q.ack((await q.head())!.id);
    expect((await q.batch(1, 100))[0]!.body.toString()).toBe('dead-0-xx');
    expect(q.deadLetterSummary()).toMatchObject({ count: 1, bytes: 9 });
    expect(q.counters().replayed).toBe(2);
    q.close();
    expect(open(q.path, 25).deadLetterSummary()).toMatchObject({ count: 1, bytes: 9, oldestFailedAtMs: 12, lastReason: 'bad' });
  });

  it('replays many dead letters a few at a time, the event loop served between, each one moved whole', async () => {
    // Bodies held in their row (up to BODY_CHUNK_BYTES) are copied by the move and overwritten where they were
    // (secure_delete): 200 of 1 MiB held the process for seconds in one transaction.
    const q = open(undefined, 100 * BODY_CHUNK_BYTES);
    const bodies = Array.from({ length: 20 }, () => randomBytes(BODY_CHUNK_BYTES));
    for (const [i, body] of bodies.entries()) await q.deadLetter([await q.enqueue('logs', 'protobuf', body, i)], 100 + i, 400, 'bad');
    const look = (): { queued: number; dead: number; depth: number; deadCount: number } => ({ ...onDisk(q.path), depth: q.depth, deadCount: q.deadLetterSummary().count });
    const replay = await watchTurns(() => q.replayDeadLetters(), look);
    expect(replay.result).toEqual({ replayed: 20, remaining: 0 });
    // Turns of the loop with some moved, not all: each request in the queue or in the dead letters, never both or neither.
    const midway = replay.seen.filter((s) => s.queued > 0 && s.queued < 20);
    expect(midway.length).toBeGreaterThanOrEqual(2);
    for (const s of midway) expect([s.queued + s.dead, s.depth, s.deadCount]).toEqual([20, s.queued, s.dead]);
    expect([q.depth, q.bytes, q.deadLetterSummary().count, q.deadLetterSummary().bytes, q.counters().replayed]).toEqual([20, 20 * BODY_CHUNK_BYTES, 0, 0, 20]);
    // Oldest first, byte for byte.
    for (const body of bodies) {
      const head = (await q.head())!;
      expect(head.body.equals(body)).toBe(true);
      await q.ack(head.id);
    }
  });

  it('expires queued requests and dead letters received before the retention cut-off', async () => {
    const q = open(undefined, 1000);
    await q.deadLetter([await q.enqueue('logs', 'json', Buffer.from('old dead'), 100)], 150, 400, 'bad');
    await q.enqueue('logs', 'json', Buffer.from('old queued'), 200);
    await q.enqueue('logs', 'json', Buffer.from('new'), 400);
    expect(await q.expire(300)).toBe(2);
    expect([q.depth, q.bytes, (await q.head())!.body.toString(), q.deadLetterSummary().count, q.counters().expired]).toEqual([1, 3, 'new', 0, 2]);
  });

  it('keeps requests in order across a reopen, with their byte total and attempts', async () => {
    const q = open();
    await q.enqueue('logs', 'protobuf', Buffer.from('first'), 1);
    await q.enqueue('metrics', 'json', Buffer.from('second!'), 2);
    q.retry([(await q.head())!.id]);
    q.close();
    const again = open(q.path);
    expect(again.depth).toBe(2);
    expect(again.bytes).toBe(12);
    const head = (await again.head())!;
    expect([head.signal, head.encoding, head.body.toString(), head.receivedAtMs, head.attempts]).toEqual(['logs', 'protobuf', 'first', 1, 1]);
    await again.ack(head.id);
    expect((await again.head())!.body.toString()).toBe('second!');
    expect(again.oldestReceivedAtMs()).toBe(2);
    expect(again.counters()).toMatchObject({ delivered: 1, retries: 1 });
  });

  it('refuses past its byte bound and counts the refusal, then takes data again once drained', async () => {
    const q = open(undefined, 10);
    await q.enqueue('logs', 'json', Buffer.alloc(6), 1);
    await expect(q.enqueue('logs', 'json', Buffer.alloc(6), 2)).rejects.toThrow(QueueFullError);
    expect(q.counters().refusedFull).toBe(1);
    await q.ack((await q.head())!.id);
    await expect(q.enqueue('logs', 'json', Buffer.alloc(6), 3)).resolves.toBeTypeOf('number');
  });

  it('tells its listeners when requests leave it (delivered, dead letters, expired), the room there as it does', async () => {
    const q = open(undefined, 10);
    const seen: boolean[] = [];
    // What a listener finds: whether a 6-byte request fits now.
    q.onFreed(() => seen.push(q.hasRoom(6)));
    const first = await q.enqueue('logs', 'json', Buffer.alloc(6), 1);
    await q.retry([first]);
    await q.ack(first + 1000);
    expect(seen).toEqual([]);
    await q.ack(first);
    await q.deadLetter([await q.enqueue('logs', 'json', Buffer.alloc(6), 2)], 3, 400, 'bad');
    await q.enqueue('logs', 'json', Buffer.alloc(6), 4);
    // Only dead letters past the cut-off: nothing leaves the queue.
    await q.expire(3);
    expect(seen).toEqual([true, true]);
    await q.expire(5);
    expect(seen).toEqual([true, true, true]);
  });

  it('moves a request to the dead letters in one step, bounded in bytes (oldest evicted) but counted in full', async () => {
    const q = new DurableQueue({ path: ':memory:', maxBytes: 1000, deadLetterMaxBytes: 25 });
    queues.push(q);
    for (let i = 0; i < 3; i++) {
      const id = await q.enqueue('traces', 'protobuf', Buffer.alloc(10), i);
      await q.deadLetter([id], 100 + i, 400, `bad request ${i}`);
    }
    expect(q.depth).toBe(0);
    expect(q.bytes).toBe(0);
    expect(q.counters()).toMatchObject({ deadLetters: 3, deadLettersEvicted: 1 });
    expect(q.deadLetters().map((d) => d.reason)).toEqual(['bad request 2', 'bad request 1']);
    expect(q.deadLetterSummary()).toEqual({ count: 2, bytes: 20, maxBytes: 25, oldestFailedAtMs: 101, lastReason: 'bad request 2' });
    expect(q.deadLetters()[0]).toMatchObject({ signal: 'traces', bytes: 10, status: 400, attempts: 1, failedAtMs: 102 });
  });
});

/** The body chunks and queue rows of the file at `path`, as another connection sees them (what is committed). */
function onDisk(path: string): { chunks: number; queued: number; dead: number } {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const n = (sql: string): number => (db.prepare(sql).get() as { n: number }).n;
    return { chunks: n('SELECT count(*) AS n FROM body_chunks'), queued: n('SELECT count(*) AS n FROM queue'), dead: n('SELECT count(*) AS n FROM dead_letters') };
  } finally {
    db.close();
  }
}

/**
 * Calls `look` at every turn of the event loop while `work` runs (from the check phase, as paced work pauses
 * there), and returns what `work` gave with what `look` saw.
 */
async function watchTurns<T, S>(work: () => Promise<T>, look: () => S): Promise<{ result: T; seen: S[] }> {
  const seen: S[] = [];
  let watching = true;
  const turn = (): void => {
    if (!watching) return;
    seen.push(look());
    setImmediate(turn);
  };
  setImmediate(turn);
  try {
    return { result: await work(), seen };
  } finally {
    watching = false;
  }
}

/** The schema queue files had before large bodies were stored in chunks. */
const SCHEMA_BEFORE_CHUNKS = `
CREATE TABLE queue (id INTEGER PRIMARY KEY AUTOINCREMENT, signal TEXT NOT NULL, encoding TEXT NOT NULL, body BLOB NOT NULL, bytes INTEGER NOT NULL, received_at INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, refused_since INTEGER);
CREATE TABLE dead_letters (id INTEGER PRIMARY KEY, signal TEXT NOT NULL, encoding TEXT NOT NULL, body BLOB NOT NULL, bytes INTEGER NOT NULL, received_at INTEGER NOT NULL, failed_at INTEGER NOT NULL, attempts INTEGER NOT NULL, status INTEGER, reason TEXT NOT NULL);
CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE INDEX queue_received ON queue (received_at);
CREATE INDEX dead_letters_received ON dead_letters (received_at);
CREATE INDEX dead_letters_failed ON dead_letters (failed_at);
`;

describe('DurableQueue with bodies over BODY_CHUNK_BYTES', () => {
  const large = (): Buffer => randomBytes(3 * BODY_CHUNK_BYTES + 12_345);
  /** Opened again, the queue at `path` holds nothing, its leftover chunks gone, and takes a large body whole. */
  async function expectReopenedClean(path: string): Promise<void> {
    const again = open(path, 100 * BODY_CHUNK_BYTES);
    expect([again.depth, again.bytes, await again.head()]).toEqual([0, 0, undefined]);
    expect(onDisk(path).chunks).toBe(0);
    const body = large();
    await again.enqueue('logs', 'protobuf', body, 2);
    expect((await again.head())!.body.equals(body)).toBe(true);
  }

  it('writes, reads and deletes a large body chunk by chunk, the event loop served between, and gives it back byte for byte', async () => {
    const q = open(undefined, 100 * BODY_CHUNK_BYTES);
    const body = large();
    const write = await watchTurns(() => q.enqueue('traces', 'protobuf', body, 1), () => ({ ...onDisk(q.path), depth: q.depth }));
    // Turns of the loop while some chunks, not all, were committed: no request yet, in the file or in the count.
    const midway = write.seen.filter((s) => s.chunks > 0 && s.chunks < 4);
    expect(midway.length).toBeGreaterThanOrEqual(2);
    for (const s of midway) expect([s.queued, s.depth]).toEqual([0, 0]);
    expect([q.depth, q.bytes, onDisk(q.path)]).toEqual([1, body.length, { chunks: 4, queued: 1, dead: 0 }]);

    const read = await watchTurns(() => q.batch(10, 2 * BODY_CHUNK_BYTES), () => 0);
    expect(read.seen.length).toBeGreaterThanOrEqual(3);
    expect(read.result).toHaveLength(1);
    expect(read.result[0]!.body.equals(body)).toBe(true);
    expect(read.result[0]).toMatchObject({ id: write.result, signal: 'traces', encoding: 'protobuf', receivedAtMs: 1 });

    const ack = await watchTurns(() => q.ack(write.result), () => ({ ...onDisk(q.path), depth: q.depth }));
    // The request goes first, in one commit; then its chunks, one by one.
    const deleting = ack.seen.filter((s) => s.chunks > 0 && s.chunks < 4);
    expect(deleting.length).toBeGreaterThanOrEqual(2);
    for (const s of deleting) expect([s.queued, s.depth]).toEqual([0, 0]);
    expect(onDisk(q.path)).toEqual({ chunks: 0, queued: 0, dead: 0 });
    expect([q.bytes, q.counters().delivered]).toEqual([0, 1]);
  });

  it('leaves nothing to forward when a write is cut short, gives its room back to its listeners, and removes its chunks at the next open', async () => {
    const body = large();
    const q = open(undefined, body.length);
    const seen: boolean[] = [];
    q.onFreed(() => seen.push(q.hasRoom(body.length)));
    const write = q.enqueue('logs', 'protobuf', body, 1);
    // The queue closes (as at a crash, nothing after this runs on it) once the first chunks are committed.
    await watchTurns(() => write.catch(() => undefined), () => {
      if (onDisk(q.path).chunks >= 2) q.close();
    });
    await expect(write).rejects.toThrow(/finalized|not open/);
    // The room the body had taken is free again: held exports waiting for it are told.
    expect(seen).toEqual([true]);
    expect(onDisk(q.path)).toMatchObject({ chunks: 2, queued: 0 });
    await expectReopenedClean(q.path);
  });

  it('refuses a second opening of a queue file in use, naming the file and its setting, and leaves the body being written whole', async () => {
    const q = open(undefined, 100 * BODY_CHUNK_BYTES);
    const body = large();
    let refused: unknown;
    // A second opening while some chunks of the body are committed: its open-time cleanup must not take them.
    await watchTurns(() => q.enqueue('logs', 'protobuf', body, 1), () => {
      if (refused !== undefined || onDisk(q.path).chunks < 2) return;
      try {
        open(q.path, 100 * BODY_CHUNK_BYTES);
        refused = false;
      } catch (err) {
        refused = err;
      }
    });
    expect(refused).toBeInstanceOf(StoreInUseError);
    expect((refused as Error).message).toBe(`another hookwatch process uses forward.queue.path ${q.path} (it holds ${q.path}.lock): a forwarding queue file is used by one process at a time, or both would forward the same requests; stop the other one, or give each process a forward.queue.path of its own`);
    expect((await q.head())!.body.equals(body)).toBe(true);
    // Closed, the queue lets go of its file: it opens again, with the request.
    q.close();
    expect(open(q.path, 100 * BODY_CHUNK_BYTES).depth).toBe(1);
  });

  it('lets go of a file it cannot use as a queue, so it opens once the file is repaired', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-queue-'));
    dirs.push(dir);
    const path = join(dir, 'q.db');
    // Tables in place with the columns its migration looks at, but not the ones its statements need.
    const damaged = new DatabaseSync(path);
    damaged.exec('CREATE TABLE dead_letters (id INTEGER PRIMARY KEY, bytes INTEGER, received_at INTEGER, failed_at INTEGER, body_key INTEGER)');
    damaged.close();
    expect(() => open(path)).toThrow(/no column named signal/);
    // The same refusal again: not one saying another process uses the file.
    expect(() => open(path)).toThrow(/no column named signal/);
    const repair = new DatabaseSync(path);
    repair.exec('DROP TABLE dead_letters');
    repair.close();
    expect(open(path).depth).toBe(0);
  });

  it('keeps concurrent writes apart and within the bound, counting a body being written against it', async () => {
    const q = open(undefined, 7 * BODY_CHUNK_BYTES);
    const [a, b, small] = [large(), large(), Buffer.from('small')];
    const writes = [q.enqueue('logs', 'protobuf', a, 1), q.enqueue('logs', 'protobuf', b, 2), q.enqueue('logs', 'json', small, 3)];
    // Room for two large bodies, not three: the third is refused while the first two are still being written,
    // and the refusal says where the room went.
    const refused = q.enqueue('logs', 'protobuf', large(), 4);
    await expect(refused).rejects.toThrow(QueueFullError);
    await expect(refused).rejects.toThrow(`the forwarding queue is full: 5 bytes queued + ${a.length + b.length} being written of ${7 * BODY_CHUNK_BYTES}`);
    await Promise.all(writes);
    const bodies: Buffer[] = [];
    for (let item = await q.head(); item; item = await q.head()) {
      bodies.push(item.body);
      await q.ack(item.id);
    }
    // The small one was whole first; each large one is whole once its last chunk is.
    expect(bodies.map((x) => x.length)).toEqual([5, a.length, b.length]);
    expect([bodies[1]!.equals(a), bodies[2]!.equals(b)]).toEqual([true, true]);
    expect(onDisk(q.path)).toEqual({ chunks: 0, queued: 0, dead: 0 });
  });

  it('moves a large body to the dead letters and back without copying it, and removes it on eviction or expiry', async () => {
    const q = open(undefined, 100 * BODY_CHUNK_BYTES, 5 * BODY_CHUNK_BYTES);
    const body = large();
    await q.deadLetter([await q.enqueue('metrics', 'protobuf', body, 1)], 10, 400, 'bad');
    expect(onDisk(q.path)).toEqual({ chunks: 4, queued: 0, dead: 1 });
    expect(q.deadLetterSummary()).toMatchObject({ count: 1, bytes: body.length });
    expect(await q.replayDeadLetters()).toEqual({ replayed: 1, remaining: 0 });
    expect((await q.head())!.body.equals(body)).toBe(true);
    // A second dead letter over the bound evicts the first, chunks and all.
    await q.deadLetter([(await q.head())!.id], 20, 400, 'bad again');
    await q.deadLetter([await q.enqueue('metrics', 'protobuf', large(), 30)], 40, 400, 'bad');
    expect([q.deadLetterSummary().count, q.counters().deadLettersEvicted, onDisk(q.path)]).toEqual([1, 1, { chunks: 4, queued: 0, dead: 1 }]);
    await q.enqueue('logs', 'protobuf', large(), 50);
    expect(await q.expire(100)).toBe(2);
    expect(onDisk(q.path)).toEqual({ chunks: 0, queued: 0, dead: 0 });
  });

  it('evicts and expires a large body chunk by chunk, the event loop served between, its row gone first', async () => {
    const q = open(undefined, 100 * BODY_CHUNK_BYTES, 5 * BODY_CHUNK_BYTES);
    const look = (): { chunks: number; queued: number; dead: number; depth: number; deadCount: number } => ({ ...onDisk(q.path), depth: q.depth, deadCount: q.deadLetterSummary().count });
    await q.deadLetter([await q.enqueue('metrics', 'protobuf', large(), 1)], 10, 400, 'bad');
    const second = large();
    const id = await q.enqueue('metrics', 'protobuf', second, 2);
    // The second dead letter evicts the first: the first's row goes with the move, in one commit; its chunks after.
    const evict = await watchTurns(() => q.deadLetter([id], 20, 400, 'bad again'), look);
    expect(evict.result).toBe(1);
    const evicting = evict.seen.filter((s) => s.chunks > 4 && s.chunks < 8);
    expect(evicting.length).toBeGreaterThanOrEqual(2);
    for (const s of evicting) expect([s.queued, s.dead, s.depth, s.deadCount]).toEqual([0, 1, 0, 1]);
    expect(onDisk(q.path)).toEqual({ chunks: 4, queued: 0, dead: 1 });
    expect(await q.replayDeadLetters()).toEqual({ replayed: 1, remaining: 0 });
    const replayed = (await q.head())!;
    expect(replayed.body.equals(second)).toBe(true);

    await q.deadLetter([replayed.id], 30, 400, 'bad');
    await q.enqueue('logs', 'protobuf', large(), 40);
    // Retention: both rows go in one commit, then their chunks one by one.
    const expire = await watchTurns(() => q.expire(100), look);
    expect(expire.result).toBe(2);
    const expiring = expire.seen.filter((s) => s.chunks > 0 && s.chunks < 8);
    expect(expiring.length).toBeGreaterThanOrEqual(2);
    for (const s of expiring) expect([s.queued, s.dead, s.depth, s.deadCount]).toEqual([0, 0, 0, 0]);
    expect(onDisk(q.path)).toEqual({ chunks: 0, queued: 0, dead: 0 });
    expect([q.bytes, q.deadLetterSummary().bytes, q.counters()]).toMatchObject([0, 0, { expired: 2, deadLettersEvicted: 1 }]);
    const body = large();
    await q.enqueue('logs', 'protobuf', body, 200);
    expect((await q.head())!.body.equals(body)).toBe(true);
  });

  it('evicts many dead letters held in their row a few at a time, the event loop served between, for one large one', async () => {
    // Each evicted body held in its row is overwritten (secure_delete): all in the transaction that moved the large
    // one, a maximum-size dead letter evicting 20 of 1 MiB held the process for a tenth of a second or more.
    const q = open(undefined, 100 * BODY_CHUNK_BYTES, 8 * BODY_CHUNK_BYTES);
    for (let i = 0; i < 8; i++) await q.deadLetter([await q.enqueue('logs', 'protobuf', randomBytes(BODY_CHUNK_BYTES), i)], 10 + i, 400, 'bad');
    const body = randomBytes(6 * BODY_CHUNK_BYTES + 1);
    const id = await q.enqueue('traces', 'protobuf', body, 20);
    const look = (): { queued: number; dead: number; deadCount: number } => ({ ...onDisk(q.path), deadCount: q.deadLetterSummary().count });
    const move = await watchTurns(() => q.deadLetter([id], 30, 400, 'bad'), look);
    expect(move.result).toBe(7);
    // Turns of the loop with some evicted, not all: the large one already a dead letter, the count as on disk.
    const midway = move.seen.filter((s) => s.dead > 2 && s.dead < 9);
    expect(midway.length).toBeGreaterThanOrEqual(2);
    for (const s of midway) expect([s.queued, s.deadCount]).toEqual([0, s.dead]);
    expect(q.deadLetterSummary()).toMatchObject({ count: 2, bytes: BODY_CHUNK_BYTES + body.length });
    expect(q.counters()).toMatchObject({ deadLetters: 9, deadLettersEvicted: 7 });
    expect(q.deadLetters().map((d) => d.receivedAtMs)).toEqual([20, 7]);
  });

  it('leaves nothing to forward when expiry is cut short, and removes the rest of its chunks at the next open', async () => {
    const q = open(undefined, 100 * BODY_CHUNK_BYTES);
    await q.enqueue('logs', 'protobuf', large(), 1);
    // The queue closes (as at a crash or a stop) once the row is gone and some of its chunks, not all.
    const expire = await watchTurns(() => q.expire(100), () => {
      const d = onDisk(q.path);
      if (d.chunks > 0 && d.chunks < 4) q.close();
    });
    expect(expire.result).toBe(1);
    const left = onDisk(q.path);
    expect([left.queued, left.dead, left.chunks > 0 && left.chunks < 4]).toEqual([0, 0, true]);
    await expectReopenedClean(q.path);
  });

  it('ends expiry at a pause once retention is stopped, and removes the rest of its chunks at the next open', async () => {
    const q = open(undefined, 100 * BODY_CHUNK_BYTES);
    await q.enqueue('logs', 'protobuf', large(), 1);
    await q.enqueue('logs', 'protobuf', large(), 2);
    const store = new SqliteStore({ path: join(dirname(q.path), 'store.db') });
    const retention = new Retention({
      store, eventsMs: 100, rollupsMs: 100, isLeader: () => true, logger: silentLogger, now: () => 200,
      expireForwarded: (beforeMs, signal) => q.expire(beforeMs, signal),
    });
    // Stopped (as at SIGTERM) once both rows are gone and some of their chunks, not all: what the file holds then.
    let atStop: ReturnType<typeof onDisk> | undefined;
    let stopping: Promise<void> | undefined;
    try {
      await watchTurns(() => retention.run(), () => {
        const d = onDisk(q.path);
        if (atStop || d.chunks === 0 || d.chunks >= 8) return;
        atStop = d;
        stopping = retention.stop();
      });
      await stopping;
    } finally {
      await store.close();
    }
    expect(atStop).toMatchObject({ queued: 0, dead: 0 });
    // No chunk was deleted after the stop, and the run counts as stopped.
    expect(onDisk(q.path)).toEqual(atStop);
    expect(retention.stats).toMatchObject({ stopped: 1, succeeded: 0, failed: 0 });
    q.close();
    await expectReopenedClean(q.path);
  });

  it('opens a queue file of the schema before chunks, keeps its requests and dead letters, and chunks what comes next', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-queue-'));
    dirs.push(dir);
    const path = join(dir, 'q.db');
    const old = new DatabaseSync(path);
    const [whole, dead] = [large(), Buffer.from('dead body')];
    old.exec(SCHEMA_BEFORE_CHUNKS);
    old.prepare('INSERT INTO queue (signal, encoding, body, bytes, received_at, attempts, refused_since) VALUES (?, ?, ?, ?, ?, ?, ?)').run('traces', 'protobuf', whole, whole.length, 5, 2, 6);
    old.prepare('INSERT INTO dead_letters VALUES (7, ?, ?, ?, ?, 1, 2, 3, 400, ?)').run('logs', 'json', dead, dead.length, 'refused');
    old.exec("INSERT INTO counters VALUES ('delivered', 9)");
    old.close();

    const q = open(path, 100 * BODY_CHUNK_BYTES);
    expect([q.depth, q.bytes, q.deadLetterSummary().bytes, q.counters().delivered]).toEqual([1, whole.length, dead.length, 9]);
    const head = (await q.head())!;
    expect(head.body.equals(whole)).toBe(true);
    expect(head).toMatchObject({ signal: 'traces', receivedAtMs: 5, attempts: 2, refusedSinceMs: 6 });
    const body = large();
    await q.enqueue('traces', 'protobuf', body, 8);
    expect(onDisk(path)).toEqual({ chunks: 4, queued: 2, dead: 1 });
    await q.ack(head.id);
    expect(await q.replayDeadLetters()).toEqual({ replayed: 1, remaining: 0 });
    q.close();
    const again = open(path, 100 * BODY_CHUNK_BYTES);
    const items: Buffer[] = [];
    for (let item = await again.head(); item; item = await again.head()) {
      items.push(item.body);
      await again.ack(item.id);
    }
    expect(items.map((b) => b.toString('base64'))).toEqual([body, dead].map((b) => b.toString('base64')));
    expect(again.counters().delivered).toBe(12);
  });
});

/** An exporter that answers from a script and remembers when each attempt came. */
class ScriptedExporter implements Exporter {
  readonly description = 'scripted (test)';
  readonly attempts: { at: number; body: string }[] = [];
  private readonly script: ExportResult[];
  constructor(script: ExportResult[]) {
    this.script = script;
  }
  accepts(): boolean {
    return true;
  }
  async export(item: ExportItem): Promise<ExportResult> {
    this.attempts.push({ at: performance.now(), body: item.body.toString() });
    return this.script.shift() ?? { kind: 'success' };
  }
  async close(): Promise<void> {}
}

async function until(cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('Forwarder', () => {
  it('draws the wait with full jitter under a ceiling that grows by the multiplier up to the maximum', () => {
    const b = { ...DEFAULT_BACKOFF, initialMs: 100, maxMs: 1000, multiplier: 1.5 };
    // The top of each draw shows its ceiling: 100, 150, 225 ms, ..., capped at 1 s.
    const top = (failures: number, options = b): number => backoffDelay(failures, options, () => 0.999999);
    expect([1, 2, 3, 10].map((n) => top(n))).toEqual([99, 149, 224, 999]);
    expect([backoffDelay(1, b, () => 0.5), backoffDelay(3, b, () => 0)]).toEqual([50, 0]);
    // The configured defaults: first ceiling 5 s, then 7.5 s, capped at 30 s.
    expect([1, 2, 50].map((n) => top(n, DEFAULT_BACKOFF))).toEqual([4999, 7499, 29_999]);
  });

  it('keeps a retryable request at the head, waits at least Retry-After, then delivers in order', async () => {
    const q = open();
    await q.enqueue('logs', 'json', Buffer.from('a'), 1);
    await q.enqueue('logs', 'json', Buffer.from('b'), 2);
    // A Retry-After well apart from the backoff (at most 5 ms): on a loaded machine a retry due at once may still
    // come a few hundred ms late, and must not read as the Retry-After applied again.
    const exporter = new ScriptedExporter([{ kind: 'retryable', message: '503', status: 503, retryAfterMs: 1500 }, { kind: 'retryable', message: 'reset' }]);
    const f = new Forwarder({ queue: q, exporter, logger: silentLogger, backoff: { initialMs: 1, maxMs: 5 } });
    f.start();
    await until(() => q.depth === 0);
    await f.stop();
    expect(exporter.attempts.map((a) => a.body)).toEqual(['a', 'a', 'a', 'b']);
    expect(exporter.attempts[1]!.at - exporter.attempts[0]!.at).toBeGreaterThanOrEqual(1490);
    expect(exporter.attempts[2]!.at - exporter.attempts[1]!.at).toBeLessThan(1000);
    expect(f.status()).toMatchObject({ delivered: 2, retries: 2, deadLetters: 0, consecutiveFailures: 0 });
  });

  it('dead-letters a permanent refusal and moves on; a stopped forwarder leaves the rest queued', async () => {
    const q = open();
    await q.enqueue('metrics', 'json', Buffer.from('bad'), 1);
    await q.enqueue('logs', 'json', Buffer.from('good'), 2);
    const exporter = new ScriptedExporter([{ kind: 'permanent', message: 'answered 400', status: 400 }]);
    const f = new Forwarder({ queue: q, exporter, logger: silentLogger });
    f.start();
    await until(() => q.depth === 0);
    expect(q.deadLetters()[0]).toMatchObject({ signal: 'metrics', status: 400, reason: 'answered 400' });
    await f.stop();
    await f.stop();
    await q.enqueue('logs', 'json', Buffer.from('later'), 3);
    f.notify();
    await new Promise((r) => setTimeout(r, 50));
    expect(q.depth).toBe(1);
    expect(f.status().state).toBe('stopped');
  });
});

describe('Forwarder batching', () => {
  it('merges consecutive protobuf requests of one signal, never JSON, and dead-letters only the bad one of a refused batch', async () => {
    const q = open(undefined, 10_000);
    await q.enqueue('logs', 'protobuf', pb('A'), 1);
    await q.enqueue('logs', 'protobuf', pb('B'), 2);
    await q.enqueue('logs', 'protobuf', pb('C'), 3);
    await q.enqueue('metrics', 'protobuf', pb('M'), 4);
    await q.enqueue('logs', 'json', Buffer.from('{1}'), 5);
    await q.enqueue('logs', 'json', Buffer.from('{2}'), 6);
    await q.enqueue('logs', 'protobuf', pb('D'), 7);
    await q.enqueue('logs', 'protobuf', pb('E'), 8);
    // The merged ABC is refused for good; alone, A is the bad one; the rest goes through.
    const exporter = new ScriptedExporter([{ kind: 'permanent', message: 'answered 400', status: 400 }, { kind: 'permanent', message: 'answered 400', status: 400 }]);
    const f = new Forwarder({ queue: q, exporter, logger: silentLogger, batch: { maxRequests: 2 + 1, maxBytes: 1000 } });
    f.start();
    await until(() => q.depth === 0);
    await f.stop();
    expect(exporter.attempts.map((a) => a.body)).toEqual(['ABC', 'A', 'BC', 'M', '{1}', '{2}', 'DE'].map((b) => (b.startsWith('{') ? b : [...b].map((c) => pb(c).toString()).join(''))));
    expect(q.deadLetters().map((d) => d.bytes)).toEqual([3]);
    expect(f.status()).toMatchObject({ delivered: 7, deadLetters: 1 });
  });

  it('keeps a batch within its byte bound, and sends an oversized head alone', async () => {
    const q = open(undefined, 10_000);
    await q.enqueue('traces', 'protobuf', pb('x'.repeat(28)), 1);
    await q.enqueue('traces', 'protobuf', pb('x'.repeat(28)), 2);
    await q.enqueue('traces', 'protobuf', pb('x'.repeat(28)), 3);
    expect((await q.batch(10, 70)).map((i) => i.body.length)).toEqual([30, 30]);
    expect((await q.batch(10, 10)).map((i) => i.body.length)).toEqual([30]);
    expect(await q.batch(1, 1000)).toHaveLength(1);
  });

  it('never merges a request whose framing is not whole (an older queue file may hold one)', async () => {
    const q = open(undefined, 10_000);
    await q.enqueue('traces', 'protobuf', pb('a'), 1);
    await q.enqueue('traces', 'protobuf', pb('b'), 2);
    // Ends in an unterminated group tag (field 99, wire type 3).
    await q.enqueue('traces', 'protobuf', Buffer.concat([pb('c'), Buffer.from([0x9b, 0x06])]), 3);
    await q.enqueue('traces', 'protobuf', pb('d'), 4);
    expect((await q.batch(10, 1000)).map((i) => i.body.toString())).toEqual([pb('a').toString(), pb('b').toString()]);
    await q.ack(1, 2);
    expect(await q.batch(10, 1000)).toHaveLength(1);
  });
});

/** A one-field protobuf message (field 1, length-delimited) holding `s`. */
function pb(s: string): Buffer {
  return Buffer.concat([Buffer.from([0x0a, s.length]), Buffer.from(s)]);
}

describe('Forwarder when something throws', () => {
  it('keeps delivering after an exporter or queue failure instead of stopping until a restart', async () => {
    const q = open();
    await q.enqueue('logs', 'json', Buffer.from('x'), 1);
    let calls = 0;
    const exporter: Exporter = {
      description: 'throws once (test)',
      accepts: () => true,
      export: async () => {
        if (calls++ === 0) throw new Error('disk I/O error');
        return { kind: 'success' };
      },
      close: async () => {},
    };
    const f = new Forwarder({ queue: q, exporter, logger: silentLogger, backoff: { initialMs: 1, maxMs: 5 } });
    f.start();
    await until(() => q.depth === 0);
    await f.stop();
    expect(calls).toBe(2);
    expect(f.status().delivered).toBe(1);
  });
});

describe('forward.endpoint', () => {
  const base: ForwardConfig = { endpoint: '', protocol: 'http/protobuf', headers: {}, compression: 'gzip', timeoutMs: 1000, queue: { path: ':memory:', maxBytes: 1024 }, retry: { initialMs: 1, maxMs: 1, maxElapsedMs: 0 }, deadLetters: { maxBytes: 1024 }, enrich: false };
  it('is checked at start with a message naming the setting and not the password', () => {
    expect(() => checkEndpoint({ ...base, endpoint: 'collector:4318' })).toThrow(/forward\.endpoint.*scheme must be http or https/);
    expect(() => checkEndpoint({ ...base, endpoint: 'http://user:pw-1234@[bad' })).toThrow(ConfigError);
    try {
      checkEndpoint({ ...base, endpoint: 'http://user:pw-1234@[bad' });
    } catch (err) {
      expect((err as Error).message).not.toContain('pw-1234');
    }
    expect(() => checkEndpoint({ ...base, endpoint: 'https://otlp.example.com' })).not.toThrow();
    expect(() => checkEndpoint({ ...base, protocol: 'grpc', endpoint: 'collector:4317' })).not.toThrow();
  });
});

describe('small parsers', () => {
  it('reads forward.headers from the environment form and the file form, naming the bad header', () => {
    expect(parseForwardHeaders('x-api-key=a%20b12, dd-api-key=c123')).toEqual({ 'x-api-key': 'a b12', 'dd-api-key': 'c123' });
    expect(parseForwardHeaders({ 'X-Honeycomb-Team': 'k123' })).toEqual({ 'x-honeycomb-team': 'k123' });
    expect(parseForwardHeaders('bad header=1')).toMatch(/"bad header" is not a valid header name/);
    expect(parseForwardHeaders({ x: 'a\r\nb' })).toMatch(/line break/);
  });
});

describe('the queue file format', () => {
  it('marks the file with its format, opens one without a mark (an earlier release\'s) as it is, and refuses a newer one naming forward.queue.path, untouched', async () => {
    const q = open();
    const path = q.path;
    await q.enqueue('logs', 'json', Buffer.from('{"kept":true}'), 1);
    q.close();
    const version = (): unknown => {
      const db = new DatabaseSync(path);
      try {
        return (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
      } finally {
        db.close();
      }
    };
    expect(version()).toBe(1);
    const set = (v: number): void => {
      const db = new DatabaseSync(path);
      db.exec(`PRAGMA user_version = ${v}`);
      db.close();
    };
    // A queue an earlier release wrote has no mark: its requests are there, and the file gets the mark.
    set(0);
    const earlier = open(path);
    expect((await earlier.head())?.body.toString()).toBe('{"kept":true}');
    earlier.close();
    expect(version()).toBe(1);
    // A later release's queue (bodies this one might not read whole) is refused, not read nor changed.
    set(2);
    expect(() => open(path)).toThrow(`forward.queue.path ${path}: the forwarding queue file is format 2, newer than this hookwatch's (1): a later release wrote it; run that release until GET /api/v1/forwarding shows the queue and dead letters empty, or move the file away (what it holds is then not forwarded)`);
    expect(version()).toBe(2);
    // The refusal let go of the file's lock: the file opens once the release that reads it runs.
    set(1);
    expect((await open(path).head())?.body.toString()).toBe('{"kept":true}');
  });
});
