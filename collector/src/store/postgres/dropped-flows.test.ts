/**
 * The store's connections dropped by the network without a word (a NAT or firewall forgetting the flows, a
 * partition, a database host gone without a reset): a statement sent on one never gets an answer nor an error,
 * and the server's statement_timeout cannot end it. The store gives up on it itself, a little after that timeout,
 * with the answer a lost connection gets (StoreUnavailableError: 503 with Retry-After, gRPC UNAVAILABLE), drops
 * the connection, and the next call opens a new one. An idle connection the network forgot is found out before
 * any statement is sent on it, by its TCP keepalive probes going unanswered, and leaves its pool.
 */
import { describe, expect, it } from 'vitest';
import { hookEvent } from '../../../test/support/alerting.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { startFlowProxy, type FlowProxy } from '../../../test/support/postgres/flow-proxy.ts';
import { waitFor } from '../../../test/support/serve-process.ts';
import { queryOnce } from '../../../test/support/postgres/server.ts';
import { recordingLogger } from '../../../test/support/recording-logger.ts';
import { StoreUnavailableError } from '../store.ts';
import { PostgresStore, type PostgresStoreOptions } from './index.ts';

const pg = useTestServer();
const STATEMENT_TIMEOUT_MS = 1000;

/** How long `p` took to settle (ms), and what it rejected with (undefined: it resolved). */
async function timed(p: Promise<unknown>): Promise<{ ms: number; err: unknown }> {
  const t0 = performance.now();
  const err = await p.then(() => undefined, (e: unknown) => e ?? new Error('rejected'));
  return { ms: performance.now() - t0, err };
}

interface ThroughProxy {
  server: ReturnType<typeof pg.server>;
  /** The database, reached directly. */
  url: string;
  proxy: FlowProxy;
  lines: ReturnType<typeof recordingLogger>['lines'];
  store: PostgresStore;
  /** When the one event stored was, and a range that reads it. */
  now: number;
  range: { fromMs: number; toMs: number };
}

/**
 * A store reaching its database through a proxy that can drop flows silently, and its log lines; an event stored
 * and read back, so that a connection of the ingest pool and one of the read pool are idle and kept: the next calls
 * take them. `opts` are the store's, besides those above.
 */
async function storeThroughProxy(opts: Partial<PostgresStoreOptions> = {}): Promise<ThroughProxy> {
  const server = pg.server();
  const proxy = await startFlowProxy(server);
  pg.defer(() => proxy.close());
  const { logger, lines } = recordingLogger();
  const url = await server.createDatabase();
  const store = pg.track(await PostgresStore.open({ url: proxy.via(url), poolSize: 2, readers: 1, statementTimeoutMs: STATEMENT_TIMEOUT_MS, logger, ...opts }));
  const now = Date.now();
  const range = { fromMs: now - 3_600_000, toMs: now + 60_000 };
  expect((await store.ingest([hookEvent({ timeMs: now })])).inserted).toHaveLength(1);
  expect(await store.hookCounters(range)).toHaveProperty('size', 1);
  return { server, url, proxy, lines, store, now, range };
}

/** The server processes of the read pool's connections to the database at `url`. */
async function readBackends(url: string): Promise<number[]> {
  const rows = await queryOnce<{ pid: number }>(url, "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'hookwatch-read' ORDER BY pid");
  return rows.map((row) => row.pid);
}

const CLOSED = 'postgres did not answer; idle connections closed';

