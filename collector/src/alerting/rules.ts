/**
 * Rule evaluation: each rule queries the store through the Store interface (so it runs unchanged on any backend)
 * and hands what it read to its condition (conditions.ts, pure), which says whether it holds now and with which
 * annotations. Out come the label sets whose condition holds; evaluation.ts decides what that means for alerts.
 */
import type { HookCounters } from '../store/model.ts';
import type { Point } from '../../../shared/src/forecast.ts';
import { largestKnown, largestOutput, OUTPUT_CAP_CHARS } from '../../../shared/src/cliff.ts';
import { ALERT_RANGE_LEAD_MS } from '../../../shared/src/alert-range.ts';
import { chartStepForSpan } from '../../../shared/src/chart-step.ts';
import { isOverflowHook, type HookEvent } from '../hooks/model.ts';
import { totalCounters } from '../store/counters.ts';
import type { ArrivalCounters, FleetBucket, HookInfo, Store } from '../store/store.ts';
import { blindCondition, expiredHookAnnotations, growthCondition, guardTrimsNote, headroomCondition, hookLimitCondition, mayHoldUnmeasured, neverCompletedCondition, overCapCondition, persistedCondition, type OverCapCounters, quietFeedCondition, quietHookCondition, ratioCondition, ratioMayHold } from './conditions.ts';
import { dimensionLabel, type RuleConfig } from './settings.ts';
import type { AlertRecord } from './model.ts';
import type { Pause } from '../paced.ts';

/** One label set whose condition holds at evaluation time. */
export interface Candidate {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  hookId: string | null;
  /**
   * When the evidence the condition counted in the rule's window begins (the start of the bucket holding its
   * earliest event; for `silence`, the hook's last execution, or the feed's last event, where the quiet stretch
   * begins), when the evaluation read it; null when it holds none; absent when not read.
   */
  evidenceFromMs?: number | null;
  /** Reads evidenceFromMs (withEvidence): only for a candidate that becomes an alert. */
  readEvidence?: () => Promise<number | null>;
  /**
   * Reads what `hookwatch guard` trimmed of the hook's outputs in the rule's window (withEvidence), as annotations
   * added to the candidate's (conditions.ts guardTrimsNote); null when it trimmed none. Only for a candidate that
   * becomes an alert: rules on sizes near or over the cap (`persisted`, `headroom`, `growth`).
   */
  readGuard?: () => Promise<Record<string, string> | null>;
  /**
   * The condition does not hold on what was measured, but may among the executions without size data: an active
   * alert of these labels stays as it is (unknown is not the all-clear), and no alert is raised.
   */
  held?: true;
  /**
   * `headroom`, `growth`: the hook went over the cap in the window, which is a `persisted` rule's (one is configured
   * that can fire on it: RuleContext.persistedFires). An active alert of these labels resolves (as superseded:
   * notification-plan.ts markSuperseded) once a `persisted` alert of its hook fires, and stays firing until then
   * (held), taking these annotations, which say the hook went over the cap: one pending for its `for`, or one that
   * clears before it fires, leaves it firing instead of sending an all-clear for a hook that got worse. None is raised.
   */
  overCap?: true;
  /**
   * The condition no longer holds, for the reason these annotations give (a `silence` alert whose hook's data left
   * retention): an active alert of these labels takes them as it resolves. None is raised.
   */
  ended?: true;
}

export interface RuleContext {
  store: Store;
  now: number;
  /**
   * Called at each hook of a loop over every hook: gives the event loop a turn between slices of the loop (the
   * engine's, paced.ts pauseEvery); a throw there ends the evaluation. None: straight through.
   */
  pause?: Pause;
  /**
   * The rule's active alerts as the evaluation begins: `silence` reads the hooks of those whose last execution has
   * left the window. None given: none.
   */
  active?: readonly AlertRecord[];
  /**
   * Whether a configured `persisted` rule can fire on a hook's output over the cap (its `for` and a timed evaluation
   * fit in its window): `headroom` and `growth` then leave a hook over the cap to it (Candidate.overCap). Without
   * one, their condition holds on such a hook, saying it went over the cap, so someone is told. None given: none.
   */
  persistedFires?: boolean;
}

