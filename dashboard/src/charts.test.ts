import { describe, expect, it } from 'vitest';
import { bandLabelRows, bandLabelX, zoomInBuckets } from './charts.ts';

describe('alert band labels', () => {
  const area = { left: 40, right: 640 };
  it('start at the band, and end inside the plot when the band begins near its right edge', () => {
    expect(bandLabelX(100, 90, area)).toBe(103);
    // A band in the last pixels: the label moves left so all of it shows.
    expect(bandLabelX(620, 90, area)).toBe(640 - 3 - 90);
    // Wider than the plot: from its left edge.
    expect(bandLabelX(600, 900, area)).toBe(43);
  });

  it('go on a line of their own where they would run into another, and are left out past four lines', () => {
    // Three alerts of a hook that began in the same bucket, one later band clear of them, one that touches the first.
    expect(bandLabelRows([{ left: 600, width: 90 }, { left: 600, width: 80 }, { left: 610, width: 100 }, { left: 100, width: 90 }, { left: 190, width: 50 }], area)).toEqual([
      { x: 547, row: 0 }, { x: 557, row: 1 }, { x: 537, row: 2 }, { x: 103, row: 0 }, { x: 193, row: 1 },
    ]);
    const five = bandLabelRows(Array.from({ length: 5 }, () => ({ left: 300, width: 60 })), area);
    expect(five.map((p) => p?.row ?? null)).toEqual([0, 1, 2, 3, null]);
  });
});

describe('zooming in from the keyboard', () => {
  it('keeps half the buckets, around the one picked or the middle, within the chart', () => {
    expect(zoomInBuckets(60, null)).toEqual([14, 43]);
    expect(zoomInBuckets(60, 0)).toEqual([0, 29]);
    expect(zoomInBuckets(60, 59)).toEqual([30, 59]);
    expect(zoomInBuckets(48, 20)).toEqual([8, 31]);
    expect(zoomInBuckets(1, 0)).toEqual([0, 0]);
  });
});
