/**
 * A breakdown row opens its hook filtered by the row's value, "(not set)" included, in headless Chromium against a
 * real hookwatch (real sockets, real SQLite): the filter in the URL and the API call, the chip naming it, the
 * figures the row's, and the chip's removal back to every value.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { postOtlp } from '../../collector/test/helpers.ts';
import { NOW, useFixture } from './experience-fixture.ts';
import { waitLoaded } from './harness.ts';
import { hookRequest, type HookExecution } from './otlp-json.ts';

const fx = useFixture();
const HOOK = 'PreToolUse:by-team';
/** A hook whose every execution runs two commands: more commands report success than there are executions. */
const PAIR = 'SessionStart:pair';

beforeAll(async () => {
  const runs = (n: number, team: string | undefined, sizes: HookExecution['sizes']): HookExecution[] =>
    Array.from({ length: n }, (_v, i) => ({ hookEvent: 'PreToolUse', hookName: HOOK, timeMs: NOW - 15 * 60_000 + i * 1000, sizes, ...(team ? { team } : {}) }));
  // Three teams' worth of executions, told apart by their figures: the unset ones over the cap. One sequence for
  // all: a record sent again (same session and sequence) is stored once.
  const seq = { n: 0 };
  for (const batch of [
    runs(3, 'platform', { stdout: 500, additionalContext: 200, persisted: 0 }),
    runs(2, 'web', { stdout: 800, additionalContext: 0, persisted: 0 }),
    runs(4, undefined, { stdout: 12_000, additionalContext: 0, persisted: 1 }),
  ]) {
    expect((await postOtlp(fx.svc().otlpHttpUrl, '/v1/logs', hookRequest(batch, seq), { 'content-type': 'application/json' })).status).toBe(200);
  }
  const pair: HookExecution[] = Array.from({ length: 3 }, (_v, i) => ({ hookEvent: 'SessionStart', hookName: PAIR, timeMs: NOW - 10 * 60_000 + i * 1000, numHooks: 2, sizes: { stdout: 400, additionalContext: 0, persisted: 0 } }));
  expect((await postOtlp(fx.svc().otlpHttpUrl, '/v1/logs', hookRequest(pair, seq), { 'content-type': 'application/json' })).status).toBe(200);
});

/** The breakdown by team's rows: the value shown, whether it is a link, and its executions, persisted and largest cells. */
function teamRows(p: Page): Promise<{ value: string; link: boolean; figures: string[] }[]> {
  return p.$$eval('#by-dimension tbody tr', (trs) => trs.map((tr) => ({
    value: tr.querySelector('th')?.textContent ?? '',
    link: tr.querySelector('th a') !== null,
    figures: [3, 5, 6].map((n) => tr.querySelector(`td:nth-child(${n})`)?.textContent ?? ''),
  })));
}

/** The key figures the breakdown's columns hold: executions, outputs persisted, largest output. */
async function keyFigures(p: Page): Promise<string[]> {
  return Promise.all(['executions', 'persisted', 'largest'].map(async (k) => (await p.textContent(`[data-kpi="${k}"] .kpi-value`)) ?? ''));
}

