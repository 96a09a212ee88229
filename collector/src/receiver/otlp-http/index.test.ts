/**
 * The OTLP/HTTP receiver against hostile and wrong input: each gets the right status and a message naming the
 * problem in the request's encoding, and the server keeps serving afterwards.
 */
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { Client, Metadata, credentials, type ServiceError } from '@grpc/grpc-js';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { OverviewResponse } from '../../../../shared/src/api.ts';
import type { LogsConsumer, PassThroughConsumer } from '../../pipeline/consumer.ts';
import { createLogger, silentLogger } from '../../telemetry/logger.ts';
import { InflightBudget } from '../inflight.ts';
import { OtlpHttpReceiver } from './index.ts';
import { fixtureRequests, getJson, postOtlp, startTestService, type TestService } from '../../../test/helpers.ts';
import { sampleValue, scrapeMetrics } from '../../../test/support/prometheus-text.ts';
import { rawExchange } from '../../../test/support/raw-http.ts';

const TOKEN = 's3cret-ingest-token';
let service: TestService;
const auth = { authorization: `Bearer ${TOKEN}` };

beforeAll(async () => {
  service = await startTestService({ HOOKWATCH_INGEST_TOKEN: TOKEN, HOOKWATCH_OTLP_MAX_REQUEST_BYTES: '1MiB' });
});
afterAll(async () => {
  await service.close();
});

function hookRecord(attrs: Record<string, unknown>): unknown {
  return {
    attributes: Object.entries({ 'event.name': 'hook_execution_complete', hook_event: 'Stop', hook_name: 'Stop', ...attrs }).map(([key, v]) => ({
      key,
      value: typeof v === 'object' ? v : { stringValue: String(v) },
    })),
  };
}

function jsonBatch(records: unknown[]): string {
  return JSON.stringify({ resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'claude-code' } }] }, scopeLogs: [{ logRecords: records }] }] });
}

function nested(depth: number): string {
  let v = '{"stringValue":"x"}';
  for (let i = 0; i < depth; i++) v = `{"arrayValue":{"values":[${v}]}}`;
  // Built as text: JSON.stringify itself cannot recurse 10,001 levels.
  return jsonBatch([{ attributes: [{ key: 'deep', value: '@DEEP@' }] }]).replace('"@DEEP@"', v);
}

/** A string value inside `depth` kvlists, in JSON. */
function nestedKvlist(depth: number): string {
  let v = '{"stringValue":"x"}';
  for (let i = 0; i < depth; i++) v = `{"kvlistValue":{"values":[{"key":"k","value":${v}}]}}`;
  return jsonBatch([{ attributes: [{ key: 'deep', value: '@DEEP@' }] }]).replace('"@DEEP@"', v);
}

/** Protobuf AnyValue nested `depth` times in array_value (or kvlist_value), as raw bytes of ExportLogsServiceRequest. */
function nestedProto(depth: number, via: 'array' | 'kvlist' = 'array'): Buffer {
  const ld = (field: number, payload: Buffer): Buffer => {
    const len: number[] = [];
    let n = payload.length;
    while (n >= 0x80) {
      len.push((n & 0x7f) | 0x80);
      n = Math.floor(n / 128);
    }
    len.push(n);
    return Buffer.concat([Buffer.from([(field << 3) | 2, ...len]), payload]);
  };
  let v = ld(1, Buffer.from('x'));
  for (let i = 0; i < depth; i++) v = via === 'array' ? ld(5, ld(1, v)) : ld(6, ld(1, Buffer.concat([ld(1, Buffer.from('k')), ld(2, v)])));
  const kv = Buffer.concat([ld(1, Buffer.from('deep')), ld(2, v)]);
  return ld(1, ld(2, ld(2, ld(6, kv))));
}

interface Case {
  name: string;
  headers: Record<string, string>;
  body: Buffer | string;
  status: number;
  message: RegExp;
  method?: string;
  path?: string;
}

const protobuf = { 'content-type': 'application/x-protobuf', ...auth };
const json = { 'content-type': 'application/json', ...auth };
const fixture = fixtureRequests('run2-httpprotobuf').find((r) => r.path === '/v1/logs')!.body;

