/**
 * Retention fenced by the leader lease, with real leases on a real PostgreSQL: a leader paused (SIGSTOP, a VM
 * freeze) in the middle of a retention run, past its lease, while another replica takes the lease over, deletes
 * nothing more once it resumes; the new leader's run deletes what is due, and the paused one counts its run as
 * not_leader, not as a failure of retention. A batch that takes long (waiting on a row lock) holds neither the
 * renewal of the lease nor its leader's leadership. A run under way when the process stops ends between two
 * batches.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { hookEvent } from '../../../test/support/alerting.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { queryOnce } from '../../../test/support/postgres/server.ts';
import { waitFor } from '../../../test/support/serve-process.ts';
import { recordingLogger } from '../../../test/support/recording-logger.ts';
import { Retention } from '../retention.ts';
import { PostgresStore } from './index.ts';
import { PostgresLease } from './lease.ts';

const db = useTestServer();
const TTL_MS = 2000;
/** Events stored, and deleted per batch: four batches of the day holding the bound. */
const EVENTS = 20;
const BATCH = 5;
const T0 = Date.UTC(2026, 2, 2, 12);

/**
 * Holds the first statement of the store's write connections ('hookwatch') that `at` picks (given every one sent
 * before it), as a paused process would: it is sent once resume() is called. Everything else goes on.
 */
function pauseAt(at: (text: string, before: readonly string[]) => boolean): { paused: Promise<void>; resume(): void; restore(): void } {
  type Query = (this: pg.Client, ...args: unknown[]) => unknown;
  const query = pg.Client.prototype.query as unknown as Query;
  const sent: string[] = [];
  let held = false;
  let reached!: () => void;
  const paused = new Promise<void>((resolve) => (reached = resolve));
  let resume!: () => void;
  const resumed = new Promise<void>((resolve) => (resume = resolve));
  const wrapped: Query = function (...args) {
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text ?? '';
    const app = (this as unknown as { connectionParameters: { application_name?: string } }).connectionParameters.application_name;
    if (app !== 'hookwatch' || held || !at(text, sent)) {
      if (app === 'hookwatch') sent.push(text);
      return query.apply(this, args);
    }
    held = true;
    reached();
    // The pool asks with a callback, a client held for a transaction without one.
    const callback = typeof args.at(-1) === 'function' ? (args.pop() as (err: unknown, r?: unknown) => void) : undefined;
    const answer = resumed.then(() => query.apply(this, args) as Promise<unknown>);
    if (!callback) return answer;
    answer.then((r) => callback(null, r), (err: unknown) => callback(err));
    return undefined;
  };
  pg.Client.prototype.query = wrapped as unknown as typeof pg.Client.prototype.query;
  return { paused, resume, restore: () => void (pg.Client.prototype.query = query as unknown as typeof pg.Client.prototype.query) };
}

const eventDeletes = (texts: readonly string[]): number => texts.filter((t) => t.startsWith('DELETE FROM events')).length;
/** The delete of the third batch of events, two having committed. */
const insideThirdBatch = (text: string, before: readonly string[]): boolean => text.startsWith('DELETE FROM events') && eventDeletes(before) === 2;

/** Events stored in the database at `url`. */
const eventsLeft = async (url: string): Promise<number> => Number((await queryOnce<{ n: string }>(url, 'SELECT count(*)::text AS n FROM events'))[0]?.n);

/** A store of EVENTS events, its retention fenced by the lease of replica `a`, which leads. */
async function fencedStore(): Promise<{ url: string; store: PostgresStore; a: PostgresLease }> {
  const url = await db.server().createDatabase();
  const store = db.track(await PostgresStore.open({ url, poolSize: 2, pruneBatch: BATCH }));
  const events = Array.from({ length: EVENTS }, (_, i) => hookEvent({ timeMs: T0 + i * 1000 }));
  expect((await store.ingest(events)).inserted).toHaveLength(EVENTS);
  const a = new PostgresLease({ url, holder: 'a', ttlMs: TTL_MS });
  db.defer(() => a.stop());
  expect(await a.tick()).toBe(true);
  store.fenceRetention(a);
  return { url, store, a };
}

