/**
 * Claude-Code-shaped OTLP log batches, as 2.1.332 sends them (collector/testdata/claude-code-2.1.332): one
 * resource (service.name claude-code), scope com.anthropic.claude_code.events, every record with the standard
 * attributes, hook counts as stringValue, event.sequence as intValue, and a mix of event types.
 *
 * Every record carries the session id placeholder; `stamp` rewrites it and the record times in the encoded bytes
 * (same length, so protobuf lengths stay valid) so each request holds records the store has not seen, timed
 * like a live feed, at almost no client cost.
 *
 * Also the largest requests a client may send (otlp.maxRequestBytes), which the tests and the stall benchmark
 * share: hook executions for logs, HTTP server sums and spans for metrics and traces.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { lengthDelimited, varintField } from '../../collector/src/otlp/proto-write.ts';
import { RECEIVER_SETTINGS } from '../../collector/src/receiver/settings.ts';
import { encodeLogsProto } from './otlp-schema.ts';

/** 36 ASCII characters, the length of a UUID. */
export const SESSION_PLACEHOLDER = 'SESSION-PLACEHOLDER-0000000000000000';

/** Milliseconds between consecutive records of a batch. */
export const RECORD_STEP_MS = 37;

type Attr = { key: string; value: Record<string, unknown> };
const s = (key: string, v: string): Attr => ({ key, value: { stringValue: v } });

const HOOKS: readonly [string, string][] = [
  ['SessionStart', 'SessionStart:startup'],
  ['UserPromptSubmit', 'UserPromptSubmit'],
  ['PreToolUse', 'PreToolUse:Bash'],
  ['PostToolUse', 'PostToolUse:Bash'],
  ['PreToolUse', 'PreToolUse:Edit'],
  ['Stop', 'Stop'],
];

/** Event types in the order one turn produces them: prompt, hooks around a tool call, the API request. */
const PATTERN = ['user_prompt', 'hook_execution_start', 'hook_execution_complete', 'api_request', 'tool_decision', 'hook_execution_start', 'hook_execution_complete', 'tool_result'] as const;

/** Share of records in a batch that are hook_execution_complete (the ones hookwatch stores as executions). */
export const COMPLETE_SHARE = 2 / PATTERN.length;
/** Share of records that are hook events of either kind (start or complete). */
export const HOOK_EVENT_SHARE = 4 / PATTERN.length;

function record(i: number, baseMs: number): Record<string, unknown> {
  const type = PATTERN[i % PATTERN.length] as (typeof PATTERN)[number];
  const ms = baseMs + i * RECORD_STEP_MS;
  const ts = new Date(ms).toISOString();
  const [hookEvent, hookName] = HOOKS[Math.floor(i / PATTERN.length) % HOOKS.length] as [string, string];
  const attrs: Attr[] = [
    s('user.id', '2cb467a7f9c209db7bf43edafdd2869038b4795118a4c480174603468f658c22'),
    s('session.id', SESSION_PLACEHOLDER),
    { key: 'anthropic.provider', value: { stringValue: 'firstParty' } },
    { key: 'anthropic.custom_base_url', value: { boolValue: false } },
    s('terminal.type', 'xterm-256color'),
    s('team', 'platform'),
    s('event.name', type),
    s('event.timestamp', ts),
    { key: 'event.sequence', value: { intValue: i } },
    s('prompt.id', `0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f${i % 10}`),
  ];
  switch (type) {
    case 'hook_execution_start':
      attrs.push(s('hook_event', hookEvent), s('hook_name', hookName), s('num_hooks', '1'), s('managed_only', 'false'), s('hook_source', 'merged'));
      break;
    case 'hook_execution_complete': {
      // Sizes on both sides of the cap, as a real team's hooks spread: mostly small, a few near or over.
      const ctx = [0, 120, 2400, 8600, 12000][i % 5] as number;
      attrs.push(
        s('hook_event', hookEvent), s('hook_name', hookName), s('num_hooks', '1'), s('num_success', '1'), s('num_blocking', '0'),
        s('num_non_blocking_error', '0'), s('num_cancelled', '0'), s('total_duration_ms', String(40 + (i % 300))),
        s('stdout_chars', String(ctx + 78)), s('additional_context_chars', String(ctx)), s('system_message_chars', '0'),
        s('initial_user_message_chars', '0'), s('num_outputs_persisted', ctx > 10_000 ? '1' : '0'),
        s('managed_only', 'false'), s('hook_source', 'merged'), s('safe_mode', 'false'),
      );
      break;
    }
    case 'api_request':
      attrs.push(s('model', 'claude-sonnet-4-5'), s('cost_usd', '0.0123'), s('duration_ms', '2345'), s('input_tokens', '5230'), s('output_tokens', '412'), s('cache_read_tokens', '48210'), s('cache_creation_tokens', '0'));
      break;
    case 'tool_decision':
      attrs.push(s('tool_name', 'Bash'), s('decision', 'accept'), s('source', 'config'));
      break;
    case 'tool_result':
      attrs.push(s('tool_name', 'Bash'), s('success', 'true'), s('duration_ms', '184'), s('tool_parameters', JSON.stringify({ bash_command: 'npm', full_command: 'npm test -- --run collector/src', timeout: 120000, description: 'Run the tests' })));
      break;
    case 'user_prompt':
      attrs.push(s('prompt_length', '142'), s('prompt', '<REDACTED>'));
      break;
  }
  const nanos = `${BigInt(ms) * 1_000_000n}`;
  return { timeUnixNano: nanos, observedTimeUnixNano: nanos, body: { stringValue: `claude_code.${type}` }, attributes: attrs };
}