const CASES: Case[] = [
  { name: 'garbage bytes as protobuf', headers: protobuf, body: Buffer.from('\xff\xff\xff\xff garbage', 'latin1'), status: 400, message: /protobuf/ },
  { name: 'truncated protobuf', headers: protobuf, body: fixture.subarray(0, fixture.length - 7), status: 400, message: /truncated protobuf/ },
  // ResourceLogs (field 1, length-delimited) declaring 2^64 - 1 bytes: the length said as it is, not as a rounded float.
  {
    name: 'protobuf declaring a field of 2^64 - 1 bytes', headers: protobuf, body: Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00]), status: 400,
    message: /^truncated protobuf: a field declares more than 2\^53 bytes but only 1 remain$/,
  },
  { name: 'invalid JSON', headers: json, body: '{"resourceLogs": [', status: 400, message: /invalid JSON/ },
  { name: 'JSON with wrong types', headers: json, body: '{"resourceLogs": {"scopeLogs": 3}}', status: 400, message: /resourceLogs must be an array/ },
  { name: 'JSON intValue that is not a number', headers: json, body: jsonBatch([hookRecord({ num_success: { intValue: 'abc' } })]), status: 400, message: /intValue must be an integer/ },
  { name: 'a 10,001-deep nested AnyValue (JSON)', headers: json, body: nested(10_001), status: 400, message: /nested deeper than 100/ },
  { name: 'a 10,001-deep nested AnyValue (protobuf)', headers: protobuf, body: nestedProto(10_001), status: 400, message: /nested deeper than 100/ },
  // The limit is the same in both encodings, to the level (protobuf's fast path for short strings included).
  { name: 'kvlists nested 101 deep (JSON)', headers: json, body: nestedKvlist(101), status: 400, message: /nested deeper than 100/ },
  { name: 'kvlists nested 101 deep (protobuf)', headers: protobuf, body: nestedProto(101, 'kvlist'), status: 400, message: /nested deeper than 100/ },
  { name: 'a gzip bomb', headers: { ...protobuf, 'content-encoding': 'gzip' }, body: gzipSync(Buffer.alloc(64 * 1024 * 1024)), status: 413, message: /after decompression/ },
  { name: 'a body over the limit', headers: protobuf, body: Buffer.alloc(2 * 1024 * 1024), status: 413, message: /exceeds the limit/ },
  { name: 'a corrupt gzip body', headers: { ...protobuf, 'content-encoding': 'gzip' }, body: Buffer.from('not gzip at all'), status: 400, message: /not valid gzip/ },
  { name: 'an unknown content encoding', headers: { ...protobuf, 'content-encoding': 'br' }, body: Buffer.from('x'), status: 415, message: /Content-Encoding "br"/ },
  { name: 'a wrong content type', headers: { 'content-type': 'text/plain', ...auth }, body: 'hello', status: 415, message: /Content-Type "text\/plain" is not supported/ },
  { name: 'JSON declared in a charset other than UTF-8', headers: { 'content-type': 'application/json; charset=iso-8859-1', ...auth }, body: '{}', status: 415, message: /Content-Type "application\/json; charset=iso-8859-1" is not supported; use application\/x-protobuf or application\/json \(UTF-8\)/ },
  { name: 'a missing token', headers: { 'content-type': 'application/json' }, body: '{}', status: 401, message: /bearer token/ },
  { name: 'a wrong token', headers: { 'content-type': 'application/json', authorization: 'Bearer nope' }, body: '{}', status: 401, message: /bearer token/ },
  { name: 'GET on /v1/logs', headers: json, body: '', method: 'GET', status: 405, message: /use POST/ },
  { name: 'an unknown path', headers: json, body: '{}', path: '/v1/profiles', status: 404, message: /no OTLP endpoint/ },
  // OTEL_EXPORTER_OTLP_ENDPOINT written with the signal's path, which the exporter appends again.
  { name: 'the signal path twice', headers: json, body: '{}', path: '/v1/logs/v1/logs', status: 404, message: /^no OTLP endpoint at "\/v1\/logs\/v1\/logs"; use \/v1\/logs, \/v1\/metrics or \/v1\/traces \(OTEL_EXPORTER_OTLP_ENDPOINT is the base URL, such as http:\/\/<host>:\d+, to which the exporter appends \/v1\/logs\)$/ },
  { name: 'the signal path with a trailing slash', headers: json, body: '{}', path: '/v1/logs/', status: 404, message: /^no OTLP endpoint at "\/v1\/logs\/"; use \/v1\/logs, \/v1\/metrics or \/v1\/traces \(no trailing slash: \/v1\/logs; OTEL_EXPORTER_OTLP_ENDPOINT is the base URL, such as http:\/\/<host>:\d+, to which the exporter appends \/v1\/logs\)$/ },
  // OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, used as given, written without the path.
  { name: 'no path', headers: json, body: '{}', path: '/', status: 404, message: /^no OTLP endpoint at "\/"; use \/v1\/logs, \/v1\/metrics or \/v1\/traces \(OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is used as given: end it with \/v1\/logs\)$/ },
];

async function send(c: Case): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const res = await fetch(service.otlpHttpUrl + (c.path ?? '/v1/logs'), { method: c.method ?? 'POST', headers: c.headers, ...(c.method === 'GET' ? {} : { body: typeof c.body === 'string' ? c.body : new Uint8Array(c.body) }) });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

/** Decodes a google.rpc.Status from protobuf: field 1 code (varint), field 2 message. */
function decodeStatus(buf: Buffer): { code: number; message: string } {
  let pos = 0;
  let code = 0;
  let message = '';
  while (pos < buf.length) {
    const tag = buf[pos++]!;
    if (tag === 0x08) code = buf[pos++]!;
    else if (tag === 0x12) {
      let len = 0;
      let shift = 0;
      for (;;) {
        const b = buf[pos++]!;
        len |= (b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) break;
      }
      message = buf.subarray(pos, pos + len).toString();
      pos += len;
    } else throw new Error(`unexpected tag ${tag}`);
  }
  return { code, message };
}

