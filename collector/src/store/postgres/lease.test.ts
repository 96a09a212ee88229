/** The leader lease against a real PostgreSQL: one leader at a time, handover, expiry, and no trust past ttl. */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../telemetry/logger.ts';
import { PostgresStore } from './index.ts';
import { PostgresLease, type PostgresLeaseOptions } from './lease.ts';
import { LEASE_CHANNEL, PostgresBus } from './bus.ts';
import { PostgresAlertStateStore } from '../../alerting/state/postgres.ts';
import { freePort } from '../../../test/support/free-port.ts';
import { startTestServer, type TestServer } from '../../../test/support/postgres/server.ts';
import { startFlowProxy, type FlowProxy } from '../../../test/support/postgres/flow-proxy.ts';
import { logEntries, waitFor } from '../../../test/support/serve-process.ts';

let server: TestServer;
const leases: PostgresLease[] = [];
const stores: PostgresStore[] = [];
/** Closed after each test, after the leases. */
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  server = await startTestServer();
});
afterEach(async () => {
  await Promise.all(leases.splice(0).map((l) => l.stop()));
  for (const close of closers.splice(0)) await close();
  await Promise.all(stores.splice(0).map((s) => s.close()));
});
afterAll(async () => {
  await server?.stop();
});

async function freshDb(): Promise<string> {
  const url = await server.createDatabase();
  stores.push(await PostgresStore.open({ url }));
  return url;
}

function lease(url: string, opts: Partial<PostgresLeaseOptions> = {}): PostgresLease {
  const l = new PostgresLease({ url, ttlMs: 600, ...opts });
  leases.push(l);
  return l;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A replica renewing, started, `a`, leading through a flow proxy (its connection open) to the database at `url`. */
async function leadingThroughProxy(ttlMs: number, aOpts: Partial<PostgresLeaseOptions> = {}): Promise<{ a: PostgresLease; proxy: FlowProxy; url: string }> {
  const url = await freshDb();
  const proxy = await startFlowProxy(server);
  closers.push(() => proxy.close());
  const a = lease(proxy.via(url), { holder: 'a', ttlMs, ...aOpts });
  a.start();
  await waitFor('the lease', async () => (a.isLeader() ? true : undefined), 10_000);
  return { a, proxy, url };
}

/** Two replicas renewing, both started: `a` leading through a flow proxy (leadingThroughProxy), `b` directly. */
async function leaderThroughProxy(ttlMs: number, aOpts: Partial<PostgresLeaseOptions>, bOpts: Partial<PostgresLeaseOptions> = {}): Promise<{ a: PostgresLease; b: PostgresLease; proxy: FlowProxy }> {
  const { a, proxy, url } = await leadingThroughProxy(ttlMs, aOpts);
  const b = lease(url, { holder: 'b', ttlMs, ...bOpts });
  b.start();
  return { a, b, proxy };
}

/** A replica's listening connection (PostgresBus), started, with every signal it hears. */
async function listen(url: string, onMessage: (channel: string, payload: string) => void = () => {}): Promise<{ heard: [string, string][] }> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const heard: [string, string][] = [];
  const bus = new PostgresBus({ url, pool, onMessage: (channel, payload) => {
    heard.push([channel, payload]);
    onMessage(channel, payload);
  } });
  closers.push(() => bus.stop(), () => pool.end());
  await bus.start();
  expect(bus.listening).toBe(true);
  return { heard };
}

