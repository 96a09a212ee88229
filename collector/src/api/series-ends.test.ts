/**
 * Where each series bucket ends, on both stores: a whole bucket a step after its start, the last one at `to` when
 * `to` cuts it, so a client can tell a bucket still filling from a dip. The guard trims' buckets end the same way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetSeriesResponse, HooksResponse, SeriesResponse } from '../../../shared/src/api.ts';
import { GUARD_TRIM_EVENT, type GuardTrimsResponse } from '../../../shared/src/guard-trims.ts';
import { getJson, postOtlp, startTestService, type TestService } from '../../test/helpers.ts';
import { useTestServer } from '../../test/support/postgres/fixture.ts';

const NOW = Date.parse('2026-11-30T12:00:00Z');

const pg = useTestServer();

function event(t: string, seq: number): unknown {
  const attrs: Record<string, string> = {
    'event.name': 'hook_execution_complete', hook_event: 'SessionStart', hook_name: 'SessionStart:edge', 'session.id': 'ends-test', 'event.sequence': String(seq),
    'event.timestamp': t, num_hooks: '1', num_success: '1', additional_context_chars: '4000', num_outputs_persisted: '0',
  };
  return { attributes: Object.entries(attrs).map(([key, v]) => ({ key, value: { stringValue: v } })) };
}

/** A record `hookwatch guard --report` sends for an output it trimmed, for the same hook. */
function guardTrim(t: string, sentChars: number): unknown {
  const attrs: Record<string, string> = {
    'event.name': GUARD_TRIM_EVENT, hook_event: 'SessionStart', hook_name: 'SessionStart:edge', 'session.id': 'ends-test', 'event.timestamp': t,
    field: 'stdout', sent_chars: String(sentChars), kept_chars: '9500',
  };
  return { attributes: Object.entries(attrs).map(([key, v]) => ({ key, value: { stringValue: v } })) };
}

const backends: { name: string; db: () => Promise<Record<string, string>> }[] = [
  { name: 'sqlite', db: async () => ({}) },
  { name: 'postgres', db: async () => ({ HOOKWATCH_DB: await pg.server().createDatabase() }) },
];

