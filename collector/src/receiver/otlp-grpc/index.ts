/**
 * OTLP/gRPC receiver (opentelemetry-proto specification, "OTLP/gRPC"): unary Export on LogsService, MetricsService
 * and TraceService. The service definitions are hand-written with identity serializers, so the request bytes
 * reach the pipeline unchanged (forwarding passes them on as they came) and logs are decoded by the same
 * decoder as OTLP/HTTP. grpc-js undoes gzip itself and enforces the size limit after decompression.
 */
import { Metadata, Server, ServerCredentials, status as GrpcStatus, type ServerUnaryCall, type ServiceDefinition, type sendUnaryData } from '@grpc/grpc-js';
import { splitAddr } from '../../config/index.ts';
import { decodeLogsProto } from '../../otlp/decode-proto.ts';
import { encodeExportResponse } from '../../otlp/encode.ts';
import { STATUS_DETAILS_KEY, encodeRetryStatus } from '../../otlp/grpc-status.ts';
import type { LogsConsumer, PassThroughConsumer, Signal } from '../../pipeline/consumer.ts';
import { UnauthenticatedError, mapError } from '../../pipeline/errors.ts';
import type { Logger } from '../../telemetry/logger.ts';
import { sameSecret, secretDigest } from '../../net/secret.ts';

export interface OtlpGrpcReceiverOptions {
  addr: string;
  /** Largest request after decompression; grpc-js answers RESOURCE_EXHAUSTED over it. */
  maxRequestBytes: number;
  /** Empty: no authentication. Otherwise metadata `authorization: Bearer <token>`. */
  ingestToken: string;
  logs: LogsConsumer;
  passThrough: PassThroughConsumer;
  logger: Logger;
}

/** Counters for /metrics and tests: requests by signal and outcome, rejections by reason. */
export interface GrpcReceiverStats {
  requests: Record<string, number>;
  rejected: Record<string, number>;
}

const SERVICES: Record<Signal, string> = {
  logs: '/opentelemetry.proto.collector.logs.v1.LogsService/Export',
  metrics: '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export',
  traces: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
};

const identity = (b: Buffer): Buffer => b;

/** A one-method service definition whose messages stay raw bytes. */
function exportService(path: string): ServiceDefinition {
  return {
    Export: {
      path,
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
  };
}


export class OtlpGrpcReceiver {
  readonly stats: GrpcReceiverStats = { requests: {}, rejected: {} };
  private readonly server: Server;
  private readonly opts: OtlpGrpcReceiverOptions;
  private readonly tokenDigest: Buffer | undefined;
  private started = false;
  private stopped: Promise<void> | undefined;

  constructor(opts: OtlpGrpcReceiverOptions) {
    this.opts = opts;
    this.tokenDigest = opts.ingestToken ? secretDigest(`Bearer ${opts.ingestToken}`) : undefined;
    this.server = new Server({
      'grpc.max_receive_message_length': opts.maxRequestBytes,
      // Idle clients (Claude Code keeps one channel per session) must not pin connections forever.
      'grpc.max_connection_idle_ms': 5 * 60_000,
    });
    for (const signal of Object.keys(SERVICES) as Signal[]) {
      this.server.addService(exportService(SERVICES[signal]), {
        Export: (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
          this.handle(signal, call, callback).catch((err: unknown) => {
            opts.logger.error('otlp grpc request failed unexpectedly', { err });
            callback({ code: GrpcStatus.INTERNAL, details: 'internal error' });
          });
        },
      });
    }
  }

  /** Starts listening; resolves with the bound port (port 0 picks a free one). */
  async start(): Promise<{ host: string; port: number }> {
    const { host, port } = splitAddr(this.opts.addr);
    const target = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    const bound = await new Promise<number>((resolve, reject) => {
      this.server.bindAsync(target, ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
    });
    this.started = true;
    return { host, port: bound };
  }

  /** Stops accepting and lets in-flight calls finish (forced after 10 s). Safe to call twice or before start. */
  shutdown(): Promise<void> {
    if (!this.started) return Promise.resolve();
    this.stopped ??= new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, 10_000);
      force.unref();
      this.server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
    return this.stopped;
  }

  private count(map: Record<string, number>, key: string): void {
    map[key] = (map[key] ?? 0) + 1;
  }

  private authorized(metadata: Metadata): boolean {
    if (!this.tokenDigest) return true;
    const value = metadata.get('authorization')[0];
    // Compare digests so the time taken does not depend on where a wrong token differs, nor on its length.
    return sameSecret(typeof value === 'string' ? value : '', this.tokenDigest);
  }

  private async handle(signal: Signal, call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>): Promise<void> {
    try {
      if (!this.authorized(call.metadata)) throw new UnauthenticatedError('missing or wrong bearer token (metadata authorization: Bearer <token>)');
      const body = call.request;
      const raw = { signal, body, encoding: 'protobuf' as const, receivedAtMs: Date.now() };
      let rejected = 0;
      let message = '';
      if (signal === 'logs') {
        this.opts.logs.admit?.(raw);
        ({ rejected, message } = await this.opts.logs.consumeLogs(decodeLogsProto(body), raw));
      } else {
        await this.opts.passThrough.consume(raw);
      }
      this.count(this.stats.requests, `${signal}:ok`);
      // Partial success has the same field numbers in all three Export*ServiceResponse messages.
      callback(null, encodeExportResponse('protobuf', rejected, message));
    } catch (err) {
      const m = mapError(err);
      this.count(this.stats.requests, `${signal}:${m.grpcCode}`);
      this.count(this.stats.rejected, m.reason);
      if (m.grpcCode === GrpcStatus.INTERNAL) this.opts.logger.error('otlp grpc request failed', { signal, err });
      const metadata = new Metadata();
      if (m.retryAfterSeconds !== undefined && m.grpcCode === GrpcStatus.UNAVAILABLE) {
        // RetryInfo tells the OTLP client how long to back off (specification, "OTLP/gRPC Throttling").
        metadata.set(STATUS_DETAILS_KEY, encodeRetryStatus(m.grpcCode, m.message, m.retryAfterSeconds * 1000));
      }
      callback({ code: m.grpcCode, details: m.message, metadata });
    }
  }
}
