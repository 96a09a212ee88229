/**
 * Rollup counters: how one event adds to a bucket, how buckets merge, and the SQL column list every backend
 * shares. Max columns stay NULL until an execution with size data arrives: unknown is not zero.
 */
import { OUTPUT_KINDS } from '../../../shared/src/cliff.ts';
import { COUNT_FIELDS, type HookCounters } from './model.ts';
import type { HookEvent } from '../hooks/model.ts';
import { singleStringBounds } from '../hooks/cliff.ts';
import { granularityMs, type Granularity } from './segments.ts';

/** Additive counters (SUM on merge). */
export const SUM_COLUMNS = [
  'executions', 'starts', 'num_hooks', 'success', 'blocking', 'non_blocking_error', 'cancelled',
  'outputs_persisted', 'executions_with_persisted', 'size_unknown', 'near_executions', 'sizes_may_sum',
  'sum_stdout', 'sum_additional_context', 'sum_system_message', 'sum_initial_user_message', 'duration_sum',
] as const;

/** Maximum counters (MAX on merge, NULL-ignoring). */
export const MAX_COLUMNS = [
  'max_stdout', 'max_additional_context', 'max_system_message', 'max_initial_user_message',
  'lmax_stdout', 'lmax_additional_context', 'lmax_system_message', 'lmax_initial_user_message', 'duration_max',
] as const;

export const COUNTER_COLUMNS = [...SUM_COLUMNS, ...MAX_COLUMNS] as const;

/**
 * The counter columns of the first schema, which the migrations before the count of executions whose sizes may be
 * sums create and fold (each backend's migration adds sizes_may_sum after them, 0 in the rows already written).
 */
export const FIRST_COUNTER_COLUMNS: readonly string[] = COUNTER_COLUMNS.filter((c) => c !== 'sizes_may_sum');

/**
 * The sums that count (executions, outcomes, duration): 0 when nothing counted. The size sums (sum_*) are not
 * among them: there NULL means unknown.
 */
export const COUNT_SUM_COLUMNS: readonly string[] = SUM_COLUMNS.filter((c) => !c.startsWith('sum_'));
export type CounterColumn = (typeof COUNTER_COLUMNS)[number];
export type CounterRow = Record<CounterColumn, number | null>;

/**
 * A row no event has added to: counts 0, sizes and maxima unknown (NULL). Written out as one literal, in
 * COUNTER_COLUMNS order (commit-groups.test.ts holds it to the column lists): a commit creates a row per rollup
 * group, and filling one column by column cost about a microsecond each.
 */
export function emptyRow(): CounterRow {
  return {
    executions: 0, starts: 0, num_hooks: 0, success: 0, blocking: 0, non_blocking_error: 0, cancelled: 0,
    outputs_persisted: 0, executions_with_persisted: 0, size_unknown: 0, near_executions: 0, sizes_may_sum: 0,
    sum_stdout: null, sum_additional_context: null, sum_system_message: null, sum_initial_user_message: null, duration_sum: 0,
    max_stdout: null, max_additional_context: null, max_system_message: null, max_initial_user_message: null,
    lmax_stdout: null, lmax_additional_context: null, lmax_system_message: null, lmax_initial_user_message: null, duration_max: null,
  };
}

/** A sum column with `v` added (unchanged when v is unknown). */
function plus(cur: number | null, v: number | null): number | null {
  return v === null ? cur : (cur ?? 0) + v;
}

/** A max column with `v` taken in (unchanged when v is unknown). */
function atLeast(cur: number | null, v: number | null): number | null {
  return v === null ? cur : cur === null || v > cur ? v : cur;
}

/**
 * Adds one event to a rollup row. Every stored event runs this three times (base, dimension and attribute-set
 * rollups), so each column is read and written by name: through a helper taking the column's name, every
 * access went through one lookup shared by all 26 names, several times slower.
 */
