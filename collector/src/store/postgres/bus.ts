/**
 * Signals between replicas through PostgreSQL LISTEN/NOTIFY: a follower that committed a batch which may fire
 * an alert tells the leader (which evaluates at once instead of at its next timer tick), a silence created
 * or expired on any replica tells the leader to re-read silences and notify, and a leader that hands its lease
 * back tells the followers to try it now instead of at their next renewal. Signals only speed things up:
 * everything they announce is also in the shared tables, read by the leader's timer, so a signal lost while
 * the listening connection is down costs latency, never correctness. The connection reconnects with a backoff,
 * and at once when another connection to the database succeeds (databaseReachable); each attempt has
 * CHECK_TIMEOUT_MS to connect, so one the network does not answer (a partition) gives way to the next. onResumed
 * then tells the replica that signals sent meanwhile were missed. A listening connection only receives, so one the network
 * dropped without a word (a NAT or firewall forgetting an idle flow, a partition) would look up forever: it is
 * asked to answer every CHECK_EVERY_MS, and one that does not within CHECK_TIMEOUT_MS is lost as any other (and
 * onUnanswered tells the store, whose idle connections may be as dead).
 */
import pg from 'pg';
import type { Logger } from '../../telemetry/logger.ts';
import { scrubSecret } from './index.ts';
import { isAnswerTimeout, keepAlive } from './connection.ts';
import { ConnectionSockets } from './sockets.ts';

export type BusChannel = 'hookwatch_ingest' | 'hookwatch_silences' | 'hookwatch_lease';
/** A leader that stops hands its lease back with this signal (payload: the lease name), sent by the lease itself. */
export const LEASE_CHANNEL = 'hookwatch_lease' satisfies BusChannel;
const CHANNELS: readonly BusChannel[] = ['hookwatch_ingest', 'hookwatch_silences', LEASE_CHANNEL];
/** How often the listening connection is asked to answer while it is up. */
const CHECK_EVERY_MS = 1000;
/** How long it has to answer before it is taken for lost. */
const CHECK_TIMEOUT_MS = 2000;
/** NOTIFY payloads must stay below 8000 bytes. */
const MAX_PAYLOAD = 7000;

export interface PostgresBusOptions {
  url: string;
  /** The store's pool, for sending (NOTIFY needs no dedicated connection). */
  pool: pg.Pool;
  logger?: Logger;
  onMessage: (channel: BusChannel, payload: string) => void;
  /** Called each time the listening connection is up again after it was lost: signals sent meanwhile were missed. */
  onResumed?: () => void;
  /** Called when a check of the listening connection goes unanswered: the database may be unreachable. */
  onUnanswered?: () => void;
  /** Reconnect delay after the listening connection is lost (doubles up to 10 s). */
  reconnectMs?: number;
}

export class PostgresBus {
  private readonly opts: PostgresBusOptions;
  private client: pg.Client | undefined;
  private stopped = false;
  private retryMs: number;
  /** The backoff's next attempt, while the connection is down and no attempt is under way. */
  private timer: NodeJS.Timeout | undefined;
  /** Whether databaseReachable() brought an attempt forward since the backoff's own last one. */
  private broughtForward = false;
  /** True while an attempt is under way. */
  private connecting = false;
  /** Whether databaseReachable() was called during the attempt under way: should it fail, the next comes at once. */
  private reachedMeanwhile = false;
  /** Whether the connection was ever lost (or failed to connect): the next one up resumes. */
  private wasLost = false;
  /** The sockets of the listening connection (cutConnections). */
  private readonly sockets = new ConnectionSockets();
  /** The next check of the listening connection, while it is up. */
  private check: NodeJS.Timeout | undefined;
  /** True while the listening connection is up (for tests and logs). */
  listening = false;

  constructor(opts: PostgresBusOptions) {
    this.opts = opts;
    this.retryMs = opts.reconnectMs ?? 250;
  }

