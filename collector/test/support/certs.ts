/**
 * Throwaway certificates for TLS tests, made with the openssl command at test time (nothing is committed): a CA,
 * server certificates for localhost and 127.0.0.1, client certificates for mutual TLS. EC P-256 keys, so making
 * them takes milliseconds.
 */
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type ConnectionOptions } from 'node:tls';
import { afterAll, beforeAll } from 'vitest';
import { requireTool, runs } from '../required-tool.ts';

/** Whether openssl can be run; under CI=true its absence fails instead. */
export const HAVE_OPENSSL = requireTool(runs('openssl', ['version']), 'openssl', 'apt-get install openssl');

export interface CertFiles {
  certFile: string;
  keyFile: string;
}

export interface Authority extends CertFiles {
  name: string;
  dir: string;
}

function openssl(args: readonly string[]): void {
  const r = spawnSync('openssl', args, { encoding: 'utf8', timeout: 20_000 });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${r.stderr}`);
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A self-signed CA named `name`, its files in `dir` (`<name>-ca.crt`, `<name>-ca.key`). */
export function certAuthority(dir: string, name: string): Authority {
  const certFile = join(dir, `${name}-ca.crt`);
  const keyFile = join(dir, `${name}-ca.key`);
  openssl(['req', '-x509', ...EC_KEY, '-days', '2', '-subj', `/CN=${name} test CA`, '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-keyout', keyFile, '-out', certFile]);
  return { name, dir, certFile, keyFile };
}

/**
 * A certificate signed by `ca`: for a server (names localhost and 127.0.0.1) or a client. `file` names its files
 * (`<file>.crt`, `<file>.key`) in the CA's folder.
 */
export function issue(ca: Authority, file: string, use: 'server' | 'client', opts: { days?: number } = {}): CertFiles {
  const certFile = join(ca.dir, `${file}.crt`);
  const keyFile = join(ca.dir, `${file}.key`);
  const csr = join(ca.dir, `${file}.csr`);
  const ext = join(ca.dir, `${file}.ext`);
  openssl(['req', '-new', ...EC_KEY, '-subj', `/CN=${file}`, '-keyout', keyFile, '-out', csr]);
  writeFileSync(ext, use === 'server' ? 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' : 'extendedKeyUsage=clientAuth\n');
  openssl(['x509', '-req', '-in', csr, '-CA', ca.certFile, '-CAkey', ca.keyFile, '-CAcreateserial', '-days', String(opts.days ?? 1), '-extfile', ext, '-out', certFile]);
  return { certFile, keyFile };
}

/** The first line of a PEM file's base64 body: a test can check that it appears nowhere it should not. */
export function pemBody(file: string): string {
  const line = readFileSync(file, 'utf8').split('\n').find((l) => l !== '' && !l.startsWith('-----'));
  if (!line) throw new Error(`no PEM body in ${file}`);
  return line;
}

/**
 * What a file of TLS tests uses: a team CA issuing hookwatch's certificate (`server`, for localhost and 127.0.0.1),
 * its renewal (`rotated`) and a client's (`client`), and another CA (`other`) with a client certificate of its
 * own (`stranger`), all in one temporary folder (`dir`).
 */
export interface TestPki {
  dir: string;
  ca: Authority;
  other: Authority;
  server: CertFiles;
  rotated: CertFiles;
  client: CertFiles;
  stranger: CertFiles;
}

/**
 * A TestPki made before the enclosing describe's tests (beforeAll) and removed after them; its fields are there
 * from the first test on. Call it inside the describe that needs it, so a skipped describe makes nothing.
 */
export function useTestPki(prefix: string): TestPki {
  const pki = {} as TestPki;
  let cleanup = (): void => {};
  beforeAll(() => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    cleanup = () => rmSync(dir, { recursive: true, force: true });
    const ca = certAuthority(dir, 'team');
    const other = certAuthority(dir, 'other');
    Object.assign(pki, {
      dir, ca, other,
      server: issue(ca, 'hookwatch', 'server'),
      rotated: issue(ca, 'hookwatch-renewed', 'server'),
      client: issue(ca, 'client', 'client'),
      stranger: issue(other, 'stranger', 'client'),
    } satisfies TestPki);
  });
  afterAll(() => cleanup());
  return pki;
}

/** The SHA-256 fingerprint of the certificate in `file`. */
export const fingerprint = (file: string): string => new X509Certificate(readFileSync(file)).fingerprint256;

/** The certificate a fresh TLS connection to `port` on 127.0.0.1 is shown (its fingerprint). */
export function servedFingerprint(port: number, opts: ConnectionOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false, ...opts }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.end();
    });
    socket.once('error', reject);
  });
}