export function addEvent(row: CounterRow, e: HookEvent): void {
  if (e.kind === 'start') {
    row.starts = (row.starts ?? 0) + 1;
    return;
  }
  row.executions = plus(row.executions, 1);
  row.num_hooks = plus(row.num_hooks, e.numHooks);
  row.success = plus(row.success, e.numSuccess);
  row.blocking = plus(row.blocking, e.numBlocking);
  row.non_blocking_error = plus(row.non_blocking_error, e.numNonBlockingError);
  row.cancelled = plus(row.cancelled, e.numCancelled);
  row.outputs_persisted = plus(row.outputs_persisted, e.outputsPersisted);
  if (e.status === 'over') row.executions_with_persisted = plus(row.executions_with_persisted, 1);
  if (e.status === 'near') row.near_executions = plus(row.near_executions, 1);
  if (!e.sizesKnown) row.size_unknown = plus(row.size_unknown, 1);
  // Sizes summed over more than one command, or over a count the client did not send.
  else if (e.numHooks === null || e.numHooks > 1) row.sizes_may_sum = plus(row.sizes_may_sum, 1);
  // Per kind (OUTPUT_KINDS): the sum, the largest sum, and the largest lower bound of one string (cliff.ts): none
  // from an execution without num_hooks, whose sums may be over any number of commands.
  const stdout = e.stdoutChars;
  if (stdout !== null) {
    row.sum_stdout = plus(row.sum_stdout, stdout);
    row.max_stdout = atLeast(row.max_stdout, stdout);
    row.lmax_stdout = atLeast(row.lmax_stdout, singleStringBounds(stdout, e.numHooks).lower);
  }
  const context = e.additionalContextChars;
  if (context !== null) {
    row.sum_additional_context = plus(row.sum_additional_context, context);
    row.max_additional_context = atLeast(row.max_additional_context, context);
    row.lmax_additional_context = atLeast(row.lmax_additional_context, singleStringBounds(context, e.numHooks).lower);
  }
  const system = e.systemMessageChars;
  if (system !== null) {
    row.sum_system_message = plus(row.sum_system_message, system);
    row.max_system_message = atLeast(row.max_system_message, system);
    row.lmax_system_message = atLeast(row.lmax_system_message, singleStringBounds(system, e.numHooks).lower);
  }
  const initial = e.initialUserMessageChars;
  if (initial !== null) {
    row.sum_initial_user_message = plus(row.sum_initial_user_message, initial);
    row.max_initial_user_message = atLeast(row.max_initial_user_message, initial);
    row.lmax_initial_user_message = atLeast(row.lmax_initial_user_message, singleStringBounds(initial, e.numHooks).lower);
  }
  row.duration_sum = plus(row.duration_sum, e.durationMs);
  row.duration_max = atLeast(row.duration_max, e.durationMs);
}

/**
 * Merges b into a (used when combining minute, hour and day segments of a range). A range across thousands of
 * hooks merges a row per hook and segment on the event loop: each column by name, as addEvent, at a fraction of
 * the cost of a loop over the column names.
 */
export function mergeRow(a: CounterRow, b: CounterRow): void {
  a.executions = plus(a.executions, b.executions);
  a.starts = plus(a.starts, b.starts);
  a.num_hooks = plus(a.num_hooks, b.num_hooks);
  a.success = plus(a.success, b.success);
  a.blocking = plus(a.blocking, b.blocking);
  a.non_blocking_error = plus(a.non_blocking_error, b.non_blocking_error);
  a.cancelled = plus(a.cancelled, b.cancelled);
  a.outputs_persisted = plus(a.outputs_persisted, b.outputs_persisted);
  a.executions_with_persisted = plus(a.executions_with_persisted, b.executions_with_persisted);
  a.size_unknown = plus(a.size_unknown, b.size_unknown);
  a.near_executions = plus(a.near_executions, b.near_executions);
  a.sizes_may_sum = plus(a.sizes_may_sum, b.sizes_may_sum);
  a.sum_stdout = plus(a.sum_stdout, b.sum_stdout);
  a.sum_additional_context = plus(a.sum_additional_context, b.sum_additional_context);
  a.sum_system_message = plus(a.sum_system_message, b.sum_system_message);
  a.sum_initial_user_message = plus(a.sum_initial_user_message, b.sum_initial_user_message);
  a.duration_sum = plus(a.duration_sum, b.duration_sum);
  a.max_stdout = atLeast(a.max_stdout, b.max_stdout);
  a.max_additional_context = atLeast(a.max_additional_context, b.max_additional_context);
  a.max_system_message = atLeast(a.max_system_message, b.max_system_message);
  a.max_initial_user_message = atLeast(a.max_initial_user_message, b.max_initial_user_message);
  a.lmax_stdout = atLeast(a.lmax_stdout, b.lmax_stdout);
  a.lmax_additional_context = atLeast(a.lmax_additional_context, b.lmax_additional_context);
  a.lmax_system_message = atLeast(a.lmax_system_message, b.lmax_system_message);
  a.lmax_initial_user_message = atLeast(a.lmax_initial_user_message, b.lmax_initial_user_message);
  a.duration_max = atLeast(a.duration_max, b.duration_max);
}

