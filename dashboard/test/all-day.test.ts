/**
 * The dashboard on a wall screen all day, against a real hookwatch (real sockets, real SQLite) in headless
 * Chromium: links shared.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { FIXTURE_RUNS, fixtureRequests, postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { hookId } from '../../collector/src/hooks/extract.ts';
import { closePages, launch, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';

const ID = hookId('SessionStart', 'SessionStart:startup');

let browser: Browser;
const open: WatchedPage[] = [];
const cleanups: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  browser = await launch();
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  expect(await closePages(open)).toEqual([]);
});
afterAll(async () => {
  await browser?.close();
});

async function page(allow?: RegExp, timezoneId?: string): Promise<WatchedPage> {
  const w = await watchedPage(browser, { ...(allow ? { allow } : {}), ...(timezoneId ? { timezoneId } : {}) });
  open.push(w);
  return w;
}

/** hookwatch on a data directory of its own, fed the captured Claude Code requests; `env` pins its ports. */
async function hookwatch(dir: string, env: Record<string, string> = {}): Promise<TestService> {
  const svc = await startTestService(env, { dir });
  return svc;
}

async function feed(svc: TestService): Promise<void> {
  for (const run of FIXTURE_RUNS) {
    for (const req of fixtureRequests(run)) expect((await postOtlp(svc.otlpHttpUrl, req.path, req.body, { 'content-type': req.contentType })).status).toBe(200);
  }
}

async function fedService(): Promise<TestService> {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-all-day-'));
  const svc = await hookwatch(dir);
  cleanups.push(() => svc.close());
  await feed(svc);
  return svc;
}

describe('a link shared with a colleague', () => {
  it('opens the same view: page, range, filters and breakdown; a custom range names the zone its times are in', async () => {
    const svc = await fedService();
    const from = '2026-11-01T00:00:00.000Z';
    const to = '2026-12-01T00:00:00.000Z';
    const url = `${svc.httpUrl}/hooks/${ID}?range=custom&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}&f.terminal.type=vscode&by=user.id`;
    const a = await page(undefined, 'Europe/Berlin');
    await a.page.goto(url);
    await waitLoaded(a.page);
    // The colleague reads it five hours behind.
    const b = await page(undefined, 'America/New_York');
    const asked: string[] = [];
    b.page.on('request', (r) => void (r.url().includes('/api/v1/hooks/') && asked.push(r.url())));
    await b.page.goto(a.page.url());
    await waitLoaded(b.page);
    const view = async (p: Page): Promise<Record<string, unknown>> => {
      await p.waitForFunction(() => (document.querySelector('#breakdown-dimension') as HTMLSelectElement | null)?.value === 'user.id');
      return p.evaluate(() => ({
        title: document.querySelector('#hook-title')?.textContent,
        chips: [...document.querySelectorAll('.chip')].map((c) => c.firstChild?.textContent),
        custom: document.querySelector('details.custom summary')?.getAttribute('aria-current'),
        by: (document.querySelector('#breakdown-dimension') as HTMLSelectElement | null)?.value,
        range: document.querySelector('.range-label')?.textContent?.split(' · ')[1],
      }));
    };
    const [va, vb] = [await view(a.page), await view(b.page)];
    expect({ ...vb, range: undefined }).toEqual({ ...va, range: undefined });
    expect(vb).toMatchObject({ chips: ['terminal.type = vscode'], custom: 'true', by: 'user.id' });
    // The same instants in each reader's clock, each saying which clock that is.
    expect(va['range']).toBe('01/11/2026, 01:00 to 01/12/2026, 01:00 Europe/Berlin (UTC+01:00)');
    expect(vb['range']).toBe('31/10/2026, 20:00 to 30/11/2026, 19:00 America/New_York (UTC-04:00)');
    const series = new URL(asked.find((u) => u.includes('/series')) ?? '');
    expect([series.searchParams.get('from'), series.searchParams.get('to'), series.searchParams.get('terminal.type')]).toEqual([from, to, 'vscode']);
  });
});
