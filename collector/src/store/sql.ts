/** SQL shared by the relational backends (SQLite, PostgreSQL): rollup upserts and event aggregation. */
import { createHash, hash } from 'node:crypto';
import type { DeliveryStatus } from '../../../shared/src/cliff.ts';
import { BUILTIN_DIMENSIONS, OVERFLOW_SUFFIX, isOverflowHook, type HookEvent, type HookEventKind } from '../hooks/model.ts';
import { COUNTER_COLUMNS, COUNT_SUM_COLUMNS, FIRST_COUNTER_COLUMNS, MAX_COLUMNS, SUM_COLUMNS, emptyRow, fromDbRow, mergeRow, toCounters, type CounterRow } from './counters.ts';
import { DIM_ROLLUP_TABLES, DIM_TABLE_NAMES, dimRebuildSql } from './dim-rollups.ts';
import { checkStep, floorSql, granularityForStep, type Granularity } from './segments.ts';
import { UnknownDimensionError, type Arrival, type ArrivalCounters, type FleetBucket, type FleetRestBucket, type HookInfo, type SeriesQuery } from './store.ts';
import type { EdgeRows } from './minute-sources.ts';

export const ROLLUP_TABLES = { minute: 'rollup_1m', hour: 'rollup_1h', day: 'rollup_1d' } as const;

/**
 * Column definitions of a rollup table body (after the key columns): sums and maxima of `intType`, or maxima of
 * `maxType`, and the count sums NOT NULL unless `countsNullable` (PostgreSQL's rollups since migration 12).
 */
export function counterColumnsDdl(intType: string, maxType = intType, countsNullable = false, columns: readonly string[] = COUNTER_COLUMNS): string {
  const counts = countsNullable ? ' DEFAULT 0' : ' NOT NULL DEFAULT 0';
  return [...sumsOf(columns).map((c) => `${c} ${intType}${COUNT_SUM_COLUMNS.includes(c) ? counts : ''}`), ...maxesOf(columns).map((c) => `${c} ${maxType}`)].join(',\n  ');
}

/**
 * The sum and max columns among `columns`: the counter columns of today's schema, or those an earlier migration
 * wrote (counters.ts FIRST_COUNTER_COLUMNS), in COUNTER_COLUMNS order.
 */
function sumsOf(columns: readonly string[]): readonly string[] {
  return columns === COUNTER_COLUMNS ? SUM_COLUMNS : SUM_COLUMNS.filter((c) => columns.includes(c));
}
function maxesOf(columns: readonly string[]): readonly string[] {
  return columns === COUNTER_COLUMNS ? MAX_COLUMNS : MAX_COLUMNS.filter((c) => columns.includes(c));
}

/** SET clause of an upsert of `columns`: sums add, maxima keep the larger; NULL (unknown) never overwrites a value. */
export function upsertSetClause(columns: readonly string[] = COUNTER_COLUMNS): string {
  const sums = sumsOf(columns).map((c) => `${c} = CASE WHEN excluded.${c} IS NULL THEN t.${c} ELSE COALESCE(t.${c}, 0) + excluded.${c} END`);
  const maxes = maxesOf(columns).map((c) => `${c} = CASE WHEN excluded.${c} IS NULL THEN t.${c} WHEN t.${c} IS NULL OR excluded.${c} > t.${c} THEN excluded.${c} ELSE t.${c} END`);
  return [...sums, ...maxes].join(',\n    ');
}

/** SELECT list that aggregates rollup rows into counter columns (`columns`: those the rows have). */
export function rollupAggregates(columns: readonly string[] = COUNTER_COLUMNS): string {
  return [...sumsOf(columns).map((c) => `SUM(${c}) AS ${c}`), ...maxesOf(columns).map((c) => `MAX(${c}) AS ${c}`)].join(', ');
}

const SIZE_COLS = ['stdout', 'additional_context', 'system_message', 'initial_user_message'] as const;

/** Stored code of each event kind (events.kind): a small integer instead of the word on every row. */
export const KIND_CODES = { complete: 1, start: 2 } as const satisfies Record<HookEventKind, number>;
/** Stored code of each delivery status (events.status). */
export const STATUS_CODES = { over: 1, near: 2, ok: 3, unknown: 4 } as const satisfies Record<DeliveryStatus, number>;

/**
 * SELECT list that aggregates raw events into the same counter columns as the rollups (`columns`: those of the
 * rollup filled, an earlier migration's fewer).
 */
export function eventAggregates(columns: readonly string[] = COUNTER_COLUMNS): string {
  const complete = (expr: string): string => `CASE WHEN kind = ${KIND_CODES.complete} THEN ${expr} END`;
  const n = `(CASE WHEN num_hooks IS NULL OR num_hooks < 1 THEN 1 ELSE num_hooks END)`;
  const parts = [
    `SUM(CASE WHEN kind = ${KIND_CODES.complete} THEN 1 ELSE 0 END) AS executions`,
    `SUM(CASE WHEN kind = ${KIND_CODES.start} THEN 1 ELSE 0 END) AS starts`,
    `SUM(${complete('num_hooks')}) AS num_hooks`,
    // Outcome counts are counted for completes only, as the rollups do (a client may send them on a start too).
    `SUM(${complete('num_success')}) AS success`,
    `SUM(${complete('num_blocking')}) AS blocking`,
    `SUM(${complete('num_non_blocking_error')}) AS non_blocking_error`,
    `SUM(${complete('num_cancelled')}) AS cancelled`,
    `SUM(${complete('outputs_persisted')}) AS outputs_persisted`,
    `SUM(CASE WHEN status = ${STATUS_CODES.over} THEN 1 ELSE 0 END) AS executions_with_persisted`,
    `SUM(CASE WHEN kind = ${KIND_CODES.complete} AND sizes_known = 0 THEN 1 ELSE 0 END) AS size_unknown`,
    `SUM(CASE WHEN status = ${STATUS_CODES.near} THEN 1 ELSE 0 END) AS near_executions`,
    `SUM(CASE WHEN kind = ${KIND_CODES.complete} AND sizes_known = 1 AND (num_hooks IS NULL OR num_hooks > 1) THEN 1 ELSE 0 END) AS sizes_may_sum`,
    ...SIZE_COLS.map((c) => `SUM(${c}_chars) AS sum_${c}`),
    `SUM(${complete('duration_ms')}) AS duration_sum`,
    ...SIZE_COLS.map((c) => `MAX(${c}_chars) AS max_${c}`),
    // Widened first: a size may be the largest a 4-byte column holds (PostgreSQL), and adding to it must not overflow.
    // None from an execution without num_hooks: its sums may be over any number of commands (cliff.ts singleStringBounds).
    ...SIZE_COLS.map((c) => `MAX(CASE WHEN num_hooks IS NOT NULL THEN (CAST(${c}_chars AS BIGINT) + ${n} - 1) / ${n} END) AS lmax_${c}`),
    `MAX(${complete('duration_ms')}) AS duration_max`,
  ];
  // Each part names its column last (AS name), in COUNTER_COLUMNS order.
  return (columns === COUNTER_COLUMNS ? parts : parts.filter((p) => columns.includes(p.slice(p.lastIndexOf(' AS ') + 4)))).join(',\n  ');
}

/**
 * Raw events folded per `by` (events columns, each under its alias: attrs as e_by, hook as e_hook) and per the
 * few columns eventAggregates' conditions read (kind, status, sizes_known, the hook count), with plain sums and
 * maxima: no condition per event. The partials of attrGroupedEventsQuery and hookGroupedEventsQuery, which
 * FOLDED_AGGREGATES turns into counter columns.
 */
