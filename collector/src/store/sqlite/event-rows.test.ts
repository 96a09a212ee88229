/**
 * A commit's event rows go in many per statement, and which of them were stored is worked out from the ids the
 * statement assigned: every batch must still say exactly which events it stored, whatever ids the table holds.
 */
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import type { HookEvent } from '../../hooks/model.ts';
import { hookEvent } from '../../../test/support/alerting.ts';
import { tempDir } from '../../../test/helpers.ts';
import { SqliteStore } from './index.ts';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const NOW = Date.now();
const range = { fromMs: NOW - 86_400_000, toMs: NOW + 60_000 };
let files = 0;

/** A store holding `stored`, its file edited by `sql` while closed, opened again. */
async function storeWith(stored: HookEvent[], sql: string): Promise<{ store: SqliteStore; path: string }> {
  const path = join(tmp.dir, `events-${++files}.db`);
  const first = new SqliteStore({ path });
  await first.ingest(stored);
  await first.close();
  const db = new DatabaseSync(path);
  db.exec(sql);
  db.close();
  return { store: new SqliteStore({ path }), path };
}

function eventRows(path: string): number {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return Number((db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n);
  } finally {
    db.close();
  }
}

const executions = async (store: SqliteStore): Promise<number> => [...(await store.hookCounters(range)).values()].reduce((n, c) => n + c.executions, 0);

describe('event rows, many per statement', () => {
  // Ids past 2^53 are not exact as JS numbers; at the largest rowid SQLite gives new rows random ids.
  it.each([
    ['past 2^53', '9007199254740993'],
    ['a few below the largest rowid', '9223372036854775800'],
    ['the largest rowid', '9223372036854775807'],
  ])('tells the stored events from the duplicates when the largest id is %s', async (_, id) => {
    const events = Array.from({ length: 150 }, (_, i) => hookEvent({ timeMs: NOW - 1000 * i }));
    const old = events.filter((_, i) => i % 3 === 0);
    const { store, path } = await storeWith(old, `UPDATE events SET id = ${id} WHERE id = (SELECT max(id) FROM events)`);
    try {
      const r = await store.ingest(events);
      expect(r.inserted.map((e) => e.dedupKey)).toEqual(events.filter((_, i) => i % 3 !== 0).map((e) => e.dedupKey));
      expect(r.duplicates).toBe(old.length);
      expect(await executions(store)).toBe(150);
    } finally {
      await store.close();
    }
    expect(eventRows(path)).toBe(150);
  });

  it.each([
    ['the newest rows were deleted and the file vacuumed', 'DELETE FROM events WHERE id > (SELECT max(id) - 20 FROM events); VACUUM'],
    ['every row was deleted', 'DELETE FROM events'],
  ])('tells the stored events from the duplicates within and across statements after %s', async (_, sql) => {
    const events = Array.from({ length: 120 }, (_, i) => hookEvent({ timeMs: NOW - 1000 * i }));
    const { store, path } = await storeWith(events.slice(0, 60), sql);
    try {
      const left = events.slice(0, eventRows(path));
      // The rollups still count the deleted rows: only what this batch adds is compared.
      const before = await executions(store);
      // Sent twice within the first 64-row statement, on both sides of its end, and within the last 4-row one.
      const batch = [...events.slice(0, 62), events[61]!, events[62]!, events[62]!, ...events.slice(63, 100), events[99]!, events[98]!, events[0]!];
      const r = await store.ingest(batch);
      expect(r.inserted.map((e) => e.dedupKey)).toEqual(events.slice(left.length, 100).map((e) => e.dedupKey));
      expect(r.duplicates).toBe(batch.length - (100 - left.length));
      expect((await store.ingest(events.slice(0, 100))).inserted).toEqual([]);
      expect(await executions(store)).toBe(before + 100 - left.length);
    } finally {
      await store.close();
    }
    expect(eventRows(path)).toBe(100);
  });

  it('an error midway through a statement refuses every batch of the commit and leaves none of their rows', async () => {
    const stored = Array.from({ length: 5 }, (_, i) => hookEvent({ timeMs: NOW - 1000 * i }));
    const { store, path } = await storeWith(stored, 'SELECT 1');
    try {
      const other = Array.from({ length: 10 }, (_, i) => hookEvent({ timeMs: NOW - 500 * i }));
      // The 71st row is in the first 16-row statement after a 64-row one: a row without a hook number breaks it.
      const batch = Array.from({ length: 100 }, (_, i) => hookEvent({ timeMs: NOW - 300 * i }));
      const broken = batch.map((e, i) => (i === 70 ? { ...e, hookId: 'not-a-hook' } : e));
      const answers = await Promise.allSettled([store.ingest(other), store.ingest(broken)]);
      for (const a of answers) expect(a.status === 'rejected' && String(a.reason)).toMatch(/NOT NULL constraint failed: events\.hook/);
      expect(eventRows(path)).toBe(5);
      expect(await executions(store)).toBe(5);
      // Sent again without the broken event: every one is new.
      const again = batch.filter((_, i) => i !== 70);
      expect((await store.ingest([...other, ...again])).inserted).toHaveLength(109);
      expect(await executions(store)).toBe(114);
    } finally {
      await store.close();
    }
    expect(eventRows(path)).toBe(114);
  });
});
