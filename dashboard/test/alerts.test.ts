/**
 * The alerts page in headless Chromium against hookwatch's real alerts API: alerts raised by the captured
 * 2.1.332 requests, their webhook delivery attempts (to a local sink), silencing a hook from the page, and the
 * page's empty state when a hookwatch has no alerts API at all.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import express from 'express';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Route } from 'playwright-core';
import type { AlertDetailResponse, AlertSummary, AlertsResponse, ClusterResponse, Silence } from '../../shared/src/api.ts';
import { FIXTURE_RUNS, eventually, fixtureRequests, getJson, postOtlp, startTestService, tempDir, type TestService } from '../../collector/test/helpers.ts';
import { createDashboardRouter } from '../server.ts';
import { chartData, closePages, launch, screenshot, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';
import { hookRequest } from './otlp-json.ts';
import { alertRange } from '../../shared/src/alert-range.ts';
import { dashboardLink } from '../../collector/src/notify/links.ts';

const NOW = Date.parse('2026-11-30T08:30:00Z');
const XSS = '<img src=x onerror=alert(1)>';

let browser: Browser;
let svc: TestService;
let sink: Server;
const received: unknown[] = [];
const open: WatchedPage[] = [];
const tmp = tempDir('hookwatch-alerts-');

async function page(opts: { allow?: RegExp; timezoneId?: string } = {}): Promise<WatchedPage> {
  const w = await watchedPage(browser, opts);
  open.push(w);
  return w;
}

/** The fixtures' firing persisted alert (SessionStart:startup), once a notification of it was delivered. */
async function deliveredAlert(): Promise<AlertSummary> {
  return eventually('a firing persisted alert with a delivered notification', async () => {
    const r = (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body;
    const a = r.alerts.find((x) => x.state === 'firing' && x.labels['hook_name'] === 'SessionStart:startup');
    return a && (await getJson<AlertDetailResponse>(svc.httpUrl, `/api/v1/alerts/${a.id}`)).body.attempts.some((t) => t.outcome === 'delivered') ? a : undefined;
  });
}


beforeAll(async () => {
  browser = await launch();
  sink = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push(JSON.parse(body || 'null'));
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  const configFile = join(tmp.dir, 'hookwatch.yaml');
  writeFileSync(configFile, `alerting:\n  receivers:\n    - name: team-webhook\n      type: webhook\n      url: http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook\n`);
  svc = await startTestService({ HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0', HOOKWATCH_CONFIG: configFile, HOOKWATCH_ALERT_EVALUATION_INTERVAL: '200ms' }, { now: () => NOW });
  for (const run of FIXTURE_RUNS) {
    for (const req of fixtureRequests(run)) {
      expect((await postOtlp(svc.otlpHttpUrl, req.path, req.body, { 'content-type': req.contentType })).status).toBe(200);
    }
  }
  const xss = hookRequest([{ hookEvent: 'Stop', hookName: XSS, timeMs: NOW - 300_000, sizes: { stdout: 10_500, additionalContext: 0, persisted: 1 } }]);
  expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', xss, { 'content-type': 'application/json' })).status).toBe(200);
});

afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await svc?.close();
  await new Promise((r) => sink?.close(r));
  tmp.cleanup();
});

describe('alerts page', () => {
  it('shows no filter chips it does not apply, says the page is the whole fleet\'s, and keeps the filters for the way back', async () => {
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/alerts?f.service.version=9.9.9`);
    await waitLoaded(p);
    expect(await p.$$('.chip:not(.superseded-note)')).toHaveLength(0);
    expect(await p.$$('#filter-value')).toHaveLength(0);
    expect(await p.textContent('#filters-not-applied')).toBe('This page is not filtered: it shows the whole fleet. The filter service.version = \u20689.9.9\u2069 applies to the overview and hook pages.');
    await p.click('nav a:text-is("Overview")');
    await waitLoaded(p, 2);
    expect(new URL(p.url()).searchParams.get('f.service.version')).toBe('9.9.9');
    expect(await p.textContent('.chip')).toContain('service.version = 9.9.9');
  });

  it('lists the alerts with their delivery attempts, renders labels as text, and silences a hook', async () => {
    const alert = await eventually('a firing persisted alert', async () => {
      const r = (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body;
      return r.alerts.find((a) => a.state === 'firing' && a.labels['hook_name'] === 'SessionStart:startup');
    });
    await eventually('a delivery attempt', async () => {
      const d = (await getJson<AlertDetailResponse>(svc.httpUrl, `/api/v1/alerts/${alert.id}`)).body;
      return d.attempts.find((a) => a.outcome === 'delivered');
    });
    const { page: p, dialogs } = await page();
    await p.goto(`${svc.httpUrl}/alerts?refresh=1s`);
    await waitLoaded(p);
    const card = p.locator(`article[data-alert-id="${alert.id}"]`);
    expect(await card.getAttribute('data-state')).toBe('firing');
    expect(await p.locator('section.alert-group[data-state="firing"] h2').textContent()).toMatch(/^Firing \(\d+\)$/);
    // The hook named like markup is a label value: shown as text, never run.
    expect(await p.locator('#alerts-list').textContent()).toContain(XSS);
    expect(await p.$$('#app img')).toHaveLength(0);

    await card.locator('details.attempts-details > summary').click();
    const attempts = card.locator('table.attempts');
    await attempts.waitFor();
    expect(await attempts.textContent()).toContain('team-webhook');
    expect(await attempts.textContent()).toContain('delivered');

    await card.locator('details.silence > summary').click();
    await card.locator('input[aria-label="Reason"]').fill('rolling out a smaller context file');
    await card.locator('input[aria-label="Your name"]').fill('platform on-call');
    await card.locator('.silence-form button[type="submit"]').click();
    await card.locator('.silence-result', { hasText: 'Silenced until' }).waitFor();
    const silences = (await getJson<{ silences: Silence[] }>(svc.httpUrl, '/api/v1/silences')).body.silences;
    const made = silences.find((s) => s.comment === 'rolling out a smaller context file');
    // An hour on hookwatch's clock (days behind the browser's here), give or take the time the page took to submit.
    expect(Date.parse(made?.endsAt ?? '') - NOW).toBeGreaterThanOrEqual(3_600_000);
    expect(Date.parse(made?.endsAt ?? '') - NOW).toBeLessThan(3_660_000);
    expect(made?.matchers).toEqual(expect.arrayContaining([
      expect.objectContaining({ name: 'hook_name', value: 'SessionStart:startup' }),
      expect.objectContaining({ name: 'hook_event', value: 'SessionStart' }),
    ]));
    // The card names who silenced it and until when; the open attempts table survives the refresh.
    await card.locator('.chip', { hasText: /^silenced by platform on-call until \d\d\/\d\d\/\d{4}, \d\d:\d\d$/ }).waitFor();
    expect(await card.locator('details.attempts-details').getAttribute('open')).not.toBeNull();
    expect(dialogs).toEqual([]);
    await screenshot(p, 'alerts');
  });

  it('says in words why a delivery attempt reached nobody, with the code, the host and port, and never the URL\'s token', async () => {
    // A port nothing listens on: taken, then given back.
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const dir = tempDir('hookwatch-alerts-refused-');
    const configFile = join(dir.dir, 'hookwatch.yaml');
    writeFileSync(configFile, `alerting:\n  receivers:\n    - name: pager\n      type: webhook\n      url: http://127.0.0.1:${port}/services/T0/tok3n-in-the-path?key=k3y-in-the-query\n`);
    const own = await startTestService({ HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0', HOOKWATCH_CONFIG: configFile, HOOKWATCH_ALERT_EVALUATION_INTERVAL: '200ms', HOOKWATCH_ALERT_DELIVERY_DEADLINE: '1s' });
    try {
      const body = hookRequest([{ hookEvent: 'Stop', hookName: 'Stop:report', timeMs: Date.now() - 60_000, sizes: { stdout: 10_500, additionalContext: 0, persisted: 1 } }]);
      expect((await postOtlp(own.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
      const alert = await eventually('a firing persisted alert', async () => (await getJson<AlertsResponse>(own.httpUrl, '/api/v1/alerts?state=firing')).body.alerts.find((a) => a.labels['hook_name'] === 'Stop:report'));
      await eventually('a delivery attempt', async () => (await getJson<AlertDetailResponse>(own.httpUrl, `/api/v1/alerts/${alert.id}`)).body.attempts[0]);
      const { page: p } = await page();
      await p.goto(`${own.httpUrl}/alerts`);
      await waitLoaded(p);
      const card = p.locator(`article[data-alert-id="${alert.id}"]`);
      await card.locator('details.attempts-details > summary').click();
      await card.locator('table.attempts').waitFor();
      const errors = await card.locator('table.attempts tbody tr td:nth-child(7)').allTextContents();
      expect(errors.length).toBeGreaterThan(0);
      // The last attempt says too that the deadline ended the retries.
      for (const e of errors) expect(e.split('; gave up: ')[0]).toBe('connection refused (ECONNREFUSED): nothing listens at that address');
      expect(await p.locator('#app').textContent()).not.toMatch(/tok3n|k3y/);
    } finally {
      await own.close();
      dir.cleanup();
    }
  });

  it('keeps open delivery attempts on screen through the refreshes, drawn again only when they change', async () => {
    const alert = await deliveredAlert();
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/alerts?refresh=1s`);
    await waitLoaded(p);
    const card = p.locator(`article[data-alert-id="${alert.id}"]`);
    await card.locator('details.attempts-details > summary').click();
    await card.locator('table.attempts').waitFor();
    // What the holder shows at each change from here on, and the table drawn first marked (a property, not an
    // attribute: the table as drawn is unchanged).
    await card.locator('.attempts-holder').evaluate((holder) => {
      const w = window as unknown as { shown: string[] };
      w.shown = [];
      (holder.querySelector('table.attempts') as HTMLElement & { first?: boolean }).first = true;
      new MutationObserver(() => w.shown.push((holder.textContent ?? '').slice(0, 40))).observe(holder, { childList: true, subtree: true });
    });
    const loaded = Number(await p.evaluate(() => document.body.dataset['loaded']));
    await waitLoaded(p, loaded + 3);
    // The refreshes did not swap the table for "Loading delivery attempts…" (a wall screen flickering, the page
    // jumping), nor drew it again unchanged.
    expect(await p.evaluate(() => (window as unknown as { shown: string[] }).shown.filter((t) => t.startsWith('Loading')))).toEqual([]);
    expect(await card.locator('table.attempts').evaluate((t) => (t as HTMLElement & { first?: boolean }).first)).toBe(true);
  });

  it('gives up an alert\'s delivery attempts still being asked for when the page is left, and draws nothing of them on the page that follows', async () => {
    const alert = await deliveredAlert();
    const { page: p } = await page();
    // hookwatch slow to answer for the alert: its answer waits until the test lets it through.
    const isAlert = (u: URL): boolean => u.pathname === `/api/v1/alerts/${alert.id}`;
    const held: Route[] = [];
    await p.route(isAlert, (r) => void held.push(r));
    const card = p.locator(`article[data-alert-id="${alert.id}"]`);
    // Left for another page (the header's link), and for the same page drawn anew (a state filter picked).
    const leave: [string, () => Promise<unknown>][] = [
      ['the overview', () => p.click('nav a:text-is("Overview")')],
      ['the firing alerts', () => p.selectOption('#alert-state', 'firing')],
    ];
    for (const [to, go] of leave) {
      await p.goto(`${svc.httpUrl}/alerts?refresh=off`);
      await waitLoaded(p);
      const [asked] = await Promise.all([p.waitForRequest((r) => isAlert(new URL(r.url()))), card.locator('details.attempts-details > summary').click()]);
      await card.locator('.attempts-holder', { hasText: 'Loading delivery attempts…' }).waitFor();
      const given = p.waitForEvent('requestfailed', { predicate: (r) => r === asked, timeout: 5_000 });
      await go();
      await waitLoaded(p, 2);
      // The request went with the page: the browser gave it up, rather than waiting on an answer nobody reads.
      await given;
      expect(asked.failure()?.errorText, to).toBe('net::ERR_ABORTED');
      // Its answer, let through now, is drawn nowhere: not on the page that followed, not on its cards.
      for (const r of held.splice(0)) await r.continue().catch(() => undefined);
      await p.evaluate(() => new Promise((r) => setTimeout(r, 300)));
      const text = (await p.textContent('#main')) ?? '';
      for (const stale of ['delivery attempts…', 'Could not load delivery attempts', 'No notification has been attempted yet']) expect(text, `${to}: ${stale}`).not.toContain(stale);
      expect(await p.locator('#main table.attempts').count(), to).toBe(0);
      expect(await p.locator('#main .attempts-holder:not(:empty)').count(), to).toBe(0);
      if (to === 'the firing alerts') expect(await card.locator('details.attempts-details').getAttribute('open'), to).toBeNull();
    }
  });

  it('scrolls open delivery attempts in their own box at 320 pixels, which keeps the focus and its scroll when they change', async () => {
    const alert = await deliveredAlert();
    const { page: p } = await page();
    await p.setViewportSize({ width: 320, height: 800 });
    await p.goto(`${svc.httpUrl}/alerts?refresh=1s`);
    await waitLoaded(p);
    const card = p.locator(`article[data-alert-id="${alert.id}"]`);
    await card.locator('details.attempts-details > summary').click();
    const rows = card.locator('table.attempts tbody tr');
    await rows.first().waitFor();
    const before = await rows.count();
    // Eight columns do not fit 320 pixels (WCAG's reflow width): they scroll in a box of their own, which a
    // keyboard reaches, not the whole page sideways.
    expect(await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBe(0);
    const box = card.locator('.attempts-holder > .table-scroll[role="region"][tabindex="0"]');
    expect(await box.getAttribute('aria-label')).toBe('Notification delivery attempts');
    await box.focus();
    await box.evaluate((b) => (b.scrollLeft = 60));
    // Refreshes that change nothing leave the box as it is: focused, scrolled (each one moved every card into a
    // new section, which scrolled the box back to its start).
    const loaded = Number(await p.evaluate(() => document.body.dataset['loaded']));
    await waitLoaded(p, loaded + 2);
    expect(await box.evaluate((b) => [document.activeElement === b, b.scrollLeft])).toEqual([true, 60]);
    // A further attempt, as a retry adds one: the table is drawn again, in the box the reader is in.
    await p.route((u) => u.pathname === `/api/v1/alerts/${alert.id}`, async (route) => {
      const answer = await route.fetch();
      const body = (await answer.json()) as AlertDetailResponse;
      const last = body.attempts[body.attempts.length - 1];
      if (last) body.attempts.push({ ...last, attempt: last.attempt + 1, at: new Date(Date.parse(last.at) + 1_000).toISOString() });
      await route.fulfill({ response: answer, json: body });
    });
    await p.waitForFunction(([id, n]) => document.querySelectorAll(`article[data-alert-id="${id}"] table.attempts tbody tr`).length === n, [alert.id, before + 1] as const);
    expect(await box.evaluate((b) => [document.activeElement === b, b.scrollLeft > 0])).toEqual([true, true]);
  });

  it('shows a silence made or expired from a card at once, with refresh paused', async () => {
    const body = hookRequest([{ hookEvent: 'SubagentStop', hookName: 'SubagentStop', sessionId: 'session-paused', timeMs: NOW - 60_000, sizes: { stdout: 10_700, additionalContext: 0, persisted: 1 } }]);
    expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
    const alert = await eventually('a firing alert of the hook', async () => {
      const r = (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body;
      return r.alerts.find((a) => a.state === 'firing' && a.labels['hook_name'] === 'SubagentStop');
    });
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/alerts?refresh=off`);
    await waitLoaded(p);
    const card = p.locator(`article[data-alert-id="${alert.id}"]`);
    await card.locator('details.silence > summary').click();
    await card.locator('input[aria-label="Reason"]').fill('paging the hook author');
    await card.locator('input[aria-label="Your name"]').fill('on-call');
    await card.locator('.silence-form button[type="submit"]').click();
    await card.locator('.silence-result', { hasText: 'Silenced until' }).waitFor();
    const made = (await getJson<{ silences: Silence[] }>(svc.httpUrl, '/api/v1/silences')).body.silences.find((s) => s.comment === 'paging the hook author');
    expect(made?.createdBy).toBe('on-call');
    // No timer refreshes this page: the card and the silences in force say so at once all the same.
    await card.locator('.chip', { hasText: 'silenced by on-call until' }).waitFor({ timeout: 3_000 });
    await p.locator('#silences table.silences tbody tr', { hasText: made?.id ?? '' }).waitFor({ timeout: 3_000 });
    await card.locator('.silence-result button', { hasText: 'Expire it' }).click();
    await card.locator('.silence-result', { hasText: 'Silence expired.' }).waitFor();
    // The button pressed went with the silence: the focus stays in the form, on what silences again.
    expect(await p.evaluate(() => document.activeElement?.closest('.silence-form') ? document.activeElement.textContent : document.activeElement?.tagName)).toBe('Silence');
    await card.locator('.chip', { hasText: 'silenced by' }).waitFor({ state: 'detached', timeout: 3_000 });
    await p.locator('#silences table.silences tbody tr', { hasText: made?.id ?? '' }).waitFor({ state: 'detached', timeout: 3_000 });
  });

  it('keeps a 320-pixel page from scrolling sideways with a silence in force, its table scrolling in its own box', async () => {
    const created = await fetch(`${svc.httpUrl}/api/v1/silences`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ matchers: [{ name: 'hook_name', value: 'Notification:narrow' }], endsAt: new Date(Date.now() + 3_600_000).toISOString(), createdBy: 'on call', comment: 'a phone' }),
    });
    expect(created.status).toBe(201);
    const { silence } = await created.json() as { silence: Silence };
    try {
      const { page: p } = await page();
      await p.setViewportSize({ width: 320, height: 800 });
      await p.goto(`${svc.httpUrl}/alerts`);
      await waitLoaded(p);
      await p.locator('#silences table.silences tbody tr', { hasText: silence.id }).waitFor();
      // The Expire column's heading, read by a screen reader only, stood where its column is, 200 pixels past the
      // edge: out of the box the table scrolls in, it made the whole page scroll sideways.
      expect(await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBe(0);
      expect(await p.locator('#silences .table-scroll').evaluate((b) => b.scrollWidth > b.clientWidth)).toBe(true);
    } finally {
      expect((await fetch(`${svc.httpUrl}/api/v1/silences/${silence.id}`, { method: 'DELETE' })).status).toBeLessThan(300);
    }
  });

  it('lists the silences in force after a reload, and expires one from the page', async () => {
    // Made earlier, through the API: the page has no form result to expire it from.
    const created = await fetch(`${svc.httpUrl}/api/v1/silences`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ matchers: [{ name: 'hook_name', value: 'PostToolUse:.*', isRegex: true }], endsAt: new Date(Date.now() + 3_600_000).toISOString(), createdBy: 'release captain', comment: 'deploy window' }),
    });
    expect(created.status).toBe(201);
    const { silence } = await created.json() as { silence: Silence };
    const { page: p, dialogs } = await page();
    // The page lists the silences in force and to come: it asks for those only, not every expired one kept.
    const asked = p.waitForRequest((req) => new URL(req.url()).pathname === '/api/v1/silences' && req.method() === 'GET');
    await p.goto(`${svc.httpUrl}/alerts?refresh=1s`);
    await waitLoaded(p);
    expect(new URL((await asked).url()).searchParams.get('state')).toBe('active,pending');
    const row = p.locator('#silences table.silences tbody tr', { hasText: silence.id });
    await row.waitFor();
    expect(await row.textContent()).toContain('hook_name=~"PostToolUse:.*"');
    expect(await row.textContent()).toContain('release captain');
    expect(await row.textContent()).toContain('deploy window');
    await row.locator('button', { hasText: 'Expire' }).click();
    await eventually('the silence expired', async () => {
      const list = (await getJson<{ silences: Silence[] }>(svc.httpUrl, '/api/v1/silences')).body.silences;
      return list.find((s) => s.id === silence.id && s.state === 'expired');
    });
    // Expired silences mute nothing: the next refresh leaves it out.
    await p.locator('#silences table.silences tbody tr', { hasText: silence.id }).waitFor({ state: 'detached' });
    // Its row gone, the focus stays in the list of silences (the list gone with the last one, on the page's
    // content), not back at the start of the document.
    const focused = (): Promise<string> => p.evaluate(() => {
      const el = document.activeElement;
      return el?.closest('#silences') ? `#silences ${el.getAttribute('aria-label') ?? el.id}` : el?.id || (el?.tagName ?? '');
    });
    const listGone = await p.evaluate(() => document.getElementById('silences')?.hidden === true);
    expect(await focused()).toMatch(listGone ? /^main$/ : /^#silences (Expire silence |silences$)/);
    expect(dialogs).toEqual([]);
  });

  it('keeps the state filter in the URL', async () => {
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/alerts`);
    await waitLoaded(p);
    await p.selectOption('#alert-state', 'resolved');
    await waitLoaded(p, 1);
    await p.waitForURL(/state=resolved/);
    await p.reload();
    await waitLoaded(p);
    expect(await p.inputValue('#alert-state')).toBe('resolved');
    expect(await p.$$('section.alert-group[data-state="firing"]')).toHaveLength(0);
  });

  it('shows all states, and says why, for a state in the link that is not one', async () => {
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/alerts?state=Firing`);
    await waitLoaded(p);
    expect(((await p.textContent('#url-ignored')) ?? '').replace(/[\u2068\u2069]/g, '')).toBe('state=Firing in the link is not a state (firing, pending, resolved): it shows all states.');
    expect(await p.inputValue('#alert-state')).toBe('');
    expect(await p.locator('section.alert-group[data-state="firing"] article.alert').count()).toBeGreaterThan(0);
    expect(await p.locator('#alerts-list').textContent()).not.toContain('No Firing alerts');
    // A state picked replaces it: the note goes.
    await p.selectOption('#alert-state', 'firing');
    await p.waitForURL(/state=firing/);
    await waitLoaded(p, 2);
    expect(await p.locator('#url-ignored').isVisible()).toBe(false);
  });

  it('says alerting is not available when the alerts API is missing', async () => {
    const app = express();
    app.get('/api/v1/dimensions', (_req, res) => void res.json({ dimensions: ['service.version', 'user.id'] }));
    app.use(createDashboardRouter());
    app.use('/api', (_req, res) => void res.status(404).json({ error: { code: 'not_found', message: 'no such API route' } }));
    const server = createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { page: p } = await page({ allow: /404/ });
      await p.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/alerts`);
      await p.waitForSelector('#empty-state');
      expect(await p.textContent('#empty-state')).toContain('Alerting is not available');
      expect(await p.isHidden('#error-banner')).toBe(true);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('draws the hook\'s alert timeline on its cliff chart', async () => {
    const alert = await eventually('a firing persisted alert', async () => {
      const r = (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body;
      return r.alerts.find((a) => a.state === 'firing' && a.rule === 'persisted' && a.labels['hook_name'] === 'SessionStart:startup');
    });
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/hooks/${alert.hookId}`);
    await waitLoaded(p);
    const rows = await p.$$eval('#hook-alerts tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    expect(rows.some((r) => r[0] === 'persisted' && r[1] === 'firing')).toBe(true);
    expect(await p.getAttribute('#chart-cliff', 'data-bands')).toContain('persisted firing');
    expect((await chartData(p, 'chart-cliff')).labels.length).toBeGreaterThan(0);
  });

  it('shows a headroom alert superseded by persisted as superseded on the hook page its links open, never as resolved', async () => {
    const hookName = 'PreCompact:manual';
    const post = async (stdout: number, persisted: number, sessionId: string): Promise<void> => {
      const body = hookRequest([{ hookEvent: 'PreCompact', hookName, sessionId, timeMs: NOW - 60_000, sizes: { stdout, additionalContext: 0, persisted } }]);
      expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
    };
    const ofHook = async (): Promise<AlertSummary[]> => (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body.alerts.filter((a) => a.labels['hook_name'] === hookName);
    await post(9_000, 0, 'session-near');
    await eventually('a firing headroom alert', async () => (await ofHook()).find((a) => a.rule === 'headroom' && a.state === 'firing'));
    await post(10_600, 1, 'session-over');
    const headroom = await eventually('the headroom alert superseded', async () => (await ofHook()).find((a) => a.rule === 'headroom' && a.state === 'resolved'));
    expect(headroom.annotations['superseded_by']).toBe('persisted');
    const { page: p } = await page();
    // Opened as a notification's link opens it: the hook over the time the alert counted.
    await p.goto(`${svc.httpUrl}/hooks/${headroom.hookId}?${new URLSearchParams({ range: 'custom', ...alertRange(headroom, NOW) }).toString()}`);
    await waitLoaded(p);
    const row = p.locator('#hook-alerts tbody tr', { hasText: 'headroom' });
    expect(await row.locator('td').nth(1).textContent()).toBe('superseded');
    expect(await row.locator('.state-superseded').count()).toBe(1);
    expect(await p.locator('#hook-alerts .state-resolved').count()).toBe(0);
    expect(await p.getAttribute('#chart-cliff', 'data-bands')).toContain('headroom superseded');
  });

  it('gives the figures of an alert on a partly measured hook as bounds, as its summary does: never the measured ones bare', async () => {
    const hookName = 'PostToolUse:half-measured';
    // One execution measured at 8,550 characters, one from a client that sends no sizes.
    const body = hookRequest([
      { hookEvent: 'PostToolUse', hookName, sessionId: 'new-client', timeMs: NOW - 60_000, sizes: { stdout: 8_550, additionalContext: 0, persisted: 0 } },
      { hookEvent: 'PostToolUse', hookName, sessionId: 'old-client', timeMs: NOW - 60_000, version: '2.1.250' },
    ]);
    expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
    const alert = await eventually('a firing headroom alert', async () => (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body.alerts.find((a) => a.rule === 'headroom' && a.state === 'firing' && a.labels['hook_name'] === hookName));
    expect(alert.annotations['summary']).toMatch(/is at least 8,550 characters, at most 1,450 below the 10,000-character cap/);
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/alerts`);
    await waitLoaded(p);
    const annotation = async (name: string): Promise<[string | null, string | null]> => {
      const dd = p.locator(`article[data-alert-id="${alert.id}"] dl.labels dt:text-is("${name}") + dd`);
      return [await dd.textContent(), await dd.getAttribute('title')];
    };
    expect(await annotation('largest_output')).toEqual(['at least 8,550 chars', '8550']);
    expect(await annotation('headroom')).toEqual(['at most 1,450 chars below the cap', '1450']);
    expect(await annotation('executions_without_sizes')).toEqual(['1', null]);
  });

  it('gives no count of persisted outputs a client did not report, on the card or in the notification, never 0', async () => {
    const hookName = 'Stop:unreported-count';
    // Sizes, but no num_outputs_persisted: the output is known over the cap by its measured size only.
    const body = hookRequest([{ hookEvent: 'Stop', hookName, timeMs: NOW - 60_000, sizes: { stdout: 11_060, additionalContext: 11_000 } }]);
    expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
    const alert = await eventually('a firing persisted alert', async () => (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body.alerts.find((a) => a.rule === 'persisted' && a.state === 'firing' && a.labels['hook_name'] === hookName));
    expect(alert.annotations['summary']).toMatch(/^Stop:unreported-count: 1 execution in the last 1h with an output over the 10,000-character cap, .*\(measured size: this client does not report num_outputs_persisted\)\.$/);
    expect(alert.annotations['outputs_persisted']).toBeUndefined();
    type Webhook = { alerts: { labels: Record<string, string>; annotations: Record<string, string> }[] };
    const sent = await eventually('its notification', async () => (received as Webhook[]).flatMap((b) => b.alerts).find((a) => a.labels['hook_name'] === hookName));
    expect(sent.annotations['outputs_persisted']).toBeUndefined();
    expect(sent.annotations['executions']).toBe('1');
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/alerts`);
    await waitLoaded(p);
    const card = p.locator(`article[data-alert-id="${alert.id}"]`);
    expect(await card.locator('dl.labels dt:text-is("executions") + dd').textContent()).toBe('1');
    expect(await card.locator('dl.labels dt:text-is("outputs_persisted")').count()).toBe(0);
  });

  it('gives a partly measured hook\'s headroom past the cap as the hook page does: "at least 600 chars over the cap"', async () => {
    const hookName = 'PreToolUse:summed-over';
    // Two hooks' outputs summed to 10,600 with nothing persisted, beside an execution from a client that sends no sizes.
    const body = hookRequest([
      { hookEvent: 'PreToolUse', hookName, sessionId: 'new-client', timeMs: NOW - 60_000, numHooks: 2, sizes: { stdout: 10_600, additionalContext: 0, persisted: 0 } },
      { hookEvent: 'PreToolUse', hookName, sessionId: 'old-client', timeMs: NOW - 60_000, version: '2.1.250' },
    ]);
    expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
    const alert = await eventually('a firing headroom alert', async () => (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body.alerts.find((a) => a.rule === 'headroom' && a.state === 'firing' && a.labels['hook_name'] === hookName));
    expect(alert.annotations).toMatchObject({ headroom: '-600', executions_without_sizes: '1' });
    expect(alert.annotations['summary']).toContain('at least 600 over the 10,000-character cap');
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/alerts`);
    await waitLoaded(p);
    const dd = p.locator(`article[data-alert-id="${alert.id}"] dl.labels dt:text-is("headroom") + dd`);
    expect([await dd.textContent(), await dd.getAttribute('title')]).toEqual(['at least 600 chars over the cap', '-600']);
  });

  it('tells superseded from resolved, says when nobody is notified, names what a blind alert is about, counts the resolved alerts left out, follows the range, and links a hook over all its alert counted', async () => {
    const now = Date.parse('2026-11-30T08:30:00Z');
    const iso = (ms: number): string => new Date(ms).toISOString();
    const base = { fingerprint: '0123456789abcdef', annotations: {}, firstEventAt: null, lastNotifiedAt: null, deliveries: [], silencedBy: [] as string[] };
    const hook = 'aaaaaaaaaaaaaaaa';
    const alerts: AlertSummary[] = [
      // Raised on an output stamped five hours ago, which has left the rule's window (and its annotations) since.
      {
        ...base, id: '0123456789abcdef-1', rule: 'persisted', state: 'firing', labels: { alertname: 'persisted', hook_name: 'SessionStart:startup', hook_event: 'SessionStart' },
        annotations: { description: 'stamped 2026-11-30T08:00:00Z', largest_output: '14000', event_time: '2026-11-30T08:00:00.000Z' },
        activeAt: iso(now - 600_000), startsAt: iso(now - 600_000), endsAt: null, firstEventAt: iso(now - 5 * 3_600_000), hookId: hook,
      },
      { ...base, id: '0123456789abcdef-2', rule: 'headroom', state: 'resolved', labels: { alertname: 'headroom', hook_name: 'SessionStart:startup', hook_event: 'SessionStart' }, activeAt: iso(now - 3_600_000), startsAt: iso(now - 3_000_000), endsAt: iso(now - 600_000), hookId: hook },
      { ...base, id: '0123456789abcdef-3', rule: 'blind', state: 'firing', labels: { alertname: 'blind', service_name: 'claude-code', service_version: '2.1.250' }, activeAt: iso(now - 900_000), startsAt: iso(now - 900_000), endsAt: null, hookId: null },
      { ...base, id: '0123456789abcdef-4', rule: 'growth', state: 'resolved', labels: { alertname: 'growth', hook_name: 'Stop', hook_event: 'Stop' }, activeAt: iso(now - 20 * 86_400_000), startsAt: iso(now - 20 * 86_400_000), endsAt: iso(now - 19 * 86_400_000), hookId: 'bbbbbbbbbbbbbbbb' },
    ];
    const app = express();
    app.get('/api/v1/dimensions', (_req, res) => void res.json({ dimensions: ['service.version', 'user.id'] }));
    app.get('/api/v1/alerts', (_req, res) => void res.json({ alerts, resolvedOmitted: 1234, receivers: [], now: iso(now) } satisfies AlertsResponse));
    app.get('/api/v1/silences', (_req, res) => void res.json({ silences: [] as Silence[] }));
    app.get('/api/v1/cluster', (_req, res) => void res.json({ backend: 'sqlite', self: 'test', leader: null, leaseTtlSeconds: null, replicas: [] } satisfies ClusterResponse));
    app.use(createDashboardRouter());
    const server = createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      // A reader in India: the page's times are theirs.
      const { page: p } = await page({ timezoneId: 'Asia/Kolkata' });
      await p.goto(`${base}/alerts`);
      await waitLoaded(p);
      // Sizes and times read as everywhere else on the dashboard; the exact value is kept in the title to copy.
      const annotation = (name: string) => p.locator(`article[data-alert-id="0123456789abcdef-1"] dl.labels dt:text-is("${name}") + dd`);
      expect([await annotation('largest_output').textContent(), await annotation('largest_output').getAttribute('title')]).toEqual(['14,000 chars', '14000']);
      expect([await annotation('event_time').textContent(), await annotation('event_time').getAttribute('title')]).toEqual(['30/11/2026, 13:30', '2026-11-30T08:00:00.000Z']);
      expect([await annotation('description').textContent(), await annotation('description').getAttribute('title')]).toEqual(['stamped 2026-11-30T08:00:00Z', null]);
      // The persisted alert's hook opens from an hour before that first output.
      const link = new URL(await p.locator('article[data-alert-id="0123456789abcdef-1"] a.hook-link').getAttribute('href') ?? '', base);
      expect(link.pathname).toBe(`/hooks/${hook}`);
      expect(Date.parse(link.searchParams.get('from') ?? '')).toBeLessThanOrEqual(now - 6 * 3_600_000);
      const headroom = p.locator('article[data-alert-id="0123456789abcdef-2"]');
      expect(await headroom.getAttribute('data-state')).toBe('superseded');
      expect(await headroom.locator('.alert-head .status').textContent()).toBe('superseded');
      expect(await headroom.locator('.state-resolved').count()).toBe(0);
      expect(await headroom.textContent()).toContain('superseded by persisted: now over the cap');
      // The API lists the newest resolved alerts only: the rest are counted under the resolved list, after its cards.
      const more = p.locator('section.alert-group[data-state="resolved"] > :last-child');
      expect([await more.getAttribute('id'), await more.textContent()]).toEqual(['alerts-resolved-more', '…and 1,234 older resolved alerts not shown']);
      expect(await p.locator('section.alert-group[data-state="firing"] .hint').count()).toBe(0);
      expect(await p.textContent('#no-receivers')).toContain('No receiver is configured');
      expect(await p.textContent('#alerts-list')).not.toContain('not notified yet');
      const blind = p.locator('article[data-alert-id="0123456789abcdef-3"]');
      expect(await blind.locator('.alert-head').textContent()).toContain('blind · claude-code 2.1.250 clients');
      expect(await blind.textContent()).not.toContain('this alert');
      expect(await blind.locator('details.silence > summary').textContent()).toBe('Silence these clients');
      // The range picker applies: a growth alert from 20 days ago shows in the last 30 days only.
      expect(await p.locator('article[data-alert-id="0123456789abcdef-4"]').count()).toBe(0);
      expect(await p.textContent('#alerts-range-note')).toContain('1 older alert outside the range is not shown');
      await p.click('button[data-range="30d"]');
      await waitLoaded(p);
      expect(await p.locator('article[data-alert-id="0123456789abcdef-4"]').count()).toBe(1);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('lists the most severe alerts first, critical, warning, info, the newest first within a severity, as the API lists them newest first', async () => {
    const now = Date.parse('2026-11-30T08:30:00Z');
    const iso = (ms: number): string => new Date(ms).toISOString();
    const base = { fingerprint: '0123456789abcdef', annotations: {}, firstEventAt: null, lastNotifiedAt: null, deliveries: [], silencedBy: [] as string[], endsAt: null, hookId: null };
    const alert = (n: number, rule: string, severity: string | null, state: AlertSummary['state'], agoMs: number): AlertSummary => ({
      ...base, id: `0123456789abcdef-${n}`, rule, state, labels: { alertname: rule, hook_name: `Stop:${n}`, hook_event: 'Stop', ...(severity ? { severity } : {}) },
      activeAt: iso(now - agoMs - 60_000), startsAt: state === 'pending' ? null : iso(now - agoMs),
    });
    // The API's order: firing, then pending, the newest first in each.
    const alerts: AlertSummary[] = [
      alert(1, 'headroom', 'warning', 'firing', 60_000),
      alert(2, 'custom', 'info', 'firing', 120_000),
      alert(3, 'persisted', 'critical', 'firing', 600_000),
      alert(4, 'custom', null, 'firing', 700_000),
      alert(5, 'growth', 'warning', 'firing', 900_000),
      alert(6, 'persisted', 'critical', 'firing', 1_200_000),
      alert(7, 'headroom', 'warning', 'pending', 60_000),
      alert(8, 'persisted', 'critical', 'pending', 300_000),
    ];
    const app = express();
    app.get('/api/v1/dimensions', (_req, res) => void res.json({ dimensions: [] }));
    app.get('/api/v1/alerts', (_req, res) => void res.json({ alerts, resolvedOmitted: 0, receivers: ['team-webhook'], now: iso(now) } satisfies AlertsResponse));
    app.get('/api/v1/silences', (_req, res) => void res.json({ silences: [] as Silence[] }));
    app.get('/api/v1/cluster', (_req, res) => void res.json({ backend: 'sqlite', self: 'test', leader: null, leaseTtlSeconds: null, replicas: [] } satisfies ClusterResponse));
    app.use(createDashboardRouter());
    const server = createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { page: p } = await page();
      await p.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/alerts`);
      await waitLoaded(p);
      const order = (state: string): Promise<(string | null)[]> => p.locator(`section.alert-group[data-state="${state}"] article[data-alert-id]`).evaluateAll((cards) => cards.map((c) => c.getAttribute('data-alert-id')?.replace(/^.*-/, '') ?? null));
      // An alert of a severity the page does not know (or of none) comes after info, the newest first among them.
      expect(await order('firing')).toEqual(['3', '6', '1', '5', '2', '4']);
      expect(await order('pending')).toEqual(['8', '7']);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('shows a quiet-hook alert that ended because its hook\'s data left retention as ended, never as a green resolved', async () => {
    const now = Date.parse('2026-11-30T08:30:00Z');
    const iso = (ms: number): string => new Date(ms).toISOString();
    const base = { fingerprint: '0123456789abcdef', firstEventAt: null, lastNotifiedAt: iso(now - 600_000), silencedBy: [] as string[] };
    const quiet = { rule: 'silence', state: 'resolved' as const, activeAt: iso(now - 3_600_000), startsAt: iso(now - 3_600_000), endsAt: iso(now - 600_000) };
    const alerts: AlertSummary[] = [
      {
        ...base, ...quiet, id: '0123456789abcdef-1', labels: { alertname: 'silence', hook_name: 'Stop:gone', hook_event: 'Stop' }, hookId: 'aaaaaaaaaaaaaaaa',
        annotations: { summary: 'Stop:gone: the hook\'s data left retention with no execution since 2025-10-30T08:00:00Z: this alert ends because hookwatch no longer keeps the hook, not because it was heard again.', last_seen: '2025-10-30T08:00:00Z', data_expired: 'true' },
        deliveries: [{ receiver: 'ops', status: 'resolved', outcome: 'delivered', at: iso(now - 600_000), httpStatus: 200 }],
      },
      // Heard again: resolved, as before.
      {
        ...base, ...quiet, id: '0123456789abcdef-2', labels: { alertname: 'silence', hook_name: 'Stop:back', hook_event: 'Stop' }, hookId: 'bbbbbbbbbbbbbbbb',
        annotations: { summary: 'Stop:back: executions again.' },
        deliveries: [{ receiver: 'ops', status: 'resolved', outcome: 'delivered', at: iso(now - 600_000), httpStatus: 200 }],
      },
    ];
    const app = express();
    app.get('/api/v1/dimensions', (_req, res) => void res.json({ dimensions: [] }));
    // One hook's alerts when asked for (hook=), as hookwatch answers.
    app.get('/api/v1/alerts', (req, res) => void res.json({ alerts: alerts.filter((a) => req.query['hook'] === undefined || a.hookId === req.query['hook']), receivers: ['ops'], now: iso(now) } satisfies AlertsResponse));
    app.get('/api/v1/silences', (_req, res) => void res.json({ silences: [] as Silence[] }));
    app.get('/api/v1/cluster', (_req, res) => void res.json({ backend: 'sqlite', self: 'test', leader: null, leaseTtlSeconds: null, replicas: [] } satisfies ClusterResponse));
    app.use(createDashboardRouter());
    const server = createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { page: p } = await page({ timezoneId: 'UTC' });
      await p.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/alerts`);
      await waitLoaded(p);
      const expired = p.locator('article[data-alert-id="0123456789abcdef-1"]');
      const back = p.locator('article[data-alert-id="0123456789abcdef-2"]');
      expect(await expired.getAttribute('data-state')).toBe('data-expired');
      expect(await expired.locator('.alert-head .status').textContent()).toBe('ended');
      expect(await expired.locator('.state-resolved').count()).toBe(0);
      expect(await expired.locator('.alert-head .chip').textContent()).toBe('ended: hook data expired, not heard again');
      expect(await expired.locator('p.muted.small').textContent()).toBe('active since 30/11/2026, 07:30 · firing since 30/11/2026, 07:30 · ended (hook data expired) 30/11/2026, 08:20 · ops notified of its end 30/11/2026, 08:20');
      // Its hook is gone, and the range it would open held no execution (the alert ended on the hook being quiet):
      // the name links nowhere, where a link would open "No such hook"; one heard again links to its hook.
      expect(await expired.locator('.alert-head a').count()).toBe(0);
      const gone = expired.locator('.alert-head .alert-subject');
      expect([await gone.textContent(), await gone.getAttribute('title')]).toEqual(['Stop:gone', 'hookwatch no longer keeps this hook: its data left retention']);
      expect(await back.locator('.alert-head a.hook-link').getAttribute('href')).toMatch(/^\/hooks\/bbbbbbbbbbbbbbbb\?/);
      // Nothing to silence of a hook hookwatch no longer keeps: no silence form; one heard again keeps its own.
      expect(await expired.locator('details.silence').isVisible()).toBe(false);
      expect(await expired.innerText()).not.toContain('Silence');
      expect(await back.locator('details.silence > summary').textContent()).toBe('Silence this hook');
      expect(await back.locator('details.silence').isVisible()).toBe(true);
      // The neutral colour of a superseded alert, not the green of a recovery.
      const background = async (card: typeof back): Promise<string> => card.locator('.alert-head .status').evaluate((e) => getComputedStyle(e).backgroundColor);
      expect(await back.locator('.alert-head .status').textContent()).toBe('resolved');
      expect(await background(back)).toBe('rgb(27, 110, 58)');
      expect(await background(expired)).toBe('rgb(91, 102, 112)');
      // Both stay in the resolved list.
      expect(await p.locator('section.alert-group[data-state="resolved"] article.alert').count()).toBe(2);
      // Its notifications' link (Slack's "Open in hookwatch", generatorURL) opens it on this page, filtered to its hook.
      const link = new URL(dashboardLink({ externalUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }, alerts[0] as AlertSummary, now));
      await p.goto(link.href);
      await waitLoaded(p);
      expect(await p.locator('article.alert').evaluateAll((cards) => cards.map((c) => [c.getAttribute('data-alert-id'), c.getAttribute('data-state')]))).toEqual([['0123456789abcdef-1', 'data-expired']]);
      expect(await p.textContent('#alert-hook-filter .hook-filter-name')).toBe('Stop:gone');
      expect(await p.textContent('#app')).not.toContain('No such hook');
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
