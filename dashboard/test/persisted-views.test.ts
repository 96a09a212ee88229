/**
 * Outputs persisted told the same way everywhere, in headless Chromium against a real hookwatch (real sockets,
 * real SQLite) fed through OTLP: a healthy hook per team, a hook over the cap whose client reports
 * num_outputs_persisted, one over the cap whose client reports sizes without it (each execution counts as one
 * output, at least), and one from a client older than 2.1.280 (no sizes: unknown). The overview's cards, its fleet
 * chart's summary and data table, the hooks table and the hook page say the same figure, and "at least" (or "none
 * known") with the reason wherever it is a lower bound, filtered by team and not.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { FleetSeriesResponse, HooksResponse, OverviewResponse } from '../../shared/src/api.ts';
import { persistedAtLeast } from '../../shared/src/cliff.ts';
import { persistedSeries } from '../src/pages/overview-state.ts';
import { getJson, postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { closePages, hoverTooltips, launch, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';
import { hookRequest, type HookExecution } from './otlp-json.ts';

const NOW = Date.parse('2026-11-30T08:30:00Z');
const AT = NOW - 10 * 60_000;
const COUNTED = 'PostToolUse:counted';
const UNCOUNTED = 'PostToolUse:uncounted';
const OLD = 'SessionStart:old-client';

let browser: Browser;
let svc: TestService;
const open: WatchedPage[] = [];

let sessions = 0;

/** `n` executions of one hook, a second apart, from one client and team, in a session of their own. */
function runs(n: number, e: Omit<HookExecution, 'timeMs' | 'sessionId'>): HookExecution[] {
  const sessionId = `session-${++sessions}`;
  return Array.from({ length: n }, (_v, i) => ({ ...e, sessionId, timeMs: AT + i * 1000 }));
}

beforeAll(async () => {
  browser = await launch();
  svc = await startTestService({}, { now: () => NOW });
  const requests = [
    runs(2, { hookEvent: 'Stop', hookName: 'Stop:healthy', team: 'platform', sizes: { stdout: 300, additionalContext: 0, persisted: 0 } }),
    runs(2, { hookEvent: 'Stop', hookName: 'Stop:healthy', team: 'infra', sizes: { stdout: 300, additionalContext: 0, persisted: 0 } }),
    // Three executions of two outputs persisted each: six, exactly.
    runs(3, { hookEvent: 'PostToolUse', hookName: COUNTED, team: 'platform', sizes: { stdout: 0, additionalContext: 12_000, systemMessage: 11_000, persisted: 2 } }),
    // Measured over the cap, no count reported: at least one output each.
    runs(2, { hookEvent: 'PostToolUse', hookName: UNCOUNTED, team: 'infra', sizes: { stdout: 0, additionalContext: 15_000 } }),
    // No sizes at all: whatever they persisted is unknown.
    runs(4, { hookEvent: 'SessionStart', hookName: OLD, team: 'platform', version: '2.1.250' }),
  ];
  for (const r of requests) {
    expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', hookRequest(r), { 'content-type': 'application/json' })).status).toBe(200);
  }
});

afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

async function overview(query = ''): Promise<Page> {
  const w = await watchedPage(browser);
  open.push(w);
  await w.page.goto(`${svc.httpUrl}/${query}`);
  await waitLoaded(w.page);
  return w.page;
}

const summary = async (p: Page): Promise<string | null> => p.locator('#chart-fleet-summary:not(:empty)').textContent();

const MEASURED = '2 executions measured over the cap, counted as one output each';
const UNSIZED = '4 executions sent no size data';

/** The hooks table's Persisted cell and its title, by hook name. */
async function persistedCells(p: Page): Promise<Record<string, [string, string]>> {
  const hooks = (await getJson<HooksResponse>(svc.httpUrl, '/api/v1/hooks?from=now-24h')).body.hooks;
  const out: Record<string, [string, string]> = {};
  for (const hk of hooks) {
    const cell = p.locator(`#hook-rows tr[data-hook-id="${hk.id}"] td:nth-child(6)`);
    if (await cell.count()) out[hk.hookName] = [(await cell.textContent()) ?? '', (await cell.getAttribute('title')) ?? ''];
  }
  return out;
}

/** A chart's data table (`fleet`, `cliff`, `delivery`): its headers and the rows of buckets with executions. */
async function chartTable(p: Page, chart: string): Promise<string[][]> {
  return p.$$eval(`section[data-chart="${chart}"] details.chart-data tr`, (rows) => rows.map((r) => [...r.querySelectorAll('th, td')].map((c) => c.textContent ?? '')));
}

