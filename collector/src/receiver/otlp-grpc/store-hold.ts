/**
 * Holding an OTLP/gRPC export the store cannot take now (StoreUnavailableError: PostgreSQL restarting, the network
 * to it down for a moment), or hookwatch cannot take now (OverloadedError: as many batches waiting for the store as
 * otlp.maxPendingRequests allows, the forwarding queue full), and trying its commit again, rather than answering
 * UNAVAILABLE at once. OpenTelemetry's JavaScript gRPC exporter (Claude Code's, OTEL_EXPORTER_OTLP_PROTOCOL=grpc)
 * sends nothing again after an error: every batch answered UNAVAILABLE during a restart of a few seconds would be
 * lost. Its OTLP/HTTP exporter sends a batch answered 503 again after the Retry-After, within the same export
 * timeout a hold would spend, so OTLP/HTTP answers at once.
 *
 * A hold tries again after STORE_HOLD.firstRetryMs, doubling up to maxRetryMs, and sooner when the store finds the
 * database answering again (reachable()). A try that finds hookwatch overloaded, the first or a later one, is tried
 * again the same way, and sooner once another try ends, a held export's or not, or an OTLP/HTTP request's batch
 * leaves its place, or requests leave the forwarding queue (placeFreed()): the place or the room is free then. An export
 * refused because otlp.maxInflightBytes is spent (InflightFullError) is answered at once: held, it would keep its
 * bytes in that budget. A hold ends marginMs before the client's deadline (grpc-timeout: the JavaScript exporter's
 * is its 10 s export timeout) and at most capMs after it began (noDeadlineMs for a client that sets none), answered
 * as its last try failed (UNAVAILABLE either way): never acknowledged before the store took it. A try running then
 * is waited for, and the hold answered as it ends (OK once it commits): answered UNAVAILABLE before, a client that
 * sends the batch again (grpc-go's, the OpenTelemetry Collector's) would have it forwarded twice, the store finding
 * the events stored (their idempotency keys) but the forwarding queue taking the request again. What a try that failed
 * halfway (a request committed in parts) had committed is found stored likewise. A client that cancels, or whose
 * deadline passes, ends its hold at once, a try still running left to end by itself (the place it took in the
 * store, and among the woken tries, taken until then); a stop ends every hold at
 * once, a try running then waited for as above. The held call keeps
 * what it holds of otlp.maxInflightBytes (its message, its decoded request) until it is answered and no try is
 * running on them (index.ts).
 */
import type { Deadline, ServerUnaryCall } from '@grpc/grpc-js';
import { mapError } from '../../pipeline/errors.ts';
import { InflightFullError } from '../inflight.ts';
import type { HoldOutcome } from '../options.ts';

export const STORE_HOLD = { firstRetryMs: 250, maxRetryMs: 2000, marginMs: 1000, capMs: 8000, noDeadlineMs: 5000, wakeAtOnce: 8 } as const;

/** How long a hold waits before its tries, when nothing wakes it sooner: STORE_HOLD's, or a test's own. */
export interface HoldBackoff {
  firstRetryMs: number;
  maxRetryMs: number;
}

/**
 * How many tries of held exports woken by reachable() run at once, for a pipeline that lets `maxPending` batches
 * wait for the store: half of them (at least one), leaving room for the batches that keep arriving, and at most
 * STORE_HOLD.wakeAtOnce.
 */
export function wakeAtOnce(maxPending: number | undefined): number {
  return maxPending === undefined ? STORE_HOLD.wakeAtOnce : Math.max(1, Math.min(STORE_HOLD.wakeAtOnce, Math.floor(maxPending / 2)));
}

/** When a hold that begins at `nowMs` ends, for a call with this deadline (Infinity: none). */
function holdUntil(deadline: Deadline, nowMs: number): number {
  const deadlineMs = deadline instanceof Date ? deadline.getTime() : deadline;
  if (!Number.isFinite(deadlineMs)) return nowMs + STORE_HOLD.noDeadlineMs;
  return Math.min(deadlineMs - STORE_HOLD.marginMs, nowMs + STORE_HOLD.capMs);
}

/** What a hold reads of its call. */
type HeldCall = Pick<ServerUnaryCall<Buffer, Buffer>, 'cancelled' | 'getDeadline' | 'once' | 'off'>;

