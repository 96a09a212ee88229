/**
 * google.rpc.Status with a google.rpc.RetryInfo detail, as carried in the gRPC trailer `grpc-status-details-bin`.
 * OTLP/gRPC (opentelemetry-proto specification, "Failures") tells a client to wait RetryInfo.retry_delay before
 * retrying an UNAVAILABLE or RESOURCE_EXHAUSTED answer. Hand-written from the field numbers in
 * google/rpc/status.proto, error_details.proto and protobuf/any.proto, duration.proto.
 */

import { lengthDelimited, varintField } from './proto-write.ts';

/** The trailer that holds a serialized google.rpc.Status. */
export const STATUS_DETAILS_KEY = 'grpc-status-details-bin';

const RETRY_INFO_TYPE = 'type.googleapis.com/google.rpc.RetryInfo';

const field = lengthDelimited;

/** Encodes google.rpc.Status{code, message, details: [Any(RetryInfo{retry_delay})]}. */
export function encodeRetryStatus(code: number, message: string, retryDelayMs: number): Buffer {
  const seconds = Math.floor(retryDelayMs / 1000);
  const nanos = Math.round((retryDelayMs % 1000) * 1e6);
  const duration = Buffer.concat([seconds ? varintField(1, seconds) : Buffer.alloc(0), nanos ? varintField(2, nanos) : Buffer.alloc(0)]);
  const retryInfo = field(1, duration);
  const any = Buffer.concat([field(1, Buffer.from(RETRY_INFO_TYPE)), field(2, retryInfo)]);
  return Buffer.concat([varintField(1, code), field(2, Buffer.from(message, 'utf8')), field(3, any)]);
}

interface Field<Varint = number> {
  num: number;
  wire: number;
  value: Varint | Buffer;
}

/**
 * How fields() reads. `cut`: the buffer is the start of a longer message: the fields whole in it, and a last
 * length-delimited one that runs past its end with the bytes there are, instead of undefined; a last field of
 * another kind cut short is left out. `int64`: varint fields are read as signed 64-bit integers (int64, and int32,
 * which is sign-extended), exactly, as bigint: read as a number, the largest int64 and -1 would both round near
 * 2^63 and 2^64.
 */
interface FieldsOptions {
  cut?: boolean;
  int64?: boolean;
}

/** Reads the top-level fields of a message (see FieldsOptions); undefined when it is not valid protobuf. */
export function fields(buf: Buffer, opts?: FieldsOptions & { int64?: false }): Field[] | undefined;
export function fields(buf: Buffer, opts: FieldsOptions & { int64: true }): Field<bigint>[] | undefined;
export function fields(buf: Buffer, opts: FieldsOptions = {}): Field<number | bigint>[] | undefined {
  const cut = opts.cut === true;
  const out: Field<number | bigint>[] = [];
  let pos = 0;
  // A varint of at most 10 bytes, its 7-bit groups little-endian; undefined when it runs past the end.
  const readVarint = (): number | undefined => {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10 && pos < buf.length; i++) {
      const b = buf[pos++] as number;
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return result;
      mul *= 128;
    }
    return undefined;
  };
  // The same varint, exactly, as a signed 64-bit integer.
  const readInt64 = (): bigint | undefined => {
    let result = 0n;
    for (let shift = 0n; shift < 70n && pos < buf.length; shift += 7n) {
      const b = buf[pos++] as number;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return BigInt.asIntN(64, result);
    }
    return undefined;
  };
  while (pos < buf.length) {
    const tag = readVarint();
    // A varint that runs past the end: cut there, or not protobuf.
    if (tag === undefined) return cut && pos >= buf.length ? out : undefined;
    // A tag past 2^63 (negative as an int64) names no field: not protobuf.
    if (tag >= 2 ** 63) return undefined;
    const num = Math.floor(tag / 8);
    const wire = tag & 7;
    if (wire === 0) {
      const v = opts.int64 === true ? readInt64() : readVarint();
      if (v === undefined) return cut && pos >= buf.length ? out : undefined;
      out.push({ num, wire, value: v });
    } else if (wire === 2) {
      const len = readVarint();
      if (cut && len === undefined && pos >= buf.length) return out;
      if (cut && len !== undefined && pos + len > buf.length) {
        out.push({ num, wire, value: buf.subarray(pos) });
        return out;
      }
      if (len === undefined || pos + len > buf.length) return undefined;
      out.push({ num, wire, value: buf.subarray(pos, pos + len) });
      pos += len;
    } else if (wire === 1) {
      pos += 8;
    } else if (wire === 5) {
      pos += 4;
    } else {
      return undefined;
    }
  }
  return pos === buf.length || cut ? out : undefined;
}

