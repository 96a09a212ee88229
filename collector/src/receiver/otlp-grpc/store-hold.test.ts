/**
 * How the holds of one receiver are woken when the database answers again (reachable()): their tries run
 * STORE_HOLD.wakeAtOnce at a time, not all at once into a database that has just come back. The calls are the
 * part of a gRPC call a hold reads (its deadline, whether it was cancelled); the receiver's tests hold real calls,
 * store-outage.test.ts real exports to a real PostgreSQL.
 */
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OverloadedError } from '../../pipeline/errors.ts';
import { StoreUnavailableError } from '../../store/store.ts';
import { STORE_HOLD, StoreHolds } from './store-hold.ts';

/** A call with a deadline 10 s from now that is never cancelled (its events are grpc-js's: an EventEmitter's). */
function heldCall(): Parameters<StoreHolds['commit']>[0] {
  const deadline = new Date(Date.now() + 10_000);
  return Object.assign(new EventEmitter(), { cancelled: false, getDeadline: () => deadline }) as unknown as Parameters<StoreHolds['commit']>[0];
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A backoff that never ends within a test: every try below is one a hold was woken for. */
const NO_BACKOFF = { firstRetryMs: 60_000, maxRetryMs: 60_000 };

/** A held call whose client cancels it when `cancel` is called, as grpc-js tells a server of a client gone away. */
function cancellableCall(): { call: Parameters<StoreHolds['commit']>[0]; cancel: () => void } {
  const call = heldCall();
  const cancel = (): void => {
    Object.assign(call, { cancelled: true });
    (call as unknown as EventEmitter).emit('cancelled', 'cancelled');
  };
  return { call, cancel };
}

/**
 * Holds an export whose first try finds the store unavailable and whose next try runs until `release`: `tries`
 * counts its tries, `committed` is how its hold ended (its value, or the error it was answered).
 */
function heldTry(holds: StoreHolds): { tries: () => number; release: () => void; cancel: () => void; committed: Promise<unknown> } {
  const { call, cancel } = cancellableCall();
  let tries = 0;
  let release = (): void => {};
  const committed = holds.commit(call, async () => {
    if (tries++ === 0) throw new StoreUnavailableError('store cannot write: connection refused');
    await new Promise<void>((resolve) => (release = resolve));
    return 'committed';
  }).catch((err: unknown) => err);
  return { tries: () => tries, release: () => release(), cancel, committed };
}

describe('StoreHolds woken when the database answers again', () => {
  it('runs the tries it wakes a few at a time, the next woken as one ends, each export committed once', async () => {
    const holds = new StoreHolds();
    const n = 5 * STORE_HOLD.wakeAtOnce;
    const tries = new Array<number>(n).fill(0);
    /** Ends each try after the first that has begun: the store taking it. */
    const running: (() => void)[] = [];
    const committed = tries.map((_, i) => holds.commit(heldCall(), async () => {
      if (tries[i]!++ === 0) throw new StoreUnavailableError('store cannot write: connection refused');
      await new Promise<void>((resolve) => running.push(resolve));
      return i;
    }));
    await turn();
    expect(running).toHaveLength(0);

    // A pool opening several connections says so more than once: still no more at once.
    holds.reachable();
    holds.reachable();
    await turn();
    expect(running).toHaveLength(STORE_HOLD.wakeAtOnce);
    // Not the time since: one more once one ends (well before the first backoff would wake the rest).
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(running).toHaveLength(STORE_HOLD.wakeAtOnce);
    running[0]!();
    await turn();
    expect(running).toHaveLength(STORE_HOLD.wakeAtOnce + 1);

    for (let ended = 1; ended < n; ended++) {
      await expect.poll(() => running.length).toBeGreaterThan(ended);
      running[ended]!();
    }
    expect(await Promise.all(committed)).toEqual(tries.map((_, i) => i));
    expect(tries).toEqual(new Array<number>(n).fill(2));
    expect(holds.stats).toEqual({ committed: n, unavailable: 0, cancelled: 0, refused: 0 });
  });

  describe('while otlp.maxPendingRequests batches already wait for the store', () => {
    // The backoff's timers stand still unless the test moves them: every try below is one a hold was woken for.
    afterEach(() => {
      vi.useRealTimers();
    });

    it('wakes the next hold as a try ends, not all of them in a burst while the one place is taken', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
      const holds = new StoreHolds(1);
      const n = 4;
      const tries = new Array<number>(n + 1).fill(0);
      /** Ends the one try waiting for the store (otlp.maxPendingRequests 1); undefined while none does. */
      let release: (() => void) | undefined;
      const commit = (i: number) => async (): Promise<number> => {
        if (tries[i]!++ === 0) throw new StoreUnavailableError('store cannot write: connection refused');
        if (release) throw new OverloadedError('1 batches are waiting for the store; retry later', 1);
        await new Promise<void>((resolve) => (release = () => {
          release = undefined;
          resolve();
        }));
        return i;
      };
      // The first hold's try at the end of its backoff takes the one place.
      const first = holds.commit(heldCall(), commit(0));
      await vi.advanceTimersByTimeAsync(STORE_HOLD.firstRetryMs);
      expect(release).toBeDefined();
      const rest = Array.from({ length: n }, (_, k) => holds.commit(heldCall(), commit(k + 1)));
      await turn();
      expect(tries).toEqual([2, 1, 1, 1, 1]);

      // The database answers again: one woken hold finds the place taken; the others are not tried.
      holds.reachable();
      await turn();
      expect(tries).toEqual([2, 2, 1, 1, 1]);
      // The try in the store ends: the next hold tries at once, not at the end of its backoff.
      for (let k = 2; k <= n; k++) {
        release!();
        await turn();
        expect(tries[k], `hold ${k}`).toBe(2);
        expect(release).toBeDefined();
      }
      // The hold that found the place taken tries again last.
      release!();
      await turn();
      expect(tries).toEqual([2, 3, 2, 2, 2]);
      release!();
      expect(await Promise.all([first, ...rest])).toEqual([0, 1, 2, 3, 4]);
      expect(holds.stats).toEqual({ committed: n + 1, unavailable: 0, cancelled: 0, refused: 0 });
    });

    it('wakes one hold in line, not all of them, as an export that was never held leaves the place', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
      const holds = new StoreHolds(1);
      const n = 3;
      const tries = new Array<number>(n).fill(0);
      /** Ends the try in the one place; undefined while none holds it. */
      let release: (() => void) | undefined;
      const take = async (): Promise<void> => {
        if (release) throw new OverloadedError('1 batches are waiting for the store; retry later', 1);
        await new Promise<void>((resolve) => (release = () => {
          release = undefined;
          resolve();
        }));
      };
      // An export that is never held takes the place; the others find it taken and wait in line.
      const unheld = holds.commit(heldCall(), take);
      const held = Array.from({ length: n }, (_, i) => holds.commit(heldCall(), async () => {
        tries[i]!++;
        await take();
        return i;
      }));
      await turn();
      expect(tries).toEqual([1, 1, 1]);
      // It ends: the first in line tries at once and takes the place, the others still wait.
      release!();
      await unheld;
      await turn();
      expect(tries).toEqual([2, 1, 1]);
      for (let k = 1; k < n; k++) {
        release!();
        await turn();
        expect(tries[k], `hold ${k}`).toBe(2);
      }
      release!();
      expect(await Promise.all(held)).toEqual([0, 1, 2]);
      expect(holds.stats).toEqual({ committed: n, unavailable: 0, cancelled: 0, refused: 0 });
    });
  });
});