/** An OTLP/JSON-shaped ExportLogsServiceRequest with `records` log records. */
export function claudeCodeRequest(records: number, baseMs = Date.now()): Record<string, unknown> {
  return {
    resourceLogs: [{
      resource: {
        attributes: [s('host.arch', 'amd64'), s('os.type', 'linux'), s('os.version', '6.18.44'), s('service.name', 'claude-code'), s('service.version', '2.1.332'), s('team', 'platform')],
      },
      scopeLogs: [{ scope: { name: 'com.anthropic.claude_code.events', version: '2.1.332' }, logRecords: Array.from({ length: records }, (_, i) => record(i, baseMs)) }],
    }],
  };
}

export type WireEncoding = 'protobuf' | 'json';

/** Where one record's time sits in the encoded bytes. */
interface TimeField {
  offset: number;
  record: number;
  /** ISO event.timestamp (24 ASCII characters), fixed64 little-endian nanoseconds, or decimal nanoseconds. */
  form: 'iso' | 'nanos-le' | 'nanos-text';
}

/** An encoded batch template plus where the session placeholder and the record times sit in it. */
export interface BatchTemplate {
  encoding: WireEncoding;
  records: number;
  bytes: Buffer;
  offsets: number[];
  times: TimeField[];
  contentType: string;
}

function findAll(bytes: Buffer, needle: Buffer, from: number, count: number, what: string): number[] {
  const out: number[] = [];
  for (let at = bytes.indexOf(needle, from); at !== -1 && out.length < count; at = bytes.indexOf(needle, at + needle.length)) out.push(at);
  if (out.length !== count) throw new Error(`batch template: found ${out.length} of ${count} ${what}`);
  return out;
}

/** Encodes a request once; `stamp` then makes fresh copies cheaply. */
export function batchTemplate(records: number, encoding: WireEncoding, baseMs = Date.now()): BatchTemplate {
  const req = claudeCodeRequest(records, baseMs);
  const bytes = encoding === 'protobuf' ? encodeLogsProto(req) : Buffer.from(JSON.stringify(req));
  const offsets = findAll(bytes, Buffer.from(SESSION_PLACEHOLDER), 0, records, 'session ids');
  const times: TimeField[] = [];
  let cursor = 0;
  for (let i = 0; i < records; i++) {
    const ms = baseMs + i * RECORD_STEP_MS;
    const nanos = BigInt(ms) * 1_000_000n;
    let needle: Buffer;
    if (encoding === 'protobuf') {
      needle = Buffer.alloc(8);
      needle.writeBigUInt64LE(nanos);
    } else {
      needle = Buffer.from(`"${nanos}"`);
    }
    // timeUnixNano and observedTimeUnixNano, then event.timestamp, in that order within the record.
    const [t, o] = findAll(bytes, needle, cursor, 2, `times of record ${i}`) as [number, number];
    const shift = encoding === 'protobuf' ? 0 : 1;
    times.push({ offset: t + shift, record: i, form: encoding === 'protobuf' ? 'nanos-le' : 'nanos-text' });
    times.push({ offset: o + shift, record: i, form: encoding === 'protobuf' ? 'nanos-le' : 'nanos-text' });
    const [iso] = findAll(bytes, Buffer.from(new Date(ms).toISOString()), cursor, 1, `event.timestamp of record ${i}`) as [number];
    times.push({ offset: iso, record: i, form: 'iso' });
    cursor = Math.max(o, iso) + 1;
  }
  return { encoding, records, bytes, offsets, times, contentType: encoding === 'protobuf' ? 'application/x-protobuf' : 'application/json' };
}

