/**
 * OTLP logs as hookwatch decodes them: only what hook extraction needs, independent of the wire encoding.
 * Field numbers and JSON names follow opentelemetry-proto (common.proto, resource.proto, logs.proto).
 */

/** An OTLP AnyValue. intValue becomes a number when it fits 2^53, else a bigint; doubleValue a number. */
export type AnyValue = string | boolean | number | bigint | Uint8Array | AnyValue[] | KvList | null;

/** An OTLP KeyValueList (kvlistValue). */
export interface KvList {
  kvlist: Map<string, AnyValue>;
}

/** Attributes by key; a later duplicate key wins, as in the Go collector's pdata. */
export type Attributes = Map<string, AnyValue>;

export interface LogRecord {
  /** Nanoseconds since the epoch; 0n when unset. */
  timeUnixNano: bigint;
  observedTimeUnixNano: bigint;
  /** LogRecord.event_name (field 12); '' when unset. */
  eventName: string;
  body: AnyValue | undefined;
  attributes: Attributes;
}

export interface ScopeLogs {
  scope: { name: string; version: string };
  logRecords: LogRecord[];
}

export interface ResourceLogs {
  resource: Attributes;
  scopeLogs: ScopeLogs[];
}

export interface LogsRequest {
  resourceLogs: ResourceLogs[];
}

/** Bad input: the request cannot be decoded. Maps to HTTP 400 / gRPC INVALID_ARGUMENT. */
export class DecodeError extends Error {
  override name = 'DecodeError';
}

/** Deepest AnyValue nesting accepted (arrays and kvlists). Deeper requests are rejected as bad data. */
export const MAX_ANYVALUE_DEPTH = 100;

