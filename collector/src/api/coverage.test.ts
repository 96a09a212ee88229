/**
 * Past retention.events an answer names the range it covered: a filter only raw events answer (user.id) counts
 * nothing there, so its `from` is where the events kept start; any other read has whole hours there, so its ends
 * widen to the hours they fall in. `coverage` names the range asked and what limited it. Both stores, the data
 * written while retention kept it, then served under a short retention, as after a restart with a new setting.
 * Past retention.rollups (or what a prune under it deleted) no rollup is left: any answer starts where they do.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BreakdownResponse, FleetSeriesResponse, HookSummary, OverviewResponse, RangeCoverage, SeriesResponse } from '../../../shared/src/api.ts';
import type { HookEvent } from '../hooks/model.ts';
import { hookId } from '../hooks/extract.ts';
import { PostgresStore } from '../store/postgres/index.ts';
import { SqliteStore } from '../store/sqlite/index.ts';
import { DAY, HOUR, MINUTE } from '../store/segments.ts';
import type { Store } from '../store/store.ts';
import { getJson, startTestService, type TestService } from '../../test/helpers.ts';
import { useTestServer } from '../../test/support/postgres/fixture.ts';

const pg = useTestServer();
const LONG = { eventsMs: 36500 * DAY, minuteRollupsMs: 36500 * DAY };
const NOW = Date.now();
/** Five days ago, on the hour: beyond the 2d events retention served. */
const OLD = Math.floor((NOW - 5 * DAY) / HOUR) * HOUR;
/** Three hours ago, within it. */
const RECENT = Math.floor((NOW - 3 * HOUR) / MINUTE) * MINUTE;
const iso = (ms: number): string => new Date(ms).toISOString();
/** Where the events kept start under 2d (minute-sources.ts): the hour holding now - 2d (a minute's lead). */
const eventsFrom = (at: number): number => Math.floor((at + MINUTE - 2 * DAY) / HOUR) * HOUR;

let seq = 0;
function ev(timeMs: number, userId: string, sizes: boolean): HookEvent {
  const hookName = 'PostToolUse:Bash';
  return {
    kind: 'complete', dedupKey: `c-${++seq}`, hookId: hookId('PostToolUse', hookName), hookEvent: 'PostToolUse', hookName, timeMs,
    numHooks: 1, numSuccess: 1, numBlocking: 0, numNonBlockingError: 0, numCancelled: 0, durationMs: 10, stdoutChars: sizes ? 100 : null,
    additionalContextChars: null, systemMessageChars: null, initialUserMessageChars: null, outputsPersisted: sizes ? 0 : null, sizesKnown: sizes,
    status: sizes ? 'ok' : 'unknown', serviceName: 'claude-code', serviceVersion: '2.1.332', sessionId: `s-${userId}`, userId, userEmail: '',
    userAccountUuid: '', organizationId: '', terminalType: 'xterm', source: 'otlp', extra: {},
  };
}

/** u1 ran five times five days ago (three without sizes) and once three hours ago; u2 once five days ago. */
const EVENTS = [
  ev(OLD + 10 * MINUTE, 'u1', true), ev(OLD + 20 * MINUTE, 'u1', false), ev(OLD + 70 * MINUTE, 'u1', false),
  ev(OLD + 130 * MINUTE, 'u1', false), ev(OLD + 150 * MINUTE, 'u1', true), ev(OLD + 40 * MINUTE, 'u2', true),
  ev(RECENT, 'u1', true),
];
const BASH = hookId('PostToolUse', 'PostToolUse:Bash');

const backends: { name: string; write: (dir: string) => Promise<{ store: Store; db: string }> }[] = [
  {
    name: 'sqlite',
    write: async (dir) => {
      const db = join(dir, 'c.db');
      return { store: new SqliteStore({ path: db, synchronous: 'normal', dimensions: [], retention: LONG }), db };
    },
  },
  {
    name: 'postgres',
    write: async () => {
      const db = await pg.server().createDatabase();
      return { store: await PostgresStore.open({ url: db, dimensions: [], poolSize: 2, retention: LONG }), db };
    },
  },
];

