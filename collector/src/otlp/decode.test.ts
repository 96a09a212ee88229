/**
 * The hand-written decoders against a protobuf library: random ExportLogsServiceRequests encoded by protobufjs
 * decode to the same model from protobuf, from snake_case JSON and from lowerCamelCase JSON; malformed input is a
 * DecodeError, never another exception.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { runPaced } from '../paced.ts';
import { decodeLogsJson } from './decode-json.ts';
import { decodeLogsProto, decodeLogsProtoSteps } from './decode-proto.ts';
import { DECODED_BYTES, DecodeBudget, DecodeError, DecodeLimitError, MAX_ANYVALUE_DEPTH, unbounded, type AnyValue, type LogRecord, type LogsRequest } from './model.ts';
import { protoType } from '../../test/support/otlp-proto.ts';
import { lengthDelimited } from './proto-write.ts';

const Request = protoType('ExportLogsServiceRequest');

/** A generated value: the protobufjs object to encode and the model value hookwatch should decode. */
interface Gen<T> {
  pb: Record<string, unknown>;
  model: T;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function intModel(v: bigint): number | bigint {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

const { anyValue } = fc.letrec<{ anyValue: Gen<AnyValue> }>((tie) => ({
  anyValue: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant<Gen<AnyValue>>({ pb: {}, model: null }),
    fc.string({ unit: 'grapheme', maxLength: 20 }).map((s) => ({ pb: { string_value: s }, model: s })),
    fc.boolean().map((b) => ({ pb: { bool_value: b }, model: b })),
    fc.oneof(fc.bigInt({ min: INT64_MIN, max: INT64_MAX }), fc.bigInt({ min: -1000n, max: 1000n })).map((v) => ({ pb: { int_value: v.toString() }, model: intModel(v) })),
    fc.double().map((d) => ({ pb: { double_value: d }, model: d })),
    fc.uint8Array({ maxLength: 12 }).map((b) => ({ pb: { bytes_value: b }, model: b })),
    fc.array(tie('anyValue'), { maxLength: 3 }).map((vs) => ({ pb: { array_value: { values: vs.map((v) => v.pb) } }, model: vs.map((v) => v.model) })),
    fc.array(fc.tuple(fc.string({ maxLength: 6 }), tie('anyValue')), { maxLength: 3 }).map((kvs) => ({
      pb: { kvlist_value: { values: kvs.map(([key, v]) => ({ key, value: v.pb })) } },
      model: { kvlist: new Map(kvs.map(([k, v]) => [k, v.model])) },
    })),
  ),
}));

const attributes = fc.array(fc.tuple(fc.string({ maxLength: 8 }), anyValue), { maxLength: 4 }).map((kvs) => ({
  pb: kvs.map(([key, v]) => ({ key, value: v.pb })),
  model: new Map(kvs.map(([k, v]) => [k, v.model])),
}));

const nanos = fc.oneof(fc.constant(0n), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.bigInt({ min: 1_700_000_000_000_000_000n, max: 1_900_000_000_000_000_000n }));

const logRecord = fc.record({
  time: nanos,
  observed: nanos,
  eventName: fc.string({ maxLength: 10 }),
  body: fc.option(anyValue, { nil: undefined }),
  attrs: attributes,
  severity: fc.integer({ min: 0, max: 24 }),
  traceId: fc.uint8Array({ minLength: 16, maxLength: 16 }),
}).map((r) => ({
  pb: {
    time_unix_nano: r.time.toString(),
    observed_time_unix_nano: r.observed.toString(),
    event_name: r.eventName,
    severity_number: r.severity,
    severity_text: 'INFO',
    trace_id: r.traceId,
    flags: 1,
    ...(r.body ? { body: r.body.pb } : {}),
    attributes: r.attrs.pb,
  },
  model: { timeUnixNano: r.time, observedTimeUnixNano: r.observed, eventName: r.eventName, body: r.body?.model, attributes: r.attrs.model },
}));

const request = fc.array(
  fc.record({
    resource: attributes,
    scopes: fc.array(fc.record({ name: fc.string({ maxLength: 8 }), version: fc.string({ maxLength: 8 }), records: fc.array(logRecord, { maxLength: 3 }) }), { maxLength: 2 }),
  }),
  { maxLength: 2 },
).map((rls): Gen<LogsRequest> => ({
  pb: {
    resource_logs: rls.map((rl) => ({
      resource: { attributes: rl.resource.pb, dropped_attributes_count: 1 },
      schema_url: 'https://opentelemetry.io/schemas/1.0.0',
      scope_logs: rl.scopes.map((s) => ({ scope: { name: s.name, version: s.version }, log_records: s.records.map((r) => r.pb) })),
    })),
  },
  model: {
    resourceLogs: rls.map((rl) => ({
      resource: rl.resource.model,
      scopeLogs: rl.scopes.map((s) => ({ scope: { name: s.name, version: s.version }, logRecords: s.records.map((r) => r.model) })),
    })),
  },
}));

function encode(pb: Record<string, unknown>): Buffer {
  return Buffer.from(Request.encode(Request.fromObject(pb)).finish());
}

/** protojson of the request as protobufjs writes it (snake_case names, int64 and fixed64 as strings, bytes base64). */
function toJson(pb: Record<string, unknown>): unknown {
  return Request.toObject(Request.fromObject(pb), { longs: String, bytes: String, json: true, defaults: false });
}

function camel(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(camel);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()), camel(x)]));
}

