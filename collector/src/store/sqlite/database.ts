/** What every SQLite file of hookwatch shares: how it is opened, transactions, and prepared statements. */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';

/** Opens (creating its folder) a database in WAL mode, waiting up to 5 s for another connection's lock. */
export function openSqlite(path: string, synchronous: 'full' | 'normal' = 'full'): DatabaseSync {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new DatabaseSync(path, { timeout: 5000 });
  db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = ${synchronous === 'normal' ? 'NORMAL' : 'FULL'};`);
  return db;
}

/** Runs `fn` in one write transaction: committed when it returns, rolled back when it throws. */
export function inTransaction<T>(db: DatabaseSync, fn: () => T): T {
  db.exec('BEGIN IMMEDIATE');
  try {
    const result = fn();
    db.exec('COMMIT');
    return result;
  } catch (err) {
    try {
      db.exec('ROLLBACK');
    } catch {
      // SQLite may already have rolled back (some I/O errors end the transaction).
    }
    throw err;
  }
}

/** Statements prepared once and reused, by SQL text; the least recently used go beyond `max`. */
export class Statements {
  private readonly db: DatabaseSync;
  private readonly max: number;
  private readonly byText = new Map<string, StatementSync>();

  constructor(db: DatabaseSync, max = 256) {
    this.db = db;
    this.max = max;
  }

  get(sql: string): StatementSync {
    let s = this.byText.get(sql);
    if (s) this.byText.delete(sql);
    else {
      s = this.db.prepare(sql);
      if (this.byText.size >= this.max) this.byText.delete(this.byText.keys().next().value as string);
    }
    this.byText.set(sql, s);
    return s;
  }
}