describe('bad input gets the right status and a clear message', () => {
  it('kvlists nested 100 deep are taken in both encodings (101 are not: above)', async () => {
    for (const [headers, body] of [[json, nestedKvlist(100)], [protobuf, nestedProto(100, 'kvlist')]] as const) {
      expect((await send({ name: '', headers, body, status: 200, message: /./ })).status, headers['content-type']).toBe(200);
    }
  });

  for (const c of CASES) {
    it(c.name, async () => {
      const res = await send(c);
      expect(res.status).toBe(c.status);
      const isProto = c.headers['content-type'] === 'application/x-protobuf';
      const status = isProto ? decodeStatus(res.body) : (JSON.parse(res.body.toString()) as { code: number; message: string });
      expect(status.message).toMatch(c.message);
      expect(status.code).toBeGreaterThan(0);
      if (c.status === 401) expect(res.headers.get('www-authenticate')).toBe('Bearer');
      if (c.status === 405) expect(res.headers.get('allow')).toBe('POST');
      // The server keeps serving after each one.
      const ok = await postOtlp(service.otlpHttpUrl, '/v1/logs', '{}', json);
      expect(ok.status).toBe(200);
    });
  }

  it('repeats at most 64 characters of an unknown path, Content-Type or Content-Encoding, and says it cut them', async () => {
    const long = (head: string, c: string): string => head + c.repeat(10_000);
    for (const c of [
      { name: 'a long unknown path', headers: json, body: '{}', path: long('/v1/', 'p'), status: 404, message: /^no OTLP endpoint at "\/v1\/p{60}…"; use \/v1\/logs/ },
      { name: 'a long Content-Type', headers: { ...auth, 'content-type': long('text/', 'c') }, body: 'x', status: 415, message: /^Content-Type "text\/c{59}…" is not supported; use application/ },
      { name: 'a long Content-Encoding', headers: { ...protobuf, 'content-encoding': long('x', 'e') }, body: Buffer.from('x'), status: 415, message: /^Content-Encoding "xe{63}…" is not supported/ },
    ]) {
      const res = await send(c);
      expect(res.status, c.name).toBe(c.status);
      const status = c.headers['content-type'] === 'application/x-protobuf' ? decodeStatus(res.body) : (JSON.parse(res.body.toString()) as { message: string });
      expect(status.message, c.name).toMatch(c.message);
      expect(status.message.length, c.name).toBeLessThan(200);
    }
  });

  it('never echoes the ingest token', async () => {
    const res = await send({ name: '', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}x` }, body: '{}', status: 401, message: /./ });
    expect(res.body.toString()).not.toContain(TOKEN);
  });

  it('tells the dashboard\'s setup snippet that exports need the token, and not the token', async () => {
    const res = await getJson<OverviewResponse>(service.httpUrl, '/api/v1/overview');
    expect(res.body).toMatchObject({ otlpHttpPort: Number(new URL(service.otlpHttpUrl).port), otlpHttpTls: false, otlpIngestToken: true });
    expect(JSON.stringify(res.body)).not.toContain(TOKEN);
  });
});

describe('a request the HTTP parser refuses gets a google.rpc.Status, not an empty body', () => {
  it('headers over 16 KiB: 431 with RESOURCE_EXHAUSTED, in protobuf as no content type could be read', async () => {
    const res = await fetch(service.otlpHttpUrl + '/v1/logs', { method: 'POST', headers: { ...json, 'x-long': 'a'.repeat(20_000) }, body: '{}' });
    expect(res.status).toBe(431);
    expect(res.headers.get('content-type')).toBe('application/x-protobuf');
    expect(decodeStatus(Buffer.from(await res.arrayBuffer()))).toEqual({ code: 8, message: 'the request line and headers are larger than 16 KiB' });
  });

  it('malformed HTTP: 400 with INVALID_ARGUMENT naming what is wrong, and the port keeps serving', async () => {
    const { head, body } = await rawExchange(service.otlpHttpUrl, 'POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: x\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(head).toMatch(/\r\nContent-Type: application\/x-protobuf\r\n/);
    expect(head).toMatch(/\r\nConnection: close(\r\n|$)/);
    expect(decodeStatus(body)).toEqual({ code: 3, message: 'malformed HTTP request: the Content-Length header is not a decimal number, or comes with Transfer-Encoding' });
    expect((await postOtlp(service.otlpHttpUrl, '/v1/logs', '{}', json)).status).toBe(200);
  });

  it('logs what was wrong with a body its decoder refused, as the client was told, with the body\'s control characters written out', async () => {
    const lines: string[] = [];
    const next: LogsConsumer & PassThroughConsumer = { consumeLogs: async () => ({ rejected: 0, message: '' }), consume: async () => {} };
    const logger = createLogger({ level: 'info', write: (line) => lines.push(line) });
    const receiver = new OtlpHttpReceiver({ addr: '127.0.0.1:0', maxRequestBytes: 1024 * 1024, requestTimeoutMs: 30_000, ingestToken: '', inflight: new InflightBudget(64 * 1024 * 1024), logs: next, passThrough: next, logger });
    const { port } = await receiver.start();
    try {
      const url = `http://127.0.0.1:${port}`;
      const refused = await postOtlp(url, '/v1/logs', '{"resourceLogs":{}}', json);
      expect(refused.status).toBe(400);
      const told = (JSON.parse(refused.body.toString()) as { message: string }).message;
      expect(told).toBe('resourceLogs must be an array');
      const first = JSON.parse(lines.find((l) => l.includes('refused an OTLP request')) ?? '{}') as { msg?: string };
      expect(first.msg).toBe(`otlp http: refused an OTLP request (bad_request): ${told}`);
      await receiver.shutdown();
      // A JSON parser's message quotes the start of the body: a line break and a terminal escape in it are written
      // out, in the message as a reader of the log's text sees it (jq -r .msg), not only escaped by the JSON line.
      lines.length = 0;
      const again = new OtlpHttpReceiver({ addr: '127.0.0.1:0', maxRequestBytes: 1024 * 1024, requestTimeoutMs: 30_000, ingestToken: '', inflight: new InflightBudget(64 * 1024 * 1024), logs: next, passThrough: next, logger });
      const other = await again.start();
      try {
        const body = `nope\u001b[2J\n{"injected":"line"}${'x'.repeat(400)}`;
        expect((await postOtlp(`http://127.0.0.1:${other.port}`, '/v1/logs', body, json)).status).toBe(400);
        expect(lines.filter((l) => l.includes('refused'))).toHaveLength(1);
        const line = lines.find((l) => l.includes('refused')) ?? '';
        const controls = (text: string): string[] => [...text].filter((c) => (c.codePointAt(0) ?? 0) < 0x20);
        expect(controls(line)).toEqual([]);
        const msg = (JSON.parse(line) as { msg: string }).msg;
        expect(controls(msg)).toEqual([]);
        expect(msg).toBe(`otlp http: refused an OTLP request (bad_request): invalid JSON: Unexpected token 'o', "nope\\u001b[2J\\n{""... is not valid JSON`);
      } finally {
        await again.shutdown();
      }
    } finally {
      await receiver.shutdown();
    }
  });

  it('logs that an OTLP/gRPC exporter sent to this port, naming the port it goes to, and not other malformed HTTP', async () => {
    const warnings: { msg: string; fields: Record<string, unknown> | undefined }[] = [];
    const next: LogsConsumer & PassThroughConsumer = { consumeLogs: async () => ({ rejected: 0, message: '' }), consume: async () => {} };
    const receiver = new OtlpHttpReceiver({ addr: '127.0.0.1:0', maxRequestBytes: 1024 * 1024, requestTimeoutMs: 30_000, ingestToken: '', inflight: new InflightBudget(64 * 1024 * 1024), logs: next, passThrough: next, logger: { ...silentLogger, warn: (msg, fields) => warnings.push({ msg, fields }) } });
    const { port } = await receiver.start();
    const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
    try {
      const id = (b: Buffer): Buffer => b;
      // Claude Code with OTEL_EXPORTER_OTLP_PROTOCOL=grpc and the endpoint of the OTLP/HTTP port.
      const err = await new Promise<ServiceError | null>((resolve) => {
        client.makeUnaryRequest('/opentelemetry.proto.collector.logs.v1.LogsService/Export', id, id, Buffer.alloc(0), new Metadata(), { deadline: Date.now() + 5000 }, (e: ServiceError | null) => resolve(e));
      });
      expect(err).not.toBeNull();
      await vi.waitFor(() => expect(warnings).toHaveLength(1), { timeout: 5000 });
      expect(warnings[0]).toEqual({
        msg: 'otlp http: an OTLP/gRPC client connected; a gRPC exporter (OTEL_EXPORTER_OTLP_PROTOCOL=grpc) goes to the OTLP/gRPC port (otlp.grpc.addr, 4317 by default), an OTLP/HTTP one to this port needs OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or http/json',
        fields: { port, connections: 1 },
      });
      // HTTP/1.1 that does not parse is no exporter set to the wrong protocol: counted, and logged as a refusal, not as one.
      client.close();
      const grpcConnections = receiver.stats.rejected.malformed ?? 0;
      await new Promise((resolve) => connect(port, '127.0.0.1', function (this: Socket) { this.end('POST /v1/logs HTTP/1.1\r\nContent-Length: x\r\n\r\n'); }).on('close', resolve).resume());
      expect(receiver.stats.rejected.malformed).toBe(grpcConnections + 1);
      await receiver.shutdown();
      expect(warnings.reduce((n, w) => n + ((w.fields?.['connections'] as number | undefined) ?? 0), 0)).toBe(grpcConnections);
      expect(warnings.filter((w) => w.fields?.['connections'] === undefined).map((w) => w.msg)).toEqual(['otlp http: refused an OTLP request (malformed)']);
    } finally {
      client.close();
      await receiver.shutdown();
    }
  });
});