/** Uint8Array subarrays of a Buffer compare unequal to plain Uint8Arrays; normalise before comparing. */
function plain(v: unknown): unknown {
  if (v instanceof Uint8Array) return [...v];
  if (v instanceof Map) return [...v.entries()].map(([k, x]) => [k, plain(x)]);
  if (Array.isArray(v)) return v.map(plain);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

/** JSON text has no negative zero (JSON.stringify(-0) is "0"), so a double -0 sent as protojson arrives as 0. */
function jsonModel(v: unknown): unknown {
  if (Object.is(v, -0)) return 0;
  if (v instanceof Uint8Array) return v;
  if (v instanceof Map) return new Map([...v.entries()].map(([k, x]) => [k, jsonModel(x)]));
  if (Array.isArray(v)) return v.map(jsonModel);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, jsonModel(x)]));
  return v;
}

describe('decodeLogsProto', () => {
  it('decodes whatever protobufjs encodes to the same model', () => {
    fc.assert(fc.property(request, (g) => {
      expect(plain(decodeLogsProto(encode(g.pb)))).toEqual(plain(g.model));
    }), { numRuns: 300 });
  });

  it('a double -0 keeps its sign in protobuf and arrives as 0 through JSON text', () => {
    const pb = { resource_logs: [{ scope_logs: [{ log_records: [{ body: { double_value: -0 } }] }] }] };
    expect(Object.is(decodeLogsProto(encode(pb)).resourceLogs[0]?.scopeLogs[0]?.logRecords[0]?.body, -0)).toBe(true);
    expect(Object.is(decodeLogsJson(JSON.stringify(toJson(pb))).resourceLogs[0]?.scopeLogs[0]?.logRecords[0]?.body, 0)).toBe(true);
  });

  it('a bool is true exactly when its 64-bit varint is non-zero, also in 10-byte encodings', () => {
    const field = (tag: number, body: number[]): number[] => [tag, body.length, ...body];
    const boolAttr = (varint: number[]): AnyValue | undefined => {
      const kv = [...field(0x0a, [0x6b]), ...field(0x12, [0x10, ...varint])];
      const body = Buffer.from(field(0x0a, field(0x12, field(0x12, field(0x32, kv)))));
      return decodeLogsProto(body).resourceLogs[0]?.scopeLogs[0]?.logRecords[0]?.attributes.get('k');
    };
    const nine = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80];
    expect(boolAttr([0x01])).toBe(true);
    expect(boolAttr([0x00])).toBe(false);
    expect(boolAttr([...nine, 0x01])).toBe(true); // bit 63
    expect(boolAttr([...nine, 0x00])).toBe(false); // zero, padded
    expect(boolAttr([...nine, 0x02])).toBe(false); // bit 64: outside an int64
  });

  it('strings that repeat, share a length, differ in one byte or outnumber the string cache decode exactly', () => {
    // Thousands of distinct strings of one length in one body: many share a slot of the decoder's cache, and
    // neighbours differ in their last byte; keys repeat with the same length and different bytes.
    const values = Array.from({ length: 5000 }, (_, i) => `v${String(i).padStart(4, '0')}`);
    const keys = ['aa', 'ab', 'ba', 'é', 'éx', 'xé'];
    const attrs = values.map((v, i) => [
      [keys[i % keys.length] as string, v],
      ['same', values[(i * 7) % values.length] as string],
      ['flip', i % 2 ? 'x' : 'y'],
    ]);
    const body = encode({ resource_logs: [{ scope_logs: [{ log_records: attrs.map((a) => ({ attributes: a.map(([key, v]) => ({ key, value: { string_value: v } })) })) }] }] });
    const records = decodeLogsProto(body).resourceLogs[0]?.scopeLogs[0]?.logRecords ?? [];
    expect(records.map((r) => [...r.attributes])).toEqual(attrs);
  });

  it('a message field sent more than once merges, as protobuf parsers merge it, instead of the last replacing the first', () => {
    const ld = (field: number, ...parts: Buffer[]): Buffer => lengthDelimited(field, Buffer.concat(parts));
    const str = (field: number, s: string): Buffer => ld(field, Buffer.from(s));
    const int = (n: number): Buffer => Buffer.from([0x18, n]);
    const record = (...fields: Buffer[]) => ld(1, ld(2, ld(2, ...fields)));
    const attr = (...values: Buffer[]) => record(ld(6, str(1, 'k'), ...values.map((v) => ld(2, v))));
    const cases: [Buffer, AnyValue | undefined][] = [
      // KeyValue.value twice: an empty second value leaves the first; another member replaces it.
      [attr(str(1, '5'), Buffer.alloc(0)), '5'],
      [attr(str(1, '5'), int(7)), 7],
      // LogRecord.body twice, and array_value / kvlist_value twice in one AnyValue: the lists concatenate.
      [record(ld(5, ld(5, ld(1, str(1, 'a')))), ld(5, ld(5, ld(1, str(1, 'b'))))), ['a', 'b']],
      [record(ld(5, ld(5, ld(1, str(1, 'a'))), ld(5, ld(1, str(1, 'b'))))), ['a', 'b']],
      [record(ld(5, ld(6, ld(1, str(1, 'x'), ld(2, int(1)))), ld(6, ld(1, str(1, 'y'), ld(2, int(2)))))), { kvlist: new Map([['x', 1], ['y', 2]]) }],
      [record(ld(5, str(1, 'x')), ld(5)), 'x'],
    ];
    for (const [body, want] of cases) {
      const rec = decodeLogsProto(body).resourceLogs[0]?.scopeLogs[0]?.logRecords[0];
      expect(rec?.attributes.size ? rec.attributes.get('k') : rec?.body).toEqual(want);
      // protobufjs reads the same bytes the same way.
      const pb = Request.toObject(Request.decode(body), { longs: String }) as { resource_logs: { scope_logs: { log_records: { body?: unknown; attributes?: { value: unknown }[] }[] }[] }[] };
      const pbRec = pb.resource_logs[0]?.scope_logs[0]?.log_records[0];
      expect(plain(decodeLogsJson(JSON.stringify({ resource_logs: [{ scope_logs: [{ log_records: [pbRec] }] }] })).resourceLogs[0]?.scopeLogs[0]?.logRecords[0])).toEqual(plain(rec));
    }
  });

  it('refuses a malformed InstrumentationScope.attributes, which protobufjs refuses, though it keeps none of them', () => {
    const scopeAttrs = (kv: Buffer): Buffer => lengthDelimited(1, lengthDelimited(2, lengthDelimited(1, lengthDelimited(3, kv))));
    const bad = scopeAttrs(Buffer.from([0x00, 0x01])); // field number 0
    expect(() => Request.decode(bad)).toThrow();
    expect(() => decodeLogsProto(bad)).toThrow(DecodeError);
    const good = scopeAttrs(Buffer.concat([lengthDelimited(1, Buffer.from('k')), lengthDelimited(2, lengthDelimited(1, Buffer.from('v')))]));
    expect(decodeLogsProto(good).resourceLogs[0]?.scopeLogs[0]?.scope).toEqual({ name: '', version: '' });
  });

  it('an empty body is an empty request', () => {
    expect(decodeLogsProto(new Uint8Array(0))).toEqual({ resourceLogs: [] });
  });

  it('negative intValue (10-byte varint) and values past 2^53 keep their exact value', () => {
    const body = encode({ resource_logs: [{ scope_logs: [{ log_records: [{ attributes: [
      { key: 'neg', value: { int_value: '-1' } },
      { key: 'min', value: { int_value: INT64_MIN.toString() } },
      { key: 'big', value: { int_value: '9007199254740993' } },
    ] }] }] }] });
    const attrs = decodeLogsProto(body).resourceLogs[0]?.scopeLogs[0]?.logRecords[0]?.attributes;
    expect(attrs?.get('neg')).toBe(-1);
    expect(attrs?.get('min')).toBe(INT64_MIN);
    expect(attrs?.get('big')).toBe(9007199254740993n);
  });

  it('an intValue of every varint length, at both ends of it, keeps its exact value', () => {
    const values = [0n, -1n, INT64_MIN, INT64_MAX];
    for (let bits = 7n; bits < 63n; bits += 7n) values.push(2n ** bits - 1n, 2n ** bits, -(2n ** bits));
    const body = encode({ resource_logs: [{ scope_logs: [{ log_records: values.map((v) => ({ attributes: [{ key: 'n', value: { int_value: v.toString() } }] })) }] }] });
    const got = decodeLogsProto(body).resourceLogs[0]?.scopeLogs[0]?.logRecords.map((r) => r.attributes.get('n'));
    expect(got).toEqual(values.map(intModel));
  });

  it('truncated or corrupted input is a DecodeError, never another exception', () => {
    fc.assert(fc.property(request, fc.nat(), fc.integer({ min: 0, max: 255 }), (g, at, byte) => {
      const body = encode(g.pb);
      if (body.length === 0) return;
      const cut = body.subarray(0, at % body.length);
      const flipped = Buffer.from(body);
      flipped[at % body.length] = byte;
      for (const b of [cut, flipped]) {
        try {
          decodeLogsProto(b);
        } catch (err) {
          expect(err).toBeInstanceOf(DecodeError);
        }
      }
    }), { numRuns: 300 });
  });
});

