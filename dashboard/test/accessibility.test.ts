/**
 * The dashboard for every engineer on a team, keyboard-only and screen-reader users included, in headless
 * Chromium against real hookwatch services (one fed the captured Claude Code requests, with alerts and a silence;
 * one with no data yet): axe-core finds no WCAG 2.1 A/AA violation on any view, with data and empty, in either
 * theme; Tab walks the controls in order with a focus ring that stands out; a refresh leaves the focus where it was.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page, Route } from 'playwright-core';
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

/** How many times `p` has drawn its content (body[data-loaded]). */
async function loads(p: Page): Promise<number> {
  return Number(await p.evaluate(() => document.body.dataset['loaded']));
}

/** The control that has the focus in `p`: the alert whose card holds it, if any, its tag, and its label or text. */
function focusedControl(p: Page): Promise<string> {
  return p.evaluate(() => {
    const el = document.activeElement as HTMLElement;
    return `${el.closest('[data-alert-id]')?.getAttribute('data-alert-id') ?? ''} ${el.tagName} ${el.getAttribute('aria-label') ?? el.textContent ?? ''}`;
  });
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

/**
 * What is wrong with the charts' text alternatives: each canvas is an image named by its title and described by
 * its summary, which a screen reader reads once, not as both name and description; a chart that takes keys is
 * an application in the Tab order (its keys reach it, not browse mode), described by its summary and its keys.
 */
async function chartNames(p: Page): Promise<string[]> {
  return p.evaluate(() => [...document.querySelectorAll('canvas')].flatMap((c) => {
    const name = c.getAttribute('aria-label') ?? '';
    const described = (c.getAttribute('aria-describedby') ?? '').split(' ').map((id) => document.getElementById(id)?.textContent ?? '');
    const description = described.every((d) => d !== '') ? described.join(' ') : '';
    const title = c.closest('section')?.querySelector('.chart-title')?.textContent ?? '';
    const role = c.tabIndex === 0 && described.length === 2 && /Enter/.test(described[1] ?? '') ? 'application' : 'img';
    if (c.getAttribute('role') !== role || name === '' || description === '') return [`#${c.id}: not an ${role}, no name or no description`];
    return name === title && description !== name ? [] : [`#${c.id}: named "${name.slice(0, 60)}", described "${description.slice(0, 60)}"`];
  }));
}

/**
 * The control with the focus, as "tag#id.class: text", and what is wrong with its focus ring: none drawn, thinner
 * than 2 px, or under 3:1 against what it is drawn on (WCAG 1.4.11).
 */
async function focused(p: Page): Promise<{ name: string; ring: string | null }> {
  return p.evaluate(() => {
    const el = document.activeElement as HTMLElement;
    const rgb = (c: string): number[] | null => {
      const srgb = /^color\(srgb ([\d.]+) ([\d.]+) ([\d.]+)(?: \/ ([\d.]+))?\)$/.exec(c);
      if (srgb) return [Number(srgb[1]) * 255, Number(srgb[2]) * 255, Number(srgb[3]) * 255, srgb[4] === undefined ? 1 : Number(srgb[4])];
      const m = /^rgba?\((\d+), (\d+), (\d+)(?:, ([\d.]+))?\)$/.exec(c);
      return m ? [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])] : null;
    };
    const lum = (c: number[]): number => {
      const [r, g, b] = c.slice(0, 3).map((v) => (v / 255 <= 0.03928 ? v / 255 / 12.92 : ((v / 255 + 0.055) / 1.055) ** 2.4)) as [number, number, number];
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    // The ring is drawn outside the control: on the first opaque background of its ancestors.
    let bg: number[] | null = null;
    for (let e = el.parentElement; e && !bg; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c && (c[3] ?? 0) > 0.9) bg = c;
    }
    bg ??= rgb(getComputedStyle(document.documentElement).backgroundColor) ?? [255, 255, 255, 1];
    const s = getComputedStyle(el);
    const ring = rgb(s.outlineColor);
    const [hi, lo] = [lum(ring ?? bg), lum(bg)].sort((a, b) => b - a) as [number, number];
    const ratio = (hi + 0.05) / (lo + 0.05);
    const name = `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${el.className && typeof el.className === 'string' ? `.${el.className.split(' ')[0]}` : ''}: ${(el.getAttribute('aria-label') ?? el.textContent ?? '').trim().slice(0, 40)}`;
    const problem = s.outlineStyle === 'none' ? 'no focus ring'
      : parseFloat(s.outlineWidth) < 2 ? `a ${s.outlineWidth} ring`
        : ratio < 3 ? `ring ${s.outlineColor} on ${bg.join(',')} is ${ratio.toFixed(2)}:1` : null;
    return { name, ring: problem };
  });
}

