/**
 * Delivers one destination's queue in order of arrival, one attempt at a time, until stopped (consecutive
 * protobuf requests of one signal travel merged, see DurableQueue.batch). A retryable
 * failure keeps the request at the head and waits (exponential backoff with full jitter, at least Retry-After).
 * A destination that is away (unreachable, 502/503/504, 429) is waited for without a deadline, so an outage of
 * hours loses nothing; a refusal that may be permanent (401, 403, 404, 500...) is retried for maxElapsedMs per
 * request, then the request becomes a dead letter. A permanent refusal (400, 413...) moves it to the dead
 * letters at once (counted, visible in the API, replayable) so one bad request cannot block the rest.
 */
import type { ForwardingDestination } from '../../../shared/src/api.ts';
import { fullJitterBackoff } from '../net/backoff.ts';
import { isPartialSuccessWarning, type PartialSuccess } from '../otlp/encode.ts';
import type { Logger } from '../telemetry/logger.ts';
import { ThrottledLine } from '../telemetry/throttled-line.ts';
import type { ExportResult, Exporter } from './exporter.ts';
import type { DurableQueue } from './queue.ts';
import { SizeCeiling } from './size-ceiling.ts';

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  /** Growth of the wait's ceiling per failure; each wait is random(0, ceiling) (full jitter). */
  multiplier: number;
  /** Longest Retry-After honoured, so a bogus header cannot stall delivery for days. */
  maxRetryAfterMs: number;
}

/** How many queued protobuf requests of one signal may travel as one downstream request. */
export interface BatchOptions {
  maxRequests: number;
  /** Below the 4 MiB default receive limit of gRPC servers (the OpenTelemetry Collector's included). */
  maxBytes: number;
}

/** Merging keeps up on a high-latency link, where one request per round trip would fall behind Claude Code's rate. */
export const DEFAULT_BATCH: BatchOptions = { maxRequests: 100, maxBytes: 2 * 1024 * 1024 };

/**
 * The OpenTelemetry Collector's exporterhelper intervals (initial 5 s, max 30 s, x1.5); the wait is drawn with
 * full jitter like every other retry here (net/backoff.ts), not the Collector's ±50 %.
 */
export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 5_000, maxMs: 30_000, multiplier: 1.5, maxRetryAfterMs: 300_000 };

/**
 * How long stop() lets an attempt in flight finish before it is aborted (the request stays queued and is sent
 * again at the next start), so a destination that does not answer cannot hold shutdown for forward.timeout.
 */
export const STOP_GRACE_MS = 2_000;
/** How often a destination's partial successes are logged at most (each is counted). */
const PARTIAL_LOG_INTERVAL_MS = 60_000;
/** How often failed TLS handshakes with the destination are logged at most (each is counted). */
const TLS_LOG_INTERVAL_MS = 60_000;
/** How often dead letters evicted over forward.deadLetters.maxBytes are logged at most (each is counted). */
const EVICTION_LOG_INTERVAL_MS = 60_000;
/** How often requests refused for good (moved to the dead letters at once) are logged at most (each is counted). */
const REFUSED_LOG_INTERVAL_MS = 60_000;
/** One day: an expired key or a broken route is usually fixed by the next working day (see docs/forwarding.md). */
export const DEFAULT_MAX_ELAPSED_MS = 86_400_000;

export interface ForwarderOptions {
  queue: DurableQueue;
  /** How long a request is retried after refusals that may be permanent; 0: never give up. */
  maxElapsedMs?: number;
  exporter: Exporter;
  logger: Logger;
  backoff?: Partial<BackoffOptions>;
  batch?: Partial<BatchOptions>;
  now?: () => number;
  random?: () => number;
}

/**
 * What an operator sees of one destination: the API's ForwardingDestination (/api/v1/forwarding), with times
 * kept as epoch milliseconds until the API formats them.
 */
