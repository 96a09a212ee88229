/**
 * The alert engine: evaluates rules on ingest (event-driven, so a persisted output is notified within a second)
 * and on a timer (for `for`, keep_firing_for, repeat_interval, silences, time-based rules); moves alerts through
 * their lifecycle; writes state and the notification outbox in one transaction before anything is sent.
 */
import { createHash } from 'node:crypto';
import type { AlertSummary, DeliveryAttempt, Silence } from '../../../shared/src/api.ts';
import type { Dispatcher } from '../notify/dispatcher.ts';
import type { Notification, ReceiverConfig } from '../notify/model.ts';
import type { AlertEventSink } from '../notify/otlp.ts';
import type { HookEvent } from '../hooks/model.ts';
import type { IngestListener } from '../pipeline/consumer.ts';
import type { Store } from '../store/store.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { RuleConfig } from './settings.ts';
import { stepRule, type Transition } from './lifecycle.ts';
import type { AlertRecord, SilenceRecord, StateChanges } from './model.ts';
import { evaluateRule, evaluatesOnIngest, MAX_ALERTS_PER_RULE, ruleTriggeredBy } from './rules.ts';
import { silenceMatches, silenceState, toSilence } from './silences.ts';
import { alwaysLeader, type AlertStateStore, type LeaderElector } from './state-store.ts';

export interface AlertEngineOptions {
  store: Store;
  stateStore: AlertStateStore;
  rules: readonly RuleConfig[];
  receivers: readonly ReceiverConfig[];
  dispatcher: Dispatcher;
  events: AlertEventSink;
  logger: Logger;
  now?: () => number;
  /** Alertmanager repeat_interval: a still-firing alert is notified again after this long. */
  repeatIntervalMs: number;
  /** How long resolved alerts stay listed (and their attempts kept). */
  resolvedRetentionMs?: number;
  leader?: LeaderElector;
  /**
   * State shared by replicas (PostgreSQL): the leader reads silences from the store at every evaluation, and a
   * follower reads alerts and silences from it before answering (refresh), so every replica answers the same.
   */
  shared?: boolean;
}

/** Counters for /metrics and tests. */
export interface EngineStats {
  evaluations: number;
  ruleErrors: number;
  droppedAlerts: number;
  notificationsCreated: number;
  lastEvaluationMs: number | null;
}

type Scope = 'all' | 'ingest' | 'notify';

const DAY = 86_400_000;
/** A flapping rule can resolve many alerts in a day; the list stays bounded. */
const MAX_RESOLVED_LISTED = 1000;

export class AlertEngine implements IngestListener {
  readonly stats: EngineStats = { evaluations: 0, ruleErrors: 0, droppedAlerts: 0, notificationsCreated: 0, lastEvaluationMs: null };
  private readonly opts: AlertEngineOptions;
  private readonly now: () => number;
  /** Pending and firing alerts, per rule name, by fingerprint. */
  private readonly active = new Map<string, Map<string, AlertRecord>>();
  private readonly resolved = new Map<string, AlertRecord>();
  private readonly silences = new Map<string, SilenceRecord>();
  private chain: Promise<void> = Promise.resolve();
  private ingestQueued = false;
  /** Rules a committed batch may have made true, waiting for the next ingest evaluation. */
  private ingestRules = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(opts: AlertEngineOptions) {
    this.opts = opts;
    this.now = opts.now ?? Date.now;
  }

  /** Loads persisted state and resumes undelivered notifications (same webhook-id). */
  async start(): Promise<void> {
    // Only the leader delivers: with shared state, another replica resumes the outbox when it becomes leader (reload(true)).
    await this.load((this.opts.leader ?? alwaysLeader).isLeader());
  }

  private async load(resumeOutbox: boolean): Promise<void> {
    const state = await this.opts.stateStore.load({ outbox: resumeOutbox });
    this.active.clear();
    this.resolved.clear();
    this.silences.clear();
    for (const a of state.alerts) {
      if (a.state === 'resolved') this.resolved.set(a.id, a);
      else this.activeOf(a.rule).set(a.fingerprint, a);
    }
    for (const s of state.silences) this.silences.set(s.id, s);
    if (!resumeOutbox) return;
    for (const n of state.outbox) this.opts.dispatcher.enqueue(n);
    if (state.outbox.length > 0) this.opts.logger.info('resuming undelivered notifications', { count: state.outbox.length });
  }

  /**
   * Replaces the in-memory alerts and silences with the persisted state, after any evaluation in progress
   * (a replica that just became leader; `resumeOutbox` also delivers what the previous leader left undelivered).
   */
  reload(resumeOutbox = false): Promise<void> {
    this.chain = this.chain.then(() => this.load(resumeOutbox)).catch((err: unknown) => this.opts.logger.error('cannot reload alert state', { err }));
    return this.chain;
  }

