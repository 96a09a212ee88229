/**
 * A large request is decoded in slices (decodeLogsProtoSteps, decodeLogsJsonSteps): the decoder pauses each time
 * what it decoded since the last pause reaches DECODE_SLICE_BYTES, within a record's attributes too (protobuf), so
 * the receivers can serve the event loop between slices. A Claude Code batch is one slice. Sliced or not, the
 * request decodes to the same model.
 */
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { batchTemplate, maxSizeRequest } from '../../../bench/lib/batch.ts';
import { runPaced, type Steps } from '../paced.ts';
import { fastest, leastStall, runSliced } from '../../test/support/steps.ts';
import { decodeLogsJson, decodeLogsJsonSteps } from './decode-json.ts';
import { decodeLogsProto, decodeLogsProtoSteps } from './decode-proto.ts';
import { DECODE_SLICE_BYTES, DECODED_BYTES, DecodeError, MAX_ANYVALUE_DEPTH, unbounded, type AnyValue, type DecodeBudget, type LogRecord, type LogsRequest, type ResourceLogs, type ScopeLogs } from './model.ts';
import { lengthDelimited, varint } from './proto-write.ts';

/** Past a slice's end the decoder finishes the attribute or record it is in: never more than a record's start and a few values. */
const OVERSHOOT = DECODED_BYTES.record + 8 * DECODED_BYTES.value;

/** `decode` in slices, each slice's size as what it decoded to. */
function sliced(decode: (b: DecodeBudget) => Steps<LogsRequest>): { value: LogsRequest; pauses: number; slices: number[]; bytes: number } {
  const budget = unbounded();
  return { ...runSliced(decode(budget), () => budget.bytes), bytes: budget.bytes };
}

/** Every slice but the last holds DECODE_SLICE_BYTES and at most OVERSHOOT more; the last no more. */
function expectSlicesBounded(r: { pauses: number; slices: number[]; bytes: number }): void {
  expect(r.pauses).toBeGreaterThanOrEqual(Math.floor(r.bytes / (DECODE_SLICE_BYTES + OVERSHOOT)));
  for (const s of r.slices.slice(0, -1)) {
    expect(s).toBeGreaterThanOrEqual(DECODE_SLICE_BYTES);
    expect(s).toBeLessThanOrEqual(DECODE_SLICE_BYTES + OVERSHOOT);
  }
  expect(r.slices.at(-1)).toBeLessThanOrEqual(DECODE_SLICE_BYTES + OVERSHOOT);
}

/**
 * One log record of `n` string attributes (keys k0000000, k0000001, ...), then the fields `tail`, written by hand:
 * protobufjs takes long.
 */
function oneRecordOfAttributes(n: number, tail: Buffer = Buffer.alloc(0)): Buffer {
  const one = lengthDelimited(6, Buffer.concat([lengthDelimited(1, Buffer.from('k0000000')), lengthDelimited(2, lengthDelimited(1, Buffer.from('v')))]));
  const digits = one.indexOf('0000000');
  const attrs = Buffer.alloc(n * one.length);
  for (let i = 0; i < n; i++) {
    one.copy(attrs, i * one.length);
    attrs.write(String(i).padStart(7, '0'), i * one.length + digits, 'latin1');
  }
  // ExportLogsServiceRequest.resource_logs > ResourceLogs.scope_logs > ScopeLogs.log_records
  return lengthDelimited(1, lengthDelimited(2, lengthDelimited(2, Buffer.concat([attrs, tail]))));
}

/** One log record of `n` event.name attributes, each `name` (the last one wins). */
function oneRecordOfEventNames(n: number, name: string): Buffer {
  const one = lengthDelimited(6, Buffer.concat([lengthDelimited(1, Buffer.from('event.name')), lengthDelimited(2, lengthDelimited(1, Buffer.from(name)))]));
  const attrs = Buffer.alloc(n * one.length);
  for (let i = 0; i < n; i++) one.copy(attrs, i * one.length);
  return lengthDelimited(1, lengthDelimited(2, lengthDelimited(2, attrs)));
}

