/**
 * hookwatch_http_requests_total{handler,code} and hookwatch_http_request_duration_seconds{handler} of a real
 * hookwatch: real requests to its HTTP port (the API, the dashboard, refusals written on raw sockets, a client
 * giving up), then /metrics scraped and the series asserted. `handler` is a route's pattern, never a path's values.
 */
import { once } from 'node:events';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { hookId } from '../src/hooks/extract.ts';
import { rawExchange } from './support/raw-http.ts';
import { sampleValue, scrapeMetrics, type ParsedFamily } from './support/prometheus-text.ts';
import { emitExecutions, startServiceUnderTest, type ServiceUnderTest } from './support/service.ts';

const REQUESTS = 'hookwatch_http_requests_total';
const DURATION = 'hookwatch_http_request_duration_seconds';

let service: ServiceUnderTest | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

/** The requests counted so far, as `<handler> <code>` → count; the series at 0 left out. */
function counted(families: Map<string, ParsedFamily>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of families.get(REQUESTS)?.samples ?? []) if (s.value > 0) out[`${s.labels['handler']} ${s.labels['code']}`] = s.value;
  return out;
}

/** Every series of both families, by name and labels (a histogram's buckets included). */
function seriesOf(families: Map<string, ParsedFamily>): string[] {
  return [REQUESTS, DURATION].flatMap((f) => (families.get(f)?.samples ?? []).map((s) => `${s.name}${JSON.stringify(s.labels)}`)).sort();
}

const observed = (families: Map<string, ParsedFamily>, handler: string): number | undefined => sampleValue(families, DURATION, { handler }, `${DURATION}_count`);

async function get(url: string, headers: Record<string, string> = {}): Promise<number> {
  const res = await fetch(url, { headers });
  await res.arrayBuffer();
  return res.status;
}

