/**
 * A plain-HTTP request on a port serving TLS (an http:// URL for an https:// port), as users' clients send it:
 * fetch, node:http with other methods, the real OpenTelemetry OTLP/HTTP exporters. Each gets 400 with a body
 * saying the port speaks TLS, as Go's server (and so the OpenTelemetry Collector) answers it, instead of a closed
 * connection; it is counted as a not_tls handshake failure and logged at most once a minute per port. https on
 * the same port works after it, and anything else that is not TLS (junk, a first word without its space, nothing
 * at all) is closed unanswered as before, a stalled one at the handshake timeout.
 */
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import { connect as netConnect, type AddressInfo } from 'node:net';
import { OTLPLogExporter as JsonExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as ProtoExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor, type LogRecordExporter, type ReadableLogRecord } from '@opentelemetry/sdk-logs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HANDSHAKE_FAILURE_REASONS, HandshakeFailures } from '../src/net/handshake-failures.ts';
import { answerPlainHttp } from '../src/net/plain-http-on-tls.ts';
import type { Logger } from '../src/telemetry/logger.ts';
import { OWN_ANSWER_HEADER } from '../../shared/src/api.ts';
import { HAVE_OPENSSL, useTestPki } from './support/certs.ts';
import { parseExposition, sampleValue } from './support/prometheus-text.ts';
import { startServiceUnderTest, type ServiceUnderTest } from './support/service.ts';

const portOf = (url: string): number => Number(new URL(url).port);
const plainUrl = (url: string): string => url.replace('https://', 'http://');

/** What each port answers a plain-HTTP request with, naming its TLS settings. */
const ANSWER = {
  otlp_http: 'Client sent an HTTP request to an HTTPS server: this port speaks TLS (otlp.tls), so use an https:// URL for it.\n',
  http: 'Client sent an HTTP request to an HTTPS server: this port speaks TLS (http.tls), so use an https:// URL for it.\n',
} as const;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function recordingLogger(): { logger: Logger; lines: { level: string; msg: string; fields: Record<string, unknown> }[] } {
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>): void => void lines.push({ level, msg, fields: fields ?? {} });
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

