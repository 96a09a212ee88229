/**
 * Real `hookwatch serve` processes for tests and benchmarks (`node collector/src/main.ts serve` on a SQLite path or
 * a postgres:// URL, on free ports), what they log, and waiting on them: the parts of a replica test that need no
 * PostgreSQL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { waitForStarted } from './started.ts';
import { freePort } from './free-port.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

export interface Replica {
  child: ChildProcess;
  pid: number;
  otlpHttpUrl: string;
  /** http://host:port of the OTLP/gRPC listener. */
  otlpGrpcUrl: string;
  httpUrl: string;
  /** Every stderr line so far (JSON log lines). */
  lines: string[];
  /** Resolves when the process has exited. */
  exited: Promise<void>;
  /** SIGTERM, then SIGKILL after graceMs. */
  stop(graceMs?: number): Promise<void>;
}

export interface ReplicaOptions {
  db: string;
  /** Working directory (relative data paths land here). */
  cwd: string;
  env?: Record<string, string>;
  startTimeoutMs?: number;
  /** Called with the process as soon as it is spawned, before it has started (to kill it during its start). */
  onSpawn?: (child: ChildProcess) => void;
  /** A command that runs the one after it in the same process (setpriv, to serve as another user). */
  wrap?: readonly string[];
}

/** Starts one replica and resolves once it logs `hookwatch started` with its bound URLs. */
export async function startReplica(opts: ReplicaOptions): Promise<Replica> {
  const [file, ...args] = opts.wrap ? [...opts.wrap, process.execPath, MAIN, 'serve'] : [process.execPath, MAIN, 'serve'];
  const child = spawn(file as string, args, {
    cwd: opts.cwd,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOOKWATCH_DB: opts.db,
      HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0',
      HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0',
      HOOKWATCH_HTTP_ADDR: '127.0.0.1:0',
      HOOKWATCH_LOG_LEVEL: 'info',
      ...opts.env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  opts.onSpawn?.(child);
  const lines: string[] = [];
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else {
      child.once('exit', () => resolve());
      // A process that never started (spawn failed) has nothing to wait for.
      child.once('error', () => resolve());
    }
  });
  const urls = await waitForStarted(child, opts.startTimeoutMs ?? 30_000, (line) => lines.push(line));
  const stop = async (graceMs = 10_000): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return { child, pid: child.pid ?? -1, otlpHttpUrl: urls.otlpHttp, otlpGrpcUrl: urls.otlpGrpc, httpUrl: urls.http, lines, exited, stop };
}

/** A replica spawned on fixed free ports (known before it has started), and its stderr lines as they come. */
export interface SpawnedReplica {
  /** Resolves once it logs `hookwatch started`; rejects if it never does (looked at by the caller). */
  starting: Promise<Replica>;
  child: ChildProcess;
  otlpHttpUrl: string;
  otlpGrpcUrl: string;
  httpUrl: string;
  lines: () => string[];
}

/**
 * Spawns a replica on `db` (a postgres:// URL or a SQLite path) on fixed free ports, so it can be probed during
 * its start; `defer` is given what kills it after the test, if it still runs.
 */
export async function spawnReplica(opts: { db: string; cwd: string; env?: Record<string, string>; defer: (fn: () => Promise<void>) => void }): Promise<SpawnedReplica> {
  const [otlp, grpc, http] = [await freePort(), await freePort(), await freePort()];
  const lines: string[] = [];
  let spawned: ChildProcess | undefined;
  const starting = startReplica({
    db: opts.db, cwd: opts.cwd, startTimeoutMs: 90_000,
    env: { HOOKWATCH_OTLP_HTTP_ADDR: `127.0.0.1:${otlp}`, HOOKWATCH_OTLP_GRPC_ADDR: `127.0.0.1:${grpc}`, HOOKWATCH_HTTP_ADDR: `127.0.0.1:${http}`, ...opts.env },
    onSpawn: (child) => {
      spawned = child;
      child.stderr?.setEncoding('utf8').on('data', (c: string) => lines.push(...c.split('\n').filter((l) => l !== '')));
      opts.defer(async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGKILL');
        await new Promise((resolve) => child.once('exit', resolve));
      });
    },
  });
  // Looked at by the test (it may never start, or exit as it should); not an unhandled rejection meanwhile.
  starting.catch(() => {});
  if (!spawned) throw new Error('the replica was not spawned');
  return { starting, child: spawned, otlpHttpUrl: `http://127.0.0.1:${otlp}`, otlpGrpcUrl: `http://127.0.0.1:${grpc}`, httpUrl: `http://127.0.0.1:${http}`, lines: () => lines };
}

/** The fields of a replica's JSON log lines whose msg is `msg`. */
export function logEntries(lines: readonly string[], msg: string): Record<string, unknown>[] {
  return lines.flatMap((l) => {
    try {
      const e = JSON.parse(l) as Record<string, unknown>;
      return e['msg'] === msg ? [e] : [];
    } catch {
      return [];
    }
  });
}

/** Polls fn until it returns something other than undefined. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** How an HTTP request to a replica went: its status, or `no answer` (refused, reset, or given up on), and how long it took (ms). */
export interface TimedAnswer {
  ms: number;
  status: number | 'no answer';
}

/** `url` fetched and its body read, given up on after `timeoutMs` as a client or a probe gives up. */
export async function timedFetch(url: string, timeoutMs: number, init: RequestInit = {}): Promise<TimedAnswer> {
  const t0 = performance.now();
  let status: TimedAnswer['status'];
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    status = res.status;
  } catch {
    status = 'no answer';
  }
  return { ms: Math.round(performance.now() - t0), status };
}