function foldedEvents(by: Readonly<Record<string, string>>, where: string, table: string): string {
  const plainSums = ['num_hooks', 'num_success', 'num_blocking', 'num_non_blocking_error', 'num_cancelled', 'outputs_persisted', 'duration_ms', ...SIZE_COLS.map((c) => `${c}_chars`)];
  const plainMaxes = ['duration_ms', ...SIZE_COLS.map((c) => `${c}_chars`)];
  const n = `(CASE WHEN num_hooks IS NULL OR num_hooks < 1 THEN 1 ELSE num_hooks END)`;
  const noCount = '(CASE WHEN num_hooks IS NULL THEN 1 ELSE 0 END)';
  const inner = [
    ...Object.entries(by).map(([alias, column]) => `${column} AS ${alias}`), 'kind AS e_kind', 'status AS e_status', 'sizes_known AS e_sizes_known', `${n} AS e_n`,
    // The hook count not sent apart from one (both e_n 1): sizes summed over a count unknown may be sums.
    `${noCount} AS e_no_count`, 'COUNT(*) AS e_count',
    ...plainSums.map((c) => `SUM(${c}) AS e_sum_${c}`), ...plainMaxes.map((c) => `MAX(${c}) AS e_max_${c}`),
  ].join(', ');
  return `SELECT ${inner} FROM ${table} WHERE ${where} GROUP BY ${Object.values(by).join(', ')}, kind, status, sizes_known, e_n, e_no_count`;
}

/**
 * The counter columns of foldedEvents' partials, as eventAggregates gives them over the events. Exact: a sum of
 * partial sums is the sum, a maximum of partial maxima the maximum (NULL, unknown, only where every event's value
 * is), and the lower bound ceil(chars / hooks) only grows with chars for a given hook count, so the maximum of
 * the group's largest value divided once is the maximum of the divided values (a group without the count bounds
 * nothing, as singleStringBounds has it).
 */
const FOLDED_AGGREGATES = (() => {
  const complete = (expr: string): string => `CASE WHEN e_kind = ${KIND_CODES.complete} THEN ${expr} END`;
  const count = (cond: string): string => `SUM(CASE WHEN ${cond} THEN e_count ELSE 0 END)`;
  return [
    `${count(`e_kind = ${KIND_CODES.complete}`)} AS executions`,
    `${count(`e_kind = ${KIND_CODES.start}`)} AS starts`,
    `SUM(${complete('e_sum_num_hooks')}) AS num_hooks`,
    `SUM(${complete('e_sum_num_success')}) AS success`,
    `SUM(${complete('e_sum_num_blocking')}) AS blocking`,
    `SUM(${complete('e_sum_num_non_blocking_error')}) AS non_blocking_error`,
    `SUM(${complete('e_sum_num_cancelled')}) AS cancelled`,
    `SUM(${complete('e_sum_outputs_persisted')}) AS outputs_persisted`,
    `${count(`e_status = ${STATUS_CODES.over}`)} AS executions_with_persisted`,
    `${count(`e_kind = ${KIND_CODES.complete} AND e_sizes_known = 0`)} AS size_unknown`,
    `${count(`e_status = ${STATUS_CODES.near}`)} AS near_executions`,
    `${count(`e_kind = ${KIND_CODES.complete} AND e_sizes_known = 1 AND (e_no_count = 1 OR e_n > 1)`)} AS sizes_may_sum`,
    ...SIZE_COLS.map((c) => `SUM(e_sum_${c}_chars) AS sum_${c}`),
    `SUM(${complete('e_sum_duration_ms')}) AS duration_sum`,
    ...SIZE_COLS.map((c) => `MAX(e_max_${c}_chars) AS max_${c}`),
    ...SIZE_COLS.map((c) => `MAX(CASE WHEN e_no_count = 0 THEN (CAST(e_max_${c}_chars AS BIGINT) + e_n - 1) / e_n END) AS lmax_${c}`),
    `MAX(${complete('e_max_duration_ms')}) AS duration_max`,
  ].join(',\n  ');
})();

/**
 * Raw events grouped by values of their attribute sets (a user, a session, a client), as eventAggregates would
 * give them, at a fraction of the cost per event: folded per attribute set first (foldedEvents), no attribute
 * lookup per event; the outer query then looks each set up once in attr_sets and applies the conditions to the
 * partials. An event whose set is gone groups under a NULL lookup, like attrValueExpr's. `select` names the
 * group's values (expressions over attr_sets' columns), `group` what to group by; `where` the events' condition
 * (hook, time, filters: over the events' own columns), `table` how to read them. With `hookAs`, grouped per hook
 * as well, its id named `hookAs`.
 */
export function attrGroupedEventsQuery(select: string, group: string, where: string, table = 'events', hookAs?: string): string {
  // Per hook too (`hookAs` names its id): folded per hook and set, the id looked up once per group.
  const by: Record<string, string> = hookAs === undefined ? { e_by: 'attrs' } : { e_by: 'attrs', e_hook: 'hook' };
  return `SELECT ${hookAs === undefined ? '' : `${FOLDED_HOOK_ID} AS ${hookAs}, `}${select}, ${FOLDED_AGGREGATES}
  FROM (${foldedEvents(by, where, table)}) e
  LEFT JOIN attr_sets ON attr_sets.id = e.e_by
  GROUP BY ${hookAs === undefined ? '' : 'e.e_hook, '}${group}`;
}

/**
 * Raw events grouped by hook, as eventAggregates would give them, folded first as attrGroupedEventsQuery's are:
 * the conditions run once per partial instead of once per event (a team's 56 minutes at 10 M events a month,
 * 1,300 events on SQLite: 1.8 ms instead of 2.7). The hook's id is looked up once per hook, as `id`.
 */
export function hookGroupedEventsQuery(id: string, where: string, table = 'events'): string {
  return `SELECT ${FOLDED_HOOK_ID} AS ${id}, ${FOLDED_AGGREGATES}
  FROM (${foldedEvents({ e_hook: 'hook' }, where, table)}) e
  GROUP BY e.e_hook`;
}

/** The id of the hook of a fold's partial (foldedEvents by hook, as e_hook), looked up once per group. */
const FOLDED_HOOK_ID = '(SELECT h.hook_id FROM hooks h WHERE h.ref = e.e_hook)';

function snake(s: string): string {
  return s.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
}

/**
 * The SQL expression for a dimension (attribute name): a column for built-in ones, a JSON lookup for configured
 * extra ones. Throws UnknownDimensionError for anything else, so user input never reaches SQL text.
 */
export function dimensionExpr(dimension: string, extraDimensions: readonly string[], jsonExpr: (key: string) => string): string {
  // Own keys only: "constructor" must be an unknown dimension, not Object.prototype.constructor.
  const builtin = Object.hasOwn(BUILTIN_DIMENSIONS, dimension) ? (BUILTIN_DIMENSIONS as Record<string, string>)[dimension] : undefined;
  if (builtin) return snake(builtin);
  if (extraDimensions.includes(dimension)) return jsonExpr(dimension);
  throw new UnknownDimensionError(`unknown dimension ${JSON.stringify(dimension)}; known: ${[...Object.keys(BUILTIN_DIMENSIONS), ...extraDimensions].join(', ')}`);
}

/**
 * The attributes an event shares with the other events of its session (who, where, which client): stored once
 * per distinct tuple in attr_sets, and referenced from each event by one integer (events.attrs).
 */
export const ATTR_COLUMNS = [
  'service_name', 'service_version', 'session_id', 'user_id', 'user_email', 'user_account_uuid', 'organization_id',
  'terminal_type', 'source', 'extra',
] as const;

