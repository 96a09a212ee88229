/**
 * Rule evaluation: each rule reads the store through the Store interface (so it runs unchanged on any backend)
 * and returns the label sets whose condition holds now, with annotations a person can act on.
 */
import type { HookCounters } from '../store/model.ts';
import { totalCounters } from '../store/counters.ts';
import { isOverflowHook } from '../store/hook-limit.ts';
import { FIRST_VERSION_WITH_SIZES, OUTPUT_CAP_CHARS, PREVIEW_CHARS, largestKnown, largestOutput } from '../../../shared/src/cliff.ts';
import { forecastCrossing, type Point } from '../../../shared/src/forecast.ts';
import type { Arrival, HookInfo, Store } from '../store/store.ts';
import type { HookEvent } from '../hooks/model.ts';
import type { RuleConfig } from './config.ts';

/** One label set whose condition holds at evaluation time. */
export interface Candidate {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  hookId: string | null;
}

export interface RuleContext {
  store: Store;
  now: number;
}

/** Most alerts one rule may hold: label cardinality is bounded; the rest is dropped and counted. */
export const MAX_ALERTS_PER_RULE = 500;

const DAY = 86_400_000;
/**
 * Windows that end "now" reach this far past it: ranges are [from, to), and an event stamped at now, or a little
 * ahead by a client's clock, must count on the ingest that brought it, not a minute later.
 */
export const FUTURE_SKEW_MS = 5 * 60_000;
const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const plural = (n: number, one: string, many = one + 's'): string => `${fmt(n)} ${n === 1 ? one : many}`;

/** Human window: 1h, 24h, 14d. */
export function windowText(ms: number): string {
  if (ms % DAY === 0 && ms >= 2 * DAY) return `${ms / DAY}d`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  return `${Math.round(ms / 1000)}s`;
}

/** Rules evaluated on every ingest (a persisted output must be notified within a second); the rest on the timer. */
export function evaluatesOnIngest(rule: RuleConfig): boolean {
  return rule.kind === 'persisted' || rule.kind === 'persisted_ratio' || rule.kind === 'headroom' || rule.kind === 'blind' || rule.kind === 'hook_limit';
}

