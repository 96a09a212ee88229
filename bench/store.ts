/**
 * Store benchmark (`npm run bench:store [-- --quick]`), SQLite and PostgreSQL in the same run:
 * 1. Ingest throughput end to end: Claude-Code-shaped 512-record protobuf batches POSTed by concurrent clients to
 *    real `hookwatch serve` processes: one on SQLite (synchronous=full), then one and three replicas on one
 *    PostgreSQL (fsync on). Reported as hook events stored per second, SQLite as the baseline.
 * 2. The dashboard's heaviest queries on a large generated history (30 days; 10 million events by default,
 *    HOOKWATCH_BENCH_EVENTS to change): the overview over 30 days (what /api/v1/overview asks the store), the
 *    same overview filtered by team (reads raw events), and a per-user breakdown of one hook.
 * 3. Sizing: rows and bytes per million events on each backend, from the generated history.
 * Events are generated in SQL (one INSERT ... SELECT) and rolled up with the same aggregate SQL the stores use.
 */
import { mkdtempSync, rmSync, statSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { HOOK_EVENT_SHARE, batchTemplate, stamp } from './lib/batch.ts';
import { agentFor, post } from './lib/harness.ts';
import { markdownTable, percentile, result, type BenchOptions, type BenchResult } from './lib/result.ts';
import { COUNTER_COLUMNS, SUM_COLUMNS } from '../collector/src/store/counters.ts';
import { PostgresStore } from '../collector/src/store/postgres/index.ts';
import { startTestServer, type TestServer } from '../collector/test/support/postgres/server.ts';
import { startReplica, type Replica } from '../collector/test/support/postgres/replicas.ts';
import { ROLLUP_TABLES, eventAggregates } from '../collector/src/store/sql.ts';
import { SqliteStore } from '../collector/src/store/sqlite/index.ts';
import type { Store } from '../collector/src/store/store.ts';

const RECORDS = 512;
const DAY = 86_400_000;

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

/** The shape of the generated history: N events over 30 days. */
const HOOKS = 60;
const USERS = 500;
const TEAMS = 8;
const VERSIONS = ['2.1.332', '2.1.300', '2.1.279'];

/** SQL expressions for each event column, given `i` (1..N), `t0` and `span` (ms), per dialect. */
function generatedColumns(dialect: 'sqlite' | 'postgres', t0: number, span: number, n: number): Record<string, string> {
  const pgd = dialect === 'postgres';
  const hex = (x: string): string => (pgd ? `lpad(to_hex(${x}), 16, '0')` : `printf('%016x', ${x})`);
  const str = (x: string): string => (pgd ? `(${x})::text` : `CAST(${x} AS TEXT)`);
  // Sizes: most executions small, a tail near and over the cap; the oldest client version sends no sizes.
  const known = `(i % 3 <> 2)`;
  const size = `(CASE WHEN ${known} THEN ((i * 7919) % 14000) ELSE NULL END)`;
  return {
    dedup_key: `'bench-' || ${str('i')}`,
    kind: `'complete'`,
    hook_id: hex(`i % ${HOOKS}`),
    time_ms: `${t0} + ((i * ${Math.floor(span / n) || 1}) % ${span})`,
    num_hooks: '1',
    num_success: `(CASE WHEN i % 50 = 0 THEN 0 ELSE 1 END)`,
    num_blocking: `(CASE WHEN i % 50 = 0 THEN 1 ELSE 0 END)`,
    num_non_blocking_error: '0',
    num_cancelled: '0',
    duration_ms: `(20 + i % 400)`,
    stdout_chars: size,
    additional_context_chars: `(CASE WHEN ${known} THEN (i % 900) ELSE NULL END)`,
    system_message_chars: `(CASE WHEN ${known} THEN 0 ELSE NULL END)`,
    initial_user_message_chars: `(CASE WHEN ${known} THEN 0 ELSE NULL END)`,
    outputs_persisted: `(CASE WHEN ${known} AND (i * 7919) % 14000 > 10000 THEN 1 WHEN ${known} THEN 0 ELSE NULL END)`,
    sizes_known: `(CASE WHEN ${known} THEN 1 ELSE 0 END)`,
    status: `(CASE WHEN NOT ${known} THEN 'unknown' WHEN (i * 7919) % 14000 > 10000 THEN 'over' WHEN (i * 7919) % 14000 > 8000 THEN 'near' ELSE 'ok' END)`,
    service_name: `'claude-code'`,
    service_version: `(CASE i % 3 WHEN 0 THEN '${VERSIONS[0]}' WHEN 1 THEN '${VERSIONS[1]}' ELSE '${VERSIONS[2]}' END)`,
    session_id: `'session-' || ${str(`i / 40`)}`,
    user_id: `'user-' || ${str(`i % ${USERS}`)}`,
    user_email: `'user' || ${str(`i % ${USERS}`)} || '@example.com'`,
    user_account_uuid: `'acct-' || ${str(`i % ${USERS}`)}`,
    organization_id: `'org-1'`,
    terminal_type: `'vscode'`,
    source: `'otlp'`,
    extra: pgd ? `jsonb_build_object('team', 'team-' || ${str(`i % ${TEAMS}`)})` : `'{"team":"team-' || ${str(`i % ${TEAMS}`)} || '"}'`,
  };
}

const ROLLUP_SELECT = (bucketMs: number): string =>
  `SELECT hook_id, (time_ms / ${bucketMs}) * ${bucketMs} AS bucket, service_name, service_version, ${eventAggregates()} FROM events GROUP BY hook_id, (time_ms / ${bucketMs}) * ${bucketMs}, service_name, service_version`;

function rollupInserts(): string[] {
  const cols = ['hook_id', 'bucket', 'service_name', 'service_version', ...COUNTER_COLUMNS];
  return ([['minute', 60_000], ['hour', 3_600_000], ['day', DAY]] as const).map(([g, size]) =>
    // Counters are NOT NULL in rollups (a SUM over only unknown values is 0 executions-worth, not unknown); sizes stay NULL.
    `INSERT INTO ${ROLLUP_TABLES[g]} (${cols.join(', ')}) SELECT ${cols.map((c) => ((SUM_COLUMNS as readonly string[]).includes(c) && !c.startsWith('sum_') ? `COALESCE(${c}, 0)` : c)).join(', ')} FROM (${ROLLUP_SELECT(size)}) AS r`);
}

const HOOKS_INSERT = `INSERT INTO hooks (hook_id, hook_event, hook_name, first_seen, last_seen)
  SELECT hook_id, 'PostToolUse', 'PostToolUse:tool' || hook_id, MIN(time_ms), MAX(time_ms) FROM events GROUP BY hook_id`;

async function generatePostgres(url: string, n: number, t0: number, span: number): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const cols = generatedColumns('postgres', t0, span, n);
    // Chunks of 1M keep each transaction's WAL and memory bounded.
    for (let from = 1; from <= n; from += 1_000_000) {
      const to = Math.min(n, from + 999_999);
      await c.query(`INSERT INTO events (${Object.keys(cols).join(', ')}) SELECT ${Object.values(cols).join(', ')} FROM generate_series(${from}::bigint, ${to}::bigint) AS g(i)`);
    }
    for (const sql of rollupInserts()) await c.query(sql);
    await c.query(HOOKS_INSERT);
    await c.query('VACUUM ANALYZE');
  } finally {
    await c.end();
  }
}

