/**
 * cutConnections, what a stop does when the database does not answer: every call waiting on the server fails at
 * once, those still waiting for a free connection of a busy pool too (pg's end() would leave them to wait out the
 * pool's connection timeout, 10 s), so what the stop waits on after it is bounded by the stop, not by the pool.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stuckRead } from '../../../test/support/postgres/stuck-read.ts';
import { startTestServer, type TestServer } from '../../../test/support/postgres/server.ts';
import { StoreUnavailableError } from '../store.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.stop();
});

/** When (ms after `t0`) `p` settled, and what it rejected with (undefined: it resolved). */
async function settled(p: Promise<unknown>, t0: number): Promise<{ ms: number; rejected: boolean; err: unknown }> {
  const err = await p.then(() => undefined, (e: unknown) => e ?? new Error('rejected'));
  return { ms: performance.now() - t0, rejected: err !== undefined, err };
}

describe('PostgreSQL store cut off', () => {
  it('fails the calls waiting on a statement and those waiting for a connection of the busy pool at once', { timeout: 60_000 }, async () => {
    // Another session holds the table a hook's commands are read from: the first read waits on its lock with the
    // only read connection, the second waits for that connection.
    const stuck = await stuckRead(server, 20, 20);
    const { store, now } = stuck;
    try {
      const first = stuck.read;
      const second = stuck.readAgain();
      await new Promise((r) => setTimeout(r, 200));
      const t0 = performance.now();
      store.cutConnections();
      const [a, b] = await Promise.all([settled(first, t0), settled(second, t0)]);
      expect(a.rejected).toBe(true);
      expect(b.rejected).toBe(true);
      expect(a.ms).toBeLessThan(2000);
      expect(b.ms, 'a call waiting for a connection when the store was cut').toBeLessThan(2000);
      // Nothing they carried was done: 503 to a client, which sends it again.
      expect(b.err).toBeInstanceOf(StoreUnavailableError);
      await expect(store.hookCounters({ fromMs: 0, toMs: now }), 'a call after the cut').rejects.toBeInstanceOf(StoreUnavailableError);
      // And store.close() after it (the stop's last step) resolves too.
      const closed = await settled(store.close(), performance.now());
      expect(closed.ms).toBeLessThan(2000);
    } finally {
      await stuck.close();
    }
  });
});