describe('retention fenced by the leader lease', () => {
  it.each([
    // Paused before it begins its third batch (its first two committed): that batch finds the lease moved.
    ['between two batches', (text: string, before: readonly string[]) => eventDeletes(before) === 2 && text === 'BEGIN'],
    // Paused inside its third batch, just before the delete is sent: the server ended the batch's transaction once
    // it was idle for half a lease; the lease, read again after that error, has moved.
    ['inside a batch', insideThirdBatch],
    // Paused inside its third batch, its delete done, just before the lease is checked (the check comes before the
    // commit, so that a long batch holds no renewal): ended by the server in the same way, its delete undone.
    ['at a batch\'s lease check', (text: string, before: readonly string[]) => text.includes('FROM leader_lease') && eventDeletes(before) === 3],
  ])('a leader paused %s past its lease deletes nothing more once resumed; the new leader does', async (where, at) => {
    const { url, store } = await fencedStore();
    const b = new PostgresLease({ url, holder: 'b', ttlMs: TTL_MS });
    db.defer(() => b.stop());

    const pause = pauseAt(at);
    db.defer(async () => pause.restore());
    // Every event is past the bound, in the day holding it: deleted in batches.
    const run = store.prune(T0 + 2 * 3_600_000, 0).then(() => undefined, (err: unknown) => err as Error);
    await pause.paused;
    // a renews no more (paused): its lease expires and b takes it.
    await waitFor('b to take the lease over', async () => ((await b.tick()) ? true : undefined), 20_000, 100);
    expect(b.epoch()).toBe(2);
    const atTakeover = await eventsLeft(url);
    expect(atTakeover).toBe(EVENTS - 2 * BATCH);
    pause.resume();
    const err = await run;
    pause.restore();
    // eslint-disable-next-line no-console
    console.log(`paused leader resumed ${where}: its run ended with ${err?.name}: ${err?.message}; ${await eventsLeft(url)} of ${atTakeover} events left`);
    expect(err?.name).toBe('NotLeaderError');
    expect(await eventsLeft(url)).toBe(atTakeover);

    // The new leader's run deletes them.
    const next = db.track(await PostgresStore.open({ url, poolSize: 2, pruneBatch: BATCH }));
    next.fenceRetention(b);
    await next.prune(T0 + 2 * 3_600_000, 0);
    expect(await eventsLeft(url)).toBe(0);
  }, 60_000);

  it('a leader paused in its delete of the days\' change generations past its lease deletes none once resumed; the new leader does', async () => {
    const { url, store } = await fencedStore();
    const b = new PostgresLease({ url, holder: 'b', ttlMs: TTL_MS });
    db.defer(() => b.stop());
    const generations = async (): Promise<{ rows: number; pruned: string | undefined }> => {
      const [row] = await queryOnce<{ n: string; pruned: string | null }>(url, "SELECT (SELECT count(*) FROM day_changes)::text AS n, (SELECT value FROM store_meta WHERE key = 'day_changes_pruned') AS pruned");
      return { rows: Number(row?.n), pruned: row?.pruned ?? undefined };
    };
    const pause = pauseAt((text) => text.startsWith('DELETE FROM day_changes'));
    db.defer(async () => pause.restore());
    // The events' day is past retention (its minute rollups, which go with the events, too): its rollups go, then
    // its generations.
    const run = store.prune(T0 + 2 * 86_400_000, T0 + 2 * 86_400_000).then(() => undefined, (err: unknown) => err as Error);
    await pause.paused;
    await waitFor('b to take the lease over', async () => ((await b.tick()) ? true : undefined), 20_000, 100);
    const atTakeover = await generations();
    expect(atTakeover.rows).toBeGreaterThan(0);
    pause.resume();
    const err = await run;
    pause.restore();
    expect(err?.name).toBe('NotLeaderError');
    expect(await generations()).toEqual(atTakeover);
    expect(atTakeover.pruned).toBeUndefined();

    const next = db.track(await PostgresStore.open({ url, poolSize: 2, pruneBatch: BATCH }));
    next.fenceRetention(b);
    await next.prune(T0 + 2 * 86_400_000, T0 + 2 * 86_400_000);
    const after = await generations();
    expect(after.rows).toBe(0);
    expect(JSON.parse(after.pruned ?? 'null')).toEqual({ beforeDay: Math.floor((T0 + 2 * 86_400_000) / 86_400_000), prunes: 1 });
  }, 60_000);

  it('a batch waiting on a row lock past the lease holds no renewal: its leader stays leader and the run ends', async () => {
    const { url, store, a } = await fencedStore();
    // Another session (an operator's, a long report's) holds the events the first batch deletes.
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    db.defer(() => other.end());
    await other.query('BEGIN');
    await other.query('SELECT 1 FROM events FOR UPDATE');
    const run = store.prune(T0 + 2 * 3_600_000, 0).then(() => undefined, (err: unknown) => err as Error);
    await waitFor('the batch to wait on the lock', async () => ((await queryOnce(url, "SELECT 1 FROM pg_stat_activity WHERE application_name = 'hookwatch' AND query LIKE 'DELETE FROM events%' AND wait_event_type = 'Lock'")).length ? true : undefined), 10_000);
    // Renewed every third of the lease for twice the lease, each renewal answered: one the lease row held back
    // would be given up after its bound (a third of the lease) and answer false.
    const renewals: number[] = [];
    for (let i = 0; i < 6; i++) {
      const sent = performance.now();
      expect(await a.tick(), `renewal ${i}`).toBe(true);
      renewals.push(Math.round(performance.now() - sent));
      await new Promise((resolve) => setTimeout(resolve, TTL_MS / 3));
    }
    // eslint-disable-next-line no-console
    console.log(`renewals while a retention batch waited on a row lock took ${renewals.join(', ')} ms`);
    await other.query('COMMIT');
    expect(await run).toBeUndefined();
    expect(await eventsLeft(url)).toBe(0);
  }, 60_000);

  it.each([
    // Another replica took the lease over meanwhile: it runs retention now, this one's run is not a failure.
    ['moved to another replica', 'not_leader'],
    // Nobody else leads (its renewals went on, a pause of its retention alone): a real failure, paged as such.
    ['still its own', 'failure'],
  ])('a run whose batch the server ended while paused, the lease then %s, counts as %s', async (lease, outcome) => {
    const { url, store, a } = await fencedStore();
    const b = new PostgresLease({ url, holder: 'b', ttlMs: TTL_MS });
    db.defer(() => b.stop());
    const { logger, lines } = recordingLogger();
    // Retention by the database clock: every event is past the bound, in the day holding it.
    const eventsMs = Date.now() - (T0 + 2 * 3_600_000);
    const retention = new Retention({ store, eventsMs, rollupsMs: eventsMs, isLeader: () => a.epoch() !== null, logger, now: Date.now });
    const pause = pauseAt(insideThirdBatch);
    db.defer(async () => pause.restore());
    const run = retention.run();
    await pause.paused;
    // The server ends the paused batch once it is idle for half a lease; meanwhile a renews, or b takes over.
    const ended = async (): Promise<boolean> => (await queryOnce(url, "SELECT 1 FROM pg_stat_activity WHERE application_name = 'hookwatch' AND state LIKE 'idle in transaction%'")).length === 0;
    const moved = lease === 'moved to another replica';
    await waitFor('the paused batch to be ended by the server', async () => ((await (moved ? b : a).tick()) && (await ended()) ? true : undefined), 20_000, TTL_MS / 4);
    expect(a.isLeader()).toBe(!moved);
    pause.resume();
    await run;
    pause.restore();
    const stats = retention.stats;
    // eslint-disable-next-line no-console
    console.log(`lease ${lease}: ${lines.filter((l) => l.level === 'warn').map((l) => l.msg).join('; ')}`);
    expect({ notLeader: stats.notLeader, failed: stats.failed, succeeded: stats.succeeded }).toEqual(outcome === 'not_leader' ? { notLeader: 1, failed: 0, succeeded: 0 } : { notLeader: 0, failed: 1, succeeded: 0 });
    expect(await eventsLeft(url)).toBe(EVENTS - 2 * BATCH);
  }, 60_000);
});

