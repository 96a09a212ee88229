/**
 * Opens the store named by config.db: a SQLite path (default) or a postgres:// URL, and the coordination that
 * goes with it: one replica at a time runs alert evaluation and retention (a PostgreSQL lease), while a SQLite
 * store has a single process that is always the leader.
 */
import { hostname } from 'node:os';
import type { ClusterState } from './model.ts';
import { PostgresAlertStateStore } from '../alerting/state/postgres.ts';
import type { AlertStateStore } from '../alerting/state/store.ts';
import type { HookwatchConfig } from '../config/index.ts';
import { formatDuration } from '../config/values.ts';
import type { Logger } from '../telemetry/logger.ts';
import { ThrottledLine } from '../telemetry/throttled-line.ts';
import { unboundedStep, type ShutdownStep } from '../shutdown.ts';
import { PostgresStore } from './postgres/index.ts';
import { MigrationLockWaitError } from './postgres/migrate.ts';
import { LEASE_CHANNEL, PostgresBus, type BusChannel } from './postgres/bus.ts';
import { PostgresLease, readCluster } from './postgres/lease.ts';
import { SqliteStore } from './sqlite/index.ts';
import { isPostgresUrl } from './settings.ts';
import { StoreUnavailableError, type Store } from './store.ts';


/**
 * On PostgreSQL, `onMigrationLock` is called once the store holds the migration lock (it may change the schema),
 * `onMigrationLockWait` as it begins to wait for another replica holding it, which `migrationLockWaitMs` bounds
 * (MigrationLockWaitError past it). On SQLite, whose process lock the caller holds, `onMigrationLock` is called
 * as a migration begins on its worker thread.
 */
export async function openStore(config: HookwatchConfig, opts: { logger?: Logger; now?: () => number; onMigrationLock?: () => void; onMigrationLockWait?: () => void; migrationLockWaitMs?: number } = {}): Promise<Store> {
  // Which minutes the minute rollups answer and which the raw events (minute-sources.ts).
  const retention = { eventsMs: config.retention.eventsMs, minuteRollupsMs: config.retention.minuteRollupsMs, rollupsMs: config.retention.rollupsMs };
  const now = opts.now ? { now: opts.now } : {};
  if (isPostgresUrl(config.db)) {
    return PostgresStore.open({ url: config.db, dimensions: config.dimensions, poolSize: config.postgres.poolSize, readers: config.store.readers, maxHooks: config.store.maxHooks, retention, ...now, ...(opts.logger ? { logger: opts.logger } : {}), ...(opts.onMigrationLock ? { onMigrationLock: opts.onMigrationLock } : {}), ...(opts.onMigrationLockWait ? { onMigrationLockWait: opts.onMigrationLockWait } : {}), ...(opts.migrationLockWaitMs === undefined ? {} : { migrationLockWaitMs: opts.migrationLockWaitMs }) });
  }
  // Migrated on a worker thread: the ports answer meanwhile.
  return SqliteStore.open({ path: config.db, synchronous: config.sqlite.synchronous, cacheBytes: config.sqlite.cacheBytes, dimensions: config.dimensions, readers: config.store.readers, readerMaxOldSpace: config.store.readerMaxOldSpace, maxHooks: config.store.maxHooks, retention, ...now, ...(opts.logger ? { logger: opts.logger } : {}) }, opts.onMigrationLock);
}

/** The wait after the first failed attempt to reach PostgreSQL at start; it doubles after each one, up to the cap. */
const START_RETRY_FIRST_MS = 500;
const START_RETRY_CAP_MS = 10_000;
/**
 * How soon after the last attempt the next one comes once a request was refused meanwhile (StoreWait.hurry): an
 * OTLP/gRPC export is held 8 s at most, an OTLP/HTTP client tries again for 10 s, less than the cap.
 */
const START_RETRY_HURRIED_MS = 1000;
/**
 * How often, at most, the start logs that the database is still out of reach, with the attempts since its last
 * line: hurried attempts come about once a second while clients send (each is logged at debug).
 */
const START_LOG_INTERVAL_MS = 10_000;

/** What the start waits for (/readyz's reason) while another replica migrates the schema, and while this one does. */
const WAITING_FOR_MIGRATION = 'waiting for another replica to finish migrating the schema';
const MIGRATING = 'migrating the database schema';

/** What openStoreWhenReachable rejects with once its wait was given up (StoreWait.giveUp). */
export class StoreWaitGivenUpError extends Error {
  constructor() {
    super('the wait for the database was given up');
    this.name = 'StoreWaitGivenUpError';
  }
}

