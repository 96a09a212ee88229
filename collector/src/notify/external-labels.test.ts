/**
 * alerting.externalLabels against the real Alertmanager (Debian's prometheus-alertmanager): two hookwatch
 * deployments, prod and staging, watching the same hook and pushing to one Alertmanager, keep two alerts there,
 * and one resolving leaves the other firing; their webhook bodies carry the labels, and a reload applies them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlertsResponse } from '../../../shared/src/api.ts';
import { silenceLabels } from '../../../shared/src/silence-link.ts';
import { loadConfig, toConfig } from '../config/index.ts';
import { startService, type RunningService } from '../service.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { until } from '../../test/helpers.ts';
import { WebhookSink } from '../../test/support/alerting.ts';
import { hasAlertmanager, startAlertmanager, type RunningAlertmanager } from '../../test/support/alertmanager.ts';
import { emitExecutions, isolatedEnv } from '../../test/support/service.ts';
import { alertmanagerFingerprint, type AlertmanagerWebhookBody } from './alertmanager.ts';

interface AmAlert {
  labels: Record<string, string>;
  endsAt: string;
  updatedAt: string;
  fingerprint: string;
  status: { state: string };
}

const HOOK = { hookEvent: 'SessionStart', hookName: 'SessionStart:startup' };

describe.skipIf(!hasAlertmanager)('alerting.externalLabels against a real Alertmanager (skipped only outside CI without prometheus-alertmanager)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-am-labels-'));
  const sink = new WebhookSink();
  let am: RunningAlertmanager | undefined;
  const services: Partial<Record<'prod' | 'staging', RunningService>> = {};
  /** Each deployment's config file. */
  const files: Partial<Record<'prod' | 'staging', string>> = {};

  const config = (name: string, labels: string): string => [
    'alerting:',
    '  externalUrl: http://hookwatch.example.test',
    `  externalLabels: ${labels}`,
    '  rules:',
    // The hook quiet for 3 s: fires while nothing arrives, resolves as soon as the hook sends again.
    '    - { kind: silence, after: 3s }',
    '  receivers:',
    '    - name: am',
    '      type: alertmanager',
    `      url: ${am?.url ?? ''}/`,
    '      resendInterval: 1s',
    '    - name: hook',
    `      url: ${sink.url}/${name}`,
    '',
  ].join('\n');

  /** hookwatch started from its own file, as `hookwatch serve` starts it, reading the file again on a reload. */
  async function deployment(name: 'prod' | 'staging', labels: string): Promise<RunningService> {
    const own = mkdtempSync(join(dir, `${name}-`));
    const file = join(own, 'hookwatch.yaml');
    files[name] = file;
    writeFileSync(file, config(name, labels));
    const env = { ...isolatedEnv(own), HOOKWATCH_CONFIG: file, HOOKWATCH_ALERT_EVALUATION_INTERVAL: '200ms' };
    const loaded = loadConfig({ env });
    return startService(toConfig(loaded), {
      logger: silentLogger,
      configSource: { loaded, load: () => {
        const next = loadConfig({ env });
        return { loaded: next, config: toConfig(next) };
      } },
    });
  }

  const amAlerts = async (): Promise<AmAlert[]> => {
    const res = await fetch(`${am?.url ?? ''}/api/v2/alerts`);
    expect(res.status).toBe(200);
    return ((await res.json()) as AmAlert[]).filter((a) => a.labels['alertname'] === 'silence').sort((a, b) => (a.labels['env'] ?? '').localeCompare(b.labels['env'] ?? ''));
  };
  const bodies = (path: string): AlertmanagerWebhookBody[] => sink.requests.filter((r) => r.path === path).map((r) => JSON.parse(r.body) as AlertmanagerWebhookBody);
  const reload = async (s: RunningService): Promise<{ status: number; body: { error?: { message: string } } }> => {
    const res = await fetch(`${s.httpUrl}/-/reload`, { method: 'POST' });
    return { status: res.status, body: (await res.json()) as { error?: { message: string } } };
  };

  beforeAll(async () => {
    await sink.start();
    am = await startAlertmanager(dir, ['route:', '  receiver: none', 'receivers:', '  - name: none', ''].join('\n'));
    services.prod = await deployment('prod', '{ env: prod }');
    services.staging = await deployment('staging', '{ env: staging }');
  }, 30_000);

  afterAll(async () => {
    await services.prod?.stop();
    await services.staging?.stop();
    am?.kill();
    await sink.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the two deployments\' alerts of one hook apart: two alerts, and one resolving leaves the other firing', async () => {
    const prod = services.prod as RunningService;
    const staging = services.staging as RunningService;
    await emitExecutions(prod.otlpHttpUrl, [{ ...HOOK, additionalContextChars: 900, outputsPersisted: 0 }]);
    await emitExecutions(staging.otlpHttpUrl, [{ ...HOOK, additionalContextChars: 900, outputsPersisted: 0 }]);

    // Both deployments' alerts, each with its own external label: two alerts in Alertmanager, not one.
    let both: AmAlert[] = [];
    await until('both deployments\' alerts in alertmanager', async () => (both = await amAlerts()).length === 2, 15_000);
    expect(both.map((a) => a.labels)).toEqual([
      { alertname: 'silence', severity: 'warning', hook_event: 'SessionStart', hook_name: 'SessionStart:startup', env: 'prod' },
      { alertname: 'silence', severity: 'warning', hook_event: 'SessionStart', hook_name: 'SessionStart:startup', env: 'staging' },
    ]);
    expect(both.map((a) => a.status.state)).toEqual(['active', 'active']);
    const [prodAlert, stagingAlert] = both as [AmAlert, AmAlert];
    expect(prodAlert.fingerprint).not.toBe(stagingAlert.fingerprint);

    // The webhook bodies carry them too, in each alert's labels, the common labels and the group's: the fingerprint
    // is the one Alertmanager gives the alert, and the two deployments' groups have keys of their own.
    await until('each deployment\'s webhook', async () => bodies('/prod').length > 0 && bodies('/staging').length > 0, 15_000);
    const [fromProd] = bodies('/prod') as [AlertmanagerWebhookBody];
    const [fromStaging] = bodies('/staging') as [AlertmanagerWebhookBody];
    expect(fromProd.alerts[0]?.labels).toEqual(prodAlert.labels);
    expect(fromProd.commonLabels).toEqual(prodAlert.labels);
    expect(fromProd.groupLabels).toEqual({ alertname: 'silence', env: 'prod' });
    expect(fromProd.alerts[0]?.fingerprint).toBe(prodAlert.fingerprint);
    expect(fromStaging.alerts[0]?.fingerprint).toBe(stagingAlert.fingerprint);
    expect(fromStaging.groupLabels).toEqual({ alertname: 'silence', env: 'staging' });
    expect(fromProd.groupKey).toMatch(/^\{\}:\{alertname="silence", env="prod", fingerprint="[0-9a-f]+"\}$/);
    expect(fromStaging.groupKey).toBe(fromProd.groupKey.replace('env="prod"', 'env="staging"'));

    // The silence link opens hookwatch's silence form with the labels hookwatch sets: a silence made from it mutes
    // the alert in hookwatch, whose silences match those labels.
    const link = new URL(fromProd.alerts[0]?.annotations['silence_url'] ?? '');
    const matchers = silenceLabels(link.searchParams).map(([name, value]) => ({ name, value }));
    expect(matchers.map((m) => m.name)).not.toContain('env');
    const created = await fetch(`${prod.httpUrl}/api/v1/silences`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ matchers, endsAt: new Date(Date.now() + 3_600_000).toISOString(), createdBy: 'test', comment: 'from the link' }),
    });
    expect(created.status).toBe(201);
    const { silence: { id } } = (await created.json()) as { silence: { id: string } };
    const { alerts } = (await (await fetch(`${prod.httpUrl}/api/v1/alerts`)).json()) as AlertsResponse;
    expect(alerts.filter((a) => a.state === 'firing').map((a) => a.silencedBy)).toEqual([[id]]);

    // The hook sends to staging again, every second from now on: staging's alert resolves (and does not fire
    // again), prod's keeps firing there, renewed.
    const send = (): Promise<unknown> => emitExecutions(staging.otlpHttpUrl, [{ ...HOOK, additionalContextChars: 900, outputsPersisted: 0 }]);
    await send();
    const sending = setInterval(() => void send(), 1000);
    let left: AmAlert[];
    try {
      await until('staging\'s alert resolved in alertmanager', async () => (await amAlerts()).length === 1, 15_000);
      await until('staging\'s resolution at its webhook', async () => bodies('/staging').some((b) => b.status === 'resolved'), 15_000);
      expect(bodies('/staging').find((b) => b.status === 'resolved')?.alerts[0]?.labels['env']).toBe('staging');
      // Past the 4 s lifetime of a push not renewed: prod's alert is still firing.
      await new Promise((r) => setTimeout(r, 5000));
      left = await amAlerts();
    } finally {
      clearInterval(sending);
    }
    expect(left.map((a) => [a.labels['env'], a.status.state, a.fingerprint])).toEqual([['prod', 'active', prodAlert.fingerprint]]);
    expect(Date.parse(left[0]?.endsAt ?? '')).toBeGreaterThan(Date.now());

    // An Alertmanager silence of one deployment (env="prod") mutes its alert there alone.
    const amSilence = await fetch(`${am?.url ?? ''}/api/v2/silences`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ matchers: [{ name: 'env', value: 'prod', isRegex: false, isEqual: true }], startsAt: new Date().toISOString(), endsAt: new Date(Date.now() + 3_600_000).toISOString(), createdBy: 'test', comment: 'prod only' }),
    });
    expect(amSilence.status).toBe(200);
    await until('prod\'s alert suppressed in alertmanager', async () => (await amAlerts())[0]?.status.state === 'suppressed', 15_000);
  }, 60_000);

  it('a reload applies new external labels to the next push, and refuses one hookwatch sets itself, keeping the running ones', async () => {
    const prod = services.prod as RunningService;
    const file = files.prod as string;
    writeFileSync(file, config('prod', '{ env: canary, hook_name: x }'));
    const refused = await reload(prod);
    expect(refused.status).toBe(400);
    expect(refused.body.error?.message).toContain('alerting.externalLabels.hook_name: hookwatch sets this label itself');
    // The running labels stay: the next renewals carry env="prod" alone, never the refused canary. (Staging's hook, quiet again, may fire again.)
    const ofProd = async (): Promise<AmAlert[]> => (await amAlerts()).filter((a) => a.labels['env'] === 'prod');
    const refusedAt = Date.now();
    await until('a renewal after the refused reload', async () => (await ofProd()).some((a) => Date.parse(a.updatedAt) > refusedAt), 15_000);
    expect((await ofProd()).map((a) => a.labels)).toEqual([{ alertname: 'silence', severity: 'warning', hook_event: 'SessionStart', hook_name: 'SessionStart:startup', env: 'prod' }]);
    expect((await amAlerts()).filter((a) => a.labels['env'] === 'canary')).toEqual([]);

    writeFileSync(file, config('prod', '{ env: prod, region: eu }'));
    expect((await reload(prod)).status).toBe(200);
    const renewed = async (): Promise<AmAlert | undefined> => (await amAlerts()).find((a) => a.labels['region'] === 'eu');
    await until('the alert renewed with the new label', async () => (await renewed()) !== undefined, 15_000);
    const alert = await renewed() as AmAlert;
    expect(alert.labels).toMatchObject({ env: 'prod', region: 'eu', hook_name: 'SessionStart:startup' });
    expect(alert.fingerprint).toBe(alertmanagerFingerprint(alert.labels));
  }, 30_000);
});
