/**
 * The hourly rollup per (hook, attribute set): what a read that the base and dimension rollups cannot serve (a
 * breakdown by user.* or session.id, a filter on a user, two dimensions at once, an empty value) reads for its
 * whole hours instead of the raw events. A session lasts well under an hour or two and uses a handful of hooks,
 * so one row holds some 25-35 events: the read folds that many times fewer rows, each joined to its attribute set
 * once (as attrGroupedEventsQuery does), and filters pick the sets first (`attrs IN (SELECT id FROM attr_sets ...)`).
 * The partial hours at a range's edges (and the open hour) are still read from the raw events.
 *
 * Keyed (hook, bucket, attrs): hook is the events' hook number (sql.ts hookRef), attrs an attr_sets id. Written at
 * ingest in the events' transaction from the events actually inserted (a duplicate adds nothing), one upsert per
 * row per commit. Its rows name attribute sets, and retention deletes a set once no event in `retention.events`
 * uses it, so this rollup is pruned with the events, never kept longer: whole hours before the bound go, and the
 * hour holding the bound is folded again from the events left in it (attrRollupRebuildSql), so it always equals a
 * fold of the raw events stored.
 */
import type { HookEvent } from '../hooks/model.ts';
import { COUNTER_COLUMNS, COUNT_SUM_COLUMNS, addEvent, emptyRow, type CounterRow } from './counters.ts';
import { HOUR, floorSql } from './segments.ts';
import { ATTR_ROLLUP_HOOK_ID, ATTR_ROLLUP_TABLE, eventAggregates, hookIdOf, hookRef, rollupAggregates, upsertSetClause } from './sql.ts';

export { ATTR_ROLLUP_HOOK_ID, ATTR_ROLLUP_TABLE };
/** Key columns, in primary-key order: one hook's reads over a range seek (hook, bucket). */
export const ATTR_ROLLUP_KEY = ['hook', 'bucket', 'attrs'] as const;

/**
 * The table (one migration of each backend), filled from the events already stored. The index (attrs, bucket)
 * serves a filter on a user across every hook (the overview filtered to one user): its sets' rows only, instead
 * of every row in range (measured at 1 M events over 30 days on SQLite: 5-10 ms instead of 20-70 ms, for 0.8
 * bytes per event). Its columns never change on an upsert, so only a new row writes to it. `attrId` is
 * attr_sets.id's type; it goes last so PostgreSQL packs the 64-bit columns without padding. `columns`: the counter
 * columns `counterColumns` defines (those of the migration that creates the table, never those of today: a later
 * migration adds its own, so there is no default).
 */
export function attrRollupDdl(counterColumns: string, int: string, attrId: string, tableOptions: string, columns: readonly string[]): string {
  return `CREATE TABLE ${ATTR_ROLLUP_TABLE} (
    hook ${int} NOT NULL,
    bucket ${int} NOT NULL,
    ${counterColumns},
    attrs ${attrId} NOT NULL,
    PRIMARY KEY (${ATTR_ROLLUP_KEY.join(', ')})
  )${tableOptions};
  ${attrRollupFillSql('', columns)};
  CREATE INDEX ${ATTR_ROLLUP_TABLE}_attrs ON ${ATTR_ROLLUP_TABLE} (attrs, bucket);`;
}

/**
 * Folds the events matching `where` (a WHERE clause over events, or '') into rows of this rollup. A SUM over
 * events that all lack a count is NULL; the rollup's count columns are 0 then (counterColumnsDdl). Added to a row
 * that exists: at retention a replica's ingest may have written a row of the hour being folded again after the
 * fold's snapshot, and its events are not in that snapshot. (WHERE true: SQLite would read ON CONFLICT as a join.)
 * `columns`: the counter columns the table has.
 */
export function attrRollupFillSql(where: string, columns: readonly string[] = COUNTER_COLUMNS): string {
  const outer = columns.map((c) => (COUNT_SUM_COLUMNS.includes(c) ? `COALESCE(${c}, 0)` : c)).join(', ');
  const b = floorSql('time_ms', HOUR);
  return `INSERT INTO ${ATTR_ROLLUP_TABLE} AS t (hook, bucket, attrs, ${columns.join(', ')})
    SELECT hook, b, attrs, ${outer} FROM (SELECT hook, ${b} AS b, attrs, ${eventAggregates(columns)} FROM events ${where} GROUP BY hook, ${b}, attrs) s WHERE true
    ON CONFLICT (${ATTR_ROLLUP_KEY.join(', ')}) DO UPDATE SET ${upsertSetClause(columns)}`;
}

