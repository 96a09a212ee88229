/**
 * Authentication for the HTTP port (dashboard, API, /metrics, /readyz). Mounted first on the app, so no route
 * answers before it; only GET /healthz stays open, for liveness probes that carry no credentials.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { HttpAuthConfig } from './settings.ts';
import { isNavigation } from '../net/navigation.ts';
import { authCredentials, onlyAuthorization, sameSecret, secretDigest } from '../net/secret.ts';

/**
 * A request the dashboard's page sent itself (it marks each with `X-Requested-With: XMLHttpRequest`, as jQuery and
 * Spring Security's clients do). A `Basic` challenge would make the browser hold it behind its sign-in prompt, which
 * nobody answers on a screen left open, so such a 401 gets `xBasic`, a scheme browsers do not prompt for: the page
 * reads it at once, says it is signed out and offers to reload, and the reload is challenged with `Basic`.
 */
function fromPage(req: Request): boolean {
  const v = req.headers['x-requested-with'];
  return typeof v === 'string' && v.toLowerCase() === 'xmlhttprequest';
}

/** A page load in a browser (net/navigation.ts). */
function navigation(req: Request): boolean {
  return isNavigation(req.headers);
}

/**
 * What a browser opened on a hookwatch in bearer mode shows: it cannot send the token by itself, so the dashboard
 * needs another mode. Plain HTML under the API's Content-Security-Policy, which allows no script, style or image.
 */
const BEARER_PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>hookwatch: the dashboard needs another sign-in mode</title></head>
<body>
<h1>The dashboard needs another sign-in mode</h1>
<p>This hookwatch runs with <code>http.auth.mode: bearer</code> (<code>HOOKWATCH_HTTP_AUTH_MODE=bearer</code>): every request needs <code>Authorization: Bearer &lt;token&gt;</code>, which scripts and Prometheus send and a browser cannot.</p>
<p>To use the dashboard in a browser, run hookwatch with <code>HOOKWATCH_HTTP_AUTH_MODE=basic</code> (the browser asks for a user name and password) or <code>proxy-header</code> behind a sign-in proxy (oauth2-proxy, Pomerium, Cloudflare Access, an ingress with <code>auth-url</code>). See <code>docs/deploy.md</code>, sections "Authentication" and "The dashboard behind a sign-in proxy".</p>
</body>
</html>
`;

/**
 * What a browser that reached a hookwatch in proxy-header mode without the proxy's header shows: someone who opened
 * hookwatch's own address rather than the proxy's, or a proxy that passes the user under another header. It names
 * the header hookwatch reads, never a value the request carried; plain HTML as BEARER_PAGE is. `header` is an HTTP
 * header name (settings.ts), whose characters are text in HTML but for `&`.
 */
function proxyHeaderPage(header: string, what: string): string {
  const text = (v: string): string => v.replace(/&/g, '&amp;');
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>hookwatch: sign in through the proxy in front of it</title></head>
<body>
<h1>Sign in through the proxy in front of hookwatch</h1>
<p>This hookwatch runs with <code>http.auth.mode: proxy-header</code> (<code>HOOKWATCH_HTTP_AUTH_MODE=proxy-header</code>): it takes only requests that come through the sign-in proxy in front of it (oauth2-proxy, Pomerium, Cloudflare Access, an ingress with <code>auth-url</code>), which names the signed-in user in the <code>${text(header)}</code> header. This request came with ${text(what)}.</p>
<p>Open the dashboard at the proxy's address, the address your team signs in at, not hookwatch's own. Came through the proxy, the proxy does not set <code>${text(header)}</code>: have it set that header, or set <code>http.auth.proxyHeader</code> (<code>HOOKWATCH_HTTP_AUTH_PROXY_HEADER</code>) to the one it sets (oauth2-proxy's <code>x-auth-request-user</code>, say). See <code>docs/deploy.md</code>, sections "Authentication" and "The dashboard behind a sign-in proxy".</p>
</body>
</html>
`;
}

/** The path of /healthz as Express's router (not strict, not case sensitive) routes it. */
const LIVENESS_PATH = /^\/healthz\/?$/i;

