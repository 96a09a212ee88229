/**
 * The dashboard as a team keeps it open, in headless Chromium against a real hookwatch (real sockets, real
 * SQLite) fed the captured Claude Code 2.1.332 requests plus a few crafted executions: the overview's fleet
 * chart and sparklines, honest wording (plurals, forecasts, filters that match nothing, partial size data),
 * and charts that read right (experience-look.test.ts has the controls, themes and phones).
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { FleetSeriesResponse } from '../../shared/src/api.ts';
import { startTestService } from '../../collector/test/helpers.ts';
import { PARTIAL, PORTS, useFixture } from './experience-fixture.ts';
import { chartData, hoverTooltips, waitLoaded } from './harness.ts';

const fx = useFixture();
const page = fx.page;
const hookId = fx.hookId;

/** A hook's dataset label: its name isolated, so bidi controls in it reorder nothing drawn after it. */
const chartLabel = (hookName: string): string => `\u2068${hookName}\u2069`;

async function chartInfo(p: Page, id: string): Promise<{ yMax: number; yTicks: number[]; labels: string[]; colors: string[]; datasets: { label: string; data: unknown[] }[] }> {
  return p.evaluate((canvasId) => {
    type C = { scales: Record<string, { max: number; ticks: { value: number }[] }>; data: { labels: string[]; datasets: { label: string; data: unknown[]; borderColor?: string; backgroundColor?: string; reference?: boolean }[] } };
    const chart = (window as unknown as { Chart: { getChart(id: string): C } }).Chart.getChart(canvasId);
    const y = chart.scales['y'] as { max: number; ticks: { value: number }[] };
    return {
      yMax: y.max, yTicks: y.ticks.map((t) => t.value), labels: chart.data.labels,
      colors: chart.data.datasets.filter((d) => !d.reference).map((d) => String(d.borderColor ?? d.backgroundColor)),
      datasets: chart.data.datasets.map((d) => ({ label: d.label, data: d.data })),
    };
  }, id);
}

