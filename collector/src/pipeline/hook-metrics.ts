/**
 * Per-hook counters for /metrics, kept in memory from the events this process committed to the store
 * (an IngestListener). Why not ask the store at each scrape: Prometheus counters must only go up (retention
 * would make a store window shrink), a scrape should cost nothing, and several replicas sharing one
 * PostgreSQL must not each report the fleet's totals (sum() over replicas would double count).
 * So `_total` counts events ingested since this process started; over that window they equal what
 * /api/v1/hooks answers. The same rollup arithmetic as the store (store/counters.ts) keeps them equal.
 *
 * Label cardinality is bounded: the first `maxSeries` hooks get their own series; events of any further hook
 * are added to the overflow counters and the number of such hooks is reported, never a new series. A hook idle
 * for RELEASE_IDLE_MS gives its series up, so the slots of hooks gone (one `PreToolUse:<tool>` per MCP tool a
 * team tried once) come back to hooks active now.
 *
 * A new series is on /metrics at 0 before it counts anything, as a client library's counter is before its first
 * increment: the events that made it are held until one render has shown the 0, so increase() has a sample to
 * count them from, across a restart (a counter reset) and a pod replacement (a new instance) alike. The cost is
 * one scrape interval before a new hook's first counts show.
 *
 * Outputs trimmed by `hookwatch guard` are counted per hook the same way (a trim report names the hook as Claude
 * Code does, and may come first: it gives the hook its series), from the trims a batch stored. They have no
 * `field` label: every per-hook family keeps the same labels, so rules match them one to one with `and`/`on`,
 * and the API's guard trims name the field.
 */
import type { HookCounters } from '../store/model.ts';
import { largestKnown, largestOutput } from '../../../shared/src/cliff.ts';
import type { HookEvent } from '../hooks/model.ts';
import { addEvent, emptyRow, toCounters, type CounterRow } from '../store/counters.ts';
import type { GuardTrim } from '../store/guard-trims.ts';
import type { MetricsRegistry, SetSample } from '../telemetry/metrics.ts';
import type { IngestListener } from './consumer.ts';

/**
 * The labels of a per-hook series. hook_id is a digest of the other two, so no two hooks share a label set
 * (prom-client tells series apart by joining label values, which hook names could otherwise imitate).
 */
const HOOK_LABELS = ['hook_id', 'hook_event', 'hook_name'] as const;
type HookLabel = (typeof HOOK_LABELS)[number];

interface HookSeries {
  /** The series' labels, one object for every family and scrape. */
  labels: Readonly<Record<HookLabel, string>>;
  row: CounterRow;
  /** toCounters(row), kept until the next event of this hook (a scrape reads it for every family). */
  counters: HookCounters | undefined;
  /** Largest output of the newest execution (null when it carried no size data), and that execution's time. */
  lastLargest: number | null;
  lastTimeMs: number;
  /**
   * Largest output received in the current and the previous RECENT_OUTPUT_MS slot (slot = floor(receive time /
   * RECENT_OUTPUT_MS)), so every output stays in hookwatch_hook_last_output_chars for at least RECENT_OUTPUT_MS.
   */
  recent: { slot: number; largest: number };
  previous: { slot: number; largest: number };
  /** When this process created the series: its counters count from then. */
  createdMs: number;
  /** Whether a render of /metrics has shown the series; until one has, its counters show 0 (their counts held). */
  shown: boolean;
  /** When the hook last had an event or a guard trim stored here (or its series was made). */
  activeMs: number;
  /** `hookwatch guard` trims stored since then, and the sizes of their outputs before and after trimming. */
  guard: GuardCounts;
  /** Executions with size attributes but no num_outputs_persisted stored since then. */
  unreported: number;
}

interface GuardCounts {
  trims: number;
  sentChars: number;
  keptChars: number;
}

const noGuardTrims = (): GuardCounts => ({ trims: 0, sentChars: 0, keptChars: 0 });

function addTrim(g: GuardCounts, t: GuardTrim): void {
  g.trims++;
  g.sentChars += t.sentChars;
  g.keptChars += t.keptChars;
}

/** Distinct overflowing hooks remembered at most; past it the count saturates instead of growing memory. */
const MAX_TRACKED_DROPPED = 100_000;

