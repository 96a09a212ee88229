/**
 * Retention: once an hour (and when this replica becomes leader), raw events and transcript findings older than
 * retention.events, rollups older than retention.rollups and hooks with nothing left are deleted, in bounded
 * batches. It is once-per-cluster work: only the leader deletes from the store. Each replica's forward queue is
 * its own file, so every replica applies retention.events to it, leader or not.
 *
 * What each run did is kept for /metrics (registerRetentionMetrics): runs by outcome, when the last one
 * succeeded, and what they removed, as Prometheus reports its own TSDB retention and compaction.
 */
import type { Logger } from '../telemetry/logger.ts';
import type { MetricsRegistry } from '../telemetry/metrics.ts';
import { NotLeaderError, type Store } from './store.ts';

/**
 * What /metrics counts of the rows retention removed (`guard_trims`: outputs trimmed by hookwatch guard;
 * `partitions`: PostgreSQL's daily event partitions).
 */
export const REMOVED_KINDS = ['events', 'rollups', 'hooks', 'transcript_findings', 'guard_trims', 'partitions'] as const;
export type RemovedKind = (typeof REMOVED_KINDS)[number];

export interface RetentionOptions {
  store: Store;
  /** The retention settings (config.retention). */
  eventsMs: number;
  rollupsMs: number;
  /** Whether this replica leads (always true on SQLite). */
  isLeader(): boolean;
  /**
   * This replica's forward queue (inline mode): expires what is older than the bound, returns how many; once
   * `signal` is aborted (stop()) it ends at its next pause.
   */
  expireForwarded?(beforeMs: number, signal: AbortSignal): Promise<number>;
  logger: Logger;
  now: () => number;
}

/** What the runs of this process did, for /metrics. */
export interface RetentionStats {
  /** Runs of the store's retention (leader only), by outcome. */
  succeeded: number;
  failed: number;
  /**
   * Runs that did the rest of their work but left old days' partitions to the next run (PostgreSQL: a lock on the
   * events table not granted in time). Not a success: those days are still stored.
   */
  deferred: number;
  /**
   * Runs stopped because this replica lost the leader lease meanwhile (PostgreSQL's lease fence refused a batch,
   * or a batch failed and the lease read again had moved): not a failure of retention, which the new leader runs.
   */
  notLeader: number;
  /**
   * Runs under way when this process began to stop (stop()): ended between two batches, what they deleted until
   * then counted in `removed`, the rest left to the next run. Neither a success nor a failure.
   */
  stopped: number;
  /** Time (ms) the last successful run began; undefined while none has succeeded in this process. */
  lastSuccessMs: number | undefined;
  removed: Record<RemovedKind, number>;
}

export class Retention {
  readonly stats: RetentionStats = { succeeded: 0, failed: 0, deferred: 0, notLeader: 0, stopped: 0, lastSuccessMs: undefined, removed: { events: 0, rollups: 0, hooks: 0, transcript_findings: 0, guard_trims: 0, partitions: 0 } };
  private readonly opts: RetentionOptions;
  private running: Promise<void> | undefined;
  private readonly stopping = new AbortController();

  constructor(opts: RetentionOptions) {
    this.opts = opts;
  }

  /** Runs retention once; a call while a run is under way waits for that run instead of starting a second one. */
  run(): Promise<void> {
    if (this.stopping.signal.aborted) return Promise.resolve();
    this.running ??= this.runOnce().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /**
   * Starts no run from now on, and ends the run under way, if any, between two of its batches (a pass over a large
   * store takes many seconds, which a graceful shutdown does not wait for); resolves once it has ended. Safe twice.
   */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.running;
  }

