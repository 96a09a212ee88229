/** Opens the store named by config.db: a SQLite path (default) or, later, a postgres:// URL. */
import type { HookwatchConfig } from '../config/index.ts';
import { SqliteStore } from './sqlite/index.ts';
import type { Store } from './store.ts';

export async function openStore(config: HookwatchConfig): Promise<Store> {
  if (/^postgres(ql)?:\/\//i.test(config.db)) {
    throw new Error('HOOKWATCH_DB: PostgreSQL is not available in this build; use a SQLite file path');
  }
  return new SqliteStore({ path: config.db, synchronous: config.sqlite.synchronous, dimensions: config.dimensions });
}