/** Presses Tab from the top of the page until the focus leaves it (`most` presses at most), listing each control reached. */
async function tabWalk(p: Page, most: number): Promise<{ name: string; ring: string | null }[]> {
  await p.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  const seen: { name: string; ring: string | null }[] = [];
  for (let i = 0; i < most; i++) {
    await p.keyboard.press('Tab');
    if (await p.evaluate(() => document.activeElement === null || document.activeElement === document.body)) break;
    seen.push(await focused(p));
  }
  return seen;
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
        found.push(...(await axeViolations(p)).map((v) => `${view} (${scheme}): ${v}`), ...(await chartNames(p)).map((v) => `${view} (${scheme}): ${v}`), ...await closePages(open));
      }
    }
    expect(found).toEqual([]);
  }, 120_000);

  it('walks every control with Tab, in order, each with a focus ring that stands out, in light and dark', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      const p = await opened(`${svc.httpUrl}/?refresh=off`, scheme);
      const walk = await tabWalk(p, 80);
      expect(walk[0]?.name).toBe('a.skip: Skip to content');
      const at = (re: RegExp): number => walk.findIndex((w) => re.test(w.name));
      // The header, then the search, the table and its hook links, in the order they read.
      expect(at(/^button\.range-preset: 1h/)).toBeGreaterThan(0);
      expect(at(/^input#hook-search/)).toBeGreaterThan(at(/^button#theme-toggle/));
      // The fleet chart takes keys (its bars and zoom): reached between the header and the search, ringed as any control.
      expect(at(/^canvas#chart-fleet/)).toBeGreaterThan(at(/^button#theme-toggle/));
      expect(at(/^input#hook-search/)).toBeGreaterThan(at(/^canvas#chart-fleet/));
      expect(at(/^a\.hook-link/)).toBeGreaterThan(at(/^input#hook-search/));
      expect(walk.filter((w) => w.ring !== null).map((w) => `${w.name}: ${w.ring}`)).toEqual([]);
      expect(await closePages(open)).toEqual([]);
    }
  }, 60_000);

  it('leaves the focus on the control it was on when a refresh draws the page anew', async () => {
    const p = await opened(`${svc.httpUrl}/alerts?refresh=1s`, 'light');
    // A silence's Expire button, then the hook link on an alert's card: both are drawn anew at each refresh.
    for (const selector of ['#silences button[aria-label^="Expire silence"]', 'article[data-alert-id] a.hook-link']) {
      await p.focus(selector);
      const before = await focusedControl(p);
      await waitLoaded(p, (await loads(p)) + 2);
      expect(await focusedControl(p)).toBe(before);
    }
    expect(await closePages(open)).toEqual([]);
  });

  it('leaves the focus on a control of an alert\'s card that a refresh puts back in the list rather than draws anew', async () => {
    const p = await opened(`${svc.httpUrl}/alerts?refresh=1s`, 'light');
    const card = 'article[data-alert-id]:first-of-type';
    // Tabbed to while a refresh waits for hookwatch's answer: the card is put back in the list as the answer comes.
    const held: Route[] = [];
    const api = (u: URL): boolean => u.pathname.startsWith('/api/');
    await p.route(api, (r) => void held.push(r));
    await p.waitForSelector('body[aria-busy="true"]', { state: 'attached' });
    const loaded = await loads(p);
    await p.focus(`${card} details.attempts-details > summary`);
    const before = await focusedControl(p);
    await p.unroute(api);
    for (const r of held) await r.continue().catch(() => undefined);
    await waitLoaded(p, loaded + 1);
    expect(await focusedControl(p)).toBe(before);
    // And when it had the focus as the refresh went out.
    await waitLoaded(p, (await loads(p)) + 2);
    expect(await focusedControl(p)).toBe(before);
    // A reason half typed into the silence form: the rest of it goes on into the field, whatever refreshed meanwhile.
    await p.click(`${card} details.silence > summary`);
    await p.focus(`${card} input[aria-label="Reason"]`);
    await p.keyboard.type('deploy ');
    await waitLoaded(p, (await loads(p)) + 2);
    await p.keyboard.type('window');
    expect(await p.inputValue(`${card} input[aria-label="Reason"]`)).toBe('deploy window');
    expect(await closePages(open)).toEqual([]);
  });

  it('leaves the focus on the range control used, a preset or the custom range, as the header draws them anew', async () => {
    const p = await opened(`${svc.httpUrl}/?refresh=off`, 'light');
    const active = (): Promise<string> => p.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      return `${el.tagName} ${el.textContent ?? ''}`;
    });
    await p.focus('button[data-range="7d"]');
    let loaded = await loads(p);
    await p.keyboard.press('Enter');
    await p.waitForURL(/range=7d/);
    await waitLoaded(p, loaded + 1);
    expect(await active()).toBe('BUTTON 7d');
    // The custom range applied from the keyboard: its form closes with the page drawn anew, the focus on what opens it.
    await p.focus('details.custom > summary');
    await p.keyboard.press('Enter');
    await p.focus('#range-from');
    loaded = await loads(p);
    await p.keyboard.press('Enter');
    await p.waitForURL(/range=custom/);
    await waitLoaded(p, loaded + 1);
    expect(await active()).toBe('SUMMARY Custom');
    expect(await closePages(open)).toEqual([]);
  });

  it('keeps the focus in the part of the page it was in when a refresh cannot draw the control it was on again', async () => {
    const p = await opened(`${svc.httpUrl}/alerts?refresh=1s`, 'light', /status of 503/);
    await p.focus('#silences button[aria-label^="Expire silence"]');
    // The silences fail to load at the next refresh: the button the focus was on is not drawn again.
    await p.route((u) => u.pathname === '/api/v1/silences', (route) => route.fulfill({
      status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'unavailable', message: 'the store is not ready' } }),
    }));
    await waitLoaded(p, (await loads(p)) + 1);
    expect(await p.textContent('#silences')).toContain('Could not load the silences');
    expect(await p.evaluate(() => [document.activeElement?.id, document.activeElement?.getAttribute('tabindex')])).toEqual(['silences', '-1']);
    expect(await closePages(open)).toEqual([]);
  });

  it('says nothing again in a live region when a refresh leaves what it says as it was', async () => {
    const p = await opened(`${svc.httpUrl}/alerts?refresh=1s`, 'light');
    expect(await p.locator('#alerts-notice').textContent()).toContain('No receiver is configured');
    // A screen reader reads out what is added to a live region: count what refreshes put in them.
    await p.evaluate(() => {
      const w = window as unknown as { liveChanges: string[] };
      w.liveChanges = [];
      const seen = new MutationObserver((records) => {
        for (const r of records) w.liveChanges.push((r.target instanceof Element ? r.target : r.target.parentElement)?.closest('[aria-live], [role="status"], [role="alert"]')?.id || 'a live region');
      });
      for (const el of document.querySelectorAll('[aria-live], [role="status"], [role="alert"]')) seen.observe(el, { childList: true, subtree: true, characterData: true });
    });
    await waitLoaded(p, (await loads(p)) + 3);
    expect(await p.evaluate(() => (window as unknown as { liveChanges: string[] }).liveChanges)).toEqual([]);
    expect(await closePages(open)).toEqual([]);
  });
});
