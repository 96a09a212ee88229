/**
 * The TLS files hookwatch reads, as a listener (`otlp.tls.*`, `http.tls.*`: a certificate, its key and a client
 * CA) and as a client of the forwarding destination (`forward.tls.*`: a CA to trust, a client certificate and
 * key). They are read and checked at start, where a file that cannot be used stops hookwatch with a message
 * naming the setting, then read again every reloadInterval, so a rotated certificate (cert-manager renewing it, a
 * Kubernetes Secret updated in its mounted volume) is used for new connections without a restart. A new set that
 * cannot be used is logged as an error, once, and the set in use is kept. Files are compared by content, not by
 * time, so the atomic symlink swap Kubernetes makes in a Secret volume counts as a change like any write.
 *
 * What a key file holds never reaches a message: errors name the setting, the path and what is wrong.
 */
import { createHash, createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import { FileTooLargeError, readBounded, readBoundedSync } from '../config/bounded-read.ts';
import { ConfigError } from '../config/setting.ts';
import type { Logger } from '../telemetry/logger.ts';
import { TLS_DEFAULTS, type ClientTlsConfig, type TlsConfig, type TlsMinVersion } from './settings.ts';

/**
 * The most a TLS file may hold: over four times a system's whole CA bundle (Debian's is 220 KB). A device
 * (/dev/zero) or a large file named by mistake is refused once past it, instead of filling memory.
 */
export const MAX_TLS_FILE_BYTES = 1024 * 1024;
const PEM_FILE = 'PEM file';

/** The files of a set by their setting's last part (`certFile`); undefined for one not set. */
type TlsFiles = Record<string, Buffer | undefined>;

/** A problem with the files, as a message naming the setting. */
class TlsFileError extends Error {
  override name = 'TlsFileError';
}

function readError(key: string, path: string, err: unknown): TlsFileError {
  if (err instanceof FileTooLargeError) return new TlsFileError(`${key} ${path}: ${err.message}`);
  const code = (err as NodeJS.ErrnoException).code ?? 'error';
  return new TlsFileError(`${key} ${path}: cannot read it (${code})`);
}

function digest(files: TlsFiles): string {
  const h = createHash('sha256');
  for (const name of Object.keys(files).sort()) {
    const part = files[name] ?? Buffer.alloc(0);
    h.update(name).update(':').update(String(part.length)).update(':').update(part);
  }
  return h.digest('hex');
}

/** Reads the files now, at start: one that cannot be read is a ConfigError naming its setting. */
function readNow(section: string, paths: Record<string, string>): TlsFiles {
  const files: TlsFiles = {};
  for (const [name, path] of Object.entries(paths)) {
    if (path === '') {
      files[name] = undefined;
      continue;
    }
    try {
      files[name] = readBoundedSync(path, MAX_TLS_FILE_BYTES, PEM_FILE);
    } catch (err) {
      throw new ConfigError(readError(`${section}.${name}`, path, err).message);
    }
  }
  return files;
}

/**
 * Reads the files and checks them now, at start (`check` throws TlsFileError on a set that cannot be used): any
 * problem is a ConfigError naming the setting, and hookwatch does not start.
 */
function loadNow<L>(section: string, paths: Record<string, string>, check: (files: TlsFiles) => L): { files: TlsFiles; loaded: L } {
  const files = readNow(section, paths);
  try {
    return { files, loaded: check(files) };
  } catch (err) {
    if (err instanceof TlsFileError) throw new ConfigError(err.message);
    throw err;
  }
}

/** A certificate and its key, checked to belong together; throws TlsFileError naming the settings. */
function checkKeyPair(section: string, certFile: string, keyFile: string, cert: Buffer, key: Buffer): X509Certificate {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(cert);
  } catch {
    throw new TlsFileError(`${section}.certFile ${certFile}: no PEM certificate in it`);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    throw new TlsFileError(`${section}.keyFile ${keyFile}: no PEM private key in it (an encrypted key cannot be used)`);
  }
  let matches: boolean;
  try {
    matches = certificate.checkPrivateKey(privateKey);
  } catch {
    matches = false;
  }
  if (!matches) throw new TlsFileError(`${section}.keyFile ${keyFile} is not the key of the certificate in ${section}.certFile ${certFile}`);
  return certificate;
}

/** A file of CA certificates; throws TlsFileError naming the setting when it holds none. */
function checkCa(setting: string, path: string, ca: Buffer): void {
  try {
    new X509Certificate(ca);
  } catch {
    throw new TlsFileError(`${setting} ${path}: no PEM certificate in it`);
  }
}

