/**
 * The one retry schedule of every outgoing sender (notifications, forwarding): exponential backoff with full
 * jitter, `sleep = random(0, min(cap, base * multiplier^retry))`, and the server's Retry-After as a floor.
 * Full jitter spreads many senders that failed together (one receiver down) over the whole window instead of
 * letting them come back in step.
 */

export interface BackoffPolicy {
  /** The ceiling of the first wait. */
  baseMs: number;
  /** The largest ceiling, however many attempts failed. */
  capMs: number;
  /** Growth of the ceiling per failed attempt. */
  multiplier: number;
}

/** The wait after failed attempt number `failures` (1-based): random(0, min(cap, base * multiplier^(failures-1))). */
export function fullJitterBackoff(failures: number, policy: BackoffPolicy, random: () => number): number {
  // Bounded exponent: past ~60 doublings the ceiling is the cap anyway, and Infinity * 0 would be NaN.
  const ceiling = Math.min(policy.capMs, policy.baseMs * policy.multiplier ** Math.min(Math.max(0, failures - 1), 60));
  return Math.max(0, Math.floor(random() * ceiling));
}

// Read as the dashboard reads a 503's (shared/src/retry-after.ts).
export { parseRetryAfter } from '../../../shared/src/retry-after.ts';
