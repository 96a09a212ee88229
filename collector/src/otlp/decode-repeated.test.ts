/**
 * A protobuf field may occur any number of times: a scalar one (a string_value, a key, an int_value) takes its last
 * value, a message one merges them all. A hostile request of one maximum size can repeat one field a million
 * times where the decoder charges nothing (inside one AnyValue or KeyValue, or a log record's, scope's or
 * resource's own fields). Such repeats cost the decoder no more than fields it skips, and are read in slices
 * like the attributes a DecodeBudget charges, so the event loop is never held for the whole body.
 */
import { describe, expect, it } from 'vitest';
import { runPaced } from '../paced.ts';
import { fastest, leastCpu, leastStall } from '../../test/support/steps.ts';
import { decodeLogsProto, decodeLogsProtoSteps } from './decode-proto.ts';
import { unbounded, type LogRecord, type LogsRequest } from './model.ts';
import { lengthDelimited as field } from './proto-write.ts';

const N = 1_000_000;
/** The event names the hook stage keeps the attributes of (the names a decode scans records for). */
const KEPT = new Set(['hook_execution_start', 'hook_execution_complete']);

/** `n` copies of `unit` in one buffer, copy i with its bytes at `at` set to two letters counting i (so no two nearby are equal). */
function repeated(unit: readonly number[], n: number, at = -1): Buffer {
  const out = Buffer.alloc(unit.length * n);
  const one = Buffer.from(unit);
  for (let i = 0; i < n; i++) {
    one.copy(out, i * one.length);
    if (at >= 0) {
      out[i * one.length + at] = 0x41 + (i % 58);
      out[i * one.length + at + 1] = 0x41 + (Math.floor(i / 58) % 58);
    }
  }
  return out;
}

/** The two letters `repeated` writes into copy i. */
function letters(i: number): string {
  return String.fromCharCode(0x41 + (i % 58), 0x41 + (Math.floor(i / 58) % 58));
}

/** A request of one resource, scope and log record, the record's fields `record`. */
function oneRecord(record: Buffer): Buffer {
  return field(1, field(2, field(2, record)));
}

/** A record of one attribute `key` whose AnyValue's fields are `value`. */
function oneAttribute(key: string, value: Buffer): Buffer {
  return oneRecord(field(6, Buffer.concat([field(1, Buffer.from(key)), field(2, value)])));
}

function onlyRecord(req: LogsRequest): LogRecord {
  const rec = req.resourceLogs[0]?.scopeLogs[0]?.logRecords[0];
  if (rec === undefined) throw new Error('no log record decoded');
  return rec;
}

/** Tag bytes: field 15, the number no OTLP message here has, so a decoder skips it. */
const UNKNOWN_LEN = 0x7a;
const UNKNOWN_VARINT = 0x78;
/** The bytes of a string of 100, after the two letters `repeated` writes. */
const LONG = new Array<number>(100).fill(0x78);

describe('a scalar field repeated a million times costs no more than a million fields skipped', () => {
  // Each hostile body next to the same bytes under an unknown field number, which the decoder only skips: the
  // repeats may be read, not decoded each (only the last is).
  const cases: { name: string; hostile: Buffer; skipped: Buffer; check: (rec: LogRecord) => void }[] = [
    {
      name: 'string_value in one AnyValue',
      hostile: oneAttribute('k', repeated([0x0a, 2, 0, 0], N, 2)),
      skipped: oneAttribute('k', repeated([UNKNOWN_LEN, 2, 0, 0], N, 2)),
      check: (rec) => expect(rec.attributes.get('k')).toBe(letters(N - 1)),
    },
    {
      name: 'bytes_value in one AnyValue',
      hostile: oneAttribute('k', repeated([0x3a, 2, 0, 0], N, 2)),
      skipped: oneAttribute('k', repeated([UNKNOWN_LEN, 2, 0, 0], N, 2)),
      check: (rec) => expect(Buffer.from(rec.attributes.get('k') as Uint8Array).toString('latin1')).toBe(letters(N - 1)),
    },
    {
      name: 'int_value of ten bytes in one AnyValue',
      hostile: oneAttribute('k', repeated([0x18, ...new Array<number>(9).fill(0xff), 0x01], N)),
      skipped: oneAttribute('k', repeated([UNKNOWN_VARINT, ...new Array<number>(9).fill(0xff), 0x01], N)),
      check: (rec) => expect(rec.attributes.get('k')).toBe(-1),
    },
    {
      name: 'key in one KeyValue',
      hostile: oneRecord(field(6, Buffer.concat([repeated([0x0a, 2, 0, 0], N, 2), field(2, field(1, Buffer.from('v')))]))),
      skipped: oneRecord(field(6, Buffer.concat([repeated([UNKNOWN_LEN, 2, 0, 0], N, 2), field(2, field(1, Buffer.from('v')))]))),
      check: (rec) => expect([...rec.attributes]).toEqual([[letters(N - 1), 'v']]),
    },
    {
      // Each value a message of its own, entered either way: the string in it is repeated, or skipped.
      name: 'value in one KeyValue, each a string_value',
      hostile: oneRecord(field(6, Buffer.concat([field(1, Buffer.from('k')), repeated([0x12, 102, 0x0a, 100, ...LONG], N / 10, 4)]))),
      skipped: oneRecord(field(6, Buffer.concat([field(1, Buffer.from('k')), repeated([0x12, 102, UNKNOWN_LEN, 100, ...LONG], N / 10, 4)]))),
      check: (rec) => expect(rec.attributes.get('k')).toBe(letters(N / 10 - 1) + 'x'.repeat(98)),
    },
    {
      name: 'string_value in one body',
      hostile: oneRecord(field(5, repeated([0x0a, 2, 0, 0], N, 2))),
      skipped: oneRecord(field(5, repeated([UNKNOWN_LEN, 2, 0, 0], N, 2))),
      check: (rec) => expect(rec.body).toBe(letters(N - 1)),
    },
  ];

  for (const { name, hostile, skipped, check } of cases) {
    it(`${name}: the last one wins, costing about the CPU time of skipping as many`, () => {
      check(onlyRecord(decodeLogsProto(hostile)));
      // Both ways a receiver decodes: every record's attributes kept, or only those of records named KEPT (whose
      // scan for the name reads the body's strings and event.name attributes).
      for (const kept of [undefined, KEPT]) {
        const hostileMs = leastCpu(() => decodeLogsProto(hostile, unbounded(), kept), 5);
        const skippedMs = leastCpu(() => decodeLogsProto(skipped, unbounded(), kept), 5);
        expect(hostileMs, `${name}, ${kept ? 'scanned for names' : 'all kept'}: ${hostileMs.toFixed(1)} ms against ${skippedMs.toFixed(1)} ms skipped`).toBeLessThan(3 * skippedMs);
      }
    });
  }
});

