/** The real `hookwatch serve` in a child process, for fault tests that kill, starve or corrupt it. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));

export interface Cli {
  child: ChildProcess;
  /** OTLP/HTTP and API base URLs, from the "hookwatch started" line. */
  otlp: string;
  http: string;
  /** Every JSON log line so far. */
  logs: Record<string, unknown>[];
}

/**
 * Starts `hookwatch serve` on free ports with the SQLite file `db` and resolves once it logs that it started.
 * The caller kills what it started (`children`).
 */
export async function startCli(db: string, cwd: string, children: ChildProcess[]): Promise<Cli> {
  const child = spawn(process.execPath, [MAIN, 'serve'], {
    cwd,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOOKWATCH_DB: db,
      HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0',
      HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0',
      HOOKWATCH_HTTP_ADDR: '127.0.0.1:0',
      HOOKWATCH_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  const logs: Record<string, unknown>[] = [];
  const lines = createInterface({ input: child.stderr as NodeJS.ReadableStream });
  const started = await new Promise<{ otlp: string; http: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('hookwatch did not start within 60 s')), 60_000);
    child.once('exit', (code) => reject(new Error(`hookwatch exited with ${code} before starting: ${JSON.stringify(logs.slice(-3))}`)));
    lines.on('line', (line) => {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        // Not a log line (e.g. a Node warning).
        return;
      }
      logs.push(entry);
      if (entry['msg'] === 'hookwatch started') {
        clearTimeout(timer);
        resolve({ otlp: String(entry['otlpHttp']), http: String(entry['http']) });
      }
    });
  });
  return { child, logs, ...started };
}

/** Resolves once the child has exited. */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}