describe('decodeLogsProto of values holding lists of a hundred thousand entries, or lists nested to the limit', () => {
  // Large enough that the decode pauses within one attribute or body (readNested) many times, at every depth.
  const member = (i: number): Gen<AnyValue> => {
    switch (i % 6) {
      case 0: return { pb: { string_value: `s${i % 700}` }, model: `s${i % 700}` };
      case 1: return { pb: { int_value: String(-i) }, model: -i };
      case 2: return { pb: { double_value: i / 4 }, model: i / 4 };
      case 3: return { pb: { bool_value: i % 4 === 3 }, model: i % 4 === 3 };
      case 4: return { pb: { bytes_value: Buffer.from([i & 0xff]) }, model: Buffer.from([i & 0xff]) };
      default: return { pb: { array_value: { values: [{ int_value: String(i) }, {}] } }, model: [i, null] };
    }
  };
  const list = (n: number): Gen<AnyValue> => {
    const vs = Array.from({ length: n }, (_, i) => member(i));
    return { pb: { array_value: { values: vs.map((v) => v.pb) } }, model: vs.map((v) => v.model) };
  };
  const map = (n: number): Gen<AnyValue> => {
    const vs = Array.from({ length: n }, (_, i) => member(i));
    return {
      pb: { kvlist_value: { values: vs.map((v, i) => ({ key: `k${i}`, value: v.pb })) } },
      model: { kvlist: new Map(vs.map((v, i) => [`k${i}`, v.model])) },
    };
  };
  /**
   * Lists `levels` deep below a value of depth 0, each of `width` members and the next list (a kvlist every third
   * level). A member may be a list of its own: the deepest values are one level deeper than `levels`.
   */
  const nested = (levels: number, width: number): Gen<AnyValue> => {
    let inner: Gen<AnyValue> = { pb: { string_value: 'deepest' }, model: 'deepest' };
    for (let level = levels - 1; level >= 0; level--) {
      const outer = level % 3 === 2 ? map(width) : list(width);
      if (level % 3 === 2) {
        (outer.pb.kvlist_value as { values: unknown[] }).values.splice(width / 2, 0, { key: 'next', value: inner.pb });
        const entries = [...(outer.model as { kvlist: Map<string, AnyValue> }).kvlist];
        entries.splice(width / 2, 0, ['next', inner.model]);
        outer.model = { kvlist: new Map(entries) };
      } else {
        (outer.pb.array_value as { values: unknown[] }).values.splice(width / 2, 0, inner.pb);
        (outer.model as AnyValue[]).splice(width / 2, 0, inner.model);
      }
      inner = outer;
    }
    return inner;
  };

  it('decode as protobufjs encodes them, in slices as straight through, and a corrupted one is a DecodeError', async () => {
    const [bodyValue, attr, deep, res] = [map(60_000), list(100_000), nested(MAX_ANYVALUE_DEPTH - 1, 600), map(40_000)];
    const pb = { resource_logs: [{
      resource: { attributes: [{ key: 'r', value: res.pb }] },
      scope_logs: [{ log_records: [{ body: bodyValue.pb, event_name: 'e', attributes: [{ key: 'a', value: attr.pb }, { key: 'session.id', value: { string_value: 's' } }, { key: 'n', value: deep.pb }] }] }],
    }] };
    const model: LogsRequest = { resourceLogs: [{
      resource: new Map([['r', res.model]]),
      scopeLogs: [{ scope: { name: '', version: '' }, logRecords: [{
        timeUnixNano: 0n, observedTimeUnixNano: 0n, eventName: 'e', body: bodyValue.model,
        attributes: new Map([['a', attr.model], ['session.id', 's'], ['n', deep.model]]),
      }] }],
    }] };
    // protobufjs counts an AnyValue and the list in it as two levels of its own limit (100 by default).
    const limit = protobuf.util.recursionLimit;
    protobuf.util.recursionLimit = 4 * MAX_ANYVALUE_DEPTH;
    let body: Buffer;
    try {
      body = encode(pb);
    } finally {
      protobuf.util.recursionLimit = limit;
    }
    expect(plain(decodeLogsProto(body))).toEqual(plain(model));
    let pauses = 0;
    const sliced = await runPaced(decodeLogsProtoSteps(body), () => { pauses++; });
    expect(pauses).toBeGreaterThan(5);
    expect(plain(sliced)).toEqual(plain(model));
    fc.assert(fc.property(fc.nat(), fc.integer({ min: 0, max: 255 }), (at, byte) => {
      const flipped = Buffer.from(body);
      flipped[at % body.length] = byte;
      for (const b of [body.subarray(0, at % body.length), flipped]) {
        try {
          decodeLogsProto(b);
        } catch (err) {
          expect(err).toBeInstanceOf(DecodeError);
        }
      }
    }), { numRuns: 30 });
  }, 120_000);
});

