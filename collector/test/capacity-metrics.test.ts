/**
 * How big the store is and whether retention keeps up, as /metrics shows it to whoever sizes and runs hookwatch:
 * a real hookwatch (SQLite, and PostgreSQL on a throwaway cluster) fed by the real OTLP exporter, /metrics
 * scraped over HTTP, retention run on a controlled clock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, startTestService, type TestService } from './helpers.ts';
import { parseExposition, sampleValue, scrapeMetrics, type ParsedFamily } from './support/prometheus-text.ts';
import { emitExecutions, type SyntheticExecution } from './support/service.ts';
import { HttpDownstream } from './support/downstream-recorder.ts';
import { useTestServer } from './support/postgres/fixture.ts';
import { MetricsRegistry } from '../src/telemetry/metrics.ts';
import { Retention, registerRetentionMetrics } from '../src/store/retention.ts';
import { registerStoreSizeMetrics } from '../src/store/metrics.ts';
import { silentLogger, type Logger } from '../src/telemetry/logger.ts';
import { NotLeaderError, type Store } from '../src/store/store.ts';
import { PostgresStore } from '../src/store/postgres/index.ts';
import { recordingLogger } from './support/recording-logger.ts';

const DAY = 86_400_000;

const services: TestService[] = [];
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of services.splice(0)) await s.close();
  for (const c of closers.splice(0)) await c();
});

/** The families of /metrics at `base` (scrapeMetrics). */
async function scrape(base: string): Promise<Map<string, ParsedFamily>> {
  return (await scrapeMetrics(base)).families;
}

function parts(families: Map<string, ParsedFamily>): Record<string, number> {
  return Object.fromEntries((families.get('hookwatch_store_size_bytes')?.samples ?? []).map((s) => [s.labels['part'], s.value]));
}

const total = (p: Record<string, number>): number => Object.values(p).reduce((a, b) => a + b, 0);

/** `n` executions of a few hooks, with sizes, as Claude Code reports them. */
function executions(n: number): SyntheticExecution[] {
  return Array.from({ length: n }, (_, i) => ({ hookEvent: 'PostToolUse', hookName: `PostToolUse:tool-${i % 7}`, additionalContextChars: 500 + i, stdoutChars: 1200 + i, outputsPersisted: i % 3 === 0 ? 1 : 0 }));
}

describe('store size and retention in /metrics (SQLite)', () => {
  it('shows the database and WAL files growing with ingest, the forward queue file, and retention removing old events', async () => {
    const downstream = new HttpDownstream();
    const forwardUrl = await downstream.start();
    closers.push(() => downstream.stop());
    let clock = Date.now();
    const service = await startTestService({ HOOKWATCH_FORWARD_ENDPOINT: forwardUrl, HOOKWATCH_FORWARD_COMPRESSION: 'none' }, { now: () => clock });
    services.push(service);
    // The run at start-up, on an empty store: a success that removed nothing.
    const started = await eventually('the first retention run', async () => {
      const f = await scrape(service.httpUrl);
      return sampleValue(f, 'hookwatch_retention_runs_total', { outcome: 'success' }) === 1 ? f : undefined;
    }, 15_000);
    expect(sampleValue(started, 'hookwatch_retention_runs_total', { outcome: 'failure' })).toBe(0);
    expect(sampleValue(started, 'hookwatch_retention_last_success_timestamp_seconds')).toBe(clock / 1000);
    expect(sampleValue(started, 'hookwatch_retention_removed_total', { kind: 'events' })).toBe(0);
    // A SQLite store has no partitions: no series rather than a 0 that would mean "none dropped".
    expect(sampleValue(started, 'hookwatch_retention_removed_total', { kind: 'partitions' })).toBeUndefined();
    const before = parts(started);
    expect(Object.keys(before).sort()).toEqual(['database', 'wal']);
    expect(before['database']).toBeGreaterThan(0);

    await emitExecutions(service.otlpHttpUrl, executions(2000));
    const after = await scrape(service.httpUrl);
    expect(sampleValue(after, 'hookwatch_hook_events_stored_total')).toBe(2000);
    expect(total(parts(after))).toBeGreaterThan(total(before));
    expect(sampleValue(after, 'hookwatch_forward_queue_file_bytes')).toBeGreaterThan(0);

    // A month and a day later, the next run removes every event; the rollups stay (retention.rollups).
    clock += 31 * DAY;
    await service.retention.run();
    const pruned = await scrape(service.httpUrl);
    expect(sampleValue(pruned, 'hookwatch_retention_runs_total', { outcome: 'success' })).toBe(2);
    expect(sampleValue(pruned, 'hookwatch_retention_removed_total', { kind: 'events' })).toBe(2000);
    expect(sampleValue(pruned, 'hookwatch_retention_removed_total', { kind: 'hooks' })).toBe(0);
    expect(sampleValue(pruned, 'hookwatch_retention_last_success_timestamp_seconds')).toBe(clock / 1000);
  });
});

