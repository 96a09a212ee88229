/**
 * forward.tls.* against real TLS destinations on loopback, over HTTP and gRPC: a private CA trusted through
 * caFile, a client certificate for mutual TLS, serverName, insecureSkipVerify, rotated files, and a handshake
 * that fails reported as such (and never with a key's text).
 */
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server as HttpsServer } from 'node:https';
import { createSecureServer } from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { Server as GrpcServer, ServerCredentials, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, toConfig } from '../config/index.ts';
import { ConfigError } from '../config/setting.ts';
import type { ClientTlsConfig } from '../net/settings.ts';
import { ClientTlsCredentials } from '../net/tls.ts';
import { silentLogger, type Logger } from '../telemetry/logger.ts';
import { tempDir } from '../../test/helpers.ts';
import { HAVE_OPENSSL, pemBody, useTestPki, type CertFiles } from '../../test/support/certs.ts';
import { isolatedEnv } from '../../test/support/service.ts';
import type { ExportResult, Exporter } from './exporter.ts';
import { GrpcExporter } from './exporter-grpc.ts';
import { HttpExporter } from './exporter-http.ts';

type Protocol = 'http/protobuf' | 'grpc';

/** A TLS destination that accepts every request and notes the client certificate's subject, if any. */
interface Destination {
  url: string;
  peers: string[];
  stop(): Promise<void>;
}

const identity = (b: Buffer): Buffer => b;

