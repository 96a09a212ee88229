/**
 * Rollups per dimension: what a filtered view or a breakdown reads instead of the raw events, so its cost follows
 * the hooks, hours and dimension values in range, not the number of events in the history.
 *
 * What is rolled up, from configuration:
 * - service.name and service.version are keys of the base rollups (rollup_1m/1h/1d): a filter on them, or a
 *   breakdown by them, reads those, exact to the minute.
 * - Every key in `dimensions` (team by default; of the built-ins, organization.id, terminal.type and
 *   hookwatch.source may be listed there too): rollup_dim_1h and rollup_dim_1d, keyed (hook, dimension, bucket, value, client name,
 *   client version). The client is part of the key so the client-version list and a service.version filter or
 *   breakdown combined with one dimension filter are served too (a few versions are live at a time).
 * - user.*, session.id: not rolled up per value (one row per user or session per hour would cost about a row
 *   per event). Their whole hours and days, and those of every other read planned 'raw' below, come from the
 *   rollup per (hook, hour, attribute set) (attr-rollups.ts, pruned with the events); only the partial hours at a
 *   range's edges are read from the raw events of one hook through the (hook, time_ms) index.
 *
 * There are no per-minute dimension rollups (at org scale nearly one row per event). A range's partial hours at
 * its edges (and the hour being written) are read from the raw events: at most about two hours of events,
 * whatever the length of the history. A filter naming two rolled dimensions, a raw-only dimension, or an empty
 * value (rolled up together with a missing attribute) is planned 'raw': whole hours from the rollup per
 * attribute set, the edges from the raw events.
 */
import { BUILTIN_DIMENSIONS, type HookEvent } from '../hooks/model.ts';
import { SUM_COLUMNS, addEvent, emptyRow, mergeRow, type CounterRow } from './counters.ts';
import { DAY, HOUR, type Granularity } from './segments.ts';

export const DIM_ROLLUP_TABLES = { hour: 'rollup_dim_1h', day: 'rollup_dim_1d' } as const;
export type DimGranularity = keyof typeof DIM_ROLLUP_TABLES;
export const DIM_GRANULARITIES: readonly DimGranularity[] = ['hour', 'day'];
/** Key columns of a dimension rollup row, in primary-key order. */
export const DIM_ROLLUP_KEY = ['hook_id', 'dim', 'bucket', 'value', 'service_name', 'service_version'] as const;

/** Built-in dimensions with few values per hook and hour, rolled up whatever the configuration. */
export const ROLLED_BUILTINS = ['organization.id', 'terminal.type', 'hookwatch.source'] as const;

/** Dimensions that are key columns of the base rollups, and those columns. */
export const ROLLUP_KEY_DIMENSIONS: Readonly<Record<string, 'service_name' | 'service_version'>> = { 'service.name': 'service_name', 'service.version': 'service_version' };

/**
 * The dimensions rolled up for a configuration's `dimensions`: each configured key, and of the built-ins only the
 * low-cardinality ones listed there too (ROLLED_BUILTINS). Every rolled dimension costs rows per hook, hour, value
 * and client at ingest, so only what a team filters by is rolled; the other built-ins read the raw events.
 */
export function rolledDimensions(extraDimensions: readonly string[]): string[] {
  const out: string[] = [];
  for (const d of extraDimensions) {
    if (out.includes(d)) continue;
    if (!Object.hasOwn(BUILTIN_DIMENSIONS, d) || (ROLLED_BUILTINS as readonly string[]).includes(d)) out.push(d);
  }
  return out;
}

/** An event's value of a rolled dimension, as the raw read groups it (COALESCE(expr, '')): missing is ''. */
export function dimValue(e: HookEvent, dim: string): string {
  if (Object.hasOwn(BUILTIN_DIMENSIONS, dim)) return String(e[(BUILTIN_DIMENSIONS as Record<string, keyof HookEvent>)[dim] as keyof HookEvent] ?? '');
  return Object.hasOwn(e.extra, dim) ? String(e.extra[dim] ?? '') : '';
}

/**
 * Tables of the dimension rollups (one migration of each backend). The primary key serves one hook's reads and
 * the index (dim, value, bucket) a filter across hooks. There is no index on the bucket alone, one index fewer
 * to update on every upsert: retention finds old rows through the primary key (dimPruneSql).
 */
