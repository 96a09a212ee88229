/**
 * A downstream OTLP receiver that records every request it gets (HTTP and gRPC on port 0), for tests and the
 * bench. Its answer is programmable: accept, refuse with a status (and Retry-After), or drop the connection.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { Metadata, Server as GrpcServer, ServerCredentials, status as GrpcStatus, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import { encodeExportResponse } from '../../src/otlp/encode.ts';
import type { Signal } from '../../src/pipeline/consumer.ts';

/** One request as the downstream saw it, body decompressed. */
export interface RecordedRequest {
  signal: Signal;
  contentType: string;
  contentEncoding: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** How the downstream answers the next requests. */
export type DownstreamMode =
  | { kind: 'accept' }
  | { kind: 'status'; status: number; retryAfter?: string }
  /** Refuses with `status` a request whose (decompressed) body contains `marker`; accepts the others. */
  | { kind: 'poison'; marker: string; status: number }
  /** Accepts, answering a partial success: `rejected` records dropped, with `message`. */
  | { kind: 'partial'; rejected: number; message: string }
  /**
   * Refuses with `status`, its message repeating the request's URL and headers (metadata), and the credential of its
   * Authorization header alone, as some gateways do.
   */
  | { kind: 'echo'; status: number }
  | { kind: 'drop' };

const SIGNALS: Record<string, Signal> = { '/v1/logs': 'logs', '/v1/metrics': 'metrics', '/v1/traces': 'traces' };

/** An OTLP/HTTP downstream on 127.0.0.1:0. */
export class HttpDownstream {
  readonly requests: RecordedRequest[] = [];
  mode: DownstreamMode = { kind: 'accept' };
  /** Requests answered with something other than 200, or dropped. */
  refused = 0;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const mode = this.mode;
        if (mode.kind === 'drop') {
          this.refused++;
          req.socket.destroy();
          return;
        }
        if (mode.kind === 'status') {
          this.refused++;
          res.writeHead(mode.status, { 'content-type': 'application/json', ...(mode.retryAfter ? { 'retry-after': mode.retryAfter } : {}) });
          res.end(JSON.stringify({ code: 14, message: 'downstream refuses' }));
          return;
        }
        if (mode.kind === 'echo') {
          this.refused++;
          res.writeHead(mode.status, { 'content-type': 'application/json' });
          // As a gateway naming the credential it refused: "invalid token <token>".
          const credential = (req.headers.authorization ?? '').replace(/^\S+\s+/, '');
          res.end(JSON.stringify({ code: 7, message: `${credential ? `credential ${credential} not accepted: ` : ''}refused ${req.url ?? ''} with ${JSON.stringify(req.headers)}` }));
          return;
        }
        const raw = Buffer.concat(chunks);
        const encoding = String(req.headers['content-encoding'] ?? '');
        if (mode.kind === 'poison' && (encoding === 'gzip' ? gunzipSync(raw) : raw).includes(mode.marker)) {
          this.refused++;
          res.writeHead(mode.status, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ code: 13, message: 'downstream refuses this request' }));
          return;
        }
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
        this.requests.push({
          signal: SIGNALS[req.url ?? ''] ?? 'logs',
          contentType: String(req.headers['content-type'] ?? ''),
          contentEncoding: encoding,
          headers,
          body: encoding === 'gzip' ? gunzipSync(raw) : raw,
        });
        const json = String(req.headers['content-type']).startsWith('application/json');
        res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
        if (mode.kind === 'partial') res.end(encodeExportResponse(json ? 'json' : 'protobuf', mode.rejected, mode.message, 'rejectedSpans'));
        else res.end(json ? '{}' : '');
      });
    });
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  bodies(signal: Signal): Buffer[] {
    return this.requests.filter((r) => r.signal === signal).map((r) => r.body);
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const GRPC_PATHS: Record<Signal, string> = {
  logs: '/opentelemetry.proto.collector.logs.v1.LogsService/Export',
  metrics: '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export',
  traces: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
};

const identity = (b: Buffer): Buffer => b;

/**
 * An OTLP/gRPC downstream on 127.0.0.1:0. Mode `status` answers that gRPC code. With `tls` (PEM certificate and
 * key) it speaks TLS and its URL is https://.
 */
export class GrpcDownstream {
  readonly requests: RecordedRequest[] = [];
  mode: DownstreamMode = { kind: 'accept' };
  refused = 0;
  private readonly server = new GrpcServer();
  private readonly tls: { cert: Buffer; key: Buffer } | undefined;

  constructor(tls?: { cert: Buffer; key: Buffer }) {
    this.tls = tls;
    for (const signal of Object.keys(GRPC_PATHS) as Signal[]) {
      this.server.addService(
        { Export: { path: GRPC_PATHS[signal], requestStream: false, responseStream: false, requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity } },
        {
          Export: (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
            const mode = this.mode;
            if (mode.kind !== 'accept') {
              this.refused++;
              const credential = String(call.metadata.get('authorization')[0] ?? '').replace(/^\S+\s+/, '');
              const details = mode.kind === 'echo' ? `${credential ? `credential ${credential} not accepted: ` : ''}refused with ${JSON.stringify(call.metadata.getMap())}` : 'downstream refuses';
              callback({ code: mode.kind === 'status' || mode.kind === 'echo' ? mode.status : GrpcStatus.UNAVAILABLE, details, metadata: new Metadata() });
              return;
            }
            const headers: Record<string, string> = {};
            for (const [k, v] of Object.entries(call.metadata.getMap())) if (typeof v === 'string') headers[k] = v;
            this.requests.push({ signal, contentType: 'application/grpc', contentEncoding: '', headers, body: call.request });
            callback(null, Buffer.alloc(0));
          },
        },
      );
    }
  }

  async start(): Promise<string> {
    const credentials = this.tls ? ServerCredentials.createSsl(null, [{ cert_chain: this.tls.cert, private_key: this.tls.key }]) : ServerCredentials.createInsecure();
    const port = await new Promise<number>((resolve, reject) => this.server.bindAsync('127.0.0.1:0', credentials, (err, p) => (err ? reject(err) : resolve(p))));
    return `${this.tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  }

  bodies(signal: Signal): Buffer[] {
    return this.requests.filter((r) => r.signal === signal).map((r) => r.body);
  }

  async stop(): Promise<void> {
    this.server.forceShutdown();
  }
}