describe('a request Node\'s HTTP server would refuse with an empty answer, or none, gets a google.rpc.Status and is counted', () => {
  const rejected = async (reason: string): Promise<number> => {
    const { families } = await scrapeMetrics(service.httpUrl);
    return sampleValue(families, 'hookwatch_otlp_requests_rejected_total', { transport: 'http', reason }) ?? Number.NaN;
  };
  const head = (lines: string[]): string => `${lines.join('\r\n')}\r\n\r\n`;
  const logsPost = ['Content-Type: application/json', `Authorization: Bearer ${TOKEN}`, 'Content-Length: 2'];
  const chunked = (body: Buffer): Buffer => Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);

  interface Refused {
    name: string;
    raw: string | Buffer;
    status: string;
    /** The google.rpc.Status, in JSON (the request's encoding, or no OTLP one) or in protobuf (no headers read). */
    rpcStatus: { code: number; message: string };
    encoding: 'json' | 'protobuf';
    reason: string;
    headers?: RegExp;
  }
  const REFUSED: Refused[] = [
    {
      name: 'an Expect other than 100-continue: 417 naming the header, repeating at most 64 characters of it',
      raw: head(['POST /v1/logs HTTP/1.1', 'Host: 127.0.0.1', `Expect: ${'x'.repeat(100)}`, ...logsPost]) + '{}',
      status: '417 Expectation Failed', encoding: 'json', reason: 'expectation_failed',
      rpcStatus: { code: 3, message: `Expect "${'x'.repeat(64)}…" is not supported; send the request without it, or with Expect: 100-continue` },
    },
    {
      name: 'CONNECT (a client taking the port for a proxy): 405 with Allow, as any method but POST',
      raw: head(['CONNECT example.com:443 HTTP/1.1', 'Host: example.com:443']),
      status: '405 Method Not Allowed', encoding: 'json', reason: 'method_not_allowed', headers: /\r\nallow: POST\r\n/i,
      rpcStatus: { code: 12, message: 'method CONNECT not allowed; use POST on /v1/logs, /v1/metrics or /v1/traces' },
    },
    {
      name: 'HTTP/1.1 without Host: 400 saying so',
      raw: head(['POST /v1/logs HTTP/1.1', ...logsPost]) + '{}',
      status: '400 Bad Request', encoding: 'json', reason: 'malformed',
      rpcStatus: { code: 3, message: 'the Host header is missing; HTTP/1.1 requires it' },
    },
    // RFC 9112 section 3.2: Node keeps the first Host of two, which a proxy in front may read otherwise.
    {
      name: 'two Host headers: 400 saying so, whichever comes first',
      raw: head(['POST /v1/logs HTTP/1.1', 'Host: 127.0.0.1', 'Host: evil.example', ...logsPost]) + '{}',
      status: '400 Bad Request', encoding: 'json', reason: 'malformed',
      rpcStatus: { code: 3, message: 'the Host header is sent more than once; HTTP/1.1 allows one' },
    },
    {
      name: 'a Host that is no host and port: 400 repeating it',
      raw: head(['POST /v1/logs HTTP/1.1', 'Host: 127.0.0.1:4318@evil.example', ...logsPost]) + '{}',
      status: '400 Bad Request', encoding: 'json', reason: 'malformed',
      rpcStatus: { code: 3, message: 'the Host header "127.0.0.1:4318@evil.example" is not a host name or address with an optional port' },
    },
    // RFC 9112 section 3.2.2: the host of an absolute-form target is the one the request names, not Host.
    {
      name: 'an absolute-form target naming a host not allowed: 403, whatever Host says',
      raw: head(['POST http://evil.example:4318/v1/logs HTTP/1.1', 'Host: 127.0.0.1', ...logsPost, 'Connection: close']) + '{}',
      status: '403 Forbidden', encoding: 'json', reason: 'host_not_allowed',
      rpcStatus: { code: 7, message: 'host "evil.example" is not allowed: add it to http.allowedHosts to reach hookwatch by that name' },
    },
    {
      name: 'an absolute-form target whose authority is no host and port: 400 repeating it',
      raw: head(['POST http://127.0.0.1@evil.example/v1/logs HTTP/1.1', 'Host: 127.0.0.1', ...logsPost]) + '{}',
      status: '400 Bad Request', encoding: 'json', reason: 'malformed',
      rpcStatus: { code: 3, message: 'the host of the request target "127.0.0.1@evil.example" is not a host name or address with an optional port' },
    },
    // RFC 9112 section 6.1: the body's length cannot be known. Node's parser passes the request to the handler,
    // then refuses its body; the header said why before.
    {
      name: 'a Transfer-Encoding whose last coding is not chunked: 400 repeating it, before anything else is judged',
      raw: head(['POST /v1/logs HTTP/1.1', 'Host: 127.0.0.1', 'Content-Type: application/json', `Authorization: Bearer ${TOKEN}`, 'Transfer-Encoding: gzip']) + '{}',
      status: '400 Bad Request', encoding: 'json', reason: 'malformed',
      rpcStatus: { code: 3, message: 'the Transfer-Encoding header "gzip" does not end with chunked, so the length of the body cannot be known; send Content-Length instead, or chunked last' },
    },
    {
      name: 'a Transfer-Encoding whose last coding is not chunked, on a request the handler would refuse on its headers: 400 too',
      raw: head(['GET /v1/logs HTTP/1.1', 'Host: 127.0.0.1', 'Transfer-Encoding: gzip']),
      status: '400 Bad Request', encoding: 'json', reason: 'malformed',
      rpcStatus: { code: 3, message: 'the Transfer-Encoding header "gzip" does not end with chunked, so the length of the body cannot be known; send Content-Length instead, or chunked last' },
    },
    // RFC 9112 section 6.1: Transfer-Encoding is not HTTP/1.0's; such a message's framing is faulty, chunked or not.
    {
      name: 'a Transfer-Encoding in an HTTP/1.0 request: 400 saying HTTP/1.0 has none',
      raw: head(['POST /v1/logs HTTP/1.0', 'Host: 127.0.0.1', 'Content-Type: application/json', `Authorization: Bearer ${TOKEN}`, 'Transfer-Encoding: chunked']) + '2\r\n{}\r\n0\r\n\r\n',
      status: '400 Bad Request', encoding: 'json', reason: 'malformed',
      rpcStatus: { code: 3, message: 'Transfer-Encoding is not part of HTTP/1.0, so the length of the body cannot be known; send Content-Length instead, or use HTTP/1.1' },
    },
    // RFC 9112 section 6.1: a transfer coding the server does not understand is 501. The body, gzipped under its
    // chunks, was taken for the JSON or protobuf it is not.
    {
      name: 'a transfer coding before chunked (gzip, chunked): 501 naming it and what to send instead',
      raw: Buffer.concat([Buffer.from(head(['POST /v1/logs HTTP/1.1', 'Host: 127.0.0.1', 'Content-Type: application/json', `Authorization: Bearer ${TOKEN}`, 'Transfer-Encoding: gzip, chunked'])), chunked(gzipSync('{}'))]),
      status: '501 Not Implemented', encoding: 'json', reason: 'unsupported_media_type',
      rpcStatus: { code: 12, message: 'Transfer-Encoding "gzip" is not implemented, only chunked; compress the body with Content-Encoding: gzip instead, sent with Transfer-Encoding: chunked alone or Content-Length' },
    },
    // What Node's parser refuses was answered already; these confirm it for what a scanner or proxy sends, naming
    // what the parser found wrong.
    {
      name: 'a request line that is not HTTP: 400 saying no method starts it',
      raw: head(['HELLO']),
      status: '400 Bad Request', encoding: 'protobuf', reason: 'malformed',
      rpcStatus: { code: 3, message: 'malformed HTTP request: it does not start with an HTTP method, as when a TLS client speaks to a plain-text port' },
    },
    {
      name: 'a Content-Length past what the parser can hold: 400 saying it is too large, not that it is no number',
      raw: head(['POST /v1/logs HTTP/1.1', 'Host: 127.0.0.1', 'Content-Type: application/json', `Authorization: Bearer ${TOKEN}`, 'Content-Length: 99999999999999999999999']),
      status: '400 Bad Request', encoding: 'protobuf', reason: 'malformed',
      rpcStatus: { code: 3, message: 'malformed HTTP request: the Content-Length header is too large, past 2^64 - 1 bytes' },
    },
    {
      name: 'Transfer-Encoding and Content-Length together (request smuggling): 400 saying so',
      raw: head(['POST /v1/logs HTTP/1.1', 'Host: 127.0.0.1', ...logsPost, 'Transfer-Encoding: chunked']) + '2\r\n{}\r\n0\r\n\r\n',
      status: '400 Bad Request', encoding: 'protobuf', reason: 'malformed',
      rpcStatus: { code: 3, message: 'malformed HTTP request: Transfer-Encoding and Content-Length are both sent; send one of them' },
    },
    {
      name: 'a Transfer-Encoding naming a coding after chunked: 400 saying chunked must come once and last',
      raw: head(['POST /v1/logs HTTP/1.1', 'Host: 127.0.0.1', 'Content-Type: application/json', `Authorization: Bearer ${TOKEN}`, 'Transfer-Encoding: chunked, gzip']) + '2\r\n{}\r\n0\r\n\r\n',
      status: '400 Bad Request', encoding: 'protobuf', reason: 'malformed',
      rpcStatus: { code: 3, message: 'malformed HTTP request: the Transfer-Encoding header names chunked other than once and last, or comes with Content-Length' },
    },
    {
      name: 'a chunk size that is not hexadecimal: 400 saying so, in the encoding of the request the handler was given',
      raw: head(['POST /v1/logs HTTP/1.1', 'Host: 127.0.0.1', 'Content-Type: application/json', `Authorization: Bearer ${TOKEN}`, 'Transfer-Encoding: chunked']) + 'zz\r\n{}\r\n0\r\n\r\n',
      status: '400 Bad Request', encoding: 'json', reason: 'malformed',
      rpcStatus: { code: 3, message: 'malformed HTTP request: a chunk size of the chunked body is not a hexadecimal number, or is too large' },
    },
    {
      name: 'a URL over 16 KiB: 431',
      raw: head([`POST /v1/logs?${'q'.repeat(20_000)} HTTP/1.1`, 'Host: 127.0.0.1', ...logsPost]) + '{}',
      status: '431 Request Header Fields Too Large', encoding: 'protobuf', reason: 'header_overflow',
      rpcStatus: { code: 8, message: 'the request line and headers are larger than 16 KiB' },
    },
  ];

  for (const c of REFUSED) {
    it(c.name, async () => {
      const before = await rejected(c.reason);
      const answer = await rawExchange(service.otlpHttpUrl, c.raw);
      expect(answer.head).toMatch(new RegExp(`^HTTP/1\\.1 ${c.status}\r\n`));
      expect(answer.head).toMatch(new RegExp(`\r\ncontent-type: application/${c.encoding === 'json' ? 'json' : 'x-protobuf'}\r\n`, 'i'));
      expect(answer.head).toMatch(/\r\nconnection: close(\r\n|$)/i);
      if (c.headers) expect(answer.head).toMatch(c.headers);
      expect(c.encoding === 'json' ? JSON.parse(answer.body.toString()) : decodeStatus(answer.body)).toEqual(c.rpcStatus);
      expect(await rejected(c.reason)).toBe(before + 1);
      expect((await postOtlp(service.otlpHttpUrl, '/v1/logs', '{}', json)).status).toBe(200);
    });
  }

  it('a request pipelined behind a refusal that closes the connection is not served: its answer could never be sent', async () => {
    const served = async (): Promise<number> => sampleValue((await scrapeMetrics(service.httpUrl)).families, 'hookwatch_otlp_requests_total', { transport: 'http', signal: 'logs', outcome: 'ok' }) ?? 0;
    // A client that pipelines retries what got no answer: served here, it would be taken twice.
    for (const refused of [
      head(['POST /v1/logs HTTP/1.1', 'Host: 127.0.0.1', 'Host: 127.0.0.1', ...logsPost]) + '{}',
      Buffer.concat([Buffer.from(head(['POST /v1/logs HTTP/1.1', 'Host: 127.0.0.1', 'Content-Type: application/json', `Authorization: Bearer ${TOKEN}`, 'Transfer-Encoding: gzip, chunked'])), chunked(gzipSync('{}'))]),
    ]) {
      const before = await served();
      const answer = await rawExchange(service.otlpHttpUrl, Buffer.concat([Buffer.from(refused), Buffer.from(head(['POST /v1/logs HTTP/1.1', 'Host: 127.0.0.1', ...logsPost]) + '{}')]));
      expect(answer.head).toMatch(/^HTTP\/1\.1 (400|501) /);
      expect(answer.body.toString('latin1')).not.toMatch(/HTTP\/1\.1 \d{3} /);
      expect(await served()).toBe(before);
    }
  });

  it('a request followed by bytes that are not HTTP gets its own answer first, then the refusal of those bytes', async () => {
    const served = async (): Promise<number> => sampleValue((await scrapeMetrics(service.httpUrl)).families, 'hookwatch_otlp_requests_total', { transport: 'http', signal: 'logs', outcome: 'ok' }) ?? 0;
    const before = await served();
    const answer = await rawExchange(service.otlpHttpUrl, head(['POST /v1/logs HTTP/1.1', 'Host: 127.0.0.1', ...logsPost]) + '{}' + head(['HELLO']));
    // The batch was taken: its client is told so, not refused for what followed it.
    expect(answer.head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(answer.body.toString('latin1')).toMatch(/^\{\}HTTP\/1\.1 400 Bad Request\r\n[^]*\r\nConnection: close\r\n/);
    expect(await served()).toBe(before + 1);
  });

  it('a body its client stops sending (its side of the connection closed) before its Content-Length is answered as ended early, counted as client_aborted', async () => {
    const before = await rejected('client_aborted');
    const malformedBefore = await rejected('malformed');
    const socket = connect(Number(new URL(service.otlpHttpUrl).port), '127.0.0.1');
    socket.on('error', () => {});
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write(head(['POST /v1/logs HTTP/1.1', 'Host: 127.0.0.1', 'Content-Type: application/json', `Authorization: Bearer ${TOKEN}`, 'Content-Length: 100']) + '{"resourceLogs":');
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.end();
    await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({ code: 3, message: 'the request ended early: the client closed its side of the connection before the whole body had arrived' });
    await vi.waitFor(async () => expect(await rejected('client_aborted')).toBe(before + 1));
    expect(await rejected('malformed')).toBe(malformedBefore);
  });

  it('Expect: 100-continue is met: the body is asked for and taken', async () => {
    const answer = await rawExchange(service.otlpHttpUrl, head(['POST /v1/logs HTTP/1.1', 'Host: 127.0.0.1', 'Expect: 100-continue', ...logsPost, 'Connection: close']) + '{}');
    expect(answer.head).toMatch(/^HTTP\/1\.1 100 Continue$/);
    expect(answer.body.toString('latin1')).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\n\{\}$/);
  });

  it('Expect: 100-continue on a request its headers alone refuse gets the refusal, not 100 Continue: the body is never asked for', async () => {
    const post = (path: string, lines: string[]): string => head([`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Expect: 100-continue', ...lines]);
    for (const [raw, status, message] of [
      [post('/v1/logs', ['Content-Type: application/json', `Authorization: Bearer ${TOKEN}`, `Content-Length: ${50 * 1024 * 1024}`]), '413 Payload Too Large', `request body of ${50 * 1024 * 1024} bytes exceeds the limit of 1048576 bytes`],
      [post('/v1/logs', ['Content-Type: application/json', `Content-Length: ${50 * 1024 * 1024}`]), '401 Unauthorized', 'missing or wrong bearer token (Authorization: Bearer <token>)'],
      [post('/v1/logs', ['Content-Type: text/plain', `Authorization: Bearer ${TOKEN}`, 'Content-Length: 5']), '415 Unsupported Media Type', 'Content-Type "text/plain" is not supported; use application/x-protobuf or application/json (UTF-8)'],
      [post('/v1/logs', ['Content-Type: application/json', `Authorization: Bearer ${TOKEN}`, 'Content-Encoding: zstd', 'Content-Length: 5']), '415 Unsupported Media Type', 'Content-Encoding "zstd" is not supported (use gzip, deflate or none)'],
      [post('/v1/nope', ['Content-Type: application/json', `Authorization: Bearer ${TOKEN}`, 'Content-Length: 5']), '404 Not Found', 'no OTLP endpoint at "/v1/nope"; use /v1/logs, /v1/metrics or /v1/traces'],
    ] as const) {
      // The body is never sent: the refusal must come, and the connection close, on the headers alone.
      const answer = await rawExchange(service.otlpHttpUrl, raw);
      expect(answer.head, raw).toMatch(new RegExp(`^HTTP/1\\.1 ${status}\r\n`));
      expect(answer.head, raw).toMatch(/\r\nconnection: close(\r\n|$)/i);
      expect((JSON.parse(answer.body.toString()) as { message: string }).message, raw).toBe(message);
    }
    // A request it takes still gets 100 Continue first, also when the body is gzip.
    const body = gzipSync('{}');
    const answer = await rawExchange(service.otlpHttpUrl, Buffer.concat([Buffer.from(post('/v1/logs', ['Content-Type: application/json', `Authorization: Bearer ${TOKEN}`, 'Content-Encoding: gzip', `Content-Length: ${body.length}`, 'Connection: close'])), body]));
    expect(answer.head).toMatch(/^HTTP\/1\.1 100 Continue$/);
    expect(answer.body.toString('latin1')).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\n\{\}$/);
  });

  it('HTTP/1.0, which has no Host, and an absolute-form target (RFC 9112 3.2.2) of any scheme, as the HTTP port reads one, are served as the path they name, on the host it names', async () => {
    const { port } = new URL(service.otlpHttpUrl);
    for (const lines of [['POST /v1/logs HTTP/1.0'], [`POST http://127.0.0.1:${port}/v1/logs HTTP/1.1`, 'Host: 127.0.0.1'], [`POST HTTP://127.0.0.1:${port}/v1/logs?x=1 HTTP/1.1`, 'Host: 127.0.0.1'], [`POST http://localhost:${port}/v1/logs HTTP/1.1`, 'Host: evil.example'], [`POST foo://127.0.0.1:${port}/v1/logs HTTP/1.1`, 'Host: 127.0.0.1']]) {
      const line = lines[0];
      const answer = await rawExchange(service.otlpHttpUrl, head([...lines, ...logsPost, 'Connection: close']) + '{}');
      expect(answer.head, line).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(answer.body.toString(), line).toBe('{}');
    }
    const other = await rawExchange(service.otlpHttpUrl, head([`POST http://127.0.0.1:${port}/v1/profiles HTTP/1.1`, 'Host: 127.0.0.1', ...logsPost, 'Connection: close']) + '{}');
    expect(other.head).toMatch(/^HTTP\/1\.1 404 /);
    expect((JSON.parse(other.body.toString()) as { message: string }).message).toMatch(/^no OTLP endpoint at "\/v1\/profiles"; use /);
  });
});

