/** The API as a client uses it: real HTTP against a running hookwatch, with events at known times. */
import { readFileSync, readdirSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetSeriesResponse, HooksResponse, OverviewResponse, SeriesResponse, BreakdownResponse } from '../../../shared/src/api.ts';
import { getJson, postOtlp, startTestService, type TestService } from '../../test/helpers.ts';
import { rawExchange } from '../../test/support/raw-http.ts';
import { hookCursor } from './params.ts';

const NOW = Date.parse('2026-11-30T12:00:00Z');
let service: TestService;

function event(hookName: string, t: string, seq: number, attrs: Record<string, string>): unknown {
  const all: Record<string, string> = {
    'event.name': 'hook_execution_complete', hook_event: hookName.split(':')[0]!, hook_name: hookName,
    'session.id': 'api-test', 'event.sequence': String(seq), 'event.timestamp': t, 'user.id': seq % 2 ? 'alice' : 'bob', ...attrs,
  };
  return { attributes: Object.entries(all).map(([key, v]) => ({ key, value: { stringValue: v } })) };
}

const sized = (ac: number, persisted: number): Record<string, string> => ({ num_hooks: '1', num_success: '1', additional_context_chars: String(ac), stdout_chars: String(ac + 20), num_outputs_persisted: String(persisted) });

beforeAll(async () => {
  service = await startTestService({}, { now: () => NOW });
  const records = [
    // A hook that grows over three days and crosses the cap on the last one.
    event('SessionStart:startup', '2026-11-28T10:00:00Z', 1, sized(7000, 0)),
    event('SessionStart:startup', '2026-11-29T10:00:00Z', 2, sized(9500, 0)),
    event('SessionStart:startup', '2026-11-30T10:00:00Z', 3, sized(11000, 1)),
    event('SessionStart:startup', '2026-11-30T10:00:30Z', 4, sized(11200, 1)),
    event('UserPromptSubmit', '2026-11-30T11:59:00Z', 5, sized(100, 0)),
    event('Stop', '2026-11-30T11:00:00Z', 6, { num_hooks: '1', num_success: '1' }),
    // Ten days back (outside the 7-day views above): a client that measures sizes but does not report
    // num_outputs_persisted, one execution over the cap, beside a healthy hook whose name sorts first.
    event('PreCompact:old-client', '2026-11-20T10:00:00Z', 7, { num_hooks: '1', num_success: '1', additional_context_chars: '12500' }),
    event('Notification', '2026-11-20T11:00:00Z', 8, sized(300, 0)),
  ];
  const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', JSON.stringify({ resourceLogs: [{ resource: { attributes: [{ key: 'service.version', value: { stringValue: '2.1.332' } }] }, scopeLogs: [{ logRecords: records }] }] }), { 'content-type': 'application/json' });
  expect(res.status).toBe(200);
});
afterAll(async () => {
  await service.close();
});

describe('GET /api/v1/hooks', () => {
  it('ranks hooks by risk and honours the range', async () => {
    const { body } = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-7d');
    expect(body.hooks.map((h) => [h.hookName, h.status])).toEqual([
      ['SessionStart:startup', 'over'],
      ['Stop', 'unknown'],
      ['UserPromptSubmit', 'ok'],
    ]);
    const ss = body.hooks[0]!;
    expect(ss.executions).toBe(4);
    expect(ss.outputsPersisted).toBe(2);
    expect(ss.maxChars.additionalContext).toBe(11200);
    expect(ss.headroom).toBe(10_000 - 11_220);
    expect(ss.id).toMatch(/^[0-9a-f]{16}$/);
    // Only the wire fields: what the store carries alongside the counters (the hook's info) stays in the process.
    expect(ss).not.toHaveProperty('info');
    // A hook only a client without sizes sent: no size and no headroom, never 0 characters or the cap's 10,000.
    const stop = body.hooks.find((h) => h.hookName === 'Stop');
    expect(stop).toMatchObject({ sizeUnknownExecutions: 1, headroom: null, maxChars: { stdout: null, additionalContext: null, systemMessage: null, initialUserMessage: null } });
    const lastHour = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-1h&to=now');
    expect(lastHour.body.hooks.map((h) => h.hookName)).toEqual(['Stop', 'UserPromptSubmit']);
    const rfc = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=2026-11-28T00:00:00Z&to=2026-11-29T00:00:00Z');
    expect(rfc.body.hooks.map((h) => [h.hookName, h.executions, h.status])).toEqual([['SessionStart:startup', 1, 'ok']]);
    // The store counts whole minutes: a range inside one minute counts that minute, and says so.
    const sub = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=2026-11-30T10:00:40Z&to=2026-11-30T10:00:50.5Z');
    expect(sub.body.hooks.map((h) => [h.hookName, h.executions])).toEqual([['SessionStart:startup', 2]]);
    expect([sub.body.from, sub.body.to]).toEqual(['2026-11-30T10:00:00.000Z', '2026-11-30T10:01:00.000Z']);
  });

  it('filters by a dimension and by status', async () => {
    const { body } = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-7d&user.id=alice');
    expect(body.hooks.find((h) => h.hookName === 'SessionStart:startup')?.executions).toBe(2);
    const over = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-7d&status=over');
    expect(over.body.hooks.map((h) => h.hookName)).toEqual(['SessionStart:startup']);
  });

  it('narrows by a part of the hook name, whatever its case, before paging', async () => {
    const names = async (path: string): Promise<[string[], number, string | null]> => {
      const { status, body } = await getJson<HooksResponse>(service.httpUrl, path);
      expect(status).toBe(200);
      return [body.hooks.map((h) => h.hookName), body.total, body.nextCursor];
    };
    expect(await names('/api/v1/hooks?from=now-7d&name=START')).toEqual([['SessionStart:startup'], 1, null]);
    // Pages and total count the matching hooks only, still riskiest first.
    const first = await names('/api/v1/hooks?from=now-30d&name=sT&limit=1');
    expect(first).toEqual([['SessionStart:startup'], 2, expect.any(String)]);
    expect(await names(`/api/v1/hooks?from=now-30d&name=sT&limit=1&cursor=${first[2]}`)).toEqual([['Stop'], 2, null]);
    expect(await names('/api/v1/hooks?from=now-30d&name=st&status=unknown')).toEqual([['Stop'], 1, null]);
    expect(await names('/api/v1/hooks?from=now-30d&name=%3Aold-')).toEqual([['PreCompact:old-client'], 1, null]);
    expect(await names('/api/v1/hooks?from=now-30d&name=no-such-hook')).toEqual([[], 0, null]);
    expect((await names('/api/v1/hooks?from=now-30d&name='))[1]).toBe(5);
  });
});

