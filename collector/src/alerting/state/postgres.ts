/**
 * Alert state on PostgreSQL, shared by every replica: alert instances, silences, the notification outbox and
 * delivery attempts (the AlertStateStore contract of store.ts, as sqlite.ts beside it). Writes of an evaluation
 * are fenced by the leader lease: a replica that lost the lease (paused, partitioned) cannot commit alerts or
 * notifications, so a takeover never produces a second notification for the same transition.
 */
import type pg from 'pg';
import type { Notification, NotificationOutcome } from '../../notify/model.ts';
import { inTransaction } from '../../store/postgres/connection.ts';
import { checkFence, type LeaseFence } from '../../store/postgres/fence.ts';
import { NotLeaderError, StoreUnavailableError } from '../../store/store.ts';
import type { AlertRecord, SilenceRecord, StateChanges, StoredAttempt } from '../model.ts';
import { MAX_ATTEMPTS_PER_ALERT, notifiedAlertIds, SUPERSEDED_REASON, supersededNotification, type AlertStateStore, type LatestNotification, type LoadedState } from './store.ts';

/** The latest attempt of each listed alert ($1, an array) to each receiver, through alert_attempts_alert. */
export const POSTGRES_LAST_ATTEMPTS = `SELECT data FROM alert_attempts WHERE id IN (
  SELECT MAX(id) FROM alert_attempts WHERE alert_id = ANY($1::text[]) GROUP BY alert_id, data->>'receiver')`;

/**
 * Receivers each listed alert's ($1, an array) firing was notified to (store.ts, firingReceivers). `outcomes`: the
 * finished notifications and attempts that count, beside the notifications still in the outbox.
 */
function postgresFiringReceivers(outcomes: string): string {
  return `SELECT alert_id, data->>'receiver' AS receiver FROM alert_notifications
  WHERE alert_id = ANY($1::text[]) AND data->>'status' = 'firing' AND (done IS NULL OR done IN (${outcomes}))
  UNION SELECT alert_id, data->>'receiver' FROM alert_attempts
  WHERE alert_id = ANY($1::text[]) AND data->>'status' = 'firing' AND data->>'outcome' IN (${outcomes})`;
}
export const POSTGRES_FIRING_RECEIVERS = postgresFiringReceivers(`'delivered', 'failed'`);
/** The same, leaving out what was given up on (firingReceivers with `givenUp: false`). */
export const POSTGRES_FIRING_RECEIVERS_HEARD = postgresFiringReceivers(`'delivered'`);

/**
 * Each listed alert's ($1, an array) latest notification to each receiver (store.ts, latestNotifications), through
 * alert_notifications_alert: as SQLITE_LATEST_NOTIFICATIONS.
 */
export const POSTGRES_LATEST_NOTIFICATIONS = `SELECT alert_id, receiver, status, created_at, CASE WHEN done = 'failed' THEN COALESCE(given_up_at, created_at) END AS given_up_at
  FROM (SELECT alert_id, created_at, done, data->>'receiver' AS receiver, data->>'status' AS status, (data->>'givenUpAtMs')::bigint AS given_up_at,
    ROW_NUMBER() OVER (PARTITION BY alert_id, data->>'receiver' ORDER BY created_at DESC, data->>'status' = 'resolved' DESC, webhook_id DESC) AS nth
    FROM alert_notifications WHERE alert_id = ANY($1::text[])) latest
  WHERE nth = 1`;

/** Marks dropped, with SUPERSEDED_REASON ($1), the outbox's notifications a newer one supersedes (store.ts). */
export const POSTGRES_DROP_SUPERSEDED = `UPDATE alert_notifications n SET done = 'dropped', data = n.data || jsonb_build_object('droppedReason', $1::text)
  WHERE n.done IS NULL AND ${supersededNotification((table, name) => `${table}.data->>'${name}'`)}`;

/** AlertStateStore on the store's PostgreSQL pool (tables from the store's migrations, store/postgres/index.ts). */
export class PostgresAlertStateStore implements AlertStateStore {
  private readonly pool: pg.Pool;
  private readonly fence: LeaseFence | undefined;
  /** The lease epoch at which the outbox was last handed out: once per leadership, never to a follower. */
  private outboxEpoch: number | null = null;

  constructor(opts: { pool: pg.Pool; fence?: LeaseFence }) {
    this.pool = opts.pool;
    this.fence = opts.fence;
  }

