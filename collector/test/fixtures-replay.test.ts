/**
 * The real Claude Code 2.1.332 captures, replayed byte for byte against a running hookwatch (as captured and
 * gzip-compressed), must yield exactly the counts in testdata/claude-code-2.1.332/README.md.
 */
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import type { BreakdownResponse, FleetSeriesResponse, HooksResponse, HookSummary, OverviewResponse, SeriesResponse } from '../../shared/src/api.ts';
import { FIXTURE_RUNS, fixtureRequests, getJson, postOtlp, startTestService, type TestService } from './helpers.ts';

/** The table in the fixtures' README: hook_name -> [num_hooks, num_success, num_outputs_persisted, additional_context_chars, stdout_chars]. */
const EXPECTED: Record<string, Record<string, [number, number, number, number, number]>> = {
  'run1-httpjson': { 'SessionStart:startup': [2, 2, 1, 12000, 12578], UserPromptSubmit: [1, 1, 0, 0, 100] },
  'run2-httpprotobuf': { 'SessionStart:startup': [2, 2, 1, 12000, 12578], UserPromptSubmit: [1, 1, 0, 0, 100] },
  'run5-mockapi-tools-httpjson': {
    'SessionStart:startup': [2, 2, 1, 12000, 12578],
    UserPromptSubmit: [1, 1, 0, 0, 100],
    'PreToolUse:Bash': [1, 1, 0, 0, 50],
    'PostToolUse:Bash': [1, 1, 1, 10500, 10577],
    Stop: [1, 1, 0, 0, 10],
  },
};

let service: TestService | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

async function replay(run: string, gzip: boolean): Promise<void> {
  for (const req of fixtureRequests(run)) {
    const headers: Record<string, string> = { 'content-type': req.contentType };
    const body = gzip ? gzipSync(req.body) : req.body;
    if (gzip) headers['content-encoding'] = 'gzip';
    const res = await postOtlp(service!.otlpHttpUrl, req.path, body, headers);
    expect(res.status, `${run}/${req.file}`).toBe(200);
    // The response comes back in the request's encoding.
    expect(res.headers.get('content-type')).toBe(req.contentType.startsWith('application/json') ? 'application/json' : 'application/x-protobuf');
    if (req.contentType.startsWith('application/json')) expect(JSON.parse(res.body.toString())).toEqual({});
    else expect(res.body.length).toBe(0);
  }
}

async function hooks(): Promise<Map<string, HookSummary>> {
  const { status, body } = await getJson<HooksResponse>(service!.httpUrl, '/api/v1/hooks?from=2026-11-01T00:00:00Z&to=2026-12-31T00:00:00Z');
  expect(status).toBe(200);
  return new Map(body.hooks.map((h) => [h.hookName, h]));
}

