/**
 * Slow clients (slowloris headers, a body trickled at 1 byte/s) are cut off after otlp.requestTimeout and never
 * starve the clients that send at normal speed; on the HTTP port (API, dashboard, /metrics), after
 * http.requestTimeout; on the gRPC port, a connection that starts no call, after otlp.requestTimeout too.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureRequests, postOtlp, startTestService, type TestService } from '../helpers.ts';
import { emitExecutions } from '../support/service.ts';
import { HTTP2_PING, HTTP2_PREFACE } from './grpc-raw.ts';

const TIMEOUT_MS = 2000;
const SLOW = 10;

let service: TestService;
const sockets: Socket[] = [];
const timers: NodeJS.Timeout[] = [];

beforeAll(async () => {
  service = await startTestService({ HOOKWATCH_OTLP_REQUEST_TIMEOUT: `${TIMEOUT_MS}ms`, HOOKWATCH_HTTP_REQUEST_TIMEOUT: `${TIMEOUT_MS}ms` });
});

afterAll(async () => {
  for (const t of timers) clearInterval(t);
  for (const s of sockets) s.destroy();
  await service.close();
});

interface Slow {
  /** ms from open until the server answered or closed the connection; undefined while still open. */
  cutAfterMs: number | undefined;
  answer: string;
}

/** Opens a raw connection to the OTLP/HTTP port (or `base`) that sends `first` at once, then `drip` every `everyMs`. */
function slowClient(first: string, drip: string, everyMs: number, base = service.otlpHttpUrl): Slow {
  const port = Number(new URL(base).port);
  const s = connect(port, '127.0.0.1');
  sockets.push(s);
  const state: Slow = { cutAfterMs: undefined, answer: '' };
  const opened = performance.now();
  const cut = (): void => {
    state.cutAfterMs ??= performance.now() - opened;
  };
  s.on('data', (d: Buffer) => {
    state.answer += d.toString('latin1');
    cut();
  });
  s.on('close', cut);
  s.on('error', cut);
  s.write(first);
  const t = setInterval(() => {
    if (s.writable) s.write(drip);
  }, everyMs);
  timers.push(t);
  return state;
}

describe('slow clients', () => {
  it('slowloris headers and a 1 byte/s body are cut off after the request timeout while others get 200 promptly', async () => {
    const slow: Slow[] = [];
    for (let i = 0; i < SLOW; i++) {
      // Headers that never end: one more header line every 200 ms.
      slow.push(slowClient('POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\n', `X-Slow-${i}: 1\r\n`, 200));
      // Complete headers, then a body of 1,000 bytes at 1 byte/s (it would take 17 minutes).
      slow.push(slowClient('POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n', ' ', 1000));
    }
    const fixture = fixtureRequests('run2-httpprotobuf').find((f) => f.path === '/v1/logs');
    if (!fixture) throw new Error('fixture missing');
    // Normal clients keep getting answers at normal speed while the slow ones hold their connections.
    const started = performance.now();
    const latencies: number[] = [];
    while (performance.now() - started < TIMEOUT_MS + 1500) {
      const t0 = performance.now();
      const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', fixture.body, { 'content-type': fixture.contentType });
      latencies.push(performance.now() - t0);
      expect(res.status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // A server the slow connections held up would answer only once they are cut, a request timeout later.
    expect(Math.max(...latencies)).toBeLessThan(TIMEOUT_MS / 2);

    // Every slow connection was refused (408) or closed soon after the timeout, not minutes later.
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const s of slow) {
      expect(s.cutAfterMs, 'slow connection still open past the request timeout').toBeDefined();
      expect(s.cutAfterMs as number).toBeGreaterThanOrEqual(TIMEOUT_MS * 0.9);
      expect(s.cutAfterMs as number).toBeLessThan(TIMEOUT_MS + 2000);
      if (s.answer) expect(s.answer).toMatch(/^HTTP\/1\.1 408/);
    }
  });

  it('on the HTTP port, slowloris headers and a trickled body are cut off after http.requestTimeout, while the API answers', async () => {
    const slow = [
      slowClient('GET /api/v1/overview HTTP/1.1\r\nHost: 127.0.0.1\r\n', 'X-Slow: 1\r\n', 200, service.httpUrl),
      slowClient('POST /api/v1/silences HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n', ' ', 200, service.httpUrl),
    ];
    // Bounded only so that a server keeping the connections open (Node's 60 s and 300 s) ends the test.
    for (let i = 0; i < 100 && slow.some((s) => s.cutAfterMs === undefined); i++) {
      expect((await fetch(`${service.httpUrl}/healthz`)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    for (const s of slow) {
      expect(s.cutAfterMs, 'slow connection still open past http.requestTimeout').toBeDefined();
      expect(s.cutAfterMs as number).toBeGreaterThanOrEqual(TIMEOUT_MS * 0.9);
      expect(s.answer).toMatch(/^HTTP\/1\.1 408/);
      // With the API's JSON reason, not Node's empty body.
      expect(s.answer).toContain('{"error":{"code":"request_timeout","message":"the request was not received in full within http.requestTimeout"}}');
    }
  });

  it('on the gRPC port, connections that start no call are closed after otlp.requestTimeout, while an exporter delivers', async () => {
    const port = Number(new URL(service.otlpGrpcUrl).port);
    // The HTTP/2 client preface and an empty SETTINGS frame, then a PING every 200 ms: a live connection, no call.
    const held = [Buffer.alloc(0), HTTP2_PREFACE].map((first) => {
      const s = connect(port, '127.0.0.1');
      sockets.push(s);
      const state: { closedAfterMs: number | undefined } = { closedAfterMs: undefined };
      const opened = performance.now();
      s.on('data', () => {});
      s.on('error', () => {});
      s.on('close', () => {
        state.closedAfterMs = performance.now() - opened;
      });
      if (first.length > 0) {
        s.write(first);
        timers.push(setInterval(() => {
          if (s.writable) s.write(HTTP2_PING);
        }, 200));
      }
      return state;
    });
    // A real gRPC exporter connects and delivers meanwhile; bounded only so that connections held for minutes
    // (grpc.max_connection_idle_ms) end the test.
    for (let i = 0; i < 40 && held.some((h) => h.closedAfterMs === undefined); i++) {
      expect((await emitExecutions(service.otlpGrpcUrl, [{ hookEvent: 'SessionStart', hookName: `grpc-${i}` }], {}, { protocol: 'grpc' })).codes).toEqual([0]);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    for (const h of held) {
      expect(h.closedAfterMs, 'connection without a call still open past otlp.requestTimeout').toBeDefined();
      expect(h.closedAfterMs as number).toBeGreaterThanOrEqual(TIMEOUT_MS * 0.9);
    }
  });
});
