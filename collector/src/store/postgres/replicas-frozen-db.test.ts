/**
 * Fault test on real replicas and a real PostgreSQL: the database hangs (every server process SIGSTOPped, as a
 * frozen host looks to its clients) while the leader holds its lease and a request waits on a commit, and the
 * leader gets SIGTERM. Each shutdown step against the database is bounded, so the process exits well within
 * shutdown.timeout, with status 1 (the stop was not clean), naming the steps that timed out and saying that its
 * lease was not handed back; the request waiting on the database is not acknowledged; nothing acknowledged is
 * lost; the database password is in no log line. Once the database answers again another replica leads. A stop
 * held past shutdown.timeout while a request waits on the database names that wait in its final line.
 */
import pg from 'pg';
import { expect, it } from 'vitest';
import { PostgresStore } from './index.ts';
import { holdRequest } from '../../../test/support/held-request.ts';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { leading, persistedOutputBody, postLogs } from '../../../test/support/postgres/replicas.ts';
import { logEntries, waitFor, type Replica } from '../../../test/support/serve-process.ts';

// Renewed every 3 s: still held in the database when the stop tries to hand it back (a renewal period, the time
// before the signal, and a step or two later).
const TTL_MS = 9000;
const SHUTDOWN_TIMEOUT_MS = 10_000;
/** Each database step's bound: min(ttl / 3, shutdown.timeout / 10). */
const STEP_MS = 1000;
const fx = useReplicaFixture();

/** A new database with one replica on it, leading, and a client of the test's own on that database. */
async function leaderOnNewDatabase(shutdownTimeoutMs = SHUTDOWN_TIMEOUT_MS): Promise<{ url: string; env: Record<string, string>; leader: Replica; db: pg.Client }> {
  const url = await fx.server().createDatabase();
  const env = { HOOKWATCH_POSTGRES_LEASE_TTL: `${TTL_MS}ms`, HOOKWATCH_SHUTDOWN_TIMEOUT: `${shutdownTimeoutMs}ms` };
  const leader = await fx.replica(url, env, 60_000);
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  fx.defer(() => db.end());
  await leading(db, leader, 15_000);
  return { url, env, leader, db };
}

it('SIGTERM while PostgreSQL hangs: every database step is bounded, the exit is prompt and says what was left undone', async () => {
  const { url, env, leader, db } = await leaderOnNewDatabase();
  // Acknowledged before the database hangs: committed, so it must be there afterwards.
  await fx.post(leader, persistedOutputBody(Date.now(), 'before-freeze'));

  const { tookMs, pending } = await fx.server().frozen(async () => {
    // A batch sent now waits on a commit that cannot happen.
    const pending = postLogs(leader, persistedOutputBody(Date.now(), 'during-freeze')).catch((err: unknown) => (err as Error).message);
    await new Promise((r) => setTimeout(r, 500));
    const t0 = performance.now();
    leader.child.kill('SIGTERM');
    await leader.exited;
    return { tookMs: performance.now() - t0, pending: await pending };
  });
  const log = leader.lines.join('\n');
  // eslint-disable-next-line no-console
  console.log(`SIGTERM with PostgreSQL frozen: exit ${leader.child.exitCode} after ${Math.round(tookMs)} ms (shutdown.timeout ${SHUTDOWN_TIMEOUT_MS} ms); the waiting batch got ${pending}`);

  // Well within shutdown.timeout, which is left to clients that hold their requests open.
  expect(tookMs, log).toBeLessThan(SHUTDOWN_TIMEOUT_MS / 2);
  expect(leader.child.exitCode, log).toBe(1);
  expect(log).not.toContain('shutdown took too long');
  const timedOut = logEntries(leader.lines, 'shutdown step timed out');
  expect(timedOut.length, log).toBeGreaterThan(0);
  expect(timedOut.every((e) => typeof e['step'] === 'string' && e['timeoutMs'] === STEP_MS), log).toBe(true);
  expect(timedOut.map((e) => e['step'])).toContain('leader lease hand-back');
  const notHandedBack = logEntries(leader.lines, 'leader lease not handed back; another replica takes over when it expires');
  expect(notHandedBack, log).toHaveLength(1);
  expect(notHandedBack[0]!['expiresWithinMs'], log).toBeLessThanOrEqual(TTL_MS);
  const stopped = logEntries(leader.lines, 'stopped without finishing every shutdown step');
  expect(stopped, log).toHaveLength(1);
  expect(stopped[0]!['unfinished'], log).toEqual(expect.arrayContaining(timedOut.map((e) => e['step'])));
  expect(logEntries(leader.lines, 'stopped'), log).toHaveLength(0);
  expect(log).not.toContain(fx.server().password);
  // Never acknowledged: its client still owns it and sends it again.
  expect(pending).not.toBe(200);

  // The database answers again: the acknowledged batch is stored, and another replica takes the lease.
  const store = await PostgresStore.open({ url });
  try {
    const counters = await store.hookCounters({ fromMs: Date.now() - 3_600_000, toMs: Date.now() + 3_600_000 });
    expect([...counters.values()].map((c) => [c.info.hookName, c.executions])).toEqual([['PostToolUse:Bash', 1]]);
  } finally {
    await store.close();
  }
  const next = await fx.replica(url, env, 60_000);
  await leading(db, next, TTL_MS + TTL_MS / 3 + 10_000);
}, 180_000);

