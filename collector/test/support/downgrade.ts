/**
 * Undoing migrations that came after the one a test puts a database back before, so the store's migrations run
 * again from there as they would on a database of that version.
 */
import type { DatabaseSync } from 'node:sqlite';

/** Removes attr_sets.first_ms and the indexes on it (SQLite cannot drop an indexed column). */
export function sqliteDropAttrFirstMs(db: DatabaseSync): void {
  const indexes = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'attr_sets' AND sql LIKE '%first_ms%'`).all() as { name: string }[];
  for (const { name } of indexes) db.exec(`DROP INDEX "${name.replace(/"/g, '""')}"`);
  db.exec('ALTER TABLE attr_sets DROP COLUMN first_ms');
}

/** The same on PostgreSQL (the indexes on the column go with it). */
export const PG_DROP_ATTR_FIRST_MS = 'ALTER TABLE attr_sets DROP COLUMN first_ms;';
