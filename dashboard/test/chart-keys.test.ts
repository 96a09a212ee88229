/**
 * The charts' pointer actions from the keyboard alone, in headless Chromium against a real hookwatch fed the
 * captured Claude Code requests: Tab reaches a chart that zooms, ← → Home End pick a bucket and show its tooltip,
 * said once in a polite live region when the key is let go; Enter zooms to the bucket, + and − zoom in and out,
 * Escape lets the bucket go, and Tab leaves the chart. The same on the overview's fleet chart and the hook page's.
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { FleetSeriesResponse, SeriesResponse } from '../../shared/src/api.ts';
import { useFixture } from './experience-fixture.ts';
import { chartData, waitLoaded } from './harness.ts';

const fx = useFixture();

/** Presses Tab until the focus is on `#id` (at most `most` presses); fails if it never gets there. */
async function tabTo(p: Page, id: string, most = 60): Promise<void> {
  for (let i = 0; i < most; i++) {
    await p.keyboard.press('Tab');
    if (await p.evaluate((x) => document.activeElement?.id === x, id)) return;
  }
  throw new Error(`Tab never reached #${id}`);
}

/** The chart's highlighted bucket (the index of its active elements, null with none) and its tooltip as shown. */
async function picked(p: Page, id: string): Promise<{ index: number | null; tooltip: string | null }> {
  return p.evaluate((canvasId) => {
    type T = { opacity: number; title: string[]; body: { lines: string[] }[] };
    const c = (window as unknown as { Chart: { getChart(id: string): { getActiveElements(): { index: number }[]; tooltip: T } } }).Chart.getChart(canvasId);
    const active = c.getActiveElements();
    const t = c.tooltip;
    return { index: active[0]?.index ?? null, tooltip: t.opacity > 0 ? [t.title.join(' '), ...t.body.flatMap((b) => b.lines)].join('; ') : null };
  }, id);
}

/** Counts what is put into a chart's live region from now on (`said()` reads it, with the text there now). */
async function watchSaid(p: Page, id: string): Promise<() => Promise<{ changes: number; text: string }>> {
  await p.evaluate((canvasId) => {
    const w = window as unknown as { saidChanges: number };
    w.saidChanges = 0;
    const el = document.getElementById(`${canvasId}-said`);
    if (!el) throw new Error(`no live region for #${canvasId}`);
    new MutationObserver((records) => void (w.saidChanges += records.length)).observe(el, { childList: true, subtree: true, characterData: true });
  }, id);
  return () => p.evaluate((canvasId) => ({ changes: (window as unknown as { saidChanges: number }).saidChanges, text: document.getElementById(`${canvasId}-said`)?.textContent ?? '' }), id);
}

