/**
 * The AlertStateStore contract, run against both implementations: a real SQLite file and a real PostgreSQL
 * (a throwaway cluster). Fencing by the lease is PostgreSQL's alone and tested in postgres.test.ts.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Notification } from '../../notify/model.ts';
import { PostgresStore } from '../../store/postgres/index.ts';
import { StoreUnavailableError } from '../../store/store.ts';
import { alertRecord } from '../../../test/support/alerting.ts';
import { startTestServer, type TestServer } from '../../../test/support/postgres/server.ts';
import type { AlertRecord, StoredAttempt } from '../model.ts';
import { POSTGRES_DROP_SUPERSEDED, POSTGRES_LAST_ATTEMPTS, POSTGRES_LATEST_NOTIFICATIONS, PostgresAlertStateStore } from './postgres.ts';
import { SQLITE_DROP_SUPERSEDED, SQLITE_FIRING_RECEIVERS, SQLITE_FIRING_RECEIVERS_HEARD, SQLITE_LAST_ATTEMPTS, SQLITE_LATEST_NOTIFICATIONS, SqliteAlertStateStore } from './sqlite.ts';
import { MAX_ATTEMPTS_PER_ALERT, SUPERSEDED_REASON, type AlertStateStore } from './store.ts';

let server: TestServer | undefined;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await server?.stop();
});

type NotificationRow = [webhookId: string, done: string | null, droppedReason: string | null];
/** Each backend's outbox rows as stored, by webhook-id: what no load hands out (notificationRows). */
const rowReaders = new WeakMap<AlertStateStore, () => Promise<NotificationRow[]>>();

const backends: [string, () => Promise<AlertStateStore>][] = [
  ['SQLite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-alert-state-'));
    const s = new SqliteAlertStateStore(join(dir, 'h.db'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => s.close());
    rowReaders.set(s, async () => {
      const db = new DatabaseSync(join(dir, 'h.db'), { readOnly: true });
      try {
        return (db.prepare("SELECT webhook_id, done, json_extract(data, '$.droppedReason') AS reason FROM alert_notifications ORDER BY webhook_id").all() as { webhook_id: string; done: string | null; reason: string | null }[])
          .map((r) => [r.webhook_id, r.done, r.reason]);
      } finally {
        db.close();
      }
    });
    return s;
  }],
  ['PostgreSQL', async () => {
    server ??= await startTestServer();
    const store = await PostgresStore.open({ url: await server.createDatabase(), poolSize: 2 });
    const s = new PostgresAlertStateStore({ pool: store.connectionPool });
    cleanups.push(() => store.close(), () => s.close());
    rowReaders.set(s, async () => (await store.connectionPool.query<{ webhook_id: string; done: string | null; reason: string | null }>(
      "SELECT webhook_id, done, data->>'droppedReason' AS reason FROM alert_notifications ORDER BY webhook_id",
    )).rows.map((r) => [r.webhook_id, r.done, r.reason]));
    return s;
  }],
];

async function notificationRows(s: AlertStateStore): Promise<NotificationRow[]> {
  return rowReaders.get(s)!();
}

function notification(a: AlertRecord, webhookId: string, createdAtMs = 3000): Notification {
  return { webhookId, receiver: 'r', status: 'firing', alert: a as unknown as Notification['alert'], createdAtMs };
}

function attempt(alertId: string, n: number): StoredAttempt {
  return { alertId, receiver: 'r', webhookId: 'msg_1', attempt: n, atMs: 3000 + n, status: 'firing', outcome: 'retrying', httpStatus: 503, error: 'HTTP 503', durationMs: 5 };
}

