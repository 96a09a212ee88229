/**
 * Client strings holding bidi controls, in headless Chromium against a real hookwatch: a hook name or a dimension
 * value with a right-to-left override (U+202E) shows as itself and reorders nothing around it (the status badge
 * beside the name, the words and links after a filter value, the tab title).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { hookId } from '../../collector/src/hooks/extract.ts';
import { chartData, closePages, launch, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';
import { hookRequest } from './otlp-json.ts';

const NOW = Date.parse('2026-11-30T08:30:00Z');
const NAME = 'Stop:\u202Eevil';
const USER = '\u202Euser-rtl';
const HOOK_ID = hookId('Stop', NAME);

let browser: Browser;
let svc: TestService;
const open: WatchedPage[] = [];

async function page(): Promise<Page> {
  const w = await watchedPage(browser);
  open.push(w);
  return w.page;
}

beforeAll(async () => {
  browser = await launch();
  svc = await startTestService({}, { now: () => NOW });
  const body = hookRequest([{ hookEvent: 'Stop', hookName: NAME, timeMs: NOW - 600_000, userId: USER, sizes: { stdout: 10_500, additionalContext: 0, persisted: 1 } }]);
  expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
});

afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

/**
 * Where `selector`'s element is drawn against the text before it in its parent: the left edge of the element and
 * the right edge of every node before it, in CSS pixels.
 */
async function afterText(p: Page, selector: string): Promise<{ left: number; textRight: number }> {
  return p.$eval(selector, (el) => {
    const range = document.createRange();
    range.setStart(el.parentElement as Node, 0);
    range.setEndBefore(el);
    // The space before the element is trimmed off the range's right edge.
    const boxes = [...range.getClientRects()].filter((r) => r.width > 0);
    // No text before it would make the comparison pass whatever the order (the right edge of nothing is -Infinity).
    if (boxes.length === 0) throw new Error(`no text drawn before ${el.localName}`);
    return { left: el.getBoundingClientRect().left, textRight: Math.max(...boxes.map((r) => r.right)) };
  });
}

describe('client strings with bidi controls', () => {
  it('keeps the status badge after the hook name in the heading, and isolates the name in the tab title', async () => {
    const p = await page();
    await p.goto(`${svc.httpUrl}/hooks/${HOOK_ID}`);
    await waitLoaded(p);
    await p.waitForSelector('#hook-title .status');
    expect(await p.textContent('#hook-title')).toContain(NAME);
    const badge = await afterText(p, '#hook-title .status');
    expect(badge.left).toBeGreaterThanOrEqual(badge.textRight - 1);
    // A title holds no markup: the name sits between FIRST STRONG ISOLATE and POP DIRECTIONAL ISOLATE.
    expect(await p.title()).toBe(`\u2068${NAME}\u2069 · hookwatch`);
    // The breakdown's user ids are client strings too, isolated inside the link each value is.
    await p.waitForSelector('#by-dimension th[scope="row"] a');
    expect(await p.$eval('#by-dimension th[scope="row"]', (th) => [th.firstElementChild?.localName, th.firstElementChild?.firstElementChild?.localName, th.textContent])).toEqual(['a', 'bdi', USER]);
  });

  it('isolates the hook name in the hooks table', async () => {
    const p = await page();
    await p.goto(`${svc.httpUrl}/`);
    await waitLoaded(p);
    await p.waitForSelector('#hook-rows a.hook-link');
    expect(await p.$eval('#hook-rows a.hook-link', (a) => [a.firstElementChild?.localName, a.textContent])).toEqual(['bdi', NAME]);
    // The fleet chart draws it on a canvas (legend, "name: 1 output" in the tooltip): isolated as in the title.
    await p.waitForFunction(() => (window as unknown as { Chart: { getChart(id: string): unknown } }).Chart.getChart('chart-fleet') !== undefined);
    expect((await chartData(p, 'chart-fleet')).datasets.map((d) => d.label)).toContain(`\u2068${NAME}\u2069`);
  });

  it('keeps the words and the link after a filter value in a sentence in their order', async () => {
    const p = await page();
    await p.goto(`${svc.httpUrl}/hooks/${HOOK_ID}?f.user.id=${encodeURIComponent(`${USER}-nobody`)}`);
    await waitLoaded(p);
    await p.waitForSelector('#filter-empty a');
    expect(await p.textContent('#filter-empty')).toContain(`user.id = \u2068${USER}-nobody\u2069 in the last 24 hours.`);
    const link = await afterText(p, '#filter-empty a');
    expect(link.left).toBeGreaterThanOrEqual(link.textRight - 1);
  });
});
