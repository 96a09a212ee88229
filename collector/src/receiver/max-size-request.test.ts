/**
 * One maximum-size request (otlp.maxRequestBytes) does not hold up the process. While a 20 MB batch of some 70,000
 * hook records is decoded, extracted and committed by the real `hookwatch serve` process on SQLite, another client
 * polling /healthz and sending small batches keeps being answered, and a small batch sent once part of the large
 * request is committed (its body was read and decoded long before) is answered before the large request is: the
 * event loop is served between the parts. How long the process is held is a figure of the benchmark (bench/ingest.ts),
 * not asserted here; the slices themselves are tested where they are made (decode-steps, extract-steps, hook-ingest).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOOK_EVENT_SHARE, MAX_REQUEST_BYTES, batchTemplate, maxSizeRequest, stamp } from '../../../bench/lib/batch.ts';
import { isolatedEnv } from '../../test/support/service.ts';
import { waitForStarted, type StartedLine } from '../../test/support/started.ts';
import { postOtlp } from '../../test/helpers.ts';

const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));
/** Child processes start in ~3 s; on a machine busy with other test runs it can take several times that. */
const START_TIMEOUT_MS = 45_000;

let dir: string;
let child: ChildProcess;
let server: StartedLine;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hookwatch-max-size-'));
  child = spawn(process.execPath, [MAIN, 'serve'], { env: { PATH: process.env['PATH'] ?? '', ...isolatedEnv(dir) }, stdio: ['ignore', 'ignore', 'pipe'] });
  server = await waitForStarted(child, START_TIMEOUT_MS);
}, START_TIMEOUT_MS + 5_000);
afterAll(() => {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const SMALL_RECORDS = 16;
const small = batchTemplate(SMALL_RECORDS, 'protobuf');
const sendSmall = (): Promise<{ status: number }> => postOtlp(server.otlpHttp, '/v1/logs', stamp(small), { 'content-type': small.contentType });

/** Hook events the server has committed, from its /metrics. */
async function storedEvents(): Promise<number> {
  const text = await (await fetch(`${server.http}/metrics`)).text();
  return Number(/^hookwatch_hook_events_stored_total (\d+)$/m.exec(text)?.[1]);
}

interface Polled {
  /** Polls answered while the large request was open. */
  answered: number;
  /** Small batches sent (each stores SMALL_RECORDS × HOOK_EVENT_SHARE hook events). */
  smallSent: number;
  failures: string[];
  /**
   * The small batch sent once /metrics showed part of the large request committed: its status, and whether it
   * was answered while the large request was still open. Undefined when no part showed before the answer.
   */
  probe?: { status: number; beforeLarge: boolean };
}

/**
 * Polls /healthz and sends a small batch, in turn, every 10 ms (each after the answer to the one before) while
 * `send` runs; meanwhile watches /metrics and, once it counts more hook events than the small batches could have
 * stored, sends one more small batch (the probe). Returns what the large request got and what the polls got.
 */
async function whilePolling(send: () => Promise<{ status: number; body: Buffer }>): Promise<{ status: number; body: string; polled: Polled }> {
  const polled: Polled = { answered: 0, smallSent: 0, failures: [] };
  const pause = (): Promise<void> => new Promise((r) => setTimeout(r, 10));
  const before = await storedEvents();
  let open = true;
  const poller = (async () => {
    for (let n = 0; open; n++) {
      const what = n % 2 === 0 ? '/healthz' : 'small batch';
      if (n % 2 === 1) polled.smallSent++;
      const res = n % 2 === 0 ? await fetch(`${server.http}/healthz`) : await sendSmall();
      if (res.status !== 200) polled.failures.push(`${what}: ${res.status}`);
      if (open) polled.answered++;
      await pause();
    }
  })();
  const prober = (async () => {
    while (open) {
      const committed = await storedEvents() - before - polled.smallSent * SMALL_RECORDS * HOOK_EVENT_SHARE;
      if (committed > 0 && open) {
        const { status } = await sendSmall();
        polled.probe = { status, beforeLarge: open };
        return;
      }
      await pause();
    }
  })();
  try {
    const res = await send();
    open = false;
    return { status: res.status, body: res.body.toString(), polled };
  } finally {
    open = false;
    await Promise.all([poller, prober]);
  }
}

describe('a maximum-size OTLP request', () => {
  const large = maxSizeRequest('protobuf');

  it('is near otlp.maxRequestBytes', () => {
    expect(large.body.length).toBeGreaterThan(0.9 * MAX_REQUEST_BYTES);
    expect(large.body.length).toBeLessThanOrEqual(MAX_REQUEST_BYTES);
  });

  it('is committed in parts while /healthz and small batches keep being answered, one sent after a part before it (protobuf)', async () => {
    const before = await storedEvents();
    const { status, body: answer, polled } = await whilePolling(() => postOtlp(server.otlpHttp, '/v1/logs', large.body, { 'content-type': large.contentType }));
    expect(status, answer).toBe(200);
    expect(polled.failures).toEqual([]);
    expect(polled.answered).toBeGreaterThan(0);
    // Answered between two parts of the large request's commit, so after its whole body was read and decoded.
    expect(polled.probe).toEqual({ status: 200, beforeLarge: true });
    // Every record of the large request, and the small batches' hook events.
    expect(await storedEvents() - before).toBe(large.records + (polled.smallSent + 1) * SMALL_RECORDS * HOOK_EVENT_SHARE);
  });

  it('and gzip-compressed, once inflated', async () => {
    const zipped = gzipSync(maxSizeRequest('protobuf').body);
    const before = await storedEvents();
    const { status, body: answer, polled } = await whilePolling(() => postOtlp(server.otlpHttp, '/v1/logs', zipped, { 'content-type': large.contentType, 'content-encoding': 'gzip' }));
    expect(status, answer).toBe(200);
    expect(polled.failures).toEqual([]);
    expect(polled.probe).toEqual({ status: 200, beforeLarge: true });
    expect(await storedEvents() - before).toBe(large.records + (polled.smallSent + 1) * SMALL_RECORDS * HOOK_EVENT_SHARE);
  });
});