/** A column's value as a number, or null (unknown). */
function known(v: unknown): number | null {
  return v === null || v === undefined ? null : Number(v);
}

/** The counters of a rollup row (every hook of an answer goes through it: written out by name, as mergeRow). */
export function toCounters(row: CounterRow): HookCounters {
  return {
    durationMsMax: known(row.duration_max),
    executions: Number(row.executions ?? 0), starts: Number(row.starts ?? 0), numHooks: Number(row.num_hooks ?? 0),
    success: Number(row.success ?? 0), blocking: Number(row.blocking ?? 0), nonBlockingError: Number(row.non_blocking_error ?? 0),
    cancelled: Number(row.cancelled ?? 0), outputsPersisted: Number(row.outputs_persisted ?? 0),
    executionsWithPersisted: Number(row.executions_with_persisted ?? 0), sizeUnknownExecutions: Number(row.size_unknown ?? 0),
    nearExecutions: Number(row.near_executions ?? 0), sizesMaySumExecutions: Number(row.sizes_may_sum ?? 0), durationMsSum: Number(row.duration_sum ?? 0),
    maxChars: { stdout: known(row.max_stdout), additionalContext: known(row.max_additional_context), systemMessage: known(row.max_system_message), initialUserMessage: known(row.max_initial_user_message) },
    maxCharsLowerBound: { stdout: known(row.lmax_stdout), additionalContext: known(row.lmax_additional_context), systemMessage: known(row.lmax_system_message), initialUserMessage: known(row.lmax_initial_user_message) },
    sumChars: { stdout: known(row.sum_stdout), additionalContext: known(row.sum_additional_context), systemMessage: known(row.sum_system_message), initialUserMessage: known(row.sum_initial_user_message) },
  };
}

/**
 * Several counters together, as if one row had folded all their events (the merge rules of mergeRow): counts
 * summed, sizes summed or the largest taken, unknown (null) left out.
 */
export function totalCounters(list: readonly HookCounters[]): HookCounters {
  const t = toCounters(emptyRow());
  for (const c of list) {
    for (const f of COUNT_FIELDS) t[f] += c[f];
    for (const kind of OUTPUT_KINDS) {
      t.maxChars[kind] = atLeast(t.maxChars[kind], c.maxChars[kind]);
      t.maxCharsLowerBound[kind] = atLeast(t.maxCharsLowerBound[kind], c.maxCharsLowerBound[kind]);
      t.sumChars[kind] = plus(t.sumChars[kind], c.sumChars[kind]);
    }
    t.durationMsMax = atLeast(t.durationMsMax, c.durationMsMax);
  }
  return t;
}

/** Normalises a database row (bigint or string numbers) to a CounterRow, written out by name as toCounters. */
export function fromDbRow(r: Record<string, unknown>): CounterRow {
  return {
    executions: known(r['executions']), starts: known(r['starts']), num_hooks: known(r['num_hooks']), success: known(r['success']),
    blocking: known(r['blocking']), non_blocking_error: known(r['non_blocking_error']), cancelled: known(r['cancelled']),
    outputs_persisted: known(r['outputs_persisted']), executions_with_persisted: known(r['executions_with_persisted']),
    size_unknown: known(r['size_unknown']), near_executions: known(r['near_executions']), sizes_may_sum: known(r['sizes_may_sum']),
    sum_stdout: known(r['sum_stdout']), sum_additional_context: known(r['sum_additional_context']), sum_system_message: known(r['sum_system_message']),
    sum_initial_user_message: known(r['sum_initial_user_message']), duration_sum: known(r['duration_sum']),
    max_stdout: known(r['max_stdout']), max_additional_context: known(r['max_additional_context']), max_system_message: known(r['max_system_message']),
    max_initial_user_message: known(r['max_initial_user_message']),
    lmax_stdout: known(r['lmax_stdout']), lmax_additional_context: known(r['lmax_additional_context']), lmax_system_message: known(r['lmax_system_message']),
    lmax_initial_user_message: known(r['lmax_initial_user_message']), duration_max: known(r['duration_max']),
  };
}

