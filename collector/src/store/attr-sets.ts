/**
 * Dictionary encoding of the attributes an event shares with its session (service, version, session, user,
 * organization, terminal, source, extra dimensions): each distinct tuple is one attr_sets row, and events carry
 * its id. A session's few hundred events then store one small integer each instead of ~250 bytes of strings.
 *
 * attr_sets.last_ms is at least the time of every event referencing the set, so retention can delete the sets
 * older than its bound without scanning the events. It is raised ahead by LAST_MS_SLACK when an event passes it:
 * a live session writes its set about once an hour, not once a batch. attr_sets.first_ms is at most the time of
 * every such event (0 where no bound is known; the event time itself where the migration that added it filled it
 * from the stored events), set behind by the same slack when ingest moves it: with both, a filter over a
 * stretch of time finds the sets live in it, an old stretch as cheaply as a recent one (attrFilter).
 */
import { ATTR_COLUMNS, attrDigest, attrValues } from './sql.ts';
import type { HookEvent } from '../hooks/model.ts';

/** How far ahead of an event's time last_ms is set when it has to move (fewer writes for a live session). */
export const LAST_MS_SLACK = 3_600_000;
/** Tuples kept in memory at most; a set not kept is looked up again (one indexed read). */
export const CACHE_SIZE = 50_000;

export interface AttrSet {
  id: number;
  lastMs: number;
  firstMs: number;
}

/** A resolution the store must write: a new set, or a known set whose last_ms must move to `lastMs`. */
export interface AttrWork {
  tuple: string;
  values: readonly string[];
  digest: Buffer;
  /** The latest event time that needs covering (last_ms becomes at least this plus the slack). */
  timeMs: number;
  /** The earliest (first_ms becomes at most this less the slack). */
  firstTimeMs: number;
}

/** The values of ATTR_COLUMNS plus the digest and both bounds, for an INSERT into attr_sets. */
export const ATTR_INSERT_COLUMNS = ['digest', 'last_ms', 'first_ms', ...ATTR_COLUMNS] as const;

/** The bounds a set must have to cover an event at `timeMs`, given what it has (`set`, if it exists). */
export function coveringBounds(timeMs: number, set?: { lastMs: number; firstMs: number }): { lastMs: number; firstMs: number } {
  const lastMs = set && set.lastMs >= timeMs ? set.lastMs : timeMs + LAST_MS_SLACK;
  const firstMs = set && set.firstMs <= timeMs ? set.firstMs : Math.max(0, timeMs - LAST_MS_SLACK);
  return { lastMs, firstMs };
}

/**
 * Known sets by tuple. Only what committed goes in: a rolled-back transaction's new sets never existed, so the
 * store calls `commit` after its commit and `discard` after a rollback.
 *
 * Kept in two generations of CACHE_SIZE / 2: the sets committed lately, and the generation before. When the
 * recent one is full it becomes the older and the older is forgotten whole. (Forgetting the oldest set one at a
 * time, as a Map's first key, leaves deleted entries at the Map's front that every later look for the first key
 * steps over: at CACHE_SIZE, each new set cost up to 45 µs more.)
 */
export class AttrSetCache {
  private recent = new Map<string, AttrSet>();
  private older = new Map<string, AttrSet>();
  private pending = new Map<string, AttrSet>();

  /**
   * The tuple of an event: the cache key (exact: JSON of the values). A batch's events nearly all share their
   * session's attributes: the previous event's tuple is reused when every field it is made of is the same, so
   * the JSON is built once per session in a batch instead of once per event. (The answer is shared, so its values
   * are read-only.)
   */
  static tuple(e: HookEvent): { tuple: string; values: readonly string[] } {
    const last = lastTuple;
    if (last !== undefined && sameAttrs(last.event, e)) return last.result;
    const values = attrValues(e);
    const result = { tuple: JSON.stringify(values), values };
    lastTuple = { event: e, result };
    return result;
  }

  /**
   * The set of a tuple if known (this transaction's pending sets first) and its last_ms covers `timeMs` and
   * `notBefore`. Where another process prunes (PostgreSQL replicas), `notBefore` is now: retention only deletes
   * sets whose last_ms is older than its bound (at least an hour ago), so a set trusted from memory cannot be
   * gone; any other is upserted again.
   */
  get(tuple: string, timeMs: number, notBefore = -Infinity): AttrSet | undefined {
    const s = this.peek(tuple);
    return s && s.lastMs >= timeMs && s.firstMs <= timeMs && s.lastMs >= notBefore ? s : undefined;
  }

  /** What is known of a tuple, whether or not it covers a time (to move its last_ms instead of looking it up). */
  peek(tuple: string): AttrSet | undefined {
    return this.pending.get(tuple) ?? this.recent.get(tuple) ?? this.older.get(tuple);
  }

  /** Records a set written or read in the current transaction. */
  note(tuple: string, set: AttrSet): void {
    this.pending.set(tuple, set);
  }

  commit(): void {
    for (const [k, v] of this.pending) {
      this.recent.set(k, v);
      if (this.recent.size >= CACHE_SIZE / 2) {
        this.older = this.recent;
        this.recent = new Map();
      }
    }
    this.pending = new Map();
  }

  discard(): void {
    this.pending = new Map();
  }

  /** After retention deleted sets: everything known may be gone. */
  clear(): void {
    this.recent = new Map();
    this.older = new Map();
    this.pending = new Map();
  }
}

/** The event whose tuple AttrSetCache.tuple made last, and that tuple. */
let lastTuple: { event: HookEvent; result: { tuple: string; values: readonly string[] } } | undefined;

/** Whether two events have the same attribute tuple: every field attrValues reads, extra's keys in the same order. */
function sameAttrs(a: HookEvent, b: HookEvent): boolean {
  if (a.serviceName !== b.serviceName || a.serviceVersion !== b.serviceVersion || a.sessionId !== b.sessionId || a.userId !== b.userId
    || a.userEmail !== b.userEmail || a.userAccountUuid !== b.userAccountUuid || a.organizationId !== b.organizationId
    || a.terminalType !== b.terminalType || a.source !== b.source) return false;
  const ka = Object.keys(a.extra);
  const kb = Object.keys(b.extra);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    const k = ka[i] as string;
    if (k !== kb[i] || a.extra[k] !== b.extra[k]) return false;
  }
  return true;
}

/** A new tuple's work item. */
export function attrWork(tuple: string, values: readonly string[], timeMs: number): AttrWork {
  return { tuple, values, digest: attrDigest(values), timeMs, firstTimeMs: timeMs };
}
