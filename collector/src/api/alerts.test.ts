/**
 * Alerting through the whole service: OTLP in over real HTTP, webhook out to a real receiver on port 0, the
 * /api/v1 alert routes, and the real Claude Code 2.1.332 captures replayed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { AlertDetailResponse, AlertsResponse, HookSummary, Silence } from '../../../shared/src/api.ts';
import { effectiveDocument, loadConfig, toConfig } from '../config/index.ts';
import { MAX_TEST_SENDS } from '../notify/dispatcher.ts';
import { alertingSecrets } from '../notify/settings.ts';
import { FakeClock, otlpAccepted, otlpHookBody, WebhookSink } from '../../test/support/alerting.ts';
import type { AlertmanagerWebhookBody } from '../notify/alertmanager.ts';
import { startService, type RunningService } from '../service.ts';
import { createLogger, type Logger } from '../telemetry/logger.ts';
import { FIXTURE_RUNS, fixtureRequests } from '../../test/helpers.ts';
import { configFromYaml, emitExecutions } from '../../test/support/service.ts';

const SECRET = 'whsec_' + Buffer.from('hookwatch-test-signing-key-32byt').toString('base64');
const TOKEN = 'T0KEN-in-the-path-9f8e7d';

interface Running {
  service: RunningService;
  sink: WebhookSink;
  logs: string[];
  clock: FakeClock | undefined;
  logger: Logger;
  dir: string;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function start(opts: { now?: number; yaml?: (sinkUrl: string) => string } = {}): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-alerts-api-'));
  const clock = opts.now === undefined ? undefined : new FakeClock(opts.now);
  const sink = new WebhookSink(clock?.now);
  await sink.start();
  const yaml = opts.yaml?.(sink.url) ?? `
alerting:
  externalUrl: http://hookwatch.test
  delivery: { initialBackoff: 10ms, maxBackoff: 50ms }
  receivers:
    - name: ops
      url: ${sink.url}/hooks/${TOKEN}
      signingSecret: ${SECRET}
      headers: { Authorization: "Bearer header-secret-value" }
`;
  const config = configFromYaml(dir, yaml);
  const logs: string[] = [];
  const logger = createLogger({ level: 'debug', secrets: alertingSecrets(config.alerting.receivers, config.alerting.otlp.headers), write: (l) => logs.push(l) });
  const service = await startService(config, { logger, ...(clock ? { now: clock.now } : {}), alerting: { timer: false, random: () => 0.5 } });
  cleanups.push(async () => {
    await service.stop();
    await sink.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { service, sink, logs, clock, logger, dir };
}

async function post(r: Running, body: string, contentType = 'application/json'): Promise<number> {
  const res = await fetch(`${r.service.otlpHttpUrl}/v1/logs`, { method: 'POST', headers: { 'content-type': contentType }, body });
  await res.arrayBuffer();
  return res.status;
}

async function settle(r: Running): Promise<void> {
  await r.service.alerting.engine.evaluate('notify');
  await r.service.alerting.dispatcher.idle();
}

/** Makes `sink` hold every request until `release`; `arrived` lists the paths of those it holds or held. */
function holdRequests(sink: WebhookSink): { arrived: string[]; release(): void } {
  let release = (): void => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const arrived: string[] = [];
  sink.reply = ({ path }) => {
    arrived.push(path);
    return { status: 200, hold: held };
  };
  return { arrived, release: () => release() };
}

