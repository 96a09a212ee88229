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
});
