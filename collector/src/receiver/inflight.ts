/**
 * One process-wide bound on the request bytes the receivers hold in memory at once (bodies as read and as
 * inflated, on both ports). A flood of large or compressed requests then costs at most this much; past it the
 * answer is 503 / UNAVAILABLE with Retry-After, which OTLP clients retry, instead of memory growth.
 */
import { decodeLogsJsonSteps } from '../otlp/decode-json.ts';
import { decodeLogsProtoSteps } from '../otlp/decode-proto.ts';
import type { Encoding } from '../otlp/encode.ts';
import { JSON_THREAD_MIN_BYTES, type JsonThread } from '../otlp/json-thread.ts';
import { DecodeBudget, DecodeLimitError, type LogsRequest } from '../otlp/model.ts';
import { OverloadedError, TooLargeError } from '../pipeline/errors.ts';
import { runPaced, type PacedSteps, type Steps } from '../paced.ts';

/**
 * otlp.maxInflightBytes is spent: answered as any OverloadedError (503 / UNAVAILABLE with a retry delay), but never
 * held over gRPC (otlp-grpc/store-hold.ts), where the held call would keep its bytes in that budget meanwhile.
 */
export class InflightFullError extends OverloadedError {
  override name = 'InflightFullError';
}

function heldError(limitBytes: number): InflightFullError {
  return new InflightFullError(`hookwatch is holding otlp.maxInflightBytes (${limitBytes} bytes) of requests in memory; retry later`);
}

/**
 * How long after a request was refused for lack of the budget it counts as under pressure, and uploads under the
 * minimum body rate (body-rate.ts) are ended: longer than that rule's grace period and a check, so every request
 * holding the budget at a refusal is checked past its grace.
 */
export const BUDGET_PRESSURE_MS = 10_000;

export class InflightBudget {
  private used = 0;
  /** performance.now() of the last refusal for lack of the budget. */
  private refusedAtMs = -Infinity;
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

  /** Bytes no open request holds. */
  get freeBytes(): number {
    return this.limitBytes - this.used;
  }

  /** ms left before the budget stops being under pressure (BUDGET_PRESSURE_MS after the last refusal); 0 when it is not. */
  get pressureLeftMs(): number {
    return Math.max(0, BUDGET_PRESSURE_MS - (performance.now() - this.refusedAtMs));
  }

  /** Notes a request refused for lack of the budget (InflightFullError). */
  refused(): void {
    this.refusedAtMs = performance.now();
  }

  /** @internal used by InflightAccount. */
  tryTake(bytes: number): boolean {
    if (this.used + bytes > this.limitBytes) {
      this.refused();
      return false;
    }
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

  /** Bytes this request holds now. */
  get heldBytes(): number {
    return this.held;
  }

  /** ms left of the budget's pressure window (InflightBudget.pressureLeftMs). */
  get pressureLeftMs(): number {
    return this.budget.pressureLeftMs;
  }

  /** Charges `bytes` more to this request; throws InflightFullError when the process-wide budget is spent. */
  take(bytes: number): void {
    if (this.released) throw new Error('in-flight account used after release');
    if (!this.budget.tryTake(bytes)) {
      throw heldError(this.budget.limitBytes);
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

/**
 * Runs a decode (`steps`) bounded by what the process has left of otlp.maxInflightBytes, charging what the
 * decoded request holds to the request's account, so a body of tiny records (two bytes each on the wire,
 * hundreds in memory) is bounded like a large body. One request may decode to at most half of the budget (past
 * it: 413, the client must send smaller batches); when other requests hold the rest, 503 with Retry-After, unless
 * the part decoded already, scaled to the whole body, says it would pass that half anyway (413).
 * A large request is decoded in slices with the event loop served between them (paced.ts); what it holds so far
 * is charged at each pause, so requests decoded meanwhile see it taken.
 */
export async function decodeWithin<T>(account: InflightAccount, budget: InflightBudget, steps: (bound: DecodeBudget) => PacedSteps<T>): Promise<T> {
  const perRequest = Math.floor(budget.limitBytes / 2);
  const bound = new DecodeBudget(Math.min(perRequest, budget.freeBytes));
  let charged = 0;
  const charge = (): void => {
    account.take(bound.bytes - charged);
    charged = bound.bytes;
  };
  let decoded: T;
  try {
    decoded = await runPaced(steps(bound), charge);
  } catch (err) {
    if (!(err instanceof DecodeLimitError)) throw err;
    // Bound by what other requests leave: 503, unless what was decoded so far, over the share of the body read,
    // is more than one request may decode to (a batch that will never fit is not to be retried).
    if (bound.maxBytes < perRequest && !(err.readShare !== undefined && bound.bytes > perRequest * err.readShare)) {
      budget.refused();
      throw heldError(budget.limitBytes);
    }
    throw new TooLargeError(`the request decodes to more than ${perRequest} bytes in memory (half of otlp.maxInflightBytes): too many log records or attributes for one request; send smaller batches`);
  }
  charge();
  return decoded;
}

/**
 * A logs body decoded as `encoding`, in slices (decodeWithin's bound applies); an OTLP/JSON body over
 * JSON_THREAD_MIN_BYTES parsed and decoded on `json`'s thread, its model taken in here in slices. With
 * `eventNames` (LogsConsumer.eventNames), a protobuf body's other records are decoded without their attributes.
 */
export function decodeLogs(encoding: Encoding, body: Buffer, bound: DecodeBudget): Steps<LogsRequest>;
export function decodeLogs(encoding: Encoding, body: Buffer, bound: DecodeBudget, json: JsonThread | undefined, eventNames?: ReadonlySet<string>): PacedSteps<LogsRequest>;
export function decodeLogs(encoding: Encoding, body: Buffer, bound: DecodeBudget, json?: JsonThread, eventNames?: ReadonlySet<string>): PacedSteps<LogsRequest> {
  if (encoding === 'protobuf') return decodeLogsProtoSteps(body, bound, eventNames);
  return json && body.length > JSON_THREAD_MIN_BYTES ? json.decodeLogsSteps(body, bound) : decodeLogsJsonSteps(body.toString('utf8'), bound);
}
