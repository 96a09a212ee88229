/**
 * Ingest benchmark (`npm run bench:ingest`): Claude-Code-shaped 512-record batches, protobuf and JSON, gzip and
 * not, POSTed through the real OTLP/HTTP receiver into a real SQLite file (synchronous=full, the default) by a
 * server in a child process. Reports records/s and the server's CPU µs per record, each next to a same-run
 * decode-only baseline: protobufjs decoding the very same bytes (after gunzip for gzip variants; JSON.parse then
 * protobufjs fromObject for JSON). A third figure compares hookwatch's own decoder with protobufjs. Last, where the
 * server's CPU per hook event goes: the same protobuf batches decoded and extracted in this process, then written
 * through the store's own ingest() on a SQLite file configured as `hookwatch serve` configures it, in as many
 * commits as the server's group commit made of them, each part's CPU per hook event next to the whole server's
 * from the same run; the rest, the figure of a server configured with `rules: []` less those two parts, and of
 * it what a bare node:http server costs reading the same requests; the floor under the store's part, the event
 * rows alone, inserted with nothing else; and the alert evaluations the batches trigger, the protobuf server's
 * figure less that of the same batches on the `rules: []` server. And the longest the event loop is
 * held while one maximum-size request (otlp.maxRequestBytes) is decoded, extracted and committed as the server
 * does it, in slices (paced.ts), next to the same request taken straight through in one piece and one commit, in
 * the same run (an OTLP/JSON one parsed on the receiver's parser thread, against JSON.parse on the event loop), and
 * for one protobuf request of a single record of about a million attributes the hook stage does not read; and likewise while one
 * maximum-size metrics or traces request is checked (the protobuf skim, or the JSON check, the receivers run
 * before forwarding it), in slices or on the parser thread against in one call; and while forwarding's queue file
 * takes such a request, reads it and deletes it, chunk by chunk against one statement each, and while retention
 * removes one, chunk by chunk against all its chunks in one transaction. Then a commit's CPU per hook event when
 * every event opens a session the store has not seen, against events of sessions stored before.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { loadConfig, toConfig } from '../collector/src/config/index.ts';
import { extractHookEvents } from '../collector/src/hooks/extract.ts';
import type { HookEvent } from '../collector/src/hooks/model.ts';
import { runPaced, runToEnd } from '../collector/src/paced.ts';
import { HOOK_STAGE_EVENT_NAMES, HookIngest } from '../collector/src/pipeline/hook-ingest.ts';
import { INGEST_SPACING_MS } from '../collector/src/alerting/engine.ts';
import { silentLogger } from '../collector/src/telemetry/logger.ts';
import { openStore } from '../collector/src/store/open.ts';
import { eventValues } from '../collector/src/store/sql.ts';
import { inTransaction, openSqlite } from '../collector/src/store/sqlite/database.ts';
import { EventRowInserts } from '../collector/src/store/sqlite/event-rows.ts';
import { decodeLogsJson } from '../collector/src/otlp/decode-json.ts';
import { decodeLogsProto } from '../collector/src/otlp/decode-proto.ts';
import { unbounded, type LogsRequest } from '../collector/src/otlp/model.ts';
import { JSON_THREAD_MIN_BYTES, JsonThread } from '../collector/src/otlp/json-thread.ts';
import { validatePassThroughSteps } from '../collector/src/otlp/validate.ts';
import { decodeLogs } from '../collector/src/receiver/inflight.ts';
import { BODY_CHUNK_BYTES, DurableQueue } from '../collector/src/forward/queue.ts';
import { HOOK_EVENT_SHARE, MAX_REQUEST_BYTES, RECORD_STEP_MS, batchTemplate, gzip, maxSizePassThrough, maxSizeRecord, maxSizeRequest, stamp, type WireEncoding } from './lib/batch.ts';
import { agentFor, cpuMicrosSince, postAll, serverCpuMicros, startServer, type BenchServer } from './lib/harness.ts';
import { ExportLogsServiceRequest, protobufjsDecode } from './lib/otlp-schema.ts';
import { fmt, percentile, result, runStandalone, type BenchOptions, type BenchResult } from './lib/result.ts';
import { longestStall } from './lib/stall.ts';
import { startedAsScript } from '../collector/src/tools/common/entry.ts';

const RECORDS = 512;
const CONCURRENCY = 4;

interface Variant {
  encoding: WireEncoding;
  gzip: boolean;
}

const VARIANTS: readonly Variant[] = [
  { encoding: 'protobuf', gzip: false },
  { encoding: 'protobuf', gzip: true },
  { encoding: 'json', gzip: false },
  { encoding: 'json', gzip: true },
];

function label(v: Variant): string {
  return `${v.encoding}${v.gzip ? '+gzip' : ''}`;
}

/** protobufjs decode of the same bytes: the least work any OTLP receiver must do per request. */
function baselineDecode(v: Variant, wire: Buffer): void {
  const bytes = v.gzip ? gunzipSync(wire) : wire;
  if (v.encoding === 'protobuf') protobufjsDecode(bytes);
  else ExportLogsServiceRequest.fromObject(JSON.parse(bytes.toString('utf8')) as Record<string, unknown>);
}

function hookwatchDecode(v: Variant, wire: Buffer): void {
  if (v.encoding === 'protobuf') decodeLogsProto(wire);
  else decodeLogsJson(wire.toString('utf8'));
}

/** CPU µs and wall ms spent in one function over a whole pass. */
interface Pass {
  cpuMicros: number;
  wallMs: number;
}

/**
 * Runs each function over every body, alternating them body by body, so both see the same machine load (on a
 * shared runner, two passes one after the other can differ by 2× for reasons that have nothing to do with them).
 */
function timedAlternating(bodies: readonly Buffer[], fns: readonly ((b: Buffer) => void)[]): Pass[] {
  for (const b of bodies.slice(0, warmUpBatches)) for (const fn of fns) fn(b); // warm the JIT like the server's warm-up batches
  const passes = fns.map(() => ({ cpuMicros: 0, wallMs: 0 }));
  for (const b of bodies) {
    fns.forEach((fn, i) => {
      const cpu = process.cpuUsage();
      const t0 = performance.now();
      fn(b);
      const p = passes[i] as Pass;
      p.wallMs += performance.now() - t0;
      p.cpuMicros += cpuMicrosSince(cpu);
    });
  }
  return passes;
}