  /** Connects the dedicated listening connection; reconnects on its own until stop(). Never rejects. */
  start(): Promise<void> {
    return this.connect();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    this.connecting = true;
    // Connecting, and every statement on it (LISTEN, the checks), has CHECK_TIMEOUT_MS to be answered. An attempt
    // made while the network drops packets would otherwise wait for ever (minutes of SYN retries on a real network),
    // and no other is made while one is under way: the replica would stay deaf long after the network healed.
    const client = new pg.Client({
      connectionString: this.opts.url,
      application_name: 'hookwatch-listen',
      stream: this.sockets.stream,
      ...keepAlive(),
      connectionTimeoutMillis: CHECK_TIMEOUT_MS,
      query_timeout: CHECK_TIMEOUT_MS,
    });
    this.client = client;
    let failed = false;
    const lost = (err?: Error): void => {
      if (failed) return;
      failed = true;
      this.listening = false;
      this.connecting = false;
      if (this.check) clearTimeout(this.check);
      if (this.stopped) return;
      this.wasLost = true;
      this.opts.logger?.warn('replica signal connection lost; reconnecting', { err: err ? scrubSecret(err.message, this.opts.url) : 'connection ended', retryMs: this.retryMs });
      // Ended without waiting for the server: a connection that does not answer would not answer a goodbye either.
      this.sockets.destroyAll();
      client.end().catch(() => {});
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.broughtForward = false;
        void this.connect();
      }, this.retryMs);
      this.timer.unref();
      this.retryMs = Math.min(this.retryMs * 2, 10_000);
      if (this.reachedMeanwhile) {
        this.reachedMeanwhile = false;
        this.databaseReachable();
      }
    };
    // A listening connection cut by a restart or failover must never crash the process.
    client.on('error', (err) => lost(err));
    client.on('end', () => lost());
    client.on('notification', (msg) => {
      if (!CHANNELS.includes(msg.channel as BusChannel)) return;
      try {
        this.opts.onMessage(msg.channel as BusChannel, msg.payload ?? '');
      } catch (err) {
        this.opts.logger?.error('replica signal handler failed', { err });
      }
    });
    try {
      await client.connect();
      for (const c of CHANNELS) await client.query(`LISTEN ${c}`);
      if (this.stopped) {
        await client.end().catch(() => {});
        return;
      }
      this.listening = true;
      this.connecting = false;
      this.reachedMeanwhile = false;
      this.retryMs = this.opts.reconnectMs ?? 250;
      this.checkLater(client, lost);
      // Restored by an attempt databaseReachable() brought forward, or by the backoff's own.
      const aheadOfBackoff = this.broughtForward;
      this.broughtForward = false;
      if (this.wasLost) {
        this.wasLost = false;
        this.opts.logger?.info('replica signal connection restored', { aheadOfBackoff });
        try {
          this.opts.onResumed?.();
        } catch (err) {
          this.opts.logger?.error('replica signal handler failed', { err });
        }
      }
    } catch (err) {
      // pg's word for its connectionTimeoutMillis running out.
      lost((err as Error).message === 'timeout expired' ? new Error(`not connected within ${CHECK_TIMEOUT_MS} ms`) : (err as Error));
    }
  }

  /** Asks the listening connection to answer after CHECK_EVERY_MS, and again after each answer, until it is lost. */
  private checkLater(client: pg.Client, lost: (err?: Error) => void): void {
    this.check = setTimeout(() => {
      if (this.stopped || !this.listening) return;
      client.query('SELECT 1').then(
        () => this.checkLater(client, lost),
        (err: unknown) => {
          if (!isAnswerTimeout(err)) return lost(err as Error);
          lost(new Error(`a check was not answered within ${CHECK_TIMEOUT_MS} ms`));
          this.opts.onUnanswered?.();
        },
      );
    }, CHECK_EVERY_MS);
    this.check.unref();
  }

  /**
   * Another connection to the database just succeeded (a pool's, the lease's): a listening connection waiting
   * out its backoff reconnects now instead of up to 10 s later. At most one attempt is brought forward between
   * two of the backoff's own, so a database that takes other connections but fails this one is still tried at
   * the backoff's pace (twice as often at most), never in a loop. Said during an attempt (one made while the
   * network was cut may wait out its bound after the heal), it brings the next attempt forward should this one fail.
   */
  databaseReachable(): void {
    if (this.stopped || this.broughtForward) return;
    if (this.connecting) {
      this.reachedMeanwhile = true;
      return;
    }
    if (!this.timer) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.broughtForward = true;
    void this.connect();
  }

  /** Sends a signal to every replica (this one included). Best effort: failures are logged, never thrown. */
  async publish(channel: BusChannel, payload = ''): Promise<void> {
    if (this.stopped) return;
    try {
      await this.opts.pool.query('SELECT pg_notify($1, $2)', [channel, payload.length > MAX_PAYLOAD ? '' : payload]);
    } catch (err) {
      this.opts.logger?.debug('replica signal not sent', { channel, err: scrubSecret((err as Error).message ?? String(err), this.opts.url) });
    }
  }

  /** Closes the listening connection; safe twice. A database that does not answer holds this until cutConnections(). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.listening = false;
    if (this.timer) clearTimeout(this.timer);
    if (this.check) clearTimeout(this.check);
    await this.client?.end().catch(() => {});
  }

  /** Closes the listening connection at once, without waiting for the database; stop() then resolves. Safe twice. */
  cutConnections(): void {
    this.stopped = true;
    this.listening = false;
    if (this.timer) clearTimeout(this.timer);
    if (this.check) clearTimeout(this.check);
    this.sockets.destroyAll();
  }
}
