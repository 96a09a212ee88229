import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { OWN_ANSWER_HEADER } from '../../shared/src/api.ts';
import { ApiFailure, api, signInLost, withQuery } from './api.ts';
import { refusedRequest } from './shell-state.ts';

describe('API requests', () => {
  it('send a filter on the empty value (the events without the attribute) and leave out the parameters not given', () => {
    expect(withQuery('/api/v1/hooks/0123456789abcdef', { from: 'now-24h', to: 'now', team: '', cursor: undefined })).toBe('/api/v1/hooks/0123456789abcdef?from=now-24h&to=now&team=');
    expect(withQuery('/api/v1/dimensions')).toBe('/api/v1/dimensions');
  });
});

describe('an answer a sign-in proxy gave in place of hookwatch', () => {
  const answer = (status: number, type: string | null, body = '', headers: Record<string, string> = {}): Response =>
    new Response(status === 204 ? null : body, { status, headers: { ...(type ? { 'content-type': type } : {}), ...headers } });
  /** An answer of hookwatch's own, with its mark. */
  const own = (status: number, type: string | null, body = ''): Response => answer(status, type, body, { [OWN_ANSWER_HEADER]: '1' });
  const lost = (res: Response): [number, string, string | undefined] | undefined => {
    const f = signInLost(res);
    return f && [f.status, f.message, f.signIn];
  };

  it('reads a login page, a 401 not in hookwatch\'s JSON and a 403 web page as signed out by the proxy', () => {
    expect(lost(answer(200, 'text/html; charset=utf-8', '<html>Sign in</html>'))).toEqual([200,
      'the sign-in session has expired (hookwatch\'s address answered with a web page, most likely a login page, instead of hookwatch\'s data); reload the page to sign in', 'proxy']);
    expect(lost(answer(401, 'text/html', '<h1>401</h1>'))).toEqual([401, 'the sign-in session has expired (the server in front of hookwatch answered 401 with a web page); reload the page to sign in', 'proxy']);
    expect(lost(answer(401, 'text/plain', 'Unauthorized'))).toEqual([401, 'the sign-in session has expired (the server in front of hookwatch answered 401); reload the page to sign in', 'proxy']);
    expect(lost(answer(401, null))).toEqual([401, 'the sign-in session has expired (the server in front of hookwatch answered 401); reload the page to sign in', 'proxy']);
    expect(lost(answer(403, 'application/xhtml+xml', '<html/>'))?.[2]).toBe('proxy');
  });

  it('reads a 401 or 403 in JSON without hookwatch\'s mark as the proxy\'s, whatever its body', () => {
    expect(lost(answer(401, 'application/json', '{"message":"Unauthorized"}'))).toEqual([401, 'the sign-in session has expired (the server in front of hookwatch answered 401); reload the page to sign in', 'proxy']);
    expect(lost(answer(401, 'application/json; charset=utf-8', '{"error":{"code":"unauthorized","message":"authentication required"}}'))?.[2]).toBe('proxy');
    expect(lost(answer(403, 'application/json', '{"message":"Forbidden"}'))).toEqual([403,
      'the server in front of hookwatch refused the request (403): the sign-in session may have expired, or this account is not let in; reload the page to sign in', 'proxy']);
    // hookwatch's mark on an answer that is not JSON: no answer of hookwatch's.
    expect(lost(own(401, 'text/html', '<h1>401</h1>'))?.[2]).toBe('proxy');
  });

  it('reads hookwatch\'s own 401 as its sign-in, and leaves its other answers and a gateway\'s error page as they are', () => {
    expect(lost(own(401, 'application/json; charset=utf-8', '{"error":{}}'))).toEqual([401, 'hookwatch asks for credentials again; reload the page to sign in', 'hookwatch']);
    expect(lost(answer(200, 'application/json', '{}'))).toBeUndefined();
    expect(lost(answer(204, null))).toBeUndefined();
    expect(lost(own(403, 'application/json', '{"error":{}}'))).toBeUndefined();
    expect(lost(answer(502, 'text/html', '<h1>502 Bad Gateway</h1>'))).toBeUndefined();
    expect(lost(answer(503, 'application/json', '{"error":{}}'))).toBeUndefined();
    expect(lost(answer(200, 'text/plain', 'ok'))).toBeUndefined();
  });
});

