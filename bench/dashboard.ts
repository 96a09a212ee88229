/**
 * `npm run bench:dashboard [-- --quick] [--events N] [--hooks N]`: the dashboard's API latency over 30 days of
 * data, and the overview's first render in headless Chromium.
 *
 * Data: `hooks` hooks and `events` hook_execution_complete events spread evenly over the last 30 days, written
 * straight into a SQLite file in bulk (INSERT ... SELECT from a generated sequence, then the minute, hour and day
 * rollups aggregated from the events with the store's own SQL) instead of through OTLP: ingest has its own
 * benchmark, and 10 million events through HTTP would take longer than the figures are worth.
 * Then hookwatch serves that file; each API call is timed over keep-alive HTTP on loopback (p50/p95), and the
 * browser's first render of the overview is timed from navigation start to the hook table's first rows.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { loadConfig, toConfig } from '../collector/src/config/index.ts';
import { startService } from '../collector/src/service.ts';
import { COUNTER_COLUMNS, SUM_COLUMNS } from '../collector/src/store/counters.ts';
import { SqliteStore } from '../collector/src/store/sqlite/index.ts';
import { ROLLUP_TABLES, eventAggregates, rollupAggregates } from '../collector/src/store/sql.ts';
import { silentLogger } from '../collector/src/telemetry/logger.ts';
import type { HooksResponse } from '../shared/src/api.ts';
import { percentile, result, markdownTable, type BenchOptions, type BenchResult } from './lib/result.ts';

const DAY = 86_400_000;
const SPAN = 30 * DAY;
/** The goals: p95 under 50 ms per call, first render under 1 s. */
const GOAL_P95_MS = 50;
const GOAL_RENDER_MS = 1000;

export interface GenerateOptions {
  path: string;
  hooks: number;
  events: number;
  nowMs: number;
  log?: (msg: string) => void;
}

/**
 * Writes `events` events for `hooks` hooks over [now - 30 d, now) into a new store file, with rollups.
 * Hook h: every 50th is over the cap (persisted), every 10th near it, every 100th from an old client without sizes.
 */
