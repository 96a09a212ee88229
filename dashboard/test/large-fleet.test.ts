/**
 * The overview of a fleet larger than one page of hooks, in headless Chromium against a real hookwatch (real
 * sockets, real SQLite): 1,000 hooks near each other in size plus three small ones ranked after them, so the
 * three are past the first page of GET /api/v1/hooks and past the fleet series' limit.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { FleetSeriesResponse } from '../../shared/src/api.ts';
import { postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { closePages, launch, screenshot, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';
import { hookRequest, type HookExecution } from './otlp-json.ts';

const NOW = Date.parse('2026-11-30T08:30:00Z');
const PORTS = { HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0' };
const BULK = 1000;
/** Ranked last: the smallest outputs leave them the most headroom. */
const NEEDLES = ['PostToolUse:needle-one', 'PostToolUse:Needle-two', 'PostToolUse:needle-three'];

let browser: Browser;
let svc: TestService;
const open: WatchedPage[] = [];

async function page(opts: { width?: number; height?: number; allow?: RegExp } = {}): Promise<WatchedPage> {
  const w = await watchedPage(browser, opts);
  open.push(w);
  return w;
}

beforeAll(async () => {
  browser = await launch();
  svc = await startTestService(PORTS, { now: () => NOW });
  const executions: HookExecution[] = [
    ...Array.from({ length: BULK }, (_v, i) => ({ hookEvent: 'Stop', hookName: `Stop:bulk-${String(i).padStart(4, '0')}`, timeMs: NOW - 600_000, sizes: { stdout: 5000 + i, additionalContext: 0, persisted: 0 } })),
    ...NEEDLES.map((hookName) => ({ hookEvent: 'PostToolUse', hookName, timeMs: NOW - 900_000, sizes: { stdout: 10, additionalContext: 0, persisted: 0 } })),
  ];
  const seq = { n: 0 };
  for (let i = 0; i < executions.length; i += 250) {
    const r = await postOtlp(svc.otlpHttpUrl, '/v1/logs', hookRequest(executions.slice(i, i + 250), seq), { 'content-type': 'application/json' });
    expect(r.status).toBe(200);
  }
});

afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

const rowNames = (p: Page): Promise<string[]> => p.$$eval('#hook-rows tr[data-hook-id] .hook-link', (links) => links.map((a) => a.textContent ?? ''));
const rowCount = (p: Page, n: number): Promise<unknown> => p.waitForFunction((want) => document.querySelectorAll('#hook-rows tr[data-hook-id]').length === want, n);

