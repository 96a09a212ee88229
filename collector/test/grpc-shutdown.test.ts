/**
 * A stop is not held by a connection to the OTLP/gRPC port that never starts a call: a TCP connection that
 * says nothing (a load balancer's check), or, with otlp.tls, a TLS handshake that is never finished. grpc-js's
 * own shutdown waits for every connection; such a one is closed once open NEW_CONNECTION_GRACE_MS, as the HTTP
 * ports close theirs, instead of holding the stop until the forced end 10 s later.
 */
import { connect as netConnect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { NEW_CONNECTION_GRACE_MS } from '../src/net/close-server.ts';
import { HAVE_OPENSSL, useTestPki } from './support/certs.ts';
import { startServiceUnderTest } from './support/service.ts';

describe.skipIf(!HAVE_OPENSSL)('stopping with a silent connection to the OTLP/gRPC port', () => {
  const pki = useTestPki('hookwatch-grpc-stop-');

  for (const tls of [false, true]) {
    it(`${tls ? 'with otlp.tls, an unfinished handshake' : 'in plain text, a silent TCP connection'} is closed after the grace and the stop ends`, { timeout: 30_000 }, async () => {
      // A request timeout far past the bound: only the stop's own rule can close the connection in time.
      const env: Record<string, string> = { HOOKWATCH_OTLP_REQUEST_TIMEOUT: '60s', ...(tls ? { HOOKWATCH_OTLP_TLS_CERT_FILE: pki.server.certFile, HOOKWATCH_OTLP_TLS_KEY_FILE: pki.server.keyFile } : {}) };
      const service = await startServiceUnderTest(env);
      const socket = netConnect(Number(new URL(service.otlpGrpcUrl).port), '127.0.0.1');
      socket.on('error', () => {});
      let closedAtMs: number | undefined;
      socket.on('close', () => {
        closedAtMs = performance.now();
      });
      await new Promise((resolve) => socket.once('connect', resolve));
      // With TLS: the first bytes of a ClientHello, and nothing more.
      if (tls) socket.write(Buffer.from([0x16, 0x03, 0x01, 0x00, 0xc8, 0x01]));
      const t0 = performance.now();
      try {
        await service.close();
        const tookMs = performance.now() - t0;
        // Far below the 10 s grpc-js's forced end would take (margin for a busy machine).
        expect(tookMs).toBeLessThan(NEW_CONNECTION_GRACE_MS + 3000);
        // The client read nothing (not even the server's HTTP/2 settings) until now; then it sees the close.
        socket.resume();
        await expect.poll(() => closedAtMs, { timeout: 2000 }).toBeDefined();
      } finally {
        socket.destroy();
      }
    });
  }
});
