/**
 * The empty overview says when hookwatch refused OTLP requests lately: an exporter given a wrong endpoint or no
 * token drops its batches without a word, and "No events yet" alone would send its reader looking elsewhere.
 * Headless Chromium against a real hookwatch, refused over real HTTP.
 */
import { once } from 'node:events';
import { connect } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { postOtlp, startTestService, until, type TestService } from '../../collector/test/helpers.ts';
import { closePages, launch, watchedPage, type WatchedPage } from './harness.ts';

const TOKEN = 'dashboard-refusals-ingest-token-0123';
let browser: Browser;
let svc: TestService;
const open: WatchedPage[] = [];

beforeAll(async () => {
  browser = await launch();
  svc = await startTestService({ HOOKWATCH_INGEST_TOKEN: TOKEN });
});
afterAll(async () => {
  await browser?.close();
  await svc?.close();
});
afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});

describe('the empty overview', () => {
  it('says how many OTLP requests were refused lately, why, and the fix, and never the token sent', async () => {
    const w = await watchedPage(browser);
    open.push(w);
    const p = w.page;
    await p.goto(`${svc.httpUrl}/?refresh=1s`);
    await p.waitForSelector('#setup-snippet');
    expect(await p.locator('#otlp-refusals').count()).toBe(0);
    // The endpoint written with the signal's path (the exporter appends it again), and a wrong token.
    for (let i = 0; i < 12; i++) {
      expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs/v1/logs', '{}', { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` })).status).toBe(404);
    }
    expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', '{}', { 'content-type': 'application/json', authorization: 'Bearer not-the-token-5150' })).status).toBe(401);
    await p.waitForSelector('#otlp-refusals');
    const text = (await p.textContent('#otlp-refusals')) ?? '';
    expect(text).toContain('hookwatch refused 13 OTLP requests in the last 15 minutes');
    const items = await p.locator('#otlp-refusals li').allTextContents();
    expect(items).toHaveLength(2);
    expect(items[0]).toMatch(/^12 over OTLP\/HTTP: no OTLP endpoint at \/v1\/logs\/v1\/logs, the last \d+ s ago; OTEL_EXPORTER_OTLP_ENDPOINT is the base URL, such as http:\/\/<host>:\d+, to which the exporter appends \/v1\/logs$/);
    expect(items[1]).toMatch(/^1 over OTLP\/HTTP: missing or wrong bearer token \(last on \/v1\/logs\), the last \d+ s ago; hookwatch requires its ingest token .*OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer <token>"$/);
    expect(await p.content()).not.toContain('not-the-token-5150');
    // Still the setup help beneath it.
    expect(await p.locator('#setup-snippet').textContent()).toContain('export OTEL_EXPORTER_OTLP_ENDPOINT=');
  });

  it('says what was wrong with the last body that did not decode, its control characters written out', async () => {
    const own = await startTestService({});
    try {
      const w = await watchedPage(browser);
      open.push(w);
      const p = w.page;
      expect((await postOtlp(own.otlpHttpUrl, '/v1/logs', '{"resourceLogs":5}', { 'content-type': 'application/json' })).status).toBe(400);
      expect((await postOtlp(own.otlpHttpUrl, '/v1/logs', '{"resourceLogs":[\u001b[31m', { 'content-type': 'application/json' })).status).toBe(400);
      await p.goto(`${own.httpUrl}/`);
      await p.waitForSelector('#otlp-refusals');
      const items = await p.locator('#otlp-refusals li').allTextContents();
      expect(items).toEqual([expect.stringMatching(/^2 over OTLP\/HTTP: a body that does not decode \(last on \/v1\/logs\), the last \d+ s ago: invalid JSON: Unexpected token '\\u001b', .* is not valid JSON$/) as string]);
      expect(items[0]).not.toContain('\u001b');
      // Only the last one's: the earlier problem is in the log line, not on the page.
      expect(items[0]).not.toContain('resourceLogs must be an array');
    } finally {
      await own.close();
    }
  });

  it('says an OTLP request its client gave up on apart from the refusals: hookwatch did not refuse it', async () => {
    const own = await startTestService({});
    try {
      const w = await watchedPage(browser);
      open.push(w);
      const p = w.page;
      expect((await postOtlp(own.otlpHttpUrl, '/v1/log', '{}', { 'content-type': 'application/json' })).status).toBe(404);
      // Half a body, then the client closes its connection (an exporter's own timeout, a laptop going to sleep).
      const url = new URL(own.otlpHttpUrl);
      const socket = connect(Number(url.port), url.hostname);
      socket.on('error', () => {});
      await once(socket, 'connect');
      socket.write('POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"resourceLogs":');
      await new Promise((r) => setTimeout(r, 100));
      socket.destroy();
      await until('the request given up on counted', () => own.receiver.stats.rejected.client_aborted === 1);
      await p.goto(`${own.httpUrl}/`);
      await p.waitForSelector('#otlp-refusals');
      expect(await p.locator('#otlp-refusals p').textContent()).toBe('hookwatch refused 1 OTLP request, and 1 more did not arrive whole, in the last 15 minutes (as counted by the hookwatch process that answered this page):');
      const items = await p.locator('#otlp-refusals li').allTextContents();
      // The latest first, of two with one request each.
      expect(items).toEqual([
        expect.stringMatching(/^1 over OTLP\/HTTP: the client gave up before sending the whole request \(last on \/v1\/logs\), the last \d+ s ago$/) as string,
        expect.stringMatching(/^1 over OTLP\/HTTP: no OTLP endpoint at \/v1\/log, the last \d+ s ago/) as string,
      ]);
    } finally {
      await own.close();
    }
  });
});
