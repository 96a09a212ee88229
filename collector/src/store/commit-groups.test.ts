/**
 * What one commit adds to each rollup (groupForRollups, groupForDimRollups, groupForAttrRollups) and to the hooks
 * table (hooksSeen), against a plain fold of every event into the group of its full key. The grouping functions
 * look groups up through the previous event's group first; events here interleave hooks, clients, minutes, hours, dimension values and
 * attribute sets so that every shortcut misses as often as it hits. The rows must come out the same and in the
 * stores' key order (every backend takes row locks in that order).
 */
import { describe, expect, it } from 'vitest';
import { hookId } from '../hooks/extract.ts';
import type { HookEvent } from '../hooks/model.ts';
import { groupForAttrRollups } from './attr-rollups.ts';
import { COUNTER_COLUMNS, MAX_COLUMNS, SUM_COLUMNS, addEvent, emptyRow, groupForRollups, hooksSeen, type CounterColumn, type CounterRow } from './counters.ts';
import { dimValue, groupForDimRollups } from './dim-rollups.ts';
import { DAY, HOUR, MINUTE } from './segments.ts';
import { hookRef } from './sql.ts';
import { seededRandom } from '../../test/support/random.ts';

const T0 = Date.UTC(2026, 2, 2, 23, 50);
const HOOKS = [['PreToolUse', 'PreToolUse:Bash'], ['PostToolUse', 'PostToolUse:Bash'], ['Stop', 'Stop'], ['SessionStart', 'SessionStart:startup'], ['UserPromptSubmit', 'UserPromptSubmit']] as const;
const VERSIONS = ['2.1.332', '2.1.300'];
const TEAMS = ['web', 'infra', ''];
const DIMS = ['team', 'terminal.type'];

/** `n` events, each fact drawn on its own: runs of one hook, client, minute or team are as short as chance makes them. */
function events(n: number, seed: number): HookEvent[] {
  const rnd = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  return Array.from({ length: n }, (_, i) => {
    const [hookEvent, hookName] = pick(HOOKS);
    const kind = rnd() < 0.3 ? 'start' : 'complete';
    const size = kind === 'start' || rnd() < 0.2 ? null : pick([0, 120, 8_600, 12_000, 30_000]);
    const numHooks = pick([1, 2, 3, null]);
    const team = pick(TEAMS);
    return {
      kind, dedupKey: `k${seed}-${i}`, hookId: hookId(hookEvent, hookName), hookEvent, hookName,
      // Across two days, an hour and many minutes: every granularity has several buckets.
      timeMs: T0 + Math.floor(rnd() * 30) * MINUTE + Math.floor(rnd() * 60_000) + (rnd() < 0.1 ? DAY + HOUR : 0),
      numHooks, numSuccess: kind === 'complete' ? 1 : null, numBlocking: pick([0, 1, null]), numNonBlockingError: 0, numCancelled: pick([0, null]),
      durationMs: kind === 'complete' ? pick([5, 40, 300, null]) : null,
      stdoutChars: size, additionalContextChars: size === null ? null : Math.floor(size / 2), systemMessageChars: pick([null, 0, 90]), initialUserMessageChars: null,
      outputsPersisted: size === null ? null : size > 10_000 ? 1 : 0, sizesKnown: size !== null,
      status: size === null ? 'unknown' : size > 10_000 ? 'over' : size > 8_000 ? 'near' : 'ok',
      serviceName: pick(['claude-code', 'claude-code-sdk']), serviceVersion: pick(VERSIONS), sessionId: `s${i % 3}`, userId: 'u', userEmail: 'u@example.com',
      userAccountUuid: 'a', organizationId: 'o', terminalType: pick(['vscode', 'xterm']), source: 'otlp',
      extra: (team === '' && rnd() < 0.5 ? {} : { team }) as Record<string, string>,
    } satisfies HookEvent;
  });
}

/** Each event folded into the group of `keyOf`, groups sorted by their keys as the stores order them. */
function foldAll<K extends (string | number | bigint)[]>(list: readonly HookEvent[], keyOf: (e: HookEvent, i: number) => K[]): { key: K; row: CounterRow }[] {
  const groups = new Map<string, { key: K; row: CounterRow }>();
  list.forEach((e, i) => {
    for (const key of keyOf(e, i)) {
      const id = JSON.stringify(key, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));
      let g = groups.get(id);
      if (!g) groups.set(id, (g = { key, row: emptyRow() }));
      addEvent(g.row, e);
    }
  });
  const cmp = (a: K, b: K): number => {
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] as string | number | bigint) < (b[i] as string | number | bigint) ? -1 : 1;
    return 0;
  };
  return [...groups.values()].sort((a, b) => cmp(a.key, b.key));
}

const floor = (t: number, size: number): number => Math.floor(t / size) * size;

