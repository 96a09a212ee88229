/**
 * hookwatch_store_size_bytes on PostgreSQL (PostgresStore.diskUsage): only hookwatch's own tables are counted, in
 * a schema other applications may share.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { OWN_TABLES, PostgresStore } from './index.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { hookEvent } from '../../../test/support/alerting.ts';

// Autovacuum off: a vacuum of hookwatch's tables between two reads would change their size (visibility and free space maps).
const t = useTestServer({ settings: { autovacuum: 'off' } });

async function session(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  t.defer(() => c.end());
  return c;
}

describe('store size on PostgreSQL', () => {
  it('knows every table the migrations leave as its own', async () => {
    const url = await t.server().createDatabase();
    const store = t.track(await PostgresStore.open({ url }));
    await store.ingest([hookEvent({ timeMs: Date.now() - 60_000 })]);
    const admin = await session(url);
    const r = await admin.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY 1`,
    );
    const tables = r.rows.map((x) => x.name);
    expect(tables.length).toBeGreaterThan(0);
    expect(tables.filter((name) => !OWN_TABLES.includes(name))).toEqual([]);
    expect(OWN_TABLES.filter((name) => !tables.includes(name))).toEqual([]);
  });

  it("leaves out other applications' tables in the same schema, and tables named like a partition", async () => {
    const url = await t.server().createDatabase();
    const store = t.track(await PostgresStore.open({ url }));
    await store.ingest([hookEvent({ timeMs: Date.now() - 60_000 })]);
    const before = await store.diskUsage();
    expect(before.events).toBeGreaterThan(0);
    expect(before.rollups).toBeGreaterThan(0);
    expect(before.other).toBeGreaterThan(0);

    const admin = await session(url);
    for (const table of ['invoices', 'events_dummy', 'events_d123x']) {
      await admin.query(`CREATE TABLE ${table} (id BIGINT PRIMARY KEY, body TEXT)`);
      await admin.query(`INSERT INTO ${table} SELECT i, repeat('x', 200) FROM generate_series(1, 2000) AS i`);
    }
    expect(await store.diskUsage()).toEqual(before);
  });

  it('counts the partition of a day before 1970 among the events', async () => {
    const url = await t.server().createDatabase();
    const store = t.track(await PostgresStore.open({ url }));
    await store.ingest([hookEvent({ timeMs: Date.now() - 60_000 })]);
    const before = await store.diskUsage();
    await store.ingest([hookEvent({ timeMs: -1 })]);
    const admin = await session(url);
    const size = await admin.query<{ bytes: string }>(`SELECT pg_total_relation_size('"events_d-1"')::text AS bytes`);
    const partition = Number(size.rows[0]?.bytes);
    expect(partition).toBeGreaterThan(0);
    const after = await store.diskUsage();
    expect((after.events ?? 0) - (before.events ?? 0)).toBe(partition);
  });
});
