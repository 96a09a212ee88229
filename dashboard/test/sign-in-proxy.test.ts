/**
 * The dashboard behind a sign-in proxy (oauth2-proxy, Pomerium, Cloudflare Access, an ingress with auth-url) whose
 * session expires while the page is open, in headless Chromium: a real hookwatch fed the captured Claude Code
 * requests, and in front of it a small proxy that passes whoever holds its session cookie and, once the session is
 * gone, answers the page's API calls the ways such proxies do. The page says it is signed out and offers the
 * reload, which the proxy takes to its login page; signed in again, the reload brings the data back. hookwatch's own
 * refusals, passed on by the proxy, still read as hookwatch's.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { FIXTURE_RUNS, fixtureClock, fixtureRequests, postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { closePages, launch, shownAt, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';
import { IDLE_RELOAD_MS, RELOAD_AGAIN_MS } from '../src/shell-state.ts';

/**
 * How the proxy answers a call of the page's, the session gone: its login page in place (200), a redirect to its
 * login page on the same origin or on another (the identity provider's), or a refusal as a web page (401, 403) or in
 * JSON of its own (an API gateway's `{"message":"Unauthorized"}`; one in the very shape of hookwatch's errors).
 */
type Expired = 'login page' | 'redirect, same origin' | 'redirect, other origin' | '401 page' | '403 page' | '401 JSON' | '403 JSON';

