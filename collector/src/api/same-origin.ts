/**
 * What a web page in a team member's browser can make it send to hookwatch. Refused: state-changing API requests
 * that a browser sends on behalf of another site (CSRF), and any request to a name rebound to 127.0.0.1 (DNS
 * rebinding, allowKnownHosts below).
 *
 * CSRF: a page on any site can make a team member's browser POST text/plain to http://127.0.0.1:9318 without a
 * CORS preflight; browsers then mark the request with Origin and Sec-Fetch-Site, which this checks. Clients that
 * are not browsers (curl, scripts) send neither and are unaffected; reads are not refused by this check.
 */
import { isIP } from 'node:net';
import type { NextFunction, Request, Response } from 'express';
import { isLoopbackAddr } from '../net/addr.ts';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface SameOriginOptions {
  /** alerting.externalUrl: the dashboard's public URL, whose origin is allowed behind a reverse proxy. */
  externalUrl?: string;
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).host.toLowerCase();
  } catch {
    return undefined;
  }
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
      const allowed = [req.headers.host, req.headers['x-forwarded-host'], external].filter((h): h is string => typeof h === 'string').map((h) => h.toLowerCase());
      refused = from === undefined || !allowed.includes(from);
    }
    if (refused) {
      res.status(403).json({ error: { code: 'forbidden', message: 'cross-site request refused: write requests must come from the hookwatch dashboard itself or a client without an Origin header' } });
      return;
    }
    next();
  };
}

export interface AllowedHostsOptions {
  /** http.addr: while it is a loopback address, only known names are answered. */
  addr: string;
  /** http.allowedHosts (lower case); `*` allows any. */
  allowedHosts: readonly string[];
  /** alerting.externalUrl: its host is always allowed. */
  externalUrl?: string;
}

/** The name in a Host header, without its port; an IPv6 literal keeps its brackets off too. */
function hostName(host: string): string {
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(1, h.indexOf(']') === -1 ? undefined : h.indexOf(']'));
  const colon = h.lastIndexOf(':');
  return colon === -1 ? h : h.slice(0, colon);
}

/**
 * Express middleware against DNS rebinding: a page on evil.example whose name is made to resolve to 127.0.0.1
 * is same-origin with hookwatch in the victim's browser, so Origin checks pass and it can read the API and post
 * silences. Its requests still carry Host: evil.example. An IP address, localhost and the listed names are
 * answered; any other Host gets 403 naming the setting. Applied while hookwatch listens on loopback only (what
 * rebinding reaches), or whenever http.allowedHosts lists names. A request without Host (not a browser) passes.
 */
export function allowKnownHosts(opts: AllowedHostsOptions): (req: Request, res: Response, next: NextFunction) => void {
  const listed = new Set(opts.allowedHosts);
  const external = opts.externalUrl ? hostOf(opts.externalUrl) : undefined;
  if (external) listed.add(hostName(external));
  const enforce = !listed.has('*') && (isLoopbackAddr(opts.addr) || opts.allowedHosts.length > 0);
  return (req, res, next) => {
    const host = req.headers.host;
    if (!enforce || host === undefined) {
      next();
      return;
    }
    const name = hostName(host);
    if (isIP(name) !== 0 || name === 'localhost' || name.endsWith('.localhost') || listed.has(name)) {
      next();
      return;
    }
    res.status(403).json({ error: { code: 'forbidden', message: `host ${JSON.stringify(name.slice(0, 253))} is not allowed: add it to http.allowedHosts to reach hookwatch by that name` } });
  };
}
