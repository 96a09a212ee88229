/**
 * The forwarder's delivery loop over a real queue file, with the destination faked (the stage next door) or a
 * real HTTP server on loopback: how it gives up on requests a destination keeps refusing, and how it gets a
 * backlog through a destination too slow for large merged requests.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createHttp2Server } from 'node:http2';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Metadata, Server as GrpcServer, ServerCredentials, status as GrpcStatus, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import { afterEach, expect, it } from 'vitest';
import { grpcFrame } from '../../test/faults/grpc-raw.ts';
import { encodeExportResponse } from '../otlp/encode.ts';
import { STATUS_DETAILS_KEY } from '../otlp/grpc-status.ts';
import { lengthDelimited } from '../otlp/proto-write.ts';
import { createLogger, silentLogger } from '../telemetry/logger.ts';
import type { ExportItem, ExportResult, Exporter } from './exporter.ts';
import { GrpcExporter } from './exporter-grpc.ts';
import { HttpExporter } from './exporter-http.ts';
import { DEFAULT_BACKOFF, Forwarder, STOP_GRACE_MS } from './forwarder.ts';
import { DurableQueue } from './queue.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Refuses every request with 401, counting the attempts and the requests each carried. */
class RefusingDestination implements Exporter {
  readonly description = 'refusing destination';
  attempts = 0;
  sent = 0;
  accepts(): boolean {
    return true;
  }
  export(item: ExportItem): Promise<ExportResult> {
    this.attempts++;
    // Each request is the two bytes of an empty ResourceSpans: merged ones are concatenated.
    this.sent += item.body.length / 2;
    return Promise.resolve({ kind: 'retryable', message: 'answered 401', status: 401, bounded: true });
  }
  async close(): Promise<void> {}
}

it('gives up on each expired request after trying it alone once, without resending the merged batch between', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
  const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
  const destination = new RefusingDestination();
  const forwarder = new Forwarder({ queue, exporter: destination, logger: silentLogger, maxElapsedMs: 200, backoff: { initialMs: 10, maxMs: 50 } });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => forwarder.stop());
  forwarder.start();
  const requests = 300;
  for (let i = 0; i < requests; i++) {
    await queue.enqueue('traces', 'protobuf', Buffer.from([0x0a, 0x00]), Date.now());
    forwarder.notify();
  }
  const until = Date.now() + 20_000;
  while (queue.deadLetterSummary().count < requests && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  expect(queue.deadLetterSummary().count).toBe(requests);
  // Merged retries within the 200 ms, then one attempt alone per request: about one attempt per request, where
  // resending the rest of a merged batch after each dead letter took two and a hundredfold upload.
  expect(destination.attempts).toBeLessThan(requests * 1.5);
  expect(destination.sent).toBeLessThan(requests * 20);
});

/**
 * An OTLP/HTTP destination on 127.0.0.1:0 that refuses with 400 any upload carrying a request numbered 255 and
 * takes the rest. Each request is a ResourceSpans of one byte, its number: [0x0a, 0x01, n]; merged ones are
 * concatenated.
 */
async function pickyDestination(): Promise<{ url: string; attempts: number[][]; delivered: number[]; close(): Promise<void> }> {
  const attempts: number[][] = [];
  const delivered: number[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const numbers: number[] = [];
      for (let at = 0; at + 2 < body.length; at += 3) numbers.push(body[at + 2]!);
      attempts.push(numbers);
      if (numbers.includes(255)) {
        res.writeHead(400, { 'content-type': 'text/plain' });
        res.end('request 255 is malformed');
        return;
      }
      delivered.push(...numbers);
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  return { ...(await listening(server)), attempts, delivered };
}

it('sends the requests of a merged attempt refused for good alone, up to its last, not merged again after each one taken', { timeout: 30_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
  const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
  const destination = await pickyDestination();
  const exporter = new HttpExporter({ endpoint: destination.url, protocol: 'http/protobuf', headers: {}, compression: 'none', timeoutMs: 5_000 });
  const forwarder = new Forwarder({ queue, exporter, logger: silentLogger, backoff: { initialMs: 10, maxMs: 50 } });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => destination.close(), () => forwarder.stop());
  // A backlog of 100, the last one refused for good, then 10 more after it.
  for (let i = 0; i < 99; i++) await queue.enqueue('traces', 'protobuf', Buffer.from([0x0a, 0x01, i]), Date.now());
  await queue.enqueue('traces', 'protobuf', Buffer.from([0x0a, 0x01, 255]), Date.now());
  for (let i = 100; i < 110; i++) await queue.enqueue('traces', 'protobuf', Buffer.from([0x0a, 0x01, i]), Date.now());
  forwarder.start();
  const until = Date.now() + 20_000;
  while (queue.depth > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  expect(queue.depth).toBe(0);
  expect(destination.delivered).toEqual([...Array.from({ length: 99 }, (_, i) => i), ...Array.from({ length: 10 }, (_, i) => 100 + i)]);
  expect(queue.deadLetters().map((d) => d.status)).toEqual([400]);
  // The merged attempt refused once, then each of its requests alone (the bad one dead-lettered on its own), then
  // the 10 after it merged: the upload refused whole once, where each request taken alone was followed by the
  // rest merged again and refused, 199 attempts and about 50 times the bytes.
  const merged = destination.attempts.filter((a) => a.length > 1);
  expect(merged).toEqual([[...Array.from({ length: 99 }, (_, i) => i), 255], Array.from({ length: 10 }, (_, i) => 100 + i)]);
  expect(destination.attempts).toHaveLength(1 + 100 + 1);
});

it('counts forward.retry.maxElapsedTime again after the destination was away, so a refusal before an outage of a day does not give up the requests after it', { timeout: 30_000 }, async () => {
  const hour = 3_600_000;
  let clock = Date.UTC(2026, 0, 5, 9);
  // A key refused once (401), then the destination away for 25 hours (503), then a deploy's 500 twice, then taken.
  const answers = [401, ...Array.from({ length: 25 }, () => 503), 500, 500];
  const carried: number[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // An hour passes per attempt; each request is the two bytes of an empty ResourceSpans.
      clock += hour;
      carried.push(Buffer.concat(chunks).length / 2);
      res.writeHead(answers[carried.length - 1] ?? 200, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  const destination = await listening(server);
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
  const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
  const exporter = new HttpExporter({ endpoint: destination.url, protocol: 'http/protobuf', headers: {}, compression: 'none', timeoutMs: 5_000 });
  const forwarder = new Forwarder({ queue, exporter, logger: silentLogger, now: () => clock, backoff: { initialMs: 1, maxMs: 2 } });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => destination.close(), () => forwarder.stop());
  for (let i = 0; i < 3; i++) await queue.enqueue('traces', 'protobuf', Buffer.from([0x0a, 0x00]), clock);
  forwarder.start();
  const until = Date.now() + 20_000;
  while (queue.depth > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
  // The 500s came 27 hours after the 401, but an hour after the destination was last away: retried merged, then
  // taken, where the first was given up at once ("retried for 97200 s") and the others tried alone.
  expect(queue.deadLetters()).toEqual([]);
  expect(forwarder.status()).toMatchObject({ depth: 0, delivered: 3, deadLetters: 0 });
  expect(carried).toEqual(Array.from({ length: answers.length + 1 }, () => 3));
});

it('gives up a request answered 500 and 502 in turn once forward.retry.maxElapsedTime has passed since the first 500', { timeout: 30_000 }, async () => {
  const hour = 3_600_000;
  let clock = Date.UTC(2026, 0, 5, 9);
  // A body the destination cannot take (500) while its backend restarts (502), for 30 hours, then taken.
  const answers = Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? 500 : 502));
  const statuses: number[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      // An hour passes per attempt.
      clock += hour;
      const status = answers[statuses.length] ?? 200;
      statuses.push(status);
      res.writeHead(status, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  const destination = await listening(server);
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
  const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
  const exporter = new HttpExporter({ endpoint: destination.url, protocol: 'http/protobuf', headers: {}, compression: 'none', timeoutMs: 5_000 });
  const forwarder = new Forwarder({ queue, exporter, logger: silentLogger, now: () => clock, backoff: { initialMs: 1, maxMs: 2 } });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => destination.close(), () => forwarder.stop());
  await queue.enqueue('traces', 'protobuf', Buffer.from([0x0a, 0x00]), clock);
  forwarder.start();
  const until = Date.now() + 20_000;
  while (queue.depth > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
  // The 502s did not restart the count: the 500 24 hours after the first gave the request up, where each 502
  // cleared the clock and the request was retried until the destination took it.
  expect(queue.depth).toBe(0);
  expect(queue.deadLetters().map((d) => [d.status, d.reason])).toEqual([[500, expect.stringContaining('retried for 86400 s, forward.retry.maxElapsedTime')]]);
  expect(statuses).toHaveLength(25);
  expect(forwarder.status()).toMatchObject({ delivered: 0, deadLetters: 1 });
});

/** An OTLP/HTTP destination on 127.0.0.1:0 that takes `msPerRequest` per merged request before it answers 200. */
async function slowDestination(msPerRequest: number): Promise<{ url: string; carried: number[]; close(): Promise<void> }> {
  const carried: number[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // Each request is the two bytes of an empty ResourceSpans: merged ones are concatenated.
      const requests = Buffer.concat(chunks).length / 2;
      carried.push(requests);
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        res.end();
      }, requests * msPerRequest);
    });
  });
  return { ...(await listening(server)), carried };
}

