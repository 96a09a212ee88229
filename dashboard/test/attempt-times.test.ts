/**
 * When each delivery attempt was made, read in headless Chromium against a real hookwatch on the real clock: a
 * webhook receiver that answers 503 at first makes hookwatch retry within seconds, and the card's delivery
 * attempts table tells the attempts apart by their time to the second, as the API gives it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import type { AlertDetailResponse, AlertsResponse } from '../../shared/src/api.ts';
import { eventually, getJson, postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { closePages, launch, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';
import { hookRequest } from './otlp-json.ts';

let browser: Browser;
let svc: TestService;
let sink: Server;
let requests = 0;
const open: WatchedPage[] = [];

beforeAll(async () => {
  browser = await launch();
  // Two refusals, then delivered: three attempts within a few seconds.
  sink = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(++requests <= 2 ? 503 : 200, { 'retry-after': '1' }).end());
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  const port = (sink.address() as AddressInfo).port;
  svc = await startTestService({}, { yaml: `alerting:\n  receivers:\n    - { name: oncall, type: webhook, url: "http://127.0.0.1:${port}/hook" }\n  delivery: { initialBackoff: 100ms, maxBackoff: 1s }\n` });
  const body = hookRequest([{ hookEvent: 'UserPromptSubmit', hookName: 'UserPromptSubmit', timeMs: Date.now() - 5_000, sizes: { stdout: 0, additionalContext: 10_400, persisted: 1 } }]);
  expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
});
afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});
afterAll(async () => {
  await browser?.close();
  await svc?.close();
  await new Promise((r) => sink?.close(r));
});

/** "07/12/2026, 10:12:05": an RFC 3339 time as the page writes it in UTC, to the second. */
const utcSeconds = (iso: string): string => `${iso.slice(8, 10)}/${iso.slice(5, 7)}/${iso.slice(0, 4)}, ${iso.slice(11, 19)}`;

describe('delivery attempts', () => {
  it('gives each attempt its time to the second, so retries a second apart read apart', async () => {
    const attempts = await eventually('three attempts, the last delivered', async () => {
      const a = (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body.alerts.find((x) => x.labels['hook_name'] === 'UserPromptSubmit');
      if (!a) return undefined;
      const d = (await getJson<AlertDetailResponse>(svc.httpUrl, `/api/v1/alerts/${a.id}`)).body;
      return d.attempts.length === 3 && d.attempts[2]?.outcome === 'delivered' ? { id: a.id, at: d.attempts.map((t) => t.at) } : undefined;
    }, 20_000);
    const w = await watchedPage(browser, { timezoneId: 'UTC' });
    open.push(w);
    await w.page.goto(`${svc.httpUrl}/alerts`);
    await waitLoaded(w.page);
    const card = w.page.locator(`article[data-alert-id="${attempts.id}"]`);
    await card.locator('details.attempts-details > summary').click();
    const rows = card.locator('table.attempts tbody tr');
    await rows.nth(2).waitFor();
    // Receiver, Notification, Attempt, At.
    const shown = await rows.locator('td:nth-child(4)').allTextContents();
    expect(shown).toEqual(attempts.at.map(utcSeconds));
    expect(new Set(shown).size).toBeGreaterThan(1);
  });
});
