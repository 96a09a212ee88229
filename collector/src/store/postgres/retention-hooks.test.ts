/**
 * Retention removing hooks with nothing left, batch by batch, on a real PostgreSQL, while ingest goes on between
 * the batches: a hook a batch has deleted is new again to the next ingest, which counts it against store.maxHooks
 * as any new hook. So is one deleted after an ingest took it for a known hook (its own replica's retention while
 * the batch waits, another replica's that it has not heard of yet): the batch that stores it again counts it. A
 * batch admitting new hooks that found it stored counts the table as it was then, with it.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { hookEvent } from '../../../test/support/alerting.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { queryOnce } from '../../../test/support/postgres/server.ts';
import { waitFor } from '../../../test/support/serve-process.ts';
import { overflowHookName } from '../../hooks/model.ts';
import { FOLD_LOCK_KEY, PostgresStore } from './index.ts';

const db = useTestServer();
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 2, 2, 12);

/** The stored hooks' names, in name order. */
async function hookNames(url: string): Promise<string[]> {
  return (await queryOnce<{ hook_name: string }>(url, 'SELECT hook_name FROM hooks ORDER BY hook_name')).map((h) => h.hook_name);
}

/**
 * Holds the answer to the first statement of the next ingest transaction that takes the exclusive fold lock (the
 * one that reads the hooks table to count it against store.maxHooks) until `release`: the database has answered,
 * the batch has not gone on. The statement and its answer are PostgreSQL's own; only their arrival here waits.
 */
