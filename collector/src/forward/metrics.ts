/** The forwarding stage's figures for /metrics: the durable queue, delivery outcomes, dead letters, state. */
import { sqliteFileBytes } from '../store/sqlite/database.ts';
import type { MetricsRegistry, SetSample } from '../telemetry/metrics.ts';
import type { ForwarderStatus } from './forwarder.ts';

/** What /metrics reads of the forwarding stage. */
export interface ForwardSource {
  status(): ForwardStatusLike;
  deadLetterSummary?(): { count: number; bytes: number; maxBytes: number };
  /** The queue file (`path`; ':memory:' has none). */
  queue?: { readonly path?: string; counters(): { deadLettersEvicted: number; expired: number } };
}

/** The parts of the forwarder's status that /metrics reports (no destination URL: it may hold credentials). */
export type ForwardStatusLike = Omit<ForwarderStatus, 'destination' | 'lastError' | 'lastSuccessAtMs' | 'nextAttemptAtMs' | 'attemptStartedAtMs'>;

const FORWARD_STATES = ['idle', 'sending', 'backing_off', 'stopped'] as const;

export function registerForwardMetrics(metrics: MetricsRegistry, f: ForwardSource): void {
  const status = metrics.perScrape(() => f.status());
  const gauge = (name: string, help: string, value: () => number): void => metrics.collectedGauge('forward', { name, help, collect: (set) => set({}, value()) });
  const counter = (name: string, help: string, value: () => number): void => metrics.collectedCounter('forward', { name, help, collect: (set) => set({}, value()) });
  gauge('hookwatch_forward_queue_depth', 'Requests in the durable forward queue, waiting for the downstream.', () => status().depth);
  gauge('hookwatch_forward_queue_bytes', 'Bytes in the durable forward queue.', () => status().bytes);
  gauge('hookwatch_forward_queue_max_bytes', 'Bound of the forward queue (forward.queue.maxBytes); when full, clients get 503.', () => status().maxBytes);
  metrics.collectedGauge('forward', {
    name: 'hookwatch_forward_oldest_age_seconds', help: 'Age of the oldest queued request; absent when the queue is empty.',
    collect: (set: SetSample<never>) => {
      // Unknown is not zero: with an empty queue there is no oldest request, so no sample.
      const age = status().oldestAgeMs;
      if (age !== null) set({}, age / 1000);
    },
  });
  counter('hookwatch_forward_delivered_total', 'Requests the downstream accepted.', () => status().delivered);
  counter('hookwatch_forward_retries_total', 'Forwarding attempts that failed and will be retried.', () => status().retries);
  counter('hookwatch_forward_dead_letters_total', 'Requests the downstream refused permanently (kept as dead letters).', () => status().deadLetters);
  counter('hookwatch_forward_rejected_records_total', 'Records the downstream reported rejected in requests it accepted (OTLP partial success); not retried.', () => status().rejectedByDestination);
  counter('hookwatch_forward_refused_full_total', 'Client requests refused with 503 because the forward queue was full.', () => status().refusedFull);
  counter('hookwatch_forward_tls_failures_total', 'Forwarding attempts whose TLS handshake with the destination failed (certificate not trusted, for another name or out of date; client certificate refused); retried.', () => status().tlsFailures);
  gauge('hookwatch_forward_consecutive_failures', 'Failed forwarding attempts since the last success.', () => status().consecutiveFailures);
  metrics.collectedGauge('forward', {
    name: 'hookwatch_forward_state', help: 'Forwarder state: 1 for the current one.', labelNames: ['state'],
    collect: (set) => {
      const current = status().state;
      for (const state of FORWARD_STATES) set({ state }, current === state ? 1 : 0);
    },
  });
  // The dead letters held for replay against their own bound, and what retention and the bound removed.
  const summary = f.deadLetterSummary?.bind(f);
  if (summary) {
    const deadLetters = metrics.perScrape(summary);
    gauge('hookwatch_forward_dead_letters_held', 'Dead letters kept with their bodies, waiting for a replay.', () => deadLetters().count);
    gauge('hookwatch_forward_dead_letters_bytes', 'Bytes of the dead letters held.', () => deadLetters().bytes);
    gauge('hookwatch_forward_dead_letters_max_bytes', 'Bound of the dead letters (forward.deadLetters.maxBytes); over it the oldest are evicted.', () => deadLetters().maxBytes);
  }
  const queue = f.queue;
  if (queue) {
    const counters = metrics.perScrape(() => queue.counters());
    counter('hookwatch_forward_dead_letters_evicted_total', 'Dead letters removed, oldest first, to stay within forward.deadLetters.maxBytes.', () => counters().deadLettersEvicted);
    counter('hookwatch_forward_expired_total', 'Queued requests and dead letters removed by retention (retention.events).', () => counters().expired);
    const path = queue.path;
    if (path !== undefined) {
      // The file with its write-ahead log, as it takes the disk: pages freed by deliveries are reused, not returned.
      metrics.collectedGauge('forward', {
        name: 'hookwatch_forward_queue_file_bytes', help: 'Bytes the forward queue file (forward.queue.path) and its write-ahead log take on disk; absent for an in-memory queue.',
        collect: async (set: SetSample<never>) => {
          const size = await sqliteFileBytes(path);
          if (size) set({}, size.database + size.wal);
        },
      });
    }
  }
}
