/** Folding past store.maxHooks: hostile hook_event values cannot grow the table past its bound either. */
import { describe, expect, it } from 'vitest';
import { hookEvent } from '../../test/support/alerting.ts';
import { overflowHookName } from '../hooks/model.ts';
import { MAX_OVERFLOW_HOOKS, foldNewHooks } from './hook-limit.ts';

describe('foldNewHooks', () => {
  it('admits new hooks up to the limit, then one overflow hook per hook event, then one catch-all', () => {
    const max = 5;
    // Every event a new hook event and a new name: the worst a client can send.
    const events = Array.from({ length: max + MAX_OVERFLOW_HOOKS + 50 }, (_, i) => hookEvent({ hookEvent: `E${i}`, hookName: `E${i}:x`, timeMs: 0 }));
    const r = foldNewHooks(events, () => false, 0, max);
    const ids = new Set(r.events.map((e) => e.hookId));
    expect(ids.size).toBe(max + MAX_OVERFLOW_HOOKS + 1);
    expect(r.folded).toBe(events.length - max);
    expect(r.events.filter((e) => e.hookName === overflowHookName('(overflow)'))).toHaveLength(50);
    // Nothing but the hook changes: the dedup key (retries) and the counts stay.
    r.events.forEach((e, i) => {
      expect(e.dedupKey).toBe(events[i]!.dedupKey);
      expect(e.outputsPersisted).toBe(events[i]!.outputsPersisted);
    });
  });

  it('keeps known hooks as they are when full, and reuses an overflow hook that exists', () => {
    const known = hookEvent({ hookName: 'Stop:known', timeMs: 0 });
    const fresh = hookEvent({ hookName: 'Stop:new', timeMs: 0 });
    const overflowId = foldNewHooks([fresh], () => false, 10, 10).events[0]!.hookId;
    const r = foldNewHooks([known, fresh], (id) => id === known.hookId || id === overflowId, 10 + MAX_OVERFLOW_HOOKS, 10);
    expect(r.events[0]).toBe(known);
    expect(r.events[1]!.hookId).toBe(overflowId);
    expect(r.folded).toBe(1);
  });
});
