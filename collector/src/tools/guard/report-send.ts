/**
 * The background half of `hookwatch guard --report`: sends one OTLP log record per trimmed output, then exits.
 * Run as `node report-send.ts <logs url> <report json>` by the guard, detached from the hook.
 */
import { randomUUID } from 'node:crypto';

import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';

import { startedAsScript } from '../common/entry.ts';
import { HOOKWATCH_VERSION } from '../../version.ts';
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

/** Sends the records and resolves once the export finished or failed. */
export async function sendReport(url: string, report: GuardReport): Promise<void> {
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': 'hookwatch-guard', 'service.version': HOOKWATCH_VERSION }),
    processors: [new SimpleLogRecordProcessor({ exporter: new OTLPLogExporter({ url, timeoutMillis: SEND_TIMEOUT_MS }) })],
  });
  const logger = provider.getLogger('hookwatch.guard', HOOKWATCH_VERSION);
  const at = new Date();
  for (const trim of report.trims) logger.emit({ body: GUARD_TRIM_EVENT, timestamp: at, attributes: trimAttributes(report, trim, at, randomUUID()) });
  await provider.forceFlush();
  await provider.shutdown();
}

// Started by the guard as `node report-send.ts ...` (not import.meta.main, which Node 24.0 and 24.1 lack: a guarded
// hook would never send its report there).
if (startedAsScript(import.meta.url)) {
  const [url, json] = process.argv.slice(2);
  const deadline = setTimeout(() => process.exit(1), SEND_TIMEOUT_MS * 2);
  deadline.unref();
  sendReport(url ?? '', JSON.parse(json ?? '{}') as GuardReport).then(
    () => process.exit(0),
    () => process.exit(1),
  );
}
