/**
 * The HTTP API's JSON shapes (/api/v1), shared by the collector (which produces them) and the dashboard
 * (which reads them). camelCase everywhere; times are RFC 3339 strings.
 */
import type { DeliveryStatus, OutputKind } from './cliff.ts';

/** Largest value per output kind; null when no execution in the range carried size data. */
export type CharsByKind = Record<OutputKind, number | null>;

/** The counters every rollup carries, per hook and per time bucket. */
export interface HookCounters {
  /** hook_execution_complete events. */
  executions: number;
  /** hook_execution_start events (a start with no complete is a real Claude Code failure mode). */
  starts: number;
  /** Hook commands run (sum of num_hooks). */
  numHooks: number;
  success: number;
  blocking: number;
  nonBlockingError: number;
  cancelled: number;
  /** Output strings saved to a file instead of delivered (sum of num_outputs_persisted). */
  outputsPersisted: number;
  /** Executions with at least one persisted output. */
  executionsWithPersisted: number;
  /** Executions without size attributes (clients before 2.1.280): unknown, never healthy. */
  sizeUnknownExecutions: number;
  /** Executions whose largest output may exceed the near threshold, with nothing persisted. */
  nearExecutions: number;
  /**
   * Executions with size data whose sizes may be sums over more than one hook command: num_hooks over 1, or not
   * sent. Rollup rows stored before hookwatch counted them say 0; what is read from the raw events still stored
   * (a range's edges, a filter no rollup holds, a dimension's rollups rebuilt from the events, the hour of the
   * attribute-set rollup folded again at retention) counts them whenever they were stored.
   */
  sizesMaySumExecutions: number;
  /**
   * Largest reported size per output kind. Claude Code reports sums over num_hooks commands, so this is an
   * upper bound of the largest single string.
   */
  maxChars: CharsByKind;
  /**
   * Lower bound of the largest single string per kind: max over executions of ceil(sum / num_hooks); an execution
   * without num_hooks bounds nothing (its sum may be over any number of commands), null when no execution does.
   */
  maxCharsLowerBound: CharsByKind;
  /** Sum of reported sizes per kind (over executions with size data). */
  sumChars: CharsByKind;
  durationMsSum: number;
  durationMsMax: number | null;
}

export interface HookSummary extends HookCounters {
  /** Stable, URL-safe id (16 hex characters) of hookEvent + hookName. */
  id: string;
  hookEvent: string;
  hookName: string;
  status: DeliveryStatus;
  /**
   * Cap minus the largest output (upper bound); null when no execution carried size data. With executions without
   * size data (sizeUnknownExecutions > 0) it is at most this: their outputs may have been larger.
   */
  headroom: number | null;
  firstSeen: string;
  lastSeen: string;
}

/**
 * Why an answer covers another range than the one asked (whose ends, rounded to the minute, it names): past
 * retention.events only whole hours remain (the range widens to the hours its ends fall in), and a filter or
 * dimension only raw events answer counts nothing there (the range starts where the events kept do). Such a read
 * wholly before the events kept covers an empty range (from equal to to); asked for that range again, it names it
 * as well, though it covers the range asked, saying why nothing is counted. Past retention.rollups no hour or day
 * rollup remains: the raw events and minute rollups still kept there (retention.events longer) answer those hours
 * exactly, with no coverage; before them too nothing remains, so any answer counts nothing there
 * (`retention.rollups`): the range starts where the oldest source kept does, and a range wholly before it is
 * empty, named again when asked again.
 */
export interface RangeCoverage {
  askedFrom: string;
  askedTo: string;
  limitedBy: 'retention.events' | 'retention.rollups';
}

