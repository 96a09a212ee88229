/**
 * Delivers notifications off the ingest path: a bounded in-memory queue per receiver, a few deliveries in flight
 * per receiver (a hanging receiver delays only itself), one alert's notifications in order, every attempt
 * reported. The outbox in the state store is the durable copy; this queue is only the work list.
 */
import type { ClientTlsCredentials } from '../net/tls.ts';
import type { Logger } from '../telemetry/logger.ts';
import { ThrottledLine } from '../telemetry/throttled-line.ts';
import { alertmanagerRenderer } from './alertmanager.ts';
import { alertmanagerApiRenderer } from './alertmanager-api.ts';
import type { BodyRenderer, LinkContext, Notification, NotificationOutcome, ReceiverConfig } from './model.ts';
import { signHeaders } from './signing.ts';
import { slackRenderer } from './slack.ts';
import { failureReason, NOTIFICATION_FAILURE_REASONS, sendWithRetry, TLS_FAILURE_PREFIX, type AttemptResult, type NotificationFailureReason, type OutgoingRequest, type SendResult } from './transport.ts';

export interface DispatcherOptions {
  receivers: readonly ReceiverConfig[];
  links: LinkContext;
  logger: Logger;
  now?: () => number;
  /** How long after its creation a notification may still be attempted. */
  deadlineMs: number;
  /** Notifications waiting per receiver; more are refused (recorded as failed) instead of growing memory. */
  maxQueue: number;
  concurrencyPerReceiver?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  random?: () => number;
  /** Records an attempt; a promise that resolves once it is recorded (the outcome is recorded after it). */
  onAttempt?: (n: Notification, a: AttemptResult, token: number | null) => void | Promise<void>;
  /** The outcome of a notification; a promise that resolves once it is recorded (the outbox marks it done). */
  onFinished?: (n: Notification, outcome: NotificationOutcome, token: number | null) => void | Promise<void>;
  /** Replicas: only the current leader delivers, and only while its lease (the fencing token) is unchanged. */
  fence?: DeliveryFence;
  /** The TLS files of the receivers with `tls`, by name (transport.ts: openReceiverTls). */
  tls?: ReadonlyMap<string, ClientTlsCredentials>;
  /** alerting.externalLabels: added to the alerts of `alertmanager` and `webhook` receivers. Absent: none. */
  externalLabels?: Readonly<Record<string, string>>;
  /**
   * Resolves when an attempt of `n` may go out, awaited before each one (alerting/index.ts: a notification to an
   * Alertmanager receiver follows the batch of the renewal in flight to it that carries its alert). Absent: at once.
   */
  ready?: (n: Notification) => Promise<void>;
}

/**
 * The leader lease as the dispatcher sees it. A notification is queued with the token current at enqueue; every
 * attempt first checks that the token is still this replica's and confirms it with the shared store, so a
 * leader that was paused past its lease never sends again what its successor now owns.
 */
export interface DeliveryFence {
  /** This replica's fencing token while it leads, else null. */
  token(): number | null;
  /**
   * True when the shared store still has `token` as the current lease and the notification undelivered; rejects
   * when the store cannot be asked, which is no answer: the attempt fails and is retried with the backoff.
   */
  confirm(token: number, n: Notification): Promise<boolean>;
}

/** Counters for /metrics and tests. */
export interface DispatcherStats {
  enqueued: number;
  delivered: number;
  failed: number;
  dropped: number;
  /** Notifications dropped because their receiver is no longer configured (left in the outbox by a restart or a reload). */
  discarded: number;
  attempts: number;
  /** Attempts whose TLS handshake with the receiver failed (a CA that does not vouch for it, a refused client certificate). */
  tlsFailures: number;
  /** The notifications failed, by the reason of their last attempt. */
  failedByReason: Record<NotificationFailureReason, number>;
}

interface Lane {
  receiver: ReceiverConfig;
  renderer: BodyRenderer;
  queue: Notification[];
  inFlight: Set<string>;
  /** Aborted when a reload removes the receiver: its deliveries in flight stop, and are dropped. */
  removed: AbortController;
}

