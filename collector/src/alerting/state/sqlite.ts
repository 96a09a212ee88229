/**
 * Alert state in SQLite, for a single process: the AlertStateStore contract (store.ts) on its own connection to
 * the store's database file. There is one process and so no fencing: the epoch arguments are accepted and ignored.
 */
import { statSync } from 'node:fs';
import type { DatabaseSync } from 'node:sqlite';
import { isInMemory } from '../../store/settings.ts';
import { Statements, classifySqliteError, inTransaction, openSqlite } from '../../store/sqlite/database.ts';
import type { Notification, NotificationOutcome } from '../../notify/model.ts';
import type { AlertRecord, SilenceRecord, StateChanges, StoredAttempt } from '../model.ts';
import { MAX_ATTEMPTS_PER_ALERT, notifiedAlertIds, SUPERSEDED_REASON, supersededNotification, type AlertStateStore, type LatestNotification, type LoadedState } from './store.ts';

/** The latest attempt of each listed alert (a JSON array) to each receiver, through alert_attempts_alert. */
export const SQLITE_LAST_ATTEMPTS = `SELECT data FROM alert_attempts WHERE id IN (
  SELECT MAX(id) FROM alert_attempts WHERE alert_id IN (SELECT value FROM json_each(?)) GROUP BY alert_id, json_extract(data, '$.receiver'))`;

/**
 * Receivers each listed alert's firing was notified to (store.ts, firingReceivers); both parameters the JSON array.
 * `outcomes`: the finished notifications and attempts that count, beside the notifications still in the outbox.
 */
function sqliteFiringReceivers(outcomes: string): string {
  return `SELECT alert_id, json_extract(data, '$.receiver') AS receiver FROM alert_notifications
  WHERE alert_id IN (SELECT value FROM json_each(?)) AND json_extract(data, '$.status') = 'firing' AND (done IS NULL OR done IN (${outcomes}))
  UNION SELECT alert_id, json_extract(data, '$.receiver') FROM alert_attempts
  WHERE alert_id IN (SELECT value FROM json_each(?)) AND json_extract(data, '$.status') = 'firing' AND json_extract(data, '$.outcome') IN (${outcomes})`;
}
export const SQLITE_FIRING_RECEIVERS = sqliteFiringReceivers(`'delivered', 'failed'`);
/** The same, leaving out what was given up on (firingReceivers with `givenUp: false`). */
export const SQLITE_FIRING_RECEIVERS_HEARD = sqliteFiringReceivers(`'delivered'`);

/**
 * Each listed alert's (a JSON array) latest notification to each receiver (store.ts, latestNotifications), through
 * alert_notifications_alert: a resolution made at the time of a firing follows it; one given up on without a time
 * recorded was given up on when made.
 */
export const SQLITE_LATEST_NOTIFICATIONS = `SELECT alert_id, receiver, status, created_at, CASE WHEN done = 'failed' THEN COALESCE(given_up_at, created_at) END AS given_up_at
  FROM (SELECT alert_id, created_at, done, json_extract(data, '$.receiver') AS receiver, json_extract(data, '$.status') AS status, json_extract(data, '$.givenUpAtMs') AS given_up_at,
    ROW_NUMBER() OVER (PARTITION BY alert_id, json_extract(data, '$.receiver') ORDER BY created_at DESC, json_extract(data, '$.status') = 'resolved' DESC, webhook_id DESC) AS nth
    FROM alert_notifications WHERE alert_id IN (SELECT value FROM json_each(?)))
  WHERE nth = 1`;

/** Marks dropped, with SUPERSEDED_REASON, the outbox's notifications a newer one supersedes (store.ts). */
export const SQLITE_DROP_SUPERSEDED = `UPDATE alert_notifications AS n SET done = 'dropped', data = json_set(n.data, '$.droppedReason', ?)
  WHERE n.done IS NULL AND ${supersededNotification((table, name) => `json_extract(${table}.data, '$.${name}')`)}`;

/**
 * SQLite implementation: its own connection to the store's database file (WAL lets both coexist). When the file
 * at the path is no longer the one it opened (the store wrote a deleted file back, or the file was replaced), it
 * follows before its next read or write; otherwise it would go on writing into the lost file, and every alert
 * and silence from then on would be gone at the next restart. Failures are classified as the store classifies
 * them: a locked, unwritable, full, corrupt or missing file is StoreUnavailableError (503 with Retry-After).
 */
export class SqliteAlertStateStore implements AlertStateStore {
  private readonly path: string;
  private db: DatabaseSync;
  private sql: Statements;
  private file: { ino: number; dev: number } | undefined;
  private closed = false;
  /** After a reopen failed: its error, and when the next may be tried (each try may wait 5 s on a lock). */
  private reopenFailed: { err: unknown; retryAtMs: number } | undefined;
  private readonly retryMs: number;