/** What one variant measured, for the breakdown below. */
interface VariantFigures {
  results: BenchResult[];
  /** Server CPU µs per stored hook event. */
  serverPerEvent: number;
  /** Alert evaluations the server ran over the timed batches (hookwatch_alert_evaluations_total). */
  evaluations: number;
  /** Wall milliseconds of the timed batches. */
  wallMs: number;
  /** Transactions the server's group commit made of the timed batches (ServerStats.commits). */
  commits: number;
}

/** How long the server is watched at a time for settle's idle check, and the CPU share of one core it stays under. */
const IDLE_WINDOW_MS = 100;
const IDLE_CPU_SHARE = 0.05;
/** Quiet windows in a row that count as idle: an evaluation waiting on a commit's fsync is quiet for a moment. */
const IDLE_WINDOWS = 3;
const SETTLE_LIMIT_MS = 30_000;

/**
 * Waits until the server has done the work the batches posted so far gave it, so a CPU snapshot taken next counts
 * all of it: the evaluation on ingest a batch holds for its start runs up to INGEST_SPACING_MS after it (and takes
 * what it takes), then the server is idle when IDLE_WINDOWS windows in a row see it under IDLE_CPU_SHARE of a core
 * and finish no alert evaluation. Read over IPC, not /metrics, whose scrape would be counted as the server's work.
 */
async function settle(server: BenchServer): Promise<void> {
  const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
  await sleep(INGEST_SPACING_MS);
  const end = performance.now() + SETTLE_LIMIT_MS;
  let last = await server.stats();
  let quiet = 0;
  while (quiet < IDLE_WINDOWS) {
    if (performance.now() > end) throw new Error(`the benchmark server was not idle within ${SETTLE_LIMIT_MS / 1000} s of its last batch`);
    await sleep(IDLE_WINDOW_MS);
    const now = await server.stats();
    const idle = serverCpuMicros(last, now) < IDLE_WINDOW_MS * 1000 * IDLE_CPU_SHARE && now.alertEvaluations === last.alertEvaluations;
    quiet = idle ? quiet + 1 : 0;
    last = now;
  }
}

/**
 * WARM_UP batches, then `batches` more, each with records the store has not seen. A server runs for weeks: the
 * figures are its steady state, after V8 has compiled the ingest path's functions and its heap has settled. The
 * warm-up is posted as the timed batches are, by CONCURRENCY clients (four requests to a commit): after 30 batches
 * from one client, V8 was still compiling the ingest path through the timed batches (some 80 TurboFan and 220
 * Maglev compiles among 150 batches, against 4 to 9 and 39 after 300 batches from four clients), on its own
 * threads, which the server's CPU counts: 3.4 to 10.4 µs per hook event, against mostly 0.5 to 1 after the longer
 * warm-up. The breakdown's rest, the server's figure less decode and store, held most of it.
 */
const WARM_UP = 300;
/** With --quick: a check that the module runs, not figures. */
const QUICK_WARM_UP = 30;
let warmUpBatches = WARM_UP;
/**
 * Milliseconds between the last records of consecutive batches: CONCURRENCY clients, each sending a batch of the
 * RECORDS that happened since its last one, as a live feed does. The last batch ends when the bodies are made.
 */
const BATCH_STEP_MS = Math.round(((RECORDS - 1) * RECORD_STEP_MS) / CONCURRENCY);
/** Warm-up batches made at a time, so that they are never all held in memory together. */
const WARM_UP_SLICE = 30;
/**
 * `warmUp` batches and then `batches` more, timed as a live feed: the timed ones made now (`bodies`), the warm-up
 * ones as they are posted (`warmUpSlice(from)`, up to WARM_UP_SLICE of them from the `from`th).
 */
function bodiesOf(v: Variant, batches: number, warmUp = warmUpBatches): { contentType: string; bodies: Buffer[]; warmUp: number; warmUpSlice(from: number): Buffer[] } {
  const template = batchTemplate(RECORDS, v.encoding);
  const count = batches + warmUp;
  const endMs = Date.now();
  // Batches stamped all at once would all hold the same 19 seconds: every commit would then write into the
  // whole of each time-ordered index (events by key, by time, by hook and time), not its recent end, and the
  // store's share would grow with the number of batches already stored (2.3 MB written per commit after 230
  // batches, against 0.5 MB for a feed whose time moves on).
  const body = (i: number): Buffer => {
    const b = stamp(template, randomUUID(), endMs - (count - 1 - i) * BATCH_STEP_MS);
    return v.gzip ? gzip(b) : b;
  };
  const bodies = Array.from({ length: batches }, (_, i) => body(warmUp + i));
  const warmUpSlice = (from: number): Buffer[] => Array.from({ length: Math.max(0, Math.min(WARM_UP_SLICE, warmUp - from)) }, (_, i) => body(from + i));
  return { contentType: template.contentType, bodies, warmUp, warmUpSlice };
}

/** Every warm-up batch of `made`, one slice at a time, each through `use`. */
async function eachWarmUpSlice(made: ReturnType<typeof bodiesOf>, use: (slice: Buffer[]) => Promise<void> | void): Promise<void> {
  for (let from = 0; from < made.warmUp; from += WARM_UP_SLICE) await use(made.warmUpSlice(from));
}

