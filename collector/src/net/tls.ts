/**
 * The certificate, key and client CA a listener serves TLS with (`otlp.tls.*`, `http.tls.*`): read and checked
 * at start, where a file that cannot be used stops hookwatch with a message naming the setting, then read again
 * every reloadInterval, so a rotated certificate (cert-manager renewing it, a Kubernetes Secret updated in its
 * mounted volume) serves new connections without a restart. A new set that cannot be used is logged as an
 * error, once, and the set in use is kept. Files are compared by content, not by time, so the atomic symlink
 * swap Kubernetes makes in a Secret volume counts as a change like any write.
 *
 * What a key file holds never reaches a message: errors name the setting, the path and what is wrong.
 */
import { createHash, createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import { ConfigError } from '../config/setting.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { TlsConfig } from './settings.ts';

interface TlsFiles {
  cert: Buffer;
  key: Buffer;
  ca: Buffer | undefined;
}

/** What is served: the options a TLS server's secure context takes, and the certificate for logs. */
interface Loaded {
  options: SecureContextOptions;
  certificate: X509Certificate;
}

/** A problem with the files, as a message naming the setting. */
class TlsFileError extends Error {
  override name = 'TlsFileError';
}

function readError(key: string, path: string, err: unknown): TlsFileError {
  const code = (err as NodeJS.ErrnoException).code ?? 'error';
  return new TlsFileError(`${key} ${path}: cannot read it (${code})`);
}

function digest(files: TlsFiles): string {
  const h = createHash('sha256');
  for (const part of [files.cert, files.key, files.ca ?? Buffer.alloc(0)]) h.update(String(part.length)).update(':').update(part);
  return h.digest('hex');
}

/** Checks the files and builds the secure context's options; throws TlsFileError naming the setting. */
function check(config: TlsConfig, files: TlsFiles): Loaded {
  const { section } = config;
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(files.cert);
  } catch {
    throw new TlsFileError(`${section}.certFile ${config.certFile}: no PEM certificate in it`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(files.key);
  } catch {
    throw new TlsFileError(`${section}.keyFile ${config.keyFile}: no PEM private key in it (an encrypted key cannot be used)`);
  }
  let matches: boolean;
  try {
    matches = certificate.checkPrivateKey(key);
  } catch {
    matches = false;
  }
  if (!matches) {
    throw new TlsFileError(`${section}.keyFile ${config.keyFile} is not the key of the certificate in ${section}.certFile ${config.certFile}`);
  }
  if (files.ca) {
    try {
      new X509Certificate(files.ca);
    } catch {
      throw new TlsFileError(`${section}.clientCaFile ${config.clientCaFile}: no PEM certificate in it`);
    }
  }
  const options: SecureContextOptions = {
    cert: files.cert,
    key: files.key,
    ...(files.ca ? { ca: files.ca } : {}),
    minVersion: config.minVersion === '1.3' ? 'TLSv1.3' : 'TLSv1.2',
  };
  try {
    createSecureContext(options);
  } catch (err) {
    // OpenSSL's reason ("ee key too small", "no certificate or crl found"), never the files' text.
    throw new TlsFileError(`${section}: the certificate, key or client CA cannot be used (${(err as Error).message})`);
  }
  return { options, certificate };
}

/** What a log line says of a certificate: who it names, until when, and its fingerprint. */
export function describeCertificate(c: X509Certificate): Record<string, string> {
  return { subject: c.subject.replace(/\n/g, ', '), issuer: c.issuer.replace(/\n/g, ', '), notAfter: new Date(c.validTo).toISOString(), sha256: c.fingerprint256 };
}

export type ReloadOutcome = 'unchanged' | 'reloaded' | 'refused';

export class TlsCredentials {
  readonly config: TlsConfig;
  /** Mutual TLS: clients must present a certificate signed by the client CA. */
  readonly mutual: boolean;
  private readonly logger: Logger;
  private readonly now: () => number;
  private loaded: Loaded;
  /** The files as last read, used or refused, so one bad set is logged once and not at every interval. */
  private seen: string;
  private lastProblem: string | undefined;
  private readonly listeners = new Set<(options: SecureContextOptions) => void>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<ReloadOutcome> | undefined;

  private constructor(config: TlsConfig, logger: Logger, now: () => number, files: TlsFiles, loaded: Loaded) {
    this.config = config;
    this.mutual = config.clientCaFile !== '';
    this.logger = logger;
    this.now = now;
    this.loaded = loaded;
    this.seen = digest(files);
  }

  /** Reads and checks the files now; a problem is a ConfigError naming the setting (hookwatch does not start). */
  static open(config: TlsConfig, logger: Logger, now: () => number = Date.now): TlsCredentials {
    const read = (key: string, path: string): Buffer => {
      try {
        return readFileSync(path);
      } catch (err) {
        throw new ConfigError(readError(`${config.section}.${key}`, path, err).message);
      }
    };
    const files = { cert: read('certFile', config.certFile), key: read('keyFile', config.keyFile), ca: config.clientCaFile ? read('clientCaFile', config.clientCaFile) : undefined };
    let loaded: Loaded;
    try {
      loaded = check(config, files);
    } catch (err) {
      if (err instanceof TlsFileError) throw new ConfigError(err.message);
      throw err;
    }
    const credentials = new TlsCredentials(config, logger, now, files, loaded);
    credentials.noteValidity('serving');
    return credentials;
  }

  /** The secure context's options now: certificate, key, client CA and lowest version. */
  contextOptions(): SecureContextOptions {
    return this.loaded.options;
  }

  /** Options for a TLS server: the context's, and whether a client certificate is required. */
  serverOptions(): SecureContextOptions & { requestCert: boolean; rejectUnauthorized: boolean } {
    return { ...this.loaded.options, requestCert: this.mutual, rejectUnauthorized: this.mutual };
  }

  /** The certificate served now. */
  certificate(): X509Certificate {
    return this.loaded.certificate;
  }

  /** Calls `listener` with the new options each time a changed set of files is taken into use. */
  onChange(listener: (options: SecureContextOptions) => void): void {
    this.listeners.add(listener);
  }

  /** Reads the files every reloadInterval until stop(). Safe to call twice. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.reload(), this.config.reloadIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Reads the files again now; a changed, usable set is taken into use, an unusable one logged and refused. */
  reload(): Promise<ReloadOutcome> {
    this.running ??= this.readAndApply().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async readAndApply(): Promise<ReloadOutcome> {
    const { section } = this.config;
    const read = async (key: string, path: string): Promise<Buffer> => {
      try {
        return await readFile(path);
      } catch (err) {
        throw readError(`${section}.${key}`, path, err);
      }
    };
    let files: TlsFiles;
    try {
      files = {
        cert: await read('certFile', this.config.certFile),
        key: await read('keyFile', this.config.keyFile),
        ca: this.config.clientCaFile ? await read('clientCaFile', this.config.clientCaFile) : undefined,
      };
    } catch (err) {
      this.refuse((err as Error).message);
      return 'refused';
    }
    const now = digest(files);
    if (now === this.seen) {
      // Readable again after a moment it was not: a later problem is news again.
      this.lastProblem = undefined;
      return 'unchanged';
    }
    this.seen = now;
    let loaded: Loaded;
    try {
      loaded = check(this.config, files);
    } catch (err) {
      // check() says what is wrong as a TlsFileError; anything else still must not end the process from a timer.
      this.refuse(err instanceof TlsFileError ? err.message : `${section}: the new files cannot be used`);
      return 'refused';
    }
    this.loaded = loaded;
    this.lastProblem = undefined;
    for (const listener of this.listeners) {
      try {
        listener(loaded.options);
      } catch (err) {
        this.logger.error(`${section}: a listener could not take the new certificate into use`, { err });
      }
    }
    this.noteValidity('reloaded');
    return 'reloaded';
  }

  /** Logs a set of files that cannot be used, once per problem; the certificate in use stays. */
  private refuse(problem: string): void {
    if (problem === this.lastProblem) return;
    this.lastProblem = problem;
    this.logger.error(`${problem}; still serving the certificate loaded before`, { setting: this.config.section, certificate: describeCertificate(this.loaded.certificate) });
  }

  /** Logs the certificate taken into use, and warns when clients will refuse it for its dates. */
  private noteValidity(what: 'serving' | 'reloaded'): void {
    const c = this.loaded.certificate;
    const fields = { setting: this.config.section, certFile: this.config.certFile, mutual: this.mutual, certificate: describeCertificate(c) };
    this.logger.info(what === 'serving' ? `${this.config.section}: serving TLS` : `${this.config.section}: certificate reloaded`, fields);
    const now = this.now();
    if (Date.parse(c.validTo) < now) this.logger.warn(`${this.config.section}.certFile ${this.config.certFile}: the certificate expired at ${new Date(c.validTo).toISOString()}; clients will refuse it`, fields);
    else if (Date.parse(c.validFrom) > now) this.logger.warn(`${this.config.section}.certFile ${this.config.certFile}: the certificate is not valid before ${new Date(c.validFrom).toISOString()}; clients will refuse it until then`, fields);
  }
}
