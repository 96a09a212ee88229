/**
 * Requests Node's HTTP server refuses itself, before a handler sees them, with an answer that says nothing or with
 * none: an `Expect` other than 100-continue (417, empty body), HTTP/1.1 without Host (400, empty body), CONNECT
 * (the connection closed unanswered, as a server with no 'connect' listener does). A scanner or a client taking the
 * port for a proxy sends them. Each port answers them here instead, in its own error form, saying what was wrong,
 * and counts them with its other refusals. With them, what RFC 9112 has a server refuse and Node serves: more than
 * one Host (Node reads the first), or one that is no host and port (section 3.2); one Node refuses only once it
 * has handed the request over: a Transfer-Encoding whose last coding is not chunked (section 6.1), whose body Node's
 * parser then refuses, the handler having already answered on its headers, or not yet; and a transfer coding
 * before chunked, which Node does not undo (section 6.1 has it answered 501): its body, gzipped under its chunks,
 * was handed over as it came.
 *
 * And `Expect: 100-continue` (RFC 9110 section 10.1.1): Node answers 100 Continue as soon as the headers are read,
 * so a client sent its whole body (50 MB on a Content-Length the port refuses at once) before it read the refusal.
 * The port sends 100 Continue only when the handler starts reading the body; a request refused on its headers (a
 * size over the limit, no credentials, no such route, a Content-Type or Content-Encoding not taken) gets its final
 * answer instead, and the body is never asked for.
 */
