/**
 * Back-pressure: when batches pile up waiting for the store, new ones get 503 + Retry-After instead of an
 * unbounded queue; a store that cannot write gives 503 too, and nothing is acknowledged that was not committed.
 * A request of more hook events than a normal batch is committed in parts, and acknowledged after the last: next
 * to an in-memory store the parts are seen one by one, and through the service on SQLite a failed part is retried.
 */
import { join } from 'node:path';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { batchTemplate } from '../../../bench/lib/batch.ts';
import { loadConfig, toConfig } from '../config/index.ts';
import { extractHookEvents } from '../hooks/extract.ts';
import type { HookEvent } from '../hooks/model.ts';
import { decodeLogsJson } from '../otlp/decode-json.ts';
import { decodeLogsProto } from '../otlp/decode-proto.ts';
import type { LogsRequest } from '../otlp/model.ts';
import { startService, type RunningService } from '../service.ts';
import { SqliteStore } from '../store/sqlite/index.ts';
import { StoreUnavailableError, type IngestResult, type Store } from '../store/store.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { getJson, postOtlp, tempDir, until } from '../../test/helpers.ts';
import { emitExecutions } from '../../test/support/service.ts';
import type { HoldBackoff } from '../receiver/otlp-grpc/store-hold.ts';
import { HttpDownstream } from '../../test/support/downstream-recorder.ts';
import { grpcFrame, rawGrpcCall, type RawGrpcResult } from '../../test/faults/grpc-raw.ts';
import { HookIngest, ONE_COMMIT_EVENTS } from './hook-ingest.ts';

const tmp = tempDir();
const LOGS_PATH = '/opentelemetry.proto.collector.logs.v1.LogsService/Export';
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
let service: RunningService | undefined;
afterEach(async () => {
  await service?.stop();
  service = undefined;
});
afterAll(() => tmp.cleanup());

function batch(seq: number): string {
  const attrs = { 'event.name': 'hook_execution_complete', hook_event: 'Stop', hook_name: 'Stop', 'session.id': 'bp', 'event.sequence': String(seq), num_hooks: '1', num_success: '1', stdout_chars: '10', num_outputs_persisted: '0' };
  return JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ attributes: Object.entries(attrs).map(([key, v]) => ({ key, value: { stringValue: v } })) }] }] }] });
}

/** The real SQLite store behind a gate the test opens (and shuts again), or a switch that makes writes fail. */
function gatedStore(path: string): { store: Store; open: () => void; shut: () => void; failing: (on: boolean) => void } {
  const real = new SqliteStore({ path });
  let release: () => void = () => {};
  let gate = new Promise<void>((r) => (release = r));
  let fail = false;
  const store = Object.create(real) as Store;
  store.ingest = async (events) => {
    await gate;
    if (fail) throw new StoreUnavailableError('disk is full');
    return real.ingest(events);
  };
  store.close = () => real.close();
  return {
    store,
    open: () => {
      release();
      gate = Promise.resolve();
    },
    shut: () => {
      gate = new Promise<void>((r) => (release = r));
    },
    failing: (on) => {
      fail = on;
    },
  };
}

/**
 * `maxPending`: otlp.maxPendingRequests (2 unless told); `grpcHoldBackoff`: the OTLP/gRPC holds' own; `env`: more
 * settings (forwarding).
 */
async function start(store: Store, opts: { maxPending?: number; grpcHoldBackoff?: HoldBackoff; env?: Record<string, string> } = {}): Promise<RunningService> {
  const config = toConfig(loadConfig({ env: { HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0', HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0', HOOKWATCH_HTTP_ADDR: '127.0.0.1:0', HOOKWATCH_OTLP_MAX_PENDING_REQUESTS: String(opts.maxPending ?? 2), HOOKWATCH_DB: join(tmp.dir, 'unused.db'), ...opts.env } }));
  return startService(config, { logger: silentLogger, store, ...(opts.grpcHoldBackoff ? { grpcHoldBackoff: opts.grpcHoldBackoff } : {}) });
}

