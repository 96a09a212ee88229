/**
 * The receivers' figures for /metrics: OTLP requests by transport, signal and outcome, rejections by reason, and
 * the OTLP/gRPC exports held while the store was unavailable or hookwatch overloaded.
 */
import type { MetricsRegistry } from '../telemetry/metrics.ts';
import { HOLD_OUTCOMES, REJECT_REASONS, type ReceiverStats } from './options.ts';

/** One receiver's counters and the transport it is reported under. */
export interface ReceiverSource {
  transport: 'http' | 'grpc';
  stats: ReceiverStats;
}

/** Registers both receivers under one family each (a name is registered once), told apart by `transport`. */
export function registerReceiverMetrics(metrics: MetricsRegistry, receivers: readonly ReceiverSource[]): void {
  metrics.collectedCounter('otlp', {
    name: 'hookwatch_otlp_requests_total', help: 'OTLP export requests answered, by transport, signal and outcome (ok, or the HTTP status / gRPC code).',
    labelNames: ['transport', 'signal', 'outcome'],
    collect: (set) => {
      for (const { transport, stats } of receivers) {
        for (const [key, value] of Object.entries(stats.requests)) {
          // Keys are `<signal>:<ok|status>`, set by the receiver (a fixed, small set).
          const [signal = 'unknown', outcome = 'unknown'] = key.split(':');
          set({ transport, signal, outcome }, value);
        }
      }
    },
  });
  metrics.collectedCounter('otlp', {
    name: 'hookwatch_otlp_requests_rejected_total', help: 'OTLP requests refused, by reason (bad_request, too_large, unauthenticated, overloaded, store_unavailable, forward_queue_unavailable, ...).',
    labelNames: ['transport', 'reason'],
    collect: (set) => {
      // Every reason the transport can give, at 0 until it happens, so the first refusal is an increase.
      for (const { transport, stats } of receivers) {
        const counted: Partial<Record<string, number>> = stats.rejected;
        for (const reason of new Set<string>([...REJECT_REASONS[transport], ...Object.keys(counted)])) set({ transport, reason }, counted[reason] ?? 0);
      }
    },
  });
  metrics.collectedCounter('otlp', {
    name: 'hookwatch_otlp_requests_held_total', help: 'OTLP/gRPC exports held while the store was unavailable or hookwatch overloaded and tried again, by how the hold ended (committed, unavailable, cancelled, refused).',
    labelNames: ['transport', 'outcome'],
    collect: (set) => {
      for (const { transport, stats } of receivers) {
        const held = stats.held;
        if (held) for (const outcome of HOLD_OUTCOMES) set({ transport, outcome }, held[outcome]);
      }
    },
  });
}
