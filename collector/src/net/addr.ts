/** Listen addresses as the settings spell them (`host:port`, `[::1]:port`, `:port`). */
import { isIP } from 'node:net';
import { hostname } from 'node:os';

/** Splits `host:port` / `[::1]:port` into parts for net.listen; an empty host listens on every interface. */
export function splitAddr(addr: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(addr);
  if (!m) throw new Error(`not host:port: ${addr}`);
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port: Number(m[3]) };
}

/** Whether a listen address is reachable from this machine only (127.0.0.0/8, ::1, localhost). */
export function isLoopbackAddr(addr: string): boolean {
  const { host } = splitAddr(addr);
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

/** Whether a host listens on every interface: empty, 0.0.0.0 or the IPv6 unspecified address (`::`). */
function isWildcardHost(host: string): boolean {
  return host === '' || host === '0.0.0.0' || (isIP(host) === 6 && /^[0:]+$/.test(host));
}

/**
 * The host part of the URL a person opens to reach a listen address: its host as written (an IPv6 address in
 * brackets), or for a wildcard address the machine's name (`hostname`), as Alertmanager and Prometheus default
 * their external URL to.
 */
export function reachableHost(addr: string, machine: () => string = hostname): string {
  const { host } = splitAddr(addr);
  const name = isWildcardHost(host) ? machine() : host;
  return name.includes(':') ? `[${name}]` : name;
}

/**
 * The URL a person opens to reach a listen address: `http://<reachableHost>:<port>` (`https://` when the port
 * speaks TLS), with `boundPort` for an address that asks for any free port (`:0`). Empty while that port is not
 * known yet.
 */
export function reachableUrl(addr: string, opts: { boundPort?: number; tls?: boolean; machine?: () => string } = {}): string {
  const port = splitAddr(addr).port || opts.boundPort;
  return port ? `${opts.tls ? 'https' : 'http'}://${reachableHost(addr, opts.machine)}:${port}` : '';
}
