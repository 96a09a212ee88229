/**
 * The alert engine orchestrates, as Prometheus' rule manager and Alertmanager do between them: evaluate the rules
 * (on ingest, so a persisted output is notified within a second, and on a timer, for `for`, keep_firing_for,
 * repeat_interval, silences and time-based rules), decide the transitions (evaluation.ts), apply silences and
 * plan notifications (notification-plan.ts), write state and the outbox in one transaction (state/), and only
 * then hand the notifications to the dispatcher. What it holds is served by the read model (read-model.ts).
 */
import type { Dispatcher } from '../notify/dispatcher.ts';
import type { LinkContext, Notification, ReceiverConfig } from '../notify/model.ts';
import type { AlertEventSink } from '../notify/otlp.ts';
import type { HookEvent } from '../hooks/model.ts';
import type { IngestListener } from '../pipeline/consumer.ts';
import { NotLeaderError, StoreUnavailableError, type Store } from '../store/store.ts';
import type { AlertSummary } from '../../../shared/src/api.ts';
import type { Logger } from '../telemetry/logger.ts';
import { ThrottledLine } from '../telemetry/throttled-line.ts';
import { AlertSet } from './alert-set.ts';
import type { AlertRecord } from './model.ts';
import { announceTransitions } from './announce.ts';
import type { RuleConfig, RuleKind } from './settings.ts';
import { applyEvaluation, MAX_ALERTS_PER_RULE, type RuleOutcome } from './evaluation.ts';
import { fingerprint, restoredAlert, type Transition } from './lifecycle.ts';
import { lastNotifiedAt, markNotified, markSuperseded, noteLastNotified, planForOwedReceivers, planNotifications, rulesToRead, supersedes } from './notification-plan.ts';
import { AlertReadModel } from './read-model.ts';
import { evaluateRule, evaluatesOnIngest, persistedCanFire, readGuardNoteSince, readsGuardTrims, ruleTriggeredBy, withEvidence } from './rules.ts';
import { Silences } from './silencing.ts';
import { alwaysLeader, type AlertStateStore, type LeaderElector } from './state/store.ts';
import { pauseEvery, type Pause } from '../paced.ts';

export interface AlertEngineOptions {
  store: Store;
  stateStore: AlertStateStore;
  rules: readonly RuleConfig[];
  receivers: readonly ReceiverConfig[];
  dispatcher: Dispatcher;
  events: AlertEventSink;
  /** Where alert events link to (the dashboard); none without. */
  links?: LinkContext;
  logger: Logger;
  now?: () => number;
  /** Alertmanager repeat_interval: a still-firing alert is notified again after this long. */
  repeatIntervalMs: number;
  /**
   * alerting.evaluationInterval, whether or not this engine runs the timer: whether a persisted rule can fire on an
   * output over the cap depends on it (rules.ts persistedCanFire). None: 0.
   */
  evaluationIntervalMs?: number;
  /** How long resolved alerts stay listed (and their attempts kept). */
  resolvedRetentionMs?: number;
  leader?: LeaderElector;
  /**
   * State shared by replicas (PostgreSQL): the leader reads silences from the store at every evaluation, and a
   * follower reads alerts and silences from it before answering (refresh), so every replica answers the same.
   */
  shared?: boolean;
  /** How long an evaluation runs before it gives the event loop a turn; default EVALUATION_SLICE_MS. */
  sliceMs?: number;
  /** The least time between the starts of two evaluations on ingest; default INGEST_SPACING_MS. */
  ingestSpacingMs?: number;
}

/** Counters for /metrics and tests. */
export interface EngineStats {
  evaluations: number;
  ruleErrors: number;
  droppedAlerts: number;
  notificationsCreated: number;
  lastEvaluationMs: number | null;
}

/**
 * What an evaluation reads: every rule (the timer's), the rules ingest triggered, none (`notify`: silences, repeats
 * and owed receivers only), or the rules a reload added or changed (`reload`, whose alerts of rules no longer
 * configured resolve too).
 */
type Scope = 'all' | 'ingest' | 'notify' | { reload: ReadonlySet<string> };

const DAY = 86_400_000;

/** What the engine keeps of a notification made or given up on (see AlertEngine.sent). */
type SentNotification = Pick<Notification, 'receiver' | 'createdAtMs' | 'status'> & { alert: { id: string } };

/**
 * How long after a notification was given up on (its delivery deadline passed, the receiver refused it, its queue
 * was full) the receiver is notified again: of the alert while it fires, of its resolution while it has not fired
 * again. Alertmanager's default group_interval, at whose next flush it sends again what it could not deliver.
 * Without it the receiver would hear nothing of a firing alert until its repeat, hours later, and never that it
 * resolved.
 */
const UNDELIVERED_RETRY_MS = 5 * 60_000;

/**
 * How long an evaluation runs before it gives the event loop a turn: its rules' loops over every hook run in slices,
 * so OTLP acknowledgements and API answers wait at most about this long behind an evaluation of thousands of hooks.
 */
const EVALUATION_SLICE_MS = 10;

/**
 * The least time between the starts of two evaluations on ingest. The first batch after a quiet spell is evaluated
 * at once; while batches keep coming, the rules they trigger wait for the next start, at most this long, and one
 * evaluation reads them all. Under a sustained stream an evaluation after every commit repeats, a few milliseconds
 * later, the reads of the one before (every hook of each rule's window): this caps them at five a second, whatever
 * the batch rate. 200 ms is what it adds at most to the notification of an alert a batch makes true mid-stream,
 * which leaves most of the second hookwatch promises (docs/alerting.md) to the commit, the evaluation, a follower's
 * signal to the leader and the delivery.
 */
