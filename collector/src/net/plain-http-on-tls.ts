/**
 * A plain-HTTP request on a port serving TLS (a client given http:// for an https:// port) is answered as Go's
 * server, and so the OpenTelemetry Collector, answers it: `400 Bad Request`, a body saying the port speaks TLS and
 * to use an https:// URL, and the connection closed. Handed to TLS, the request's first bytes fail the handshake
 * and the connection is closed unanswered: the client reads a reset ("socket hang up", ECONNRESET), which an OTLP
 * exporter retries as a network error until its timeout and then logs as nothing more telling.
 *
 * The first bytes of each TCP connection are looked at before TLS gets them, and no more than that: a request line
 * starts with a method (ASCII capitals, `-` or `_`) and a space within its first MAX_METHOD_BYTES + 1 bytes. Any
 * other byte decides at once that it is none (a TLS ClientHello starts with 0x16), and the connection goes on to
 * TLS with the bytes read put back, as it did before. HTTP/2's preface (`PRI * HTTP/2.0`, a gRPC client sending in
 * plain text) goes on to TLS too: an HTTP/1 answer means nothing to it. A connection that has not shown which it
 * is within the handshake timeout is closed, as TLS would close it, and one handed to TLS still has to finish its
 * handshake within the handshake timeout counted from when it connected, not from when it was handed on (and is
 * reported as TLS reports its own timeout). One that sent a method's letters and no more before it ended or timed
 * out is reported as the handshake failure TLS would have reported for those bytes.
 */
import type { Socket } from 'node:net';
import type { Server as TlsServer, TLSSocket } from 'node:tls';
import { closeAfter } from './close-after-answer.ts';

/** The longest method taken for one: the registered ones are shorter (UNSUBSCRIBE, 11; BASELINE-CONTROL, 16). */
const MAX_METHOD_BYTES = 20;

const SPACE = 0x20;
const isMethodByte = (b: number, at: number): boolean => (b >= 0x41 && b <= 0x5a) || (at > 0 && (b === 0x2d || b === 0x5f));

/**
 * What the first bytes of a connection are: the method of a plain-HTTP request line, `tls` (anything else, for TLS
 * to take), or `more` while they could still be either.
 */
export function firstBytes(seen: Buffer): { method: string } | 'tls' | 'more' {
  const end = Math.min(seen.length, MAX_METHOD_BYTES + 1);
  for (let i = 0; i < end; i++) {
    const b = seen[i] as number;
    if (b === SPACE) {
      const method = seen.toString('latin1', 0, i);
      return i >= 3 && method !== 'PRI' ? { method } : 'tls';
    }
    if (!isMethodByte(b, i)) return 'tls';
  }
  return seen.length > MAX_METHOD_BYTES ? 'tls' : 'more';
}

/** The answer's body: what is wrong and what to do, naming the listener's TLS settings (`otlp.tls`, `http.tls`). */
export function plainHttpMessage(section: string): string {
  return `Client sent an HTTP request to an HTTPS server: this port speaks TLS (${section}), so use an https:// URL for it.\n`;
}

export interface PlainHttpOptions {
  /** The listener's TLS settings, named in the answer. */
  section: string;
  /** How long a connection may take to show what it speaks: the server's handshake timeout. */
  handshakeTimeoutMs: number;
  /** Headers of the port's own, on its every answer (`X-Hookwatch` on the HTTP port's), put on the 400 too. */
  headers?: Record<string, string>;
  /** Called with the TCP socket of each plain-HTTP request answered, to count and log it. */
  onPlain?: (socket: Socket) => void;
  /**
   * Called with the TCP socket of a connection that sent bytes but showed no request line before it ended or timed
   * out (`HELLO` and a hang-up; `GET` and nothing more), and the error TLS's handshake would have failed with on
   * them, to count and log it as TLS's failures are.
   */
  onFailed?: (socket: Socket, error: NodeJS.ErrnoException) => void;
}

/** The error TLS reports a handshake not finished within the handshake timeout with (Node's own). */
export function handshakeTimeoutError(): NodeJS.ErrnoException {
  return Object.assign(new Error('TLS handshake timeout'), { code: 'ERR_TLS_HANDSHAKE_TIMEOUT' });
}

