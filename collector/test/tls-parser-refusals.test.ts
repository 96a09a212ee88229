/**
 * A request the HTTP parser refuses (headers over 16 KiB, a request line it cannot read, a request not received
 * within the request timeout), on a port serving TLS: the client reads the port's answer (431, 400, 408 with the
 * body saying what was wrong), as it does over plain HTTP, not a connection reset ("socket hang up"). On both
 * HTTP ports, the OTLP/HTTP receiver's (otlp.tls) and the API's (http.tls), each refusal counted once.
 */
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { Socket } from 'node:net';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HAVE_OPENSSL, useTestPki } from './support/certs.ts';
import { parseExposition, sampleValue } from './support/prometheus-text.ts';
import { rawExchange, type RawAnswer } from './support/raw-http.ts';
import { startServiceUnderTest, type ServiceUnderTest } from './support/service.ts';

/** A google.rpc.Status in protobuf, for a message shorter than 128 bytes: field 1 code, field 2 message. */
const rpcStatus = (code: number, message: string): Buffer => Buffer.concat([Buffer.from([0x08, code, 0x12, Buffer.byteLength(message)]), Buffer.from(message)]);
const apiError = (code: string, message: string): Buffer => Buffer.from(JSON.stringify({ error: { code, message } }));

type Port = 'otlp_http' | 'http';

/** What each port answers each refusal with: its content type and body. */
const ANSWERS: Record<Port, { contentType: string; tooLarge: Buffer; malformed: Buffer; timedOut: Buffer }> = {
  otlp_http: {
    contentType: 'application/x-protobuf',
    tooLarge: rpcStatus(8, 'the request line and headers are larger than 16 KiB'),
    malformed: rpcStatus(3, 'malformed HTTP request: the HTTP version is not one this port speaks; use HTTP/1.1'),
    timedOut: rpcStatus(4, 'the request was not received in full within otlp.requestTimeout'),
  },
  http: {
    contentType: 'application/json; charset=utf-8',
    tooLarge: apiError('bad_request', 'the request line and headers (the URL and its query included) are larger than 16 KiB: send fewer or shorter parameters'),
    malformed: apiError('bad_request', 'malformed HTTP request: the HTTP version is not one this port speaks; use HTTP/1.1'),
    timedOut: apiError('request_timeout', 'the request was not received in full within http.requestTimeout'),
  },
};

/** One request over https with node:https, trusting `ca`, on a fresh connection. */
function secureRequest(url: string, ca: Buffer, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent: false, servername: 'localhost', ca, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end('{}');
  });
}

/**
 * A client still sending its headers when it is refused, as one writing its whole request before it reads: 20 KiB
 * of a header, then 1 KiB more every 5 ms, 30 times, whether or not the server closed its side meanwhile, and then
 * its own end. Resolves with what it read once the connection closed; rejects on a reset.
 */
function stillSending(url: string, ca: Buffer): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let sending: NodeJS.Timeout | undefined;
    let left = 30;
    // Kept open for writing after the server ends its side (a TLS socket takes that from the TCP one under it).
    const tcp = new Socket({ allowHalfOpen: true }).connect(Number(port), hostname);
    const socket = connect({ socket: tcp, servername: 'localhost', ca }, () => {
      socket.write(`POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Long: ${'a'.repeat(20 * 1024)}`);
      sending = setInterval(() => {
        socket.write('a'.repeat(1024));
        if (--left > 0) return;
        clearInterval(sending);
        socket.end();
      }, 5);
    });
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.setTimeout(10_000, () => socket.destroy(new Error('the server left the connection open, silent for 10 s')));
    socket.on('error', (err) => {
      clearInterval(sending);
      reject(err);
    });
    socket.on('close', () => {
      clearInterval(sending);
      const all = Buffer.concat(chunks);
      const end = all.indexOf('\r\n\r\n');
      resolve({ head: all.subarray(0, end).toString('latin1'), body: all.subarray(end + 4) });
    });
  });
}