describe('hook name search', () => {
  it('finds hooks past the page loaded by a part of their name, whatever its case, and keeps the search in the URL', async () => {
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/?refresh=off`);
    await waitLoaded(p);
    expect(await p.textContent('#table-note')).toMatch(/^1,000 of 1,003 hooks \(the riskiest\)\./);
    expect((await rowNames(p)).filter((n) => /needle/i.test(n))).toEqual([]);

    // The label names the box: a click on it puts the caret there, and the keyboard does the rest.
    await p.getByText('Search hooks by name').click();
    await p.keyboard.type('NEEDLE');
    // The whole word searched, not a part typed before the pause that starts a search ("NEE" finds the same rows).
    await p.waitForFunction(() => document.querySelector('#hook-search-status')?.textContent?.includes('"NEEDLE"') === true);
    await rowCount(p, 3);
    expect((await rowNames(p)).sort()).toEqual([...NEEDLES].sort());
    await p.waitForURL((u) => u.searchParams.get('name') === 'NEEDLE');
    expect(new URL(p.url()).searchParams.get('name')).toBe('NEEDLE');
    expect(await p.textContent('#table-note')).toMatch(/^3 hooks with "NEEDLE" in the name\./);
    expect(await p.textContent('#hook-search-status')).toBe('3 hooks with "NEEDLE" in the name.');
    // The rows came in place: the box still has the focus and the text typed.
    expect(await p.evaluate(() => document.activeElement?.id)).toBe('hook-search');
    expect(await p.getByRole('searchbox', { name: 'Search hooks by name' }).inputValue()).toBe('NEEDLE');
    await screenshot(p, 'overview-search');

    // Another range keeps the search, as it keeps the filters.
    await p.click('[data-range="7d"]');
    await p.waitForURL(/range=7d/);
    await waitLoaded(p);
    expect(new URL(p.url()).searchParams.get('name')).toBe('NEEDLE');
    expect(await p.inputValue('#hook-search')).toBe('NEEDLE');
    await rowCount(p, 3);

    // A reload, and a hook's page and back, come back to the same search.
    await p.reload();
    await waitLoaded(p);
    expect(await p.inputValue('#hook-search')).toBe('NEEDLE');
    await rowCount(p, 3);
    await p.click('#hook-rows tr:first-child a.hook-link');
    await p.waitForURL(/\/hooks\/[0-9a-f]{16}\?/);
    await waitLoaded(p);
    await p.click('a.back');
    await p.waitForURL((u) => u.pathname === '/');
    await waitLoaded(p);
    expect(new URL(p.url()).searchParams.get('name')).toBe('NEEDLE');
    await rowCount(p, 3);
  });

  it('asks only for the hooks a search lists, not again for the fleet figures, chart and forecasts shown', async () => {
    const { page: p } = await page();
    const asked: URL[] = [];
    p.on('request', (r) => {
      const u = new URL(r.url());
      if (u.pathname.startsWith('/api/')) asked.push(u);
    });
    await p.goto(`${svc.httpUrl}/?refresh=off`);
    await waitLoaded(p);
    const first = asked.find((u) => u.pathname === '/api/v1/hooks');
    asked.length = 0;

    await p.fill('#hook-search', 'needle');
    await rowCount(p, 3);
    await waitLoaded(p, 2);
    await p.waitForFunction(() => document.querySelectorAll('#hook-rows svg.spark').length === 3);
    const paths = asked.map((u) => u.pathname);
    // The hooks of the search, over the range the figures beside them cover; the sparklines of the rows past the
    // fleet answer; the forecasts of the hooks that had none. No fleet chart, no fleet figures.
    expect(paths.filter((x) => x === '/api/v1/hooks')).toHaveLength(1);
    const hooks = asked.find((u) => u.pathname === '/api/v1/hooks');
    expect(hooks?.searchParams.get('name')).toBe('needle');
    const resolved = (await (await fetch(first?.href ?? '')).json()) as { from: string; to: string };
    expect([hooks?.searchParams.get('from'), hooks?.searchParams.get('to')]).toEqual([resolved.from, resolved.to]);
    expect(paths.filter((x) => x === '/api/v1/overview')).toEqual([]);
    expect(asked.filter((u) => u.pathname === '/api/v1/fleet/series' && !u.searchParams.has('ids'))).toEqual([]);
    expect(asked.filter((u) => u.pathname === '/api/v1/fleet/series' && u.searchParams.has('ids'))).toHaveLength(1);
    expect(paths.filter((x) => x.endsWith('/series') && x !== '/api/v1/fleet/series')).toHaveLength(3);
    expect(await p.textContent('#kpis')).toMatch(/1,003/);

    // Back to every hook: their forecasts were fitted already, their sparklines are in the fleet answer.
    asked.length = 0;
    await p.fill('#hook-search', '');
    await rowCount(p, 200);
    await waitLoaded(p, 3);
    expect(asked.map((u) => u.pathname)).toEqual(['/api/v1/hooks']);
  });

  it('keeps what is half typed in the header, and its focus, while the search lists its hooks', async () => {
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/?refresh=off`);
    await waitLoaded(p);
    await p.click('details.custom summary');
    await p.fill('#range-from', '29/11/2026 1');
    // Typed in the search, then on at once to the header's filter before the search applies.
    await p.fill('#hook-search', 'needle');
    await p.fill('#filter-value', 'platf');
    await rowCount(p, 3);
    await waitLoaded(p, 2);
    // The custom range closed as the focus moved on past it, what was typed in it kept for when it opens again.
    expect(await p.inputValue('#range-from')).toBe('29/11/2026 1');
    expect(await p.getAttribute('details.custom', 'open')).toBeNull();
    expect(await p.evaluate(() => document.activeElement?.id)).toBe('filter-value');
    await p.keyboard.type('orm');
    expect(await p.inputValue('#filter-value')).toBe('platform');
    await p.click('details.custom summary');
    expect(await p.inputValue('#range-from')).toBe('29/11/2026 1');
    // The header's links and range buttons carry the search all the same.
    expect(new URL(await p.getAttribute('nav a[href^="/alerts"]', 'href') ?? '', svc.httpUrl).searchParams.get('name')).toBe('needle');
    expect(new URL(await p.getAttribute('a.brand-link', 'href') ?? '', svc.httpUrl).searchParams.get('name')).toBe('needle');
    await p.click('[data-range="7d"]');
    await p.waitForURL(/range=7d/);
    expect(new URL(p.url()).searchParams.get('name')).toBe('needle');
    await waitLoaded(p);
  });

  it('says when no hook name matches, keeps the fleet chart, and Escape or "Clear the search" lists every hook again', async () => {
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/?refresh=off&name=no-such-hook`);
    await waitLoaded(p);
    await p.waitForSelector('#clear-search');
    expect(await p.textContent('#hook-rows')).toBe('No hook in the last 24 hours has "no-such-hook" in its name. Clear the search');
    expect(await p.isVisible('[data-chart="fleet"]')).toBe(true);
    await screenshot(p, 'overview-search-none');
    await p.click('#clear-search');
    await rowCount(p, 200);
    expect(new URL(p.url()).searchParams.has('name')).toBe(false);
    expect(await p.evaluate(() => document.activeElement?.id)).toBe('hook-search');

    // Typed and applied with Enter at once; Escape empties it.
    await p.keyboard.type('bulk-0999');
    await p.keyboard.press('Enter');
    await rowCount(p, 1);
    expect(await rowNames(p)).toEqual(['Stop:bulk-0999']);
    await p.keyboard.press('Escape');
    await rowCount(p, 200);
    expect(await p.inputValue('#hook-search')).toBe('');
    expect(new URL(p.url()).search).toBe('?refresh=off');
    expect(await p.textContent('#table-note')).toMatch(/^1,000 of 1,003 hooks \(the riskiest\)\./);
  });
});

describe('sparklines past the fleet chart\'s limit', () => {
  /** The fleet series requests that name hooks (`ids`), as the page sends them. */
  const idRequests = (p: Page): string[][] => {
    const asked: string[][] = [];
    p.on('request', (r) => {
      const u = new URL(r.url());
      if (u.pathname === '/api/v1/fleet/series' && u.searchParams.has('ids')) asked.push((u.searchParams.get('ids') ?? '').split(','));
    });
    return asked;
  };
  const sparkLabels = (p: Page): Promise<string[]> => p.$$eval('#hook-rows svg.spark', (svgs) => svgs.map((s) => s.getAttribute('aria-label') ?? ''));

  it('draws the sparkline of every row shown: the hooks a search finds, and every hook listed, as their rows come into view', async () => {
    const { page: p } = await page();
    const asked = idRequests(p);
    const byId = p.waitForResponse((r) => new URL(r.url()).searchParams.has('ids'));
    await p.goto(`${svc.httpUrl}/?refresh=off&name=needle-t`);
    await waitLoaded(p);
    await p.waitForFunction(() => document.querySelectorAll('#hook-rows svg.spark').length === 2);
    // One request for the two rows, none for the rows the fleet answer already held.
    expect(asked).toHaveLength(1);
    expect(asked[0]).toHaveLength(2);
    // Another search asks for the rows it shows anew only: the fleet answer is the same, and so are the
    // sparklines already asked over it.
    await p.fill('#hook-search', 'bulk-0999');
    await rowCount(p, 1);
    await waitLoaded(p, 2);
    await p.fill('#hook-search', 'needle');
    await rowCount(p, 3);
    await waitLoaded(p, 3);
    await p.waitForFunction(() => document.querySelectorAll('#hook-rows svg.spark').length === 3);
    expect((await sparkLabels(p)).map((l) => l.split(':').slice(0, 2).join(':')).sort()).toEqual([...NEEDLES].sort());
    expect(await sparkLabels(p)).toContain('PostToolUse:needle-one: largest output per bucket, peak 10 chars; 0 buckets with persisted outputs');
    expect(asked).toHaveLength(2);
    expect(asked[1]).toEqual(await p.$$eval('#hook-rows tr[data-hook-id]', (rows) => rows.filter((r) => r.querySelector('.hook-link')?.textContent === 'PostToolUse:needle-one').map((r) => r.getAttribute('data-hook-id'))));

    // A point of such a sparkline opens its hook at that bucket's time, as any other does.
    const id = await p.getAttribute('#hook-rows tr:first-child', 'data-hook-id');
    await p.locator('#hook-rows tr:first-child svg.spark').click({ position: { x: 119, y: 14 } });
    await p.waitForURL(`**/hooks/${id}?**`);
    const answer = (await (await byId).json()) as FleetSeriesResponse;
    expect(new URL(p.url()).searchParams.get('range')).toBe('custom');
    expect(new URL(p.url()).searchParams.get('from')).toBe(answer.buckets.at(-1));
    await waitLoaded(p);

    // Every hook listed: the rows past the fleet answer are asked for once they come into view, not before.
    await p.goto(`${svc.httpUrl}/?refresh=off`);
    await waitLoaded(p);
    await p.click('#show-all');
    await rowCount(p, 1003);
    await p.waitForFunction(() => document.querySelectorAll('#hook-rows svg.spark').length === 1000);
    const before = asked.length;
    await p.waitForTimeout(500);
    expect(asked.length).toBe(before);
    expect(await p.textContent('#hook-rows tr:last-child .spark-cell')).toBe('loading…');
    await p.locator('#hook-rows tr:last-child').scrollIntoViewIfNeeded();
    await p.waitForFunction(() => document.querySelectorAll('#hook-rows svg.spark').length === 1003);
    expect(asked.slice(before).flat().sort()).toEqual(await p.$$eval('#hook-rows tr:nth-last-child(-n+3)', (rows) => rows.map((r) => r.getAttribute('data-hook-id') ?? '').sort()));
  });

  it('says "not loaded" where a sparkline could not be loaded', async () => {
    const { page: p } = await page({ allow: /status of 503/ });
    await p.route((u) => u.pathname === '/api/v1/fleet/series' && u.searchParams.has('ids'), (route) => route.fulfill({
      status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'unavailable', message: 'the store is not ready' } }),
    }));
    await p.goto(`${svc.httpUrl}/?refresh=off&name=needle`);
    await waitLoaded(p);
    await p.waitForFunction(() => [...document.querySelectorAll('#hook-rows .spark-cell')].filter((c) => c.textContent === 'not loaded').length === 3);
    expect(await p.getAttribute('#hook-rows tr:first-child .spark-state', 'title')).toBe('Could not load this sparkline: the store is not ready. It is asked for again at the next refresh.');
    // The rows and the rest of the page are there: only those sparklines are missing.
    expect(await p.isVisible('#error-banner')).toBe(false);
  });
});
