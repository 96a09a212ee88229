/**
 * Receivers added and removed, as Alertmanager treats them: notifications left in the outbox for a receiver no
 * longer configured (removed from the file before a restart, or by a reload while an evaluation planned for it)
 * are dropped (marked finished, counted on /metrics, logged once per receiver), and a receiver a reload adds, or
 * one added to the file before a restart, gets the alerts firing then, once. The same timelines on SQLite and on
 * PostgreSQL, real webhook receivers on port 0.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { until } from '../../test/helpers.ts';
import type { AlertingConfig } from '../config/index.ts';
import { registerNotifyMetrics } from '../notify/metrics.ts';
import { parseReceivers } from '../notify/settings.ts';
import { dimensionNames } from '../pipeline/settings.ts';
import { PostgresStore } from '../store/postgres/index.ts';
import { SqliteStore } from '../store/sqlite/index.ts';
import type { Store } from '../store/store.ts';
import { MetricsRegistry } from '../telemetry/metrics.ts';
import type { AlertmanagerWebhookBody } from '../notify/alertmanager.ts';
import { FakeClock, hookEvent, WebhookSink } from '../../test/support/alerting.ts';
import { useTestServer } from '../../test/support/postgres/fixture.ts';
import { parseExposition, sampleValue } from '../../test/support/prometheus-text.ts';
import { recordingLogger, type Logged } from '../../test/support/recording-logger.ts';
import { startAlerting, type Alerting } from './index.ts';
import { parseRules } from './settings.ts';
import { parseSilence } from './silences.ts';
import { PostgresAlertStateStore } from './state/postgres.ts';
import { SqliteAlertStateStore } from './state/sqlite.ts';
import type { AlertStateStore } from './state/store.ts';

const T0 = Date.parse('2026-11-30T10:00:00Z');
const DROPPED_MSG = 'receiver no longer configured; its undelivered notifications are dropped';
const RESUMING_MSG = 'resuming undelivered notifications';

/** One store backend: where alerts are evaluated from, the alert state, and the outbox as its table holds it. */
interface Backend {
  store: Store;
  db: string;
  stateStore(): AlertStateStore | undefined;
  /** What each notification to `receiver` in alert_notifications became (done; null while pending), oldest first. */
  outbox(receiver: string): Promise<(string | null)[]>;
  /** Prunes the finished notifications created before `beforeMs`, as retention does a day after. */
  pruneFinished(beforeMs: number): Promise<void>;
  close(): Promise<void>;
}

function alertingConfig(receivers: unknown[]): AlertingConfig {
  return {
    rules: parseRules([{ kind: 'persisted', window: '1h' }], dimensionNames([])),
    externalLabels: {},
    receivers: parseReceivers(receivers),
    evaluationIntervalMs: 10_000,
    repeatIntervalMs: 4 * 3_600_000,
    externalUrl: 'http://hookwatch.test',
    otlp: { endpoint: '', headers: {} },
    delivery: { deadlineMs: 60_000, initialBackoffMs: 5, maxBackoffMs: 20, maxQueue: 100 },
  };
}

/** What a receiver was sent, as "<status> <hook>", sorted. */
function hooks(s: WebhookSink): string[] {
  return s.bodies<AlertmanagerWebhookBody>().map((b) => `${b.status} ${b.alerts[0]?.labels['hook_name']}`).sort();
}

async function discardedOnMetrics(alerting: Alerting): Promise<number | undefined> {
  const metrics = new MetricsRegistry();
  registerNotifyMetrics(metrics, alerting.dispatcher.stats);
  return sampleValue(parseExposition(await metrics.render()), 'hookwatch_notifications_total', { outcome: 'discarded' });
}