describe.each(backends)('AlertStateStore on %s', (_name, open) => {
  it('round-trips alerts, the outbox, attempts and silences', async () => {
    const s = await open();
    const a = alertRecord({ id: 'a1', state: 'firing' });
    await s.save({ upsert: [a, alertRecord({ id: 'a2', state: 'pending' })], remove: [], notifications: [notification(a, 'msg_1'), notification(a, 'msg_1')] });
    let loaded = await s.load();
    expect(loaded.alerts.map((x) => x.id).sort()).toEqual(['a1', 'a2']);
    expect(loaded.alerts.find((x) => x.id === 'a1')).toEqual(a);
    expect(loaded.outbox.map((n) => n.webhookId)).toEqual(['msg_1']);
    await s.finishNotification('msg_1', 'delivered');
    await s.addAttempt({ ...attempt('a1', 1), outcome: 'delivered', httpStatus: 200, error: null });
    await s.putSilence({ id: 's1', matchers: [], startsAtMs: 0, endsAtMs: 10, createdBy: 'x', comment: '', createdAtMs: 0 });
    loaded = await s.load();
    expect(loaded.outbox).toEqual([]);
    expect(loaded.silences.map((x) => x.id)).toEqual(['s1']);
    expect((await s.silences()).map((x) => x.id)).toEqual(['s1']);
    expect((await s.attempts('a1')).map((x) => x.httpStatus)).toEqual([200]);
    await s.save({ upsert: [], remove: ['a2'], notifications: [] });
    await s.prune(100);
    loaded = await s.load();
    expect(loaded.alerts.map((x) => x.id)).toEqual(['a1']);
    expect(loaded.silences).toEqual([]);
  });

  it('hands out the outbox oldest first, and reads without it when asked', async () => {
    const s = await open();
    const a = alertRecord({ id: 'a1' });
    const b = alertRecord({ id: 'a2' });
    await s.save({ upsert: [a, b], remove: [], notifications: [notification(b, 'msg_b', 5000), notification(a, 'msg_a', 4000)] });
    expect((await s.load({ outbox: false })).outbox).toEqual([]);
    expect((await s.load()).outbox.map((n) => n.webhookId)).toEqual(['msg_a', 'msg_b']);
  });

  it('drops, with why, the undelivered notifications a newer one of their alert to their receiver supersedes', async () => {
    const s = await open();
    const a = alertRecord({ id: 'a1', state: 'resolved' });
    const to = (receiver: string, webhookId: string, createdAtMs: number, status: 'firing' | 'resolved' = 'firing'): Notification => ({ ...notification(a, webhookId, createdAtMs), receiver, status });
    await s.save({ upsert: [a], remove: [], notifications: [
      // Delivered, but its outcome was never recorded; its resolution was delivered after it.
      to('ops', 'msg_1', 1000), to('ops', 'msg_2', 2000, 'resolved'),
      // A resolution made at the time of a firing follows it; both still open.
      to('tied', 'msg_3', 3000, 'resolved'), to('tied', 'msg_4', 3000),
      // A repeat given up on after the firing before it was left open.
      to('pager', 'msg_5', 1000), to('pager', 'msg_6', 5000),
      // Another receiver's newer notification supersedes nothing here.
      to('chat', 'msg_7', 1000),
    ] });
    await s.save({ upsert: [], remove: [], notifications: [{ ...notification(alertRecord({ id: 'b1' }), 'msg_8', 9000), receiver: 'chat' }] });
    await s.finishNotification('msg_2', 'delivered');
    await s.finishNotification('msg_6', 'failed', undefined, 6000);
    expect((await s.load({ outbox: false })).outbox).toEqual([]);
    const loaded = await s.load();
    expect(loaded.outbox.map((n) => n.webhookId)).toEqual(['msg_7', 'msg_3', 'msg_8']);
    // What the alert's receivers last had is unchanged: the dropped ones were never the latest.
    expect(loaded.latest.map((n) => [n.receiver, n.status, n.createdAtMs, n.givenUpAtMs]).sort()).toEqual([
      ['chat', 'firing', 1000, null], ['ops', 'resolved', 2000, null], ['pager', 'firing', 5000, 6000], ['tied', 'resolved', 3000, null],
    ]);
    // Recorded as dropped, and why, so no later load hands them out either.
    expect(await notificationRows(s)).toEqual([
      ['msg_1', 'dropped', SUPERSEDED_REASON], ['msg_2', 'delivered', null], ['msg_3', null, null], ['msg_4', 'dropped', SUPERSEDED_REASON],
      ['msg_5', 'dropped', SUPERSEDED_REASON], ['msg_6', 'failed', null], ['msg_7', null, null], ['msg_8', null, null],
    ]);
  });

  it('forgets the attempts and finished notifications of a removed alert, not its undelivered ones', async () => {
    const s = await open();
    const a = alertRecord({ id: 'gone', state: 'pending' });
    await s.save({ upsert: [a], remove: [], notifications: [notification(a, 'msg_done'), notification(a, 'msg_open')] });
    await s.finishNotification('msg_done', 'failed');
    await s.addAttempt(attempt('gone', 1));
    await s.save({ upsert: [], remove: ['gone'], notifications: [] });
    expect(await s.attempts('gone')).toEqual([]);
    const loaded = await s.load();
    expect(loaded.alerts).toEqual([]);
    expect(loaded.outbox.map((n) => n.webhookId)).toEqual(['msg_open']);
  });

  it(`keeps the newest ${MAX_ATTEMPTS_PER_ALERT} attempts per alert`, async () => {
    const s = await open();
    for (let n = 1; n <= MAX_ATTEMPTS_PER_ALERT + 3; n++) await s.addAttempt(attempt('a1', n));
    await s.addAttempt(attempt('a2', 1));
    const kept = await s.attempts('a1');
    expect(kept).toHaveLength(MAX_ATTEMPTS_PER_ALERT);
    expect([kept[0]?.attempt, kept.at(-1)?.attempt]).toEqual([4, MAX_ATTEMPTS_PER_ALERT + 3]);
    expect(await s.attempts('a2')).toHaveLength(1);
  });

  it('gives the latest attempt of each alert to each receiver', async () => {
    const s = await open();
    await s.addAttempt({ ...attempt('a1', 1), receiver: 'ops', outcome: 'retrying', httpStatus: 503 });
    await s.addAttempt({ ...attempt('a1', 1), receiver: 'chat', outcome: 'delivered', httpStatus: 200 });
    await s.addAttempt({ ...attempt('a1', 2), receiver: 'ops', outcome: 'failed', httpStatus: 404 });
    await s.addAttempt({ ...attempt('a2', 1), receiver: 'ops', outcome: 'delivered', httpStatus: 200 });
    const last = (await s.lastAttempts(['a1', 'a2', 'a3'])).map((a) => [a.alertId, a.receiver, a.outcome, a.httpStatus]).sort();
    expect(last).toEqual([['a1', 'chat', 'delivered', 200], ['a1', 'ops', 'failed', 404], ['a2', 'ops', 'delivered', 200]]);
    // Only the alerts asked for: the others' attempts are not read.
    expect((await s.lastAttempts(['a2'])).map((a) => [a.alertId, a.receiver])).toEqual([['a2', 'ops']]);
    expect(await s.lastAttempts([])).toEqual([]);
  });

  it('tells which receivers had each alert\'s firing, and without what was given up on those that had it or may still', async () => {
    const s = await open();
    const a = alertRecord({ id: 'a1', state: 'firing' });
    const to = (receiver: string, webhookId: string, status: 'firing' | 'resolved' = 'firing'): Notification => ({ ...notification(a, webhookId), receiver, status });
    await s.save({ upsert: [a], remove: [], notifications: [to('pending', 'msg_p'), to('delivered', 'msg_d'), to('refused', 'msg_f'), to('removed', 'msg_x'), to('resolution', 'msg_r', 'resolved')] });
    await s.finishNotification('msg_d', 'delivered');
    await s.finishNotification('msg_f', 'failed');
    await s.finishNotification('msg_x', 'dropped');
    await s.finishNotification('msg_r', 'delivered');
    // Attempts outlive their finished notification, pruned after a day.
    await s.addAttempt({ ...attempt('a1', 1), receiver: 'pruned-delivered', outcome: 'delivered', httpStatus: 200, error: null });
    await s.addAttempt({ ...attempt('a1', 1), receiver: 'pruned-failed', outcome: 'failed', httpStatus: 400, error: 'HTTP 400' });
    await s.addAttempt({ ...attempt('a1', 1), receiver: 'retrying' });
    const receivers = async (opts?: { givenUp?: boolean }): Promise<string[]> => (await s.firingReceivers(['a1', 'other'], opts)).map((r) => r.receiver).sort();
    expect(await receivers()).toEqual(['delivered', 'pending', 'pruned-delivered', 'pruned-failed', 'refused']);
    expect(await receivers({ givenUp: false })).toEqual(['delivered', 'pending', 'pruned-delivered']);
  });

  it('gives each alert\'s latest notification to each receiver, with when it was given up on', async () => {
    const s = await open();
    const a = alertRecord({ id: 'a1', state: 'resolved' });
    const to = (receiver: string, webhookId: string, createdAtMs: number, status: 'firing' | 'resolved' = 'firing'): Notification => ({ ...notification(a, webhookId, createdAtMs), receiver, status });
    await s.save({ upsert: [a], remove: [], notifications: [
      to('ops', 'msg_1', 1000), to('ops', 'msg_2', 2000, 'resolved'),
      to('chat', 'msg_3', 1000),
      to('pager', 'msg_4', 1000), to('pager', 'msg_5', 2000),
      // Given up on by a release that did not record when.
      to('old', 'msg_6', 1000),
      // Made in two evaluations at one time: the resolution follows the firing.
      to('tied', 'msg_7', 3000, 'resolved'), to('tied', 'msg_8', 3000),
      to('dropped', 'msg_9', 1000),
    ] });
    await s.save({ upsert: [], remove: [], notifications: [{ ...notification(alertRecord({ id: 'b1' }), 'msg_b'), receiver: 'ops' }] });
    await s.finishNotification('msg_1', 'delivered', undefined, 1100);
    await s.finishNotification('msg_2', 'failed', undefined, 2500);
    await s.finishNotification('msg_3', 'delivered', undefined, 1200);
    await s.finishNotification('msg_4', 'failed', undefined, 1500);
    await s.finishNotification('msg_6', 'failed');
    await s.finishNotification('msg_7', 'failed', undefined, 3500);
    await s.finishNotification('msg_9', 'dropped', undefined, 1300);
    await s.finishNotification('msg_b', 'failed', undefined, 3000);
    const latest = (await s.latestNotifications(['a1', 'other'])).map((n) => [n.alertId, n.receiver, n.status, n.createdAtMs, n.givenUpAtMs]).sort();
    expect(latest).toEqual([
      ['a1', 'chat', 'firing', 1000, null],
      ['a1', 'dropped', 'firing', 1000, null],
      ['a1', 'old', 'firing', 1000, 1000],
      ['a1', 'ops', 'resolved', 2000, 2500],
      ['a1', 'pager', 'firing', 2000, null],
      ['a1', 'tied', 'resolved', 3000, 3500],
    ]);
    expect(await s.latestNotifications([])).toEqual([]);
  });

  it('accepts any fencing token when nothing fences it (a single process, or no lease)', async () => {
    const s = await open();
    const a = alertRecord({ id: 'a1' });
    await s.save({ upsert: [a], remove: [], notifications: [notification(a, 'msg_1')] }, 7);
    await s.addAttempt(attempt('a1', 1), null);
    await s.finishNotification('msg_1', 'failed', 3);
    const loaded = await s.load();
    expect(loaded.alerts.map((x) => x.id)).toEqual(['a1']);
    expect(loaded.outbox).toEqual([]);
    expect(await s.attempts('a1')).toHaveLength(1);
  });
});