/**
 * A start's wait for its PostgreSQL server (openStoreWhenReachable), which a stop asked for meanwhile gives up (a
 * SIGTERM while the database is not up yet, or while another replica migrates the schema). Until an attempt holds
 * the migration lock, nothing is changed on the database and nothing is accepted (every request was refused with
 * Retry-After), so the start can end at once, cleanly. Once one holds it, it migrates the schema: that is no
 * longer waiting, and giveUp leaves it to the caller. An attempt that fails after it (the server gone again)
 * waits again.
 */
export class StoreWait {
  private state: 'waiting' | 'migrating' | 'given up' = 'waiting';
  private readonly givenUp = Promise.withResolvers<never>();
  /** Ends the pause under way sooner (hurry). */
  private hurried: (() => void) | undefined;

  constructor() {
    // Looked at only while an attempt or the pause between two runs.
    this.givenUp.promise.catch(() => {});
  }

  /**
   * Gives the wait up: openStoreWhenReachable rejects with StoreWaitGivenUpError at once, the attempt under way
   * left to end by itself (a store it opens is closed). False once an attempt holds the migration lock.
   */
  giveUp(): boolean {
    if (this.state === 'migrating') return false;
    if (this.state === 'waiting') {
      this.state = 'given up';
      this.givenUp.reject(new StoreWaitGivenUpError());
    }
    return true;
  }

  /**
   * The attempt under way holds the migration lock. One that took it after the wait was given up (it went on by
   * itself) is stopped here, having changed nothing: StoreWaitGivenUpError.
   */
  migrating(): void {
    if (this.state === 'given up') throw new StoreWaitGivenUpError();
    this.state = 'migrating';
  }

  /** The attempt failed: the start waits for the database again. */
  waitingAgain(): void {
    if (this.state === 'migrating') this.state = 'waiting';
  }

  /** How `p` settles, or StoreWaitGivenUpError once the wait is given up first (what `p` opens then goes to `discard`). */
  until<T>(p: Promise<T>, discard: (value: T) => unknown = () => {}): Promise<T> {
    return Promise.race([p, this.givenUp.promise]).catch((err: unknown) => {
      if (err instanceof StoreWaitGivenUpError) p.then(discard, () => {});
      throw err;
    });
  }

  /**
   * A request was refused because the store is not open (OpeningIntake): one that waits for it (a held export, a
   * client trying again) should not wait out a long pause, so the pause under way ends START_RETRY_HURRIED_MS
   * after it began, or now if that is past.
   */
  hurry(): void {
    this.hurried?.();
  }

  /**
   * Resolves after `ms` (sooner when hurried), or rejects with StoreWaitGivenUpError as soon as the wait is given
   * up.
   */
  pause(ms: number): Promise<void> {
    const began = performance.now();
    let timer: NodeJS.Timeout | undefined;
    return this.until(new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      this.hurried = () => {
        this.hurried = undefined;
        clearTimeout(timer);
        timer = setTimeout(resolve, Math.max(0, Math.min(ms, START_RETRY_HURRIED_MS) - (performance.now() - began)));
      };
    })).finally(() => {
      clearTimeout(timer);
      this.hurried = undefined;
    });
  }
}

/**
 * openStore, tried again while a PostgreSQL server cannot be reached for now (StoreUnavailableError: refused, not
 * answering, a name not resolving yet, starting up, too many connections), as in Kubernetes, where the database
 * often comes up after hookwatch or restarts with it. Each failure is logged at debug, its message scrubbed of the
 * password (the store's own), and at warn the first at once, then at most once per START_LOG_INTERVAL_MS with the
 * attempts since; it is told to `onWaiting` (what /readyz says meanwhile, as are a wait for another replica's
 * migration lock and the migration under way once it holds it); the next attempt follows after
 * START_RETRY_FIRST_MS, doubling up to START_RETRY_CAP_MS, sooner while requests wait for the store (StoreWait.hurry).
 * Any other failure (a refused password, a missing database, a schema newer than this hookwatch) is thrown at once,
 * as is the one of the attempt made once postgres.startTimeout has passed (0: no bound), which bounds the wait for
 * another replica's migration lock too (an error naming the setting). A SQLite store is opened once. `wait` given up (a stop) before an
 * attempt holds the migration lock: StoreWaitGivenUpError at once.
 */
