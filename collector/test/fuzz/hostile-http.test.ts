/**
 * Hostile input through the real OTLP/HTTP receiver and API: gzip bombs, 10,001-deep nesting, a million
 * attributes, invalid UTF-8, huge strings, NaN/Infinity/negative counts, path traversal in ids, oversized
 * ranges, any query string on any API route. Each gets a clear 4xx (or a partial success), never a 500, a crash or a hang, and the service keeps
 * answering after it.
 */
import fc from 'fast-check';
import { request as httpRequest } from 'node:http';
import { deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlertsResponse, HooksResponse } from '../../../shared/src/api.ts';
import { getJson, postOtlp, startTestService, type TestService } from '../helpers.ts';
import { protoType } from '../support/otlp-proto.ts';
import { kv, logRecord, manyAttributes, nestedArrays, request } from './wire.ts';

const MiB = 1024 * 1024;
const PROTO = { 'content-type': 'application/x-protobuf' };
const JSON_CT = { 'content-type': 'application/json' };

let small: TestService; // 1 MiB request limit
let big: TestService; // the default 20 MiB limit

beforeAll(async () => {
  [small, big] = await Promise.all([startTestService({ HOOKWATCH_OTLP_MAX_REQUEST_BYTES: '1MiB' }), startTestService()]);
});

afterAll(async () => {
  await Promise.all([small?.close(), big?.close()]);
});

/** The service still takes a normal request. */
async function stillServes(s: TestService): Promise<void> {
  expect((await postOtlp(s.otlpHttpUrl, '/v1/logs', '{}', JSON_CT)).status).toBe(200);
}

/** A hook_execution_complete record with extra or replacing attributes (protobuf KeyValues). */
function hookRecord(overrides: Record<string, string | Buffer>, seq: number): Buffer {
  const attrs: Record<string, string | Buffer> = {
    'event.name': 'hook_execution_complete',
    'session.id': 'hostile-session',
    'event.sequence': String(seq),
    hook_event: 'PostToolUse',
    hook_name: 'PostToolUse:Bash',
    num_hooks: '1',
    num_success: '1',
    additional_context_chars: '120',
    num_outputs_persisted: '0',
    ...overrides,
  };
  return logRecord(Object.entries(attrs).map(([k, v]) => kv(k, v)));
}

async function hooks(s: TestService): Promise<HooksResponse['hooks']> {
  const res = await getJson<HooksResponse>(s.httpUrl, '/api/v1/hooks?from=now-30d&to=now%2B1d');
  expect(res.status).toBe(200);
  return res.body.hooks;
}

describe('compressed bodies', () => {
  const bomb = gzipSync(Buffer.alloc(128 * MiB));

  for (const [name, body, encoding] of [['gzip', bomb, 'gzip'], ['deflate', deflateSync(Buffer.alloc(128 * MiB)), 'deflate']] as const) {
    it(`a ${name} bomb (${Math.round(body.length / 1024)} KiB inflating to 128 MiB) gets 413 without inflating it`, async () => {
      // A small request of the same encoding first: what its first use sets up (zlib, its thread pool, the
      // receiver's path) is not the bomb's doing.
      const warm = encoding === 'gzip' ? gzipSync('{}') : deflateSync('{}');
      expect((await postOtlp(small.otlpHttpUrl, '/v1/logs', warm, { ...JSON_CT, 'content-encoding': encoding })).status).toBe(200);
      const before = process.memoryUsage.rss();
      let peak = before;
      const sampler = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage.rss());
      }, 2);
      const res = await postOtlp(small.otlpHttpUrl, '/v1/logs', body, { ...PROTO, 'content-encoding': encoding });
      clearInterval(sampler);
      peak = Math.max(peak, process.memoryUsage.rss());
      expect(res.status).toBe(413);
      expect(res.body.toString('latin1')).toContain('after decompression');
      // Inflation stops at the 1 MiB limit: nowhere near the 128 MiB the bomb holds.
      expect(peak - before).toBeLessThan(48 * MiB);
      await stillServes(small);
    });
  }
});

