/**
 * Uploads that stall or trickle while they hold the in-flight budget (otlp.maxInflightBytes) and others are refused
 * it are ended once they fall under the minimum body rate, after its grace period, instead of holding the budget until
 * otlp.requestTimeout, and answered 503 + Retry-After / UNAVAILABLE, so their clients send them again: other
 * clients' exports then get through within seconds. An upload that is slow but steady (a laptop on a poor link) is
 * kept whole, and on a server with budget to spare a paused one keeps otlp.requestTimeout. Real sockets on both OTLP
 * ports, the real OpenTelemetry JS exporter.
 */
import { connect as connectHttp2 } from 'node:http2';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureRequests, postOtlp, startTestService, type TestService } from '../helpers.ts';
import { emitExecutions } from '../support/service.ts';
import { grpcFrame, rawGrpcCall } from './grpc-raw.ts';

const MiB = 1024 * 1024;
/** Well past the grace period and the checks after it: a trickler still holding the budget at this is held to the timeout. */
const TIMEOUT_MS = 20_000;
/** Cut after the 5 s grace and a check a second, with room for a loaded machine's timers: well before TIMEOUT_MS. */
const CUT_BY_MS = 14_000;
const LOGS = '/opentelemetry.proto.collector.logs.v1.LogsService/Export';
const UNAVAILABLE = 14;

let service: TestService;
const sockets: Socket[] = [];
const timers: NodeJS.Timeout[] = [];
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function logsFixture(): { body: Buffer; contentType: string } {
  const fixture = fixtureRequests('run2-httpprotobuf').find((f) => f.path === '/v1/logs');
  if (!fixture) throw new Error('fixture missing');
  return fixture;
}

beforeAll(async () => {
  // Two OTLP/HTTP uploads of 1 MiB, or one gRPC call of a 1 MiB message (which reserves twice its length), hold it all.
  service = await startTestService({
    HOOKWATCH_OTLP_REQUEST_TIMEOUT: `${TIMEOUT_MS}ms`,
    HOOKWATCH_OTLP_MAX_REQUEST_BYTES: String(MiB),
    HOOKWATCH_OTLP_MAX_INFLIGHT_BYTES: String(2 * MiB),
  });
});

afterAll(async () => {
  for (const t of timers) clearInterval(t);
  for (const s of sockets) s.destroy();
  await service.close();
});

interface RawUpload {
  /** ms from the headers until the server answered or closed the connection; undefined while neither. */
  endedAfterMs: number | undefined;
  answer: string;
  closed: boolean;
}

/**
 * Sends POST /v1/logs headers declaring `length` bytes of `contentType` and `first`, then `drip` every `everyMs` while
 * the connection lasts.
 */
function rawUpload(contentType: string, length: number, first: Buffer, drip: () => Buffer | undefined, everyMs: number): RawUpload {
  const s = connect(Number(new URL(service.otlpHttpUrl).port), '127.0.0.1');
  sockets.push(s);
  const state: RawUpload = { endedAfterMs: undefined, answer: '', closed: false };
  const opened = performance.now();
  const ended = (): void => {
    state.endedAfterMs ??= performance.now() - opened;
  };
  s.on('data', (d: Buffer) => {
    state.answer += d.toString('latin1');
    ended();
  });
  s.on('error', ended);
  s.on('close', () => {
    state.closed = true;
    ended();
  });
  s.write(`POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${contentType}\r\nContent-Length: ${length}\r\n\r\n`);
  s.write(first);
  const t = setInterval(() => {
    const next = drip();
    if (next && s.writable && state.endedAfterMs === undefined) s.write(next);
  }, everyMs);
  timers.push(t);
  return state;
}

/**
 * Sends `attempt` until it is answered `refused`, as it is once the tricklers' headers are read and they hold the
 * budget; until then it must be answered `ok`.
 */
async function untilRefused<T>(attempt: () => Promise<T>, ok: T, refused: T): Promise<void> {
  const started = performance.now();
  for (;;) {
    const answer = await attempt();
    if (answer === refused) return;
    expect(answer).toBe(ok);
    expect(performance.now() - started, 'the budget was never held').toBeLessThan(3000);
    await sleep(20);
  }
}

