/**
 * Rollups per dimension: what a filtered view or a breakdown reads instead of the raw events, so its cost follows
 * the hooks, hours and dimension values in range, not the number of events in the history.
 *
 * What is rolled up, from configuration:
 * - service.name and service.version are keys of the base rollups (rollup_1m/1h/1d): a filter on them, or a
 *   breakdown by them, reads those, exact to the minute.
 * - Every key in `dimensions` (team by default; of the built-ins, organization.id, terminal.type and
 *   hookwatch.source may be listed there too), in two families of hour and day tables:
 *   - rollup_dim_1h and rollup_dim_1d, keyed (dimension, value, bucket, hook): what a filtered overview, hook
 *     list, series or breakdown by the dimension reads. The key leads with the value, so one team's days are
 *     one contiguous run of rows; the client is not in it, so a (hook, hour, team) is one row however many
 *     client versions are live (with the client in the key a team's 30 days read 2.75 times as many rows at
 *     10 M events as at 1 M; without it, the rows stop growing once every hook runs every hour in every team).
 *   - rollup_dim_client_1h and rollup_dim_client_1d, keyed (dimension, bucket, value, client name, client
 *     version), across hooks: the client-version list under a dimension filter, and with it a service.name or
 *     service.version filter. A few versions are live at a time, so they are small.
 *   A dimension filter combined with a service.name / service.version filter or breakdown on one hook is
 *   planned 'raw' (below).
 * - user.*, session.id: not rolled up per value (one row per user or session per hour would cost about a row
 *   per event). Their whole hours and days, and those of every other read planned 'raw' below, come from the
 *   rollup per (hook, hour, attribute set) (attr-rollups.ts, pruned with the events); only the partial hours at a
 *   range's edges are read from the raw events of one hook through the (hook, time_ms) index.
 *
 * There are no per-minute dimension rollups (at org scale nearly one row per event). A range's partial hours at
 * its edges (and the hour being written) are read from the raw events: at most about two hours of events,
 * whatever the length of the history. A filter naming two rolled dimensions (service.name / service.version
 * count as one) or a raw-only dimension is planned 'raw': whole hours from the rollup per attribute set, the edges
 * from the raw events. A filter on the empty value matches the events without the attribute and those with it
 * empty, as the rollups fold them together under '' (and a breakdown names them).
 */
import { BUILTIN_DIMENSIONS, type HookEvent } from '../hooks/model.ts';
import { COUNT_SUM_COLUMNS, addEvent, emptyRow, mergeRow, type CounterRow } from './counters.ts';
import { DAY, HOUR, floorSql, type Granularity } from './segments.ts';

export const DIM_ROLLUP_TABLES = { hour: 'rollup_dim_1h', day: 'rollup_dim_1d' } as const;
/** The client versions per dimension value, across hooks (see the header). */
export const DIM_CLIENT_TABLES = { hour: 'rollup_dim_client_1h', day: 'rollup_dim_client_1d' } as const;
export type DimGranularity = keyof typeof DIM_ROLLUP_TABLES;
export const DIM_GRANULARITIES: readonly DimGranularity[] = ['hour', 'day'];
/** Key columns of a dimension rollup row, in primary-key order. */
export const DIM_ROLLUP_KEY = ['dim', 'value', 'bucket', 'hook_id'] as const;
/** Key columns of a client-per-dimension rollup row, in primary-key order. */
export const DIM_CLIENT_KEY = ['dim', 'bucket', 'value', 'service_name', 'service_version'] as const;

/** A family of dimension rollup tables: one table per granularity, one key. */
export interface DimFamily {
  tables: Readonly<Record<DimGranularity, string>>;
  key: readonly string[];
}
export const DIM_HOOK_FAMILY: DimFamily = { tables: DIM_ROLLUP_TABLES, key: DIM_ROLLUP_KEY };
export const DIM_CLIENT_FAMILY: DimFamily = { tables: DIM_CLIENT_TABLES, key: DIM_CLIENT_KEY };
/** The families by name, as a commit's rows name them (DimRollupRows). */
export const DIM_FAMILY = { hooks: DIM_HOOK_FAMILY, clients: DIM_CLIENT_FAMILY } as const;
export type DimFamilyName = keyof typeof DIM_FAMILY;
export const DIM_FAMILY_NAMES = Object.keys(DIM_FAMILY) as DimFamilyName[];
export const DIM_FAMILIES: readonly DimFamily[] = Object.values(DIM_FAMILY);
/** Every dimension rollup table. */
export const DIM_TABLE_NAMES: readonly string[] = DIM_FAMILIES.flatMap((f) => DIM_GRANULARITIES.map((g) => f.tables[g]));