describe('deep nesting', () => {
  it('a 10,001-deep AnyValue in protobuf is refused with 400', async () => {
    const body = request([logRecord([kv('event.name', 'x')], nestedArrays(10_001))]);
    const res = await postOtlp(big.otlpHttpUrl, '/v1/logs', body, PROTO);
    expect(res.status).toBe(400);
    expect(res.body.toString('latin1')).toMatch(/nested deeper than \d+ levels/);
    await stillServes(big);
  });

  it('a 10,001-deep AnyValue in JSON (arrays and kvlists) is refused with 400', async () => {
    for (const [open, close] of [['{"arrayValue":{"values":[', ']}}'], ['{"kvlistValue":{"values":[{"key":"k","value":', '}]}}']] as const) {
      const value = open.repeat(10_001) + '{"stringValue":"deep"}' + close.repeat(10_001);
      const body = `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":${value}}]}]}]}`;
      const res = await postOtlp(big.otlpHttpUrl, '/v1/logs', body, JSON_CT);
      expect(res.status).toBe(400);
      expect((JSON.parse(res.body.toString()) as { message: string }).message).toMatch(/nested deeper than \d+ levels/);
    }
    await stillServes(big);
  });
});

describe('a million attributes', () => {
  it('within the size limit: answered in bounded time and stored; over it: 413', async () => {
    const body = request([Buffer.concat([hookRecord({}, 1), manyAttributes(1_000_000)])]);
    expect(body.length).toBeLessThan(20 * MiB);
    const t0 = performance.now();
    const res = await postOtlp(big.otlpHttpUrl, '/v1/logs', body, PROTO);
    expect(res.status).toBe(200);
    // About 3 s on an idle 2-core machine; the bound catches a hang or a quadratic path, not slowness.
    expect(performance.now() - t0).toBeLessThan(60_000);
    expect((await hooks(big)).some((h) => h.hookName === 'PostToolUse:Bash')).toBe(true);
    // The same in JSON is 40+ MiB: refused before any of it is parsed.
    const attr = '{"key":"k","value":{"stringValue":"v"}},';
    const json = `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"attributes":[${attr.repeat(1_000_000)}{"key":"last"}]}]}]}]}`;
    expect((await postOtlp(big.otlpHttpUrl, '/v1/logs', json, JSON_CT)).status).toBe(413);
    await stillServes(big);
  }, 150_000);
});

