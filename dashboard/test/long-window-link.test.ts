/**
 * An alert raised on outputs hours into a long window, in headless Chromium against a real hookwatch (real
 * sockets, real SQLite) notifying a real webhook receiver: a `persisted` rule over 24 hours, and two outputs
 * persisted 20 and 19 hours ago that reach hookwatch only now (a laptop back online), inside the window and so
 * not late. The alert's link must open the hook from before them, so the page counts what the notification counted.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import type { AlertmanagerWebhookBody } from '../../collector/src/notify/alertmanager.ts';
import { eventually, postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { WebhookSink } from '../../collector/test/support/alerting.ts';
import { closePages, launch, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';
import { hookRequest, type HookExecution } from './otlp-json.ts';

const HOUR = 3_600_000;
const NOW = Date.now();

let browser: Browser;
let svc: TestService;
const sink = new WebhookSink();
const open: WatchedPage[] = [];

beforeAll(async () => {
  browser = await launch();
  const url = await sink.start();
  svc = await startTestService({}, { yaml: `alerting:\n  rules:\n    - { kind: persisted, window: 24h }\n  receivers:\n    - { name: oncall, type: webhook, url: "${url}/hook" }\n` });
});

afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await svc?.close();
  await sink.close();
});

describe('the link of an alert over a long window', () => {
  it('opens the hook from before the outputs the alert counted, hours before it fired', async () => {
    const first = NOW - 20 * HOUR;
    const executions: HookExecution[] = [0, 1].map((i) => ({
      hookEvent: 'SessionStart', hookName: 'SessionStart:startup', timeMs: first + i * HOUR, sessionId: `s-${i}`,
      sizes: { stdout: 12_040, additionalContext: 12_000, persisted: 1 },
    }));
    expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', hookRequest(executions), { 'content-type': 'application/json' })).status).toBe(200);
    const webhook = await eventually('the webhook notification', async () => {
      const r = sink.requests.find((q) => q.path === '/hook');
      return r ? (JSON.parse(r.body) as AlertmanagerWebhookBody) : undefined;
    });
    const alert = webhook.alerts[0];
    expect(alert?.annotations['outputs_persisted']).toBe('2');
    // Inside the window: not late, so no first_event_time to reach back to.
    expect(alert?.annotations['first_event_time']).toBeUndefined();

    const w = await watchedPage(browser);
    open.push(w);
    await w.page.goto(alert?.generatorURL ?? '');
    await waitLoaded(w.page);
    expect(await w.page.textContent('[data-kpi="persisted"] .kpi-value')).toBe('2');
    const range = new URL(w.page.url()).searchParams;
    expect(range.get('range')).toBe('custom');
    expect(Date.parse(range.get('from') ?? '')).toBeLessThanOrEqual(first - HOUR);
  });
});