/** Builds the request of one attempt: rendered body, configured headers, Standard Webhooks signature. */
export function buildRequest(receiver: ReceiverConfig, renderer: BodyRenderer, n: Notification): (attempt: number) => OutgoingRequest {
  return () => {
    // Rendered per attempt: an Alertmanager alert's endsAt is counted from the attempt that carries it.
    const body = renderer.render(n);
    const headers: Record<string, string> = { ...receiver.headers, 'webhook-id': n.webhookId };
    // The signature timestamp is the receiver's wall clock's business (it bounds skew), so it is always real time.
    if (receiver.signingSecret) Object.assign(headers, signHeaders(receiver.signingSecret, n.webhookId, Math.floor(Date.now() / 1000), body));
    return { body, headers };
  };
}

/** The renderer for a receiver's type; `externalLabels` go to the Alertmanager API and the webhook body. */
export function rendererFor(receiver: ReceiverConfig, links: LinkContext, now: () => number = Date.now, externalLabels: Readonly<Record<string, string>> = {}): BodyRenderer {
  if (receiver.type === 'alertmanager') return alertmanagerApiRenderer(links, receiver, now, externalLabels);
  return receiver.type === 'slack' ? slackRenderer(links) : alertmanagerRenderer(links, externalLabels);
}

/**
 * Test notifications (POST /api/v1/receivers/:name/test) in flight at once on a replica, whatever the receivers:
 * each holds an outgoing connection for up to its receiver's timeout (at most 5 minutes).
 */
export const MAX_TEST_SENDS = 4;

/** A test notification not sent: one to the receiver (`receiver`) or MAX_TEST_SENDS in all (`all`) are running. */
export interface TestBusy {
  outcome: 'busy';
  scope: 'receiver' | 'all';
  /** When the running test (the first of them to end, for `all`) has ended at the latest: its receiver's timeout. */
  retryAfterMs: number;
}

/** How often, at most, the failures to record notification outcomes are logged. */
const OUTCOME_WRITE_LOG_INTERVAL_MS = 60_000;

/** Why a notification whose wait to go out (DispatcherOptions.ready) outlasted its delivery deadline was not sent. */
const DEADLINE_PASSED_WAITING = 'gave up: the delivery deadline passed while the attempt waited to go out';

export class Dispatcher {
  readonly stats: DispatcherStats = { enqueued: 0, delivered: 0, failed: 0, dropped: 0, discarded: 0, attempts: 0, tlsFailures: 0, failedByReason: Object.fromEntries(NOTIFICATION_FAILURE_REASONS.map((r) => [r, 0])) as DispatcherStats['failedByReason'] };
  private opts: DispatcherOptions;
  private readonly lanes = new Map<string, Lane>();
  /** Lanes of receivers a reload removed, until their deliveries in flight have stopped. */
  private readonly retired = new Set<Lane>();
  private abort = new AbortController();
  /** The fencing token each queued or in-flight notification was enqueued under. */
  private readonly tokens = new WeakMap<Notification, number | null>();
  /**
   * Notifications queued or in flight by webhook-id, until their outcome is recorded. The outbox can hand out one
   * that is already here (a leader that took its lease back at the same epoch resumes it while the evaluation
   * that wrote it is delivering it): that copy is the same notification and is not sent again. One handed out under
   * another token (the lease moved away and back, its loss unannounced) replaces it: the fence stops the old copy.
   */
  private readonly owned = new Map<string, Notification>();
  private readonly running = new Set<Promise<void>>();
  /** Receivers no longer configured whose left-over notifications were dropped: logged once each. */
  private readonly discardedFor = new Set<string>();
  private idleWaiters: (() => void)[] = [];
  private stopped = false;
  /**
   * A state store out of reach fails the record of every outcome: the first is logged at once, then at most a line
   * a minute with how many since and the last reason.
   */
  private outcomeWriteError: unknown;
  private readonly outcomeWriteFailures: ThrottledLine;
  /** Test notifications in flight, by receiver name: when each must have ended (started + the receiver's timeout). */
  private readonly tests = new Map<string, number>();

  constructor(opts: DispatcherOptions) {
    this.opts = opts;
    this.outcomeWriteFailures = new ThrottledLine(OUTCOME_WRITE_LOG_INTERVAL_MS, opts.now ?? Date.now, (notifications) => this.opts.logger.warn('cannot record notification outcome', { notifications, err: this.outcomeWriteError }));
    for (const r of opts.receivers) this.lanes.set(r.name, { receiver: r, renderer: rendererFor(r, opts.links, opts.now, opts.externalLabels), queue: [], inFlight: new Set(), removed: new AbortController() });
  }