describe('SQLite alert state when the file at its path changes', () => {
  it('follows a file written back, and one it cannot use yet fails that call only, not every later one', { timeout: 20_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-alert-state-'));
    const path = join(dir, 'h.db');
    const s = new SqliteAlertStateStore(path, { retryMs: 300 });
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => s.close());
    await s.save({ upsert: [alertRecord({ id: 'before', state: 'firing' })], remove: [], notifications: [] });
    const descriptors = (): number => readdirSync('/proc/self/fd').length;
    const before = descriptors();
    // Another file at the path, locked by a writer for longer than the 5 s SQLite waits: the call that meets it fails...
    for (const f of [path, `${path}-wal`, `${path}-shm`]) rmSync(f, { force: true });
    const holder = new DatabaseSync(path);
    holder.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER); BEGIN IMMEDIATE');
    try {
      await expect(s.load()).rejects.toThrow(/locked|busy/i);
      // ...the calls right after it fail at once instead of waiting on the lock again...
      const t0 = performance.now();
      await expect(s.load()).rejects.toThrow(/locked|busy/i);
      expect(performance.now() - t0).toBeLessThan(1_000);
    } finally {
      holder.exec('COMMIT');
      holder.close();
    }
    // ...no connection is left open by the failed tries...
    expect(descriptors()).toBeLessThanOrEqual(before + 1);
    // ...and once the lock is gone, a call after retryMs opens that file and writes there.
    await new Promise((r) => setTimeout(r, 350));
    await s.save({ upsert: [alertRecord({ id: 'after', state: 'firing' })], remove: [], notifications: [] });
    expect((await s.load()).alerts.map((a) => a.id)).toEqual(['after']);
  });
});

