/**
 * Load benchmark (`npm run bench:load`): 50 concurrent clients POST Claude-Code-shaped protobuf batches as fast
 * as the server answers (closed loop: the rate is the highest the machine holds), for 2 minutes (10 s with
 * --quick). Reports throughput, p50/p99 response time, the server's RSS over time and its event-loop delay,
 * next to the same clients against a bare node:http server in the same run (the floor of HTTP cost).
 */
import { HOOK_EVENT_SHARE, batchTemplate, stamp } from './lib/batch.ts';
import { agentFor, post, startServer, type BenchServer } from './lib/harness.ts';
import { percentile, result, runStandalone, type BenchOptions, type BenchResult } from './lib/result.ts';
import type { ServerStats } from './lib/server-child.ts';
import { startedAsScript } from '../collector/src/tools/common/entry.ts';

const CLIENTS = 50;
const RECORDS = 64;

interface LoadRun {
  requests: number;
  ok: number;
  statuses: Record<number, number>;
  latenciesMs: number[];
  wallMs: number;
  idle: ServerStats;
  samples: ServerStats[];
  final: ServerStats;
}

async function drive(server: BenchServer, durationMs: number): Promise<LoadRun> {
  const template = batchTemplate(RECORDS, 'protobuf');
  const agent = agentFor(CLIENTS);
  const url = `${server.otlpHttpUrl}/v1/logs`;
  const headers = { 'content-type': template.contentType };
  const latenciesMs: number[] = [];
  const statuses: Record<number, number> = {};
  let ok = 0;
  // Warm-up: one request per connection, so the timed part measures steady state.
  await Promise.all(Array.from({ length: CLIENTS }, () => post(agent, url, stamp(template), headers)));
  const idle = await server.stats();
  server.resetLoopDelay();
  const samples: ServerStats[] = [];
  const sampler = setInterval(() => {
    server.stats().then((s) => samples.push(s), () => {});
  }, 1000);
  const t0 = performance.now();
  const deadline = t0 + durationMs;
  try {
    await Promise.all(Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < deadline) {
        const r = await post(agent, url, stamp(template), headers);
        latenciesMs.push(r.ms);
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
        if (r.status === 200) ok++;
        else if (r.status === 503) await new Promise((resolve) => setTimeout(resolve, 100)); // honour back-pressure briefly
      }
    }));
  } finally {
    clearInterval(sampler);
    agent.destroy();
  }
  const wallMs = performance.now() - t0;
  const final = await server.stats();
  return { requests: latenciesMs.length, ok, statuses, latenciesMs, wallMs, idle, samples, final };
}

const MiB = 1024 * 1024;

function rssSeries(samples: readonly ServerStats[], points: number): string {
  if (samples.length === 0) return 'none';
  const step = Math.max(1, Math.floor(samples.length / points));
  const picked = samples.filter((_, i) => i % step === 0);
  return picked.map((s) => Math.round(s.rssBytes / MiB)).join(', ');
}

/** Runs the load against hookwatch, then the same load against the bare server. */
export async function run(opts: BenchOptions): Promise<BenchResult[]> {
  const durationMs = opts.quick ? 10_000 : 120_000;
  const baselineMs = opts.quick ? 5_000 : 30_000;

  const hw = await startServer();
  let load: LoadRun;
  try {
    load = await drive(hw, durationMs);
  } finally {
    await hw.stop();
  }
  const bare = await startServer({ BENCH_SERVER: 'null' });
  let base: LoadRun;
  try {
    base = await drive(bare, baselineMs);
  } finally {
    await bare.stop();
  }

  const rps = (r: LoadRun): number => r.ok / (r.wallMs / 1000);
  const maxRss = Math.max(load.final.rssBytes, ...load.samples.map((s) => s.rssBytes));
  const half = load.samples.slice(Math.floor(load.samples.length / 2));
  const secondHalfGrowth = half.length > 1 ? ((half.at(-1) as ServerStats).rssBytes - (half[0] as ServerStats).rssBytes) / MiB : 0;
  const statusText = Object.entries(load.statuses).map(([k, v]) => `${k}×${v}`).join(' ');
  const storedExpected = (load.ok + CLIENTS) * RECORDS * HOOK_EVENT_SHARE;
  const what = `${CLIENTS} clients, ${RECORDS}-record protobuf batches, ${Math.round(durationMs / 1000)} s (baseline ${Math.round(baselineMs / 1000)} s)`;
  if (load.final.stored !== storedExpected) throw new Error(`load: ${load.final.stored} hook events stored, ${storedExpected} acknowledged`);
  return [
    result('load: throughput', rps(load) * RECORDS, 'records/s', 'bare node:http server', rps(base) * RECORDS, `${what}; ${Math.round(rps(load))} requests/s; statuses ${statusText}; stored ${load.final.stored} of ${storedExpected} acknowledged hook events`),
    result('load: p50 response time', percentile(load.latenciesMs, 50), 'ms', 'bare node:http server', percentile(base.latenciesMs, 50), what),
    result('load: p99 response time', percentile(load.latenciesMs, 99), 'ms', 'bare node:http server', percentile(base.latenciesMs, 99), what),
    result('load: peak RSS', maxRss / MiB, 'MiB', 'same server idle before load', load.idle.rssBytes / MiB, `RSS sampled every 1 s, MiB: ${rssSeries(load.samples, 12)}; second-half growth ${secondHalfGrowth.toFixed(1)} MiB`),
    result('load: event-loop delay p99', load.final.loopDelayP99Ms, 'ms', 'bare node:http server', base.final.loopDelayP99Ms, `server event loop under load (monitorEventLoopDelay, 10 ms resolution); max ${load.final.loopDelayMaxMs.toFixed(0)} ms`),
  ];
}

const USAGE = `Usage: node bench/load.ts [--quick]

Load: concurrent clients as fast as the server answers, beside a bare node:http server.
  --quick               smoke-test sizes (seconds, not minutes)
  --help                this help
`;

if (startedAsScript(import.meta.url)) runStandalone(run, USAGE);
