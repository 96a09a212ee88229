/**
 * Leader election for replicas sharing one PostgreSQL: a lease row (`leader_lease`) that one replica holds at a
 * time and renews every ttl/3. Expiry is decided by the database clock, so replicas' clocks need not agree.
 * The holder trusts its lease only until its own monotonic clock says ttl has passed since it *sent* the last
 * successful renewal, which is never later than the database's expiry: a paused or partitioned leader stops
 * acting before anyone else can take over, so alerts are not evaluated or notified by two replicas at once.
 * A lease row (not a session advisory lock) so leadership also ends when the holder hangs with its connection
 * open. Each takeover increments `epoch`, a fencing token for writes that must come from the current leader.
 * A leader that stops hands the lease back and announces it (LEASE_CHANNEL), so a follower takes over at once.
 */
import { hostname } from 'node:os';
import pg from 'pg';
import type { ClusterState } from '../model.ts';
import type { LeaderElector } from '../../alerting/state/store.ts';
import type { Logger } from '../../telemetry/logger.ts';
import { LEASE_CHANNEL } from './bus.ts';
import { scrubSecret } from './index.ts';
import { ConnectionSockets } from './sockets.ts';
import { isAnswerTimeout, isConnectTimeout, keepAlive } from './connection.ts';

export interface PostgresLeaseOptions {
  /** postgres:// URL (the lease uses its own single connection, so a busy ingest pool never delays renewal). */
  url: string;
  /** Lease name: replicas with the same name elect one leader. */
  name?: string;
  /** This replica's identity in the lease row. */
  holder?: string;
  /** How long a lease lasts without renewal; failover takes at most ttl + ttl/3. */
  ttlMs: number;
  /** Renewal period; default ttl/3. */
  renewEveryMs?: number;
  logger?: Logger;
  /** Monotonic clock in ms (tests). */
  now?: () => number;
  /** Called with true when this replica becomes leader, false when it stops being leader. */
  onChange?: (leader: boolean) => void;
  /** Called each time the lease opens a new connection: the database answers (again, after an outage). */
  onConnected?: () => void;
}

/** Share of the ttl the holder trusts: a margin for clock-rate drift between this host and the database. */
const TRUST = 0.9;

/**
 * The lease handed back if this replica holds it, and then announced on LEASE_CHANNEL (delivered when the
 * statement commits), so the other replicas try it at once rather than at their next renewal.
 */
const HAND_BACK_SQL = `UPDATE leader_lease SET expires_at = now() - interval '1 millisecond' WHERE name = $1 AND holder = $2
  RETURNING pg_notify('${LEASE_CHANNEL}', name)`;

/**
 * A statement of the lease not done within its bound: no answer (its connection dropped), no connection made, or
 * ended by the server's statement timeout.
 */
function isUnanswered(err: unknown): boolean {
  return isAnswerTimeout(err) || isConnectTimeout(err) || (err as { code?: string } | undefined)?.code === '57014';
}

/** The state of one replica's lease, as seen by that replica. */
export class PostgresLease implements LeaderElector {
  readonly holder: string;
  readonly name: string;
  private readonly opts: PostgresLeaseOptions;
  private readonly now: () => number;
  private readonly pool: pg.Pool;
  private validUntil = -Infinity;
  /**
   * Until when the lease row may still name this replica, on this replica's clock: ttl after the answer of its
   * last successful renewal (the database set the expiry before answering).
   */
  private rowUntil = -Infinity;
  private currentEpoch: number | null = null;
  private wasLeader = false;
  private timer: NodeJS.Timeout | undefined;
  /** Fires when the trusted lease runs out without a renewal, so leader work stops then, not at the next tick. */
  private expiry: NodeJS.Timeout | undefined;
  private inFlight: Promise<boolean> | undefined;
  /** Set by an attempt that got no answer within its bound: the next one follows at once. */
  private unanswered = false;
  /** Set by handBack(): this replica no longer tries the lease, and only writes its heartbeat. */
  private leaving = false;
  private handingBack: Promise<void> | undefined;
  /** Set by stop(): no more heartbeats either, the connection closes. */
  private stopped = false;
  /** Set by cutConnections(): nothing can be sent any more. */
  private cut = false;
  private stopping: Promise<void> | undefined;
  /** Set by handBack() when it could not hand back a lease the database may still hold (said in the log). */
  leftBehind = false;
  /** The sockets of the lease's connection (cutConnections). */
  private readonly sockets = new ConnectionSockets();

