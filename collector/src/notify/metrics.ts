/** The dispatcher's figures for /metrics: notifications by outcome and delivery attempts. */
import type { MetricsRegistry } from '../telemetry/metrics.ts';
import type { DispatcherStats } from './dispatcher.ts';

const OUTCOMES = ['enqueued', 'delivered', 'failed', 'dropped'] as const;

export function registerNotifyMetrics(metrics: MetricsRegistry, stats: DispatcherStats): void {
  metrics.collectedCounter('notify', {
    name: 'hookwatch_notifications_total', help: 'Alert notifications (webhook, Slack, Alertmanager) by outcome: enqueued, delivered, failed (gave up after the delivery deadline or a permanent error), dropped (queue full).',
    labelNames: ['outcome'],
    collect: (set) => {
      for (const outcome of OUTCOMES) set({ outcome }, stats[outcome]);
    },
  });
  metrics.collectedCounter('notify', { name: 'hookwatch_notification_attempts_total', help: 'Delivery attempts of alert notifications, retries included.', collect: (set) => set({}, stats.attempts) });
}
