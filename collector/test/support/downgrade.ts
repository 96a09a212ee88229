/**
 * Undoing migrations that came after the one a test puts a database back before, so the store's migrations run
 * again from there as they would on a database of that version.
 */
import type { DatabaseSync } from 'node:sqlite';
import { DIM_TABLE_NAMES } from '../../src/store/dim-rollups.ts';
import { ATTR_ROLLUP_TABLE, ROLLUP_TABLES } from '../../src/store/sql.ts';

/** Every counters table: the count of executions whose sizes may be sums is a column of each (SQLite 15, PostgreSQL 20). */
const COUNTER_TABLES = [...Object.values(ROLLUP_TABLES), ...DIM_TABLE_NAMES, ATTR_ROLLUP_TABLE];

/**
 * The arrival index before it held every event over the cap (SQLite migration 12, PostgreSQL 16), and before an
 * index of every event with a receive time (SQLite 13, PostgreSQL 17) and one of the late events (SQLite 14,
 * PostgreSQL 18) joined it, back.
 */
const ARRIVAL_INDEX_UNDO = `CREATE INDEX events_persisted_arrival ON events (received_ms) WHERE outputs_persisted > 0;
  DROP INDEX events_late_arrival;
  DROP INDEX events_arrival;
  DROP INDEX events_over_arrival;`;

/**
 * Undoes SQLite migration 15: the counters tables without sizes_may_sum, as the previous release wrote them (a
 * table a test has already replaced by an older one is left as it is).
 */
export function sqliteUndoSizesMaySum(db: DatabaseSync): void {
  for (const t of COUNTER_TABLES) {
    if (db.prepare(`SELECT 1 FROM pragma_table_info('${t}') WHERE name = 'sizes_may_sum'`).get()) db.exec(`ALTER TABLE ${t} DROP COLUMN sizes_may_sum`);
  }
}

/** The same on PostgreSQL, migration 20. */
export const PG_UNDO_SIZES_MAY_SUM = COUNTER_TABLES.map((t) => `ALTER TABLE IF EXISTS ${t} DROP COLUMN IF EXISTS sizes_may_sum;`).join('\n  ');

/**
 * Undoes SQLite migrations 11 to 15: removes attr_sets.first_ms and the indexes on it (SQLite cannot drop an
 * indexed column), puts the previous arrival index back, and takes sizes_may_sum out of the counters tables.
 */
export function sqliteUndoLaterMigrations(db: DatabaseSync): void {
  sqliteUndoSizesMaySum(db);
  const indexes = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'attr_sets' AND sql LIKE '%first_ms%'`).all() as { name: string }[];
  for (const { name } of indexes) db.exec(`DROP INDEX "${name.replace(/"/g, '""')}"`);
  db.exec('ALTER TABLE attr_sets DROP COLUMN first_ms');
  db.exec(ARRIVAL_INDEX_UNDO);
}

/** PostgreSQL migration 19: the days' change generations and the triggers on the rollups that bump them. */
export const PG_UNDO_DAY_CHANGES = 'DROP FUNCTION hookwatch_day_changed() CASCADE; DROP TABLE day_changes;';

/** The same on PostgreSQL, migrations 15 to 20 (the indexes on the column go with it). */
export const PG_UNDO_LATER_MIGRATIONS = `ALTER TABLE attr_sets DROP COLUMN first_ms;
  ${ARRIVAL_INDEX_UNDO}
  ${PG_UNDO_DAY_CHANGES}
  ${PG_UNDO_SIZES_MAY_SUM}`;
