/** The hook_limit rule, read at every evaluation: what it asks of the store. */
import { describe, expect, it } from 'vitest';
import type { Store } from '../store/store.ts';
import { evaluateRule } from './rules.ts';
import { parseRules } from './settings.ts';

describe('hook_limit', () => {
  it('reads no late arrivals while the store holds no overflow hook (below store.maxHooks)', async () => {
    const asked: string[] = [];
    // Only what the rule may ask; anything else fails the evaluation.
    const store = {
      maxHooks: 1000,
      overflowHooks: async () => {
        asked.push('overflowHooks');
        return [];
      },
      lateFolded: async () => {
        asked.push('lateFolded');
        return new Map();
      },
      hookCounters: async () => {
        asked.push('hookCounters');
        return new Map();
      },
    } as unknown as Store;
    const [rule] = parseRules([{ kind: 'hook_limit' }]);
    expect(await evaluateRule(rule!, { store, now: Date.parse('2026-11-30T12:00:00Z') })).toEqual([]);
    // The late query reads every event with a receive time of the window (those over the cap of every hook among
    // them): asked every evaluation interval for nothing, it would cost as much as the persisted rule's.
    expect(asked).toEqual(['overflowHooks']);
  });
});
