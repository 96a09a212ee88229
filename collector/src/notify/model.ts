/** What the notify stage receives from alerting, and how receivers are configured. */
import type { ClientTlsConfig } from '../net/settings.ts';

/** A receiver as configured under `alerting.receivers` (validated once at load). */
export interface ReceiverConfig {
  name: string;
  /**
   * `webhook`: Alertmanager v4 JSON body; `slack`: Slack incoming webhook text; `alertmanager`: pushed to an
   * Alertmanager's `POST /api/v2/alerts` as Prometheus does.
   */
  type: 'webhook' | 'slack' | 'alertmanager';
  /** Secret: often carries a token in its path or query. For `alertmanager`, the full `/api/v2/alerts` URL. */
  url: string;
  /** Extra request headers (values are secret: they often hold credentials). */
  headers: Record<string, string>;
  /** `whsec_<base64>` to sign with Standard Webhooks; empty for no signing. */
  signingSecret: string;
  timeoutMs: number;
  /** Also notify when an alert resolves (Alertmanager `send_resolved`, default true). */
  sendResolved: boolean;
  /** `alertmanager`: how often firing alerts are pushed again with a renewed `endsAt` (Prometheus' resend delay). */
  resendIntervalMs?: number;
  /**
   * TLS client settings (a private CA, a client certificate), as `forward.tls.*` has them, `section` naming
   * `alerting.receivers[<i>].tls`; null for the system defaults. The files are read when alerting starts.
   */
  tls?: ClientTlsConfig | null;
}

/** What names one alert instance, wherever it goes (stored, notified, emitted as an event). */
export interface AlertIdentity {
  /** URL-safe: fingerprint plus the time it became active (base 36). */
  id: string;
  fingerprint: string;
  rule: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export type AlertState = 'pending' | 'firing' | 'resolved';

/** One alert as a notification carries it. Times are RFC 3339. */
export interface NotifiedAlert extends AlertIdentity {
  startsAt: string;
  endsAt: string | null;
  /**
   * When the evidence it was raised on begins, over its episode (AlertSummary.firstEventAt), for its link;
   * absent from a notification an earlier release queued.
   */
  firstEventAt?: string | null;
  hookId: string | null;
}

/** One notification: one alert transition (or repeat) for one receiver. */
export interface Notification {
  /** Standard Webhooks idempotency key: the same on every attempt of this notification, across restarts. */
  webhookId: string;
  receiver: string;
  status: 'firing' | 'resolved';
  alert: NotifiedAlert;
  createdAtMs: number;
  /**
   * A test notification (POST /api/v1/receivers/:name/test), of no rule. An `alertmanager` receiver gets it
   * resolved on arrival, so it leaves no alert firing there.
   */
  test?: boolean;
}

/**
 * How a notification left the outbox: delivered, failed (given up on: its deadline passed, a permanent error, its
 * receiver's queue full), or dropped (its receiver is no longer configured, as Alertmanager forgets what was
 * pending for a receiver its new configuration no longer has).
 */
export type NotificationOutcome = 'delivered' | 'failed' | 'dropped';

/** Renders the request body of a notification for one kind of receiver. */
export interface BodyRenderer {
  render(n: Notification): string;
}

/** Where to link to (the dashboard), from `alerting.externalUrl`. */
export interface LinkContext {
  externalUrl: string;
}