/** The event names a decode keeps the attributes of, counting its look-ups in them (one per event.name string scanned). */
class CountedNames extends Set<string> {
  lookups = 0;
  override has(name: string): boolean {
    this.lookups++;
    return super.has(name);
  }
}

describe('a maximum-size request is decoded in slices', () => {
  it('protobuf: some 70,000 records pause after every slice, to the same model as decoded straight through', () => {
    const { body, records } = maxSizeRequest('protobuf');
    const r = sliced((b) => decodeLogsProtoSteps(body, b));
    expect(r.pauses).toBeGreaterThan(20);
    expectSlicesBounded(r);
    expect(r.value.resourceLogs.flatMap((rl) => rl.scopeLogs.flatMap((sl) => sl.logRecords))).toHaveLength(records);
    expect(isDeepStrictEqual(r.value, decodeLogsProto(body))).toBe(true);
  });

  it('protobuf: one record of a million attributes pauses within the record', () => {
    const body = oneRecordOfAttributes(1_000_000);
    const r = sliced((b) => decodeLogsProtoSteps(body, b));
    expect(r.pauses).toBeGreaterThan(20);
    expectSlicesBounded(r);
    const attrs = r.value.resourceLogs[0]?.scopeLogs[0]?.logRecords[0]?.attributes;
    expect(attrs?.size).toBe(1_000_000);
    expect(attrs?.get('k0999999')).toBe('v');
    expect(isDeepStrictEqual(r.value, decodeLogsProto(body))).toBe(true);
  });

  it('protobuf: one record of a million attributes, not named what is kept, is not scanned whole before the first pause', () => {
    // Each attribute an event.name the hook stage does not read: a scan for the kept names looks every one up.
    const body = oneRecordOfEventNames(1_000_000, 'api_request');
    const names = new CountedNames(['hook_execution_start']);
    const r = runSliced(decodeLogsProtoSteps(body, unbounded(), names), () => names.lookups);
    expect(r.pauses).toBeGreaterThan(20);
    // No slice looks up more names than a slice decodes attributes.
    expect(Math.max(...r.slices)).toBeLessThanOrEqual(DECODE_SLICE_BYTES / DECODED_BYTES.value);
    expect(names.lookups).toBe(1_000_000);
    // Read through, its attributes left out, as decoded straight through.
    expect(r.value.resourceLogs[0]?.scopeLogs[0]?.logRecords[0]?.attributes.size).toBe(0);
    expect(isDeepStrictEqual(r.value, decodeLogsProto(body, unbounded(), new Set(['hook_execution_start'])))).toBe(true);
  });

  it('protobuf: one record of a million attributes, named by its last, keeps them all, scanned in slices', () => {
    const named = lengthDelimited(6, Buffer.concat([lengthDelimited(1, Buffer.from('event.name')), lengthDelimited(2, lengthDelimited(1, Buffer.from('hook_execution_start')))]));
    const body = oneRecordOfAttributes(1_000_000, named);
    const names = new CountedNames(['hook_execution_start']);
    const budget = unbounded();
    // Look-ups: one per event.name string the scan reads; the last attribute is the only one.
    const r = runSliced(decodeLogsProtoSteps(body, budget, names), () => budget.bytes);
    expect(names.lookups).toBe(1);
    // The scan pauses after each slice of fields, before the decode of the record (its resource's, scope's and own
    // record charged first) starts, then the decode after each slice.
    const scanPauses = Math.ceil(1_000_001 / (DECODE_SLICE_BYTES / DECODED_BYTES.value)) - 1;
    expect(r.slices.slice(0, scanPauses)).toEqual([3 * DECODED_BYTES.record, ...new Array<number>(scanPauses - 1).fill(0)]);
    expect(r.slices[scanPauses]).toBe(DECODE_SLICE_BYTES - 3 * DECODED_BYTES.record);
    expect(r.slices.slice(scanPauses + 1, -1).every((s) => s === DECODE_SLICE_BYTES)).toBe(true);
    expect(r.pauses).toBe(scanPauses + Math.floor(budget.bytes / DECODE_SLICE_BYTES));
    const attrs = r.value.resourceLogs[0]?.scopeLogs[0]?.logRecords[0]?.attributes;
    expect(attrs?.size).toBe(1_000_001);
    expect(attrs?.get('k0999999')).toBe('v');
    expect(attrs?.get('event.name')).toBe('hook_execution_start');
    expect(isDeepStrictEqual(r.value, decodeLogsProto(body))).toBe(true);
  });

  it('protobuf: one record of a million attributes, named by its last, holds the event loop for a slice, scan and decode alike', async () => {
    // Scanned in slices for its name first, then, named, decoded with its attributes kept: both in slices.
    const named = lengthDelimited(6, Buffer.concat([lengthDelimited(1, Buffer.from('event.name')), lengthDelimited(2, lengthDelimited(1, Buffer.from('hook_execution_complete')))]));
    const body = oneRecordOfAttributes(1_000_000, named);
    const names = new Set(['hook_execution_start', 'hook_execution_complete']);
    expect(decodeLogsProto(body, unbounded(), names).resourceLogs[0]?.scopeLogs[0]?.logRecords[0]?.attributes.size).toBe(1_000_001);
    const straightMs = fastest(() => decodeLogsProto(body, unbounded(), names), 2);
    const stall = await leastStall(() => runPaced(decodeLogsProtoSteps(body, unbounded(), names)), 2);
    expect(stall, `held ${stall.toFixed(1)} ms of ${straightMs.toFixed(1)} ms`).toBeLessThan(straightMs / 3);
  }, 120_000);

  it('JSON: the records after the parse pause after every slice, to the same model as decoded straight through', () => {
    const { body, records } = maxSizeRequest('json');
    const text = body.toString('utf8');
    const r = sliced((b) => decodeLogsJsonSteps(text, b));
    expect(r.pauses).toBeGreaterThan(10);
    expectSlicesBounded(r);
    expect(r.value.resourceLogs.flatMap((rl) => rl.scopeLogs.flatMap((sl) => sl.logRecords))).toHaveLength(records);
    expect(isDeepStrictEqual(r.value, decodeLogsJson(text))).toBe(true);
  });
});

