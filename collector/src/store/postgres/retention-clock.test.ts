/**
 * Retention on a leader whose clock is off. Replicas share the database, not a clock: the bounds retention deletes
 * by must be the database's time, or a leader whose clock is behind deletes the newest events as "from the
 * future", and one whose clock is ahead deletes events still within retention.events.
 */
import { describe, expect, it } from 'vitest';
import { hookEvent } from '../../../test/support/alerting.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { queryOnce } from '../../../test/support/postgres/server.ts';
import { recordingLogger } from '../../../test/support/recording-logger.ts';
import { Retention } from '../retention.ts';
import { PostgresStore } from './index.ts';

const pg = useTestServer();
const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;

describe('retention on a leader whose clock is off', () => {
  it('deletes by the database clock: an event of now stays with the leader 10 minutes behind or 40 days ahead', { timeout: 60_000 }, async () => {
    const url = await pg.server().createDatabase();
    const store = pg.track(await PostgresStore.open({ url }));
    const now = Date.now();
    // Events of now and of 10 days ago, stored by followers with the right time; and one past retention.events.
    const recent = [hookEvent({ timeMs: now - 1000 }), hookEvent({ timeMs: now - 10 * DAY_MS })];
    const expired = hookEvent({ timeMs: now - 31 * DAY_MS - 2 * 3_600_000 });
    expect((await store.ingest([...recent, expired])).inserted).toHaveLength(3);
    // The raw events (hour and day rollups are kept for retention.rollups).
    const count = async (): Promise<number> => Number((await queryOnce<{ n: string }>(url, 'SELECT count(*) AS n FROM events'))[0]?.n);
    for (const skewMs of [-10 * MINUTE_MS, 40 * DAY_MS]) {
      const retention = new Retention({
        store, eventsMs: 30 * DAY_MS, rollupsMs: 400 * DAY_MS, maxFutureSkewMs: 5 * MINUTE_MS,
        isLeader: () => true, logger: recordingLogger().logger, now: () => Date.now() + skewMs,
      });
      await retention.run();
      expect(retention.stats.succeeded, `skew ${skewMs} ms`).toBe(1);
      expect(await count(), `events left with the leader's clock ${skewMs} ms off`).toBe(2);
    }
  });
});
