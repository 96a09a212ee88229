/**
 * A hook's alert timeline in headless Chromium against a real hookwatch whose alert state holds more resolved
 * alerts of other hooks than the alerts API lists at once (its newest 1,000): the hook's page asks for its own
 * alerts alone (GET /api/v1/alerts?hook=), so its resolved alert older than all of them is still on its timeline.
 * The alerts API failing, the timeline says its alerts are unknown, never that the hook has none, and the hints of
 * the cliff chart and of the timeline say so rather than promising spans shaded where alerts were active.
 */
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import type { AlertsResponse } from '../../shared/src/api.ts';
import { hookId } from '../../collector/src/hooks/extract.ts';
import { SqliteAlertStateStore } from '../../collector/src/alerting/state/sqlite.ts';
import { getJson, postOtlp, startTestService, tempDir, type TestService } from '../../collector/test/helpers.ts';
import { alertRecord } from '../../collector/test/support/alerting.ts';
import { closePages, launch, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';
import { hookRequest } from './otlp-json.ts';

const NOW = Date.now();
const HOUR = 3_600_000;
const HOOK = 'Stop:release-notes';
const ID = hookId('Stop', HOOK);
/** Resolved alerts of another hook, each newer than this hook's: more than the alerts API lists at once. */
const OTHERS = 1_005;
const OWN_ALERT = 'eeeeeeeeeeeeeee1-r';

let browser: Browser;
let svc: TestService;
const open: WatchedPage[] = [];

async function page(opts: { allow?: RegExp } = {}): Promise<WatchedPage> {
  const w = await watchedPage(browser, opts);
  open.push(w);
  return w;
}

/** The hook's alert timeline: its rows as "rule state", or what it says instead of rows. */
function timeline(p: WatchedPage['page']): Promise<{ rows: string[]; said: string | null }> {
  return p.evaluate(() => ({
    rows: [...document.querySelectorAll('#hook-alerts tbody tr')].map((tr) => [...tr.querySelectorAll('td')].slice(0, 2).map((td) => td.textContent).join(' ')),
    said: document.querySelector('#hook-alerts-holder > p')?.textContent ?? null,
  }));
}

/** What the cliff chart's hint says under its title. */
function cliffHint(p: WatchedPage['page']): Promise<string | null> {
  return p.textContent('[data-chart="cliff"] > p.hint');
}

/** What the alert timeline's hint says under its title. */
function timelineHint(p: WatchedPage['page']): Promise<string | null> {
  return p.textContent('#alert-timeline > p.hint');
}

beforeAll(async () => {
  browser = await launch();
  // The alert state hookwatch starts with, written to its store as it writes it: the hook's headroom alert
  // resolved three hours ago, and since then another hook's alerts, resolved a second apart.
  const tmp = tempDir('hookwatch-hook-alerts-');
  const state = new SqliteAlertStateStore(join(tmp.dir, 'hookwatch.db'));
  const other = hookId('Stop', 'Stop:other');
  await state.save({
    upsert: [
      alertRecord({
        id: OWN_ALERT, rule: 'headroom', state: 'resolved', hookId: ID, labels: { alertname: 'headroom', hook_name: HOOK, hook_event: 'Stop' },
        activeAtMs: NOW - 4 * HOUR, startsAtMs: NOW - 4 * HOUR, endsAtMs: NOW - 3 * HOUR, lastActiveMs: NOW - 3 * HOUR,
      }),
      ...Array.from({ length: OTHERS }, (_, i) => alertRecord({
        id: `${i.toString(16).padStart(16, '0')}-r`, fingerprint: `other-${i}`, state: 'resolved', hookId: other, labels: { alertname: 'persisted', hook_name: 'Stop:other', hook_event: 'Stop' },
        activeAtMs: NOW - 2 * HOUR, startsAtMs: NOW - 2 * HOUR, endsAtMs: NOW - HOUR - i * 1000, lastActiveMs: NOW - HOUR - i * 1000,
      })),
    ],
    remove: [],
    notifications: [],
  });
  await state.close();
  svc = await startTestService({}, { dir: tmp.dir });
  const body = hookRequest([{ hookEvent: 'Stop', hookName: HOOK, timeMs: NOW - 60_000, sizes: { stdout: 300, additionalContext: 0, persisted: 0 } }]);
  expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
});

afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

describe('a hook\'s alert timeline', () => {
  it('lists the hook\'s own resolved alert, past the newest 1,000 of the whole fleet', async () => {
    // The whole fleet's list leaves it out: the other hook's resolved alerts fill it.
    const fleet = (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body;
    expect([fleet.alerts.some((a) => a.id === OWN_ALERT), fleet.resolvedOmitted]).toEqual([false, OTHERS + 1 - fleet.alerts.length]);
    const { page: p } = await page();
    const asked: string[] = [];
    p.on('request', (r) => {
      const u = new URL(r.url());
      if (u.pathname === '/api/v1/alerts') asked.push(u.search);
    });
    await p.goto(`${svc.httpUrl}/hooks/${ID}`);
    await waitLoaded(p);
    expect(await timeline(p)).toEqual({ rows: ['headroom resolved'], said: null });
    // Asked for the hook's alone; the header's count asks for the firing ones.
    expect(asked.sort()).toEqual([`?hook=${ID}`, '?state=firing']);
  });

  it('says the hook\'s alerts are unknown while the alerts API fails, never that it has none', async () => {
    const { page: p } = await page({ allow: /status of 503/ });
    const alertsApi = (u: URL): boolean => u.pathname === '/api/v1/alerts';
    await p.route(alertsApi, (route) => route.fulfill({
      status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'unavailable', message: 'the alert state is not readable' } }),
    }));
    await p.goto(`${svc.httpUrl}/hooks/${ID}`);
    await waitLoaded(p);
    expect(await timeline(p)).toEqual({ rows: [], said: 'Alert timeline unavailable: the alert state is not readable' });
    // The cliff chart promises no shaded spans it cannot draw: it says the alert state is unknown.
    expect(await cliffHint(p)).toMatch(/alert state unknown/);
    expect(await cliffHint(p)).not.toMatch(/shaded/);
    // Nor does the timeline's hint, which says the same spans are shaded on the cliff chart when they are known.
    expect(await timelineHint(p)).toMatch(/alert state unknown/);
    expect(await timelineHint(p)).not.toMatch(/shaded/);
    // The rest of the page is there, no error banner over it.
    expect(await p.isHidden('#error-banner')).toBe(true);
    expect(await p.textContent('h1')).toContain(HOOK);
    // It answers again: the timeline is back at the next refresh.
    await p.unroute(alertsApi);
    await p.click('#refresh-now');
    await expect.poll(() => timeline(p), { timeout: 10_000 }).toEqual({ rows: ['headroom resolved'], said: null });
    expect(await cliffHint(p)).toMatch(/shaded spans when alerts were active/);
    expect(await timelineHint(p)).toMatch(/the same spans are shaded on the cliff chart/);
  });
});
