/**
 * Inline collector mode end to end, in process: a real hookwatch on port 0 forwarding to a real downstream
 * OTLP receiver (HTTP or gRPC, port 0) that records bytes. Clients are the real Claude Code captures and the real
 * OpenTelemetry exporters.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Client, Metadata, credentials, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { OTLPTraceExporter as GrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPLogExporter as ProtoLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { afterEach, describe, expect, it } from 'vitest';
import type { ForwardingResponse, HooksResponse } from '../../../shared/src/api.ts';
import { effectiveDocument, loadConfig, toConfig } from '../config/index.ts';
import { decodeLogsJson } from '../otlp/decode-json.ts';
import { decodeLogsProto } from '../otlp/decode-proto.ts';
import { STATUS_DETAILS_KEY, retryDelayFromStatus } from '../otlp/grpc-status.ts';
import type { LogsRequest } from '../otlp/model.ts';
import type { Signal } from '../pipeline/consumer.ts';
import { startService, type RunningService, type ServiceOptions } from '../service.ts';
import { createLogger, silentLogger } from '../telemetry/logger.ts';
import { isolatedEnv } from '../../test/support/service.ts';
import { DELIVERY_ATTRIBUTE } from './enrich.ts';
import { DurableQueue } from './queue.ts';
import { GrpcDownstream, HttpDownstream } from '../../test/support/downstream-recorder.ts';
import { HAVE_OPENSSL, certAuthority, issue } from '../../test/support/certs.ts';
import { tempDir } from '../../test/helpers.ts';

/** The exporters' gzip setting (CompressionAlgorithm in @opentelemetry/otlp-exporter-base, which hookwatch does not depend on). */
const GZIP = 'gzip' as never;

const TESTDATA = new URL('../../testdata/claude-code-2.1.332/', import.meta.url);
const fixture = (path: string): Buffer => readFileSync(new URL(path, TESTDATA));
const PROTO_LOGS = fixture('run2-httpprotobuf/0001-http-logs.body.bin');
const PROTO_LOGS_2 = fixture('run2-httpprotobuf/0002-http-logs.body.bin');
const PROTO_METRICS = fixture('run2-httpprotobuf/0003-http-metrics.body.bin');
const JSON_LOGS = fixture('run1-httpjson/0001-http-logs.body.bin');
const JSON_METRICS = fixture('run1-httpjson/0002-http-metrics.body.bin');

interface Hw extends RunningService {
  lines: string[];
  close(): Promise<void>;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** `opts`: how long the OTLP/gRPC holds wait before their tries when nothing wakes them. */
async function startHookwatch(env: Record<string, string>, opts: Pick<ServiceOptions, 'grpcHoldBackoff'> = {}): Promise<Hw> {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forward-'));
  const config = toConfig(loadConfig({ env: { ...isolatedEnv(dir), HOOKWATCH_FORWARD_RETRY_INITIAL_INTERVAL: '10ms', HOOKWATCH_FORWARD_RETRY_MAX_INTERVAL: '50ms', ...env } }));
  const lines: string[] = [];
  const secrets = [...Object.values(config.forward.headers)];
  const service = await startService(config, { ...opts, logger: createLogger({ level: 'debug', secrets, write: (l) => lines.push(l) }) });
  const hw: Hw = {
    ...service,
    lines,
    close: async () => {
      await service.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  cleanups.push(() => hw.close());
  return hw;
}

async function downstream<T extends HttpDownstream | GrpcDownstream>(d: T): Promise<{ d: T; url: string }> {
  const url = await d.start();
  cleanups.push(() => d.stop());
  return { d, url };
}

async function post(base: string, signal: Signal, body: Buffer, contentType = 'application/x-protobuf'): Promise<Response> {
  return fetch(`${base}/v1/${signal}`, { method: 'POST', headers: { 'content-type': contentType }, body: body as Uint8Array<ArrayBuffer> });
}

const GRPC_PATHS: Record<Signal, string> = {
  logs: '/opentelemetry.proto.collector.logs.v1.LogsService/Export',
  metrics: '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export',
  traces: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
};

function grpcExport(url: string, signal: Signal, body: Buffer, deadlineMs = 20_000): Promise<ServiceError | null> {
  const client = new Client(url.replace('http://', ''), credentials.createInsecure(), { 'grpc.default_compression_algorithm': 2 });
  const id = (b: Buffer): Buffer => b;
  return new Promise((resolve) => {
    client.makeUnaryRequest(GRPC_PATHS[signal], id, id, body, new Metadata(), { deadline: Date.now() + deadlineMs }, (err: ServiceError | null) => {
      client.close();
      resolve(err);
    });
  });
}

async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function forwardingStatus(hw: Hw): Promise<ForwardingResponse> {
  return (await fetch(`${hw.httpUrl}/api/v1/forwarding`)).json() as Promise<ForwardingResponse>;
}

/** Each record's attributes as plain entries, for comparing two decodings. */
function records(req: LogsRequest): [string, unknown][][] {
  return req.resourceLogs.flatMap((rl) => rl.scopeLogs.flatMap((sl) => sl.logRecords.map((r) => [...r.attributes.entries()])));
}

describe('inline collector mode over OTLP/HTTP', () => {
  it('forwards logs, metrics and traces byte for byte, keeping each request\'s encoding, gzip and headers', async () => {
    const { d, url } = await downstream(new HttpDownstream());
    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: url, HOOKWATCH_FORWARD_PROTOCOL: 'http/protobuf', HOOKWATCH_FORWARD_HEADERS: 'x-api-key=key-0123456789' });
    expect((await post(hw.otlpHttpUrl, 'logs', PROTO_LOGS)).status).toBe(200);
    expect((await post(hw.otlpHttpUrl, 'logs', JSON_LOGS, 'application/json')).status).toBe(200);
    expect((await post(hw.otlpHttpUrl, 'metrics', JSON_METRICS, 'application/json')).status).toBe(200);
    expect(await grpcExport(hw.otlpGrpcUrl, 'logs', PROTO_LOGS_2)).toBeNull();
    expect(await grpcExport(hw.otlpGrpcUrl, 'metrics', PROTO_METRICS)).toBeNull();

    // Traces from the real exporter: the same span goes to hookwatch over gRPC and to a capture over
    // http/protobuf, which serialize identically, so the capture holds exactly what the client sent.
    const { d: capture, url: captureUrl } = await downstream(new HttpDownstream());
    const tracer = new TracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'claude-code' }),
      spanProcessors: [new SimpleSpanProcessor({ exporter: new GrpcTraceExporter({ url: hw.otlpGrpcUrl }) }), new SimpleSpanProcessor({ exporter: new ProtoTraceExporter({ url: `${captureUrl}/v1/traces` }) })],
    });
    tracer.getTracer('claude_code').startSpan('claude_code.interaction').end();
    await tracer.forceFlush();
    await tracer.shutdown();

