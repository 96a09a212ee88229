/**
 * Alert transitions out as OpenTelemetry log records (sdk-logs + the OTLP/HTTP exporter), so a team sees
 * hookwatch's findings in the backend it already uses. Best effort: the exporter retries 429/502/503/504 itself.
 * An https:// endpoint speaks TLS with alerting.otlp.tls.* (a CA, a client certificate, the server name, the lowest
 * version), rotated files taken into use for the connections made from then on.
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { SeverityNumber, type Logger as OtelLogger } from '@opentelemetry/api';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import type { AlertIdentity, AlertState } from './model.ts';
import { alertmanagerFingerprint } from './alertmanager.ts';
import { otlpSignalUrl } from '../net/otlp-url.ts';
import { ClientTlsCredentials } from '../net/tls.ts';
import { ClientTlsHttpsAgent } from '../net/tls-agent.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { NotifyConfig } from './settings.ts';

/** One alert transition as emitted. */
export interface AlertEvent extends AlertIdentity {
  state: AlertState;
  atMs: number;
}

/** Receives alert transitions (the OTLP emitter, or nothing). */
export interface AlertEventSink {
  emit(e: AlertEvent): void;
  shutdown(): Promise<void>;
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
 * The connection pool of the export, closed at shutdown (the exporter's own keeps its idle keep-alive connections
 * open, and nothing closes it): alerting.otlp.tls's, or a keep-alive agent for the endpoint's scheme.
 */
function exportAgent(endpoint: string, tls: ClientTlsCredentials | undefined): HttpAgent {
  if (tls) return new ClientTlsHttpsAgent(tls);
  return /^https:/i.test(endpoint) ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
}

export class OtlpAlertEmitter implements AlertEventSink {
  private readonly provider: LoggerProvider;
  private readonly logger: OtelLogger;
  private readonly agent: HttpAgent;

  constructor(opts: OtlpEmitterOptions) {
    const agent = exportAgent(opts.endpoint, opts.tls);
    this.agent = agent;
    const exporter = new OTLPLogExporter({ url: logsUrl(opts.endpoint), headers: opts.headers, timeoutMillis: 5000, httpAgentOptions: () => agent });
    this.provider = new LoggerProvider({
      resource: resourceFromAttributes({ 'service.name': 'hookwatch', 'service.version': opts.serviceVersion }),
      processors: [new BatchLogRecordProcessor({ exporter, scheduledDelayMillis: opts.scheduledDelayMs ?? 200, maxQueueSize: 2048, exportTimeoutMillis: 5000 })],
    });
    this.logger = this.provider.getLogger('hookwatch.alerting', opts.serviceVersion);
  }

  emit(e: AlertEvent): void {
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
    this.logger.emit({
      eventName: 'hookwatch.alert',
      body: `[${e.state.toUpperCase()}] ${e.rule}: ${e.annotations['summary'] ?? ''}`.trim(),
      severityNumber: severity,
      severityText: e.state === 'resolved' ? 'INFO' : (e.labels['severity'] ?? 'warning').toUpperCase(),
      timestamp: e.atMs,
      attributes,
    });
  }

  /** Flushes what is batched, then stops, closing the export's connections (over http:// too). */
  async shutdown(): Promise<void> {
    try {
      await this.provider.shutdown();
    } finally {
      this.agent.destroy();
    }
  }
}

/** Sink that drops everything (no downstream endpoint configured). */
export const noAlertEvents: AlertEventSink = { emit() {}, async shutdown() {} };