/**
 * Whether `rules` hold a `persisted` rule that can fire on one output over the cap: one without a `for` fires on the
 * ingest that brought the output (persisted is evaluated on ingest); one with a `for` needs an evaluation
 * evaluationInterval apart from the last to find the output still in its window once its `for` has passed. One
 * whose `for` does not fit fires only while the hook keeps going over, and may never.
 */
export function persistedCanFire(rules: readonly Pick<RuleConfig, 'kind' | 'forMs' | 'windowMs'>[], evaluationIntervalMs: number): boolean {
  return rules.some((r) => r.kind === 'persisted' && (r.forMs === 0 || r.forMs + evaluationIntervalMs <= r.windowMs));
}

const DAY = 86_400_000;
/**
 * Windows that end "now" reach this far past it: ranges are [from, to), and an event stamped at now, or a little
 * ahead by a client's clock, must count on the ingest that brought it, not a minute later.
 */
export const FUTURE_SKEW_MS = 5 * 60_000;

/** Rules evaluated on every ingest (a persisted output must be notified within a second); the rest on the timer. */
export function evaluatesOnIngest(rule: RuleConfig): boolean {
  return rule.kind === 'persisted' || rule.kind === 'persisted_ratio' || rule.kind === 'headroom' || rule.kind === 'blind' || rule.kind === 'hook_limit';
}

/** True when one of these new events can make the rule's condition hold (so it is worth evaluating now). */
export function ruleTriggeredBy(rule: RuleConfig, events: readonly HookEvent[]): boolean {
  switch (rule.kind) {
    case 'persisted':
    case 'persisted_ratio':
      // An execution is 'over' when outputs were persisted, or, from a client that does not report persistence,
      // when its measured size is over the cap (cliff.ts classifyExecution): what the rollups count as
      // executions with persisted output, which these rules read.
      return events.some((e) => e.status === 'over');
    case 'headroom': {
      const limit = rule.threshold * OUTPUT_CAP_CHARS;
      return events.some((e) => (largestKnown([e.stdoutChars, e.additionalContextChars, e.systemMessageChars, e.initialUserMessageChars]) ?? 0) > limit);
    }
    case 'blind':
      return events.some((e) => e.kind === 'complete' && !e.sizesKnown);
    case 'hook_limit':
      return events.some(isOverflowHook);
    default:
      return false;
  }
}


function hookLabels(rule: RuleConfig, info: HookInfo): Record<string, string> {
  return { alertname: rule.name, severity: rule.severity, hook_event: info.hookEvent, hook_name: info.hookName };
}

/** The condition of one hook, or of one value of the rule's groupBy dimension (`value`, '' without one) of it. */
type HookCondition = (c: HookCounters, info: HookInfo, scope: string, value?: string) => Record<string, string> | null;

/** The scope a condition names: the hook, and the groupBy value when there is one. */
function scopeText(rule: RuleConfig, info: HookInfo, value: string | undefined): string {
  return rule.groupBy && value ? `${info.hookName} (${rule.groupBy}=${value})` : info.hookName;
}

/** The hook's labels, plus the groupBy label when the rule has one and the value is set. */
function groupLabels(rule: RuleConfig, info: HookInfo, value: string | undefined): Record<string, string> {
  const labels = hookLabels(rule, info);
  if (rule.groupBy && value) labels[dimensionLabel(rule.groupBy)] = value;
  return labels;
}

/** Which of a bucket's counters are the evidence a rule's condition counts. */
type Evidence = (b: HookCounters) => boolean;

/**
 * Reads when a hook's evidence in [fromMs, toMs) begins: the first bucket of its series (under `filters`) holding
 * some, in the buckets of the chart its alert's link opens on, so the time is no coarser than the page shows it.
 * One series read, made only when an alert becomes active (withEvidence): the counters the condition ran on are
 * the window's sums, which do not tell when in the window it began.
 */
function evidenceReader(ctx: RuleContext, hookId: string, fromMs: number, toMs: number, evidence: Evidence, filters?: Record<string, string>): () => Promise<number | null> {
  return async () => {
    const stepMs = chartStepForSpan(toMs - fromMs + ALERT_RANGE_LEAD_MS) * 1000;
    const series = await ctx.store.series(hookId, { fromMs, toMs, stepMs, ...(filters ? { filters } : {}) });
    let first: number | null = null;
    for (const [t, b] of series) if (evidence(b) && (first === null || t < first)) first = t;
    return first;
  };
}