describe('a breakdown row', () => {
  it('opens the hook filtered by its value, "(not set)" by the empty value, with the row\'s figures, and the chip removes it', async () => {
    const id = await fx.hookId(HOOK);
    const { page: p } = await fx.page({ width: 1440 });
    await p.goto(`${fx.svc().httpUrl}/hooks/${id}?range=7d&by=team&refresh=off`);
    await waitLoaded(p);
    await p.waitForSelector('#by-dimension th a');
    const rows = await teamRows(p);
    expect(rows.map((r) => [r.value, r.link, r.figures[0]])).toEqual([['(not set)', true, '4'], ['platform', true, '3'], ['web', true, '2']]);
    expect(await keyFigures(p)).toEqual(['9', '4', '12,000 chars']);

    // A value: the URL, the API and the chip carry it; range and breakdown stay; the figures are the row's.
    const platform = p.waitForResponse((r) => r.url().includes(`/api/v1/hooks/${id}?`) && new URL(r.url()).searchParams.get('team') === 'platform');
    await p.locator('#by-dimension th a', { hasText: /^platform$/ }).click();
    await platform;
    await waitLoaded(p, 2);
    const url = new URL(p.url());
    expect([url.pathname, url.searchParams.get('f.team'), url.searchParams.get('range'), url.searchParams.get('by')]).toEqual([`/hooks/${id}`, 'platform', '7d', 'team']);
    expect(await p.textContent('.chip')).toContain('team = platform');
    expect(await keyFigures(p)).toEqual(rows[1]?.figures);
    // The page is filtered by that value already: its row leads nowhere.
    expect(await teamRows(p)).toEqual([{ ...rows[1], link: false }]);

    // "(not set)": the filter on the empty value, asked of the API as such, named "(not set)", never as nothing.
    await p.goBack();
    await waitLoaded(p, 3);
    await p.waitForSelector('#by-dimension th a');
    const notSet = p.waitForResponse((r) => r.url().includes(`/api/v1/hooks/${id}?`) && new URL(r.url()).searchParams.get('team') === '');
    await p.locator('#by-dimension th a', { hasText: /^\(not set\)$/ }).click();
    await notSet;
    await waitLoaded(p, 4);
    expect(new URL(p.url()).searchParams.get('f.team')).toBe('');
    expect(await p.textContent('.chip')).toMatch(/^team = \(not set\)/);
    expect(await keyFigures(p)).toEqual(rows[0]?.figures);
    expect(await teamRows(p)).toEqual([{ ...rows[0], link: false }]);

    // Removing the chip removes the filter: every value again.
    await p.click('.chip-remove');
    await waitLoaded(p, 5);
    expect(new URL(p.url()).searchParams.has('f.team')).toBe(false);
    expect(await keyFigures(p)).toEqual(['9', '4', '12,000 chars']);
    expect((await teamRows(p)).map((r) => r.value)).toEqual(['(not set)', 'platform', 'web']);
  });

  it('"(not set)" can be asked for from the header\'s filter form too', async () => {
    const id = await fx.hookId(HOOK);
    const { page: p } = await fx.page({ width: 1440 });
    await p.goto(`${fx.svc().httpUrl}/hooks/${id}?range=7d&by=team&refresh=off`);
    await waitLoaded(p);
    await p.waitForSelector('#filter-dimension option[value="team"]', { state: 'attached' });
    const rows = await teamRows(p);
    await p.selectOption('#filter-dimension', 'team');
    await p.check('#filter-not-set');
    // The value box has nothing to say once "(not set)" is ticked.
    expect(await p.isDisabled('#filter-value')).toBe(true);
    const notSet = p.waitForResponse((r) => r.url().includes(`/api/v1/hooks/${id}?`) && new URL(r.url()).searchParams.get('team') === '');
    await p.click('.filter-form button[type="submit"]');
    await notSet;
    await waitLoaded(p, 2);
    expect(new URL(p.url()).searchParams.get('f.team')).toBe('');
    expect(await p.textContent('.chip')).toMatch(/^team = \(not set\)/);
    expect(await keyFigures(p)).toEqual(rows[0]?.figures);
  });

  it('trims a value typed with a stray space, says why spaces alone add nothing, and quotes a link\'s value that has one', async () => {
    const id = await fx.hookId(HOOK);
    const { page: p } = await fx.page({ width: 1440 });
    await p.goto(`${fx.svc().httpUrl}/hooks/${id}?range=7d&by=team&refresh=off`);
    await waitLoaded(p);
    await p.waitForSelector('#filter-dimension option[value="team"]', { state: 'attached' });
    const platform = (await teamRows(p)).find((r) => r.value === 'platform');
    await p.selectOption('#filter-dimension', 'team');
    // Spaces alone: nothing added, and the form says why.
    await p.fill('#filter-value', '   ');
    await p.click('.filter-form button[type="submit"]');
    expect(await p.textContent('#filter-problem')).toBe('Spaces alone are no value: type one, or tick (not set) for the events without one.');
    expect(new URL(p.url()).searchParams.has('f.team')).toBe(false);
    expect(await p.$$('.chip')).toHaveLength(0);
    // A value pasted with a space after it filters by the value.
    await p.fill('#filter-value', 'platform ');
    await p.click('.filter-form button[type="submit"]');
    await waitLoaded(p, 2);
    expect(new URL(p.url()).searchParams.get('f.team')).toBe('platform');
    expect(await p.textContent('.chip')).toMatch(/^team = platform×$/);
    expect(await keyFigures(p)).toEqual(platform?.figures);
    // A link whose value has the space: filtered as the link asks, and the chip shows the space.
    await p.goto(`${fx.svc().httpUrl}/hooks/${id}?range=7d&by=team&refresh=off&f.team=platform%20`);
    await waitLoaded(p);
    expect(await p.textContent('.chip')).toMatch(/^team = "platform "×$/);
  });

  it('names the count of commands that reported success as the overview does, so 6 beside 3 executions reads as no error', async () => {
    const id = await fx.hookId(PAIR);
    const { page: p } = await fx.page({ width: 1440 });
    await p.goto(`${fx.svc().httpUrl}/hooks/${id}?range=24h&by=team&refresh=off`);
    await waitLoaded(p);
    await p.waitForSelector('#by-dimension tbody tr');
    const headers = (sel: string): Promise<string[]> => p.$$eval(`${sel} thead th`, (ths) => ths.map((th) => th.textContent ?? ''));
    const breakdown = await headers('#by-dimension');
    expect(breakdown.slice(2, 4)).toEqual(['Executions', 'Commands OK']);
    expect(await p.$$eval('#by-dimension tbody tr td', (tds) => tds.slice(1, 3).map((td) => td.textContent))).toEqual(['3', '6']);
    const perBucket = await p.$$eval('table', (tables) => tables.filter((t) => t.caption?.textContent === 'Success and persisted outputs per bucket')
      .map((t) => [...t.querySelectorAll('thead th')].map((th) => th.textContent ?? '')));
    expect(perBucket).toHaveLength(1);
    expect(perBucket[0]?.slice(1, 3)).toEqual(['Executions', 'Commands OK']);
  });
});
