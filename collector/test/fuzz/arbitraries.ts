/**
 * fast-check generators of OTLP logs requests in the OTLP/JSON shape (encodable with bench/lib/otlp-schema.ts),
 * plus an independent oracle of what hookwatch's decoders must return for them.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import { DecodeError, type AnyValue, type Attributes } from '../../src/otlp/model.ts';

/** An OTLP/JSON AnyValue object, e.g. `{ stringValue: "x" }`. */
export type JsonAnyValue = Record<string, unknown>;
/** An OTLP/JSON KeyValue. */
export interface JsonKeyValue {
  key: string;
  value: JsonAnyValue;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Any string, lone surrogates included (they cannot survive UTF-8 and must not break a decoder). */
export const anyString = fc.string({ unit: 'binary', maxLength: 40 });

/** AnyValue trees up to a few levels deep, every variant of the oneof. */
export const { value: anyValueArb, kv: keyValueArb } = fc.letrec<{ value: JsonAnyValue; kv: JsonKeyValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.record({ stringValue: anyString }),
    fc.record({ boolValue: fc.boolean() }),
    fc.record({ intValue: fc.bigInt({ min: INT64_MIN, max: INT64_MAX }).map(String) }),
    fc.record({ doubleValue: fc.double() }),
    fc.record({ arrayValue: fc.record({ values: fc.array(tie('value'), { maxLength: 4 }) }) }),
    fc.record({ kvlistValue: fc.record({ values: fc.array(tie('kv'), { maxLength: 4 }) }) }),
    fc.record({ bytesValue: fc.uint8Array({ maxLength: 12 }).map((b) => Buffer.from(b).toString('base64')) }),
  ),
  kv: fc.record({ key: anyString, value: tie('value') }),
}));

const attributesArb = fc.array(keyValueArb, { maxLength: 6 });

/** A whole ExportLogsServiceRequest (resource, scopes, records with time, body, attributes, event name). */
export const requestArb = fc.record({
  resourceLogs: fc.array(
    fc.record({
      resource: fc.record({ attributes: attributesArb }),
      scopeLogs: fc.array(
        fc.record({
          scope: fc.record({ name: anyString, version: anyString }),
          logRecords: fc.array(
            fc.record({
              timeUnixNano: fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }).map(String),
              observedTimeUnixNano: fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }).map(String),
              eventName: anyString,
              body: anyValueArb,
              attributes: attributesArb,
            }),
            { maxLength: 3 },
          ),
        }),
        { maxLength: 2 },
      ),
    }),
    { maxLength: 2 },
  ),
});

/** The request as OTLP/JSON text (protojson: int64 as strings, non-finite doubles as "NaN"/"Infinity", -0 as "-0"). */
export function toProtoJson(req: unknown): string {
  return JSON.stringify(req, (_k, v: unknown) => {
    if (typeof v === 'number' && !Number.isFinite(v)) return Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity';
    // JSON.stringify writes -0 as 0; a decimal string keeps the sign (protojson accepts doubles as strings).
    if (Object.is(v, -0)) return '-0';
    return v;
  });
}

/** What a string becomes after a UTF-8 round trip (lone surrogates turn into U+FFFD). */
export function viaUtf8(s: string): string {
  return Buffer.from(s, 'utf8').toString('utf8');
}

/** The AnyValue hookwatch must decode from a generated one. */
export function expectedValue(v: JsonAnyValue, strings: (s: string) => string): AnyValue {
  if ('stringValue' in v) return strings(v['stringValue'] as string);
  if ('boolValue' in v) return v['boolValue'] as boolean;
  if ('intValue' in v) {
    const b = BigInt(v['intValue'] as string);
    return b >= BigInt(Number.MIN_SAFE_INTEGER) && b <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : b;
  }
  if ('doubleValue' in v) return v['doubleValue'] as number;
  if ('arrayValue' in v) return ((v['arrayValue'] as { values: JsonAnyValue[] }).values).map((x) => expectedValue(x, strings));
  if ('kvlistValue' in v) return { kvlist: expectedAttributes((v['kvlistValue'] as { values: JsonKeyValue[] }).values, strings) };
  if ('bytesValue' in v) return new Uint8Array(Buffer.from(v['bytesValue'] as string, 'base64'));
  return null;
}

/** Attributes by key; a later duplicate wins, as in the Go collector. */
export function expectedAttributes(kvs: readonly JsonKeyValue[], strings: (s: string) => string): Attributes {
  const m: Attributes = new Map();
  for (const kv of kvs) m.set(strings(kv.key), expectedValue(kv.value, strings));
  return m;
}

/** Counts decoded nodes (records, attributes, values) to bound memory against input size. */
export function countNodes(v: unknown): number {
  if (v instanceof Map) {
    let n = v.size;
    for (const x of v.values()) n += countNodes(x);
    return n;
  }
  if (Array.isArray(v)) return v.reduce((n: number, x) => n + 1 + countNodes(x), 0);
  if (v && typeof v === 'object' && !(v instanceof Uint8Array)) return Object.values(v).reduce((n: number, x) => n + countNodes(x), 0);
  return 0;
}

/**
 * Runs one step of a property over hostile input: its result, or undefined when it refuses the input with
 * DecodeError (a 400). Any other exception, or taking maxMs or more (a hang in the making), fails the property.
 */
export function resultOrDecodeError<T>(what: string, run: () => T, maxMs: number): T | undefined {
  const t0 = performance.now();
  try {
    return run();
  } catch (err) {
    if (!(err instanceof DecodeError)) throw new Error(`${what} threw ${(err as Error).name}: ${(err as Error).message}`, { cause: err });
    return undefined;
  } finally {
    expect(performance.now() - t0).toBeLessThan(maxMs);
  }
}
