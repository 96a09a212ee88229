/**
 * The counter conversions an answer runs once per hook and segment (fromDbRow, mergeRow, toCounters,
 * totalCounters) are written out column by column for speed: held here to the column lists, against the rules
 * applied column by column (a sum adds what is known, a maximum takes the largest known, unknown stays null).
 */
import { describe, expect, it } from 'vitest';
import { OUTPUT_KINDS } from '../../../shared/src/cliff.ts';
import { COUNTER_COLUMNS, MAX_COLUMNS, SUM_COLUMNS, emptyRow, fromDbRow, mergeRow, toCounters, totalCounters, type CounterColumn, type CounterRow } from './counters.ts';
import { COUNT_FIELDS, type CountField, type HookCounters, type SizeField } from './model.ts';
import { seededRandom } from '../../test/support/random.ts';

/** Each count field and the column it comes from. */
const COUNT_COLUMN: [CountField, CounterColumn][] = [
  ['executions', 'executions'], ['starts', 'starts'], ['numHooks', 'num_hooks'], ['success', 'success'], ['blocking', 'blocking'],
  ['nonBlockingError', 'non_blocking_error'], ['cancelled', 'cancelled'], ['outputsPersisted', 'outputs_persisted'],
  ['executionsWithPersisted', 'executions_with_persisted'], ['sizeUnknownExecutions', 'size_unknown'], ['nearExecutions', 'near_executions'],
  ['sizesMaySumExecutions', 'sizes_may_sum'], ['durationMsSum', 'duration_sum'],
];

/** A row of random values, a third of them unknown. */
function row(rnd: () => number): CounterRow {
  const r = emptyRow();
  for (const c of COUNTER_COLUMNS) r[c] = rnd() < 0.33 ? null : Math.floor(rnd() * 100_000);
  return r;
}

describe('counter rows', () => {
  it('reads every column of a database row, numbers from bigints and strings, unknown as null', () => {
    const rnd = seededRandom(3);
    for (let i = 0; i < 50; i++) {
      const r = row(rnd);
      const db: Record<string, unknown> = { g: 'hook' };
      COUNTER_COLUMNS.forEach((c, j) => (db[c] = r[c] === null ? (j % 2 ? null : undefined) : [BigInt(r[c]), String(r[c]), r[c]][j % 3]));
      expect(fromDbRow(db)).toStrictEqual(r);
      expect(Object.keys(fromDbRow(db))).toEqual([...COUNTER_COLUMNS]);
    }
  });

  it('merges every column by its rule', () => {
    const rnd = seededRandom(5);
    for (let i = 0; i < 200; i++) {
      const a = row(rnd);
      const b = row(rnd);
      const expected = { ...a };
      for (const c of SUM_COLUMNS) if (b[c] !== null) expected[c] = (a[c] ?? 0) + b[c];
      for (const c of MAX_COLUMNS) if (b[c] !== null && (a[c] === null || b[c] > a[c])) expected[c] = b[c];
      mergeRow(a, b);
      expect(a).toStrictEqual(expected);
    }
  });

  it('gives every column to its field of the counters, and totals counters as one row folding them all', () => {
    expect(COUNT_COLUMN.map(([f]) => f).sort()).toEqual([...COUNT_FIELDS].sort());
    const rnd = seededRandom(9);
    const rows = Array.from({ length: 40 }, () => row(rnd));
    const counters = rows.map(toCounters);
    for (const [i, c] of counters.entries()) {
      const r = rows[i] as CounterRow;
      const expected = { durationMsMax: r.duration_max } as HookCounters;
      for (const [field, col] of COUNT_COLUMN) expected[field] = r[col] ?? 0;
      for (const [field, prefix] of [['maxChars', 'max_'], ['maxCharsLowerBound', 'lmax_'], ['sumChars', 'sum_']] as const) {
        expected[field] = Object.fromEntries(OUTPUT_KINDS.map((k) => [k, r[`${prefix}${k.replace(/[A-Z]/g, (u) => `_${u.toLowerCase()}`)}` as CounterColumn]])) as HookCounters[SizeField];
      }
      expect(c).toStrictEqual(expected);
    }
    const folded = emptyRow();
    for (const r of rows) mergeRow(folded, { ...r });
    expect(totalCounters(counters)).toStrictEqual(toCounters(folded));
    expect(totalCounters([])).toStrictEqual(toCounters(emptyRow()));
    expect(totalCounters(counters.slice(0, 1))).toStrictEqual(counters[0] as HookCounters);
  });
});
