import { afterEach, describe, expect, it, vi } from 'vitest';
import { recordingLogger } from '../../test/support/recording-logger.ts';
import { OtlpRefusals, RECENT_REFUSALS_MS, endpointHint } from './refusals.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe('OtlpRefusals', () => {
  it('logs the first refusal of each transport and reason at once, then one line per interval with the count since the last', async () => {
    const { logger, lines } = recordingLogger();
    const refusals = new OtlpRefusals({ logger, logIntervalMs: 200 });
    for (let i = 0; i < 1000; i++) refusals.note('http', 'not_found', { path: `/p${i}`, client: '10.0.0.7' });
    refusals.note('grpc', 'not_found', { path: '/x.Service/Export', client: '10.0.0.8:5555' });
    expect(lines.map((l) => l.msg)).toEqual([
      'otlp http: refused an OTLP request (not_found) {"transport":"http","reason":"not_found","requests":1,"path":"/p0","client":"10.0.0.7"}',
      'otlp grpc: refused an OTLP request (not_found) {"transport":"grpc","reason":"not_found","requests":1,"path":"/x.Service/Export","client":"10.0.0.8:5555"}',
    ]);
    await vi.waitFor(() => expect(lines).toHaveLength(3), { timeout: 2000 });
    expect(lines[2]).toEqual({ level: 'warn', msg: 'otlp http: refused 999 OTLP requests (not_found) since the last line about them {"transport":"http","reason":"not_found","requests":999,"path":"/p999","client":"10.0.0.7"}' });
  });

  it('says in a held-back line the path, client and hint of the refusals it counts, not of one logged by a line of its own', async () => {
    const { logger, lines } = recordingLogger();
    const refusals = new OtlpRefusals({ logger, logIntervalMs: 200 });
    refusals.note('http', 'malformed', { path: '/a', client: '10.0.0.7' });
    refusals.note('http', 'malformed', { path: '/b', client: '10.0.0.7' });
    // A gRPC client on the HTTP port: the receiver logs it with its own words and hint.
    refusals.note('http', 'malformed', { path: '/grpc', client: '10.0.0.9' }, 'a gRPC exporter goes to the OTLP/gRPC port', true);
    await vi.waitFor(() => expect(lines).toHaveLength(2), { timeout: 2000 });
    expect(lines[1]?.msg).toBe('otlp http: refused an OTLP request (malformed) {"transport":"http","reason":"malformed","requests":1,"path":"/b","client":"10.0.0.7"}');
    // The overview lists the latest refusal of the kind, whichever line said it.
    expect(refusals.recent()).toMatchObject([{ reason: 'malformed', count: 3, lastPath: '/grpc', hint: 'a gRPC exporter goes to the OTLP/gRPC port' }]);
  });

  it('says and lists what was wrong with a request its decoder refused, the last one\'s in a held-back line, cut to 200 characters', async () => {
    const { logger, lines } = recordingLogger();
    const refusals = new OtlpRefusals({ logger, logIntervalMs: 200 });
    refusals.note('http', 'bad_request', { path: '/v1/logs', client: '10.0.0.7', problem: 'request.resourceLogs must be an array' });
    refusals.note('http', 'bad_request', { path: '/v1/logs', client: '10.0.0.7', problem: 'request.resourceLogs[0] must be an object' });
    refusals.note('http', 'bad_request', { path: '/v1/logs', client: '10.0.0.7', problem: `invalid JSON: ${'y'.repeat(300)}\u001b[0m` });
    expect(lines[0]?.msg.split(' {')[0]).toBe('otlp http: refused an OTLP request (bad_request): request.resourceLogs must be an array');
    await vi.waitFor(() => expect(lines).toHaveLength(2), { timeout: 2000 });
    expect(lines[1]?.msg.split(' {')[0]).toBe(`otlp http: refused 2 OTLP requests (bad_request) since the last line about them; the last: invalid JSON: ${'y'.repeat(200 - 'invalid JSON: '.length)}…`);
    // The overview lists the last one's, as the line says it.
    expect(refusals.recent()).toMatchObject([{ reason: 'bad_request', count: 3, lastProblem: `invalid JSON: ${'y'.repeat(200 - 'invalid JSON: '.length)}…` }]);
  });

  it('says a request its client gave up on, or one that timed out, as such: hookwatch refused neither', async () => {
    const { logger, lines } = recordingLogger();
    const refusals = new OtlpRefusals({ logger, logIntervalMs: 200 });
    for (let i = 0; i < 3; i++) refusals.note('http', 'client_aborted', { path: '/v1/logs', client: '10.0.0.7' });
    refusals.note('grpc', 'client_aborted', { path: '/x.Service/Export', client: '10.0.0.8:5555' });
    refusals.note('http', 'request_timeout', { path: '/v1/logs', client: '10.0.0.7' });
    refusals.note('http', 'request_timeout', { path: '/v1/metrics', client: '10.0.0.7' });
    expect(lines.map((l) => l.msg.split(' {')[0])).toEqual([
      'otlp http: the client gave up on an OTLP request before sending it whole (client_aborted)',
      'otlp grpc: the client gave up on an OTLP request before sending it whole (client_aborted)',
      'otlp http: an OTLP request timed out before it arrived whole (request_timeout)',
    ]);
    await vi.waitFor(() => expect(lines).toHaveLength(5), { timeout: 2000 });
    expect(lines.slice(3).map((l) => l.msg.split(' {')[0]).sort()).toEqual([
      'otlp http: an OTLP request timed out before it arrived whole (request_timeout)',
      'otlp http: clients gave up on 2 OTLP requests before sending them whole (client_aborted) since the last line about them',
    ]);
    // The reasons are named as /metrics and the overview name them.
    expect(refusals.recent().map((r) => [r.transport, r.reason, r.count])).toEqual([['http', 'client_aborted', 3], ['http', 'request_timeout', 2], ['grpc', 'client_aborted', 1]]);
  });

  it('counts the refusals of the last 15 minutes, most first, with the last path and time', () => {
    let now = Date.parse('2026-12-01T10:00:30Z');
    const refusals = new OtlpRefusals({ logger: recordingLogger().logger, now: () => now });
    refusals.note('http', 'unauthenticated', { path: '/v1/logs' });
    now += 5 * 60_000;
    for (let i = 0; i < 3; i++) refusals.note('http', 'not_found', { path: `/v1/logs/v1/logs${'x'.repeat(i * 40)}` });
    expect(refusals.recent()).toEqual([
      { transport: 'http', reason: 'not_found', count: 3, lastAtMs: now, lastPath: `/v1/logs/v1/logs${'x'.repeat(48)}…` },
      { transport: 'http', reason: 'unauthenticated', count: 1, lastAtMs: now - 5 * 60_000, lastPath: '/v1/logs', hint: expect.stringContaining('OTEL_EXPORTER_OTLP_HEADERS') as string },
    ]);
    // The unauthenticated one leaves the window; the others count from then on.
    now += RECENT_REFUSALS_MS - 5 * 60_000;
    refusals.note('http', 'not_found', { path: '/a' }, 'a hint');
    expect(refusals.recent()).toEqual([{ transport: 'http', reason: 'not_found', count: 4, lastAtMs: now, lastPath: '/a', hint: 'a hint' }]);
    now += RECENT_REFUSALS_MS;
    expect(refusals.recent()).toEqual([]);
  });
});

