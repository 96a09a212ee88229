import { readFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { expect, it } from 'vitest';
import { freePort } from './free-port.ts';

it('gives ports below the range outgoing connections take theirs from, each one free to listen on', async () => {
  const ephemeralStart = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  // An outgoing connection's local port, as many a test opens while a process it spawned has yet to listen.
  const srv = createServer((s) => s.end());
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const addr = srv.address();
  const conn = createConnection({ host: '127.0.0.1', port: typeof addr === 'object' && addr ? addr.port : 0 });
  await new Promise<void>((resolve) => conn.once('connect', resolve));
  expect(conn.localPort).toBeGreaterThanOrEqual(ephemeralStart);
  conn.destroy();
  srv.close();
  const ports = await Promise.all(Array.from({ length: 50 }, () => freePort()));
  for (const port of ports) {
    expect(port).toBeGreaterThanOrEqual(10_000);
    expect(port).toBeLessThan(ephemeralStart);
  }
  // Free: each can be listened on.
  for (const port of new Set(ports)) {
    const s = createServer();
    await new Promise<void>((resolve, reject) => s.once('error', reject).listen(port, '127.0.0.1', resolve));
    await new Promise((resolve) => s.close(resolve));
  }
});
