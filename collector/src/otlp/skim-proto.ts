/**
 * Checks that an OTLP protobuf request is well-formed without decoding it: walks the wire format through every
 * message OTLP defines (tags, wire types, lengths), skipping scalars and unknown fields as a protobuf parser
 * would. Forwarding merges queued requests by concatenation, which is only sound for messages whose framing is
 * whole: an unterminated group tag in one request would swallow the requests merged after it. OTLP has no
 * groups, so wire types 3 and 4 are refused, as are truncated fields and nesting past MAX_SKIM_DEPTH.
 */
import { runToEnd } from '../paced.ts';
import type { Signal } from '../pipeline/consumer.ts';
import { Reader } from './decode-proto.ts';
import { DecodeError, MAX_ANYVALUE_DEPTH } from './model.ts';

/** For each OTLP message, its fields that hold messages (field number -> message name). Other fields are skipped. */
const SCHEMA: Record<string, Record<number, string>> = {
  ExportLogsServiceRequest: { 1: 'ResourceLogs' },
  ExportMetricsServiceRequest: { 1: 'ResourceMetrics' },
  ExportTraceServiceRequest: { 1: 'ResourceSpans' },
  Resource: { 1: 'KeyValue' },
  InstrumentationScope: { 3: 'KeyValue' },
  KeyValue: { 2: 'AnyValue' },
  AnyValue: { 5: 'ArrayValue', 6: 'KeyValueList' },
  ArrayValue: { 1: 'AnyValue' },
  KeyValueList: { 1: 'KeyValue' },
  ResourceLogs: { 1: 'Resource', 2: 'ScopeLogs' },
  ScopeLogs: { 1: 'InstrumentationScope', 2: 'LogRecord' },
  LogRecord: { 5: 'AnyValue', 6: 'KeyValue' },
  ResourceSpans: { 1: 'Resource', 2: 'ScopeSpans' },
  ScopeSpans: { 1: 'InstrumentationScope', 2: 'Span' },
  Span: { 9: 'KeyValue', 11: 'Span.Event', 13: 'Span.Link', 15: 'Status' },
  'Span.Event': { 3: 'KeyValue' },
  'Span.Link': { 4: 'KeyValue' },
  Status: {},
  ResourceMetrics: { 1: 'Resource', 2: 'ScopeMetrics' },
  ScopeMetrics: { 1: 'InstrumentationScope', 2: 'Metric' },
  Metric: { 5: 'Gauge', 7: 'Sum', 9: 'Histogram', 10: 'ExponentialHistogram', 11: 'Summary', 12: 'KeyValue' },
  Gauge: { 1: 'NumberDataPoint' },
  Sum: { 1: 'NumberDataPoint' },
  Histogram: { 1: 'HistogramDataPoint' },
  ExponentialHistogram: { 1: 'ExponentialHistogramDataPoint' },
  Summary: { 1: 'SummaryDataPoint' },
  NumberDataPoint: { 5: 'Exemplar', 7: 'KeyValue' },
  HistogramDataPoint: { 8: 'Exemplar', 9: 'KeyValue' },
  ExponentialHistogramDataPoint: { 1: 'KeyValue', 8: 'Buckets', 9: 'Buckets', 11: 'Exemplar' },
  Buckets: {},
  SummaryDataPoint: { 6: 'ValueAtQuantile', 7: 'KeyValue' },
  ValueAtQuantile: {},
  Exemplar: { 7: 'KeyValue' },
};

const ROOT: Record<Signal, string> = { logs: 'ExportLogsServiceRequest', metrics: 'ExportMetricsServiceRequest', traces: 'ExportTraceServiceRequest' };

/** Deep enough for OTLP's fixed levels plus AnyValue nesting as deep as the logs decoder allows. */
export const MAX_SKIM_DEPTH = MAX_ANYVALUE_DEPTH + 16;

const GROUP = { 3: 'start group', 4: 'end group' } as Record<number, string>;

/**
 * Reads the field at `r.pos` of a message of `type`, whose message fields are `fields`: for a field holding one of
 * OTLP's messages, that message's name (`r.pos` then at its length); any other field is skipped, undefined returned.
 */