/**
 * A copy of the template whose records all carry `sessionId` (36 ASCII characters, e.g. a UUID) and whose last
 * record happened at `endMs` (the others 37 ms apart before it), as a live client sends what just happened.
 * Every value is rewritten in place at the same length, so protobuf lengths stay valid.
 */
export function stamp(t: BatchTemplate, sessionId: string = randomUUID(), endMs: number = Date.now()): Buffer {
  if (sessionId.length !== SESSION_PLACEHOLDER.length) throw new Error('session id must be 36 characters');
  const out = Buffer.from(t.bytes);
  for (const at of t.offsets) out.write(sessionId, at, 'latin1');
  const firstMs = endMs - (t.records - 1) * RECORD_STEP_MS;
  for (const f of t.times) {
    const ms = firstMs + f.record * RECORD_STEP_MS;
    if (f.form === 'iso') out.write(new Date(ms).toISOString(), f.offset, 'latin1');
    else if (f.form === 'nanos-le') out.writeBigUInt64LE(BigInt(ms) * 1_000_000n, f.offset);
    else out.write(String(BigInt(ms) * 1_000_000n), f.offset, 'latin1');
  }
  return out;
}

/** gzip at the level the OpenTelemetry exporters use (zlib default). */
export function gzip(bytes: Buffer): Buffer {
  return gzipSync(bytes);
}

/** otlp.maxRequestBytes, the default: the largest request body a client may send. */
export const MAX_REQUEST_BYTES = Number(RECEIVER_SETTINGS.find((x) => x.key === 'otlp.maxRequestBytes')?.default);

/** Hook records per resource of maxSizeRequest: one session each. */
const MAX_SIZE_PER_RESOURCE = 1000;

/** `n` hook executions of one new session, each of its own millisecond from `startMs`: every one a new event to commit. */
function hookExecutions(n: number, startMs: number): Record<string, unknown> {
  const session = randomUUID();
  return {
    resource: { attributes: [s('service.name', 'claude-code')] },
    scopeLogs: [{
      scope: { name: 'com.anthropic.claude_code.events' },
      logRecords: Array.from({ length: n }, (_, i) => ({
        timeUnixNano: String(BigInt(startMs + i) * 1_000_000n),
        attributes: [
          s('event.name', 'hook_execution_complete'), s('session.id', session), s('hook_event', 'PreToolUse'),
          s('hook_name', 'PreToolUse:Bash'), s('num_hooks', '1'), s('num_success', '1'), s('total_duration_ms', String(40 + (i % 300))),
          s('stdout_chars', String(i % 9000)), s('additional_context_chars', String(i % 8000)),
        ],
      })),
    }],
  };
}

/** A request of hook executions only, as many as fit in `maxBytes`, and how many it holds. */
export interface MaxSizeRequest {
  body: Buffer;
  records: number;
  contentType: string;
}

/**
 * One request as large as otlp.maxRequestBytes lets a client send, every record a hook execution (the most
 * costly record to take: each is a hook event to commit), 1,000 per session: for protobuf some 70,000 records,
 * for JSON some 30,000. Resources are encoded apart and joined, as the repeated resourceLogs field allows.
 */