/**
 * A service on `backend`'s store holding EVENTS (after `prepare`, if given), started with `env`, for the describe
 * block it is called in; `get` reads an answer with the horizon as the server reckoned it, read on both sides.
 */
function servedStore(backend: (typeof backends)[number], env: Record<string, string>, horizon: (at: number) => number, prepare?: (store: Store) => Promise<void>) {
  let dir = '';
  let service: TestService;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hookwatch-coverage-'));
    const { store, db } = await backend.write(dir);
    expect((await store.ingest(EVENTS)).inserted).toHaveLength(EVENTS.length);
    await prepare?.(store);
    await store.close();
    service = await startTestService({ HOOKWATCH_DB: db, ...env });
  }, 120_000);
  afterAll(async () => {
    await service?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    url: (): string => service.httpUrl,
    async get<T>(path: string): Promise<{ body: T; horizons: string[] }> {
      const before = horizon(Date.now());
      const { status, body } = await getJson<T>(service.httpUrl, path);
      expect(status).toBe(200);
      return { body, horizons: [iso(before), iso(horizon(Date.now()))] };
    },
  };
}

describe.each(backends)('answers past retention.events name the range covered ($name)', (backend) => {
  const { get } = servedStore(backend, { HOOKWATCH_RETENTION_EVENTS: '2d', HOOKWATCH_RETENTION_MINUTE_ROLLUPS: '2d' }, eventsFrom);

  it('starts an answer only raw events give where the events kept start, and says so', async () => {
    const from = iso(OLD - DAY + 17 * MINUTE);
    const to = iso(NOW + HOUR);
    const q = `from=${from}&to=${to}&user.id=u1`;
    const coverage = { askedFrom: from, askedTo: iso(Math.ceil((NOW + HOUR) / MINUTE) * MINUTE), limitedBy: 'retention.events' };
    const overview = await get<OverviewResponse>(`/api/v1/overview?${q}`);
    expect(overview.horizons).toContain(overview.body.from);
    expect(overview.body.to).toBe(coverage.askedTo);
    expect(overview.body.coverage).toEqual(coverage);
    // What it counts is u1's one execution since then: the five before are outside the range it names.
    expect(overview.body.totals.executions).toBe(1);
    const detail = await get<{ from: string; to: string; coverage?: RangeCoverage; hook: HookSummary }>(`/api/v1/hooks/${BASH}?${q}`);
    expect(detail.horizons).toContain(detail.body.from);
    expect(detail.body.coverage).toEqual(coverage);
    const series = await get<SeriesResponse>(`/api/v1/hooks/${BASH}/series?${q}&step=1h`);
    expect(series.horizons).toContain(series.body.from);
    expect(series.body.coverage).toEqual(coverage);
    expect(series.horizons).toContain(series.body.buckets[0]?.start);
    expect(series.body.buckets.reduce((s, b) => s + b.executions, 0)).toBe(1);
    // A breakdown by a dimension no rollup keeps, unfiltered: the same.
    const byUser = await get<BreakdownResponse>(`/api/v1/hooks/${BASH}/breakdown?from=${from}&to=${to}&dimension=user.id`);
    expect(byUser.horizons).toContain(byUser.body.from);
    expect(byUser.body.coverage).toEqual(coverage);
    expect(byUser.body.rows.map((r) => [r.value, r.executions])).toEqual([['u1', 1]]);
  });

  it('names an empty range when an answer only raw events give lies wholly before the events kept', async () => {
    const q = `from=${iso(OLD - DAY)}&to=${iso(OLD + 3 * HOUR)}&user.id=u1`;
    const coverage = { askedFrom: iso(OLD - DAY), askedTo: iso(OLD + 3 * HOUR), limitedBy: 'retention.events' };
    const overview = await get<OverviewResponse>(`/api/v1/overview?${q}`);
    expect([overview.body.from, overview.body.to]).toEqual([iso(OLD + 3 * HOUR), iso(OLD + 3 * HOUR)]);
    expect(overview.body.coverage).toEqual(coverage);
    expect(overview.body.totals.executions).toBe(0);
    const series = await get<SeriesResponse>(`/api/v1/hooks/${BASH}/series?${q}&step=1h`);
    expect([series.body.from, series.body.to, series.body.buckets]).toEqual([iso(OLD + 3 * HOUR), iso(OLD + 3 * HOUR), []]);
    expect(series.body.coverage).toEqual(coverage);
  });

  it('answers the empty range such an answer names, sent back as from and to, as empty again, with the same coverage', async () => {
    const first = await get<OverviewResponse>(`/api/v1/overview?from=${iso(OLD - DAY)}&to=${iso(OLD + 3 * HOUR)}&user.id=u1`);
    expect(first.body.from).toBe(first.body.to);
    // As a client paging or refreshing would: the answer's own range asked again.
    const q = `from=${first.body.from}&to=${first.body.to}&user.id=u1`;
    const coverage = { askedFrom: first.body.from, askedTo: first.body.to, limitedBy: 'retention.events' };
    const empty = { from: first.body.from, to: first.body.to, coverage };
    const overview = await get<OverviewResponse>(`/api/v1/overview?${q}`);
    expect(overview.body).toMatchObject({ ...empty, hooks: 0, statusCounts: { over: 0, near: 0, ok: 0, unknown: 0 }, totals: expect.objectContaining({ executions: 0 }) });
    expect((await get<{ hooks: unknown[] }>(`/api/v1/hooks?${q}`)).body).toMatchObject({ ...empty, hooks: [], total: 0 });
    expect((await get<{ hook: HookSummary }>(`/api/v1/hooks/${BASH}?${q}`)).body).toMatchObject({ ...empty, hook: expect.objectContaining({ executions: 0 }) });
    expect((await get<SeriesResponse>(`/api/v1/hooks/${BASH}/series?${q}&step=1h`)).body).toMatchObject({ ...empty, buckets: [] });
    expect((await get<BreakdownResponse>(`/api/v1/hooks/${BASH}/breakdown?${q}&dimension=user.id`)).body).toMatchObject({ ...empty, rows: [], total: 0 });
    expect((await get<FleetSeriesResponse>(`/api/v1/fleet/series?${q}`)).body).toMatchObject({ ...empty, buckets: [], hooks: [], rest: null, total: 0 });
  });

  it('answers a range whose from is its to as empty wherever it falls, never the minute or hour around it', async () => {
    // Within the events kept, mid-minute: nothing counted, though an execution is in that minute.
    const at = iso(RECENT + 30_000);
    const recent = await get<OverviewResponse>(`/api/v1/overview?from=${at}&to=${at}`);
    expect([recent.body.from, recent.body.to, recent.body.coverage, recent.body.totals.executions]).toEqual([iso(RECENT), iso(RECENT), undefined, 0]);
    for (const step of ['1m', '1h', '1d']) {
      const series = await get<SeriesResponse>(`/api/v1/hooks/${BASH}/series?from=${at}&to=${at}&step=${step}`);
      expect([series.body.from, series.body.to, series.body.buckets], step).toEqual([iso(RECENT), iso(RECENT), []]);
      const fleet = await get<FleetSeriesResponse>(`/api/v1/fleet/series?from=${at}&to=${at}&step=${step}`);
      expect([fleet.body.from, fleet.body.to, fleet.body.buckets, fleet.body.hooks, fleet.body.total], step).toEqual([iso(RECENT), iso(RECENT), [], [], 0]);
    }
    // Past the events kept, inside an hour of rollups with executions: not widened to that hour.
    const old = iso(OLD + 17 * MINUTE);
    const hourly = await get<OverviewResponse>(`/api/v1/overview?from=${old}&to=${old}`);
    expect([hourly.body.from, hourly.body.to, hourly.body.totals.executions, hourly.body.hooks]).toEqual([old, old, 0, 0]);
    const breakdown = await get<BreakdownResponse>(`/api/v1/hooks/${BASH}/breakdown?from=${old}&to=${old}`);
    expect([breakdown.body.from, breakdown.body.to, breakdown.body.rows]).toEqual([old, old, []]);
  });

  it('widens a range past retention.events to the whole hours the hour rollups answer, and says so', async () => {
    const from = OLD + 17 * MINUTE;
    const to = OLD + 2 * HOUR + 5 * MINUTE;
    const q = `from=${iso(from)}&to=${iso(to)}`;
    const coverage = { askedFrom: iso(from), askedTo: iso(to), limitedBy: 'retention.events' };
    const overview = await get<OverviewResponse>(`/api/v1/overview?${q}`);
    expect([overview.body.from, overview.body.to]).toEqual([iso(OLD), iso(OLD + 3 * HOUR)]);
    expect(overview.body.coverage).toEqual(coverage);
    // Every execution of those three hours, the one at OLD + 10 minutes and the one at OLD + 150 minutes among them.
    expect(overview.body.totals.executions).toBe(6);
    const series = await get<SeriesResponse>(`/api/v1/hooks/${BASH}/series?${q}&step=1h`);
    expect([series.body.from, series.body.to]).toEqual([iso(OLD), iso(OLD + 3 * HOUR)]);
    expect(series.body.coverage).toEqual(coverage);
    // Whole hours, so no bucket is partial.
    expect(series.body.buckets.map((b) => [b.start, b.end, b.executions])).toEqual([
      [iso(OLD), iso(OLD + HOUR), 3], [iso(OLD + HOUR), iso(OLD + 2 * HOUR), 1], [iso(OLD + 2 * HOUR), iso(OLD + 3 * HOUR), 2],
    ]);
    const byVersion = await get<BreakdownResponse>(`/api/v1/hooks/${BASH}/breakdown?${q}`);
    expect([byVersion.body.from, byVersion.body.to]).toEqual([iso(OLD), iso(OLD + 3 * HOUR)]);
    expect(byVersion.body.coverage).toEqual(coverage);
  });

  it('answers a range retention keeps as asked, with no coverage note', async () => {
    const from = RECENT - 17 * MINUTE;
    const q = `from=${iso(from)}&to=${iso(RECENT + 5 * MINUTE)}&user.id=u1`;
    const overview = await get<OverviewResponse>(`/api/v1/overview?${q}`);
    expect(overview.body.from).toBe(iso(from));
    expect(overview.body.coverage).toBeUndefined();
    expect(overview.body.totals.executions).toBe(1);
    const series = await get<SeriesResponse>(`/api/v1/hooks/${BASH}/series?${q}&step=1h`);
    expect(series.body.coverage).toBeUndefined();
  });
});

