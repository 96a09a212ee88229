/**
 * Forwarding's settings (`forward.*`): the downstream endpoint and how to reach it, the durable queue, the retry
 * schedule and the dead letters. A leaf: config/ composes these rows into the one table.
 *
 * Downstream headers (`forward.headers`): a mapping in the config file, or `k=v,k2=v2` in the environment like
 * OTEL_EXPORTER_OTLP_HEADERS (values URL-decoded). They usually carry an API key, so messages about them
 * name the header, never its value.
 */
import { ConfigError, type Setting, type SettingValues } from '../config/setting.ts';
import { INVALID_HEADER_VALUE_CHAR, backoffOrderProblem, headerSecretProblem, quotedKey, redactUrlPassword, urlPasswordProblem } from '../config/values.ts';
import { safeEndpoint } from '../net/otlp-url.ts';
import { clientTlsConfig, clientTlsSettings, clientTlsWithoutUrlProblem, fetchPortProblem, plainUrlProblem, type ClientTlsConfig } from '../net/settings.ts';

const NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Parses the setting into a header map, or returns a message naming what is wrong. */
export function parseForwardHeaders(raw: unknown): Record<string, string> | string {
  const out: Record<string, string> = {};
  if (raw === '' || raw === null || raw === undefined) return out;
  if (typeof raw === 'string') {
    const parts = raw.split(',');
    for (const [i, part] of parts.entries()) {
      if (!part.trim()) continue;
      const eq = part.indexOf('=');
      // The entry is not quoted: it may be a value (an API key) cut off by a misplaced comma.
      if (eq < 0) return `expected name=value pairs separated by commas (entry ${i + 1} of ${parts.length} has no "=")`;
      if (eq === 0) return `expected name=value pairs separated by commas (entry ${i + 1} of ${parts.length} has no name before "=")`;
      const name = part.slice(0, eq).trim();
      // The name first: the messages about the value quote it, and one that is no name may hold a value.
      if (!NAME.test(name)) return `${quotedKey(name)} is not a valid header name`;
      let value: string;
      try {
        value = decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return `the value of header ${JSON.stringify(name)} is not valid percent-encoding`;
      }
      const problem = headerValueProblem(name, value);
      if (problem) return problem;
      out[name.toLowerCase()] = value;
    }
    return out;
  }
  if (typeof raw !== 'object' || Array.isArray(raw)) return 'expected a mapping of header names to values, or name=value,name2=value2';
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    if (!NAME.test(name)) return `${quotedKey(name)} is not a valid header name`;
    if (typeof value !== 'string' && typeof value !== 'number') return `the value of header ${JSON.stringify(name)} must be a string`;
    const problem = headerValueProblem(name, String(value));
    if (problem) return problem;
    out[name.toLowerCase()] = String(value);
  }
  return out;
}

/** What is wrong with the value of header `name` (never the value itself), or undefined. */
function headerValueProblem(name: string, value: string): string | undefined {
  if (INVALID_HEADER_VALUE_CHAR.test(value)) return `the value of header ${JSON.stringify(name)} contains a line break or control character`;
  const short = headerSecretProblem(value);
  return short ? `the value of header ${JSON.stringify(name)} is ${short}` : undefined;
}

/**
 * Headers the transport or hookwatch itself sets: one given in forward.headers would break every request (a
 * Content-Encoding the body does not have) or be refused by the HTTP client at each attempt.
 */
const RESERVED_HEADERS = new Set(['content-type', 'content-encoding', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'proxy-connection', 'upgrade', 'expect', 'te', 'trailer']);

/**
 * What forward.headers cannot carry over `protocol`, as a message naming the header (never its value), or
 * undefined. gRPC metadata is stricter than HTTP: names in lower-case letters, digits and `-_.` only, `grpc-`
 * reserved, `-bin` for binary values (forward.headers holds text), values in printable ASCII. Checked at start, as
 * grpc-js would otherwise refuse the metadata at every attempt, with the value in its error.
 */
export function forwardHeadersProblem(headers: Record<string, string>, protocol: ForwardConfig['protocol']): string | undefined {
  for (const [name, value] of Object.entries(headers)) {
    const quoted = JSON.stringify(name);
    if (RESERVED_HEADERS.has(name)) return `${quoted} is set by hookwatch or the transport for each request; remove it`;
    if (protocol !== 'grpc') continue;
    if (name.endsWith('-bin')) return `${quoted} ends in -bin, which in gRPC metadata marks a binary value; forward.headers carries text: name the header without -bin`;
    if (name.startsWith('grpc-')) return `${quoted}: names starting with grpc- are reserved for gRPC itself`;
    if (!/^[0-9a-z_.-]+$/.test(name)) return `${quoted} is not a valid gRPC metadata name (lower-case letters, digits, "-", "_" and "." only)`;
    if (!/^[ -~]*$/.test(value)) return `the value of header ${quoted} has characters gRPC metadata cannot carry (printable ASCII only)`;
  }
  return undefined;
}

const MiB = 1024 * 1024;
const DAY = 86_400_000;

