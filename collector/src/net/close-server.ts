/**
 * Stops an HTTP server the way a graceful shutdown needs: no new connections, in-flight requests finish,
 * and kept-alive connections do not hold the process. `server.close()` alone closes only the connections
 * idle at that moment; a busy client's connection turns idle a moment later and would stay open for the
 * whole keep-alive timeout. So requests that still arrive are answered with `Connection: close`, and idle
 * connections are closed again until none is left.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

const IDLE_SWEEP_MS = 50;

/** Resolves once every connection is gone. Safe to call twice or on a server that never listened. */
export function closeServer(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  return new Promise((resolve) => {
    server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
      if (!res.headersSent) res.shouldKeepAlive = false;
    });
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
    server.close(() => {
      clearInterval(sweep);
      resolve();
    });
    server.closeIdleConnections();
  });
}