describe('GET /api/v1/hooks/:id/series', () => {
  it('returns one bucket per step with the same counters', async () => {
    const { body: hooks } = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-7d');
    const id = hooks.hooks[0]!.id;
    const { status, body } = await getJson<SeriesResponse>(service.httpUrl, `/api/v1/hooks/${id}/series?from=2026-11-28T00:00:00Z&to=2026-12-01T00:00:00Z&step=1d`);
    expect(status).toBe(200);
    expect(body.step).toBe(86400);
    expect(body.buckets.map((b) => [b.start.slice(0, 10), b.executions, b.outputsPersisted, b.maxChars.additionalContext, b.status])).toEqual([
      ['2026-11-28', 1, 0, 7000, 'ok'],
      ['2026-11-29', 1, 0, 9500, 'near'],
      ['2026-11-30', 2, 2, 11200, 'over'],
    ]);
    const auto = await getJson<SeriesResponse>(service.httpUrl, `/api/v1/hooks/${id}/series?from=now-24h`);
    expect(auto.body.step).toBe(600);
    expect(auto.body.buckets.reduce((n, b) => n + b.executions, 0)).toBe(2);
  });
});

describe('GET /api/v1/fleet/series', () => {
  it('counts executions measured over the cap where the client reports no persisted outputs, and ranks by them', async () => {
    const { status, body } = await getJson<FleetSeriesResponse>(service.httpUrl, '/api/v1/fleet/series?from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z&step=6h');
    expect(status).toBe(200);
    expect(body.hooks.map((h) => [h.hookName, h.outputsPersisted, h.executionsWithPersisted, h.executions])).toEqual([
      ['PreCompact:old-client', [0, 0, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0]],
      ['Notification', [0, 0, 0, 0], [0, 0, 0, 0], [0, 1, 0, 0]],
    ]);
    expect([body.rest, body.total]).toEqual([null, 2]);
  });

  it('says of the hooks past `limit` how many executions their sum counts as one output each, a lower bound', async () => {
    const { body } = await getJson<FleetSeriesResponse>(service.httpUrl, '/api/v1/fleet/series?from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z&step=6h&limit=1');
    expect(body.hooks.map((h) => h.hookName)).toEqual(['PreCompact:old-client']);
    expect(body.rest).toMatchObject({ hooks: 1, persisted: [0, 0, 0, 0], measuredOnly: [0, 0, 0, 0] });
    // PreCompact:old-client summed with the rest: its execution over the cap, no count reported, is one output at least.
    const summed = await getJson<FleetSeriesResponse>(service.httpUrl, '/api/v1/fleet/series?from=now-30d&step=1d&limit=1');
    const day = summed.body.buckets.indexOf('2026-11-20T00:00:00.000Z');
    expect([summed.body.rest?.persisted[day], summed.body.rest?.measuredOnly[day]]).toEqual([1, 1]);
    expect(summed.body.rest?.measuredOnly.reduce((a, b) => a + b, 0)).toBe(1);
  });

  it('gives the riskiest `limit` hooks their series and sums the rest, so the answer stays bounded', async () => {
    const { body: hooks } = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-30d');
    expect(hooks.hooks.map((h) => h.hookName)).toEqual(['SessionStart:startup', 'PreCompact:old-client', 'Stop', 'Notification', 'UserPromptSubmit']);
    const { status, body } = await getJson<FleetSeriesResponse>(service.httpUrl, '/api/v1/fleet/series?from=now-30d&step=1d&limit=2');
    expect(status).toBe(200);
    expect(body.hooks.map((h) => h.hookName)).toEqual(['SessionStart:startup', 'PreCompact:old-client']);
    expect(body.total).toBe(5);
    const day = (t: string): number => body.buckets.indexOf(`${t}T00:00:00.000Z`);
    // Stop, Notification and UserPromptSubmit: one execution each, on 20 and 30 November.
    expect(body.rest).toMatchObject({ hooks: 3, hooksWithPersisted: 0 });
    expect(body.rest!.executions.reduce((a, b) => a + b, 0)).toBe(3);
    expect([body.rest!.executions[day('2026-11-20')], body.rest!.executions[day('2026-11-30')]]).toEqual([1, 2]);
    expect([body.rest!.largest[day('2026-11-20')], body.rest!.largest[day('2026-11-30')], body.rest!.sizeUnknownExecutions[day('2026-11-30')]]).toEqual([320, 120, 1]);
    expect((await getJson(service.httpUrl, '/api/v1/fleet/series?limit=0')).status).toBe(400);
  });

  it('answers for the hooks named in `ids` only, as if the fleet were those, past the riskiest `limit` too', async () => {
    const { body: hooks } = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-30d');
    const id = (name: string): string => hooks.hooks.find((h) => h.hookName === name)!.id;
    const all = await getJson<FleetSeriesResponse>(service.httpUrl, '/api/v1/fleet/series?from=now-30d&step=1d');
    const ids = [id('UserPromptSubmit'), id('Notification'), 'ffffffffffffffff'].join(',');
    const { status, body } = await getJson<FleetSeriesResponse>(service.httpUrl, `/api/v1/fleet/series?from=now-30d&step=1d&limit=1&ids=${ids}`);
    expect(status).toBe(200);
    // Ranked as /api/v1/hooks ranks them; a hook without executions in the range (or unknown) is not there.
    expect(body.hooks.map((h) => h.hookName)).toEqual(['Notification']);
    expect(body.hooks[0]).toEqual(all.body.hooks.find((h) => h.hookName === 'Notification'));
    expect(body.rest).toMatchObject({ hooks: 1, hooksWithPersisted: 0 });
    expect(body.rest!.executions.reduce((a, b) => a + b, 0)).toBe(1);
    expect([body.total, body.buckets]).toEqual([2, all.body.buckets]);
    const two = await getJson<FleetSeriesResponse>(service.httpUrl, `/api/v1/fleet/series?from=now-30d&step=1d&ids=${ids}`);
    expect([two.body.hooks.map((h) => h.hookName), two.body.rest]).toEqual([['Notification', 'UserPromptSubmit'], null]);
  });
});

