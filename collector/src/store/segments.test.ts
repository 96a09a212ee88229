import { describe, expect, it } from 'vitest';
import { DAY, HOUR, splitDays, type Segment } from './segments.ts';

const T0 = Date.UTC(2026, 2, 2);

/** The runs' days, and whether they tile the segment without gap or overlap. */
function check(seg: Segment, runs: Segment[]): number[] {
  expect(runs[0]?.fromMs).toBe(seg.fromMs);
  expect(runs.at(-1)?.toMs).toBe(seg.toMs);
  for (let i = 1; i < runs.length; i++) expect(runs[i]?.fromMs).toBe(runs[i - 1]?.toMs);
  for (const r of runs) expect(r.granularity).toBe(seg.granularity);
  return runs.map((r) => (r.toMs - r.fromMs) / DAY);
}

describe('splitDays', () => {
  it('cuts a run of days into as many runs of whole days as asked, as even as days allow', () => {
    const seg: Segment = { granularity: 'day', fromMs: T0, toMs: T0 + 29 * DAY };
    expect(check(seg, splitDays(seg, 2))).toEqual([15, 14]);
    expect(check(seg, splitDays(seg, 3))).toEqual([10, 9, 10]);
    expect(check(seg, splitDays(seg, 1))).toEqual([29]);
  });

  it('never cuts more runs than there are days, and leaves a range shorter than a day whole', () => {
    const two: Segment = { granularity: 'day', fromMs: T0, toMs: T0 + 2 * DAY };
    expect(check(two, splitDays(two, 8))).toEqual([1, 1]);
    const short: Segment = { granularity: 'day', fromMs: T0 + HOUR, toMs: T0 + 5 * HOUR };
    expect(splitDays(short, 2)).toEqual([short]);
  });

  it('cuts a range that is not whole days at whole days from its start, the last run taking the rest', () => {
    const seg: Segment = { granularity: 'day', fromMs: T0 + 3 * HOUR, toMs: T0 + 3 * DAY + 5 * HOUR };
    const runs = splitDays(seg, 2);
    check(seg, runs);
    expect(runs.map((r) => r.toMs - r.fromMs)).toEqual([2 * DAY, DAY + 2 * HOUR]);
  });
});
