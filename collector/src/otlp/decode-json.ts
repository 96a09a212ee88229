/**
 * OTLP/JSON decoding of ExportLogsServiceRequest (opentelemetry-proto JSON mapping): lowerCamelCase keys (the
 * proto's snake_case names accepted too, as the Go collector does), int64 as string or number, unknown fields
 * ignored. Wrong types fail with the JSON path of the offending value.
 */
import type { DecodeBudget} from './model.ts';
import { DECODED_BYTES, DecodeError, MAX_ANYVALUE_DEPTH, unbounded, type AnyValue, type Attributes, type LogRecord, type LogsRequest, type ScopeLogs } from './model.ts';
import { jsonStringEnd } from '../json-string.ts';
import { runToEnd } from '../paced.ts';

type Json = unknown;
type Obj = Record<string, Json>;

/** A field by its lowerCamelCase name, or its snake_case proto name; a null field is unset (protojson). */
export function field(o: Obj, camel: string, snake: string): Json {
  const v = o[camel];
  return v === undefined || v === null ? o[snake] : v;
}

/** `v` as an object ({} when unset); DecodeError naming `path` otherwise. */
export function obj(v: Json, path: string): Obj {
  if (v === null || v === undefined) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw new DecodeError(`${path} must be an object`);
  return v as Obj;
}

/** `v` as an array ([] when unset); DecodeError naming `path` otherwise. */
export function arr(v: Json, path: string): Json[] {
  if (v === null || v === undefined) return [];
  if (!Array.isArray(v)) throw new DecodeError(`${path} must be an array`);
  return v;
}

function str(v: Json, path: string): string {
  if (v === null || v === undefined) return '';
  if (typeof v !== 'string') throw new DecodeError(`${path} must be a string`);
  return v;
}

const INT_RE = /^-?\d{1,20}$/;

/** An int64 as the model holds it (a number when it fits 2^53, else a bigint), from a number or a decimal string. */
function int64(v: Json, path: string): number | bigint {
  if (typeof v === 'number' && !Number.isInteger(v)) throw new DecodeError(`${path} must be an integer`);
  if (typeof v === 'number' || (typeof v === 'string' && INT_RE.test(v))) {
    const n = Number(v);
    if (Number.isSafeInteger(n)) return n;
    // A JSON number past 2^53 has already lost digits to JSON.parse; it is at least kept within the int64 range.
    const b = BigInt(v);
    if (b > 0x7fffffffffffffffn || b < -0x8000000000000000n) throw new DecodeError(`${path} is out of the int64 range`);
    return b;
  }
  throw new DecodeError(`${path} must be an integer (a JSON number or a decimal string)`);
}

/** A fixed64 (unsigned) timestamp: the whole uint64 range is valid, as the protobuf decoder accepts it. */
function nanos(v: Json, path: string): bigint {
  if (v === null || v === undefined) return 0n;
  if ((typeof v === 'string' && /^\d{19,20}$/.test(v)) || (typeof v === 'number' && Number.isInteger(v) && v > Number.MAX_SAFE_INTEGER)) {
    const b = BigInt(v);
    if (b > 0xffffffffffffffffn) throw new DecodeError(`${path} is out of the uint64 range`);
    return b;
  }
  const n = int64(v, path);
  if (n < 0) throw new DecodeError(`${path} must not be negative`);
  return BigInt(n);
}

function double(v: Json, path: string): number {
  if (typeof v === 'number') return v;
  // protojson spells non-finite doubles as strings.
  if (v === 'NaN') return NaN;
  if (v === 'Infinity') return Infinity;
  if (v === '-Infinity') return -Infinity;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  throw new DecodeError(`${path} must be a number`);
}

/** protojson: a null field is unset, so `{"stringValue": null, "intValue": 5}` is the int. */
function set(o: Obj, camel: string, snake: string): boolean {
  const v = field(o, camel, snake);
  return v !== undefined && v !== null;
}

function anyValue(v: Json, path: string, depth: number, budget: DecodeBudget): AnyValue {
  if (depth > MAX_ANYVALUE_DEPTH) throw new DecodeError(`AnyValue nested deeper than ${MAX_ANYVALUE_DEPTH} levels at ${path}`);
  const o = obj(v, path);
  if (set(o, 'stringValue', 'string_value')) return str(field(o, 'stringValue', 'string_value'), `${path}.stringValue`);
  if (set(o, 'boolValue', 'bool_value')) {
    const b = field(o, 'boolValue', 'bool_value');
    if (typeof b !== 'boolean') throw new DecodeError(`${path}.boolValue must be true or false`);
    return b;
  }
  if (set(o, 'intValue', 'int_value')) return int64(field(o, 'intValue', 'int_value'), `${path}.intValue`);
  if (set(o, 'doubleValue', 'double_value')) return double(field(o, 'doubleValue', 'double_value'), `${path}.doubleValue`);
  if (set(o, 'arrayValue', 'array_value')) {
    const a = obj(field(o, 'arrayValue', 'array_value'), `${path}.arrayValue`);
    return arr(a['values'], `${path}.arrayValue.values`).map((x, i) => {
      budget.charge(DECODED_BYTES.value);
      return anyValue(x, `${path}.arrayValue.values[${i}]`, depth + 1, budget);
    });
  }
  if (set(o, 'kvlistValue', 'kvlist_value')) {
    const kv = obj(field(o, 'kvlistValue', 'kvlist_value'), `${path}.kvlistValue`);
    return { kvlist: attributes(kv['values'], `${path}.kvlistValue.values`, budget, depth + 1) };
  }
  if (set(o, 'bytesValue', 'bytes_value')) {
    const b = str(field(o, 'bytesValue', 'bytes_value'), `${path}.bytesValue`);
    if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(b)) throw new DecodeError(`${path}.bytesValue must be base64`);
    return new Uint8Array(Buffer.from(b, 'base64'));
  }
  return null;
}

