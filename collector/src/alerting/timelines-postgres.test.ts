/**
 * Alert timelines on PostgreSQL, store and state (index.test.ts runs the same timelines on SQLite): keepFiringFor
 * across a restart, links over outputs hours into a long window (read by PostgreSQL's series), a notification
 * one leader gave up on, sent again by the next or by itself restarted, and a firing whose delivery was not
 * recorded, never sent again after its resolution.
 */
import { describe, expect, it, vi } from 'vitest';
import type { AlertingConfig } from '../config/index.ts';
import type { AlertmanagerWebhookBody } from '../notify/alertmanager.ts';
import { parseReceivers } from '../notify/settings.ts';
import { dimensionNames } from '../pipeline/settings.ts';
import { PostgresStore } from '../store/postgres/index.ts';
import { PostgresLease } from '../store/postgres/lease.ts';
import { NotLeaderError } from '../store/store.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { FakeClock, hookEvent, keepFiringAcrossRestarts, linksOverLongWindow, LONG_WINDOW_CASES, WebhookSink, type EventFacts } from '../../test/support/alerting.ts';
import { useTestServer } from '../../test/support/postgres/fixture.ts';
import { OUTCOME_WRITE_TRIES, startAlerting, type Alerting } from './index.ts';
import { parseRules } from './settings.ts';
import type { StateChanges } from './model.ts';
import { PostgresAlertStateStore } from './state/postgres.ts';
import { SUPERSEDED_REASON } from './state/store.ts';
import type { NotificationOutcome } from '../notify/model.ts';

const T0 = Date.parse('2026-11-30T10:00:00Z');
const MIN = 60_000;
const HOUR = 3_600_000;
const TICK = 10_000;

const pg = useTestServer();

function alertingConfig(rules: unknown, receivers: unknown[]): AlertingConfig {
  return {
    rules: parseRules(rules, dimensionNames(['team'])),
    externalLabels: {},
    receivers: parseReceivers(receivers),
    evaluationIntervalMs: TICK,
    repeatIntervalMs: 4 * 3_600_000,
    externalUrl: 'http://hookwatch.test',
    otlp: { endpoint: '', headers: {} },
    delivery: { deadlineMs: 60_000, initialBackoffMs: 5, maxBackoffMs: 20, maxQueue: 100 },
  };
}

async function harness(rules: unknown) {
  const url = await pg.server().createDatabase();
  const store = await PostgresStore.open({ url, poolSize: 2, dimensions: ['team'] });
  const clock = new FakeClock(T0);
  const sink = new WebhookSink(clock.now);
  await sink.start();
  let config = alertingConfig(rules, [{ name: 'ops', url: `${sink.url}/hook` }]);
  const start = (): Promise<Alerting> => startAlerting({
    config, db: '', store, stateStore: new PostgresAlertStateStore({ pool: store.connectionPool }), logger: silentLogger, now: clock.now, timer: false, random: () => 0.5,
  });
  let alerting = await start();
  const h = {
    clock, sink, store,
    get alerting() { return alerting; },
    async pushAt(facts: EventFacts[]) {
      const r = await store.ingest(facts.map(hookEvent));
      alerting.engine.onIngested(r.inserted);
      await alerting.engine.evaluate('notify');
      await alerting.dispatcher.idle();
    },
    push(facts: Omit<EventFacts, 'timeMs'>) {
      return h.pushAt([{ ...facts, timeMs: clock.now() }]);
    },
    async run(ms: number) {
      const end = clock.now() + ms;
      while (clock.now() < end) {
        clock.advance(Math.min(TICK, end - clock.now()));
        await alerting.engine.evaluate('all');
        await alerting.dispatcher.idle();
      }
    },
    async restart() {
      await alerting.stop();
      alerting = await start();
      await alerting.engine.evaluate('notify');
      await alerting.dispatcher.idle();
    },
    async reconfigure(next: unknown) {
      config = { ...config, rules: parseRules(next, dimensionNames(['team'])) };
      await alerting.reconfigure(config);
    },
    resolvedAt(): number | undefined {
      const r = sink.delivered().find((d) => (JSON.parse(d.body) as AlertmanagerWebhookBody).status === 'resolved');
      return r === undefined ? undefined : r.at - T0;
    },
  };
  pg.defer(async () => {
    await alerting.stop();
    await store.close();
    await sink.close();
  });
  await alerting.engine.evaluate('notify');
  return h;
}

