/**
 * What the API, the dashboard, /metrics and the Alertmanager refresher see of alerting: the current alerts with
 * their state, the silences muting each and when it was last notified, and each alert's delivery attempts. Reads
 * the engine's alert set and silences and the state store; changes nothing.
 */
import type { AlertState, AlertSummary, DeliveryAttempt, LastDelivery } from '../../../shared/src/api.ts';
import { alertmanagerFingerprint } from '../notify/alertmanager.ts';
import type { AlertSet } from './alert-set.ts';
import { firstEventMs } from './lifecycle.ts';
import type { AlertRecord } from './model.ts';
import type { Silences } from './silencing.ts';
import type { AlertStateStore } from './state/store.ts';
import { formatRfc3339, formatRfc3339OrNull } from '../rfc3339.ts';

/** A flapping rule can resolve many alerts in a day; the list stays bounded. */
export const MAX_RESOLVED_LISTED = 1000;

export interface ReadModelOptions {
  alerts: AlertSet;
  silences: Pick<Silences, 'mutedBy'>;
  stateStore: Pick<AlertStateStore, 'attempts' | 'lastAttempts'>;
  receivers: readonly { name: string }[];
  now: () => number;
  /** Brings alerts and silences up to date with shared state before an answer (absent: memory is the state). */
  refresh?: () => Promise<void>;
}

const ORDER = { firing: 0, pending: 1, resolved: 2 } as const;
/**
 * Labels and annotations by name: the same alert reads the same from every replica, whether it comes from memory
 * (the order its rule built them) or from PostgreSQL's JSONB (which orders keys by length).
 */
const byName = (r: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/** The API view of one alert, muted by these silences, with its latest delivery to each receiver. */
export function alertSummary(a: AlertRecord, silencedBy: readonly string[], deliveries: LastDelivery[] = []): AlertSummary {
  return {
    // The fingerprint receivers see (webhook alerts[].fingerprint, Alertmanager's own), not the internal key.
    id: a.id, fingerprint: alertmanagerFingerprint(a.labels), rule: a.rule, state: a.state, labels: byName(a.labels), annotations: byName(a.annotations),
    activeAt: formatRfc3339(a.activeAtMs), startsAt: formatRfc3339OrNull(a.startsAtMs), endsAt: formatRfc3339OrNull(a.endsAtMs), firstEventAt: formatRfc3339OrNull(firstEventMs(a)),
    lastNotifiedAt: formatRfc3339OrNull(a.lastNotifiedMs),
    deliveries, silencedBy: [...silencedBy], hookId: a.hookId,
  };
}

export class AlertReadModel {
  private readonly opts: ReadModelOptions;

  constructor(opts: ReadModelOptions) {
    this.opts = opts;
  }

  /** Call before answering a request: with shared state another replica may have changed it. */
  refresh(): Promise<void> {
    return this.opts.refresh ? this.opts.refresh() : Promise.resolve();
  }

  /**
   * Firing, then pending, then recently resolved alerts (the newest MAX_RESOLVED_LISTED of those); those in `state`
   * alone when given, the others never summarised; those of the hook `hookId` alone when given, its resolved ones
   * the newest of its own, not cut by the rest of the fleet's.
   */
  alerts(state?: AlertState, hookId?: string): AlertSummary[] {
    const resolved = state === undefined || state === 'resolved'
      ? this.resolved(hookId).sort((a, b) => (b.endsAtMs ?? 0) - (a.endsAtMs ?? 0)).slice(0, MAX_RESOLVED_LISTED)
      : [];
    return [...this.opts.alerts.activeAlerts(), ...resolved]
      .filter((a) => (state === undefined || a.state === state) && (hookId === undefined || a.hookId === hookId))
      .sort((a, b) => ORDER[a.state] - ORDER[b.state] || (b.startsAtMs ?? b.activeAtMs) - (a.startsAtMs ?? a.activeAtMs) || a.id.localeCompare(b.id))
      .map((a) => this.summary(a));
  }

  /**
   * The firing alerts, and every alert that resolved at or after `sinceMs`, however many (not cut at
   * MAX_RESOLVED_LISTED): what the Alertmanager refresher pushes.
   */
  firingAndResolvedSince(sinceMs: number): AlertSummary[] {
    const firing = this.opts.alerts.activeAlerts().filter((a) => a.state === 'firing');
    const resolved = this.opts.alerts.resolvedAlerts().filter((a) => a.endsAtMs !== null && a.endsAtMs >= sinceMs);
    return [...firing, ...resolved].map((a) => this.summary(a));
  }

  /**
   * Resolved alerts kept (and answered by id) but past the newest MAX_RESOLVED_LISTED, so left out of alerts(); of
   * the hook `hookId` alone when given.
   */
  resolvedNotListed(hookId?: string): number {
    return Math.max(0, this.resolved(hookId).length - MAX_RESOLVED_LISTED);
  }

  private resolved(hookId: string | undefined): AlertRecord[] {
    const all = this.opts.alerts.resolvedAlerts();
    return hookId === undefined ? all : all.filter((a) => a.hookId === hookId);
  }

  /** One alert by id (active or recently resolved). */
  alert(id: string): AlertSummary | undefined {
    const found = this.opts.alerts.get(id);
    return found ? this.summary(found) : undefined;
  }

  /**
   * Alerts as alerts() lists them (those in `state`, of the hook `hookId`, alone when given), each with the outcome
   * of its latest delivery to each receiver.
   */
  async alertsWithDeliveries(state?: AlertState, hookId?: string): Promise<AlertSummary[]> {
    const listed = this.alerts(state, hookId);
    const byAlert = new Map<string, LastDelivery[]>();
    // The listed alerts' attempts only: the table also holds those of every resolved alert past the list.
    for (const a of await this.opts.stateStore.lastAttempts(listed.map((s) => s.id))) {
      const list = byAlert.get(a.alertId) ?? [];
      list.push({ receiver: a.receiver, status: a.status, outcome: a.outcome, at: formatRfc3339(a.atMs), httpStatus: a.httpStatus });
      byAlert.set(a.alertId, list);
    }
    return listed.map((s) => ({ ...s, deliveries: (byAlert.get(s.id) ?? []).sort((x, y) => x.receiver.localeCompare(y.receiver)) }));
  }

  /** Delivery attempts of one alert, oldest first. */
  async attempts(id: string): Promise<DeliveryAttempt[]> {
    return (await this.opts.stateStore.attempts(id)).map((a) => ({
      receiver: a.receiver, webhookId: a.webhookId, attempt: a.attempt, at: formatRfc3339(a.atMs), status: a.status,
      outcome: a.outcome, httpStatus: a.httpStatus, error: a.error, durationMs: a.durationMs,
    }));
  }

  /** Names of the configured receivers (names only: never a URL, header or secret). */
  receiverNames(): string[] {
    return this.opts.receivers.map((r) => r.name);
  }

  private summary(a: AlertRecord): AlertSummary {
    // A resolved alert has nothing left to mute.
    return alertSummary(a, a.state === 'resolved' ? [] : this.opts.silences.mutedBy(a.labels, this.opts.now()));
  }
}