describe('back-pressure', () => {
  it('answers 503 with Retry-After past maxPendingRequests, then accepts again', async () => {
    const gated = gatedStore(join(tmp.dir, 'bp.db'));
    service = await start(gated.store);
    const json = { 'content-type': 'application/json' };
    const first = postOtlp(service.otlpHttpUrl, '/v1/logs', batch(1), json);
    const second = postOtlp(service.otlpHttpUrl, '/v1/logs', batch(2), json);
    // Let both reach the store stage before the third arrives.
    await new Promise((r) => setTimeout(r, 200));
    const third = await postOtlp(service.otlpHttpUrl, '/v1/logs', batch(3), json);
    expect(third.status).toBe(503);
    expect(third.headers.get('retry-after')).toBe('1');
    expect(JSON.parse(third.body.toString()).message).toMatch(/waiting for the store/);
    // Refused before decoding: a body that would not even decode gets the same 503, not a 400.
    const undecodable = await postOtlp(service.otlpHttpUrl, '/v1/logs', '{"resourceLogs": 7}', json);
    expect(undecodable.status).toBe(503);
    gated.open();
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    // The client's retry now gets through.
    expect((await postOtlp(service.otlpHttpUrl, '/v1/logs', batch(3), json)).status).toBe(200);
    const { body } = await getJson<{ hooks: { executions: number }[] }>(service.httpUrl, '/api/v1/hooks?from=now-1h&to=now%2B1h');
    expect(body.hooks[0]!.executions).toBe(3);
  });

  it('a store that cannot write gives 503 + Retry-After and acknowledges nothing', async () => {
    const gated = gatedStore(join(tmp.dir, 'full.db'));
    gated.open();
    gated.failing(true);
    service = await start(gated.store);
    const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', batch(1), { 'content-type': 'application/json' });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(JSON.parse(res.body.toString()).message).toMatch(/store cannot take writes/);
    gated.failing(false);
    expect((await postOtlp(service.otlpHttpUrl, '/v1/logs', batch(1), { 'content-type': 'application/json' })).status).toBe(200);
  });

  it('an OpenTelemetry JS exporter outlasts a store unable to write for 6 s within its default 10 s timeout, without hammering', { timeout: 30_000 }, async () => {
    const gated = gatedStore(join(tmp.dir, 'outage.db'));
    gated.open();
    gated.failing(true);
    service = await start(gated.store);
    const before = service.receiver.stats.rejected.store_unavailable ?? 0;
    // The outage outlasts one Retry-After of 5 s: with it the exporter would try at 0 and 5 s, then give up.
    const healed = setTimeout(() => gated.failing(false), 6000);
    try {
      const exporter = await emitExecutions(service.otlpHttpUrl, [{ hookEvent: 'Stop', hookName: 'Stop' }]);
      expect(exporter.codes).toEqual([0]);
    } finally {
      clearTimeout(healed);
    }
    // Tried again every couple of seconds, not in a loop.
    const refused = (service.receiver.stats.rejected.store_unavailable ?? 0) - before;
    expect(refused).toBeGreaterThanOrEqual(3);
    expect(refused).toBeLessThanOrEqual(5);
  });
});