it('a stop still running at shutdown.timeout while a request waits on the database names that wait in its final line', async () => {
  // The watch of requests waiting on the database then has a 2 s bound (min(ttl / 3, shutdown.timeout / 10)): a
  // request that began waiting in the last 2 s is still watched, not yet cut off, when the stop runs out.
  const timeoutMs = 20_000;
  const watchMs = 2000;
  const { leader } = await leaderOnNewDatabase(timeoutMs);
  // A client that holds its request open holds the drain, and so the stop, until shutdown.timeout.
  const held = await holdRequest(leader.otlpHttpUrl);
  fx.defer(async () => void held.req.destroy());
  const t0 = performance.now();
  leader.child.kill('SIGTERM');
  // Early in that last window, the database hangs and a dashboard query waits on it: sent after the window opens,
  // it can only reach the server later still, so only a query slower than 1.7 s to reach it could miss the window.
  await new Promise((r) => setTimeout(r, timeoutMs - watchMs + 300));
  await fx.server().frozen(async () => {
    const query = fetch(`${leader.httpUrl}/api/v1/hooks?from=now-1h`).then((res) => res.status, () => 0);
    await leader.exited;
    return query;
  });
  const log = leader.lines.join('\n');
  expect(performance.now() - t0, log).toBeGreaterThanOrEqual(timeoutMs - 100);
  expect(leader.child.exitCode, log).toBe(1);
  // The line names everything the stop still waited on, the wait on the database included.
  expect(JSON.parse(leader.lines.at(-1) ?? '{}'), log).toMatchObject({
    msg: 'shutdown took too long; exiting', pending: ['requests waiting on the database', 'OTLP requests in flight'], unfinished: [],
  });
}, 180_000);

it('SIGTERM while PostgreSQL answers: the lease is handed back and the heartbeat removed, and the exit is 0', async () => {
  const { leader, db } = await leaderOnNewDatabase();
  await waitFor('its heartbeat', async () => ((await db.query('SELECT 1 FROM replica_heartbeats')).rowCount === 1 ? true : undefined), 10_000);
  await fx.post(leader, persistedOutputBody(Date.now(), 'clean-stop'));
  leader.child.kill('SIGTERM');
  await leader.exited;
  const log = leader.lines.join('\n');
  expect(leader.child.exitCode, log).toBe(0);
  expect(logEntries(leader.lines, 'stopped'), log).toHaveLength(1);
  expect(logEntries(leader.lines, 'shutdown step timed out'), log).toEqual([]);
  // A clean stop reads as one, not as the fault of a lease taken away.
  expect(logEntries(leader.lines, 'leader lease given up: stopping'), log).toHaveLength(1);
  expect(logEntries(leader.lines, 'leader lease lost'), log).toEqual([]);
  // Handed back: expired now, not ttl from the last renewal.
  expect((await db.query('SELECT 1 FROM leader_lease WHERE expires_at > now()')).rowCount).toBe(0);
  expect((await db.query('SELECT 1 FROM replica_heartbeats')).rowCount).toBe(0);
}, 120_000);
