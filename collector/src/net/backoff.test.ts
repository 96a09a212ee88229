import { describe, expect, it } from 'vitest';
import { fullJitterBackoff, parseRetryAfter } from './backoff.ts';

describe('fullJitterBackoff', () => {
  const policy = { baseMs: 500, capMs: 30_000, multiplier: 2 };

  it('stays within [0, min(cap, base * multiplier^(n-1)))', () => {
    expect(fullJitterBackoff(1, policy, () => 0.999)).toBeLessThan(500);
    expect(fullJitterBackoff(4, policy, () => 0.999)).toBeLessThan(4000);
    expect(fullJitterBackoff(4, policy, () => 0.999)).toBeGreaterThan(3900);
    expect(fullJitterBackoff(20, policy, () => 0.999)).toBeLessThan(30_000);
    expect(fullJitterBackoff(20, policy, () => 0.999)).toBeGreaterThan(29_900);
    expect(fullJitterBackoff(3, policy, () => 0)).toBe(0);
  });

  it('grows by the given multiplier and stays finite after very many failures', () => {
    expect(fullJitterBackoff(3, { baseMs: 100, capMs: 10_000, multiplier: 1.5 }, () => 0.5)).toBe(112);
    expect(fullJitterBackoff(1_000_000, policy, () => 0.5)).toBe(15_000);
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds or an HTTP date; nothing for absent or unparsable values', () => {
    expect(parseRetryAfter('3', 0)).toBe(3000);
    expect(parseRetryAfter(' 7 ', 0)).toBe(7000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4000)).toBe(6000);
    expect(parseRetryAfter(new Date(1_000).toUTCString(), 4000)).toBe(0);
    expect(parseRetryAfter('soon', 0)).toBeUndefined();
    expect(parseRetryAfter(null, 0)).toBeUndefined();
  });

  it('reads the three HTTP-date forms (asctime as GMT) and nothing else that Date.parse would take', () => {
    const at = Date.UTC(1994, 10, 6, 8, 49, 37);
    for (const date of ['Sun, 06 Nov 1994 08:49:37 GMT', 'Sunday, 06-Nov-94 08:49:37 GMT', 'Sun Nov  6 08:49:37 1994']) expect(parseRetryAfter(date, at - 5000)).toBe(5000);
    for (const value of ['-30', '-0', '+30', '1.5', '1e3', 'NaN', 'Infinity', 'soon, by 2031', '2031', '2030-01-01T00:00:00Z', 'Sun, 06 Nov 1994 08:49:37 +0100']) {
      expect(parseRetryAfter(value, 0), value).toBe(value === '2031' ? 2_031_000 : undefined);
    }
  });
});
