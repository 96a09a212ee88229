/**
 * Brings a store's file to the current schema (schema.ts migrateSchema) on a thread of its own, with its own
 * connection: the main thread keeps answering /healthz and /readyz meanwhile, however long the migration takes.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { DatabaseSync } from 'node:sqlite';
import { openSqlite } from './database.ts';
import { StoreUnavailableError } from '../store.ts';
import { migrateSchema, openFailure, schemaFailure, writeConnectionPragmas, type MigrateJob, type MigrateMessage, type SchemaMigrated } from './schema.ts';

const job = workerData as MigrateJob;
const tell = (m: MigrateMessage): void => parentPort?.postMessage(m);

function run(): SchemaMigrated | undefined {
  let db: DatabaseSync;
  try {
    db = openSqlite(job.path, job.synchronous);
  } catch (err) {
    throw openFailure(job.path, err);
  }
  try {
    db.exec(writeConnectionPragmas(job.cacheBytes));
    return migrateSchema(db, job.dimensions, () => tell({ type: 'migrating' }));
  } catch (err) {
    throw schemaFailure(job.path, err);
  } finally {
    db.close();
  }
}

try {
  tell({ type: 'done', migrated: run() });
} catch (err) {
  const e = err instanceof Error ? err : new Error(String(err));
  tell({ type: 'failed', message: e.message, unavailable: e instanceof StoreUnavailableError });
}
