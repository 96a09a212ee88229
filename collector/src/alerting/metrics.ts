/** The alert engine's figures for /metrics: alerts by state and rule, evaluations, rule errors, dropped label sets. */
import type { MetricFamily } from '../telemetry/metrics.ts';
import type { AlertEngine } from './engine.ts';

/** Read at scrape time; labels are rule names and states (bounded by the configuration). */
export function alertingFamilies(engine: AlertEngine): MetricFamily[] {
  const byRuleState = new Map<string, number>();
  for (const a of engine.alerts()) {
    const key = `${a.rule}\u0000${a.state}`;
    byRuleState.set(key, (byRuleState.get(key) ?? 0) + 1);
  }
  const s = engine.stats;
  return [
    {
      name: 'hookwatch_alerts', type: 'gauge', help: 'Alerts by rule and state (pending, firing, resolved in the last 24 h).',
      samples: [...byRuleState].map(([key, value]) => {
        const [rule = '', state = ''] = key.split('\u0000');
        return { labels: { rule, state }, value };
      }),
    },
    { name: 'hookwatch_alert_evaluations_total', type: 'counter', help: 'Alert evaluations run (on ingest and on the timer).', samples: [{ value: s.evaluations }] },
    { name: 'hookwatch_alert_rule_errors_total', type: 'counter', help: 'Rule evaluations that failed (their alerts kept their state).', samples: [{ value: s.ruleErrors }] },
    { name: 'hookwatch_alert_label_sets_dropped_total', type: 'counter', help: 'Label sets dropped because a rule was over its alert limit.', samples: [{ value: s.droppedAlerts }] },
    { name: 'hookwatch_alert_notifications_created_total', type: 'counter', help: 'Notifications created (one per receiver per alert transition or repeat).', samples: [{ value: s.notificationsCreated }] },
  ];
}
