/**
 * Schema migrations on a live database: the indexes a migration adds over the events are built while other
 * replicas go on writing, and a build cut short is finished by the next start.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { queryOnce } from '../../../test/support/postgres/server.ts';
import { recordingLogger } from '../../../test/support/recording-logger.ts';
import { ARRIVAL_INDEX, LATE_ARRIVAL_INDEX } from '../sql.ts';
import { MIGRATION_LOCK_KEY, MIGRATIONS, PostgresStore } from './index.ts';
import { partIndexName } from './migrate.ts';
import { PG_UNDO_DAY_CHANGES, PG_UNDO_SIZES_MAY_SUM } from '../../../test/support/downgrade.ts';

const DAY = 86_400_000;
/** 2026-03-02T00:00:00Z. */
const T0 = Date.UTC(2026, 2, 2);
const DAYS = 4;
/** The version that adds ARRIVAL_INDEX; the database is put back before it. */
const ARRIVAL_VERSION = MIGRATIONS.findIndex((m) => typeof m === 'object' && 'build' in m && m.build.index === ARRIVAL_INDEX) + 1;
/**
 * Puts a migrated database back at the schema before ARRIVAL_VERSION: neither of the arrival indexes, nor the days'
 * change generations, nor the count of executions whose sizes may be sums, nor their versions.
 */
const BEFORE_ARRIVAL = `DROP INDEX ${LATE_ARRIVAL_INDEX.name}; DROP INDEX ${ARRIVAL_INDEX.name}; ${PG_UNDO_DAY_CHANGES} ${PG_UNDO_SIZES_MAY_SUM}
  DELETE FROM schema_migrations WHERE version >= ${ARRIVAL_VERSION};`;

/**
 * What the previous version did at start: wait for the migration lock inside a transaction (a statement that
 * holds a snapshot while it waits), then read the schema version. Its outcome, as text.
 */
async function previousVersionStart(url: string): Promise<string> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('BEGIN');
    await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    const v = await c.query<{ v: number }>('SELECT MAX(version) AS v FROM schema_migrations');
    await c.query('COMMIT');
    return `version ${v.rows[0]?.v}`;
  } catch (err) {
    return String(err);
  } finally {
    await c.end();
  }
}

