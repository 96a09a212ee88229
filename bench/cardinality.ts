/**
 * Hook-name cardinality benchmark (`node bench/cardinality.ts [--quick]`): a hookwatch child process (default
 * store.maxHooks) takes executions in 1,000-record OTLP/JSON batches from 4 clients, every execution under a
 * hook name of its own (10,000 and 100,000 distinct names), then single-record requests one at a time. Reported:
 * the child's peak RSS (VmHWM) and the single-record ingest p99, each beside the same load under 10 hook names
 * measured in the same run. `--quick` runs 2,000 and 5,000 names.
 */
import { agentFor, post, startServer } from './lib/harness.ts';
import { hookNamesBody, peakRssBytes } from './lib/hook-names.ts';
import { percentile, result, runStandalone, type BenchOptions, type BenchResult } from './lib/result.ts';

const BATCH = 1000;
const CLIENTS = 4;
const MiB = 1024 * 1024;

interface Figure {
  peakRssMiB: number;
  singleP99Ms: number;
  batchP99Ms: number;
  seconds: number;
}

/** `events` executions spread over `distinct` hook names, then `singles` single-record requests. */
async function measure(events: number, distinct: number, singles: number): Promise<Figure> {
  const server = await startServer();
  try {
    const agent = agentFor(CLIENTS);
    const url = `${server.otlpHttpUrl}/v1/logs`;
    const headers = { 'content-type': 'application/json' };
    const batchMs: number[] = [];
    let next = 0;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: CLIENTS }, async () => {
      while (next < events) {
        const first = next;
        next += BATCH;
        const res = await post(agent, url, hookNamesBody(first, Math.min(BATCH, events - first), distinct, Date.now(), 0), headers);
        if (res.status !== 200) throw new Error(`batch answered ${res.status}: ${res.body.toString().slice(0, 200)}`);
        batchMs.push(res.ms);
      }
    }));
    const seconds = (performance.now() - t0) / 1000;
    const singleMs: number[] = [];
    for (let i = 0; i < singles; i++) {
      // New names continue the sequence: with many names these are past store.maxHooks, as a flood's tail is.
      const res = await post(agent, url, hookNamesBody(events + i, 1, distinct === events ? events + singles : distinct, Date.now(), 0), headers);
      if (res.status !== 200) throw new Error(`single record answered ${res.status}`);
      singleMs.push(res.ms);
    }
    agent.destroy();
    return { peakRssMiB: peakRssBytes(server.pid) / MiB, singleP99Ms: percentile(singleMs, 99), batchP99Ms: percentile(batchMs, 99), seconds };
  } finally {
    await server.stop();
  }
}

export async function run(opts: BenchOptions): Promise<BenchResult[]> {
  const sizes = opts.quick ? [2000, 5000] : [10_000, 100_000];
  const singles = opts.quick ? 50 : 200;
  const out: BenchResult[] = [];
  for (const names of sizes) {
    // Baseline: the same executions under 10 hook names, measured right before.
    const base = await measure(names, 10, singles);
    const many = await measure(names, names, singles);
    const label = `${names.toLocaleString('en-US')} hook names`;
    const notes = `${names.toLocaleString('en-US')} executions in ${BATCH}-record OTLP/JSON batches from ${CLIENTS} clients (${many.seconds.toFixed(1)} s; 10 names: ${base.seconds.toFixed(1)} s), store.maxHooks 10,000; then ${singles} single-record requests one at a time`;
    out.push(result(`cardinality ${label}: peak RSS`, many.peakRssMiB, 'MiB', '10 hook names', base.peakRssMiB, `${notes}; VmHWM of the hookwatch process`));
    out.push(result(`cardinality ${label}: single-record ingest p99`, many.singleP99Ms, 'ms', '10 hook names', base.singleP99Ms, notes));
    out.push(result(`cardinality ${label}: batch ingest p99`, many.batchP99Ms, 'ms', '10 hook names', base.batchP99Ms, notes));
  }
  return out;
}

if (import.meta.main) runStandalone(run);