import type { IncomingMessage, RequestListener, Server, ServerOptions, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { echoed } from '../request-error.ts';
import { isHostAndPort, targetAuthority } from './allowed-hosts.ts';
import { closeAfter } from './close-after-answer.ts';
import { rawHead, refusalHeaders } from './parser-refusals.ts';

export type ServerRefusal = 'expectation_failed' | 'bad_request' | 'not_implemented' | 'connect';

export interface ServerRefusalAnswer {
  status: number;
  contentType: string;
  body: string | Buffer;
  headers?: Record<string, string>;
}

/** Options of a server whose requests without Host go to answerServerRefusals, not to Node's own empty 400. */
export const HOST_CHECKED_BY_PORT: Pick<ServerOptions, 'requireHostHeader'> = { requireHostHeader: false };

/** The transfer codings a request names, in the order they were applied, in one Transfer-Encoding header or more. */
function transferCodings(req: IncomingMessage): string[] | undefined {
  return req.headersDistinct['transfer-encoding']?.join(',').split(',').map((c) => c.trim()).filter((c) => c !== '');
}

/**
 * Why a request's framing is answered 400, undefined when it is not: a Transfer-Encoding whose last coding is not
 * chunked, or any in HTTP/1.0 (RFC 9112 section 6.1), so that the body's length cannot be known. Node's parser refuses one that names
 * chunked before another, or together with Content-Length, before the request is handed over.
 */
function framingFault(req: IncomingMessage): string | undefined {
  const codings = req.headersDistinct['transfer-encoding'];
  if (codings === undefined) return undefined;
  // Section 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing, whatever the coding.
  if (req.httpVersionMajor === 1 && req.httpVersionMinor === 0) return 'Transfer-Encoding is not part of HTTP/1.0, so the length of the body cannot be known; send Content-Length instead, or use HTTP/1.1';
  if (transferCodings(req)?.at(-1)?.toLowerCase() === 'chunked') return undefined;
  return `the Transfer-Encoding header ${echoed(codings.join(', '))} does not end with chunked, so the length of the body cannot be known; send Content-Length instead, or chunked last`;
}

/**
 * Why a request is answered 501, undefined when it is not: a transfer coding applied before chunked (gzip, chunked),
 * which the port does not undo (RFC 9112 section 6.1: a coding the server does not understand). Its framing is
 * sound, chunked coming last (framingFault), and Node's parser refuses chunked twice.
 */
function codingFault(req: IncomingMessage): string | undefined {
  const [coding] = transferCodings(req)?.slice(0, -1) ?? [];
  if (coding === undefined) return undefined;
  return `Transfer-Encoding ${echoed(coding)} is not implemented, only chunked; compress the body with Content-Encoding: gzip instead, sent with Transfer-Encoding: chunked alone or Content-Length`;
}

/**
 * Why a request's host is answered 400 (RFC 9112 section 3.2), undefined when it is not: HTTP/1.1 without Host
 * (HTTP/1.0 has none, and is served without), Host more than once (Node reads the first, a proxy in front of the port
 * may have read another), a Host that is no host and port, or an absolute-form target whose host is none (it stands
 * for Host then, section 3.2.2).
 */
function hostFault(req: IncomingMessage): string | undefined {
  const hosts = req.headersDistinct.host ?? [];
  if (hosts.length > 1) return 'the Host header is sent more than once; HTTP/1.1 allows one';
  const [host] = hosts;
  if (host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor === 1) return 'the Host header is missing; HTTP/1.1 requires it';
  if (host !== undefined && !isHostAndPort(host)) return `the Host header ${echoed(host)} is not a host name or address with an optional port`;
  const authority = targetAuthority(req.url ?? '');
  if (authority !== undefined && !isHostAndPort(authority, true)) return `the host of the request target ${echoed(authority)} is not a host name or address with an optional port`;
  return undefined;
}

/**
 * Connections a refusal closes. Node still parses and hands over a request pipelined behind the refused one, whose
 * answer can never be sent once the connection closes: a client would send it again, and it would be taken twice.
 */
const closing = new WeakSet<object>();

function respond(res: ServerResponse, answer: ServerRefusalAnswer): void {
  // Closed after, as Node closes after its own: a body the client may still send is not read.
  closing.add(res.socket ?? res);
  res.writeHead(answer.status, { 'content-type': answer.contentType, 'content-length': Buffer.byteLength(answer.body), ...refusalHeaders(answer.headers), connection: 'close' });
  res.end(answer.body);
}

/**
 * Sends 100 Continue when something starts reading `req`'s body (a 'data' or 'readable' listener: a handler, a
 * body parser, a pipe), unless the final answer has been written by then. A refusal written first closes the
 * connection (net/unread-body.ts), the body never sent.
 */
function continueOnRead(req: IncomingMessage, res: ServerResponse): void {
  const reading = (event: string | symbol): void => {
    if (event !== 'data' && event !== 'readable') return;
    req.off('newListener', reading);
    if (!res.headersSent && !res.writableEnded) res.writeContinue();
  };
  req.on('newListener', reading);
}

/**
 * Serves `listener` on `server` (made with HOST_CHECKED_BY_PORT), answering the requests Node's server would
 * refuse itself with what `answer` writes for each, given what the refusal says: the port's own `connectMessage`
 * for CONNECT (the port is no proxy, and says where to send instead).
 */
export function answerServerRefusals(server: Server, listener: RequestListener, connectMessage: string, answer: (refusal: ServerRefusal, req: IncomingMessage, message: string) => ServerRefusalAnswer): void {
  // With a listener here, Node leaves 100 Continue to the port and emits no 'request': emitted as Node would, so
  // that every 'request' listener (connection tracking, the parser refusals' own) sees the request.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    continueOnRead(req, res);
    server.emit('request', req, res);
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (closing.has(req.socket)) return;
    const fault = hostFault(req) ?? framingFault(req);
    const unknownCoding = fault === undefined ? codingFault(req) : undefined;
    if (fault !== undefined) respond(res, answer('bad_request', req, fault));
    else if (unknownCoding !== undefined) respond(res, answer('not_implemented', req, unknownCoding));
    else listener(req, res);
  });
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) =>
    respond(res, answer('expectation_failed', req, `Expect ${echoed(req.headers.expect ?? '')} is not supported; send the request without it, or with Expect: 100-continue`)));
  // The connection is handed over without its parser, nor Node's error listener: a client resetting it is no fault.
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => {});
    const { status, contentType, body, headers } = answer('connect', req, connectMessage);
    socket.write(rawHead(status, contentType, body, headers));
    // Read and dropped, what the client sends after it, for a moment: it is not reset before it reads the answer.
    closeAfter(socket, body);
  });
}
