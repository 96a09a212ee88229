/**
 * The days' change generations on PostgreSQL (day_changes): an ingest transaction bumps its day's row last, so a
 * transaction waiting on any other row of its batch (a replica paused inside its commit holds them all) does not
 * yet hold that row, which the batches of every replica whose connection shares its slot need.
 */
import pg from 'pg';
import { expect, it } from 'vitest';
import { hookId } from '../../hooks/extract.ts';
import type { HookEvent } from '../../hooks/model.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { waitFor } from '../../../test/support/serve-process.ts';
import { DAY_CHANGES, PostgresStore } from './index.ts';

const pgServer = useTestServer();

function execution(name: string, key: string, timeMs: number): HookEvent {
  return {
    kind: 'complete', dedupKey: `k-${name}-${key}`, hookId: hookId('PostToolUse', `PostToolUse:${name}`), hookEvent: 'PostToolUse', hookName: `PostToolUse:${name}`,
    timeMs, numHooks: 1, numSuccess: 1, numBlocking: 0, numNonBlockingError: 0, numCancelled: 0, durationMs: 10,
    stdoutChars: 1000, additionalContextChars: null, systemMessageChars: null, initialUserMessageChars: null, outputsPersisted: 0,
    sizesKnown: true, status: 'ok', serviceName: 'claude-code', serviceVersion: '2.1.332', sessionId: 's', userId: 'u', userEmail: '',
    userAccountUuid: '', organizationId: '', terminalType: '', source: 'otlp', extra: { team: 'web' },
  };
}

it('an ingest waiting on a row of its batch does not yet hold its day\'s change generation', async () => {
  const url = await pgServer.server().createDatabase();
  const store = pgServer.track(await PostgresStore.open({ url, poolSize: 2, dimensions: ['team'] }));
  const timeMs = Date.now() - 60_000;
  await store.ingest([execution('a', '1', timeMs)]);
  const connect = async (): Promise<pg.Client> => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    return c;
  };
  const [holder, probe] = [await connect(), await connect()];
  try {
    // The team's client rows, which every batch of the team writes, are held: the next batch waits on them.
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM rollup_dim_client_1h FOR UPDATE');
    const holderPid = Number((await holder.query<{ p: number }>('SELECT pg_backend_pid() AS p')).rows[0]?.p);
    const waiting = store.ingest([execution('a', '2', timeMs)]);
    await waitFor('the ingest to wait on the client rows', async () => {
      const r = await probe.query('SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [holderPid]);
      return r.rowCount ? true : undefined;
    }, 10_000, 10);
    // Every day's generations can be taken at once: the waiting transaction holds none of them.
    await probe.query('BEGIN');
    const held = await probe.query(`SELECT day, slot FROM ${DAY_CHANGES} FOR UPDATE NOWAIT`).then(() => 'none', (err: { code?: string }) => err.code);
    await probe.query('ROLLBACK');
    expect(held).toBe('none');
    await holder.query('ROLLBACK');
    await waiting;
  } finally {
    await Promise.all([holder.end(), probe.end()]);
  }
  // Both batches committed, each with its bump of the day's generations.
  const sums = new pg.Client({ connectionString: url });
  await sums.connect();
  try {
    const r = await sums.query<{ g: string; e: string }>(`SELECT (SELECT SUM(generation) FROM ${DAY_CHANGES})::text AS g, (SELECT SUM(executions) FROM rollup_1d)::text AS e`);
    expect(r.rows[0]?.e).toBe('2');
    expect(Number(r.rows[0]?.g)).toBeGreaterThanOrEqual(2);
  } finally {
    await sums.end();
  }
});
