/**
 * One process-wide bound on the request bytes the receivers hold in memory at once (bodies as read and as
 * inflated, on both ports). A flood of large or compressed requests then costs at most this much; past it the
 * answer is 503 / UNAVAILABLE with Retry-After, which OTLP clients retry, instead of memory growth.
 */
import { OverloadedError } from '../pipeline/errors.ts';

export class InflightBudget {
  private used = 0;
  readonly limitBytes: number;
  constructor(limitBytes: number) {
    this.limitBytes = limitBytes;
  }

  /** Bytes currently held by open requests. */
  get inUseBytes(): number {
    return this.used;
  }

  /** A per-request account; what it took is given back by its release(). */
  open(): InflightAccount {
    return new InflightAccount(this);
  }

  /** @internal used by InflightAccount. */
  tryTake(bytes: number): boolean {
    if (this.used + bytes > this.limitBytes) return false;
    this.used += bytes;
    return true;
  }

  /** @internal used by InflightAccount. */
  give(bytes: number): void {
    this.used -= bytes;
  }
}

export class InflightAccount {
  private held = 0;
  private released = false;
  private readonly budget: InflightBudget;
  constructor(budget: InflightBudget) {
    this.budget = budget;
  }

  /** Charges `bytes` more to this request; throws OverloadedError when the process-wide budget is spent. */
  take(bytes: number): void {
    if (this.released) throw new Error('in-flight account used after release');
    if (!this.budget.tryTake(bytes)) {
      throw new OverloadedError(`hookwatch is holding otlp.maxInflightBytes (${this.budget.limitBytes} bytes) of requests in memory; retry later`);
    }
    this.held += bytes;
  }

  /** Once the real size is known, keeps only `bytes` of what was reserved for the worst case. */
  settle(bytes: number): void {
    if (this.released || bytes >= this.held) return;
    this.budget.give(this.held - bytes);
    this.held = bytes;
  }

  /** Gives everything back; safe to call twice. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.budget.give(this.held);
    this.held = 0;
  }
}