it('sends fewer requests per attempt after a merged attempt timed out, so a backlog drains through a slow destination', { timeout: 30_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
  const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
  // 10 ms per request: a merged attempt of 100 takes a second, over the 400 ms timeout; 25 take 250 ms.
  const destination = await slowDestination(10);
  const exporter = new HttpExporter({ endpoint: destination.url, protocol: 'http/protobuf', headers: {}, compression: 'none', timeoutMs: 400 });
  const forwarder = new Forwarder({ queue, exporter, logger: silentLogger, backoff: { initialMs: 10, maxMs: 50 } });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => destination.close(), () => forwarder.stop());
  // A backlog, as after an outage: 300 requests queued before delivery starts.
  const requests = 300;
  for (let i = 0; i < requests; i++) await queue.enqueue('traces', 'protobuf', Buffer.from([0x0a, 0x00]), Date.now());
  forwarder.start();
  const until = Date.now() + 20_000;
  while (queue.depth > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  expect(queue.depth).toBe(0);
  // The attempts that timed out were resent smaller, not as large again and again (each of those may be a
  // duplicate downstream): a few at 100 and 50, then attempts of 25 that fit the timeout.
  expect(destination.carried.reduce((a, b) => a + b, 0)).toBeLessThan(requests * 2);
  expect(Math.max(...destination.carried.slice(-3))).toBeLessThanOrEqual(25);
});

/** `server` listening on 127.0.0.1:0 as a destination: its URL, and how to close it. */
async function listening(server: Server): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** An OTLP/HTTP destination on 127.0.0.1:0 that answers every request with `answer` after `delayMs`, or never when undefined. */
async function answeringDestination(delayMs: number | undefined, answer: { status: number; retryAfter?: string; contentType?: string; body?: Buffer }): Promise<{ url: string; received: () => number; close(): Promise<void> }> {
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      if (delayMs === undefined) return;
      setTimeout(() => {
        res.writeHead(answer.status, { ...(answer.retryAfter ? { 'retry-after': answer.retryAfter } : {}), ...(answer.contentType ? { 'content-type': answer.contentType } : {}) });
        res.end(answer.body);
      }, delayMs);
    });
  });
  return { ...(await listening(server)), received: () => received };
}

for (const [name, delayMs, timeoutMs] of [['answers 503 with Retry-After: 300 while hookwatch stops', 300, 10_000], ['does not answer within a long forward.timeout', undefined, 120_000]] as const) {
  it(`stops within seconds, keeping the request queued, when the destination ${name}`, { timeout: 30_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
    const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
    const destination = await answeringDestination(delayMs, { status: 503, retryAfter: '300' });
    const exporter = new HttpExporter({ endpoint: destination.url, protocol: 'http/protobuf', headers: {}, compression: 'none', timeoutMs });
    const forwarder = new Forwarder({ queue, exporter, logger: silentLogger, backoff: { initialMs: 10, maxMs: 50 } });
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => destination.close());
    await queue.enqueue('traces', 'protobuf', Buffer.from([0x0a, 0x00]), Date.now());
    forwarder.start();
    while (destination.received() === 0) await new Promise((r) => setTimeout(r, 5));
    // The stop comes while the attempt is in flight (SIGTERM): shutdown.timeout is 25 s by default.
    const started = Date.now();
    await forwarder.stop();
    expect(Date.now() - started).toBeLessThan(STOP_GRACE_MS + 2_000);
    expect(queue.depth).toBe(1);
  });
}

/** Refuses every request for good (400), as a destination does with a body it will never take. */
class RejectingDestination implements Exporter {
  readonly description = 'rejecting destination';
  accepts(): boolean {
    return true;
  }
  export(): Promise<ExportResult> {
    return Promise.resolve({ kind: 'permanent', message: 'answered 400', status: 400 });
  }
  async close(): Promise<void> {}
}

it('logs the dead letters it evicts over forward.deadLetters.maxBytes, not only counts them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
  // Room for one 600-byte dead letter: each new one evicts the one before.
  const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9, deadLetterMaxBytes: 1000 });
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'info', write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  const forwarder = new Forwarder({ queue, exporter: new RejectingDestination(), logger, backoff: { initialMs: 10, maxMs: 50 } });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close());
  forwarder.start();
  for (let i = 0; i < 5; i++) {
    await queue.enqueue('logs', 'json', Buffer.alloc(600, 0x20), Date.now());
    forwarder.notify();
  }
  const until = Date.now() + 10_000;
  while (queue.counters().deadLetters < 5 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  await forwarder.stop();
  expect(queue.counters().deadLettersEvicted).toBe(4);
  const evictions = lines.filter((l) => String(l['msg']).includes('forward.deadLetters.maxBytes'));
  // The first at once, the rest (held back by the once-a-minute bound) when delivery stops.
  expect(evictions.length).toBeGreaterThanOrEqual(1);
  expect(evictions.reduce((n, l) => n + Number(l['evicted']), 0)).toBe(4);
  expect(evictions.at(-1)).toMatchObject({ level: 'warn', evictedTotal: 4, deadLettersHeld: 1, maxBytes: 1000 });
});

