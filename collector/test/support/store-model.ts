/** What any store must answer for a set of events, computed in memory with the shared counter arithmetic. */
import type { HookCounters } from '../../src/store/model.ts';
import type { HookEvent } from '../../src/hooks/model.ts';
import { addEvent, emptyRow, toCounters } from '../../src/store/counters.ts';
import { alignRange } from '../../src/store/segments.ts';

/** Per-hook counters of the events in [fromMs, toMs) (aligned as the stores align it) that `keep` accepts. */
export function model(events: HookEvent[], fromMs: number, toMs: number, keep: (e: HookEvent) => boolean = () => true): Map<string, HookCounters> {
  const r = alignRange(fromMs, toMs);
  const rows = new Map<string, ReturnType<typeof emptyRow>>();
  for (const e of events) {
    if (e.timeMs < r.fromMs || e.timeMs >= r.toMs || !keep(e)) continue;
    let row = rows.get(e.hookId);
    if (!row) rows.set(e.hookId, (row = emptyRow()));
    addEvent(row, e);
  }
  return new Map([...rows].map(([k, v]) => [k, toCounters(v)]));
}

/** A store's per-hook answer without the hook info, to compare with the model. */
export function strip(m: Map<string, HookCounters & { info?: unknown }>): Map<string, HookCounters> {
  return new Map([...m].map(([k, v]) => {
    const { info: _info, ...rest } = v as HookCounters & { info?: unknown };
    return [k, rest];
  }));
}

/** The model of a breakdown or a series: the events in [from, to) that `keep` lets through, folded by `key`. */
export function foldBy(events: HookEvent[], fromMs: number, toMs: number, key: (e: HookEvent) => string | number, keep: (e: HookEvent) => boolean = () => true): Map<string | number, HookCounters> {
  const rows = new Map<string | number, ReturnType<typeof emptyRow>>();
  for (const e of events) {
    if (e.timeMs < fromMs || e.timeMs >= toMs || !keep(e)) continue;
    const k = key(e);
    let row = rows.get(k);
    if (!row) rows.set(k, (row = emptyRow()));
    addEvent(row, e);
  }
  return new Map([...rows].map(([k, v]) => [k, toCounters(v)]));
}

/** The model of a breakdown of every hook at once: per hook with events in range that `keep` lets through, foldBy of its events. */
export function foldPerHook(events: HookEvent[], fromMs: number, toMs: number, key: (e: HookEvent) => string | number, keep: (e: HookEvent) => boolean = () => true): Map<string, Map<string | number, HookCounters>> {
  const out = new Map<string, Map<string | number, HookCounters>>();
  for (const id of new Set(events.map((e) => e.hookId))) {
    const rows = foldBy(events, fromMs, toMs, key, (e) => e.hookId === id && keep(e));
    if (rows.size > 0) out.set(id, rows);
  }
  return out;
}