export const INGEST_SPACING_MS = 200;

/** A stop, or a leadership lost, between the slices of an evaluation ends it there, before it applied anything. */
class EvaluationStopped extends Error {}

/** First wait before a failed reload of the alert state is tried again; it doubles up to the maximum. */
const RELOAD_RETRY_MIN_MS = 1_000;
const RELOAD_RETRY_MAX_MS = 30_000;

/** How often, at most, the failures to record when an alert was last notified are logged. */
const LAST_NOTIFIED_WRITE_LOG_INTERVAL_MS = 60_000;
/** How often, at most, the evaluations the store's outage failed are logged (each tick and ingest would log one). */
const UNAVAILABLE_LOG_INTERVAL_MS = 60_000;

export class AlertEngine implements IngestListener {
  readonly stats: EngineStats = { evaluations: 0, ruleErrors: 0, droppedAlerts: 0, notificationsCreated: 0, lastEvaluationMs: null };
  /** The silences (the API creates and expires them here). */
  readonly silences: Silences;
  /** What the API and the dashboard read. */
  readonly readModel: AlertReadModel;
  /** Rules, receivers and repeat interval are replaced by a reload (reconfigure) at once; each evaluation takes them as it starts. */
  private opts: AlertEngineOptions;
  private readonly now: () => number;
  private readonly leader: LeaderElector;
  private readonly set = new AlertSet();
  private chain: Promise<void> = Promise.resolve();
  private ingestQueued = false;
  /** Set while the next evaluation on ingest waits for its start (INGEST_SPACING_MS after the last one's). */
  private ingestSpacing: NodeJS.Timeout | undefined;
  /** When (performance.now()) the last evaluation on ingest started; -Infinity before any. */
  private ingestStartedAt = Number.NEGATIVE_INFINITY;
  /** Rules a committed batch may have made true, waiting for the next ingest evaluation. */
  private ingestRules = new Set<string>();
  /** Hooks with new guard trims, waiting for their alerts' guard notes to be read again ('all': every hook). */
  private guardHooks: Set<string> | 'all' = new Set();
  private guardQueued = false;
  private timer: NodeJS.Timeout | undefined;
  private timerIntervalMs = 0;
  /**
   * Set as a stop begins: nothing new is queued, and every evaluation but one on ingest (queued, waiting or in
   * progress) ends at its next slice; see stopOnce.
   */
  private stopRequested = false;
  /** Set once that evaluation on ingest is done: nothing more runs. */
  private stopped = false;
  private stopping: Promise<void> | undefined;
  /**
   * A state store out of reach fails the record of every delivery's time: the first is logged at once, then at
   * most a line a minute with how many since and the last reason; what is held back is written at the stop.
   */
  private lastNotifiedWriteError: unknown;
  private readonly lastNotifiedWriteFailures: ThrottledLine;
  private readonly unavailableEvaluations: ThrottledLine;
  /** The store's word for the last evaluation its outage failed (scrubbed of secrets by the store). */
  private unavailableCause = '';
  /**
   * Set while the persisted state could not be loaded for this leadership. Evaluating on what memory holds
   * then would notify again what the last leader notified, and leave what it had not delivered undelivered:
   * nothing is evaluated until a retry loads it.
   */
  private stale = false;
  /**
   * The lease epoch of the leadership whose load (with the outbox) memory holds; null before any. A replica that
   * leads under another epoch acts on nothing until its load for that leadership: memory holds an earlier
   * leadership's state, or a follower's, and another replica may have led and notified since. Unused without
   * epochs (a single process, which leads from the load at its start on).
   */
  private loadedEpoch: number | null = null;
  /**
   * The lease epoch the last load with the outbox was queued for (reload(true)): an evaluation that finds this
   * replica leading under an epoch neither loaded nor queued queues that load itself (see run).
   */
  private queuedEpoch: number | null = null;
  private reloadTimer: NodeJS.Timeout | undefined;
  private reloadDelayMs = RELOAD_RETRY_MIN_MS;
  /**
   * Receivers a reload added, owed the alerts firing then: notified at the next evaluation this replica saves as
   * leader, then forgotten. Kept only while leading: a follower's reloads add none, and a load as leader (or an
   * evaluation found not leading) forgets them; the catch-up of a load as leader reads from the state store which
   * receivers never had an alert, so a follower's reload does not notify again, once it leads, a receiver the
   * leader already notified after the same reload.
   */
  private addedReceivers = new Set<string>();
  /**
   * Set by a load as leader (a start, a new leadership): the next evaluation this replica saves notifies each
   * configured receiver of the firing alerts whose firing it never had (a receiver added to the file before the
   * restart), as a reload notifies the receivers it adds. The state store says who had each: see firingReceivers.
   */
  private catchUp = false;
  /**
   * Per alert (by id) and receiver: its latest notification made (of its firing, or once it resolved of its
   * resolution), when, and once that one was given up on, when. A load as leader reads it from the state store
   * (LoadedState.latest), so what was given up on before a restart or a change of leader is sent again when it
   * would have been without it.
   */
  private readonly sent = new Map<string, Map<string, { status: Notification['status']; madeAtMs: number; failedAtMs: number | null }>>();

