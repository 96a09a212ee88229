/**
 * Optional enrichment (`forward.enrich`): adds the attribute `hookwatch.delivery` = over|near|ok|unknown to each
 * forwarded hook_execution_complete record, so the downstream backend can chart the cliff without hookwatch.
 * Everything else in the request is kept: protobuf bodies are spliced (only the enclosing lengths change and the
 * new attribute is appended to the record); OTLP/JSON bodies are re-serialized, which keeps every value (numbers in
 * their source text) but not the original whitespace or key order.
 */
import type { DeliveryStatus } from '../../../shared/src/cliff.ts';
import type { LogsTransform } from './consumer.ts';
import { field } from '../otlp/decode-json.ts';
import { lengthDelimited } from '../otlp/proto-write.ts';

/** The attribute added to forwarded hook records. */
export const DELIVERY_ATTRIBUTE = 'hookwatch.delivery';

/** KeyValue{key, value: AnyValue{string_value}} as LogRecord.attributes (field 6). */
function attribute(status: string): Buffer {
  const kv = Buffer.concat([lengthDelimited(1, Buffer.from(DELIVERY_ATTRIBUTE)), lengthDelimited(2, lengthDelimited(1, Buffer.from(status)))]);
  return lengthDelimited(6, kv);
}

/**
 * Copies a message field by field, passing the payload of every length-delimited field `num` through `child`.
 * The input was already decoded successfully, so it is well-formed.
 */
function mapField(buf: Buffer, num: number, child: (payload: Buffer) => Buffer): Buffer {
  const parts: Buffer[] = [];
  let pos = 0;
  const readVarint = (): number => {
    let result = 0;
    let mul = 1;
    for (;;) {
      const b = buf[pos++] as number;
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return result;
      mul *= 128;
    }
  };
  while (pos < buf.length) {
    const start = pos;
    const tag = readVarint();
    const wire = tag & 7;
    if (wire === 2) {
      const len = readVarint();
      const payload = buf.subarray(pos, pos + len);
      pos += len;
      if (Math.floor(tag / 8) === num) {
        parts.push(lengthDelimited(num, child(payload)));
        continue;
      }
    } else if (wire === 0) {
      readVarint();
    } else if (wire === 1) {
      pos += 8;
    } else if (wire === 5) {
      pos += 4;
    }
    parts.push(buf.subarray(start, pos));
  }
  return Buffer.concat(parts);
}

/** Adds the delivery attribute to hook records of a protobuf ExportLogsServiceRequest. */
export function enrichProto(body: Buffer, statuses: readonly (DeliveryStatus | undefined)[]): Buffer {
  let i = 0;
  return mapField(body, 1, (resourceLogs) =>
    mapField(resourceLogs, 2, (scopeLogs) =>
      mapField(scopeLogs, 2, (record) => {
        const status = statuses[i++];
        return status ? Buffer.concat([record, attribute(status)]) : record;
      }),
    ),
  );
}

type JsonObject = Record<string, unknown>;

/** JSON.rawJSON (Node 22+): a value JSON.stringify writes as the given text. */
const rawJson = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

/** The objects of a repeated field as the decoder reads it (decode-json.ts `field`): null entries stay in place. */
function entries(parent: unknown, camel: string, snake: string): unknown[] {
  if (parent === null || typeof parent !== 'object') return [];
  const list = field(parent as JsonObject, camel, snake);
  return Array.isArray(list) ? list : [];
}

/**
 * Adds the delivery attribute to hook records of an OTLP/JSON ExportLogsServiceRequest. Records are walked as the
 * decoder walked them (snake_case names, null entries), so the statuses, in its order, land on their records;
 * numbers keep their source text (an int64 past 2^53 sent as a JSON number stays exact).
 */
export function enrichJson(body: Buffer, statuses: readonly (DeliveryStatus | undefined)[]): Buffer {
  const doc: unknown = JSON.parse(body.toString('utf8'), (_key, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' && context?.source !== undefined && String(value) !== context.source ? rawJson(context.source) : value);
  let i = 0;
  for (const rl of entries(doc, 'resourceLogs', 'resource_logs')) {
    for (const sl of entries(rl, 'scopeLogs', 'scope_logs')) {
      for (const rec of entries(sl, 'logRecords', 'log_records')) {
        const status = statuses[i++];
        if (!status || rec === null || typeof rec !== 'object') continue;
        const r = rec as JsonObject;
        r['attributes'] = [...(Array.isArray(r['attributes']) ? r['attributes'] : []), { key: DELIVERY_ATTRIBUTE, value: { stringValue: status } }];
      }
    }
  }
  return Buffer.from(JSON.stringify(doc));
}

/**
 * The transform the forwarding stage applies when enrichment is on; unchanged bytes when no record is a hook
 * execution. It runs after the hook stage committed the request, so a body it cannot rewrite is forwarded as it
 * came (and `onError` told) rather than failing a request whose events are already stored.
 */
export function deliveryEnricher(onError: (err: unknown) => void): LogsTransform {
  return (raw, result) => {
    // The hook stage has already classified every record; its statuses are in wire order.
    const statuses = result.statuses ?? [];
    if (!statuses.some(Boolean)) return raw.body;
    try {
      return raw.encoding === 'protobuf' ? enrichProto(raw.body, statuses) : enrichJson(raw.body, statuses);
    } catch (err) {
      onError(err);
      return raw.body;
    }
  };
}
