/**
 * hookwatch's per-hook series as Prometheus stores them, through deploy/prometheus/rules.yml: the renders of
 * /metrics of one process after another (a restart under the same instance, or a pod replaced by one under a new
 * instance), taken once a minute and evaluated by promtool. An alert that fired for a hook's output must stay
 * firing while the output is in its window, whatever became of the process that counted it.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { HookMetrics, RELEASE_IDLE_MS } from '../collector/src/pipeline/hook-metrics.ts';
import { MetricsRegistry } from '../collector/src/telemetry/metrics.ts';
import { FakeClock, hookEvent } from '../collector/test/support/alerting.ts';
import { hasPromtool, parseExposition } from '../collector/test/support/prometheus-text.ts';

const RULES = fileURLToPath(new URL('./prometheus/rules.yml', import.meta.url));
const START = 1_800_000_000_000;
const MINUTE = 60_000;

/** One hookwatch process: its per-hook counters and the registry its /metrics renders. */
interface Process {
  hooks: HookMetrics;
  metrics: MetricsRegistry;
  instance: string;
}

function startProcess(clock: FakeClock, instance: string, known: { hookEvent: string; hookName: string }[] = []): Process {
  const hooks = new HookMetrics({ maxSeries: 10, now: clock.now });
  const metrics = new MetricsRegistry();
  hooks.register(metrics);
  // What the store knows gets its series at start-up, as service.ts seeds them.
  hooks.seed(known.map((h) => ({ id: hookEvent({ ...h, timeMs: clock.t }).hookId, hookEvent: h.hookEvent, hookName: h.hookName, lastSeenMs: clock.t })));
  return { hooks, metrics, instance };
}

/** The samples Prometheus stored, minute by minute from START, per series; `stale` once a target is gone. */
class Scraped {
  private readonly series = new Map<string, string[]>();
  private minutes = 0;

  /** Scrapes each running process once (the time is START + minutes). */
  async scrape(processes: Process[]): Promise<void> {
    for (const p of processes) {
      for (const f of parseExposition(await p.metrics.render()).values()) {
        if (!f.name.startsWith('hookwatch_hook_')) continue;
        for (const s of f.samples) {
          const labels = { ...s.labels, job: 'hookwatch', instance: p.instance };
          const key = `${s.name}{${Object.entries(labels).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(',')}}`;
          // promtool's clock starts at 0: a timestamp gauge is given on that clock.
          const value = s.name === 'hookwatch_hook_series_start_time_seconds' ? s.value - START / 1000 : s.value;
          const values = this.series.get(key) ?? Array.from({ length: this.minutes }, () => '_');
          values.push(String(value));
          this.series.set(key, values);
        }
      }
    }
    this.minutes++;
    // A series missing from this minute's scrapes: stale once (Prometheus marks it so), then no sample.
    for (const values of this.series.values()) {
      if (values.length === this.minutes) continue;
      values.push(values.at(-1) === '_' || values.at(-1) === 'stale' ? '_' : 'stale');
    }
  }

  inputSeries(): { series: string; values: string }[] {
    return [...this.series].map(([series, values]) => ({ series, values: values.join(' ') }));
  }
}

type Expect = { expr: string; evalTime: string; samples: { labels: string; value: number }[] };

