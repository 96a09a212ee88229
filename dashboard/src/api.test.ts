import { describe, expect, it } from 'vitest';
import { signInLost, withQuery } from './api.ts';

describe('API requests', () => {
  it('send a filter on the empty value (the events without the attribute) and leave out the parameters not given', () => {
    expect(withQuery('/api/v1/hooks/0123456789abcdef', { from: 'now-24h', to: 'now', team: '', cursor: undefined })).toBe('/api/v1/hooks/0123456789abcdef?from=now-24h&to=now&team=');
    expect(withQuery('/api/v1/dimensions')).toBe('/api/v1/dimensions');
  });
});

describe('an answer a sign-in proxy gave in place of hookwatch', () => {
  const answer = (status: number, type: string | null, body = ''): Response => new Response(status === 204 ? null : body, { status, headers: type ? { 'content-type': type } : {} });
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

  it('reads hookwatch\'s own 401 as its sign-in, and leaves its other answers and a gateway\'s error page as they are', () => {
    expect(lost(answer(401, 'application/json; charset=utf-8', '{"error":{}}'))).toEqual([401, 'hookwatch asks for credentials again; reload the page to sign in', 'hookwatch']);
    expect(lost(answer(200, 'application/json', '{}'))).toBeUndefined();
    expect(lost(answer(204, null))).toBeUndefined();
    expect(lost(answer(403, 'application/json', '{"error":{}}'))).toBeUndefined();
    expect(lost(answer(502, 'text/html', '<h1>502 Bad Gateway</h1>'))).toBeUndefined();
    expect(lost(answer(503, 'application/json', '{"error":{}}'))).toBeUndefined();
    expect(lost(answer(200, 'text/plain', 'ok'))).toBeUndefined();
  });
});