describe('strings', () => {
  it('invalid UTF-8 in protobuf and JSON becomes U+FFFD, never a 500', async () => {
    const bad = Buffer.from([0x42, 0xff, 0xfe, 0xc3, 0x28, 0x41]);
    const proto = request([hookRecord({ hook_event: 'Stop', hook_name: Buffer.concat([Buffer.from('Stop:'), bad]) }, 2)]);
    expect((await postOtlp(small.otlpHttpUrl, '/v1/logs', proto, PROTO)).status).toBe(200);
    const json = Buffer.concat([
      Buffer.from('{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"attributes":[{"key":"event.name","value":{"stringValue":"hook_execution_complete"}},{"key":"hook_event","value":{"stringValue":"Stop"}},{"key":"hook_name","value":{"stringValue":"Json:'),
      bad,
      Buffer.from('"}}]}]}]}]}'),
    ]);
    expect((await postOtlp(small.otlpHttpUrl, '/v1/logs', json, JSON_CT)).status).toBe(200);
    const names = (await hooks(small)).map((h) => h.hookName);
    expect(names).toContain('Stop:B\ufffd\ufffd\ufffd(A');
    expect(names).toContain('Json:B\ufffd\ufffd\ufffd(A');
  });

  it('a 1 MB hook name is rejected as a record (partial success); a 5 MB attribute elsewhere is fine', async () => {
    const body = request([
      hookRecord({ hook_name: 'H'.repeat(MiB) }, 3),
      logRecord([kv('event.name', 'api_request'), kv('prompt', 'p'.repeat(5 * MiB))]),
    ]);
    const res = await postOtlp(big.otlpHttpUrl, '/v1/logs', body, PROTO);
    expect(res.status).toBe(200);
    // ExportLogsServiceResponse.partial_success: rejected_log_records = 1.
    expect(res.body.subarray(0, 4).equals(Buffer.from([0x0a, res.body[1] as number, 0x08, 0x01]))).toBe(true);
    expect(res.body.toString('latin1')).toContain('hook_name longer than 1024 characters');
    expect((await hooks(big)).every((h) => h.hookName.length <= 1024)).toBe(true);
  });

  it('an overflow hook\'s name is refused as a record, and no name passes for one: no hook_limit alert below store.maxHooks', async () => {
    const body = request([
      hookRecord({ hook_event: 'PostToolUse', hook_name: 'PostToolUse:(overflow)' }, 4),
      hookRecord({ hook_event: '(overflow)', hook_name: '(overflow):(overflow)' }, 5),
      // Not an overflow hook's name (another event, another case): stored as any hook.
      hookRecord({ hook_event: 'Stop', hook_name: 'Stop:(OVERFLOW)' }, 6),
      hookRecord({ hook_event: 'Stop', hook_name: 'Other:(overflow)' }, 7),
    ]);
    const res = await postOtlp(small.otlpHttpUrl, '/v1/logs', body, PROTO);
    expect(res.status).toBe(200);
    const response = protoType('ExportLogsServiceResponse');
    const { partial_success: partial } = response.toObject(response.decode(res.body), { longs: Number }) as { partial_success: { rejected_log_records: number; error_message: string } };
    expect(partial.rejected_log_records).toBe(2);
    expect(partial.error_message).toContain('hook_name "PostToolUse:(overflow)" is the name of the hook that counts new hook names past store.maxHooks');
    const names = (await hooks(small)).map((h) => h.hookName);
    expect(names).toEqual(expect.arrayContaining(['Stop:(OVERFLOW)', 'Other:(overflow)']));
    expect(names).not.toContain('PostToolUse:(overflow)');
    expect(names).not.toContain('(overflow):(overflow)');
    await small.alerting.engine.evaluate('all');
    const alerts = await getJson<AlertsResponse>(small.httpUrl, '/api/v1/alerts');
    expect(alerts.body.alerts.filter((a) => a.rule === 'hook_limit')).toEqual([]);
  });
});

describe('counts', () => {
  it('NaN, Infinity, negative, fractional and exponent counts reject only their records; the good one is stored', async () => {
    const rec = (seq: number, hookName: string, count: unknown): unknown => ({
      attributes: [
        { key: 'event.name', value: { stringValue: 'hook_execution_complete' } },
        { key: 'session.id', value: { stringValue: 'counts-session' } },
        { key: 'event.sequence', value: { intValue: seq } },
        { key: 'hook_event', value: { stringValue: 'PreToolUse' } },
        { key: 'hook_name', value: { stringValue: hookName } },
        { key: 'num_hooks', value: { stringValue: '1' } },
        { key: 'num_success', value: count },
      ],
    });
    const bad = [{ doubleValue: 'NaN' }, { doubleValue: 'Infinity' }, { doubleValue: '-Infinity' }, { intValue: '-1' }, { stringValue: '-1' }, { doubleValue: 1.5 }, { stringValue: '1e3' }, { intValue: '9223372036854775807' }, { stringValue: 'NaN' }];
    const records = [...bad.map((c, i) => rec(i, `PreToolUse:Bad${i}`, c)), rec(99, 'PreToolUse:Good', { stringValue: '1' })];
    const res = await postOtlp(small.otlpHttpUrl, '/v1/logs', JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: records }] }] }), JSON_CT);
    expect(res.status).toBe(200);
    const out = JSON.parse(res.body.toString()) as { partialSuccess: { rejectedLogRecords: string; errorMessage: string } };
    expect(out.partialSuccess.rejectedLogRecords).toBe(String(bad.length));
    expect(out.partialSuccess.errorMessage).toMatch(/num_success/);
    const names = (await hooks(small)).map((h) => h.hookName);
    expect(names).toContain('PreToolUse:Good');
    expect(names.filter((n) => n.startsWith('PreToolUse:Bad'))).toEqual([]);
  });
});

