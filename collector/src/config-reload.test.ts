/**
 * Reloading the configuration of a running hookwatch through POST /-/reload: a real service started from a real
 * file, the file rewritten, and the next evaluation and notification checked on real webhook receivers.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, toConfig } from './config/index.ts';
import { startService, type RunningService } from './service.ts';
import { openStore } from './store/open.ts';
import type { Store } from './store/store.ts';
import type { AlertmanagerWebhookBody } from './notify/alertmanager.ts';
import type { HooksResponse } from '../../shared/src/api.ts';
import { otlpHookBody, WebhookSink } from '../test/support/alerting.ts';
import { createLogger, type Logger } from './telemetry/logger.ts';
import { recordingLogger, type Logged } from '../test/support/recording-logger.ts';
import { until } from '../test/helpers.ts';
import { parseExposition, sampleValue } from '../test/support/prometheus-text.ts';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Reloadable {
  service: RunningService;
  file: string;
  lines: Logged[];
}

/**
 * hookwatch started from `yaml` in a file, as `hookwatch serve` starts it, with every later load reading the file
 * again; `openedStore` is given the store it opens before it is used.
 */
async function startFromFile(yaml: string, extraEnv: Record<string, string> = {}, log?: Logger, openedStore?: (store: Store) => void): Promise<Reloadable> {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-reload-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'hookwatch.yaml');
  writeFileSync(file, yaml);
  const env = {
    HOOKWATCH_CONFIG: file,
    HOOKWATCH_DB: join(dir, 'h.db'),
    HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0',
    HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0',
    HOOKWATCH_HTTP_ADDR: '127.0.0.1:0',
    HOOKWATCH_FORWARD_QUEUE_PATH: join(dir, 'forward-queue.db'),
    ...extraEnv,
  };
  const loaded = loadConfig({ env });
  const config = toConfig(loaded);
  const store = openedStore ? await openStore(config) : undefined;
  if (store) openedStore?.(store);
  const { logger, lines } = recordingLogger();
  const service = await startService(config, {
    ...(store ? { store } : {}),
    logger: log ?? logger,
    configSource: {
      loaded,
      load: () => {
        const next = loadConfig({ env });
        return { loaded: next, config: toConfig(next) };
      },
    },
  });
  cleanups.push(() => service.stop());
  return { service, file, lines };
}

async function sink(): Promise<WebhookSink> {
  const s = new WebhookSink();
  await s.start();
  cleanups.push(() => s.close());
  return s;
}

/** One execution of `hookName`, now, whose additionalContext was `chars` characters. */
async function hookOutput(service: RunningService, hookName: string, sessionId: string, chars: number, outputsPersisted: number): Promise<void> {
  const res = await fetch(`${service.otlpHttpUrl}/v1/logs`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: otlpHookBody([{ hookName, timeMs: Date.now(), outputsPersisted, additionalContextChars: chars, sessionId }]),
  });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

/** A persisted output of SessionStart:startup, now. */
async function persistedOutput(service: RunningService, sessionId: string): Promise<void> {
  await hookOutput(service, 'SessionStart:startup', sessionId, 12_000, 1);
}

