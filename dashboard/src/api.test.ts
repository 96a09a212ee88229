import { describe, expect, it } from 'vitest';
import { OWN_ANSWER_HEADER } from '../../shared/src/api.ts';
import { signInLost, withQuery } from './api.ts';

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
