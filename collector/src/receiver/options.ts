/**
 * What both OTLP receivers (HTTP and gRPC) are given and what they count: one definition, so the limits,
 * authentication and in-flight budget mean the same on either transport.
 */
import type { LogsConsumer, PassThroughConsumer } from '../pipeline/consumer.ts';
import type { TlsCredentials } from '../net/tls.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { InflightBudget } from './inflight.ts';

export interface OtlpReceiverOptions {
  addr: string;
  /** Largest request after decompression (413 over OTLP/HTTP, RESOURCE_EXHAUSTED over gRPC). */
  maxRequestBytes: number;
  /** A request not fully received within this long is ended (over gRPC: counted from its headers, DEADLINE_EXCEEDED). */
  requestTimeoutMs: number;
  /** Empty: no authentication. Otherwise `authorization: Bearer <token>` (an HTTP header or gRPC metadata). */
  ingestToken: string;
  /** otlp.tls: serve TLS (mutual TLS with a client CA) with these files, re-read as they rotate; absent: plain text. */
  tls?: TlsCredentials;
  /** http.allowedHosts: names the OTLP/HTTP port answers to while it listens on loopback (net/allowed-hosts.ts). */
  allowedHosts?: readonly string[];
  /** Shared by both receivers: bytes of requests held in memory at once. */
  inflight: InflightBudget;
  logs: LogsConsumer;
  passThrough: PassThroughConsumer;
  logger: Logger;
}

/** Counters for /metrics and tests: requests by signal and outcome, rejections by reason. */
export interface ReceiverStats {
  requests: Record<string, number>;
  rejected: Record<string, number>;
}
