/**
 * A hook author's way from an alert to a fix, in headless Chromium against a real hookwatch (real sockets, real
 * SQLite) notifying a real webhook and Slack receiver: a SessionStart hook grew from 9,800 to 18,000 characters
 * over ten days, and its telemetry arrives now (a Collector queue draining). The alert's link must open the hook
 * over the time the alert counted, so the page shows the outputs the alert names and when they began, not just the
 * last 24 hours; once the hook is wrapped with hookwatch guard, the page must say what is true of its sizes now.
 * And an alert raised on outputs hours into a long window, not late: its link opens the hook from before them too.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { OUTPUT_CAP_CHARS } from '../../shared/src/cliff.ts';
import type { AlertmanagerWebhookBody } from '../../collector/src/notify/alertmanager.ts';
import { eventually, postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { WebhookSink } from '../../collector/test/support/alerting.ts';
import { closePages, launch, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';
import { hookRequest, type HookExecution } from './otlp-json.ts';

const HOUR = 3_600_000;
const DAY = 86_400_000;
const NOW = Date.now();

let browser: Browser;
let svc: TestService;
const sink = new WebhookSink();
const open: WatchedPage[] = [];

/** The first notification the sink received at `path`, parsed; undefined until one has come. */
function notification<T>(path: string): T | undefined {
  const r = sink.requests.find((q) => q.path === path);
  return r ? (JSON.parse(r.body) as T) : undefined;
}

/**
 * One session start every 6 hours for 10 days, half an hour into each 6-hour bucket, its additionalContext growing
 * from 9,800 to 18,000 characters: the first is under the cap, the second (6.5 hours in) the first over it.
 */
function growingHook(): HookExecution[] {
  const out: HookExecution[] = [];
  const start = Math.floor((NOW - 10 * DAY) / (DAY / 4)) * (DAY / 4);
  for (let t = start + 1_800_000, i = 0; t < NOW - 3_600_000; t += DAY / 4, i++) {
    const size = Math.round(9_800 + ((t - start) / (10 * DAY)) * (18_000 - 9_800));
    out.push({
      hookEvent: 'SessionStart', hookName: 'SessionStart:startup', timeMs: t, sessionId: `s-${i}`, userId: ['alice', 'bob'][i % 2] ?? 'alice',
      sizes: { stdout: size + 40, additionalContext: size, persisted: size > OUTPUT_CAP_CHARS ? 1 : 0 },
    });
  }
  return out;
}

beforeAll(async () => {
  browser = await launch();
  const url = await sink.start();
  svc = await startTestService({}, { yaml: `alerting:\n  receivers:\n    - { name: oncall, type: webhook, url: "${url}/hook" }\n    - { name: chat, type: slack, url: "${url}/slack" }\n` });
});

afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await svc?.close();
  await sink.close();
});

describe('the link in an alert', () => {
  it('opens the hook over the time the alert counted: the page shows the persisted outputs the alert names, late ones included', async () => {
    const executions = growingHook();
    expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', hookRequest(executions), { 'content-type': 'application/json' })).status).toBe(200);
    const webhook = await eventually('the webhook notification', async () => notification<AlertmanagerWebhookBody>('/hook'));
    const slack = await eventually('the Slack notification', async () => notification<{ text: string }>('/slack'));
    const alert = webhook.alerts[0];
    expect(alert?.labels['hook_name']).toBe('SessionStart:startup');
    const persisted = executions.filter((e) => (e.sizes?.persisted ?? 0) > 0);
    // Every persisted output, stamped over ten days, counted by the alert: none of them within its 1h window.
    expect(alert?.annotations['outputs_persisted']).toBe(String(persisted.length));
    // What to do about it, and when it stops: the commands that find the string over and keep it delivered meanwhile.
    expect(alert?.annotations['description']).toContain('`hookwatch check -- <hook command>` measures each output string of the hook against the cap');
    expect(alert?.annotations['description']).toContain('`hookwatch guard --install <settings file>` wraps every command hook');
    expect(alert?.annotations['description']).toMatch(/It clears once 1h passes with no output persisted \(late ones counted from their arrival\)\.$/);
    expect(slack.text).toContain('hookwatch guard --install &lt;settings file&gt;');
    const link = alert?.generatorURL ?? '';
    expect(slack.text).toContain(`<${link}|Open in hookwatch>`);

    const w = await watchedPage(browser);
    open.push(w);
    await w.page.goto(link);
    await waitLoaded(w.page);
    // The page counts what the alert counted, and its range begins before the first persisted output.
    expect(await w.page.textContent('[data-kpi="persisted"] .kpi-value')).toBe(String(persisted.length));
    const range = new URL(w.page.url()).searchParams;
    expect(range.get('range')).toBe('custom');
    expect(Date.parse(range.get('from') ?? '')).toBeLessThan(persisted[0]?.timeMs ?? 0);
    expect(Date.parse(range.get('to') ?? '')).toBeGreaterThanOrEqual(Date.parse(alert?.startsAt ?? ''));
    expect(await w.page.textContent('.range-label')).toMatch(/ to /);
    // The figures and the charts count the same executions: the range starts on a bucket of the charts, so the
    // one under the cap in the first bucket is in both.
    const counted = Number(await w.page.textContent('[data-kpi="executions"] .kpi-value'));
    expect(await w.page.textContent('#chart-delivery-summary')).toMatch(new RegExp(`^${counted} hook commands reported success; ${persisted.length} outputs were persisted`));
    expect(counted).toBe(executions.filter((e) => e.timeMs >= Date.parse(range.get('from') ?? '')).length);
    expect(counted).toBeGreaterThan(persisted.length);
  });

  it('opens the same view from the alert\'s card on the alerts page, whatever range that page is on', async () => {
    const webhook = await eventually('the webhook notification', async () => notification<AlertmanagerWebhookBody>('/hook'));
    const counted = webhook.alerts[0]?.annotations['outputs_persisted'];
    const w = await watchedPage(browser);
    open.push(w);
    await w.page.goto(`${svc.httpUrl}/alerts?range=1h`);
    await waitLoaded(w.page);
    await w.page.locator('article[data-state="firing"] a.hook-link', { hasText: 'SessionStart:startup' }).click();
    await w.page.waitForURL(/\/hooks\/[0-9a-f]{16}\?/);
    await waitLoaded(w.page, 2);
    expect(await w.page.textContent('[data-kpi="persisted"] .kpi-value')).toBe(counted);
    expect(new URL(w.page.url()).searchParams.get('range')).toBe('custom');
  });
});

