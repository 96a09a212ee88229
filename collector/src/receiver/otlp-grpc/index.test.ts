/**
 * The OTLP/gRPC receiver against the real OpenTelemetry JS gRPC exporters (logs, metrics, traces; gzip on and
 * off), a raw grpc-js client for the error paths, and node:http2 clients and raw sockets for how connections are
 * closed (GOAWAY). The next stage is an in-memory recorder.
 */
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { connect as http2Connect, constants as http2Constants, type ClientHttp2Session } from 'node:http2';
import { connect as netConnect, type Socket } from 'node:net';
import { Client, Metadata, credentials, status as GrpcStatus, type ClientUnaryCall, type ServiceError } from '@grpc/grpc-js';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-grpc';
import { OTLPLogExporter as HttpLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-grpc';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { STATUS_DETAILS_KEY, retryDelayFromStatus } from '../../otlp/grpc-status.ts';
import type { LogsRequest } from '../../otlp/model.ts';
import type { ConsumeResult, LogsConsumer, PassThroughConsumer, RawRequest } from '../../pipeline/consumer.ts';
import { OverloadedError } from '../../pipeline/errors.ts';
import { StoreUnavailableError } from '../../store/store.ts';
import { silentLogger, type Logger } from '../../telemetry/logger.ts';
import { OtlpGrpcReceiver } from './index.ts';
import { STORE_HOLD, type HoldBackoff } from './store-hold.ts';
import { InflightBudget } from '../inflight.ts';
import { TlsCredentials } from '../../net/tls.ts';
import { HAVE_OPENSSL, useTestPki } from '../../../test/support/certs.ts';
import { HTTP2_PING, HTTP2_PREFACE, grpcFrame, grpcHeadersFrame, http2Frame, rawGrpcCall, rstStreamCancel } from '../../../test/faults/grpc-raw.ts';

/** The exporters' gzip setting (CompressionAlgorithm in @opentelemetry/otlp-exporter-base, which hookwatch does not depend on). */
const GZIP = 'gzip' as never;

const FIXTURE = new URL('../../../testdata/claude-code-2.1.332/run2-httpprotobuf/', import.meta.url);
const LOGS_PATH = '/opentelemetry.proto.collector.logs.v1.LogsService/Export';

/** The next stage: records what arrives, or throws what the test asks. */
class Recorder implements LogsConsumer, PassThroughConsumer {
  logs: { req: LogsRequest; raw: RawRequest }[] = [];
  passed: RawRequest[] = [];
  fail: Error | undefined;
  /** While set, admit() throws it: a request refused before the receiver decodes it. */
  refuse: Error | undefined;
  /** While set, a request waits for it before it is taken: a call kept in flight. */
  hold: Promise<void> | undefined;
  /** Requests that have reached this stage, taken or not. */
  arrived = 0;
  /** While set, a request that arrives while this many wait for `hold` is refused: otlp.maxPendingRequests. */
  maxPending: number | undefined;
  private pending = 0;
  admit(): void {
    if (this.refuse) throw this.refuse;
  }
  async consumeLogs(req: LogsRequest, raw: RawRequest): Promise<ConsumeResult> {
    this.arrived++;
    if (this.maxPending !== undefined && this.pending >= this.maxPending) throw new OverloadedError(`${this.pending} batches are waiting for the store; retry later`, 1);
    this.pending++;
    try {
      await this.hold;
    } finally {
      this.pending--;
    }
    if (this.fail) throw this.fail;
    this.logs.push({ req, raw });
    return { rejected: 0, message: '' };
  }
  async consume(raw: RawRequest): Promise<void> {
    if (this.fail) throw this.fail;
    this.passed.push(raw);
  }
}

let receiver: OtlpGrpcReceiver | undefined;
let client: Client | undefined;
/** The clients of exportOwn. */
const ownClients: Client[] = [];
afterEach(async () => {
  client?.close();
  client = undefined;
  for (const c of ownClients.splice(0)) c.close();
  await receiver?.shutdown();
  receiver = undefined;
});

async function start(opts: { token?: string; maxRequestBytes?: number; inflightBytes?: number; requestTimeoutMs?: number; tls?: TlsCredentials; logger?: Logger; maxPending?: number; holdBackoff?: HoldBackoff } = {}): Promise<{ url: string; next: Recorder; inflight: InflightBudget }> {
  const next = new Recorder();
  next.maxPending = opts.maxPending;
  const inflight = new InflightBudget(opts.inflightBytes ?? 64 * 1024 * 1024);
  receiver = new OtlpGrpcReceiver({
    addr: '127.0.0.1:0', maxRequestBytes: opts.maxRequestBytes ?? 4 * 1024 * 1024, requestTimeoutMs: opts.requestTimeoutMs ?? 30_000, ingestToken: opts.token ?? '', ...(opts.tls ? { tls: opts.tls } : {}),
    ...(opts.maxPending === undefined ? {} : { maxPending: opts.maxPending }), inflight, logs: next, passThrough: next, logger: opts.logger ?? silentLogger,
  }, opts.holdBackoff);
  const { port } = await receiver.start();
  return { url: `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}`, next, inflight };
}

/** Sends raw bytes to LogsService/Export; resolves with the error (or null) and the response. */
function rawExport(url: string, body: Buffer, metadata = new Metadata(), gzip = false): Promise<{ err: ServiceError | null; res: Buffer | undefined }> {
  client = new Client(url.replace('http://', ''), credentials.createInsecure(), gzip ? { 'grpc.default_compression_algorithm': 2 } : {});
  const id = (b: Buffer): Buffer => b;
  return new Promise((resolve) => {
    client!.makeUnaryRequest(LOGS_PATH, id, id, body, metadata, { deadline: Date.now() + 5000 }, (err: ServiceError | null, res?: Buffer) => resolve({ err, res }));
  });
}

/**
 * Sends `bytes` to LogsService/Export on a connection of its own, with a deadline `deadlineMs` from now: the call
 * (to cancel it), and the error it ended with (or null).
 */
function exportOwn(url: string, bytes: Buffer, deadlineMs: number): { call: ClientUnaryCall; answered: Promise<ServiceError | null> } {
  const c = new Client(url.replace('http://', ''), credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
  ownClients.push(c);
  const id = (b: Buffer): Buffer => b;
  let call: ClientUnaryCall | undefined;
  const answered = new Promise<ServiceError | null>((resolve) => {
    call = c.makeUnaryRequest(LOGS_PATH, id, id, bytes, new Metadata(), { deadline: Date.now() + deadlineMs }, (err: ServiceError | null) => resolve(err));
  });
  return { call: call!, answered };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const resource = resourceFromAttributes({ 'service.name': 'claude-code', 'service.version': '2.1.332' });

describe('OTLP/gRPC receiver with the real OpenTelemetry exporters', () => {
  it('logs that an OTLP/HTTP exporter sent to this port, naming the port it goes to, once for a burst', async () => {
    const warnings: { msg: string; fields: Record<string, unknown> | undefined }[] = [];
    const { url, next } = await start({ logger: { ...silentLogger, warn: (msg, fields) => warnings.push({ msg, fields }) } });
    // Claude Code with OTEL_EXPORTER_OTLP_PROTOCOL=http/json and the endpoint of the gRPC port.
    for (let i = 0; i < 3; i++) {
      const exporter = new HttpLogExporter({ url: `${url}/v1/logs`, timeoutMillis: 5000 });
      const provider = new LoggerProvider({ resource, processors: [new BatchLogRecordProcessor({ exporter })] });
      provider.getLogger('com.anthropic.claude_code.events', '2.1.332').emit({ body: 'claude_code.hook_execution_complete', attributes: { 'event.name': 'hook_execution_complete' } });
      await provider.shutdown().catch(() => {});
    }
    await vi.waitFor(() => expect(warnings).toHaveLength(1), { timeout: 10_000 });
    expect(warnings[0]).toEqual({
      msg: 'otlp grpc: a client that does not speak gRPC connected; an OTLP/HTTP exporter (OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or http/json) goes to the OTLP/HTTP port (otlp.http.addr, 4318 by default), a gRPC one to this port needs OTEL_EXPORTER_OTLP_PROTOCOL=grpc',
      fields: { port: Number(new URL(url).port), connections: 1 },
    });
    expect(next.logs).toHaveLength(0);
  });

  it('counts a call whose metadata holds an entry past the 64 KiB node:http2 reads of one header as header_overflow and logs it as such, not as a client that does not speak gRPC', async () => {
    const warnings: { msg: string; fields: Record<string, unknown> | undefined }[] = [];
    const { url, next } = await start({ logger: { ...silentLogger, warn: (msg, fields) => warnings.push({ msg, fields }) } });
    const id = (b: Buffer): Buffer => b;
    /** A call on `c` whose metadata holds one entry of `bytes` characters (a proxy's header, a huge token). */
    const call = (c: Client, bytes: number): Promise<ServiceError | null> => new Promise((resolve) => {
      const metadata = new Metadata();
      if (bytes > 0) metadata.set('x-forwarded-for', Array.from({ length: bytes }, (_, i) => String.fromCharCode(33 + ((i * 7919) % 90))).join(''));
      c.makeUnaryRequest(LOGS_PATH, id, id, Buffer.alloc(0), metadata, { deadline: Date.now() + 5000 }, (e: ServiceError | null) => resolve(e));
    });
    const first = new Client(url.replace('http://', ''), credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    const later = new Client(url.replace('http://', ''), credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    ownClients.push(first, later);
    // Metadata of the size HTTP/2 carries is served.
    expect(await call(later, 0)).toBeNull();
    expect(await call(later, 8 * 1024)).toBeNull();
    // Past what node:http2 decodes of one header: the connection ends, the first call on it or a later one.
    expect((await call(first, 96 * 1024))?.code).toBe(GrpcStatus.INTERNAL);
    expect((await call(later, 96 * 1024))?.code).toBe(GrpcStatus.INTERNAL);
    await vi.waitFor(() => expect(receiver?.stats.rejected).toEqual({ header_overflow: 2 }));
    expect(warnings).toEqual([{
      msg: 'otlp grpc: a client sent a header over 64 KiB (a gRPC metadata entry, as HPACK encodes it), more than node:http2 reads of one; its connection was closed, failing its calls (INTERNAL, RST_STREAM code 9 at a grpc-js client). Send smaller metadata: an OTEL_EXPORTER_OTLP_HEADERS value, or a header a proxy adds',
      fields: { port: Number(new URL(url).port), connections: 1 },
    }]);
    expect(next.logs).toHaveLength(2);
  });

  it('does not take a protocol error after an export over 64 KiB for a header node:http2 could not decode: neither counted as header_overflow nor logged as one', async () => {
    const warnings: { msg: string; fields: Record<string, unknown> | undefined }[] = [];
    const { url, next } = await start({ logger: { ...silentLogger, warn: (msg, fields) => warnings.push({ msg, fields }) } });
    const socket = netConnect({ port: Number(new URL(url).port), host: '127.0.0.1' });
    socket.on('error', () => {});
    /** Bytes the server lets the client send on the connection and on stream 1 (RFC 9113 section 6.9), and what it sent. */
    const window = { connection: 65_535, stream: 65_535 };
    let answered = false;
    let goaway: number | undefined;
    let pending = Buffer.alloc(0);
    let grow = (): void => {};
    socket.on('data', (d: Buffer) => {
      pending = Buffer.concat([pending, d]);
      while (pending.length >= 9 && pending.length >= 9 + pending.readUIntBE(0, 3)) {
        const payload = pending.subarray(9, 9 + pending.readUIntBE(0, 3));
        const [type, flags, streamId] = [pending[3], pending[4]!, pending.readUInt32BE(5)];
        if (type === 0x8) window[streamId === 0 ? 'connection' : 'stream'] += payload.readUInt32BE(0);
        if (type === 0x4 && (flags & 0x1) === 0) {
          for (let i = 0; i + 6 <= payload.length; i += 6) if (payload.readUInt16BE(i) === 0x4) window.stream = payload.readUInt32BE(i + 2);
        }
        if (streamId === 1 && (type === 0x1 || type === 0x0) && (flags & 0x1) !== 0) answered = true;
        if (type === 0x7) goaway = payload.readUInt32BE(4);
        pending = pending.subarray(9 + payload.length);
        grow();
      }
    });
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(Buffer.concat([HTTP2_PREFACE, http2Frame(0x4, 0x1, 0, Buffer.alloc(0)), grpcHeadersFrame(1, LOGS_PATH)]));
    // The message follows its headers a little later, as one read.
    await sleep(50);
    // 80,000 bytes of ExportLogsServiceRequest: empty ResourceLogs entries, sent as the server's flow control allows.
    let body = grpcFrame(Buffer.from('0a00'.repeat(40_000), 'hex'), false);
    while (body.length > 0) {
      const size = Math.min(16_384, body.length, window.connection, window.stream);
      if (size <= 0) {
        await new Promise<void>((resolve) => (grow = resolve));
        continue;
      }
      window.connection -= size;
      window.stream -= size;
      socket.write(http2Frame(0x0, size === body.length ? 0x1 : 0, 1, body.subarray(0, size)));
      body = body.subarray(size);
    }
    await vi.waitFor(() => expect(answered).toBe(true), { timeout: 5000 });
    expect(receiver?.stats.requests).toEqual({ 'logs:ok': 1 });
    // A DATA frame on stream 0: a connection error (PROTOCOL_ERROR) that has nothing to do with a header.
    socket.write(http2Frame(0x0, 0, 0, Buffer.from('hello')));
    await vi.waitFor(() => expect(goaway).toBe(http2Constants.NGHTTP2_PROTOCOL_ERROR), { timeout: 5000 });
    socket.destroy();
    await sleep(100);
    expect(receiver?.stats.rejected).toEqual({});
    expect(next.logs).toHaveLength(1);
    await receiver?.shutdown();
    expect(warnings).toEqual([]);
  });

  for (const gzip of [false, true]) {
    it(`takes logs from exporter-logs-otlp-grpc (gzip ${gzip}) and decodes hook records`, async () => {
      const { url, next } = await start();
      const exporter = new OTLPLogExporter({ url, ...(gzip ? { compression: GZIP } : {}) });
      const provider = new LoggerProvider({ resource, processors: [new BatchLogRecordProcessor({ exporter })] });
      provider.getLogger('com.anthropic.claude_code.events', '2.1.332').emit({
        body: 'claude_code.hook_execution_complete',
        attributes: { 'event.name': 'hook_execution_complete', hook_name: 'SessionStart:startup', num_hooks: '2', num_success: '2', num_outputs_persisted: '1' },
      });
      await provider.forceFlush();
      await provider.shutdown();
      expect(next.logs).toHaveLength(1);
      const rec = next.logs[0]!.req.resourceLogs[0]!.scopeLogs[0]!.logRecords[0]!;
      expect(rec.attributes.get('hook_name')).toBe('SessionStart:startup');
      expect(rec.attributes.get('num_outputs_persisted')).toBe('1');
      expect(next.logs[0]!.raw.encoding).toBe('protobuf');
      expect(next.logs[0]!.raw.signal).toBe('logs');
    });

    it(`passes metrics and traces from the real gRPC exporters through as bytes (gzip ${gzip})`, async () => {
      const { url, next } = await start();
      const compression = gzip ? { compression: GZIP } : {};
      const reader = new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter({ url, ...compression }), exportIntervalMillis: 60_000 });
      const meters = new MeterProvider({ resource, readers: [reader] });
      meters.getMeter('com.anthropic.claude_code', '2.1.332').createCounter('claude_code.session.count').add(3, { 'session.id': 's-1' });
      await meters.forceFlush();
      await meters.shutdown();
      const tracer = new TracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor({ exporter: new OTLPTraceExporter({ url, ...compression }) })] });
      tracer.getTracer('t').startSpan('claude_code.interaction').end();
      await tracer.forceFlush();
      await tracer.shutdown();
      const metrics = next.passed.filter((r) => r.signal === 'metrics');
      const traces = next.passed.filter((r) => r.signal === 'traces');
      expect(metrics.length).toBeGreaterThanOrEqual(1);
      expect(traces).toHaveLength(1);
      // Decompressed protobuf: the metric and span names are in the bytes as they were sent.
      expect(metrics.some((m) => m.body.includes('claude_code.session.count'))).toBe(true);
      expect(traces[0]!.body.includes('claude_code.interaction')).toBe(true);
    });
  }

  it('decodes the real Claude Code 2.1.332 protobuf capture sent over gRPC with gzip', async () => {
    const { url, next } = await start();
    const body = readFileSync(new URL('0001-http-logs.body.bin', FIXTURE));
    const { err } = await rawExport(url, body, new Metadata(), true);
    expect(err).toBeNull();
    expect(next.logs[0]!.raw.body.equals(body)).toBe(true);
    const names = next.logs[0]!.req.resourceLogs.flatMap((rl) => rl.scopeLogs.flatMap((sl) => sl.logRecords.map((r) => r.attributes.get('hook_name'))));
    expect(names).toContain('SessionStart:startup');
  });
});

