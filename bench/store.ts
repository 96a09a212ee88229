/**
 * Store benchmark (`npm run bench:store [-- --quick]`), SQLite and PostgreSQL in the same run:
 * 1. Ingest throughput end to end: Claude-Code-shaped 512-record protobuf batches POSTed by concurrent clients to
 *    real `hookwatch serve` processes: one on SQLite (synchronous=full), then one and three replicas on one
 *    PostgreSQL (fsync on). Reported as hook events stored per second, SQLite as the baseline.
 * 2. An organisation's month on each backend (HOOKWATCH_BENCH_EVENTS events, 1 million by default, 20,000 with
 *    --quick; a comma list such as `1000000,10000000` grows the same history size by size and reports the ratio
 *    of the figures): sessions of about 200 hook executions, 500 users in 8 teams, 60 hooks, a few client
 *    versions, generated through each store's own ingest() (collector/test/support/history.ts), so the figures
 *    follow whatever the stores do with their tables. Then what a filtered dashboard asks, each call a question
 *    not asked before: the overview by team (cycling teams), the hook list by team, a per-user breakdown of one
 *    hook (first call and p95); and bytes per event on disk. HOOKWATCH_BENCH_GROW=length grows the history
 *    back in time instead, at the same density (1 M events a month: 10 M are 300 days, raw events kept for
 *    retention.events as a running server keeps them; each longer size a history of its own, received a month
 *    at a time oldest first with retention applied after each), so the ratios measure the cost of a longer
 *    history alone; the default, density, puts every size into the same 30 days.
 * 3. OTLP ingest p50/p99 of a real `hookwatch serve` on that history while 8 clients ask the HTTP API filtered
 *    questions that change every call, against the same server's ingest alone.
 */
import { mkdtempSync, rmSync, statSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { HOOK_EVENT_SHARE, batchTemplate, stamp } from './lib/batch.ts';
import { agentFor, post } from './lib/harness.ts';
import { ingestUnderQueries } from './lib/query-load.ts';
import { markdownTable, moduleArgs, percentile, result, type BenchOptions, type BenchResult } from './lib/result.ts';
import { PostgresStore } from '../collector/src/store/postgres/index.ts';
import { startTestServer, type TestServer } from '../collector/test/support/postgres/server.ts';
import { startReplica, type Replica } from '../collector/test/support/serve-process.ts';
import { historyHooks, loadHistory } from '../collector/test/support/history.ts';
import { SqliteStore } from '../collector/src/store/sqlite/index.ts';
import type { Store } from '../collector/src/store/store.ts';
import { STORE_SETTINGS } from '../collector/src/store/settings.ts';
import { startedAsScript } from '../collector/src/tools/common/entry.ts';

const RECORDS = 512;
const DAY = 86_400_000;
const HOUR = 3_600_000;
const MINUTE = 60_000;

/** The product's default retention: the stores read and prune by it, as `hookwatch serve` does. */
const RETENTION = (() => {
  const ms = (key: string): number => Number(STORE_SETTINGS.find((x) => x.key === key)?.default);
  return { eventsMs: ms('retention.events'), rollupsMs: ms('retention.rollups'), minuteRollupsMs: ms('retention.minuteRollups') };
})();
const STORE_RETENTION = { eventsMs: RETENTION.eventsMs, minuteRollupsMs: RETENTION.minuteRollupsMs };

interface IngestFigure {
  eventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  batches: number;
  errors: number;
}

/** Drives `clients` concurrent posters for `seconds` against the replicas (round-robin), counting stored hook events. */
async function drive(replicas: readonly Replica[], clients: number, seconds: number): Promise<IngestFigure> {
  const template = batchTemplate(RECORDS, 'protobuf');
  const headers = { 'content-type': template.contentType };
  const agent = agentFor(clients);
  const latencies: number[] = [];
  let ok = 0;
  let errors = 0;
  let next = 0;
  // Warm-up: one batch per replica (connections, JIT, first migrations done).
  for (const r of replicas) await post(agent, `${r.otlpHttpUrl}/v1/logs`, stamp(template), headers);
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (performance.now() < deadline) {
      const r = replicas[next++ % replicas.length] as Replica;
      try {
        const res = await post(agent, `${r.otlpHttpUrl}/v1/logs`, stamp(template), headers);
        if (res.status === 200) {
          ok++;
          latencies.push(res.ms);
        } else errors++;
      } catch {
        errors++;
      }
    }
  }));
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  return { eventsPerSecond: (ok * RECORDS * HOOK_EVENT_SHARE) / elapsed, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), batches: ok, errors };
}

