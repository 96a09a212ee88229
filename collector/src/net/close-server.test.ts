/**
 * closeServer on real sockets: a stop waits for the requests in flight, and for nothing else. A connection that
 * never sent a request (a browser's preconnect, a TCP health check) or never finished its TLS handshake would
 * otherwise hold it for as long as its client keeps it open.
 */
import { createServer, request, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { NEW_CONNECTION_GRACE_MS, closeServer, trackConnections } from './close-server.ts';
import { HAVE_OPENSSL, useTestPki } from '../../test/support/certs.ts';

const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
});

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return (server.address() as AddressInfo).port;
}

/** A TCP connection that sends nothing (yet); resolves once it is open, and `closed` once the server closes it. */
async function silent(port: number): Promise<{ socket: Socket; closed: Promise<void> }> {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, closed: new Promise((resolve) => socket.once('close', () => resolve())) };
}

const GRACE_TIMEOUT_MS = NEW_CONNECTION_GRACE_MS + 15_000;

describe('closeServer', () => {
  it('gives a connection whose request is still on its way a moment to send it, and answers it', async () => {
    const server = trackConnections(createServer((_req, res) => res.end('answered')));
    const port = await listen(server);
    const late = await silent(port);
    const stopping = closeServer(server);
    await new Promise((r) => setTimeout(r, 100));
    let got = '';
    late.socket.on('data', (d: Buffer) => (got += d.toString()));
    late.socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await late.closed;
    expect(got).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*answered$/);
    await stopping;
  });

  it(`closes a connection that sends no request within ${NEW_CONNECTION_GRACE_MS} ms, and lets the request in flight finish`, async () => {
    let answer: (() => void) | undefined;
    const server = trackConnections(createServer((_req, res) => {
      answer = () => res.end('done');
    }));
    const port = await listen(server);
    const quiet = await silent(port);
    const response = new Promise<string>((resolve, reject) => {
      request({ host: '127.0.0.1', port, path: '/' }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve(body));
      }).on('error', reject).end();
    });
    while (!answer) await new Promise((r) => setTimeout(r, 5));
    let closed = false;
    const stopping = closeServer(server).then(() => (closed = true));
    await quiet.closed;
    // The stop waits for the request in flight, not for the silent connection.
    expect(closed).toBe(false);
    answer();
    expect(await response).toBe('done');
    await stopping;
    expect(closed).toBe(true);
  }, GRACE_TIMEOUT_MS);

  it('untracked, a silent connection still holds the stop (what tracking is for)', async () => {
    const server = createServer((_req, res) => res.end());
    const port = await listen(server);
    const quiet = await silent(port);
    let closed = false;
    const stopping = closeServer(server).then(() => (closed = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(closed).toBe(false);
    sockets[0]?.destroy();
    await quiet.closed;
    await stopping;
  });
});

describe.skipIf(!HAVE_OPENSSL)('closeServer over TLS', () => {
  const pki = useTestPki('hookwatch-close-server-');

  it('closes a connection whose TLS handshake never began', async () => {
    const https = trackConnections(createHttpsServer({ cert: readFileSync(pki.server.certFile), key: readFileSync(pki.server.keyFile) }, (_req, res) => res.end()));
    const port = await listen(https);
    const quiet = await silent(port);
    await closeServer(https);
    await quiet.closed;
  }, GRACE_TIMEOUT_MS);
});
