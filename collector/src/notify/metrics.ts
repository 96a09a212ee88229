/** The dispatcher's figures for /metrics: notifications by outcome and delivery attempts. */
import type { MetricsRegistry } from '../telemetry/metrics.ts';
import type { AlertmanagerRefresher } from './alertmanager-api.ts';
import type { DispatcherStats } from './dispatcher.ts';

const OUTCOMES = ['enqueued', 'delivered', 'failed', 'dropped'] as const;

export function registerNotifyMetrics(metrics: MetricsRegistry, stats: DispatcherStats, refresher?: Pick<AlertmanagerRefresher, 'byReceiver'>): void {
  metrics.collectedCounter('notify', {
    name: 'hookwatch_notifications_total', help: 'Alert notifications (webhook, Slack, Alertmanager) by outcome: enqueued, delivered, failed (gave up after the delivery deadline or a permanent error), dropped (queue full).',
    labelNames: ['outcome'],
    collect: (set) => {
      for (const outcome of OUTCOMES) set({ outcome }, stats[outcome]);
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
    help: 'Pushes renewing the firing alerts at an Alertmanager receiver, every resend interval, by receiver and outcome (delivered, failed). Failing renewals let Alertmanager resolve the alerts by themselves.',
    labelNames: ['receiver', 'outcome'],
    collect: (set) => {
      for (const [receiver, counts] of refresher.byReceiver) {
        set({ receiver, outcome: 'delivered' }, counts.delivered);
        set({ receiver, outcome: 'failed' }, counts.failed);
      }
    },
  });
}
