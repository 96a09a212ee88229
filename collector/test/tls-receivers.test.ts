/**
 * An alert receiver's `tls` (a private CA, a client certificate for mutual TLS) against a real HTTPS receiver on
 * loopback, driven as a user drives it: hook events over OTLP raise an alert, its notification arrives with the
 * client certificate; the files are rotated on disk as Kubernetes rotates a mounted Secret (an atomic symlink
 * swap) and the next notification uses the new ones without a restart; a bad new file keeps the files in use and
 * is logged once, never with a key's text; a file that cannot be used at start stops hookwatch, naming it.
 */
import { mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../src/config/index.ts';
import { startService, type RunningService } from '../src/service.ts';
import type { Logger } from '../src/telemetry/logger.ts';
import { otlpHookBody, WebhookSink } from './support/alerting.ts';
import { recordingLogger } from './support/recording-logger.ts';
import { HAVE_OPENSSL, issue, pemBody, useTestPki, type CertFiles } from './support/certs.ts';
import { parseExposition, sampleValue } from './support/prometheus-text.ts';
import { configFromYaml } from './support/service.ts';
import { postOtlp, tempDir } from './helpers.ts';

/**
 * A folder laid out as Kubernetes mounts a Secret: each version in a folder of its own, `..data` a symlink to the
 * current one, and `ca.crt`, `tls.crt`, `tls.key` symlinks through `..data`. `put` writes a new version and swaps
 * `..data` to it in one rename, as the kubelet does.
 */
function secretVolume(dir: string): { caFile: string; certFile: string; keyFile: string; put(files: { ca: string; cert: CertFiles }): void } {
  mkdirSync(dir, { recursive: true });
  let version = 0;
  const put = (files: { ca: string; cert: CertFiles }): void => {
    const name = `..v${++version}`;
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, 'ca.crt'), readFileSync(files.ca));
    writeFileSync(join(dir, name, 'tls.crt'), readFileSync(files.cert.certFile));
    writeFileSync(join(dir, name, 'tls.key'), readFileSync(files.cert.keyFile));
    symlinkSync(name, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  };
  for (const file of ['ca.crt', 'tls.crt', 'tls.key']) symlinkSync(join('..data', file), join(dir, file));
  return { caFile: join(dir, 'ca.crt'), certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key'), put };
}

/** A config file with one webhook receiver at `url` and `tls`, and a rule that fires on the first persisted output. */
function receiverYaml(url: string, tls: Record<string, unknown>): string {
  return JSON.stringify({ alerting: { rules: [{ kind: 'persisted', window: '1h' }], receivers: [{ name: 'team', type: 'webhook', url: `${url}/hook`, tls }] } });
}

describe.skipIf(!HAVE_OPENSSL)('alert receivers over TLS', () => {
  const pki = useTestPki('hookwatch-tls-receivers-');

  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function sink(): Promise<WebhookSink> {
    // The receiver serves a certificate of the team CA and takes client certificates of the team CA only.
    const s = new WebhookSink(Date.now, { ...pki.server, clientCaFiles: [pki.ca.certFile] });
    await s.start();
    cleanups.push(() => s.close());
    return s;
  }

  async function start(yaml: string, logger: Logger): Promise<RunningService> {
    const dir = tempDir('hookwatch-tls-receivers-service-');
    cleanups.push(() => dir.cleanup());
    const service = await startService(configFromYaml(dir.dir, yaml), { logger });
    cleanups.push(async () => void (await service.stop()));
    return service;
  }

  /** A hook output persisted to a file: the rule fires and the receiver is notified. */
  async function persist(service: RunningService, hookName: string): Promise<void> {
    const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', otlpHookBody([{ hookName, timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000, sessionId: hookName }]), { 'content-type': 'application/json' });
    expect(res.status).toBe(200);
  }

  const notifiedFor = (s: WebhookSink, hookName: string): { peer?: string } | undefined => s.delivered().find((r) => r.body.includes(hookName));

  it('notifies with the client certificate, and with the rotated one after a symlink swap, without a restart; a bad new key keeps the one in use, logged once', async () => {
    const receiver = await sink();
    const renewed = issue(pki.ca, 'client-renewed', 'client');
    const secret = secretVolume(join(pki.dir, 'receiver-secret'));
    secret.put({ ca: pki.ca.certFile, cert: pki.client });
    const { logger, lines } = recordingLogger();
    const service = await start(receiverYaml(receiver.url, { caFile: secret.caFile, certFile: secret.certFile, keyFile: secret.keyFile, reloadInterval: '1s' }), logger);

    await persist(service, 'PostToolUse:first');
    await expect.poll(() => notifiedFor(receiver, 'PostToolUse:first'), { timeout: 10_000, interval: 100 }).toMatchObject({ peer: 'client' });

    // The renewed client certificate and its key arrive together, in one swap of ..data.
    secret.put({ ca: pki.ca.certFile, cert: renewed });
    await expect.poll(() => lines.filter((l) => l.msg.startsWith('alerting.receivers[0].tls: files reloaded')).length, { timeout: 10_000, interval: 100 }).toBe(1);
    await persist(service, 'PostToolUse:second');
    await expect.poll(() => notifiedFor(receiver, 'PostToolUse:second'), { timeout: 10_000, interval: 100 }).toMatchObject({ peer: 'client-renewed' });

    // A new version whose key is not its certificate's: refused, logged once, the renewed files stay in use.
    secret.put({ ca: pki.ca.certFile, cert: { certFile: pki.client.certFile, keyFile: renewed.keyFile } });
    const errors = (): string[] => lines.filter((l) => l.level === 'error').map((l) => l.msg);
    await expect.poll(errors, { timeout: 10_000, interval: 100 }).toEqual([
      expect.stringMatching(/^alerting\.receivers\[0\]\.tls\.keyFile .*tls\.key is not the key of the certificate in alerting\.receivers\[0\]\.tls\.certFile .*tls\.crt; still using the files loaded before/),
    ]);
    await persist(service, 'PostToolUse:third');
    await expect.poll(() => notifiedFor(receiver, 'PostToolUse:third'), { timeout: 10_000, interval: 100 }).toMatchObject({ peer: 'client-renewed' });
    // Read again at every interval since, the same bad set is not logged again.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(errors()).toHaveLength(1);
    for (const key of [pki.client.keyFile, renewed.keyFile]) expect(JSON.stringify(lines)).not.toContain(pemBody(key));

    // The CA file is followed too: one that no longer vouches for the receiver's certificate fails the handshake.
    secret.put({ ca: pki.other.certFile, cert: renewed });
    await expect.poll(() => lines.filter((l) => l.msg.startsWith('alerting.receivers[0].tls: files reloaded')).length, { timeout: 10_000, interval: 100 }).toBe(2);
    const test = await fetch(`${service.httpUrl}/api/v1/receivers/team/test`, { method: 'POST' });
    expect(test.status).toBe(502);
    expect(((await test.json()) as { error: string }).error).toMatch(/^TLS handshake failed: (self-signed certificate in certificate chain|unable to verify the first certificate)/);
    // An alert's notification meets the same refusal; its attempts are counted as failed handshakes.
    const tlsFailures = async (): Promise<number | undefined> => sampleValue(parseExposition(await (await fetch(`${service.httpUrl}/metrics`)).text()), 'hookwatch_notification_tls_failures_total');
    expect(await tlsFailures()).toBe(0);
    await persist(service, 'PostToolUse:fourth');
    await expect.poll(tlsFailures, { timeout: 10_000, interval: 200 }).toBeGreaterThanOrEqual(1);
    expect(notifiedFor(receiver, 'PostToolUse:fourth')).toBeUndefined();
  });

  it('with tls.minVersion 1.3 refuses a receiver that speaks TLS 1.2 at most, reported as a failed handshake', async () => {
    const receiver = new WebhookSink(Date.now, { ...pki.server, maxVersion: 'TLSv1.2' });
    await receiver.start();
    cleanups.push(() => receiver.close());
    const receivers = [
      { name: 'lenient', type: 'webhook', url: `${receiver.url}/hook`, tls: { caFile: pki.ca.certFile } },
      // Written as YAML writes it unquoted: a number.
      { name: 'strict', type: 'webhook', url: `${receiver.url}/hook`, tls: { caFile: pki.ca.certFile, minVersion: 1.3 } },
    ];
    const service = await start(JSON.stringify({ alerting: { receivers } }), recordingLogger().logger);
    const test = async (name: string): Promise<{ status: number; error: string | null }> => {
      const res = await fetch(`${service.httpUrl}/api/v1/receivers/${name}/test`, { method: 'POST' });
      return { status: res.status, error: ((await res.json()) as { error: string | null }).error };
    };
    expect(await test('lenient')).toEqual({ status: 200, error: null });
    const strict = await test('strict');
    expect(strict.status).toBe(502);
    expect(strict.error).toMatch(/^TLS handshake failed: .*protocol version/);
    expect(receiver.requests).toHaveLength(1);
  });

  it('closes its connections to the receiver when hookwatch stops', async () => {
    const receiver = await sink();
    // An idle connection would stay open for ten minutes unless hookwatch closes it.
    receiver.keepConnectionsFor(600_000);
    const service = await start(receiverYaml(receiver.url, { caFile: pki.ca.certFile, certFile: pki.client.certFile, keyFile: pki.client.keyFile }), recordingLogger().logger);
    const test = await fetch(`${service.httpUrl}/api/v1/receivers/team/test`, { method: 'POST' });
    expect(test.status).toBe(200);
    expect(receiver.delivered()).toMatchObject([{ peer: 'client' }]);
    expect(receiver.openConnections()).toBe(1);
    await service.stop();
    // The close travels to the receiver; the timeout only catches a connection left open.
    await expect.poll(() => receiver.openConnections(), { timeout: 5000, interval: 50 }).toBe(0);
  });

  it('refuses to start with a file that cannot be used, naming the setting, never showing the key', async () => {
    const receiver = await sink();
    const missing = join(pki.dir, 'missing.crt');
    await expect(start(receiverYaml(receiver.url, { caFile: missing }), recordingLogger().logger)).rejects.toThrow(new ConfigError(`alerting.receivers[0].tls.caFile ${missing}: cannot read it (ENOENT)`));
    const mismatched = start(receiverYaml(receiver.url, { caFile: pki.ca.certFile, certFile: pki.client.certFile, keyFile: pki.stranger.keyFile }), recordingLogger().logger);
    await expect(mismatched).rejects.toThrow(new ConfigError(`alerting.receivers[0].tls.keyFile ${pki.stranger.keyFile} is not the key of the certificate in alerting.receivers[0].tls.certFile ${pki.client.certFile}`));
    await expect(mismatched).rejects.not.toThrow(pemBody(pki.stranger.keyFile));
    await expect(start(receiverYaml(receiver.url, { caFile: pki.client.keyFile }), recordingLogger().logger)).rejects.toThrow(`alerting.receivers[0].tls.caFile ${pki.client.keyFile}: no PEM certificate in it`);
    expect(receiver.requests).toEqual([]);
  });
});