  constructor(opts: PostgresLeaseOptions) {
    if (!(opts.ttlMs > 0)) throw new RangeError('lease ttl must be positive');
    this.opts = opts;
    this.now = opts.now ?? (() => performance.now());
    this.name = opts.name ?? 'hookwatch';
    this.holder = opts.holder ?? `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 10)}`;
    // Each step of an attempt gets a renewal period: a connection attempt the network does not answer (a
    // partition), or a statement sent on a connection it dropped without a word (a NAT or firewall forgetting the
    // flow), gives up then, its connection closed, and the next attempt follows at once on a new connection.
    // Waiting out the ttl instead, a blip of a second, long healed, would cost the lease.
    const bound = Math.max(500, this.renewEveryMs());
    this.pool = new pg.Pool({
      connectionString: opts.url,
      max: 1,
      application_name: 'hookwatch-lease',
      stream: this.sockets.stream,
      ...keepAlive(),
      connectionTimeoutMillis: bound,
      statement_timeout: bound,
      query_timeout: bound,
    });
    this.pool.on('error', (err) => {
      if (!this.stopped) this.opts.logger?.warn('leader lease connection lost', { err: scrubSecret(err.message, opts.url) });
    });
    this.pool.on('connect', () => this.opts.onConnected?.());
  }

  /** How long a lease lasts without renewal. */
  get ttlMs(): number {
    return this.opts.ttlMs;
  }

  private renewEveryMs(): number {
    return this.opts.renewEveryMs ?? Math.max(100, Math.round(this.opts.ttlMs / 3));
  }

  /** True while this replica holds an unexpired lease. */
  isLeader(): boolean {
    return !this.leaving && this.now() < this.validUntil;
  }

  /** The lease's fencing token while leader (increments on every change of holder), else null. */
  epoch(): number | null {
    return this.isLeader() ? this.currentEpoch : null;
  }

  /** Starts renewing in the background (first attempt now). */
  start(): void {
    if (this.timer || this.leaving) return;
    void this.tick();
    this.timer = setInterval(() => void this.tick(), this.renewEveryMs());
    this.timer.unref();
  }

  /** One acquire-or-renew attempt; resolves to whether this replica is leader afterwards. Never rejects. */
  tick(): Promise<boolean> {
    this.inFlight ??= this.attempt().finally(() => {
      this.inFlight = undefined;
      // Its connection is gone (or none was made): a new one now, not a renewal period later. Each attempt takes
      // its bound (half a second at least) to give up, so a partition is tried at that pace, not in a loop.
      if (this.unanswered && !this.leaving) void this.tick();
    });
    return this.inFlight;
  }

