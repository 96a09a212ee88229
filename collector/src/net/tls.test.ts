/**
 * The files a listener serves TLS with: checked at start with messages naming the setting (never the key's
 * text), and read again so a rotated certificate is taken into use, a bad new one refused and logged once.
 */
import { copyFileSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../config/setting.ts';
import type { Logger } from '../telemetry/logger.ts';
import { HAVE_OPENSSL, pemBody, useTestPki, type CertFiles } from '../../test/support/certs.ts';
import type { TlsConfig } from './settings.ts';
import { ClientTlsCredentials, MAX_TLS_FILE_BYTES, TlsCredentials } from './tls.ts';

interface Logged {
  level: string;
  msg: string;
  fields: Record<string, unknown> | undefined;
}

function recordingLogger(): { logger: Logger; lines: Logged[] } {
  const lines: Logged[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>): void => void lines.push({ level, msg, fields });
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

const fingerprint = (file: string): string => new X509Certificate(readFileSync(file)).fingerprint256;

describe.skipIf(!HAVE_OPENSSL)('TLS files', () => {
  const pki = useTestPki('hookwatch-tls-');

  const live: TlsCredentials[] = [];
  afterEach(() => {
    for (const c of live.splice(0)) c.stop();
  });

  /** A folder with tls.crt and tls.key copied from `files`, and the config naming them. */
  function served(files: CertFiles, extra: Partial<TlsConfig> = {}): { dir: string; config: TlsConfig } {
    const dir = join(pki.dir, `served-${Math.random().toString(36).slice(2)}`);
    mkdirSync(dir);
    copyFileSync(files.certFile, join(dir, 'tls.crt'));
    copyFileSync(files.keyFile, join(dir, 'tls.key'));
    return { dir, config: { section: 'otlp.tls', certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key'), clientCaFile: '', minVersion: '1.2', reloadIntervalMs: 1000, ...extra } };
  }

  function open(config: TlsConfig, logger: Logger = recordingLogger().logger, now?: number): TlsCredentials {
    const c = TlsCredentials.open(config, logger, now === undefined ? undefined : () => now);
    live.push(c);
    return c;
  }

  it('serves the certificate and key, with the client CA and a required client certificate for mutual TLS', () => {
    const { config } = served(pki.server);
    const plain = open(config);
    expect(plain.certificate().fingerprint256).toBe(fingerprint(pki.server.certFile));
    expect(plain.serverOptions()).toMatchObject({ requestCert: false, rejectUnauthorized: false, minVersion: 'TLSv1.2' });
    const mutual = open({ ...config, clientCaFile: pki.ca.certFile, minVersion: '1.3' });
    expect(mutual.mutual).toBe(true);
    expect(mutual.serverOptions()).toMatchObject({ requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.3', ca: readFileSync(pki.ca.certFile) });
  });

  it('refuses to start on a file that cannot be read or used, naming the setting and the path, never the key', () => {
    const { dir, config } = served(pki.server);
    const failure = (c: TlsConfig): ConfigError => {
      try {
        TlsCredentials.open(c, recordingLogger().logger);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        expect((err as Error).message).not.toContain(pemBody(pki.server.keyFile));
        expect((err as Error).message).not.toContain(pemBody(pki.rotated.keyFile));
        return err as ConfigError;
      }
      throw new Error('opened');
    };
    expect(failure({ ...config, keyFile: join(dir, 'missing.key') }).message).toBe(`otlp.tls.keyFile ${join(dir, 'missing.key')}: cannot read it (ENOENT)`);
    expect(failure({ ...config, certFile: join(dir, 'missing.crt') }).message).toBe(`otlp.tls.certFile ${join(dir, 'missing.crt')}: cannot read it (ENOENT)`);
    expect(failure({ ...config, clientCaFile: join(dir, 'missing-ca.crt') }).message).toBe(`otlp.tls.clientCaFile ${join(dir, 'missing-ca.crt')}: cannot read it (ENOENT)`);
    // The key of another certificate: the usual mistake when a rotation copies one file and not the other.
    expect(failure({ ...config, keyFile: pki.rotated.keyFile }).message).toBe(`otlp.tls.keyFile ${pki.rotated.keyFile} is not the key of the certificate in otlp.tls.certFile ${config.certFile}`);
    // Certificate and key swapped.
    expect(failure({ ...config, certFile: pki.server.keyFile, keyFile: pki.server.certFile }).message).toBe(`otlp.tls.certFile ${pki.server.keyFile}: no PEM certificate in it`);
    expect(failure({ ...config, keyFile: pki.server.certFile }).message).toBe(`otlp.tls.keyFile ${pki.server.certFile}: no PEM private key in it (an encrypted key cannot be used)`);
    expect(failure({ ...config, clientCaFile: pki.server.keyFile }).message).toBe(`otlp.tls.clientCaFile ${pki.server.keyFile}: no PEM certificate in it`);
  });

  it('reads no file past MAX_TLS_FILE_BYTES: a device or a large file named by mistake is refused naming the setting and the file', async () => {
    const { dir, config } = served(pki.server);
    // A certificate followed by more than the bound of text: read whole, its certificate would be taken.
    const padded = (file: string): string => {
      const out = join(dir, `padded-${basename(file)}`);
      writeFileSync(out, `${readFileSync(file, 'utf8')}${'#'.repeat(MAX_TLS_FILE_BYTES)}\n`);
      return out;
    };
    const tooLarge = (setting: string, file: string): string => `${setting} ${file}: it holds more than 1MiB, more than any PEM file needs: is it the file meant?`;
    const refusal = (open: () => unknown): string => {
      try {
        open();
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error('opened');
    };
    const logger = recordingLogger().logger;
    expect(refusal(() => TlsCredentials.open({ ...config, certFile: padded(config.certFile) }, logger))).toBe(tooLarge('otlp.tls.certFile', join(dir, 'padded-tls.crt')));
    expect(refusal(() => TlsCredentials.open({ ...config, keyFile: '/dev/zero' }, logger))).toBe(tooLarge('otlp.tls.keyFile', '/dev/zero'));
    expect(refusal(() => TlsCredentials.open({ ...config, clientCaFile: padded(pki.ca.certFile) }, logger))).toBe(tooLarge('otlp.tls.clientCaFile', join(dir, `padded-${basename(pki.ca.certFile)}`)));
    // A client's files (forward.tls, alert receivers, the alert event export) the same way.
    const client = { section: 'alerting.receivers[0].tls', caFile: '/dev/zero', certFile: '', keyFile: '', serverName: '', insecureSkipVerify: false, minVersion: '1.2', reloadIntervalMs: 1000 } as const;
    expect(refusal(() => ClientTlsCredentials.open(client, logger))).toBe(tooLarge('alerting.receivers[0].tls.caFile', '/dev/zero'));

    // Read again every reloadInterval: a file grown past the bound is refused and logged, the certificate in use kept.
    const { logger: reloading, lines } = recordingLogger();
    const credentials = open(config, reloading);
    copyFileSync(padded(config.certFile), config.certFile);
    expect(await credentials.reload()).toBe('refused');
    copyFileSync(pki.server.certFile, config.certFile);
    rmSync(config.keyFile);
    symlinkSync('/dev/zero', config.keyFile);
    expect(await credentials.reload()).toBe('refused');
    expect(lines.filter((l) => l.level === 'error').map((l) => l.msg)).toEqual([
      `${tooLarge('otlp.tls.certFile', config.certFile)}; still serving the certificate loaded before`,
      `${tooLarge('otlp.tls.keyFile', config.keyFile)}; still serving the certificate loaded before`,
    ]);
    expect(credentials.certificate().fingerprint256).toBe(fingerprint(pki.server.certFile));
  });

  it('takes a rotated certificate into use, and keeps it when the next files cannot be used, logging that once', async () => {
    const { dir, config } = served(pki.server);
    const { logger, lines } = recordingLogger();
    const credentials = open(config, logger);
    const applied: string[] = [];
    credentials.onChange((o) => applied.push(new X509Certificate(o.cert as Buffer).fingerprint256));
    expect(await credentials.reload()).toBe('unchanged');

    copyFileSync(pki.rotated.certFile, join(dir, 'tls.crt'));
    copyFileSync(pki.rotated.keyFile, join(dir, 'tls.key'));
    expect(await credentials.reload()).toBe('reloaded');
    expect(credentials.certificate().fingerprint256).toBe(fingerprint(pki.rotated.certFile));
    expect(applied).toEqual([fingerprint(pki.rotated.certFile)]);
    expect(lines.find((l) => l.msg === 'otlp.tls: certificate reloaded')?.fields).toMatchObject({ certFile: config.certFile, certificate: { sha256: fingerprint(pki.rotated.certFile) } });

    // Only the certificate rotated: the key no longer matches. The certificate in use stays, one error says why.
    copyFileSync(pki.server.certFile, join(dir, 'tls.crt'));
    expect(await credentials.reload()).toBe('refused');
    expect(await credentials.reload()).toBe('unchanged');
    expect(credentials.certificate().fingerprint256).toBe(fingerprint(pki.rotated.certFile));
    const errors = lines.filter((l) => l.level === 'error');
    expect(errors.map((l) => l.msg)).toEqual([`otlp.tls.keyFile ${config.keyFile} is not the key of the certificate in otlp.tls.certFile ${config.certFile}; still serving the certificate loaded before`]);
    // A file gone for a while: logged once too, and the certificate in use stays.
    rmSync(join(dir, 'tls.key'));
    expect(await credentials.reload()).toBe('refused');
    expect(await credentials.reload()).toBe('refused');
    expect(lines.filter((l) => l.level === 'error')).toHaveLength(2);
    copyFileSync(pki.server.keyFile, join(dir, 'tls.key'));
    expect(await credentials.reload()).toBe('reloaded');
    expect(credentials.certificate().fingerprint256).toBe(fingerprint(pki.server.certFile));
    expect(applied).toEqual([fingerprint(pki.rotated.certFile), fingerprint(pki.server.certFile)]);
    expect(JSON.stringify(lines)).not.toContain(pemBody(pki.server.keyFile));
    expect(JSON.stringify(lines)).not.toContain(pemBody(pki.rotated.keyFile));
  });

  it('sees a Kubernetes Secret volume update: the ..data symlink swapped to a new folder', async () => {
    // The kubelet writes a Secret's files into a new timestamped folder and renames a symlink over ..data; the
    // paths hookwatch reads (tls.crt -> ..data/tls.crt) never change, nor does any file's modification time.
    const root = join(pki.dir, `secret-${Math.random().toString(36).slice(2)}`);
    const version = (name: string, files: CertFiles): void => {
      mkdirSync(join(root, name), { recursive: true });
      copyFileSync(files.certFile, join(root, name, 'tls.crt'));
      copyFileSync(files.keyFile, join(root, name, 'tls.key'));
      copyFileSync(pki.ca.certFile, join(root, name, 'ca.crt'));
    };
    version('..2026_01_01', pki.server);
    symlinkSync('..2026_01_01', join(root, '..data'));
    for (const f of ['tls.crt', 'tls.key', 'ca.crt']) symlinkSync(join('..data', f), join(root, f));
    const credentials = open({ section: 'http.tls', certFile: join(root, 'tls.crt'), keyFile: join(root, 'tls.key'), clientCaFile: join(root, 'ca.crt'), minVersion: '1.2', reloadIntervalMs: 1000 });
    version('..2026_02_01', pki.rotated);
    symlinkSync('..2026_02_01', join(root, '..data_tmp'));
    renameSync(join(root, '..data_tmp'), join(root, '..data'));
    expect(await credentials.reload()).toBe('reloaded');
    expect(credentials.certificate().fingerprint256).toBe(fingerprint(pki.rotated.certFile));
  });

  it('reads the files again every reloadInterval once started, and not after stop', async () => {
    const { dir, config } = served(pki.server);
    const credentials = open(config);
    credentials.start();
    copyFileSync(pki.rotated.certFile, join(dir, 'tls.crt'));
    copyFileSync(pki.rotated.keyFile, join(dir, 'tls.key'));
    await expect.poll(() => credentials.certificate().fingerprint256, { timeout: 5000, interval: 100 }).toBe(fingerprint(pki.rotated.certFile));
    credentials.stop();
    copyFileSync(pki.server.certFile, join(dir, 'tls.crt'));
    copyFileSync(pki.server.keyFile, join(dir, 'tls.key'));
    await new Promise((r) => setTimeout(r, 1500));
    expect(credentials.certificate().fingerprint256).toBe(fingerprint(pki.rotated.certFile));
  });

  it('warns of a certificate clients will refuse for its dates', () => {
    const { config } = served(pki.server);
    const validTo = Date.parse(new X509Certificate(readFileSync(pki.server.certFile)).validTo);
    const validFrom = Date.parse(new X509Certificate(readFileSync(pki.server.certFile)).validFrom);
    const warnings = (now: number): string[] => {
      const { logger, lines } = recordingLogger();
      open(config, logger, now);
      return lines.filter((l) => l.level === 'warn').map((l) => l.msg);
    };
    expect(warnings(Date.now())).toEqual([]);
    expect(warnings(validTo + 1000)).toEqual([`otlp.tls.certFile ${config.certFile}: the certificate expired at ${new Date(validTo).toISOString()}; clients will refuse it`]);
    expect(warnings(validFrom - 1000)).toEqual([`otlp.tls.certFile ${config.certFile}: the certificate is not valid before ${new Date(validFrom).toISOString()}; clients will refuse it until then`]);
  });
});
