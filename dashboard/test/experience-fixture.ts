/**
 * The hookwatch both experience test files run against: a real service (real sockets, real SQLite) fed the
 * captured Claude Code 2.1.332 requests, plus a hook with 17 of 33 executions lacking size data and one team
 * with a single execution. Registers its own vitest hooks; every page opened through it fails its test on a
 * JavaScript error, console error or dialog.
 */
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { Browser } from 'playwright-core';
import type { HooksResponse } from '../../shared/src/api.ts';
import { FIXTURE_RUNS, fixtureRequests, getJson, postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { closePages, launch, watchedPage, type WatchedPage } from './harness.ts';
import { hookRequest } from './otlp-json.ts';

export const NOW = Date.parse('2026-11-30T08:30:00Z');
export const PORTS = { HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0' };
/**
 * Keeps the events of a hookwatch whose clock is set days back (NOW, the fixtures' capture) however far today's
 * clock, by which its store reckons retention, has moved on since.
 */
export const KEEP_EVENTS = { HOOKWATCH_RETENTION_EVENTS: '36500d' };
export const PARTIAL = 'PostToolUse:partial-sizes';

export interface Fixture {
  browser(): Browser;
  svc(): TestService;
  page(opts?: { width?: number; height?: number; allow?: RegExp }): Promise<WatchedPage>;
  hookId(name: string): Promise<string>;
}

export function useFixture(): Fixture {
  let browser: Browser;
  let svc: TestService;
  const open: WatchedPage[] = [];
  const ingest = async (body: string): Promise<void> => {
    expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
  };

  beforeAll(async () => {
    browser = await launch();
    // Events kept however long ago NOW is: the store reckons retention by today's clock, and under the default 30
    // days a 30-day view of NOW would reach where it keeps only whole hours (its answers then name those).
    svc = await startTestService({ ...PORTS, ...KEEP_EVENTS }, { now: () => NOW });
    for (const run of FIXTURE_RUNS) {
      for (const req of fixtureRequests(run)) expect((await postOtlp(svc.otlpHttpUrl, req.path, req.body, { 'content-type': req.contentType })).status).toBe(200);
    }
    // 16 executions with sizes and 17 from an old client without: not known to be healthy.
    const t = NOW - 20 * 60_000;
    await ingest(hookRequest(Array.from({ length: 16 }, (_v, i) => ({ hookEvent: 'PostToolUse', hookName: PARTIAL, timeMs: t + i * 1000, sizes: { stdout: 400, additionalContext: 300, persisted: 0 } }))));
    await ingest(hookRequest(Array.from({ length: 17 }, (_v, i) => ({ hookEvent: 'PostToolUse', hookName: PARTIAL, timeMs: t + i * 1000, version: '2.1.250', sessionId: 'old-client' }))));
    // One execution for one team: the overview's counts in the singular.
    await ingest(hookRequest([{ hookEvent: 'Stop', hookName: 'Stop:team-one', timeMs: NOW - 5 * 60_000, team: 'platform', sizes: { stdout: 20, additionalContext: 0, persisted: 0 } }]));
  });

  afterEach(async () => {
    expect(await closePages(open)).toEqual([]);
  });

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  return {
    browser: () => browser,
    svc: () => svc,
    async page(opts = {}) {
      const w = await watchedPage(browser, opts);
      open.push(w);
      return w;
    },
    async hookId(name) {
      const hooks = (await getJson<HooksResponse>(svc.httpUrl, '/api/v1/hooks?from=now-7d')).body;
      const h = hooks.hooks.find((x) => x.hookName === name);
      if (!h) throw new Error(`no hook ${name}`);
      return h.id;
    },
  };
}
