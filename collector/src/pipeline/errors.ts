/**
 * Every failure on the ingest path is classified once: permanent (bad input: do not retry) or retryable
 * (back-pressure, store unavailable). One table maps each class to an HTTP status and a gRPC code.
 */
import { RpcCode } from '../otlp/encode.ts';
import { DecodeError } from '../otlp/model.ts';
import { StoreUnavailableError } from '../store/store.ts';

/** The request body is larger than the configured limit (after decompression). */
export class TooLargeError extends Error {
  override name = 'TooLargeError';
}

/** hookwatch cannot keep up right now; the client should retry after `retryAfterSeconds`. */
export class OverloadedError extends Error {
  override name = 'OverloadedError';
  retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds = 1) {
    super(message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

export class UnauthenticatedError extends Error {
  override name = 'UnauthenticatedError';
}

export class UnsupportedMediaTypeError extends Error {
  override name = 'UnsupportedMediaTypeError';
}

/**
 * The forwarding queue's file cannot take writes (its disk full or read-only, an I/O error) while the store may be
 * fine: retryable like the store's faults, answered and counted apart so the operator looks at forward.queue.path.
 */
export class ForwardQueueUnavailableError extends Error {
  override name = 'ForwardQueueUnavailableError';
}

/** Every reason mapError gives: the label values of hookwatch's rejection counters that both receivers share. */
export const MAPPED_REJECT_REASONS = ['bad_request', 'too_large', 'unsupported_media_type', 'unauthenticated', 'overloaded', 'store_unavailable', 'forward_queue_unavailable', 'internal'] as const;
export type MappedRejectReason = (typeof MAPPED_REJECT_REASONS)[number];

export interface ErrorMapping {
  httpStatus: number;
  /** google.rpc.Code / gRPC status code. */
  grpcCode: number;
  retryAfterSeconds?: number;
  /** Safe to show the client (no internals, no secrets). */
  message: string;
  /** Label for hookwatch's own rejection counters. */
  reason: MappedRejectReason;
}

/**
 * Retry-After (seconds) of a batch the store could not take (a database restarting, a disk full). OpenTelemetry's
 * JavaScript OTLP/HTTP exporter (Claude Code's) waits exactly the Retry-After before it sends the batch again, up
 * to 5 times, and gives up once the next wait would pass its export timeout (10 s by default). At 5 s it tried
 * twice, at 0 and 5 s; at 2 s it tries at 0, 2, 4, 6 and 8 s, so an outage of up to 8 s loses nothing, one request
 * per client every 2 s. At 1 s its 5 retries would be spent by 5 s; 0 it takes as "at once", all 5 in a burst.
 */
const STORE_RETRY_AFTER_SECONDS = 2;

/** The one mapping from an ingest error to HTTP and gRPC answers. */
export function mapError(err: unknown): ErrorMapping {
  if (err instanceof DecodeError) return { httpStatus: 400, grpcCode: RpcCode.INVALID_ARGUMENT, message: err.message, reason: 'bad_request' };
  if (err instanceof TooLargeError) return { httpStatus: 413, grpcCode: RpcCode.RESOURCE_EXHAUSTED, message: err.message, reason: 'too_large' };
  if (err instanceof UnsupportedMediaTypeError) return { httpStatus: 415, grpcCode: RpcCode.INVALID_ARGUMENT, message: err.message, reason: 'unsupported_media_type' };
  if (err instanceof UnauthenticatedError) return { httpStatus: 401, grpcCode: RpcCode.UNAUTHENTICATED, message: err.message, reason: 'unauthenticated' };
  if (err instanceof OverloadedError) return { httpStatus: 503, grpcCode: RpcCode.UNAVAILABLE, retryAfterSeconds: err.retryAfterSeconds, message: err.message, reason: 'overloaded' };
  if (err instanceof ForwardQueueUnavailableError) return { httpStatus: 503, grpcCode: RpcCode.UNAVAILABLE, retryAfterSeconds: STORE_RETRY_AFTER_SECONDS, message: 'the forwarding queue cannot take writes right now; retry later', reason: 'forward_queue_unavailable' };
  if (err instanceof StoreUnavailableError) return { httpStatus: 503, grpcCode: RpcCode.UNAVAILABLE, retryAfterSeconds: STORE_RETRY_AFTER_SECONDS, message: 'the store cannot take writes right now; retry later', reason: 'store_unavailable' };
  return { httpStatus: 500, grpcCode: RpcCode.INTERNAL, message: 'internal error', reason: 'internal' };
}