async function httpsDestination(server: CertFiles, clientCa?: string): Promise<Destination> {
  const peers: string[] = [];
  const s: HttpsServer = createServer({ cert: readFileSync(server.certFile), key: readFileSync(server.keyFile), ...(clientCa ? { ca: readFileSync(clientCa), requestCert: true, rejectUnauthorized: true } : {}) }, (req, res) => {
    peers.push(String((req.socket as TLSSocket).getPeerCertificate().subject?.CN ?? ''));
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(s.address() as AddressInfo).port}`,
    peers,
    stop: async () => {
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
}

async function grpcDestination(server: CertFiles, clientCa?: string): Promise<Destination> {
  const peers: string[] = [];
  const s = new GrpcServer();
  s.addService(
    { Export: { path: '/opentelemetry.proto.collector.logs.v1.LogsService/Export', requestStream: false, responseStream: false, requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity } },
    {
      Export: (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
        const cert = call.getAuthContext().sslPeerCertificate;
        peers.push(String(cert?.subject?.CN ?? ''));
        callback(null, Buffer.alloc(0));
      },
    },
  );
  const credentials = ServerCredentials.createSsl(clientCa ? readFileSync(clientCa) : null, [{ cert_chain: readFileSync(server.certFile), private_key: readFileSync(server.keyFile) }], clientCa !== undefined);
  const port = await new Promise<number>((resolve, reject) => s.bindAsync('127.0.0.1:0', credentials, (err, p) => (err ? reject(err) : resolve(p))));
  return { url: `https://127.0.0.1:${port}`, peers, stop: async () => void s.forceShutdown() };
}

/**
 * A destination that speaks TLS 1.2 at most, over HTTP/2 (gRPC) and HTTP/1.1, answering 200 to everything;
 * `handshakes` counts the TLS handshakes completed.
 */
async function tls12Destination(server: CertFiles): Promise<{ url: string; handshakes: () => number; stop(): Promise<void> }> {
  let handshakes = 0;
  const s = createSecureServer({ cert: readFileSync(server.certFile), key: readFileSync(server.keyFile), maxVersion: 'TLSv1.2', allowHTTP1: true }, (req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  s.on('secureConnection', () => handshakes++);
  const sockets = new Set<Socket>();
  s.on('connection', (socket: Socket) => sockets.add(socket));
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(s.address() as AddressInfo).port}`,
    handshakes: () => handshakes,
    stop: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
}

function recordingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>): void => void lines.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`);
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

const tls = (extra: Partial<ClientTlsConfig>): ClientTlsConfig => ({ section: 'forward.tls', caFile: '', certFile: '', keyFile: '', serverName: '', insecureSkipVerify: false, minVersion: '1.2', reloadIntervalMs: 1000, ...extra });

describe.skipIf(!HAVE_OPENSSL)('forward.tls', () => {
  const pki = useTestPki('hookwatch-forward-tls-');

  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function destination(protocol: Protocol, clientCa?: string): Promise<Destination> {
    const d = protocol === 'grpc' ? await grpcDestination(pki.server, clientCa) : await httpsDestination(pki.server, clientCa);
    cleanups.push(() => d.stop());
    return d;
  }

  function exporter(protocol: Protocol, url: string, config?: ClientTlsConfig, logger: Logger = silentLogger): { exporter: Exporter; credentials: ClientTlsCredentials | undefined } {
    const credentials = config ? ClientTlsCredentials.open(config, logger) : undefined;
    const common = { endpoint: url, headers: {}, compression: 'gzip' as const, timeoutMs: 5000, ...(credentials ? { tls: credentials } : {}) };
    const e = protocol === 'grpc' ? new GrpcExporter(common) : new HttpExporter({ ...common, protocol });
    cleanups.push(() => e.close(), () => credentials?.stop());
    return { exporter: e, credentials };
  }

  const send = (e: Exporter): Promise<ExportResult> => e.export({ signal: 'logs', encoding: 'protobuf', body: Buffer.alloc(0) });

  for (const protocol of ['http/protobuf', 'grpc'] as const) {
    describe(protocol, () => {
      it('trusts a destination signed by a private CA through caFile; without it the handshake fails, reported as TLS', async () => {
        const d = await destination(protocol);
        const untrusted = await send(exporter(protocol, d.url).exporter);
        expect(untrusted).toMatchObject({ kind: 'retryable', tls: true, bounded: true });
        expect((untrusted as { message: string }).message).toMatch(/^TLS with https:\/\/127\.0\.0\.1:\d+ \((http\/protobuf|grpc)\) failed: .*(unable to verify the first certificate|UNABLE_TO_VERIFY_LEAF_SIGNATURE)/);
        expect(await send(exporter(protocol, d.url, tls({ caFile: pki.ca.certFile })).exporter)).toEqual({ kind: 'success' });
        // Another CA does not vouch for the destination.
        expect(await send(exporter(protocol, d.url, tls({ caFile: pki.other.certFile })).exporter)).toMatchObject({ kind: 'retryable', tls: true });
      });

      it('presents the client certificate to a destination that requires one (mutual TLS)', async () => {
        const d = await destination(protocol, pki.ca.certFile);
        expect(await send(exporter(protocol, d.url, tls({ caFile: pki.ca.certFile, certFile: pki.client.certFile, keyFile: pki.client.keyFile })).exporter)).toEqual({ kind: 'success' });
        expect(d.peers).toEqual(['client']);
        // Without it the destination refuses the handshake; nothing is delivered.
        const refused = await send(exporter(protocol, d.url, tls({ caFile: pki.ca.certFile })).exporter);
        expect(refused.kind).toBe('retryable');
        expect(d.peers).toHaveLength(1);
      });

      it('checks the certificate against serverName, and not at all with insecureSkipVerify', async () => {
        const d = await destination(protocol);
        // The certificate names localhost and 127.0.0.1, not the name given.
        const misnamed = await send(exporter(protocol, d.url, tls({ caFile: pki.ca.certFile, serverName: 'otlp.example.com' })).exporter);
        expect(misnamed).toMatchObject({ kind: 'retryable', tls: true });
        expect((misnamed as { message: string }).message).toMatch(/otlp\.example\.com/);
        expect(await send(exporter(protocol, d.url, tls({ caFile: pki.ca.certFile, serverName: 'localhost' })).exporter)).toEqual({ kind: 'success' });
        const { logger, lines } = recordingLogger();
        expect(await send(exporter(protocol, d.url, tls({ insecureSkipVerify: true }), logger).exporter)).toEqual({ kind: 'success' });
        expect(lines.some((l) => l.startsWith('warn forward.tls.insecureSkipVerify is on'))).toBe(true);
      });

      it('with minVersion 1.3 refuses a destination that speaks TLS 1.2 at most, reported as TLS', async () => {
        const d = await tls12Destination(pki.server);
        cleanups.push(() => d.stop());
        const lenient = await send(exporter(protocol, d.url, tls({ caFile: pki.ca.certFile })).exporter);
        if (protocol === 'http/protobuf') expect(lenient).toEqual({ kind: 'success' });
        expect(d.handshakes()).toBe(1);
        const strict = await send(exporter(protocol, d.url, tls({ caFile: pki.ca.certFile, minVersion: '1.3' })).exporter);
        expect(strict).toMatchObject({ kind: 'retryable', tls: true, bounded: true });
        expect((strict as { message: string }).message).toMatch(/protocol version/);
        expect(d.handshakes()).toBe(1);
      });

      it('connects with a CA file rotated in place once it is read again, without a restart', async () => {
        const d = await destination(protocol);
        const dir = join(pki.dir, `rotate-${protocol.replace('/', '-')}`);
        mkdirSync(dir, { recursive: true });
        copyFileSync(pki.other.certFile, join(dir, 'ca.crt'));
        const { exporter: e, credentials } = exporter(protocol, d.url, tls({ caFile: join(dir, 'ca.crt') }));
        expect(await send(e)).toMatchObject({ kind: 'retryable', tls: true });
        copyFileSync(pki.ca.certFile, join(dir, 'ca.crt'));
        expect(await credentials?.reload()).toBe('reloaded');
        expect(await send(e)).toEqual({ kind: 'success' });
      });
    });
  }

  it('refuses files that cannot be used at start, naming the setting and the path, never the key', () => {
    const failure = (config: ClientTlsConfig): string => {
      try {
        ClientTlsCredentials.open(config, silentLogger);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        expect((err as Error).message).not.toContain(pemBody(pki.client.keyFile));
        return (err as Error).message;
      }
      throw new Error('opened');
    };
    const missing = join(pki.dir, 'missing.crt');
    expect(failure(tls({ caFile: missing }))).toBe(`forward.tls.caFile ${missing}: cannot read it (ENOENT)`);
    expect(failure(tls({ caFile: pki.client.keyFile }))).toBe(`forward.tls.caFile ${pki.client.keyFile}: no PEM certificate in it`);
    expect(failure(tls({ certFile: pki.client.certFile, keyFile: pki.server.keyFile }))).toBe(`forward.tls.keyFile ${pki.server.keyFile} is not the key of the certificate in forward.tls.certFile ${pki.client.certFile}`);
    expect(failure(tls({ certFile: pki.client.keyFile, keyFile: pki.client.certFile }))).toBe(`forward.tls.certFile ${pki.client.keyFile}: no PEM certificate in it`);
  });

  it('is read from the settings, and refused with an endpoint that speaks no TLS', () => {
    const dir = tempDir('hookwatch-forward-tls-config-');
    cleanups.push(() => dir.cleanup());
    const config = (env: Record<string, string>): ReturnType<typeof toConfig> => toConfig(loadConfig({ env: { ...isolatedEnv(dir.dir), ...env } }));
    const files = { HOOKWATCH_FORWARD_TLS_CA_FILE: pki.ca.certFile, HOOKWATCH_FORWARD_TLS_CERT_FILE: pki.client.certFile, HOOKWATCH_FORWARD_TLS_KEY_FILE: pki.client.keyFile };
    expect(config({ HOOKWATCH_FORWARD_ENDPOINT: 'https://otlp.example.com', ...files, HOOKWATCH_FORWARD_TLS_SERVER_NAME: 'otlp.internal' }).forward.tls).toEqual({ section: 'forward.tls', caFile: pki.ca.certFile, certFile: pki.client.certFile, keyFile: pki.client.keyFile, serverName: 'otlp.internal', insecureSkipVerify: false, minVersion: '1.2', reloadIntervalMs: 30_000 });
    expect(config({ HOOKWATCH_FORWARD_ENDPOINT: 'https://otlp.example.com' }).forward.tls).toBeUndefined();
    expect(config({ HOOKWATCH_FORWARD_ENDPOINT: 'https://otlp.example.com', HOOKWATCH_FORWARD_TLS_MIN_VERSION: '1.3' }).forward.tls).toMatchObject({ minVersion: '1.3', caFile: '' });
    expect(() => config({ HOOKWATCH_FORWARD_ENDPOINT: 'https://otlp.example.com', HOOKWATCH_FORWARD_TLS_MIN_VERSION: '1.1' })).toThrow('invalid value "1.1" for forward.tls.minVersion: expected one of 1.2, 1.3');
    expect(() => config({ HOOKWATCH_FORWARD_ENDPOINT: 'http://otlp.example.com', HOOKWATCH_FORWARD_TLS_MIN_VERSION: '1.3' })).toThrow('forward.tls.minVersion is set but forward.endpoint is not an https:// URL');
    expect(() => config({ HOOKWATCH_FORWARD_ENDPOINT: 'http://otlp.example.com:4318', ...files })).toThrow('forward.tls.caFile is set but forward.endpoint is not an https:// URL');
    expect(() => config({ HOOKWATCH_FORWARD_ENDPOINT: 'collector:4317', HOOKWATCH_FORWARD_PROTOCOL: 'grpc', HOOKWATCH_FORWARD_TLS_INSECURE_SKIP_VERIFY: 'true' })).toThrow(/forward\.tls\.insecureSkipVerify is set but forward\.endpoint is not an https/);
    expect(() => config({ HOOKWATCH_FORWARD_ENDPOINT: 'https://otlp.example.com', HOOKWATCH_FORWARD_TLS_CERT_FILE: pki.client.certFile })).toThrow('forward.tls.certFile and forward.tls.keyFile go together');
    // The text of a key given in place of its path is refused unechoed.
    const pem = readFileSync(pki.client.keyFile, 'utf8');
    expect(() => config({ HOOKWATCH_FORWARD_ENDPOINT: 'https://otlp.example.com', HOOKWATCH_FORWARD_TLS_CERT_FILE: pki.client.certFile, HOOKWATCH_FORWARD_TLS_KEY_FILE: pem })).toThrow(/expected the path of a file, not its contents/);
    try {
      config({ HOOKWATCH_FORWARD_ENDPOINT: 'https://otlp.example.com', HOOKWATCH_FORWARD_TLS_CERT_FILE: pki.client.certFile, HOOKWATCH_FORWARD_TLS_KEY_FILE: pem });
    } catch (err) {
      expect((err as Error).message).not.toContain(pemBody(pki.client.keyFile));
    }
  });
});
