/**
 * Differential fuzzing of the protobuf decoder against protobufjs: requests written field by field from the
 * OTLP logs schema, with what encoders never write (unknown fields of every wire type, fields out of order, a
 * non-repeated field sent twice, empty messages, 10-byte and negative varints, multi-byte UTF-8), decode to what
 * protobufjs decodes; with bytes cut, flipped or spliced, both agree or hookwatch refuses with a DecodeError
 * naming what protobufjs lets pass (a known field's wire type, an over-long varint). Seeded (collector/test/setup) and bounded.
 */
import fc from 'fast-check';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { ExportLogsServiceRequest } from '../../../bench/lib/otlp-schema.ts';
import { decodeLogsProto } from '../../src/otlp/decode-proto.ts';
import { DecodeError, type AnyValue, type Attributes, type LogsRequest } from '../../src/otlp/model.ts';
import { varint } from '../../src/otlp/proto-write.ts';

ExportLogsServiceRequest.root.resolveAll();

/** A small deterministic generator (xorshift32) seeded by fast-check, so every request replays from its seed. */
function prng(seed: number): (n: number) => number {
  let x = seed | 1;
  return (n) => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
}

function varint64(v: bigint): number[] {
  const out: number[] = [];
  let x = BigInt.asUintN(64, v);
  while (x >= 0x80n) {
    out.push(Number(x & 0x7fn) | 0x80);
    x >>= 7n;
  }
  out.push(Number(x));
  return out;
}
const tag = (field: number, wireType: number): number[] => varint(field * 8 + wireType);
const ld = (field: number, body: number[]): number[] => [...tag(field, 2), ...varint(body.length), ...body];

const STRINGS = ['', 'a', 'é', '日本語', '😀', '{[{["', 'hook_execution_complete', 'x'.repeat(200)];
const INTS = [0n, 1n, -1n, 300n, -(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n, -(2n ** 53n) - 1n];
const DOUBLES = [0, -0, 1.5, NaN, Infinity, -1e300];

/** Writes a random `type` message: each known field absent, once or (even when not repeated) twice, plus unknown fields, shuffled. */
function message(type: protobuf.Type, rnd: (n: number) => number, depth: number): number[] {
  if (depth > 6) return [];
  const parts: number[][] = [];
  for (const field of type.fieldsArray) {
    const n = field.repeated ? rnd(4) : [0, 0, 1, 2][rnd(4)] as number;
    for (let i = 0; i < n; i++) parts.push(fieldValue(field, rnd, depth));
  }
  for (let i = rnd(3); i > 0; i--) {
    const f = 13 + rnd(2000);
    const wireType = [0, 1, 2, 5][rnd(4)] as number;
    if (wireType === 0) parts.push([...tag(f, 0), ...varint64(INTS[rnd(INTS.length)] as bigint)]);
    else if (wireType === 1) parts.push([...tag(f, 1), 1, 2, 3, 4, 5, 6, 7, 8]);
    else if (wireType === 5) parts.push([...tag(f, 5), 1, 2, 3, 4]);
    else parts.push(ld(f, [...Buffer.from(STRINGS[rnd(STRINGS.length)] as string)]));
  }
  for (let i = parts.length - 1; i > 0; i--) {
    const j = rnd(i + 1);
    [parts[i], parts[j]] = [parts[j] as number[], parts[i] as number[]];
  }
  return parts.flat();
}

function fieldValue(field: protobuf.Field, rnd: (n: number) => number, depth: number): number[] {
  const f = field.id;
  if (field.resolvedType instanceof protobuf.Type) return ld(f, message(field.resolvedType, rnd, depth + 1));
  switch (field.type) {
    case 'string': return ld(f, [...Buffer.from(STRINGS[rnd(STRINGS.length)] as string)]);
    case 'bytes': return ld(f, rnd(2) ? [0, 0xff, 0x80] : []);
    case 'bool': return [...tag(f, 0), ...varint64([0n, 1n, 2n ** 63n, 2n][rnd(4)] as bigint)];
    case 'int64': return [...tag(f, 0), ...varint64(INTS[rnd(INTS.length)] as bigint)];
    case 'fixed64': return [...tag(f, 1), ...Array.from({ length: 8 }, () => rnd(256))];
    case 'fixed32': return [...tag(f, 5), 1, 0, 0, 0];
    case 'double': {
      const b = Buffer.alloc(8);
      b.writeDoubleLE(DOUBLES[rnd(DOUBLES.length)] as number);
      return [...tag(f, 1), ...b];
    }
    default: return [...tag(f, 0), ...varint(rnd(300))]; // int32, uint32
  }
}

interface PbValue { stringValue?: string; boolValue?: boolean; intValue?: string; doubleValue?: number; bytesValue?: Uint8Array; arrayValue?: { values?: PbValue[] }; kvlistValue?: { values?: PbKeyValue[] } }
interface PbKeyValue { key?: string; value?: PbValue }

/** protobufjs's decode in hookwatch's model (the model's rules: a later duplicate key wins, int64 a bigint past 2^53). */
function fromPb(v: PbValue | undefined): AnyValue {
  if (v === undefined) return null;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) {
    const b = BigInt(v.intValue);
    return b >= BigInt(Number.MIN_SAFE_INTEGER) && b <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : b;
  }
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.bytesValue !== undefined) return v.bytesValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(fromPb);
  if (v.kvlistValue !== undefined) return { kvlist: attrs(v.kvlistValue.values) };
  return null;
}
function attrs(kvs: PbKeyValue[] | undefined): Attributes {
  return new Map((kvs ?? []).map((kv) => [kv.key ?? '', fromPb(kv.value)]));
}
function protobufjsModel(bytes: Buffer): LogsRequest {
  type Pb = { resourceLogs?: { resource?: { attributes?: PbKeyValue[] }; scopeLogs?: { scope?: { name?: string; version?: string }; logRecords?: { timeUnixNano?: string; observedTimeUnixNano?: string; eventName?: string; body?: PbValue; attributes?: PbKeyValue[] }[] }[] }[] };
  const pb = ExportLogsServiceRequest.toObject(ExportLogsServiceRequest.decode(bytes), { longs: String }) as Pb;
  return {
    resourceLogs: (pb.resourceLogs ?? []).map((rl) => ({
      resource: attrs(rl.resource?.attributes),
      scopeLogs: (rl.scopeLogs ?? []).map((sl) => ({
        scope: { name: sl.scope?.name ?? '', version: sl.scope?.version ?? '' },
        logRecords: (sl.logRecords ?? []).map((r) => ({
          timeUnixNano: BigInt(r.timeUnixNano ?? 0),
          observedTimeUnixNano: BigInt(r.observedTimeUnixNano ?? 0),
          eventName: r.eventName ?? '',
          body: 'body' in r ? fromPb(r.body) : undefined,
          attributes: attrs(r.attributes),
        })),
      })),
    })),
  };
}