  /**
   * Shared state: brings what this replica shows up to date with the store (silences; alerts too on a follower,
   * which evaluates nothing itself). A no-op for a single process, whose memory is the state.
   */
  async refresh(): Promise<void> {
    if (!this.opts.shared) return;
    const leading = (this.opts.leader ?? alwaysLeader).isLeader();
    if (leading) {
      await this.reloadSilences();
      return;
    }
    const state = await this.opts.stateStore.load({ outbox: false });
    // Became leader meanwhile: its own reload (with the outbox) owns the maps now.
    if ((this.opts.leader ?? alwaysLeader).isLeader()) return;
    this.active.clear();
    this.resolved.clear();
    for (const a of state.alerts) {
      if (a.state === 'resolved') this.resolved.set(a.id, a);
      else this.activeOf(a.rule).set(a.fingerprint, a);
    }
    this.replaceSilences(state.silences);
  }

  private async reloadSilences(): Promise<void> {
    this.replaceSilences(await this.opts.stateStore.silences());
  }

  private replaceSilences(list: readonly SilenceRecord[]): void {
    this.silences.clear();
    for (const s of list) this.silences.set(s.id, s);
  }

  /** Evaluates every rule each `intervalMs` (real time). */
  startTimer(intervalMs: number): void {
    this.timer = setInterval(() => void this.evaluate('all'), intervalMs);
    this.timer.unref();
  }

  private activeOf(rule: string): Map<string, AlertRecord> {
    let m = this.active.get(rule);
    if (!m) {
      m = new Map();
      this.active.set(rule, m);
    }
    return m;
  }

  /** Called by the hook stage once events are committed: evaluate the event-driven rules now. */
  onIngested(events: readonly HookEvent[]): void {
    if (events.length === 0 || this.stopped) return;
    // Only rules this batch can make true run now; clearing is time-based and left to the timer.
    this.trigger(this.triggeredRules(events));
  }

  /** Names of the rules a committed batch may have made true (what a follower tells the leader). */
  triggeredRules(events: readonly HookEvent[]): string[] {
    return this.opts.rules.filter((rule) => evaluatesOnIngest(rule) && ruleTriggeredBy(rule, events)).map((r) => r.name);
  }

  /** Evaluates these rules soon (coalesced): a local batch, or one committed on another replica. */
  trigger(ruleNames: readonly string[]): void {
    if (this.stopped) return;
    for (const name of ruleNames) if (this.opts.rules.some((r) => r.name === name)) this.ingestRules.add(name);
    if (this.ingestRules.size === 0 || this.ingestQueued) return;
    // Coalesced: batches arriving while an evaluation is queued share it.
    this.ingestQueued = true;
    this.chain = this.chain.then(() => {
      this.ingestQueued = false;
      return this.run('ingest');
    });
  }

  /** Runs an evaluation after any in progress; resolves when it is done (tests and the timer). */
  evaluate(scope: Scope = 'all'): Promise<void> {
    if (this.stopped) return this.chain;
    this.chain = this.chain.then(() => this.run(scope));
    return this.chain;
  }

  private async run(scope: Scope): Promise<void> {
    if (this.stopped || !(this.opts.leader ?? alwaysLeader).isLeader()) return;
    try {
      await this.evaluateOnce(scope);
    } catch (err) {
      this.opts.logger.error('alert evaluation failed', { err });
    }
  }

