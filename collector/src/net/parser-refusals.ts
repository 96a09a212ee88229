/**
 * Requests Node's HTTP parser refuses before a handler sees them: request line and headers over 16 KiB, a request
 * not received within the port's request timeout, HTTP it cannot read. Node answers them itself with an empty
 * body; each port answers them here with Node's status, then closes the connection as Node does, but with a body
 * in its own error form saying what was wrong.
 */
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { closeAfter } from './close-after-answer.ts';

/** What the parser refused. */
export type ParserRefusal = 'header_overflow' | 'chunk_extensions_overflow' | 'request_timeout' | 'malformed';

const REFUSALS: Record<string, ParserRefusal> = {
  HPE_HEADER_OVERFLOW: 'header_overflow',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 'chunk_extensions_overflow',
  ERR_HTTP_REQUEST_TIMEOUT: 'request_timeout',
};

/** Node's status for each. */
const REFUSAL_STATUS: Record<ParserRefusal, number> = {
  header_overflow: 431,
  chunk_extensions_overflow: 413,
  request_timeout: 408,
  malformed: 400,
};

/** Said when the parser found no CR LF where a line of the request, or of its chunked body, ends. */
const LINE_END = 'a line of the request or of its chunked body does not end with CR LF';

/**
 * What the parser found wrong in a malformed request, by its error's code, in the client's terms and never with
 * the request's own bytes. A code not here is answered as malformed HTTP alone.
 */
const MALFORMED: Record<string, string> = {
  HPE_INVALID_METHOD: 'it does not start with an HTTP method, as when a TLS client speaks to a plain-text port',
  HPE_INVALID_URL: 'the request target is not a path or URL, such as one holding a space or a control character',
  HPE_INVALID_CONSTANT: 'the request line is not a method, a target and an HTTP version, such as one whose target holds a space',
  HPE_INVALID_VERSION: 'the HTTP version is not one this port speaks; use HTTP/1.1',
  HPE_PAUSED_H2_UPGRADE: 'it starts with the HTTP/2 connection preface, as an OTLP/gRPC client does; this port speaks HTTP/1.1',
  HPE_INVALID_HEADER_TOKEN: 'a header name or value holds a character HTTP does not allow (a space before the colon, a control character), or a header line is folded',
  HPE_CR_EXPECTED: LINE_END,
  HPE_LF_EXPECTED: LINE_END,
  HPE_INVALID_CONTENT_LENGTH: 'the Content-Length header is not a decimal number, or comes with Transfer-Encoding',
  HPE_UNEXPECTED_CONTENT_LENGTH: 'the Content-Length header is sent more than once',
  HPE_INVALID_TRANSFER_ENCODING: 'the Transfer-Encoding header names chunked other than once and last, or comes with Content-Length',
  HPE_INVALID_CHUNK_SIZE: 'a chunk size of the chunked body is not a hexadecimal number, or is too large',
};

/** Said for a request with both Transfer-Encoding and Content-Length (request smuggling), whichever came first. */
const BOTH_LENGTHS = 'Transfer-Encoding and Content-Length are both sent; send one of them';

/** Said for a Content-Length of digits past what the parser holds (a 64-bit count): a number, only too large. */
const LENGTH_OVERFLOW = 'the Content-Length header is too large, past 2^64 - 1 bytes';

/**
 * The parser's error for a connection the client ended (sent its FIN) in the middle of a request: nothing it sent
 * was wrong, it gave up on the request, as a client resetting the connection does (an exporter exiting mid-upload).
 */
const ENDED_MID_REQUEST = 'HPE_INVALID_EOF_STATE';

/** Said to a client that closed its side of the connection mid-request: it ended early, nothing in it was malformed. */
const ENDED_EARLY = 'the request ended early: the client closed its side of the connection before the whole body had arrived';

/**
 * What a request a port answers as malformed got wrong, as its message says it: the parser's code names the fault;
 * its reason, a fixed text of the parser's, tells which of a code's two faults it was.
 */
export function malformedMessage(err: unknown): string {
  const { code, reason } = (err ?? {}) as { code?: unknown; reason?: unknown };
  if (code === ENDED_MID_REQUEST) return ENDED_EARLY;
  const what =
    typeof reason === 'string' && reason.includes("can't be present with") ? BOTH_LENGTHS
    : reason === 'Content-Length overflow' ? LENGTH_OVERFLOW
    : MALFORMED[String(code)];
  return what === undefined ? 'malformed HTTP request' : `malformed HTTP request: ${what}`;
}

/**
 * The refusal an error of a request's connection is: one of the parser's (HPE_*: HTTP it cannot read) or its
 * timeout; undefined for anything else (a connection reset, ended mid-request or otherwise lost).
 */