/** Built-in dimensions with few values per hook and hour, rolled up whatever the configuration. */
export const ROLLED_BUILTINS = ['organization.id', 'terminal.type', 'hookwatch.source'] as const;

/** Dimensions that are key columns of the base rollups, and those columns. */
export const ROLLUP_KEY_DIMENSIONS: Readonly<Record<string, 'service_name' | 'service_version'>> = { 'service.name': 'service_name', 'service.version': 'service_version' };

/**
 * The dimensions rolled up for a configuration's `dimensions`: each configured key, and of the built-ins only the
 * low-cardinality ones listed there too (ROLLED_BUILTINS). Every rolled dimension costs rows per hook, hour and
 * value (and per client, hour and value) at ingest, so only what a team filters by is rolled; the other built-ins
 * read the raw events.
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
 * Tables of the dimension rollups as first created (migration 6 of SQLite, 8 of PostgreSQL), keyed (hook,
 * dimension, bucket, value, client name, client version); dimRollupRekeyDdl replaces them.
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
    PRIMARY KEY (hook_id, dim, bucket, value, service_name, service_version)
  )${tableOptions};
  CREATE INDEX ${t}_value ON ${t} (dim, value, bucket);`;
  }).join('\n  ');
}

/**
 * The migration to today's dimension rollups (see the header), in place: each old table folded into a table
 * keyed (dimension, value, bucket, hook) and into the client table of its granularity, then dropped. The
 * primary key serves a filter across hooks; the index (hook, dimension, bucket) one hook's reads and retention
 * (dimPruneSql). `counterColumns` is the backend's counter column DDL as its rollups store them then,
 * `aggregates` the SELECT list that folds rollup rows (sql.ts rollupAggregates), `cols` the counter columns both name
 * (those of the migration, never those of today: a later migration adds its own, so there is no default).
 */
export function dimRollupRekeyDdl(counterColumns: string, aggregates: string, int: string, tableOptions: string, constraintRenames: boolean, cols: readonly string[]): string {
  const keyDdl: Record<string, string> = { dim: 'dim TEXT NOT NULL', value: 'value TEXT NOT NULL', bucket: `bucket ${int} NOT NULL`, hook_id: 'hook_id TEXT NOT NULL', service_name: 'service_name TEXT NOT NULL', service_version: 'service_version TEXT NOT NULL' };
  return DIM_GRANULARITIES.map((g) => {
    const old = DIM_ROLLUP_TABLES[g];
    const next = `${old}_next`;
    const table = (name: string, key: readonly string[]): string => `CREATE TABLE ${name} (
    ${key.map((k) => keyDdl[k]).join(',\n    ')},
    ${counterColumns},
    PRIMARY KEY (${key.join(', ')})
  )${tableOptions};
  INSERT INTO ${name} (${[...key, ...cols].join(', ')}) SELECT ${key.join(', ')}, ${aggregates} FROM ${old} GROUP BY ${key.join(', ')};`;
    return `${table(next, DIM_ROLLUP_KEY)}
  ${table(DIM_CLIENT_TABLES[g], DIM_CLIENT_KEY)}
  DROP TABLE ${old};
  ALTER TABLE ${next} RENAME TO ${old};
  ${constraintRenames ? `ALTER TABLE ${old} RENAME CONSTRAINT ${next}_pkey TO ${old}_pkey;` : ''}
  CREATE INDEX ${old}_hook ON ${old} (hook_id, dim, bucket);`;
  }).join('\n  ');
}

/** One dimension rollup row's worth of a commit: its key (in its family's key order) and its counters. */
export interface DimRollupGroup {
  key: (string | number)[];
  row: CounterRow;
}

/** What a commit adds to each family's table of each granularity. */
export type DimRollupRows = Record<DimFamilyName, Record<DimGranularity, DimRollupGroup[]>>;

const SIZE: Record<DimGranularity, number> = { hour: HOUR, day: DAY };