describe('an OTLP/gRPC export held while the store cannot write', () => {
  it('is counted once in what the hook stage received, however often its commit is tried', { timeout: 30_000 }, async () => {
    const gated = gatedStore(join(tmp.dir, 'held.db'));
    gated.open();
    gated.failing(true);
    service = await start(gated.store);
    const running = service;
    const sent = emitExecutions(running.otlpGrpcUrl, [1, 2, 3].map(() => ({ hookEvent: 'Stop', hookName: 'Stop:held' })), {}, { protocol: 'grpc' });
    // Tried, then tried again while held.
    await until('the commit tried three times', () => running.ingest.stats.storeErrors >= 3);
    gated.failing(false);
    expect((await sent).codes).toEqual([0]);
    const metrics = await (await fetch(`${running.httpUrl}/metrics`)).text();
    expect(metrics).toMatch(/^hookwatch_hook_events_stored_total 3$/m);
    expect(metrics).toMatch(/^hookwatch_ingest_batches_total 1$/m);
    expect(metrics).toMatch(/^hookwatch_log_records_received_total\{kind="hook_event"\} 3$/m);
  });

  it('is tried as soon as an OTLP/HTTP request gives up its place for the store, not at the end of its backoff', { timeout: 30_000 }, async () => {
    const gated = gatedStore(join(tmp.dir, 'woken.db'));
    // One batch may wait for the store. The hold's backoff is longer than any hold: an export committed was woken
    // by the place coming free.
    service = await start(gated.store, { maxPending: 1, grpcHoldBackoff: { firstRetryMs: 20_000, maxRetryMs: 20_000 } });
    const running = service;
    let overloaded = 0;
    const admit = running.ingest.admit.bind(running.ingest);
    running.ingest.admit = () => {
      try {
        admit();
      } catch (err) {
        overloaded++;
        throw err;
      }
    };
    // An OTLP/HTTP request takes the place, and waits for the store.
    const http = postOtlp(running.otlpHttpUrl, '/v1/logs', batch(1), { 'content-type': 'application/json' });
    await until('the OTLP/HTTP request waiting for the store', () => running.ingest.stats.batches === 1);
    const sent = emitExecutions(running.otlpGrpcUrl, [{ hookEvent: 'Stop', hookName: 'Stop:woken' }], {}, { protocol: 'grpc' });
    await until('the OTLP/gRPC export refused for the batch waiting, and held', () => overloaded === 1);
    gated.open();
    expect((await http).status).toBe(200);
    const exporter = await sent;
    expect(exporter.codes, `the exporter's errors: ${exporter.errors.join('; ')}`).toEqual([0]);
    expect(running.grpcReceiver.stats.held).toEqual({ committed: 1, unavailable: 0, cancelled: 0, refused: 0 });
    expect(running.ingest.stats.stored).toBe(2);
  });

  it('answers as the try running at the end of its hold ends: committed, it is forwarded once, not again when sent again', { timeout: 30_000 }, async () => {
    const downstream = new HttpDownstream();
    const downstreamUrl = await downstream.start();
    try {
      const gated = gatedStore(join(tmp.dir, 'late.db'));
      gated.open();
      gated.failing(true);
      service = await start(gated.store, { env: { HOOKWATCH_FORWARD_ENDPOINT: downstreamUrl, HOOKWATCH_FORWARD_QUEUE_PATH: join(tmp.dir, 'late-queue.db') } });
      const running = service;
      const forwarding = running.forwarding!;
      const request = batchTemplate(3, 'protobuf').bytes;
      const hookEvents = extractHookEvents(decodeLogsProto(request), { nearThreshold: 8000, dimensions: [] }).events.length;
      const message = grpcFrame(request, false);
      // Held until a second before its 3 s deadline.
      const send = (): Promise<RawGrpcResult> => rawGrpcCall(running.otlpGrpcUrl, LOGS_PATH, message, { headers: { 'grpc-timeout': '3S' }, giveUpMs: 10_000 });
      const sentAt = Date.now();
      const first = send();
      await until('a try failed, the export held', () => running.ingest.stats.storeErrors >= 1);
      // Its next try waits in the store until past the end of the hold, then commits.
      gated.shut();
      gated.failing(false);
      const storeErrors = running.ingest.stats.storeErrors;
      await sleep(sentAt + 2300 - Date.now());
      expect(running.ingest.stats.storeErrors).toBe(storeErrors);
      gated.open();
      const answer = await first;
      // A client that sends a batch answered UNAVAILABLE again (grpc-go's, the OpenTelemetry Collector's).
      const again = answer.code === GrpcStatus.UNAVAILABLE ? await send() : undefined;
      await until('the forwarding queue drained', () => forwarding.queue.depth === 0 && downstream.requests.length > 0);
      // Stored once either way (the events' keys find a batch sent again stored), forwarded once only if answered OK.
      expect(running.ingest.stats.stored).toBe(hookEvents);
      expect(downstream.requests.filter((r) => r.signal === 'logs')).toHaveLength(1);
      expect({ code: answer.code, again: again?.code }).toEqual({ code: GrpcStatus.OK, again: undefined });
      expect(running.grpcReceiver.stats.held).toEqual({ committed: 1, unavailable: 0, cancelled: 0, refused: 0 });
    } finally {
      await downstream.stop();
    }
  });
});