describe('a Claude Code batch (512 records)', () => {
  it('is decoded without a pause, protobuf and JSON', () => {
    const proto = batchTemplate(512, 'protobuf').bytes;
    const json = batchTemplate(512, 'json').bytes.toString('utf8');
    expect(sliced((b) => decodeLogsProtoSteps(proto, b)).pauses).toBe(0);
    expect(sliced((b) => decodeLogsJsonSteps(json, b)).pauses).toBe(0);
  });
});

/** A protobuf AnyValue's fields, and the model it decodes to. */
interface Value {
  pb: Buffer;
  model: AnyValue;
}

const intValue = (i: number): Value => ({ pb: Buffer.from([0x18, ...varint(i)]), model: i });
const stringValue = (s: string): Value => ({ pb: lengthDelimited(1, Buffer.from(s)), model: s });
const doubleValue = (d: number): Value => {
  const pb = Buffer.alloc(9);
  pb[0] = 0x21;
  pb.writeDoubleLE(d, 1);
  return { pb, model: d };
};

/** An array_value of `values`. */
function arrayValue(values: Value[]): Value {
  return { pb: lengthDelimited(5, Buffer.concat(values.map((v) => lengthDelimited(1, v.pb)))), model: values.map((v) => v.model) };
}

/** A kvlist_value of `entries`, written as a protobuf encoder writes them (key, then value). */
function kvlistValue(entries: [string, Value][]): Value {
  const pb = Buffer.concat(entries.map(([k, v]) => lengthDelimited(1, Buffer.concat([lengthDelimited(1, Buffer.from(k)), lengthDelimited(2, v.pb)]))));
  return { pb: lengthDelimited(6, pb), model: { kvlist: new Map(entries.map(([k, v]) => [k, v.model])) } };
}