function attributes(v: Json, path: string, budget: DecodeBudget, depth = 0): Attributes {
  const out: Attributes = new Map();
  const list = arr(v, path);
  for (let i = 0; i < list.length; i++) {
    budget.charge(DECODED_BYTES.value);
    const kv = obj(list[i], `${path}[${i}]`);
    out.set(str(kv['key'], `${path}[${i}].key`), kv['value'] === undefined ? null : anyValue(kv['value'], `${path}[${i}].value`, depth, budget));
  }
  return out;
}

function logRecord(v: Json, path: string, budget: DecodeBudget): LogRecord {
  budget.charge(DECODED_BYTES.record);
  const o = obj(v, path);
  const body = o['body'];
  return {
    timeUnixNano: nanos(field(o, 'timeUnixNano', 'time_unix_nano'), `${path}.timeUnixNano`),
    observedTimeUnixNano: nanos(field(o, 'observedTimeUnixNano', 'observed_time_unix_nano'), `${path}.observedTimeUnixNano`),
    eventName: str(field(o, 'eventName', 'event_name'), `${path}.eventName`),
    body: body === undefined || body === null ? undefined : anyValue(body, `${path}.body`, 0, budget),
    attributes: attributes(o['attributes'], `${path}.attributes`, budget),
  };
}

/**
 * Throws DecodeLimitError when the parse tree of `text` could hold more than `budget` allows: every object and
 * array is a node (DECODED_BYTES.jsonNode), and a node can be two bytes of text, so only a text longer than
 * that could exceed it is counted. Braces and brackets inside strings are text, not nodes: string contents are
 * passed over a closing quote at a time, so attribute values full of '{' or '[' count for nothing.
 */
export function checkJsonNodes(text: string, budget: DecodeBudget): void {
  const max = Math.floor(budget.maxBytes / DECODED_BYTES.jsonNode);
  if (text.length <= 2 * max) return;
  let nodes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) {
      // Charged as the nodes it found, and how far into the text: DecodeLimitError.readShare.
      if (++nodes > max) budget.charge(nodes * DECODED_BYTES.jsonNode, i + 1, text.length);
    } else if (c === 0x22) {
      i = jsonStringEnd(text, i);
      // An unterminated string: JSON.parse refuses the text, and nothing after the quote is a node.
      if (i === -1) return;
    }
  }
}

/**
 * Decodes OTLP/JSON text. Throws DecodeError naming the JSON path on malformed input, and DecodeLimitError when
 * its parse tree or what it decodes to would hold more memory than `budget` allows.
 */
export function decodeLogsJson(text: string, budget: DecodeBudget = unbounded()): LogsRequest {
  return runToEnd(decodeLogsJsonSteps(text, budget));
}

/**
 * decodeLogsJson in slices: the text is parsed in one step (JSON.parse), then a step ends after the log record
 * that completes a slice (DecodeBudget.pauseDue).
 */
export function* decodeLogsJsonSteps(text: string, budget: DecodeBudget = unbounded()): Generator<void, LogsRequest, void> {
  checkJsonNodes(text, budget);
  let doc: Json;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new DecodeError(`invalid JSON: ${(err as Error).message}`);
  }
  const root = obj(doc, 'request');
  if (doc === null) throw new DecodeError('request must be an object');
  const rls = arr(field(root, 'resourceLogs', 'resource_logs'), 'resourceLogs');
  const req: LogsRequest = { resourceLogs: [] };
  for (let i = 0; i < rls.length; i++) {
    budget.charge(DECODED_BYTES.record);
    const p = `resourceLogs[${i}]`;
    const rl = obj(rls[i], p);
    const resource = obj(rl['resource'], `${p}.resource`);
    const sls = arr(field(rl, 'scopeLogs', 'scope_logs'), `${p}.scopeLogs`);
    const scopeLogs: ScopeLogs[] = [];
    req.resourceLogs.push({ resource: attributes(resource['attributes'], `${p}.resource.attributes`, budget), scopeLogs });
    for (let j = 0; j < sls.length; j++) {
      budget.charge(DECODED_BYTES.record);
      const sp = `${p}.scopeLogs[${j}]`;
      const sl = obj(sls[j], sp);
      const scope = obj(sl['scope'], `${sp}.scope`);
      const recs = arr(field(sl, 'logRecords', 'log_records'), `${sp}.logRecords`);
      const logRecords: LogRecord[] = [];
      scopeLogs.push({ scope: { name: str(scope['name'], `${sp}.scope.name`), version: str(scope['version'], `${sp}.scope.version`) }, logRecords });
      for (let k = 0; k < recs.length; k++) {
        logRecords.push(logRecord(recs[k], `${sp}.logRecords[${k}]`, budget));
        if (budget.pauseDue()) yield;
      }
    }
  }
  return req;
}
