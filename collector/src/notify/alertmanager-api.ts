/**
 * `type: alertmanager`: alerts pushed to an Alertmanager's `POST /api/v2/alerts`, the way Prometheus, the Loki
 * ruler and Grafana do, so a team's Alertmanager routes, groups, inhibits and silences them. Like Prometheus,
 * a firing alert carries an `endsAt` a few resend intervals ahead and is pushed again every resend interval
 * (so an Alertmanager that stops hearing from hookwatch resolves it by itself); a resolution carries the time
 * it resolved. Alertmanager keys alerts by their label set, so pushing the same alert again (a renewal, a
 * retry, a restart of hookwatch) updates it instead of duplicating it.
 */
import type { AlertSummary } from '../../../shared/src/api.ts';
import type { ClientTlsCredentials } from '../net/tls.ts';
import type { Logger } from '../telemetry/logger.ts';
import { alertmanagerFingerprint, withExternalLabels } from './alertmanager.ts';
import { dashboardLink } from './links.ts';
import type { BodyRenderer, LinkContext, Notification, ReceiverConfig } from './model.ts';
import { sendWithRetry, type SendResult } from './transport.ts';
import { formatRfc3339 } from '../rfc3339.ts';

/** Prometheus' default `--rules.alert.resend-delay`. */
export const DEFAULT_RESEND_INTERVAL_MS = 60_000;
/** Prometheus sets endsAt to 4 resend intervals ahead: three pushes may be lost before the alert resolves itself. */
const LIFETIME_INTERVALS = 4;
/**
 * How long a resolved alert is pushed again with every renewal, its endsAt the time it resolved: Prometheus'
 * `resolvedRetention`. Whatever order Alertmanager takes the pushes in (a renewal built before the resolution,
 * taken after it) and whichever is lost, its last word on the alert within a resend interval is that it ended.
 */
export const RESOLVED_RESEND_MS = 15 * 60_000;
/**
 * The most alerts one renewal post carries, Prometheus' notifier default (`--alertmanager.notification-batch-size`):
 * thousands of firing alerts go as several bodies Alertmanager and proxies in front of it take, and a body lost
 * loses only its own alerts' renewal.
 */
export const RENEWAL_BATCH_SIZE = 256;

/** One alert as `POST /api/v2/alerts` takes it (Alertmanager's postableAlert). */
export interface PostableAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
  generatorURL?: string;
}

/**
 * The alert an Alertmanager receives: firing with a renewed endsAt, or resolved at `resolvedAt`, its labels with
 * alerting.externalLabels added (Alertmanager keys alerts by them: two deployments' alerts of one hook stay apart).
 */
export function postableAlert(
  a: { labels: Record<string, string>; annotations: Record<string, string>; startsAt: string; activeAt?: string; firstEventAt?: string | null; hookId: string | null },
  resolvedAt: string | null,
  ctx: LinkContext,
  nowMs: number,
  resendIntervalMs: number,
  externalLabels: Readonly<Record<string, string>> = {},
): PostableAlert {
  const link = dashboardLink(ctx, { ...a, endsAt: resolvedAt }, nowMs);
  return {
    labels: withExternalLabels(a.labels, externalLabels),
    annotations: a.annotations,
    startsAt: a.startsAt,
    endsAt: resolvedAt ?? formatRfc3339(nowMs + LIFETIME_INTERVALS * resendIntervalMs),
    // Alertmanager validates generatorURL as a URI: without alerting.externalUrl there is none to give.
    ...(link ? { generatorURL: link } : {}),
  };
}

/**
 * Renderer for `type: alertmanager`: a one-alert array, endsAt computed when the request is built. A test
 * notification ends when it starts: Alertmanager validates and stores it (so its 2xx proves the URL, credentials
 * and TLS work and it takes hookwatch's alerts), but holds it as resolved, never as firing. No route notifies it
 * either: Alertmanager sends a group's resolution only after having sent it firing. A firing test alert would
 * page through the team's routes and stay firing until its endsAt, with nothing to resolve it.
 */
export function alertmanagerApiRenderer(ctx: LinkContext, receiver: ReceiverConfig, now: () => number, externalLabels: Readonly<Record<string, string>> = {}): BodyRenderer {
  const resend = receiver.resendIntervalMs ?? DEFAULT_RESEND_INTERVAL_MS;
  return {
    render: (n: Notification) => {
      const resolvedAt = n.test ? n.alert.startsAt : n.status === 'resolved' ? (n.alert.endsAt ?? formatRfc3339(now())) : null;
      return JSON.stringify([postableAlert(n.alert, resolvedAt, ctx, now(), resend, externalLabels)]);
    },
  };
}

