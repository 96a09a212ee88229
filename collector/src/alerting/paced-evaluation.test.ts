/**
 * An evaluation over many hooks runs in slices: the event loop gets turns between them (ingest acknowledgements and
 * API answers do not wait for the whole evaluation), the alerts and notifications are those of an evaluation run
 * straight through, and a stop between slices ends it with nothing applied. The store answers in this thread
 * (':memory:'), so every turn the loop gets during an evaluation is one the evaluation gave it.
 */
import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../test/support/alerting.ts';
import { engineConfig, engineFakes, manyHooks } from '../../test/support/alerting-engine.ts';
import { recordingLogger } from '../../test/support/recording-logger.ts';
import { startAlerting } from './index.ts';

const HOOKS = 1000;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** `HOOKS` hooks with an execution each at the clock's time, one in ten over the cap, one in ten near it. */
async function setUp() {
  const clock = new FakeClock(Date.now());
  const { dir, store, sink, close } = await engineFakes('hookwatch-paced-evaluation-', ':memory:', clock.now);
  await store.ingest(manyHooks(HOOKS, clock.now()));
  const config = engineConfig(sink.url, [{ kind: 'persisted', window: '1h' }, { kind: 'headroom' }, { kind: 'persisted_ratio', minExecutions: 1 }], 10_000);
  let n = 0;
  const start = async (evaluationSliceMs: number) => {
    const { logger, lines } = recordingLogger();
    const db = join(dir, `state-${n++}.db`);
    const alerting = await startAlerting({ config, db, store, logger, now: clock.now, timer: false, random: () => 0.5, evaluationSliceMs });
    cleanups.push(() => alerting.stop());
    return { alerting, lines, db };
  };
  cleanups.push(close);
  return { start, sink };
}

/** Counts the turns the event loop gets (setImmediate callbacks run) until `until` settles; `onTurn` at each. */
async function turnsDuring(until: Promise<unknown>, onTurn: (turns: number) => void = () => {}): Promise<number> {
  let turns = 0;
  let done = false;
  const tick = (): void => {
    if (done) return;
    turns++;
    onTurn(turns);
    setImmediate(tick);
  };
  setImmediate(tick);
  await until;
  done = true;
  return turns;
}

/** The outbox as the state store holds it, in the order the notifications were planned. */
function outbox(db: string): { alert: string; receiver: string; status: string }[] {
  const sql = new DatabaseSync(db, { readOnly: true });
  try {
    return (sql.prepare('SELECT data FROM alert_notifications ORDER BY rowid').all() as { data: string }[]).map((r) => {
      const n = JSON.parse(r.data) as { alert: { id: string }; receiver: string; status: string };
      return { alert: n.alert.id, receiver: n.receiver, status: n.status };
    });
  } finally {
    sql.close();
  }
}

function savedAlerts(db: string): number {
  const sql = new DatabaseSync(db, { readOnly: true });
  try {
    return (sql.prepare('SELECT count(*) AS n FROM alert_instances').get() as { n: number }).n;
  } finally {
    sql.close();
  }
}

describe('an evaluation over many hooks, in slices', () => {
  it('gives the event loop turns while it runs, and raises and notifies what one run straight through does', { timeout: 60_000 }, async () => {
    const t = await setUp();
    const sliced = await t.start(0);
    const straight = await t.start(Number.POSITIVE_INFINITY);
    // The evaluation each start queues raises the alerts.
    const turns = await turnsDuring(sliced.alerting.engine.evaluate('notify'));
    expect(turns).toBeGreaterThanOrEqual(HOOKS);
    await straight.alerting.engine.evaluate('notify');

    expect(sliced.alerting.engine.readModel.alerts()).toEqual(straight.alerting.engine.readModel.alerts());
    expect(sliced.alerting.engine.readModel.alerts().length).toBeGreaterThan(HOOKS / 10);
    expect(outbox(sliced.db)).toEqual(outbox(straight.db));
    expect(outbox(sliced.db).length).toBeGreaterThan(HOOKS / 10);
  });

  it('ends at a stop between slices with nothing applied, saved or notified, and logs no failure', { timeout: 60_000 }, async () => {
    const t = await setUp();
    const { alerting, lines, db } = await t.start(0);
    // The evaluation the start queued is running: stopped a few slices in.
    let stopping: Promise<void> | undefined;
    await turnsDuring(alerting.engine.evaluate('notify').then(() => stopping), (turns) => {
      if (turns === 5) stopping = alerting.stop();
    });
    expect(stopping).toBeDefined();
    expect(alerting.engine.readModel.alerts()).toEqual([]);
    expect(savedAlerts(db)).toBe(0);
    expect(outbox(db)).toEqual([]);
    expect(alerting.engine.stats.evaluations).toBe(0);
    expect(t.sink.requests).toEqual([]);
    expect(lines.filter((l) => l.level === 'error' || l.level === 'warn')).toEqual([]);
  });
});
