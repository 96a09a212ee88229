/**
 * hookwatch_hook_last_output_chars as Prometheus sees it: only at scrapes. max_over_time over the samples must
 * find every output of a hook that runs many times between two scrapes, and the gauge must still come down
 * once the large output is old.
 */
import { describe, expect, it } from 'vitest';
import { FakeClock, hookEvent } from '../../test/support/alerting.ts';
import { parseExposition, sampleValue, type ParsedFamily } from '../../test/support/prometheus-text.ts';
import type { GuardTrim } from '../store/guard-trims.ts';
import { MetricsRegistry } from '../telemetry/metrics.ts';
import { HookMetrics, RECENT_OUTPUT_MS, RELEASE_IDLE_MS } from './hook-metrics.ts';

const HOOK = 'PreToolUse:Bash';

async function lastOutput(metrics: MetricsRegistry): Promise<number | undefined> {
  return sampleValue(parseExposition(await metrics.render()), 'hookwatch_hook_last_output_chars', { hook_name: HOOK });
}

describe('hookwatch_hook_last_output_chars', () => {
  for (const scrapeEveryMs of [15_000, 60_000, 120_000]) {
    it(`a near-cap output between two scrapes reaches max_over_time (scrape every ${scrapeEveryMs / 1000} s), and the gauge comes down after`, async () => {
      const clock = new FakeClock(1_800_000_000_123);
      const start = clock.t;
      const hooks = new HookMetrics({ maxSeries: 10, now: clock.now });
      const metrics = new MetricsRegistry();
      hooks.register(metrics);
      // The hook runs every 2 s with 300 characters; once, 62 s in, with 9,500 (no scrape interval divides 62 s).
      const samples: { atMs: number; value: number | undefined }[] = [];
      let nextScrape = start + scrapeEveryMs;
      for (let at = start; at <= start + 15 * 60_000; at += 2_000) {
        while (nextScrape <= at) {
          clock.t = nextScrape;
          samples.push({ atMs: nextScrape, value: await lastOutput(metrics) });
          nextScrape += scrapeEveryMs;
        }
        clock.t = at;
        hooks.onIngested([hookEvent({ hookName: HOOK, timeMs: at, additionalContextChars: at === start + 62_000 ? 9_500 : 300, stdoutChars: 0 })]);
      }
      const seen = samples.map((s) => s.value ?? 0);
      // max_over_time(hookwatch_hook_last_output_chars[1h]) over what Prometheus stored.
      expect(Math.max(...seen)).toBe(9_500);
      // Not a since-start maximum: the samples taken well after it are the hook's current size again.
      const late = samples.filter((s) => s.atMs > start + 62_000 + 2 * RECENT_OUTPUT_MS + scrapeEveryMs);
      expect(late.length).toBeGreaterThan(0);
      for (const s of late) expect(s.value).toBe(300);
    });
  }

  it('holds the newest execution\'s size while the hook is idle, and stays absent for a hook without size data', async () => {
    const clock = new FakeClock(1_800_000_000_000);
    const hooks = new HookMetrics({ maxSeries: 10, now: clock.now });
    const metrics = new MetricsRegistry();
    hooks.register(metrics);
    hooks.onIngested([hookEvent({ hookName: HOOK, timeMs: clock.t, additionalContextChars: 4_000, stdoutChars: 0 })]);
    hooks.onIngested([hookEvent({ hookName: 'Stop', timeMs: clock.t, additionalContextChars: null })]);
    clock.advance(24 * 3_600_000);
    expect(await lastOutput(metrics)).toBe(4_000);
    expect(sampleValue(parseExposition(await metrics.render()), 'hookwatch_hook_last_output_chars', { hook_name: 'Stop' })).toBeUndefined();
  });

  it('goes absent once the newest execution carries no size data, rather than hold an older size; comes back with the next measured one', async () => {
    const clock = new FakeClock(1_800_000_000_000);
    const hooks = new HookMetrics({ maxSeries: 10, now: clock.now });
    const metrics = new MetricsRegistry();
    hooks.register(metrics);
    hooks.onIngested([hookEvent({ hookName: HOOK, timeMs: clock.t, additionalContextChars: 9_000, stdoutChars: 0 })]);
    clock.advance(60_000);
    // A client older than 2.1.280 runs the hook from now on.
    hooks.onIngested([hookEvent({ hookName: HOOK, timeMs: clock.t, additionalContextChars: null })]);
    // The measured output still counts for the time every output counts.
    expect(await lastOutput(metrics)).toBe(9_000);
    clock.advance(2 * RECENT_OUTPUT_MS);
    expect(await lastOutput(metrics)).toBeUndefined();
    // An unmeasured execution stamped before the measured one is not the newest.
    const newest = clock.t;
    hooks.onIngested([hookEvent({ hookName: HOOK, timeMs: newest, additionalContextChars: 200, stdoutChars: 0 })]);
    hooks.onIngested([hookEvent({ hookName: HOOK, timeMs: newest - 5_000, additionalContextChars: null })]);
    clock.advance(2 * RECENT_OUTPUT_MS);
    expect(await lastOutput(metrics)).toBe(200);
  });
});

