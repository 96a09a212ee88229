/**
 * The alert lifecycle, as Prometheus and Alertmanager users know it: pending until the condition has held for
 * `for`, then firing; a pending alert that clears is dropped silently; a firing one resolves once its condition
 * has been absent for `keep_firing_for`. Pure functions over records: evaluation.ts steps each rule with them, the
 * engine persists and notifies.
 */
import { hash } from 'node:crypto';
import { GUARD_ANNOTATIONS } from './conditions.ts';
import { parseRfc3339 } from '../rfc3339.ts';
import { alertLabelNames, type RuleConfig } from './settings.ts';
import type { AlertRecord } from './model.ts';
import type { Candidate } from './rules.ts';

/** How often the last time an alert's condition held is saved at most while it keeps holding. */
export const ACTIVE_SAVE_INTERVAL_MS = 60_000;
/** When each alert's lastActiveMs was last handed to the state store. */
const savedActiveMs = new WeakMap<AlertRecord, number>();

/** Stable hash of the sorted label set (the dedup key): 16 hex characters. */
export function fingerprint(labels: Record<string, string>): string {
  const material = Object.keys(labels).sort().map((k) => `${k}\u0000${labels[k]}`).join('\u0001');
  return hash('sha256', material, 'hex').slice(0, 16);
}

/** URL-safe id of one episode: the fingerprint and when it became active (base 36 ms). */
export function alertId(fp: string, activeAtMs: number): string {
  return `${fp}-${activeAtMs.toString(36)}`;
}

/** The event time an alert's annotations name as its earliest late output (`first_event_time`), or null. */
function annotatedFirstEventMs(annotations: Record<string, string>): number | null {
  const t = annotations['first_event_time'];
  return (t === undefined ? undefined : parseRfc3339(t)) ?? null;
}

/**
 * When the evidence an alert was raised on begins, over its episode (AlertRecord.firstEventMs), or, in a record
 * without it, the earliest late output its annotations name.
 */
export function firstEventMs(a: Pick<AlertRecord, 'firstEventMs' | 'annotations'>): number | null {
  return a.firstEventMs === undefined ? annotatedFirstEventMs(a.annotations) : a.firstEventMs;
}

/**
 * The candidate's annotations, with those read when the alert became active (what guard trimmed of its hook,
 * conditions.ts GUARD_ANNOTATIONS) kept from the alert: no later evaluation reads them again (new guard trims of
 * its hook do: AlertEngine.noteGuardTrims).
 */