export function dimRollupDdl(counterColumns: string, int: string, tableOptions: string): string {
  return DIM_GRANULARITIES.map((g) => {
    const t = DIM_ROLLUP_TABLES[g];
    return `CREATE TABLE ${t} (
    hook_id TEXT NOT NULL,
    dim TEXT NOT NULL,
    bucket ${int} NOT NULL,
    value TEXT NOT NULL,
    service_name TEXT NOT NULL,
    service_version TEXT NOT NULL,
    ${counterColumns},
    PRIMARY KEY (${DIM_ROLLUP_KEY.join(', ')})
  )${tableOptions};
  CREATE INDEX ${t}_value ON ${t} (dim, value, bucket);`;
  }).join('\n  ');
}

/** One dimension rollup row's worth of a commit. */
export interface DimRollupGroup {
  hookId: string;
  dim: string;
  bucket: number;
  value: string;
  serviceName: string;
  serviceVersion: string;
  row: CounterRow;
}

const SIZE: Record<DimGranularity, number> = { hour: HOUR, day: DAY };

/**
 * What a commit adds to the dimension rollups: the events' deltas folded in memory into one group per key, so a
 * batch of thousands of events writes one upsert per (hook, dimension, bucket, value, client), in key order
 * (every backend takes row locks in the same order, as for the base rollups). Each event is folded once, into
 * the group of its hook, hour, client and every rolled value together; those few groups are then merged into the
 * per-dimension rows of each granularity (folding each event once per dimension and granularity cost three
 * times the ingest CPU of the base rollups).
 */
export function groupForDimRollups(events: readonly HookEvent[], dims: readonly string[]): Record<DimGranularity, DimRollupGroup[]> {
  const combos = new Map<string, { e: HookEvent; hour: number; values: string[]; row: CounterRow }>();
  for (const e of events) {
    const hour = Math.floor(e.timeMs / HOUR) * HOUR;
    const values = dims.map((d) => dimValue(e, d));
    const key = JSON.stringify([e.hookId, hour, e.serviceName, e.serviceVersion, values]);
    let combo = combos.get(key);
    if (!combo) combos.set(key, (combo = { e, hour, values, row: emptyRow() }));
    addEvent(combo.row, e);
  }
  const out = {} as Record<DimGranularity, DimRollupGroup[]>;
  for (const g of DIM_GRANULARITIES) {
    const groups = new Map<string, DimRollupGroup>();
    for (const { e, hour, values, row } of combos.values()) {
      const bucket = Math.floor(hour / SIZE[g]) * SIZE[g];
      dims.forEach((dim, i) => {
        const value = values[i] as string;
        const key = JSON.stringify([e.hookId, dim, bucket, value, e.serviceName, e.serviceVersion]);
        let group = groups.get(key);
        if (!group) groups.set(key, (group = { hookId: e.hookId, dim, bucket, value, serviceName: e.serviceName, serviceVersion: e.serviceVersion, row: emptyRow() }));
        mergeRow(group.row, row);
      });
    }
    const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
    out[g] = [...groups.values()].sort((a, b) => cmp(a.hookId, b.hookId) || cmp(a.dim, b.dim) || a.bucket - b.bucket || cmp(a.value, b.value) || cmp(a.serviceName, b.serviceName) || cmp(a.serviceVersion, b.serviceVersion));
  }
  return out;
}

/** What a query groups by: hook, client (name and version), or the values of a dimension. */
export type Grouping = 'hook' | 'client' | { dimension: string };

/**
 * Where a filtered or grouped read comes from:
 * - rollups: the base rollups (no filter, or filters on service.name / service.version only), `keyFilters` applied
 *   as WHERE on their key columns;
 * - dims: one rolled dimension (filtered on, grouped by, or both): whole hours and days from the dimension
 *   rollups, the rest of the range from raw events;
 * - raw: what no rollup of a value serves: whole hours and days from the rollup per attribute set
 *   (attr-rollups.ts), the rest of the range from raw events.
 */
export type ReadPlan =
  | { source: 'rollups'; keyFilters: [string, string][] }
  | { source: 'dims'; dim: string; value: string | undefined; keyFilters: [string, string][] }
  | { source: 'raw' };