/** True when one of these new events can make the rule's condition hold (so it is worth evaluating now). */
export function ruleTriggeredBy(rule: RuleConfig, events: readonly HookEvent[]): boolean {
  switch (rule.kind) {
    case 'persisted':
    case 'persisted_ratio':
      return events.some((e) => (e.outputsPersisted ?? 0) > 0);
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

/** Label name for a dimension: dots become underscores (organization.id -> organization_id), as labels are identifiers. */
export function dimensionLabel(dimension: string): string {
  return dimension.replace(/[^a-zA-Z0-9_]/g, '_');
}

function hookLabels(rule: RuleConfig, info: HookInfo): Record<string, string> {
  return { alertname: rule.name, severity: rule.severity, hook_event: info.hookEvent, hook_name: info.hookName };
}

type HookCondition = (c: HookCounters, info: HookInfo, scope: string) => Record<string, string> | null;

/** Per hook, or per hook and dimension value when the rule has groupBy. */
async function perHook(rule: RuleConfig, ctx: RuleContext, fromMs: number, toMs: number, cond: HookCondition): Promise<Candidate[]> {
  const counters = await ctx.store.hookCounters({ fromMs, toMs });
  const out: Candidate[] = [];
  for (const c of counters.values()) {
    if (!rule.groupBy) {
      const annotations = cond(c, c.info, c.info.hookName);
      if (annotations) out.push({ labels: hookLabels(rule, c.info), annotations, hookId: c.info.id });
      continue;
    }
    const rows = await ctx.store.breakdown(c.info.id, rule.groupBy, { fromMs, toMs });
    for (const row of rows) {
      const annotations = cond(row, c.info, row.value ? `${c.info.hookName} (${rule.groupBy}=${row.value})` : c.info.hookName);
      if (!annotations) continue;
      const labels = hookLabels(rule, c.info);
      if (row.value) labels[dimensionLabel(rule.groupBy)] = row.value;
      out.push({ labels, annotations, hookId: c.info.id });
    }
  }
  return out;
}

/**
 * Persisted outputs in the window, by event time or by arrival: a batch stamped an hour ago (a Collector queue
 * draining after an outage, a client clock behind) still notifies when it arrives, with its event times named.
 */
async function persisted(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  const w = windowText(rule.windowMs);
  const fromMs = ctx.now - rule.windowMs;
  const toMs = ctx.now + FUTURE_SKEW_MS;
  // Arrivals in the window whose event time is before it: the event-time window below does not count them.
  const late = await ctx.store.latePersisted({ receivedFromMs: fromMs, receivedToMs: toMs, eventBeforeMs: fromMs });
  const seen = new Set<string>();
  const cond: HookCondition = (c, info, scope) => {
    seen.add(info.id);
    // Late arrivals are counted per hook: split by a dimension, they would be added to every group.
    const l = rule.groupBy ? undefined : late.get(info.id);
    return persistedAnnotations(l ? totalCounters([c, l]) : c, scope, w, l);
  };
  const out = await perHook(rule, ctx, fromMs, toMs, cond);
  for (const l of late.values()) {
    if (seen.has(l.info.id)) continue;
    const annotations = persistedAnnotations(l, l.info.hookName, w, l);
    if (annotations) out.push({ labels: hookLabels(rule, l.info), annotations, hookId: l.info.id });
  }
  return out;
}

function persistedAnnotations(c: HookCounters, scope: string, w: string, late: Arrival | undefined): Record<string, string> | null {
  // The headline divergence: Claude Code saved output to a file while the hook reported success.
  if (c.outputsPersisted <= 0 || c.success <= 0) return null;
  const max = largestOutput(c);
  const iso = (ms: number): string => new Date(ms).toISOString();
  const lateText = late
    ? ` ${plural(late.outputsPersisted, 'of them', 'of them')} arrived late: stamped ${late.firstEventMs === late.lastEventMs ? iso(late.firstEventMs) : `${iso(late.firstEventMs)} to ${iso(late.lastEventMs)}`}, received in the last ${w}.`
    : '';
  return {
    summary: `${scope}: ${plural(c.outputsPersisted, 'output')} over the ${fmt(OUTPUT_CAP_CHARS)}-character cap saved to a file in the last ${w}; the model saw only a ~${fmt(PREVIEW_CHARS)}-character preview while the hook reported success.`,
    description: `${fmt(c.executionsWithPersisted)} of ${plural(c.executions, 'execution')} lost output${max !== null ? `; largest reported output ${fmt(max)} characters` : ''}. Keep each output under ${fmt(OUTPUT_CAP_CHARS)} characters.${lateText}`,
    outputs_persisted: String(c.outputsPersisted),
    executions: String(c.executions),
    ...(max !== null ? { largest_output: String(max) } : {}),
    ...(late ? { event_time: iso(late.lastEventMs), first_event_time: iso(late.firstEventMs), late_outputs_persisted: String(late.outputsPersisted) } : {}),
  };
}

function persistedRatio(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  const w = windowText(rule.windowMs);
  return perHook(rule, ctx, ctx.now - rule.windowMs, ctx.now + FUTURE_SKEW_MS, (c, _info, scope) => {
    if (c.executions < rule.minExecutions) return null;
    const ratio = c.executionsWithPersisted / c.executions;
    if (ratio <= rule.threshold) return null;
    return {
      summary: `${scope}: ${(ratio * 100).toFixed(1)}% of executions in the last ${w} had output saved to a file instead of delivered (threshold ${(rule.threshold * 100).toFixed(1)}%).`,
      description: `${fmt(c.executionsWithPersisted)} of ${plural(c.executions, 'execution')}; ${plural(c.outputsPersisted, 'output')} persisted.`,
      ratio: ratio.toFixed(4),
    };
  });
}

function headroom(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  const limit = rule.threshold * OUTPUT_CAP_CHARS;
  const w = windowText(rule.windowMs);
  return perHook(rule, ctx, ctx.now - rule.windowMs, ctx.now + FUTURE_SKEW_MS, (c, _info, scope) => {
    // A hook already over the cap is the persisted rule's: one alert per problem, not two.
    if (c.outputsPersisted > 0) return null;
    const max = largestOutput(c);
    if (max === null || max <= limit) return null;
    return {
      // Sizes are sums over the hooks of an execution: a sum can pass the cap while no single output did.
      summary: max > OUTPUT_CAP_CHARS
        ? `${scope}: largest output in the last ${w} is ${fmt(max)} characters, ${fmt(max - OUTPUT_CAP_CHARS)} over the ${fmt(OUTPUT_CAP_CHARS)}-character cap summed over the hooks that ran; none was persisted (alert above ${fmt(limit)}).`
        : `${scope}: largest output in the last ${w} is ${fmt(max)} characters, ${fmt(OUTPUT_CAP_CHARS - max)} below the ${fmt(OUTPUT_CAP_CHARS)}-character cap (alert above ${fmt(limit)}).`,
      description: `Past the cap the model gets a ~${fmt(PREVIEW_CHARS)}-character preview instead. Sizes are sums over the hooks that ran, so this is an upper bound of the largest single output.`,
      largest_output: String(max),
      headroom: String(OUTPUT_CAP_CHARS - max),
    };
  });
}

function neverCompleted(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  // The window ends `after` ago: a start whose complete is still in flight (next export batch) is not missing yet.
  const toMs = ctx.now - rule.afterMs;
  return perHook(rule, ctx, toMs - rule.windowMs, toMs, (c, _info, scope) => {
    const missing = c.starts - c.executions;
    if (missing <= 0) return null;
    return {
      summary: `${scope}: ${plural(missing, 'execution')} started without completing in the ${windowText(rule.windowMs)} up to ${windowText(rule.afterMs)} ago.`,
      description: `${fmt(c.starts)} hook_execution_start vs ${fmt(c.executions)} hook_execution_complete. A blocked UserPromptSubmit hook in -p mode, a crash or a cancelled session sends start and never complete; its output never reached the model.`,
      missing: String(missing),
    };
  });
}

async function growth(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  const fromMs = Math.floor((ctx.now - rule.windowMs) / DAY) * DAY;
  const toMs = ctx.now + FUTURE_SKEW_MS;
  const counters = await ctx.store.hookCounters({ fromMs, toMs });
  const out: Candidate[] = [];
  for (const c of counters.values()) {
    if (c.outputsPersisted > 0) continue;
    const series = await ctx.store.series(c.info.id, { fromMs, toMs, stepMs: DAY });
    const points: Point[] = [...series.entries()]
      .map(([t, b]) => ({ t, value: largestOutput(b) }))
      .filter((p): p is Point => p.value !== null)
      .sort((a, b) => a.t - b.t);
    const f = forecastCrossing(points);
    if (!f || f.daysToCap === null || f.crossesAtMs === null || f.daysToCap > rule.horizonDays) continue;
    out.push({
      labels: hookLabels(rule, c.info),
      annotations: {
        summary: `${c.info.hookName}: the daily largest output grows ${fmt(f.slopePerDay)} characters a day and reaches the ${fmt(OUTPUT_CAP_CHARS)}-character cap in about ${f.daysToCap.toFixed(1)} days (${new Date(f.crossesAtMs).toISOString().slice(0, 10)}).`,
        description: `Trend over ${f.points} days with data, now about ${fmt(f.current)} characters. Past the cap the model gets a ~${fmt(PREVIEW_CHARS)}-character preview.`,
        days_to_cap: f.daysToCap.toFixed(1),
        crosses_at: new Date(f.crossesAtMs).toISOString(),
      },
      hookId: c.info.id,
    });
  }
  return out;
}

async function blind(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  const versions = await ctx.store.clientVersions({ fromMs: ctx.now - rule.windowMs, toMs: ctx.now + FUTURE_SKEW_MS });
  return versions.filter((v) => v.sizeUnknownExecutions > 0).map((v) => ({
    labels: { alertname: rule.name, severity: rule.severity, service_name: v.serviceName, service_version: v.version },
    annotations: {
      summary: `${v.serviceName} ${v.version || '(unknown version)'}: ${fmt(v.sizeUnknownExecutions)} of ${plural(v.executions, 'execution')} in the last ${windowText(rule.windowMs)} carried no size data, so hookwatch cannot see the cliff for these users.`,
      description: `Claude Code reports hook output sizes from ${FIRST_VERSION_WITH_SIZES} on; upgrade these clients (pin @anthropic-ai/claude-code to a current version; on Node 20 npm silently installs 2.1.197).`,
      executions_without_sizes: String(v.sizeUnknownExecutions),
    },
    hookId: null,
  }));
}

async function silence(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  const quiet = windowText(rule.afterMs);
  if (rule.scope === 'feed') {
    const last = await ctx.store.lastEventMs();
    if (last === null || ctx.now - last < rule.afterMs) return [];
    return [{
      labels: { alertname: rule.name, severity: rule.severity, scope: 'feed' },
      annotations: {
        summary: `No hook events at all for ${windowText(ctx.now - last)} (alert after ${quiet}); last event ${new Date(last).toISOString()}.`,
        description: 'Check that clients still export telemetry (CLAUDE_CODE_ENABLE_TELEMETRY=1, OTEL_LOGS_EXPORTER=otlp) and can reach hookwatch.',
        last_event: new Date(last).toISOString(),
      },
      hookId: null,
    }];
  }
  // A hook counts as "was active" when it sent anything within the rule's window.
  const counters = await ctx.store.hookCounters({ fromMs: ctx.now - rule.windowMs, toMs: ctx.now + FUTURE_SKEW_MS });
  const out: Candidate[] = [];
  for (const c of counters.values()) {
    const quietFor = ctx.now - c.info.lastSeenMs;
    if (quietFor < rule.afterMs) continue;
    out.push({
      labels: hookLabels(rule, c.info),
      annotations: {
        summary: `${c.info.hookName}: no executions for ${windowText(Math.floor(quietFor / 1000) * 1000)} (alert after ${quiet}); last seen ${new Date(c.info.lastSeenMs).toISOString()}.`,
        description: 'The hook was active and went quiet: removed from settings, failing before it runs, or its clients stopped exporting.',
        last_seen: new Date(c.info.lastSeenMs).toISOString(),
      },
      hookId: c.info.id,
    });
  }
  return out;
}

/**
 * Events of new hook names counted under an overflow hook in the window: store.maxHooks is reached. Reads the
 * few overflow hooks one by one, never every hook (it runs on each ingest that folds events).
 */
async function hookLimit(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  const out: Candidate[] = [];
  for (const info of await ctx.store.overflowHooks()) {
    const c = (await ctx.store.hookCounters({ fromMs: ctx.now - rule.windowMs, toMs: ctx.now + FUTURE_SKEW_MS, hookId: info.id })).get(info.id);
    const n = c ? c.executions + c.starts : 0;
    if (n <= 0) continue;
    out.push({
      labels: hookLabels(rule, info),
      annotations: {
        summary: `${plural(n, 'hook event')} of new hook names in the last ${windowText(rule.windowMs)} were counted under ${info.hookName}: hookwatch holds its limit of ${fmt(ctx.store.maxHooks)} hooks (store.maxHooks).`,
        description: 'Their counts are kept but not per hook. A client sending a new hook_name per execution (a timestamp or id in the name) is the usual cause; otherwise raise store.maxHooks. Hooks with nothing left in retention are removed, which frees room.',
        folded_events: String(n),
        max_hooks: String(ctx.store.maxHooks),
      },
      hookId: info.id,
    });
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

/** The label sets for which the rule's condition holds at ctx.now. */
export function evaluateRule(rule: RuleConfig, ctx: RuleContext): Promise<Candidate[]> {
  return EVALUATORS[rule.kind](rule, ctx);
}
