/**
 * The dispatcher's figures for /metrics: notifications by outcome and delivery attempts; and what became of the
 * alert events exported to alerting.otlp.endpoint.
 */
import type { MetricsRegistry } from '../telemetry/metrics.ts';
import type { AlertmanagerRefresher } from './alertmanager-api.ts';
import type { DispatcherStats } from './dispatcher.ts';
import { ALERT_EVENT_FAILURE_REASONS, type AlertEventStats } from './otlp.ts';
import { NOTIFICATION_FAILURE_REASONS } from './transport.ts';

const OUTCOMES = ['enqueued', 'delivered', 'failed', 'dropped', 'discarded'] as const;

export function registerNotifyMetrics(metrics: MetricsRegistry, stats: DispatcherStats, refresher?: Pick<AlertmanagerRefresher, 'byReceiver'>): void {
  metrics.collectedCounter('notify', {
    name: 'hookwatch_notifications_total', help: 'Alert notifications (webhook, Slack, Alertmanager) by outcome: enqueued, delivered, failed (gave up after the delivery deadline or a permanent error), dropped (queue full), discarded (its receiver is no longer configured: removed from the file before a restart, or by a reload).',
    labelNames: ['outcome'],
    collect: (set) => {
      for (const outcome of OUTCOMES) set({ outcome }, stats[outcome]);
    },
  });
  metrics.collectedCounter('notify', {
    name: 'hookwatch_notification_failures_total',
    help: 'Alert notifications failed (hookwatch_notifications_total{outcome="failed"}), by the reason of their last attempt: refused_3xx (a redirect, not followed), refused_4xx, refused_5xx (the status class answered), unreachable (no connection made, or closed before the answer), timeout, tls (the handshake failed), other.',
    labelNames: ['reason'],
    collect: (set) => {
      for (const reason of NOTIFICATION_FAILURE_REASONS) set({ reason }, stats.failedByReason[reason]);
    },
  });
  metrics.collectedCounter('notify', { name: 'hookwatch_notification_attempts_total', help: 'Delivery attempts of alert notifications, retries included.', collect: (set) => set({}, stats.attempts) });
  metrics.collectedCounter('notify', {
    name: 'hookwatch_notification_tls_failures_total',
    help: 'Delivery attempts of alert notifications whose TLS handshake with the receiver failed (its certificate not trusted, for another name or out of date; the client certificate refused); retried.',
    collect: (set) => set({}, stats.tlsFailures),
  });
  if (!refresher) return;
  metrics.collectedCounter('notify', {
    name: 'hookwatch_alertmanager_renewals_total',
    help: 'Posts renewing the firing alerts at an Alertmanager receiver (with those resolved within the last 15 minutes), every resend interval, in batches of up to 256 alerts, one count per batch, by receiver and outcome (delivered, failed). Failing renewals let Alertmanager resolve the alerts by themselves.',
    labelNames: ['receiver', 'outcome'],
    collect: (set) => {
      for (const [receiver, counts] of refresher.byReceiver) {
        set({ receiver, outcome: 'delivered' }, counts.delivered);
        set({ receiver, outcome: 'failed' }, counts.failed);
      }
    },
  });
}

/** Every series at 0 from the start, alerting.otlp.endpoint set or not (without it nothing is exported). */
export function registerAlertEventMetrics(metrics: MetricsRegistry, stats: AlertEventStats): void {
  metrics.collectedCounter('notify', {
    name: 'hookwatch_alert_events_total',
    help: 'Alert transitions exported as OpenTelemetry log records to alerting.otlp.endpoint, by outcome: exported (the endpoint accepted them), failed (refused, unreachable, timed out or TLS failed, after the exporter\'s retries, or rejected in a partial success; lost), dropped (the export queue was full; lost).',
    labelNames: ['outcome'],
    collect: (set) => {
      set({ outcome: 'exported' }, stats.exported);
      set({ outcome: 'failed' }, stats.failed);
      set({ outcome: 'dropped' }, stats.dropped);
    },
  });
  metrics.collectedCounter('notify', {
    name: 'hookwatch_alert_event_failures_total',
    help: 'Alert events whose export to alerting.otlp.endpoint failed, by reason: refused_3xx, refused_4xx, refused_5xx (the status class answered), unreachable, timeout, tls (the handshake failed), rejected (the endpoint took the request but rejected these records: an OTLP partial success), other.',
    labelNames: ['reason'],
    collect: (set) => {
      for (const reason of ALERT_EVENT_FAILURE_REASONS) set({ reason }, stats.byReason[reason]);
    },
  });
}