function verify(headers: Record<string, string | string[] | undefined>, body: string): boolean {
  const key = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`).digest();
  const [version, b64] = String(headers['webhook-signature']).split(',');
  const got = Buffer.from(b64 ?? '', 'base64');
  return version === 'v1' && got.length === expected.length && timingSafeEqual(got, expected) && Math.abs(Date.now() / 1000 - Number(headers['webhook-timestamp'])) < 300;
}

describe('fixture replay (Claude Code 2.1.332)', () => {
  it('one firing alert per affected hook (SessionStart:startup, PostToolUse:Bash), none for the healthy ones', async () => {
    const fixtureTime = Date.parse('2026-11-30T08:01:27Z');
    const r = await start({ now: fixtureTime + 60_000 });
    for (const run of FIXTURE_RUNS) {
      for (const req of fixtureRequests(run)) {
        const res = await fetch(`${r.service.otlpHttpUrl}${req.path}`, { method: 'POST', headers: { 'content-type': req.contentType }, body: new Uint8Array(req.body) });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      }
    }
    await settle(r);
    // Time passes: the timer's rules (never_completed, growth, silence) get their turn too.
    for (let i = 0; i < 12; i++) {
      r.clock?.advance(60_000);
      await r.service.alerting.engine.evaluate('all');
    }
    await settle(r);
    const bodies = r.sink.bodies<AlertmanagerWebhookBody>();
    expect(bodies.map((b) => `${b.status} ${b.alerts[0]?.labels['alertname']} ${b.alerts[0]?.labels['hook_name']}`).sort()).toEqual([
      'firing persisted PostToolUse:Bash',
      'firing persisted SessionStart:startup',
    ]);
    for (const req of r.sink.delivered()) expect(verify(req.headers, req.body)).toBe(true);
    const api = (await (await fetch(`${r.service.httpUrl}/api/v1/alerts`)).json()) as AlertsResponse;
    expect(api.alerts.map((a) => `${a.state} ${a.labels['hook_name']}`).sort()).toEqual(['firing PostToolUse:Bash', 'firing SessionStart:startup']);
    const ss = api.alerts.find((a) => a.labels['hook_name'] === 'SessionStart:startup');
    expect(ss?.annotations['outputs_persisted']).toBe('3');
  });
});

describe('a client that does not report num_outputs_persisted', () => {
  it('an output measured over the cap fires persisted, saying the size is measured; headroom stays quiet', async () => {
    const r = await start();
    expect(await post(r, otlpHookBody([{ hookName: 'Stop:old-client', timeMs: Date.now(), outputsPersisted: null, additionalContextChars: 11_000 }]))).toBe(200);
    await settle(r);
    const api = (await (await fetch(`${r.service.httpUrl}/api/v1/alerts`)).json()) as AlertsResponse;
    expect(api.alerts.map((a) => `${a.state} ${a.labels['alertname']} ${a.labels['hook_name']}`)).toEqual(['firing persisted Stop:old-client']);
    expect(api.alerts[0]?.annotations['summary']).toMatch(/1 execution .* over the 10,000-character cap.*does not report num_outputs_persisted/);
  });
});

describe('webhook delivery through the service', () => {
  it('receiver fails with 503 for a while, then recovers: the alert arrives once, same webhook-id on every attempt', async () => {
    const r = await start();
    r.sink.reply = ({ index }) => ({ status: index < 4 ? 503 : 200 });
    const t = Date.now();
    expect(await post(r, otlpHookBody([{ hookName: 'PostToolUse:Bash', timeMs: t, outputsPersisted: 1, additionalContextChars: 10_500 }, { hookName: 'Stop', timeMs: t, outputsPersisted: 0, additionalContextChars: 10 }]))).toBe(200);
    await r.sink.waitFor(5, 10_000);
    await settle(r);
    expect(r.sink.requests).toHaveLength(5);
    expect(r.sink.delivered()).toHaveLength(1);
    const ids = new Set(r.sink.requests.map((q) => q.headers['webhook-id']));
    expect(ids.size).toBe(1);
    for (const q of r.sink.requests) {
      expect(verify(q.headers, q.body)).toBe(true);
      expect(q.path).toBe(`/hooks/${TOKEN}`);
      expect(q.headers['authorization']).toBe('Bearer header-secret-value');
    }
    const body = JSON.parse(r.sink.delivered()[0]?.body ?? '{}') as AlertmanagerWebhookBody;
    expect(body).toMatchObject({ version: '4', status: 'firing', receiver: 'ops', commonLabels: { alertname: 'persisted', hook_name: 'PostToolUse:Bash' } });
    const [alert] = ((await (await fetch(`${r.service.httpUrl}/api/v1/alerts`)).json()) as AlertsResponse).alerts;
    const detail = (await (await fetch(`${r.service.httpUrl}/api/v1/alerts/${alert?.id}`)).json()) as AlertDetailResponse;
    expect(detail.attempts.map((a) => `${a.attempt}:${a.outcome}:${a.httpStatus}`)).toEqual(['1:retrying:503', '2:retrying:503', '3:retrying:503', '4:retrying:503', '5:delivered:200']);
    expect(new Set(detail.attempts.map((a) => a.webhookId))).toEqual(ids);
    expect(detail.alert.lastNotifiedAt).not.toBeNull();
  });

  it('a receiver that hangs does not delay ingest', async () => {
    const r = await start();
    r.sink.reply = () => ({ status: 200, delayMs: 6000 });
    const t = Date.now();
    expect(await post(r, otlpHookBody([{ hookName: 'SessionStart:startup', timeMs: t, outputsPersisted: 1, additionalContextChars: 12_000 }]))).toBe(200);
    await r.sink.waitFor(1);
    // The receiver now holds its request for 6 s; ingest (and a new alert for another hook) must not wait for it.
    const started = performance.now();
    expect(await post(r, otlpHookBody([{ hookName: 'PostToolUse:Bash', timeMs: t + 1, outputsPersisted: 1, additionalContextChars: 10_500 }]))).toBe(200);
    expect(performance.now() - started).toBeLessThan(3000);
    await r.sink.waitFor(2);
    expect(performance.now() - started).toBeLessThan(3000);
  });
});

describe('without alerting.externalUrl', () => {
  it('links go to the HTTP port, as Alertmanager links to its listen address: externalURL, generatorURL and Slack, and they open the dashboard', async () => {
    const r = await start({
      yaml: (url) => `
alerting:
  receivers:
    - { name: ops, url: "${url}/hooks/${TOKEN}" }
    - { name: chat, type: slack, url: "${url}/services/T0/B0/${TOKEN}" }
`,
    });
    // http.addr is 127.0.0.1:0: the bound port, on the address it listens on.
    const expected = `http://127.0.0.1:${r.service.httpAddress.port}`;
    expect(await post(r, otlpHookBody([{ hookName: 'PostToolUse:Bash', timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 10_500 }]))).toBe(200);
    await r.sink.waitFor(2, 10_000);
    const webhook = JSON.parse(r.sink.requests.find((q) => q.path.startsWith('/hooks/'))?.body ?? '{}') as AlertmanagerWebhookBody;
    expect(webhook.externalURL).toBe(expected);
    const link = webhook.alerts[0]?.generatorURL ?? '';
    expect(link).toMatch(new RegExp(`^${expected.replaceAll('.', '\\.')}/hooks/[0-9a-f]{16}\\?range=custom&from=[^&]+&to=[^&]+$`));
    const text = (JSON.parse(r.sink.requests.find((q) => q.path.startsWith('/services/'))?.body ?? '{}') as { text: string }).text;
    expect(text).toContain(`<${link}|Open in hookwatch>`);
    const page = await fetch(link);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    await page.arrayBuffer();
    // The same URL as the start-up line's "dashboard at".
    expect(r.service.externalUrl).toBe(expected);
  });
});

describe('alerting.externalUrl with credentials in it', () => {
  it('links every notification without them: webhook, Slack, Alertmanager and OTLP alert events never carry the password', async () => {
    const r = await start({
      yaml: (url) => `
alerting:
  externalUrl: https://hw-user:Hw-link-pass-5150@hookwatch.example.com/hw/
  otlp: { endpoint: "${url}/otlp" }
  receivers:
    - { name: ops, url: "${url}/hooks/${TOKEN}" }
    - { name: chat, type: slack, url: "${url}/services/T0/B0/${TOKEN}" }
    - { name: am, type: alertmanager, url: "${url}/am" }
`,
    });
    r.sink.reply = (req) => (req.path.startsWith('/otlp/') ? otlpAccepted(req) : { status: 200 });
    expect(await post(r, otlpHookBody([{ hookName: 'PostToolUse:Bash', timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 10_500 }]))).toBe(200);
    await r.sink.waitFor(4, 10_000);
    const body = (prefix: string): string => r.sink.requests.find((q) => q.path.startsWith(prefix))?.body ?? '';
    const paths = ['/hooks/', '/services/', '/am/api/v2/alerts', '/otlp/v1/logs'];
    for (const path of paths) {
      expect(body(path), path).toContain('https://hookwatch.example.com/hw/');
      expect(body(path), path).not.toMatch(/Hw-link-pass|hw-user|%40|@hookwatch/);
    }
    const webhook = JSON.parse(body('/hooks/')) as AlertmanagerWebhookBody;
    expect(webhook.externalURL).toBe('https://hookwatch.example.com/hw/');
    expect(webhook.alerts[0]?.generatorURL).toMatch(/^https:\/\/hookwatch\.example\.com\/hw\/hooks\/[0-9a-f]{16}\?range=custom&/);
    expect(webhook.alerts[0]?.annotations['silence_url']).toMatch(/^https:\/\/hookwatch\.example\.com\/hw\/alerts\?/);
    // Nothing else any receiver got holds it either.
    expect(r.sink.requests.map((q) => q.body).join('\n')).not.toContain('Hw-link-pass');
  });
});

