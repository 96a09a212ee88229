/**
 * OTLP/gRPC exporter: unary Export on the signal's service with the request bytes unchanged (identity
 * serializers), gzip when configured. Retryable codes follow the specification ("OTLP/gRPC Failures"):
 * CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS, and RESOURCE_EXHAUSTED only with
 * RetryInfo; the RetryInfo delay is honoured. UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND, UNIMPLEMENTED,
 * INTERNAL and UNKNOWN (what a gateway answers for HTTP 401, 403, 404 and 5xx) are retried within
 * forward.retry.maxElapsedTime, like the HTTP exporter's 401/403/404/500, and so is a failed TLS handshake (grpc-js
 * reports it as UNAVAILABLE, which would otherwise be retried forever). Any other code is permanent. An https://
 * endpoint speaks TLS with forward.tls.* (CA, client certificate, server name, lowest version), a new channel
 * taking rotated files.
 */
import { createSecureContext } from 'node:tls';
import { Client, Metadata, credentials, status as GrpcStatus, type ChannelCredentials, type ChannelOptions, type ServiceError } from '@grpc/grpc-js';
import { DEFAULT_CLIENT_MIN_VERSION, tlsFailure, type ClientTlsCredentials } from '../net/tls.ts';
import { decodePartialSuccess, type Encoding } from '../otlp/encode.ts';
import { STATUS_DETAILS_KEY, retryDelayFromStatus } from '../otlp/grpc-status.ts';
import type { Signal } from '../pipeline/consumer.ts';
import { safeEndpoint } from '../net/otlp-url.ts';
import { secretScrubber } from '../net/endpoint-secrets.ts';
import { scrubbedResult, type ExportItem, type ExportResult, type Exporter } from './exporter.ts';
import { networkErrorWords } from '../../../shared/src/network-error.ts';

export interface GrpcExporterOptions {
  /** http://host:4317 (plaintext) or https://host:4317 (TLS), as in OTEL_EXPORTER_OTLP_ENDPOINT. */
  endpoint: string;
  headers: Record<string, string>;
  compression: 'gzip' | 'none';
  timeoutMs: number;
  /** forward.tls.* for an https:// endpoint: a CA, a client certificate, the server name; absent for the system's defaults. */
  tls?: ClientTlsCredentials;
}

const PATHS: Record<Signal, string> = {
  logs: '/opentelemetry.proto.collector.logs.v1.LogsService/Export',
  metrics: '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export',
  traces: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
};

const RETRYABLE = new Set<number>([GrpcStatus.CANCELLED, GrpcStatus.DEADLINE_EXCEEDED, GrpcStatus.ABORTED, GrpcStatus.OUT_OF_RANGE, GrpcStatus.UNAVAILABLE, GrpcStatus.DATA_LOSS]);

/** Codes an operator can usually fix (a key, a route, a deploy): retried for a bounded time. */
const MAYBE_PERMANENT = new Set<number>([GrpcStatus.UNAUTHENTICATED, GrpcStatus.PERMISSION_DENIED, GrpcStatus.NOT_FOUND, GrpcStatus.UNIMPLEMENTED, GrpcStatus.INTERNAL, GrpcStatus.UNKNOWN]);

/** What grpc-js says of a connection reset or closed while a call was in flight. */
const CUT_OFF = /ECONNRESET|EPIPE|Connection dropped|socket hang up|Stream refused/i;

/**
 * What grpc-js says when it stops reading an answer over its receive limit (4 MiB, grpc-js' default, named in the
 * text), before or after gunzip. Only an OK answer carries a message, so after response headers this is the
 * client's limit, not the destination's; a destination or proxy with a limit of its own names its own.
 */
const ANSWER_OVER_LIMIT = /^Received message (larger than max \(\d+ vs 4194304\)|that decompresses to a size larger than 4194304)$/;

const identity = (b: Buffer): Buffer => b;

/** Turns an endpoint URL (or bare host:port) into a grpc-js target and whether to use TLS. */
export function grpcTarget(endpoint: string): { target: string; tls: boolean } {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(endpoint)) return { target: endpoint, tls: false };
  const url = new URL(endpoint);
  return { target: url.host, tls: url.protocol === 'https:' };
}

/**
 * grpc-js's UNAVAILABLE of a connection it could not make (`No connection established. Last error: Error: connect
 * ECONNREFUSED 127.0.0.1:4317. ...`) in words, with the code and the address it names; undefined for any other.
 */
function unreachedWords(details: string): string | undefined {
  const m = /^No connection established\. Last error: (?:Error(?: \[\w+\])?: )?(?:[a-z]+ )?([A-Z][A-Z0-9_]+)(?: (\[[0-9a-fA-F:.]+\]:\d+|[\w.-]+:\d+))?/.exec(details);
  return m?.[1] ? networkErrorWords(m[1], m[2]) : undefined;
}

export class GrpcExporter implements Exporter {
  readonly description: string;
  readonly timeoutMs: number;
  private readonly opts: GrpcExporterOptions;
  private readonly target: string;
  private readonly secure: boolean;
  private client: Client;
  /** The forward.tls generation the client was made with: rotated files get a new channel. */
  private generation: number;
  private closed = false;
  /** Takes the endpoint's credentials and the metadata values out of what the destination answers. */
  readonly scrub: (text: string) => string;

  constructor(opts: GrpcExporterOptions) {
    this.opts = opts;
    this.description = `${safeEndpoint(opts.endpoint)} (grpc)`;
    this.scrub = secretScrubber(opts.endpoint, opts.headers);
    this.timeoutMs = opts.timeoutMs;
    const { target, tls } = grpcTarget(opts.endpoint);
    this.target = target;
    this.secure = tls;
    this.generation = opts.tls?.generation ?? 0;
    this.client = this.makeClient();
  }