/** An event's attribute tuple in ATTR_COLUMNS order (extra as its JSON text). */
export function attrValues(e: HookEvent): string[] {
  return [e.serviceName, e.serviceVersion, e.sessionId, e.userId, e.userEmail, e.userAccountUuid, e.organizationId, e.terminalType, e.source, JSON.stringify(e.extra)];
}

/**
 * The identity of an attribute tuple (attr_sets.digest, unique): 16 bytes of SHA-256 over the values, each
 * prefixed with its length in bytes so no two tuples share a text. Indexing the digest instead of the ten
 * columns keeps the unique index small and within PostgreSQL's index-row limit whatever the values' length.
 */
export function attrDigest(values: readonly string[]): Buffer {
  const h = createHash('sha256');
  for (const v of values) h.update(`${Buffer.byteLength(v)}:${v}`);
  return h.digest().subarray(0, 16);
}

/**
 * The stored dedup key: 16 bytes instead of the 36-character text. A key that begins with the event time
 * (hooks/extract.ts: 9 base-36 digits, then the 27-character SHA-1) keeps that time as its first 6 bytes, so
 * keys still sort by time and a commit writes to the recent end of the unique index; the other 10 bytes are
 * SHA-256 of the whole text key (80 bits: two distinct events of the same millisecond collide with odds of 2^-80).
 * Any other key (the bare hash of an event without a time, a transcript finding's) is 16 bytes of SHA-256.
 * Migrations compute the same function over stored text keys (SQLite: a registered function; PostgreSQL: SQL).
 */
export function compactKey(dedupKey: string): Buffer {
  // It runs per stored event: a one-shot hash as text, copied straight into a pooled buffer (a Hash object, or
  // a digest returned as a Buffer, costs several times as much per call). As 'binary' (Latin-1) text the digest
  // is its bytes one character each: written back without the decoding base64 needs.
  const digest = hash('sha256', dedupKey, 'binary');
  const out = Buffer.allocUnsafe(16);
  const timeMs = keyTimeMs(dedupKey);
  if (timeMs === undefined) {
    out.write(digest, 0, 16, 'latin1');
    return out;
  }
  out.writeUIntBE(timeMs, 0, 6);
  out.write(digest, 6, 10, 'latin1');
  return out;
}
const TIME_PREFIXED = /^[0-9a-z]{9}[A-Za-z0-9_-]{27}$/;

/** The event time a dedup key begins with (hooks/extract.ts), or undefined for a key without one. */
export function keyTimeMs(dedupKey: string): number | undefined {
  return dedupKey.length === 36 && TIME_PREFIXED.test(dedupKey) ? parseInt(dedupKey.slice(0, 9), 36) : undefined;
}

/**
 * A hook's number in events.hook (and hooks.ref): its 16-hex-digit id read as a signed 64-bit integer, so an
 * event row holds 8 bytes instead of 17 and ingest needs no lookup to know it. Ids are always 16 hex digits
 * (hooks/extract.ts hookId); anything else has no number (null: matches no event).
 */
export function hookRef(id: string): bigint | null {
  // Every stored event asks for its hook's number, and a feed has few hooks: remembered instead of parsed each time.
  let ref = hookRefs.get(id);
  if (ref === undefined) {
    ref = /^[0-9a-f]{16}$/.test(id) ? BigInt.asIntN(64, BigInt(`0x${id}`)) : null;
    if (hookRefs.size >= 10_000) hookRefs.clear();
    hookRefs.set(id, ref);
  }
  return ref;
}
const hookRefs = new Map<string, bigint | null>();

/** The hook id (text) of the event row in scope, from its number: one primary-key probe per group or row. */
export const EVENT_HOOK_ID = hookIdOf('events');
/** The hook id of the rows of `table` (the events, or a subquery over them), by their hook number. */
export function hookIdOf(table: string): string {
  return `(SELECT h.hook_id FROM hooks h WHERE h.ref = ${table}.hook)`;
}
/** The number of the hook whose id is the parameter rendered `param`, for `hook = ...` on the events. */
export function hookRefOf(param: string): string {
  return `(SELECT h.ref FROM hooks h WHERE h.hook_id = ${param})`;
}

/** The value of an attribute expression (over attr_sets, from dimensionExpr) for the event row in scope. */
export function attrValueExpr(attrExpr: string): string {
  return `(SELECT ${attrExpr} FROM attr_sets WHERE attr_sets.id = events.attrs)`;
}

/**
 * dimRebuildSql over the events as both stores keep them: each dimension read through the event's attribute set
 * (`attrExpr`, the store's dimensionExpr over attr_sets' columns), the counters and hook id as written here.
 */
export function dimRebuildFromEventsSql(p: (n: number) => string, attrExpr: (d: string) => string, dim: string): string[] {
  return dimRebuildSql(p, (d) => attrValueExpr(attrExpr(d)), { events: eventAggregates(), rollups: rollupAggregates() }, COUNTER_COLUMNS, dim, { id: EVENT_HOOK_ID, group: 'hook' });
}

/** Prefix of the names of attr_sets' indexes on a dimension's value (attrSetIndexes). */
export const ATTR_SET_INDEX_PREFIX = 'attr_sets_dim_';

/**
 * Built-in dimensions whose filters find their sets through an index of attr_sets: the ones with many values
 * that no rollup of a value keeps (a user, a session, an organization). The few-valued ones (terminal.type,
 * hookwatch.source) match most sets, where reading them all is as fast; service.* are keys of the base rollups.
 */
export const INDEXED_BUILTIN_DIMENSIONS = ['user.id', 'user.email', 'user.account_uuid', 'session.id', 'organization.id'] as const;

/**
 * The indexes attr_sets should have, by name, each with its CREATE statement: one on the value of each
 * configured extra dimension and of INDEXED_BUILTIN_DIMENSIONS (`expr` gives its expression, as the filters write
 * it), so a filter's matching sets (attrFilter 'sets') are found through the index instead of by reading every
 * set of the history (one a session). A set is written once per session, so the indexes cost ingest next to
 * nothing. Each index also holds last_ms, so a filter over a recent stretch finds only the sets used in it
 * (attrFilter `liveFrom`). Named after a hash of the indexed columns: any dimension makes a valid name, and an
 * expression written differently gets a new index (an index on the old one would no longer serve the
 * filters). The stores drop the ones no longer wanted.
 */
export function attrSetIndexes(extraDims: readonly string[], expr: (dim: string) => string): Map<string, string> {
  const out = new Map<string, string>();
  for (const dim of [...INDEXED_BUILTIN_DIMENSIONS, ...extraDims]) {
    const e = expr(dim);
    // A configured dimension has many sets to a value (a team's sessions): for an old stretch, the sets begun
    // before its end are the few, found through (value, first_ms).
    for (const bound of extraDims.includes(dim) ? ['last_ms', 'first_ms'] : ['last_ms']) {
      const cols = `(${e}), ${bound}`;
      const name = `${ATTR_SET_INDEX_PREFIX}${hash('sha1', cols, 'hex').slice(0, 16)}`;
      out.set(name, `CREATE INDEX IF NOT EXISTS ${name} ON attr_sets (${cols})`);
    }
  }
  return out;
}

/**
 * The statements that bring attr_sets' indexes from `have` (the names with ATTR_SET_INDEX_PREFIX the catalog
 * lists) to attrSetIndexes: the unwanted dropped, the missing created.
 */
export function attrSetIndexChanges(have: readonly string[], extraDims: readonly string[], expr: (dim: string) => string): string[] {
  const wanted = attrSetIndexes(extraDims, expr);
  // New ones first: a store stopped between the statements still has an index for every filter.
  return [
    ...[...wanted].filter(([name]) => !have.includes(name)).map(([, ddl]) => ddl),
    ...have.filter((name) => !wanted.has(name)).map((name) => `DROP INDEX IF EXISTS ${quoteIdent(name)}`),
  ];
}

