/**
 * The hook page's commands table in headless Chromium against a real hookwatch that received real telemetry and
 * the real transcripts of the same kind of session (sent twice with `hookwatch scan --send`).
 */
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TranscriptCommandsResponse } from '../../shared/src/transcript-api.ts';
import { hookId } from '../../collector/src/hooks/extract.ts';
import { captureIO } from '../../collector/test/support/capture-io.ts';
import { runScan } from '../../collector/src/tools/scan/index.ts';
import { fixtureRequests, getJson, postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { launch, screenshot, waitLoaded, watchedPage } from './harness.ts';

const PROJECTS = fileURLToPath(new URL('../../collector/testdata/claude-code-2.1.332/transcripts-a/projects/', import.meta.url));
/** Just after the fixture sessions. */
const NOW = Date.parse('2026-12-01T00:00:00Z');

let browser: Browser;
let svc: TestService;

beforeAll(async () => {
  browser = await launch();
  svc = await startTestService({}, { now: () => NOW });
  for (const r of fixtureRequests('run5-mockapi-tools-httpjson').filter((x) => x.path === '/v1/logs')) {
    expect((await postOtlp(svc.otlpHttpUrl, r.path, r.body, { 'content-type': r.contentType })).status).toBe(200);
  }
  for (let i = 0; i < 2; i++) {
    const captured = captureIO(svc.dir, { ...process.env });
    expect(await runScan(['--send', svc.otlpHttpUrl, PROJECTS], captured.io)).toBe(1);
  }
});
afterAll(async () => {
  await svc?.close();
  await browser?.close();
});

describe('hook page: commands from transcripts', () => {
  it('shows each command once with its runs, largest output and persisted outputs, and says they come from transcripts', async () => {
    const id = hookId('SessionStart', 'SessionStart:startup');
    const w = await watchedPage(browser);
    try {
      const response = w.page.waitForResponse((r) => r.url().includes(`/api/v1/hooks/${id}/commands`));
      await w.page.goto(`${svc.httpUrl}/hooks/${id}?range=7d`);
      const shown = (await (await response).json()) as TranscriptCommandsResponse;
      await waitLoaded(w.page);
      await w.page.waitForSelector('#commands');
      const api = (await getJson<TranscriptCommandsResponse>(svc.httpUrl, `/api/v1/hooks/${id}/commands?from=${shown.from}&to=${shown.to}`)).body;
      const rows = await w.page.$$eval('#commands tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('th, td')].map((c) => c.textContent ?? '')));
      expect(rows).toEqual(api.commands.map((c) => [
        c.command, String(c.runs), `${c.largestOutputChars?.toLocaleString('en-US')} chars`, String(c.persisted), String(c.delivered),
        c.delivered === 0 ? 'none delivered' : `${c.largestDeliveredChars?.toLocaleString('en-US')} chars`, String(c.sessions),
      ]));
      expect(rows.map((r) => [r[0]?.replace(/^.*emit\.js /, ''), r[1], r[2], r[3]])).toEqual([
        ['ctx 12000', '2', '12,000 chars', '2'],
        ['plain 10001', '2', '10,001 chars', '2'],
        ['ctx 10000', '2', '10,000 chars', '0'],
      ]);
      expect(await w.page.getAttribute('#commands', 'data-source')).toBe('transcript');
      expect(await w.page.textContent('#commands-source')).toMatch(/Source: transcripts \(hookwatch scan --send\).*figures above come from telemetry/);
      await screenshot(w.page, 'hook-commands');
      expect(await w.page.locator('#commands-not-filtered').count()).toBe(0);

      // Narrowed by a dimension, the same commands are shown (transcripts are not kept per dimension), and the
      // panel says they are everyone's.
      await w.page.goto(`${svc.httpUrl}/hooks/${id}?range=7d&f.user.id=someone-else`);
      await waitLoaded(w.page);
      await w.page.waitForSelector('#commands');
      expect(await w.page.$$eval('#commands tbody tr', (trs) => trs.length)).toBe(rows.length);
      expect(await w.page.textContent('#commands-panel #commands-not-filtered'))
        .toBe('Not filtered: transcripts are not kept per dimension, so these figures count everyone, not only user.id = \u2068someone-else\u2069.');
      expect([...w.errors, ...w.dialogs]).toEqual([]);
    } finally {
      await w.close();
    }
  });
});
