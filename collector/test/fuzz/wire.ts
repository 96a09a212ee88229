/** Hand-built protobuf pieces for hostile requests too large or too odd to build with an encoder. */
import { lengthDelimited, varint as protoVarint } from '../../src/otlp/proto-write.ts';

/** A protobuf varint. */
export function varint(n: number): Buffer {
  return Buffer.from(protoVarint(n));
}

/** A length-delimited field. */
export const field = lengthDelimited;

/** AnyValue{string_value} as bytes, from raw bytes (so invalid UTF-8 can be sent). */
export function stringValue(bytes: Buffer): Buffer {
  return field(1, bytes);
}

/** KeyValue{key, value: AnyValue{string_value}}. */
export function kv(key: string | Buffer, value: string | Buffer): Buffer {
  return Buffer.concat([field(1, Buffer.from(key)), field(2, stringValue(Buffer.from(value)))]);
}

/** An ExportLogsServiceRequest with one resource and one scope holding the given encoded LogRecords. */
export function request(records: readonly Buffer[], resourceAttrs: readonly Buffer[] = []): Buffer {
  const resource = Buffer.concat(resourceAttrs.map((a) => field(1, a)));
  const scopeLogs = Buffer.concat(records.map((r) => field(2, r)));
  return field(1, Buffer.concat([field(1, resource), field(2, scopeLogs)]));
}

/** A LogRecord with encoded KeyValue attributes and optionally an encoded AnyValue body. */
export function logRecord(attrs: readonly Buffer[], body?: Buffer): Buffer {
  return Buffer.concat([...(body ? [field(5, body)] : []), ...attrs.map((a) => field(6, a))]);
}

/**
 * An AnyValue nested `depth` arrays deep ({array_value: {values: [{array_value: ...}]}}), built by computing
 * every level's length first, so 10,001 levels cost one pass instead of 10,001 copies.
 */
export function nestedArrays(depth: number): Buffer {
  const anyLens: number[] = [0];
  const arrLens: number[] = [0];
  for (let k = 1; k <= depth; k++) {
    const inner = anyLens[k - 1] as number;
    const arr = 1 + varint(inner).length + inner;
    arrLens.push(arr);
    anyLens.push(1 + varint(arr).length + arr);
  }
  const parts: Buffer[] = [];
  for (let k = depth; k >= 1; k--) {
    parts.push(Buffer.from([0x2a]), varint(arrLens[k] as number), Buffer.from([0x0a]), varint(anyLens[k - 1] as number));
  }
  return Buffer.concat(parts);
}

/**
 * `count` LogRecord.attributes fields `{key: "k<i>", value: {string_value: "v"}}`, written straight into one
 * buffer (building a million small Buffers and concatenating them is far slower than the decode under test).
 */
export function manyAttributes(count: number): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const key = `k${i}`;
    // KeyValue: 0x0a len key, 0x12 len AnyValue(0x0a 0x01 'v'); the whole wrapped as LogRecord field 6.
    const kvLen = 2 + key.length + 2 + 3;
    parts.push(Buffer.from([0x32, kvLen, 0x0a, key.length]), Buffer.from(key, 'latin1'), Buffer.from([0x12, 3, 0x0a, 1, 0x76]));
  }
  return Buffer.concat(parts);
}
