/**
 * What a stop does with the evaluations it finds: the rules committed batches triggered (an evaluation on ingest
 * running, queued behind another, or waiting for its start) are evaluated to the end, their notifications saved,
 * while an evaluation of every rule (the timer's) still ends at its next slice with nothing applied, and the timers
 * stop before the stop waits for anything. Evaluations over a thousand hooks, in slices of 0 ms (a turn of the event
 * loop between every two steps), so a stop always lands mid-evaluation; the store answers in this thread.
 */
import { join } from 'node:path';
import { afterEach, expect, it, vi } from 'vitest';
import { hookEvent, type EventFacts } from '../../test/support/alerting.ts';
import { engineConfig, engineFakes, manyHooks, outboxFiring } from '../../test/support/alerting-engine.ts';
import { recordingLogger } from '../../test/support/recording-logger.ts';
import { startAlerting } from './index.ts';

const HOOKS = 1000;
/** Long enough that no evaluation on ingest starts on its own timer during a test. */
const SPACING_MS = 60_000;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * Alerting on an empty store (the evaluation its start queues is done), then `HOOKS` hooks stored without telling
 * it: one in ten with a persisted output (`persisted`), one in ten near the cap (`headroom`, which only an
 * evaluation of every rule reads here: the batches of the tests trigger `persisted` alone).
 */
async function setUp() {
  const { dir, store, sink, close } = await engineFakes('hookwatch-stop-evaluations-', ':memory:');
  const config = engineConfig(sink.url, [{ kind: 'persisted', window: '1h' }, { kind: 'headroom' }], 10_000);
  const db = join(dir, 'state.db');
  const { logger, lines } = recordingLogger();
  const alerting = await startAlerting({ config, db, store, logger, timer: false, random: () => 0.5, evaluationSliceMs: 0, ingestSpacingMs: SPACING_MS });
  cleanups.push(async () => {
    await alerting.stop();
    await close();
  });
  await alerting.engine.evaluate('notify');
  await store.ingest(manyHooks(HOOKS, Date.now()));
  /** A committed batch of one persisted output (small: it triggers `persisted` only), as the hook stage reports it. */
  const ingest = async (hookName: string): Promise<void> => {
    const facts: EventFacts = { hookName, timeMs: Date.now(), additionalContextChars: 100, outputsPersisted: 1 };
    alerting.engine.onIngested((await store.ingest([hookEvent(facts)])).inserted);
  };
  return { alerting, ingest, db, lines };
}

/** The firing alerts by rule, and whether the one of `hookName` is among them. */
function firing(alerting: Awaited<ReturnType<typeof setUp>>['alerting']): { persisted: number; headroom: number } {
  const alerts = alerting.engine.alerts().filter((a) => a.state === 'firing');
  return { persisted: alerts.filter((a) => a.labels['alertname'] === 'persisted').length, headroom: alerts.filter((a) => a.labels['alertname'] === 'headroom').length };
}

const isFiring = (alerting: Awaited<ReturnType<typeof setUp>>['alerting'], hookName: string): boolean =>
  alerting.engine.alerts().some((a) => a.state === 'firing' && a.labels['hook_name'] === hookName);

/** The hooks the saved outbox holds a firing notification of, by rule. */
function outbox(db: string): { persisted: string[]; headroom: string[] } {
  const rows = outboxFiring(db);
  const of = (rule: string): string[] => rows.filter((labels) => labels['alertname'] === rule).map((labels) => labels['hook_name'] ?? '');
  return { persisted: of('persisted'), headroom: of('headroom') };
}

/** `n` turns of the event loop: an evaluation started before is some slices in. */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * An evaluation of every rule some slices in, a batch of `hookName` committed then, and a stop: the order in which
 * the evaluation and the stop ended.
 */
async function stopDuringEvaluationOfEveryRule(t: Awaited<ReturnType<typeof setUp>>, hookName: string): Promise<string[]> {
  const all = t.alerting.engine.evaluate('all');
  await turns(5);
  await t.ingest(hookName);
  const order: string[] = [];
  const stopping = t.alerting.engine.stop().then(() => order.push('stop'));
  void all.then(() => order.push('evaluation of every rule'));
  await stopping;
  return order;
}