  private async attempt(): Promise<boolean> {
    this.unanswered = false;
    if (this.stopped) return false;
    // Handed back: a replica still draining is still running, and says so.
    if (this.leaving) {
      await this.heartbeat();
      return false;
    }
    const sent = this.now();
    try {
      const r = await this.pool.query<{ epoch: string }>(
        `INSERT INTO leader_lease AS l (name, holder, epoch, expires_at)
         VALUES ($1, $2, 1, now() + make_interval(secs => $3::float8 / 1000))
         ON CONFLICT (name) DO UPDATE SET
           holder = excluded.holder,
           expires_at = excluded.expires_at,
           epoch = CASE WHEN l.holder = excluded.holder THEN l.epoch ELSE l.epoch + 1 END
         WHERE l.holder = excluded.holder OR l.expires_at <= now()
         RETURNING epoch::text AS epoch`,
        [this.name, this.holder, this.opts.ttlMs],
      );
      const row = r.rows[0];
      if (row) this.rowUntil = this.now() + this.opts.ttlMs;
      if (row && !this.leaving) {
        this.validUntil = sent + this.opts.ttlMs * TRUST;
        this.currentEpoch = Number(row.epoch);
        this.armExpiry();
      } else {
        this.validUntil = -Infinity;
        this.currentEpoch = null;
      }
    } catch (err) {
      // Keep what we had: a lease already granted lapses on its own clock; no renewal means no extension.
      const fields = { err: scrubSecret((err as Error).message ?? String(err), this.opts.url) };
      // A renewal cut off by handBack() or stop() is no news.
      if (this.leaving) this.opts.logger?.debug('leader lease renewal failed', fields);
      else this.opts.logger?.warn('leader lease renewal failed', fields);
      this.unanswered = isUnanswered(err);
    }
    this.report();
    // Not answered: the renewal is tried again at once, before the heartbeat.
    if (!this.unanswered) await this.heartbeat();
    return this.isLeader();
  }

  /**
   * Another replica handed the lease `name` back (LEASE_CHANNEL): one attempt now instead of at the next renewal.
   * An attempt under way may have read the lease row before the hand-back, so the one brought forward follows it;
   * announcements arriving meanwhile share that attempt. Replicas racing for it elect one, as at any renewal.
   */
  handedBack(name: string): void {
    if (name !== this.name || this.leaving || this.isLeader()) return;
    if (this.inFlight) void this.inFlight.then(() => this.tick());
    else void this.tick();
  }

  private armExpiry(): void {
    if (this.expiry) clearTimeout(this.expiry);
    const ms = this.validUntil - this.now();
    if (!(ms > 0)) return;
    this.expiry = setTimeout(() => this.report(), ms + 1);
    this.expiry.unref();
  }

