/**
 * Retention of the days' change generations (day_changes) on a real PostgreSQL: the rows of the days whose rollups
 * retention deletes go in the same run, those of the days it keeps stay; and a replica that kept the fleet chart's
 * closed buckets of such days (written before the generations existed, which read as none) reads them again
 * after the run, as a fresh replica does, not what it kept.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { FleetSeriesResponse } from '../../../../shared/src/api.ts';
import type { HookEvent } from '../../hooks/model.ts';
import { serveApi, type ApiServer } from '../../../test/support/api-server.ts';
import { hookEvent } from '../../../test/support/alerting.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { queryOnce } from '../../../test/support/postgres/server.ts';
import { recordingLogger } from '../../../test/support/recording-logger.ts';
import { Retention } from '../retention.ts';
import { PostgresStore } from './index.ts';

const HOUR = 3_600_000;
const DAY = 86_400_000;
const pgServer = useTestServer();
const apis: ApiServer[] = [];
afterEach(async () => {
  await Promise.all(apis.splice(0).map((a) => a.close()));
});

/** One execution of the hook `PostToolUse:<name>` at `timeMs`, under the cap. */
const execution = (name: string, timeMs: number): HookEvent => hookEvent({ hookName: `PostToolUse:${name}`, timeMs, stdoutChars: 1000, additionalContextChars: 0, team: 'web' });

async function fleet(store: PostgresStore, now: number): Promise<FleetSeriesResponse> {
  const api = await serveApi(store, now);
  apis.push(api);
  const res = await fetch(`${api.base}/api/v1/fleet/series?from=now-6d&step=1h&limit=1`, { signal: AbortSignal.timeout(10_000) });
  expect(res.status).toBe(200);
  return (await res.json()) as FleetSeriesResponse;
}

const executions = (f: FleetSeriesResponse): number => f.rest!.executions.reduce((s, n) => s + n, 0);

async function generationDays(url: string): Promise<number[]> {
  return (await queryOnce<{ day: string }>(url, 'SELECT DISTINCT day::text AS day FROM day_changes ORDER BY 1')).map((r) => Number(r.day));
}

describe('retention of the days\' change generations', () => {
  it('deletes the generations of the days whose rollups it deletes, and a replica keeping those days reads them again', { timeout: 60_000 }, async () => {
    const url = await pgServer.server().createDatabase();
    const open = (): Promise<PostgresStore> => PostgresStore.open({ url, poolSize: 3, dimensions: ['team'] }).then((s) => pgServer.track(s));
    const [leader, replica] = [await open(), await open()];
    const now = Date.now();
    const today = Math.floor(now / DAY);
    // Days 4 and 3 before today go with a retention of 2 days; the day before today stays.
    const old = [today - 4, today - 3];
    const kept = today - 1;
    const events: HookEvent[] = [];
    for (const [i, day] of [...old, kept].entries()) {
      for (let n = 0; n < 3; n++) {
        events.push(execution('big', day * DAY + (10 + n) * HOUR));
        events.push(execution(`small${i}`, day * DAY + (10 + n) * HOUR + 60_000));
      }
    }
    expect((await leader.ingest(events)).inserted).toHaveLength(events.length);
    expect(await generationDays(url)).toEqual([...old, kept]);
    // The old days as days written before migration 19: they have rollups, no generations.
    await queryOnce(url, `DELETE FROM day_changes WHERE day < ${kept}`);
    const first = await fleet(replica, now);
    // The rest (every hook but the biggest): the small hook of each day.
    expect(executions(first)).toBe(3 * 3);
    // Kept: asked again, the closed days are not read again.
    expect(await fleet(replica, now)).toEqual(first);

    const retention = new Retention({
      store: leader, eventsMs: 2 * DAY, rollupsMs: 2 * DAY,
      isLeader: () => true, logger: recordingLogger().logger, now: Date.now,
    });
    await retention.run();
    expect(retention.stats.succeeded).toBe(1);
    // The generations of the days gone are gone with them; those of the day kept stay.
    expect(await generationDays(url)).toEqual([kept]);
    const rollupDays = await queryOnce<{ day: string }>(url, `SELECT DISTINCT (bucket / ${DAY})::text AS day FROM rollup_1d ORDER BY 1`);
    expect(rollupDays.map((r) => Number(r.day))).toEqual([kept]);

    // The replica's next answer lacks the days deleted, as a fresh replica's does.
    const after = await fleet(replica, now);
    expect(executions(after)).toBe(3);
    const fresh = await open();
    const freshAnswer = await fleet(fresh, now);
    // The range the answer says it covered follows the retention bound, which a replica reads again within
    // boundsRefreshMs: the fresh one read it at its start (the 6 days' first hour is gone from the events, and
    // with the hours and days as long, from every source: retention.rollups names it).
    expect(freshAnswer.coverage).toMatchObject({ limitedBy: 'retention.rollups' });
    // The replica not yet aware of the prune answers the range asked; the fresh one starts where every source
    // starts: the hours they share are the same, and so are the counts.
    expect(after.buckets.slice(-freshAnswer.buckets.length)).toEqual(freshAnswer.buckets);
    expect(executions(freshAnswer)).toBe(executions(after));
    expect([freshAnswer.total, freshAnswer.hooks.map((h) => h.id)]).toEqual([after.total, after.hooks.map((h) => h.id)]);
    // Kept again from here on, and a second run that deletes nothing leaves it so.
    await retention.run();
    expect(retention.stats.succeeded).toBe(2);
    expect(await fleet(replica, now)).toEqual(after);
  });
});