/** An identifier read from the catalog, quoted for SQL text. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * One condition of attrFilter: an attribute expression (over attr_sets), the placeholder of the value it must
 * equal, and whether that value is empty. The empty value matches a set without the attribute too (an extra
 * dimension's JSON lookup is NULL there; a built-in is stored as ''), as breakdowns and the dimension rollups
 * fold a missing attribute and an empty one under ''.
 */
export type AttrCond = readonly [expr: string, param: string, empty?: boolean];

/** An AttrCond as SQL. */
function attrCondSql([expr, param, empty]: AttrCond): string {
  return empty ? `(${expr} = ${param} OR ${expr} IS NULL)` : `${expr} = ${param}`;
}

/**
 * Filters on attribute expressions (over attr_sets: each AttrCond must hold), for rows naming their set in
 * `attrs`, in one of two forms:
 * - 'sets': the matching sets first, then their rows. All conditions go in one lookup, so it takes the most
 *   selective index of attr_sets (attrSetIndexes); without one it reads every set of the history (one a
 *   session). Right for a long stretch of rows. With `liveFrom` (the placeholder of the rows' earliest time)
 *   only sets used since then: a set's last_ms is at least the time of every row naming it, so no set a row
 *   from then on names is left out, and the index (value, last_ms) finds a recent stretch's few sets among
 *   the month's.
 * - 'row': each row's own set looked up by id. It costs what the rows read cost, whatever the history holds;
 *   right for a short stretch (a range's partial hours at its edges, an hour of events).
 * Both select the same rows. No conditions: an empty string.
 */
export function attrFilter(conds: readonly AttrCond[], form: 'sets' | 'row' = 'sets', liveFrom?: string, live: LiveTo = {}): string {
  if (conds.length === 0) return '';
  const where = conds.map(attrCondSql).join(' AND ');
  if (form === 'row') return `EXISTS (SELECT 1 FROM attr_sets WHERE attr_sets.id = attrs AND ${where})`;
  // A unary + keeps SQLite from using an index for that bound (it has no statistics to choose by).
  const from = liveFrom === undefined ? '' : ` AND ${live.lead === 'first' ? '+' : ''}last_ms >= ${liveFrom}`;
  const to = live.to === undefined ? '' : ` AND ${live.lead === 'last' ? '+' : ''}first_ms < ${live.to}`;
  return `attrs IN (SELECT id FROM attr_sets WHERE ${where}${from}${to})`;
}

/**
 * attr_sets.first_ms (attr-sets.ts), filled from the events stored: the earliest time of each set's events, 0
 * for a set with none left (no bound known). `ifNotExists` where the backend allows it (PostgreSQL), so the
 * column may be added again by a migration run again.
 */
export function attrFirstMsColumnDdl(int: string, ifNotExists = false): string {
  return `ALTER TABLE attr_sets ADD COLUMN ${ifNotExists ? 'IF NOT EXISTS ' : ''}first_ms ${int} NOT NULL DEFAULT 0`;
}

/** Each attribute set's first_ms as rows (id, value): the earliest time of its events. */
export const ATTR_FIRST_MS_SOURCE = 'SELECT attrs AS id, MIN(time_ms) AS value FROM events GROUP BY attrs';

/** attrFirstMsColumnDdl and its filling, in one transaction (SQLite's migration). */
export function attrFirstMsDdl(int: string): string {
  return `${attrFirstMsColumnDdl(int)};
  UPDATE attr_sets SET first_ms = f.value FROM (${ATTR_FIRST_MS_SOURCE}) AS f WHERE f.id = attr_sets.id;`;
}

/**
 * The other bound of attrFilter's 'sets' form: `to`, the placeholder of the end of the rows' stretch, keeps only
 * the sets whose first_ms is before it. `lead`: which bound should pick the sets through its index, where the
 * backend cannot tell (liveLead).
 */
export interface LiveTo {
  to?: string;
  lead?: 'first' | 'last';
}

/**
 * Which bound finds fewer sets for a stretch [fromMs, toMs): the sets used since fromMs are about those of the
 * time from then to now, the sets begun before toMs those of the history before it (the events' horizon on).
 */
export function liveLead(fromMs: number, toMs: number, nowMs: number, oldestMs: number): 'first' | 'last' {
  return toMs - Math.max(oldestMs, 0) < nowMs - fromMs ? 'first' : 'last';
}

export const EVENT_COLUMNS = [
  'key', 'kind', 'hook', 'time_ms', 'num_hooks', 'num_success', 'num_blocking', 'num_non_blocking_error',
  'num_cancelled', 'duration_ms', 'stdout_chars', 'additional_context_chars', 'system_message_chars',
  'initial_user_message_chars', 'outputs_persisted', 'sizes_known', 'status', 'attrs', 'received_ms',
] as const;

/**
 * Counts that are nearly always 0, stored as NULL when 0: every read sums them, and a sum reads NULL as 0
 * (counters.ts toCounters), while PostgreSQL keeps a NULL in the row's null bitmap instead of 8 bytes. (Sizes are
 * not among them: there NULL means unknown, never 0.)
 */
export const ZERO_AS_NULL: ReadonlySet<string> = new Set(['num_blocking', 'num_non_blocking_error', 'num_cancelled', 'outputs_persisted']);

/**
 * An event's values in EVENT_COLUMNS order, with `attrs` the id of its attribute tuple in attr_sets and `key` its
 * stored dedup key (compactKey's bytes unless the backend keeps another form). The receive time is kept only
 * where something reads it: on events classified over the cap (the late persisted-output query) and on events
 * stored under an overflow hook (the late folded-event query of the hook_limit alert).
 */
export function eventValues(e: HookEvent, attrs: number, key: unknown = compactKey(e.dedupKey)): unknown[] {
  return [
    key, KIND_CODES[e.kind], hookRef(e.hookId), e.timeMs, e.numHooks, e.numSuccess, e.numBlocking || null, e.numNonBlockingError || null,
    e.numCancelled || null, e.durationMs, e.stdoutChars, e.additionalContextChars, e.systemMessageChars,
    e.initialUserMessageChars, e.outputsPersisted || null, e.sizesKnown ? 1 : 0, STATUS_CODES[e.status], attrs,
    e.status === 'over' || isOverflowHook(e) ? (e.receivedMs ?? null) : null,
  ];
}

/** Column types a backend uses for the core schema. */
export interface SchemaTypes {
  /** 64-bit integer type. */
  int: string;
  /** Small integer (a 0/1 flag). */
  flag: string;
  /** The events table's surrogate key column definition. */
  id: string;
  /** Type of the extra-dimensions document. */
  json: string;
  /** Appended after each rollup table's column list (e.g. SQLite's WITHOUT ROWID). */
  rollupTableOptions: string;
}