/** The timelines, run on one backend. */
function removedReceiverTimelines(open: () => Promise<Backend>): void {
  async function setUp() {
    const backend = await open();
    const clock = new FakeClock(T0);
    const ops = new WebhookSink(clock.now);
    const oncall = new WebhookSink(clock.now);
    await ops.start();
    await oncall.start();
    const both = alertingConfig([{ name: 'ops', url: `${ops.url}/hook` }, { name: 'oncall', url: `${oncall.url}/secret-path-token` }]);
    const opsOnly = alertingConfig([{ name: 'ops', url: `${ops.url}/hook` }]);
    const running: Alerting[] = [];
    const start = async (config: AlertingConfig): Promise<{ alerting: Alerting; lines: Logged[] }> => {
      const { logger, lines } = recordingLogger();
      const stateStore = backend.stateStore();
      const alerting = await startAlerting({ config, db: backend.db, store: backend.store, logger, now: clock.now, timer: false, random: () => 0.5, ...(stateStore ? { stateStore } : {}) });
      running.push(alerting);
      return { alerting, lines };
    };
    /** A replica of alerting on opsOnly that leads while `leads` says so (stopped by close). */
    const startAs = async (leads: () => boolean): Promise<Alerting> => {
      const stateStore = backend.stateStore();
      const alerting = await startAlerting({ config: opsOnly, db: backend.db, store: backend.store, logger: recordingLogger().logger, now: clock.now, timer: false, random: () => 0.5, leader: { isLeader: leads }, ...(stateStore ? { stateStore } : {}) });
      running.push(alerting);
      return alerting;
    };
    const close = async (): Promise<void> => {
      for (const a of running) await a.stop();
      await backend.close();
      await ops.close();
      await oncall.close();
    };
    /** Over-cap executions of `hooks` at T0, stored and handed to `alerting`'s engine as ingest hands them. */
    const fire = async (alerting: Alerting, hooks = ['SessionStart:startup']): Promise<void> => {
      const r = await backend.store.ingest(hooks.map((hookName) => hookEvent({ hookName, additionalContextChars: 12_000, outputsPersisted: 1, timeMs: T0 })));
      alerting.engine.onIngested(r.inserted);
    };
    /** PreCompact silenced, then it and SessionStart:startup over the cap: `alerting` notifies the second alone. */
    const fireOneSilenced = async (alerting: Alerting): Promise<void> => {
      await alerting.engine.silences.add(parseSilence({ matchers: [{ name: 'hook_name', value: 'PreCompact' }], endsAt: new Date(T0 + 3_600_000).toISOString(), createdBy: 'ops', comment: 'known' }, T0));
      await fire(alerting, ['SessionStart:startup', 'PreCompact']);
      await alerting.engine.evaluate('notify');
      await alerting.dispatcher.idle();
    };
    /** The next evaluation of `alerting` resolves SessionStart:startup, at both receivers. */
    const resolvesToBoth = async (alerting: Alerting): Promise<void> => {
      await alerting.engine.evaluate('all');
      await alerting.dispatcher.idle();
      expect(hooks(oncall)).toEqual(['firing SessionStart:startup', 'resolved SessionStart:startup']);
      expect(hooks(ops)).toEqual(['firing SessionStart:startup', 'resolved SessionStart:startup']);
    };
    /** `oncall` never answers 2xx: started with both, fired and stopped, its notification stays in the outbox. */
    const leaveOncallPending = async (): Promise<void> => {
      oncall.reply = () => ({ status: 503 });
      const first = await start(both);
      await fire(first.alerting);
      await oncall.waitFor(2);
      await ops.waitFor(1);
      await first.alerting.stop();
    };
    return { backend, clock, ops, oncall, both, opsOnly, start, startAs, close, fire, fireOneSilenced, resolvesToBoth, leaveOncallPending };
  }

  it('a restart without the receiver drops what the outbox held for it, once, counted and logged without its URL', { timeout: 60_000 }, async () => {
    const t = await setUp();
    try {
      await t.leaveOncallPending();
      expect(await t.backend.outbox('oncall')).toEqual([null]);

      const second = await t.start(t.opsOnly);
      await second.alerting.engine.evaluate('notify');
      await second.alerting.dispatcher.idle();
      await until('oncall\'s notification to be finished', async () => (await t.backend.outbox('oncall'))[0] !== null, 10_000);
      expect(await t.backend.outbox('oncall')).toEqual(['dropped']);
      expect(second.alerting.dispatcher.stats.discarded).toBe(1);
      expect(await discardedOnMetrics(second.alerting)).toBe(1);
      const warned = second.lines.filter((l) => l.msg.startsWith(DROPPED_MSG));
      expect(warned).toEqual([{ level: 'warn', msg: `${DROPPED_MSG} {"receiver":"oncall"}` }]);
      // What is resumed is counted apart from what is dropped.
      expect(second.lines.filter((l) => l.msg.startsWith(RESUMING_MSG))).toEqual([{ level: 'info', msg: `${RESUMING_MSG} {"count":0,"dropped":1}` }]);
      expect(JSON.stringify(second.lines)).not.toContain('secret-path-token');
      // Nothing more went out, to anyone.
      expect(t.oncall.delivered()).toHaveLength(0);
      expect(t.ops.requests).toHaveLength(1);
      await second.alerting.stop();

      // Marked finished: the next start does not load it again.
      const third = await t.start(t.opsOnly);
      await third.alerting.engine.evaluate('notify');
      await third.alerting.dispatcher.idle();
      expect(third.alerting.dispatcher.stats.discarded).toBe(0);
      expect(third.lines.some((l) => l.msg.startsWith(DROPPED_MSG))).toBe(false);
    } finally {
      await t.close();
    }
  });

  it('a restart logs how many undelivered notifications it resumes apart from those it drops', { timeout: 60_000 }, async () => {
    const t = await setUp();
    try {
      // Neither receiver answers 2xx: both notifications stay undelivered in the outbox when hookwatch stops.
      t.ops.reply = () => ({ status: 503 });
      t.oncall.reply = () => ({ status: 503 });
      const first = await t.start(t.both);
      await t.fire(first.alerting);
      await t.ops.waitFor(1);
      await t.oncall.waitFor(1);
      await first.alerting.stop();
      expect(await t.backend.outbox('ops')).toEqual([null]);
      expect(await t.backend.outbox('oncall')).toEqual([null]);

      t.ops.reply = () => ({ status: 200 });
      const second = await t.start(t.opsOnly);
      expect(second.lines.filter((l) => l.msg.startsWith(RESUMING_MSG))).toEqual([{ level: 'info', msg: `${RESUMING_MSG} {"count":1,"dropped":1}` }]);
      await second.alerting.dispatcher.idle();
      await until('both notifications to be finished', async () => (await t.backend.outbox('ops'))[0] !== null && (await t.backend.outbox('oncall'))[0] !== null, 10_000);
      expect(await t.backend.outbox('ops')).toEqual(['delivered']);
      expect(await t.backend.outbox('oncall')).toEqual(['dropped']);
    } finally {
      await t.close();
    }
  });

  it('a reload that removes a receiver stops its retries and drops what it held, queued or in flight', { timeout: 60_000 }, async () => {
    const t = await setUp();
    try {
      t.oncall.reply = () => ({ status: 503 });
      const { alerting } = await t.start(t.both);
      // Five alerts: four deliveries in flight to `oncall` (retrying), the fifth queued behind them.
      const hooks = ['SessionStart:startup', 'PreCompact', 'Stop', 'UserPromptSubmit', 'Notification'];
      await t.fire(alerting, hooks);
      await t.ops.waitFor(5);
      await t.oncall.waitFor(8);
      await alerting.reconfigure(t.opsOnly);
      await until('every oncall notification to be finished', async () => (await t.backend.outbox('oncall')).every((done) => done !== null), 10_000);
      expect(await t.backend.outbox('oncall')).toEqual(Array(5).fill('dropped'));
      expect(alerting.dispatcher.stats.discarded).toBe(5);
      await alerting.dispatcher.idle();
      // Nothing more is tried. An attempt the reload aborted once its request was sent may still reach the
      // receiver after that; a retry (backoff at most 20 ms) would keep coming.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const tried = t.oncall.requests.length;
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(t.oncall.requests).toHaveLength(tried);
      expect(t.ops.delivered()).toHaveLength(5);
    } finally {
      await t.close();
    }
  });

  it('a notification planned for a receiver as a reload removes it is dropped, not left in the outbox', { timeout: 60_000 }, async () => {
    const t = await setUp();
    try {
      const { alerting, lines } = await t.start(t.both);
      // The evaluation this batch triggers is under way (on the receivers it started with) when the reload lands.
      await t.fire(alerting);
      await alerting.reconfigure(t.opsOnly);
      await alerting.dispatcher.idle();
      await until('oncall\'s notification to be finished', async () => (await t.backend.outbox('oncall'))[0] !== null, 10_000);
      expect(await t.backend.outbox('oncall')).toEqual(['dropped']);
      expect(alerting.dispatcher.stats.discarded).toBe(1);
      expect(lines.filter((l) => l.msg.startsWith(DROPPED_MSG))).toHaveLength(1);
      expect(t.oncall.requests).toHaveLength(0);
      expect(t.ops.delivered()).toHaveLength(1);
    } finally {
      await t.close();
    }
  });

  it('a receiver a reload adds gets the alerts firing then, once, not the silenced one; the others get nothing again', { timeout: 60_000 }, async () => {
    const t = await setUp();
    try {
      const { alerting } = await t.start(t.opsOnly);
      await t.fireOneSilenced(alerting);
      expect(hooks(t.ops)).toEqual(['firing SessionStart:startup']);

      t.clock.advance(60_000);
      await alerting.reconfigure(t.both);
      await alerting.dispatcher.idle();
      expect(hooks(t.oncall)).toEqual(['firing SessionStart:startup']);
      const welcome = t.oncall.requests[0]?.headers['webhook-id'];
      expect(welcome).not.toBe(t.ops.requests[0]?.headers['webhook-id']);

      // Later evaluations (short of repeatInterval) and a reload that adds nothing send nothing more, to anyone.
      for (let i = 0; i < 3; i++) {
        t.clock.advance(10_000);
        await alerting.engine.evaluate('all');
      }
      await alerting.reconfigure(t.both);
      await alerting.dispatcher.idle();
      expect(hooks(t.oncall)).toEqual(['firing SessionStart:startup']);
      expect(hooks(t.ops)).toEqual(['firing SessionStart:startup']);

      // Its resolution goes to both, as to every receiver that had its firing.
      t.clock.advance(2 * 3_600_000);
      await t.resolvesToBoth(alerting);
    } finally {
      await t.close();
    }
  });

  it('a receiver added to the file before a restart gets the alerts firing then, once; an unchanged file notifies nobody', { timeout: 60_000 }, async () => {
    const t = await setUp();
    const restart = async (config: AlertingConfig): Promise<Alerting> => {
      t.clock.advance(60_000);
      const { alerting } = await t.start(config);
      await alerting.engine.evaluate('all');
      await alerting.dispatcher.idle();
      return alerting;
    };
    try {
      const first = await t.start(t.opsOnly);
      await t.fireOneSilenced(first.alerting);
      expect(hooks(t.ops)).toEqual(['firing SessionStart:startup']);
      await first.alerting.stop();

      // The same file again, after retention pruned the delivered notification: its delivery attempt still says
      // ops had it.
      await t.backend.pruneFinished(T0 + 60_000);
      expect(await t.backend.outbox('ops')).toEqual([]);
      await (await restart(t.opsOnly)).stop();
      expect(hooks(t.ops)).toEqual(['firing SessionStart:startup']);

      // oncall added to the file: it gets the alert firing (not the silenced one), once; ops nothing again.
      const third = await restart(t.both);
      expect(hooks(t.oncall)).toEqual(['firing SessionStart:startup']);
      expect(t.oncall.requests[0]?.headers['webhook-id']).not.toBe(t.ops.requests[0]?.headers['webhook-id']);
      for (let i = 0; i < 3; i++) {
        t.clock.advance(10_000);
        await third.engine.evaluate('all');
      }
      await third.dispatcher.idle();
      await third.stop();
      await (await restart(t.both)).stop();
      expect(hooks(t.oncall)).toEqual(['firing SessionStart:startup']);
      expect(hooks(t.ops)).toEqual(['firing SessionStart:startup']);

      // Its resolution goes to both, as to every receiver that had its firing.
      t.clock.advance(2 * 3_600_000);
      await t.resolvesToBoth(await restart(t.both));
    } finally {
      await t.close();
    }
  });

  it('a follower that reloaded with the leader notifies the added receiver nothing again once it leads', { timeout: 60_000 }, async () => {
    const t = await setUp();
    let firstLeads = true;
    const { startAs } = t;
    try {
      const leader = await startAs(() => firstLeads);
      const follower = await startAs(() => !firstLeads);
      await t.fire(leader);
      await leader.engine.evaluate('notify');
      await leader.dispatcher.idle();
      expect(t.ops.delivered()).toHaveLength(1);

      // Both replicas reload the same file, which adds oncall: the leader notifies it.
      t.clock.advance(60_000);
      await leader.reconfigure(t.both);
      await follower.reconfigure(t.both);
      await leader.dispatcher.idle();
      expect(t.oncall.delivered()).toHaveLength(1);

      // The follower takes over: oncall had the alert, so nobody is notified again.
      firstLeads = false;
      t.clock.advance(60_000);
      await follower.engine.reload(true);
      await follower.engine.evaluate('all');
      await follower.dispatcher.idle();
      expect(t.oncall.delivered()).toHaveLength(1);
      expect(t.ops.delivered()).toHaveLength(1);
    } finally {
      await t.close();
    }
  });

  it('a follower keeps no receiver its reloads add: an evaluation as leader before its leadership\'s load notifies nobody again', { timeout: 60_000 }, async () => {
    const t = await setUp();
    let firstLeads = true;
    const { startAs } = t;
    try {
      const leader = await startAs(() => firstLeads);
      await t.fire(leader);
      await leader.engine.evaluate('notify');
      await leader.dispatcher.idle();
      // Started once the alert fired: the follower holds it as saved.
      const follower = await startAs(() => !firstLeads);

      // Both replicas reload the same file, which adds oncall: the leader notifies it.
      t.clock.advance(60_000);
      await leader.reconfigure(t.both);
      await follower.reconfigure(t.both);
      await leader.dispatcher.idle();
      expect(t.oncall.delivered()).toHaveLength(1);

      // The follower leads; an evaluation queued before its leadership's load runs first. oncall had the alert.
      firstLeads = false;
      t.clock.advance(60_000);
      await follower.engine.evaluate('all');
      await follower.dispatcher.idle();
      expect(t.oncall.requests).toHaveLength(1);
      expect(t.ops.requests).toHaveLength(1);
    } finally {
      await t.close();
    }
  });

  it('a receiver whose notification was dropped when it left the file gets the alert when a restart brings it back', { timeout: 60_000 }, async () => {
    const t = await setUp();
    try {
      await t.leaveOncallPending();

      const second = await t.start(t.opsOnly);
      await second.alerting.engine.evaluate('notify');
      await until('oncall\'s notification to be finished', async () => (await t.backend.outbox('oncall'))[0] !== null, 10_000);
      await second.alerting.stop();
      expect(await t.backend.outbox('oncall')).toEqual(['dropped']);

      // Back in the file and answering: its attempts never delivered, so it is owed the alert, once.
      t.oncall.reply = () => ({ status: 200 });
      const third = await t.start(t.both);
      await third.alerting.engine.evaluate('notify');
      await third.alerting.dispatcher.idle();
      await third.alerting.engine.evaluate('all');
      await third.alerting.dispatcher.idle();
      expect(t.oncall.delivered()).toHaveLength(1);
      expect(await t.backend.outbox('oncall')).toEqual(['dropped', 'delivered']);
      expect(t.ops.requests).toHaveLength(1);
    } finally {
      await t.close();
    }
  });
}