/**
 * How long a hook is idle before its series is released (gone from /metrics, its slot free for another hook), and
 * a hook left without a series stops counting in hookwatch_hook_series_dropped. Longer than the largest window of
 * deploy/prometheus/rules.yml (24 hours, hookwatch:hook_largest_output_chars:max24h; the alerts' are an hour at
 * most), with an hour to spare: every window a rule looks through when the series goes stale holds no change of
 * it, so its going makes no alert resolve, and the samples Prometheus stored keep counting in a longer range.
 */
export const RELEASE_IDLE_MS = 25 * 3_600_000;

/**
 * How long each received output counts in hookwatch_hook_last_output_chars, at least. A gauge is only seen when
 * Prometheus scrapes it: holding only the newest execution's size, every execution but the last one between two
 * scrapes would be invisible to max_over_time (a hook that runs every few seconds would hide its near-cap
 * outputs). Two minutes covers every scrape interval up to the longest Prometheus advises (2m).
 */
export const RECENT_OUTPUT_MS = 120_000;

function counters(s: HookSeries): HookCounters {
  s.counters ??= toCounters(s.row);
  return s.counters;
}

function largestOf(e: HookEvent): number | null {
  return largestKnown([e.stdoutChars, e.additionalContextChars, e.systemMessageChars, e.initialUserMessageChars]);
}

/** Per-hook counters with a cap on how many hooks get a labelled series. */
export class HookMetrics implements IngestListener {
  private readonly series = new Map<string, HookSeries>();
  /** Hooks left without a series, with when each last had an event or a trim. */
  private readonly dropped = new Map<string, number>();
  private readonly overflow = emptyRow();
  private readonly overflowGuard = noGuardTrims();
  private overflowUnreported = 0;
  private readonly maxSeries: number;

  private readonly now: () => number;

  constructor(opts: { maxSeries: number; now?: () => number }) {
    this.maxSeries = opts.maxSeries;
    this.now = opts.now ?? Date.now;
  }

  private newSeries(id: string, hookEvent: string, hookName: string): HookSeries {
    const s: HookSeries = {
      labels: { hook_id: id, hook_event: hookEvent, hook_name: hookName }, row: emptyRow(), counters: undefined, lastLargest: null, lastTimeMs: -Infinity,
      recent: { slot: -Infinity, largest: -Infinity }, previous: { slot: -Infinity, largest: -Infinity }, createdMs: this.now(), guard: noGuardTrims(),
      shown: false, activeMs: this.now(), unreported: 0,
    };
    this.series.set(id, s);
    this.dropped.delete(id);
    return s;
  }

  /**
   * Series at 0 for hooks the store already knows, the most recently seen first, up to half the series cap (the
   * rest stays free for hooks active now): after a restart, a known hook's next events count without waiting for a
   * render to show its series at 0 first, and every server of an HA pair has seen the 0. Hooks that already have a
   * series (events ingested meanwhile) keep it.
   */
  seed(hooks: readonly { id: string; hookEvent: string; hookName: string; lastSeenMs: number }[]): void {
    const limit = Math.max(this.series.size, Math.floor(this.maxSeries / 2));
    for (const h of [...hooks].sort((a, b) => b.lastSeenMs - a.lastSeenMs)) {
      if (this.series.size >= limit) return;
      if (!this.series.has(h.id)) this.newSeries(h.id, h.hookEvent, h.hookName);
    }
  }

  /**
   * The hook's series, made if the cap allows (marked active at `now`); undefined once it is reached (the hook is
   * counted as dropped). A batch reads the clock once for all of its events.
   */
  private seriesFor(h: { hookId: string; hookEvent: string; hookName: string }, now: number = this.now()): HookSeries | undefined {
    const s = this.series.get(h.hookId) ?? (this.series.size < this.maxSeries ? this.newSeries(h.hookId, h.hookEvent, h.hookName) : undefined);
    if (s) {
      s.activeMs = now;
      return s;
    }
    if (this.dropped.has(h.hookId) || this.dropped.size < MAX_TRACKED_DROPPED) this.dropped.set(h.hookId, now);
    return undefined;
  }

  /**
   * The series of one render, read once per render by every family (metrics.perScrape): hooks idle for
   * RELEASE_IDLE_MS are released first, and the series no render has shown yet are listed as held, their counters
   * at 0 in this render, so all families show one moment. From the next render on they show their counts.
   */
  private beginRender(): { series: HookSeries[]; held: ReadonlySet<HookSeries> } {
    const now = this.now();
    for (const [id, s] of this.series) if (now - s.activeMs >= RELEASE_IDLE_MS) this.series.delete(id);
    for (const [id, at] of this.dropped) if (now - at >= RELEASE_IDLE_MS) this.dropped.delete(id);
    const held = new Set<HookSeries>();
    for (const s of this.series.values()) {
      if (s.shown) continue;
      held.add(s);
      s.shown = true;
    }
    return { series: [...this.series.values()], held };
  }

