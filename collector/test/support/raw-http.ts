/**
 * One request as exact bytes, for what an HTTP client will not send (a request line that does not parse, CONNECT,
 * HTTP/1.1 without Host): on a connection of its own, whose answer is everything the server writes until it
 * closes the connection, which it must (a refusal, or `Connection: close` asked). The request is written, the
 * client's side left open: a client ending its side first is a client giving up, which Node treats apart. An
 * https:// URL is reached over TLS, trusting `tls.ca` (the certificate is checked against localhost).
 */
import { connect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

export interface RawAnswer {
  /** The status line and headers, as sent. */
  head: string;
  body: Buffer;
}

/** How long the server has to answer and close the connection, silent; past it the exchange fails. */
const CLOSE_WITHIN_MS = 5000;

export async function rawExchange(baseUrl: string, raw: string | Buffer, tls: { ca?: Buffer } = {}): Promise<RawAnswer> {
  const { protocol, hostname, port } = new URL(baseUrl);
  const socket = protocol === 'https:'
    ? tlsConnect({ host: hostname, port: Number(port), servername: 'localhost', ca: tls.ca }, () => socket.write(raw))
    : connect(Number(port), hostname, () => socket.write(raw));
  socket.setTimeout(CLOSE_WITHIN_MS, () => socket.destroy(new Error(`the server left the connection open, silent for ${CLOSE_WITHIN_MS} ms`)));
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  await new Promise((resolve, reject) => socket.on('close', resolve).on('error', reject));
  const all = Buffer.concat(chunks);
  const end = all.indexOf('\r\n\r\n');
  return end === -1 ? { head: all.toString('latin1'), body: Buffer.alloc(0) } : { head: all.subarray(0, end).toString('latin1'), body: all.subarray(end + 4) };
}
