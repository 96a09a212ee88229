/**
 * TLS on the OTLP receivers (otlp.tls.*), driven the way a user's clients drive it: the real OpenTelemetry JS
 * exporters (OTLP/HTTP JSON and protobuf, OTLP/gRPC) given the CA, and for mutual TLS a client certificate,
 * through the standard OTEL_EXPORTER_OTLP_CERTIFICATE / _CLIENT_CERTIFICATE / _CLIENT_KEY variables.
 */
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OTLPLogExporter as JsonExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as ProtoExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPLogExporter as GrpcExporter } from '@opentelemetry/exporter-logs-otlp-grpc';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { afterEach, describe, expect, it } from 'vitest';
import type { OverviewResponse } from '../../shared/src/api.ts';
import { ConfigError } from '../src/config/index.ts';
import { recordingLogger } from './support/recording-logger.ts';
import { HAVE_OPENSSL, fingerprint, pemBody, servedFingerprint, useTestPki, type CertFiles } from './support/certs.ts';
import { parseExposition, sampleValue } from './support/prometheus-text.ts';
import { RecordingExporter, startServiceUnderTest, type ServiceUnderTest } from './support/service.ts';

type Kind = 'http/json' | 'http/protobuf' | 'grpc';
const KINDS: readonly Kind[] = ['http/json', 'http/protobuf', 'grpc'];

/** What a client is given, as the OpenTelemetry SDK's variables name it. */
interface ClientTls {
  ca?: string;
  cert?: CertFiles;
}

const OTEL_TLS_VARS = ['OTEL_EXPORTER_OTLP_CERTIFICATE', 'OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE', 'OTEL_EXPORTER_OTLP_CLIENT_KEY'] as const;

/**
 * Sends one hook_execution_complete named `hookName` with the real exporter of `kind` to `base` (the receiver's
 * URL as hookwatch reports it) and returns the export results. The TLS variables are set while the exporter is
 * made and sends, as they would be in Claude Code's environment.
 */
async function send(kind: Kind, base: string, hookName: string, tls: ClientTls, timeoutMillis = 5000): Promise<RecordingExporter> {
  const saved = OTEL_TLS_VARS.map((name) => [name, process.env[name]] as const);
  const set = (name: string, value: string | undefined): void => {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  };
  set('OTEL_EXPORTER_OTLP_CERTIFICATE', tls.ca);
  set('OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE', tls.cert?.certFile);
  set('OTEL_EXPORTER_OTLP_CLIENT_KEY', tls.cert?.keyFile);
  try {
    const inner = kind === 'grpc' ? new GrpcExporter({ url: base, timeoutMillis }) : kind === 'http/json' ? new JsonExporter({ url: `${base}/v1/logs`, timeoutMillis }) : new ProtoExporter({ url: `${base}/v1/logs`, timeoutMillis });
    const exporter = new RecordingExporter(inner);
    const provider = new LoggerProvider({ resource: resourceFromAttributes({ 'service.name': 'claude-code', 'service.version': '2.1.332' }), processors: [new SimpleLogRecordProcessor({ exporter })] });
    provider.getLogger('com.anthropic.claude_code.events', '2.1.332').emit({
      body: 'claude_code.hook_execution_complete',
      attributes: { 'event.name': 'hook_execution_complete', 'event.timestamp': new Date().toISOString(), 'session.id': `tls-${hookName}`, hook_event: 'SessionStart', hook_name: hookName, num_hooks: '1', num_success: '1', num_outputs_persisted: '0', additional_context_chars: '100', stdout_chars: '0', system_message_chars: '0', initial_user_message_chars: '0' },
    });
    await provider.forceFlush();
    await provider.shutdown();
    return exporter;
  } finally {
    for (const [name, value] of saved) set(name, value);
  }
}

/** The receiver's base URL for `kind`. */
const baseFor = (s: ServiceUnderTest, kind: Kind): string => (kind === 'grpc' ? s.otlpGrpcUrl : s.otlpHttpUrl);

/** What a probe offers: the gRPC port speaks HTTP/2 only (h2), the OTLP/HTTP port HTTP/1.1. */
const ALPN = ['h2', 'http/1.1'];

const portOf = (url: string): number => Number(new URL(url).port);

