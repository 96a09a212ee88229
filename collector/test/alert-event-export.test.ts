/**
 * The export of alert events (alerting.otlp.endpoint) against a real OTLP/HTTP receiver on loopback, driven as a
 * user drives it: hook events over OTLP raise an alert, and its log record reaches the receiver. The export's
 * keep-alive connection is closed when hookwatch stops.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startService, type RunningService } from '../src/service.ts';
import { otlpHookBody, WebhookSink } from './support/alerting.ts';
import { recordingLogger } from './support/recording-logger.ts';
import { configFromYaml } from './support/service.ts';
import { postOtlp, tempDir } from './helpers.ts';

describe('alert event export', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function otlpReceiver(status: number): Promise<WebhookSink> {
    const s = new WebhookSink();
    s.reply = () => ({ status });
    await s.start();
    cleanups.push(() => s.close());
    return s;
  }

  async function start(endpoint: string): Promise<RunningService> {
    const dir = tempDir('hookwatch-alert-event-export-');
    cleanups.push(() => dir.cleanup());
    const yaml = JSON.stringify({ alerting: { rules: [{ kind: 'persisted', window: '1h' }], otlp: { endpoint } } });
    const service = await startService(configFromYaml(dir.dir, yaml), { logger: recordingLogger().logger });
    cleanups.push(async () => void (await service.stop()));
    return service;
  }

  /** A hook output over the cap, sent as Claude Code sends it: the persisted rule fires. */
  async function raiseAlert(service: RunningService, hookName: string): Promise<void> {
    const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', otlpHookBody([{ hookName, timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000, sessionId: 's1' }]), { 'content-type': 'application/json' });
    expect(res.status).toBe(200);
  }

  it('closes its idle keep-alive connection to the endpoint when hookwatch stops', async () => {
    const receiver = await otlpReceiver(200);
    // An idle connection would stay open for ten minutes unless hookwatch closes it.
    receiver.keepConnectionsFor(600_000);
    const service = await start(receiver.url);
    await raiseAlert(service, 'PostToolUse:kept-alive');
    await expect.poll(() => receiver.delivered().filter((r) => r.body.includes('PostToolUse:kept-alive')), { timeout: 10_000, interval: 100 }).toHaveLength(1);
    expect(receiver.openConnections()).toBe(1);
    await service.stop();
    await expect.poll(() => receiver.openConnections(), { timeout: 5000, interval: 50 }).toBe(0);
  });
});