describe('outputs persisted across the views', () => {
  it('says "at least" in the fleet chart\'s summary of executions measured over the cap without a count', async () => {
    const p = await overview('?f.team=infra');
    expect(await summary(p)).toMatch(new RegExp(`^At least 2 outputs persisted across 1 hook, in 1 of \\d+ buckets \\(${MEASURED}\\); `));
    expect(await p.textContent('[data-kpi="persisted"] .kpi-value')).toBe('at least 2');
  });

  it('gives the fleet\'s card the sum of its hooks\' figures, as its chart and hooks table do, with every reason', async () => {
    const p = await overview();
    // 6 reported, 2 measured only, 4 executions unknown: at least 8.
    expect(await p.textContent('[data-kpi="persisted"] .kpi-value')).toBe('at least 8');
    expect(await p.textContent('[data-kpi="persisted"] .kpi-note')).toBe(`at least 5 executions lost output to the cap; ${UNSIZED}; ${MEASURED}`);
    expect(await summary(p)).toMatch(new RegExp(`^At least 8 outputs persisted across 2 hooks, in 1 of \\d+ buckets \\(${UNSIZED}; ${MEASURED}\\); `));
    expect(await persistedCells(p)).toEqual({
      [COUNTED]: ['6', ''], [UNCOUNTED]: ['at least 2', `at least 2: ${MEASURED}`], [OLD]: ['none known', `none known: ${UNSIZED}`], 'Stop:healthy': ['0', ''],
    });
    // The API's answers agree: the overview's figure is its hooks' summed, and the fleet series' buckets add up to it.
    for (const [filter, persisted, measured] of [['', 8, 2], ['&team=platform', 6, 0], ['&team=infra', 2, 2]] as const) {
      const api = (await getJson<OverviewResponse>(svc.httpUrl, `/api/v1/overview?from=now-24h${filter}`)).body;
      const hooks = (await getJson<HooksResponse>(svc.httpUrl, `/api/v1/hooks?from=${api.from}&to=${api.to}${filter}`)).body.hooks;
      const fleet = (await getJson<FleetSeriesResponse>(svc.httpUrl, `/api/v1/fleet/series?from=${api.from}&to=${api.to}${filter}`)).body;
      expect([filter, api.persisted, api.measuredOnly, hooks.reduce((s, hk) => s + persistedAtLeast(hk), 0), fleet.hooks.reduce((s, hk) => s + persistedSeries(hk).reduce((a, b) => a + b, 0), 0)])
        .toEqual([filter, persisted, measured, persisted, persisted]);
    }
    // Filtered by team, each figure is the team's own.
    const platform = await overview('?f.team=platform');
    expect(await platform.textContent('[data-kpi="persisted"] .kpi-value')).toBe('at least 6');
    expect(await summary(platform)).toMatch(new RegExp(`^At least 6 outputs persisted across 1 hook, in 1 of \\d+ buckets \\(${UNSIZED}\\); `));
    expect(await persistedCells(platform)).toEqual({ [COUNTED]: ['6', ''], [OLD]: ['none known', `none known: ${UNSIZED}`], 'Stop:healthy': ['0', ''] });
    expect(await persistedCells(await overview('?f.team=infra'))).toEqual({ [UNCOUNTED]: ['at least 2', `at least 2: ${MEASURED}`], 'Stop:healthy': ['0', ''] });
  });

  it('says "at least" and "none known" in the fleet chart\'s data table and tooltip, as the hooks table does', async () => {
    const p = await overview();
    const [headers, ...rows] = await chartTable(p, 'fleet');
    expect(headers).toEqual(['Bucket start', 'Executions', COUNTED, UNCOUNTED, 'Other hooks', 'Largest output']);
    expect(rows.map((r) => r.slice(1))).toEqual([['13', '6', 'at least 2', 'none known', '15,000']]);
    const tips = await hoverTooltips(p, 'chart-fleet');
    // The one bucket's tooltip: the exact count bare, the lower bound said so (the unknown one draws no bar).
    expect(tips).toEqual([expect.stringMatching(new RegExp(` \\| ${COUNTED}: 6 \\| ${UNCOUNTED}: at least 2$`))]);
  });

  it('gives each hook\'s page the figure of its row, with or without its own team\'s filter, "at least" or "none known" in its charts\' tables too', async () => {
    const hooks = (await getJson<HooksResponse>(svc.httpUrl, '/api/v1/hooks?from=now-24h')).body.hooks;
    const cases: [string, string, string | null, string][] = [[COUNTED, '6', null, 'platform'], [UNCOUNTED, 'at least 2', MEASURED, 'infra'], [OLD, 'none known', UNSIZED, 'platform']];
    // Every execution of each of these hooks is its team's: the filter changes none of their figures.
    for (const [name, figure, why, query] of cases.flatMap(([n, f, y, team]) => [[n, f, y, ''], [n, f, y, `?f.team=${team}`]] as const)) {
      const w = await watchedPage(browser);
      open.push(w);
      await w.page.goto(`${svc.httpUrl}/hooks/${hooks.find((hk) => hk.hookName === name)?.id ?? ''}${query}`);
      await waitLoaded(w.page);
      const note = await w.page.locator('[data-kpi="persisted"] .kpi-note').allTextContents();
      expect([name + query, await w.page.textContent('[data-kpi="persisted"] .kpi-value'), note]).toEqual([name + query, figure, why === null ? [] : [why]]);
      // The last column of the cliff chart's table, the fourth of the delivery chart's: the bucket's persisted outputs.
      const [cliffHead, ...cliffRows] = await chartTable(w.page, 'cliff');
      const [deliveryHead, ...deliveryRows] = await chartTable(w.page, 'delivery');
      expect([cliffHead?.at(-1), deliveryHead?.[3]]).toEqual(['Outputs persisted', 'Outputs persisted']);
      expect([name + query, cliffRows.map((r) => r.at(-1)), deliveryRows.map((r) => r[3])]).toEqual([name + query, [figure], [figure]]);
    }
  });
});
