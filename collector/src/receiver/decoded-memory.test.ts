/**
 * A request is bounded by what it decodes to, not only by its bytes: a protobuf log record can be two bytes on
 * the wire and hundreds in memory, so a small body of empty records once took gigabytes. Against a running
 * hookwatch with otlp.maxInflightBytes 8 MiB (one request may decode to 4 MiB): too much for one request is 413 /
 * RESOURCE_EXHAUSTED on both ports, too much while other requests hold the budget is 503 with Retry-After (413
 * when what it decoded so far says the whole would be too much for one request anyway), and a normal batch is
 * still taken.
 */
import { request, type ClientRequest } from 'node:http';
import { Client, Metadata, credentials, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureRequests, postOtlp, startTestService, type TestService } from '../../test/helpers.ts';
import { lengthDelimited } from '../otlp/proto-write.ts';

let service: TestService;

beforeAll(async () => {
  service = await startTestService({ HOOKWATCH_OTLP_MAX_REQUEST_BYTES: '2MiB', HOOKWATCH_OTLP_MAX_INFLIGHT_BYTES: '8MiB' });
});
afterAll(async () => {
  await service.close();
});

/** ExportLogsServiceRequest with `n` empty log records: two bytes each. */
function emptyRecordsProto(n: number): Buffer {
  return lengthDelimited(1, lengthDelimited(2, Buffer.alloc(2 * n, Buffer.from([0x12, 0x00]))));
}

function emptyRecordsJson(n: number): string {
  return `{"resourceLogs":[{"scopeLogs":[{"logRecords":[${Array(n).fill('{}').join(',')}]}]}]}`;
}

const protobuf = { 'content-type': 'application/x-protobuf' };
const json = { 'content-type': 'application/json' };

/** Sends raw bytes to the gRPC LogsService/Export. */
function grpcExport(body: Buffer): Promise<ServiceError | null> {
  const client = new Client(service.otlpGrpcUrl.replace('http://', ''), credentials.createInsecure());
  const id = (b: Buffer): Buffer => b;
  return new Promise((resolve) => {
    client.makeUnaryRequest('/opentelemetry.proto.collector.logs.v1.LogsService/Export', id, id, body, new Metadata(), { deadline: Date.now() + 10_000 }, (err: ServiceError | null) => {
      client.close();
      resolve(err);
    });
  });
}

/** Starts an upload that declares `bytes` and sends none of them: the receiver reserves them until it ends. */
function heldUpload(bytes: number): ClientRequest {
  const url = new URL('/v1/logs', service.otlpHttpUrl);
  const req = request(url, { method: 'POST', headers: { ...protobuf, 'content-length': String(bytes) } });
  req.on('error', () => undefined);
  req.flushHeaders();
  return req;
}

