/**
 * The hook page's charts as they read at a glance, in headless Chromium against a real hookwatch fed over OTLP an
 * hour of one execution a minute near the cap, then outputs persisted: the alert bands' labels clear of every point
 * and line, and each bucket's counts drawn wide enough to read, measured from Chart.js' own geometry.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { AlertSummary, AlertsResponse, HooksResponse } from '../../shared/src/api.ts';
import { eventually, getJson, postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { closePages, hoverTooltips, launch, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';
import { hookRequest, type HookExecution } from './otlp-json.ts';

const NOW = Date.parse('2026-11-30T08:30:00Z');
const HOOK = 'PostToolUse:Edit';

let browser: Browser;
let svc: TestService;
let hookId: string;
const open: WatchedPage[] = [];

async function post(executions: Omit<HookExecution, 'hookEvent' | 'hookName'>[]): Promise<void> {
  const body = hookRequest(executions.map((e) => ({ hookEvent: 'PostToolUse', hookName: HOOK, ...e })));
  expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
}

const ofHook = async (): Promise<AlertSummary[]> => (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body.alerts.filter((a) => a.labels['hook_name'] === HOOK);

beforeAll(async () => {
  browser = await launch();
  // The service's clock is moved along as the hour is sent, so each alert spans the minutes it was active.
  let clock = NOW - 20 * 60_000;
  svc = await startTestService({ HOOKWATCH_ALERT_EVALUATION_INTERVAL: '200ms' }, { now: () => clock });
  // An hour of one execution a minute just under the cap: its points run along the top of the cliff chart.
  const minute = (m: number): Omit<HookExecution, 'hookEvent' | 'hookName'> => ({ timeMs: NOW - (60 - m) * 60_000 + 20_000, sizes: { stdout: 9_577, additionalContext: 9_500 - (m % 3) * 40, persisted: 0 } });
  const minutes = (from: number, to: number): Omit<HookExecution, 'hookEvent' | 'hookName'>[] => Array.from({ length: to - from }, (_v, i) => minute(from + i));
  await post(minutes(0, 40));
  await eventually('a firing headroom alert', async () => (await ofHook()).find((a) => a.rule === 'headroom' && a.state === 'firing'));
  clock = NOW - 5 * 60_000;
  // Then, in the minute before, two executions over the cap with three outputs persisted between them.
  await post([
    ...minutes(40, 54),
    { timeMs: NOW - 6 * 60_000 + 20_000, sessionId: 'session-2', sizes: { stdout: 10_600, additionalContext: 10_523, persisted: 2 } },
    { timeMs: NOW - 6 * 60_000 + 40_000, sessionId: 'session-3', sizes: { stdout: 10_400, additionalContext: 10_323, persisted: 1 } },
  ]);
  await eventually('the headroom alert superseded by a firing persisted one', async () => {
    const alerts = await ofHook();
    return alerts.some((a) => a.rule === 'persisted' && a.state === 'firing') && alerts.some((a) => a.rule === 'headroom' && a.state === 'resolved') ? true : undefined;
  });
  clock = NOW;
  await post(minutes(55, 60));
  const hooks = (await getJson<HooksResponse>(svc.httpUrl, '/api/v1/hooks?from=now-1h')).body;
  hookId = hooks.hooks.find((h) => h.hookName === HOOK)?.id ?? '';
});

afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

/** The hook page over the last hour (one-minute buckets) as the README's screenshots show it: 1440 px wide. */
async function hookPage(): Promise<Page> {
  const w = await watchedPage(browser, { width: 1440, height: 900 });
  open.push(w);
  await w.page.goto(`${svc.httpUrl}/hooks/${hookId}?range=1h&refresh=off`);
  await waitLoaded(w.page);
  return w.page;
}

describe('the cliff chart\'s alert band labels', () => {
  it('are drawn whole where no point, line or other label runs through them', async () => {
    const p = await hookPage();
    const seen = await p.evaluate(() => {
      type El = { x: number; y: number; options: { radius?: number } };
      type Chart = {
        config: { plugins: { id: string; drawnLabels?: { text: string; left: number; top: number; right: number; bottom: number }[] }[] };
        data: { datasets: { label?: string; data: unknown[] }[] };
        getDatasetMeta(i: number): { data: El[] };
        isDatasetVisible(i: number): boolean;
        legend: Box;
        width: number;
        height: number;
      };
      type Box = { left: number; top: number; right: number; bottom: number };
      const chart = (window as unknown as { Chart: { getChart(id: string): Chart | undefined } }).Chart.getChart('chart-cliff');
      if (!chart) throw new Error('no cliff chart');
      const labels = chart.config.plugins.find((pl) => pl.id === 'hookwatchBands')?.drawnLabels ?? [];
      // Every point, and every line as the points it joins (sampled each pixel, 1.5 px either side of its stroke).
      const ink: { what: string; x: number; y: number; r: number }[] = [];
      chart.data.datasets.forEach((d, di) => {
        if (!chart.isDatasetVisible(di)) return;
        const els = chart.getDatasetMeta(di).data.filter((e) => Number.isFinite(e.x) && Number.isFinite(e.y));
        els.forEach((e, i) => {
          ink.push({ what: d.label ?? '', x: e.x, y: e.y, r: (e.options.radius ?? 0) + 1 });
          const next = els[i + 1];
          if (!next) return;
          const steps = Math.ceil(Math.abs(next.x - e.x));
          for (let s = 1; s < steps; s++) ink.push({ what: `${d.label ?? ''} (line)`, x: e.x + ((next.x - e.x) * s) / steps, y: e.y + ((next.y - e.y) * s) / steps, r: 1.5 });
        });
      });
      const hits = (b: Box, x: number, y: number, r: number): boolean => x + r > b.left && x - r < b.right && y + r > b.top && y - r < b.bottom;
      const overlaps = (a: Box, b: Box): boolean => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
      return {
        texts: labels.map((l) => l.text),
        through: labels.flatMap((l) => ink.filter((i) => hits(l, i.x, i.y, i.r)).map((i) => `${l.text} × ${i.what}`)).filter((v, i, a) => a.indexOf(v) === i),
        onLegend: labels.filter((l) => overlaps(l, chart.legend)).map((l) => l.text),
        onOther: labels.flatMap((l, i) => labels.slice(i + 1).filter((m) => overlaps(l, m)).map((m) => `${l.text} × ${m.text}`)),
        outside: labels.filter((l) => l.left < 0 || l.top < 0 || l.right > chart.width || l.bottom > chart.height).map((l) => l.text),
      };
    });
    expect(seen.texts.toSorted()).toEqual(['headroom superseded', 'persisted firing']);
    expect(seen.through).toEqual([]);
    expect(seen.onLegend).toEqual([]);
    expect(seen.onOther).toEqual([]);
    expect(seen.outside).toEqual([]);
  });
});