/** Rules on sizes near or over the cap: their alerts say what `hookwatch guard` trimmed of their hook. */
export function readsGuardTrims(rule: Pick<RuleConfig, 'kind'>): boolean {
  return rule.kind === 'persisted' || rule.kind === 'headroom' || rule.kind === 'growth';
}

/** Where the window of a rule evaluated at `now` begins: a growth rule's at the start of its first day. */
function windowStartMs(rule: Pick<RuleConfig, 'kind' | 'windowMs'>, now: number): number {
  return rule.kind === 'growth' ? Math.floor((now - rule.windowMs) / DAY) * DAY : now - rule.windowMs;
}

/** The guard note (conditions.ts guardTrimsNote) of a hook's trims in [fromMs, toMs): one store read. */
async function readGuardNote(store: Store, rule: RuleConfig, hookId: string, fromMs: number, toMs: number, since: boolean): Promise<Record<string, string> | null> {
  return guardTrimsNote(rule.windowMs, await store.guardTrims(hookId, { fromMs, toMs, stepMs: toMs - fromMs }), since);
}

/**
 * The guard note of an alert of `rule` on `hookId`, active since `activeAtMs`, read again at `now`: the trims of the
 * rule's window before the alert became active and of the time since, in one read. The engine reads it when guard
 * trims of the hook are stored while the alert is active, never at an evaluation.
 */
export function readGuardNoteSince(store: Store, rule: RuleConfig, hookId: string, activeAtMs: number, now: number): Promise<Record<string, string> | null> {
  return readGuardNote(store, rule, hookId, windowStartMs(rule, activeAtMs), now + FUTURE_SKEW_MS, true);
}

/**
 * Gives each candidate of a hook a reader of the hook's guard trims in [fromMs, toMs) (Candidate.readGuard), one
 * store read made only when its alert becomes active: a hook that guard trims sits near the cap on purpose.
 */
function guarded(rule: RuleConfig, ctx: RuleContext, fromMs: number, toMs: number, candidates: Candidate[]): Candidate[] {
  // With groupBy a hook has a candidate per dimension value: its trims are read once for all of them.
  const reads = new Map<string, Promise<Record<string, string> | null>>();
  const read = (hookId: string): Promise<Record<string, string> | null> => readGuardNote(ctx.store, rule, hookId, fromMs, toMs, false);
  for (const c of candidates) {
    const hookId = c.hookId;
    if (hookId === null || c.held || c.overCap) continue;
    c.readGuard = () => {
      const known = reads.get(hookId) ?? read(hookId);
      reads.set(hookId, known);
      return known;
    };
  }
  return candidates;
}

/**
 * How many hooks a rule reads at once when it reads more than their counters (Store.fleetSeries,
 * Store.fleetBreakdown): a read per hook pays a round trip to the store per hook, thousands per evaluation; every
 * hook in one read is one long answer taken in at once.
 */
const HOOKS_PER_READ = 500;

/** `hooks` HOOKS_PER_READ at a time, each slice with what `read` answers for the ids of its hooks. */
async function* inSlices<H extends { info: HookInfo }, A>(hooks: readonly H[], read: (hookIds: string[]) => Promise<A>): AsyncGenerator<[H[], A]> {
  for (let i = 0; i < hooks.length; i += HOOKS_PER_READ) {
    const some = hooks.slice(i, i + HOOKS_PER_READ);
    yield [some, await read(some.map((c) => c.info.id))];
  }
}

/**
 * Per hook, or per hook and dimension value when the rule has groupBy; `evidence` says what of the counters the
 * condition counts, for when it begins (Candidate.readEvidence). Where the condition does not hold, `overCap` says
 * whether the hook went over the cap (Candidate.overCap), else `mayHold` whether it may hold among the executions
 * without size data (Candidate.held): those label sets come last.
 */