  private makeClient(): Client {
    const tls = this.opts.tls?.connectOptions();
    let channelCredentials: ChannelCredentials = credentials.createInsecure();
    if (this.secure) {
      // A secure context of its own, as createSsl takes no lowest TLS version (forward.tls.minVersion).
      const context = createSecureContext({ ...(tls?.ca ? { ca: tls.ca } : {}), ...(tls?.cert && tls.key ? { cert: tls.cert, key: tls.key } : {}), minVersion: tls?.minVersion ?? DEFAULT_CLIENT_MIN_VERSION });
      channelCredentials = credentials.createFromSecureContext(context, { rejectUnauthorized: tls?.rejectUnauthorized ?? true });
    }
    const options: ChannelOptions = {
      // 2 = gzip in grpc-js's compression algorithm enum.
      ...(this.opts.compression === 'gzip' ? { 'grpc.default_compression_algorithm': 2 } : {}),
      // The queue already holds a large request; let the downstream decide its own limit.
      'grpc.max_send_message_length': -1,
      // forward.tls.serverName: the name checked in the certificate and sent as SNI.
      ...(this.secure && tls?.servername ? { 'grpc.ssl_target_name_override': tls.servername } : {}),
    };
    return new Client(this.target, channelCredentials, options);
  }

  /** The client for forward.tls as it is now; the old channel has no call in flight (one attempt at a time). */
  private current(): Client {
    const generation = this.opts.tls?.generation ?? 0;
    if (generation !== this.generation) {
      this.client.close();
      this.generation = generation;
      this.client = this.makeClient();
    }
    return this.client;
  }

  accepts(encoding: Encoding): boolean {
    return encoding === 'protobuf';
  }

  async export(item: ExportItem, signal?: AbortSignal): Promise<ExportResult> {
    return scrubbedResult(await this.attempt(item, signal), this.scrub);
  }

  private attempt(item: ExportItem, signal?: AbortSignal): Promise<ExportResult> {
    if (item.encoding !== 'protobuf') {
      return Promise.resolve({ kind: 'permanent', message: 'OTLP/JSON cannot be sent over gRPC unchanged' });
    }
    const metadata = new Metadata();
    for (const [k, v] of Object.entries(this.opts.headers)) metadata.set(k.toLowerCase(), v);
    return new Promise<ExportResult>((resolve) => {
      // Response headers came: the destination began an answer with a message (a refusal is trailers only).
      let answering = false;
      const call = this.current().makeUnaryRequest(PATHS[item.signal], identity, identity, item.body, metadata, { deadline: Date.now() + this.opts.timeoutMs }, (err: ServiceError | null, response?: Buffer) => {
        if (!err) {
          const partial = Buffer.isBuffer(response) ? decodePartialSuccess('protobuf', response) : undefined;
          resolve(partial ? { kind: 'success', partial } : { kind: 'success' });
          return;
        }
        if (err.code === GrpcStatus.RESOURCE_EXHAUSTED && answering && ANSWER_OVER_LIMIT.test(err.details)) {
          // The destination took the request and answered OK with a message over grpc-js's receive limit, left
          // unread (like an HTTP answer past its first 64 KiB): delivered, whatever partial success it held.
          // Refused or retried, it would be sent again, a duplicate.
          resolve({ kind: 'success' });
          return;
        }
        const details = err.metadata?.get(STATUS_DETAILS_KEY)[0];
        const retryAfterMs = Buffer.isBuffer(details) ? retryDelayFromStatus(details) : undefined;
        // grpc-js reports a failed handshake as UNAVAILABLE, the TLS error only in its text.
        const tls = err.code === GrpcStatus.UNAVAILABLE && this.secure ? tlsFailure({ message: err.details }) : undefined;
        if (tls) {
          resolve({ kind: 'retryable', message: `TLS with ${this.description} failed: ${tls}`.slice(0, 500), status: err.code, bounded: true, tls: true });
          return;
        }
        // Scrubbed before it is cut, so that a key across the cut does not leave its first half. A connection that
        // could not be made is no answer: said in words, as the HTTP exporter says it.
        const unreached = err.code === GrpcStatus.UNAVAILABLE ? unreachedWords(err.details) : undefined;
        const message = (unreached ? `cannot reach ${this.description}: ${unreached}` : `${this.description} answered ${GrpcStatus[err.code] ?? err.code}: ${this.scrub(err.details)}`).slice(0, 500);
        if (RETRYABLE.has(err.code) || (err.code === GrpcStatus.RESOURCE_EXHAUSTED && retryAfterMs !== undefined)) {
          // A connection dropped under the call (grpc-js: UNAVAILABLE, "Connection dropped" or the socket's error).
          const cutOff = err.code === GrpcStatus.UNAVAILABLE && CUT_OFF.test(err.details);
          resolve({ kind: 'retryable', message, status: err.code, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}), ...(err.code === GrpcStatus.DEADLINE_EXCEEDED ? { timedOut: true } : {}), ...(cutOff ? { cutOff } : {}) });
        } else if (MAYBE_PERMANENT.has(err.code)) {
          resolve({ kind: 'retryable', message, status: err.code, bounded: true, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
        } else {
          // RESOURCE_EXHAUSTED without RetryInfo: over the destination's message size limit (grpc.max_receive_message_length).
          resolve({ kind: 'permanent', message, status: err.code, ...(err.code === GrpcStatus.RESOURCE_EXHAUSTED ? { tooLarge: true } : {}) });
        }
      });
      call.on('metadata', () => (answering = true));
      // Cancelled, the call ends with CANCELLED: retryable, the request stays queued.
      if (signal?.aborted) call.cancel();
      else signal?.addEventListener('abort', () => call.cancel(), { once: true });
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.client.close();
  }
}
