/**
 * Long synchronous work in slices. A generator does the work and yields between slices of it; run straight
 * through (runToEnd) it is one synchronous call, run paced (runPaced) the event loop serves other requests,
 * timers and I/O between slices, so one large OTLP request never holds up the rest of the process for long.
 */
export type Steps<T> = Iterator<void, T, void>;

/**
 * Steps that may also wait for work done off the event loop (a worker thread): a step that yields a promise is
 * resumed once it settles (see awaiting), the event loop served meanwhile. Only runPaced runs them.
 */
export type PacedSteps<T> = Iterator<void | Promise<void>, T, void>;

/** The result of `steps`, run without a pause. */
export function runToEnd<T>(steps: Steps<T>): T {
  for (;;) {
    const s = steps.next();
    if (s.done) return s.value;
  }
}

/**
 * The result of `steps`, with a turn of the event loop between slices: the I/O and timers due then are served
 * first; a step that yielded a promise is resumed once it settles. `between` runs at each pause, before the turn
 * (a throw there ends the work with that error). Once `signal` is aborted no further slice runs: the work ends
 * with its reason at the pause, whether the abort came before the turn or during it.
 */
export async function runPaced<T>(steps: PacedSteps<T>, between?: () => void, signal?: AbortSignal): Promise<T> {
  for (;;) {
    signal?.throwIfAborted();
    const s = steps.next();
    if (s.done) return s.value;
    between?.();
    await (s.value ?? new Promise<void>((resolve) => setImmediate(resolve)));
  }
}

/**
 * What `work` (done off the event loop) gives, as one step of PacedSteps: started when the step is, it throws
 * what the work rejects with.
 */
export function* awaiting<T>(work: () => Promise<T>): Generator<Promise<void>, T, void> {
  let outcome: { value: T } | { err: unknown } | undefined;
  yield work().then((value) => { outcome = { value }; }, (err: unknown) => { outcome = { err }; });
  if (!outcome) throw new Error('awaiting: resumed before its work settled (PacedSteps run by runPaced only)');
  if ('err' in outcome) throw outcome.err;
  return outcome.value;
}

/** Work that has no slices, as Steps: done in its first step. */
export function atOnce<T>(work: () => T): Steps<T> {
  return { next: () => ({ done: true, value: work() }) };
}

/**
 * A pause for long async work done in a loop, by time: called at each item, it gives the event loop a turn
 * (setImmediate) once `sliceMs` have passed since the last turn, and returns undefined (nothing to await) before.
 * `between` runs at each pause, before the turn (a throw there ends the work with that error), as runPaced's.
 */
export type Pause = () => Promise<void> | undefined;

export function pauseEvery(sliceMs: number, between?: () => void): Pause {
  let sliceStart = performance.now();
  return () => {
    if (performance.now() - sliceStart < sliceMs) return undefined;
    between?.();
    return new Promise<void>((resolve) => setImmediate(() => {
      sliceStart = performance.now();
      resolve();
    }));
  };
}