describe('records it cannot use are a partial success, not a failed batch', () => {
  it('rejects only the records with bad counts and stores the rest', async () => {
    const body = jsonBatch([
      hookRecord({ hook_name: 'Stop:partial', num_success: '-1', 'session.id': 'p', 'event.sequence': '1' }),
      hookRecord({ hook_name: 'Stop:partial', num_success: 'abc', 'session.id': 'p', 'event.sequence': '2' }),
      hookRecord({ hook_name: 'Stop:partial', num_success: '1.5', 'session.id': 'p', 'event.sequence': '3' }),
      hookRecord({ hook_name: 'Stop:partial', num_success: { doubleValue: Number.NaN }, 'session.id': 'p', 'event.sequence': '4' }),
      hookRecord({ hook_name: 'Stop:partial', num_success: '1', num_hooks: '1', stdout_chars: '10', num_outputs_persisted: '0', 'session.id': 'p', 'event.sequence': '5' }),
      { attributes: [{ key: 'event.name', value: { stringValue: 'user_prompt' } }] },
    ]).replace('{"doubleValue":null}', '{"doubleValue":"NaN"}');
    const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', body, json);
    expect(res.status).toBe(200);
    const out = JSON.parse(res.body.toString()) as { partialSuccess: { rejectedLogRecords: string; errorMessage: string } };
    expect(out.partialSuccess.rejectedLogRecords).toBe('4');
    expect(out.partialSuccess.errorMessage).toMatch(/num_success "-1" is not a non-negative whole number/);
    expect(out.partialSuccess.errorMessage).toMatch(/num_success "abc"/);
    const { body: hooks } = await getJson<{ hooks: { hookName: string; executions: number }[] }>(service.httpUrl, '/api/v1/hooks?from=now-30d&to=now%2B1d');
    expect(hooks.hooks.find((h) => h.hookName === 'Stop:partial')?.executions).toBe(1);
  });

  it('answers partial success in protobuf for protobuf requests', async () => {
    // A protobuf request whose only record has event.name hook_execution_complete and no hook_event.
    const kv = (k: string, v: string): Buffer => {
      const key = Buffer.concat([Buffer.from([0x0a, k.length]), Buffer.from(k)]);
      const val = Buffer.concat([Buffer.from([0x12, v.length + 2, 0x0a, v.length]), Buffer.from(v)]);
      return Buffer.concat([Buffer.from([0x32, key.length + val.length]), key, val]);
    };
    const rec = kv('event.name', 'hook_execution_complete');
    const sl = Buffer.concat([Buffer.from([0x12, rec.length]), rec]);
    const rl = Buffer.concat([Buffer.from([0x12, sl.length]), sl]);
    const req = Buffer.concat([Buffer.from([0x0a, rl.length]), rl]);
    const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', req, protobuf);
    expect(res.status).toBe(200);
    // ExportLogsServiceResponse { partial_success (1) { rejected_log_records (1) = 1, error_message (2) } }
    expect(res.body[0]).toBe(0x0a);
    expect(res.body.subarray(2, 4)).toEqual(Buffer.from([0x08, 0x01]));
    expect(res.body.toString()).toMatch(/hook_event is missing/);
  });
});

