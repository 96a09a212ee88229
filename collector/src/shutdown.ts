/**
 * The steps of a stop that wait on something outside the process, each within a bound of its own: a database that
 * hangs (a frozen host, a network dropping packets without a reset) costs the step's bound, not the whole
 * shutdown.timeout. A step past its bound is logged by name, what it still waits on is cut off (`abandon`, e.g.
 * the database connections closed without waiting for the server), and the stop counts as unclean.
 */
import type { Logger } from './telemetry/logger.ts';

/**
 * Runs one step of a stop. `work` resolving false means the step could not do its job (its owner logged why);
 * `abandon` cuts off what the step still waits on once its bound has passed.
 */
export type ShutdownStep = (name: string, work: () => Promise<unknown>, abandon?: () => void) => Promise<boolean>;

/** A step run as it comes, without a bound (a store on a local file, or a stop not bounded by its caller). */
export const unboundedStep: ShutdownStep = async (_name, work) => (await work()) !== false;

/** Once a step is abandoned, how long its work may take to wind down (closed connections fail at once). */
const ABANDON_GRACE_MS = 1000;

/** Referenced, as the step's own bound: work cut off may hold no handle, and the stop must still go on after it. */
const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class ShutdownSteps {
  /** Steps that timed out, failed or could not do their job, in order: the stop was not clean. */
  readonly unfinished: string[] = [];
  private readonly logger: Logger;
  /** Steps begun and not over, in order; a watch waits only while something it watches is in flight. */
  private readonly inProgress: { name: string; waiting?: () => boolean }[] = [];

  constructor(logger: Logger) {
    this.logger = logger;
  }

  /**
   * The steps begun and not over yet, in the order they began (names only): what a stop past shutdown.timeout
   * still waited on, a watch included while what it watches waits. A step cut off is over; it is in `unfinished`.
   */
  get pending(): string[] {
    return this.inProgress.filter((s) => s.waiting?.() ?? true).map((s) => s.name);
  }

  /** Runs `work` as it comes, named in `pending` until it settles. */
  async track<T>(name: string, work: () => Promise<T>): Promise<T> {
    const end = this.begin({ name });
    try {
      return await work();
    } finally {
      end();
    }
  }

  /** Adds a step to those in progress; returns the function that removes it (safe twice). */
  private begin(step: { name: string; waiting?: () => boolean }): () => void {
    this.inProgress.push(step);
    return () => {
      const i = this.inProgress.indexOf(step);
      if (i >= 0) this.inProgress.splice(i, 1);
    };
  }

  /** unboundedStep, named in `pending` while it runs. */
  readonly unbounded: ShutdownStep = (name, work) => this.track(name, () => unboundedStep(name, work));

  /** Runs `work` for at most timeoutMs; resolves true when it finished in time and did its job. */
  run(name: string, timeoutMs: number, work: () => Promise<unknown>, abandon?: () => void): Promise<boolean> {
    return this.track(name, () => this.bounded(name, timeoutMs, work, abandon));
  }

  private async bounded(name: string, timeoutMs: number, work: () => Promise<unknown>, abandon?: () => void): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), timeoutMs);
    });
    const done = work().then(
      (v) => (v === false ? 'failed' : 'done'),
      (err: unknown) => {
        this.logger.warn('shutdown step failed', { step: name, err });
        return 'failed' as const;
      },
    );
    const outcome = await Promise.race([done, late]);
    clearTimeout(timer);
    if (outcome === 'done') return true;
    if (outcome === 'late') this.timedOut(name, timeoutMs, abandon);
    else this.unfinished.push(name);
    // Cut off, the work winds down at once; whatever it logs on the way out comes before the next step's lines.
    if (outcome === 'late') await Promise.race([done, delay(Math.min(timeoutMs, ABANDON_GRACE_MS))]);
    return false;
  }

  /**
   * Watches work that keeps arriving while something else finishes (requests completing during the drain): once
   * the oldest piece in flight has waited timeoutMs, counted from now at the earliest, the step times out and
   * abandon() runs, once. Named in `pending` while a piece is in flight. Returns the function that ends the watch.
   */
  watch(name: string, timeoutMs: number, oldestStartedAt: () => number | undefined, abandon: () => void): () => void {
    const from = performance.now();
    const end = this.begin({ name, waiting: () => oldestStartedAt() !== undefined });
    const check = (): void => {
      const oldest = oldestStartedAt();
      if (oldest === undefined || performance.now() - Math.max(oldest, from) < timeoutMs) return;
      clearInterval(timer);
      end();
      this.timedOut(name, timeoutMs, abandon);
    };
    const timer = setInterval(check, Math.max(10, Math.min(250, Math.round(timeoutMs / 4))));
    timer.unref();
    return () => {
      clearInterval(timer);
      end();
    };
  }

  private timedOut(name: string, timeoutMs: number, abandon: (() => void) | undefined): void {
    this.logger.warn('shutdown step timed out', { step: name, timeoutMs });
    this.unfinished.push(name);
    try {
      abandon?.();
    } catch (err) {
      this.logger.warn('shutdown step could not be cut off', { step: name, err });
    }
  }
}