/** The message of a serialized google.rpc.Status; undefined when it has none or is not one. */
export function statusMessage(status: Buffer): string | undefined {
  const message = (fields(status) ?? []).find((f) => f.num === 2)?.value;
  return Buffer.isBuffer(message) ? message.toString('utf8') : undefined;
}

/**
 * The message of a google.rpc.Status of which only the start was read (an answer is read up to a bound), as far
 * as it goes; undefined when that start holds none. A message the cut runs through ends at its last whitespace,
 * with an ellipsis: a key it split is not shown in part (a scrubber finds only whole keys).
 */
export function statusMessageStart(start: Buffer): string | undefined {
  const parts = fields(start, { cut: true }) ?? [];
  const index = parts.findIndex((f) => f.num === 2 && f.wire === 2);
  const message = parts[index]?.value;
  if (!Buffer.isBuffer(message)) return undefined;
  // A character whose bytes the cut split is left out rather than shown as U+FFFD.
  const text = new TextDecoder('utf-8').decode(message, { stream: true });
  // Whole, and the cut came after it.
  if (index < parts.length - 1 || message.byteOffset + message.length < start.byteOffset + start.length) return text;
  const end = text.search(/\s\S*$/);
  return end > 0 ? `${text.slice(0, end)} …` : undefined;
}

/**
 * The RetryInfo delay in a serialized google.rpc.Status, in ms; undefined when there is no RetryInfo. 0 when the
 * RetryInfo holds no delay to wait: none, zero, negative (a negative int64 is a ten-byte varint, which read as
 * unsigned would be some 10^19 seconds), or not a valid google.protobuf.Duration (nanos past a second, seconds
 * and nanos of opposite signs). The OpenTelemetry Collector does the same: only a positive delay is a floor
 * under the sender's own backoff. A large delay is returned as it is; the caller caps it.
 */
export function retryDelayFromStatus(status: Buffer): number | undefined {
  for (const detail of fields(status) ?? []) {
    if (detail.num !== 3 || !Buffer.isBuffer(detail.value)) continue;
    const any = fields(detail.value) ?? [];
    const type = any.find((f) => f.num === 1);
    const value = any.find((f) => f.num === 2);
    if (!type || !Buffer.isBuffer(type.value) || type.value.toString() !== RETRY_INFO_TYPE || !value || !Buffer.isBuffer(value.value)) continue;
    const delay = (fields(value.value) ?? []).find((f) => f.num === 1);
    if (!delay || !Buffer.isBuffer(delay.value)) return 0;
    // The last of a field given twice counts, as protobuf reads a scalar.
    const varints = new Map((fields(delay.value, { int64: true }) ?? []).flatMap((f) => (typeof f.value === 'bigint' ? [[f.num, f.value] as const] : [])));
    const seconds = varints.get(1) ?? 0n;
    const nanos = varints.get(2) ?? 0n;
    if (seconds < 0n || nanos < 0n || nanos > 999_999_999n) return 0;
    return Number(seconds) * 1000 + Number(nanos) / 1e6;
  }
  return undefined;
}
