import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import type { LogRecordExporter, ReadableLogRecord } from '@opentelemetry/sdk-logs';

import { UsageError } from '../common/args.ts';
import type { HookRecord, HookRecordSink } from './transcript.ts';

/** Scope and body Claude Code uses for its events, so transcript findings land beside live telemetry. */
const SCOPE_NAME = 'com.anthropic.claude_code.events';
const EVENT_BODY = 'claude_code.hook_execution_complete';
/** Records emitted between two flushes; below the batch processor's queue (2048) so nothing is dropped. */
const FLUSH_EVERY = 500;

/** The OTLP/HTTP logs URL for what the user typed: a base URL gets `/v1/logs`, a full `/v1/logs` URL is kept. */
export function logsUrl(target: string): string {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new UsageError(`--send: not a URL: "${target}" (expected e.g. http://hookwatch:4318)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--send: expected an http(s) URL, got "${target}"`);
  if (!url.pathname.endsWith('/v1/logs')) url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/logs`;
  return url.toString();
}

/**
 * The attributes of a `hook_execution_complete` event for one transcript record, shaped like Claude Code's
 * (every value a string, numbers included) plus `hookwatch.source=transcript`. Char attributes are only set
 * when the transcript shows the size: absent means unknown, never zero.
 */
export function hookEventAttributes(record: HookRecord, sequence: number, observedAt: Date): Record<string, string> {
  const attributes: Record<string, string> = {
    'event.name': 'hook_execution_complete',
    'event.timestamp': normaliseTimestamp(record.timestamp) ?? observedAt.toISOString(),
    'event.sequence': String(sequence),
    'session.id': record.sessionId,
    hook_event: record.hookEvent,
    hook_name: record.hookName,
    num_hooks: '1',
    num_success: record.outcome === 'success' ? '1' : '0',
    num_blocking: record.outcome === 'blocking' ? '1' : '0',
    num_non_blocking_error: record.outcome === 'nonBlockingError' ? '1' : '0',
    num_cancelled: record.outcome === 'cancelled' ? '1' : '0',
    num_outputs_persisted: String(record.newlyPersisted),
    'hookwatch.source': 'transcript',
  };
  if (record.chars.stdout !== undefined) attributes.stdout_chars = String(record.chars.stdout);
  if (record.chars.additionalContext !== undefined) attributes.additional_context_chars = String(record.chars.additionalContext);
  if (record.chars.systemMessage !== undefined) attributes.system_message_chars = String(record.chars.systemMessage);
  if (record.chars.initialUserMessage !== undefined) attributes.initial_user_message_chars = String(record.chars.initialUserMessage);
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
  error: string | undefined;
}

type ExportCallback = Parameters<LogRecordExporter['export']>[1];
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
        this.error ??= result.error?.message ?? 'export failed';
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

/** Sends hook records to a hookwatch server as OTLP/HTTP JSON logs while a scan runs. */
export interface HookEventSender {
  sink: HookRecordSink;
  /** Flushes what is left and shuts the exporter down; safe to call twice. */
  finish: () => Promise<SendOutcome>;
}

/** Creates a sender for `target` (a base URL such as http://hookwatch:4318, or a full /v1/logs URL). */
export function createHookEventSender(target: string, toolVersion: string): HookEventSender {
  const url = logsUrl(target);
  const exporter = new OutcomeTrackingExporter(new OTLPLogExporter({ url, timeoutMillis: 10_000 }));
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': 'claude-code', 'hookwatch.tool': 'scan', 'hookwatch.tool.version': toolVersion }),
    processors: [new BatchLogRecordProcessor({ exporter, maxQueueSize: 2048, maxExportBatchSize: 512, scheduledDelayMillis: 1000 })],
  });
  const logger = provider.getLogger(SCOPE_NAME, toolVersion);
  let emitted = 0;
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
    sink: async (record) => {
      // After a failed export, stop sending: the scan itself still completes and reports.
      if (exporter.error !== undefined || finished !== undefined) return;
      const observedAt = new Date();
      logger.emit({ body: EVENT_BODY, attributes: hookEventAttributes(record, emitted, observedAt), timestamp: timestampOf(record) ?? observedAt });
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
        return { url, emitted, exported: exporter.exported, failed: exporter.failed, error: exporter.error };
      })();
      return finished;
    },
  };
}

function timestampOf(record: HookRecord): Date | undefined {
  const iso = normaliseTimestamp(record.timestamp);
  return iso === undefined ? undefined : new Date(iso);
}
