/**
 * The replica signal connection against a real PostgreSQL: after a restart it listens again as soon as another
 * connection to the database succeeds, not when its backoff runs out, says that signals were missed meanwhile,
 * and hears the signals sent after; an attempt made while the network drops packets gives up in seconds, so one
 * brought forward follows once the network heals; a database that takes other connections but fails this one is
 * not retried in a loop.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { recordingLogger } from '../../../test/support/recording-logger.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { startFlowProxy } from '../../../test/support/postgres/flow-proxy.ts';
import { waitFor } from '../../../test/support/serve-process.ts';
import { PostgresBus, type BusChannel } from './bus.ts';
import { PostgresStore } from './index.ts';

const fx = useTestServer();
const buses: PostgresBus[] = [];
afterEach(async () => {
  await Promise.all(buses.splice(0).map((b) => b.stop()));
});

/** Longer than any wait below: a connection back within the test came back early, not by its backoff. */
const BACKOFF_MS = 600_000;

describe('PostgresBus', () => {
  it('listens again as soon as another connection to a restarted database succeeds, and hears what is sent after', async () => {
    const url = await fx.server().createDatabase();
    const store = fx.track(await PostgresStore.open({ url }));
    const { logger, lines } = recordingLogger();
    const heard: [BusChannel, string][] = [];
    let resumed = 0;
    const bus = new PostgresBus({ url, pool: store.connectionPool, logger, reconnectMs: BACKOFF_MS, onMessage: (c, p) => void heard.push([c, p]), onResumed: () => void resumed++ });
    buses.push(bus);
    store.onConnected(() => bus.databaseReachable());
    await bus.start();
    expect(bus.listening).toBe(true);
    // The first connection misses nothing.
    expect(resumed).toBe(0);

    await fx.server().restart();
    await waitFor('the listening connection lost', async () => (bus.listening ? undefined : true), 30_000);
    expect(lines.some((l) => l.msg.startsWith('replica signal connection lost') && l.msg.includes(`"retryMs":${BACKOFF_MS}`))).toBe(true);
    // A store query on a new connection (the old ones died with the server) says the database answers again.
    await waitFor('the store answering', () => store.ping().then(() => true, () => undefined), 30_000, 100);
    await waitFor('the listening connection back', async () => (bus.listening ? true : undefined), 30_000);
    expect(resumed).toBe(1);
    expect(lines.filter((l) => l.msg.startsWith('replica signal connection restored')).map((l) => l.msg.includes('"aheadOfBackoff":true'))).toEqual([true]);

    await bus.publish('hookwatch_ingest', '["persisted_output"]');
    await waitFor('the signal', async () => (heard.length > 0 ? true : undefined), 30_000);
    expect(heard).toEqual([['hookwatch_ingest', '["persisted_output"]']]);
  }, 90_000);

  it('gives up on an attempt the network does not answer, and listens again at once when the database answers after a heal', async () => {
    const server = fx.server();
    const url = await server.createDatabase();
    const proxy = await startFlowProxy(server);
    fx.defer(() => proxy.close());
    const store = fx.track(await PostgresStore.open({ url }));
    const { logger, lines } = recordingLogger();
    const heard: [BusChannel, string][] = [];
    // Its first attempt after the loss comes within the test; the next one would come twice as late.
    const backoffMs = 5000;
    const bus = new PostgresBus({ url: proxy.via(url), pool: store.connectionPool, logger, reconnectMs: backoffMs, onMessage: (c, p) => void heard.push([c, p]) });
    buses.push(bus);
    await bus.start();
    expect(bus.listening).toBe(true);

    expect(proxy.cutOff()).toBe(1);
    await waitFor('the listening connection lost', async () => (bus.listening ? undefined : true), 10_000);
    await waitFor('a reconnect attempt during the cut', async () => (proxy.unanswered('hookwatch-listen') > 0 ? true : undefined), 2 * backoffMs);
    proxy.heal();
    const healed = performance.now();
    // Another connection succeeds right after the heal (the store's), while the attempt made in the cut is under way.
    bus.databaseReachable();
    await waitFor('the listening connection back', async () => (bus.listening ? true : undefined), 30_000);
    const backMs = performance.now() - healed;
    // Within the attempt's bound, not after the backoff's next attempt (2 × 5 s).
    expect(backMs).toBeLessThan(5000);
    const said = lines.map((l) => l.msg);
    expect(said.filter((m) => m.startsWith('replica signal connection lost')).map((m) => JSON.parse(m.slice(m.indexOf('{'))).err)).toEqual([
      'a check was not answered within 2000 ms',
      'not connected within 2000 ms',
    ]);
    expect(said.filter((m) => m.startsWith('replica signal connection restored'))).toEqual(['replica signal connection restored {"aheadOfBackoff":true}']);

    await bus.publish('hookwatch_ingest', '["persisted_output"]');
    await waitFor('the signal', async () => (heard.length > 0 ? true : undefined), 30_000);
    expect(heard).toEqual([['hookwatch_ingest', '["persisted_output"]']]);
  }, 60_000);

  it('brings at most one attempt forward between two of its backoff, however often the database is said to answer', async () => {
    const url = await fx.server().createDatabase();
    const store = fx.track(await PostgresStore.open({ url }));
    const { logger, lines } = recordingLogger();
    // The store's database answers; the listening connection's does not exist, so each attempt fails.
    const bus = new PostgresBus({ url: url.replace(/\/[^/]+$/, '/no_such_database'), pool: store.connectionPool, logger, reconnectMs: BACKOFF_MS, onMessage: () => {} });
    buses.push(bus);
    const attempts = (): number => lines.filter((l) => l.msg.startsWith('replica signal connection lost')).length;
    await bus.start();
    expect(attempts()).toBe(1);
    bus.databaseReachable();
    await waitFor('the attempt brought forward', async () => (attempts() === 2 ? true : undefined), 30_000);
    for (let i = 0; i < 5; i++) {
      bus.databaseReachable();
      // Long enough for an attempt against this local server to fail, had one started.
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(attempts()).toBe(2);
    expect(bus.listening).toBe(false);
    // What failed is named, the password is not.
    expect(lines.map((l) => l.msg).join('\n')).toContain('no_such_database');
    expect(lines.map((l) => l.msg).join('\n')).not.toContain(fx.server().password);
  }, 60_000);
});
