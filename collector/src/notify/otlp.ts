/**
 * Alert transitions out as OpenTelemetry log records (sdk-logs + the OTLP/HTTP exporter), so a team sees
 * hookwatch's findings in the backend it already uses. Best effort: the exporter retries 429/502/503/504 itself.
 */
import { SeverityNumber, type Logger as OtelLogger } from '@opentelemetry/api';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import type { AlertIdentity, AlertState } from './model.ts';
import { alertmanagerFingerprint } from './alertmanager.ts';
import { otlpSignalUrl } from '../net/otlp-url.ts';

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

export class OtlpAlertEmitter implements AlertEventSink {
  private readonly provider: LoggerProvider;
  private readonly logger: OtelLogger;

  constructor(opts: OtlpEmitterOptions) {
    const exporter = new OTLPLogExporter({ url: logsUrl(opts.endpoint), headers: opts.headers, timeoutMillis: 5000 });
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

  /** Flushes what is batched, then stops. */
  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }
}

/** Sink that drops everything (no downstream endpoint configured). */
export const noAlertEvents: AlertEventSink = { emit() {}, async shutdown() {} };