describe('StoreHolds whose client cancels while a try runs', () => {
  it('keeps the place of a woken try whose client cancelled until that try ends: the next hold in line waits for it', async () => {
    const holds = new StoreHolds(1, NO_BACKOFF);
    const a = heldTry(holds);
    const b = heldTry(holds);
    await turn();
    holds.reachable();
    await turn();
    expect([a.tries(), b.tries()]).toEqual([2, 1]);

    // The client of the hold trying goes away: its hold ends, its try still runs in the place it took.
    a.cancel();
    expect(await a.committed).toBeInstanceOf(StoreUnavailableError);
    holds.placeFreed();
    await turn();
    expect(b.tries()).toBe(1);
    // That try ends: the next in line tries now.
    a.release();
    await turn();
    expect(b.tries()).toBe(2);
    b.release();
    expect(await b.committed).toBe('committed');
    expect(holds.stats).toEqual({ committed: 1, unavailable: 0, cancelled: 1, refused: 0 });
  });

  it('counts as cancelled, not unavailable, a hold a stop ended whose client went away before the try running then ended', async () => {
    const holds = new StoreHolds(1, NO_BACKOFF);
    const a = heldTry(holds);
    await turn();
    holds.reachable();
    await turn();
    expect(a.tries()).toBe(2);
    // The stop waits for the try running; the client, answered nothing yet, goes away meanwhile.
    holds.stop();
    await turn();
    expect(await Promise.race([a.committed, turn().then(() => 'still held')])).toBe('still held');
    a.cancel();
    expect(await a.committed).toBeInstanceOf(StoreUnavailableError);
    expect(holds.stats).toEqual({ committed: 0, unavailable: 0, cancelled: 1, refused: 0 });
    a.release();
  });
});

describe('StoreHolds stopped', () => {
  it('answers a hold at once when hookwatch stops in the turn its try fails, not at the end of the next backoff', async () => {
    const holds = new StoreHolds();
    const unavailable = new StoreUnavailableError('store cannot write: connection refused');
    let tries = 0;
    const held = holds.commit(heldCall(), () => {
      if (tries++ === 0) return Promise.reject(unavailable);
      // The stop comes as the hold reads this try's failure (a store closed by the shutdown that stops hookwatch).
      const failed = Promise.reject(unavailable);
      return { then: (ok: () => void, fail: (err: unknown) => void) => failed.then(ok, (err: unknown) => {
        fail(err);
        holds.stop();
      }) } as unknown as Promise<never>;
    }).then(() => 'committed', (err: unknown) => err);
    await vi.waitFor(() => expect(tries).toBe(2));
    const answered = await Promise.race([held, new Promise((resolve) => setTimeout(() => resolve('still held'), STORE_HOLD.firstRetryMs / 5))]);
    expect(answered).toBe(unavailable);
    expect(holds.stats).toEqual({ committed: 0, unavailable: 1, cancelled: 0, refused: 0 });
  });
});
