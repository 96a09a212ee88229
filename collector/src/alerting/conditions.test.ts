/** The rules' conditions alone: counters in, annotations (condition holds) or null out. No store. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { HookCounters } from '../../../shared/src/api.ts';
import { totalCounters } from '../store/counters.ts';
import type { Arrival } from '../store/store.ts';
import { blindCondition, formatCount, growthCondition, headroomCondition, hookLimitCondition, neverCompletedCondition, persistedCondition, quietFeedCondition, quietHookCondition, ratioCondition, windowText } from './conditions.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.parse('2026-11-30T10:00:00Z');

function counters(over: Partial<HookCounters> & { largest?: number } = {}): HookCounters {
  const { largest, ...rest } = over;
  const base = totalCounters([]);
  return { ...base, ...(largest === undefined ? {} : { maxChars: { ...base.maxChars, additionalContext: largest } }), ...rest };
}

describe('conditions', () => {
  it('formatCount writes numbers exactly as toLocaleString(\'en-US\') does after rounding', () => {
    const same = (n: number): void => {
      expect(formatCount(n)).toBe(Math.round(n).toLocaleString('en-US'));
    };
    for (const n of [0, -0, 0.4, -0.4, 0.5, 999, 1000, 9_999.5, 100_000, 1_234_567, -1234, 2 ** 53 - 1, 2 ** 53, -(2 ** 53), 1e21, NaN, Infinity, -Infinity]) same(n);
    fc.assert(fc.property(fc.oneof(fc.integer(), fc.double(), fc.maxSafeInteger()), same), { numRuns: 2000 });
  });

  it('windowText names windows as people write them', () => {
    expect([windowText(14 * DAY), windowText(DAY), windowText(HOUR), windowText(5 * 60_000), windowText(1500)]).toEqual(['14d', '24h', '1h', '5m', '2s']);
  });

  it('persisted: holds for an output saved to a file while the hook reported success, names late arrivals', () => {
    expect(persistedCondition(counters({ executions: 3, success: 3 }), 'h', HOUR, undefined)).toBeNull();
    // No success counted (num_success absent, or a failing hook): the output was lost all the same.
    expect(persistedCondition(counters({ executions: 1, outputsPersisted: 1, executionsWithPersisted: 1, success: 0 }), 'h', HOUR, undefined)?.['summary']).toBe('h: 1 output over the 10,000-character cap saved to a file instead of delivered in the last 1h; the hook did not report its outcome (no success or failure counted).');
    expect(persistedCondition(counters({ executions: 3, executionsWithPersisted: 3, blocking: 2, cancelled: 1, largest: 12_000 }), 'h', HOUR, undefined)?.['summary']).toBe('h: 3 executions in the last 1h with an output over the 10,000-character cap, which Claude Code saves to a file instead of delivering it; the hook reported no success (2 blocking errors, 1 cancelled) (measured size: this client does not report num_outputs_persisted).');
    const c = counters({ executions: 4, success: 4, outputsPersisted: 2, executionsWithPersisted: 1, largest: 12_000 });
    const a = persistedCondition(c, 'SessionStart:startup', HOUR, undefined);
    expect(a).toMatchObject({ outputs_persisted: '2', executions: '4', largest_output: '12000' });
    expect(a?.['summary']).toBe('SessionStart:startup: 2 outputs over the 10,000-character cap saved to a file in the last 1h; the model saw only a ~2,000-character preview while the hook reported success.');
    expect(a?.['event_time']).toBeUndefined();
    const late = { ...c, firstEventMs: T0 - 2 * HOUR, lastEventMs: T0 - 2 * HOUR, outputsPersisted: 1 } as Arrival;
    expect(persistedCondition(c, 'h', HOUR, late)).toMatchObject({ event_time: '2026-11-30T08:00:00.000Z', late_outputs_persisted: '1' });
    expect(persistedCondition(c, 'h', HOUR, late)?.['description']).toContain(' 1 of them arrived late: stamped 2026-11-30T08:00:00.000Z');
    // The author is told how to find the string over, what keeps it delivered meanwhile, and when the alert clears.
    expect(persistedCondition(c, 'h', HOUR, undefined)?.['description']).toMatch(/Keep each output under 10,000 characters: `hookwatch check -- <hook command>`.*`hookwatch guard --install <settings file>` wraps every command hook so that each output keeps the first ~9,500 characters .* It clears once 1h passes with no output persisted\.$/);
    // Never a bare `hookwatch guard -- ...` to write into settings.json: Claude Code's PATH need not hold hookwatch.
    expect(persistedCondition(c, 'h', HOUR, undefined)?.['description']).not.toContain('`hookwatch guard -- ');
    // Measured over the cap by a client that does not report persistence: the late ones are counted as executions.
    const measured = counters({ executions: 5, success: 5, executionsWithPersisted: 3, largest: 14_000 });
    const lateMeasured = { ...measured, firstEventMs: T0 - 2 * HOUR, lastEventMs: T0 - HOUR, executionsWithPersisted: 2 } as Arrival;
    const m = persistedCondition(measured, 'h', HOUR, lateMeasured);
    expect(m?.['summary']).toContain('3 executions in the last 1h with an output over the 10,000-character cap');
    expect(m?.['description']).toContain(' 2 of them arrived late: stamped 2026-11-30T08:00:00.000Z to 2026-11-30T09:00:00.000Z');
    // How many outputs such a client persisted is not reported: no count is given, never 0.
    expect(m).toMatchObject({ executions: '5', event_time: '2026-11-30T09:00:00.000Z' });
    expect([m?.['outputs_persisted'], m?.['late_outputs_persisted']]).toEqual([undefined, undefined]);
    // Reported on time, measured only among the late ones: the on-time count stands, the late one is not given.
    expect(persistedCondition(c, 'h', HOUR, lateMeasured)).toMatchObject({ outputs_persisted: '2' });
    expect(persistedCondition(c, 'h', HOUR, lateMeasured)?.['late_outputs_persisted']).toBeUndefined();
    // On-time events that report persistence, late ones only measured: the late ones still count.
    expect(persistedCondition(c, 'h', HOUR, lateMeasured)?.['description']).toContain(' 2 of them arrived late');
    // One client reported 1 output, another's 2 executions were only measured over the cap: at least 3 outputs.
    const mixed = persistedCondition(counters({ executions: 4, success: 4, outputsPersisted: 1, executionsWithPersisted: 3, largest: 12_000 }), 'h', HOUR, undefined);
    expect(mixed?.['summary']).toBe('h: at least 3 outputs over the 10,000-character cap saved to a file in the last 1h; the model saw only a ~2,000-character preview while the hook reported success (measured size where a client does not report num_outputs_persisted).');
    expect(mixed?.['outputs_persisted']).toBeUndefined();
  });

  it('persisted_ratio: above the threshold with enough executions only', () => {
    const rule = { windowMs: DAY, threshold: 0.05, minExecutions: 20 };
    expect(ratioCondition(rule, counters({ executions: 19, executionsWithPersisted: 19 }), 'h')).toBeNull();
    expect(ratioCondition(rule, counters({ executions: 100, executionsWithPersisted: 5 }), 'h')).toBeNull();
    expect(ratioCondition(rule, counters({ executions: 100, executionsWithPersisted: 6 }), 'h')).toMatchObject({ ratio: '0.0600' });
  });

  it('headroom: above the share of the cap with nothing persisted; never a negative "below"', () => {
    const rule = { windowMs: DAY, threshold: 0.8 };
    expect(headroomCondition(rule, counters({ largest: 8000 }), 'h')).toBeNull();
    expect(headroomCondition(rule, counters({ largest: 9000, outputsPersisted: 1 }), 'h')).toBeNull();
    expect(headroomCondition(rule, counters(), 'h')).toBeNull();
    expect(headroomCondition(rule, counters({ largest: 8550 }), 'h')).toMatchObject({ headroom: '1450', largest_output: '8550' });
    expect(headroomCondition(rule, counters({ largest: 10_500 }), 'h')?.['summary']).toContain('500 over the 10,000-character cap');
    // What to do before it crosses: measure the hook's strings, and fail CI above a budget.
    expect(headroomCondition(rule, counters({ largest: 8550 }), 'h')?.['description']).toMatch(/ Shorten it before it crosses: `hookwatch check -- <hook command>` measures each output string of the hook against the cap \(with `--budget 9500` it fails above that, for CI\)\.$/);
  });

  it('headroom: says the size is a sum over the hooks that ran whenever an execution\'s sizes may be one', () => {
    const rule = { windowMs: DAY, threshold: 0.8 };
    const said = (c: Partial<HookCounters>): string | undefined => headroomCondition(rule, counters({ largest: 10_500, ...c }), 'h')?.['description'];
    const SUM = 'Sizes are sums over the hooks that ran, so this is an upper bound of the largest single output.';
    expect(said({ executions: 2, numHooks: 2 })).toContain('Each execution ran one hook command, so 10,500 characters is the largest output\'s size.');
    // One ran two commands, the other did not say how many: two commands for two executions, yet sums.
    expect(said({ executions: 2, numHooks: 2, sizesMaySumExecutions: 2 })).toContain(SUM);
    expect(headroomCondition(rule, counters({ largest: 10_500, executions: 2, numHooks: 2, sizesMaySumExecutions: 2 }), 'h')?.['summary']).toContain('cap summed over the hooks that ran');
    // Counted before the count was kept (0): the commands run against the executions still tell.
    expect(said({ executions: 2, numHooks: 3 })).toContain(SUM);
  });

  it('never_completed: starts without completes', () => {
    const rule = { windowMs: HOUR, afterMs: 5 * 60_000 };
    expect(neverCompletedCondition(rule, counters({ starts: 3, executions: 3 }), 'h')).toBeNull();
    expect(neverCompletedCondition(rule, counters({ starts: 3, executions: 1 }), 'h')).toMatchObject({ missing: '2' });
  });

  it('growth: a trend that reaches the cap within the horizon, not one that does not', () => {
    const rising = Array.from({ length: 7 }, (_, i) => ({ t: T0 - (6 - i) * DAY, value: 5000 + i * 500 }));
    const a = growthCondition({ horizonDays: 14 }, rising, 'h', T0);
    expect(Number(a?.['days_to_cap'])).toBeGreaterThan(0);
    expect(Number(a?.['days_to_cap'])).toBeLessThanOrEqual(14);
    expect(a?.['description']).toMatch(/ Shorten it before it crosses: `hookwatch check -- <hook command>`.*`--budget 9500`/);
    expect(growthCondition({ horizonDays: 1 }, rising, 'h', T0)).toBeNull();
    // Every day measured: nothing said of size data. One execution without it, on a day after the trend's last: said.
    const ran = rising.map((p) => ({ bucketMs: p.t, executions: 2, sizeUnknownExecutions: 0 }));
    expect(growthCondition({ horizonDays: 14 }, rising, 'h', T0, ran)).toEqual(a);
    const later = growthCondition({ horizonDays: 14 }, rising.slice(0, -1), 'h', T0, [...ran.slice(0, -1), { bucketMs: T0, executions: 1, sizeUnknownExecutions: 1 }]);
    expect(later?.['summary']).toMatch(/; 12 of 13 executions measured, on 6 of the 7 days the hook ran, none on the latest day\.$/);
    expect(later?.['description']).toMatch(/\. 1 of 13 executions carried no size data \(a client before 2\.1\.280\), including every execution of the day since 2026-11-29: its output may have been larger, and is not in the trend\. Past the cap/);
    expect(later?.['executions_without_sizes']).toBe('1');
    expect(growthCondition({ horizonDays: 14 }, rising.map((p) => ({ ...p, value: 5000 })), 'h', T0)).toBeNull();
  });

  it('growth: days to the cap count from now, and a hook quiet for more than four days has no trend', () => {
    // 500 more a day from 5,000: the line reaches 10,000 four days after its last point, T0 + 4 days.
    const rising = Array.from({ length: 7 }, (_, i) => ({ t: T0 - (6 - i) * DAY, value: 5000 + i * 500 }));
    expect(growthCondition({ horizonDays: 14 }, rising, 'h', T0 + DAY / 2)).toMatchObject({ days_to_cap: '3.5', crosses_at: '2026-12-04T10:00:00.000Z' });
    // 2,000 higher, the line is at the cap on its last day: within a day, dated now, not at a time already past.
    const steep = rising.map((p) => ({ ...p, value: p.value + 2_000 }));
    expect(growthCondition({ horizonDays: 14 }, steep, 'h', T0 + DAY / 2)).toMatchObject({ days_to_cap: '0.0', crosses_at: '2026-11-30T22:00:00.000Z' });
    expect(growthCondition({ horizonDays: 14 }, steep, 'h', T0 + DAY / 2)?.['summary']).toMatch(/reaches the 10,000-character cap within a day\.$/);
    // The same days, ten days ago: the line passed the cap on paper, but the hook has sent nothing since.
    expect(growthCondition({ horizonDays: 14 }, rising, 'h', T0 + 10 * DAY)).toBeNull();
    // A long weekend without sessions (Friday's day to Tuesday evening) is not that: the trend still speaks.
    expect(growthCondition({ horizonDays: 14 }, rising, 'h', T0 + 4.5 * DAY)).not.toBeNull();
  });

  it('blind: a client version with executions that carried no sizes', () => {
    expect(blindCondition({ windowMs: DAY }, { serviceName: 'claude-code', version: '2.1.200', executions: 5, sizeUnknownExecutions: 0, hasSizeData: true })).toBeNull();
    expect(blindCondition({ windowMs: DAY }, { serviceName: 'claude-code', version: '2.1.197', executions: 5, sizeUnknownExecutions: 5, hasSizeData: false })?.['summary']).toContain('claude-code 2.1.197: 5 of 5 executions');
  });

  it('silence: quiet for `after`, never for a feed that never sent anything', () => {
    expect(quietFeedCondition({ afterMs: HOUR }, null, T0)).toBeNull();
    expect(quietFeedCondition({ afterMs: HOUR }, T0 - HOUR + 1, T0)).toBeNull();
    expect(quietFeedCondition({ afterMs: HOUR }, T0 - HOUR, T0)).toMatchObject({ last_event: new Date(T0 - HOUR).toISOString() });
    expect(quietHookCondition({ afterMs: HOUR }, 'h', T0 - HOUR + 1, T0)).toBeNull();
    expect(quietHookCondition({ afterMs: HOUR }, 'h', T0 - 2 * HOUR, T0)?.['summary']).toContain('h: no executions for 2h (alert after 1h)');
    // A time measured, not a setting: in the units a person reads it in, not 442282s.
    const quiet = 5 * DAY + 2 * HOUR + 51 * 60_000 + 22_500;
    expect(quietHookCondition({ afterMs: DAY }, 'h', T0 - quiet, T0)?.['summary']).toContain('h: no executions for 5d 2h (alert after 24h)');
    expect(quietFeedCondition({ afterMs: HOUR }, T0 - quiet, T0)?.['summary']).toContain('No hook events at all for 5d 2h (alert after 1h)');
    expect(quietHookCondition({ afterMs: HOUR }, 'h', T0 - (HOUR + 30 * 60_000 + 59_000), T0)?.['summary']).toContain('no executions for 1h 30m (alert');
    expect(quietHookCondition({ afterMs: 30_000 }, 'h', T0 - 45_300, T0)?.['summary']).toContain('no executions for 45s (alert');
    expect(quietHookCondition({ afterMs: 60_000 }, 'h', T0 - 30 * HOUR, T0)?.['summary']).toContain('no executions for 30h (alert');
  });

  it('hook_limit: events folded under the overflow hook, naming late arrivals', () => {
    expect(hookLimitCondition({ windowMs: HOUR }, undefined, '(other)', 1000)).toBeNull();
    const c = counters({ executions: 2, starts: 1 });
    const a = hookLimitCondition({ windowMs: HOUR }, c, '(other)', 1000);
    expect(a).toMatchObject({ folded_events: '3', max_hooks: '1000' });
    expect(a?.['event_time']).toBeUndefined();
    expect(a?.['description']).not.toContain('arrived late');
    const late = { ...counters({ executions: 1, starts: 1 }), firstEventMs: T0 - 3 * HOUR, lastEventMs: T0 - 2 * HOUR } as Arrival;
    const l = hookLimitCondition({ windowMs: HOUR }, c, '(other)', 1000, late);
    expect(l).toMatchObject({ folded_events: '3', late_folded_events: '2', first_event_time: '2026-11-30T07:00:00.000Z', event_time: '2026-11-30T08:00:00.000Z' });
    expect(l?.['description']).toContain(' 2 of them arrived late: stamped 2026-11-30T07:00:00.000Z to 2026-11-30T08:00:00.000Z, received in the last 1h.');
  });
});