export function planRead(filters: Record<string, string>, grouping: Grouping, rolled: readonly string[]): ReadPlan {
  const keyFilters: [string, string][] = [];
  let dim: string | undefined;
  let value: string | undefined;
  const need = (d: string): boolean => {
    if (dim !== undefined && dim !== d) return false;
    dim = d;
    return rolled.includes(d);
  };
  for (const [d, v] of Object.entries(filters)) {
    const column = ROLLUP_KEY_DIMENSIONS[d];
    if (column !== undefined && Object.hasOwn(ROLLUP_KEY_DIMENSIONS, d)) {
      keyFilters.push([column, v]);
      continue;
    }
    // '' is also the value a missing attribute is rolled up under; only the raw events tell the two apart.
    if (!need(d) || v === '') return { source: 'raw' };
    value = v;
  }
  if (typeof grouping === 'object' && !Object.hasOwn(ROLLUP_KEY_DIMENSIONS, grouping.dimension) && !need(grouping.dimension)) return { source: 'raw' };
  return dim === undefined ? { source: 'rollups', keyFilters } : { source: 'dims', dim, value, keyFilters };
}

/** Columns of a rollup table (base or dimension) a grouping reads. */
export function rollupGroupColumns(grouping: Grouping): string[] {
  if (grouping === 'hook') return ['hook_id'];
  if (grouping === 'client') return ['service_name', 'service_version'];
  return [ROLLUP_KEY_DIMENSIONS[grouping.dimension] ?? 'value'];
}

/** Expressions over the raw events a grouping reads (through the store's dimension expressions). */
export function eventGroupExprs(grouping: Grouping, dimExpr: (d: string) => string): string[] {
  if (grouping === 'hook') return ['hook_id'];
  if (grouping === 'client') return [dimExpr('service.name'), dimExpr('service.version')];
  return [`COALESCE(${dimExpr(grouping.dimension)}, '')`];
}

/** The granularity of the dimension rollups that serves a segment, or undefined (minutes: raw events). */
export function dimGranularity(g: Granularity): DimGranularity | undefined {
  return g === 'minute' ? undefined : g;
}

/** The store_meta row: the dimensions (JSON list) whose rollups cover every raw event still stored. */
export const ROLLED_DIMENSIONS_META = 'rolled_dimensions';

/**
 * Keeping the dimension rollups in line with the configured set (each store runs this when it opens, after its
 * migrations, so it reads the events table as the current schema stores it): rows of a dimension no longer
 * rolled up are deleted (`dimRemoveSql`); a dimension rolled up for the first time, or again after a time when
 * nothing was written for it, is rebuilt from the raw events still stored (`dimRebuildSql`: hours from events,
 * days from hours). So a dimension added to `dimensions` later answers like one configured from the start, as a
 * fold of the raw events in retention. The set last synced is kept in store_meta (ROLLED_DIMENSIONS_META).
 * Parameter 1 (rendered by `p`) is the dimension's name.
 */
export function dimRemoveSql(p: (n: number) => string): string[] {
  return DIM_GRANULARITIES.map((g) => `DELETE FROM ${DIM_ROLLUP_TABLES[g]} WHERE dim = ${p(1)}`);
}

/**
 * See dimRemoveSql. Reads the events only through the store's dimension expressions, `aggregates.events`
 * (eventAggregates) and `eventHook` (the hook id of an event row, and what to group by: sql.ts EVENT_HOOK_ID),
 * the places that know how events are stored.
 */
