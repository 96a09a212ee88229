/**
 * The export of alert events (alerting.otlp.endpoint) against a real OTLP/HTTP receiver on loopback, driven as a
 * user drives it: hook events over OTLP raise an alert, and what became of its log record is on /metrics and in
 * the log. An endpoint that accepts it counts it exported; one that answers 401 or 503, or a port nobody listens
 * on, counts it failed by reason and says so at warn, never showing the endpoint's key or headers; a full export
 * queue counts the events it drops. The export's keep-alive connection is closed when hookwatch stops.
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { diag } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { OtlpAlertEmitter } from '../src/notify/otlp.ts';
import { encodeStatus } from '../src/otlp/encode.ts';
import { startService, type RunningService } from '../src/service.ts';
import { freePort } from './support/free-port.ts';
import { otlpAccepted, otlpHookBody, WebhookSink } from './support/alerting.ts';
import { parseExposition, sampleValue } from './support/prometheus-text.ts';
import { recordingLogger, type Logged } from './support/recording-logger.ts';
import { configFromYaml } from './support/service.ts';
import { postOtlp, tempDir } from './helpers.ts';

const TOKEN = 'Bearer s3cret-alert-token';
const KEY = 'k3y-in-the-query';

describe('alert event export outcomes', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function otlpReceiver(status: number): Promise<WebhookSink> {
    const s = new WebhookSink();
    s.reply = (req) => (status < 300 ? otlpAccepted(req) : { status });
    await s.start();
    cleanups.push(() => s.close());
    return s;
  }

  async function start(endpoint: string, settings: Record<string, unknown> = {}): Promise<{ service: RunningService; lines: Logged[] }> {
    const dir = tempDir('hookwatch-alert-event-export-');
    cleanups.push(() => dir.cleanup());
    const yaml = JSON.stringify({ ...settings, alerting: { rules: [{ kind: 'persisted', window: '1h' }], otlp: { endpoint: `${endpoint}/?api-key=${KEY}`, headers: { authorization: TOKEN } } } });
    const { logger, lines } = recordingLogger();
    const service = await startService(configFromYaml(dir.dir, yaml), { logger });
    cleanups.push(async () => void (await service.stop()));
    return { service, lines };
  }

  /** A hook output over the cap, sent as Claude Code sends it: the persisted rule fires. */
  async function raiseAlert(service: RunningService, hookName: string): Promise<void> {
    const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', otlpHookBody([{ hookName, timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000, sessionId: 's1' }]), { 'content-type': 'application/json' });
    expect(res.status).toBe(200);
  }

  async function metrics(service: RunningService): Promise<ReturnType<typeof parseExposition>> {
    return parseExposition(await (await fetch(`${service.httpUrl}/metrics`)).text());
  }

  const events = async (service: RunningService, outcome: string): Promise<number | undefined> => sampleValue(await metrics(service), 'hookwatch_alert_events_total', { outcome });
  const failures = async (service: RunningService, reason: string): Promise<number | undefined> => sampleValue(await metrics(service), 'hookwatch_alert_event_failures_total', { reason });
  const warnings = (lines: Logged[]): Logged[] => lines.filter((l) => l.level === 'warn' && l.msg.startsWith('alert events not exported'));

  it('counts an event the endpoint accepts as exported, every series at 0 before', async () => {
    const receiver = await otlpReceiver(200);
    const { service, lines } = await start(receiver.url);
    const before = await metrics(service);
    for (const outcome of ['exported', 'failed', 'dropped']) expect(sampleValue(before, 'hookwatch_alert_events_total', { outcome }), outcome).toBe(0);
    for (const reason of ['refused_3xx', 'refused_4xx', 'refused_5xx', 'unreachable', 'timeout', 'tls', 'rejected', 'other']) expect(sampleValue(before, 'hookwatch_alert_event_failures_total', { reason }), reason).toBe(0);
    await raiseAlert(service, 'PostToolUse:accepted');
    await expect.poll(() => events(service, 'exported'), { timeout: 10_000, interval: 100 }).toBe(1);
    expect(receiver.delivered()).toHaveLength(1);
    expect(await events(service, 'failed')).toBe(0);
    expect(warnings(lines)).toEqual([]);
    // The event links to the dashboard as a notification does: the hook's page over the time the alert counted.
    type Attr = { key: string; value: { stringValue?: string } };
    const body = JSON.parse(receiver.requests[0]?.body ?? '{}') as { resourceLogs: { scopeLogs: { logRecords: { attributes: Attr[] }[] }[] }[] };
    const attrs = Object.fromEntries((body.resourceLogs[0]?.scopeLogs[0]?.logRecords[0]?.attributes ?? []).map((a) => [a.key, a.value.stringValue]));
    const url = new URL(attrs['hookwatch.alert.url'] ?? 'http://missing');
    expect(url.origin).toBe(service.httpUrl);
    expect(url.searchParams.get('range')).toBe('custom');
    const from = Date.parse(url.searchParams.get('from') ?? '');
    const to = Date.parse(url.searchParams.get('to') ?? '');
    expect(from).toBeLessThan(Date.now() - 3_000_000);
    expect(to).toBeGreaterThanOrEqual(Date.now() - 60_000);
    const hookId = /^\/hooks\/([^/]+)$/.exec(url.pathname)?.[1];
    const hook = await (await fetch(`${service.httpUrl}/api/v1/hooks/${hookId}?from=now-1h`)).json() as { hook: { hookName: string; outputsPersisted: number } };
    expect(hook.hook).toMatchObject({ hookName: 'PostToolUse:accepted', outputsPersisted: 1 });
  });

  it.each([
    { answer: 401, reason: 'refused_4xx', says: '"status":401' },
    // Retried by the exporter for up to 5 s, then given up.
    { answer: 503, reason: 'refused_5xx', says: '"status":503' },
  ])('counts an event the endpoint answers $answer as failed ($reason) and logs it without the endpoint\'s secrets', async ({ answer, reason, says }) => {
    const receiver = await otlpReceiver(answer);
    const { service, lines } = await start(receiver.url);
    await raiseAlert(service, 'PostToolUse:refused');
    await expect.poll(() => failures(service, reason), { timeout: 15_000, interval: 100 }).toBe(1);
    expect(await events(service, 'failed')).toBe(1);
    expect(await events(service, 'exported')).toBe(0);
    expect(receiver.requests.length).toBeGreaterThan(0);
    expect(receiver.requests[0]?.headers['authorization']).toBe(TOKEN);
    const logged = warnings(lines);
    expect(logged).toHaveLength(1);
    expect(logged[0]?.msg).toContain(`"reason":"${reason}"`);
    expect(logged[0]?.msg).toContain(says);
    expect(logged[0]?.msg).toContain(`"endpoint":"${receiver.url}"`);
    for (const l of lines) {
      expect(l.msg).not.toContain(KEY);
      expect(l.msg).not.toContain('s3cret');
    }
  });

  it.each([
    { answer: 'a google.rpc.Status in OTLP/JSON', type: 'application/json', body: (text: string) => JSON.stringify({ code: 3, message: text }), says: (text: string) => JSON.stringify({ code: 3, message: text }) },
    { answer: 'a google.rpc.Status in protobuf', type: 'application/x-protobuf', body: (text: string) => encodeStatus('protobuf', 3, text).toString('latin1'), says: (text: string) => text },
    { answer: 'a gateway\'s text', type: 'text/plain', body: (text: string) => text, says: (text: string) => text },
  ])('names the reason the endpoint gives for refusing the events ($answer), without its secrets', async ({ type, body, says }) => {
    const receiver = new WebhookSink();
    receiver.reply = (req) => ({ status: 400, headers: { 'content-type': type }, body: body(`record 1 has no body (sent with ${String(req.headers['authorization'])})`) });
    await receiver.start();
    cleanups.push(() => receiver.close());
    const { service, lines } = await start(receiver.url);
    await raiseAlert(service, 'PostToolUse:refused-why');
    await expect.poll(() => failures(service, 'refused_4xx'), { timeout: 10_000, interval: 100 }).toBe(1);
    const logged = warnings(lines);
    expect(logged).toHaveLength(1);
    const fields = JSON.parse(logged[0]!.msg.slice(logged[0]!.msg.indexOf(' {') + 1)) as Record<string, unknown>;
    // "answered 400" alone does not tell a bad record from a quota or a key; the endpoint's reason does.
    expect(fields).toMatchObject({ reason: 'refused_4xx', status: 400, message: `answered 400: ${says('record 1 has no body (sent with <redacted>)')}` });
    for (const l of lines) expect(l.msg).not.toContain('s3cret');
  });

  it('counts the records a partial success rejects as failed (rejected), and logs the endpoint\'s message at most a line a minute, without the key or headers', async () => {
    // An OTLP receiver that accepts the request but rejects its record, naming the URL it was sent to.
    const receiver = new WebhookSink();
    receiver.reply = (req) => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ partialSuccess: { rejectedLogRecords: '1', errorMessage: `record rejected at ${receiver.url}${req.path} (${String(req.headers['authorization'])})` } }),
    });
    await receiver.start();
    cleanups.push(() => receiver.close());
    const { service, lines } = await start(receiver.url);
    const partialLines = (): Logged[] => lines.filter((l) => l.msg.startsWith('alerting.otlp.endpoint answered a partial success'));
    await raiseAlert(service, 'PostToolUse:partial');
    await expect.poll(() => failures(service, 'rejected'), { timeout: 10_000, interval: 100 }).toBe(1);
    expect(await events(service, 'failed')).toBe(1);
    expect(await events(service, 'exported')).toBe(0);
    expect(receiver.requests[0]?.path).toContain(KEY);
    expect(partialLines()).toHaveLength(1);
    const first = partialLines()[0]!;
    expect(first.level).toBe('warn');
    const fields = JSON.parse(first.msg.slice(first.msg.indexOf(' {') + 1)) as Record<string, unknown>;
    expect(fields).toEqual({ endpoint: receiver.url, answers: 1, rejected: 1, message: `record rejected at ${receiver.url}/v1/logs (<redacted>)`, rejectedTotal: 1 });
    // Another export within the minute: counted, written when the export stops.
    await raiseAlert(service, 'PostToolUse:partial-again');
    await expect.poll(() => failures(service, 'rejected'), { timeout: 10_000, interval: 100 }).toBe(2);
    expect(partialLines()).toHaveLength(1);
    await service.stop();
    expect(partialLines()).toHaveLength(2);
    expect(partialLines()[1]?.msg).toContain('"answers":1');
    // Counted and logged once: not again as what the SDK reports.
    expect(lines.filter((l) => l.msg.startsWith('OpenTelemetry SDK reported'))).toEqual([]);
    for (const l of lines) {
      expect(l.msg).not.toContain(KEY);
      expect(l.msg).not.toContain('s3cret');
    }
  });

  it('counts the events of a partial success that rejects nothing as exported, and logs its message as a warning from the endpoint, not as a loss', async () => {
    // The OTLP specification's warning: a partial success with 0 rejected records and a message.
    const receiver = new WebhookSink();
    receiver.reply = () => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ partialSuccess: { rejectedLogRecords: '0', errorMessage: `attribute truncated (${TOKEN})` } }),
    });
    await receiver.start();
    cleanups.push(() => receiver.close());
    const { service, lines } = await start(receiver.url);
    await raiseAlert(service, 'PostToolUse:warned');
    await expect.poll(() => events(service, 'exported'), { timeout: 10_000, interval: 100 }).toBe(1);
    expect(await events(service, 'failed')).toBe(0);
    expect(await failures(service, 'rejected')).toBe(0);
    const warned = lines.filter((l) => l.msg.startsWith('alerting.otlp.endpoint accepted the alert events with a warning'));
    expect(warned).toHaveLength(1);
    expect(warned[0]?.level).toBe('warn');
    const fields = JSON.parse(warned[0]!.msg.slice(warned[0]!.msg.indexOf(' {') + 1)) as Record<string, unknown>;
    expect(fields).toEqual({ endpoint: receiver.url, answers: 1, message: 'attribute truncated (<redacted>)' });
    await service.stop();
    expect(lines.filter((l) => /lost|partial success/.test(l.msg))).toEqual([]);
    for (const l of lines) expect(l.msg).not.toContain('s3cret');
  });

  it('logs what the OpenTelemetry SDK reports about an export (an answer that is not OTLP), at most a line a minute, and nothing once stopped', async () => {
    const receiver = new WebhookSink();
    receiver.reply = () => ({ status: 200, headers: { 'content-type': 'text/plain' }, body: 'ok' });
    await receiver.start();
    cleanups.push(() => receiver.close());
    const { service, lines } = await start(receiver.url);
    const sdkLines = (): Logged[] => lines.filter((l) => l.msg.startsWith('OpenTelemetry SDK reported'));
    await raiseAlert(service, 'PostToolUse:not-otlp');
    await expect.poll(() => sdkLines().length, { timeout: 10_000, interval: 100 }).toBe(1);
    const first = sdkLines()[0]!;
    expect(first.level).toBe('warn');
    const fields = JSON.parse(first.msg.slice(first.msg.indexOf(' {') + 1)) as { endpoint: string; message: string; times: number };
    expect(fields.endpoint).toBe(receiver.url);
    expect(fields.message).toMatch(/^Failed to parse logs export response: .*"ok" is not valid JSON/);
    expect(fields.times).toBe(1);
    // Accepted all the same (a 200): exported, not failed.
    await expect.poll(() => events(service, 'exported'), { timeout: 10_000, interval: 100 }).toBe(1);
    await raiseAlert(service, 'PostToolUse:not-otlp-again');
    await expect.poll(() => events(service, 'exported'), { timeout: 10_000, interval: 100 }).toBe(2);
    expect(sdkLines()).toHaveLength(1);
    await service.stop();
    expect(sdkLines()).toHaveLength(2);
    expect(sdkLines()[1]?.msg).toContain('"times":1');
    // Once stopped, the SDK's diagnostics are no longer taken.
    diag.warn('after stop');
    expect(lines.filter((l) => l.msg.includes('after stop'))).toEqual([]);
    for (const l of lines) expect(l.msg).not.toContain(KEY);
  });

  it('counts an event for a port nobody listens on as failed (unreachable), and logs a second failure within the minute only at stop', async () => {
    const port = await freePort();
    const { service, lines } = await start(`http://127.0.0.1:${port}`);
    await raiseAlert(service, 'PostToolUse:unreachable');
    await expect.poll(() => failures(service, 'unreachable'), { timeout: 15_000, interval: 100 }).toBe(1);
    expect(warnings(lines)).toEqual([expect.objectContaining({ msg: expect.stringContaining('"reason":"unreachable"') as string })]);
    // Said in words with its code, as a webhook's delivery attempt says it, and nothing of the host or URL: the line
    // names the endpoint on its own, without its query.
    const logged = warnings(lines)[0]?.msg ?? '';
    const fields = JSON.parse(logged.slice(logged.indexOf(' {'))) as { message?: string };
    expect(fields.message).toBe('connection refused (ECONNREFUSED): nothing listens at that address');
    await raiseAlert(service, 'PostToolUse:unreachable-again');
    await expect.poll(() => failures(service, 'unreachable'), { timeout: 15_000, interval: 100 }).toBe(2);
    expect(await events(service, 'failed')).toBe(2);
    // Rate-limited: the second waits for the minute, or for the export to stop.
    expect(warnings(lines)).toHaveLength(1);
    await service.stop();
    expect(warnings(lines)).toHaveLength(2);
    expect(warnings(lines)[1]?.msg).toContain('"events":1');
    for (const l of lines) expect(l.msg).not.toContain(KEY);
  });

  it('closes its idle keep-alive connection to the endpoint when hookwatch stops', async () => {
    const receiver = await otlpReceiver(200);
    // An idle connection would stay open for ten minutes unless hookwatch closes it.
    receiver.keepConnectionsFor(600_000);
    const { service } = await start(receiver.url);
    await raiseAlert(service, 'PostToolUse:kept-alive');
    await expect.poll(() => events(service, 'exported'), { timeout: 10_000, interval: 100 }).toBe(1);
    expect(receiver.openConnections()).toBe(1);
    await service.stop();
    await expect.poll(() => receiver.openConnections(), { timeout: 5000, interval: 50 }).toBe(0);
  });

  it('gives the flush at stop a bound when the endpoint takes the request and never answers: the events not exported are logged by number, the stop is unclean', async () => {
    // Answers after ten minutes: to hookwatch an endpoint that hangs (only the bound at stop ends the wait).
    const hung = new WebhookSink();
    hung.reply = () => ({ status: 200, delayMs: 600_000 });
    await hung.start();
    cleanups.push(() => hung.close());
    // The flush's bound is at most a quarter of shutdown.timeout: 1250 ms here, below the export's own 5 s timeout.
    const { service, lines } = await start(hung.url, { shutdown: { timeout: '5s' } });
    await raiseAlert(service, 'PostToolUse:hung-1');
    await hung.waitFor(1, 10_000);
    // The second waits in the export queue behind the first, which the endpoint holds.
    await raiseAlert(service, 'PostToolUse:hung-2');
    await expect.poll(() => service.alerting.engine.readModel.alerts().length, { timeout: 10_000, interval: 50 }).toBe(2);
    const t0 = performance.now();
    const report = await service.stop();
    // The bound (1250 ms) and at most the grace after it (1 s): the export's own 5 s timeout is not waited out.
    expect(performance.now() - t0).toBeGreaterThanOrEqual(1200);
    expect(performance.now() - t0).toBeLessThan(3500);
    expect(report.unfinished).toEqual(['alert event export']);
    const cut = lines.filter((l) => l.msg.startsWith('alert event export cut off'));
    expect(cut).toEqual([expect.objectContaining({ level: 'warn', msg: expect.stringContaining('"events":2') as string })]);
    expect(service.alerting.events.stats).toMatchObject({ exported: 0, failed: 2 });
    // Counted once: the answers the cut-off export never got are not logged again as failures, nor the closed
    // connections' errors as the SDK's.
    expect(warnings(lines)).toEqual([]);
    expect(lines.filter((l) => l.msg.startsWith('OpenTelemetry SDK reported a problem'))).toEqual([]);
    // Cut off for good: the exporter does not send the request again (its first retry comes after about 1 s).
    await new Promise((r) => setTimeout(r, 2000));
    expect(hung.requests).toHaveLength(1);
    expect(hung.openConnections()).toBe(0);
    for (const l of lines) {
      expect(l.msg).not.toContain(KEY);
      expect(l.msg).not.toContain('s3cret');
    }
  });

  /** Writes `text` to `socket` every 200 ms until it closes: an answer that goes on, never idle for long. */
  function drip(socket: Socket, text: string): void {
    const timer = setInterval(() => socket.write(text), 200);
    socket.on('close', () => clearInterval(timer));
  }

  /** `server` listening on 127.0.0.1: its URL, and how many connections it has open. */
  async function listening(server: TcpServer): Promise<{ url: string; open: () => Promise<number> }> {
    server.on('connection', (socket: Socket) => socket.on('error', () => {}));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    return {
      url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
      open: () => new Promise<number>((resolve) => server.getConnections((_err, n) => resolve(n))),
    };
  }

  it('ends an export whose accepted answer never ends at the export timeout: counted exported, its connection closed', async () => {
    // 200 at once, then a body that trickles on (a megabyte declared): the endpoint took the records, and never
    // says more.
    const server = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(1 << 20) });
        res.write('{');
        drip(res.socket!, ' ');
      });
    });
    const endpoint = await listening(server);
    const { service, lines } = await start(endpoint.url);
    await raiseAlert(service, 'PostToolUse:dripping-body-1');
    await expect.poll(() => events(service, 'exported'), { timeout: 15_000, interval: 100 }).toBe(1);
    await expect.poll(() => endpoint.open(), { timeout: 5000, interval: 50 }).toBe(0);
    // The next export is not held behind it.
    await raiseAlert(service, 'PostToolUse:dripping-body-2');
    await expect.poll(() => events(service, 'exported'), { timeout: 15_000, interval: 100 }).toBe(2);
    await expect.poll(() => endpoint.open(), { timeout: 5000, interval: 50 }).toBe(0);
    expect(await events(service, 'failed')).toBe(0);
    expect(lines.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
  });

  it('ends an export whose refusal never ends at the export timeout: counted failed by its status (refused_4xx), its connection closed', async () => {
    const server = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(401, { 'content-type': 'text/plain', 'content-length': String(1 << 20) });
        res.write('invalid key');
        drip(res.socket!, ' ');
      });
    });
    const endpoint = await listening(server);
    const { service, lines } = await start(endpoint.url);
    await raiseAlert(service, 'PostToolUse:dripping-refusal');
    await expect.poll(() => failures(service, 'refused_4xx'), { timeout: 15_000, interval: 100 }).toBe(1);
    await expect.poll(() => endpoint.open(), { timeout: 5000, interval: 50 }).toBe(0);
    expect(await events(service, 'failed')).toBe(1);
    await service.stop();
    expect(warnings(lines)).toEqual([expect.objectContaining({ msg: expect.stringContaining('"reason":"refused_4xx","status":401,"message":"answered 401: invalid key') as string })]);
  });

  it('ends an export whose answer never ends its headers at the export timeout: counted failed (timeout), its connection closed', async () => {
    // A status line, then a header line every 200 ms for ever: never an answer, never idle.
    const server = createTcpServer((socket) => {
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n');
        drip(socket, 'x-wait: 1\r\n');
      });
    });
    const endpoint = await listening(server);
    const { service, lines } = await start(endpoint.url);
    await raiseAlert(service, 'PostToolUse:dripping-headers');
    await expect.poll(() => failures(service, 'timeout'), { timeout: 15_000, interval: 100 }).toBe(1);
    await expect.poll(() => endpoint.open(), { timeout: 5000, interval: 50 }).toBe(0);
    expect(await events(service, 'exported')).toBe(0);
    await service.stop();
    expect(warnings(lines)).toEqual([expect.objectContaining({ msg: expect.stringContaining('"reason":"timeout"') as string })]);
  });

  it('counts and logs the events a full export queue drops, and exports the ones it kept', async () => {
    const receiver = new WebhookSink();
    // The first export waits for its answer while more events come.
    receiver.reply = (req) => ({ ...otlpAccepted(req), ...(req.index === 0 ? { delayMs: 500 } : {}) });
    await receiver.start();
    cleanups.push(() => receiver.close());
    const { logger, lines } = recordingLogger();
    const emitter = new OtlpAlertEmitter({ endpoint: receiver.url, headers: {}, serviceVersion: '0.1.0', scheduledDelayMs: 10, logger, maxQueue: 2 });
    cleanups.push(() => emitter.shutdown());
    const emit = (rule: string): void => emitter.emit({ id: rule, fingerprint: rule, rule, state: 'firing', labels: { alertname: rule }, annotations: {}, atMs: Date.now() });
    emit('first');
    await receiver.waitFor(1, 10_000);
    for (const rule of ['queued-1', 'queued-2', 'dropped-1', 'dropped-2']) emit(rule);
    expect(emitter.stats.dropped).toBe(2);
    expect(lines.filter((l) => l.level === 'warn')).toEqual([expect.objectContaining({ msg: expect.stringContaining('alert event export queue full; events dropped') as string })]);
    await emitter.shutdown();
    expect(emitter.stats).toMatchObject({ exported: 3, failed: 0, dropped: 2 });
    const sent = receiver.delivered().map((r) => r.body).join('\n');
    for (const rule of ['first', 'queued-1', 'queued-2']) expect(sent).toContain(rule);
    expect(sent).not.toContain('dropped-');
    // The second drop, held back within the minute, is logged as the export stops.
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([expect.stringContaining('"events":1'), expect.stringContaining('"events":1')]);
  });
});
