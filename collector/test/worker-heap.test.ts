/**
 * The worker threads of a running hookwatch have the heap bounds its settings give them, not the main thread's:
 * a SQLite read worker store.readerMaxOldSpace of old space, the OTLP/JSON parser thread twelve times
 * otlp.maxRequestBytes; each with the young generation's 24 MiB (WORKER_YOUNG_GENERATION_MB as V8 counts it).
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { getHeapStatistics } from 'node:v8';
import type { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { maxSizeRequest } from '../../bench/lib/batch.ts';
import { getJson, postOtlp, until } from './helpers.ts';
import { startServiceUnderTest, type ServiceUnderTest } from './support/service.ts';

const MIB = 1024 * 1024;
/** The service's worker threads, in the order they started, and those running. */
const started: Worker[] = [];
const running = new Set<Worker>();
const onWorker = (m: unknown): void => {
  const worker = (m as { worker: Worker }).worker;
  started.push(worker);
  running.add(worker);
  worker.once('exit', () => running.delete(worker));
};
let svc: ServiceUnderTest;

beforeAll(async () => {
  subscribe('worker_threads', onWorker);
  svc = await startServiceUnderTest({ HOOKWATCH_STORE_READER_MAX_OLD_SPACE: '40MiB', HOOKWATCH_OTLP_MAX_REQUEST_BYTES: '8MiB' });
}, 60_000);
afterAll(async () => {
  unsubscribe('worker_threads', onWorker);
  await svc?.close();
});

it('starts the read workers and the OTLP/JSON parser thread with the heap bounds of its settings', { timeout: 60_000 }, async () => {
  expect((await getJson(svc.httpUrl, '/api/v1/hooks?from=now-1h')).status).toBe(200);
  // The first, the schema migration's at the start, ends on its own: then the read workers are what runs.
  const migration = started[0];
  await until('the schema migration\'s worker has exited', () => migration !== undefined && !running.has(migration));
  const readers = [...running];
  expect(readers.length).toBeGreaterThanOrEqual(1);
  // Over JSON_THREAD_MIN_BYTES: parsed on the thread.
  const { body, contentType } = maxSizeRequest('json', 3 * MIB);
  expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', body, { 'content-type': contentType })).status).toBe(200);
  const json = [...running].filter((w) => !readers.includes(w));
  expect(json).toHaveLength(1);
  // The thread first: it stops once idle for a few seconds.
  expect((await json[0]!.getHeapStatistics()).heap_size_limit).toBe((12 * 8 + 24) * MIB);
  for (const reader of readers) expect((await reader.getHeapStatistics()).heap_size_limit).toBe((40 + 24) * MIB);
  expect(getHeapStatistics().heap_size_limit).toBeGreaterThan((12 * 8 + 24) * MIB);
});
