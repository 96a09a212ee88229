/** The client pools that follow rotated TLS files: what a stop closes. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { closeServer, trackConnections } from './close-server.ts';
import { ClientTlsAgent } from './tls-agent.ts';
import type { ClientTlsCredentials } from './tls.ts';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => closeServer(s)));
});

describe('ClientTlsAgent', () => {
  it('closes a rotated pool with the current one at stop, the requests it still had included', async () => {
    // A receiver that never answers: the request made before the rotation stays in flight.
    const server = trackConnections(createServer(() => {}));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const files = { generation: 1, connectOptions: () => ({}) };
    const agent = new ClientTlsAgent(files as unknown as ClientTlsCredentials);
    const inFlight = fetch(url, { method: 'POST', body: '{}', dispatcher: agent.dispatcher() } as RequestInit).then(() => 'answered', () => 'closed');
    await new Promise((r) => setTimeout(r, 100));
    files.generation = 2;
    const rotated = agent.dispatcher();
    expect(rotated).not.toBe(undefined);
    await agent.destroy();
    // Within the test's timeout: a pool left to close by itself would wait for an answer that never comes.
    expect(await inFlight).toBe('closed');
  }, 10_000);
});