/** Where the hour and day rollups kept start under 1d (minute-sources.ts): the hour after now - 1d (a minute's lead). */
const rollupsFrom = (at: number): number => Math.ceil((at + MINUTE - DAY) / HOUR) * HOUR;

describe.each(backends)('answers past retention.rollups name the range covered ($name)', (backend) => {
  const { get } = servedStore(backend, { HOOKWATCH_RETENTION_EVENTS: '1h', HOOKWATCH_RETENTION_MINUTE_ROLLUPS: '1h', HOOKWATCH_RETENTION_ROLLUPS: '1d' }, rollupsFrom);

  it('starts a range reaching past the rollups kept where they start, and says so', async () => {
    const from = iso(OLD - DAY);
    const to = iso(NOW + HOUR);
    const coverage = { askedFrom: from, askedTo: iso(Math.ceil((NOW + HOUR) / MINUTE) * MINUTE), limitedBy: 'retention.rollups' };
    const overview = await get<OverviewResponse>(`/api/v1/overview?from=${from}&to=${to}`);
    expect(overview.horizons).toContain(overview.body.from);
    expect(overview.body.coverage).toEqual(coverage);
    // The execution three hours ago, from the hour rollups; the six five days ago are outside the range it names.
    expect(overview.body.totals.executions).toBe(1);
    const series = await get<SeriesResponse>(`/api/v1/hooks/${BASH}/series?from=${from}&to=${to}&step=1h`);
    expect(series.horizons).toContain(series.body.from);
    expect(series.body.coverage).toEqual(coverage);
    expect(series.body.buckets.reduce((s, b) => s + b.executions, 0)).toBe(1);
    const hooks = await get<{ from: string; coverage?: RangeCoverage }>(`/api/v1/hooks?from=${from}&to=${to}`);
    expect(hooks.horizons).toContain(hooks.body.from);
    expect(hooks.body.coverage).toEqual(coverage);
  });

  it('names an empty range when the range lies wholly before the rollups kept, rather than counting nothing as healthy', async () => {
    const q = `from=${iso(OLD - DAY)}&to=${iso(OLD + 3 * HOUR)}`;
    const coverage = { askedFrom: iso(OLD - DAY), askedTo: iso(OLD + 3 * HOUR), limitedBy: 'retention.rollups' };
    const overview = await get<OverviewResponse>(`/api/v1/overview?${q}`);
    expect([overview.body.from, overview.body.to]).toEqual([iso(OLD + 3 * HOUR), iso(OLD + 3 * HOUR)]);
    expect(overview.body.coverage).toEqual(coverage);
    expect(overview.body.statusCounts).toEqual({ over: 0, near: 0, ok: 0, unknown: 0 });
    const series = await get<SeriesResponse>(`/api/v1/hooks/${BASH}/series?${q}&step=1h`);
    expect([series.body.from, series.body.to, series.body.buckets]).toEqual([iso(OLD + 3 * HOUR), iso(OLD + 3 * HOUR), []]);
    expect(series.body.coverage).toEqual(coverage);
    const fleet = await get<FleetSeriesResponse>(`/api/v1/fleet/series?${q}`);
    expect(fleet.body).toMatchObject({ from: iso(OLD + 3 * HOUR), to: iso(OLD + 3 * HOUR), coverage, buckets: [], total: 0 });
  });

  it('answers the empty range it names, sent back as from and to, as empty again, with the same coverage', async () => {
    const first = await get<OverviewResponse>(`/api/v1/overview?from=${iso(OLD - DAY)}&to=${iso(OLD + 3 * HOUR)}`);
    expect(first.body.from).toBe(first.body.to);
    const q = `from=${first.body.from}&to=${first.body.to}`;
    const coverage = { askedFrom: first.body.from, askedTo: first.body.to, limitedBy: 'retention.rollups' };
    const overview = await get<OverviewResponse>(`/api/v1/overview?${q}`);
    expect(overview.body).toMatchObject({ from: first.body.from, to: first.body.to, coverage, hooks: 0, totals: expect.objectContaining({ executions: 0 }) });
    expect((await get<BreakdownResponse>(`/api/v1/hooks/${BASH}/breakdown?${q}`)).body).toMatchObject({ from: first.body.from, to: first.body.to, coverage, rows: [], total: 0 });
  });
});

