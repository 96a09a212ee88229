/** The moment a `hookwatch serve` child process is ready: its "hookwatch started" log line, with where it listens. */
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** The "hookwatch started" log entry: the bound URLs, among the other fields of the line. */
export interface StartedLine extends Record<string, unknown> {
  otlpHttp: string;
  otlpGrpc: string;
  http: string;
}

/**
 * Resolves with the child's "hookwatch started" entry. Rejects, with what it wrote until then, when it exits or
 * fails to spawn first, or after timeoutMs. Every stderr line (a JSON log line or not, e.g. a Node warning) goes
 * to onLine for as long as the child runs.
 */
export function waitForStarted(child: ChildProcess, timeoutMs: number, onLine: (line: string) => void = () => {}): Promise<StartedLine> {
  if (!child.stderr) throw new Error('spawn the child with stderr piped');
  const before: string[] = [];
  let started = false;
  return new Promise((resolve, reject) => {
    const fail = (err: Error): void => {
      clearTimeout(timer);
      reject(err);
    };
    const timer = setTimeout(() => fail(new Error(`hookwatch did not start within ${timeoutMs} ms:\n${before.join('\n')}`)), timeoutMs);
    child.once('exit', (code, signal) => fail(new Error(`hookwatch exited (${signal ?? code}) before starting:\n${before.join('\n')}`)));
    child.once('error', fail);
    createInterface({ input: child.stderr! }).on('line', (line) => {
      onLine(line);
      if (started) return;
      before.push(line);
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      if (entry['msg'] !== 'hookwatch started') return;
      started = true;
      clearTimeout(timer);
      resolve(entry as StartedLine);
    });
  });
}

/** An onLine for waitForStarted that keeps the JSON log entries in `logs` and passes over anything else. */
export function intoLogEntries(logs: Record<string, unknown>[]): (line: string) => void {
  return (line) => {
    try {
      logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // Not a log line (e.g. a Node warning).
    }
  };
}
