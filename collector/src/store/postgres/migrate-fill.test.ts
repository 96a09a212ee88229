/**
 * Migration 15 (attr_sets.first_ms, filled from every event) on a database with a history, while a replica of the
 * previous version goes on ingesting: its batches wait for the fill at most what an exporter tolerates, every one
 * is committed, and the fill is finished by the next start after the process migrating is killed halfway.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { startReplica } from '../../../test/support/serve-process.ts';
import { queryOnce } from '../../../test/support/postgres/server.ts';
import { recordingLogger } from '../../../test/support/recording-logger.ts';
import { ATTR_COLUMNS } from '../sql.ts';
import { PG_UNDO_DAY_CHANGES, PG_UNDO_SIZES_MAY_SUM } from '../../../test/support/downgrade.ts';
import { MIGRATIONS, PostgresStore } from './index.ts';
import { FILL_BATCH_ROWS, MIGRATION_STEP_LOCK_TIMEOUT_MS } from './migrate.ts';

const DAY = 86_400_000;
/** 2026-03-02T00:00:00Z: the history's first day. */
const T0 = Date.UTC(2026, 2, 2);
/** The version that adds and fills attr_sets.first_ms. */
const FIRST_MS_VERSION = MIGRATIONS.findIndex((m) => JSON.stringify(m).includes('first_ms')) + 1;
/**
 * The OpenTelemetry exporters' default timeout (OTEL_EXPORTER_OTLP_TIMEOUT, what Claude Code's exporter uses unless
 * told otherwise): a batch not answered within it is abandoned and sent again, or dropped.
 */
const EXPORTER_TIMEOUT_MS = 10_000;
/**
 * The longest a batch of a replica may wait on the migration: a step's lock timeout (what a write queued behind a
 * step waits at most) and as long again for the batch's own work on a loaded machine, and no more than a fifth of
 * the exporter's timeout, which leaves the network and a retry the rest. The fill in one transaction held every
 * batch for as long as it read the events: 7.9 s at eight million events on a 2-core machine.
 */
const INGEST_WAIT_BOUND_MS = Math.min(2 * MIGRATION_STEP_LOCK_TIMEOUT_MS, EXPORTER_TIMEOUT_MS / 5);

const fx = useReplicaFixture();

/**
 * A database at the schema before FIRST_MS_VERSION (the indexes of the later versions left in place: they are built
 * without holding writes, migrate.test.ts) holding `events` events over `days` days, `perSet` events to an attribute
 * set (a session), and 10 sets without events. Each day's events are written into a table of their own, then
 * attached as the day's partition, so the indexes are built once rather than row by row.
 */
async function beforeFirstMs(events: number, perSet: number, days: number): Promise<{ url: string; sets: number }> {
  const url = await fx.server().createDatabase();
  await (await PostgresStore.open({ url, poolSize: 1 })).close();
  const sets = Math.ceil(events / perSet);
  const perDay = Math.ceil(events / days);
  const dayNumbers = Array.from({ length: days }, (_, k) => Math.floor(T0 / DAY) + k);
  // Session s's events follow each other; sessions are spread over the sets' ids (7919 is prime).
  await queryOnce(url, `INSERT INTO attr_sets (digest, last_ms, ${ATTR_COLUMNS.join(', ')})
      SELECT sha256(int4send(i)), ${T0 + days * DAY}, 'claude-code', '2.1.310', 'session-' || i, 'user-' || (i % 500), '', '', 'org', 'xterm', '', '{}'::jsonb
      FROM generate_series(1, ${sets + 10}) AS i;
    ${dayNumbers.map((d, k) => `CREATE TABLE events_d${d} (LIKE events INCLUDING DEFAULTS);
      INSERT INTO events_d${d} (time_ms, hook, received_ms, attrs, kind, status, sizes_known, key)
        SELECT ${d * DAY} + (i - ${k * perDay}) * ${Math.floor(DAY / perDay)}, i % 60, NULL, 1 + ((i::bigint / ${perSet}) * 7919) % ${sets}, 1, 3, 1, i
        FROM generate_series(${k * perDay}, ${Math.min(events, (k + 1) * perDay) - 1}) AS i;
      ALTER TABLE events ATTACH PARTITION events_d${d} FOR VALUES FROM (${d * DAY}) TO (${(d + 1) * DAY});`).join('\n')}
    ALTER TABLE attr_sets DROP COLUMN first_ms;
    ${PG_UNDO_DAY_CHANGES}
    ${PG_UNDO_SIZES_MAY_SUM}
    DELETE FROM schema_migrations WHERE version >= ${FIRST_MS_VERSION};`);
  // As autovacuum leaves a table written long ago.
  await queryOnce(url, 'VACUUM ANALYZE events');
  await queryOnce(url, 'VACUUM ANALYZE attr_sets');
  return { url, sets: sets + 10 };
}