  /** Called with the events a batch inserted (duplicates are not passed on, so nothing counts twice). */
  onIngested(events: readonly HookEvent[]): void {
    const now = this.now();
    const slot = Math.floor(now / RECENT_OUTPUT_MS);
    for (const e of events) {
      const s = this.seriesFor(e, now);
      // Sizes without num_outputs_persisted: whether an output was persisted is unknown unless measured over the cap.
      const unreported = e.kind === 'complete' && e.sizesKnown && e.outputsPersisted === null;
      if (!s) {
        addEvent(this.overflow, e);
        if (unreported) this.overflowUnreported++;
        continue;
      }
      addEvent(s.row, e);
      if (unreported) s.unreported++;
      s.counters = undefined;
      if (e.kind !== 'complete') continue;
      const largest = largestOf(e);
      // The newest execution's size, unknown when it carried none: an older size is not the hook's now.
      if (e.timeMs >= s.lastTimeMs) {
        s.lastLargest = largest;
        s.lastTimeMs = e.timeMs;
      }
      if (largest === null) continue;
      if (s.recent.slot !== slot) {
        s.previous = s.recent;
        s.recent = { slot, largest };
      } else if (largest > s.recent.largest) {
        s.recent.largest = largest;
      }
    }
  }

  /** Called with the guard trims a batch stored (those of a retried report stored before are not passed on). */
  onGuardTrims(_hookIds: readonly string[], trims: readonly GuardTrim[]): void {
    for (const t of trims) addTrim(this.seriesFor(t)?.guard ?? this.overflowGuard, t);
  }

  /**
   * hookwatch_hook_last_output_chars: the largest output received in the last RECENT_OUTPUT_MS to
   * 2 x RECENT_OUTPUT_MS, so any scrape within RECENT_OUTPUT_MS of an execution sees it; once none is that
   * recent, the newest execution's.
   */
  private lastOutput(s: HookSeries): number | null {
    const slot = Math.floor(this.now() / RECENT_OUTPUT_MS);
    let v = -Infinity;
    for (const r of [s.recent, s.previous]) if (r.slot >= slot - 1 && r.largest > v) v = r.largest;
    return v === -Infinity ? s.lastLargest : v;
  }