describe('an answer whose body is not JSON', () => {
  // A server on a real socket; the page's calls name a path, which is asked of it as a browser asks the page's origin.
  let server: Server;
  let base = '';
  let answer: (res: ServerResponse) => void = (res) => void res.end();
  const fetchFromPage = globalThis.fetch;

  beforeAll(async () => {
    server = createServer((_req, res) => answer(res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  beforeEach(() => {
    vi.stubGlobal('fetch', (input: string, init?: RequestInit) => fetchFromPage(new URL(input, base), init));
  });
  afterEach(() => {
    vi.unstubAllGlobals();
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  /** How the page's ask for the dashboard hookwatch serves failed: status, message, and whether the body was not JSON. */
  const failed = async (): Promise<[number, string, boolean]> => {
    const err: unknown = await api.build().then(() => undefined, (e: unknown) => e);
    if (!(err instanceof ApiFailure)) throw new Error(`not an ApiFailure: ${String(err)}`);
    return [err.status, err.message, err.notJson];
  };

  it('is marked not JSON: a gateway\'s error page, plain text, JSON that does not parse', async () => {
    answer = (res) => void res.writeHead(502, { 'content-type': 'text/html' }).end('<html><body><center><h1>502 Bad Gateway</h1></center></body></html>');
    expect(await failed()).toEqual([502, 'GET /dashboard/build answered 502 with a body that is not JSON', true]);
    answer = (res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    expect(await failed()).toEqual([200, 'GET /dashboard/build answered 200 with a body that is not JSON', true]);
    answer = (res) => void res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":');
    expect(await failed()).toEqual([503, 'GET /dashboard/build answered 503 with a body that is not JSON', true]);
  });

  it('is not set for a refusal in JSON, whose message is read, nor for a sign-in proxy\'s page, which is signed out', async () => {
    answer = (res) => void res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' }).end('{"error":{"code":"not_found","message":"no such API route"}}');
    expect(await failed()).toEqual([404, 'no such API route', false]);
    answer = (res) => void res.writeHead(500, { 'content-type': 'application/json' }).end('{}');
    expect(await failed()).toEqual([500, 'GET /dashboard/build answered 500', false]);
    answer = (res) => void res.writeHead(200, { 'content-type': 'text/html' }).end('<html>Sign in</html>');
    const err: unknown = await api.build().then(() => undefined, (e: unknown) => e);
    expect(err instanceof ApiFailure && [err.status, err.signedOut, err.notJson]).toEqual([200, true, false]);
  });

  it('reads a 400 in hookwatch\'s own JSON as a refusal not to ask again, and a gateway\'s JSON 400 as one that may pass', async () => {
    const refusal = '{"error":{"code":"bad_parameter","message":"no dimension repo","parameter":"f.repo"}}';
    const refused = async (headers: Record<string, string>): Promise<[number, string | undefined, boolean]> => {
      answer = (res) => void res.writeHead(400, { 'content-type': 'application/json', ...headers }).end(refusal);
      const err: unknown = await api.build().then(() => undefined, (e: unknown) => e);
      if (!(err instanceof ApiFailure)) throw new Error(`not an ApiFailure: ${String(err)}`);
      return [err.status, err.parameter, refusedRequest(err)];
    };
    expect(await refused({ [OWN_ANSWER_HEADER]: '1' })).toEqual([400, 'f.repo', true]);
    // The same body from an API gateway or an ingress in front, without hookwatch's mark.
    expect(await refused({})).toEqual([400, 'f.repo', false]);
  });

  it('carries how long a 503 or 429 asked to wait (Retry-After, seconds or a date), and nothing for another status', async () => {
    const retryAfter = async (status: number, value: string | undefined, type = 'application/json'): Promise<number | undefined> => {
      answer = (res) => void res.writeHead(status, { 'content-type': type, ...(value === undefined ? {} : { 'retry-after': value }) }).end(type === 'application/json' ? '{"error":{"code":"unavailable","message":"busy"}}' : '<h1>busy</h1>');
      const err: unknown = await api.build().then(() => undefined, (e: unknown) => e);
      if (!(err instanceof ApiFailure)) throw new Error(`not an ApiFailure: ${String(err)}`);
      return err.retryAfterMs;
    };
    expect(await retryAfter(503, '5')).toBe(5000);
    expect(await retryAfter(429, '120')).toBe(120_000);
    // A gateway's page in hookwatch's place may say it too.
    expect(await retryAfter(503, '30', 'text/plain')).toBe(30_000);
    const inAMinute = await retryAfter(503, new Date(Date.now() + 60_000).toUTCString());
    expect(inAMinute).toBeGreaterThan(55_000);
    expect(inAMinute).toBeLessThanOrEqual(60_000);
    expect(await retryAfter(503, undefined)).toBeUndefined();
    expect(await retryAfter(503, 'soon')).toBeUndefined();
    expect(await retryAfter(500, '5')).toBeUndefined();
  });
});