export async function openStoreWhenReachable(config: HookwatchConfig, opts: { logger: Logger; now?: () => number; onWaiting?: (reason: string) => void; wait?: StoreWait }): Promise<Store> {
  const wait = opts.wait ?? new StoreWait();
  const bound = config.postgres.startTimeoutMs;
  const startedAt = performance.now();
  let waitMs = START_RETRY_FIRST_MS;
  let last = { attempt: 0, err: '' };
  const unreachable = new ThrottledLine(START_LOG_INTERVAL_MS, () => performance.now(), (attempts) => {
    opts.logger.warn('postgres not reachable at start; trying again', { attempt: last.attempt, attempts, err: last.err });
  });
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        const onMigrationLock = (): void => {
          wait.migrating();
          opts.onWaiting?.(MIGRATING);
        };
        const onMigrationLockWait = (): void => opts.onWaiting?.(WAITING_FOR_MIGRATION);
        // Another replica's migration is waited for within the same bound as the database.
        const migrationLockWaitMs = bound > 0 ? Math.max(0, bound - (performance.now() - startedAt)) : undefined;
        return await wait.until(openStore(config, { logger: opts.logger, ...(opts.now ? { now: opts.now } : {}), onMigrationLock, onMigrationLockWait, migrationLockWaitMs }), (store) => store.close());
      } catch (err) {
        if (err instanceof StoreWaitGivenUpError) throw err;
        if (err instanceof MigrationLockWaitError) {
          throw new Error(`cannot open the PostgreSQL store: another replica held the schema migration lock past postgres.startTimeout (${formatDuration(bound)}); it may still be migrating a large database: raise postgres.startTimeout, or look for a replica stuck holding the lock`, { cause: err });
        }
        const left = bound > 0 ? bound - (performance.now() - startedAt) : Infinity;
        if (!isPostgresUrl(config.db) || !(err instanceof StoreUnavailableError) || left <= 0) throw err;
        wait.waitingAgain();
        // The last attempt is made at the bound, not given up on before it; sooner while requests wait (hurry).
        const retryWithinMs = Math.round(Math.min(waitMs, left));
        opts.onWaiting?.(err.message);
        last = { attempt, err: err.message };
        opts.logger.debug('postgres start attempt failed', { attempt, retryWithinMs, err: err.message });
        unreachable.note();
        await wait.pause(retryWithinMs);
        waitMs = Math.min(waitMs * 2, START_RETRY_CAP_MS);
      }
    }
  } finally {
    // The attempts held back since the last line, before what ends the wait is logged.
    unreachable.flush();
  }
}

/** The channels replicas signal each other on; the lease hands itself back on its own (LEASE_CHANNEL). */
type SignalChannel = Exclude<BusChannel, typeof LEASE_CHANNEL>;

/** Who does the once-per-cluster work (alert evaluation and notification, retention). */
export interface Coordination {
  /** Satisfies alerting's LeaderElector (with the lease's fencing token on PostgreSQL). */
  leader: { isLeader(): boolean; epoch?(): number | null };
  /** Alert state shared by the replicas (PostgreSQL, fenced by the lease); undefined: alerting keeps its own SQLite state. */
  alertStateStore: AlertStateStore | undefined;
  /** Registers a callback for leadership changes (e.g. reload shared state on becoming leader). */
  onLeaderChange(cb: (leader: boolean) => void): void;
  /**
   * Calls cb each time this replica acquires leadership, and at once if it holds it now. Never for a single
   * process (SQLite), which is leader from the start and loads its state then.
   */
  onAcquired(cb: () => void): void;
  /** Who leads and which replicas run (GET /api/v1/cluster, /metrics). */
  cluster(): Promise<ClusterState>;
  /** Signals every replica (PostgreSQL LISTEN/NOTIFY); a no-op for a single process. */
  publish(channel: SignalChannel, payload?: string): void;
  /** Registers a receiver of signals from any replica (this one included). */
  onSignal(cb: (channel: SignalChannel, payload: string) => void): void;
  /**
   * Registers a callback for when this replica hears signals again after its listening connection was lost
   * (signals sent meanwhile were missed). Never for a single process.
   */
  onSignalsResumed(cb: () => void): void;
  /** Whether the connection listening for signals is up; undefined for a single process, which has none. */
  signalsListening(): boolean | undefined;
  /** Whether another replica can take over when this one hands leadership back (PostgreSQL). */
  replicated: boolean;
  /**
   * Leaves the election and hands leadership over (if held) at once, for another replica to take while this one
   * still drains: call it only once this replica's leader work has stopped. Signals and the heartbeat go on until
   * stop(). Safe twice; a no-op for a single process. Each part that waits on the database runs as a `step`
   * (service.ts bounds them; unbounded by default).
   */
  handBack(step?: ShutdownStep): Promise<void>;
  /** Hands leadership over (if not done yet), stops listening and removes the heartbeat; safe twice. */
  stop(step?: ShutdownStep): Promise<void>;
}