  /** Registers the per-hook families on /metrics; their values are read from these counters when scraped. */
  register(metrics: MetricsRegistry): void {
    const render = metrics.perScrape(() => this.beginRender());
    const perHook = (type: 'counter' | 'gauge', name: string, help: string, value: (c: HookCounters, s: HookSeries) => number | null): void => {
      const def = {
        name, help, labelNames: HOOK_LABELS,
        collect: (set: SetSample<HookLabel>) => {
          const { series, held } = render();
          for (const s of series) {
            // A counter of a series not shown yet is 0; a gauge is what it is (increase() does not read it).
            if (type === 'counter' && held.has(s)) {
              set(s.labels, 0);
              continue;
            }
            // Unknown is not zero: a hook without size data gets no size sample at all.
            const v = value(counters(s), s);
            if (v !== null) set(s.labels, v);
          }
        },
      };
      if (type === 'counter') metrics.collectedCounter('hooks', def);
      else metrics.collectedGauge('hooks', def);
    };
    const one = (type: 'counter' | 'gauge', name: string, help: string, value: () => number): void => {
      const def = { name, help, collect: (set: SetSample<never>) => set({}, value()) };
      if (type === 'counter') metrics.collectedCounter('hooks', def);
      else metrics.collectedGauge('hooks', def);
    };
    perHook('counter', 'hookwatch_hook_executions_total', 'hook_execution_complete events stored since start (one per firing of a hook event).', (c) => c.executions);
    perHook('counter', 'hookwatch_hook_starts_total', 'hook_execution_start events stored since start; starts without a complete mean a hook was blocked or killed.', (c) => c.starts);
    perHook('counter', 'hookwatch_hook_commands_total', 'Hook commands run (sum of num_hooks) since start.', (c) => c.numHooks);
    perHook('counter', 'hookwatch_hook_success_total', 'Hook commands that exited 0 (sum of num_success) since start.', (c) => c.success);
    perHook('counter', 'hookwatch_hook_outputs_persisted_total', 'Output strings over the 10,000-character cap, saved to a file instead of delivered (sum of num_outputs_persisted) since start.', (c) => c.outputsPersisted);
    perHook('counter', 'hookwatch_hook_executions_with_persisted_total', 'Executions with at least one persisted output since start.', (c) => c.executionsWithPersisted);
    perHook('counter', 'hookwatch_hook_near_executions_total', 'Executions whose largest output may exceed the near threshold and none is known persisted (num_outputs_persisted 0, or not sent and no size measured over the cap: then in hookwatch_hook_persisted_unreported_executions_total too), since start.', (c) => c.nearExecutions);
    perHook('counter', 'hookwatch_hook_size_unknown_executions_total', 'Executions without size attributes (clients before 2.1.280): blind, never healthy.', (c) => c.sizeUnknownExecutions);
    perHook('counter', 'hookwatch_hook_persisted_unreported_executions_total', 'Executions with size attributes but without num_outputs_persisted since start: whether an output was persisted is unknown, unless its size proves it over the cap (then it is in hookwatch_hook_executions_with_persisted_total too).', (_c, s) => s.unreported);
    perHook('gauge', 'hookwatch_hook_largest_output_chars', 'Largest output since start (upper bound: Claude Code reports sums over the matching commands); absent when unknown.', (c) => largestOutput(c));
    perHook('counter', 'hookwatch_hook_guard_trims_total', 'Outputs of the hook that hookwatch guard trimmed to fit the cap, as its reports stored since start (a retried report counts once).', (_c, s) => s.guard.trims);
    perHook('counter', 'hookwatch_hook_guard_sent_chars_total', 'Characters of the outputs hookwatch guard trimmed, before trimming (sum of sent_chars of the trims stored since start).', (_c, s) => s.guard.sentChars);
    perHook('counter', 'hookwatch_hook_guard_kept_chars_total', 'Characters hookwatch guard kept of the outputs it trimmed, what the model got (sum of kept_chars of the trims stored since start).', (_c, s) => s.guard.keptChars);
    perHook('gauge', 'hookwatch_hook_series_start_time_seconds', 'When this process created the hook\'s series (its counters count from then; each was exposed at 0 in the first render that showed it).', (_c, s) => s.createdMs / 1000);
    perHook('gauge', 'hookwatch_hook_last_output_chars', `Largest output received in the last ${RECENT_OUTPUT_MS / 60_000} to ${(2 * RECENT_OUTPUT_MS) / 60_000} minutes (the newest execution's when none is that recent), so every output is seen by a scrape and max_over_time gives any window; absent when unknown.`, (_c, s) => this.lastOutput(s));
    one('gauge', 'hookwatch_hook_series', `Hooks with their own series (at most metrics.maxHookSeries; a hook idle for ${RELEASE_IDLE_MS / 3_600_000} hours gives its series up).`, () => render().series.length);
    one('gauge', 'hookwatch_hook_series_dropped', `Hooks active in the last ${RELEASE_IDLE_MS / 3_600_000} hours left without a series because metrics.maxHookSeries was reached (saturates at ${MAX_TRACKED_DROPPED}); their events are in the overflow counters.`, () => {
      render();
      return this.dropped.size;
    });
    one('counter', 'hookwatch_hook_overflow_executions_total', 'Executions of hooks left without a series (cardinality cap).', () => toCounters(this.overflow).executions);
    one('counter', 'hookwatch_hook_overflow_outputs_persisted_total', 'Persisted outputs of hooks left without a series (cardinality cap).', () => toCounters(this.overflow).outputsPersisted);
    one('counter', 'hookwatch_hook_overflow_executions_with_persisted_total', 'Executions with at least one persisted output (reported, or measured over the cap from a client that does not send num_outputs_persisted) of hooks left without a series (cardinality cap).', () => toCounters(this.overflow).executionsWithPersisted);
    one('counter', 'hookwatch_hook_overflow_size_unknown_executions_total', 'Executions without size attributes (clients before 2.1.280) of hooks left without a series (cardinality cap): blind, never healthy.', () => toCounters(this.overflow).sizeUnknownExecutions);
    one('counter', 'hookwatch_hook_overflow_persisted_unreported_executions_total', 'Executions with size attributes but without num_outputs_persisted of hooks left without a series (cardinality cap).', () => this.overflowUnreported);
    one('counter', 'hookwatch_hook_overflow_guard_trims_total', 'Outputs trimmed by hookwatch guard of hooks left without a series (cardinality cap).', () => this.overflowGuard.trims);
  }
}
