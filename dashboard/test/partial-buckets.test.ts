/**
 * A bucket the range cuts, in headless Chromium against a real hookwatch fed the captured Claude Code requests:
 * its bars are drawn lighter and hatched in both themes, its tooltip, the keyboard's live region, the chart's
 * summary and its data table give the time it covers and say "partial"; over a range aligned to the buckets none is.
 * The overview's sparklines draw it so too: the line into it dashed, its point hollow, their text naming it; and so
 * does the hook page's growth chart, of its newest day.
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { postOtlp, startTestService } from '../../collector/test/helpers.ts';
import { hookId } from '../../collector/src/hooks/extract.ts';
import { KEEP_EVENTS, NOW, PARTIAL, PORTS, useFixture } from './experience-fixture.ts';
import { hoverTooltips, waitLoaded, watchedPage } from './harness.ts';
import { hookRequest } from './otlp-json.ts';

const fx = useFixture();

/** 06:00 until 08:11 UTC: five-minute buckets, the last (08:10) cut after a minute, holding the hook's 33 executions. */
const CUT = 'range=custom&from=2026-11-30T06%3A00%3A00.000Z&to=2026-11-30T08%3A11%3A00.000Z';
/** 06:00 until 08:15 UTC: the same buckets, every one whole. */
const ALIGNED = 'range=custom&from=2026-11-30T06%3A00%3A00.000Z&to=2026-11-30T08%3A15%3A00.000Z';