/** Fails every handshake, as a destination with a certificate hookwatch does not trust does. */
class UntrustedDestination implements Exporter {
  readonly description = 'untrusted destination';
  attempts = 0;
  accepts(): boolean {
    return true;
  }
  export(): Promise<ExportResult> {
    this.attempts++;
    return Promise.resolve({ kind: 'retryable', message: 'TLS with untrusted destination failed: self-signed certificate in certificate chain (SELF_SIGNED_CERT_IN_CHAIN)', bounded: true, tls: true });
  }
  async close(): Promise<void> {}
}

it('counts every failed TLS handshake and says so as an error, at most once a minute, keeping the request queued', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
  const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'info', write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  let now = Date.now();
  const destination = new UntrustedDestination();
  const forwarder = new Forwarder({ queue, exporter: destination, logger, now: () => now, backoff: { initialMs: 1, maxMs: 2 } });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => forwarder.stop());
  await queue.enqueue('logs', 'json', Buffer.from('{}'), now);
  forwarder.start();
  while (destination.attempts < 30) await new Promise((r) => setTimeout(r, 5));
  const tlsLines = (): Record<string, unknown>[] => lines.filter((l) => String(l['msg']).includes('TLS handshake'));
  expect(tlsLines()).toHaveLength(1);
  expect(tlsLines()[0]).toMatchObject({ level: 'error', destination: 'untrusted destination', message: expect.stringContaining('SELF_SIGNED_CERT_IN_CHAIN'), failedHandshakes: 1 });
  // Not also the generic retry line for each.
  expect(lines.filter((l) => l['msg'] === 'forwarding failed; will retry')).toHaveLength(0);
  now += 61_000;
  const seen = destination.attempts;
  while (destination.attempts < seen + 2) await new Promise((r) => setTimeout(r, 5));
  expect(tlsLines()).toHaveLength(2);
  expect(Number(tlsLines()[1]?.['failedHandshakes'])).toBeGreaterThanOrEqual(seen);
  expect(forwarder.status().tlsFailures).toBeGreaterThanOrEqual(destination.attempts - 1);
  expect(queue.depth).toBe(1);
});

it('logs requests refused for good at most once a minute with how many, the rest when delivery stops', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
  const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'info', write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  const forwarder = new Forwarder({ queue, exporter: new RejectingDestination(), logger, backoff: { initialMs: 10, maxMs: 50 } });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close());
  forwarder.start();
  const requests = 50;
  for (let i = 0; i < requests; i++) {
    await queue.enqueue('logs', 'json', Buffer.from('{}'), Date.now());
    forwarder.notify();
  }
  const until = Date.now() + 10_000;
  while (queue.counters().deadLetters < requests && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  const refusals = (): Record<string, unknown>[] => lines.filter((l) => l['msg'] === 'forwarding refused for good; request moved to dead letters');
  // The first at once; the other 49 held back by the once-a-minute bound.
  expect(refusals()).toHaveLength(1);
  expect(refusals()[0]).toMatchObject({ level: 'warn', destination: 'rejecting destination', signal: 'logs', status: 400, message: 'answered 400', refused: 1, deadLettersTotal: 1 });
  await forwarder.stop();
  expect(refusals()).toHaveLength(2);
  expect(refusals()[1]).toMatchObject({ refused: requests - 1, deadLettersTotal: requests });
});