    await until('six requests downstream', () => d.requests.length === 6);
    expect(d.bodies('logs')).toEqual([PROTO_LOGS, JSON_LOGS, PROTO_LOGS_2]);
    expect(d.bodies('metrics')).toEqual([JSON_METRICS, PROTO_METRICS]);
    expect(d.bodies('traces')).toEqual(capture.bodies('traces'));
    expect(d.requests.map((r) => r.contentType)).toEqual(['application/x-protobuf', 'application/json', 'application/json', 'application/x-protobuf', 'application/x-protobuf', 'application/x-protobuf']);
    expect(d.requests.every((r) => r.contentEncoding === 'gzip' && r.headers['x-api-key'] === 'key-0123456789')).toBe(true);

    // Hook extraction still ran on the forwarded logs.
    const hooks = (await (await fetch(`${hw.httpUrl}/api/v1/hooks?from=now-30d`)).json()) as HooksResponse;
    expect(hooks.hooks.map((h) => h.hookName)).toContain('SessionStart:startup');
    const status = await forwardingStatus(hw);
    expect(status.mode).toBe('inline');
    expect(status.destinations[0]).toMatchObject({ depth: 0, delivered: 6, deadLetters: 0, oldestAgeMs: null });
  });

  it('forwards what the real metrics and trace proto exporters send with gzip, as the bytes hookwatch received', async () => {
    const { d, url } = await downstream(new HttpDownstream());
    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: url, HOOKWATCH_FORWARD_COMPRESSION: 'none' });
    // A tee: the same export goes to hookwatch and to a capture, so the capture holds what hookwatch received.
    const { d: capture, url: captureUrl } = await downstream(new HttpDownstream());
    const resource = resourceFromAttributes({ 'service.name': 'claude-code', 'service.version': '2.1.332' });
    const tracer = new TracerProvider({
      resource,
      spanProcessors: [
        new SimpleSpanProcessor({ exporter: new ProtoTraceExporter({ url: `${hw.otlpHttpUrl}/v1/traces`, compression: GZIP }) }),
        new SimpleSpanProcessor({ exporter: new ProtoTraceExporter({ url: `${captureUrl}/v1/traces` }) }),
      ],
    });
    tracer.getTracer('claude_code').startSpan('claude_code.tool_use').end();
    await tracer.forceFlush();
    await tracer.shutdown();
    const reader = new PeriodicExportingMetricReader({ exporter: new ProtoMetricExporter({ url: `${hw.otlpHttpUrl}/v1/metrics`, compression: GZIP }), exportIntervalMillis: 60_000 });
    const meters = new MeterProvider({ resource, readers: [reader] });
    meters.getMeter('com.anthropic.claude_code', '2.1.332').createCounter('claude_code.token.usage').add(1234, { type: 'input' });
    await meters.forceFlush();
    await meters.shutdown();
    await until('traces and metrics downstream', () => d.bodies('traces').length === 1 && d.bodies('metrics').length >= 1);
    expect(d.bodies('traces')).toEqual(capture.bodies('traces'));
    expect(d.requests.every((r) => r.contentEncoding === '' && r.contentType === 'application/x-protobuf')).toBe(true);
    expect(d.bodies('metrics')[0]!.includes('claude_code.token.usage')).toBe(true);
  });

  it('retries 503 (honouring Retry-After) and dropped connections, then delivers in order of arrival', async () => {
    const { d, url } = await downstream(new HttpDownstream());
    d.mode = { kind: 'status', status: 503, retryAfter: '0' };
    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: url, HOOKWATCH_FORWARD_COMPRESSION: 'none' });
    for (let i = 0; i < 3; i++) expect((await post(hw.otlpHttpUrl, 'logs', i === 1 ? PROTO_LOGS_2 : PROTO_LOGS)).status).toBe(200);
    await until('a few refusals', () => d.refused >= 3);
    const during = (await forwardingStatus(hw)).destinations[0]!;
    expect(during.depth).toBe(3);
    expect(during.oldestAgeMs).not.toBeNull();
    expect(during.retries).toBeGreaterThanOrEqual(3);
    expect(during.lastError).toContain('503');
    d.mode = { kind: 'drop' };
    const refusedBefore = d.refused;
    await until('dropped connections', () => d.refused >= refusedBefore + 2);
    d.mode = { kind: 'accept' };
    const sent = Buffer.concat([PROTO_LOGS, PROTO_LOGS_2, PROTO_LOGS]);
    await until('the queue drains', () => Buffer.concat(d.bodies('logs')).length >= sent.length);
    // Queued protobuf requests of one signal travel merged: concatenated messages merge their repeated fields, so
    // the downstream decodes the same records in the same order. After dropped connections an attempt carries
    // fewer of them (a proxy may be cutting large uploads), so they may arrive in more than one request.
    expect(d.requests.length).toBeGreaterThanOrEqual(1);
    expect(d.requests.length).toBeLessThanOrEqual(3);
    expect(Buffer.concat(d.bodies('logs'))).toEqual(sent);
    expect(records(decodeLogsProto(sent))).toEqual([...records(decodeLogsProto(PROTO_LOGS)), ...records(decodeLogsProto(PROTO_LOGS_2)), ...records(decodeLogsProto(PROTO_LOGS))]);
    expect(d.requests.map((r) => r.contentEncoding)).toEqual(d.requests.map(() => ''));
    expect((await forwardingStatus(hw)).destinations[0]).toMatchObject({ depth: 0, consecutiveFailures: 0, lastError: null });
  });

  it('moves a request refused with 400 to the dead letters, counts it, shows it and carries on', async () => {
    const { d, url } = await downstream(new HttpDownstream());
    d.mode = { kind: 'status', status: 400 };
    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: url });
    expect((await post(hw.otlpHttpUrl, 'metrics', PROTO_METRICS)).status).toBe(200);
    await until('a dead letter', async () => (await forwardingStatus(hw)).destinations[0]!.deadLetters === 1);
    d.mode = { kind: 'accept' };
    expect((await post(hw.otlpHttpUrl, 'logs', PROTO_LOGS)).status).toBe(200);
    await until('the next request', () => d.requests.length === 1);
    expect(d.bodies('logs')).toEqual([PROTO_LOGS]);
    const s = await forwardingStatus(hw);
    expect(s.deadLetters).toHaveLength(1);
    expect(s.deadLetters[0]).toMatchObject({ signal: 'metrics', bytes: PROTO_METRICS.length, status: 400, attempts: 1 });
    expect(s.destinations[0]).toMatchObject({ deadLetters: 1, delivered: 1, depth: 0 });
  });

  it('refuses with 503 + Retry-After (gRPC: UNAVAILABLE + RetryInfo) when the queue is full, and takes the retry once it drained', async () => {
    const { d, url } = await downstream(new HttpDownstream());
    d.mode = { kind: 'status', status: 503 };
    // Room for two copies of the capture, not three.
    const maxBytes = Math.floor(PROTO_LOGS.length * 2.5);
    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: url, HOOKWATCH_FORWARD_QUEUE_MAX_BYTES: String(maxBytes), HOOKWATCH_FORWARD_RETRY_INITIAL_INTERVAL: '3s', HOOKWATCH_FORWARD_RETRY_MAX_INTERVAL: '3s' });
    expect((await post(hw.otlpHttpUrl, 'logs', PROTO_LOGS)).status).toBe(200);
    expect((await post(hw.otlpHttpUrl, 'logs', PROTO_LOGS)).status).toBe(200);
    const refused = await post(hw.otlpHttpUrl, 'logs', PROTO_LOGS);
    expect(refused.status).toBe(503);
    expect(await refused.text()).toContain(`the forwarding queue is full (${2 * PROTO_LOGS.length} bytes queued + 0 being written of ${maxBytes})`);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Over gRPC held and tried again while the queue stays full (its exporter sends nothing again), then
    // answered a second before the deadline; counted once.
    const grpcRefused = await grpcExport(hw.otlpGrpcUrl, 'logs', PROTO_LOGS, 2000);
    expect(grpcRefused?.code).toBe(GrpcStatus.UNAVAILABLE);
    const details = grpcRefused?.metadata.get(STATUS_DETAILS_KEY)[0];
    expect(retryDelayFromStatus(details as Buffer)).toBeGreaterThanOrEqual(1000);
    expect((await forwardingStatus(hw)).destinations[0]!.refusedFull).toBe(2);
    // Metrics are refused for a full queue before their body is parsed: a malformed one (whole messages, then a
    // field whose length runs past the end) as large as the logs gets the 503 too, not the 400 it gets otherwise.
    const copies = Math.ceil(PROTO_LOGS.length / PROTO_METRICS.length);
    const malformed = Buffer.concat([...Array.from({ length: copies }, () => PROTO_METRICS), Buffer.from([0x0a, 0xff, 0x7f])]);
    expect((await post(hw.otlpHttpUrl, 'metrics', malformed)).status).toBe(503);
    expect((await grpcExport(hw.otlpGrpcUrl, 'metrics', malformed, 2000))?.code).toBe(GrpcStatus.UNAVAILABLE);
    expect((await forwardingStatus(hw)).destinations[0]!.refusedFull).toBe(4);

    d.mode = { kind: 'accept' };
    hw.forwarding!.forwarder.notify();
    await until('the queue drains', () => hw.forwarding!.queue.depth === 0, 15_000);
    // The client's retry of the refused request now gets through.
    expect((await post(hw.otlpHttpUrl, 'logs', PROTO_LOGS)).status).toBe(200);
    await until('the retried request downstream', () => Buffer.concat(d.bodies('logs')).equals(Buffer.concat([PROTO_LOGS, PROTO_LOGS, PROTO_LOGS])));
  });

  it('a real exporter refused for a full queue gets through on its own retry once the queue drained', async () => {
    const { d, url } = await downstream(new HttpDownstream());
    d.mode = { kind: 'status', status: 503 };
    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: url, HOOKWATCH_FORWARD_QUEUE_MAX_BYTES: String(PROTO_LOGS.length * 2), HOOKWATCH_FORWARD_RETRY_INITIAL_INTERVAL: '100ms', HOOKWATCH_FORWARD_RETRY_MAX_INTERVAL: '100ms' });
    expect((await post(hw.otlpHttpUrl, 'logs', PROTO_LOGS)).status).toBe(200);
    expect((await post(hw.otlpHttpUrl, 'logs', PROTO_LOGS)).status).toBe(200);
    const provider = new LoggerProvider({
      resource: resourceFromAttributes({ 'service.name': 'claude-code' }),
      processors: [new BatchLogRecordProcessor({ exporter: new ProtoLogExporter({ url: `${hw.otlpHttpUrl}/v1/logs`, timeoutMillis: 20_000 }) })],
    });
    provider.getLogger('com.anthropic.claude_code.events').emit({ body: 'claude_code.hook_execution_complete', attributes: { 'event.name': 'hook_execution_complete', hook_name: 'Stop', num_hooks: '1', num_success: '1' } });
    const flushed = provider.forceFlush();
    await until('the exporter refused for a full queue', async () => (await forwardingStatus(hw)).destinations[0]!.refusedFull >= 1);
    d.mode = { kind: 'accept' };
    await flushed;
    await provider.shutdown();
    await until('the retried export downstream', () => records(decodeLogsProto(Buffer.concat(d.bodies('logs')))).length === 2 * records(decodeLogsProto(PROTO_LOGS)).length + 1);
    expect(records(decodeLogsProto(Buffer.concat(d.bodies('logs')))).at(-1)).toContainEqual(['hook_name', 'Stop']);
  });

  it('refuses a request larger than the whole queue with 413 rather than a retry that can never succeed', async () => {
    const { url } = await downstream(new HttpDownstream());
    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: url, HOOKWATCH_FORWARD_QUEUE_MAX_BYTES: '2048' });
    const res = await post(hw.otlpHttpUrl, 'logs', PROTO_LOGS);
    expect(res.status).toBe(413);
    expect(await res.text()).toContain(`request of ${PROTO_LOGS.length} bytes is larger than the whole forwarding queue (forward.queue.maxBytes: 2048 bytes)`);
    expect((await post(hw.otlpHttpUrl, 'metrics', PROTO_METRICS)).status).toBe(200);
  });

  it('adds hookwatch.delivery to hook records only when enrichment is on, and keeps everything else', async () => {
    const { d, url } = await downstream(new HttpDownstream());
    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: url, HOOKWATCH_FORWARD_ENRICH: 'true' });
    expect((await post(hw.otlpHttpUrl, 'logs', PROTO_LOGS)).status).toBe(200);
    expect((await post(hw.otlpHttpUrl, 'logs', JSON_LOGS, 'application/json')).status).toBe(200);
    await until('two requests', () => d.requests.length === 2);
    const sent = records(decodeLogsProto(PROTO_LOGS));
    const got = records(decodeLogsProto(d.requests[0]!.body));
    expect(got).toHaveLength(sent.length);
    const delivery = new Map<string, unknown>();
    got.forEach((attrs, i) => {
      const map = new Map(attrs);
      const added = map.get(DELIVERY_ATTRIBUTE);
      map.delete(DELIVERY_ATTRIBUTE);
      expect([...map.entries()]).toEqual(sent[i]);
      if (added !== undefined) delivery.set(String(map.get('hook_name')), added);
      if (map.get('event.name') !== 'hook_execution_complete') expect(added).toBeUndefined();
    });
    // run2: SessionStart persisted one output (over the cap); UserPromptSubmit sent 100 characters.
    expect(Object.fromEntries(delivery)).toEqual({ 'SessionStart:startup': 'over' });
    const json = JSON.parse(d.requests[1]!.body.toString()) as { resourceLogs: { scopeLogs: { logRecords: { attributes: { key: string; value: { stringValue?: string } }[] }[] }[] }[] };
    const tagged = json.resourceLogs.flatMap((rl) => rl.scopeLogs.flatMap((sl) => sl.logRecords)).map((r) => [r.attributes.find((a) => a.key === 'hook_name')?.value.stringValue, r.attributes.find((a) => a.key === DELIVERY_ATTRIBUTE)?.value.stringValue]).filter(([, v]) => v);
    expect(tagged).toEqual([['SessionStart:startup', 'over']]);
  });

  it('counts a held gRPC export once in refusedFull, its events committed once, when the queue has room for its body but not for it enriched', async () => {
    const { d, url } = await downstream(new HttpDownstream());
    d.mode = { kind: 'status', status: 503 };
    // Metrics kept in the queue leave room for the capture as it came; hookwatch.delivery on its SessionStart
    // record makes it larger, though not larger than the whole queue.
    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: url, HOOKWATCH_FORWARD_ENRICH: 'true', HOOKWATCH_FORWARD_QUEUE_MAX_BYTES: String(PROTO_METRICS.length + PROTO_LOGS.length) });
    expect((await post(hw.otlpHttpUrl, 'metrics', PROTO_METRICS)).status).toBe(200);
    // Held and tried again (250 ms on, then 500 ms after) until a second before its deadline.
    expect((await grpcExport(hw.otlpGrpcUrl, 'logs', PROTO_LOGS, 2000))?.code).toBe(GrpcStatus.UNAVAILABLE);
    expect(hw.grpcReceiver.stats.held).toMatchObject({ unavailable: 1 });
    expect((await forwardingStatus(hw)).destinations[0]).toMatchObject({ refusedFull: 1, depth: 1 });
    // Its events were committed by the first try: the later ones do not commit them again (as duplicates).
    expect(hw.ingest.stats).toMatchObject({ batches: 1, stored: hw.ingest.stats.hookEvents, duplicates: 0 });
  });

  it('tries a gRPC export held for a full queue as soon as a delivery frees room, not at the end of its backoff', async () => {
    const { d, url } = await downstream(new HttpDownstream());
    d.mode = { kind: 'status', status: 503 };
    // Room for one copy of the capture. The hold's backoff outlasts the hold: an export committed was woken by the
    // room the delivery freed.
    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: url, HOOKWATCH_FORWARD_QUEUE_MAX_BYTES: String(PROTO_LOGS.length), HOOKWATCH_FORWARD_RETRY_INITIAL_INTERVAL: '100ms', HOOKWATCH_FORWARD_RETRY_MAX_INTERVAL: '100ms' }, { grpcHoldBackoff: { firstRetryMs: 20_000, maxRetryMs: 20_000 } });
    expect((await post(hw.otlpHttpUrl, 'logs', PROTO_LOGS)).status).toBe(200);
    const sent = grpcExport(hw.otlpGrpcUrl, 'logs', PROTO_LOGS, 6000);
    await until('the export refused for the full queue, and held', async () => (await forwardingStatus(hw)).destinations[0]!.refusedFull === 1);
    d.mode = { kind: 'accept' };
    expect(await sent).toBeNull();
    expect(hw.grpcReceiver.stats.held).toEqual({ committed: 1, unavailable: 0, cancelled: 0, refused: 0 });
    await until('both copies downstream', () => Buffer.concat(d.bodies('logs')).equals(Buffer.concat([PROTO_LOGS, PROTO_LOGS])));
  });

  it('refuses at once, not to be retried, a request whose enriched body is larger than the whole queue', async () => {
    const { url } = await downstream(new HttpDownstream());
    // Room for the capture as it came and nothing more; hookwatch.delivery on its SessionStart record makes it larger.
    const maxBytes = PROTO_LOGS.length;
    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: url, HOOKWATCH_FORWARD_ENRICH: 'true', HOOKWATCH_FORWARD_QUEUE_MAX_BYTES: String(maxBytes) });
    const tooLarge = new RegExp(`^request of (\\d+) bytes once enriched \\(forward\\.enrich\\) is larger than the whole forwarding queue \\(forward\\.queue\\.maxBytes: ${maxBytes} bytes\\)$`);
    // Over gRPC: RESOURCE_EXHAUSTED without RetryInfo, not held.
    const err = await grpcExport(hw.otlpGrpcUrl, 'logs', PROTO_LOGS, 10_000);
    expect(err?.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    expect(err?.details).toMatch(tooLarge);
    expect(Number(tooLarge.exec(err?.details ?? '')?.[1])).toBeGreaterThan(maxBytes);
    expect(err?.metadata.get(STATUS_DETAILS_KEY)).toEqual([]);
    expect(hw.grpcReceiver.stats.held).toEqual({ committed: 0, unavailable: 0, cancelled: 0, refused: 0 });
    expect(hw.grpcReceiver.stats.rejected).toEqual({ too_large: 1 });
    // Over HTTP: 413, naming the size and the setting.
    const res = await post(hw.otlpHttpUrl, 'logs', PROTO_LOGS);
    expect(res.status).toBe(413);
    expect(res.headers.get('retry-after')).toBeNull();
    expect(await res.text()).toMatch(/request of \d+ bytes once enriched \(forward\.enrich\) is larger than the whole forwarding queue \(forward\.queue\.maxBytes: \d+ bytes\)/);
    expect(hw.receiver.stats.rejected).toEqual({ too_large: 1 });
    // Neither acknowledged nor queued, and not counted as found the queue full.
    expect((await forwardingStatus(hw)).destinations[0]).toMatchObject({ refusedFull: 0, depth: 0 });
  });

  it('labels the right JSON records whatever the field spelling or null entries, and keeps large numbers exact', async () => {
    const { d, url } = await downstream(new HttpDownstream());
    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: url, HOOKWATCH_FORWARD_ENRICH: 'true' });
    const hook = (name: string, attrs: Record<string, string>): unknown => ({
      attributes: Object.entries({ 'event.name': 'hook_execution_complete', hook_event: 'SessionStart', hook_name: name, num_hooks: '1', num_success: '1', ...attrs })
        .map(([key, v]) => ({ key, value: { stringValue: v } })),
    });
    // The snake_case resource holds the record over the cap, after a null scope and a null record; the camelCase
    // one holds a healthy record whose time is a JSON number past 2^53.
    const body = `{"resourceLogs":[null,{"scope_logs":[null,{"log_records":[null,${JSON.stringify(hook('SessionStart:over', { num_outputs_persisted: '1', additional_context_chars: '12000' }))}]}]},`
      + `{"scopeLogs":[{"logRecords":[{"timeUnixNano":1764552755360123457,${JSON.stringify(hook('SessionStart:fine', { num_outputs_persisted: '0', additional_context_chars: '300' })).slice(1)}]}]}]}`;
    expect((await post(hw.otlpHttpUrl, 'logs', Buffer.from(body), 'application/json')).status).toBe(200);
    await until('the request downstream', () => d.requests.length === 1);
    const text = d.requests[0]!.body.toString();
    expect(text).toContain('"timeUnixNano":1764552755360123457');
    const labels = records(decodeLogsJson(text)).map((attrs) => new Map(attrs)).filter((m) => m.has('hook_name')).map((m) => [m.get('hook_name'), m.get(DELIVERY_ATTRIBUTE)]);
    expect(labels).toEqual([['SessionStart:over', 'over'], ['SessionStart:fine', 'ok']]);
  });

  it('keeps secrets (downstream headers, a password in the endpoint) out of logs, the API and the config dump', async () => {
    const { d, url } = await downstream(new HttpDownstream());
    d.mode = { kind: 'status', status: 401 };
    const secret = 'fwd-header-secret-9f8e7d';
    const endpoint = url.replace('http://', 'http://user:endpoint-pass-5a4b@');
    // A 401 is retried for forward.retry.maxElapsedTime, then dead-lettered (and logged).
    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: endpoint, HOOKWATCH_FORWARD_HEADERS: `authorization=Bearer%20${secret}`, HOOKWATCH_FORWARD_RETRY_MAX_ELAPSED_TIME: '100ms' });
    expect((await post(hw.otlpHttpUrl, 'logs', PROTO_LOGS)).status).toBe(200);
    await until('a dead letter', async () => (await forwardingStatus(hw)).destinations[0]!.deadLetters === 1);
    const api = JSON.stringify(await forwardingStatus(hw));
    const logs = hw.lines.join('\n');
    expect(logs).toContain('dead letters');
    for (const text of [api, logs]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain('endpoint-pass-5a4b');
    }
    const dump = JSON.stringify(effectiveDocument(loadConfig({ env: { HOOKWATCH_FORWARD_ENDPOINT: endpoint, HOOKWATCH_FORWARD_HEADERS: `authorization=Bearer%20${secret}` } })));
    expect(dump).not.toContain(secret);
    expect(dump).not.toContain('endpoint-pass-5a4b');
    expect(() => loadConfig({ env: { HOOKWATCH_FORWARD_HEADERS: `no-equals-${secret}` } })).toThrow(/forward\.headers/);
    try {
      loadConfig({ env: { HOOKWATCH_FORWARD_HEADERS: `no-equals-${secret}` } });
    } catch (err) {
      expect((err as Error).message).not.toContain(secret);
    }
  });

  it('scrubs dead letters stored before refusals were scrubbed, in the file too, of the credentials they repeat', async () => {
    const { url } = await downstream(new HttpDownstream());
    const token = 'fwd-bearer-token-3c2d1e';
    const key = 'fwd-api-key-7a6b5c';
    const endpoint = url.replace('http://', 'http://user:endpoint-pass-5a4b@');
    const { dir, cleanup } = tempDir('hookwatch-old-dead-letters-');
    cleanups.push(cleanup);
    const path = join(dir, 'forward-queue.db');
    // As an earlier version stored a refusal: the destination's text as it came, credentials and all.
    const old = new DurableQueue({ path, maxBytes: 1 << 20 });
    const raw = `401 from ${endpoint}/v1/logs: token "${token}" (Authorization: Bearer ${token}) with x-api-key ${key} not accepted`;
    await old.deadLetter([await old.enqueue('logs', 'protobuf', PROTO_LOGS, Date.now())], Date.now(), 401, raw);
    old.close();

    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: endpoint, HOOKWATCH_FORWARD_QUEUE_PATH: path, HOOKWATCH_FORWARD_HEADERS: `authorization=Bearer%20${token},x-api-key=${key}` });
    const status = await forwardingStatus(hw);
    expect(status.deadLetters).toHaveLength(1);
    expect(status.deadLetters[0]!.reason).toContain('401 from http://127.0.0.1:');
    expect(status.deadLetters[0]!.reason).toContain('<redacted>');
    expect(status.deadLetterSummary!.lastReason).toBe(status.deadLetters[0]!.reason);
    const api = JSON.stringify(status);
    for (const secret of [token, key, 'endpoint-pass-5a4b']) expect(api).not.toContain(secret);
    // Nor is any of them left in the queue's files once hookwatch has stopped.
    await hw.close();
    const files = readdirSync(dir).filter((f) => f.startsWith('forward-queue.db'));
    expect(files).toContain('forward-queue.db');
    for (const f of files) {
      const bytes = readFileSync(join(dir, f)).toString('latin1');
      for (const secret of [token, key, 'endpoint-pass-5a4b']) expect(bytes, f).not.toContain(secret);
    }
  });
});