export function generate(opts: GenerateOptions): { seconds: number; bytes: number } {
  const t0 = performance.now();
  const log = opts.log ?? (() => undefined);
  // The store creates the schema exactly as hookwatch does; the bulk load then goes around it.
  const store = new SqliteStore({ path: opts.path, synchronous: 'normal' });
  void store.close();
  const db = new DatabaseSync(opts.path);
  // Out of WAL first (a WAL database ignores journal_mode=OFF): a bulk load into a throwaway file needs no journal.
  db.exec('PRAGMA journal_mode = DELETE; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -262144; PRAGMA temp_store = MEMORY;');
  db.exec('DROP INDEX IF EXISTS events_hook_time; DROP INDEX IF EXISTS events_time;');
  const from = opts.nowMs - SPAN;
  const N = opts.events;
  const H = opts.hooks;
  const size = `(CASE WHEN h % 50 = 0 THEN 9800 + ((i * 7919) % 2400)
                     WHEN h % 10 = 1 THEN 7600 + ((i * 7919) % 1900)
                     ELSE 200 + (h * 37) % 5000 + ((i * 7919) % 600) END)`;
  const blind = 'h % 100 = 2';
  db.exec('BEGIN');
  db.exec(`
    WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < ${N - 1}),
    gen AS (SELECT i, i % ${H} AS h, ${from} + (i * ${SPAN}) / ${N} AS t FROM seq)
    INSERT INTO events (dedup_key, kind, hook_id, time_ms, num_hooks, num_success, num_blocking, num_non_blocking_error, num_cancelled,
      duration_ms, stdout_chars, additional_context_chars, system_message_chars, initial_user_message_chars, outputs_persisted, sizes_known,
      status, service_name, service_version, session_id, user_id, user_email, user_account_uuid, organization_id, terminal_type, source, extra)
    SELECT printf('b%012d', i), 'complete', printf('%016x', h), t, 1, 1, 0, 0, 0,
      20 + i % 200,
      CASE WHEN ${blind} THEN NULL ELSE ${size} + 77 END,
      CASE WHEN ${blind} THEN NULL ELSE ${size} END,
      CASE WHEN ${blind} THEN NULL ELSE 0 END,
      CASE WHEN ${blind} THEN NULL ELSE 0 END,
      CASE WHEN ${blind} THEN NULL WHEN ${size} > 10000 THEN 1 ELSE 0 END,
      CASE WHEN ${blind} THEN 0 ELSE 1 END,
      CASE WHEN ${blind} THEN 'unknown' WHEN ${size} > 10000 THEN 'over' WHEN ${size} + 77 > 8000 THEN 'near' ELSE 'ok' END,
      'claude-code', CASE WHEN ${blind} THEN '2.1.250' WHEN i % 3 = 0 THEN '2.1.330' ELSE '2.1.332' END,
      printf('s%08d', i / 40), printf('user-%03d', (i / 7) % 300), '', '', 'org-1', 'xterm', 'otlp', printf('{"team":"team-%d"}', h % 12)
    FROM gen`);
  db.exec('COMMIT');
  log(`events written (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  db.exec('CREATE INDEX events_hook_time ON events (hook_id, time_ms); CREATE INDEX events_time ON events (time_ms);');
  log(`event indexes built (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  db.exec('BEGIN');
  db.exec(`INSERT INTO hooks (hook_id, hook_event, hook_name, first_seen, last_seen)
    SELECT hook_id, 'PostToolUse', 'PostToolUse:tool-' || CAST(('0x' || hook_id) AS INTEGER), MIN(time_ms), MAX(time_ms) FROM events GROUP BY hook_id`);
  const cols = COUNTER_COLUMNS.join(', ');
  // Counters are NOT NULL in the rollups (a sum over only blind events is 0 there; the size sums stay NULL).
  const outer = COUNTER_COLUMNS.map((c) => (SUM_COLUMNS as readonly string[]).includes(c) && !c.startsWith('sum_') ? `COALESCE(${c}, 0)` : c).join(', ');
  db.exec(`INSERT INTO ${ROLLUP_TABLES.minute} (hook_id, bucket, service_name, service_version, ${cols})
    SELECT hook_id, b, service_name, service_version, ${outer} FROM (
      SELECT hook_id, (time_ms / 60000) * 60000 AS b, service_name, service_version, ${eventAggregates()} FROM events GROUP BY hook_id, b, service_name, service_version)`);
  log(`minute rollups (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  for (const [table, src, ms] of [[ROLLUP_TABLES.hour, ROLLUP_TABLES.minute, 3_600_000], [ROLLUP_TABLES.day, ROLLUP_TABLES.hour, DAY]] as const) {
    db.exec(`INSERT INTO ${table} (hook_id, bucket, service_name, service_version, ${cols})
      SELECT hook_id, (bucket / ${ms}) * ${ms} AS b, service_name, service_version, ${rollupAggregates()} FROM ${src} GROUP BY hook_id, b, service_name, service_version`);
  }
  db.exec('COMMIT');
  db.exec('ANALYZE');
  db.close();
  log(`hour and day rollups, ANALYZE (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  return { seconds: (performance.now() - t0) / 1000, bytes: statSync(opts.path).size };
}

/** The first call's ms, then `n` timed calls after 3 warm-ups. */
async function time(url: string, n: number): Promise<{ first: number; samples: number[] }> {
  const samples: number[] = [];
  let first = 0;
  for (let i = 0; i < n + 3; i++) {
    const t = performance.now();
    const res = await fetch(url);
    if (!res.ok) throw new Error(`${url} answered ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
    if (i === 0) first = performance.now() - t;
    // The first calls warm SQLite's page cache, the prepared statements and the kept closed segments; they are
    // not counted (the first is reported on its own for the calls that read raw events).
    if (i >= 3) samples.push(performance.now() - t);
  }
  return { first, samples };
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

/** Runs the benchmark; quick: 200 hooks, 200k events (a CI smoke run, figures reported, not asserted). */
export async function run(opts: BenchOptions & { events?: number; hooks?: number; log?: (m: string) => void }): Promise<BenchResult[]> {
  const hooks = opts.hooks ?? (opts.quick ? 200 : 1000);
  const events = opts.events ?? (opts.quick ? 200_000 : 10_000_000);
  const log = opts.log ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-bench-dashboard-'));
  const nowMs = Date.now();
  try {
    const path = join(dir, 'hookwatch.db');
    log(`generating ${events.toLocaleString('en-US')} events for ${hooks} hooks over 30 days`);
    const gen = generate({ path, hooks, events, nowMs, log });
    const config = toConfig(loadConfig({
      env: {
        HOOKWATCH_DB: path, HOOKWATCH_HTTP_ADDR: '127.0.0.1:0', HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0', HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0',
        HOOKWATCH_RETENTION_EVENTS: '60d', HOOKWATCH_ALERT_EVALUATION_INTERVAL: '600s', HOOKWATCH_SQLITE_SYNCHRONOUS: 'normal',
      },
    }));
    const svc = await startService(config, { logger: silentLogger });
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
        const { first, samples: s } = await time(url, n);
        results.push(result(`dashboard API ${name} (30 d): p50`, percentile(s, 50), 'ms', 'goal p95', GOAL_P95_MS, note));
        results.push(result(`dashboard API ${name} (30 d): p95`, percentile(s, 95), 'ms', 'goal p95', GOAL_P95_MS, note));
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

if (import.meta.main) {
  const { values } = parseArgs({ options: { quick: { type: 'boolean' }, events: { type: 'string' }, hooks: { type: 'string' } } });
  const results = await run({
    quick: values.quick === true,
    ...(values.events ? { events: Number(values.events) } : {}),
    ...(values.hooks ? { hooks: Number(values.hooks) } : {}),
    log: (m) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${m}`),
  });
  const md = markdownTable(results);
  console.log(md);
  const dir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'dashboard.json'), JSON.stringify(results, null, 2));
}
