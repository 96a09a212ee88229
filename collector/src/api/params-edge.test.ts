/**
 * Hostile and odd query parameters get a 400 naming the parameter, never a 500: relative times past the range
 * a date can hold, calendar dates that do not exist, repeated parameters.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hookId } from '../hooks/extract.ts';
import { SqliteStore } from '../store/sqlite/index.ts';
import { serveApi, type ApiServer } from '../../test/support/api-server.ts';
import { hookEvent } from '../../test/support/alerting.ts';
import { ParamError, parseTime } from './params.ts';

const NOW = Date.parse('2026-11-30T12:00:00Z');
const store = new SqliteStore({ path: ':memory:', dimensions: ['team'] });
let api: ApiServer;
let base: string;

beforeAll(async () => {
  api = await serveApi(store, NOW);
  base = api.base;
});
afterAll(async () => {
  await api.close();
  await store.close();
});

async function get(path: string): Promise<{ status: number; body: { error?: { code: string; parameter?: string } } }> {
  const res = await fetch(base + path, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: (await res.json()) as { error?: { code: string; parameter?: string } } };
}

describe('time parameters out of range', () => {
  const id = hookId('Stop', 'Stop');
  it.each([
    ['/api/v1/hooks?from=now%2B100000000d&to=now%2B100000001d', 'to'],
    ['/api/v1/hooks?from=now-200000001d&to=now-200000000d', 'to'],
    ['/api/v1/overview?from=now%2B100000000d&to=now%2B100000001d', 'to'],
    [`/api/v1/hooks/${id}/series?from=now%2B100000000d&to=now%2B100000001d`, 'to'],
  ])('%s is a 400 naming %s', async (path, parameter) => {
    const { status, body } = await get(path);
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ code: 'bad_parameter', parameter });
  });

  it('parseTime refuses a calendar date that does not exist instead of rolling it over', () => {
    expect(() => parseTime('2026-02-30T00:00:00Z', NOW, 'from')).toThrow(ParamError);
    expect(() => parseTime('2026-13-01T00:00:00Z', NOW, 'from')).toThrow(ParamError);
    expect(() => parseTime('2026-11-30T24:30:00Z', NOW, 'from')).toThrow(ParamError);
    expect(parseTime('2028-02-29T23:59:59+01:00', NOW, 'from')).toBe(Date.parse('2028-02-29T22:59:59Z'));
    // RFC 3339 allows a lower-case t and z; a year before 100 is a year too.
    expect(parseTime('2026-02-10t08:00:00z', NOW, 'from')).toBe(Date.parse('2026-02-10T08:00:00Z'));
    expect(parseTime('0050-03-01T00:00:00Z', NOW, 'from')).toBe(Date.parse('0050-03-01T00:00:00Z'));
  });

  it.each([
    ['/api/v1/hooks?from=now-24', 'from', /no unit|units ms, s, m, h, d, w/],
    [`/api/v1/hooks/${id}/series?from=now-1h&to=now-2h`, 'from', /earlier than to/],
    [`/api/v1/hooks/${id}/series?from=now-1h&step=1000000d`, 'step', /at most 400d/],
    ['/api/v1/overview?from=1764489600000', 'from', /milliseconds\? divide by 1000/],
    ['/api/v1/overview?from=2026', 'from', /before 1973 as Unix seconds.*RFC 3339/],
    ['/api/v1/hooks?to=20261130', 'to', /before 1973 as Unix seconds/],
    // Answers write from and to in RFC 3339: a range past its years would come back as +010000-01-01T00:00:00.000Z.
    ['/api/v1/hooks?from=9999-12-31T23:00:00Z&to=9999-12-31T23:59:59Z', 'to', /must end by 9999-12-31T23:59:00Z/],
    ['/api/v1/hooks?from=9999-12-31T23:00:00Z&to=253402300799', 'to', /must end by 9999-12-31T23:59:00Z/],
    ['/api/v1/overview?from=now%2B3000000d&to=now%2B3000001d', 'to', /must end by 9999-12-31T23:59:00Z/],
    [`/api/v1/hooks/${id}/series?from=now-3000000d&to=now-2999999d`, 'from', /must start at 0000-01-01T00:00:00Z or later/],
    ['/api/v1/hooks?to=0000-01-01T00:00:00Z', 'to', /default range \(24 hours before to\) must start at 0000-01-01T00:00:00Z/],
    // A "+" left as it is in a query string is a space (as curl sends what it is given): the offset, or now+.
    ['/api/v1/hooks?from=2026-11-30T08:00:00+05:30', 'from', /"\+" in a URL's query is read as a space, so write it as %2B: "2026-11-30T08:00:00%2B05:30"/],
    [`/api/v1/hooks/${id}/series?from=now-1h&to=now+1h`, 'to', /"\+" in a URL's query is read as a space, so write it as %2B: "now%2B1h"/],
  ])('%s is a 400 naming %s and what is wrong', async (path, parameter, message) => {
    const res = await fetch(base + path, { signal: AbortSignal.timeout(10_000) });
    const body = (await res.json()) as { error?: { code: string; parameter?: string; message?: string } };
    expect(res.status).toBe(400);
    expect(body.error).toMatchObject({ code: 'bad_parameter', parameter });
    expect(body.error?.message).toMatch(message);
  });

  it('takes Unix seconds, as Prometheus does, and RFC 3339 times with any offset', async () => {
    const res = await fetch(`${base}/api/v1/hooks?from=1796018400&to=2026-11-30T12:30:00%2B05:30`, { signal: AbortSignal.timeout(10_000) });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ from: '2026-11-30T06:00:00.000Z', to: '2026-11-30T07:00:00.000Z' });
    expect(parseTime('1796018400.5', NOW, 'from')).toBe(Date.parse('2026-11-30T06:00:00.500Z'));
  });

  it('takes a range at either end of the years RFC 3339 writes, and answers it in RFC 3339', async () => {
    for (const [from, to] of [['0000-01-01T00:00:00Z', '0000-01-02T00:00:00Z'], ['9999-12-31T00:00:00Z', '9999-12-31T23:59:00Z']] as const) {
      const res = await fetch(`${base}/api/v1/fleet/series?from=${from}&to=${to}&step=1h`, { signal: AbortSignal.timeout(10_000) });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { from: string; to: string; buckets: string[]; ends: string[] };
      expect([body.from, body.to]).toEqual([from.replace('Z', '.000Z'), to.replace('Z', '.000Z')]);
      for (const t of [...body.buckets, ...body.ends]) expect(t).toMatch(/^\d{4}-/);
    }
  });

  it('starts a first bucket that the step\'s grid puts before 0000-01-01 at from, as no answer writes a time it would refuse', async () => {
    const FIRST = Date.parse('0000-01-01T00:00:00Z');
    const hook = hookId('Stop', 'Stop:year0');
    await store.ingest([{
      kind: 'complete' as const, dedupKey: 'year0', hookId: hook, hookEvent: 'Stop', hookName: 'Stop:year0', timeMs: NOW - 7 * 86_400_000, numHooks: 1, numSuccess: 1,
      numBlocking: 0, numNonBlockingError: 0, numCancelled: 0, durationMs: 1, stdoutChars: 100, additionalContextChars: null, systemMessageChars: null,
      initialUserMessageChars: null, outputsPersisted: 0, sizesKnown: true, status: 'ok' as const, serviceName: 'claude-code', serviceVersion: '2.1.332',
      sessionId: 's', userId: 'u', userEmail: '', userAccountUuid: '', organizationId: '', terminalType: '', source: 'otlp' as const, extra: {},
    }]);
    // 1 week and 7 minutes are not on a grid (multiples of the step since 1970) that starts a bucket at year 0000;
    // a year from 0000-01-01 without a step is answered in weeks. Buckets after the first stay on the grid.
    const cases = [
      ['from=0000-01-01T00:00:00Z&to=0000-03-01T00:00:00Z&step=1w', '0000-01-06T00:00:00.000Z'],
      ['from=0000-01-01T00:00:00Z&to=0000-01-01T01:00:00Z&step=7m', '0000-01-01T00:04:00.000Z'],
      ['from=0000-01-01T00:00:00Z&to=0001-01-01T00:00:00Z', '0000-01-06T00:00:00.000Z'],
    ];
    for (const [query, second] of cases) {
      const series = (await (await fetch(`${base}/api/v1/hooks/${hook}/series?${query}`)).json()) as { buckets: { start: string; end: string }[] };
      const fleet = (await (await fetch(`${base}/api/v1/fleet/series?${query}`)).json()) as { buckets: string[]; ends: string[] };
      expect(series.buckets.slice(0, 2).map((b) => b.start), query).toEqual(['0000-01-01T00:00:00.000Z', second]);
      expect([series.buckets[0]?.end, ...fleet.buckets.slice(0, 2), fleet.ends[0]], query).toEqual([second, '0000-01-01T00:00:00.000Z', second, second]);
      for (const t of [...series.buckets.flatMap((b) => [b.start, b.end]), ...fleet.buckets, ...fleet.ends]) {
        expect(parseTime(t, NOW, 'from'), `${query}: ${t}`).toBeGreaterThanOrEqual(FIRST);
      }
    }
  });

  it('parseTime refuses a relative time a Date cannot hold', () => {
    expect(() => parseTime('now+100000000d', NOW, 'to')).toThrow(ParamError);
    expect(parseTime('now-7d', NOW, 'from')).toBe(NOW - 7 * 86_400_000);
  });
});

describe('series steps', () => {
  // 7-minute buckets start on multiples of 7 minutes since 1970: this `from` is 5 minutes into one, so the first
  // bucket starts before it and a range of 2,000 steps takes 2,001 buckets.
  const from = Date.parse('2026-12-01T00:01:00Z');
  const step = 7 * 60_000;
  const id = hookId('Stop', 'Stop');
  const routes = (to: number): string[] => {
    const query = `from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}&step=7m`;
    return [`/api/v1/fleet/series?${query}`, `/api/v1/hooks/${id}/series?${query}`];
  };

  it('refuses a step whose buckets, counted from the grid, are more than 2,000', async () => {
    expect((from / 60_000) % 7).toBe(5);
    for (const path of routes(from + 2000 * step)) {
      const { status, body } = await get(path);
      expect([status, body.error?.code, body.error?.parameter], path).toEqual([400, 'bad_parameter', 'step']);
    }
  });

  it('answers 2,000 buckets', async () => {
    const [fleet] = routes(from + 2000 * step - 5 * 60_000);
    const res = await fetch(`${base}${fleet}`, { signal: AbortSignal.timeout(10_000) });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { buckets: string[] }).buckets).toHaveLength(2000);
  });
});

describe('malformed URLs', () => {
  it.each(['/api/v1/hooks/%E0%A4%A', '/api/v1/hooks/%ZZ/series', '/api/v1/hooks/%ZZ/breakdown'])('%s is a 400, not a 500', async (path) => {
    const { status, body } = await get(path);
    expect(status).toBe(400);
    expect(body.error?.code).toBe('bad_request');
  });
});

describe('hook list pages', () => {
  it.each([
    ['/api/v1/hooks?limit=0', 'limit'],
    ['/api/v1/hooks?limit=5001', 'limit'],
    ['/api/v1/hooks?limit=1e3', 'limit'],
    ['/api/v1/hooks?cursor=-1', 'cursor'],
    ['/api/v1/hooks?cursor=abc', 'cursor'],
    ['/api/v1/hooks?limit=1&limit=2', 'limit'],
  ])('%s is refused with 400 naming %s', async (path, parameter) => {
    const r = await get(path);
    expect(r.status).toBe(400);
    expect(r.body.error?.parameter).toBe(parameter);
  });

  it('pages through every hook in order, each once', async () => {
    const events = Array.from({ length: 7 }, (_, i) => ({
      kind: 'complete' as const, dedupKey: `page-${i}`, hookId: hookId('Stop', `Stop:p${i}`), hookEvent: 'Stop', hookName: `Stop:p${i}`,
      timeMs: NOW - 60_000, numHooks: 1, numSuccess: 1, numBlocking: 0, numNonBlockingError: 0, numCancelled: 0, durationMs: 1,
      stdoutChars: 100 * (i + 1), additionalContextChars: null, systemMessageChars: null, initialUserMessageChars: null, outputsPersisted: 0,
      sizesKnown: true, status: 'ok' as const, serviceName: 'claude-code', serviceVersion: '2.1.332', sessionId: 's', userId: 'u', userEmail: '',
      userAccountUuid: '', organizationId: '', terminalType: '', source: 'otlp' as const, extra: {},
    }));
    await store.ingest(events);
    const seen: string[] = [];
    let cursor: string | null = '';
    let pages = 0;
    while (cursor !== null) {
      const res = await fetch(`${base}/api/v1/hooks?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      const body = (await res.json()) as { hooks: { hookName: string }[]; total: number; nextCursor: string | null };
      expect(body.total).toBe(7);
      expect(body.hooks.length).toBeLessThanOrEqual(3);
      seen.push(...body.hooks.map((h) => h.hookName));
      cursor = body.nextCursor;
      pages++;
    }
    expect(pages).toBe(3);
    expect(new Set(seen).size).toBe(7);
  });

  it('goes on after the hook a page ended on when a hook moves up between two requests: none listed twice, none other skipped', async () => {
    const names = ['Stop:q0', 'Stop:q1', 'Stop:q2', 'Stop:q3'];
    await store.ingest(names.map((hookName, i) => hookEvent({ hookName, timeMs: NOW - 60_000, additionalContextChars: 1000 * (i + 1), outputsPersisted: 0 })));
    const page = async (cursor?: string): Promise<{ hooks: string[]; nextCursor: string | null }> => {
      const res = await fetch(`${base}/api/v1/hooks?from=now-1h&to=now&name=Stop:q&limit=2${cursor === undefined ? '' : `&cursor=${cursor}`}`);
      const body = (await res.json()) as { hooks: { hookName: string }[]; nextCursor: string | null };
      return { hooks: body.hooks.map((h) => h.hookName), nextCursor: body.nextCursor };
    };
    const first = await page();
    expect(first.hooks).toEqual(['Stop:q3', 'Stop:q2']);
    // q0 goes over the cap: riskiest now, ahead of the hooks the first page listed.
    await store.ingest([hookEvent({ hookName: 'Stop:q0', timeMs: NOW - 30_000, additionalContextChars: 12_000, outputsPersisted: 1 })]);
    const second = await page(first.nextCursor ?? undefined);
    // Neither q2 again nor q1 skipped; q0, moved up past the cursor, is on neither page (as on a breakdown): a
    // client that starts over sees it first.
    expect(second).toEqual({ hooks: ['Stop:q1'], nextCursor: null });
  });

  it('takes back the cursor of a page ending on a hook with the longest name kept, and goes on to the next hook', async () => {
    // 1,024 characters (the most a hook_name keeps), each written in 6 bytes by JSON (\u0001): a cursor of over
    // 8,000 characters, near the longest parseHookCursor takes.
    const long = `Stop:${'\u0001'.repeat(1019)}`;
    const other = `${long.slice(0, -1)}x`;
    await store.ingest([long, other].map((hookName) => hookEvent({ hookName, timeMs: NOW - 60_000 })));
    const page = async (cursor?: string): Promise<{ status: number; hooks: string[]; nextCursor: string | null }> => {
      const res = await fetch(`${base}/api/v1/hooks?from=now-1h&to=now&name=%01%01&limit=1${cursor === undefined ? '' : `&cursor=${cursor}`}`);
      const body = (await res.json()) as { hooks?: { hookName: string }[]; nextCursor?: string | null };
      return { status: res.status, hooks: (body.hooks ?? []).map((h) => h.hookName), nextCursor: body.nextCursor ?? null };
    };
    const first = await page();
    expect(first.hooks.map((h) => h.length)).toEqual([1024]);
    expect(first.nextCursor?.length).toBeGreaterThan(8000);
    // The other hook, and only it: not an empty page, not the first page's hook again.
    const next = await page(first.nextCursor ?? undefined);
    expect(next).toEqual({ status: 200, hooks: [long, other].filter((n) => n !== first.hooks[0]), nextCursor: null });
  });
});