function generateSqlite(path: string, n: number, t0: number, span: number): void {
  const db = new DatabaseSync(path);
  try {
    const cols = generatedColumns('sqlite', t0, span, n);
    db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;');
    for (let from = 1; from <= n; from += 1_000_000) {
      const to = Math.min(n, from + 999_999);
      db.exec(`WITH RECURSIVE g(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM g WHERE i < ${to})
        INSERT INTO events (${Object.keys(cols).join(', ')}) SELECT ${Object.values(cols).join(', ')} FROM g`);
    }
    for (const sql of rollupInserts()) db.exec(sql);
    db.exec(HOOKS_INSERT);
    db.exec('ANALYZE; PRAGMA wal_checkpoint(TRUNCATE);');
  } finally {
    db.close();
  }
}

interface Timing {
  /** The first call: nothing kept from an earlier one (SQLite keeps the answers for closed segments). */
  first: number;
  p50: number;
  p95: number;
}

/** The first call, then median and p95 ms of `runs` timed calls after it. */
async function time(runs: number, fn: () => Promise<unknown>): Promise<Timing> {
  const t0 = performance.now();
  await fn();
  const first = performance.now() - t0;
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    samples.push(performance.now() - t);
  }
  return { first, p50: percentile(samples, 50), p95: percentile(samples, 95) };
}

interface QueryFigures {
  overview: Timing;
  overviewByTeam: Timing;
  breakdownByUser: Timing;
}

/** What /api/v1/overview asks the store, plus the raw-event queries a filtered dashboard makes. */
async function queries(store: Store, t0: number, span: number, runs: number): Promise<QueryFigures> {
  const range = { fromMs: t0, toMs: t0 + span };
  const overview = (filters?: Record<string, string>): Promise<unknown> =>
    Promise.all([store.hookCounters({ ...range, ...(filters ? { filters } : {}) }), store.clientVersions({ ...range, ...(filters ? { filters } : {}) }), store.lastEventMs()]);
  const someHook = [...(await store.hookCounters(range)).keys()][0] ?? '';
  return {
    overview: await time(runs, () => overview()),
    overviewByTeam: await time(Math.max(1, Math.floor(runs / 2)), () => overview({ team: 'team-3' })),
    breakdownByUser: await time(Math.max(1, Math.floor(runs / 2)), () => store.breakdown(someHook, 'user.id', range)),
  };
}

async function countRows(c: pg.Client): Promise<number> {
  const r = await c.query<{ n: string }>(`SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM rollup_1m) + (SELECT count(*) FROM rollup_1h) + (SELECT count(*) FROM rollup_1d) + (SELECT count(*) FROM hooks) AS n`);
  return Number(r.rows[0]?.n ?? 0);
}

