/**
 * Test harness for the dashboard: headless Chromium (Debian's package) driven by playwright-core, with every
 * page error and console error collected so a test can treat JavaScript errors as failures.
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env['HOOKWATCH_CHROMIUM'] ?? '/usr/bin/chromium';
export const SCREENSHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));

/** Launches headless Chromium with nothing reaching past loopback; `args` adds command-line switches. */
export async function launch(args: readonly string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking', '--no-first-run', '--disable-component-update', '--disable-sync', ...args],
    timeout: 30_000,
  });
}

export interface WatchedPage {
  page: Page;
  context: BrowserContext;
  /** Uncaught exceptions and console errors seen so far. */
  errors: string[];
  /** Dialogs opened (an XSS payload firing alert() would land here). */
  dialogs: string[];
  close(): Promise<void>;
}

/**
 * A fresh context and page that records JavaScript errors and dialogs; `allow` filters expected console noise,
 * `timezoneId` is the browser's zone (a reader elsewhere), `httpCredentials` what a person types into the browser's
 * sign-in prompt (given once per challenge; the prompt is dismissed when they are refused).
 */
export async function watchedPage(
  browser: Browser,
  opts: { width?: number; height?: number; allow?: RegExp; timezoneId?: string; httpCredentials?: { username: string; password: string } } = {},
): Promise<WatchedPage> {
  const context = await browser.newContext({
    viewport: { width: opts.width ?? 1280, height: opts.height ?? 900 },
    ...(opts.timezoneId ? { timezoneId: opts.timezoneId } : {}),
    ...(opts.httpCredentials ? { httpCredentials: opts.httpCredentials } : {}),
  });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const errors: string[] = [];
  const dialogs: string[] = [];
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const text = msg.text();
    if (opts.allow?.test(text)) return;
    // A resource that failed to load is named by its location, so a failure says which request it was.
    const where = msg.location().url;
    errors.push(`console: ${text}${where && text.startsWith('Failed to load resource') ? ` (${where})` : ''}`);
  });
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  return { page, context, errors, dialogs, close: () => context.close() };
}

/**
 * The time the stale-data banner gives the data shown, as a pattern: the clock time of the Updated line's tooltip
 * ("Last updated 30/11/2026, 14:02", in the page's zone), the day and month before it should the page's day have
 * turned since.
 */
export async function shownAt(p: Page): Promise<string> {
  const title = (await p.getAttribute('#last-updated', 'title')) ?? '';
  const m = /^Last updated (\d\d\/\d\d)\/\d{4},? (\d\d:\d\d)$/.exec(title);
  if (!m) throw new Error(`no time in the Updated line's tooltip: ${JSON.stringify(title)}`);
  return `(?:${m[1]}, )?${m[2]}`;
}

/**
 * Closes every page a test opened (emptying `open`) and returns what they recorded: errors, then dialogs. A test's
 * afterEach expects this to be empty, so a JavaScript error or a fired XSS payload on any page fails that test.
 */
export async function closePages(open: WatchedPage[]): Promise<string[]> {
  const errs = open.flatMap((w) => [...w.errors, ...w.dialogs.map((d) => `dialog: ${d}`)]);
  while (open.length) await open.pop()?.close();
  return errs;
}

/** Shows or hides the page's tab, as the browser does when another tab or window covers it. */
export function showTab(page: Page, on: boolean): Promise<void> {
  return page.evaluate((v) => {
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => !v });
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (v ? 'visible' : 'hidden') });
    document.dispatchEvent(new Event('visibilitychange'));
  }, on);
}

/** Waits until the shell has finished `n` data loads (body[data-loaded] counts them). */
export async function waitLoaded(page: Page, atLeast = 1): Promise<void> {
  await page.waitForFunction((n) => Number(document.body.dataset['loaded'] ?? '0') >= n && !document.body.hasAttribute('aria-busy'), atLeast);
}

/** Saves a full-page screenshot under dashboard/test/screenshots/. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true });
}

/** The numbers a Chart.js chart on the page draws, by dataset label. */
export async function chartData(page: Page, canvasId: string): Promise<{ labels: unknown[]; datasets: { label: string; data: unknown[] }[] }> {
  return page.evaluate((id) => {
    const C = (window as unknown as { Chart: { getChart(el: string): { data: { labels?: unknown[]; datasets: { label?: string; data: unknown[] }[] } } | undefined } }).Chart;
    const chart = C.getChart(id);
    if (!chart) throw new Error(`no chart on #${id}`);
    return { labels: chart.data.labels ?? [], datasets: chart.data.datasets.map((d) => ({ label: d.label ?? '', data: d.data })) };
  }, canvasId);
}

/**
 * Moves the mouse over a chart's points as a reader would (each point with a value and a few evenly spaced others
 * per dataset, scrolled into view) and returns each tooltip shown, once: "title | line | line", as a reader sees it
 * (without the invisible isolates around hook names; bidi.test.ts holds them).
 */
export async function hoverTooltips(page: Page, canvasId: string): Promise<string[]> {
  const canvas = page.locator(`#${canvasId}`);
  await canvas.scrollIntoViewIfNeeded();
  const points = await page.evaluate((id) => {
    type Meta = { data: { x: number; y: number }[] };
    const C = (window as unknown as { Chart: { getChart(el: string): { data: { datasets: { data: unknown[] }[] }; getDatasetMeta(i: number): Meta } | undefined } }).Chart;
    const chart = C.getChart(id);
    if (!chart) throw new Error(`no chart on #${id}`);
    return chart.data.datasets.flatMap((d, di) => {
      const els = chart.getDatasetMeta(di).data;
      const every = Math.max(1, Math.floor(els.length / 6));
      return els.flatMap((el, i) => {
        const v = d.data[i];
        const valued = v !== null && v !== 0;
        return Number.isFinite(el.x) && Number.isFinite(el.y) && (valued || i % every === 0) ? [{ x: el.x, y: el.y }] : [];
      });
    });
  }, canvasId);
  const box = await canvas.boundingBox();
  if (!box) throw new Error(`#${canvasId} is not shown`);
  const seen = new Set<string>();
  for (const pt of points) {
    await page.mouse.move(box.x + pt.x, box.y + pt.y);
    const shown = await page.evaluate((id) => {
      type T = { opacity: number; title: string[]; body: { lines: string[] }[] };
      const t = (window as unknown as { Chart: { getChart(el: string): { tooltip: T } | undefined } }).Chart.getChart(id)?.tooltip;
      const lines = t?.body.flatMap((b) => b.lines) ?? [];
      // Chart.js draws nothing without a title or a line.
      if (!t || t.opacity === 0 || (t.title.join('') === '' && lines.length === 0)) return null;
      return [t.title.join(' '), ...lines].join(' | ');
    }, canvasId);
    if (shown !== null) seen.add(shown.replace(/[\u2068\u2069]/g, ''));
  }
  await page.mouse.move(0, 0);
  return [...seen];
}
