/**
 * Checked-out connections. A pooled client that is idle has the pool's 'error' listener, but a client checked
 * out for a transaction has none: a server restart or failover during the transaction would emit an unhandled
 * 'error' and crash the process. Every checkout here listens while it holds the client, and hands a broken
 * client back as broken so the pool replaces it.
 */
import type pg from 'pg';

/**
 * How long a connection to PostgreSQL is idle before the operating system probes it (TCP keepalive, on every
 * connection hookwatch opens). Node has it probe every second after that and give up after 10 probes left
 * unanswered (libuv's TCP_KEEPINTVL and TCP_KEEPCNT on Linux), so a connection the network dropped without a word
 * (a NAT or firewall forgetting the flow) fails about 20 s at most after its last packet while it is idle, and its
 * pool replaces it: the next statement is not sent into it to wait out its whole bound. The probes answered keep the
 * flow fresh in the NATs and firewalls between. Below 1 s Node leaves the system's default (2 hours).
 */
const KEEPALIVE_MS = 10_000;

/** pg's options for TCP keepalive after `idleMs` idle (KEEPALIVE_MS). */
export function keepAlive(idleMs = KEEPALIVE_MS): Pick<pg.ClientConfig, 'keepAlive' | 'keepAliveInitialDelayMillis'> {
  return { keepAlive: true, keepAliveInitialDelayMillis: idleMs };
}

/**
 * Runs fn inside BEGIN (or `begin`, a BEGIN with its modes)/COMMIT on one pooled connection; a lost connection
 * rejects (never an unhandled 'error').
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>, onLost?: (err: Error) => void, begin = 'BEGIN'): Promise<T> {
  const client = await pool.connect();
  let lost: Error | undefined;
  const onError = (err: Error): void => {
    // The query in flight rejects on its own ("Connection terminated unexpectedly"); this only keeps the
    // process alive and marks the client for disposal.
    lost ??= err;
    onLost?.(err);
  };
  client.on('error', onError);
  let broken = false;
  try {
    await client.query(begin);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    // A statement given up on (query_timeout) may still be running, or its connection dropped: no ROLLBACK is
    // sent behind it, the connection goes and the server rolls back when it learns.
    if (lost || isAnswerTimeout(err)) broken = true;
    else {
      try {
        await client.query('ROLLBACK');
      } catch {
        // The connection is gone; do not hand it back to the pool.
        broken = true;
      }
    }
    throw err;
  } finally {
    client.off('error', onError);
    // A client whose connection failed gets a no-op listener: pg may still report the same failure late.
    if (broken || lost) client.on('error', () => {});
    client.release(broken || lost !== undefined);
  }
}

/**
 * pg's error for a statement whose answer did not come within the connection's query_timeout, or an error that
 * reports it (its cause: the store's StoreUnavailableError).
 */
export function isAnswerTimeout(err: unknown): boolean {
  const e = err as Error | undefined;
  return e?.message === 'Query read timeout' || (e?.cause !== undefined && isAnswerTimeout(e.cause));
}

/** pg-pool's error for a connection not made, or none free, within connectionTimeoutMillis. */
export function isConnectTimeout(err: unknown): boolean {
  const m = (err as Error | undefined)?.message;
  return m === 'timeout exceeded when trying to connect' || m === 'Connection terminated due to connection timeout';
}

/**
 * Waits for the answers on this checked-out connection as long as they take (a migration, an index rebuild: the
 * statement timeout is lifted for them too). Only for a connection closed afterwards, never handed back.
 */
export function liftAnswerTimeout(client: pg.PoolClient): void {
  (client as unknown as { connectionParameters: { query_timeout?: number } }).connectionParameters.query_timeout = undefined;
}
