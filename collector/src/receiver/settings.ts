/**
 * The OTLP receivers' settings (`otlp.*`): where they listen, how big and slow a request may be, the ingest
 * token, TLS and the in-flight byte budget both ports share. A leaf: config/ composes these rows into the one table.
 */
import { ConfigError, type Setting, type SettingValues } from '../config/setting.ts';
import { formatSize } from '../config/values.ts';
import { bearerTokenProblem, keepAliveSetting, tlsConfig, tlsSettings, type TlsConfig } from '../net/settings.ts';

const MiB = 1024 * 1024;
const DAY = 86_400_000;

export const RECEIVER_SETTINGS: readonly Setting[] = [
  {
    key: 'otlp.http.addr', env: 'HOOKWATCH_OTLP_HTTP_ADDR', type: 'addr', default: '127.0.0.1:4318',
    description: 'Where the OTLP/HTTP receiver listens (POST /v1/logs, /v1/metrics, /v1/traces). Use 0.0.0.0:4318 to accept other hosts.',
  },
  keepAliveSetting('otlp.http.keepAliveTimeout', 'HOOKWATCH_OTLP_HTTP_KEEP_ALIVE_TIMEOUT', 'the OTLP/HTTP port'),
  {
    key: 'otlp.maxRequestBytes', env: 'HOOKWATCH_OTLP_MAX_REQUEST_BYTES', type: 'bytes', default: 20 * MiB, min: 1024, max: 1024 * MiB,
    description: 'Largest OTLP request accepted, measured after decompression (413 / RESOURCE_EXHAUSTED over it).',
  },
  {
    key: 'otlp.requestTimeout', env: 'HOOKWATCH_OTLP_REQUEST_TIMEOUT', type: 'duration', default: 30_000, min: 1000, max: 600_000,
    description: 'Time a client has to send a whole request; slower clients are cut off so they cannot hold connections open. While other requests are refused otlp.maxInflightBytes (within the last 10s), a body (gRPC: message) still arriving after 5s is cut off sooner (503 with Retry-After / UNAVAILABLE, so the client sends it again) when it averages under 8KiB/s, or when its declared size could not arrive within this even at twice its rate so far. On the gRPC port, a connection that starts no call within it (at most 60s, as the headers of an OTLP/HTTP request) is closed, with an HTTP/2 GOAWAY first; a client reconnects for its next export.',
  },
  {
    key: 'otlp.maxPendingRequests', env: 'HOOKWATCH_OTLP_MAX_PENDING_REQUESTS', type: 'int', default: 64, min: 1, max: 100_000,
    description: 'Requests waiting for the store at once; above it hookwatch answers 503 with Retry-After instead of queueing without bound.',
  },
  {
    key: 'otlp.maxFutureSkew', env: 'HOOKWATCH_OTLP_MAX_FUTURE_SKEW', type: 'duration', default: 300_000, min: 0, max: DAY,
    description: 'A hook record stamped further than this ahead of the receive time (a client clock running ahead) is stored at the receive time instead, and the OTLP partial-success message says how many were clamped. Ahead is judged by the clock of the replica that receives it; retention deletes by age only, so what was accepted is kept.',
  },
  {
    key: 'otlp.ingestToken', env: 'HOOKWATCH_INGEST_TOKEN', type: 'string', default: '', secret: true, validate: bearerTokenProblem,
    description: 'When set, OTLP requests need `Authorization: Bearer <token>` (401 otherwise). At least 16 characters of printable ASCII without white space at either end, e.g. from `openssl rand -hex 32`; a shorter token, or one no header can carry, is refused at start.',
  },
  {
    key: 'otlp.maxInflightBytes', env: 'HOOKWATCH_OTLP_MAX_INFLIGHT_BYTES', type: 'bytes', default: 256 * MiB, min: 1024, max: 64 * 1024 * MiB,
    description: 'Request bytes both OTLP receivers may hold in memory at once. Before reading, an HTTP request reserves the most its body can inflate to (Content-Length, x1032 when compressed, at most otlp.maxRequestBytes; a chunked body what has arrived, as it arrives) and a gRPC call, once the length prefix of its message is read, twice the length it declares (a compressed message, once whole, twice otlp.maxRequestBytes), then keeps its real size, and what it decodes to (a log record about 256 bytes, an attribute 64), until answered; one request may decode to at most half of this (past it: 413 / RESOURCE_EXHAUSTED). Past it requests get 503 / UNAVAILABLE with Retry-After instead of growing memory. A gRPC call gets UNAVAILABLE too when it would take the calls of its connection past half of this (its first call always gets in), so that one client cannot hold it all. At least twice otlp.maxRequestBytes (the default grows to that when otlp.maxRequestBytes is raised past 128MiB).',
  },
  {
    key: 'otlp.grpc.addr', env: 'HOOKWATCH_OTLP_GRPC_ADDR', type: 'addr', default: '127.0.0.1:4317',
    description: 'Where the OTLP/gRPC receiver listens (LogsService, MetricsService, TraceService Export; gzip accepted). Use 0.0.0.0:4317 to accept other hosts.',
  },
  ...tlsSettings('otlp.tls', 'HOOKWATCH_OTLP_TLS', 'both OTLP ports', 'https, and TLS for gRPC'),
];

export interface ReceiverSettings {
  otlp: {
    http: { addr: string; keepAliveTimeoutMs: number };
    maxRequestBytes: number;
    requestTimeoutMs: number;
    maxPendingRequests: number;
    maxFutureSkewMs: number;
    ingestToken: string;
    maxInflightBytes: number;
    /** TLS on both receivers; undefined: plain text. */
    tls: TlsConfig | undefined;
  };
  /** OTLP/gRPC receiver. */
  otlpGrpc: { addr: string };
}

export function receiverConfig(r: SettingValues): ReceiverSettings {
  const maxRequestBytes = r.number('otlp.maxRequestBytes');
  return {
    otlp: {
      http: { addr: r.string('otlp.http.addr'), keepAliveTimeoutMs: r.number('otlp.http.keepAliveTimeout') },
      maxRequestBytes,
      requestTimeoutMs: r.number('otlp.requestTimeout'),
      maxPendingRequests: r.number('otlp.maxPendingRequests'),
      maxFutureSkewMs: r.number('otlp.maxFutureSkew'),
      ingestToken: r.string('otlp.ingestToken'),
      maxInflightBytes: inflightBytes(r.number('otlp.maxInflightBytes'), maxRequestBytes, r.isDefault('otlp.maxInflightBytes')),
      tls: tlsConfig(r, 'otlp.tls'),
    },
    otlpGrpc: { addr: r.string('otlp.grpc.addr') },
  };
}

/**
 * A budget below one gRPC call's reservation (twice the largest request) would refuse every gRPC call: an
 * explicit one is refused at start; the default grows with a raised otlp.maxRequestBytes.
 */
function inflightBytes(inflight: number, maxRequest: number, isDefault: boolean): number {
  if (isDefault) return Math.max(inflight, 2 * maxRequest);
  if (inflight < 2 * maxRequest) throw new ConfigError(`otlp.maxInflightBytes (${formatSize(inflight)}) must be at least twice otlp.maxRequestBytes (${formatSize(maxRequest)}): set it to ${formatSize(2 * maxRequest)} or more`);
  return inflight;
}
