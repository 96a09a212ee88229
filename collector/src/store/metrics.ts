/**
 * The store's figures for /metrics: the time each store call takes, calls running now and calls that failed, and
 * what it takes on disk.
 */
import type { MetricsRegistry } from '../telemetry/metrics.ts';
import type { Store, StoreSize } from './store.ts';

/** A store whose calls are timed, and how many calls of one operation are running now. */
export interface InstrumentedStore<S extends Store> {
  store: S;
  /** Calls of `operation` running now; for ingest this is the queue of batches waiting for their commit. */
  inFlight(operation: string): number;
  /** When (performance.now()) the call running longest began, any operation; undefined when none runs. */
  oldestStartedAt(): number | undefined;
}

/** Wraps a store so each async call is timed and counted in flight, and registers those metrics. */
export function instrumentStore<S extends Store>(metrics: MetricsRegistry, store: S): InstrumentedStore<S> {
  const latency = metrics.histogram({ name: 'hookwatch_store_operation_duration_seconds', help: 'Time taken by store calls, by operation (ingest is the commit the OTLP 200 waits for).', labelNames: ['operation'] });
  const errors = metrics.counter({ name: 'hookwatch_store_errors_total', help: 'Store calls that failed, by operation.', labelNames: ['operation'] });
  const inFlight = new Map<string, number>();
  metrics.collectedGauge('store', {
    name: 'hookwatch_store_inflight_operations', help: 'Store calls running now, by operation; for ingest this is the queue of batches waiting for their commit.', labelNames: ['operation'],
    collect: (set) => {
      for (const [operation, value] of inFlight) set({ operation }, value);
    },
  });
  const add = (operation: string, d: number): void => {
    inFlight.set(operation, (inFlight.get(operation) ?? 0) + d);
  };
  // Calls running now by start, in the order they began (a Map keeps insertion order): the first is the oldest.
  const running = new Map<number, number>();
  let seq = 0;
  const wrapped = new Map<PropertyKey, unknown>();
  // A Proxy rather than a class: stores grow methods (alerts, silences) and each one is timed without edits here.
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      let fn = wrapped.get(prop);
      if (!fn) {
        const operation = { operation: prop };
        // At 0 from the operation's first call, so increase() and rate() see its first failure.
        errors.inc(operation, 0);
        fn = (...args: unknown[]): unknown => {
          const started = performance.now();
          const id = seq++;
          add(prop, 1);
          let result: unknown;
          try {
            result = (value as (...a: unknown[]) => unknown).apply(target, args);
          } catch (err) {
            add(prop, -1);
            errors.inc(operation);
            throw err;
          }
          if (!(result instanceof Promise)) {
            add(prop, -1);
            return result;
          }
          running.set(id, started);
          return result.then(
            (v: unknown) => {
              add(prop, -1);
              running.delete(id);
              latency.observe(operation, (performance.now() - started) / 1000);
              return v;
            },
            (err: unknown) => {
              add(prop, -1);
              running.delete(id);
              errors.inc(operation);
              latency.observe(operation, (performance.now() - started) / 1000);
              throw err;
            },
          );
        };
        wrapped.set(prop, fn);
      }
      return fn;
    },
  });
  return {
    store: proxy,
    inFlight: (operation) => inFlight.get(operation) ?? 0,
    oldestStartedAt: () => running.values().next().value,
  };
}

/**
 * hookwatch_store_size_bytes{part}: what the store takes on disk (Store.diskUsage). With `refreshMs` 0 it is read
 * at every scrape (SQLite: two stat calls). Otherwise (PostgreSQL: a catalog query) it is read every `refreshMs`
 * at most, one read at a time however often /metrics is scraped, and a scrape shows the last value read without
 * waiting; nothing before the first read has answered. A read that failed leaves the family out of the scrapes
 * until one succeeds, and is tried again at the next scrape, not a refresh period later: the database back, the
 * sizes are back at the scrape after. Each failed read is reported once, in the scrape that finds it (counted in
 * hookwatch_metrics_collector_errors_total{collector="store_size"}, logged as `metrics collector failed`): one
 * reported again at every scrape until the next read was due logged the outage for a minute after it ended.
 */
export function registerStoreSizeMetrics(metrics: MetricsRegistry, store: Pick<Store, 'diskUsage'>, opts: { refreshMs: number; now?: () => number }): void {
  const read = store.diskUsage?.bind(store);
  if (!read) return;
  const now = opts.now ?? performance.now.bind(performance);
  let last: { at: number; size: StoreSize | undefined; failed: boolean } | undefined;
  /** The failure of the last read, until a scrape reports it. */
  let failure: unknown;
  let reading: Promise<void> | undefined;
  const refresh = (): Promise<void> => {
    reading ??= read().then(
      (size) => {
        last = { at: now(), size, failed: false };
        failure = undefined;
      },
      (err: unknown) => {
        // Tried again at the next scrape; the value before it is not shown as if current.
        last = { at: now(), size: undefined, failed: true };
        failure = err;
      },
    ).finally(() => {
      reading = undefined;
    });
    return reading;
  };
  if (opts.refreshMs > 0) void refresh();
  metrics.collectedGauge('store_size', {
    name: 'hookwatch_store_size_bytes', help: 'Bytes the store takes on disk, by part (SQLite: database and wal files; PostgreSQL: events, rollups and other tables with their indexes); the parts add up to the whole.', labelNames: ['part'],
    collect: async (set) => {
      if (opts.refreshMs === 0) await refresh();
      else if (last !== undefined && (last.failed || now() - last.at >= opts.refreshMs)) void refresh();
      if (failure !== undefined) {
        const reported = failure;
        failure = undefined;
        throw reported;
      }
      for (const [part, bytes] of Object.entries(last?.size ?? {})) set({ part }, bytes);
    },
  });
}