export interface AlertmanagerRefresherOptions {
  receivers: readonly ReceiverConfig[];
  links: LinkContext;
  /**
   * The alerts firing, and those resolved within RESOLVED_RESEND_MS, however many (others are left out), each
   * with the fingerprint Alertmanager gives its labels.
   */
  alerts: () => AlertSummary[];
  /**
   * Whether this process's alerts are the ones to renew (it leads, and its memory is the saved state); a
   * follower's or a stale view could renew an alert the leader has resolved. Absent: always.
   */
  active?: () => boolean;
  /** The TLS files of the receivers with `tls`, by name (transport.ts: openReceiverTls). */
  tls?: ReadonlyMap<string, ClientTlsCredentials>;
  /** alerting.externalLabels, added to every alert pushed. Absent: none. */
  externalLabels?: Readonly<Record<string, string>>;
  logger: Logger;
  now?: () => number;
}

/**
 * Pushes every firing alert already notified to each Alertmanager receiver every resend interval, and, as
 * Prometheus does, each one resolved within RESOLVED_RESEND_MS with its resolution. The first push of an alert
 * and its resolution go through the durable outbox like any notification; this keeps endsAt ahead while it fires,
 * repeats its end once it resolved, and after a restart renews what the previous process pushed. A silence in
 * hookwatch mutes notifications (an alert that fires while silenced is never pushed), but an alert Alertmanager
 * already holds is still renewed: left to expire it would resolve there, falsely, and fire again when the silence
 * ends. Should it resolve while silenced, its resolution is pushed with the renewals.
 */
export class AlertmanagerRefresher {
  /** Renewal posts (batches) per Alertmanager receiver, delivered or failed (for /metrics: from 0, so a first failure shows). */
  readonly byReceiver = new Map<string, { delivered: number; failed: number }>();
  private opts: AlertmanagerRefresherOptions;
  private readonly timers: NodeJS.Timeout[] = [];
  private started = false;
  private readonly abort = new AbortController();
  private readonly running = new Set<Promise<void>>();
  private readonly failing = new Set<string>();
  /**
   * The renewal in flight per receiver, until the answer to its last batch: an Alertmanager slower than its resend
   * interval (within its timeout) is not sent the next one over it; the interval after that answer is. By the
   * fingerprint of each alert it carries, the answer to the batch carrying it (settled): resolved then, or when the
   * renewal ends before posting that batch.
   */
  private readonly pushing = new Map<string, Map<string, Promise<void>>>();

  constructor(opts: AlertmanagerRefresherOptions) {
    this.opts = opts;
    for (const r of opts.receivers) if (r.type === 'alertmanager') this.byReceiver.set(r.name, { delivered: 0, failed: 0 });
  }

  /**
   * The receivers of a reloaded configuration: an Alertmanager receiver added is renewed from now on, one removed
   * no longer, and each runs on its new resend interval; the next renewal carries the external labels given.
   */
  reconfigure(next: Pick<AlertmanagerRefresherOptions, 'receivers' | 'tls' | 'externalLabels'>): void {
    this.opts = { ...this.opts, ...next };
    const names = new Set(next.receivers.filter((r) => r.type === 'alertmanager').map((r) => r.name));
    for (const name of this.byReceiver.keys()) {
      if (names.has(name)) continue;
      // Forgotten, its push in flight included: its outcome is no longer this receiver's, should the name come back.
      for (const state of [this.byReceiver, this.pushing, this.failing]) state.delete(name);
    }
    for (const name of names) if (!this.byReceiver.has(name)) this.byReceiver.set(name, { delivered: 0, failed: 0 });
    if (!this.started) return;
    for (const t of this.timers.splice(0)) clearInterval(t);
    this.start();
  }

  /** Starts one timer per Alertmanager receiver (none without one). */
  start(): void {
    this.started = true;
    for (const r of this.opts.receivers) {
      if (r.type !== 'alertmanager') continue;
      const t = setInterval(() => void this.track(this.push(r)), r.resendIntervalMs ?? DEFAULT_RESEND_INTERVAL_MS);
      t.unref();
      this.timers.push(t);
    }
  }

  private track(p: Promise<void>): void {
    this.running.add(p);
    void p.finally(() => this.running.delete(p));
  }

