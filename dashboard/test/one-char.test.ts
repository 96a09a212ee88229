/**
 * One character either side of the cap, the cliff's own edge, read in headless Chromium against a real hookwatch
 * fed through OTLP: a hook whose output is 10,001 characters and one whose output is 9,999. Every place that counts
 * characters says "1 char", never "1 chars": the hooks table, the hook page's figures and its cliff summary.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { hookId } from '../../collector/src/hooks/extract.ts';
import { closePages, launch, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';
import { hookRequest } from './otlp-json.ts';

const OVER = hookId('UserPromptSubmit', 'UserPromptSubmit');
const UNDER = hookId('SessionStart', 'SessionStart:startup');

let browser: Browser;
let svc: TestService;
const open: WatchedPage[] = [];

beforeAll(async () => {
  browser = await launch();
  svc = await startTestService();
  const at = Date.now() - 60_000;
  const r = await postOtlp(svc.otlpHttpUrl, '/v1/logs', hookRequest([
    { hookEvent: 'UserPromptSubmit', hookName: 'UserPromptSubmit', timeMs: at, sizes: { stdout: 0, additionalContext: 0, systemMessage: 10_001, persisted: 1 } },
    { hookEvent: 'SessionStart', hookName: 'SessionStart:startup', timeMs: at, sizes: { stdout: 0, additionalContext: 9_999, persisted: 0 } },
  ]), { 'content-type': 'application/json' });
  expect(r.status).toBe(200);
});
afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});
afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

async function page(path: string): Promise<WatchedPage> {
  const w = await watchedPage(browser);
  open.push(w);
  await w.page.goto(`${svc.httpUrl}${path}`);
  await waitLoaded(w.page);
  return w;
}

describe('one character from the cap', () => {
  it('reads "1 char" in the hooks table\'s headroom column', async () => {
    const { page: p } = await page('/');
    // Status, Hook, sparkline, Executions, Commands OK, Persisted, Largest output, Headroom.
    const headroom = async (id: string): Promise<string | null> => p.locator(`#hook-rows tr[data-hook-id="${id}"] td:nth-child(8)`).textContent();
    expect([await headroom(OVER), await headroom(UNDER)]).toEqual(['1 char over', '1 char']);
  });

  it('reads "1 char" in the hook page\'s headroom and in its sent-against-delivered summary', async () => {
    const over = (await page(`/hooks/${OVER}`)).page;
    expect(await over.textContent('[data-kpi="headroom"] .kpi-value')).toBe('1 char over the cap');
    const under = (await page(`/hooks/${UNDER}`)).page;
    expect(await under.textContent('[data-kpi="headroom"] .kpi-value')).toBe('1 char below the cap');
    expect(await under.locator('section[data-chart="curve"]').textContent()).toContain('Largest output 9,999 chars: delivered whole, 1 char of headroom.');
  });
});