/** RetryInfo's delay, in seconds, in a grpc-status-details-bin (google.rpc.Status whose details hold a RetryInfo). */
function retryDelaySeconds(detailsBin: string): number | undefined {
  const fields = (buf: Buffer): Map<number, Buffer | number> => {
    const out = new Map<number, Buffer | number>();
    let i = 0;
    const varint = (): number => {
      let v = 0;
      let shift = 0;
      for (;;) {
        const b = buf[i++] as number;
        v += (b & 0x7f) * 2 ** shift;
        if (b < 0x80) return v;
        shift += 7;
      }
    };
    while (i < buf.length) {
      const key = varint();
      if ((key & 7) === 0) out.set(key >> 3, varint());
      else {
        const len = varint();
        out.set(key >> 3, buf.subarray(i, i + len));
        i += len;
      }
    }
    return out;
  };
  const any = fields(Buffer.from(detailsBin, 'base64')).get(3);
  if (!Buffer.isBuffer(any)) return undefined;
  const retryInfo = fields(any).get(2);
  if (!Buffer.isBuffer(retryInfo)) return undefined;
  const delay = fields(retryInfo).get(1);
  if (!Buffer.isBuffer(delay)) return undefined;
  const seconds = fields(delay).get(1);
  return typeof seconds === 'number' ? seconds : 0;
}

/**
 * Keeps the in-flight budget under pressure on purpose while `running()`: every `everyMs` sends `attempt`, which the
 * budget held by the upload under test must refuse. `done()` stops it and gives the answers that came while it ran.
 */
function keepPressure<T>(attempt: () => Promise<T>, everyMs: number, running: () => boolean): { done: () => Promise<T[]> } {
  const answers: T[] = [];
  let stopped = false;
  const loop = (async () => {
    // Once the upload's headers are read and it holds its reservation.
    await sleep(300);
    while (!stopped) {
      const answer = await attempt();
      if (stopped || !running()) break;
      answers.push(answer);
      await sleep(everyMs);
    }
  })();
  return {
    done: async () => {
      stopped = true;
      await loop;
      return answers;
    },
  };
}

/** Refusals counted on /metrics, all reasons, on `transport`. */
async function refusals(transport: string): Promise<number> {
  const metrics = await (await fetch(`${service.httpUrl}/metrics`)).text();
  let sum = 0;
  for (const m of metrics.matchAll(new RegExp(`^hookwatch_otlp_requests_rejected_total\\{transport="${transport}",reason="overloaded"\\} (\\d+)$`, 'gm'))) sum += Number(m[1]);
  return sum;
}

