/**
 * Rollup counters: how one event adds to a bucket, how buckets merge, and the SQL column list every backend
 * shares. Max columns stay NULL until an execution with size data arrives: unknown is not zero.
 */
import type { CharsByKind, HookCounters } from './model.ts';
import type { HookEvent } from '../hooks/model.ts';
import { singleStringBounds } from '../hooks/cliff.ts';
import { granularityMs, type Granularity } from './segments.ts';

/** Additive counters (SUM on merge). */
export const SUM_COLUMNS = [
  'executions', 'starts', 'num_hooks', 'success', 'blocking', 'non_blocking_error', 'cancelled',
  'outputs_persisted', 'executions_with_persisted', 'size_unknown', 'near_executions',
  'sum_stdout', 'sum_additional_context', 'sum_system_message', 'sum_initial_user_message', 'duration_sum',
] as const;

/** Maximum counters (MAX on merge, NULL-ignoring). */
export const MAX_COLUMNS = [
  'max_stdout', 'max_additional_context', 'max_system_message', 'max_initial_user_message',
  'lmax_stdout', 'lmax_additional_context', 'lmax_system_message', 'lmax_initial_user_message', 'duration_max',
] as const;

export const COUNTER_COLUMNS = [...SUM_COLUMNS, ...MAX_COLUMNS] as const;

/**
 * The sums that count (executions, outcomes, duration): 0 when nothing counted. The size sums (sum_*) are not
 * among them: there NULL means unknown.
 */
export const COUNT_SUM_COLUMNS: readonly string[] = SUM_COLUMNS.filter((c) => !c.startsWith('sum_'));
export type CounterColumn = (typeof COUNTER_COLUMNS)[number];
export type CounterRow = Record<CounterColumn, number | null>;

const KINDS = [
  ['stdout', 'stdout', 'stdoutChars'],
  ['additionalContext', 'additional_context', 'additionalContextChars'],
  ['systemMessage', 'system_message', 'systemMessageChars'],
  ['initialUserMessage', 'initial_user_message', 'initialUserMessageChars'],
] as const;

/** Each kind's event field and its sum, max and lower-bound max columns, named once (addEvent runs per event). */
const KIND_COLUMNS = KINDS.map(([, col, field]) => ({ field, sum: `sum_${col}` as const, max: `max_${col}` as const, lmax: `lmax_${col}` as const }));

export function emptyRow(): CounterRow {
  const row = {} as CounterRow;
  for (const c of SUM_COLUMNS) row[c] = 0;
  for (const c of MAX_COLUMNS) row[c] = null;
  for (const [, col] of KINDS) row[`sum_${col}`] = null;
  return row;
}

function addMax(row: CounterRow, col: CounterColumn, v: number | null): void {
  if (v === null) return;
  const cur = row[col];
  if (cur === null || v > cur) row[col] = v;
}

function addSum(row: CounterRow, col: CounterColumn, v: number | null): void {
  if (v === null) return;
  row[col] = (row[col] ?? 0) + v;
}

/** Adds one event to a rollup row. */
export function addEvent(row: CounterRow, e: HookEvent): void {
  if (e.kind === 'start') {
    row.starts = (row.starts ?? 0) + 1;
    return;
  }
  addSum(row, 'executions', 1);
  addSum(row, 'num_hooks', e.numHooks);
  addSum(row, 'success', e.numSuccess);
  addSum(row, 'blocking', e.numBlocking);
  addSum(row, 'non_blocking_error', e.numNonBlockingError);
  addSum(row, 'cancelled', e.numCancelled);
  addSum(row, 'outputs_persisted', e.outputsPersisted);
  if (e.status === 'over') addSum(row, 'executions_with_persisted', 1);
  if (e.status === 'near') addSum(row, 'near_executions', 1);
  if (!e.sizesKnown) addSum(row, 'size_unknown', 1);
  for (const k of KIND_COLUMNS) {
    const v = e[k.field];
    if (v === null) continue;
    addSum(row, k.sum, v);
    addMax(row, k.max, v);
    addMax(row, k.lmax, singleStringBounds(v, e.numHooks).lower);
  }
  addSum(row, 'duration_sum', e.durationMs);
  addMax(row, 'duration_max', e.durationMs);
}

/** Merges b into a (used when combining minute, hour and day segments of a range). */
export function mergeRow(a: CounterRow, b: CounterRow): void {
  for (const c of SUM_COLUMNS) addSum(a, c, b[c]);
  for (const c of MAX_COLUMNS) addMax(a, c, b[c]);
}

function chars(row: CounterRow, prefix: 'max_' | 'lmax_' | 'sum_'): CharsByKind {
  const out = {} as CharsByKind;
  for (const [api, col] of KINDS) {
    const v = row[`${prefix}${col}` as CounterColumn];
    out[api] = v === null || v === undefined ? null : Number(v);
  }
  return out;
}