/** Runs rules.yml over what was scraped and expects exactly these samples of each query. */
function expectRules(scraped: Scraped, tests: Expect[]): void {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-hook-series-'));
  try {
    writeFileSync(join(dir, 'test.yml'), JSON.stringify({
      rule_files: [RULES],
      evaluation_interval: '1m',
      tests: [{
        interval: '1m',
        input_series: scraped.inputSeries(),
        promql_expr_test: tests.map((t) => ({ expr: t.expr, eval_time: t.evalTime, exp_samples: t.samples })),
      }],
    }));
    const r = spawnSync('promtool', ['test', 'rules', 'test.yml'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    expect(r.status, `${r.stdout}${r.stderr}\n${JSON.stringify(scraped.inputSeries(), null, 1)}`).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const PERSISTED = { hookEvent: 'Stop', hookName: 'Stop:report' };
const NEAR = { hookEvent: 'SessionStart', hookName: 'SessionStart:memory' };

const firing = (alertname: string, h: { hookEvent: string; hookName: string }, severity: string): { labels: string; value: number } => ({
  labels: `{__name__="ALERTS",alertname="${alertname}",alertstate="firing",hook_event="${h.hookEvent}",hook_name="${h.hookName}",severity="${severity}"}`,
  value: 1,
});

/**
 * Two hooks first seen at 2m30s, one persisting an output, one near the cap; the process is scraped every
 * minute from 0m, and at 6m30s replaced by `next` (the same instance: a restart; another: a new pod), which knows
 * both hooks from the store. Scraped until `minutes`.
 */
async function outputThenRestart(nextInstance: string, minutes: number): Promise<Scraped> {
  const clock = new FakeClock(START);
  const scraped = new Scraped();
  let running = startProcess(clock, 'hookwatch-0:9318');
  for (let m = 0; m <= minutes; m++) {
    clock.t = START + m * MINUTE;
    await scraped.scrape([running]);
    if (m === 2) {
      clock.t += 30_000;
      running.hooks.onIngested([
        hookEvent({ ...PERSISTED, timeMs: clock.t, additionalContextChars: 12_000, outputsPersisted: 1 }),
        hookEvent({ ...NEAR, timeMs: clock.t, additionalContextChars: 9_000, outputsPersisted: 0 }),
      ]);
    }
    if (m === 6) {
      clock.t += 30_000;
      running = startProcess(clock, nextInstance, [PERSISTED, NEAR]);
    }
  }
  return scraped;
}

describe('the release of an idle hook\'s series', () => {
  it('waits longer than every window of rules.yml, so a series going stale changes no rule\'s result', () => {
    const ms = { s: 1000, m: MINUTE, h: 3_600_000, d: 86_400_000 } as const;
    const windows = [...readFileSync(RULES, 'utf8').matchAll(/\[(\d+)([smhd])\]/g)].map((m) => Number(m[1]) * ms[m[2] as keyof typeof ms]);
    expect(windows.length).toBeGreaterThan(10);
    expect(Math.max(...windows)).toBe(24 * 3_600_000);
    expect(RELEASE_IDLE_MS).toBeGreaterThan(Math.max(...windows));
  });
});

describe.skipIf(!hasPromtool)('per-hook series through the Prometheus rules (skipped only outside CI without promtool)', () => {
  for (const [what, instance] of [['a restart under the same instance', 'hookwatch-0:9318'], ['a pod replaced by one under a new instance', 'hookwatch-1:9318']] as const) {
    it(`${what} keeps HookOutputPersisted, HookOutputNearCap and the hour's persisted count while the outputs are in their windows`, async () => {
      const scraped = await outputThenRestart(instance, 80);
      const persisted = `hookwatch:hook_outputs_persisted:increase1h{hook_event="${PERSISTED.hookEvent}",hook_name="${PERSISTED.hookName}"}`;
      expectRules(scraped, [
        // Fired before the restart, and still firing after it: the output of 2m30s is in the 15-minute window
        // until 17m30s.
        { expr: 'ALERTS{alertname="HookOutputPersisted"}', evalTime: '5m', samples: [firing('HookOutputPersisted', PERSISTED, 'critical')] },
        { expr: 'ALERTS{alertname="HookOutputPersisted"}', evalTime: '8m', samples: [firing('HookOutputPersisted', PERSISTED, 'critical')] },
        { expr: 'ALERTS{alertname="HookOutputPersisted"}', evalTime: '16m', samples: [firing('HookOutputPersisted', PERSISTED, 'critical')] },
        { expr: 'ALERTS{alertname="HookOutputPersisted"}', evalTime: '20m', samples: [] },
        // The hour's count holds the output across the restart (rounded: a pod gone leaves its last samples
        // to increase()'s extrapolation).
        { expr: `round(${persisted})`, evalTime: '5m', samples: [{ labels: persisted.replace(/^[^{]*/, ''), value: 1 }] },
        { expr: `round(${persisted})`, evalTime: '30m', samples: [{ labels: persisted.replace(/^[^{]*/, ''), value: 1 }] },
        // Near the cap at 2m30s: pending 15 minutes, firing until the hour is over.
        { expr: 'ALERTS{alertname="HookOutputNearCap",alertstate="firing"}', evalTime: '30m', samples: [firing('HookOutputNearCap', NEAR, 'info')] },
        { expr: 'ALERTS{alertname="HookOutputNearCap",alertstate="firing"}', evalTime: '60m', samples: [firing('HookOutputNearCap', NEAR, 'info')] },
        { expr: 'ALERTS{alertname="HookOutputNearCap"}', evalTime: '66m', samples: [] },
      ]);
    }, 90_000);
  }

  it('both servers of an HA pair fire HookOutputPersisted for a new hook: the one whose scrape saw the 0 by increase(), the other by the young series', async () => {
    // Server a scrapes on the minute, server b 30 seconds after: the render a's scrape got showed the new hook's
    // series at 0; b's first scrape of it already shows the output.
    const clock = new FakeClock(START);
    const [a, b] = [new Scraped(), new Scraped()];
    const running = startProcess(clock, 'hookwatch-0:9318');
    for (let m = 0; m <= 30; m++) {
      clock.t = START + m * MINUTE;
      await a.scrape([running]);
      clock.t += 30_000;
      await b.scrape([running]);
      if (m === 2) running.hooks.onIngested([hookEvent({ ...PERSISTED, timeMs: clock.t + 10_000, additionalContextChars: 12_000, outputsPersisted: 1 })]);
    }
    const values = (s: Scraped): string | undefined => s.inputSeries().find((x) => x.series.startsWith('hookwatch_hook_outputs_persisted_total{'))?.values;
    expect(values(a)?.split(' ').slice(0, 5)).toEqual(['_', '_', '_', '0', '1']);
    expect(values(b)?.split(' ').slice(0, 4)).toEqual(['_', '_', '_', '1']);
    for (const server of [a, b]) {
      expectRules(server, [
        { expr: 'ALERTS{alertname="HookOutputPersisted"}', evalTime: '6m', samples: [firing('HookOutputPersisted', PERSISTED, 'critical')] },
        { expr: 'ALERTS{alertname="HookOutputPersisted"}', evalTime: '16m', samples: [firing('HookOutputPersisted', PERSISTED, 'critical')] },
        { expr: 'ALERTS{alertname="HookOutputPersisted"}', evalTime: '21m', samples: [] },
      ]);
    }
  }, 90_000);

  for (const [what, instance] of [['a restart under the same instance', 'hookwatch-0:9318'], ['a pod replaced by one under a new instance', 'hookwatch-1:9318']] as const) {
    it(`a server whose scrape missed a new hook's 0 keeps HookOutputPersisted and the hour's persisted count across ${what}`, async () => {
      // Another reader of /metrics (the other server of an HA pair, someone's curl) got the render showing the
      // new hook's series at 0; this server's first sample of it already holds the output. At 6m30s the process
      // is replaced by one that knows the hook from the store (its series back at 0).
      const clock = new FakeClock(START);
      const scraped = new Scraped();
      let running = startProcess(clock, 'hookwatch-0:9318');
      for (let m = 0; m <= 80; m++) {
        clock.t = START + m * MINUTE;
        await scraped.scrape([running]);
        if (m === 2) {
          clock.t += 30_000;
          running.hooks.onIngested([hookEvent({ ...PERSISTED, timeMs: clock.t, additionalContextChars: 12_000, outputsPersisted: 1 })]);
          await running.metrics.render();
        }
        if (m === 6) {
          clock.t += 30_000;
          running = startProcess(clock, instance, [PERSISTED]);
        }
      }
      const values = scraped.inputSeries().find((x) => x.series.startsWith('hookwatch_hook_outputs_persisted_total{'))?.values;
      expect(values?.split(' ').slice(0, 4)).toEqual(['_', '_', '_', '1']);
      const persisted = `hookwatch:hook_outputs_persisted:increase1h{hook_event="${PERSISTED.hookEvent}",hook_name="${PERSISTED.hookName}"}`;
      expectRules(scraped, [
        { expr: 'ALERTS{alertname="HookOutputPersisted"}', evalTime: '5m', samples: [firing('HookOutputPersisted', PERSISTED, 'critical')] },
        { expr: 'ALERTS{alertname="HookOutputPersisted"}', evalTime: '8m', samples: [firing('HookOutputPersisted', PERSISTED, 'critical')] },
        { expr: 'ALERTS{alertname="HookOutputPersisted"}', evalTime: '16m', samples: [firing('HookOutputPersisted', PERSISTED, 'critical')] },
        { expr: 'ALERTS{alertname="HookOutputPersisted"}', evalTime: '20m', samples: [] },
        { expr: `round(${persisted})`, evalTime: '30m', samples: [{ labels: persisted.replace(/^[^{]*/, ''), value: 1 }] },
        { expr: `round(${persisted})`, evalTime: '70m', samples: [{ labels: persisted.replace(/^[^{]*/, ''), value: 0 }] },
      ]);
    }, 90_000);
  }

  it('a server whose scrape missed a restarted hook\'s 0 fires HookOutputPersisted for its new output, though the hook\'s older series counted as many', async () => {
    // The hook's output at 2m30s, seen from its 0; the process restarts at 30m30s under the same instance, knowing
    // the hook from the store. Another reader of /metrics gets the render showing the new series at 0, then an
    // output arrives: this server's first sample of the new series holds 1, as the old series did.
    const clock = new FakeClock(START);
    const scraped = new Scraped();
    let running = startProcess(clock, 'hookwatch-0:9318');
    for (let m = 0; m <= 50; m++) {
      clock.t = START + m * MINUTE;
      await scraped.scrape([running]);
      if (m === 2) {
        clock.t += 30_000;
        running.hooks.onIngested([hookEvent({ ...PERSISTED, timeMs: clock.t, additionalContextChars: 12_000, outputsPersisted: 1 })]);
      }
      if (m === 30) {
        clock.t += 30_000;
        running = startProcess(clock, 'hookwatch-0:9318', [PERSISTED]);
        await running.metrics.render();
        clock.t += 10_000;
        running.hooks.onIngested([hookEvent({ ...PERSISTED, timeMs: clock.t, additionalContextChars: 12_000, outputsPersisted: 1 })]);
      }
    }
    const values = scraped.inputSeries().find((x) => x.series.startsWith('hookwatch_hook_outputs_persisted_total{'))?.values;
    expect(values?.split(' ').slice(29, 33)).toEqual(['1', '1', '1', '1']);
    expectRules(scraped, [
      { expr: 'ALERTS{alertname="HookOutputPersisted"}', evalTime: '25m', samples: [] },
      { expr: 'ALERTS{alertname="HookOutputPersisted"}', evalTime: '31m', samples: [firing('HookOutputPersisted', PERSISTED, 'critical')] },
      { expr: 'ALERTS{alertname="HookOutputPersisted"}', evalTime: '45m', samples: [firing('HookOutputPersisted', PERSISTED, 'critical')] },
      { expr: 'ALERTS{alertname="HookOutputPersisted"}', evalTime: '46m', samples: [] },
    ]);
  }, 90_000);
});
