/**
 * alerting.otlp.tls.* against a real OTLP/HTTP receiver on loopback that requires a client certificate (mutual
 * TLS), driven as a user drives it: hook events over OTLP raise an alert, its log record arrives over TLS with the
 * client certificate; the connection is closed when hookwatch stops; a rotated client certificate is used once read
 * again; a receiver whose certificate is not trusted counts the event failed (tls); files that cannot be used stop
 * hookwatch naming the setting, and settings beside an http:// endpoint are refused as forward.tls.* are.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, toConfig } from '../src/config/index.ts';
import { ClientTlsCredentials } from '../src/net/tls.ts';
import { OtlpAlertEmitter } from '../src/notify/otlp.ts';
import { startService, type RunningService } from '../src/service.ts';
import { silentLogger } from '../src/telemetry/logger.ts';
import { otlpAccepted, otlpHookBody, WebhookSink } from './support/alerting.ts';
import { HAVE_OPENSSL, issue, pemBody, useTestPki } from './support/certs.ts';
import { parseExposition, sampleValue } from './support/prometheus-text.ts';
import { recordingLogger } from './support/recording-logger.ts';
import { configFromYaml, isolatedEnv } from './support/service.ts';
import { postOtlp, tempDir } from './helpers.ts';

describe.skipIf(!HAVE_OPENSSL)('alert events over TLS', () => {
  const pki = useTestPki('hookwatch-tls-alert-events-');

  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** An OTLP/HTTP receiver serving a certificate of the team CA and taking client certificates of the team CA only. */
  async function otlpReceiver(): Promise<WebhookSink> {
    const s = new WebhookSink(Date.now, { ...pki.server, clientCaFiles: [pki.ca.certFile] });
    s.reply = otlpAccepted;
    await s.start();
    cleanups.push(() => s.close());
    return s;
  }

  async function start(endpoint: string, tls?: Record<string, string>, logger = recordingLogger().logger): Promise<RunningService> {
    const dir = tempDir('hookwatch-tls-alert-events-service-');
    cleanups.push(() => dir.cleanup());
    const yaml = JSON.stringify({ alerting: { rules: [{ kind: 'persisted', window: '1h' }], otlp: { endpoint, ...(tls ? { tls } : {}) } } });
    const service = await startService(configFromYaml(dir.dir, yaml), { logger });
    cleanups.push(async () => void (await service.stop()));
    return service;
  }

  const logRecords = (s: WebhookSink, text: string): { path: string; peer?: string }[] => s.delivered().filter((r) => r.body.includes(text));

  it('sends alert events with the client certificate to a receiver that requires one, and closes the connection at stop', async () => {
    const receiver = await otlpReceiver();
    // An idle connection would stay open for ten minutes unless hookwatch closes it.
    receiver.keepConnectionsFor(600_000);
    const { logger, lines } = recordingLogger();
    const service = await start(receiver.url, { caFile: pki.ca.certFile, certFile: pki.client.certFile, keyFile: pki.client.keyFile }, logger);
    const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', otlpHookBody([{ hookName: 'PostToolUse:events', timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000, sessionId: 's1' }]), { 'content-type': 'application/json' });
    expect(res.status).toBe(200);
    await expect.poll(() => logRecords(receiver, 'PostToolUse:events'), { timeout: 10_000, interval: 100 }).toEqual([expect.objectContaining({ path: '/v1/logs', peer: 'client' })]);
    expect(receiver.openConnections()).toBe(1);
    await service.stop();
    await expect.poll(() => receiver.openConnections(), { timeout: 5000, interval: 50 }).toBe(0);
    // The receiver's answer is OTLP: nothing about the export at warn or error.
    expect(lines.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
  });

  it('counts an event whose TLS handshake fails (the endpoint\'s CA not trusted) as failed (tls), and logs why', async () => {
    const receiver = new WebhookSink(Date.now, pki.server);
    await receiver.start();
    cleanups.push(() => receiver.close());
    const { logger, lines } = recordingLogger();
    // No alerting.otlp.tls: the system's CAs, which do not vouch for the team CA.
    const service = await start(receiver.url, undefined, logger);
    const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', otlpHookBody([{ hookName: 'PostToolUse:untrusted', timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000, sessionId: 's1' }]), { 'content-type': 'application/json' });
    expect(res.status).toBe(200);
    const failures = async (): Promise<number | undefined> => sampleValue(parseExposition(await (await fetch(`${service.httpUrl}/metrics`)).text()), 'hookwatch_alert_event_failures_total', { reason: 'tls' });
    await expect.poll(failures, { timeout: 15_000, interval: 100 }).toBe(1);
    expect(receiver.requests).toEqual([]);
    expect(lines.filter((l) => l.level === 'warn' && l.msg.startsWith('alert events not exported'))).toEqual([expect.objectContaining({ msg: expect.stringMatching(/"reason":"tls".*TLS failed: .*certificate/) as string })]);
  });

  it('presents a rotated client certificate once the files are read again', async () => {
    const receiver = await otlpReceiver();
    const dir = join(pki.dir, 'rotate');
    mkdirSync(dir, { recursive: true });
    copyFileSync(pki.client.certFile, join(dir, 'tls.crt'));
    copyFileSync(pki.client.keyFile, join(dir, 'tls.key'));
    const credentials = ClientTlsCredentials.open({ section: 'alerting.otlp.tls', caFile: pki.ca.certFile, certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key'), serverName: '', insecureSkipVerify: false, minVersion: '1.2', reloadIntervalMs: 1000 }, silentLogger);
    const emitter = new OtlpAlertEmitter({ endpoint: receiver.url, headers: {}, serviceVersion: '0.1.0', scheduledDelayMs: 10, tls: credentials, logger: silentLogger });
    cleanups.push(() => emitter.shutdown());
    const emit = (rule: string): void => emitter.emit({ id: rule, fingerprint: rule, rule, state: 'firing', labels: { alertname: rule }, annotations: {}, atMs: Date.now() });

    emit('before-rotation');
    await expect.poll(() => logRecords(receiver, 'before-rotation'), { timeout: 10_000, interval: 50 }).toEqual([expect.objectContaining({ peer: 'client' })]);
    const renewed = issue(pki.ca, 'client-renewed', 'client');
    copyFileSync(renewed.certFile, join(dir, 'tls.crt'));
    copyFileSync(renewed.keyFile, join(dir, 'tls.key'));
    expect(await credentials.reload()).toBe('reloaded');
    emit('after-rotation');
    await expect.poll(() => logRecords(receiver, 'after-rotation'), { timeout: 10_000, interval: 50 }).toEqual([expect.objectContaining({ peer: 'client-renewed' })]);
  });

  it('refuses to start with a file that cannot be used, naming the setting, never showing the key', async () => {
    const receiver = await otlpReceiver();
    const mismatched = start(receiver.url, { caFile: pki.ca.certFile, certFile: pki.client.certFile, keyFile: pki.stranger.keyFile });
    await expect(mismatched).rejects.toThrow(new ConfigError(`alerting.otlp.tls.keyFile ${pki.stranger.keyFile} is not the key of the certificate in alerting.otlp.tls.certFile ${pki.client.certFile}`));
    await expect(mismatched).rejects.not.toThrow(pemBody(pki.stranger.keyFile));
    expect(receiver.requests).toEqual([]);
  });

  it('is read from the environment, and refused beside an endpoint that speaks no TLS', () => {
    const dir = tempDir('hookwatch-tls-alert-events-config-');
    cleanups.push(() => dir.cleanup());
    const config = (env: Record<string, string>): ReturnType<typeof toConfig> => toConfig(loadConfig({ env: { ...isolatedEnv(dir.dir), ...env } }));
    const files = { HOOKWATCH_ALERT_OTLP_TLS_CA_FILE: pki.ca.certFile, HOOKWATCH_ALERT_OTLP_TLS_CERT_FILE: pki.client.certFile, HOOKWATCH_ALERT_OTLP_TLS_KEY_FILE: pki.client.keyFile };
    expect(config({ HOOKWATCH_ALERT_OTLP_ENDPOINT: 'https://otlp.example.com', ...files, HOOKWATCH_ALERT_OTLP_TLS_MIN_VERSION: '1.3' }).alerting.otlp.tls).toEqual({
      section: 'alerting.otlp.tls', caFile: pki.ca.certFile, certFile: pki.client.certFile, keyFile: pki.client.keyFile, serverName: '', insecureSkipVerify: false, minVersion: '1.3', reloadIntervalMs: 30_000,
    });
    expect(config({ HOOKWATCH_ALERT_OTLP_ENDPOINT: 'https://otlp.example.com' }).alerting.otlp.tls).toBeUndefined();
    expect(() => config({ HOOKWATCH_ALERT_OTLP_ENDPOINT: 'http://otlp.example.com:4318', ...files })).toThrow('alerting.otlp.tls.caFile is set but alerting.otlp.endpoint is not an https:// URL, so no TLS is spoken with the alert event endpoint: write the endpoint as https://host:port, or unset alerting.otlp.tls.*');
    expect(() => config({ HOOKWATCH_ALERT_OTLP_ENDPOINT: 'https://otlp.example.com', HOOKWATCH_ALERT_OTLP_TLS_KEY_FILE: pki.client.keyFile })).toThrow('alerting.otlp.tls.certFile and alerting.otlp.tls.keyFile go together');
  });
});
