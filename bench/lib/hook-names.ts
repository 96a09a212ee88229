/**
 * Hook-name cardinality load: OTLP/JSON batches of hook_execution_complete records where every record may carry
 * a hook_name never seen before (a client that puts an id in the name), and the peak resident memory of the
 * server process that took them (VmHWM, the kernel's high-water mark, so no short peak is missed between samples).
 */
import { readFileSync } from 'node:fs';

/** The hook_event every generated record has. */
export const HOOK_EVENT = 'PreToolUse';

/**
 * A batch of `count` executions named `PreToolUse:gen-<n>` for n from `first`, modulo `distinct` names. Each
 * record has its own session and sequence, so none is a duplicate of another; one in `persistEvery` persisted an output.
 */
export function hookNamesBody(first: number, count: number, distinct: number, baseMs = Date.now(), persistEvery = 10): Buffer {
  const s = (key: string, v: string): { key: string; value: { stringValue: string } } => ({ key, value: { stringValue: v } });
  const records = Array.from({ length: count }, (_, i) => {
    const n = first + i;
    const ms = baseMs + (i % 1000);
    const nanos = String(BigInt(ms) * 1_000_000n);
    const persisted = persistEvery > 0 && n % persistEvery === 0;
    return {
      timeUnixNano: nanos,
      observedTimeUnixNano: nanos,
      body: { stringValue: 'claude_code.hook_execution_complete' },
      attributes: [
        s('event.name', 'hook_execution_complete'), s('event.timestamp', new Date(ms).toISOString()), s('session.id', `card-${n}`),
        { key: 'event.sequence', value: { intValue: n } },
        s('hook_event', HOOK_EVENT), s('hook_name', `${HOOK_EVENT}:gen-${n % distinct}`), s('num_hooks', '1'), s('num_success', '1'),
        s('num_blocking', '0'), s('num_non_blocking_error', '0'), s('num_cancelled', '0'), s('total_duration_ms', '12'),
        s('stdout_chars', persisted ? '12000' : '300'), s('additional_context_chars', '0'), s('system_message_chars', '0'),
        s('initial_user_message_chars', '0'), s('num_outputs_persisted', persisted ? '1' : '0'),
      ],
    };
  });
  return Buffer.from(JSON.stringify({
    resourceLogs: [{
      resource: { attributes: [s('service.name', 'claude-code'), s('service.version', '2.1.332')] },
      scopeLogs: [{ scope: { name: 'com.anthropic.claude_code.events' }, logRecords: records }],
    }],
  }));
}

/** Peak resident memory (VmHWM) of a process, in bytes; NaN where /proc is not available. */
export function peakRssBytes(pid: number): number {
  try {
    const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}
