/**
 * A refused OTLP request is seen by whoever sets hookwatch up: logged at warn (the first of each reason at once,
 * then at most one line a minute, however many arrive), with the path asked, the client's address and the fix
 * where it is known, never a token; and listed with its count in the overview the dashboard's empty state reads.
 * A browser opened at the OTLP/HTTP port gets a page naming the dashboard's address, an API client the JSON answer.
 */
import { Client, Metadata, credentials, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { once } from 'node:events';
import { request, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { OverviewResponse } from '../../shared/src/api.ts';
import { grpcFrame, rawGrpcCall } from './faults/grpc-raw.ts';
import { getJson, postOtlp, startTestService, until, type TestService } from './helpers.ts';
import { recordingLogger, type Logged } from './support/recording-logger.ts';

const TOKEN = 'ingest-token-for-refusals-0123456789';
const LOGS_EXPORT = '/opentelemetry.proto.collector.logs.v1.LogsService/Export';

let service: TestService | undefined;
let grpc: Client | undefined;
afterEach(async () => {
  grpc?.close();
  grpc = undefined;
  await service?.close();
  service = undefined;
});

async function start(env: Record<string, string> = {}): Promise<{ svc: TestService; lines: Logged[] }> {
  const { logger, lines } = recordingLogger();
  service = await startTestService(env, { logger });
  return { svc: service, lines };
}

/**
 * A GET with these headers over node:http, which sends them as given (fetch sets Sec-Fetch-Mode itself, as a
 * browser's fetch() does).
 */
function get(url: string, headers: Record<string, string>): Promise<{ status: number; type: string | undefined; csp: string | undefined; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], csp: res.headers['content-security-policy'] as string | undefined, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    }).on('error', reject).end();
  });
}

/** The refusal lines logged: warn lines naming a refused OTLP request. */
function refusalLines(lines: Logged[]): Logged[] {
  return lines.filter((l) => l.level === 'warn' && /^otlp (http|grpc): refused /.test(l.msg));
}

async function overview(svc: TestService): Promise<OverviewResponse> {
  const { status, body } = await getJson<OverviewResponse>(svc.httpUrl, '/api/v1/overview');
  expect(status).toBe(200);
  return body;
}

