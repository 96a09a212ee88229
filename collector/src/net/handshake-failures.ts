/**
 * Failed TLS handshakes on hookwatch's own listeners (otlp.tls on the OTLP/HTTP and OTLP/gRPC ports, http.tls on
 * the HTTP port), counted by listener and by a small fixed set of reasons for /metrics
 * (hookwatch_tls_handshake_failures_total), and logged at most once a minute per listener with the peer's address.
 * After a certificate rotation this is where a client that no longer trusts the served certificate, or a client
 * certificate the client CA does not sign, shows up: nothing of it reaches a request counter, because no request
 * is ever read.
 *
 * A TCP connection closed before it sent a byte (a load balancer's or Kubernetes' TCP check) is no handshake and
 * is not counted. Nothing of a handshake's material is logged: the peer, the reason and OpenSSL's error code.
 */
import type { Socket } from 'node:net';
import type { Server as TlsServer, TLSSocket } from 'node:tls';
import type { Logger } from '../telemetry/logger.ts';
import type { MetricsRegistry } from '../telemetry/metrics.ts';

/** The listeners that can serve TLS, as /metrics names them. */
export const TLS_LISTENERS = ['otlp_http', 'otlp_grpc', 'http'] as const;
export type TlsListener = (typeof TLS_LISTENERS)[number];

/** The setting each listener's TLS comes from, for log lines. */
const SECTION: Record<TlsListener, string> = { otlp_http: 'otlp.tls', otlp_grpc: 'otlp.tls', http: 'http.tls' };

/**
 * Why a handshake failed:
 * - no_client_certificate: mutual TLS, and the client sent none;
 * - bad_client_certificate: the client's certificate is not signed by the client CA, is out of date or unusable;
 * - server_certificate_refused: the client said (a TLS alert) that it does not accept the served certificate;
 * - protocol_version: no TLS version both sides allow (a client below otlp.tls.minVersion / http.tls.minVersion);
 * - not_tls: the client spoke plain text (an http:// URL for an https:// port; a plain-HTTP request is answered 400
 *   first, see plain-http-on-tls.ts);
 * - other: anything else (a client that hung up mid-handshake, no common cipher, the handshake timeout).
 */
export const HANDSHAKE_FAILURE_REASONS = ['no_client_certificate', 'bad_client_certificate', 'server_certificate_refused', 'protocol_version', 'not_tls', 'other'] as const;
export type HandshakeFailureReason = (typeof HANDSHAKE_FAILURE_REASONS)[number];

const LOG_INTERVAL_MS = 60_000;