it('names the destination\'s text `message` in every line that carries it: retry, refusal past its time, refusal for good', async () => {
  // A real destination on loopback: request "a" is answered 503, then 401 until it is given up; request "b" 400.
  const answered = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const kind = (JSON.parse(Buffer.concat(chunks).toString()) as { kind: string }).kind;
      const n = (answered.get(kind) ?? 0) + 1;
      answered.set(kind, n);
      const [status, text] = kind === 'b' ? [400, 'body-not-taken'] : n === 1 ? [503, 'busy-now'] : [401, 'key-not-valid'];
      res.writeHead(status, { 'content-type': 'text/plain' }).end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
  const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'info', write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  const exporter = new HttpExporter({ endpoint: url, protocol: 'http/json', headers: {}, compression: 'none', timeoutMs: 5_000 });
  const forwarder = new Forwarder({ queue, exporter, logger, maxElapsedMs: 100, backoff: { initialMs: 10, maxMs: 20 } });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  await queue.enqueue('logs', 'json', Buffer.from('{"kind":"a"}'), Date.now());
  await queue.enqueue('logs', 'json', Buffer.from('{"kind":"b"}'), Date.now());
  forwarder.start();
  const until = Date.now() + 10_000;
  while (queue.counters().deadLetters < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  await forwarder.stop();
  await exporter.close();
  const line = (msg: string, text: string): Record<string, unknown> | undefined => lines.find((l) => String(l['msg']).startsWith(msg) && JSON.stringify(l).includes(text));
  const retry = line('forwarding failed; will retry', 'busy-now');
  const expired = line('forwarding refused past forward.retry.maxElapsedTime', 'key-not-valid');
  const refused = line('forwarding refused for good', 'body-not-taken');
  expect(retry).toMatchObject({ message: `${exporter.description} answered 503: busy-now` });
  expect(expired).toMatchObject({ status: 401, message: `${exporter.description} answered 401: key-not-valid` });
  expect(refused).toMatchObject({ status: 400, message: `${exporter.description} answered 400: body-not-taken` });
  for (const l of [retry, expired, refused]) expect(l).not.toHaveProperty('reason');
});

/** An OTLP/gRPC destination on 127.0.0.1:0 that never answers, counting the calls it got. */
async function silentGrpcDestination(): Promise<{ url: string; received: () => number; close(): Promise<void> }> {
  let received = 0;
  const server = new GrpcServer();
  const id = (b: Buffer): Buffer => b;
  server.addService({ Export: { path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export', requestStream: false, responseStream: false, requestSerialize: id, requestDeserialize: id, responseSerialize: id, responseDeserialize: id } }, {
    Export: () => {
      received++;
    },
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  return { url: `http://127.0.0.1:${port}`, received: () => received, close: async () => void server.forceShutdown() };
}

for (const protocol of ['http/protobuf', 'grpc'] as const) {
  it(`does not count or log an attempt cut off by stop as a failed one (${protocol})`, { timeout: 30_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
    const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ level: 'info', write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
    const destination = protocol === 'grpc' ? await silentGrpcDestination() : await answeringDestination(undefined, { status: 200 });
    const options = { endpoint: destination.url, headers: {}, compression: 'none' as const, timeoutMs: 120_000 };
    const exporter = protocol === 'grpc' ? new GrpcExporter(options) : new HttpExporter({ ...options, protocol });
    const forwarder = new Forwarder({ queue, exporter, logger, backoff: { initialMs: 10, maxMs: 50 } });
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => destination.close(), () => exporter.close());
    await queue.enqueue('traces', 'protobuf', Buffer.from([0x0a, 0x00]), Date.now());
    forwarder.start();
    while (destination.received() === 0) await new Promise((r) => setTimeout(r, 5));
    // SIGTERM while the attempt is in flight: it is cut off after the grace period.
    await forwarder.stop();
    expect(queue.depth).toBe(1);
    expect(queue.counters().retries).toBe(0);
    expect((await queue.head())?.attempts).toBe(0);
    expect(forwarder.status()).toMatchObject({ consecutiveFailures: 0, state: 'stopped' });
    expect(lines.filter((l) => l['level'] === 'warn' || l['level'] === 'error')).toEqual([]);
  });
}

/** Takes every request, reporting a partial success whose reason differs each time (a count in it). */
class PartialDestination implements Exporter {
  readonly description = 'partial destination';
  attempts = 0;
  accepts(): boolean {
    return true;
  }
  export(): Promise<ExportResult> {
    this.attempts++;
    return Promise.resolve({ kind: 'success', partial: { rejected: 1, message: `quota: ${this.attempts} records over` } });
  }
  async close(): Promise<void> {}
}

it('logs partial successes at most once a minute, whatever their reasons, and counts every rejected record', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
  const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'info', write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  let now = Date.now();
  const destination = new PartialDestination();
  const forwarder = new Forwarder({ queue, exporter: destination, logger, now: () => now });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => forwarder.stop());
  forwarder.start();
  const deliver = async (): Promise<void> => {
    // JSON requests travel one by one: one partial success each.
    await queue.enqueue('logs', 'json', Buffer.from('{}'), now);
    forwarder.notify();
    while (queue.depth > 0) await new Promise((r) => setTimeout(r, 5));
  };
  for (let i = 0; i < 5; i++) await deliver();
  const partials = (): Record<string, unknown>[] => lines.filter((l) => String(l['msg']).includes('partial success'));
  expect(partials()).toHaveLength(1);
  // The destination's text under `message`, as in the warning and in alerting.otlp's partial success lines.
  expect(partials()[0]).toMatchObject({ message: 'quota: 1 records over' });
  expect(partials()[0]).not.toHaveProperty('reason');
  now += 61_000;
  await deliver();
  expect(partials()).toHaveLength(2);
  expect(forwarder.status().rejectedByDestination).toBe(6);
});

for (const protocol of ['http/json', 'http/protobuf'] as const) {
  it(`logs a partial success that rejects nothing (${protocol}) as the destination's warning, and counts nothing rejected`, async () => {
    // The OTLP specification's warning: a partial success with 0 rejected records and a message.
    const encoding = protocol === 'http/json' ? 'json' : 'protobuf';
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': protocol === 'http/json' ? 'application/json' : 'application/x-protobuf' });
        res.end(encodeExportResponse(encoding, 0, 'attribute value truncated'));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
    const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ level: 'info', write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
    const exporter = new HttpExporter({ endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, protocol, headers: {}, compression: 'none', timeoutMs: 5_000 });
    const forwarder = new Forwarder({ queue, exporter, logger });
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }), () => forwarder.stop());
    forwarder.start();
    for (let i = 0; i < 3; i++) {
      await queue.enqueue('logs', encoding, encoding === 'json' ? Buffer.from('{}') : Buffer.alloc(0), Date.now());
      forwarder.notify();
      while (queue.depth > 0) await new Promise((r) => setTimeout(r, 5));
    }
    await forwarder.stop();
    expect(forwarder.status()).toMatchObject({ delivered: 3, rejectedByDestination: 0, deadLetters: 0 });
    const warnings = lines.filter((l) => l['level'] === 'warn' || l['level'] === 'error');
    // The first at once, the two held back within the minute when delivery stops.
    expect(warnings).toHaveLength(2);
    for (const w of warnings) expect(w).toMatchObject({ msg: 'forwarding: the destination accepted the records with a warning', destination: exporter.description, signal: 'logs', message: 'attribute value truncated' });
    expect(warnings.map((w) => w['answers'])).toEqual([1, 2]);
    expect(lines.filter((l) => /reject|partial success|lost/.test(String(l['msg'])))).toEqual([]);
  });
}