  /** `retryMs`: how long after a failed reopen calls fail at once before the file is tried again. */
  constructor(path: string, opts: { retryMs?: number } = {}) {
    this.path = path;
    this.retryMs = opts.retryMs ?? 5_000;
    const { db, file } = this.open();
    this.db = db;
    this.sql = new Statements(db);
    this.file = file;
  }

  /**
   * A connection with the tables in place, and the identity of the file it opened. Nothing is kept when any step
   * fails: the caller still holds its previous connection and tries again on its next read or write.
   */
  private open(): { db: DatabaseSync; file: { ino: number; dev: number } | undefined } {
    // Always synchronous=FULL: a committed alert state must survive power loss, or a restart notifies again.
    const db = openSqlite(this.path, 'full');
    try {
      const file = this.identity();
      this.createTables(db);
      return { db, file };
    } catch (err) {
      try {
        db.close();
      } catch {
        // Closing a connection that failed is best effort; the error that matters is the one thrown.
      }
      throw err;
    }
  }

  private createTables(db: DatabaseSync): void {
    db.exec(`
      CREATE TABLE IF NOT EXISTS alert_instances (id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, state TEXT NOT NULL, data TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS alert_silences (id TEXT PRIMARY KEY, ends_at INTEGER NOT NULL, data TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS alert_notifications (webhook_id TEXT PRIMARY KEY, alert_id TEXT NOT NULL, created_at INTEGER NOT NULL, done TEXT, data TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS alert_notifications_pending ON alert_notifications (done, created_at);
      CREATE INDEX IF NOT EXISTS alert_notifications_alert ON alert_notifications (alert_id);
      CREATE TABLE IF NOT EXISTS alert_attempts (id INTEGER PRIMARY KEY, alert_id TEXT NOT NULL, at INTEGER NOT NULL, data TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS alert_attempts_alert ON alert_attempts (alert_id, id);
    `);
  }

  private identity(): { ino: number; dev: number } | undefined {
    if (isInMemory(this.path)) return undefined;
    try {
      const st = statSync(this.path);
      return { ino: st.ino, dev: st.dev };
    } catch {
      return undefined;
    }
  }

  /**
   * Reopens on the file now at the path when it is another one. While the path is empty (the file deleted and not
   * yet written back) it keeps writing into the open file: the store's recovery copies that file, with these rows.
   */
  private current(): Statements {
    const opened = this.file;
    const now = opened ? this.identity() : undefined;
    if (opened && now && (now.ino !== opened.ino || now.dev !== opened.dev)) {
      // Opened first: if the file at the path cannot be used yet, this read or write fails and a later one tries
      // again, instead of every later one failing on a connection already closed. Not on every call: a try may
      // wait SQLite's 5 s for a lock on the event loop, so for retryMs after a failure calls fail at once.
      if (this.reopenFailed && Date.now() < this.reopenFailed.retryAtMs) throw this.reopenFailed.err;
      let next: { db: DatabaseSync; file: { ino: number; dev: number } | undefined };
      try {
        next = this.open();
      } catch (err) {
        this.reopenFailed = { err, retryAtMs: Date.now() + this.retryMs };
        throw err;
      }
      this.reopenFailed = undefined;
      try {
        this.db.close();
      } catch {
        // The lost file's connection: nothing more is read from it.
      }
      this.db = next.db;
      this.sql = new Statements(next.db);
      this.file = next.file;
    }
    return this.sql;
  }

  /** Runs a read or write on the current connection; a failure is classified as the store classifies it. */
  private guard<T>(fn: (sql: Statements) => T): T {
    try {
      return fn(this.current());
    } catch (err) {
      throw classifySqliteError(err, `alert state (${this.path})`);
    }
  }

  async load(opts: { outbox?: boolean } = {}): Promise<LoadedState> {
    const { alerts, outbox } = this.guard((sql) => {
      if (opts.outbox !== false) sql.get(SQLITE_DROP_SUPERSEDED).run(SUPERSEDED_REASON);
      return {
        alerts: (sql.get('SELECT data FROM alert_instances').all() as { data: string }[]).map((r) => JSON.parse(r.data) as AlertRecord),
        outbox: opts.outbox === false ? [] : (sql.get('SELECT data FROM alert_notifications WHERE done IS NULL ORDER BY created_at, webhook_id').all() as { data: string }[]).map((r) => JSON.parse(r.data) as Notification),
      };
    });
    const latest = opts.outbox === false ? [] : await this.latestNotifications(notifiedAlertIds(alerts));
    return { alerts, silences: await this.silences(), outbox, latest };
  }

  async silences(): Promise<SilenceRecord[]> {
    return this.guard((sql) => (sql.get('SELECT data FROM alert_silences').all() as { data: string }[]).map((r) => JSON.parse(r.data) as SilenceRecord));
  }

