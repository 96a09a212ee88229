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
 * Takes the records of one kind as a walk over a request meets them (`visit` with each record's position), so
 * several kinds can share one walk: the hook stage reads each record once, not once per kind.
 */
export class RecordCollector<T> {
  readonly out: RecordExtract<T> = { items: [], rejected: 0, problems: [] };
  private readonly accept: (rec: LogRecord) => boolean;
  private readonly convert: (rec: LogRecord) => T;
  private readonly isRejection: (err: unknown) => err is Error;

  /**
   * `convert` of each record `accept` takes; an error `isRejection` recognises rejects that record, any other error
   * propagates (a fault of hookwatch, not of the sender).
   */
  constructor(accept: (rec: LogRecord) => boolean, convert: (rec: LogRecord) => T, isRejection: (err: unknown) => err is Error) {
    this.accept = accept;
    this.convert = convert;
    this.isRejection = isRejection;
  }

  /** The record at resourceLogs[i].scopeLogs[j].logRecords[k]. */
  visit(rec: LogRecord, i: number, j: number, k: number): void {
    if (!this.accept(rec)) return;
    try {
      this.out.items.push(this.convert(rec));
    } catch (err) {
      if (!this.isRejection(err)) throw err;
      this.out.rejected++;
      if (this.out.problems.length < MAX_PROBLEMS) this.out.problems.push(`resourceLogs[${i}].scopeLogs[${j}].logRecords[${k}]: ${err.message}`);
    }
  }
}

/** Every record of a request in wire order, with its position. */
export function forEachRecord(req: LogsRequest, visit: (rec: LogRecord, i: number, j: number, k: number) => void): void {
  req.resourceLogs.forEach((rl, i) => {
    rl.scopeLogs.forEach((sl, j) => {
      sl.logRecords.forEach((rec, k) => visit(rec, i, j, k));
    });
  });
}

/** What `c` takes from a request, in a walk of its own. */
export function collect<T>(req: LogsRequest, c: RecordCollector<T>): RecordExtract<T> {
  forEachRecord(req, (rec, i, j, k) => c.visit(rec, i, j, k));
  return c.out;
}

/** The records of one kind in a request, in a walk of their own (RecordCollector). */
export function extractRecords<T>(req: LogsRequest, accept: (rec: LogRecord) => boolean, convert: (rec: LogRecord) => T, isRejection: (err: unknown) => err is Error): RecordExtract<T> {
  return collect(req, new RecordCollector(accept, convert, isRejection));
}
