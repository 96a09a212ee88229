/**
 * Checks a metrics or traces body, which hookwatch does not decode, before it is acknowledged (and, in inline
 * mode, queued): protobuf is skimmed (skim-proto.ts) in slices, JSON parsed and its fixed levels checked for the shape
 * the OTLP/JSON schema requires. The body itself is never re-encoded: it is forwarded byte for byte.
 * Both receivers run this in every mode, so a malformed body gets the same 400 whether or not hookwatch forwards;
 * with forwarding, a request the queue cannot take (full: 503; larger than the queue: 413; JSON to a gRPC
 * destination: 415) is refused before this runs, as a logs request is refused before its decode.
 */
import { atOnce, type PacedSteps, type Steps } from '../paced.ts';
import type { RawRequest, Signal } from '../pipeline/consumer.ts';
import { arr, checkJsonNodes, field, obj } from './decode-json.ts';
import { JSON_THREAD_MIN_BYTES, type JsonThread } from './json-thread.ts';
import { DecodeError, unbounded, type DecodeBudget } from './model.ts';
import { skimOtlpProtoSteps } from './skim-proto.ts';

/** The repeated levels of each request, outermost first: [lowerCamelCase, snake_case] JSON names. */
const LEVELS: Record<Exclude<Signal, 'logs'>, readonly (readonly [string, string])[]> = {
  metrics: [['resourceMetrics', 'resource_metrics'], ['scopeMetrics', 'scope_metrics'], ['metrics', 'metrics']],
  traces: [['resourceSpans', 'resource_spans'], ['scopeSpans', 'scope_spans'], ['spans', 'spans']],
};

/** Throws a DecodeError naming the JSON path of the first level that is not an array of objects (the logs decoder's rules). */
function checkLevels(levels: readonly (readonly [string, string])[], parent: Record<string, unknown>, path: string, depth: number): void {
  const level = levels[depth];
  if (!level) return;
  const [camel, snake] = level;
  const at = path ? `${path}.${camel}` : camel;
  arr(field(parent, camel, snake), at).forEach((v, i) => {
    const item = obj(v, `${at}[${i}]`);
    if (depth === 0) obj(item['resource'], `${at}[${i}].resource`);
    if (depth === 1) obj(item['scope'], `${at}[${i}].scope`);
    checkLevels(levels, item, `${at}[${i}]`, depth + 1);
  });
}

/** Throws a DecodeError unless `text` is an OTLP/JSON Export<signal>ServiceRequest at least at its fixed levels. */
export function checkOtlpJson(signal: Signal, text: string, bound: DecodeBudget): void {
  checkJsonNodes(text, bound);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new DecodeError(`malformed JSON ${signal} request: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new DecodeError(`malformed JSON ${signal} request: expected an object`);
  if (signal === 'logs') return;
  try {
    checkLevels(LEVELS[signal], doc as Record<string, unknown>, '', 0);
  } catch (err) {
    if (!(err instanceof DecodeError)) throw err;
    throw new DecodeError(`malformed JSON ${signal} request: ${err.message}`);
  }
}

/**
 * Refuses (400 / INVALID_ARGUMENT) a metrics or traces body that is not well-formed OTLP: queued protobuf
 * requests are merged by concatenation, so one bad framing would corrupt the requests merged after it, and a
 * malformed body must get the same 400 whether hookwatch forwards (inline mode) or not (fan-out mode).
 * In slices (paced.ts): the protobuf skim pauses after every SKIM_SLICE_BYTES of the body; an OTLP/JSON body over
 * JSON_THREAD_MIN_BYTES is checked on `json`'s thread (the same refusals), a smaller one (or any, without `json`)
 * in one piece.
 */
export function validatePassThroughSteps(raw: RawRequest, bound?: DecodeBudget): Steps<void>;
export function validatePassThroughSteps(raw: RawRequest, bound: DecodeBudget, json: JsonThread): PacedSteps<void>;
export function validatePassThroughSteps(raw: RawRequest, bound: DecodeBudget = unbounded(), json?: JsonThread): PacedSteps<void> {
  if (raw.encoding === 'protobuf') return skimOtlpProtoSteps(raw.signal, raw.body);
  if (json && raw.signal !== 'logs' && raw.body.length > JSON_THREAD_MIN_BYTES) return json.checkSteps(raw.signal, raw.body, bound);
  return atOnce(() => checkOtlpJson(raw.signal, raw.body.toString('utf8'), bound));
}