describe('decodeLogsProto keeping the attributes of named records only', () => {
  const KEPT: ReadonlySet<string> = new Set(['keep', 'also']);
  const name = fc.constantFrom('keep', 'also', 'drop', 'keepx', '');
  /** event.name as a string, another kind of value, or sent twice. */
  const eventNameAttrs = fc.oneof(
    fc.constant([]),
    name.map((n) => [{ key: 'event.name', value: { string_value: n } }]),
    fc.constant([{ key: 'event.name', value: { int_value: '7' } }]),
    fc.tuple(name, name).map(([a, b]) => [{ key: 'event.name', value: { string_value: a } }, { key: 'x', value: { bool_value: true } }, { key: 'event.name', value: { string_value: b } }]),
    fc.tuple(name, name).map(([a, b]) => [{ key: 'event.name', value: { string_value: a } }, { key: 'event.name', value: { kvlist_value: { values: [{ key: 'k', value: { string_value: b } }] } } }]),
  );
  const namedRecord = fc.record({
    attrs: attributes,
    eventNameAttrs,
    at: fc.nat(),
    eventName: name,
    body: fc.option(fc.oneof(name.map((n) => ({ string_value: n })), anyValue.map((v) => v.pb)), { nil: undefined }),
  }).map((r) => {
    const attrs = [...r.attrs.pb];
    attrs.splice(r.at % (attrs.length + 1), 0, ...r.eventNameAttrs);
    return { event_name: r.eventName, attributes: attrs, ...(r.body ? { body: r.body } : {}) };
  });
  const namedRequest = fc.array(fc.record({ resource: attributes, records: fc.array(namedRecord, { maxLength: 4 }) }), { minLength: 1, maxLength: 2 })
    .map((rls) => ({ resource_logs: rls.map((rl) => ({ resource: { attributes: rl.resource.pb }, scope_logs: [{ log_records: rl.records }] })) }));

  type SentRecord = { event_name: string; body?: { string_value?: string }; attributes: { key: string; value: { string_value?: string } }[] };
  /** Whether a sent record has one of the names as any event.name string, its event_name or its body string. */
  function mayBeNamed(r: SentRecord): boolean {
    const has = (s: string | undefined): boolean => s !== undefined && KEPT.has(s);
    return r.attributes.some((a) => a.key === 'event.name' && has(a.value.string_value)) || has(r.event_name) || has(r.body?.string_value);
  }

  /** What the hook stage matches a record by: its event.name, else its event_name, else its body (and each alone). */
  function named(rec: LogRecord): boolean {
    const byAttr = rec.attributes.get('event.name');
    return (typeof byAttr === 'string' && KEPT.has(byAttr)) || KEPT.has(rec.eventName) || (typeof rec.body === 'string' && KEPT.has(rec.body));
  }

  it('a named record decodes as without the names, any other without its attributes; all else alike', () => {
    fc.assert(fc.property(namedRequest, (pb) => {
      const body = encode(pb);
      const whole = decodeLogsProto(body);
      const some = decodeLogsProto(body, unbounded(), KEPT);
      expect(plain(some.resourceLogs.map((rl) => rl.resource))).toEqual(plain(whole.resourceLogs.map((rl) => rl.resource)));
      const records = (req: LogsRequest): LogRecord[] => req.resourceLogs.flatMap((rl) => rl.scopeLogs.flatMap((sl) => sl.logRecords));
      const [all, kept] = [records(whole), records(some)];
      const sent = pb.resource_logs.flatMap((rl) => rl.scope_logs.flatMap((sl) => sl.log_records));
      expect(kept).toHaveLength(all.length);
      all.forEach((rec, i) => {
        const got = kept[i] as LogRecord;
        expect(plain({ ...got, attributes: undefined })).toEqual(plain({ ...rec, attributes: undefined }));
        // Every record a reader could match keeps its attributes; one with no string of those names where a
        // reader looks keeps none.
        if (named(rec)) expect(plain(got.attributes)).toEqual(plain(rec.attributes));
        expect(plain(got.attributes)).toEqual(mayBeNamed(sent[i] as SentRecord) ? plain(rec.attributes) : []);
      });
    }), { numRuns: 300 });
  });

  it('a Claude Code batch keeps the attributes of its hook records and drops the others', () => {
    const records = (e: string) => ({ event_name: '', body: { string_value: `claude_code.${e}` }, attributes: [
      { key: 'session.id', value: { string_value: 's' } }, { key: 'event.name', value: { string_value: e } }, { key: 'event.sequence', value: { int_value: '3' } },
    ] });
    const body = encode({ resource_logs: [{ scope_logs: [{ log_records: ['user_prompt', 'hook_execution_start', 'api_request'].map(records) }] }] });
    const got = decodeLogsProto(body, unbounded(), new Set(['hook_execution_start'])).resourceLogs[0]?.scopeLogs[0]?.logRecords ?? [];
    expect(got.map((r) => [...r.attributes])).toEqual([[], [['session.id', 's'], ['event.name', 'hook_execution_start'], ['event.sequence', 3]], []]);
  });

  it('refuses a bool or int attribute whose varint is longer than 10 bytes, in a record kept or not', () => {
    const field = (tag: number, body: number[]): number[] => [tag, body.length, ...body];
    const ten = Array.from({ length: 10 }, () => 0x80);
    for (const member of [0x10, 0x18]) {
      // Eleven bytes; ten that all go on.
      for (const varint of [[...ten, 0x01], [...ten.slice(1), 0x81]]) {
        const kv = [...field(0x0a, [0x6b]), ...field(0x12, [member, ...varint])];
        const body = Buffer.from(field(0x0a, field(0x12, field(0x12, field(0x32, kv)))));
        for (const kept of [undefined, KEPT]) expect(() => decodeLogsProto(body, unbounded(), kept)).toThrow('malformed protobuf: varint longer than 10 bytes');
      }
    }
  });

  it('refuses the same malformed input with the same error, and charges the same budget, whatever it keeps', () => {
    const outcome = (b: Buffer, kept?: ReadonlySet<string>, max = Infinity): string => {
      const budget = new DecodeBudget(max);
      try {
        decodeLogsProto(b, budget, kept);
        return `ok ${budget.bytes}`;
      } catch (err) {
        return `${(err as Error).name}: ${(err as Error).message} at ${budget.bytes}`;
      }
    };
    fc.assert(fc.property(namedRequest, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.nat({ max: 4000 }), (pb, at, byte, max) => {
      const body = encode(pb);
      if (body.length === 0) return;
      const flipped = Buffer.from(body);
      flipped[at % body.length] = byte;
      for (const b of [body, body.subarray(0, at % body.length), flipped]) {
        expect(outcome(b, KEPT)).toBe(outcome(b));
        expect(outcome(b, KEPT, max)).toBe(outcome(b, undefined, max));
      }
    }), { numRuns: 500 });
  });
});

