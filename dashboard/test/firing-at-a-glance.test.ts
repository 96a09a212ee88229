/**
 * A dashboard kept open on a wall screen shows the alerts firing at a glance, in headless Chromium against a real
 * hookwatch whose rules fire on real OTLP input: the header's Alerts link counts the firing alerts no silence
 * mutes, on every page; each hook with one is marked on the overview's table, the marker naming its rules and
 * leading to the hook's alert timeline, and keeping a keyboard user's focus as the rows are drawn anew; an alert
 * of no single hook (a quiet feed) counts in the header only. Both follow the page's own refresh: an alert
 * resolved or silenced leaves them, and a tab in the background asks for nothing. The marker keeps the key
 * columns on a 390 px phone. The alerts API alone failing, the header says the alert state is unknown, never that
 * none fires, until it answers again.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { AlertsResponse, HooksResponse } from '../../shared/src/api.ts';
import { eventually, getJson, postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { FakeClock } from '../../collector/test/support/alerting.ts';
import { closePages, launch, screenshot, showTab, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';
import { hookRequest } from './otlp-json.ts';

const MIN = 60_000;
const LOUD = 'Stop:loud-report';
const QUIET = 'PostToolUse:quiet-lint';

let browser: Browser;
let svc: TestService;
// hookwatch's clock starts at the browser's; the test moves it on, for the hooks and then the feed to go quiet.
const clock = new FakeClock(Date.now());
const open: WatchedPage[] = [];

async function page(opts: { width?: number; height?: number; allow?: RegExp } = {}): Promise<WatchedPage> {
  const w = await watchedPage(browser, opts);
  open.push(w);
  return w;
}


/** The firing alerts the API lists, as "rule hook-name" (or the rule alone), silenced ones marked. */
async function firing(): Promise<string[]> {
  const r = (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts?state=firing')).body;
  return r.alerts.map((a) => `${a.rule}${a.labels['hook_name'] ? ` ${a.labels['hook_name']}` : ''}${a.silencedBy.length ? ' (silenced)' : ''}`).sort();
}

/**
 * What the page shows at a glance: the number beside the header's Alerts link (none: ''), the link's accessible
 * name and tooltip, and each row's firing marker by hook name ('' for none).
 */
function glance(p: Page): Promise<{ badge: string; name: string; title: string | null; rows: Record<string, string> }> {
  return p.evaluate(() => {
    const link = document.querySelector<HTMLElement>('nav a[data-path="/alerts"]');
    const count = link?.querySelector<HTMLElement>('.firing-count');
    const shown = count && !count.hidden && count.getBoundingClientRect().width > 0 ? count.textContent ?? '' : '';
    return {
      badge: shown,
      name: link?.getAttribute('aria-label') ?? link?.textContent?.trim() ?? '',
      title: link?.getAttribute('title') ?? null,
      rows: Object.fromEntries([...document.querySelectorAll('#hook-rows tr')].map((tr) => {
        const marker = tr.querySelector('.firing-marker');
        return [tr.querySelector('a.hook-link')?.textContent ?? '', marker ? `${marker.textContent} | ${marker.getAttribute('aria-label')} | ${marker.getAttribute('title')}` : ''];
      })),
    };
  });
}

/** Long enough for an evaluation (every 200 ms) and the page's next refresh (every second) after it. */
const REFRESHED = { timeout: 10_000 };

/** Silences the alerts `matcher` matches, for an hour on hookwatch's clock. */
async function silence(matcher: { name: string; value: string; isRegex?: boolean }, comment: string): Promise<void> {
  const r = await fetch(`${svc.httpUrl}/api/v1/silences`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ matchers: [matcher], endsAt: new Date(clock.now() + 3_600_000).toISOString(), createdBy: 'platform on-call', comment }),
  });
  expect(r.status).toBe(201);
}

const marked = (rules: string): string => `firing | Firing: ${rules} | Firing: ${rules}`;

beforeAll(async () => {
  browser = await launch();
  const yaml = [
    'alerting:',
    '  rules:',
    '    - { kind: persisted, window: 2h }',
    '    - { kind: silence, after: 1h, window: 3h }',
    '    - { kind: silence, name: feed_quiet, scope: feed, after: 2h }',
    '',
  ].join('\n');
  svc = await startTestService({ HOOKWATCH_ALERT_EVALUATION_INTERVAL: '200ms' }, { now: clock.now, yaml });
  // One run of each hook, the loud one's output persisted.
  const body = hookRequest([
    { hookEvent: 'Stop', hookName: LOUD, timeMs: clock.now() - MIN, sizes: { stdout: 10_600, additionalContext: 0, persisted: 1 } },
    { hookEvent: 'PostToolUse', hookName: QUIET, timeMs: clock.now() - MIN, sizes: { stdout: 300, additionalContext: 0, persisted: 0 } },
  ]);
  expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
});

afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