/** Express middleware enforcing `http.auth.*`; a pass-through when the mode is none. */
export function requireHttpAuth(auth: HttpAuthConfig): RequestHandler {
  if (auth.mode === 'none') return (_req, _res, next) => next();
  const basicDigest = secretDigest(`${auth.username}:${auth.password}`);
  const tokenDigest = secretDigest(auth.token);

  const ok = (req: Request): boolean => {
    switch (auth.mode) {
      case 'basic': {
        const b64 = authCredentials(onlyAuthorization(req), 'basic');
        // Compare even when absent, so a missing header costs the same as a wrong one.
        return sameSecret(b64 === undefined ? '' : Buffer.from(b64, 'base64').toString('utf8'), basicDigest) && b64 !== undefined;
      }
      case 'bearer': {
        const token = authCredentials(onlyAuthorization(req), 'bearer');
        return sameSecret(token ?? '', tokenDigest) && token !== undefined && token !== '';
      }
      default: {
        // proxy-header: the proxy in front authenticated the user; hookwatch only checks it said so.
        const v = req.headers[auth.proxyHeader];
        const value = Array.isArray(v) ? v.join(',') : v;
        return value !== undefined && value.trim() !== '';
      }
    }
  };

  return (req: Request, res: Response, next: NextFunction) => {
    // Exactly the liveness route: it says only that the process answers. Named as the router matches it (a
    // trailing slash, any case), or a probe written `/healthz/` would get 401 where it gets 200 without auth.
    if ((req.method === 'GET' || req.method === 'HEAD') && LIVENESS_PATH.test(req.path)) return next();
    if (ok(req)) return next();
    res.setHeader('Cache-Control', 'no-store');
    if (auth.mode === 'proxy-header') {
      // No credentials a client could send hookwatch: the proxy signs people in and names them in this header.
      // Every 401 still carries a challenge (RFC 9110 §11.6.1); this one names that scheme and the header, and no
      // browser prompts for it.
      res.setHeader('WWW-Authenticate', `ProxyHeader realm="hookwatch", header="${auth.proxyHeader}"`);
      const missing = req.headers[auth.proxyHeader] === undefined;
      if (navigation(req)) {
        res.status(401).type('html').send(proxyHeaderPage(auth.proxyHeader, missing ? `no ${auth.proxyHeader} header` : `an empty ${auth.proxyHeader} header`));
        return;
      }
      const what = missing ? `no ${auth.proxyHeader} header` : `the ${auth.proxyHeader} header is empty`;
      res.status(401).json({ error: { code: 'unauthorized', message: `authentication required: ${what} (sign in through the reverse proxy, which sets it)` } });
      return;
    }
    // Why, without a word of what was sent: none, several, another scheme, or credentials that do not match.
    const scheme = auth.mode === 'basic' ? 'Basic' : 'Bearer';
    const sent = req.rawHeaders.filter((_v, i) => i % 2 === 0 && req.rawHeaders[i]?.toLowerCase() === 'authorization').length;
    const rejected = sent === 1 && authCredentials(onlyAuthorization(req), scheme.toLowerCase()) !== undefined;
    if (auth.mode === 'basic') res.setHeader('WWW-Authenticate', fromPage(req) ? 'xBasic realm="hookwatch"' : 'Basic realm="hookwatch", charset="UTF-8"');
    // RFC 6750 §3.1: a token that was sent but is not accepted is invalid_token.
    else res.setHeader('WWW-Authenticate', rejected ? 'Bearer realm="hookwatch", error="invalid_token"' : 'Bearer realm="hookwatch"');
    const message = sent > 1 ? 'authentication required: send Authorization once'
      : rejected ? `the ${scheme} credentials sent were not accepted`
        : `authentication required: send Authorization: ${scheme} ...`;
    if (auth.mode === 'bearer' && navigation(req)) {
      res.status(401).type('html').send(BEARER_PAGE);
      return;
    }
    res.status(401).json({ error: { code: 'unauthorized', message } });
  };
}
