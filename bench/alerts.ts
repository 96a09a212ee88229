/**
 * `npm run bench:alerts [-- --quick] [--trials N]`: latency from the OTLP 200 of a batch holding a persisted
 * output to the webhook request arriving at a local receiver, p50/p99 over 200 trials (20 with --quick).
 *
 * hookwatch runs in a child process (`hookwatch serve`, default rules, SQLite synchronous=full, alert state
 * fsynced before any notification leaves); the receiver is a plain node:http server in this process, so both
 * timestamps come from one clock. Each trial uses a new hook name, so each is a new alert: pending -> firing
 * -> notified, not a repeat. Trials run one after another.
 *
 * Baseline, on paper: Prometheus + Alertmanager defaults (15 s scrape interval, 1 m evaluation interval,
 * 30 s group_wait) need 45 s or more from the sample to the webhook.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { otlpHookBody, WebhookSink } from '../collector/test/support/alerting.ts';
import { agentFor, post, startServer } from './lib/harness.ts';
import { percentile, result, runTrialsStandalone, type BenchResult, type TrialOptions } from './lib/result.ts';
import { startedAsScript } from '../collector/src/tools/common/entry.ts';

/** The goal for p99. */
const GOAL_P99_MS = 250;
/** Prometheus + Alertmanager defaults: 15 s scrape + 1 m evaluation... at best 45 s (see header). */
const PROMETHEUS_DEFAULTS_MS = 45_000;

export async function run(opts: TrialOptions): Promise<BenchResult[]> {
  const trials = opts.trials ?? (opts.quick ? 20 : 200);
  const log = opts.log ?? (() => {});
  const sink = new WebhookSink();
  await sink.start();
  const cfgDir = mkdtempSync(join(tmpdir(), 'hookwatch-bench-alerts-'));
  const cfg = join(cfgDir, 'hookwatch.yaml');
  writeFileSync(cfg, `alerting:\n  receivers:\n    - { name: bench, url: "${sink.url}/hook" }\n`);
  const server = await startServer({ HOOKWATCH_CONFIG: cfg });
  const agent = agentFor(1);
  const latencies: number[] = [];
  try {
    // Warm-up: the first alert pays for JIT and connection setup.
    for (let i = 0; i < 3 + trials; i++) {
      const body = Buffer.from(otlpHookBody([{ hookName: `PostToolUse:bench${i}`, timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 10_500, sessionId: `bench-${i}` }]));
      const before = sink.requests.length;
      const r = await post(agent, `${server.otlpHttpUrl}/v1/logs`, body, { 'content-type': 'application/json' });
      const okAt = performance.now();
      if (r.status !== 200) throw new Error(`OTLP answered ${r.status}`);
      await sink.waitFor(before + 1, 10_000);
      const arrived = sink.requests[before]?.perfMs ?? Number.NaN;
      if (i >= 3) latencies.push(arrived - okAt);
      if (i % 50 === 0) log(`trial ${i}: ${(arrived - okAt).toFixed(1)} ms`);
    }
  } finally {
    agent.destroy();
    await server.stop();
    await sink.close();
    rmSync(cfgDir, { recursive: true, force: true });
  }
  const notes = `${trials} sequential trials (3 warm-up), new hook per trial, hookwatch in a child process, receiver on loopback; negative = webhook before the client read the 200`;
  return [
    result('alert latency (OTLP 200 -> webhook): p50', percentile(latencies, 50), 'ms', 'Prometheus + Alertmanager defaults (paper)', PROMETHEUS_DEFAULTS_MS, notes),
    result('alert latency (OTLP 200 -> webhook): p99', percentile(latencies, 99), 'ms', 'goal p99', GOAL_P99_MS, notes),
    result('alert latency (OTLP 200 -> webhook): max', Math.max(...latencies), 'ms', 'goal p99', GOAL_P99_MS, notes),
  ];
}

const USAGE = `Usage: node bench/alerts.ts [--quick] [--trials N]

Latency from the OTLP 200 of a batch holding a persisted output to the webhook request; writes
bench/results/alerts.json.
  --quick               smoke-test sizes (seconds, not minutes)
  --trials N            trials (default 200; 20 with --quick)
  --help                this help
`;

if (startedAsScript(import.meta.url)) await runTrialsStandalone(run, USAGE, 'alerts');
