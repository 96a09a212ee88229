/**
 * Failed TLS handshakes on hookwatch's listeners (OTLP/HTTP, OTLP/gRPC, the HTTP port), as clients cause them:
 * without a client certificate, with one from another CA, below the lowest TLS version, in plain text, and a
 * client that refuses the served certificate with an alert. Each is counted in /metrics by listener and reason,
 * every reason is there at 0 from the start, a TCP check that sends nothing is not counted, and the log says so
 * at most once a minute per listener with the peer's address.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { connect, type ConnectionOptions } from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { HANDSHAKE_FAILURE_REASONS, TLS_LISTENERS, handshakeFailureReason } from '../src/net/handshake-failures.ts';
import type { Logger } from '../src/telemetry/logger.ts';
import { HAVE_OPENSSL, pemBody, useTestPki, type CertFiles } from './support/certs.ts';
import { parseExposition, sampleValue } from './support/prometheus-text.ts';
import { startServiceUnderTest, type ServiceUnderTest } from './support/service.ts';

const portOf = (url: string): number => Number(new URL(url).port);

/** Opens a TLS connection and resolves once it is over, whatever became of it. */
function attempt(port: number, opts: ConnectionOptions): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', ALPNProtocols: ['h2', 'http/1.1'], ...opts });
    socket.on('error', () => {});
    socket.on('close', () => resolve());
    // A connection the server let through (it should not) is ended after a moment.
    setTimeout(() => socket.destroy(), 2000).unref();
  });
}

/** Plain text to a TLS port; or, with `bytes` empty, a TCP check that connects and closes. */
function plain(port: number, bytes: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = netConnect(port, '127.0.0.1', () => (bytes ? socket.write(bytes) : socket.end()));
    socket.on('error', () => {});
    socket.on('close', () => resolve());
    setTimeout(() => socket.destroy(), 2000).unref();
  });
}

/**
 * openssl s_client trusting `caFile` only: on a certificate it does not trust it sends the server an alert (Node's
 * own client just closes the connection). Run alongside: the server answering it is in this process.
 */
function refusingClient(port: number, caFile: string, cert: CertFiles): Promise<void> {
  return new Promise((resolve) => {
    const child = spawn('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', 'localhost', '-CAfile', caFile, '-verify_return_error', '-cert', cert.certFile, '-key', cert.keyFile, '-alpn', 'h2,http/1.1'], { stdio: ['ignore', 'ignore', 'ignore'], timeout: 10_000 });
    child.on('close', () => resolve());
    child.on('error', () => resolve());
  });
}

function recordingLogger(): { logger: Logger; lines: { level: string; msg: string; fields: Record<string, unknown> }[] } {
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>): void => void lines.push({ level, msg, fields: fields ?? {} });
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

it('a handshake error is given its reason', () => {
  expect(handshakeFailureReason({ code: 'ERR_SSL_PEER_DID_NOT_RETURN_A_CERTIFICATE' })).toBe('no_client_certificate');
  expect(handshakeFailureReason({ code: 'ECONNRESET' }, 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY')).toBe('bad_client_certificate');
  expect(handshakeFailureReason({ code: 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA' })).toBe('server_certificate_refused');
  expect(handshakeFailureReason({ code: 'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE' })).toBe('server_certificate_refused');
  expect(handshakeFailureReason({ code: 'ERR_SSL_UNSUPPORTED_PROTOCOL' })).toBe('protocol_version');
  expect(handshakeFailureReason({ code: 'ERR_SSL_HTTP_REQUEST' })).toBe('not_tls');
  expect(handshakeFailureReason({ code: 'ERR_TLS_HANDSHAKE_TIMEOUT' })).toBe('other');
  expect(handshakeFailureReason({ code: 'ECONNRESET' }, null)).toBe('other');
});

describe.skipIf(!HAVE_OPENSSL)('failed TLS handshakes on the listeners', () => {
  const pki = useTestPki('hookwatch-tls-handshakes-');
  let service: ServiceUnderTest | undefined;
  afterAll(async () => {
    await service?.close();
  });

  it('are counted by listener and reason from 0, a silent TCP check is not, and logged once a minute per listener with the peer', { timeout: 60_000 }, async () => {
    const { logger, lines } = recordingLogger();
    const mutual = (prefix: string): Record<string, string> => ({ [`${prefix}_CERT_FILE`]: pki.server.certFile, [`${prefix}_KEY_FILE`]: pki.server.keyFile, [`${prefix}_CLIENT_CA_FILE`]: pki.ca.certFile, [`${prefix}_MIN_VERSION`]: '1.3' });
    service = await startServiceUnderTest({ ...mutual('HOOKWATCH_OTLP_TLS'), ...mutual('HOOKWATCH_HTTP_TLS') }, logger);
    const s = service;
    const ports = { otlp_http: portOf(s.otlpHttpUrl), otlp_grpc: portOf(s.otlpGrpcUrl), http: portOf(s.httpUrl) } as const;
    const value = async (listener: string, reason: string): Promise<number | undefined> => sampleValue(parseExposition(await s.metrics.render()), 'hookwatch_tls_handshake_failures_total', { listener, reason });

    // Every reason of every listener, before any handshake failed.
    for (const listener of TLS_LISTENERS) for (const reason of HANDSHAKE_FAILURE_REASONS) expect(await value(listener, reason), `${listener} ${reason}`).toBe(0);

    const trusted = readFileSync(pki.ca.certFile);
    for (const port of Object.values(ports)) {
      await plain(port, '');
      await attempt(port, { ca: trusted });
      await attempt(port, { ca: trusted, cert: readFileSync(pki.stranger.certFile), key: readFileSync(pki.stranger.keyFile) });
      await attempt(port, { ca: trusted, cert: readFileSync(pki.client.certFile), key: readFileSync(pki.client.keyFile), maxVersion: 'TLSv1.2' });
      await plain(port, 'POST /v1/logs HTTP/1.1\r\nHost: localhost\r\n\r\n');
      await refusingClient(port, pki.other.certFile, pki.client);
      // And one that succeeds is no failure.
      await attempt(port, { ca: trusted, cert: readFileSync(pki.client.certFile), key: readFileSync(pki.client.keyFile) });
    }
    for (const listener of TLS_LISTENERS) {
      await expect.poll(() => value(listener, 'not_tls'), { timeout: 5000 }).toBe(1);
      expect(await value(listener, 'no_client_certificate'), listener).toBe(1);
      expect(await value(listener, 'bad_client_certificate'), listener).toBe(1);
      expect(await value(listener, 'protocol_version'), listener).toBe(1);
      expect(await value(listener, 'server_certificate_refused'), listener).toBe(1);
      // The TCP check sent nothing; the successful handshake is none either.
      expect(await value(listener, 'other'), listener).toBe(0);
    }

    // The first failure of each listener is logged, the rest of the minute counted only.
    const logged = lines.filter((l) => l.msg.includes('TLS handshake with a client failed'));
    expect(logged.map((l) => l.fields['listener']).sort()).toEqual(['http', 'otlp_grpc', 'otlp_http']);
    for (const l of logged) {
      expect(l.level).toBe('warn');
      expect(l.fields).toMatchObject({ peer: expect.stringMatching(/^127\.0\.0\.1:\d+$/), reason: 'no_client_certificate', failedHandshakes: 1 });
    }
    expect(logged.find((l) => l.fields['listener'] === 'http')?.msg).toMatch(/^http\.tls: /);
    const all = JSON.stringify(lines);
    for (const file of [pki.server.keyFile, pki.client.keyFile, pki.stranger.keyFile]) expect(all).not.toContain(pemBody(file));
  });
});