function messageField(r: Reader, type: string, fields: Record<number, string>): string | undefined {
  const at = r.pos;
  const tag = r.tag();
  const field = tag >>> 3;
  const wireType = tag & 7;
  const group = GROUP[wireType];
  if (group) throw new DecodeError(`field ${field} at byte ${at} (in ${type}) has wire type ${wireType} (${group}); OTLP has no groups`);
  const child = wireType === 2 ? fields[field] : undefined;
  // A known message field with another wire type is an unknown field to protobuf parsers: skipped.
  if (child === undefined) r.skip(wireType);
  return child;
}

function checkDepth(pos: number, type: string, depth: number): void {
  if (depth > MAX_SKIM_DEPTH) throw new DecodeError(`messages nested deeper than ${MAX_SKIM_DEPTH} levels (at byte ${pos}, in ${type})`);
}

function walk(buf: Buffer, pos: number, end: number, type: string, depth: number): void {
  checkDepth(pos, type, depth);
  const fields = SCHEMA[type] ?? {};
  const r = new Reader(buf, pos, end);
  while (r.pos < r.end) {
    const child = messageField(r, type, fields);
    if (child === undefined) continue;
    const childEnd = r.lengthEnd();
    walk(buf, r.pos, childEnd, child, depth + 1);
    r.pos = childEnd;
  }
}

/** Bytes of a body the skim walks between two pauses of skimOtlpProtoSteps: some 10 ms. */
export const SKIM_SLICE_BYTES = 2 * 1024 * 1024;

/** How far a sliced skim has walked its body (bytes from its start), as of its last pause. */
export interface SkimProgress {
  walked: number;
}

/**
 * walk() in slices: pauses once the bytes walked since the last pause reach SKIM_SLICE_BYTES. A message smaller
 * than a slice is walked whole by walk(), so a slice walks less than two; a larger one is walked here, pausing
 * between its fields. The body is walked in order, so the position reached is the bytes walked.
 */
function* walkSteps(buf: Buffer, pos: number, end: number, type: string, depth: number, progress: SkimProgress): Generator<void, void, void> {
  checkDepth(pos, type, depth);
  const fields = SCHEMA[type] ?? {};
  const r = new Reader(buf, pos, end);
  while (r.pos < r.end) {
    const child = messageField(r, type, fields);
    if (child !== undefined) {
      const childEnd = r.lengthEnd();
      if (childEnd - r.pos < SKIM_SLICE_BYTES) walk(buf, r.pos, childEnd, child, depth + 1);
      else yield* walkSteps(buf, r.pos, childEnd, child, depth + 1, progress);
      r.pos = childEnd;
    }
    if (r.pos - progress.walked >= SKIM_SLICE_BYTES) {
      progress.walked = r.pos;
      yield;
    }
  }
}

/** Throws a DecodeError naming the problem unless `body` is a well-formed Export<signal>ServiceRequest. */
export function skimOtlpProto(signal: Signal, body: Buffer): void {
  runToEnd(skimOtlpProtoSteps(signal, body));
}

/**
 * skimOtlpProto in slices (paced.ts), pausing after every SKIM_SLICE_BYTES of the body; `progress` tells how far
 * it has walked at each pause. A body smaller than a slice is walked in one.
 */
export function* skimOtlpProtoSteps(signal: Signal, body: Buffer, progress: SkimProgress = { walked: 0 }): Generator<void, void, void> {
  try {
    yield* walkSteps(body, 0, body.length, ROOT[signal], 0, progress);
  } catch (err) {
    if (err instanceof DecodeError) throw new DecodeError(`malformed protobuf ${signal} request: ${err.message.replace(/^(malformed|truncated) protobuf: /, '$1: ')}`);
    throw err;
  }
  progress.walked = body.length;
}

/**
 * Whether `body` is a whole sequence of top-level fields (no group, nothing truncated): the property that makes
 * concatenating it with other requests of its type sound. Cheap, for requests already on disk.
 */
export function wellFramed(body: Buffer): boolean {
  const r = new Reader(body, 0, body.length);
  try {
    while (r.pos < r.end) {
      const wireType = r.tag() & 7;
      if (wireType === 3 || wireType === 4) return false;
      r.skip(wireType);
    }
    return true;
  } catch (err) {
    if (err instanceof DecodeError) return false;
    throw err;
  }
}