/**
 * The error TLS's handshake fails with on a connection that sent `seen` (a method's letters, no space) and closed:
 * OpenSSL reads a record's 5-byte header, which these bytes are not (a proxy's `CONNE`ct told apart); with fewer,
 * it waits for the rest, and the close is a hang-up.
 */
export function endedError(seen: Buffer): NodeJS.ErrnoException {
  if (seen.length < 5) return Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
  if (seen.toString('latin1', 0, 5) === 'CONNE') return Object.assign(new Error('https proxy request'), { code: 'ERR_SSL_HTTPS_PROXY_REQUEST' });
  return Object.assign(new Error('wrong version number'), { code: 'ERR_SSL_WRONG_VERSION_NUMBER' });
}

/**
 * Answers plain-HTTP requests on `server` (node:https) with 400 before TLS sees them. Call it when the server is
 * made, before anything else listens to its connections: TLS's own listener is moved behind the look at the first
 * bytes; those added later see each TCP connection as it opens, as before.
 */
export function answerPlainHttp(server: TlsServer, opts: PlainHttpOptions): void {
  const tls = server.listeners('connection') as ((this: TlsServer, socket: Socket) => void)[];
  server.removeAllListeners('connection');
  const answer = plainHttpMessage(opts.section);
  /** The TCP sockets handed to TLS whose handshake has not finished, with the timer that ends it at the handshake timeout. */
  const handshaking = new WeakMap<Socket, NodeJS.Timeout>();
  server.on('secureConnection', (tlsSocket: TLSSocket) => {
    // Node's TCP socket under the TLS one.
    const tcp = (tlsSocket as TLSSocket & { _parent?: Socket | null })._parent;
    if (tcp) clearTimeout(handshaking.get(tcp));
  });
  server.on('connection', (socket: Socket) => {
    const openedMs = performance.now();
    let seen: Buffer = Buffer.alloc(0);
    const done = (): void => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('end', ended);
      socket.off('error', gone);
    };
    /** Closes a connection that showed nothing to hand on; one that sent bytes failed as TLS would have failed it. */
    const gone = (error: Error): void => {
      done();
      if (seen.length > 0) opts.onFailed?.(socket, error);
      socket.destroy();
    };
    const ended = (): void => gone(endedError(seen));
    const onData = (chunk: Buffer): void => {
      seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
      const verdict = firstBytes(seen);
      if (verdict === 'more') return;
      done();
      socket.pause();
      if (verdict === 'tls') {
        // The handshake timeout counts from the connection, not from here: what it took to show it is none is spent.
        // Its end comes about with TLS's own timeout (which counts from here, and from the last bytes read): it is
        // TLS's timeout error that closes the socket, so that TLS reports the timeout either way, not a reset.
        const left = opts.handshakeTimeoutMs - (performance.now() - openedMs);
        const deadline = setTimeout(() => socket.destroy(handshakeTimeoutError()), Math.max(0, left));
        deadline.unref();
        handshaking.set(socket, deadline);
        socket.once('close', () => clearTimeout(deadline));
        // TLS reads what is buffered on the socket first (Node's TLSSocket takes a socket that has read already).
        socket.unshift(seen);
        for (const listener of tls) listener.call(server, socket);
        return;
      }
      opts.onPlain?.(socket);
      respond(socket, verdict.method, answer, opts.headers ?? {});
    };
    const timer = setTimeout(() => gone(handshakeTimeoutError()), opts.handshakeTimeoutMs);
    timer.unref();
    socket.on('data', onData);
    // A client that hangs up, or fails, before showing what it speaks: nothing to hand on.
    socket.on('end', ended);
    socket.on('error', gone);
  });
}

/**
 * Writes the 400 (HTTP/1.0, as Go's server does, so no client expects the connection kept) and closes the
 * connection after it, the rest of the request read and dropped for a moment (net/close-after-answer.ts).
 */
function respond(socket: Socket, method: string, body: string, headers: Record<string, string>): void {
  const more = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  const head = `HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${more}Connection: close\r\n\r\n`;
  closeAfter(socket, method === 'HEAD' ? head : head + body);
  socket.resume();
}
