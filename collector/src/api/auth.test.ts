import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, effectiveDocument, loadConfig, toConfig } from '../config/index.ts';
import { startTestService, type TestService } from '../../test/helpers.ts';
import { hardeningHeaders } from './same-origin.ts';

const PASSWORD = 'pw-7f3c:with-colon-s3cret';
const TOKEN = 'tok-91ab-http-s3cret';
// Every route family on the HTTP port; /healthz is the one left open.
const ROUTES = ['/', '/hooks/x', '/api/v1/hooks?from=now-1h', '/api/v1/overview?from=now-1h', '/api/v1/alerts', '/metrics', '/readyz', '/styles.css'];

async function get(base: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(base + path, { headers });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

const basic = (user: string, pass: string): Record<string, string> => ({ authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` });

interface ModeCase {
  name: string;
  env: Record<string, string>;
  good: Record<string, string>;
  bad: Record<string, string>[];
  challenge: string;
}

const MODES: ModeCase[] = [
  {
    name: 'basic',
    env: { HOOKWATCH_HTTP_AUTH_MODE: 'basic', HOOKWATCH_HTTP_AUTH_USERNAME: 'team', HOOKWATCH_HTTP_AUTH_PASSWORD: PASSWORD },
    good: basic('team', PASSWORD),
    bad: [basic('team', 'wrong'), basic('other', PASSWORD), basic('team', PASSWORD + 'x'), { authorization: `Bearer ${PASSWORD}` }, { authorization: 'Basic !!!' }],
    challenge: 'Basic realm="hookwatch"',
  },
  {
    name: 'bearer',
    env: { HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: TOKEN },
    good: { authorization: `Bearer ${TOKEN}` },
    bad: [{ authorization: 'Bearer wrong' }, { authorization: `Bearer ${TOKEN}x` }, { authorization: 'Bearer ' }, { authorization: TOKEN }, basic('x', TOKEN)],
    challenge: 'Bearer',
  },
  {
    name: 'proxy-header',
    env: { HOOKWATCH_HTTP_AUTH_MODE: 'proxy-header', HOOKWATCH_HTTP_AUTH_PROXY_HEADER: 'X-Forwarded-User' },
    good: { 'x-forwarded-user': 'alice@example.com' },
    bad: [{ 'x-forwarded-user': '' }, { 'x-forwarded-user': '   ' }, { 'x-other-user': 'alice' }],
    challenge: 'ProxyHeader realm="hookwatch", header="x-forwarded-user"',
  },
];

describe.each(MODES)('HTTP port with http.auth.mode $name', (mode) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService(mode.env);
  });
  afterAll(async () => {
    await svc.close();
  });

  it('answers 401 on every route family without credentials, with the JSON error and the challenge', async () => {
    for (const path of ROUTES) {
      const r = await get(svc.httpUrl, path);
      expect(r.status, path).toBe(401);
      expect(JSON.parse(r.text), path).toEqual({ error: { code: 'unauthorized', message: expect.any(String) as string } });
      // RFC 9110 §11.6.1: every 401 carries a challenge.
      expect(r.headers.get('www-authenticate'), path).toEqual(expect.stringContaining(mode.challenge));
    }
  });

  it('answers 401 to wrong credentials and never echoes a secret', async () => {
    for (const headers of mode.bad) {
      for (const path of ['/api/v1/hooks?from=now-1h', '/']) {
        const r = await get(svc.httpUrl, path, headers);
        expect(r.status, `${path} ${JSON.stringify(headers)}`).toBe(401);
        for (const secret of [PASSWORD, TOKEN, 'alice']) expect(r.text).not.toContain(secret);
      }
    }
  });

  it('says whether credentials were missing or not accepted, as a script needs to know which to fix', async () => {
    const scheme = mode.name === 'basic' ? 'Basic' : 'Bearer';
    const error = async (headers: Record<string, string>): Promise<[number, string, string | null]> => {
      const r = await get(svc.httpUrl, '/api/v1/alerts', headers);
      return [r.status, (JSON.parse(r.text) as { error: { message: string } }).error.message, r.headers.get('www-authenticate')];
    };
    const [missing, wrong] = [await error({}), await error(mode.bad[0]!)];
    if (mode.name === 'proxy-header') {
      // The proxy signs people in: the fix is to come through it, or to have it set the header hookwatch reads.
      const challenge = 'ProxyHeader realm="hookwatch", header="x-forwarded-user"';
      expect([missing, wrong]).toEqual([
        [401, 'authentication required: no x-forwarded-user header (sign in through the reverse proxy, which sets it)', challenge],
        [401, 'authentication required: the x-forwarded-user header is empty (sign in through the reverse proxy, which sets it)', challenge],
      ]);
      expect((await error({ 'x-other-user': 'alice' }))[1]).toBe('authentication required: no x-forwarded-user header (sign in through the reverse proxy, which sets it)');
      return;
    }
    expect(missing.slice(0, 2)).toEqual([401, `authentication required: send Authorization: ${scheme} ...`]);
    expect(wrong.slice(0, 2)).toEqual([401, `the ${scheme} credentials sent were not accepted`]);
    // RFC 6750: a bearer token that was sent and refused is named invalid_token in the challenge; none sent, no error.
    if (mode.name === 'bearer') expect([missing[2], wrong[2]]).toEqual(['Bearer realm="hookwatch"', 'Bearer realm="hookwatch", error="invalid_token"']);
    // Another scheme is not credentials for this one.
    expect((await error({ authorization: `${scheme === 'Basic' ? 'Bearer' : 'Basic'} abc` }))[1]).toBe(`authentication required: send Authorization: ${scheme} ...`);
  });

  it('answers the dashboard page\'s own requests with a challenge no browser prompts for, under Basic only', async () => {
    for (const path of ['/api/v1/alerts', '/']) {
      const marked = await get(svc.httpUrl, path, { 'x-requested-with': 'XMLHttpRequest' });
      const plain = await get(svc.httpUrl, path);
      expect(marked.status, path).toBe(401);
      expect(JSON.parse(marked.text), path).toEqual(JSON.parse(plain.text));
      expect(marked.headers.get('www-authenticate'), path).toBe(mode.name === 'basic' ? 'xBasic realm="hookwatch"' : plain.headers.get('www-authenticate'));
    }
  });

  it('serves every route family with credentials', async () => {
    for (const path of ROUTES) {
      const r = await get(svc.httpUrl, path, mode.good);
      expect(r.status, path).toBe(200);
      for (const secret of [PASSWORD, TOKEN]) expect(r.text, path).not.toContain(secret);
    }
  });

  it('leaves GET /healthz open, and only it', async () => {
    const r = await get(svc.httpUrl, '/healthz');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ status: 'ok' });
    expect((await fetch(svc.httpUrl + '/healthz', { method: 'POST' })).status).toBe(401);
  });

  it('leaves /healthz open however the router names it, so a probe written with a trailing slash is not a 401', async () => {
    // Routes match with a trailing slash and in any case (the API's /api/v1/hooks/): the probe's path does too.
    for (const path of ['/healthz/', '/HealthZ', '/healthz?probe=liveness']) {
      const r = await get(svc.httpUrl, path);
      expect(r.status, path).toBe(200);
      expect(JSON.parse(r.text), path).toEqual({ status: 'ok' });
    }
    expect((await fetch(svc.httpUrl + '/healthz/', { method: 'HEAD' })).status).toBe(200);
    // Only that route: a path below it, or one that merely starts with its name, still asks for credentials.
    for (const path of ['/healthz/x', '/healthzx', '/healthz//']) expect((await get(svc.httpUrl, path)).status, path).toBe(401);
  });

  it('refuses writes without credentials before any handler runs', async () => {
    const res = await fetch(svc.httpUrl + '/api/v1/silences', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(401);
  });

  it('leaves the OTLP port to its own ingest token', async () => {
    const res = await fetch(svc.otlpHttpUrl + '/v1/logs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"resourceLogs":[]}' });
    expect(res.status).toBe(200);
  });
});

describe('bearer credentials in other places', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: TOKEN });
  });
  afterAll(async () => {
    await svc.close();
  });

  it('never reads a token from the query string', async () => {
    for (const q of [`access_token=${TOKEN}`, `token=${TOKEN}`, `authorization=Bearer%20${TOKEN}`]) {
      expect((await get(svc.httpUrl, `/api/v1/hooks?${q}`)).status, q).toBe(401);
    }
  });

  it('refuses a request carrying repeated Authorization headers, whichever is right', async () => {
    const answer = (values: string[]): Promise<{ status: number; body: string }> => new Promise((resolve, reject) => {
      request(`${svc.httpUrl}/api/v1/hooks`, { headers: ['host', new URL(svc.httpUrl).host, ...values.flatMap((v) => ['authorization', v])] }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      }).on('error', reject).end();
    });
    const status = async (values: string[]): Promise<number> => (await answer(values)).status;
    expect(JSON.parse((await answer(['Bearer wrong', `Bearer ${TOKEN}`])).body)).toEqual({ error: { code: 'unauthorized', message: 'authentication required: send Authorization once' } });
    expect(await status([`Bearer ${TOKEN}`, 'Bearer wrong'])).toBe(401);
    expect(await status([`Bearer ${TOKEN}`, `Bearer ${TOKEN}`])).toBe(401);
    expect(await status([`Bearer ${TOKEN}`])).toBe(200);
  });
});

describe('http.auth configuration', () => {
  const build = (env: Record<string, string>) => () => toConfig(loadConfig({ env: { HOOKWATCH_DB: '/tmp/unused.db', ...env } }));

  it('defaults to none, and then the HTTP port stays open', async () => {
    expect(build({})().http.auth.mode).toBe('none');
    const svc = await startTestService();
    try {
      expect((await get(svc.httpUrl, '/api/v1/hooks?from=now-1h')).status).toBe(200);
    } finally {
      await svc.close();
    }
  });

  it.each([
    [{ HOOKWATCH_HTTP_AUTH_MODE: 'basic', HOOKWATCH_HTTP_AUTH_PASSWORD: PASSWORD }, 'http.auth.username'],
    [{ HOOKWATCH_HTTP_AUTH_MODE: 'basic', HOOKWATCH_HTTP_AUTH_USERNAME: 'team' }, 'http.auth.password'],
    [{ HOOKWATCH_HTTP_AUTH_MODE: 'basic', HOOKWATCH_HTTP_AUTH_USERNAME: 'a:b', HOOKWATCH_HTTP_AUTH_PASSWORD: PASSWORD }, 'http.auth.username'],
    [{ HOOKWATCH_HTTP_AUTH_MODE: 'bearer' }, 'http.auth.token'],
    [{ HOOKWATCH_HTTP_AUTH_MODE: 'proxy-header' }, 'http.auth.proxyHeader'],
    [{ HOOKWATCH_HTTP_AUTH_MODE: 'proxy-header', HOOKWATCH_HTTP_AUTH_PROXY_HEADER: 'bad header' }, 'http.auth.proxyHeader'],
    [{ HOOKWATCH_HTTP_AUTH_MODE: 'password' }, 'http.auth.mode'],
  ])('refuses %o naming %s', (env, key) => {
    expect(build(env)).toThrow(ConfigError);
    expect(build(env)).toThrow(key);
    try {
      build(env)();
    } catch (err) {
      expect((err as Error).message).not.toContain(PASSWORD);
    }
  });

  // A token no Authorization header can carry would start a hookwatch on which every client gets 401.
  it.each([
    ['a trailing newline', `${TOKEN}\n`],
    ['a leading space', ` ${TOKEN}`],
    ['only spaces', '   '],
    ['a non-ASCII character', `${TOKEN}\u00e9`],
  ])('refuses a bearer token with %s, naming the setting and not the token', (_what, token) => {
    for (const [key, env] of [['http.auth.token', { HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: token }], ['otlp.ingestToken', { HOOKWATCH_INGEST_TOKEN: token }]] as const) {
      let message = '';
      try {
        build(env)();
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        message = (err as Error).message;
      }
      expect(message).toContain(key);
      expect(message).toContain('every request would get 401');
      expect(message).not.toContain(TOKEN);
    }
  });

  it('keeps a token with a space inside, which a header carries', async () => {
    const token = `${TOKEN} inner`;
    const svc = await startTestService({ HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: token });
    try {
      expect((await get(svc.httpUrl, '/api/v1/hooks?from=now-1h', { authorization: `Bearer ${token}` })).status).toBe(200);
    } finally {
      await svc.close();
    }
  });

  it('redacts the password and token in the effective configuration', () => {
    const loaded = loadConfig({ env: { HOOKWATCH_DB: '/tmp/unused.db', HOOKWATCH_HTTP_AUTH_MODE: 'basic', HOOKWATCH_HTTP_AUTH_USERNAME: 'team', HOOKWATCH_HTTP_AUTH_PASSWORD: PASSWORD, HOOKWATCH_HTTP_AUTH_TOKEN: TOKEN } });
    const text = JSON.stringify(effectiveDocument(loaded));
    expect(text).toContain('team');
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain(TOKEN);
  });
});

/** A GET with exactly the headers given (fetch would send its own Sec-Fetch-Mode: cors). */
const rawGet = (url: string, headers: Record<string, string>): Promise<{ status: number; headers: Headers; text: string }> => new Promise((resolve, reject) => {
  request(url, { headers }, (res) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: new Headers(Object.entries(res.headers).map(([k, v]) => [k, String(v)])), text: Buffer.concat(chunks).toString() }));
  }).on('error', reject).end();
});
// What Chromium sends for a page load.
const NAVIGATION = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' };

/**
 * A browser opened on a hookwatch in bearer mode: it cannot send the token, so a navigation gets a page that says
 * why and what the dashboard needs instead; every other client keeps the JSON refusal it reads.
 */
describe('http.auth.mode bearer and a browser opening the dashboard', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: TOKEN });
  });
  afterAll(async () => {
    await svc.close();
  });
  const raw = (path: string, headers: Record<string, string>): ReturnType<typeof rawGet> => rawGet(svc.httpUrl + path, headers);

  it('answers a navigation 401 with a page naming the modes the dashboard works with, under the API\'s headers', async () => {
    for (const [path, headers] of [['/', NAVIGATION], ['/hooks/x', NAVIGATION], ['/', { accept: NAVIGATION.accept }], ['/', { 'sec-fetch-mode': 'navigate' }], ['/', { ...NAVIGATION, authorization: `Bearer ${TOKEN}x` }]] as const) {
      const r = await raw(path, headers);
      const what = `${path} ${JSON.stringify(headers)}`;
      expect(r.status, what).toBe(401);
      expect(r.headers.get('content-type'), what).toBe('text/html; charset=utf-8');
      expect(r.headers.get('www-authenticate'), what).toBe('authorization' in headers ? 'Bearer realm="hookwatch", error="invalid_token"' : 'Bearer realm="hookwatch"');
      for (const [name, value] of Object.entries(hardeningHeaders())) expect(r.headers.get(name), `${what} ${name}`).toBe(value);
      expect(r.text, what).toMatch(/^<!doctype html>/);
      expect(r.text, what).toContain('<title>hookwatch: the dashboard needs another sign-in mode</title>');
      expect(r.text, what).toContain('Authorization: Bearer');
      for (const mode of ['http.auth.mode: bearer', 'basic', 'proxy-header', 'docs/deploy.md']) expect(r.text, `${what} ${mode}`).toContain(mode);
      expect(r.text, what).not.toContain(TOKEN);
      expect(r.text, what).not.toMatch(/<script|<style|<img|<link/i);
    }
  });

  it('keeps the JSON refusal for API clients: JSON asked for, curl\'s */*, no Accept, the dashboard\'s own calls', async () => {
    for (const headers of [{}, { accept: '*/*' }, { accept: 'application/json' }, { accept: 'application/json, text/html' }, { accept: 'text/plain' }, { accept: 'application/json', 'sec-fetch-mode': 'cors', 'x-requested-with': 'XMLHttpRequest' }] as Record<string, string>[]) {
      for (const path of ['/', '/api/v1/hooks?from=now-1h', '/metrics']) {
        const r = await raw(path, headers);
        const what = `${path} ${JSON.stringify(headers)}`;
        expect(r.status, what).toBe(401);
        expect(r.headers.get('content-type'), what).toBe('application/json; charset=utf-8');
        expect(r.headers.get('www-authenticate'), what).toBe('Bearer realm="hookwatch"');
        expect(JSON.parse(r.text), what).toEqual({ error: { code: 'unauthorized', message: 'authentication required: send Authorization: Bearer ...' } });
      }
    }
  });

  it('serves the dashboard to a navigation that carries the token', async () => {
    const r = await raw('/', { ...NAVIGATION, authorization: `Bearer ${TOKEN}` });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
  });
});

/**
 * A browser that reaches a hookwatch in proxy-header mode without the sign-in proxy's header: someone opening
 * hookwatch's own address, past the proxy, or a proxy that passes the user under another header. The navigation
 * gets a page that says which header hookwatch reads and to come in through the proxy; every other client keeps the
 * JSON refusal it reads.
 */
describe('http.auth.mode proxy-header and a browser that did not come through the proxy', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ HOOKWATCH_HTTP_AUTH_MODE: 'proxy-header', HOOKWATCH_HTTP_AUTH_PROXY_HEADER: 'X-Forwarded-User' });
  });
  afterAll(async () => {
    await svc.close();
  });
  const raw = (path: string, headers: Record<string, string>): ReturnType<typeof rawGet> => rawGet(svc.httpUrl + path, headers);
  const CHALLENGE = 'ProxyHeader realm="hookwatch", header="x-forwarded-user"';

  it('answers a navigation 401 with a page naming the header hookwatch reads and the way in through the proxy, under the API\'s headers', async () => {
    const cases: [string, Record<string, string>, string][] = [
      ['/', NAVIGATION, 'no x-forwarded-user header'],
      ['/hooks/x?from=now-1h', NAVIGATION, 'no x-forwarded-user header'],
      ['/alerts', { accept: NAVIGATION.accept }, 'no x-forwarded-user header'],
      ['/', { 'sec-fetch-mode': 'navigate' }, 'no x-forwarded-user header'],
      // A proxy that passes the user under another name, and one that sends the header empty.
      ['/', { ...NAVIGATION, 'x-goog-authenticated-user-email': 'accounts.google.com:alice@example.com' }, 'no x-forwarded-user header'],
      ['/', { ...NAVIGATION, 'x-forwarded-user': '  ' }, 'an empty x-forwarded-user header'],
    ];
    for (const [path, headers, what] of cases) {
      const r = await raw(path, headers);
      const at = `${path} ${JSON.stringify(headers)}`;
      expect(r.status, at).toBe(401);
      expect(r.headers.get('content-type'), at).toBe('text/html; charset=utf-8');
      expect(r.headers.get('www-authenticate'), at).toBe(CHALLENGE);
      expect(r.headers.get('cache-control'), at).toBe('no-store');
      for (const [name, value] of Object.entries(hardeningHeaders())) expect(r.headers.get(name), `${at} ${name}`).toBe(value);
      expect(r.text, at).toMatch(/^<!doctype html>/);
      expect(r.text, at).toContain('<title>hookwatch: sign in through the proxy in front of it</title>');
      expect(r.text, at).toContain(`This request came with ${what}.`);
      for (const words of ['http.auth.mode: proxy-header', '<code>x-forwarded-user</code>', 'HOOKWATCH_HTTP_AUTH_PROXY_HEADER', 'the address your team signs in at', 'docs/deploy.md']) expect(r.text, `${at} ${words}`).toContain(words);
      // Nothing the request carried is repeated: not the user another header named, nor any other value.
      expect(r.text, at).not.toContain('alice');
      expect(r.text, at).not.toContain('x-goog');
      expect(r.text, at).not.toMatch(/<script|<style|<img|<link|<form/i);
    }
  });

  it('keeps the JSON refusal for API clients: JSON asked for, curl\'s */*, no Accept, the dashboard\'s own calls', async () => {
    for (const headers of [{}, { accept: '*/*' }, { accept: 'application/json' }, { accept: 'application/json, text/html' }, { accept: 'text/plain' }, { accept: 'application/json', 'sec-fetch-mode': 'cors', 'x-requested-with': 'XMLHttpRequest' }] as Record<string, string>[]) {
      for (const path of ['/', '/api/v1/hooks?from=now-1h', '/metrics']) {
        const r = await raw(path, headers);
        const at = `${path} ${JSON.stringify(headers)}`;
        expect(r.status, at).toBe(401);
        expect(r.headers.get('content-type'), at).toBe('application/json; charset=utf-8');
        expect(r.headers.get('www-authenticate'), at).toBe(CHALLENGE);
        expect(JSON.parse(r.text), at).toEqual({ error: { code: 'unauthorized', message: 'authentication required: no x-forwarded-user header (sign in through the reverse proxy, which sets it)' } });
      }
    }
  });

  it('serves the dashboard to a navigation that came through the proxy', async () => {
    const r = await raw('/', { ...NAVIGATION, 'x-forwarded-user': 'alice@example.com' });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
  });
});
