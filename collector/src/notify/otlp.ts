/**
 * Alert transitions out as OpenTelemetry log records (sdk-logs + the OTLP/HTTP exporter), so a team sees
 * hookwatch's findings in the backend it already uses. Not retried past the exporter's own retries of
 * 429/502/503/504 (within 5 s), but never lost silently: every event is counted on /metrics as exported, failed
 * (by reason) or dropped (the export queue full), and failures and drops are logged, at most a line a minute each.
 * Records the endpoint answers it rejected (an OTLP partial success) are failed too (reason `rejected`), as the
 * OpenTelemetry Collector has it: logged at warn with the endpoint's error message, at most a line a minute.
 * An https:// endpoint speaks TLS with alerting.otlp.tls.* (a CA, a client certificate, the server name, the lowest
 * version), rotated files taken into use for the connections made from then on.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { Agent as HttpAgent, type ClientRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { SeverityNumber, type Logger as OtelLogger } from '@opentelemetry/api';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider, type LogRecordExporter, type ReadableLogRecord } from '@opentelemetry/sdk-logs';
import type { AlertIdentity, AlertState } from './model.ts';
import { alertmanagerFingerprint } from './alertmanager.ts';
import { otlpSignalUrl, safeEndpoint } from '../net/otlp-url.ts';
import { secretScrubber } from '../net/endpoint-secrets.ts';
import { decodePartialSuccess, isPartialSuccessWarning, namedEncoding, refusalText, type PartialSuccess } from '../otlp/encode.ts';
import { MAX_RESPONSE_BYTES } from '../forward/exporter-http.ts';
import { ClientTlsCredentials, tlsFailure } from '../net/tls.ts';
import { ClientTlsHttpsAgent } from '../net/tls-agent.ts';
import { routeSdkDiagnostics } from './otel-diag.ts';
import { UNREACHABLE_CODES } from './transport.ts';
import type { Logger } from '../telemetry/logger.ts';
import { ThrottledLine } from '../telemetry/throttled-line.ts';
import type { NotifyConfig } from './settings.ts';
import { networkErrorWords } from '../../../shared/src/network-error.ts';

/** One alert transition as emitted. */
export interface AlertEvent extends AlertIdentity {
  state: AlertState;
  atMs: number;
  /** The dashboard's page for the alert (its hook over the time it counted), as notifications link to it. */
  url?: string;
}

/**
 * Why alert events were not exported, as /metrics names it (hookwatch_alert_event_failures_total{reason}):
 * - refused_3xx, refused_4xx, refused_5xx: the endpoint answered that status class (429, 502, 503 and 504 after
 *   the exporter's retries ran out; a redirect is not followed);
 * - unreachable: no connection (refused, reset, no route, a name that does not resolve);
 * - timeout: no answer within the export timeout;
 * - tls: the TLS handshake failed (the endpoint's certificate not trusted, for another name or out of date; the
 *   client certificate of alerting.otlp.tls refused);
 * - rejected: the endpoint took the request but answered that it rejected these records (an OTLP partial success);
 * - other: anything else (an answer too large to read).
 */
export const ALERT_EVENT_FAILURE_REASONS = ['refused_3xx', 'refused_4xx', 'refused_5xx', 'unreachable', 'timeout', 'tls', 'rejected', 'other'] as const;
export type AlertEventFailureReason = (typeof ALERT_EVENT_FAILURE_REASONS)[number];

/** What became of the alert events handed to a sink, since start (hookwatch_alert_events_total). */
export interface AlertEventStats {
  /** Accepted by the endpoint. */
  exported: number;
  /** Given up: refused, unreachable, timed out, TLS failed, rejected by the endpoint (byReason says which). */
  failed: number;
  /** Not sent: the export queue was full, or the export had stopped. */
  dropped: number;
  byReason: Record<AlertEventFailureReason, number>;
}

export const noAlertEventStats = (): AlertEventStats => ({ exported: 0, failed: 0, dropped: 0, byReason: Object.fromEntries(ALERT_EVENT_FAILURE_REASONS.map((r) => [r, 0])) as AlertEventStats['byReason'] });

/** Receives alert transitions (the OTLP emitter, or nothing). */
export interface AlertEventSink {
  readonly stats: AlertEventStats;
  emit(e: AlertEvent): void;
  /** Exports what is queued, then stops. */
  shutdown(): Promise<void>;
  /** Gives up on what shutdown() still waits for (an endpoint that does not answer): those events are lost. */
  cut?(): void;
}

