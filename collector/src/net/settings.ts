/**
 * TLS on a listener, as the OpenTelemetry Collector's receivers (configtls) and Prometheus (web.config) offer it:
 * a certificate and key, a client CA that turns on mutual TLS, the lowest protocol version, and how often the
 * files are checked for a rotated certificate. The rows and their typed reading, shared by the receivers'
 * `otlp.tls.*` and the HTTP port's `http.tls.*` so both spell and check them alike. And TLS as a client
 * (`forward.tls.*`), with the names the alert receivers' `tls` uses (Prometheus' tls_config): a CA file, a client
 * certificate and key, the server name, insecureSkipVerify. A leaf: the stages' settings modules list these
 * rows; net/tls.ts reads the files.
 */
import { isIP } from 'node:net';
import { ConfigError, type Setting, type SettingValues } from '../config/setting.ts';
import { shortSecretProblem } from '../config/values.ts';

export const TLS_MIN_VERSIONS = ['1.2', '1.3'] as const;
export type TlsMinVersion = (typeof TLS_MIN_VERSIONS)[number];

/** The defaults of the TLS rows, the same in every section and in an alert receiver's `tls`. */
export const TLS_DEFAULTS = { caFile: '', certFile: '', keyFile: '', clientCaFile: '', serverName: '', insecureSkipVerify: false, minVersion: '1.2', reloadInterval: 30_000 } as const satisfies Record<string, unknown> & { minVersion: TlsMinVersion };
type TlsName = keyof typeof TLS_DEFAULTS;

/** TLS of one listener (or of the two OTLP receivers together). */
export interface TlsConfig {
  /** The settings' prefix, e.g. `otlp.tls`: messages name `<section>.certFile` and the like. */
  section: string;
  certFile: string;
  keyFile: string;
  /** Empty: clients are not asked for a certificate. Otherwise mutual TLS against these CA certificates. */
  clientCaFile: string;
  minVersion: TlsMinVersion;
  reloadIntervalMs: number;
}

/**
 * The rows of `<section>.*` (e.g. `otlp.tls`), their variables under `<envPrefix>_*` (`HOOKWATCH_OTLP_TLS`);
 * `where` names the listeners in the descriptions ("both OTLP ports"), `speaks` what they speak with TLS on.
 */
export function tlsSettings(section: string, envPrefix: string, where: string, speaks: string): Setting[] {
  return [
    {
      key: `${section}.certFile`, env: `${envPrefix}_CERT_FILE`, type: 'file', default: TLS_DEFAULTS.certFile,
      description: `PEM certificate for ${where}, followed by any intermediate certificates. Set with \`${section}.keyFile\`, it turns TLS on there (${speaks}) and a client speaking plain text is refused: a plain-HTTP request (an \`http://\` URL) gets 400 saying to use \`https://\`, anything else a closed connection. Unset (the default): plain text.`,
    },
    {
      key: `${section}.keyFile`, env: `${envPrefix}_KEY_FILE`, type: 'file', default: TLS_DEFAULTS.keyFile,
      description: `PEM private key (unencrypted) of \`${section}.certFile\`. Its path may show in logs and \`hookwatch config\`; what the file holds never does.`,
    },
    {
      key: `${section}.clientCaFile`, env: `${envPrefix}_CLIENT_CA_FILE`, type: 'file', default: TLS_DEFAULTS.clientCaFile,
      description: `PEM CA certificates for mutual TLS on ${where}: when set, a client must present a certificate signed by one of them, checked during the TLS handshake before a request is read; a client without one is refused. Needs \`${section}.certFile\`.`,
    },
    {
      key: `${section}.minVersion`, env: `${envPrefix}_MIN_VERSION`, type: 'enum', default: TLS_DEFAULTS.minVersion, values: TLS_MIN_VERSIONS,
      description: `Lowest TLS version accepted on ${where}: \`1.2\` or \`1.3\`. Set to \`1.3\` (or \`${section}.reloadInterval\` to another value than its default) without \`${section}.certFile\`, it would apply to nothing, so hookwatch does not start, naming it.`,
    },
    {
      key: `${section}.reloadInterval`, env: `${envPrefix}_RELOAD_INTERVAL`, type: 'duration', default: TLS_DEFAULTS.reloadInterval, min: 1000, max: 86_400_000,
      description: 'How often the certificate, key and client CA files are read again. Changed files (a certificate rotated by cert-manager, a Kubernetes Secret updated in its mounted volume) apply to new connections without a restart; a new set that cannot be used (unreadable, not PEM, a key that does not match the certificate) is logged as an error and the certificate in use is kept.',
    },
  ];
}