async function withReplicas<T>(n: number, db: string, dir: string, fn: (r: Replica[]) => Promise<T>): Promise<T> {
  const replicas = await Promise.all(Array.from({ length: n }, () => startReplica({ db, cwd: mkdtempSync(join(dir, 'replica-')), env: { HOOKWATCH_SQLITE_SYNCHRONOUS: 'full' } })));
  try {
    return await fn(replicas);
  } finally {
    await Promise.all(replicas.map((r) => r.stop(10_000)));
  }
}

/** Teams in the generated history (the `team` dimension: team-0 ... team-7). */
const TEAMS = 8;

/** Sizes to measure, from HOOKWATCH_BENCH_EVENTS (a comma list: `1000000,10000000`), smallest first. */
function benchSizes(quick: boolean): number[] {
  const raw = process.env['HOOKWATCH_BENCH_EVENTS'] ?? (quick ? '20000' : '1000000');
  const sizes = raw.split(',').map((s) => Number(s.trim().replace(/_/g, ''))).filter((n) => Number.isInteger(n) && n > 0);
  if (sizes.length === 0) throw new Error(`HOOKWATCH_BENCH_EVENTS must be a comma list of event counts, got ${JSON.stringify(raw)}`);
  return [...new Set(sizes)].sort((a, b) => a - b);
}

/**
 * How sizes grow (HOOKWATCH_BENCH_GROW): `density` puts every size into the same 30 days (10 M events are a
 * month ten times as busy); `length` keeps the first size's density and adds older days (10 M after 1 M are
 * 300 days), so the same 30-day questions measure what a longer history alone costs.
 */
type Growth = 'density' | 'length';

function benchGrowth(): Growth {
  const raw = process.env['HOOKWATCH_BENCH_GROW'] ?? 'density';
  if (raw !== 'density' && raw !== 'length') throw new Error(`HOOKWATCH_BENCH_GROW must be density or length, got ${JSON.stringify(raw)}`);
  return raw;
}

interface Timing {
  /** The first call: nothing kept from an earlier one. */
  first: number;
  p50: number;
  p95: number;
  calls: number;
}

/** Times `calls` calls of `fn(i)`, each asking something not asked before (so no kept answer helps). */
async function time(calls: number, fn: (i: number) => Promise<unknown>): Promise<Timing> {
  const samples: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await fn(i);
    samples.push(performance.now() - t);
  }
  return { first: samples[0] ?? Number.NaN, p50: percentile(samples.slice(1), 50), p95: percentile(samples.slice(1), 95), calls };
}

interface QueryFigures {
  overviewByTeam: Timing;
  hookListByTeam: Timing;
  breakdownByUser: Timing;
}

/**
 * What the dashboard asks the store with a team filter, each call a question not asked before: the overview
 * (what GET /api/v1/overview asks), the hook list (GET /api/v1/hooks) and a per-user breakdown of one hook.
 * Teams (hooks) cycle, and each round of them moves the range's start forward a day and its end back an hour
 * and a minute, so no segment SQLite keeps from an earlier call (an edge, its hours, the run of days) answers a
 * later one; each kind of question gets a store opened afresh, so none is answered from another's segments.
 */
async function queries(open: () => Promise<Store>, endMs: number, hookIds: readonly string[], calls: number): Promise<QueryFigures> {
  const range = (i: number, n = TEAMS): { fromMs: number; toMs: number } => {
    const round = Math.floor(i / n);
    return { fromMs: endMs - (30 - round) * DAY, toMs: endMs - round * (HOUR + MINUTE) };
  };
  const team = (i: number): Record<string, string> => ({ team: `team-${i % TEAMS}` });
  const timed = async (fn: (store: Store, i: number) => Promise<unknown>): Promise<Timing> => {
    const store = await open();
    try {
      // Connections (and SQLite's read workers) up before the first timed call, as in a running server.
      await store.lastEventMs();
      return await time(calls, (i) => fn(store, i));
    } finally {
      await store.close();
    }
  };
  return {
    overviewByTeam: await timed((store, i) => {
      const q = { ...range(i), filters: team(i) };
      return Promise.all([store.hookCounters(q), store.lastEventMs(q.filters), store.clientVersions(q)]);
    }),
    hookListByTeam: await timed((store, i) => store.hookCounters({ ...range(i), filters: team(i) })),
    breakdownByUser: await timed((store, i) => store.breakdown(hookIds[i % hookIds.length] ?? '', 'user.id', range(i, hookIds.length))),
  };
}

