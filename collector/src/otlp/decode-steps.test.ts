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
import { DECODE_SLICE_BYTES, DECODED_BYTES, unbounded, type DecodeBudget, type LogsRequest } from './model.ts';
import { lengthDelimited } from './proto-write.ts';

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
