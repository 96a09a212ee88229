/**
 * A request answered before its body was read whole (a refusal: no credentials, no such route, a method, media type
 * or Host the port does not take) has its connection closed after the answer. Node would otherwise read the rest of
 * the body and throw it away, to keep the connection alive for a next request: a client with no token could make
 * hookwatch read (and, with TLS, decrypt) as many bytes as it cares to send, until the request timeout, and again
 * on every connection it opens. An answer to a request whose body was read, or that has none, keeps the connection.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/** True while body bytes the request declared have not all arrived. */
function bodyUnread(req: IncomingMessage): boolean {
  if (req.complete) return false;
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/**
 * Makes `server` (HTTP or HTTPS) answer `Connection: close`, and close the connection once the answer is sent,
 * whenever it answers a request whose body has not arrived whole. Call it when the server is made; returns it.
 */
export function closeAfterUnreadBodies<S extends Server>(server: S): S {
  // First, before the listener that answers: a refusal may be written before that listener returns.
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const writeHead = res.writeHead;
    // Every answer passes here, Express's and res.end()'s implicit headers included; Node reads shouldKeepAlive as
    // it writes the headers.
    res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
      if (bodyUnread(req)) this.shouldKeepAlive = false;
      return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
    } as ServerResponse['writeHead'];
  });
  return server;
}