describe('PostgresLease', () => {
  it('elects exactly one leader among replicas, and hands over on stop', async () => {
    const url = await freshDb();
    const [a, b, c] = [lease(url, { holder: 'a' }), lease(url, { holder: 'b' }), lease(url, { holder: 'c' })];
    const first = await Promise.all([a.tick(), b.tick(), c.tick()]);
    expect(first.filter(Boolean)).toHaveLength(1);
    const leader = [a, b, c].find((l) => l.isLeader())!;
    expect(leader.epoch()).toBe(1);
    // Renewal keeps the same leader and epoch; the others stay followers.
    await Promise.all([a.tick(), b.tick(), c.tick()]);
    expect([a, b, c].filter((l) => l.isLeader())).toEqual([leader]);
    expect(leader.epoch()).toBe(1);
    await leader.stop();
    expect(leader.isLeader()).toBe(false);
    const rest = [a, b, c].filter((l) => l !== leader);
    await Promise.all(rest.map((l) => l.tick()));
    const next = rest.filter((l) => l.isLeader());
    expect(next).toHaveLength(1);
    expect(next[0]!.epoch()).toBe(2);
  });

  it('announces a hand-back to every replica, and only a lease it held', async () => {
    const url = await freshDb();
    const { heard } = await listen(url);
    const [a, b] = [lease(url, { holder: 'a' }), lease(url, { holder: 'b' })];
    expect(await a.tick()).toBe(true);
    expect(await b.tick()).toBe(false);
    // A follower leaving hands nothing back.
    await b.stop();
    await sleep(300);
    expect(heard).toEqual([]);
    await a.stop();
    for (let i = 0; i < 100 && heard.length === 0; i++) await sleep(20);
    expect(heard).toEqual([[LEASE_CHANNEL, 'hookwatch']]);
  });

  it('hands back and stays listed: it tries the lease no more, writes its heartbeat on, and removes it at stop()', async () => {
    const url = await freshDb();
    const { heard } = await listen(url);
    const db = stores.at(-1)!.connectionPool;
    const lastSeen = async (): Promise<number | undefined> => (await db.query<{ last_seen: Date }>("SELECT last_seen FROM replica_heartbeats WHERE replica = 'a'")).rows[0]?.last_seen.getTime();
    const [a, b] = [lease(url, { holder: 'a', renewEveryMs: 100 }), lease(url, { holder: 'b' })];
    a.start();
    expect(await a.tick()).toBe(true);
    await a.handBack();
    expect(a.isLeader()).toBe(false);
    for (let i = 0; i < 100 && heard.length === 0; i++) await sleep(20);
    expect(heard).toEqual([[LEASE_CHANNEL, 'hookwatch']]);
    expect(await b.tick()).toBe(true);
    // The lease free again: a, renewing every 100 ms, does not take it, and its heartbeat goes on.
    await b.stop();
    const seen = await lastSeen();
    await sleep(400);
    expect(a.isLeader()).toBe(false);
    expect((await db.query('SELECT 1 FROM leader_lease WHERE expires_at > now()')).rowCount).toBe(0);
    expect(await lastSeen()).toBeGreaterThan(seen!);
    await a.stop();
    expect(await lastSeen()).toBeUndefined();
  });

  it('hands over at once: followers told of a hand-back try the lease then, and exactly one takes it', async () => {
    const url = await freshDb();
    // Renewed every 10 s: a follower waiting for its next renewal would take over far later than asserted.
    const ls = ['a', 'b', 'c'].map((h) => lease(url, { holder: h, ttlMs: 30_000 }));
    await listen(url, (channel, payload) => {
      if (channel === LEASE_CHANNEL) for (const l of ls) l.handedBack(payload);
    });
    for (const l of ls) l.start();
    // The first attempts, which start() made, are over: the next ones are a renewal period away.
    await Promise.all(ls.map((l) => l.tick()));
    const leader = ls.find((l) => l.isLeader())!;
    const rest = ls.filter((l) => l !== leader);
    const stoppedAt = performance.now();
    await leader.stop();
    while (!rest.some((l) => l.isLeader()) && performance.now() - stoppedAt < 8000) await sleep(5);
    const tookMs = performance.now() - stoppedAt;
    // Half the renewal period: the signal's path (a NOTIFY, then a lease query) may take a second or more on a loaded
    // machine, a follower's next renewal comes some 10 s after the stop.
    expect(tookMs).toBeLessThan(5000);
    // The race settled: still exactly one leader a while later, at the next epoch.
    await sleep(200);
    const next = rest.filter((l) => l.isLeader());
    expect(next).toHaveLength(1);
    expect(next[0]!.epoch()).toBe(2);
  });

  it('lets another replica take over only after a silent leader’s lease expires', async () => {
    const url = await freshDb();
    const a = lease(url, { holder: 'a', ttlMs: 800 });
    const b = lease(url, { holder: 'b', ttlMs: 800 });
    expect(await a.tick()).toBe(true);
    // a stops renewing (as if killed); b cannot take the lease before it expires...
    const killedAt = performance.now();
    expect(await b.tick()).toBe(false);
    await sleep(300);
    expect(await b.tick()).toBe(false);
    // ...and a stops trusting its lease before the database would give it away.
    await sleep(500);
    expect(a.isLeader()).toBe(false);
    let took = false;
    while (!took && performance.now() - killedAt < 3000) {
      took = await b.tick();
      if (!took) await sleep(50);
    }
    expect(took).toBe(true);
    expect(performance.now() - killedAt).toBeGreaterThanOrEqual(800);
    expect(b.epoch()).toBe(2);
    // The old holder coming back finds the lease taken.
    expect(await a.tick()).toBe(false);
  });

  it('stops trusting its lease after ttl on its own clock, even when the database cannot be reached', async () => {
    const url = await freshDb();
    let t = 1_000;
    const changes: boolean[] = [];
    const a = lease(url, { holder: 'a', ttlMs: 10_000, now: () => t, onChange: (v) => changes.push(v) });
    expect(await a.tick()).toBe(true);
    t += 8_000;
    expect(a.isLeader()).toBe(true);
    // No renewal reaches the database from here on: the database is still ours, but our trust runs out at 0.9 ttl.
    t += 1_001;
    expect(a.isLeader()).toBe(false);
    expect(a.epoch()).toBeNull();
    expect(changes).toEqual([true]);
  });

  it('never has two leaders at once while replicas renew and the leader crashes', async () => {
    const url = await freshDb();
    const ttlMs = 400;
    const ls = ['a', 'b', 'c'].map((h) => lease(url, { holder: h, ttlMs }));
    // Each replica renews every ttl/3 until it "crashes": its loop ends, it never releases, its clock runs on.
    const alive = new Set(ls);
    const loops = ls.map(async (l) => {
      while (alive.has(l)) {
        await l.tick();
        await sleep(ttlMs / 3);
      }
    });
    let overlaps = 0;
    let samples = 0;
    const leadersAfterCrash = new Set<string>();
    let victim: PostgresLease | undefined;
    const started = performance.now();
    while (performance.now() - started < 2500) {
      const now = ls.filter((l) => l.isLeader());
      samples++;
      if (now.length > 1) overlaps++;
      if (victim) for (const l of now) leadersAfterCrash.add(l.holder);
      if (!victim && performance.now() - started > 600 && now.length === 1) {
        victim = now[0]!;
        alive.delete(victim);
      }
      await sleep(2);
    }
    alive.clear();
    await Promise.all(loops);
    expect(victim).toBeDefined();
    expect(samples).toBeGreaterThan(100);
    expect(overlaps).toBe(0);
    // Someone else took over after the crash.
    expect([...leadersAfterCrash].filter((h) => h !== victim!.holder)).toHaveLength(1);
  });

  it('a leader frozen inside a fenced alert-state write does not hold the lease row past its lease', async () => {
    const url = await freshDb();
    const a = lease(url, { holder: 'a', ttlMs: 800 });
    const b = lease(url, { holder: 'b', ttlMs: 800 });
    expect(await a.tick()).toBe(true);
    // The leader's pool, whose client freezes (as a SIGSTOPped process does) after the fence check took the lease
    // row FOR SHARE: the transaction stays open on the server, idle.
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    let frozen = false;
    const freezing = new Proxy(pool, {
      get(target, prop, receiver) {
        if (prop !== 'connect') return Reflect.get(target, prop, receiver) as unknown;
        return async () => {
          const client = await target.connect();
          const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
          return new Proxy(client, {
            get(c, p, r) {
              if (p === 'release') return (err?: Error | boolean) => c.release(err ?? true);
              if (p !== 'query') return Reflect.get(c, p, r) as unknown;
              return (...args: unknown[]) => {
                if (String(args[0]).startsWith('INSERT INTO alert_attempts')) {
                  frozen = true;
                  return new Promise(() => {});
                }
                return query(...args);
              };
            },
          });
        };
      },
    });
    const state = new PostgresAlertStateStore({ pool: freezing, fence: a });
    void state.addAttempt({ alertId: 'x', receiver: 'ops', webhookId: 'msg_x', attempt: 1, atMs: Date.now(), status: 'firing', outcome: 'retrying', httpStatus: 503, error: null, durationMs: 5 });
    while (!frozen) await sleep(10);
    // The leader renews no more (frozen); the other replica takes over once the lease has run out, as it would
    // had the leader died.
    let took = false;
    const deadline = Date.now() + 5000;
    while (!took && Date.now() < deadline) {
      took = await b.tick();
      if (!took) await sleep(100);
    }
    expect(took).toBe(true);
    expect(b.epoch()).toBe(2);
    // The frozen client is never handed back: end the pool without waiting for it.
    void pool.end().catch(() => {});
  });

  it('leads again within a renewal or two after a network cut heals, though a connection attempt was under way', async () => {
    const ttlMs = 3000;
    const { a, proxy } = await leadingThroughProxy(ttlMs);
    expect(proxy.cutOff()).toBe(1);
    // A connection attempt made while the network drops packets is never answered: it must give up (ttl/3).
    await waitFor('a connection attempt during the cut', async () => (proxy.unanswered('hookwatch-lease') > 0 ? true : undefined), 3 * ttlMs);
    proxy.heal();
    const healed = performance.now();
    await waitFor('the lease again', async () => (a.isLeader() ? true : undefined), 30_000);
    expect(performance.now() - healed).toBeLessThan(ttlMs);
  }, 60_000);

  it('keeps the lease through a network blip of a renewal period: the renewal on the dropped connection gives up and is tried again at once', async () => {
    const ttlMs = 3000;
    const changes: string[] = [];
    const { a, b, proxy } = await leaderThroughProxy(ttlMs, { onChange: (v) => changes.push(`a ${v}`) }, { onChange: (v) => changes.push(`b ${v}`) });
    const epoch = a.epoch();
    // The network drops the lease's connection without a word for 1 s (ttl/3), then heals.
    expect(proxy.cutOff()).toBe(1);
    await sleep(ttlMs / 3);
    proxy.heal();
    // Watched for twice the ttl: the leader never stops trusting its lease, and the other never takes it.
    const until = performance.now() + 2 * ttlMs;
    let samples = 0;
    while (performance.now() < until) {
      expect(a.epoch()).toBe(epoch);
      expect(b.isLeader()).toBe(false);
      samples++;
      await sleep(10);
    }
    expect(samples).toBeGreaterThan(100);
    expect(changes).toEqual(['a true']);
  }, 30_000);

  it('steps down within its lease when a partition outlasts the ttl, before the other takes over, trying at the pace of its bound', async () => {
    const ttlMs = 3000;
    const lines: string[] = [];
    const logger = createLogger({ level: 'debug', write: (l) => lines.push(l) });
    let connections = 0;
    const { a, b, proxy } = await leaderThroughProxy(ttlMs, { logger, onConnected: () => connections++ });
    expect(proxy.cutOff()).toBe(1);
    const cutAt = performance.now();
    let lostMs: number | undefined;
    let tookMs: number | undefined;
    let overlaps = 0;
    while (performance.now() - cutAt < 1.5 * ttlMs) {
      const [ma, mb] = [a.isLeader(), b.isLeader()];
      if (ma && mb) overlaps++;
      if (!ma) lostMs ??= performance.now() - cutAt;
      if (mb) tookMs ??= performance.now() - cutAt;
      await sleep(5);
    }
    const failed = logEntries(lines, 'leader lease renewal failed').length;
    const connected = connections;
    proxy.heal();
    expect(overlaps).toBe(0);
    // Its last renewal was sent before the cut: trusted 0.9 x ttl from then at most (and a sample late).
    expect(lostMs).toBeLessThanOrEqual(0.9 * ttlMs + 50);
    expect(tookMs).toBeGreaterThan(lostMs!);
    expect(b.epoch()).toBe(2);
    // One attempt at a time, each waiting its bound (a renewal period) for a connection: no loop.
    expect(failed).toBeGreaterThanOrEqual(2);
    expect(failed).toBeLessThanOrEqual(Math.ceil((1.5 * ttlMs) / (ttlMs / 3)) + 1);
    // After the heal the old leader connects anew and finds the lease taken.
    await waitFor('a new connection after the heal', async () => (connections > connected ? true : undefined), 10_000);
    expect(await a.tick()).toBe(false);
    expect(b.isLeader()).toBe(true);
  }, 30_000);

  it('reports failures without throwing or leaking the password when the database is unreachable', async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'debug', write: (l) => lines.push(l) });
    const port = await freePort();
    const url = `postgres://hookwatch:${encodeURIComponent(server.password)}@127.0.0.1:${port}/nowhere`;
    const a = lease(url, { ttlMs: 1000, logger });
    expect(await a.tick()).toBe(false);
    expect(a.isLeader()).toBe(false);
    expect(lines.some((l) => l.includes('leader lease renewal failed'))).toBe(true);
    expect(lines.join('\n')).not.toContain(server.password);
  });
});
