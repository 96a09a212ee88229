/**
 * `npm run bench:dashboard [-- --quick] [--events N] [--hooks N] [--fleet-only [--postgres] [--live] [--step S]]`: the dashboard's API
 * latency over 30 days of data, the overview's first render in headless Chromium, and the fleet chart's first call
 * over 10,000 hooks, each in every bucket, beside the same over 1,000 (runFleet; `--fleet-only` runs just this part,
 * `--hooks` then sets the larger fleet, `--postgres` writes and serves the fleets from a throwaway PostgreSQL
 * cluster of collector/test/support/postgres instead of SQLite files, and `--live` sends an OTLP batch of one
 * execution, stamped now, every 100 ms while the calls are timed; `--step` asks the chart at another step, in
 * seconds).
 *
 * Data: `hooks` hooks and `events` hook executions over the last 30 days, handed to the SQLite store's own
 * ingest() (not through OTLP: ingest has its own benchmark, and 10 million events through HTTP would take longer
 * than the figures are worth), so the events, rollups and dimension rollups are what hookwatch itself writes.
 * Then hookwatch serves that file; each API call is timed over keep-alive HTTP on loopback (p50/p95), and the
 * browser's first render of the overview is timed from navigation start to the hook table's first rows.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { loadConfig, toConfig } from '../collector/src/config/index.ts';
import { startService } from '../collector/src/service.ts';
import { SqliteStore } from '../collector/src/store/sqlite/index.ts';
import { PostgresStore } from '../collector/src/store/postgres/index.ts';
import type { Store } from '../collector/src/store/store.ts';
import { startTestServer } from '../collector/test/support/postgres/server.ts';
import type { HookEvent } from '../collector/src/hooks/model.ts';
import { historyHooks, loadHistory } from '../collector/test/support/history.ts';
import { silentLogger } from '../collector/src/telemetry/logger.ts';
import type { HooksResponse } from '../shared/src/api.ts';
import { percentile, result, markdownTable, type BenchOptions, type BenchResult, moduleArgs } from './lib/result.ts';
import { startedAsScript } from '../collector/src/tools/common/entry.ts';

const DAY = 86_400_000;
const SPAN = 30 * DAY;
/** The goals: p95 under 50 ms per call, first render under 1 s. */
const GOAL_P95_MS = 50;
const GOAL_RENDER_MS = 1000;
/** The calls whose answer ranks every hook of the fleet. */
const EVERY_HOOK = ['overview', 'hooks list', 'fleet series (overview chart, every hook)'];
/** The overview's fleet chart of 30 days as the dashboard asks it: 1,000 hooks listed, the rest summed, 12-hour buckets. */
const FLEET_CHART = '/api/v1/fleet/series?from=now-30d&to=now&step=43200&limit=1000';
/** The same chart at another step (seconds; runFleet's `step`). */
const fleetChart = (step: number): string => FLEET_CHART.replace('step=43200', `step=${step}`);

export interface GenerateOptions {
  path: string;
  hooks: number;
  events: number;
  nowMs: number;
  log?: (msg: string) => void;
}

/**
 * Writes `events` hook executions of `hooks` hooks over [now - 30 d, now) into a new store file through the
 * store's own ingest() (collector/test/support/history.ts: sessions, users in teams, hooks near and over the cap,
 * an old client without sizes), so the figures follow whatever the store does with its tables and rollups.
 */