/** The first migration of every relational backend: hooks, raw events, and the three rollup tables. */
export function coreSchemaDdl(t: SchemaTypes): string {
  return `CREATE TABLE hooks (
    hook_id TEXT PRIMARY KEY,
    hook_event TEXT NOT NULL,
    hook_name TEXT NOT NULL,
    first_seen ${t.int} NOT NULL,
    last_seen ${t.int} NOT NULL
  );
  CREATE TABLE events (
    id ${t.id},
    dedup_key TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    hook_id TEXT NOT NULL,
    time_ms ${t.int} NOT NULL,
    num_hooks ${t.int}, num_success ${t.int}, num_blocking ${t.int}, num_non_blocking_error ${t.int}, num_cancelled ${t.int},
    duration_ms ${t.int},
    stdout_chars ${t.int}, additional_context_chars ${t.int}, system_message_chars ${t.int}, initial_user_message_chars ${t.int},
    outputs_persisted ${t.int},
    sizes_known ${t.flag} NOT NULL,
    status TEXT NOT NULL,
    service_name TEXT NOT NULL, service_version TEXT NOT NULL, session_id TEXT NOT NULL, user_id TEXT NOT NULL,
    user_email TEXT NOT NULL, user_account_uuid TEXT NOT NULL, organization_id TEXT NOT NULL, terminal_type TEXT NOT NULL,
    source TEXT NOT NULL,
    extra ${t.json} NOT NULL
  );
  CREATE INDEX events_hook_time ON events (hook_id, time_ms);
  CREATE INDEX events_time ON events (time_ms);
  ${(['minute', 'hour', 'day'] as const).map((g) => `CREATE TABLE ${ROLLUP_TABLES[g]} (
    hook_id TEXT NOT NULL,
    bucket ${t.int} NOT NULL,
    service_name TEXT NOT NULL,
    service_version TEXT NOT NULL,
    ${counterColumnsDdl(t.int, t.int, false, FIRST_COUNTER_COLUMNS)},
    PRIMARY KEY (hook_id, bucket, service_name, service_version)
  )${t.rollupTableOptions};
  CREATE INDEX ${ROLLUP_TABLES[g]}_bucket ON ${ROLLUP_TABLES[g]} (bucket);`).join('\n')}`;
}

/** The store_meta row: events before this time (ms) may be stored under their bare-hash key. */
export const LEGACY_KEYS_BEFORE = 'legacy_keys_before';
/** How long after the upgrade replicas of the previous version may still be writing bare-hash keys. */
const LEGACY_KEY_GRACE_MS = 86_400_000;

/**
 * Migration of every relational backend: from here on keys begin with the event time (hooks/extract.ts). A
 * database that already holds events records until when an event may also be stored under its bare hash: the
 * newest stored event or now, whichever is later, plus a day for replicas of the previous version that keep
 * writing during a rolling upgrade. A new (empty) database has no such window and never looks.
 */
export function timeOrderedKeysDdl(t: { nowMs: string; greatest: string }): string {
  return `CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  INSERT INTO store_meta (key, value)
    SELECT ${sqlString(LEGACY_KEYS_BEFORE)}, CAST(${t.greatest}(MAX(time_ms), ${t.nowMs}) + ${LEGACY_KEY_GRACE_MS} AS TEXT) FROM events HAVING MAX(time_ms) IS NOT NULL;`;
}

/**
 * Migration of every relational backend: when each event arrived (alerts on a persisted output that arrives late
 * window by it; NULL for events stored before), and an index that finds the newest hook without a table scan.
 */
export function arrivalTimeDdl(int: string): string {
  return `ALTER TABLE events ADD COLUMN received_ms ${int};
  CREATE INDEX events_persisted_arrival ON events (received_ms) WHERE outputs_persisted > 0;
  CREATE INDEX hooks_last_seen ON hooks (last_seen);`;
}

/**
 * Migration of every relational backend: the arrival index holds every event classified over the cap, so an
 * output measured over it from a client that does not report persistence also alerts when it arrives late. The
 * events with a reported persisted output are all classified over: the index loses none of its rows.
 */
export function overArrivalDdl(): string {
  return `${eventIndexDdl(OVER_ARRIVAL_INDEX)}
  DROP INDEX events_persisted_arrival;`;
}

/** An index of the events table: its name and what follows `ON events` (method, columns, options, predicate). */
export interface EventIndex {
  name: string;
  def: string;
}

/** The statement that creates an index of the events table, in one go. */
export function eventIndexDdl(ix: EventIndex): string {
  return `CREATE INDEX ${ix.name} ON events ${ix.def};`;
}

/** The arrival index of the events classified over the cap (overArrivalDdl). */
export const OVER_ARRIVAL_INDEX: EventIndex = { name: 'events_over_arrival', def: `(received_ms) WHERE status = ${STATUS_CODES.over}` };

/** The arrival index of every event with a receive time (arrivalIndexDdl). */
export const ARRIVAL_INDEX: EventIndex = { name: 'events_arrival', def: '(received_ms) WHERE received_ms IS NOT NULL' };

/**
 * Migration of every relational backend: an arrival index of every event with a receive time, those over the cap
 * and, from this version on, those stored under an overflow hook, whose late arrivals the hook_limit alert counts
 * (eventValues). It is built beside events_over_arrival, which the persisted alert's late query keeps reading: that
 * query runs on every ingest with an output over the cap, and through this index it would also read every event
 * counted under an overflow hook, most of the window's arrivals when the store is at store.maxHooks.
 */
export function arrivalIndexDdl(): string {
  return eventIndexDdl(ARRIVAL_INDEX);
}

/**
 * Functions the migrations call: the compact-events digests (SQLite registers them from JS; PostgreSQL gets them in
 * SQL) and SQLite's redaction of stored commands (transcript-findings.ts redactStoredCommandsSql).
 */
export const MIGRATION_FUNCTIONS = { key: 'hookwatch_key', hookRef: 'hookwatch_hook_ref', attrDigest: 'hookwatch_attr_digest', redactCommand: 'hookwatch_redact_command' } as const;

const OLD_KIND = `CASE kind WHEN 'complete' THEN ${KIND_CODES.complete} ELSE ${KIND_CODES.start} END`;
const OLD_STATUS = `CASE status ${Object.entries(STATUS_CODES).map(([k, v]) => `WHEN ${sqlString(k)} THEN ${v}`).join(' ')} ELSE ${STATUS_CODES.unknown} END`;
/** The events table's count and size columns (4-byte integers on PostgreSQL: hooks/extract.ts MAX_COUNT). */
export const COUNT_COLUMNS = [
  'num_hooks', 'num_success', 'num_blocking', 'num_non_blocking_error', 'num_cancelled', 'duration_ms', 'stdout_chars',
  'additional_context_chars', 'system_message_chars', 'initial_user_message_chars', 'outputs_persisted',
] as const;

/**
 * The compact event layout (see docs/architecture.md, "Storage layout"): attribute tuples in attr_sets, hooks by
 * number, kind and status as codes, a 16-byte key; existing events are copied over in the same transaction.
 * `eventsTable` creates the new table under the name events_compact (each backend lays it out its own way),
 * `indexes` creates its indexes once it is named events. An event is found again under the same key, so a batch
 * retried after the upgrade is not stored twice.
 */