export type ForwarderStatus = Omit<ForwardingDestination, 'lastSuccessAt' | 'nextAttemptAt' | 'attemptStartedAt'> & {
  lastSuccessAtMs: number | null;
  nextAttemptAtMs: number | null;
  attemptStartedAtMs: number | null;
  /** Attempts whose TLS handshake with the destination failed, since start. */
  tlsFailures: number;
};

/** The wait before retry number `failures` (1-based), before Retry-After: random(0, min(max, initial * multiplier^(failures-1))). */
export function backoffDelay(failures: number, b: BackoffOptions, random: () => number): number {
  return fullJitterBackoff(failures, { baseMs: b.initialMs, capMs: b.maxMs, multiplier: b.multiplier }, random);
}

export class Forwarder {
  private readonly opts: ForwarderOptions;
  private readonly backoff: BackoffOptions;
  private readonly batch: BatchOptions;
  /** The head goes alone: it is past its time (see step), so it is given up only if refused on its own. */
  private isolate = false;
  /**
   * After a merged batch was refused for good (or past its time), its requests go alone up to its last, this id,
   * so only the bad one is dead-lettered and each good one ahead of it is not followed by the rest merged again
   * (and refused again): one refused upload of the batch, then one attempt per request until the bad one is found
   * (refused for good on its own); the rest merge again then. 0: none.
   */
  private aloneThroughId = 0;
  /**
   * Requests one attempt may carry now. An attempt that timed out is not resent as large: a destination that
   * takes longer than forward.timeout for a large merged request (and may well have taken it, so every resend
   * is a duplicate) gets half as many next time, down to one; attempts that finish well within the timeout
   * raise it again. An attempt whose connection was reset or closed before an answer, or that was refused as too
   * large (413, gRPC RESOURCE_EXHAUSTED), is treated the same: a proxy that drops or refuses uploads over its size
   * limit would otherwise get the same large request forever. After a refusal as too large, the size refused is
   * remembered too (sizeCeiling), so that raising it again does not reach that size.
   */
  private batchLimit: number;
  /** The size merged attempts were refused at as too large: they stay below it (see SizeCeiling). */
  private readonly sizeCeiling: SizeCeiling;
  private rejectedByDestination = 0;
  /** Requests given up past forward.retry.maxElapsedTime since the last delivery (for the log's rate). */
  private expiredDeadLetters = 0;
  private lastPartialLogMs = -Infinity;
  /** A partial success's count that is no whole number was logged (once: a destination writes them alike). */
  private unreadCountLogged = false;
  /** Partial successes that rejected nothing but carried a message: warnings from the destination; the line names the last. */
  private readonly destinationWarnings: ThrottledLine;
  private lastWarning: { signal: string; requests: number; message: string } | undefined;
  private tlsFailures = 0;
  /** TLS failures since the last line that said so. */
  private tlsFailuresUnlogged = 0;
  private lastTlsLogMs = -Infinity;
  /** Dead letters evicted over forward.deadLetters.maxBytes (see noteEvicted). */
  private readonly evictions: ThrottledLine;
  /** Requests refused for good; the line names the last of them. */
  private readonly refusals: ThrottledLine;
  private lastRefusal: { signal: string; bytes: number; status: number | null; message: string } | undefined;
  private readonly now: () => number;
  private state: ForwarderStatus['state'] = 'idle';
  private failures = 0;
  private lastError: string | null = null;
  private lastSuccessAtMs: number | null = null;
  private nextAttemptAtMs: number | null = null;
  /** When the attempt in flight began; null when none is. */
  private attemptStartedAtMs: number | null = null;
  private wake: (() => void) | undefined;
  /** A request arrived since the queue was last read: reading it empty then is no reason to wait. */
  private arrived = false;
  private running: Promise<void> | undefined;
  private stopping = false;
  /** Aborts the attempt in flight, if any. */
  private attempt: AbortController | undefined;