/** One plain-HTTP request with node:http, on a fresh connection. */
function plainRequest(url: string, method: string, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, agent: false, headers: body === undefined ? {} : { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** One https request trusting `ca`, on a fresh connection. */
function secureRequest(url: string, ca: string, method = 'GET', body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { method, agent: false, servername: 'localhost', ca: readFileSync(ca), headers: body === undefined ? {} : { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * What a TCP client sending `bytes` (and then nothing, or `then.bytes` after a while, or closing its sending side)
 * reads back until the server closes, and after how long.
 */
function raw(port: number, bytes: Buffer | string, then?: { after: number; bytes: Buffer } | 'end'): Promise<{ received: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const chunks: Buffer[] = [];
    const socket = netConnect(port, '127.0.0.1', () => {
      if (bytes.length > 0) socket.write(bytes);
      if (then === 'end') socket.end();
      else if (then) setTimeout(() => socket.write(then.bytes), then.after).unref();
    });
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => {});
    socket.on('close', () => resolve({ received: Buffer.concat(chunks).toString('latin1'), ms: performance.now() - started }));
    // Left open by the server: fails the test below with what was read.
    setTimeout(() => {
      socket.destroy();
      reject(new Error(`still open after 30 s, read ${JSON.stringify(Buffer.concat(chunks).toString('latin1'))}`));
    }, 30_000).unref();
  });
}

/** Exports one log record with `inner` and resolves with the error it reported (undefined: delivered). */
async function exportError(inner: LogRecordExporter): Promise<(Error & { code?: number; data?: string }) | undefined> {
  let error: (Error & { code?: number; data?: string }) | undefined;
  let reported = false;
  const exporter: LogRecordExporter = {
    export: (logs: ReadableLogRecord[], done) => inner.export(logs, (result) => {
      reported = true;
      error = result.error;
      done(result);
    }),
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
  const provider = new LoggerProvider({ resource: resourceFromAttributes({ 'service.name': 'claude-code' }), processors: [new SimpleLogRecordProcessor({ exporter })] });
  provider.getLogger('com.anthropic.claude_code.events').emit({ body: 'claude_code.hook_execution_complete', attributes: { 'event.name': 'hook_execution_complete', 'session.id': 'plain' } });
  await provider.forceFlush();
  await provider.shutdown();
  expect(reported).toBe(true);
  return error;
}

describe.skipIf(!HAVE_OPENSSL)('plain HTTP to a port serving TLS', () => {
  const pki = useTestPki('hookwatch-tls-plain-');
  const { logger, lines } = recordingLogger();
  let service: ServiceUnderTest;
  beforeAll(async () => {
    service = await startServiceUnderTest({
      HOOKWATCH_OTLP_TLS_CERT_FILE: pki.server.certFile, HOOKWATCH_OTLP_TLS_KEY_FILE: pki.server.keyFile,
      HOOKWATCH_HTTP_TLS_CERT_FILE: pki.server.certFile, HOOKWATCH_HTTP_TLS_KEY_FILE: pki.server.keyFile,
      // The handshake timeout follows the request timeout: a stalled client is cut off within the test.
      HOOKWATCH_OTLP_REQUEST_TIMEOUT: '2s', HOOKWATCH_HTTP_REQUEST_TIMEOUT: '2s',
    }, logger);
  });
  afterAll(async () => {
    await service.close();
  });
  const notTls = async (listener: string): Promise<number | undefined> => sampleValue(parseExposition(await service.metrics.render()), 'hookwatch_tls_handshake_failures_total', { listener, reason: 'not_tls' });

  it('is answered 400 saying the port speaks TLS, on both HTTP ports, whatever the method; https works after, and it is counted and logged once', async () => {
    const ports = { otlp_http: service.otlpHttpUrl, http: service.httpUrl } as const;
    for (const [listener, url] of Object.entries(ports) as [keyof typeof ports, string][]) {
      const fetched = await fetch(`${plainUrl(url)}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"resourceLogs":[]}' });
      expect(fetched.status, listener).toBe(400);
      expect(fetched.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(fetched.headers.get('connection')).toBe('close');
      expect(await fetched.text()).toBe(ANSWER[listener]);
      // A large body still on its way when the answer is sent: the client reads the answer, not a reset.
      const large = await fetch(`${plainUrl(url)}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"resourceLogs":[],"x":"${'x'.repeat(4 * 1024 * 1024)}"}` });
      expect([large.status, await large.text()]).toEqual([400, ANSWER[listener]]);
      const got = await fetch(`${plainUrl(url)}/healthz`);
      expect([got.status, await got.text()]).toEqual([400, ANSWER[listener]]);
      for (const method of ['PUT', 'HEAD', 'OPTIONS', 'DELETE', 'PATCH']) {
        const answer = await plainRequest(`${plainUrl(url)}/api/v1/hooks`, method, method === 'HEAD' || method === 'OPTIONS' ? undefined : '{}');
        expect(answer.status, `${listener} ${method}`).toBe(400);
        // A HEAD request's answer has no body, as HTTP reads it.
        expect(answer.body, `${listener} ${method}`).toBe(method === 'HEAD' ? '' : ANSWER[listener]);
        expect(answer.headers['content-length']).toBe(String(Buffer.byteLength(ANSWER[listener])));
      }
      // As a client reads it off the wire; on the HTTP port's, the headers of its every answer (hookwatch's mark
      // among them), but no Strict-Transport-Security, which a browser ignores over plain http.
      const wire = await raw(portOf(url), 'GET / HTTP/1.1\r\nHost: localhost\r\n\r\n');
      const mark = listener === 'http' ? `Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\nContent-Security-Policy: default-src 'none'; frame-ancestors 'none'\r\nReferrer-Policy: no-referrer\r\n${OWN_ANSWER_HEADER}: 1\r\n` : '';
      expect(wire.received).toBe(`HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(ANSWER[listener])}\r\n${mark}Connection: close\r\n\r\n${ANSWER[listener]}`);
      // Nine plain-HTTP connections, each counted as a client that spoke no TLS.
      await expect.poll(() => notTls(listener), { timeout: 5000 }).toBe(9);
    }
    // The same ports still serve https.
    expect((await secureRequest(`${service.httpUrl}/healthz`, pki.ca.certFile)).status).toBe(200);
    const exported = await secureRequest(`${service.otlpHttpUrl}/v1/logs`, pki.ca.certFile, 'POST', '{"resourceLogs":[]}');
    expect([exported.status, exported.body]).toEqual([200, '{}']);

    // Logged once per port (the rest of the minute counted only), with the client's address; at warn, as other failed handshakes.
    const logged = lines.filter((l) => l.msg.includes('plain HTTP'));
    expect(logged.map((l) => l.fields['listener']).sort()).toEqual(['http', 'otlp_http']);
    for (const l of logged) {
      expect(l.level).toBe('warn');
      expect(l.fields).toMatchObject({ peer: expect.stringMatching(/^127\.0\.0\.1:\d+$/), reason: 'not_tls', failedHandshakes: 1 });
    }
    expect(logged.find((l) => l.fields['listener'] === 'otlp_http')?.msg).toMatch(/^otlp\.tls: a client sent plain HTTP to this TLS port/);
    expect(logged.find((l) => l.fields['listener'] === 'http')?.msg).toMatch(/^http\.tls: a client sent plain HTTP to this TLS port/);
  });

  it('the OpenTelemetry OTLP/HTTP exporters given an http:// URL report the 400 and its message', async () => {
    for (const Exporter of [JsonExporter, ProtoExporter]) {
      const error = await exportError(new Exporter({ url: `${plainUrl(service.otlpHttpUrl)}/v1/logs`, timeoutMillis: 5000 }));
      expect(error?.code, Exporter.name).toBe(400);
      expect(error?.data).toBe(ANSWER.otlp_http);
    }
    expect(service.ingest.stats.stored).toBe(0);
  });

  it('anything else that is not TLS is closed unanswered as before, one stalled before its first word ends at the handshake timeout', { timeout: 60_000 }, async () => {
    const failed = async (listener: string): Promise<number> => {
      const exposition = parseExposition(await service.metrics.render());
      let sum = 0;
      for (const reason of HANDSHAKE_FAILURE_REASONS) sum += sampleValue(exposition, 'hookwatch_tls_handshake_failures_total', { listener, reason }) ?? 0;
      return sum;
    };
    const junks = [Buffer.from([0, 1, 2, 3, 0xff, 0x20, 0x0d, 0x0a]), 'hello there\r\n', 'GETTING-THE-WORD-WITHOUT-ITS-SPACE /\r\n\r\n', 'G3T / HTTP/1.1\r\n\r\n', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'];
    for (const [listener, url] of [['otlp_http', service.otlpHttpUrl], ['http', service.httpUrl], ['otlp_grpc', service.otlpGrpcUrl]] as const) {
      const port = portOf(url);
      const before = await failed(listener);
      for (const junk of junks) {
        expect((await raw(port, junk)).received, `${url} ${JSON.stringify(junk.toString())}`).toBe('');
      }
      // Each went on to TLS, whose handshake failed on it.
      await expect.poll(() => failed(listener), { timeout: 5000 }).toBe(before + junks.length);
      // Nothing at all, or a method's first letters and then nothing: closed by the handshake timeout (2 s).
      for (const stalled of ['', 'POS']) {
        const closed = await raw(port, stalled);
        expect(closed.received, `${url} ${stalled}`).toBe('');
        expect(closed.ms, `${url} ${stalled}`).toBeGreaterThan(1500);
      }
      // Letters, then after 1.8 s the start of a TLS record: the handshake timeout counts from the connection, so
      // TLS does not get 2 s more (it would close at 3.8 s).
      const trickled = await raw(port, 'P', { after: 1800, bytes: Buffer.from([0x16, 0x03, 0x01]) });
      expect(trickled.received, url).toBe('');
      expect(trickled.ms, url).toBeGreaterThan(1500);
      expect(trickled.ms, url).toBeLessThan(3400);
    }
    // And TLS still works.
    expect((await secureRequest(`${service.httpUrl}/healthz`, pki.ca.certFile)).status).toBe(200);
  });

  it("a method's letters and no more are counted as the failed handshake TLS would have counted them", { timeout: 60_000 }, async () => {
    const count = async (listener: string, reason: string): Promise<number> => sampleValue(parseExposition(await service.metrics.render()), 'hookwatch_tls_handshake_failures_total', { listener, reason }) ?? 0;
    for (const [listener, url] of [['otlp_http', service.otlpHttpUrl], ['http', service.httpUrl]] as const) {
      const port = portOf(url);
      const before = { notTls: await count(listener, 'not_tls'), other: await count(listener, 'other') };
      // A record header's worth of letters, then a hang-up: no TLS (OpenSSL's "wrong version number").
      expect((await raw(port, 'HELLO', 'end')).received, url).toBe('');
      // Fewer, then a hang-up; and a method's letters, then nothing until the handshake timeout (2 s).
      expect((await raw(port, 'HEL', 'end')).received, url).toBe('');
      const stalled = await raw(port, 'GET');
      expect([stalled.received, stalled.ms > 1500], url).toEqual(['', true]);
      await expect.poll(async () => [await count(listener, 'not_tls'), await count(listener, 'other')], { timeout: 5000 }).toEqual([before.notTls + 1, before.other + 2]);
    }
  });
});

describe.skipIf(!HAVE_OPENSSL)('a connection to a TLS port that fails before it is known to be TLS', () => {
  const pki = useTestPki('hookwatch-tls-undecided-');
  const HANDSHAKE_MS = 1000;

  /** An https server with a handshake timeout, with or without the look at first bytes, and the codes its failed handshakes were reported with, and logged with. */
  async function server(look: boolean): Promise<{ port: number; reported: string[]; logged: () => unknown[]; close: () => Promise<void> }> {
    const { logger, lines } = recordingLogger();
    let now = 0;
    // Each failure a minute after the last, so each is logged.
    const failures = new HandshakeFailures({ logger, now: () => (now += 60_000) });
    const https = createHttpsServer({ cert: readFileSync(pki.server.certFile), key: readFileSync(pki.server.keyFile), handshakeTimeout: HANDSHAKE_MS });
    if (look) answerPlainHttp(https, { section: 'http.tls', handshakeTimeoutMs: HANDSHAKE_MS, onFailed: (socket, error) => failures.failedBeforeHandshake('http', socket, error) });
    failures.watch('http', https);
    const reported: string[] = [];
    https.on('tlsClientError', (error: NodeJS.ErrnoException) => reported.push(error.code ?? error.name));
    await new Promise<void>((resolve) => https.listen(0, '127.0.0.1', resolve));
    return {
      port: (https.address() as AddressInfo).port,
      reported,
      logged: () => lines.map((l) => [l.fields['reason'], l.fields['code']]),
      close: () => new Promise((resolve) => https.close(() => resolve())),
    };
  }

  it('a stalled ClientHello is reported as the handshake timeout, never as a reset', { timeout: 60_000 }, async () => {
    const served = await server(true);
    try {
      // A handshake record's header declaring 512 bytes, and only 3 of them sent: TLS waits for the rest.
      const hello = Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01]);
      const closed = await Promise.all(Array.from({ length: 10 }, () => raw(served.port, hello)));
      for (const c of closed) expect([c.received, c.ms > HANDSHAKE_MS * 0.75]).toEqual(['', true]);
      await expect.poll(() => served.reported.length, { timeout: 5000 }).toBe(10);
      expect(served.reported).toEqual(Array(10).fill('ERR_TLS_HANDSHAKE_TIMEOUT'));
      expect(served.logged()).toEqual(Array(10).fill(['other', 'ERR_TLS_HANDSHAKE_TIMEOUT']));
    } finally {
      await served.close();
    }
  });

  it("a method's letters and no more are reported as TLS reports the same bytes", { timeout: 60_000 }, async () => {
    const looked = await server(true);
    const tls = await server(false);
    try {
      const cases = [['HELLO', 'end'], ['CONNECT', 'end'], ['ABCDEFGHIJKLMNOPQRST', 'end'], ['HEL', 'end'], ['G', 'end'], ['GET', undefined], ['POS', undefined]] as const;
      for (const [bytes, then] of cases) {
        const label = `${bytes} ${then ?? 'stalled'}`;
        const [a, b] = await Promise.all([raw(looked.port, bytes, then), raw(tls.port, bytes, then)]);
        expect([a.received, b.received], label).toEqual(['', '']);
      }
      // Both in the same order, each case once: TLS's own reports and what the look at first bytes reported instead.
      await expect.poll(() => [looked.logged().length, tls.reported.length], { timeout: 5000 }).toEqual([cases.length, cases.length]);
      expect(looked.reported).toEqual([]);
      expect(looked.logged()).toEqual(tls.logged());
      expect(tls.reported).toEqual(['ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_SSL_HTTPS_PROXY_REQUEST', 'ERR_SSL_WRONG_VERSION_NUMBER', 'ECONNRESET', 'ECONNRESET', 'ERR_TLS_HANDSHAKE_TIMEOUT', 'ERR_TLS_HANDSHAKE_TIMEOUT']);
    } finally {
      await Promise.all([looked.close(), tls.close()]);
    }
  });
});