async function perHook(rule: RuleConfig, ctx: RuleContext, fromMs: number, toMs: number, cond: HookCondition, evidence: Evidence, mayHold?: (c: HookCounters) => boolean, overCap?: (c: HookCounters, scope: string) => Record<string, string> | null): Promise<Candidate[]> {
  const counters = [...(await ctx.store.hookCounters({ fromMs, toMs })).values()];
  const out: Candidate[] = [];
  const held: Candidate[] = [];
  const { groupBy } = rule;
  if (!groupBy) {
    for (const c of counters) {
      await ctx.pause?.();
      const scope = scopeText(rule, c.info, undefined);
      const annotations = cond(c, c.info, scope);
      const over = annotations ? null : overCap?.(c, scope);
      if (annotations) out.push({ labels: hookLabels(rule, c.info), annotations, hookId: c.info.id, readEvidence: evidenceReader(ctx, c.info.id, fromMs, toMs, evidence) });
      else if (over) held.push({ labels: hookLabels(rule, c.info), annotations: over, hookId: c.info.id, overCap: true });
      else if (mayHold?.(c)) held.push({ labels: hookLabels(rule, c.info), annotations: {}, hookId: c.info.id, held: true });
    }
    return [...out, ...held];
  }
  // The hooks' breakdowns by the dimension, some hundreds of hooks in a read.
  for await (const [some, breakdowns] of inSlices(counters, (hookIds) => ctx.store.fleetBreakdown(groupBy, { fromMs, toMs, hookIds }))) {
    for (const c of some) {
      await ctx.pause?.();
      for (const row of breakdowns.get(c.info.id) ?? []) {
        const scope = scopeText(rule, c.info, row.value);
        const annotations = cond(row, c.info, scope, row.value);
        const over = annotations ? null : overCap?.(row, scope);
        // A filter on '' matches the events without the dimension, the row '' counts.
        if (annotations) out.push({ labels: groupLabels(rule, c.info, row.value), annotations, hookId: c.info.id, readEvidence: evidenceReader(ctx, c.info.id, fromMs, toMs, evidence, { [groupBy]: row.value }) });
        else if (over) held.push({ labels: groupLabels(rule, c.info, row.value), annotations: over, hookId: c.info.id, overCap: true });
        else if (mayHold?.(row)) held.push({ labels: groupLabels(rule, c.info, row.value), annotations: {}, hookId: c.info.id, held: true });
      }
    }
  }
  return [...out, ...held];
}

/**
 * How many new alerts withEvidence reads at once: a burst of them (up to MAX_ALERTS_PER_RULE of a rule, after the
 * alert state was lost) is not notified one read later per alert, and the store is not handed them all at once.
 */
export const EVIDENCE_READS_AT_ONCE = 4;

/**
 * Reads the evidence times of the candidates that become alerts now (`isNew`), and what guard trimmed of their
 * hooks (Candidate.readGuard), EVIDENCE_READS_AT_ONCE alerts at a time: an alert keeps both over its episode, so
 * evaluations of alerts already active read nothing more. A read that fails leaves what it reads unknown (`onError`
 * says why, once): the alert still goes pending, and its link starts from when it became active. So do the
 * candidates not started yet, unread (those in flight finish): a store that stopped answering is not waited on (a
 * connection timeout each) once per alert while the notifications wait. The candidates keep their order.
 */
export async function withEvidence(candidates: readonly Candidate[], isNew: (c: Candidate) => boolean, onError: (err: unknown) => void): Promise<Candidate[]> {
  const out: Candidate[] = candidates.map(({ readEvidence: _e, readGuard: _g, ...c }) => c);
  const due = candidates.flatMap((c, i) => ((c.readEvidence || c.readGuard) && isNew(out[i] as Candidate) ? [i] : []));
  let next = 0;
  let failed = false;
  const reader = async (): Promise<void> => {
    while (!failed && next < due.length) {
      const i = due[next++] as number;
      const { readEvidence, readGuard } = candidates[i] as Candidate;
      const c = out[i] as Candidate;
      const read: Candidate = { ...c };
      try {
        if (readEvidence && c.evidenceFromMs === undefined) read.evidenceFromMs = await readEvidence();
        const guard = readGuard ? await readGuard() : null;
        if (guard) read.annotations = { ...c.annotations, ...guard };
      } catch (err) {
        if (!failed) onError(err);
        failed = true;
      }
      out[i] = read;
    }
  };
  await Promise.all(Array.from({ length: Math.min(EVIDENCE_READS_AT_ONCE, due.length) }, reader));
  return out;
}