  constructor(opts: ForwarderOptions) {
    this.opts = opts;
    this.backoff = { ...DEFAULT_BACKOFF, ...opts.backoff };
    this.batch = { ...DEFAULT_BATCH, ...opts.batch };
    this.batchLimit = this.batch.maxRequests;
    this.now = opts.now ?? Date.now;
    this.sizeCeiling = new SizeCeiling(this.now);
    this.evictions = new ThrottledLine(EVICTION_LOG_INTERVAL_MS, this.now, (evicted) => {
      const { queue, exporter, logger } = this.opts;
      const held = queue.deadLetterSummary();
      logger.warn('dead letters over forward.deadLetters.maxBytes removed, oldest first; their requests are lost', { destination: exporter.description, evicted, evictedTotal: queue.counters().deadLettersEvicted, deadLettersHeld: held.count, deadLetterBytes: held.bytes, maxBytes: held.maxBytes });
    });
    this.destinationWarnings = new ThrottledLine(PARTIAL_LOG_INTERVAL_MS, this.now, (answers) => {
      const last = this.lastWarning;
      this.opts.logger.warn('forwarding: the destination accepted the records with a warning', { destination: this.opts.exporter.description, signal: last?.signal, requests: last?.requests, answers, message: last?.message.slice(0, 500) });
    });
    this.refusals = new ThrottledLine(REFUSED_LOG_INTERVAL_MS, this.now, (refused) => {
      this.opts.logger.warn('forwarding refused for good; request moved to dead letters', { destination: this.opts.exporter.description, ...this.lastRefusal, refused, deadLettersTotal: this.opts.queue.counters().deadLetters });
    });
  }

  /** Starts the delivery loop (returns at once). */
  start(): void {
    if (this.running || this.stopping) return;
    this.running = this.loop().catch((err: unknown) => {
      this.opts.logger.error('forwarding stopped unexpectedly', { destination: this.opts.exporter.description, err });
      this.state = 'stopped';
    });
  }

  /** Tells an idle loop that a request arrived. */
  notify(): void {
    this.arrived = true;
    if (this.state === 'idle') this.wakeUp();
  }

  /** Seconds a refused client should wait: until the next attempt, within 1..60 s. */
  retryAfterSeconds(): number {
    const wait = this.nextAttemptAtMs === null ? 1000 : this.nextAttemptAtMs - this.now();
    return Math.min(60, Math.max(1, Math.ceil(wait / 1000)));
  }

  /**
   * A partial success: the destination kept the request but dropped some of its records (a quota, a limit).
   * Not retried, as the specification says; counted, and logged at most once a minute, whatever the reasons.
   * One that rejects nothing but carries a message is, as the specification says, a warning: nothing is lost or
   * counted rejected, and it is logged as such at most once a minute. An OTLP/JSON count that is no whole number
   * (2.5, "1e3") is not counted, and said once.
   */
  private notePartial(partial: PartialSuccess, signal: string, requests: number): void {
    if (partial.unreadCount !== undefined && !this.unreadCountLogged) {
      this.unreadCountLogged = true;
      this.opts.logger.warn('forwarding: the destination\'s partial success gave a rejected count that is not a whole number; it is not counted', { destination: this.opts.exporter.description, signal, requests, count: partial.unreadCount.slice(0, 100), message: partial.message.slice(0, 500) });
    }
    if (isPartialSuccessWarning(partial)) {
      // A count that is no whole number, and no message: nothing more to say.
      if (!partial.message) return;
      this.lastWarning = { signal, requests, message: partial.message };
      this.destinationWarnings.note();
      return;
    }
    this.rejectedByDestination += partial.rejected;
    // At most once a minute, whatever the reasons say (one may carry a count that changes every time).
    const now = this.now();
    if (now - this.lastPartialLogMs < PARTIAL_LOG_INTERVAL_MS) return;
    this.lastPartialLogMs = now;
    this.opts.logger.warn('forwarding: the destination rejected some records of accepted requests (partial success)', { destination: this.opts.exporter.description, signal, requests, rejected: partial.rejected, message: partial.message.slice(0, 500) });
  }