describe('receivers added and removed by a reload, SQLite', () => {
  removedReceiverTimelines(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-removed-receiver-'));
    const db = join(dir, 'h.db');
    const store = new SqliteStore({ path: db });
    return {
      store, db,
      stateStore: () => undefined,
      async outbox(receiver) {
        const sql = new DatabaseSync(db, { readOnly: true });
        try {
          return (sql.prepare('SELECT done, data FROM alert_notifications ORDER BY created_at').all() as { done: string | null; data: string }[])
            .filter((row) => (JSON.parse(row.data) as { receiver: string }).receiver === receiver).map((row) => row.done);
        } finally {
          sql.close();
        }
      },
      async pruneFinished(beforeMs) {
        const state = new SqliteAlertStateStore(db);
        try {
          await state.prune(beforeMs);
        } finally {
          await state.close();
        }
      },
      async close() {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  });
});

describe('receivers added and removed by a reload, PostgreSQL', () => {
  const pg = useTestServer();
  removedReceiverTimelines(async () => {
    const url = await pg.server().createDatabase();
    const store = await PostgresStore.open({ url, poolSize: 2 });
    return {
      store, db: '',
      stateStore: () => new PostgresAlertStateStore({ pool: store.connectionPool }),
      async outbox(receiver) {
        const r = await store.connectionPool.query<{ done: string | null }>("SELECT done FROM alert_notifications WHERE data->>'receiver' = $1 ORDER BY created_at", [receiver]);
        return r.rows.map((row) => row.done);
      },
      pruneFinished: (beforeMs) => new PostgresAlertStateStore({ pool: store.connectionPool }).prune(beforeMs),
      close: () => store.close(),
    };
  });
});