  private async evaluateOnce(scope: Scope): Promise<void> {
    // The fencing token this evaluation runs under: its writes are refused if the lease moved meanwhile.
    const epoch = this.opts.leader?.epoch?.();
    // A silence created on any replica mutes from the next evaluation on.
    if (this.opts.shared) await this.reloadSilences();
    const now = this.now();
    const changes: StateChanges = { upsert: [], remove: [], notifications: [] };
    const transitions: Transition[] = [];
    const triggered = this.ingestRules;
    if (scope === 'ingest') this.ingestRules = new Set();
    const rules = scope === 'notify' ? [] : this.opts.rules.filter((r) => scope === 'all' || triggered.has(r.name));
    for (const rule of rules) {
      let candidates;
      try {
        candidates = await evaluateRule(rule, { store: this.opts.store, now });
      } catch (err) {
        // Unknown is not "clear": a rule that cannot be evaluated keeps its alerts as they are.
        this.stats.ruleErrors++;
        this.opts.logger.warn('alert rule evaluation failed', { rule: rule.name, err });
        continue;
      }
      if (candidates.length > MAX_ALERTS_PER_RULE) {
        this.stats.droppedAlerts += candidates.length - MAX_ALERTS_PER_RULE;
        this.opts.logger.warn('alert rule over its alert limit; extra label sets dropped', { rule: rule.name, limit: MAX_ALERTS_PER_RULE, dropped: candidates.length - MAX_ALERTS_PER_RULE });
        candidates = candidates.slice(0, MAX_ALERTS_PER_RULE);
      }
      this.applyStep(stepRule(rule, this.activeOf(rule.name), candidates, now), changes, transitions);
    }
    if (scope === 'all') {
      // Alerts of rules no longer configured resolve instead of firing forever.
      for (const [name, map] of this.active) {
        if (!this.opts.rules.some((r) => r.name === name) && map.size > 0) this.applyStep(stepRule({ name, forMs: 0, keepFiringForMs: 0 }, map, [], now), changes, transitions);
      }
      const keep = this.opts.resolvedRetentionMs ?? DAY;
      for (const [id, s] of this.silences) if (s.endsAtMs < now - keep) this.silences.delete(id);
      for (const [id, a] of this.resolved) {
        if ((a.endsAtMs ?? now) < now - keep) {
          this.resolved.delete(id);
          changes.remove.push(id);
        }
      }
    }
    this.planNotifications(now, transitions, changes);
    try {
      await this.opts.stateStore.save(changes, epoch);
    } catch (err) {
      // Nothing is sent that is not saved: go back to the saved state; the next evaluation redoes the work.
      this.opts.logger.error('cannot save alert state; nothing notified, reloading the saved state', { err });
      await this.load(false);
      return;
    }
    for (const n of changes.notifications) this.opts.dispatcher.enqueue(n);
    // With for: 0 an alert goes pending -> firing in one evaluation; announce only where it ended up.
    const firedNow = new Set(transitions.filter((t) => t.to === 'firing').map((t) => t.alert));
    for (const t of transitions) if (!(t.to === 'pending' && firedNow.has(t.alert))) this.announce(t, now);
    if (scope === 'all') await this.opts.stateStore.prune(now - (this.opts.resolvedRetentionMs ?? DAY));
    this.stats.evaluations++;
    this.stats.lastEvaluationMs = now;
  }

  private applyStep(step: ReturnType<typeof stepRule>, changes: StateChanges, transitions: Transition[]): void {
    changes.upsert.push(...step.upsert);
    changes.remove.push(...step.remove);
    transitions.push(...step.transitions);
    for (const t of step.transitions) if (t.to === 'resolved') this.resolved.set(t.alert.id, t.alert);
  }

  private silencedBy(labels: Record<string, string>, now: number): string[] {
    const ids: string[] = [];
    for (const s of this.silences.values()) if (silenceState(s, now) === 'active' && silenceMatches(s, labels)) ids.push(s.id);
    return ids;
  }

  /** Firing alerts due a notification (new, or repeat_interval passed, not silenced) and resolutions of notified ones. */
  private planNotifications(now: number, transitions: readonly Transition[], changes: StateChanges): void {
    const receivers = this.opts.receivers;
    if (receivers.length === 0) return;
    const touched = new Set(changes.upsert);
    for (const map of this.active.values()) {
      for (const a of map.values()) {
        if (a.state !== 'firing') continue;
        if (a.lastNotifiedMs !== null && now - a.lastNotifiedMs < this.opts.repeatIntervalMs) continue;
        if (this.silencedBy(a.labels, now).length > 0) continue;
        a.notifySeq++;
        a.lastNotifiedMs = now;
        a.notifiedFiring = true;
        for (const r of receivers) changes.notifications.push(this.notification(a, r.name, 'firing', now));
        if (!touched.has(a)) {
          touched.add(a);
          changes.upsert.push(a);
        }
      }
    }
    for (const t of transitions) {
      const a = t.alert;
      if (t.to !== 'resolved' || !a.notifiedFiring || this.silencedBy(a.labels, now).length > 0) continue;
      a.notifySeq++;
      for (const r of receivers) if (r.sendResolved) changes.notifications.push(this.notification(a, r.name, 'resolved', now));
      if (!touched.has(a)) {
        touched.add(a);
        changes.upsert.push(a);
      }
    }
    this.stats.notificationsCreated += changes.notifications.length;
  }