describe.each(backends)('series bucket ends on $name', (backend) => {
  let service: TestService;
  let id: string;
  /** The service's clock: NOW unless a test moves it (and puts it back). */
  let clock = NOW;
  beforeAll(async () => {
    service = await startTestService(await backend.db(), { now: () => clock });
    const times = ['2026-11-30T09:10:00Z', '2026-11-30T10:30:00Z', '2026-11-30T11:05:00Z', '2026-11-30T11:20:00Z', '2026-11-30T11:40:00Z'];
    const trims = [guardTrim('2026-11-30T09:15:00Z', 12_000), guardTrim('2026-11-30T11:05:00Z', 15_000), guardTrim('2026-11-30T11:21:00Z', 11_000)];
    const body = JSON.stringify({ resourceLogs: [{ resource: { attributes: [] }, scopeLogs: [{ logRecords: [...times.map((t, i) => event(t, i + 1)), ...trims] }] }] });
    expect((await postOtlp(service.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
    const hooks = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-1d');
    id = hooks.body.hooks[0]?.id ?? '';
    expect(id).toMatch(/^[0-9a-f]{16}$/);
  }, 60_000);
  afterAll(() => service?.close());

  it('ends the last bucket at `to` when `to` cuts it, and every other a step after its start', async () => {
    const { status, body } = await getJson<SeriesResponse>(service.httpUrl, `/api/v1/hooks/${id}/series?from=2026-11-30T08:40:00Z&to=2026-11-30T11:23:00Z&step=1h`);
    expect(status).toBe(200);
    expect(body.buckets.map((b) => [b.start, b.end, b.executions])).toEqual([
      ['2026-11-30T08:00:00.000Z', '2026-11-30T09:00:00.000Z', 0],
      ['2026-11-30T09:00:00.000Z', '2026-11-30T10:00:00.000Z', 1],
      ['2026-11-30T10:00:00.000Z', '2026-11-30T11:00:00.000Z', 1],
      ['2026-11-30T11:00:00.000Z', '2026-11-30T11:23:00.000Z', 2],
    ]);
    // The first bucket starts before `from` on the step's grid and counts from `from`, as the answer says.
    expect(body.from).toBe('2026-11-30T08:40:00.000Z');
    const minutes = await getJson<SeriesResponse>(service.httpUrl, `/api/v1/hooks/${id}/series?from=2026-11-30T11:00:00Z&to=2026-11-30T11:23:00Z&step=10m`);
    expect(minutes.body.buckets.map((b) => [b.start.slice(11, 16), b.end.slice(11, 16), b.executions])).toEqual([['11:00', '11:10', 1], ['11:10', '11:20', 0], ['11:20', '11:23', 1]]);
  });

  it('ends the bucket still filling now when `to` is later (a firing alert\'s link widened to whole buckets)', async () => {
    // Now is 12:00 on 30/11: that day's bucket runs until now, not until `to` the next midnight.
    const { status, body } = await getJson<SeriesResponse>(service.httpUrl, `/api/v1/hooks/${id}/series?from=2026-11-29T00:00:00Z&to=2026-12-01T00:00:00Z&step=1d`);
    expect(status).toBe(200);
    expect(body.buckets.map((b) => [b.start, b.end, b.executions])).toEqual([
      ['2026-11-29T00:00:00.000Z', '2026-11-30T00:00:00.000Z', 0],
      ['2026-11-30T00:00:00.000Z', '2026-11-30T12:00:00.000Z', 5],
    ]);
    // Buckets wholly ahead of now end a step after their start, as before: they are not cut, only empty.
    const hours = await getJson<SeriesResponse>(service.httpUrl, `/api/v1/hooks/${id}/series?from=2026-11-30T10:00:00Z&to=2026-11-30T14:00:00Z&step=90m`);
    expect(hours.body.buckets.map((b) => [b.start.slice(11, 16), b.end.slice(11, 16)])).toEqual([['09:00', '10:30'], ['10:30', '12:00'], ['12:00', '13:30'], ['13:30', '14:00']]);
    const fleet = await getJson<FleetSeriesResponse>(service.httpUrl, '/api/v1/fleet/series?from=2026-11-29T00:00:00Z&to=2026-12-01T00:00:00Z&step=1d');
    expect(fleet.body.ends).toEqual(['2026-11-30T00:00:00.000Z', '2026-11-30T12:00:00.000Z']);
    const trims = await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${id}/guard-trims?from=2026-11-29T00:00:00Z&to=2026-12-01T00:00:00Z&step=1d`);
    expect(trims.body.buckets.map((b) => [b.start, b.end])).toEqual([['2026-11-30T00:00:00.000Z', '2026-11-30T12:00:00.000Z']]);
  });

  it('ends the bucket still filling at the time of the answer, not at `to` rounded up to the minute, in a range ending now', async () => {
    // 11:23:27: the range of the last hour ends at 11:24, the whole minute the store counts, but its last minute
    // has run 27 seconds: whole, it reads as a dip at the right edge of every refresh.
    clock = Date.parse('2026-11-30T11:23:27Z');
    try {
      const { body } = await getJson<SeriesResponse>(service.httpUrl, `/api/v1/hooks/${id}/series?from=now-1h&to=now`);
      expect([body.from, body.to, body.step]).toEqual(['2026-11-30T10:23:00.000Z', '2026-11-30T11:24:00.000Z', 60]);
      expect(body.buckets.at(-1)).toMatchObject({ start: '2026-11-30T11:23:00.000Z', end: '2026-11-30T11:23:27.000Z' });
      // The first minute the store counts whole, from `from`: not cut. Every other bucket is whole too.
      expect(body.buckets.slice(0, -1).every((b) => Date.parse(b.end) - Date.parse(b.start) === 60_000)).toBe(true);
      // The bucket holding now, over ranges the dashboard offers and a firing alert's link widened to whole buckets.
      for (const [q, last] of [['from=now-6h&to=now', ['11:22', '11:23:27']], ['from=now-24h&to=now', ['11:20', '11:23:27']], ['from=now-7d&to=now&step=3h', ['09:00', '11:23:27']], ['from=2026-11-30T11:00:00Z&to=2026-11-30T12:00:00Z&step=10m', ['11:20', '11:23:27']]] as const) {
        const r = await getJson<SeriesResponse>(service.httpUrl, `/api/v1/hooks/${id}/series?${q}`);
        expect(r.status, q).toBe(200);
        const filling = r.body.buckets.find((b) => b.start === `2026-11-30T${last[0]}:00.000Z`);
        expect(filling?.end.slice(11, 19), q).toBe(last[1]);
      }
      // Written to the second, as `start` is: rounded up, so a minute 400 ms old is cut too.
      for (const [t, end] of [['11:23:26.400', '11:23:27.000'], ['11:23:00.400', '11:23:01.000']]) {
        clock = Date.parse(`2026-11-30T${t}Z`);
        const r = await getJson<SeriesResponse>(service.httpUrl, `/api/v1/hooks/${id}/series?from=now-1h&to=now`);
        expect(r.body.buckets.at(-1)?.end, t).toBe(`2026-11-30T${end}Z`);
      }
      clock = Date.parse('2026-11-30T11:23:27Z');
      const fleet = await getJson<FleetSeriesResponse>(service.httpUrl, '/api/v1/fleet/series?from=now-1h&to=now');
      expect(fleet.body.ends.at(-1)).toBe('2026-11-30T11:23:27.000Z');
      const trims = await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${id}/guard-trims?from=now-1h&to=now&step=10m`);
      expect(trims.body.buckets.map((b) => [b.start.slice(11, 16), b.end.slice(11, 19)])).toEqual([['11:00', '11:10:00'], ['11:20', '11:23:27']]);
    } finally {
      clock = NOW;
    }
  });

  it('ends every bucket a step after its start when the range is aligned to the step', async () => {
    const { body } = await getJson<SeriesResponse>(service.httpUrl, `/api/v1/hooks/${id}/series?from=2026-11-30T08:00:00Z&to=2026-11-30T12:00:00Z&step=1h`);
    expect(body.buckets.map((b) => Date.parse(b.end) - Date.parse(b.start))).toEqual([3_600_000, 3_600_000, 3_600_000, 3_600_000]);
    expect(body.buckets.at(-1)?.end).toBe('2026-11-30T12:00:00.000Z');
    expect(body.buckets.at(-1)?.executions).toBe(3);
  });

  it('gives the fleet series the same ends, aligned with its bucket starts', async () => {
    const cut = await getJson<FleetSeriesResponse>(service.httpUrl, '/api/v1/fleet/series?from=2026-11-30T08:40:00Z&to=2026-11-30T11:23:00Z&step=1h');
    expect(cut.status).toBe(200);
    expect(cut.body.ends).toEqual(['2026-11-30T09:00:00.000Z', '2026-11-30T10:00:00.000Z', '2026-11-30T11:00:00.000Z', '2026-11-30T11:23:00.000Z']);
    expect(cut.body.hooks[0]?.executions).toEqual([0, 1, 1, 2]);
    const aligned = await getJson<FleetSeriesResponse>(service.httpUrl, '/api/v1/fleet/series?from=2026-11-30T08:00:00Z&to=2026-11-30T12:00:00Z&step=1h');
    expect(aligned.body.ends).toEqual(['2026-11-30T09:00:00.000Z', '2026-11-30T10:00:00.000Z', '2026-11-30T11:00:00.000Z', '2026-11-30T12:00:00.000Z']);
  });

  it('ends the guard trims\' buckets as the series\' do: the last one at `to` when `to` cuts it', async () => {
    const cut = await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${id}/guard-trims?from=2026-11-30T08:40:00Z&to=2026-11-30T11:23:00Z&step=1h`);
    expect(cut.status).toBe(200);
    expect(cut.body.buckets.map((b) => [b.start, b.end, b.trims, b.maxSentChars])).toEqual([
      ['2026-11-30T09:00:00.000Z', '2026-11-30T10:00:00.000Z', 1, 12_000],
      ['2026-11-30T11:00:00.000Z', '2026-11-30T11:23:00.000Z', 2, 15_000],
    ]);
    const minutes = await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${id}/guard-trims?from=2026-11-30T11:00:00Z&to=2026-11-30T11:23:00Z&step=10m`);
    expect(minutes.body.buckets.map((b) => [b.start.slice(11, 16), b.end.slice(11, 16), b.trims])).toEqual([['11:00', '11:10', 1], ['11:20', '11:23', 1]]);
    const aligned = await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${id}/guard-trims?from=2026-11-30T08:00:00Z&to=2026-11-30T12:00:00Z&step=1h`);
    expect(aligned.body.buckets.map((b) => [b.start, b.end])).toEqual([
      ['2026-11-30T09:00:00.000Z', '2026-11-30T10:00:00.000Z'],
      ['2026-11-30T11:00:00.000Z', '2026-11-30T12:00:00.000Z'],
    ]);
    // Each bucket ends where the series bucket with the same start does.
    const series = await getJson<SeriesResponse>(service.httpUrl, `/api/v1/hooks/${id}/series?from=2026-11-30T08:40:00Z&to=2026-11-30T11:23:00Z&step=1h`);
    const seriesEnds = new Map(series.body.buckets.map((b) => [b.start, b.end]));
    for (const b of cut.body.buckets) expect(b.end).toBe(seriesEnds.get(b.start));
  });
});
