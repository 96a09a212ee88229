/**
 * The ingest token on both OTLP ports, case by case: a real grpc-js client and a node:http client send the same
 * Authorization values, and each is let in on both or refused on both (UNAUTHENTICATED / 401, with a message
 * naming what is expected and never the token).
 */
import { request } from 'node:http';
import { Client, Metadata, credentials, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsumeResult, LogsConsumer, PassThroughConsumer } from '../pipeline/consumer.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { InflightBudget } from './inflight.ts';
import { OtlpGrpcReceiver } from './otlp-grpc/index.ts';
import { OtlpHttpReceiver } from './otlp-http/index.ts';

const TOKEN = 'ingest-secret-4711';
const LOGS_PATH = '/opentelemetry.proto.collector.logs.v1.LogsService/Export';

const next: LogsConsumer & PassThroughConsumer = {
  consumeLogs: async (): Promise<ConsumeResult> => ({ rejected: 0, message: '' }),
  consume: async () => {},
};

let grpc: OtlpGrpcReceiver;
let http: OtlpHttpReceiver;
let client: Client;
let httpPort: number;

beforeAll(async () => {
  const opts = { addr: '127.0.0.1:0', maxRequestBytes: 1024 * 1024, requestTimeoutMs: 30_000, ingestToken: TOKEN, inflight: new InflightBudget(64 * 1024 * 1024), logs: next, passThrough: next, logger: silentLogger };
  grpc = new OtlpGrpcReceiver(opts);
  http = new OtlpHttpReceiver(opts);
  client = new Client(`127.0.0.1:${(await grpc.start()).port}`, credentials.createInsecure());
  httpPort = (await http.start()).port;
});

afterAll(async () => {
  client?.close();
  await grpc?.shutdown();
  await http?.shutdown();
});

/** An empty logs export over gRPC with this authorization metadata (none when undefined). */
function grpcExport(authorization: string | undefined): Promise<ServiceError | null> {
  const metadata = new Metadata();
  if (authorization !== undefined) metadata.set('authorization', authorization);
  const id = (b: Buffer): Buffer => b;
  return new Promise((resolve) => {
    client.makeUnaryRequest(LOGS_PATH, id, id, Buffer.alloc(0), metadata, { deadline: Date.now() + 10_000 }, (err: ServiceError | null) => resolve(err));
  });
}

/** An empty JSON logs export over HTTP with this Authorization header, or these (none when undefined). */
function httpExport(authorization: string | string[] | undefined): Promise<{ status: number; body: string; challenge: string | undefined }> {
  return new Promise((resolve, reject) => {
    const values = authorization === undefined ? [] : typeof authorization === 'string' ? [authorization] : authorization;
    // As raw pairs, so a header can be sent more than once.
    const headers = ['host', `127.0.0.1:${httpPort}`, 'content-type', 'application/json', ...values.flatMap((v) => ['authorization', v])];
    const req = request({ host: '127.0.0.1', port: httpPort, path: '/v1/logs', method: 'POST', headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, challenge: res.headers['www-authenticate'] }));
    });
    req.on('error', reject);
    req.end('{}');
  });
}

const refused: [string, string | undefined][] = [
  ['no authorization', undefined],
  ['an empty value', ''],
  ['the scheme alone', 'Bearer'],
  ['a wrong token', 'Bearer nope'],
  ['the token in another case', `Bearer ${TOKEN.toUpperCase()}`],
  ['the token with no scheme', TOKEN],
  ['the token under another scheme', `Basic ${TOKEN}`],
  ['the token under a scheme that only starts with bearer', `Bearerx ${TOKEN}`],
  ['two values in one entry', `Bearer ${TOKEN}, Bearer nope`],
  ['the token with a suffix', `Bearer ${TOKEN}x`],
];

const accepted: [string, string][] = [
  ['Bearer <token>', `Bearer ${TOKEN}`],
  ['the scheme in lower case', `bearer ${TOKEN}`],
  ['the scheme in upper case', `BEARER ${TOKEN}`],
  ['the scheme in mixed case', `bEaReR ${TOKEN}`],
  ['more than one space after the scheme', `Bearer   ${TOKEN}`],
];

describe('ingest token: the same answer on OTLP/gRPC and OTLP/HTTP', () => {
  for (const [what, authorization] of refused) {
    it(`refuses ${what}`, async () => {
      const g = await grpcExport(authorization);
      expect(g?.code).toBe(GrpcStatus.UNAUTHENTICATED);
      expect(g?.details).toBe('missing or wrong bearer token (metadata authorization: Bearer <token>)');
      const h = await httpExport(authorization);
      expect(h.status).toBe(401);
      expect(h.challenge).toBe('Bearer');
      expect(JSON.parse(h.body)).toEqual({ code: GrpcStatus.UNAUTHENTICATED, message: 'missing or wrong bearer token (Authorization: Bearer <token>)' });
      expect(`${g?.details ?? ''} ${h.body}`).not.toContain(TOKEN);
    });
  }

  for (const [what, authorization] of accepted) {
    it(`lets in ${what}`, async () => {
      expect(await grpcExport(authorization)).toBeNull();
      expect((await httpExport(authorization)).status).toBe(200);
    });
  }

  it('refuses over HTTP a request with repeated Authorization headers, the right token first or last (HTTP/2 clients cannot send two)', async () => {
    for (const authorization of [[`Bearer ${TOKEN}`, 'Bearer nope'], ['Bearer nope', `Bearer ${TOKEN}`], [`Bearer ${TOKEN}`, `Bearer ${TOKEN}`]]) {
      expect((await httpExport(authorization)).status).toBe(401);
    }
  });

  it('refuses white space alone as a missing token on both (HTTP/2 drops a header value with white space at its ends)', async () => {
    for (const authorization of [' ', '   ', 'Bearer ', 'Bearer    ']) {
      expect((await grpcExport(authorization))?.code).toBe(GrpcStatus.UNAUTHENTICATED);
      expect((await httpExport(authorization)).status).toBe(401);
    }
  });

  it('refuses over gRPC a right token with white space at its ends, which HTTP/1.1 takes (there it is not part of the value)', async () => {
    for (const authorization of [`Bearer ${TOKEN} `, ` Bearer ${TOKEN}`]) {
      // RFC 9113 8.2.1: such a value is malformed in HTTP/2, and the server never sees it: a missing token.
      expect((await grpcExport(authorization))?.details).toBe('missing or wrong bearer token (metadata authorization: Bearer <token>)');
      // RFC 9110 5.5: white space around a field value is not part of it.
      expect((await httpExport(authorization)).status).toBe(200);
    }
  });
});
