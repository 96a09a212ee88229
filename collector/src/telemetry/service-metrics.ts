/**
 * The metrics of a running hookwatch: what the receivers and the hook stage counted, store latency and
 * in-flight operations (the ingest queue), process facts, the per-hook counters, and the notification and
 * forwarding counters (watchStages). service.ts builds one of these and registers the alerting and cluster
 * families itself with `metrics.registry.register(...)`.
 *
 * It imports the types of the HTTP receiver, hook ingest, store and forwarder status (type-only: nothing of
 * theirs is loaded at run time); the gRPC receiver and the dispatcher are described structurally below.
 */
import type { ForwarderStatus } from '../forward/forwarder.ts';
import type { HookIngest } from '../pipeline/hook-ingest.ts';
import type { OtlpHttpReceiver } from '../receiver/otlp-http/index.ts';
import type { Store } from '../store/store.ts';
import type { Logger } from './logger.ts';
import { HookMetrics } from './hook-metrics.ts';
import { Histogram, MetricsRegistry, type MetricFamily, type Sample } from './metrics.ts';

export interface ServiceMetricsOptions {
  /** Cap on per-hook series (metrics.maxHookSeries). */
  maxHookSeries: number;
  logger?: Logger;
  /** Batches allowed to wait for the store (otlp.maxPendingRequests), reported as the queue's capacity. */
  maxPendingBatches: number;
  version?: string;
  /** Wall clock (ms) for the process start time. */
  now?: () => number;
}

/** The registry plus the pieces service.ts wires into the pipeline. */
export interface ServiceMetrics {
  registry: MetricsRegistry;
  hooks: HookMetrics;
  /** Wraps a store so each async call is timed and counted in flight. */
  instrumentStore<S extends Store>(store: S): S;
  /** Registers the receiver's and the hook stage's counters and subscribes the per-hook counters to ingest. */
  watchPipeline(parts: { ingest: HookIngest; receiver: OtlpHttpReceiver }): void;
  /** Registers the later stages: the gRPC receiver, alert notifications (webhook attempts, failures) and forwarding. */
  watchStages(parts: StageSources): void;
}

/** The counters the later stages keep, read at scrape time (the gRPC receiver and dispatcher structurally). */
export interface StageSources {
  grpcReceiver?: { stats: { requests: Record<string, number>; rejected: Record<string, number> } };
  dispatcher?: { stats: { enqueued: number; delivered: number; failed: number; dropped: number; attempts: number } };
  forwarding?: ForwardSource | undefined;
}

/** What /metrics reads of the forwarding stage. */
export interface ForwardSource {
  status(): ForwardStatusLike;
  deadLetterSummary?(): { count: number; bytes: number; maxBytes: number };
  queue?: { counters(): { deadLettersEvicted: number; expired: number } };
}

/** The parts of the forwarder's status that /metrics reports (no destination URL: it may hold credentials). */
export type ForwardStatusLike = Omit<ForwarderStatus, 'destination' | 'lastError' | 'lastSuccessAtMs' | 'nextAttemptAtMs'>;

