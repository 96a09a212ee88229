/** The OTLP logs and google.rpc.Status messages as .proto text, for checking the hand-written codecs against protobufjs. */
import protobuf from 'protobufjs';
import { OTLP_LOGS_PROTO } from '../../../bench/lib/otlp-schema.ts';

/** The logs messages, plus the export response and google.rpc.Status the receivers answer with. */
const SCHEMA = `${OTLP_LOGS_PROTO}
message ExportLogsPartialSuccess { int64 rejected_log_records = 1; string error_message = 2; }
message ExportLogsServiceResponse { ExportLogsPartialSuccess partial_success = 1; }
message Any { string type_url = 1; bytes value = 2; }
message Status { int32 code = 1; string message = 2; repeated Any details = 3; }
`;

const root = protobuf.parse(SCHEMA, { keepCase: true }).root;

/** A message type of the schema above by its short name (e.g. `ExportLogsServiceRequest`). */
export function protoType(name: string): protobuf.Type {
  return root.lookupType(name);
}
