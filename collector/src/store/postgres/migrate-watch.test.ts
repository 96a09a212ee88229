/**
 * The watch over a migration's connection (BlockedWatch) and its short steps (shortSteps) on a real PostgreSQL,
 * where its cancel comes to nothing: one landing as the statement it was meant for has just ended is lost, as the
 * one of a session without the right to cancel the migration's is here (a role of its own, not the migration's).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { expect, it } from 'vitest';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { queryOnce } from '../../../test/support/postgres/server.ts';
import { waitFor } from '../../../test/support/serve-process.ts';
import { recordingLogger } from '../../../test/support/recording-logger.ts';
import { BlockedWatch, MigrationBlockedError, shortSteps } from './migrate.ts';

const t = useTestServer();
/** The bound given to the watch here, instead of minutes. */
const BOUND_MS = 1500;

/** `url` as another role (same password). */
function asRole(url: string, role: string): string {
  const u = new URL(url);
  u.username = role;
  return u.toString();
}

/**
 * A database with tables `a` and `b` owned by the migration's role, the migration's connection (`client`), a pool
 * of the watch's role, which may not cancel the migration's statements until `letWatchCancel`, and a connection of
 * the server's superuser to hold locks with (`holder`).
 */
async function setup(): Promise<{ url: string; client: pg.PoolClient; watchPool: pg.Pool; holder: pg.Client; letWatchCancel(): Promise<void> }> {
  const url = await t.server().createDatabase();
  const password = t.server().password;
  const suffix = randomUUID().slice(0, 8);
  const migrator = `migrator_${suffix}`;
  const watcher = `watcher_${suffix}`;
  await queryOnce(url, `CREATE ROLE ${migrator} LOGIN PASSWORD '${password}'; CREATE ROLE ${watcher} LOGIN PASSWORD '${password}';
    CREATE TABLE a (x int); CREATE TABLE b (x int); ALTER TABLE a OWNER TO ${migrator}; ALTER TABLE b OWNER TO ${migrator};`);
  const migrationPool = new pg.Pool({ connectionString: asRole(url, migrator), max: 1 });
  const watchPool = new pg.Pool({ connectionString: asRole(url, watcher), max: 1 });
  const client = await migrationPool.connect();
  const holder = new pg.Client({ connectionString: url, application_name: 'nightly-report' });
  await holder.connect();
  t.defer(async () => {
    await holder.end();
    client.release(true);
    await migrationPool.end();
    await watchPool.end();
  });
  return { url, client, watchPool, holder, letWatchCancel: async () => void (await queryOnce(url, `GRANT ${migrator} TO ${watcher}`)) };
}

/**
 * A migration statement kept waiting by a session's read past the bound: the watch gives up, its cancel comes to
 * nothing (the watch may not cancel yet), and the session it waited for then ends, so the statement goes through.
 */
async function givenUpInVain(s: Awaited<ReturnType<typeof setup>>): Promise<{ log: ReturnType<typeof recordingLogger>; watch: BlockedWatch }> {
  await s.holder.query('BEGIN');
  await s.holder.query('SELECT * FROM a');
  const log = recordingLogger();
  const watch = await BlockedWatch.start(s.watchPool, s.client, log.logger, BOUND_MS);
  const altered = s.client.query('ALTER TABLE a ADD COLUMN y int');
  await waitFor('the watch to give up', async () => watch.gaveUp, 20_000);
  await s.holder.query('COMMIT');
  await altered;
  return { log, watch };
}

it('logs nothing given up when the statement it waits for ends as the bound passes, and the migration goes on', async () => {
  const s = await setup();
  const { log, watch } = await givenUpInVain(s);
  await watch.stop();
  expect(await queryOnce<{ n: string }>(s.url, "SELECT attname AS n FROM pg_attribute WHERE attrelid = 'a'::regclass AND attname = 'y'")).toEqual([{ n: 'y' }]);
  // The migration did not give up: nothing says it did.
  expect(log.lines.filter((l) => l.level === 'error')).toEqual([]);
  expect(log.lines.filter((l) => l.level === 'warn').length).toBeGreaterThan(0);
}, 60_000);

