/**
 * A request refused before its body is read (no credentials, no such route, a method or media type the route does
 * not take, a foreign Host or Origin) gets its answer and then its connection closed, on both HTTP ports: Node would
 * otherwise read the rest of the body to keep the connection alive, so a client with no token could make hookwatch
 * read (and with TLS, decrypt) as many bytes as it sends until the request timeout, again on every connection.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers.ts';

/** What each refused request declares it will send; far more than the bytes in flight on a loopback connection. */
const DECLARED_BYTES = 512 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x20);

let service: TestService;
const sockets: Socket[] = [];

beforeAll(async () => {
  service = await startTestService({ HOOKWATCH_INGEST_TOKEN: 'ingest-token-0123456789abcdef', HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: 'http-token-0123456789abcdef' });
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await service.close();
});

interface Upload {
  /** The status line of the answer. */
  status: string;
  /** The answer's Connection header. */
  connection: string | undefined;
  /** Body bytes the client had written when the server closed the connection. */
  sentBytes: number;
}

/**
 * Sends the request head declaring DECLARED_BYTES of body, then body bytes as fast as the server takes them, until
 * the server closes the connection; rejects if it has not within `withinMs`.
 */
function upload(base: string, head: string, withinMs = 10_000): Promise<Upload> {
  const s = connect(Number(new URL(base).port), '127.0.0.1');
  sockets.push(s);
  let sent = 0;
  let answer = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`still open after ${withinMs} ms with ${sent} body bytes sent; answer: ${answer.split('\r\n')[0] ?? ''}`)), withinMs);
    const pump = (): void => {
      while (sent < DECLARED_BYTES && !s.destroyed) {
        sent += CHUNK.length;
        if (!s.write(CHUNK)) {
          s.once('drain', pump);
          return;
        }
      }
    };
    s.on('data', (d: Buffer) => {
      answer += d.toString('latin1');
    });
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(timer);
      const [status = '', ...lines] = answer.slice(0, answer.indexOf('\r\n\r\n')).split('\r\n');
      const connection = lines.find((l) => /^connection:/i.test(l))?.slice('connection:'.length).trim();
      resolve({ status, connection, sentBytes: sent });
    });
    s.once('connect', () => {
      s.write(`${head}Content-Length: ${DECLARED_BYTES}\r\n\r\n`);
      pump();
    });
  });
}

const REFUSED: [string, () => string, string, RegExp][] = [
  ['HTTP port, no credentials', () => service.httpUrl, 'POST /api/v1/silences HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n', /^HTTP\/1\.1 401/],
  ['HTTP port, a route that takes no body', () => service.httpUrl, 'POST /api/v1/hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer http-token-0123456789abcdef\r\n', /^HTTP\/1\.1 405/],
  ['HTTP port, no such route', () => service.httpUrl, 'PUT /api/v1/nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer http-token-0123456789abcdef\r\n', /^HTTP\/1\.1 404/],
  ['HTTP port, no such page', () => service.httpUrl, 'POST /no/such/page HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer http-token-0123456789abcdef\r\n', /^HTTP\/1\.1 404/],
  ['HTTP port, a media type the route does not take', () => service.httpUrl, 'POST /api/v1/silences HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer http-token-0123456789abcdef\r\nContent-Type: text/plain\r\n', /^HTTP\/1\.1 415/],
  ['HTTP port, a rebound host name', () => service.httpUrl, 'POST /api/v1/silences HTTP/1.1\r\nHost: attacker.example\r\nContent-Type: application/json\r\n', /^HTTP\/1\.1 403/],
  ['OTLP/HTTP port, no token', () => service.otlpHttpUrl, 'POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n', /^HTTP\/1\.1 401/],
  ['OTLP/HTTP port, no such path', () => service.otlpHttpUrl, 'POST /v1/nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n', /^HTTP\/1\.1 404/],
  ['OTLP/HTTP port, another method', () => service.otlpHttpUrl, 'PUT /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n', /^HTTP\/1\.1 405/],
  ['OTLP/HTTP port, a rebound host name', () => service.otlpHttpUrl, 'POST /v1/logs HTTP/1.1\r\nHost: attacker.example\r\nContent-Type: application/json\r\n', /^HTTP\/1\.1 403/],
];

describe('a body refused before it is read', () => {
  for (const [what, base, head, status] of REFUSED) {
    it(`is not read to its end: ${what}`, async () => {
      const res = await upload(base(), head);
      expect(res.status).toMatch(status);
      expect(res.connection).toBe('close');
      // Closed long before the declared body was through: what was sent is what the socket buffers held.
      expect(res.sentBytes).toBeLessThan(DECLARED_BYTES / 4);
    });
  }

  it('leaves a refused request without a body its kept-alive connection', async () => {
    const res = await fetch(`${service.httpUrl}/api/v1/hooks`);
    expect(res.status).toBe(401);
    expect(res.headers.get('connection')).toBe('keep-alive');
  });
});