export interface OtlpEmitterOptions {
  /** Base URL (`/v1/logs` is appended) or the full logs URL ending in /v1/logs. */
  endpoint: string;
  headers: Record<string, string>;
  serviceVersion: string;
  /** Batch delay; small, since an alert is news. */
  scheduledDelayMs?: number;
  /** alerting.otlp.tls.*, opened (openAlertEventTls); absent for the system's defaults. */
  tls?: ClientTlsCredentials;
  /** Where failures and drops are logged. */
  logger: Logger;
  /** Events waiting for their export at most; more are dropped (counted). Default 2048. */
  maxQueue?: number;
  now?: () => number;
}

/**
 * The TLS files of the alert event export (`alerting.otlp.tls.*`), read and checked now: a file that cannot be used
 * is a ConfigError naming the setting, and hookwatch does not start. Undefined without an endpoint or settings.
 */
export function openAlertEventTls(otlp: NotifyConfig['otlp'], logger: Logger, now?: () => number): ClientTlsCredentials | undefined {
  return otlp.endpoint && otlp.tls ? ClientTlsCredentials.open(otlp.tls, logger, now) : undefined;
}

/**
 * The logs URL for an endpoint, as OTEL_EXPORTER_OTLP_ENDPOINT does it: `/v1/logs` after the endpoint's path
 * unless it ends so, and its query (some vendors take the key there) kept after it.
 */
export function logsUrl(endpoint: string): string {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    // Checked when loaded (alerting.otlp.endpoint); the exporter reports what it cannot parse.
    const base = endpoint.replace(/\/+$/, '');
    return /\/v1\/logs$/.test(base) ? base : `${base}/v1/logs`;
  }
  return otlpSignalUrl(url, 'logs', { fullAllowed: true });
}

const SEVERITY: Record<string, SeverityNumber> = { critical: SeverityNumber.ERROR, error: SeverityNumber.ERROR, warning: SeverityNumber.WARN, info: SeverityNumber.INFO };

/**
 * How long the exporter allows one export, its retries of 429/502/503/504 included: past it the export has failed
 * (`timeout`). The flush at stop is given time for one such export (service.ts, alertEventFlushTimeoutMs). A request
 * of it still going then is ended, whatever it is waiting for: the SDK's own timeout is one of an idle connection,
 * which an endpoint sending its headers or body a byte at a time never lets come.
 */
export const ALERT_EVENT_EXPORT_TIMEOUT_MS = 5000;

/** How often failed exports, and drops, are logged at most (each event is counted). */
const FAILURE_LOG_INTERVAL_MS = 60_000;
const DEFAULT_MAX_QUEUE = 2048;
/** How the SDK's exporter writes a partial success to its diagnostics. */
const SDK_PARTIAL_SUCCESS = 'Received Partial Success response';

/**
 * One failed export, classified. `message` names no URL or header of hookwatch's, but may carry the endpoint's
 * reason for a refusal, which may repeat them: it is scrubbed before it is logged.
 */
export interface AlertEventFailure {
  reason: AlertEventFailureReason;
  status?: number;
  message: string;
}

/**
 * Why an export failed, from the exporter's error and the last HTTP status the endpoint answered during it (the
 * exporter reports 429/502/503/504 after its retries without the status), with the reason that answer gave.
 */
export function alertEventFailure(error: unknown, lastStatus: number | undefined, reason?: string): AlertEventFailure {
  const err = (error ?? {}) as { code?: unknown; message?: unknown };
  const code = err.code;
  // OTLPExporterError: the status of an answer that is not retried (400, 401, 413, 500...).
  const status = typeof code === 'number' ? code : undefined;
  if (status !== undefined && status >= 300) return refused(status, reason);
  const tls = tlsFailure(err);
  if (tls) return { reason: 'tls', message: `TLS failed: ${tls}` };
  // In words with its code, as a webhook's delivery attempt says it; never where (the line names the endpoint).
  if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return { reason: 'unreachable', message: networkErrorWords(code) ?? `cannot reach the endpoint: ${code}` };
  if (code === 'ETIMEDOUT' || err.message === 'Request timed out') return { reason: 'timeout', message: `no answer within ${ALERT_EVENT_EXPORT_TIMEOUT_MS} ms` };
  if (lastStatus !== undefined && lastStatus >= 300) return refused(lastStatus, reason);
  return { reason: 'other', message: typeof err.message === 'string' ? err.message.slice(0, 200) : 'unknown error' };
}