  /**
   * Dead letters evicted to stay within forward.deadLetters.maxBytes are data given up for good: each is counted
   * (hookwatch_forward_dead_letters_evicted_total) and they are logged, the first at once, then at most once a
   * minute with how many since the last line.
   */
  private noteEvicted(evicted: number): void {
    this.evictions.note(evicted);
  }

  /**
   * A failed TLS handshake is no outage that passes by itself: the destination's certificate is not trusted (a
   * private CA not in forward.tls.caFile), names another host, is out of date, or the destination refused the
   * client certificate. Each is counted (hookwatch_forward_tls_failures_total) and logged as an error, the first at
   * once, then at most once a minute with how many since.
   */
  private noteTlsFailure(message: string, queued: number): void {
    this.tlsFailures++;
    this.tlsFailuresUnlogged++;
    const now = this.now();
    if (now - this.lastTlsLogMs < TLS_LOG_INTERVAL_MS) return;
    this.lastTlsLogMs = now;
    this.opts.logger.error('forwarding: the TLS handshake with the destination failed; requests stay queued and are retried (check forward.tls.caFile, forward.tls.serverName and the client certificate, or the destination\'s certificate)', { destination: this.opts.exporter.description, message, failedHandshakes: this.tlsFailuresUnlogged, queued });
    this.tlsFailuresUnlogged = 0;
  }

  status(): ForwarderStatus {
    const q = this.opts.queue;
    const c = q.counters();
    const oldest = q.oldestReceivedAtMs();
    return {
      destination: this.opts.exporter.description,
      state: this.state,
      depth: q.depth,
      bytes: q.bytes,
      maxBytes: q.maxBytes,
      oldestAgeMs: oldest === undefined ? null : Math.max(0, this.now() - oldest),
      delivered: c.delivered,
      retries: c.retries,
      deadLetters: c.deadLetters,
      refusedFull: c.refusedFull,
      rejectedByDestination: this.rejectedByDestination,
      consecutiveFailures: this.failures,
      tlsFailures: this.tlsFailures,
      lastError: this.lastError,
      lastSuccessAtMs: this.lastSuccessAtMs,
      nextAttemptAtMs: this.nextAttemptAtMs,
      attemptStartedAtMs: this.attemptStartedAtMs,
    };
  }

  /**
   * Stops after the attempt in flight (aborted after STOP_GRACE_MS), without waiting for a retry delay; what is
   * left stays queued on disk for the next start. Safe twice.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wakeUp();
    const grace = setTimeout(() => this.attempt?.abort(), STOP_GRACE_MS);
    try {
      await this.running;
    } finally {
      clearTimeout(grace);
    }
    // Before the queue closes: evictions and refusals not yet logged are.
    this.evictions.flush();
    this.refusals.flush();
    this.destinationWarnings.flush();
    this.state = 'stopped';
  }

  private wakeUp(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private wait(ms: number | undefined): Promise<void> {
    // Stopping: no retry delay (up to a Retry-After of minutes) is waited out, whenever stop() came.
    if (this.stopping) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(() => this.wakeUp(), ms);
      this.wake = () => {
        if (timer) clearTimeout(timer);
        resolve();
      };
    });
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      try {
        await this.step();
      } catch (err) {
        // The queue file failed (disk full, I/O error): keep the data where it is and try again later, rather
        // than stop delivering until a restart.
        this.failures++;
        this.lastError = `the forwarding queue failed: ${(err as Error).message}`;
        const delay = backoffDelay(this.failures, this.backoff, this.opts.random ?? Math.random);
        this.nextAttemptAtMs = this.now() + delay;
        this.opts.logger.error('forwarding queue failed; will retry', { destination: this.opts.exporter.description, retryInMs: delay, err });
        this.state = 'backing_off';
        await this.wait(delay);
      }
    }
  }

  /** A merged attempt of `requests` failed for its size (`how`): the next ones carry half as many. */
  private fewerPerAttempt(requests: number, bytes: number, how: string): void {
    this.batchLimit = Math.max(1, Math.floor(requests / 2));
    const ceiling = this.sizeCeiling.ceiling;
    this.opts.logger.warn(`forwarding attempt ${how}; the next attempts carry fewer requests`, { destination: this.opts.exporter.description, requestsInAttempt: requests, bytes, nextAttemptAtMost: this.batchLimit, ...(ceiling !== undefined ? { refusedBytes: ceiling } : {}) });
  }

