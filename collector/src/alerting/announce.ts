/** Tells the world about alert transitions: a log line and an OTLP log record (alert events) per transition. */
import type { AlertEventSink } from '../notify/otlp.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Transition } from './lifecycle.ts';

/** Announces one evaluation's transitions; an export failure is logged, never thrown. */
export function announceTransitions(transitions: readonly Transition[], now: number, events: AlertEventSink, logger: Logger): void {
  // With for: 0 an alert goes pending -> firing in one evaluation; announce only where it ended up.
  const firedNow = new Set(transitions.filter((t) => t.to === 'firing').map((t) => t.alert));
  for (const t of transitions) {
    const a = t.alert;
    if (t.to === 'pending' && firedNow.has(a)) continue;
    if (t.to === 'dropped') {
      logger.debug('pending alert cleared', { alert: a.id, rule: a.rule });
      continue;
    }
    if (t.to !== 'pending') logger.info(`alert ${t.to}`, { alert: a.id, rule: a.rule, labels: a.labels });
    try {
      events.emit({ id: a.id, fingerprint: a.fingerprint, rule: a.rule, state: t.to, labels: a.labels, annotations: a.annotations, atMs: now });
    } catch (err) {
      logger.warn('alert event export failed', { err });
    }
  }
}
