/** The small interfaces the pipeline's stages meet through. */
import type { Encoding } from '../otlp/encode.ts';
import type { LogsRequest } from '../otlp/model.ts';
import type { DeliveryStatus } from '../../../shared/src/cliff.ts';
import type { HookEvent } from '../hooks/model.ts';
import type { GuardTrim } from '../store/guard-trims.ts';

export type Signal = 'logs' | 'metrics' | 'traces';

/** The request as it arrived (after decompression), for stages that pass data on unchanged. */
export interface RawRequest {
  signal: Signal;
  body: Buffer;
  encoding: Encoding;
  receivedAtMs: number;
}

export interface ConsumeResult {
  /** Records that could not be used (reported to the client as partial success). */
  rejected: number;
  message: string;
  /** Each log record's delivery status in wire order, as the hook stage classified it (for forward.enrich). */
  statuses?: readonly (DeliveryStatus | undefined)[];
}

/** Next stage after a receiver for logs. Throws a classified error (see errors.ts) to refuse the request. */
export interface LogsConsumer {
  /**
   * Refuses a request the stage could not take now (a classified error, e.g. overloaded), before the receiver
   * spends a decode on it. consumeLogs checks again: admission is advice, not a reservation.
   */
  admit?(raw: RawRequest): void;
  /**
   * Refuses every request for now (a classified error), before the receiver reads a byte of its body: the stage
   * can take none, whatever it holds (the store not open yet). OTLP/HTTP only: a gRPC message arrives whole, and
   * its receiver may hold it until the stage takes it.
   */
  admitUnread?(): void;
  /**
   * The event names (attribute event.name, LogRecord.event_name or a string body) of the log records whose
   * attributes the stage reads: the receivers may decode the other records without their attributes (every record
   * still checked and counted). Undefined: the stage reads every record's attributes.
   */
  readonly eventNames?: ReadonlySet<string>;
  consumeLogs(req: LogsRequest, raw: RawRequest): Promise<ConsumeResult>;
}

/** Next stage for metrics and traces, which hookwatch does not read (it may forward them). */
export interface PassThroughConsumer {
  /** As LogsConsumer.admit: refuses a request it could not take now, before the receiver checks the body. */
  admit?(raw: RawRequest): void;
  /** As LogsConsumer.admitUnread. */
  admitUnread?(): void;
  consume(raw: RawRequest): Promise<void>;
}

/** Told about events once they are committed (alert evaluation runs on ingest). */
export interface IngestListener {
  onIngested(events: readonly HookEvent[]): void;
  /**
   * Told the hooks (ids) of `hookwatch guard` trims once new ones are committed, and those trims (a retried report's
   * trims already stored are not passed on, so nothing counts twice).
   */
  onGuardTrims?(hookIds: readonly string[], trims: readonly GuardTrim[]): void;
}

/** Accepts metrics and traces and keeps nothing: the default when no forwarding is configured. */
export const discardPassThrough: PassThroughConsumer = {
  async consume() {},
};