describe('metrics and traces', () => {
  it('answers 200 on /v1/metrics and /v1/traces so a client pointed straight at hookwatch logs no errors', async () => {
    const metrics = fixtureRequests('run1-httpjson').find((r) => r.path === '/v1/metrics')!;
    for (const path of ['/v1/metrics', '/v1/traces']) {
      const res = await postOtlp(service.otlpHttpUrl, path, metrics.body, { 'content-type': metrics.contentType, ...auth });
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body.toString())).toEqual({});
    }
  });

  it('refuses with 400 a metrics or traces body that is not OTLP, naming the problem, even with nothing forwarded', async () => {
    const cases: { path: string; body: string | Buffer; type: string; message: RegExp }[] = [
      { path: '/v1/metrics', body: '{"resourceMetrics": [', type: 'application/json', message: /malformed JSON metrics request/ },
      { path: '/v1/metrics', body: '[1, 2]', type: 'application/json', message: /metrics request: expected an object/ },
      { path: '/v1/metrics', body: '{"resourceMetrics": 5}', type: 'application/json', message: /resourceMetrics must be an array/ },
      { path: '/v1/traces', body: '{"resourceSpans": [{"scopeSpans": [{"spans": "x"}]}]}', type: 'application/json', message: /resourceSpans\[0\]\.scopeSpans\[0\]\.spans must be an array/ },
      { path: '/v1/traces', body: '{"resource_spans": [{"resource": "r"}]}', type: 'application/json', message: /resourceSpans\[0\]\.resource must be an object/ },
      { path: '/v1/metrics', body: Buffer.from([0x0a, 0x0a, 0x01, 0x02]), type: 'application/x-protobuf', message: /truncated.*declares 10 bytes/ },
    ];
    for (const c of cases) {
      const res = await postOtlp(service.otlpHttpUrl, c.path, c.body, { 'content-type': c.type, ...auth });
      expect(res.status, `${c.path} ${String(c.body)}`).toBe(400);
      expect(res.body.toString()).toMatch(c.message);
    }
    // An empty request and one with empty levels are valid OTLP.
    for (const body of ['{}', '{"resourceMetrics": []}', '{"resourceMetrics": [{"scopeMetrics": null}]}']) {
      expect((await postOtlp(service.otlpHttpUrl, '/v1/metrics', body, { 'content-type': 'application/json', ...auth })).status).toBe(200);
    }
  });
});