export const FORWARD_SETTINGS: readonly Setting[] = [
  {
    key: 'forward.endpoint', env: 'HOOKWATCH_FORWARD_ENDPOINT', type: 'string', default: '',
    description: 'Downstream OTLP endpoint that receives every request (logs, metrics, traces) unchanged, e.g. http://collector:4318 or http://collector:4317 for grpc; https:// for TLS (see forward.tls.*). Over HTTP, a port fetch never connects to (a bad port of the fetch standard, such as 6000, 6665-6669 or 10080) is refused at start and by a reload. Empty: fan-out mode, nothing is forwarded. A password in it (user:password@, ?password=) is redacted everywhere and refused at start when shorter than 4 characters, too short to be scrubbed from logs.',
    redactValue: redactUrlPassword,
    validate: (v) => urlPasswordProblem(String(v)),
  },
  {
    key: 'forward.protocol', env: 'HOOKWATCH_FORWARD_PROTOCOL', type: 'enum', default: 'http/protobuf', values: ['http/protobuf', 'http/json', 'grpc'],
    description: 'How to reach forward.endpoint. Over HTTP each request keeps the encoding it arrived in (never transcoded); grpc carries protobuf only, so OTLP/JSON requests are then refused with 415.',
  },
  {
    key: 'forward.headers', env: 'HOOKWATCH_FORWARD_HEADERS', type: 'object', default: {}, secret: true, textValues: '*',
    description: 'Headers (gRPC metadata) sent downstream, e.g. an API key. A mapping in the file; `name=value,name2=value2` in the environment like OTEL_EXPORTER_OTLP_HEADERS. Checked at start: Content-Type, Content-Encoding, Content-Length and the connection headers are set by hookwatch and refused; with grpc so are names ending in -bin (binary metadata) or starting with grpc-, names other than lower-case letters, digits and -_., and values other than printable ASCII. Values are secret: one shorter than 4 characters (or the credential after `Bearer `/`Basic `), too short to be scrubbed from logs, is refused. A value written as a number or a boolean in the file is sent as written there (`x-schema-version: 10.50` sends 10.50, `x-debug: true` sends true).',
    validate: (v) => {
      const r = parseForwardHeaders(v);
      return typeof r === 'string' ? r : undefined;
    },
  },
  {
    key: 'forward.compression', env: 'HOOKWATCH_FORWARD_COMPRESSION', type: 'enum', default: 'gzip', values: ['gzip', 'none'],
    description: 'Compression of forwarded requests.',
  },
  {
    key: 'forward.timeout', env: 'HOOKWATCH_FORWARD_TIMEOUT', type: 'duration', default: 10_000, min: 100, max: 600_000,
    description: 'Time one forwarding attempt may take before it counts as failed and is retried.',
  },
  {
    key: 'forward.queue.path', env: 'HOOKWATCH_FORWARD_QUEUE_PATH', type: 'string', default: './data/forward-queue.db', pathDefault: true,
    description: 'SQLite file of the durable forwarding queue. Requests are committed here before the client gets its 200 and survive restarts and crashes. Used by one process at a time, which holds `<path>.lock` until it stops: a second one on the same file (replicas on a shared volume) exits 1 saying so. A file of its own: the `db` file, or one SQLite or the store\'s lock keeps beside it (-wal, -shm, -journal, .lock), is refused at start, also when named through a link.',
  },
  {
    key: 'forward.queue.maxBytes', env: 'HOOKWATCH_FORWARD_QUEUE_MAX_BYTES', type: 'bytes', default: 1024 * MiB, min: 1024,
    description: 'Bound on the request bytes waiting for the destination. When full, clients get 503 / UNAVAILABLE with Retry-After instead of data being dropped.',
  },
  {
    key: 'forward.retry.initialInterval', env: 'HOOKWATCH_FORWARD_RETRY_INITIAL_INTERVAL', type: 'duration', default: 5_000, min: 1, max: 3_600_000,
    description: 'First wait after a failed forwarding attempt; it grows 1.5x per failure (the wait is random below it: full jitter) up to forward.retry.maxInterval. Retry-After is honoured. An unreachable or overloaded destination is retried without a deadline; see forward.retry.maxElapsedTime. Longer than forward.retry.maxInterval, it is refused at start and by a reload, naming both.',
  },
  {
    key: 'forward.retry.maxInterval', env: 'HOOKWATCH_FORWARD_RETRY_MAX_INTERVAL', type: 'duration', default: 30_000, min: 1, max: 3_600_000,
    description: 'Longest wait between forwarding attempts; at least forward.retry.initialInterval.',
  },
  {
    key: 'forward.enrich', env: 'HOOKWATCH_FORWARD_ENRICH', type: 'bool', default: false,
    description: 'Add `hookwatch.delivery` (over|near|ok|unknown) to forwarded hook_execution_complete records. Off: records pass unchanged.',
  },
  {
    key: 'forward.retry.maxElapsedTime', env: 'HOOKWATCH_FORWARD_RETRY_MAX_ELAPSED_TIME', type: 'duration', default: DAY, min: 0, max: 30 * DAY,
    description: 'How long a request refused with 401, 403, 404, a 5xx other than 502/503/504 (gRPC UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND, UNIMPLEMENTED, INTERNAL, UNKNOWN) or a redirect (3xx, never followed), or whose TLS handshake with the destination fails (see forward.tls.*), keeps being retried before it becomes a dead letter: long enough for an expired key to be rotated the next working day. 0: never give up. Unreachable, 408, 429, 502, 503, 504 are retried without a deadline; 400, 413, 415 and other 4xx are dead letters at once.',
  },
  {
    key: 'forward.deadLetters.maxBytes', env: 'HOOKWATCH_FORWARD_DEAD_LETTERS_MAX_BYTES', type: 'bytes', default: 256 * MiB, min: 1024,
    description: 'Bound on the bodies of dead letters (kept in the queue file apart from forward.queue.maxBytes, for POST /api/v1/forwarding/dead-letters/replay). Over it the oldest are removed and counted. Like queued requests, dead letters older than retention.events are removed.',
  },
  ...clientTlsSettings('forward.tls', 'HOOKWATCH_FORWARD_TLS', 'the forwarding destination', 'forward.endpoint'),
];

