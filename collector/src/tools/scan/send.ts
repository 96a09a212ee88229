import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import type { LogRecordExporter, ReadableLogRecord } from '@opentelemetry/sdk-logs';

import { safeEndpoint } from '../../net/otlp-url.ts';
import { otlpLogsUrl } from '../common/args.ts';
import { FINDING_ATTRIBUTES, FINDING_EVENT_NAME } from '../../hooks/transcript-findings.ts';
import type { Finding, FindingSink } from './transcript.ts';

/** Scope of the finding records: hookwatch's own, not Claude Code's, so they are never taken for telemetry. */
const SCOPE_NAME = 'hookwatch.scan';
/** Records emitted between two flushes; below the batch processor's queue (2048) so nothing is dropped. */
const FLUSH_EVERY = 500;

/** The OTLP/HTTP logs URL for --send: a base URL gets `/v1/logs`, a full `/v1/logs` URL is kept. */
export const logsUrl = (target: string): string => otlpLogsUrl(target, '--send');

/**
 * The attributes of a `hookwatch.transcript_finding` record for one finding: its stable id (so the server stores
 * it once however often it is sent), its source, the hook as telemetry names it, the command, and for an output
 * its field, outcome and size (absent when the transcript does not show it: unknown, never zero).
 */
export function findingAttributes(finding: Finding, observedAt: Date): Record<string, string> {
  const a = FINDING_ATTRIBUTES;
  const attributes: Record<string, string> = {
    'event.name': FINDING_EVENT_NAME,
    [a.timestamp]: normaliseTimestamp(finding.timestamp) ?? observedAt.toISOString(),
    [a.source]: 'transcript',
    [a.id]: finding.id,
    [a.kind]: finding.kind,
    [a.session]: finding.sessionId,
    [a.hookEvent]: finding.hookEvent,
    [a.hookName]: finding.hookName,
  };
  if (finding.command !== undefined) attributes[a.command] = finding.command;
  if (finding.kind === 'run') attributes[a.runOutcome] = finding.outcome;
  else {
    attributes[a.field] = finding.field;
    attributes[a.outcome] = finding.outcome;
    if (finding.chars !== null) attributes[a.chars] = String(finding.chars);
    // An output the previous release may have stored under another id: the server counts it once.
    if (finding.previousId !== undefined) attributes[a.previousId] = finding.previousId;
  }
  return attributes;
}

function normaliseTimestamp(timestamp: string | undefined): string | undefined {
  if (timestamp === undefined) return undefined;
  const parsed = new Date(timestamp);
  return Number.isNaN(parsed.getTime()) ? undefined : parsed.toISOString();
}

/** Outcome of sending: events emitted, how many the server accepted, and the first export failure if any. */
export interface SendOutcome {
  url: string;
  emitted: number;
  exported: number;
  /** Events of batches that failed; they are lost (the server was down or refused them). */
  failed: number;
  /** Findings of the scan never emitted: sending stops at the first failed export. */
  notSent: number;
  error: string | undefined;
}

type ExportCallback = Parameters<LogRecordExporter['export']>[1];
/** How much of the server's own message a failure repeats. */
const MAX_ANSWER_MESSAGE = 300;

/**
 * What a failed export says: for an answer, its status and the server's own message (the `message` of the
 * google.rpc.Status an OTLP receiver answers with, or of the API's `error` object when --send names the API port),
 * which names what to correct; for a 401, the variables the token goes in; for an answer that is no HTTP/1.1, the
 * port --send takes. The SDK's error alone is the status text ("Unauthorized", "Method Not Allowed"), or the
 * parser's ("Parse Error: Expected HTTP/").
 */
export function exportFailure(error: Error | undefined): string {
  if (error === undefined) return 'export failed';
  const { code, data } = error as { code?: unknown; data?: unknown };
  // An answer that is no HTTP/1.1 (Node's parser: HPE_INVALID_CONSTANT) is most likely HTTP/2 from a gRPC port.
  if (code === 'HPE_INVALID_CONSTANT') return `${error.message} (the server did not answer in HTTP/1.1: an OTLP/gRPC port? --send takes the OTLP/HTTP port, 4318 by default)`;
  if (typeof code !== 'number') return error.message;
  const said = answerMessage(data);
  const token = code === 401 ? ' (the ingest token goes in OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer <token>", or OTEL_EXPORTER_OTLP_LOGS_HEADERS)' : '';
  return `${code} ${error.message}${said === undefined ? '' : `: ${said}`}${token}`;
}

