/**
 * How long a client may take to send a request on an HTTP port (the OTLP/HTTP receiver's, otlp.requestTimeout;
 * the API's, http.requestTimeout), so that one sending its headers or body slowly cannot hold a connection open
 * for Node's defaults (headers 60 s, request 300 s, checked every 30 s). Only the request is bounded: an answer
 * that takes long to compute (a 30-day query) is not cut off.
 */
import type { ServerOptions } from 'node:http';

/** node:http server options that end a request not received within `requestTimeoutMs` with 408 and a closed connection. */
export function slowClientLimits(requestTimeoutMs: number): Pick<ServerOptions, 'requestTimeout' | 'headersTimeout' | 'connectionsCheckingInterval'> {
  return {
    requestTimeout: requestTimeoutMs,
    headersTimeout: Math.min(requestTimeoutMs, 60_000),
    // Node checks the timeouts above only every connectionsCheckingInterval (30 s by default), which let a
    // slow client hold its connection up to 30 s past the bound; check at least every second.
    connectionsCheckingInterval: Math.min(1000, requestTimeoutMs / 2),
  };
}

/** A TLS client that never finishes its handshake is cut off like one that never finishes its request. */
export function handshakeTimeout(requestTimeoutMs: number): number {
  return Math.min(requestTimeoutMs, 120_000);
}
