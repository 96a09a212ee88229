/**
 * Evaluations on ingest start a spacing apart at least (AlertEngineOptions.ingestSpacingMs, here a minute, so no
 * spaced evaluation starts on its own during a test): the first batch after a quiet spell is evaluated at once, the
 * batches that follow within the spacing share the next evaluation, which reads every rule they triggered, and a
 * stop runs that evaluation at once instead of dropping it or waiting for its time. Real SQLite store and state file,
 * a real webhook receiver.
 */
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { silentLogger } from '../telemetry/logger.ts';
import { hookEvent, type EventFacts } from '../../test/support/alerting.ts';
import { engineConfig, engineFakes, outboxFiring } from '../../test/support/alerting-engine.ts';
import { until } from '../../test/helpers.ts';
import { startAlerting } from './index.ts';

const SPACING_MS = 60_000;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setUp(spacingMs = SPACING_MS) {
  const { dir, store, sink, close } = await engineFakes('hookwatch-ingest-spacing-', 'file');
  const config = engineConfig(sink.url, [{ kind: 'persisted', window: '1h' }, { kind: 'headroom', window: '1h' }], 100);
  const db = join(dir, 'state.db');
  const alerting = await startAlerting({ config, db, store, logger: silentLogger, timer: false, random: () => 0.5, ingestSpacingMs: spacingMs });
  cleanups.push(async () => {
    await alerting.stop();
    await close();
  });
  // The evaluation the start queued is done.
  await alerting.engine.evaluate('notify');
  const ingest = async (facts: Omit<EventFacts, 'timeMs'>): Promise<void> => {
    alerting.engine.onIngested((await store.ingest([hookEvent({ ...facts, timeMs: Date.now() })])).inserted);
  };
  return { alerting, ingest, db };
}

/** The active alerts by rule and hook, as the API lists them. */
const active = (alerting: Awaited<ReturnType<typeof setUp>>['alerting']): string[] =>
  alerting.engine.alerts().filter((a) => a.state === 'firing').map((a) => `${a.labels['alertname']} ${a.labels['hook_name']}`).sort();

/** The hooks the saved outbox holds a firing notification of. */
function outboxHooks(db: string): string[] {
  return outboxFiring(db).map((labels) => labels['hook_name'] ?? '').sort();
}

it('evaluates the first batch after a quiet spell at once, and holds those within the spacing for the next start', { timeout: 30_000 }, async () => {
  const { alerting, ingest } = await setUp();
  await ingest({ hookName: 'PreToolUse:first', additionalContextChars: 12_000, outputsPersisted: 1 });
  // Queued at once: the evaluation after it finds the alert raised.
  await alerting.engine.evaluate('notify');
  expect(active(alerting)).toEqual(['persisted PreToolUse:first']);
  const evaluations = alerting.engine.stats.evaluations;

  // Within the spacing: a persisted output and an output near the cap (another rule) wait for the next start.
  await ingest({ hookName: 'PostToolUse:second', additionalContextChars: 12_000, outputsPersisted: 1 });
  await ingest({ hookName: 'Stop:near', additionalContextChars: 9_000, outputsPersisted: 0 });
  await alerting.engine.evaluate('notify');
  expect(active(alerting)).toEqual(['persisted PreToolUse:first']);
  expect(alerting.engine.stats.evaluations).toBe(evaluations + 1);
});

it('evaluates the batches within the spacing together at the next start, reading every rule they triggered', { timeout: 30_000 }, async () => {
  const { alerting, ingest } = await setUp(2_000);
  await ingest({ hookName: 'PreToolUse:first', additionalContextChars: 12_000, outputsPersisted: 1 });
  await alerting.engine.evaluate('notify');
  const evaluations = alerting.engine.stats.evaluations;
  await ingest({ hookName: 'PostToolUse:second', additionalContextChars: 12_000, outputsPersisted: 1 });
  await ingest({ hookName: 'Stop:near', additionalContextChars: 9_000, outputsPersisted: 0 });
  await until('the spaced evaluation', () => alerting.engine.stats.evaluations > evaluations, 10_000);
  expect(alerting.engine.stats.evaluations).toBe(evaluations + 1);
  expect(active(alerting)).toEqual(['headroom Stop:near', 'persisted PostToolUse:second', 'persisted PreToolUse:first']);
});

it('runs a spaced evaluation at a stop, at once, with every rule triggered meanwhile, its notifications saved', { timeout: 30_000 }, async () => {
  const { alerting, ingest, db } = await setUp();
  await ingest({ hookName: 'PreToolUse:first', additionalContextChars: 12_000, outputsPersisted: 1 });
  await alerting.engine.evaluate('notify');
  const evaluations = alerting.engine.stats.evaluations;
  await ingest({ hookName: 'PostToolUse:second', additionalContextChars: 12_000, outputsPersisted: 1 });
  await ingest({ hookName: 'Stop:near', additionalContextChars: 9_000, outputsPersisted: 0 });

  // The test's timeout is half the spacing: the stop does not wait for the evaluation's time.
  await alerting.stop();
  expect(alerting.engine.stats.evaluations).toBe(evaluations + 1);
  expect(active(alerting)).toEqual(['headroom Stop:near', 'persisted PostToolUse:second', 'persisted PreToolUse:first']);
  expect(outboxHooks(db)).toEqual(['PostToolUse:second', 'PreToolUse:first', 'Stop:near']);
});