describe('keepFiringFor on PostgreSQL', () => {
  it('does not resolve a keepFiringFor alert earlier for a restart, wherever the restart falls', async () => {
    const r = await keepFiringAcrossRestarts(harness, (h) => h.resolvedAt(), { tick: TICK, every: 2 * TICK });
    expect(r.unbrokenMs).toBeGreaterThan(7 * MIN);
    for (const at of r.restarts) expect(at).toEqual({ at: at.at, early: false, late: false });
  }, 240_000);
});

describe('alert links on PostgreSQL', () => {
  it.each(LONG_WINDOW_CASES)('reach back to the outputs a long window counted when %s while they are hours old', async (how) => {
    const r = await linksOverLongWindow(harness, how);
    expect(r.alert?.annotations['outputs_persisted']).toBe('2');
    expect(r.link.from).toBeLessThanOrEqual(r.stamped - HOUR);
    expect(r.page.outputsPersisted).toBe(2);
    expect(r.listedFrom).toBeLessThanOrEqual(r.stamped - HOUR);
    expect(Date.parse(r.listed?.firstEventAt ?? '')).toBeLessThanOrEqual(r.stamped);
  }, 60_000);
});

describe('undelivered notifications on PostgreSQL replicas', () => {
  it('a receiver the leader gave up on is notified by the next leader a group_interval after it was given up on, once, alone', async () => {
    const url = await pg.server().createDatabase();
    const store = await PostgresStore.open({ url, poolSize: 4, dimensions: ['team'] });
    const clock = new FakeClock(T0);
    const sink = new WebhookSink(clock.now);
    await sink.start();
    const config = alertingConfig([{ kind: 'persisted', window: '1d' }], [{ name: 'ops', url: `${sink.url}/hook` }, { name: 'backup', url: `${sink.url}/backup` }]);
    // Two replicas in one process, each with its lease (the fencing token of its writes and deliveries).
    const replica = async (holder: string): Promise<{ lease: PostgresLease; alerting: Alerting }> => {
      const lease = new PostgresLease({ url, holder, ttlMs: 60_000 });
      await lease.tick();
      const stateStore = new PostgresAlertStateStore({ pool: store.connectionPool, fence: lease });
      const alerting = await startAlerting({ config, db: '', store, stateStore, leader: lease, shared: true, logger: silentLogger, now: clock.now, timer: false, random: () => 0.5 });
      return { lease, alerting };
    };
    const a = await replica('a');
    const b = await replica('b');
    pg.defer(async () => {
      for (const r of [a, b]) await r.alerting.stop();
      for (const r of [a, b]) await r.lease.stop();
      await store.close();
      await sink.close();
    });
    expect([a.lease.isLeader(), b.lease.isLeader()]).toEqual([true, false]);
    const deliveredTo = (path: string): number[] => sink.delivered().filter((q) => q.path === path).map((q) => q.at);

    // ops is down past the delivery deadline: a gives its firing up; backup has it.
    sink.reply = (q) => ({ status: q.path === '/hook' ? 503 : 200 });
    const r = await store.ingest([hookEvent({ hookName: 'SessionStart:startup', additionalContextChars: 12_000, outputsPersisted: 1, timeMs: T0 })]);
    a.alerting.engine.onIngested(r.inserted);
    await sink.waitFor(3);
    clock.advance(61_000);
    await a.alerting.dispatcher.idle();
    const failedAt = clock.now();
    expect([deliveredTo('/hook'), deliveredTo('/backup')]).toEqual([[], [T0]]);

    // The lead moves to b, as the service moves it (coordination.onAcquired, onLeaderChange).
    await a.lease.handBack();
    a.alerting.dispatcher.suspend();
    expect(await b.lease.tick()).toBe(true);
    await b.alerting.engine.reload(true);
    sink.reply = () => ({ status: 200 });
    const run = async (ms: number): Promise<void> => {
      const end = clock.now() + ms;
      while (clock.now() < end) {
        clock.advance(Math.min(TICK, end - clock.now()));
        await b.alerting.engine.evaluate('all');
        await b.alerting.dispatcher.idle();
      }
    };
    await run(5 * MIN - TICK);
    expect(deliveredTo('/hook')).toEqual([]);
    await run(2 * TICK);
    const ops = deliveredTo('/hook');
    expect(ops).toHaveLength(1);
    expect(ops[0]).toBeGreaterThanOrEqual(failedAt + 5 * MIN);
    expect(ops[0]).toBeLessThanOrEqual(failedAt + 5 * MIN + TICK);
    expect(sink.bodies<AlertmanagerWebhookBody>().map((body) => body.status)).toEqual(['firing', 'firing']);
    await run(HOUR);
    expect([deliveredTo('/hook').length, deliveredTo('/backup').length]).toEqual([1, 1]);
  }, 60_000);

  /**
   * Replicas of one database in this process, each with its lease, started as the service starts them; `onAcquired`
   * also reloads with the outbox at once when the lease is held already (service.ts: coordination.onAcquired).
   */
  async function replicas(opts: { receivers: unknown[]; window: string; stateStore?: typeof PostgresAlertStateStore }) {
    const url = await pg.server().createDatabase();
    const store = await PostgresStore.open({ url, poolSize: 4, dimensions: ['team'] });
    const clock = new FakeClock(T0);
    const sink = new WebhookSink(clock.now);
    await sink.start();
    const config = alertingConfig([{ kind: 'persisted', window: opts.window }], opts.receivers.map((r) => JSON.parse(JSON.stringify(r).replaceAll('SINK', sink.url)) as unknown));
    const StateStore = opts.stateStore ?? PostgresAlertStateStore;
    const started: { lease: PostgresLease; alerting: Alerting }[] = [];
    pg.defer(async () => {
      for (const r of started) await r.alerting.stop();
      for (const r of started) await r.lease.stop();
      await store.close();
      await sink.close();
    });
    return {
      clock, sink, store,
      async start(holder: string, startOpts: { onAcquired?: boolean } = {}): Promise<{ lease: PostgresLease; alerting: Alerting }> {
        const lease = new PostgresLease({ url, holder, ttlMs: 60_000 });
        await lease.tick();
        const stateStore = new StateStore({ pool: store.connectionPool, fence: lease });
        const alerting = await startAlerting({ config, db: '', store, stateStore, leader: lease, shared: true, logger: silentLogger, now: clock.now, timer: false, random: () => 0.5 });
        started.push({ lease, alerting });
        if (startOpts.onAcquired && lease.isLeader()) await alerting.engine.reload(true);
        return { lease, alerting };
      },
      async ingestFiring(alerting: Alerting): Promise<void> {
        const r = await store.ingest([hookEvent({ hookName: 'SessionStart:startup', additionalContextChars: 12_000, outputsPersisted: 1, timeMs: clock.now() })]);
        alerting.engine.onIngested(r.inserted);
      },
      async run(alerting: Alerting, ms: number): Promise<void> {
        const end = clock.now() + ms;
        while (clock.now() < end) {
          clock.advance(Math.min(TICK, end - clock.now()));
          await alerting.engine.evaluate('all');
          await alerting.dispatcher.idle();
        }
      },
      deliveredTo(path: string): number[] {
        return sink.delivered().filter((q) => q.path === path).map((q) => q.at);
      },
      statuses(): string[] {
        return sink.bodies<AlertmanagerWebhookBody>().map((body) => body.status);
      },
      async outbox(): Promise<{ status: string; done: string | null; reason: string | null }[]> {
        return (await store.connectionPool.query<{ status: string; done: string | null; reason: string | null }>(
          "SELECT data->>'status' AS status, done, data->>'droppedReason' AS reason FROM alert_notifications ORDER BY created_at, data->>'status' = 'resolved'",
        )).rows;
      },
    };
  }

  it.each([
    ['a restart that finds its lease free', false],
    ['a restart that finds its lease held already, and loads again as the lease calls back', true],
  ])('a receiver given up on before %s is notified a group_interval after it was given up on, once', async (_how, onAcquired) => {
    const h = await replicas({ receivers: [{ name: 'ops', url: 'SINK/hook' }, { name: 'backup', url: 'SINK/backup' }], window: '1d' });
    const a = await h.start('a');
    h.sink.reply = (q) => ({ status: q.path === '/hook' ? 503 : 200 });
    await h.ingestFiring(a.alerting);
    await h.sink.waitFor(3);
    h.clock.advance(61_000);
    await a.alerting.dispatcher.idle();
    const failedAt = h.clock.now();
    expect([h.deliveredTo('/hook'), h.deliveredTo('/backup')]).toEqual([[], [T0]]);
    // A clean restart: the lease is handed back, and the new process takes it at once.
    await a.alerting.stop();
    await a.lease.stop();
    const b = await h.start('a2', { onAcquired });
    expect(b.lease.isLeader()).toBe(true);
    h.sink.reply = () => ({ status: 200 });
    await h.run(b.alerting, 6 * MIN);
    const ops = h.deliveredTo('/hook');
    expect(ops).toHaveLength(1);
    expect(ops[0]).toBeGreaterThanOrEqual(failedAt + 5 * MIN);
    expect(ops[0]).toBeLessThanOrEqual(failedAt + 5 * MIN + TICK);
  }, 60_000);

  it('a firing delivered whose outcome could not be recorded is not sent again after its resolution by the next leader', async () => {
    let down = true;
    let writes = 0;
    // The database is away whenever the firing's delivery is recorded, back for everything after it.
    class Away extends PostgresAlertStateStore {
      override async finishNotification(webhookId: string, outcome: NotificationOutcome, epoch?: number | null, atMs?: number): Promise<void> {
        if (down && outcome === 'delivered') {
          writes++;
          throw new Error('Connection terminated unexpectedly');
        }
        return super.finishNotification(webhookId, outcome, epoch, atMs);
      }
    }
    const h = await replicas({ receivers: [{ name: 'ops', url: 'SINK/hook' }], window: '1h', stateStore: Away });
    const a = await h.start('a');
    await h.ingestFiring(a.alerting);
    await h.sink.waitFor(1);
    await a.alerting.dispatcher.idle();
    expect(writes).toBe(OUTCOME_WRITE_TRIES);
    down = false;
    await h.run(a.alerting, 2 * HOUR);
    expect(h.statuses()).toEqual(['firing', 'resolved']);
    await a.alerting.stop();
    await a.lease.stop();
    const b = await h.start('b');
    await h.run(b.alerting, 10 * MIN);
    expect(h.statuses()).toEqual(['firing', 'resolved']);
    // Left open by the failed write, then dropped, and why, by the load of the next leadership.
    expect(await h.outbox()).toEqual([{ status: 'firing', done: 'dropped', reason: SUPERSEDED_REASON }, { status: 'resolved', done: 'delivered', reason: null }]);
  }, 60_000);

  it('a delivery whose outcome write fails while alerting stops is tried once, not retried through the stop', async () => {
    let writes = 0;
    let stopped: Promise<void> | undefined;
    let stop = (): Promise<void> => Promise.resolve();
    // The database goes away as hookwatch stops: the write in flight fails, and stopping waits for no retry of it.
    class Away extends PostgresAlertStateStore {
      override async finishNotification(webhookId: string, outcome: NotificationOutcome, epoch?: number | null, atMs?: number): Promise<void> {
        if (outcome === 'delivered') {
          writes++;
          stopped ??= stop();
          throw new Error('Connection terminated unexpectedly');
        }
        return super.finishNotification(webhookId, outcome, epoch, atMs);
      }
    }
    const h = await replicas({ receivers: [{ name: 'ops', url: 'SINK/hook' }], window: '1h', stateStore: Away });
    const a = await h.start('a');
    stop = () => a.alerting.stop();
    await h.ingestFiring(a.alerting);
    await h.sink.waitFor(1);
    await vi.waitFor(() => expect(stopped).toBeDefined());
    await stopped;
    expect([writes, await h.outbox()]).toEqual([1, [{ status: 'firing', done: null, reason: null }]]);
  }, 60_000);

  it('a delivery whose outcome write fails once is recorded by a retry', async () => {
    let blips = 1;
    class Blip extends PostgresAlertStateStore {
      override async finishNotification(webhookId: string, outcome: NotificationOutcome, epoch?: number | null, atMs?: number): Promise<void> {
        if (blips > 0 && outcome === 'delivered') {
          blips--;
          throw new Error('Connection terminated unexpectedly');
        }
        return super.finishNotification(webhookId, outcome, epoch, atMs);
      }
    }
    const h = await replicas({ receivers: [{ name: 'ops', url: 'SINK/hook' }], window: '1h', stateStore: Blip });
    const a = await h.start('a');
    await h.ingestFiring(a.alerting);
    await h.sink.waitFor(1);
    await a.alerting.dispatcher.idle();
    expect([blips, await h.outbox()]).toEqual([0, [{ status: 'firing', done: 'delivered', reason: null }]]);
  }, 60_000);

  it('a save whose COMMIT applied but whose answer was lost has its notifications sent by the same leadership, once', async () => {
    // The first save with notifications commits, and its answer is lost on the way (a connection cut after COMMIT,
    // its reply timed out): the evaluation sees a failed save.
    let lose = true;
    class CommitAnswerLost extends PostgresAlertStateStore {
      override async save(changes: StateChanges, epoch?: number | null): Promise<void> {
        await super.save(changes, epoch);
        if (lose && changes.notifications.length > 0) {
          lose = false;
          throw new Error('alert state: Query read timeout');
        }
      }
    }
    const h = await replicas({ receivers: [{ name: 'ops', url: 'SINK/hook' }], window: '1d', stateStore: CommitAnswerLost });
    const a = await h.start('a');
    await a.alerting.engine.evaluate('notify');
    await h.ingestFiring(a.alerting);
    await h.run(a.alerting, 6 * TICK);
    expect(lose).toBe(false);
    const outbox = (await h.store.connectionPool.query<{ webhook_id: string; done: string | null }>('SELECT webhook_id, done FROM alert_notifications')).rows;
    expect(outbox).toEqual([{ webhook_id: expect.any(String), done: 'delivered' }]);
    expect(h.sink.delivered().map((q) => q.headers['webhook-id'])).toEqual([outbox[0]?.webhook_id]);
    expect(h.statuses()).toEqual(['firing']);
  }, 60_000);

  it('a save the fence refused reloads without the outbox: nothing queued or marked superseded by a replica not leading', async () => {
    // The first save with notifications is refused as by the fence (another replica took the lease, this one's
    // clock not yet told): nothing of it is written.
    let refuse = true;
    const loads: (boolean | undefined)[] = [];
    let forgotten = 0;
    class Refused extends PostgresAlertStateStore {
      override async save(changes: StateChanges, epoch?: number | null): Promise<void> {
        if (refuse && changes.notifications.length > 0) {
          refuse = false;
          throw new NotLeaderError('alert state: the leader lease has moved');
        }
        await super.save(changes, epoch);
      }
      override load(opts?: { outbox?: boolean }): ReturnType<PostgresAlertStateStore['load']> {
        loads.push(opts?.outbox);
        return super.load(opts);
      }
      override forgetOutbox(): void {
        forgotten++;
        super.forgetOutbox();
      }
    }
    const h = await replicas({ receivers: [{ name: 'ops', url: 'SINK/hook' }], window: '1d', stateStore: Refused });
    const a = await h.start('a');
    await a.alerting.engine.evaluate('notify');
    const before = { loads: [...loads], forgotten };
    await h.ingestFiring(a.alerting);
    await h.run(a.alerting, TICK);
    expect(refuse).toBe(false);
    expect({ loads: loads.slice(before.loads.length), forgotten: forgotten - before.forgotten }).toEqual({ loads: [false], forgotten: 0 });
    // The lease here is in fact still held: the evaluation redone saves the notification and sends it, once.
    expect(h.statuses()).toEqual(['firing']);
  }, 60_000);
});