function holdFoldRead(): { reached: Promise<void>; release: () => void; restore: () => void } {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  const locked = new WeakSet<object>();
  let armed = true;
  let reached = (): void => undefined;
  let release = (): void => undefined;
  const reachedP = new Promise<void>((resolve) => (reached = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  proto.query = function (this: object, ...args: unknown[]): unknown {
    const result = original.apply(this, args);
    if (!armed || !(result instanceof Promise)) return result;
    if (args[0] === 'SELECT pg_advisory_xact_lock($1)' && (args[1] as unknown[] | undefined)?.[0] === FOLD_LOCK_KEY) {
      locked.add(this);
      return result;
    }
    if (!locked.has(this)) return result;
    armed = false;
    return result.then(async (answer: unknown) => {
      reached();
      await released;
      return answer;
    });
  };
  return { reached: reachedP, release, restore: () => void (proto.query = original) };
}

describe('retention of hooks with nothing left', () => {
  it('a hook deleted by one batch is counted against store.maxHooks when it comes back before the next batch', { timeout: 60_000 }, async () => {
    const url = await db.server().createDatabase();
    // One hook deleted per batch.
    const store = db.track(await PostgresStore.open({ url, poolSize: 3, maxHooks: 2, pruneBatch: 1 }));
    const names = ['PostToolUse:one', 'PostToolUse:two'];
    // Each hook's events twice: the second batch finds the hooks stored, and the store keeps them as known.
    for (const at of [T0, T0 + 1000]) await store.ingest(names.map((hookName) => hookEvent({ hookName, timeMs: at })));
    // The hooks are deleted in hook id order: the second one's row held, the run waits before its second batch.
    const [first, second] = names.map((hookName) => ({ hookName, id: hookEvent({ hookName, timeMs: T0 }).hookId })).sort((a, b) => (a.id < b.id ? -1 : 1));
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    await other.query('BEGIN');
    await other.query('SELECT 1 FROM hooks WHERE hook_id = $1 FOR UPDATE', [second!.id]);
    const run = store.prune(T0 + 2 * DAY, T0 + 2 * DAY);
    // The lock goes with the connection: a run left waiting by a failed expectation ends before the store closes.
    db.defer(async () => {
      await other.end();
      await run.catch(() => undefined);
    });
    await waitFor('the second batch of hooks to wait on the lock', async () => ((await queryOnce(url, "SELECT 1 FROM pg_stat_activity WHERE application_name = 'hookwatch' AND query LIKE 'SELECT hook_id FROM hooks WHERE hook_id = ANY%' AND wait_event_type = 'Lock'")).length ? true : undefined), 10_000);
    expect(await store.hook(first!.id)).toBeUndefined();

    // A new hook takes the room the first batch made: the table is at store.maxHooks again.
    const now = T0 + 3 * DAY;
    expect((await store.ingest([hookEvent({ hookName: 'PostToolUse:three', timeMs: now })])).folded ?? 0).toBe(0);
    // The deleted hook is new again: past the limit, its event goes to the overflow hook.
    const back = await store.ingest([hookEvent({ hookName: first!.hookName, timeMs: now })]);
    expect(back).toMatchObject({ folded: 1, overflowHooks: [overflowHookName('PostToolUse')] });
    expect(await store.hook(first!.id)).toBeUndefined();

    await other.query('ROLLBACK');
    expect((await run).hooks).toBe(2);
    expect(await hookNames(url)).toEqual([overflowHookName('PostToolUse'), 'PostToolUse:three']);
  });

  it('a hook deleted while a batch taking it for known waits for its transaction is counted against store.maxHooks', { timeout: 60_000 }, async () => {
    const url = await db.server().createDatabase();
    // A connection for each of the two ingests left waiting and one for retention.
    const store = db.track(await PostgresStore.open({ url, poolSize: 4, maxHooks: 2 }));
    const now = T0 + 3 * DAY;
    // "one" has only old events, "two" new ones too; each stored twice, so the store keeps both as known.
    for (const at of [T0, T0 + 1000]) await store.ingest([hookEvent({ hookName: 'PostToolUse:one', timeMs: at }), hookEvent({ hookName: 'PostToolUse:two', timeMs: at })]);
    await store.ingest([hookEvent({ hookName: 'PostToolUse:two', timeMs: now })]);
    // The fold lock held: every ingest transaction waits for it, in the order they come.
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    // The lock goes with the connection: what a failed expectation leaves waiting ends before the store closes.
    const pending: Promise<unknown>[] = [];
    db.defer(async () => {
      await other.end();
      await Promise.allSettled(pending);
    });
    await other.query('BEGIN');
    await other.query('SELECT pg_advisory_xact_lock($1)', [FOLD_LOCK_KEY]);
    const waiting = (n: number) => async () => ((await queryOnce(url, "SELECT 1 FROM pg_stat_activity WHERE application_name = 'hookwatch' AND query LIKE 'SELECT pg_advisory_xact_lock%' AND wait_event_type = 'Lock'")).length === n ? true : undefined);
    // A new hook first: it counts the table once the lock is let go.
    const three = store.ingest([hookEvent({ hookName: 'PostToolUse:three', timeMs: now })]);
    pending.push(three);
    await waitFor('the new hook to wait on the fold lock', waiting(1), 10_000);
    // Then "one", taken for a known hook: it comes after the new one.
    const back = store.ingest([hookEvent({ hookName: 'PostToolUse:one', timeMs: now })]);
    pending.push(back);
    await waitFor('the known hook to wait on the fold lock', waiting(2), 10_000);
    // Meanwhile retention deletes "one": the new hook takes its room. (The run's index rebuilds, after the hooks,
    // wait for the transactions waiting on the lock.)
    const run = store.prune(T0 + 2 * DAY, T0 + 2 * DAY);
    pending.push(run);
    await waitFor('retention to delete "one"', async () => ((await hookNames(url)).includes('PostToolUse:one') ? undefined : true), 10_000);
    await other.query('ROLLBACK');
    expect((await run).hooks).toBe(1);
    expect((await three).folded ?? 0).toBe(0);
    expect(await back).toMatchObject({ folded: 1, overflowHooks: [overflowHookName('PostToolUse')] });
    expect(await hookNames(url)).toEqual([overflowHookName('PostToolUse'), 'PostToolUse:three', 'PostToolUse:two']);
  });

  it("a hook another replica's retention deleted is counted against store.maxHooks before this replica reads the new bounds", { timeout: 60_000 }, async () => {
    const url = await db.server().createDatabase();
    // The follower trusts the bounds it read for an hour: events of the last hour do not make it read them again.
    const follower = db.track(await PostgresStore.open({ url, poolSize: 2, maxHooks: 2, boundsRefreshMs: 3_600_000 }));
    const leader = db.track(await PostgresStore.open({ url, poolSize: 2, maxHooks: 2 }));
    const now = Date.now();
    const old = now - 3 * DAY;
    for (const at of [old, old + 1000]) await follower.ingest([hookEvent({ hookName: 'PostToolUse:one', timeMs: at }), hookEvent({ hookName: 'PostToolUse:two', timeMs: at })]);
    await follower.ingest([hookEvent({ hookName: 'PostToolUse:two', timeMs: now })]);
    expect((await leader.prune(now - 2 * DAY, now - 2 * DAY)).hooks).toBe(1);
    expect((await leader.ingest([hookEvent({ hookName: 'PostToolUse:three', timeMs: now })])).folded ?? 0).toBe(0);
    // "one" is still known to the follower: the batch that stores it again counts it, past the limit.
    const back = await follower.ingest([hookEvent({ hookName: 'PostToolUse:one', timeMs: now })]);
    expect(back).toMatchObject({ folded: 1, overflowHooks: [overflowHookName('PostToolUse')] });
    expect(await hookNames(url)).toEqual([overflowHookName('PostToolUse'), 'PostToolUse:three', 'PostToolUse:two']);
  });
  it('a hook a batch admitting new hooks found stored and retention then deleted is counted against store.maxHooks', { timeout: 60_000 }, async () => {
    const url = await db.server().createDatabase();
    // A connection for the ingest and one for retention.
    const store = db.track(await PostgresStore.open({ url, poolSize: 3, maxHooks: 2 }));
    const now = T0 + 3 * DAY;
    // "one" has only old events, "two" new ones too.
    await store.ingest([hookEvent({ hookName: 'PostToolUse:one', timeMs: T0 }), hookEvent({ hookName: 'PostToolUse:two', timeMs: T0 })]);
    await store.ingest([hookEvent({ hookName: 'PostToolUse:two', timeMs: now })]);
    // A batch with a new hook, "three", and "one" again: it reads which of its hooks are stored, and how many hooks.
    const hold = holdFoldRead();
    const pending: Promise<unknown>[] = [];
    db.defer(async () => {
      hold.release();
      hold.restore();
      await Promise.allSettled(pending);
    });
    const back = store.ingest([hookEvent({ hookName: 'PostToolUse:three', timeMs: now }), hookEvent({ hookName: 'PostToolUse:one', timeMs: now })]);
    pending.push(back);
    await hold.reached;
    hold.restore();
    // Retention deletes "one" before the batch goes on. (The run's index rebuilds, after the hooks, wait for the
    // batch's transaction.)
    const run = store.prune(T0 + 2 * DAY, T0 + 2 * DAY);
    pending.push(run);
    await waitFor('retention to delete "one"', async () => ((await hookNames(url)).includes('PostToolUse:one') ? undefined : true), 10_000);
    hold.release();
    // The batch counted "one" as stored, and the table as it was when it looked: "three" is past the limit.
    const stored = await back;
    expect(await hookNames(url)).toEqual([overflowHookName('PostToolUse'), 'PostToolUse:one', 'PostToolUse:two']);
    expect(stored).toMatchObject({ folded: 1, overflowHooks: [overflowHookName('PostToolUse')] });
    expect((await run).hooks).toBe(1);
  });
});