/** `text`: the endpoint's reason, as the forwarder names a destination's (refusalText), unscrubbed and whole. */
function refused(status: number, text: string | undefined): AlertEventFailure {
  const reason: AlertEventFailureReason = status >= 500 ? 'refused_5xx' : status >= 400 ? 'refused_4xx' : 'refused_3xx';
  return { reason, status, message: status < 400 ? `answered ${status}, a redirect (not followed)` : `answered ${status}${text ? `: ${text}` : ''}` };
}

/** The start of an answer's body that was kept (the first MAX_RESPONSE_BYTES). */
function answerBody(answer: { chunks: Buffer[] }): Buffer {
  return Buffer.concat(answer.chunks).subarray(0, MAX_RESPONSE_BYTES);
}

/**
 * The OTLP/HTTP exporter, with the result of each export counted and logged: the SDK's batch processor throws
 * results away. Records leave the export queue as they are handed to it.
 */
class CountingExporter implements LogRecordExporter {
  private readonly inner: OTLPLogExporter;
  private readonly onStart: (records: number) => void;
  private readonly onResult: (records: number, failure: AlertEventFailure | undefined, partial: PartialSuccess | undefined) => void;
  /** The last HTTP status the endpoint answered in the export in progress (the batch processor runs one at a time). */
  lastStatus: number | undefined;
  /** The last answer's content type and the start of its body (the SDK reads it too, and only logs a partial success). */
  lastAnswer: { type: string; chunks: Buffer[]; bytes: number } | undefined;
  /** Records of the export in progress, its result not yet in. */
  inFlight = 0;
  /**
   * When the export in progress is over, its retries included (performance.now()): a request of it still going then
   * is ended (see OtlpAlertEmitter.onRequest).
   */
  deadline = 0;
  /** Set when the export's last answer was cut at the deadline (endOverdue): its status is the export's result. */
  private answerCut = false;
  /** Cut off: nothing more is sent, and the result of the export in progress is no longer counted. */
  private cutOff = false;

  constructor(inner: OTLPLogExporter, onStart: (records: number) => void, onResult: (records: number, failure: AlertEventFailure | undefined, partial: PartialSuccess | undefined) => void) {
    this.inner = inner;
    this.onStart = onStart;
    this.onResult = onResult;
  }

  export(records: ReadableLogRecord[], resultCallback: Parameters<LogRecordExporter['export']>[1]): void {
    // ExportResultCode.FAILED: records still queued when the export was cut off, counted by cut().
    if (this.cutOff) return resultCallback({ code: 1 });
    this.onStart(records.length);
    this.inFlight = records.length;
    this.deadline = performance.now() + ALERT_EVENT_EXPORT_TIMEOUT_MS;
    this.answerCut = false;
    this.lastStatus = undefined;
    this.lastAnswer = undefined;
    this.inner.export(records, (result) => {
      this.inFlight = 0;
      // ExportResultCode.SUCCESS
      const ok = result.code === 0;
      // A refusal whose body was cut is the refusal, not the connection closed under it.
      const failure = ok ? undefined : this.answerCut && this.lastStatus !== undefined && this.lastStatus >= 300 ? refused(this.lastStatus, this.refusal()) : alertEventFailure(result.error, this.lastStatus, this.refusal());
      if (!this.cutOff) this.onResult(records.length, failure, ok ? this.partialSuccess() : undefined);
      resultCallback(result);
    });
  }

  /**
   * Sends nothing more; returns how many records were in the export in progress, whose result is not counted (0
   * once cut off).
   */
  cut(): number {
    const records = this.cutOff ? 0 : this.inFlight;
    this.cutOff = true;
    return records;
  }

  /**
   * Ends a request of this export still going at its deadline. Before its answer: a timeout, reported as such.
   * During it (a body that goes on): the connection is closed and the answer's status counts, as the SDK's exporter
   * takes an answer broken off: a 2xx accepted the records.
   */
  endOverdue(request: ClientRequest, response: IncomingMessage | undefined): void {
    if (response?.socket) {
      this.answerCut = true;
      response.socket.destroy();
      return;
    }
    request.destroy(Object.assign(new Error(`no answer within ${ALERT_EVENT_EXPORT_TIMEOUT_MS} ms`), { code: 'ETIMEDOUT' }));
  }

