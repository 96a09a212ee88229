/**
 * Claude Code reports an execution's sizes summed over the hook commands it ran (num_hooks): one command's size is
 * exact, two commands' an upper bound of either's. In headless Chromium against a real hookwatch fed real OTLP:
 * the hook page's largest output and the headroom alert's words say "sum" and "upper bound" only of a hook one of
 * whose executions ran more than one command, say the size plainly of one that ran a single command each time, and
 * keep a hook without size data unknown. An execution that did not say how many commands it ran makes up, in the
 * commands run, for one that ran two: the hook's sizes are still sums, and its size bounds no single string from
 * below: neither the page's reading of it nor its status takes it for one string's.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { AlertSummary, AlertsResponse, HooksResponse } from '../../shared/src/api.ts';
import { hookId } from '../../collector/src/hooks/extract.ts';
import { eventually, getJson, postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { closePages, launch, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';
import { hookRequest, type HookExecution } from './otlp-json.ts';

const ONE = 'PostToolUse:one-command';
const TWO = 'SessionStart:two-commands';
const MIXED = 'UserPromptSubmit:mixed';
const BLIND = 'Stop:old-client';
const UNCOUNTED = 'PreToolUse:uncounted';
const UNCOUNTED_OVER = 'SessionStart:uncounted-over';
const UNCOUNTED_UNREPORTED = 'Notification:uncounted-unreported';
const SUMMED = /\bsums?\b|summed|upper bound/;

let browser: Browser;
/** When the first execution ran. */
let t = 0;
let svc: TestService;
const open: WatchedPage[] = [];