describe('charts from the keyboard', () => {
  it('picks a bucket of the fleet chart with the arrow keys, says it once, lets it go on Escape and Tab, and zooms to it on Enter', async () => {
    const { page: p } = await fx.page({ width: 1440 });
    const fleetResponse = p.waitForResponse((r) => r.url().includes('/api/v1/fleet/series'));
    await p.goto(`${fx.svc().httpUrl}/?refresh=off`);
    const fleet = (await (await fleetResponse).json()) as FleetSeriesResponse;
    await waitLoaded(p);
    await p.waitForFunction(() => performance.getEntriesByName('hookwatch:first-charts').length > 0);
    const n = fleet.buckets.length;
    // The keys are written under the chart, and the chart is described by them.
    expect(await p.getAttribute('#chart-fleet', 'aria-describedby')).toBe('chart-fleet-summary chart-fleet-keys');
    expect(await p.locator('#chart-fleet-keys').isVisible()).toBe(true);
    expect(await p.textContent('#chart-fleet-keys')).toContain('Enter zooms');

    await tabTo(p, 'chart-fleet');
    const said = await watchSaid(p, 'chart-fleet');
    expect(await picked(p, 'chart-fleet')).toEqual({ index: null, tooltip: null });

    // → picks the first bucket; End the last, with its tooltip, said as it reads.
    await p.keyboard.press('ArrowRight');
    expect((await picked(p, 'chart-fleet')).index).toBe(0);
    await p.keyboard.press('End');
    const last = await picked(p, 'chart-fleet');
    expect(last.index).toBe(n - 1);
    expect(last.tooltip).not.toBeNull();
    expect((await said()).text).toBe(last.tooltip);

    // A bucket with persisted outputs: its tooltip names the hooks, as hovering it does.
    const chart = await chartData(p, 'chart-fleet');
    const k = (chart.labels as unknown[]).findIndex((_l, i) => chart.datasets.some((d) => typeof d.data[i] === 'number' && (d.data[i] as number) > 0 && !/largest|cap/.test(d.label)));
    expect(k).toBeGreaterThan(0);
    await p.keyboard.press('Home');
    for (let i = 0; i < k; i++) await p.keyboard.press('ArrowRight');
    const atK = await picked(p, 'chart-fleet');
    expect(atK.index).toBe(k);
    const hookNames = fleet.hooks.filter((hk) => (hk.outputsPersisted[k] ?? 0) > 0).map((hk) => hk.hookName);
    expect(hookNames.length).toBeGreaterThan(0);
    for (const name of hookNames) expect(atK.tooltip).toContain(name);
    expect((await said()).text).toBe(atK.tooltip);

    // Holding ← down moves bucket after bucket and says only where it stopped.
    const before = (await said()).changes;
    for (let i = 0; i < 4; i++) await p.keyboard.down('ArrowLeft');
    await p.keyboard.up('ArrowLeft');
    expect((await picked(p, 'chart-fleet')).index).toBe(k - Math.min(k, 4));
    const after = await said();
    expect(after.changes - before).toBe(1);

    // Escape lets the bucket go; the focus stays on the chart.
    await p.keyboard.press('Escape');
    expect(await picked(p, 'chart-fleet')).toEqual({ index: null, tooltip: null });
    expect(await p.evaluate(() => document.activeElement?.id)).toBe('chart-fleet');

    // Tab leaves the chart (and the bucket picked with it); Shift+Tab comes back.
    await p.keyboard.press('ArrowRight');
    await p.keyboard.press('Tab');
    expect(await p.evaluate(() => document.activeElement?.id)).not.toBe('chart-fleet');
    expect(await picked(p, 'chart-fleet')).toEqual({ index: null, tooltip: null });
    await p.keyboard.press('Shift+Tab');
    expect(await p.evaluate(() => document.activeElement?.id)).toBe('chart-fleet');

    // The pointer moved over the chart lets the picked bucket go too (one highlight, the pointer's).
    await p.keyboard.press('End');
    const box = await p.locator('#chart-fleet').boundingBox();
    if (!box) throw new Error('no box for #chart-fleet');
    await p.mouse.move(box.x + box.width / 3, box.y + box.height / 2);
    await p.mouse.move(box.x + box.width / 3 + 5, box.y + box.height / 2);

    // Enter with no bucket picked says how to pick one, and goes nowhere.
    await p.keyboard.press('Enter');
    expect((await said()).text).toMatch(/^Pick a bucket/);
    expect(new URL(p.url()).searchParams.get('range')).toBeNull();

    // Enter zooms the overview to the bucket picked.
    for (let i = 0; i <= k; i++) await p.keyboard.press('ArrowRight');
    await p.keyboard.press('Enter');
    await p.waitForURL(/range=custom/);
    const u = new URL(p.url());
    expect(u.pathname).toBe('/');
    // The bucket's time within the range: the first bucket counts from the range's start, the last until its end.
    const start = Date.parse(fleet.buckets[k] as string);
    expect(u.searchParams.get('from')).toBe(new Date(Math.max(start, Date.parse(fleet.from))).toISOString());
    expect(u.searchParams.get('to')).toBe(new Date(Math.min(start + fleet.step * 1000, Date.parse(fleet.to))).toISOString());
    expect(u.searchParams.get('refresh')).toBe('off');
    await waitLoaded(p);
  });

  it('zooms in around the bucket picked with +, and out with −, a preset to the next', async () => {
    const { page: p } = await fx.page({ width: 1440 });
    const fleetResponse = p.waitForResponse((r) => r.url().includes('/api/v1/fleet/series'));
    await p.goto(`${fx.svc().httpUrl}/?refresh=off`);
    const fleet = (await (await fleetResponse).json()) as FleetSeriesResponse;
    await waitLoaded(p);
    await tabTo(p, 'chart-fleet');
    const n = fleet.buckets.length;
    // + with the last bucket picked: the later half of the range, up to the end of that bucket.
    await p.keyboard.press('End');
    await p.keyboard.press('+');
    await p.waitForURL(/range=custom/);
    const zoomed = new URL(p.url());
    const lastEnd = Date.parse(fleet.buckets[n - 1] as string) + fleet.step * 1000;
    expect(zoomed.searchParams.get('from')).toBe(new Date(fleet.buckets[n - Math.ceil(n / 2)] as string).toISOString());
    expect(zoomed.searchParams.get('to')).toBe(new Date(lastEnd).toISOString());
    await waitLoaded(p);

    // − on that: twice the span, ending where it did (it ends at most at now).
    const span = lastEnd - Date.parse(zoomed.searchParams.get('from') ?? '');
    await tabTo(p, 'chart-fleet');
    await p.keyboard.press('-');
    await p.waitForURL((url) => url.searchParams.get('from') !== zoomed.searchParams.get('from'));
    const out = new URL(p.url());
    expect(Date.parse(out.searchParams.get('to') ?? '') - Date.parse(out.searchParams.get('from') ?? '')).toBe(2 * span);
    await waitLoaded(p);

    // − on the last 24 hours: the last 7 days.
    await p.goto(`${fx.svc().httpUrl}/?refresh=off`);
    await waitLoaded(p);
    await tabTo(p, 'chart-fleet');
    await p.keyboard.press('-');
    await p.waitForURL(/range=7d/);
    await waitLoaded(p);
  });

  it('works the same on the hook page\'s time charts, and leaves the charts without actions out of the Tab order', async () => {
    const hookId = await fx.hookId('SessionStart:startup');
    const { page: p } = await fx.page({ width: 1440 });
    const seriesResponse = p.waitForResponse((r) => r.url().includes(`/api/v1/hooks/${hookId}/series`) && !r.url().includes('step=86400'));
    await p.goto(`${fx.svc().httpUrl}/hooks/${hookId}?range=7d&refresh=off`);
    const series = (await (await seriesResponse).json()) as SeriesResponse;
    await waitLoaded(p);
    for (const id of ['chart-curve', 'chart-growth']) expect(await p.getAttribute(`#${id}`, 'tabindex')).toBeNull();
    for (const id of ['chart-cliff', 'chart-delivery']) expect(await p.getAttribute(`#${id}`, 'aria-describedby')).toBe(`${id}-summary ${id}-keys`);

    await tabTo(p, 'chart-cliff');
    const said = await watchSaid(p, 'chart-cliff');
    const k = series.buckets.findIndex((b) => b.executions > 0);
    expect(k).toBeGreaterThanOrEqual(0);
    await p.keyboard.press('Home');
    for (let i = 0; i < k; i++) await p.keyboard.press('ArrowRight');
    const atK = await picked(p, 'chart-cliff');
    expect(atK.index).toBe(k);
    expect(atK.tooltip).toMatch(/largest/);
    expect((await said()).text).toBe(atK.tooltip);

    // Tab goes on (past the cliff chart's data table) to the next chart, which takes the same keys.
    await tabTo(p, 'chart-delivery', 3);
    expect((await picked(p, 'chart-cliff')).index).toBeNull();
    await p.keyboard.press('End');
    expect((await picked(p, 'chart-delivery')).index).toBe(series.buckets.length - 1);
    await p.keyboard.press('Home');
    for (let i = 0; i < k; i++) await p.keyboard.press('ArrowRight');
    await p.keyboard.press('Enter');
    await p.waitForURL(/range=custom/);
    const u = new URL(p.url());
    expect(u.pathname).toBe(`/hooks/${hookId}`);
    // The bucket's time within the range: the first bucket counts from the range's start, the last until its end.
    const start = Date.parse(series.buckets[k]?.start as string);
    expect(u.searchParams.get('from')).toBe(new Date(Math.max(start, Date.parse(series.from))).toISOString());
    expect(u.searchParams.get('to')).toBe(new Date(Math.min(start + series.step * 1000, Date.parse(series.to))).toISOString());
    await waitLoaded(p);
  });
});
