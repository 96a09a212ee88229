/** The hand-written response encoders produce exactly what a protobuf library decodes (and JSON clients parse). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RpcCode, encodeExportResponse, encodeStatus } from './encode.ts';
import { protoType } from '../../test/support/otlp-proto.ts';

const Response = protoType('ExportLogsServiceResponse');
const Status = protoType('Status');

describe('encodeExportResponse (protobuf)', () => {
  it('full success is an empty message', () => {
    const buf = encodeExportResponse('protobuf', 0, '');
    expect(buf.length).toBe(0);
    expect(Response.toObject(Response.decode(buf), { defaults: false })).toEqual({});
  });

  it('decodes with protobufjs to the same partial success for any count and message', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), fc.string({ unit: 'grapheme', maxLength: 300 }), (rejected, message) => {
      const buf = encodeExportResponse('protobuf', rejected, message);
      const obj = Response.toObject(Response.decode(buf), { longs: String, defaults: true }) as { partial_success?: { rejected_log_records: string; error_message: string } };
      if (rejected === 0 && message === '') {
        expect(obj.partial_success ?? null).toBeNull();
        return;
      }
      expect(obj.partial_success).toEqual({ rejected_log_records: String(rejected), error_message: message });
      // Byte-exact against the library's canonical encoding.
      expect(Buffer.from(Response.encode(Response.fromObject({ partial_success: { rejected_log_records: rejected, error_message: message } })).finish()).equals(buf)).toBe(true);
    }), { numRuns: 300 });
  });
});

describe('encodeExportResponse (JSON)', () => {
  it('int64 as a decimal string under the signal field name', () => {
    expect(JSON.parse(encodeExportResponse('json', 3, 'bad', 'rejectedSpans').toString())).toEqual({ partialSuccess: { rejectedSpans: '3', errorMessage: 'bad' } });
    expect(JSON.parse(encodeExportResponse('json', 0, '').toString())).toEqual({});
  });
});

describe('encodeStatus', () => {
  it('protobuf decodes with protobufjs to the same code and message', () => {
    fc.assert(fc.property(fc.constantFrom(...Object.values(RpcCode)), fc.string({ unit: 'grapheme', maxLength: 500 }), (code, message) => {
      const buf = encodeStatus('protobuf', code, message);
      const obj = Status.toObject(Status.decode(buf), { defaults: true }) as { code: number; message: string; details: unknown[] };
      expect(obj).toEqual({ code, message, details: [] });
    }), { numRuns: 200 });
  });

  it('JSON is {code, message}', () => {
    expect(JSON.parse(encodeStatus('json', RpcCode.INVALID_ARGUMENT, 'x "y"').toString())).toEqual({ code: 3, message: 'x "y"' });
  });
});
