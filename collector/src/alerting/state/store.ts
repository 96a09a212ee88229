/**
 * Where alert state survives restarts: alert instances, silences, the notification outbox and delivery attempts.
 * A restart neither loses a firing alert nor notifies it again before repeat_interval, and a notification that
 * was created but not delivered is resumed with the same webhook-id. One interface, one implementation per store
 * backend beside it: `sqlite.ts` (a single process) and `postgres.ts` (replicas sharing one database, every
 * leader write fenced by the lease epoch).
 */
import type { Notification, NotificationOutcome } from '../../notify/model.ts';
import type { AlertRecord, SilenceRecord, StateChanges, StoredAttempt } from '../model.ts';

export interface LoadedState {
  alerts: AlertRecord[];
  silences: SilenceRecord[];
  /**
   * Notifications created but neither delivered nor given up on, oldest first. One that a newer notification of its
   * alert to its receiver supersedes is not among them: it is recorded as dropped (SUPERSEDED_REASON).
   */
  outbox: Notification[];
  /**
   * With the outbox: each receiver's latest notification of the alerts loaded (latestNotifications), read in the
   * same load, so a load that hands out the outbox never leaves it behind for want of this. Read at every load that
   * asks for the outbox, also one that does not hand it out again (a second load in one leadership): the caller
   * replaces what it knew of the deliveries with it.
   */
  latest: LatestNotification[];
}

/**
 * Persistence of the alerting state. `epoch` is a fencing token: the lease epoch the caller's work started under.
 * A shared implementation refuses a leader write (NotLeaderError) once the lease has moved past it; a single
 * process ignores it. Absent, the current epoch is used.
 */
export interface AlertStateStore {
  /** `outbox: false` reads alerts and silences only (a follower answering the API), without `latest` either. */
  load(opts?: { outbox?: boolean }): Promise<LoadedState>;
  /** The silences alone (read by the leader at every evaluation when state is shared). */
  silences(): Promise<SilenceRecord[]>;
  /** Writes one evaluation's changes atomically; `epoch` is the fencing token the evaluation ran under. */
  save(changes: StateChanges, epoch?: number | null): Promise<void>;
  /**
   * Marks a notification finished (delivered, given up on, or dropped with its receiver); `epoch` as for save. One
   * given up on keeps when, `atMs` (latestNotifications).
   */
  finishNotification(webhookId: string, outcome: NotificationOutcome, epoch?: number | null, atMs?: number): Promise<void>;
  addAttempt(a: StoredAttempt, epoch?: number | null): Promise<void>;
  /** Shared state only: true while `epoch` is the current lease and the notification is still undelivered. */
  confirmDelivery?(epoch: number, webhookId: string): Promise<boolean>;
  attempts(alertId: string): Promise<StoredAttempt[]>;
  /**
   * The latest attempt of each of these alerts to each receiver: only the alerts asked for (those the API lists),
   * read through the attempts' alert index, never the whole table, which holds every alert in retention.
   */
  lastAttempts(alertIds: readonly string[]): Promise<StoredAttempt[]>;
  /**
   * Which receivers each of these alerts' firing was notified to: a firing notification still in the outbox,
   * delivered or given up on (not one dropped with its receiver), or a firing attempt that delivered or gave up
   * (kept after the finished notification is pruned). Read once a start or a new leadership loads the state.
   * `givenUp: false` leaves out what was given up on: the receivers that had the firing or may still have it (read
   * for the alerts that resolve, whose resolution goes to them only).
   */
  firingReceivers(alertIds: readonly string[], opts?: { givenUp?: boolean }): Promise<{ alertId: string; receiver: string }[]>;
  /**
   * The latest notification of each of these alerts to each receiver (of a resolved alert, its resolution when one
   * was made), and when it was given up on: what the engine sends again a group_interval later, read once a start
   * or a new leadership loads the state. Through the outbox's alert index, as firingReceivers.
   */
  latestNotifications(alertIds: readonly string[]): Promise<LatestNotification[]>;
  /**
   * Shared state only: the next load with the outbox hands it out again, even at the epoch it was handed out at
   * (a leadership that lapsed, a save whose outcome is unknown).
   */
  forgetOutbox?(): void;
  /** Silences come from the API on any replica: never fenced. */
  putSilence(s: SilenceRecord): Promise<void>;
  /** Deletes silences expired before `beforeMs` and finished notifications created before it. */
  prune(beforeMs: number): Promise<void>;
  close(): Promise<void>;
}

/** A receiver's latest notification of an alert (AlertStateStore.latestNotifications). */
export interface LatestNotification {
  alertId: string;
  receiver: string;
  status: Notification['status'];
  createdAtMs: number;
  /**
   * When it was given up on; null while it may still be delivered, once delivered, or dropped with its receiver.
   * One given up on by a release that did not record when: its creation time.
   */
  givenUpAtMs: number | null;
}

/** Decides whether this replica evaluates and notifies: replicas on one PostgreSQL hold a lease (store/postgres/lease.ts). */
export interface LeaderElector {
  isLeader(): boolean;
  /** The lease's fencing token while leader, else null (absent: a single process, no fencing). */
  epoch?(): number | null;
}

/** The single-replica default: always the leader. */
export const alwaysLeader: LeaderElector = { isLeader: () => true };

/** Most attempts kept per alert: a receiver down for days must not grow the table without bound. */
export const MAX_ATTEMPTS_PER_ALERT = 200;

/**
 * Why a notification left in the outbox is dropped instead of resumed: a newer one of its alert to its receiver
 * exists (see supersededNotification). Kept in the notification beside its outcome (`dropped`).
 */
export const SUPERSEDED_REASON = 'superseded by a newer notification of its alert to its receiver';

/**
 * The SQL condition (over alert_notifications as `n`) true when a newer notification of n's alert to n's receiver
 * exists: made later, or at the same time as a resolution that follows a firing (the order of latestNotifications).
 * Such a notification left undelivered in the outbox (delivered but its outcome not recorded, or cut off by a
 * crash) is never resumed: a firing sent after the resolution that followed it would leave the alert open at the
 * receiver, and a repeat after a newer one tells nothing. `field(table, name)` reads a field of a row's data, as
 * each database spells it. Through alert_notifications_alert.
 */
export function supersededNotification(field: (table: 'n' | 'm', name: 'receiver' | 'status') => string): string {
  return `EXISTS (SELECT 1 FROM alert_notifications m WHERE m.alert_id = n.alert_id AND ${field('m', 'receiver')} = ${field('n', 'receiver')}
    AND (m.created_at > n.created_at OR (m.created_at = n.created_at AND ${field('n', 'status')} = 'firing' AND ${field('m', 'status')} = 'resolved')))`;
}

/** The alerts among `alerts` that may have had notifications: all but the pending ones. */
export function notifiedAlertIds(alerts: readonly AlertRecord[]): string[] {
  return alerts.filter((a) => a.state !== 'pending').map((a) => a.id);
}