/** persisted: outputs over the cap, reported or measured. */
const persistedEvidence = (b: Pick<HookCounters, 'outputsPersisted' | 'executionsWithPersisted'>): boolean => b.outputsPersisted > 0 || b.executionsWithPersisted > 0;
/** The executions of the window, every one in the share or the count. */
const executionEvidence: Evidence = (b) => b.executions > 0;

/**
 * Persisted outputs in the window, by event time or by arrival: a batch stamped an hour ago (a Collector queue
 * draining after an outage, a client clock behind) still notifies when it arrives, with its event times named.
 * With groupBy, late arrivals count for their own value of the dimension, as the events of the window do.
 */
async function persisted(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  const fromMs = windowStartMs(rule, ctx.now);
  const toMs = ctx.now + FUTURE_SKEW_MS;
  // Arrivals in the window whose event time is before it: the event-time window below does not count them.
  const late = await ctx.store.latePersisted({ receivedFromMs: fromMs, receivedToMs: toMs, eventBeforeMs: fromMs, ...(rule.groupBy ? { dimension: rule.groupBy } : {}) });
  const lateOf = (id: string, value: string | undefined): ArrivalCounters | undefined => {
    const a = late.get(id);
    return rule.groupBy ? a?.byValue?.get(value ?? '') : a;
  };
  const seen = new Set<string>();
  const key = (id: string, value: string | undefined): string => `${id}\u0000${value ?? ''}`;
  const cond: HookCondition = (c, info, scope, value) => {
    seen.add(key(info.id, value));
    const l = lateOf(info.id, value);
    return persistedCondition(l ? totalCounters([c, l]) : c, scope, rule.windowMs, l);
  };
  const found = await perHook(rule, ctx, fromMs, toMs, cond, persistedEvidence, mayHoldUnmeasured);
  const out = found.filter((c) => !c.held);
  // Late arrivals of a hook (or a value of it) with nothing else in the window.
  for (const a of late.values()) {
    const groups: [string | undefined, ArrivalCounters][] = rule.groupBy ? [...(a.byValue ?? [])] : [[undefined, a]];
    for (const [value, l] of groups) {
      if (seen.has(key(a.info.id, value))) continue;
      const annotations = persistedCondition(l, scopeText(rule, a.info, value), rule.windowMs, l);
      if (annotations) out.push({ labels: groupLabels(rule, a.info, value), annotations, hookId: a.info.id });
    }
  }
  return guarded(rule, ctx, fromMs, toMs, [...out, ...found.filter((c) => c.held)]);
}

function persistedRatio(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  return perHook(rule, ctx, ctx.now - rule.windowMs, ctx.now + FUTURE_SKEW_MS, (c, _info, scope) => ratioCondition(rule, c, scope), executionEvidence, (c) => ratioMayHold(rule, c));
}

async function headroom(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  const fromMs = windowStartMs(rule, ctx.now);
  const toMs = ctx.now + FUTURE_SKEW_MS;
  const limit = rule.threshold * OUTPUT_CAP_CHARS;
  const over = (c: HookCounters, scope: string): Record<string, string> | null => (persistedEvidence(c) ? overCapCondition({ ...c, largest: largestOutput(c) }, scope, rule.windowMs, limit) : null);
  // A hook over the cap is a persisted rule's: its headroom alert resolves as superseded once a persisted alert of
  // the hook fires, and stays until then (Candidate.overCap). With no persisted rule that can fire, it is this
  // rule's, and says the hook went over the cap.
  const cond: HookCondition = (c, _info, scope) => headroomCondition(rule, c, scope) ?? (ctx.persistedFires ? null : over(c, scope));
  const evidence: Evidence = (b) => (largestOutput(b) ?? 0) > limit || persistedEvidence(b);
  return guarded(rule, ctx, fromMs, toMs, await perHook(rule, ctx, fromMs, toMs, cond, evidence, mayHoldUnmeasured, over));
}

function neverCompleted(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  // The window ends `after` ago: a start whose complete is still in flight (next export batch) is not missing yet.
  const toMs = ctx.now - rule.afterMs;
  return perHook(rule, ctx, toMs - rule.windowMs, toMs, (c, _info, scope) => neverCompletedCondition(rule, c, scope), (b) => b.starts > 0);
}