describe('uploads under the minimum body rate while others are refused the budget', () => {
  it('OTLP/HTTP uploads trickling at 1 byte/s that hold the budget are ended (503 + Retry-After, counted), and another client gets through within seconds', async () => {
    const { body, contentType } = logsFixture();
    const before = service.receiver.stats.rejected.request_too_slow ?? 0;
    const started = performance.now();
    const tricklers = [0, 1].map(() => rawUpload('application/json', MiB, Buffer.from(' '.repeat(100)), () => Buffer.from(' '), 1000));
    // Once their headers are read, they hold the budget: an export is refused for now (retried by OTLP clients).
    await untilRefused(async () => (await postOtlp(service.otlpHttpUrl, '/v1/logs', body, { 'content-type': contentType })).status, 200, 503);
    let okAfterMs: number | undefined;
    while (okAfterMs === undefined && performance.now() - started < TIMEOUT_MS + 3000) {
      const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', body, { 'content-type': contentType });
      if (res.status === 200) okAfterMs = performance.now() - started;
      else expect(res.status).toBe(503);
      await sleep(200);
    }
    expect(okAfterMs, 'the export never got through').toBeDefined();
    // Within a few seconds of the grace period, not after the request timeout.
    expect(okAfterMs as number).toBeLessThan(CUT_BY_MS);
    // The budget is given back as the cut is decided, before its answer reaches the trickler: wait for both answers
    // and closes (a loaded machine takes more than a moment).
    const waitFrom = performance.now();
    while (tricklers.some((t) => !t.closed) && performance.now() - waitFrom < 5000) await sleep(50);
    for (const t of tricklers) {
      // Retryable, so an OTLP client sends the batch again (a 408 it drops).
      expect(t.answer).toMatch(/^HTTP\/1\.1 503 /);
      // Asked to wait out the pressure window (10 s after the last refusal, a moment before): a retry within it would
      // be checked again on the same link and cut again.
      const retryAfter = Number(/\r\nRetry-After: (\d+)\r\n/i.exec(t.answer)?.[1]);
      expect(retryAfter).toBeGreaterThanOrEqual(8);
      expect(retryAfter).toBeLessThanOrEqual(10);
      expect(t.answer).toMatch(/bytes\/s/);
      expect(t.closed, 'the trickler\'s connection is closed after the answer').toBe(true);
      expect(t.endedAfterMs as number).toBeGreaterThanOrEqual(4500);
      expect(t.endedAfterMs as number).toBeLessThan(CUT_BY_MS);
    }
    const status = JSON.parse(tricklers[0]?.answer.split('\r\n\r\n')[1] ?? '{}') as { code?: number; message?: string };
    expect(status.code).toBe(UNAVAILABLE);
    expect(status.message).toMatch(/^the request body arrived at \d+ bytes\/s, under the \d+ bytes\/s .*while other requests were refused otlp\.maxInflightBytes; retry/);
    expect((service.receiver.stats.rejected.request_too_slow ?? 0) - before).toBe(2);
    const metrics = await (await fetch(`${service.httpUrl}/metrics`)).text();
    expect(metrics).toMatch(/hookwatch_otlp_requests_rejected_total\{transport="http",reason="request_too_slow"\} [1-9]/);
  }, 40_000);

  it('an OTLP/HTTP upload that is slow but steady (24 KiB/s for 8 s) is kept whole and answered 200', async () => {
    const { body: one } = logsFixture();
    const body = Buffer.concat(Array.from({ length: Math.ceil((192 * 1024) / one.length) }, () => one));
    let sent = 0;
    const next = (): Buffer | undefined => {
      if (sent >= body.length) return undefined;
      const piece = body.subarray(sent, sent + 2400);
      sent += piece.length;
      return piece;
    };
    const refusedBefore = await refusals('grpc');
    const upload = rawUpload('application/x-protobuf', body.length, Buffer.alloc(0), next, 100);
    // While it arrives, a gRPC call of a 1 MiB message (reserving twice that, the whole budget) is refused every 2 s:
    // the budget stays under pressure, so the upload's rate is checked all along.
    const pressure = keepPressure(async () => (await rawGrpcCall(service.otlpGrpcUrl, LOGS, grpcFrame(Buffer.alloc(MiB), false), { giveUpMs: 5000 })).code, 2000, () => upload.endedAfterMs === undefined);
    for (let i = 0; i < 200 && upload.endedAfterMs === undefined; i++) await sleep(100);
    const pressed = await pressure.done();
    expect(upload.answer).toMatch(/^HTTP\/1\.1 200 /);
    // It took past the grace period while others were refused the budget: the rate was checked, and it was enough.
    expect(upload.endedAfterMs as number).toBeGreaterThan(6000);
    expect(pressed.length).toBeGreaterThanOrEqual(3);
    expect(pressed.every((code) => code === UNAVAILABLE), String(pressed)).toBe(true);
    expect((await refusals('grpc')) - refusedBefore).toBeGreaterThanOrEqual(pressed.length);
  }, 40_000);

  it('a gRPC call trickling its message while it holds the budget is ended (UNAVAILABLE naming the rate, counted), and an exporter gets through within seconds', async () => {
    const { body } = logsFixture();
    const before = service.grpcReceiver.stats.rejected.request_too_slow ?? 0;
    const session = connectHttp2(service.otlpGrpcUrl);
    session.on('error', () => {});
    const started = performance.now();
    const trickler = { code: undefined as number | undefined, message: '', details: '', endedAfterMs: undefined as number | undefined };
    try {
      const req = session.request({ ':method': 'POST', ':path': LOGS, 'content-type': 'application/grpc', te: 'trailers' }, { endStream: false });
      req.on('trailers', (h) => {
        trickler.code = Number(h['grpc-status']);
        trickler.message = decodeURIComponent(String(h['grpc-message'] ?? ''));
        trickler.details = String(h['grpc-status-details-bin'] ?? '');
      });
      req.on('response', (h) => {
        if (h['grpc-status'] !== undefined) {
          trickler.code = Number(h['grpc-status']);
          trickler.message = decodeURIComponent(String(h['grpc-message'] ?? ''));
          trickler.details = String(h['grpc-status-details-bin'] ?? '');
        }
      });
      req.on('data', () => {});
      req.on('error', () => {});
      req.on('close', () => {
        trickler.endedAfterMs = performance.now() - started;
      });
      // A message prefix announcing 1 MiB, then a byte a second.
      req.write(Buffer.concat([Buffer.from([0, 0, 0x10, 0, 0]), Buffer.alloc(10)]));
      timers.push(setInterval(() => {
        if (!req.closed) req.write(Buffer.alloc(1));
      }, 1000));
      // Once its headers are read, the call holds the whole budget: another is refused for now (and retried by OTLP
      // clients).
      await untilRefused(async () => (await rawGrpcCall(service.otlpGrpcUrl, LOGS, grpcFrame(body, false), { giveUpMs: 10_000 })).code, 0, UNAVAILABLE);
      let okAfterMs: number | undefined;
      for (let i = 0; okAfterMs === undefined && performance.now() - started < TIMEOUT_MS + 3000; i++) {
        const codes = (await emitExecutions(service.otlpGrpcUrl, [{ hookEvent: 'SessionStart', hookName: `slow-body-${i}` }], {}, { protocol: 'grpc' })).codes;
        if (codes.every((c) => c === 0)) okAfterMs = performance.now() - started;
        else await sleep(200);
      }
      expect(okAfterMs, 'the export never got through').toBeDefined();
      expect(okAfterMs as number).toBeLessThan(CUT_BY_MS);
      for (let i = 0; i < 30 && trickler.endedAfterMs === undefined; i++) await sleep(100);
      expect(trickler.code).toBe(UNAVAILABLE);
      expect(trickler.message).toMatch(/^the request message arrived at \d+ bytes\/s, under the \d+ bytes\/s .*; retry/);
      // RetryInfo asks for what is left of the pressure window after the exporter's last refusal, rounded up.
      const delay = retryDelaySeconds(trickler.details);
      expect(delay).toBeGreaterThanOrEqual(2);
      expect(delay).toBeLessThanOrEqual(10);
      expect(trickler.endedAfterMs as number).toBeGreaterThanOrEqual(4500);
      expect(trickler.endedAfterMs as number).toBeLessThan(CUT_BY_MS);
      expect((service.grpcReceiver.stats.rejected.request_too_slow ?? 0) - before).toBe(1);
    } finally {
      session.destroy();
    }
  }, 40_000);

  it('a gRPC call sending its message slowly but steadily (24 KiB/s for 8 s) is kept whole and answered OK', async () => {
    const { body: one } = logsFixture();
    const message = grpcFrame(Buffer.concat(Array.from({ length: Math.ceil((192 * 1024) / one.length) }, () => one)), false);
    const session = connectHttp2(service.otlpGrpcUrl);
    session.on('error', () => {});
    const started = performance.now();
    const refusedBefore = await refusals('grpc');
    let ended = false;
    try {
      // While it arrives (its call reserves twice its 192 KiB), a call of a 1 MiB message (twice that, the whole
      // budget) is refused every 2 s: the budget stays under pressure, so the call's rate is checked all along.
      const pressure = keepPressure(async () => (await rawGrpcCall(service.otlpGrpcUrl, LOGS, grpcFrame(Buffer.alloc(MiB), false), { giveUpMs: 5000 })).code, 2000, () => !ended);
      const result = await new Promise<{ code: number | undefined; message: string; afterMs: number }>((resolve) => {
        const req = session.request({ ':method': 'POST', ':path': LOGS, 'content-type': 'application/grpc', te: 'trailers' }, { endStream: false });
        let code: number | undefined;
        let text = '';
        const take = (h: Record<string, unknown>): void => {
          if (h['grpc-status'] === undefined) return;
          code = Number(h['grpc-status']);
          text = decodeURIComponent(String(h['grpc-message'] ?? ''));
        };
        req.on('response', take);
        req.on('trailers', take);
        req.on('data', () => {});
        req.on('error', () => {});
        req.on('close', () => {
          ended = true;
          resolve({ code, message: text, afterMs: performance.now() - started });
        });
        let sent = 0;
        const t = setInterval(() => {
          if (req.closed) return;
          const piece = message.subarray(sent, sent + 2400);
          sent += piece.length;
          if (sent >= message.length) {
            clearInterval(t);
            req.end(piece);
          } else {
            req.write(piece);
          }
        }, 100);
        timers.push(t);
      });
      const pressed = await pressure.done();
      expect(result.code, result.message).toBe(0);
      // It took past the grace period while others were refused the budget: the rate was checked, and it was enough.
      expect(result.afterMs).toBeGreaterThan(6000);
      expect(pressed.length).toBeGreaterThanOrEqual(3);
      expect(pressed.every((code) => code === UNAVAILABLE), String(pressed)).toBe(true);
      expect((await refusals('grpc')) - refusedBefore).toBeGreaterThanOrEqual(pressed.length);
    } finally {
      session.destroy();
    }
  }, 40_000);
});