  /**
   * Pushes the firing and recently resolved alerts to one receiver now, in batches of RENEWAL_BATCH_SIZE posted one
   * after the answer to the other (one attempt each: the next interval is the retry); nothing while the previous
   * renewal to it is still waiting for an answer. A batch refused does not stop the others, which Alertmanager
   * takes or refuses on their own; a batch not answered (timed out, no connection) ends the renewal there, as the
   * next ones would wait as long, and the notifications waiting for its batches (settled) with them.
   */
  async push(r: ReceiverConfig): Promise<void> {
    const now = this.opts.now ?? Date.now;
    if (this.opts.active && !this.opts.active()) return;
    if (this.pushing.has(r.name)) return;
    const alerts = this.opts.alerts();
    const firing = alerts.filter((a) => a.state === 'firing' && a.lastNotifiedAt !== null && a.startsAt !== null);
    const carried = [...firing, ...(r.sendResolved ? recentlyResolved(alerts, firing, now()) : [])];
    if (carried.length === 0) return;
    const resend = r.resendIntervalMs ?? DEFAULT_RESEND_INTERVAL_MS;
    const batches: { alerts: AlertSummary[]; answered: () => void }[] = [];
    const renewal = new Map<string, Promise<void>>();
    for (let i = 0; i < carried.length; i += RENEWAL_BATCH_SIZE) {
      let answered = (): void => undefined;
      const answer = new Promise<void>((resolve) => (answered = resolve));
      const batch = { alerts: carried.slice(i, i + RENEWAL_BATCH_SIZE), answered };
      for (const a of batch.alerts) renewal.set(a.fingerprint, answer);
      batches.push(batch);
    }
    this.pushing.set(r.name, renewal);
    // Not the renewal in flight any more: a reload removed its receiver meanwhile.
    const removed = (): boolean => this.pushing.get(r.name) !== renewal;
    const failures: SendResult[] = [];
    try {
      for (const batch of batches) {
        const body = JSON.stringify(batch.alerts.map((a) => postableAlert({ ...a, startsAt: a.startsAt as string }, a.state === 'resolved' ? a.endsAt : null, this.opts.links, now(), resend, this.opts.externalLabels)));
        const result = await sendWithRetry(() => ({ body, headers: r.headers }), {
          url: r.url, timeoutMs: r.timeoutMs, deadlineMs: now() + r.timeoutMs, maxAttempts: 1, signal: this.abort.signal, now, tls: this.opts.tls?.get(r.name) ?? null,
        });
        batch.answered();
        if (result.outcome === 'aborted' || removed()) return;
        const counts = this.byReceiver.get(r.name);
        if (counts) counts[result.outcome === 'delivered' ? 'delivered' : 'failed']++;
        if (result.outcome === 'delivered') continue;
        failures.push(result);
        // Not answered: the next batches would wait as long. The next interval posts them all again.
        if (result.httpStatus === null) break;
      }
    } finally {
      if (!removed()) this.pushing.delete(r.name);
      // The batches not posted never carry their alerts' older state to Alertmanager: nothing to wait for.
      for (const batch of batches) batch.answered();
    }
    const [failed] = failures;
    if (!failed) {
      if (this.failing.delete(r.name)) this.opts.logger.info('alertmanager reachable again; firing alerts renewed', { receiver: r.name, alerts: firing.length });
      return;
    }
    // Logged once per outage, not every interval.
    if (!this.failing.has(r.name)) this.opts.logger.warn('cannot renew firing alerts at alertmanager; retrying every resend interval', { receiver: r.name, httpStatus: failed.httpStatus, error: failed.error, failedBatches: failures.length, batches: batches.length });
    this.failing.add(r.name);
  }

  /**
   * Resolves once the batch of the renewal in flight to the notification's receiver that carries its alert (its
   * label set) has its answer, or the renewal ended without posting it; at once when the renewal carries no alert of
   * those labels, or none is in flight. That batch was built from the alerts then: a resolution sent to the
   * receiver after it may not reach Alertmanager before it, or Alertmanager would take the batch last and hold the
   * resolved alert firing until the next push. Batches built after an alert resolved carry it resolved.
   */
  async settled(n: Pick<Notification, 'receiver' | 'alert'>): Promise<void> {
    await this.pushing.get(n.receiver)?.get(alertmanagerFingerprint(n.alert.labels));
  }

  /** Stops the timers and aborts pushes in flight. Safe twice. */
  async stop(): Promise<void> {
    this.started = false;
    for (const t of this.timers.splice(0)) clearInterval(t);
    this.abort.abort();
    await Promise.allSettled([...this.running]);
  }
}

/**
 * The alerts pushed firing (notified) that resolved within RESOLVED_RESEND_MS of `nowMs`, the latest resolution
 * of each label set alone, and none of a label set `firing` renews again.
 */
function recentlyResolved(alerts: readonly AlertSummary[], firing: readonly AlertSummary[], nowMs: number): AlertSummary[] {
  const endMs = (a: AlertSummary): number => (a.endsAt === null ? Number.NaN : Date.parse(a.endsAt));
  // By label set, in one pass: a flapping rule may have resolved many alerts within RESOLVED_RESEND_MS.
  const renewed = new Set(firing.map((f) => f.fingerprint));
  const latest = new Map<string, { alert: AlertSummary; endMs: number }>();
  for (const a of alerts) {
    if (a.state !== 'resolved' || a.lastNotifiedAt === null || a.startsAt === null || renewed.has(a.fingerprint)) continue;
    const end = endMs(a);
    if (!(nowMs - end < RESOLVED_RESEND_MS)) continue;
    const kept = latest.get(a.fingerprint);
    if (!kept || end > kept.endMs) latest.set(a.fingerprint, { alert: a, endMs: end });
  }
  return [...latest.values()].map((l) => l.alert);
}