/** The typed `<section>.*`, or undefined when TLS is off (no certificate and key). */
export function tlsConfig(r: SettingValues, section: string): TlsConfig | undefined {
  const certFile = r.string(`${section}.certFile`);
  const keyFile = r.string(`${section}.keyFile`);
  const clientCaFile = r.string(`${section}.clientCaFile`);
  const minVersion = r.oneOf(`${section}.minVersion`, TLS_MIN_VERSIONS);
  const reloadIntervalMs = r.number(`${section}.reloadInterval`);
  if ((certFile === '') !== (keyFile === '')) {
    throw new ConfigError(`${section}.certFile and ${section}.keyFile go together: set both to serve TLS, or neither`);
  }
  if (certFile === '') {
    if (clientCaFile !== '') throw new ConfigError(`${section}.clientCaFile needs ${section}.certFile and ${section}.keyFile: mutual TLS is TLS with client certificates`);
    // Without a certificate no TLS is served, and what else is set would be ignored without a word.
    const set = firstSet(r, section, ['minVersion', 'reloadInterval']);
    if (set) throw new ConfigError(`${section}.${set} is set but ${section}.certFile and ${section}.keyFile are not, so no TLS is served: set both, or unset ${section}.*`);
    return undefined;
  }
  return { section, certFile, keyFile, clientCaFile, minVersion, reloadIntervalMs };
}

/** TLS of a client (the forwarding destination's connections, an alert receiver's). */
export interface ClientTlsConfig {
  /** The settings' prefix, e.g. `forward.tls` or `alerting.receivers[0].tls`. */
  section: string;
  /** Empty: the system's CAs. */
  caFile: string;
  /** Empty (both): no client certificate. */
  certFile: string;
  keyFile: string;
  /** Empty: the endpoint's host. */
  serverName: string;
  insecureSkipVerify: boolean;
  /** Lowest TLS version a connection is made with: the server must speak it or later. */
  minVersion: TlsMinVersion;
  reloadIntervalMs: number;
}

/**
 * The rows of a client's `<section>.*` (e.g. `forward.tls`), their variables under `<envPrefix>_*`; `server`
 * names who is connected to ("the forwarding destination"), `endpoint` the setting of its URL.
 */
export function clientTlsSettings(section: string, envPrefix: string, server: string, endpoint: string): Setting[] {
  return [
    {
      key: `${section}.caFile`, env: `${envPrefix}_CA_FILE`, type: 'file', default: TLS_DEFAULTS.caFile,
      description: `PEM CA certificates that the certificate of ${server} must chain to, instead of the system's: a private CA. Unset (the default): the system's CAs. Used when \`${endpoint}\` is https://; any \`${section}.*\` set beside an \`${endpoint}\` that is unset or http:// would apply to nothing, so hookwatch does not start, naming the setting.`,
    },
    {
      key: `${section}.certFile`, env: `${envPrefix}_CERT_FILE`, type: 'file', default: TLS_DEFAULTS.certFile,
      description: `PEM client certificate hookwatch presents to ${server} (mutual TLS), followed by any intermediate certificates. Set with \`${section}.keyFile\`.`,
    },
    {
      key: `${section}.keyFile`, env: `${envPrefix}_KEY_FILE`, type: 'file', default: TLS_DEFAULTS.keyFile,
      description: `PEM private key (unencrypted) of \`${section}.certFile\`. Its path may show in logs and \`hookwatch config\`; what the file holds never does.`,
    },
    {
      key: `${section}.serverName`, env: `${envPrefix}_SERVER_NAME`, type: 'string', default: TLS_DEFAULTS.serverName,
      description: `Name the certificate of ${server} must carry, also sent as SNI, when it is not the host of \`${endpoint}\` (an IP address, a name only a proxy knows). Unset: that host.`,
    },
    {
      key: `${section}.insecureSkipVerify`, env: `${envPrefix}_INSECURE_SKIP_VERIFY`, type: 'bool', default: TLS_DEFAULTS.insecureSkipVerify,
      description: `Accept any certificate from ${server}, unchecked: for a test setup only, since anyone on the path can then read and change what is sent. Warned about at start. Prefer \`${section}.caFile\`.`,
    },
    {
      key: `${section}.minVersion`, env: `${envPrefix}_MIN_VERSION`, type: 'enum', default: TLS_DEFAULTS.minVersion, values: TLS_MIN_VERSIONS,
      description: `Lowest TLS version hookwatch connects to ${server} with: \`1.2\` or \`1.3\`. A server that speaks only older versions fails the handshake.`,
    },
    {
      key: `${section}.reloadInterval`, env: `${envPrefix}_RELOAD_INTERVAL`, type: 'duration', default: TLS_DEFAULTS.reloadInterval, min: 1000, max: 86_400_000,
      description: 'How often the CA, client certificate and key files are read again. Changed files (a certificate rotated by cert-manager, a Kubernetes Secret updated in its mounted volume) apply to the connections made from then on without a restart; a new set that cannot be used is logged as an error and the files in use are kept.',
    },
  ];
}

