/**
 * The forwarding queue's disk refusing writes while the store's is healthy: forward.queue.path lives on a tiny
 * tmpfs that is then filled, so SQLite really fails with SQLITE_FULL. hookwatch must say so once in its log naming
 * the queue file, answer 503 naming the forwarding queue (not the store), count the refusals under their own
 * reason, report not ready (a load balancer stops sending), show the fault as the destination's last error in
 * GET /api/v1/forwarding, and take writes again once space is back.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { batchTemplate, stamp } from '../../../bench/lib/batch.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { postOtlp, startTestService, tempDir, until, type TestService } from '../helpers.ts';
import { HttpDownstream } from '../support/downstream-recorder.ts';
import { forwardingStatus } from './forward-support.ts';
import { sampleValue, scrapeMetrics } from '../support/prometheus-text.ts';
import { fillFilesystem as fill, mountTmpfs, unmountTmpfs } from '../support/tmpfs.ts';

const mount = mountTmpfs(4, 'hookwatch-fwdfull-');
const downstream = new HttpDownstream();
let service: TestService | undefined;

afterAll(async () => {
  await service?.close();
  await downstream.stop();
  if (mount) unmountTmpfs(mount);
});

async function readyz(httpUrl: string): Promise<{ status: number; body: { status: string; reason?: string } }> {
  const res = await fetch(`${httpUrl}/readyz`);
  return { status: res.status, body: (await res.json()) as { status: string; reason?: string } };
}

describe('the forwarding queue cannot write', () => {
  it.skipIf(!mount)('a full queue disk is logged once naming the file, answered 503 naming the queue, counted as forward_queue_unavailable, not ready, and recovers when space is back (needs root to mount a tmpfs; skipped only outside CI)', { timeout: 60_000 }, async () => {
    const queuePath = join(mount as string, 'forward-queue.db');
    const lines: string[] = [];
    const url = await downstream.start();
    // The destination is away: what is queued stays queued.
    downstream.mode = { kind: 'status', status: 503 };
    service = await startTestService({
      HOOKWATCH_FORWARD_ENDPOINT: url,
      HOOKWATCH_FORWARD_COMPRESSION: 'none',
      HOOKWATCH_FORWARD_QUEUE_PATH: queuePath,
    }, { dir: tempDir('hookwatch-fwdfull-store-').dir, logger: createLogger({ level: 'info', write: (l) => lines.push(l) }) });
    const headers = { 'content-type': 'application/x-protobuf' };
    const otlp = service.otlpHttpUrl;
    expect((await postOtlp(otlp, '/v1/logs', stamp(batchTemplate(64, 'protobuf')), headers)).status).toBe(200);
    expect((await readyz(service.httpUrl)).status).toBe(200);
    const lastError = async (): Promise<string | null | undefined> => (await forwardingStatus(service!.httpUrl)).destinations[0]?.lastError;
    expect(await lastError()).not.toContain('forwarding queue');

    const filler = fill(mount as string);
    const refused = stamp(batchTemplate(512, 'protobuf'));
    for (let attempt = 0; attempt < 3; attempt++) {
      const res = await postOtlp(otlp, '/v1/logs', refused, headers);
      expect(res.status).toBe(503);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(res.body.toString('latin1')).toContain('the forwarding queue cannot take writes right now');
      expect(res.body.toString('latin1')).not.toContain('the store');
    }
    // One line for the refusals, however many (delivery, retrying on its own schedule, may log its own failures).
    const faults = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['level'] === 'error' && l['path'] === queuePath);
    expect(faults, JSON.stringify(faults)).toHaveLength(1);
    expect(faults[0]!['msg']).toContain('forwarding queue cannot keep requests');
    expect(String(faults[0]!['cause'])).toContain('disk is full');
    const { families } = await scrapeMetrics(service.httpUrl);
    expect(sampleValue(families, 'hookwatch_otlp_requests_rejected_total', { transport: 'http', reason: 'forward_queue_unavailable' })).toBe(3);
    expect(sampleValue(families, 'hookwatch_otlp_requests_rejected_total', { transport: 'http', reason: 'store_unavailable' })).toBe(0);

    const notReady = await readyz(service.httpUrl);
    expect(notReady.status).toBe(503);
    expect(notReady.body.reason).toContain('forwarding queue');
    expect(notReady.body.reason).toContain(queuePath);
    // The forwarding page says so too, as readiness does, before whatever the destination last answered.
    const during = await lastError();
    expect(during?.startsWith(notReady.body.reason as string), String(during)).toBe(true);
    expect(during).toContain('disk is full');

    rmSync(filler);
    await until('ready again', async () => (await readyz(service!.httpUrl)).status === 200);
    expect(await lastError()).not.toContain('forwarding queue');
    expect((await postOtlp(otlp, '/v1/logs', refused, headers)).status).toBe(200);
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => String(l['msg']).includes('forwarding queue is usable again'))).toHaveLength(1);
  });
});
