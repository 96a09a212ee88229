/**
 * Hook-name cardinality benchmark (`node bench/cardinality.ts [--quick]`): a hookwatch child process (default
 * store.maxHooks) takes executions in 1,000-record OTLP/JSON batches from 4 clients, every execution under a
 * hook name of its own (10,000 and 100,000 distinct names), then single-record requests one at a time. Reported:
 * the child's peak RSS (VmHWM) and the single-record ingest p99, each beside the same load under 10 hook names
 * measured in the same run. `--quick` runs 2,000 and 5,000 names.
 *
 * Then the cost of one GET /metrics scrape with 1,000 hooks known (each with its own series,
 * metrics.maxHookSeries 1,000): server CPU and wall time per scrape and the size of the exposition, beside the
 * same scrape with 10 hooks known (`--scrape-only` runs just this part).
 */
import { get as httpGet, type Agent } from 'node:http';
import { agentFor, post, serverCpuMicros, startServer } from './lib/harness.ts';
import { hookNamesBody, peakRssBytes } from './lib/hook-names.ts';
import { moduleArgs, percentile, result, runStandalone, type BenchOptions, type BenchResult } from './lib/result.ts';
import { startedAsScript } from '../collector/src/tools/common/entry.ts';

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

interface ScrapeFigure {
  cpuMicros: number;
  p50Ms: number;
  bytes: number;
}

function scrape(agent: Agent, url: string): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    httpGet(url, { agent }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => (res.statusCode === 200 ? resolve({ ms: performance.now() - started, bytes }) : reject(new Error(`/metrics answered ${res.statusCode}`))));
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** Server CPU per GET /metrics, one scrape at a time, after `hooks` distinct hooks were ingested. */
async function measureScrape(hooks: number, scrapes: number): Promise<ScrapeFigure> {
  const server = await startServer({ HOOKWATCH_METRICS_MAX_HOOK_SERIES: '1000' });
  try {
    const agent = agentFor(1);
    const res = await post(agent, `${server.otlpHttpUrl}/v1/logs`, hookNamesBody(0, 1000, hooks, Date.now(), 10), { 'content-type': 'application/json' });
    if (res.status !== 200) throw new Error(`batch answered ${res.status}`);
    const url = `${server.httpUrl}/metrics`;
    for (let i = 0; i < 20; i++) await scrape(agent, url); // warm-up (JIT)
    const before = await server.stats();
    const ms: number[] = [];
    let bytes = 0;
    for (let i = 0; i < scrapes; i++) {
      const r = await scrape(agent, url);
      ms.push(r.ms);
      bytes = r.bytes;
    }
    const after = await server.stats();
    agent.destroy();
    return { cpuMicros: serverCpuMicros(before, after) / scrapes, p50Ms: percentile(ms, 50), bytes };
  } finally {
    await server.stop();
  }
}

/** /metrics with 1,000 hooks known against 10 hooks known. */
export async function runScrape(opts: BenchOptions): Promise<BenchResult[]> {
  const scrapes = opts.quick ? 200 : 1000;
  const base = await measureScrape(10, scrapes);
  const many = await measureScrape(1000, scrapes);
  const notes = `${scrapes} scrapes one at a time after 1,000 executions (metrics.maxHookSeries 1,000); exposition ${(many.bytes / 1024).toFixed(0)} KiB (10 hooks: ${(base.bytes / 1024).toFixed(1)} KiB)`;
  return [
    result('cardinality /metrics scrape, 1,000 hooks: server CPU', many.cpuMicros / 1000, 'ms/scrape', '10 hooks', base.cpuMicros / 1000, notes),
    result('cardinality /metrics scrape, 1,000 hooks: p50', many.p50Ms, 'ms', '10 hooks', base.p50Ms, notes),
  ];
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
  out.push(...(await runScrape(opts)));
  return out;
}

const USAGE = `Usage: node bench/cardinality.ts [--quick] [--scrape-only]

Hook-name cardinality: the child's peak RSS and the single-record ingest p99 under many distinct hook names,
beside the same load under 10 names.
  --quick               2,000 and 5,000 names
  --scrape-only         the /metrics scrape only
  --help                this help
`;

if (startedAsScript(import.meta.url)) {
  const { 'scrape-only': scrapeOnly } = moduleArgs(USAGE, { quick: { type: 'boolean' }, 'scrape-only': { type: 'boolean' } });
  runStandalone(scrapeOnly ? runScrape : run, USAGE);
}