describe('after the hook is wrapped with hookwatch guard', () => {
  it('says the outputs are under the cap now, not that sizes pass it with nothing persisted, while the 30-day trend is still past it', async () => {
    // What Claude Code reports of the guarded hook: its additionalContext cut to 9,456 characters, nothing persisted.
    const guarded = hookRequest([{ hookEvent: 'SessionStart', hookName: 'SessionStart:startup', timeMs: NOW - 60_000, sessionId: 's-guarded', sizes: { stdout: 9_721, additionalContext: 9_456, persisted: 0 } }], { n: 1000 });
    expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', guarded, { 'content-type': 'application/json' })).status).toBe(200);
    const webhook = await eventually('the webhook notification', async () => notification<AlertmanagerWebhookBody>('/hook'));
    const w = await watchedPage(browser);
    open.push(w);
    const hookUrl = new URL(webhook.alerts[0]?.generatorURL ?? '');
    await w.page.goto(`${svc.httpUrl}${hookUrl.pathname}?range=1h`);
    await waitLoaded(w.page);
    await w.page.locator('#chart-growth-summary').waitFor({ state: 'attached' });
    expect(await w.page.textContent('[data-kpi="persisted"] .kpi-value')).toBe('0');
    expect(await w.page.textContent('[data-kpi="forecast"] .kpi-value')).toBe('under the cap now');
    expect(await w.page.textContent('[data-kpi="forecast"] .kpi-note')).toBe('the 30-day trend is past it');
    const growth = await w.page.textContent('#chart-growth-summary');
    expect(growth).toMatch(/^Under the 10,000 cap in this range \(largest 9,721 chars\), but the trend fitted to the last 30 days' daily largest outputs is past it, at about [\d,]+ chars/);
    expect(growth).not.toContain('persisted nothing');
  });

  it('says the outputs are under the cap only as far as measured while a client that sends no sizes runs the hook too', async () => {
    const old = hookRequest([{ hookEvent: 'SessionStart', hookName: 'SessionStart:startup', timeMs: NOW - 30_000, sessionId: 's-old-client', version: '2.1.250' }], { n: 1100 });
    expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', old, { 'content-type': 'application/json' })).status).toBe(200);
    const webhook = await eventually('the webhook notification', async () => notification<AlertmanagerWebhookBody>('/hook'));
    const w = await watchedPage(browser);
    open.push(w);
    await w.page.goto(`${svc.httpUrl}${new URL(webhook.alerts[0]?.generatorURL ?? '').pathname}?range=1h`);
    await waitLoaded(w.page);
    await w.page.locator('#chart-growth-summary').waitFor({ state: 'attached' });
    expect(await w.page.textContent('[data-kpi="size-unknown"] .kpi-value')).toBe('1 of 2');
    expect(await w.page.textContent('[data-kpi="forecast"] .kpi-value')).toBe('measured under the cap now');
    expect(await w.page.textContent('[data-kpi="forecast"] .kpi-note')).toBe('1 execution not measured; the 30-day trend is past it');
    expect(await w.page.textContent('#chart-growth-summary')).toMatch(/^Under the 10,000 cap in this range as far as measured \(largest at least 9,721 chars; 1 execution sent no size data\), but the trend fitted to the last 30 days' daily largest outputs is past it/);
  });
});

describe('a preset range', () => {
  /**
   * Outputs of one hook around the start of `preset`: one in the chart's first bucket but before the range (the
   * bucket starts on its step, the range a span before now), two within it. Waits first, when the range's start
   * is within two minutes of a bucket boundary, so the page opened next starts in the same bucket, after the one.
   */
  async function aroundStart(preset: string, spanMs: number, stepMs: number): Promise<{ inRange: number; persisted: number }> {
    const phase = (): number => (Date.now() - spanMs) % stepMs;
    while (phase() < 120_000 || phase() > stepMs - 120_000) await new Promise((r) => setTimeout(r, 5_000));
    const now = Date.now();
    const bucketStart = Math.floor((now - spanMs) / stepMs) * stepMs;
    const over = { stdout: 12_040, additionalContext: 12_000, persisted: 1 };
    const executions: HookExecution[] = [
      { hookEvent: 'PreToolUse', hookName: `PreToolUse:${preset}`, timeMs: bucketStart + 1_000, sessionId: `before-${preset}`, sizes: over },
      { hookEvent: 'PreToolUse', hookName: `PreToolUse:${preset}`, timeMs: now - spanMs + 10 * 60_000, sessionId: `in-${preset}`, sizes: over },
      { hookEvent: 'PreToolUse', hookName: `PreToolUse:${preset}`, timeMs: now - 60_000, sessionId: `in-${preset}`, sizes: { stdout: 240, additionalContext: 200, persisted: 0 } },
    ];
    expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', hookRequest(executions, { n: preset === '7d' ? 3000 : 2000 }), { 'content-type': 'application/json' })).status).toBe(200);
    return { inRange: 2, persisted: 1 };
  }

  // 24 hours are charted in 30-minute buckets (a minute step), 7 days in 3-hour ones (whole hours).
  for (const [preset, spanMs, stepMs] of [['24h', DAY, 1_800_000], ['7d', 7 * DAY, 10_800_000]] as const) {
    it(`over the last ${preset}, the figures and the charts count the same executions, though the first bucket starts before the range`, async () => {
      const { inRange, persisted } = await aroundStart(preset, spanMs, stepMs);
      const id = (await eventually(`the hook of the ${preset} check`, async () => {
        const list = (await (await fetch(`${svc.httpUrl}/api/v1/hooks?from=now-8d&name=PreToolUse:${preset}`)).json()) as { hooks: { id: string; hookName: string }[] };
        return list.hooks.find((hk) => hk.hookName === `PreToolUse:${preset}`);
      })).id;
      const w = await watchedPage(browser);
      open.push(w);
      await w.page.goto(`${svc.httpUrl}/hooks/${id}?range=${preset}`);
      await waitLoaded(w.page);
      await w.page.locator('#chart-delivery-summary').waitFor({ state: 'attached' });
      expect(await w.page.textContent('[data-kpi="executions"] .kpi-value')).toBe(String(inRange));
      expect(await w.page.textContent('[data-kpi="persisted"] .kpi-value')).toBe(String(persisted));
      expect(await w.page.textContent('#chart-delivery-summary')).toMatch(new RegExp(`^${inRange} hook commands reported success; ${persisted} output was persisted`));

      // The overview: the fleet's persisted outputs, in the figures and in the fleet chart's summary.
      await w.page.goto(`${svc.httpUrl}/?range=${preset}`);
      await waitLoaded(w.page);
      await w.page.locator('#chart-fleet-summary').waitFor({ state: 'attached' });
      const fleetPersisted = await w.page.textContent('[data-kpi="persisted"] .kpi-value');
      // As a sentence begins it ("At least 5 outputs" while some executions sent no size data).
      expect(await w.page.textContent('#chart-fleet-summary')).toMatch(new RegExp(`^${fleetPersisted} outputs? persisted across`, 'i'));
    }, 300_000);
  }
});

describe('the link of an alert over a long window', () => {
  it('opens the hook from before the outputs the alert counted, hours before it fired', async () => {
    // A `persisted` rule over 24 hours, and two outputs persisted 20 and 19 hours ago that reach hookwatch only now
    // (a laptop back online): inside the window, so not late.
    const long = await startTestService({}, { yaml: `alerting:\n  rules:\n    - { kind: persisted, window: 24h }\n  receivers:\n    - { name: oncall, type: webhook, url: "${sink.url}/long" }\n` });
    try {
      const first = NOW - 20 * HOUR;
      const executions: HookExecution[] = [0, 1].map((i) => ({
        hookEvent: 'SessionStart', hookName: 'SessionStart:startup', timeMs: first + i * HOUR, sessionId: `s-${i}`,
        sizes: { stdout: 12_040, additionalContext: 12_000, persisted: 1 },
      }));
      expect((await postOtlp(long.otlpHttpUrl, '/v1/logs', hookRequest(executions), { 'content-type': 'application/json' })).status).toBe(200);
      const webhook = await eventually('the webhook notification', async () => notification<AlertmanagerWebhookBody>('/long'));
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
    } finally {
      await long.close();
    }
  });
});