describe('decodeLogsJson', () => {
  it('decodes snake_case protojson to the same model as protobuf', () => {
    fc.assert(fc.property(request, (g) => {
      expect(plain(decodeLogsJson(JSON.stringify(toJson(g.pb))))).toEqual(plain(jsonModel(g.model)));
    }), { numRuns: 200 });
  });

  it('decodes lowerCamelCase protojson to the same model as protobuf', () => {
    fc.assert(fc.property(request, (g) => {
      expect(plain(decodeLogsJson(JSON.stringify(camel(toJson(g.pb)))))).toEqual(plain(jsonModel(g.model)));
    }), { numRuns: 200 });
  });
});

describe('decodeLogsJson parse-tree bound', () => {
  // Room for 1,000 parse-tree nodes; texts over 2,000 characters are counted.
  const budget = (): DecodeBudget => new DecodeBudget(1000 * DECODED_BYTES.jsonNode);
  const withValue = (value: string, extra = ''): string => JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ attributes: [{ key: 'k', value: { stringValue: value } }] }] }] }] }).replace(/}$/, `${extra}}`);

  it('braces and brackets inside strings, escaped quotes included, are not nodes', () => {
    for (const value of ['{'.repeat(5000), '[['.repeat(3000), '\\"{['.repeat(2000), '\\'.repeat(3000) + '{'.repeat(3000)]) {
      const attrs = decodeLogsJson(withValue(value), budget()).resourceLogs[0]?.scopeLogs[0]?.logRecords[0]?.attributes;
      expect(attrs?.get('k')).toBe(value);
    }
  });

  it('still refuses a text with more nodes than the bound, after strings that end in escaped backslashes', () => {
    const nodes = `,"x":[${Array(1200).fill('[]').join(',')}]`;
    expect(() => decodeLogsJson(withValue('\\', nodes), budget())).toThrow(DecodeLimitError);
    expect(() => decodeLogsJson(withValue('a\\"b\\\\', nodes), budget())).toThrow(DecodeLimitError);
    // An unterminated string is malformed JSON, not a reason to stop at the limit.
    expect(() => decodeLogsJson(`{"x":"${'{'.repeat(5000)}`, budget())).toThrow(DecodeError);
  });
});

