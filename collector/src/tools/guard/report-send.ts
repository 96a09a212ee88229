/**
 * The background half of `hookwatch guard --report`: sends one OTLP log record per trimmed output, then exits.
 * Run as `node report-send.ts <logs url> <report json> [<where a failure is said>]` by the guard, detached from
 * the hook.
 */
import { randomUUID } from 'node:crypto';
import { renameSync, rmSync, writeFileSync } from 'node:fs';

import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor, type LogRecordExporter } from '@opentelemetry/sdk-logs';

import { startedAsScript } from '../common/entry.ts';
import { HOOKWATCH_VERSION } from '../../version.ts';
import { hostPort, networkErrorWords, timedOutWords } from '../../../../shared/src/network-error.ts';
import { GUARD_TRIM_EVENT, GUARD_TRIM_UID } from './report.ts';
import type { GuardReport } from './report.ts';

/** A report that cannot be delivered in this time is dropped: it is telemetry, never worth a stuck process. */
const SEND_TIMEOUT_MS = 5_000;

/**
 * The attributes of one trim record. Sizes are strings, like Claude Code's own hook attributes. `uid` (OpenTelemetry's
 * `log.record.uid`) tells this trim from another of the same hook, sizes, session and millisecond (two identical
 * commands of one event, which Claude Code runs in parallel); a retried export resends it unchanged.
 */
export function trimAttributes(report: GuardReport, trim: GuardReport['trims'][number], at: Date, uid: string): Record<string, string> {
  return {
    'event.name': GUARD_TRIM_EVENT,
    'event.timestamp': at.toISOString(),
    [GUARD_TRIM_UID]: uid,
    hook_event: report.hookEvent,
    hook_name: report.hookName,
    field: trim.field,
    sent_chars: String(trim.sentChars),
    kept_chars: String(trim.keptChars),
    ...(report.sessionId === undefined ? {} : { 'session.id': report.sessionId }),
  };
}

/** The exporter's error once every attempt was answered with a status it retries (it keeps no status code). */
const RETRYABLE_STATUS = 'Export failed with retryable status';

/** A URL in an error's text, up to the first character no URL holds unescaped. */
const URL_IN_TEXT = /[a-z][a-z0-9+.-]*:\/\/[^\s'"<>]*/gi;

/** ExportResultCode.SUCCESS of @opentelemetry/core, which the exporter's result carries. */
const EXPORT_SUCCESS = 0;

/**
 * Why an export failed, in words that name where it went by host and port only: the URL's userinfo, path and
 * query (a token may be in them) are never written.
 */
export function reportFailureWords(url: string, error: unknown): string {
  const where = hostPort(url) ?? 'the --report address';
  const e = error as { code?: unknown; message?: unknown } | undefined;
  const code = e?.code;
  // Node's HTTP/1.1 parser refusing the answer: a gRPC port answers HTTP/2 frames.
  if (typeof code === 'string' && code.startsWith('HPE_')) return `${where} did not answer in HTTP/1.1 (${code}): a gRPC port? hookwatch receives OTLP/HTTP on otlp.http.addr (port 4318 by default)`;
  if (typeof code === 'string') return networkErrorWords(code, where) ?? `${code} from ${where}`;
  // An OTLPExporterError: the HTTP status of an answer that was not a success. hookwatch's API port (and most other
  // servers) answers 404 to /v1/logs.
  if (typeof code === 'number') return `${where} answered HTTP ${code}${code === 404 || code === 405 ? ': it is no OTLP/HTTP receiver; hookwatch receives OTLP/HTTP on otlp.http.addr (port 4318 by default), not on its API port' : ''}`;
  if (e?.message === 'Request timed out') return timedOutWords(SEND_TIMEOUT_MS, where);
  // Every answer a 429, 502, 503 or 504 until the exporter gave up retrying: it keeps no status to name.
  if (e?.message === RETRYABLE_STATUS) return `${where} kept answering a retryable status (HTTP 429, 502, 503 or 504)`;
  // Any URL in the message is named by the host and port the report went to: its userinfo, path and query never.
  return `the export to ${where} failed${typeof e?.message === 'string' && e.message !== '' ? ` (${e.message.replace(URL_IN_TEXT, where).slice(0, 200)})` : ''}`;
}

/** Sends the records and resolves once the export finished: undefined, or why it failed (reportFailureWords). */
export async function sendReport(url: string, report: GuardReport): Promise<string | undefined> {
  const otlp = new OTLPLogExporter({ url, timeoutMillis: SEND_TIMEOUT_MS });
  let failure: string | undefined;
  // The exporter as the processor uses it, keeping the first failure: the processor itself only hands it to
  // OpenTelemetry's global error handler.
  const exporter: LogRecordExporter = {
    export: (logs, done) => otlp.export(logs, (result) => {
      if (result.code !== EXPORT_SUCCESS) failure ??= reportFailureWords(url, result.error);
      done(result);
    }),
    shutdown: () => otlp.shutdown(),
    forceFlush: () => otlp.forceFlush(),
  };
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': 'hookwatch-guard', 'service.version': HOOKWATCH_VERSION }),
    processors: [new SimpleLogRecordProcessor({ exporter })],
  });
  const logger = provider.getLogger('hookwatch.guard', HOOKWATCH_VERSION);
  const at = new Date();
  for (const trim of report.trims) logger.emit({ body: GUARD_TRIM_EVENT, timestamp: at, attributes: trimAttributes(report, trim, at, randomUUID()) });
  await provider.forceFlush();
  await provider.shutdown();
  return failure;
}

/**
 * Where a failed report is said: `-` is the guard's stderr, a terminal the sender shares (nobody waits on it);
 * anything else is a file in the guard's folder that the next guard run that reports says on its stderr
 * (takeReportFailure), as the sender must not hold the hook's stderr pipe, which Claude Code reads to its end.
 */
export function sayFailure(to: string | undefined, words: string): void {
  try {
    if (to === '-') process.stderr.write(`hookwatch guard: a trim report was not delivered: ${words}\n`);
    else if (to) {
      // Written whole beside it, then renamed into place: a run taking the line never finds it empty or half written.
      const writing = `${to}.${process.pid}`;
      try {
        writeFileSync(writing, `${words}\n`, { mode: 0o600 });
        renameSync(writing, to);
      } finally {
        rmSync(writing, { force: true });
      }
    }
  } catch {
    // Nowhere to say it: the report is telemetry, and the hook has long finished.
  }
}

// Started by the guard as `node report-send.ts ...` (not import.meta.main, which Node 24.0 and 24.1 lack: a guarded
// hook would never send its report there).
if (startedAsScript(import.meta.url)) {
  const [url, json, failureTo] = process.argv.slice(2);
  const deadline = setTimeout(() => {
    sayFailure(failureTo, timedOutWords(SEND_TIMEOUT_MS * 2, hostPort(url ?? '')));
    process.exit(1);
  }, SEND_TIMEOUT_MS * 2);
  deadline.unref();
  sendReport(url ?? '', JSON.parse(json ?? '{}') as GuardReport).then(
    (failure) => {
      if (failure === undefined) process.exit(0);
      sayFailure(failureTo, failure);
      process.exit(1);
    },
    (err: unknown) => {
      sayFailure(failureTo, reportFailureWords(url ?? '', err));
      process.exit(1);
    },
  );
}
