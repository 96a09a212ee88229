/**
 * A PostgreSQL store with one connection for ingest and one for reads, and a read of a hook's commands stuck
 * behind another session's lock on the table it reads: what a query that does not answer looks like to the store.
 */
import pg from 'pg';
import { PostgresStore } from '../../../src/store/postgres/index.ts';
import type { HookEvent } from '../../../src/hooks/model.ts';
import { historyBatches } from '../history.ts';
import type { TestServer } from './server.ts';

const DAY = 86_400_000;

export interface StuckRead {
  store: PostgresStore;
  /** The session holding the lock (in an open transaction): COMMIT or ROLLBACK lets the read go on. */
  locker: pg.Client;
  now: number;
  /** The hook the stuck read asks about (from the first batch, already stored). */
  hookId: string;
  /** The batches of the history made for it; the first is stored. */
  batches: HookEvent[][];
  /** The stuck read, waiting on the lock with the only read connection. */
  read: Promise<unknown>;
  /** A read of the same hook's commands again (waits behind the first for the connection). */
  readAgain(): Promise<unknown>;
  /** Ends the locker's session and closes the store. */
  close(): Promise<void>;
}

/** `events` events of one history in batches of `batchSize`, the first of them stored before the read is stuck. */
export async function stuckRead(server: TestServer, events: number, batchSize: number): Promise<StuckRead> {
  const url = await server.createDatabase();
  const store = await PostgresStore.open({ url, poolSize: 1, readers: 1, dimensions: ['team'] });
  const locker = new pg.Client({ connectionString: url });
  await locker.connect();
  const now = Date.now();
  const batches = [...historyBatches({ events, fromMs: now - 2 * DAY, toMs: now - 60_000 }, batchSize)];
  await store.ingest(batches[0] ?? []);
  const hookId = batches[0]?.[0]?.hookId ?? '';
  const readAgain = (): Promise<unknown> => store.transcriptCommands(hookId, { fromMs: now - DAY, toMs: now });
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE transcript_findings IN ACCESS EXCLUSIVE MODE');
  const read = readAgain();
  // Stuck once the server shows it waiting on the lock.
  for (let i = 0; i < 200; i++) {
    const waiting = await locker.query<{ n: string }>('SELECT count(*)::text AS n FROM pg_locks WHERE NOT granted');
    if (Number(waiting.rows[0]?.n) > 0) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  return {
    store, locker, now, hookId, batches, read, readAgain,
    async close() {
      await locker.query('ROLLBACK').catch(() => {});
      await locker.end().catch(() => {});
      await store.close();
    },
  };
}