export async function generate(opts: GenerateOptions): Promise<{ seconds: number; bytes: number }> {
  const t0 = performance.now();
  const log = opts.log ?? (() => undefined);
  const store = new SqliteStore({ path: opts.path, synchronous: 'normal', dimensions: ['team'] });
  try {
    let next = 0;
    await loadHistory(store, { events: opts.events, fromMs: opts.nowMs - SPAN, toMs: opts.nowMs, hooks: opts.hooks }, {
      onProgress: (stored) => {
        if (stored >= next) {
          log(`${stored.toLocaleString('en-US')} events stored (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
          next += Math.max(100_000, Math.floor(opts.events / 10));
        }
      },
    });
  } finally {
    await store.close();
  }
  const db = new DatabaseSync(opts.path);
  db.exec('PRAGMA wal_checkpoint(TRUNCATE); ANALYZE;');
  db.close();
  return { seconds: (performance.now() - t0) / 1000, bytes: statSync(opts.path).size };
}

/**
 * A fleet of `hooks` hooks, each with an execution in every 12-hour bucket of the last 30 days (61 of them with the
 * bucket being written), through the store's own ingest(): the fleet chart's every bucket holds every hook. `path`
 * is a SQLite file, or the postgres:// URL of an empty database.
 */
export async function generateFleet(opts: { path: string; hooks: number; nowMs: number }): Promise<{ seconds: number; events: number }> {
  const t0 = performance.now();
  const store: Store = opts.path.startsWith('postgres://')
    ? await PostgresStore.open({ url: opts.path, dimensions: ['team'] })
    : new SqliteStore({ path: opts.path, synchronous: 'normal', dimensions: ['team'] });
  const step = SPAN / 60;
  let events = 0;
  try {
    const hooks = historyHooks(opts.hooks);
    for (let b = 0; b <= 60; b++) {
      const batch: HookEvent[] = [];
      hooks.forEach((h, i) => {
        // Spread over the bucket, the same hour of it for a hook: each execution in a row of the hour rollup.
        const timeMs = opts.nowMs - SPAN + b * step - ((i * 7919) % (step - 3_600_000)) - 1000;
        if (timeMs >= opts.nowMs) return;
        batch.push({
          kind: 'complete', dedupKey: `fleet-${i}-${b}`, hookId: h.id, hookEvent: h.hookEvent, hookName: h.hookName, timeMs, numHooks: 1, numSuccess: 1,
          numBlocking: 0, numNonBlockingError: 0, numCancelled: 0, durationMs: 10, stdoutChars: h.size, additionalContextChars: null, systemMessageChars: null,
          initialUserMessageChars: null, outputsPersisted: h.size > 10_000 ? 1 : 0, sizesKnown: true, status: 'ok', serviceName: 'claude-code', serviceVersion: '2.1.332',
          sessionId: `s-${i % 50}`, userId: `u-${i % 30}`, userEmail: '', userAccountUuid: '', organizationId: '', terminalType: '', source: 'otlp', extra: { team: `t-${i % 8}` },
        });
      });
      for (let i = 0; i < batch.length; i += 5000) events += (await store.ingest(batch.slice(i, i + 5000))).inserted.length;
    }
  } finally {
    await store.close();
  }
  return { seconds: (performance.now() - t0) / 1000, events };
}

/**
 * hookwatch serving the store at `path`, a file or a postgres:// URL (retention 60 days, its start-up pass over
 * before it is returned).
 */
async function serve(path: string): Promise<Awaited<ReturnType<typeof startService>>> {
  const config = toConfig(loadConfig({
    env: {
      HOOKWATCH_DB: path, HOOKWATCH_HTTP_ADDR: '127.0.0.1:0', HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0', HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0',
      HOOKWATCH_RETENTION_EVENTS: '60d', HOOKWATCH_ALERT_EVALUATION_INTERVAL: '600s', HOOKWATCH_SQLITE_SYNCHRONOUS: 'normal',
    },
  }));
  const svc = await startService(config, { logger: silentLogger });
  // The start-up retention pass deletes the generated minute rollups past their horizon beside the event loop:
  // the calls are timed once it is over (a call during it waits for its batches).
  await svc.retention.run();
  return svc;
}

/**
 * The fleet chart's first call over 10,000 hooks (`hooks`), each in every bucket, against the same over a tenth of
 * them in the same run, each from a store just opened (nothing kept from an earlier call); then its p95.
 */
export async function runFleet(opts: BenchOptions & { hooks?: number; postgres?: boolean; live?: boolean; step?: number; log?: (m: string) => void }): Promise<BenchResult[]> {
  const hooks = opts.hooks ?? (opts.quick ? 2000 : 10_000);
  const log = opts.log ?? (() => undefined);
  const n = opts.quick ? 10 : 30;
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-bench-fleet-'));
  const server = opts.postgres ? await startTestServer() : undefined;
  const nowMs = Date.now();
  try {
    const figures: { hooks: number; events: number; seconds: number; first: number; p50: number; p95: number }[] = [];
    for (const count of [hooks / 10, hooks]) {
      const path = server ? await server.createDatabase(`fleet_${count}`) : join(dir, `fleet-${count}.db`);
      log(`generating a fleet of ${count.toLocaleString('en-US')} hooks, each in every 12-hour bucket of 30 days`);
      const gen = await generateFleet({ path, hooks: count, nowMs });
      const svc = await serve(path);
      try {
        log(`timing the fleet chart over ${count.toLocaleString('en-US')} hooks${opts.live ? ', ingest running' : ''}`);
        const stopTraffic = opts.live ? liveTraffic(svc.otlpHttpUrl) : undefined;
        const { first, samples } = await time(`${svc.httpUrl}${fleetChart(opts.step ?? 43_200)}`, n);
        const sent = await stopTraffic?.();
        log(`first call ${first.toFixed(0)} ms; later calls p50 ${percentile(samples, 50).toFixed(0)} ms, p95 ${percentile(samples, 95).toFixed(0)} ms${sent === undefined ? '' : ` (${sent} OTLP batches acknowledged meanwhile)`}`);
        figures.push({ hooks: count, events: gen.events, seconds: gen.seconds, first, p50: percentile(samples, 50), p95: percentile(samples, 95) });
      } finally {
        await svc.stop();
      }
    }
    const [small, large] = figures as [(typeof figures)[number], (typeof figures)[number]];
    const note = `${large.events.toLocaleString('en-US')} events (${large.seconds.toFixed(0)} s to generate; ${small.hooks.toLocaleString('en-US')} hooks: ${small.events.toLocaleString('en-US')}), 1,000 hooks listed, step ${((opts.step ?? 43_200) / 3600).toString()} h, 30 days; ${server ? 'PostgreSQL' : 'SQLite'}${opts.live ? '; an OTLP batch of one execution, stamped now, every 100 ms meanwhile' : ''}`;
    const label = `${large.hooks.toLocaleString('en-US')} hooks`;
    return [
      result(`dashboard API fleet chart over ${label} (30 d): first call`, large.first, 'ms', `${small.hooks.toLocaleString('en-US')} hooks`, small.first, `${note}; a store just opened, nothing kept from an earlier call`),
      result(`dashboard API fleet chart over ${label} (30 d): p50`, large.p50, 'ms', `${small.hooks.toLocaleString('en-US')} hooks`, small.p50, `${note}; ${n} sequential calls after 3 warm-ups`),
      result(`dashboard API fleet chart over ${label} (30 d): p95`, large.p95, 'ms', `${small.hooks.toLocaleString('en-US')} hooks`, small.p95, `${note}; ${n} sequential calls after 3 warm-ups`),
    ];
  } finally {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Live traffic (`--live`): an OTLP/JSON batch of one hook execution stamped now, every 100 ms, through hookwatch's
 * receiver, until the function returned is called; it resolves to the batches acknowledged.
 */
function liveTraffic(otlpUrl: string): () => Promise<number> {
  let stopped = false;
  let acknowledged = 0;
  const loop = (async () => {
    for (let seq = 0; !stopped; seq++) {
      const attributes = Object.entries({ 'event.name': 'hook_execution_complete', hook_event: 'PostToolUse', hook_name: 'PostToolUse:Live', 'session.id': 'bench-live', 'event.sequence': String(seq), num_hooks: '1', num_success: '1' })
        .map(([key, value]) => ({ key, value: { stringValue: value } }));
      const body = JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: `${Date.now()}000000`, attributes }] }] }] });
      const res = await fetch(`${otlpUrl}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await res.arrayBuffer();
      if (res.ok) acknowledged++;
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    return acknowledged;
  };
}

/**
 * The first call's ms, then `n` timed calls after 3 warm-ups, each with the CPU time (ms) of this thread meanwhile:
 * the event loop, which also acknowledges OTLP and answers /healthz (the store's queries run on its read workers).
 */
async function time(url: string, n: number): Promise<{ first: number; samples: number[]; eventLoop: number[] }> {
  const samples: number[] = [];
  const eventLoop: number[] = [];
  let first = 0;
  for (let i = 0; i < n + 3; i++) {
    const t = performance.now();
    const cpu = process.threadCpuUsage();
    const res = await fetch(url);
    if (!res.ok) throw new Error(`${url} answered ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
    const used = process.threadCpuUsage(cpu);
    if (i >= 3) eventLoop.push((used.user + used.system) / 1000);
    if (i === 0) first = performance.now() - t;
    // The first calls warm SQLite's page cache, the prepared statements and the kept closed segments; they are
    // not counted (the first is reported on its own for the calls that read raw events).
    if (i >= 3) samples.push(performance.now() - t);
  }
  return { first, samples, eventLoop };
}

async function firstRender(base: string): Promise<{ rows: number[]; charts: number[] }> {
  const { launch } = await import('../dashboard/test/harness.ts');
  const browser = await launch();
  const out: number[] = [];
  const charts: number[] = [];
  try {
    for (let i = 0; i < 4; i++) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      await page.goto(`${base}/?range=30d&refresh=off`);
      await page.waitForSelector('#hook-rows tr[data-hook-id]', { timeout: 30_000 });
      // Navigation start to the first rows of the hook table, on the page's own clock (a mark the page sets).
      const ms = await page.evaluate(() => performance.getEntriesByName('hookwatch:first-rows')[0]?.startTime ?? Number.NaN);
      // And to the fleet chart and sparklines drawn (the mark the overview sets once they are).
      await page.waitForFunction(() => performance.getEntriesByName('hookwatch:first-charts').length > 0, undefined, { timeout: 30_000 });
      const withCharts = await page.evaluate(() => performance.getEntriesByName('hookwatch:first-charts')[0]?.startTime ?? Number.NaN);
      // The first load compiles the modules on the server; the others are what a visitor sees.
      if (i > 0) {
        out.push(ms);
        charts.push(withCharts);
      }
      await context.close();
    }
  } finally {
    await browser.close();
  }
  return { rows: out, charts };
}

/** Runs the benchmark: the views, then the fleet chart over 10,000 hooks (runFleet). */
export async function run(opts: BenchOptions & { events?: number; hooks?: number; log?: (m: string) => void }): Promise<BenchResult[]> {
  const views = await runViews(opts);
  return [...views, ...(await runFleet({ quick: opts.quick, ...(opts.log ? { log: opts.log } : {}) }))];
}

/** The views; quick: 200 hooks, 200k events (a CI smoke run, figures reported, not asserted). */
async function runViews(opts: BenchOptions & { events?: number; hooks?: number; log?: (m: string) => void }): Promise<BenchResult[]> {
  const hooks = opts.hooks ?? (opts.quick ? 200 : 1000);
  const events = opts.events ?? (opts.quick ? 200_000 : 10_000_000);
  const log = opts.log ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-bench-dashboard-'));
  const nowMs = Date.now();
  try {
    const path = join(dir, 'hookwatch.db');
    log(`generating ${events.toLocaleString('en-US')} events for ${hooks} hooks over 30 days`);
    const gen = await generate({ path, hooks, events, nowMs, log });
    const svc = await serve(path);
    try {
      const base = svc.httpUrl;
      const list = (await (await fetch(`${base}/api/v1/hooks?from=now-30d`)).json()) as HooksResponse;
      const hookId = list.hooks[0]?.id;
      if (!hookId) throw new Error('no hooks in the generated store');
      const n = opts.quick ? 20 : 60;
      const note = `${events.toLocaleString('en-US')} events, ${hooks} hooks, 30 days; generated in ${gen.seconds.toFixed(0)} s, ${(gen.bytes / 2 ** 20).toFixed(0)} MiB; ${n} sequential calls after 3 warm-ups`;
      const results: BenchResult[] = [];
      const calls: [string, string][] = [
        ['overview', `${base}/api/v1/overview?from=now-30d&to=now`],
        ['hooks list', `${base}/api/v1/hooks?from=now-30d&to=now`],
        ['hook series', `${base}/api/v1/hooks/${hookId}/series?from=now-30d&to=now`],
        ['fleet series (overview chart, every hook)', `${base}/api/v1/fleet/series?from=now-30d&to=now&step=86400`],
        ['hook daily series (forecast)', `${base}/api/v1/hooks/${hookId}/series?from=now-30d&to=now&step=86400`],
        ['hook detail', `${base}/api/v1/hooks/${hookId}?from=now-30d&to=now`],
        ['hook breakdown by user.id', `${base}/api/v1/hooks/${hookId}/breakdown?from=now-30d&to=now&dimension=user.id`],
      ];
      for (const [name, url] of calls) {
        log(`timing ${name}`);
        const { first, samples: s, eventLoop } = await time(url, n);
        results.push(result(`dashboard API ${name} (30 d): p50`, percentile(s, 50), 'ms', 'goal p95', GOAL_P95_MS, note));
        results.push(result(`dashboard API ${name} (30 d): p95`, percentile(s, 95), 'ms', 'goal p95', GOAL_P95_MS, note));
        if (EVERY_HOOK.includes(name)) {
          // Combining and ranking every hook's rows is the event loop's part of these answers: at thousands of
          // hooks it delayed /healthz and OTLP answers by most of the call.
          results.push(result(`dashboard API ${name} (30 d): event-loop CPU p50`, percentile(eventLoop, 50), 'ms', 'the call\'s p50', percentile(s, 50),
            `${note.split(';')[0]}; CPU time of the main thread during the call (process.threadCpuUsage), this client's share included`));
        }
        if (name.startsWith('hook breakdown')) {
          results.push(result(`dashboard API ${name} (30 d): first call`, first, 'ms', 'goal p95', GOAL_P95_MS, `${note.split(';')[0]}; reads the hook's raw events, nothing kept from an earlier call`));
        }
      }
      log('timing first render in headless Chromium');
      const r = await firstRender(base);
      results.push(result('dashboard overview first render (30 d): median', percentile(r.rows, 50), 'ms', 'goal', GOAL_RENDER_MS,
        `headless Chromium, 1280x900, navigation start to the first hook rows, ${r.rows.length} loads after one warm-up; ${note.split(';')[0]}`));
      results.push(result('dashboard overview first render with charts (30 d): median', percentile(r.charts, 50), 'ms', 'goal', GOAL_RENDER_MS,
        `headless Chromium, 1280x900, navigation start to the fleet chart and every sparkline drawn, ${r.charts.length} loads after one warm-up; ${note.split(';')[0]}`));
      return results;
    } finally {
      await svc.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const USAGE = `Usage: node bench/dashboard.ts [--quick] [--events N] [--hooks N] [--fleet-only [--postgres] [--live] [--step S]]

The dashboard's API latency over 30 days of data, the overview's first render in headless Chromium, and the
fleet chart's first call over many hooks; writes bench/results/dashboard.json.
  --quick               smoke-test sizes (seconds, not minutes)
  --events N            events of the 30 days
  --hooks N             hooks of the larger fleet
  --fleet-only          the fleet chart only
  --postgres            the fleets on a throwaway PostgreSQL instead of SQLite (with --fleet-only)
  --live                also send an OTLP batch while the chart is read (with --fleet-only)
  --step S              the chart's step in seconds (with --fleet-only)
  --help                this help
`;

if (startedAsScript(import.meta.url)) {
  const values = moduleArgs(USAGE, { quick: { type: 'boolean' }, events: { type: 'string' }, hooks: { type: 'string' }, 'fleet-only': { type: 'boolean' }, postgres: { type: 'boolean' }, live: { type: 'boolean' }, step: { type: 'string' } });
  const results = await (values['fleet-only'] ? runFleet : run)({
    quick: values.quick === true,
    ...(values.events ? { events: Number(values.events) } : {}),
    ...(values.hooks ? { hooks: Number(values.hooks) } : {}),
    ...(values.postgres ? { postgres: true } : {}),
    ...(values.live ? { live: true } : {}),
    ...(values.step ? { step: Number(values.step) } : {}),
    log: (m) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${m}`),
  });
  const md = markdownTable(results);
  console.log(md);
  const dir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'dashboard.json'), JSON.stringify(results, null, 2));
}
