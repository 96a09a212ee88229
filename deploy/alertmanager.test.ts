/**
 * deploy/prometheus/alertmanager.yml with a real Alertmanager (Debian's prometheus-alertmanager): a team that has
 * hookwatch push its alerts there (`type: alertmanager`) and also runs the shipped Prometheus rules gets one page
 * per incident. hookwatch's own alert of a hook inhibits the Prometheus rule's alert of the same hook.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { loadConfig, toConfig } from '../collector/src/config/index.ts';
import { startService, type RunningService } from '../collector/src/service.ts';
import { silentLogger } from '../collector/src/telemetry/logger.ts';
import { hasAlertmanager, startAlertmanager, type RunningAlertmanager } from '../collector/test/support/alertmanager.ts';
import { WebhookSink } from '../collector/test/support/alerting.ts';
import { emitExecutions, isolatedEnv } from '../collector/test/support/service.ts';

const SHIPPED = readFileSync(fileURLToPath(new URL('./prometheus/alertmanager.yml', import.meta.url)), 'utf8');

interface AmAlert {
  labels: Record<string, string>;
  fingerprint: string;
  status: { state: string; inhibitedBy: string[] };
}

interface AmNotification {
  alerts: { status: string; labels: Record<string, string> }[];
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(!hasAlertmanager)('the shipped Alertmanager config with hookwatch\'s receiver and the Prometheus rules (skipped only outside CI without prometheus-alertmanager)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-am-inhibit-'));
  const sink = new WebhookSink();
  let am: RunningAlertmanager | undefined;
  let service: RunningService | undefined;

  beforeAll(async () => {
    await sink.start();
    // The shipped file as it is, but for its receiver's address (webhook-echo in the compose stack) and a shorter
    // group_wait, so the test need not wait 30 s for the first notification.
    const config = parseYaml(SHIPPED) as { route: Record<string, unknown>; receivers: { webhook_configs: { url: string }[] }[] };
    expect(config.route['group_wait']).toBe('30s');
    config.route['group_wait'] = '3s';
    for (const r of config.receivers) for (const w of r.webhook_configs) w.url = w.url.replace(/^http:\/\/webhook-echo:8080/, sink.url);
    am = await startAlertmanager(dir, stringifyYaml(config));
    writeFileSync(join(dir, 'hookwatch.yaml'), stringifyYaml({
      alerting: { receivers: [{ name: 'am', type: 'alertmanager', url: `${am.url}/`, resendInterval: '1s' }] },
    }));
    service = await startService(toConfig(loadConfig({ env: { ...isolatedEnv(dir), HOOKWATCH_CONFIG: join(dir, 'hookwatch.yaml'), HOOKWATCH_ALERT_EVALUATION_INTERVAL: '200ms' } })), { logger: silentLogger });
  }, 30_000);

  afterAll(async () => {
    await service?.stop();
    am?.kill();
    await sink.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('hookwatch\'s persisted and headroom alerts inhibit HookOutputPersisted and HookOutputNearCap of the same hook, not of another', async () => {
    const s = service as RunningService;
    const url = am?.url ?? '';
    const amAlerts = async (): Promise<AmAlert[]> => (await (await fetch(`${url}/api/v2/alerts`)).json()) as AmAlert[];
    // One hook over the cap, one near it: hookwatch's default rules fire persisted and headroom.
    await emitExecutions(s.otlpHttpUrl, [
      { hookEvent: 'Stop', hookName: 'Stop:report', additionalContextChars: 12_000, outputsPersisted: 1 },
      { hookEvent: 'SessionStart', hookName: 'SessionStart:memory', additionalContextChars: 9_000, outputsPersisted: 0 },
    ]);
    const own = await waitFor('hookwatch\'s alerts in Alertmanager', async () => {
      const alerts = (await amAlerts()).filter((a) => ['persisted', 'headroom'].includes(a.labels['alertname'] ?? ''));
      return alerts.length === 2 ? alerts : undefined;
    });
    expect(own.map((a) => [a.labels['alertname'], a.labels['hook_name'], a.status.state]).sort()).toEqual([
      ['headroom', 'SessionStart:memory', 'active'],
      ['persisted', 'Stop:report', 'active'],
    ]);
    // What Prometheus sends for the same hooks (the labels of rules.yml's alerts), and for a hook hookwatch has
    // no alert of.
    const prometheus = [
      { alertname: 'HookOutputPersisted', severity: 'critical', hook_event: 'Stop', hook_name: 'Stop:report' },
      { alertname: 'HookOutputNearCap', severity: 'info', hook_event: 'SessionStart', hook_name: 'SessionStart:memory' },
      { alertname: 'HookOutputPersisted', severity: 'critical', hook_event: 'PreToolUse', hook_name: 'PreToolUse:other' },
    ];
    const res = await fetch(`${url}/api/v2/alerts`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify(prometheus.map((labels) => ({ labels, annotations: { summary: 'from Prometheus' }, endsAt: new Date(Date.now() + 10 * 60_000).toISOString() }))),
    });
    expect(res.status).toBe(200);
    const fingerprint = (alertname: string): string | undefined => own.find((a) => a.labels['alertname'] === alertname)?.fingerprint;
    const states = await waitFor('the Prometheus alerts of hookwatch\'s hooks inhibited', async () => {
      const alerts = (await amAlerts()).filter((a) => (a.labels['alertname'] ?? '').startsWith('HookOutput'));
      const got = alerts.map((a) => [a.labels['alertname'], a.labels['hook_name'], a.status.state, a.status.inhibitedBy]).sort((a, b) => String(a).localeCompare(String(b)));
      return got.filter((g) => g[2] === 'suppressed').length === 2 ? got : undefined;
    });
    expect(states).toEqual([
      ['HookOutputNearCap', 'SessionStart:memory', 'suppressed', [fingerprint('headroom')]],
      ['HookOutputPersisted', 'PreToolUse:other', 'active', []],
      ['HookOutputPersisted', 'Stop:report', 'suppressed', [fingerprint('persisted')]],
    ]);
    // Past group_wait: each hook paged once, by hookwatch's alert, and the hook without one by Prometheus's.
    const paged = await waitFor('the notifications of the four groups', async () => {
      const alerts = sink.requests.filter((r) => r.path === '/prometheus-alerts').flatMap((r) => (JSON.parse(r.body) as AmNotification).alerts);
      const firing = alerts.filter((a) => a.status === 'firing').map((a) => `${a.labels['alertname']} ${a.labels['hook_name']}`);
      return new Set(firing).size >= 3 ? firing : undefined;
    });
    await new Promise((r) => setTimeout(r, 4_000));
    const all = sink.requests.filter((r) => r.path === '/prometheus-alerts').flatMap((r) => (JSON.parse(r.body) as AmNotification).alerts).map((a) => `${a.labels['alertname']} ${a.labels['hook_name']}`);
    expect(paged.length).toBeGreaterThan(0);
    expect([...new Set(all)].sort()).toEqual(['HookOutputPersisted PreToolUse:other', 'headroom SessionStart:memory', 'persisted Stop:report']);
  }, 60_000);
});
