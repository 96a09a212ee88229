/**
 * Brings a store's file to the current schema (schema.ts migrateSchema) on a thread of its own, with its own
 * connection: the main thread keeps answering /healthz and /readyz meanwhile, however long the migration takes.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { StoreUnavailableError } from '../store.ts';
import { openMigrated, type MigrateMessage, type MigrateWorkerData, type SchemaMigrated } from './schema.ts';

const { job, changing } = workerData as MigrateWorkerData;
const tell = (m: MigrateMessage): void => parentPort?.postMessage(m);

function run(): SchemaMigrated | undefined {
  const { db, migrated } = openMigrated(job, () => {
    // Seen by the main thread at once (schemaChanging), before the message below is.
    Atomics.store(changing, 0, 1);
    tell({ type: 'migrating' });
  });
  db.close();
  return migrated;
}

try {
  tell({ type: 'done', migrated: run() });
} catch (err) {
  const e = err instanceof Error ? err : new Error(String(err));
  tell({ type: 'failed', message: e.message, unavailable: e instanceof StoreUnavailableError });
}
