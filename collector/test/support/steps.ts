/** Running sliced work (paced.ts) in a test, to see where it pauses. */
import type { Steps } from '../../src/paced.ts';

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