describe('rows of one commit', () => {
  it('starts a row from zero counts and unknown sizes, in column order', () => {
    const row = emptyRow();
    expect(Object.keys(row)).toEqual([...COUNTER_COLUMNS]);
    for (const c of SUM_COLUMNS) expect(row[c]).toBe(c.startsWith('sum_') ? null : 0);
    for (const c of MAX_COLUMNS) expect(row[c]).toBeNull();
    expect(emptyRow()).not.toBe(emptyRow());
  });

  it('adds an event to every column as the column rules say', () => {
    for (const e of events(300, 7)) {
      const row = emptyRow();
      addEvent(row, e);
      addEvent(row, e);
      const expected = emptyRow();
      const sum = (c: CounterColumn, v: number | null, times = 2): void => {
        if (v !== null) expected[c] = (expected[c] ?? 0) + v * times;
      };
      const max = (c: CounterColumn, v: number | null): void => {
        if (v !== null) expected[c] = v;
      };
      if (e.kind === 'start') sum('starts', 1);
      else {
        sum('executions', 1);
        sum('num_hooks', e.numHooks);
        sum('success', e.numSuccess);
        sum('blocking', e.numBlocking);
        sum('non_blocking_error', e.numNonBlockingError);
        sum('cancelled', e.numCancelled);
        sum('outputs_persisted', e.outputsPersisted);
        sum('executions_with_persisted', e.status === 'over' ? 1 : null);
        sum('near_executions', e.status === 'near' ? 1 : null);
        sum('size_unknown', e.sizesKnown ? null : 1);
        // Sizes reported over more than one command, or over a count not sent.
        sum('sizes_may_sum', e.sizesKnown && (e.numHooks === null || e.numHooks > 1) ? 1 : null);
        const n = e.numHooks && e.numHooks > 1 ? e.numHooks : 1;
        for (const [col, v] of [['stdout', e.stdoutChars], ['additional_context', e.additionalContextChars], ['system_message', e.systemMessageChars], ['initial_user_message', e.initialUserMessageChars]] as const) {
          sum(`sum_${col}`, v);
          max(`max_${col}`, v);
          // No lower bound of one string from a sum over a count not sent.
          max(`lmax_${col}`, v === null || e.numHooks === null ? null : Math.ceil(v / n));
        }
        sum('duration_sum', e.durationMs);
        max('duration_max', e.durationMs);
      }
      expect(row).toEqual(expected);
    }
  });

  for (const seed of [1, 2, 3]) {
    it(`groups the base rollups and the hooks table in key order (seed ${seed})`, () => {
      const list = events(2_000, seed);
      const now = T0 + 20 * MINUTE;
      const rows = groupForRollups(list);
      const hooks = hooksSeen(list, now);
      for (const [g, size] of [['minute', MINUTE], ['hour', HOUR], ['day', DAY]] as const) {
        const expected = foldAll(list, (e) => [[e.hookId, floor(e.timeMs, size), e.serviceName, e.serviceVersion]]);
        expect(rows[g].map((r) => ({ key: [r.hookId, r.bucket, r.serviceName, r.serviceVersion], row: r.row }))).toEqual(expected);
      }
      const ids = [...new Set(list.map((e) => e.hookId))].sort();
      expect([...hooks.keys()]).toEqual(ids);
      for (const id of ids) {
        const seen = list.filter((e) => e.hookId === id).map((e) => Math.min(e.timeMs, now));
        expect(hooks.get(id)).toEqual({ event: list.find((e) => e.hookId === id), firstMs: Math.min(...seen), lastMs: Math.max(...seen) });
      }
    });

    it(`groups the dimension rollups in key order (seed ${seed})`, () => {
      const list = events(2_000, seed);
      const rows = groupForDimRollups(list, DIMS);
      for (const [g, size] of [['hour', HOUR], ['day', DAY]] as const) {
        expect(rows.hooks[g]).toEqual(foldAll(list, (e) => DIMS.map((d) => [d, dimValue(e, d), floor(e.timeMs, size), e.hookId])));
        expect(rows.clients[g]).toEqual(foldAll(list, (e) => DIMS.map((d) => [d, floor(e.timeMs, size), dimValue(e, d), e.serviceName, e.serviceVersion])));
      }
    });

    it(`groups the rollup per attribute set in the order of hook numbers (seed ${seed})`, () => {
      const list = events(2_000, seed);
      const rnd = seededRandom(seed + 100);
      const attrIds = list.map(() => 1 + Math.floor(rnd() * 4));
      const expected = foldAll<[bigint, number, number]>(list, (e, i) => [[hookRef(e.hookId) as bigint, floor(e.timeMs, HOUR), attrIds[i] as number]]);
      // Hook numbers are signed: ids from 8 on sort before those below, unlike their text.
      expect(new Set(expected.map((g) => g.key[0] < 0n)).size).toBe(2);
      expect(groupForAttrRollups(list, attrIds)).toEqual(expected.map(({ key: [ref, bucket, attrs], row }) => ({ hook: ref.toString(), bucket, attrs, row })));
    });
  }
});