export function compactEventsDdl(t: {
  int: string; json: string; attrId: string; eventsTable: string; indexes: string; attrDigest: (cols: string) => string;
  key: (expr: string) => string; hookRef: (expr: string) => string; copyOrder: string;
}): string {
  const attrCols = ATTR_COLUMNS.join(', ');
  return `CREATE TABLE attr_sets (
    id ${t.attrId},
    digest ${t.int === 'BIGINT' ? 'BYTEA' : 'BLOB'} NOT NULL UNIQUE,
    last_ms ${t.int} NOT NULL,
    ${ATTR_COLUMNS.map((c) => `${c} ${c === 'extra' ? t.json : 'TEXT'} NOT NULL`).join(', ')}
  );
  INSERT INTO attr_sets (digest, last_ms, ${attrCols})
    SELECT ${t.attrDigest(attrCols)}, MAX(time_ms), ${attrCols} FROM events GROUP BY ${attrCols};
  ALTER TABLE hooks ADD COLUMN ref ${t.int};
  UPDATE hooks SET ref = ${t.hookRef('hook_id')};
  CREATE UNIQUE INDEX hooks_ref ON hooks (ref);
  ${t.eventsTable}
  INSERT INTO events_compact (${EVENT_COLUMNS.join(', ')})
    SELECT ${t.key('e.dedup_key')}, ${OLD_KIND}, ${t.hookRef('e.hook_id')}, e.time_ms, ${COUNT_COLUMNS.slice(0, 10).map((c) => (ZERO_AS_NULL.has(c) ? `NULLIF(e.${c}, 0)` : `e.${c}`)).join(', ')},
      NULLIF(e.outputs_persisted, 0), e.sizes_known, ${OLD_STATUS}, a.id, CASE WHEN e.outputs_persisted > 0 THEN e.received_ms END
    FROM events e JOIN attr_sets a ON a.digest = ${t.attrDigest(ATTR_COLUMNS.map((c) => `e.${c}`).join(', '))}
    ORDER BY ${t.copyOrder};
  DROP TABLE events;
  ALTER TABLE events_compact RENAME TO events;
  ${t.indexes}`;
}

/** The compact events table's value columns (after the key and layout-specific columns), in a backend's types. */
export function compactEventColumnsDdl(int: string, small: string): string {
  // 64-bit columns first, then the narrower ones: PostgreSQL pads each column to its alignment.
  return `time_ms ${int} NOT NULL, hook ${int} NOT NULL, received_ms ${int},
    ${COUNT_COLUMNS.map((c) => `${c} ${int}`).join(', ')},
    attrs ${int === 'BIGINT' ? 'INTEGER' : int} NOT NULL, kind ${small} NOT NULL, status ${small} NOT NULL, sizes_known ${small} NOT NULL`;
}

/**
 * Executions over the cap (persisted outputs, reported or measured) per hook that arrived in [$1, $2) with an
 * event time before $3 (older than the rule's window by event time), read as lateArrivalsQuery reads its events:
 * those more than LATE_ARRIVAL_MS late through their own index, the others among the arrivals over the cap of
 * LATE_ARRIVAL_MS after $3 only (the partial index of the events over the cap, events_over_arrival). The cost is
 * the late events and a few minutes of arrivals over the cap, not every output over the cap the window received
 * (the query runs on every ingest with one), nor the events counted under an overflow hook. With `attrExpr` (a
 * dimension over attr_sets' columns, from dimensionExpr), per hook and value of it as column `v`: each late
 * event's set is looked up by its id, one probe per late event, and an event without the value (or whose set is
 * gone) groups under '', as breakdown's. `tables`: how each part names the table (SQLite, without statistics to
 * tell the partial arrival indexes apart, is told which).
 */
export function latePersistedQuery(p: (n: number) => string, attrExpr?: string, tables: LateArrivalTables = { late: 'events', arrivals: 'events' }): string {
  const late = lateArrivals(p, tables, `status = ${STATUS_CODES.over}`);
  const hook = hookIdOf('arrivals');
  if (attrExpr === undefined) {
    return `SELECT ${hook} AS g, MIN(time_ms) AS first_event, MAX(time_ms) AS last_event, ${eventAggregates()} FROM ${late} GROUP BY hook`;
  }
  const value = `COALESCE(${attrExpr}, '')`;
  return `SELECT ${hook} AS g, ${value} AS v, MIN(time_ms) AS first_event, MAX(time_ms) AS last_event, ${eventAggregates()}
    FROM ${late} LEFT JOIN attr_sets ON attr_sets.id = arrivals.attrs
    GROUP BY hook, ${value}`;
}

/**
 * How late an event arrives (receive time past event time) to be held by the late-arrival index
 * (lateArrivalIndexDdl): a Collector queue draining after an outage, a client clock behind. Export delays are
 * seconds, so the index holds few of the events an overflow hook takes, whatever their number.
 */
export const LATE_ARRIVAL_MS = 300_000;

/**
 * Migration of every relational backend: an index of the events that arrived more than LATE_ARRIVAL_MS after
 * their event time, so the hook_limit alert's late arrivals (lateArrivalsQuery) read those and the last
 * LATE_ARRIVAL_MS of arrivals, not every event an overflow hook took in the rule's window.
 */
export function lateArrivalIndexDdl(): string {
  return eventIndexDdl(LATE_ARRIVAL_INDEX);
}

/**
 * Migration of every relational backend: the count of executions with size data whose sizes may be sums (counters.ts
 * sizes_may_sum) in every counters row, `ddl` its type and default (`ifNotExists`: where the backend can say so,
 * the migration may run on tables that have it). A row written before reads 0: what it says of its sizes then rests
 * on the commands run against the executions alone (shared/src/cliff.ts sizesMaySum).
 */
export function sizesMaySumDdl(ddl: string, ifNotExists = false): string {
  return COUNTER_TABLES.map((t) => `ALTER TABLE ${t} ADD COLUMN ${ifNotExists ? 'IF NOT EXISTS ' : ''}sizes_may_sum ${ddl};`).join('\n  ');
}

/** The index of the events that arrived late (lateArrivalIndexDdl). */
export const LATE_ARRIVAL_INDEX: EventIndex = { name: 'events_late_arrival', def: `(received_ms) WHERE received_ms > time_ms + ${LATE_ARRIVAL_MS}` };

/** How the two parts of a late-arrival read name the events table (SQLite is told which index each reads). */
export interface LateArrivalTables {
  late: string;
  arrivals: string;
}

/**
 * The events (where `where`, when given) that arrived in [$1, $2) with an event time before $3, as a subquery
 * named `arrivals`, in two parts that together hold each such event once: those more than LATE_ARRIVAL_MS late,
 * through their own index (lateArrivalIndexDdl), and the others, which arrived before $3 + LATE_ARRIVAL_MS (an
 * event time before $3, at most LATE_ARRIVAL_MS late), through an arrival index. The cost is the late events and
 * LATE_ARRIVAL_MS of arrivals, not the window's.
 */
function lateArrivals(p: (n: number) => string, tables: LateArrivalTables, where?: string): string {
  const received = (before: string): string => `received_ms >= ${p(1)} AND received_ms < ${before} AND time_ms < ${p(3)}${where ? ` AND ${where}` : ''}`;
  const lateTerm = `received_ms > time_ms + ${LATE_ARRIVAL_MS}`;
  // The earlier of $2 and $3 + LATE_ARRIVAL_MS as one bound: given both, SQLite ranges the index over one only
  // (the first), and every arrival of the window would be read.
  const onTimeBefore = `CAST(${p(3)} AS BIGINT) + ${LATE_ARRIVAL_MS}`;
  return `(
      SELECT * FROM ${tables.late} WHERE ${lateTerm} AND ${received(p(2))}
      UNION ALL
      SELECT * FROM ${tables.arrivals} WHERE NOT (${lateTerm}) AND ${received(`CASE WHEN ${p(2)} < ${onTimeBefore} THEN ${p(2)} ELSE ${onTimeBefore} END`)}
    ) AS arrivals`;
}

/**
 * Every event with a receive time (over the cap, or stored under an overflow hook: eventValues) per hook that
 * arrived in [$1, $2) with an event time before $3 (lateArrivals, through the arrival index, arrivalIndexDdl): at
 * store.maxHooks most events of the window are folded, and the query runs on each ingest that folds.
 */
export function lateArrivalsQuery(p: (n: number) => string, tables: LateArrivalTables = { late: 'events', arrivals: 'events' }): string {
  return `SELECT ${hookIdOf('arrivals')} AS g, MIN(time_ms) AS first_event, MAX(time_ms) AS last_event, ${eventAggregates()} FROM ${lateArrivals(p, tables)} GROUP BY hook`;
}