  async save(changes: StateChanges): Promise<void> {
    if (changes.upsert.length === 0 && changes.remove.length === 0 && changes.notifications.length === 0) return;
    this.guard((sql) => {
      const upsert = sql.get('INSERT INTO alert_instances (id, fingerprint, state, data) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET state = excluded.state, data = excluded.data');
      const remove = sql.get('DELETE FROM alert_instances WHERE id = ?');
      const removeAttempts = sql.get('DELETE FROM alert_attempts WHERE alert_id = ?');
      const removeDone = sql.get('DELETE FROM alert_notifications WHERE alert_id = ? AND done IS NOT NULL');
      const notify = sql.get('INSERT INTO alert_notifications (webhook_id, alert_id, created_at, done, data) VALUES (?, ?, ?, NULL, ?) ON CONFLICT (webhook_id) DO NOTHING');
      inTransaction(this.db, () => {
        for (const a of changes.upsert) upsert.run(a.id, a.fingerprint, a.state, JSON.stringify(a));
        for (const id of changes.remove) {
          remove.run(id);
          removeAttempts.run(id);
          removeDone.run(id);
        }
        for (const n of changes.notifications) notify.run(n.webhookId, n.alert.id, n.createdAtMs, JSON.stringify(n));
      });
    });
  }

  async finishNotification(webhookId: string, outcome: NotificationOutcome, _epoch?: number | null, atMs?: number): Promise<void> {
    this.guard((sql) => {
      if (outcome === 'failed' && atMs !== undefined) sql.get("UPDATE alert_notifications SET done = ?, data = json_set(data, '$.givenUpAtMs', ?) WHERE webhook_id = ?").run(outcome, atMs, webhookId);
      else sql.get('UPDATE alert_notifications SET done = ? WHERE webhook_id = ?').run(outcome, webhookId);
    });
  }

  async addAttempt(a: StoredAttempt): Promise<void> {
    this.guard((sql) => {
      sql.get('INSERT INTO alert_attempts (alert_id, at, data) VALUES (?, ?, ?)').run(a.alertId, a.atMs, JSON.stringify(a));
      sql.get(`DELETE FROM alert_attempts WHERE alert_id = ? AND id NOT IN (SELECT id FROM alert_attempts WHERE alert_id = ? ORDER BY id DESC LIMIT ${MAX_ATTEMPTS_PER_ALERT})`).run(a.alertId, a.alertId);
    });
  }

  async lastAttempts(alertIds: readonly string[]): Promise<StoredAttempt[]> {
    if (alertIds.length === 0) return [];
    return this.guard((sql) => (sql.get(SQLITE_LAST_ATTEMPTS).all(JSON.stringify(alertIds)) as { data: string }[]).map((r) => JSON.parse(r.data) as StoredAttempt));
  }

  async firingReceivers(alertIds: readonly string[], opts: { givenUp?: boolean } = {}): Promise<{ alertId: string; receiver: string }[]> {
    if (alertIds.length === 0) return [];
    const ids = JSON.stringify(alertIds);
    const query = opts.givenUp === false ? SQLITE_FIRING_RECEIVERS_HEARD : SQLITE_FIRING_RECEIVERS;
    return this.guard((sql) => (sql.get(query).all(ids, ids) as { alert_id: string; receiver: string }[]).map((r) => ({ alertId: r.alert_id, receiver: r.receiver })));
  }

  async latestNotifications(alertIds: readonly string[]): Promise<LatestNotification[]> {
    if (alertIds.length === 0) return [];
    const rows = this.guard((sql) => sql.get(SQLITE_LATEST_NOTIFICATIONS).all(JSON.stringify(alertIds)) as { alert_id: string; receiver: string; status: LatestNotification['status']; created_at: number; given_up_at: number | null }[]);
    return rows.map((r) => ({ alertId: r.alert_id, receiver: r.receiver, status: r.status, createdAtMs: r.created_at, givenUpAtMs: r.given_up_at }));
  }

  async attempts(alertId: string): Promise<StoredAttempt[]> {
    return this.guard((sql) => (sql.get('SELECT data FROM alert_attempts WHERE alert_id = ? ORDER BY id').all(alertId) as { data: string }[]).map((r) => JSON.parse(r.data) as StoredAttempt));
  }

  async putSilence(s: SilenceRecord): Promise<void> {
    this.guard((sql) => sql.get('INSERT INTO alert_silences (id, ends_at, data) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET ends_at = excluded.ends_at, data = excluded.data').run(s.id, s.endsAtMs, JSON.stringify(s)));
  }

  async prune(beforeMs: number): Promise<void> {
    this.guard((sql) => {
      sql.get('DELETE FROM alert_silences WHERE ends_at < ?').run(beforeMs);
      sql.get('DELETE FROM alert_notifications WHERE done IS NOT NULL AND created_at < ?').run(beforeMs);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }
}
