import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawExchange } from '../collector/test/support/raw-http.ts';
import { createDashboardRouter } from './server.ts';

let server: Server;
let base: string;
const warnings: string[] = [];
const onWarning = (w: Error): void => void warnings.push(w.message);

beforeAll(async () => {
  process.on('warning', onWarning);
  const app = express();
  app.use(createDashboardRouter());
  server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  process.off('warning', onWarning);
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('dashboard server', () => {
  it('serves the page with a modulepreload for every module main.ts reaches, shared ones included', async () => {
    const html = await (await fetch(base + '/')).text();
    for (const m of ['/dashboard/src/main.ts', '/dashboard/src/pages/hook.ts', '/shared/src/forecast.ts', '/shared/src/cliff.ts']) {
      expect(html).toContain(`<link rel="modulepreload" href="${m}">`);
    }
    expect(html).not.toContain('.test.ts');
  });

  it('sends /index.html to /, the page the app reads its view from, never the template without its build and preloads', async () => {
    // The app reads the view from the path, and has none at /index.html: that page would say "No such page".
    for (const [method, path, location] of [['GET', '/index.html', '/'], ['HEAD', '/index.html', '/'], ['GET', '/index.html?range=7d&team=web', '/?range=7d&team=web'], ['GET', '/%69ndex.html', '/'], ['GET', '/INDEX.HTML', '/']] as const) {
      const what = `${method} ${path}`;
      const res = await fetch(base + path, { method, redirect: 'manual' });
      expect([res.status, res.headers.get('location')], what).toEqual([301, location]);
      expect(await res.text(), what).not.toContain('<!--modulepreload-->');
    }
    const followed = await fetch(base + '/index.html');
    expect(followed.url).toBe(base + '/');
    const page = await followed.text();
    expect(page).toMatch(/<meta name="hookwatch-build" content="[0-9a-f]{16}">/);
    expect(page).toContain('<link rel="modulepreload" href="/dashboard/src/entry.ts">');
  });

  it('names the build it serves in the page and at /dashboard/build, the same on every request', async () => {
    const build = /<meta name="hookwatch-build" content="([0-9a-f]{16})">/.exec(await (await fetch(base + '/')).text())?.[1];
    expect(build).toMatch(/^[0-9a-f]{16}$/);
    const res = await fetch(base + '/dashboard/build');
    expect([res.headers.get('cache-control'), await res.json()]).toEqual(['no-cache', { build }]);
  });

  it('serves type-stripped modules as JavaScript without a warning on stderr', async () => {
    const res = await fetch(base + '/shared/src/forecast.ts');
    expect(res.headers.get('content-type')).toContain('text/javascript');
    const js = await res.text();
    expect(js).toContain('export function forecastCrossing');
    expect(js).not.toMatch(/:\s*readonly Point\[\]/);
    // hookwatch's stderr is JSON lines: Node's experimental-feature notice must not land there.
    expect(warnings.filter((w) => w.includes('stripTypeScriptTypes'))).toEqual([]);
  });

  it('never serves outside its folders, tests, or non-TypeScript files as modules', async () => {
    for (const path of ['/dashboard/src/..%2f..%2fpackage.json', '/dashboard/src/%2e%2e/server.ts', '/shared/src/../../package.json', '/dashboard/src/state.test.ts', '/dashboard/src/nope.ts']) {
      expect((await fetch(base + path)).status, path).toBe(404);
    }
  });

  it('repeats at most 64 characters of a path it has nothing at, or takes no other method on, and says it cut it', async () => {
    const path = `/vendor/${'p'.repeat(8_000)}`;
    const get = await fetch(base + path);
    expect([get.status, await get.json()]).toEqual([404, { error: { code: 'not_found', message: `no page or file at "/vendor/${'p'.repeat(56)}…"; the API is under /api/v1` } }]);
    const post = await fetch(base + path, { method: 'POST' });
    expect([post.status, await post.json()]).toEqual([404, { error: { code: 'not_found', message: `no page or file at "/vendor/${'p'.repeat(56)}…"; the API is under /api/v1` } }]);
    const page = `/hooks/${'p'.repeat(8_000)}`;
    const put = await fetch(base + page, { method: 'PUT' });
    expect([put.status, await put.json()]).toEqual([405, { error: { code: 'method_not_allowed', message: `PUT "/hooks/${'p'.repeat(57)}…": the dashboard answers GET and HEAD; the API is under /api/v1` } }]);
  });

  it('answers another method on a path it serves 405 with Allow, and on any other path the 404 a GET there gets', async () => {
    const served = ['/', '/hooks/0123456789abcdef', '/alerts/', '/dashboard/build', '/dashboard/src/main.ts', '/shared/src/forecast.ts', '/vendor/chart.umd.min.js', '/styles.css', '/index.html'];
    const missing = ['/nope', '/hooks', '/hooks/0123456789abcdef/more', '/dashboard', '/dashboard/src/nope.ts', '/dashboard/src/state.test.ts', '/shared/src/..%2f..%2fpackage.json', '/vendor/nope.js', '/nope.css'];
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      for (const path of served) {
        const res = await fetch(base + path, { method });
        expect([res.status, res.headers.get('allow'), ((await res.json()) as { error: { code: string } }).error.code], `${method} ${path}`).toEqual([405, 'GET, HEAD', 'method_not_allowed']);
      }
      for (const path of missing) {
        const res = await fetch(base + path, { method });
        expect([res.status, res.headers.get('allow'), ((await res.json()) as { error: { code: string } }).error.code], `${method} ${path}`).toEqual([404, null, 'not_found']);
      }
    }
    expect((await fetch(base + '/styles.css', { method: 'OPTIONS' })).status).toBe(204);
    expect((await fetch(base + '/nope.css', { method: 'OPTIONS' })).status).toBe(404);
  });

  it('answers a range or precondition a file cannot meet with that status and a JSON reason, not the file\'s headers', async () => {
    for (const path of ['/styles.css', '/vendor/chart.umd.min.js']) {
      const size = (await (await fetch(base + path)).arrayBuffer()).byteLength;
      const cases: [Record<string, string>, number, string, RegExp][] = [
        [{ range: `bytes=${size}-` }, 416, 'range_not_satisfiable', new RegExp(`^Range "bytes=${size}-" asks for no byte of "${path}", which has ${size} bytes$`)],
        [{ range: 'bytes=5-1' }, 416, 'range_not_satisfiable', /^Range "bytes=5-1" asks for no byte/],
        [{ 'if-match': '"nope"' }, 412, 'precondition_failed', /If-Match/],
        [{ 'if-unmodified-since': 'Thu, 01 Jan 1970 00:00:01 GMT' }, 412, 'precondition_failed', /If-Unmodified-Since/],
      ];
      for (const [headers, status, code, message] of cases) {
        const what = `${path} ${JSON.stringify(headers)}`;
        const res = await fetch(base + path, { headers });
        expect([res.status, res.headers.get('content-type'), res.headers.get('cache-control'), res.headers.get('last-modified')], what).toEqual([status, 'application/json; charset=utf-8', 'no-store', null]);
        // RFC 9110 section 15.5.17: a 416 says how long the file is.
        expect(res.headers.get('content-range'), what).toBe(status === 416 ? `bytes */${size}` : null);
        const { error } = (await res.json()) as { error: { code: string; message: string } };
        expect(error.code, what).toBe(code);
        expect(error.message, what).toMatch(message);
      }
    }
  });

  it('answers its own folder and the asterisk target with its JSON 404, not a redirect or Express\'s HTML page', async () => {
    // Sent as written: fetch would resolve the dot segments away. public/ itself serves no index, so a redirect to
    // "/./" only led to the same 404. `*` names no resource but for OPTIONS (RFC 9112 section 3.2.4).
    for (const [method, path] of [['GET', '/.'], ['GET', '/%2e'], ['GET', '/./'], ['GET', '*'], ['HEAD', '*'], ['POST', '*']] as const) {
      const what = `${method} ${path}`;
      const answer = await rawExchange(base, `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      expect(answer.head, what).toMatch(/^HTTP\/1\.1 404 Not Found\r\n/);
      expect(answer.head, what).toMatch(/\r\ncontent-type: application\/json; charset=utf-8\r\n/i);
      expect(answer.head, what).not.toMatch(/\r\nlocation:/i);
      if (method !== 'HEAD') expect((JSON.parse(answer.body.toString()) as { error: { code: string } }).error.code, what).toBe('not_found');
    }
  });

  it('serves Chart.js from node_modules, no CDN', async () => {
    const res = await fetch(base + '/vendor/chart.umd.min.js');
    expect(res.status).toBe(200);
    expect((await res.text()).length).toBeGreaterThan(100_000);
  });
});