describe('inline collector mode over OTLP/gRPC', () => {
  it('forwards protobuf logs, metrics and traces unchanged and refuses OTLP/JSON with 415 instead of altering it', async () => {
    const { d, url } = await downstream(new GrpcDownstream());
    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: url, HOOKWATCH_FORWARD_PROTOCOL: 'grpc', HOOKWATCH_FORWARD_HEADERS: 'x-api-key=grpc-key-42' });
    expect((await post(hw.otlpHttpUrl, 'logs', PROTO_LOGS)).status).toBe(200);
    expect(await grpcExport(hw.otlpGrpcUrl, 'metrics', PROTO_METRICS)).toBeNull();
    expect(await grpcExport(hw.otlpGrpcUrl, 'traces', PROTO_METRICS.subarray(0, 0))).toBeNull();
    expect((await post(hw.otlpHttpUrl, 'logs', JSON_LOGS, 'application/json')).status).toBe(415);
    // JSON metrics too, and before their body is read: a malformed one is told what would never work, not 400.
    expect((await post(hw.otlpHttpUrl, 'metrics', Buffer.from('{"resourceMetrics": '), 'application/json')).status).toBe(415);
    await until('three requests downstream', () => d.requests.length === 3);
    expect(d.bodies('logs')).toEqual([PROTO_LOGS]);
    expect(d.bodies('metrics')).toEqual([PROTO_METRICS]);
    expect(d.bodies('traces')).toEqual([Buffer.alloc(0)]);
    expect(d.requests[0]!.headers['x-api-key']).toBe('grpc-key-42');
  });

  it('retries UNAVAILABLE, and UNIMPLEMENTED until forward.retry.maxElapsedTime before dead-lettering it', async () => {
    const { d, url } = await downstream(new GrpcDownstream());
    d.mode = { kind: 'status', status: GrpcStatus.UNAVAILABLE };
    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: url, HOOKWATCH_FORWARD_PROTOCOL: 'grpc', HOOKWATCH_FORWARD_RETRY_MAX_ELAPSED_TIME: '300ms' });
    expect((await post(hw.otlpHttpUrl, 'logs', PROTO_LOGS)).status).toBe(200);
    await until('retries', () => d.refused >= 3);
    expect((await forwardingStatus(hw)).destinations[0]!.deadLetters).toBe(0);
    d.mode = { kind: 'status', status: GrpcStatus.UNIMPLEMENTED };
    const refusedBefore = d.refused;
    await until('a dead letter', async () => (await forwardingStatus(hw)).destinations[0]!.deadLetters === 1);
    expect(d.refused).toBeGreaterThan(refusedBefore + 1);
    d.mode = { kind: 'accept' };
    expect((await post(hw.otlpHttpUrl, 'metrics', PROTO_METRICS)).status).toBe(200);
    await until('delivery', () => d.requests.length === 1);
    expect(d.bodies('metrics')).toEqual([PROTO_METRICS]);
  });
});

