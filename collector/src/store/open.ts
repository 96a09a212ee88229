/**
 * Opens the store named by config.db: a SQLite path (default) or a postgres:// URL, and the coordination that
 * goes with it: one replica at a time runs alert evaluation and retention (a PostgreSQL lease), while a SQLite
 * store has a single process that is always the leader.
 */
import type { AlertStateStore } from '../alerting/state-store.ts';
import type { HookwatchConfig } from '../config/index.ts';
import type { Logger } from '../telemetry/logger.ts';
import { PostgresAlertStateStore } from './postgres/alert-state.ts';
import { PostgresStore } from './postgres/index.ts';
import { PostgresLease } from './postgres/lease.ts';
import { SqliteStore } from './sqlite/index.ts';
import type { Store } from './store.ts';

/** True for postgres:// and postgresql:// URLs. */
export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

export async function openStore(config: HookwatchConfig, opts: { logger?: Logger } = {}): Promise<Store> {
  if (isPostgresUrl(config.db)) {
    return PostgresStore.open({ url: config.db, dimensions: config.dimensions, poolSize: config.postgres.poolSize, maxHooks: config.store.maxHooks, ...(opts.logger ? { logger: opts.logger } : {}) });
  }
  return new SqliteStore({ path: config.db, synchronous: config.sqlite.synchronous, dimensions: config.dimensions, maxHooks: config.store.maxHooks, ...(opts.logger ? { logger: opts.logger } : {}) });
}

/** Who does the once-per-cluster work (alert evaluation and notification, retention). */
export interface Coordination {
  /** Satisfies alerting's LeaderElector. */
  leader: { isLeader(): boolean };
  /** Alert state shared by the replicas (PostgreSQL, fenced by the lease); undefined: alerting keeps its own SQLite state. */
  alertStateStore: AlertStateStore | undefined;
  /** Registers a callback for leadership changes (e.g. reload shared state on becoming leader). */
  onLeaderChange(cb: (leader: boolean) => void): void;
  /**
   * Calls cb each time this replica acquires leadership, and at once if it holds it now. Never for a single
   * process (SQLite), which is leader from the start and loads its state then.
   */
  onAcquired(cb: () => void): void;
  /** Hands leadership over (if held) and stops renewing; safe twice. */
  stop(): Promise<void>;
}

/**
 * Starts the coordination for a store opened by openStore (pass the store itself, not a wrapper). A PostgreSQL
 * store elects a leader with a lease row; anything else is a single process, always the leader.
 */
export function startCoordination(store: Store, config: HookwatchConfig, logger: Logger): Coordination {
  const listeners: ((leader: boolean) => void)[] = [];
  if (!(store instanceof PostgresStore)) {
    return { leader: { isLeader: () => true }, alertStateStore: undefined, onLeaderChange: (cb) => void listeners.push(cb), onAcquired: () => {}, stop: async () => {} };
  }
  const lease = new PostgresLease({
    url: config.db,
    ttlMs: config.postgres.leaseTtlMs,
    logger,
    onChange: (leader) => {
      for (const cb of listeners) cb(leader);
    },
  });
  lease.start();
  const alertStateStore = new PostgresAlertStateStore({ pool: store.connectionPool, fence: lease });
  return {
    leader: lease,
    alertStateStore,
    onLeaderChange: (cb) => void listeners.push(cb),
    onAcquired: (cb) => {
      listeners.push((leader) => {
        if (leader) cb();
      });
      if (lease.isLeader()) cb();
    },
    stop: () => lease.stop(),
  };
}