export function maxSizeRequest(encoding: WireEncoding, maxBytes = MAX_REQUEST_BYTES): MaxSizeRequest {
  const encode = (rl: Record<string, unknown>): Buffer => (encoding === 'protobuf' ? encodeLogsProto({ resourceLogs: [rl] }) : Buffer.from(JSON.stringify(rl)));
  const start = Date.now() - 100_000;
  const parts: Buffer[] = [];
  // JSON: {"resourceLogs":[ ... ]} around the resources, a comma between them.
  let size = encoding === 'protobuf' ? 0 : 19;
  for (;;) {
    const part = encode(hookExecutions(MAX_SIZE_PER_RESOURCE, start + parts.length * MAX_SIZE_PER_RESOURCE));
    if (size + part.length + 1 > maxBytes) break;
    parts.push(part);
    size += part.length + 1;
  }
  const body = encoding === 'protobuf'
    ? Buffer.concat(parts)
    : Buffer.concat([Buffer.from('{"resourceLogs":['), ...parts.flatMap((p, i) => (i === 0 ? [p] : [Buffer.from(','), p])), Buffer.from(']}')]);
  return { body, records: parts.length * MAX_SIZE_PER_RESOURCE, contentType: encoding === 'protobuf' ? 'application/x-protobuf' : 'application/json' };
}

/**
 * One protobuf request as large as otlp.maxRequestBytes lets a client send, of a single log record the hook stage
 * does not read (an api_request) carrying as many short string attributes as fit: about a million, each
 * `attr.NNNNNNN` = `v`. The most attributes one record can bring, all of them read and checked, none kept.
 */
export function maxSizeRecord(maxBytes = MAX_REQUEST_BYTES): { body: Buffer; attributes: number } {
  const kv = (k: string, v: string): Buffer => lengthDelimited(6, Buffer.concat([lengthDelimited(1, Buffer.from(k)), lengthDelimited(2, lengthDelimited(1, Buffer.from(v)))]));
  const head = Buffer.concat([lengthDelimited(5, lengthDelimited(1, Buffer.from('claude_code.api_request'))), kv('event.name', 'api_request')]);
  const one = kv('attr.0000000', 'v');
  const digits = one.indexOf('0000000');
  // Room for the record's, the ScopeLogs' and the ResourceLogs' tags and lengths (up to 5 bytes each).
  const n = Math.floor((maxBytes - head.length - 3 * 5) / one.length);
  const attrs = Buffer.alloc(n * one.length);
  for (let i = 0; i < n; i++) {
    one.copy(attrs, i * one.length);
    attrs.write(String(i).padStart(7, '0'), i * one.length + digits, 'latin1');
  }
  // ExportLogsServiceRequest.resource_logs > ResourceLogs.scope_logs > ScopeLogs.log_records
  const body = lengthDelimited(1, lengthDelimited(2, lengthDelimited(2, Buffer.concat([head, attrs]))));
  if (body.length > maxBytes) throw new Error(`maxSizeRecord: ${body.length} B is over ${maxBytes} B`);
  return { body, attributes: n + 1 };
}

/** A fixed64 field (wire type 1): OTLP's timestamps. */
function fixed64(field: number, value: bigint): Buffer {
  const b = Buffer.alloc(9);
  b[0] = (field << 3) | 1;
  b.writeBigUInt64LE(value, 1);
  return b;
}

/** Three string attributes as an HTTP server's metrics and spans carry them, under `field` (KeyValue). */
function httpAttributes(field: number, i: number): Buffer[] {
  const kv = (k: string, v: string): Buffer => lengthDelimited(field, Buffer.concat([lengthDelimited(1, Buffer.from(k)), lengthDelimited(2, lengthDelimited(1, Buffer.from(v)))]));
  return [kv('host.name', `host-${i % 50}`), kv('http.route', `/api/v1/items/${i % 200}`), kv('http.request.method', 'GET')];
}

