/** Tells the world about alert transitions: a log line and an OTLP log record (alert events) per transition. */
import { dashboardLink } from '../notify/links.ts';
import type { LinkContext } from '../notify/model.ts';
import type { AlertEventSink } from '../notify/otlp.ts';
import type { Logger } from '../telemetry/logger.ts';
import { firstEventMs, type Transition } from './lifecycle.ts';
import { formatRfc3339, formatRfc3339OrNull } from '../rfc3339.ts';


/**
 * Announces one evaluation's transitions; an export failure is logged, never thrown. Each event links to the
 * dashboard as notifications do (its hook over the time the alert counted), when there is a dashboard to link to.
 */
export function announceTransitions(transitions: readonly Transition[], now: number, events: AlertEventSink, logger: Logger, links?: LinkContext): void {
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
      const first = firstEventMs(a);
      const times = {
        activeAt: formatRfc3339(a.activeAtMs), startsAt: formatRfc3339OrNull(a.startsAtMs), endsAt: t.to === 'resolved' ? formatRfc3339(a.endsAtMs ?? now) : null,
        firstEventAt: formatRfc3339OrNull(first), annotations: a.annotations,
      };
      const url = links ? dashboardLink(links, { hookId: a.hookId, labels: a.labels, ...times }, now) : '';
      events.emit({ id: a.id, fingerprint: a.fingerprint, rule: a.rule, state: t.to, labels: a.labels, annotations: a.annotations, atMs: now, ...(url ? { url } : {}) });
    } catch (err) {
      logger.warn('alert event export failed', { err });
    }
  }
}