describe.skipIf(!HAVE_OPENSSL)('OTLP receivers over TLS', () => {
  const pki = useTestPki('hookwatch-tls-otlp-');

  let service: ServiceUnderTest | undefined;
  afterEach(async () => {
    await service?.close();
    service = undefined;
  });

  const tlsEnv = (files: CertFiles, extra: Record<string, string> = {}): Record<string, string> => ({ HOOKWATCH_OTLP_TLS_CERT_FILE: files.certFile, HOOKWATCH_OTLP_TLS_KEY_FILE: files.keyFile, ...extra });

  it('the OTLP/HTTP (JSON, protobuf) and OTLP/gRPC exporters trusting the CA deliver over TLS, and the events are counted', async () => {
    service = await startServiceUnderTest(tlsEnv(pki.server));
    expect(service.otlpHttpUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(service.otlpGrpcUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    // The dashboard (plain HTTP here) gives its setup snippet the scheme the OTLP port speaks, not its own.
    const overview = await (await fetch(`${service.httpUrl}/api/v1/overview`)).json() as OverviewResponse;
    expect(overview).toMatchObject({ otlpHttpPort: portOf(service.otlpHttpUrl), otlpHttpTls: true, otlpClientCertificate: false });
    for (const kind of KINDS) {
      const sent = await send(kind, baseFor(service, kind), `SessionStart:${kind}`, { ca: pki.ca.certFile });
      expect(sent.codes, `${kind}: ${sent.errors.join('; ')}`).toEqual([0]);
    }
    expect(service.ingest.stats.stored).toBe(3);
    // A client that does not trust the CA refuses hookwatch's certificate: nothing is sent.
    for (const kind of KINDS) expect((await send(kind, baseFor(service, kind), 'SessionStart:untrusted', {}, 2000)).codes).toEqual([1]);
    expect(service.ingest.stats.stored).toBe(3);
  });

  it('mutual TLS: exporters with a client certificate from the CA deliver; without one, or with another CA\'s, they are refused', async () => {
    service = await startServiceUnderTest(tlsEnv(pki.server, { HOOKWATCH_OTLP_TLS_CLIENT_CA_FILE: pki.ca.certFile }));
    // The setup snippet is told that exports need a client certificate, and not where any of the files are.
    const overview = await (await fetch(`${service.httpUrl}/api/v1/overview`)).json() as OverviewResponse;
    expect(overview).toMatchObject({ otlpHttpTls: true, otlpClientCertificate: true });
    expect(JSON.stringify(overview)).not.toContain(pki.dir);
    expect(JSON.stringify(overview)).not.toMatch(/\.(crt|key)\b/);
    for (const kind of KINDS) {
      const sent = await send(kind, baseFor(service, kind), `SessionStart:${kind}`, { ca: pki.ca.certFile, cert: pki.client });
      expect(sent.codes, `${kind}: ${sent.errors.join('; ')}`).toEqual([0]);
    }
    expect(service.ingest.stats.stored).toBe(3);
    for (const kind of KINDS) {
      expect((await send(kind, baseFor(service, kind), 'SessionStart:no-cert', { ca: pki.ca.certFile }, 2000)).codes, `${kind} without a client certificate`).toEqual([1]);
      expect((await send(kind, baseFor(service, kind), 'SessionStart:stranger', { ca: pki.ca.certFile, cert: pki.stranger }, 2000)).codes, `${kind} with another CA's certificate`).toEqual([1]);
    }
    expect(service.ingest.stats.stored).toBe(3);
    // Refused during the handshake: not one request was read, so none was counted.
    expect(service.receiver.stats.requests).toEqual({ 'logs:ok': 2 });
  });

  it('plain text to a TLS port fails (plain HTTP with a 400 saying so), and a TLS version below otlp.tls.minVersion is refused', async () => {
    service = await startServiceUnderTest(tlsEnv(pki.server, { HOOKWATCH_OTLP_TLS_MIN_VERSION: '1.3' }));
    const plainHttp = service.otlpHttpUrl.replace('https://', 'http://');
    const refused = await fetch(`${plainHttp}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect([refused.status, await refused.text()]).toEqual([400, 'Client sent an HTTP request to an HTTPS server: this port speaks TLS (otlp.tls), so use an https:// URL for it.\n']);
    const plainSent = await send('http/protobuf', plainHttp, 'SessionStart:plain', {}, 2000);
    expect(plainSent.codes).toEqual([1]);
    expect(plainSent.errors).toEqual(['Bad Request']);
    expect((await send('grpc', service.otlpGrpcUrl.replace('https://', 'http://'), 'SessionStart:plain', {}, 2000)).codes).toEqual([1]);
    expect(service.ingest.stats.stored).toBe(0);
    for (const port of [portOf(service.otlpHttpUrl), portOf(service.otlpGrpcUrl)]) {
      await expect(servedFingerprint(port, { ca: readFileSync(pki.ca.certFile), maxVersion: 'TLSv1.2', ALPNProtocols: ALPN })).rejects.toThrow(/version/i);
      expect(await servedFingerprint(port, { ca: readFileSync(pki.ca.certFile), minVersion: 'TLSv1.3', ALPNProtocols: ALPN })).toBe(fingerprint(pki.server.certFile));
    }
  });

  it('on the OTLP/gRPC port, a TLS client that agreed on no protocol (an OTLP/HTTP exporter) is counted as malformed; a gRPC exporter is not', async () => {
    service = await startServiceUnderTest(tlsEnv(pki.server));
    const base = service.httpUrl;
    const sample = async (family: string, labels: Record<string, string>): Promise<number | undefined> => sampleValue(parseExposition(await (await fetch(`${base}/metrics`)).text()), family, labels);
    const malformed = (): Promise<number | undefined> => sample('hookwatch_otlp_requests_rejected_total', { transport: 'grpc', reason: 'malformed' });
    expect((await send('grpc', service.otlpGrpcUrl, 'SessionStart:grpc', { ca: pki.ca.certFile })).codes).toEqual([0]);
    expect(await malformed()).toBe(0);
    // An OTLP/HTTP exporter given the gRPC port: its TLS handshake offers no protocol, and node:http2 closes it.
    expect((await send('http/json', service.otlpGrpcUrl, 'SessionStart:http', { ca: pki.ca.certFile }, 2000)).codes).toEqual([1]);
    await expect.poll(malformed, { timeout: 15_000 }).toBeGreaterThanOrEqual(1);
    const counted = await malformed();
    // One that offers HTTP/1.1 only fails the handshake: a failed handshake, not a request.
    await expect(servedFingerprint(portOf(service.otlpGrpcUrl), { ca: readFileSync(pki.ca.certFile), ALPNProtocols: ['http/1.1'] })).rejects.toThrow(/application protocol/i);
    await expect.poll(() => sample('hookwatch_tls_handshake_failures_total', { listener: 'otlp_grpc', reason: 'other' }), { timeout: 15_000 }).toBe(1);
    expect(await malformed()).toBe(counted);
    expect(service.ingest.stats.stored).toBe(1);
  });

  it('a rotated certificate is served to new connections on both ports without a restart; a bad new key keeps the old one', async () => {
    const dir = join(pki.dir, 'secret');
    mkdirSync(dir, { recursive: true });
    const files = { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
    const put = (from: CertFiles, which: 'both' | 'cert' = 'both'): void => {
      copyFileSync(from.certFile, files.certFile);
      if (which === 'both') copyFileSync(from.keyFile, files.keyFile);
    };
    put(pki.server);
    const { logger, lines } = recordingLogger();
    service = await startServiceUnderTest(tlsEnv(files, { HOOKWATCH_OTLP_TLS_RELOAD_INTERVAL: '1s' }), logger);
    const ports = [portOf(service.otlpHttpUrl), portOf(service.otlpGrpcUrl)];
    for (const port of ports) expect(await servedFingerprint(port, { ALPNProtocols: ALPN })).toBe(fingerprint(pki.server.certFile));

    put(pki.rotated);
    for (const port of ports) {
      await expect.poll(() => servedFingerprint(port, { ALPNProtocols: ALPN }), { timeout: 5000, interval: 200 }).toBe(fingerprint(pki.rotated.certFile));
    }
    for (const kind of KINDS) expect((await send(kind, baseFor(service, kind), `SessionStart:${kind}`, { ca: pki.ca.certFile })).codes).toEqual([0]);
    expect(service.ingest.stats.stored).toBe(3);

    // Only the certificate is replaced: the key in the folder is not its key. The renewed certificate stays.
    put(pki.server, 'cert');
    await expect.poll(() => lines.filter((l) => l.level === 'error').map((l) => l.msg), { timeout: 5000, interval: 200 }).toEqual([
      expect.stringMatching(/^otlp\.tls\.keyFile .*tls\.key is not the key of the certificate in otlp\.tls\.certFile .*tls\.crt; still serving the certificate loaded before/),
    ]);
    for (const port of ports) expect(await servedFingerprint(port, { ALPNProtocols: ALPN })).toBe(fingerprint(pki.rotated.certFile));
    for (const kind of KINDS) expect((await send(kind, baseFor(service, kind), `SessionStart:${kind}`, { ca: pki.ca.certFile })).codes).toEqual([0]);
    expect(JSON.stringify(lines)).not.toContain(pemBody(pki.server.keyFile));
    expect(JSON.stringify(lines)).not.toContain(pemBody(pki.rotated.keyFile));
  });

  it('a start with a file that cannot be read or used fails, naming the setting and never showing the key', async () => {
    const missing = join(pki.dir, 'missing.key');
    await expect(startServiceUnderTest(tlsEnv({ certFile: pki.server.certFile, keyFile: missing }))).rejects.toThrow(new ConfigError(`otlp.tls.keyFile ${missing}: cannot read it (ENOENT)`));
    const mismatched = startServiceUnderTest(tlsEnv({ certFile: pki.server.certFile, keyFile: pki.rotated.keyFile }));
    await expect(mismatched).rejects.toThrow(`otlp.tls.keyFile ${pki.rotated.keyFile} is not the key of the certificate in otlp.tls.certFile ${pki.server.certFile}`);
    await expect(mismatched).rejects.not.toThrow(pemBody(pki.rotated.keyFile));
    await expect(startServiceUnderTest(tlsEnv(pki.server, { HOOKWATCH_OTLP_TLS_CLIENT_CA_FILE: pki.server.keyFile }))).rejects.toThrow(`otlp.tls.clientCaFile ${pki.server.keyFile}: no PEM certificate in it`);
  });
});
