/**
 * Long synchronous work in slices. A generator does the work and yields between slices of it; run straight
 * through (runToEnd) it is one synchronous call, run paced (runPaced) the event loop serves other requests,
 * timers and I/O between slices, so one large OTLP request never holds up the rest of the process for long.
 */
export type Steps<T> = Iterator<void, T, void>;

/** The result of `steps`, run without a pause. */
export function runToEnd<T>(steps: Steps<T>): T {
  for (;;) {
    const s = steps.next();
    if (s.done) return s.value;
  }
}

/**
 * The result of `steps`, with a turn of the event loop between slices: the I/O and timers due then are served
 * first. `between` runs at each pause, before the turn (a throw there ends the work with that error).
 */
export async function runPaced<T>(steps: Steps<T>, between?: () => void): Promise<T> {
  for (;;) {
    const s = steps.next();
    if (s.done) return s.value;
    between?.();
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** Work that has no slices, as Steps: done in its first step. */
export function atOnce<T>(work: () => T): Steps<T> {
  return { next: () => ({ done: true, value: work() }) };
}