describe('decodeLogsJson integers written as JSON numbers', () => {
  const rec = (r: object) => decodeLogsJson(JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [r] }] }] })).resourceLogs[0]?.scopeLogs[0]?.logRecords[0];
  const int = (n: number) => rec({ attributes: [{ key: 'k', value: { intValue: n } }] })?.attributes.get('k');

  it('an intValue past 2^53 is a bigint, as from a string or protobuf, and one past the int64 range is refused', () => {
    expect(int(2 ** 60)).toBe(2n ** 60n);
    expect(int(-(2 ** 62))).toBe(-(2n ** 62n));
    expect(int(42)).toBe(42);
    expect(() => int(1e20)).toThrow(/intValue is out of the int64 range/);
    expect(() => int(-1e19)).toThrow(/intValue is out of the int64 range/);
  });

  it('a timestamp past 2^53 keeps the uint64 range: past 2^63 is taken, past 2^64 refused', () => {
    expect(rec({ timeUnixNano: 1.8e19 })?.timeUnixNano).toBe(BigInt(1.8e19));
    expect(rec({ observedTimeUnixNano: 2 ** 60 })?.observedTimeUnixNano).toBe(2n ** 60n);
    expect(() => rec({ timeUnixNano: 1e25 })).toThrow(/timeUnixNano is out of the uint64 range/);
  });
});

