/**
 * The OpenTelemetry SDK's own diagnostics (`diag` from @opentelemetry/api), which the alert event export's
 * exporter and batch processor write to (a backend's partial success, an answer that is not OTLP, a record's
 * attributes dropped): without a logger registered they go nowhere. `diag` is one per process, so the logger is
 * registered when the first export starts and removed when the last one stops; its warn and error lines go to
 * the export that started first, which writes them to hookwatch's log. Lower levels are not asked for.
 */
import { diag, DiagLogLevel, type DiagLogger } from '@opentelemetry/api';

/** Where the SDK's warn and error lines are written, already formatted as one bounded line of text. */
export interface DiagTarget {
  warn(message: string): void;
  error(message: string): void;
}

/** The most of one diagnostic kept; the SDK may add a whole answer body to it. */
const MAX_MESSAGE_CHARS = 500;

const targets: DiagTarget[] = [];

/** One diagnostic's message and arguments (Errors, an answer's bytes, objects) as one line of at most MAX_MESSAGE_CHARS. */
export function diagText(message: string, args: unknown[]): string {
  const parts = [message];
  for (const a of args) {
    if (a instanceof Error) parts.push(`${a.name}: ${a.message}`);
    else if (a instanceof Uint8Array) parts.push(`(${a.byteLength} bytes)`);
    else if (typeof a === 'string') parts.push(a);
    else {
      try {
        parts.push(String(JSON.stringify(a)));
      } catch {
        parts.push(String(a));
      }
    }
  }
  const text = parts.join(' ');
  return text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS)}...` : text;
}

const forward = (level: 'warn' | 'error') => (message: string, ...args: unknown[]): void => {
  const target = targets[0];
  if (target) target[level](diagText(message, args));
};

const sdkLogger: DiagLogger = {
  error: forward('error'),
  warn: forward('warn'),
  info: () => {},
  debug: () => {},
  verbose: () => {},
};

/** Sends the SDK's diagnostics to `target` while no earlier one is registered; the function returned removes it. */
export function routeSdkDiagnostics(target: DiagTarget): () => void {
  targets.push(target);
  if (targets.length === 1) diag.setLogger(sdkLogger, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
  let removed = false;
  return () => {
    if (removed) return;
    removed = true;
    targets.splice(targets.indexOf(target), 1);
    if (targets.length === 0) diag.disable();
  };
}