/** One rollup row's worth of a commit: the key columns and the counters its events add. */
export interface RollupGroup {
  hookId: string;
  bucket: number;
  serviceName: string;
  serviceVersion: string;
  row: CounterRow;
}

/** A hook as a commit saw it: its names (from the first event) and its first and last event time. */
export interface HookSeen {
  event: HookEvent;
  firstMs: number;
  lastMs: number;
}

export const GRANULARITIES: readonly Granularity[] = ['minute', 'hour', 'day'];

/** The group of a rollup key, created empty on first use. Names and versions hold no NUL (hooks/extract.ts). */
function rollupGroup(groups: Map<string, RollupGroup>, hookId: string, bucket: number, serviceName: string, serviceVersion: string): RollupGroup {
  const key = `${hookId}\u0000${bucket}\u0000${serviceName}\u0000${serviceVersion}`;
  let group = groups.get(key);
  if (!group) {
    group = { hookId, bucket, serviceName, serviceVersion, row: emptyRow() };
    groups.set(key, group);
  }
  return group;
}

/** A hook's part of a commit: what the hooks table gets, and the minute group its last event went to. */
/** Strings in code-unit order, as the stores' key order compares them. */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareGroups(a: RollupGroup, b: RollupGroup): number {
  return compareText(a.hookId, b.hookId) || a.bucket - b.bucket || compareText(a.serviceName, b.serviceName) || compareText(a.serviceVersion, b.serviceVersion);
}

/**
 * What `events` add to the hooks table, by hook id in key order (every backend then takes row locks in the same
 * order): each hook's names (from its first event) and its first and last event time, never later than `nowMs`: a
 * client clock running ahead must not make a hook look active in the future (HookInfo).
 */
export function hooksSeen(events: readonly HookEvent[], nowMs: number): Map<string, HookSeen> {
  const hooks = new Map<string, HookSeen>();
  for (const e of events) {
    const seen = Math.min(e.timeMs, nowMs);
    const h = hooks.get(e.hookId);
    if (!h) hooks.set(e.hookId, { event: e, firstMs: seen, lastMs: seen });
    else {
      h.firstMs = Math.min(h.firstMs, seen);
      h.lastMs = Math.max(h.lastMs, seen);
    }
  }
  // Hook ids are distinct, so the default sort (code-unit order) is the key order.
  return new Map([...hooks.keys()].sort().map((id) => [id, hooks.get(id) as HookSeen]));
}

/**
 * What a commit adds to each rollup: one group per (hook, bucket, client), in key order (every backend then takes
 * row locks in the same order). What it adds to the hooks table is hooksSeen's.
 */
export function groupForRollups(events: readonly HookEvent[]): Record<Granularity, RollupGroup[]> {
  /** Each hook's group of its last event. */
  const last = new Map<string, RollupGroup>();
  const groups: Record<Granularity, Map<string, RollupGroup>> = { minute: new Map(), hour: new Map(), day: new Map() };
  // Each event is folded once, into its minute group; the hour and day groups merge those few minute rows
  // (hours and days are whole minutes), instead of folding every event three times.
  const [finest, ...coarser] = GRANULARITIES as [Granularity, ...Granularity[]];
  const finestMs = granularityMs(finest);
  for (const e of events) {
    // A hook's events of one batch nearly all come from one client within a minute: the group of its last
    // event is checked first, so the group key is built only when the minute or the client changes.
    const bucket = Math.floor(e.timeMs / finestMs) * finestMs;
    let g = last.get(e.hookId);
    if (g === undefined || g.bucket !== bucket || g.serviceName !== e.serviceName || g.serviceVersion !== e.serviceVersion) {
      g = rollupGroup(groups[finest], e.hookId, bucket, e.serviceName, e.serviceVersion);
      last.set(e.hookId, g);
    }
    addEvent(g.row, e);
  }
  for (const g of coarser) {
    const size = granularityMs(g);
    for (const m of groups[finest].values()) mergeRow(rollupGroup(groups[g], m.hookId, Math.floor(m.bucket / size) * size, m.serviceName, m.serviceVersion).row, m.row);
  }
  return { minute: [...groups.minute.values()].sort(compareGroups), hour: [...groups.hour.values()].sort(compareGroups), day: [...groups.day.values()].sort(compareGroups) };
}