  private notification(a: AlertRecord, receiver: string, status: 'firing' | 'resolved', now: number): Notification {
    // Derived from the alert episode, the transition and the receiver: stable across retries and restarts.
    const webhookId = 'msg_' + createHash('sha256').update(`${a.id}|${status}|${a.notifySeq}|${receiver}`).digest('base64url').slice(0, 27);
    return {
      webhookId,
      receiver,
      status,
      createdAtMs: now,
      alert: {
        id: a.id, fingerprint: a.fingerprint, rule: a.rule, labels: a.labels, annotations: a.annotations, hookId: a.hookId,
        startsAt: new Date(a.startsAtMs ?? a.activeAtMs).toISOString(),
        endsAt: a.endsAtMs === null ? null : new Date(a.endsAtMs).toISOString(),
      },
    };
  }

  private announce(t: Transition, now: number): void {
    const a = t.alert;
    if (t.to === 'dropped') {
      this.opts.logger.debug('pending alert cleared', { alert: a.id, rule: a.rule });
      return;
    }
    if (t.to !== 'pending') this.opts.logger.info(`alert ${t.to}`, { alert: a.id, rule: a.rule, labels: a.labels });
    try {
      this.opts.events.emit({ id: a.id, fingerprint: a.fingerprint, rule: a.rule, state: t.to, labels: a.labels, annotations: a.annotations, atMs: now });
    } catch (err) {
      this.opts.logger.warn('alert event export failed', { err });
    }
  }

  /** The API view of one alert. */
  summary(a: AlertRecord): AlertSummary {
    const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
    return {
      id: a.id, fingerprint: a.fingerprint, rule: a.rule, state: a.state, labels: a.labels, annotations: a.annotations,
      activeAt: new Date(a.activeAtMs).toISOString(), startsAt: iso(a.startsAtMs), endsAt: iso(a.endsAtMs), lastNotifiedAt: iso(a.lastNotifiedMs),
      silencedBy: a.state === 'resolved' ? [] : this.silencedBy(a.labels, this.now()), hookId: a.hookId,
    };
  }

  /** Names of the configured receivers (names only: never a URL, header or secret). */
  receiverNames(): string[] {
    return this.opts.receivers.map((r) => r.name);
  }

  /** Firing, then pending, then recently resolved alerts (the newest MAX_RESOLVED_LISTED of those). */
  alerts(): AlertSummary[] {
    const order = { firing: 0, pending: 1, resolved: 2 } as const;
    const resolved = [...this.resolved.values()].sort((a, b) => (b.endsAtMs ?? 0) - (a.endsAtMs ?? 0)).slice(0, MAX_RESOLVED_LISTED);
    const all: AlertRecord[] = [...[...this.active.values()].flatMap((m) => [...m.values()]), ...resolved];
    return all
      .sort((a, b) => order[a.state] - order[b.state] || (b.startsAtMs ?? b.activeAtMs) - (a.startsAtMs ?? a.activeAtMs) || a.id.localeCompare(b.id))
      .map((a) => this.summary(a));
  }

  /** One alert by id (active or recently resolved). */
  alert(id: string): AlertSummary | undefined {
    const found = this.resolved.get(id) ?? [...this.active.values()].flatMap((m) => [...m.values()]).find((a) => a.id === id);
    return found ? this.summary(found) : undefined;
  }

  /** Delivery attempts of one alert, oldest first. */
  async attempts(id: string): Promise<DeliveryAttempt[]> {
    return (await this.opts.stateStore.attempts(id)).map((a) => ({
      receiver: a.receiver, webhookId: a.webhookId, attempt: a.attempt, at: new Date(a.atMs).toISOString(), status: a.status,
      outcome: a.outcome, httpStatus: a.httpStatus, error: a.error, durationMs: a.durationMs,
    }));
  }

  listSilences(): Silence[] {
    const now = this.now();
    return [...this.silences.values()].sort((a, b) => b.createdAtMs - a.createdAtMs).map((s) => toSilence(s, now));
  }

  async addSilence(s: SilenceRecord): Promise<Silence> {
    await this.opts.stateStore.putSilence(s);
    this.silences.set(s.id, s);
    return toSilence(s, this.now());
  }

  /** Expires a silence now (Alertmanager's DELETE); its alerts are notified at once if still firing. */
  async expireSilence(id: string): Promise<Silence | undefined> {
    const s = this.silences.get(id);
    if (!s) return undefined;
    const now = this.now();
    if (s.endsAtMs > now) {
      const expired = { ...s, endsAtMs: now, startsAtMs: Math.min(s.startsAtMs, now) };
      await this.opts.stateStore.putSilence(expired);
      this.silences.set(id, expired);
      void this.evaluate('notify');
    }
    return toSilence(this.silences.get(id) as SilenceRecord, now);
  }

  /** Stops the timer and waits for the evaluation in progress. Safe twice. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.chain;
  }
}
