/**
 * Records of one kind in an OTLP logs request, each turned into a row; a record that cannot be used is rejected on
 * its own with a reason that points at it, never the whole batch.
 */
import type { LogRecord, LogsRequest } from '../otlp/model.ts';

/** Reasons kept per request: enough to fix a sender, bounded whatever the batch. */
const MAX_PROBLEMS = 5;

export interface RecordExtract<T> {
  items: T[];
  rejected: number;
  problems: string[];
}

/**
 * `convert` of each record `accept` takes; an error `isRejection` recognises rejects that record, any other error
 * propagates (a fault of hookwatch, not of the sender).
 */
export function extractRecords<T>(req: LogsRequest, accept: (rec: LogRecord) => boolean, convert: (rec: LogRecord) => T, isRejection: (err: unknown) => err is Error): RecordExtract<T> {
  const out: RecordExtract<T> = { items: [], rejected: 0, problems: [] };
  req.resourceLogs.forEach((rl, i) => {
    rl.scopeLogs.forEach((sl, j) => {
      sl.logRecords.forEach((rec, k) => {
        if (!accept(rec)) return;
        try {
          out.items.push(convert(rec));
        } catch (err) {
          if (!isRejection(err)) throw err;
          out.rejected++;
          if (out.problems.length < MAX_PROBLEMS) out.problems.push(`resourceLogs[${i}].scopeLogs[${j}].logRecords[${k}]: ${err.message}`);
        }
      });
    });
  });
  return out;
}