describe.skipIf(!HAVE_OPENSSL)('inline collector mode over OTLP/gRPC with TLS', () => {
  it('delivers to a destination with a private CA through forward.tls.caFile; without it says why, counts and keeps the request', async () => {
    const tmp = tempDir('hookwatch-forward-tls-');
    cleanups.push(() => tmp.cleanup());
    const ca = certAuthority(tmp.dir, 'private');
    const server = issue(ca, 'destination', 'server');
    const { d, url } = await downstream(new GrpcDownstream({ cert: readFileSync(server.certFile), key: readFileSync(server.keyFile) }));
    const untrusting = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: url, HOOKWATCH_FORWARD_PROTOCOL: 'grpc' });
    expect((await post(untrusting.otlpHttpUrl, 'logs', PROTO_LOGS)).status).toBe(200);
    const scrape = async (): Promise<string> => (await fetch(`${untrusting.httpUrl}/metrics`)).text();
    await until('TLS failures counted', async () => /^hookwatch_forward_tls_failures_total [1-9]/m.test(await scrape()));
    const errors = untrusting.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['level'] === 'error' && String(l['msg']).includes('TLS handshake'));
    expect(errors).toHaveLength(1);
    expect(errors[0]?.['message']).toMatch(/unable to verify the first certificate/);
    expect(errors[0]).not.toHaveProperty('reason');
    expect((await forwardingStatus(untrusting)).destinations[0]).toMatchObject({ depth: 1, deadLetters: 0 });
    expect(d.requests).toHaveLength(0);
    await untrusting.close();

    const trusting = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: url, HOOKWATCH_FORWARD_PROTOCOL: 'grpc', HOOKWATCH_FORWARD_TLS_CA_FILE: ca.certFile });
    expect((await post(trusting.otlpHttpUrl, 'logs', PROTO_LOGS_2)).status).toBe(200);
    await until('delivery', () => d.requests.length === 1);
    expect(d.bodies('logs')).toEqual([PROTO_LOGS_2]);
  });
});

