/**
 * Retention on a leader whose clock is off. Replicas share the database, not a clock: the bounds retention deletes
 * by must be the database's time, or one whose clock is ahead deletes events still within retention.events. And
 * a replica whose clock runs ahead of the database's judges the future skew by its own: what it accepted stays.
 */
import { describe, expect, it } from 'vitest';
import { decodeLogsJson } from '../../otlp/decode-json.ts';
import { HookIngest } from '../../pipeline/hook-ingest.ts';
import { silentLogger } from '../../telemetry/logger.ts';
import { hookEvent, otlpHookBody } from '../../../test/support/alerting.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { queryOnce } from '../../../test/support/postgres/server.ts';
import { recordingLogger } from '../../../test/support/recording-logger.ts';
import { Retention } from '../retention.ts';
import { PostgresStore } from './index.ts';

const pg = useTestServer();
const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;
const count = async (url: string): Promise<number> => Number((await queryOnce<{ n: string }>(url, 'SELECT count(*) AS n FROM events'))[0]?.n);

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
    for (const skewMs of [-10 * MINUTE_MS, 40 * DAY_MS]) {
      const retention = new Retention({
        store, eventsMs: 30 * DAY_MS, rollupsMs: 400 * DAY_MS,
        isLeader: () => true, logger: recordingLogger().logger, now: () => Date.now() + skewMs,
      });
      await retention.run();
      expect(retention.stats.succeeded, `skew ${skewMs} ms`).toBe(1);
      expect(await count(url), `events left with the leader's clock ${skewMs} ms off`).toBe(2);
    }
  });

  it('keeps what a replica whose clock runs 10 minutes ahead accepted: within its skew, and clamped to its time', { timeout: 60_000 }, async () => {
    const url = await pg.server().createDatabase();
    const store = pg.track(await PostgresStore.open({ url }));
    const ahead = (): number => Date.now() + 10 * MINUTE_MS;
    const ingest = new HookIngest({ store, nearThreshold: 8000, dimensions: [], maxPending: 2, maxFutureSkewMs: 5 * MINUTE_MS, logger: silentLogger, now: ahead });
    const sentAt = Date.now();
    // 8 minutes ahead of the database is within the replica's skew; a day ahead is clamped to the replica's time.
    const body = otlpHookBody([
      { hookName: 'Stop', timeMs: sentAt + 8 * MINUTE_MS, outputsPersisted: 0, additionalContextChars: 0 },
      { hookName: 'Stop', timeMs: sentAt + DAY_MS, outputsPersisted: 0, additionalContextChars: 0 },
    ]);
    const r = await ingest.consumeLogs(decodeLogsJson(body), { signal: 'logs', body: Buffer.from(body), encoding: 'json', receivedAtMs: ahead() });
    expect(r.rejected).toBe(0);
    expect(ingest.stats).toMatchObject({ stored: 2, clampedFuture: 1 });
    const { logger, lines } = recordingLogger();
    // The leader's clock is right: the database's time is the replica's minus 10 minutes.
    const retention = new Retention({ store, eventsMs: 30 * DAY_MS, rollupsMs: 400 * DAY_MS, isLeader: () => true, logger, now: Date.now });
    await retention.run();
    expect(retention.stats.succeeded).toBe(1);
    expect(await count(url)).toBe(2);
    expect([...(await store.hookCounters({ fromMs: sentAt, toMs: sentAt + DAY_MS })).values()].map((c) => c.executions)).toEqual([2]);
    expect(lines.filter((l) => l.msg.startsWith('retention removed'))).toEqual([]);
  });
});
