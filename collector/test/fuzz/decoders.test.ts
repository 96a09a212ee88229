/**
 * Property-based fuzzing of the OTLP decoders and the hook attribute parsing: whatever the bytes, the only
 * exception is DecodeError (a 400), nothing hangs, and what is decoded stays proportional to the input.
 * Well-formed requests, encoded by an independent encoder (protobufjs), decode to exactly what was sent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeLogsProto } from '../../../bench/lib/otlp-schema.ts';
import { extractHookEvents, parseCount } from '../../src/hooks/extract.ts';
import { decodeLogsJson } from '../../src/otlp/decode-json.ts';
import { decodeLogsProto } from '../../src/otlp/decode-proto.ts';
import type { LogsRequest } from '../../src/otlp/model.ts';
import { anyString, anyValueArb, countNodes, expectedAttributes, expectedValue, requestArb, resultOrDecodeError, toProtoJson, viaUtf8, type JsonAnyValue, type JsonKeyValue } from './arbitraries.ts';

/** Slowest acceptable decode of a few KB; far above normal (microseconds), far below a hang. */
const MAX_DECODE_MS = 1000;
const RUNS = 400;

/** Decodes, and fails the property on anything but success or DecodeError, or on a slow decode. */
function decodeOrDecodeError(decode: () => LogsRequest, inputSize: number): LogsRequest | undefined {
  const req = resultOrDecodeError('decoder', decode, MAX_DECODE_MS);
  // Memory stays proportional to the input: each decoded node costs at least one byte on the wire.
  if (req) expect(countNodes(req)).toBeLessThanOrEqual(inputSize + 1);
  return req;
}

/** The property that a generated request, encoded by an independent encoder, decodes to exactly what was sent. */
function decodesAsSent<W extends { length: number }>(encode: (req: Parameters<typeof expectSame>[1]) => W, decode: (wire: W) => LogsRequest) {
  return fc.property(requestArb, (req) => {
    const wire = encode(req);
    const decoded = decodeOrDecodeError(() => decode(wire), wire.length);
    expect(decoded).toBeDefined();
    expectSame(decoded as LogsRequest, req);
  });
}

/** Buffers (the protobuf decoder's zero-copy bytes) as plain Uint8Arrays, so values compare by content. */
function plain(v: unknown): unknown {
  if (v instanceof Uint8Array) return new Uint8Array(v);
  if (v instanceof Map) return new Map([...v].map(([k, x]) => [k, plain(x)]));
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

/** Compares a decoded request with the generated one it came from. */
function expectSame(decoded: LogsRequest, sent: { resourceLogs: { resource: { attributes: JsonKeyValue[] }; scopeLogs: { scope: { name: string; version: string }; logRecords: { timeUnixNano: string; eventName: string; body: JsonAnyValue; attributes: JsonKeyValue[] }[] }[] }[] }): void {
  expect(decoded.resourceLogs).toHaveLength(sent.resourceLogs.length);
  sent.resourceLogs.forEach((rl, i) => {
    const got = decoded.resourceLogs[i]!;
    expect(plain(got.resource)).toEqual(expectedAttributes(rl.resource.attributes, viaUtf8));
    rl.scopeLogs.forEach((sl, j) => {
      const gs = got.scopeLogs[j]!;
      expect(gs.scope).toEqual({ name: viaUtf8(sl.scope.name), version: viaUtf8(sl.scope.version) });
      sl.logRecords.forEach((r, k) => {
        const gr = gs.logRecords[k]!;
        expect(gr.timeUnixNano).toBe(BigInt(r.timeUnixNano));
        expect(gr.eventName).toBe(viaUtf8(r.eventName));
        expect(plain(gr.body)).toEqual(expectedValue(r.body, viaUtf8));
        expect(plain(gr.attributes)).toEqual(expectedAttributes(r.attributes, viaUtf8));
      });
    });
  });
}

describe('protobuf decoder', () => {
  it('random bytes: a request or DecodeError, never another exception, never slow', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 4096 }), (bytes) => {
      decodeOrDecodeError(() => decodeLogsProto(bytes), bytes.length);
    }), { numRuns: RUNS * 2 });
  });

  it('well-formed requests from protobufjs decode to exactly what was sent', () => {
    fc.assert(decodesAsSent(encodeLogsProto, decodeLogsProto), { numRuns: RUNS });
  });

  it('well-formed requests with flipped, inserted or cut bytes: a request or DecodeError', () => {
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ kind: fc.constant('cut' as const), at: fc.nat(), byte: fc.constant(0) }),
    );
    fc.assert(fc.property(requestArb, fc.array(mutation, { minLength: 1, maxLength: 4 }), (req, mutations) => {
      let bytes = encodeLogsProto(req);
      for (const m of mutations) {
        const at = bytes.length === 0 ? 0 : m.at % bytes.length;
        if (m.kind === 'set' && bytes.length > 0) bytes[at] = m.byte;
        else if (m.kind === 'insert') bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from([m.byte]), bytes.subarray(at)]);
        else bytes = bytes.subarray(0, at);
      }
      decodeOrDecodeError(() => decodeLogsProto(bytes), bytes.length);
    }), { numRuns: RUNS });
  });
});

