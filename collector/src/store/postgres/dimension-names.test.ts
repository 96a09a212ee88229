/**
 * Configured dimension names are written into SQL as string literals (the key read from each attribute set's
 * extra). On a server with standard_conforming_strings off (a legacy setting some databases still carry), a
 * backslash in a plain literal escapes the next character: the literal must read the same there.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PostgresStore } from './index.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { hookEvent } from '../../../test/support/alerting.ts';

const t = useTestServer({ settings: { standard_conforming_strings: 'off' } });

/** Names with a backslash, a quote, both, and one that would end the literal early were the backslash an escape. */
const DIMENSIONS = ['path\\', "o'brien", 'dir\\name', "x\\'; DROP TABLE hooks; --"];

describe('configured dimension names on a server with standard_conforming_strings off', () => {
  it('opens, filters and breaks down by each name as it is spelled, and changes no table it does not own', async () => {
    const url = await t.server().createDatabase();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    t.defer(() => admin.end());
    expect((await admin.query<{ v: string }>("SELECT current_setting('standard_conforming_strings') AS v")).rows[0]?.v).toBe('off');
    const store = t.track(await PostgresStore.open({ url, dimensions: DIMENSIONS }));
    const now = Date.now();
    const e = hookEvent({ timeMs: now - 60_000 });
    e.extra = Object.fromEntries(DIMENSIONS.map((d, i) => [d, `value-${i}`]));
    // Another event whose attributes carry the names as they would read with the backslash taken as an escape.
    const other = hookEvent({ timeMs: now - 60_000 });
    other.extra = { path: 'value-0', dirname: 'value-2' };
    expect((await store.ingest([e, other])).inserted).toHaveLength(2);
    const range = { fromMs: now - 3_600_000, toMs: now + 60_000 };
    for (const [i, d] of DIMENSIONS.entries()) {
      expect((await store.hookCounters({ ...range, filters: { [d]: `value-${i}` } })).get(e.hookId)?.executions, d).toBe(1);
      const rows = await store.breakdown(e.hookId, d, range);
      expect(rows.map((r) => [r.value, r.executions]).sort(), d).toEqual([['', 1], [`value-${i}`, 1]]);
    }
    expect((await admin.query('SELECT count(*)::int AS n FROM hooks')).rows[0]?.n).toBe(1);
  });
});