it('once given up, ends the migration at its next step and cancels a later wait, when its first cancel came to nothing', async () => {
  const s = await setup();
  const { log, watch } = await givenUpInVain(s);
  // A short step begins no attempt once the migration is given up.
  const step = await shortSteps(s.client, log.logger, () => s.client.query('ALTER TABLE a ADD COLUMN z int')).then(() => 'applied', (e: unknown) => e);
  expect(step).toBe(watch.gaveUp);
  // A statement outside the short steps (an index build waiting out a snapshot) that waits again is cancelled,
  // the watch's cancel now able to reach it.
  await s.letWatchCancel();
  await s.holder.query('BEGIN');
  await s.holder.query('SELECT * FROM b');
  t.defer(async () => void (await s.holder.query('ROLLBACK')));
  const waited = await Promise.race([
    s.client.query('ALTER TABLE b ADD COLUMN y int').then(() => 'applied', (e: unknown) => e),
    new Promise((r) => setTimeout(() => r('still waiting'), 15_000)),
  ]);
  expect((waited as { code?: string }).code).toBe('57014');
  const failure = watch.failure(waited);
  await watch.stop();
  expect(failure).toBeInstanceOf(MigrationBlockedError);
  expect(log.lines.filter((l) => l.level === 'error').map((l) => l.msg.replace(/ \{.*/, ''))).toEqual(['schema migration given up: another session kept it waiting']);
  expect(await queryOnce<{ n: string }>(s.url, "SELECT attname AS n FROM pg_attribute WHERE attrelid IN ('a'::regclass, 'b'::regclass) AND attname IN ('y', 'z') ORDER BY attrelid")).toEqual([{ n: 'y' }]);
}, 60_000);

it('gives up on a short step kept waiting past the bound when the watch cannot look at what it waits for', async () => {
  const s = await setup();
  await s.holder.query('BEGIN');
  await s.holder.query('SELECT * FROM a');
  t.defer(async () => void (await s.holder.query('ROLLBACK')));
  // No read connection to be had: every look fails.
  const closed = new pg.Pool({ connectionString: s.url, max: 1 });
  await closed.end();
  const log = recordingLogger();
  const watch = await BlockedWatch.start(closed, s.client, log.logger, BOUND_MS);
  const t0 = performance.now();
  const step = await Promise.race([
    shortSteps(s.client, log.logger, () => s.client.query('ALTER TABLE a ADD COLUMN y int')).then(() => 'applied', (e: unknown) => e),
    new Promise((r) => setTimeout(() => r('still trying'), 30_000)),
  ]);
  const tookMs = performance.now() - t0;
  const failure = watch.failure(step);
  await watch.stop();
  expect(failure).toBeInstanceOf(MigrationBlockedError);
  expect(step).toBe(failure);
  expect((failure as Error).message).toMatch(/^the schema migration waited \d+ s for a lock or snapshot held by another session, and gave up/);
  expect(tookMs).toBeGreaterThanOrEqual(BOUND_MS);
  expect(log.lines.filter((l) => l.level === 'error').map((l) => l.msg.replace(/ \{.*/, ''))).toEqual(['schema migration given up: another session kept it waiting']);
}, 60_000);

it('bounds each wait on its own: waits shorter than the bound, seconds apart, are not given up however long they last together', async () => {
  const s = await setup();
  const log = recordingLogger();
  // Waits of 1.2 s under a bound of 3 s, with room for a loaded machine's late timers; 3.6 s together.
  const boundMs = 3000;
  const watch = await BlockedWatch.start(s.watchPool, s.client, log.logger, boundMs);
  const waitMs = 1200;
  for (let i = 0; i < 3; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 6500)); // past the gap that ends a wait (5 s)
    await s.holder.query('BEGIN');
    await s.holder.query('SELECT * FROM a');
    await s.client.query('BEGIN');
    const locked = s.client.query('LOCK TABLE a IN ACCESS EXCLUSIVE MODE');
    await new Promise((r) => setTimeout(r, waitMs));
    await s.holder.query('COMMIT');
    await locked;
    await s.client.query('COMMIT');
  }
  await watch.stop();
  // 3.6 s of waiting in all, none given up; what is said of them counts each wait from its beginning.
  expect(watch.gaveUp).toBeUndefined();
  const said = log.lines.filter((l) => l.msg.startsWith('schema migration waiting for a lock or snapshot held by another session'));
  expect(said.length).toBeGreaterThanOrEqual(2);
  for (const l of said) expect(JSON.parse(l.msg.replace(/^[^{]*/, '')).waitedS).toBeLessThanOrEqual(1);
  expect(watch.failure('the error')).toBe('the error');
  expect(log.lines.filter((l) => l.level === 'error')).toEqual([]);
}, 60_000);
