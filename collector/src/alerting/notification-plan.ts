/**
 * Which notifications an evaluation creates, with no I/O: firing alerts due one (new, or repeat_interval passed)
 * and resolutions of alerts whose firing was notified (to the receivers that had it), unless a silence mutes them. Each notification has a
 * webhook-id derived from the alert episode, the transition and the receiver, so it is stable across retries
 * and restarts and a receiver can deduplicate.
 */
import { createHash } from 'node:crypto';
import type { Notification, ReceiverConfig } from '../notify/model.ts';
import { firstEventMs, type Transition } from './lifecycle.ts';
import type { AlertRecord } from './model.ts';
import type { RuleKind } from './settings.ts';
import { formatRfc3339, formatRfc3339OrNull } from '../rfc3339.ts';

export interface PlanOptions {
  now: number;
  receivers: readonly Pick<ReceiverConfig, 'name' | 'sendResolved'>[];
  /** Alertmanager repeat_interval: a still-firing alert is notified again after this long. */
  repeatIntervalMs: number;
  /** True when an active silence matches these labels. */
  muted(labels: Record<string, string>): boolean;
  /**
   * True when `receiver` had the firing of `a` delivered, or may still have it (its notification not yet given up
   * on): only those receivers are told it resolved, as Alertmanager sends nothing for a group it never notified.
   */
  hadFiring(a: AlertRecord, receiver: string): boolean;
}

/**
 * Plans the notifications of one evaluation. Marks the alerts notified (notifySeq, lastNotifiedMs, notifiedAtMs,
 * notifiedFiring) and adds those not already there to `upsert`, so the state and the outbox are saved together.
 * A firing alert goes to the receivers not notified of it yet and those whose repeat_interval has passed.
 */
export function planNotifications(active: readonly AlertRecord[], transitions: readonly Transition[], upsert: AlertRecord[], opts: PlanOptions): Notification[] {
  const { now, receivers } = opts;
  const out: Notification[] = [];
  if (receivers.length === 0) return out;
  const touch = toucher(upsert);
  for (const a of active) {
    if (a.state !== 'firing') continue;
    const due = receivers.filter((r) => {
      const last = lastNotifiedAt(a, r.name);
      return last === null || now - last >= opts.repeatIntervalMs;
    });
    if (due.length === 0 || opts.muted(a.labels)) continue;
    a.notifySeq++;
    noteLastNotified(a, receivers.map((r) => r.name), now);
    a.notifiedFiring = true;
    for (const r of due) out.push(notifyFiring(a, r.name, now));
    touch(a);
  }
  for (const t of transitions) {
    const a = t.alert;
    if (t.to !== 'resolved' || !a.notifiedFiring || opts.muted(a.labels)) continue;
    const told = receivers.filter((r) => r.sendResolved && opts.hadFiring(a, r.name));
    if (told.length === 0) continue;
    a.notifySeq++;
    for (const r of told) out.push(notification(a, r.name, 'resolved', now));
    touch(a);
  }
  return out;
}

/**
 * Receivers owed the alerts firing now get them, once, as Alertmanager routes the active alerts to a receiver
 * within its group_wait instead of leaving it to the next repeat: those a reload added, and after a start (or a
 * new leadership) those never notified of an alert's firing. `owed` names them per alert. Every firing alert no
 * silence mutes, to the owed receivers this evaluation has not already planned it for (its repeat may be due to
 * some receivers only: the others owed it still get it now). Only the owed receivers are notified: the alert's
 * other receivers are not notified again, and their repeat keeps its time. The alert's notifySeq moves on (the
 * alert is added to `upsert`), so the webhook-id is new even for a receiver that had one of the alert before: one
 * dropped when it left the configuration is never reused. A resolved alert among `alerts` is notified as resolved
 * to the receivers `owed` names (a resolution given up on, sent again).
 */
export function planForOwedReceivers(alerts: readonly AlertRecord[], owed: (a: AlertRecord) => readonly string[], planned: readonly Notification[], upsert: AlertRecord[], opts: Pick<PlanOptions, 'now' | 'muted'>): Notification[] {
  const notified = new Set(planned.map((n) => `${n.alert.id}\u0000${n.receiver}`));
  const touch = toucher(upsert);
  const out: Notification[] = [];
  for (const a of alerts) {
    if (a.state === 'pending') continue;
    const receivers = owed(a).filter((r) => !notified.has(`${a.id}\u0000${r}`));
    if (receivers.length === 0 || opts.muted(a.labels)) continue;
    a.notifySeq++;
    for (const receiver of receivers) out.push(a.state === 'firing' ? notifyFiring(a, receiver, opts.now) : notification(a, receiver, a.state, opts.now));
    touch(a);
  }
  return out;
}

/** When `receiver` was last notified of the firing alert `a` (its repeat counts from it); null when never. */
export function lastNotifiedAt(a: AlertRecord, receiver: string): number | null {
  return a.notifiedAtMs?.[receiver] ?? a.lastNotifiedMs;
}

/** The firing of `a` notified to `receiver` at `atMs` (created, or later delivered): its repeat counts from then. */
export function markNotified(a: AlertRecord, receiver: string, atMs: number): void {
  a.notifiedAtMs = { ...a.notifiedAtMs, [receiver]: atMs };
}