  /** Records that this replica is running (and, on the leader, forgets replicas gone for a day). */
  private async heartbeat(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.pool.query(
        `INSERT INTO replica_heartbeats (name, replica, started_at, last_seen) VALUES ($1, $2, now(), now())
         ON CONFLICT (name, replica) DO UPDATE SET last_seen = now()`,
        [this.name, this.holder],
      );
      if (this.isLeader()) await this.pool.query("DELETE FROM replica_heartbeats WHERE name = $1 AND last_seen < now() - interval '1 day'", [this.name]);
    } catch (err) {
      this.opts.logger?.debug('replica heartbeat failed', { err: scrubSecret((err as Error).message ?? String(err), this.opts.url) });
      this.unanswered = isUnanswered(err);
    }
  }

  private report(): void {
    const leader = this.isLeader();
    if (leader === this.wasLeader) return;
    this.wasLeader = leader;
    // Stopping is not a loss: the hand-back follows (its failure says so on its own).
    const lost = this.leaving ? 'leader lease given up: stopping' : 'leader lease lost';
    this.opts.logger?.info(leader ? 'leader lease acquired' : lost, { lease: this.name, holder: this.holder, epoch: this.currentEpoch });
    try {
      this.opts.onChange?.(leader);
    } catch (err) {
      this.opts.logger?.error('leader change handler failed', { err });
    }
  }

  /**
   * Stops trying the lease and hands it back (if held) so another replica takes over at once (told on
   * LEASE_CHANNEL; at its next renewal should that signal be lost). When the hand-back fails while the database
   * may still hold the lease for this replica, the log says so and leftBehind is set: the lease expires on its
   * own and another replica takes over as after a crash. The heartbeat goes on until stop(). A database that
   * does not answer holds this until cutConnections(). Safe twice.
   */
  handBack(): Promise<void> {
    this.handingBack ??= (async () => {
      this.leaving = true;
      if (this.expiry) clearTimeout(this.expiry);
      // A renewal under way extends the row: the hand-back follows it.
      await this.inFlight;
      this.validUntil = -Infinity;
      this.report();
      try {
        await this.pool.query(HAND_BACK_SQL, [this.name, this.holder]);
      } catch (err) {
        const rowMsLeft = this.rowUntil - this.now();
        if (rowMsLeft <= 0) return;
        this.leftBehind = true;
        this.opts.logger?.warn('leader lease not handed back; another replica takes over when it expires', { ...this.failure(err), expiresWithinMs: Math.ceil(rowMsLeft) });
      }
    })();
    return this.handingBack;
  }

  /**
   * Hands the lease back (handBack(), if not done yet), stops the heartbeat and removes this replica's row, then
   * closes the connection. Safe twice.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.handBack();
      this.stopped = true;
      if (this.timer) clearInterval(this.timer);
      try {
        // Cut off, nothing more can be sent (a heartbeat queued behind the hand-back would wait for a connection).
        if (this.cut) throw new Error('the lease connection was closed while stopping');
        // A heartbeat under way would write the row again after its removal.
        await this.inFlight;
        await this.pool.query('DELETE FROM replica_heartbeats WHERE name = $1 AND replica = $2', [this.name, this.holder]);
      } catch (err) {
        // A lease left behind already said the database did not answer.
        if (!this.leftBehind) this.opts.logger?.warn('replica heartbeat not removed; the replica shows as not heard from until forgotten after a day', this.failure(err));
      }
      await this.pool.end().catch(() => {});
    })();
    return this.stopping;
  }

  private failure(err: unknown): Record<string, unknown> {
    return { lease: this.name, holder: this.holder, err: scrubSecret((err as Error).message ?? String(err), this.opts.url) };
  }

  /**
   * Closes the lease's connection at once, without waiting for the database (a stop that cannot wait any longer):
   * a renewal, hand-back or heartbeat in flight fails, and handBack() and stop() resolve. Safe twice.
   */
  cutConnections(): void {
    this.leaving = true;
    this.stopped = true;
    this.cut = true;
    if (this.timer) clearInterval(this.timer);
    void this.pool.end().catch(() => {});
    this.sockets.destroyAll();
  }
}

/**
 * The cluster as the shared store has it: the lease row and every replica's heartbeat. Read on the store's pool
 * (API and /metrics), never on the lease's own connection, so a slow scrape cannot delay a renewal.
 */
export async function readCluster(pool: pg.Pool, lease: { name: string; holder: string; ttlMs: number }): Promise<ClusterState> {
  const [l, h] = await Promise.all([
    pool.query<{ holder: string; epoch: string; expires_at: Date }>('SELECT holder, epoch::text AS epoch, expires_at FROM leader_lease WHERE name = $1 AND expires_at > now()', [lease.name]),
    pool.query<{ replica: string; started_at: Date; last_seen: Date; age: number }>(
      'SELECT replica, started_at, last_seen, EXTRACT(EPOCH FROM now() - last_seen)::float8 AS age FROM replica_heartbeats WHERE name = $1 ORDER BY started_at, replica',
      [lease.name],
    ),
  ]);
  const row = l.rows[0];
  const leader = row ? { replica: row.holder, epoch: Number(row.epoch), expiresAtMs: row.expires_at.getTime() } : null;
  return {
    backend: 'postgres',
    self: lease.holder,
    leader,
    leaseTtlSeconds: lease.ttlMs / 1000,
    replicas: h.rows.map((r) => ({
      replica: r.replica,
      leader: r.replica === leader?.replica,
      self: r.replica === lease.holder,
      startedAtMs: r.started_at.getTime(),
      lastHeartbeatMs: r.last_seen.getTime(),
      heartbeatAgeSeconds: Math.max(0, Math.round(r.age * 1000) / 1000),
      alive: r.age * 1000 <= lease.ttlMs,
    })),
  };
}
