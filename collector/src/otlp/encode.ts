/**
 * Response bodies in the request's encoding: ExportLogsServiceResponse (with partial_success) and
 * google.rpc.Status for errors (opentelemetry-proto specification, "OTLP/HTTP Response").
 */

import { fields, statusMessage, statusMessageStart } from './grpc-status.ts';
import { lengthDelimited, varint } from './proto-write.ts';

export type Encoding = 'protobuf' | 'json';

/** google.rpc.Code values used by hookwatch. */
export const RpcCode = {
  OK: 0,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

/** Encodes an Export*ServiceResponse; partial success only when something was rejected. */
export function encodeExportResponse(encoding: Encoding, rejected: number, message: string, rejectedField = 'rejectedLogRecords'): Buffer {
  if (encoding === 'json') {
    if (rejected === 0 && !message) return Buffer.from('{}');
    // int64 in proto3 JSON is a decimal string.
    return Buffer.from(JSON.stringify({ partialSuccess: { [rejectedField]: String(rejected), errorMessage: message } }));
  }
  if (rejected === 0 && !message) return Buffer.alloc(0);
  const parts: Buffer[] = [];
  if (rejected > 0) parts.push(Buffer.from([0x08, ...varint(rejected)]));
  if (message) parts.push(lengthDelimited(2, Buffer.from(message, 'utf8')));
  return lengthDelimited(1, Buffer.concat(parts));
}

/** Records a destination took the request of but rejected, and its message why (OTLP partial success). */
export interface PartialSuccess {
  rejected: number;
  message: string;
  /**
   * The count as the answer wrote it (in JSON) when it was no whole number, as an int64 in OTLP/JSON must be
   * (2.5, "1e3", "abc"): not counted.
   */
  unreadCount?: string;
}

/**
 * Whether a partial success is only a warning: the OTLP specification lets a destination answer one that rejects
 * nothing and carries a message. Its records were all accepted; nothing is lost.
 */
export function isPartialSuccessWarning(partial: PartialSuccess): boolean {
  return partial.rejected === 0;
}

/** 2^63: a varint read as this or more is a negative int64. */
const INT64_LIMIT = 2 ** 63;

/**
 * An int64 as proto3 JSON writes it: a decimal string of digits, or a number (which may be written with an
 * exponent, 1e3) whose value is whole; undefined for anything else (2.5, "1e3", "abc", true) or one out of range.
 */
function jsonInt64(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : typeof value === 'number' && Number.isInteger(value) ? value : undefined;
  return n !== undefined && n < INT64_LIMIT && n >= -INT64_LIMIT ? n : undefined;
}

/**
 * The partial success in an Export*ServiceResponse a destination answered (any signal: the rejected count is
 * field 1 of partial_success in each, rejectedLogRecords / rejectedDataPoints / rejectedSpans in JSON);
 * undefined when it reports none or the body is not a response. A count below zero, which counts nothing, is
 * taken as none in either encoding (its message, if any, is still a warning), and so is a JSON count that is no
 * whole number, which is said in `unreadCount`.
 */
export function decodePartialSuccess(encoding: Encoding, body: Buffer): PartialSuccess | undefined {
  if (body.length === 0) return undefined;
  if (encoding === 'json') {
    let doc: unknown;
    try {
      doc = JSON.parse(body.toString('utf8'));
    } catch {
      return undefined;
    }
    const partial = (doc as { partialSuccess?: Record<string, unknown> } | null)?.partialSuccess;
    if (!partial || typeof partial !== 'object') return undefined;
    const written = partial['rejectedLogRecords'] ?? partial['rejectedDataPoints'] ?? partial['rejectedSpans'] ?? 0;
    const count = jsonInt64(written);
    const rejected = count !== undefined && count > 0 ? count : 0;
    const message = typeof partial['errorMessage'] === 'string' ? partial['errorMessage'] : '';
    if (count === undefined) return { rejected, message, unreadCount: JSON.stringify(written) };
    return rejected > 0 || message ? { rejected, message } : undefined;
  }
  const partial = fields(body)?.find((f) => f.num === 1 && Buffer.isBuffer(f.value))?.value;
  if (!Buffer.isBuffer(partial)) return undefined;
  const inner = fields(partial) ?? [];
  const rejected = inner.find((f) => f.num === 1 && typeof f.value === 'number')?.value;
  const text = inner.find((f) => f.num === 2 && Buffer.isBuffer(f.value))?.value;
  const message = Buffer.isBuffer(text) ? text.toString('utf8') : '';
  // An int64 below zero arrives as a 10-byte varint, read here as 2^64 less it: ignored, as in JSON.
  const count = typeof rejected === 'number' && rejected < INT64_LIMIT ? rejected : 0;
  return count > 0 || message ? { rejected: count, message } : undefined;
}

/** The encoding an OTLP/HTTP answer's content type names; undefined when it names neither. */
export function namedEncoding(contentType: string): Encoding | undefined {
  return contentType.includes('json') ? 'json' : contentType.includes('protobuf') ? 'protobuf' : undefined;
}

/**
 * Why a destination refused an OTLP/HTTP request, from the start of its answer: the message of the
 * google.rpc.Status the specification has it answer in protobuf, or the text as it came (OTLP/JSON, a gateway's
 * own text). An answer whose content type names no encoding is taken to be in the request's. Only the start of a
 * long answer is read: a Status cut there still gives the start of its message.
 */
export function refusalText(contentType: string, body: Buffer, requestEncoding: Encoding): string {
  const answer = namedEncoding(contentType) ?? requestEncoding;
  if (answer !== 'protobuf' || contentType.startsWith('text/')) return body.toString('utf8');
  return statusMessage(body) ?? statusMessageStart(body) ?? '';
}

/** Encodes a google.rpc.Status. */
export function encodeStatus(encoding: Encoding, code: number, message: string): Buffer {
  if (encoding === 'json') return Buffer.from(JSON.stringify({ code, message }));
  return Buffer.concat([Buffer.from([0x08, ...varint(code)]), lengthDelimited(2, Buffer.from(message, 'utf8'))]);
}