/** Opens `path` (of the fixture's hookwatch, or of `base`) in UTC in the colour scheme given, runs `use`, and fails on any page error. */
async function inScheme(scheme: 'light' | 'dark', path: string, use: (p: Page) => Promise<void>, base = fx.svc().httpUrl): Promise<void> {
  const w = await watchedPage(fx.browser(), { timezoneId: 'UTC', width: 1920 });
  try {
    await w.page.emulateMedia({ colorScheme: scheme });
    await w.page.goto(`${base}${path}`);
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

describe('the bucket still filling in a range ending now', () => {
  it('is partial on every range, the last hour\'s newest minute too, and the first when the range starts inside one', async () => {
    // 08:33:27: the API counts to 08:34, the whole minute, but the newest bucket has run until now only.
    const at = NOW + 3 * 60_000 + 27_000;
    // Under the default 30 days the store, on today's clock, would keep only whole hours at the 30-day range's
    // start, and its answer would cover (and its first bucket start at) 08:00.
    const svc = await startTestService({ ...PORTS, ...KEEP_EVENTS }, { now: () => at });
    try {
      // An execution every half hour for 31 days, and a few in the minute still filling.
      const times = [...Array.from({ length: 31 * 48 }, (_v, i) => at - 60_000 - i * 1_800_000), at - 20_000, at - 10_000];
      const body = hookRequest(times.map((timeMs) => ({ hookEvent: 'SessionStart', hookName: 'SessionStart:steady', timeMs, sizes: { stdout: 900, additionalContext: 0, persisted: 0 } })));
      expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
      const id = hookId('SessionStart', 'SessionStart:steady');
      // The chart's step per range: a minute (whose first bucket the range starts on), half an hour, 3 hours, a day.
      const cuts: [string, string][] = [
        ['1h', '08:33–08:33:27 (partial)'],
        ['24h', '29/11, 08:33–09:00 (partial); 30/11, 08:30–08:33:27 (partial)'],
        ['7d', '23/11, 08:33–09:00 (partial); 30/11, 06:00–08:33:27 (partial)'],
        ['30d', '31/10 08:33–24:00 (UTC, partial); 30/11 00:00–08:33 (UTC, partial)'],
      ];
      for (const [range, partial] of cuts) {
        await inScheme('light', `/hooks/${id}?range=${range}&refresh=off`, async (p) => {
          await p.waitForSelector('#chart-delivery-summary:not(:empty)');
          expect(await p.getAttribute('#chart-delivery', 'data-partial'), range).toBe(partial);
          expect(await p.getAttribute('#chart-cliff', 'data-partial'), range).toBe(partial);
        }, svc.httpUrl);
      }
      // The last hour's newest minute, on the hook page and the overview: drawn lighter and hatched, and its
      // tooltip, keyboard, summary and table say the seconds it covers.
      await inScheme('dark', `/hooks/${id}?range=1h&refresh=off`, async (p) => {
        await p.waitForSelector('#chart-delivery-summary:not(:empty)');
        expect(await solidShare(p, 'chart-delivery', 0)).toBeLessThan(0.5);
        expect(await saidAtEnd(p, 'chart-delivery')).toMatch(/^08:33–08:33:27 \(partial\) \| 08:33–08:33:27 \(partial\); hook commands reporting success: 2/);
        expect(await p.textContent('#chart-delivery-summary')).toContain('Partial bucket, covering less time than the others: 08:33–08:33:27 (partial).');
        expect((await firstCells(p, 'delivery')).at(-1)).toBe('30/11/2026, 08:33–08:33:27 (partial)');
      }, svc.httpUrl);
      await inScheme('light', '/?range=1h&refresh=off', async (p) => {
        await p.waitForSelector('#chart-fleet-summary:not(:empty)');
        expect(await p.getAttribute('#chart-fleet', 'data-partial')).toBe('08:33–08:33:27 (partial)');
        expect((await sparkOf(p, id)).partial).toBe('08:33–08:33:27 (partial)');
      }, svc.httpUrl);
    } finally {
      await svc.close();
    }
  });
});

/** What a row's sparkline draws: its text, the buckets it names partial, its hollow points, its dashed and solid lines. */
interface SparkDrawn {
  label: string;
  title: string;
  partial: string;
  hollow: { bucket: number; fill: string; stroke: string }[];
  dashed: string[];
  solid: string[];
}

/** The sparkline of the overview's row for hook `id`, as drawn (computed styles: the page's CSS applies). */
async function sparkOf(p: Page, id: string): Promise<SparkDrawn> {
  const sel = `#hook-rows tr[data-hook-id="${id}"] svg.spark`;
  await p.waitForSelector(sel);
  return p.$eval(sel, (svg) => {
    const lines = [...svg.querySelectorAll('polyline')];
    return {
      label: svg.getAttribute('aria-label') ?? '',
      title: svg.querySelector('title')?.textContent ?? '',
      partial: svg.getAttribute('data-partial') ?? '',
      hollow: [...svg.querySelectorAll('circle.spark-partial')].map((c) => ({ bucket: Number(c.getAttribute('data-bucket')), fill: getComputedStyle(c).fill, stroke: getComputedStyle(c).stroke })),
      dashed: lines.filter((l) => getComputedStyle(l).strokeDasharray !== 'none').map((l) => l.getAttribute('points') ?? ''),
      solid: lines.filter((l) => getComputedStyle(l).strokeDasharray === 'none').map((l) => l.getAttribute('points') ?? ''),
    };
  });
}

/** The page's panel colour, as computed. */
async function panelColour(p: Page): Promise<string> {
  return p.evaluate(() => {
    const probe = document.createElement('div');
    probe.style.color = 'var(--panel)';
    document.body.appendChild(probe);
    const panel = getComputedStyle(probe).color;
    probe.remove();
    return panel;
  });
}

/** 06:00 until 08:03 UTC: five-minute buckets, the last (08:00) cut after three minutes; 08:05: every one whole. */
const CUT_LINE = 'range=custom&from=2026-11-30T06%3A00%3A00.000Z&to=2026-11-30T08%3A03%3A00.000Z';
const ALIGNED_LINE = 'range=custom&from=2026-11-30T06%3A00%3A00.000Z&to=2026-11-30T08%3A05%3A00.000Z';

describe('a row\'s sparkline', () => {
  it('marks the buckets a range ending now cuts: their point hollow, and its text says the time they cover', async () => {
    const id = await fx.hookId(PARTIAL);
    for (const scheme of ['light', 'dark'] as const) {
      // The last 7 days at 08:30: three-hour buckets, the last (06:00) still filling, the first counted from 08:30.
      await inScheme(scheme, '/?range=7d&refresh=off', async (p) => {
        const s = await sparkOf(p, id);
        expect(s.partial).toBe('23/11, 08:30–09:00 (partial); 30/11, 06:00–08:30 (partial)');
        // 17 of its 33 executions sent no size data: neither its peak nor its buckets without persisted outputs are known.
        expect(s.label).toBe('PostToolUse:partial-sizes: largest output per bucket, peak at least 400 chars; no bucket is known to have persisted outputs (17 executions in 1 bucket sent no size data); partial buckets, covering less time than the others: 23/11, 08:30–09:00 (partial); 30/11, 06:00–08:30 (partial)');
        expect(s.title).toBe(s.label);
        // The hook ran in the last bucket only: its one point is hollow, in the panel's colour inside the line's.
        const panel = await panelColour(p);
        expect(s.hollow).toEqual([{ bucket: 56, fill: panel, stroke: 'rgb(0, 114, 178)' }]);
        expect(panel).toBe(scheme === 'light' ? 'rgb(255, 255, 255)' : 'rgb(24, 32, 40)');
      });
    }
  });

  it('dashes the line into a cut bucket, and over a range aligned to the buckets marks none', async () => {
    const id = await fx.hookId('SessionStart:startup');
    await inScheme('light', `/?${CUT_LINE}&refresh=off`, async (p) => {
      const s = await sparkOf(p, id);
      expect(s.partial).toBe('08:00–08:03 (partial)');
      expect(s.label).toMatch(/; partial bucket, covering less time than the others: 08:00–08:03 \(partial\)$/);
      // Buckets 23 (07:55) and 24 (08:00, cut): the segment between them dashed, none solid, the cut point hollow.
      expect(s.dashed).toEqual(['112.8,3.1 117.6,3.1']);
      expect(s.solid).toEqual([]);
      expect(s.hollow.map((x) => x.bucket)).toEqual([24]);
    });
    for (const path of [`/?${ALIGNED_LINE}&refresh=off`, `/?${ALIGNED}&refresh=off`]) {
      await inScheme('dark', path, async (p) => {
        const s = await sparkOf(p, id);
        expect(s.partial).toBe('');
        expect(s.label).not.toContain('partial');
        expect(s.hollow).toEqual([]);
        expect(s.dashed).toEqual([]);
        expect(s.solid).not.toEqual([]);
        expect(await p.$$('#hook-rows svg.spark .spark-partial, #hook-rows svg.spark .spark-line-partial')).toHaveLength(0);
      });
    }
  });
});

/** What the growth chart draws of its datasets: per dataset, each point's fill and outline, and its line's segments' dashes. */
interface GrowthDrawn {
  label: string;
  points: { fill: string; stroke: string }[];
  segments: { start: number; end: number; dash: number[] }[];
}

/** The hook page's growth chart as drawn: its points' resolved colours and its lines' segments, per dataset. */
function growthDrawn(p: Page): Promise<GrowthDrawn[]> {
  return p.evaluate(() => {
    type El = { options: { backgroundColor: string; borderColor: string; borderDash: number[] } };
    type Line = El & { segments: { start: number; end: number; style?: { borderDash: number[] } }[] };
    type C = { data: { datasets: { label: string }[] }; getDatasetMeta(i: number): { data: El[]; dataset?: Line } };
    const chart = (window as unknown as { Chart: { getChart(x: string): C | undefined } }).Chart.getChart('chart-growth');
    if (!chart) throw new Error('no growth chart');
    return chart.data.datasets.map((d, i) => {
      const meta = chart.getDatasetMeta(i);
      return {
        label: d.label,
        points: meta.data.map((el) => ({ fill: el.options.backgroundColor, stroke: el.options.borderColor })),
        segments: (meta.dataset?.segments ?? []).map((s) => ({ start: s.start, end: s.end, dash: s.style?.borderDash ?? meta.dataset?.options.borderDash ?? [] })),
      };
    });
  });
}

describe('the growth chart', () => {
  it('marks its newest day, still filling, partial: its point hollow, the line into it dashed, its tooltip, summary and table saying the hours it covers', async () => {
    // A hook growing a thousand characters a day for three days; today, cut at 08:30 by a range ending now, has
    // seen less so far: drawn like a whole day it reads as a drop.
    const name = 'PostToolUse:growing';
    const days = [[3, 6_000], [2, 7_000], [1, 8_000], [0, 5_000]] as const;
    const at = (daysAgo: number): number => Date.parse('2026-11-30T01:00:00Z') - daysAgo * 86_400_000;
    const body = hookRequest(days.map(([d, size]) => ({ hookEvent: 'PostToolUse', hookName: name, timeMs: at(d), sessionId: `growing-${d}`, sizes: { stdout: size, additionalContext: 0, persisted: 0 } })));
    expect(at(0)).toBeLessThan(NOW);
    expect((await postOtlp(fx.svc().otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
    const id = await fx.hookId(name);
    const today = '30/11 00:00–08:30 (UTC, partial)';
    for (const scheme of ['light', 'dark'] as const) {
      await inScheme(scheme, `/hooks/${id}?range=24h&refresh=off`, async (p) => {
        await p.waitForSelector('#chart-growth-summary:not(:empty)');
        expect(await p.getAttribute('#chart-growth', 'data-partial')).toBe(today);
        expect(await p.textContent('#chart-growth-summary')).toContain(`Partial bucket, covering less time than the others: ${today}.`);
        expect(await firstCells(p, 'growth')).toEqual(['27/11/2026', '28/11/2026', '29/11/2026', '30/11/2026 00:00–08:30 (UTC, partial)']);
        const shown = await hoverTooltips(p, 'chart-growth');
        expect(shown).toContain(`${today} | daily largest output: 5,000 chars (5,000 chars below the cap)`);
        expect(shown).toContain('29/11 (UTC) | daily largest output: 8,000 chars (2,000 chars below the cap)');
        // The trend's end on that day is a fitted value, not the day's: titled as a day.
        expect(shown).toContain('30/11 (UTC) | trend (least squares): 6,200 chars (3,800 chars below the cap)');
        const [daily, trend, cap] = await growthDrawn(p);
        // The newest day's point hollow (the panel's colour inside the line's), the others filled; the segment into
        // it dashed, the others solid.
        const panel = await panelColour(p);
        const line = daily?.points[0]?.stroke ?? '';
        expect(daily?.points).toEqual([...Array.from({ length: 3 }, () => ({ fill: line, stroke: line })), { fill: panel, stroke: line }]);
        expect(daily?.segments).toEqual([{ start: 0, end: 2, dash: [] }, { start: 2, end: 3, dash: [5, 4] }]);
        // The fitted trend and the cap are lines across the days, not a day's value: drawn as before.
        expect(trend?.label).toBe('trend (least squares)');
        expect(trend?.segments.map((s) => s.dash)).toEqual([[5, 4]]);
        expect(cap?.segments.map((s) => s.dash)).toEqual([[6, 4]]);
      });
    }
  });
});