  constructor(opts: AlertEngineOptions) {
    this.opts = opts;
    this.now = opts.now ?? Date.now;
    this.leader = opts.leader ?? alwaysLeader;
    this.lastNotifiedWriteFailures = new ThrottledLine(LAST_NOTIFIED_WRITE_LOG_INTERVAL_MS, this.now, (deliveries) => this.opts.logger.warn('cannot record when an alert was last notified', { deliveries, err: this.lastNotifiedWriteError }));
    this.unavailableEvaluations = new ThrottledLine(UNAVAILABLE_LOG_INTERVAL_MS, this.now, (evaluations) => this.opts.logger.warn(`alert evaluation failed: the store is unavailable (${this.unavailableCause}); evaluated again once it answers`, { evaluations }));
    // An early-expired silence may leave a firing alert due a notification: send it now, not at the next tick.
    this.silences = new Silences({ store: opts.stateStore, now: this.now, onExpired: () => void this.evaluate('notify') });
    // The receivers configured now, after any reload.
    const receivers = (): readonly ReceiverConfig[] => this.opts.receivers;
    this.readModel = new AlertReadModel({
      alerts: this.set, silences: this.silences, stateStore: opts.stateStore, now: this.now, refresh: () => this.refresh(),
      get receivers() {
        return receivers();
      },
    });
  }

  /** Loads persisted state and resumes undelivered notifications (same webhook-id). */
  async start(): Promise<void> {
    // Only the leader delivers: with shared state, another replica resumes the outbox when it becomes leader (reload(true)).
    await this.load(this.leader.isLeader());
  }

  private async load(resumeOutbox: boolean): Promise<void> {
    // Before the read: a leadership that moved while it ran is not the one it was read for.
    const epoch = this.leader.epoch?.();
    const state = await this.opts.stateStore.load({ outbox: resumeOutbox });
    // keep_firing_for counts from a last-held time no earlier than the one before the restart.
    const now = this.now();
    this.set.replace(state.alerts.map((a) => restoredAlert(a, now)));
    this.silences.replace(state.silences);
    if (!resumeOutbox) return;
    this.loadedEpoch = epoch ?? null;
    this.catchUp = true;
    this.addedReceivers.clear();
    // What was given up on is read from the state store: by this replica before a restart, or by the last leader.
    this.sent.clear();
    for (const n of state.latest) this.noteSent({ alert: { id: n.alertId }, receiver: n.receiver, status: n.status, createdAtMs: n.createdAtMs }, n.givenUpAtMs);
    if (state.outbox.length === 0) return;
    // Those for a receiver no longer configured are dropped as they are handed over (logged once per receiver).
    const discardedBefore = this.opts.dispatcher.stats.discarded;
    let resumed = 0;
    for (const n of state.outbox) if (this.opts.dispatcher.enqueue(n)) resumed++;
    const dropped = this.opts.dispatcher.stats.discarded - discardedBefore;
    this.opts.logger.info('resuming undelivered notifications', { count: resumed, ...(dropped > 0 ? { dropped } : {}) });
  }

  /**
   * Replaces the in-memory alerts and silences with the persisted state, after any evaluation in progress
   * (a replica that just became leader; `resumeOutbox` also delivers what the previous leader left undelivered).
   */
  reload(resumeOutbox = false): Promise<void> {
    if (resumeOutbox) this.queuedEpoch = this.leader.epoch?.() ?? null;
    this.chain = this.chain.then(async () => {
      // Memory was stale until now: what was not evaluated meanwhile is evaluated at once, and the active alerts read
      // their hooks' guard trims again (those stored meanwhile were announced while nothing was read).
      if ((await this.loadOrMarkStale(resumeOutbox)) !== 'recovered') return;
      await this.runAllWithGuardNotes();
    });
    return this.chain;
  }

  /**
   * After any evaluation in progress, evaluates every rule and has the active alerts read their hooks' guard trims
   * again: for what went unseen, as by a replica that just became leader or one that missed signals.
   */
  evaluateAllWithGuardNotes(): Promise<void> {
    if (this.stopRequested) return this.chain;
    this.chain = this.chain.then(() => this.runAllWithGuardNotes());
    return this.chain;
  }

  private async runAllWithGuardNotes(): Promise<void> {
    await this.run('all');
    await this.refreshGuardNotes('all');
  }

  /**
   * True while memory may differ from the saved state (a load failed, or this replica leads and has not loaded the
   * state for this leadership yet): nothing is evaluated or renewed then.
   */
  get isStale(): boolean {
    return this.stale || (this.leader.isLeader() && !this.loadedForLeadership());
  }

  /** Whether memory holds the state loaded for the leadership this replica holds now (loadedEpoch). */
  private loadedForLeadership(): boolean {
    const epoch = this.leader.epoch?.();
    return epoch === undefined || epoch === this.loadedEpoch;
  }

  /** Whether this replica acts as leader now: it leads, on the state loaded for this leadership. */
  private acting(): boolean {
    return this.leader.isLeader() && !this.isStale;
  }

  /**
   * Loads the saved state. When that fails, memory is marked stale (no evaluation until a load succeeds) and the
   * load is retried; `recovered` when memory was stale before this load.
   */
  private async loadOrMarkStale(resumeOutbox: boolean): Promise<'loaded' | 'recovered' | 'failed'> {
    try {
      await this.load(resumeOutbox);
    } catch (err) {
      this.stale = true;
      this.opts.logger.error('cannot load alert state; alerts are not evaluated until it loads', { err, retryInMs: this.reloadDelayMs });
      this.retryReload(resumeOutbox);
      return 'failed';
    }
    clearTimeout(this.reloadTimer);
    this.reloadDelayMs = RELOAD_RETRY_MIN_MS;
    if (!this.stale) return 'loaded';
    this.stale = false;
    this.opts.logger.info('alert state loaded again; evaluating');
    return 'recovered';
  }

