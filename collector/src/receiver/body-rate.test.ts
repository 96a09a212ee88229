import { afterEach, describe, expect, it, vi } from 'vitest';
import { MIN_BODY_BYTES_PER_SECOND, MIN_BODY_RATE_GRACE_MS, tooSlow, watchBodyRate, type TooSlow } from './body-rate.ts';

const KB = 1000;
const MB = 1000 * KB;
const MiB = 1024 * 1024;

/** The second at which an upload of `size` bytes at `bytesPerSecond`, with nothing sent for `stall.forS` seconds after `stall.atS`, is cut; undefined: kept. */
function cutAt(size: number, bytesPerSecond: number, timeoutMs: number, stall: { atS: number; forS: number } = { atS: 0, forS: 0 }): number | undefined {
  let received = 0;
  for (let s = 1; received < size; s++) {
    if (s <= stall.atS || s > stall.atS + stall.forS) received = Math.min(size, received + bytesPerSecond);
    if (received < size && tooSlow(s * 1000, received, size, timeoutMs)) return s;
  }
  return undefined;
}

describe('the minimum body rate', () => {
  it('never cuts a body within the grace period', () => {
    expect(tooSlow(MIN_BODY_RATE_GRACE_MS - 1, 0, 20 * MiB, 30_000)).toBeUndefined();
    expect(tooSlow(MIN_BODY_RATE_GRACE_MS, 0, undefined, 30_000)).toEqual({ bytesPerSecond: 0, neededBytesPerSecond: MIN_BODY_BYTES_PER_SECOND, because: 'every body must average after its first 5 s' });
  });

  it('keeps a 2 MB batch over hotel Wi-Fi at 50 KB/s whole once otlp.requestTimeout gives it the 40 s it takes, a stall of 8 s included', () => {
    expect(cutAt(2 * MB, 50 * KB, 60_000)).toBeUndefined();
    expect(cutAt(2 * MB, 50 * KB, 60_000, { atS: 10, forS: 8 })).toBeUndefined();
    // Under the default 30 s it cannot arrive at all: it is cut once even twice its rate could not bring it in time.
    expect(cutAt(2 * MB, 50 * KB, 30_000)).toBe(21);
    // One of 1 MB takes 20 s and is kept, a 5 s stall after its first 5 s included; one that sends nothing for
    // its first 5 s is cut then.
    expect(cutAt(1 * MB, 50 * KB, 30_000)).toBeUndefined();
    expect(cutAt(1 * MB, 50 * KB, 30_000, { atS: 5, forS: 5 })).toBeUndefined();
    expect(cutAt(1 * MB, 50 * KB, 30_000, { atS: 0, forS: 10 })).toBe(5);
  });

  it('cuts a declared 20 MiB body at 1 byte/s, or under the 8 KiB/s floor whatever its size, at the end of the grace period', () => {
    expect(tooSlow(5000, 105, 20 * MiB, 30_000)?.bytesPerSecond).toBe(21);
    expect(tooSlow(5000, 5 * 8000, undefined, 30_000)?.neededBytesPerSecond).toBe(8192);
    // Holding a declared 20 MiB past the grace period takes some 380 KiB/s, not a byte a second.
    expect(tooSlow(5000, 5 * 370 * 1024, 20 * MiB, 30_000)?.neededBytesPerSecond).toBe(Math.ceil((20 * MiB) / 55));
    expect(tooSlow(5000, 5 * 380 * 1024, 20 * MiB, 30_000)).toBeUndefined();
  });
});

describe('watching a body\'s rate', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** What watchBodyRate reported of a body with `received` bytes of `declared` after `ms`, under pressure or not. */
  function watch(ms: number, received: number, declared: number | undefined, pressed: () => boolean): TooSlow[] {
    return watchRetry(ms, received, declared, () => (pressed() ? 10_000 : 0)).map(([slow]) => slow);
  }

  /** What watchBodyRate reported, with the seconds to wait, of a body while `pressureLeftMs` says the window left. */
  function watchRetry(ms: number, received: number, declared: number | undefined, pressureLeftMs: () => number): [TooSlow, number][] {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
    const cut: [TooSlow, number][] = [];
    const stop = watchBodyRate(30_000, () => received, () => declared, pressureLeftMs, (slow, retryAfterSeconds) => cut.push([slow, retryAfterSeconds]));
    vi.advanceTimersByTime(ms);
    stop();
    return cut;
  }

  it('cuts a stalled body only while the budget is under pressure', () => {
    expect(watch(25_000, 100, undefined, () => false)).toEqual([]);
    expect(watch(25_000, 100, 20 * MiB, () => false)).toEqual([]);
    expect(watch(25_000, 100, undefined, () => true)).toHaveLength(1);
    // Checked as pressure comes: the average since the headers.
    let pressed = false;
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
    const cut: TooSlow[] = [];
    const stop = watchBodyRate(30_000, () => 100, () => undefined, () => (pressed ? 10_000 : 0), (slow) => cut.push(slow));
    vi.advanceTimersByTime(9000);
    expect(cut).toEqual([]);
    pressed = true;
    vi.advanceTimersByTime(1000);
    stop();
    expect(cut).toEqual([{ bytesPerSecond: 10, neededBytesPerSecond: MIN_BODY_BYTES_PER_SECOND, because: 'every body must average after its first 5 s' }]);
  });

  it('asks the client to wait out what is left of the pressure window, rounded up, at least 1 s', () => {
    expect(watchRetry(6000, 100, undefined, () => 9200).map(([, s]) => s)).toEqual([10]);
    expect(watchRetry(6000, 100, undefined, () => 3001).map(([, s]) => s)).toEqual([4]);
    expect(watchRetry(6000, 100, undefined, () => 3000).map(([, s]) => s)).toEqual([3]);
    expect(watchRetry(6000, 100, undefined, () => 40).map(([, s]) => s)).toEqual([1]);
    expect(watchRetry(25_000, 100, undefined, () => 0)).toEqual([]);
  });

  it('stops once the declared size has arrived, whatever follows (inflating it)', () => {
    expect(watch(25_000, 3000, 3000, () => true)).toEqual([]);
    expect(watch(25_000, 2999, 3000, () => true)).toHaveLength(1);
  });
});
