/**
 * What both OTLP receivers (HTTP and gRPC) are given and what they count: one definition, so the limits,
 * authentication and in-flight budget mean the same on either transport.
 */
import type { LogsConsumer, PassThroughConsumer } from '../pipeline/consumer.ts';
import { MAPPED_REJECT_REASONS } from '../pipeline/errors.ts';
import type { HandshakeFailures } from '../net/handshake-failures.ts';
import type { TlsCredentials } from '../net/tls.ts';
import type { JsonThread } from '../otlp/json-thread.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { InflightBudget } from './inflight.ts';
import type { OtlpRefusals } from './refusals.ts';

export interface OtlpReceiverOptions {
  addr: string;
  /** Largest request after decompression (413 over OTLP/HTTP, RESOURCE_EXHAUSTED over gRPC). */
  maxRequestBytes: number;
  /** A request not fully received within this long is ended (over gRPC: counted from its headers, DEADLINE_EXCEEDED). */
  requestTimeoutMs: number;
  /** OTLP/HTTP only (otlp.http.keepAliveTimeout): how long an idle kept-alive connection stays open; unset, KEEP_ALIVE_TIMEOUT_MS. */
  keepAliveTimeoutMs?: number;
  /** Empty: no authentication. Otherwise `authorization: Bearer <token>` (an HTTP header or gRPC metadata). */
  ingestToken: string;
  /** otlp.tls: serve TLS (mutual TLS with a client CA) with these files, re-read as they rotate; absent: plain text. */
  tls?: TlsCredentials;
  /** With tls: where the port's failed handshakes are counted (hookwatch_tls_handshake_failures_total). */
  handshakes?: HandshakeFailures;
  /** http.allowedHosts: names the OTLP/HTTP port answers to while it listens on loopback (net/allowed-hosts.ts). */
  allowedHosts?: readonly string[];
  /**
   * OTLP/HTTP only: the thread an OTLP/JSON body over JSON_THREAD_MIN_BYTES is parsed on (otlp/json-thread.ts),
   * stopped by whoever gave it; unset, the receiver starts its own with its first such body and stops it on shutdown.
   */
  jsonThread?: JsonThread;
  /**
   * OTLP/gRPC only: otlp.maxPendingRequests, the batches that may wait for the store at once. Held exports woken
   * together when the database answers again try no more at once than half of it (otlp-grpc/store-hold.ts).
   */
  maxPending?: number;
  /** Shared by both receivers: bytes of requests held in memory at once. */
  inflight: InflightBudget;
  logs: LogsConsumer;
  passThrough: PassThroughConsumer;
  logger: Logger;
  /**
   * OTLP/HTTP only: where the dashboard is (alerting.externalUrl, else the HTTP port's address; empty while not
   * known), named on the page a browser opened at this port gets.
   */
  dashboardUrl?: () => string;
  /**
   * OTLP/gRPC only: the port the OTLP/HTTP receiver listens on (undefined while not bound), named to a client that
   * sent OTLP/HTTP to the gRPC port; unset, its default is named.
   */
  otlpHttpPort?: () => number | undefined;
  /** Where both receivers log and keep their refusals (refusals.ts); unset, each keeps its own. */
  refusals?: OtlpRefusals;
}

/**
 * Every reason a receiver counts a refusal under, by transport: mapError's, and those the transport decides
 * itself (both: a request not received within otlp.requestTimeout, a client not speaking the port's protocol,
 * malformed, a path (over gRPC a method) or an HTTP method it does not serve, not_found and method_not_allowed,
 * a request the client stopped sending, client_aborted, and one whose body (over gRPC: message) arrived under the
 * minimum rate (body-rate.ts), request_too_slow; OTLP/HTTP: the other refusals of Node's HTTP parser,
 * under net/parser-refusals.ts's names (a request line and headers over 16 KiB, chunk extensions over 16 KiB), a
 * Host it does not serve, and an Expect it cannot meet). /metrics shows each of
 * them at 0 from the start: a series that first appears with its first refusal already counted has no earlier
 * sample, and increase() or rate() over it would miss that refusal.
 */
export const REJECT_REASONS = {
  http: [...MAPPED_REJECT_REASONS, 'request_timeout', 'header_overflow', 'chunk_extensions_overflow', 'malformed', 'not_found', 'host_not_allowed', 'method_not_allowed', 'expectation_failed', 'client_aborted', 'request_too_slow'],
  grpc: [...MAPPED_REJECT_REASONS, 'request_timeout', 'header_overflow', 'malformed', 'not_found', 'method_not_allowed', 'client_aborted', 'request_too_slow'],
} as const;
export type RejectReason = (typeof REJECT_REASONS)[keyof typeof REJECT_REASONS][number];

/**
 * How an OTLP/gRPC export held while the store was unavailable or hookwatch overloaded (otlp-grpc/store-hold.ts)
 * ended: committed (the store took the export: answered OK), unavailable (still not taken when the hold's time
 * was up, or hookwatch stopping: UNAVAILABLE), cancelled (the client cancelled, or its deadline passed), refused
 * (a later try failed otherwise than with the store unavailable or hookwatch overloaded, which are tried again:
 * answered as that error is).
 */
export const HOLD_OUTCOMES = ['committed', 'unavailable', 'cancelled', 'refused'] as const;
export type HoldOutcome = (typeof HOLD_OUTCOMES)[number];

/**
 * How often each port logs, at most, clients speaking the other port's protocol (an exporter given the wrong
 * protocol or port); each is counted as malformed.
 */
export const WRONG_PROTOCOL_LOG_INTERVAL_MS = 60_000;

/**
 * Counters for /metrics and tests: requests by signal and outcome, rejections by reason, and over OTLP/gRPC the
 * exports held while the store was unavailable or hookwatch overloaded, by how the hold ended (otlp-grpc/store-hold.ts).
 */
export interface ReceiverStats {
  requests: Record<string, number>;
  rejected: Partial<Record<RejectReason, number>>;
  held?: Record<HoldOutcome, number>;
}
