/**
 * A store of either backend for tests run on both: SQLite in memory, or a database of its own on one throwaway
 * PostgreSQL server per test file, started at its first use and stopped with stop().
 */
import { PostgresStore } from '../../src/store/postgres/index.ts';
import { SqliteStore } from '../../src/store/sqlite/index.ts';
import type { Store } from '../../src/store/store.ts';
import { startTestServer, type TestServer } from './postgres/server.ts';

export type Backend = 'sqlite' | 'postgres';

export function backendStores(): { open(backend: Backend, opts: { dimensions: string[]; maxHooks?: number }): Promise<Store>; stop(): Promise<void> } {
  let server: TestServer | undefined;
  return {
    async open(backend, opts) {
      if (backend === 'sqlite') return new SqliteStore({ path: ':memory:', ...opts });
      server ??= await startTestServer();
      return PostgresStore.open({ url: await server.createDatabase(), poolSize: 4, ...opts });
    },
    async stop() {
      await server?.stop();
    },
  };
}