describe('decodeLogsJson null values', () => {
  const record = (value: unknown): string => JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ attributes: [{ key: 'k', value }] }] }] }] });
  const decoded = (value: unknown): AnyValue | undefined => decodeLogsJson(record(value)).resourceLogs[0]?.scopeLogs[0]?.logRecords[0]?.attributes.get('k');

  it('a null oneof member is unset (protojson), so the member that is set wins', () => {
    // Serializers that write every member of the oneof, the unset ones as null.
    expect(decoded({ stringValue: null, boolValue: null, intValue: 5, doubleValue: null, arrayValue: null, kvlistValue: null, bytesValue: null })).toBe(5);
    expect(decoded({ stringValue: null, intValue: null, doubleValue: 2.5 })).toBe(2.5);
  });

  it('an AnyValue whose members are all null is empty (unknown), not an error', () => {
    expect(decoded({ intValue: null })).toBeNull();
    expect(decoded({ boolValue: null, doubleValue: null })).toBeNull();
  });
});

describe('real Claude Code 2.1.332 requests', () => {
  it('the protobuf bodies decode to the same model as their OTLP/JSON rendering', () => {
    const dir = fileURLToPath(new URL('../../testdata/claude-code-2.1.332/run2-httpprotobuf/', import.meta.url));
    const files = readdirSync(dir).filter((f) => f.endsWith('-http-logs.body.bin'));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const fromProto = decodeLogsProto(readFileSync(join(dir, f)));
      const fromJson = decodeLogsJson(readFileSync(join(dir, f.replace('.body.bin', '.decoded.json')), 'utf8'));
      expect(plain(fromProto), f).toEqual(plain(fromJson));
    }
  });
});
