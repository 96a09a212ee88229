/**
 * A maximum-size OTLP/JSON request (otlp.maxRequestBytes) does not hold the event loop for its JSON.parse: over
 * the real OTLP/HTTP receiver, a logs, metrics or traces body of 20 MB is never given to JSON.parse on the event
 * loop, and a request sent once its body is read is answered before it is; its answer is the one the event loop's
 * own parse gives (the same model decoded, the same 400 naming the problem, the same 413 past the decode bound).
 * A parser thread that does not answer fails only its request, with 503, and the port keeps serving. How long the
 * loop is held is a figure of the benchmark (bench/ingest.ts), not asserted here.
 */
import { isDeepStrictEqual } from 'node:util';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { MAX_REQUEST_BYTES, maxSizePassThrough, maxSizeRequest } from '../../../bench/lib/batch.ts';
import { decodeLogsJson } from '../otlp/decode-json.ts';
import { JSON_THREAD_MIN_BYTES, JsonThread } from '../otlp/json-thread.ts';
import { unbounded, type LogsRequest } from '../otlp/model.ts';
import { checkOtlpJson } from '../otlp/validate.ts';
import type { LogsConsumer, PassThroughConsumer, RawRequest } from '../pipeline/consumer.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { postOtlp } from '../../test/helpers.ts';
import { InflightBudget } from './inflight.ts';
import { OtlpHttpReceiver } from './otlp-http/index.ts';

const json = { 'content-type': 'application/json' };
const SIGNALS = ['logs', 'metrics', 'traces'] as const;
type Signal = (typeof SIGNALS)[number];

/** What the receiver passed on, and a hook run when a large body is admitted (read whole, not yet parsed). */
class Recorder implements LogsConsumer, PassThroughConsumer {
  logs: LogsRequest[] = [];
  passed: RawRequest[] = [];
  onLargeAdmitted: (() => void) | undefined;
  admit(raw: RawRequest): void {
    if (raw.body.length > JSON_THREAD_MIN_BYTES) this.onLargeAdmitted?.();
  }
  async consumeLogs(req: LogsRequest): Promise<{ rejected: number; message: string }> {
    this.logs.push(req);
    return { rejected: 0, message: '' };
  }
  async consume(raw: RawRequest): Promise<void> {
    this.passed.push(raw);
  }
}

function start(opts: { inflightBytes?: number; jsonThread?: JsonThread } = {}): { receiver: OtlpHttpReceiver; next: Recorder; url: Promise<string> } {
  const next = new Recorder();
  const receiver = new OtlpHttpReceiver({
    addr: '127.0.0.1:0', maxRequestBytes: MAX_REQUEST_BYTES, requestTimeoutMs: 30_000, ingestToken: '', inflight: new InflightBudget(opts.inflightBytes ?? 256 * 1024 * 1024),
    logs: next, passThrough: next, logger: silentLogger, ...(opts.jsonThread ? { jsonThread: opts.jsonThread } : {}),
  });
  return { receiver, next, url: receiver.start().then((a) => `http://127.0.0.1:${a.port}`) };
}

const bodies: Record<Signal, Buffer> = {
  logs: maxSizeRequest('json').body,
  metrics: maxSizePassThrough('metrics', MAX_REQUEST_BYTES, 'json').body,
  traces: maxSizePassThrough('traces', MAX_REQUEST_BYTES, 'json').body,
};