describe.each(backends)('answers past what retention.rollups deleted name it after the retention is raised ($name)', (backend) => {
  /** Where the rollups kept start after the prune: the hour after its bound, which it took between these. */
  let horizons: string[] = [];
  // As another replica, or this one before a restart under 1d, pruned: the old hours and days go. Then
  // retention.rollups raised back to its default: the rows deleted stay deleted.
  const served = servedStore(backend, { HOOKWATCH_RETENTION_EVENTS: '1h', HOOKWATCH_RETENTION_MINUTE_ROLLUPS: '1h' }, rollupsFrom, async (store) => {
    const before = Date.now();
    expect((await store.prune(before - HOUR, before - DAY)).rollups).toBeGreaterThan(0);
    const after = Date.now();
    horizons = [iso(Math.ceil((before - DAY) / HOUR) * HOUR), iso(Math.ceil((after - DAY) / HOUR) * HOUR)];
  });

  it('starts the range where the prune left the rollups, and says so', async () => {
    const from = iso(OLD - DAY);
    const { status, body } = await getJson<OverviewResponse>(served.url(), `/api/v1/overview?from=${from}&to=${iso(OLD + 3 * HOUR)}`);
    expect(status).toBe(200);
    expect(body.from).toBe(body.to);
    expect(body.coverage).toEqual({ askedFrom: from, askedTo: iso(OLD + 3 * HOUR), limitedBy: 'retention.rollups' });
    const wide = await getJson<OverviewResponse>(served.url(), `/api/v1/overview?from=${from}&to=${iso(NOW + HOUR)}`);
    expect(horizons).toContain(wide.body.from);
    expect(wide.body.coverage?.limitedBy).toBe('retention.rollups');
    expect(wide.body.totals.executions).toBe(1);
  });
});