function compareKeys(a: readonly (string | number)[], b: readonly (string | number)[]): number {
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as string | number;
    const y = b[i] as string | number;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/**
 * What a commit adds to the dimension rollups: the events' deltas folded in memory into one group per key, so a
 * batch of thousands of events writes one upsert per row of each table, in key order (every backend takes row
 * locks in the same order, as for the base rollups). Each event is folded once, into the group of its hook,
 * hour, client and every rolled value together; those few groups are then merged into the rows of each family
 * and granularity (folding each event once per dimension and granularity cost three times the ingest CPU of the
 * base rollups).
 */
export function groupForDimRollups(events: readonly HookEvent[], dims: readonly string[]): DimRollupRows {
  // Combos in the order their first event came, as one Map keyed by the whole combination kept them: rows merge
  // in that order, so a fractional duration sums to the same double whatever the lookup below.
  const combos: DimCombo[] = [];
  const contexts = new Map<string, DimContext>();
  const valueOf = dims.map(dimReader);
  let ctx: DimContext | undefined;
  for (const e of events) {
    const hour = Math.floor(e.timeMs / HOUR) * HOUR;
    // A batch comes from one client and (nearly always) one value of each dimension within an hour: the
    // context of the previous event is checked first, so the key is built only when the hour, client or a
    // value changes, and within a context a combo is found by its hook alone.
    if (ctx === undefined || ctx.hour !== hour || ctx.serviceName !== e.serviceName || ctx.serviceVersion !== e.serviceVersion || !sameValues(ctx.values, valueOf, e)) {
      const values = valueOf.map((f) => f(e));
      const key = JSON.stringify([hour, e.serviceName, e.serviceVersion, values]);
      ctx = contexts.get(key);
      if (!ctx) contexts.set(key, (ctx = { hour, serviceName: e.serviceName, serviceVersion: e.serviceVersion, values, byHook: new Map() }));
    }
    let combo = ctx.byHook.get(e.hookId);
    if (!combo) {
      combo = { e, hour, values: ctx.values, row: emptyRow() };
      ctx.byHook.set(e.hookId, combo);
      combos.push(combo);
    }
    addEvent(combo.row, e);
  }
  const fold = (keyOf: (e: HookEvent, dim: string, bucket: number, value: string) => (string | number)[]): Record<DimGranularity, DimRollupGroup[]> => {
    const out = {} as Record<DimGranularity, DimRollupGroup[]>;
    for (const g of DIM_GRANULARITIES) {
      const groups = new Map<string, DimRollupGroup>();
      for (const { e, hour, values, row } of combos) {
        const bucket = Math.floor(hour / SIZE[g]) * SIZE[g];
        dims.forEach((dim, i) => {
          const key = keyOf(e, dim, bucket, values[i] as string);
          const id = JSON.stringify(key);
          let group = groups.get(id);
          if (!group) groups.set(id, (group = { key, row: emptyRow() }));
          mergeRow(group.row, row);
        });
      }
      out[g] = [...groups.values()].sort((a, b) => compareKeys(a.key, b.key));
    }
    return out;
  };
  return {
    hooks: fold((e, dim, bucket, value) => [dim, value, bucket, e.hookId]),
    clients: fold((e, dim, bucket, value) => [dim, bucket, value, e.serviceName, e.serviceVersion]),
  };
}

/** Events of one hook, hour, client and value of every rolled dimension, folded together. */
interface DimCombo {
  e: HookEvent;
  hour: number;
  values: string[];
  row: CounterRow;
}

/** The combos of one hour, client and value of every rolled dimension, by hook. */
interface DimContext {
  hour: number;
  serviceName: string;
  serviceVersion: string;
  values: string[];
  byHook: Map<string, DimCombo>;
}

/** dimValue of one dimension, with the built-in-or-extra lookup decided once per commit instead of per event. */
function dimReader(dim: string): (e: HookEvent) => string {
  if (Object.hasOwn(BUILTIN_DIMENSIONS, dim)) {
    const field = (BUILTIN_DIMENSIONS as Record<string, keyof HookEvent>)[dim] as keyof HookEvent;
    return (e) => String(e[field] ?? '');
  }
  return (e) => (Object.hasOwn(e.extra, dim) ? String(e.extra[dim] ?? '') : '');
}

function sameValues(values: readonly string[], valueOf: readonly ((e: HookEvent) => string)[], e: HookEvent): boolean {
  for (let i = 0; i < values.length; i++) if ((valueOf[i] as (e: HookEvent) => string)(e) !== values[i]) return false;
  return true;
}

/**
 * What a query groups by: hook, client (name and version), or the values of a dimension, with `perHook` those of
 * each hook (a breakdown of many hooks at once).
 */
export type Grouping = 'hook' | 'client' | { dimension: string; perHook?: boolean };

/** True when the grouping is per hook and value of a dimension. */
export function groupsPerHook(grouping: Grouping): boolean {
  return typeof grouping === 'object' && grouping.perHook === true;
}

/**
 * Where a filtered or grouped read comes from:
 * - rollups: the base rollups (no filter, or filters on service.name / service.version only), `keyFilters` applied
 *   as WHERE on their key columns;
 * - dims: one rolled dimension (filtered on, grouped by, or both) and no client filter: whole hours and days
 *   from the dimension rollups (the client tables when grouped by client), the rest of the range from raw
 *   events;
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
    // '' is also the value a missing attribute is rolled up under: a filter on it matches both (sql.ts AttrCond).
    if (!need(d)) return { source: 'raw' };
    value = v;
  }
  const byClientKey = typeof grouping === 'object' && Object.hasOwn(ROLLUP_KEY_DIMENSIONS, grouping.dimension);
  if (typeof grouping === 'object' && !byClientKey && !need(grouping.dimension)) return { source: 'raw' };
  if (dim === undefined) return { source: 'rollups', keyFilters };
  // A dimension and a client at once is two dimensions at once: no table keeps (value, client, hook) together
  // (with the client in the per-hook key, client versions multiply the rows a dimension filter reads).
  if (byClientKey || keyFilters.length > 0) return { source: 'raw' };
  return { source: 'dims', dim, value, keyFilters };
}

/** Columns of a rollup table (base or dimension) a grouping reads: per hook, the hook's first. */
export function rollupGroupColumns(grouping: Grouping): string[] {
  if (grouping === 'hook') return ['hook_id'];
  if (grouping === 'client') return ['service_name', 'service_version'];
  const value = ROLLUP_KEY_DIMENSIONS[grouping.dimension] ?? 'value';
  return groupsPerHook(grouping) ? ['hook_id', value] : [value];
}

/**
 * Expressions over the attribute sets a grouping reads (through the store's dimension expressions), for the raw
 * events and the rollup per attribute set. Per hook, the hook is not among them: the query groups by it itself
 * (attrGroupedEventsQuery's and attrRollupQuery's `hookAs`).
 */
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
  return DIM_TABLE_NAMES.map((t) => `DELETE FROM ${t} WHERE dim = ${p(1)}`);
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
  const exprs: Record<string, string> = { dim: `CAST(${p(1)} AS TEXT)`, value: v, hook_id: eventHook.id, service_name: dimExpr('service.name'), service_version: dimExpr('service.version') };
  const groups: Record<string, string> = { ...exprs, hook_id: eventHook.group };
  // A SUM over events that all lack a count is NULL; the rollups' count columns are 0 then (counterColumnsDdl).
  const outer = counterColumns.map((c) => (COUNT_SUM_COLUMNS.includes(c) ? `COALESCE(${c}, 0)` : c)).join(', ');
  const b = floorSql('time_ms', HOUR);
  return DIM_FAMILIES.flatMap((f) => {
    const cols = [...f.key, ...counterColumns].join(', ');
    const inner = f.key.filter((k) => k !== 'bucket' && k !== 'dim');
    const day = f.key.map((k) => (k === 'bucket' ? floorSql('bucket', DAY) : k)).join(', ');
    return [
      `INSERT INTO ${f.tables.hour} (${cols})
     SELECT ${f.key.map((k) => (k === 'bucket' ? 'b' : k === 'dim' ? exprs.dim : `k_${k}`)).join(', ')}, ${outer} FROM (
       SELECT ${b} AS b, ${inner.map((k) => `${exprs[k]} AS k_${k}`).join(', ')}, ${aggregates.events}
       FROM events GROUP BY ${b}, ${inner.map((k) => groups[k]).join(', ')}) s`,
      `INSERT INTO ${f.tables.day} (${cols})
     SELECT ${day}, ${aggregates.rollups}
     FROM ${f.tables.hour} WHERE dim = ${p(1)} GROUP BY ${day}`,
    ];
  });
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
 * Retention of a dimension rollup table through its (hook, dimension, bucket) index: rows of a chunk of hooks
 * (`hooks`, the SQL that matches hook_id against parameter 1) and one dimension (parameter 2) before a bucket
 * (parameter 3). Bounded by the chunk, so each statement stays short.
 */
export function dimPruneSql(table: string, hooks: string, p: (n: number) => string): string {
  return `DELETE FROM ${table} WHERE ${hooks} AND dim = ${p(2)} AND bucket < ${p(3)}`;
}

/**
 * Retention of a client-per-dimension table through its primary key (dimension, bucket, ...): one dimension
 * (parameter 1) before a bucket (parameter 2). The table has a row per dimension value, client and hour
 * across hooks, so one statement per dimension stays short.
 */
export function dimClientPruneSql(table: string, p: (n: number) => string): string {
  return `DELETE FROM ${table} WHERE dim = ${p(1)} AND bucket < ${p(2)}`;
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