describe('OTLP/gRPC receiver status codes', () => {
  it('answers INVALID_ARGUMENT for bytes that are not an ExportLogsServiceRequest', async () => {
    const { url, next } = await start();
    const { err } = await rawExport(url, Buffer.from([0x0a, 0xff, 0xff, 0x01]));
    expect(err?.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(next.logs).toHaveLength(0);
  });

  it('answers INVALID_ARGUMENT for metrics bytes that are not an ExportMetricsServiceRequest, without passing them on', async () => {
    const { url, next } = await start();
    client = new Client(url.replace('http://', ''), credentials.createInsecure());
    const id = (b: Buffer): Buffer => b;
    // resource_metrics (field 1) declares 10 bytes, 2 follow.
    const err = await new Promise<ServiceError | null>((resolve) => {
      client!.makeUnaryRequest('/opentelemetry.proto.collector.metrics.v1.MetricsService/Export', id, id, Buffer.from([0x0a, 0x0a, 0x01, 0x02]), new Metadata(), { deadline: Date.now() + 5000 }, (e: ServiceError | null) => resolve(e));
    });
    expect(err?.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(err?.details).toMatch(/truncated.*declares 10 bytes/);
    expect(next.passed).toHaveLength(0);
  });

  it('answers RESOURCE_EXHAUSTED over the size limit, measured after decompression', async () => {
    const { url } = await start({ maxRequestBytes: 1024 });
    // 8 KiB of one repeated byte gzips to far below 1 KiB: the limit must apply to the inflated size.
    const body = Buffer.alloc(8192, 0x61);
    const { err } = await rawExport(url, body, new Metadata(), true);
    expect(err?.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    expect(err?.metadata.get(STATUS_DETAILS_KEY)).toHaveLength(0);
  });

  it('counts the refusals grpc-js answers itself, before hookwatch sees the message, by outcome and reason', async () => {
    const { url, next } = await start({ maxRequestBytes: 1024 });
    const gzipped = (await rawExport(url, Buffer.alloc(8192, 0x61), new Metadata(), true)).err?.code;
    const frame = (flag: number, length: number, bytes: Buffer): Buffer => Buffer.concat([Buffer.from([flag, length >>> 24, (length >>> 16) & 0xff, (length >>> 8) & 0xff, length & 0xff]), bytes]);
    // A length prefix past the limit, a compression grpc-js does not speak, gzip that is not gzip.
    const declared = await rawGrpcCall(url, LOGS_PATH, frame(0, 0xffffffff, Buffer.alloc(16)));
    const zstd = await rawGrpcCall(url, LOGS_PATH, frame(1, 3, Buffer.from('abc')), { headers: { 'grpc-encoding': 'zstd' } });
    const notGzip = await rawGrpcCall(url, LOGS_PATH, frame(1, 3, Buffer.from('abc')), { headers: { 'grpc-encoding': 'gzip' } });
    expect([gzipped, declared.code, zstd.code, notGzip.code]).toEqual([GrpcStatus.RESOURCE_EXHAUSTED, GrpcStatus.RESOURCE_EXHAUSTED, GrpcStatus.UNIMPLEMENTED, GrpcStatus.INTERNAL]);
    expect(next.logs).toHaveLength(0);
    await vi.waitFor(() => expect(receiver?.stats.requests).toEqual({ 'logs:8': 2, 'logs:12': 1, 'logs:13': 1 }));
    expect(receiver?.stats.rejected).toEqual({ too_large: 2, unsupported_media_type: 1, bad_request: 1 });
  });

  it('refuses a message flagged compressed without a grpc-encoding to undo it as INTERNAL, as the gRPC protocol requires, never reading it as plain bytes', async () => {
    const { url, next } = await start();
    // A real export, gzipped and flagged compressed: the grpc-encoding that says how is missing, or identity.
    const gzipped = grpcFrame(gzipSync(readFileSync(new URL('0001-http-logs.body.bin', FIXTURE))), true);
    const missing = await rawGrpcCall(url, LOGS_PATH, gzipped);
    const identity = await rawGrpcCall(url, LOGS_PATH, gzipped, { headers: { 'grpc-encoding': 'identity' } });
    for (const answer of [missing, identity]) {
      expect([answer.code, answer.message]).toEqual([GrpcStatus.INTERNAL, 'the message is flagged compressed (Compressed-Flag 1) but the call names no grpc-encoding to undo it, or identity']);
    }
    expect(next.arrived).toBe(0);
    await vi.waitFor(() => expect(receiver?.stats.requests).toEqual({ [`logs:${GrpcStatus.INTERNAL}`]: 2 }));
    expect(receiver?.stats.rejected).toEqual({ bad_request: 2 });
    // The same message flagged uncompressed, or named gzip, is taken.
    expect((await rawGrpcCall(url, LOGS_PATH, gzipped, { headers: { 'grpc-encoding': 'gzip' } })).code).toBe(GrpcStatus.OK);
    expect(next.logs).toHaveLength(1);
  });

  it('counts a call to a method it does not serve as not_found, as the OTLP/HTTP port counts a path it does not serve', async () => {
    const { url, next } = await start();
    client = new Client(url.replace('http://', ''), credentials.createInsecure());
    const id = (b: Buffer): Buffer => b;
    const call = (path: string): Promise<ServiceError | null> => new Promise((resolve) => {
      client!.makeUnaryRequest(path, id, id, Buffer.alloc(0), new Metadata(), { deadline: Date.now() + 5000 }, (e: ServiceError | null) => resolve(e));
    });
    // A method the service does not have, and a service hookwatch does not offer (a gRPC health check).
    const errors = [await call('/opentelemetry.proto.collector.logs.v1.LogsService/Exports'), await call('/grpc.health.v1.Health/Check')];
    expect(errors.map((e) => [e?.code, e?.details])).toEqual([
      [GrpcStatus.UNIMPLEMENTED, 'The server does not implement the method /opentelemetry.proto.collector.logs.v1.LogsService/Exports'],
      [GrpcStatus.UNIMPLEMENTED, 'The server does not implement the method /grpc.health.v1.Health/Check'],
    ]);
    expect(receiver?.stats.rejected).toEqual({ not_found: 2 });
    // No signal to count them under.
    expect(receiver?.stats.requests).toEqual({});
    expect(next.arrived).toBe(0);
    expect(await call(LOGS_PATH)).toBeNull();
    expect(receiver?.stats.rejected).toEqual({ not_found: 2 });
  });

  it('refuses an Export call sent with another method than POST as HTTP 405 and INTERNAL, as gRPC requires POST, counted as method_not_allowed', async () => {
    const { url, next } = await start();
    const message = grpcFrame(Buffer.alloc(0), false);
    // A whole call sent as GET, one sent as PUT whose stream the client leaves open, and one to a path no service has.
    const get = await rawGrpcCall(url, LOGS_PATH, message, { headers: { ':method': 'GET' } });
    const put = await rawGrpcCall(url, LOGS_PATH, message, { headers: { ':method': 'PUT' }, end: false, giveUpMs: 5000 });
    const unknown = await rawGrpcCall(url, '/grpc.health.v1.Health/Check', message, { headers: { ':method': 'GET' } });
    expect([get, put, unknown].map((r) => [r.httpStatus, r.allow, r.code, r.message])).toEqual([
      [405, 'POST', GrpcStatus.INTERNAL, 'method "GET" is not allowed: a gRPC call is a POST'],
      [405, 'POST', GrpcStatus.INTERNAL, 'method "PUT" is not allowed: a gRPC call is a POST'],
      [405, 'POST', GrpcStatus.INTERNAL, 'method "GET" is not allowed: a gRPC call is a POST'],
    ]);
    // The stream the client left open is reset once answered (NO_ERROR), as grpc-go does.
    expect([get.rstCode, put.rstCode]).toEqual([http2Constants.NGHTTP2_NO_ERROR, http2Constants.NGHTTP2_NO_ERROR]);
    expect(next.arrived).toBe(0);
    expect(receiver?.stats.rejected).toEqual({ method_not_allowed: 3 });
    expect(receiver?.stats.requests).toEqual({});
    // POST is served on the same port.
    expect((await rawGrpcCall(url, LOGS_PATH, message)).code).toBe(GrpcStatus.OK);
    expect(next.logs).toHaveLength(1);
  });

  it('refuses an Export call with more or fewer than one message as INVALID_ARGUMENT, counted as a bad request', async () => {
    const { url, next } = await start();
    const empty = grpcFrame(Buffer.alloc(0), false);
    const two = await rawGrpcCall(url, LOGS_PATH, Buffer.concat([empty, empty]));
    const none = await rawGrpcCall(url, LOGS_PATH, Buffer.alloc(0));
    // A message whose prefix declares 100 bytes, the stream ended after 10 of them.
    const cut = await rawGrpcCall(url, LOGS_PATH, grpcFrame(Buffer.alloc(100), false).subarray(0, 15));
    expect([two.code, none.code, cut.code]).toEqual([GrpcStatus.INVALID_ARGUMENT, GrpcStatus.INVALID_ARGUMENT, GrpcStatus.INVALID_ARGUMENT]);
    expect(two.message).toBe('an Export call carries exactly one request message; this one carried more than one');
    expect(none.message).toBe('an Export call carries exactly one request message; this one carried none');
    expect(cut.message).toBe('the request message was cut short: its prefix declares 100 bytes, and the stream ended after 10 of them');
    expect(next.logs).toHaveLength(0);
    await vi.waitFor(() => expect(receiver?.stats.requests).toEqual({ 'logs:3': 3 }));
    expect(receiver?.stats.rejected).toEqual({ bad_request: 3 });
  });

  it('ends a call whose message arrived whole but whose stream never ends after otlp.requestTimeout, giving its bytes back', async () => {
    const { url, next, inflight } = await start({ requestTimeoutMs: 1000 });
    // A whole 64 KiB message, and the request stream left open: the unary call waits for its end.
    const result = await rawGrpcCall(url, LOGS_PATH, grpcFrame(Buffer.alloc(64 * 1024), false), { end: false, giveUpMs: 10_000 });
    expect(result.code).toBe(GrpcStatus.DEADLINE_EXCEEDED);
    expect(result.message).toBe('request not received whole within otlp.requestTimeout (1000 ms)');
    expect(result.answeredMs).toBeGreaterThanOrEqual(900);
    expect(next.arrived).toBe(0);
    await vi.waitFor(() => expect(inflight.inUseBytes).toBe(0));
    expect(receiver?.stats.requests).toEqual({ 'logs:4': 1 });
    expect(receiver?.stats.rejected).toEqual({ request_timeout: 1 });
  });

  it('counts a call its client gives up on before its message is whole as client_aborted, not as a bad request', async () => {
    const { url, next, inflight } = await start();
    const port = Number(new URL(url).port);
    /** Opens a connection and starts a call on stream 1 whose message is `sent` of a 100-byte one. */
    const begin = async (sent: number): Promise<Socket> => {
      const socket = netConnect({ port, host: '127.0.0.1' });
      socket.on('error', () => {});
      socket.on('data', () => {});
      socket.write(Buffer.concat([HTTP2_PREFACE, grpcHeadersFrame(1, LOGS_PATH)]));
      if (sent > 0) socket.write(http2Frame(0x0, 0, 1, grpcFrame(Buffer.alloc(100), false).subarray(0, sent)));
      // The call has reserved its bytes: its message's prefix was read. One that sent none holds nothing yet.
      if (sent >= 5) await vi.waitFor(() => expect(inflight.inUseBytes).toBe(200));
      else await sleep(200);
      return socket;
    };
    // A grpc-go client cancelling (its deadline passed while it sent): RST_STREAM(CANCEL), after the headers and mid-message.
    for (const sent of [0, 40]) {
      const socket = await begin(sent);
      socket.write(rstStreamCancel(1));
      await vi.waitFor(() => expect(inflight.inUseBytes).toBe(0));
      socket.destroy();
    }
    // A client whose connection goes away mid-message (its process killed, a laptop going to sleep).
    (await begin(40)).destroy();
    await vi.waitFor(() => expect(inflight.inUseBytes).toBe(0));
    await vi.waitFor(() => expect(receiver?.stats.requests).toEqual({ [`logs:${GrpcStatus.CANCELLED}`]: 3 }));
    expect(receiver?.stats.rejected).toEqual({ client_aborted: 3 });
    expect(next.arrived).toBe(0);
  });

  it('answers UNAVAILABLE with RetryInfo when the next stage stays overloaded, a second before the client\'s deadline', async () => {
    const { url, next } = await start();
    next.fail = new OverloadedError('queue full', 7);
    // Held until then: 500 ms, tried again 250 ms on.
    const err = await exportOwn(url, Buffer.alloc(0), 1500).answered;
    expect(err?.code).toBe(GrpcStatus.UNAVAILABLE);
    const details = err?.metadata.get(STATUS_DETAILS_KEY)[0];
    expect(Buffer.isBuffer(details)).toBe(true);
    expect(retryDelayFromStatus(details as Buffer)).toBe(7000);
    expect(next.arrived).toBe(2);
    expect(receiver?.stats.held).toEqual({ committed: 0, unavailable: 1, cancelled: 0, refused: 0 });
  });

  it('takes a client cancelling its call before the answer in its stride (an exporter\'s process exiting)', async () => {
    const { url, next } = await start();
    let release = (): void => {};
    next.hold = new Promise<void>((resolve) => (release = resolve));
    const { call, answered } = exportOwn(url, Buffer.alloc(0), 10_000);
    await vi.waitFor(() => expect(next.arrived).toBe(1), { timeout: 20_000 });
    call.cancel();
    expect((await answered)?.code).toBe(GrpcStatus.CANCELLED);
    // The server hears of it (an uncaught error there would end the process), then the call's work ends.
    await sleep(100);
    release();
    await vi.waitFor(() => expect(next.logs).toHaveLength(1));
    next.hold = undefined;
    expect(await exportOwn(url, Buffer.alloc(0), 10_000).answered).toBeNull();
  });

  it('needs the ingest token in metadata authorization, and never echoes it', async () => {
    const token = 'grpc-ingest-secret-4711';
    const { url, next } = await start({ token });
    const wrong = new Metadata();
    wrong.set('authorization', 'Bearer nope');
    const denied = await rawExport(url, Buffer.alloc(0), wrong);
    expect(denied.err?.code).toBe(GrpcStatus.UNAUTHENTICATED);
    expect(JSON.stringify(denied.err?.details)).not.toContain(token);
    client?.close();
    const right = new Metadata();
    right.set('authorization', `Bearer ${token}`);
    const ok = await rawExport(url, Buffer.alloc(0), right);
    expect(ok.err).toBeNull();
    expect(next.logs).toHaveLength(1);
    // The scheme in any case, as over HTTP (RFC 9110 11.1).
    const lower = new Metadata();
    lower.set('authorization', `bearer ${token}`);
    expect((await rawExport(url, Buffer.alloc(0), lower)).err).toBeNull();
    expect(next.logs).toHaveLength(2);
  });

  it('shuts down twice and before start without error', async () => {
    const r = new OtlpGrpcReceiver({ addr: '127.0.0.1:0', maxRequestBytes: 1024, requestTimeoutMs: 30_000, ingestToken: '', inflight: new InflightBudget(2048), logs: new Recorder(), passThrough: new Recorder(), logger: silentLogger });
    await r.shutdown();
    await r.start();
    await Promise.all([r.shutdown(), r.shutdown()]);
    await expect(r.shutdown()).resolves.toBeUndefined();
  });
});

describe('OTLP/gRPC receiver holding exports the store cannot take now', () => {
  const body = readFileSync(new URL('0001-http-logs.body.bin', FIXTURE));
  const unavailable = new StoreUnavailableError('store cannot write: the database system is shutting down (57P03)');
  /** Whether `p` has settled by now. */
  const settledYet = (p: Promise<unknown>): Promise<boolean> => Promise.race([p.then(() => true), sleep(0).then(() => false)]);

  it('holds an export while the store is unavailable and answers OK once the store takes it, its bytes in flight meanwhile', async () => {
    const { url, next, inflight } = await start();
    next.fail = unavailable;
    const { answered } = exportOwn(url, body, 10_000);
    // Tried again, and still held.
    await vi.waitFor(() => expect(next.arrived).toBeGreaterThanOrEqual(2), { timeout: 20_000 });
    expect(await settledYet(answered)).toBe(false);
    expect(inflight.inUseBytes).toBeGreaterThanOrEqual(body.length);
    next.fail = undefined;
    expect(await answered).toBeNull();
    expect(next.logs).toHaveLength(1);
    expect(next.logs[0]!.raw.body.equals(body)).toBe(true);
    expect(receiver?.stats.held).toEqual({ committed: 1, unavailable: 0, cancelled: 0, refused: 0 });
    expect(receiver?.stats.requests).toEqual({ 'logs:ok': 1 });
    await vi.waitFor(() => expect(inflight.inUseBytes).toBe(0));
  });

  it('answers UNAVAILABLE with RetryInfo before the client\'s deadline while the store stays unavailable', async () => {
    const { url, next } = await start();
    next.fail = unavailable;
    const err = await exportOwn(url, body, 4000).answered;
    // UNAVAILABLE from the receiver, not grpc-js's DEADLINE_EXCEEDED at the deadline.
    expect(err?.code).toBe(GrpcStatus.UNAVAILABLE);
    expect(retryDelayFromStatus(err?.metadata.get(STATUS_DETAILS_KEY)[0] as Buffer)).toBe(2000);
    expect(next.arrived).toBeGreaterThan(1);
    expect(next.logs).toHaveLength(0);
    expect(receiver?.stats.held).toEqual({ committed: 0, unavailable: 1, cancelled: 0, refused: 0 });
    expect(receiver?.stats.rejected).toEqual({ store_unavailable: 1 });
  });

  it('answers at once what a later try fails with for another reason', async () => {
    const { url, next } = await start();
    next.fail = unavailable;
    const { answered } = exportOwn(url, body, 10_000);
    await vi.waitFor(() => expect(next.arrived).toBeGreaterThanOrEqual(2), { timeout: 20_000 });
    next.fail = new Error('a constraint the store did not expect');
    const err = await answered;
    expect(err?.code).toBe(GrpcStatus.INTERNAL);
    expect(err?.details).toBe('internal error');
    expect(receiver?.stats.held).toEqual({ committed: 0, unavailable: 0, cancelled: 0, refused: 1 });
  });

  it('keeps holding an export whose later try finds the next stage overloaded, and answers OK once it is taken', async () => {
    const { url, next } = await start();
    next.fail = unavailable;
    const { answered } = exportOwn(url, body, 10_000);
    await vi.waitFor(() => expect(next.arrived).toBeGreaterThanOrEqual(2), { timeout: 20_000 });
    // The database back, and every batch retried at once: more than otlp.maxPendingRequests wait for the store.
    next.fail = new OverloadedError('64 batches are waiting for the store; retry later', 1);
    const overloaded = next.arrived;
    await vi.waitFor(() => expect(next.arrived).toBeGreaterThanOrEqual(overloaded + 2), { timeout: 20_000 });
    expect(await settledYet(answered)).toBe(false);
    next.fail = undefined;
    expect(await answered).toBeNull();
    expect(next.logs).toHaveLength(1);
    expect(receiver?.stats.held).toEqual({ committed: 1, unavailable: 0, cancelled: 0, refused: 0 });
  });

  it('holds an export whose first try finds the next stage overloaded, and answers OK once it is taken', async () => {
    const { url, next } = await start();
    // otlp.maxPendingRequests batches waiting for a store that is slow to answer.
    next.fail = new OverloadedError('64 batches are waiting for the store; retry later', 1);
    const { answered } = exportOwn(url, body, 10_000);
    await vi.waitFor(() => expect(next.arrived).toBeGreaterThanOrEqual(2), { timeout: 20_000 });
    expect(await settledYet(answered)).toBe(false);
    next.fail = undefined;
    expect(await answered).toBeNull();
    expect(next.logs).toHaveLength(1);
    expect(receiver?.stats.held).toEqual({ committed: 1, unavailable: 0, cancelled: 0, refused: 0 });
    expect(receiver?.stats.requests).toEqual({ 'logs:ok': 1 });
    expect(receiver?.stats.rejected).toEqual({});
  });

  it('holds an export the next stage does not admit with only its message in flight, decoded once admitted', async () => {
    const { url, next, inflight } = await start();
    next.refuse = new OverloadedError('64 batches are waiting for the store; retry later', 1);
    const { answered } = exportOwn(url, body, 10_000);
    // Refused before its decoding, tried again at the end of its backoff (250 ms on) and still held.
    await sleep(STORE_HOLD.firstRetryMs + 200);
    expect(await settledYet(answered)).toBe(false);
    expect(inflight.inUseBytes).toBe(body.length);
    next.refuse = undefined;
    expect(await answered).toBeNull();
    expect(next.logs).toHaveLength(1);
    expect(next.logs[0]!.req.resourceLogs.length).toBeGreaterThan(0);
    expect(receiver?.stats.held).toEqual({ committed: 1, unavailable: 0, cancelled: 0, refused: 0 });
    await vi.waitFor(() => expect(inflight.inUseBytes).toBe(0));
  });

  it('tries a held export as soon as an export that was never held gives up its place for the store, not at the end of its backoff', { timeout: 20_000 }, async () => {
    // One batch may wait for the store (otlp.maxPendingRequests 1). The backoff is longer than any hold: a held
    // export that is committed was woken by the place coming free.
    const { url, next } = await start({ maxPending: 1, holdBackoff: { firstRetryMs: 20_000, maxRetryMs: 20_000 } });
    let release = (): void => {};
    next.hold = new Promise<void>((resolve) => (release = resolve));
    const first = exportOwn(url, body, 10_000);
    await vi.waitFor(() => expect(next.arrived).toBe(1), { timeout: 5000 });
    // The second finds the place taken, and is held.
    const second = exportOwn(url, body, 10_000);
    await vi.waitFor(() => expect(next.arrived).toBe(2), { timeout: 5000 });
    expect(await settledYet(second.answered)).toBe(false);
    next.hold = undefined;
    release();
    expect(await first.answered).toBeNull();
    expect(await second.answered).toBeNull();
    expect(next.arrived).toBe(3);
    expect(next.logs).toHaveLength(2);
    expect(receiver?.stats.held).toEqual({ committed: 1, unavailable: 0, cancelled: 0, refused: 0 });
    expect(receiver?.stats.requests).toEqual({ 'logs:ok': 2 });
  });

  it('answers at once, holding nothing, an export whose decoding otlp.maxInflightBytes has no room for', async () => {
    // Room for the call's reservation of twice otlp.maxRequestBytes, not for its message and what it decodes to.
    const { url, next, inflight } = await start({ maxRequestBytes: body.length, inflightBytes: 64 * body.length });
    const others = inflight.open();
    others.take(inflight.limitBytes - 2 * body.length - 16);
    const started = Date.now();
    const err = await exportOwn(url, body, 10_000).answered;
    others.release();
    expect(err?.code).toBe(GrpcStatus.UNAVAILABLE);
    expect(err?.details).toMatch(/^hookwatch is holding otlp.maxInflightBytes/);
    expect(Date.now() - started).toBeLessThan(STORE_HOLD.firstRetryMs);
    expect(next.arrived).toBe(0);
    expect(receiver?.stats.held).toEqual({ committed: 0, unavailable: 0, cancelled: 0, refused: 0 });
    expect(receiver?.stats.rejected).toEqual({ overloaded: 1 });
  });

  it('answers UNAVAILABLE before the client\'s deadline while the next stage stays overloaded', async () => {
    const { url, next } = await start();
    next.fail = unavailable;
    const { answered } = exportOwn(url, body, 4000);
    await vi.waitFor(() => expect(next.arrived).toBeGreaterThanOrEqual(2), { timeout: 20_000 });
    next.fail = new OverloadedError('64 batches are waiting for the store; retry later', 1);
    const err = await answered;
    expect(err?.code).toBe(GrpcStatus.UNAVAILABLE);
    expect(err?.details).toBe('64 batches are waiting for the store; retry later');
    expect(retryDelayFromStatus(err?.metadata.get(STATUS_DETAILS_KEY)[0] as Buffer)).toBe(1000);
    expect(receiver?.stats.held).toEqual({ committed: 0, unavailable: 1, cancelled: 0, refused: 0 });
    expect(receiver?.stats.rejected).toEqual({ overloaded: 1 });
  });

  /** Holds an export (3 s deadline: held until 2 s on) whose next try waits in the next stage until `release`. */
  async function tryRunning(): Promise<{ next: Recorder; inflight: InflightBudget; export: ReturnType<typeof exportOwn>; sentAt: number; tries: number; release: () => void }> {
    const { url, next, inflight } = await start();
    next.fail = unavailable;
    const sentAt = Date.now();
    const sent = exportOwn(url, body, 3000);
    await vi.waitFor(() => expect(next.arrived).toBeGreaterThanOrEqual(2), { timeout: 20_000 });
    let release = (): void => {};
    next.hold = new Promise<void>((resolve) => (release = resolve));
    const tries = next.arrived;
    await vi.waitFor(() => expect(next.arrived).toBe(tries + 1), { timeout: 5000 });
    return { next, inflight, export: sent, sentAt, tries: tries + 1, release };
  }

  it('answers a hold that ends while its try runs as that try ends, not before: a commit then is answered OK', async () => {
    const { next, inflight, export: { answered }, sentAt, tries, release } = await tryRunning();
    // Past the end of the hold, before the deadline: a client answered UNAVAILABLE now would send again what the
    // try may yet commit.
    await sleep(sentAt + 2300 - Date.now());
    expect(await settledYet(answered)).toBe(false);
    next.fail = undefined;
    release();
    expect(await answered).toBeNull();
    expect(next.arrived).toBe(tries);
    expect(next.logs).toHaveLength(1);
    expect(receiver?.stats.held).toEqual({ committed: 1, unavailable: 0, cancelled: 0, refused: 0 });
    await vi.waitFor(() => expect(inflight.inUseBytes).toBe(0));
  });

  it('keeps the bytes of an export whose client went away in flight until the try still running on them ends', async () => {
    const { next, inflight, export: { call, answered }, tries, release } = await tryRunning();
    const held = inflight.inUseBytes;
    expect(held).toBeGreaterThan(body.length);

    // The client cancels while that try waits: the hold ends at once, the try goes on with the message and its decoding.
    call.cancel();
    expect((await answered)?.code).toBe(GrpcStatus.CANCELLED);
    await vi.waitFor(() => expect(receiver?.stats.held).toEqual({ committed: 0, unavailable: 0, cancelled: 1, refused: 0 }), { timeout: 5000 });
    await sleep(100);
    expect(inflight.inUseBytes).toBe(held);
    release();
    await vi.waitFor(() => expect(inflight.inUseBytes).toBe(0));
    expect(next.arrived).toBe(tries);
  });

  it('stops trying once the client cancels its call', async () => {
    const { url, next, inflight } = await start();
    next.fail = unavailable;
    const { call, answered } = exportOwn(url, body, 10_000);
    await vi.waitFor(() => expect(next.arrived).toBeGreaterThanOrEqual(2), { timeout: 20_000 });
    call.cancel();
    expect((await answered)?.code).toBe(GrpcStatus.CANCELLED);
    await vi.waitFor(() => expect(receiver?.stats.held).toEqual({ committed: 0, unavailable: 0, cancelled: 1, refused: 0 }), { timeout: 5000 });
    await vi.waitFor(() => expect(inflight.inUseBytes).toBe(0));
    const tries = next.arrived;
    // Longer than the wait before any next try.
    await sleep(STORE_HOLD.maxRetryMs + 500);
    expect(next.arrived).toBe(tries);
  });

  it('answers its held exports UNAVAILABLE as soon as it stops, without waiting out their holds', async () => {
    const { url, next } = await start();
    next.fail = unavailable;
    const { answered } = exportOwn(url, body, 30_000);
    await vi.waitFor(() => expect(next.arrived).toBeGreaterThanOrEqual(2), { timeout: 20_000 });
    const tries = next.arrived;
    await receiver!.shutdown();
    const err = await answered;
    expect(err?.code).toBe(GrpcStatus.UNAVAILABLE);
    // Not tried again: a hold waited out would have tried every 2 s at most until its time was up.
    expect(next.arrived).toBe(tries);
    expect(receiver?.stats.held).toEqual({ committed: 0, unavailable: 1, cancelled: 0, refused: 0 });
  });

  it('counts a held export in otlp.maxInflightBytes: one the budget cannot take beside it is refused at once', async () => {
    // A call of a 64 KiB message reserves 128 KiB as its prefix arrives; once held, the export keeps its message and decoded request.
    const { url, next } = await start({ maxRequestBytes: 64 * 1024, inflightBytes: 128 * 1024 + 4096 });
    next.fail = unavailable;
    const held = exportOwn(url, body, 10_000);
    await vi.waitFor(() => expect(next.arrived).toBeGreaterThanOrEqual(1), { timeout: 20_000 });
    const refused = await exportOwn(url, Buffer.alloc(64 * 1024), 10_000).answered;
    expect(refused?.code).toBe(GrpcStatus.UNAVAILABLE);
    expect(refused?.details).toMatch(/^hookwatch is holding otlp.maxInflightBytes/);
    expect(await settledYet(held.answered)).toBe(false);
    next.fail = undefined;
    expect(await held.answered).toBeNull();
    expect(next.logs).toHaveLength(1);
  });
});

/** An HTTP/2 client connection that starts no call, and the GOAWAY error code the server sent it, if any. */
async function idleHttp2(url: string, ca?: Buffer): Promise<{ session: ClientHttp2Session; goaway: () => number | undefined; closed: Promise<void> }> {
  const session = http2Connect(url, ca ? { ca } : {});
  session.on('error', () => {});
  let code: number | undefined;
  session.on('goaway', (errorCode: number) => {
    code = errorCode;
  });
  const closed = new Promise<void>((resolve) => session.once('close', () => resolve()));
  await new Promise<void>((resolve) => session.once('connect', () => resolve()));
  return { session, goaway: () => code, closed };
}

describe('OTLP/gRPC receiver closing connections', () => {
  const sessions: ClientHttp2Session[] = [];
  const sockets: Socket[] = [];
  afterEach(() => {
    for (const s of sessions.splice(0)) s.destroy();
    for (const s of sockets.splice(0)) s.destroy();
  });

  it('says GOAWAY (NO_ERROR) to a connection that starts no call within otlp.requestTimeout, before it closes', async () => {
    const { url } = await start({ requestTimeoutMs: 1000 });
    const idle = await idleHttp2(url);
    sessions.push(idle.session);
    // The sweep closes it (the test's timeout catches a connection kept open).
    await idle.closed;
    expect(idle.goaway(), 'closed without a GOAWAY').toBe(http2Constants.NGHTTP2_NO_ERROR);
  });

  describe.skipIf(!HAVE_OPENSSL)('with otlp.tls', () => {
    const pki = useTestPki('hookwatch-grpc-goaway-');
    it('says GOAWAY to a connection that finished its handshake and starts no call', async () => {
      const tls = TlsCredentials.open({ section: 'otlp.tls', certFile: pki.server.certFile, keyFile: pki.server.keyFile, clientCaFile: '', minVersion: '1.2', reloadIntervalMs: 3_600_000 }, silentLogger);
      const { url } = await start({ requestTimeoutMs: 1000, tls });
      const idle = await idleHttp2(url, readFileSync(pki.ca.certFile));
      sessions.push(idle.session);
      await idle.closed;
      expect(idle.goaway(), 'closed without a GOAWAY').toBe(http2Constants.NGHTTP2_NO_ERROR);
    });
  });

  it('destroys a connection whose client ignores the GOAWAY and keeps its side open', { timeout: 15_000 }, async () => {
    const { url } = await start({ requestTimeoutMs: 1000 });
    // The HTTP/2 client preface and an empty SETTINGS frame, then a PING every 200 ms; the server's FIN does not end it.
    const socket = netConnect({ port: Number(new URL(url).port), host: '127.0.0.1', allowHalfOpen: true });
    sockets.push(socket);
    socket.on('error', () => {});
    const frames: number[] = [];
    let pending = Buffer.alloc(0);
    socket.on('data', (d: Buffer) => {
      pending = Buffer.concat([pending, d]);
      while (pending.length >= 9 && pending.length >= 9 + pending.readUIntBE(0, 3)) {
        frames.push(pending[3]!);
        pending = pending.subarray(9 + pending.readUIntBE(0, 3));
      }
    });
    socket.write(HTTP2_PREFACE);
    const pinging = setInterval(() => {
      if (socket.writable) socket.write(HTTP2_PING);
    }, 200);
    try {
      // Once the server has destroyed its end, a PING is answered with a reset (the test's timeout catches a connection kept).
      await new Promise<void>((resolve) => socket.once('close', () => resolve()));
    } finally {
      clearInterval(pinging);
    }
    const GOAWAY = 0x7;
    expect(frames, 'closed without a GOAWAY').toContain(GOAWAY);
  });

  it('refuses the calls of one connection past half the in-flight budget, while another connection still gets its call in', async () => {
    // Each call reserves 2 MiB as its message's prefix declares 1 MiB: the flooding connection may take two of the
    // budget's five (a third would take it past half, 5 MiB, though it holds less than half before it).
    const { url, next, inflight } = await start({ maxRequestBytes: 1024 * 1024, inflightBytes: 10 * 1024 * 1024 });
    const flood = await idleHttp2(url);
    sessions.push(flood.session);
    // Six calls whose headers and message prefix arrive and whose message never does.
    const refused: { code: number; retryMs: number | undefined }[] = [];
    for (let i = 0; i < 6; i++) {
      const stream = flood.session.request({ ':method': 'POST', ':path': LOGS_PATH, 'content-type': 'application/grpc', te: 'trailers' }, { endStream: false });
      stream.on('error', () => {});
      stream.write(grpcFrame(Buffer.alloc(1024 * 1024), false).subarray(0, 5));
      stream.on('response', (headers) => {
        const details = headers['grpc-status-details-bin'];
        refused.push({ code: Number(headers['grpc-status']), retryMs: typeof details === 'string' ? retryDelayFromStatus(Buffer.from(details, 'base64')) : undefined });
      });
    }
    const reservation = 2 * 1024 * 1024;
    await vi.waitFor(() => expect(inflight.inUseBytes / reservation + refused.length).toBe(6), { timeout: 10_000 });
    expect(inflight.inUseBytes).toBe(2 * reservation);
    expect(refused).toEqual(Array.from({ length: 4 }, () => ({ code: GrpcStatus.UNAVAILABLE, retryMs: 1000 })));
    expect(receiver?.stats.rejected).toEqual({ overloaded: 4 });
    // A real exporter on its own connection is not held back by them.
    const exporter = new OTLPLogExporter({ url, timeoutMillis: 5000 });
    const provider = new LoggerProvider({ resource, processors: [new BatchLogRecordProcessor({ exporter })] });
    provider.getLogger('com.anthropic.claude_code.events', '2.1.332').emit({ body: 'claude_code.hook_execution_complete', attributes: { 'event.name': 'hook_execution_complete' } });
    await provider.forceFlush();
    await provider.shutdown();
    expect(next.logs).toHaveLength(1);
    // Its calls gave back what they held; the flooding connection still holds its two.
    expect(inflight.inUseBytes).toBe(2 * reservation);
  });

  it('at shutdown, says GOAWAY to a connected client and lets its call in flight finish', async () => {
    const { url, next } = await start();
    let release = (): void => {};
    next.hold = new Promise<void>((resolve) => (release = resolve));
    const idle = await idleHttp2(url);
    sessions.push(idle.session);
    const answered = rawExport(url, Buffer.alloc(0));
    // As long as a loaded machine takes to connect and send it: vi.waitFor gives up after 1 s unless told.
    await vi.waitFor(() => expect(next.arrived).toBe(1), { timeout: 20_000 });
    const stopping = receiver!.shutdown();
    await idle.closed;
    expect(idle.goaway()).toBe(http2Constants.NGHTTP2_NO_ERROR);
    release();
    expect((await answered).err).toBeNull();
    await stopping;
    expect(next.logs).toHaveLength(1);
  });
});

describe('OTLP/gRPC receiver reserving a call by the length its message declares', () => {
  const body = readFileSync(new URL('0001-http-logs.body.bin', FIXTURE));
  const sessions: ClientHttp2Session[] = [];
  afterEach(() => {
    for (const s of sessions.splice(0)) s.destroy();
  });
  const id = (b: Buffer): Buffer => b;
  const exportOn = (c: Client): Promise<ServiceError | null> => new Promise((resolve) => {
    c.makeUnaryRequest(LOGS_PATH, id, id, body, new Metadata(), { deadline: Date.now() + 5000 }, (e: ServiceError | null) => resolve(e));
  });

  it('lets a grpc-js export in beside slow uploads of small messages, each of which holds what its prefix declares, not twice otlp.maxRequestBytes', async () => {
    // Room for five calls of the largest message at once; seven slow uploads of 9,000-byte messages on connections of their own.
    const { url, next, inflight } = await start({ maxRequestBytes: 1024 * 1024, inflightBytes: 10 * 1024 * 1024 });
    for (let i = 0; i < 7; i++) {
      const { session } = await idleHttp2(url);
      sessions.push(session);
      const stream = session.request({ ':method': 'POST', ':path': LOGS_PATH, 'content-type': 'application/grpc', te: 'trailers' }, { endStream: false });
      stream.on('error', () => {});
      stream.write(grpcFrame(Buffer.alloc(9000), false).subarray(0, 1000));
    }
    await vi.waitFor(() => expect(inflight.inUseBytes).toBe(7 * 2 * 9000), { timeout: 10_000 });
    const c = new Client(url.replace('http://', ''), credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    ownClients.push(c);
    expect(await exportOn(c)).toBeNull();
    expect(next.logs).toHaveLength(1);
    expect(receiver?.stats.rejected).toEqual({});
    // The slow uploads still hold what they declared; the export gave back what it held.
    await vi.waitFor(() => expect(inflight.inUseBytes).toBe(7 * 2 * 9000));
  });

  it('answers ten small exports a grpc-js client makes at once on one connection, all OK', async () => {
    const { url, next } = await start({ maxRequestBytes: 20 * 1024 * 1024, inflightBytes: 256 * 1024 * 1024 });
    const c = new Client(url.replace('http://', ''), credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    ownClients.push(c);
    let release = (): void => {};
    next.hold = new Promise<void>((resolve) => (release = resolve));
    const answered = Promise.all(Array.from({ length: 10 }, () => exportOn(c)));
    // All ten are in the store at once, none refused for the connection's share of the budget.
    await vi.waitFor(() => expect(next.arrived).toBe(10), { timeout: 10_000 });
    release();
    expect((await answered).map((e) => e?.code ?? 'ok')).toEqual(Array.from({ length: 10 }, () => 'ok'));
    expect(next.logs).toHaveLength(10);
  });

  it('holds twice the declared length of a compressed message while it arrives, and gives it all back once answered', async () => {
    const { url, inflight } = await start({ maxRequestBytes: 1024 * 1024, inflightBytes: 10 * 1024 * 1024 });
    const { session } = await idleHttp2(url);
    sessions.push(session);
    const stream = session.request({ ':method': 'POST', ':path': LOGS_PATH, 'content-type': 'application/grpc', 'grpc-encoding': 'gzip', te: 'trailers' }, { endStream: false });
    stream.on('error', () => {});
    const frame = grpcFrame(gzipSync(body), true);
    stream.write(frame.subarray(0, 10));
    await vi.waitFor(() => expect(inflight.inUseBytes).toBe(2 * (frame.length - 5)));
    const trailers = new Promise<string | undefined>((resolve) => stream.on('trailers', (t) => resolve(t['grpc-status'] as string | undefined)));
    stream.resume();
    stream.end(frame.subarray(10));
    expect(await trailers).toBe(String(GrpcStatus.OK));
    await vi.waitFor(() => expect(inflight.inUseBytes).toBe(0));
  });
});

describe('OTLP/gRPC receiver bounding each HTTP/2 connection', () => {
  const sessions: ClientHttp2Session[] = [];
  const sockets: Socket[] = [];
  afterEach(() => {
    for (const s of sessions.splice(0)) s.destroy();
    for (const s of sockets.splice(0)) s.destroy();
  });

  /** A call to LogsService/Export on `c` with `metadata`; resolves with its error (null when answered OK). */
  const exportWith = (c: Client, metadata: Metadata): Promise<ServiceError | null> => new Promise((resolve) => {
    const id = (b: Buffer): Buffer => b;
    c.makeUnaryRequest(LOGS_PATH, id, id, Buffer.alloc(0), metadata, { deadline: Date.now() + 5000 }, (e: ServiceError | null) => resolve(e));
  });

  it('serves a call carrying an 8 KiB bearer token, and answers one whose metadata passes 64 KiB in all RESOURCE_EXHAUSTED, counted and logged, the connection still serving', async () => {
    const warnings: { msg: string; fields: Record<string, unknown> | undefined }[] = [];
    // A JWT with many claims, as OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer ... carries it.
    const token = `eyJhbGciOiJSUzI1NiJ9.${Array.from({ length: 8 * 1024 }, (_, i) => 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'[(i * 7919) % 64]).join('')}`;
    const { url, next } = await start({ token, logger: { ...silentLogger, warn: (msg, fields) => warnings.push({ msg, fields }) } });
    const c = new Client(url.replace('http://', ''), credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    ownClients.push(c);
    const metadata = (extraBytes: number): Metadata => {
      const m = new Metadata();
      m.set('authorization', `Bearer ${token}`);
      // Headers a proxy adds, each well under the 64 KiB node:http2 decodes of one.
      for (let i = 0; extraBytes > 0; i++, extraBytes -= 14 * 1024) m.set(`x-proxy-${i}`, 'v'.repeat(Math.min(extraBytes, 14 * 1024)));
      return m;
    };
    expect(await exportWith(c, metadata(0))).toBeNull();
    // 8 KiB of token and 70 KiB more: over 64 KiB, under the 128 KiB advertised to the client.
    const refused = await exportWith(c, metadata(70 * 1024));
    expect({ code: refused?.code, details: refused?.details }).toEqual({ code: GrpcStatus.RESOURCE_EXHAUSTED, details: 'request metadata over 65536 bytes (as HTTP/2 counts a header list): send less metadata' });
    // The connection serves the next call.
    expect(await exportWith(c, metadata(40 * 1024))).toBeNull();
    expect(next.logs).toHaveLength(2);
    expect(receiver?.stats.rejected).toEqual({ header_overflow: 1 });
    expect(warnings).toEqual([{
      msg: 'otlp grpc: a call carried more than 64 KiB of metadata (its headers, as HTTP/2 counts them), more than this port reads; it was refused (RESOURCE_EXHAUSTED). Send less metadata: an OTEL_EXPORTER_OTLP_HEADERS value, or headers a proxy adds',
      fields: { port: Number(new URL(url).port), calls: 1 },
    }]);
    expect(JSON.stringify(warnings)).not.toContain(token.slice(0, 40));
  });

  it('advertises 100 streams and a 128 KiB header list in SETTINGS; node:http2 resets a stream over that once the client has acknowledged it, and the connection goes on', async () => {
    const { url } = await start();
    // Past node:http2's own 64 KiB default for a header block it sends.
    const session = http2Connect(url, { maxSendHeaderBlockLength: 1024 * 1024 });
    sessions.push(session);
    session.on('error', () => {});
    const settings = await new Promise<{ maxConcurrentStreams?: number; maxHeaderListSize?: number }>((resolve) => session.once('remoteSettings', resolve));
    expect({ maxConcurrentStreams: settings.maxConcurrentStreams, maxHeaderListSize: settings.maxHeaderListSize }).toEqual({ maxConcurrentStreams: 100, maxHeaderListSize: 128 * 1024 });
    /** A call whose headers carry `entries` entries of 15 KiB; resolves with its grpc-status and the RST_STREAM code it closed with. */
    const call = (entries: number): Promise<{ code: number | undefined; rstCode: number | undefined }> => new Promise((resolve) => {
      const headers: Record<string, string> = { ':method': 'POST', ':path': LOGS_PATH, 'content-type': 'application/grpc', te: 'trailers' };
      for (let i = 0; i < entries; i++) headers[`x-proxy-${i}`] = 'a'.repeat(15 * 1024);
      const stream = session.request(headers);
      let code: number | undefined;
      const take = (h: Record<string, unknown>): void => {
        if (h['grpc-status'] !== undefined) code = Number(h['grpc-status']);
      };
      stream.on('response', take);
      stream.on('trailers', take);
      stream.on('error', () => {});
      stream.resume();
      stream.on('close', () => resolve({ code, rstCode: stream.rstCode }));
      stream.end(grpcFrame(Buffer.alloc(0), false));
    });
    // 135 KiB of headers: refused before they are decoded whole, with no hookwatch code running.
    expect(await call(9)).toEqual({ code: undefined, rstCode: http2Constants.NGHTTP2_ENHANCE_YOUR_CALM });
    expect(await call(0)).toEqual({ code: GrpcStatus.OK, rstCode: http2Constants.NGHTTP2_NO_ERROR });
    expect(receiver?.stats.rejected).toEqual({});
  });

  for (const acknowledged of [false, true]) {
    it(`holds at most 100 calls of one connection at once, refusing the streams past them (a client that ${acknowledged ? 'acknowledged the limit loses its connection' : 'has not acknowledged the limit gets REFUSED_STREAM'})`, async () => {
      // Each call reserves 2 KiB of the budget as its message's prefix arrives, and then waits for the rest of it.
      const { url, inflight } = await start({ maxRequestBytes: 1024, inflightBytes: 64 * 1024 * 1024 });
      const socket = netConnect({ port: Number(new URL(url).port), host: '127.0.0.1' });
      sockets.push(socket);
      socket.on('error', () => {});
      const resets: number[] = [];
      let goaway: number | undefined;
      let pending = Buffer.alloc(0);
      socket.on('data', (d: Buffer) => {
        pending = Buffer.concat([pending, d]);
        while (pending.length >= 9 && pending.length >= 9 + pending.readUIntBE(0, 3)) {
          const payload = pending.subarray(9, 9 + pending.readUIntBE(0, 3));
          if (pending[3] === 0x3) resets.push(payload.readUInt32BE(0));
          if (pending[3] === 0x7) goaway = payload.readUInt32BE(4);
          pending = pending.subarray(9 + payload.length);
        }
      });
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      const SETTINGS_ACK = http2Frame(0x4, 0x1, 0, Buffer.alloc(0));
      socket.write(acknowledged ? Buffer.concat([HTTP2_PREFACE, SETTINGS_ACK]) : HTTP2_PREFACE);
      await sleep(100);
      // 300 calls whose headers arrive, the first 100 with the prefix of a 1 KiB message whose rest never does.
      socket.write(Buffer.concat(Array.from({ length: 300 }, (_, i) => grpcHeadersFrame(1 + 2 * i, LOGS_PATH))));
      socket.write(Buffer.concat(Array.from({ length: 100 }, (_, i) => http2Frame(0x0, 0, 1 + 2 * i, grpcFrame(Buffer.alloc(1024), false).subarray(0, 5)))));
      const reservation = 2 * 1024;
      if (acknowledged) {
        // Past an acknowledged limit is a connection error (RFC 9113 section 5.1.2): the connection ends, its calls with it.
        await vi.waitFor(() => expect(goaway).toBe(http2Constants.NGHTTP2_PROTOCOL_ERROR), { timeout: 10_000 });
        await vi.waitFor(() => expect(inflight.inUseBytes).toBe(0), { timeout: 10_000 });
      } else {
        await vi.waitFor(() => expect(resets).toHaveLength(200), { timeout: 10_000 });
        expect(new Set(resets)).toEqual(new Set([http2Constants.NGHTTP2_REFUSED_STREAM]));
        expect(inflight.inUseBytes).toBe(100 * reservation);
        expect(goaway).toBeUndefined();
      }
    });
  }

  it('answers all of 300 calls a grpc-js client makes at once on one connection: its HTTP/2 client queues those past 100', async () => {
    const { url, next } = await start({ maxRequestBytes: 1024 });
    const c = new Client(url.replace('http://', ''), credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    ownClients.push(c);
    let release = (): void => {};
    next.hold = new Promise<void>((resolve) => (release = resolve));
    const answered = Promise.all(Array.from({ length: 300 }, () => exportWith(c, new Metadata())));
    // 100 calls wait in the store at once, the rest in the client's queue.
    await vi.waitFor(() => expect(next.arrived).toBe(100), { timeout: 10_000 });
    await sleep(200);
    expect(next.arrived).toBe(100);
    release();
    expect((await answered).filter((e) => e !== null)).toEqual([]);
    expect(next.logs).toHaveLength(300);
  });

  /** A raw connection that sends the HTTP/2 preface and never acknowledges the server's SETTINGS; the GOAWAY code it gets. */
  const unacknowledging = async (url: string): Promise<{ socket: Socket; goaway: () => number | undefined; closed: () => boolean }> => {
    const socket = netConnect({ port: Number(new URL(url).port), host: '127.0.0.1' });
    sockets.push(socket);
    socket.on('error', () => {});
    let goaway: number | undefined;
    let closed = false;
    let pending = Buffer.alloc(0);
    socket.on('data', (d: Buffer) => {
      pending = Buffer.concat([pending, d]);
      while (pending.length >= 9 && pending.length >= 9 + pending.readUIntBE(0, 3)) {
        const payload = pending.subarray(9, 9 + pending.readUIntBE(0, 3));
        if (pending[3] === 0x7) goaway = payload.readUInt32BE(4);
        pending = pending.subarray(9 + payload.length);
      }
    });
    socket.on('close', () => (closed = true));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(HTTP2_PREFACE);
    return { socket, goaway: () => goaway, closed: () => closed };
  };

  it('closes a connection whose client starts more than 100 calls without acknowledging the server\'s SETTINGS (SETTINGS_TIMEOUT), counted as malformed', async () => {
    const { url, inflight } = await start({ maxRequestBytes: 1024 });
    const { socket, goaway, closed } = await unacknowledging(url);
    // Calls started and given up at once, 100 at a time: never more than 100 open, each one's headers decoded.
    for (let batch = 0; batch < 20 && !closed(); batch++) {
      socket.write(Buffer.concat(Array.from({ length: 100 }, (_, i) => {
        const id = 1 + 2 * (100 * batch + i);
        return Buffer.concat([grpcHeadersFrame(id, LOGS_PATH), rstStreamCancel(id)]);
      })));
      await sleep(20);
    }
    await vi.waitFor(() => expect(closed()).toBe(true), { timeout: 5000 });
    expect(goaway()).toBe(http2Constants.NGHTTP2_SETTINGS_TIMEOUT);
    expect(receiver?.stats.rejected.malformed).toBe(1);
    // The 100 calls it started and gave up (the 101st may have been read before the connection closed).
    expect(receiver?.stats.rejected.client_aborted).toBeGreaterThanOrEqual(100);
    expect(receiver?.stats.rejected.client_aborted).toBeLessThanOrEqual(101);
    await vi.waitFor(() => expect(inflight.inUseBytes).toBe(0));
  });

  it('closes a connection whose client has not acknowledged the server\'s SETTINGS within 5 s (SETTINGS_TIMEOUT), its call with it, counted as malformed', async () => {
    const { url, inflight, next } = await start({ maxRequestBytes: 1024 });
    const { socket, goaway, closed } = await unacknowledging(url);
    // A call whose message never comes past its prefix: it would hold its reservation for otlp.requestTimeout (30 s).
    socket.write(Buffer.concat([grpcHeadersFrame(1, LOGS_PATH), http2Frame(0x0, 0, 1, grpcFrame(Buffer.alloc(1024), false).subarray(0, 5))]));
    await vi.waitFor(() => expect(inflight.inUseBytes).toBe(2 * 1024));
    const started = performance.now();
    await vi.waitFor(() => expect(closed()).toBe(true), { timeout: 8000 });
    expect(performance.now() - started).toBeGreaterThan(4000);
    expect(goaway()).toBe(http2Constants.NGHTTP2_SETTINGS_TIMEOUT);
    expect(receiver?.stats.rejected).toEqual({ malformed: 1 });
    await vi.waitFor(() => expect(inflight.inUseBytes).toBe(0));
    expect(next.logs).toHaveLength(0);
  });

  it('keeps serving a grpc-js client past the 5 s a client has to acknowledge the server\'s SETTINGS, on the same connection', async () => {
    const { url, next } = await start({ maxRequestBytes: 1024 });
    const c = new Client(url.replace('http://', ''), credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    ownClients.push(c);
    expect((await Promise.all(Array.from({ length: 150 }, () => exportWith(c, new Metadata())))).filter((e) => e !== null)).toEqual([]);
    await sleep(5500);
    expect(await exportWith(c, new Metadata())).toBeNull();
    expect(next.logs).toHaveLength(151);
    expect(receiver?.stats.rejected).toEqual({});
  });
});