describe('overview charts', () => {
  it('draws the fleet chart from the fleet series, a sparkline per row, and opens a hook from a bar, a row and a drag', async () => {
    const { page: p } = await page({ width: 1440 });
    const fleetResponse = p.waitForResponse((r) => r.url().includes('/api/v1/fleet/series'));
    await p.goto(`${fx.svc().httpUrl}/`);
    const fleet = (await (await fleetResponse).json()) as FleetSeriesResponse;
    await waitLoaded(p);
    await p.waitForFunction(() => performance.getEntriesByName('hookwatch:first-charts').length > 0);
    const chart = await chartData(p, 'chart-fleet');
    const over = fleet.hooks.filter((hk) => hk.outputsPersisted.some((v) => v > 0));
    expect(over.length).toBeGreaterThan(0);
    for (const hk of over) expect(chart.datasets.find((d) => d.label === chartLabel(hk.hookName))?.data).toEqual(hk.outputsPersisted);
    expect(chart.labels).toHaveLength(fleet.buckets.length);
    expect(fleet.step).toBe(1800);
    const rows = await p.$$('#hook-rows tr[data-hook-id]');
    expect(await p.$$('#hook-rows svg.spark')).toHaveLength(rows.length);
    expect(await p.$$('#hook-rows svg.spark .spark-persisted')).not.toHaveLength(0);
    expect(await p.textContent('#chart-fleet-summary')).toMatch(/outputs persisted across 2 hooks/);

    // A bar opens its own hook at that bucket's time: the last hook's bar, not the first hook of its column.
    const shown = chart.datasets.filter((d) => over.some((hk) => chartLabel(hk.hookName) === d.label)).length;
    expect(shown).toBeGreaterThan(1);
    const bar = await p.evaluate((di) => {
      type Meta = { data: { x: number; y: number; base: number }[] };
      const c = (window as unknown as { Chart: { getChart(id: string): { getDatasetMeta(i: number): Meta; data: { datasets: { data: number[] }[] } } } }).Chart.getChart('chart-fleet');
      const i = c.data.datasets[di]?.data.findIndex((v) => v > 0) ?? -1;
      const el = c.getDatasetMeta(di).data[i] as { x: number; y: number; base: number };
      // A bucket where no bar stands: nothing was persisted there.
      const empty = c.data.datasets[0]?.data.findIndex((_v, j) => c.data.datasets.slice(0, di + 1).every((d) => !(d.data[j] as number))) ?? -1;
      const e = c.getDatasetMeta(0).data[empty] as { x: number; y: number } | undefined;
      return { i, x: el.x, y: (el.y + el.base) / 2, empty: e ? { x: e.x, y: e.y - 20 } : null };
    }, shown - 1);
    expect(bar.empty).not.toBeNull();
    const box = await p.locator('#chart-fleet').boundingBox();
    if (!box || !bar.empty) throw new Error('no fleet chart, or no empty bucket in it');
    // Every page the dashboard goes to from here: the empty bucket's click adds none, the bar's click one. (A call
    // without a URL stays on the page: it only keeps the view in the entry's state.)
    await p.evaluate(() => {
      const w = window as unknown as { visited: string[] };
      w.visited = [];
      const push = history.pushState.bind(history);
      const rep = history.replaceState.bind(history);
      const visit = (url: string | URL | null | undefined): void => void (url != null && w.visited.push(String(url)));
      history.pushState = (data, unused, url) => void (visit(url), push(data, unused, url));
      history.replaceState = (data, unused, url) => void (visit(url), rep(data, unused, url));
    });
    await p.mouse.click(box.x + bar.empty.x, box.y + bar.empty.y);
    // A click arriving with no pointer move before it (a quick hand: Chart.js sees both in one frame) still opens it.
    await p.locator('#chart-fleet').dispatchEvent('click', { clientX: box.x + bar.x, clientY: box.y + bar.y, bubbles: true });
    await p.waitForURL(/\/hooks\/[0-9a-f]{16}\?/);
    const barHook = `/hooks/${fleet.hooks.find((hk) => chartLabel(hk.hookName) === chart.datasets[shown - 1]?.label)?.id}`;
    expect(await p.evaluate(() => (window as unknown as { visited: string[] }).visited.map((v) => new URL(v, location.href).pathname))).toEqual([barHook]);
    const u = new URL(p.url());
    expect(u.pathname).toBe(barHook);
    expect(u.searchParams.get('range')).toBe('custom');
    // From the bar's bucket start, or from the range's start for the first bucket (it counts from there).
    expect(u.searchParams.get('from')).toBe(new Date(Math.max(Date.parse(fleet.buckets[bar.i] as string), Date.parse(fleet.from))).toISOString());
    await waitLoaded(p);

    // A row (anywhere but its link) opens the hook at the overview's range.
    await p.goto(`${fx.svc().httpUrl}/?range=7d`);
    await waitLoaded(p);
    const id = await p.getAttribute('#hook-rows tr:nth-child(2)', 'data-hook-id');
    await p.click('#hook-rows tr:nth-child(2) td:nth-child(4)');
    await p.waitForURL(`**/hooks/${id}?range=7d`);
    await waitLoaded(p);

    // Dragging across the fleet chart zooms the overview to those buckets.
    await p.goto(`${fx.svc().httpUrl}/`);
    await waitLoaded(p);
    await p.waitForFunction(() => performance.getEntriesByName('hookwatch:first-charts').length > 0);
    const area = await p.evaluate(() => (window as unknown as { Chart: { getChart(id: string): { chartArea: { left: number; right: number; top: number; bottom: number } } } }).Chart.getChart('chart-fleet').chartArea);
    const y = box.y + (area.top + area.bottom) / 2;
    await p.mouse.move(box.x + area.left + (area.right - area.left) * 0.25, y);
    await p.mouse.down();
    await p.mouse.move(box.x + area.left + (area.right - area.left) * 0.5, y, { steps: 5 });
    await p.mouse.up();
    await p.waitForURL(/range=custom/);
    const z = new URL(p.url());
    expect(z.pathname).toBe('/');
    const span = Date.parse(z.searchParams.get('to') ?? '') - Date.parse(z.searchParams.get('from') ?? '');
    expect(span).toBeGreaterThan(2 * 1800_000);
    expect(span).toBeLessThan(24 * 3600_000);
    expect(Date.parse(z.searchParams.get('from') ?? '') % 1800_000).toBe(0);
    await waitLoaded(p);
  });
});