let browser: Browser;
let svc: TestService;
const open: WatchedPage[] = [];
const cleanups: (() => Promise<void>)[] = [];

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(() => r()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const loginPage = (signInHref: string): string =>
  `<!doctype html><html><head><title>Sign in</title></head><body><h1>Sign in to continue</h1><a id="sign-in" href="${signInHref.replace(/&/g, '&amp;')}">Sign in</a></body></html>`;

interface SignInProxy {
  url: string;
  /** The proxy's session ends: the cookie the browser holds is no longer taken. */
  expire(): void;
  /** Whether the identity provider still knows the browser: a sign-in goes through without a person. */
  idpSession: boolean;
  /** hookwatch answers through the proxy with a gateway error page, as when it is down. */
  down: boolean;
  /** The proxy guards the API only: the page itself loads without a session, its calls are refused. */
  pagesOpen: boolean;
  /** The page's calls (not navigations) the proxy refused since the last expiry. */
  refused(): number;
  /** The user the proxy names to hookwatch in X-Forwarded-User (hookwatch's `proxy-header` mode); none when undefined. */
  user: string | undefined;
  /** The Host the proxy passes on to hookwatch, when not the browser's (a public name hookwatch is not told of). */
  host: string | undefined;
}

async function signInProxy(expired: Expired, to: TestService = svc): Promise<SignInProxy> {
  let session = randomUUID();
  let refused = 0;
  const upstream = new URL(to.httpUrl);
  const state: { idpSession: boolean; down: boolean; pagesOpen: boolean; user: string | undefined; host: string | undefined } = { idpSession: false, down: false, pagesOpen: false, user: undefined, host: undefined };
  const callback = (proxy: string, rd: string): string => `${proxy}/oauth2/callback?rd=${encodeURIComponent(rd)}`;
  // The identity provider, on an origin of its own.
  const idp = await listen((req, res) => {
    const rd = new URL(req.url ?? '/', 'http://x').searchParams.get('rd') ?? '/';
    if (state.idpSession) res.writeHead(302, { location: callback(proxyUrl, rd) }).end();
    else res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(loginPage(callback(proxyUrl, rd)));
  });
  const proxyUrl = await listen((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const signInAt = (rd: string): string => expired === 'redirect, other origin'
      ? `${idp}/login?rd=${encodeURIComponent(rd)}`
      : `/oauth2/sign_in?rd=${encodeURIComponent(rd)}`;
    if (url.pathname === '/oauth2/callback') {
      res.writeHead(302, { location: url.searchParams.get('rd') ?? '/', 'set-cookie': `_proxy=${session}; Path=/; HttpOnly` }).end();
      return;
    }
    if (url.pathname === '/oauth2/sign_in') {
      const rd = url.searchParams.get('rd') ?? '/';
      if (state.idpSession) res.writeHead(302, { location: `/oauth2/callback?rd=${encodeURIComponent(rd)}` }).end();
      else res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(loginPage(`/oauth2/callback?rd=${encodeURIComponent(rd)}`));
      return;
    }
    const signedIn = (req.headers.cookie ?? '').split(/;\s*/).includes(`_proxy=${session}`);
    if (!signedIn && !(state.pagesOpen && !url.pathname.startsWith('/api/'))) {
      // A page loaded (the address bar, a reload) is sent to sign in; a call of the page's is answered as configured.
      if (req.headers['sec-fetch-mode'] === 'navigate') {
        res.writeHead(302, { location: signInAt(req.url ?? '/') }).end();
        return;
      }
      refused++;
      const html = { 'content-type': 'text/html; charset=utf-8' };
      if (expired === 'login page') res.writeHead(200, html).end(loginPage(`/oauth2/callback?rd=%2F`));
      else if (expired === '401 page') res.writeHead(401, html).end('<html><body><h1>401 Unauthorized</h1><a href="/oauth2/sign_in">Sign in</a></body></html>');
      else if (expired === '403 page') res.writeHead(403, html).end('<html><body><h1>403 Forbidden</h1><p>Sign in again.</p></body></html>');
      else if (expired === '401 JSON') res.writeHead(401, { 'content-type': 'application/json' }).end('{"message":"Unauthorized"}');
      else if (expired === '403 JSON') res.writeHead(403, { 'content-type': 'application/json; charset=utf-8' }).end('{"error":{"code":"forbidden","message":"Forbidden"}}');
      else res.writeHead(302, { location: signInAt('/') }).end();
      return;
    }
    if (state.down) {
      res.writeHead(502, { 'content-type': 'text/html' }).end('<html><body><center><h1>502 Bad Gateway</h1></center></body></html>');
      return;
    }
    const headers = { ...req.headers, ...(state.user === undefined ? {} : { 'x-forwarded-user': state.user }), ...(state.host === undefined ? {} : { host: state.host }) };
    const forwarded = request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers }, (up) => {
      // hookwatch gone in the middle of its answer: the page sees the connection drop, as through a real proxy.
      up.on('error', () => res.destroy());
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    // hookwatch not reached, or the connection reset before it answered: the gateway's error page, as a proxy
    // answers then, rather than an error nothing handles ending the test run.
    forwarded.on('error', () => {
      if (res.headersSent) res.destroy();
      else res.writeHead(502, { 'content-type': 'text/html' }).end('<html><body><center><h1>502 Bad Gateway</h1></center></body></html>');
    });
    req.pipe(forwarded);
  });
  return {
    url: proxyUrl,
    expire() {
      session = randomUUID();
      refused = 0;
    },
    get idpSession() { return state.idpSession; },
    set idpSession(v: boolean) { state.idpSession = v; },
    get down() { return state.down; },
    set down(v: boolean) { state.down = v; },
    get pagesOpen() { return state.pagesOpen; },
    set pagesOpen(v: boolean) { state.pagesOpen = v; },
    refused: () => refused,
    get user() { return state.user; },
    set user(v: string | undefined) { state.user = v; },
    get host() { return state.host; },
    set host(v: string | undefined) { state.host = v; },
  };
}

async function page(): Promise<Page> {
  // The browser logs each refused call; the page's own errors still fail the test.
  const w = await watchedPage(browser, { allow: /status of (401|403|502)/ });
  open.push(w);
  return w.page;
}

/** Runs the page's clock `ms` on; a reload may end the run under way, the page it ran in gone. */
function runOn(p: Page, ms: number): Promise<void> {
  return p.clock.runFor(ms).catch((err: Error) => {
    if (!/Execution context was destroyed|navigation/.test(err.message)) throw err;
  });
}

/** Opens the dashboard through the proxy: sent to the login page first, signed in there, and back. */
async function signIn(p: Page, at: string): Promise<void> {
  await p.goto(at);
  await Promise.all([p.waitForURL(at), p.click('#sign-in')]);
  await waitLoaded(p);
}

beforeAll(async () => {
  browser = await launch();
  svc = await startTestService({ HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0' }, { now: fixtureClock });
  for (const run of FIXTURE_RUNS) {
    for (const req of fixtureRequests(run)) {
      const r = await postOtlp(svc.otlpHttpUrl, req.path, req.body, { 'content-type': req.contentType });
      expect(r.status).toBe(200);
    }
  }
});

afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
  for (const c of cleanups.splice(0).reverse()) await c();
});

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

describe('the sign-in session expires while the page is open', () => {
  const reasons: Record<Expired, RegExp> = {
    'login page': /^Signed out: the sign-in session has expired \(hookwatch's address answered with a web page, most likely a login page, instead of hookwatch's data\); reload the page to sign in$/,
    'redirect, same origin': /^Signed out: the sign-in session has expired \(the server redirected to a login page\); reload the page to sign in$/,
    'redirect, other origin': /^Signed out: the sign-in session has expired \(the server redirected to a login page\); reload the page to sign in$/,
    '401 page': /^Signed out: the sign-in session has expired \(the server in front of hookwatch answered 401 with a web page\); reload the page to sign in$/,
    '403 page': /^Signed out: the server in front of hookwatch refused the request \(403 with a web page\): the sign-in session may have expired, or this account is not let in; reload the page to sign in$/,
    '401 JSON': /^Signed out: the sign-in session has expired \(the server in front of hookwatch answered 401\); reload the page to sign in$/,
    '403 JSON': /^Signed out: the server in front of hookwatch refused the request \(403\): the sign-in session may have expired, or this account is not let in; reload the page to sign in$/,
  };

  it.each(Object.keys(reasons) as Expired[])('says signed out when the proxy answers with %s, stops asking, and a reload through the login page brings the data back', { timeout: 60_000 }, async (expired) => {
    const proxy = await signInProxy(expired);
    const p = await page();
    const at = `${proxy.url}/?range=7d&refresh=1s`;
    await signIn(p, at);
    const rows = await p.locator('#hook-rows tr').count();
    expect(rows).toBeGreaterThan(0);

    proxy.expire();
    await p.waitForSelector('#error-banner:not([hidden])');
    expect(await p.textContent('#error-alert')).toMatch(reasons[expired]);
    expect(await p.textContent('#error-age')).toMatch(new RegExp(`^ \\(showing data from ${await shownAt(p)}, \\d+ s ago; refresh stopped; reloads by itself to sign in again once unused for 10 min\\)$`));
    expect(await p.locator('#error-banner button.reload').textContent()).toBe('Reload to sign in');
    // The data shown stays; refresh stops: every call would be refused the same way.
    expect(await p.locator('#hook-rows tr').count()).toBe(rows);
    const refused = proxy.refused();
    expect(refused).toBeGreaterThan(0);
    await p.waitForTimeout(2500);
    expect(proxy.refused()).toBe(refused);

    // The reload goes to the proxy's login page; signed in there, the dashboard shows the data again.
    await Promise.all([p.waitForSelector('#sign-in'), p.click('#error-banner button.reload')]);
    await Promise.all([p.waitForURL(at), p.click('#sign-in')]);
    await waitLoaded(p);
    expect(await p.isHidden('#error-banner')).toBe(true);
    expect(await p.locator('#hook-rows tr').count()).toBe(rows);
  });

  it('says signed out on a page opened with no data yet, and offers the reload in place of the content', { timeout: 60_000 }, async () => {
    const proxy = await signInProxy('login page');
    const p = await page();
    await signIn(p, `${proxy.url}/alerts?refresh=1s`);
    proxy.expire();
    // Another page of the dashboard, opened in place: nothing of it was shown yet.
    await p.click('a[data-path="/"]');
    await p.waitForSelector('#signed-out');
    expect(await p.textContent('#signed-out')).toContain('Signed out');
    expect(await p.locator('#signed-out button.reload').textContent()).toBe('Reload to sign in');
    expect(await p.textContent('#error-age')).toMatch(/^ \(nothing to show; refresh stopped; reloads by itself to sign in again once unused for 10 min\)$/);
  });

  it('still says hookwatch could not be reached, and tries again, when the proxy answers a gateway error page', { timeout: 60_000 }, async () => {
    const proxy = await signInProxy('login page');
    const p = await page();
    await signIn(p, `${proxy.url}/?range=7d&refresh=1s`);
    proxy.down = true;
    await p.waitForSelector('#error-banner:not([hidden])');
    expect(await p.textContent('#error-alert')).toMatch(/^Could not refresh: GET \/\S+ answered 502 with a body that is not JSON$/);
    expect(await p.textContent('#error-age')).toMatch(/; retrying (less often, )?every \d+ s\)$/);
    expect(await p.locator('#error-banner button.reload').count()).toBe(0);
    proxy.down = false;
    await p.waitForSelector('#error-banner', { state: 'hidden', timeout: 20_000 });
  });

  it('still shows hookwatch\'s own 403 passed on by the proxy as hookwatch says it, and tries again', { timeout: 60_000 }, async () => {
    const proxy = await signInProxy('401 JSON');
    const p = await page();
    await signIn(p, `${proxy.url}/?range=7d&refresh=1s`);
    const rows = await p.locator('#hook-rows tr').count();
    // What the proxy refused itself: the browser's ask for a favicon before signing in.
    const refused = proxy.refused();
    // The proxy, its session good, passes on a public name that hookwatch, on loopback, is not told of.
    proxy.host = 'dashboard.example';
    await p.waitForSelector('#error-banner:not([hidden])');
    expect(await p.textContent('#error-alert')).toBe('Could not refresh: host "dashboard.example" is not allowed: add it to http.allowedHosts to reach hookwatch by that name');
    expect(await p.textContent('#error-age')).toMatch(new RegExp(`^ \\(showing data from ${await shownAt(p)}, \\d+ s ago; retrying (less often, )?every \\d+ s\\)$`));
    expect(await p.locator('#error-banner button.reload').count()).toBe(0);
    expect(await p.locator('#hook-rows tr').count()).toBe(rows);
    expect(proxy.refused()).toBe(refused);
    proxy.host = undefined;
    await p.waitForSelector('#error-banner', { state: 'hidden', timeout: 20_000 });
  });

  it('says hookwatch asks for credentials again when its own 401 comes through the proxy, without reloading by itself', { timeout: 60_000 }, async () => {
    const guarded = await startTestService({ HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0', HOOKWATCH_HTTP_AUTH_MODE: 'proxy-header', HOOKWATCH_HTTP_AUTH_PROXY_HEADER: 'X-Forwarded-User' });
    cleanups.push(() => guarded.close());
    const proxy = await signInProxy('401 JSON', guarded);
    proxy.user = 'dev@example.test';
    const p = await page();
    await signIn(p, `${proxy.url}/?range=7d&refresh=1s`);
    const refused = proxy.refused();
    // The proxy, its session good, stops naming the user to hookwatch (its configuration changed).
    proxy.user = undefined;
    await p.waitForSelector('#error-banner:not([hidden])');
    expect(await p.textContent('#error-alert')).toBe('Signed out: hookwatch asks for credentials again; reload the page to sign in');
    expect(await p.textContent('#error-age')).toMatch(new RegExp(`^ \\(showing data from ${await shownAt(p)}, \\d+ s ago; refresh stopped\\)$`));
    expect(await p.locator('#error-banner button.reload').textContent()).toBe('Reload to sign in');
    expect(proxy.refused()).toBe(refused);
  });

  it('reloads a wall screen left unused by itself, through the identity provider, and shows the data again', { timeout: 60_000 }, async () => {
    const proxy = await signInProxy('redirect, other origin');
    const p = await page();
    await p.clock.install();
    const at = `${proxy.url}/?range=7d&refresh=15s`;
    await signIn(p, at);
    const rows = await p.locator('#hook-rows tr').count();
    // The proxy's session lasts hours; the identity provider's, days: a reload signs in again without a person.
    proxy.idpSession = true;
    proxy.expire();
    await p.clock.runFor(15_000);
    await p.waitForSelector('#error-banner:not([hidden])');
    expect(await p.textContent('#error-alert')).toMatch(/^Signed out: the sign-in session has expired/);
    // Left unused for the idle time, it reloads, and the proxy and identity provider let it back in.
    await Promise.all([p.waitForEvent('load'), runOn(p, IDLE_RELOAD_MS + 2_000)]);
    expect(p.url()).toBe(at);
    await waitLoaded(p);
    expect(await p.isHidden('#error-banner')).toBe(true);
    expect(await p.locator('#hook-rows tr').count()).toBe(rows);

    // Signed out again, and the proxy now lets the page itself through but not its calls: the reload brings no
    // data back, and the page does not reload by itself again before an hour is up, rather than every ten minutes.
    proxy.idpSession = false;
    proxy.pagesOpen = true;
    proxy.expire();
    await p.clock.runFor(15_000);
    await p.waitForSelector('#error-banner:not([hidden])');
    let loads = 0;
    p.on('load', () => void loads++);
    await Promise.all([p.waitForEvent('load'), runOn(p, IDLE_RELOAD_MS + 2_000)]);
    // By the page's clock, a moment after it reloaded itself.
    const now = (): Promise<number> => p.evaluate(() => Date.now());
    const reloadedAt = await now();
    await p.waitForSelector('#error-banner:not([hidden])');
    expect(await p.textContent('#error-alert')).toMatch(/^Signed out: the sign-in session has expired/);
    expect(await p.textContent('#error-age')).toMatch(/^ \(nothing to show; refresh stopped; reloads by itself to sign in again from \d\d:\d\d, once unused for 10 min\)$/);
    await p.clock.runFor(IDLE_RELOAD_MS + 60_000);
    expect(loads).toBe(1);
    expect(await p.isVisible('#signed-out')).toBe(true);
    // Not for good: the hour over, and the page unused ten minutes more, it reloads again (a proxy that let the page
    // through but not its calls may be mended by then), and not before.
    const due = reloadedAt + RELOAD_AGAIN_MS + IDLE_RELOAD_MS;
    await p.clock.runFor(due - 30_000 - (await now()));
    expect(loads).toBe(1);
    await Promise.all([p.waitForEvent('load'), runOn(p, 2 * 60_000)]);
    expect(loads).toBe(2);
    await p.waitForSelector('#signed-out');
  });
});

describe('hookwatch in proxy-header mode reached without the header', () => {
  it('shows a browser that reached hookwatch past the proxy, or through one that does not name the user, which header it reads and the way in', { timeout: 60_000 }, async () => {
    const guarded = await startTestService({ HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0', HOOKWATCH_HTTP_AUTH_MODE: 'proxy-header', HOOKWATCH_HTTP_AUTH_PROXY_HEADER: 'X-Forwarded-User' });
    cleanups.push(() => guarded.close());
    const p = await page();
    /** What the page says, the 401 it came with and its challenge. */
    const shown = async (res: Awaited<ReturnType<Page['goto']>>): Promise<{ status: number | undefined; challenge: string | undefined; title: string; heading: string; text: string }> => ({
      status: res?.status(),
      challenge: (await res?.allHeaders())?.['www-authenticate'],
      title: await p.title(),
      heading: await p.locator('h1').innerText(),
      text: await p.locator('body').innerText(),
    });
    const expected = {
      status: 401,
      challenge: 'ProxyHeader realm="hookwatch", header="x-forwarded-user"',
      title: 'hookwatch: sign in through the proxy in front of it',
      heading: 'Sign in through the proxy in front of hookwatch',
      text: expect.stringContaining('names the signed-in user in the x-forwarded-user header. This request came with no x-forwarded-user header.') as string,
    };
    // hookwatch's own address, opened past the proxy.
    const direct = await shown(await p.goto(`${guarded.httpUrl}/?range=7d`));
    expect(direct).toEqual(expected);
    expect(direct.text).toContain('Open the dashboard at the proxy\'s address, the address your team signs in at, not hookwatch\'s own.');
    expect(direct.text).toContain('HOOKWATCH_HTTP_AUTH_PROXY_HEADER');
    expect(direct.text).not.toContain('"error"');
    // Through a proxy that signs the person in but names them to hookwatch under no header it reads.
    const proxy = await signInProxy('401 JSON', guarded);
    await p.goto(`${proxy.url}/?range=7d`);
    const [res] = await Promise.all([p.waitForResponse((r) => new URL(r.url()).pathname === '/' && r.request().isNavigationRequest()), p.click('#sign-in')]);
    expect(await shown(res)).toEqual(expected);
    expect(await p.content()).not.toContain('dev@example.test');
    // Named, the same browser gets the dashboard.
    proxy.user = 'dev@example.test';
    await p.reload();
    await waitLoaded(p);
    expect(await p.title()).toBe('Overview · hookwatch');
    expect(await p.locator('#main').count()).toBe(1);
  });
});
