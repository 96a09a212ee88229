/**
 * Late and early data, sent over OTLP/HTTP to a running hookwatch on the real clock:
 *  - a persisted output stamped 61 minutes ago (a Collector queue draining after an outage, a client clock
 *    behind) still notifies the webhook receiver when it arrives, and the notification names its event time;
 *  - a record stamped hours ahead (a client clock running ahead) is stored at its receive time, so it shows in
 *    the current range, and the client is told in the partial-success message;
 *  - a record whose event.timestamp names no offset, or is no time, is stored at its timeUnixNano whatever the
 *    receiver's time zone, and the client is told.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { HooksResponse, OverviewResponse } from '../../../shared/src/api.ts';
import { WebhookSink, otlpHookBody } from '../support/alerting.ts';
import { configFromYaml } from '../support/service.ts';
import type { AlertmanagerWebhookBody } from '../../src/notify/alertmanager.ts';
import { startService, type RunningService } from '../../src/service.ts';
import { silentLogger } from '../../src/telemetry/logger.ts';

const MIN = 60_000;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function start(): Promise<{ service: RunningService; sink: WebhookSink }> {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-late-'));
  const sink = new WebhookSink();
  await sink.start();
  const yaml = `
alerting:
  delivery: { initialBackoff: 10ms, maxBackoff: 50ms }
  receivers:
    - name: ops
      url: ${sink.url}/alerts
`;
  const config = configFromYaml(dir, yaml);
  const service = await startService(config, { logger: silentLogger });
  cleanups.push(async () => {
    await service.stop();
    await sink.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { service, sink };
}

async function send(service: RunningService, body: string): Promise<{ status: number; json: { partialSuccess?: { rejectedLogRecords?: string; errorMessage?: string } } }> {
  const res = await fetch(`${service.otlpHttpUrl}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: res.status, json: (await res.json()) as { partialSuccess?: { rejectedLogRecords?: string; errorMessage?: string } } };
}

describe('late and early data', () => {
  it('a persisted output stamped 61 minutes ago notifies the webhook receiver when it arrives, naming its event time', { timeout: 60_000 }, async () => {
    const { service, sink } = await start();
    const stamped = Date.now() - 61 * MIN;
    const r = await send(service, otlpHookBody([{ hookName: 'PostToolUse:Bash', timeMs: stamped, outputsPersisted: 1, additionalContextChars: 14_000 }]));
    expect(r.status).toBe(200);
    await sink.waitFor(1, 20_000);
    const firing = sink.bodies<AlertmanagerWebhookBody>().flatMap((b) => b.alerts).filter((a) => a.labels['alertname'] === 'persisted');
    expect(firing).toHaveLength(1);
    expect(firing[0]?.status).toBe('firing');
    expect(firing[0]?.labels['hook_name']).toBe('PostToolUse:Bash');
    expect(firing[0]?.annotations['event_time']).toBe(new Date(stamped).toISOString());
    expect(firing[0]?.annotations['description']).toContain('arrived late');
  });

  it('a record stamped two hours ahead is stored at its receive time and the client is told', { timeout: 60_000 }, async () => {
    const { service } = await start();
    const r = await send(service, otlpHookBody([{ hookName: 'PostToolUse:Edit', timeMs: Date.now() + 120 * MIN, outputsPersisted: 0, additionalContextChars: 100 }]));
    expect(r.status).toBe(200);
    expect(Number(r.json.partialSuccess?.rejectedLogRecords ?? 0)).toBe(0);
    expect(r.json.partialSuccess?.errorMessage).toMatch(/1 hook record\(s\) stamped more than 300 s ahead/);
    // Shown now, in the default range that ends now.
    const overview = (await (await fetch(`${service.httpUrl}/api/v1/overview`)).json()) as OverviewResponse;
    expect(overview.totals.executions).toBe(1);
  });

  it('a record whose event.timestamp names no offset, or is no time, is stored at its timeUnixNano in any receiver time zone', { timeout: 60_000 }, async () => {
    // Date.parse reads a time without an offset in the process's zone: half an hour off in Kolkata.
    const zone = process.env['TZ'];
    process.env['TZ'] = 'Asia/Kolkata';
    cleanups.push(() => {
      if (zone === undefined) delete process.env['TZ'];
      else process.env['TZ'] = zone;
    });
    const { service } = await start();
    const at = Math.floor((Date.now() - 30 * MIN) / 1000) * 1000;
    const wall = new Date(at).toISOString().slice(0, 19);
    const r = await send(service, otlpHookBody([
      { hookName: 'Stop:wall-clock', timeMs: at, outputsPersisted: 0, additionalContextChars: 100, timestamp: wall },
      // "1" is 2001 to Date.parse: past retention, it would be refused as too old.
      { hookName: 'Stop:garbled', timeMs: at, outputsPersisted: 0, additionalContextChars: 100, timestamp: '1' },
    ]));
    expect(r.status).toBe(200);
    expect(Number(r.json.partialSuccess?.rejectedLogRecords ?? 0)).toBe(0);
    expect(r.json.partialSuccess?.errorMessage).toMatch(/^2 hook record\(s\) with an event\.timestamp that names no offset .* were timed by their timeUnixNano/);
    const hooks = (await (await fetch(`${service.httpUrl}/api/v1/hooks?from=now-2h`)).json()) as HooksResponse;
    expect(hooks.hooks.map((h) => [h.hookName, h.lastSeen]).sort()).toEqual([['Stop:garbled', new Date(at).toISOString()], ['Stop:wall-clock', new Date(at).toISOString()]]);
  });
});
