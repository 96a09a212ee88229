/**
 * What a web page in a team member's browser can make it send to hookwatch. Refused: state-changing API requests
 * that a browser sends on behalf of another site (CSRF), and any request to a name rebound to 127.0.0.1 (DNS
 * rebinding, allowKnownHosts below, with net/allowed-hosts.ts).
 *
 * CSRF: a page on any site can make a team member's browser POST text/plain to http://127.0.0.1:9318 without a
 * CORS preflight; browsers then mark the request with Origin and Sec-Fetch-Site, which this checks. Clients that
 * are not browsers (curl, scripts) send neither and are unaffected; reads are not refused by this check.
 */
import type { NextFunction, Request, Response } from 'express';
import { OWN_ANSWER_HEADER } from '../../../shared/src/api.ts';
import { hostCheck, hostOf, requestHost, type AllowedHostsOptions } from '../net/allowed-hosts.ts';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface SameOriginOptions {
  /** alerting.externalUrl: the dashboard's public URL, whose origin is allowed behind a reverse proxy. */
  externalUrl?: string;
}

/** Express middleware: 403 for a cross-site POST, PUT, PATCH or DELETE. */
export function rejectCrossSiteWrites(opts: SameOriginOptions = {}): (req: Request, res: Response, next: NextFunction) => void {
  const external = opts.externalUrl ? hostOf(opts.externalUrl) : undefined;
  return (req, res, next) => {
    if (SAFE.has(req.method)) {
      next();
      return;
    }
    const site = req.headers['sec-fetch-site'];
    const origin = req.headers.origin;
    let refused = site !== undefined && site !== 'same-origin' && site !== 'none';
    if (!refused && origin !== undefined) {
      const from = hostOf(origin);
      // X-Forwarded-Host cannot come from a cross-site simple request (a custom header forces a preflight).
      const allowed = [requestHost(req), req.headers['x-forwarded-host'], external].filter((h): h is string => typeof h === 'string').map((h) => h.toLowerCase());
      refused = from === undefined || !allowed.includes(from);
    }
    if (refused) {
      res.status(403).json({ error: { code: 'forbidden', message: 'cross-site request refused: write requests must come from the hookwatch dashboard itself or a client without an Origin header' } });
      return;
    }
    next();
  };
}

/**
 * Headers on every answer of the HTTP port, errors included, those written before the app sees a request too
 * (hardeningHeaders), so a browser neither keeps nor reinterprets what the API says: hook names, session and user
 * ids stay out of the browser's disk cache and shared caches (`no-store`), JSON is never sniffed into a script or a
 * page (`nosniff`, a CSP that allows nothing), and no other site frames it (clickjacking); over https, a browser is
 * told to come back over https only (HSTS). The dashboard's routes set their own Content-Security-Policy and
 * Cache-Control over these. And hookwatch's mark (OWN_ANSWER_HEADER), by which the dashboard tells a refusal of
 * hookwatch's from one of a sign-in proxy's in front of it.
 */
export const API_CONTENT_SECURITY_POLICY = "default-src 'none'; frame-ancestors 'none'";

/**
 * The headers browserHardening sets, by name: those of the answers written before the app sees a request (the HTTP
 * parser's refusals, net/parser-refusals.ts; Node's server's, net/server-refusals.ts) are the same. Without
 * `hstsMaxAgeSeconds`, no Strict-Transport-Security: the 400 to plain HTTP under http.tls (net/plain-http-on-tls.ts)
 * goes over plain http, where a browser ignores it.
 */
export function hardeningHeaders(opts: { hstsMaxAgeSeconds?: number } = {}): Record<string, string> {
  // Over https (http.tls) only, where a browser heeds it (http.tls.hstsMaxAge): every visit to this host name then
  // goes over https, never plain http that anyone on the path could read or change. Not its subdomains, which may
  // serve other things.
  return {
    ...(opts.hstsMaxAgeSeconds === undefined ? {} : { 'Strict-Transport-Security': `max-age=${opts.hstsMaxAgeSeconds}` }),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Content-Security-Policy': API_CONTENT_SECURITY_POLICY,
    'Referrer-Policy': 'no-referrer',
    [OWN_ANSWER_HEADER]: '1',
  };
}

export function browserHardening(opts: { hstsMaxAgeSeconds?: number } = {}): (req: Request, res: Response, next: NextFunction) => void {
  const headers = Object.entries(hardeningHeaders(opts));
  return (_req, res, next) => {
    for (const [name, value] of headers) res.setHeader(name, value);
    next();
  };
}

/**
 * hostCheck as Express middleware: 403 with the refusal. Express serves an absolute-form target
 * (`GET http://host/api/v1/hooks`) as its path, so the host checked is the target's then (requestHost).
 */
export function allowKnownHosts(opts: AllowedHostsOptions): (req: Request, res: Response, next: NextFunction) => void {
  const check = hostCheck(opts);
  return (req, res, next) => {
    const refusal = check(requestHost(req));
    if (refusal === undefined) next();
    else res.status(403).json({ error: { code: 'forbidden', message: refusal } });
  };
}
