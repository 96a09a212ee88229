/** An event's attribute tuple is exactly its attributes' JSON, whichever event's tuple was made before it. */
import { describe, expect, it } from 'vitest';
import type { HookEvent } from '../hooks/model.ts';
import { hookEvent } from '../../test/support/alerting.ts';
import { AttrSetCache, CACHE_SIZE } from './attr-sets.ts';
import { attrValues } from './sql.ts';

const FIELDS = ['serviceName', 'serviceVersion', 'sessionId', 'userId', 'userEmail', 'userAccountUuid', 'organizationId', 'terminalType'] as const;

describe('AttrSetCache.tuple', () => {
  const base = (): HookEvent => ({ ...hookEvent({ timeMs: 1_700_000_000_000, team: 'platform' }), extra: { team: 'platform', region: 'eu' } });
  const expectTuple = (e: HookEvent): void => {
    const { tuple, values } = AttrSetCache.tuple(e);
    expect(values).toEqual(attrValues(e));
    expect(tuple).toBe(JSON.stringify(attrValues(e)));
  };

  it('gives an event that differs from the one before in any one attribute its own tuple', () => {
    const variants: HookEvent[] = [
      ...FIELDS.map((f) => ({ ...base(), [f]: `other-${f}` })),
      { ...base(), source: 'transcript' },
      { ...base(), extra: { team: 'platform', region: 'us' } },
      { ...base(), extra: { region: 'eu', team: 'platform' } },
      { ...base(), extra: { team: 'platform' } },
      { ...base(), extra: { team: 'platform', region: 'eu', tier: 'x' } },
      { ...base(), extra: {} },
    ];
    for (const v of variants) {
      expectTuple(base());
      expectTuple(v);
      expectTuple(base());
    }
  });

  it('gives an event that differs from the one before in any field the tuple is made of its own tuple', () => {
    // Every field of the event, each changed in turn: whatever fields attrValues reads, now or later, the tuple
    // reused from the event before must never hide a change in one of them.
    const full: Required<HookEvent> = { ...base(), legacyKey: 'legacy', receivedMs: 1_700_000_000_500 };
    const changed = (v: unknown): unknown => {
      if (typeof v === 'string') return `${v}-other`;
      if (typeof v === 'number') return v + 1;
      if (typeof v === 'boolean') return !v;
      if (v === null) return 7;
      return { ...(v as object), tier: 'x' };
    };
    for (const field of Object.keys(full) as (keyof HookEvent)[]) {
      expectTuple(full);
      expectTuple({ ...full, [field]: changed(full[field]) });
    }
  });

  it('gives events with the same attributes the same tuple, one after the other', () => {
    const a = AttrSetCache.tuple(base());
    const b = AttrSetCache.tuple({ ...base(), dedupKey: 'another', timeMs: 1_700_000_060_000 });
    expect(b.tuple).toBe(a.tuple);
    expect(b.values).toEqual(a.values);
  });
});

describe('AttrSetCache', () => {
  const set = (id: number): { id: number; lastMs: number; firstMs: number } => ({ id, lastMs: 2_000, firstMs: 1_000 });
  /** Commits sets `from` to `to` - 1 (tuple `t<n>`), `perCommit` at a time. */
  const commitSets = (cache: AttrSetCache, from: number, to: number, perCommit: number): void => {
    for (let n = from; n < to; n++) {
      cache.note(`t${n}`, set(n));
      if ((n + 1 - from) % perCommit === 0 || n === to - 1) cache.commit();
    }
  };

  it('keeps what committed, never what was discarded, and its own pending sets until then', () => {
    const cache = new AttrSetCache();
    cache.note('a', set(1));
    expect(cache.get('a', 1_500)?.id).toBe(1);
    cache.discard();
    expect(cache.peek('a')).toBeUndefined();
    cache.note('a', set(2));
    cache.commit();
    expect(cache.get('a', 1_500)?.id).toBe(2);
    expect(cache.get('a', 2_500)).toBeUndefined();
    expect(cache.get('a', 1_500, 3_000)).toBeUndefined();
    cache.note('a', { id: 2, lastMs: 5_000, firstMs: 1_000 });
    cache.commit();
    expect(cache.get('a', 4_000)?.id).toBe(2);
    cache.clear();
    expect(cache.peek('a')).toBeUndefined();
  });

  it('past CACHE_SIZE sets, knows at least the last half of them and never more than CACHE_SIZE', () => {
    const cache = new AttrSetCache();
    const total = 3 * CACHE_SIZE + 123;
    commitSets(cache, 0, total, 1_000);
    let known = 0;
    for (let n = 0; n < total; n++) if (cache.peek(`t${n}`)) known++;
    expect(known).toBeGreaterThanOrEqual(CACHE_SIZE / 2);
    expect(known).toBeLessThanOrEqual(CACHE_SIZE);
    for (let n = total - CACHE_SIZE / 2; n < total; n++) expect(cache.peek(`t${n}`)?.id).toBe(n);
    expect(cache.peek('t0')).toBeUndefined();
  });

  it('a set committed again is known with its latest bounds, even while an older copy is kept', () => {
    const cache = new AttrSetCache();
    // A generation's worth: 't0' is among the older sets now, with its first bounds.
    commitSets(cache, 0, CACHE_SIZE / 2, 500);
    expect(cache.get('t0', 1_500)?.id).toBe(0);
    cache.note('t0', { id: 0, lastMs: 9_000, firstMs: 500 });
    cache.commit();
    expect(cache.get('t0', 8_000)?.id).toBe(0);
    expect(cache.get('t0', 600)?.id).toBe(0);
  });
});