function keptAnnotations(a: AlertRecord, c: Candidate): Record<string, string> {
  const out = { ...c.annotations };
  for (const k of GUARD_ANNOTATIONS) {
    const v = a.annotations[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/** The earlier of two event times, either unknown (null). */
function earlier(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.min(a, b);
}

/** One state change, for notifications, the OTLP emitter and logs. */
export interface Transition {
  alert: AlertRecord;
  from: AlertRecord['state'] | null;
  /** `dropped`: a pending alert whose condition cleared (never notified). */
  to: AlertRecord['state'] | 'dropped';
}

export interface RuleStep {
  /** Records created or changed. */
  upsert: AlertRecord[];
  /** Ids of pending records dropped. */
  remove: string[];
  transitions: Transition[];
}

/** The settings of a rule that make its alerts' labels besides those of what it watches. */
type RuleLabels = Pick<RuleConfig, 'severity' | 'labels' | 'groupBy'>;

/**
 * Whether `rule`, as configured now, can still give an alert these labels: not once its severity or its own labels
 * changed, nor a label it no longer sets (one of its old `labels`, its old `groupBy` label). Without its settings
 * (a rule no longer configured, whose alerts resolve at once anyway), any.
 */
function gives(rule: Partial<RuleLabels>, labels: Record<string, string>): boolean {
  if (rule.severity === undefined || rule.labels === undefined || rule.groupBy === undefined) return true;
  if (labels['severity'] !== rule.severity) return false;
  if (Object.entries(rule.labels).some(([k, v]) => labels[k] !== v)) return false;
  const names = alertLabelNames([{ labels: rule.labels, groupBy: rule.groupBy }]);
  return Object.keys(labels).every((k) => names.includes(k));
}

/**
 * Applies one evaluation of `rule` at `now` to the active (pending or firing) alerts of that rule, keyed by
 * fingerprint. Mutates `active` to the new active set. A firing alert whose condition cleared resolves once it has
 * been absent for keep_firing_for; one whose labels the rule no longer gives (a reload changed its `labels` or
 * `severity`: its alert now has other labels) at once, as a rule no longer configured. Without the rule's labels
 * (RuleLabels), any label set is taken as one it gives.
 */
export function stepRule(rule: Pick<RuleConfig, 'name' | 'forMs' | 'keepFiringForMs'> & Partial<RuleLabels>, active: Map<string, AlertRecord>, candidates: readonly Candidate[], now: number): RuleStep {
  const step: RuleStep = { upsert: [], remove: [], transitions: [] };
  const seen = new Set<string>();
  for (const c of candidates) {
    const fp = fingerprint(c.labels);
    if (seen.has(fp)) continue;
    let a = active.get(fp);
    // Held: what was measured does not meet the condition, the executions without size data may. An active alert
    // stays as it is, a pending one does not advance to firing, and none is raised.
    if (c.held) {
      if (a) {
        seen.add(fp);
        // Over the cap, waiting for a persisted alert to fire: it says so, never what it said below the cap.
        if (c.overCap && Object.keys(c.annotations).length > 0) {
          const annotations = keptAnnotations(a, c);
          if (JSON.stringify(a.annotations) !== JSON.stringify(annotations)) {
            a.annotations = annotations;
            step.upsert.push(a);
          }
        }
      }
      continue;
    }
    // Ended: an active alert takes the annotations that say why, and resolves below as one whose condition cleared.
    if (c.ended) {
      if (a) a.annotations = keptAnnotations(a, c);
      continue;
    }
    seen.add(fp);
    if (!a) {
      a = {
        id: alertId(fp, now), fingerprint: fp, rule: rule.name, state: 'pending', labels: c.labels, annotations: c.annotations, hookId: c.hookId,
        firstEventMs: earlier(annotatedFirstEventMs(c.annotations), c.evidenceFromMs ?? null), activeAtMs: now, startsAtMs: null, endsAtMs: null, lastActiveMs: now, lastNotifiedMs: null, notifiedFiring: false, notifySeq: 0,
      };
      active.set(fp, a);
      step.transitions.push({ alert: a, from: null, to: 'pending' });
      step.upsert.push(a);
    } else {
      const annotations = keptAnnotations(a, c);
      const changed = JSON.stringify(a.annotations) !== JSON.stringify(annotations);
      // The late outputs leave the window, and the annotations, while the alert fires on: it keeps the earliest.
      a.firstEventMs = earlier(earlier(firstEventMs(a), annotatedFirstEventMs(c.annotations)), c.evidenceFromMs ?? null);
      a.annotations = annotations;
      a.lastActiveMs = now;
      // Unchanged alerts are rewritten at most once a minute: enough for keep_firing_for after a restart,
      // without rewriting every active alert on every ingest.
      if (changed || now - (savedActiveMs.get(a) ?? 0) >= ACTIVE_SAVE_INTERVAL_MS) step.upsert.push(a);
    }
    if (a.state === 'pending' && now - a.activeAtMs >= rule.forMs) {
      a.state = 'firing';
      a.startsAtMs = now;
      step.transitions.push({ alert: a, from: 'pending', to: 'firing' });
      if (!step.upsert.includes(a)) step.upsert.push(a);
    }
    if (step.upsert[step.upsert.length - 1] === a) {
      savedActiveMs.set(a, now);
      // The condition may hold at evaluations to come that save nothing.
      a.lastActiveProvisional = true;
    }
  }
  for (const [fp, a] of active) {
    if (seen.has(fp)) continue;
    if (a.state === 'pending') {
      active.delete(fp);
      step.remove.push(a.id);
      step.transitions.push({ alert: a, from: 'pending', to: 'dropped' });
    } else if (a.state === 'firing' && (now - a.lastActiveMs >= rule.keepFiringForMs || !gives(rule, a.labels))) {
      a.state = 'resolved';
      a.endsAtMs = now;
      delete a.lastActiveProvisional;
      active.delete(fp);
      step.upsert.push(a);
      step.transitions.push({ alert: a, from: 'firing', to: 'resolved' });
    } else if (a.state === 'firing' && a.lastActiveProvisional !== false) {
      // keep_firing_for counts from the last time the condition held: saved now that it is final, once, so a
      // restart during keep_firing_for does not count from an older save and resolve early. Marked final with
      // false, not left unmarked: a record without the mark is one the previous release saved while the
      // condition held, which restoredAlert reads as a lower bound.
      a.lastActiveProvisional = false;
      savedActiveMs.set(a, a.lastActiveMs);
      step.upsert.push(a);
    }
  }
  return step;
}

/**
 * An alert as loaded after a restart (or by a new leader). A firing alert whose last-held time was saved while
 * its condition still held may have held up to ACTIVE_SAVE_INTERVAL_MS later, though not after `nowMs`: counting
 * keep_firing_for from that bound may keep it firing a little longer, never shorter than without the restart.
 * A record with no mark at all was saved by the previous release, which saved the time only while the condition
 * held (never once it was found absent): it is such a lower bound too, or an upgrade would cut keepFiringFor short.
 */
export function restoredAlert(a: AlertRecord, nowMs: number): AlertRecord {
  if (a.state !== 'firing' || a.lastActiveProvisional === false) return a;
  return { ...a, lastActiveMs: Math.max(a.lastActiveMs, Math.min(a.lastActiveMs + ACTIVE_SAVE_INTERVAL_MS, nowMs)) };
}
