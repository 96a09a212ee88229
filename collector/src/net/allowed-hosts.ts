/**
 * Which names (Host headers) a port answers to, against DNS rebinding: shared by the HTTP port (the API and the
 * dashboard) and the OTLP/HTTP receiver.
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { isLoopbackAddr } from './addr.ts';

/** The host (and port) of a URL, lower case; undefined when it does not parse. */
export function hostOf(url: string): string | undefined {
  try {
    return new URL(url).host.toLowerCase();
  } catch {
    return undefined;
  }
}

export interface AllowedHostsOptions {
  /** The port's listen address: while it is a loopback address, only known names are answered. */
  addr: string;
  /** http.allowedHosts (lower case); `*` allows any. */
  allowedHosts: readonly string[];
  /** alerting.externalUrl: its host is always allowed. */
  externalUrl?: string;
}

/**
 * The name in a Host header, without its port; an IPv6 literal keeps its brackets off too. A name written absolute
 * (`localhost.`, `hookwatch.internal.`: a client given it so, as in-cluster clients often are, to skip the DNS
 * search list, sends it so) is the same DNS name: its one trailing dot goes.
 */
function hostName(host: string): string {
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(1, h.indexOf(']') === -1 ? undefined : h.indexOf(']'));
  const colon = h.lastIndexOf(':');
  const name = colon === -1 ? h : h.slice(0, colon);
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** A reg-name (RFC 3986 section 3.2.2): letters, digits, `-._~`, sub-delimiters and percent-escapes; an IPv4 address is one. */
const REG_NAME = /^(?:[a-z0-9\-._~!$&'()*+,;=]|%[0-9a-f]{2})*$/i;
/** IPvFuture (RFC 3986 section 3.2.2), inside brackets as an IPv6 address is. */
const IP_FUTURE = /^v[0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+$/i;

/**
 * Whether a Host header's value, or the authority of an absolute-form target, is `uri-host [ ":" port ]` (RFC 9112
 * section 3.2): a name or IPv4 address, or an IPv6 address in brackets, then digits after a colon. A user before
 * `@`, a path, a space or an unclosed bracket is none: the request is answered 400. Host may be empty (a URI with no
 * authority); an http URL may not (RFC 9110 section 4.2.1), so an absolute-form target's host is `required`.
 */
export function isHostAndPort(value: string, required = false): boolean {
  const m = /^(\[[^\]]*\]|[^:[\]]*)(?::[0-9]*)?$/.exec(value);
  const host = m?.[1];
  if (host === undefined || (required && host === '')) return false;
  if (!host.startsWith('[')) return REG_NAME.test(host);
  const literal = host.slice(1, -1);
  return isIP(literal) === 6 || IP_FUTURE.test(literal);
}

/** The scheme and authority an absolute-form request target begins with (`http://host:4318`), of any scheme. */
const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i;

/**
 * The authority of an absolute-form request target (`http://host:4318/v1/logs`, which a client sends a proxy), of
 * any scheme, as Express serves any; undefined for a path (origin form) or `*`.
 */
export function targetAuthority(url: string): string | undefined {
  return ABSOLUTE_FORM.exec(url)?.[1];
}

/**
 * The path a request target names: an absolute-form target's after its scheme and authority (RFC 9112 section
 * 3.2.2), as Express reads it on the HTTP port; the query left out.
 */
export function targetPath(url: string): string {
  const origin = ABSOLUTE_FORM.exec(url);
  return (origin ? url.slice(origin[0].length) : url).split('?')[0] || '/';
}

/**
 * The host a request names: an absolute-form target's, for which a server ignores Host (RFC 9112 section 3.2.2),
 * else its Host header.
 */
export function requestHost(req: Pick<IncomingMessage, 'url' | 'headers'>): string | undefined {
  return targetAuthority(req.url ?? '') ?? req.headers.host;
}

/**
 * Against DNS rebinding: a page on evil.example whose name is made to resolve to 127.0.0.1 is same-origin with
 * hookwatch in the victim's browser, so Origin checks pass and it can read the API, post silences or send
 * telemetry. Its requests still carry Host: evil.example. Returns the refusal for the host a request names
 * (requestHost: its Host header, or its absolute-form target's; undefined: let it in): an IP address, localhost and
 * the listed names pass. Applied while the port listens on loopback only (what rebinding reaches), or whenever
 * http.allowedHosts lists names. A request without Host (not a browser) passes.
 */
export function hostCheck(opts: AllowedHostsOptions): (host: string | undefined) => string | undefined {
  const listed = new Set(opts.allowedHosts.map(hostName));
  const external = opts.externalUrl ? hostOf(opts.externalUrl) : undefined;
  if (external) listed.add(hostName(external));
  const enforce = !listed.has('*') && (isLoopbackAddr(opts.addr) || opts.allowedHosts.length > 0);
  return (host) => {
    if (!enforce || host === undefined) return undefined;
    const name = hostName(host);
    if (isIP(name) !== 0 || name === 'localhost' || name.endsWith('.localhost') || listed.has(name)) return undefined;
    return `host ${JSON.stringify(name.slice(0, 253))} is not allowed: add it to http.allowedHosts to reach hookwatch by that name`;
  };
}

