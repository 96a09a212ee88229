/**
 * Shared pieces of the benchmarks: a hookwatch server in a child process (fresh SQLite file in a temp dir),
 * a keep-alive HTTP client that times each request, and CPU accounting.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildMessage, ServerStats } from './server-child.ts';

/** A running benchmark server. */
export interface BenchServer {
  otlpHttpUrl: string;
  httpUrl: string;
  pid: number;
  dir: string;
  stats(): Promise<ServerStats>;
  resetLoopDelay(): void;
  stop(): Promise<void>;
}

/** Starts hookwatch in a child process with HOOKWATCH_* overrides; the DB lives in a fresh temp dir. */
export async function startServer(env: Record<string, string> = {}): Promise<BenchServer> {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-bench-'));
  const child: ChildProcess = fork(new URL('./server-child.ts', import.meta.url), [], {
    env: {
      ...process.env,
      HOOKWATCH_DB: join(dir, 'hookwatch.db'),
      HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0',
      HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0',
      HOOKWATCH_HTTP_ADDR: '127.0.0.1:0',
      HOOKWATCH_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiters: ((m: ChildMessage) => void)[] = [];
  child.on('message', (m: ChildMessage) => waiters.shift()?.(m));
  const next = (): Promise<ChildMessage> =>
    new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('benchmark server did not answer within 30 s')), 30_000);
      waiters.push((m) => {
        clearTimeout(t);
        resolve(m);
      });
    });
  const ready = await Promise.race([
    next(),
    new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`benchmark server exited with ${code}`)))),
  ]);
  if (ready.type !== 'ready') throw new Error(`benchmark server failed: ${ready.type === 'error' ? ready.message : ready.type}`);
  return {
    otlpHttpUrl: ready.otlpHttpUrl,
    httpUrl: ready.httpUrl,
    pid: ready.pid,
    dir,
    async stats() {
      const p = next();
      child.send({ type: 'stats' });
      const m = await p;
      if (m.type !== 'stats') throw new Error('unexpected answer from the benchmark server');
      return m.stats;
    },
    resetLoopDelay() {
      child.send({ type: 'reset' });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.send({ type: 'stop' });
        const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(killer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The outcome of one timed POST. */
export interface PostResult {
  status: number;
  ms: number;
  body: Buffer;
}

/** POSTs with a shared keep-alive agent and times the exchange end to end. */
export function post(agent: Agent, url: string, body: Buffer, headers: Record<string, string>): Promise<PostResult> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': String(body.length) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A keep-alive agent for `clients` concurrent connections. */
/** POSTs every body with `concurrency` clients, each taking the next body as soon as its last was answered; returns the non-200 count. */
export async function postAll(agent: Agent, url: string, bodies: readonly Buffer[], headers: Record<string, string>, concurrency: number): Promise<number> {
  let failures = 0;
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < bodies.length) {
      const b = bodies[next++] as Buffer;
      if ((await post(agent, url, b, headers)).status !== 200) failures++;
    }
  }));
  return failures;
}

export function agentFor(clients: number): Agent {
  return new Agent({ keepAlive: true, maxSockets: clients, maxFreeSockets: clients });
}

/** CPU microseconds (user + system) of this process since `since`. */
export function cpuMicrosSince(since: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(since);
  return d.user + d.system;
}

/** Server CPU microseconds between two stats snapshots. */
export function serverCpuMicros(a: ServerStats, b: ServerStats): number {
  return b.cpuUserMicros + b.cpuSystemMicros - a.cpuUserMicros - a.cpuSystemMicros;
}