describe('firing alerts at a glance', () => {
  it('counts the firing alerts in the header and marks their hooks, until they resolve or are silenced', async () => {
    await eventually('the persisted alert firing', async () => (await firing()).includes(`persisted ${LOUD}`) || undefined);
    const { page: p } = await page();
    const asked: string[] = [];
    p.on('request', (r) => {
      if (r.url().includes('/api/v1/alerts')) asked.push(r.url());
    });
    await p.goto(`${svc.httpUrl}/?refresh=1s`);
    await waitLoaded(p);
    await expect.poll(() => glance(p), REFRESHED).toEqual({
      badge: '1', name: 'Alerts, 1 firing', title: '1 alert firing', rows: { [LOUD]: marked('persisted'), [QUIET]: '' },
    });

    // Both hooks quiet for an hour and a half: each one's `silence` alert fires, the newest named first.
    clock.advance(90 * MIN);
    await eventually('both hooks\' silence alerts firing', async () => ((await firing()).filter((a) => a.startsWith('silence ')).length === 2) || undefined);
    await expect.poll(() => glance(p), REFRESHED).toEqual({
      badge: '3', name: 'Alerts, 3 firing', title: '3 alerts firing', rows: { [LOUD]: marked('silence, persisted'), [QUIET]: marked('silence') },
    });

    // An hour on, the persisted output has left the rule's window: that alert resolves, and the marker no longer
    // names it. The whole feed is quiet now too: its alert is of no single hook, counted in the header alone.
    clock.advance(60 * MIN);
    await eventually('the persisted alert resolved and the feed alert firing', async () => (await firing()).join() === `feed_quiet,silence ${QUIET},silence ${LOUD}` || undefined);
    await expect.poll(() => glance(p), REFRESHED).toEqual({
      badge: '3', name: 'Alerts, 3 firing', title: '3 alerts firing', rows: { [LOUD]: marked('silence'), [QUIET]: marked('silence') },
    });

    // The quiet hook silenced: handled, so nothing calls for it; the tooltip still says what fires silenced.
    await silence({ name: 'hook_name', value: QUIET }, 'lint retired');
    await expect.poll(() => glance(p), REFRESHED).toEqual({
      badge: '2', name: 'Alerts, 2 firing', title: '2 alerts firing; 1 firing alert silenced, not counted', rows: { [LOUD]: marked('silence'), [QUIET]: '' },
    });
    // Every alert silenced: no number, the link reads "Alerts" again.
    await silence({ name: 'alertname', value: 'silence|feed_quiet', isRegex: true }, 'maintenance');
    await expect.poll(() => glance(p), REFRESHED).toEqual({
      badge: '', name: 'Alerts', title: '3 firing alerts silenced, not counted', rows: { [LOUD]: '', [QUIET]: '' },
    });

    // The count is asked for with the page's own refresh: a tab in the background asks for nothing.
    await showTab(p, false);
    const before = asked.length;
    await new Promise((r) => setTimeout(r, 2_500));
    expect(asked.length).toBe(before);
    expect(asked.every((u) => new URL(u).search === '?state=firing')).toBe(true);
  });

  it('leads from a hook\'s marker to its alert timeline, and keeps the count on every page', async () => {
    // The silences made above expired: the hooks' alerts and the feed's call again.
    const silences = (await getJson<{ silences: { id: string }[] }>(svc.httpUrl, '/api/v1/silences?state=active')).body.silences;
    for (const s of silences) expect((await fetch(`${svc.httpUrl}/api/v1/silences/${s.id}`, { method: 'DELETE' })).status).toBe(200);
    await expect.poll(firing, REFRESHED).toEqual(['feed_quiet', `silence ${QUIET}`, `silence ${LOUD}`]);
    const hooks = (await getJson<HooksResponse>(svc.httpUrl, '/api/v1/hooks?from=now-7d')).body.hooks;
    const loudId = hooks.find((x) => x.hookName === LOUD)?.id ?? '';
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/?range=7d`);
    await waitLoaded(p);
    const marker = p.locator(`tr[data-hook-id="${loudId}"] .firing-marker`);
    await marker.waitFor();
    expect(await p.textContent('nav a[data-path="/alerts"] .firing-count')).toBe('3');
    await screenshot(p, 'firing-overview');
    await marker.click();
    await p.waitForURL(`${svc.httpUrl}/hooks/${loudId}?range=7d#alert-timeline`);
    await waitLoaded(p, 2);
    // Scrolled to the timeline, which has the focus: a keyboard or screen reader user is there too. It lists the
    // hook's persisted alert, resolved, and its silence alert, firing.
    const at = await p.evaluate(() => {
      const t = document.getElementById('alert-timeline');
      const box = t?.getBoundingClientRect();
      return {
        focused: document.activeElement === t,
        // Below the first screen of the page, and on the screen now.
        below: box !== undefined && box.top + scrollY > innerHeight,
        shown: box !== undefined && box.top >= 0 && box.bottom <= innerHeight,
        rows: t?.querySelectorAll('#hook-alerts tbody tr').length,
      };
    });
    expect(at).toEqual({ focused: true, below: true, shown: true, rows: 2 });
    // The header counts them on the hook's page too.
    expect(await glance(p)).toMatchObject({ badge: '3', name: 'Alerts, 3 firing' });
  });

  it('keeps the focus on a hook\'s marker as the page refreshes', async () => {
    await expect.poll(firing, REFRESHED).toContain(`silence ${LOUD}`);
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/?range=7d&refresh=1s`);
    await waitLoaded(p);
    const marker = p.locator('#hook-rows .firing-marker').first();
    await marker.waitFor();
    const hookId = await marker.evaluate((m) => m.closest('tr')?.dataset['hookId']);
    await marker.focus();
    // Two refreshes on, each drawing the rows anew: a keyboard user is still on the marker, not moved to the name.
    const loaded = await p.evaluate(() => Number(document.body.dataset['loaded']));
    await waitLoaded(p, loaded + 2);
    expect(await p.evaluate(() => {
      const el = document.activeElement;
      return { marker: el?.classList.contains('firing-marker'), hookId: el?.closest('tr')?.dataset['hookId'] };
    })).toEqual({ marker: true, hookId });
  });

  it('keeps the overview\'s key columns on a 390 px phone with a marker beside the status', async () => {
    const { page: p } = await page({ width: 390, height: 844 });
    await p.goto(`${svc.httpUrl}/?range=7d`);
    await waitLoaded(p);
    await p.locator('#hook-rows .firing-marker').first().waitFor();
    const m = await p.evaluate(() => {
      const t = document.querySelector('#hooks-table') as HTMLElement;
      const rows = [...document.querySelectorAll('#hook-rows tr')];
      const fits = (el: Element | null): boolean => {
        const b = el?.getBoundingClientRect();
        return b !== undefined && b.width > 0 && b.right <= window.innerWidth;
      };
      const visible = (sel: string): boolean => rows.every((r) => fits(r.querySelector(sel)));
      return {
        page: document.documentElement.scrollWidth - window.innerWidth,
        table: t.scrollWidth - (t.parentElement as HTMLElement).clientWidth,
        status: visible('td:nth-child(1) .status'), hook: visible('th[scope="row"] a'), persisted: visible('td:nth-child(6)'), largest: visible('td:nth-child(7)'),
        marker: visible('.firing-marker'),
        badge: fits(document.querySelector('nav a[data-path="/alerts"] .firing-count')),
        tallest: Math.max(...rows.map((r) => r.getBoundingClientRect().height)),
      };
    });
    expect(m).toMatchObject({ page: 0, status: true, hook: true, persisted: true, largest: true, marker: true, badge: true });
    expect(m.table).toBeLessThanOrEqual(0);
    expect(m.tallest).toBeLessThan(100);
    await screenshot(p, 'firing-phone');
  });

  it('says the alert state is unknown, never that none fires, while the alerts API alone fails', async () => {
    await expect.poll(firing, REFRESHED).toHaveLength(3);
    const { page: p } = await page({ allow: /status of 503/ });
    const alertsApi = (u: URL): boolean => u.pathname === '/api/v1/alerts';
    const failAlerts = async (): Promise<void> => {
      await p.route(alertsApi, (route) => route.fulfill({
        status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'unavailable', message: 'the alert state is not readable' } }),
      }));
    };
    const unknown = { badge: '?', name: 'Alerts, alert state unavailable: the alert state is not readable', title: 'alert state unavailable: the alert state is not readable' };
    // Opened while it fails: the header has no count to give, and says so rather than showing none.
    await failAlerts();
    await p.goto(`${svc.httpUrl}/?range=7d&refresh=1s`);
    await waitLoaded(p);
    expect(await glance(p)).toMatchObject(unknown);
    // The rest of the page is there: the hooks listed, no error banner over them.
    expect(Object.keys((await glance(p)).rows).sort()).toEqual([QUIET, LOUD].sort());
    expect(await p.isHidden('#error-banner')).toBe(true);
    // It answers again: counted at the next refresh.
    await p.unroute(alertsApi);
    await expect.poll(() => glance(p), REFRESHED).toMatchObject({ badge: '3', name: 'Alerts, 3 firing', title: '3 alerts firing' });
    // It fails again: the last count is not shown as if it were current.
    await failAlerts();
    await expect.poll(() => glance(p), REFRESHED).toMatchObject(unknown);
    // Unknown on every page, the alerts page's own header included.
    await p.click('nav a[data-path="/alerts"]');
    await p.waitForURL(/\/alerts/);
    await p.waitForSelector('#error-banner:not([hidden])');
    await expect.poll(() => glance(p), REFRESHED).toMatchObject(unknown);
    await screenshot(p, 'firing-unknown');
  });
});
