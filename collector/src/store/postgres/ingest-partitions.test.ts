/**
 * An ingest reads the day partitions of its own events only. Its insert looks each event up in the days it can
 * already be stored in (under another hook, a legacy key, a day before when moved): planned against every
 * partition, a one-event request planned and locked every day's table and index three times, and took longer
 * with each day retention.events keeps, or a backfill or a clock far off made.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { hookEvent } from '../../../test/support/alerting.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { PostgresStore } from './index.ts';

const pgServer = useTestServer();
const DAY_MS = 86_400_000;
const DAYS = 300;

/** The text and parameters of the statements the store's connections are asked whose text matches `pattern`. */
function capture(pattern: RegExp): { seen: { text: string; values: unknown[] }[]; restore: () => void } {
  type Query = (this: pg.Client, ...args: unknown[]) => unknown;
  const query = pg.Client.prototype.query as unknown as Query;
  const seen: { text: string; values: unknown[] }[] = [];
  const wrapped: Query = function (...args) {
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text ?? '';
    if (pattern.test(text)) seen.push({ text, values: Array.isArray(args[1]) ? (args[1] as unknown[]) : [] });
    return query.apply(this, args);
  };
  pg.Client.prototype.query = wrapped as unknown as typeof pg.Client.prototype.query;
  return { seen, restore: () => void (pg.Client.prototype.query = query as unknown as typeof pg.Client.prototype.query) };
}

/** The names of the tables a plan (EXPLAIN FORMAT JSON) reads. */
function relations(node: Record<string, unknown>, out: string[] = []): string[] {
  if (typeof node['Relation Name'] === 'string') out.push(node['Relation Name']);
  for (const child of (node['Plans'] as Record<string, unknown>[] | undefined) ?? []) relations(child, out);
  return out;
}

describe('the insert of an ingest against many day partitions', () => {
  it(`plans the partitions of its events' days only, with ${DAYS} days stored`, { timeout: 120_000 }, async () => {
    const url = await pgServer.server().createDatabase();
    const store = pgServer.track(await PostgresStore.open({ url, poolSize: 2 }));
    const now = Date.now();
    // Days ahead as a client clock far off makes them (stored, kept until they are old).
    await store.ingest(Array.from({ length: DAYS }, (_, d) => hookEvent({ timeMs: now + (d + 1) * DAY_MS })));
    const c = capture(/^\s*WITH alt AS MATERIALIZED/);
    try {
      expect((await store.ingest([hookEvent({ timeMs: now })])).inserted).toHaveLength(1);
    } finally {
      c.restore();
    }
    expect(c.seen).toHaveLength(1);
    const { text, values } = c.seen[0]!;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const days = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'events'::regclass`);
      expect(days.rows[0]!.n).toBeGreaterThan(DAYS);
      const plan = await client.query<{ 'QUERY PLAN': { Plan: Record<string, unknown> }[] }>(`EXPLAIN (FORMAT JSON) ${text}`, values);
      const read = relations(plan.rows[0]!['QUERY PLAN'][0]!.Plan).filter((name) => name.startsWith('events_d'));
      // Three probes, each of today and the day before at most (an event moved to its receive time).
      expect(new Set(read).size).toBeLessThanOrEqual(2);
      expect(read.length).toBeGreaterThan(0);
      expect(read.length).toBeLessThanOrEqual(6);
    } finally {
      await client.end();
    }
  });
});
