/**
 * Forwarding benchmark (`node bench/forward.ts [--quick]`): Claude-Code-shaped 512-record protobuf batches
 * POSTed to a hookwatch server in a child process, once receive-only and once with inline forwarding to a
 * real OTLP/HTTP downstream on 127.0.0.1 (every request committed to the durable queue before the 200).
 * Reports records/s and server CPU µs/record with forwarding on, each next to receive-only in the same run, and
 * the server's RSS while a downstream outage (503 on every attempt) fills the queue, next to its idle RSS.
 * The outage runs 60 s (8 s with --quick), not 10 minutes: the queue lives on disk, so RSS
 * does not grow with its depth; the queue depth and bytes reached are in the notes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HttpDownstream } from '../collector/test/support/downstream-recorder.ts';
import { batchTemplate, stamp } from './lib/batch.ts';
import { agentFor, post, postAll, serverCpuMicros, startServer } from './lib/harness.ts';
import { result, runStandalone, type BenchOptions, type BenchResult } from './lib/result.ts';
import { startedAsScript } from '../collector/src/tools/common/entry.ts';

const RECORDS = 512;
const CONCURRENCY = 4;
const MiB = 1024 * 1024;

interface Pass {
  recordsPerSecond: number;
  cpuMicrosPerRecord: number;
  failures: number;
  drainMs: number;
}

async function until(cond: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error('forward bench: downstream did not receive every request in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Sends the bodies with CONCURRENCY clients and measures the server; with a downstream, waits for it to have them all. */
async function pass(bodies: readonly Buffer[], env: Record<string, string>, downstream?: HttpDownstream): Promise<Pass> {
  const server = await startServer(env);
  const agent = agentFor(CONCURRENCY);
  const url = `${server.otlpHttpUrl}/v1/logs`;
  const headers = { 'content-type': 'application/x-protobuf' };
  let failures = 0;
  try {
    failures += await postAll(agent, url, bodies.slice(0, 3), headers, 1);
    // Queued requests may travel merged, so delivery is counted in bytes, not requests.
    const delivered = (): number => (downstream ? downstream.requests.reduce((n, r) => n + r.body.length, 0) : 0);
    const warmBytes = bodies.slice(0, 3).reduce((n, b) => n + b.length, 0);
    if (downstream) await until(() => delivered() >= warmBytes, 30_000);
    const before = await server.stats();
    const t0 = performance.now();
    failures += await postAll(agent, url, bodies.slice(3), headers, CONCURRENCY);
    const wallMs = performance.now() - t0;
    let drainMs = 0;
    if (downstream) {
      const allBytes = bodies.reduce((n, b) => n + b.length, 0);
      await until(() => delivered() >= allBytes, 120_000);
      drainMs = performance.now() - t0 - wallMs;
    }
    const after = await server.stats();
    const records = (bodies.length - 3) * RECORDS;
    return { recordsPerSecond: records / (wallMs / 1000), cpuMicrosPerRecord: serverCpuMicros(before, after) / records, failures, drainMs };
  } finally {
    agent.destroy();
    await server.stop();
  }
}

/** Posts batches while every forwarding attempt gets 503, sampling the server's RSS. */
async function outage(seconds: number): Promise<{ idleRss: number; maxRss: number; lastRss: number; depth: number; bytes: number; refused: number }> {
  const downstream = new HttpDownstream();
  downstream.mode = { kind: 'status', status: 503 };
  const endpoint = await downstream.start();
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-bench-forward-'));
  const server = await startServer({ HOOKWATCH_FORWARD_ENDPOINT: endpoint, HOOKWATCH_FORWARD_QUEUE_PATH: join(dir, 'queue.db'), HOOKWATCH_FORWARD_RETRY_INITIAL_INTERVAL: '1s', HOOKWATCH_FORWARD_RETRY_MAX_INTERVAL: '5s' });
  const agent = agentFor(2);
  const template = batchTemplate(RECORDS, 'protobuf');
  let refused = 0;
  try {
    const idleRss = (await server.stats()).rssBytes;
    let maxRss = idleRss;
    let lastRss = idleRss;
    const end = Date.now() + seconds * 1000;
    let nextSample = Date.now();
    while (Date.now() < end) {
      const r = await post(agent, `${server.otlpHttpUrl}/v1/logs`, stamp(template), { 'content-type': 'application/x-protobuf' });
      if (r.status !== 200) refused++;
      if (Date.now() >= nextSample) {
        lastRss = (await server.stats()).rssBytes;
        maxRss = Math.max(maxRss, lastRss);
        nextSample = Date.now() + 1000;
      }
    }
    const status = (await (await fetch(`${server.httpUrl}/api/v1/forwarding`)).json()) as { destinations: { depth: number; bytes: number }[] };
    const d = status.destinations[0];
    return { idleRss, maxRss, lastRss, depth: d?.depth ?? 0, bytes: d?.bytes ?? 0, refused };
  } finally {
    agent.destroy();
    await server.stop();
    await downstream.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs the forwarding figures. */
export async function run(opts: BenchOptions): Promise<BenchResult[]> {
  const batches = opts.quick ? 12 : 150;
  const template = batchTemplate(RECORDS, 'protobuf');
  const bodies = Array.from({ length: batches + 3 }, () => stamp(template));

  const receiveOnly = await pass(bodies, {});
  const downstream = new HttpDownstream();
  const endpoint = await downstream.start();
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-bench-forward-'));
  let forwarding: Pass;
  try {
    forwarding = await pass(bodies, { HOOKWATCH_FORWARD_ENDPOINT: endpoint, HOOKWATCH_FORWARD_QUEUE_PATH: join(dir, 'queue.db') }, downstream);
  } finally {
    await downstream.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const o = await outage(opts.quick ? 8 : 60);
  const notes = `${batches} batches × ${RECORDS} records, protobuf, ${CONCURRENCY} clients; queue and store on SQLite synchronous=full; forwarding gzip to a local OTLP/HTTP downstream`;
  const failures = receiveOnly.failures + forwarding.failures;
  if (failures > 0) throw new Error(`forward bench: ${failures} requests were not answered 200`);
  return [
    result('forward protobuf: throughput with forwarding on', forwarding.recordsPerSecond, 'records/s', 'receive-only (same run)', receiveOnly.recordsPerSecond, `${notes}; the downstream had every request ${Math.round(forwarding.drainMs)} ms after the last 200`),
    result('forward protobuf: server CPU per record with forwarding on', forwarding.cpuMicrosPerRecord, 'µs/record', 'receive-only (same run)', receiveOnly.cpuMicrosPerRecord, 'server process CPU (user+system) over the timed batches, including delivery to the downstream'),
    result('forward outage: server RSS while the queue fills', o.maxRss / MiB, 'MiB', 'idle RSS before the outage', o.idleRss / MiB, `${opts.quick ? 8 : 60} s of 503s (not 10 min); queue reached ${o.depth} requests, ${(o.bytes / MiB).toFixed(1)} MiB on disk; RSS at the end ${(o.lastRss / MiB).toFixed(1)} MiB; ${o.refused} requests refused`),
  ];
}

const USAGE = `Usage: node bench/forward.ts [--quick]

Forwarding: records/s and server CPU with inline forwarding, beside receive-only in the same run.
  --quick               smoke-test sizes (seconds, not minutes)
  --help                this help
`;

if (startedAsScript(import.meta.url)) runStandalone(run, USAGE);