describe('retention stopped with the process', () => {
  it('a run stopped while a batch is under way ends once that batch commits, counted as stopped; the next run deletes the rest', async () => {
    const { url, store } = await fencedStore();
    // Retention by the database clock: every event is past the bound, in the day holding it.
    const eventsMs = Date.now() - (T0 + 2 * 3_600_000);
    const retention = new Retention({ store, eventsMs, rollupsMs: eventsMs, isLeader: () => true, logger: recordingLogger().logger, now: Date.now });
    const pause = pauseAt(insideThirdBatch);
    db.defer(async () => pause.restore());
    void retention.run();
    await pause.paused;
    // The process stops (SIGTERM) while the third batch is on its way to the server.
    const stopping = retention.stop();
    pause.resume();
    await stopping;
    pause.restore();
    // That batch commits; the run sends none after it (it went on to the end before).
    expect(await eventsLeft(url)).toBe(EVENTS - 3 * BATCH);
    expect(retention.stats).toMatchObject({ stopped: 1, succeeded: 0, failed: 0, notLeader: 0 });
    expect(retention.stats.removed.events).toBe(3 * BATCH);

    const next = new Retention({ store, eventsMs, rollupsMs: eventsMs, isLeader: () => true, logger: recordingLogger().logger, now: Date.now });
    await next.run();
    expect(next.stats).toMatchObject({ succeeded: 1, stopped: 0 });
    expect(next.stats.removed.events).toBe(EVENTS - 3 * BATCH);
    expect(await eventsLeft(url)).toBe(0);
  }, 60_000);
});