/**
 * A TCP proxy to `port` that forwards each connection's request headers and the first half of the body bytes that
 * come with or after them, then nothing more for `pauseMs` (a Wi-Fi link re-associating), then the rest.
 */
async function pausingProxy(port: number, pauseMs: number): Promise<{ url: string; paused: () => number; server: Server }> {
  let paused = 0;
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    sockets.push(client, upstream);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    upstream.pipe(client);
    let head = Buffer.alloc(0);
    let state: 'head' | 'body' | 'held' | 'through' = 'head';
    const held: Buffer[] = [];
    client.on('data', (chunk: Buffer) => {
      if (state === 'through') {
        upstream.write(chunk);
        return;
      }
      if (state === 'held') {
        held.push(chunk);
        return;
      }
      let body = chunk;
      if (state === 'head') {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        upstream.write(head.subarray(0, end + 4));
        body = head.subarray(end + 4);
        state = 'body';
        if (body.length === 0) return;
      }
      const half = Math.max(1, Math.floor(body.length / 2));
      upstream.write(body.subarray(0, half));
      held.push(body.subarray(half));
      state = 'held';
      paused++;
      setTimeout(() => {
        for (const b of held.splice(0)) upstream.write(b);
        state = 'through';
      }, pauseMs);
    });
    client.on('end', () => {
      const end = (): void => {
        if (state === 'held') setTimeout(end, 100);
        else upstream.end();
      };
      end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  return { url: `http://127.0.0.1:${address.port}`, paused: () => paused, server };
}

describe('a slow body on an idle server', () => {
  let idle: TestService;
  beforeAll(async () => {
    idle = await startTestService({ HOOKWATCH_OTLP_REQUEST_TIMEOUT: `${TIMEOUT_MS}ms` });
  });
  afterAll(async () => {
    await idle.close();
  });

  it('a gzip batch of the OpenTelemetry JS exporter (chunked, no Content-Length) whose link pauses 7 s mid-body is kept whole and answered 200', async () => {
    const proxy = await pausingProxy(Number(new URL(idle.otlpHttpUrl).port), 7000);
    try {
      const started = performance.now();
      const exporter = await emitExecutions(proxy.url, Array.from({ length: 12 }, (_, i) => ({ hookEvent: 'PreToolUse', hookName: `paused-link-${i}`, stdoutChars: 20_000 + i })), {}, { protocol: 'http/json', gzip: true, timeoutMillis: 25_000 });
      const tookMs = performance.now() - started;
      expect(exporter.errors).toEqual([]);
      expect(exporter.codes).toEqual([0]);
      // One request, paused mid-body past the grace period of the minimum rate, then sent whole.
      expect(proxy.paused()).toBe(1);
      expect(tookMs).toBeGreaterThan(7000);
      expect(idle.receiver.stats.rejected.request_too_slow ?? 0).toBe(0);
      expect(idle.receiver.stats.requests['logs:ok']).toBe(1);
    } finally {
      proxy.server.close();
    }
  }, 40_000);
});
