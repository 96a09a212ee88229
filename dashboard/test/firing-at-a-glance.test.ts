/**
 * A dashboard kept open on a wall screen shows the alerts firing at a glance, in headless Chromium against a real
 * hookwatch whose rules fire on real OTLP input: the header's Alerts link counts the firing alerts no silence
 * mutes, on every page; each hook with one is marked on the overview's table, the marker naming its rules and
 * leading to the hook's alerts (the alerts page filtered to the hook, the filter kept on reload, back and forward,
 * removable from the keyboard), and keeping a keyboard user's focus as the rows are drawn anew; an alert
 * of no single hook (a quiet feed) counts in the header only. Both follow the page's own refresh: an alert
 * resolved or silenced leaves them, and a tab in the background asks for nothing. The marker keeps the key
 * columns on a 390 px phone. The alerts API alone failing, the header says the alert state is unknown, never that
 * none fires, and the overview marks no hook, saying once, quietly, that the markers are unavailable, until it
 * answers again.
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

/**
 * What the overview says of its rows' firing markers while the alert state is unknown: the note's text (null while
 * none is shown), whether the hooks table is described by it, and whether it is drawn as quietly as the panel's
 * other hints (no alarm colour, no live region).
 */
function markersUnknown(p: Page): Promise<{ note: string | null; describes: boolean; quiet: boolean }> {
  return p.evaluate(() => {
    const note = document.querySelector<HTMLElement>('#firing-unknown');
    const shown = note !== null && !note.hidden && note.getBoundingClientRect().height > 0;
    const hint = note?.closest('section')?.querySelector<HTMLElement>('p.hint:not(#firing-unknown)');
    return {
      note: shown ? note.textContent : null,
      describes: (document.querySelector('#hooks-table')?.getAttribute('aria-describedby') ?? '').split(' ').includes('firing-unknown'),
      quiet: note !== null && hint !== null && hint !== undefined && getComputedStyle(note).color === getComputedStyle(hint).color && !note.closest('[role="alert"], [role="status"], [aria-live]'),
    };
  });
}

/**
 * What the alerts page lists: its hook filter's text (null for none) and each card as "state rule subject", in
 * the page's order.
 */
function alertsListed(p: Page): Promise<{ filter: string | null; cards: string[] }> {
  return p.evaluate(() => ({
    filter: document.querySelector('#alert-hook-filter')?.textContent?.replace(/[\u00d7\u2068\u2069]/g, '').trim() ?? null,
    cards: [...document.querySelectorAll<HTMLElement>('#alerts-list article.alert')].map((c) => [
      c.dataset['state'], c.querySelector('.alert-head strong')?.textContent, c.querySelector('.alert-head :is(a, .alert-subject)')?.textContent,
    ].join(' ')),
  }));
}

/** A URL's query parameters, by name. */
const query = (url: string): Record<string, string> => Object.fromEntries(new URL(url).searchParams);

