/** Listen addresses as the settings spell them (`host:port`, `[::1]:port`, `:port`). */
import { isIP } from 'node:net';

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
