/**
 * Two replicas sharing one real PostgreSQL, each with its own store, lease and alert engine, wired as the service
 * wires them (a leadership acquired reloads the alert state, then evaluates; one lost suspends the deliveries). A
 * replica evaluates as leader only on the alert state loaded for its current leadership: a follower that takes over
 * queues that load before any evaluation it runs as leader, and an evaluation queued before the load (behind work
 * still in progress when the lease came back to a replica that had led) does not run on what memory held from the
 * earlier leadership, while another replica led and notified. A silence created on a follower while the leader
 * evaluates mutes what that evaluation notifies.
 */
import type { PoolClient } from 'pg';
import { expect, it } from 'vitest';
import { until } from '../../test/helpers.ts';
import type { AlertingConfig } from '../config/index.ts';
import type { AlertmanagerWebhookBody } from '../notify/alertmanager.ts';
import { parseReceivers } from '../notify/settings.ts';
import { dimensionNames } from '../pipeline/settings.ts';
import { PostgresStore } from '../store/postgres/index.ts';
import { PostgresLease } from '../store/postgres/lease.ts';
import { silentLogger, type Logger } from '../telemetry/logger.ts';
import { FakeClock, hookEvent, WebhookSink } from '../../test/support/alerting.ts';
import { useTestServer } from '../../test/support/postgres/fixture.ts';
import { recordingLogger } from '../../test/support/recording-logger.ts';
import { startAlerting, type Alerting } from './index.ts';
import { parseRules } from './settings.ts';
import { parseSilence } from './silences.ts';
import { PostgresAlertStateStore } from './state/postgres.ts';

const T0 = Date.parse('2026-11-30T10:00:00Z');
/** Short, renewed only when the test says: a leadership ends about TTL_MS after its last renewal. */
const TTL_MS = 3_000;

const pg = useTestServer();

const config: (url: string) => AlertingConfig = (url) => ({
  rules: parseRules([{ kind: 'persisted', window: '1h' }], dimensionNames([])),
  externalLabels: {},
  receivers: parseReceivers([{ name: 'ops', url }]),
  evaluationIntervalMs: 10_000,
  repeatIntervalMs: 4 * 3_600_000,
  externalUrl: 'http://hookwatch.test',
  otlp: { endpoint: '', headers: {} },
  delivery: { deadlineMs: 60_000, initialBackoffMs: 5, maxBackoffMs: 20, maxQueue: 100 },
});

interface Replica {
  store: PostgresStore;
  lease: PostgresLease;
  alerting: Alerting;
  /** Loads of the alert state with the outbox (as leader). */
  loads: number;
}

/** Replicas on one new database, notifying one receiver; `sent` lists what it was sent, as "<status> <hook>". */
async function cluster() {
  const url = await pg.server().createDatabase();
  const clock = new FakeClock(T0);
  const sink = new WebhookSink(clock.now);
  await sink.start();
  const replicas: Replica[] = [];
  pg.defer(async () => {
    for (const r of replicas) await r.alerting.stop();
    for (const r of replicas) await r.lease.stop();
    for (const r of replicas) await r.store.close();
    await sink.close();
  });
  // A replica: its own pool (one connection), lease and engine; leadership handled as service.ts handles it, unless
  // `told` is false: its lease's changes reach nobody (as an epoch that moved between two renewals of the lease
  // that both found it leading). `loads` counts its loads of the state with the outbox (as leader). `sliceMs`: how
  // long its evaluations run between two turns of the event loop.
  const replica = async (holder: string, { told = true, logger = silentLogger, sliceMs }: { told?: boolean; logger?: Logger; sliceMs?: number } = {}): Promise<Replica> => {
    const store = await PostgresStore.open({ url, poolSize: 1 });
    const started: { alerting?: Alerting } = {};
    const lease = new PostgresLease({
      url, holder, ttlMs: TTL_MS,
      onChange: (leader) => {
        if (!told) return;
        const engine = started.alerting?.engine;
        if (leader) void engine?.reload(true).then(() => engine.evaluateAllWithGuardNotes());
        else started.alerting?.dispatcher.suspend();
      },
    });
    await lease.tick();
    const r = { store, lease, alerting: undefined as unknown as Alerting, loads: 0 };
    const stateStore = new PostgresAlertStateStore({ pool: store.connectionPool, fence: lease });
    const load = stateStore.load.bind(stateStore);
    stateStore.load = (opts) => {
      if (opts?.outbox) r.loads++;
      return load(opts);
    };
    const alerting = await startAlerting({ config: config(`${sink.url}/hook`), db: '', store, stateStore, leader: lease, shared: true, logger, now: clock.now, timer: false, random: () => 0.5, ...(sliceMs === undefined ? {} : { evaluationSliceMs: sliceMs }) });
    started.alerting = alerting;
    r.alerting = alerting;
    await alerting.engine.evaluate('notify');
    replicas.push(r);
    return r;
  };
  const sent = (): string[] => sink.bodies<AlertmanagerWebhookBody>().map((b) => `${b.status} ${b.alerts[0]?.labels['hook_name']}`);
  /** An over-cap output of `hookName` at T0, stored by `r` and handed to its engine as ingest hands it; notified. */
  const fire = async (r: Replica, hookName = 'SessionStart:startup'): Promise<void> => {
    const stored = await r.store.ingest([hookEvent({ hookName, additionalContextChars: 12_000, outputsPersisted: 1, timeMs: T0 })]);
    r.alerting.engine.onIngested(stored.inserted);
    await sink.waitFor(sent().length + 1);
    await r.alerting.dispatcher.idle();
  };
  /**
   * Replicas a (leading) and b (`bOptions`): a fires and notifies an alert, then stops as in a rolling update, and b
   * takes the lease at its next renewal.
   */
  const handedOver = async (bOptions: Parameters<typeof replica>[1] = {}): Promise<{ a: Replica; b: Replica }> => {
    const a = await replica('a');
    const b = await replica('b', bOptions);
    await fire(a);
    expect(sent()).toEqual(['firing SessionStart:startup']);
    clock.advance(60_000);
    await a.alerting.stop();
    await a.lease.stop();
    expect(await b.lease.tick()).toBe(true);
    return { a, b };
  };
  return { clock, replica, sent, fire, handedOver };
}

