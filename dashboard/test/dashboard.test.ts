/**
 * End to end in headless Chromium: a real hookwatch (real sockets, real SQLite) fed the captured Claude Code
 * 2.1.332 requests, the dashboard served by it, and every JavaScript error or dialog treated as a failure.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page, Route } from 'playwright-core';
import { OWN_ANSWER_HEADER, type HooksResponse, type OverviewResponse, type SeriesResponse } from '../../shared/src/api.ts';
import { FIXTURE_RUNS, fixtureRequests, getJson, postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { hookId } from '../../collector/src/hooks/extract.ts';
import { createDashboardRouter } from '../server.ts';
import { chartData, closePages, launch, screenshot, showTab, shownAt, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';
import { hookRequest } from './otlp-json.ts';
import { OK, dailySeriesOf, hook, overview } from '../src/testdata/api-responses.ts';

const NOW = Date.parse('2026-11-30T08:30:00Z');
const XSS = '<img src=x onerror=alert(1)>';
/** Every listener on a free port (settings that a version without them ignores). */
const PORTS = { HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0' };

const emptyOverview = {
  from: '', to: '', hooks: 0, statusCounts: { over: 0, near: 0, ok: 0, unknown: 0 }, sizeDataShare: null, clientVersions: [], lastEventAt: null,
  totals: { executions: 0 },
};

let browser: Browser;
let svc: TestService;

const open: WatchedPage[] = [];

async function page(opts: { width?: number; height?: number; allow?: RegExp; timezoneId?: string } = {}): Promise<WatchedPage> {
  const w = await watchedPage(browser, opts);
  open.push(w);
  return w;
}

async function ingest(body: string): Promise<void> {
  const r = await postOtlp(svc.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' });
  expect(r.status).toBe(200);
}

beforeAll(async () => {
  browser = await launch();
  svc = await startTestService(PORTS, { now: () => NOW });
  for (const run of FIXTURE_RUNS) {
    for (const req of fixtureRequests(run)) {
      const r = await postOtlp(svc.otlpHttpUrl, req.path, req.body, { 'content-type': req.contentType });
      expect(r.status).toBe(200);
    }
  }
  await ingest(hookRequest([
    { hookEvent: 'UserPromptSubmit', hookName: XSS, timeMs: NOW - 600_000, userId: XSS, sizes: { stdout: 9_000, additionalContext: 8_900, persisted: 0 } },
  ]));
});

afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

describe('overview', () => {
  it('shows the fleet KPIs and the hooks ranked by risk, as the API has them', async () => {
    const { page: p } = await page();
    await p.goto(svc.httpUrl + '/');
    await waitLoaded(p);
    const api = (await getJson<OverviewResponse>(svc.httpUrl, '/api/v1/overview?from=now-24h&to=now')).body;
    const hooks = (await getJson<HooksResponse>(svc.httpUrl, '/api/v1/hooks?from=now-24h&to=now')).body;
    expect(api.totals.executions).toBeGreaterThan(0);
    expect(await p.textContent('[data-kpi="executions"] .kpi-value')).toBe(api.totals.executions.toLocaleString('en-US'));
    expect(await p.textContent('[data-kpi="persisted"] .kpi-value')).toBe(api.totals.outputsPersisted.toLocaleString('en-US'));
    expect(await p.textContent('[data-kpi="hooks"] .kpi-note')).toContain(`${api.statusCounts.over} over`);
    const ids = await p.$$eval('#hook-rows tr', (rows) => rows.map((r) => r.getAttribute('data-hook-id')));
    expect(ids).toEqual(hooks.hooks.map((h) => h.id));
    expect(hooks.hooks[0]?.status).toBe('over');
    await screenshot(p, 'overview');
  });

  it('builds a row\'s sparkline once per fleet answer: the rows drawn again from it move it, its points still open the hook', async () => {
    const { page: p } = await page();
    // Every sparkline is one <svg> made with createElementNS (sparkline.ts): counted as the page makes them.
    await p.addInitScript(() => {
      const made = { svg: 0 };
      (window as unknown as { sparksMade: typeof made }).sparksMade = made;
      const create = Document.prototype.createElementNS;
      Document.prototype.createElementNS = function (this: Document, ns: string | null, name: string, options?: string | ElementCreationOptions) {
        if (name === 'svg') made.svg++;
        return create.call(this, ns, name, options);
      } as typeof Document.prototype.createElementNS;
    });
    const made = (): Promise<number> => p.evaluate(() => (window as unknown as { sparksMade: { svg: number } }).sparksMade.svg);
    const sparks = (): Promise<number> => p.$$eval('#hook-rows svg.spark', (svgs) => svgs.length);
    /** Whether every row's sparkline is one of those marked by keep(): the same element, not one built anew. */
    const kept = (): Promise<boolean> => p.evaluate(() => {
      const seen = (window as unknown as { sparksSeen: WeakSet<Element> }).sparksSeen;
      return [...document.querySelectorAll('#hook-rows svg.spark')].every((s) => seen.has(s));
    });
    const keep = (): Promise<void> => p.evaluate(() => void ((window as unknown as { sparksSeen: WeakSet<Element> }).sparksSeen = new WeakSet(document.querySelectorAll('#hook-rows svg.spark'))));
    await p.goto(`${svc.httpUrl}/?refresh=off`);
    await waitLoaded(p);
    const rows = await sparks();
    expect(rows).toBeGreaterThan(1);
    // The rows were drawn again once the forecasts were fitted, from the same fleet answer: built once each.
    expect(await made()).toBe(rows);
    await keep();

    // A search draws its rows twice (before and after their forecasts) from the fleet answer already shown.
    await p.fill('#hook-search', 'Session');
    await p.waitForFunction(() => new URL(location.href).searchParams.get('name') === 'Session');
    await waitLoaded(p, 2);
    const found = await sparks();
    expect(found).toBeGreaterThan(0);
    expect(found).toBeLessThan(rows);
    expect(await kept()).toBe(true);
    expect(await made()).toBe(rows);

    // Refresh now brings a new fleet answer: its rows' sparklines built once from it, though drawn three times.
    await p.click('#refresh-now');
    await waitLoaded(p, 3);
    expect(await made()).toBe(rows + found);

    // A point of a sparkline moved into a row drawn anew still opens its hook at that bucket's time.
    const id = await p.getAttribute('#hook-rows tr:first-child', 'data-hook-id');
    await p.locator('#hook-rows tr:first-child svg.spark').click({ position: { x: 119, y: 14 } });
    await p.waitForURL(`**/hooks/${id}?**`);
    expect(new URL(p.url()).searchParams.get('range')).toBe('custom');
    await waitLoaded(p);
  });

  it('renders a hook named like markup as text, and runs none of it', async () => {
    const { page: p, dialogs } = await page();
    await p.goto(svc.httpUrl + '/');
    await waitLoaded(p);
    const names = await p.$$eval('#hook-rows a.hook-link', (as) => as.map((a) => a.textContent));
    expect(names).toContain(XSS);
    expect(await p.$$('#hook-rows img, #app img')).toHaveLength(0);
    // Found by its text content: the name may wrap (<wbr>) where text selectors stop matching.
    const xssId = await p.$$eval('#hook-rows tr', (rows, name) => rows.find((r) => r.querySelector('a.hook-link')?.textContent === name)?.getAttribute('data-hook-id'), XSS);
    await p.click(`#hook-rows tr[data-hook-id="${xssId}"] a.hook-link`);
    await waitLoaded(p, 2);
    expect(await p.textContent('#hook-title')).toContain(XSS);
    expect(await p.textContent('#by-dimension')).toContain(XSS);
    expect(await p.$$('#app img')).toHaveLength(0);
    expect(dialogs).toEqual([]);
    expect(await p.title()).toBe(`\u2068${XSS}\u2069 · hookwatch`);
  });

  it('sorts by a column, keeps the sort in the URL and across a reload', async () => {
    const { page: p } = await page();
    await p.goto(svc.httpUrl + '/');
    await waitLoaded(p);
    await p.click('button[data-sort="executions"]');
    await waitLoaded(p);
    expect(new URL(p.url()).searchParams.get('sort')).toBe('executions');
    const counts = async (): Promise<number[]> => (await p.$$eval('#hook-rows tr td:nth-child(3)', (tds) => tds.map((t) => Number((t.textContent ?? '').replace(/,/g, '')))));
    const before = await counts();
    expect(before).toEqual([...before].sort((a, b) => b - a));
    await p.reload();
    await waitLoaded(p);
    expect(await counts()).toEqual(before);
    expect(await p.getAttribute('th[aria-sort="descending"] button', 'data-sort')).toBe('executions');
  });

  it('keeps keyboard focus on the sort button pressed, and puts it on the content of a page opened', async () => {
    const { page: p } = await page();
    await p.goto(svc.httpUrl + '/');
    await waitLoaded(p);
    await p.focus('button[data-sort="name"]');
    await p.keyboard.press('Enter');
    await waitLoaded(p, 2);
    await p.waitForFunction(() => (document.activeElement as HTMLElement | null)?.dataset['sort'] === 'name');
    await p.focus('#hook-rows tr:first-child a.hook-link');
    await p.keyboard.press('Enter');
    await waitLoaded(p, 3);
    await p.waitForFunction(() => document.activeElement?.id === 'main');
    expect(new URL(p.url()).pathname).toMatch(/^\/hooks\//);
  });

  // A keyboard reader opens the hook and tabs on; a mouse reader clicks it, then a control of the header (the
  // filter's value), while the hook's page waits.
  const HOOK_LINK = '#hook-rows tr:first-child a.hook-link';
  for (const [how, opens, move] of [
    ['tabbed to', async (p: WatchedPage['page']) => {
      await p.focus(HOOK_LINK);
      await p.keyboard.press('Enter');
    }, (p: WatchedPage['page']) => p.keyboard.press('Tab')],
    ['clicked', (p: WatchedPage['page']) => p.click(HOOK_LINK), (p: WatchedPage['page']) => p.click('#filter-value')],
  ] as const) it(`leaves the focus where the reader ${how} while a page opened loads`, async () => {
    const { page: p } = await page();
    await p.goto(svc.httpUrl + '/');
    await waitLoaded(p);
    // The hook's page waits for its figures until the test lets them through.
    const held: Route[] = [];
    const api = (u: URL): boolean => u.pathname.startsWith('/api/v1/hooks/');
    await p.route(api, (r) => void held.push(r));
    await opens(p);
    await expect.poll(() => held.length, { timeout: 10_000 }).toBeGreaterThan(0);
    const focused = (): Promise<string> => p.evaluate(() => {
      const el = document.activeElement;
      return el && el !== document.body ? `${el.tagName} ${el.id} ${el.className} ${(el.textContent ?? '').slice(0, 40)}` : 'none';
    });
    // Meanwhile the reader moves on: the control reached keeps the focus once the page is drawn.
    await move(p);
    const reached = await focused();
    expect(reached).not.toBe('none');
    await p.unroute(api);
    for (const r of held) await r.continue().catch(() => undefined);
    await waitLoaded(p, 2);
    await p.locator('#hook-content').waitFor();
    expect(await focused()).toBe(reached);
  });

  it('is readable on a narrow screen, overview and hook page alike', async () => {
    const { page: p } = await page({ width: 390 });
    const overflow = (): Promise<{ by: number; wide: string[] }> => p.evaluate(() => {
      // Nothing but the scrollable tables may be wider than the screen.
      const wide = [...document.querySelectorAll('body *')].filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1 && !el.closest('.table-scroll') && !el.closest('details:not([open]) > :not(summary)'));
      return { by: document.documentElement.scrollWidth - window.innerWidth, wide: wide.slice(0, 5).map((el) => `${el.tagName}.${el.className}#${el.id}`) };
    });
    await p.goto(svc.httpUrl + '/');
    await waitLoaded(p);
    expect(await overflow()).toEqual({ by: 0, wide: [] });
    await screenshot(p, 'overview-narrow');
    await p.click('#hook-rows tr:first-child a.hook-link');
    await waitLoaded(p, 2);
    expect(await overflow()).toEqual({ by: 0, wide: [] });
    await screenshot(p, 'hook-narrow');
  });

  it('spaces the overview header\'s rows on a 390 px phone as the header spaces them, the filter form and the refresh controls included', async () => {
    const { page: p } = await page({ width: 390, height: 844 });
    await p.goto(svc.httpUrl + '/');
    await waitLoaded(p);
    const layout = await p.evaluate(() => {
      const header = document.querySelector('header.top') as HTMLElement;
      const rowGap = parseFloat(getComputedStyle(header).rowGap);
      // The header's rows, as drawn: what takes room in it, by where it starts.
      const items = [...header.children].map((el) => ({ el, box: el.getBoundingClientRect() })).filter(({ box }) => box.width > 0 || box.height > 0);
      const rows: { top: number; bottom: number; what: string[] }[] = [];
      for (const { el, box } of items.sort((a, b) => a.box.top - b.box.top)) {
        const row = rows.at(-1);
        const what = `${el.tagName.toLowerCase()}.${el.className}`;
        if (row && box.top < row.bottom) {
          row.bottom = Math.max(row.bottom, box.bottom);
          row.what.push(what);
        } else rows.push({ top: box.top, bottom: box.bottom, what: [what] });
      }
      const gaps = rows.slice(1).map((row, i) => ({ after: rows[i]!.what.join(' '), gap: Math.round(row.top - rows[i]!.bottom) }));
      const filters = header.querySelector('.filter-form')!.getBoundingClientRect();
      const refresh = header.querySelector('.refresh-line')!.getBoundingClientRect();
      const wide = [...header.querySelectorAll('*')].filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1).map((el) => `${el.tagName}.${el.className}#${el.id}`);
      return { rowGap, gaps, filtersToRefresh: Math.round(refresh.top - filters.bottom), wide, scroll: document.documentElement.scrollWidth - window.innerWidth };
    });
    expect(layout.rowGap).toBe(8);
    expect(layout.filtersToRefresh).toBe(layout.rowGap);
    for (const { after, gap } of layout.gaps) expect(gap, `the gap after ${after}`).toBeLessThanOrEqual(layout.rowGap);
    expect([layout.wide, layout.scroll]).toEqual([[], 0]);
  });

  it('fits a 320-pixel-wide window, WCAG\'s reflow width, on every page, its header\'s controls included', async () => {
    const { page: p } = await page({ width: 320 });
    const overflow = (): Promise<{ by: number; wide: string[] }> => p.evaluate(() => {
      const wide = [...document.querySelectorAll('body *')].filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1 && !el.closest('.table-scroll') && !el.closest('details:not([open]) > :not(summary)'));
      return { by: document.documentElement.scrollWidth - window.innerWidth, wide: wide.slice(0, 5).map((el) => `${el.tagName}.${el.className}#${el.id}`) };
    });
    await p.goto(svc.httpUrl + '/');
    await waitLoaded(p);
    expect(await overflow()).toEqual({ by: 0, wide: [] });
    await p.click('#hook-rows tr:first-child a.hook-link');
    await waitLoaded(p, 2);
    expect(await overflow()).toEqual({ by: 0, wide: [] });
    for (const path of ['/alerts', '/forwarding']) {
      await p.goto(svc.httpUrl + path);
      await waitLoaded(p);
      expect(await overflow()).toEqual({ by: 0, wide: [] });
    }
  });

  it('keeps an alert about a long hook name within a narrow screen', async () => {
    const long = 'PostToolUse:mcp__internal-knowledge-base-server__search_engineering_design_documents_by_topic';
    await ingest(hookRequest([{ hookEvent: 'PostToolUse', hookName: long, timeMs: NOW - 60_000, sizes: { stdout: 12_100, additionalContext: 12_000, persisted: 1 } }]));
    const { page: p } = await page({ width: 390 });
    await p.goto(svc.httpUrl + '/alerts');
    await p.waitForFunction((name) => [...document.querySelectorAll('.alert-head')].some((el) => (el.textContent ?? '').includes(name)), long, { timeout: 15_000 });
    const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    await screenshot(p, 'alerts-narrow');
    expect(overflow).toBe(0);
  });

  it('filters by a dimension from the header, in the URL and in the API calls', async () => {
    const { page: p } = await page();
    await p.goto(svc.httpUrl + '/');
    await waitLoaded(p);
    await p.selectOption('#filter-dimension', 'user.id');
    await p.fill('#filter-value', XSS);
    const filtered = p.waitForResponse((r) => r.url().includes('/api/v1/hooks?') && r.url().includes('user.id='));
    await p.click('.filter-form button[type="submit"]');
    const body = (await (await filtered).json()) as HooksResponse;
    await waitLoaded(p);
    expect(new URL(p.url()).searchParams.get('f.user.id')).toBe(XSS);
    expect(body.hooks.map((h) => h.hookName)).toEqual([XSS]);
    expect(await p.$$eval('#hook-rows a.hook-link', (as) => as.map((a) => a.textContent))).toEqual([XSS]);
    expect(await p.textContent('.chip')).toContain(`user.id = ${XSS}`);
    await p.click('.chip-remove');
    await waitLoaded(p);
    expect(new URL(p.url()).searchParams.get('f.user.id')).toBeNull();
    expect((await p.$$('#hook-rows tr')).length).toBeGreaterThan(1);
  });

  it('shows an API failure as an error and keeps trying', async () => {
    const app = express();
    let failing = true;
    app.get('/api/v1/overview', (_req, res) => void (failing ? res.status(500).json({ error: { code: 'internal', message: 'internal error' } }) : res.json(emptyOverview)));
    app.get('/api/v1/hooks', (_req, res) => void res.json({ from: '', to: '', hooks: [] }));
    app.get('/api/v1/fleet/series', (_req, res) => void res.json({ from: '', to: '', step: 1800, buckets: [], hooks: [] }));
    app.get('/api/v1/dimensions', (_req, res) => void res.json({ dimensions: ['user.id'] }));
    app.get('/api/v1/alerts', (_req, res) => void res.json({ alerts: [] }));
    app.use(createDashboardRouter());
    const server = createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { page: p } = await page({ allow: /status of 500/ });
      await p.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/?refresh=1s`);
      await p.waitForSelector('#error-banner:not([hidden])');
      expect(await p.textContent('#error-banner')).toContain('internal error (nothing to show yet; retrying every 1 s)');
      failing = false;
      await p.waitForSelector('#empty-state');
      expect(await p.isHidden('#error-banner')).toBe(true);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

/**
 * A stand-in hookwatch on loopback: `app`'s own routes, then a server without the fleet series (an older one:
 * its 404 is allowed by the pages that use this), the dimensions and the dashboard itself.
 */
async function stubHookwatch(app: express.Express): Promise<{ url: string; close(): Promise<void> }> {
  app.get('/api/v1/fleet/series', (_req, res) => void res.status(404).json({ error: { code: 'not_found', message: 'no such route' } }));
  app.get('/api/v1/dimensions', (_req, res) => void res.json({ dimensions: ['user.id'] }));
  app.use(createDashboardRouter());
  const server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('kept open all day', () => {
  /**
   * A hookwatch that answers with one hook until `failing` is set, and counts the calls for the rows; `more` adds
   * executions to the hook, a change the next refresh shows.
   */
  const serve = async (): Promise<{ url: string; calls: () => number; fail(on: boolean): void; more(): void; close(): Promise<void> }> => {
    let calls = 0;
    let failing = false;
    let executions = OK.executions;
    const lastEventAt = new Date(Date.now() - 4000).toISOString();
    const app = express();
    app.use('/api/v1', (req, res, next) => {
      if (req.path === '/hooks') calls++;
      if (failing) res.status(503).json({ error: { code: 'unavailable', message: 'service unavailable' } });
      else next();
    });
    app.get('/api/v1/overview', (_req, res) => void res.json(overview({ hooks: 1, lastEventAt })));
    app.get('/api/v1/hooks', (_req, res) => void res.json({ from: '2026-11-29T08:30:00.000Z', to: '2026-11-30T08:30:00.000Z', hooks: [{ ...OK, executions, lastSeen: lastEventAt }], total: 1, nextCursor: null }));
    app.get('/api/v1/hooks/:id/series', (_req, res) => void res.json(dailySeriesOf(OK, [])));
    const stub = await stubHookwatch(app);
    return { ...stub, calls: () => calls, fail: (on) => void (failing = on), more: () => void (executions += 100) };
  };

  it('during an outage, says how old the data is, keeps relative times counting, and asks less and less often', async () => {
    const srv = await serve();
    try {
      const { page: p } = await page({ allow: /status of (503|404)/ });
      await p.goto(`${srv.url}/?refresh=1s`);
      await waitLoaded(p);
      const before = await p.textContent('[data-kpi="last-event"] .kpi-value');
      srv.fail(true);
      const from = srv.calls();
      await p.waitForSelector('#error-banner:not([hidden])');
      // A screen reader hears the failure once: what changes while it lasts is outside the alert.
      const firstNote = await p.textContent('#error-banner');
      await p.evaluate(() => {
        const w = window as unknown as { alertChanges: number };
        w.alertChanges = 0;
        new MutationObserver((m) => void (w.alertChanges += m.length)).observe(document.querySelector('[role="alert"]')!, { subtree: true, childList: true, characterData: true, attributes: true });
      });
      await p.waitForTimeout(7000);
      // Tries after 1, 1, 2 and 4 s (not seven times): the server is given room to come back.
      expect(srv.calls() - from).toBeLessThanOrEqual(4);
      expect(await p.textContent('#error-banner')).toMatch(new RegExp(`service unavailable \\(showing data from ${await shownAt(p)}, \\d+ s ago; retrying less often, every \\d+ s\\)`));
      expect(await p.textContent('#error-banner')).not.toBe(firstNote);
      expect(await p.textContent('[role="alert"]')).toBe('Could not refresh: service unavailable');
      expect(await p.evaluate(() => (window as unknown as { alertChanges: number }).alertChanges)).toBe(0);
      expect(await p.textContent('[data-kpi="last-event"] .kpi-value')).not.toBe(before);
      expect(await p.textContent('#hook-rows time')).not.toBe(before);
      srv.fail(false);
      await p.click('#refresh-now');
      await p.waitForSelector('#error-banner', { state: 'hidden' });
    } finally {
      await srv.close();
    }
  });

  it('says how old the data shown is on the Updated line, counting on between refreshes, paused or not', async () => {
    const srv = await serve();
    try {
      const { page: p } = await page({ allow: /status of 404/ });
      await p.clock.install();
      await p.goto(`${srv.url}/?refresh=off`);
      await waitLoaded(p);
      expect(await p.textContent('#last-updated')).toBe('Updated 0 s ago · paused');
      expect(await p.getAttribute('#last-updated', 'title')).toMatch(/^Last updated \d\d\/\d\d\/\d{4}, \d\d:\d\d$/);
      // No outage: the banner stays hidden, and the line itself shows the data going stale.
      // The page's clock also runs on in real time between these steps (seconds on a loaded machine).
      await p.clock.fastForward('00:20');
      expect(await p.textContent('#last-updated')).toMatch(/^Updated (1[5-9]|2\d) s ago · paused$/);
      await p.clock.fastForward('02:00');
      expect(await p.textContent('#last-updated')).toBe('Updated 2 min ago · paused');
      expect(await p.isVisible('#error-banner')).toBe(false);

      // Refreshing every minute: it counts up to the next refresh, then starts again.
      await p.goto(`${srv.url}/?refresh=1m`);
      await waitLoaded(p);
      await p.clock.fastForward('00:30');
      expect(await p.textContent('#last-updated')).toMatch(/^Updated (2[5-9]|3\d) s ago$/);
      await p.clock.fastForward('00:31');
      await waitLoaded(p, 2);
      expect(await p.textContent('#last-updated')).toMatch(/^Updated \d s ago$/);
    } finally {
      await srv.close();
    }
  });

  it('tells a screen reader of refreshes that changed the data, at most once a minute, and of hookwatch answering again', async () => {
    const srv = await serve();
    try {
      const { page: p } = await page({ allow: /status of (503|404)/ });
      await p.clock.install();
      await p.goto(`${srv.url}/?refresh=15s`);
      await waitLoaded(p);
      const region = p.locator('#refresh-news');
      expect(await region.getAttribute('aria-live')).toBe('polite');
      expect(await p.getByRole('status').filter({ hasText: 'Data refreshed' }).count()).toBe(0);
      let loads = 1;
      const refresh = async (): Promise<string> => {
        await p.clock.fastForward('00:15');
        await waitLoaded(p, ++loads);
        return (await region.textContent()) ?? '';
      };
      // The first drawing and refreshes that change nothing (relative times count on) are not news.
      expect(await refresh()).toBe('');
      expect(await refresh()).toBe('');
      srv.more();
      const first = await refresh();
      expect(first).toMatch(/^Data refreshed at \d\d:\d\d:\d\d: it changed\.$/);
      expect(await p.getByRole('status').filter({ hasText: 'Data refreshed' }).count()).toBe(1);
      // Another change within the minute waits for it, and is then said once.
      srv.more();
      expect(await refresh()).toBe(first);
      expect(await refresh()).toBe(first);
      expect(await refresh()).toBe(first);
      await p.clock.fastForward('00:16');
      await waitLoaded(p, ++loads);
      const second = (await region.textContent()) ?? '';
      expect(second).toMatch(/^Data refreshed at .*: it changed\.$/);
      expect(second).not.toBe(first);
      expect(await refresh()).toBe(second);

      // A failure is the alert's to say; hookwatch answering again is said at once.
      srv.fail(true);
      await p.clock.fastForward('00:15');
      await p.waitForSelector('#error-banner:not([hidden])');
      expect(await region.textContent()).toBe(second);
      srv.fail(false);
      await p.click('#refresh-now');
      await p.waitForSelector('#error-banner', { state: 'hidden' });
      await expect.poll(() => region.textContent(), { timeout: 10_000 }).toMatch(/^Data refreshed at .*: hookwatch answers again\.$/);
    } finally {
      await srv.close();
    }
  });

  it('says nothing of the age of the data on a page that has shown none yet, not the age of the page before it', async () => {
    const { page: p } = await page({ allow: /status of 503/ });
    await p.clock.install();
    await p.goto(`${svc.httpUrl}/?refresh=off`);
    await waitLoaded(p);
    await p.clock.fastForward('01:00');
    expect(await p.textContent('#last-updated')).toBe('Updated 1 min ago · paused');
    // The alerts page cannot load: it shows nothing, and says so; the overview's age is not this page's.
    const alerts = (u: URL): boolean => u.pathname === '/api/v1/alerts';
    await p.route(alerts, (route) => route.fulfill({
      status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'unavailable', message: 'the store is not ready' } }),
    }));
    await p.click('nav a[href^="/alerts"]');
    await p.waitForSelector('#error-banner:not([hidden])');
    expect(await p.textContent('#error-banner')).toContain('nothing to show yet');
    // From the moment the page is drawn, not from the next tick of the clocks.
    expect([await p.textContent('#last-updated'), await p.getAttribute('#last-updated', 'title')]).toEqual(['', null]);
    await p.clock.fastForward('00:10');
    expect(await p.textContent('#last-updated')).toBe('');
    await p.unroute(alerts);
    await p.click('#refresh-now');
    await p.waitForSelector('#error-banner', { state: 'hidden' });
    expect(await p.textContent('#last-updated')).toBe('Updated 0 s ago · paused');
  });

  it('does not refresh while the tab is hidden, and refreshes at once when it shows again', async () => {
    const srv = await serve();
    try {
      const { page: p } = await page({ allow: /status of 404/ });
      await p.goto(`${srv.url}/?refresh=1s`);
      await waitLoaded(p);
      await showTab(p, false);
      // A refresh already under way when the tab hid may still finish; none starts after it.
      await p.waitForSelector('body:not([aria-busy])', { state: 'attached' });
      const hidden = srv.calls();
      await p.waitForTimeout(2500);
      expect(srv.calls()).toBe(hidden);
      await showTab(p, true);
      // A hidden tab keeps no timer: the refresh seen now is the one showing the tab started.
      await expect.poll(() => srv.calls(), { timeout: 20_000 }).toBeGreaterThan(hidden);
    } finally {
      await srv.close();
    }
  });

  it('refreshes at once when the computer wakes from sleep, rather than showing hours-old data as current', async () => {
    const { page: p } = await page();
    await p.clock.install();
    await p.goto(`${svc.httpUrl}/?refresh=5m`);
    await waitLoaded(p);
    // Three hours asleep: the clock jumps on, and the page's timers (the next refresh five minutes away) stood still.
    await p.clock.setSystemTime(await p.evaluate(() => Date.now() + 3 * 3_600_000));
    // The next tick of the age sees the jump and refreshes, not five minutes later.
    await p.clock.runFor(5000);
    await waitLoaded(p, 2);
    expect(await p.textContent('#last-updated')).toMatch(/^Updated \d s ago$/);
    // Paused, it stays paused: the line shows the data's age instead.
    await p.goto(`${svc.httpUrl}/?refresh=off`);
    await waitLoaded(p);
    await p.clock.setSystemTime(await p.evaluate(() => Date.now() + 3 * 3_600_000));
    await p.clock.runFor(5000);
    expect(await p.textContent('#last-updated')).toBe('Updated 3 h ago · paused');
    expect(await p.evaluate(() => document.body.dataset['loaded'])).toBe('1');
  });

  it('recolours its charts when the system switches between light and dark, even with refresh paused', async () => {
    const { page: p } = await page();
    await p.emulateMedia({ colorScheme: 'light' });
    await p.goto(`${svc.httpUrl}/hooks/${hookId('SessionStart', 'SessionStart:startup')}?refresh=off`);
    await waitLoaded(p);
    /** The colour the cliff chart draws its axis text in, and the one the page's text around it is now. */
    const colours = (): Promise<{ chart: unknown; page: string }> => p.evaluate(() => {
      const C = (window as unknown as { Chart: { getChart(id: string): { options: { scales: { y: { ticks: { color: unknown } } } } } | undefined } }).Chart;
      const probe = document.createElement('span');
      probe.style.color = 'var(--muted)';
      document.body.append(probe);
      const page = getComputedStyle(probe).color;
      probe.remove();
      return { chart: C.getChart('chart-cliff')?.options.scales.y.ticks.color, page };
    });
    const light = await colours();
    expect(light.chart).toBe(light.page);
    // Evening: the system turns dark. The page follows it, and so do the charts, drawn again.
    await p.emulateMedia({ colorScheme: 'dark' });
    await waitLoaded(p, 2);
    const dark = await colours();
    expect(dark.page).not.toBe(light.page);
    expect(dark.chart).toBe(dark.page);
    expect(await p.textContent('#refresh-pause')).toBe('Resume');
  });

  it('keeps its data and the view chosen when the system switches between light and dark during an outage', async () => {
    const srv = await serve();
    try {
      const { page: p } = await page({ allow: /status of (404|503)/ });
      await p.emulateMedia({ colorScheme: 'light' });
      await p.goto(`${srv.url}/?refresh=off`);
      await waitLoaded(p);
      const rows = await p.locator('#hook-rows tr').count();
      expect(rows).toBeGreaterThan(0);
      // A range half typed in the header's Custom popover, and hookwatch stops answering.
      await p.click('details.custom summary');
      await p.fill('#range-from', '29/11/2026 10:00');
      srv.fail(true);
      const asked = srv.calls();
      await p.emulateMedia({ colorScheme: 'dark' });
      await expect.poll(() => srv.calls(), { timeout: 20_000 }).toBeGreaterThan(asked);
      await p.waitForSelector('#error-banner:not([hidden])');
      // The rows stay, with how old they are, as for any failed refresh; so does what was typed.
      expect(await p.textContent('#error-age')).toMatch(new RegExp(`^ \\(showing data from ${await shownAt(p)}, \\d+ s ago; refresh is paused`));
      expect(await p.locator('#hook-rows tr').count()).toBe(rows);
      expect(await p.inputValue('#range-from')).toBe('29/11/2026 10:00');
      expect(await p.getAttribute('details.custom', 'open')).toBe('');
      // Choosing a theme with the toggle does the same, and the toggle says the choice.
      const before = srv.calls();
      await p.click('#theme-toggle');
      await expect.poll(() => srv.calls(), { timeout: 20_000 }).toBeGreaterThan(before);
      await p.waitForSelector('body:not([aria-busy])', { state: 'attached' });
      expect(await p.textContent('#theme-toggle')).toBe('Theme: dark');
      expect(await p.getAttribute('#theme-toggle', 'aria-label')).toBe('Theme: dark (change)');
      expect(await p.locator('#hook-rows tr').count()).toBe(rows);
    } finally {
      await srv.close();
    }
  });

  it('lets a refresh asked for during another finish, however slow, without a second timer cutting it short', async () => {
    const { page: p } = await page();
    await p.clock.install();
    await p.goto(`${svc.httpUrl}/?refresh=15s`);
    await waitLoaded(p);
    // hookwatch answers slowly: every request waits until the test lets it through.
    const held: Route[] = [];
    const api = (u: URL): boolean => u.pathname.startsWith('/api/');
    await p.route(api, (r) => void held.push(r));
    let asked = 0;
    p.on('request', (r) => void (new URL(r.url()).pathname === '/api/v1/hooks' && asked++));
    // The timer's refresh goes out, and Refresh now is pressed while it waits (as waking or the network coming
    // back does): the first is given up for the second.
    await p.clock.runFor(15_000);
    await expect.poll(() => asked, { timeout: 10_000 }).toBe(1);
    await p.click('#refresh-now');
    await expect.poll(() => asked, { timeout: 10_000 }).toBe(2);
    // The refresh period passes while the second still waits: no third one cuts it short.
    await p.clock.runFor(15_000);
    await p.clock.runFor(15_000);
    expect(asked).toBe(2);
    await p.unroute(api);
    for (const r of held) await r.continue().catch(() => undefined);
    await waitLoaded(p, 2);
    expect(await p.isHidden('#error-banner')).toBe(true);
  });

  it('gives up on a request left unanswered (a network dropped without a word), says so, and tries again', async () => {
    // A zone half an hour off UTC: the banner's clock time is the page's, as the Updated line's tooltip is.
    const { page: p } = await page({ timezoneId: 'Asia/Kolkata' });
    await p.clock.install();
    await p.goto(`${svc.httpUrl}/?refresh=15s`);
    await waitLoaded(p);
    // Requests go out and nothing ever comes back.
    const api = (u: URL): boolean => u.pathname.startsWith('/api/');
    await p.route(api, () => undefined);
    await p.clock.runFor(15_000);
    await p.waitForSelector('body[aria-busy="true"]', { state: 'attached' });
    await p.clock.runFor(60_000);
    await p.waitForSelector('#error-banner:not([hidden])');
    expect(await p.textContent('#error-alert')).toBe('Could not refresh: hookwatch did not answer within 60 s');
    expect(await p.textContent('#error-age')).toMatch(new RegExp(`^ \\(showing data from ${await shownAt(p)}, 1 min ago; retrying every 15 s\\)$`));
    expect(await p.locator('#hook-rows tr').count()).toBeGreaterThan(0);
    await p.unroute(api);
    await p.clock.runFor(15_000);
    await p.waitForSelector('#error-banner', { state: 'hidden' });
    await waitLoaded(p, 2);
  });

  it('waits as long as a 503\'s Retry-After asks before trying again, five minutes at most, and says how long', async () => {
    const { page: p } = await page({ allow: /status of 503/ });
    await p.clock.install();
    await p.goto(`${svc.httpUrl}/?refresh=15s`);
    await waitLoaded(p);
    // hookwatch too busy (http.maxPendingQueries) asks for two minutes, then for an hour.
    let retryAfter = '120';
    let tries = 0;
    const api = (u: URL): boolean => u.pathname.startsWith('/api/');
    await p.route(api, (route) => {
      if (new URL(route.request().url()).pathname === '/api/v1/hooks') tries++;
      return route.fulfill({
        status: 503, contentType: 'application/json; charset=utf-8', headers: { 'retry-after': retryAfter, [OWN_ANSWER_HEADER]: '1' },
        body: JSON.stringify({ error: { code: 'unavailable', message: 'too many queries pending' } }),
      });
    });
    await p.clock.runFor(15_000);
    await p.waitForSelector('#error-banner:not([hidden])');
    expect(tries).toBe(1);
    expect(await p.textContent('#error-alert')).toBe('Could not refresh: too many queries pending');
    expect(await p.textContent('#error-age')).toMatch(/; retrying every 2 min\)$/);
    // Its own backoff would have tried after 15 s and 30 s more: not before the two minutes asked.
    await p.clock.runFor(119_000);
    expect(tries).toBe(1);
    retryAfter = '3600';
    await p.clock.runFor(1_000);
    await expect.poll(() => tries, { timeout: 10_000 }).toBe(2);
    // An hour asked is held to five minutes: a page left open comes back on its own.
    await expect.poll(() => p.textContent('#error-age'), { timeout: 10_000 }).toMatch(/; retrying less often, every 5 min\)$/);
    await p.clock.runFor(299_000);
    expect(tries).toBe(2);
    await p.unroute(api);
    await p.clock.runFor(1_000);
    await p.waitForSelector('#error-banner', { state: 'hidden' });
    await waitLoaded(p, 2);
    expect(tries).toBe(2);
  });

  it('says the browser is offline while the network is down, and tries again as soon as it is back', async () => {
    const { page: p, context } = await page({ allow: /ERR_INTERNET_DISCONNECTED/ });
    await p.clock.install();
    await p.goto(`${svc.httpUrl}/?refresh=15s`);
    await waitLoaded(p);
    await context.setOffline(true);
    // Three refreshes fail: the next try is a minute away. Each failure is waited for (the banner it announces)
    // before the clock moves on, or the clock could pass before the next try is set.
    for (const [wait, next] of [[15_000, 'every 15 s'], [15_000, 'less often, every 30 s'], [30_000, 'less often, every 1 min']] as const) {
      await p.clock.runFor(wait);
      await expect.poll(() => p.textContent('#error-age'), { timeout: 10_000 }).toMatch(new RegExp(`; retrying ${next}\\)$`));
    }
    expect(await p.textContent('#error-alert')).toBe('Could not refresh: this browser is offline (no network connection)');
    expect(await p.textContent('#error-age')).toMatch(/retrying less often, every 1 min/);
    expect(await p.locator('#hook-rows tr').count()).toBeGreaterThan(0);
    await context.setOffline(false);
    // Back online: refreshed without waiting out the minute (the page's clock does not move).
    await p.waitForSelector('#error-banner', { state: 'hidden' });
    await waitLoaded(p, 2);
  });
});

describe('signed out', () => {
  const serve = async (answer: (res: express.Response) => void): Promise<{ url: string; calls: () => number; close(): Promise<void> }> => {
    let calls = 0;
    const app = express();
    app.use('/api', (_req, res) => {
      calls++;
      answer(res);
    });
    app.use(createDashboardRouter());
    const server = createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      calls: () => calls,
      async close() {
        server.closeAllConnections();
        await new Promise((r) => server.close(r));
      },
    };
  };

  it('says signed out on a 401, stops asking, and shows no endless "Loading…"', async () => {
    // hookwatch's own 401: its JSON, with its mark.
    const srv = await serve((res) => void res.status(401).set(OWN_ANSWER_HEADER, '1').json({ error: { code: 'unauthorized', message: 'authentication required' } }));
    try {
      const { page: p } = await page({ allow: /status of 401/ });
      await p.goto(`${srv.url}/alerts?refresh=1s`);
      await p.waitForSelector('#signed-out');
      expect(await p.textContent('#error-banner')).toContain('Signed out: hookwatch asks for credentials again; reload the page to sign in (nothing to show; refresh stopped)');
      expect(await p.textContent('#main')).not.toContain('Loading…');
      const asked = srv.calls();
      await p.waitForTimeout(2500);
      expect(srv.calls()).toBe(asked);
    } finally {
      await srv.close();
    }
  });

  it('says the sign-in session expired when a proxy redirects to its login page', async () => {
    const srv = await serve((res) => void res.redirect(302, 'https://sso.invalid/login'));
    try {
      const { page: p } = await page();
      await p.goto(`${srv.url}/?refresh=1s`);
      await p.waitForSelector('#signed-out');
      const text = await p.textContent('#error-banner');
      expect(text).toContain('the sign-in session has expired');
      expect(text).not.toContain('did not answer');
      const asked = srv.calls();
      await p.waitForTimeout(2500);
      expect(srv.calls()).toBe(asked);
    } finally {
      await srv.close();
    }
  });
});

describe('an answer cut off', () => {
  it('says hookwatch did not answer when the connection drops in the middle of an answer, not that the answer could not be read', async () => {
    let calls = 0;
    const app = express();
    // Headers and the start of the body, then the connection is gone: a restart, a proxy cut, a network dropped.
    app.use('/api', (_req, res) => {
      calls++;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '5000' });
      res.write('{"hooks": [');
      setTimeout(() => res.socket?.destroy(), 50);
    });
    app.use(createDashboardRouter());
    const server = createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { page: p } = await page({ allow: /ERR_CONTENT_LENGTH_MISMATCH|Failed to fetch|network error/ });
      await p.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/?refresh=1s`);
      await p.waitForSelector('#error-banner:not([hidden])');
      expect(calls).toBeGreaterThan(0);
      expect(await p.textContent('#error-alert')).toBe('Could not refresh: hookwatch did not answer (is it running?)');
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('more hooks than one page', () => {
  it('says the table holds the riskiest page, and lists every hook on "Show all"', async () => {
    const all = Array.from({ length: 1001 }, (_v, i) => hook(i.toString(16).padStart(16, '0'), `Stop:h${String(i).padStart(4, '0')}`));
    const asked: string[] = [];
    /** An overview call held until the test lets it answer, and a way to know it was asked. */
    let held: { asked: () => void; release: Promise<void> } | undefined;
    const app = express();
    app.get('/api/v1/overview', (_req, res) => {
      const answer = (): void => void res.json(overview({ hooks: all.length, statusCounts: { over: 0, near: 0, ok: 1001, unknown: 0 } }));
      if (!held) return answer();
      held.asked();
      void held.release.then(answer);
    });
    app.get('/api/v1/hooks', (req, res) => {
      asked.push(req.url);
      const from = Number(req.query['cursor'] ?? 0);
      const limit = Number(req.query['limit'] ?? 1000);
      const end = Math.min(all.length, from + limit);
      res.json({ from: '2026-11-29T08:30:00.000Z', to: '2026-11-30T08:30:00.000Z', hooks: all.slice(from, end), total: all.length, nextCursor: end < all.length ? String(end) : null });
      // The ranking is made anew for every request: the hooks on each side of the first page's boundary trade places.
      all.splice(999, 2, all[1000]!, all[999]!);
    });
    app.get('/api/v1/hooks/:id/series', (req, res) => void res.json(dailySeriesOf(all.find((x) => x.id === req.params.id) ?? OK, [])));
    const stub = await stubHookwatch(app);
    const rowIds = (p: WatchedPage['page']): Promise<string[]> => p.$$eval('#hook-rows tr', (rows) => rows.map((r) => r.getAttribute('data-hook-id') ?? ''));
    try {
      const { page: p } = await page({ allow: /status of 404/ });
      await p.goto(`${stub.url}/?refresh=off`);
      await waitLoaded(p);
      expect(await p.textContent('#table-note')).toMatch(/^1,000 of 1,001 hooks \(the riskiest\)\./);
      expect(await p.textContent('[data-kpi="hooks"] .kpi-note')).toContain('1,001 ok');
      await p.click('#show-all');
      await p.waitForSelector('#table-note:not(:has(#show-all)):not(:text("Loading"))');
      expect(await p.textContent('#table-note')).toMatch(/^1,001 hooks\./);
      // Every hook once, though the ranking moved between the requests.
      expect(new Set(await rowIds(p))).toEqual(new Set(all.map((x) => x.id)));
      expect(await rowIds(p)).toHaveLength(1001);
      // The rest in one request from the top, in the API's largest pages, over the range the first resolved.
      expect(asked.at(-1)).not.toContain('cursor=');
      expect(asked.at(-1)).toContain('limit=5000');
      expect(asked.at(-1)).toContain('from=2026-11-29T08%3A30%3A00.000Z');
      // A refresh keeps every hook.
      await p.click('#refresh-now');
      await waitLoaded(p, 2);
      expect(await rowIds(p)).toHaveLength(1001);

      // "Show all" pressed while a refresh asked before it is still under way: every hook stays, no button back.
      await p.goto(`${stub.url}/?refresh=off`);
      await waitLoaded(p);
      let release = (): void => undefined;
      const overviewAsked = new Promise<void>((resolveAsked) => {
        held = { asked: resolveAsked, release: new Promise<void>((r) => void (release = r)) };
      });
      await p.click('#refresh-now');
      await overviewAsked;
      await p.click('#show-all');
      await p.waitForFunction(() => document.querySelectorAll('#hook-rows tr').length === 1001);
      held = undefined;
      release();
      await waitLoaded(p, 2);
      expect(await rowIds(p)).toHaveLength(1001);
      expect(await p.$$('#show-all')).toHaveLength(0);
      expect(await p.textContent('#table-note')).toMatch(/^1,001 hooks\./);
    } finally {
      await stub.close();
    }
  });
});

describe('hook page', () => {
  const sessionStart = async (): Promise<string> => {
    const hooks = (await getJson<HooksResponse>(svc.httpUrl, '/api/v1/hooks?from=now-24h')).body;
    const h = hooks.hooks.find((x) => x.hookName === 'SessionStart:startup');
    if (!h) throw new Error('fixture hook missing');
    return h.id;
  };

  it('draws the same numbers as the API', async () => {
    const id = await sessionStart();
    const { page: p } = await page();
    await p.goto(svc.httpUrl + '/');
    await waitLoaded(p);
    const seriesResponse = p.waitForResponse((r) => r.url().includes(`/api/v1/hooks/${id}/series`) && !r.url().includes('step=86400'));
    await p.click(`#hook-rows tr[data-hook-id="${id}"] a.hook-link`);
    const pageSeries = (await (await seriesResponse).json()) as SeriesResponse;
    await waitLoaded(p, 2);
    expect(new URL(p.url()).pathname).toBe(`/hooks/${id}`);
    // The same question asked of the API directly, with the bounds the page's call resolved to.
    const api = (await getJson<SeriesResponse>(svc.httpUrl, `/api/v1/hooks/${id}/series?from=${pageSeries.from}&to=${pageSeries.to}&step=${pageSeries.step}`)).body;
    expect(api.buckets.length).toBeGreaterThan(0);
    const cliff = await chartData(p, 'chart-cliff');
    const ds = (label: string): unknown[] | undefined => cliff.datasets.find((d) => d.label === label)?.data;
    expect(ds('largest additionalContext')).toEqual(api.buckets.map((b) => b.maxChars.additionalContext));
    expect(ds('largest stdout')).toEqual(api.buckets.map((b) => b.maxChars.stdout));
    expect(ds('cap (10,000)')?.every((v) => v === 10_000)).toBe(true);
    expect((ds('bucket with persisted outputs') ?? []).filter((v) => v !== null)).toHaveLength(api.buckets.filter((b) => b.outputsPersisted > 0).length);
    const delivery = await chartData(p, 'chart-delivery');
    expect(delivery.datasets.find((d) => d.label.startsWith('hook commands reporting success'))?.data).toEqual(api.buckets.map((b) => b.success));
    expect(delivery.datasets.find((d) => d.label.startsWith('outputs persisted'))?.data).toEqual(api.buckets.map((b) => b.outputsPersisted));
    // SessionStart sent 12,000 characters of additionalContext: on the cliff it lands at the 2,000 preview.
    const curve = await chartData(p, 'chart-curve');
    expect(curve.datasets.find((d) => d.label === 'observed additionalContext')?.data).toContainEqual({ x: 12_000, y: 2_000 });
    // Two commands ran for that SessionStart: its sizes are sums, so the loss is stated as a bound.
    expect(await p.textContent('#chart-curve-summary')).toMatch(/^Largest output up to 12,578 chars .* so up to 10,578 chars \(84\.1%\) was lost\.$/);
    const detail = (await getJson<{ hook: { outputsPersisted: number } }>(svc.httpUrl, `/api/v1/hooks/${id}?from=${pageSeries.from}&to=${pageSeries.to}`)).body;
    expect(await p.textContent('[data-kpi="persisted"] .kpi-value')).toBe(String(detail.hook.outputsPersisted));
    expect(await p.getAttribute('#chart-cliff', 'role')).toBe('application');
    expect(await p.textContent('#by-version')).toContain('2.1.332');
    await screenshot(p, 'hook');
  });

  it('changes the range in the URL and the data, and keeps it across a reload', async () => {
    const id = await sessionStart();
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/hooks/${id}`);
    await waitLoaded(p);
    const day = await chartData(p, 'chart-cliff');
    const weekSeries = p.waitForResponse((r) => r.url().includes(`/hooks/${id}/series`) && !r.url().includes('step=86400') && new URL(p.url()).searchParams.get('range') === '7d');
    await p.click('button[data-range="7d"]');
    const week = (await (await weekSeries).json()) as SeriesResponse;
    await waitLoaded(p);
    expect(new URL(p.url()).searchParams.get('range')).toBe('7d');
    expect(await p.getAttribute('button[data-range="7d"]', 'aria-pressed')).toBe('true');
    const after = await chartData(p, 'chart-cliff');
    expect(after.labels).toHaveLength(week.buckets.length);
    expect(after.labels.length).not.toBe(day.labels.length);
    await p.reload();
    await waitLoaded(p);
    expect(new URL(p.url()).searchParams.get('range')).toBe('7d');
    expect((await chartData(p, 'chart-cliff')).labels).toHaveLength(week.buckets.length);
    await p.goBack();
    await waitLoaded(p);
    expect(new URL(p.url()).searchParams.get('range')).toBeNull();
  });

  it('says so when the hook does not exist', async () => {
    const { page: p } = await page({ allow: /404/ });
    await p.goto(`${svc.httpUrl}/hooks/0123456789abcdef`);
    await p.waitForSelector('#empty-state');
    expect(await p.textContent('#empty-state')).toContain('No such hook');
  });

  it('says what hookwatch refused of a link, never that its hook does not exist, and shows the hook once the filter is removed', async () => {
    const { page: p } = await page({ allow: /400/ });
    await p.goto(`${svc.httpUrl}/`);
    await waitLoaded(p);
    const id = await p.getAttribute('#hook-rows tr:first-child', 'data-hook-id');
    // A link from a hookwatch that keeps a dimension this one does not (dimensions: team,repo there).
    await p.goto(`${svc.httpUrl}/hooks/${id}?f.repo=hookwatch`);
    await p.waitForSelector('#error-banner:not([hidden])');
    expect(await p.textContent('#error-banner')).toContain('unknown parameter "repo"');
    expect(await p.locator('#empty-state').count()).toBe(0);
    expect(await p.textContent('#app')).not.toContain('No such hook');
    expect(await p.textContent('#main #refused')).toContain('unknown parameter "repo"');
    await p.click('.chip-remove');
    await p.locator('#hook-content').waitFor();
    expect(new URL(p.url()).searchParams.has('f.repo')).toBe(false);
    expect(await p.isHidden('#error-banner')).toBe(true);
  });
});

describe('refresh and empty states', () => {
  it('takes no room with what it hides, whatever display the element\'s class sets', async () => {
    const { page: p } = await page();
    /** The elements carrying `hidden` that the stylesheet still lays out (tag.class#id), and how many carry it. */
    const shownHidden = (): Promise<{ laidOut: string[]; hidden: string[] }> => p.evaluate(() => {
      const all = [...document.querySelectorAll<HTMLElement>('[hidden]')];
      const name = (e: HTMLElement): string => `${e.tagName.toLowerCase()}${[...e.classList].map((c) => `.${c}`).join('')}${e.id ? `#${e.id}` : ''}`;
      return { laidOut: all.filter((e) => getComputedStyle(e).display !== 'none').map(name), hidden: all.map(name) };
    });
    await p.goto(`${svc.httpUrl}/?range=24h`);
    await waitLoaded(p);
    const overview = await shownHidden();
    // The note on a link's ignored parameters is a .filters line, laid out as a flex row: hidden, it takes no room.
    expect(overview.hidden).toContain('p.filters.muted.small#url-ignored');
    expect(await p.locator('#url-ignored').isVisible()).toBe(false);
    expect(await p.locator('#url-ignored').evaluate((e) => e.getBoundingClientRect().height)).toBe(0);
    expect(overview.laidOut).toEqual([]);
    const id = await p.getAttribute('#hook-rows tr:first-child', 'data-hook-id');
    await p.goto(`${svc.httpUrl}/hooks/${id}`);
    await p.locator('#hook-content').waitFor();
    expect((await shownHidden()).laidOut).toEqual([]);
    await p.goto(`${svc.httpUrl}/alerts`);
    await waitLoaded(p);
    expect((await shownHidden()).laidOut).toEqual([]);
  });

  it('says when a link\'s range or refresh interval is not one it takes, and what it shows instead', async () => {
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/?range=2h&refresh=5`);
    await waitLoaded(p);
    // The values from the link, isolated in the sentence (a right-to-left one reorders nothing after it).
    const said = async (): Promise<string> => ((await p.textContent('#url-ignored')) ?? '').replace(/[\u2068\u2069]/g, '');
    expect(await said()).toBe('range=2h in the link is not a range this page takes (1h, 24h, 7d, 30d or custom): it shows the last 24 hours. refresh=5 in the link is not an interval this page takes (such as 5s, 1m or off): it refreshes every 15 s.');
    // What the page does instead is what its controls show: the last 24 hours, every 15 s (not "every 5").
    expect(await p.getAttribute('button[data-range="24h"]', 'aria-pressed')).toBe('true');
    expect(await p.inputValue('#refresh-interval')).toBe('15s');
    expect(await p.locator('#refresh-interval option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))).toEqual(['5s', '15s', '1m', '5m']);
    // An interval picked: only the range is left to say; a range picked, nothing.
    await p.selectOption('#refresh-interval', '1m');
    expect(await said()).toBe('range=2h in the link is not a range this page takes (1h, 24h, 7d, 30d or custom): it shows the last 24 hours.');
    await p.click('button[data-range="7d"]');
    await waitLoaded(p);
    expect(await p.locator('#url-ignored').isVisible()).toBe(false);
    // A custom range whose ends do not read is said as such.
    await p.goto(`${svc.httpUrl}/?range=custom&from=yesterday&to=now`);
    await waitLoaded(p);
    expect(await said()).toBe('The custom range in the link (from=yesterday, to=now) is not a time span this page reads: it shows the last 24 hours.');
    // A link that reads says nothing.
    await p.goto(`${svc.httpUrl}/?range=1h&refresh=1m`);
    await waitLoaded(p);
    expect(await p.locator('#url-ignored').isVisible()).toBe(false);
  });

  it.each([
    ['paused', async (p: Page) => p.click('#refresh-pause'), 'off'],
    ['set to every 5 minutes', async (p: Page) => p.selectOption('#refresh-interval', '5m'), '5m'],
  ])('once %s while a refresh waits for its answer, asks no more at the old period', async (_what, change, refresh) => {
    const { page: p } = await page();
    await p.clock.install();
    await p.goto(`${svc.httpUrl}/?refresh=5s`);
    await waitLoaded(p);
    // The next refresh goes out and waits for hookwatch's answer; the reader changes the period meanwhile.
    const held: Route[] = [];
    const api = (u: URL): boolean => u.pathname.startsWith('/api/');
    await p.route(api, (r) => void held.push(r));
    await p.clock.runFor(5_000);
    await p.waitForSelector('body[aria-busy="true"]', { state: 'attached' });
    await change(p);
    expect(new URL(p.url()).searchParams.get('refresh')).toBe(refresh);
    await p.unroute(api);
    for (const r of held) await r.continue().catch(() => undefined);
    await waitLoaded(p, 2);
    // A minute on: the answer that came did not set the old 5 s timer again.
    await p.clock.runFor(60_000);
    expect(await p.evaluate(() => document.body.dataset['loaded'])).toBe('2');
  });

  it('reads a zero refresh interval in a link as off: shown paused, never refreshed by itself; no interval at all is said', async () => {
    const { page: p } = await page();
    await p.clock.install();
    const said = async (): Promise<string> => ((await p.textContent('#url-ignored')) ?? '').replace(/[\u2068\u2069]/g, '');
    for (const zero of ['0s', '0', '0m', '00s']) {
      await p.goto(`${svc.httpUrl}/?refresh=${zero}`);
      await waitLoaded(p);
      // As refresh=off: paused, the select on the default period and greyed, no "every 0s" offered.
      expect(await p.textContent('#refresh-pause'), zero).toBe('Resume');
      expect(await p.getAttribute('#refresh-pause', 'aria-pressed'), zero).toBe('true');
      expect(await p.isDisabled('#refresh-interval'), zero).toBe(true);
      expect(await p.inputValue('#refresh-interval'), zero).toBe('15s');
      expect(await p.locator('#refresh-interval option').evaluateAll((os) => os.map((o) => o.textContent)), zero).toEqual(['every 5 s', 'every 15 s', 'every minute', 'every 5 minutes']);
      expect(await p.locator('#url-ignored').isVisible(), zero).toBe(false);
      // Over a minute on, it has not asked again by itself.
      await p.clock.runFor(65_000);
      expect(await p.evaluate(() => document.body.dataset['loaded']), zero).toBe('1');
      expect(await p.textContent('#last-updated'), zero).toBe('Updated 1 min ago · paused');
    }
    // Resumed, it refreshes at the default period, and the link no longer says zero.
    await p.click('#refresh-pause');
    expect(new URL(p.url()).searchParams.get('refresh')).toBeNull();
    expect(await p.textContent('#refresh-pause')).toBe('Pause');
    await p.clock.runFor(15_000);
    await waitLoaded(p, 2);
    // A value that is no interval at all is said as any other the page does not take, and refreshes at the default.
    for (const bad of ['-5s', '0.5s', '1h', '0x']) {
      await p.goto(`${svc.httpUrl}/?refresh=${encodeURIComponent(bad)}`);
      await waitLoaded(p);
      expect(await said(), bad).toBe(`refresh=${bad} in the link is not an interval this page takes (such as 5s, 1m or off): it refreshes every 15 s.`);
      expect(await p.textContent('#refresh-pause'), bad).toBe('Pause');
      await p.clock.runFor(15_000);
      await waitLoaded(p, 2);
    }
  });

  it('says on the overview what is wrong with a filter hookwatch refuses, with a way to remove it, and does not ask again', async () => {
    const { page: p } = await page({ allow: /400/ });
    const refused: string[] = [];
    p.on('response', (r) => {
      if (r.status() === 400) refused.push(new URL(r.url()).pathname);
    });
    // A link from a hookwatch that keeps a dimension this one does not, refreshing every second.
    await p.goto(`${svc.httpUrl}/?f.repo=hookwatch&refresh=1s`);
    await p.waitForSelector('#error-banner:not([hidden])');
    expect(await p.textContent('#error-banner')).toContain('unknown parameter "repo"');
    // The page says it where its content would be, never "Loading…" for good.
    const panel = p.locator('#main #refused');
    await panel.waitFor();
    expect(await panel.textContent()).toContain('unknown parameter "repo"');
    expect(await p.textContent('#main')).not.toContain('Loading…');
    // The same request is refused the same way every time: it is not asked again.
    const asked = refused.length;
    expect(asked).toBeGreaterThan(0);
    await p.waitForTimeout(3500);
    expect(refused.length).toBe(asked);
    expect(await p.textContent('#error-banner')).toContain('not retried');
    expect(await p.textContent('#error-banner')).not.toContain('retrying');
    // Its own button removes the filter: the overview shows its hooks.
    await panel.getByRole('button', { name: 'Remove filter repo' }).click();
    await p.locator('#hook-rows tr').first().waitFor();
    expect(new URL(p.url()).searchParams.has('f.repo')).toBe(false);
    expect(await p.isHidden('#error-banner')).toBe(true);
    expect(await p.locator('#main #refused').count()).toBe(0);
  });

  it('refreshes itself without losing the chosen view', async () => {
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/?sort=name&dir=asc&refresh=1s`);
    await waitLoaded(p);
    const url = p.url();
    const before = await p.$$eval('#hook-rows tr', (r) => r.length);
    await ingest(hookRequest([{ hookEvent: 'Stop', hookName: 'Stop:aaa-new-hook', timeMs: NOW - 60_000, sizes: { stdout: 10, additionalContext: 0, persisted: 0 } }]));
    await p.waitForFunction((n) => document.querySelectorAll('#hook-rows tr').length === n + 1, before);
    expect(p.url()).toBe(url);
    expect(await p.textContent('#hook-rows tr:first-child a.hook-link')).toBe(XSS < 'Stop:aaa-new-hook' ? XSS : 'Stop:aaa-new-hook');
  });

  it('keeps keyboard focus on the hook link it was on when a refresh draws the rows anew', async () => {
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/?refresh=1s`);
    await waitLoaded(p);
    const id = await p.getAttribute('#hook-rows tr:nth-child(2)', 'data-hook-id');
    await p.focus('#hook-rows tr:nth-child(2) a.hook-link');
    const loaded = Number(await p.evaluate(() => document.body.dataset['loaded']));
    await waitLoaded(p, loaded + 2);
    expect(await p.evaluate(() => document.activeElement?.closest('tr')?.getAttribute('data-hook-id') ?? document.activeElement?.tagName)).toBe(id);
    expect(await p.evaluate(() => document.activeElement?.classList.contains('hook-link'))).toBe(true);
  });

  it('shows how to point Claude Code at hookwatch before any event', async () => {
    const empty = await startTestService(PORTS);
    try {
      const { page: p } = await page();
      await p.goto(empty.httpUrl + '/');
      await p.waitForSelector('#empty-state');
      const text = await p.textContent('#empty-state');
      expect(text).toContain('No events yet');
      expect(text).toContain('OTEL_EXPORTER_OTLP_ENDPOINT');
      await screenshot(p, 'overview-empty');
    } finally {
      await empty.close();
    }
  });

  it('serves every page with a CSP that forbids inline script and foreign origins', async () => {
    for (const path of ['/', '/alerts', '/hooks/0123456789abcdef', '/dashboard/src/main.ts']) {
      const res = await fetch(svc.httpUrl + path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    }
    expect((await fetch(svc.httpUrl + '/dashboard/src/main.ts')).headers.get('content-type')).toContain('javascript');
    expect((await fetch(svc.httpUrl + '/dashboard/src/..%2f..%2fpackage.json')).status).toBe(404);
    expect((await fetch(svc.httpUrl + '/dashboard/test/dashboard.test.ts')).status).toBe(404);
  });
});
