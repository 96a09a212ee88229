/**
 * Events stamped long before they arrive, in headless Chromium against a real hookwatch on today's clock: the real
 * Claude Code 2.1.332 requests captured on 2026-11-30, replayed now as a person trying hookwatch does. They arrive
 * now, but the overview's last 24 hours hold none of them: its empty hooks table says how old the newest event's
 * time stamp is, never that the event arrived that long ago (it arrived seconds ago).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import type { OverviewResponse } from '../../shared/src/api.ts';
import { fixtureRequests, getJson, postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { closePages, launch, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';

let browser: Browser;
let svc: TestService;
const open: WatchedPage[] = [];

beforeAll(async () => {
  browser = await launch();
  // Kept however long ago they were captured: the default 30 days of events would drop them at ingest one day.
  svc = await startTestService({ HOOKWATCH_RETENTION_EVENTS: '36500d', HOOKWATCH_RETENTION_ROLLUPS: '36500d' });
  for (const r of fixtureRequests('run1-httpjson').filter((q) => q.path === '/v1/logs')) {
    expect((await postOtlp(svc.otlpHttpUrl, r.path, r.body, { 'content-type': r.contentType })).status).toBe(200);
  }
});
afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});
afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

describe('events stamped days before they arrive', () => {
  it('says how old the newest event\'s time stamp is, not that it arrived then', async () => {
    const w = await watchedPage(browser);
    open.push(w);
    // The page's clock pinned to the one the expected age is counted from: the age is rounded to whole days, so a
    // page drawn a moment before a half-day boundary and a count made a moment after it would differ by a day.
    const now = Date.now();
    await w.page.clock.setFixedTime(now);
    await w.page.goto(`${svc.httpUrl}/?range=24h`);
    await waitLoaded(w.page);
    const { lastEventAt } = (await getJson<OverviewResponse>(svc.httpUrl, '/api/v1/overview')).body;
    expect(lastEventAt).toMatch(/^2026-11-30T0[78]:/);
    const days = Math.round((now - Date.parse(lastEventAt ?? '')) / 86_400_000);
    expect(days).toBeGreaterThan(0);
    const text = await w.page.locator('#hook-rows .empty-row').textContent();
    expect(text).toBe(`No hook executions in the last 24 hours; the newest event is stamped ${days === 1 ? '1 day' : `${days} days`} ago. Try a longer range.`);
    expect(text).not.toContain('arrived');
  });
});
