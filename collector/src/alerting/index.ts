/**
 * Alerting, built from config: rule evaluation -> silences -> alert state -> notifiers, with a read model for
 * the API. `startAlerting` loads persisted state, resumes undelivered notifications and starts the evaluation
 * timer; the caller registers the engine as an ingest listener and mounts the API router on its read model and
 * silences.
 */
import { alertLabelNames, type AlertingConfig } from './settings.ts';
import type { AlertLabelNames } from './silences.ts';
import { AlertmanagerRefresher, RESOLVED_RESEND_MS } from '../notify/alertmanager-api.ts';
import { Dispatcher } from '../notify/dispatcher.ts';
import type { LinkContext } from '../notify/model.ts';
import type { ClientTlsCredentials } from '../net/tls.ts';
import { noAlertEvents, openAlertEventTls, OtlpAlertEmitter, type AlertEventSink } from '../notify/otlp.ts';
import { closeTlsDispatchers, openReceiverTls } from '../notify/transport.ts';
import type { Store } from '../store/store.ts';
import type { Logger } from '../telemetry/logger.ts';
import { unboundedStep, type ShutdownStep } from '../shutdown.ts';
import { fullJitterBackoff, type BackoffPolicy } from '../net/backoff.ts';
import { ThrottledLine } from '../telemetry/throttled-line.ts';
import { AlertEngine } from './engine.ts';
import { SqliteAlertStateStore } from './state/sqlite.ts';
import type { AlertStateStore, LeaderElector } from './state/store.ts';

export interface AlertingOptions {
  config: AlertingConfig;
  /** The database the state lives beside (config.db). */
  db: string;
  store: Store;
  logger: Logger;
  now?: () => number;
  /** Replaces the SQLite state store: the PostgreSQL one (state/postgres.ts) when replicas share a database, or tests. */
  stateStore?: AlertStateStore;
  /**
   * The receivers' TLS files, opened before anything else starts (service.ts); started and stopped with
   * alerting. Default: opened here.
   */
  receiverTls?: Map<string, ClientTlsCredentials>;
  /** alerting.otlp.tls.*, opened with the receivers' (notify/otlp.ts: openAlertEventTls). Default: opened here. */
  eventTls?: ClientTlsCredentials;
  /** Replaces the OTLP emitter (tests). */
  events?: AlertEventSink;
  leader?: LeaderElector;
  /** The state store is shared by replicas (see AlertEngineOptions.shared). */
  shared?: boolean;
  /** Random source for backoff jitter (tests). */
  random?: () => number;
  serviceVersion?: string;
  /** Skip the timer (tests drive evaluation on a controlled clock). */
  timer?: boolean;
  /** How long an evaluation runs before it gives the event loop a turn (AlertEngineOptions.sliceMs; tests). */
  evaluationSliceMs?: number;
  /** The least time between the starts of two evaluations on ingest (AlertEngineOptions.ingestSpacingMs; tests). */
  ingestSpacingMs?: number;
  /**
   * Where notifications link to, read when each is rendered: the service's (alerting.externalUrl, else the
   * HTTP port's URL once it is bound). Default: alerting.externalUrl as configured.
   */
  links?: LinkContext;
}

export interface Alerting {
  engine: AlertEngine;
  dispatcher: Dispatcher;
  /** Renews the firing alerts at Alertmanager receivers (its counts are on /metrics). */
  refresher: AlertmanagerRefresher;
  /** The export of alert transitions to alerting.otlp.endpoint (its counts are on /metrics). */
  events: AlertEventSink;
  /**
   * Stops evaluation, aborts deliveries in flight (kept in the outbox), closes the receivers' TLS connections,
   * flushes alert events, closes state. Safe twice. The evaluation and deliveries in progress wait on the store:
   * each runs as a `step` (service.ts bounds them on a database server; unbounded by default). The flush of alert
   * events waits on alerting.otlp.endpoint: it runs as an `exportStep` (service.ts bounds it on any store), cut
   * off past its bound.
   */
  stop(step?: ShutdownStep, exportStep?: ShutdownStep): Promise<void>;
  /**
   * Applies a reloaded configuration's rules, receivers, intervals and delivery settings at once
   * (engine.reconfigure); resolves once the evaluation it queues is done. The receivers' TLS files are opened
   * first: one that cannot be used throws ConfigError naming its setting, and nothing has changed.
   * alerting.externalUrl and alerting.otlp.* are kept as started (they need a restart).
   */
  reconfigure(next: AlertingConfig): Promise<void>;
  /** The label names alerts can carry with the rules configured now, and alerting.externalLabels' (silence warnings). */
  labelNames(): AlertLabelNames;
}