/** The ints 0 to n - 1. */
function ints(n: number): Value[] {
  return Array.from({ length: n }, (_, i) => intValue(i));
}

/** `n` entries, every other one a plain key and string (read straight off the bytes), the others doubles. */
function entries(n: number): [string, Value][] {
  return Array.from({ length: n }, (_, i): [string, Value] => [`k${i}`, i % 2 ? doubleValue(i / 2) : stringValue(`v${i % 1000}`)]);
}

/**
 * Arrays nested `levels` deep from the value of depth 0 (each array's values one level deeper, the deepest ones at
 * `levels`, MAX_ANYVALUE_DEPTH at most), each array `width` ints with the next array amid them.
 */
function nestedArrays(levels: number, width: number): Value {
  let inner: Value = intValue(levels);
  for (let level = levels - 1; level >= 0; level--) {
    const values = ints(width);
    values.splice(width / 2, 0, inner);
    inner = arrayValue(values);
  }
  return inner;
}

/** A request of one resource, scope and log record, with `value` in the place `where` says. */
function requestWith(where: 'attribute' | 'body' | 'resource' | 'scope', value: Value): { body: Buffer; model: LogsRequest } {
  const attr = lengthDelimited(2, value.pb);
  const kv = Buffer.concat([lengthDelimited(1, Buffer.from('k')), attr]);
  const record = where === 'attribute' ? lengthDelimited(6, kv) : where === 'body' ? lengthDelimited(5, value.pb) : Buffer.alloc(0);
  const scope = lengthDelimited(1, where === 'scope' ? lengthDelimited(3, kv) : Buffer.alloc(0));
  const resource = where === 'resource' ? lengthDelimited(1, lengthDelimited(1, kv)) : Buffer.alloc(0);
  const body = lengthDelimited(1, Buffer.concat([resource, lengthDelimited(2, Buffer.concat([scope, lengthDelimited(2, record)]))]));
  const rec: LogRecord = {
    timeUnixNano: 0n,
    observedTimeUnixNano: 0n,
    eventName: '',
    body: where === 'body' ? value.model : undefined,
    attributes: new Map(where === 'attribute' ? [['k', value.model]] : []),
  };
  return {
    body,
    model: { resourceLogs: [{ resource: new Map(where === 'resource' ? [['k', value.model]] : []), scopeLogs: [{ scope: { name: '', version: '' }, logRecords: [rec] }] }] },
  };
}

/** `model` as a decode keeping only the attributes of records named KEPT_NAMES has it (its one record is not). */
function unnamed(model: LogsRequest): LogsRequest {
  const rl = model.resourceLogs[0] as ResourceLogs;
  const sl = rl.scopeLogs[0] as ScopeLogs;
  return { resourceLogs: [{ ...rl, scopeLogs: [{ ...sl, logRecords: sl.logRecords.map((r) => ({ ...r, attributes: new Map() })) }] }] };
}

const KEPT_NAMES: ReadonlySet<string> = new Set(['hook_execution_start', 'hook_execution_complete']);

