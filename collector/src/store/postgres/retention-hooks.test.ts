/**
 * Retention removing hooks with nothing left, batch by batch, on a real PostgreSQL, while ingest goes on between
 * the batches: a hook a batch has deleted is new again to the next ingest, which counts it against store.maxHooks
 * as any new hook.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { hookEvent } from '../../../test/support/alerting.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { queryOnce } from '../../../test/support/postgres/server.ts';
import { waitFor } from '../../../test/support/postgres/replicas.ts';
import { overflowHookName } from '../../hooks/model.ts';
import { PostgresStore } from './index.ts';

const db = useTestServer();
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 2, 2, 12);

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
    const hooks = await queryOnce<{ hook_name: string }>(url, 'SELECT hook_name FROM hooks ORDER BY hook_name');
    expect(hooks.map((h) => h.hook_name)).toEqual([overflowHookName('PostToolUse'), 'PostToolUse:three']);
  });
});
