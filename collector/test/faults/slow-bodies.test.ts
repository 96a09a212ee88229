/**
 * Uploads that stall or trickle while they hold the in-flight budget (otlp.maxInflightBytes) are ended once they fall
 * under the minimum body rate, after its grace period, instead of holding the budget until otlp.requestTimeout: other
 * clients' exports then get through within seconds. An upload that is slow but steady (a laptop on a poor link) is
 * kept whole. Real sockets on both OTLP ports.
 */
import { connect as connectHttp2 } from 'node:http2';
import { connect, type Socket } from 'node:net';
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
const DEADLINE_EXCEEDED = 4;

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
  // Two OTLP/HTTP uploads of 1 MiB, or one gRPC call (which reserves twice otlp.maxRequestBytes), hold it all.
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

describe('uploads under the minimum body rate', () => {
  it('OTLP/HTTP uploads trickling at 1 byte/s that hold the budget are ended (408, counted), and another client gets through within seconds', async () => {
    const { body, contentType } = logsFixture();
    const before = service.receiver.stats.rejected.request_too_slow ?? 0;
    const started = performance.now();
    const tricklers = [0, 1].map(() => rawUpload('application/json', MiB, Buffer.from(' '.repeat(100)), () => Buffer.from(' '), 1000));
    await sleep(300);
    // The budget is held: an export is refused for now (retried by OTLP clients).
    expect((await postOtlp(service.otlpHttpUrl, '/v1/logs', body, { 'content-type': contentType })).status).toBe(503);
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
    await sleep(300);
    for (const t of tricklers) {
      expect(t.answer).toMatch(/^HTTP\/1\.1 408 /);
      expect(t.answer).toMatch(/bytes\/s/);
      expect(t.closed, 'the trickler\'s connection is closed after the answer').toBe(true);
      expect(t.endedAfterMs as number).toBeGreaterThanOrEqual(4500);
      expect(t.endedAfterMs as number).toBeLessThan(CUT_BY_MS);
    }
    const status = JSON.parse(tricklers[0]?.answer.split('\r\n\r\n')[1] ?? '{}') as { code?: number; message?: string };
    expect(status.code).toBe(DEADLINE_EXCEEDED);
    expect(status.message).toMatch(/^the request body arrived at \d+ bytes\/s, under the \d+ bytes\/s/);
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
    const upload = rawUpload('application/x-protobuf', body.length, Buffer.alloc(0), next, 100);
    for (let i = 0; i < 200 && upload.endedAfterMs === undefined; i++) await sleep(100);
    expect(upload.answer).toMatch(/^HTTP\/1\.1 200 /);
    // It took past the grace period: the rate was checked, and it was enough.
    expect(upload.endedAfterMs as number).toBeGreaterThan(6000);
  }, 40_000);

  it('a gRPC call trickling its message while it holds the budget is ended (DEADLINE_EXCEEDED naming the rate, counted), and an exporter gets through within seconds', async () => {
    const { body } = logsFixture();
    const before = service.grpcReceiver.stats.rejected.request_too_slow ?? 0;
    const session = connectHttp2(service.otlpGrpcUrl);
    session.on('error', () => {});
    const started = performance.now();
    const trickler = { code: undefined as number | undefined, message: '', endedAfterMs: undefined as number | undefined };
    try {
      const req = session.request({ ':method': 'POST', ':path': LOGS, 'content-type': 'application/grpc', te: 'trailers' }, { endStream: false });
      req.on('trailers', (h) => {
        trickler.code = Number(h['grpc-status']);
        trickler.message = decodeURIComponent(String(h['grpc-message'] ?? ''));
      });
      req.on('response', (h) => {
        if (h['grpc-status'] !== undefined) {
          trickler.code = Number(h['grpc-status']);
          trickler.message = decodeURIComponent(String(h['grpc-message'] ?? ''));
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
      await sleep(300);
      // The call holds the whole budget: another is refused for now (and retried by OTLP clients).
      expect((await rawGrpcCall(service.otlpGrpcUrl, LOGS, grpcFrame(body, false), { giveUpMs: 10_000 })).code).toBe(UNAVAILABLE);
      let okAfterMs: number | undefined;
      for (let i = 0; okAfterMs === undefined && performance.now() - started < TIMEOUT_MS + 3000; i++) {
        const codes = (await emitExecutions(service.otlpGrpcUrl, [{ hookEvent: 'SessionStart', hookName: `slow-body-${i}` }], {}, { protocol: 'grpc' })).codes;
        if (codes.every((c) => c === 0)) okAfterMs = performance.now() - started;
        else await sleep(200);
      }
      expect(okAfterMs, 'the export never got through').toBeDefined();
      expect(okAfterMs as number).toBeLessThan(CUT_BY_MS);
      for (let i = 0; i < 30 && trickler.endedAfterMs === undefined; i++) await sleep(100);
      expect(trickler.code).toBe(DEADLINE_EXCEEDED);
      expect(trickler.message).toMatch(/^the request message arrived at \d+ bytes\/s, under the \d+ bytes\/s/);
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
    try {
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
        req.on('close', () => resolve({ code, message: text, afterMs: performance.now() - started }));
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
      expect(result.code, result.message).toBe(0);
      expect(result.afterMs).toBeGreaterThan(6000);
    } finally {
      session.destroy();
    }
  }, 40_000);
});
