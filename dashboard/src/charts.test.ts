import { describe, expect, it } from 'vitest';
import { bandLabelX, zoomInBuckets } from './charts.ts';

describe('alert band labels', () => {
  const area = { left: 40, right: 640 };
  it('start at the band, and end inside the plot when the band begins near its right edge', () => {
    expect(bandLabelX(100, 90, area)).toBe(103);
    // A band in the last pixels: the label moves left so all of it shows.
    expect(bandLabelX(620, 90, area)).toBe(640 - 3 - 90);
    // Wider than the plot: from its left edge.
    expect(bandLabelX(600, 900, area)).toBe(43);
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