  /** One delivery attempt of the oldest request (or a wait for one). */
  private async step(): Promise<void> {
    const { queue, exporter, logger } = this.opts;
    this.arrived = false;
    // Reading the queue may pause (a large body is read in chunks): a request may arrive before it returns.
    if (this.aloneThroughId && (queue.headId() ?? Infinity) > this.aloneThroughId) this.aloneThroughId = 0;
    const alone = this.isolate || this.aloneThroughId > 0;
    const items = await queue.batch(alone ? 1 : this.batchLimit, this.sizeCeiling.allowance(this.batch.maxBytes));
    const item = items[0];
    if (!item) {
      if (this.arrived) return;
      this.state = 'idle';
      this.nextAttemptAtMs = null;
      await this.wait(undefined);
      return;
    }
    this.state = 'sending';
    // The wait that led here is over: what the API shows is the attempt in flight, not when it was due.
    this.nextAttemptAtMs = null;
    this.attemptStartedAtMs = this.now();
    const ids = items.map((i) => i.id);
    const body = items.length === 1 ? item.body : Buffer.concat(items.map((i) => i.body));
    const started = performance.now();
    const attempt = new AbortController();
    this.attempt = attempt;
    let result: ExportResult;
    try {
      result = await exporter.export({ signal: item.signal, encoding: item.encoding, body }, attempt.signal);
    } finally {
      this.attempt = undefined;
      this.attemptStartedAtMs = null;
    }
    if (result.kind !== 'success' && attempt.signal.aborted) {
      // Cut off by stop() (SIGTERM), not refused: the requests stay queued as they were, for the next start, and
      // the attempt is neither a retry nor a failure.
      return;
    }
    const tookMs = performance.now() - started;
    if (result.kind === 'success') {
      await queue.ack(...ids);
      this.sizeCeiling.taken(body.length);
      // A full attempt that used under a quarter of the timeout: twice as many can go next time.
      const timeoutMs = exporter.timeoutMs;
      if (this.batchLimit < this.batch.maxRequests && items.length >= this.batchLimit && (timeoutMs === undefined || tookMs < timeoutMs / 4)) {
        this.batchLimit = Math.min(this.batch.maxRequests, this.batchLimit * 2);
      }
      if (result.partial) this.notePartial(result.partial, item.signal, items.length);
      this.isolate = false;
      this.expiredDeadLetters = 0;
      if (this.failures > 0) logger.info('forwarding recovered', { destination: exporter.description, failedAttempts: this.failures });
      this.failures = 0;
      this.lastError = null;
      this.lastSuccessAtMs = this.now();
      this.nextAttemptAtMs = null;
      return;
    }
    this.lastError = result.message;
    if (result.kind === 'permanent' && result.tooLarge) {
      this.sizeCeiling.refused(body.length);
      if (items.length > 1) {
        // Too large merged (a proxy's body size limit): fewer at once, as after a cut-off, not the head alone and
        // then as many merged again.
        this.fewerPerAttempt(items.length, body.length, 'refused as too large');
        queue.retry(ids);
        return;
      }
    }
    if (result.kind === 'permanent' && items.length > 1) {
      // One of the merged requests may be the bad one: resend them alone to find out.
      this.aloneThroughId = ids[ids.length - 1]!;
      queue.retry(ids);
      return;
    }
    if (result.kind === 'permanent') {
      // The bad request of a refused batch, found: the rest of it may merge again.
      this.isolate = false;
      this.aloneThroughId = 0;
      const evicted = await queue.deadLetter([item.id], this.now(), result.status ?? null, result.message);
      // Counted each (hookwatch_forward_dead_letters_total); a destination refusing every request gets a line a
      // minute, with how many since and the last one's reason, not one per request.
      this.lastRefusal = { signal: item.signal, bytes: item.body.length, status: result.status ?? null, message: result.message };
      this.refusals.note();
      if (evicted) this.noteEvicted(evicted);
      return;
    }
    if (result.kind === 'retryable' && (result.timedOut || result.cutOff) && items.length > 1) {
      this.fewerPerAttempt(items.length, body.length, result.timedOut ? 'timed out' : 'cut off (connection reset or closed before an answer)');
    }
    if (result.tls) this.noteTlsFailure(result.message, queue.depth);
    const now = this.now();
    const maxElapsed = this.opts.maxElapsedMs ?? DEFAULT_MAX_ELAPSED_MS;
    // The destination away: a request whose forward.retry.maxElapsedTime has run out counts again from its next
    // refusal; one still counting keeps counting.
    queue.retry(ids, result.bounded ? { refusedAtMs: now } : { awayRunOutThroughMs: now - maxElapsed });
    if (result.bounded && maxElapsed > 0) {
      const expired = items.filter((i) => now - (i.refusedSinceMs ?? now) >= maxElapsed);
      if (expired.length && items.length > 1) {
        // Before any is given up, they go alone: a refusal that may be about one request's content (a 500 on a
        // body the destination cannot take) must not take the requests merged with it along.
        this.aloneThroughId = ids[ids.length - 1]!;
        return;
      }
      if (expired.length) {
        // Refused on its own past its time: a dead letter. The next ones go alone while they are past their time
        // too (each is tried alone once before it is given up, no merged resend between), then merged again.
        const reason = `${result.message} (retried for ${Math.round((now - (item.refusedSinceMs ?? now)) / 1000)} s, forward.retry.maxElapsedTime)`;
        const evicted = await queue.deadLetter([item.id], now, result.status ?? null, reason);
        if (evicted) this.noteEvicted(evicted);
        const next = queue.headRefusedSinceMs();
        this.isolate = next !== undefined && next !== null && now - next >= maxElapsed;
        // One line for the first and every hundredth: a long refusal gives up on every queued request in turn.
        if (this.expiredDeadLetters++ % 100 === 0) {
          logger.warn('forwarding refused past forward.retry.maxElapsedTime; request moved to dead letters', { destination: exporter.description, signal: item.signal, deadLettersSoFar: this.expiredDeadLetters, status: result.status ?? null, message: result.message });
        }
        return;
      }
    }
    this.failures++;
    let delay = backoffDelay(this.failures, this.backoff, this.opts.random ?? Math.random);
    // Only a positive delay is a floor under the backoff (NaN is not); past maxRetryAfterMs it is waited as that.
    if (result.retryAfterMs !== undefined && result.retryAfterMs > 0) delay = Math.max(delay, Math.min(result.retryAfterMs, this.backoff.maxRetryAfterMs));
    this.nextAttemptAtMs = this.now() + delay;
    // A TLS failure has its own line (noteTlsFailure).
    if (!result.tls && (this.failures === 1 || this.failures % 20 === 0)) {
      logger.warn('forwarding failed; will retry', { destination: exporter.description, failures: this.failures, retryInMs: delay, queued: queue.depth, requestsInAttempt: items.length, message: result.message });
    }
    this.state = 'backing_off';
    await this.wait(delay);
  }
}