  /**
   * Alerts and silences for anyone; undelivered notifications only for the leader, and only on the first load of
   * its leadership, so a notification is resumed by one replica once (followers would deliver it again). Those a
   * newer notification supersedes are marked dropped then, not handed out.
   */
  async load(opts: { outbox?: boolean } = {}): Promise<LoadedState> {
    const epoch = this.fence ? this.fence.epoch() : 0;
    const resume = opts.outbox !== false && epoch !== null && epoch !== this.outboxEpoch;
    let alerts, silences, outbox;
    try {
      // Not fenced, as prune: a notification superseded once stays superseded, so any leader marks the same ones.
      if (resume) await this.pool.query(POSTGRES_DROP_SUPERSEDED, [SUPERSEDED_REASON]);
      [alerts, silences, outbox] = await Promise.all([
        this.pool.query<{ data: AlertRecord }>('SELECT data FROM alert_instances'),
        this.pool.query<{ data: SilenceRecord }>('SELECT data FROM alert_silences'),
        resume ? this.pool.query<{ data: Notification }>('SELECT data FROM alert_notifications WHERE done IS NULL ORDER BY created_at, webhook_id') : Promise.resolve({ rows: [] as { data: Notification }[] }),
      ]);
    } catch (err) {
      // The API answers 503 for it, as for every read while PostgreSQL is away.
      throw unavailable(err);
    }
    const loaded = alerts.rows.map((r) => r.data);
    // Read before the outbox counts as handed out: a load that fails here hands it out again when retried. Read
    // also when the outbox is not handed out again (a second load in one leadership, as a start followed by the
    // reload of the leadership it found): the engine replaces what it knew of the deliveries with it.
    const latest = opts.outbox !== false ? await this.latestNotifications(notifiedAlertIds(loaded)) : [];
    if (resume) this.outboxEpoch = epoch;
    return { alerts: loaded, silences: silences.rows.map((r) => r.data), outbox: outbox.rows.map((r) => r.data), latest };
  }

  async silences(): Promise<SilenceRecord[]> {
    try {
      return (await this.pool.query<{ data: SilenceRecord }>('SELECT data FROM alert_silences')).rows.map((r) => r.data);
    } catch (err) {
      throw unavailable(err);
    }
  }

  /**
   * Leadership lapsed (the dispatcher dropped its queue): the next load as leader hands out the outbox again,
   * even at the same epoch (a leader whose renewal was late and that took the lease back unchallenged).
   */
  forgetOutbox(): void {
    this.outboxEpoch = null;
  }

  async save(changes: StateChanges, epoch?: number | null): Promise<void> {
    if (changes.upsert.length === 0 && changes.remove.length === 0 && changes.notifications.length === 0) return;
    await this.transaction(async (c) => {
      await this.checkFence(c, epoch);
      for (const a of changes.upsert) {
        await c.query(
          'INSERT INTO alert_instances (id, fingerprint, state, data) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO UPDATE SET state = excluded.state, data = excluded.data',
          [a.id, a.fingerprint, a.state, JSON.stringify(a)],
        );
      }
      if (changes.remove.length > 0) {
        await c.query('DELETE FROM alert_instances WHERE id = ANY($1::text[])', [changes.remove]);
        await c.query('DELETE FROM alert_attempts WHERE alert_id = ANY($1::text[])', [changes.remove]);
        await c.query('DELETE FROM alert_notifications WHERE alert_id = ANY($1::text[]) AND done IS NOT NULL', [changes.remove]);
      }
      for (const n of changes.notifications) {
        // The webhook-id is the key: a notification written twice (a retried evaluation) exists once.
        await c.query(
          'INSERT INTO alert_notifications (webhook_id, alert_id, created_at, done, data) VALUES ($1, $2, $3, NULL, $4) ON CONFLICT (webhook_id) DO NOTHING',
          [n.webhookId, n.alert.id, n.createdAtMs, JSON.stringify(n)],
        );
      }
    });
  }

  async finishNotification(webhookId: string, outcome: NotificationOutcome, epoch?: number | null, atMs?: number): Promise<void> {
    await this.transaction(async (c) => {
      // "Delivered" is recorded whoever sent it: the receiver has it, and forgetting that would make the next
      // leader send it again. Giving up (or dropping) is a leader's decision, so it is fenced like every other write.
      if (outcome !== 'delivered') await this.checkFence(c, epoch);
      if (outcome === 'failed' && atMs !== undefined) await c.query("UPDATE alert_notifications SET done = $1, data = data || jsonb_build_object('givenUpAtMs', $2::bigint) WHERE webhook_id = $3", [outcome, atMs, webhookId]);
      else await c.query('UPDATE alert_notifications SET done = $1 WHERE webhook_id = $2', [outcome, webhookId]);
    });
  }