/**
 * Rows of latePersistedQuery (or lateArrivalsQuery) as Arrivals by hook id, with the hooks' info (`byId`); rows
 * of unknown hooks are left out. Rows split by a dimension's value (column `v`) are summed per hook, each kept in
 * the hook's byValue.
 */
export function toArrivals(rows: readonly Record<string, unknown>[], byId: ReadonlyMap<string, HookInfo>): Map<string, Arrival> {
  const totals = new Map<string, { row: CounterRow; info: HookInfo; first: number; last: number; byValue?: Map<string, ArrivalCounters> }>();
  for (const r of rows) {
    const info = byId.get(String(r['g']));
    if (!info) continue;
    const row = fromDbRow(r);
    const first = Number(r['first_event']);
    const last = Number(r['last_event']);
    let t = totals.get(info.id);
    if (!t) {
      t = { row: emptyRow(), info, first, last };
      totals.set(info.id, t);
    }
    mergeRow(t.row, row);
    t.first = Math.min(t.first, first);
    t.last = Math.max(t.last, last);
    if ('v' in r) (t.byValue ??= new Map()).set(String(r['v'] ?? ''), { ...toCounters(row), firstEventMs: first, lastEventMs: last });
  }
  const out = new Map<string, Arrival>();
  for (const [id, t] of totals) {
    out.set(id, { ...toCounters(t.row), info: t.info, firstEventMs: t.first, lastEventMs: t.last, ...(t.byValue ? { byValue: t.byValue } : {}) });
  }
  return out;
}

/**
 * The overflow hooks' rows: named their event's overflow name (isOverflowHook), compared exactly: SQLite's LIKE
 * ignores case, and a client's `Stop:(OVERFLOW)` is not one.
 */
export const OVERFLOW_HOOKS = `SELECT hook_id, hook_event, hook_name, first_seen, last_seen FROM hooks WHERE hook_name = hook_event || ${sqlString(OVERFLOW_SUFFIX)}`;

/** Hooks with nothing left in retention: no raw event and no rollup row of any granularity or dimension. */
export const ORPHAN_HOOKS = `SELECT hook_id FROM hooks h WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.hook = h.ref)
  ${[...Object.values(ROLLUP_TABLES), ...Object.values(DIM_ROLLUP_TABLES)].map((t) => `AND NOT EXISTS (SELECT 1 FROM ${t} r WHERE r.hook_id = h.hook_id)`).join('\n  ')}`;

/**
 * How a series reads rollups under a filter: from the dimension rollups (`dims`, only for steps of whole hours)
 * or the base ones, with `where` (AND ... on their key columns) appended.
 */
export interface RollupFilter {
  dims: boolean;
  where: string;
  /**
   * Whole hours from the rollup per attribute set (attr-rollups.ts) for a filter no rollup of a value keeps;
   * `where` is then the attribute filters (attrFilter) over its `attrs`.
   */
  attrs?: boolean;
}

/** The rollup per (hook, hour, attribute set); its rows name their hook by number, as the events do. */
export const ATTR_ROLLUP_TABLE = 'rollup_attrs_1h';

/** Every table of counters rows: the rollups per minute, hour and day, per dimension, and per attribute set. */
export const COUNTER_TABLES: readonly string[] = [...Object.values(ROLLUP_TABLES), ...DIM_TABLE_NAMES, ATTR_ROLLUP_TABLE];

/** The hook id (text) of the rollup row in scope, from its number. */
export const ATTR_ROLLUP_HOOK_ID = `(SELECT h.hook_id FROM hooks h WHERE h.ref = ${ATTR_ROLLUP_TABLE}.hook)`;

function rollupTable(step: number, rollup: RollupFilter | undefined, granularity?: Granularity): string {
  const g = granularity ?? granularityForStep(step);
  if (!rollup?.dims) return ROLLUP_TABLES[g];
  if (g === 'minute') throw new RangeError('dimension rollups serve steps of whole hours only');
  return DIM_ROLLUP_TABLES[g];
}

/** The rollup per attribute set, for a step of whole hours (its rows are hours). */
function attrRollupTable(step: number, granularity?: Granularity): string {
  if ((granularity ?? granularityForStep(step)) === 'minute') throw new RangeError('the rollup per attribute set serves steps of whole hours only');
  return ATTR_ROLLUP_TABLE;
}

