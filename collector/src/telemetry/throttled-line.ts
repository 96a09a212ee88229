/**
 * A log line about something that may happen once per request: the first is written at once, then at most one
 * line per interval, with how many happened since the last; what the interval held back is written when it ends,
 * or by flush() (the output stopping).
 */
export class ThrottledLine {
  private readonly intervalMs: number;
  private readonly now: () => number;
  private readonly write: (count: number) => void;
  private unlogged = 0;
  private lastMs = -Infinity;
  private timer: NodeJS.Timeout | undefined;

  constructor(intervalMs: number, now: () => number, write: (count: number) => void) {
    this.intervalMs = intervalMs;
    this.now = now;
    this.write = write;
  }

  note(count = 1): void {
    this.unlogged += count;
    const wait = this.lastMs + this.intervalMs - this.now();
    if (wait > 0) {
      this.timer ??= setTimeout(() => this.flush(), wait).unref();
      return;
    }
    this.flush();
  }

  /** Writes what is held back now, if anything. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.unlogged === 0) return;
    this.lastMs = this.now();
    const count = this.unlogged;
    this.unlogged = 0;
    this.write(count);
  }
}
