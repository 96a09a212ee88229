/**
 * The dashboard for every engineer on a team, keyboard-only and screen-reader users included, in headless
 * Chromium against real hookwatch services (one fed the captured Claude Code requests, with alerts and a silence;
 * one with no data yet): axe-core finds no WCAG 2.1 A/AA violation on any view, with data and empty, in either
 * theme.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { AlertsResponse, HooksResponse } from '../../shared/src/api.ts';
import { FIXTURE_RUNS, fixtureRequests, getJson, postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { closePages, launch, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';

const NOW = Date.parse('2026-11-30T08:30:00Z');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let browser: Browser;
let svc: TestService;
let empty: TestService;
let hookId: string;
const open: WatchedPage[] = [];

beforeAll(async () => {
  browser = await launch();
  [svc, empty] = await Promise.all([
    startTestService({ HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0', HOOKWATCH_ALERT_EVALUATION_INTERVAL: '200ms' }, { now: () => NOW }),
    startTestService({ HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0' }, { now: () => NOW }),
  ]);
  for (const run of FIXTURE_RUNS) {
    for (const req of fixtureRequests(run)) expect((await postOtlp(svc.otlpHttpUrl, req.path, req.body, { 'content-type': req.contentType })).status).toBe(200);
  }
  const silence = await fetch(`${svc.httpUrl}/api/v1/silences`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ matchers: [{ name: 'hook_name', value: 'PostToolUse:.*', isRegex: true }], endsAt: new Date(Date.now() + 3_600_000).toISOString(), createdBy: 'release captain', comment: 'deploy window' }),
  });
  expect(silence.status).toBe(201);
  const hooks = (await getJson<HooksResponse>(svc.httpUrl, '/api/v1/hooks?from=now-7d')).body;
  hookId = hooks.hooks.find((x) => x.hookName === 'SessionStart:startup')?.id ?? '';
  for (const end = Date.now() + 10_000; ;) {
    const r = (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body;
    if (r.alerts.some((a) => a.state === 'firing')) break;
    if (Date.now() > end) throw new Error('timed out waiting for a firing alert');
    await new Promise((res) => setTimeout(res, 100));
  }
});
afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});
afterAll(async () => {
  await browser?.close();
  await svc?.close();
  await empty?.close();
});

/** A page showing `url` in the colour scheme given, loaded; `allow` lets through the console errors expected. */
async function opened(url: string, scheme: 'light' | 'dark', allow?: RegExp): Promise<Page> {
  const w = await watchedPage(browser, allow ? { allow } : {});
  open.push(w);
  await w.page.emulateMedia({ colorScheme: scheme });
  await w.page.goto(url);
  await waitLoaded(w.page);
  return w.page;
}

/** What axe-core finds against WCAG 2.0/2.1 A and AA and its best practices: "rule (impact): element". */
async function axeViolations(p: Page): Promise<string[]> {
  await p.evaluate(AXE);
  return p.evaluate(async () => {
    type Result = { violations: { id: string; impact: string | null; nodes: { target: unknown[] }[] }[] };
    const axe = (window as unknown as { axe: { run(ctx: Document, opts: unknown): Promise<Result> } }).axe;
    const r = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }, resultTypes: ['violations'] });
    return r.violations.flatMap((v) => v.nodes.map((n) => `${v.id} (${v.impact ?? 'unknown'}): ${n.target.join(' ')}`));
  });
}

describe('accessibility', () => {
  it('has no axe-core violation on any view, with data and empty, in light and dark', async () => {
    const views = [
      ['overview', svc, '/'], ['hook', svc, `/hooks/${hookId}?range=30d`], ['alerts and silences', svc, '/alerts'], ['forwarding', svc, '/forwarding'],
      ['empty overview', empty, '/'], ['no such hook', empty, `/hooks/${hookId}`], ['empty alerts', empty, '/alerts'], ['empty forwarding', empty, '/forwarding'],
    ] as const;
    const found: string[] = [];
    for (const scheme of ['light', 'dark'] as const) {
      for (const [view, s, path] of views) {
        // The hook asked for is not there: its 404 is the page's answer, not an error.
        const p = await opened(`${s.httpUrl}${path}`, scheme, s === empty ? /status of 404/ : undefined);
        // Everything that opens, open: data tables, delivery attempts, silence forms, the custom range.
        await p.evaluate(() => {
          for (const d of document.querySelectorAll('details')) d.open = true;
        });
        found.push(...(await axeViolations(p)).map((v) => `${view} (${scheme}): ${v}`), ...await closePages(open));
      }
    }
    expect(found).toEqual([]);
  }, 120_000);
});
