/**
 * Checks a metrics or traces body, which hookwatch does not decode, before it is acknowledged (and, in inline
 * mode, queued): protobuf is skimmed (skim-proto.ts), JSON parsed and its fixed levels checked for the shape
 * the OTLP/JSON schema requires. The body itself is never re-encoded: it is forwarded byte for byte.
 * Both receivers run this in every mode, so a client gets the same answer whether or not hookwatch forwards.
 */
import type { RawRequest, Signal } from '../pipeline/consumer.ts';
import { DecodeError } from './model.ts';
import { skimOtlpProto } from './skim-proto.ts';

type Obj = Record<string, unknown>;

/** The repeated levels of each request, outermost first: [lowerCamelCase, snake_case] JSON names. */
const LEVELS: Record<Exclude<Signal, 'logs'>, readonly (readonly [string, string])[]> = {
  metrics: [['resourceMetrics', 'resource_metrics'], ['scopeMetrics', 'scope_metrics'], ['metrics', 'metrics']],
  traces: [['resourceSpans', 'resource_spans'], ['scopeSpans', 'scope_spans'], ['spans', 'spans']],
};

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** protojson: a null field is unset; the proto's snake_case name is accepted too, as by the logs decoder. */
function field(o: Obj, camel: string, snake: string): unknown {
  const v = o[camel];
  return v === undefined || v === null ? o[snake] : v;
}

/** Throws a DecodeError naming the JSON path of the first level that is not an array of objects. */
function checkLevels(signal: Signal, parent: Obj, path: string, depth: number): void {
  const levels = LEVELS[signal as Exclude<Signal, 'logs'>];
  const level = levels[depth];
  if (!level) return;
  const [camel, snake] = level;
  const at = path ? `${path}.${camel}` : camel;
  const list = field(parent, camel, snake);
  if (list === undefined || list === null) return;
  if (!Array.isArray(list)) throw new DecodeError(`malformed JSON ${signal} request: ${at} must be an array`);
  for (let i = 0; i < list.length; i++) {
    const item: unknown = list[i];
    if (!isObject(item)) throw new DecodeError(`malformed JSON ${signal} request: ${at}[${i}] must be an object`);
    if (depth === 0 && !isObjectOrUnset(item['resource'])) throw new DecodeError(`malformed JSON ${signal} request: ${at}[${i}].resource must be an object`);
    if (depth === 1 && !isObjectOrUnset(item['scope'])) throw new DecodeError(`malformed JSON ${signal} request: ${at}[${i}].scope must be an object`);
    checkLevels(signal, item, `${at}[${i}]`, depth + 1);
  }
}

function isObjectOrUnset(v: unknown): boolean {
  return v === undefined || v === null || isObject(v);
}

/** Throws a DecodeError unless `text` is an OTLP/JSON Export<signal>ServiceRequest at least at its fixed levels. */
export function checkOtlpJson(signal: Signal, text: string): void {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new DecodeError(`malformed JSON ${signal} request: ${(err as Error).message}`);
  }
  if (!isObject(doc)) throw new DecodeError(`malformed JSON ${signal} request: expected an object`);
  if (signal !== 'logs') checkLevels(signal, doc, '', 0);
}

/**
 * Refuses (400 / INVALID_ARGUMENT) a metrics or traces body that is not well-formed OTLP: queued protobuf
 * requests are merged by concatenation, so one bad framing would corrupt the requests merged after it, and a
 * client must get the same answer whether hookwatch forwards (inline mode) or not (fan-out mode).
 */
export function validatePassThrough(raw: RawRequest): void {
  if (raw.encoding === 'protobuf') skimOtlpProto(raw.signal, raw.body);
  else checkOtlpJson(raw.signal, raw.body.toString('utf8'));
}