  /** Notes the answer to one of this export's requests (a retried one's included: the last one counts). */
  answered(response: IncomingMessage): void {
    this.lastStatus = response.statusCode;
    const answer = { type: String(response.headers['content-type'] ?? ''), chunks: [] as Buffer[], bytes: 0 };
    this.lastAnswer = answer;
    // The body arrives after this (the SDK's transport reads it too): its start is enough for a response message.
    response.on('data', (chunk: Buffer) => {
      if (answer.bytes >= MAX_RESPONSE_BYTES) return;
      answer.chunks.push(chunk);
      answer.bytes += chunk.length;
    });
  }

  /** The partial success of the export's accepted answer, if it reported one. */
  private partialSuccess(): PartialSuccess | undefined {
    const answer = this.lastAnswer;
    if (!answer) return undefined;
    // The SDK's OTLP/HTTP exporter sends JSON; the answer's content type says how it is written.
    return decodePartialSuccess(namedEncoding(answer.type) ?? 'json', answerBody(answer));
  }

  /** The reason the last answer gave for a refusal, read as the forwarder reads a destination's; undefined without one. */
  private refusal(): string | undefined {
    const answer = this.lastAnswer;
    return answer ? refusalText(answer.type, answerBody(answer), 'json') : undefined;
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

/**
 * The connection pool of the export, closed at shutdown (the exporter's own keeps its idle keep-alive connections
 * open, and nothing closes it): alerting.otlp.tls's, or a keep-alive agent for the endpoint's scheme.
 */
function exportAgent(endpoint: string, tls: ClientTlsCredentials | undefined): HttpAgent {
  if (tls) return new ClientTlsHttpsAgent(tls);
  return /^https:/i.test(endpoint) ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
}

/**
 * Closes the export's connections for good, the requests on them failed: the exporter sends again a request whose
 * connection was reset, and one due to be sent again later (after a 503) would connect anew; neither does. An error
 * without a code is one the exporter does not retry.
 */
function closeForGood(agent: HttpAgent): void {
  const err = new Error('alert event export cut off at stop');
  agent.createConnection = (_options, callback) => {
    // Called back with the error alone, Node fails the request with it.
    (callback as ((e: Error) => void) | undefined)?.(err);
    return undefined;
  };
  for (const sockets of Object.values(agent.sockets)) for (const socket of sockets ?? []) socket.destroy(err);
  agent.destroy();
}

export class OtlpAlertEmitter implements AlertEventSink {
  readonly stats: AlertEventStats = noAlertEventStats();
  private readonly provider: LoggerProvider;
  private readonly logger: OtelLogger;
  private readonly agent: HttpAgent;
  private readonly exporter: CountingExporter;
  private readonly maxQueue: number;
  /** Events emitted and not yet handed to the exporter; the SDK's own queue never holds more. */
  private queued = 0;
  private stopped = false;
  private readonly failures: ThrottledLine;
  private readonly drops: ThrottledLine;
  private lastFailure: AlertEventFailure | undefined;
  /** Partial successes the endpoint answered: records rejected, and its message, as the OpenTelemetry Collector logs it. */
  private readonly partials: ThrottledLine;
  private lastPartial: PartialSuccess | undefined;
  /** Partial successes that rejected nothing but carried a message: a warning from the endpoint (OTLP specification). */
  private readonly endpointWarnings: ThrottledLine;
  private lastWarning = '';
  private readonly onResponse: (message: unknown) => void;
  /** Bounds each request of the export by the export's deadline (CountingExporter.endOverdue). */
  private readonly onRequest: (message: unknown) => void;
  /** The answer of each request of the export whose headers have come, for CountingExporter.endOverdue. */
  private readonly answers = new WeakMap<ClientRequest, IncomingMessage>();
  /** The OpenTelemetry SDK's warnings and errors (a partial success, an answer that is not OTLP), logged as failures are. */
  private readonly sdkLines: Record<'warn' | 'error', { line: ThrottledLine; last: string }>;
  private readonly unrouteSdk: () => void;
  private readonly onCut: (events: number) => void;
  /** Set by cut(): the export in progress fails from then on because its connections were closed. */
  private wasCut = false;

  constructor(opts: OtlpEmitterOptions) {
    const endpoint = safeEndpoint(opts.endpoint);
    const now = opts.now ?? Date.now;
    this.onCut = (events) => opts.logger.warn('alert event export cut off at stop; the alert events not exported are lost', { endpoint, events, failedTotal: this.stats.failed });
    this.maxQueue = opts.maxQueue ?? DEFAULT_MAX_QUEUE;
    const agent = exportAgent(opts.endpoint, opts.tls);
    this.agent = agent;
    const scrub = secretScrubber(opts.endpoint, opts.headers, [logsUrl(opts.endpoint)]);
    this.failures = new ThrottledLine(FAILURE_LOG_INTERVAL_MS, now, (events) => {
      // The endpoint's reason for a refusal may repeat the key or URL it was sent: scrubbed whole, then cut.
      const last = this.lastFailure;
      opts.logger.warn('alert events not exported to alerting.otlp.endpoint; they are lost', { endpoint, ...last, ...(last ? { message: scrub(last.message).slice(0, 300) } : {}), events, failedTotal: this.stats.failed });
    });
    this.drops = new ThrottledLine(FAILURE_LOG_INTERVAL_MS, now, (events) => {
      opts.logger.warn('alert event export queue full; events dropped', { endpoint, events, droppedTotal: this.stats.dropped, maxQueue: this.maxQueue });
    });
    this.partials = new ThrottledLine(FAILURE_LOG_INTERVAL_MS, now, (answers) => {
      const last = this.lastPartial;
      opts.logger.warn('alerting.otlp.endpoint answered a partial success; the alert events it rejected are lost', { endpoint, answers, rejected: last?.rejected ?? 0, message: scrub(last?.message ?? '').slice(0, 500), rejectedTotal: this.stats.byReason.rejected });
    });
    this.endpointWarnings = new ThrottledLine(FAILURE_LOG_INTERVAL_MS, now, (answers) => {
      opts.logger.warn('alerting.otlp.endpoint accepted the alert events with a warning', { endpoint, answers, message: scrub(this.lastWarning).slice(0, 500) });
    });
    const sdkLine = (level: 'warn' | 'error'): { line: ThrottledLine; last: string } => {
      const entry = {
        last: '',
        line: new ThrottledLine(FAILURE_LOG_INTERVAL_MS, now, (times) => {
          opts.logger[level]('OpenTelemetry SDK reported a problem with the alert event export', { endpoint, message: entry.last, times });
        }),
      };
      return entry;
    };
    this.sdkLines = { warn: sdkLine('warn'), error: sdkLine('error') };
    const noteSdk = (level: 'warn' | 'error', message: string): void => {
      // Counted and logged with the export's result (partials), once. After a cut, what the SDK reports is the
      // connections closed under it: those events are counted and logged by cut().
      if (message.startsWith(SDK_PARTIAL_SUCCESS) || this.wasCut) return;
      this.sdkLines[level].last = scrub(message);
      this.sdkLines[level].line.note();
    };
    this.unrouteSdk = routeSdkDiagnostics({ warn: (m) => noteSdk('warn', m), error: (m) => noteSdk('error', m) });
    const inner = new OTLPLogExporter({ url: logsUrl(opts.endpoint), headers: opts.headers, timeoutMillis: ALERT_EVENT_EXPORT_TIMEOUT_MS, httpAgentOptions: () => agent });
    this.exporter = new CountingExporter(inner, (records) => (this.queued -= records), (records, failure, partial) => this.noteResult(records, failure, partial));
    // The status of each answer to this export's requests (the exporter reports a retried 503 without it).
    this.onResponse = (message) => {
      const { request, response } = message as { request: ClientRequest & { agent?: unknown }; response: IncomingMessage };
      if (request.agent !== agent) return;
      this.answers.set(request, response);
      this.exporter.answered(response);
    };
    subscribe('http.client.response.finish', this.onResponse);
    this.onRequest = (message) => {
      const { request } = message as { request: ClientRequest & { agent?: unknown } };
      if (request.agent !== agent) return;
      const timer = setTimeout(() => this.exporter.endOverdue(request, this.answers.get(request)), Math.max(0, this.exporter.deadline - performance.now()));
      timer.unref();
      request.once('close', () => clearTimeout(timer));
    };
    subscribe('http.client.request.start', this.onRequest);
    this.provider = new LoggerProvider({
      resource: resourceFromAttributes({ 'service.name': 'hookwatch', 'service.version': opts.serviceVersion }),
      processors: [new BatchLogRecordProcessor({ exporter: this.exporter, scheduledDelayMillis: opts.scheduledDelayMs ?? 200, maxQueueSize: this.maxQueue, maxExportBatchSize: Math.min(512, this.maxQueue), exportTimeoutMillis: 10_000 })],
    });
    // The processor's timeout is longer than the exporter's (5 s, retries included): each export's result is the
    // exporter's, and the next export starts only once it is in.
    this.logger = this.provider.getLogger('hookwatch.alerting', opts.serviceVersion);
  }

  private noteResult(records: number, failure: AlertEventFailure | undefined, partial: PartialSuccess | undefined): void {
    if (!failure) {
      // An endpoint that says it rejected more records than were sent rejected them all.
      const rejected = Math.min(records, partial?.rejected ?? 0);
      this.stats.exported += records - rejected;
      this.stats.failed += rejected;
      this.stats.byReason.rejected += rejected;
      if (partial && isPartialSuccessWarning(partial)) {
        // The specification's warning: a partial success that rejects nothing, only a message. Nothing is lost.
        // (One with neither, its count no whole number, says nothing.)
        if (partial.message) {
          this.lastWarning = partial.message;
          this.endpointWarnings.note();
        }
      } else if (partial) {
        this.lastPartial = partial;
        this.partials.note();
      }
      return;
    }
    this.stats.failed += records;
    this.stats.byReason[failure.reason] += records;
    this.lastFailure = failure;
    this.failures.note(records);
  }

  emit(e: AlertEvent): void {
    // The batch processor drops what its full queue cannot take without a word: the bound is kept here, counted.
    if (this.stopped || this.queued >= this.maxQueue) {
      this.stats.dropped++;
      this.drops.note();
      return;
    }
    this.queued++;
    const severity = e.state === 'resolved' ? SeverityNumber.INFO : (SEVERITY[e.labels['severity'] ?? ''] ?? SeverityNumber.WARN);
    const attributes: Record<string, string> = {
      'hookwatch.alert.id': e.id,
      'hookwatch.alert.fingerprint': alertmanagerFingerprint(e.labels),
      'hookwatch.alert.rule': e.rule,
      'hookwatch.alert.state': e.state,
    };
    for (const [k, v] of Object.entries(e.labels)) attributes[`hookwatch.alert.label.${k}`] = v;
    for (const [k, v] of Object.entries(e.annotations)) attributes[`hookwatch.alert.annotation.${k}`] = v;
    if (e.labels['hook_event']) attributes['hook_event'] = e.labels['hook_event'];
    if (e.labels['hook_name']) attributes['hook_name'] = e.labels['hook_name'];
    if (e.url) attributes['hookwatch.alert.url'] = e.url;
    this.logger.emit({
      eventName: 'hookwatch.alert',
      body: `[${e.state.toUpperCase()}] ${e.rule}: ${e.annotations['summary'] ?? ''}`.trim(),
      severityNumber: severity,
      severityText: e.state === 'resolved' ? 'INFO' : (e.labels['severity'] ?? 'warning').toUpperCase(),
      timestamp: e.atMs,
      attributes,
    });
  }

  /**
   * Gives up on the flush of shutdown() (an endpoint that takes the request and does not answer, cut off by the
   * bound of the stop): the events in the export in progress and those still queued are counted failed (timeout)
   * and logged by number, the export's connections closed. Safe twice.
   */
  cut(): void {
    this.stopped = true;
    this.wasCut = true;
    const lost = this.exporter.cut() + this.queued;
    this.queued = 0;
    closeForGood(this.agent);
    if (lost === 0) return;
    this.stats.failed += lost;
    this.stats.byReason.timeout += lost;
    this.onCut(lost);
  }

  /** Flushes what is batched, then stops, closing the export's connections; what is not yet logged is. */
  async shutdown(): Promise<void> {
    this.stopped = true;
    try {
      await this.provider.shutdown();
    } finally {
      this.agent.destroy();
      unsubscribe('http.client.response.finish', this.onResponse);
      unsubscribe('http.client.request.start', this.onRequest);
      this.unrouteSdk();
      this.failures.flush();
      this.drops.flush();
      this.partials.flush();
      this.endpointWarnings.flush();
      this.sdkLines.warn.line.flush();
      this.sdkLines.error.line.flush();
    }
  }
}

/** Sink that drops everything (no downstream endpoint configured). */
export const noAlertEvents: AlertEventSink = { stats: noAlertEventStats(), emit() {}, async shutdown() {} };
