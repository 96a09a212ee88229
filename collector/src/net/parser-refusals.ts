/**
 * Requests Node's HTTP parser refuses before a handler sees them: request line and headers over 16 KiB, a request
 * not received within the port's request timeout, HTTP it cannot read. Node answers them itself with an empty
 * body; each port answers them here with Node's status, then closes the connection as Node does, but with a body
 * in its own error form saying what was wrong.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/** What the parser refused. */
export type ParserRefusal = 'header_overflow' | 'chunk_extensions_overflow' | 'request_timeout' | 'malformed';

const REFUSALS: Record<string, ParserRefusal> = {
  HPE_HEADER_OVERFLOW: 'header_overflow',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 'chunk_extensions_overflow',
  ERR_HTTP_REQUEST_TIMEOUT: 'request_timeout',
};

/** Node's status line for each. */
const REFUSAL_STATUS: Record<ParserRefusal, [number, string]> = {
  header_overflow: [431, 'Request Header Fields Too Large'],
  chunk_extensions_overflow: [413, 'Payload Too Large'],
  request_timeout: [408, 'Request Timeout'],
  malformed: [400, 'Bad Request'],
};

export interface RefusalBody {
  contentType: string;
  body: string | Buffer;
}

/**
 * Answers each request `server`'s parser refuses with the body `answer` writes for it. `request` is the request
 * cut short when its headers were read (a body not received in time), so that its content type can be known.
 */
export function answerParserRefusals(server: Server, answer: (refusal: ParserRefusal, request: IncomingMessage | undefined) => RefusalBody): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // As Node: no answer on a connection that is gone, nor in the middle of one already being written.
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
    if (err.code !== 'ECONNRESET' && socket.writable && !inFlight?.headersSent) {
      const refusal = REFUSALS[err.code ?? ''] ?? 'malformed';
      const [status, reason] = REFUSAL_STATUS[refusal];
      const { contentType, body } = answer(refusal, inFlight?.req);
      socket.write(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: ${contentType}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n`);
      socket.write(body);
    }
    // With the error, as Node: a handler still reading the body learns why it ended (socket.errored).
    socket.destroy(err);
  });
}