it('a follower that takes over evaluates at once on the state it loads: the alert the old leader notified is neither notified again nor resolved', async () => {
  const { clock, sent, fire, handedOver } = await cluster();
  // a stops (as in a rolling update); b takes the lease at its next renewal, loads the state and evaluates.
  const { b } = await handedOver();
  await b.alerting.engine.evaluate('notify');
  clock.advance(10_000);
  await b.alerting.engine.evaluate('all');
  await b.alerting.dispatcher.idle();
  expect(sent()).toEqual(['firing SessionStart:startup']);
  expect((await b.store.connectionPool.query<{ state: string }>('SELECT state FROM alert_instances')).rows.map((x) => x.state)).toEqual(['firing']);
  // The load its leadership queued is its only one: the evaluations after it do not load again.
  expect(b.loads).toBe(1);
  // b leads: the next alert is its to notify.
  await fire(b, 'PreCompact');
  expect(sent()).toEqual(['firing SessionStart:startup', 'firing PreCompact']);
}, 60_000);

it('a replica that leads under a lease epoch whose load nobody queued loads the state itself, once, and then evaluates as leader', async () => {
  const { clock, sent, fire, handedOver } = await cluster();
  // a stops; b takes the lease, and nothing tells its engine.
  const { b } = await handedOver({ told: false });
  expect(b.loads).toBe(0);

  // The timer's evaluations: the first finds the leadership not loaded and has it loaded; the others evaluate.
  for (let i = 0; i < 3; i++) {
    clock.advance(10_000);
    await b.alerting.engine.evaluate('all');
  }
  expect(b.loads).toBe(1);
  expect(b.alerting.engine.isStale).toBe(false);
  await b.alerting.dispatcher.idle();
  expect(sent()).toEqual(['firing SessionStart:startup']);
  await fire(b, 'PreCompact');
  expect(sent()).toEqual(['firing SessionStart:startup', 'firing PreCompact']);
  expect(b.loads).toBe(1);
}, 60_000);

