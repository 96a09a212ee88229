/**
 * Per-hook counters for /metrics, kept in memory from the events this process committed to the store
 * (an IngestListener). Why not ask the store at each scrape: Prometheus counters must only go up (retention
 * would make a store window shrink), a scrape should cost nothing, and several replicas sharing one
 * PostgreSQL must not each report the fleet's totals (sum() over replicas would double count).
 * So `_total` counts events ingested since this process started; over that window they equal what
 * /api/v1/hooks answers. The same rollup arithmetic as the store (store/counters.ts) keeps them equal.
 *
 * Label cardinality is bounded: the first `maxSeries` hooks get their own series; events of any further hook
 * are added to the overflow counters and the number of such hooks is reported, never a new series.
 */
import { largestKnown, largestOutput } from '../../../shared/src/cliff.ts';
import type { HookEvent } from '../hooks/model.ts';
import type { IngestListener } from '../pipeline/consumer.ts';
import { addEvent, emptyRow, toCounters, type CounterRow } from '../store/counters.ts';
import type { MetricFamily, Sample } from './metrics.ts';

interface HookSeries {
  hookEvent: string;
  hookName: string;
  row: CounterRow;
  /** Largest output of the newest execution with size data, and that execution's time. */
  lastLargest: number | null;
  lastTimeMs: number;
}

/** Distinct overflowing hooks remembered at most; past it the count saturates instead of growing memory. */
const MAX_TRACKED_DROPPED = 100_000;

function largestOf(e: HookEvent): number | null {
  return largestKnown([e.stdoutChars, e.additionalContextChars, e.systemMessageChars, e.initialUserMessageChars]);
}

/** Per-hook counters with a cap on how many hooks get a labelled series. */
export class HookMetrics implements IngestListener {
  private readonly series = new Map<string, HookSeries>();
  private readonly dropped = new Set<string>();
  private readonly overflow = emptyRow();
  private readonly maxSeries: number;

  constructor(opts: { maxSeries: number }) {
    this.maxSeries = opts.maxSeries;
  }

  /** Called with the events a batch inserted (duplicates are not passed on, so nothing counts twice). */
  onIngested(events: readonly HookEvent[]): void {
    for (const e of events) {
      let s = this.series.get(e.hookId);
      if (!s) {
        if (this.series.size >= this.maxSeries) {
          if (this.dropped.size < MAX_TRACKED_DROPPED) this.dropped.add(e.hookId);
          addEvent(this.overflow, e);
          continue;
        }
        s = { hookEvent: e.hookEvent, hookName: e.hookName, row: emptyRow(), lastLargest: null, lastTimeMs: -Infinity };
        this.series.set(e.hookId, s);
      }
      addEvent(s.row, e);
      const largest = e.kind === 'complete' ? largestOf(e) : null;
      if (largest !== null && e.timeMs >= s.lastTimeMs) {
        s.lastLargest = largest;
        s.lastTimeMs = e.timeMs;
      }
    }
  }

  /** The metric families (a MetricsCollector). */
  collect(): MetricFamily[] {
    const executions: Sample[] = [];
    const starts: Sample[] = [];
    const commands: Sample[] = [];
    const success: Sample[] = [];
    const persisted: Sample[] = [];
    const withPersisted: Sample[] = [];
    const near: Sample[] = [];
    const blind: Sample[] = [];
    const largest: Sample[] = [];
    const last: Sample[] = [];
    for (const [id, s] of this.series) {
      const labels = { hook_id: id, hook_event: s.hookEvent, hook_name: s.hookName };
      const c = toCounters(s.row);
      executions.push({ labels, value: c.executions });
      starts.push({ labels, value: c.starts });
      commands.push({ labels, value: c.numHooks });
      success.push({ labels, value: c.success });
      persisted.push({ labels, value: c.outputsPersisted });
      withPersisted.push({ labels, value: c.executionsWithPersisted });
      near.push({ labels, value: c.nearExecutions });
      blind.push({ labels, value: c.sizeUnknownExecutions });
      // Unknown is not zero: a hook without size data gets no size sample at all.
      const max = largestOutput(c);
      if (max !== null) largest.push({ labels, value: max });
      if (s.lastLargest !== null) last.push({ labels, value: s.lastLargest });
    }
    const over = toCounters(this.overflow);
    return [
      { name: 'hookwatch_hook_executions_total', type: 'counter', help: 'hook_execution_complete events stored since start (one per firing of a hook event).', samples: executions },
      { name: 'hookwatch_hook_starts_total', type: 'counter', help: 'hook_execution_start events stored since start; starts without a complete mean a hook was blocked or killed.', samples: starts },
      { name: 'hookwatch_hook_commands_total', type: 'counter', help: 'Hook commands run (sum of num_hooks) since start.', samples: commands },
      { name: 'hookwatch_hook_success_total', type: 'counter', help: 'Hook commands that exited 0 (sum of num_success) since start.', samples: success },
      { name: 'hookwatch_hook_outputs_persisted_total', type: 'counter', help: 'Output strings over the 10,000-character cap, saved to a file instead of delivered (sum of num_outputs_persisted) since start.', samples: persisted },
      { name: 'hookwatch_hook_executions_with_persisted_total', type: 'counter', help: 'Executions with at least one persisted output since start.', samples: withPersisted },
      { name: 'hookwatch_hook_near_executions_total', type: 'counter', help: 'Executions whose largest output may exceed the near threshold, nothing persisted, since start.', samples: near },
      { name: 'hookwatch_hook_size_unknown_executions_total', type: 'counter', help: 'Executions without size attributes (clients before 2.1.280): blind, never healthy.', samples: blind },
      { name: 'hookwatch_hook_largest_output_chars', type: 'gauge', help: 'Largest output since start (upper bound: Claude Code reports sums over the matching commands); absent when unknown.', samples: largest },
      { name: 'hookwatch_hook_last_output_chars', type: 'gauge', help: 'Largest output of the newest execution with size data (max_over_time gives a window); absent when unknown.', samples: last },
      { name: 'hookwatch_hook_series', type: 'gauge', help: 'Hooks with their own series (at most metrics.maxHookSeries).', samples: [{ value: this.series.size }] },
      { name: 'hookwatch_hook_series_dropped', type: 'gauge', help: `Hooks left without a series because metrics.maxHookSeries was reached (saturates at ${MAX_TRACKED_DROPPED}); their events are in the overflow counters.`, samples: [{ value: this.dropped.size }] },
      { name: 'hookwatch_hook_overflow_executions_total', type: 'counter', help: 'Executions of hooks left without a series (cardinality cap).', samples: [{ value: over.executions }] },
      { name: 'hookwatch_hook_overflow_outputs_persisted_total', type: 'counter', help: 'Persisted outputs of hooks left without a series (cardinality cap).', samples: [{ value: over.outputsPersisted }] },
    ];
  }
}