describe('PostgreSQL store on connections the network dropped', () => {
  it('answers "retry later" a little after the statement timeout, and works again on new connections', { timeout: 60_000 }, async () => {
    const { server, proxy, lines, store, now, range } = await storeThroughProxy();

    expect(proxy.drop('hookwatch') + proxy.drop('hookwatch-read')).toBeGreaterThanOrEqual(2);
    // Bounded by the test: without a bound of its own the store would wait for ever.
    const bounded = (p: Promise<unknown>): Promise<{ ms: number; err: unknown }> =>
      timed(Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error('still waiting after 15 s')), 15_000))]));
    // One after the other, so each takes the dropped connection of its pool.
    const ingest = await bounded(store.ingest([hookEvent({ timeMs: now + 1 })]));
    const read = await bounded(store.hookCounters(range));
    // eslint-disable-next-line no-console
    console.log(`dropped flows: ingest answered after ${Math.round(ingest.ms)} ms, a read after ${Math.round(read.ms)} ms`);
    for (const r of [ingest, read]) {
      expect(r.err).toBeInstanceOf(StoreUnavailableError);
      expect(r.ms).toBeLessThan(STATEMENT_TIMEOUT_MS + 7000);
    }
    // Said in the log, without the password.
    const said = lines.filter((l) => l.msg.startsWith('postgres statement not answered in time'));
    expect(said.map((l) => l.level)).toEqual(['warn', 'warn']);
    expect(JSON.stringify(lines)).not.toContain(server.password);
    // The dropped connections are gone from the pools: the next calls run on new ones.
    expect((await store.ingest([hookEvent({ timeMs: now + 2 })])).inserted).toHaveLength(1);
    expect(await store.hookCounters(range)).toHaveProperty('size', 1);
  });

  it('gives up on a statement of an answer read in one snapshot as soon, with no ROLLBACK sent behind it', { timeout: 60_000 }, async () => {
    const { proxy, lines, store, range } = await storeThroughProxy();

    // Dropped once the answer's transaction has begun: its first statement is the one never answered.
    expect(proxy.dropAfter('hookwatch-read', 'REPEATABLE READ')).toBe(1);
    const read = await timed(Promise.race([store.hookCounters(range), new Promise((_, reject) => setTimeout(() => reject(new Error('still waiting after 20 s')), 20_000))]));
    // eslint-disable-next-line no-console
    console.log(`dropped flow in a snapshot: answered after ${Math.round(read.ms)} ms`);
    expect(read.err).toBeInstanceOf(StoreUnavailableError);
    expect(read.ms).toBeLessThan(STATEMENT_TIMEOUT_MS + 7000);
    expect(lines.filter((l) => l.msg.startsWith('postgres statement not answered in time')).map((l) => l.level)).toEqual(['warn']);
    // The connection is gone from the read pool: the next answer is read on a new one.
    expect(await store.hookCounters(range)).toHaveProperty('size', 1);
  });

  it('closes no other connection for a statement left unanswered while the database answers the readiness check', { timeout: 60_000 }, async () => {
    const { url, proxy, lines, store, now, range } = await storeThroughProxy();
    const before = await readBackends(url);
    expect(before).toHaveLength(1);

    // Only the ingest connection's flow dropped (a NAT forgetting one flow): the database itself answers.
    expect(proxy.drop('hookwatch')).toBe(1);
    await expect(store.ingest([hookEvent({ timeMs: now + 1 })])).rejects.toBeInstanceOf(StoreUnavailableError);
    await store.ping();
    // The read connection, idle meanwhile, was kept: no reconnecting for a connection lost alone.
    expect(await store.hookCounters(range)).toHaveProperty('size', 1);
    expect(await readBackends(url)).toEqual(before);
    expect(lines.filter((l) => l.msg.startsWith(CLOSED))).toEqual([]);
  });

  it('closes the idle connections once a statement and the readiness check both go unanswered: after the heal, calls run on new ones at once', { timeout: 60_000 }, async () => {
    const { url, proxy, lines, store, now, range } = await storeThroughProxy();
    await store.ping();
    const before = await readBackends(url);

    expect(proxy.cutOff()).toBeGreaterThanOrEqual(3);
    // The ingest waits on its dead connection for the statement bound; the readiness check then asks, on its own
    // connection (dead too), for 2 s, and the idle read connection is closed.
    await expect(store.ingest([hookEvent({ timeMs: now + 1 })])).rejects.toBeInstanceOf(StoreUnavailableError);
    await new Promise((r) => setTimeout(r, 3000));
    proxy.heal();
    const read = await timed(store.hookCounters(range));
    // eslint-disable-next-line no-console
    console.log(`after the heal: a read answered in ${Math.round(read.ms)} ms; ${JSON.stringify(lines.filter((l) => l.msg.startsWith(CLOSED)))}`);
    expect(read.err).toBeUndefined();
    expect(read.ms, 'ms to answer a read after the heal (its dead connection took statement timeout + 5 s)').toBeLessThan(STATEMENT_TIMEOUT_MS);
    expect(lines.filter((l) => l.msg.startsWith(CLOSED)).map((l) => l.level)).toEqual(['warn']);
    // Closed as expected, not reported as a lost connection.
    expect(lines.filter((l) => l.msg.startsWith('postgres connection lost'))).toEqual([]);
    expect((await readBackends(url)).filter((pid) => !before.includes(pid))).toHaveLength(1);
  });

  it('finds idle connections the network forgot by their unanswered keepalive probes: the next batch and answer run on new ones', { timeout: 60_000 }, async () => {
    const { proxy, lines, store, now, range } = await storeThroughProxy({ keepAliveMs: 1000 });

    // Forgotten down to TCP, as by a NAT: nothing the store sends on them is acknowledged any more, nor answered.
    expect((await proxy.forget('hookwatch')) + (await proxy.forget('hookwatch-read'))).toBe(2);
    const forgotten = performance.now();
    // Idle a second, each is probed, and given up by the operating system after 10 probes left unanswered (1 s
    // apart): each pool removes its connection and says so. Nothing else would: no statement is sent meanwhile.
    const lost = await waitFor('both idle connections found lost', async () => {
      const found = lines.filter((l) => l.msg.startsWith('postgres connection lost'));
      return found.length === 2 ? found : undefined;
    }, 30_000, 100);
    // eslint-disable-next-line no-console
    console.log(`flows forgotten: both idle connections found lost ${Math.round(performance.now() - forgotten)} ms later; ${JSON.stringify(lost)}`);
    for (const l of lost) expect(l.msg).toContain('ETIMEDOUT');
    // The next batch and answer are handed new connections: stored and read, not answered "retry later" after
    // the statement bound on the forgotten ones.
    expect((await store.ingest([hookEvent({ timeMs: now + 1 })])).inserted).toHaveLength(1);
    expect(await store.hookCounters(range)).toHaveProperty('size', 1);
    expect(lines.filter((l) => l.msg.startsWith('postgres statement not answered in time'))).toEqual([]);
  });
});