describe('endpointHint', () => {
  const base = 'http://<host>:4318';
  it.each([
    ['/v1/logs/v1/logs', 'POST', 'OTEL_EXPORTER_OTLP_ENDPOINT is the base URL, such as http://<host>:4318, to which the exporter appends /v1/logs'],
    ['/otlp/v1/metrics', 'POST', 'OTEL_EXPORTER_OTLP_ENDPOINT is the base URL, such as http://<host>:4318, to which the exporter appends /v1/metrics'],
    ['/v1/logs/', 'POST', 'no trailing slash: /v1/logs; OTEL_EXPORTER_OTLP_ENDPOINT is the base URL, such as http://<host>:4318, to which the exporter appends /v1/logs'],
    ['/', 'POST', 'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is used as given: end it with /v1/logs'],
    ['/', 'GET', undefined],
    ['/v2/logs', 'POST', undefined],
    ['/v1/log', 'POST', 'did you mean /v1/logs? (paths are lowercase; OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is used as given: end it with /v1/logs)'],
    ['/v1/Logs', 'POST', 'did you mean /v1/logs? (paths are lowercase; OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is used as given: end it with /v1/logs)'],
    ['/v1/lgos', 'POST', 'did you mean /v1/logs? (paths are lowercase; OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is used as given: end it with /v1/logs)'],
    ['/v1/metric', 'POST', 'did you mean /v1/metrics? (paths are lowercase; OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is used as given: end it with /v1/metrics)'],
    ['/v1/Logs/', 'POST', 'did you mean /v1/logs? (paths are lowercase; OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is used as given: end it with /v1/logs)'],
    // Another version, or a word that is no signal's, is no near miss.
    ['/v1/events', 'POST', undefined],
    ['/v1/l', 'POST', undefined],
    ['/api/v1/logs', 'POST', 'OTEL_EXPORTER_OTLP_ENDPOINT is the base URL, such as http://<host>:4318, to which the exporter appends /v1/logs'],
  ])('%s (%s)', (path, method, hint) => {
    expect(endpointHint(path, method, base)).toBe(hint);
  });
});
