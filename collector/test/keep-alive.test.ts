/**
 * Kept-alive connections on the two HTTP ports (OTLP/HTTP and the API's), on raw sockets: a load balancer in front
 * keeps idle upstream connections for 60 s (AWS ALB, nginx) or more, and sends its next request on one of them;
 * a server that closed it first makes that request fail (a 502 or a reset for the client). Idle connections stay
 * open otlp.http.keepAliveTimeout / http.keepAliveTimeout (65 s by default), and a stop still closes them at once.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startServiceUnderTest, type ServiceUnderTest } from './support/service.ts';

const sockets: Socket[] = [];
let service: ServiceUnderTest | undefined;
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await service?.close();
  service = undefined;
});

/** A kept-alive HTTP/1.1 connection on a raw socket: one request at a time, and whether the server closed it. */
class Connection {
  closed = false;
  private readonly socket: Socket;
  private received = '';
  private waiting: (() => void) | undefined;
  private readonly ended: Promise<void>;

  constructor(url: string) {
    this.socket = connect(Number(new URL(url).port), '127.0.0.1');
    sockets.push(this.socket);
    this.socket.setEncoding('latin1');
    this.socket.on('data', (d: string) => {
      this.received += d;
      this.waiting?.();
    });
    this.socket.on('error', () => {});
    this.ended = new Promise((resolve) => this.socket.once('close', () => {
      this.closed = true;
      this.waiting?.();
      resolve();
    }));
  }

  /** Sends a request (with `body`) and resolves with the response's status line and headers, its body read. */
  async exchange(method: string, path: string, body = ''): Promise<{ status: string; headers: Map<string, string> }> {
    this.received = '';
    const type = body === '' ? '' : 'Content-Type: application/json\r\n';
    this.socket.write(`${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${type}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    for (;;) {
      const end = this.received.indexOf('\r\n\r\n');
      if (end >= 0) {
        const [status = '', ...lines] = this.received.slice(0, end).split('\r\n');
        const headers = new Map(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
        if (this.received.length - end - 4 >= Number(headers.get('content-length') ?? 0)) return { status, headers };
      }
      if (this.closed) throw new Error(`connection closed before the answer to ${method} ${path}`);
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }

  /** Resolves once the server has closed the connection. */
  whenClosed(): Promise<void> {
    return this.ended;
  }
}

const ports = (s: ServiceUnderTest): [string, string, string, string][] => [
  ['OTLP/HTTP', s.otlpHttpUrl, 'POST', '/v1/logs'],
  ['HTTP', s.httpUrl, 'GET', '/healthz'],
];

describe('kept-alive connections on the HTTP ports', () => {
  it('are announced to stay open 65 s by default, past a load balancer\'s 60 s, and a stop still closes them at once', async () => {
    service = await startServiceUnderTest();
    const open: Connection[] = [];
    for (const [name, url, method, path] of ports(service)) {
      const c = new Connection(url);
      const res = await c.exchange(method, path, method === 'POST' ? '{}' : '');
      expect(res.status, name).toMatch(/^HTTP\/1\.1 200/);
      expect(res.headers.get('connection'), name).toBe('keep-alive');
      expect(res.headers.get('keep-alive'), name).toBe('timeout=65');
      open.push(c);
    }
    // Idle connections open: the stop must not wait out their 65 s (the test's timeout catches a hang).
    await service.close();
    service = undefined;
    await Promise.all(open.map((c) => c.whenClosed()));
  });

  it('stay usable while idle for less than otlp.http.keepAliveTimeout / http.keepAliveTimeout, and are closed past it', { timeout: 30_000 }, async () => {
    service = await startServiceUnderTest({ HOOKWATCH_OTLP_HTTP_KEEP_ALIVE_TIMEOUT: '2s', HOOKWATCH_HTTP_KEEP_ALIVE_TIMEOUT: '2s' });
    await Promise.all(ports(service).map(async ([name, url, method, path]) => {
      const c = new Connection(url);
      const body = method === 'POST' ? '{}' : '';
      const first = await c.exchange(method, path, body);
      expect(first.headers.get('keep-alive'), name).toBe('timeout=2');
      await new Promise((resolve) => setTimeout(resolve, 1000));
      // The same connection, idle for half the setting, takes the next request.
      expect((await c.exchange(method, path, body)).status, name).toMatch(/^HTTP\/1\.1 200/);
      // Idle past the setting, the server closes it (at the default it would stay 65 s: the test times out).
      await c.whenClosed();
    }));
  });
});