/** A GET with the path sent exactly as given (fetch would normalise `..`); a hang past 10 s fails it. */
function rawGet(base: string, path: string): Promise<{ status: number; contentType: string; body: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, method: 'GET' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type']), body }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer to GET ${path.slice(0, 200)} within 10 s`)));
    req.on('error', reject);
    req.end();
  });
}

/** Text that only a leaked file would contain. */
const LEAKS = [/root:.*:0:0:/, /"name":\s*"hookwatch"/, /"devDependencies"/, /PRIVATE KEY/];

describe('API ids and paths', () => {
  const TRAVERSALS = [
    '/api/v1/hooks/..%2F..%2F..%2F..%2Fetc%2Fpasswd',
    '/api/v1/hooks/%2e%2e%2f%2e%2e%2fpackage.json',
    '/api/v1/hooks/..%2f..%2f..%2fpackage.json/series',
    '/api/v1/hooks/....//....//etc/passwd/breakdown',
    '/api/v1/hooks/../../../../etc/passwd',
    '/api/v1/hooks/%00/series',
    '/../../../../etc/passwd',
    '/..%2f..%2f..%2fpackage.json',
    '/%2e%2e/%2e%2e/%2e%2e/package.json',
    '/%2e%2e%5c%2e%2e%5cpackage.json',
    '/dashboard/../../package.json',
    '//etc/passwd',
  ];

  it('traversal attempts never return a file from outside the dashboard, and ids that are not hook ids get 400', async () => {
    for (const path of TRAVERSALS) {
      const res = await rawGet(small.httpUrl, path);
      for (const leak of LEAKS) expect(res.body, path).not.toMatch(leak);
      expect(res.status, path).not.toBe(500);
      // An id segment that is not 16 hex characters is refused; a path with more segments matches no route.
      if (path.startsWith('/api/v1/hooks/')) expect([400, 404], path).toContain(res.status);
      if (/^\/api\/v1\/hooks\/[^/]+(\/series|\/breakdown)?$/.test(path)) expect(res.status, path).toBe(400);
    }
  });

  it('any id string: 400 (not a hook id) or 404 (unknown hook), never 500', async () => {
    await fc.assert(fc.asyncProperty(fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }), fc.constantFrom('', '/series', '/breakdown'), async (id, suffix) => {
      const res = await rawGet(small.httpUrl, `/api/v1/hooks/${encodeURIComponent(id)}${suffix}`);
      expect([400, 404]).toContain(res.status);
      for (const leak of LEAKS) expect(res.body).not.toMatch(leak);
    }), { numRuns: 150 });
  });
});

describe('API ranges', () => {
  const id = '0123456789abcdef';
  it('oversized ranges and too many buckets get 400 naming the parameter', async () => {
    for (const path of [
      '/api/v1/hooks?from=now-401d',
      '/api/v1/hooks?from=now-100000d&to=now',
      '/api/v1/hooks?from=now-1d&to=now%2B100000d',
      '/api/v1/overview?from=1970-01-01T00:00:00Z&to=2026-11-30T00:00:00Z',
      `/api/v1/hooks/${id}/series?from=now-400d&step=60`,
      `/api/v1/hooks/${id}/breakdown?from=now-9999999999d`,
    ]) {
      const res = await getJson<{ error: { code: string; parameter?: string } }>(small.httpUrl, path);
      expect(res.status, path).toBe(400);
      expect(res.body.error.code, path).toBe('bad_parameter');
      expect(['from', 'to', 'step'], path).toContain(res.body.error.parameter);
    }
  });

  it('any from, to and step: 200 or 400, never 500', async () => {
    const time = fc.oneof(
      fc.string({ maxLength: 30 }),
      fc.constantFrom('now', 'now-1h', 'now-400d', 'now-401d', 'now+1d', 'now-1e309d', 'now--1d', 'now-0d'),
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      fc.integer().map(String),
    );
    await fc.assert(fc.asyncProperty(time, time, fc.oneof(fc.constant(undefined), fc.string({ maxLength: 8 }), fc.integer().map(String)), async (from, to, step) => {
      const q = new URLSearchParams({ from, to, ...(step === undefined ? {} : { step }) });
      for (const path of [`/api/v1/hooks?${q}`, `/api/v1/hooks/${id}/series?${q}`]) {
        const res = await rawGet(small.httpUrl, path);
        expect([200, 400, 404], `${path}: ${res.body.slice(0, 200)}`).toContain(res.status);
      }
    }), { numRuns: 100 });
  });
});

