/**
 * The minimum rate at which an OTLP request's body (over gRPC: its message) must arrive while it is read, on both
 * ports. A request holds its reservation of otlp.maxInflightBytes (its declared size, up to otlp.maxRequestBytes;
 * a gRPC call twice that) from its headers until its body is whole: without a bound on its rate, a few connections
 * that declare large bodies and then send a byte now and then held the whole budget until otlp.requestTimeout, and
 * again on the next connections, while every other client was answered 503 / UNAVAILABLE.
 *
 * After a grace period (MIN_BODY_RATE_GRACE_MS, Kestrel's MinRequestBodyDataRate has 5 s too), checked every
 * second, the body's average rate since its headers must be at least:
 *
 * - MIN_BODY_BYTES_PER_SECOND (8 KiB/s) whatever its size, a body of unknown length (chunked) included. A batch of
 *   Claude Code's (a few KB, far below 1 MiB) arrives within the grace period on any link; a 2 MB batch over hotel
 *   Wi-Fi at 50 KB/s is six times over the floor.
 * - for a body whose size is declared (Content-Length; over gRPC the message's length prefix), enough that what is
 *   left would arrive before otlp.requestTimeout at twice that average: a body that could not even then is cut off
 *   at the timeout anyway, only later, holding its reservation meanwhile. Twice, so that a
 *   link that stalled for some seconds and then goes on at its speed is kept. This is what makes holding the budget
 *   cost bandwidth: 20 MiB declared must come at some 380 KiB/s (20 MiB in 55 s), not at a byte a second.
 *
 * The average since the headers, not a sliding window, as Kestrel measures it: a link that pauses (Wi-Fi
 * re-associating) is not cut off for the pause, only when the whole upload is too slow.
 *
 * It is enforced only while the budget is under pressure: a request was refused for lack of it within the last
 * BUDGET_PRESSURE_MS (inflight.ts). A slow body on a server with budget to spare hurts no one, and the OpenTelemetry
 * JS exporter sends its body chunked (its size unknown, so only the floor applies): a small batch whose link pauses
 * for 5 s would be cut and lost, where it has otlp.requestTimeout to arrive. A refusal, not a share of the budget
 * reserved, is the sign: what one request reserves depends on the settings (a chunked body all of
 * otlp.maxRequestBytes, a gRPC call twice it), so a lone slow upload can hold half of a small budget and hurt no one,
 * while one holding a tenth can keep a gRPC call's reservation out. The window outlasts the grace period, so every
 * request holding the budget when another was refused is checked past its grace before it ends.
 *
 * The answer says to try again (503 + Retry-After / UNAVAILABLE): the batch itself is fine, and OTLP clients resend
 * a batch answered so, where they drop one answered 408.
 */

/** How long after its headers a body is never too slow. */
export const MIN_BODY_RATE_GRACE_MS = 5000;

/** The lowest average rate of any body still arriving after the grace period. */
export const MIN_BODY_BYTES_PER_SECOND = 8 * 1024;

/** How often an arriving body's rate is checked. */
export const BODY_RATE_CHECK_MS = 1000;

/** How much faster than its average a body with a declared size may go on, for the rest of it to arrive in time. */
const CATCH_UP_FACTOR = 2;

/** A body arriving under the minimum rate: its rate and the one it needed, in bytes per second, and why that one. */
export interface TooSlow {
  bytesPerSecond: number;
  neededBytesPerSecond: number;
  /** Words after "under the N bytes/s" saying where N comes from. */
  because: string;
}

/**
 * Whether a body `elapsedMs` after its headers, `received` bytes in, of `declared` bytes (undefined: unknown) is
 * under the minimum rate, for a request timeout of `timeoutMs`; undefined while it is not.
 */
export function tooSlow(elapsedMs: number, received: number, declared: number | undefined, timeoutMs: number): TooSlow | undefined {
  if (elapsedMs < MIN_BODY_RATE_GRACE_MS) return undefined;
  const seconds = elapsedMs / 1000;
  const rate = received / seconds;
  if (rate < MIN_BODY_BYTES_PER_SECOND) {
    return { bytesPerSecond: Math.floor(rate), neededBytesPerSecond: MIN_BODY_BYTES_PER_SECOND, because: `every body must average after its first ${MIN_BODY_RATE_GRACE_MS / 1000} s` };
  }
  if (declared === undefined) return undefined;
  const left = Math.max(0, timeoutMs / 1000 - seconds);
  // The average at which the rest would arrive in time at CATCH_UP_FACTOR times it: received + rate·factor·left = declared.
  const needed = declared / (seconds + CATCH_UP_FACTOR * left);
  if (rate >= needed) return undefined;
  return {
    bytesPerSecond: Math.floor(rate),
    neededBytesPerSecond: Math.ceil(needed),
    because: `its ${declared} bytes need to arrive within otlp.requestTimeout (${timeoutMs / 1000} s) even at twice the rate so far`,
  };
}

/** Says, in a refusal, what arrived too slowly (`what`: "request body", "request message"). */
export function tooSlowMessage(what: string, slow: TooSlow): string {
  return `the ${what} arrived at ${slow.bytesPerSecond} bytes/s, under the ${slow.neededBytesPerSecond} bytes/s ${slow.because}, while other requests were refused otlp.maxInflightBytes; retry, faster or in smaller batches`;
}

/**
 * How long, in seconds, a client answered for a body under the minimum rate is asked to wait (Retry-After,
 * RetryInfo), `pressureLeftMs` before the budget stops being under pressure: the rest of that window, rounded up, at
 * least 1 s. A retry sooner would be checked again on the same link, cut again, and reserve the budget again
 * meanwhile; once the window is over it has otlp.requestTimeout.
 */
export function tooSlowRetryAfterSeconds(pressureLeftMs: number): number {
  return Math.max(1, Math.ceil(pressureLeftMs / 1000));
}

/**
 * Checks, every BODY_RATE_CHECK_MS from its start, the rate of a body whose bytes so far `received` reads and whose
 * size `declared` reads (undefined while unknown), while `pressureLeftMs` says the in-flight budget is under pressure
 * (the ms left of that window, 0 when it is not); calls `onTooSlow` once when it falls under the minimum then, with
 * the seconds its client is to wait before it retries (tooSlowRetryAfterSeconds). Stops by itself once the declared size has arrived (what
 * is left, inflating it, is not the client's doing). Returns the function that stops the checks, to call once the
 * body has arrived or the request is over.
 */
export function watchBodyRate(timeoutMs: number, received: () => number, declared: () => number | undefined, pressureLeftMs: () => number, onTooSlow: (slow: TooSlow, retryAfterSeconds: number) => void): () => void {
  const started = performance.now();
  const timer = setInterval(() => {
    const size = declared();
    const bytes = received();
    if (size !== undefined && bytes >= size) {
      clearInterval(timer);
      return;
    }
    const pressureLeft = pressureLeftMs();
    if (pressureLeft <= 0) return;
    const slow = tooSlow(performance.now() - started, bytes, size, timeoutMs);
    if (!slow) return;
    clearInterval(timer);
    onTooSlow(slow, tooSlowRetryAfterSeconds(pressureLeft));
  }, BODY_RATE_CHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** A request refused for arriving under the minimum rate: 503 + Retry-After / UNAVAILABLE, counted as request_too_slow. */
export class RequestTooSlowError extends Error {
  override name = 'RequestTooSlowError';
  /** Seconds the client is asked to wait (Retry-After): tooSlowRetryAfterSeconds. */
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number) {
    super(message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