  /** Tries the reload again, backing off, for as long as this replica leads (a new leadership reloads anyway). */
  private retryReload(resumeOutbox: boolean): void {
    clearTimeout(this.reloadTimer);
    if (this.stopRequested) return;
    const delay = this.reloadDelayMs;
    this.reloadDelayMs = Math.min(delay * 2, RELOAD_RETRY_MAX_MS);
    this.reloadTimer = setTimeout(() => {
      if (!this.stopRequested && this.leader.isLeader()) void this.reload(resumeOutbox);
    }, delay);
    this.reloadTimer.unref();
  }

  /**
   * Shared state: brings what this replica shows up to date with the store (silences; alerts too on a follower,
   * which evaluates nothing itself). A no-op for a single process, whose memory is the state.
   */
  async refresh(): Promise<void> {
    if (!this.opts.shared) return;
    if (this.leader.isLeader()) {
      await this.silences.reload();
      return;
    }
    const state = await this.opts.stateStore.load({ outbox: false });
    // Became leader meanwhile: its own reload (with the outbox) owns the state now.
    if (this.leader.isLeader()) return;
    this.set.replace(state.alerts);
    this.silences.replace(state.silences);
  }

  /** The alerts as the API lists them (for /metrics and the Alertmanager refresher). */
  alerts(): AlertSummary[] {
    return this.readModel.alerts();
  }

  /** Evaluates every rule each `intervalMs` (real time). */
  startTimer(intervalMs: number): void {
    if (this.timer) clearInterval(this.timer);
    this.timerIntervalMs = intervalMs;
    this.timer = setInterval(() => void this.evaluate('all'), intervalMs);
    this.timer.unref();
  }

  /**
   * A reloaded configuration, applied at once: the evaluation in progress finishes on the rules, receivers and
   * repeat interval it started with (each evaluation takes them as it starts), and every later one runs on these.
   * The evaluation the reload queues runs next and reads only the rules the reload added or changed (a rule is its
   * settings, under its name): what an unchanged rule reads did not change with the reload, and the next evaluation
   * of every rule reads it, so a reload's work grows with what it changed, not with the hooks every rule reads.
   * Alerts are keyed by rule name and labels, so those of a rule still configured keep their state (a firing alert
   * is not notified again); those of a rule no longer configured resolve at that evaluation. A receiver the reload
   * added is notified of the alerts firing then, at that evaluation. A running timer takes the new interval.
   * Resolves once that evaluation is done.
   */
  reconfigure(next: Pick<AlertEngineOptions, 'rules' | 'receivers' | 'repeatIntervalMs'> & { evaluationIntervalMs: number }): Promise<void> {
    const before = new Map(this.opts.rules.map((r) => [r.name, JSON.stringify(r)]));
    const changed = new Set(next.rules.filter((r) => before.get(r.name) !== JSON.stringify(r)).map((r) => r.name));
    const names = new Set(next.receivers.map((r) => r.name));
    // Only the leader owes a receiver the reload adds: a follower's would pile up, reload after reload, for when it
    // leads, whose load owes each receiver what the state store says it never had (catchUp) instead.
    const leads = this.leader.isLeader();
    for (const name of this.addedReceivers) if (!names.has(name) || !leads) this.addedReceivers.delete(name);
    if (leads) for (const name of names) if (!this.opts.receivers.some((r) => r.name === name)) this.addedReceivers.add(name);
    this.opts = { ...this.opts, rules: next.rules, receivers: next.receivers, repeatIntervalMs: next.repeatIntervalMs, evaluationIntervalMs: next.evaluationIntervalMs };
    // Triggered rules that no longer exist are not evaluated.
    for (const name of this.ingestRules) if (!next.rules.some((r) => r.name === name)) this.ingestRules.delete(name);
    if (this.timer && !this.stopRequested && this.timerIntervalMs !== next.evaluationIntervalMs) this.startTimer(next.evaluationIntervalMs);
    return this.evaluate({ reload: changed });
  }

  /** Called by the hook stage once events are committed: evaluate the event-driven rules now. */
  onIngested(events: readonly HookEvent[]): void {
    if (events.length === 0 || this.stopRequested) return;
    // The rules this batch can make true run now (with the persisted rules a headroom or growth rule needs beside
    // it: rulesToRead); clearing is time-based and left to the timer.
    this.trigger(this.triggeredRules(events));
  }

  /** Names of the rules a committed batch may have made true (what a follower tells the leader). */
  triggeredRules(events: readonly HookEvent[]): string[] {
    return this.opts.rules.filter((rule) => evaluatesOnIngest(rule) && ruleTriggeredBy(rule, events)).map((r) => r.name);
  }

  /**
   * Evaluates these rules soon (coalesced): a local batch, or one committed on another replica. At once when the
   * last evaluation on ingest started INGEST_SPACING_MS ago or more; else at that time, with every rule triggered
   * meanwhile.
   */
  trigger(ruleNames: readonly string[]): void {
    if (this.stopRequested) return;
    for (const name of ruleNames) if (this.opts.rules.some((r) => r.name === name)) this.ingestRules.add(name);
    // Coalesced: batches arriving while an evaluation is queued, or waits for its start, share it.
    if (this.ingestRules.size === 0 || this.ingestQueued || this.ingestSpacing) return;
    const wait = this.ingestStartedAt + (this.opts.ingestSpacingMs ?? INGEST_SPACING_MS) - performance.now();
    if (wait <= 0) {
      this.queueIngest();
      return;
    }
    this.ingestSpacing = setTimeout(() => {
      this.ingestSpacing = undefined;
      this.queueIngest();
    }, wait);
    // A stop runs it (see stop); it never keeps the process alive by itself.
    this.ingestSpacing.unref();
  }