function answerMessage(data: unknown): string | undefined {
  if (typeof data !== 'string') return undefined;
  let body: unknown;
  try {
    body = JSON.parse(data);
  } catch {
    return undefined;
  }
  const status = body as { message?: unknown; error?: { message?: unknown } } | null;
  const message = status?.message ?? status?.error?.message;
  if (typeof message !== 'string' || message === '') return undefined;
  return message.replace(/\p{Cc}/gu, ' ').slice(0, MAX_ANSWER_MESSAGE);
}

/** ExportResultCode.SUCCESS of @opentelemetry/core. */
const EXPORT_SUCCESS = 0;

/**
 * Counts what the wrapped exporter delivered. The batch processor only hands export failures to the global
 * error handler (forceFlush still resolves), so this is where a refused or unreachable server becomes visible.
 */
class OutcomeTrackingExporter implements LogRecordExporter {
  exported = 0;
  failed = 0;
  error: string | undefined;
  private readonly inner: LogRecordExporter;

  constructor(inner: LogRecordExporter) {
    this.inner = inner;
  }

  export(records: ReadableLogRecord[], resultCallback: ExportCallback): void {
    this.inner.export(records, (result) => {
      if (result.code === EXPORT_SUCCESS) this.exported += records.length;
      else {
        this.failed += records.length;
        this.error ??= exportFailure(result.error);
      }
      resultCallback(result);
    });
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

/** Sends findings to a hookwatch server as OTLP/HTTP JSON logs while a scan runs. */
export interface HookEventSender {
  sink: FindingSink;
  /** Flushes what is left and shuts the exporter down; safe to call twice. */
  finish: () => Promise<SendOutcome>;
}

/** Creates a sender for `target` (a base URL such as http://hookwatch:4318, or a full /v1/logs URL). */
export function createHookEventSender(target: string, toolVersion: string): HookEventSender {
  const url = logsUrl(target);
  const exporter = new OutcomeTrackingExporter(new OTLPLogExporter({ url, timeoutMillis: 10_000 }));
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': 'hookwatch-scan', 'hookwatch.tool': 'scan', 'hookwatch.tool.version': toolVersion }),
    processors: [new BatchLogRecordProcessor({ exporter, maxQueueSize: 2048, maxExportBatchSize: 512, scheduledDelayMillis: 1000 })],
  });
  const logger = provider.getLogger(SCOPE_NAME, toolVersion);
  let emitted = 0;
  let notSent = 0;
  let sinceFlush = 0;
  let finished: Promise<SendOutcome> | undefined;
  const flush = async (): Promise<void> => {
    try {
      await provider.forceFlush();
    } catch (failure) {
      exporter.error ??= failure instanceof Error ? failure.message : String(failure);
    }
  };
  return {
    sink: async (finding) => {
      // After a failed export, stop sending: the scan itself still completes and reports.
      if (exporter.error !== undefined || finished !== undefined) {
        notSent++;
        return;
      }
      const observedAt = new Date();
      logger.emit({ body: FINDING_EVENT_NAME, attributes: findingAttributes(finding, observedAt), timestamp: timestampOf(finding) ?? observedAt });
      emitted++;
      sinceFlush++;
      if (sinceFlush >= FLUSH_EVERY) {
        sinceFlush = 0;
        await flush();
      }
    },
    finish: () => {
      finished ??= (async () => {
        await flush();
        await provider.shutdown().catch(() => undefined);
        // Printed and in --json: without the user, password and query a --send URL may carry.
        return { url: safeEndpoint(url), emitted, exported: exporter.exported, failed: exporter.failed, notSent, error: exporter.error };
      })();
      return finished;
    },
  };
}

function timestampOf(finding: Finding): Date | undefined {
  const iso = normaliseTimestamp(finding.timestamp);
  return iso === undefined ? undefined : new Date(iso);
}