describe('a start that fails', () => {
  /** Runs `sql` on a SQLite file, as an operator with the sqlite3 shell would. */
  const onFile = (path: string, sql: string): void => {
    const db = new DatabaseSync(path);
    db.exec(sql);
    db.close();
  };

  it('lets go of the store and the forwarding queue it opened, so a start in the same process takes them', async () => {
    const { url } = await downstream(new HttpDownstream());
    const { dir, cleanup } = tempDir('hookwatch-forward-');
    cleanups.push(cleanup);
    const config = toConfig(loadConfig({ env: { ...isolatedEnv(dir), HOOKWATCH_FORWARD_ENDPOINT: url } }));
    // Alerting, started after the queue has opened, cannot read a damaged alert state row.
    onFile(config.db, "CREATE TABLE alert_instances (id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, state TEXT NOT NULL, data TEXT NOT NULL); INSERT INTO alert_instances VALUES ('a', 'f', 'firing', 'not json')");
    await expect(startService(config, { logger: silentLogger })).rejects.toThrow(SyntaxError);
    onFile(config.db, 'DELETE FROM alert_instances');
    const service = await startService(config, { logger: silentLogger });
    cleanups.push(async () => void (await service.stop()));
    expect(service.forwarding?.queue.path).toBe(config.forward.queue.path);
    expect((await post(service.otlpHttpUrl, 'logs', PROTO_LOGS)).status).toBe(200);
  });

  it('lets go of a forwarding queue it cannot make ready, so a start in the same process takes it', async () => {
    const { url } = await downstream(new HttpDownstream());
    const { dir, cleanup } = tempDir('hookwatch-forward-');
    cleanups.push(cleanup);
    const config = toConfig(loadConfig({ env: { ...isolatedEnv(dir), HOOKWATCH_FORWARD_ENDPOINT: url, HOOKWATCH_FORWARD_HEADERS: 'x-api-key=LeakKey4567' } }));
    // A dead letter whose refusal repeats the key, to be scrubbed at start, in a file where it cannot be rewritten.
    const queue = new DurableQueue({ path: config.forward.queue.path, maxBytes: 1024 * 1024 });
    await queue.deadLetter([await queue.enqueue('logs', 'protobuf', PROTO_LOGS, Date.now())], Date.now(), 401, 'key LeakKey4567 refused');
    queue.close();
    onFile(config.forward.queue.path, "CREATE TRIGGER frozen BEFORE UPDATE ON dead_letters BEGIN SELECT RAISE(ABORT, 'dead letters are frozen'); END");
    await expect(startService(config, { logger: silentLogger })).rejects.toThrow('dead letters are frozen');
    onFile(config.forward.queue.path, 'DROP TRIGGER frozen');
    const service = await startService(config, { logger: silentLogger });
    cleanups.push(async () => void (await service.stop()));
    expect(service.forwarding?.deadLetters().map((d) => d.reason)).toEqual(['key <redacted> refused']);
  });
});

describe('fan-out mode', () => {
  it('with no forward endpoint forwards nothing, opens no queue and still ingests everything', async () => {
    const { d } = await downstream(new HttpDownstream());
    const hw = await startHookwatch({ HOOKWATCH_FORWARD_ENDPOINT: '' });
    expect(hw.forwarding).toBeUndefined();
    expect((await post(hw.otlpHttpUrl, 'logs', PROTO_LOGS)).status).toBe(200);
    expect(await grpcExport(hw.otlpGrpcUrl, 'logs', PROTO_LOGS_2)).toBeNull();
    expect((await post(hw.otlpHttpUrl, 'metrics', PROTO_METRICS)).status).toBe(200);
    const hooks = (await (await fetch(`${hw.httpUrl}/api/v1/hooks?from=now-30d`)).json()) as HooksResponse;
    expect(hooks.hooks.map((h) => h.hookName).sort()).toEqual(['SessionStart:startup', 'UserPromptSubmit']);
    expect(await forwardingStatus(hw)).toEqual({ mode: 'fan-out', destinations: [], deadLetters: [] });
    expect(d.requests).toHaveLength(0);
  });
});
