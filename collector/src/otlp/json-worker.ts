/**
 * The thread a large OTLP/JSON body is parsed on (json-thread.ts), off the event loop that receives OTLP: a logs
 * body decoded to the model and sent back in fragments of pieces serialized apart, each one slice of work to
 * take in on the event loop; a metrics or traces body checked, and only the verdict sent back.
 */
import { parentPort } from 'node:worker_threads';
import { serialize } from 'node:v8';
import { decodeLogsJson } from './decode-json.ts';
import type { JsonAnswer, JsonJob, LogsPiece, RecordsPiece } from './json-thread.ts';
import { DECODE_SLICE_BYTES, DECODED_BYTES, DecodeBudget, DecodeError, DecodeLimitError, type LogsRequest } from './model.ts';
import { checkOtlpJson } from './validate.ts';

/**
 * `req` as pieces in order, cut into fragments of about DECODE_SLICE_BYTES of what they decoded to (a record and
 * its attributes, nested values aside): a fragment is taken in on the event loop as one slice.
 */
function fragments(req: LogsRequest): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  let pieces: LogsPiece[] = [];
  let size = 0;
  const cut = (): void => {
    const bytes = serialize(pieces);
    // Its own memory when it is not a slice of a pool: sent as it is, not copied.
    const whole = bytes.byteOffset === 0 && bytes.length === bytes.buffer.byteLength;
    out.push(whole ? bytes.buffer : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
    pieces = [];
    size = 0;
  };
  for (const rl of req.resourceLogs) {
    pieces.push({ resource: rl.resource });
    for (const sl of rl.scopeLogs) {
      let records: RecordsPiece = { scope: sl.scope, records: [] };
      pieces.push(records);
      for (const rec of sl.logRecords) {
        records.records.push(rec);
        size += DECODED_BYTES.record + DECODED_BYTES.value * rec.attributes.size;
        if (size < DECODE_SLICE_BYTES) continue;
        cut();
        records = { records: [] };
        pieces.push(records);
      }
    }
  }
  cut();
  return out;
}

function answer(job: JsonJob): { answer: JsonAnswer; transfer: ArrayBuffer[] } {
  try {
    const text = Buffer.from(job.body).toString('utf8');
    const budget = new DecodeBudget(job.maxBytes);
    if (job.signal !== 'logs') {
      checkOtlpJson(job.signal, text, budget);
      return { answer: { id: job.id, bytes: 0, fragments: [] }, transfer: [] };
    }
    const parts = fragments(decodeLogsJson(text, budget));
    return { answer: { id: job.id, bytes: budget.bytes, fragments: parts }, transfer: parts };
  } catch (err) {
    if (err instanceof DecodeLimitError) return { answer: { id: job.id, failure: { kind: 'limit', message: err.message, limitBytes: err.limitBytes, ...(err.readShare === undefined ? {} : { readShare: err.readShare }) } }, transfer: [] };
    const kind = err instanceof DecodeError ? 'decode' : 'other';
    return { answer: { id: job.id, failure: { kind, message: (err as Error).message ?? String(err) } }, transfer: [] };
  }
}

parentPort?.on('message', (job: JsonJob) => {
  const { answer: a, transfer } = answer(job);
  parentPort?.postMessage(a, transfer);
});