describe('what a request decodes to is bounded', () => {
  it('refuses with 413 a small protobuf body of 20,000 empty records (40 KB), naming the limit', async () => {
    const body = emptyRecordsProto(20_000);
    expect(body.length).toBeLessThan(41_000);
    const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', body, protobuf);
    expect(res.status).toBe(413);
    expect(res.body.toString()).toMatch(/decodes to more than 4194304 bytes in memory.*send smaller batches/);
  });

  it('refuses the same as JSON, and a JSON body whose parse tree alone is too large', async () => {
    const records = await postOtlp(service.otlpHttpUrl, '/v1/logs', emptyRecordsJson(20_000), json);
    expect(records.status).toBe(413);
    expect(JSON.parse(records.body.toString())).toMatchObject({ message: expect.stringMatching(/decodes to more than/) });
    // 100,000 empty arrays under a field the decoder ignores: refused before JSON.parse builds them.
    const tree = await postOtlp(service.otlpHttpUrl, '/v1/logs', `{"resourceLogs":[],"x":[${Array(100_000).fill('[]').join(',')}]}`, json);
    expect(tree.status).toBe(413);
    const metrics = await postOtlp(service.otlpHttpUrl, '/v1/metrics', `{"resourceMetrics":[],"x":[${Array(100_000).fill('[]').join(',')}]}`, json);
    expect(metrics.status).toBe(413);
  });

  it('takes JSON whose attribute strings hold more braces and brackets than the bound allows nodes', async () => {
    // 200,000 of each inside one string value: text, not parse-tree nodes (one request may hold 65,536 nodes).
    const value = JSON.stringify({ stringValue: '{['.repeat(200_000) });
    const logs = await postOtlp(service.otlpHttpUrl, '/v1/logs', `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"attributes":[{"key":"k","value":${value}}]}]}]}]}`, json);
    expect(logs.status).toBe(200);
    const metrics = await postOtlp(service.otlpHttpUrl, '/v1/metrics', `{"resourceMetrics":[{"resource":{"attributes":[{"key":"k","value":${value}}]}}]}`, json);
    expect(metrics.status).toBe(200);
  });

  it('refuses it on gRPC with RESOURCE_EXHAUSTED', async () => {
    const err = await grpcExport(emptyRecordsProto(20_000));
    expect(err?.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    expect(err?.details).toMatch(/decodes to more than/);
  });

  it('answers 503 with Retry-After when other requests hold the budget, and takes the request once they end', async () => {
    // 12,000 records decode to about 3 MiB: within one request's 4 MiB, not within the 2.3 MiB left while three
    // uploads hold 2 MB each.
    const body = emptyRecordsProto(12_000);
    const held = [heldUpload(2_000_000), heldUpload(2_000_000), heldUpload(2_000_000)];
    try {
      await new Promise((r) => setTimeout(r, 300));
      const busy = await postOtlp(service.otlpHttpUrl, '/v1/logs', body, protobuf);
      expect(busy.status).toBe(503);
      expect(busy.headers.get('retry-after')).toBe('1');
      expect(busy.body.toString()).toMatch(/otlp\.maxInflightBytes/);
    } finally {
      for (const r of held) r.destroy();
    }
    await new Promise((r) => setTimeout(r, 300));
    const free = await postOtlp(service.otlpHttpUrl, '/v1/logs', body, protobuf);
    expect(free.status).toBe(200);
  });

  it('answers 413, not 503, to a body that could never fit while other requests hold the budget', async () => {
    // The 20,000 records decode to more than one request's 4 MiB: refused as soon as the part decoded within the
    // 2.3 MiB left says so, for good, not to be retried.
    const held = [heldUpload(2_000_000), heldUpload(2_000_000), heldUpload(2_000_000)];
    try {
      await new Promise((r) => setTimeout(r, 300));
      const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', emptyRecordsProto(20_000), protobuf);
      expect(res.status).toBe(413);
      expect(res.headers.get('retry-after')).toBeNull();
      expect(res.body.toString()).toMatch(/decodes to more than 4194304 bytes in memory.*send smaller batches/);
      // A body of JSON nodes alone, counted as it is read, the same.
      const tree = await postOtlp(service.otlpHttpUrl, '/v1/logs', `{"resourceLogs":[],"x":[${Array(100_000).fill('[]').join(',')}]}`, json);
      expect(tree.status).toBe(413);
    } finally {
      for (const r of held) r.destroy();
    }
  });

  it('still takes the real client\'s batches, and gives the budget back after each request', async () => {
    for (const r of fixtureRequests('run2-httpprotobuf').filter((f) => f.path === '/v1/logs')) {
      expect((await postOtlp(service.otlpHttpUrl, '/v1/logs', r.body, protobuf)).status).toBe(200);
    }
    // Four requests of about 3 MiB decoded, one after another: past the 8 MiB budget if any of them kept it.
    for (let i = 0; i < 4; i++) expect((await postOtlp(service.otlpHttpUrl, '/v1/logs', emptyRecordsProto(12_000), protobuf)).status).toBe(200);
    for (let i = 0; i < 4; i++) expect(await grpcExport(emptyRecordsProto(12_000))).toBeNull();
  });
});
