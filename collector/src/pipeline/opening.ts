/**
 * The OTLP receivers' next stages while the store opens. The ports listen before it (service.ts): a PostgreSQL
 * server may come up after hookwatch, or be migrating its schema. Meanwhile every request is refused as during a
 * database outage, 503 / UNAVAILABLE with Retry-After (over gRPC held as then, store-hold.ts; over HTTP before its
 * body is read, which would only be thrown away), so nothing is acknowledged before it is committed; once open()
 * hands over the real stages, every request goes to them. A refused request hurries the next attempt to open the
 * store (store/open.ts StoreWait.hurry): a held export, or a client trying again, waits for it.
 */
import { StoreUnavailableError } from '../store/store.ts';
import type { LogsConsumer, PassThroughConsumer } from './consumer.ts';

const NOT_OPEN = 'the store is not open yet';

/** `consumer` with the eventNames of the stage it hands requests to, read as each request is decoded. */
function withEventNames(eventNames: () => ReadonlySet<string> | undefined, consumer: LogsConsumer): LogsConsumer {
  return Object.defineProperty(consumer, 'eventNames', { get: eventNames, enumerable: true });
}

export class OpeningIntake {
  private next: { logs: LogsConsumer; passThrough: PassThroughConsumer } | undefined;

  private readonly refused: () => void;

  /** `refused`: told of each request refused, which waits for the store (the next attempt to open it comes sooner). */
  constructor(refused: () => void = () => {}) {
    this.refused = refused;
  }

  /** The receivers' logs consumer: refuses until open(), then the real one. */
  readonly logs: LogsConsumer = withEventNames(() => this.next?.logs.eventNames, {
    admit: (raw) => this.next?.logs.admit?.(raw),
    admitUnread: () => {
      if (!this.next) throw this.refuse();
      this.next.logs.admitUnread?.();
    },
    consumeLogs: async (req, raw) => {
      if (!this.next) throw this.refuse();
      return this.next.logs.consumeLogs(req, raw);
    },
  });

  /** The receivers' metrics and traces consumer: refuses until open(), then the real one. */
  readonly passThrough: PassThroughConsumer = {
    admit: (raw) => this.next?.passThrough.admit?.(raw),
    admitUnread: () => {
      if (!this.next) throw this.refuse();
      this.next.passThrough.admitUnread?.();
    },
    consume: async (raw) => {
      if (!this.next) throw this.refuse();
      return this.next.passThrough.consume(raw);
    },
  };

  private refuse(): StoreUnavailableError {
    this.refused();
    return new StoreUnavailableError(NOT_OPEN);
  }

  /** The store is open and the stages after the receivers built: requests go to them from now on. */
  open(next: { logs: LogsConsumer; passThrough: PassThroughConsumer }): void {
    this.next = next;
  }
}