describe('events retention has passed', () => {
  it('are rejected in the partial success, named and counted, not stored again', async () => {
    const store = new SqliteStore({ path: join(tmp.dir, 'expired.db') });
    await store.prune(Date.parse('2026-06-01T00:00:00Z'), Date.parse('2026-01-01T00:00:00Z'));
    service = await start(store);
    const old = JSON.parse(batch(1)) as { resourceLogs: { scopeLogs: { logRecords: { attributes: unknown[] }[] }[] }[] };
    const records = old.resourceLogs[0]!.scopeLogs[0]!.logRecords;
    records[0]!.attributes.push({ key: 'event.timestamp', value: { stringValue: '2026-05-01T10:00:00Z' } });
    // A second old record, and one rejected for its own problem (a count that is not a number).
    records.push({ attributes: [...(records[0]!.attributes as { key: string }[]).filter((a) => a.key !== 'event.sequence'), { key: 'event.sequence', value: { stringValue: '2' } }] });
    records.push({ attributes: [...(records[0]!.attributes as { key: string }[]).filter((a) => a.key !== 'num_success' && a.key !== 'event.sequence'), { key: 'event.sequence', value: { stringValue: '3' } }, { key: 'num_success', value: { stringValue: 'many' } }] });
    const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', JSON.stringify(old), { 'content-type': 'application/json' });
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body.toString()) as { partialSuccess?: { rejectedLogRecords?: number | string; errorMessage?: string } };
    expect(Number(body.partialSuccess?.rejectedLogRecords)).toBe(3);
    expect(body.partialSuccess?.errorMessage).toMatch(/^3 hook record\(s\) rejected: 2 older than retention\.events keeps \(stamped before \d{4}-\d\d-\d\dT[\d:.]+Z\); [^;]*num_success[^;]*$/);
    expect(body.partialSuccess?.errorMessage).not.toContain('more)');
    const metrics = await (await fetch(`${service.httpUrl}/metrics`)).text();
    expect(metrics).toMatch(/^hookwatch_hook_events_expired_total 2$/m);
    expect(metrics).toMatch(/^hookwatch_hook_events_stored_total 0$/m);
  });
});


/** One request of `n` hook executions, each of its own sequence number. */
function large(n: number): string {
  const one = JSON.parse(batch(0)) as { resourceLogs: { scopeLogs: { logRecords: { attributes: { key: string; value: { stringValue: string } }[] }[] }[] }[] };
  const [record] = one.resourceLogs[0]!.scopeLogs[0]!.logRecords;
  one.resourceLogs[0]!.scopeLogs[0]!.logRecords = Array.from({ length: n }, (_, i) => ({
    attributes: record!.attributes.map((a) => (a.key === 'event.sequence' ? { key: a.key, value: { stringValue: String(i) } } : a)),
  }));
  return JSON.stringify(one);
}