describe('a hook\'s series on /metrics', () => {
  const scrape = async (metrics: MetricsRegistry): Promise<Map<string, ParsedFamily>> => parseExposition(await metrics.render());

  it('shows a new hook\'s counters at 0 in the first render, and what was held from the next one on (increase() sees the first events)', async () => {
    const clock = new FakeClock(1_800_000_000_000);
    const hooks = new HookMetrics({ maxSeries: 10, now: clock.now });
    const metrics = new MetricsRegistry();
    hooks.register(metrics);
    hooks.onIngested([hookEvent({ hookName: HOOK, timeMs: clock.t, additionalContextChars: 12_000, outputsPersisted: 1 })]);
    const trim: GuardTrim = { dedupKey: 'trim-1', hookId: hookEvent({ hookName: HOOK, timeMs: clock.t }).hookId, hookEvent: 'PreToolUse', hookName: HOOK, timeMs: clock.t, field: 'stdout', sentChars: 20_000, keptChars: 9_500, sessionId: 's-1' };
    hooks.onGuardTrims([trim.hookId], [trim]);
    const counted = (f: Map<string, ParsedFamily>): (number | undefined)[] => ['hookwatch_hook_executions_total', 'hookwatch_hook_outputs_persisted_total', 'hookwatch_hook_executions_with_persisted_total', 'hookwatch_hook_guard_trims_total']
      .map((n) => sampleValue(f, n, { hook_name: HOOK }));
    const first = await scrape(metrics);
    expect(counted(first)).toEqual([0, 0, 0, 0]);
    // Gauges are no counts: the size is there at once.
    expect(sampleValue(first, 'hookwatch_hook_last_output_chars', { hook_name: HOOK })).toBe(12_060);
    expect(sampleValue(first, 'hookwatch_hook_series')).toBe(1);
    clock.advance(15_000);
    expect(counted(await scrape(metrics))).toEqual([1, 1, 1, 1]);
    // A series already shown counts an event at the next render.
    hooks.onIngested([hookEvent({ hookName: HOOK, timeMs: clock.t, additionalContextChars: 100, outputsPersisted: 0 })]);
    expect(counted(await scrape(metrics))).toEqual([2, 1, 1, 1]);
  });

  it('releases the series of a hook idle for RELEASE_IDLE_MS (longer than rules.yml\'s largest window), and gives its slot to a hook left without one', async () => {
    const clock = new FakeClock(1_800_000_000_000);
    const hooks = new HookMetrics({ maxSeries: 2, now: clock.now });
    const metrics = new MetricsRegistry();
    hooks.register(metrics);
    const run = (hookName: string): void => hooks.onIngested([hookEvent({ hookName, timeMs: clock.t })]);
    run('PreToolUse:mcp__a');
    run('PreToolUse:mcp__b');
    run('PreToolUse:mcp__c');
    let f = await scrape(metrics);
    expect([sampleValue(f, 'hookwatch_hook_series'), sampleValue(f, 'hookwatch_hook_series_dropped')]).toEqual([2, 1]);
    expect(RELEASE_IDLE_MS).toBeGreaterThan(24 * 3_600_000);
    // b keeps running; a goes idle.
    clock.advance(RELEASE_IDLE_MS - 60_000);
    run('PreToolUse:mcp__b');
    f = await scrape(metrics);
    expect(sampleValue(f, 'hookwatch_hook_executions_total', { hook_name: 'PreToolUse:mcp__a' })).toBe(1);
    clock.advance(60_000);
    f = await scrape(metrics);
    // a is gone from every family; c, idle as long, no longer counts as left without a series.
    expect([...f.values()].flatMap((x) => x.samples).filter((x) => x.labels['hook_name'] === 'PreToolUse:mcp__a')).toEqual([]);
    expect(sampleValue(f, 'hookwatch_hook_executions_total', { hook_name: 'PreToolUse:mcp__b' })).toBe(2);
    expect([sampleValue(f, 'hookwatch_hook_series'), sampleValue(f, 'hookwatch_hook_series_dropped')]).toEqual([1, 0]);
    // The freed slot goes to the next new hook, shown at 0 first like any new series.
    run('PreToolUse:mcp__d');
    f = await scrape(metrics);
    expect(sampleValue(f, 'hookwatch_hook_executions_total', { hook_name: 'PreToolUse:mcp__d' })).toBe(0);
    expect((await scrape(metrics)).get('hookwatch_hook_executions_total')?.samples.map((x) => [x.labels['hook_name'], x.value])).toEqual([['PreToolUse:mcp__b', 2], ['PreToolUse:mcp__d', 1]]);
    // a coming back finds the cap reached again: counted as dropped, in the overflow counters.
    run('PreToolUse:mcp__a');
    f = await scrape(metrics);
    expect([sampleValue(f, 'hookwatch_hook_series'), sampleValue(f, 'hookwatch_hook_series_dropped'), sampleValue(f, 'hookwatch_hook_overflow_executions_total')]).toEqual([2, 1, 2]);
  });
});