/** A hook's daily series summed, as overCapCondition reads it. */
function seriesTotals(series: readonly FleetBucket[]): OverCapCounters {
  const t: OverCapCounters = { executions: 0, sizeUnknownExecutions: 0, outputsPersisted: 0, executionsWithPersisted: 0, largest: null };
  for (const b of series) {
    t.executions += b.executions;
    t.sizeUnknownExecutions += b.sizeUnknownExecutions;
    t.outputsPersisted += b.outputsPersisted;
    t.executionsWithPersisted += b.executionsWithPersisted;
    if (b.largest !== null) t.largest = Math.max(t.largest ?? 0, b.largest);
  }
  return t;
}

async function growth(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  const fromMs = windowStartMs(rule, ctx.now);
  const toMs = ctx.now + FUTURE_SKEW_MS;
  const counters = await ctx.store.hookCounters({ fromMs, toMs });
  const out: Candidate[] = [];
  const held: Candidate[] = [];
  // A hook over the cap is a persisted rule's: its growth alert resolves as superseded once a persisted alert of the
  // hook fires, and stays until then (Candidate.overCap). With no persisted rule that can fire, it is this rule's,
  // and says the hook went over the cap.
  const overCap = (c: OverCapCounters, info: HookInfo): void => {
    const annotations = overCapCondition(c, info.hookName, rule.windowMs);
    if (ctx.persistedFires) held.push({ labels: hookLabels(rule, info), annotations, hookId: info.id, overCap: true });
    else out.push({ labels: hookLabels(rule, info), annotations, hookId: info.id, readEvidence: evidenceReader(ctx, info.id, fromMs, toMs, persistedEvidence) });
  };
  const hooks: (HookCounters & { info: HookInfo })[] = [];
  for (const c of counters.values()) {
    if (persistedEvidence(c)) overCap({ ...c, largest: largestOutput(c) }, c.info);
    else hooks.push(c);
  }
  for await (const [some, buckets] of inSlices(hooks, (hookIds) => ctx.store.fleetSeries({ fromMs, toMs, stepMs: DAY, hookIds }))) {
    const daily = new Map<string, FleetBucket[]>();
    for (const b of buckets) {
      const days = daily.get(b.hookId);
      if (days) days.push(b);
      else daily.set(b.hookId, [b]);
    }
    for (const c of some) {
      await ctx.pause?.();
      const series = daily.get(c.info.id) ?? [];
      // A hook over the cap is the persisted rule's: also when the output over it was stored after the counters
      // were read, which the series, read later, holds (its trend would reach the cap at once, and resolve next time).
      if (series.some(persistedEvidence)) {
        overCap(seriesTotals(series), c.info);
        continue;
      }
      const points: Point[] = series
        .map((b) => ({ t: b.bucketMs, value: b.largest }))
        .filter((p): p is Point => p.value !== null)
        .sort((a, b) => a.t - b.t);
      const annotations = growthCondition(rule, points, c.info.hookName, ctx.now, series);
      // The trend's first day: read with it.
      if (annotations) out.push({ labels: hookLabels(rule, c.info), annotations, hookId: c.info.id, evidenceFromMs: points[0]?.t ?? null });
      // Executions without size data are not in the trend, and their outputs may have been larger: with any in the
      // window (its latest days unmeasured, the trend gone stale), a trend that does not reach the cap is unknown.
      else if (series.some(mayHoldUnmeasured)) held.push({ labels: hookLabels(rule, c.info), annotations: {}, hookId: c.info.id, held: true });
    }
  }
  return guarded(rule, ctx, fromMs, toMs, [...out, ...held]);
}

async function blind(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  const versions = await ctx.store.clientVersions({ fromMs: ctx.now - rule.windowMs, toMs: ctx.now + FUTURE_SKEW_MS });
  const out: Candidate[] = [];
  for (const v of versions) {
    const annotations = blindCondition(rule, v);
    if (annotations) out.push({ labels: { alertname: rule.name, severity: rule.severity, service_name: v.serviceName, service_version: v.version }, annotations, hookId: null });
  }
  return out;
}