describe('API request metrics', () => {
  it('shows every route at 0 before its first request, so increase() sees the first one', async () => {
    service = await startServiceUnderTest();
    const { families } = await scrapeMetrics(service.httpUrl);
    for (const handler of ['/api/v1/hooks', '/api/v1/hooks/:id/series', '/api/v1/overview', '/api/v1/fleet/series', '/api/v1/silences/:id', '/healthz', '/readyz', '/metrics', '/-/reload', '/dashboard']) {
      expect(sampleValue(families, REQUESTS, { handler, code: '200' }), handler).toBe(0);
      expect(observed(families, handler), handler).toBe(0);
    }
    expect(counted(families)).toEqual({});
  });

  it('counts each request under its route pattern and status, the dashboard under /dashboard, anything else under other', async () => {
    service = await startServiceUnderTest();
    await emitExecutions(service.otlpHttpUrl, [{ hookEvent: 'Stop', hookName: 'Stop' }]);
    const base = service.httpUrl;
    const known = hookId('Stop', 'Stop');
    const unknown = 'feedfacecafebeef';
    expect(await get(`${base}/api/v1/hooks?from=now-1h`)).toBe(200);
    expect(await get(`${base}/api/v1/hooks/${known}/series?from=now-1h&step=60`)).toBe(200);
    expect(await get(`${base}/api/v1/hooks/${unknown}/series?from=now-1h`)).toBe(404);
    expect(await get(`${base}/api/v1/hooks/${known}/series?from=secret-value-1234`)).toBe(400);
    expect(await get(`${base}/api/v1/overview`)).toBe(200);
    // Another method on a route: its pattern, though no route ran.
    expect((await fetch(`${base}/api/v1/overview`, { method: 'POST' })).status).toBe(405);
    // The dashboard's page, module and style sheet, and a path no route knows.
    expect(await get(`${base}/hooks/${known}`, { accept: 'text/html' })).toBe(200);
    expect(await get(`${base}/dashboard/src/entry.ts`)).toBe(200);
    expect(await get(`${base}/styles.css`)).toBe(200);
    expect(await get(`${base}/no/such/page.js`)).toBe(404);
    // Another method: on a page, the dashboard's 405; on a path nothing serves, 404 as for a GET.
    expect((await fetch(`${base}/hooks/${known}`, { method: 'POST' })).status).toBe(405);
    expect((await fetch(`${base}/no/such/page`, { method: 'POST' })).status).toBe(404);
    expect(await get(`${base}/api/v1/no-such-route`)).toBe(404);
    const { text, families } = await scrapeMetrics(base);
    expect(counted(families)).toEqual({
      '/api/v1/hooks 200': 1,
      '/api/v1/hooks/:id/series 200': 1,
      '/api/v1/hooks/:id/series 404': 1,
      '/api/v1/hooks/:id/series 400': 1,
      '/api/v1/overview 200': 1,
      '/api/v1/overview 405': 1,
      '/dashboard 200': 3,
      '/dashboard 405': 1,
      'other 404': 3,
    });
    expect(observed(families, '/api/v1/hooks/:id/series')).toBe(3);
    expect(observed(families, '/dashboard')).toBe(4);
    expect(observed(families, 'other')).toBe(3);
    // The scrape counts itself once answered: the next one sees it.
    expect(sampleValue((await scrapeMetrics(base)).families, REQUESTS, { handler: '/metrics', code: '200' })).toBe(1);
    // No value a client sent is a label: not the hook id, not a query parameter, not a path.
    for (const sent of [unknown, 'secret-value', 'no-such', 'page.js', 'entry.ts', 'from=']) expect(text).not.toContain(sent);
  });

  it('adds no series for 1,000 distinct paths a client makes up', async () => {
    service = await startServiceUnderTest();
    const base = service.httpUrl;
    const junk = (i: number): string[] => [`/junk-${i}?q=${i}`, `/api/v1/junk-${i}`, `/api/v1/hooks/${i.toString(16).padStart(16, '0')}/breakdown`, `/dashboard/src/junk-${i}.ts`];
    for (const path of junk(0)) await get(base + path);
    const before = await scrapeMetrics(base);
    // 20 at a time: below http.maxPendingQueries, whose 503 would be a series of its own.
    for (let i = 1; i <= 1000; i += 20) await Promise.all(Array.from({ length: 20 }, (_, k) => Promise.all(junk(i + k).map((path) => get(base + path)))));
    const after = await scrapeMetrics(base);
    expect(seriesOf(after.families)).toEqual(seriesOf(before.families));
    expect(counted(after.families)).toEqual({ '/metrics 200': 1, 'other 404': 3003, '/api/v1/hooks/:id/breakdown 404': 1001 });
    expect(after.text).not.toContain('junk');
  });

  it('counts a query refused at http.maxPendingQueries under its route, as the dashboard sees it', async () => {
    service = await startServiceUnderTest({ HOOKWATCH_HTTP_MAX_PENDING_QUERIES: '1' });
    const base = service.httpUrl;
    const statuses = await Promise.all(Array.from({ length: 10 }, () => get(`${base}/api/v1/overview?from=now-30d`)));
    const refused = statuses.filter((s) => s === 503).length;
    expect(refused).toBeGreaterThan(0);
    expect(counted((await scrapeMetrics(base)).families)).toEqual({ '/api/v1/overview 200': 10 - refused, '/api/v1/overview 503': refused });
  });

  it('counts a 401 under the route asked for when http.auth is on, an absolute-form target\'s too', async () => {
    const token = 'tok-api-metrics-5b4a3c2d1e';
    service = await startServiceUnderTest({ HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: token });
    const base = service.httpUrl;
    expect(await get(`${base}/api/v1/overview`)).toBe(401);
    expect(await get(`${base}/api/v1/overview`, { authorization: 'Bearer wrong' })).toBe(401);
    expect(await get(`${base}/no-such-page`)).toBe(401);
    expect(await get(`${base}/api/v1/overview`, { authorization: `Bearer ${token}` })).toBe(200);
    expect(await get(`${base}/healthz`)).toBe(200);
    // An absolute-form target (a client taking the port for a proxy) names the route by its path too.
    const absolute = await rawExchange(base, `GET ${base}/api/v1/overview HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    expect(absolute.head).toMatch(/^HTTP\/1\.1 401 /);
    const { text, families } = await scrapeMetrics(base, { authorization: `Bearer ${token}` });
    expect(counted(families)).toEqual({ '/api/v1/overview 401': 3, '/api/v1/overview 200': 1, 'other 401': 1, '/healthz 200': 1 });
    expect(text).not.toContain(token);
  });

  it('counts what the HTTP parser or Node\'s server refuses under refused, and a body refused mid-request under its route', async () => {
    service = await startServiceUnderTest();
    const base = service.httpUrl;
    expect((await rawExchange(base, `GET /api/v1/hooks?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`)).head).toMatch(/^HTTP\/1\.1 431 /);
    expect((await rawExchange(base, 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')).head).toMatch(/^HTTP\/1\.1 400 /);
    expect((await rawExchange(base, 'GET /api/v1/hooks HTTP/1.1\r\n\r\n')).head).toMatch(/^HTTP\/1\.1 400 /);
    expect((await rawExchange(base, 'GET /api/v1/hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n')).head).toMatch(/^HTTP\/1\.1 400 /);
    expect((await rawExchange(base, 'GET /api/v1/hooks HTTP/1.1\r\nHost: 127.0.0.1@evil.example\r\n\r\n')).head).toMatch(/^HTTP\/1\.1 400 /);
    expect((await rawExchange(base, 'GET http://127.0.0.1@evil.example/api/v1/hooks HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')).head).toMatch(/^HTTP\/1\.1 400 /);
    expect((await rawExchange(base, 'GET /api/v1/hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 200-ok\r\n\r\n')).head).toMatch(/^HTTP\/1\.1 417 /);
    expect((await rawExchange(base, 'POST /api/v1/silences HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n{}')).head).toMatch(/^HTTP\/1\.1 400 /);
    expect((await rawExchange(base, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n')).head).toMatch(/^HTTP\/1\.1 400 /);
    expect((await rawExchange(base, 'POST /api/v1/silences HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n')).head).toMatch(/^HTTP\/1\.1 501 /);
    // Chunked framing that cannot be read, after the headers: the route's request, ended by the parser's refusal.
    expect((await rawExchange(base, 'POST /api/v1/silences HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')).head).toMatch(/^HTTP\/1\.1 400 /);
    await expect.poll(async () => counted((await scrapeMetrics(base)).families), { timeout: 15_000 }).toEqual({
      'refused 431': 1,
      'refused 400': 7,
      'refused 417': 1,
      'refused 501': 1,
      '/api/v1/silences 400': 1,
      '/metrics 200': expect.any(Number) as number,
    });
    const { families } = await scrapeMetrics(base);
    // Refused before a request was read whole: no time to observe.
    expect(observed(families, 'refused')).toBeUndefined();
  });

  it('counts a request its client gives up on as 499 under its route', async () => {
    service = await startServiceUnderTest();
    const url = new URL(service.httpUrl);
    // Half a body, then the client closes the connection; once the request has reached the app, which asks for its
    // body (100 Continue) as it hands the request over.
    const socket = connect(Number(url.port), url.hostname);
    await once(socket, 'connect');
    socket.on('error', () => {});
    socket.write('POST /api/v1/silences HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n');
    expect(String(await once(socket, 'data'))).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
    socket.write('{"matchers":');
    socket.destroy();
    await expect.poll(async () => sampleValue((await scrapeMetrics(service?.httpUrl ?? '')).families, REQUESTS, { handler: '/api/v1/silences', code: '499' }), { timeout: 15_000 }).toBe(1);
    const { families } = await scrapeMetrics(service.httpUrl);
    expect(Object.keys(counted(families)).filter((k) => !k.startsWith('/metrics '))).toEqual(['/api/v1/silences 499']);
    expect(observed(families, '/api/v1/silences')).toBe(1);
  });
});