async function hookIdOf(name: string): Promise<string> {
  const hooks = (await getJson<HooksResponse>(svc.httpUrl, '/api/v1/hooks?from=now-7d')).body.hooks;
  return hooks.find((x) => x.hookName === name)?.id ?? '';
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

  it('leads from a hook\'s marker to its alerts, the alerts page filtered to the hook, and keeps the count on every page', async () => {
    // The silences made above expired: the hooks' alerts and the feed's call again.
    const silences = (await getJson<{ silences: { id: string }[] }>(svc.httpUrl, '/api/v1/silences?state=active')).body.silences;
    for (const s of silences) expect((await fetch(`${svc.httpUrl}/api/v1/silences/${s.id}`, { method: 'DELETE' })).status).toBe(200);
    await expect.poll(firing, REFRESHED).toEqual(['feed_quiet', `silence ${QUIET}`, `silence ${LOUD}`]);
    const loudId = await hookIdOf(LOUD);
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/?range=7d`);
    await waitLoaded(p);
    const marker = p.locator(`tr[data-hook-id="${loudId}"] .firing-marker`);
    await marker.waitFor();
    expect(await p.textContent('nav a[data-path="/alerts"] .firing-count')).toBe('3');
    await screenshot(p, 'firing-overview');
    // From the keyboard: the marker is a link.
    await marker.focus();
    await p.keyboard.press('Enter');
    await p.waitForURL(`${svc.httpUrl}/alerts?range=7d&hook=${loudId}`);
    // The hook's alerts alone, firing first: its silence alert, and its persisted one, resolved. Neither the other
    // hook's nor the feed's, which the header still counts.
    const loudOnly = { filter: `Hook: ${LOUD}`, cards: [`firing silence ${LOUD}`, `resolved persisted ${LOUD}`] };
    await expect.poll(() => alertsListed(p), REFRESHED).toEqual(loudOnly);
    expect(await glance(p)).toMatchObject({ badge: '3', name: 'Alerts, 3 firing' });
    // The header's Alerts link leads to every hook's alerts.
    expect(new URL(await p.getAttribute('nav a[data-path="/alerts"]', 'href') ?? '', svc.httpUrl).searchParams.has('hook')).toBe(false);
    await screenshot(p, 'alerts-hook-filter');

    // A reload keeps the filter, and so does the state filter.
    await p.reload();
    await waitLoaded(p);
    expect(await alertsListed(p)).toEqual(loudOnly);
    await p.selectOption('#alert-state', 'firing');
    await expect.poll(() => alertsListed(p), REFRESHED).toEqual({ filter: `Hook: ${LOUD}`, cards: [`firing silence ${LOUD}`] });
    expect(query(p.url())).toEqual({ range: '7d', hook: loudId, state: 'firing' });

    // Removed from the keyboard: every hook's firing alerts, the focus on the state filter beside it.
    await p.focus('#alert-hook-filter button');
    expect(await p.getAttribute('#alert-hook-filter button', 'aria-label')).toBe(`Remove the hook filter \u2068${LOUD}\u2069`);
    await p.keyboard.press('Enter');
    const every = { filter: null, cards: ['firing feed_quiet all hooks (the whole feed)', `firing silence ${QUIET}`, `firing silence ${LOUD}`].sort() };
    await expect.poll(async () => ({ ...(await alertsListed(p)), cards: (await alertsListed(p)).cards.sort() }), REFRESHED).toEqual(every);
    expect(query(p.url())).toEqual({ range: '7d', state: 'firing' });
    expect(await p.evaluate(() => document.activeElement?.id)).toBe('alert-state');
    // Back brings the filter back, Forward takes it away again.
    await p.goBack();
    await expect.poll(() => alertsListed(p), REFRESHED).toEqual({ filter: `Hook: ${LOUD}`, cards: [`firing silence ${LOUD}`] });
    await p.goForward();
    await expect.poll(async () => (await alertsListed(p)).filter, REFRESHED).toBeNull();

    // A filter on something that is no hook id: the API refuses it, the page says why, and the filter is there to remove.
    const { page: bad } = await page({ allow: /status of 400/ });
    await bad.goto(`${svc.httpUrl}/alerts?hook=loud-report`);
    await bad.waitForSelector('#error-banner:not([hidden])');
    expect(await bad.textContent('#error-alert')).toBe('Could not refresh: hook must be a hook id, 16 lowercase hex characters (see GET /api/v1/hooks)');
    // Where the alerts would be, what is wrong, not a "Loading…" that never ends (the refusal is not asked again).
    expect(await bad.textContent('#alerts-list')).toBe('No alerts to show for this hook filterhookwatch refused it: hook must be a hook id, 16 lowercase hex characters (see GET /api/v1/hooks). Remove the hook filter above to list every hook\'s alerts.');
    await bad.click('#alert-hook-filter button');
    // The banner goes as the page is drawn anew, before its alerts come: they are waited for.
    await expect.poll(async () => (await alertsListed(bad)).cards, REFRESHED).toHaveLength(4);
    expect(await bad.isHidden('#error-banner')).toBe(true);
    // The overview's filters ride along, and the page, narrowed to the hook, does not claim to show the whole fleet.
    await bad.goto(`${svc.httpUrl}/alerts?range=7d&f.team=platform&hook=${loudId}`);
    await waitLoaded(bad);
    expect(await bad.textContent('#filters-not-applied')).toBe('The filter team = \u2068platform\u2069 applies to the overview and hook pages, not to this one.');
  });

  it('still opens a hook\'s page at its alert timeline', async () => {
    const loudId = await hookIdOf(LOUD);
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/hooks/${loudId}?range=7d#alert-timeline`);
    await waitLoaded(p);
    // Scrolled to the timeline, drawn after the browser looked for it. It lists the hook's persisted alert,
    // resolved, and its silence alert, firing.
    await expect.poll(() => p.evaluate(() => {
      const t = document.getElementById('alert-timeline');
      const box = t?.getBoundingClientRect();
      return {
        // Below the first screen of the page, and on the screen now.
        below: box !== undefined && box.top + scrollY > innerHeight,
        shown: box !== undefined && box.top >= 0 && box.bottom <= innerHeight,
        rows: t?.querySelectorAll('#hook-alerts tbody tr').length,
      };
    }), REFRESHED).toEqual({ below: true, shown: true, rows: 2 });
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

    // The marker's way on: the alerts page filtered to the hook, its filter on the phone's screen, nothing wider.
    await p.locator('#hook-rows .firing-marker').first().click();
    await p.waitForURL(/\/alerts\?/);
    await p.locator('#alert-hook-filter').waitFor();
    await p.locator('#alerts-list article.alert').first().waitFor();
    expect(await p.evaluate(() => {
      const fits = (sel: string): boolean => {
        const b = document.querySelector(sel)?.getBoundingClientRect();
        return b !== undefined && b.width > 0 && b.left >= 0 && b.right <= window.innerWidth;
      };
      return { page: document.documentElement.scrollWidth - window.innerWidth, filter: fits('#alert-hook-filter'), remove: fits('#alert-hook-filter button'), state: fits('#alert-state') };
    })).toEqual({ page: 0, filter: true, remove: true, state: true });
    await screenshot(p, 'alerts-hook-filter-phone');
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
    // The rows' markers: none drawn, the table saying once, quietly, that which hooks fire is unknown.
    const unmarked = { rows: { [LOUD]: '', [QUIET]: '' } };
    const markersNote = { note: 'Alert state unavailable: hooks with an alert firing are not marked until the alerts API answers again.', describes: true, quiet: true };
    // Opened while it fails: the header has no count to give, and says so rather than showing none.
    await failAlerts();
    await p.goto(`${svc.httpUrl}/?range=7d&refresh=1s`);
    await waitLoaded(p);
    expect(await glance(p)).toMatchObject({ ...unknown, ...unmarked });
    expect(await markersUnknown(p)).toEqual(markersNote);
    // The rest of the page is there: the hooks listed, no error banner over them.
    expect(Object.keys((await glance(p)).rows).sort()).toEqual([QUIET, LOUD].sort());
    expect(await p.isHidden('#error-banner')).toBe(true);
    await screenshot(p, 'firing-unknown-overview');
    // It answers again: counted at the next refresh, the rows marked and the note gone.
    await p.unroute(alertsApi);
    await expect.poll(() => glance(p), REFRESHED).toEqual({
      badge: '3', name: 'Alerts, 3 firing', title: '3 alerts firing', rows: { [LOUD]: marked('silence'), [QUIET]: marked('silence') },
    });
    expect(await markersUnknown(p)).toMatchObject({ note: null, describes: false });
    // It fails again: neither the last count nor the last markers are shown as if they were current.
    await failAlerts();
    await expect.poll(() => glance(p), REFRESHED).toMatchObject({ ...unknown, ...unmarked });
    expect(await markersUnknown(p)).toEqual(markersNote);
    // Unknown on every page, the alerts page's own header included.
    await p.click('nav a[data-path="/alerts"]');
    await p.waitForURL(/\/alerts/);
    await p.waitForSelector('#error-banner:not([hidden])');
    await expect.poll(() => glance(p), REFRESHED).toMatchObject(unknown);
    await screenshot(p, 'firing-unknown');
  });
});