describe('JSON decoder', () => {
  it('any text, invalid surrogates included: a request or DecodeError', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 2000 }), (text) => {
      decodeOrDecodeError(() => decodeLogsJson(text), text.length);
    }), { numRuns: RUNS });
  });

  it('any JSON document: a request or DecodeError', () => {
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 6 }), (doc) => {
      const text = JSON.stringify(doc);
      decodeOrDecodeError(() => decodeLogsJson(text), text.length);
    }), { numRuns: RUNS });
  });

  it('OTLP-shaped documents with a wrong type anywhere: a request or DecodeError', () => {
    // Replace one random node of a well-formed request by any JSON value.
    fc.assert(fc.property(requestArb, fc.array(fc.nat(), { minLength: 1, maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), (req, path, replacement) => {
      const doc = JSON.parse(toProtoJson(req)) as unknown;
      let node: unknown = doc;
      for (let i = 0; i < path.length; i++) {
        if (node === null || typeof node !== 'object') break;
        const keys = Object.keys(node);
        if (keys.length === 0) break;
        const key = keys[(path[i] as number) % keys.length] as string;
        const child = (node as Record<string, unknown>)[key];
        if (i === path.length - 1 || child === null || typeof child !== 'object') {
          (node as Record<string, unknown>)[key] = replacement;
          break;
        }
        node = child;
      }
      const text = JSON.stringify(doc);
      decodeOrDecodeError(() => decodeLogsJson(text), text.length);
    }), { numRuns: RUNS });
  });

  it('well-formed OTLP/JSON decodes to exactly what was sent', () => {
    // JSON keeps lone surrogates (escaped), so strings come back unchanged.
    fc.assert(decodesAsSent(toProtoJson, decodeLogsJson), { numRuns: RUNS });
  });
});

describe('hook attribute and number parsing', () => {
  const countValue = fc.oneof(
    fc.integer({ min: -5, max: 100_000 }).map(String),
    fc.constantFrom('', ' 7 ', '1e3', '0x10', '-0', '+1', '12.5', 'NaN', 'Infinity', '９', '9007199254740993', '00000000000000012'),
    anyString,
    fc.double(),
    fc.integer(),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
    fc.boolean(),
    fc.constant(null),
    anyValueArb.map((v) => expectedValue(v, (s) => s)),
  );

  it('parseCount: a non-negative safe integer, null for absent, or a record-level rejection; never anything else', () => {
    fc.assert(fc.property(countValue, (v) => {
      let n: number | null;
      try {
        n = parseCount(v, 'num_success');
      } catch (err) {
        // Rejections are a record-level problem with a message naming the attribute, never a crash.
        expect((err as Error).message).toContain('num_success');
        return;
      }
      if (v === null) expect(n).toBeNull();
      else {
        expect(Number.isSafeInteger(n)).toBe(true);
        expect(n as number).toBeGreaterThanOrEqual(0);
        if (typeof v === 'string') expect(n).toBe(Number(v.trim()));
        else expect(n).toBe(v);
      }
    }), { numRuns: RUNS * 2 });
  });

  it('extraction never throws: every record is an event, a rejection or passed over, and counts are never negative or NaN', () => {
    const KEYS = ['num_hooks', 'num_success', 'num_blocking', 'num_non_blocking_error', 'num_cancelled', 'total_duration_ms', 'stdout_chars', 'additional_context_chars', 'system_message_chars', 'initial_user_message_chars', 'num_outputs_persisted'];
    const record = fc.record({
      kind: fc.constantFrom('hook_execution_complete', 'hook_execution_start', 'claude_code.hook_execution_complete', 'api_request'),
      hookEvent: fc.oneof(anyString, fc.constant('Stop'), fc.integer()),
      hookName: fc.oneof(anyString, fc.string({ minLength: 1020, maxLength: 1100 }), fc.constant(undefined)),
      counts: fc.dictionary(fc.constantFrom(...KEYS), countValue),
      timestamp: fc.oneof(anyString, fc.date({ noInvalidDate: true }).map((d) => d.toISOString())),
    });
    fc.assert(fc.property(fc.array(record, { maxLength: 8 }), (records) => {
      const req: LogsRequest = {
        resourceLogs: [{
          resource: new Map([['service.name', 'claude-code']]),
          scopeLogs: [{
            scope: { name: '', version: '' },
            logRecords: records.map((r) => ({
              timeUnixNano: 0n,
              observedTimeUnixNano: 0n,
              eventName: '',
              body: undefined,
              attributes: new Map<string, ReturnType<typeof expectedValue>>([
                ['event.name', r.kind], ['hook_event', r.hookEvent], ['event.timestamp', r.timestamp],
                ...(r.hookName === undefined ? [] : [['hook_name', r.hookName] as [string, string]]),
                ...Object.entries(r.counts),
              ]),
            })),
          }],
        }],
      };
      const x = extractHookEvents(req, { nearThreshold: 8000, dimensions: ['team'], now: () => 1_800_000_000_000 });
      expect(x.events.length + x.rejected + x.otherRecords).toBe(records.length);
      for (const e of x.events) {
        for (const k of ['numHooks', 'numSuccess', 'numBlocking', 'numNonBlockingError', 'numCancelled', 'durationMs', 'stdoutChars', 'additionalContextChars', 'systemMessageChars', 'initialUserMessageChars', 'outputsPersisted'] as const) {
          const v = e[k];
          if (v !== null) expect(Number.isSafeInteger(v) && v >= 0, `${k} = ${v}`).toBe(true);
        }
        expect(Number.isFinite(e.timeMs)).toBe(true);
        expect(e.hookName.length).toBeLessThanOrEqual(1024);
        expect(e.hookId).toMatch(/^[0-9a-f]{16}$/);
      }
    }), { numRuns: RUNS });
  });
});