describe('one attribute or body holding a huge array or kvlist is decoded in slices', () => {
  // Each as an attribute (kept, or read and checked only), a body, a resource's or a scope's attribute.
  const shapes: { name: string; where: 'attribute' | 'body' | 'resource' | 'scope'; value: (scale: number) => Value }[] = [
    { name: 'an attribute whose value is an array of a million ints', where: 'attribute', value: (scale) => arrayValue(ints(1_000_000 / scale)) },
    { name: 'a body that is a kvlist of 500,000 entries', where: 'body', value: (scale) => kvlistValue(entries(500_000 / scale)) },
    { name: `an attribute of arrays nested ${MAX_ANYVALUE_DEPTH} deep, each of 10,000 ints`, where: 'attribute', value: (scale) => nestedArrays(MAX_ANYVALUE_DEPTH, 10_000 / scale) },
    { name: 'a resource attribute that is a kvlist of 500,000 entries', where: 'resource', value: (scale) => kvlistValue(entries(500_000 / scale)) },
    { name: 'a scope attribute that is an array of a million ints', where: 'scope', value: (scale) => arrayValue(ints(1_000_000 / scale)) },
  ];

  for (const { name, where, value } of shapes) {
    const kepts = where === 'attribute' ? [undefined, KEPT_NAMES] : [undefined];

    it(`${name}: pauses within the value, each slice at most a slice and a few values`, () => {
      const { body } = requestWith(where, value(1));
      for (const kept of kepts) {
        const r = sliced((b) => decodeLogsProtoSteps(body, b, kept));
        expect(r.bytes).toBeGreaterThan(10 * DECODE_SLICE_BYTES);
        expect(r.pauses).toBeGreaterThanOrEqual(Math.floor(r.bytes / (DECODE_SLICE_BYTES + OVERSHOOT)));
        for (const s of r.slices) expect(s).toBeLessThanOrEqual(DECODE_SLICE_BYTES + OVERSHOOT);
      }
    }, 60_000);

    it(`${name}: holds the event loop for a small part of the decode`, async () => {
      const { body } = requestWith(where, value(1));
      for (const kept of kepts) {
        const straightMs = fastest(() => decodeLogsProto(body, unbounded(), kept), 2);
        // Six runs: a slice may take a collection of the whole heap, a map's regrowth, or a wait for the CPU with it.
        const stall = await leastStall(() => runPaced(decodeLogsProtoSteps(body, unbounded(), kept)), 6);
        expect(stall, `${kept ? 'scanned for names' : 'all kept'}: held ${stall.toFixed(1)} ms of ${straightMs.toFixed(1)} ms`).toBeLessThan(straightMs / 3);
      }
    }, 120_000);

    it(`${name}, a tenth of it: decoded in slices, two at once, to the model it encodes and as decoded straight through`, async () => {
      const { body, model } = requestWith(where, value(10));
      for (const kept of kepts) {
        const want = kept ? unnamed(model) : model;
        const straight = decodeLogsProto(body, unbounded(), kept);
        expect(isDeepStrictEqual(straight, want)).toBe(true);
        // Two decodes paused within their values at once, alternating slices: neither sees the other's.
        const budgets = [unbounded(), unbounded()];
        const [a, b] = await Promise.all(budgets.map((budget) => runPaced(decodeLogsProtoSteps(body, budget, kept))));
        expect(isDeepStrictEqual(a, want)).toBe(true);
        expect(isDeepStrictEqual(b, want)).toBe(true);
        const charged = unbounded();
        decodeLogsProto(body, charged, kept);
        expect(budgets.map((x) => x.bytes)).toEqual([charged.bytes, charged.bytes]);
      }
    }, 60_000);
  }

  it('arrays nested one level past the limit are refused in slices as straight through, after as many charges', () => {
    const { body } = requestWith('attribute', nestedArrays(MAX_ANYVALUE_DEPTH + 1, 1_000));
    const message = `AnyValue nested deeper than ${MAX_ANYVALUE_DEPTH} levels`;
    expect(() => decodeLogsProto(body)).toThrow(message);
    for (const kept of [undefined, KEPT_NAMES]) {
      const budget = unbounded();
      let pauses = 0;
      const steps = decodeLogsProtoSteps(body, budget, kept);
      expect(() => {
        while (!steps.next().done) pauses++;
      }).toThrow(new DecodeError(message));
      // Refused at the deepest value: after every array above it was read halfway, in slices.
      expect(pauses).toBeGreaterThan(0);
      expect(budget.bytes).toBe(3 * DECODED_BYTES.record + DECODED_BYTES.value * (2 + MAX_ANYVALUE_DEPTH * 501));
    }
  });
});