/** A SQL string literal (for the few constants spliced into SQL text; user input is always a parameter). */
export function sqlString(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

/** A row of the hooks table as HookInfo. */
export function toInfo(r: Record<string, unknown>): HookInfo {
  return {
    id: String(r['hook_id']),
    hookEvent: String(r['hook_event']),
    hookName: String(r['hook_name']),
    firstSeenMs: Number(r['first_seen']),
    lastSeenMs: Number(r['last_seen']),
  };
}


/**
 * A hook's series: counters per bucket of `stepMs`, from rollups, or from raw events when `filterWhere` (a
 * filter clause) is given. The step is written into the SQL, so it must be a positive whole number of ms.
 * Parameters, rendered by `p(n)`: 1 hook id, 2 and 3 the range aligned to the step (returned), then the filters
 * (of `filterWhere` over raw events, or of `rollup` over rollups). `granularity` names the rollup table read
 * instead of the one the step implies (a minute step's whole hours beyond the events retention, minute-sources.ts).
 */
export function seriesQuery(q: SeriesQuery, filterWhere: string | null, p: (n: number) => string, rollup?: RollupFilter, granularity?: Granularity): { sql: string; fromMs: number; toMs: number } {
  const step = q.stepMs;
  checkStep(step);
  const sql = rollup?.attrs
    ? `SELECT ${floorSql('bucket', step)} AS b, ${rollupAggregates()} FROM ${attrRollupTable(step, granularity)} WHERE hook = ${hookRefOf(p(1))} AND bucket >= ${p(2)} AND bucket < ${p(3)} ${rollup.where} GROUP BY b`
    : filterWhere === null
    ? `SELECT ${floorSql('bucket', step)} AS b, ${rollupAggregates()} FROM ${rollupTable(step, rollup, granularity)} WHERE hook_id = ${p(1)} AND bucket >= ${p(2)} AND bucket < ${p(3)} ${rollup?.where ?? ''} GROUP BY b`
    : `SELECT ${floorSql('time_ms', step)} AS b, ${eventAggregates()} FROM events WHERE hook = ${hookRefOf(p(1))} AND time_ms >= ${p(2)} AND time_ms < ${p(3)} ${filterWhere} GROUP BY b`;
  return { sql, fromMs: Math.floor(q.fromMs / step) * step, toMs: Math.ceil(q.toMs / step) * step };
}

/** The few columns the fleet series needs, picked from an aggregate list by their aliases. */
const FLEET_COLUMNS = ['executions', 'outputs_persisted', 'executions_with_persisted', 'size_unknown', ...SIZE_COLS.map((c) => `max_${c}`)];
function pick(aggregates: string): string {
  return aggregates.split(/,\s*(?=(?:SUM|MAX)\()/).filter((part) => FLEET_COLUMNS.includes(part.trim().split(/\s+AS\s+/).pop() ?? '')).join(', ');
}

/**
 * Clauses keeping only some hooks (RangeQuery.hookIds), each `AND ...`: `byId` on a table naming its hook by id
 * (`hook_id`: the rollups), `byRef` on one naming it by number (`hook`: the events, the rollup per attribute set).
 */
export interface HookScope {
  byId: string;
  byRef: string;
}

/** HookScope from the backend's test of a column against the set of ids (one parameter, the same in both clauses). */
export function hookScope(inSet: (column: string) => string): HookScope {
  return { byId: `AND ${inSet('hook_id')}`, byRef: `AND hook IN (SELECT h.ref FROM hooks h WHERE ${inSet('h.hook_id')})` };
}

/**
 * Every hook's series at once (the overview's fleet chart and sparklines): one statement grouped by hook and
 * bucket, and only the columns a sparkline draws (a thousand hooks times 30 buckets of full counters cost
 * more to build than to read). Parameters as seriesQuery's without the hook id: 1 and 2 the aligned range,
 * then (with `hooks`, only those hooks: its clause right after the range) the set of hook ids, then the filters.
 * Not `grouped`, a part read from a base or dimension rollup is its rows as they are, a row per hook, hour (or
 * day, minute) and client, for fleetRestQuery to merge per hook and bucket in one grouping, not two.
 */
export function fleetSeriesQuery(
  q: SeriesQuery, filterWhere: string | null, p: (n: number) => string, rollup?: RollupFilter, granularity?: Granularity, hooks?: HookScope, grouped = true,
): { sql: string; fromMs: number; toMs: number } {
  const step = q.stepMs;
  checkStep(step);
  // A rollup's own rows, not grouped (fleetRestQuery groups them once): its columns are named as the aggregates.
  const sql = !grouped && !rollup?.attrs && filterWhere === null
    ? `SELECT hook_id, ${floorSql('bucket', step)} AS b, ${FLEET_COLUMNS.join(', ')} FROM ${rollupTable(step, rollup, granularity)} WHERE bucket >= ${p(1)} AND bucket < ${p(2)} ${hooks?.byId ?? ''} ${rollup?.where ?? ''}`
    : rollup?.attrs
    ? `SELECT ${ATTR_ROLLUP_HOOK_ID} AS hook_id, ${floorSql('bucket', step)} AS b, ${pick(rollupAggregates())} FROM ${attrRollupTable(step, granularity)} WHERE bucket >= ${p(1)} AND bucket < ${p(2)} ${hooks?.byRef ?? ''} ${rollup.where} GROUP BY hook, b`
    : filterWhere === null
    ? `SELECT hook_id, ${floorSql('bucket', step)} AS b, ${pick(rollupAggregates())} FROM ${rollupTable(step, rollup, granularity)} WHERE bucket >= ${p(1)} AND bucket < ${p(2)} ${hooks?.byId ?? ''} ${rollup?.where ?? ''} GROUP BY hook_id, b`
    : `SELECT ${EVENT_HOOK_ID} AS hook_id, ${floorSql('time_ms', step)} AS b, ${pick(eventAggregates())} FROM events WHERE time_ms >= ${p(1)} AND time_ms < ${p(2)} ${hooks?.byRef ?? ''} ${filterWhere} GROUP BY hook, b`;
  return { sql, fromMs: Math.floor(q.fromMs / step) * step, toMs: Math.ceil(q.toMs / step) * step };
}

/** The columns of fleetSeriesQuery's rows, in the order fleetRestQuery unites them. */
const FLEET_ROW_COLUMNS = ['hook_id', 'b', ...FLEET_COLUMNS];

/**
 * The fleet series of many hooks summed per bucket (Store.fleetRest) from `parts`, fleetSeriesQuery's statements
 * (their parameters one after the other): their rows merged per hook and bucket as mergeFleet merges them (a row
 * before `firstMs`, the whole hour at a range's start, counts in the first bucket), then each hook's persisted
 * outputs at least and measured-only executions (persistedAtLeast, measuredOnly, which are not sums) taken per
 * hook and bucket and summed per bucket. One row a bucket, however many hooks: the rows of every hook are never
 * built. The parts may be rollup rows as they are (fleetSeriesQuery not `grouped`): they are grouped here once.
 */
export function fleetRestQuery(parts: readonly string[], firstMs: number): string {
  if (!Number.isSafeInteger(firstMs)) throw new RangeError(`fleet series start must be a whole number of ms, got ${firstMs}`);
  const maxes = SIZE_COLS.map((c) => `MAX(max_${c}) AS max_${c}`).join(', ');
  const united = parts.map((sql, i) => `SELECT ${FLEET_ROW_COLUMNS.join(', ')} FROM (${sql}) p${i}`).join(' UNION ALL ');
  // Only a hook with persisted outputs in a bucket is grouped apart (persistedAtLeast and measuredOnly are 0 for
  // the others): its executions, sizes and maxima sum alike either way, and the rows of the hooks without any fall
  // into one group per bucket, so what is grouped follows the hooks that persist, not the size of the fleet.
  const key = `CASE WHEN outputs_persisted > 0 OR executions_with_persisted > 0 THEN hook_id END`;
  const perHook = `SELECT ${key} AS hk, CASE WHEN b < ${firstMs} THEN ${firstMs} ELSE b END AS bb, COALESCE(SUM(executions), 0) AS executions, COALESCE(SUM(outputs_persisted), 0) AS op, COALESCE(SUM(executions_with_persisted), 0) AS ewp, COALESCE(SUM(size_unknown), 0) AS size_unknown, ${maxes} FROM (${united}) u GROUP BY hk, bb`;
  return `SELECT bb AS b, SUM(executions) AS executions, SUM(CASE WHEN op >= ewp THEN op ELSE ewp END) AS persisted, SUM(CASE WHEN ewp > op THEN ewp ELSE 0 END) AS measured_only, SUM(size_unknown) AS size_unknown, ${maxes} FROM (${perHook}) h GROUP BY bb`;
}

/** A fleetRestQuery row as FleetRestBucket. */
export function toFleetRest(r: Record<string, unknown>): FleetRestBucket {
  return {
    bucketMs: Number(r['b']), executions: Number(r['executions'] ?? 0), persisted: Number(r['persisted'] ?? 0), measuredOnly: Number(r['measured_only'] ?? 0),
    sizeUnknownExecutions: Number(r['size_unknown'] ?? 0), largest: largestOf(r),
  };
}

/** The largest of a row's max_<kind> columns; null when none holds one. */
function largestOf(r: Record<string, unknown>): number | null {
  let largest: number | null = null;
  for (const c of SIZE_COLS) {
    const v = r[`max_${c}`];
    if (v !== null && v !== undefined && (largest === null || Number(v) > largest)) largest = Number(v);
  }
  return largest;
}

/**
 * `sql` with its PostgreSQL parameters ($1, $2, ...) numbered `by` more, to stand after another statement's in
 * one (fleetRestQuery); a `$n` inside a string literal or a quoted name is left as it is.
 */
export function shiftParams(sql: string, by: number): string {
  return sql.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|\$(\d+)/g, (m, n: string | undefined) => (n === undefined ? m : `$${Number(n) + by}`));
}

/** The fleet series' partial buckets (minute-sources.ts readEdges) as FleetBuckets. */
export function edgeFleetBuckets(edges: EdgeRows): FleetBucket[] {
  return edges.flatMap(([bucketMs, byHook]) => [...byHook].map(([hookId, row]) => toFleetBucket({ hook_id: hookId, b: bucketMs, ...row })));
}

/** A fleet series row as FleetBucket. */
export function toFleetBucket(r: Record<string, unknown>): FleetBucket {
  const largest = largestOf(r);
  return {
    hookId: String(r['hook_id']), bucketMs: Number(r['b']), executions: Number(r['executions'] ?? 0),
    outputsPersisted: Number(r['outputs_persisted'] ?? 0), executionsWithPersisted: Number(r['executions_with_persisted'] ?? 0), sizeUnknownExecutions: Number(r['size_unknown'] ?? 0), largest,
  };
}