/**
 * Bytes of the SQLite database in use after a checkpoint (the WAL folded into the file): the file less its free
 * pages, which retention leaves behind and the next rows written reuse.
 */
function sqliteBytes(path: string): number {
  const db = new DatabaseSync(path);
  try {
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    const free = Number((db.prepare('PRAGMA freelist_count').get() as { freelist_count: number }).freelist_count);
    const page = Number((db.prepare('PRAGMA page_size').get() as { page_size: number }).page_size);
    return statSync(path).size - free * page;
  } finally {
    db.close();
  }
}

/**
 * Retention as a running server applies it (on start and every hour) with the product's defaults. A history
 * grown in density lies within retention.events, so what goes are the minute rollups older than
 * retention.minuteRollups; one grown in length also loses its raw events (and their attribute sets and hourly
 * rollup per set) older than retention.events. The space the minute rollups held is reused by the rows written
 * next; PostgreSQL keeps it in the table until then, so that table is rewritten (VACUUM FULL) before it is
 * measured (rewriting the others too changed no figure measurably: docs/benchmarks.md).
 */
async function pruneAsServed(sqlitePath: string, pgUrl: string, nowMs = Date.now()): Promise<void> {
  const sqlite = new SqliteStore({ path: sqlitePath, dimensions: ['team'], retention: STORE_RETENTION });
  await sqlite.prune(nowMs - RETENTION.eventsMs, nowMs - RETENTION.rollupsMs);
  await sqlite.close();
  const pgStore = await PostgresStore.open({ url: pgUrl, dimensions: ['team'], retention: STORE_RETENTION });
  await pgStore.prune(nowMs - RETENTION.eventsMs, nowMs - RETENTION.rollupsMs);
  await pgStore.close();
  const c = new pg.Client({ connectionString: pgUrl });
  await c.connect();
  try {
    await c.query('VACUUM FULL rollup_1m');
  } finally {
    await c.end();
  }
}

/** pg_total_relation_size (heap, indexes, TOAST) of every table of the database's public schema. */
async function postgresBytes(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('VACUUM ANALYZE');
    const r = await c.query<{ b: string }>(`SELECT COALESCE(SUM(pg_total_relation_size(format('%I.%I', schemaname, tablename)::regclass)), 0)::text AS b FROM pg_tables WHERE schemaname = 'public'`);
    return Number(r.rows[0]?.b ?? 0);
  } finally {
    await c.end();
  }
}

