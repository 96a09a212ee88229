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

interface Field {
  num: number;
  wire: number;
  value: number | Buffer;
}

/**
 * Reads the top-level fields of a message; undefined when it is not valid protobuf. `cut`: the buffer is the
 * start of a longer message: the fields whole in it, and a last length-delimited one that runs past its end
 * with the bytes there are, instead of undefined; a last field of another kind cut short is left out.
 */
export function fields(buf: Buffer, cut = false): Field[] | undefined {
  const out: Field[] = [];
  let pos = 0;
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
  while (pos < buf.length) {
    const tag = readVarint();
    // A varint that runs past the end: cut there, or not protobuf.
    if (tag === undefined) return cut && pos >= buf.length ? out : undefined;
    const num = Math.floor(tag / 8);
    const wire = tag & 7;
    if (wire === 0) {
      const v = readVarint();
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
  const parts = fields(start, true) ?? [];
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

/** The RetryInfo delay in a serialized google.rpc.Status, in ms; undefined when there is none. */
export function retryDelayFromStatus(status: Buffer): number | undefined {
  for (const detail of fields(status) ?? []) {
    if (detail.num !== 3 || !Buffer.isBuffer(detail.value)) continue;
    const any = fields(detail.value) ?? [];
    const type = any.find((f) => f.num === 1);
    const value = any.find((f) => f.num === 2);
    if (!type || !Buffer.isBuffer(type.value) || type.value.toString() !== RETRY_INFO_TYPE || !value || !Buffer.isBuffer(value.value)) continue;
    const delay = (fields(value.value) ?? []).find((f) => f.num === 1);
    if (!delay || !Buffer.isBuffer(delay.value)) return 0;
    const parts = fields(delay.value) ?? [];
    const seconds = parts.find((f) => f.num === 1)?.value;
    const nanos = parts.find((f) => f.num === 2)?.value;
    return (typeof seconds === 'number' ? seconds * 1000 : 0) + (typeof nanos === 'number' ? nanos / 1e6 : 0);
  }
  return undefined;
}