  /** Queues the evaluation of the rules ingest triggered, after any evaluation in progress. */
  private queueIngest(): void {
    this.ingestQueued = true;
    this.chain = this.chain.then(() => {
      this.ingestQueued = false;
      this.ingestStartedAt = performance.now();
      return this.run('ingest');
    });
  }

  /** Called by the hook stage once guard trims are committed: the guard notes of these hooks' alerts may be due. */
  onGuardTrims(hookIds: readonly string[]): void {
    void this.noteGuardTrims(hookIds);
  }

  /**
   * Guard trims of these hooks ('all': of any hook) were stored, here or on another replica: the active alerts of
   * rules that say what guard trimmed (persisted, headroom, growth) on them read their hook's trims again, once per
   * hook, and take the guard annotations when they count more trims than the alert carries (none, or an older
   * count). A trim report races the hook event that raises the alert (each has its own exporter), and guard is often
   * installed while the alert fires: evaluations never read the trims again, this does, only when trims arrive.
   * Queued behind evaluations (one in progress has stepped its alerts first) and coalesced. The change is saved as
   * an evaluation's annotation changes are, and notifies nothing: as in Alertmanager, changed annotations of an
   * active alert go out with its next notification (its repeat or resolution).
   */
  noteGuardTrims(hookIds: readonly string[] | 'all'): Promise<void> {
    if (this.stopRequested) return this.chain;
    if (hookIds === 'all') this.guardHooks = 'all';
    else if (this.guardHooks !== 'all') for (const id of hookIds) this.guardHooks.add(id);
    if (this.guardQueued) return this.chain;
    this.guardQueued = true;
    this.chain = this.chain.then(() => {
      const hooks = this.guardHooks;
      this.guardHooks = new Set();
      this.guardQueued = false;
      return this.refreshGuardNotes(hooks);
    });
    return this.chain;
  }

  private async refreshGuardNotes(hooks: ReadonlySet<string> | 'all'): Promise<void> {
    if (this.stopRequested || !this.acting()) return;
    const epoch = this.leader.epoch?.();
    const rules = new Map(this.opts.rules.filter(readsGuardTrims).map((r) => [r.name, r]));
    const due = this.set.activeAlerts().filter((a) => a.hookId !== null && rules.has(a.rule) && (hooks === 'all' || hooks.has(a.hookId)));
    if (due.length === 0) return;
    const now = this.now();
    // Alerts of one hook that became active together (groupBy values, rules of one window) share a read.
    const reads = new Map<string, Promise<Record<string, string> | null>>();
    const upsert: AlertRecord[] = [];
    try {
      for (const a of due) {
        const rule = rules.get(a.rule) as RuleConfig;
        const hookId = a.hookId as string;
        const key = `${hookId}\u0000${rule.kind}\u0000${rule.windowMs}\u0000${a.activeAtMs}`;
        const read = reads.get(key) ?? readGuardNoteSince(this.opts.store, rule, hookId, a.activeAtMs, now);
        reads.set(key, read);
        const note = await read;
        if (!note || Number(note['guard_trims']) <= Number(a.annotations['guard_trims'] ?? 0)) continue;
        a.annotations = { ...a.annotations, ...note };
        upsert.push(a);
      }
    } catch (err) {
      // Those read before the failure are saved; the others are read again at their hook's next trims.
      this.opts.logger.warn('cannot read what guard trimmed of a hook with active alerts; their guard annotations are read again at its next trims', { err });
    }
    if (upsert.length === 0) return;
    try {
      await this.opts.stateStore.save({ upsert, remove: [], notifications: [] }, epoch);
    } catch (err) {
      // Kept in memory; the alerts' next save writes them.
      this.opts.logger.warn('cannot save the guard annotations of alerts', { err });
    }
  }

  /**
   * A firing notification of alert `id` was delivered to `receiver` at `atMs`: that receiver's repeatInterval
   * counts from here, as Alertmanager counts it from its last successful notification to that receiver (a
   * receiver that took retries to answer does not get the repeat early, and does not delay the others'). Queued
   * behind evaluations, saved under the fencing token.
   */
  noteDelivered(id: string, receiver: string, atMs: number): Promise<void> {
    if (this.stopped) return this.chain;
    this.chain = this.chain.then(async () => {
      const a = this.set.get(id);
      if (!a || a.state !== 'firing' || (lastNotifiedAt(a, receiver) ?? -Infinity) >= atMs || !this.acting()) return;
      markNotified(a, receiver, atMs);
      noteLastNotified(a, this.opts.receivers.map((r) => r.name), atMs);
      try {
        await this.opts.stateStore.save({ upsert: [a], remove: [], notifications: [] }, this.leader.epoch?.());
      } catch (err) {
        // Kept in memory; the alert's next save writes it. Through an outage, at most a line a minute.
        this.lastNotifiedWriteError = err;
        this.lastNotifiedWriteFailures.note();
      }
    });
    return this.chain;
  }

