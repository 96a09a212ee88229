/**
 * The event rows of a commit, inserted many rows per statement: statements prepared for a few fixed row counts,
 * the largest that fit first and the remainder through smaller ones. Per row this saves the statement's step,
 * its bindings' call and its share of the B-tree work SQLite does once per statement.
 *
 * `INSERT OR FAIL`: a statement of several rows that may stop with an error (a NOT NULL column) otherwise makes
 * SQLite copy every page it changes into a statement journal first, to undo its own earlier rows; that copying
 * costs more than the rows save. An error still rolls back the whole ingest transaction (inTransaction), so the
 * rows the failing statement left behind are undone with it. A key already stored is skipped as before (`ON
 * CONFLICT (key) DO NOTHING`), and so is a key seen earlier among the rows.
 *
 * A statement's new rows get consecutive ids (the largest in the table plus one) until the largest rowid SQLite
 * allows is taken; from then on it picks them at random. Rows that could reach it go one per statement, whose
 * count of changes alone says whether its row was stored. Ids are read as bigints: past 2^53 a number is not exact.
 */
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import { EVENT_COLUMNS } from '../sql.ts';

/** Row counts of the prepared statements, largest first; the last must be 1. */
const ROW_COUNTS = [64, 16, 4, 1] as const;
/** The largest rowid: a table holding it gives new rows random ids. */
const MAX_ROWID = 2n ** 63n - 1n;

export class EventRowInserts {
  private readonly statements: StatementSync[];
  private readonly keysOfIds: StatementSync;
  private readonly largestId: StatementSync;

  constructor(db: DatabaseSync) {
    const row = `(${EVENT_COLUMNS.map(() => '?').join(', ')})`;
    this.statements = ROW_COUNTS.map((n) =>
      db.prepare(`INSERT OR FAIL INTO events (${EVENT_COLUMNS.join(', ')}) VALUES ${Array.from({ length: n }, () => row).join(', ')} ON CONFLICT (key) DO NOTHING`),
    );
    for (const stmt of this.statements) stmt.setReadBigInts(true);
    this.keysOfIds = db.prepare('SELECT key FROM events WHERE id > ? AND id <= ?');
    this.largestId = db.prepare('SELECT max(id) AS id FROM events');
    this.largestId.setReadBigInts(true);
  }

  /**
   * Inserts `rows` (each an event's values in EVENT_COLUMNS order, its key a Buffer first) in their order; the
   * answer says, row by row, whether it was stored (false: its key was stored already, or earlier in `rows`).
   */
  insert(rows: readonly unknown[][]): boolean[] {
    const stored: boolean[] = [];
    let at = 0;
    for (let s = rows.length > 1 && this.consecutiveIds(rows.length) ? 0 : ROW_COUNTS.length - 1; s < ROW_COUNTS.length; s++) {
      const n = ROW_COUNTS[s] as number;
      const stmt = this.statements[s] as StatementSync;
      const values: SQLInputValue[] = [];
      while (rows.length - at >= n) {
        values.length = 0;
        for (let i = at; i < at + n; i++) for (const v of rows[i] as SQLInputValue[]) values.push(v);
        const r = stmt.run(...values);
        const changes = Number(r.changes);
        if (changes === n) for (let i = 0; i < n; i++) stored.push(true);
        else this.whichStored(rows, at, n, changes, BigInt(r.lastInsertRowid), stored);
        at += n;
      }
    }
    return stored;
  }

  /** Whether `n` new rows get consecutive ids: the largest rowid stays out of their reach. */
  private consecutiveIds(n: number): boolean {
    const { id } = this.largestId.get() as { id: bigint | null };
    return MAX_ROWID - (id ?? 0n) >= BigInt(n);
  }

  /**
   * Which of the n rows from `at` one statement stored, when it stored fewer than all: a row without an explicit
   * id gets the largest id in the table plus one, so the statement's rows are the ids (last - changes, last]; the
   * first row of each of their keys is the one stored.
   */
  private whichStored(rows: readonly unknown[][], at: number, n: number, changes: number, lastId: bigint, stored: boolean[]): void {
    const keys = new Set<string>();
    if (changes > 0) for (const r of this.keysOfIds.all(lastId - BigInt(changes), lastId)) keys.add(keyText(r.key));
    let found = 0;
    for (let i = at; i < at + n; i++) {
      const key = keyText((rows[i] as unknown[])[0]);
      const mine = keys.delete(key);
      if (mine) found++;
      stored.push(mine);
    }
    if (found !== changes) throw new Error(`event rows: ${changes} stored but ${found} found by their ids`);
  }
}

function keyText(key: unknown): string {
  if (!(key instanceof Uint8Array)) throw new Error('event rows: a key is not bytes');
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1');
}
