/**
 * The forwarding stage on the ingest path. Logs: room in the queue is checked first, then the hook stage
 * commits its events, then the request is committed to the queue, and only then does the receiver answer 200.
 * If the queue write fails after the hook stage, the client's retry is deduplicated by the store, so the order
 * costs nothing; the reverse order would send a duplicate downstream on every store hiccup.
 * Metrics and traces, which hookwatch does not decode: room in the queue is checked first (admit), so a full
 * queue costs no parse; then the receiver checks the body (otlp/validate.ts) and it goes straight to the queue: a
 * malformed body is refused with 400 before it could be acknowledged and merged with others.
 */
import type { LogsRequest } from '../otlp/model.ts';
import type { ConsumeResult, LogsConsumer, PassThroughConsumer, RawRequest } from '../pipeline/consumer.ts';
import { ForwardQueueUnavailableError, OverloadedError, TooLargeError, UnsupportedMediaTypeError } from '../pipeline/errors.ts';
import { describeSqliteError, sqliteFault } from '../store/sqlite/database.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Exporter } from './exporter.ts';
import type { Forwarder } from './forwarder.ts';
import { QueueFullError, type DurableQueue } from './queue.ts';

/** Rewrites a logs body before it is queued, given what the hook stage made of the request. */
export type LogsTransform = (raw: RawRequest, result: ConsumeResult) => Buffer;

export interface ForwardingStageOptions {
  queue: DurableQueue;
  forwarder: Forwarder;
  exporter: Exporter;
  transform?: LogsTransform;
  logger?: Logger;
}

/** A write to the queue file failed: why, and the size of the body it could not take. */
interface QueueFault {
  cause: string;
  bytes: number;
}

/** Commits requests to the durable queue, refusing (503 + Retry-After) rather than dropping when it is full. */
export class ForwardingStage implements PassThroughConsumer {
  private readonly opts: ForwardingStageOptions;
  /**
   * The requests counted in refusedFull already: an OTLP/gRPC export held while the queue is full is checked
   * again on each try (receiver/otlp-grpc/store-hold.ts), and is still one request found the queue full.
   */
  private readonly refusedFull = new WeakSet<RawRequest>();
  /**
   * What the hook stage made of the logs requests it committed and the queue then refused: such an export, held,
   * goes straight to the queue on its next try, its events not committed again (counted as duplicates).
   */
  private readonly hookCommitted = new WeakMap<RawRequest, ConsumeResult>();
  /** Set while the queue file cannot take writes, until one goes through again (or a probe of ping()). */
  private fault: QueueFault | undefined;

  constructor(opts: ForwardingStageOptions) {
    this.opts = opts;
  }

  /** Throws the error the receivers map to 415 or 503 when this request cannot be queued now. */
  check(raw: RawRequest): void {
    if (!this.opts.exporter.accepts(raw.encoding)) {
      throw new UnsupportedMediaTypeError('OTLP/JSON cannot be forwarded to a gRPC destination unchanged; send application/x-protobuf or set forward.protocol to http/protobuf');
    }
    this.refuseLarger(raw.body.length, '');
    if (!this.opts.queue.hasRoom(raw.body.length)) this.refuseFull(raw);
  }

  /** Metrics and traces: a full queue is answered before the receiver parses the body to check it. */
  admit(raw: RawRequest): void {
    this.check(raw);
  }

  async consume(raw: RawRequest): Promise<void> {
    this.check(raw);
    await this.enqueue(raw, raw.body);
  }

  /** Commits `body` for `raw`'s signal; the caller answers 200 only after this resolves. */
  async enqueue(raw: RawRequest, body: Buffer): Promise<void> {
    // `body` may be larger than raw.body, which check() found room for (forward.enrich); checked here, the queue
    // does not count the request again on each try of a held export.
    if (body !== raw.body) this.refuseLarger(body.length, ' once enriched (forward.enrich)');
    if (!this.opts.queue.hasRoom(body.length)) this.refuseFull(raw);
    try {
      await this.opts.queue.enqueue(raw.signal, raw.encoding, body, raw.receivedAtMs);
    } catch (err) {
      if (err instanceof QueueFullError) this.enqueueRefused();
      // A disk that cannot take writes is back-pressure too: the client keeps the data and retries.
      this.noteFault(sqliteFault(err) ?? describeSqliteError(err), body.length, err);
      throw this.unavailable(err);
    }
    if (this.fault) this.cleared('a write succeeded again');
    this.opts.forwarder.notify();
  }