describe('SQLite alert state when its file fails', () => {
  it('a locked file and a file that is not a database are StoreUnavailableError (503), as the store answers', { timeout: 20_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-alert-state-'));
    const path = join(dir, 'h.db');
    const s = new SqliteAlertStateStore(path, { retryMs: 0 });
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => s.close());
    await s.putSilence({ id: 's1', matchers: [{ name: 'hook_name', value: 'Stop', isRegex: false }], startsAtMs: 0, endsAtMs: 9e12, createdBy: 'me', comment: 'x', createdAtMs: 0 });
    const holder = new DatabaseSync(path);
    holder.exec('BEGIN IMMEDIATE');
    try {
      const locked = s.addAttempt(attempt('a1', 1));
      await expect(locked).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(locked).rejects.toThrow(/alert state .*locked/);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    // The file replaced by one that is not a database (a bad restore): every read and write says so.
    for (const f of [path, `${path}-wal`, `${path}-shm`]) rmSync(f, { force: true });
    writeFileSync(path, 'this is not a SQLite database, only text long enough to have a header page'.repeat(100));
    await expect(s.silences()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(s.save({ upsert: [alertRecord({ id: 'a1', state: 'firing' })], remove: [], notifications: [] })).rejects.toThrow(/alert state .*corrupt/);
  });
});

/**
 * GET /api/v1/alerts reads the latest attempt of the alerts it lists, while the table holds the attempts of every
 * alert still in retention (a flapping rule resolves thousands a day, a receiver down for days retries each up
 * to MAX_ATTEMPTS_PER_ALERT times): the read goes through the attempts' alert index, never across the table.
 */
describe('latest attempts of the listed alerts on a long history', () => {
  const ALERTS = 400;
  const RECEIVERS = ['ops', 'chat', 'pager'];
  const fill = async (s: AlertStateStore): Promise<void> => {
    for (let i = 0; i < ALERTS; i++) {
      for (const receiver of RECEIVERS) for (let n = 1; n <= 3; n++) await s.addAttempt({ ...attempt(`r${i}`, n), receiver });
    }
  };
  const listed = ['r7', 'r300'];

  it('SQLite searches the alert index for the alerts asked, and scans no table', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-alert-state-'));
    const path = join(dir, 'h.db');
    const s = new SqliteAlertStateStore(path);
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => s.close());
    await fill(s);
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${SQLITE_LAST_ATTEMPTS}`).all(JSON.stringify(listed)) as { detail: string }[]).map((r) => r.detail);
      const onAttempts = plan.filter((d) => d.includes('alert_attempts'));
      expect(onAttempts.length, plan.join('; ')).toBeGreaterThan(0);
      for (const d of onAttempts) expect(d, plan.join('; ')).toMatch(/^SEARCH alert_attempts USING (COVERING )?(INDEX alert_attempts_alert \(alert_id=\?\)|INTEGER PRIMARY KEY)/);
    } finally {
      db.close();
    }
    const last = await s.lastAttempts(listed);
    expect(last.map((a) => [a.alertId, a.receiver, a.attempt]).sort()).toEqual(listed.flatMap((id) => RECEIVERS.map((r) => [id, r, 3])).sort());
  });

  it('PostgreSQL reads the alert index for the alerts asked, with no sequential scan', { timeout: 120_000 }, async () => {
    server ??= await startTestServer();
    const store = await PostgresStore.open({ url: await server.createDatabase(), poolSize: 2 });
    const s = new PostgresAlertStateStore({ pool: store.connectionPool });
    cleanups.push(() => store.close(), () => s.close());
    await fill(s);
    await store.connectionPool.query('ANALYZE alert_attempts');
    const plan = (await store.connectionPool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${POSTGRES_LAST_ATTEMPTS}`, [listed])).rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).not.toMatch(/Seq Scan on alert_attempts/);
    expect(plan).toMatch(/Index Cond: \(alert_id = ANY/);
    const last = await s.lastAttempts(listed);
    expect(last.map((a) => [a.alertId, a.receiver, a.attempt]).sort()).toEqual(listed.flatMap((id) => RECEIVERS.map((r) => [id, r, 3])).sort());
  });
});

