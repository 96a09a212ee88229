/** Ports for what cannot listen on port 0 and report the one it got (PostgreSQL, Alertmanager), or for nobody. */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The lowest port picked: above the registered services most machines run. */
const LOWEST = 10_000;

/**
 * The first port of the range the kernel takes the local ports of outgoing connections from (Linux's
 * ip_local_port_range), or undefined where it cannot be read or leaves no room below it.
 */
function ephemeralStart(): number | undefined {
  try {
    const start = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(start) && start > LOWEST + 1_000 ? start : undefined;
  } catch {
    return undefined;
  }
}

/** Listens on `port` of 127.0.0.1 (0: one the kernel picks) and closes again; the port, or undefined if taken. */
function tryPort(port: number): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' || err.code === 'EACCES' ? resolve(undefined) : reject(err)));
    srv.listen(port, '127.0.0.1', () => {
      const addr = srv.address();
      const got = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(got));
    });
  });
}

/**
 * A port that was free a moment ago on 127.0.0.1: nothing listens on it until something is started there. Picked
 * at random below the range outgoing connections take their local ports from: a port from that range (what
 * listening on port 0 gives) can be taken by any connection the tests open before the process meant to listen
 * there has started, which then fails with EADDRINUSE.
 */
export async function freePort(): Promise<number> {
  const start = ephemeralStart();
  const ports = start === undefined ? () => 0 : () => LOWEST + Math.floor(Math.random() * (start - LOWEST));
  for (let tries = 0; tries < 100; tries++) {
    const port = await tryPort(ports());
    if (port !== undefined) return port;
  }
  throw new Error('no free port found on 127.0.0.1');
}
