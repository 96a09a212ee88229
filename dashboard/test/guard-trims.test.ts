/**
 * The guard on the hook page, end to end: a real guard trims a 15,000-character additionalContext and reports
 * it to a real hookwatch, Claude Code's own event for the same firing arrives (9,496 delivered, nothing
 * persisted), and headless Chromium shows the guard's figures beside the counters and on the cliff chart, and on
 * the card of the alert the guarded hook raises.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import type { AlertsResponse } from '../../shared/src/api.ts';
import type { GuardTrimsResponse } from '../../shared/src/guard-trims.ts';
import { eventually, getJson, postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { hookId } from '../../collector/src/hooks/extract.ts';
import { chartData, closePages, launch, screenshot, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';
import { hookRequest } from './otlp-json.ts';

const BIN = fileURLToPath(new URL('../../collector/bin/hookwatch.mjs', import.meta.url));
const ID = hookId('SessionStart', 'SessionStart:startup');

let browser: Browser;
let svc: TestService;
let dir: string;
const open: WatchedPage[] = [];

beforeAll(async () => {
  browser = await launch();
  svc = await startTestService({ HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0' });
  dir = await mkdtemp(join(tmpdir(), 'hookwatch-guard-dash-'));
});
afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});
afterAll(async () => {
  await browser?.close();
  await svc?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Runs the hook through the guard with reporting on, as a settings.json hook command would. */
function guardedHook(chars: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify({ hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: 'context line\n'.repeat(chars / 13) } });
    const child = spawn(process.execPath, [BIN, 'guard', '--report', svc.otlpHttpUrl, '--', process.execPath, '-e', `process.stdout.write(${JSON.stringify(payload)})`], {
      env: { ...process.env, HOOKWATCH_GUARD_DIR: dir },
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('close', () => resolve(out));
    child.stdin.end(JSON.stringify({ session_id: 's-dash', hook_event_name: 'SessionStart', source: 'startup' }));
  });
}

describe('the hook page with guarded outputs', () => {
  it('shows "trimmed by guard: sent …, delivered …" beside the counters and the guarded output under the cap', async () => {
    const out = JSON.parse(await guardedHook(15_002)) as { hookSpecificOutput: { additionalContext: string } };
    const kept = out.hookSpecificOutput.additionalContext.length;
    // The guard reports at once; Claude Code exports its own event on its interval, after it.
    for (let i = 0; i < 200; i++) {
      if ((await getJson<GuardTrimsResponse>(svc.httpUrl, `/api/v1/hooks/${ID}/guard-trims`)).body.trims > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const r = await postOtlp(svc.otlpHttpUrl, '/v1/logs', hookRequest([
      { hookEvent: 'SessionStart', hookName: 'SessionStart:startup', timeMs: Date.now() - 1_000, sizes: { stdout: kept + 60, additionalContext: kept, persisted: 0 } },
    ]), { 'content-type': 'application/json' });
    expect(r.status).toBe(200);

    const w = await watchedPage(browser);
    open.push(w);
    await w.page.goto(`${svc.httpUrl}/hooks/${ID}`);
    await waitLoaded(w.page);
    const kpi = w.page.locator('[data-kpi="guard-trims"] [data-guard-largest]');
    expect(await kpi.textContent()).toBe(`trimmed by guard: sent 15,002, delivered ${kept.toLocaleString('en-US')}`);
    expect(await w.page.locator('[data-kpi="guard-trims"] .kpi-value').textContent()).toBe('1 output');
    expect(await w.page.locator('[data-kpi="persisted"] .kpi-value').textContent()).toBe('0');

    const cliff = await chartData(w.page, 'chart-cliff');
    const sent = cliff.datasets.find((d) => d.label === 'guarded: sent by the hook')?.data.filter((v) => v !== null);
    const delivered = cliff.datasets.find((d) => d.label === 'guarded: delivered')?.data.filter((v) => v !== null);
    expect(sent).toEqual([15_002]);
    expect(delivered).toEqual([kept]);
    expect(kept).toBeLessThan(10_000);
    await screenshot(w.page, 'hook-guarded');

    // Narrowed by a dimension, the page still shows the guard's figures: guard trims are not kept per
    // dimension, so the page asks for them over the range only (the route refuses a filter as unknown). It says
    // so beside them, and keeps them off the cliff chart, whose figures are the filtered ones.
    expect(await w.page.locator('#guard-trims-not-filtered').count()).toBe(0);
    await w.page.goto(`${svc.httpUrl}/hooks/${ID}?f.user.id=user-a`);
    await waitLoaded(w.page);
    expect(await kpi.textContent()).toBe(`trimmed by guard: sent 15,002, delivered ${kept.toLocaleString('en-US')}`);
    expect(await w.page.locator('[data-kpi="guard-trims"] #guard-trims-not-filtered').textContent())
      .toBe('Not filtered: guard trims are not kept per dimension, so these figures count everyone, not only user.id = \u2068user-a\u2069.');
    expect((await chartData(w.page, 'chart-cliff')).datasets.map((d) => d.label).filter((l) => l.startsWith('guarded'))).toEqual([]);
  });

  it('says on the card of the hook\'s headroom alert that guard trims it, and by how much', async () => {
    // The guarded output is kept above 80% of the cap: the default headroom rule fires on it.
    const alert = await eventually('the headroom alert of the guarded hook', async () =>
      (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body.alerts.find((a) => a.rule === 'headroom' && a.hookId === ID));
    const w = await watchedPage(browser);
    open.push(w);
    await w.page.goto(`${svc.httpUrl}/alerts`);
    await waitLoaded(w.page);
    const labels = w.page.locator(`article[data-alert-id="${alert.id}"] dl.labels`);
    expect(await labels.locator('dt:text-is("guard_trims") + dd').textContent()).toBe('1');
    // A size, written as the dashboard writes sizes; the exact value is kept in the title.
    const largest = labels.locator('dt:text-is("guard_largest_output") + dd');
    expect([await largest.textContent(), await largest.getAttribute('title')]).toEqual(['15,002 chars', '15002']);
    expect(await labels.locator('dt:text-is("guard") + dd').textContent()).toMatch(/^`hookwatch guard` already trims this hook: 1 output trimmed in the 24h before the alert became active; the largest was 15,002 characters \(hookSpecificOutput\.additionalContext\), 9,\d{3} delivered\.$/);
  });
});