describe('a field of a log record, scope or resource repeated two million times is read in slices', () => {
  // Twice as many as above: the decode straight through takes long enough that a slice is a small part of it,
  // even on a loaded machine where any turn of the event loop may wait some tens of ms.
  const M = 2 * N;
  // Whether a decode scans records for the kept names changes how a record's fields are read, not a scope's or a
  // resource's: those are decoded one way.
  const cases: { name: string; body: Buffer; check: (req: LogsRequest) => void; scanned?: true }[] = [
    {
      name: 'a record of two million bodies, each a string_value',
      scanned: true,
      body: oneRecord(repeated([0x2a, 4, 0x0a, 2, 0, 0], M, 4)),
      check: (req) => expect(onlyRecord(req).body).toBe(letters(M - 1)),
    },
    {
      name: 'a record of two million event_names',
      scanned: true,
      body: oneRecord(repeated([0x62, 2, 0, 0], M, 2)),
      check: (req) => expect(onlyRecord(req).eventName).toBe(letters(M - 1)),
    },
    {
      name: 'a record of two million time_unix_nanos',
      scanned: true,
      body: oneRecord(repeated([0x09, 1, 0, 0, 0, 0, 0, 0, 0], M)),
      check: (req) => expect(onlyRecord(req).timeUnixNano).toBe(1n),
    },
    {
      name: 'a scope of two million names',
      body: field(1, field(2, field(1, repeated([0x0a, 2, 0, 0], M, 2)))),
      check: (req) => expect(req.resourceLogs[0]?.scopeLogs[0]?.scope.name).toBe(letters(M - 1)),
    },
    {
      name: 'a scope of two million attributes',
      body: field(1, field(2, field(1, repeated([0x1a, 8, 0x0a, 2, 0, 0, 0x12, 2, 0x0a, 0], M, 4)))),
      check: (req) => expect(req.resourceLogs[0]?.scopeLogs).toHaveLength(1),
    },
    {
      name: 'a resource of two million attributes',
      body: field(1, field(1, repeated([0x0a, 8, 0x0a, 2, 0, 0, 0x12, 2, 0x0a, 0], M, 4))),
      check: (req) => expect(req.resourceLogs[0]?.resource.get(letters(M - 1))).toBe(''),
    },
  ];

  for (const { name, body, check, scanned } of cases) {
    it(`${name}: the event loop is held for a small part of the decode`, async () => {
      for (const kept of scanned ? [undefined, KEPT] : [undefined]) {
        check(decodeLogsProto(body, unbounded(), kept));
        const straightMs = fastest(() => decodeLogsProto(body, unbounded(), kept), 2);
        const stall = await leastStall(() => runPaced(decodeLogsProtoSteps(body, unbounded(), kept)), 4);
        expect(stall, `${kept ? 'scanned for names' : 'all kept'}: held ${stall.toFixed(1)} ms of ${straightMs.toFixed(1)} ms`).toBeLessThan(straightMs / 3);
      }
    }, 120_000);
  }
});