const NOT_TLS_CODES = new Set(['ERR_SSL_HTTP_REQUEST', 'ERR_SSL_HTTPS_PROXY_REQUEST', 'ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_SSL_PACKET_LENGTH_TOO_LONG', 'ERR_SSL_RECORD_LAYER_FAILURE']);
const VERSION_CODES = new Set(['ERR_SSL_UNSUPPORTED_PROTOCOL', 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION', 'ERR_SSL_VERSION_TOO_LOW', 'ERR_SSL_VERSION_TOO_HIGH']);
/** A client's alert refusing the served certificate (OpenSSL names it `..._ALERT_<what>`). */
const REFUSED_ALERT = /ALERT_(?:UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_UNKNOWN|CERTIFICATE_EXPIRED|CERTIFICATE_REVOKED|UNSUPPORTED_CERTIFICATE)$/;

/**
 * The reason for a handshake error on a listener. `authorizationError` is Node's verdict on the client's
 * certificate (set when mutual TLS refused it after OpenSSL's part of the handshake, where the error itself only
 * says the connection was closed).
 */
export function handshakeFailureReason(err: { code?: unknown; message?: unknown }, authorizationError?: unknown): HandshakeFailureReason {
  const code = typeof err.code === 'string' ? err.code : '';
  if (typeof authorizationError === 'string' && authorizationError !== '') return 'bad_client_certificate';
  if (code === 'ERR_SSL_PEER_DID_NOT_RETURN_A_CERTIFICATE' || code === 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED') return 'no_client_certificate';
  if (code === 'ERR_SSL_CERTIFICATE_VERIFY_FAILED') return 'bad_client_certificate';
  if (REFUSED_ALERT.test(code)) return 'server_certificate_refused';
  if (VERSION_CODES.has(code)) return 'protocol_version';
  if (NOT_TLS_CODES.has(code)) return 'not_tls';
  return 'other';
}

/** Counts of one listener, and what its log has not said yet. */
interface ListenerCounts {
  byReason: Record<HandshakeFailureReason, number>;
  lastLogMs: number;
  unlogged: number;
}

const zero = (): Record<HandshakeFailureReason, number> => Object.fromEntries(HANDSHAKE_FAILURE_REASONS.map((r) => [r, 0])) as Record<HandshakeFailureReason, number>;

/** The failed handshakes of every listener that serves TLS. */
export class HandshakeFailures {
  private readonly logger: Logger;
  private readonly now: () => number;
  private readonly listeners = new Map<TlsListener, ListenerCounts>();
  /** The peer of each TCP connection as it opened: once the handshake failed, the socket no longer knows it. */
  private readonly peers = new WeakMap<Socket, string>();

  constructor(opts: { logger: Logger; now?: () => number }) {
    this.logger = opts.logger;
    this.now = opts.now ?? Date.now;
  }

  /** The listeners watched, each counted from 0 by every reason. */
  watched(): TlsListener[] {
    return [...this.listeners.keys()];
  }

  /** Failed handshakes of `listener` by reason (all 0 for one not watched). */
  counts(listener: TlsListener): Readonly<Record<HandshakeFailureReason, number>> {
    return this.listeners.get(listener)?.byReason ?? zero();
  }

  /** Counts the failed handshakes of a TLS server (node:https, node:http2's secure server) as `listener`'s. */
  watch(listener: TlsListener, server: TlsServer): void {
    if (!this.listeners.has(listener)) this.listeners.set(listener, { byReason: zero(), lastLogMs: -Infinity, unlogged: 0 });
    server.on('connection', (socket: Socket) => {
      this.peers.set(socket, `${socket.remoteAddress ?? ''}:${socket.remotePort ?? ''}`);
    });
    server.on('tlsClientError', (err: Error, tlsSocket: TLSSocket) => {
      // Node's TCP socket under the TLS one: it knows whether the client sent anything at all.
      const tcp = (tlsSocket as TLSSocket & { _parent?: Socket | null })._parent ?? undefined;
      if (tcp && tcp.bytesRead === 0) return;
      const peer = (tcp && this.peers.get(tcp)) ?? (tlsSocket.remoteAddress ? `${tlsSocket.remoteAddress}:${tlsSocket.remotePort ?? ''}` : 'unknown');
      this.note(listener, handshakeFailureReason(err, tlsSocket.authorizationError), peer, (err as NodeJS.ErrnoException).code ?? err.name);
    });
  }

  /**
   * A plain-HTTP request on `listener`, answered 400 before any handshake (answerPlainHttp): counted as not_tls, and
   * logged as the other failures are, saying what the client did.
   */
  plainHttp(listener: TlsListener, socket: Socket): void {
    this.note(listener, 'not_tls', this.peerOf(socket), undefined, `${SECTION[listener]}: a client sent plain HTTP to this TLS port and was answered 400 (its URL says http:// where https:// is needed; logged at most once a minute; each is counted in hookwatch_tls_handshake_failures_total as not_tls)`);
  }

  /**
   * A connection to `listener` that ended, or reached the handshake timeout, while its first bytes were looked at
   * (answerPlainHttp: a method's letters, no space yet), with the error TLS would have failed its handshake with:
   * counted and logged as that failure.
   */
  failedBeforeHandshake(listener: TlsListener, socket: Socket, error: NodeJS.ErrnoException): void {
    this.note(listener, handshakeFailureReason(error), this.peerOf(socket), error.code ?? error.name);
  }

  private peerOf(socket: Socket): string {
    return this.peers.get(socket) ?? `${socket.remoteAddress ?? ''}:${socket.remotePort ?? ''}`;
  }

  private note(listener: TlsListener, reason: HandshakeFailureReason, peer: string, code: string | undefined, message?: string): void {
    const c = this.listeners.get(listener);
    if (!c) return;
    c.byReason[reason]++;
    c.unlogged++;
    const now = this.now();
    if (now - c.lastLogMs < LOG_INTERVAL_MS) return;
    c.lastLogMs = now;
    const text = message ?? `${SECTION[listener]}: a TLS handshake with a client failed (logged at most once a minute; each is counted in hookwatch_tls_handshake_failures_total)`;
    this.logger.warn(text, { listener, peer, reason, ...(code === undefined ? {} : { code }), failedHandshakes: c.unlogged });
    c.unlogged = 0;
  }
}

/** hookwatch_tls_handshake_failures_total: every reason of every listener serving TLS, at 0 from the start. */
export function registerHandshakeMetrics(metrics: MetricsRegistry, failures: HandshakeFailures): void {
  metrics.collectedCounter('tls', {
    name: 'hookwatch_tls_handshake_failures_total',
    help: 'TLS handshakes that failed on a listener serving TLS (otlp_http, otlp_grpc, http), by reason (no_client_certificate, bad_client_certificate, server_certificate_refused, protocol_version, not_tls, other).',
    labelNames: ['listener', 'reason'],
    collect: (set) => {
      for (const listener of failures.watched()) {
        const counts = failures.counts(listener);
        for (const reason of HANDSHAKE_FAILURE_REASONS) set({ listener, reason }, counts[reason]);
      }
    },
  });
}