it('a replica leading again evaluates nothing queued before its leadership\'s load: the alert another leader notified meanwhile is not notified again', async () => {
  const { clock, replica, sent, fire } = await cluster();
  const b = await replica('b');
  const a = await replica('a');
  expect([b.lease.isLeader(), a.lease.isLeader()]).toEqual([true, false]);

  // b's one connection is busy (a slow statement): the evaluation b begins as leader waits for it, and the next
  // one, as a timer tick queues it, waits behind.
  expect(await b.lease.tick()).toBe(true);
  const busy: PoolClient = await b.store.connectionPool.connect();
  let released = false;
  const release = (): void => {
    if (!released) busy.release();
    released = true;
  };
  pg.defer(async () => release());
  const inProgress = b.alerting.engine.evaluate('notify');
  void b.alerting.engine.evaluate('all');

  // b's lease runs out unrenewed; a takes it, loads the state and notifies an alert.
  await until('b to stop leading', () => !b.lease.isLeader(), 10_000);
  await until('a to lead', () => a.lease.tick(), 10_000);
  await a.alerting.engine.evaluate('notify');
  await fire(a);
  expect(sent()).toEqual(['firing SessionStart:startup']);

  // a stops (as in a rolling update) and b leads again, before its connection is free.
  clock.advance(60_000);
  await a.alerting.stop();
  await a.lease.stop();
  await until('b to lead again', () => b.lease.tick(), 10_000);
  release();
  await inProgress;

  // Everything b queued has run, then its load and the evaluation after it, then the timer's next tick.
  await b.alerting.engine.evaluate('notify');
  clock.advance(10_000);
  await b.alerting.engine.evaluate('all');
  await b.alerting.dispatcher.idle();
  await new Promise((resolve) => setTimeout(resolve, 200));
  expect(sent()).toEqual(['firing SessionStart:startup']);
  expect((await b.store.connectionPool.query<{ state: string }>('SELECT state FROM alert_instances')).rows.map((x) => x.state)).toEqual(['firing']);
}, 60_000);

it('an evaluation whose replica lost the lease between two of its slices ends there, quietly: nothing saved, nothing notified', async () => {
  const { replica, sent } = await cluster();
  const { logger, lines } = recordingLogger();
  const b = await replica('b', { logger, sliceMs: 0 });
  const a = await replica('a');
  await b.store.ingest([hookEvent({ hookName: 'SessionStart:startup', additionalContextChars: 12_000, outputsPersisted: 1, timeMs: T0 })]);

  // b begins an evaluation as leader; it waits for b's one connection, busy, while b's lease lapses and a takes it.
  expect(await b.lease.tick()).toBe(true);
  const busy: PoolClient = await b.store.connectionPool.connect();
  let released = false;
  pg.defer(async () => {
    if (!released) busy.release();
  });
  const evaluations = b.alerting.engine.stats.evaluations;
  const evaluation = b.alerting.engine.evaluate('all');
  await until('b to stop leading', () => !b.lease.isLeader(), 10_000);
  await until('a to lead', () => a.lease.tick(), 10_000);
  released = true;
  busy.release();
  await evaluation;

  expect(lines.filter((l) => l.level === 'error')).toEqual([]);
  expect(b.alerting.engine.stats.evaluations).toBe(evaluations);
  expect((await b.store.connectionPool.query('SELECT 1 FROM alert_instances')).rows).toEqual([]);
  await b.alerting.dispatcher.idle();
  expect(sent()).toEqual([]);
}, 60_000);

it('a silence created on a follower while the leader\'s evaluation reads its rules mutes what that evaluation would notify', async () => {
  const { clock, replica, sent } = await cluster();
  const a = await replica('a');
  const b = await replica('b');
  expect([a.lease.isLeader(), b.lease.isLeader()]).toEqual([true, false]);
  await a.store.ingest([hookEvent({ hookName: 'SessionStart:startup', additionalContextChars: 12_000, outputsPersisted: 1, timeMs: T0 })]);
  // Someone silences the hook through b (POST /api/v1/silences there) while a's evaluation is reading the
  // persisted rule's counts from the database: after a read the silences as the evaluation began.
  const read = a.store.latePersisted.bind(a.store);
  let silenced: string | undefined;
  a.store.latePersisted = async (q) => {
    const late = await read(q);
    if (silenced === undefined) {
      const s = parseSilence({ matchers: [{ name: 'hook_name', value: 'SessionStart:startup' }], endsAt: new Date(clock.now() + 3_600_000).toISOString(), createdBy: 'ops', comment: 'deploy' }, clock.now());
      silenced = (await b.alerting.engine.silences.add(s)).id;
    }
    return late;
  };
  clock.advance(10_000);
  await a.alerting.engine.evaluate('all');
  await a.alerting.dispatcher.idle();
  await new Promise((resolve) => setTimeout(resolve, 200));
  expect(silenced).toBeDefined();
  expect(sent()).toEqual([]);
  expect((await a.store.connectionPool.query<{ state: string }>('SELECT state FROM alert_instances')).rows.map((x) => x.state)).toEqual(['firing']);
  expect(a.alerting.engine.alerts().map((x) => x.silencedBy)).toEqual([[silenced]]);
}, 60_000);
