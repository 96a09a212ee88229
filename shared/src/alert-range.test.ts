import { describe, expect, it } from 'vitest';
import { alertRange } from './alert-range.ts';
import { MAX_RANGE_MS } from './api.ts';
import { chartStepForSpan } from './chart-step.ts';

const DAY = 86_400_000;
const NOW = Date.parse('2026-12-05T11:17:00Z');

describe('alertRange', () => {
  it('never links past the longest range the API answers, whatever the alert\'s age; its end and bucket edges kept', () => {
    for (const ageDays of [1, 30, 390, 394, 399, 400, 401, 730, 3650]) {
      const activeAt = new Date(NOW - ageDays * DAY).toISOString();
      for (const endsAt of [null, new Date(NOW - DAY).toISOString()]) {
        const { from, to } = alertRange({ activeAt, startsAt: activeAt, endsAt, annotations: {} }, NOW);
        const [f, t] = [Date.parse(from), Date.parse(to)];
        const step = chartStepForSpan(t - f) * 1000;
        expect(t - f, `${ageDays} days, ${endsAt ?? 'firing'}`).toBeLessThanOrEqual(MAX_RANGE_MS);
        expect(t).toBeGreaterThanOrEqual(endsAt ? Date.parse(endsAt) : NOW);
        expect([f % step, t % step]).toEqual([0, 0]);
        // A young alert is shown whole, from an hour before it became active.
        if (ageDays <= 30) expect(f).toBeLessThanOrEqual(NOW - ageDays * DAY - 3_600_000);
      }
    }
  });
});
