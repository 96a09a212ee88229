/** The alerting domain: alert instances, silences and what the state store keeps of them. */
import type { SilenceMatcher } from '../../../shared/src/api.ts';
import type { AlertIdentity, AlertState, Notification } from '../notify/model.ts';

/** One alert instance: one episode of one label set (a new episode gets a new id, the same fingerprint). */
export interface AlertRecord extends AlertIdentity {
  state: AlertState;
  hookId: string | null;
  activeAtMs: number;
  startsAtMs: number | null;
  endsAtMs: number | null;
  /**
   * When the evidence this episode was raised on begins: the earliest of its late outputs (annotation
   * `first_event_time`) it was ever raised on and of the evidence in the rule's window when it became active (to
   * the bucket of the chart its link opens on), kept once they leave the window so its links still reach back to
   * them; null when neither is known. Absent in a record an earlier release wrote: its annotations tell then.
   */
  firstEventMs?: number | null;
  /** Last evaluation at which the condition held (for keep_firing_for). */
  lastActiveMs: number;
  /**
   * True when lastActiveMs was saved while the condition still held: later evaluations may have found it holding
   * without saving (at most ACTIVE_SAVE_INTERVAL_MS later, see lifecycle.ts), so a restart reads it as a lower
   * bound. False once the time is final (saved when the condition was first found absent). Absent in records of
   * the previous release, which saved it only while the condition held: read as true.
   */
  lastActiveProvisional?: boolean;
  /** Last firing notification to any receiver: when delivered (until one is, created); null when none. */
  lastNotifiedMs: number | null;
  /**
   * The same per receiver: repeat_interval counts from it, as Alertmanager keeps the repeat per receiver (one
   * notified again after it was given up on does not move the others' repeat). Absent for a receiver not notified
   * yet, and in a record of an earlier release: lastNotifiedMs counts then, and is kept as its time once
   * lastNotifiedMs moves on (noteLastNotified).
   */
  notifiedAtMs?: Record<string, number>;
  /** A firing notification went out in this episode, so its resolution is notified too. */
  notifiedFiring: boolean;
  /** Notifications created for this alert (part of each webhook-id). */
  notifySeq: number;
}

/** A silence: mutes notifications of alerts whose labels match every matcher, from startsAt to endsAt. */
export interface SilenceRecord {
  id: string;
  matchers: SilenceMatcher[];
  startsAtMs: number;
  endsAtMs: number;
  createdBy: string;
  comment: string;
  createdAtMs: number;
}

/** A delivery attempt as stored (the API's DeliveryAttempt plus its alert). */
export interface StoredAttempt {
  alertId: string;
  receiver: string;
  webhookId: string;
  attempt: number;
  atMs: number;
  status: 'firing' | 'resolved';
  outcome: 'delivered' | 'retrying' | 'failed';
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
}

/** One evaluation's changes, written in one transaction. */
export interface StateChanges {
  upsert: AlertRecord[];
  /** Ids of records to forget (pending alerts that cleared, resolved ones past retention). */
  remove: string[];
  /** New notifications (the outbox): delivered at least once, each with a stable webhook-id. */
  notifications: Notification[];
}

export type { Notification };