export async function startAlerting(opts: AlertingOptions): Promise<Alerting> {
  const { config, logger } = opts;
  const now = opts.now ?? Date.now;
  // Before anything opens: a CA, certificate or key (a receiver's, the alert events') that cannot be used stops the start, naming its setting.
  let tls = opts.receiverTls ?? openReceiverTls(config.receivers, logger, opts.now);
  let receivers = config.receivers;
  /** The rules and external labels as configured now, a reload's once it applies them. */
  let labelled: Pick<AlertingConfig, 'rules' | 'externalLabels'> = config;
  /** TLS files of receivers a reload removed or changed: their connections close when alerting stops. */
  const retiredTls: ClientTlsCredentials[] = [];
  const eventTls = opts.eventTls ?? openAlertEventTls(config.otlp, logger, opts.now);
  const stateStore: AlertStateStore = opts.stateStore ?? new SqliteAlertStateStore(opts.db);
  const events = opts.events ?? (config.otlp.endpoint
    ? new OtlpAlertEmitter({ endpoint: config.otlp.endpoint, headers: config.otlp.headers, serviceVersion: opts.serviceVersion ?? '0.1.0', logger, ...(opts.now ? { now: opts.now } : {}), ...(eventTls ? { tls: eventTls } : {}) })
    : noAlertEvents);
  const leader = opts.leader;
  const links = opts.links ?? { externalUrl: config.externalUrl };
  const random = opts.random ?? Math.random;
  const confirm = stateStore.confirmDelivery?.bind(stateStore);
  // Replicas: deliveries are fenced by the lease (checked locally, then confirmed with the store, before each attempt).
  const fence = leader?.epoch && confirm ? { token: () => leader.epoch?.() ?? null, confirm: (token: number, n: { webhookId: string }) => confirm(token, n.webhookId) } : undefined;
  // Alertmanager receivers: firing alerts are pushed again every resend interval, as Prometheus does (started below,
  // once the engine has loaded them).
  const refresher: AlertmanagerRefresher = new AlertmanagerRefresher({
    receivers: config.receivers, links, alerts: () => engine.readModel.firingAndResolvedSince(now() - RESOLVED_RESEND_MS), logger, now, tls, externalLabels: config.externalLabels,
    active: () => (leader ? leader.isLeader() : true) && !engine.isStale,
  });
  // A state store out of reach fails the record of every attempt: the first is logged at once, then at most a line
  // a minute with how many since and the last reason.
  let attemptWriteError: unknown;
  const attemptWriteFailures = new ThrottledLine(ATTEMPT_WRITE_LOG_INTERVAL_MS, now, (attempts) => logger.warn('cannot record delivery attempt', { attempts, err: attemptWriteError }));
  // Set by stop(); declared before the dispatcher, whose outcome writes stop retrying once it is.
  let stopping: Promise<void> | undefined;
  // Filled in below: the dispatcher reports into the state store the engine owns.
  const dispatcher = new Dispatcher({
    receivers: config.receivers,
    links,
    externalLabels: config.externalLabels,
    logger,
    now,
    deadlineMs: config.delivery.deadlineMs,
    maxQueue: config.delivery.maxQueue,
    baseDelayMs: config.delivery.initialBackoffMs,
    maxDelayMs: config.delivery.maxBackoffMs,
    ...(opts.random ? { random: opts.random } : {}),
    ...(fence ? { fence } : {}),
    tls,
    // A notification reaches an Alertmanager after the batch of the renewal in flight to it that carries its alert
    // (its label set); one of an alert that renewal does not carry goes at once. A resolution: that batch, built
    // while the alert still fired and taken after it, would fire the alert there again. A firing: that batch,
    // carrying the previous episode's resolution under the same labels, would resolve the new one there
    // (Alertmanager replaces an alert by one whose time does not overlap it).
    ready: (n) => refresher.settled(n),
    // Awaited by the dispatcher before it records the notification's outcome.
    onAttempt: (n, a, token) => stateStore.addAttempt({ alertId: n.alert.id, receiver: n.receiver, webhookId: n.webhookId, status: n.status, ...a }, fence ? token : undefined).catch((err: unknown) => {
      attemptWriteError = err;
      attemptWriteFailures.note();
    }),
    onFinished: (n, outcome, token) => {
      const at = now();
      if (outcome === 'delivered' && n.status === 'firing') void engine.noteDelivered(n.alert.id, n.receiver, at);
      // Given up on: its receiver gets it again a group_interval later, as in Alertmanager (the alert if it still
      // fires, its resolution if it has not fired again); the outbox keeps when, for a restart or the next leader.
      if (outcome === 'failed') engine.noteUndelivered(n, at);
      // Awaited by the dispatcher: until the outbox marks it done, a resumed copy of it is not sent again.
      const record = (): Promise<void> => stateStore.finishNotification(n.webhookId, outcome, fence ? token : undefined, at);
      // A delivery is tried again through a blip: left open, the next leader would send it again, after whatever
      // followed it. Other outcomes are a leader's decision, fenced: a refused one is not retried. Not once alerting
      // is stopping: retries of a store out of reach would hold the stop (the outbox keeps the delivery open). A
      // record that still fails is the dispatcher's to log (at most a line a minute through an outage).
      return outcome === 'delivered' ? withRetries(record, random, () => stopping !== undefined) : record();
    },
  });
  const engine = new AlertEngine({
    store: opts.store,
    stateStore,
    rules: config.rules,
    receivers: config.receivers,
    dispatcher,
    events,
    links,
    logger,
    now,
    repeatIntervalMs: config.repeatIntervalMs,
    evaluationIntervalMs: config.evaluationIntervalMs,
    ...(opts.leader ? { leader: opts.leader } : {}),
    ...(opts.shared ? { shared: true } : {}),
    ...(opts.evaluationSliceMs === undefined ? {} : { sliceMs: opts.evaluationSliceMs }),
    ...(opts.ingestSpacingMs === undefined ? {} : { ingestSpacingMs: opts.ingestSpacingMs }),
  });
  try {
    await engine.start();
  } catch (err) {
    await stateStore.close();
    throw err;
  }
  if (opts.timer !== false) {
    engine.startTimer(config.evaluationIntervalMs);
    refresher.start();
  }
  // A rotated CA or client certificate of a receiver is used for its next notification.
  for (const credentials of tls.values()) credentials.start();
  eventTls?.start();
  // A first evaluation at start: time passed while hookwatch was down (resolutions, repeats).
  void engine.evaluate('all');
  logger.info('alerting started', { rules: config.rules.map((r) => r.name), receivers: config.receivers.map((r) => `${r.name} (${r.type})`), otlp: config.otlp.endpoint ? 'on' : 'off' });

  return {
    engine,
    dispatcher,
    refresher,
    events,
    labelNames: () => ({ carried: alertLabelNames(labelled.rules), external: Object.keys(labelled.externalLabels) }),
    reconfigure(next) {
      // A receiver whose tls is unchanged keeps its credentials (and connections); the others' files are read now.
      const unchanged = (r: (typeof next.receivers)[number]): boolean => receivers.some((o) => o.name === r.name && JSON.stringify(o.tls) === JSON.stringify(r.tls));
      const opened = openReceiverTls(next.receivers.filter((r) => !unchanged(r)), logger, opts.now);
      const nextTls = new Map<string, ClientTlsCredentials>();
      for (const r of next.receivers) {
        const credentials = opened.get(r.name) ?? (unchanged(r) ? tls.get(r.name) : undefined);
        if (credentials) nextTls.set(r.name, credentials);
      }
      for (const [name, credentials] of tls) {
        if (nextTls.get(name) === credentials) continue;
        credentials.stop();
        retiredTls.push(credentials);
      }
      if (!stopping) for (const credentials of opened.values()) credentials.start();
      tls = nextTls;
      receivers = next.receivers;
      const { deadlineMs, maxQueue, initialBackoffMs, maxBackoffMs } = next.delivery;
      const { externalLabels } = next;
      labelled = next;
      dispatcher.reconfigure({ receivers, tls, deadlineMs, maxQueue, baseDelayMs: initialBackoffMs, maxDelayMs: maxBackoffMs, externalLabels });
      refresher.reconfigure({ receivers, tls, externalLabels });
      return engine.reconfigure({ rules: next.rules, receivers, repeatIntervalMs: next.repeatIntervalMs, evaluationIntervalMs: next.evaluationIntervalMs });
    },
    stop(step = unboundedStep, exportStep = unboundedStep) {
      stopping ??= (async () => {
        for (const credentials of tls.values()) credentials.stop();
        eventTls?.stop();
        await step('alert evaluation in progress', () => engine.stop());
        await refresher.stop();
        await step('alert deliveries in progress', () => dispatcher.stop());
        // The receivers' TLS connection pools: their keep-alive connections would otherwise stay open.
        await closeTlsDispatchers([...tls.values(), ...retiredTls]);
        await exportStep('alert event export', () => events.shutdown().catch((err: unknown) => {
          logger.warn('alert event export did not flush', { err });
        }), () => events.cut?.());
        // Before the store closes: a close that fails (the store these failures are about) must not lose them.
        attemptWriteFailures.flush();
        await stateStore.close();
      })();
      return stopping;
    },
  };
}

/** How often, at most, the failures to record delivery attempts are logged. */
const ATTEMPT_WRITE_LOG_INTERVAL_MS = 60_000;

/** Tries of recording a delivery (the first included), and the waits between them: a blip, not an outage. */
export const OUTCOME_WRITE_TRIES = 4;
const OUTCOME_WRITE_BACKOFF: BackoffPolicy = { baseMs: 100, capMs: 1_000, multiplier: 2 };

/**
 * Runs `write` until it succeeds, OUTCOME_WRITE_TRIES times at most, waiting a backoff between, and not again once
 * `stopping` says so; the last error is thrown.
 */
async function withRetries(write: () => Promise<void>, random: () => number, stopping: () => boolean): Promise<void> {
  for (let failures = 1; ; failures++) {
    try {
      await write();
      return;
    } catch (err) {
      if (failures >= OUTCOME_WRITE_TRIES || stopping()) throw err;
      await new Promise((resolve) => setTimeout(resolve, fullJitterBackoff(failures, OUTCOME_WRITE_BACKOFF, random)));
    }
  }
}

export { AlertEngine } from './engine.ts';
export type { AlertStateStore, LeaderElector } from './state/store.ts';