/** `n` monotonic sums of one data point each (Metric.sum > NumberDataPoint), or `n` server spans, of one resource. */
function passThroughResource(signal: 'metrics' | 'traces', n: number, nowNanos: bigint): Buffer {
  const items = Array.from({ length: n }, (_, i) => {
    if (signal === 'metrics') {
      const point = Buffer.concat([...httpAttributes(7, i), fixed64(2, nowNanos - 60_000_000_000n), fixed64(3, nowNanos), fixed64(6, BigInt(i))]);
      const sum = Buffer.concat([lengthDelimited(1, point), varintField(2, 2), varintField(3, 1)]);
      return lengthDelimited(2, Buffer.concat([lengthDelimited(1, Buffer.from(`http.server.requests.${i % 20}`)), lengthDelimited(3, Buffer.from('1')), lengthDelimited(7, sum)]));
    }
    const id = randomBytes(16);
    return lengthDelimited(2, Buffer.concat([
      lengthDelimited(1, id), lengthDelimited(2, id.subarray(0, 8)), lengthDelimited(5, Buffer.from(`GET /api/v1/items/${i % 200}`)),
      varintField(6, 2), fixed64(7, nowNanos - BigInt(i) * 1_000_000n), fixed64(8, nowNanos), ...httpAttributes(9, i),
    ]));
  });
  const scope = Buffer.concat([lengthDelimited(1, lengthDelimited(1, Buffer.from('bench'))), ...items]);
  const resource = lengthDelimited(1, lengthDelimited(1, Buffer.concat([lengthDelimited(1, Buffer.from('service.name')), lengthDelimited(2, lengthDelimited(1, Buffer.from('api')))])));
  // Export*ServiceRequest.resource_* > Resource*.scope_* (field 2) > Scope*.metrics or spans (field 2)
  return lengthDelimited(1, Buffer.concat([resource, lengthDelimited(2, scope)]));
}

/** passThroughResource in OTLP/JSON: `n` sums or spans of one resource, as a resourceMetrics or resourceSpans item. */
function passThroughResourceJson(signal: 'metrics' | 'traces', n: number, nowNanos: bigint): Buffer {
  const attributes = (i: number): unknown[] => [s('host.name', `host-${i % 50}`), s('http.route', `/api/v1/items/${i % 200}`), s('http.request.method', 'GET')];
  const items = Array.from({ length: n }, (_, i) => {
    if (signal === 'metrics') {
      const point = { attributes: attributes(i), startTimeUnixNano: String(nowNanos - 60_000_000_000n), timeUnixNano: String(nowNanos), asInt: String(i) };
      return { name: `http.server.requests.${i % 20}`, unit: '1', sum: { dataPoints: [point], aggregationTemporality: 2, isMonotonic: true } };
    }
    const id = randomBytes(16).toString('hex');
    return {
      traceId: id, spanId: id.slice(0, 16), name: `GET /api/v1/items/${i % 200}`, kind: 2,
      startTimeUnixNano: String(nowNanos - BigInt(i) * 1_000_000n), endTimeUnixNano: String(nowNanos), attributes: attributes(i),
    };
  });
  const scope = { scope: { name: 'bench' }, [signal === 'metrics' ? 'metrics' : 'spans']: items };
  return Buffer.from(JSON.stringify({ resource: { attributes: [s('service.name', 'api')] }, [signal === 'metrics' ? 'scopeMetrics' : 'scopeSpans']: [scope] }));
}

/**
 * One metrics or traces request as large as otlp.maxRequestBytes lets a client send: resources of 1,000 sums or
 * spans, some 136,000 sums or 129,000 spans in all in protobuf, 52,000 sums or 53,000 spans in JSON
 * (docs/benchmarks.md); the same resource repeated (hookwatch checks these requests' framing and forwards them,
 * it does not decode them).
 */
export function maxSizePassThrough(signal: 'metrics' | 'traces', maxBytes = MAX_REQUEST_BYTES, encoding: WireEncoding = 'protobuf'): { body: Buffer; items: number } {
  const nowNanos = BigInt(Date.now()) * 1_000_000n;
  if (encoding === 'protobuf') {
    const one = passThroughResource(signal, MAX_SIZE_PER_RESOURCE, nowNanos);
    const copies = Math.floor(maxBytes / one.length);
    return { body: Buffer.concat(Array.from({ length: copies }, () => one)), items: copies * MAX_SIZE_PER_RESOURCE };
  }
  // {"resourceMetrics":[ ... ]} around the resources, a comma between them.
  const one = passThroughResourceJson(signal, MAX_SIZE_PER_RESOURCE, nowNanos);
  const open = Buffer.from(`{"${signal === 'metrics' ? 'resourceMetrics' : 'resourceSpans'}":[`);
  const copies = Math.floor((maxBytes - open.length - 2 + 1) / (one.length + 1));
  const parts = Array.from({ length: copies }, (_, i) => (i === 0 ? [one] : [Buffer.from(','), one])).flat();
  return { body: Buffer.concat([open, ...parts, Buffer.from(']}')]), items: copies * MAX_SIZE_PER_RESOURCE };
}