  private async runOnce(): Promise<void> {
    const { store, logger, now } = this.opts;
    const { signal } = this.stopping;
    // Raw bodies (user emails included) are not kept past retention.events, delivered or not.
    try {
      const expired = (await this.opts.expireForwarded?.(now() - this.opts.eventsMs, signal)) ?? 0;
      if (expired) logger.warn('retention removed undelivered forwarding requests and dead letters older than retention.events', { removed: expired });
    } catch (err) {
      logger.warn('forwarding retention failed', { err });
    }
    if (!this.opts.isLeader()) return;
    if (signal.aborted) return this.stoppedRun();
    let t = now();
    let deferred: boolean;
    try {
      // Replicas share the database, not a clock: its time, where it has one, is the same whoever leads.
      if (store.clockMs) t = await store.clockMs();
      if (signal.aborted) return this.stoppedRun();
      // By age only: rows stamped ahead of this clock were acknowledged too. A replica judges the future skew by
      // its own clock, which may run ahead of the database's; they are shown once their time comes.
      const r = await store.prune(t - this.opts.eventsMs, t - this.opts.rollupsMs, signal);
      this.count({ events: r.events, rollups: r.rollups, hooks: r.hooks, guard_trims: r.guardTrims, partitions: r.partitions ?? 0 });
      deferred = (r.partitionsDeferred ?? 0) > 0;
      if (r.events || r.rollups || r.hooks || r.guardTrims) {
        logger.info('retention removed old data', { events: r.events, rollups: r.rollups, hooks: r.hooks, ...(r.guardTrims ? { guardTrims: r.guardTrims } : {}), ...(r.partitions ? { partitions: r.partitions } : {}) });
      }
      if (signal.aborted) return this.stoppedRun();
      // Transcript findings are kept as long as raw events.
      const findings = await store.pruneTranscriptFindings(t - this.opts.eventsMs, signal);
      this.count({ transcript_findings: findings });
      if (findings) logger.info('retention removed old transcript findings', { transcriptFindings: findings });
      if (signal.aborted) return this.stoppedRun();
    } catch (err) {
      if (err instanceof NotLeaderError) {
        // Paused or cut off past its lease: another replica leads and runs retention, and this one deletes no more.
        this.stats.notLeader++;
        logger.warn('retention run stopped: leadership moved to another replica', { err });
        return;
      }
      this.stats.failed++;
      logger.warn('retention run failed', { err });
      return;
    }
    // The store logged which days it left; the run is not counted as a success, so a lock held for hours (a session
    // idle in a transaction) shows in hookwatch_retention_last_success_timestamp_seconds and its alert.
    if (deferred) {
      this.stats.deferred++;
      return;
    }
    this.stats.succeeded++;
    this.stats.lastSuccessMs = t;
  }

  /** A run ended by stop(): what it deleted is committed and counted, the next run (after a restart) deletes the rest. */
  private stoppedRun(): void {
    this.stats.stopped++;
    this.opts.logger.info('retention run stopped: hookwatch is stopping; the next run deletes the rest');
  }

  private count(removed: Partial<Record<RemovedKind, number>>): void {
    for (const kind of REMOVED_KINDS) this.stats.removed[kind] += removed[kind] ?? 0;
  }
}

/**
 * hookwatch_retention_*: runs by outcome, the last success, and what the runs removed by kind. Only the leader runs
 * retention: a follower's counters stay where they were (at 0 if it never led), and its last success is absent
 * until it has led and succeeded. `partitions` exists on PostgreSQL only (a SQLite store has none).
 */
export function registerRetentionMetrics(metrics: MetricsRegistry, retention: Retention, storeKind: string): void {
  const stats = retention.stats;
  metrics.collectedCounter('retention', {
    name: 'hookwatch_retention_runs_total', help: 'Retention runs of the store by this replica (the leader), by outcome: success, failure, deferred (old days left to the next run: a lock on events not granted in time), not_leader (stopped because the leader lease moved to another replica meanwhile), or stopped (under way when hookwatch began to stop: ended between two batches, the rest left to the next run).', labelNames: ['outcome'],
    collect: (set) => {
      set({ outcome: 'success' }, stats.succeeded);
      set({ outcome: 'failure' }, stats.failed);
      set({ outcome: 'deferred' }, stats.deferred);
      set({ outcome: 'not_leader' }, stats.notLeader);
      set({ outcome: 'stopped' }, stats.stopped);
    },
  });
  metrics.collectedGauge('retention', {
    name: 'hookwatch_retention_last_success_timestamp_seconds', help: 'When the last successful retention run of this replica began (Unix seconds); absent while none has succeeded here (a follower that never led).',
    collect: (set) => {
      if (stats.lastSuccessMs !== undefined) set({}, stats.lastSuccessMs / 1000);
    },
  });
  const kinds = REMOVED_KINDS.filter((k) => k !== 'partitions' || storeKind === 'postgres');
  metrics.collectedCounter('retention', {
    name: 'hookwatch_retention_removed_total', help: 'What retention runs of this replica removed, by kind: events, rollups (rows), hooks, transcript_findings, guard_trims (outputs trimmed by hookwatch guard), and on PostgreSQL partitions (whole days of events).', labelNames: ['kind'],
    collect: (set) => {
      for (const kind of kinds) set({ kind }, stats.removed[kind]);
    },
  });
}
