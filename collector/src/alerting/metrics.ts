/** The alert engine's figures for /metrics: alerts by state and rule, evaluations, rule errors, dropped label sets. */
import type { MetricsRegistry } from '../telemetry/metrics.ts';
import type { AlertEngine } from './engine.ts';

/** Read at scrape time; labels are rule names and states (bounded by the configuration). */
export function registerAlertingMetrics(metrics: MetricsRegistry, engine: AlertEngine): void {
  // A follower shows the shared alert state, not what it last evaluated (nothing): read it once per scrape.
  const refreshed = metrics.perScrape(() => engine.refresh().catch(() => {}));
  metrics.collectedGauge('alerting', {
    name: 'hookwatch_alerts', help: 'Alerts by rule and state (pending, firing, resolved in the last 24 h).', labelNames: ['rule', 'state'],
    collect: async (set) => {
      await refreshed();
      const byRuleState = new Map<string, { rule: string; state: string; n: number }>();
      for (const a of engine.alerts()) {
        const key = `${a.rule}\u0000${a.state}`;
        const entry = byRuleState.get(key) ?? { rule: a.rule, state: a.state, n: 0 };
        entry.n++;
        byRuleState.set(key, entry);
      }
      for (const { rule, state, n } of byRuleState.values()) set({ rule, state }, n);
    },
  });
  const counter = (name: string, help: string, value: () => number): void => metrics.collectedCounter('alerting', {
    name, help,
    collect: async (set) => {
      await refreshed();
      set({}, value());
    },
  });
  counter('hookwatch_alert_evaluations_total', 'Alert evaluations run (on ingest and on the timer).', () => engine.stats.evaluations);
  counter('hookwatch_alert_rule_errors_total', 'Rule evaluations that failed (their alerts kept their state).', () => engine.stats.ruleErrors);
  counter('hookwatch_alert_label_sets_dropped_total', 'Label sets dropped because a rule was over its alert limit.', () => engine.stats.droppedAlerts);
  counter('hookwatch_alert_notifications_created_total', 'Notifications created (one per receiver per alert transition or repeat).', () => engine.stats.notificationsCreated);
}
