/**
 * When an alert's evidence begins and what guard trimmed of its hook (rules.ts withEvidence): read once, as the
 * alert becomes active, a few alerts at a time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock, hookEvent, WebhookSink } from '../../test/support/alerting.ts';
import type { AlertmanagerWebhookBody } from '../notify/alertmanager.ts';
import { hookId } from '../hooks/extract.ts';
import { parseReceivers } from '../notify/settings.ts';
import { dimensionNames } from '../pipeline/settings.ts';
import { SqliteStore } from '../store/sqlite/index.ts';
import type { Store } from '../store/store.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { startAlerting } from './index.ts';
import { EVIDENCE_READS_AT_ONCE, withEvidence, type Candidate } from './rules.ts';
import { parseRules } from './settings.ts';

function candidate(hook: string, read: () => Promise<number | null>): Candidate {
  return { labels: { alertname: 'persisted', hook_name: hook }, annotations: {}, hookId: hook, readEvidence: read };
}

describe('withEvidence', () => {
  it('reads it for the candidates that become alerts only, and keeps a candidate whose read fails, its time unknown', async () => {
    const reads: string[] = [];
    const errors: unknown[] = [];
    const out = await withEvidence([
      candidate('new', async () => {
        reads.push('new');
        return 1_000;
      }),
      candidate('active', async () => {
        reads.push('active');
        return 2_000;
      }),
      candidate('failing', async () => {
        reads.push('failing');
        throw new Error('store unavailable');
      }),
      { labels: { alertname: 'growth', hook_name: 'read' }, annotations: {}, hookId: 'read', evidenceFromMs: 3_000 },
    ], (c) => c.labels['hook_name'] !== 'active', (err) => errors.push(err));
    expect(reads).toEqual(['new', 'failing']);
    expect(out.map((c) => [c.labels['hook_name'], c.evidenceFromMs])).toEqual([['new', 1_000], ['active', undefined], ['failing', undefined], ['read', 3_000]]);
    // Nothing left to read later: the candidates go on to the lifecycle as plain data.
    expect(out.every((c) => c.readEvidence === undefined)).toBe(true);
    expect(errors).toEqual([new Error('store unavailable')]);
  });

  it('reads no more in an evaluation once a read failed: a store gone away is not waited on once per alert', async () => {
    const reads: string[] = [];
    const errors: unknown[] = [];
    const failing = (hook: string): Candidate => candidate(hook, async () => {
      reads.push(hook);
      throw new Error('timeout exceeded when trying to connect');
    });
    const hooks = Array.from({ length: EVIDENCE_READS_AT_ONCE * 3 }, (_, i) => `h${i}`);
    const out = await withEvidence(hooks.map(failing), () => true, (err) => errors.push(err));
    // Those in flight when the first failed, and no more.
    expect(reads).toEqual(hooks.slice(0, EVIDENCE_READS_AT_ONCE));
    expect(errors).toHaveLength(1);
    // Every candidate still goes on, its time unknown: the alerts go pending, their links from when they became active.
    expect(out.map((c) => [c.labels['hook_name'], c.evidenceFromMs, c.readEvidence])).toEqual(hooks.map((h) => [h, undefined, undefined]));
  });

  it('keeps the candidates in their order, whichever read finishes first', async () => {
    const hooks = Array.from({ length: EVIDENCE_READS_AT_ONCE * 2 }, (_, i) => `h${i}`);
    const started: { hook: string; finish: (t: number) => void }[] = [];
    const reading = withEvidence(hooks.map((hook) => candidate(hook, () => new Promise((finish) => started.push({ hook, finish })))), () => true, () => undefined);
    let finished = false;
    void reading.then(() => (finished = true));
    // Of the reads in flight, the one started last finishes first, each time.
    while (!finished) {
      await new Promise((resolve) => setImmediate(resolve));
      const last = started.pop();
      last?.finish(hooks.indexOf(last.hook) * 1_000);
    }
    expect((await reading).map((c) => [c.labels['hook_name'], c.evidenceFromMs])).toEqual(hooks.map((h, i) => [h, i * 1_000]));
  });

  it('reads what guard trimmed of the hook once, for a new alert, into its annotations; a trend\'s time read with it is kept', async () => {
    const reads: string[] = [];
    const guarded = (hook: string, evidenceFromMs?: number): Candidate => ({
      labels: { alertname: 'growth', hook_name: hook }, annotations: { summary: hook }, hookId: hook, ...(evidenceFromMs === undefined ? {} : { evidenceFromMs }),
      readGuard: async () => {
        reads.push(hook);
        return hook === 'unguarded' ? null : { guard_trims: '2' };
      },
    });
    const out = await withEvidence([guarded('new', 5_000), guarded('active', 6_000), guarded('unguarded')], (c) => c.labels['hook_name'] !== 'active', () => undefined);
    expect(reads).toEqual(['new', 'unguarded']);
    expect(out.map((c) => [c.labels['hook_name'], c.evidenceFromMs, c.annotations])).toEqual([
      ['new', 5_000, { summary: 'new', guard_trims: '2' }],
      ['active', 6_000, { summary: 'active' }],
      ['unguarded', undefined, { summary: 'unguarded' }],
    ]);
    expect(out.every((c) => c.readGuard === undefined)).toBe(true);
  });
});

/** A series read held until the test lets it through, counting how many wait at once. */
class SeriesGate {
  private waiting: (() => void)[] = [];
  private arrived: (() => void) | undefined;
  reads = 0;
  mostAtOnce = 0;

