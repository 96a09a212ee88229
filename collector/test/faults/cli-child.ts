/**
 * The real `hookwatch serve` in a child process, for fault tests that measure the server itself (its peak RSS
 * from /proc, its log lines) rather than the test process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import { tempDir } from '../helpers.ts';
import { intoLogEntries, waitForStarted } from '../support/started.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

export interface CliChild {
  child: ChildProcess;
  otlpHttp: string;
  otlpGrpc: string;
  http: string;
  /** Every JSON log line so far. */
  logs: Record<string, unknown>[];
  /** Peak resident set size of the server process in bytes (VmHWM). */
  peakRss(): number;
  stop(): Promise<void>;
}

/**
 * Starts hookwatch on free ports in `dir`; `env` adds to (and overrides) the defaults. `main` runs another copy of
 * hookwatch (a new version of it) instead of this one.
 */
export async function startCli(dir: string, env: Record<string, string> = {}, main = MAIN): Promise<CliChild> {
  const child = spawn(process.execPath, [main, 'serve'], {
    cwd: dir,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOOKWATCH_DB: join(dir, 'hookwatch.db'),
      HOOKWATCH_FORWARD_QUEUE_PATH: join(dir, 'forward-queue.db'),
      HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0',
      HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0',
      HOOKWATCH_HTTP_ADDR: '127.0.0.1:0',
      HOOKWATCH_LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  const started = await waitForStarted(child, 60_000, intoLogEntries(logs));
  const pid = child.pid as number;
  return {
    child,
    otlpHttp: started.otlpHttp,
    otlpGrpc: started.otlpGrpc,
    http: started.http,
    logs,
    peakRss: () => {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (!m) throw new Error('no VmHWM in /proc status');
      return Number(m[1]) * 1024;
    },
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

type EnvFor = Record<string, string> | ((dir: string) => Record<string, string>);

/**
 * For a test file: `start(env)` runs the CLI in a fresh temporary folder (returned as `dir`; `env` may be
 * computed from it); every process started is killed and every folder removed after each test.
 */
export function cliPerTest(): (env?: EnvFor) => Promise<CliChild & { dir: string }> {
  const running: CliChild[] = [];
  const cleanups: (() => void)[] = [];
  afterEach(async () => {
    for (const c of running.splice(0)) await c.stop();
    for (const f of cleanups.splice(0)) f();
  });
  return async (env = {}) => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const cli = await startCli(dir, typeof env === 'function' ? env(dir) : env);
    running.push(cli);
    return { ...cli, dir };
  };
}
