/**
 * Timeline tests on a controlled clock, as Alertmanager's acceptance tests do: push at t, step the evaluation
 * timer, expect a notification (or none) between t1 and t2. Real SQLite store, real webhook receiver on port 0.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AlertingConfig } from '../config/index.ts';
import type { HookEvent } from '../hooks/model.ts';
import type { AlertmanagerWebhookBody } from '../notify/alertmanager.ts';
import { dimensionNames } from '../pipeline/settings.ts';
import { SqliteStore } from '../store/sqlite/index.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { parseRules } from './settings.ts';
import { parseReceivers } from '../notify/settings.ts';
import { startAlerting, type Alerting } from './index.ts';
import { parseSilence } from './silences.ts';
import { SqliteAlertStateStore } from './state/sqlite.ts';
import type { AlertRecord, StateChanges } from './model.ts';
import { FakeClock, hookEvent, keepFiringAcrossRestarts, linksOverLongWindow, LONG_WINDOW_CASES, otlpAccepted, WebhookSink, type EventFacts, type ReceivedRequest } from '../../test/support/alerting.ts';
import { MAX_RESOLVED_LISTED } from './read-model.ts';
import { alertRange } from '../../../shared/src/alert-range.ts';
import { hookId } from '../hooks/extract.ts';
import type { AlertSummary } from '../../../shared/src/api.ts';

const T0 = Date.parse('2026-11-30T10:00:00Z');
const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const TICK = 10_000;

interface Harness {
  clock: FakeClock;
  sink: WebhookSink;
  store: SqliteStore;
  alerting: Alerting;
  db: string;
  push(...facts: Omit<EventFacts, 'timeMs'>[]): Promise<void>;
  pushAt(facts: EventFacts[]): Promise<void>;
  /** With the receiver `ops` answering 503, stores `facts` at the clock's time and waits for two refused attempts. */
  fireWhileDown(facts: Omit<EventFacts, 'timeMs'>): Promise<void>;
  /** Steps the clock by TICK up to `ms`, evaluating at each step like the timer does. */
  run(ms: number): Promise<void>;
  notes(): { status: string; alertname: string; hook: string; at: number; labels: Record<string, string> }[];
  restart(): Promise<void>;
  /** A configuration reload with these rules (the receivers and intervals as started). */
  reconfigure(rules: unknown): Promise<void>;
  /**
   * Commits `facts` at the store's next read of the hooks' counters, as a batch stored while an evaluation reads:
   * just `after` that read returns (it does not see them, the reads after it do) or just `before` it. Resolves with
   * the events stored, once they are.
   */
  storeAtNextRead(facts: EventFacts[], when: 'before' | 'after'): Promise<HookEvent[]>;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function alertingConfig(rules: unknown, repeatIntervalMs = 4 * HOUR, receivers?: unknown[], eventsUrl = '', evaluationIntervalMs = TICK): AlertingConfig {
  return {
    rules: parseRules(rules, dimensionNames(['team'])),
    externalLabels: {},
    receivers: parseReceivers(receivers),
    evaluationIntervalMs,
    repeatIntervalMs,
    externalUrl: 'http://hookwatch.test',
    otlp: { endpoint: eventsUrl, headers: {} },
    delivery: { deadlineMs: 60_000, initialBackoffMs: 5, maxBackoffMs: 20, maxQueue: 100 },
  };
}

/**
 * `eventsUrl`: where alert events are exported (alerting.otlp.endpoint); none without. `receiverType`: the sink's
 * (webhook by default). `backup`: a second webhook receiver, `backup`, on the sink's path /backup (`ops` is on /hook).
 * `evaluationIntervalMs`: alerting.evaluationInterval as configured (TICK by default; the test runs evaluations itself).
 */