  /**
   * The receivers and delivery settings of a reloaded configuration, for notifications queued from now on. A
   * receiver still configured keeps its queue, sent with its new settings. What one no longer configured holds is
   * dropped, as Alertmanager drops what was pending for it: its queue at once, its deliveries in flight (retries
   * included) as soon as their attempt in progress ends. Every attempt from now on carries the external labels given.
   */
  reconfigure(next: Pick<DispatcherOptions, 'receivers' | 'tls' | 'deadlineMs' | 'maxQueue' | 'baseDelayMs' | 'maxDelayMs' | 'externalLabels'>): void {
    this.opts = { ...this.opts, ...next };
    const names = new Set(next.receivers.map((r) => r.name));
    // A receiver configured again is logged again if it is removed again.
    for (const name of names) this.discardedFor.delete(name);
    for (const [name, lane] of this.lanes) {
      if (names.has(name)) continue;
      this.lanes.delete(name);
      lane.removed.abort();
      for (const n of lane.queue.splice(0)) {
        if (this.owned.get(n.webhookId) === n) this.owned.delete(n.webhookId);
        this.discard(n, this.tokens.get(n) ?? null);
      }
      if (lane.inFlight.size > 0) this.retired.add(lane);
    }
    for (const r of next.receivers) {
      const lane = this.lanes.get(r.name);
      const renderer = rendererFor(r, this.opts.links, this.opts.now, this.opts.externalLabels);
      if (lane) Object.assign(lane, { receiver: r, renderer });
      else this.lanes.set(r.name, { receiver: r, renderer, queue: [], inFlight: new Set(), removed: new AbortController() });
    }
  }

  /** Every lane with work: the configured receivers' and the removed ones whose deliveries are stopping. */
  private allLanes(): Lane[] {
    return [...this.lanes.values(), ...this.retired];
  }

  /** Names of the configured receivers. */
  receiverNames(): string[] {
    return [...this.lanes.keys()];
  }

  /**
   * Queues a notification; false when its receiver's queue is full (recorded as failed) or its receiver is no
   * longer configured (recorded as dropped).
   */
  enqueue(n: Notification): boolean {
    if (this.stopped) return false;
    const token = this.opts.fence ? this.opts.fence.token() : null;
    // Not the leader (any more): the notification stays in the shared outbox for the replica that leads.
    if (this.opts.fence && token === null) return false;
    // A copy queued under another token is the fence's to refuse: this one is the leadership's that holds it now.
    const held = this.owned.get(n.webhookId);
    if (held && this.tokens.get(held) === token) return true;
    const lane = this.lanes.get(n.receiver);
    if (!lane) {
      this.discard(n, token);
      return false;
    }
    this.tokens.set(n, token);
    if (lane.queue.length >= this.opts.maxQueue) {
      this.stats.dropped++;
      this.opts.logger.error('notification queue full; notification dropped', { receiver: n.receiver, alert: n.alert.id, status: n.status });
      const recorded = this.opts.onAttempt?.(n, { attempt: 0, atMs: (this.opts.now ?? Date.now)(), outcome: 'failed', httpStatus: null, error: `queue full (${this.opts.maxQueue})`, durationMs: 0 }, token);
      void Promise.allSettled([recorded]).then(() => this.opts.onFinished?.(n, 'failed', token)).catch((err: unknown) => this.outcomeNotRecorded(err));
      return false;
    }
    this.stats.enqueued++;
    this.owned.set(n.webhookId, n);
    lane.queue.push(n);
    this.pump(lane);
    return true;
  }

  /**
   * A notification for a receiver no longer configured (queued or in flight when a reload removed it, resumed from
   * the outbox after a restart or a leadership change, or planned just before the reload): dropped, as Alertmanager
   * drops what was pending for a receiver its new configuration no longer has, and marked so in the outbox, which
   * no longer hands it out.
   */
  private discard(n: Notification, token: number | null): void {
    this.stats.discarded++;
    if (!this.discardedFor.has(n.receiver)) {
      this.discardedFor.add(n.receiver);
      this.opts.logger.warn('receiver no longer configured; its undelivered notifications are dropped', { receiver: n.receiver });
    }
    void Promise.resolve(this.opts.onFinished?.(n, 'dropped', token)).catch((err: unknown) => this.outcomeNotRecorded(err));
  }