describe('slow clients', () => {
  it('a client that stops sending mid-body does not block others', async () => {
    const slow = request(service.otlpHttpUrl + '/v1/logs', { method: 'POST', headers: { ...json, 'content-length': '1000' } });
    slow.on('error', () => {});
    slow.write('{"resourceLogs":');
    const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', '{}', json);
    expect(res.status).toBe(200);
    slow.destroy();
  });
});

describe('a chunked body reserves otlp.maxInflightBytes as its bytes arrive', () => {
  const sockets: Socket[] = [];
  afterAll(() => {
    for (const s of sockets) s.destroy();
  });
  /** POST /v1/logs, chunked, over a raw socket; the answer's status line once it comes. */
  const chunkedPost = (url: string, first: Buffer, end: boolean): { socket: Socket; status: Promise<string> } => {
    const socket = connect(Number(new URL(url).port), '127.0.0.1');
    sockets.push(socket);
    socket.on('error', () => {});
    let answer = '';
    const status = new Promise<string>((resolve) => {
      socket.on('data', (d: Buffer) => {
        answer += d.toString('latin1');
        if (answer.includes('\r\n')) resolve(answer.slice(0, answer.indexOf('\r\n')));
      });
      socket.on('close', () => resolve(answer));
    });
    socket.write(`POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\nTransfer-Encoding: chunked\r\n\r\n`);
    socket.write(Buffer.concat([Buffer.from(`${first.length.toString(16)}\r\n`), first, Buffer.from(end ? '\r\n0\r\n\r\n' : '\r\n')]));
    return { socket, status };
  };

  it('lets a chunked POST in beside slow chunked uploads, each holding what it sent so far, and refuses one that cannot grow with 503', async () => {
    const next: LogsConsumer & PassThroughConsumer = { consumeLogs: async () => ({ rejected: 0, message: '' }), consume: async () => {} };
    // Room for two bodies of otlp.maxRequestBytes at once; three slow chunked uploads that sent 10,000 bytes each.
    const inflight = new InflightBudget(2 * 1024 * 1024);
    const receiver = new OtlpHttpReceiver({ addr: '127.0.0.1:0', maxRequestBytes: 1024 * 1024, requestTimeoutMs: 30_000, ingestToken: '', inflight, logs: next, passThrough: next, logger: silentLogger });
    const { port } = await receiver.start();
    const url = `http://127.0.0.1:${port}`;
    try {
      const slow = [0, 1, 2].map(() => chunkedPost(url, Buffer.alloc(10_000, 0x0a), false));
      await vi.waitFor(() => expect(inflight.inUseBytes).toBe(3 * 10_000));
      const body = fixtureRequests('run2-httpprotobuf').find((f) => f.path === '/v1/logs')!.body;
      expect(await chunkedPost(url, body, true).status).toBe('HTTP/1.1 200 OK');
      await vi.waitFor(() => expect(inflight.inUseBytes).toBe(3 * 10_000));
      // The budget all but spent by others: the next chunk of a slow upload cannot be held, and it is answered 503.
      const others = inflight.open();
      others.take(inflight.freeBytes - 100);
      slow[0]!.socket.write(Buffer.concat([Buffer.from('3e8\r\n'), Buffer.alloc(1000, 0x0a), Buffer.from('\r\n')]));
      expect(await slow[0]!.status).toBe('HTTP/1.1 503 Service Unavailable');
      others.release();
      await vi.waitFor(() => expect(inflight.inUseBytes).toBe(2 * 10_000));
    } finally {
      for (const s of sockets) s.destroy();
      await receiver.shutdown();
    }
  });
});