/**
 * The sets whose first_ms is not the earliest time of their events (0 for a set without events), as a fill in one
 * transaction leaves them, but for the sets the previous version's ingest (session `live-...`) made after the fill
 * read the events: those keep 0, as the sets it makes after the migration do.
 */
async function wrongFirstMs(c: pg.Client): Promise<number> {
  const r = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM attr_sets s
    LEFT JOIN (SELECT attrs, MIN(time_ms) AS m FROM events GROUP BY attrs) f ON f.attrs = s.id
    WHERE s.first_ms <> coalesce(f.m, 0) AND NOT (s.session_id LIKE 'live-%' AND s.first_ms = 0)`);
  return r.rows[0]!.n;
}

/** The definition of attr_sets.first_ms: its type, NOT NULL and default. */
async function firstMsColumn(c: pg.Client): Promise<unknown> {
  return (await c.query(`SELECT format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS "notNull", pg_get_expr(d.adbin, d.adrelid) AS "default"
    FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE a.attrelid = 'attr_sets'::regclass AND a.attname = 'first_ms' AND NOT a.attisdropped`)).rows[0];
}

/**
 * One OTLP batch as a replica of the previous version stores it (its statements on the tables the migration
 * changes): the batch's attribute sets upserted in digest order, an existing session's and a new one's, then its
 * events, in one transaction. Resolves with how long it took.
 */
async function previousVersionBatch(c: pg.Client, n: number, existingSet: number): Promise<number> {
  const started = performance.now();
  await c.query('BEGIN');
  try {
    const sets = await c.query<{ id: number }>(`INSERT INTO attr_sets AS t (digest, last_ms, ${ATTR_COLUMNS.join(', ')})
      SELECT d, $3, 'claude-code', '2.1.310', s, 'user-1', '', '', 'org', 'xterm', '', '{}'::jsonb
      FROM (VALUES (sha256(int4send($1::int)), 'session-' || $1), (sha256(convert_to('live-' || $2, 'UTF8')), 'live-' || $2)) AS v(d, s)
      ORDER BY d
      ON CONFLICT (digest) DO UPDATE SET last_ms = GREATEST(t.last_ms, excluded.last_ms)
      RETURNING id`, [existingSet, n, Date.now()]);
    const now = Date.now();
    await c.query(`INSERT INTO events (time_ms, hook, received_ms, attrs, kind, status, sizes_known, key)
      SELECT $1::bigint + i, i, NULL, (ARRAY[$2::int, $3::int])[1 + i % 2], 1, 3, 1, -($4::bigint * 10 + i) FROM generate_series(1, 5) AS i`,
    [now, sets.rows[0]!.id, sets.rows[1]!.id, n]);
    await c.query('COMMIT');
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
  return performance.now() - started;
}

describe('PostgreSQL migration 15 beside the previous version\'s ingest', () => {
  it('fills attr_sets.first_ms over a history of a million events while every batch of another replica commits within the bound', { timeout: 300_000 }, async () => {
    expect(FIRST_MS_VERSION).toBe(15);
    const { url, sets } = await beforeFirstMs(1_000_000, 50, 4);
    const writer = new pg.Client({ connectionString: url });
    const watcher = new pg.Client({ connectionString: url });
    await writer.connect();
    await watcher.connect();
    fx.defer(() => writer.end());
    fx.defer(() => watcher.end());
    /** Whether the migration is filling: the column is there (committed) and the version not yet recorded. */
    const filling = async (): Promise<boolean> => (await watcher.query<{ f: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'attr_sets'::regclass AND attname = 'first_ms' AND NOT attisdropped)
        AND NOT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1) AS f`, [FIRST_MS_VERSION])).rows[0]!.f;

    const log = recordingLogger();
    const migrating = PostgresStore.open({ url, poolSize: 2, logger: log.logger });
    let done = false;
    void migrating.then((s) => {
      done = true;
      fx.defer(() => s.close());
    }, () => (done = true));
    const waits: number[] = [];
    let during = 0;
    while (!done) {
      const before = await filling();
      waits.push(await previousVersionBatch(writer, waits.length + 1, 1 + (waits.length * 37) % (sets - 10)));
      if (before && (await filling())) during++;
      await new Promise((r) => setTimeout(r, 20));
    }
    const store = await migrating;
    expect(await store.schemaVersion()).toBe(MIGRATIONS.length);

    // Batches went in while the fill was under way, not only around it (a fill in the transaction that adds the
    // column is never seen under way), and none waited past the bound.
    const longest = Math.max(...waits);
    expect(longest, `the longest of ${waits.length} batches waited ${Math.round(longest)} ms`).toBeLessThan(INGEST_WAIT_BOUND_MS);
    expect(during).toBeGreaterThan(0);
    // In batches: at least one for every FILL_BATCH_ROWS sets of the history.
    const filledLine = log.lines.find((l) => l.msg.startsWith('schema migration column filled'));
    expect(filledLine?.msg).toMatch(/"table":"attr_sets","column":"first_ms"/);
    expect(Number(/"batches":(\d+)/.exec(filledLine?.msg ?? '')?.[1])).toBeGreaterThanOrEqual(Math.ceil((sets - 10) / FILL_BATCH_ROWS));
    // Every batch is stored; every set has the first_ms a fill in one transaction gives it.
    const stored = await watcher.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE key < 0');
    expect(stored.rows[0]!.n).toBe(waits.length * 5);
    expect(await wrongFirstMs(watcher)).toBe(0);
    expect(await firstMsColumn(watcher)).toEqual({ type: 'bigint', notNull: true, default: '0' });
  });

  it('finishes the fill at the next start after the process migrating was killed halfway', { timeout: 180_000 }, async () => {
    const { url, sets } = await beforeFirstMs(300_000, 2, 2);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    fx.defer(() => c.end());
    let child: ChildProcess | undefined;
    fx.defer(async () => void child?.kill('SIGKILL'));
    const starting = startReplica({ db: url, cwd: mkdtempSync(join(fx.dir(), 'replica-')), startTimeoutMs: 120_000, onSpawn: (p) => (child = p) });
    const outcome = starting.then((r) => r.stop().then(() => 'started'), (err: unknown) => String(err));
    /** Sets filled so far (committed batches), or -1 before the column is there. */
    const filled = async (): Promise<number> => {
      try {
        return (await c.query<{ n: number }>('SELECT count(*)::int AS n FROM attr_sets WHERE first_ms <> 0')).rows[0]!.n;
      } catch {
        return -1;
      }
    };
    // Killed as soon as a batch is committed.
    for (const until = Date.now() + 120_000; Date.now() < until; await new Promise((r) => setTimeout(r, 5))) {
      if ((await filled()) > 0 || child?.exitCode !== null) break;
    }
    child!.kill('SIGKILL');
    expect(await outcome).toMatch(/exited \(SIGKILL\) before starting/);
    // Killed halfway: some batches written, the version not recorded.
    const left = await filled();
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(sets - 10);
    expect((await c.query<{ v: number }>('SELECT MAX(version) AS v FROM schema_migrations')).rows[0]!.v).toBe(FIRST_MS_VERSION - 1);

    const store = await PostgresStore.open({ url, poolSize: 1 });
    fx.defer(() => store.close());
    expect(await store.schemaVersion()).toBe(MIGRATIONS.length);
    expect(await wrongFirstMs(c)).toBe(0);
    expect(await filled()).toBe(sets - 10);
    expect(await firstMsColumn(c)).toEqual({ type: 'bigint', notNull: true, default: '0' });
  });
});
