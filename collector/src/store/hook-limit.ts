/**
 * Bounded hook cardinality (`store.maxHooks`): once the hooks table holds the limit, events of a hook name it
 * has not seen are counted under one overflow hook per hook event (`<hook_event>:(overflow)`) instead of a new
 * row, the way Prometheus and the OpenTelemetry SDKs fold excess label sets into an overflow series. Counts are
 * kept, never dropped; every per-hook read stays bounded by the limit, whatever a client sends.
 */
import { hookId } from '../hooks/extract.ts';
import { overflowHookName, type HookEvent } from '../hooks/model.ts';

export const DEFAULT_MAX_HOOKS = 10_000;
/**
 * Overflow hooks are one per hook event, and hook_event is a client string too: past this many of them, every
 * further hook event shares one catch-all hook, so the table never holds more than maxHooks + this + 1 rows.
 */
export const MAX_OVERFLOW_HOOKS = 100;
const CATCH_ALL_EVENT = '(overflow)';

/** The overflow hook ids these events would fold into (to look up together with the events' own ids). */
export function overflowIds(events: readonly HookEvent[]): string[] {
  return [...new Set(events.map((e) => e.hookEvent))].map((ev) => hookId(ev, overflowHookName(ev)));
}

/**
 * Every hook id an event can be stored under: its own, its hook event's overflow hook, the catch-all. Which one
 * depends on the hooks table when it arrives, so a retry of the same event may go to another of them.
 */
export function storedHookIds(e: Pick<HookEvent, 'hookId' | 'hookEvent'>): [string, string, string] {
  return [e.hookId, hookId(e.hookEvent, overflowHookName(e.hookEvent)), hookId(CATCH_ALL_EVENT, overflowHookName(CATCH_ALL_EVENT))];
}

export interface FoldResult {
  events: HookEvent[];
  /** Events moved to an overflow hook by this call. */
  folded: number;
  /** Names of the overflow hooks that took them. */
  overflowHooks: string[];
}

/**
 * Rewrites the events of hooks beyond the limit onto overflow hooks. `exists` says whether a hook is already in
 * the table; `hookCount` is the table's size now. Only called with at least one unknown id.
 */
export function foldNewHooks(events: readonly HookEvent[], exists: (id: string) => boolean, hookCount: number, maxHooks: number): FoldResult {
  let count = hookCount;
  const admitted = new Set<string>();
  for (const e of events) if (exists(e.hookId)) admitted.add(e.hookId);
  const target = new Map<string, { id: string; hookEvent: string; hookName: string }>();
  const overflowNames = new Set<string>();
  let folded = 0;
  const out = events.map((e) => {
    if (admitted.has(e.hookId)) return e;
    if (count < maxHooks) {
      admitted.add(e.hookId);
      count++;
      return e;
    }
    let t = target.get(e.hookEvent);
    if (!t) {
      const id = hookId(e.hookEvent, overflowHookName(e.hookEvent));
      // An overflow hook that exists, or room for one more; otherwise the catch-all.
      if (!admitted.has(id) && exists(id)) admitted.add(id);
      if (admitted.has(id) || count < maxHooks + MAX_OVERFLOW_HOOKS) {
        if (!admitted.has(id)) {
          admitted.add(id);
          count++;
        }
        t = { id, hookEvent: e.hookEvent, hookName: overflowHookName(e.hookEvent) };
      } else {
        t = { id: hookId(CATCH_ALL_EVENT, overflowHookName(CATCH_ALL_EVENT)), hookEvent: CATCH_ALL_EVENT, hookName: overflowHookName(CATCH_ALL_EVENT) };
      }
      target.set(e.hookEvent, t);
    }
    folded++;
    overflowNames.add(t.hookName);
    return { ...e, hookId: t.id, hookEvent: t.hookEvent, hookName: t.hookName };
  });
  return { events: out, folded, overflowHooks: [...overflowNames] };
}

/**
 * The hook ids a store knows exist, so a steady feed of known hooks costs no lookup. Bounded: past `max` ids
 * the store asks the database for the rest. Cleared when retention removes hooks, or a hook known turns out gone.
 */
export class KnownHooks {
  private readonly ids = new Set<string>();
  private readonly max: number;

  constructor(max: number) {
    this.max = max;
  }

  /** The ids among these events' hooks not known to exist. */
  unknown(events: readonly HookEvent[]): string[] {
    // Runs on every batch, and nearly always finds every hook known: nothing is allocated then, and a run of
    // one hook's events (a start and its completion) is looked up once.
    let out: Set<string> | undefined;
    let last: string | undefined;
    for (const e of events) {
      if (e.hookId === last) continue;
      last = e.hookId;
      if (!this.ids.has(last)) (out ??= new Set()).add(last);
    }
    return out === undefined ? [] : [...out];
  }

  add(ids: Iterable<string>): void {
    for (const id of ids) {
      if (this.ids.size >= this.max) return;
      this.ids.add(id);
    }
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  clear(): void {
    this.ids.clear();
  }
}