  /**
   * A notification was given up on at `atMs`: its receiver is owed it again UNDELIVERED_RETRY_MS later, if no later
   * notification of the alert was made for that receiver meanwhile: the alert while it still fires, its resolution
   * while it has not fired again (undeliveredDue).
   */
  noteUndelivered(n: SentNotification, atMs: number): void {
    if (this.stopped) return;
    const sent = this.sent.get(n.alert.id)?.get(n.receiver);
    if (sent && sent.madeAtMs > n.createdAtMs) return;
    this.noteSent(n, atMs);
  }

  /** Records `n` as its receiver's latest notification of its alert; `failedAtMs`, once it was given up on. */
  private noteSent(n: SentNotification, failedAtMs: number | null): void {
    let byReceiver = this.sent.get(n.alert.id);
    if (!byReceiver) this.sent.set(n.alert.id, (byReceiver = new Map()));
    byReceiver.set(n.receiver, { status: n.status, madeAtMs: n.createdAtMs, failedAtMs });
  }

  /**
   * The configured receivers whose last notification of `a` in the state it is in now was given up on
   * UNDELIVERED_RETRY_MS ago or more: of its firing while it fires; of its resolution (receivers with sendResolved)
   * unless a later episode of its labels has fired, which the receivers have instead.
   */
  private undeliveredDue(a: AlertRecord, now: number, receivers: readonly ReceiverConfig[]): string[] {
    const byReceiver = this.sent.get(a.id);
    if (!byReceiver) return [];
    const due = receivers.filter((r) => {
      const sent = byReceiver.get(r.name);
      if (sent?.status !== a.state || sent.failedAtMs === null || (a.state === 'resolved' && !r.sendResolved)) return false;
      return now - sent.failedAtMs >= UNDELIVERED_RETRY_MS;
    }).map((r) => r.name);
    // Read only when something is due: most resolved alerts listed had their resolution delivered.
    return due.length > 0 && a.state === 'resolved' && this.firedAgain(a) ? [] : due;
  }

  /** True when a later episode of the resolved alert `a` (its rule and labels) has fired. */
  private firedAgain(a: AlertRecord): boolean {
    return [...this.set.activeAlerts(), ...this.set.resolvedAlerts()].some((x) => x.rule === a.rule && x.fingerprint === a.fingerprint && x.activeAtMs > a.activeAtMs && x.startsAtMs !== null);
  }

  /** Records the notifications made now; forgets the alerts neither firing nor listed as resolved. */
  private noteMade(notifications: readonly Notification[]): void {
    for (const n of notifications) this.noteSent(n, null);
    const kept = new Set([...this.set.activeAlerts().filter((a) => a.state === 'firing'), ...this.set.resolvedAlerts()].map((a) => a.id));
    for (const id of this.sent.keys()) if (!kept.has(id)) this.sent.delete(id);
  }

  /** Runs an evaluation after any in progress; resolves when it is done (tests and the timer). */
  evaluate(scope: Scope = 'all'): Promise<void> {
    if (this.stopRequested) return this.chain;
    this.chain = this.chain.then(() => this.run(scope));
    return this.chain;
  }

  private async run(scope: Scope): Promise<void> {
    // A leader that lost the lease before its evaluation saved: the next leader's load owes the receivers it added.
    if (!this.leader.isLeader()) this.addedReceivers.clear();
    // Queued before this leadership's load (behind work in progress when the lease came): its load evaluates next.
    // Once a stop began, only the evaluation on ingest it waits for runs.
    if (this.halted(scope) || !this.acting()) {
      this.loadUnqueuedLeadership();
      return;
    }
    try {
      await this.evaluateOnce(scope);
    } catch (err) {
      if (err instanceof EvaluationStopped) return;
      if (err instanceof StoreUnavailableError) {
        this.unavailableCause = err.message;
        this.unavailableEvaluations.note();
        return;
      }
      this.opts.logger.error('alert evaluation failed', { err });
    }
  }

  /**
   * This replica leads under a lease epoch whose load nobody queued (the lease moved to another replica and back
   * between two of its renewals, so no acquisition was announced): without the load it would never act as leader.
   * Queued once per epoch, then the evaluation of every rule, as an acquisition queues them.
   */
  private loadUnqueuedLeadership(): void {
    const epoch = this.leader.epoch?.();
    if (this.stopRequested || this.stale || !this.leader.isLeader() || epoch === undefined || epoch === null || epoch === this.loadedEpoch || epoch === this.queuedEpoch) return;
    this.opts.logger.warn('leading under a lease epoch whose alert state was not loaded; loading it', { epoch });
    void this.reload(true).then(() => this.evaluateAllWithGuardNotes());
  }