describe('GET /api/v1/overview and breakdown', () => {
  it('fleet totals, status counts, size data share and client versions', async () => {
    const { body } = await getJson<OverviewResponse>(service.httpUrl, '/api/v1/overview?from=now-7d');
    expect(body.totals.executions).toBe(6);
    expect(body.statusCounts).toEqual({ over: 1, near: 0, ok: 1, unknown: 1 });
    expect(body.sizeDataShare).toBeCloseTo(5 / 6);
    expect(body.clientVersions).toEqual([{ serviceName: '', version: '2.1.332', executions: 6, sizeUnknownExecutions: 1, hasSizeData: true }]);
    // No otlp.ingestToken, no mutual TLS: the dashboard's setup snippet sets no Authorization header, no client certificate.
    expect(body).toMatchObject({ otlpHttpTls: false, otlpIngestToken: false, otlpClientCertificate: false });
  });

  it('breaks one hook down by user', async () => {
    const { body: hooks } = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-7d');
    const { body } = await getJson<BreakdownResponse>(service.httpUrl, `/api/v1/hooks/${hooks.hooks[0]!.id}/breakdown?from=now-7d&dimension=user.id`);
    expect(body.rows.map((r) => [r.value, r.executions, r.outputsPersisted])).toEqual([['alice', 2, 1], ['bob', 2, 1]]);
    expect([body.total, body.nextCursor]).toEqual([2, null]);
  });

  it('pages a breakdown (one row per session or user can be many): limit, cursor, total and nextCursor', async () => {
    const { body: hooks } = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-7d');
    const path = `/api/v1/hooks/${hooks.hooks[0]!.id}/breakdown?from=now-7d&dimension=user.id`;
    const first = await getJson<BreakdownResponse>(service.httpUrl, `${path}&limit=1`);
    expect(first.status).toBe(200);
    expect([first.body.rows.map((r) => r.value), first.body.total]).toEqual([['alice'], 2]);
    // Where the page ended (its last row), not a count: opaque to clients.
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await getJson<BreakdownResponse>(service.httpUrl, `${path}&limit=1&cursor=${first.body.nextCursor}`);
    expect([second.body.rows.map((r) => r.value), second.body.total, second.body.nextCursor]).toEqual([['bob'], 2, null]);
    // A count (what an earlier version gave), another spelling of a cursor, bytes that are not UTF-8: refused.
    const bent = `${first.body.nextCursor}=`;
    const notUtf8 = Buffer.from([0x31, 0x3a, 0xff]).toString('base64url');
    for (const [query, parameter] of [['limit=0', 'limit'], ['limit=5001', 'limit'], ['cursor=x', 'cursor'], ['cursor=1', 'cursor'], [`cursor=${bent}`, 'cursor'], [`cursor=${notUtf8}`, 'cursor'], ['limit=1&limit=2', 'limit']]) {
      const bad = await getJson<{ error: { code: string; parameter: string } }>(service.httpUrl, `${path}&${query}`);
      expect([bad.status, bad.body.error.code, bad.body.error.parameter], query).toEqual([400, 'bad_parameter', parameter]);
    }
  });

  it('a cursor past the end (the list shrank since it was given) is an empty last page on the hook list and a breakdown alike; one never given is 400', async () => {
    const { body: hooks } = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-7d');
    // After the last hook: one of status ok, no persisted outputs and no size data sorts after every hook listed.
    const last = hookCursor({ status: 'ok', persisted: 0, headroom: null, hookName: '\u{10ffff}', id: 'ffffffffffffffff' });
    const list = await getJson<HooksResponse>(service.httpUrl, `/api/v1/hooks?from=now-7d&cursor=${last}`);
    expect([list.status, list.body.hooks, list.body.total, list.body.nextCursor]).toEqual([200, [], hooks.total, null]);
    // After the last row: a row with no executions sorts after every row listed.
    const path = `/api/v1/hooks/${hooks.hooks[0]!.id}/breakdown?from=now-7d&dimension=user.id`;
    const pastEnd = Buffer.from('0:zzz').toString('base64url');
    const breakdown = await getJson<BreakdownResponse>(service.httpUrl, `${path}&cursor=${pastEnd}`);
    expect([breakdown.status, breakdown.body.rows, breakdown.body.total, breakdown.body.nextCursor]).toEqual([200, [], 2, null]);
    // A number (an offset) was never a nextCursor, nor another spelling of one that was, nor a position out of range.
    const spelt = Buffer.from('["ok", 0, null, "Stop", "ffffffffffffffff"]').toString('base64url');
    const unknown = Buffer.from(JSON.stringify(['fine', 0, null, 'Stop', 'ffffffffffffffff'])).toString('base64url');
    for (const cursor of ['0', '01', '1000', spelt, unknown, `${last}=`]) {
      const bad = await getJson<{ error: { code: string; parameter: string; message: string } }>(service.httpUrl, `/api/v1/hooks?from=now-7d&cursor=${cursor}`);
      expect([bad.status, bad.body.error], cursor).toEqual([400, { code: 'bad_parameter', parameter: 'cursor', message: 'cursor must be the nextCursor of a previous page' }]);
    }
  });

  it('a breakdown of a hook hookwatch does not know is 404, as its page and series are', async () => {
    for (const path of ['', '/series', '/breakdown', '/breakdown?dimension=user.id']) {
      const { status, body } = await getJson<{ error: { code: string; message: string } }>(service.httpUrl, `/api/v1/hooks/0123456789abcdef${path}`);
      expect([status, body.error.code, body.error.message], path).toEqual([404, 'not_found', 'no hook with id 0123456789abcdef']);
    }
  });

  it('checks the parameters before the id: a bad one is 400 for a hook hookwatch does not know, on its page as on its series and breakdown', async () => {
    for (const path of ['', '/series', '/breakdown']) {
      for (const [query, parameter] of [['from=yesterday', 'from'], ['to=2026-13-45', 'to'], ['colour=blue', 'colour']]) {
        const { status, body } = await getJson<{ error: { code: string; parameter: string } }>(service.httpUrl, `/api/v1/hooks/0123456789abcdef${path}?${query}`);
        expect([status, body.error.code, body.error.parameter], `${path}?${query}`).toEqual([400, 'bad_parameter', parameter]);
      }
    }
  });
});

