/**
 * Fencing of leader-only writes by the leader lease (lease.ts): work a leader started carries the lease epoch it
 * started under, and each of its transactions checks, by the database clock, that the lease row still names this
 * replica at that epoch (alert state first, retention's long batches just before they commit). The row is held
 * (FOR SHARE) from the check until commit, so no takeover commits in between; a replica that lost the lease
 * (paused, partitioned) commits nothing more.
 */
import type pg from 'pg';
import { NotLeaderError } from '../store.ts';

/** The lease that fences writes (PostgresLease satisfies it). */
export interface LeaseFence {
  readonly name: string;
  readonly holder: string;
  /** The lease epoch while this replica is leader, else null. */
  epoch(): number | null;
  /** How long a lease lasts without renewal: a fenced transaction never holds the lease row longer than half of it. */
  readonly ttlMs?: number;
}

/**
 * Checks, inside the transaction of `c`, that the lease is still this replica's at `epoch`, and holds it until
 * commit; throws NotLeaderError (its message ending with `refused`, what was not done) otherwise.
 */
export async function checkFence(c: pg.PoolClient, fence: LeaseFence, epoch: number | null, refused: string): Promise<void> {
  if (epoch === null) throw new NotLeaderError(`not the leader: ${refused}`);
  await boundPause(c, fence);
  await holdLease(c, fence, epoch, refused);
}

/**
 * A leader paused (SIGSTOP, a VM freeze) inside the transaction of `c` would hold what it locked (the lease row,
 * once held, and with it every takeover) for as long as it stays paused: the server ends the transaction once it
 * is idle for half a lease, before the lease can expire, and its writes are not committed.
 */
export async function boundPause(c: pg.PoolClient, fence: LeaseFence): Promise<void> {
  if (fence.ttlMs !== undefined) await c.query(`SET LOCAL idle_in_transaction_session_timeout = ${Math.max(100, Math.round(fence.ttlMs / 2))}`);
}

/**
 * That the lease row names this replica at `epoch`, held (FOR SHARE) until the transaction of `c` commits: no
 * takeover can commit in between. Every renewal of the lease waits for that commit too.
 */
export async function holdLease(c: pg.PoolClient, fence: LeaseFence, epoch: number, refused: string): Promise<void> {
  const r = await c.query(`${LEASE_HELD} FOR SHARE`, [fence.name, fence.holder, epoch]);
  if (r.rowCount !== 1) throw new NotLeaderError(`the leader lease moved to another replica: ${refused}`);
}

/**
 * Whether the lease is this replica's at `epoch` now, by the database clock (on a connection of `pool`, outside any
 * transaction): asked after a fenced transaction failed, to tell a leader's failure from the end of its leadership
 * (a transaction the server ended once its leader was paused for half a lease).
 */
export async function leaseHeld(pool: pg.Pool, fence: LeaseFence, epoch: number): Promise<boolean> {
  return (await pool.query(LEASE_HELD, [fence.name, fence.holder, epoch])).rowCount === 1;
}

const LEASE_HELD = 'SELECT 1 FROM leader_lease WHERE name = $1 AND holder = $2 AND epoch = $3 AND expires_at > now()';