  /** Evaluate -> apply silences -> persist -> notify. */
  private async evaluateOnce(scope: Scope): Promise<void> {
    // The fencing token this evaluation runs under: its writes are refused if the lease moved meanwhile.
    const epoch = this.leader.epoch?.();
    // The rules, receivers and repeat interval it runs on, and the receivers owed what fires, as it starts: a reload
    // applies at once, to the evaluations after this one.
    const { rules, receivers, repeatIntervalMs } = this.opts;
    const added = [...this.addedReceivers];
    // Read before this evaluation changes any alert: who had the firing of each alert already notified.
    const catchUp = this.catchUp;
    const missed = catchUp ? await this.receiversMissed(receivers) : new Map<string, string[]>();
    const now = this.now();
    const keep = this.opts.resolvedRetentionMs ?? DAY;
    // Read in slices; a stop between them ends the evaluation there (one on ingest runs to its end: see stopOnce):
    // nothing below has run. So does a leadership lost or moved meanwhile: the lease would refuse its save.
    const endIfStopped = (): void => {
      if (this.halted(scope) || !this.acting()) throw new EvaluationStopped('alert evaluation stopped');
    };
    const pause = pauseEvery(this.opts.sliceMs ?? EVALUATION_SLICE_MS, endIfStopped);
    const outcomes = await this.query(scope, rules, now, pause);
    // Shared state: the silences created on any replica while the queries ran, read once they are done, before
    // anything changes, so a failed read leaves memory as it was. A stop, or a leadership lost or moved meanwhile,
    // ends the evaluation here, as between two slices.
    if (this.opts.shared) {
      await this.silences.reload();
      endIfStopped();
    }
    const kindOf = (name: string): RuleKind | undefined => rules.find((r) => r.name === name)?.kind;
    // Asked once the rules without hooks over the cap are stepped (the persisted rules among them), whose alerts the
    // rest do not change: their active alerts are listed once, at the first question.
    let persistedAlerts: AlertRecord[] | undefined;
    const superseded = (hookId: string): boolean => {
      persistedAlerts ??= rules.filter((r) => r.kind === 'persisted').flatMap((r) => [...this.set.activeOf(r.name).values()]);
      return supersedes(persistedAlerts, hookId, kindOf) !== undefined;
    };
    const step = applyEvaluation(this.set, outcomes, { now, sweep: scope === 'all' || typeof scope === 'object', configured: rules.map((r) => r.name), resolvedRetentionMs: keep, superseded });
    for (const f of step.failed) {
      this.stats.ruleErrors++;
      this.opts.logger.warn('alert rule evaluation failed', { rule: f.rule, err: f.error });
    }
    for (const o of step.overLimit) {
      this.stats.droppedAlerts += o.dropped;
      this.opts.logger.warn('alert rule over its alert limit; extra label sets dropped', { rule: o.rule, limit: MAX_ALERTS_PER_RULE, dropped: o.dropped });
    }
    let hadFiring: (a: AlertRecord, receiver: string) => boolean;
    try {
      hadFiring = await this.firingHeard(step.transitions, receivers);
    } catch (err) {
      // Memory holds transitions not saved: as when the save fails.
      this.opts.logger.error('cannot read which receivers had the firing of the alerts that resolve; nothing notified, reloading the saved state', { err });
      await this.loadOrMarkStale(false);
      return;
    }
    if (scope === 'all') this.silences.forgetExpiredBefore(now - keep);
    // Silences as they are when the notifications are planned (Alertmanager checks them at notification time),
    // not when this evaluation began: one created while its queries ran mutes what it would send.
    const silencedAt = Math.max(now, this.now());
    const muted = (labels: Record<string, string>): boolean => this.silences.mutedBy(labels, silencedAt).length > 0;
    markSuperseded(this.set.activeAlerts(), step.transitions, kindOf);
    const notifications = planNotifications(this.set.activeAlerts(), step.transitions, step.upsert, { now, receivers, repeatIntervalMs, muted, hadFiring });
    // Resolved alerts are owed only the resolutions given up on: a receiver added since never had their firing.
    const owed = (a: AlertRecord): string[] => a.state === 'resolved' ? this.undeliveredDue(a, now, receivers) : [...new Set([...added, ...(missed.get(a.id) ?? []), ...this.undeliveredDue(a, now, receivers)])];
    notifications.push(...planForOwedReceivers([...this.set.activeAlerts(), ...this.set.resolvedAlerts()], owed, notifications, step.upsert, { now, muted }));
    this.stats.notificationsCreated += notifications.length;
    try {
      await this.opts.stateStore.save({ upsert: step.upsert, remove: step.remove, notifications }, epoch);
    } catch (err) {
      // Nothing is sent that is not saved: go back to the saved state; the next evaluation redoes the work. If that
      // load fails too, memory holds transitions never saved: stale until a load succeeds. A save whose COMMIT
      // applied but whose answer was lost has saved alerts that say they were notified: loaded, they plan nothing
      // again, so the leader's load takes the outbox too, and queues what the save wrote (the dispatcher sends a
      // notification it holds already once). A save the fence refused (another replica holds the lease, this one's
      // clock not yet told) reloads without the outbox: neither queued nor marked superseded by a replica not leading.
      this.opts.logger.error('cannot save alert state; nothing notified, reloading the saved state', { err });
      const resume = this.leader.isLeader() && !(err instanceof NotLeaderError);
      if (resume) this.opts.stateStore.forgetOutbox?.();
      await this.loadOrMarkStale(resume);
      return;
    }
    // Saved with their notifications: the owed receivers have them (the outbox resumes them after a restart). One a
    // reload added meanwhile is owed them still.
    for (const name of added) this.addedReceivers.delete(name);
    if (catchUp) this.catchUp = false;
    this.noteMade(notifications);
    for (const n of notifications) this.opts.dispatcher.enqueue(n);
    announceTransitions(step.transitions, now, this.opts.events, this.opts.logger, this.opts.links);
    if (scope === 'all') await this.opts.stateStore.prune(now - keep);
    this.stats.evaluations++;
    this.stats.lastEvaluationMs = now;
  }

  /**
   * The configured receivers each firing alert already notified has never had (by the state store's record of
   * its notifications and attempts), by alert id. An alert not yet notified is left to planNotifications, which
   * notifies every receiver.
   */
  private async receiversMissed(receivers: readonly ReceiverConfig[]): Promise<Map<string, string[]>> {
    const missed = new Map<string, string[]>();
    const firing = this.set.activeAlerts().filter((a) => a.state === 'firing' && a.lastNotifiedMs !== null);
    const had = await this.receiversHadFiring(firing.map((a) => a.id), receivers);
    for (const a of firing) {
      const owed = receivers.map((r) => r.name).filter((name) => !had(a.id, name));
      if (owed.length > 0) missed.set(a.id, owed);
    }
    return missed;
  }