/** The 400 message the event loop's own parse gives `text`. */
function inlineRefusal(signal: Signal, text: string): string {
  try {
    if (signal === 'logs') decodeLogsJson(text);
    else checkOtlpJson(signal, text, unbounded());
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('the body was expected to be refused');
}

/** `body` with its last occurrence of `from` replaced by `to`. */
function replaceLast(body: Buffer, from: string, to: string): Buffer {
  const text = body.toString('utf8');
  const at = text.lastIndexOf(from);
  return Buffer.from(text.slice(0, at) + to + text.slice(at + from.length));
}

let server: ReturnType<typeof start>;
let base: string;
/** Calls of JSON.parse on the event loop. */
let parse: MockInstance<typeof JSON.parse>;

beforeAll(async () => {
  server = start();
  base = await server.url;
});
afterAll(async () => {
  await server.receiver.shutdown();
});
beforeEach(() => {
  parse = vi.spyOn(JSON, 'parse');
});
afterEach(() => {
  parse.mockRestore();
  server.next.onLargeAdmitted = undefined;
});

/** Whether JSON.parse on the event loop was given a text as large as the thread takes. */
const parsedOnLoop = (): boolean => parse.mock.calls.some(([text]) => text.length > JSON_THREAD_MIN_BYTES);

describe('a maximum-size OTLP/JSON request', () => {
  for (const signal of SIGNALS) {
    it(`${signal}: is parsed off the event loop, a request sent once its body is read answered first, and taken as the event loop would take it`, async () => {
      const body = bodies[signal];
      expect(body.length).toBeGreaterThan(0.95 * MAX_REQUEST_BYTES);
      expect(body.length).toBeLessThanOrEqual(MAX_REQUEST_BYTES);
      const order: string[] = [];
      let small: Promise<unknown> | undefined;
      server.next.onLargeAdmitted = () => {
        small = postOtlp(base, `/v1/${signal}`, '{}', json).then((r) => order.push(`small ${r.status}`));
      };
      const large = await postOtlp(base, `/v1/${signal}`, body, json);
      order.push(`large ${large.status}`);
      await small;
      expect(large.body.toString()).toBe('{}');
      expect(order).toEqual(['small 200', 'large 200']);
      expect(parsedOnLoop()).toBe(false);
      if (signal === 'logs') {
        // The same model as the event loop's own decode, record for record.
        expect(isDeepStrictEqual(server.next.logs.at(-1), decodeLogsJson(body.toString('utf8')))).toBe(true);
      } else {
        // Passed on byte for byte, as a body checked on the event loop is.
        expect(server.next.passed.at(-1)?.body.equals(body)).toBe(true);
      }
    });

    it(`${signal}: malformed deep inside, 400 naming the JSON path as on the event loop`, async () => {
      const bad = signal === 'logs'
        ? replaceLast(bodies.logs, '"timeUnixNano":"', '"timeUnixNano":true,"x":"')
        : replaceLast(bodies[signal], '"scope":{"name":"bench"}', '"scope":["bench"]');
      const message = inlineRefusal(signal, bad.toString('utf8'));
      expect(message).toMatch(signal === 'logs' ? /^resourceLogs\[\d+\]\.scopeLogs\[0\]\.logRecords\[999\]\.timeUnixNano must be/ : /\[\d+\]\.scope must be an object$/);
      parse.mockClear();
      const res = await postOtlp(base, `/v1/${signal}`, bad, json);
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body.toString())).toEqual({ code: 3, message });
      expect(parsedOnLoop()).toBe(false);
    });

    it(`${signal}: not JSON at its end, 400 with the parser's message as on the event loop`, async () => {
      const bad = Buffer.concat([bodies[signal].subarray(0, -1), Buffer.from(']')]);
      const message = inlineRefusal(signal, bad.toString('utf8'));
      const res = await postOtlp(base, `/v1/${signal}`, bad, json);
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body.toString())).toEqual({ code: 3, message });
      expect(message).toMatch(/JSON/);
    });
  }

  it('logs: past what one request may decode to, 413 naming the bound, as on the event loop', async () => {
    // One request may decode to half of otlp.maxInflightBytes: 24 MiB here, less than the body's records take.
    const small = start({ inflightBytes: 48 * 1024 * 1024 });
    try {
      const res = await postOtlp(await small.url, '/v1/logs', bodies.logs, json);
      expect(res.status).toBe(413);
      expect(JSON.parse(res.body.toString())).toEqual({ code: 8, message: 'the request decodes to more than 25165824 bytes in memory (half of otlp.maxInflightBytes): too many log records or attributes for one request; send smaller batches' });
      expect(small.next.logs).toEqual([]);
    } finally {
      await small.receiver.shutdown();
    }
  });

  it('a parser thread that does not answer in time fails its request with 503, and the port keeps serving', async () => {
    const thread = new JsonThread({ maxRequestBytes: MAX_REQUEST_BYTES, timeoutMs: 1 });
    const hung = start({ jsonThread: thread });
    try {
      const url = await hung.url;
      const res = await postOtlp(url, '/v1/traces', bodies.traces, json);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(JSON.parse(res.body.toString())).toEqual({ code: 14, message: `parsing this ${bodies.traces.length}-byte OTLP/JSON traces request took longer than 1 ms; its parser thread is replaced, retry later` });
      expect(hung.next.passed).toEqual([]);
      // A body small enough to be parsed on the event loop is taken as before.
      expect((await postOtlp(url, '/v1/traces', '{"resourceSpans":[]}', json)).status).toBe(200);
      expect(hung.next.passed).toHaveLength(1);
    } finally {
      await hung.receiver.shutdown();
      await thread.close();
    }
  });
});
