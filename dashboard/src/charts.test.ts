import { describe, expect, it } from 'vitest';
import { bandLabelX } from './charts.ts';

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
