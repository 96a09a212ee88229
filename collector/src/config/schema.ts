/**
 * The configuration schema: one table that drives parsing (file, environment, flags), validation,
 * redaction and the generated reference in docs/configuration.md. Later features add rows here.
 */
import { parseHeaders, parseReceivers, parseRules, redactHeaders, redactReceivers, validator } from '../alerting/config.ts';
import { parseForwardHeaders } from '../forward/headers.ts';

export type ValueType = 'string' | 'addr' | 'int' | 'bytes' | 'duration' | 'enum' | 'list' | 'bool' | 'object';

export interface Setting {
  /** Dotted path in the config file, e.g. `otlp.http.addr`. */
  key: string;
  /** Environment variable; undefined for file-only settings (rules, receivers). */
  env?: string;
  type: ValueType;
  default: unknown;
  description: string;
  /** Redacted in `hookwatch config`, logs, errors and API responses. */
  secret?: boolean;
  /** Partial redaction for values that hold a secret inside (a password in a URL). */
  redactValue?: (value: unknown) => unknown;
  /** Allowed values for `enum`. */
  values?: readonly string[];
  /** Inclusive bounds for numbers (int, bytes, duration in ms). */
  min?: number;
  max?: number;
  /** Validator for `object` settings; returns a message naming what is wrong, or undefined. */
  validate?: (value: unknown) => string | undefined;
}
const MiB = 1024 * 1024;
const DAY = 86_400_000;