async function reload(service: RunningService, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${service.httpUrl}/-/reload`, { method: 'POST', headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

function summary(s: WebhookSink): string[] {
  return s.bodies<AlertmanagerWebhookBody>().map((b) => `${b.status} ${b.alerts[0]?.labels['alertname']}`);
}

const settle = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function reloadMetrics(service: RunningService): Promise<{ successful: number | undefined; at: number | undefined }> {
  const text = await (await fetch(`${service.httpUrl}/metrics`)).text();
  const families = parseExposition(text);
  return { successful: sampleValue(families, 'hookwatch_config_last_reload_successful'), at: sampleValue(families, 'hookwatch_config_last_reload_success_timestamp_seconds') };
}

describe('POST /-/reload', () => {
  it('evaluates the new rules and notifies the new receivers, of the alerts already firing too; a firing alert is not notified again to a receiver that had it', { timeout: 30_000 }, async () => {
    const before = await sink();
    const after = await sink();
    const rules = '    - { kind: persisted, window: 1h }\n';
    const { service, file } = await startFromFile(`alerting:\n  evaluationInterval: 100ms\n  repeatInterval: 1h\n  rules:\n${rules}  receivers:\n    - { name: ops, url: "${before.url}/hook" }\n`);
    await persistedOutput(service, 'a');
    await before.waitFor(1, 10_000);
    expect(summary(before)).toEqual(['firing persisted']);

    writeFileSync(file, `alerting:\n  evaluationInterval: 100ms\n  repeatInterval: 1h\n  rules:\n${rules}    - { kind: persisted, name: persisted_too, window: 1h }\n  receivers:\n    - { name: oncall, url: "${after.url}/hook" }\n`);
    expect(await reload(service)).toEqual({ status: 200, body: { status: 'success', restartRequired: [] } });

    // The new rule fires at the next evaluation, on what is already stored, and goes to the new receiver only;
    // the new receiver also gets the alert that was already firing, at that evaluation.
    await after.waitFor(2, 10_000);
    // Several evaluations later: the alert of the unchanged rule kept its state, and was not notified again.
    await settle(1000);
    expect(summary(after).sort()).toEqual(['firing persisted', 'firing persisted_too']);
    expect(summary(before)).toEqual(['firing persisted']);
    const firing = (await (await fetch(`${service.httpUrl}/api/v1/alerts?state=firing`)).json()) as { alerts: { rule: string }[]; receivers: string[] };
    expect(firing.alerts.map((a) => a.rule).sort()).toEqual(['persisted', 'persisted_too']);
    expect(firing.receivers).toEqual(['oncall']);
  });

  it('answers once the new configuration is applied, neither after an evaluation in progress nor after the one it queues', { timeout: 30_000 }, async () => {
    const ops = await sink();
    const start = 'alerting:\n  evaluationInterval: 10m\n  rules:\n    - { kind: persisted, window: 1h }\n';
    // The store's reads of the hooks' counters, held while `held` is set, as those of a large fleet take long.
    let held: Promise<void> | undefined;
    let reads = 0;
    const { service, file } = await startFromFile(start, {}, undefined, (store) => {
      const read = store.hookCounters.bind(store);
      store.hookCounters = async (q) => {
        if (held) {
          reads++;
          await held;
        }
        return read(q);
      };
    });
    await persistedOutput(service, 'a');
    const firing = async (): Promise<{ alerts: { rule: string }[]; receivers: string[] }> => (await (await fetch(`${service.httpUrl}/api/v1/alerts?state=firing`)).json()) as { alerts: { rule: string }[]; receivers: string[] };
    await until('the alert to fire', async () => (await firing()).alerts.length === 1, 10_000);
    // An evaluation of every rule in progress, held in its read.
    let release = (): void => {};
    held = new Promise<void>((resolve) => (release = resolve));
    cleanups.push(() => release());
    const evaluation = service.alerting.engine.evaluate('all');
    await until('the evaluation to read', () => reads > 0, 10_000);

    writeFileSync(file, `${start}    - { kind: persisted, name: persisted_too, window: 1h }\n  receivers:\n    - { name: ops, url: "${ops.url}/hook" }\n`);
    expect(await reload(service)).toEqual({ status: 200, body: { status: 'success', restartRequired: [] } });
    // Applied, and evaluated once the evaluation in progress is done: the new rule fires, and the receiver the
    // reload added gets it and the alert already firing, once each.
    expect((await firing()).receivers).toEqual(['ops']);
    expect(ops.requests).toEqual([]);
    held = undefined;
    release();
    await evaluation;
    await ops.waitFor(2, 10_000);
    await settle(500);
    expect(summary(ops).sort()).toEqual(['firing persisted', 'firing persisted_too']);
  });

  it('resolves the alerts of a rule the new file removed', { timeout: 30_000 }, async () => {
    const ops = await sink();
    const receivers = `  receivers:\n    - { name: ops, url: "${ops.url}/hook" }\n`;
    const { service, file } = await startFromFile(`alerting:\n  evaluationInterval: 100ms\n  rules:\n    - { kind: persisted, window: 1h }\n${receivers}`);
    await persistedOutput(service, 'a');
    await ops.waitFor(1, 10_000);
    writeFileSync(file, `alerting:\n  evaluationInterval: 100ms\n  rules: []\n${receivers}`);
    expect((await reload(service)).status).toBe(200);
    await ops.waitFor(2, 10_000);
    expect(summary(ops)).toEqual(['firing persisted', 'resolved persisted']);
  });

  it('refuses a silence rule whose after is not shorter than its window, naming the rule and both values', { timeout: 30_000 }, async () => {
    const { service, file } = await startFromFile('alerting:\n  evaluationInterval: 100ms\n  rules:\n    - { kind: silence, window: 1h, after: 10m }\n');
    writeFileSync(file, 'alerting:\n  evaluationInterval: 100ms\n  rules:\n    - { kind: silence, name: quiet_hooks, window: 1m, after: 3m }\n');
    const refused = await reload(service);
    expect(refused.status).toBe(400);
    expect((refused.body['error'] as { message: string }).message).toMatch(/alerting\.rules\[0\] \(quiet_hooks\): after 3m is not shorter than window 1m: /);
    expect((await reloadMetrics(service)).successful).toBe(0);
  });

  it('refuses an evaluationInterval that a silence rule\'s after no longer fits in its window with, naming the rule', { timeout: 30_000 }, async () => {
    const { service, file } = await startFromFile('alerting:\n  evaluationInterval: 100ms\n  rules:\n    - { kind: silence, window: 1h, after: 58m }\n');
    writeFileSync(file, 'alerting:\n  evaluationInterval: 5m\n  rules:\n    - { kind: silence, window: 1h, after: 58m }\n');
    const refused = await reload(service);
    expect(refused.status).toBe(400);
    expect((refused.body['error'] as { message: string }).message).toMatch(/alerting\.rules\[0\] \(silence\): after 58m plus alerting\.evaluationInterval 5m is more than window 1h: /);
    expect((await reloadMetrics(service)).successful).toBe(0);
  });

  it('refuses an invalid file with 400 naming the problem, keeps the running configuration, and never shows a secret', { timeout: 30_000 }, async () => {
    const ops = await sink();
    const { service, file, lines } = await startFromFile(`alerting:\n  evaluationInterval: 100ms\n  rules:\n    - { kind: persisted, window: 1h }\n  receivers:\n    - { name: ops, url: "${ops.url}/hook" }\n`);
    const secretUrl = 'https://hooks.slack.example/services/T000/B000/reload-secret-url-token';
    writeFileSync(file, `alerting:\n  rules:\n    - { kind: persisted, window: 1h }\n  receivers:\n    - { name: chat, type: slack, url: "${secretUrl}", signingSecret: "reload-secret-signing-value" }\n`);
    const refused = await reload(service);
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ error: { code: 'invalid_config', message: expect.stringContaining('alerting.receivers[0].signingSecret') as string } });
    const errors = lines.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]?.msg).toContain('alerting.receivers[0].signingSecret');
    for (const text of [JSON.stringify(refused.body), ...lines.map((l) => l.msg)]) {
      expect(text).not.toContain('reload-secret');
      expect(text).not.toContain('T000/B000');
    }
    expect((await reloadMetrics(service)).successful).toBe(0);

    // Still the running rules and receiver: the alert goes to ops.
    await persistedOutput(service, 'a');
    await ops.waitFor(1, 10_000);
    expect(summary(ops)).toEqual(['firing persisted']);

    // A file that is not YAML at all is refused the same way.
    writeFileSync(file, 'alerting: [unclosed\n');
    const notYaml = await reload(service);
    expect(notYaml.status).toBe(400);
    expect((notYaml.body['error'] as { message: string }).message).toMatch(/not valid YAML/);

    // Fixed: reloaded, and the metrics say so.
    const startedAt = (await reloadMetrics(service)).at as number;
    writeFileSync(file, `alerting:\n  rules: []\n  receivers:\n    - { name: ops, url: "${ops.url}/hook" }\n`);
    expect((await reload(service)).status).toBe(200);
    const now = await reloadMetrics(service);
    expect(now.successful).toBe(1);
    expect(now.at).toBeGreaterThanOrEqual(startedAt);
  });

  it('applies what it can and names the changed settings that need a restart', { timeout: 30_000 }, async () => {
    const ops = await sink();
    const { service, file, lines } = await startFromFile(`retention:\n  events: 30d\nalerting:\n  rules: []\n`);
    writeFileSync(file, `retention:\n  events: 10d\nhttp:\n  maxPendingQueries: 7\nalerting:\n  evaluationInterval: 100ms\n  rules:\n    - { kind: persisted, window: 1h }\n  receivers:\n    - { name: ops, url: "${ops.url}/hook" }\n`);
    expect(await reload(service)).toEqual({ status: 200, body: { status: 'success', restartRequired: ['http.maxPendingQueries', 'retention.events'] } });
    expect(lines.filter((l) => l.level === 'warn' && l.msg.includes('restart')).map((l) => l.msg)).toEqual([expect.stringContaining('["http.maxPendingQueries","retention.events"]')]);
    await persistedOutput(service, 'a');
    await ops.waitFor(1, 10_000);
    expect(summary(ops)).toEqual(['firing persisted']);
  });

  it('classifies outputs received after it by the new near threshold and reports it on /metrics; stored executions keep their status', { timeout: 30_000 }, async () => {
    const { service, file } = await startFromFile(`delivery:\n  nearThreshold: 8000\nalerting:\n  rules: []\n`);
    const metrics = async (): Promise<ReturnType<typeof parseExposition>> => parseExposition(await (await fetch(`${service.httpUrl}/metrics`)).text());
    expect(sampleValue(await metrics(), 'hookwatch_delivery_near_threshold_chars')).toBe(8000);
    // 8,560 characters (8,500 of additionalContext and its JSON wrapper on stdout): above 8000, below 9000.
    await hookOutput(service, 'SessionStart:startup', 'a', 8_500, 0);
    writeFileSync(file, `delivery:\n  nearThreshold: 9000\nalerting:\n  rules: []\n`);
    expect(await reload(service)).toEqual({ status: 200, body: { status: 'success', restartRequired: [] } });
    await hookOutput(service, 'SessionStart:resume', 'b', 8_500, 0);

    const { hooks } = (await (await fetch(`${service.httpUrl}/api/v1/hooks`)).json()) as HooksResponse;
    expect(hooks.map((h) => [h.hookName, h.status, h.nearExecutions]).sort()).toEqual([['SessionStart:resume', 'ok', 0], ['SessionStart:startup', 'near', 1]]);
    // The first render showing a hook's series shows its counters at 0 (hook-metrics.ts); the next one counts.
    await metrics();
    const families = await metrics();
    expect(sampleValue(families, 'hookwatch_delivery_near_threshold_chars')).toBe(9000);
    expect(sampleValue(families, 'hookwatch_hook_near_executions_total', { hook_name: 'SessionStart:startup' })).toBe(1);
    expect(sampleValue(families, 'hookwatch_hook_near_executions_total', { hook_name: 'SessionStart:resume' })).toBe(0);
  });

  it('applies log.level to the lines written after it, without naming a restart; a refused reload keeps the level', { timeout: 30_000 }, async () => {
    const written: { level: string; msg: string }[] = [];
    const logger = createLogger({ level: 'warn', write: (line) => void written.push(JSON.parse(line) as { level: string; msg: string }) });
    const alerting = 'alerting:\n  evaluationInterval: 100ms\n  rules:\n    - { kind: persisted, window: 1h }\n';
    const { service, file } = await startFromFile(`log:\n  level: warn\n${alerting}`, {}, logger);
    expect(written.filter((l) => l.level === 'info')).toEqual([]);

    writeFileSync(file, `log:\n  level: info\n${alerting}`);
    expect(await reload(service)).toEqual({ status: 200, body: { status: 'success', restartRequired: [] } });
    // Written at info, after the level changed.
    expect(written.filter((l) => l.msg === 'configuration reloaded')).toHaveLength(1);

    // Refused (an unknown key beside the new level): info lines are still written.
    writeFileSync(file, `log:\n  level: error\n  colour: true\n${alerting}`);
    expect((await reload(service)).status).toBe(400);
    await persistedOutput(service, 'a');
    const end = Date.now() + 10_000;
    while (!written.some((l) => l.msg === 'alert firing') && Date.now() < end) await settle(50);
    expect(written.filter((l) => l.msg === 'alert firing')).toHaveLength(1);

    // Back to error: the next success is no longer written, and nothing is named as needing a restart.
    writeFileSync(file, `log:\n  level: error\n${alerting}`);
    expect(await reload(service)).toEqual({ status: 200, body: { status: 'success', restartRequired: [] } });
    expect(written.filter((l) => l.msg === 'configuration reloaded')).toHaveLength(1);
    expect(written.filter((l) => l.level === 'warn' && l.msg.includes('restart'))).toEqual([]);
  });

  it('warns on a reload whose rule list turns default rules off, naming them', { timeout: 30_000 }, async () => {
    const written: { level: string; msg: string }[] = [];
    const logger = createLogger({ level: 'warn', write: (line) => void written.push(JSON.parse(line) as { level: string; msg: string }) });
    const { service, file } = await startFromFile('alerting:\n  evaluationInterval: 100ms\n', {}, logger);
    const rulesOff = (): string[] => written.filter((l) => l.level === 'warn' && l.msg.startsWith('alerting.rules lists rules')).map((l) => l.msg);
    expect(rulesOff()).toEqual([]);

    writeFileSync(file, 'alerting:\n  evaluationInterval: 100ms\n  rules:\n    - { kind: persisted, window: 1h }\n');
    expect(await reload(service)).toEqual({ status: 200, body: { status: 'success', restartRequired: [] } });
    expect(rulesOff()).toHaveLength(1);
    expect(rulesOff()[0]).toContain('{ kind: growth }');
    expect(rulesOff()[0]).not.toContain('{ kind: persisted }');

    // Rules off on purpose: no warning.
    writeFileSync(file, 'alerting:\n  evaluationInterval: 100ms\n  rules: []\n');
    expect(await reload(service)).toEqual({ status: 200, body: { status: 'success', restartRequired: [] } });
    expect(rulesOff()).toHaveLength(1);
  });

  it('refuses a reload once hookwatch has begun to stop: 503 with Retry-After, nothing read or applied', { timeout: 30_000 }, async () => {
    const receiver = await sink();
    const { service, file, lines } = await startFromFile('alerting:\n  rules: []\n');
    // A client holding an OTLP request open keeps the stop waiting for it, while the HTTP port still answers.
    const url = new URL('/v1/logs', service.otlpHttpUrl);
    const held = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '1000' } });
    held.on('error', () => {});
    cleanups.push(() => void held.destroy());
    await new Promise<void>((resolve) => held.write('{"resourceLogs": [', () => resolve()));
    const stopped = service.stop();
    writeFileSync(file, `alerting:\n  rules:\n    - { kind: persisted }\n  receivers:\n    - { name: ops, url: "${receiver.url}/hook" }\n`);
    const res = await fetch(`${service.httpUrl}/-/reload`, { method: 'POST' });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(await res.json()).toEqual({ error: { code: 'unavailable', message: 'hookwatch is stopping; the configuration is not reloaded' } });
    // Not a failed reload: the last one's outcome stands.
    expect((await reloadMetrics(service)).successful).toBe(1);
    expect(service.alerting.dispatcher.receiverNames()).toEqual([]);
    held.destroy();
    await stopped;
    expect(lines.filter((l) => l.msg.startsWith('configuration reload'))).toEqual([]);
  });

  it('refuses a query parameter with 400 naming it, as the API routes do, and reads nothing', { timeout: 30_000 }, async () => {
    const ops = await sink();
    const { service, file, lines } = await startFromFile('alerting:\n  rules: []\n');
    writeFileSync(file, `alerting:\n  rules: []\n  receivers:\n    - { name: ops, url: "${ops.url}/hook" }\n`);
    for (const query of ['dryRun=1', 'force', 'x=1&x=2']) {
      const res = await fetch(`${service.httpUrl}/-/reload?${query}`, { method: 'POST' });
      const parameter = query.split('=')[0];
      expect([res.status, await res.json()], query).toEqual([400, { error: { code: 'bad_parameter', message: `unknown parameter "${parameter}"; this route takes no query parameters`, parameter } }]);
    }
    expect(lines.some((l) => l.msg.startsWith('configuration reload'))).toBe(false);
    expect(service.alerting.dispatcher.receiverNames()).toEqual([]);
    expect(await reload(service)).toEqual({ status: 200, body: { status: 'success', restartRequired: [] } });
    expect(service.alerting.dispatcher.receiverNames()).toEqual(['ops']);
  });

  it('answers 405 to GET, and sits behind authentication and the cross-site write refusal', { timeout: 30_000 }, async () => {
    const token = 'reload-bearer-token-0123456789abcdef';
    const { service, file, lines } = await startFromFile('alerting:\n  rules: []\n', { HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: token });
    const auth = { authorization: `Bearer ${token}` };
    const get = await fetch(`${service.httpUrl}/-/reload`, { headers: auth });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    await get.arrayBuffer();
    writeFileSync(file, 'alerting:\n  rules:\n    - { kind: persisted }\n');
    expect((await reload(service)).status).toBe(401);
    expect((await reload(service, { ...auth, origin: 'https://elsewhere.example', 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect(lines.some((l) => l.msg.startsWith('configuration reload'))).toBe(false);
    expect(await reload(service, auth)).toEqual({ status: 200, body: { status: 'success', restartRequired: [] } });
  });
});
