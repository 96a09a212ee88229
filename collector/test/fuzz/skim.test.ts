/**
 * Property-based fuzzing of the forwarding skim: whatever the bytes, it accepts or throws DecodeError (a 400),
 * never another exception and never slowly; it accepts every well-formed request an independent encoder
 * (protobufjs) writes, and the concatenation of accepted requests (what forwarding sends) is accepted too;
 * a group tag anywhere at top level is refused.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeLogsProto } from '../../../bench/lib/otlp-schema.ts';
import { skimOtlpProto, wellFramed } from '../../src/otlp/skim-proto.ts';
import type { Signal } from '../../src/pipeline/consumer.ts';
import { requestArb, resultOrDecodeError } from './arbitraries.ts';

const MAX_SKIM_MS = 1000;
const RUNS = 400;
const signals: Signal[] = ['logs', 'metrics', 'traces'];

/** Whether the skim accepted; fails the property on another exception or a slow skim. */
function accepts(signal: Signal, body: Buffer): boolean {
  const skim = (): true => {
    skimOtlpProto(signal, body);
    return true;
  };
  return resultOrDecodeError('skim', skim, MAX_SKIM_MS) ?? false;
}

const encode = (req: object): Buffer => Buffer.from(encodeLogsProto(req));

describe('protobuf skim', () => {
  it('random bytes: accepted or DecodeError, never another exception, never slow; framing agrees with the skim', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 4096 }), fc.constantFrom(...signals), (bytes, signal) => {
      const body = Buffer.from(bytes);
      // What the skim accepts is framed whole at top level.
      if (accepts(signal, body)) expect(wellFramed(body)).toBe(true);
    }), { numRuns: RUNS });
  });

  it('accepts what protobufjs encodes, and the concatenation of accepted requests', () => {
    fc.assert(fc.property(requestArb, requestArb, (a, b) => {
      const x = encode(a);
      const y = encode(b);
      expect(accepts('logs', x)).toBe(true);
      expect(accepts('logs', Buffer.concat([x, y]))).toBe(true);
      expect(wellFramed(Buffer.concat([x, y]))).toBe(true);
    }), { numRuns: 200 });
  });

  it('refuses a group tag (wire type 3 or 4) at top level, wherever it is put between fields', () => {
    fc.assert(fc.property(requestArb, fc.integer({ min: 1, max: 536_870_911 }), fc.constantFrom(3, 4), fc.constantFrom(...signals), (req, field, wireType, signal) => {
      const body = encode(req);
      let tag = field * 8 + wireType;
      const bytes: number[] = [];
      while (tag > 127) {
        bytes.push((tag % 128) | 0x80);
        tag = Math.floor(tag / 128);
      }
      bytes.push(tag);
      const bad = Buffer.concat([body, Buffer.from(bytes)]);
      expect(accepts(signal, bad)).toBe(false);
      expect(wellFramed(bad)).toBe(false);
    }), { numRuns: 200 });
  });
});