type Attempt<T> = { ok: true; value: T } | { ok: false; err: unknown };

/** Ends a hold's wait for its next try; `woken`: in line (toWake), not by its backoff or its end. */
type Wake = (woken: boolean) => void;

function overloaded(err: unknown): boolean {
  return mapError(err).reason === 'overloaded' && !(err instanceof InflightFullError);
}

/**
 * Whether a try of an export failed for a while only, to be held and tried again: the store or the forwarding
 * queue's file unavailable, or hookwatch overloaded (otlp.maxPendingRequests batches waiting for the store: a slow
 * store, or held exports trying again once it answers; the forwarding queue full), not otlp.maxInflightBytes spent.
 */
function transient(err: unknown): boolean {
  const reason = mapError(err).reason;
  return reason === 'store_unavailable' || reason === 'forward_queue_unavailable' || overloaded(err);
}

/** Runs `commit`: how it settled (a synchronous throw as a failure). */
function attempted<T>(commit: () => Promise<T>): Promise<Attempt<T>> {
  return new Promise<T>((resolve) => resolve(commit())).then((value) => ({ ok: true, value }), (err: unknown) => ({ ok: false, err }));
}

/** How `attempt` settled, or undefined once `gone` fires first (the attempt goes on, its outcome unread). */
function settle<T>(attempt: Promise<Attempt<T>>, gone: AbortSignal): Promise<Attempt<T> | undefined> {
  return new Promise((resolve) => {
    const gaveUp = (): void => resolve(undefined);
    gone.addEventListener('abort', gaveUp, { once: true });
    void attempt.then(resolve).finally(() => gone.removeEventListener('abort', gaveUp));
  });
}

/** The holds of one receiver, and how they ended (hookwatch_otlp_requests_held_total). */
export class StoreHolds {
  readonly stats: Record<HoldOutcome, number> = { committed: 0, unavailable: 0, cancelled: 0, refused: 0 };
  private readonly stopping = new AbortController();
  /** Wakes each hold waiting for its next try (woken: in line, see toWake), in the order they began to wait. */
  private readonly waiting = new Set<Wake>();
  /**
   * The waiting holds to wake as tries end, in line: those reachable() found waiting, and those whose last try
   * found hookwatch overloaded, woken as tries end (a hold's, or an export's that was never held), as an
   * OTLP/HTTP request's batch leaves its place and as requests leave the forwarding queue (placeFreed()). How many of
   * them woken are trying now: a try whose client went away counts until it ends, its place taken until then.
   */
  private readonly toWake = new Set<Wake>();
  private wokenTrying = 0;
  private readonly atOnce: number;
  private readonly backoff: HoldBackoff;

  /** `atOnce`: how many tries of the holds reachable() wakes run at once (wakeAtOnce()). */
  constructor(atOnce: number = STORE_HOLD.wakeAtOnce, backoff: HoldBackoff = STORE_HOLD) {
    this.atOnce = atOnce;
    this.backoff = backoff;
  }

  /**
   * The database answers again: held exports try now, not at the end of their backoff. Their tries run a few at
   * a time (atOnce), the longest waiting first, each next one woken as one ends: all at once, they would be as
   * many batches waiting at once for a database that has just come back, past otlp.maxPendingRequests, and the
   * tries that came next would find hookwatch overloaded. A woken try that finds it overloaded all the same (the
   * place taken by a try at the end of its backoff) wakes no other, which would find the place taken too: that
   * hold waits in line again, and the next is woken once a try ends.
   * A hold not woken yet still tries at the end of its backoff. Another call adds the holds waiting by then.
   */
  reachable(): void {
    for (const wake of this.waiting) this.toWake.add(wake);
    this.wakeNext();
  }

  /**
   * A place among the batches waiting for the store has come free (an OTLP/HTTP request's, which no try here ends),
   * or room in the forwarding queue (requests delivered, dead letters, expired, a large body's write given up): the
   * next hold in line tries now, still no more woken trying at once than atOnce.
   */
  placeFreed(): void {
    this.wakeNext();
  }

  /** Ends every hold (UNAVAILABLE, or as its try running now ends) and holds nothing from now on. */
  stop(): void {
    this.toWake.clear();
    this.stopping.abort();
  }