  /** `store`, its series reads held at this gate. */
  hold(store: Store): Store {
    return new Proxy(store, {
      get: (target, prop) => {
        if (prop === 'series') {
          return async (...args: Parameters<Store['series']>) => {
            this.reads++;
            await new Promise<void>((resolve) => {
              this.waiting.push(resolve);
              this.mostAtOnce = Math.max(this.mostAtOnce, this.waiting.length);
              this.arrived?.();
            });
            return target.series(...args);
          };
        }
        const v: unknown = Reflect.get(target, prop, target);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }

  /** Resolves once a read waits (at once when one does). */
  read(): Promise<void> {
    if (this.waiting.length > 0) return Promise.resolve();
    return new Promise((resolve) => (this.arrived = resolve));
  }

  /** Lets every waiting read through. */
  open(): void {
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}

describe('a burst of new alerts', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('is read a few alerts at a time, never more, and each alert gets its evidence time and its notification', async () => {
    const T0 = Date.parse('2026-11-30T10:00:00Z');
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-evidence-burst-'));
    const clock = new FakeClock(T0);
    const sink = new WebhookSink(clock.now);
    await sink.start();
    const store = new SqliteStore({ path: join(dir, 'h.db') });
    const gate = new SeriesGate();
    const config = {
      rules: parseRules([{ kind: 'persisted', window: '1h' }], dimensionNames([])),
      externalLabels: {},
      receivers: parseReceivers([{ name: 'ops', url: `${sink.url}/hook` }]),
      evaluationIntervalMs: 10_000, repeatIntervalMs: 4 * 3_600_000, externalUrl: 'http://hookwatch.test', otlp: { endpoint: '', headers: {} },
      delivery: { deadlineMs: 60_000, initialBackoffMs: 5, maxBackoffMs: 20, maxQueue: 100 },
    };
    const alerting = await startAlerting({ config, db: join(dir, 'h.db'), store: gate.hold(store), logger: silentLogger, now: clock.now, timer: false });
    cleanups.push(async () => {
      gate.open();
      await alerting.stop();
      await store.close();
      await sink.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const hooks = Array.from({ length: EVIDENCE_READS_AT_ONCE * 3 + 1 }, (_, i) => `PostToolUse:burst${i}`);
    // Stamped at the start of a bucket of the chart the alert's link opens on (5 minutes for its range).
    await store.ingest(hooks.map((hookName) => hookEvent({ hookName, timeMs: T0 - 300_000, additionalContextChars: 12_000, outputsPersisted: 1 })));

    let done = false;
    const evaluated = alerting.engine.evaluate('all').then(() => (done = true));
    // Each read waits until the test lets the waiting ones through: reads started side by side wait together.
    while (!done) {
      await Promise.race([gate.read(), evaluated]);
      gate.open();
    }
    expect(gate.reads).toBe(hooks.length);
    expect(gate.mostAtOnce).toBe(EVIDENCE_READS_AT_ONCE);

    await alerting.dispatcher.idle();
    const alerts = alerting.engine.alerts();
    expect(alerts.map((a) => a.labels['hook_name']).sort()).toEqual([...hooks].sort());
    expect(alerts.map((a) => [a.state, a.firstEventAt])).toEqual(hooks.map(() => ['firing', new Date(T0 - 300_000).toISOString()]));
    expect(sink.bodies<AlertmanagerWebhookBody>().flatMap((b) => b.alerts.map((a) => a.labels['hook_name'])).sort()).toEqual([...hooks].sort());
  });
});

describe('a rule split by groupBy', () => {
  it('reads the evidence of the group without the dimension from its own events, not the hook\'s others', async () => {
    const T0 = Date.parse('2026-11-30T10:00:00Z');
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-evidence-unset-'));
    const store = new SqliteStore({ path: join(dir, 'h.db'), dimensions: ['team'] });
    const config = {
      rules: parseRules([{ kind: 'persisted', window: '1h', groupBy: 'team' }], dimensionNames(['team'])),
      externalLabels: {},
      receivers: [], evaluationIntervalMs: 10_000, repeatIntervalMs: 4 * 3_600_000, externalUrl: 'http://hookwatch.test', otlp: { endpoint: '', headers: {} },
      delivery: { deadlineMs: 60_000, initialBackoffMs: 5, maxBackoffMs: 20, maxQueue: 100 },
    };
    const alerting = await startAlerting({ config, db: join(dir, 'h.db'), store, logger: silentLogger, now: () => T0, timer: false });
    try {
      const hookName = 'SessionStart:startup';
      // The team's output was persisted 50 minutes ago; an output of events without a team only 5 minutes ago.
      await store.ingest([
        hookEvent({ hookName, team: 'platform', timeMs: T0 - 3_000_000, additionalContextChars: 12_000, outputsPersisted: 1 }),
        hookEvent({ hookName, timeMs: T0 - 300_000, additionalContextChars: 12_000, outputsPersisted: 1 }),
      ]);
      await alerting.engine.evaluate('all');
      const alerts = alerting.engine.alerts();
      expect(alerts.map((a) => [a.labels['team'] ?? '', a.firstEventAt]).sort()).toEqual([
        ['', new Date(T0 - 300_000).toISOString()],
        ['platform', new Date(T0 - 3_000_000).toISOString()],
      ]);
    } finally {
      await alerting.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads what guard trimmed of a hook once for all the hook\'s new alerts, each of which says it', async () => {
    const T0 = Date.parse('2026-11-30T10:00:00Z');
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-evidence-groupby-'));
    const store = new SqliteStore({ path: join(dir, 'h.db'), dimensions: ['team'] });
    const hookName = 'SessionStart:startup';
    const teams = ['platform', 'web', 'data'];
    let guardReads = 0;
    const counted = new Proxy(store, {
      get: (target, prop) => {
        const v: unknown = Reflect.get(target, prop, target);
        if (prop === 'guardTrims') guardReads++;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const config = {
      rules: parseRules([{ kind: 'persisted', window: '1h', groupBy: 'team' }], dimensionNames(['team'])),
      externalLabels: {},
      receivers: [], evaluationIntervalMs: 10_000, repeatIntervalMs: 4 * 3_600_000, externalUrl: 'http://hookwatch.test', otlp: { endpoint: '', headers: {} },
      delivery: { deadlineMs: 60_000, initialBackoffMs: 5, maxBackoffMs: 20, maxQueue: 100 },
    };
    const alerting = await startAlerting({ config, db: join(dir, 'h.db'), store: counted, logger: silentLogger, now: () => T0, timer: false });
    try {
      await store.recordGuardTrims([{ dedupKey: 'trim-1', hookId: hookId('SessionStart', hookName), hookEvent: 'SessionStart', hookName, field: 'stdout', sentChars: 14_200, keptChars: 9_500, timeMs: T0 - 600_000, sessionId: 'g' }]);
      await store.ingest(teams.map((team) => hookEvent({ hookName, team, timeMs: T0 - 300_000, additionalContextChars: 12_000, outputsPersisted: 1 })));
      await alerting.engine.evaluate('all');
      const alerts = alerting.engine.alerts();
      expect(alerts.map((a) => [a.labels['team'], a.annotations['guard_trims']]).sort()).toEqual(teams.map((t) => [t, '1']).sort());
      expect(guardReads).toBe(1);
    } finally {
      await alerting.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