async function harness(rules: unknown, opts: { repeatIntervalMs?: number; start?: number; eventsUrl?: string; receiverType?: 'slack' | 'alertmanager'; backup?: boolean; evaluationIntervalMs?: number } = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-alerting-'));
  const db = join(dir, 'h.db');
  const clock = new FakeClock(opts.start ?? T0);
  const sink = new WebhookSink(clock.now);
  await sink.start();
  const backup = opts.backup ? [{ name: 'backup', url: `${sink.url}/backup` }] : [];
  const config = alertingConfig(rules, opts.repeatIntervalMs, [{ name: 'ops', type: opts.receiverType, url: `${sink.url}/hook` }, ...backup], opts.eventsUrl, opts.evaluationIntervalMs);
  const store = new SqliteStore({ path: db, dimensions: ['team'] });
  const h: Harness = {
    clock, sink, store, db,
    // Each batch evaluated as it is pushed, as the first after a quiet spell: the test's clock is the only time.
    alerting: await startAlerting({ config, db, store, logger: silentLogger, now: clock.now, timer: false, random: () => 0.5, ingestSpacingMs: 0 }),
    async pushAt(facts) {
      const r = await store.ingest(facts.map(hookEvent));
      h.alerting.engine.onIngested(r.inserted);
      await h.alerting.engine.evaluate('notify');
      await h.alerting.dispatcher.idle();
    },
    push(...facts) {
      return h.pushAt(facts.map((f) => ({ ...f, timeMs: clock.now() })));
    },
    async fireWhileDown(facts) {
      sink.reply = (q) => ({ status: q.path === '/hook' ? 503 : 200 });
      const r = await store.ingest([hookEvent({ ...facts, timeMs: clock.now() })]);
      h.alerting.engine.onIngested(r.inserted);
      // The backup receiver's one request beside them.
      await sink.waitFor(2 + backup.length);
    },
    async run(ms) {
      const end = clock.now() + ms;
      while (clock.now() < end) {
        clock.advance(Math.min(TICK, end - clock.now()));
        await h.alerting.engine.evaluate('all');
        await h.alerting.dispatcher.idle();
      }
    },
    notes() {
      return sink.delivered().map((r) => {
        const b = JSON.parse(r.body) as AlertmanagerWebhookBody;
        const labels = b.alerts[0]?.labels ?? {};
        return { status: b.status, alertname: labels['alertname'] ?? '', hook: labels['hook_name'] ?? '', at: r.at - T0, labels };
      });
    },
    async restart() {
      await h.alerting.stop();
      h.alerting = await startAlerting({ config, db, store, logger: silentLogger, now: clock.now, timer: false, random: () => 0.5, ingestSpacingMs: 0 });
      await h.alerting.engine.evaluate('notify');
      await h.alerting.dispatcher.idle();
    },
    async reconfigure(next) {
      await h.alerting.reconfigure({ ...config, rules: parseRules(next, dimensionNames(['team'])) });
    },
    storeAtNextRead(facts, when) {
      const read = store.hookCounters.bind(store);
      let done: (events: HookEvent[]) => void = () => {};
      const stored = new Promise<HookEvent[]>((resolve) => (done = resolve));
      let committing: Promise<void> | undefined;
      const commit = (): Promise<void> => (committing ??= store.ingest(facts.map(hookEvent)).then((r) => done(r.inserted)));
      store.hookCounters = async (q) => {
        if (when === 'before') await commit();
        const counters = await read(q);
        if (when === 'after') await commit();
        return counters;
      };
      return stored;
    },
  };
  cleanups.push(async () => {
    await h.alerting.stop();
    await store.close();
    await sink.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await h.alerting.engine.evaluate('notify');
  return h;
}

/** Each webhook notification in order: its status, alertname, superseded_by annotation (null without) and summary. */
function supersedeTrail(h: Harness): [string, string | undefined, string | null, string][] {
  return h.sink.delivered().map((r) => JSON.parse(r.body) as AlertmanagerWebhookBody).map((b) => [b.status, b.alerts[0]?.labels['alertname'], b.alerts[0]?.annotations['superseded_by'] ?? null, b.alerts[0]?.annotations['summary'] ?? '']);
}

/** The requests to `path` (/hook: ops, /backup) answered 2xx. */
const deliveredTo = (h: Harness, path: string): ReceivedRequest[] => h.sink.delivered().filter((q) => q.path === path);
/** The alert status of each request. */
const statuses = (requests: ReceivedRequest[]): string[] => requests.map((q) => (JSON.parse(q.body) as AlertmanagerWebhookBody).status);

const over = { hookName: 'SessionStart:startup', additionalContextChars: 12_000, outputsPersisted: 1 };
const fine = { hookName: 'UserPromptSubmit', additionalContextChars: 100, outputsPersisted: 0 };

describe('persisted rule', () => {
  it('notifies a persisted output at once, not a healthy hook, and resolves after the window', async () => {
    const h = await harness([{ kind: 'persisted', window: '1h' }]);
    await h.push(over, fine);
    expect(h.notes()).toEqual([expect.objectContaining({ status: 'firing', alertname: 'persisted', hook: 'SessionStart:startup', at: 0 })]);
    const body = h.sink.bodies<AlertmanagerWebhookBody>()[0] as AlertmanagerWebhookBody;
    expect(body).toMatchObject({ version: '4', status: 'firing', receiver: 'ops', truncatedAlerts: 0, externalURL: 'http://hookwatch.test', groupLabels: { alertname: 'persisted' } });
    expect(body.alerts[0]).toMatchObject({ status: 'firing', endsAt: '0001-01-01T00:00:00Z', startsAt: new Date(T0).toISOString() });
    // The hook's page from an hour before the alert to when it was notified.
    const link = new URL(body.alerts[0]?.generatorURL ?? '');
    expect(link.origin + link.pathname).toMatch(/^http:\/\/hookwatch\.test\/hooks\/[0-9a-f]{16}$/);
    expect(link.searchParams.get('range')).toBe('custom');
    expect(Date.parse(link.searchParams.get('from') ?? '')).toBe(T0 - HOUR);
    expect(Date.parse(link.searchParams.get('to') ?? '')).toBeGreaterThanOrEqual(T0);
    expect(body.alerts[0]?.annotations['summary']).toContain('saved to a file');
    await h.run(HOUR - MIN);
    expect(h.notes()).toHaveLength(1);
    await h.run(2 * MIN + TICK);
    const notes = h.notes();
    expect(notes).toHaveLength(2);
    expect(notes[1]).toMatchObject({ status: 'resolved', hook: 'SessionStart:startup' });
    // Minute rollups: the event leaves a 1h window between 1h and 1h+1m after it, seen at the next tick.
    expect(notes[1]?.at).toBeGreaterThanOrEqual(HOUR);
    expect(notes[1]?.at).toBeLessThanOrEqual(HOUR + MIN + TICK);
    const resolved = h.sink.bodies<AlertmanagerWebhookBody>()[1] as AlertmanagerWebhookBody;
    expect(resolved.alerts[0]?.endsAt).not.toBe('0001-01-01T00:00:00Z');
  });

  it('adds the rule\'s own labels to its alerts, for routing; a label hookwatch sets itself is refused', async () => {
    const h = await harness([{ kind: 'persisted', window: '1h', labels: { team: 'platform', source: 'hookwatch' } }]);
    await h.push(over);
    const body = h.sink.bodies<AlertmanagerWebhookBody>()[0] as AlertmanagerWebhookBody;
    expect(body.alerts[0]?.labels).toEqual({ alertname: 'persisted', severity: 'critical', hook_event: 'SessionStart', hook_name: 'SessionStart:startup', team: 'platform', source: 'hookwatch' });
    expect(() => parseRules([{ kind: 'persisted', labels: { hook_name: 'x' } }])).toThrow('alerting.rules[0].labels.hook_name: hookwatch sets this label itself');
    expect(() => parseRules([{ kind: 'persisted', groupBy: 'team', labels: { team: 'x' } }])).toThrow('labels.team: hookwatch sets this label itself');
    expect(() => parseRules([{ kind: 'persisted', labels: { 'bad-name': 'x' } }])).toThrow('"bad-name" is not a label name');
    expect(() => parseRules([{ kind: 'persisted', labels: { team: ['a'] } }])).toThrow('labels.team: expected a string');
    expect(parseRules([{ kind: 'persisted', labels: { priority: 1, paging: true } }])[0]?.labels).toEqual({ priority: '1', paging: 'true' });
  });

  it('waits for `for`: pending first, firing between for and for + one tick', async () => {
    const h = await harness([{ kind: 'persisted', window: '1h', for: '2m' }]);
    await h.push(over);
    expect(h.alerting.engine.alerts()).toEqual([expect.objectContaining({ state: 'pending', startsAt: null })]);
    await h.run(2 * MIN - TICK);
    expect(h.notes()).toEqual([]);
    await h.run(2 * TICK);
    const notes = h.notes();
    expect(notes).toHaveLength(1);
    expect(notes[0]?.at).toBeGreaterThanOrEqual(2 * MIN);
    expect(notes[0]?.at).toBeLessThanOrEqual(2 * MIN + TICK);
    expect(h.alerting.engine.alerts()[0]?.state).toBe('firing');
  });

  it('drops a pending alert that clears without ever notifying it', async () => {
    const h = await harness([{ kind: 'persisted', window: '2m', for: '10m' }]);
    await h.push(over);
    expect(h.alerting.engine.alerts()[0]?.state).toBe('pending');
    await h.run(15 * MIN);
    expect(h.notes()).toEqual([]);
    expect(h.alerting.engine.alerts()).toEqual([]);
  });

  it('keeps firing for keepFiringFor after the condition clears, then resolves', async () => {
    const h = await harness([{ kind: 'persisted', window: '2m', keepFiringFor: '5m' }]);
    await h.push(over);
    await h.run(20 * MIN);
    const notes = h.notes();
    expect(notes.map((n) => n.status)).toEqual(['firing', 'resolved']);
    // Clears between 2m and 3m (minute rollups), then 5 more minutes.
    expect(notes[1]?.at).toBeGreaterThanOrEqual(7 * MIN);
    expect(notes[1]?.at).toBeLessThanOrEqual(8 * MIN + TICK);
  });

  it('does not resolve a keepFiringFor alert earlier for a restart, wherever the restart falls', async () => {
    const r = await keepFiringAcrossRestarts(harness, (h) => h.notes().find((n) => n.status === 'resolved')?.at, { tick: TICK, every: TICK });
    expect(r.unbrokenMs).toBeGreaterThan(7 * MIN);
    for (const at of r.restarts) expect(at).toEqual({ at: at.at, early: false, late: false });
  });

  it('does not resolve a keepFiringFor alert earlier across an upgrade from the previous release', async () => {
    // The previous release saved the last time the condition held only while it held (at most once a minute),
    // nothing when it was found absent, and no mark: its firing records are all such lower bounds.
    const rules = [{ kind: 'persisted', window: '2m', keepFiringFor: '5m' }];
    const DOWN = 15_000;
    const stored = (h: Harness): AlertRecord => {
      const db = new DatabaseSync(h.db);
      try {
        return JSON.parse((db.prepare('SELECT data FROM alert_instances').get() as { data: string }).data) as AlertRecord;
      } finally {
        db.close();
      }
    };
    const unbroken = await harness(rules);
    await unbroken.push(over);
    await unbroken.run(20 * MIN);
    const unbrokenMs = unbroken.notes().find((n) => n.status === 'resolved')?.at ?? NaN;
    expect(unbrokenMs).toBeGreaterThan(7 * MIN);
    for (let at = 2 * MIN; at <= 4 * MIN; at += TICK) {
      const h = await harness(rules);
      await h.push(over);
      // What the previous release had on disk: the last time saved while the condition held.
      let heldSave = stored(h).lastActiveMs;
      for (let t = 0; t < at; t += TICK) {
        await h.run(TICK);
        const r = stored(h);
        if (r.lastActiveProvisional === true) heldSave = r.lastActiveMs;
      }
      await h.alerting.stop();
      const { lastActiveProvisional: _mark, ...previous } = stored(h);
      const db = new DatabaseSync(h.db);
      db.prepare('UPDATE alert_instances SET data = ?').run(JSON.stringify({ ...previous, lastActiveMs: heldSave }));
      db.close();
      h.clock.advance(DOWN);
      await h.restart();
      await h.run(20 * MIN - at - DOWN);
      const resolved = h.notes().find((n) => n.status === 'resolved')?.at ?? NaN;
      // Never earlier; at most the downtime, a tick and the save interval later.
      expect({ at, early: resolved < unbrokenMs, late: resolved > unbrokenMs + DOWN + TICK + MIN }).toEqual({ at, early: false, late: false });
    }
  });

  it('repeats a still-firing alert after repeat_interval, not before', async () => {
    const h = await harness([{ kind: 'persisted', window: '1d' }], { repeatIntervalMs: HOUR });
    await h.push(over);
    await h.run(HOUR - TICK);
    expect(h.notes()).toHaveLength(1);
    await h.run(2 * TICK);
    const notes = h.notes();
    expect(notes.map((n) => n.status)).toEqual(['firing', 'firing']);
    expect(notes[1]?.at).toBeGreaterThanOrEqual(HOUR);
    expect(notes[1]?.at).toBeLessThanOrEqual(HOUR + TICK);
    // Each notification is its own message: a new webhook-id, while retries of one keep theirs.
    const ids = h.sink.delivered().map((r) => r.headers['webhook-id']);
    expect(new Set(ids).size).toBe(2);
  });

  it('counts repeat_interval from the delivery, as Alertmanager does, not from the first failed attempt', async () => {
    const h = await harness([{ kind: 'persisted', window: '1d' }], { repeatIntervalMs: 2 * MIN });
    await h.fireWhileDown(over);
    // The receiver answers again 50 s later: the notification arrives then.
    h.clock.advance(50_000);
    h.sink.reply = () => ({ status: 200 });
    await h.alerting.dispatcher.idle();
    expect(h.notes().map((n) => n.at)).toEqual([50_000]);
    // Two minutes after the first attempt, but not after the delivery: no repeat yet.
    await h.run(80_000);
    expect(h.notes()).toHaveLength(1);
    await h.run(60_000);
    const repeats = h.notes().slice(1);
    expect(repeats).toHaveLength(1);
    expect(repeats[0]?.at).toBeGreaterThanOrEqual(50_000 + 2 * MIN);
  });

  it('notifies a receiver that was down past the delivery deadline again a group_interval later, not at the next repeat', async () => {
    const h = await harness([{ kind: 'persisted', window: '1d' }], { repeatIntervalMs: 4 * HOUR });
    await h.fireWhileDown(over);
    // Still down when the delivery deadline (60 s here) passes: the notification is given up on.
    h.clock.advance(61_000);
    await h.alerting.dispatcher.idle();
    expect(h.notes()).toHaveLength(0);
    const failedAt = h.clock.now() - T0;
    h.sink.reply = () => ({ status: 200 });
    await h.run(5 * MIN - TICK);
    expect(h.notes()).toHaveLength(0);
    await h.run(2 * TICK);
    const notes = h.notes();
    expect(notes.map((n) => n.status)).toEqual(['firing']);
    expect(notes[0]?.at).toBeGreaterThanOrEqual(failedAt + 5 * MIN);
    expect(notes[0]?.at).toBeLessThanOrEqual(failedAt + 5 * MIN + TICK);
    // A new notification (a new webhook-id), once: the next is the repeat, counted from this delivery.
    const ids = new Set(h.sink.requests.map((q) => q.headers['webhook-id']));
    expect(ids.size).toBe(2);
    await h.run(HOUR);
    expect(h.notes()).toHaveLength(1);
  });

  it('keeps the repeat per receiver, as Alertmanager: a notification sent again to one receiver does not move the others\' repeat', async () => {
    const h = await harness([{ kind: 'persisted', window: '1d' }], { repeatIntervalMs: HOUR, backup: true });
    await h.fireWhileDown(over);
    // ops is given up on (down past the delivery deadline) and gets the alert a group_interval later; backup had it at once.
    h.clock.advance(61_000);
    await h.alerting.dispatcher.idle();
    h.sink.reply = () => ({ status: 200 });
    const at = (path: string): number[] => deliveredTo(h, path).map((q) => q.at - T0);
    await h.run(HOUR + MIN);
    const retriedAt = 61_000 + 5 * MIN;
    expect(at('/hook')).toEqual([retriedAt]);
    // backup's repeat counts from its own delivery.
    expect(at('/backup')).toEqual([0, expect.any(Number)]);
    expect(at('/backup')[1]).toBeGreaterThanOrEqual(HOUR);
    expect(at('/backup')[1]).toBeLessThanOrEqual(HOUR + TICK);
    // ops' from its own.
    await h.run(10 * MIN);
    expect(at('/hook')).toEqual([retriedAt, expect.any(Number)]);
    expect(at('/hook')[1]).toBeGreaterThanOrEqual(retriedAt + HOUR);
    expect(at('/hook')[1]).toBeLessThanOrEqual(retriedAt + HOUR + TICK);
    expect(at('/backup')).toHaveLength(2);
    expect(statuses(h.sink.delivered())).toEqual(['firing', 'firing', 'firing', 'firing']);
  });

  it('notifies a receiver a reload adds at once when that evaluation repeats the alert to another receiver alone', async () => {
    const rules = [{ kind: 'persisted', window: '1d' }];
    const h = await harness(rules, { repeatIntervalMs: HOUR, backup: true });
    await h.fireWhileDown(over);
    h.clock.advance(61_000);
    await h.alerting.dispatcher.idle();
    h.sink.reply = () => ({ status: 200 });
    // ops has the alert a group_interval after it was given up on, and its repeat an hour later, alone; backup has
    // its repeat an hour after T0, and the next is due at the evaluation the reload runs, which the receiver it
    // adds is owed too.
    await h.run(2 * HOUR - 60_000 - TICK);
    expect([deliveredTo(h, '/hook').length, deliveredTo(h, '/backup').length]).toEqual([2, 2]);
    h.clock.advance(TICK);
    const receivers = [{ name: 'ops', url: `${h.sink.url}/hook` }, { name: 'backup', url: `${h.sink.url}/backup` }, { name: 'pager', url: `${h.sink.url}/pager` }];
    await h.alerting.reconfigure(alertingConfig(rules, HOUR, receivers));
    await h.alerting.dispatcher.idle();
    const reloadedAt = h.clock.now();
    expect([deliveredTo(h, '/backup').length, deliveredTo(h, '/backup').at(-1)?.at, deliveredTo(h, '/pager').map((q) => q.at)]).toEqual([3, reloadedAt, [reloadedAt]]);
    expect(deliveredTo(h, '/hook')).toHaveLength(2);
  });

  it('keeps the repeat of an alert saved by the previous release, with no time per receiver, when one receiver is notified alone', async () => {
    const rules = [{ kind: 'persisted', window: '1d' }];
    const h = await harness(rules, { repeatIntervalMs: HOUR, backup: true });
    await h.push(over);
    await h.alerting.stop();
    const db = new DatabaseSync(h.db);
    db.prepare("UPDATE alert_instances SET data = json_remove(data, '$.notifiedAtMs')").run();
    db.close();
    await h.restart();
    await h.run(10 * MIN);
    // A receiver a reload adds has the alert at once, and takes 2 s to answer.
    h.sink.reply = (q) => {
      if (q.path === '/pager') h.clock.advance(2_000);
      return { status: 200 };
    };
    const receivers = [{ name: 'ops', url: `${h.sink.url}/hook` }, { name: 'backup', url: `${h.sink.url}/backup` }, { name: 'pager', url: `${h.sink.url}/pager` }];
    await h.alerting.reconfigure(alertingConfig(rules, HOUR, receivers));
    await h.alerting.dispatcher.idle();
    expect(deliveredTo(h, '/pager')).toHaveLength(1);
    // ops' and backup's repeat still count from their notification at T0.
    await h.run(T0 + HOUR + TICK - h.clock.now());
    for (const path of ['/hook', '/backup']) {
      const at = deliveredTo(h, path).map((q) => q.at - T0);
      expect(at).toEqual([0, expect.any(Number)]);
      expect(at[1]).toBeGreaterThanOrEqual(HOUR);
    }
    expect(deliveredTo(h, '/pager')).toHaveLength(1);
  });

  it('splits by groupBy: only the team whose hook lost output is alerted', async () => {
    const h = await harness([{ kind: 'persisted', window: '1h', groupBy: 'team' }]);
    await h.push({ ...over, team: 'platform' }, { ...over, outputsPersisted: 0, additionalContextChars: 9000, team: 'web' });
    const notes = h.notes();
    expect(notes).toHaveLength(1);
    expect(notes[0]?.labels).toMatchObject({ alertname: 'persisted', hook_name: 'SessionStart:startup', team: 'platform' });
  });

  it('fires for outputs persisted whatever the hook reported of its outcome, and says what it reported', async () => {
    const h = await harness([{ kind: 'persisted', window: '1h' }]);
    const at = h.clock.now();
    // A record without num_success (unknown, never 0); one whose hook failed (num_success 0, one non-blocking
    // error); one whose hook reported success. Each lost an output: the dashboard shows each hook "over".
    const unreported = { ...hookEvent({ ...over, hookName: 'Stop:no-outcome', timeMs: at }), numSuccess: null, numBlocking: null, numNonBlockingError: null, numCancelled: null };
    const failed = { ...hookEvent({ ...over, hookName: 'Stop:failed', success: 0, timeMs: at }), numNonBlockingError: 1 };
    const succeeded = hookEvent({ ...over, hookName: 'Stop:succeeded', timeMs: at });
    h.alerting.engine.onIngested((await h.store.ingest([unreported, failed, succeeded])).inserted);
    await h.alerting.engine.evaluate('notify');
    await h.alerting.dispatcher.idle();
    const summaries = Object.fromEntries(h.sink.bodies<AlertmanagerWebhookBody>().map((b) => [`${b.status} ${b.alerts[0]?.labels['alertname']} ${b.alerts[0]?.labels['hook_name']}`, b.alerts[0]?.annotations['summary']]));
    expect(summaries).toEqual({
      'firing persisted Stop:no-outcome': 'Stop:no-outcome: 1 output over the 10,000-character cap saved to a file instead of delivered in the last 1h; the hook did not report its outcome (no success or failure counted).',
      'firing persisted Stop:failed': 'Stop:failed: 1 output over the 10,000-character cap saved to a file instead of delivered in the last 1h; the hook reported no success (1 non-blocking error).',
      'firing persisted Stop:succeeded': 'Stop:succeeded: 1 output over the 10,000-character cap saved to a file in the last 1h; the model saw only a ~2,000-character preview while the hook reported success.',
    });
  });

  it('with groupBy, a late persisted output alerts its own team, whether or not the hook has other events in the window', async () => {
    const h = await harness([{ kind: 'persisted', window: '1h', groupBy: 'team' }]);
    // The hook runs fine for team web in the window.
    await h.push({ ...fine, hookName: 'PostToolUse:Bash', team: 'web' });
    expect(h.notes()).toEqual([]);
    // A Collector queue drains: outputs of team platform persisted two hours ago, of this hook and of one with
    // nothing else in the window.
    const stamped = h.clock.now() - 2 * HOUR;
    await h.pushAt([
      { ...over, hookName: 'PostToolUse:Bash', team: 'platform', timeMs: stamped, receivedMs: h.clock.now() },
      { ...over, hookName: 'PostToolUse:Edit', team: 'platform', timeMs: stamped + MIN, receivedMs: h.clock.now() },
    ]);
    const notes = h.notes();
    expect(notes.map((n) => [n.status, n.hook, n.labels['team']]).sort()).toEqual([['firing', 'PostToolUse:Bash', 'platform'], ['firing', 'PostToolUse:Edit', 'platform']]);
    const alerts = h.sink.bodies<AlertmanagerWebhookBody>().flatMap((b) => b.alerts);
    for (const a of alerts) expect(a.annotations).toMatchObject({ late_outputs_persisted: '1' });
    expect(alerts.find((a) => a.labels['hook_name'] === 'PostToolUse:Bash')?.annotations).toMatchObject({ event_time: new Date(stamped).toISOString() });
    // The summary names the team the outputs were lost for.
    expect(alerts.find((a) => a.labels['hook_name'] === 'PostToolUse:Bash')?.annotations['summary']).toContain('(team=platform)');
    // A window after their arrival, both resolve.
    await h.run(HOUR + MIN + TICK);
    expect(h.notes().filter((n) => n.status === 'resolved').map((n) => [n.hook, n.labels['team']]).sort()).toEqual([['PostToolUse:Bash', 'platform'], ['PostToolUse:Edit', 'platform']]);
  });
});

describe('a reload', () => {
  it('reads again only the rules it added or changed; the others are read at the next evaluation of every rule', async () => {
    const day = { kind: 'persisted', name: 'persisted_day', window: '1d' };
    const h = await harness([{ kind: 'persisted', window: '1h' }, day]);
    // Stored with no ingest signal (as a batch another replica committed, whose signal is on its way): only an
    // evaluation that reads a rule sees it.
    await h.store.ingest([hookEvent({ ...over, timeMs: h.clock.now() })]);
    const firing = (): string[] => h.alerting.engine.alerts().filter((a) => a.state === 'firing').map((a) => a.rule).sort();

    // Nothing changed: no rule is read.
    await h.reconfigure([{ kind: 'persisted', window: '1h' }, day]);
    expect(firing()).toEqual([]);
    // The rule changed and the one added are read at once; the unchanged one is not.
    await h.reconfigure([{ kind: 'persisted', window: '2h' }, day, { kind: 'persisted', name: 'persisted_too', window: '1h' }]);
    expect(firing()).toEqual(['persisted', 'persisted_too']);
    await h.alerting.dispatcher.idle();
    expect(h.notes().map((n) => n.alertname).sort()).toEqual(['persisted', 'persisted_too']);

    // The next evaluation of every rule reads it.
    await h.run(TICK);
    expect(firing()).toEqual(['persisted', 'persisted_day', 'persisted_too']);
    await h.alerting.dispatcher.idle();
    expect(h.notes().map((n) => n.alertname).sort()).toEqual(['persisted', 'persisted_day', 'persisted_too']);
  });

  it('resolves at once the alert of a rule whose labels or severity it changed; the new one honours keepFiringFor', async () => {
    const rule = { kind: 'persisted', window: '1m', for: '5s', keepFiringFor: '40s' };
    const h = await harness([{ ...rule, labels: { team: 'a' } }]);
    await h.push(over);
    await h.run(TICK);
    const active = (): string[] => h.alerting.engine.alerts().filter((a) => a.state !== 'resolved').map((a) => `${a.state} ${a.labels['team']} ${a.labels['severity']}`).sort();
    expect(active()).toEqual(['firing a critical']);

    await h.reconfigure([{ ...rule, labels: { team: 'b' } }]);
    await h.alerting.dispatcher.idle();
    expect(active()).toEqual(['pending b critical']);
    expect(h.notes().map((n) => `${n.status} ${n.labels['team']} ${n.at}`)).toEqual(['firing a 10000', `resolved a ${h.clock.now() - T0}`]);
    await h.run(TICK);
    expect(active()).toEqual(['firing b critical']);

    // A label it no longer sets, and a severity it changed, alike.
    await h.reconfigure([{ ...rule, severity: 'warning' }]);
    expect(active()).toEqual(['pending undefined warning']);
    await h.run(TICK);
    expect(active()).toEqual(['firing undefined warning']);

    // A label set whose condition cleared (the output left the window) still keeps firing for keepFiringFor.
    // It clears between 1m and 2m (minute rollups): still firing a tick after 2m, resolved 40 s after it cleared.
    await h.run(T0 + 2 * MIN + TICK - h.clock.now());
    expect(active()).toEqual(['firing undefined warning']);
    await h.run(3 * MIN);
    const resolved = h.notes().filter((n) => n.status === 'resolved' && n.labels['severity'] === 'warning');
    expect(resolved).toHaveLength(1);
    expect(resolved[0]?.at).toBeGreaterThanOrEqual(MIN + 40_000);
    expect(resolved[0]?.at).toBeLessThanOrEqual(2 * MIN + 40_000 + TICK);
  });
});

describe('links over the time an alert counted', () => {
  /** The `from` and `to` of a link to a hook's page, in ms. */
  const range = (link: string): { from: number; to: number } => {
    const u = new URL(link);
    expect(u.searchParams.get('range')).toBe('custom');
    return { from: Date.parse(u.searchParams.get('from') ?? ''), to: Date.parse(u.searchParams.get('to') ?? '') };
  };

  it('still start an hour before the first late output once it left the window, while the alert fires (across a restart) and once it resolved; a new episode starts afresh', async () => {
    const events = new WebhookSink();
    events.reply = otlpAccepted;
    await events.start();
    cleanups.push(() => events.close());
    const h = await harness([{ kind: 'persisted', window: '1h' }], { repeatIntervalMs: 90 * MIN, eventsUrl: events.url });
    const links = (): { status: string; link: string }[] => h.sink.bodies<AlertmanagerWebhookBody>().map((b) => ({ status: b.status, link: b.alerts[0]?.generatorURL ?? '' }));
    // A Collector queue drains: an output persisted three hours ago arrives now, and the alert fires on it.
    const stamped = T0 - 3 * HOUR;
    await h.pushAt([{ ...over, timeMs: stamped, receivedMs: T0 }]);
    expect(links().map((l) => l.status)).toEqual(['firing']);
    expect(range(links()[0]?.link ?? '').from).toBeLessThanOrEqual(stamped - HOUR);
    // The hook goes on persisting outputs, so the alert fires on after the late one left the window (an hour
    // after its arrival): its annotations no longer name it. hookwatch restarts meanwhile.
    await h.run(50 * MIN);
    await h.push(over);
    await h.run(15 * MIN);
    await h.restart();
    await h.run(30 * MIN);
    const [firing] = h.alerting.engine.alerts();
    expect(firing).toMatchObject({ state: 'firing', firstEventAt: new Date(stamped).toISOString() });
    expect(firing?.annotations['first_event_time']).toBeUndefined();
    // The repeat (90 minutes after the first notification) and the alerts API, as the alerts page reads it.
    expect(links().map((l) => l.status)).toEqual(['firing', 'firing']);
    expect(range(links()[1]?.link ?? '').from).toBeLessThanOrEqual(stamped - HOUR);
    expect(Date.parse(alertRange(firing as AlertSummary, h.clock.now()).from)).toBeLessThanOrEqual(stamped - HOUR);
    // Once the last output leaves the window it resolves: the resolution and the alert event link over it all.
    await h.run(20 * MIN);
    expect(links().map((l) => l.status)).toEqual(['firing', 'firing', 'resolved']);
    const resolved = h.alerting.engine.alerts().find((a) => a.state === 'resolved') as AlertSummary;
    expect(resolved.firstEventAt).toBe(new Date(stamped).toISOString());
    const api = alertRange(resolved, h.clock.now());
    for (const r of [range(links()[2]?.link ?? ''), { from: Date.parse(api.from), to: Date.parse(api.to) }]) {
      expect(r.from).toBeLessThanOrEqual(stamped - HOUR);
      expect(r.to).toBeGreaterThanOrEqual(Date.parse(resolved.endsAt ?? ''));
    }
    type Attr = { key: string; value: { stringValue?: string } };
    const eventUrl = async (): Promise<string | undefined> => events.requests.flatMap((r) => {
      const body = JSON.parse(r.body) as { resourceLogs: { scopeLogs: { logRecords: { attributes: Attr[] }[] }[] }[] };
      return body.resourceLogs.flatMap((l) => l.scopeLogs.flatMap((sl) => sl.logRecords.map((rec) => Object.fromEntries(rec.attributes.map((a) => [a.key, a.value.stringValue])))));
    }).find((a) => a['hookwatch.alert.state'] === 'resolved')?.['hookwatch.alert.url'];
    await expect.poll(eventUrl, { timeout: 10_000, interval: 50 }).toBeDefined();
    expect(range((await eventUrl()) ?? '').from).toBeLessThanOrEqual(stamped - HOUR);
    // The hook persists an output again: a new alert, about that output only.
    const again = h.clock.now();
    await h.push(over);
    expect(links().map((l) => l.status)).toEqual(['firing', 'firing', 'resolved', 'firing']);
    expect(range(links()[3]?.link ?? '').from).toBeGreaterThan(T0);
    // Its evidence begins with that output: the start of the chart bucket holding it, not the late one.
    const evidence = Date.parse(h.alerting.engine.alerts().find((a) => a.state === 'firing')?.firstEventAt ?? '');
    expect(evidence).toBeGreaterThan(T0);
    expect(evidence).toBeLessThanOrEqual(again);
  });

  it.each(LONG_WINDOW_CASES)('reach back to the outputs a long window counted when %s while they are hours old', async (how) => {
    const r = await linksOverLongWindow(harness, how);
    expect(r.alert?.annotations['outputs_persisted']).toBe('2');
    // Not late (received inside the window): no first_event_time; the alert read when its evidence begins.
    expect(r.alert?.annotations['first_event_time']).toBeUndefined();
    expect(r.link.from).toBeLessThanOrEqual(r.stamped - HOUR);
    expect(r.link.to).toBeGreaterThanOrEqual(Date.parse(r.alert?.startsAt ?? ''));
    // The page opened from the notification counts the outputs it counted; so does the alerts page's link.
    expect(r.page.outputsPersisted).toBe(2);
    expect(r.listedFrom).toBeLessThanOrEqual(r.stamped - HOUR);
    expect(Date.parse(r.listed?.firstEventAt ?? '')).toBeLessThanOrEqual(r.stamped);
  });

  it('reach back to what headroom, persisted_ratio and never_completed counted hours into their window', async () => {
    const h = await harness([]);
    const at = T0 - 20 * HOUR + 7 * MIN;
    await h.pushAt([
      { hookName: 'PreToolUse:Bash', additionalContextChars: 9_000, stdoutChars: 9_050, outputsPersisted: 0, timeMs: at, receivedMs: at },
      { ...over, hookName: 'Stop', timeMs: at + HOUR, receivedMs: at + HOUR },
      { kind: 'start', hookName: 'UserPromptSubmit', timeMs: at + 2 * HOUR, receivedMs: at + 2 * HOUR },
    ]);
    await h.reconfigure([
      { kind: 'headroom', window: '24h' },
      { kind: 'persisted_ratio', window: '24h', threshold: 0.4, minExecutions: 1 },
      { kind: 'never_completed', window: '24h', after: '2m', for: '0s' },
    ]);
    await h.run(TICK);
    const links = new Map(h.sink.bodies<AlertmanagerWebhookBody>().map((b) => [b.alerts[0]?.labels['alertname'], range(b.alerts[0]?.generatorURL ?? '')]));
    expect([...links.keys()].sort()).toEqual(['headroom', 'never_completed', 'persisted_ratio']);
    expect(links.get('headroom')?.from).toBeLessThanOrEqual(at - HOUR);
    expect(links.get('persisted_ratio')?.from).toBeLessThanOrEqual(at + HOUR - HOUR);
    expect(links.get('never_completed')?.from).toBeLessThanOrEqual(at + 2 * HOUR - HOUR);
  });
});

describe('silences', () => {
  it('mute a matching firing alert; expiring the silence notifies it at once', async () => {
    const h = await harness([{ kind: 'persisted', window: '1d' }]);
    const s = parseSilence({ matchers: [{ name: 'hook_name', value: 'Session.*', isRegex: true }], endsAt: new Date(T0 + HOUR).toISOString(), createdBy: 'ops', comment: 'known, fix in flight' }, T0);
    await h.alerting.engine.silences.add(s);
    await h.push(over, { ...over, hookName: 'PostToolUse:Bash' });
    expect(h.notes().map((n) => n.hook)).toEqual(['PostToolUse:Bash']);
    const silenced = h.alerting.engine.alerts().find((a) => a.labels['hook_name'] === 'SessionStart:startup');
    expect(silenced?.silencedBy).toEqual([s.id]);
    await h.run(10 * MIN);
    expect(h.notes()).toHaveLength(1);
    await h.alerting.engine.silences.expire(s.id);
    await h.alerting.engine.evaluate('notify');
    await h.alerting.dispatcher.idle();
    expect(h.notes().map((n) => n.hook)).toEqual(['PostToolUse:Bash', 'SessionStart:startup']);
    expect(h.alerting.engine.silences.list()[0]?.state).toBe('expired');
  });

  it('mute the resolution of an alert that resolves while silenced, as in Alertmanager; the alerts list says its receiver had its firing only', async () => {
    const h = await harness([{ kind: 'persisted', window: '1m' }]);
    await h.push(over);
    await h.alerting.engine.silences.add(parseSilence({ matchers: [{ name: 'hook_name', value: 'SessionStart:startup' }], endsAt: new Date(T0 + HOUR).toISOString(), createdBy: 'ops', comment: 'on it' }, T0));
    await h.run(5 * MIN);
    const resolved = (await h.alerting.engine.readModel.alertsWithDeliveries()).find((a) => a.labels['hook_name'] === 'SessionStart:startup');
    expect(resolved?.state).toBe('resolved');
    expect(h.notes().map((n) => n.status)).toEqual(['firing']);
    expect(resolved?.deliveries.map((d) => [d.receiver, d.status, d.outcome])).toEqual([['ops', 'firing', 'delivered']]);
    // Expiring the silence afterwards sends nothing either: the resolution was muted, not postponed.
    await h.run(HOUR);
    expect(h.notes().map((n) => n.status)).toEqual(['firing']);
  });

  it('end on their own at endsAt', async () => {
    const h = await harness([{ kind: 'persisted', window: '1d' }]);
    await h.alerting.engine.silences.add(parseSilence({ matchers: [{ name: 'alertname', value: 'persisted' }], endsAt: new Date(T0 + 5 * MIN).toISOString(), createdBy: 'ops', comment: 'deploy' }, T0));
    await h.push(over);
    await h.run(4 * MIN);
    expect(h.notes()).toEqual([]);
    await h.run(2 * MIN);
    expect(h.notes()).toHaveLength(1);
    expect(h.notes()[0]?.at).toBeGreaterThanOrEqual(5 * MIN);
    expect(h.notes()[0]?.at).toBeLessThanOrEqual(5 * MIN + TICK);
  });
});

/** Holds the next request `sink` takes until `release` (200 then), and answers the ones after it at once. */
function holdNextRequest(sink: WebhookSink): { arrived: Promise<void>; release: () => void } {
  let release = (): void => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  let arrive = (): void => undefined;
  const arrived = new Promise<void>((resolve) => (arrive = resolve));
  let seen = 0;
  sink.reply = () => (seen++ === 0 ? (arrive(), { status: 200, hold: held }) : { status: 200 });
  return { arrived, release: () => release() };
}

describe('resolutions', () => {
  /** The status of each notification delivered, with the startsAt of its alert. */
  const delivered = (h: Harness): [string, string | undefined][] => h.sink.bodies<AlertmanagerWebhookBody>().map((b) => [b.status, b.alerts[0]?.startsAt]);

  it('go only to a receiver that had the alert\'s firing, as Alertmanager: none after a firing it refused, across a restart too', async () => {
    for (const restart of [false, true]) {
      const h = await harness([{ kind: 'persisted', window: '1m' }]);
      h.sink.reply = () => ({ status: 400 });
      await h.push(over);
      expect(h.sink.requests.map((q) => q.status)).toEqual([400]);
      h.sink.reply = () => ({ status: 200 });
      if (restart) await h.restart();
      // The alert resolves within 3 minutes, before the refused firing is due again.
      await h.run(3 * MIN);
      expect(h.alerting.engine.alerts().map((a) => a.state)).toEqual(['resolved']);
      expect({ restart, requests: h.sink.requests.map((q) => [q.status, (JSON.parse(q.body) as AlertmanagerWebhookBody).status]) }).toEqual({ restart, requests: [[400, 'firing']] });
    }
  });

  it('go to an Alertmanager receiver whose first post was refused: its renewals carry the firing alert', async () => {
    const h = await harness([{ kind: 'persisted', window: '1m' }], { receiverType: 'alertmanager' });
    h.sink.reply = () => ({ status: 400 });
    await h.push(over);
    h.sink.reply = () => ({ status: 200 });
    await h.run(3 * MIN);
    const posted = h.sink.requests.map((q) => [q.status, (JSON.parse(q.body) as { endsAt: string }[])[0]?.endsAt ?? '']);
    expect(posted.map(([status]) => status)).toEqual([400, 200]);
    // Firing (endsAt ahead), then resolved at the time it resolved.
    expect(Date.parse(String(posted[0]?.[1]))).toBeGreaterThan(T0);
    expect(Date.parse(String(posted[1]?.[1]))).toBeLessThanOrEqual(h.clock.now());
  });

  it('to an Alertmanager receiver are taken after a renewal that carried the alert firing, however late the receiver takes that renewal', async () => {
    const h = await harness([{ kind: 'persisted', window: '1m' }], { receiverType: 'alertmanager' });
    await h.push(over);
    expect(h.sink.requests).toHaveLength(1);
    // The next push, a renewal, reaches the receiver and is held there; the ones after it are taken at once.
    const { arrived: renewalArrived, release } = holdNextRequest(h.sink);
    const [receiver] = parseReceivers([{ name: 'ops', type: 'alertmanager', url: `${h.sink.url}/hook` }]);
    const renewal = h.alerting.refresher.push(receiver as NonNullable<typeof receiver>);
    await renewalArrived;
    // The alert resolves while the renewal is held.
    h.clock.advance(3 * MIN);
    await h.alerting.engine.evaluate('all');
    expect(h.alerting.engine.alerts().map((a) => a.state)).toEqual(['resolved']);
    // The renewal is taken once the resolution has been, or after a second (a resolution that waits for it is not).
    await h.sink.waitFor(2, 1000).catch(() => undefined);
    release();
    await renewal;
    await h.alerting.dispatcher.idle();
    // In the order the receiver took them: firing, renewed, and last the resolution (endsAt passed), so the alert
    // ends there instead of firing again until the renewal's endsAt.
    const ends = h.sink.requests.map((q) => Date.parse((JSON.parse(q.body) as { endsAt: string }[])[0]?.endsAt ?? ''));
    expect(ends.map((t) => (t > h.clock.now() ? 'firing' : 'resolved'))).toEqual(['firing', 'firing', 'resolved']);
  });

  it('to an Alertmanager receiver are posted again after a renewal that timed out, which Alertmanager may still take later', async () => {
    const h = await harness([{ kind: 'persisted', window: '1m' }], { receiverType: 'alertmanager' });
    await h.push(over);
    // The next push, a renewal, reaches the receiver and is held there past the receiver's timeout, then taken.
    const { arrived: renewalArrived, release } = holdNextRequest(h.sink);
    const [receiver] = parseReceivers([{ name: 'ops', type: 'alertmanager', url: `${h.sink.url}/hook`, timeout: '200ms' }]);
    const am = receiver as NonNullable<typeof receiver>;
    const renewal = h.alerting.refresher.push(am);
    await renewalArrived;
    h.clock.advance(3 * MIN);
    await h.alerting.engine.evaluate('all');
    expect(h.alerting.engine.alerts().map((a) => a.state)).toEqual(['resolved']);
    await renewal;
    expect(h.alerting.refresher.byReceiver.get('ops')).toEqual({ delivered: 0, failed: 1 });
    // The resolution goes once hookwatch gave up on the renewal, and the receiver takes the renewal after it.
    await h.alerting.dispatcher.idle();
    release();
    await h.sink.waitFor(3, 2000);
    // The next resend interval posts the resolution again: Alertmanager's last word on the alert is that it ended.
    h.clock.advance(MIN);
    await h.alerting.refresher.push(am);
    const states = h.sink.requests.map((q) => (Date.parse((JSON.parse(q.body) as { endsAt: string }[])[0]?.endsAt ?? '') > q.at ? 'firing' : 'resolved'));
    expect(states).toEqual(['firing', 'resolved', 'firing', 'resolved']);
    // It is posted again with every renewal push until 15 minutes after it resolved, then no more.
    const endsAt = h.alerting.engine.alerts()[0]?.endsAt ?? '';
    h.clock.advance(Date.parse(endsAt) + 15 * MIN - 1 - h.clock.now());
    await h.alerting.refresher.push(am);
    expect((JSON.parse(h.sink.requests[4]?.body ?? '[]') as { endsAt: string }[]).map((a) => a.endsAt)).toEqual([endsAt]);
    h.clock.advance(1);
    await h.alerting.refresher.push(am);
    expect(h.sink.requests).toHaveLength(5);
  });

  it('to an Alertmanager receiver, posted again by a renewal, are taken before the firing of the alert\'s next episode', async () => {
    const h = await harness([{ kind: 'persisted', window: '1m' }], { receiverType: 'alertmanager' });
    await h.push(over);
    h.clock.advance(3 * MIN);
    await h.alerting.engine.evaluate('all');
    await h.alerting.dispatcher.idle();
    expect(h.sink.requests).toHaveLength(2);
    // A renewal, carrying the resolution again, reaches the receiver and is held there.
    const { arrived: renewalArrived, release } = holdNextRequest(h.sink);
    const [receiver] = parseReceivers([{ name: 'ops', type: 'alertmanager', url: `${h.sink.url}/hook` }]);
    const renewal = h.alerting.refresher.push(receiver as NonNullable<typeof receiver>);
    await renewalArrived;
    // The alert fires again, under the same labels, while the renewal is held.
    const firedAgain = h.push(over);
    // The renewal is taken once the new firing has been, or after a second (a firing that waits for it is not).
    await h.sink.waitFor(3, 1000).catch(() => undefined);
    expect(h.alerting.engine.alerts().map((a) => a.state)).toEqual(['firing', 'resolved']);
    release();
    await renewal;
    await firedAgain;
    // Alertmanager replaces an alert by one of the same labels whose time does not overlap it: the old resolution
    // taken last would resolve the new episode there. The receiver takes the new firing last.
    const ends = h.sink.requests.map((q) => Date.parse((JSON.parse(q.body) as { endsAt: string }[])[0]?.endsAt ?? ''));
    expect(ends.map((t) => (t > h.clock.now() ? 'firing' : 'resolved'))).toEqual(['firing', 'resolved', 'resolved', 'firing']);
  });

  it('to an Alertmanager receiver are posted again with every renewal, however many resolved at once', async () => {
    // More than the alerts list shows of those resolved (MAX_RESOLVED_LISTED): three rules' alerts on 400 hooks.
    const rules = ['lost_a', 'lost_b', 'lost_c'];
    const h = await harness(rules.map((name) => ({ kind: 'persisted', name, window: '1m' })), { receiverType: 'alertmanager' });
    const hooks = 400;
    await h.push(...Array.from({ length: hooks }, (_, i) => ({ ...over, hookName: `SessionStart:h${i}` })));
    h.clock.advance(3 * MIN);
    await h.alerting.engine.evaluate('all');
    await h.alerting.dispatcher.idle();
    expect(h.alerting.engine.alerts().filter((a) => a.state === 'resolved')).toHaveLength(MAX_RESOLVED_LISTED);
    const [receiver] = parseReceivers([{ name: 'ops', type: 'alertmanager', url: `${h.sink.url}/hook` }]);
    const before = h.sink.requests.length;
    await h.alerting.refresher.push(receiver as NonNullable<typeof receiver>);
    // 1200 alerts: posted in batches of 256, as Prometheus does.
    const batches = h.sink.requests.slice(before).map((q) => JSON.parse(q.body) as { labels: Record<string, string>; endsAt: string }[]);
    expect(batches.map((b) => b.length)).toEqual([256, 256, 256, 256, 176]);
    const renewal = batches.flat();
    expect(new Set(renewal.map((a) => `${a.labels['alertname']} ${a.labels['hook_name']}`))).toEqual(new Set(rules.flatMap((r) => Array.from({ length: hooks }, (_, i) => `${r} SessionStart:h${i}`))));
    expect(renewal.every((a) => Date.parse(a.endsAt) <= h.clock.now())).toBe(true);
  }, 120_000);

  it('go to a receiver that had the firing a group_interval after refusing it', async () => {
    const h = await harness([{ kind: 'persisted', window: '10m' }]);
    h.sink.reply = () => ({ status: 400 });
    await h.push(over);
    h.sink.reply = () => ({ status: 200 });
    await h.run(20 * MIN);
    expect(h.notes().map((n) => n.status)).toEqual(['firing', 'resolved']);
  });

  it('follow a firing still undelivered when the alert resolved, once it is delivered after a restart', async () => {
    const h = await harness([{ kind: 'persisted', window: '1m' }]);
    await h.fireWhileDown(over);
    await h.alerting.stop();
    h.sink.reply = () => ({ status: 200 });
    // Down past the alert's window: the first evaluation after the start resolves it, the firing still in the outbox.
    h.clock.advance(3 * MIN);
    await h.restart();
    await h.run(TICK);
    expect(h.notes().map((n) => n.status)).toEqual(['firing', 'resolved']);
  });

  it('given up on are sent again a group_interval later, once delivered', async () => {
    const h = await harness([{ kind: 'persisted', window: '1m' }]);
    await h.push(over);
    h.sink.reply = () => ({ status: 400 });
    await h.run(3 * MIN);
    const refused = h.sink.requests.filter((q) => q.status === 400);
    expect(refused.map((q) => (JSON.parse(q.body) as AlertmanagerWebhookBody).status)).toEqual(['resolved']);
    const failedAt = (refused[0]?.at ?? NaN) - T0;
    h.sink.reply = () => ({ status: 200 });
    await h.run(failedAt + 5 * MIN - TICK - (h.clock.now() - T0));
    expect(h.notes().map((n) => n.status)).toEqual(['firing']);
    await h.run(2 * TICK);
    const notes = h.notes();
    expect(notes.map((n) => n.status)).toEqual(['firing', 'resolved']);
    expect(notes[1]?.at).toBeGreaterThanOrEqual(failedAt + 5 * MIN);
    expect(notes[1]?.at).toBeLessThanOrEqual(failedAt + 5 * MIN + TICK);
    // A new notification (a new webhook-id), once.
    expect(new Set(h.sink.requests.map((q) => q.headers['webhook-id'])).size).toBe(3);
    await h.run(HOUR);
    expect(h.notes()).toHaveLength(2);
  });

  it('still being retried when the alert fires again are taken before the new firing, which never passes them', async () => {
    for (const receiverType of [undefined, 'alertmanager'] as const) {
      const h = await harness([{ kind: 'persisted', window: '1m' }], receiverType ? { receiverType } : {});
      /** Whether each request carried the alert firing or resolved, by its receiver type's body. */
      const state = (body: string): string => receiverType
        ? (Date.parse((JSON.parse(body) as { endsAt: string }[])[0]?.endsAt ?? '') > h.clock.now() ? 'firing' : 'resolved')
        : (JSON.parse(body) as AlertmanagerWebhookBody).status;
      await h.push(over);
      // The receiver refuses resolutions (503, retried) and takes firings: a firing let past one would be taken first.
      let refuse = true;
      h.sink.reply = (q) => ({ status: refuse && state(q.body) === 'resolved' ? 503 : 200 });
      h.clock.advance(3 * MIN);
      await h.alerting.engine.evaluate('all');
      await h.sink.waitFor(3);
      // The alert fires again, under the same labels, while its resolution waits for its next attempt.
      const r = await h.store.ingest([hookEvent({ ...over, timeMs: h.clock.now() })]);
      h.alerting.engine.onIngested(r.inserted);
      await h.alerting.engine.evaluate('notify');
      expect(h.alerting.engine.alerts().map((a) => a.state)).toEqual(['firing', 'resolved']);
      // Refused twice more after the new firing was queued, then taken.
      const refusedBefore = h.sink.requests.length;
      await h.sink.waitFor(refusedBefore + 2);
      refuse = false;
      await h.alerting.dispatcher.idle();
      const taken = h.sink.requests.filter((q) => q.status === 200);
      const [second, first] = h.alerting.engine.alerts().map((a) => a.startsAt);
      const startsAt = (body: string): string | undefined => receiverType ? (JSON.parse(body) as { startsAt: string }[])[0]?.startsAt : (JSON.parse(body) as AlertmanagerWebhookBody).alerts[0]?.startsAt;
      // The receiver ends with the new episode firing, not with the old one's resolution.
      expect({ receiverType, taken: taken.map((q) => [state(q.body), startsAt(q.body)]) }).toEqual({ receiverType, taken: [['firing', first], ['resolved', first], ['firing', second]] });
      expect(h.sink.requests.filter((q) => q.status === 503).every((q) => state(q.body) === 'resolved')).toBe(true);
    }
  });

  it('given up on are not sent again once the alert fired again: the receiver has the new episode', async () => {
    const h = await harness([{ kind: 'persisted', window: '1m' }]);
    await h.push(over);
    h.sink.reply = () => ({ status: 400 });
    await h.run(3 * MIN);
    expect(h.sink.requests.map((q) => q.status)).toEqual([200, 400]);
    h.sink.reply = () => ({ status: 200 });
    // Fires again before the refused resolution is due again, and resolves again (before and after it is due).
    await h.push(over);
    await h.run(HOUR);
    const episodes = [...new Set(delivered(h).map(([, startsAt]) => startsAt))];
    expect(episodes).toHaveLength(2);
    expect(delivered(h)).toEqual([['firing', episodes[0]], ['firing', episodes[1]], ['resolved', episodes[1]]]);
  });
});

describe('other rule kinds', () => {
  it('persisted_ratio: above the share of executions, with enough executions', async () => {
    const h = await harness([{ kind: 'persisted_ratio', threshold: 0.4, minExecutions: 3, window: '1h' }]);
    await h.push(over, fine);
    expect(h.notes()).toEqual([]);
    await h.push({ ...fine, hookName: 'SessionStart:startup' });
    expect(h.notes()).toEqual([]); // 1 of 3 = 33%
    await h.push(over);
    expect(h.notes()).toEqual([expect.objectContaining({ alertname: 'persisted_ratio', hook: 'SessionStart:startup', at: 0 })]);
  });

  it('headroom: a hook above 80% of the cap, but not one already over it (a persisted rule\'s), nor a small one', async () => {
    const h = await harness([{ kind: 'headroom' }, { kind: 'persisted' }]);
    await h.push({ hookName: 'PreToolUse:Bash', additionalContextChars: 8_500, stdoutChars: 8_550, outputsPersisted: 0 }, over, fine);
    const notes = h.notes().filter((n) => n.alertname === 'headroom');
    expect(notes.map((n) => n.hook)).toEqual(['PreToolUse:Bash']);
    expect(h.alerting.engine.alerts()[0]?.annotations['headroom']).toBe(String(10_000 - 8_550));
  });

  it('headroom: resolving because the hook went over the cap is sent as superseded, not as an all-clear', async () => {
    const h = await harness([{ kind: 'headroom', window: '1m' }, { kind: 'persisted', window: '1m' }]);
    await h.push({ hookName: 'PreToolUse:Bash', additionalContextChars: 9_500, stdoutChars: 9_600, outputsPersisted: 0 });
    expect(h.notes().map((n) => [n.status, n.alertname])).toEqual([['firing', 'headroom']]);
    h.clock.advance(2 * 60_000);
    await h.push({ hookName: 'PreToolUse:Bash', additionalContextChars: 10_500, stdoutChars: 10_600, outputsPersisted: 1 });
    await h.run(TICK);
    const sent = supersedeTrail(h);
    expect(sent.map((x) => x.slice(0, 3))).toEqual([['firing', 'headroom', null], ['firing', 'persisted', null], ['resolved', 'headroom', 'persisted']]);
    expect(sent[2]?.[3]).toMatch(/^Superseded: the hook went over the cap \(alert persisted is firing\)\. PreToolUse:Bash: largest output/);
  });

  it('headroom: superseded, not resolved as an all-clear, when the output over the cap is stored while an evaluation reads', async () => {
    // The default order of the rules: persisted first.
    const h = await harness([{ kind: 'persisted', window: '1h' }, { kind: 'headroom', window: '1h' }]);
    await h.push({ hookName: 'PreToolUse:Bash', additionalContextChars: 9_500, stdoutChars: 9_600, outputsPersisted: 0 });
    expect(h.notes().map((n) => [n.status, n.alertname])).toEqual([['firing', 'headroom']]);
    h.clock.advance(MIN);
    // The output over the cap is committed while the next timed evaluation runs, just after its first read of the
    // hooks' counters: a read made before it does not see it, one made after does.
    const stored = h.storeAtNextRead([{ hookName: 'PreToolUse:Bash', additionalContextChars: 10_500, stdoutChars: 10_600, outputsPersisted: 1, timeMs: h.clock.now() }], 'after');
    await h.alerting.engine.evaluate('all');
    // Then the batch's own evaluation, as on ingest, and the timer's next.
    h.alerting.engine.onIngested(await stored);
    await h.alerting.engine.evaluate('notify');
    await h.alerting.dispatcher.idle();
    await h.run(TICK);
    expect(supersedeTrail(h).map((x) => x.slice(0, 3))).toEqual([['firing', 'headroom', null], ['firing', 'persisted', null], ['resolved', 'headroom', 'persisted']]);
  });

  it('headroom: superseded, not resolved as an all-clear, when an evaluation on ingest runs it for another batch as the output over the cap is stored', async () => {
    const h = await harness([{ kind: 'persisted', window: '1h' }, { kind: 'headroom', window: '1h' }]);
    await h.push({ hookName: 'PreToolUse:Bash', additionalContextChars: 9_500, stdoutChars: 9_600, outputsPersisted: 0 });
    expect(h.notes().map((n) => [n.status, n.alertname])).toEqual([['firing', 'headroom']]);
    h.clock.advance(MIN);
    // A batch near the cap triggers the headroom rule alone. The output over the cap is committed once its evaluation
    // has taken the rules it runs, just before its first read of the hooks' counters (on another replica, it is in
    // the database before its signal reaches the leader): its own evaluation comes next.
    let signalled = false;
    void h.storeAtNextRead([{ hookName: 'PreToolUse:Bash', additionalContextChars: 10_500, stdoutChars: 10_600, outputsPersisted: 1, timeMs: h.clock.now() }], 'before').then((events) => {
      h.alerting.engine.onIngested(events);
      signalled = true;
    });
    await h.push({ hookName: 'PreToolUse:Bash', additionalContextChars: 9_600, stdoutChars: 9_700, outputsPersisted: 0 });
    expect(signalled).toBe(true);
    await h.alerting.engine.evaluate('notify');
    await h.alerting.dispatcher.idle();
    await h.run(TICK);
    expect(supersedeTrail(h).map((x) => x.slice(0, 3))).toEqual([['firing', 'headroom', null], ['firing', 'persisted', null], ['resolved', 'headroom', 'persisted']]);
  });

  it('headroom: a Slack channel reads a superseded resolution as the hook going over the cap, never as an all-clear', async () => {
    const h = await harness([{ kind: 'headroom', window: '1m' }, { kind: 'persisted', window: '1m' }], { receiverType: 'slack' });
    await h.push({ hookName: 'PreToolUse:Bash', additionalContextChars: 9_500, stdoutChars: 9_600, outputsPersisted: 0 });
    h.clock.advance(2 * 60_000);
    await h.push({ hookName: 'PreToolUse:Bash', additionalContextChars: 10_500, stdoutChars: 10_600, outputsPersisted: 1 });
    await h.run(TICK);
    const heads = h.sink.delivered().map((r) => (JSON.parse(r.body) as { text: string }).text.split('\n')[0]);
    expect(heads).toEqual([
      ':rotating_light: *[FIRING] headroom* · PreToolUse:Bash',
      ':rotating_light: *[FIRING] persisted* · PreToolUse:Bash',
      ':warning: *[SUPERSEDED by persisted] headroom* · PreToolUse:Bash',
    ]);
  });

  describe('headroom: a hook that goes over the cap while its persisted alert is pending', () => {
    const near = { hookName: 'PreToolUse:Bash', stdoutChars: 9_000, outputsPersisted: 0 };
    const overCap = { hookName: 'PreToolUse:Bash', stdoutChars: 12_100, additionalContextChars: 12_000, outputsPersisted: 1 };

    it('keeps the headroom alert firing until the persisted alert fires, then resolves it as superseded', async () => {
      const h = await harness([{ kind: 'persisted', window: '2m', for: '1m' }, { kind: 'headroom', window: '2m' }]);
      await h.push(near);
      h.clock.advance(4_000);
      await h.push(overCap);
      // The hook got worse: no all-clear while the persisted alert waits for its `for`.
      expect(supersedeTrail(h).map((x) => x.slice(0, 3))).toEqual([['firing', 'headroom', null]]);
      expect(h.alerting.engine.alerts().map((a) => [a.labels['alertname'], a.state]).sort()).toEqual([['headroom', 'firing'], ['persisted', 'pending']]);
      await h.run(MIN - 4_000 + TICK);
      const sent = supersedeTrail(h);
      expect(sent.map((x) => x.slice(0, 3))).toEqual([['firing', 'headroom', null], ['firing', 'persisted', null], ['resolved', 'headroom', 'persisted']]);
      expect(sent[2]?.[3]).toMatch(/^Superseded: the hook went over the cap \(alert persisted is firing\)\./);
      const at = h.notes().map((n) => n.at);
      expect(at[1]).toBeGreaterThanOrEqual(4_000 + MIN);
      expect(at[2]).toBe(at[1]);
    });

    it('a Slack channel never reads [RESOLVED] for it', async () => {
      const h = await harness([{ kind: 'persisted', window: '2m', for: '1m' }, { kind: 'headroom', window: '2m' }], { receiverType: 'slack' });
      await h.push(near);
      h.clock.advance(4_000);
      await h.push(overCap);
      await h.run(MIN + TICK);
      const heads = h.sink.delivered().map((r) => (JSON.parse(r.body) as { text: string }).text.split('\n')[0]);
      expect(heads).toEqual([
        ':rotating_light: *[FIRING] headroom* · PreToolUse:Bash',
        ':rotating_light: *[FIRING] persisted* · PreToolUse:Bash',
        ':warning: *[SUPERSEDED by persisted] headroom* · PreToolUse:Bash',
      ]);
    });

    it('keeps the headroom alert firing when the persisted alert drops without firing, for as long as the output over the cap is in its window', async () => {
      // The persisted rule's `for` outlasts the output in its window: it never fires on it, and the headroom alert is
      // the one that says the hook went over the cap.
      const h = await harness([{ kind: 'persisted', window: '1m', for: '10m' }, { kind: 'headroom', window: '5m' }]);
      await h.push(near);
      h.clock.advance(4_000);
      await h.push(overCap);
      await h.run(3 * MIN);
      expect(h.alerting.engine.alerts().filter((a) => a.state !== 'resolved').map((a) => [a.labels['alertname'], a.state])).toEqual([['headroom', 'firing']]);
      expect(h.notes().map((n) => [n.status, n.alertname])).toEqual([['firing', 'headroom']]);
      // Once the window holds neither the output over the cap nor the one near it, the alert resolves.
      await h.run(3 * MIN + TICK);
      const notes = h.notes();
      expect(notes.map((n) => [n.status, n.alertname])).toEqual([['firing', 'headroom'], ['resolved', 'headroom']]);
      expect(notes[1]?.at).toBeGreaterThanOrEqual(4_000 + 5 * MIN);
    });
  });

  describe('a hook that keeps going over the cap with no persisted rule that can fire on it', () => {
    const near = { hookName: 'PreToolUse:Bash', stdoutChars: 9_000, outputsPersisted: 0 };
    const overCap = { hookName: 'PreToolUse:Bash', stdoutChars: 24_100, outputsPersisted: 1 };
    const OVER = 'PreToolUse:Bash: 1 output over the 10,000-character cap in the last 5m, saved to a file: the model got a ~2,000-character preview instead; largest output 24,100 characters, 14,100 over the cap (alert above 8,000).';

    it.each([
      ['no persisted rule', []],
      // Its `for` outlasts its window: it never fires on one output over the cap.
      ['a persisted rule whose for outlasts its window', [{ kind: 'persisted', window: '1m', for: '2m' }]],
    ])('headroom, %s: the alert says the hook went over the cap, and every repeat says so', async (_, persisted) => {
      const h = await harness([...persisted, { kind: 'headroom', window: '5m' }], { repeatIntervalMs: 20 * MIN });
      await h.push(near);
      for (let i = 0; i < 12; i++) {
        await h.run(5 * MIN);
        await h.push(overCap);
      }
      const sent = supersedeTrail(h).filter((x) => x[1] === 'headroom');
      expect(sent.map((x) => x[0])).toEqual(['firing', 'firing', 'firing', 'firing']);
      expect(sent[0]?.[3]).toBe('PreToolUse:Bash: largest output in the last 5m is 9,000 characters, 1,000 below the 10,000-character cap (alert above 8,000).');
      expect(sent.slice(1).map((x) => x[3])).toEqual([OVER, OVER, OVER]);
      // The output before the last has left the window.
      await h.run(2 * MIN);
      const a = h.alerting.engine.alerts().find((x) => x.rule === 'headroom');
      expect(a?.state).toBe('firing');
      expect(a?.annotations).toMatchObject({ summary: OVER, largest_output: '24100', outputs_persisted: '1' });
    });

    it('headroom: a persisted rule without a for fires on ingest, whatever the evaluation interval: headroom is superseded, not a second page', async () => {
      // The window (5m) is shorter than the evaluation interval (10m), but a persisted rule without a `for` fires on
      // the ingest that brought the output: it is the one that tells, and the headroom alert steps aside for it.
      const h = await harness([{ kind: 'persisted', window: '5m' }, { kind: 'headroom', window: '5m' }], { evaluationIntervalMs: 10 * MIN });
      await h.push(near);
      h.clock.advance(4_000);
      await h.push(overCap);
      const sent = supersedeTrail(h);
      expect(sent.map((x) => x.slice(0, 3))).toEqual([['firing', 'headroom', null], ['firing', 'persisted', null], ['resolved', 'headroom', 'persisted']]);
    });

    it('headroom: a hook first seen over the cap raises the alert, over the cap', async () => {
      const h = await harness([{ kind: 'headroom', window: '5m' }]);
      await h.push(overCap);
      expect(supersedeTrail(h)).toEqual([['firing', 'headroom', null, OVER]]);
    });

    it('growth: an alert on a hook that goes over the cap says so instead of its stale trend', async () => {
      const start = T0 - 3 * DAY;
      const h = await harness([{ kind: 'growth', horizonDays: 14 }], { start: T0, repeatIntervalMs: HOUR });
      await h.pushAt([5000, 6000, 7000, 8000].map((v, i) => ({ hookName: 'Stop', stdoutChars: v, outputsPersisted: 0, timeMs: start + i * DAY })));
      await h.run(TICK);
      expect(h.notes().map((n) => [n.status, n.alertname])).toEqual([['firing', 'growth']]);
      await h.push({ hookName: 'Stop', stdoutChars: 12_000, outputsPersisted: 1 });
      await h.run(HOUR);
      const sent = supersedeTrail(h);
      expect(sent.map((x) => x[0])).toEqual(['firing', 'firing']);
      expect(sent[1]?.[3]).toBe('Stop: 1 output over the 10,000-character cap in the last 14d, saved to a file: the model got a ~2,000-character preview instead; largest output 12,000 characters, 2,000 over the cap.');
    });
  });

  describe('a held alert of a hook over the cap, its persisted alert pending', () => {
    it('says the hook went over the cap, never what it said below it', async () => {
      const h = await harness([{ kind: 'persisted', window: '10m', for: '5m' }, { kind: 'headroom', window: '5m' }], { repeatIntervalMs: 2 * MIN });
      await h.push({ hookName: 'PreToolUse:Bash', stdoutChars: 9_000, outputsPersisted: 0 });
      h.clock.advance(TICK);
      await h.push({ hookName: 'PreToolUse:Bash', stdoutChars: 24_100, outputsPersisted: 1 });
      expect(h.alerting.engine.alerts().map((a) => [a.rule, a.state]).sort()).toEqual([['headroom', 'firing'], ['persisted', 'pending']]);
      await h.run(2 * MIN + TICK);
      const sent = supersedeTrail(h);
      expect(sent.map((x) => x.slice(0, 2))).toEqual([['firing', 'headroom'], ['firing', 'headroom']]);
      expect(sent[1]?.[3]).toBe('PreToolUse:Bash: 1 output over the 10,000-character cap in the last 5m, saved to a file: the model got a ~2,000-character preview instead; largest output 24,100 characters, 14,100 over the cap (alert above 8,000).');
      await h.run(3 * MIN);
      const after = supersedeTrail(h).slice(2);
      expect(after.map((x) => x.slice(0, 3))).toEqual([['firing', 'headroom', null], ['firing', 'persisted', null], ['resolved', 'headroom', 'persisted']]);
      expect(after[0]?.[3]).toBe(sent[1]?.[3]);
      expect(after[2]?.[3]).toBe(`Superseded: the hook went over the cap (alert persisted is firing). ${sent[1]?.[3]}`);
    });
  });

  it('headroom: superseded by a persisted rule whatever the two rules are named', async () => {
    const h = await harness([{ kind: 'headroom', name: 'near_cap', window: '1m' }, { kind: 'persisted', name: 'hook_output_lost', window: '1m' }]);
    await h.push({ hookName: 'PreToolUse:Bash', additionalContextChars: 9_500, stdoutChars: 9_600, outputsPersisted: 0 });
    h.clock.advance(2 * 60_000);
    await h.push({ hookName: 'PreToolUse:Bash', additionalContextChars: 10_500, stdoutChars: 10_600, outputsPersisted: 1 });
    await h.run(TICK);
    const sent = supersedeTrail(h);
    expect(sent.map((x) => x.slice(0, 3))).toEqual([['firing', 'near_cap', null], ['firing', 'hook_output_lost', null], ['resolved', 'near_cap', 'hook_output_lost']]);
    expect(sent[2]?.[3]).toMatch(/^Superseded: the hook went over the cap \(alert hook_output_lost is firing\)\./);
  });

  it('headroom: a sum over the cap with nothing persisted reads "over the cap", never a negative "below"', async () => {
    const h = await harness([{ kind: 'headroom' }]);
    await h.push({ hookName: 'PreToolUse:Bash', additionalContextChars: 10_000, stdoutChars: 10_069, outputsPersisted: 0 });
    const summary = h.alerting.engine.alerts()[0]?.annotations['summary'] ?? '';
    expect(summary).toContain('69 over the 10,000-character cap');
    expect(summary).not.toMatch(/-\d+ below/);
  });

  it('headroom: a sum over the cap from a client that does not send num_outputs_persisted never reads "none was persisted"', async () => {
    const h = await harness([{ kind: 'headroom' }]);
    // Two hooks whose additionalContext sums to 12,000 (neither string proved over the cap), from a client that sends
    // the sizes but not num_outputs_persisted: whether an output was persisted is unknown, not "none".
    const unreported = { ...hookEvent({ hookName: 'PreToolUse:Bash', numHooks: 2, additionalContextChars: 12_000, stdoutChars: 12_100, outputsPersisted: 0, timeMs: h.clock.now() }), outputsPersisted: null, status: 'near' as const };
    h.alerting.engine.onIngested((await h.store.ingest([unreported])).inserted);
    await h.alerting.engine.evaluate('notify');
    await h.alerting.dispatcher.idle();
    const summaries = h.sink.bodies<AlertmanagerWebhookBody>().map((b) => `${b.status} ${b.alerts[0]?.labels['alertname']}: ${b.alerts[0]?.annotations['summary']}`);
    expect(summaries).toEqual(['firing headroom: PreToolUse:Bash: largest output in the last 24h is 12,100 characters, 2,100 over the 10,000-character cap summed over the hooks that ran; no output was reported persisted (alert above 8,000).']);
  });

  it('growth: a daily largest output on course to cross the cap within the horizon', async () => {
    // Four days up to today, 1,000 more a day: 8,000 today, the cap two days after today's start.
    const start = T0 - 3 * DAY;
    const h = await harness([{ kind: 'growth', horizonDays: 14 }], { start: T0 });
    const days = [5000, 6000, 7000, 8000];
    await h.pushAt(days.map((v, i) => ({ hookName: 'Stop', additionalContextChars: v, stdoutChars: v, outputsPersisted: 0, timeMs: start + i * DAY })));
    await h.pushAt([0, 1, 2, 3].map((i) => ({ hookName: 'PreToolUse:Bash', additionalContextChars: 3000, stdoutChars: 3000, outputsPersisted: 0, timeMs: start + i * DAY })));
    await h.run(TICK);
    const notes = h.notes();
    expect(notes.map((n) => n.hook)).toEqual(['Stop']);
    const days2cap = Number(h.alerting.engine.alerts()[0]?.annotations['days_to_cap']);
    expect(days2cap).toBeGreaterThan(1.5);
    expect(days2cap).toBeLessThan(2.5);
    // Its link opens on the trend it counted, from its first day on.
    const link = new URL(h.sink.bodies<AlertmanagerWebhookBody>()[0]?.alerts[0]?.generatorURL ?? '');
    expect(Date.parse(link.searchParams.get('from') ?? '')).toBeLessThanOrEqual(start - HOUR);
  });

  it('growth: no alert from an output over the cap stored between the hooks\' counters and their daily series', async () => {
    // A flat trend, 4,000 a day for four days up to today: nothing to forecast.
    const start = T0 - 3 * DAY;
    const h = await harness([{ kind: 'growth', horizonDays: 14 }, { kind: 'persisted', window: '1h' }], { start: T0 });
    await h.pushAt([0, 1, 2, 3].map((i) => ({ hookName: 'Stop', additionalContextChars: 4000, stdoutChars: 4000, outputsPersisted: 0, timeMs: start + i * DAY })));
    await h.run(TICK);
    expect(h.notes()).toEqual([]);
    // An output over the cap is committed once the timer's evaluation has read the counters (nothing persisted): the
    // series read next has today at 10,500, a steep trend whose line is still below the cap. The hook is the
    // persisted rule's: a growth alert on it would fire, then resolve as superseded at the next evaluation.
    const stored = h.storeAtNextRead([{ hookName: 'Stop', additionalContextChars: 10_500, stdoutChars: 10_500, outputsPersisted: 1, timeMs: h.clock.now() + TICK }], 'after');
    await h.run(TICK);
    h.alerting.engine.onIngested(await stored);
    await h.alerting.engine.evaluate('notify');
    await h.alerting.dispatcher.idle();
    await h.run(TICK);
    expect(h.notes().map((n) => [n.status, n.alertname])).toEqual([['firing', 'persisted']]);
  });

  it('blind: names the client versions that send no size data', async () => {
    const h = await harness([{ kind: 'blind' }]);
    await h.push({ ...fine, additionalContextChars: null, serviceVersion: '2.1.197' }, fine);
    const notes = h.notes();
    expect(notes).toHaveLength(1);
    expect(notes[0]?.labels).toMatchObject({ alertname: 'blind', service_version: '2.1.197' });
    expect(h.alerting.engine.alerts()[0]?.annotations['summary']).toContain('2.1.197');
  });

  it('silence (hook): fires after the quiet time, resolves when the hook is heard again', async () => {
    const h = await harness([{ kind: 'silence', after: '10m', window: '1d' }]);
    await h.push(fine);
    await h.run(10 * MIN - TICK);
    expect(h.notes()).toEqual([]);
    await h.run(2 * TICK);
    expect(h.notes()).toEqual([expect.objectContaining({ status: 'firing', alertname: 'silence', hook: 'UserPromptSubmit' })]);
    expect(h.notes()[0]?.at).toBeGreaterThanOrEqual(10 * MIN);
    expect(h.notes()[0]?.at).toBeLessThanOrEqual(10 * MIN + TICK);
    await h.push(fine);
    await h.run(TICK);
    expect(h.notes().map((n) => n.status)).toEqual(['firing', 'resolved']);
  });

  it('silence (hook): stays firing while the hook stays quiet past the window, until it is heard again', async () => {
    const h = await harness([{ kind: 'silence', after: '10m', window: '30m' }]);
    const heard = h.clock.now();
    await h.push(fine);
    await h.run(10 * MIN + TICK);
    expect(h.notes().map((n) => [n.status, n.alertname])).toEqual([['firing', 'silence']]);
    // The last execution leaves the 30m window (31 minutes at the latest): the hook is still quiet.
    await h.run(50 * MIN - TICK);
    expect(h.notes().map((n) => n.status)).toEqual(['firing']);
    const alert = h.alerting.engine.alerts().find((a) => a.labels['alertname'] === 'silence');
    expect(alert).toMatchObject({ state: 'firing', annotations: { last_seen: new Date(heard).toISOString() } });
    expect(alert?.annotations['summary']).toBe(`UserPromptSubmit: no executions for 1h (alert after 10m); last seen ${new Date(heard).toISOString()}.`);
    await h.push(fine);
    await h.run(TICK);
    expect(h.notes().map((n) => n.status)).toEqual(['firing', 'resolved']);
  });

  it('silence (hook): with after plus the evaluation interval within the window, no timing of the timer misses a quiet hook', async () => {
    const interval = 5 * MIN;
    for (let offset = 0; offset < interval; offset += MIN) {
      const h = await harness([{ kind: 'silence', after: '55m', window: '1h' }]);
      await h.push(fine);
      // The timer's evaluations `interval` apart, the first `offset` after the hook was last seen.
      h.clock.advance(offset);
      for (let t = offset; t <= 2 * HOUR; t += interval) {
        await h.alerting.engine.evaluate('all');
        await h.alerting.dispatcher.idle();
        h.clock.advance(interval);
      }
      expect(h.notes().map((n) => [n.status, n.hook])).toEqual([['firing', 'UserPromptSubmit']]);
    }
  });

  it('silence (hook): the alerts of hooks past the window read their hooks in one store read per evaluation', async () => {
    const h = await harness([{ kind: 'silence', after: '10m', window: '30m' }]);
    const names = ['UserPromptSubmit', 'Stop', 'SessionStart:startup', 'PreToolUse:Bash'];
    await h.push(...names.map((hookName) => ({ ...fine, hookName })));
    await h.run(20 * MIN);
    expect(h.alerting.engine.alerts().filter((a) => a.state === 'firing')).toHaveLength(4);
    const reads: number[] = [];
    const hooks = h.store.hooks.bind(h.store);
    h.store.hooks = (ids) => {
      reads.push(ids.length);
      return hooks(ids);
    };
    h.store.hook = () => Promise.reject(new Error('one read per alert'));
    // Past the window: every alert kept by its hook's last-seen time, at each evaluation one read of the four.
    await h.run(20 * MIN);
    expect(h.alerting.engine.alerts().map((a) => [a.labels['hook_name'], a.state]).sort()).toEqual(names.map((n) => [n, 'firing']).sort());
    expect(h.notes().map((n) => n.status)).toEqual(['firing', 'firing', 'firing', 'firing']);
    expect(reads.length).toBeGreaterThan(0);
    expect(new Set(reads)).toEqual(new Set([4]));
  });

  it('silence (hook): a hook gone for good ends once retention removed its data, saying so, never as heard again', async () => {
    for (const receiverType of [undefined, 'slack', 'alertmanager'] as const) {
      const h = await harness([{ kind: 'silence', after: '10m', window: '30m' }], receiverType ? { receiverType } : {});
      const heard = h.clock.now();
      const id = hookId('UserPromptSubmit', 'UserPromptSubmit');
      // The dashboard link each receiver carries: Slack's "Open in hookwatch", the webhook's and Alertmanager's generatorURL.
      const linkOf = (body: string): URL => new URL(receiverType === 'slack' ? /<([^|>]+)\|Open in hookwatch>/.exec((JSON.parse(body) as { text: string }).text)?.[1] ?? ''
        : receiverType === 'alertmanager' ? (JSON.parse(body) as { generatorURL: string }[])[0]?.generatorURL ?? ''
          : (JSON.parse(body) as AlertmanagerWebhookBody).alerts[0]?.generatorURL ?? '');
      await h.push(fine);
      await h.run(40 * MIN);
      expect(h.sink.delivered()).toHaveLength(1);
      // Retention removes every event and rollup of the hook, and the hook with them.
      await h.store.prune(h.clock.now() + HOUR, h.clock.now() + HOUR);
      expect(await h.store.hook(hookId('UserPromptSubmit', 'UserPromptSubmit'))).toBeUndefined();
      await h.run(TICK);
      const sent = h.sink.delivered();
      expect(sent).toHaveLength(2);
      // Firing, the link opens the hook's page; ended, the hook is gone ("No such hook" there): it opens the alerts
      // page filtered to the hook, over the same range, where the ended alert is listed.
      const [firing, ended] = [linkOf(sent[0]?.body ?? ''), linkOf(sent[1]?.body ?? '')];
      expect(firing.pathname).toBe(`/hooks/${id}`);
      expect([ended.origin, ended.pathname, ended.searchParams.get('hook'), ended.searchParams.get('range')]).toEqual(['http://hookwatch.test', '/alerts', id, 'custom']);
      expect(Date.parse(ended.searchParams.get('from') ?? '')).toBeLessThanOrEqual(heard);
      expect(Date.parse(ended.searchParams.get('to') ?? '')).toBeGreaterThanOrEqual(h.clock.now() - TICK);
      if (receiverType === 'slack') {
        const text = (JSON.parse(sent[1]?.body ?? '{}') as { text: string }).text;
        expect(text.split('\n').slice(0, 2)).toEqual([
          ':heavy_minus_sign: *[ENDED: hook data expired] silence* · UserPromptSubmit',
          `UserPromptSubmit: the hook's data left retention with no execution since ${new Date(heard).toISOString()}: this alert ends because hookwatch no longer keeps the hook, not because it was heard again.`,
        ]);
        expect(text).not.toContain('[RESOLVED]');
      } else if (receiverType === undefined) {
        const body = JSON.parse(sent[1]?.body ?? '{}') as AlertmanagerWebhookBody;
        expect(body.status).toBe('resolved');
        expect(body.alerts[0]?.annotations).toMatchObject({
          data_expired: 'true',
          last_seen: new Date(heard).toISOString(),
          summary: `UserPromptSubmit: the hook's data left retention with no execution since ${new Date(heard).toISOString()}: this alert ends because hookwatch no longer keeps the hook, not because it was heard again.`,
        });
      }
    }
  });

  it('silence (feed): the whole feed quiet, its evidence from the feed\'s last event', async () => {
    const h = await harness([{ kind: 'silence', scope: 'feed', after: '30m' }]);
    const heard = h.clock.now();
    await h.push(fine);
    await h.run(29 * MIN);
    expect(h.notes()).toEqual([]);
    await h.run(2 * MIN);
    expect(h.notes()).toEqual([expect.objectContaining({ status: 'firing', alertname: 'silence' })]);
    expect(h.notes()[0]?.labels['scope']).toBe('feed');
    // The quiet stretch begins at the last event the feed sent, as a hook's begins at the hook's last execution.
    expect(h.alerting.engine.alerts()[0]).toMatchObject({ labels: { scope: 'feed' }, annotations: { last_event: new Date(heard).toISOString() }, firstEventAt: new Date(heard).toISOString() });
  });

  it('never_completed: a start with no complete, after the grace; a completed execution is fine', async () => {
    const h = await harness([{ kind: 'never_completed', after: '2m', window: '1h' }]);
    await h.push({ kind: 'start', hookName: 'UserPromptSubmit' }, { kind: 'start', hookName: 'Stop' }, { hookName: 'Stop', additionalContextChars: 10, outputsPersisted: 0 });
    await h.run(MIN);
    expect(h.notes()).toEqual([]);
    // Past the grace the alert is pending for the default `for` of 10 minutes (a complete landing just past the
    // window's end looks missing for a moment), then fires.
    await h.run(3 * MIN);
    expect(h.notes()).toEqual([]);
    await h.run(10 * MIN);
    const notes = h.notes();
    expect(notes).toEqual([expect.objectContaining({ status: 'firing', alertname: 'never_completed', hook: 'UserPromptSubmit' })]);
    expect(notes[0]?.at).toBeGreaterThanOrEqual(12 * MIN);
    expect(notes[0]?.at).toBeLessThanOrEqual(13 * MIN + TICK);
  });

  it('a healthy batch costs no evaluation on ingest; one that can fire a rule gets one', async () => {
    const h = await harness(null);
    const before = h.alerting.engine.stats.evaluations;
    await h.push(fine, { ...fine, hookName: 'Stop' });
    expect(h.alerting.engine.stats.evaluations - before).toBe(1); // the 'notify' pass the harness runs, nothing else
    await h.push(over);
    expect(h.alerting.engine.stats.evaluations - before).toBe(3);
    expect(h.notes()).toHaveLength(1);
  });

  it('an output measured over the cap from a client without num_outputs_persisted is notified on ingest, not at the next tick', async () => {
    const h = await harness(null);
    const measured = { ...hookEvent({ hookName: 'Stop:old-client', additionalContextChars: 11_000, outputsPersisted: 0, timeMs: h.clock.now() }), outputsPersisted: null, status: 'over' as const };
    const r = await h.store.ingest([measured]);
    h.alerting.engine.onIngested(r.inserted);
    // Only what the ingest evaluation queued runs: no timer tick, no evaluation of every rule.
    await h.alerting.engine.evaluate('notify');
    await h.alerting.dispatcher.idle();
    expect(h.notes().map((n) => `${n.status} ${n.alertname} ${n.hook}`)).toEqual(['firing persisted Stop:old-client']);
    // The client did not say how many outputs it persisted: the notification gives no count, never "0".
    const a = h.sink.bodies<AlertmanagerWebhookBody>()[0]?.alerts[0]?.annotations ?? {};
    expect(a).toMatchObject({ executions: '1', largest_output: '11060' });
    expect(a['outputs_persisted']).toBeUndefined();
    expect(a['summary']).toMatch(/^Stop:old-client: 1 execution in the last 1h with an output over the 10,000-character cap, .*\(measured size: this client does not report num_outputs_persisted\)\.$/);
  });

  it('persisted: a count reported by some clients, with outputs others only measured over the cap, is notified as at least', async () => {
    const h = await harness([{ kind: 'persisted', window: '1h' }]);
    // One execution whose client reports one persisted output, one from a client that does not report the count.
    const reported = hookEvent({ hookName: 'Stop:mixed-clients', additionalContextChars: 12_000, outputsPersisted: 1, timeMs: h.clock.now() });
    const measured = { ...hookEvent({ hookName: 'Stop:mixed-clients', additionalContextChars: 11_000, outputsPersisted: 0, timeMs: h.clock.now() }), outputsPersisted: null, status: 'over' as const };
    h.alerting.engine.onIngested((await h.store.ingest([reported, measured])).inserted);
    await h.alerting.engine.evaluate('notify');
    await h.alerting.dispatcher.idle();
    const bodies = h.sink.bodies<AlertmanagerWebhookBody>();
    expect(bodies.map((b) => `${b.status} ${b.alerts[0]?.labels['alertname']} ${b.alerts[0]?.labels['hook_name']}`)).toEqual(['firing persisted Stop:mixed-clients']);
    const a = bodies[0]?.alerts[0]?.annotations ?? {};
    expect(a['summary']).toBe(
      'Stop:mixed-clients: at least 2 outputs over the 10,000-character cap saved to a file in the last 1h; the model saw only a ~2,000-character preview while the hook reported success (measured size where a client does not report num_outputs_persisted).',
    );
    expect(a['description']).toMatch(/^2 of 2 executions lost output; largest reported output 12,060 characters\. Keep each output/);
    expect(a).toMatchObject({ executions: '2' });
    expect(a['outputs_persisted']).toBeUndefined();
  });

  describe('a hook some of whose executions came from a client without sizes', () => {
    /** The annotations of the webhook notification of `alertname`. */
    const annotationsOf = (h: Harness, alertname: string): Record<string, string> =>
      h.sink.bodies<AlertmanagerWebhookBody>().map((b) => b.alerts[0]).find((a) => a?.labels['alertname'] === alertname)?.annotations ?? {};
    const blind = { additionalContextChars: null, outputsPersisted: null };

    it('persisted_ratio: counts outputs measured over the cap, never "0 outputs persisted", and says "at least"', async () => {
      const h = await harness([{ kind: 'persisted_ratio', threshold: 0.1, minExecutions: 2, window: '1h' }]);
      // One output measured over the cap from a client without num_outputs_persisted, one execution without sizes.
      const measured = { ...hookEvent({ hookName: 'Stop:mixed', additionalContextChars: 11_000, outputsPersisted: 0, timeMs: h.clock.now() }), outputsPersisted: null, status: 'over' as const };
      h.alerting.engine.onIngested((await h.store.ingest([measured, hookEvent({ hookName: 'Stop:mixed', ...blind, timeMs: h.clock.now() })])).inserted);
      await h.alerting.engine.evaluate('notify');
      await h.alerting.dispatcher.idle();
      const a = annotationsOf(h, 'persisted_ratio');
      expect(a['summary']).toBe('Stop:mixed: at least 50.0% of executions in the last 1h had output saved to a file instead of delivered (threshold 10.0%).');
      expect(a['description']).toBe('At least 1 of 2 executions; at least 1 output persisted. 1 of 2 executions carried no size data (a client before 2.1.280): it may have gone over the cap too.');
      expect(a['executions_without_sizes']).toBe('1');
    });

    it('persisted: the executions that lost output are at least those known', async () => {
      const h = await harness([{ kind: 'persisted', window: '1h' }]);
      await h.push(over, { ...over, ...blind });
      const a = annotationsOf(h, 'persisted');
      expect(a['summary']).toMatch(/^SessionStart:startup: at least 1 output over the 10,000-character cap saved to a file in the last 1h;/);
      expect(a['description']).toMatch(/^At least 1 of 2 executions lost output; largest reported output at least 12,060 characters\. 1 of 2 executions carried no size data/);
      expect(a['executions_without_sizes']).toBe('1');
    });

    it('headroom: the largest output is at least the one measured, the headroom at most', async () => {
      const h = await harness([{ kind: 'headroom' }]);
      await h.push({ hookName: 'PreToolUse:Bash', additionalContextChars: 8_500, stdoutChars: 8_550, outputsPersisted: 0 }, { hookName: 'PreToolUse:Bash', ...blind });
      const a = annotationsOf(h, 'headroom');
      expect(a['summary']).toBe('PreToolUse:Bash: largest output in the last 24h is at least 8,550 characters, at most 1,450 below the 10,000-character cap (alert above 8,000); 1 of 2 executions carried no size data.');
      expect(a).toMatchObject({ largest_output: '8550', headroom: '1450', executions_without_sizes: '1' });
    });

    it('growth: says how many executions and days of its trend were measured', async () => {
      // Four days up to today, 1,000 more a day; on the second, two more executions from a client without sizes.
      const start = T0 - 3 * DAY;
      const h = await harness([{ kind: 'growth', horizonDays: 14 }], { start: T0 });
      await h.pushAt([
        ...[5000, 6000, 7000, 8000].map((v, i) => ({ hookName: 'Stop', additionalContextChars: v, stdoutChars: v, outputsPersisted: 0, timeMs: start + i * DAY })),
        ...[1, 2].map((s) => ({ hookName: 'Stop', ...blind, timeMs: start + DAY + s * MIN })),
      ]);
      await h.run(TICK);
      const a = annotationsOf(h, 'growth');
      expect(a['summary']).toBe('Stop: the daily largest output grows 1,000 characters a day and reaches the 10,000-character cap in about 1.6 days (2026-12-02); 4 of 6 executions measured.');
      expect(a['description']).toBe('Trend over 4 days with data, at about 8,000 characters on 2026-11-30. 2 of 6 executions carried no size data (clients before 2.1.280): their outputs may have been larger, and are not in the trend. Past the cap the model gets a ~2,000-character preview. Shorten it before it crosses: `hookwatch check -- <hook command>` measures each output string of the hook against the cap (with `--budget 9500` it fails above that, for CI).');
      expect(a['executions_without_sizes']).toBe('2');
    });

    it('growth: says that the latest days carried no size data, the trend ending before them', async () => {
      // 5,000 to 7,000 on three days, then yesterday and today from a client without sizes only.
      const start = T0 - 4 * DAY;
      const h = await harness([{ kind: 'growth', horizonDays: 14 }], { start: T0 });
      await h.pushAt([
        ...[5000, 6000, 7000].map((v, i) => ({ hookName: 'Stop', additionalContextChars: v, stdoutChars: v, outputsPersisted: 0, timeMs: start + i * DAY })),
        ...[3, 4].flatMap((d) => [1, 2].map((s) => ({ hookName: 'Stop', ...blind, timeMs: start + d * DAY + s * MIN }))),
      ]);
      await h.run(TICK);
      const a = annotationsOf(h, 'growth');
      expect(a['summary']).toBe('Stop: the daily largest output grows 1,000 characters a day and reaches the 10,000-character cap within a day; 3 of 7 executions measured, on 3 of the 5 days the hook ran, none on the latest 2.');
      expect(a['description']).toMatch(/^Trend over 3 days with data, at about 7,000 characters on 2026-11-28\. 4 of 7 executions carried no size data \(clients before 2\.1\.280\), including every execution of the 2 days since 2026-11-28: their outputs may have been larger, and are not in the trend\. Past the cap/);
      expect(a['executions_without_sizes']).toBe('4');
    });

    /** Each notification sent so far, as "status alertname". */
    const trail = (h: Harness): string[] => h.notes().map((n) => `${n.status} ${n.alertname}`);

    it('headroom: an alert does not resolve while its window holds executions without sizes, only once they are measured or gone', async () => {
      const h = await harness([{ kind: 'headroom', window: '1m' }]);
      const bash = { hookName: 'PreToolUse:Bash' };
      await h.push({ ...bash, additionalContextChars: 8_500, stdoutChars: 8_550, outputsPersisted: 0 });
      expect(trail(h)).toEqual(['firing headroom']);
      // The measured output leaves the window; executions without sizes go on: unknown, never the all-clear.
      h.clock.advance(2 * MIN);
      await h.push({ ...bash, ...blind });
      await h.run(MIN);
      await h.push({ ...bash, ...blind }, { ...bash, additionalContextChars: 100, outputsPersisted: 0 });
      await h.run(MIN);
      expect(trail(h)).toEqual(['firing headroom']);
      expect(h.alerting.engine.alerts().map((a) => a.state)).toEqual(['firing']);
      // Only measured executions in the window, well below the cap: it resolves.
      h.clock.advance(2 * MIN);
      await h.push({ ...bash, additionalContextChars: 100, outputsPersisted: 0 });
      await h.run(TICK);
      expect(trail(h)).toEqual(['firing headroom', 'resolved headroom']);
    });

    it('persisted: an alert does not resolve while its window holds executions without sizes; a quiet window resolves it', async () => {
      const h = await harness([{ kind: 'persisted', window: '1m' }]);
      await h.push(over);
      expect(trail(h)).toEqual(['firing persisted']);
      h.clock.advance(2 * MIN);
      await h.push({ ...over, ...blind }, fine);
      await h.run(MIN);
      expect(trail(h)).toEqual(['firing persisted']);
      await h.run(2 * MIN);
      expect(trail(h)).toEqual(['firing persisted', 'resolved persisted']);
    });

    it('growth: an alert does not resolve while the hook runs without sizes and its trend goes stale, only once the window is measured', async () => {
      // 5,000 to 8,000 on four days up to today: on course to cross the cap. Notifications are not repeated here.
      const start = T0 - 3 * DAY;
      const h = await harness([{ kind: 'growth', horizonDays: 14, window: '7d' }], { start: T0, repeatIntervalMs: 60 * DAY });
      await h.pushAt([5000, 6000, 7000, 8000].map((v, i) => ({ hookName: 'Stop', additionalContextChars: v, stdoutChars: v, outputsPersisted: 0, timeMs: start + i * DAY })));
      await h.run(TICK);
      expect(trail(h)).toEqual(['firing growth']);
      // Then six days of executions without sizes only: the measured trend goes stale after four, never the all-clear.
      for (let d = 1; d <= 6; d++) {
        h.clock.advance(DAY);
        await h.push({ hookName: 'Stop', ...blind });
        await h.run(TICK);
      }
      expect(trail(h)).toEqual(['firing growth']);
      // Its annotations are those of the last evaluation whose trend was not stale, four days after its last day.
      expect(h.alerting.engine.alerts().map((a) => [a.state, a.annotations['summary']])).toEqual([['firing', expect.stringMatching(/; 4 of 8 executions measured, on 4 of the 8 days the hook ran, none on the latest 4\.$/)]]);
      // A week of flat measured outputs: once the last execution without sizes has left the window, it resolves.
      for (let d = 1; d <= 7; d++) {
        h.clock.advance(DAY);
        await h.push({ hookName: 'Stop', additionalContextChars: 3000, stdoutChars: 3000, outputsPersisted: 0 });
        await h.run(TICK);
        expect(trail(h)).toEqual(['firing growth']);
      }
      h.clock.advance(DAY);
      await h.push({ hookName: 'Stop', additionalContextChars: 3000, stdoutChars: 3000, outputsPersisted: 0 });
      await h.run(TICK);
      expect(trail(h)).toEqual(['firing growth', 'resolved growth']);
    });

    it('growth: a pending alert waits while only executions without sizes run, and they never raise one', async () => {
      const start = T0 - 3 * DAY;
      const h = await harness([{ kind: 'growth', horizonDays: 14, for: '7d' }], { start: T0, repeatIntervalMs: 60 * DAY });
      await h.pushAt([
        ...[5000, 6000, 7000, 8000].map((v, i) => ({ hookName: 'Stop', additionalContextChars: v, stdoutChars: v, outputsPersisted: 0, timeMs: start + i * DAY })),
        // Another hook run by clients without sizes only, every day.
        ...[0, 1, 2, 3].map((i) => ({ hookName: 'PreToolUse:Bash', ...blind, timeMs: start + i * DAY })),
      ]);
      await h.run(TICK);
      const pending = h.alerting.engine.alerts().map((a) => [a.labels['hook_name'], a.state]);
      expect(pending).toEqual([['Stop', 'pending']]);
      // Past `for` with the trend stale since day 5: held, it neither fires nor is dropped.
      for (let d = 1; d <= 9; d++) {
        h.clock.advance(DAY);
        await h.push({ hookName: 'Stop', ...blind }, { hookName: 'PreToolUse:Bash', ...blind });
        await h.run(TICK);
        expect(h.alerting.engine.alerts().map((a) => [a.labels['hook_name'], a.state])).toEqual(pending);
      }
      expect(trail(h)).toEqual([]);
    });

    it('persisted_ratio: executions without sizes keep an alert firing while they could keep the share over the threshold, and never raise one', async () => {
      const h = await harness([{ kind: 'persisted_ratio', threshold: 0.4, minExecutions: 2, window: '1m' }]);
      // Executions without sizes alone never fire it.
      await h.push({ ...over, ...blind }, { ...over, ...blind });
      await h.run(TICK);
      expect(trail(h)).toEqual([]);
      h.clock.advance(2 * MIN);
      await h.push(over, over);
      expect(trail(h)).toEqual(['firing persisted_ratio']);
      h.clock.advance(2 * MIN);
      // 1 of 4 measured as lost, 3 unknown: 25% at least, 100% at most.
      await h.push(over, { ...over, ...blind }, { ...over, ...blind }, { ...over, ...blind });
      // Then 1 of 9, at most 4 of 9 (44%): still over 40% at worst.
      await h.push(...Array.from({ length: 5 }, () => ({ ...over, additionalContextChars: 100, outputsPersisted: 0 })));
      await h.run(TICK);
      expect(trail(h)).toEqual(['firing persisted_ratio']);
      // At most 4 of 11 (36%): below the threshold whatever the unknown executions lost.
      await h.push(...Array.from({ length: 2 }, () => ({ ...over, additionalContextChars: 100, outputsPersisted: 0 })));
      await h.run(TICK);
      expect(trail(h)).toEqual(['firing persisted_ratio', 'resolved persisted_ratio']);
    });
  });

  it('default rules with zero config: persisted fires, nothing else for a healthy feed', async () => {
    const h = await harness(null);
    await h.push(over, fine);
    await h.run(10 * MIN);
    expect(h.notes().map((n) => `${n.status} ${n.alertname} ${n.hook}`)).toEqual(['firing persisted SessionStart:startup']);
  });
});

describe('persisted state', () => {
  it('records a delivery attempt before the notification is marked finished, however slow the write', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-attempts-'));
    const clock = new FakeClock(T0);
    const sink = new WebhookSink(clock.now);
    await sink.start();
    const db = join(dir, 'h.db');
    const store = new SqliteStore({ path: db });
    // The write of an attempt takes a while, as over a network to PostgreSQL under load.
    class SlowAttempts extends SqliteAlertStateStore {
      override async addAttempt(...args: Parameters<SqliteAlertStateStore['addAttempt']>): Promise<void> {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return super.addAttempt(...args);
      }
    }
    const stateStore = new SlowAttempts(db);
    const alerting = await startAlerting({ config: alertingConfig([{ kind: 'persisted', window: '1h' }], HOUR, [{ name: 'ops', url: `${sink.url}/hook` }]), db, store, stateStore, logger: silentLogger, now: clock.now, timer: false, random: () => 0.5 });
    cleanups.push(async () => {
      await alerting.stop();
      await store.close();
      await sink.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const r = await store.ingest([hookEvent({ ...over, timeMs: T0 })]);
    alerting.engine.onIngested(r.inserted);
    await sink.waitFor(1);
    await alerting.engine.evaluate('notify');
    await alerting.dispatcher.idle();
    // Delivered and done: its attempt is there (once the done row is pruned, it is what says ops had the alert).
    const id = alerting.engine.alerts()[0]?.id ?? '';
    expect((await stateStore.attempts(id)).map((a) => a.outcome)).toEqual(['delivered']);
  });

  it('a restart neither loses a firing alert nor notifies it again early; resolution still arrives', async () => {
    const h = await harness([{ kind: 'persisted', window: '2m' }], { repeatIntervalMs: HOUR });
    await h.push(over);
    expect(h.notes()).toHaveLength(1);
    await h.restart();
    expect(h.alerting.engine.alerts()).toEqual([expect.objectContaining({ state: 'firing' })]);
    await h.run(MIN);
    expect(h.notes()).toHaveLength(1);
    await h.run(5 * MIN);
    expect(h.notes().map((n) => n.status)).toEqual(['firing', 'resolved']);
  });

  it('a notification created but not delivered before a stop is resumed with the same webhook-id', async () => {
    const h = await harness([{ kind: 'persisted', window: '1h' }]);
    await h.fireWhileDown(over);
    await h.alerting.stop();
    const firstId = h.sink.requests[0]?.headers['webhook-id'];
    h.sink.reply = () => ({ status: 200 });
    await h.restart();
    expect(h.notes()).toHaveLength(1);
    expect(h.sink.delivered()[0]?.headers['webhook-id']).toBe(firstId);
  });

  it('a firing given up on before a restart is sent again a group_interval after it was given up on, once, to its receiver alone', async () => {
    const h = await harness([{ kind: 'persisted', window: '1d' }], { repeatIntervalMs: 4 * HOUR, backup: true });
    await h.fireWhileDown(over);
    // Down past the delivery deadline (60 s): given up on; backup had it at once.
    h.clock.advance(61_000);
    await h.alerting.dispatcher.idle();
    const failedAt = h.clock.now();
    expect([deliveredTo(h, '/hook'), statuses(deliveredTo(h, '/backup'))]).toEqual([[], ['firing']]);
    h.sink.reply = () => ({ status: 200 });
    await h.restart();
    await h.run(5 * MIN - TICK);
    expect(deliveredTo(h, '/hook')).toEqual([]);
    await h.run(2 * TICK);
    const ops = deliveredTo(h, '/hook');
    expect(statuses(ops)).toEqual(['firing']);
    expect(ops[0]?.at).toBeGreaterThanOrEqual(failedAt + 5 * MIN);
    expect(ops[0]?.at).toBeLessThanOrEqual(failedAt + 5 * MIN + TICK);
    // A new notification (a new webhook-id), once, and backup is not notified again before the repeat.
    const refused = new Set(h.sink.requests.filter((q) => q.status === 503).map((q) => q.headers['webhook-id']));
    expect(refused.size).toBe(1);
    expect(refused.has(ops[0]?.headers['webhook-id'])).toBe(false);
    await h.run(HOUR);
    expect([deliveredTo(h, '/hook').length, deliveredTo(h, '/backup').length]).toEqual([1, 1]);
  });

  it('a resolution given up on before a restart is sent again a group_interval after it was given up on, once, to its receiver alone', async () => {
    const h = await harness([{ kind: 'persisted', window: '1m' }], { backup: true });
    await h.push(over);
    // ops refuses the resolution (a permanent 4xx: given up on at once); backup has it.
    h.sink.reply = (q) => ({ status: q.path === '/hook' ? 400 : 200 });
    await h.run(3 * MIN);
    const refused = h.sink.requests.filter((q) => q.status === 400);
    expect(statuses(refused)).toEqual(['resolved']);
    const failedAt = refused[0]?.at ?? NaN;
    h.sink.reply = () => ({ status: 200 });
    await h.restart();
    await h.run(failedAt + 5 * MIN - TICK - h.clock.now());
    expect(statuses(deliveredTo(h, '/hook'))).toEqual(['firing']);
    await h.run(2 * TICK);
    const ops = deliveredTo(h, '/hook');
    expect(statuses(ops)).toEqual(['firing', 'resolved']);
    expect(ops[1]?.at).toBeGreaterThanOrEqual(failedAt + 5 * MIN);
    expect(ops[1]?.at).toBeLessThanOrEqual(failedAt + 5 * MIN + TICK);
    expect(ops[1]?.headers['webhook-id']).not.toBe(refused[0]?.headers['webhook-id']);
    await h.run(HOUR);
    expect([statuses(deliveredTo(h, '/hook')), statuses(deliveredTo(h, '/backup'))]).toEqual([['firing', 'resolved'], ['firing', 'resolved']]);
  });

  it('a notification given up on longer than a group_interval before a start is sent again at the start, once', async () => {
    const h = await harness([{ kind: 'persisted', window: '1d' }], { backup: true });
    await h.fireWhileDown(over);
    h.clock.advance(61_000);
    await h.alerting.dispatcher.idle();
    await h.alerting.stop();
    h.sink.reply = () => ({ status: 200 });
    h.clock.advance(10 * MIN);
    const startedAt = h.clock.now();
    await h.restart();
    expect(deliveredTo(h, '/hook').map((q) => q.at)).toEqual([startedAt]);
    await h.run(HOUR);
    expect([deliveredTo(h, '/hook').length, deliveredTo(h, '/backup').length]).toEqual([1, 1]);
  });

  /**
   * A store, a webhook, and a state store whose next `failSaves` writes carrying notifications and next
   * `failLoads` loads fail (the stage next door, faked: a full disk, a statement timeout).
   */
  async function flakyState(): Promise<{ clock: FakeClock; sink: WebhookSink; store: SqliteStore; db: string; config: AlertingConfig; flaky: SqliteAlertStateStore; fail: { saves: number; loads: number } }> {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-alerting-'));
    const db = join(dir, 'h.db');
    const clock = new FakeClock(T0);
    const sink = new WebhookSink(clock.now);
    await sink.start();
    const store = new SqliteStore({ path: db });
    const real = new SqliteAlertStateStore(db);
    const fail = { saves: 0, loads: 0 };
    const flaky = Object.assign(Object.create(real) as SqliteAlertStateStore, {
      save: async (c: StateChanges) => {
        if (fail.saves > 0 && c.notifications.length > 0) {
          fail.saves--;
          throw new Error('disk full');
        }
        return real.save(c);
      },
      load: async (opts?: { outbox?: boolean }) => {
        if (fail.loads > 0) {
          fail.loads--;
          throw new Error('canceling statement due to statement timeout');
        }
        return real.load(opts);
      },
    });
    cleanups.push(async () => {
      await store.close();
      await sink.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const config = alertingConfig([{ kind: 'persisted', window: '1h' }], HOUR, [{ name: 'ops', url: `${sink.url}/hook` }]);
    return { clock, sink, store, db, config, flaky, fail };
  }

  it('a state write that fails sends nothing; the next evaluation notifies once', async () => {
    const { clock, sink, store, db, config, flaky, fail } = await flakyState();
    const alerting = await startAlerting({ config, db, store, logger: silentLogger, now: clock.now, timer: false, stateStore: flaky });
    cleanups.push(() => alerting.stop());
    fail.saves = 1;
    // One evaluation, the one whose state write fails (an ingest-triggered one beside it would be "the next").
    await store.ingest([hookEvent({ ...over, timeMs: T0 })]);
    await alerting.engine.evaluate('notify');
    await alerting.dispatcher.idle();
    expect(sink.requests).toHaveLength(0);
    expect(alerting.engine.alerts()).toEqual([]);
    clock.advance(TICK);
    await alerting.engine.evaluate('all');
    await alerting.dispatcher.idle();
    expect(sink.delivered()).toHaveLength(1);
    expect(alerting.engine.alerts()).toEqual([expect.objectContaining({ state: 'firing' })]);
  });

  it('a state store that cannot record delivery attempts is logged at once, then at most a line a minute with how many since and the last reason', async () => {
    const { clock, sink, store, db, config, flaky } = await flakyState();
    let calls = 0;
    flaky.addAttempt = async () => {
      calls++;
      throw new Error(`disk full (write ${calls})`);
    };
    const warned: { msg: string; fields: Record<string, unknown> }[] = [];
    const logger = { ...silentLogger, warn: (msg: string, fields: Record<string, unknown> = {}) => void warned.push({ msg, fields }) };
    const alerting = await startAlerting({ config, db, store, logger, now: clock.now, timer: false, stateStore: flaky, random: () => 0.5 });
    let stopped = false;
    cleanups.push(() => (stopped ? undefined : alerting.stop()));
    const lines = (): { attempts: unknown; reason: string }[] => warned.filter((w) => w.msg === 'cannot record delivery attempt').map((w) => ({ attempts: w.fields['attempts'], reason: (w.fields['err'] as Error).message }));
    // The receiver refuses: attempt after attempt (a few ms apart), each record of it failing.
    sink.reply = () => ({ status: 503 });
    await store.ingest([hookEvent({ ...over, timeMs: T0 })]);
    await alerting.engine.evaluate('all');
    await sink.waitFor(20);
    expect(lines()).toEqual([{ attempts: 1, reason: 'disk full (write 1)' }]);
    // Half a minute on, the receiver takes it: one more attempt, held back.
    sink.reply = () => ({ status: 200 });
    clock.advance(30_000);
    await alerting.dispatcher.idle();
    expect(sink.delivered()).toHaveLength(1);
    expect(lines()).toHaveLength(1);
    // A minute after the first line, the next attempt writes the next line: every attempt since, the last reason.
    clock.advance(31_000);
    await store.ingest([hookEvent({ ...over, hookName: 'Stop:report', timeMs: clock.now() })]);
    await alerting.engine.evaluate('all');
    await alerting.dispatcher.idle();
    expect(sink.delivered()).toHaveLength(2);
    expect(calls).toBeGreaterThanOrEqual(22);
    expect(lines()).toEqual([{ attempts: 1, reason: 'disk full (write 1)' }, { attempts: calls - 1, reason: `disk full (write ${calls})` }]);
    // What a minute holds back is written when alerting stops.
    clock.advance(TICK);
    await store.ingest([hookEvent({ ...over, hookName: 'Stop:lint', timeMs: clock.now() })]);
    await alerting.engine.evaluate('all');
    await alerting.dispatcher.idle();
    expect(lines()).toHaveLength(2);
    stopped = true;
    await alerting.stop();
    expect(lines().at(-1)).toEqual({ attempts: 1, reason: `disk full (write ${calls})` });
    expect(lines().reduce((sum, l) => sum + (l.attempts as number), 0)).toBe(calls);
  });

  it('a state store that cannot record outcomes or delivery times is logged at once, then at most a line a minute with how many since and the last reason', async () => {
    const { clock, sink, store, db, config, flaky } = await flakyState();
    // The outbox and the alerts' delivery times (an alert saved without notifications) cannot be written; the
    // evaluations' saves can.
    let finishes = 0;
    let saves = 0;
    flaky.finishNotification = async () => {
      finishes++;
      throw new Error(`disk full (outcome ${finishes})`);
    };
    const save = flaky.save.bind(flaky);
    flaky.save = async (c: StateChanges) => {
      if (c.notifications.length > 0 || c.upsert.length === 0) return save(c);
      saves++;
      throw new Error(`disk full (save ${saves})`);
    };
    const warned: { msg: string; fields: Record<string, unknown> }[] = [];
    const logger = { ...silentLogger, warn: (msg: string, fields: Record<string, unknown> = {}) => void warned.push({ msg, fields }) };
    const alerting = await startAlerting({ config, db, store, logger, now: clock.now, timer: false, stateStore: flaky, random: () => 0 });
    let stopped = false;
    cleanups.push(() => (stopped ? undefined : alerting.stop()));
    // The receiver takes a second to answer: each delivery is later than its notification was made.
    sink.reply = () => {
      clock.advance(1_000);
      return { status: 200 };
    };
    const lines = (msg: string, count: string): { count: unknown; reason: string }[] => warned.filter((w) => w.msg === msg).map((w) => ({ count: w.fields[count], reason: (w.fields['err'] as Error).message }));
    const outcomes = (): { count: unknown; reason: string }[] => lines('cannot record notification outcome', 'notifications');
    const times = (): { count: unknown; reason: string }[] => lines('cannot record when an alert was last notified', 'deliveries');
    const notify = async (hookName: string): Promise<void> => {
      await store.ingest([hookEvent({ ...over, hookName, timeMs: clock.now() })]);
      await alerting.engine.evaluate('all');
      await alerting.dispatcher.idle();
      // Behind the delivery's record of when the alert was last notified.
      await alerting.engine.evaluate('notify');
    };
    await notify('Stop:check');
    expect(sink.delivered()).toHaveLength(1);
    expect(outcomes()).toEqual([{ count: 1, reason: `disk full (outcome ${finishes})` }]);
    expect(times()).toEqual([{ count: 1, reason: 'disk full (save 1)' }]);
    // Half a minute on, two more alerts are delivered: their failed records are held back.
    clock.advance(30_000);
    await notify('Stop:report');
    await notify('Stop:lint');
    expect(sink.delivered()).toHaveLength(3);
    expect([outcomes().length, times().length]).toEqual([1, 1]);
    // A minute after the first lines, the next failures write the next lines: every one since, the last reason.
    clock.advance(31_000);
    await notify('Stop:format');
    expect(sink.delivered()).toHaveLength(4);
    expect(outcomes()).toEqual([{ count: 1, reason: 'disk full (outcome 4)' }, { count: 3, reason: 'disk full (outcome 16)' }]);
    expect(times()).toEqual([{ count: 1, reason: 'disk full (save 1)' }, { count: 3, reason: 'disk full (save 4)' }]);
    // What a minute holds back is written when alerting stops.
    clock.advance(1_000);
    await notify('Stop:test');
    expect([outcomes().length, times().length]).toEqual([2, 2]);
    stopped = true;
    await alerting.stop();
    expect(outcomes().at(-1)).toEqual({ count: 1, reason: 'disk full (outcome 20)' });
    expect(times().at(-1)).toEqual({ count: 1, reason: 'disk full (save 5)' });
  });

  it('a new leader whose state load fails evaluates nothing until a retry loads it: no second notification, nothing left undelivered', async () => {
    const { clock, sink, store, db, config, flaky, fail } = await flakyState();
    // Two replicas on one state: `b` starts as a follower, with nothing in memory yet.
    let bLeads = false;
    const a = await startAlerting({ config, db, store, logger: silentLogger, now: clock.now, timer: false });
    const b = await startAlerting({ config, db, store, logger: silentLogger, now: clock.now, timer: false, stateStore: flaky, leader: { isLeader: () => bLeads } });
    cleanups.push(async () => {
      await a.stop();
      await b.stop();
    });
    // `a` leads: one alert notified, a second one created while the receiver refuses it (left in the outbox).
    await store.ingest([hookEvent({ ...over, timeMs: T0 })]);
    await a.engine.evaluate('all');
    await sink.waitFor(1);
    sink.reply = () => ({ status: 503 });
    await store.ingest([hookEvent({ ...over, hookName: 'Stop:report', timeMs: T0 })]);
    await a.engine.evaluate('all');
    await sink.waitFor(2);
    const pendingId = sink.requests.at(-1)?.headers['webhook-id'];
    await a.stop();
    sink.reply = () => ({ status: 200 });

    // `b` takes over; its first load fails. Evaluating now, on its empty memory, would notify both alerts as new.
    bLeads = true;
    fail.loads = 1;
    await b.engine.reload(true);
    await b.engine.evaluate('all');
    await b.dispatcher.idle();
    expect(sink.delivered()).toHaveLength(1);
    // The retry (a second later) loads the state, resumes the undelivered notification and evaluates.
    await sink.waitFor(3, 5000);
    await b.dispatcher.idle();
    clock.advance(TICK);
    await b.engine.evaluate('all');
    await b.dispatcher.idle();
    const delivered = sink.delivered();
    expect(delivered).toHaveLength(2);
    expect(delivered[1]?.headers['webhook-id']).toBe(pendingId);
    expect(b.engine.alerts().map((x) => x.state)).toEqual(['firing', 'firing']);
  });

  it('a failed state write whose reload fails too leaves memory stale: the alert is notified once the state loads', async () => {
    const { clock, sink, store, db, config, flaky, fail } = await flakyState();
    const alerting = await startAlerting({ config, db, store, logger: silentLogger, now: clock.now, timer: false, stateStore: flaky });
    cleanups.push(() => alerting.stop());
    fail.saves = 1;
    fail.loads = 1;
    await store.ingest([hookEvent({ ...over, timeMs: T0 })]);
    await alerting.engine.evaluate('all');
    await alerting.dispatcher.idle();
    expect(sink.requests).toHaveLength(0);
    expect(alerting.engine.isStale).toBe(true);
    // Memory holds a firing alert never saved nor sent: evaluating on it would never notify it.
    clock.advance(TICK);
    await alerting.engine.evaluate('all');
    expect(sink.requests).toHaveLength(0);
    // The retry (a second later) loads the saved state and evaluates: the alert fires and is notified, once.
    await sink.waitFor(1, 5000);
    await alerting.dispatcher.idle();
    expect(alerting.engine.isStale).toBe(false);
    expect(sink.delivered()).toHaveLength(1);
  });

  it('guard trims stored while memory is stale reach the active alerts of their hook once the state loads', async () => {
    const { clock, sink, store, db, config, flaky, fail } = await flakyState();
    const alerting = await startAlerting({ config, db, store, logger: silentLogger, now: clock.now, timer: false, stateStore: flaky });
    cleanups.push(() => alerting.stop());
    await store.ingest([hookEvent({ ...over, timeMs: T0 })]);
    await alerting.engine.evaluate('all');
    await sink.waitFor(1);
    // Another hook's alert: its state write fails, and so does the reload after it.
    fail.saves = 1;
    fail.loads = 1;
    await store.ingest([hookEvent({ ...over, hookName: 'Stop:report', timeMs: T0 })]);
    await alerting.engine.evaluate('all');
    expect(alerting.engine.isStale).toBe(true);
    // The guard wraps the first hook meanwhile: its report is stored and announced while nothing is evaluated.
    const guarded = hookId('SessionStart', over.hookName);
    expect(await store.recordGuardTrims([{ dedupKey: 'stale-1', hookId: guarded, hookEvent: 'SessionStart', hookName: over.hookName, timeMs: T0, field: 'stdout', sentChars: 24_000, keptChars: 9_500, sessionId: 's' }])).toHaveLength(1);
    await alerting.engine.noteGuardTrims([guarded]);
    // The retry (a second later) loads the saved state and evaluates: the other alert is notified.
    await sink.waitFor(2, 5000);
    await alerting.engine.evaluate('notify');
    expect(alerting.engine.isStale).toBe(false);
    expect(alerting.engine.alerts().find((a) => a.labels['hook_name'] === over.hookName)?.annotations['guard_trims']).toBe('1');
  });
});