  private pump(lane: Lane): void {
    const limit = this.opts.concurrencyPerReceiver ?? 4;
    while (!this.stopped && lane.inFlight.size < limit) {
      // One alert's notifications go out in order (firing before its resolution); other alerts pass it.
      const index = lane.queue.findIndex((n) => !lane.inFlight.has(n.alert.fingerprint));
      if (index < 0) break;
      const [n] = lane.queue.splice(index, 1) as [Notification];
      lane.inFlight.add(n.alert.fingerprint);
      const p = this.deliver(lane, n).finally(() => {
        if (this.owned.get(n.webhookId) === n) this.owned.delete(n.webhookId);
        lane.inFlight.delete(n.alert.fingerprint);
        this.running.delete(p);
        this.pump(lane);
        if (lane.queue.length === 0 && lane.inFlight.size === 0) this.retired.delete(lane);
        this.checkIdle();
      });
      this.running.add(p);
    }
  }

  private async deliver(lane: Lane, n: Notification): Promise<void> {
    const now = this.opts.now ?? Date.now;
    const token = this.tokens.get(n) ?? null;
    const fence = this.opts.fence;
    const ready = this.opts.ready;
    // The lease by this replica's clock, the store's word, then the clock again: a replica paused while the store's
    // answer was on its way (SIGSTOP, a VM freeze) finds its lease run out, and another replica may hold it by now.
    // Checked once the attempt may go out: the lease may have moved while it waited.
    // A store that does not answer (PostgreSQL restarting, a pooled connection dropped) said nothing of the lease: the
    // attempt fails and is retried with the backoff, as one the receiver did not answer, until the deadline. Aborted
    // only by the store's `no` or the lease gone by this replica's clock, so an open notification is never left
    // behind in the outbox, unsent until the next leadership.
    const leads = fence ? async (): Promise<boolean> => token !== null && fence.token() === token && (await fence.confirm(token, n)) && fence.token() === token : undefined;
    const deadlineMs = n.createdAtMs + this.opts.deadlineMs;
    const signal = AbortSignal.any([this.abort.signal, lane.removed.signal]);
    // Set when the wait carried an attempt past the delivery deadline: given up on then, not sent. One already past
    // it when it became due (resumed from the outbox after a restart) has its attempt, as without a wait.
    let expired = false;
    const proceed = ready ? async (): Promise<boolean> => {
      const due = now() <= deadlineMs;
      await ready(n);
      if ((leads && !(await leads())) || signal.aborted) return false;
      expired = due && now() > deadlineMs;
      return !expired;
    } : leads;
    // The attempts' records, written before the outcome's: once the outbox row is done (and later pruned), they
    // are what says the receiver had the notification.
    const recording: (void | Promise<void>)[] = [];
    // Each attempt with its receiver as configured then: a reload that changed its url, headers, signing secret or
    // tls (a token rotated, a receiver moved) applies from the next attempt of a notification being retried.
    const build = (attempt: number): OutgoingRequest => {
      const r = lane.receiver;
      return { ...buildRequest(r, lane.renderer, n)(attempt), target: { url: r.url, timeoutMs: r.timeoutMs, tls: this.opts.tls?.get(r.name) ?? null } };
    };
    let result: SendResult;
    try {
      result = await sendWithRetry(build, {
        url: lane.receiver.url,
        timeoutMs: lane.receiver.timeoutMs,
        deadlineMs,
        signal,
        now,
        tls: this.opts.tls?.get(lane.receiver.name) ?? null,
        ...(proceed ? { proceed } : {}),
        ...(this.opts.baseDelayMs !== undefined ? { baseDelayMs: this.opts.baseDelayMs } : {}),
        ...(this.opts.maxDelayMs !== undefined ? { maxDelayMs: this.opts.maxDelayMs } : {}),
        ...(this.opts.random ? { random: this.opts.random } : {}),
        onAttempt: (a) => {
          this.stats.attempts++;
          if (a.error?.startsWith(TLS_FAILURE_PREFIX)) this.stats.tlsFailures++;
          recording.push(this.opts.onAttempt?.(n, a, token));
        },
      });
    } catch (err) {
      this.opts.logger.error('notification delivery crashed', { receiver: n.receiver, err });
      result = { outcome: 'failed', attempts: 0, httpStatus: null, error: 'internal error' };
    }
    if (expired) {
      // Recorded as a deadline that passed between attempts is: an attempt row saying why, then the outcome.
      result = { ...result, outcome: 'failed', error: result.error === null ? DEADLINE_PASSED_WAITING : `${result.error}; ${DEADLINE_PASSED_WAITING}` };
      recording.push(this.opts.onAttempt?.(n, { attempt: 0, atMs: now(), outcome: 'failed', httpStatus: null, error: DEADLINE_PASSED_WAITING, durationMs: 0 }, token));
    }
    await Promise.allSettled(recording);
    if (result.outcome === 'aborted') {
      // Its receiver was removed: dropped (while this replica still leads under the token it was queued with).
      if (lane.removed.signal.aborted && !this.stopped && (!fence || fence.token() === token)) this.discard(n, token);
      // Shutdown, or the lease moved: the outbox keeps it for the next start or the next leader.
      return;
    }
    if (result.outcome === 'delivered') this.stats.delivered++;
    else {
      this.stats.failed++;
      this.stats.failedByReason[failureReason(result)]++;
      this.opts.logger.warn('notification not delivered', { receiver: n.receiver, alert: n.alert.id, status: n.status, attempts: result.attempts, httpStatus: result.httpStatus, error: result.error });
    }
    // Settled once the outcome is recorded: the outbox no longer hands it out, and the alert's next notification
    // (its resolution) follows it.
    try {
      await this.opts.onFinished?.(n, result.outcome, token);
    } catch (err) {
      this.outcomeNotRecorded(err);
    }
  }

