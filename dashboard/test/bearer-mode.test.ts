/**
 * A browser opened on a hookwatch whose HTTP port takes a bearer token (http.auth.mode: bearer), in headless
 * Chromium: it cannot send the token, so it gets a page saying so and naming the modes the dashboard works with,
 * not the API's JSON refusal; the page runs nothing and carries no secret.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startTestService, type TestService } from '../../collector/test/helpers.ts';
import { hardeningHeaders } from '../../collector/src/api/same-origin.ts';
import { closePages, launch, watchedPage, type WatchedPage } from './harness.ts';

const TOKEN = 'tok-5e0d-bearer-dashboard-s3cret';

let browser: Browser;
let svc: TestService;
const open: WatchedPage[] = [];

beforeAll(async () => {
  browser = await launch();
  svc = await startTestService({ HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: TOKEN });
});

afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

describe('the dashboard on a hookwatch in bearer mode', () => {
  it('shows a page that says the browser cannot send the token and which modes the dashboard needs', async () => {
    // The 401 of the page load itself, which Chromium logs; any other error (a script run, a resource refused) fails.
    const w = await watchedPage(browser, { allow: /^Failed to load resource: the server responded with a status of 401 \(Unauthorized\)$/ });
    open.push(w);
    for (const path of ['/', '/hooks/some-hook?from=now-1h']) {
      const res = await w.page.goto(svc.httpUrl + path);
      expect(res?.status(), path).toBe(401);
      const headers = res?.headers() ?? {};
      expect(headers['content-type'], path).toBe('text/html; charset=utf-8');
      expect(headers['www-authenticate'], path).toBe('Bearer realm="hookwatch"');
      for (const [name, value] of Object.entries(hardeningHeaders())) expect(headers[name.toLowerCase()], `${path} ${name}`).toBe(value);
      expect(await w.page.title(), path).toBe('hookwatch: the dashboard needs another sign-in mode');
      expect(await w.page.locator('h1').innerText(), path).toBe('The dashboard needs another sign-in mode');
      const text = await w.page.locator('body').innerText();
      expect(text, path).toContain('Authorization: Bearer <token>');
      expect(text, path).toContain('HOOKWATCH_HTTP_AUTH_MODE=basic');
      expect(text, path).toContain('proxy-header behind a sign-in proxy');
      expect(text, path).toContain('docs/deploy.md');
      expect(text, path).not.toContain('"error"');
      expect(await w.page.content(), path).not.toContain(TOKEN);
    }
  });

  it('serves the dashboard to a browser that is given the token', async () => {
    const w = await watchedPage(browser);
    open.push(w);
    await w.context.setExtraHTTPHeaders({ authorization: `Bearer ${TOKEN}` });
    const res = await w.page.goto(svc.httpUrl + '/');
    expect(res?.status()).toBe(200);
    await w.page.waitForFunction(() => Number(document.body.dataset['loaded'] ?? '0') >= 1);
    expect(await w.page.locator('h1').first().innerText()).not.toContain('another sign-in mode');
  });
});