export function parserRefusal(err: unknown): ParserRefusal | undefined {
  const code = (err as NodeJS.ErrnoException | null | undefined)?.code;
  if (typeof code !== 'string' || code === ENDED_MID_REQUEST) return undefined;
  return REFUSALS[code] ?? (code.startsWith('HPE_') ? 'malformed' : undefined);
}

/** The HTTP status a refusal is answered with. */
export function refusalStatus(refusal: ParserRefusal): number {
  return REFUSAL_STATUS[refusal];
}

/**
 * The headers a refusal written before a handler is given the request carries besides its type and length: the
 * port's own (`headers`), and `Cache-Control: no-store` unless they name their own.
 */
export function refusalHeaders(headers: Record<string, string> = {}): Record<string, string> {
  return Object.keys(headers).some((name) => name.toLowerCase() === 'cache-control') ? headers : { 'Cache-Control': 'no-store', ...headers };
}

/**
 * The status line and headers of an answer written straight to a connection no ServerResponse serves, which is
 * closed after it.
 */
export function rawHead(status: number, contentType: string, body: string | Buffer, headers: Record<string, string> = {}): string {
  const more = Object.entries(refusalHeaders(headers)).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: ${contentType}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${more}Connection: close\r\n\r\n`;
}

export interface RefusalBody {
  contentType: string;
  body: string | Buffer;
  /** Headers of the port's own, on its every answer. */
  headers?: Record<string, string>;
}

/**
 * Answers each request `server`'s parser refuses with the body `answer` writes for it. `request` is the request
 * cut short when its headers were read (a body not received in time), so that its content type can be known;
 * `err` the parser's error, which malformedMessage reads.
 *
 * `unseen` is told of each refusal of a request no handler has seen (its headers were never read whole), so that
 * it can be counted: a handler sees the refusal of its own request's body as the end of that body, the socket's
 * error saying which refusal it was (parserRefusal(req.socket.errored)). A connection that sent nothing before
 * the timeout made no request: it is closed (and answered, as Node does), but `unseen` is not told.
 *
 * The answer is sent before the connection is closed (net/close-after-answer.ts), which a handler still reading the
 * body sees end then, with the parser's error as the socket's.
 */
export function answerParserRefusals(server: Server, answer: (refusal: ParserRefusal, request: IncomingMessage | undefined, err: NodeJS.ErrnoException) => RefusalBody, unseen?: (refusal: ParserRefusal, err: NodeJS.ErrnoException & { rawPacket?: unknown }, socket: Duplex) => void): void {
  // The last request each connection's handler was given: one not yet whole when its connection fails is its handler's.
  const handled = new WeakMap<Duplex, IncomingMessage>();
  // Connections refused, their answer being sent: the parser, still reading them, reports its error again on what
  // arrives after it (and the request timeout its refusal), which is neither answered nor counted twice.
  const refused = new WeakSet<Duplex>();
  server.on('request', (req: IncomingMessage) => handled.set(req.socket, req));
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (refused.has(socket)) return;
    const refusal = parserRefusal(err);
    const current = handled.get(socket);
    // bytesRead counts what the parser was given (the plain text, on a TLS connection).
    if (refusal && (!current || current.complete) && (socket as Duplex & { bytesRead?: number }).bytesRead) unseen?.(refusal, err, socket);
    // As Node: no answer on a connection that is gone, nor in the middle of one already being written.
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
    if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      // With the error, as Node: a handler still reading the body learns why it ended (socket.errored).
      socket.destroy(err);
      return;
    }
    refused.add(socket);
    const status = REFUSAL_STATUS[refusal ?? 'malformed'];
    const send = (request: IncomingMessage | undefined): void => {
      const { contentType, body, headers } = answer(refusal ?? 'malformed', request, err);
      socket.write(rawHead(status, contentType, body, headers));
      // Sent before the connection is torn down (Node's own answer, written and destroyed at once, is lost on TLS),
      // and torn down with the error, as Node does it.
      closeAfter(socket, body, err);
    };
    // Bytes pipelined behind whole requests still being answered: their answers go first, in order, the refusal after
    // them. Written at once, the refusal took the place of an earlier request's answer, whose client (its request
    // taken) was told only that the bytes after it were refused. Node gives the connection to the next request's
    // answer when one is written (before the listeners added here hear of it): each is waited for in turn.
    if (inFlight && current?.complete && !inFlight.writableFinished) {
      const awaitAnswer = (answering: ServerResponse): void => {
        const after = (): void => {
          answering.off('finish', after);
          answering.off('close', after);
          const next = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
          if (!socket.writable || socket.destroyed) socket.destroy(err);
          else if (next && next !== answering && !next.writableFinished) awaitAnswer(next);
          else send(undefined);
        };
        answering.on('finish', after);
        answering.on('close', after);
      };
      awaitAnswer(inFlight);
      return;
    }
    send(inFlight?.req);
  });
}