interface SizeFigures {
  events: number;
  /** Days of history the events span. */
  days: number;
  sqlite: QueryFigures;
  postgres: QueryFigures;
  sqliteBytes: number;
  postgresBytes: number;
  sqliteGenSeconds: number;
  postgresGenSeconds: number;
}
/** Runs the store benchmark and returns its figures. */
export async function run(opts: BenchOptions): Promise<BenchResult[]> {
  const quick = opts.quick;
  const seconds = quick ? 3 : 15;
  const clients = 6;
  const sizes = benchSizes(quick);
  const growth = benchGrowth();
  // 40 timed calls after the first: their p95 is the third slowest (of 12 it was the slowest, and moved by
  // several times between runs).
  const calls = quick ? 9 : 41;
  const loadSeconds = quick ? 3 : 15;
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-bench-store-'));
  let server: TestServer | undefined;
  const out: BenchResult[] = [];
  const log = (s: string): void => void process.stderr.write(`bench:store: ${s}\n`);
  try {
    // Durable settings on both sides: SQLite synchronous=full, PostgreSQL fsync and synchronous_commit on.
    server = await startTestServer({ fast: false, settings: { shared_buffers: '512MB', work_mem: '64MB', max_wal_size: '4GB' } });

    log(`ingest: ${clients} clients x ${seconds} s per configuration`);
    const sqlite = await withReplicas(1, join(dir, 'ingest.db'), dir, (r) => drive(r, clients, seconds));
    const pg1 = await withReplicas(1, await server.createDatabase('ingest_one'), dir, (r) => drive(r, clients, seconds));
    const pg3 = await withReplicas(3, await server.createDatabase('ingest_three'), dir, (r) => drive(r, clients, seconds));
    const note = (f: IngestFigure): string => `${clients} clients, ${seconds} s, 512-record protobuf batches (${RECORDS * HOOK_EVENT_SHARE} hook events each); p50 ${f.p50Ms.toFixed(0)} ms, p99 ${f.p99Ms.toFixed(0)} ms; ${f.batches} batches, ${f.errors} errors; all processes share this machine's cores`;
    out.push(result('ingest PostgreSQL, 1 replica', pg1.eventsPerSecond, 'hook events/s', 'SQLite, 1 process', sqlite.eventsPerSecond, note(pg1)));
    out.push(result('ingest PostgreSQL, 3 replicas', pg3.eventsPerSecond, 'hook events/s', 'SQLite, 1 process', sqlite.eventsPerSecond, note(pg3)));
    out.push(result('ingest PostgreSQL, 3 replicas vs 1', pg3.eventsPerSecond, 'hook events/s', 'PostgreSQL, 1 replica', pg1.eventsPerSecond, 'scaling on one machine: replicas, PostgreSQL and the clients compete for the same cores'));
    out.push(result('ingest SQLite, 1 process', sqlite.eventsPerSecond, 'hook events/s', 'SQLite, 1 process', sqlite.eventsPerSecond, note(sqlite)));

    // The history: 30 days ending a minute ago (inside the default retention), grown size by size through the
    // stores' own ingest(), so whatever each store does with its tables the figures include it. Grown in length,
    // each size adds the days before the ones already there, at the first size's density.
    const endMs = Math.floor((Date.now() - 60_000) / 60_000) * 60_000;
    const firstSize = sizes[0] as number;
    const daysFor = (size: number): number => (growth === 'length' ? Math.round((30 * size) / firstSize) : 30);
    const startFor = (size: number): number => endMs - daysFor(size) * DAY + 3_600_000;
    if (growth === 'length' && sizes.some((size, i) => i > 0 && daysFor(size) <= daysFor(sizes[i - 1] as number))) {
      throw new Error(`HOOKWATCH_BENCH_GROW=length: each size must add whole days (30 days per ${firstSize.toLocaleString('en-US')} events); got ${sizes.join(', ')}`);
    }
    const longest = daysFor(sizes.at(-1) as number);
    if (longest * DAY > RETENTION.rollupsMs) throw new Error(`HOOKWATCH_BENCH_GROW=length: ${longest} days is past retention.rollups (${Math.round(RETENTION.rollupsMs / DAY)} days); use sizes at most ${Math.floor(RETENTION.rollupsMs / (30 * DAY))}x the smallest`);
    const hookIds = historyHooks().map((h) => h.id);
    let sqlitePath = join(dir, 'history.db');
    let pgUrl = await server.createDatabase('history');
    const figures: SizeFigures[] = [];
    let have = 0;
    let sqliteGen = 0;
    let postgresGen = 0;
    /**
     * One stretch of the history into both stores through ingest(). `retention` is what the loading stores judge
     * events by: a stretch older than retention.events is loaded as it was received then, by stores that do not
     * refuse it as expired (what retention deleted since is refused all the same: pruneAsServed notes it).
     */
    const generate = async (shape: { events: number; fromMs: number; toMs: number; seed: number }, total: number, retention: typeof STORE_RETENTION | undefined): Promise<void> => {
      log(`generating ${shape.events.toLocaleString('en-US')} events (to ${total.toLocaleString('en-US')}) over ${Math.round((shape.toMs - shape.fromMs) / DAY)} days through ingest(): SQLite...`);
      const sqliteStore = new SqliteStore({ path: sqlitePath, synchronous: 'normal', dimensions: ['team'], ...(retention ? { retention } : {}) });
      let g = performance.now();
      let stored = await loadHistory(sqliteStore, shape);
      sqliteGen += (performance.now() - g) / 1000;
      if (stored !== shape.events) throw new Error(`SQLite stored ${stored} of ${shape.events} generated events`);
      log(`SQLite: ${(stored / ((performance.now() - g) / 1000)).toFixed(0)} events/s; PostgreSQL...`);
      const pgStore = await PostgresStore.open({ url: pgUrl, dimensions: ['team'], ...(retention ? { retention } : {}) });
      g = performance.now();
      stored = await loadHistory(pgStore, shape, { inFlight: 3 });
      postgresGen += (performance.now() - g) / 1000;
      if (stored !== shape.events) throw new Error(`PostgreSQL stored ${stored} of ${shape.events} generated events`);
      log(`PostgreSQL: ${(stored / ((performance.now() - g) / 1000)).toFixed(0)} events/s`);
      await sqliteStore.close();
      await pgStore.close();
    };
    for (const [k, size] of sizes.entries()) {
      if (growth === 'density' || k === 0) {
        await generate({ events: size - have, fromMs: startFor(size), toMs: endMs, seed: k + 1 }, size, STORE_RETENTION);
      } else {
        // Grown in length, each size is a history of its own, received in order as a running server receives
        // it: 30 days at a time, oldest first, retention applied at the end of each as it would have been then.
        // Older days added behind a history already pruned would be refused (what retention deleted is not
        // stored again), and deleted all at once they leave the tables holding rows that retention spread
        // over months would have let later rows reuse.
        sqlitePath = join(dir, `history-${k}.db`);
        pgUrl = await server.createDatabase(`history_${k}`);
        for (let fromMs = startFor(size), j = 0; fromMs < endMs; fromMs += 30 * DAY, j++) {
          const toMs = Math.min(endMs, fromMs + 30 * DAY);
          await generate({ events: Math.round((firstSize * (toMs - fromMs)) / (daysFor(firstSize) * DAY - HOUR)), fromMs, toMs, seed: k * 1000 + j + 1 }, size, undefined);
          if (toMs < endMs) await pruneAsServed(sqlitePath, pgUrl, toMs);
        }
      }
      log('querying...');
      have = size;
      await pruneAsServed(sqlitePath, pgUrl);
      // Fresh stores for the queries: nothing kept from generation; statistics up to date.
      await postgresBytes(pgUrl);
      figures.push({
        events: size,
        days: daysFor(size),
        sqlite: await queries(async () => new SqliteStore({ path: sqlitePath, dimensions: ['team'], retention: STORE_RETENTION }), endMs, hookIds, calls),
        postgres: await queries(() => PostgresStore.open({ url: pgUrl, dimensions: ['team'], retention: STORE_RETENTION }), endMs, hookIds, calls),
        sqliteBytes: 0,
        postgresBytes: 0,
        sqliteGenSeconds: sqliteGen,
        postgresGenSeconds: postgresGen,
      });
      const f = figures.at(-1) as SizeFigures;
      f.sqliteBytes = sqliteBytes(sqlitePath);
      f.postgresBytes = await postgresBytes(pgUrl);
    }

    const goal = (name: string, t: (q: QueryFigures) => Timing): void => {
      for (const f of figures) {
        const size = `${f.events.toLocaleString('en-US')} events, ${f.days} days${f.days * DAY > RETENTION.eventsMs ? ` (raw events kept ${Math.round(RETENTION.eventsMs / DAY)})` : ''}, 60 hooks, 500 users, ${TEAMS} teams; 30-day questions`;
        for (const [backend, q] of [['SQLite', f.sqlite], ['PostgreSQL', f.postgres]] as const) {
          const x = t(q);
          const calls = `${x.calls} calls, each a question not asked before; p50 ${x.p50.toFixed(1)} ms; ${size}`;
          out.push(result(`${name}, ${backend}, ${f.events.toLocaleString('en-US')} events: p95`, x.p95, 'ms', 'goal p95', 50, calls));
          out.push(result(`${name}, ${backend}, ${f.events.toLocaleString('en-US')} events: first call`, x.first, 'ms', 'goal first call', 250, `store opened afresh (connections up), nothing kept; ${size}`));
        }
      }
      const [small, large] = [figures[0], figures.at(-1)];
      if (small && large && large !== small) {
        for (const [backend, a, b] of [['SQLite', small.sqlite, large.sqlite], ['PostgreSQL', small.postgres, large.postgres]] as const) {
          const grown = growth === 'length' ? ` (${large.days} vs ${small.days} days, same density)` : ' (same 30 days)';
          out.push(result(`${name}, ${backend}: p95 at ${large.events.toLocaleString('en-US')} vs ${small.events.toLocaleString('en-US')} events${grown}`, t(b).p95, 'ms', `p95 at ${small.events.toLocaleString('en-US')}`, t(a).p95, `goal: ratio below 1.5x; p50 ${t(b).p50.toFixed(1)} vs ${t(a).p50.toFixed(1)} ms`));
        }
      }
    };
    goal('filtered overview by team (cycling teams)', (q) => q.overviewByTeam);
    goal('filtered hook list by team (GET /api/v1/hooks)', (q) => q.hookListByTeam);
    goal('per-user breakdown of one hook', (q) => q.breakdownByUser);
    // Grown in length, raw events past retention.events are gone: bytes per event generated would flatter.
    for (const f of growth === 'length' ? [] : figures) {
      out.push(result(`bytes per event on disk: PostgreSQL, ${f.events.toLocaleString('en-US')} events`, f.postgresBytes / f.events, 'B', 'goal', 200, `pg_total_relation_size of every table (heap, indexes, TOAST) after retention with the default settings and VACUUM; history generated through ingest() in ${f.postgresGenSeconds.toFixed(0)} s (${(f.events / f.postgresGenSeconds).toFixed(0)} events/s, fsync on)`));
      out.push(result(`bytes per event on disk: SQLite, ${f.events.toLocaleString('en-US')} events`, f.sqliteBytes / f.events, 'B', 'goal', 200, `database file in use (less free pages) after retention with the default settings and a WAL checkpoint; history generated through ingest() in ${f.sqliteGenSeconds.toFixed(0)} s (${(f.events / f.sqliteGenSeconds).toFixed(0)} events/s, synchronous=normal)`));
    }

    // Ingest while the dashboard asks: a real `hookwatch serve` on the largest history, first ingest alone (the
    // same-run baseline), then with 8 query clients asking filtered questions that change every call.
    const largest = (figures.at(-1) as SizeFigures).events.toLocaleString('en-US');
    // Retention longer than the raw events kept (the history itself, or what pruneAsServed left of it in length
    // mode): the server's prune finds nothing to delete while the figures are taken.
    const serveEnv = { HOOKWATCH_DIMENSIONS: 'team', HOOKWATCH_SQLITE_SYNCHRONOUS: 'full', HOOKWATCH_RETENTION_EVENTS: '40d' };
    for (const [backend, db] of [['SQLite', sqlitePath], ['PostgreSQL', pgUrl]] as const) {
      log(`${backend}: OTLP ingest alone, then beside 8 query clients (${loadSeconds} s each)`);
      const replica = await startReplica({ db, cwd: mkdtempSync(join(dir, 'serve-')), env: serveEnv });
      try {
        const base = { otlpHttpUrl: replica.otlpHttpUrl, httpUrl: replica.httpUrl, seconds: loadSeconds, ingestClients: 2, records: 64, teams: TEAMS, hookIds };
        const alone = await ingestUnderQueries({ ...base, queryClients: 0 });
        const loaded = await ingestUnderQueries({ ...base, queryClients: 8 });
        const notes = `real hookwatch serve on the ${largest}-event history; 2 ingest clients posting 64-record protobuf batches back to back; 8 query clients cycling overview / hook list / per-user breakdown / fleet chart, team, range and hook changing every call: ${loaded.queries} answered (p50 ${loaded.queryP50Ms.toFixed(0)} ms, p95 ${loaded.queryP95Ms.toFixed(0)} ms), ${loaded.queryErrors} errors; ${loaded.ingestBatches} batches (${alone.ingestBatches} alone), ${loaded.ingestErrors + alone.ingestErrors} ingest errors`;
        out.push(result(`OTLP ingest p99 beside 8 query clients: ${backend}`, loaded.ingestP99Ms, 'ms', 'ingest alone p99 (same server)', alone.ingestP99Ms, `goal < 250 ms; ${notes}`));
        out.push(result(`OTLP ingest p50 beside 8 query clients: ${backend}`, loaded.ingestP50Ms, 'ms', 'ingest alone p50 (same server)', alone.ingestP50Ms, notes));
      } finally {
        await replica.stop(10_000);
      }
    }
  } finally {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

const USAGE = `Usage: node bench/store.ts [--quick]

The store, SQLite and PostgreSQL in the same run: ingest throughput end to end, and an organisation's month
(HOOKWATCH_BENCH_EVENTS events, 1 million by default) read through the API.
  --quick               smoke-test sizes (seconds, not minutes)
  --help                this help
`;

if (startedAsScript(import.meta.url)) {
  const quick = moduleArgs(USAGE, { quick: { type: 'boolean' } }).quick === true;
  const results = await run({ quick });
  const md = markdownTable(results);
  const outDir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'store.json'), JSON.stringify({ command: `npm run bench:store${quick ? ' -- --quick' : ''}`, at: new Date().toISOString(), results }, null, 2) + '\n');
  console.log(md);
}