describe.skipIf(!HAVE_OPENSSL)('a request the HTTP parser refuses, over TLS', () => {
  const pki = useTestPki('hookwatch-tls-refusals-');
  let service: ServiceUnderTest;
  let ca: Buffer;
  beforeAll(async () => {
    ca = readFileSync(pki.ca.certFile);
    service = await startServiceUnderTest({
      HOOKWATCH_OTLP_TLS_CERT_FILE: pki.server.certFile, HOOKWATCH_OTLP_TLS_KEY_FILE: pki.server.keyFile,
      HOOKWATCH_HTTP_TLS_CERT_FILE: pki.server.certFile, HOOKWATCH_HTTP_TLS_KEY_FILE: pki.server.keyFile,
      HOOKWATCH_OTLP_REQUEST_TIMEOUT: '2s', HOOKWATCH_HTTP_REQUEST_TIMEOUT: '2s',
    });
  });
  afterAll(async () => {
    await service.close();
  });
  const urlOf = (port: Port): string => (port === 'otlp_http' ? service.otlpHttpUrl : service.httpUrl);
  const refusedOnApi = async (status: number): Promise<number | undefined> =>
    sampleValue(parseExposition(await service.metrics.render()), 'hookwatch_http_requests_total', { handler: 'refused', code: String(status) });

  for (const port of ['otlp_http', 'http'] as const) {
    it(`${port}: headers over 16 KiB from an https client get 431 with the port's body, counted once`, async () => {
      expect(urlOf(port)).toMatch(/^https:\/\//);
      const refusedBefore = port === 'http' ? await refusedOnApi(431) ?? 0 : service.receiver.stats.rejected['header_overflow'] ?? 0;
      const answer = await secureRequest(`${urlOf(port)}/v1/logs`, ca, { 'content-type': 'application/json', 'x-long': 'a'.repeat(20 * 1024) });
      expect(answer.status).toBe(431);
      expect(answer.headers['content-type']).toBe(ANSWERS[port].contentType);
      expect(answer.headers.connection).toBe('close');
      expect(answer.body).toEqual(ANSWERS[port].tooLarge);
      if (port === 'http') {
        expect(answer.headers['strict-transport-security']).toBe('max-age=31536000');
        await expect.poll(() => refusedOnApi(431)).toBe(refusedBefore + 1);
      } else {
        expect(service.receiver.stats.rejected['header_overflow']).toBe(refusedBefore + 1);
      }
    });

    it(`${port}: a request line the parser cannot read gets 400 saying what is wrong`, async () => {
      const answer = await rawExchange(urlOf(port), 'GET /v1/logs HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n', { ca });
      expect(answer.head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(answer.head).toContain(`\r\nContent-Type: ${ANSWERS[port].contentType}\r\n`);
      expect(answer.body).toEqual(ANSWERS[port].malformed);
    });

    it(`${port}: a request not received within the request timeout gets 408`, async () => {
      const answer = await rawExchange(urlOf(port), 'POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n', { ca });
      expect(answer.head).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(answer.body).toEqual(ANSWERS[port].timedOut);
    });

    it(`${port}: a client still sending its headers reads the 431 before the connection closes, not a reset`, async () => {
      const answer = await stillSending(urlOf(port), ca);
      expect(answer.head).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
      expect(answer.body).toEqual(ANSWERS[port].tooLarge);
    });
  }

  it('a chunked body the parser cannot read gets 400, and the handler reading it counts it under its route as the parser\'s refusal', async () => {
    const chunked = (path: string): string => `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`;
    const message = 'malformed HTTP request: a chunk size of the chunked body is not a hexadecimal number, or is too large';
    const route = async (): Promise<number | undefined> => sampleValue(parseExposition(await service.metrics.render()), 'hookwatch_http_requests_total', { handler: '/api/v1/silences', code: '400' });
    const routeBefore = await route() ?? 0;
    const logsBefore = service.receiver.stats.requests['logs:400'] ?? 0;
    const api = await rawExchange(service.httpUrl, chunked('/api/v1/silences'), { ca });
    expect(api.head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(api.body).toEqual(apiError('bad_request', message));
    const otlp = await rawExchange(service.otlpHttpUrl, chunked('/v1/logs'), { ca });
    expect(otlp.head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    // The request's own encoding, its headers having been read.
    expect(otlp.head).toContain('\r\nContent-Type: application/json\r\n');
    expect(JSON.parse(otlp.body.toString())).toEqual({ code: 3, message });
    await expect.poll(route).toBe(routeBefore + 1);
    await expect.poll(() => service.receiver.stats.requests['logs:400']).toBe(logsBefore + 1);
  });

  it('CONNECT, which Node\'s server would close unanswered, gets its 400 over TLS too; https works after the refusals', async () => {
    const connect = await rawExchange(service.httpUrl, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', { ca });
    expect(connect.head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(connect.body).toEqual(apiError('bad_request', 'CONNECT is not allowed on this port, which is no proxy; the API is under /api/v1'));
    const logs = await rawExchange(service.otlpHttpUrl, 'POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}', { ca });
    expect(logs.head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    const health = await rawExchange(service.httpUrl, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n', { ca });
    expect(health.head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });
});