/**
 * Starts the coordination for a store opened by openStore (pass the store itself, not a wrapper). A PostgreSQL
 * store elects a leader with a lease row; anything else is a single process, always the leader.
 */
export function startCoordination(store: Store, config: HookwatchConfig, logger: Logger): Coordination {
  const listeners: ((leader: boolean) => void)[] = [];
  if (!(store instanceof PostgresStore)) {
    const self = `${hostname()}:${process.pid}`;
    const startedAtMs = Date.now();
    const cluster = async (): Promise<ClusterState> => ({
      backend: 'sqlite', self, leader: { replica: self, epoch: 0, expiresAtMs: null }, leaseTtlSeconds: null,
      replicas: [{ replica: self, leader: true, self: true, startedAtMs, lastHeartbeatMs: Date.now(), heartbeatAgeSeconds: 0, alive: true }],
    });
    return { leader: { isLeader: () => true }, alertStateStore: undefined, onLeaderChange: (cb) => void listeners.push(cb), onAcquired: () => {}, cluster, publish: () => {}, onSignal: () => {}, onSignalsResumed: () => {}, signalsListening: () => undefined, replicated: false, handBack: async () => {}, stop: async () => {} };
  }
  const lease = new PostgresLease({
    url: config.db,
    ttlMs: config.postgres.leaseTtlMs,
    logger,
    // The database answers again: the listening connection need not wait out its backoff, and the store closes
    // the connections left waiting since before it was found unreachable.
    onConnected: () => {
      bus.databaseReachable();
      store.databaseReachable();
    },
    onChange: (leader) => {
      // Whatever was queued is dropped on loss (service.ts): a later acquisition resumes the outbox afresh.
      if (!leader) alertStateStore.forgetOutbox();
      for (const cb of listeners) cb(leader);
    },
  });
  const alertStateStore = new PostgresAlertStateStore({ pool: store.connectionPool, fence: lease });
  // Retention deletes only under the lease its run began with, as alert state is written.
  store.fenceRetention(lease);
  const signals: ((channel: SignalChannel, payload: string) => void)[] = [];
  const resumed: (() => void)[] = [];
  const bus = new PostgresBus({
    url: config.db,
    pool: store.connectionPool,
    logger,
    onMessage: (channel, payload) => {
      // The leader handed the lease back (a clean stop, as in a rolling update): take it now, not at the next renewal.
      if (channel === LEASE_CHANNEL) return lease.handedBack(payload);
      for (const cb of signals) cb(channel, payload);
    },
    onResumed: () => {
      store.databaseReachable();
      for (const cb of resumed) cb();
    },
    // The store's idle connections may be as dead: it asks the database, and closes them if it does not answer.
    onUnanswered: () => store.checkReachable(),
  });
  store.onConnected(() => bus.databaseReachable());
  void bus.start();
  lease.start();
  let handingBack: Promise<void> | undefined;
  const handBack = (step: ShutdownStep = unboundedStep): Promise<void> => {
    handingBack ??= step('leader lease hand-back', async () => {
      await lease.handBack();
      // Not handed back: the step did not do its job (the lease said so), the stop is not clean.
      return !lease.leftBehind;
    }, () => lease.cutConnections()).then(() => {});
    return handingBack;
  };
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
    cluster: () => readCluster(store.connectionPool, { name: lease.name, holder: lease.holder, ttlMs: config.postgres.leaseTtlMs }),
    publish: (channel, payload) => void bus.publish(channel, payload),
    onSignal: (cb) => void signals.push(cb),
    onSignalsResumed: (cb) => void resumed.push(cb),
    signalsListening: () => bus.listening,
    replicated: true,
    handBack,
    stop: async (step = unboundedStep) => {
      // Apart, each on its own connection: a hung listening connection does not keep the lease from being handed back.
      await Promise.all([
        step('replica signal connection close', () => bus.stop(), () => bus.cutConnections()),
        handBack(step).then(() => step('replica heartbeat removal', () => lease.stop(), () => lease.cutConnections())),
      ]);
    },
  };
}
