/**
 * Alert timelines on PostgreSQL, store and state (index.test.ts runs the same timelines on SQLite): keepFiringFor
 * across a restart, and links over outputs hours into a long window (read by PostgreSQL's series).
 */
import { describe, expect, it } from 'vitest';
import type { AlertingConfig } from '../config/index.ts';
import type { AlertmanagerWebhookBody } from '../notify/alertmanager.ts';
import { parseReceivers } from '../notify/settings.ts';
import { dimensionNames } from '../pipeline/settings.ts';
import { PostgresStore } from '../store/postgres/index.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { FakeClock, hookEvent, keepFiringAcrossRestarts, linksOverLongWindow, LONG_WINDOW_CASES, WebhookSink, type EventFacts } from '../../test/support/alerting.ts';
import { useTestServer } from '../../test/support/postgres/fixture.ts';
import { startAlerting, type Alerting } from './index.ts';
import { parseRules } from './settings.ts';
import { PostgresAlertStateStore } from './state/postgres.ts';

const T0 = Date.parse('2026-11-30T10:00:00Z');
const MIN = 60_000;
const HOUR = 3_600_000;
const TICK = 10_000;

const pg = useTestServer();

function alertingConfig(rules: unknown, receivers: unknown[]): AlertingConfig {
  return {
    rules: parseRules(rules, dimensionNames(['team'])),
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