describe('wording', () => {
  it('gives a setup snippet that works when pasted into a shell: export, this port, http/protobuf', async () => {
    const empty = await startTestService(PORTS);
    try {
      const { page: p } = await page();
      await p.goto(`${empty.httpUrl}/`);
      const text = (await p.locator('#setup-snippet').textContent()) ?? '';
      const lines = text.split('\n').filter((l) => l && !l.startsWith('#'));
      expect(lines.every((l) => l.startsWith('export '))).toBe(true);
      expect(text).toContain('export OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf');
      const port = new URL(empty.otlpHttpUrl).port;
      expect(port).not.toBe('4318');
      expect(text).toContain(`export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:${port}`);
    } finally {
      await empty.close();
    }
  });

  it('says a filter matches nothing, and the last-event card follows the filter', async () => {
    const { page: p } = await page();
    await p.goto(`${fx.svc().httpUrl}/?f.team=nosuchteam`);
    await waitLoaded(p);
    await p.waitForSelector('#hook-rows .empty-row');
    const text = await p.textContent('#hook-rows');
    expect(text).toContain('No hook executions match team = \u2068nosuchteam\u2069 in the last 24 hours');
    expect(text).not.toContain('Try a longer range');
    expect(await p.textContent('[data-kpi="last-event"] .kpi-label')).toBe('Last matching event');
    expect(await p.textContent('[data-kpi="last-event"] .kpi-value')).toBe('none');
    await p.click('#clear-filters');
    await p.waitForSelector('#hook-rows tr[data-hook-id]');
  });

  it('says on a hook\'s page when the filters match none of its executions, and offers to remove them', async () => {
    const id = await hookId('SessionStart:startup');
    const { page: p } = await page();
    await p.goto(`${fx.svc().httpUrl}/hooks/${id}?range=7d&f.team=nosuchteam&by=session.id`);
    await waitLoaded(p);
    expect(await p.textContent('#filter-empty')).toBe('No executions of this hook match team = \u2068nosuchteam\u2069 in the last 7 days. Remove the filters');
    await p.click('#filter-empty a');
    await p.waitForURL((u) => u.pathname === `/hooks/${id}` && !u.search.includes('f.team'));
    // The range and the breakdown chosen stay.
    expect(new URL(p.url()).searchParams.get('range')).toBe('7d');
    expect(new URL(p.url()).searchParams.get('by')).toBe('session.id');
    await waitLoaded(p, 2);
    expect(await p.locator('#filter-empty').count()).toBe(0);
    // Its three captured executions, one per run, all inside the last 7 days.
    expect(await p.textContent('[data-kpi="executions"] .kpi-value')).toBe('3');
  });

  it('agrees its nouns with one: one hook, one hook command, no executions lost', async () => {
    const { page: p } = await page();
    await p.goto(`${fx.svc().httpUrl}/?f.team=platform`);
    await waitLoaded(p);
    await p.waitForSelector('[data-kpi="executions"]');
    expect(await p.textContent('[data-kpi="executions"] .kpi-note')).toBe('1 hook command run');
    expect(await p.textContent('[data-kpi="persisted"] .kpi-note')).toBe('0 executions lost output to the cap');
    expect(await p.textContent('#table-note')).toMatch(/^1 hook\. /);
    expect(await p.textContent('[data-kpi="last-event"] .kpi-note')).toMatch(/^30\/11\/2026, \d\d:25$/);
  });

  it('calls a hook over the cap "over the cap now", even with one day of data', async () => {
    const id = await hookId('SessionStart:startup');
    const { page: p } = await page();
    await p.goto(`${fx.svc().httpUrl}/hooks/${id}`);
    await waitLoaded(p);
    expect(await p.textContent('[data-kpi="forecast"] .kpi-value')).toBe('over the cap now');
    expect(await p.textContent('#hook-content')).not.toMatch(/not enough days|in crossing/);
    expect(await p.textContent('[data-kpi="headroom"] .kpi-value')).toMatch(/^[\d,]+ chars over the cap$/);
    // Its one day, today, is still filling: the summary says the hours it covers.
    expect(await p.textContent('#chart-growth-summary')).toBe('Already over the 10,000 cap: outputs are being persisted now. Partial bucket, covering less time than the others: 30/11 00:00–08:30 (UTC, partial).');
  });

  it('does not call a hook healthy when 17 of its 33 executions carry no size data', async () => {
    const id = await hookId(PARTIAL);
    const { page: p } = await page();
    await p.goto(`${fx.svc().httpUrl}/`);
    await waitLoaded(p);
    expect(await p.getAttribute(`#hook-rows tr[data-hook-id="${id}"]`, 'data-status')).toBe('unknown');
    expect(await p.getAttribute(`#hook-rows tr[data-hook-id="${id}"] .status`, 'title')).toContain('17 of 33 executions had no size data');
    const unknownRows = (await p.$$('#hook-rows tr[data-status="unknown"]')).length;
    expect(await p.textContent('[data-kpi="hooks"] .kpi-note')).toContain(`${unknownRows} unknown`);
    await p.goto(`${fx.svc().httpUrl}/hooks/${id}`);
    await waitLoaded(p);
    expect(await p.textContent('#hook-title .status')).toBe('unknown');
    expect(await p.textContent('[data-kpi="size-unknown"] .kpi-value')).toBe('17 of 33');
    // The cliff curve speaks of the measured outputs only: the others are not known to have arrived whole.
    expect(await p.textContent('#chart-cliff-summary')).toMatch(/; no bucket is known to have had persisted outputs \(\d+ buckets? holds? executions that sent no size data\)\./);
    expect(await p.textContent('#chart-curve-summary')).toMatch(/: delivered whole, at most [\d,]+ chars of headroom\. 17 of 33 executions sent no size data: not measured, so not known to have arrived whole\.$/);
  });

  it('gives the key figures of a partly measured hook as bounds, and of an unmeasured one as unknown', async () => {
    const id = await hookId(PARTIAL);
    const { page: p } = await page();
    const kpi = async (k: string): Promise<[string | null, string | null]> => [await p.textContent(`[data-kpi="${k}"] .kpi-value`), await p.textContent(`[data-kpi="${k}"] .kpi-note`)];
    await p.goto(`${fx.svc().httpUrl}/hooks/${id}`);
    await waitLoaded(p);
    // 16 executions measured at 400 chars at most, 17 not: the largest output is at least 400, the headroom at most
    // 9,600. Each ran one command: the size measured is its output's, no sum.
    expect(await kpi('largest')).toEqual(['at least 400 chars', 'from the 16 measured executions of 33']);
    expect(await kpi('headroom')).toEqual(['at most 9,600 chars below the cap', 'from the 16 measured executions of 33']);
    // So do the cliff chart's summary and the breakdowns: a row of both clients at least, the old client's unknown.
    expect(await p.textContent('#chart-cliff-summary')).toMatch(/^Largest output at least 400 chars against the 10,000 cap; /);
    const largestCells = (table: string): Promise<string[][]> => p.$$eval(`#${table} tbody tr`, (rs) => rs.map((r) => [r.querySelector('th')?.textContent ?? '', r.querySelectorAll('td')[4]?.textContent ?? '']));
    expect(await largestCells('by-version')).toEqual([['2.1.250', 'unknown'], ['2.1.332', '400 chars']]);
    expect(await largestCells('by-dimension')).toEqual([['user-a', 'at least 400 chars']]);
    // The cliff chart's table and tooltips give its bucket's sizes at least, the headroom at most.
    expect(await p.locator('[data-chart="cliff"] table tbody tr').evaluateAll((rs) => rs.map((r) => [...r.children].slice(1).map((c) => c.textContent)))).toEqual([['at least 300', 'at least 400', 'none known']]);
    const tips = await hoverTooltips(p, 'chart-cliff');
    expect(tips.some((t) => t.includes(' | largest additionalContext: at least 300 chars (at most 9,700 chars below the cap) | largest stdout: at least 400 chars (at most 9,600 chars below the cap)'))).toBe(true);
    expect(tips.join('\n')).not.toMatch(/: \d[\d,]* chars/);
    // The growth chart's day too, and its summary says the unmeasured executions are not in the trend.
    expect(await p.locator('[data-chart="growth"] table tbody tr').evaluateAll((rs) => rs.map((r) => [...r.children].map((c) => c.textContent)))).toEqual([['30/11/2026 00:00–08:30 (UTC, partial)', 'at least 400']]);
    expect(await p.textContent('#chart-growth-summary')).toMatch(/^Not enough days with size data for a forecast \(1 of the 3 needed in the last 30 days\)\. 17 of 33 executions in these 30 days sent no size data: not measured, so not in the trend\. Partial bucket/);
    // The old client alone: nothing measured, nothing known; not 0 chars, not 10,000 of headroom.
    await p.goto(`${fx.svc().httpUrl}/hooks/${id}?f.service.version=2.1.250`);
    await waitLoaded(p);
    expect(await p.textContent('[data-kpi="size-unknown"] .kpi-value')).toBe('17 of 17');
    expect(await kpi('largest')).toEqual(['unknown', 'no execution in this range sent size data']);
    expect(await kpi('headroom')).toEqual(['unknown', 'no execution in this range sent size data']);
    // The client that sends sizes alone: exact.
    await p.goto(`${fx.svc().httpUrl}/hooks/${id}?f.service.version=2.1.332`);
    await waitLoaded(p);
    expect(await p.textContent('[data-kpi="size-unknown"] .kpi-value')).toBe('0');
    expect(await p.textContent('[data-kpi="largest"] .kpi-value')).toBe('400 chars');
    expect(await p.textContent('[data-kpi="headroom"] .kpi-value')).toBe('9,600 chars below the cap');
  });

  it('says "none known" of the persisted outputs of a hook partly without size data, in its row, figures and breakdowns, never a bare 0', async () => {
    const id = await hookId(PARTIAL);
    const { page: p } = await page();
    await p.goto(`${fx.svc().httpUrl}/`);
    await waitLoaded(p);
    const cell = `#hook-rows tr[data-hook-id="${id}"] td:nth-child(6)`;
    expect(await p.textContent(cell)).toBe('none known');
    expect(await p.getAttribute(cell, 'title')).toBe('none known: 17 executions sent no size data');
    // Its largest output and headroom are of the measured executions only: at least, at most.
    const [largest, headroom] = [7, 8].map((n) => `#hook-rows tr[data-hook-id="${id}"] td:nth-child(${n})`) as [string, string];
    expect(await p.textContent(largest)).toMatch(/^at least [\d,]+ chars$/);
    expect(await p.getAttribute(largest, 'title')).toMatch(/^at least [\d,]+ chars: 17 executions sent no size data$/);
    expect(await p.textContent(headroom)).toMatch(/^at most [\d,]+ chars$/);
    // Every row's headroom gives its unit, as its largest output does: a bare number read as a count.
    const headrooms = await p.$$eval('#hook-rows tr[data-hook-id] td:nth-child(8)', (cs) => cs.map((c) => c.textContent ?? ''));
    expect(headrooms.filter((t) => t !== 'unknown' && !/^(at (most|least) )?[\d,]+ chars( over)?$/.test(t))).toEqual([]);
    expect(headrooms.some((t) => /^[\d,]+ chars$/.test(t))).toBe(true);
    expect(await p.getAttribute(headroom, 'title')).toMatch(/^at most [\d,]+ chars below the cap: 17 executions sent no size data$/);
    await p.goto(`${fx.svc().httpUrl}/hooks/${id}`);
    await waitLoaded(p);
    expect(await p.textContent('[data-kpi="persisted"] .kpi-value')).toBe('none known');
    expect(await p.textContent('[data-kpi="persisted"] .kpi-note')).toBe('17 executions sent no size data');
    // Both client versions: the one that reports sizes persisted none, the old one cannot say.
    expect(await p.$$eval('#by-version tbody tr', (rs) => rs.map((r) => [r.querySelector('th')?.textContent, r.querySelectorAll('td')[3]?.textContent]))).toEqual([
      ['2.1.250', 'none known'], ['2.1.332', '0'],
    ]);
  });

  it('says "at least" of the fleet\'s outputs persisted while executions in range sent no size data, and "none known" when none did', async () => {
    const { page: p } = await page();
    await p.goto(`${fx.svc().httpUrl}/`);
    await waitLoaded(p);
    // The captured runs' four outputs over the cap (SessionStart:startup in each, PostToolUse:Bash once).
    expect(await p.textContent('[data-kpi="persisted"] .kpi-value')).toBe('at least 4');
    expect(await p.textContent('[data-kpi="persisted"] .kpi-note')).toBe('at least 4 executions lost output to the cap; 17 executions sent no size data');
    // The fleet chart's summary says so too.
    const summary = async (): Promise<string | null> => p.locator('#chart-fleet-summary:not(:empty)').textContent();
    expect(await summary()).toMatch(/^At least 4 outputs persisted across 2 hooks, in \d+ of \d+ buckets \(17 executions sent no size data\); /);
    // The old client alone: no execution measured, none known persisted; not a bare 0.
    await p.goto(`${fx.svc().httpUrl}/?f.service.version=2.1.250`);
    await waitLoaded(p);
    expect(await p.textContent('[data-kpi="persisted"] .kpi-value')).toBe('none known');
    expect(await p.textContent('[data-kpi="persisted"] .kpi-note')).toBe('no execution is known to have lost output to the cap; 17 executions sent no size data');
    expect(await summary()).toMatch(/^No output is known to have been persisted in this range \(17 executions sent no size data\); /);
    // The team whose one execution was measured: exact.
    await p.goto(`${fx.svc().httpUrl}/?f.team=platform`);
    await waitLoaded(p);
    expect(await p.textContent('[data-kpi="persisted"] .kpi-value')).toBe('0');
    expect(await summary()).toMatch(/^No outputs persisted in this range; /);
  });
});