export interface HooksResponse {
  from: string;
  to: string;
  /** Present when `from` and `to` (the range covered) differ from the range asked: see RangeCoverage. */
  coverage?: RangeCoverage;
  /** One page, riskiest first (`limit`, default 1000). */
  hooks: HookSummary[];
  /** Hooks matching the query, over all pages. */
  total: number;
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

export interface SeriesBucket extends HookCounters {
  /** Start of the bucket (inclusive): a multiple of the step, before the answer's `from` in a first bucket `from` cuts. */
  start: string;
  /**
   * End of the bucket (exclusive), as `start` is written: start + step for a whole bucket, the answer's `to` for
   * a last bucket `to` cuts, the time of the answer (rounded up to the second) for the bucket still filling, in a range
   * ending now (whose `to` is rounded up to the whole minute) or later. A bucket counts from the later of `start`
   * and `from` until `end`: one that covers less than its step is partial (the one still filling, in a range
   * ending now or later), and is no dip.
   */
  end: string;
  status: DeliveryStatus | null;
}

export interface SeriesResponse {
  hook: { id: string; hookEvent: string; hookName: string };
  from: string;
  to: string;
  /** Present when `from` and `to` (the range covered) differ from the range asked: see RangeCoverage. */
  coverage?: RangeCoverage;
  /** Bucket width in seconds. */
  step: number;
  buckets: SeriesBucket[];
}

export interface ClientVersion {
  serviceName: string;
  version: string;
  executions: number;
  sizeUnknownExecutions: number;
  /** False when every execution from this version lacked size data (older than 2.1.280). */
  hasSizeData: boolean;
}

export interface OverviewResponse {
  from: string;
  to: string;
  /** Present when `from` and `to` (the range covered) differ from the range asked: see RangeCoverage. */
  coverage?: RangeCoverage;
  totals: HookCounters;
  hooks: number;
  statusCounts: Record<DeliveryStatus, number>;
  /**
   * Outputs persisted, at least: each hook's persistedAtLeast, summed. Not persistedAtLeast of `totals`, whose sums
   * mix the hooks whose clients report num_outputs_persisted with those whose clients do not.
   */
  persisted: number;
  /** Each hook's measuredOnly, summed: the executions `persisted` counts as one output each, a lower bound. */
  measuredOnly: number;
  /** Share (0..1) of executions that carried size data; null with no executions. */
  sizeDataShare: number | null;
  clientVersions: ClientVersion[];
  /** Newest event; with filters, the newest event matching them. */
  lastEventAt: string | null;
  /** Port of the OTLP/HTTP receiver, for the setup snippet (absent when not known). */
  otlpHttpPort?: number;
  /** Whether that port speaks TLS (otlp.tls, apart from the dashboard's http.tls): the snippet's scheme. */
  otlpHttpTls?: boolean;
  /** Whether the receivers require a bearer token (otlp.ingestToken): the snippet then sets the header. Never the token. */
  otlpIngestToken?: boolean;
  /** Whether the receivers require client certificates (mutual TLS, otlp.tls.clientCaFile): the snippet then sets them. Never a path. */
  otlpClientCertificate?: boolean;
  /**
   * The OTLP requests this replica's receivers refused in the last 15 minutes, by transport and reason, most first
   * (empty when none): kept in the memory of the process that answers, so another replica's refusals are not here.
   * Never a header, token or query string.
   */
  otlpRefusals?: OtlpRefusal[];
}

/** OTLP requests refused for one reason over one transport (OverviewResponse.otlpRefusals). */
export interface OtlpRefusal {
  transport: 'http' | 'grpc';
  /** As hookwatch_otlp_requests_rejected_total's reason: not_found, unauthenticated, too_large, ... */
  reason: string;
  count: number;
  /** When the last of them was refused. */
  lastAt: string;
  /** The path the last of them asked for (over gRPC, the method), cut to 64 characters, without its query string. */
  lastPath?: string;
  /** What the client's exporter settings likely need, where hookwatch can tell. */
  hint?: string;
  /**
   * What was wrong with the last of them, for a body that does not decode (bad_request), as the client was told: at
   * most 200 characters, control and invisible characters written out.
   */
  lastProblem?: string;
}

/** One hook's buckets in a fleet series (arrays aligned with FleetSeriesResponse.buckets). */
export interface FleetSeriesHook {
  id: string;
  hookEvent: string;
  hookName: string;
  /** Largest output per bucket; null where no execution carried size data. */
  largest: (number | null)[];
  /** Outputs persisted as the client reports them (0 from a client that does not send num_outputs_persisted). */
  outputsPersisted: number[];
  /** Executions over the cap, reported or measured: persistedAtLeast of the two is the bucket's lower bound. */
  executionsWithPersisted: number[];
  executions: number[];
  sizeUnknownExecutions: number[];
}

/** The hooks of a fleet series past its `limit`, summed per bucket (arrays aligned with its buckets). */
export interface FleetSeriesRest {
  /** How many hooks, and how many of them persisted outputs in the range. */
  hooks: number;
  hooksWithPersisted: number;
  /** The largest output of any of them per bucket. */
  largest: (number | null)[];
  /** Each hook's persistedAtLeast per bucket, summed. */
  persisted: number[];
  /** Each hook's measuredOnly per bucket, summed: executions `persisted` counts as one output each, a lower bound. */
  measuredOnly: number[];
  executions: number[];
  sizeUnknownExecutions: number[];
}

/** The riskiest hooks' series over one range and step, the others summed: the overview's fleet chart and sparklines. */
export interface FleetSeriesResponse {
  from: string;
  to: string;
  /** Present when `from` and `to` (the range covered) differ from the range asked: see RangeCoverage. */
  coverage?: RangeCoverage;
  step: number;
  /** Bucket starts (RFC 3339), as SeriesBucket.start. */
  buckets: string[];
  /** Bucket ends (RFC 3339, aligned with `buckets`), as SeriesBucket.end: `to` where `to` cuts one, now where it is still filling. */
  ends: string[];
  /** The `limit` riskiest hooks with events in the range (the order of /api/v1/hooks), most persisted outputs first. */
  hooks: FleetSeriesHook[];
  /** The hooks past `limit`, or null when there are none. */
  rest: FleetSeriesRest | null;
  /** Hooks with events in the range. */
  total: number;
}

export interface BreakdownRow extends HookCounters {
  value: string;
  status: DeliveryStatus;
}

export interface BreakdownResponse {
  hookId: string;
  dimension: string;
  from: string;
  to: string;
  /** Present when `from` and `to` (the range covered) differ from the range asked: see RangeCoverage. */
  coverage?: RangeCoverage;
  rows: BreakdownRow[];
  /** Rows in the range, over every page. */
  total: number;
  /** The `cursor` of the next page; null on the last. */
  nextCursor: string | null;
}

export interface ApiError {
  error: { code: string; message: string; parameter?: string };
}

/**
 * The header on every answer of hookwatch's HTTP port, its errors and refusals included (`X-Hookwatch: 1`), those
 * written before a request reaches the app too (a request the HTTP parser refuses, such as 431 for headers over
 * 16 KiB; 417 for an Expect; CONNECT; the 400 to plain HTTP under http.tls): a 401 or 403 without it is not
 * hookwatch's but that of a server in front of it (a sign-in proxy, an API gateway), whatever its body says. A proxy
 * passes it on with hookwatch's answers; its own answers do not carry it. The OTLP/HTTP port's answers do not.
 */
export const OWN_ANSWER_HEADER = 'x-hookwatch';

/** Alert states, as in Prometheus: pending until `for` has passed, then firing, then resolved. */
export type AlertState = 'pending' | 'firing' | 'resolved';

export interface AlertSummary {
  /** Stable id of this alert instance (hookwatch's key for the label set plus the time it became active). */
  id: string;
  /**
   * Alertmanager's fingerprint of the label set: the one webhook bodies carry in alerts[].fingerprint (and an
   * Alertmanager receiver computes), so an alert here and in a notification match.
   */
  fingerprint: string;
  rule: string;
  state: AlertState;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** When the condition first held (pending since). */
  activeAt: string;
  /** When it started firing; null while pending. */
  startsAt: string | null;
  /** When it resolved; null while active. */
  endsAt: string | null;
  /**
   * When the evidence it was raised on begins, over its whole episode: the earliest of its late outputs (stamped
   * before the rule's window; `first_event_time` of its annotations names only those still in the window) and of
   * what its rule counted in the window when it became active (the start of the chart bucket holding it); for a
   * `silence` alert of a hook, the hook's last execution, where the quiet stretch begins. Null when unknown (a rule
   * of no single hook's evidence, such as `blind` or `silence` with `scope: feed`).
   */
  firstEventAt: string | null;
  /** When its last firing notification was delivered (or, until one is, sent out): `deliveries` says which arrived. */
  lastNotifiedAt: string | null;
  /** Per receiver, the outcome of the latest delivery attempt (empty until one was made). */
  deliveries: LastDelivery[];
  /** Ids of silences muting it now. */
  silencedBy: string[];
  /** Link to the hook on the dashboard, when the alert is about one hook. */
  hookId: string | null;
}

/** The latest delivery attempt of an alert's notifications to one receiver. */
export interface LastDelivery {
  receiver: string;
  status: 'firing' | 'resolved';
  outcome: 'delivered' | 'retrying' | 'failed';
  at: string;
  httpStatus: number | null;
}

export interface DeliveryAttempt {
  receiver: string;
  /** Standard Webhooks idempotency key: the same for every attempt of one notification. */
  webhookId: string;
  attempt: number;
  at: string;
  /** 'firing' or 'resolved' notification. */
  status: 'firing' | 'resolved';
  outcome: 'delivered' | 'retrying' | 'failed';
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
}

export interface AlertsResponse {
  alerts: AlertSummary[];
  /**
   * Resolved alerts still kept but left out of `alerts`, which lists the newest 1,000 resolved ones (0 when none
   * is left out); each is still answered by GET /api/v1/alerts/:id.
   */
  resolvedOmitted?: number;
  /** Names of the configured receivers (none: alerts show here but nobody is notified). */
  receivers?: string[];
  /** The server's clock when it answered (what a relative range is measured from). */
  now?: string;
}

export interface AlertDetailResponse {
  alert: AlertSummary;
  attempts: DeliveryAttempt[];
}

export interface SilenceMatcher {
  name: string;
  value: string;
  isRegex?: boolean;
  isEqual?: boolean;
}

export interface Silence {
  id: string;
  matchers: SilenceMatcher[];
  startsAt: string;
  endsAt: string;
  createdBy: string;
  comment: string;
  state: SilenceState;
}

/**
 * POST /api/v1/silences: the silence made, and, when a matcher names a label no alert can carry with the rules
 * configured now (or an external label, which hookwatch's alerts do not carry), one warning per such label naming it
 * and the labels alerts carry. The silence is made all the same, as Alertmanager makes it.
 */
export interface SilenceCreatedResponse {
  silence: Silence;
  warnings?: string[];
}

/** Longest range the API answers; longer ones get 400 instead of an expensive scan. */
export const MAX_RANGE_MS = 400 * 86_400_000;

/** Alertmanager's silence states: in force, starting later, or over (kept for the resolved-retention period). */
export const SILENCE_STATES = ['active', 'pending', 'expired'] as const;
export type SilenceState = (typeof SILENCE_STATES)[number];

/** GET /api/v1/silences: one page, newest first; `total` counts the silences in the states asked for. */
export interface SilencesResponse {
  silences: Silence[];
  total: number;
  nextCursor: string | null;
}

/** One forwarding destination as GET /api/v1/forwarding shows it. Times are ISO strings; ages in ms. */
export interface ForwardingDestination {
  /** Endpoint and protocol, without credentials. */
  destination: string;
  state: 'idle' | 'sending' | 'backing_off' | 'stopped';
  /** Requests waiting in the durable queue, and their bytes against the bound. */
  depth: number;
  bytes: number;
  maxBytes: number;
  /** Age of the oldest waiting request; null when the queue is empty. */
  oldestAgeMs: number | null;
  delivered: number;
  retries: number;
  deadLetters: number;
  /** Requests refused with 503 / UNAVAILABLE because the queue was full. */
  refusedFull: number;
  /** Records the destination accepted the request of but reported rejected (OTLP partial success), since start. */
  rejectedByDestination: number;
  consecutiveFailures: number;
  lastError: string | null;
  lastSuccessAt: string | null;
  /** When the next attempt is due (waiting to retry); null while idle or while an attempt is in flight. */
  nextAttemptAt: string | null;
  /** When the attempt in flight began (state `sending`); null when none is. */
  attemptStartedAt: string | null;
}

/** A request the destination refused for good (kept for inspection, body not shown). */
export interface DeadLetterInfo {
  id: number;
  signal: 'logs' | 'metrics' | 'traces';
  bytes: number;
  receivedAt: string;
  failedAt: string;
  attempts: number;
  /** HTTP status or gRPC code of the refusal; null when there was none. */
  status: number | null;
  reason: string;
}

/** The dead letters held for replay, as a whole. */
export interface DeadLetterSummaryInfo {
  /** Dead letters held now (with their bodies), and their bytes against forward.deadLetters.maxBytes. */
  count: number;
  bytes: number;
  maxBytes: number;
  oldestFailedAt: string | null;
  lastReason: string | null;
  /** Removed, oldest first, to stay within maxBytes (since the queue file was created). */
  evicted: number;
  /** Queued requests and dead letters removed by retention (retention.events). */
  expired: number;
  /** Dead letters put back in the queue by POST /api/v1/forwarding/dead-letters/replay. */
  replayed: number;
}

/** GET /api/v1/forwarding. `mode: fan-out` means no forward endpoint is set and nothing is forwarded. */
export interface ForwardingResponse {
  mode: 'inline' | 'fan-out';
  destinations: ForwardingDestination[];
  deadLetters: DeadLetterInfo[];
  /** Inline mode only. */
  deadLetterSummary?: DeadLetterSummaryInfo;
}

/** POST /api/v1/forwarding/dead-letters/replay: dead letters requeued, and those left for lack of queue room. */
export interface ReplayResponse {
  replayed: number;
  remaining: number;
}

/** One replica as the cluster sees it (its last heartbeat in the shared store). */
export interface ClusterReplica {
  /** host:pid:random, as in the lease row. */
  replica: string;
  leader: boolean;
  /** The replica answering this request. */
  self: boolean;
  startedAt: string;
  lastHeartbeat: string;
  /** Seconds since the last heartbeat, by the database clock. */
  heartbeatAgeSeconds: number;
  /** Heartbeat within the lease ttl: the replica is running. */
  alive: boolean;
}

/** GET /api/v1/cluster: who leads (alert evaluation, notifications, retention) and which replicas are running. */
export interface ClusterResponse {
  backend: 'postgres' | 'sqlite';
  self: string;
  /** The unexpired lease; null while no replica holds one (a failover in progress). */
  leader: { replica: string; epoch: number; expiresAt: string } | null;
  leaseTtlSeconds: number | null;
  replicas: ClusterReplica[];
}
