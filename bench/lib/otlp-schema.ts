/**
 * A protobufjs schema for the OTLP logs messages (opentelemetry-proto v1: common.proto, resource.proto,
 * logs.proto, logs_service.proto), written from the field numbers because no npm package ships the current
 * .proto files. The benchmarks encode Claude-Code-shaped batches with it and use its decoder as the
 * decode-only baseline; the fuzz tests use it to build well-formed requests to mutate.
 */
import protobuf from 'protobufjs';

const KV_FIELDS = { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } };

const root = protobuf.Root.fromJSON({
  nested: {
    AnyValue: {
      oneofs: { value: { oneof: ['stringValue', 'boolValue', 'intValue', 'doubleValue', 'arrayValue', 'kvlistValue', 'bytesValue'] } },
      fields: {
        stringValue: { type: 'string', id: 1 },
        boolValue: { type: 'bool', id: 2 },
        intValue: { type: 'int64', id: 3 },
        doubleValue: { type: 'double', id: 4 },
        arrayValue: { type: 'ArrayValue', id: 5 },
        kvlistValue: { type: 'KeyValueList', id: 6 },
        bytesValue: { type: 'bytes', id: 7 },
      },
    },
    ArrayValue: { fields: { values: { rule: 'repeated', type: 'AnyValue', id: 1 } } },
    KeyValueList: { fields: { values: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
    KeyValue: { fields: KV_FIELDS },
    InstrumentationScope: {
      fields: {
        name: { type: 'string', id: 1 },
        version: { type: 'string', id: 2 },
        attributes: { rule: 'repeated', type: 'KeyValue', id: 3 },
        droppedAttributesCount: { type: 'uint32', id: 4 },
      },
    },
    Resource: {
      fields: {
        attributes: { rule: 'repeated', type: 'KeyValue', id: 1 },
        droppedAttributesCount: { type: 'uint32', id: 2 },
      },
    },
    LogRecord: {
      fields: {
        timeUnixNano: { type: 'fixed64', id: 1 },
        severityNumber: { type: 'int32', id: 2 },
        severityText: { type: 'string', id: 3 },
        body: { type: 'AnyValue', id: 5 },
        attributes: { rule: 'repeated', type: 'KeyValue', id: 6 },
        droppedAttributesCount: { type: 'uint32', id: 7 },
        flags: { type: 'fixed32', id: 8 },
        traceId: { type: 'bytes', id: 9 },
        spanId: { type: 'bytes', id: 10 },
        observedTimeUnixNano: { type: 'fixed64', id: 11 },
        eventName: { type: 'string', id: 12 },
      },
    },
    ScopeLogs: {
      fields: {
        scope: { type: 'InstrumentationScope', id: 1 },
        logRecords: { rule: 'repeated', type: 'LogRecord', id: 2 },
        schemaUrl: { type: 'string', id: 3 },
      },
    },
    ResourceLogs: {
      fields: {
        resource: { type: 'Resource', id: 1 },
        scopeLogs: { rule: 'repeated', type: 'ScopeLogs', id: 2 },
        schemaUrl: { type: 'string', id: 3 },
      },
    },
    ExportLogsServiceRequest: { fields: { resourceLogs: { rule: 'repeated', type: 'ResourceLogs', id: 1 } } },
  },
});

/** The ExportLogsServiceRequest type: `fromObject` takes OTLP/JSON-shaped objects, `decode` takes wire bytes. */
export const ExportLogsServiceRequest = root.lookupType('ExportLogsServiceRequest');

/** Encodes an OTLP/JSON-shaped request object to protobuf wire bytes. */
export function encodeLogsProto(request: object): Buffer {
  const msg = ExportLogsServiceRequest.fromObject(request);
  return Buffer.from(ExportLogsServiceRequest.encode(msg).finish());
}

/** The decode-only baseline: protobufjs decode of the wire bytes into message objects. */
export function protobufjsDecode(bytes: Uint8Array): protobuf.Message {
  return ExportLogsServiceRequest.decode(bytes);
}