  /**
   * This replica stopped leading: abort deliveries in flight and forget the queue. Nothing is marked finished;
   * the shared outbox keeps every undelivered notification for the new leader, which resumes it (same webhook-id).
   */
  suspend(): void {
    this.abort.abort();
    this.abort = new AbortController();
    for (const lane of this.allLanes()) lane.queue.length = 0;
    this.retired.clear();
    // Nothing here is this replica's any more: what a later leadership resumes from the outbox is sent afresh.
    this.owned.clear();
    this.checkIdle();
  }

  /**
   * One attempt of a test notification, outside the queue and the outbox (POST /api/v1/receivers/:name/test). At
   * most one per receiver at a time and MAX_TEST_SENDS in all: past that, `busy` at once, nothing sent (a script or
   * repeated clicks cannot pile up connections to a receiver that is slow to answer, each held for its timeout).
   * A `busy` says when the running one ends at the latest: its start plus the receiver's timeout, which bounds the
   * reading of the answer's body too (the attempt's timeout signal cancels a body still draining then).
   */
  async sendTest(n: Notification): Promise<SendResult | TestBusy> {
    const lane = this.lanes.get(n.receiver);
    if (!lane) return { outcome: 'failed', attempts: 0, httpStatus: null, error: 'unknown receiver' };
    const now = this.opts.now ?? Date.now;
    const t = now();
    const running = this.tests.get(n.receiver);
    if (running !== undefined) return { outcome: 'busy', scope: 'receiver', retryAfterMs: Math.max(0, running - t) };
    if (this.tests.size >= MAX_TEST_SENDS) return { outcome: 'busy', scope: 'all', retryAfterMs: Math.max(0, Math.min(...this.tests.values()) - t) };
    this.tests.set(n.receiver, t + lane.receiver.timeoutMs);
    try {
      return await sendWithRetry(buildRequest(lane.receiver, lane.renderer, n), { url: lane.receiver.url, timeoutMs: lane.receiver.timeoutMs, deadlineMs: t + lane.receiver.timeoutMs, maxAttempts: 1, signal: this.abort.signal, now, tls: this.opts.tls?.get(lane.receiver.name) ?? null });
    } finally {
      this.tests.delete(n.receiver);
    }
  }

  private checkIdle(): void {
    if (this.running.size > 0) return;
    for (const lane of this.allLanes()) if (lane.queue.length > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /** Resolves once nothing is queued or in flight. */
  idle(): Promise<void> {
    return new Promise((resolve) => {
      this.idleWaiters.push(resolve);
      this.checkIdle();
    });
  }

  /**
   * Aborts deliveries in flight (they stay in the outbox) and waits for them to settle; what the log of outcomes
   * not recorded held back is written then. Safe twice.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await Promise.allSettled([...this.running]);
    for (const lane of this.allLanes()) lane.queue.length = 0;
    this.retired.clear();
    this.owned.clear();
    this.checkIdle();
    this.outcomeWriteFailures.flush();
  }

  /** The outcome of a notification could not be recorded (onFinished rejected): the outbox keeps it open. */
  private outcomeNotRecorded(err: unknown): void {
    this.outcomeWriteError = err;
    this.outcomeWriteFailures.note();
  }
}