  /** Wakes the holds in line, while fewer than atOnce woken are trying. */
  private wakeNext(): void {
    for (const wake of this.toWake) {
      if (this.wokenTrying >= this.atOnce) return;
      this.toWake.delete(wake);
      // Woken meanwhile by its backoff, or ended.
      if (!this.waiting.has(wake)) continue;
      this.wokenTrying++;
      wake(true);
    }
  }

  /**
   * Runs `commit`; while it fails because the store is unavailable or hookwatch overloaded, holds `call` and runs
   * it again. A first try that ends otherwise than overloaded gives up its place as a hold's try does: the next
   * hold in line is woken, not left to its backoff.
   */
  async commit<T>(call: HeldCall, commit: () => Promise<T>): Promise<T> {
    try {
      const value = await commit();
      this.wakeNext();
      return value;
    } catch (err) {
      if (!overloaded(err)) this.wakeNext();
      if (!transient(err)) throw err;
      return this.hold(call, commit, err);
    }
  }

  private async hold<T>(call: HeldCall, commit: () => Promise<T>, first: unknown): Promise<T> {
    const now = Date.now();
    const until = holdUntil(call.getDeadline(), now);
    if (until <= now || call.cancelled || this.stopping.signal.aborted) throw first;
    /** No try begins once this fires; the hold answers as the try running then ends. */
    const ended = new AbortController();
    /** The client went away: a try still running is not waited for. */
    const gone = new AbortController();
    const end = (outcome: HoldOutcome) => (): void => {
      if (!ended.signal.aborted) ended.abort(outcome);
    };
    const timeUp = setTimeout(end('unavailable'), until - now);
    const cancelled = (): void => {
      end('cancelled')();
      gone.abort();
    };
    const stopped = end('unavailable');
    call.once('cancelled', cancelled);
    this.stopping.signal.addEventListener('abort', stopped, { once: true });
    let err = first;
    /** Whether the last try found hookwatch overloaded: the hold then waits in line for a place as well. */
    let inLine = overloaded(first);
    try {
      for (let delayMs = this.backoff.firstRetryMs; ; delayMs = Math.min(2 * delayMs, this.backoff.maxRetryMs)) {
        const woken = await this.pause(delayMs, ended.signal, inLine);
        const running = ended.signal.aborted ? undefined : attempted(commit);
        // As the try ends, not as the hold stops waiting for it (its client gone): until then it holds its place.
        void (running ?? Promise.resolve(undefined)).then((ran) => {
          if (woken) this.wokenTrying--;
          // A try that ended otherwise than overloaded leaves its place in the store to the next hold in line;
          // one that found none leaves none, and woken, that next would only find it taken too.
          if (!(ran?.ok === false && overloaded(ran.err))) this.wakeNext();
        });
        const attempt = running && (await settle(running, gone.signal));
        inLine = attempt?.ok === false && overloaded(attempt.err);
        if (!attempt) {
          // The client went away, answered nothing, whatever ended the hold before.
          this.stats[gone.signal.aborted ? 'cancelled' : (ended.signal.reason as HoldOutcome)]++;
          throw err;
        }
        if (attempt.ok) {
          this.stats.committed++;
          return attempt.value;
        }
        if (!transient(attempt.err)) {
          this.stats.refused++;
          throw attempt.err;
        }
        err = attempt.err;
      }
    } finally {
      clearTimeout(timeUp);
      call.off('cancelled', cancelled);
      this.stopping.signal.removeEventListener('abort', stopped);
    }
  }

  /**
   * Resolves after `ms` or when `ended` fires (false), or when woken in line (true): after reachable(), or with
   * `inLine` (the last try found hookwatch overloaded) as tries end.
   */
  private pause(ms: number, ended: AbortSignal, inLine: boolean): Promise<boolean> {
    return new Promise((resolve) => {
      // Ended as the last try's failure was read (a stop in the same turn): its abort fired already.
      if (ended.aborted) {
        resolve(false);
        return;
      }
      const done: Wake = (woken) => {
        clearTimeout(timer);
        this.waiting.delete(done);
        this.toWake.delete(done);
        ended.removeEventListener('abort', notWoken);
        resolve(woken);
      };
      const notWoken = (): void => done(false);
      const timer = setTimeout(notWoken, ms);
      this.waiting.add(done);
      if (inLine) this.toWake.add(done);
      ended.addEventListener('abort', notWoken, { once: true });
    });
  }
}
