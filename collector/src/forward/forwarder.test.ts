/**
 * The forwarder's delivery loop over a real queue file, with the destination faked (the stage next door): how it
 * gives up on requests a destination keeps refusing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { silentLogger } from '../telemetry/logger.ts';
import type { ExportItem, ExportResult, Exporter } from './exporter.ts';
import { Forwarder } from './forwarder.ts';
import { DurableQueue } from './queue.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Refuses every request with 401, counting the attempts and the requests each carried. */
class RefusingDestination implements Exporter {
  readonly description = 'refusing destination';
  attempts = 0;
  sent = 0;
  accepts(): boolean {
    return true;
  }
  export(item: ExportItem): Promise<ExportResult> {
    this.attempts++;
    // Each request is the two bytes of an empty ResourceSpans: merged ones are concatenated.
    this.sent += item.body.length / 2;
    return Promise.resolve({ kind: 'retryable', message: 'answered 401', status: 401, bounded: true });
  }
  async close(): Promise<void> {}
}

it('gives up on each expired request after trying it alone once, without resending the merged batch between', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-forwarder-'));
  const queue = new DurableQueue({ path: join(dir, 'queue.db'), maxBytes: 1e9 });
  const destination = new RefusingDestination();
  const forwarder = new Forwarder({ queue, exporter: destination, logger: silentLogger, maxElapsedMs: 200, backoff: { initialMs: 10, maxMs: 50 } });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => queue.close(), () => forwarder.stop());
  forwarder.start();
  const requests = 300;
  for (let i = 0; i < requests; i++) {
    queue.enqueue('traces', 'protobuf', Buffer.from([0x0a, 0x00]), Date.now());
    forwarder.notify();
  }
  const until = Date.now() + 20_000;
  while (queue.deadLetterSummary().count < requests && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  expect(queue.deadLetterSummary().count).toBe(requests);
  // Merged retries within the 200 ms, then one attempt alone per request: about one attempt per request, where
  // resending the rest of a merged batch after each dead letter took two and a hundredfold upload.
  expect(destination.attempts).toBeLessThan(requests * 1.5);
  expect(destination.sent).toBeLessThan(requests * 20);
});
