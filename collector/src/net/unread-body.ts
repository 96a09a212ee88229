/**
 * A request answered before its body was read whole (a refusal: no credentials, no such route, a method, media type
 * or Host the port does not take) has its connection closed after the answer. Node would otherwise read the rest of
 * the body and throw it away, to keep the connection alive for a next request: a client with no token could make
 * hookwatch read (and, with TLS, decrypt) as many bytes as it cares to send, until the request timeout, and again
 * on every connection it opens. An answer to a request whose body was read, or that has none, keeps the connection.
 *
 * The check sits on a prototype every answer inherits, never on each answer: a writeHead replaced per request made
 * Node's HTTP path cost ~1.5 ms more CPU per 512-record OTLP request.
 */
import { ServerResponse, type IncomingMessage, type ServerOptions } from 'node:http';

/** True while body bytes the request declared have not all arrived. */
function bodyUnread(req: IncomingMessage): boolean {
  if (req.complete) return false;
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/**
 * Node's writeHead, after marking the connection to close when the request's body is unread. Every answer passes
 * here, Express's and res.end()'s implicit headers included; Node reads shouldKeepAlive as it writes the headers.
 */
function writeHead(this: ServerResponse, ...args: unknown[]): ServerResponse {
  if (bodyUnread(this.req)) this.shouldKeepAlive = false;
  return Reflect.apply(ServerResponse.prototype.writeHead, this, args) as ServerResponse;
}

class ClosingAfterUnreadBody<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {}
ClosingAfterUnreadBody.prototype.writeHead = writeHead as ServerResponse['writeHead'];

/** Options of a Node server (HTTP or HTTPS) whose answers close their connection when the request's body is unread. */
export const CLOSE_AFTER_UNREAD_BODIES: Pick<ServerOptions, 'ServerResponse'> = { ServerResponse: ClosingAfterUnreadBody };

/**
 * The same for an Express app's answers: Express gives each answer the app's own prototype (`app.response`, over
 * Node's ServerResponse), so the server's response class does not reach them. Call it when the app is made.
 */
export function closeAfterUnreadBodies<A extends { response: ServerResponse }>(app: A): A {
  app.response.writeHead = writeHead as ServerResponse['writeHead'];
  return app;
}
