/**
 * A protobufjs schema for the OTLP logs messages (opentelemetry-proto v1: common.proto, resource.proto,
 * logs.proto, logs_service.proto), written from the field numbers because no npm package ships the current
 * .proto files. The benchmarks encode Claude-Code-shaped batches with it and use its decoder as the
 * decode-only baseline; the fuzz tests use it to build well-formed requests to mutate.
 */
import protobuf from 'protobufjs';

/** The OTLP logs messages as .proto text: the one copy the benchmarks and the tests build their codecs from. */
export const OTLP_LOGS_PROTO = `
syntax = "proto3";
message AnyValue {
  oneof value {
    string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4;
    ArrayValue array_value = 5; KeyValueList kvlist_value = 6; bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message LogRecord {
  fixed64 time_unix_nano = 1;
  fixed64 observed_time_unix_nano = 11;
  int32 severity_number = 2;
  string severity_text = 3;
  AnyValue body = 5;
  repeated KeyValue attributes = 6;
  uint32 dropped_attributes_count = 7;
  fixed32 flags = 8;
  bytes trace_id = 9;
  bytes span_id = 10;
  string event_name = 12;
}
message ScopeLogs { InstrumentationScope scope = 1; repeated LogRecord log_records = 2; string schema_url = 3; }
message ResourceLogs { Resource resource = 1; repeated ScopeLogs scope_logs = 2; string schema_url = 3; }
message ExportLogsServiceRequest { repeated ResourceLogs resource_logs = 1; }
`;

// Field names in lowerCamelCase, as OTLP/JSON spells them.
const root = protobuf.parse(OTLP_LOGS_PROTO).root;

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