/** HookCounters' count fields and the column each comes from. */
const NUMBER_FIELDS = [
  ['executions', 'executions'], ['starts', 'starts'], ['numHooks', 'num_hooks'], ['success', 'success'], ['blocking', 'blocking'],
  ['nonBlockingError', 'non_blocking_error'], ['cancelled', 'cancelled'], ['outputsPersisted', 'outputs_persisted'],
  ['executionsWithPersisted', 'executions_with_persisted'], ['sizeUnknownExecutions', 'size_unknown'],
  ['nearExecutions', 'near_executions'], ['durationMsSum', 'duration_sum'],
] as const;

/** HookCounters' per-kind size fields and the column prefix of each. */
const CHAR_GROUPS = [['maxChars', 'max_'], ['maxCharsLowerBound', 'lmax_'], ['sumChars', 'sum_']] as const;

/** The counters of a rollup row. */
export function toCounters(row: CounterRow): HookCounters {
  const out = { durationMsMax: row.duration_max === null ? null : Number(row.duration_max) } as HookCounters;
  for (const [field, col] of NUMBER_FIELDS) out[field] = Number(row[col] ?? 0);
  for (const [group, prefix] of CHAR_GROUPS) out[group] = chars(row, prefix);
  return out;
}

/** The rollup row of a counters object (the inverse of toCounters). */
function toRow(c: HookCounters): CounterRow {
  const row = emptyRow();
  for (const [field, col] of NUMBER_FIELDS) row[col] = c[field];
  for (const [group, prefix] of CHAR_GROUPS) for (const [api, col] of KINDS) row[`${prefix}${col}`] = c[group][api];
  row.duration_max = c.durationMsMax;
  return row;
}

/** Several counters together, as if one row had folded all their events (the merge rules of mergeRow). */
export function totalCounters(list: readonly HookCounters[]): HookCounters {
  const total = emptyRow();
  for (const c of list) mergeRow(total, toRow(c));
  return toCounters(total);
}

/** Normalises a database row (bigint or string numbers) to a CounterRow. */
export function fromDbRow(r: Record<string, unknown>): CounterRow {
  const row = {} as CounterRow;
  for (const c of COUNTER_COLUMNS) {
    const v = r[c];
    row[c] = v === null || v === undefined ? null : Number(v);
  }
  return row;
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

/**
 * What a commit adds to the hooks table and to each rollup: one group per (hook, bucket, client), in key order
 * (every backend then takes row locks in the same order). First and last seen are never later than `nowMs`:
 * a client clock running ahead must not make a hook look active in the future (HookInfo).
 */
export function groupForRollups(events: readonly HookEvent[], nowMs: number): { hooks: Map<string, HookSeen>; rows: Record<Granularity, RollupGroup[]> } {
  const hooks = new Map<string, HookSeen>();
  const groups: Record<Granularity, Map<string, RollupGroup>> = { minute: new Map(), hour: new Map(), day: new Map() };
  // Each event is folded once, into its minute group; the hour and day groups merge those few minute rows
  // (hours and days are whole minutes), instead of folding every event three times.
  const [finest, ...coarser] = GRANULARITIES as [Granularity, ...Granularity[]];
  const finestMs = granularityMs(finest);
  for (const e of events) {
    const seen = Math.min(e.timeMs, nowMs);
    const h = hooks.get(e.hookId);
    if (!h) hooks.set(e.hookId, { event: e, firstMs: seen, lastMs: seen });
    else {
      h.firstMs = Math.min(h.firstMs, seen);
      h.lastMs = Math.max(h.lastMs, seen);
    }
    addEvent(rollupGroup(groups[finest], e.hookId, Math.floor(e.timeMs / finestMs) * finestMs, e.serviceName, e.serviceVersion).row, e);
  }
  for (const g of coarser) {
    const size = granularityMs(g);
    for (const m of groups[finest].values()) mergeRow(rollupGroup(groups[g], m.hookId, Math.floor(m.bucket / size) * size, m.serviceName, m.serviceVersion).row, m.row);
  }
  const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  const order = (a: RollupGroup, b: RollupGroup): number =>
    cmp(a.hookId, b.hookId) || a.bucket - b.bucket || cmp(a.serviceName, b.serviceName) || cmp(a.serviceVersion, b.serviceVersion);
  return {
    hooks: new Map([...hooks].sort(([a], [b]) => cmp(a, b))),
    rows: { minute: [...groups.minute.values()].sort(order), hour: [...groups.hour.values()].sort(order), day: [...groups.day.values()].sort(order) },
  };
}