describe('alerting.externalUrl with a query', () => {
  // `hookwatch config` redacts a ?token= there as a secret; under it a link was `...?token=...#top/hooks/<id>?...`.
  it('links under its path, without the query or fragment: no token in the notification, and links that read', async () => {
    const r = await start({
      yaml: (url) => `
alerting:
  externalUrl: "https://hookwatch.example.com/hw?token=Tk9-query-secret-77#top"
  receivers:
    - { name: ops, url: "${url}/hooks/${TOKEN}" }
`,
    });
    expect(await post(r, otlpHookBody([{ hookName: 'PostToolUse:Bash', timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 10_500 }]))).toBe(200);
    await r.sink.waitFor(1, 10_000);
    const raw = r.sink.requests[0]?.body ?? '';
    expect(raw).not.toMatch(/Tk9-query|token=|#top/);
    const webhook = JSON.parse(raw) as AlertmanagerWebhookBody;
    expect(webhook.externalURL).toBe('https://hookwatch.example.com/hw');
    expect(webhook.alerts[0]?.generatorURL).toMatch(/^https:\/\/hookwatch\.example\.com\/hw\/hooks\/[0-9a-f]{16}\?range=custom&from=[^&]+&to=[^&]+$/);
    expect(webhook.alerts[0]?.annotations['silence_url']).toMatch(/^https:\/\/hookwatch\.example\.com\/hw\/alerts\?silence\.alertname=persisted&/);
  });
});

describe('Slack and OTLP out', () => {
  it('sends readable Slack text and exports the transition as an OTLP log record', async () => {
    const r = await start({
      yaml: (url) => `
alerting:
  externalUrl: https://hookwatch.example.com
  otlp: { endpoint: "${url}/otlp", headers: { authorization: "Bearer otlp-secret-value" } }
  receivers:
    - { name: chat, type: slack, url: "${url}/services/T0/B0/${TOKEN}" }
`,
    });
    r.sink.reply = (req) => (req.path.startsWith('/otlp/') ? otlpAccepted(req) : { status: 200 });
    await post(r, otlpHookBody([{ hookName: 'PostToolUse:Bash', timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 10_500 }]));
    await r.sink.waitFor(2, 10_000);
    const slack = r.sink.requests.find((q) => q.path.startsWith('/services/'));
    const text = (JSON.parse(slack?.body ?? '{}') as { text: string }).text;
    expect(text).toContain('[FIRING] persisted');
    expect(text).toContain('PostToolUse:Bash');
    expect(text).toContain('saved to a file');
    expect(text).toMatch(/<https:\/\/hookwatch\.example\.com\/hooks\/[0-9a-f]{16}\?range=custom&from=[^&|]+&to=[^&|]+\|Open in hookwatch>/);
    const otlp = r.sink.requests.find((q) => q.path === '/otlp/v1/logs');
    expect(otlp?.headers['authorization']).toBe('Bearer otlp-secret-value');
    expect(otlp?.body).toContain('hookwatch.alert.state');
    expect(otlp?.body).toContain('firing');
    expect(otlp?.body).toContain('PostToolUse:Bash');
    expect(r.logs.join('\n')).not.toContain('otlp-secret-value');
    // Stopped, the export has logged all it will: the endpoint's OTLP answer gave it nothing to report.
    await r.service.stop();
    expect(r.service.alerting.events.stats).toMatchObject({ exported: 1, failed: 0 });
    expect(r.logs.filter((l) => l.includes('alert event export'))).toEqual([]);
  });
});

const HOUR = 3_600_000;

/** The range of an alert's link (generatorURL), and the hook's figures the page opened from it reads. */
async function linkedPage(r: Running, link: string): Promise<{ from: number; to: number; hook: HookSummary }> {
  const url = new URL(link);
  const from = url.searchParams.get('from') ?? '';
  const to = url.searchParams.get('to') ?? '';
  const res = await fetch(`${r.service.httpUrl}/api/v1${url.pathname}?${new URLSearchParams({ from, to }).toString()}`);
  expect(res.status).toBe(200);
  return { from: Date.parse(from), to: Date.parse(to), hook: ((await res.json()) as { hook: HookSummary }).hook };
}

describe('links of alerts whose evidence began long before they became active', () => {
  const rulesYaml = (rules: string) => (url: string): string => `
alerting:
  externalUrl: http://hookwatch.test
  delivery: { initialBackoff: 10ms, maxBackoff: 50ms }
  rules: ${rules}
  receivers:
    - { name: ops, url: "${url}/hook" }
store: { maxHooks: 2 }
`;

  it('silence: from an hour before the hook\'s last execution, so the page shows it and the quiet stretch after it', async () => {
    const t0 = Date.parse('2026-11-30T06:00:00Z');
    const r = await start({ now: t0, yaml: rulesYaml('[{ kind: silence, after: 3h, window: 7d }]') });
    const exported = await emitExecutions(r.service.otlpHttpUrl, [{ hookEvent: 'UserPromptSubmit', hookName: 'UserPromptSubmit', additionalContextChars: 300 }, { hookEvent: 'UserPromptSubmit', hookName: 'UserPromptSubmit', additionalContextChars: 300 }], {}, { atMs: t0 });
    expect(exported.codes).toEqual([0]);
    const lastSeen = t0 - 1000 + 1;
    // The timer's evaluations, every ten minutes, until the hook has been quiet for three hours and more.
    for (let i = 0; i < 20; i++) {
      r.clock?.advance(10 * 60_000);
      await r.service.alerting.engine.evaluate('all');
    }
    await settle(r);
    const [firing] = r.sink.bodies<AlertmanagerWebhookBody>();
    expect(firing?.alerts[0]?.labels).toMatchObject({ alertname: 'silence', hook_name: 'UserPromptSubmit' });
    expect(firing?.alerts[0]?.annotations['last_seen']).toBe(new Date(lastSeen).toISOString());
    const page = await linkedPage(r, firing?.alerts[0]?.generatorURL ?? '');
    expect(page.from).toBeLessThanOrEqual(lastSeen - HOUR);
    expect(page.to).toBeGreaterThanOrEqual(Date.parse(firing?.alerts[0]?.startsAt ?? ''));
    expect(page.hook.executions).toBe(2);
    const api = (await (await fetch(`${r.service.httpUrl}/api/v1/alerts`)).json()) as AlertsResponse;
    expect(api.alerts[0]?.firstEventAt).toBe(new Date(lastSeen).toISOString());
  });

  it('hook_limit added by a reload: from an hour before the events it counted under the overflow hook, hours into its window', async () => {
    const t0 = Date.parse('2026-11-30T06:00:00Z');
    const r = await start({ now: t0, yaml: rulesYaml('[]') });
    // A third hook name at store.maxHooks 2: its executions are counted under PreToolUse:(overflow).
    const exported = await emitExecutions(r.service.otlpHttpUrl, ['Bash', 'Edit', 'Write'].map((m) => ({ hookEvent: 'PreToolUse', hookName: `PreToolUse:${m}`, additionalContextChars: 200 })), {}, { atMs: t0 });
    expect(exported.codes).toEqual([0]);
    r.clock?.advance(20 * HOUR);
    const config = configFromYaml(r.dir, rulesYaml('[{ kind: hook_limit, window: 24h }]')(r.sink.url));
    await r.service.alerting.reconfigure(config.alerting);
    await settle(r);
    const [firing] = r.sink.bodies<AlertmanagerWebhookBody>();
    expect(firing?.alerts[0]?.labels).toMatchObject({ alertname: 'hook_limit', hook_name: 'PreToolUse:(overflow)' });
    expect(firing?.alerts[0]?.annotations['folded_events']).toBe('1');
    const page = await linkedPage(r, firing?.alerts[0]?.generatorURL ?? '');
    expect(page.from).toBeLessThanOrEqual(t0 - HOUR);
    expect(page.hook.executions).toBe(1);
  });
});

describe('alerts API', () => {
  it('lists alerts, shows one with its attempts, and answers 400/404 that name the problem', async () => {
    const r = await start();
    await post(r, otlpHookBody([{ hookName: 'SessionStart:startup', timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000 }]));
    await settle(r);
    const list = await fetch(`${r.service.httpUrl}/api/v1/alerts?state=firing`);
    expect(list.status).toBe(200);
    const { alerts } = (await list.json()) as AlertsResponse;
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({ rule: 'persisted', state: 'firing', silencedBy: [], hookId: expect.stringMatching(/^[0-9a-f]{16}$/) });
    expect(alerts[0]?.id).toMatch(/^[0-9a-f]{16}-[0-9a-z]+$/);
    // The fingerprint is the one the webhook carries (Alertmanager's), so the two can be matched.
    const sent = JSON.parse(r.sink.delivered()[0]?.body ?? '{}') as { alerts: { fingerprint: string }[] };
    expect(alerts[0]?.fingerprint).toBe(sent.alerts[0]?.fingerprint);
    expect(alerts[0]?.fingerprint).toMatch(/^[0-9a-f]{16}$/);
    const one = await fetch(`${r.service.httpUrl}/api/v1/alerts/${alerts[0]?.id}`);
    expect(((await one.json()) as AlertDetailResponse).attempts).toEqual([expect.objectContaining({ receiver: 'ops', outcome: 'delivered', status: 'firing', attempt: 1 })]);
    // Hex and base 36 read the same in either case: an upper-cased id names the same alert.
    const upper = await fetch(`${r.service.httpUrl}/api/v1/alerts/${alerts[0]?.id.toUpperCase()}`);
    expect([upper.status, ((await upper.json()) as AlertDetailResponse).alert.id]).toEqual([200, alerts[0]?.id]);
    expect((await fetch(`${r.service.httpUrl}/api/v1/alerts?state=nope`)).status).toBe(400);
    const bad = await fetch(`${r.service.httpUrl}/api/v1/alerts/not-an-id`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { parameter: string } }).error.parameter).toBe('id');
    expect((await fetch(`${r.service.httpUrl}/api/v1/alerts/0123456789abcdef-zz`)).status).toBe(404);
    const metrics = await (await fetch(`${r.service.httpUrl}/metrics`)).text();
    expect(metrics).toMatch(/^hookwatch_alerts\{rule="persisted",state="firing"\} 1$/m);
    expect(metrics).toMatch(/^hookwatch_alert_evaluations_total [1-9]\d*$/m);
  });

  it('lists the outcome of each alert\'s latest delivery: a receiver that answers 404 is never "notified"', async () => {
    const r = await start();
    r.sink.reply = () => ({ status: 404 });
    await post(r, otlpHookBody([{ hookName: 'SessionStart:startup', timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000 }]));
    await settle(r);
    const { alerts } = (await (await fetch(`${r.service.httpUrl}/api/v1/alerts?state=firing`)).json()) as AlertsResponse;
    expect(alerts[0]?.lastNotifiedAt).not.toBeNull();
    expect(alerts[0]?.deliveries).toEqual([{ receiver: 'ops', status: 'firing', outcome: 'failed', at: expect.any(String), httpStatus: 404 }]);
  });

  it('creates, lists and expires silences; a silenced alert shows silencedBy and is not notified', async () => {
    const r = await start();
    const api = (path: string, init?: RequestInit): Promise<Response> => fetch(`${r.service.httpUrl}${path}`, init);
    const create = (body: unknown): Promise<Response> => api('/api/v1/silences', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const endsAt = new Date(Date.now() + 3_600_000).toISOString();
    const bad = await create({ matchers: [{ name: 'hook_name', value: '(' , isRegex: true }], endsAt, createdBy: 'me', comment: 'x' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { parameter: string } }).error.parameter).toBe('matchers[0].value');
    const all = await create({ matchers: [{ name: 'hook_name', value: '.*', isRegex: true }], endsAt, createdBy: 'me', comment: 'x' });
    expect(all.status).toBe(400);
    const past = await create({ matchers: [{ name: 'hook_name', value: 'Stop' }], endsAt: '2020-01-01T00:00:00Z', createdBy: 'me', comment: 'x' });
    // No startsAt: the silence starts now, so an endsAt already passed is named as such.
    expect([past.status, await past.json()]).toEqual([400, { error: { code: 'bad_parameter', parameter: 'endsAt', message: 'endsAt 2020-01-01T00:00:00Z has passed: a silence without startsAt starts now' } }]);
    const before = await create({ matchers: [{ name: 'hook_name', value: 'Stop' }], startsAt: endsAt, endsAt: '2020-01-01T00:00:00Z', createdBy: 'me', comment: 'x' });
    expect(((await before.json()) as { error: { message: string } }).error.message).toBe('endsAt must be later than startsAt');
    const notJson = await api('/api/v1/silences', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{nope' });
    expect([notJson.status, await notJson.json()]).toEqual([400, { error: { code: 'bad_body', message: 'body is not valid JSON' } }]);
    const large = await create({ matchers: [{ name: 'hook_name', value: 'Stop' }], endsAt, createdBy: 'me', comment: 'x'.repeat(70_000) });
    expect([large.status, await large.json()]).toEqual([413, { error: { code: 'bad_body', message: 'body larger than 64 KiB' } }]);
    expect((await api('/api/v1/silences', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ matchers: [{ name: 'hook_name', value: 'Stop' }], endsAt, createdBy: 'me', comment: 'x' }) })).status).toBe(415);
    // A body that does not decompress as its Content-Encoding says is the client's mistake (400), never a 500;
    // every 415 has the one code.
    for (const encoding of ['gzip', 'deflate', 'br']) {
      const corrupt = await api('/api/v1/silences', { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': encoding }, body: '{"matchers":[]}' });
      expect([corrupt.status, await corrupt.json()], encoding).toEqual([400, { error: { code: 'bad_body', message: `body does not decode as Content-Encoding "${encoding}"` } }]);
    }
    const latin1 = await api('/api/v1/silences', { method: 'POST', headers: { 'content-type': 'application/json; charset=latin1' }, body: '{}' });
    expect([latin1.status, await latin1.json()]).toEqual([415, { error: { code: 'unsupported_media_type', message: 'unsupported charset "LATIN1"' } }]);

    const ok = await create({ matchers: [{ name: 'hook_name', value: 'SessionStart:startup' }], endsAt, createdBy: 'me', comment: 'fix in flight' });
    expect(ok.status).toBe(201);
    const { silence } = (await ok.json()) as { silence: Silence };
    expect(silence.state).toBe('active');
    await post(r, otlpHookBody([{ hookName: 'SessionStart:startup', timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000 }]));
    await settle(r);
    expect(r.sink.requests).toHaveLength(0);
    const { alerts } = (await (await api('/api/v1/alerts')).json()) as AlertsResponse;
    expect(alerts[0]?.silencedBy).toEqual([silence.id]);
    expect(((await (await api('/api/v1/silences')).json()) as { silences: Silence[] }).silences.map((s) => s.id)).toEqual([silence.id]);

    // Something 36 characters long that is not a UUID is refused naming the form; a UUID in upper case (RFC 9562:
    // the same UUID) expires the silence, answered with the id as hookwatch writes it.
    const notUuid = await api(`/api/v1/silences/${'-'.repeat(36)}`, { method: 'DELETE' });
    expect([notUuid.status, await notUuid.json()]).toEqual([400, { error: { code: 'bad_parameter', parameter: 'id', message: 'silence id must be a UUID (8-4-4-4-12 hex digits), as returned by POST /api/v1/silences' } }]);
    const del = await api(`/api/v1/silences/${silence.id.toUpperCase()}`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    expect(((await del.json()) as { silence: Silence }).silence).toMatchObject({ id: silence.id, state: 'expired' });
    await settle(r);
    expect(r.sink.delivered()).toHaveLength(1);
    expect((await api('/api/v1/silences/00000000-0000-0000-0000-000000000000', { method: 'DELETE' })).status).toBe(404);
  });

  it('starts a new silence whose startsAt has passed when it is made, as Alertmanager does', async () => {
    const r = await start();
    const made = Date.now();
    const body = { matchers: [{ name: 'hook_name', value: 'Stop' }], startsAt: new Date(made - 3_600_000).toISOString(), endsAt: new Date(made + 3_600_000).toISOString(), createdBy: 'me', comment: 'x' };
    const res = await fetch(`${r.service.httpUrl}/api/v1/silences`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const { silence } = (await res.json()) as { silence: Silence };
    expect([res.status, silence.state, silence.endsAt]).toEqual([201, 'active', body.endsAt]);
    expect(Date.parse(silence.startsAt)).toBeGreaterThanOrEqual(made);
    expect(Date.parse(silence.startsAt)).toBeLessThanOrEqual(Date.now());
    // Listed so too.
    expect(((await (await fetch(`${r.service.httpUrl}/api/v1/silences`)).json()) as { silences: Silence[] }).silences.map((s) => s.startsAt)).toEqual([silence.startsAt]);
  });

  it('takes a silence on a label no alert can carry, as Alertmanager does, and warns naming it and the labels alerts carry', async () => {
    const r = await start({ yaml: (url) => [
      'dimensions: [workflow.name]',
      'alerting:',
      '  externalLabels: { env: prod }',
      '  rules:',
      '    - { kind: persisted, window: 1h, groupBy: workflow.name, labels: { team: platform } }',
      '    - { kind: headroom, window: 1d }',
      '  receivers:',
      `    - { name: ops, url: "${url}/hook" }`,
      '',
    ].join('\n') });
    const create = async (matchers: unknown[]): Promise<{ status: number; body: { silence: Silence; warnings?: string[] } }> => {
      const res = await fetch(`${r.service.httpUrl}/api/v1/silences`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ matchers, endsAt: new Date(Date.now() + 3_600_000).toISOString(), createdBy: 'me', comment: 'x' }) });
      return { status: res.status, body: (await res.json()) as { silence: Silence; warnings?: string[] } };
    };
    const carried = 'alerts carry: alertname, severity, hook_event, hook_name, service_name, service_version, scope, team, workflow_name';
    // Labels hookwatch sets, a rule's own and a groupBy dimension's: no warning.
    const known = await create([{ name: 'hook_name', value: 'Stop' }, { name: 'team', value: 'platform' }, { name: 'workflow_name', value: 'nightly' }, { name: 'scope', value: 'feed', isEqual: false }]);
    expect(known.status).toBe(201);
    expect(known.body).not.toHaveProperty('warnings');
    // A mistyped label: taken, and said to mute nothing.
    const typo = await create([{ name: 'hook_name', value: 'Stop' }, { name: 'teem', value: 'platform' }]);
    expect(typo.status).toBe(201);
    expect(typo.body.silence.matchers.map((m) => m.name)).toEqual(['hook_name', 'teem']);
    expect(typo.body.warnings).toEqual([`matchers[1]: no alert rule configured gives alerts the label teem (did you mean team?); until one does, this matcher reads it as empty and matches no alert: the silence mutes nothing (${carried})`]);
    // An external label: only what receivers are sent carries it. A != on it holds for every alert.
    const external = await create([{ name: 'hook_name', value: 'Stop' }, { name: 'env', value: 'staging', isEqual: false }, { name: 'cluster', value: 'eu.*', isRegex: true }]);
    expect(external.status).toBe(201);
    expect(external.body.warnings).toEqual([
      `matchers[1]: env is an external label (alerting.externalLabels), added only to what receivers are sent: the alerts a silence in hookwatch matches do not carry it, and this matcher reads it as empty and holds for every alert (${carried})`,
      `matchers[2]: no alert rule configured gives alerts the label cluster; until one does, this matcher reads it as empty and matches no alert: the silence mutes nothing (${carried})`,
    ]);
    // Listed as made, warnings or not.
    const listed = ((await (await fetch(`${r.service.httpUrl}/api/v1/silences`)).json()) as { silences: Silence[] }).silences;
    expect(listed.map((x) => x.id).sort()).toEqual([known.body.silence.id, typo.body.silence.id, external.body.silence.id].sort());
  });

  it('answers 503 with Retry-After, not 500, while the SQLite file holding the alert state is locked', { timeout: 30_000 }, async () => {
    const r = await start();
    const endsAt = new Date(Date.now() + 3_600_000).toISOString();
    const create = (): Promise<Response> => fetch(`${r.service.httpUrl}/api/v1/silences`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ matchers: [{ name: 'hook_name', value: 'Stop' }], endsAt, createdBy: 'me', comment: 'x' }) });
    // Another process holds the write lock for longer than SQLite waits for it.
    const holder = new DatabaseSync(join(r.dir, 'h.db'));
    holder.exec('BEGIN IMMEDIATE');
    let locked: Response;
    try {
      locked = await create();
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    const body = (await locked.json()) as { error: { code: string; message: string } };
    expect([locked.status, locked.headers.get('retry-after'), body.error.code]).toEqual([503, '5', 'unavailable']);
    expect(body.error.message).toMatch(/alert state.*locked/);
    // Once the lock is gone the same request passes.
    expect((await create()).status).toBe(201);
  });

  it('lists silences by state, as Alertmanager names them, a bounded page at a time', async () => {
    const r = await start();
    const api = async <T>(path: string, init?: RequestInit): Promise<{ status: number; body: T }> => {
      const res = await fetch(`${r.service.httpUrl}${path}`, init);
      return { status: res.status, body: (await res.json()) as T };
    };
    const create = async (value: string, startsInMs: number): Promise<Silence> => {
      const body = { matchers: [{ name: 'hook_name', value }], startsAt: new Date(Date.now() + startsInMs).toISOString(), endsAt: new Date(Date.now() + 3_600_000).toISOString(), createdBy: 'me', comment: value };
      const res = await api<{ silence: Silence }>('/api/v1/silences', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.status).toBe(201);
      return res.body.silence;
    };
    const expired = await create('Stop', 0);
    expect((await api(`/api/v1/silences/${expired.id}`, { method: 'DELETE' })).status).toBe(200);
    const active = await create('SessionStart:startup', 0);
    const pending = await create('PreCompact', 1_800_000);
    type Listed = { silences: Silence[]; total: number; nextCursor: string | null };
    const ids = async (query: string): Promise<string[]> => (await api<Listed>(`/api/v1/silences${query}`)).body.silences.map((s) => s.id);

    expect(new Set(await ids(''))).toEqual(new Set([expired.id, active.id, pending.id]));
    expect(await ids('?state=active')).toEqual([active.id]);
    expect(await ids('?state=pending')).toEqual([pending.id]);
    expect(await ids('?state=expired')).toEqual([expired.id]);
    expect(new Set(await ids('?state=active,pending'))).toEqual(new Set([active.id, pending.id]));

    // Pages: `total` counts the silences in the states asked for; nextCursor leads to the rest, each once.
    const first = await api<Listed>('/api/v1/silences?limit=2');
    expect([first.body.silences.length, first.body.total, typeof first.body.nextCursor]).toEqual([2, 3, 'string']);
    const second = await api<Listed>(`/api/v1/silences?limit=2&cursor=${first.body.nextCursor}`);
    expect([second.body.silences.length, second.body.total, second.body.nextCursor]).toEqual([1, 3, null]);
    expect(new Set([...first.body.silences, ...second.body.silences].map((s) => s.id)).size).toBe(3);

    for (const [query, parameter, message] of [
      ['?state=silenced', 'state', /"silenced" is not a silence state; state lists one or more of active, pending, expired/],
      ['?state=', 'state', /"" is not a silence state/],
      ['?state=active&state=expired', 'state', /^state must be given once$/],
      ['?limit=1001', 'limit', /^limit must be a whole number from 1 to 1000$/],
      ['?cursor=2', 'cursor', /^cursor must be the nextCursor of a previous page$/],
      [`?cursor=${Buffer.from('12:not-a-silence-id').toString('base64url')}`, 'cursor', /^cursor must be the nextCursor of a previous page$/],
      ['?filter=alertname%3Dx', 'filter', /^unknown parameter "filter"; this route takes: state, limit, cursor$/],
    ] as const) {
      const res = await api<{ error: { code: string; parameter: string; message: string } }>(`/api/v1/silences${query}`);
      expect([query, res.status, res.body.error.code, res.body.error.parameter]).toEqual([query, 400, 'bad_parameter', parameter]);
      expect(res.body.error.message).toMatch(message);
    }
  });

  it('walks the silences a page at a time while others are created and expired, each listed once', async () => {
    const r = await start({ now: Date.parse('2026-03-02T10:00:00Z') });
    const clock = r.clock!;
    type Listed = { silences: Silence[]; total: number; nextCursor: string | null };
    const list = async (query: string): Promise<Listed> => {
      const res = await fetch(`${r.service.httpUrl}/api/v1/silences${query}`);
      expect(res.status).toBe(200);
      return (await res.json()) as Listed;
    };
    const create = async (value: string): Promise<string> => {
      clock.advance(1000);
      const body = { matchers: [{ name: 'hook_name', value }], endsAt: new Date(clock.now() + 3_600_000).toISOString(), createdBy: 'me', comment: value };
      const res = await fetch(`${r.service.httpUrl}/api/v1/silences`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.status).toBe(201);
      return ((await res.json()) as { silence: Silence }).silence.id;
    };
    const walk = async (query: string, between: (listed: string[]) => Promise<void>): Promise<string[]> => {
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < 10; page++) {
        const body = await list(`${query}&limit=2${cursor === null ? '' : `&cursor=${cursor}`}`);
        const listed = body.silences.map((s) => s.id);
        seen.push(...listed);
        cursor = body.nextCursor;
        if (cursor === null) return seen;
        await between(listed);
      }
      throw new Error('the pages did not end');
    };
    const before: string[] = [];
    for (const v of ['Stop', 'PreCompact', 'SessionStart:startup', 'Notification', 'SubagentStop']) before.unshift(await create(v));

    // A silence created between two pages sorts before them all: the pages after it go on where they were.
    const created: string[] = [];
    const walked = await walk('?state=active', async () => void created.push(await create(`UserPromptSubmit-${created.length}`)));
    expect(walked).toEqual(before);

    // One expired between two pages (the first of the page just listed) leaves the state asked for: the next page
    // still starts after the last one listed, so none of those still active is passed over.
    const active = (await list('?state=active')).silences.map((s) => s.id);
    expect(active).toEqual([...created.reverse(), ...before]);
    const walkedActive = await walk('?state=active', async (listed) => {
      expect((await fetch(`${r.service.httpUrl}/api/v1/silences/${listed[0]}`, { method: 'DELETE' })).status).toBe(200);
    });
    expect(walkedActive).toEqual(active);
  });

  it('delivers to a receiver URL with user:password@ as Basic authorization, the URL sent without them', async () => {
    const r = await start({ yaml: (url) => `
alerting:
  receivers:
    - name: ops
      url: ${url.replace('http://', 'http://alerts:pa%3Ass-7c1d@')}/hooks/${TOKEN}
` });
    const res = await fetch(`${r.service.httpUrl}/api/v1/receivers/ops/test`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(r.sink.requests[0]?.path).toBe(`/hooks/${TOKEN}`);
    expect(r.sink.requests[0]?.headers['authorization']).toBe(`Basic ${Buffer.from('alerts:pa:ss-7c1d').toString('base64')}`);
    expect(JSON.stringify(await (await fetch(`${r.service.httpUrl}/api/v1/alerts`)).json()) + r.logs.join('\n')).not.toContain('pa%3Ass-7c1d');
    expect(() => configFromYaml(tmpdir(), `
alerting:
  receivers:
    - { name: ops, url: "http://u:pw-secret@127.0.0.1:1/x", basicAuth: { username: a, password: b-secret } }
`)).toThrow(/receivers\[0\]\.url: holds user:password@ and .*basicAuth is set too/);
  });

  it('tests a receiver on demand; unknown receivers are 404', async () => {
    const r = await start();
    const res = await fetch(`${r.service.httpUrl}/api/v1/receivers/ops/test`, { method: 'POST' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { delivered: boolean; httpStatus: number; webhookId: string };
    expect(body).toMatchObject({ delivered: true, httpStatus: 200 });
    expect(r.sink.requests[0]?.headers['webhook-id']).toBe(body.webhookId);
    expect(verify(r.sink.requests[0]?.headers ?? {}, r.sink.requests[0]?.body ?? '')).toBe(true);
    r.sink.reply = () => ({ status: 500 });
    expect((await fetch(`${r.service.httpUrl}/api/v1/receivers/ops/test`, { method: 'POST' })).status).toBe(502);
    // A test is one attempt, not a retry loop the caller waits on.
    expect(r.sink.requests).toHaveLength(2);
    expect((await fetch(`${r.service.httpUrl}/api/v1/receivers/nope/test`, { method: 'POST' })).status).toBe(404);
  });

  it('runs one test per receiver at a time: a second while it runs gets 429 with Retry-After, nothing more sent', async () => {
    const r = await start({ yaml: (url) => `
alerting:
  receivers:
    - { name: ops, url: "${url}/ops", timeout: 20s }
    - { name: team, url: "${url}/team" }
` });
    // A receiver slow to answer: it holds each request until released.
    const { arrived, release } = holdRequests(r.sink);
    const test = (name: string): Promise<Response> => fetch(`${r.service.httpUrl}/api/v1/receivers/${name}/test`, { method: 'POST' });
    const first = test('ops');
    while (arrived.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    // An impatient user or a script: 30 more at once, while the first is held.
    const again = await Promise.all(Array.from({ length: 30 }, () => test('ops')));
    for (const res of again) {
      expect(res.status).toBe(429);
      const retryAfter = Number(res.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(20);
      expect(await res.json()).toEqual({ error: { code: 'test_running', message: expect.stringMatching(/^a test notification to receiver "ops" is already running; it ends within \d+ s/) as unknown, receiver: 'ops' } });
    }
    // Another receiver is tested meanwhile.
    const other = test('team');
    while (arrived.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(arrived).toEqual(['/ops', '/team']);
    release();
    expect(await (await first).json()).toMatchObject({ receiver: 'ops', delivered: true, httpStatus: 200 });
    expect((await other).status).toBe(200);
    // Once it ended, the receiver is tested again.
    expect((await test('ops')).status).toBe(200);
    expect(arrived).toEqual(['/ops', '/team', '/ops']);
  });

  it(`runs at most ${MAX_TEST_SENDS} tests at once across receivers; the others get 429 naming their receiver`, async () => {
    const names = Array.from({ length: MAX_TEST_SENDS + 3 }, (_, i) => `r${i}`);
    const r = await start({ yaml: (url) => `
alerting:
  receivers:
${names.map((n) => `    - { name: ${n}, url: "${url}/${n}", timeout: 30s }`).join('\n')}
` });
    const { arrived, release } = holdRequests(r.sink);
    const answers = new Map<string, Response>();
    const sends = names.map(async (n) => answers.set(n, await fetch(`${r.service.httpUrl}/api/v1/receivers/${n}/test`, { method: 'POST' })));
    const until = Date.now() + 10_000;
    while ((arrived.length < MAX_TEST_SENDS || answers.size < names.length - MAX_TEST_SENDS) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 5));
    const refused = [...answers];
    expect(refused).toHaveLength(names.length - MAX_TEST_SENDS);
    for (const [n, res] of refused) {
      expect(res.status).toBe(429);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(30);
      expect(await res.json()).toEqual({ error: { code: 'too_many_tests', message: expect.stringContaining(`${MAX_TEST_SENDS} test notifications are already running, the most at once; receiver "${n}" can be tested once one ends`) as unknown, receiver: n } });
      expect(arrived).not.toContain(`/${n}`);
    }
    expect(arrived).toHaveLength(MAX_TEST_SENDS);
    release();
    await Promise.all(sends);
    expect([...answers.values()].filter((res) => res.status === 200)).toHaveLength(MAX_TEST_SENDS);
    // Those refused are tested once the others ended.
    for (const [n] of refused) expect((await fetch(`${r.service.httpUrl}/api/v1/receivers/${n}/test`, { method: 'POST' })).status).toBe(200);
    expect(arrived).toHaveLength(names.length);
  });

  it('never shows a webhook URL token, header value or signing secret: API, logs, errors, config dump', async () => {
    const r = await start();
    r.sink.reply = ({ index }) => ({ status: index === 0 ? 503 : 200 });
    await post(r, otlpHookBody([{ hookName: 'SessionStart:startup', timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000 }]));
    await r.sink.waitFor(2);
    await settle(r);
    const responses: string[] = [];
    const { alerts } = (await (await fetch(`${r.service.httpUrl}/api/v1/alerts`)).json()) as AlertsResponse;
    responses.push(JSON.stringify(alerts), await (await fetch(`${r.service.httpUrl}/api/v1/alerts/${alerts[0]?.id}`)).text());
    r.sink.reply = () => ({ status: 500 });
    responses.push(await (await fetch(`${r.service.httpUrl}/api/v1/receivers/ops/test`, { method: 'POST' })).text());
    await r.sink.close();
    const unreachable = await fetch(`${r.service.httpUrl}/api/v1/receivers/ops/test`, { method: 'POST' });
    responses.push(await unreachable.clone().text());
    // Said in words, with the code, and where: the host and port, never the URL's path that holds the token.
    expect(await unreachable.json()).toMatchObject({ receiver: 'ops', delivered: false, error: 'connection refused (ECONNREFUSED): nothing listens at that address' });
    r.logger.warn('probe', { url: r.service.config.alerting.receivers[0]?.url, secret: r.service.config.alerting.receivers[0]?.signingSecret });
    const everything = [...responses, ...r.logs].join('\n');
    expect(responses.join('')).toContain('ECONNREFUSED');
    for (const secret of [TOKEN, SECRET, SECRET.slice(6), 'header-secret-value']) expect(everything).not.toContain(secret);

    const loaded = loadConfig({ env: { HOOKWATCH_CONFIG: 'x.yaml' }, readFile: () => `alerting:\n  receivers:\n    - { name: ops, url: "https://hooks.slack.com/services/T0/B0/${TOKEN}", type: slack, signingSecret: "${SECRET}", headers: { X-Key: header-secret-value } }\n  otlp: { headers: { authorization: "Bearer header-secret-value" } }\n` });
    const dump = JSON.stringify(effectiveDocument(loaded));
    expect(dump).toContain('https://hooks.slack.com/<redacted>');
    for (const secret of [TOKEN, SECRET, 'header-secret-value']) expect(dump).not.toContain(secret);
    expect(() => loadConfig({ env: { HOOKWATCH_CONFIG: 'x.yaml' }, readFile: () => `alerting:\n  receivers:\n    - { name: ops, url: "ftp://x/${TOKEN}" }\n` })).toThrow(/alerting\.receivers\[0\]\.url/);
    try {
      loadConfig({ env: { HOOKWATCH_CONFIG: 'x.yaml' }, readFile: () => `alerting:\n  receivers:\n    - { name: ops, url: "ftp://x/${TOKEN}", signingSecret: "${SECRET}" }\n` });
    } catch (err) {
      expect((err as Error).message).not.toContain(TOKEN);
      expect((err as Error).message).not.toContain(SECRET);
    }
  });

  it('rejects bad rules at load with a message naming the key', () => {
    const load = (yaml: string): unknown => toConfig(loadConfig({ env: { HOOKWATCH_CONFIG: 'x.yaml' }, readFile: () => yaml }));
    expect(() => load('alerting:\n  rules:\n    - { kind: headroom, threshold: 3 }\n')).toThrow(/alerting\.rules\[0\]\.threshold: must be between 0 and 1/);
    expect(() => load('alerting:\n  rules:\n    - { kind: nope }\n')).toThrow(/alerting\.rules\[0\]\.kind: expected one of persisted/);
    expect(() => load('alerting:\n  rules:\n    - { kind: persisted, windw: 1h }\n')).toThrow(/alerting\.rules\[0\]: unknown key "windw"/);
    expect(() => load('alerting:\n  rules:\n    - { kind: persisted }\n    - { kind: persisted }\n')).toThrow(/alerting\.rules\[1\]\.name/);
    expect(() => load('alerting:\n  rules:\n    - { kind: persisted, groupBy: dept }\n')).toThrow(/alerting\.rules\[0\]\.groupBy: unknown dimension "dept"/);
    expect(() => load('alerting:\n  rules:\n    - { kind: growth, groupBy: team }\n')).toThrow(/alerting\.rules\[0\]\.groupBy: not supported for kind growth/);
    expect(() => load('alerting:\n  rules:\n    - { kind: persisted, for: soon }\n')).toThrow(/alerting\.rules\[0\]\.for: expected a duration/);
    // A duration out of range is told in the units it is written in.
    expect(() => load('alerting:\n  rules:\n    - { kind: persisted, for: 31d }\n')).toThrow(/alerting\.rules\[0\]\.for: must be between 0ms and 30d$/);
    expect(() => load('alerting:\n  rules:\n    - { kind: silence, after: 50ms }\n')).toThrow(/alerting\.rules\[0\]\.after: must be between 100ms and 30d$/);
    expect(() => load('alerting:\n  receivers:\n    - { name: ops, url: "http://127.0.0.1:2/x", timeout: 10m }\n')).toThrow(/alerting\.receivers\[0\]\.timeout: must be between 100ms and 5m$/);
    // A key the kind does not read is refused, not left looking set while it changes nothing.
    expect(() => load('alerting:\n  rules:\n    - { kind: persisted, threshold: 0.5 }\n')).toThrow(/alerting\.rules\[0\]\.threshold: not used by kind persisted \(only by persisted_ratio, headroom\)/);
    expect(() => load('alerting:\n  rules:\n    - { kind: headroom, minExecutions: 5 }\n')).toThrow(/alerting\.rules\[0\]\.minExecutions: not used by kind headroom \(only by persisted_ratio\)/);
    expect(() => load('alerting:\n  rules:\n    - { kind: persisted, after: 5m }\n')).toThrow(/alerting\.rules\[0\]\.after: not used by kind persisted \(only by silence, never_completed\)/);
    expect(() => load('alerting:\n  rules:\n    - { kind: headroom, horizonDays: 7 }\n')).toThrow(/alerting\.rules\[0\]\.horizonDays: not used by kind headroom \(only by growth\)/);
    expect(() => load('alerting:\n  rules:\n    - { kind: blind, scope: feed }\n')).toThrow(/alerting\.rules\[0\]\.scope: not used by kind blind \(only by silence\)/);
    expect(() => load('alerting:\n  rules:\n    - { kind: silence, scope: feed, window: 1d }\n')).toThrow(/alerting\.rules\[0\]\.window: not used with scope feed/);
    // A hook counts as active when it sent within window: one quiet for after >= window never counts, never alerts.
    expect(() => load('alerting:\n  rules:\n    - { kind: silence, window: 1m, after: 3m }\n')).toThrow(/alerting\.rules\[0\] \(silence\): after 3m is not shorter than window 1m: /);
    expect(() => load('alerting:\n  rules:\n    - { kind: persisted }\n    - { kind: silence, name: quiet_hooks, after: 8d }\n')).toThrow(/alerting\.rules\[1\] \(quiet_hooks\): after 8d is not shorter than window 7d \(the default\): /);
    expect(() => load('alerting:\n  rules:\n    - { kind: silence, window: 1h, after: 60m }\n')).toThrow(/alerting\.rules\[0\] \(silence\): after 60m is not shorter than window 1h/);
    expect(() => load('alerting:\n  rules:\n    - { kind: silence, window: 61m, after: 1h }\n')).not.toThrow();
    // The timer's evaluations are evaluationInterval apart: one must come while the hook is quiet for after and still
    // in the window, or the hook leaves the window unseen.
    expect(() => load('alerting:\n  evaluationInterval: 5m\n  rules:\n    - { kind: silence, name: quiet_hooks, window: 61m, after: 60m }\n')).toThrow(/configuration: alerting\.rules\[0\] \(quiet_hooks\): after 1h plus alerting\.evaluationInterval 5m is more than window 61m: /);
    expect(() => load('alerting:\n  evaluationInterval: 5m\n  rules:\n    - { kind: persisted }\n    - { kind: silence, window: 61m, after: 56m }\n')).not.toThrow();
    expect(() => load('alerting:\n  evaluationInterval: 5m\n  rules:\n    - { kind: silence, window: 1h, after: 56m }\n')).toThrow(/alerting\.rules\[0\] \(silence\): after 56m plus alerting\.evaluationInterval 5m is more than window 1h: /);
    // Every key a kind reads is taken.
    expect(() => load([
      'alerting:', '  rules:',
      '    - { kind: persisted, window: 1h, groupBy: team, for: 1m, keepFiringFor: 5m, severity: page, name: lost, labels: { source: hookwatch } }',
      '    - { kind: persisted_ratio, window: 1d, groupBy: team, threshold: 0.1, minExecutions: 5 }',
      '    - { kind: headroom, window: 1d, groupBy: team, threshold: 0.9 }',
      '    - { kind: growth, window: 14d, horizonDays: 7 }',
      '    - { kind: blind, window: 1d }',
      '    - { kind: silence, window: 7d, after: 2h, scope: hook }',
      '    - { kind: silence, name: feed_quiet, after: 2h, scope: feed }',
      '    - { kind: never_completed, window: 1h, groupBy: team, after: 5m }',
      '    - { kind: hook_limit, window: 1h }', '',
    ].join('\n'))).not.toThrow();
    const defaults = toConfig(loadConfig({ env: {} })).alerting;
    expect(defaults.rules.map((x) => x.kind)).toEqual(['persisted', 'headroom', 'growth', 'blind', 'never_completed', 'hook_limit']);
    expect(defaults.receivers).toEqual([]);
  });
});