/**
 * A start (or a new leadership) reads which receivers the firing alerts were notified to, and each receiver's
 * latest notification of the alerts it loads (what was given up on is sent again), while the outbox holds
 * the notifications of every alert for a day after they finish: the read goes through the outbox's alert index.
 */
it('SQLite reads the receivers that had the firing alerts and their latest notifications through the outbox alert index, and scans no table', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-alert-state-'));
  const path = join(dir, 'h.db');
  const s = new SqliteAlertStateStore(path);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => s.close());
  const alerts = Array.from({ length: 300 }, (_, i) => alertRecord({ id: `r${i}`, state: 'firing' }));
  await s.save({ upsert: alerts, remove: [], notifications: alerts.map((a) => notification(a, `msg_${a.id}`)) });
  const listed = JSON.stringify(['r7', 'r200']);
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    for (const [query, params] of [[SQLITE_FIRING_RECEIVERS, [listed, listed]], [SQLITE_FIRING_RECEIVERS_HEARD, [listed, listed]], [SQLITE_LATEST_NOTIFICATIONS, [listed]]] as const) {
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${query}`).all(...params) as { detail: string }[]).map((r) => r.detail);
      const onTables = plan.filter((d) => /alert_(notifications|attempts)/.test(d));
      expect(onTables.length, plan.join('; ')).toBeGreaterThan(0);
      for (const d of onTables) expect(d, plan.join('; ')).toMatch(/^SEARCH /);
    }
  } finally {
    db.close();
  }
  expect((await s.firingReceivers(['r7', 'r200'])).sort((a, b) => a.alertId.localeCompare(b.alertId))).toEqual([{ alertId: 'r200', receiver: 'r' }, { alertId: 'r7', receiver: 'r' }]);
  expect((await s.latestNotifications(['r7'])).map((n) => [n.alertId, n.receiver])).toEqual([['r7', 'r']]);
});

it('PostgreSQL reads the latest notifications of the alerts loaded through the outbox alert index, with no sequential scan', { timeout: 120_000 }, async () => {
  server ??= await startTestServer();
  const store = await PostgresStore.open({ url: await server.createDatabase(), poolSize: 2 });
  const s = new PostgresAlertStateStore({ pool: store.connectionPool });
  cleanups.push(() => store.close(), () => s.close());
  const alerts = Array.from({ length: 2000 }, (_, i) => alertRecord({ id: `r${i}`, state: 'firing' }));
  await s.save({ upsert: alerts, remove: [], notifications: alerts.map((a) => notification(a, `msg_${a.id}`)) });
  await store.connectionPool.query('ANALYZE alert_notifications');
  const plan = (await store.connectionPool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${POSTGRES_LATEST_NOTIFICATIONS}`, [['r7', 'r200']])).rows.map((r) => r['QUERY PLAN']).join('\n');
  expect(plan).not.toMatch(/Seq Scan on alert_notifications/);
  expect(plan).toMatch(/Index Cond: \(alert_id = ANY/);
  expect((await s.latestNotifications(['r7'])).map((n) => [n.alertId, n.receiver, n.givenUpAtMs])).toEqual([['r7', 'r', null]]);
});