async function runVariant(v: Variant, batches: number, env: Record<string, string> = {}): Promise<VariantFigures> {
  const made = bodiesOf(v, batches);
  const { contentType, bodies } = made;
  const headers: Record<string, string> = { 'content-type': contentType };
  if (v.gzip) headers['content-encoding'] = 'gzip';

  const server = await startServer(env);
  const agent = agentFor(CONCURRENCY);
  const url = `${server.otlpHttpUrl}/v1/logs`;
  let failures = 0;
  let wallMs: number;
  let cpu: number;
  let stored: number;
  let evaluations: number;
  let commits: number;
  try {
    await eachWarmUpSlice(made, async (slice) => {
      failures += await postAll(agent, url, slice, headers, CONCURRENCY);
    });
    // The warm-up's last evaluation is not the timed batches' work; theirs, up to INGEST_SPACING_MS after the last
    // one, is: each snapshot once the server is idle (on both servers, the `rules: []` one too).
    await settle(server);
    const before = await server.stats();
    const t0 = performance.now();
    failures += await postAll(agent, url, bodies, headers, CONCURRENCY);
    wallMs = performance.now() - t0;
    await settle(server);
    const after = await server.stats();
    evaluations = after.alertEvaluations - before.alertEvaluations;
    commits = after.commits - before.commits;
    cpu = serverCpuMicros(before, after);
    stored = after.stored;
  } finally {
    agent.destroy();
    await server.stop();
  }
  const measured = bodies;
  const records = batches * RECORDS;
  const [base, own] = timedAlternating(measured, v.gzip ? [(b) => baselineDecode(v, b)] : [(b) => baselineDecode(v, b), (b) => hookwatchDecode(v, b)]) as [Pass, Pass | undefined];
  const avgBytes = Math.round(measured.reduce((n, b) => n + b.length, 0) / measured.length);
  const expectedStored = (batches + made.warmUp) * RECORDS * HOOK_EVENT_SHARE;
  const notes = `${batches} batches × ${RECORDS} records (${Math.round(HOOK_EVENT_SHARE * 100)}% hook events), ${avgBytes.toLocaleString('en-US')} B/request, ${CONCURRENCY} clients, SQLite synchronous=full; ${failures} non-200; stored ${stored}/${expectedStored} hook events`;
  const out = [
    result(`ingest ${label(v)}: throughput`, records / (wallMs / 1000), 'records/s', 'protobufjs decode only', records / (base.wallMs / 1000), notes),
    result(`ingest ${label(v)}: server CPU per record`, cpu / records, 'µs/record', 'protobufjs decode only', base.cpuMicros / records, 'server process CPU (user+system) over the timed batches, HTTP + decode + extract + SQLite commit'),
  ];
  if (own) {
    out.push(result(`decode ${v.encoding}: hookwatch decoder CPU per record`, own.cpuMicros / records, 'µs/record', 'protobufjs decode only', base.cpuMicros / records, 'decoder alone, in the benchmark process, same bytes, alternating with the baseline batch by batch'));
  }
  if (failures > 0 || stored !== expectedStored) throw new Error(`ingest ${label(v)}: ${failures} requests failed, ${stored} of ${expectedStored} hook events stored`);
  return { results: out, serverPerEvent: cpu / (batches * RECORDS * HOOK_EVENT_SHARE), evaluations, wallMs, commits };
}

/**
 * What the alert evaluations the batches trigger cost the server: the protobuf variant again, on a server whose
 * config file says `rules: []` (no rule is evaluated on ingest or on the timer), against the server with the default
 * rules from the same run; the difference per hook event, and the evaluations the default rules ran.
 */