it('evaluates at a stop the batch whose evaluation on ingest was queued behind an evaluation of every rule, and ends that one at its slice', { timeout: 60_000 }, async () => {
  const t = await setUp();
  const { alerting, db, lines } = t;
  const evaluations = alerting.engine.stats.evaluations;
  // The first batch after a quiet spell: queued at once, behind the evaluation of every rule in progress.
  const order = await stopDuringEvaluationOfEveryRule(t, 'Stop:queued');

  // The evaluation of every rule ended before the stop did, with nothing applied (no headroom alert); the one on
  // ingest ran to its end: the batch's alert (and those of the stored hooks its rule reads) fires, saved with its
  // notification in the outbox.
  expect(order).toEqual(['evaluation of every rule', 'stop']);
  expect(alerting.engine.stats.evaluations).toBe(evaluations + 1);
  expect(isFiring(alerting, 'Stop:queued')).toBe(true);
  expect(firing(alerting)).toEqual({ persisted: HOOKS / 10 + 1, headroom: 0 });
  const saved = outbox(db);
  expect(saved.persisted).toContain('Stop:queued');
  expect(saved.persisted).toHaveLength(HOOKS / 10 + 1);
  expect(saved.headroom).toEqual([]);
  expect(lines.filter((l) => l.level === 'error' || l.level === 'warn')).toEqual([]);
});

it('lets an evaluation on ingest in progress at a stop run to its end', { timeout: 60_000 }, async () => {
  const { alerting, ingest, db } = await setUp();
  await ingest('Stop:running');
  // Queued at once (the first batch after a quiet spell): some slices in when the stop comes.
  await turns(5);
  const evaluations = alerting.engine.stats.evaluations;
  await alerting.engine.stop();
  expect(alerting.engine.stats.evaluations).toBe(evaluations + 1);
  expect(isFiring(alerting, 'Stop:running')).toBe(true);
  expect(firing(alerting)).toEqual({ persisted: HOOKS / 10 + 1, headroom: 0 });
  expect(outbox(db).persisted).toHaveLength(HOOKS / 10 + 1);
});

it('at a stop, ends an evaluation of every rule at its next slice and runs the evaluation on ingest waiting for its start', { timeout: 60_000 }, async () => {
  const t = await setUp();
  const { alerting, ingest, db } = t;
  // An evaluation on ingest ran (the first batch's, at once): the next batch within the spacing waits for its start.
  await ingest('PreToolUse:first');
  await alerting.engine.evaluate('notify');
  expect(isFiring(alerting, 'PreToolUse:first')).toBe(true);
  const evaluations = alerting.engine.stats.evaluations;
  const order = await stopDuringEvaluationOfEveryRule(t, 'Stop:held');

  // The evaluation of every rule applied nothing (it would have raised the headroom alerts); the held one ran.
  expect(order).toEqual(['evaluation of every rule', 'stop']);
  expect(alerting.engine.stats.evaluations).toBe(evaluations + 1);
  expect(firing(alerting)).toEqual({ persisted: HOOKS / 10 + 2, headroom: 0 });
  expect(isFiring(alerting, 'Stop:held')).toBe(true);
  expect(outbox(db)).toEqual({ persisted: expect.arrayContaining(['PreToolUse:first', 'Stop:held']) as string[], headroom: [] });
});

it('stops the timer of every rule\'s evaluations before it waits for the evaluation on ingest', { timeout: 60_000 }, async () => {
  const { alerting, ingest } = await setUp();
  await ingest('PreToolUse:first');
  await alerting.engine.evaluate('notify');
  // Held for its start: the stop runs it, over the thousand hooks, slice by slice.
  await ingest('Stop:held');
  const evaluate = vi.spyOn(alerting.engine, 'evaluate');
  // A timer due every millisecond, started just before the stop: each turn of the stop's wait would fire it.
  alerting.engine.startTimer(1);
  await alerting.engine.stop();
  expect(isFiring(alerting, 'Stop:held')).toBe(true);
  expect(evaluate).not.toHaveBeenCalled();
  // Nothing fires it after the stop either.
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect(evaluate).not.toHaveBeenCalled();
});