describe('refused OTLP requests', () => {
  it('logs the real exporter given the signal path in OTEL_EXPORTER_OTLP_ENDPOINT once, with the fix, and lists it in the overview', async () => {
    const { svc, lines } = await start();
    const saved = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    // As a README reader might write it: the exporter appends /v1/logs to it.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `${svc.otlpHttpUrl}/v1/logs`;
    try {
      const exporter = new OTLPLogExporter();
      const provider = new LoggerProvider({ resource: resourceFromAttributes({ 'service.name': 'claude-code' }), processors: [new BatchLogRecordProcessor({ exporter })] });
      const logger = provider.getLogger('com.anthropic.claude_code.events', '2.1.332');
      for (let i = 0; i < 3; i++) {
        logger.emit({ body: 'claude_code.hook_execution_complete', attributes: { 'event.name': 'hook_execution_complete', hook_name: 'Stop' } });
        await provider.forceFlush();
      }
      await provider.shutdown();
    } finally {
      if (saved === undefined) delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
      else process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved;
    }
    expect(svc.receiver.stats.rejected.not_found).toBe(3);
    const logged = refusalLines(lines);
    expect(logged).toHaveLength(1);
    expect(logged[0]!.msg).toContain('otlp http: refused an OTLP request (not_found); OTEL_EXPORTER_OTLP_ENDPOINT is the base URL, such as http://<host>:');
    expect(logged[0]!.msg).toContain('to which the exporter appends /v1/logs');
    expect(logged[0]!.msg).toContain('"path":"/v1/logs/v1/logs"');
    expect(logged[0]!.msg).toContain('"client":"127.0.0.1"');
    const body = await overview(svc);
    expect(body.lastEventAt).toBeNull();
    expect(body.otlpRefusals).toEqual([{
      transport: 'http', reason: 'not_found', count: 3, lastAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as string, lastPath: '/v1/logs/v1/logs',
      hint: expect.stringMatching(/^OTEL_EXPORTER_OTLP_ENDPOINT is the base URL, such as http:\/\/<host>:\d+, to which the exporter appends \/v1\/logs$/) as string,
    }]);
    expect(Date.now() - Date.parse(body.otlpRefusals![0]!.lastAt)).toBeLessThan(60_000);
  });

  it.each([
    ['/v1/log', '/v1/logs', 'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT'],
    ['/v1/Logs', '/v1/logs', 'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT'],
    ['/V1/METRICS', '/v1/metrics', 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT'],
    ['/v1/trace', '/v1/traces', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'],
  ])('names the path meant for a near miss (%s) in the answer, the log line and the overview', async (path, meant, variable) => {
    const { svc, lines } = await start();
    const answer = await postOtlp(svc.otlpHttpUrl, path, '{}', { 'content-type': 'application/json' });
    expect(answer.status).toBe(404);
    const hint = `did you mean ${meant}? (paths are lowercase; ${variable} is used as given: end it with ${meant})`;
    expect((JSON.parse(answer.body.toString()) as { message: string }).message).toBe(`no OTLP endpoint at ${JSON.stringify(path)}; use /v1/logs, /v1/metrics or /v1/traces (${hint})`);
    const logged = refusalLines(lines);
    expect(logged).toHaveLength(1);
    expect(logged[0]!.msg.split(' {')[0]).toBe(`otlp http: refused an OTLP request (not_found); ${hint}`);
    expect((await overview(svc)).otlpRefusals).toEqual([expect.objectContaining({ reason: 'not_found', lastPath: path, hint })]);
  });

  it('lists what was wrong with the last body that did not decode, its control characters written out as the log line writes them', async () => {
    const { svc, lines } = await start();
    const first = await postOtlp(svc.otlpHttpUrl, '/v1/logs', '{"resourceLogs":5}', { 'content-type': 'application/json' });
    expect(first.status).toBe(400);
    expect((await overview(svc)).otlpRefusals).toEqual([expect.objectContaining({ transport: 'http', reason: 'bad_request', count: 1, lastPath: '/v1/logs', lastProblem: 'resourceLogs must be an array' })]);
    // A JSON parser's message quotes the body, here a terminal's escape sequence: listed written out.
    const second = await postOtlp(svc.otlpHttpUrl, '/v1/logs', '{"resourceLogs":[\u001b[31m', { 'content-type': 'application/json' });
    expect(second.status).toBe(400);
    const told = (JSON.parse(second.body.toString()) as { message: string }).message;
    const listed = (await overview(svc)).otlpRefusals;
    expect(listed).toHaveLength(1);
    expect(listed![0]).toMatchObject({ reason: 'bad_request', count: 2 });
    const problem = listed![0]!.lastProblem ?? '';
    expect(told).toContain('\u001b');
    expect(problem).not.toContain('\u001b');
    expect(problem).toContain('\\u001b');
    expect(problem).toMatch(/^invalid JSON: Unexpected token /);
    // As the log line says it, the one line so far.
    expect(refusalLines(lines).map((l) => l.msg.split(' {')[0])).toEqual(['otlp http: refused an OTLP request (bad_request): resourceLogs must be an array']);
  });

  it('logs a missing or wrong token with the fix, and neither the log nor the overview holds the token sent or a query string', async () => {
    const { svc, lines } = await start({ HOOKWATCH_INGEST_TOKEN: TOKEN });
    const sent = 'Bearer wrong-token-sent-by-the-client-42';
    expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs?key=secret-in-the-query-7', '{}', { 'content-type': 'application/json', authorization: sent })).status).toBe(401);
    expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', '{}', { 'content-type': 'application/json' })).status).toBe(401);
    const logged = refusalLines(lines);
    expect(logged).toHaveLength(1);
    expect(logged[0]!.msg).toContain('otlp http: refused an OTLP request (unauthenticated); hookwatch requires its ingest token (otlp.ingestToken): set OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer <token>"');
    expect(logged[0]!.msg).toContain('"path":"/v1/logs"');
    const body = await overview(svc);
    expect(body.otlpRefusals).toMatchObject([{ transport: 'http', reason: 'unauthenticated', count: 2, lastPath: '/v1/logs' }]);
    const everything = JSON.stringify(lines) + JSON.stringify(body);
    for (const secret of ['wrong-token-sent-by-the-client-42', 'secret-in-the-query-7', TOKEN]) expect(everything).not.toContain(secret);
  });

  it('writes one line per reason for a flood of refusals, and the count held back when it stops', async () => {
    const { svc, lines } = await start();
    const flood = async (n: number, path: string, method: string): Promise<number[]> => {
      const statuses: number[] = [];
      for (let i = 0; i < n; i += 50) {
        const batch = Array.from({ length: Math.min(50, n - i) }, () => fetch(svc.otlpHttpUrl + path, { method, headers: { 'content-type': 'application/json' }, ...(method === 'POST' ? { body: '{}' } : {}) }).then(async (r) => {
          await r.arrayBuffer();
          return r.status;
        }));
        statuses.push(...(await Promise.all(batch)));
      }
      return statuses;
    };
    expect(new Set(await flood(600, '/flood/v1/logs', 'POST'))).toEqual(new Set([404]));
    expect(new Set(await flood(200, '/v1/logs', 'PUT'))).toEqual(new Set([405]));
    const logged = refusalLines(lines);
    expect(logged.map((l) => l.msg.split(';')[0])).toEqual(['otlp http: refused an OTLP request (not_found)', 'otlp http: refused an OTLP request (method_not_allowed)']);
    const body = await overview(svc);
    expect(body.otlpRefusals?.map((r) => [r.reason, r.count, r.lastPath])).toEqual([['not_found', 600, '/flood/v1/logs'], ['method_not_allowed', 200, '/v1/logs']]);
    // Stopping writes what the minute held back: one line each, with the count since the first.
    await svc.close();
    service = undefined;
    const after = refusalLines(lines).slice(2);
    expect(after.map((l) => l.msg.split(' since ')[0])).toEqual(expect.arrayContaining(['otlp http: refused 599 OTLP requests (not_found)', 'otlp http: refused 199 OTLP requests (method_not_allowed)']));
    expect(after).toHaveLength(2);
    expect(after.find((l) => l.msg.includes('not_found'))!.msg).toContain('"requests":599');
  });

  it('logs a refused gRPC call with its method and lists it in the overview', async () => {
    const { svc, lines } = await start({ HOOKWATCH_INGEST_TOKEN: TOKEN });
    grpc = new Client(svc.otlpGrpcUrl.replace('http://', ''), credentials.createInsecure());
    const id = (b: Buffer): Buffer => b;
    const call = (path: string, metadata = new Metadata()): Promise<ServiceError | null> => new Promise((resolve) => {
      grpc!.makeUnaryRequest(path, id, id, Buffer.alloc(0), metadata, { deadline: Date.now() + 5000 }, (e: ServiceError | null) => resolve(e));
    });
    const wrong = new Metadata();
    wrong.set('authorization', 'Bearer wrong-grpc-token-99');
    expect((await call(LOGS_EXPORT, wrong))?.code).toBe(GrpcStatus.UNAUTHENTICATED);
    expect((await call(LOGS_EXPORT))?.code).toBe(GrpcStatus.UNAUTHENTICATED);
    expect((await call('/opentelemetry.proto.collector.logs.v1.LogService/Export'))?.code).toBe(GrpcStatus.UNIMPLEMENTED);
    // A query string on the method (it may carry a token) is neither logged nor listed.
    expect((await call('/opentelemetry.proto.collector.logs.v1.LogService/Export?token=grpc-query-secret'))?.code).toBe(GrpcStatus.UNIMPLEMENTED);
    const logged = refusalLines(lines);
    expect(logged.map((l) => (l.msg.split(';')[0] ?? '').split(' {')[0])).toEqual(['otlp grpc: refused an OTLP request (unauthenticated)', 'otlp grpc: refused an OTLP request (not_found)']);
    expect(logged[0]!.msg).toContain(`"path":"${LOGS_EXPORT}"`);
    expect(logged[0]!.msg).toContain('"client":"');
    expect(logged[1]!.msg).toContain('"path":"/opentelemetry.proto.collector.logs.v1.LogService/Export"');
    const body = await overview(svc);
    expect(body.otlpRefusals).toHaveLength(2);
    expect(body.otlpRefusals?.find((r) => r.reason === 'unauthenticated')).toMatchObject({ transport: 'grpc', count: 2, lastPath: LOGS_EXPORT });
    expect(body.otlpRefusals?.find((r) => r.reason === 'not_found')).toMatchObject({ transport: 'grpc', count: 2, lastPath: '/opentelemetry.proto.collector.logs.v1.LogService/Export' });
    expect(JSON.stringify(lines) + JSON.stringify(body)).not.toContain('wrong-grpc-token-99');
    // Stopped: the held-back lines of the second of each reason are written too.
    grpc.close();
    await svc.close();
    service = undefined;
    expect(refusalLines(lines).length).toBe(logged.length + 2);
    expect(JSON.stringify(lines) + JSON.stringify(body)).not.toContain('grpc-query-secret');
  });

  it('says what was wrong with a gRPC Export call that carried several request messages, or none, in the log line and the overview', async () => {
    const { svc, lines } = await start();
    const empty = grpcFrame(Buffer.alloc(0), false);
    // Client-streaming misuse: five messages on a unary call.
    const five = await rawGrpcCall(svc.otlpGrpcUrl, LOGS_EXPORT, Buffer.concat([empty, empty, empty, empty, empty]));
    expect([five.code, five.message]).toEqual([GrpcStatus.INVALID_ARGUMENT, 'an Export call carries exactly one request message; this one carried more than one']);
    await until('the call counted', () => svc.grpcReceiver.stats.rejected.bad_request === 1);
    const logged = refusalLines(lines);
    expect(logged.map((l) => l.msg.split(' {')[0])).toEqual(['otlp grpc: refused an OTLP request (bad_request): an Export call carries exactly one request message; this one carried more than one']);
    expect(logged[0]!.msg).toContain(`"path":"${LOGS_EXPORT}"`);
    const none = await rawGrpcCall(svc.otlpGrpcUrl, LOGS_EXPORT, Buffer.alloc(0));
    expect([none.code, none.message]).toEqual([GrpcStatus.INVALID_ARGUMENT, 'an Export call carries exactly one request message; this one carried none']);
    await until('the call counted', () => svc.grpcReceiver.stats.rejected.bad_request === 2);
    expect((await overview(svc)).otlpRefusals).toEqual([expect.objectContaining({
      transport: 'grpc', reason: 'bad_request', count: 2, lastPath: LOGS_EXPORT, lastProblem: 'an Export call carries exactly one request message; this one carried none',
    })]);
    // The line held back, written on stopping, says the last one's.
    await svc.close();
    service = undefined;
    expect(refusalLines(lines).slice(1).map((l) => l.msg.split(' {')[0])).toEqual(['otlp grpc: refused an OTLP request (bad_request): an Export call carries exactly one request message; this one carried none']);
  });

  it('says an OTLP request its client gave up on, or one not received whole in time, as such: hookwatch refused neither', async () => {
    // A timeout well past the quitter's 100 ms, so a stalled test process does not see a 408 first.
    const { svc, lines } = await start({ HOOKWATCH_INGEST_TOKEN: TOKEN, HOOKWATCH_OTLP_REQUEST_TIMEOUT: '3s' });
    const url = new URL(svc.otlpHttpUrl);
    // Half a body, then nothing more.
    const half = async (): Promise<{ socket: Socket; answer: Promise<string> }> => {
      const socket = connect(Number(url.port), url.hostname);
      await once(socket, 'connect');
      socket.write(`POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"resourceLogs":`);
      let answer = '';
      socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
      socket.on('error', () => {});
      return { socket, answer: once(socket, 'close').then(() => answer) };
    };
    // Cut off at otlp.requestTimeout.
    expect(await (await half()).answer).toMatch(/^HTTP\/1\.1 408 /);
    // The client closes its connection (an exporter's own timeout, a laptop going to sleep).
    const quitter = await half();
    await new Promise((r) => setTimeout(r, 100));
    quitter.socket.destroy();
    await until('the request given up on counted', async () => svc.receiver.stats.rejected.client_aborted === 1);
    const said = lines.filter((l) => l.level === 'warn' && l.msg.startsWith('otlp http: ')).map((l) => l.msg.split(' {')[0]);
    expect(said.sort()).toEqual([
      'otlp http: an OTLP request timed out before it arrived whole (request_timeout)',
      'otlp http: the client gave up on an OTLP request before sending it whole (client_aborted)',
    ]);
    expect(refusalLines(lines)).toEqual([]);
    // The overview names them by the reasons /metrics counts them under.
    expect((await overview(svc)).otlpRefusals?.map((r) => `${r.transport} ${r.reason} ${r.count}`).sort()).toEqual(['http client_aborted 1', 'http request_timeout 1']);
  });

  it('lists no refusals when there were none', async () => {
    const { svc, lines } = await start();
    expect((await overview(svc)).otlpRefusals).toEqual([]);
    expect(refusalLines(lines)).toEqual([]);
  });
});

describe('a browser at the OTLP/HTTP port', () => {
  it('gets a page (404) saying what the port is and where the dashboard is; an API client gets the JSON answer', async () => {
    const { svc } = await start();
    for (const headers of [{ 'sec-fetch-mode': 'navigate', accept: '*/*' } as Record<string, string>, { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }]) {
      const res = await get(`${svc.otlpHttpUrl}/`, headers);
      expect(res.status).toBe(404);
      expect(res.type).toBe('text/html; charset=utf-8');
      // As the API port's pages: kept by no cache, framed by no page.
      expect(res.csp).toBe("default-src 'none'; frame-ancestors 'none'");
      expect(res.headers).toMatchObject({ 'cache-control': 'no-store', 'x-frame-options': 'DENY', 'referrer-policy': 'no-referrer', 'x-content-type-options': 'nosniff' });
      const page = res.body;
      expect(page).toContain("<h1>This is hookwatch's OTLP receiver port</h1>");
      expect(svc.externalUrl).toMatch(/^http:\/\/.+:\d+$/);
      expect(page).toContain(`The dashboard is at <a href="${svc.externalUrl}">${svc.externalUrl}</a>.`);
    }
    for (const headers of [{}, { accept: '*/*' }, { accept: 'application/json' }] as Record<string, string>[]) {
      const res = await fetch(`${svc.otlpHttpUrl}/`, { headers });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('application/json');
      expect(await res.json()).toEqual({ code: 12, message: 'no OTLP endpoint at "/"; use /v1/logs, /v1/metrics or /v1/traces' });
    }
    // Counted as every other path it does not serve.
    expect(svc.receiver.stats.rejected.not_found).toBe(5);
  });

  it('names alerting.externalUrl as the dashboard, as HTML text', async () => {
    const { svc } = await start({ HOOKWATCH_EXTERNAL_URL: 'https://hookwatch.example.com/a?b=1&c=2' });
    const res = await get(`${svc.otlpHttpUrl}/anything`, { 'sec-fetch-mode': 'navigate' });
    expect(res.status).toBe(404);
    expect(res.type).toBe('text/html; charset=utf-8');
    expect(res.body).toContain('The dashboard is at <a href="https://hookwatch.example.com/a?b=1&amp;c=2">https://hookwatch.example.com/a?b=1&amp;c=2</a>.');
  });

  it('answers its ask for /favicon.ico 404 without counting or logging a refusal', async () => {
    const { svc, lines } = await start();
    // The page, then the icon the browser asks for after it, as Chromium sends it.
    expect((await get(`${svc.otlpHttpUrl}/`, { 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' })).status).toBe(404);
    for (const method of ['GET', 'HEAD']) {
      const res = await fetch(`${svc.otlpHttpUrl}/favicon.ico`, { method, headers: { accept: 'image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8', 'sec-fetch-dest': 'image', 'sec-fetch-mode': 'no-cors' } });
      await res.arrayBuffer();
      expect(res.status).toBe(404);
    }
    // The page's own ask counts, as any path the port does not serve; the icon's do not.
    expect(svc.receiver.stats.rejected.not_found).toBe(1);
    expect((await overview(svc)).otlpRefusals).toMatchObject([{ transport: 'http', reason: 'not_found', count: 1, lastPath: '/' }]);
    await svc.close();
    service = undefined;
    expect(refusalLines(lines).map((l) => l.msg)).toEqual([expect.stringContaining('"path":"/"') as string]);
    expect(lines.filter((l) => l.msg.includes('favicon'))).toEqual([]);
  });
});