  /**
   * Readiness: throws, naming forward.queue.path and the cause, while the queue file cannot take writes. Each call
   * then checks for room for the largest body refused and tries a small write (DurableQueue.probeWrite), and clears
   * the fault when both go through: a load balancer sends nothing to a replica not ready, so no request would.
   */
  ping(): void {
    const fault = this.fault;
    if (!fault) return;
    try {
      this.opts.queue.probeWrite(fault.bytes);
    } catch (err) {
      this.opts.logger?.debug('forwarding queue still cannot keep requests', { path: this.opts.queue.path, error: describeSqliteError(err) });
      throw new Error(this.describeFault(fault), { cause: err });
    }
    this.cleared('a write succeeded again');
  }

  /**
   * While the queue file cannot take writes, what is wrong, worded as readiness words it (GET /api/v1/forwarding
   * shows it as the destination's last error); null otherwise.
   */
  faultMessage(): string | null {
    return this.fault ? this.describeFault(this.fault) : null;
  }

  private describeFault(fault: QueueFault): string {
    return `the forwarding queue cannot keep requests: ${fault.cause} (forward.queue.path: ${this.opts.queue.path})`;
  }

  /** Enters the failed state: one log line with the path and the cause, not one per request. */
  private noteFault(cause: string, bytes: number, err: unknown): void {
    if (this.fault) {
      this.fault.bytes = Math.max(this.fault.bytes, bytes);
      return;
    }
    this.fault = { cause, bytes };
    this.opts.logger?.error('forwarding queue cannot keep requests: refusing OTLP requests (503) until its file is usable again', { path: this.opts.queue.path, setting: 'forward.queue.path', cause, error: describeSqliteError(err) });
  }

  private cleared(how: string): void {
    this.opts.logger?.info('forwarding queue is usable again', { path: this.opts.queue.path, previousCause: this.fault?.cause, recovery: how });
    this.fault = undefined;
  }

  /** The error for a request the queue file could not take. */
  private unavailable(err: unknown): ForwardQueueUnavailableError {
    return new ForwardQueueUnavailableError(`the forwarding queue cannot keep requests: ${this.fault?.cause ?? 'unknown fault'} (${this.opts.queue.path})`, { cause: err });
  }

  /** Wraps the hook stage so every logs request is also forwarded. */
  wrapLogs(next: LogsConsumer): LogsConsumer {
    return {
      // Forwarding sends the body as it came: it reads no record's attributes itself.
      ...(next.eventNames ? { eventNames: next.eventNames } : {}),
      admit: (raw: RawRequest): void => {
        this.check(raw);
        next.admit?.(raw);
      },
      consumeLogs: async (req: LogsRequest, raw: RawRequest): Promise<ConsumeResult> => {
        this.check(raw);
        let result = this.hookCommitted.get(raw);
        if (!result) {
          result = await next.consumeLogs(req, raw);
          this.hookCommitted.set(raw, result);
        }
        await this.enqueue(raw, this.opts.transform ? this.opts.transform(raw, result) : raw.body);
        return result;
      },
    };
  }

  /**
   * Refuses a body of `bytes` (413 / RESOURCE_EXHAUSTED, not to be retried) that could never fit in the queue: a
   * retryable answer would have the client retry it, or an OTLP/gRPC export be held, until it gave up. `as`: how
   * the body came to be that size, when it is not the request as it came.
   */
  private refuseLarger(bytes: number, as: string): void {
    const { maxBytes } = this.opts.queue;
    if (bytes > maxBytes) throw new TooLargeError(`request of ${bytes} bytes${as} is larger than the whole forwarding queue (forward.queue.maxBytes: ${maxBytes} bytes)`);
  }

  /** Refuses `raw` for a full queue, counted in refusedFull once however many times it is tried. */
  private refuseFull(raw: RawRequest): never {
    if (!this.refusedFull.has(raw)) {
      this.refusedFull.add(raw);
      this.opts.queue.countRefused();
    }
    this.enqueueRefused();
  }

  private enqueueRefused(): never {
    const q = this.opts.queue;
    throw new OverloadedError(`the forwarding queue is full (${q.fill()}) while the destination catches up; retry later`, this.opts.forwarder.retryAfterSeconds());
  }
}
