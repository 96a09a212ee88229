/**
 * Notifications run off the ingest path: a webhook receiver that accepts the connection and never answers does
 * not delay OTLP answers, however many alerts queue behind it. And hostile hook names (CR/LF header injection,
 * Slack markup, quotes, line breaks and bidi overrides) reach a webhook and Slack only as escaped data: never as a
 * header, a mention, a link, a line of their own or text turned around.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookSink, otlpHookBody } from '../support/alerting.ts';
import { eventually, postOtlp, startTestService, tempDir, until, type TestService } from '../helpers.ts';

const JSON_CT = { 'content-type': 'application/json' };
const tmp = tempDir('hookwatch-hang-');
const hung = new WebhookSink();
const sink = new WebhookSink();
let service: TestService;

beforeAll(async () => {
  // Answers after 10 minutes: to hookwatch it is a receiver that hangs (the attempt timeout ends it, not us).
  hung.reply = () => ({ status: 200, delayMs: 600_000 });
  await Promise.all([hung.start(), sink.start()]);
  const config = join(tmp.dir, 'hookwatch.yaml');
  writeFileSync(config, JSON.stringify({
    alerting: {
      rules: [{ kind: 'persisted', window: '1h' }],
      receivers: [
        { name: 'hung', type: 'webhook', url: `${hung.url}/hook`, timeout: '30s' },
        { name: 'team-webhook', type: 'webhook', url: `${sink.url}/hook` },
        { name: 'team-chat', type: 'slack', url: `${sink.url}/slack` },
      ],
    },
  }));
  service = await startTestService({ HOOKWATCH_CONFIG: config }, { dir: tmp.dir });
});

afterAll(async () => {
  await service?.close();
  await Promise.all([hung.close(), sink.close()]);
});

describe('a webhook receiver that hangs', () => {
  it('does not delay ingest: 40 batches, each raising a new alert, are answered promptly', async () => {
    const latencies: number[] = [];
    for (let i = 0; i < 40; i++) {
      const body = otlpHookBody([{ hookName: `PostToolUse:Hang${i}`, timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000, sessionId: `hang-${i}` }]);
      const t0 = performance.now();
      const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', body, JSON_CT);
      latencies.push(performance.now() - t0);
      expect(res.status).toBe(200);
    }
    // The hung receiver really was called and is holding connections open.
    await hung.waitFor(1, 10_000);
    expect(hung.requests.length).toBeGreaterThanOrEqual(1);
    // The healthy receiver beside it still gets its notifications.
    await sink.waitFor(2, 10_000);
    latencies.sort((a, b) => a - b);
    // The slowest answer is far below the 30 s attempt timeout the hung receiver holds delivery for.
    expect(latencies.at(-1) as number).toBeLessThan(2000);
  });
});

describe('hostile hook names in notifications', () => {
  it('CR/LF, Slack markup and quotes arrive as escaped data, never as headers, mentions or links', async () => {
    const name = 'PreToolUse:x\r\nX-Injected: yes\r\n\r\n<!channel> <https://evil.example|click> "q" & \\ end';
    const before = sink.requests.length;
    const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', otlpHookBody([{ hookName: name, timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000, sessionId: 'inject' }]), JSON_CT);
    expect(res.status).toBe(200);
    const mine = (): typeof sink.requests => sink.requests.slice(before).filter((r) => r.body.includes('X-Injected'));
    await until('the webhook and Slack notifications of the hostile hook', () => mine().length >= 2, 10_000);
    const got = mine();
    const webhook = got.find((r) => r.path === '/hook');
    const slack = got.find((r) => r.path === '/slack');
    expect(webhook, 'webhook notification for the hostile hook').toBeDefined();
    expect(slack, 'Slack notification for the hostile hook').toBeDefined();
    for (const r of got) {
      expect(r.headers['x-injected']).toBeUndefined();
      for (const [k, v] of Object.entries(r.headers)) expect(`${k}: ${String(v)}`).not.toMatch(/[\r\n]/);
    }
    // Webhook: valid JSON carrying the name exactly as the client sent it (it is data, escaped by JSON).
    const labels = (JSON.parse((webhook as { body: string }).body) as { alerts: { labels: Record<string, string> }[] }).alerts[0]?.labels;
    expect(labels?.['hook_name']).toBe(name.trim());
    // Slack: mrkdwn control characters escaped, so no @channel mention and no disguised link.
    const text = JSON.stringify(JSON.parse((slack as { body: string }).body));
    expect(text).not.toContain('<!channel>');
    expect(text).not.toContain('<https://evil.example|click>');
    expect(text).toContain('&lt;!channel&gt;');
  });

  it('a line break or a bidi control in a name stays visible inside its line on Slack: no forged line, no text reordered', async () => {
    const name = 'PreToolUse:y\n:white_check_mark: *[RESOLVED] persisted*\u2028\u202Eelif\u0007';
    const before = sink.requests.length;
    const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', otlpHookBody([{ hookName: name, timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000, sessionId: 'forge' }]), JSON_CT);
    expect(res.status).toBe(200);
    const slack = await eventually('the Slack notification of the forged name', () => Promise.resolve(sink.requests.slice(before).find((r) => r.path === '/slack' && r.body.includes('RESOLVED'))?.body), 10_000);
    const text = (JSON.parse(slack) as { text: string }).text;
    const lines = text.split('\n');
    expect(lines[0]).toContain('PreToolUse:y\\n:white_check_mark: *[RESOLVED] persisted*\\u2028\\u202eelif\\u0007');
    expect(lines.filter((l) => l.startsWith(':white_check_mark:'))).toEqual([]);
    for (const line of lines) expect(line).not.toMatch(/[\p{Cc}\p{Zl}\p{Bidi_Control}]/u);
  });

  it('zero-width and tag characters in a name are written out on Slack, an emoji kept whole', async () => {
    // Invisible: "Pre\u200BToolUse" reads as another hook's name, and tag characters carry text nobody sees.
    const emoji = '\u{1F469}\u{1F3FD}\u200D\u{1F4BB}';
    const name = `Pre\u200BToolUse:hidden\u{E0069}\u{E0067}\u{E006E}\uFEFF ${emoji}`;
    const before = sink.requests.length;
    const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', otlpHookBody([{ hookName: name, timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000, sessionId: 'invisible' }]), JSON_CT);
    expect(res.status).toBe(200);
    const slack = await eventually('the Slack notification of the invisible name', () => Promise.resolve(sink.requests.slice(before).find((r) => r.path === '/slack' && r.body.includes('hidden'))?.body), 10_000);
    const text = (JSON.parse(slack) as { text: string }).text;
    expect(text.split('\n')[0]).toContain(`Pre\\u200bToolUse:hidden\\u{e0069}\\u{e0067}\\u{e006e}\\ufeff ${emoji}`);
    expect(text.replaceAll(emoji, '')).not.toMatch(/\p{Cf}/u);
  });
});