/**
 * The first of `<section>.<name>` that a file, the environment or a flag set to other than its default, or
 * undefined: a value written as its default (as `hookwatch config` prints every setting) changes nothing.
 */
function firstSet(r: SettingValues, section: string, names: readonly TlsName[]): TlsName | undefined {
  return names.find((name) => r.raw(`${section}.${name}`) !== TLS_DEFAULTS[name]);
}

const CLIENT_TLS_NAMES = ['caFile', 'certFile', 'keyFile', 'serverName', 'insecureSkipVerify', 'minVersion', 'reloadInterval'] as const;

/**
 * A client's TLS settings without the URL they are for would be ignored, so they are refused, as beside an http://
 * one: the message, naming the first one set and `urlSetting` (never a value), or undefined.
 */
export function clientTlsWithoutUrlProblem(r: SettingValues, section: string, url: string, urlSetting: string, server: string): string | undefined {
  if (url !== '') return undefined;
  const set = firstSet(r, section, CLIENT_TLS_NAMES);
  return set ? `${section}.${set} is set but ${urlSetting} is not, so no connection is made to ${server}: set ${urlSetting} to an https:// URL, or unset ${section}.*` : undefined;
}

/** The typed client `<section>.*`, or undefined when none is set (the system's defaults). */
export function clientTlsConfig(r: SettingValues, section: string): ClientTlsConfig | undefined {
  const config: ClientTlsConfig = {
    section,
    caFile: r.string(`${section}.caFile`),
    certFile: r.string(`${section}.certFile`),
    keyFile: r.string(`${section}.keyFile`),
    serverName: r.string(`${section}.serverName`).trim(),
    insecureSkipVerify: r.boolean(`${section}.insecureSkipVerify`),
    minVersion: r.oneOf(`${section}.minVersion`, TLS_MIN_VERSIONS),
    reloadIntervalMs: r.number(`${section}.reloadInterval`),
  };
  const problem = clientTlsProblem(config);
  if (problem) throw new ConfigError(problem);
  return clientTlsSet(config) ? config : undefined;
}

/** A client's settings that, set alone, are a choice of TLS, in the order a message names the first. */
const CLIENT_TLS_CHOICES = ['caFile', 'certFile', 'serverName', 'insecureSkipVerify', 'minVersion'] as const;

/** The first of a client's settings that is set (not its default), or undefined when none is: the system's defaults. */
export function clientTlsSet(config: ClientTlsConfig): (typeof CLIENT_TLS_CHOICES)[number] | undefined {
  // keyFile goes with certFile, and a reload interval alone changes nothing: neither counts as a choice.
  return CLIENT_TLS_CHOICES.find((name) => config[name] !== TLS_DEFAULTS[name]);
}

/**
 * A client's TLS settings beside a URL that speaks no TLS (http://, a bare host:port for gRPC) would be ignored, so
 * they are refused: the message, naming the first one set and `urlSetting`, or undefined. `server` names who is
 * connected to ("the destination"), `noun` what `urlSetting` is ("endpoint").
 */
