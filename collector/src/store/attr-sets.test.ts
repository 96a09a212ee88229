/** An event's attribute tuple is exactly its attributes' JSON, whichever event's tuple was made before it. */
import { describe, expect, it } from 'vitest';
import type { HookEvent } from '../hooks/model.ts';
import { hookEvent } from '../../test/support/alerting.ts';
import { AttrSetCache } from './attr-sets.ts';
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
