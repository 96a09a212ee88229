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


/**
 * What a decoded request holds in memory, estimated as it is decoded (measured on Node 24: a log record with its
 * attribute map about 256 bytes, an attribute or array item about 53, charged 64, a node of a JSON parse tree
 * about 64). A protobuf log record can be two bytes on the wire, so without this a small body decodes to
 * gigabytes.
 */
export const DECODED_BYTES = { record: 256, value: 64, jsonNode: 64 } as const;

/** The decode of a request went past its DecodeBudget. Not a DecodeError: the body is valid, only too big. */
export class DecodeLimitError extends Error {
  override name = 'DecodeLimitError';
  readonly limitBytes: number;
  /** The share (0-1] of the input read when the limit was hit, when the decoder knows it. */
  readonly readShare: number | undefined;
  constructor(limitBytes: number, readShare?: number) {
    super(`the request decodes to more than ${limitBytes} bytes in memory`);
    this.limitBytes = limitBytes;
    this.readShare = readShare;
  }
}

/**
 * How much a decode does between two pauses, measured as what it decodes to (DECODED_BYTES): about 1,500
 * Claude Code records, some 10 ms. A 512-record batch decodes to less and is decoded without a pause.
 */
export const DECODE_SLICE_BYTES = 2 * 1024 * 1024;

/** The memory one decode may take (DECODED_BYTES each element); past `maxBytes` it throws DecodeLimitError. */
export class DecodeBudget {
  bytes = 0;
  readonly maxBytes: number;
  private nextPause = DECODE_SLICE_BYTES;
  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  /** Whether a slice of decoding (DECODE_SLICE_BYTES) was done since the last pause: the decoder pauses now. */
  pauseDue(): boolean {
    if (this.bytes < this.nextPause) return false;
    this.nextPause = this.bytes + DECODE_SLICE_BYTES;
    return true;
  }

  /** Counts `bytes` more; `at` of `of`: how far into its input the decoder is (DecodeLimitError.readShare). */
  charge(bytes: number, at?: number, of?: number): void {
    this.bytes += bytes;
    if (this.bytes > this.maxBytes) throw new DecodeLimitError(this.maxBytes, at !== undefined && of ? Math.max(at, 1) / of : undefined);
  }
}

/** For decodes with no bound of their own (tests, tools reading their own files). */
export function unbounded(): DecodeBudget {
  return new DecodeBudget(Infinity);
}