/** Builds the metrics of one hookwatch process. */
export function createServiceMetrics(opts: ServiceMetricsOptions): ServiceMetrics {
  const registry = new MetricsRegistry(opts.logger ? { logger: opts.logger } : {});
  const hooks = new HookMetrics({ maxSeries: opts.maxHookSeries });
  const startedSeconds = (opts.now ?? Date.now)() / 1000;
  const latency = new Histogram({ name: 'hookwatch_store_operation_duration_seconds', help: 'Time taken by store calls, by operation (ingest is the commit the OTLP 200 waits for).', label: 'operation' });
  const inFlight = new Map<string, number>();
  const errors = new Map<string, number>();

  registry.register('process', () => [
    { name: 'hookwatch_build_info', type: 'gauge', help: 'Always 1; labels say which hookwatch and Node.js are running.', samples: [{ labels: { version: opts.version ?? 'unknown', node: process.versions.node }, value: 1 }] },
    { name: 'process_start_time_seconds', type: 'gauge', help: 'Start time of the process since the Unix epoch, in seconds.', samples: [{ value: startedSeconds }] },
    { name: 'process_resident_memory_bytes', type: 'gauge', help: 'Resident memory size in bytes.', samples: [{ value: process.memoryUsage.rss() }] },
    { name: 'process_cpu_seconds_total', type: 'counter', help: 'User and system CPU time spent, in seconds.', samples: [{ value: cpuSeconds() }] },
  ]);
  registry.register('store', () => [
    latency.family(),
    { name: 'hookwatch_store_inflight_operations', type: 'gauge', help: 'Store calls running now, by operation; for ingest this is the queue of batches waiting for their commit.', samples: [...inFlight].map(([operation, value]) => ({ labels: { operation }, value })) },
    { name: 'hookwatch_store_errors_total', type: 'counter', help: 'Store calls that failed, by operation.', samples: [...errors].map(([operation, value]) => ({ labels: { operation }, value })) },
  ]);
  registry.register('hooks', () => hooks.collect());

  const instrumentStore = <S extends Store>(store: S): S => {
    const wrapped = new Map<PropertyKey, unknown>();
    const add = (map: Map<string, number>, key: string, d: number): void => {
      map.set(key, (map.get(key) ?? 0) + d);
    };
    // A Proxy rather than a class: stores grow methods (alerts, silences) and each one is timed without edits here.
    return new Proxy(store, {
      get(target, prop, receiver) {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function' || typeof prop !== 'string') return value;
        let fn = wrapped.get(prop);
        if (!fn) {
          fn = (...args: unknown[]): unknown => {
            const started = performance.now();
            add(inFlight, prop, 1);
            let result: unknown;
            try {
              result = (value as (...a: unknown[]) => unknown).apply(target, args);
            } catch (err) {
              add(inFlight, prop, -1);
              add(errors, prop, 1);
              throw err;
            }
            if (!(result instanceof Promise)) {
              add(inFlight, prop, -1);
              return result;
            }
            return result.then(
              (v: unknown) => {
                add(inFlight, prop, -1);
                latency.observe(prop, (performance.now() - started) / 1000);
                return v;
              },
              (err: unknown) => {
                add(inFlight, prop, -1);
                add(errors, prop, 1);
                latency.observe(prop, (performance.now() - started) / 1000);
                throw err;
              },
            );
          };
          wrapped.set(prop, fn);
        }
        return fn;
      },
    });
  };

  const watchPipeline = ({ ingest, receiver }: { ingest: HookIngest; receiver: OtlpHttpReceiver }): void => {
    ingest.addListener(hooks);
    registry.register('otlp-http', () => receiverFamilies(receiver));
    registry.register('ingest', () => ingestFamilies(ingest, inFlight.get('ingest') ?? 0, opts.maxPendingBatches));
  };

  const watchStages = ({ grpcReceiver, dispatcher, forwarding }: StageSources): void => {
    if (grpcReceiver) registry.register('otlp-grpc', () => receiverFamilies(grpcReceiver, 'grpc'));
    if (dispatcher) registry.register('notify', () => notifyFamilies(dispatcher.stats));
    if (forwarding) registry.register('forward', () => [...forwardFamilies(forwarding.status()), ...deadLetterFamilies(forwarding)]);
  };

  return { registry, hooks, instrumentStore, watchPipeline, watchStages };
}

function cpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

function receiverFamilies(receiver: { stats: { requests: Record<string, number>; rejected: Record<string, number> } }, transport: 'http' | 'grpc' = 'http'): MetricFamily[] {
  const requests: Sample[] = [];
  for (const [key, value] of Object.entries(receiver.stats.requests)) {
    // Keys are `<signal>:<ok|status>`, set by the receiver (a fixed, small set).
    const [signal = 'unknown', outcome = 'unknown'] = key.split(':');
    requests.push({ labels: { transport, signal, outcome }, value });
  }
  const rejected = Object.entries(receiver.stats.rejected).map(([reason, value]) => ({ labels: { transport, reason }, value }));
  return [
    { name: 'hookwatch_otlp_requests_total', type: 'counter', help: 'OTLP export requests answered, by transport, signal and outcome (ok, or the HTTP status / gRPC code).', samples: requests },
    { name: 'hookwatch_otlp_requests_rejected_total', type: 'counter', help: 'OTLP requests refused, by reason (bad_request, too_large, unauthenticated, overloaded, store_unavailable, ...).', samples: rejected },
  ];
}

function ingestFamilies(ingest: HookIngest, queueDepth: number, capacity: number): MetricFamily[] {
  const s = ingest.stats;
  const one = (name: string, help: string, value: number, type: 'counter' | 'gauge' = 'counter'): MetricFamily => ({ name, help, type, samples: [{ value }] });
  return [
    one('hookwatch_ingest_batches_total', 'OTLP log batches decoded and passed to the hook stage.', s.batches),
    {
      name: 'hookwatch_log_records_received_total', type: 'counter', help: 'OTLP log records received, by what became of them (hook events, other Claude Code events, rejected hook records).',
      samples: [
        { labels: { kind: 'hook_event' }, value: s.hookEvents },
        { labels: { kind: 'other' }, value: s.otherRecords },
        { labels: { kind: 'rejected' }, value: s.rejectedRecords },
      ],
    },
    one('hookwatch_hook_events_stored_total', 'Hook events committed to the store.', s.stored),
    one('hookwatch_hook_events_duplicate_total', 'Hook events already stored (a retried batch), not counted again.', s.duplicates),
    one('hookwatch_hook_events_folded_total', 'Hook events of new hook names counted under an overflow hook because the store holds store.maxHooks hooks.', s.folded),
    one('hookwatch_hook_events_clamped_total', 'Hook events stamped more than otlp.maxFutureSkew ahead, stored at their receive time.', s.clampedFuture),
    one('hookwatch_ingest_store_errors_total', 'Batches whose store commit failed (the client was told to retry).', s.storeErrors),
    one('hookwatch_ingest_store_seconds_total', 'Time spent waiting for store commits, in seconds.', s.storeSeconds),
    one('hookwatch_ingest_queue_depth', 'Batches waiting for their store commit now.', queueDepth, 'gauge'),
    one('hookwatch_ingest_queue_capacity', 'Batches allowed to wait before new ones get 503 + Retry-After (otlp.maxPendingRequests).', capacity, 'gauge'),
  ];
}