/** Values compared by content: Buffers as plain arrays, -0 and NaN kept apart from 0. */
function plain(v: unknown): unknown {
  if (v instanceof Uint8Array) return [...v];
  if (typeof v === 'number' && (Object.is(v, -0) || Number.isNaN(v))) return String(Object.is(v, -0) ? '-0' : v);
  if (v instanceof Map) return [...v].map(([k, x]) => [k, plain(x)]);
  if (Array.isArray(v)) return v.map(plain);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

type Outcome = { ok: LogsRequest } | { refused: Error };
function outcome(decode: () => LogsRequest): Outcome {
  try {
    return { ok: decode() };
  } catch (err) {
    return { refused: err as Error };
  }
}

/**
 * Both decoders agree; or only hookwatch refuses, with a DecodeError over what protobufjs lets pass: a known field
 * with another wire type (skipped by protobufjs), or a varint longer than 10 bytes (an overflow to other parsers).
 */
function expectAgreement(bytes: Buffer): void {
  const ours = outcome(() => decodeLogsProto(bytes));
  const theirs = outcome(() => protobufjsModel(bytes));
  if ('refused' in ours) {
    expect(ours.refused).toBeInstanceOf(DecodeError);
    if ('ok' in theirs) expect(ours.refused.message).toMatch(/wire type|varint longer than 10 bytes/);
    return;
  }
  if ('refused' in theirs) {
    // Invalid UTF-8 (a mutated string) is the one thing protobufjs refuses that hookwatch takes, as U+FFFD.
    if (!/utf-?8/i.test(theirs.refused.message)) expect.fail(`protobufjs refused (${theirs.refused.message}) what hookwatch decoded`);
    return;
  }
  expect(plain(ours.ok)).toEqual(plain(theirs.ok));
}

const requestBytes = fc.noShrink(fc.integer()).map((seed) => Buffer.from(message(ExportLogsServiceRequest, prng(seed), 0)));

describe('protobuf decoder against protobufjs', () => {
  it('decodes requests with unknown, reordered, repeated and empty fields to what protobufjs decodes', () => {
    fc.assert(fc.property(requestBytes, (bytes) => {
      expect(outcome(() => protobufjsModel(bytes))).toHaveProperty('ok');
      expectAgreement(bytes);
    }), { numRuns: 400 });
  });

  it('agrees with protobufjs on the same requests cut, flipped or spliced, or refuses them with a DecodeError', () => {
    const mutation = fc.record({ kind: fc.constantFrom('set', 'insert', 'cut', 'splice', 'repeat'), at: fc.nat(), to: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) });
    fc.assert(fc.property(requestBytes, fc.array(mutation, { minLength: 1, maxLength: 3 }), (body, mutations) => {
      let b = body;
      for (const m of mutations) {
        const n = Math.max(b.length, 1);
        const [lo, hi] = [Math.min(m.at % n, m.to % n), Math.max(m.at % n, m.to % n)];
        if (m.kind === 'set') b = Buffer.concat([b.subarray(0, m.at % n), Buffer.from([m.byte]), b.subarray((m.at % n) + 1)]);
        else if (m.kind === 'insert') b = Buffer.concat([b.subarray(0, m.at % n), Buffer.from([m.byte]), b.subarray(m.at % n)]);
        else if (m.kind === 'cut') b = b.subarray(0, m.at % n);
        else if (m.kind === 'splice') b = Buffer.concat([b.subarray(0, lo), b.subarray(hi)]);
        else b = Buffer.concat([b.subarray(0, hi), b.subarray(lo, hi), b.subarray(hi)]);
      }
      expectAgreement(b);
    }), { numRuns: 1500 });
  });
});