/** OpenSSL's reason ("ee key too small", "no certificate or crl found") for options it refuses, never the files' text. */
function checkContext(section: string, what: string, options: SecureContextOptions): void {
  try {
    createSecureContext(options);
  } catch (err) {
    throw new TlsFileError(`${section}: the ${what} cannot be used (${(err as Error).message})`);
  }
}

/** A `minVersion` setting (`1.2`, `1.3`) as OpenSSL names the protocol. */
function protocolVersion(v: TlsMinVersion): 'TLSv1.2' | 'TLSv1.3' {
  return v === '1.3' ? 'TLSv1.3' : 'TLSv1.2';
}

/** The lowest TLS version a client offers when no `<section>.minVersion` applies (no TLS settings at all). */
export const DEFAULT_CLIENT_MIN_VERSION = protocolVersion(TLS_DEFAULTS.minVersion);

/** What a log line says of a certificate: who it names, until when, and its fingerprint. */
export function describeCertificate(c: X509Certificate): Record<string, string> {
  return { subject: c.subject.replace(/\n/g, ', '), issuer: c.issuer.replace(/\n/g, ', '), notAfter: new Date(c.validTo).toISOString(), sha256: c.fingerprint256 };
}

export type ReloadOutcome = 'unchanged' | 'reloaded' | 'refused';

/**
 * A set of TLS files in use and its reloading: every reloadInterval the files are read, a changed set is
 * checked (`check`) and taken into use (`taken`), or refused and logged once (`refused`) with the set in use kept.
 */
abstract class ReloadingTlsFiles<L> {
  protected loaded: L;
  private readonly section: string;
  private readonly paths: Record<string, string>;
  private readonly reloadIntervalMs: number;
  /** The files as last read, used or refused, so one bad set is logged once and not at every interval. */
  private seen: string;
  private lastProblem: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<ReloadOutcome> | undefined;

  protected constructor(section: string, paths: Record<string, string>, reloadIntervalMs: number, files: TlsFiles, loaded: L) {
    this.section = section;
    this.paths = paths;
    this.reloadIntervalMs = reloadIntervalMs;
    this.loaded = loaded;
    this.seen = digest(files);
  }

  /** Checks a set of files and builds what is used; throws TlsFileError naming the setting. */
  protected abstract check(files: TlsFiles): L;
  /** A changed set was checked and is now in use. */
  protected abstract taken(loaded: L): void;
  /** A set that cannot be used, once per problem. */
  protected abstract refused(problem: string): void;

  /** Reads the files every reloadInterval until stop(). Safe to call twice. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.reload(), this.reloadIntervalMs);
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
    const files: TlsFiles = {};
    try {
      for (const [name, path] of Object.entries(this.paths)) {
        try {
          files[name] = path === '' ? undefined : await readBounded(path, MAX_TLS_FILE_BYTES, PEM_FILE);
        } catch (err) {
          throw readError(`${this.section}.${name}`, path, err);
        }
      }
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
    let loaded: L;
    try {
      loaded = this.check(files);
    } catch (err) {
      // check() says what is wrong as a TlsFileError; anything else still must not end the process from a timer.
      this.refuse(err instanceof TlsFileError ? err.message : `${this.section}: the new files cannot be used`);
      return 'refused';
    }
    this.loaded = loaded;
    this.lastProblem = undefined;
    this.taken(loaded);
    return 'reloaded';
  }

  private refuse(problem: string): void {
    if (problem === this.lastProblem) return;
    this.lastProblem = problem;
    this.refused(problem);
  }
}

/** What a listener serves: the options a TLS server's secure context takes, and the certificate for logs. */
interface Served {
  options: SecureContextOptions;
  certificate: X509Certificate;
}

/** Checks a listener's files and builds the secure context's options; throws TlsFileError naming the setting. */
function checkServed(config: TlsConfig, files: TlsFiles): Served {
  const { section } = config;
  const cert = files['certFile'] as Buffer;
  const key = files['keyFile'] as Buffer;
  const ca = files['clientCaFile'];
  const certificate = checkKeyPair(section, config.certFile, config.keyFile, cert, key);
  if (ca) checkCa(`${section}.clientCaFile`, config.clientCaFile, ca);
  const options: SecureContextOptions = { cert, key, ...(ca ? { ca } : {}), minVersion: protocolVersion(config.minVersion) };
  checkContext(section, 'certificate, key or client CA', options);
  return { options, certificate };
}

/** The files of a listener by setting. */
function servedPaths(config: TlsConfig): Record<string, string> {
  return { certFile: config.certFile, keyFile: config.keyFile, clientCaFile: config.clientCaFile };
}

/** The certificate, key and client CA a listener serves TLS with. */
export class TlsCredentials extends ReloadingTlsFiles<Served> {
  readonly config: TlsConfig;
  /** Mutual TLS: clients must present a certificate signed by the client CA. */
  readonly mutual: boolean;
  private readonly logger: Logger;
  private readonly now: () => number;
  private readonly listeners = new Set<(options: SecureContextOptions) => void>();