export function plainUrlProblem(config: ClientTlsConfig | null | undefined, url: string, urlSetting: string, server: string, noun: string): string | undefined {
  if (!config || url === '' || /^https:\/\//i.test(url)) return undefined;
  const set = clientTlsSet(config);
  return `${set ? `${config.section}.${set}` : config.section} is set but ${urlSetting} is not an https:// URL, so no TLS is spoken with ${server}: write the ${noun} as https://host:port, or unset ${config.section}.*`;
}

/**
 * The ports fetch never connects to (the fetch standard's "bad ports", https://fetch.spec.whatwg.org/#port-blocking):
 * a request to one fails at once with `bad port`, every time.
 */
const FETCH_BAD_PORTS = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117, 119,
  123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990,
  993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/** Why a URL that hookwatch reaches with fetch can never be reached (a bad port), or undefined; the URL is not echoed. */
export function fetchPortProblem(url: URL): string | undefined {
  // A scheme's default port is not kept in `port`: never a bad one.
  if (url.port === '' || !FETCH_BAD_PORTS.has(Number(url.port))) return undefined;
  return `port ${url.port} is one fetch never connects to (the fetch standard's bad ports), so every request would fail; serve it on another port`;
}

/** What is wrong with a client's settings taken together (a certificate without its key, a bad server name), or undefined. */
export function clientTlsProblem(config: ClientTlsConfig): string | undefined {
  const { section } = config;
  if ((config.certFile === '') !== (config.keyFile === '')) return `${section}.certFile and ${section}.keyFile go together: set both to present a client certificate, or neither`;
  const name = config.serverName === '' ? undefined : serverNameProblem(config.serverName);
  if (name) return `invalid value for ${section}.serverName: ${name}`;
  return undefined;
}

/** A server name's dot-separated labels: letters, digits, dashes and underscores, 63 at most each. */
const SERVER_NAME = /^[A-Za-z0-9_-]{1,63}(?:\.[A-Za-z0-9_-]{1,63})*\.?$/;

/**
 * Why `name` cannot be the name a certificate is checked against and sent as SNI, or undefined. Names of internal
 * DNS with underscores are taken, as Node's TLS takes them. An IP address is not: SNI carries host names only
 * (RFC 6066), and with the address in the URL the certificate is checked against it already.
 */
function serverNameProblem(name: string): string | undefined {
  if (isIP(name.replace(/^\[(.*)\]$/, '$1'))) return 'an IP address, which TLS does not send as a server name (SNI, RFC 6066): leave it unset and write the address in the URL, the certificate is then checked against it';
  if (name.length > 253 || !SERVER_NAME.test(name)) return 'expected a host name such as otlp.example.com';
  return undefined;
}

/**
 * Default idle time a kept-alive connection stays open on an HTTP port: past the 60 s of load balancers and proxies
 * (AWS ALB, nginx), so that they close an idle connection first and never reuse one the server has just closed.
 * Node's own default is 5 s.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** The row of an HTTP port's keep-alive idle time (`otlp.http.keepAliveTimeout`, `http.keepAliveTimeout`); `where` names the port. */
export function keepAliveSetting(key: string, env: string, where: string): Setting {
  return {
    key, env, type: 'duration', default: KEEP_ALIVE_TIMEOUT_MS, min: 1000, max: 3_600_000,
    description: `How long ${where} keeps an idle kept-alive connection open for the client's next request (announced in the \`Keep-Alive\` response header). Keep it longer than the idle timeout of any load balancer or proxy in front (AWS ALB and nginx 60s; Google Cloud's load balancers 600s, so 620s there): it then closes an idle connection first, and never sends a request on one hookwatch is closing (a 502 or a connection reset for its client). A stop closes idle connections at once, whatever this is.`,
  };
}

/** The shortest bearer token hookwatch accepts (otlp.ingestToken, http.auth.token). */
export const MIN_TOKEN_CHARS = 16;

/**
 * Why a configured bearer token (otlp.ingestToken, http.auth.token) could never arrive in an Authorization header,
 * or undefined: a token with white space at either end (a trailing newline from a file or a Kubernetes Secret) or
 * characters outside printable ASCII would make every client get 401, with nothing saying why. A token shorter
 * than MIN_TOKEN_CHARS is refused too: it can be guessed, and the shortest cannot be scrubbed from logs.
 */
export function bearerTokenProblem(raw: unknown): string | undefined {
  if (typeof raw !== 'string' || raw === '') return undefined;
  if (raw.trim() !== raw) return 'it begins or ends with white space (a trailing newline from a file or Secret?), which no Authorization header can carry, so every request would get 401: remove it';
  if (!/^[\x20-\x7e]+$/.test(raw)) return 'it holds a control or non-ASCII character, which clients cannot send in an Authorization header, so every request would get 401: use printable ASCII';
  return shortSecretProblem(raw, MIN_TOKEN_CHARS);
}
