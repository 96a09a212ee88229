/**
 * The last bytes of a connection no ServerResponse serves (a refusal written straight to it), and its close after
 * them. A destroy right after the write lost the answer on TLS: it was still to be encrypted and sent when the
 * connection was torn down, and the client read a reset ("socket hang up", ECONNRESET) instead. So the answer is
 * sent first and the sending side closed after it (on TLS, close_notify), and the rest of the request is read and
 * dropped for a moment: a socket closed with bytes unread is reset, and the reset can reach the client before it
 * read the answer (a client still sending headers over 16 KiB when it is refused).
 */
import type { Duplex } from 'node:stream';

/** After the answer, the rest of the request is read and dropped for this long, up to LINGER_BYTES, before the connection is closed. */
const LINGER_MS = 1000;
const LINGER_BYTES = 64 * 1024;

/**
 * Writes `answer` as the last bytes of `socket` and closes it once the answer is sent and the client has closed its
 * side, or LINGER_MS after, or once it sent LINGER_BYTES more. The connection is then torn down with `error`, if
 * given, as a destroy at once would have: a handler still reading a request's body learns from socket.errored why
 * it ended. A client that does not read the answer holds the connection no longer than LINGER_MS either.
 *
 * What arrives meanwhile is dropped: by the HTTP parser that refused the request, which still reads the connection
 * (and whose pausing for an answer not yet drained is left to it), or by a 'data' listener here, which starts a
 * socket no one has paused. A caller that paused the socket resumes it.
 */
export function closeAfter(socket: Duplex, answer: string | Buffer, error?: Error): void {
  // A client that ended its side before the answer (sent a request and half-closed) has no 'end' to come.
  let ended = socket.readableEnded;
  let sent = false;
  const close = (): void => {
    clearTimeout(linger);
    socket.destroy(error);
  };
  socket.on('error', () => socket.destroy());
  socket.once('end', () => {
    ended = true;
    if (sent) close();
  });
  socket.end(answer, () => {
    sent = true;
    if (ended) close();
  });
  const linger = setTimeout(close, LINGER_MS);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
  let dropped = 0;
  socket.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > LINGER_BYTES) close();
  });
}
