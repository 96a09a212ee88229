/**
 * Stops an HTTP server the way a graceful shutdown needs: no new connections, in-flight requests finish,
 * and kept-alive connections do not hold the process. `server.close()` alone closes only the connections
 * idle at that moment; a busy client's connection turns idle a moment later and would stay open for the
 * whole keep-alive timeout. So requests that still arrive are answered with `Connection: close`, and idle
 * connections are closed again until none is left.
 *
 * Node stops enforcing its header and request timeouts once close() is called, and closeIdleConnections() leaves
 * alone a connection that has not sent a request yet (a browser's speculative preconnect, a load balancer's TCP
 * check, a TLS handshake never finished): each would hold the stop for as long as its client keeps it open. A
 * server given to trackConnections() when it is made has those closed too, once they have been open
 * NEW_CONNECTION_GRACE_MS without a request, as Go's http.Server.Shutdown treats a new connection: a request whose
 * first bytes are still on their way gets that long to arrive.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

const IDLE_SWEEP_MS = 50;
/** How long a connection may stay open without a request before a stop closes it. */
export const NEW_CONNECTION_GRACE_MS = 5000;

/** A server's TCP connections that have not had a request yet, by peer, with when each opened. */
interface Connections {
  fresh: Map<string, { socket: Socket; openedMs: number }>;
}

const tracked = new WeakMap<Server, Connections>();

/** One TCP connection's name on a listener: the peer's address and port (a TLS socket shares its TCP peer). */
const peer = (s: Socket): string => `${s.remoteAddress ?? ''}|${s.remotePort ?? ''}`;

/**
 * Follows a server's connections (HTTP or HTTPS) from now on, so that closeServer can close the ones that never
 * sent a request; call it when the server is made, before it listens. Returns the server. (A connection that has
 * had one is kept alive or idle, which closeIdleConnections() already closes.)
 */
export function trackConnections<S extends Server>(server: S): S {
  const c: Connections = { fresh: new Map() };
  tracked.set(server, c);
  // 'connection' is the TCP socket, for HTTPS too (before its handshake): one that never finishes one is closed.
  server.on('connection', (socket: Socket) => {
    const key = peer(socket);
    c.fresh.set(key, { socket, openedMs: performance.now() });
    socket.once('close', () => c.fresh.delete(key));
  });
  server.on('request', (req: IncomingMessage) => {
    c.fresh.delete(peer(req.socket));
  });
  return server;
}

/** Resolves once every connection is gone. Safe to call twice or on a server that never listened. */
export function closeServer(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  const connections = tracked.get(server);
  const closeIdle = (): void => {
    server.closeIdleConnections();
    if (!connections) return;
    const before = performance.now() - NEW_CONNECTION_GRACE_MS;
    for (const { socket, openedMs } of connections.fresh.values()) if (openedMs <= before) socket.destroy();
  };
  return new Promise((resolve) => {
    server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
      if (!res.headersSent) res.shouldKeepAlive = false;
    });
    const sweep = setInterval(closeIdle, IDLE_SWEEP_MS);
    server.close(() => {
      clearInterval(sweep);
      resolve();
    });
    closeIdle();
  });
}