/**
 * Every load with the outbox marks what a newer notification supersedes, while the outbox holds a day of finished
 * notifications: the open ones are found through the outbox's pending index, each one's newer ones through its
 * alert index.
 */
describe('marking superseded notifications on a day of finished ones', () => {
  const ALERTS = 2000;
  async function fill(s: AlertStateStore): Promise<void> {
    const alerts = Array.from({ length: ALERTS }, (_, i) => alertRecord({ id: `r${i}`, state: 'resolved' }));
    await s.save({ upsert: alerts, remove: [], notifications: alerts.flatMap((a) => [notification(a, `msg_${a.id}_f`, 1000), { ...notification(a, `msg_${a.id}_r`, 2000), status: 'resolved' as const }]) });
    for (const a of alerts) if (a.id !== 'r7') for (const end of ['f', 'r']) await s.finishNotification(`msg_${a.id}_${end}`, 'delivered');
    await s.finishNotification('msg_r7_r', 'delivered');
  }

  it('SQLite searches the pending and alert indexes, and scans no table', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-alert-state-'));
    const path = join(dir, 'h.db');
    const s = new SqliteAlertStateStore(path);
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => s.close());
    await fill(s);
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${SQLITE_DROP_SUPERSEDED}`).all(SUPERSEDED_REASON) as { detail: string }[]).map((r) => r.detail);
      const onTables = plan.filter((d) => /alert_notifications/.test(d));
      expect(onTables.length, plan.join('; ')).toBe(2);
      for (const d of onTables) expect(d, plan.join('; ')).toMatch(/^SEARCH /);
    } finally {
      db.close();
    }
    expect((await s.load()).outbox).toEqual([]);
    const after = new DatabaseSync(path, { readOnly: true });
    try {
      expect(after.prepare("SELECT webhook_id, done FROM alert_notifications WHERE done <> 'delivered'").all()).toEqual([{ webhook_id: 'msg_r7_f', done: 'dropped' }]);
    } finally {
      after.close();
    }
  });

  it('PostgreSQL reads the pending and alert indexes, with no sequential scan', { timeout: 120_000 }, async () => {
    server ??= await startTestServer();
    const store = await PostgresStore.open({ url: await server.createDatabase(), poolSize: 2 });
    const s = new PostgresAlertStateStore({ pool: store.connectionPool });
    cleanups.push(() => store.close(), () => s.close());
    await fill(s);
    await store.connectionPool.query('ANALYZE alert_notifications');
    const plan = (await store.connectionPool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${POSTGRES_DROP_SUPERSEDED}`, [SUPERSEDED_REASON])).rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).not.toMatch(/Seq Scan on alert_notifications/);
    expect(plan).toMatch(/Index Cond: \(done IS NULL\)/);
    expect(plan).toMatch(/Index Cond: \(alert_id = n\.alert_id\)/);
    expect((await s.load()).outbox).toEqual([]);
    expect((await store.connectionPool.query("SELECT webhook_id, done FROM alert_notifications WHERE done <> 'delivered'")).rows).toEqual([{ webhook_id: 'msg_r7_f', done: 'dropped' }]);
  });
});
