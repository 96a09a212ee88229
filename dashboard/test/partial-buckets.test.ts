/**
 * A bucket the range cuts, in headless Chromium against a real hookwatch fed the captured Claude Code requests:
 * its bars are drawn lighter and hatched in both themes, its tooltip, the keyboard's live region, the chart's
 * summary and its data table give the time it covers and say "partial"; over a range aligned to the buckets none is.
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { PARTIAL, useFixture } from './experience-fixture.ts';
import { waitLoaded, watchedPage } from './harness.ts';

const fx = useFixture();

/** 06:00 until 08:11 UTC: five-minute buckets, the last (08:10) cut after a minute, holding the hook's 33 executions. */
const CUT = 'range=custom&from=2026-11-30T06%3A00%3A00.000Z&to=2026-11-30T08%3A11%3A00.000Z';
/** 06:00 until 08:15 UTC: the same buckets, every one whole. */
const ALIGNED = 'range=custom&from=2026-11-30T06%3A00%3A00.000Z&to=2026-11-30T08%3A15%3A00.000Z';

/** Opens `path` in UTC in the colour scheme given, runs `use`, and fails on any page error. */
async function inScheme(scheme: 'light' | 'dark', path: string, use: (p: Page) => Promise<void>): Promise<void> {
  const w = await watchedPage(fx.browser(), { timezoneId: 'UTC', width: 1920 });
  try {
    await w.page.emulateMedia({ colorScheme: scheme });
    await w.page.goto(`${fx.svc().httpUrl}${path}`);
    await waitLoaded(w.page);
    await use(w.page);
    expect(w.errors).toEqual([]);
  } finally {
    await w.close();
  }
}

/**
 * The share of a bar's pixels drawn in the bar's own colour (within a few levels per channel): near 1 for a whole
 * bar, far less for one drawn lighter and hatched. The bar is the last one of dataset `di` of chart `id`.
 */
async function solidShare(p: Page, id: string, di: number): Promise<number> {
  return p.evaluate(([canvasId, dataset]) => {
    type Bar = { getProps(k: string[], final: boolean): { x: number; y: number; base: number; width: number } };
    type C = { getDatasetMeta(i: number): { data: Bar[] }; data: { datasets: { backgroundColor: string }[] }; currentDevicePixelRatio: number; canvas: HTMLCanvasElement };
    const chart = (window as unknown as { Chart: { getChart(x: string): C | undefined } }).Chart.getChart(canvasId);
    if (!chart) throw new Error(`no chart on #${canvasId}`);
    const bars = chart.getDatasetMeta(dataset).data;
    const bar = bars[bars.length - 1];
    if (!bar) throw new Error('no bar');
    const { x, y, base, width } = bar.getProps(['x', 'y', 'base', 'width'], true);
    const r = chart.currentDevicePixelRatio;
    const hex = chart.data.datasets[dataset]?.backgroundColor ?? '';
    const want = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
    // Inside the bar: whole pixels only, clear of its top and bottom.
    const [left, top] = [Math.ceil((x - width / 2) * r), Math.ceil((Math.min(y, base) + 2) * r)];
    const [w, h] = [Math.floor((x + width / 2) * r) - left, Math.floor((Math.abs(base - y) - 4) * r)];
    if (w < 2 || h < 4) throw new Error(`bar too small to sample: ${w}×${h}`);
    const px = chart.canvas.getContext('2d')?.getImageData(left, top, w, h).data ?? new Uint8ClampedArray();
    let solid = 0;
    for (let i = 0; i < px.length; i += 4) {
      if (want.every((v, c) => Math.abs((px[i + c] ?? 0) - (v ?? 0)) <= 6)) solid++;
    }
    return solid / (px.length / 4);
  }, [id, di] as const);
}

/**
 * Focuses the chart and presses End, picking its last bucket (highlighted, so measure its bars before), and returns
 * the tooltip's title and what the live region says once the key is let go.
 */