describe('charts', () => {
  it('reads right: cap below the top, whole-number counts, distinct labels and colours, no zero rows, readable bars', async () => {
    const id = await hookId('SessionStart:startup');
    const { page: p } = await page({ width: 1440 });
    await p.goto(`${fx.svc().httpUrl}/hooks/${id}`);
    await waitLoaded(p);
    const cliff = await chartInfo(p, 'chart-cliff');
    expect(cliff.yMax).toBeGreaterThan(10_000);
    expect(new Set(cliff.labels).size).toBe(cliff.labels.length);
    expect(new Set(cliff.colors).size).toBe(cliff.colors.length);
    // A kind this hook never sent is not a row of dots on 0.
    for (const d of cliff.datasets.filter((x) => x.label.startsWith('largest '))) expect(d.data.some((v) => typeof v === 'number' && v > 0)).toBe(true);
    const delivery = await chartInfo(p, 'chart-delivery');
    expect(delivery.yTicks.every((v) => Number.isInteger(v))).toBe(true);
    expect(new Set(delivery.colors).size).toBe(delivery.colors.length);
    expect(delivery.colors).not.toContain('#7f3b08');
    // The growth axis of one day of data does not repeat that day.
    const growthTicks = await p.evaluate(() => (window as unknown as { Chart: { getChart(id: string): { scales: { x: { ticks: { label: string }[] } } } } }).Chart.getChart('chart-growth').scales.x.ticks.map((t) => t.label));
    expect(new Set(growthTicks).size).toBe(growthTicks.length);

    // Hovering an empty bucket says it is empty rather than listing the cap and the preview.
    const tip = await p.evaluate(() => {
      type T = { setActiveElements(a: { datasetIndex: number; index: number }[], at: { x: number; y: number }): void; body: { lines: string[] }[] };
      const c = (window as unknown as { Chart: { getChart(id: string): { tooltip: T; data: { datasets: unknown[] }; update(): void } } }).Chart.getChart('chart-cliff');
      c.tooltip.setActiveElements(c.data.datasets.map((_d, i) => ({ datasetIndex: i, index: 0 })), { x: 10, y: 10 });
      c.update();
      return c.tooltip.body.flatMap((b) => b.lines);
    });
    expect(tip).toEqual(['no executions in this bucket']);

    // Seven days in at most 60 bars.
    const week = p.waitForResponse((r) => r.url().includes(`/hooks/${id}/series`) && !r.url().includes('step=86400'));
    await p.click('button[data-range="7d"]');
    expect(new URL((await week).url()).searchParams.get('step')).toBe('10800');
    await waitLoaded(p);
    expect((await chartData(p, 'chart-delivery')).labels.length).toBeLessThanOrEqual(60);
  });

  it('asks every figure of a hook page over the one range the first answer resolved', async () => {
    const id = await hookId('SessionStart:startup');
    const { page: p } = await page();
    const urls: string[] = [];
    p.on('request', (r) => {
      if (r.url().includes('/api/v1/hooks/')) urls.push(r.url());
    });
    const detail = p.waitForResponse((r) => new URL(r.url()).pathname === `/api/v1/hooks/${id}`);
    await p.goto(`${fx.svc().httpUrl}/hooks/${id}`);
    const d = (await (await detail).json()) as { from: string; to: string };
    await waitLoaded(p);
    const later = urls.filter((u) => u.includes('/breakdown') || (u.includes('/series') && !u.includes('step=86400')));
    expect(later.length).toBe(3);
    for (const u of later) {
      expect(new URL(u).searchParams.get('from')).toBe(d.from);
      expect(new URL(u).searchParams.get('to')).toBe(d.to);
    }
  });
});

