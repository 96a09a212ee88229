/**
 * What the forwarder needs from a transport: send one queued request and say whether a retry can help
 * (the OpenTelemetry Collector's split between retryable and permanent errors).
 */
import type { Encoding, PartialSuccess } from '../otlp/encode.ts';
import type { Signal } from '../pipeline/consumer.ts';

/** One request to send, its body uncompressed and exactly as received. */
export interface ExportItem {
  signal: Signal;
  encoding: Encoding;
  body: Buffer;
}

/**
 * The outcome of one attempt. `status` is the HTTP status or gRPC code, when there was one. A retryable result
 * with `bounded` is a refusal that may be permanent (401, 403, 404, 500...) but is often fixed by an operator
 * (a key rotated, a deploy finished): it is retried for `forward.retry.maxElapsedTime` and then dead-lettered.
 * Without it (unreachable, 502/503/504, 429) the destination is only away and retries never give up.
 */
export type ExportResult =
  /**
   * `partial`: the destination took the request but reported records it rejected, or only a warning when it
   * rejected none (OTLP partial success).
   */
  | { kind: 'success'; partial?: PartialSuccess }
  /**
   * `timedOut`: no answer within forward.timeout (the destination may be slow for a request this large). `tls`:
   * the TLS handshake failed (the destination's certificate not trusted, for another name or out of date; the
   * client certificate refused), which only a change of forward.tls.* or of the destination's certificate fixes.
   * `cutOff`: the connection was reset or closed before an answer came (a proxy that drops uploads over a size
   * limit ends that way), so the request may well have been too large to get through.
   */
  | { kind: 'retryable'; message: string; status?: number; retryAfterMs?: number; bounded?: boolean; timedOut?: boolean; cutOff?: boolean; tls?: boolean }
  /**
   * `tooLarge`: refused for its size (HTTP 413: a proxy's body size limit, say; gRPC RESOURCE_EXHAUSTED without
   * RetryInfo: a lower message size limit), so fewer requests merged may well get through.
   */
  | { kind: 'permanent'; message: string; status?: number; tooLarge?: boolean };

/** A downstream OTLP destination. */
export interface Exporter {
  /** A description without secrets, for logs and the API (e.g. `http://collector:4318 (http/protobuf)`). */
  readonly description: string;
  /** How long one attempt may take (forward.timeout). */
  readonly timeoutMs?: number;
  /** Whether requests in this encoding can be sent unchanged (OTLP/gRPC carries protobuf only). */
  accepts(encoding: Encoding): boolean;
  /** `signal` aborts the attempt (hookwatch is stopping): it resolves as retryable and the request stays queued. */
  export(item: ExportItem, signal?: AbortSignal): Promise<ExportResult>;
  /** Safe to call twice. */
  close(): Promise<void>;
}


/**
 * `result` with `scrub` applied to the text the destination wrote in it: a gateway's refusal may repeat the key
 * or the URL it was sent, and these messages reach the log, the API, the dashboard and the dead letters.
 */
export function scrubbedResult(result: ExportResult, scrub: (text: string) => string): ExportResult {
  if (result.kind !== 'success') return { ...result, message: scrub(result.message) };
  if (!result.partial) return result;
  const { unreadCount } = result.partial;
  return { ...result, partial: { ...result.partial, message: scrub(result.partial.message), ...(unreadCount !== undefined ? { unreadCount: scrub(unreadCount) } : {}) } };
}