beforeAll(async () => {
  browser = await launch();
  svc = await startTestService({ HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0', HOOKWATCH_ALERT_EVALUATION_INTERVAL: '200ms' });
  t = Date.now() - 10 * 60_000;
  const run = (hookEvent: string, hookName: string, numHooks: number | null, stdout: number, i: number): HookExecution => ({ hookEvent, hookName, timeMs: t + i * 1000, numHooks, sizes: { stdout, additionalContext: 0, persisted: 0 } });
  const executions: HookExecution[] = [
    run('PostToolUse', ONE, 1, 9_000, 0), run('PostToolUse', ONE, 1, 8_500, 1),
    run('SessionStart', TWO, 2, 9_000, 2), run('SessionStart', TWO, 2, 8_600, 3),
    // One execution of two commands among single ones: the largest may be a sum.
    run('UserPromptSubmit', MIXED, 1, 9_000, 4), run('UserPromptSubmit', MIXED, 2, 4_000, 5),
    { hookEvent: 'Stop', hookName: BLIND, timeMs: t + 6000, version: '2.1.250' },
    // Two commands, then one execution without num_hooks: two commands run for two executions, the first a sum.
    run('PreToolUse', UNCOUNTED, 2, 9_000, 7), run('PreToolUse', UNCOUNTED, null, 3_000, 8),
    // additionalContext over the cap from an execution without num_hooks, one output persisted, beside one of two commands.
    { hookEvent: 'SessionStart', hookName: UNCOUNTED_OVER, timeMs: t + 9000, numHooks: null, sizes: { stdout: 12_030, additionalContext: 12_000, persisted: 1 } },
    { hookEvent: 'SessionStart', hookName: UNCOUNTED_OVER, timeMs: t + 10_000, numHooks: 2, sizes: { stdout: 4_030, additionalContext: 4_000, persisted: 0 } },
    // The same size, num_outputs_persisted not sent either: nothing proves one string was over the cap.
    { hookEvent: 'Notification', hookName: UNCOUNTED_UNREPORTED, timeMs: t + 11_000, numHooks: null, sizes: { stdout: 12_030, additionalContext: 12_000 } },
  ];
  expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', hookRequest(executions), { 'content-type': 'application/json' })).status).toBe(200);
});

afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

async function page(): Promise<Page> {
  const w = await watchedPage(browser);
  open.push(w);
  return w.page;
}

/** The hook page's largest output: its value and its note ('' for none). */
async function largest(p: Page, hookEvent: string, hookName: string): Promise<[string, string]> {
  await p.goto(`${svc.httpUrl}/hooks/${hookId(hookEvent, hookName)}`);
  await waitLoaded(p);
  return p.evaluate(() => [
    document.querySelector('[data-kpi="largest"] .kpi-value')?.textContent ?? '',
    document.querySelector('[data-kpi="largest"] .kpi-note')?.textContent ?? '',
  ]);
}

describe('summed sizes', () => {
  it('calls the largest output an upper bound only of a hook one of whose executions ran more than one command', async () => {
    const p = await page();
    expect(await largest(p, 'PostToolUse', ONE)).toEqual(['9,000 chars', '']);
    expect(await largest(p, 'SessionStart', TWO)).toEqual(['9,000 chars', 'upper bound: Claude Code reports sums over the hook commands of one execution']);
    expect(await largest(p, 'UserPromptSubmit', MIXED)).toEqual(['9,000 chars', 'upper bound: Claude Code reports sums over the hook commands of one execution']);
    expect(await largest(p, 'PreToolUse', UNCOUNTED)).toEqual(['9,000 chars', 'upper bound: Claude Code reports sums over the hook commands of one execution']);
    // The API counts the executions whose sizes may be sums: both of the uncounted hook's, none of the single one's.
    const { body } = await getJson<HooksResponse>(svc.httpUrl, `/api/v1/hooks?from=${new Date(t - 60_000).toISOString()}&to=${new Date(t + 60_000).toISOString()}`);
    const counts = (name: string) => body.hooks.filter((h) => h.hookName === name).map((h) => [h.executions, h.numHooks, h.sizesMaySumExecutions]);
    expect(counts(UNCOUNTED)).toEqual([[2, 2, 2]]);
    expect(counts(ONE)).toEqual([[2, 2, 0]]);
    expect(counts(MIXED)).toEqual([[2, 3, 1]]);
    // No size data: unknown, never a size, plain or bound.
    expect(await largest(p, 'Stop', BLIND)).toEqual(['unknown', 'no execution in this range sent size data']);
  });

  it('reads no size of an execution without num_hooks as one string\'s, nor as proof that one was over the cap', async () => {
    const { body } = await getJson<HooksResponse>(svc.httpUrl, `/api/v1/hooks?from=${new Date(t - 60_000).toISOString()}&to=${new Date(t + 60_000).toISOString()}`);
    const hook = (name: string) => body.hooks.find((h) => h.hookName === name)!;
    const over = hook(UNCOUNTED_OVER);
    expect([over.executions, over.numHooks, over.sizesMaySumExecutions, over.outputsPersisted]).toEqual([2, 2, 2, 1]);
    // The lower bound is the execution of two commands' alone: ceil(4,000 / 2).
    expect([over.maxChars.additionalContext, over.maxCharsLowerBound.additionalContext]).toEqual([12_000, 2_000]);
    const p = await page();
    expect(await largest(p, 'SessionStart', UNCOUNTED_OVER)).toEqual(['12,030 chars', 'upper bound: Claude Code reports sums over the hook commands of one execution']);
    // The same page's cliff summary calls it a bound too, never one string the model saw ~2,000 characters of.
    const summary = await p.textContent('#chart-curve-summary');
    expect(summary).toMatch(/^Largest output up to 12,030 chars \(summed over the hook's commands, or stdout with the JSON around it\)/);
    expect(summary).not.toMatch(/measured alone|the model saw about/);

    const unreported = hook(UNCOUNTED_UNREPORTED);
    expect([unreported.maxCharsLowerBound.additionalContext, unreported.executionsWithPersisted, unreported.status]).toEqual([null, 0, 'near']);
    expect(await largest(p, 'Notification', UNCOUNTED_UNREPORTED)).toEqual(['12,030 chars', 'upper bound: Claude Code reports sums over the hook commands of one execution']);
  });

  it('says the headroom alert\'s size is a sum over the hooks that ran only when its evidence ran more than one command', async () => {
    const headroom = (name: string) => eventually(`a headroom alert of ${name}`, async () => (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body.alerts.find((a) => a.rule === 'headroom' && a.labels['hook_name'] === name));
    const one = await headroom(ONE);
    const two = await headroom(TWO);
    const mixed = await headroom(MIXED);
    const uncounted = await headroom(UNCOUNTED);
    expect(one.annotations['description']).not.toMatch(SUMMED);
    expect(one.annotations['description']).toMatch(/^Past the cap the model gets a ~2,000-character preview instead\. Each execution ran one hook command, so 9,000 characters is the largest output's size\./);
    expect(two.annotations['description']).toContain('Sizes are sums over the hooks that ran, so this is an upper bound of the largest single output.');
    expect(mixed.annotations['description']).toContain('Sizes are sums over the hooks that ran, so this is an upper bound of the largest single output.');
    expect(uncounted.annotations['description']).toContain('Sizes are sums over the hooks that ran, so this is an upper bound of the largest single output.');

    const p = await page();
    await p.goto(`${svc.httpUrl}/alerts`);
    await waitLoaded(p);
    const card = (a: AlertSummary) => p.locator(`article[data-alert-id="${a.id}"]`).textContent();
    expect(await card(one)).toContain('Each execution ran one hook command, so 9,000 characters is the largest output\'s size.');
    expect(await card(one)).not.toMatch(SUMMED);
    expect(await card(two)).toContain('Sizes are sums over the hooks that ran');
  });
});
