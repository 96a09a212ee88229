/**
 * Response bodies in the request's encoding: ExportLogsServiceResponse (with partial_success) and
 * google.rpc.Status for errors (opentelemetry-proto specification, "OTLP/HTTP Response").
 */

import { lengthDelimited, varint } from './proto-write.ts';

export type Encoding = 'protobuf' | 'json';

/** google.rpc.Code values used by hookwatch. */
export const RpcCode = {
  OK: 0,
  INVALID_ARGUMENT: 3,
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

/** Encodes a google.rpc.Status. */
export function encodeStatus(encoding: Encoding, code: number, message: string): Buffer {
  if (encoding === 'json') return Buffer.from(JSON.stringify({ code, message }));
  return Buffer.concat([Buffer.from([0x08, ...varint(code)]), lengthDelimited(2, Buffer.from(message, 'utf8'))]);
}
