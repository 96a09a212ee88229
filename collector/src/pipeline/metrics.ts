/**
 * The hook stage's figures for /metrics: batches, log records by kind, events stored, the queue before the store,
 * and the near threshold and cap outputs are classified against.
 */
import { OUTPUT_CAP_CHARS } from '../../../shared/src/cliff.ts';
import type { MetricsRegistry } from '../telemetry/metrics.ts';
import type { IngestStats } from './hook-ingest.ts';

export interface IngestMetricsSource {
  stats: IngestStats;
  /** Batches waiting for their store commit now. */
  queueDepth(): number;
  /** Batches allowed to wait (otlp.maxPendingRequests). */
  capacity: number;
  /** Characters above which an output is near the cap (delivery.nearThreshold), as this process classifies now. */
  nearThreshold(): number;
}

export function registerIngestMetrics(metrics: MetricsRegistry, source: IngestMetricsSource): void {
  const s = source.stats;
  const counter = (name: string, help: string, value: () => number): void => metrics.collectedCounter('ingest', { name, help, collect: (set) => set({}, value()) });
  counter('hookwatch_ingest_batches_total', 'OTLP log batches decoded and passed to the hook stage.', () => s.batches);
  metrics.collectedCounter('ingest', {
    name: 'hookwatch_log_records_received_total', help: 'OTLP log records received, by what became of them (hook events, other Claude Code events, rejected hook records).',
    labelNames: ['kind'],
    collect: (set) => {
      set({ kind: 'hook_event' }, s.hookEvents);
      set({ kind: 'other' }, s.otherRecords);
      set({ kind: 'rejected' }, s.rejectedRecords);
    },
  });
  counter('hookwatch_hook_events_stored_total', 'Hook events committed to the store.', () => s.stored);
  counter('hookwatch_hook_events_duplicate_total', 'Hook events already stored (a retried batch), not counted again.', () => s.duplicates);
  counter('hookwatch_hook_events_folded_total', 'Hook events of new hook names counted under an overflow hook because the store holds store.maxHooks hooks.', () => s.folded);
  counter('hookwatch_hook_events_expired_total', 'Hook events older than retention.events keeps, not stored (retention would delete them, and a retry of one it deleted could not be told from a first delivery); the client is told in the partial success.', () => s.expired);
  counter('hookwatch_hook_events_clamped_total', 'Hook events stamped more than otlp.maxFutureSkew ahead, stored at their receive time.', () => s.clampedFuture);
  counter('hookwatch_ingest_store_errors_total', 'Store commits of a batch that failed (the client told to retry, or an OTLP/gRPC export held tried again).', () => s.storeErrors);
  counter('hookwatch_ingest_store_seconds_total', 'Time spent waiting for store commits, in seconds.', () => s.storeSeconds);
  metrics.collectedGauge('ingest', { name: 'hookwatch_ingest_queue_depth', help: 'Batches waiting for their store commit now.', collect: (set) => set({}, source.queueDepth()) });
  metrics.gauge({ name: 'hookwatch_ingest_queue_capacity', help: 'Batches allowed to wait before new ones get 503 + Retry-After (otlp.maxPendingRequests).' }).set(source.capacity);
  // What outputs are compared against: rules and dashboards over /metrics read them instead of repeating them.
  metrics.collectedGauge('ingest', { name: 'hookwatch_delivery_near_threshold_chars', help: 'Characters above which an output counts as near the cap (delivery.nearThreshold), as this process classifies the outputs it receives now (a reload changes it).', collect: (set) => set({}, source.nearThreshold()) });
  metrics.gauge({ name: 'hookwatch_delivery_output_cap_chars', help: 'Characters of one hook output string that Claude Code delivers whole; past it the output is saved to a file and the model sees a preview.' }).set(OUTPUT_CAP_CHARS);
}
