/**
 * The dashboard in headless Chromium over https (http.tls.*): the page, its scripts and its API calls load from
 * the https origin without an error, the DNS-rebinding check lets the browser's own name through, and a write
 * from the page (a silence) passes the same-origin check.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../collector/test/helpers.ts';
import { HAVE_OPENSSL, certAuthority, issue } from '../../collector/test/support/certs.ts';
import { emitExecutions, startServiceUnderTest, type ServiceUnderTest } from '../../collector/test/support/service.ts';
import { closePages, launch, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';

describe.skipIf(!HAVE_OPENSSL)('the dashboard over https', () => {
  const tmp = tempDir('hookwatch-dashboard-tls-');
  let browser: Browser;
  let svc: ServiceUnderTest;
  const open: WatchedPage[] = [];

  beforeAll(async () => {
    const ca = certAuthority(tmp.dir, 'dashboard');
    const server = issue(ca, 'hookwatch', 'server');
    // Chromium trusts exactly this certificate's key, as a browser trusts a team's CA: a real secure origin.
    const spki = createHash('sha256').update(new X509Certificate(readFileSync(server.certFile)).publicKey.export({ type: 'spki', format: 'der' })).digest('base64');
    browser = await launch([`--ignore-certificate-errors-spki-list=${spki}`]);
    svc = await startServiceUnderTest({ HOOKWATCH_HTTP_TLS_CERT_FILE: server.certFile, HOOKWATCH_HTTP_TLS_KEY_FILE: server.keyFile });
    await emitExecutions(svc.otlpHttpUrl, [
      { hookEvent: 'SessionStart', hookName: 'SessionStart:startup', additionalContextChars: 12_000, stdoutChars: 0, outputsPersisted: 1 },
      { hookEvent: 'Stop', hookName: 'Stop', additionalContextChars: 0, stdoutChars: 500 },
    ]);
  });

  afterAll(async () => {
    expect(await closePages(open)).toEqual([]);
    await browser?.close();
    await svc?.close();
    tmp.cleanup();
  });

  it('loads the overview with its data from the https origin, and a silence made from the page is accepted', async () => {
    const w = await watchedPage(browser);
    open.push(w);
    const base = svc.httpUrl.replace('127.0.0.1', 'localhost');
    expect(base).toMatch(/^https:\/\/localhost:\d+$/);
    await w.page.goto(`${base}/`);
    await waitLoaded(w.page);
    expect(await w.page.evaluate(() => [location.protocol, window.isSecureContext])).toEqual(['https:', true]);
    const names = await w.page.$$eval('#hook-rows a.hook-link', (as) => as.map((a) => a.textContent));
    expect(names.sort()).toEqual(['SessionStart:startup', 'Stop']);
    const status = await w.page.evaluate(async () => {
      const res = await fetch('/api/v1/silences', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ matchers: [{ name: 'hook_name', value: 'Stop', isRegex: false }], endsAt: new Date(Date.now() + 3_600_000).toISOString(), createdBy: 'on-call', comment: 'from the https dashboard' }),
      });
      return res.status;
    });
    expect(status).toBe(201);
    expect(w.errors).toEqual([]);
  });
});
