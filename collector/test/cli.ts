/** The real `hookwatch serve` in a child process, for fault tests that kill, starve or corrupt it. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { intoLogEntries, waitForStarted } from './support/started.ts';

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
  const started = await waitForStarted(child, 60_000, intoLogEntries(logs));
  return { child, logs, otlp: started.otlpHttp, http: started.http };
}

/** Resolves once the child has exited. */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}