/**
 * Retention of this rollup with the events (see the header): rows of whole hours before `bound`, then the hour
 * holding the bound, if it is not an hour boundary, folded again from its events still stored. The statements after the first are to run in one transaction, after the
 * events were deleted. Parameters are spliced in (whole numbers only).
 */
export function attrRollupPruneSql(bound: number): { old: string; edge: string[] } {
  if (!Number.isSafeInteger(bound)) throw new RangeError('retention bound must be a whole number of ms');
  const hour = Math.floor(bound / HOUR) * HOUR;
  const old = `bucket < ${hour}`;
  const edge = hour === bound ? [] : [
    `DELETE FROM ${ATTR_ROLLUP_TABLE} WHERE bucket = ${hour}`,
    attrRollupFillSql(`WHERE time_ms >= ${hour} AND time_ms < ${hour + HOUR}`),
  ];
  return { old, edge };
}


/**
 * Rows of this rollup matching `where` (over its columns: hook, bucket, attrs) grouped by values of their
 * attribute sets, each row joined to its set in attr_sets (a set gone groups under a NULL lookup, as
 * attrGroupedEventsQuery's). `select` names the group's values (over attr_sets' columns), `group` what to group
 * by; with `hookAs`, per hook as well, its id named `hookAs`. Grouped by hook alone (`select` null), no set is
 * looked up.
 */
export function attrRollupQuery(select: string | null, group: string, where: string, hookAs?: string): string {
  if (select === null) return `SELECT ${ATTR_ROLLUP_HOOK_ID} AS ${group}, ${rollupAggregates()} FROM ${ATTR_ROLLUP_TABLE} WHERE ${where} GROUP BY hook`;
  // A set has about one row per hour of one hook (a session), so rows are joined to their set directly: folding
  // per set first would aggregate the same rows twice.
  return `SELECT ${hookAs === undefined ? '' : `${hookIdOf('r')} AS ${hookAs}, `}${select}, ${rollupAggregates()}
  FROM ${ATTR_ROLLUP_TABLE} r LEFT JOIN attr_sets ON attr_sets.id = r.attrs
  WHERE ${where}
  GROUP BY ${hookAs === undefined ? '' : 'r.hook, '}${group}`;
}

/** One row's worth of a commit. `hook` is the hook's number as text (exact for 64-bit values). */
export interface AttrRollupGroup {
  hook: string;
  bucket: number;
  attrs: number;
  row: CounterRow;
}

/**
 * What a commit adds to this rollup: each inserted event (`events[i]`, attribute set `attrIds[i]`) folded once
 * into the group of its hook, hour and set; groups in key order, so every backend takes row locks in one order.
 */
export function groupForAttrRollups(events: readonly HookEvent[], attrIds: readonly number[]): AttrRollupGroup[] {
  const groups = new Map<string, AttrFold>();
  const hooks = new Map<string, AttrHook>();
  for (let i = 0; i < events.length; i++) {
    const e = events[i] as HookEvent;
    const bucket = Math.floor(e.timeMs / HOUR) * HOUR;
    const attrs = attrIds[i] as number;
    let h = hooks.get(e.hookId);
    if (!h) hooks.set(e.hookId, (h = { ref: hookRef(e.hookId) ?? 0n, last: undefined }));
    // A hook's events of one batch share a session and nearly always an hour: the group of its last event is
    // checked first, so the group key is built only when the set or the hour changes.
    let g = h.last;
    if (g === undefined || g.group.bucket !== bucket || g.group.attrs !== attrs) {
      const key = `${e.hookId}|${bucket}|${attrs}`;
      g = groups.get(key);
      if (!g) groups.set(key, (g = { ref: h.ref, group: { hook: h.ref.toString(), bucket, attrs, row: emptyRow() } }));
      h.last = g;
    }
    addEvent(g.group.row, e);
  }
  return [...groups.values()]
    .sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0) || a.group.bucket - b.group.bucket || a.group.attrs - b.group.attrs)
    .map((g) => g.group);
}

/** A group of a commit and its hook's number, which the key order compares (as a 64-bit integer, not as text). */
interface AttrFold {
  ref: bigint;
  group: AttrRollupGroup;
}

/** A hook's number, looked up once per commit, and the group its last event went to. */
interface AttrHook {
  ref: bigint;
  last: AttrFold | undefined;
}