describe('replaying the real Claude Code 2.1.332 captures', () => {
  for (const run of FIXTURE_RUNS) {
    for (const gzip of [false, true]) {
      it(`${run}${gzip ? ' (gzip)' : ''} yields the README's counts`, async () => {
        service = await startTestService();
        await replay(run, gzip);
        const byName = await hooks();
        expect([...byName.keys()].sort()).toEqual(Object.keys(EXPECTED[run]!).sort());
        for (const [name, [numHooks, success, persisted, ac, stdout]] of Object.entries(EXPECTED[run]!)) {
          const h = byName.get(name)!;
          expect(h.executions, name).toBe(1);
          expect(h.numHooks, name).toBe(numHooks);
          expect(h.success, name).toBe(success);
          expect(h.outputsPersisted, name).toBe(persisted);
          expect(h.maxChars.additionalContext, name).toBe(ac);
          expect(h.maxChars.stdout, name).toBe(stdout);
          expect(h.sizeUnknownExecutions, name).toBe(0);
          expect(h.status, name).toBe(persisted > 0 ? 'over' : 'ok');
        }
      });
    }
  }

  it('a batch sent again (a retry after a lost response) counts once', async () => {
    service = await startTestService();
    await replay('run5-mockapi-tools-httpjson', false);
    await replay('run5-mockapi-tools-httpjson', true);
    const byName = await hooks();
    expect(byName.get('PostToolUse:Bash')!.executions).toBe(1);
    expect(byName.get('SessionStart:startup')!.outputsPersisted).toBe(1);
    expect(service.ingest.stats.duplicates).toBeGreaterThan(0);
  });

  it('all three sessions together: every hook succeeded, four outputs never reached the model', async () => {
    service = await startTestService();
    for (const run of FIXTURE_RUNS) await replay(run, false);
    const { body } = await getJson<{ totals: { executions: number; success: number; outputsPersisted: number }; statusCounts: Record<string, number>; sizeDataShare: number; clientVersions: { version: string }[] }>(
      service.httpUrl, '/api/v1/overview?from=2026-11-01T00:00:00Z&to=2026-12-31T00:00:00Z');
    expect(body.totals.executions).toBe(9);
    expect(body.totals.success).toBe(12);
    expect(body.totals.outputsPersisted).toBe(4);
    expect(body.statusCounts).toEqual({ over: 2, near: 0, ok: 3, unknown: 0 });
    expect(body.sizeDataShare).toBe(1);
    expect(body.clientVersions.map((v) => v.version)).toEqual(['2.1.332']);
  });

  it('the filter on an empty team counts what a breakdown by team lists as "" (the captures carry no team), on every route that filters', async () => {
    service = await startTestService();
    for (const run of FIXTURE_RUNS) await replay(run, false);
    const range = 'from=2026-11-01T00:00:00Z&to=2026-12-31T00:00:00Z';
    const get = async <T>(path: string): Promise<T> => {
      const { status, body } = await getJson<T>(service!.httpUrl, path);
      expect(status, path).toBe(200);
      return body;
    };
    const all = await hooks();
    const unset = await get<HooksResponse>(`/api/v1/hooks?${range}&team=`);
    expect(unset.hooks.map((h) => [h.hookName, h.executions]).sort()).toEqual([...all.values()].map((h) => [h.hookName, h.executions]).sort());
    const overview = await get<OverviewResponse>(`/api/v1/overview?${range}&team=`);
    expect([overview.totals.executions, overview.lastEventAt]).toEqual([9, (await get<OverviewResponse>(`/api/v1/overview?${range}`)).lastEventAt]);
    const fleet = await get<FleetSeriesResponse>(`/api/v1/fleet/series?${range}&step=1d&team=`);
    expect(fleet.hooks.reduce((n, h) => n + h.executions.reduce((a, b) => a + b, 0), 0)).toBe(9);
    for (const h of all.values()) {
      const byTeam = await get<BreakdownResponse>(`/api/v1/hooks/${h.id}/breakdown?${range}&dimension=team`);
      expect(byTeam.rows.map((r) => [r.value, r.executions]), h.hookName).toEqual([['', h.executions]]);
      expect((await get<{ hook: HookSummary }>(`/api/v1/hooks/${h.id}?${range}&team=`)).hook.executions, h.hookName).toBe(h.executions);
      const series = await get<SeriesResponse>(`/api/v1/hooks/${h.id}/series?${range}&step=1d&team=`);
      expect(series.buckets.reduce((n, b) => n + b.executions, 0), h.hookName).toBe(h.executions);
      const filtered = await get<BreakdownResponse>(`/api/v1/hooks/${h.id}/breakdown?${range}&dimension=service.version&team=`);
      expect(filtered.rows.map((r) => [r.value, r.executions]), h.hookName).toEqual([['2.1.332', h.executions]]);
    }
    // A team the captures do not carry still matches nothing.
    expect((await get<HooksResponse>(`/api/v1/hooks?${range}&team=platform`)).hooks).toEqual([]);
  });

  it('a restart keeps every acknowledged event', async () => {
    service = await startTestService();
    const dir = service.dir;
    await replay('run1-httpjson', false);
    await service.stop();
    service = await startTestService({}, { dir });
    const byName = await hooks();
    expect(byName.get('SessionStart:startup')!.outputsPersisted).toBe(1);
    expect(byName.get('UserPromptSubmit')!.executions).toBe(1);
  });
});