async function saidAtEnd(p: Page, id: string): Promise<string> {
  await p.locator(`#${id}`).focus();
  await p.keyboard.press('End');
  await p.waitForFunction((x) => (document.getElementById(`${x}-said`)?.textContent ?? '') !== '', id);
  const title = await p.evaluate((x) => (window as unknown as { Chart: { getChart(c: string): { tooltip: { title: string[] } } | undefined } }).Chart.getChart(x)?.tooltip.title.join(' '), id);
  return `${title ?? ''} | ${(await p.textContent(`#${id}-said`)) ?? ''}`;
}

/** The first cells of a chart's data table, a row per bucket with executions. */
function firstCells(p: Page, id: string): Promise<string[]> {
  return p.locator(`[data-chart="${id}"] table tbody tr td:first-child, [data-chart="${id}"] table tbody tr th:first-child`).allTextContents();
}

describe('a bucket the range cuts', () => {
  it('is drawn lighter and hatched on the hook page, and its tooltip, keyboard, summary and table say the time it covers', async () => {
    const id = await fx.hookId(PARTIAL);
    for (const scheme of ['light', 'dark'] as const) {
      await inScheme(scheme, `/hooks/${id}?${CUT}&refresh=off`, async (p) => {
        await p.waitForSelector('#chart-delivery-summary:not(:empty)');
        expect(await p.getAttribute('#chart-delivery', 'data-partial')).toBe('08:10–08:11 (partial)');
        expect(await p.getAttribute('#chart-cliff', 'data-partial')).toBe('08:10–08:11 (partial)');
        expect(await solidShare(p, 'chart-delivery', 0), scheme).toBeLessThan(0.5);
        expect(await saidAtEnd(p, 'chart-delivery')).toMatch(/^08:10–08:11 \(partial\) \| 08:10–08:11 \(partial\); hook commands reporting success: 33/);
        expect(await p.textContent('#chart-delivery-summary')).toContain('Partial bucket, covering less time than the others: 08:10–08:11 (partial).');
        expect(await firstCells(p, 'delivery')).toEqual(['30/11/2026, 08:10–08:11 (partial)']);
        expect(await firstCells(p, 'cliff')).toEqual(['30/11/2026, 08:10–08:11 (partial)']);
      });
      await inScheme(scheme, `/hooks/${id}?${ALIGNED}&refresh=off`, async (p) => {
        await p.waitForSelector('#chart-delivery-summary:not(:empty)');
        expect(await p.getAttribute('#chart-delivery', 'data-partial')).toBe('');
        expect(await p.getAttribute('#chart-cliff', 'data-partial')).toBe('');
        expect(await solidShare(p, 'chart-delivery', 0), scheme).toBeGreaterThan(0.9);
        expect(await saidAtEnd(p, 'chart-delivery')).toMatch(/^08:10 \| 08:10; hook commands reporting success: 33/);
        expect(await p.textContent('#chart-delivery-summary')).not.toContain('artial');
        expect(await firstCells(p, 'delivery')).toEqual(['30/11/2026, 08:10']);
      });
    }
  });

  it('says so on the overview\'s fleet chart too, and over an aligned range says nothing of it', async () => {
    await inScheme('light', `/?${CUT}&refresh=off`, async (p) => {
      await p.waitForSelector('#chart-fleet-summary:not(:empty)');
      expect(await p.getAttribute('#chart-fleet', 'data-partial')).toBe('08:10–08:11 (partial)');
      expect(await saidAtEnd(p, 'chart-fleet')).toMatch(/^08:10–08:11 \(partial\) \| 08:10–08:11 \(partial\); largest output in the fleet: 400 chars/);
      expect((await firstCells(p, 'fleet')).at(-1)).toBe('30/11/2026, 08:10–08:11 (partial)');
    });
    await inScheme('dark', `/?${ALIGNED}&refresh=off`, async (p) => {
      await p.waitForSelector('#chart-fleet-summary:not(:empty)');
      expect(await p.getAttribute('#chart-fleet', 'data-partial')).toBe('');
      expect(await saidAtEnd(p, 'chart-fleet')).toMatch(/^08:10 \| 08:10; largest output in the fleet: 400 chars/);
      expect((await firstCells(p, 'fleet')).at(-1)).toBe('30/11/2026, 08:10');
    });
  });
});