  async addAttempt(a: StoredAttempt, epoch?: number | null): Promise<void> {
    await this.transaction(async (c) => {
      await this.checkFence(c, epoch);
      await c.query('INSERT INTO alert_attempts (alert_id, at, data) VALUES ($1, $2, $3)', [a.alertId, a.atMs, JSON.stringify(a)]);
      await c.query(
        `DELETE FROM alert_attempts WHERE alert_id = $1 AND id NOT IN (SELECT id FROM alert_attempts WHERE alert_id = $1 ORDER BY id DESC LIMIT ${MAX_ATTEMPTS_PER_ALERT})`,
        [a.alertId],
      );
    });
  }

  async lastAttempts(alertIds: readonly string[]): Promise<StoredAttempt[]> {
    if (alertIds.length === 0) return [];
    const r = await this.pool.query<{ data: StoredAttempt }>(POSTGRES_LAST_ATTEMPTS, [alertIds]);
    return r.rows.map((row) => row.data);
  }

  async firingReceivers(alertIds: readonly string[], opts: { givenUp?: boolean } = {}): Promise<{ alertId: string; receiver: string }[]> {
    if (alertIds.length === 0) return [];
    let r;
    try {
      r = await this.pool.query<{ alert_id: string; receiver: string }>(opts.givenUp === false ? POSTGRES_FIRING_RECEIVERS_HEARD : POSTGRES_FIRING_RECEIVERS, [alertIds]);
    } catch (err) {
      throw unavailable(err);
    }
    return r.rows.map((row) => ({ alertId: row.alert_id, receiver: row.receiver }));
  }

  async latestNotifications(alertIds: readonly string[]): Promise<LatestNotification[]> {
    if (alertIds.length === 0) return [];
    let r;
    try {
      r = await this.pool.query<{ alert_id: string; receiver: string; status: LatestNotification['status']; created_at: string; given_up_at: string | null }>(POSTGRES_LATEST_NOTIFICATIONS, [alertIds]);
    } catch (err) {
      throw unavailable(err);
    }
    return r.rows.map((row) => ({ alertId: row.alert_id, receiver: row.receiver, status: row.status, createdAtMs: Number(row.created_at), givenUpAtMs: row.given_up_at === null ? null : Number(row.given_up_at) }));
  }

  async attempts(alertId: string): Promise<StoredAttempt[]> {
    const r = await this.pool.query<{ data: StoredAttempt }>('SELECT data FROM alert_attempts WHERE alert_id = $1 ORDER BY id', [alertId]);
    return r.rows.map((x) => x.data);
  }

  async putSilence(s: SilenceRecord): Promise<void> {
    // Silences come from the API on any replica: not fenced.
    await this.run('INSERT INTO alert_silences (id, ends_at, data) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET ends_at = excluded.ends_at, data = excluded.data', [s.id, s.endsAtMs, JSON.stringify(s)]);
  }

  async prune(beforeMs: number): Promise<void> {
    // Not fenced: a deposed leader's bound (reckoned before its pause) only deletes rows any leader deletes too.
    await this.run('DELETE FROM alert_silences WHERE ends_at < $1', [beforeMs]);
    await this.run('DELETE FROM alert_notifications WHERE done IS NOT NULL AND created_at < $1', [beforeMs]);
  }

  /** The pool belongs to the store, which closes it. */
  async close(): Promise<void> {}

  /**
   * Asked before every delivery attempt: the lease is still this replica's at `epoch` (by the database clock) and
   * the notification is still undelivered. A deposed leader gets false and stops; its successor owns the delivery.
   */
  async confirmDelivery(epoch: number, webhookId: string): Promise<boolean> {
    if (!this.fence) return true;
    const r = await this.pool.query(
      `SELECT 1 FROM leader_lease l, alert_notifications n
       WHERE l.name = $1 AND l.holder = $2 AND l.epoch = $3 AND l.expires_at > now() AND n.webhook_id = $4 AND n.done IS NULL`,
      [this.fence.name, this.fence.holder, epoch, webhookId],
    );
    return r.rowCount === 1;
  }

  /** Every leader write carries a fencing token: the one given (the token its work started under), else the current one. */
  private async checkFence(c: pg.PoolClient, given?: number | null): Promise<void> {
    if (!this.fence) return;
    await checkFence(c, this.fence, given === undefined ? this.fence.epoch() : given, 'alert state not written');
  }

  private async run(sql: string, params: unknown[]): Promise<void> {
    try {
      await this.pool.query(sql, params);
    } catch (err) {
      throw unavailable(err);
    }
  }

  private async transaction(fn: (c: pg.PoolClient) => Promise<void>): Promise<void> {
    try {
      await inTransaction(this.pool, fn);
    } catch (err) {
      throw err instanceof NotLeaderError ? err : unavailable(err);
    }
  }
}

function unavailable(err: unknown): Error {
  // pg messages name tables and constraints, never the connection string.
  return new StoreUnavailableError(`alert state: ${(err as Error).message ?? String(err)}`);
}
