/**
 * GET /metrics of a real hookwatch (real sockets, real SQLite, real OTLP exporters and the captured Claude Code
 * requests as clients): Prometheus's own parser and linter (promtool) accept it, and the per-hook counters
 * equal what /api/v1/hooks answers.
 */
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OTLPLogExporter as GrpcLogExporter } from '@opentelemetry/exporter-logs-otlp-grpc';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import type { HookSummary, HooksResponse } from '../../shared/src/api.ts';
import { OUTPUT_KINDS } from '../../shared/src/cliff.ts';
import type { GuardTrimsResponse } from '../../shared/src/guard-trims.ts';
import { hookId } from '../src/hooks/extract.ts';
import { REJECT_REASONS } from '../src/receiver/options.ts';
import { createLogger } from '../src/telemetry/logger.ts';
import { sendReport } from '../src/tools/guard/report-send.ts';
import type { GuardReport } from '../src/tools/guard/report.ts';
import { HttpDownstream } from './support/downstream-recorder.ts';
import { NOT_METRICS, documentedAs, documentedMetrics, startFullyConfiguredService, undocumentedMetrics } from './support/metrics-coverage.ts';
import { checkExposition, parseExposition, requestMetrics, sampleValue, scrapeMetrics, type ParsedFamily } from './support/prometheus-text.ts';
import { emitExecutions, startServiceUnderTest, type ServiceUnderTest } from './support/service.ts';

const FIXTURES = fileURLToPath(new URL('../testdata/claude-code-2.1.332/', import.meta.url));
const RUNS = ['run1-httpjson', 'run2-httpprotobuf', 'run5-mockapi-tools-httpjson'];

let service: ServiceUnderTest | undefined;
const servers: Server[] = [];
const files: string[] = [];
const downstreams: HttpDownstream[] = [];
afterEach(async () => {
  await service?.close();
  service = undefined;
  for (const d of downstreams.splice(0)) await d.stop();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  for (const f of files.splice(0)) rmSync(f, { force: true });
});