describe('PostgreSQL schema migrations beside live ingest', () => {
  const t = useTestServer();

  /** A database at the schema before ARRIVAL_VERSION, with `perDay` events on each of DAYS days. */
  const previousSchema = async (perDay: number): Promise<string> => {
    const url = await t.server().createDatabase();
    await (await PostgresStore.open({ url, poolSize: 1 })).close();
    const days = Array.from({ length: DAYS }, (_, d) => Math.floor(T0 / DAY) + d);
    await queryOnce(url, `${days.map((d) => `CREATE TABLE IF NOT EXISTS events_d${d} PARTITION OF events FOR VALUES FROM (${d * DAY}) TO (${(d + 1) * DAY});`).join('\n')}
      INSERT INTO events (time_ms, hook, received_ms, attrs, kind, status, sizes_known, key)
        SELECT ${T0} + (i % ${DAYS}) * ${DAY} + (i / ${DAYS}) * 50, i % 97, ${T0} + (i % ${DAYS}) * ${DAY} + (i / ${DAYS}) * 50 + 1000 + (i % 7) * 100000, 1, 1, 3, 1, i
        FROM generate_series(1, ${perDay * DAYS}) AS i;
      ANALYZE events;
      ${BEFORE_ARRIVAL}`);
    return url;
  };

  /** Each partition's part of an index attached to it, with its definition after USING, and whether it is valid. */
  const parts = async (c: pg.Client, index: string): Promise<{ part: string; def: string; valid: boolean }[]> => (await c.query<{ part: string; def: string; valid: boolean }>(
    `SELECT t.relname AS part, regexp_replace(pg_get_indexdef(x.indexrelid), '^.* USING ', '') AS def, x.indisvalid AS valid
     FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid JOIN pg_class t ON t.oid = x.indrelid
     WHERE i.inhparent = $1::regclass ORDER BY 1`, [index],
  )).rows;

  it('builds the arrival indexes while another connection inserts events with a 500 ms lock_timeout', { timeout: 300_000 }, async () => {
    const url = await previousSchema(400_000);
    const writer = new pg.Client({ connectionString: url });
    await writer.connect();
    const watcher = new pg.Client({ connectionString: url });
    await watcher.connect();
    t.defer(() => writer.end(), () => watcher.end());
    await writer.query("SET lock_timeout = '500ms'");
    /** Whether an index is being built on the events right now (the migration's, from its connection). */
    const building = async (): Promise<boolean> => (await watcher.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_progress_create_index p JOIN pg_class c ON c.oid = p.relid WHERE c.relname LIKE 'events%'`,
    )).rows[0]!.n > 0;

    const opening = PostgresStore.open({ url, poolSize: 2 }).then((s) => t.track(s));
    let done = false;
    void opening.then(() => (done = true), () => (done = true));
    // Until the migration ends: an insert into each day in turn, and a day made as an ingest would make it.
    let during = 0;
    let second: Promise<PostgresStore> | undefined;
    let previous: Promise<string> | undefined;
    const waiting = recordingLogger();
    let inserted = 0;
    const newDay = Math.floor(T0 / DAY) + DAYS;
    for (let i = 0; !done; i++) {
      const wasBuilding = await building();
      if (i === 5) await writer.query(`CREATE TABLE IF NOT EXISTS events_d${newDay} PARTITION OF events FOR VALUES FROM (${newDay * DAY}) TO (${(newDay + 1) * DAY})`);
      const day = i % (i > 5 ? DAYS + 1 : DAYS);
      const timeMs = T0 + day * DAY + 3_600_000 + i;
      await writer.query('INSERT INTO events (time_ms, hook, received_ms, attrs, kind, status, sizes_known, key) VALUES ($1, 1, $2, 1, 1, 3, 1, $3)', [timeMs, timeMs + 600_000, -1 - i]);
      inserted++;
      if (wasBuilding && (await building())) during++;
      if (wasBuilding && !second) {
        // Meanwhile a replica of this version starts, and one of the previous version, which waited for the lock
        // in a transaction.
        second = PostgresStore.open({ url, poolSize: 1, logger: waiting.logger }).then((st) => t.track(st));
        previous = previousVersionStart(url);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    const store = await opening;
    expect(await store.schemaVersion()).toBe(MIGRATIONS.length);
    // Inserts went in while a build was under way before and after them, not only around it.
    expect(during).toBeGreaterThan(0);
    const partitions = (await watcher.query<{ n: string }>(`SELECT c.relname AS n FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass ORDER BY 1`)).rows.map((r) => r.n);
    expect(partitions).toContain(`events_d${newDay}`);
    for (const ix of [ARRIVAL_INDEX, LATE_ARRIVAL_INDEX]) {
      const got = await parts(watcher, ix.name);
      expect(got.map((p) => p.part), ix.name).toEqual(partitions);
      expect(got.every((p) => p.valid && `btree ${p.def}`.includes('received_ms')), ix.name).toBe(true);
      expect((await watcher.query<{ v: boolean }>('SELECT indisvalid AS v FROM pg_index WHERE indexrelid = $1::regclass', [ix.name])).rows[0]?.v).toBe(true);
    }
    // The replica of this version waited for the migration and found nothing left to do.
    expect(await (await second!).schemaVersion()).toBe(MIGRATIONS.length);
    expect(waiting.lines.map((l) => l.msg)).toContain('waiting for another replica to finish migrating the schema');
    expect(waiting.lines.some((l) => l.msg.startsWith('postgres schema migrating'))).toBe(false);
    // The previous version's start either failed (its wait on the lock held a snapshot the build waited for) or
    // found the schema newer than it; the migration went on either way.
    expect(await previous).toMatch(new RegExp(`deadlock detected|^version ${MIGRATIONS.length}$`));
    // Every insert is there, and read through the new index.
    const r = await watcher.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE key < 0');
    expect(r.rows[0]?.n).toBe(inserted);
  });

  it('finishes a build cut short: an invalid part is dropped and built again, a part already attached is kept', { timeout: 120_000 }, async () => {
    const url = await previousSchema(2_000);
    const day0 = `events_d${Math.floor(T0 / DAY)}`;
    const day1 = `events_d${Math.floor(T0 / DAY) + 1}`;
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    t.defer(() => c.end());
    // What a replica that died during the build leaves: the parent index, day 0's part built and attached, day
    // 1's build cut short (an invalid index under its name: a unique build that failed).
    await c.query(`CREATE INDEX ${ARRIVAL_INDEX.name} ON ONLY events ${ARRIVAL_INDEX.def}`);
    const kept = partIndexName(day0, ARRIVAL_INDEX.name);
    await c.query(`CREATE INDEX CONCURRENTLY ${kept} ON ${day0} ${ARRIVAL_INDEX.def}`);
    await c.query(`ALTER INDEX ${ARRIVAL_INDEX.name} ATTACH PARTITION ${kept}`);
    const keptOid = (await c.query<{ o: string }>('SELECT $1::regclass::oid::text AS o', [kept])).rows[0]?.o;
    await expect(c.query(`CREATE UNIQUE INDEX CONCURRENTLY ${partIndexName(day1, ARRIVAL_INDEX.name)} ON ${day1} (kind)`)).rejects.toThrow(/could not create unique index/);

    const store = t.track(await PostgresStore.open({ url, poolSize: 1 }));
    expect(await store.schemaVersion()).toBe(MIGRATIONS.length);
    const got = await parts(c, ARRIVAL_INDEX.name);
    expect(got.length).toBeGreaterThanOrEqual(DAYS);
    for (const p of got) expect(p, p.part).toEqual({ part: p.part, def: 'btree (received_ms) WHERE (received_ms IS NOT NULL)', valid: true });
    expect((await c.query<{ o: string }>('SELECT $1::regclass::oid::text AS o', [kept])).rows[0]?.o).toBe(keptOid);
    const invalid = await c.query<{ n: string }>('SELECT c.relname AS n FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid WHERE NOT x.indisvalid');
    expect(invalid.rows).toEqual([]);
  });

  it('refuses a schema newer than it knows with a log line naming both versions', async () => {
    const url = await t.server().createDatabase();
    await (await PostgresStore.open({ url, poolSize: 1 })).close();
    await queryOnce(url, 'INSERT INTO schema_migrations (version) VALUES ($1)', [MIGRATIONS.length + 1]);
    const log = recordingLogger();
    await expect(PostgresStore.open({ url, poolSize: 1, logger: log.logger })).rejects.toThrow(`the database schema is version ${MIGRATIONS.length + 1}, newer than this hookwatch (${MIGRATIONS.length})`);
    expect(log.lines).toContainEqual({ level: 'error', msg: `postgres schema newer than this hookwatch; not starting {"schemaVersion":${MIGRATIONS.length + 1},"knownVersion":${MIGRATIONS.length}}` });
  });
});
