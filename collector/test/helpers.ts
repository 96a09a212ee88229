/** Test helpers: a real hookwatch on free ports with a temp SQLite file, and the captured fixtures. */
import { request as httpRequest } from 'node:http';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, toConfig, type HookwatchConfig } from '../src/config/index.ts';
import { startService, type RunningService } from '../src/service.ts';
import { silentLogger, type Logger } from '../src/telemetry/logger.ts';
import type { Store } from '../src/store/store.ts';

export const FIXTURES = fileURLToPath(new URL('../testdata/claude-code-2.1.332/', import.meta.url));

export interface FixtureRequest {
  run: string;
  file: string;
  path: string;
  contentType: string;
  body: Buffer;
}

/** Every captured request of a run, in the order the client sent them. */
export function fixtureRequests(run: string): FixtureRequest[] {
  const dir = join(FIXTURES, run);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.body.bin'))
    .sort()
    .map((f) => {
      const meta = JSON.parse(readFileSync(join(dir, f.replace('.body.bin', '.meta.json')), 'utf8')) as { path: string; headers: Record<string, string> };
      return { run, file: f, path: meta.path, contentType: meta.headers['content-type'] ?? '', body: readFileSync(join(dir, f)) };
    });
}

export const FIXTURE_RUNS = ['run1-httpjson', 'run2-httpprotobuf', 'run5-mockapi-tools-httpjson'] as const;

/** Shortly after the captured Claude Code sessions (their events are of 2026-11-30, 07:55 to 08:05 UTC). */
export const FIXTURE_NOW_MS = Date.parse('2026-11-30T08:30:00Z');

/**
 * A clock for a hookwatch fed the captured requests that runs at the real pace but reads FIXTURE_NOW_MS when this
 * module loads: ranges such as the last 7 days hold the captured events whatever the day the tests run, and the
 * refreshes, timeouts and ages that depend on time passing still see it pass.
 */
export const fixtureClock: () => number = (() => {
  const shift = Date.now() - FIXTURE_NOW_MS;
  return () => Date.now() - shift;
})();

export function tempDir(prefix = 'hookwatch-test-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface TestService extends RunningService {
  dir: string;
  close(): Promise<void>;
}

/**
 * Starts hookwatch on 127.0.0.1 port 0 with a fresh SQLite file; env-style overrides apply on top, and over the
 * config file `yaml` when given.
 */
export async function startTestService(env: Record<string, string> = {}, opts: { now?: () => number; dir?: string; yaml?: string; storeSizeRefreshMs?: number; store?: Store; logger?: Logger } = {}): Promise<TestService> {
  const tmp = opts.dir ? { dir: opts.dir, cleanup: () => rmSync(opts.dir as string, { recursive: true, force: true }) } : tempDir();
  const config: HookwatchConfig = toConfig(loadConfig({
    env: {
      HOOKWATCH_DB: join(tmp.dir, 'hookwatch.db'),
      HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0',
      HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0',
      HOOKWATCH_FORWARD_QUEUE_PATH: join(tmp.dir, 'forward-queue.db'),
      HOOKWATCH_HTTP_ADDR: '127.0.0.1:0',
      ...(opts.yaml === undefined ? {} : { HOOKWATCH_CONFIG: 'hookwatch.yaml' }),
      ...env,
    },
    ...(opts.yaml === undefined ? {} : { readFile: () => opts.yaml as string }),
  }));
  const service = await startService(config, { logger: opts.logger ?? silentLogger, ...(opts.now ? { now: opts.now } : {}), ...(opts.storeSizeRefreshMs === undefined ? {} : { storeSizeRefreshMs: opts.storeSizeRefreshMs }), ...(opts.store ? { store: opts.store } : {}) });
  return {
    ...service,
    dir: tmp.dir,
    close: async () => {
      await service.stop();
      tmp.cleanup();
    },
  };
}

export async function postOtlp(base: string, path: string, body: Buffer | string, headers: Record<string, string>): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const res = await fetch(base + path, { method: 'POST', headers, body: typeof body === 'string' ? body : new Uint8Array(body) });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

export async function getJson<T = unknown>(base: string, path: string): Promise<{ status: number; body: T }> {
  const res = await fetch(base + path);
  return { status: res.status, body: (await res.json()) as T };
}

/** Waits until `cond` holds, asking every 20 ms; past `timeoutMs` (a hang guard) fails naming `what`. */
export async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 25_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Waits until `read` gives a value and returns it, asking every 20 ms; past `timeoutMs` fails naming `what`. */
export async function eventually<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 25_000): Promise<T> {
  let value: T | undefined;
  await until(what, async () => (value = await read()) !== undefined, timeoutMs);
  return value as T;
}

/**
 * A series answer (a hook's or the fleet's) without where its buckets end: over a range that runs past now the
 * bucket still filling ends at the time of the answer, so two reads a minute apart differ there only. For tests
 * that compare what the buckets count across a restart, an upgrade or a restore.
 */
export function withoutBucketEnds<T>(series: T): T {
  const s = series as { buckets?: unknown[]; ends?: unknown };
  delete s.ends;
  for (const b of s.buckets ?? []) if (typeof b === 'object' && b !== null) delete (b as { end?: unknown }).end;
  return series;
}

/** A request with the Host header a browser sends after DNS rebinding (fetch does not let a caller set Host). */
export function withHost(url: string, host: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: opts.method ?? 'GET', headers: { host, ...opts.headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}