/** A loopback HTTP server that answers 200 and counts the requests it got, by path. */
async function countingServer(body: string): Promise<{ url: string; hits: Map<string, number> }> {
  const hits = new Map<string, number>();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hits.set(req.url ?? '', (hits.get(req.url ?? '') ?? 0) + 1);
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

async function until(what: string, check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Sends `raw` on a connection of its own; `answer` is all the server wrote until the connection closed. */
async function sendRaw(url: URL, raw: string): Promise<{ socket: Socket; answer: Promise<string> }> {
  const socket = connect(Number(url.port), url.hostname);
  await once(socket, 'connect');
  if (raw) socket.write(raw);
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
  socket.on('error', () => {});
  return { socket, answer: once(socket, 'close').then(() => answer) };
}

async function apiHooks(base: string): Promise<HookSummary[]> {
  const res = await fetch(`${base}/api/v1/hooks?from=now-30d&to=now%2B1h`);
  expect(res.status).toBe(200);
  return ((await res.json()) as HooksResponse).hooks;
}

async function replayFixtures(otlpUrl: string): Promise<number> {
  let logsRequests = 0;
  for (const run of RUNS) {
    const dir = join(FIXTURES, run);
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.body.bin')).sort()) {
      const meta = JSON.parse(readFileSync(join(dir, file.replace('.body.bin', '.meta.json')), 'utf8')) as { path: string; headers: Record<string, string> };
      const res = await fetch(otlpUrl + meta.path, { method: 'POST', headers: { 'content-type': meta.headers['content-type'] ?? '' }, body: new Uint8Array(readFileSync(join(dir, file))) });
      expect(res.status, `${run}/${file}`).toBe(200);
      await res.arrayBuffer();
      if (meta.path === '/v1/logs') logsRequests++;
    }
  }
  return logsRequests;
}

/**
 * Sends a guard report the way `hookwatch guard --report` does, and once more as its exporter's retry would: the
 * same request, captured on its way and posted again.
 */
async function sendReportTwice(otlpUrl: string, report: GuardReport): Promise<void> {
  const capture = new HttpDownstream();
  downstreams.push(capture);
  await sendReport(`${await capture.start()}/v1/logs`, report);
  expect(capture.requests.length).toBeGreaterThan(0);
  for (let i = 0; i < 2; i++) {
    for (const sent of capture.requests) {
      const res = await fetch(`${otlpUrl}/v1/logs`, { method: 'POST', headers: { 'content-type': sent.contentType }, body: new Uint8Array(sent.body) });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
  }
}

async function apiGuardTrims(base: string, hookName: string): Promise<number> {
  const res = await fetch(`${base}/api/v1/hooks/${hookId(hookName.split(':')[0] as string, hookName)}/guard-trims?from=now-30d&to=now%2B1h`);
  expect(res.status).toBe(200);
  return ((await res.json()) as GuardTrimsResponse).trims;
}

/** The API's largest output (upper bound over every kind), as /metrics reports it. */
function largest(h: HookSummary): number | undefined {
  const v = OUTPUT_KINDS.map((k) => h.maxChars[k]).filter((x): x is number => x !== null);
  return v.length ? Math.max(...v) : undefined;
}

describe('GET /metrics', () => {
  it('per-hook counters equal /api/v1/hooks after real Claude Code captures and OTLP exporter traffic', async () => {
    service = await startServiceUnderTest();
    const logsRequests = await replayFixtures(service.otlpHttpUrl);
    await emitExecutions(service.otlpHttpUrl, [
      { hookEvent: 'SessionStart', hookName: 'SessionStart:startup', additionalContextChars: 12_345, outputsPersisted: 1 },
      { hookEvent: 'SessionStart', hookName: 'SessionStart:startup', additionalContextChars: 9_000, outputsPersisted: 0 },
      { hookEvent: 'PreToolUse', hookName: 'PreToolUse:Bash|Edit "quoted" \\ back', numHooks: 2, numSuccess: 1, stdoutChars: 400 },
      { hookEvent: 'Stop', hookName: 'Stop', numHooks: 1 }, // no size attributes: blind
    ]);

    const hooks = await apiHooks(service.httpUrl);
    // The first scrape shows each new hook's series at 0, so increase() has a sample to count its first events
    // from; the next one shows the counts.
    const first = (await scrapeMetrics(service.httpUrl)).families;
    for (const name of ['hookwatch_hook_executions_total', 'hookwatch_hook_outputs_persisted_total', 'hookwatch_hook_success_total']) {
      expect(first.get(name)?.samples.map((s) => s.value), name).toEqual(hooks.map(() => 0));
    }
    const { families } = await scrapeMetrics(service.httpUrl);
    expect(hooks.length).toBeGreaterThanOrEqual(4);
    const ids = families.get('hookwatch_hook_executions_total')?.samples.map((s) => s.labels['hook_id']).sort();
    expect(ids).toEqual(hooks.map((h) => h.id).sort());
    for (const h of hooks) {
      const labels = { hook_id: h.id, hook_event: h.hookEvent, hook_name: h.hookName };
      expect(sampleValue(families, 'hookwatch_hook_executions_total', labels), h.hookName).toBe(h.executions);
      expect(sampleValue(families, 'hookwatch_hook_starts_total', labels), h.hookName).toBe(h.starts);
      expect(sampleValue(families, 'hookwatch_hook_commands_total', labels), h.hookName).toBe(h.numHooks);
      expect(sampleValue(families, 'hookwatch_hook_success_total', labels), h.hookName).toBe(h.success);
      expect(sampleValue(families, 'hookwatch_hook_outputs_persisted_total', labels), h.hookName).toBe(h.outputsPersisted);
      expect(sampleValue(families, 'hookwatch_hook_executions_with_persisted_total', labels), h.hookName).toBe(h.executionsWithPersisted);
      expect(sampleValue(families, 'hookwatch_hook_near_executions_total', labels), h.hookName).toBe(h.nearExecutions);
      expect(sampleValue(families, 'hookwatch_hook_size_unknown_executions_total', labels), h.hookName).toBe(h.sizeUnknownExecutions);
      expect(sampleValue(families, 'hookwatch_hook_largest_output_chars', labels), h.hookName).toBe(largest(h));
    }
    const startup = hooks.find((h) => h.hookName === 'SessionStart:startup');
    expect(startup?.outputsPersisted).toBeGreaterThanOrEqual(1);
    expect(sampleValue(families, 'hookwatch_hook_largest_output_chars', { hook_name: 'SessionStart:startup' })).toBeGreaterThanOrEqual(12_345);
    // Unknown is not zero: the blind hook has counters but no size sample.
    expect(sampleValue(families, 'hookwatch_hook_size_unknown_executions_total', { hook_name: 'Stop' })).toBeGreaterThanOrEqual(1);
    const stop = hooks.find((h) => h.hookName === 'Stop');
    if (stop && largest(stop) === undefined) expect(sampleValue(families, 'hookwatch_hook_largest_output_chars', { hook_name: 'Stop' })).toBeUndefined();

    // Own health: requests by outcome, records by kind, store latency.
    expect(sampleValue(families, 'hookwatch_otlp_requests_total', { signal: 'logs', outcome: 'ok' })).toBe(logsRequests + 1);
    expect(sampleValue(families, 'hookwatch_otlp_requests_total', { signal: 'metrics', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    const stored = sampleValue(families, 'hookwatch_hook_events_stored_total');
    expect(stored).toBe(hooks.reduce((n, h) => n + h.executions + h.starts, 0));
    expect(sampleValue(families, 'hookwatch_log_records_received_total', { kind: 'hook_event' })).toBe(stored);
    expect(sampleValue(families, 'hookwatch_log_records_received_total', { kind: 'other' })).toBeGreaterThan(0);
    const ingestCount = sampleValue(families, 'hookwatch_store_operation_duration_seconds', { operation: 'ingest' }, 'hookwatch_store_operation_duration_seconds_count');
    expect(ingestCount).toBeGreaterThanOrEqual(5);
    expect(sampleValue(families, 'hookwatch_store_operation_duration_seconds', { operation: 'hookCounters' }, 'hookwatch_store_operation_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(sampleValue(families, 'hookwatch_ingest_queue_depth')).toBe(0);
    expect(sampleValue(families, 'hookwatch_ingest_queue_capacity')).toBe(64);
    expect(sampleValue(families, 'hookwatch_hook_series_dropped')).toBe(0);
    // The defaults the Prometheus rules and the Grafana dashboard compare outputs against.
    expect(sampleValue(families, 'hookwatch_delivery_near_threshold_chars')).toBe(8000);
    expect(sampleValue(families, 'hookwatch_delivery_output_cap_chars')).toBe(10_000);
  });

  it('counts per hook the outputs hookwatch guard trimmed, as stored: a retried report once, a hook known only by its trims gets a series', async () => {
    service = await startServiceUnderTest();
    // A guarded hook delivers just under the cap; another runs small and unguarded.
    await emitExecutions(service.otlpHttpUrl, [
      { hookEvent: 'SessionStart', hookName: 'SessionStart:startup', additionalContextChars: 9_500, outputsPersisted: 0 },
      { hookEvent: 'SessionStart', hookName: 'SessionStart:startup', additionalContextChars: 9_400, outputsPersisted: 0 },
      { hookEvent: 'PreToolUse', hookName: 'PreToolUse:plain', stdoutChars: 400 },
    ]);
    await sendReportTwice(service.otlpHttpUrl, {
      hookEvent: 'SessionStart', hookName: 'SessionStart:startup', sessionId: 's-1',
      trims: [{ field: 'stdout', sentChars: 24_000, keptChars: 9_500 }, { field: 'hookSpecificOutput.additionalContext', sentChars: 12_000, keptChars: 9_400 }],
    });
    // A report whose hook event has not arrived (each has its own exporter).
    await sendReport(`${service.otlpHttpUrl}/v1/logs`, { hookEvent: 'Stop', hookName: 'Stop:guarded', sessionId: 's-2', trims: [{ field: 'stdout', sentChars: 15_000, keptChars: 9_000 }] });

    await scrapeMetrics(service.httpUrl); // shows the new hooks' series at 0
    const { text, families } = await scrapeMetrics(service.httpUrl);
    expect(text).toMatch(/^# TYPE hookwatch_hook_guard_trims_total counter$/m);
    expect(text).toMatch(/^# HELP hookwatch_hook_guard_trims_total .*hookwatch guard/m);
    const guarded = { hook_id: hookId('SessionStart', 'SessionStart:startup'), hook_event: 'SessionStart', hook_name: 'SessionStart:startup' };
    expect(sampleValue(families, 'hookwatch_hook_guard_trims_total', guarded)).toBe(2);
    expect(sampleValue(families, 'hookwatch_hook_guard_sent_chars_total', guarded)).toBe(36_000);
    expect(sampleValue(families, 'hookwatch_hook_guard_kept_chars_total', guarded)).toBe(18_900);
    expect(sampleValue(families, 'hookwatch_hook_executions_total', guarded)).toBe(2);
    // What /metrics counts is what the API stores.
    expect(await apiGuardTrims(service.httpUrl, 'SessionStart:startup')).toBe(2);
    expect(sampleValue(families, 'hookwatch_hook_guard_trims_total', { hook_name: 'PreToolUse:plain' })).toBe(0);
    expect(sampleValue(families, 'hookwatch_hook_guard_trims_total', { hook_name: 'Stop:guarded' })).toBe(1);
    expect(sampleValue(families, 'hookwatch_hook_executions_total', { hook_name: 'Stop:guarded' })).toBe(0);
    expect(Math.abs((sampleValue(families, 'hookwatch_hook_series_start_time_seconds', { hook_name: 'Stop:guarded' }) ?? 0) - Date.now() / 1000)).toBeLessThan(60);
    expect(sampleValue(families, 'hookwatch_hook_overflow_guard_trims_total')).toBe(0);
  });

  it('reports the configured near threshold, the one its own classification uses, and the cap', async () => {
    service = await startServiceUnderTest({ HOOKWATCH_NEAR_THRESHOLD: '9000' });
    await emitExecutions(service.otlpHttpUrl, [
      { hookEvent: 'SessionStart', hookName: 'SessionStart:below', additionalContextChars: 8_500 },
      { hookEvent: 'SessionStart', hookName: 'SessionStart:above', additionalContextChars: 9_500 },
      { hookEvent: 'SessionStart', hookName: 'SessionStart:unreported', additionalContextChars: 9_500, outputsPersisted: null },
    ]);
    await scrapeMetrics(service.httpUrl); // shows the new hooks' series at 0
    const { text, families } = await scrapeMetrics(service.httpUrl);
    expect(sampleValue(families, 'hookwatch_delivery_near_threshold_chars')).toBe(9000);
    expect(sampleValue(families, 'hookwatch_delivery_output_cap_chars')).toBe(10_000);
    expect(text).toMatch(/^# HELP hookwatch_delivery_near_threshold_chars .*delivery\.nearThreshold/m);
    expect(text).toMatch(/^# TYPE hookwatch_delivery_near_threshold_chars gauge$/m);
    // What hookwatch itself counts as near agrees with the threshold it reports.
    expect(sampleValue(families, 'hookwatch_hook_near_executions_total', { hook_name: 'SessionStart:below' })).toBe(0);
    expect(sampleValue(families, 'hookwatch_hook_near_executions_total', { hook_name: 'SessionStart:above' })).toBe(1);
    // A client that does not send num_outputs_persisted: near says no output was measured over the cap, not that
    // none was persisted, and the execution counts as unreported too.
    expect(sampleValue(families, 'hookwatch_hook_near_executions_total', { hook_name: 'SessionStart:unreported' })).toBe(1);
    expect(sampleValue(families, 'hookwatch_hook_persisted_unreported_executions_total', { hook_name: 'SessionStart:unreported' })).toBe(1);
    expect(sampleValue(families, 'hookwatch_hook_persisted_unreported_executions_total', { hook_name: 'SessionStart:above' })).toBe(0);
    const help = /^# HELP hookwatch_hook_near_executions_total (.*)$/m.exec(text)?.[1] ?? '';
    expect(help).not.toMatch(/nothing persisted/);
    expect(help).toMatch(/num_outputs_persisted/);
    expect(help).toMatch(/hookwatch_hook_persisted_unreported_executions_total/);
  });

  it('answers Prometheus (Accept-Encoding: gzip) compressed and a client asking for no encoding in text, the same families', async () => {
    service = await startServiceUnderTest();
    await emitExecutions(service.otlpHttpUrl, [{ hookEvent: 'SessionStart', hookName: 'SessionStart:startup', additionalContextChars: 12_345 }]);
    const plain = await requestMetrics(service.httpUrl);
    const gzipped = await requestMetrics(service.httpUrl, { headers: { 'accept-encoding': 'gzip, deflate' } });
    expect([plain.status, plain.headers['content-encoding'], gzipped.status, gzipped.headers['content-encoding']]).toEqual([200, undefined, 200, 'gzip']);
    const text = gunzipSync(gzipped.body).toString('utf8');
    checkExposition(text);
    const [asText, inflated] = [parseExposition(plain.body.toString('utf8')), parseExposition(text)];
    expect([...inflated.keys()]).toEqual([...asText.keys()]);
    expect(sampleValue(inflated, 'hookwatch_hook_largest_output_chars', { hook_name: 'SessionStart:startup' })).toBe(12_345);
  });

  it('caps per-hook series: hooks past metrics.maxHookSeries go to overflow counters and are counted, not exploded', async () => {
    service = await startServiceUnderTest({ HOOKWATCH_METRICS_MAX_HOOK_SERIES: '3' });
    const executions = Array.from({ length: 10 }, (_, i) => ({ hookEvent: 'PreToolUse', hookName: `PreToolUse:tool-${i}`, additionalContextChars: 100 * (i + 1), outputsPersisted: i % 2 }));
    await emitExecutions(service.otlpHttpUrl, [...executions, ...executions.slice(0, 2)]);
    const hooks = await apiHooks(service.httpUrl);
    expect(hooks).toHaveLength(10);
    await scrapeMetrics(service.httpUrl); // shows the new hooks' series at 0
    const { families } = await scrapeMetrics(service.httpUrl);
    expect(families.get('hookwatch_hook_executions_total')?.samples).toHaveLength(3);
    expect(families.get('hookwatch_hook_outputs_persisted_total')?.samples).toHaveLength(3);
    expect(sampleValue(families, 'hookwatch_hook_series')).toBe(3);
    expect(sampleValue(families, 'hookwatch_hook_series_dropped')).toBe(7);
    const labelled = families.get('hookwatch_hook_executions_total')?.samples.reduce((n, s) => n + s.value, 0) ?? 0;
    const overflow = sampleValue(families, 'hookwatch_hook_overflow_executions_total') ?? 0;
    // Nothing is lost to the cap: labelled plus overflow equals every execution the API knows.
    expect(labelled + overflow).toBe(hooks.reduce((n, h) => n + h.executions, 0));
    const persistedLabelled = families.get('hookwatch_hook_outputs_persisted_total')?.samples.reduce((n, s) => n + s.value, 0) ?? 0;
    expect(persistedLabelled + (sampleValue(families, 'hookwatch_hook_overflow_outputs_persisted_total') ?? 0)).toBe(hooks.reduce((n, h) => n + h.outputsPersisted, 0));
    // Guard trims of a hook left without a series, and of a hook not seen before, go to the overflow counter too.
    await sendReport(`${service.otlpHttpUrl}/v1/logs`, { hookEvent: 'PreToolUse', hookName: 'PreToolUse:tool-9', sessionId: 's-9', trims: [{ field: 'stdout', sentChars: 20_000, keptChars: 9_500 }] });
    await sendReport(`${service.otlpHttpUrl}/v1/logs`, { hookEvent: 'PreToolUse', hookName: 'PreToolUse:tool-new', sessionId: 's-10', trims: [{ field: 'stdout', sentChars: 20_000, keptChars: 9_500 }] });
    const after = (await scrapeMetrics(service.httpUrl)).families;
    expect(after.get('hookwatch_hook_guard_trims_total')?.samples).toHaveLength(3);
    expect(after.get('hookwatch_hook_guard_trims_total')?.samples.every((s) => s.value === 0)).toBe(true);
    expect(sampleValue(after, 'hookwatch_hook_overflow_guard_trims_total')).toBe(2);
    expect(sampleValue(after, 'hookwatch_hook_series_dropped')).toBe(8);
  });

  it('gives the hooks the store knows their series at 0 after a restart, so a next persisted output is an increase', async () => {
    const db = join(tmpdir(), `hookwatch-seed-${process.pid}-${Date.now()}.db`);
    files.push(db, `${db}-wal`, `${db}-shm`, `${db}.lock`);
    const first = await startServiceUnderTest({ HOOKWATCH_DB: db });
    await emitExecutions(first.otlpHttpUrl, [
      { hookEvent: 'SessionStart', hookName: 'SessionStart:memory', additionalContextChars: 9_000, outputsPersisted: 0 },
      { hookEvent: 'Stop', hookName: 'Stop:report', additionalContextChars: 12_000, outputsPersisted: 1 },
    ]);
    await first.close();
    service = await startServiceUnderTest({ HOOKWATCH_DB: db });
    const base = service.httpUrl;
    // The series come from the store shortly after start-up, at 0: counters count since this process started.
    let samples: { labels: Record<string, string>; value: number }[] = [];
    for (let i = 0; i < 100 && samples.length < 2; i++) {
      samples = (await scrapeMetrics(base)).families.get('hookwatch_hook_outputs_persisted_total')?.samples ?? [];
      if (samples.length < 2) await new Promise((r) => setTimeout(r, 50));
    }
    expect(samples.map((s) => [s.labels['hook_name'], s.value]).sort()).toEqual([['SessionStart:memory', 0], ['Stop:report', 0]]);
    // Each series says when it began, so a rule can tell a young series from an old one.
    const started = (await scrapeMetrics(base)).families.get('hookwatch_hook_series_start_time_seconds')?.samples ?? [];
    expect(started).toHaveLength(2);
    for (const s of started) expect(Math.abs(s.value - Date.now() / 1000)).toBeLessThan(60);
    // Size gauges stay absent: nothing is known of this process's executions yet.
    expect((await scrapeMetrics(base)).families.get('hookwatch_hook_last_output_chars')?.samples ?? []).toEqual([]);
  });

  it('counts rejections by reason and never shows the ingest token', async () => {
    const token = 'tok-secret-9f8e7d6c5b4a';
    service = await startServiceUnderTest({ HOOKWATCH_INGEST_TOKEN: token });
    const post = async (headers: Record<string, string>, body: string): Promise<number> => {
      const res = await fetch(`${service?.otlpHttpUrl}/v1/logs`, { method: 'POST', headers, body });
      await res.arrayBuffer();
      return res.status;
    };
    expect(await post({ 'content-type': 'application/json', authorization: 'Bearer wrong' }, '{}')).toBe(401);
    expect(await post({ 'content-type': 'application/json', authorization: `Bearer ${token}` }, '{"resourceLogs": 5}')).toBe(400);
    expect(await post({ 'content-type': 'text/plain', authorization: `Bearer ${token}` }, 'x')).toBe(415);
    await emitExecutions(service.otlpHttpUrl, [{ hookEvent: 'Stop', hookName: 'Stop' }], { authorization: `Bearer ${token}` });
    await scrapeMetrics(service.httpUrl); // shows the new hook's series at 0
    const { text, families } = await scrapeMetrics(service.httpUrl);
    expect(sampleValue(families, 'hookwatch_otlp_requests_rejected_total', { transport: 'http', reason: 'unauthenticated' })).toBe(1);
    expect(sampleValue(families, 'hookwatch_otlp_requests_rejected_total', { transport: 'http', reason: 'bad_request' })).toBe(1);
    expect(sampleValue(families, 'hookwatch_otlp_requests_rejected_total', { transport: 'http', reason: 'unsupported_media_type' })).toBe(1);
    expect(sampleValue(families, 'hookwatch_otlp_requests_rejected_total', { transport: 'grpc', reason: 'unauthenticated' })).toBe(0);
    expect(sampleValue(families, 'hookwatch_otlp_requests_total', { signal: 'logs', outcome: '401' })).toBe(1);
    expect(sampleValue(families, 'hookwatch_hook_executions_total', { hook_name: 'Stop' })).toBe(1);
    expect(text).not.toContain(token);
  });

  it('shows every rejection reason, metrics collector and store operation at 0 before the first failure, so increase() sees it', async () => {
    // A labelled counter series that first appears with its first event already counted has no earlier sample:
    // increase() and rate() over it read 0, so a single refusal or collector failure would go unseen.
    service = await startServiceUnderTest();
    await emitExecutions(service.otlpHttpUrl, [{ hookEvent: 'Stop', hookName: 'Stop' }]);
    const { families } = await scrapeMetrics(service.httpUrl);
    const rejected = (families.get('hookwatch_otlp_requests_rejected_total')?.samples ?? []).map((x) => `${x.labels['transport']} ${x.labels['reason']} ${x.value}`).sort();
    expect(rejected).toEqual([...REJECT_REASONS.http.map((r) => `http ${r} 0`), ...REJECT_REASONS.grpc.map((r) => `grpc ${r} 0`)].sort());
    const collectors = (families.get('hookwatch_metrics_collector_errors_total')?.samples ?? []).map((x) => x.labels['collector']);
    expect(collectors).toEqual(expect.arrayContaining(['otlp', 'ingest', 'hooks', 'store', 'notify', 'alerting', 'process']));
    for (const x of families.get('hookwatch_metrics_collector_errors_total')?.samples ?? []) expect(x.value, x.labels['collector']).toBe(0);
    expect(sampleValue(families, 'hookwatch_store_errors_total', { operation: 'ingest' })).toBe(0);
    // A refusal then counts under its series, the others stay at 0.
    const res = await fetch(`${service.otlpHttpUrl}/v1/nothing`, { method: 'POST' });
    await res.arrayBuffer();
    const after = (await scrapeMetrics(service.httpUrl)).families;
    expect(sampleValue(after, 'hookwatch_otlp_requests_rejected_total', { transport: 'http', reason: 'not_found' })).toBe(1);
    expect(sampleValue(after, 'hookwatch_otlp_requests_rejected_total', { transport: 'grpc', reason: 'request_timeout' })).toBe(0);
  });

  it('counts an OTLP/HTTP request cut off at otlp.requestTimeout as request_timeout and one the client aborts as client_aborted, not as bad requests', async () => {
    service = await startServiceUnderTest({ HOOKWATCH_OTLP_REQUEST_TIMEOUT: '1s' });
    const url = new URL(service.otlpHttpUrl);
    const head = `POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"resourceLogs":`;
    const open = (): Promise<{ socket: Socket; answer: Promise<string> }> => sendRaw(url, head);
    // Half a body, then nothing: Node answers 408 at the timeout.
    const slow = await open();
    const answer = await slow.answer;
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    // A google.rpc.Status in the request's encoding, as the receiver's other refusals, not Node's empty body.
    expect(answer).toMatch(/\r\nContent-Type: application\/json\r\n/);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({ code: 4, message: 'the request was not received in full within otlp.requestTimeout' });
    // Half a body, then the client closes the connection.
    const quitter = await open();
    await new Promise((r) => setTimeout(r, 100));
    quitter.socket.destroy();
    // Half a body, then the client ends its side (an exporter exiting mid-upload): Node's parser reads the end of
    // the stream as an error of its own (HPE_INVALID_EOF_STATE), yet nothing the client sent was malformed.
    const ender = await open();
    await new Promise((r) => setTimeout(r, 100));
    ender.socket.end();
    await ender.answer;
    const rejected = (f: Map<string, ParsedFamily>): Record<string, number> => Object.fromEntries((f.get('hookwatch_otlp_requests_rejected_total')?.samples ?? [])
      .filter((x) => x.labels['transport'] === 'http' && x.value > 0).map((x) => [x.labels['reason'] as string, x.value]));
    const counted = (f: Map<string, ParsedFamily>): number => Object.values(rejected(f)).reduce((a, b) => a + b, 0);
    await until('the aborted requests counted', async () => counted((await scrapeMetrics(service?.httpUrl ?? '')).families) === 3);
    const { families } = await scrapeMetrics(service.httpUrl);
    expect(rejected(families)).toEqual({ request_timeout: 1, client_aborted: 2 });
    expect(sampleValue(families, 'hookwatch_otlp_requests_total', { transport: 'http', signal: 'logs', outcome: '408' })).toBe(1);
    expect(sampleValue(families, 'hookwatch_otlp_requests_total', { transport: 'http', signal: 'logs', outcome: '499' })).toBe(2);
  });

  it('counts the requests Node\'s HTTP parser refuses on the OTLP/HTTP port under their own reasons, and a connection that sent nothing under none', async () => {
    service = await startServiceUnderTest({ HOOKWATCH_OTLP_REQUEST_TIMEOUT: '1s' });
    const url = new URL(service.otlpHttpUrl);
    const answer = async (raw: string): Promise<string> => (await sendRaw(url, raw)).answer;
    const rejected = (f: Map<string, ParsedFamily>): Record<string, number> => Object.fromEntries((f.get('hookwatch_otlp_requests_rejected_total')?.samples ?? [])
      .filter((x) => x.labels['transport'] === 'http' && x.value > 0).map((x) => [x.labels['reason'] as string, x.value]));
    // A proxy adding headers past 16 KiB.
    expect(await answer(`POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Added: ${'a'.repeat(20_000)}\r\nContent-Length: 2\r\n\r\n{}`)).toMatch(/^HTTP\/1\.1 431 /);
    // A client speaking TLS to the plain-text port: its ClientHello is no HTTP method.
    const tlsClient = tlsConnect({ host: url.hostname, port: Number(url.port), rejectUnauthorized: false });
    const tlsError = await once(tlsClient, 'error').then(([err]) => err as Error);
    expect(tlsError).toBeInstanceOf(Error);
    tlsClient.destroy();
    // An OTLP/gRPC client on the OTLP/HTTP port: HTTP/2's connection preface.
    expect(await answer('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')).toMatch(/^HTTP\/1\.1 400 /);
    // Headers never finished: 408 at otlp.requestTimeout.
    expect(await answer('POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\n')).toMatch(/^HTTP\/1\.1 408 /);
    // Chunked framing that cannot be read, after the headers: the handler's request, counted once, by what ended it.
    expect(await answer('POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')).toMatch(/^HTTP\/1\.1 400 /);
    // A connection that says nothing is closed at the timeout, but it made no request.
    await answer('');
    // Nor one that ends its side before its headers are whole: it gave up, as one resetting the connection does.
    const ender = await sendRaw(url, 'POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    ender.socket.end();
    await ender.answer;
    // The other refusals are counted as they are answered; the handler's once it has seen its body end.
    const handled = (f: Map<string, ParsedFamily>): number => (f.get('hookwatch_otlp_requests_total')?.samples ?? []).filter((x) => x.labels['transport'] === 'http').length;
    await until('the chunked request counted', async () => handled((await scrapeMetrics(service?.httpUrl ?? '')).families) > 0);
    const { families } = await scrapeMetrics(service.httpUrl);
    expect(rejected(families)).toEqual({ header_overflow: 1, malformed: 3, request_timeout: 1 });
    // Only the request whose headers were read has a signal to count it under.
    expect(sampleValue(families, 'hookwatch_otlp_requests_total', { transport: 'http', signal: 'logs', outcome: '400' })).toBe(1);
    expect(sampleValue(families, 'hookwatch_otlp_requests_total', { transport: 'http', signal: 'logs', outcome: '499' })).toBeUndefined();
    expect(sampleValue(families, 'hookwatch_otlp_requests_rejected_total', { transport: 'http', reason: 'chunk_extensions_overflow' })).toBe(0);
  });

  it('counts a client that does not speak HTTP/2 on the OTLP/gRPC port as malformed, and a gRPC client not at all', async () => {
    service = await startServiceUnderTest();
    const grpcRejected = async (): Promise<Record<string, number>> => Object.fromEntries(((await scrapeMetrics(service?.httpUrl ?? '')).families.get('hookwatch_otlp_requests_rejected_total')?.samples ?? [])
      .filter((x) => x.labels['transport'] === 'grpc' && x.value > 0).map((x) => [x.labels['reason'] as string, x.value]));
    // A real gRPC exporter: its calls are answered, nothing is refused.
    expect((await emitExecutions(service.otlpGrpcUrl, [{ hookEvent: 'Stop', hookName: 'Stop' }], {}, { protocol: 'grpc' })).codes).toEqual([0]);
    expect(await grpcRejected()).toEqual({});
    const url = new URL(service.otlpGrpcUrl);
    // An OTLP/HTTP request: no HTTP/2 connection preface. node:http2 answers GOAWAY and closes the connection.
    expect((await (await sendRaw(url, 'POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}')).answer).length).toBeGreaterThan(0);
    await expect.poll(grpcRejected, { timeout: 15_000 }).toEqual({ malformed: 1 });
    // A client speaking TLS to the plain-text port.
    const tlsClient = tlsConnect({ host: url.hostname, port: Number(url.port), rejectUnauthorized: false });
    tlsClient.on('error', () => {});
    await new Promise((resolve) => tlsClient.on('close', resolve));
    await expect.poll(grpcRejected, { timeout: 15_000 }).toEqual({ malformed: 2 });
    // A connection that says nothing and goes is no client of any protocol.
    (await sendRaw(url, '')).socket.end();
    expect((await emitExecutions(service.otlpGrpcUrl, [{ hookEvent: 'Stop', hookName: 'Stop' }], {}, { protocol: 'grpc' })).codes).toEqual([0]);
    expect(await grpcRejected()).toEqual({ malformed: 2 });
  });

  it('logs nothing per record or per request on the hot path', async () => {
    const lines: string[] = [];
    service = await startServiceUnderTest({}, createLogger({ level: 'debug', write: (l) => lines.push(l) }));
    const before = lines.length;
    await emitExecutions(service.otlpHttpUrl, Array.from({ length: 200 }, (_, i) => ({ hookEvent: 'PostToolUse', hookName: `PostToolUse:t${i % 7}`, stdoutChars: i })));
    await replayFixtures(service.otlpHttpUrl);
    const hooks = await apiHooks(service.httpUrl);
    expect(hooks.reduce((n, h) => n + h.executions, 0)).toBeGreaterThanOrEqual(200);
    // 200+ records in ~10 requests: even at debug level the log does not grow with traffic. Alert state
    // changes (the captures hold persisted outputs) are logged once per alert, at most one per hook here.
    const logged = lines.slice(before);
    expect(logged.filter((l) => !/"msg":"alert (firing|resolved)"/.test(l))).toEqual([]);
    expect(logged.length).toBeLessThanOrEqual(hooks.length);
  });

  it('reports the gRPC receiver, forwarding and alert notifications (webhook attempts and outcomes)', async () => {
    const downstream = await countingServer('{}');
    const webhook = await countingServer('ok');
    const configFile = join(tmpdir(), `hookwatch-metrics-${process.pid}-${Date.now()}.yaml`);
    files.push(configFile);
    writeFileSync(configFile, `alerting:\n  receivers:\n    - name: hook\n      type: webhook\n      url: ${webhook.url}/alerts\n`);
    service = await startServiceUnderTest({ HOOKWATCH_CONFIG: configFile, HOOKWATCH_FORWARD_ENDPOINT: downstream.url, HOOKWATCH_FORWARD_PROTOCOL: 'http/protobuf' });
    const base = service.httpUrl;

    // One batch over OTLP/gRPC with the real gRPC exporter; its persisted output fires the persisted rule.
    const provider = new LoggerProvider({
      resource: resourceFromAttributes({ 'service.name': 'claude-code', 'service.version': '2.1.332' }),
      processors: [new BatchLogRecordProcessor({ exporter: new GrpcLogExporter({ url: service.otlpGrpcUrl, timeoutMillis: 10_000 }), scheduledDelayMillis: 60_000 })],
    });
    provider.getLogger('com.anthropic.claude_code.events').emit({
      body: 'claude_code.hook_execution_complete',
      attributes: { 'event.name': 'hook_execution_complete', 'session.id': 'grpc-1', 'event.sequence': '0', hook_event: 'SessionStart', hook_name: 'SessionStart:startup', num_hooks: '1', num_success: '1', additional_context_chars: '15000', stdout_chars: '0', system_message_chars: '0', initial_user_message_chars: '0', num_outputs_persisted: '1' },
    });
    await provider.forceFlush();
    await provider.shutdown();

    await until('forwarded and notified', async () => {
      const f = (await scrapeMetrics(base)).families;
      return (sampleValue(f, 'hookwatch_forward_delivered_total') ?? 0) >= 1 && (sampleValue(f, 'hookwatch_notifications_total', { outcome: 'delivered' }) ?? 0) >= 1;
    });
    const { families } = await scrapeMetrics(base);
    expect(sampleValue(families, 'hookwatch_otlp_requests_total', { transport: 'grpc', signal: 'logs', outcome: 'ok' })).toBe(1);
    expect(sampleValue(families, 'hookwatch_hook_outputs_persisted_total', { hook_name: 'SessionStart:startup' })).toBe(1);
    expect(sampleValue(families, 'hookwatch_forward_delivered_total')).toBe(downstream.hits.get('/v1/logs'));
    expect(sampleValue(families, 'hookwatch_forward_queue_depth')).toBe(0);
    expect(sampleValue(families, 'hookwatch_forward_oldest_age_seconds')).toBeUndefined();
    expect(sampleValue(families, 'hookwatch_forward_dead_letters_held')).toBe(0);
    expect(sampleValue(families, 'hookwatch_forward_dead_letters_max_bytes')).toBe(256 * 1024 * 1024);
    expect(sampleValue(families, 'hookwatch_forward_dead_letters_evicted_total')).toBe(0);
    expect(sampleValue(families, 'hookwatch_forward_expired_total')).toBe(0);
    expect(sampleValue(families, 'hookwatch_notifications_total', { outcome: 'delivered' })).toBe(webhook.hits.get('/alerts'));
    expect(sampleValue(families, 'hookwatch_notification_attempts_total')).toBeGreaterThanOrEqual(webhook.hits.get('/alerts') ?? 1);
    expect(sampleValue(families, 'hookwatch_notifications_total', { outcome: 'failed' })).toBe(0);
  });

  it('exports only families docs/deploy.md\'s metrics table lists, and every family it lists', async () => {
    // Forwarding, a webhook and an Alertmanager receiver on: the families that only exist with them appear too.
    const full = await startFullyConfiguredService();
    try {
      await emitExecutions(full.service.otlpHttpUrl, [{ hookEvent: 'SessionStart', hookName: 'SessionStart:startup', additionalContextChars: 12_345, outputsPersisted: 1 }]);
      const exported = [...(await scrapeMetrics(full.service.httpUrl)).families.keys()];
      const documented = documentedMetrics();
      expect(exported.filter((name) => !documented.some((d) => documentedAs(d, name))), 'exported but not in docs/deploy.md').toEqual([]);
      expect(documented.filter((d) => !exported.some((name) => documentedAs(d, name))), 'in docs/deploy.md but never exported').toEqual([]);
      for (const name of ['hookwatch_forward_queue_depth', 'hookwatch_alertmanager_renewals_total', 'hookwatch_alerts']) expect(exported).toContain(name);
    } finally {
      await full.close();
    }
  });

  it('names in README.md, SECURITY.md and docs/*.md only metrics docs/deploy.md\'s table lists (the table is checked against /metrics above)', () => {
    const root = fileURLToPath(new URL('../../', import.meta.url));
    const pages = ['README.md', 'SECURITY.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    const documented = documentedMetrics();
    expect(pages.flatMap((p) => undocumentedMetrics(readFileSync(join(root, p), 'utf8'), documented).map((n) => `${p}: ${n}`))).toEqual([]);
    // The words that are not metrics are what they are said to be: the signal channels and the test alert's name.
    const named = [readFileSync(join(root, 'collector/src/store/postgres/bus.ts'), 'utf8'), readFileSync(join(root, 'collector/src/api/alerts.ts'), 'utf8')].join('\n');
    expect(NOT_METRICS.filter((n) => !named.includes(`'${n}'`))).toEqual(['hookwatch_restored']);
    expect(documented.filter((d) => NOT_METRICS.includes(d))).toEqual([]);
    const found = undocumentedMetrics('`hookwatch_forward_queue_depth`, `hookwatch_hook_overflow_executions_total`, `hookwatch_store_operation_duration_seconds_bucket`, `hookwatch_forward_queue_dept`, `NOTIFY hookwatch_lease`', documented);
    expect(found).toEqual(['hookwatch_forward_queue_dept']);
  });
});