describe('success against persisted outputs over an hour of one-minute buckets', () => {
  it('draws each bucket\'s counts wide enough to read, none hidden behind another, each at its own count', async () => {
    const p = await hookPage();
    const seen = await p.evaluate(() => {
      type El = { x: number; y: number; width?: number; base?: number; options: { radius?: number } };
      type Meta = { type: string; index: number; data: El[] };
      type Chart = {
        data: { datasets: { label?: string; data: (number | null)[] }[] };
        getDatasetMeta(i: number): Meta;
        getSortedVisibleDatasetMetas(): Meta[];
        scales: { x: { getPixelForValue(v: number): number }; y: { getPixelForValue(v: number): number } };
      };
      const chart = (window as unknown as { Chart: { getChart(id: string): Chart | undefined } }).Chart.getChart('chart-delivery');
      if (!chart) throw new Error('no delivery chart');
      const bucket = chart.scales.x.getPixelForValue(1) - chart.scales.x.getPixelForValue(0);
      // Drawn last to first: the first of these is in front.
      const front = chart.getSortedVisibleDatasetMetas().map((m) => m.index);
      const marks = chart.data.datasets.flatMap((d, di) => d.data.flatMap((v, i) => {
        const el = chart.getDatasetMeta(di).data[i];
        if (!el || v === null || v === 0) return [];
        const bar = chart.getDatasetMeta(di).type === 'bar';
        const half = bar ? (el.width ?? 0) / 2 : el.options.radius ?? 0;
        return [{ label: d.label ?? '', i, di, value: v, width: 2 * half, left: el.x - half, right: el.x + half, top: el.y - (bar ? 0 : half), bottom: bar ? el.base ?? el.y : el.y + half, y: el.y, at: chart.scales.y.getPixelForValue(v) }];
      }));
      const hidden = marks.flatMap((a) => marks.filter((b) => b !== a && b.i === a.i && front.indexOf(b.di) < front.indexOf(a.di)
        && b.left <= a.left && b.right >= a.right && b.top <= a.top && b.bottom >= a.bottom).map((b) => `${a.label} behind ${b.label} in bucket ${a.i}`));
      return {
        bucket,
        narrow: marks.filter((m) => m.width < bucket / 2 || m.width < 4).map((m) => `${m.label} in bucket ${m.i}: ${m.width.toFixed(1)} px of ${bucket.toFixed(1)}`),
        widest: [...new Set(marks.map((m) => m.i))].map((i) => Math.max(...marks.filter((m) => m.i === i).map((m) => m.width)) / bucket),
        hidden,
        misplaced: marks.filter((m) => Math.abs(m.y - m.at) > 1).map((m) => m.label),
        counts: Object.fromEntries(marks.filter((m) => m.label !== 'hook commands reporting success').map((m) => [m.label, m.value])),
      };
    });
    expect(seen.narrow).toEqual([]);
    expect(Math.min(...seen.widest)).toBeGreaterThanOrEqual(0.8);
    expect(seen.hidden).toEqual([]);
    expect(seen.misplaced).toEqual([]);
    // Outputs persisted and executions with persisted outputs stay two figures, each drawn at its own count.
    expect(seen.counts).toEqual({ 'outputs persisted (not delivered)': 3, 'executions with persisted outputs': 2 });
    // The tooltip, the data table and the summary still give every figure.
    expect(await hoverTooltips(p, 'chart-delivery')).toContainEqual(expect.stringMatching(/\| hook commands reporting success: 2 \| outputs persisted \(not delivered\): 3 \| executions with persisted outputs: 2$/));
    await p.click('[data-chart="delivery"] details.chart-data > summary');
    const rows = await p.$$eval('[data-chart="delivery"] table tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('th, td')].map((c) => c.textContent)));
    expect(rows.filter((r) => r[3] === '3').map((r) => r.slice(1))).toEqual([['2', '2', '3', '2', '0']]);
    expect(await p.textContent('#chart-delivery-summary')).toContain('61 hook commands reported success; 3 outputs were persisted instead of delivered.');
  });
});