  private constructor(config: TlsConfig, logger: Logger, now: () => number, files: TlsFiles, loaded: Served) {
    super(config.section, servedPaths(config), config.reloadIntervalMs, files, loaded);
    this.config = config;
    this.mutual = config.clientCaFile !== '';
    this.logger = logger;
    this.now = now;
  }

  /** Reads and checks the files now; a problem is a ConfigError naming the setting (hookwatch does not start). */
  static open(config: TlsConfig, logger: Logger, now: () => number = Date.now): TlsCredentials {
    const { files, loaded } = loadNow(config.section, servedPaths(config), (f) => checkServed(config, f));
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

  protected check(files: TlsFiles): Served {
    return checkServed(this.config, files);
  }

  protected taken(loaded: Served): void {
    for (const listener of this.listeners) {
      try {
        listener(loaded.options);
      } catch (err) {
        this.logger.error(`${this.config.section}: a listener could not take the new certificate into use`, { err });
      }
    }
    this.noteValidity('reloaded');
  }

  /** Logs a set of files that cannot be used; the certificate in use stays. */
  protected refused(problem: string): void {
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

/**
 * What a TLS connection to a server is made with: the CAs its certificate must chain to (undefined: the
 * system's), a client certificate and key (mutual TLS), the name its certificate must carry (undefined: the
 * host connected to), whether the certificate is checked at all and the lowest TLS version. The names are those
 * of tls.connect().
 */
export interface ClientTlsOptions {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  servername?: string;
  rejectUnauthorized: boolean;
  /** The lowest TLS version offered: a server speaking only older ones fails the handshake. */
  minVersion: 'TLSv1.2' | 'TLSv1.3';
}

/** What a client connects with, and its client certificate for logs. */
interface Presented {
  options: ClientTlsOptions;
  certificate: X509Certificate | undefined;
}

function clientPaths(config: ClientTlsConfig): Record<string, string> {
  return { caFile: config.caFile, certFile: config.certFile, keyFile: config.keyFile };
}

/** Checks a client's files and builds the connection options; throws TlsFileError naming the setting. */
function checkPresented(config: ClientTlsConfig, files: TlsFiles): Presented {
  const { section } = config;
  const ca = files['caFile'];
  const cert = files['certFile'];
  const key = files['keyFile'];
  if (ca) checkCa(`${section}.caFile`, config.caFile, ca);
  const certificate = cert && key ? checkKeyPair(section, config.certFile, config.keyFile, cert, key) : undefined;
  const options: ClientTlsOptions = {
    ...(ca ? { ca } : {}),
    ...(cert && key ? { cert, key } : {}),
    ...(config.serverName ? { servername: config.serverName } : {}),
    rejectUnauthorized: !config.insecureSkipVerify,
    minVersion: protocolVersion(config.minVersion),
  };
  checkContext(section, 'CA, client certificate or key', { ...(ca ? { ca } : {}), ...(cert && key ? { cert, key } : {}) });
  return { options, certificate };
}

/**
 * The TLS a client connects with (`forward.tls.*`): a CA to trust instead of the system's, a client certificate
 * and key, the server name, whether the server's certificate is checked, the lowest TLS version. `generation`
 * grows each time a rotated set of files is taken into use, so the connections made from then on use it.
 */
export class ClientTlsCredentials extends ReloadingTlsFiles<Presented> {
  readonly config: ClientTlsConfig;
  private readonly logger: Logger;
  private readonly now: () => number;
  private taking = 0;

  private constructor(config: ClientTlsConfig, logger: Logger, now: () => number, files: TlsFiles, loaded: Presented) {
    super(config.section, clientPaths(config), config.reloadIntervalMs, files, loaded);
    this.config = config;
    this.logger = logger;
    this.now = now;
  }

  /** Reads and checks the files now; a problem is a ConfigError naming the setting (hookwatch does not start). */
  static open(config: ClientTlsConfig, logger: Logger, now: () => number = Date.now): ClientTlsCredentials {
    const { files, loaded } = loadNow(config.section, clientPaths(config), (f) => checkPresented(config, f));
    const credentials = new ClientTlsCredentials(config, logger, now, files, loaded);
    if (config.insecureSkipVerify) logger.warn(`${config.section}.insecureSkipVerify is on: the server's certificate is not checked, so anyone between hookwatch and it can read and change what is sent`, { setting: config.section });
    credentials.noteValidity('using');
    return credentials;
  }

  /** What a connection is made with now. */
  connectOptions(): ClientTlsOptions {
    return this.loaded.options;
  }

  /** Grows by one each time a changed set of files is taken into use. */
  get generation(): number {
    return this.taking;
  }

  protected check(files: TlsFiles): Presented {
    return checkPresented(this.config, files);
  }

  protected taken(): void {
    this.taking++;
    this.noteValidity('reloaded');
  }

  protected refused(problem: string): void {
    this.logger.error(`${problem}; still using the files loaded before`, { setting: this.config.section });
  }

  /** Logs what connections are made with, and warns of a client certificate servers will refuse for its dates. */
  private noteValidity(what: 'using' | 'reloaded'): void {
    const { section, caFile, certFile } = this.config;
    const c = this.loaded.certificate;
    const fields = { setting: section, ...(caFile ? { caFile } : {}), ...(c ? { certFile, certificate: describeCertificate(c) } : {}) };
    this.logger.info(what === 'using' ? `${section}: files loaded` : `${section}: files reloaded`, fields);
    if (!c) return;
    const now = this.now();
    if (Date.parse(c.validTo) < now) this.logger.warn(`${section}.certFile ${certFile}: the client certificate expired at ${new Date(c.validTo).toISOString()}; servers will refuse it`, fields);
    else if (Date.parse(c.validFrom) > now) this.logger.warn(`${section}.certFile ${certFile}: the client certificate is not valid before ${new Date(c.validFrom).toISOString()}; servers will refuse it until then`, fields);
  }
}

/** Verification results of OpenSSL, as Node names them in an error's code, that mean the server's certificate was refused. */
const VERIFY_CODES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_SIGNATURE_FAILURE', 'CERT_UNTRUSTED', 'CERT_REJECTED',
  'CERT_REVOKED', 'CERT_CHAIN_TOO_LONG', 'INVALID_CA', 'INVALID_PURPOSE', 'PATH_LENGTH_EXCEEDED', 'HOSTNAME_MISMATCH',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY', 'ERROR_IN_CERT_NOT_BEFORE_FIELD', 'ERROR_IN_CERT_NOT_AFTER_FIELD', 'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * The same failures as their messages read, for clients that pass on only the text (grpc-js), and a server's
 * alert refusing the client's certificate or the handshake, and a plain-text server answered in TLS.
 */
const TLS_FAILURE_TEXT = /self[- ]signed certificate|unable to (?:verify the first certificate|get (?:local )?issuer certificate)|certificate (?:has expired|is not yet valid|signature failure|has been revoked|chain too long)|invalid CA certificate|unsupported certificate purpose|Hostname\/IP does not match certificate's altnames|alert (?:bad certificate|certificate required|unknown ca|certificate unknown|certificate expired|certificate revoked|unsupported certificate|handshake failure|access denied|protocol version)|wrong version number|packet length too long/i;

/**
 * When a connection failed in its TLS handshake (the server's certificate not trusted, for another name or out
 * of date; the client's refused; no TLS spoken), a short reason for logs; undefined for any other failure.
 */
export function tlsFailure(err: { code?: unknown; message?: unknown } | undefined): string | undefined {
  if (!err) return undefined;
  const code = typeof err.code === 'string' ? err.code : '';
  const message = typeof err.message === 'string' ? err.message : '';
  if (!VERIFY_CODES.has(code) && !/^ERR_SSL_/.test(code) && !TLS_FAILURE_TEXT.test(message)) return undefined;
  const reason = message
    // OpenSSL's long form (`...:error:0A00045C:SSL routines:...:tlsv13 alert certificate required:file:line:...`): its reason.
    .replace(/^[\s\S]*SSL routines:[^:]*:([^:]+):[\s\S]*$/, '$1')
    // grpc-js's wrapping of the connection's last error.
    .replace(/^No connection established\. Last error: (?:Error(?: \[\w+\])?: )?/, '')
    .replace(/\s*(?:\(\d{4}-\d\d-\d\dT[^)]*\)\.?)?\s*Resolution note:[\s\S]*$/, '')
    // Node's advice to use the system's CAs does not help with a private CA: forward.tls.caFile does.
    .replace(/; if the root CA is installed locally[\s\S]*$/, '')
    .trim() || code;
  return code && !reason.includes(code) ? `${reason} (${code})` : reason;
}