async function silence(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  if (rule.scope === 'feed') {
    const lastMs = await ctx.store.lastEventMs();
    const annotations = quietFeedCondition(rule, lastMs, ctx.now);
    // The quiet stretch begins at the feed's last event, as a hook's begins at the hook's last execution (below).
    return annotations ? [{ labels: { alertname: rule.name, severity: rule.severity, scope: 'feed' }, annotations, hookId: null, evidenceFromMs: lastMs }] : [];
  }
  // A hook counts as "was active" when it sent anything within the rule's window.
  const counters = await ctx.store.hookCounters({ fromMs: ctx.now - rule.windowMs, toMs: ctx.now + FUTURE_SKEW_MS });
  const out: Candidate[] = [];
  const quiet = (info: HookInfo): void => {
    const annotations = quietHookCondition(rule, info.hookName, info.lastSeenMs, ctx.now);
    // The quiet stretch it reports begins at the hook's last execution, often hours before the alert: read with it,
    // so the link shows that execution and the gap after it.
    if (annotations) out.push({ labels: hookLabels(rule, info), annotations, hookId: info.id, evidenceFromMs: info.lastSeenMs });
  };
  for (const c of counters.values()) {
    await ctx.pause?.();
    quiet(c.info);
  }
  // An alert on a hook whose last execution has since left the window: the hook is still quiet, by its last-seen
  // time, which the store keeps for as long as any of its data is in retention (the hooks of all such alerts in one
  // read). Once retention has removed the hook, the alert ends, saying so: the hook was not heard again. Given after
  // the hooks of the window, such alerts are kept before new ones past MAX_ALERTS_PER_RULE (evaluation.ts).
  const read = new Set([...counters.values()].map((c) => c.info.id));
  const past = new Map<string, AlertRecord>();
  for (const a of ctx.active ?? []) if (a.hookId !== null && !read.has(a.hookId) && !past.has(a.hookId)) past.set(a.hookId, a);
  if (past.size === 0) return out;
  const infos = await ctx.store.hooks([...past.keys()]);
  for (const [hookId, a] of past) {
    await ctx.pause?.();
    const info = infos.get(hookId);
    if (info) quiet(info);
    else out.push({ labels: a.labels, annotations: expiredHookAnnotations(a.annotations, a.labels['hook_name'] ?? hookId), hookId, ended: true });
  }
  return out;
}

/**
 * Events of new hook names counted under an overflow hook in the window: store.maxHooks is reached. By event time
 * or by arrival: an event is folded when it arrives, so one stamped before the window (a Collector queue draining
 * after an outage, a client clock behind) still tells that the store is at its limit now, for `window` after it
 * arrives. Reads the few overflow hooks one by one, never every hook (it runs on each ingest that folds events).
 */
async function hookLimit(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  const fromMs = ctx.now - rule.windowMs;
  const toMs = ctx.now + FUTURE_SKEW_MS;
  // Below store.maxHooks (the usual state, read at every evaluation) there is none, and nothing more to read: the
  // late arrivals below read every event with a receive time of the window, those over the cap included.
  const overflow = await ctx.store.overflowHooks();
  if (overflow.length === 0) return [];
  // Arrivals in the window whose event time is before it: the event-time window below does not count them.
  const late = await ctx.store.lateFolded({ receivedFromMs: fromMs, receivedToMs: toMs, eventBeforeMs: fromMs });
  const out: Candidate[] = [];
  for (const info of overflow) {
    const c = (await ctx.store.hookCounters({ fromMs, toMs, hookId: info.id })).get(info.id);
    const l = late.get(info.id);
    const annotations = hookLimitCondition(rule, c && l ? totalCounters([c, l]) : (c ?? l), info.hookName, ctx.store.maxHooks, l);
    if (annotations) out.push({ labels: hookLabels(rule, info), annotations, hookId: info.id, readEvidence: evidenceReader(ctx, info.id, fromMs, toMs, (b) => b.executions + b.starts > 0) });
  }
  return out;
}

const EVALUATORS: Record<RuleConfig['kind'], (rule: RuleConfig, ctx: RuleContext) => Promise<Candidate[]>> = {
  persisted,
  persisted_ratio: persistedRatio,
  headroom,
  growth,
  blind,
  silence,
  never_completed: neverCompleted,
  hook_limit: hookLimit,
};

/** The label sets for which the rule's condition holds at ctx.now, with the rule's own labels added. */
export async function evaluateRule(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  const candidates = await EVALUATORS[rule.kind](rule, ctx);
  if (Object.keys(rule.labels).length === 0) return candidates;
  return candidates.map((c) => ({ ...c, labels: { ...c.labels, ...rule.labels } }));
}