describe('bad parameters get 400 naming the parameter', () => {
  const cases: [string, string][] = [
    ['/api/v1/hooks?from=yesterday', 'from'],
    ['/api/v1/hooks?to=2026-13-45', 'to'],
    ['/api/v1/hooks?from=now&to=now-1h', 'from'],
    ['/api/v1/hooks?from=now-1000d', 'from'],
    ['/api/v1/hooks?colour=blue', 'colour'],
    ['/api/v1/hooks?status=fine', 'status'],
    ['/api/v1/hooks?name=a&name=b', 'name'],
    [`/api/v1/hooks?name=${'x'.repeat(513)}`, 'name'],
    ['/api/v1/hooks?from=now-1h&from=now-2h', 'from'],
    ['/api/v1/hooks/0123456789abcdef/series?step=5s', 'step'],
    ['/api/v1/hooks/0123456789abcdef/series?from=now-30d&step=1m', 'step'],
    ['/api/v1/hooks/..%2F..%2Fetc%2Fpasswd/series', 'id'],
    ['/api/v1/hooks/0123456789abcdef/breakdown?dimension=password', 'dimension'],
    ['/api/v1/fleet/series?ids=0123456789ABCDEF', 'ids'],
    ['/api/v1/fleet/series?ids=', 'ids'],
    ['/api/v1/fleet/series?ids=0123456789abcdef,', 'ids'],
    [`/api/v1/fleet/series?ids=${Array.from({ length: 201 }, () => '0123456789abcdef').join(',')}`, 'ids'],
  ];
  for (const [path, parameter] of cases) {
    it(path, async () => {
      const { status, body } = await getJson<{ error: { parameter: string; message: string } }>(service.httpUrl, path);
      expect(status).toBe(400);
      expect(body.error.parameter).toBe(parameter);
      expect(body.error.message).toContain(parameter === 'id' ? 'hook id' : parameter);
    });
  }

  // Every route the same way: a parameter it does not take, or one given twice, is a 400 naming it, never ignored.
  const H = '0123456789abcdef';
  const refused: [string, string, string, RegExp][] = [
    ['GET', '/api/v1/alerts?state=firing&state=pending', 'state', /^state must be given once$/],
    ['GET', '/api/v1/alerts?colour=blue', 'colour', /^unknown parameter "colour"; this route takes: state, hook$/],
    ['GET', `/api/v1/alerts/${H}-zz?x=1`, 'x', /^unknown parameter "x"; this route takes no query parameters$/],
    ['GET', '/api/v1/silences?colour=blue', 'colour', /^unknown parameter "colour"/],
    ['POST', '/api/v1/silences?colour=blue', 'colour', /^unknown parameter "colour"/],
    ['DELETE', '/api/v1/silences/00000000-0000-0000-0000-000000000000?colour=blue', 'colour', /^unknown parameter "colour"/],
    ['POST', '/api/v1/receivers/ops/test?colour=blue', 'colour', /^unknown parameter "colour"/],
    ['GET', `/api/v1/hooks/${H}/guard-trims?colour=blue`, 'colour', /^unknown parameter "colour"; this route takes: from, to, step$/],
    ['GET', `/api/v1/hooks/${H}/guard-trims?step=5m&step=10m`, 'step', /^step must be given once$/],
    ['GET', `/api/v1/hooks/${H}/commands?team=a`, 'team', /^unknown parameter "team"; this route takes: from, to$/],
    ['GET', `/api/v1/hooks/${H}/commands?from=now-1h&from=now-2h`, 'from', /^from must be given once$/],
    ['GET', '/api/v1/cluster?colour=blue', 'colour', /^unknown parameter "colour"/],
    ['GET', '/api/v1/dimensions?colour=blue', 'colour', /^unknown parameter "colour"/],
    ['GET', '/api/v1/forwarding?deadLetters=1&deadLetters=2', 'deadLetters', /^deadLetters must be given once$/],
    ['GET', '/api/v1/forwarding?colour=blue', 'colour', /^unknown parameter "colour"; this route takes: deadLetters$/],
    // Number() reads these as 0, 16 and 100: a whole number is digits only, as limit is.
    ...['', '%20', '0x10', '1e2', '1.0', '-0', '+5'].map((v): [string, string, string, RegExp] => ['GET', `/api/v1/forwarding?deadLetters=${v}`, 'deadLetters', /^deadLetters must be a whole number from 0 to 1000$/]),
    ['POST', '/api/v1/forwarding/dead-letters/replay?colour=blue', 'colour', /^unknown parameter "colour"/],
  ];
  for (const [method, path, parameter, message] of refused) {
    it(`${method} ${path}`, async () => {
      const res = await fetch(`${service.httpUrl}${path}`, { method, signal: AbortSignal.timeout(10_000) });
      const body = (await res.json()) as { error: { code: string; parameter: string; message: string } };
      expect([res.status, body.error.code, body.error.parameter]).toEqual([400, 'bad_parameter', parameter]);
      expect(body.error.message).toMatch(message);
    });
  }

  it('an unknown parameter of 3,000 characters is named cut to 64, in parameter as in message', async () => {
    const name = 'q'.repeat(3000);
    const cut = `${'q'.repeat(64)}…`;
    for (const path of [`/api/v1/hooks?${name}=1`, `/api/v1/alerts?${name}=1`]) {
      const { status, body } = await getJson<{ error: { code: string; parameter: string; message: string } }>(service.httpUrl, path);
      expect([status, body.error.code, body.error.parameter], path.slice(0, 20)).toEqual([400, 'bad_parameter', cut]);
      expect(body.error.message).toMatch(new RegExp(`^unknown parameter "${cut}"; `));
    }
  });

  it('a parameter after a thousand others is read too, not dropped from the query', async () => {
    // Node's querystring stops at 1,000 pairs, empty ones included: the filter after them was ignored, answering 200
    // for the whole fleet. The request's size is bounded by the header limit (16 KiB) anyway.
    for (const [path, parameter] of [[`/api/v1/hooks?${'&'.repeat(1000)}colour=blue`, 'colour'], [`/api/v1/overview?${'&'.repeat(1000)}from=now-1h&to=now-2h`, 'from']] as const) {
      const { status, body } = await getJson<{ error: { code: string; parameter: string } }>(service.httpUrl, path);
      expect([status, body.error.code, body.error.parameter]).toEqual([400, 'bad_parameter', parameter]);
    }
    const { status, body } = await getJson<{ error: { parameter: string } }>(service.httpUrl, `/api/v1/dimensions?${'&'.repeat(2000)}x=1`);
    expect([status, body.error.parameter]).toEqual([400, 'x']);
  });

  it('a URL over the header limit, or a request the parser refuses, is answered with a JSON reason, not an empty body', async () => {
    const long = await fetch(`${service.httpUrl}/api/v1/hooks?name=${'a'.repeat(20_000)}`, { signal: AbortSignal.timeout(10_000) });
    expect(long.status).toBe(431);
    expect(long.headers.get('content-type')).toMatch(/^application\/json/);
    expect(((await long.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'bad_request', message: expect.stringMatching(/larger than 16 KiB/) });
    const answer = await rawExchange(service.httpUrl, 'GET /api/v1/hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: x\r\n\r\n');
    expect(answer.head).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(answer.body.toString())).toEqual({ error: { code: 'bad_request', message: 'malformed HTTP request: the Content-Length header is not a decimal number, or comes with Transfer-Encoding' } });
  });

  it('a request Node\'s HTTP server would refuse with an empty answer, or none, is answered with a JSON reason too', async () => {
    const refused: [string, string, { code: string; message: string }][] = [
      [`GET /api/v1/dimensions HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: ${'x'.repeat(100)}\r\n\r\n`, '417 Expectation Failed',
        { code: 'expectation_failed', message: `Expect "${'x'.repeat(64)}…" is not supported; send the request without it, or with Expect: 100-continue` }],
      ['GET /api/v1/dimensions HTTP/1.1\r\n\r\n', '400 Bad Request', { code: 'bad_request', message: 'the Host header is missing; HTTP/1.1 requires it' }],
      // RFC 9112 section 3.2: Node keeps the first Host of two, which a proxy in front may read otherwise.
      ['GET /api/v1/dimensions HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n', '400 Bad Request', { code: 'bad_request', message: 'the Host header is sent more than once; HTTP/1.1 allows one' }],
      ['GET /api/v1/dimensions HTTP/1.1\r\nHost: 127.0.0.1:9318@evil.example\r\n\r\n', '400 Bad Request',
        { code: 'bad_request', message: 'the Host header "127.0.0.1:9318@evil.example" is not a host name or address with an optional port' }],
      // RFC 9112 section 3.2.2: the host of an absolute-form target is the one the request names, not Host.
      ['GET http://evil.example:9318/api/v1/dimensions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n', '403 Forbidden',
        { code: 'forbidden', message: 'host "evil.example" is not allowed: add it to http.allowedHosts to reach hookwatch by that name' }],
      ['GET http://127.0.0.1@evil.example/api/v1/dimensions HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', '400 Bad Request',
        { code: 'bad_request', message: 'the host of the request target "127.0.0.1@evil.example" is not a host name or address with an optional port' }],
      // RFC 9112 section 6.1: the body's length cannot be known. Node's parser passes the request to the handler,
      // then refuses its body; the header said why before.
      ['POST /api/v1/silences HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip\r\n\r\n{}', '400 Bad Request',
        { code: 'bad_request', message: 'the Transfer-Encoding header "gzip" does not end with chunked, so the length of the body cannot be known; send Content-Length instead, or chunked last' }],
      // RFC 9112 section 6.1: a transfer coding the server does not understand is 501, in one header or two.
      ...['Transfer-Encoding: gzip, chunked', 'Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked'].map((te): [string, string, { code: string; message: string }] => [
        `POST /api/v1/silences HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${te}\r\n\r\n2\r\n{}\r\n0\r\n\r\n`, '501 Not Implemented',
        { code: 'not_implemented', message: 'Transfer-Encoding "gzip" is not implemented, only chunked; compress the body with Content-Encoding: gzip instead, sent with Transfer-Encoding: chunked alone or Content-Length' }]),
      // A client taking the port for a proxy.
      ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', '400 Bad Request', { code: 'bad_request', message: 'CONNECT is not allowed on this port, which is no proxy; the API is under /api/v1' }],
      // Refused by Node's parser already, confirmed for what a scanner or proxy sends, naming what it found wrong:
      // request smuggling, chunked not last, a request line that is not HTTP.
      ['POST /api/v1/silences HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', '400 Bad Request',
        { code: 'bad_request', message: 'malformed HTTP request: Transfer-Encoding and Content-Length are both sent; send one of them' }],
      ['POST /api/v1/silences HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n', '400 Bad Request',
        { code: 'bad_request', message: 'malformed HTTP request: the Transfer-Encoding header names chunked other than once and last, or comes with Content-Length' }],
      ['HELLO\r\n\r\n', '400 Bad Request', { code: 'bad_request', message: 'malformed HTTP request: it does not start with an HTTP method, as when a TLS client speaks to a plain-text port' }],
    ];
    for (const [raw, status, error] of refused) {
      const answer = await rawExchange(service.httpUrl, raw);
      expect(answer.head, raw).toMatch(new RegExp(`^HTTP/1\\.1 ${status}\r\n`));
      expect(answer.head, raw).toMatch(/\r\ncontent-type: application\/json; charset=utf-8\r\n/i);
      expect(answer.head, raw).toMatch(/\r\nconnection: close(\r\n|$)/i);
      expect(JSON.parse(answer.body.toString()), raw).toEqual({ error });
    }
    // HTTP/1.0, which has no Host, and an absolute-form target (RFC 9112 section 3.2.2) are served, on the host it names.
    for (const raw of ['GET /api/v1/dimensions HTTP/1.0\r\n\r\n', 'GET http://127.0.0.1/api/v1/dimensions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
      'GET http://localhost/api/v1/dimensions HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n']) {
      const answer = await rawExchange(service.httpUrl, raw);
      expect(answer.head, raw).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(JSON.parse(answer.body.toString()), raw).toHaveProperty('dimensions');
    }
  });

  it('a body over 64 KiB is refused with 413 on its Content-Length, or once 64 KiB of it arrived, and the connection closed: never read to its end', async () => {
    const tooLarge = { error: { code: 'bad_body', message: 'body larger than 64 KiB' } };
    const silence = (lines: string[]): string => ['POST /api/v1/silences HTTP/1.1', 'Host: 127.0.0.1', 'Content-Type: application/json', ...lines, '', ''].join('\r\n');
    // Content-Length says it: answered on the headers, the body never sent (rawExchange fails if the port waits for it).
    for (const raw of [silence([`Content-Length: ${50 * 1024 * 1024}`]), silence(['Expect: 100-continue', `Content-Length: ${50 * 1024 * 1024}`])]) {
      const answer = await rawExchange(service.httpUrl, raw);
      expect(answer.head, raw).toMatch(/^HTTP\/1\.1 413 Payload Too Large\r\n/);
      expect(answer.head, raw).toMatch(/\r\nconnection: close(\r\n|$)/i);
      expect(JSON.parse(answer.body.toString()), raw).toEqual(tooLarge);
    }
    // Chunked, with no end: refused as soon as 64 KiB are past, not at its end nor at http.requestTimeout.
    const chunk = Buffer.alloc(70 * 1024, 0x20);
    const answer = await rawExchange(service.httpUrl, Buffer.concat([Buffer.from(silence(['Transfer-Encoding: chunked'])), Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]));
    expect(answer.head).toMatch(/^HTTP\/1\.1 413 Payload Too Large\r\n/);
    expect(JSON.parse(answer.body.toString())).toEqual(tooLarge);
    // Gzip, chunked, with no end: 1 KiB sent that inflates to 1 MiB, refused as soon as 64 KiB of it is inflated.
    const bomb = gzipSync(Buffer.alloc(1024 * 1024, 0x20));
    expect(bomb.length).toBeLessThan(2048);
    const inflated = await rawExchange(service.httpUrl, Buffer.concat([Buffer.from(silence(['Content-Encoding: gzip', 'Transfer-Encoding: chunked'])), Buffer.from(`${bomb.length.toString(16)}\r\n`), bomb, Buffer.from('\r\n')]));
    expect(inflated.head).toMatch(/^HTTP\/1\.1 413 Payload Too Large\r\n/);
    expect(inflated.head).toMatch(/\r\nconnection: close(\r\n|$)/i);
    expect(JSON.parse(inflated.body.toString())).toEqual(tooLarge);
  });

  it('Expect: 100-continue on a request its headers alone refuse gets the refusal, not 100 Continue: the body is never asked for', async () => {
    for (const [raw, status] of [
      ['POST /api/v1/nope HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n', '404 Not Found'],
      ['POST /api/v1/silences HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n', '415 Unsupported Media Type'],
      ['POST /api/v1/silences HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://evil.example\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n', '403 Forbidden'],
    ] as const) {
      const answer = await rawExchange(service.httpUrl, raw);
      expect(answer.head, raw).toMatch(new RegExp(`^HTTP/1\\.1 ${status}\r\n`));
      expect(answer.head, raw).toMatch(/\r\nconnection: close(\r\n|$)/i);
    }
    // A body the route reads is asked for with 100 Continue, then read.
    const body = '{"matchers":[]}';
    const answer = await rawExchange(service.httpUrl, `POST /api/v1/silences HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    expect(answer.head).toMatch(/^HTTP\/1\.1 100 Continue$/);
    expect(answer.body.toString()).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[^]*"parameter":"matchers"/);
  });

  it('a route asked with a method it does not take is 405 with Allow; an unknown route 404; /metrics, /healthz and /readyz likewise', async () => {
    const del = await fetch(`${service.httpUrl}/api/v1/hooks?from=now-1h`, { method: 'DELETE' });
    expect(del.status).toBe(405);
    expect(del.headers.get('allow')).toBe('GET, HEAD');
    expect(((await del.json()) as { error: { code: string } }).error.code).toBe('method_not_allowed');
    const put = await fetch(`${service.httpUrl}/api/v1/silences`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, HEAD, POST');
    expect((await fetch(`${service.httpUrl}/api/v1/nope`, { method: 'DELETE' })).status).toBe(404);
    const metrics = await fetch(`${service.httpUrl}/metrics`, { method: 'POST' });
    expect(metrics.status).toBe(405);
    expect(metrics.headers.get('content-type')).toMatch(/application\/json/);
    expect(metrics.headers.get('allow')).toBe('GET, HEAD');
    // The probes too: the same Allow OPTIONS gives there, not the dashboard's "no page or file".
    for (const path of ['/healthz', '/readyz']) {
      for (const method of ['POST', 'PUT', 'DELETE']) {
        const res = await fetch(`${service.httpUrl}${path}`, { method });
        expect([res.status, res.headers.get('allow'), ((await res.json()) as { error: { code: string } }).error.code], `${method} ${path}`).toEqual([405, 'GET, HEAD', 'method_not_allowed']);
      }
      expect((await fetch(`${service.httpUrl}${path}`, { method: 'OPTIONS' })).headers.get('allow'), path).toBe('GET, HEAD');
    }
    // Dashboard paths too: JSON, not Express's HTML "Cannot POST /".
    for (const path of ['/', '/hooks/0123456789abcdef', '/vendor/chart.umd.min.js']) {
      const post = await fetch(`${service.httpUrl}${path}`, { method: 'POST' });
      expect(post.status, path).toBe(405);
      expect(post.headers.get('allow'), path).toBe('GET, HEAD');
      expect(((await post.json()) as { error: { code: string } }).error.code, path).toBe('method_not_allowed');
    }
    // A path nothing serves is not found, whatever the method.
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const res = await fetch(`${service.httpUrl}/no/such/page`, { method });
      expect([res.status, res.headers.get('allow'), ((await res.json()) as { error: { code: string } }).error.code], method).toEqual([404, null, 'not_found']);
    }
  });

  it('an OTLP export sent to the HTTP port instead of the OTLP/HTTP port is told which port takes it', async () => {
    for (const signal of ['logs', 'metrics', 'traces']) {
      const post = await fetch(`${service.httpUrl}/v1/${signal}`, { method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: new Uint8Array(0) });
      expect(post.status, signal).toBe(404);
      const { error } = (await post.json()) as { error: { code: string; message: string } };
      expect(error.code, signal).toBe('not_found');
      expect(error.message, signal).toBe(`POST /v1/${signal}: this port serves the API and dashboard; OTLP goes to the OTLP/HTTP port, ${service.otlpHttpAddress.port} (OTEL_EXPORTER_OTLP_ENDPOINT=http://<host>:${service.otlpHttpAddress.port})`);
    }
  });

  it('OPTIONS answers 204 with the Allow a 405 gives, on every route alike, and no CORS header for another origin', async () => {
    const H = '0123456789abcdef';
    const routes: [string, string][] = [
      ['/api/v1/hooks', 'GET, HEAD'], [`/api/v1/hooks/${H}/breakdown`, 'GET, HEAD'], [`/api/v1/hooks/${H}/guard-trims`, 'GET, HEAD'],
      ['/api/v1/overview', 'GET, HEAD'], ['/api/v1/silences', 'GET, HEAD, POST'], ['/api/v1/cluster', 'GET, HEAD'],
      ['/api/v1/forwarding/dead-letters/replay', 'POST'], ['/metrics', 'GET, HEAD'], ['/-/reload', 'POST'],
      // The dashboard's pages and files: a file is served from its folder, not by a route of its own.
      [`/hooks/${H}`, 'GET, HEAD'], ['/styles.css', 'GET, HEAD'],
    ];
    for (const [path, allow] of routes) {
      // What a browser sends before a request a page on another origin makes with a custom header.
      const res = await fetch(`${service.httpUrl}${path}`, {
        method: 'OPTIONS', headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
      });
      expect([res.status, res.headers.get('allow'), await res.text()], path).toEqual([204, allow, '']);
      expect([...res.headers.keys()].filter((k) => k.startsWith('access-control-')), path).toEqual([]);
      const wrong = await fetch(`${service.httpUrl}${path}`, { method: 'PATCH' });
      expect([wrong.status, wrong.headers.get('allow')], path).toEqual([405, allow]);
    }
    expect((await fetch(`${service.httpUrl}/api/v1/nope`, { method: 'OPTIONS' })).status).toBe(404);
    // A page on another origin reading the API directly gets no CORS header either, so its browser shows it nothing.
    const read = await fetch(`${service.httpUrl}/api/v1/hooks`, { headers: { origin: 'https://elsewhere.example' } });
    expect([read.status, read.headers.get('access-control-allow-origin')]).toEqual([200, null]);
  });

  it('OPTIONS * (the server itself, RFC 9110 section 9.3.7) answers 204 with every method some route takes', async () => {
    // fetch sends no asterisk target.
    const answer = await rawExchange(service.httpUrl, 'OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    expect(answer.head).toMatch(/^HTTP\/1\.1 204 No Content\r\n/);
    expect(/\r\nallow: ([^\r]*)/i.exec(answer.head)?.[1]).toBe('DELETE, GET, HEAD, OPTIONS, POST');
    expect(answer.head).not.toMatch(/\r\naccess-control-/i);
    expect(answer.body.length).toBe(0);
    // Any other method on it names no resource: still the 404 of a path with nothing there.
    const get = await rawExchange(service.httpUrl, 'GET * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    expect(get.head).toMatch(/^HTTP\/1\.1 404 Not Found\r\n/);
  });

  it('HEAD, ETag and If-None-Match as a poller uses them; answers are never cached; a trailing slash is the same route', async () => {
    const path = '/api/v1/hooks?from=now-7d&limit=2';
    const get = await fetch(`${service.httpUrl}${path}`);
    const body = await get.text();
    const etag = get.headers.get('etag');
    expect([get.status, get.headers.get('cache-control'), etag]).toEqual([200, 'no-store', expect.stringMatching(/^W\/"/)]);
    const head = await fetch(`${service.httpUrl}${path}`, { method: 'HEAD' });
    expect([head.status, head.headers.get('etag'), head.headers.get('content-length'), await head.text()]).toEqual([200, etag, String(Buffer.byteLength(body)), '']);
    const same = await fetch(`${service.httpUrl}${path}`, { headers: { 'if-none-match': etag! } });
    expect([same.status, await same.text()]).toEqual([304, '']);
    const other = await fetch(`${service.httpUrl}/api/v1/hooks?from=now-7d&limit=1`, { headers: { 'if-none-match': etag! } });
    expect(other.status).toBe(200);
    const slash = await fetch(`${service.httpUrl}/api/v1/hooks/?from=now-7d&limit=2`);
    expect([slash.status, await slash.text()]).toEqual([200, body]);
  });

  it('every 404 is the JSON error, hardened, but a browser opening a page the dashboard lacks gets its own page', async () => {
    const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
    const missing: [string, string][] = [
      ['/style.css', BROWSER], ['/dashboard/src/x.ts', '*/*'], ['/shared/src/nope.ts', '*/*'], ['/vendor/nope.js', '*/*'],
      ['/api/v1/nope', BROWSER], ['/api', '*/*'], ['/nope', '*/*'], ['/nope', 'application/json'], ['/hooks/0123456789abcdef/nope', '*/*'],
    ];
    for (const method of ['GET', 'HEAD']) {
      for (const [path, accept] of missing) {
        const res = await fetch(`${service.httpUrl}${path}`, { method, headers: { accept } });
        const body = await res.text();
        const what = `${method} ${path} (${accept})`;
        expect([res.status, res.headers.get('content-type')], what).toEqual([404, 'application/json; charset=utf-8']);
        expect([res.headers.get('x-content-type-options'), res.headers.get('x-frame-options'), res.headers.get('cache-control')], what).toEqual(['nosniff', 'DENY', 'no-store']);
        expect(res.headers.get('content-security-policy'), what).toContain("frame-ancestors 'none'");
        if (method === 'GET') expect((JSON.parse(body) as { error: { code: string } }).error.code, what).toBe('not_found');
      }
    }
    // A browser's navigation to a page the dashboard has not: the page, with a 404, so the dashboard says so itself.
    const page = await fetch(`${service.httpUrl}/nope`, { headers: { accept: BROWSER } });
    expect([page.status, page.headers.get('content-type'), page.headers.get('vary')]).toEqual([404, 'text/html; charset=utf-8', 'Accept']);
    expect(await page.text()).toContain('/dashboard/src/main.ts');
    // Deep links stay the page, whatever the client accepts.
    for (const accept of [BROWSER, '*/*', 'application/json']) {
      const link = await fetch(`${service.httpUrl}/hooks/0123456789abcdef`, { headers: { accept } });
      expect([link.status, link.headers.get('content-type')], accept).toEqual([200, 'text/html; charset=utf-8']);
    }
  });

  it('an unknown hook is 404, health endpoints answer', async () => {
    expect((await getJson(service.httpUrl, '/api/v1/hooks/0123456789abcdef/series')).status).toBe(404);
    expect((await getJson(service.httpUrl, '/healthz')).body).toEqual({ status: 'ok' });
    expect((await getJson(service.httpUrl, '/readyz')).body).toEqual({ status: 'ready' });
    // Strict-Transport-Security is sent over https only (tls-http.test.ts): over plain http a browser ignores it.
    expect((await fetch(`${service.httpUrl}/api/v1/overview`)).headers.get('strict-transport-security')).toBeNull();
  });
});

// Last in the file: it stores more events.
describe('GET /api/v1/hooks/:id/breakdown while events arrive', () => {
  it('a value that arrives between two pages makes the next page neither repeat a row nor skip one', async () => {
    const post = async (records: unknown[]): Promise<void> => {
      const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: records }] }] }), { 'content-type': 'application/json' });
      expect(res.status).toBe(200);
    };
    // alice 2, bob 2, carol 1.
    await post(['alice', 'alice', 'bob', 'bob', 'carol'].map((user, i) => event('SubagentStop:paging', `2026-11-30T09:0${i}:00Z`, 100 + i, { 'user.id': user })));
    const { body: hooks } = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-7d&name=paging');
    const path = `/api/v1/hooks/${hooks.hooks[0]!.id}/breakdown?from=now-7d&dimension=user.id&limit=1`;
    const first = await getJson<BreakdownResponse>(service.httpUrl, path);
    expect([first.body.rows.map((r) => r.value), first.body.total]).toEqual([['alice'], 3]);
    // dave, with more executions than anyone, sorts before the page just read.
    await post([0, 1, 2].map((i) => event('SubagentStop:paging', `2026-11-30T09:1${i}:00Z`, 200 + i, { 'user.id': 'dave' })));
    const values: string[] = [];
    const totals = new Set<number>();
    for (let cursor = first.body.nextCursor; cursor !== null;) {
      const next = await getJson<BreakdownResponse>(service.httpUrl, `${path}&cursor=${cursor}`);
      expect(next.status).toBe(200);
      values.push(...next.body.rows.map((r) => r.value));
      totals.add(next.body.total);
      cursor = next.body.nextCursor;
    }
    expect([values, [...totals]]).toEqual([['bob', 'carol'], [4]]);
  });
});

