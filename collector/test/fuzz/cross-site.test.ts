/**
 * The API's state-changing routes (silences, receiver tests) cannot be driven by a web page a team member
 * happens to visit: browsers send cross-site "simple" POSTs (text/plain, no preflight) with an Origin header,
 * and hookwatch refuses them with 403. Clients that are not browsers (curl, scripts) send no Origin and work.
 * A page whose own name is rebound to 127.0.0.1 (DNS rebinding) passes Origin checks, so the Host it sends is
 * checked too.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, withHost, type TestService } from '../helpers.ts';
import { OWN_ANSWER_HEADER } from '../../../shared/src/api.ts';

let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});

afterAll(async () => {
  await service.close();
});

const silence = (): string => JSON.stringify({
  matchers: [{ name: 'hook_name', value: 'PostToolUse:Bash' }],
  endsAt: new Date(Date.now() + 3_600_000).toISOString(),
  createdBy: 'someone',
  comment: 'muted',
});

async function silences(): Promise<number> {
  const res = await fetch(`${service.httpUrl}/api/v1/silences`);
  return ((await res.json()) as { silences: unknown[] }).silences.length;
}

describe('cross-site writes', () => {
  it('a cross-site text/plain POST that would mute alerts gets 403 and creates nothing', async () => {
    const before = await silences();
    const crossSite: Record<string, string>[] = [
      { 'content-type': 'text/plain', origin: 'https://evil.example' },
      { 'content-type': 'text/plain', origin: 'null' },
      { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'cross-site' },
    ];
    for (const headers of crossSite) {
      const res = await fetch(`${service.httpUrl}/api/v1/silences`, { method: 'POST', headers, body: silence() });
      expect(res.status, JSON.stringify(headers)).toBe(403);
    }
    const test = await fetch(`${service.httpUrl}/api/v1/receivers/any/test`, { method: 'POST', headers: { origin: 'https://evil.example' } });
    expect(test.status).toBe(403);
    expect(await silences()).toBe(before);
  });

  it('the dashboard itself (same origin) and clients without Origin can still write', async () => {
    const before = await silences();
    const sameOrigin = await fetch(`${service.httpUrl}/api/v1/silences`, { method: 'POST', headers: { 'content-type': 'application/json', origin: service.httpUrl, 'sec-fetch-site': 'same-origin' }, body: silence() });
    expect(sameOrigin.status).toBe(201);
    const script = await fetch(`${service.httpUrl}/api/v1/silences`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: silence() });
    expect(script.status).toBe(201);
    expect(await silences()).toBe(before + 2);
    // Reads are not affected.
    expect((await fetch(`${service.httpUrl}/api/v1/hooks`, { headers: { origin: 'https://evil.example' } })).status).toBe(200);
  });
});

describe('DNS rebinding', () => {
  it('answers nothing to a name rebound to 127.0.0.1 while hookwatch listens on loopback, and names the setting', async () => {
    const before = await silences();
    const port = new URL(service.httpUrl).port;
    const rebound = `evil.example:${port}`;
    const origin = `http://${rebound}`;
    const post = await withHost(`${service.httpUrl}/api/v1/silences`, rebound, { method: 'POST', headers: { 'content-type': 'application/json', origin, 'sec-fetch-site': 'same-origin' }, body: silence() });
    expect(post.status).toBe(403);
    expect(post.body).toContain('http.allowedHosts');
    for (const path of ['/api/v1/hooks', '/api/v1/alerts', '/metrics', '/']) expect((await withHost(`${service.httpUrl}${path}`, rebound)).status, path).toBe(403);
    expect(await silences()).toBe(before);
    // The names a local browser or tool uses still work, written absolute (a trailing dot: the same DNS name) too.
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `dash.localhost:${port}`, `localhost.:${port}`, `LOCALHOST.`, `dash.localhost.:${port}`]) {
      expect((await withHost(`${service.httpUrl}/api/v1/hooks`, host)).status, host).toBe(200);
    }
  });

  it('takes no telemetry on the OTLP/HTTP port through a rebound name, and takes it through localhost', async () => {
    const port = new URL(service.otlpHttpUrl).port;
    const body = JSON.stringify({ resourceLogs: [] });
    const headers = { 'content-type': 'application/json' };
    const rebound = await withHost(`${service.otlpHttpUrl}/v1/logs`, `evil.example:${port}`, { method: 'POST', headers, body });
    expect(rebound.status).toBe(403);
    expect(rebound.body).toContain('http.allowedHosts');
    expect((await withHost(`${service.otlpHttpUrl}/v1/logs`, `localhost:${port}`, { method: 'POST', headers, body })).status).toBe(200);
  });

  it('answers the names listed in http.allowedHosts and alerting.externalUrl\'s host', async () => {
    const listed = await startTestService({ HOOKWATCH_HTTP_ALLOWED_HOSTS: 'hookwatch.internal', HOOKWATCH_EXTERNAL_URL: 'https://hooks.example.com/' });
    try {
      // A client given the name absolute (`hookwatch.internal.`, as in-cluster clients are, to skip the DNS search
      // list) sends it so in Host: the same name.
      for (const host of ['hookwatch.internal:9318', 'HOOKS.example.com', '10.0.0.7:9318', 'hookwatch.internal.:9318', 'hooks.example.com.']) expect((await withHost(`${listed.httpUrl}/api/v1/hooks`, host)).status, host).toBe(200);
      for (const host of ['evil.example', 'evil.example.', 'hookwatch.internal..']) expect((await withHost(`${listed.httpUrl}/api/v1/hooks`, host)).status, host).toBe(403);
    } finally {
      await listed.close();
    }
  });

  it('without alerting.externalUrl answers the host its notifications link to: the machine\'s name on a wildcard address', async () => {
    const listed = await startTestService({ HOOKWATCH_HTTP_ADDR: '0.0.0.0:0', HOOKWATCH_HTTP_ALLOWED_HOSTS: 'hookwatch.internal' });
    try {
      const linked = new URL(listed.externalUrl);
      expect(linked.hostname).toBe(hostname().toLowerCase());
      for (const host of [linked.host, 'hookwatch.internal']) expect((await withHost(`${listed.httpUrl}/api/v1/hooks`, host)).status, host).toBe(200);
      expect((await withHost(`${listed.httpUrl}/api/v1/hooks`, 'evil.example')).status).toBe(403);
    } finally {
      await listed.close();
    }
  });
});

describe('answers a browser keeps or reinterprets', () => {
  const hardened = (headers: Headers, what: string): void => {
    expect(headers.get('cache-control'), what).toBe('no-store');
    expect(headers.get('x-content-type-options'), what).toBe('nosniff');
    expect(headers.get('x-frame-options'), what).toBe('DENY');
    expect(headers.get('content-security-policy'), what).toContain("frame-ancestors 'none'");
    expect(headers.get('referrer-policy'), what).toBe('no-referrer');
    // And hookwatch's mark, by which the dashboard tells hookwatch's refusals from a sign-in proxy's in front of it.
    expect(headers.get(OWN_ANSWER_HEADER), what).toBe('1');
  };

  it('are not cached, sniffed or framed: API answers, errors, /metrics and /readyz', async () => {
    const silence = await fetch(`${service.httpUrl}/api/v1/silences`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ matchers: [{ name: 'hook_name', value: 'Stop:x' }], endsAt: new Date(Date.now() + 60_000).toISOString(), createdBy: 'a', comment: 'b' }) });
    expect(silence.status).toBe(201);
    hardened(silence.headers, 'POST /api/v1/silences');
    for (const path of ['/api/v1/hooks', '/api/v1/overview', '/api/v1/alerts', '/api/v1/silences', '/api/v1/cluster', '/api/v1/forwarding', '/api/v1/hooks?from=bad', '/api/v1/nope', '/readyz', '/healthz', '/metrics']) {
      const res = await fetch(`${service.httpUrl}${path}`);
      await res.arrayBuffer();
      hardened(res.headers, path);
    }
    // The API's JSON allows nothing to run or load, if a browser were made to render it.
    const hooks = await fetch(`${service.httpUrl}/api/v1/hooks`);
    expect(hooks.headers.get('content-security-policy')).toContain("default-src 'none'");
  });

  it('hold for refusals too: a rebound name and a request without credentials', async () => {
    const port = new URL(service.httpUrl).port;
    const rebound = await new Promise<Headers>((resolve, reject) => {
      request(`${service.httpUrl}/api/v1/hooks`, { headers: { host: `evil.example:${port}` } }, (res) => {
        res.resume();
        resolve(new Headers(res.headers as Record<string, string>));
      }).on('error', reject).end();
    });
    hardened(rebound, 'rebound name');
    const guarded = await startTestService({ HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: 'tok-cache-3c1e9b7a' });
    try {
      const res = await fetch(`${guarded.httpUrl}/api/v1/hooks`);
      expect(res.status).toBe(401);
      hardened(res.headers, '401');
    } finally {
      await guarded.close();
    }
  });

  it('hold for the refusals written before the app sees the request too, each header once', async () => {
    const url = new URL(service.httpUrl);
    /** The status line and headers a request sent as `bytes` is answered with, once the port closes the connection. */
    const answer = (bytes: string): Promise<{ status: string; headers: Map<string, string>; names: string[] }> => new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      const socket = connect(Number(url.port), url.hostname, () => socket.write(bytes));
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('error', reject);
      socket.on('close', () => {
        const [statusLine = '', ...lines] = Buffer.concat(chunks).toString('latin1').split('\r\n\r\n')[0]?.split('\r\n') ?? [];
        const names = lines.map((l) => l.slice(0, l.indexOf(':')).toLowerCase());
        resolve({ status: statusLine, headers: new Map(lines.map((l, i) => [names[i] ?? '', l.slice(l.indexOf(':') + 1).trim()])), names });
      });
    });
    const host = `Host: ${url.host}\r\n`;
    const cases = [
      ['Expect other than 100-continue', `GET /api/v1/hooks HTTP/1.1\r\n${host}Expect: something\r\n\r\n`, 'HTTP/1.1 417 Expectation Failed'],
      ['headers over 16 KiB', `GET /api/v1/hooks?q=${'x'.repeat(20_000)} HTTP/1.1\r\n${host}\r\n`, 'HTTP/1.1 431 Request Header Fields Too Large'],
      ['a Transfer-Encoding not ending in chunked', `POST /api/v1/silences HTTP/1.1\r\n${host}Transfer-Encoding: gzip\r\n\r\n`, 'HTTP/1.1 400 Bad Request'],
      ['a transfer coding before chunked', `POST /api/v1/silences HTTP/1.1\r\n${host}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n`, 'HTTP/1.1 501 Not Implemented'],
      ['Host twice', `GET /api/v1/hooks HTTP/1.1\r\n${host}${host}\r\n`, 'HTTP/1.1 400 Bad Request'],
      ['no Host', 'GET /api/v1/hooks HTTP/1.1\r\n\r\n', 'HTTP/1.1 400 Bad Request'],
      ['CONNECT', `CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n`, 'HTTP/1.1 400 Bad Request'],
      ['HTTP the parser cannot read', `GET /api/v1/hooks HTTP/1.1\r\n${host}Bad Header: x\r\n\r\n`, 'HTTP/1.1 400 Bad Request'],
    ] as const;
    for (const [what, bytes, status] of cases) {
      const got = await answer(bytes);
      expect(got.status, what).toBe(status);
      hardened(new Headers([...got.headers]), what);
      expect(got.headers.get('content-security-policy'), what).toBe("default-src 'none'; frame-ancestors 'none'");
      // Over plain http, where a browser ignores it.
      expect(got.headers.has('strict-transport-security'), what).toBe(false);
      expect(got.names.length, `${what}: ${got.names.join(', ')}`).toBe(new Set(got.names).size);
    }
  });

  it('leave the dashboard its own policy: scripts from itself only, pages revalidated, never framed', async () => {
    const page = await fetch(`${service.httpUrl}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('cache-control')).toBe('no-cache');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
  });
});