/** Typed `forward.*` settings; endpoint '' is fan-out mode (nothing forwarded). */
export interface ForwardConfig {
  endpoint: string;
  protocol: 'http/protobuf' | 'http/json' | 'grpc';
  headers: Record<string, string>;
  compression: 'gzip' | 'none';
  timeoutMs: number;
  queue: { path: string; maxBytes: number };
  retry: { initialMs: number; maxMs: number; maxElapsedMs: number };
  deadLetters: { maxBytes: number };
  enrich: boolean;
  /** forward.tls.*; undefined: the system's CAs, no client certificate. */
  tls?: ClientTlsConfig;
}

/**
 * Checks `forward.endpoint` with a message that names the setting (never its credentials): as the configuration
 * is read, so `hookwatch config` and a reload refuse what the start would.
 */
export function checkEndpoint(config: Pick<ForwardConfig, 'endpoint' | 'protocol'>): void {
  const bare = config.protocol === 'grpc' && /^[^/:]+:\d+$/.test(config.endpoint);
  let url: URL | undefined;
  try {
    url = bare ? undefined : new URL(config.endpoint);
  } catch {
    throw new ConfigError(`invalid value for forward.endpoint: ${JSON.stringify(safeEndpoint(config.endpoint))} is not a URL; expected e.g. http://collector:4318${config.protocol === 'grpc' ? ' or collector:4317' : ''}`);
  }
  if (url && url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`invalid value for forward.endpoint: the scheme must be http or https, not ${url.protocol.replace(':', '')}`);
  }
}

export function forwardConfig(r: SettingValues): { forward: ForwardConfig } {
  const endpoint = r.string('forward.endpoint').trim();
  const protocol = r.oneOf('forward.protocol', ['http/protobuf', 'http/json', 'grpc']);
  // Validated by the row when loaded, so this is a header map.
  const headers = parseForwardHeaders(r.raw('forward.headers')) as Record<string, string>;
  const problem = endpoint === '' ? undefined : forwardHeadersProblem(headers, protocol);
  if (problem) throw new ConfigError(`invalid value for forward.headers (forward.protocol ${protocol}): ${problem}`);
  if (endpoint !== '') checkEndpoint({ endpoint, protocol });
  // OTLP/HTTP goes through fetch, which never connects to some ports; gRPC does not. The endpoint is not echoed:
  // it may hold a key.
  const badPort = protocol !== 'grpc' && URL.canParse(endpoint) ? fetchPortProblem(new URL(endpoint)) : undefined;
  if (badPort) throw new ConfigError(`invalid value for forward.endpoint (forward.protocol ${protocol}): ${badPort}`);
  const tls = clientTlsConfig(r, 'forward.tls');
  // forward.tls.* apply to an https:// endpoint only: set with a plain-text one they would be ignored, so they are refused.
  const plain = plainUrlProblem(tls, endpoint, 'forward.endpoint', 'the destination', 'endpoint') ?? clientTlsWithoutUrlProblem(r, 'forward.tls', endpoint, 'forward.endpoint', 'the destination');
  if (plain) throw new ConfigError(plain);
  const retry = { initialMs: r.number('forward.retry.initialInterval'), maxMs: r.number('forward.retry.maxInterval'), maxElapsedMs: r.number('forward.retry.maxElapsedTime') };
  const order = backoffOrderProblem('forward.retry.initialInterval', retry.initialMs, 'forward.retry.maxInterval', retry.maxMs);
  if (order) throw new ConfigError(order);
  return {
    forward: {
      endpoint,
      protocol,
      headers,
      compression: r.oneOf('forward.compression', ['gzip', 'none']),
      timeoutMs: r.number('forward.timeout'),
      queue: { path: r.string('forward.queue.path'), maxBytes: r.number('forward.queue.maxBytes') },
      retry,
      deadLetters: { maxBytes: r.number('forward.deadLetters.maxBytes') },
      enrich: r.boolean('forward.enrich'),
      ...(tls ? { tls } : {}),
    },
  };
}
