/**
 * A schema migration kept waiting by another session on a real PostgreSQL: an old replica's ingest left open
 * (its rows and the table's write lock), or a long read (a report, a backup) whose snapshot an index build waits
 * out. The migration says what it waits for while it waits, and past its bound gives up with an error naming the
 * session and how to end it, having left nothing the next start cannot take up; once that session ends, the next
 * start migrates.
 */
import pg from 'pg';
import { expect, it } from 'vitest';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { queryOnce } from '../../../test/support/postgres/server.ts';
import { recordingLogger } from '../../../test/support/recording-logger.ts';
import { PG_UNDO_DAY_CHANGES, PG_UNDO_SIZES_MAY_SUM } from '../../../test/support/downgrade.ts';
import { LATE_ARRIVAL_INDEX } from '../sql.ts';
import { MIGRATIONS, PostgresStore } from './index.ts';
import { MigrationBlockedError } from './migrate.ts';

const t = useTestServer();
/** The bound given to the migration here (migrationBlockedMs), instead of minutes. */
const BLOCKED_MS = 4000;
const APPLICATION = 'nightly-report';

/** The last migration that builds an index of the events, partition by partition (the late arrivals'). */
const LATE_VERSION = MIGRATIONS.findIndex((m) => typeof m === 'object' && 'build' in m && m.build.index === LATE_ARRIVAL_INDEX) + 1;

/**
 * A database at the schema before its last index build (LATE_VERSION) and the migrations after it (the days' change
 * generations, the count of executions whose sizes may be sums).
 */
async function previousSchema(): Promise<string> {
  const url = await t.server().createDatabase();
  await (await PostgresStore.open({ url, poolSize: 1 })).close();
  await queryOnce(url, `DROP INDEX ${LATE_ARRIVAL_INDEX.name}; ${PG_UNDO_DAY_CHANGES} ${PG_UNDO_SIZES_MAY_SUM} DELETE FROM schema_migrations WHERE version >= ${LATE_VERSION};`);
  return url;
}

const holds = {
  // A read under REPEATABLE READ (pg_dump's), its snapshot kept: the index build waits for it to end.
  'a long read\'s snapshot': async (c: pg.Client): Promise<void> => {
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await c.query('SELECT count(*) FROM events');
  },
  // An insert not committed: the table's write lock, which creating the index on the parent waits for.
  'an ingest left open': async (c: pg.Client): Promise<void> => {
    await c.query('BEGIN');
    await c.query('INSERT INTO events (time_ms, hook, received_ms, attrs, kind, status, sizes_known, key) VALUES ($1, 1, $1, 1, 1, 3, 1, 1)', [Date.now()]);
  },
};

for (const [what, hold] of Object.entries(holds)) {
  it(`gives up on a migration kept waiting by ${what} past its bound, naming the session; the next start migrates`, async () => {
    const url = await previousSchema();
    const holder = new pg.Client({ connectionString: url, application_name: APPLICATION });
    await holder.connect();
    t.defer(() => holder.end());
    await hold(holder);
    const holderPid = Number((await holder.query<{ p: number }>('SELECT pg_backend_pid() AS p')).rows[0]?.p);

    const log = recordingLogger();
    const t0 = performance.now();
    const err = await PostgresStore.open({ url, poolSize: 2, logger: log.logger, migrationBlockedMs: BLOCKED_MS }).then((s) => t.track(s), (e: unknown) => e);
    const tookMs = performance.now() - t0;
    // eslint-disable-next-line no-console
    console.log(`migration kept waiting by ${what}: ${String(err)} after ${Math.round(tookMs)} ms`);
    expect(err).toBeInstanceOf(MigrationBlockedError);
    const message = (err as Error).message;
    expect(message).toMatch(new RegExp(`^the schema migration waited \\d+ s for a lock or snapshot held by PostgreSQL backend ${holderPid} \\(application "${APPLICATION}", user "[^"]+", from [^,]+, idle in transaction, its transaction open \\d+ s\\), and gave up`));
    expect(message).toContain(`end it (SELECT pg_terminate_backend(${holderPid}))`);
    // Within seconds of the bound, not after the attempts of every step.
    expect(tookMs).toBeGreaterThanOrEqual(BLOCKED_MS);
    expect(tookMs).toBeLessThan(BLOCKED_MS + 10_000);
    // While it waited it said what for, naming the session.
    const waiting = log.lines.filter((l) => l.msg.startsWith('schema migration waiting for a lock or snapshot held by another session'));
    expect(waiting.length).toBeGreaterThan(0);
    expect(waiting[0]?.level).toBe('warn');
    expect(waiting[0]?.msg).toContain(`PostgreSQL backend ${holderPid} (application \\"${APPLICATION}\\"`);
    expect(log.lines.filter((l) => l.level === 'error').map((l) => l.msg.replace(/ \{.*/, ''))).toEqual(['schema migration given up: another session kept it waiting']);
    // Nothing applied, read while the session still holds it (its own snapshot, under REPEATABLE READ, predates the
    // migration and would show the old version whatever was committed); that session goes on, unharmed.
    expect(await queryOnce<{ v: number }>(url, 'SELECT max(version) AS v FROM schema_migrations')).toEqual([{ v: LATE_VERSION - 1 }]);
    expect((await holder.query<{ n: number }>('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
    await holder.query('ROLLBACK');

    const store = t.track(await PostgresStore.open({ url, poolSize: 2, migrationBlockedMs: BLOCKED_MS }));
    expect(await store.schemaVersion()).toBe(MIGRATIONS.length);
    const invalid = await queryOnce<{ n: string }>(url, 'SELECT c.relname AS n FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid WHERE NOT x.indisvalid');
    expect(invalid).toEqual([]);
  }, 120_000);
}