function notifyFamilies(s: { enqueued: number; delivered: number; failed: number; dropped: number; attempts: number }): MetricFamily[] {
  return [
    {
      name: 'hookwatch_notifications_total', type: 'counter', help: 'Alert notifications (webhook, Slack, Alertmanager) by outcome: enqueued, delivered, failed (gave up after the delivery deadline or a permanent error), dropped (queue full).',
      samples: (['enqueued', 'delivered', 'failed', 'dropped'] as const).map((outcome) => ({ labels: { outcome }, value: s[outcome] })),
    },
    { name: 'hookwatch_notification_attempts_total', type: 'counter', help: 'Delivery attempts of alert notifications, retries included.', samples: [{ value: s.attempts }] },
  ];
}

const FORWARD_STATES = ['idle', 'sending', 'backing_off', 'stopped'] as const;

/** The dead letters held for replay against their own bound, and what retention and the bound removed. */
function deadLetterFamilies(f: ForwardSource): MetricFamily[] {
  const out: MetricFamily[] = [];
  const d = f.deadLetterSummary?.();
  if (d) {
    out.push({ name: 'hookwatch_forward_dead_letters_held', type: 'gauge', help: 'Dead letters kept with their bodies, waiting for a replay.', samples: [{ value: d.count }] });
    out.push({ name: 'hookwatch_forward_dead_letters_bytes', type: 'gauge', help: 'Bytes of the dead letters held.', samples: [{ value: d.bytes }] });
    out.push({ name: 'hookwatch_forward_dead_letters_max_bytes', type: 'gauge', help: 'Bound of the dead letters (forward.deadLetters.maxBytes); over it the oldest are evicted.', samples: [{ value: d.maxBytes }] });
  }
  const c = f.queue?.counters();
  if (c) {
    out.push({ name: 'hookwatch_forward_dead_letters_evicted_total', type: 'counter', help: 'Dead letters removed, oldest first, to stay within forward.deadLetters.maxBytes.', samples: [{ value: c.deadLettersEvicted }] });
    out.push({ name: 'hookwatch_forward_expired_total', type: 'counter', help: 'Queued requests and dead letters removed by retention (retention.events).', samples: [{ value: c.expired }] });
  }
  return out;
}

function forwardFamilies(s: ForwardStatusLike): MetricFamily[] {
  const g = (name: string, help: string, value: number): MetricFamily => ({ name, help, type: 'gauge', samples: [{ value }] });
  const c = (name: string, help: string, value: number): MetricFamily => ({ name, help, type: 'counter', samples: [{ value }] });
  return [
    g('hookwatch_forward_queue_depth', 'Requests in the durable forward queue, waiting for the downstream.', s.depth),
    g('hookwatch_forward_queue_bytes', 'Bytes in the durable forward queue.', s.bytes),
    g('hookwatch_forward_queue_max_bytes', 'Bound of the forward queue (forward.queue.maxBytes); when full, clients get 503.', s.maxBytes),
    // Unknown is not zero: with an empty queue there is no oldest request, so no sample.
    { name: 'hookwatch_forward_oldest_age_seconds', type: 'gauge', help: 'Age of the oldest queued request; absent when the queue is empty.', samples: s.oldestAgeMs === null ? [] : [{ value: s.oldestAgeMs / 1000 }] },
    c('hookwatch_forward_delivered_total', 'Requests the downstream accepted.', s.delivered),
    c('hookwatch_forward_retries_total', 'Forwarding attempts that failed and will be retried.', s.retries),
    c('hookwatch_forward_dead_letters_total', 'Requests the downstream refused permanently (kept as dead letters).', s.deadLetters),
    c('hookwatch_forward_refused_full_total', 'Client requests refused with 503 because the forward queue was full.', s.refusedFull),
    g('hookwatch_forward_consecutive_failures', 'Failed forwarding attempts since the last success.', s.consecutiveFailures),
    { name: 'hookwatch_forward_state', type: 'gauge', help: 'Forwarder state: 1 for the current one.', samples: FORWARD_STATES.map((state) => ({ labels: { state }, value: s.state === state ? 1 : 0 })) },
  ];
}