export function dimRebuildSql(
  p: (n: number) => string,
  dimExpr: (d: string) => string,
  aggregates: { events: string; rollups: string },
  counterColumns: readonly string[],
  dim: string,
  eventHook: { id: string; group: string },
): string[] {
  const v = `COALESCE(${dimExpr(dim)}, '')`;
  const sn = dimExpr('service.name');
  const sv = dimExpr('service.version');
  const cols = [...DIM_ROLLUP_KEY, ...counterColumns].join(', ');
  // A SUM over events that all lack a count is NULL; the rollups' count columns are 0 then (counterColumnsDdl).
  const counts: readonly string[] = SUM_COLUMNS.filter((c) => !c.startsWith('sum_'));
  const outer = counterColumns.map((c) => (counts.includes(c) ? `COALESCE(${c}, 0)` : c)).join(', ');
  return [
    `INSERT INTO ${DIM_ROLLUP_TABLES.hour} (${cols})
     SELECT hook_id, CAST(${p(1)} AS TEXT), b, v, sn, sv, ${outer} FROM (
       SELECT ${eventHook.id} AS hook_id, (time_ms / ${HOUR}) * ${HOUR} AS b, ${v} AS v, ${sn} AS sn, ${sv} AS sv, ${aggregates.events}
       FROM events GROUP BY ${eventHook.group}, (time_ms / ${HOUR}) * ${HOUR}, ${v}, ${sn}, ${sv}) s`,
    `INSERT INTO ${DIM_ROLLUP_TABLES.day} (${cols})
     SELECT hook_id, dim, (bucket / ${DAY}) * ${DAY}, value, service_name, service_version, ${aggregates.rollups}
     FROM ${DIM_ROLLUP_TABLES.hour} WHERE dim = ${p(1)} GROUP BY hook_id, dim, (bucket / ${DAY}) * ${DAY}, value, service_name, service_version`,
  ];
}

/** The dimensions to remove and to rebuild, going from the set last synced (`had`, null: never) to `want`. */
export function dimChanges(had: readonly string[] | null, want: readonly string[]): { remove: string[]; rebuild: string[] } {
  const before = had ?? [];
  return { remove: before.filter((d) => !want.includes(d)), rebuild: want.filter((d) => !before.includes(d)) };
}

/**
 * WHERE conditions (each starting with AND) a plan puts on a rollup table, with its parameters rendered by
 * `param` (which records the value and returns its placeholder). `dims` when reading the dimension rollups.
 */
export function rollupWhere(plan: ReadPlan, dims: boolean, param: (v: string) => string): string {
  if (plan.source === 'raw') throw new Error('a raw read has no rollup filter');
  const parts: string[] = [];
  if (dims && plan.source === 'dims') {
    parts.push(`AND dim = ${param(plan.dim)}`);
    if (plan.value !== undefined) parts.push(`AND value = ${param(plan.value)}`);
  }
  for (const [column, v] of plan.keyFilters) parts.push(`AND ${column} = ${param(v)}`);
  return parts.join(' ');
}

/** Hooks per retention statement of the dimension rollups. */
export const DIM_PRUNE_HOOKS = 100;

/**
 * Retention of a dimension rollup table through its primary key: rows of a chunk of hooks (`hooks`, the SQL
 * that matches hook_id against parameter 1) and one dimension (parameter 2) before (`<`) or from (`>=`) a
 * bucket (parameter 3). Bounded by the chunk, so each statement stays short.
 */
export function dimPruneSql(table: string, hooks: string, op: '<' | '>=', p: (n: number) => string): string {
  return `DELETE FROM ${table} WHERE ${hooks} AND dim = ${p(2)} AND bucket ${op} ${p(3)}`;
}

/** How a store reads what newestFilteredEvent asks. */
export interface NewestEventReads {
  /** The newest time any hook was seen (hooks.last_seen), null when there is none. */
  newestSeen(): Promise<number | null>;
  /** The newest matching execution in [fromMs, toMs) (either bound open when undefined), newest first. */
  newestIn(fromMs?: number, toMs?: number): Promise<number | null>;
  /**
   * The newest hour holding a matching execution, from the hourly dimension rollups or the rollup per attribute
   * set; null when none does, undefined when the filter is on the base rollups' keys only.
   */
  newestHour(): Promise<number | null | undefined>;
}

/**
 * The newest execution matching a filter planned `plan` (the overview's "last event"), reading one hour of
 * events at most wherever the rollups can name the hour. For a filter only raw events and the rollup per
 * attribute set answer, the newest hour of events is read first: a value many sessions share (a terminal, an
 * organization) almost always has an execution there, found without collecting its sets.
 */
export async function newestFilteredEvent(plan: ReadPlan, reads: NewestEventReads): Promise<number | null> {
  if (plan.source === 'raw') {
    const newest = await reads.newestSeen();
    if (newest === null) return null;
    const found = await reads.newestIn(Math.floor(newest / HOUR) * HOUR);
    if (found !== null) return found;
  }
  const hour = await reads.newestHour();
  if (hour === null) return null;
  return hour === undefined ? reads.newestIn() : reads.newestIn(hour, hour + HOUR);
}
