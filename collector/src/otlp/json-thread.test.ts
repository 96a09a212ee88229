/**
 * The OTLP/JSON parser thread (json-thread.ts) gives what the event loop's own parse gives: the same logs model
 * (taken in on the event loop in slices, one fragment each), charged the same to the request's DecodeBudget, and
 * the same refusals (a DecodeError naming the JSON path, DecodeLimitError at the same bound). A worker that fails
 * fails only the body it holds, and the next body is parsed by a new one; stopping it fails what it holds with 503.
 * An idle worker is stopped: it would keep the garbage of its last parse (some four times the body) for good.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { isDeepStrictEqual } from 'node:util';
import type { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_REQUEST_BYTES, maxSizePassThrough, maxSizeRequest } from '../../../bench/lib/batch.ts';
import type { PacedSteps } from '../paced.ts';
import { OverloadedError } from '../pipeline/errors.ts';
import { decodeLogsJson } from './decode-json.ts';
import { JsonThread } from './json-thread.ts';
import { DECODE_SLICE_BYTES, DecodeBudget, DecodeError, DecodeLimitError, unbounded } from './model.ts';
import { checkOtlpJson } from './validate.ts';

/** What `steps` returned or threw, and how often it paused on the event loop (not counting waits for the thread). */
async function run<T>(steps: PacedSteps<T>): Promise<{ value?: T; err?: unknown; pauses: number }> {
  let pauses = 0;
  try {
    for (;;) {
      const s = steps.next();
      if (s.done) return { value: s.value, pauses };
      if (s.value) await s.value;
      else pauses++;
    }
  } catch (err) {
    return { err, pauses };
  }
}