describe('store size and retention in /metrics (PostgreSQL)', () => {
  const pg = useTestServer();

  it('shows the size of events, rollups and the rest from a periodic query, and the partitions retention drops', async () => {
    let clock = Date.now();
    const url = await pg.server().createDatabase();
    // Retention reckons by the database's clock, shared by the replicas: moved on with the service's.
    const store = await PostgresStore.open({ url });
    store.clockMs = () => Promise.resolve(clock);
    const service = await startTestService({ HOOKWATCH_DB: url }, { now: () => clock, storeSizeRefreshMs: 200, store });
    services.push(service);
    const before = await eventually('the first size read', async () => {
      const p = parts(await scrape(service.httpUrl));
      return Object.keys(p).length ? p : undefined;
    }, 15_000);
    expect(Object.keys(before).sort()).toEqual(['events', 'other', 'rollups']);

    await emitExecutions(service.otlpHttpUrl, executions(2000));
    // Read again within the refresh period, not at the scrape: grows once the next read has run.
    const grown = await eventually('the events to take more room', async () => {
      const p = parts(await scrape(service.httpUrl));
      return (p['events'] ?? 0) > (before['events'] ?? 0) && (p['rollups'] ?? 0) > (before['rollups'] ?? 0) ? p : undefined;
    }, 15_000);
    expect(total(grown)).toBeGreaterThan(total(before));

    // The runs at start (and on becoming leader) are over, or this one waits for them: none is under way when the
    // clock moves on, and the next run is the test's own.
    await service.retention.run();
    const runsBefore = sampleValue(await scrape(service.httpUrl), 'hookwatch_retention_runs_total', { outcome: 'success' });
    expect(runsBefore).toBeGreaterThanOrEqual(1);
    clock += 31 * DAY;
    await service.retention.run();
    const f = await scrape(service.httpUrl);
    expect(sampleValue(f, 'hookwatch_retention_runs_total', { outcome: 'success' })).toBe((runsBefore ?? 0) + 1);
    expect(sampleValue(f, 'hookwatch_retention_removed_total', { kind: 'events' })).toBe(2000);
    expect(sampleValue(f, 'hookwatch_retention_removed_total', { kind: 'partitions' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(f, 'hookwatch_retention_last_success_timestamp_seconds')).toBe(clock / 1000);
    // The dropped partitions are gone from the next size read.
    await eventually('the events to take less room', async () => {
      const p = parts(await scrape(service.httpUrl));
      return (p['events'] ?? Infinity) < (grown['events'] ?? 0) ? p : undefined;
    }, 15_000);
  });
});

/** A store whose retention and size reads fail or answer as told: the stage next to the retention runner. */
function storeNextDoor(opts: { pruneFails?: boolean; leaseMoves?: boolean; partitionsDeferred?: number; sizes?: (() => Promise<Record<string, number>>); pruneUntil?: Promise<void> } = {}): Store & { pruned: number } {
  const store = {
    kind: 'postgres',
    pruned: 0,
    async prune() {
      this.pruned++;
      await opts.pruneUntil;
      if (opts.pruneFails) throw new Error('retention failed: canceling statement due to lock timeout');
      // What the lease fence throws at the next batch of a run whose leader lost the lease meanwhile.
      if (opts.leaseMoves) throw new NotLeaderError('the leader lease moved to another replica: retention stopped');
      return { events: 5, rollups: 2, hooks: 1, guardTrims: 4, partitions: 1, ...(opts.partitionsDeferred ? { partitionsDeferred: opts.partitionsDeferred } : {}) };
    },
    async pruneTranscriptFindings() {
      return 3;
    },
    ...(opts.sizes ? { diskUsage: opts.sizes } : {}),
  };
  return store as unknown as Store & { pruned: number };
}

/** One run of retention over `store` by the leader, on the clock at `nowMs`, and /metrics after it. */
async function metricsAfterRun(store: Store, opts: { logger?: Logger; nowMs?: number } = {}): Promise<Map<string, ParsedFamily>> {
  const metrics = new MetricsRegistry();
  const retention = new Retention({ store, eventsMs: 30 * DAY, rollupsMs: 400 * DAY, isLeader: () => true, logger: opts.logger ?? silentLogger, now: () => opts.nowMs ?? 40 * DAY });
  registerRetentionMetrics(metrics, retention, store.kind);
  await retention.run();
  return parseExposition(await metrics.render());
}

describe('retention metrics', () => {
  it('count a failed run as a failure, and leave the last success absent when none succeeded', async () => {
    const f = await metricsAfterRun(storeNextDoor({ pruneFails: true }), { nowMs: 1_000_000 });
    expect(sampleValue(f, 'hookwatch_retention_runs_total', { outcome: 'failure' })).toBe(1);
    expect(sampleValue(f, 'hookwatch_retention_runs_total', { outcome: 'success' })).toBe(0);
    expect(sampleValue(f, 'hookwatch_retention_last_success_timestamp_seconds')).toBeUndefined();
  });

  it('count a run stopped because the lease moved as not_leader, not as a failure, and say leadership moved', async () => {
    const { logger, lines } = recordingLogger();
    const f = await metricsAfterRun(storeNextDoor({ leaseMoves: true }), { logger });
    expect(sampleValue(f, 'hookwatch_retention_runs_total', { outcome: 'not_leader' })).toBe(1);
    expect(sampleValue(f, 'hookwatch_retention_runs_total', { outcome: 'failure' })).toBe(0);
    expect(sampleValue(f, 'hookwatch_retention_runs_total', { outcome: 'success' })).toBe(0);
    expect(sampleValue(f, 'hookwatch_retention_last_success_timestamp_seconds')).toBeUndefined();
    expect(lines.filter((l) => l.msg.startsWith('retention run failed'))).toEqual([]);
    expect(lines.map((l) => `${l.level} ${l.msg}`)).toEqual([expect.stringMatching(/^warn retention run stopped: leadership moved to another replica /)]);
  });

  it('count a run that left old days to the next one as deferred, not as a success', async () => {
    const f = await metricsAfterRun(storeNextDoor({ partitionsDeferred: 2 }));
    expect(sampleValue(f, 'hookwatch_retention_runs_total', { outcome: 'deferred' })).toBe(1);
    expect(sampleValue(f, 'hookwatch_retention_runs_total', { outcome: 'success' })).toBe(0);
    expect(sampleValue(f, 'hookwatch_retention_runs_total', { outcome: 'failure' })).toBe(0);
    // The days it left are still stored: the age of the last success keeps growing until a run drops them.
    expect(sampleValue(f, 'hookwatch_retention_last_success_timestamp_seconds')).toBeUndefined();
    // What it did remove is counted.
    expect(sampleValue(f, 'hookwatch_retention_removed_total', { kind: 'rollups' })).toBe(2);
  });

  it('move nothing on a follower: only the leader runs retention, while every replica expires its forward queue', async () => {
    const metrics = new MetricsRegistry();
    const store = storeNextDoor();
    let leader = false;
    const expired: number[] = [];
    const retention = new Retention({ store, eventsMs: 30 * DAY, rollupsMs: 400 * DAY, isLeader: () => leader, expireForwarded: async (b) => expired.push(b), logger: silentLogger, now: () => 40 * DAY });
    registerRetentionMetrics(metrics, retention, store.kind);
    await retention.run();
    let f = parseExposition(await metrics.render());
    expect(store.pruned).toBe(0);
    expect(expired).toEqual([10 * DAY]);
    expect(sampleValue(f, 'hookwatch_retention_runs_total', { outcome: 'success' })).toBe(0);
    expect(sampleValue(f, 'hookwatch_retention_removed_total', { kind: 'partitions' })).toBe(0);
    expect(sampleValue(f, 'hookwatch_retention_last_success_timestamp_seconds')).toBeUndefined();
    leader = true;
    await Promise.all([retention.run(), retention.run()]);
    f = parseExposition(await metrics.render());
    // Two calls during one run are one run.
    expect(store.pruned).toBe(1);
    expect(sampleValue(f, 'hookwatch_retention_runs_total', { outcome: 'success' })).toBe(1);
    expect(sampleValue(f, 'hookwatch_retention_last_success_timestamp_seconds')).toBe(40 * 86_400);
    expect(Object.fromEntries((f.get('hookwatch_retention_removed_total')?.samples ?? []).map((s) => [s.labels['kind'], s.value]))).toEqual({ events: 5, rollups: 2, hooks: 1, transcript_findings: 3, guard_trims: 4, partitions: 1 });
  });
});

describe('retention stop', () => {
  it('waits for the batch under way, counts the run as stopped and starts none after it (a replica handing its lease back)', async () => {
    let release = (): void => {};
    const store = storeNextDoor({ pruneUntil: new Promise<void>((r) => (release = r)) });
    const metrics = new MetricsRegistry();
    const retention = new Retention({ store, eventsMs: 30 * DAY, rollupsMs: 400 * DAY, isLeader: () => true, logger: silentLogger, now: () => 40 * DAY });
    registerRetentionMetrics(metrics, retention, store.kind);
    void retention.run();
    // Stopped once the store is deleting: a batch it does not end at once (the store ignores the signal).
    while (store.pruned === 0) await new Promise((r) => setImmediate(r));
    let stopped = false;
    const stopping = retention.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(stopped).toBe(false);
    release();
    await stopping;
    // Neither a success (the findings were left) nor a failure; what it deleted is counted.
    const f = parseExposition(await metrics.render());
    expect(Object.fromEntries((f.get('hookwatch_retention_runs_total')?.samples ?? []).map((s) => [s.labels['outcome'], s.value]))).toEqual({ success: 0, failure: 0, deferred: 0, not_leader: 0, stopped: 1 });
    expect(sampleValue(f, 'hookwatch_retention_removed_total', { kind: 'events' })).toBe(5);
    expect(sampleValue(f, 'hookwatch_retention_removed_total', { kind: 'transcript_findings' })).toBe(0);
    await retention.run();
    expect(store.pruned).toBe(1);
  });
});

describe('store size metrics', () => {
  it('read a database server at most once per refresh period, one read at a time, however often scraped', async () => {
    let reads = 0;
    let release: (() => void) | undefined;
    const store = storeNextDoor({
      sizes: () => {
        reads++;
        return new Promise((resolve) => {
          release = () => resolve({ events: 100 * reads, rollups: 10, other: 1 });
        });
      },
    });
    let t = 0;
    const metrics = new MetricsRegistry();
    registerStoreSizeMetrics(metrics, store, { refreshMs: 60_000, now: () => t });
    // The first read is under way: scrapes neither wait for it nor start another, and show nothing yet.
    for (let i = 0; i < 5; i++) expect(parts(parseExposition(await metrics.render()))).toEqual({});
    expect(reads).toBe(1);
    release?.();
    await new Promise((r) => setImmediate(r));
    expect(parts(parseExposition(await metrics.render()))).toEqual({ events: 100, rollups: 10, other: 1 });
    t = 60_000;
    // Past the period: the scrape starts one read and shows the last value until it answers.
    for (let i = 0; i < 5; i++) expect(parts(parseExposition(await metrics.render()))['events']).toBe(100);
    expect(reads).toBe(2);
    release?.();
    await new Promise((r) => setImmediate(r));
    expect(parts(parseExposition(await metrics.render()))['events']).toBe(200);
  });

  it('leave the size out, and count the collector failing, when the read fails', async () => {
    let fail = false;
    const store = storeNextDoor({ sizes: () => (fail ? Promise.reject(new Error('store query failed: connection terminated')) : Promise.resolve({ events: 1, rollups: 1, other: 1 })) });
    const metrics = new MetricsRegistry();
    let t = 0;
    registerStoreSizeMetrics(metrics, store, { refreshMs: 1000, now: () => t });
    await new Promise((r) => setImmediate(r));
    expect(total(parts(parseExposition(await metrics.render())))).toBe(3);
    fail = true;
    t = 1000;
    await metrics.render();
    await new Promise((r) => setImmediate(r));
    const f = parseExposition(await metrics.render());
    expect(parts(f)).toEqual({});
    expect(sampleValue(f, 'hookwatch_metrics_collector_errors_total', { collector: 'store_size' })).toBeGreaterThanOrEqual(1);
  });

  it('read again at the next scrape after a failed read, each failure reported once: the warnings stop as soon as a read succeeds', async () => {
    let fail = true;
    let reads = 0;
    const store = storeNextDoor({ sizes: () => (reads++, fail ? Promise.reject(new Error('store query failed: connect ECONNREFUSED')) : Promise.resolve({ events: 1, rollups: 1, other: 1 })) });
    const { logger, lines } = recordingLogger();
    const metrics = new MetricsRegistry({ logger });
    let t = 0;
    // A database server, read once a minute: the database is down when the first read is made.
    registerStoreSizeMetrics(metrics, store, { refreshMs: 60_000, now: () => t });
    const scrape = async (): Promise<Map<string, ParsedFamily>> => {
      const f = parseExposition(await metrics.render());
      await new Promise((r) => setImmediate(r));
      return f;
    };
    await new Promise((r) => setImmediate(r));
    const warnings = (): number => lines.filter((l) => l.msg.startsWith('metrics collector failed')).length;
    expect(parts(await scrape())).toEqual({});
    expect(warnings()).toBe(1);
    // The database answers again, seconds later (15 s scrapes), well within the minute.
    fail = false;
    const after: Record<string, number>[] = [];
    for (let i = 1; i <= 4; i++) {
      t = i * 15_000;
      after.push(parts(await scrape()));
    }
    // The read made while it was down is reported at most once more; then the sizes, and no warning.
    expect(after.at(-1)).toEqual({ events: 1, rollups: 1, other: 1 });
    expect(warnings()).toBeLessThanOrEqual(2);
    const settled = warnings();
    for (let i = 5; i <= 8; i++) {
      t = i * 15_000;
      await scrape();
    }
    expect(warnings()).toBe(settled);
    // Back to one read a minute once it succeeds.
    expect(reads).toBeLessThanOrEqual(5);
  });
});