/**
 * Moves `a`'s lastNotifiedMs, the latest of its receivers' times, on to `atMs`. A configured receiver (of
 * `receivers`) with no time of its own, as in a record of an earlier release, counted its repeat from
 * lastNotifiedMs: it keeps that time, so a notification to another receiver alone does not move its repeat.
 */
export function noteLastNotified(a: AlertRecord, receivers: readonly string[], atMs: number): void {
  const last = a.lastNotifiedMs;
  if (last !== null) for (const r of receivers) if (a.notifiedAtMs?.[r] === undefined) markNotified(a, r, last);
  a.lastNotifiedMs = Math.max(last ?? -Infinity, atMs);
}

/** One firing notification of `a` to `receiver`, marked as its receiver's latest. */
function notifyFiring(a: AlertRecord, receiver: string, now: number): Notification {
  markNotified(a, receiver, now);
  return notification(a, receiver, 'firing', now);
}

/** Adds an alert to `upsert` once, so it is saved with the notifications planned for it. */
function toucher(upsert: AlertRecord[]): (a: AlertRecord) => void {
  const touched = new Set(upsert);
  return (a) => {
    if (touched.has(a)) return;
    touched.add(a);
    upsert.push(a);
  };
}

/** Kinds of rules whose alert on a hook resolves when the hook goes over the cap: a `persisted` rule takes it over. */
const SUPERSEDED_BY_PERSISTED: ReadonlySet<RuleKind> = new Set(['headroom', 'growth']);

/**
 * The rules an evaluation reads, in the order it reads them: those `due` (every rule on the timer, on ingest those
 * its batches triggered) and, with a headroom or growth rule, every `persisted` rule, after the others.
 * markSuperseded needs the hook's persisted alert firing in the very evaluation where its headroom or growth alert
 * resolves; a read made later sees at least what an earlier one saw, so a persisted rule read after them counts any
 * output over the cap that made them resolve: one stored while the evaluation ran, or one whose batch triggered
 * nothing of this evaluation (stored after it took its rules, or on another replica whose signal is on its way).
 */
export function rulesToRead<R extends { kind: RuleKind }>(rules: readonly R[], due: (rule: R) => boolean): R[] {
  const supersedable = rules.some((r) => due(r) && SUPERSEDED_BY_PERSISTED.has(r.kind));
  const read = rules.filter((r) => due(r) || (supersedable && r.kind === 'persisted'));
  return [...read.filter((r) => r.kind !== 'persisted'), ...read.filter((r) => r.kind === 'persisted')];
}

/**
 * Marks the headroom and growth alerts resolving in this evaluation while their hook has an active `persisted`
 * alert: they resolved because the hook got worse, not better. Their resolution keeps Alertmanager's status
 * (receivers close what they opened) but says so: a `superseded_by` annotation (the persisted rule's name) and a
 * summary that begins with "Superseded", so nobody reads an all-clear beside the persisted alert that fires for
 * the same hook. Rules are told apart by kind, not name: `kindOf` gives the kind of a configured rule's name
 * (a rule named `near_cap` is a headroom rule), undefined for a rule no longer configured.
 */
export function markSuperseded(active: readonly AlertRecord[], transitions: readonly Transition[], kindOf: (rule: string) => RuleKind | undefined): void {
  for (const t of transitions) {
    const a = t.alert;
    const kind = kindOf(a.rule);
    if (t.to !== 'resolved' || kind === undefined || !SUPERSEDED_BY_PERSISTED.has(kind) || a.hookId === null) continue;
    const by = supersedes(active, a.hookId, kindOf);
    if (!by) continue;
    a.annotations = {
      ...a.annotations,
      summary: `Superseded: the hook went over the cap (alert ${by.rule} is firing). ${a.annotations['summary'] ?? ''}`.trimEnd(),
      superseded_by: by.rule,
    };
  }
}

/**
 * The alert that supersedes the headroom and growth alerts of hook `hookId`: a firing `persisted` alert of it. Firing,
 * not pending: a persisted alert that clears before its `for` never tells anyone the hook went over, so until it
 * fires they are held (rules.ts Candidate.overCap), never resolved.
 */
export function supersedes(active: readonly AlertRecord[], hookId: string, kindOf: (rule: string) => RuleKind | undefined): AlertRecord | undefined {
  return active.find((x) => kindOf(x.rule) === 'persisted' && x.state === 'firing' && x.hookId === hookId);
}

/** One notification of `a` to one receiver. */
export function notification(a: AlertRecord, receiver: string, status: 'firing' | 'resolved', now: number): Notification {
  // Derived from the alert episode, the transition and the receiver: stable across retries and restarts.
  const webhookId = 'msg_' + createHash('sha256').update(`${a.id}|${status}|${a.notifySeq}|${receiver}`).digest('base64url').slice(0, 27);
  const first = firstEventMs(a);
  return {
    webhookId,
    receiver,
    status,
    createdAtMs: now,
    alert: {
      id: a.id, fingerprint: a.fingerprint, rule: a.rule, labels: a.labels, annotations: a.annotations, hookId: a.hookId,
      startsAt: formatRfc3339(a.startsAtMs ?? a.activeAtMs),
      endsAt: formatRfc3339OrNull(a.endsAtMs),
      firstEventAt: formatRfc3339OrNull(first),
    },
  };
}
