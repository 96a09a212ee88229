/** Running sliced work (paced.ts) in a test, to see where it pauses and how long it holds the event loop. */
import { performance } from 'node:perf_hooks';
import type { Steps } from '../../src/paced.ts';
import { longestStall } from '../../../bench/lib/stall.ts';

/** What sliced work returned, and how much of it (`done()`) each slice did: one slice more than it paused. */
export interface Sliced<T> {
  value: T;
  pauses: number;
  slices: number[];
}

/** Runs `steps` to the end without waiting between them, reading `done()` (work done so far) at each pause. */
export function runSliced<T>(steps: Steps<T>, done: () => number): Sliced<T> {
  const marks = [0];
  for (;;) {
    const s = steps.next();
    marks.push(done());
    if (s.done) return { value: s.value, pauses: marks.length - 2, slices: marks.slice(1).map((m, i) => m - (marks[i] as number)) };
  }
}

/** The fastest of `runs` runs of `work`, in ms (a first run warms up). */
export function fastest(work: () => void, runs = 3): number {
  work();
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    work();
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

/**
 * The least CPU time of `work` on this thread over `runs` runs, in ms (a first run warms up): what the work costs,
 * whatever else the machine runs meanwhile. A run calls it until 50 ms are used (the thread's CPU clock counts in
 * steps of about a millisecond) and takes the mean.
 */
export function leastCpu(work: () => void, runs = 3): number {
  work();
  let least = Infinity;
  for (let i = 0; i < runs; i++) {
    const before = process.threadCpuUsage();
    const usedMs = (): number => {
      const used = process.threadCpuUsage(before);
      return (used.user + used.system) / 1000;
    };
    let calls = 0;
    while (calls === 0 || usedMs() < 50) {
      work();
      calls++;
    }
    least = Math.min(least, usedMs() / calls);
  }
  return least;
}

export { longestStall };

/**
 * The least longestStall of `runs` runs of `work` (a first run warms up): on a loaded machine a run may be held
 * up by other processes as well; the stall the work itself causes is in every run.
 */
export async function leastStall(work: () => Promise<unknown>, runs = 3): Promise<number> {
  await work();
  let least = Infinity;
  for (let i = 0; i < runs; i++) least = Math.min(least, await longestStall(work));
  return least;
}