describe('API query strings', () => {
  /** Every GET route of /api/v1, with the parameters it takes: a known hook's id, so the store is asked too. */
  const routes = (hook: string): string[] => [
    '/api/v1/hooks', `/api/v1/hooks/${hook}`, `/api/v1/hooks/${hook}/series`, `/api/v1/hooks/${hook}/breakdown`,
    `/api/v1/hooks/${hook}/commands`, `/api/v1/hooks/${hook}/guard-trims`, '/api/v1/overview', '/api/v1/fleet/series',
    '/api/v1/dimensions', '/api/v1/alerts', '/api/v1/alerts/0123456789abcdef-1', '/api/v1/silences', '/api/v1/forwarding', '/api/v1/cluster',
  ];
  /** Percent-encodes every byte of the string's UTF-8 that is not unreserved (a lone surrogate becomes U+FFFD). */
  const encode = (s: string): string => [...Buffer.from(s, 'utf8')].map((b) => (/[A-Za-z0-9._~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
  const names = fc.oneof(
    fc.constantFrom('from', 'to', 'step', 'limit', 'cursor', 'status', 'name', 'ids', 'dimension', 'state', 'deadLetters', 'service.version', 'session.id', 'user.id', '__proto__', 'constructor', 'from[]', ''),
    fc.string({ unit: 'binary', maxLength: 12 }).map(encode),
  );
  const values = fc.oneof(
    fc.constantFrom('', 'now', 'now-1h', 'now%2B1d', 'now-400d', 'now-401d', '1764489600', '1764489600000', '2026-02-30T00:00:00Z', '9999-12-31T23:59:59Z', '0000-01-01T00:00:00Z',
      '5m', '1w', '0', '-1', '1.5', '1e3', 'NaN', 'Infinity', '0x10', '5000', '5001', 'over', 'firing', 'active,pending', 'service.version', 'MDpa',
      '0123456789abcdef', '0123456789abcdef,0123456789abcdef', '%00', '%C3%28', '%ED%A0%80', '%F0%9F%98', '%', '%Z', '%%', '+', 'a'.repeat(600)),
    fc.string({ unit: 'binary', maxLength: 40 }).map(encode),
    fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }).map(String),
    fc.double().map(String),
  );
  const query = fc.array(fc.oneof(fc.tuple(names, values).map(([n, v]) => `${n}=${v}`), names, fc.constant('')), { maxLength: 6 }).map((pairs) => pairs.join('&'));

  it('any query string on any GET route: an answer below 500 within the timeout, JSON, an error naming the problem when 4xx', async () => {
    expect((await postOtlp(small.otlpHttpUrl, '/v1/logs', request([hookRecord({ hook_name: 'PostToolUse:Query' }, 40)]), PROTO)).status).toBe(200);
    const hook = (await hooks(small)).find((h) => h.hookName === 'PostToolUse:Query')?.id;
    expect(hook).toBeDefined();
    await fc.assert(fc.asyncProperty(fc.constantFrom(...routes(hook as string)), query, async (route, q) => {
      const path = `${route}?${q}`;
      const res = await rawGet(small.httpUrl, path);
      expect(res.status, `${path}: ${res.body.slice(0, 300)}`).toBeLessThan(500);
      expect(res.contentType, path).toMatch(/^application\/json/);
      const body = JSON.parse(res.body) as { error?: { code?: unknown; message?: unknown; parameter?: unknown } };
      if (res.status >= 400) {
        expect(typeof body.error?.code, path).toBe('string');
        expect(body.error?.message, path).toMatch(/\S/);
        if (body.error?.code === 'bad_parameter') expect(typeof body.error.parameter, `${path}: ${res.body.slice(0, 300)}`).toBe('string');
      }
    }), { numRuns: 400 });
  }, 120_000);
});