/** Runs the store benchmark and returns its figures. */
export async function run(opts: BenchOptions): Promise<BenchResult[]> {
  const quick = opts.quick;
  const seconds = quick ? 3 : 15;
  const clients = 6;
  const events = Number(process.env['HOOKWATCH_BENCH_EVENTS'] ?? (quick ? 200_000 : 10_000_000));
  const runs = quick ? 3 : 7;
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

    const span = 30 * DAY;
    const t0 = Math.floor((Date.now() - span) / DAY) * DAY;
    log(`generating ${events.toLocaleString('en-US')} events over 30 days in PostgreSQL...`);
    const pgUrl = await server.createDatabase('history');
    const pgStore = await PostgresStore.open({ url: pgUrl, dimensions: ['team'] });
    let g = performance.now();
    await generatePostgres(pgUrl, events, t0, span);
    const pgGenSeconds = (performance.now() - g) / 1000;
    log(`PostgreSQL generated in ${pgGenSeconds.toFixed(0)} s; generating in SQLite...`);
    const sqlitePath = join(dir, 'history.db');
    const sqliteStore = new SqliteStore({ path: sqlitePath, dimensions: ['team'] });
    g = performance.now();
    generateSqlite(sqlitePath, events, t0, span);
    const sqliteGenSeconds = (performance.now() - g) / 1000;
    log(`SQLite generated in ${sqliteGenSeconds.toFixed(0)} s; querying...`);
    try {
      const qs = await queries(sqliteStore, t0, span, runs);
      const qp = await queries(pgStore, t0, span, runs);
      const size = `${events.toLocaleString('en-US')} events, 30 days, ${HOOKS} hooks, ${USERS} users, ${TEAMS} teams`;
      out.push(result('overview 30 d (rollups): PostgreSQL p50', qp.overview.p50, 'ms', 'SQLite p50', qs.overview.p50, `${size}; p95 ${qp.overview.p95.toFixed(0)} vs ${qs.overview.p95.toFixed(0)} ms; hookCounters + clientVersions + lastEventMs`));
      out.push(result('overview 30 d filtered by team (raw events): PostgreSQL p50', qp.overviewByTeam.p50, 'ms', 'SQLite p50', qs.overviewByTeam.p50, `${size}; p95 ${qp.overviewByTeam.p95.toFixed(0)} vs ${qs.overviewByTeam.p95.toFixed(0)} ms`));
      out.push(result('breakdown by user.id, one hook, 30 d: PostgreSQL p50', qp.breakdownByUser.p50, 'ms', 'SQLite p50', qs.breakdownByUser.p50, `${size}; p95 ${qp.breakdownByUser.p95.toFixed(0)} vs ${qs.breakdownByUser.p95.toFixed(0)} ms`));
      // The calls above repeat one question: SQLite answers them from the closed segments it keeps. The first call reads.
      out.push(result('overview 30 d filtered by team (raw events), first call: PostgreSQL', qp.overviewByTeam.first, 'ms', 'SQLite first call', qs.overviewByTeam.first, `${size}; nothing kept from an earlier call`));
      out.push(result('breakdown by user.id, one hook, 30 d, first call: PostgreSQL', qp.breakdownByUser.first, 'ms', 'SQLite first call', qs.breakdownByUser.first, `${size}; nothing kept from an earlier call`));

      // Sizing per million events.
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      let pgBytes = 0;
      let pgRows = 0;
      try {
        pgBytes = Number((await c.query<{ b: string }>('SELECT pg_database_size(current_database())::text AS b')).rows[0]?.b ?? 0);
        pgRows = await countRows(c);
      } finally {
        await c.end();
      }
      const sdb = new DatabaseSync(sqlitePath, { readOnly: true });
      let sqliteRows = 0;
      try {
        const row = sdb.prepare('SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM rollup_1m) + (SELECT count(*) FROM rollup_1h) + (SELECT count(*) FROM rollup_1d) + (SELECT count(*) FROM hooks) AS n').get() as { n: number };
        sqliteRows = Number(row.n);
      } finally {
        sdb.close();
      }
      const sqliteBytes = statSync(sqlitePath).size;
      const perM = events / 1_000_000;
      out.push(result('bytes per million events: PostgreSQL', pgBytes / perM / 2 ** 20, 'MiB', 'SQLite', sqliteBytes / perM / 2 ** 20, `whole database incl. indexes and rollups, ${size}; generated in ${pgGenSeconds.toFixed(0)} s (PostgreSQL) and ${sqliteGenSeconds.toFixed(0)} s (SQLite)`));
      out.push(result('rows per million events: PostgreSQL', pgRows / perM, 'rows', 'SQLite', sqliteRows / perM, 'events + minute/hour/day rollups + hooks; rollup rows depend on hooks x versions x active minutes'));
    } finally {
      await pgStore.close();
      await sqliteStore.close();
    }
  } finally {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

if (import.meta.main) {
  const quick = process.argv.includes('--quick');
  const results = await run({ quick });
  const md = markdownTable(results);
  const outDir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'store.json'), JSON.stringify({ command: `npm run bench:store${quick ? ' -- --quick' : ''}`, at: new Date().toISOString(), results }, null, 2) + '\n');
  console.log(md);
}
