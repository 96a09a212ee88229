/**
 * The durable queue on a real SQLite file, and the delivery loop's retry schedule with an in-memory exporter
 * (the stage next door) whose answers the test scripts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, type ForwardConfig } from '../config/index.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { checkEndpoint } from './index.ts';
import type { ExportItem, ExportResult, Exporter } from './exporter.ts';
import { Forwarder, backoffDelay, DEFAULT_BACKOFF } from './forwarder.ts';
import { parseForwardHeaders } from './settings.ts';
import { DurableQueue, QueueFullError } from './queue.ts';

const dirs: string[] = [];
const queues: DurableQueue[] = [];
afterEach(() => {
  for (const q of queues.splice(0)) q.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(path?: string, maxBytes = 1000): DurableQueue {
  let p = path;
  if (!p) {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-queue-'));
    dirs.push(dir);
    p = join(dir, 'q.db');
  }
  const q = new DurableQueue({ path: p, maxBytes });
  queues.push(q);
  return q;
}

describe('DurableQueue', () => {
  it('replays dead letters oldest first, only as many as the queue has room for', () => {
    const q = open(undefined, 25);
    for (let i = 0; i < 3; i++) q.deadLetter([q.enqueue('logs', 'json', Buffer.from(`dead-${i}-xx`), i)], 10 + i, 400, 'bad');
    q.enqueue('logs', 'json', Buffer.alloc(5), 9);
    // 5 bytes queued, room for 20: two of the three 9-byte dead letters.
    expect(q.replayDeadLetters()).toEqual({ replayed: 2, remaining: 1 });
    expect(q.depth).toBe(3);
    expect(q.bytes).toBe(23);
    q.ack(q.head()!.id);
    expect(q.batch(1, 100)[0]!.body.toString()).toBe('dead-0-xx');
    expect(q.deadLetterSummary()).toMatchObject({ count: 1, bytes: 9 });
    expect(q.counters().replayed).toBe(2);
    q.close();
    expect(open(q.path, 25).deadLetterSummary()).toMatchObject({ count: 1, bytes: 9, oldestFailedAtMs: 12, lastReason: 'bad' });
  });

  it('expires queued requests and dead letters received before the retention cut-off', () => {
    const q = open(undefined, 1000);
    q.deadLetter([q.enqueue('logs', 'json', Buffer.from('old dead'), 100)], 150, 400, 'bad');
    q.enqueue('logs', 'json', Buffer.from('old queued'), 200);
    q.enqueue('logs', 'json', Buffer.from('new'), 400);
    expect(q.expire(300)).toBe(2);
    expect([q.depth, q.bytes, q.head()!.body.toString(), q.deadLetterSummary().count, q.counters().expired]).toEqual([1, 3, 'new', 0, 2]);
  });

  it('keeps requests in order across a reopen, with their byte total and attempts', () => {
    const q = open();
    q.enqueue('logs', 'protobuf', Buffer.from('first'), 1);
    q.enqueue('metrics', 'json', Buffer.from('second!'), 2);
    q.retry([q.head()!.id]);
    q.close();
    const again = open(q.path);
    expect(again.depth).toBe(2);
    expect(again.bytes).toBe(12);
    const head = again.head()!;
    expect([head.signal, head.encoding, head.body.toString(), head.receivedAtMs, head.attempts]).toEqual(['logs', 'protobuf', 'first', 1, 1]);
    again.ack(head.id);
    expect(again.head()!.body.toString()).toBe('second!');
    expect(again.oldestReceivedAtMs()).toBe(2);
    expect(again.counters()).toMatchObject({ delivered: 1, retries: 1 });
  });

  it('refuses past its byte bound and counts the refusal, then takes data again once drained', () => {
    const q = open(undefined, 10);
    q.enqueue('logs', 'json', Buffer.alloc(6), 1);
    expect(() => q.enqueue('logs', 'json', Buffer.alloc(6), 2)).toThrow(QueueFullError);
    expect(q.counters().refusedFull).toBe(1);
    q.ack(q.head()!.id);
    expect(() => q.enqueue('logs', 'json', Buffer.alloc(6), 3)).not.toThrow();
  });

  it('moves a request to the dead letters in one step, bounded in bytes (oldest evicted) but counted in full', () => {
    const q = new DurableQueue({ path: ':memory:', maxBytes: 1000, deadLetterMaxBytes: 25 });
    queues.push(q);
    for (let i = 0; i < 3; i++) {
      const id = q.enqueue('traces', 'protobuf', Buffer.alloc(10), i);
      q.deadLetter([id], 100 + i, 400, `bad request ${i}`);
    }
    expect(q.depth).toBe(0);
    expect(q.bytes).toBe(0);
    expect(q.counters()).toMatchObject({ deadLetters: 3, deadLettersEvicted: 1 });
    expect(q.deadLetters().map((d) => d.reason)).toEqual(['bad request 2', 'bad request 1']);
    expect(q.deadLetterSummary()).toEqual({ count: 2, bytes: 20, maxBytes: 25, oldestFailedAtMs: 101, lastReason: 'bad request 2' });
    expect(q.deadLetters()[0]).toMatchObject({ signal: 'traces', bytes: 10, status: 400, attempts: 1, failedAtMs: 102 });
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
    q.enqueue('logs', 'json', Buffer.from('a'), 1);
    q.enqueue('logs', 'json', Buffer.from('b'), 2);
    const exporter = new ScriptedExporter([{ kind: 'retryable', message: '503', status: 503, retryAfterMs: 300 }, { kind: 'retryable', message: 'reset' }]);
    const f = new Forwarder({ queue: q, exporter, logger: silentLogger, backoff: { initialMs: 1, maxMs: 5 } });
    f.start();
    await until(() => q.depth === 0);
    await f.stop();
    expect(exporter.attempts.map((a) => a.body)).toEqual(['a', 'a', 'a', 'b']);
    expect(exporter.attempts[1]!.at - exporter.attempts[0]!.at).toBeGreaterThanOrEqual(290);
    expect(exporter.attempts[2]!.at - exporter.attempts[1]!.at).toBeLessThan(250);
    expect(f.status()).toMatchObject({ delivered: 2, retries: 2, deadLetters: 0, consecutiveFailures: 0 });
  });

  it('dead-letters a permanent refusal and moves on; a stopped forwarder leaves the rest queued', async () => {
    const q = open();
    q.enqueue('metrics', 'json', Buffer.from('bad'), 1);
    q.enqueue('logs', 'json', Buffer.from('good'), 2);
    const exporter = new ScriptedExporter([{ kind: 'permanent', message: 'answered 400', status: 400 }]);
    const f = new Forwarder({ queue: q, exporter, logger: silentLogger });
    f.start();
    await until(() => q.depth === 0);
    expect(q.deadLetters()[0]).toMatchObject({ signal: 'metrics', status: 400, reason: 'answered 400' });
    await f.stop();
    await f.stop();
    q.enqueue('logs', 'json', Buffer.from('later'), 3);
    f.notify();
    await new Promise((r) => setTimeout(r, 50));
    expect(q.depth).toBe(1);
    expect(f.status().state).toBe('stopped');
  });
});

describe('Forwarder batching', () => {
  it('merges consecutive protobuf requests of one signal, never JSON, and dead-letters only the bad one of a refused batch', async () => {
    const q = open(undefined, 10_000);
    q.enqueue('logs', 'protobuf', pb('A'), 1);
    q.enqueue('logs', 'protobuf', pb('B'), 2);
    q.enqueue('logs', 'protobuf', pb('C'), 3);
    q.enqueue('metrics', 'protobuf', pb('M'), 4);
    q.enqueue('logs', 'json', Buffer.from('{1}'), 5);
    q.enqueue('logs', 'json', Buffer.from('{2}'), 6);
    q.enqueue('logs', 'protobuf', pb('D'), 7);
    q.enqueue('logs', 'protobuf', pb('E'), 8);
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

  it('keeps a batch within its byte bound, and sends an oversized head alone', () => {
    const q = open(undefined, 10_000);
    q.enqueue('traces', 'protobuf', pb('x'.repeat(28)), 1);
    q.enqueue('traces', 'protobuf', pb('x'.repeat(28)), 2);
    q.enqueue('traces', 'protobuf', pb('x'.repeat(28)), 3);
    expect(q.batch(10, 70).map((i) => i.body.length)).toEqual([30, 30]);
    expect(q.batch(10, 10).map((i) => i.body.length)).toEqual([30]);
    expect(q.batch(1, 1000)).toHaveLength(1);
  });

  it('never merges a request whose framing is not whole (an older queue file may hold one)', () => {
    const q = open(undefined, 10_000);
    q.enqueue('traces', 'protobuf', pb('a'), 1);
    q.enqueue('traces', 'protobuf', pb('b'), 2);
    // Ends in an unterminated group tag (field 99, wire type 3).
    q.enqueue('traces', 'protobuf', Buffer.concat([pb('c'), Buffer.from([0x9b, 0x06])]), 3);
    q.enqueue('traces', 'protobuf', pb('d'), 4);
    expect(q.batch(10, 1000).map((i) => i.body.toString())).toEqual([pb('a').toString(), pb('b').toString()]);
    q.ack(1, 2);
    expect(q.batch(10, 1000)).toHaveLength(1);
  });
});

/** A one-field protobuf message (field 1, length-delimited) holding `s`. */
function pb(s: string): Buffer {
  return Buffer.concat([Buffer.from([0x0a, s.length]), Buffer.from(s)]);
}

describe('Forwarder when something throws', () => {
  it('keeps delivering after an exporter or queue failure instead of stopping until a restart', async () => {
    const q = open();
    q.enqueue('logs', 'json', Buffer.from('x'), 1);
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
