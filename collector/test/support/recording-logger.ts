/** A logger for tests that keeps every line: its level, and its message with the fields after it as JSON. */
import type { Logger } from '../../src/telemetry/logger.ts';

export interface Logged {
  level: string;
  /** The message, then ` {fields as JSON}` when there are fields: a test can look for a value anywhere in it. */
  msg: string;
}

export function recordingLogger(): { logger: Logger; lines: Logged[] } {
  const lines: Logged[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>): void => void lines.push({ level, msg: fields ? `${msg} ${JSON.stringify(fields)}` : msg });
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines };
}