/** An OTLP/gRPC destination on 127.0.0.1:0 that answers every request OK with `response`, or refuses it with a status. */
async function answeringGrpcDestination(response: Buffer | { code: GrpcStatus; details: string }): Promise<{ url: string; close(): Promise<void> }> {
  const server = new GrpcServer();
  const id = (b: Buffer): Buffer => b;
  server.addService({ Export: { path: '/opentelemetry.proto.collector.logs.v1.LogsService/Export', requestStream: false, responseStream: false, requestSerialize: id, requestDeserialize: id, responseSerialize: id, responseDeserialize: id } }, {
    Export: (_call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => (Buffer.isBuffer(response) ? callback(null, response) : callback(response)),
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  return { url: `http://127.0.0.1:${port}`, close: async () => void server.forceShutdown() };
}

/**
 * An OTLP/gRPC destination on 127.0.0.1:0 that answers OK with `response` gzipped, as a Go server does for a client
 * that sends gzip (grpc-js servers never compress an answer).
 */
async function gzipAnsweringGrpcDestination(response: Buffer): Promise<{ url: string; close(): Promise<void> }> {
  const server = createHttp2Server();
  server.on('stream', (stream) => {
    stream.resume();
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-encoding': 'gzip' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(grpcFrame(gzipSync(response), true));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** Delivers one logs request to a real destination through `exporter`; the forwarder's status and log lines after. */
async function deliverOne(exporter: Exporter, encoding: 'json' | 'protobuf', maxElapsedMs?: number): Promise<{ status: ReturnType<Forwarder['status']>; lines: Record<string, unknown>[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
  const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'info', write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  const forwarder = new Forwarder({ queue, exporter, logger, backoff: { initialMs: 10, maxMs: 50 }, ...(maxElapsedMs !== undefined ? { maxElapsedMs } : {}) });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => exporter.close(), () => forwarder.stop());
  await queue.enqueue('logs', encoding, encoding === 'json' ? Buffer.from('{}') : Buffer.alloc(0), Date.now());
  forwarder.start();
  const until = Date.now() + 10_000;
  while (queue.counters().delivered + queue.counters().deadLetters === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
  await forwarder.stop();
  return { status: forwarder.status(), lines };
}

/** A partial success that says -1 records were rejected (an int64, so a 10-byte varint in protobuf), with `message`. */
function negativePartialSuccess(encoding: 'json' | 'protobuf', message: string): Buffer {
  if (encoding === 'json') return Buffer.from(JSON.stringify({ partialSuccess: { rejectedLogRecords: '-1', errorMessage: message } }));
  const minusOne = Buffer.from([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
  return lengthDelimited(1, Buffer.concat([minusOne, lengthDelimited(2, Buffer.from(message))]));
}

for (const protocol of ['http/json', 'http/protobuf', 'grpc'] as const) {
  it(`counts no rejected records for a partial success with a negative count (${protocol}), whatever the encoding`, async () => {
    const encoding = protocol === 'http/json' ? 'json' : 'protobuf';
    const body = negativePartialSuccess(encoding, 'count out of range');
    const destination = protocol === 'grpc' ? await answeringGrpcDestination(body) : await answeringDestination(0, { status: 200, contentType: protocol === 'http/json' ? 'application/json' : 'application/x-protobuf', body });
    cleanups.push(() => destination.close());
    const options = { endpoint: destination.url, headers: {}, compression: 'none' as const, timeoutMs: 5_000 };
    const { status, lines } = await deliverOne(protocol === 'grpc' ? new GrpcExporter(options) : new HttpExporter({ ...options, protocol }), encoding);
    // A count below zero means nothing (the specification counts rejected records): not ~1.8e19 records lost.
    expect(status).toMatchObject({ delivered: 1, deadLetters: 0, rejectedByDestination: 0 });
    expect(lines.filter((l) => String(l['msg']).includes('partial success'))).toEqual([]);
    // The destination's text is still a warning worth a line.
    expect(lines.filter((l) => l['level'] === 'warn')).toMatchObject([{ msg: 'forwarding: the destination accepted the records with a warning', message: 'count out of range' }]);
  });
}

for (const [count, counted] of [['2.5', undefined], ['"1e3"', undefined], ['"abc"', undefined], ['"2.5"', undefined], ['true', undefined], ['"99999999999999999999"', undefined], ['"7"', 7], ['1e3', 1000]] as const) {
  it(`counts a partial success's OTLP/JSON count ${count} ${counted === undefined ? 'as nothing, saying so once,' : `as ${counted}`} as int64 in JSON is written`, async () => {
    // proto3 JSON writes an int64 as a decimal string, or a number: either way a whole one.
    const body = Buffer.from(`{"partialSuccess":{"rejectedLogRecords":${count},"errorMessage":"quota"}}`);
    const destination = await answeringDestination(0, { status: 200, contentType: 'application/json', body });
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
    const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ level: 'info', write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
    const exporter = new HttpExporter({ endpoint: destination.url, protocol: 'http/json', headers: {}, compression: 'none', timeoutMs: 5_000 });
    const forwarder = new Forwarder({ queue, exporter, logger });
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => destination.close(), () => exporter.close(), () => forwarder.stop());
    forwarder.start();
    for (let i = 0; i < 2; i++) {
      // JSON requests travel one by one: one partial success each.
      await queue.enqueue('logs', 'json', Buffer.from('{}'), Date.now());
      forwarder.notify();
      while (queue.depth > 0) await new Promise((r) => setTimeout(r, 5));
    }
    await forwarder.stop();
    const ignored = lines.filter((l) => String(l['msg']).includes('not a whole number'));
    if (counted === undefined) {
      expect(forwarder.status()).toMatchObject({ delivered: 2, rejectedByDestination: 0 });
      // Once, whatever the number of answers: a destination writes its counts the same way every time.
      expect(ignored).toEqual([expect.objectContaining({ level: 'warn', msg: 'forwarding: the destination\'s partial success gave a rejected count that is not a whole number; it is not counted', destination: exporter.description, signal: 'logs', count })]);
      // The destination's text is still a warning worth a line, as with a count below zero.
      expect(lines.filter((l) => String(l['msg']).includes('partial success') && !String(l['msg']).includes('not a whole number'))).toEqual([]);
      expect(lines.filter((l) => String(l['msg']).includes('accepted the records with a warning'))).not.toEqual([]);
    } else {
      expect(forwarder.status()).toMatchObject({ delivered: 2, rejectedByDestination: 2 * counted });
      expect(ignored).toEqual([]);
    }
  });
}

for (const compression of ['none', 'gzip'] as const) {
  it(`delivers a request a gRPC destination took with an answer over the 4 MiB receive limit, not as a refusal (compression ${compression})`, async () => {
    // OK with a response message of 5 MiB (a field hookwatch does not read): grpc-js stops reading it at its 4 MiB
    // receive limit (gzipped, once inflated past it) with RESOURCE_EXHAUSTED, as a destination refusing the
    // request for its size would answer.
    const response = lengthDelimited(15, Buffer.alloc(5 * 1024 * 1024, 0x61));
    const destination = compression === 'gzip' ? await gzipAnsweringGrpcDestination(response) : await answeringGrpcDestination(response);
    cleanups.push(() => destination.close());
    const { status, lines } = await deliverOne(new GrpcExporter({ endpoint: destination.url, headers: {}, compression, timeoutMs: 5_000 }), 'protobuf');
    // Delivered: a dead letter replayed later would be a duplicate downstream.
    expect(status).toMatchObject({ delivered: 1, deadLetters: 0, retries: 0, lastError: null });
    expect(lines.filter((l) => l['level'] === 'warn' || l['level'] === 'error')).toEqual([]);
  });
}

for (const protocol of ['http/protobuf', 'grpc'] as const) {
  it(`keeps a key the destination repeats out of its refusal where the message is cut (${protocol})`, async () => {
    // The refusal's text is cut to fit a message; a key across the cut must not show its first half.
    const key = 'fwd-api-key-7f6e5d4c3b2a';
    const text = (room: number): string => `${'r'.repeat(room - 10)}${key} refused`;
    const options = { headers: { 'x-api-key': key }, compression: 'none' as const, timeoutMs: 5_000 };
    let destination: { url: string; close(): Promise<void> };
    if (protocol === 'grpc') {
      const refusal = { code: GrpcStatus.INVALID_ARGUMENT, details: '' };
      destination = await answeringGrpcDestination(refusal);
      // The message is cut at 500 characters, after "<endpoint> (grpc) answered INVALID_ARGUMENT: ".
      refusal.details = text(500 - `${destination.url} (grpc) answered INVALID_ARGUMENT: `.length);
    } else {
      // The destination's text is cut at 200 characters.
      destination = await answeringDestination(0, { status: 400, contentType: 'text/plain', body: Buffer.from(text(200)) });
    }
    cleanups.push(() => destination.close());
    const exporter = protocol === 'grpc' ? new GrpcExporter({ ...options, endpoint: destination.url }) : new HttpExporter({ ...options, endpoint: destination.url, protocol });
    const { status } = await deliverOne(exporter, 'protobuf');
    expect(status.deadLetters).toBe(1);
    expect(status.lastError).toContain('rrrrr');
    expect(status.lastError).not.toContain(key.slice(0, 6));
  });
}

/** A destination on 127.0.0.1:0 that answers every request with `answer`, bytes that are not HTTP fetch can read. */
async function unreadableDestination(answer: string): Promise<{ url: string; received: () => number; close(): Promise<void> }> {
  let received = 0;
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    socket.once('data', () => {
      received++;
      socket.end(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: () => received,
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}

for (const [what, answer, reason] of [
  ['a 200 whose headers are over the 16 KiB fetch reads', `HTTP/1.1 200 OK\r\ncontent-length: 0\r\nx-trace: ${'a'.repeat(32 * 1024)}\r\n\r\n`, 'UND_ERR_HEADERS_OVERFLOW'],
  ['a 200 with a header line that is not HTTP', 'HTTP/1.1 200 OK\r\nnot a header\r\n\r\n', 'Response does not match the HTTP/1.1 protocol'],
] as const) {
  it(`retries a request answered ${what} for forward.retry.maxElapsedTime, then gives it up`, async () => {
    // The destination got the request and answered something unreadable: delivered or not, no one can tell.
    // Sent again (at least once), but not for ever: every attempt may be one more copy downstream.
    const destination = await unreadableDestination(answer);
    cleanups.push(() => destination.close());
    const exporter = new HttpExporter({ endpoint: destination.url, protocol: 'http/protobuf', headers: {}, compression: 'none', timeoutMs: 5_000 });
    const { status } = await deliverOne(exporter, 'protobuf', 300);
    expect(status).toMatchObject({ delivered: 0, deadLetters: 1 });
    expect(destination.received()).toBeGreaterThan(1);
    expect(status.lastError).toContain(`${exporter.description} answered what is not HTTP hookwatch can read`);
    expect(status.lastError).toContain(reason);
  });
}

/**
 * An OTLP/HTTP destination on 127.0.0.1:0 behind a "proxy" that refuses any upload over `maxBytes`: it resets the
 * connection, or answers 413 as nginx does over its client_max_body_size.
 */
async function sizeLimitedDestination(maxBytes: number, refusal: 'reset' | 413): Promise<SizeLimitedDestination & { raiseLimit(bytes: number): void }> {
  const carried: number[] = [];
  let refused = 0;
  const server = createServer((req, res) => {
    if (Number(req.headers['content-length']) > maxBytes) {
      refused++;
      if (refusal === 'reset') req.socket.resetAndDestroy();
      else res.writeHead(413, { 'content-type': 'text/plain', connection: 'close' }).end('Request Entity Too Large');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // Each request is the two bytes of an empty ResourceSpans: merged ones are concatenated.
      carried.push(Buffer.concat(chunks).length / 2);
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    carried,
    refused: () => refused,
    raiseLimit: (bytes) => (maxBytes = bytes),
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** What the requests each attempt carried, and how many attempts were refused. */
interface SizeLimitedDestination {
  url: string;
  carried: number[];
  refused: () => number;
  close(): Promise<void>;
}

/**
 * An OTLP/gRPC destination on 127.0.0.1:0 that refuses a message over `maxBytes` with RESOURCE_EXHAUSTED, as a gRPC
 * server with a lower grpc.max_receive_message_length than the 4 MiB default does.
 */
async function sizeLimitedGrpcDestination(maxBytes: number): Promise<SizeLimitedDestination> {
  const carried: number[] = [];
  let refused = 0;
  const server = new GrpcServer();
  const id = (b: Buffer): Buffer => b;
  server.addService({ Export: { path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export', requestStream: false, responseStream: false, requestSerialize: id, requestDeserialize: id, responseSerialize: id, responseDeserialize: id } }, {
    Export: (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
      if (call.request.length > maxBytes) {
        refused++;
        callback({ code: GrpcStatus.RESOURCE_EXHAUSTED, details: `Received message larger than max (${call.request.length} vs ${maxBytes})` });
        return;
      }
      carried.push(call.request.length / 2);
      callback(null, Buffer.alloc(0));
    },
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  return { url: `http://127.0.0.1:${port}`, carried, refused: () => refused, close: async () => void server.forceShutdown() };
}

for (const [refusal, what] of [
  ['reset', 'was cut off by a connection reset, so a backlog drains through a proxy that resets large uploads'],
  [413, 'was refused with 413, so a backlog drains through a proxy with a body size limit'],
  ['grpc', 'was refused with RESOURCE_EXHAUSTED, so a backlog drains through a gRPC destination with a lower message size limit'],
] as const) {
  it(`sends fewer requests per attempt after a merged attempt ${what}`, { timeout: 30_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
    const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
    // Up to 25 merged requests (50 bytes) get through; 100 or 50 are refused.
    const destination = refusal === 'grpc' ? await sizeLimitedGrpcDestination(50) : await sizeLimitedDestination(50, refusal);
    const options = { endpoint: destination.url, headers: {}, compression: 'none' as const, timeoutMs: 5_000 };
    const exporter = refusal === 'grpc' ? new GrpcExporter(options) : new HttpExporter({ ...options, protocol: 'http/protobuf' });
    const forwarder = new Forwarder({ queue, exporter, logger: silentLogger, backoff: { initialMs: 10, maxMs: 50 } });
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => destination.close(), () => exporter.close(), () => forwarder.stop());
    const requests = 300;
    for (let i = 0; i < requests; i++) await queue.enqueue('traces', 'protobuf', Buffer.from([0x0a, 0x00]), Date.now());
    forwarder.start();
    const until = Date.now() + 10_000;
    while (queue.depth > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(queue.depth).toBe(0);
    expect(queue.counters().deadLetters).toBe(0);
    expect(destination.carried.reduce((a, b) => a + b, 0)).toBe(requests);
    // Halved after each refusal (100, then 50), not a full-size resend forever, and the backlog goes in merged
    // attempts of 25, not one request at a time after each refusal. A reset says nothing sure about size: doubled
    // again after quick successes and halved back, about one reset per successful attempt at most. A refusal
    // as too large does: the size refused is not reached again, so after the refusals that find the size that
    // gets through (200, 100, then 74 and 62 bytes between them and the 50 taken) there are none.
    if (refusal === 'reset') expect(destination.refused()).toBeLessThanOrEqual(destination.carried.length + 2);
    else expect(destination.refused()).toBe(4);
    expect(destination.carried.length).toBeLessThan(requests / 10);
  });
}

/** Refuses the first attempt with 503; answers the next ones only when told to. */
class HeldDestination implements Exporter {
  readonly description = 'held destination';
  attempts = 0;
  private release: (() => void) | undefined;
  accepts(): boolean {
    return true;
  }
  export(_item: ExportItem, signal?: AbortSignal): Promise<ExportResult> {
    this.attempts++;
    if (this.attempts === 1) return Promise.resolve({ kind: 'retryable', message: 'answered 503', status: 503 });
    return new Promise((resolve) => {
      this.release = () => resolve({ kind: 'success' });
      signal?.addEventListener('abort', () => resolve({ kind: 'retryable', message: 'stopped' }), { once: true });
    });
  }
  answer(): void {
    this.release?.();
  }
  async close(): Promise<void> {}
}

it('shows an attempt in flight, and since when, instead of the time the attempt was due', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
  const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
  let now = 1_800_000_000_000;
  const destination = new HeldDestination();
  const forwarder = new Forwarder({ queue, exporter: destination, logger: silentLogger, now: () => now, backoff: { initialMs: 10, maxMs: 10 }, random: () => 1 });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => forwarder.stop());
  await queue.enqueue('traces', 'protobuf', Buffer.from([0x0a, 0x00]), now);
  forwarder.start();
  while (forwarder.status().state !== 'backing_off') await new Promise((r) => setTimeout(r, 2));
  expect(forwarder.status()).toMatchObject({ state: 'backing_off', nextAttemptAtMs: now + 10, attemptStartedAtMs: null });
  now += 10;
  while (destination.attempts < 2) await new Promise((r) => setTimeout(r, 2));
  now += 5_000;
  // The retry is in flight: the time it was due is past and says nothing; when it began does.
  expect(forwarder.status()).toMatchObject({ state: 'sending', nextAttemptAtMs: null, attemptStartedAtMs: now - 5_000 });
  destination.answer();
  while (queue.depth > 0) await new Promise((r) => setTimeout(r, 2));
  expect(forwarder.status()).toMatchObject({ state: 'idle', nextAttemptAtMs: null, attemptStartedAtMs: null });
});

for (const refusal of [413, 'grpc'] as const) {
  it(`keeps merged attempts below the size a destination refused (${refusal === 413 ? '413' : 'RESOURCE_EXHAUSTED'}) while a backlog drains, instead of growing back to it`, { timeout: 30_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
    const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
    // Takes merged bodies up to 400 bytes (about 30 of the requests below); 100 merged are over 1,300.
    const maxBytes = 400;
    const destination = refusal === 'grpc' ? await sizeLimitedGrpcDestination(maxBytes) : await sizeLimitedDestination(maxBytes, refusal);
    const options = { endpoint: destination.url, headers: {}, compression: 'none' as const, timeoutMs: 5_000 };
    const exporter = refusal === 'grpc' ? new GrpcExporter(options) : new HttpExporter({ ...options, protocol: 'http/protobuf' });
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ level: 'info', write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
    const forwarder = new Forwarder({ queue, exporter, logger, backoff: { initialMs: 1, maxMs: 5 } });
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => destination.close(), () => exporter.close(), () => forwarder.stop());
    // A backlog of 1,200 requests of 2 to 24 bytes each (a ResourceSpans of zeros), as after an outage.
    const requests = 1_200;
    let total = 0;
    for (let i = 0; i < requests; i++) {
      const size = (i * 7) % 23;
      total += 2 + size;
      await queue.enqueue('traces', 'protobuf', Buffer.concat([Buffer.from([0x0a, size]), Buffer.alloc(size)]), Date.now());
    }
    forwarder.start();
    const until = Date.now() + 20_000;
    while (queue.depth > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(queue.depth).toBe(0);
    expect(queue.counters().deadLetters).toBe(0);
    // Every byte went once (the destinations count a body's bytes in halves).
    expect(destination.carried.reduce((a, b) => a + b, 0) * 2).toBe(total);
    // The refused size is remembered: a few refusals while the size that gets through is found, then none, where
    // growing back after quick successes had about every other attempt of the backlog refused again.
    expect(destination.refused()).toBeLessThanOrEqual(5);
    // Still merged: attempts carry at least three quarters of what the destination takes, on average.
    expect(destination.carried.length).toBeLessThan(Math.ceil(total / (maxBytes * 0.75)) + 5);
    expect(lines.filter((l) => l['level'] === 'warn').length).toBe(destination.refused());
  });
}

/**
 * A forwarder on a clock of the test's to a destination taking 50 bytes of a request (413 past them), started, and
 * `drain`: a backlog of `requests` ResourceSpans of `size` bytes each, enqueued at the clock's time and sent whole.
 */
async function ceilingScenario(): Promise<{ destination: Awaited<ReturnType<typeof sizeLimitedDestination>>; clock: { now: number }; drain: (requests: number, size: number) => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
  const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
  const destination = await sizeLimitedDestination(50, 413);
  const exporter = new HttpExporter({ endpoint: destination.url, protocol: 'http/protobuf', headers: {}, compression: 'none', timeoutMs: 5_000 });
  const clock = { now: Date.now() };
  const forwarder = new Forwarder({ queue, exporter, logger: silentLogger, now: () => clock.now, backoff: { initialMs: 1, maxMs: 5 } });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => destination.close(), () => exporter.close(), () => forwarder.stop());
  const drain = async (requests: number, size: number): Promise<void> => {
    for (let i = 0; i < requests; i++) await queue.enqueue('traces', 'protobuf', Buffer.concat([Buffer.from([0x0a, size - 2]), Buffer.alloc(size - 2)]), clock.now);
    forwarder.notify();
    const until = Date.now() + 10_000;
    while (queue.depth > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    expect(queue.depth).toBe(0);
  };
  forwarder.start();
  return { destination, clock, drain };
}

it('keeps the size refused with 413 for ten minutes, then tries it once and merges as before when it is taken', { timeout: 30_000 }, async () => {
  // 25 merged requests (50 bytes) get through, until the proxy's limit is raised.
  const { destination, clock, drain } = await ceilingScenario();
  await drain(300, 2);
  const refused = destination.refused();
  expect(refused).toBeGreaterThan(0);
  // Raised, but the size refused nine minutes ago is not tried again: attempts stay below 31 requests (62 bytes).
  destination.raiseLimit(10_000);
  clock.now += 9 * 60_000;
  destination.carried.length = 0;
  await drain(300, 2);
  expect(Math.max(...destination.carried)).toBeLessThan(31);
  expect(destination.refused()).toBe(refused);
  // Ten minutes after the last refusal, attempts may reach the refused size again, and are taken: the limit is
  // gone, and attempts merge up to 100 again.
  clock.now += 2 * 60_000;
  destination.carried.length = 0;
  await drain(300, 2);
  expect(destination.refused()).toBe(refused);
  expect(Math.max(...destination.carried)).toBe(100);
});

it('merges as before once the limit that refused a size is raised, when no attempt adds up to exactly that size', { timeout: 30_000 }, async () => {
  const { destination, clock, drain } = await ceilingScenario();
  // Requests of 2 bytes: the proxy refuses 200, 100, 74 and 62 bytes merged, and 62 is the size kept.
  await drain(300, 2);
  expect(destination.refused()).toBe(4);
  // Ten minutes on, the limit still there: one attempt over it is refused (requests of 7 bytes), and a size is kept
  // for ten minutes more.
  clock.now += 11 * 60_000;
  destination.carried.length = 0;
  await drain(300, 7);
  const refused = destination.refused();
  expect(refused).toBe(5);
  expect(Math.max(...destination.carried)).toBeLessThanOrEqual(25);
  clock.now += 9 * 60_000;
  await drain(300, 7);
  expect(destination.refused()).toBe(refused);
  // The proxy's limit raised, and ten minutes gone: requests of 3 bytes, of which no attempt held below the size
  // refused (62 or 56 bytes) adds up to it. The backlog goes in attempts of 100 (300 bytes), as before the refusals, not 20 at a
  // time for as long as hookwatch runs.
  destination.raiseLimit(10_000);
  clock.now += 11 * 60_000;
  destination.carried.length = 0;
  await drain(600, 3);
  expect(destination.refused()).toBe(refused);
  // The destination counts a body's bytes in halves: 100 requests of 3 bytes are 150.
  expect(Math.max(...destination.carried)).toBe(150);
});

/** A protobuf varint field of a signed 64-bit integer: a negative one is ten bytes, its two's complement. */
function int64Field(field: number, value: bigint): Buffer {
  const bytes = [field << 3];
  let v = BigInt.asUintN(64, value);
  while (v >= 0x80n) {
    bytes.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  bytes.push(Number(v));
  return Buffer.from(bytes);
}

/** google.rpc.Status{code, message, details: [Any(RetryInfo{retry_delay: Duration{seconds, nanos}})]}, written field by field. */
function retryInfoStatus(code: number, seconds: bigint, nanos: bigint): Buffer {
  const duration = Buffer.concat([int64Field(1, seconds), int64Field(2, nanos)]);
  const any = Buffer.concat([lengthDelimited(1, Buffer.from('type.googleapis.com/google.rpc.RetryInfo')), lengthDelimited(2, lengthDelimited(1, duration))]);
  return Buffer.concat([int64Field(1, BigInt(code)), lengthDelimited(2, Buffer.from('slow down')), lengthDelimited(3, any)]);
}

/** An OTLP/gRPC logs destination on 127.0.0.1:0 that refuses its first call with `code` and the status `details`, then takes every call. */
async function throttlingGrpcDestination(code: GrpcStatus, details: Buffer): Promise<{ url: string; received: () => number; close(): Promise<void> }> {
  let received = 0;
  const server = new GrpcServer();
  const id = (b: Buffer): Buffer => b;
  server.addService({ Export: { path: '/opentelemetry.proto.collector.logs.v1.LogsService/Export', requestStream: false, responseStream: false, requestSerialize: id, requestDeserialize: id, responseSerialize: id, responseDeserialize: id } }, {
    Export: (_call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
      if (received++ > 0) return callback(null, Buffer.alloc(0));
      const metadata = new Metadata();
      metadata.set(STATUS_DETAILS_KEY, details);
      callback({ code, details: 'slow down', metadata });
    },
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  return { url: `http://127.0.0.1:${port}`, received: () => received, close: async () => void server.forceShutdown() };
}

/** An OTLP/HTTP destination on 127.0.0.1:0 that refuses its first request with `status` and `Retry-After: retryAfter`, then takes every request. */
async function throttlingHttpDestination(status: number, retryAfter: string): Promise<{ url: string; received: () => number; close(): Promise<void> }> {
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (received++ > 0) return void res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      res.writeHead(status, { 'retry-after': retryAfter, 'content-type': 'text/plain' }).end('slow down');
    });
  });
  return { ...(await listening(server)), received: () => received };
}

/**
 * One request through a real forwarder to a destination that refuses it once: the wait it chose (its first retry
 * line says it) and whether the request got through afterwards. The backoff is fixed: random() is 0.5 of a 400 ms
 * ceiling, 200 ms.
 */
async function throttledOnce(exporter: Exporter, received: () => number): Promise<{ retryInMs: unknown; delivered: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
  const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'info', write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  const forwarder = new Forwarder({ queue, exporter, logger, backoff: { initialMs: 400, maxMs: 400 }, random: () => 0.5 });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => exporter.close(), () => forwarder.stop());
  await queue.enqueue('logs', 'protobuf', Buffer.alloc(0), Date.now());
  forwarder.start();
  const until = Date.now() + 5_000;
  // Until delivered, or until the forwarder says it waits longer than this test does.
  const waitsLong = (): boolean => lines.some((l) => l['msg'] === 'forwarding failed; will retry' && Number(l['retryInMs']) > 5_000);
  while (queue.counters().delivered === 0 && !waitsLong() && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
  await forwarder.stop();
  expect(received()).toBe(queue.counters().delivered === 1 ? 2 : 1);
  const retry = lines.filter((l) => l['msg'] === 'forwarding failed; will retry');
  expect(retry).toHaveLength(1);
  return { retryInMs: retry[0]?.['retryInMs'], delivered: queue.counters().delivered };
}

const MAX_INT64 = 2n ** 63n - 1n;
for (const [what, code, seconds, nanos] of [
  ['a negative RetryInfo delay', GrpcStatus.UNAVAILABLE, -30n, 0n],
  ['a RetryInfo delay of -1 ns', GrpcStatus.UNAVAILABLE, 0n, -1n],
  ['a RetryInfo delay of -1 s and 500 ms (signs that disagree)', GrpcStatus.UNAVAILABLE, -1n, 500_000_000n],
  ['a RetryInfo delay of the most negative int64 seconds', GrpcStatus.UNAVAILABLE, -(2n ** 63n), 0n],
  ['a negative RetryInfo delay on RESOURCE_EXHAUSTED (still retried: RetryInfo says the destination will recover)', GrpcStatus.RESOURCE_EXHAUSTED, -30n, 0n],
  ['a zero RetryInfo delay', GrpcStatus.UNAVAILABLE, 0n, 0n],
] as const) {
  it(`waits the usual backoff, not minutes, after a gRPC refusal with ${what}`, { timeout: 15_000 }, async () => {
    const destination = await throttlingGrpcDestination(code, retryInfoStatus(code, seconds, nanos));
    cleanups.push(() => destination.close());
    const exporter = new GrpcExporter({ endpoint: destination.url, headers: {}, compression: 'none', timeoutMs: 5_000 });
    expect(await throttledOnce(exporter, destination.received)).toEqual({ retryInMs: 200, delivered: 1 });
  });
}

it('waits the longest Retry-After honoured (5 minutes) after a gRPC refusal with a RetryInfo delay of the largest int64 seconds', async () => {
  const destination = await throttlingGrpcDestination(GrpcStatus.UNAVAILABLE, retryInfoStatus(GrpcStatus.UNAVAILABLE, MAX_INT64, 999_999_999n));
  cleanups.push(() => destination.close());
  const exporter = new GrpcExporter({ endpoint: destination.url, headers: {}, compression: 'none', timeoutMs: 5_000 });
  expect(await throttledOnce(exporter, destination.received)).toEqual({ retryInMs: DEFAULT_BACKOFF.maxRetryAfterMs, delivered: 0 });
  expect(DEFAULT_BACKOFF.maxRetryAfterMs).toBe(300_000);
});

for (const [status, retryAfter] of [[503, '-30'], [429, '-1'], [503, '0'], [429, 'NaN'], [503, '1.5'], [429, 'soon, by 2031'], [503, 'Infinity'], [429, '2030-01-01T00:00:00Z']] as const) {
  it(`waits the usual backoff after an HTTP ${status} with Retry-After: ${retryAfter}`, { timeout: 15_000 }, async () => {
    const destination = await throttlingHttpDestination(status, retryAfter);
    cleanups.push(() => destination.close());
    const exporter = new HttpExporter({ endpoint: destination.url, protocol: 'http/protobuf', headers: {}, compression: 'none', timeoutMs: 5_000 });
    expect(await throttledOnce(exporter, destination.received)).toEqual({ retryInMs: 200, delivered: 1 });
  });
}

for (const retryAfter of ['99999999999999999999999', new Date(Date.now() + 86_400_000).toUTCString()]) {
  it(`waits the longest Retry-After honoured (5 minutes) after an HTTP 503 with Retry-After: ${retryAfter.includes('GMT') ? 'a day from now' : retryAfter}`, async () => {
    const destination = await throttlingHttpDestination(503, retryAfter);
    cleanups.push(() => destination.close());
    const exporter = new HttpExporter({ endpoint: destination.url, protocol: 'http/protobuf', headers: {}, compression: 'none', timeoutMs: 5_000 });
    expect(await throttledOnce(exporter, destination.received)).toEqual({ retryInMs: DEFAULT_BACKOFF.maxRetryAfterMs, delivered: 0 });
  });
}