  /**
   * Which receivers are told of the alerts resolving in `transitions`: those that had the firing delivered or may
   * still have it (its notification in the outbox), read from the state store, so a restart does not change the
   * answer; a firing given up on does not count, as Alertmanager logs a notification only once delivered and
   * sends no resolution for a group it never notified. An Alertmanager receiver is always told: the renewals of
   * the firing alert reach it even when its first post was given up on, and Alertmanager (as for any resolved
   * alert Prometheus sends) notifies the resolution only to the routes that had the firing.
   */
  private async firingHeard(transitions: readonly Transition[], receivers: readonly ReceiverConfig[]): Promise<(a: AlertRecord, receiver: string) => boolean> {
    const pushed = new Set(receivers.filter((r) => r.type === 'alertmanager').map((r) => r.name));
    const ids = transitions.filter((t) => t.to === 'resolved' && t.alert.notifiedFiring).map((t) => t.alert.id);
    const had = await this.receiversHadFiring(ids, receivers, { givenUp: false });
    return (a, receiver) => pushed.has(receiver) || had(a.id, receiver);
  }

  /**
   * Whether a receiver had the firing of an alert among `alertIds`, by the state store's record of them
   * (AlertStateStore.firingReceivers, given `opts`); nothing is read with no alert or no receiver configured.
   */
  private async receiversHadFiring(alertIds: readonly string[], receivers: readonly ReceiverConfig[], opts?: { givenUp?: boolean }): Promise<(alertId: string, receiver: string) => boolean> {
    const rows = alertIds.length === 0 || receivers.length === 0 ? [] : await this.opts.stateStore.firingReceivers(alertIds, opts);
    const had = new Set(rows.map((r) => `${r.alertId}\u0000${r.receiver}`));
    return (alertId, receiver) => had.has(`${alertId}\u0000${receiver}`);
  }

  /** Runs the queries of the rules in scope (an ingest evaluation: the triggered ones, a reload's: those it changed, rulesToRead; `notify`: none). */
  private async query(scope: Scope, configured: readonly RuleConfig[], now: number, pause: Pause): Promise<RuleOutcome[]> {
    const triggered = this.ingestRules;
    if (scope === 'ingest') this.ingestRules = new Set();
    const due = (r: RuleConfig): boolean => scope === 'all' || (scope === 'ingest' ? triggered.has(r.name) : typeof scope === 'object' && scope.reload.has(r.name));
    const rules = rulesToRead(configured, due);
    const persistedFires = persistedCanFire(configured, this.opts.evaluationIntervalMs ?? 0);
    const outcomes: RuleOutcome[] = [];
    for (const rule of rules) {
      await pause();
      try {
        const active = this.set.activeOf(rule.name);
        const candidates = await evaluateRule(rule, { store: this.opts.store, now, pause, active: [...active.values()], persistedFires });
        // When the evidence begins, for the links of the alerts that become active now, and what guard trimmed of
        // their hooks (those past the rule's limit are dropped, unread).
        const isNew = (c: { labels: Record<string, string> }): boolean => !active.has(fingerprint(c.labels));
        const kept = await withEvidence(candidates.slice(0, MAX_ALERTS_PER_RULE), isNew, (err) => {
          this.opts.logger.warn('cannot read when an alert\'s evidence begins or what guard trimmed of its hook; the links of the alerts this evaluation raises start from when they became active', { rule: rule.name, err });
        });
        outcomes.push({ rule, candidates: [...kept, ...candidates.slice(MAX_ALERTS_PER_RULE)] });
      } catch (error) {
        if (error instanceof EvaluationStopped) throw error;
        outcomes.push({ rule, error });
      }
    }
    return outcomes;
  }

  /** Whether an evaluation of `scope` ends (or is skipped) now: a stop began, and it is not one on ingest. */
  private halted(scope: Scope): boolean {
    return this.stopped || (this.stopRequested && scope !== 'ingest');
  }

  /**
   * Stops the timers, ends an evaluation of every rule (the timer's), of a reload or of silences in progress at its
   * next slice, and evaluates the rules committed batches triggered to the end: the evaluation on ingest in
   * progress, the one queued behind another, and the one waiting for its start (INGEST_SPACING_MS), which runs at
   * once. What the batches committed before the stop made true is saved with its notifications; a batch committed
   * after it began is the next leader's or the next start's to read (their evaluation of every rule). Safe twice.
   */
  stop(): Promise<void> {
    this.stopping ??= this.stopOnce();
    return this.stopping;
  }

  private async stopOnce(): Promise<void> {
    this.stopRequested = true;
    // First the timers: none queues work while the stop waits.
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    clearTimeout(this.reloadTimer);
    this.reloadTimer = undefined;
    clearTimeout(this.ingestSpacing);
    this.ingestSpacing = undefined;
    // Rules triggered and not read by an evaluation queued or in progress (one waiting for its start): read now.
    if (this.ingestRules.size > 0 && !this.ingestQueued) this.queueIngest();
    await this.chain;
    this.stopped = true;
    // What was queued meanwhile (a delivery recorded): nothing is evaluated any more.
    await this.chain;
    this.lastNotifiedWriteFailures.flush();
    this.unavailableEvaluations.flush();
  }
}