export const SETTINGS: readonly Setting[] = [
  {
    key: 'otlp.http.addr', env: 'HOOKWATCH_OTLP_HTTP_ADDR', type: 'addr', default: '127.0.0.1:4318',
    description: 'Where the OTLP/HTTP receiver listens (POST /v1/logs, /v1/metrics, /v1/traces). Use 0.0.0.0:4318 to accept other hosts.',
  },
  {
    key: 'otlp.maxRequestBytes', env: 'HOOKWATCH_OTLP_MAX_REQUEST_BYTES', type: 'bytes', default: 20 * MiB, min: 1024, max: 1024 * MiB,
    description: 'Largest OTLP request accepted, measured after decompression (413 / RESOURCE_EXHAUSTED over it).',
  },
  {
    key: 'otlp.requestTimeout', env: 'HOOKWATCH_OTLP_REQUEST_TIMEOUT', type: 'duration', default: 30_000, min: 1000, max: 600_000,
    description: 'Time a client has to send a whole request; slower clients are cut off so they cannot hold connections open.',
  },
  {
    key: 'otlp.maxPendingRequests', env: 'HOOKWATCH_OTLP_MAX_PENDING_REQUESTS', type: 'int', default: 64, min: 1, max: 100_000,
    description: 'Requests waiting for the store at once; above it hookwatch answers 503 with Retry-After instead of queueing without bound.',
  },
  {
    key: 'otlp.maxFutureSkew', env: 'HOOKWATCH_OTLP_MAX_FUTURE_SKEW', type: 'duration', default: 300_000, min: 0, max: DAY,
    description: 'A hook record stamped further than this ahead of the receive time (a client clock running ahead) is stored at the receive time instead, and the OTLP partial-success message says how many were clamped. Retention removes rows stored before with such times.',
  },
  {
    key: 'otlp.ingestToken', env: 'HOOKWATCH_INGEST_TOKEN', type: 'string', default: '', secret: true,
    description: 'When set, OTLP requests need `Authorization: Bearer <token>` (401 otherwise).',
  },
  {
    key: 'otlp.maxInflightBytes', env: 'HOOKWATCH_OTLP_MAX_INFLIGHT_BYTES', type: 'bytes', default: 256 * MiB, min: 1024, max: 64 * 1024 * MiB,
    description: 'Request bytes both OTLP receivers may hold in memory at once. Before reading, an HTTP request reserves the most its body can inflate to (Content-Length, x1032 when compressed, at most otlp.maxRequestBytes) and a gRPC call twice otlp.maxRequestBytes, then keeps its real size until answered. Past it requests get 503 / UNAVAILABLE with Retry-After instead of growing memory. At least twice otlp.maxRequestBytes (the default grows to that when otlp.maxRequestBytes is raised past 128MiB).',
  },
  {
    key: 'http.addr', env: 'HOOKWATCH_HTTP_ADDR', type: 'addr', default: '127.0.0.1:9318',
    description: 'Where the API (/api/v1), the dashboard (/), /healthz and /readyz listen.',
  },
  {
    key: 'http.auth.mode', env: 'HOOKWATCH_HTTP_AUTH_MODE', type: 'enum', default: 'none', values: ['none', 'basic', 'bearer', 'proxy-header'],
    description: 'Authentication on the HTTP port: everything but GET /healthz (dashboard, API, /metrics, /readyz) then needs credentials (401 otherwise). `basic` prompts browsers; `bearer` is for scripts and Prometheus; `proxy-header` trusts a header set by an authenticating reverse proxy.',
  },
  {
    key: 'http.auth.username', env: 'HOOKWATCH_HTTP_AUTH_USERNAME', type: 'string', default: '',
    description: 'User name for `http.auth.mode: basic`.',
  },
  {
    key: 'http.auth.password', env: 'HOOKWATCH_HTTP_AUTH_PASSWORD', type: 'string', default: '', secret: true,
    description: 'Password for `http.auth.mode: basic`.',
  },
  {
    key: 'http.auth.token', env: 'HOOKWATCH_HTTP_AUTH_TOKEN', type: 'string', default: '', secret: true,
    description: 'Token for `http.auth.mode: bearer`: requests need `Authorization: Bearer <token>`.',
  },
  {
    key: 'http.auth.proxyHeader', env: 'HOOKWATCH_HTTP_AUTH_PROXY_HEADER', type: 'string', default: '',
    description: 'Header for `http.auth.mode: proxy-header`, e.g. `x-forwarded-user`: requests without it (or with it empty) get 401. Only safe when the proxy is the sole way in and strips the header from client requests.',
  },
  {
    key: 'db', env: 'HOOKWATCH_DB', type: 'string', default: './data/hookwatch.db',
    description: 'The store: a SQLite file path (created if missing), or a postgres:// URL (its password is redacted everywhere).',
    redactValue: redactUrlPassword,
  },
  {
    key: 'sqlite.synchronous', env: 'HOOKWATCH_SQLITE_SYNCHRONOUS', type: 'enum', default: 'full', values: ['full', 'normal'],
    description: 'SQLite durability: `full` syncs every committed batch to disk before the 200 (survives power loss); `normal` survives process crashes only.',
  },
  {
    key: 'postgres.poolSize', env: 'HOOKWATCH_POSTGRES_POOL_SIZE', type: 'int', default: 10, min: 1, max: 1000,
    description: 'PostgreSQL connections per replica (db is a postgres:// URL). Replicas x pool size must stay below the server\'s max_connections.',
  },
  {
    key: 'postgres.leaseTtl', env: 'HOOKWATCH_POSTGRES_LEASE_TTL', type: 'duration', default: 15_000, min: 1000, max: 600_000,
    description: 'Replicas on one PostgreSQL elect one leader (alert evaluation, notifications, retention) with a lease renewed every third of this; when the leader dies another takes over within ttl + ttl/3.',
  },
  {
    key: 'retention.events', env: 'HOOKWATCH_RETENTION_EVENTS', type: 'duration', default: 30 * DAY, min: 3_600_000,
    description: 'How long raw hook events (and per-minute rollups) are kept.',
  },
  {
    key: 'retention.rollups', env: 'HOOKWATCH_RETENTION_ROLLUPS', type: 'duration', default: 400 * DAY, min: DAY,
    description: 'How long hourly and daily rollups are kept.',
  },
  {
    key: 'store.maxHooks', env: 'HOOKWATCH_MAX_HOOKS', type: 'int', default: 10_000, min: 1, max: 1_000_000,
    description: 'Most distinct hooks (hook event + hook name) the store keeps. Past it, events of new hook names are counted under one `<hook_event>:(overflow)` hook per hook event (counts kept, never dropped), the client is told in the OTLP partial-success message, hookwatch_hook_events_folded_total counts them and the `hook_limit` alert fires. Hooks with nothing left in retention are removed.',
  },
  {
    key: 'store.readers', env: 'HOOKWATCH_STORE_READERS', type: 'int', default: 2, min: 1, max: 64,
    description: 'Connections that answer API and dashboard queries, apart from the ones ingest writes on, so no query makes an OTLP request wait. SQLite: worker threads, each with its own read-only connection to the file (an in-memory database reads on its one connection). PostgreSQL: the size of a read pool beside the postgres.poolSize connections that ingest uses.',
  },
  {
    key: 'delivery.nearThreshold', env: 'HOOKWATCH_NEAR_THRESHOLD', type: 'int', default: 8000, min: 1, max: 10_000,
    description: 'An output whose largest string may exceed this many characters (with nothing persisted) is "near" the 10,000 cap.',
  },
  {
    key: 'dimensions', env: 'HOOKWATCH_DIMENSIONS', type: 'list', default: ['team'],
    description: 'Extra event or resource attribute keys kept per event and usable as filters (e.g. `team` from OTEL_RESOURCE_ATTRIBUTES). Comma-separated in the environment.',
  },
  {
    key: 'privacy.hash', env: 'HOOKWATCH_PRIVACY_HASH', type: 'list', default: ['user.email'],
    description: 'Attributes replaced by a keyed HMAC-SHA256 digest (`hmac:` + 32 hex) before storage: grouping, breakdowns, filters and alert groupBy still work, and a filter given in cleartext is digested the same way, but the cleartext never reaches disk or the API. Any of session.id, user.id, user.email, user.account_uuid, organization.id, terminal.type and the configured dimensions. Empty: nothing hashed.',
  },
  {
    key: 'privacy.hashKey', env: 'HOOKWATCH_PRIVACY_HASH_KEY', type: 'string', default: '', secret: true,
    description: 'Key of the privacy.hash digests. Unset: one is generated once and kept in the store (shared by replicas on PostgreSQL), so digests stay stable across restarts; set it to keep the key out of the database. Changing it changes every digest from then on.',
  },
  {
    key: 'privacy.drop', env: 'HOOKWATCH_PRIVACY_DROP', type: 'list', default: [],
    description: 'Attributes removed before storage (same choices as privacy.hash), e.g. `user.account_uuid,organization.id`.',
  },
  {
    key: 'otlp.grpc.addr', env: 'HOOKWATCH_OTLP_GRPC_ADDR', type: 'addr', default: '127.0.0.1:4317',
    description: 'Where the OTLP/gRPC receiver listens (LogsService, MetricsService, TraceService Export; gzip accepted). Use 0.0.0.0:4317 to accept other hosts.',
  },
  {
    key: 'forward.endpoint', env: 'HOOKWATCH_FORWARD_ENDPOINT', type: 'string', default: '',
    description: 'Downstream OTLP endpoint that receives every request (logs, metrics, traces) unchanged, e.g. http://collector:4318 or http://collector:4317 for grpc. Empty: fan-out mode, nothing is forwarded.',
    redactValue: redactUrlPassword,
  },
  {
    key: 'forward.protocol', env: 'HOOKWATCH_FORWARD_PROTOCOL', type: 'enum', default: 'http/protobuf', values: ['http/protobuf', 'http/json', 'grpc'],
    description: 'How to reach forward.endpoint. Over HTTP each request keeps the encoding it arrived in (never transcoded); grpc carries protobuf only, so OTLP/JSON requests are then refused with 415.',
  },
  {
    key: 'forward.headers', env: 'HOOKWATCH_FORWARD_HEADERS', type: 'object', default: {}, secret: true,
    description: 'Headers (gRPC metadata) sent downstream, e.g. an API key. A mapping in the file; `name=value,name2=value2` in the environment like OTEL_EXPORTER_OTLP_HEADERS.',
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
    key: 'forward.queue.path', env: 'HOOKWATCH_FORWARD_QUEUE_PATH', type: 'string', default: './data/forward-queue.db',
    description: 'SQLite file of the durable forwarding queue. Requests are committed here before the client gets its 200 and survive restarts and crashes.',
  },
  {
    key: 'forward.queue.maxBytes', env: 'HOOKWATCH_FORWARD_QUEUE_MAX_BYTES', type: 'bytes', default: 1024 * MiB, min: 1024,
    description: 'Bound on the request bytes waiting for the destination. When full, clients get 503 / UNAVAILABLE with Retry-After instead of data being dropped.',
  },
  {
    key: 'forward.retry.initialInterval', env: 'HOOKWATCH_FORWARD_RETRY_INITIAL_INTERVAL', type: 'duration', default: 5_000, min: 1, max: 3_600_000,
    description: 'First wait after a failed forwarding attempt; it grows 1.5x per failure (the wait is random below it: full jitter) up to forward.retry.maxInterval. Retry-After is honoured. An unreachable or overloaded destination is retried without a deadline; see forward.retry.maxElapsedTime.',
  },
  {
    key: 'forward.retry.maxInterval', env: 'HOOKWATCH_FORWARD_RETRY_MAX_INTERVAL', type: 'duration', default: 30_000, min: 1, max: 3_600_000,
    description: 'Longest wait between forwarding attempts.',
  },
  {
    key: 'forward.enrich', env: 'HOOKWATCH_FORWARD_ENRICH', type: 'bool', default: false,
    description: 'Add `hookwatch.delivery` (over|near|ok|unknown) to forwarded hook_execution_complete records. Off: records pass unchanged.',
  },
  {
    key: 'forward.retry.maxElapsedTime', env: 'HOOKWATCH_FORWARD_RETRY_MAX_ELAPSED_TIME', type: 'duration', default: DAY, min: 0, max: 30 * DAY,
    description: 'How long a request refused with 401, 403, 404 or a 5xx other than 502/503/504 (gRPC UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND, UNIMPLEMENTED, INTERNAL, UNKNOWN) keeps being retried before it becomes a dead letter: long enough for an expired key to be rotated the next working day. 0: never give up. Unreachable, 408, 429, 502, 503, 504 are retried without a deadline; 400, 413, 415 and other 4xx are dead letters at once.',
  },
  {
    key: 'forward.deadLetters.maxBytes', env: 'HOOKWATCH_FORWARD_DEAD_LETTERS_MAX_BYTES', type: 'bytes', default: 256 * MiB, min: 1024,
    description: 'Bound on the bodies of dead letters (kept in the queue file apart from forward.queue.maxBytes, for POST /api/v1/forwarding/dead-letters/replay). Over it the oldest are removed and counted. Like queued requests, dead letters older than retention.events are removed.',
  },
  {
    key: 'log.level', env: 'HOOKWATCH_LOG_LEVEL', type: 'enum', default: 'info', values: ['debug', 'info', 'warn', 'error'],
    description: 'Lowest level of hookwatch\'s own JSON log lines (written to stderr).',
  },
  {
    key: 'metrics.maxHookSeries', env: 'HOOKWATCH_METRICS_MAX_HOOK_SERIES', type: 'int', default: 500, min: 0, max: 100_000,
    description: 'Most hooks given their own labelled series on /metrics; events of further hooks go to overflow counters and hookwatch_hook_series_dropped counts them, so a flood of hook names cannot explode Prometheus.',
  },
  {
    key: 'shutdown.timeout', env: 'HOOKWATCH_SHUTDOWN_TIMEOUT', type: 'duration', default: 25_000, min: 1000, max: 600_000,
    description: 'On SIGTERM/SIGINT, time allowed to finish in-flight requests, flush queues and close the store before exiting 1 anyway; keep it below the orchestrator\'s grace period (Kubernetes: 30s). A second signal exits at once.',
  },
  {
    key: 'alerting.rules', type: 'object', default: null, validate: validator((v) => parseRules(v)),
    description: 'Alert rules (file only): a list of {kind, name, for, keepFiringFor, window, groupBy, threshold, minExecutions, horizonDays, after, scope, severity}. Kinds: persisted, persisted_ratio, headroom, growth, blind, silence, never_completed. Unset: persisted, headroom, growth, blind and never_completed with their defaults; [] turns alerting rules off.',
  },
  {
    key: 'alerting.receivers', type: 'object', default: [], secret: true, redactValue: redactReceivers, validate: validator(parseReceivers),
    description: 'Where alerts go (file only): a list of {name, type: webhook|slack, url, headers, signingSecret (whsec_<base64>, Standard Webhooks), timeout, sendResolved}. `webhook` sends the Alertmanager v4 JSON body. URLs, header values and signing secrets are secret.',
  },
  {
    key: 'alerting.evaluationInterval', env: 'HOOKWATCH_ALERT_EVALUATION_INTERVAL', type: 'duration', default: 10_000, min: 50, max: 600_000,
    description: 'How often every alert rule is evaluated for time-based transitions (for, keepFiringFor, repeats, silence, growth). Persisted outputs are evaluated on ingest, not on this timer.',
  },
  {
    key: 'alerting.repeatInterval', env: 'HOOKWATCH_ALERT_REPEAT_INTERVAL', type: 'duration', default: 4 * 3_600_000, min: 1000, max: 30 * DAY,
    description: 'A still-firing alert is notified again after this long (Alertmanager repeat_interval).',
  },
  {
    key: 'alerting.externalUrl', env: 'HOOKWATCH_EXTERNAL_URL', type: 'string', default: '',
    description: 'hookwatch\'s URL as people reach it (e.g. https://hookwatch.example.com); notifications link to the dashboard under it.',
  },
  {
    key: 'alerting.otlp.endpoint', env: 'HOOKWATCH_ALERT_OTLP_ENDPOINT', type: 'string', default: '', redactValue: redactUrlPassword,
    description: 'When set, every alert transition is also sent as an OTLP log record (OTLP/HTTP JSON) to this endpoint (`/v1/logs` appended unless present).',
  },
  {
    key: 'alerting.otlp.headers', type: 'object', default: {}, secret: true, redactValue: redactHeaders, validate: validator((v) => parseHeaders(v, 'alerting.otlp.headers')),
    description: 'Headers for the alert OTLP export (file only), e.g. an Authorization header; values are secret.',
  },
  {
    key: 'alerting.delivery.deadline', env: 'HOOKWATCH_ALERT_DELIVERY_DEADLINE', type: 'duration', default: 600_000, min: 1000, max: DAY,
    description: 'How long a notification is retried (exponential backoff with full jitter, Retry-After honoured) before it is recorded as failed.',
  },
  {
    key: 'alerting.delivery.initialBackoff', env: 'HOOKWATCH_ALERT_DELIVERY_INITIAL_BACKOFF', type: 'duration', default: 500, min: 1, max: 600_000,
    description: 'Backoff ceiling of the first retry; it doubles per attempt up to alerting.delivery.maxBackoff (the wait is random below it).',
  },
  {
    key: 'alerting.delivery.maxBackoff', env: 'HOOKWATCH_ALERT_DELIVERY_MAX_BACKOFF', type: 'duration', default: 30_000, min: 1, max: 3_600_000,
    description: 'Largest backoff ceiling between delivery attempts.',
  },
  {
    key: 'alerting.delivery.maxQueue', env: 'HOOKWATCH_ALERT_DELIVERY_MAX_QUEUE', type: 'int', default: 1000, min: 1, max: 1_000_000,
    description: 'Notifications waiting per receiver; more are recorded as failed (and logged) instead of growing memory.',
  },
];

export function findSetting(key: string): Setting | undefined {
  return SETTINGS.find((s) => s.key === key);
}

/** `otlp.http.addr` -> `--otlp-http-addr`; camelCase parts become kebab-case. */
export function flagName(key: string): string {
  return '--' + key.replace(/\./g, '-').replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());
}

/** `postgres://user:secret@host/db` -> `postgres://user:<redacted>@host/db`. */
export function redactUrlPassword(value: unknown): unknown {
  if (typeof value !== 'string' || !/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return value;
  try {
    const url = new URL(value);
    if (url.password) url.password = 'redacted';
    for (const key of [...url.searchParams.keys()]) {
      if (/pass|secret|token|key/i.test(key)) url.searchParams.set(key, 'redacted');
    }
    return url.toString().replace(':redacted@', ':<redacted>@');
  } catch {
    return '<unparsable URL redacted>';
  }
}