describe('a request of more hook events than one commit takes, next to the store', () => {
  const NOW = Date.parse('2026-06-01T12:00:00Z');
  const RAW = { signal: 'logs', body: Buffer.alloc(0), encoding: 'json', receivedAtMs: NOW } as const;

  /**
   * An in-memory store, the stage next to the hook stage: keeps the events of each ingest() call and answers each
   * (every event new) when the test lets it, or at once with `answerAtOnce`.
   */
  function heldStore(answerAtOnce = false): { store: Store; calls: HookEvent[][]; answer: (call: number) => void } {
    const calls: HookEvent[][] = [];
    const answers: (() => void)[] = [];
    const store = {
      maxHooks: 1000,
      ingest: (events: HookEvent[]) => new Promise<IngestResult>((resolve) => {
        calls.push([...events]);
        answers.push(() => resolve({ inserted: events, duplicates: 0 }));
        if (answerAtOnce) answers.at(-1)?.();
      }),
    } as unknown as Store;
    return { store, calls, answer: (call) => answers[call]?.() };
  }

  function hookStage(store: Store): { ingest: HookIngest; told: string[][] } {
    const ingest = new HookIngest({ store, nearThreshold: 8000, dimensions: [], maxPending: 2, logger: silentLogger, now: () => NOW });
    const told: string[][] = [];
    ingest.addListener({ onIngested: (events) => told.push(events.map((e) => e.dedupKey)) });
    return { ingest, told };
  }

  const keysOf = (req: LogsRequest): string[] => extractHookEvents(req, { nearThreshold: 8000, dimensions: [], now: () => NOW }).events.map((e) => e.dedupKey);

  it('commits it in parts, in order, each event once; tells the listeners each part once committed; resolves after the last', async () => {
    const req = decodeLogsJson(large(5 * ONE_COMMIT_EVENTS));
    const expected = keysOf(req);
    const held = heldStore();
    const { ingest, told } = hookStage(held.store);
    let resolved = false;
    const done = ingest.consumeLogs(req, RAW).finally(() => {
      resolved = true;
    });
    let answered = 0;
    while (!resolved) {
      await until(`part ${answered} sent to the store, or the request done`, () => held.calls.length > answered || resolved);
      if (resolved) break;
      // One part at a time; the listeners told of each part committed before, of this one not until it is.
      expect(held.calls).toHaveLength(answered + 1);
      expect(told).toHaveLength(answered);
      held.answer(answered++);
    }
    // Done only once every part was committed.
    expect(held.calls).toHaveLength(answered);
    expect((await done).rejected).toBe(0);
    expect(held.calls.length).toBeGreaterThan(2);
    expect(held.calls.flat().map((e) => e.dedupKey)).toEqual(expected);
    expect(told).toEqual(held.calls.map((c) => c.map((e) => e.dedupKey)));
    expect(ingest.stats.stored).toBe(expected.length);
  });

  it('commits a Claude Code batch of 512 records in one ingest call', async () => {
    const held = heldStore(true);
    const { ingest, told } = hookStage(held.store);
    const req = decodeLogsProto(batchTemplate(512, 'protobuf').bytes);
    await ingest.consumeLogs(req, RAW);
    expect(held.calls.map((c) => c.map((e) => e.dedupKey))).toEqual([keysOf(req)]);
    expect(told).toHaveLength(1);
  });
});

describe('a request of more hook events than one commit takes', () => {
  /** The real SQLite store, noting the size of each ingest() call; the call numbered `failing.at` fails. */
  function partsStore(path: string, failing = { at: 0 }): { store: Store; parts: number[] } {
    const real = new SqliteStore({ path });
    const parts: number[] = [];
    const store = Object.create(real) as Store;
    store.ingest = async (events) => {
      parts.push(events.length);
      if (parts.length === failing.at) throw new StoreUnavailableError('disk is full');
      return real.ingest(events);
    };
    store.close = () => real.close();
    return { store, parts };
  }

  it('is committed in parts, answered 200 after the last; a part that fails is retried without storing any event twice', async () => {
    const failing = { at: 2 };
    const { store, parts } = partsStore(join(tmp.dir, 'parts.db'), failing);
    service = await start(store);
    const body = large(2000);
    const json = { 'content-type': 'application/json' };
    expect((await postOtlp(service.otlpHttpUrl, '/v1/logs', body, json)).status).toBe(503);
    // The first part was committed before the second failed.
    expect(parts.length).toBe(2);
    const committed = parts[0] ?? 0;
    expect(committed).toBeLessThan(2000);
    failing.at = 0;
    parts.length = 0;
    expect((await postOtlp(service.otlpHttpUrl, '/v1/logs', body, json)).status).toBe(200);
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.reduce((a, b) => a + b, 0)).toBe(2000);
    const metrics = await (await fetch(`${service.httpUrl}/metrics`)).text();
    expect(metrics).toMatch(/^hookwatch_hook_events_stored_total 2000$/m);
    expect(metrics).toMatch(new RegExp(`^hookwatch_hook_events_duplicate_total ${committed}$`, 'm'));
  });

  it('takes a request of a normal batch size in one commit', async () => {
    const { store, parts } = partsStore(join(tmp.dir, 'one.db'));
    service = await start(store);
    expect((await postOtlp(service.otlpHttpUrl, '/v1/logs', large(1000), { 'content-type': 'application/json' })).status).toBe(200);
    expect(parts).toEqual([1000]);
  });
});