/** The error `work` throws on the event loop. */
function thrown(work: () => unknown): unknown {
  try {
    work();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

const MIB = 1024 * 1024;
const thread = new JsonThread({ maxRequestBytes: MAX_REQUEST_BYTES });
afterAll(() => thread.close());

describe('the OTLP/JSON parser thread', () => {
  it('decodes a maximum-size logs body to the model the event loop decodes, charged the same, taken in slice by slice', async () => {
    const { body, records } = maxSizeRequest('json');
    const bound = unbounded();
    const r = await run(thread.decodeLogsSteps(body, bound));
    const inline = unbounded();
    const expected = decodeLogsJson(body.toString('utf8'), inline);
    expect(r.err).toBeUndefined();
    expect(isDeepStrictEqual(r.value, expected)).toBe(true);
    expect(r.value?.resourceLogs.flatMap((rl) => rl.scopeLogs.flatMap((sl) => sl.logRecords))).toHaveLength(records);
    expect(bound.bytes).toBe(inline.bytes);
    // One fragment of about DECODE_SLICE_BYTES per pause (a record's nested values aside).
    expect(r.pauses).toBeGreaterThanOrEqual(Math.floor(inline.bytes / (2 * DECODE_SLICE_BYTES)));
    expect(r.pauses).toBeLessThanOrEqual(Math.ceil(inline.bytes / DECODE_SLICE_BYTES));
  });

  it('keeps every kind of value, empty scopes and resources as decoded on the event loop', async () => {
    const text = JSON.stringify({
      resourceLogs: [
        { resource: { attributes: [{ key: 'service.name', value: { stringValue: 'x' } }] } },
        { scopeLogs: [{ scope: { name: 's', version: '1' } }, { logRecords: [{}] }] },
        { resource_logs_ignored: 1, scope_logs: [{ log_records: [{
          time_unix_nano: '18446744073709551615', eventName: 'e', body: { kvlistValue: { values: [{ key: 'k', value: { bytesValue: 'AAE=' } }] } },
          attributes: [
            { key: 'i', value: { intValue: '9223372036854775807' } }, { key: 'd', value: { doubleValue: 'NaN' } }, { key: 'b', value: { boolValue: false } },
            { key: 'a', value: { arrayValue: { values: [{ intValue: 1 }, {}] } } }, { key: 'n' }, { key: 'i', value: { stringValue: 'later wins' } },
          ],
        }] }] },
      ],
    });
    const r = await run(thread.decodeLogsSteps(Buffer.from(text), unbounded()));
    expect(isDeepStrictEqual(r.value, decodeLogsJson(text))).toBe(true);
  });

  it('refuses logs as the event loop does: the same message naming the JSON path, the same bound', async () => {
    for (const text of ['{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":-1}]}]}]}', '{"resourceLogs":', '[]', `{"resourceLogs":[{"scopeLogs":[{"logRecords":[${Array(2000).fill('{}').join(',')}]}]}]}`]) {
      const r = await run(thread.decodeLogsSteps(Buffer.from(text), new DecodeBudget(100_000)));
      const expected = thrown(() => decodeLogsJson(text, new DecodeBudget(100_000)));
      expect(r.err).toBeInstanceOf((expected as Error).constructor);
      expect(r.err).toEqual(expected);
      if (expected instanceof DecodeLimitError) expect((r.err as DecodeLimitError).limitBytes).toBe(100_000);
      else expect(expected).toBeInstanceOf(DecodeError);
    }
  });

  it('checks metrics and traces as the event loop does: accepted, or refused with the same message', async () => {
    const cases = [
      ['metrics', '{"resourceMetrics":[{"resource":{},"scopeMetrics":[{"scope":{},"metrics":[{}]}]}]}'],
      ['traces', '{"resource_spans":[{"scope_spans":[{"spans":[]}]}]}'],
      ['metrics', '{"resourceMetrics":[{"scopeMetrics":[{"metrics":[1]}]}]}'],
      ['traces', '{"resourceSpans":[{"resource":[]}]}'],
      ['traces', '{"resourceSpans":[{"scopeSpans":[{"spans":[]}]}]'],
      ['metrics', 'null'],
      ['metrics', `{"resourceMetrics":[${Array(5000).fill('{}').join(',')}]}`],
    ] as const;
    for (const [signal, text] of cases) {
      const r = await run(thread.checkSteps(signal, Buffer.from(text), new DecodeBudget(100_000)));
      let expected: unknown;
      try {
        checkOtlpJson(signal, text, new DecodeBudget(100_000));
      } catch (err) {
        expected = err;
      }
      expect(r.err, text).toEqual(expected);
      if (expected) expect(r.err).toBeInstanceOf((expected as Error).constructor);
    }
  });

  it('a worker that fails fails only its body, with an error naming the thread; the next body gets a new worker', async () => {
    // A heap too small for the parse of a maximum-size body: the worker runs out of memory.
    const small = new JsonThread({ maxRequestBytes: MAX_REQUEST_BYTES, resourceLimits: { maxOldGenerationSizeMb: 24, maxYoungGenerationSizeMb: 4 } });
    try {
      const [failed, next] = await Promise.all([
        run(small.decodeLogsSteps(maxSizeRequest('json').body, unbounded())),
        run(small.checkSteps('traces', Buffer.from('{"resourceSpans":[]}'), unbounded())),
      ]);
      expect(failed.err).toBeInstanceOf(Error);
      // Stopped by its own heap bound (ERR_WORKER_OUT_OF_MEMORY): this process goes on.
      expect((failed.err as Error).message).toBe('the OTLP/JSON parser thread failed: Worker terminated due to reaching memory limit: JS heap out of memory');
      expect(next).toEqual({ value: undefined, pauses: 0 });
    } finally {
      await small.close();
    }
  });

  it('bounds its worker\'s heap by otlp.maxRequestBytes, with room for the costliest body of that size', { timeout: 120_000 }, async () => {
    const started: Worker[] = [];
    const onWorker = (m: unknown): void => {
      started.push((m as { worker: Worker }).worker);
    };
    subscribe('worker_threads', onWorker);
    // Its parse takes seconds, more on a loaded machine: the bound is what this is about, not the time. Both
    // workers are kept until their heaps are read.
    const large = new JsonThread({ maxRequestBytes: MAX_REQUEST_BYTES, timeoutMs: 60_000, idleMs: 60_000 });
    const small = new JsonThread({ maxRequestBytes: 1024 * 1024, idleMs: 60_000 });
    const records = '{"timeUnixNano":"1","body":{"stringValue":"x"}}';
    // The smallest records the decode bound admits, otlp.maxRequestBytes of them: the most the parse holds.
    const costly = Buffer.from(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[${Array(Math.floor((MAX_REQUEST_BYTES - 100) / (records.length + 1))).fill(records).join(',')}]}]}]}`);
    try {
      const r = await run(large.decodeLogsSteps(costly, new DecodeBudget(128 * MIB)));
      expect(r.err).toBeUndefined();
      expect(r.value?.resourceLogs[0]?.scopeLogs[0]?.logRecords.length).toBe(Math.floor((MAX_REQUEST_BYTES - 100) / (records.length + 1)));
      expect(await run(small.checkSteps('traces', Buffer.from('{"resourceSpans":[]}'), unbounded()))).toEqual({ value: undefined, pauses: 0 });
      // The worker of each, as it runs: twelve times the largest body of old space (at least 64 MiB), and the
      // young generation's 24 MiB (as V8 counts WORKER_YOUNG_GENERATION_MB).
      expect(started).toHaveLength(2);
      const limits = await Promise.all(started.map(async (w) => (await w.getHeapStatistics()).heap_size_limit));
      expect(limits).toEqual([12 * MAX_REQUEST_BYTES + 24 * MIB, (64 + 24) * MIB]);
      expect(large.resourceLimits).toEqual({ maxOldGenerationSizeMb: (12 * MAX_REQUEST_BYTES) / MIB, maxYoungGenerationSizeMb: 16 });
    } finally {
      unsubscribe('worker_threads', onWorker);
      await large.close();
      await small.close();
    }
  });

  it('stopped, fails the body it holds with 503 (retry), and starts again for the next one', async () => {
    const stopping = new JsonThread({ maxRequestBytes: MAX_REQUEST_BYTES });
    const held = run(stopping.checkSteps('metrics', maxSizeRequest('json').body, unbounded()));
    // The body is sent to the worker on the first step, which run() takes synchronously.
    await stopping.close();
    const r = await held;
    expect(r.err).toBeInstanceOf(OverloadedError);
    expect((r.err as Error).message).toBe('the OTLP/JSON parser thread was stopped (hookwatch is stopping); retry later');
    expect(await run(stopping.checkSteps('metrics', Buffer.from('{}'), unbounded()))).toEqual({ value: undefined, pauses: 0 });
    await stopping.close();
  });

  it('stops its worker once idle, with the heap of its last parse, and starts a new one for the next body', async () => {
    const started: Worker[] = [];
    const onWorker = (m: unknown): void => {
      started.push((m as { worker: Worker }).worker);
    };
    subscribe('worker_threads', onWorker);
    const idle = new JsonThread({ maxRequestBytes: MAX_REQUEST_BYTES, idleMs: 200 });
    try {
      expect(await run(idle.checkSteps('traces', maxSizePassThrough('traces', MAX_REQUEST_BYTES, 'json').body, unbounded()))).toEqual({ value: undefined, pauses: 0 });
      expect(started).toHaveLength(1);
      const first = started[0]!;
      // Idle, it never collects what the parse left: gone with it, not kept until the next large body.
      const exited = await Promise.race([
        new Promise<boolean>((resolve) => first.once('exit', () => resolve(true))),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5_000)),
      ]);
      expect(exited).toBe(true);
      expect(await run(idle.checkSteps('metrics', Buffer.from(`{"resourceMetrics":[],"x":"${'x'.repeat(2 * 1024 * 1024)}"}`), unbounded()))).toEqual({ value: undefined, pauses: 0 });
      expect(started).toHaveLength(2);
    } finally {
      unsubscribe('worker_threads', onWorker);
      await idle.close();
    }
  });
});