/**
 * The routes of hookwatch's HTTP port that a page names with their method (`GET /api/v1/hooks/:id`,
 * `GET/POST /api/v1/silences`, `POST /-/reload`), as [method, path] with each `:param` or `<param>` as `x`.
 * Paths of the OTLP port (`/v1/logs`) and of other servers (Alertmanager's `/api/v2/alerts`) are left out.
 */
function namedRoutes(text: string): [string, string][] {
  const routes = new Map<string, [string, string]>();
  for (const m of text.matchAll(/\b((?:GET|HEAD|POST|PUT|PATCH|DELETE)(?:\/(?:GET|HEAD|POST|PUT|PATCH|DELETE))*) (\/(?:api\/v1|-)\/[A-Za-z0-9_:<>./-]*[A-Za-z0-9_>]|\/metrics|\/healthz|\/readyz)/g)) {
    const path = (m[2] as string).replace(/\/(?::[A-Za-z]+|<[^>]*>)/g, '/x');
    for (const method of (m[1] as string).split('/')) routes.set(`${method} ${path}`, [method, path]);
  }
  return [...routes.values()];
}

describe('routes named in README.md, SECURITY.md and docs/*.md', () => {
  /** A request a page names as one no route answers, to say what it gets. */
  const REFUSED = ['POST /api/v1/hooks'];

  it('are served with that method: OPTIONS on the path lists it in Allow', async () => {
    const root = new URL('../../../', import.meta.url);
    const pages = ['README.md', 'SECURITY.md', ...readdirSync(new URL('docs/', root)).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    const routes = new Map(pages.flatMap((p) => namedRoutes(readFileSync(new URL(p, root), 'utf8'))).map(([m, path]) => [`${m} ${path}`, [m, path] as const]));
    expect(routes.size, 'routes named').toBeGreaterThan(20);
    const missing: string[] = [];
    for (const [name, [method, path]] of routes) {
      const res = await fetch(`${service.httpUrl}${path}`, { method: 'OPTIONS' });
      const allow = (res.headers.get('allow') ?? '').split(/,\s*/);
      if (REFUSED.includes(name) === allow.includes(method)) missing.push(`${name}: OPTIONS answered ${res.status}, Allow: ${allow.join(', ')}`);
    }
    expect(missing).toEqual([]);
  });

  it('reads a route with its method, several methods and placeholders, and leaves other servers\' paths out', () => {
    const text = '`GET/POST /api/v1/silences`, `DELETE /api/v1/silences/:id`, `POST /api/v1/receivers/<name>/test`, `POST /-/reload`, `GET /healthz`, `POST /v1/logs`, `POST /api/v2/alerts`';
    expect(namedRoutes(text)).toEqual([
      ['GET', '/api/v1/silences'], ['POST', '/api/v1/silences'], ['DELETE', '/api/v1/silences/x'], ['POST', '/api/v1/receivers/x/test'], ['POST', '/-/reload'], ['GET', '/healthz'],
    ]);
  });
});

describe('README API reference', () => {
  /** The names at the top level of a documented shape such as `{ from, to, hooks: [{ id, ... }], total }`. */
  function topLevelKeys(shape: string): string[] {
    let inner = shape.trim().slice(1, -1);
    for (let prev = ''; prev !== inner;) {
      prev = inner;
      inner = inner.replace(/\{[^{}[\]]*\}|\[[^{}[\]]*\]/g, '');
    }
    return inner.split(',').map((part) => /^\s*([A-Za-z]+)/.exec(part)?.[1]).filter((k): k is string => k !== undefined).sort();
  }

  /** Each GET route of the reference table whose answer is a documented object, with that object. */
  function documentedAnswers(): [string, string][] {
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
    const table = readme.slice(readme.indexOf('## API reference'), readme.indexOf('## ', readme.indexOf('## API reference') + 3));
    const rows: [string, string][] = [];
    for (const m of table.matchAll(/^\| `GET (\/api\/v1\/[^`?]+)[^`]*` \| [^`|]*`(\{.*?\})`/gm)) rows.push([m[1]!, m[2]!]);
    return rows;
  }

  it('lists the top-level fields each route answers with, no more and no fewer', async () => {
    const { body: list } = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-7d');
    const id = list.hooks[0]!.id;
    const rows = documentedAnswers();
    expect(rows.map(([route]) => route)).toEqual(expect.arrayContaining(['/api/v1/hooks', '/api/v1/hooks/:id', '/api/v1/hooks/:id/commands', '/api/v1/overview', '/api/v1/fleet/series']));
    for (const [route, shape] of rows) {
      const { status, body } = await getJson<Record<string, unknown>>(service.httpUrl, `${route.replace(':id', id)}?from=now-7d`);
      expect(status, route).toBe(200);
      expect(Object.keys(body).sort(), `${route}: ${shape}`).toEqual(topLevelKeys(shape));
    }
    // The items of the lists documented field by field.
    const { body: overview } = await getJson<Record<string, unknown[]>>(service.httpUrl, '/api/v1/overview?from=now-7d');
    for (const [route, field, items] of [['/api/v1/hooks', 'hooks', list.hooks], ['/api/v1/overview', 'clientVersions', overview['clientVersions']]] as const) {
      const shape = rows.find(([r]) => r === route)?.[1] ?? '';
      const item = new RegExp(`${field}: \\[(\\{.*?\\})\\]`).exec(shape)?.[1] ?? '';
      expect(items?.length, route).toBeGreaterThan(0);
      expect(Object.keys(items?.[0] as object).sort(), `${route} ${field}: ${item}`).toEqual(topLevelKeys(item));
    }
  });
});