describe.each(backends)('answers before the rollups kept count the raw events still kept there ($name)', (backend) => {
  /** Where the raw events kept start under 30d, as the server reckons it. */
  const events30d = (at: number): number => Math.floor((at + MINUTE - 30 * DAY) / HOUR) * HOUR;
  // Pruned under retention.rollups 1d, as the service does: the hour and day rollups five days ago go, the raw
  // events stay (kept 30 days), so only they can answer for that time.
  const { get } = servedStore(backend, { HOOKWATCH_RETENTION_EVENTS: '30d', HOOKWATCH_RETENTION_MINUTE_ROLLUPS: '2d', HOOKWATCH_RETENTION_ROLLUPS: '1d' }, events30d, async (store) => {
    const now = Date.now();
    expect((await store.prune(now - 30 * DAY, now - DAY)).rollups).toBeGreaterThan(0);
  });

  it('counts whole hours there from the raw events, with no coverage', async () => {
    const q = `from=${iso(OLD)}&to=${iso(OLD + 3 * HOUR)}`;
    const overview = await get<OverviewResponse>(`/api/v1/overview?${q}`);
    expect([overview.body.from, overview.body.to]).toEqual([iso(OLD), iso(OLD + 3 * HOUR)]);
    expect(overview.body.coverage).toBeUndefined();
    expect(overview.body.totals.executions).toBe(6);
    // One hour: u1's execution seventy minutes in.
    const hour = await get<{ from: string; to: string; coverage?: RangeCoverage; hook: HookSummary }>(`/api/v1/hooks/${BASH}?from=${iso(OLD + HOUR)}&to=${iso(OLD + 2 * HOUR)}`);
    expect([hour.body.from, hour.body.to, hour.body.coverage]).toEqual([iso(OLD + HOUR), iso(OLD + 2 * HOUR), undefined]);
    expect(hour.body.hook.executions).toBe(1);
    const series = await get<SeriesResponse>(`/api/v1/hooks/${BASH}/series?${q}&step=1h`);
    expect(series.body.coverage).toBeUndefined();
    expect(series.body.buckets.map((b) => b.executions)).toEqual([3, 1, 2]);
    const byVersion = await get<BreakdownResponse>(`/api/v1/hooks/${BASH}/breakdown?${q}`);
    expect(byVersion.body.coverage).toBeUndefined();
    expect(byVersion.body.rows.map((r) => [r.value, r.executions])).toEqual([['2.1.332', 6]]);
  });

  it('counts whole days there from the raw events, with no coverage', async () => {
    const from = iso(Math.floor((OLD - DAY) / DAY) * DAY);
    const to = iso(Math.ceil((NOW + HOUR) / DAY) * DAY);
    const overview = await get<OverviewResponse>(`/api/v1/overview?from=${from}&to=${to}`);
    expect([overview.body.from, overview.body.to, overview.body.coverage]).toEqual([from, to, undefined]);
    expect(overview.body.totals.executions).toBe(7);
    const series = await get<SeriesResponse>(`/api/v1/hooks/${BASH}/series?from=${from}&to=${to}&step=1d`);
    expect(series.body.coverage).toBeUndefined();
    expect(series.body.buckets.reduce((s, b) => s + b.executions, 0)).toBe(7);
  });

  it('names retention.rollups only before the raw events kept start', async () => {
    const from = iso(NOW - 40 * DAY);
    const to = iso(OLD + 3 * HOUR);
    const overview = await get<OverviewResponse>(`/api/v1/overview?from=${from}&to=${to}`);
    expect(overview.horizons).toContain(overview.body.from);
    expect(overview.body.to).toBe(to);
    expect(overview.body.coverage?.limitedBy).toBe('retention.rollups');
    expect(overview.body.totals.executions).toBe(6);
  });
});
