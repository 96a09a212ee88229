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

/** Retry-After as milliseconds: delta-seconds or an HTTP date; undefined when absent or unparsable. */
export function parseRetryAfter(value: string | null, nowMs: number): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const t = Date.parse(v);
  return Number.isFinite(t) ? Math.max(0, t - nowMs) : undefined;
}