async function evaluationShare(batches: number, withRules: VariantFigures): Promise<{ evaluation: BenchResult; none: VariantFigures }> {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-bench-norules-'));
  try {
    const file = join(dir, 'hookwatch.yaml');
    writeFileSync(file, 'alerting:\n  rules: []\n');
    const none = await runVariant({ encoding: 'protobuf', gzip: false }, batches, { HOOKWATCH_CONFIG: file });
    const perSecond = withRules.evaluations / (withRules.wallMs / 1000);
    const evaluation = result('ingest protobuf, per hook event: alert evaluation (default rules less `rules: []`)', withRules.serverPerEvent - none.serverPerEvent, 'µs/hook event', 'whole server', withRules.serverPerEvent,
      `the protobuf variant again on a server configured with \`rules: []\`: ${fmt(none.serverPerEvent)} µs per hook event, against ${fmt(withRules.serverPerEvent)} with the default rules; the default rules ran ${withRules.evaluations} evaluations over its ${batches} timed batches (${fmt(perSecond)} per second, ${fmt(withRules.evaluations / batches)} per batch), \`rules: []\` ${none.evaluations}`);
    return { evaluation, none };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

type Config = ReturnType<typeof toConfig>;

/** A fresh SQLite store opened as `hookwatch serve` opens it, for `use`, then closed and deleted. */
async function withStore<T>(config: Config, use: (store: Awaited<ReturnType<typeof openStore>>) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-bench-ingest-'));
  const store = await openStore({ ...config, db: join(dir, 'hookwatch.db') });
  try {
    return await use(store);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `items` in `count` groups of sizes as even as can be, in order: batches committed in as many transactions as a
 * server's group commit made of them.
 */
function groupsOf<T>(items: readonly T[], count: number): T[][] {
  const n = Math.max(1, Math.min(items.length, count));
  return Array.from({ length: n }, (_, i) => items.slice(Math.floor((i * items.length) / n), Math.floor(((i + 1) * items.length) / n)));
}

/**
 * What a bare node:http server (server-child.ts, BENCH_SERVER=null: each body read and answered 200, nothing else)
 * costs per hook event of the same protobuf batches, posted as runVariant posts them: the part of the breakdown's
 * rest that is Node's HTTP and not hookwatch's (sockets, the parser, the body's chunks and the garbage they make).
 */
async function httpFloor(batches: number): Promise<number> {
  const made = bodiesOf({ encoding: 'protobuf', gzip: false }, batches);
  const headers = { 'content-type': made.contentType };
  const server = await startServer({ BENCH_SERVER: 'null' });
  const agent = agentFor(CONCURRENCY);
  const url = `${server.otlpHttpUrl}/v1/logs`;
  try {
    let failures = 0;
    await eachWarmUpSlice(made, async (slice) => {
      failures += await postAll(agent, url, slice, headers, CONCURRENCY);
    });
    await settle(server);
    const before = await server.stats();
    failures += await postAll(agent, url, made.bodies, headers, CONCURRENCY);
    await settle(server);
    const after = await server.stats();
    if (failures > 0) throw new Error(`bare HTTP server: ${failures} requests failed`);
    return serverCpuMicros(before, after) / (batches * RECORDS * HOOK_EVENT_SHARE);
  } finally {
    agent.destroy();
    await server.stop();
  }
}

/**
 * The server's CPU per hook event taken apart: the same protobuf batches decoded (as the receivers decode them
 * for the hook stage) and their hook events extracted in this process, then committed through the store's own
 * ingest() to a SQLite file opened as `hookwatch serve` opens it (synchronous=full), in as many commits as the
 * `rules: []` server's group commit made of them (`none.commits`: requests that arrive apart are committed apart,
 * some 2 to 2.6 batches to a commit rather than CONCURRENCY, and each commit costs its sync to disk and its rollup
 * upserts). What is left of that server's figure is HTTP, the receiver and the hook stage (the alert evaluations
 * the default rules add are their own row, evaluationShare), and of it `floor` (httpFloor) is node:http's alone.
 */
async function breakdown(batches: number, whole: VariantFigures, none: VariantFigures, floor: number): Promise<BenchResult[]> {
  const serverPerEvent = whole.serverPerEvent;
  // A store that counts no commits (0): CONCURRENCY batches to each, as the server's group commit takes at most.
  const commits = Math.min(batches, none.commits > 0 ? none.commits : Math.ceil(batches / CONCURRENCY));
  const made = bodiesOf({ encoding: 'protobuf', gzip: false }, batches);
  const config = toConfig(loadConfig({ flags: {} }));
  const opts = { nearThreshold: config.delivery.nearThreshold, dimensions: config.dimensions };
  // The warm-up batches warm the JIT (as the server's do) and the store's caches.
  // Decoded as the receivers decode for the hook stage: the attributes of records it does not read are left out.
  const decode = (b: Buffer): LogsRequest => decodeLogsProto(b, unbounded(), HOOK_STAGE_EVENT_NAMES);
  const warm: HookEvent[][] = [];
  await eachWarmUpSlice(made, (slice) => {
    for (const b of slice) warm.push(extractHookEvents(decode(b), opts).events);
  });
  const decoded: HookEvent[][] = [];
  const cpu = process.cpuUsage();
  for (const b of made.bodies) decoded.push(extractHookEvents(decode(b), opts).events);
  const decodeCpu = cpuMicrosSince(cpu);
  const events = decoded.reduce((n, e) => n + e.length, 0);
  const storeCpu = await withStore(config, async (store) => {
    for (let i = 0; i < warm.length; i += CONCURRENCY) await Promise.all(warm.slice(i, i + CONCURRENCY).map((e) => store.ingest(e)));
    const before = process.cpuUsage();
    for (const group of groupsOf(decoded, commits)) await Promise.all(group.map((e) => store.ingest(e)));
    return cpuMicrosSince(before);
  });
  const rowCpu = await rowFloor(config, decoded, warm);
  const rest = none.serverPerEvent - decodeCpu / events - storeCpu / events;
  const notes = `${batches} protobuf batches, ${events.toLocaleString('en-US')} hook events; the whole server's CPU per hook event in this run is the baseline`;
  return [
    result('ingest protobuf, per hook event: decode + extract', decodeCpu / events, 'µs/hook event', 'whole server', serverPerEvent, `${notes}; in this process`),
    result('ingest protobuf, per hook event: store commit (SQLite, synchronous=full)', storeCpu / events, 'µs/hook event', 'whole server', serverPerEvent, `${notes}; store.ingest() as the server opens the store, in ${commits} commits as the \`rules: []\` server's group commit made of the same batches (${fmt(batches / commits)} batches per commit; the default rules' server made ${whole.commits})`),
    result('ingest protobuf, per hook event: the rest (HTTP, receiver, hook stage)', rest, 'µs/hook event', 'whole server', serverPerEvent, `${notes}; the \`rules: []\` server's figure (${fmt(none.serverPerEvent)} µs, alert evaluation apart: its own row) less the two above`),
    result('ingest protobuf, per hook event: of the rest, a bare node:http server reading the same requests', floor, 'µs/hook event', 'the rest', rest, `the same ${batches} protobuf batches posted as above to a node:http server that reads each body and answers 200 (bench/lib/server-child.ts, BENCH_SERVER=null): the sockets, the HTTP parser and the garbage of the body's chunks, none of it hookwatch's; the rest less it, ${fmt(rest - floor)} µs, is hookwatch's receiver and hook stage`),
    result('ingest protobuf, per hook event: floor, the event row alone (SQLite insert)', rowCpu / events, 'µs/hook event', 'whole server', serverPerEvent, `${notes}; each event's row and nothing else (no rollups, attribute sets or hook bookkeeping) inserted through the store's own multi-row statements (sqlite/event-rows.ts, the cheapest form measured: fewer statements than one per row) into the events table and its indexes as hookwatch's schema has them, synchronous=full, ${CONCURRENCY} batches per commit: what storing raw events durably costs through node:sqlite before any of hookwatch's own work`),
  ];
}

/**
 * CPU of the least a durable store of raw events does: the events' rows alone, through the store's multi-row
 * INSERTs (cheaper than one prepared single-row INSERT per row, so the floor stays the least cost), into a file
 * whose schema hookwatch made (so the events table has exactly its columns and indexes), committed
 * CONCURRENCY batches at a time. Every row points at one attribute set: no attribute-set or rollup work.
 */
async function rowFloor(config: Config, decoded: readonly HookEvent[][], warm: readonly HookEvent[][]): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-bench-floor-'));
  const path = join(dir, 'hookwatch.db');
  try {
    await (await openStore({ ...config, db: path })).close();
    const db = openSqlite(path);
    try {
      const rows = new EventRowInserts(db);
      const commit = (group: readonly HookEvent[][]): void => inTransaction(db, () => {
        for (const batch of group) rows.insert(batch.map((e) => eventValues(e, 1)));
      });
      for (let i = 0; i < warm.length; i += CONCURRENCY) commit(warm.slice(i, i + CONCURRENCY));
      const before = process.cpuUsage();
      for (let i = 0; i < decoded.length; i += CONCURRENCY) commit(decoded.slice(i, i + CONCURRENCY));
      return cpuMicrosSince(before);
    } finally {
      db.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `once(false)` (straight through) and `once(true)` (paced), alternating run by run, `runs` times each: what each
 * returned, in order.
 */
async function alternating(runs: number, once: (paced: boolean) => Promise<number>): Promise<{ straight: number[]; paced: number[] }> {
  const straight: number[] = [];
  const paced: number[] = [];
  for (let i = 0; i < runs; i++) {
    straight.push(await once(false));
    paced.push(await once(true));
  }
  return { straight, paced };
}

/** Milliseconds as a list, whole. */
const msList = (xs: number[]): string => xs.map((x) => x.toFixed(0)).join(', ');

/**
 * One request taken as the server takes it: decoded in slices with a turn of the event loop between them (as
 * decodeWithin does; a JSON body parsed on `thread`, as the OTLP/HTTP receiver parses one over
 * JSON_THREAD_MIN_BYTES; a protobuf one keeping the attributes of the records the hook stage reads only), then through the hook stage (HookIngest: extraction in slices, commit in parts); or, as
 * before slicing, straight through: decoded (JSON.parse on the event loop; a protobuf one keeping the same
 * attributes only) and extracted in one call, its events in one store.ingest().
 */
async function ingestOnce(config: Config, encoding: WireEncoding, body: Buffer, paced: boolean, thread: JsonThread): Promise<number> {
  const opts = { nearThreshold: config.delivery.nearThreshold, dimensions: config.dimensions };
  return withStore(config, async (store) => {
    const ingest = new HookIngest({ store, ...opts, maxPending: 1, logger: silentLogger });
    const raw = { signal: 'logs', body, encoding, receivedAtMs: Date.now() } as const;
    return longestStall(async () => {
      // The receivers' decode (decodeWithin's bound aside): in slices, or run to its end in one call; either keeps
      // the attributes of the records the hook stage reads only (protobuf), so both do the same work.
      if (paced) await ingest.consumeLogs(await runPaced(decodeLogs(encoding, body, unbounded(), thread, ingest.eventNames)), raw);
      else await store.ingest(extractHookEvents(encoding === 'protobuf' ? decodeLogsProto(body, unbounded(), ingest.eventNames) : runToEnd(decodeLogs(encoding, body, unbounded())), opts).events);
    });
  });
}

/**
 * The longest event-loop stall while one maximum-size request is ingested, paced as the server does it, next to
 * the same request straight through (one piece, one commit), alternating run by run on fresh SQLite files.
 */
async function stall(encoding: WireEncoding, runs: number, thread: JsonThread): Promise<BenchResult> {
  const config = toConfig(loadConfig({ flags: {} }));
  // Both paths once on a small request first: the optimizing compiler has taken the hot loops by the timed runs
  // (and the parser thread has started).
  const warm = maxSizeRequest(encoding, MAX_REQUEST_BYTES / 16).body;
  for (const paced of [false, true]) await ingestOnce(config, encoding, warm, paced, thread);
  const { body, records } = maxSizeRequest(encoding);
  const { straight, paced } = await alternating(runs, (p) => ingestOnce(config, encoding, body, p, thread));
  return result(
    `ingest ${encoding}: longest event-loop stall while one maximum-size request is ingested`,
    percentile(paced, 50), 'ms', 'same request straight through', percentile(straight, 50),
    `one ${body.length.toLocaleString('en-US')} B request of ${records.toLocaleString('en-US')} hook executions (1,000 per session) decoded, extracted and committed to a fresh SQLite file (synchronous=full) in this process, as the server does it (decode and extraction in slices, commit in parts, the event loop served between) against decoded and extracted in one call and committed in one store.ingest(); longest time between two runs of a 1 ms timer, median of ${runs} run(s) each, alternating; paced ${msList(paced)} ms, straight ${msList(straight)} ms${encoding === 'json' ? `; paced, the body is parsed and decoded on the OTLP/JSON parser thread (as the receiver parses one over ${JSON_THREAD_MIN_BYTES.toLocaleString('en-US')} B) and its model taken in slice by slice, straight, JSON.parse on the event loop` : ''}`,
  );
}

/**
 * The longest event-loop stall while one maximum-size protobuf request of a single record the hook stage does not
 * read, with about a million attributes (maxSizeRecord), is ingested, paced as the server does it, next to the
 * same request straight through, alternating run by run on fresh SQLite files.
 */
async function recordStall(runs: number, thread: JsonThread): Promise<BenchResult> {
  const config = toConfig(loadConfig({ flags: {} }));
  const warm = maxSizeRecord(MAX_REQUEST_BYTES / 16).body;
  for (const paced of [false, true]) await ingestOnce(config, 'protobuf', warm, paced, thread);
  const { body, attributes } = maxSizeRecord();
  const { straight, paced } = await alternating(runs, (p) => ingestOnce(config, 'protobuf', body, p, thread));
  return result(
    'ingest protobuf: longest event-loop stall while one maximum-size request of one record of many attributes is ingested',
    percentile(paced, 50), 'ms', 'same request straight through', percentile(straight, 50),
    `one ${body.length.toLocaleString('en-US')} B request of one api_request record of ${attributes.toLocaleString('en-US')} short string attributes (none kept: the hook stage does not read the record) decoded, extracted and committed to a fresh SQLite file in this process, as the server does it (in slices, the event loop served between) against in one call; longest time between two runs of a 1 ms timer, median of ${runs} run(s) each, alternating; paced ${msList(paced)} ms, straight ${msList(straight)} ms`,
  );
}

/**
 * The longest event-loop stall while one maximum-size metrics or traces request is checked as the receivers
 * check it before it is forwarded or dropped (protobuf: the skim in slices, the event loop served between; JSON:
 * parsed and checked on the parser thread), next to the same check straight through on the event loop,
 * alternating run by run.
 */
async function passThroughStall(signal: 'metrics' | 'traces', encoding: WireEncoding, runs: number, thread: JsonThread): Promise<BenchResult> {
  const check = (body: Buffer, paced: boolean): Promise<number> => {
    const raw = { signal, encoding, body, receivedAtMs: Date.now() };
    return longestStall(async () => {
      if (paced) await runPaced(validatePassThroughSteps(raw, unbounded(), thread));
      else runToEnd(validatePassThroughSteps(raw));
    });
  };
  // Both paths once on a small request first, as for the logs request above.
  const warm = maxSizePassThrough(signal, MAX_REQUEST_BYTES / 16, encoding).body;
  for (const paced of [false, true]) await check(warm, paced);
  const { body, items } = maxSizePassThrough(signal, MAX_REQUEST_BYTES, encoding);
  const { straight, paced } = await alternating(runs, (p) => check(body, p));
  const how = encoding === 'protobuf'
    ? 'the protobuf skim in slices, the event loop served between) against the skim in one call'
    : 'parsed and its levels checked on the OTLP/JSON parser thread, the event loop waiting on it) against JSON.parse and the check on the event loop';
  return result(
    `ingest ${signal} ${encoding}: longest event-loop stall while one maximum-size request is checked`,
    percentile(paced, 50), 'ms', 'same request straight through', percentile(straight, 50),
    `one ${body.length.toLocaleString('en-US')} B request of ${items.toLocaleString('en-US')} ${signal === 'metrics' ? 'sums' : 'spans'} checked in this process as the receivers check it (${how}; forwarding's queue write comes after either; longest time between two runs of a 1 ms timer, median of ${runs} run(s) each, alternating; paced ${msList(paced)} ms, straight ${msList(straight)} ms`,
  );
}

/**
 * The longest event-loop stall while one maximum-size traces request goes through forwarding's queue file as the
 * server takes it: committed (DurableQueue.enqueue), read for sending (batch) and deleted once delivered (ack),
 * each chunk by chunk with the event loop served between; next to the same body written, read and deleted in one
 * statement each in a file opened the same way (WAL, synchronous=full, secure_delete), alternating run by run.
 */
async function forwardQueueStall(runs: number): Promise<BenchResult> {
  return queueFileStall(runs, {
    chunked: async (path, body) => {
      const queue = new DurableQueue({ path, maxBytes: 4 * MAX_REQUEST_BYTES });
      try {
        return await longestStall(async () => {
          await queue.enqueue('traces', 'protobuf', body, Date.now());
          const [item] = await queue.batch(1, MAX_REQUEST_BYTES);
          await queue.ack(item!.id);
        });
      } finally {
        queue.close();
      }
    },
    straight: async (path, body) => {
      const db = openSqlite(path);
      try {
        db.exec('PRAGMA secure_delete = ON; CREATE TABLE queue (id INTEGER PRIMARY KEY, body BLOB NOT NULL)');
        return await longestStall(async () => {
          const id = db.prepare('INSERT INTO queue (body) VALUES (?)').run(body).lastInsertRowid;
          db.prepare('SELECT body FROM queue WHERE id = ?').get(id);
          db.prepare('DELETE FROM queue WHERE id = ?').run(id);
        });
      } finally {
        db.close();
      }
    },
    name: 'forward queue: longest event-loop stall while one maximum-size request is queued, read and deleted',
    baseline: 'same body in one statement each',
    notes: (bytes, chunked, straight) => `one ${bytes.toLocaleString('en-US')} B traces request committed to a fresh forwarding queue file (synchronous=full, secure_delete), read for sending and deleted as delivered, chunk by chunk with the event loop served between, against the same body inserted, selected and deleted in one statement each; longest time between two runs of a 1 ms timer, median of ${runs} run(s) each, alternating; chunked ${msList(chunked)} ms, one statement ${msList(straight)} ms`,
  });
}

/**
 * The longest event-loop stall while retention removes one maximum-size traces request from forwarding's queue
 * file (DurableQueue.expire: its row in one commit, then its chunks one statement each, the event loop served
 * between; dead-letter eviction deletes them the same way); next to the same request's row and chunks deleted in
 * one transaction on the same file, as expiry and eviction did before, alternating run by run.
 */
async function forwardExpiryStall(runs: number): Promise<BenchResult> {
  const queued = async (path: string, body: Buffer): Promise<DurableQueue> => {
    const queue = new DurableQueue({ path, maxBytes: 4 * MAX_REQUEST_BYTES });
    await queue.enqueue('traces', 'protobuf', body, 1);
    return queue;
  };
  return queueFileStall(runs, {
    chunked: async (path, body) => {
      const queue = await queued(path, body);
      try {
        return await longestStall(async () => void (await queue.expire(2)));
      } finally {
        queue.close();
      }
    },
    straight: async (path, body) => {
      (await queued(path, body)).close();
      const db = openSqlite(path);
      try {
        db.exec('PRAGMA secure_delete = ON');
        return await longestStall(async () => {
          inTransaction(db, () => db.exec('DELETE FROM body_chunks; DELETE FROM queue'));
          db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
        });
      } finally {
        db.close();
      }
    },
    name: 'forward queue: longest event-loop stall while retention removes one maximum-size request',
    baseline: 'same body in one transaction',
    notes: (bytes, chunked, straight) => `one ${bytes.toLocaleString('en-US')} B traces request in a fresh forwarding queue file (synchronous=full, secure_delete) removed as past retention.events, its row first, then its chunks one statement each with the event loop served between (as an evicted dead letter's), against its row and chunks deleted in one transaction, as before; both then truncate the write-ahead log; longest time between two runs of a 1 ms timer, median of ${runs} run(s) each, alternating; chunked ${msList(chunked)} ms, one transaction ${msList(straight)} ms`,
  });
}

/** Dead letters replayed by forwardReplayStall, and the size of each: bodies of up to this size are held in their row. */
const REPLAY_DEAD_LETTERS = 200;
const REPLAY_BODY_BYTES = BODY_CHUNK_BYTES;

/**
 * The longest event-loop stall of the work `fill` returns, on the forwarding queue file it made in a fresh folder
 * (`paced`: through DurableQueue, as hookwatch does it), or of `sql` in one transaction on the same file, with
 * secure_delete as the queue sets it (`paced` false: its same-run baseline, as before).
 */
async function queueWorkStall(paced: boolean, fill: (path: string) => Promise<{ queue: DurableQueue; work: () => Promise<unknown> }>, sql: string): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-bench-forward-'));
  const path = join(dir, 'queue.db');
  try {
    const { queue, work } = await fill(path);
    if (paced) {
      try {
        return await longestStall(work);
      } finally {
        queue.close();
      }
    }
    queue.close();
    const db = openSqlite(path);
    try {
      db.exec('PRAGMA secure_delete = ON');
      return await longestStall(async () => {
        inTransaction(db, () => db.exec(sql));
      });
    } finally {
      db.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The longest event-loop stall while REPLAY_DEAD_LETTERS dead letters of 1 MiB each are put back in forwarding's
 * queue (DurableQueue.replayDeadLetters: each body held in its row is copied and overwritten where it was, a few
 * MiB per transaction with the event loop served between); next to the same rows moved in one transaction on the
 * same file, as replay did before, alternating run by run.
 */
async function forwardReplayStall(runs: number): Promise<BenchResult> {
  const deadLetters = async (path: string): Promise<DurableQueue> => {
    const queue = new DurableQueue({ path, maxBytes: 2 * REPLAY_DEAD_LETTERS * REPLAY_BODY_BYTES, deadLetterMaxBytes: 2 * REPLAY_DEAD_LETTERS * REPLAY_BODY_BYTES });
    const body = Buffer.alloc(REPLAY_BODY_BYTES, 7);
    for (let i = 0; i < REPLAY_DEAD_LETTERS; i++) await queue.deadLetter([await queue.enqueue('traces', 'protobuf', body, i)], i, 400, 'refused');
    return queue;
  };
  const once = (paced: boolean): Promise<number> => queueWorkStall(paced, async (path) => {
    const queue = await deadLetters(path);
    return { queue, work: () => queue.replayDeadLetters() };
  }, 'INSERT INTO queue (signal, encoding, body, bytes, received_at, body_key) SELECT signal, encoding, body, bytes, received_at, body_key FROM dead_letters ORDER BY received_at, id; DELETE FROM dead_letters');
  const { straight, paced } = await alternating(runs, once);
  return result(
    'forward queue: longest event-loop stall while dead letters are replayed',
    percentile(paced, 50),
    'ms',
    'same rows in one transaction',
    percentile(straight, 50),
    `${REPLAY_DEAD_LETTERS} dead letters of ${REPLAY_BODY_BYTES.toLocaleString('en-US')} B (held in their row) in a fresh forwarding queue file (synchronous=full, secure_delete) put back in the queue by POST /api/v1/forwarding/dead-letters/replay's DurableQueue.replayDeadLetters, a few MiB per transaction with the event loop served between, against the same rows moved in one transaction, as before; longest time between two runs of a 1 ms timer, median of ${runs} run(s) each, alternating; paced ${msList(paced)} ms, one transaction ${msList(straight)} ms`,
  );
}

/**
 * The longest event-loop stall while one maximum-size traces request becomes a dead letter and evicts dead letters
 * of 1 MiB each (held in their row, each overwritten: secure_delete) to stay within forward.deadLetters.maxBytes
 * (DurableQueue.deadLetter: the move in one transaction, the eviction a few MiB per transaction with the event loop
 * served between); next to the same move and eviction in one transaction on the same file, as before, alternating
 * run by run.
 */
async function forwardEvictionStall(runs: number): Promise<BenchResult> {
  const { body } = maxSizePassThrough('traces');
  const held = Math.ceil(body.length / REPLAY_BODY_BYTES);
  const small = Buffer.alloc(REPLAY_BODY_BYTES, 7);
  const once = (paced: boolean): Promise<number> => queueWorkStall(paced, async (path) => {
    const queue = new DurableQueue({ path, maxBytes: 4 * MAX_REQUEST_BYTES, deadLetterMaxBytes: held * REPLAY_BODY_BYTES });
    for (let i = 0; i < held; i++) await queue.deadLetter([await queue.enqueue('traces', 'protobuf', small, i)], i, 400, 'refused');
    const id = await queue.enqueue('traces', 'protobuf', body, held);
    return { queue, work: () => queue.deadLetter([id], held, 400, 'refused') };
  }, `INSERT INTO dead_letters (id, signal, encoding, body, bytes, received_at, failed_at, attempts, status, reason, body_key) SELECT id, signal, encoding, body, bytes, received_at, ${held}, attempts + 1, 400, 'refused', body_key FROM queue; DELETE FROM queue; DELETE FROM dead_letters WHERE body_key IS NULL`);
  const { straight, paced } = await alternating(runs, once);
  return result(
    'forward queue: longest event-loop stall while one maximum-size dead letter evicts dead letters of 1 MiB',
    percentile(paced, 50),
    'ms',
    'move and eviction in one transaction',
    percentile(straight, 50),
    `one ${body.length.toLocaleString('en-US')} B traces request (in chunks) moved to the dead letters of a fresh forwarding queue file (synchronous=full, secure_delete) holding ${held} dead letters of ${REPLAY_BODY_BYTES.toLocaleString('en-US')} B (held in their row) at forward.deadLetters.maxBytes, all of which it evicts, a few MiB per transaction with the event loop served between, against the move and the eviction in one transaction, as before; longest time between two runs of a 1 ms timer, median of ${runs} run(s) each, alternating; paced ${msList(paced)} ms, one transaction ${msList(straight)} ms`,
  );
}

/**
 * One maximum-size traces request through a forwarding queue file in a fresh folder, `chunked` (as hookwatch does
 * it) and `straight` (its same-run baseline) alternating run by run: the median longest stall of each, as a result.
 */
async function queueFileStall(runs: number, opts: {
  chunked: (path: string, body: Buffer) => Promise<number>;
  straight: (path: string, body: Buffer) => Promise<number>;
  name: string;
  baseline: string;
  notes: (bytes: number, chunked: number[], straight: number[]) => string;
}): Promise<BenchResult> {
  const once = async (body: Buffer, chunked: boolean): Promise<number> => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-bench-forward-'));
    try {
      return await (chunked ? opts.chunked : opts.straight)(join(dir, 'queue.db'), body);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const { body } = maxSizePassThrough('traces');
  const { straight, paced: chunked } = await alternating(runs, (c) => once(body, c));
  return result(opts.name, percentile(chunked, 50), 'ms', opts.baseline, percentile(straight, 50), opts.notes(body.length, chunked, straight));
}

/**
 * What a new attribute set costs a commit (every hook event of a session the store has not seen opens one: a
 * fleet's first hour, a replayed backlog, a client sending unique values): hook events extracted from the same
 * protobuf batches committed through store.ingest() into one SQLite file opened as `hookwatch serve` opens it,
 * commits of CONCURRENCY / 2 batches taking turns: one with each event under a session of its own, the next with
 * each under one of 10 sessions stored before. CPU per hook event of each, the second the baseline.
 */
/** Warm-up batches of each kind for newSessions, which compares two kinds of commit taking turns in one process. */
const NEW_SESSIONS_WARM_UP = 30;

async function newSessions(batches: number): Promise<BenchResult> {
  const config = toConfig(loadConfig({ flags: {} }));
  const opts = { nearThreshold: config.delivery.nearThreshold, dimensions: config.dimensions };
  const seen = Array.from({ length: 10 }, () => randomUUID());
  const { bodies } = bodiesOf({ encoding: 'protobuf', gzip: false }, 2 * batches + 2 * NEW_SESSIONS_WARM_UP, 0);
  const groups = bodies.map((b, i) => extractHookEvents(decodeLogsProto(b), opts).events.map((e, j) => ({ ...e, sessionId: i % 2 === 0 ? randomUUID() : (seen[j % seen.length] as string) })));
  // Warm-up: both kinds of batch once, which stores the sessions seen before.
  const warm = groups.splice(0, 2 * NEW_SESSIONS_WARM_UP);
  const cpu = { fresh: 0, seen: 0 };
  const events = { fresh: 0, seen: 0 };
  await withStore(config, async (store) => {
    for (const g of warm) await store.ingest(g);
    for (let i = 0; i < groups.length; i += CONCURRENCY) {
      const group = groups.slice(i, i + CONCURRENCY);
      for (const kind of ['fresh', 'seen'] as const) {
        const mine = group.filter((_, j) => (kind === 'fresh') === ((i + j) % 2 === 0));
        const before = process.cpuUsage();
        await Promise.all(mine.map((e) => store.ingest(e)));
        cpu[kind] += cpuMicrosSince(before);
        events[kind] += mine.reduce((n, e) => n + e.length, 0);
      }
    }
  });
  const fresh = cpu.fresh / events.fresh;
  const seenCost = cpu.seen / events.seen;
  return result('store commit, every hook event a new session (SQLite, synchronous=full)', fresh, 'µs/hook event', 'sessions seen before', seenCost,
    `${events.fresh.toLocaleString('en-US')} hook events each opening an attribute set (a session of its own), against ${events.seen.toLocaleString('en-US')} under 10 sessions stored before; store.ingest() as the server opens the store, commits of ${CONCURRENCY / 2} batches of each kind taking turns in one file; a new session's attribute set (and its rows of the rollup per set) costs the difference, ${fmt(fresh - seenCost)} µs`);
}

/** Runs every ingest variant. */
export async function run(opts: BenchOptions): Promise<BenchResult[]> {
  const batches = opts.quick ? 12 : 150;
  warmUpBatches = opts.quick ? QUICK_WARM_UP : WARM_UP;
  const out: BenchResult[] = [];
  let taken: { whole: VariantFigures; none: VariantFigures; evaluation: BenchResult; floor: number } | undefined;
  for (const v of VARIANTS) {
    const f = await runVariant(v, batches);
    out.push(...f.results);
    if (v.encoding !== 'protobuf' || v.gzip) continue;
    // Right after the server they are compared with, so all see about the same machine load.
    const { evaluation, none } = await evaluationShare(batches, f);
    taken = { whole: f, none, evaluation, floor: await httpFloor(batches) };
  }
  if (taken) {
    out.push(...(await breakdown(batches, taken.whole, taken.none, taken.floor)));
    out.push(taken.evaluation);
  }
  // The OTLP/JSON parser thread the OTLP/HTTP receiver would use, started with the first JSON body.
  const thread = new JsonThread({ maxRequestBytes: MAX_REQUEST_BYTES });
  try {
    for (const encoding of ['protobuf', 'json'] as const) out.push(await stall(encoding, opts.quick ? 1 : 3, thread));
    out.push(await recordStall(opts.quick ? 1 : 3, thread));
    for (const encoding of ['protobuf', 'json'] as const) {
      for (const signal of ['metrics', 'traces'] as const) out.push(await passThroughStall(signal, encoding, opts.quick ? 1 : 3, thread));
    }
  } finally {
    await thread.close();
  }
  out.push(await forwardQueueStall(opts.quick ? 1 : 3));
  out.push(await forwardExpiryStall(opts.quick ? 1 : 3));
  out.push(await forwardReplayStall(opts.quick ? 1 : 3));
  out.push(await forwardEvictionStall(opts.quick ? 1 : 3));
  out.push(await newSessions(batches));
  return out;
}

const USAGE = `Usage: node bench/ingest.ts [--quick]

Ingest: records/s and server CPU per record through the OTLP/HTTP receiver into SQLite, beside decoding only.
  --quick               smoke-test sizes (seconds, not minutes)
  --help                this help
`;

if (startedAsScript(import.meta.url)) runStandalone(run, USAGE);
