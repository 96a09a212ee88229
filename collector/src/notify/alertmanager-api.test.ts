/**
 * `type: alertmanager` against the real Alertmanager (Debian's prometheus-alertmanager) on loopback: hook events
 * sent through the OpenTelemetry exporter fire alerts that appear in Alertmanager with their labels, are grouped
 * and routed by its own route tree to the webhook it notifies, are renewed while firing, survive a hookwatch
 * restart without a duplicate, and resolve.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookSink, type SinkReply } from '../../test/support/alerting.ts';
import { alertingSecrets, alertmanagerAlertsUrl, parseReceivers, redactReceivers } from './settings.ts';
import { loadConfig, toConfig } from '../config/index.ts';
import { startService, type RunningService } from '../service.ts';
import { createLogger, silentLogger } from '../telemetry/logger.ts';
import { ClientTlsCredentials } from '../net/tls.ts';
import { emitExecutions, isolatedEnv } from '../../test/support/service.ts';
import { sendWithRetry } from './transport.ts';
import { alertmanagerFingerprint } from './alertmanager.ts';
import { AlertmanagerRefresher, alertmanagerApiRenderer, postableAlert, type PostableAlert } from './alertmanager-api.ts';
import { Dispatcher } from './dispatcher.ts';
import type { Notification, ReceiverConfig } from './model.ts';
import type { AlertSummary } from '../../../shared/src/api.ts';
import { hasAlertmanager, startAlertmanager, type RunningAlertmanager } from '../../test/support/alertmanager.ts';

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface AmAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
  updatedAt: string;
  generatorURL: string;
  fingerprint: string;
  status: { state: string };
}

interface AmNotification {
  status: 'firing' | 'resolved';
  receiver: string;
  groupLabels: Record<string, string>;
  alerts: { status: string; labels: Record<string, string> }[];
}

describe.skipIf(!hasAlertmanager)('alertmanager receiver against a real Alertmanager (skipped only outside CI without prometheus-alertmanager)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-am-'));
  const sink = new WebhookSink();
  let am: RunningAlertmanager | undefined;
  let amUrl = '';
  let service: RunningService | undefined;
  const logs: string[] = [];

  const amAlerts = async (): Promise<AmAlert[]> => {
    const res = await fetch(`${amUrl}/api/v2/alerts`);
    expect(res.status).toBe(200);
    return ((await res.json()) as AmAlert[]).sort((a, b) => JSON.stringify(a.labels).localeCompare(JSON.stringify(b.labels)));
  };
  const notifications = (path: string): AmNotification[] => sink.requests.filter((r) => r.path === path).map((r) => JSON.parse(r.body) as AmNotification);

  async function startHookwatch(): Promise<RunningService> {
    const config = toConfig(loadConfig({
      env: {
        ...isolatedEnv(dir),
        HOOKWATCH_CONFIG: join(dir, 'hookwatch.yaml'),
        HOOKWATCH_ALERT_EVALUATION_INTERVAL: '200ms',
      },
    }));
    const logger = createLogger({ level: 'debug', secrets: alertingSecrets(config.alerting.receivers, config.alerting.otlp.headers), write: (l) => logs.push(l) });
    return startService(config, { logger });
  }

  beforeAll(async () => {
    await sink.start();
    // Alertmanager's own routing: critical alerts to one webhook, the rest to another, grouped by alertname. A
    // group's first notification waits 3 s for the rest of it (group_wait), so alerts firing together are grouped
    // on a loaded machine too, where hookwatch's posts of one evaluation can arrive more than 1 s apart.
    am = await startAlertmanager(dir, [
      'route:',
      '  receiver: team',
      '  group_by: [alertname]',
      '  group_wait: 3s',
      '  group_interval: 1s',
      '  repeat_interval: 1h',
      '  routes:',
      '    - receiver: oncall',
      '      matchers: [\'severity="critical"\']',
      'receivers:',
      '  - name: team',
      '    webhook_configs:',
      `      - url: ${sink.url}/team`,
      '        send_resolved: true',
      '  - name: oncall',
      '    webhook_configs:',
      `      - url: ${sink.url}/oncall`,
      '        send_resolved: true',
      '',
    ].join('\n'));
    amUrl = am.url;
    writeFileSync(join(dir, 'hookwatch.yaml'), [
      'alerting:',
      '  externalUrl: http://hookwatch.example.test',
      '  rules:',
      '    - { kind: persisted }',
      // A hook quiet for 3 s: fires while nothing arrives, resolves as soon as the hook sends again.
      '    - { kind: silence, after: 3s }',
      '  receivers:',
      '    - name: am',
      '      type: alertmanager',
      `      url: ${amUrl}/`,
      '      resendInterval: 1s',
      '      basicAuth: { username: hookwatch, password: s3cret-am-password }',
      '',
    ].join('\n'));
    service = await startHookwatch();
  }, 30_000);

  afterAll(async () => {
    await service?.stop();
    am?.kill();
    await sink.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a receiver test reaches Alertmanager without leaving an alert firing there or paging through a route', async () => {
    const s = service as RunningService;
    const res = await fetch(`${s.httpUrl}/api/v1/receivers/am/test`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ receiver: 'am', delivered: true, httpStatus: 200 });
    // Past group_wait (3 s) and group_interval (1 s): a route would have been notified by now, and a firing test
    // alert (4 resend intervals of lifetime) would still be listed.
    await new Promise((r) => setTimeout(r, 4500));
    expect((await amAlerts()).map((a) => a.labels['alertname'])).not.toContain('hookwatch_test');
    expect([...notifications('/team'), ...notifications('/oncall')].flatMap((n) => n.alerts.map((a) => a.labels['alertname']))).not.toContain('hookwatch_test');
  }, 30_000);

  it('pushes, groups, routes, renews, survives a restart without a duplicate, and resolves', async () => {
    const s = service as RunningService;
    await emitExecutions(s.otlpHttpUrl, [
      { hookEvent: 'SessionStart', hookName: 'SessionStart:startup', additionalContextChars: 12_000, outputsPersisted: 1 },
      { hookEvent: 'UserPromptSubmit', hookName: 'UserPromptSubmit:brief', additionalContextChars: 11_000, outputsPersisted: 1 },
    ]);

    // Both persisted alerts, with hookwatch's labels and annotations and a link back to the dashboard.
    const persisted = await waitFor('two persisted alerts in alertmanager', async () => {
      const alerts = (await amAlerts()).filter((a) => a.labels['alertname'] === 'persisted');
      return alerts.length === 2 ? alerts : undefined;
    });
    expect(persisted.map((a) => a.labels)).toEqual([
      { alertname: 'persisted', severity: 'critical', hook_event: 'SessionStart', hook_name: 'SessionStart:startup' },
      { alertname: 'persisted', severity: 'critical', hook_event: 'UserPromptSubmit', hook_name: 'UserPromptSubmit:brief' },
    ]);
    for (const a of persisted) {
      // The webhook receiver's v4 body names each alert by the fingerprint Alertmanager gives it.
      expect(alertmanagerFingerprint(a.labels)).toBe(a.fingerprint);
      expect(a.annotations['summary']).toContain('saved to a file');
      expect(a.generatorURL).toMatch(/^http:\/\/hookwatch\.example\.test\/hooks\/[0-9a-f]{16}\?range=custom&from=[^&]+&to=[^&]+$/);
      expect(a.status.state).toBe('active');
      expect(Date.parse(a.endsAt)).toBeGreaterThan(Date.now());
    }

    // Alertmanager routed them (severity critical -> oncall) and grouped them: one notification, both alerts.
    const oncall = await waitFor('the oncall notification', async () => (notifications('/oncall').length > 0 ? notifications('/oncall') : undefined));
    expect(oncall[0]).toMatchObject({ status: 'firing', receiver: 'oncall', groupLabels: { alertname: 'persisted' } });
    expect(oncall[0]?.alerts.map((a) => a.labels['hook_name']).sort()).toEqual(['SessionStart:startup', 'UserPromptSubmit:brief']);

    // Three quiet seconds later both hooks are "silent": a second group, routed to the team receiver.
    const team = await waitFor('the team notification', async () => notifications('/team').find((n) => n.alerts.length === 2));
    expect(team).toMatchObject({ status: 'firing', receiver: 'team', groupLabels: { alertname: 'silence' } });
    // Routed by severity: nothing critical reached the team receiver, nothing else the on-call one.
    expect(notifications('/team').flatMap((n) => n.alerts.map((a) => a.labels['alertname']))).not.toContain('persisted');
    expect(notifications('/oncall').flatMap((n) => n.alerts.map((a) => a.labels['severity']))).toEqual(['critical', 'critical']);

    // Renewed while firing: endsAt moves forward on every resend interval.
    const firstEnds = Date.parse(persisted[0]?.endsAt ?? '');
    await waitFor('a renewed endsAt', async () => {
      const again = (await amAlerts()).find((a) => a.fingerprint === persisted[0]?.fingerprint);
      return again && Date.parse(again.endsAt) > firstEnds ? again : undefined;
    });

    // A restart of hookwatch: the same four alerts, same startsAt, renewed again, no new notification.
    // Past group_interval, so any notification of the groups as they are has arrived.
    await new Promise((r) => setTimeout(r, 1500));
    const before = await amAlerts();
    expect(before).toHaveLength(4);
    const notifiedBefore = sink.requests.length;
    await s.stop();
    service = await startHookwatch();
    const restartedAt = Date.now();
    await waitFor('renewal by the restarted hookwatch', async () => {
      const after = await amAlerts();
      return after.every((a) => Date.parse(a.updatedAt) > restartedAt) ? after : undefined;
    });
    // Longer than group_interval: a changed group would have been notified by now.
    await new Promise((r) => setTimeout(r, 2500));
    const after = await amAlerts();
    expect(after.map((a) => [a.fingerprint, a.startsAt])).toEqual(before.map((a) => [a.fingerprint, a.startsAt]));
    expect(sink.requests.length).toBe(notifiedBefore);

    // The hooks send again: the silence alerts resolve in Alertmanager and the team webhook hears it.
    await emitExecutions(service.otlpHttpUrl, [
      { hookEvent: 'SessionStart', hookName: 'SessionStart:startup', additionalContextChars: 1200, outputsPersisted: 0 },
      { hookEvent: 'UserPromptSubmit', hookName: 'UserPromptSubmit:brief', additionalContextChars: 900, outputsPersisted: 0 },
    ]);
    const resolved = await waitFor('the resolved notification', async () => notifications('/team').find((n) => n.status === 'resolved'));
    expect(resolved.alerts.map((a) => a.labels['hook_name']).sort()).toEqual(['SessionStart:startup', 'UserPromptSubmit:brief']);
    const still = await amAlerts();
    expect(still.filter((a) => a.status.state === 'active').map((a) => a.labels['alertname'])).toEqual(['persisted', 'persisted']);

    // A silence in hookwatch mutes what hookwatch sends, but an alert Alertmanager already has does not end
    // there: it stays firing (renewed) rather than resolve falsely and fire again when the silence ends.
    const silenced = await fetch(`${service.httpUrl}/api/v1/silences`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ matchers: [{ name: 'alertname', value: 'persisted' }], endsAt: new Date(Date.now() + 3_600_000).toISOString(), createdBy: 'test', comment: 'known' }),
    });
    expect(silenced.status).toBe(201);
    const resolvedBefore = notifications('/oncall').filter((n) => n.status === 'resolved').length;
    // Past the 4 s lifetime a pushed alert has without renewal (4 resend intervals).
    await new Promise((r) => setTimeout(r, 6000));
    const kept = (await amAlerts()).filter((a) => a.labels['alertname'] === 'persisted');
    expect(kept.map((a) => a.status.state)).toEqual(['active', 'active']);
    expect(kept.every((a) => Date.parse(a.endsAt) > Date.now())).toBe(true);
    expect(notifications('/oncall').filter((n) => n.status === 'resolved').length).toBe(resolvedBefore);

    // Renewals are counted on /metrics; once Alertmanager is gone, the failed ones are too.
    const renewals = async (outcome: string): Promise<number> => {
      const text = await (await fetch(`${service?.httpUrl}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(`hookwatch_alertmanager_renewals_total{receiver="am",outcome="${outcome}"}`));
      return line === undefined ? Number.NaN : Number(line.split(' ').pop());
    };
    expect(await renewals('delivered')).toBeGreaterThan(0);
    expect(await renewals('failed')).toBe(0);
    am?.kill();
    await waitFor('a failed renewal on /metrics', async () => ((await renewals('failed')) > 0 ? true : undefined));

    // The basic-auth password went out only in the Authorization header, never into a log line.
    expect(logs.join('\n')).not.toContain('s3cret-am-password');
  }, 60_000);

  it('ends an alert whose renewal it took after the resolution: the next renewal push carries the resolution again', async () => {
    // An Alertmanager of its own (the one above is stopped by now), routing to no one.
    const own = await startAlertmanager(mkdtempSync(join(dir, 'late-')), ['route:', '  receiver: none', 'receivers:', '  - name: none', ''].join('\n'));
    const [receiver] = parseReceivers([{ name: 'late', type: 'alertmanager', url: `${own.url}/`, resendInterval: '1m' }]);
    const r = receiver as NonNullable<typeof receiver>;
    const startsAt = new Date(Date.now() - 60_000).toISOString();
    const firing: AlertSummary = {
      id: 'a-1', fingerprint: 'fp', rule: 'persisted', state: 'firing', labels: { alertname: 'late_renewal' }, annotations: {},
      activeAt: startsAt, startsAt, endsAt: null, firstEventAt: null, lastNotifiedAt: startsAt, deliveries: [], silencedBy: [], hookId: null,
    };
    let alerts = [firing];
    const refresher = new AlertmanagerRefresher({ receivers: [r], links: { externalUrl: '' }, alerts: () => alerts, logger: silentLogger });
    const post = async (resolvedAt: string | null): Promise<void> => {
      const res = await fetch(r.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify([postableAlert({ ...firing, startsAt }, resolvedAt, { externalUrl: '' }, Date.now(), 60_000)]) });
      expect(res.status).toBe(200);
    };
    const active = async (): Promise<string[]> => ((await (await fetch(`${own.url}/api/v2/alerts`)).json()) as AmAlert[]).map((a) => a.labels['alertname'] ?? '');
    try {
      // The alert resolves; Alertmanager takes its resolution, then a renewal built before it (late, or retried).
      const resolvedAt = new Date().toISOString();
      alerts = [{ ...firing, state: 'resolved', endsAt: resolvedAt }];
      await post(resolvedAt);
      await post(null);
      expect(await active()).toEqual(['late_renewal']);
      // The next renewal push ends it there, instead of four resend intervals on.
      await refresher.push(r);
      expect(refresher.byReceiver.get('late')).toEqual({ delivered: 1, failed: 0 });
      expect(await active()).toEqual([]);
    } finally {
      await refresher.stop();
      own.kill();
    }
  }, 30_000);

  it('takes a renewal of more alerts than one batch holds: every alert active, renewed in each of its batches', async () => {
    const own = await startAlertmanager(mkdtempSync(join(dir, 'batches-')), ['route:', '  receiver: none', 'receivers:', '  - name: none', ''].join('\n'));
    const [receiver] = parseReceivers([{ name: 'many', type: 'alertmanager', url: `${own.url}/`, resendInterval: '1m' }]);
    const r = receiver as NonNullable<typeof receiver>;
    const alerts = firingAlerts(600);
    const refresher = new AlertmanagerRefresher({ receivers: [r], links: { externalUrl: '' }, alerts: () => alerts, logger: silentLogger });
    try {
      await refresher.push(r);
      // Three posts (256, 256, 88 alerts), each taken.
      expect(refresher.byReceiver.get('many')).toEqual({ delivered: 3, failed: 0 });
      const held = (await (await fetch(`${own.url}/api/v2/alerts`)).json()) as AmAlert[];
      expect(held.map((a) => a.labels['hook_name']).sort()).toEqual(alerts.map((a) => a.labels['hook_name']).sort());
      expect(held.every((a) => a.status.state === 'active' && Date.parse(a.endsAt) > Date.now())).toBe(true);
    } finally {
      await refresher.stop();
      own.kill();
    }
  }, 30_000);
});

describe('alertmanager renewals', () => {
  it('are pushed only by a process whose alerts are the saved ones (the leader, not stale)', async () => {
    const sink = new WebhookSink();
    await sink.start();
    try {
      let active = false;
      const [receiver] = parseReceivers([{ name: 'am', type: 'alertmanager', url: sink.url, resendInterval: '1s' }]);
      const firing: AlertSummary = {
        id: 'a-1', fingerprint: 'fp', rule: 'persisted', state: 'firing', labels: { alertname: 'persisted' }, annotations: {},
        activeAt: '2026-12-01T00:00:00.000Z', startsAt: '2026-12-01T00:00:00.000Z', endsAt: null, firstEventAt: null, lastNotifiedAt: '2026-12-01T00:00:00.000Z', deliveries: [], silencedBy: [], hookId: null,
      };
      const refresher = new AlertmanagerRefresher({ receivers: receiver ? [receiver] : [], links: { externalUrl: '' }, alerts: () => [firing], active: () => active, logger: createLogger({ level: 'error', write: () => undefined }) });
      await refresher.push(receiver as NonNullable<typeof receiver>);
      expect(sink.requests).toHaveLength(0);
      active = true;
      await refresher.push(receiver as NonNullable<typeof receiver>);
      expect(sink.requests.map((r) => r.path)).toEqual(['/api/v2/alerts']);
    } finally {
      await sink.close();
    }
  });

  it('wait for the one in flight: an Alertmanager slower than the resend interval gets one push at a time', async () => {
    const sink = new WebhookSink();
    // Answers each push after 2.5 s, within the receiver's timeout but past two resend intervals.
    sink.reply = () => ({ status: 200, delayMs: 2500 });
    await sink.start();
    const [receiver] = parseReceivers([{ name: 'am', type: 'alertmanager', url: sink.url, resendInterval: '1s', timeout: '10s' }]);
    const firing: AlertSummary = {
      id: 'a-1', fingerprint: 'fp', rule: 'persisted', state: 'firing', labels: { alertname: 'persisted' }, annotations: {},
      activeAt: '2026-12-01T00:00:00.000Z', startsAt: '2026-12-01T00:00:00.000Z', endsAt: null, firstEventAt: null, lastNotifiedAt: '2026-12-01T00:00:00.000Z', deliveries: [], silencedBy: [], hookId: null,
    };
    const refresher = new AlertmanagerRefresher({ receivers: receiver ? [receiver] : [], links: { externalUrl: '' }, alerts: () => [firing], logger: silentLogger });
    try {
      refresher.start();
      await sink.waitFor(1, 3000);
      await new Promise((r) => setTimeout(r, 2000));
      // The first push is still unanswered: the two intervals since then sent nothing over it.
      expect(sink.requests).toHaveLength(1);
      await sink.waitFor(2, 3000);
      expect(refresher.byReceiver.get('am')).toEqual({ delivered: 1, failed: 0 });
    } finally {
      await refresher.stop();
      await sink.close();
    }
  });
});

describe('alertmanager renewals of resolved alerts', () => {
  it('carry every alert resolved within the last 15 minutes, with endsAt the time it resolved, as Prometheus does', async () => {
    const sink = new WebhookSink();
    await sink.start();
    const now = Date.parse('2026-12-01T01:00:00.000Z');
    let clock = now;
    const at = (ms: number): string => new Date(ms).toISOString();
    const alert = (id: string, over: Partial<AlertSummary>): AlertSummary => ({
      id, fingerprint: id, rule: 'persisted', state: 'resolved', labels: { alertname: 'persisted', hook_name: id }, annotations: {},
      activeAt: '2026-12-01T00:00:00.000Z', startsAt: '2026-12-01T00:00:00.000Z', endsAt: null, firstEventAt: null, lastNotifiedAt: '2026-12-01T00:00:00.000Z', deliveries: [], silencedBy: [], hookId: null, ...over,
    });
    const listed = [
      alert('firing', { state: 'firing' }),
      alert('recent', { endsAt: at(now - 14 * 60_000) }),
      alert('old', { endsAt: at(now - 16 * 60_000) }),
      // Never posted firing (it fired while silenced in hookwatch): Alertmanager does not hold it.
      alert('unposted', { endsAt: at(now - 60_000), lastNotifiedAt: null }),
      // Fired again under the same labels: renewed as firing, not ended.
      alert('again', { id: 'again-1', endsAt: at(now - 60_000) }),
      alert('again', { id: 'again-2', state: 'firing' }),
      // Resolved twice within the window: its latest resolution alone.
      alert('twice', { id: 'twice-1', endsAt: at(now - 10 * 60_000) }),
      alert('twice', { id: 'twice-2', endsAt: at(now - 2 * 60_000) }),
    ];
    let alerts = listed;
    const receivers = parseReceivers([
      { name: 'am', type: 'alertmanager', url: sink.url, resendInterval: '1m' },
      { name: 'quiet', type: 'alertmanager', url: `${sink.url}/quiet`, resendInterval: '1m', sendResolved: false },
    ]);
    const [am, quiet] = receivers as [ReceiverConfig, ReceiverConfig];
    const refresher = new AlertmanagerRefresher({ receivers, links: { externalUrl: '' }, alerts: () => alerts, logger: silentLogger, now: () => clock });
    const posted = (i: number): [string | undefined, string][] => (JSON.parse(sink.requests[i]?.body ?? '[]') as PostableAlert[]).map((a) => [a.labels['hook_name'], a.endsAt]);
    try {
      await refresher.push(am);
      const ahead = at(now + 4 * 60_000);
      expect(posted(0)).toEqual([['firing', ahead], ['again', ahead], ['recent', at(now - 14 * 60_000)], ['twice', at(now - 2 * 60_000)]]);
      // Without firing alerts, the resolved ones are still posted.
      alerts = listed.filter((a) => a.state === 'resolved');
      await refresher.push(am);
      expect(posted(1)).toEqual([['recent', at(now - 14 * 60_000)], ['again', at(now - 60_000)], ['twice', at(now - 2 * 60_000)]]);
      // A receiver that is not sent resolutions is not sent them here either.
      await refresher.push(quiet);
      expect(sink.requests).toHaveLength(2);
      // Past the 15 minutes of each, nothing is left to post.
      clock = now + 15 * 60_000;
      await refresher.push(am);
      expect(sink.requests).toHaveLength(2);
    } finally {
      await refresher.stop();
      await sink.close();
    }
  });
});

describe('alertmanager renewals to a receiver a reload removed', () => {
  it('are forgotten: a failure in flight then is neither logged nor makes the receiver, configured again, log that it is reachable again', async () => {
    const sink = new WebhookSink();
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let arrived = (): void => undefined;
    const pushArrived = new Promise<void>((resolve) => (arrived = resolve));
    // The first push is answered 503 once the reload has removed its receiver; the next ones 200.
    sink.reply = (q) => (q.index === 0 ? (arrived(), { status: 503, hold: held }) : { status: 200 });
    await sink.start();
    const logs: string[] = [];
    const [receiver] = parseReceivers([{ name: 'am', type: 'alertmanager', url: sink.url, resendInterval: '1s', timeout: '10s' }]);
    const am = receiver as NonNullable<typeof receiver>;
    const firing: AlertSummary = {
      id: 'a-1', fingerprint: 'fp', rule: 'persisted', state: 'firing', labels: { alertname: 'persisted' }, annotations: {},
      activeAt: '2026-12-01T00:00:00.000Z', startsAt: '2026-12-01T00:00:00.000Z', endsAt: null, firstEventAt: null, lastNotifiedAt: '2026-12-01T00:00:00.000Z', deliveries: [], silencedBy: [], hookId: null,
    };
    const refresher = new AlertmanagerRefresher({ receivers: [am], links: { externalUrl: '' }, alerts: () => [firing], logger: createLogger({ level: 'info', write: (l) => logs.push(l) }) });
    try {
      const first = refresher.push(am);
      await pushArrived;
      refresher.reconfigure({ receivers: [] });
      release();
      await first;
      refresher.reconfigure({ receivers: [am] });
      await refresher.push(am);
      expect(sink.requests.map((q) => q.status)).toEqual([503, 200]);
      expect(logs).toEqual([]);
      expect(refresher.byReceiver.get('am')).toEqual({ delivered: 1, failed: 0 });
    } finally {
      await refresher.stop();
      await sink.close();
    }
  });
});

/** `count` firing alerts already posted, each its own label set (hook_name `h<i>`) and its Alertmanager fingerprint. */
function firingAlerts(count: number): AlertSummary[] {
  return Array.from({ length: count }, (_, i) => {
    const labels = { alertname: 'persisted', hook_name: `h${i}` };
    return {
      id: `a-${i}`, fingerprint: alertmanagerFingerprint(labels), rule: 'persisted', state: 'firing' as const, labels, annotations: {},
      activeAt: '2026-12-01T00:00:00.000Z', startsAt: '2026-12-01T00:00:00.000Z', endsAt: null, firstEventAt: null, lastNotifiedAt: '2026-12-01T00:00:00.000Z', deliveries: [], silencedBy: [], hookId: null,
    };
  });
}

/** The notification of `a`'s resolution to `receiver`. */
function resolutionOf(a: AlertSummary, receiver: string): Notification {
  return {
    webhookId: `msg_${a.id}`, receiver, status: 'resolved', createdAtMs: Date.now(),
    alert: { id: a.id, fingerprint: a.fingerprint, rule: a.rule, labels: a.labels, annotations: a.annotations, startsAt: a.startsAt ?? a.activeAt, endsAt: new Date().toISOString(), hookId: a.hookId },
  };
}

describe('alertmanager renewals of more alerts than a batch holds', () => {
  /** Prometheus' notifier: at most this many alerts per POST /api/v2/alerts (notifier.DefaultMaxBatchSize). */
  const BATCH = 256;
  const hookNames = (body: string): string[] => (JSON.parse(body) as PostableAlert[]).map((a) => a.labels['hook_name'] ?? '');

  it('go in batches of at most 256 alerts, one after the answer to the other, each alert once; the renewal is in flight until the last answer', async () => {
    const sink = new WebhookSink();
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let arrived = (): void => undefined;
    const secondArrived = new Promise<void>((resolve) => (arrived = resolve));
    // Every body as it arrives, before the sink takes it: the second one is held until released.
    const bodies: string[] = [];
    sink.reply = (q) => {
      bodies.push(q.body);
      return bodies.length === 2 ? (arrived(), { status: 200, hold: held }) : { status: 200 };
    };
    await sink.start();
    const [receiver] = parseReceivers([{ name: 'am', type: 'alertmanager', url: sink.url, resendInterval: '1m', sendResolved: true }]);
    const am = receiver as NonNullable<typeof receiver>;
    const resolvedAt = new Date(Date.now() - 60_000).toISOString();
    const alerts = [...firingAlerts(2 * BATCH), { ...firingAlerts(2 * BATCH + 1)[2 * BATCH] as AlertSummary, state: 'resolved' as const, endsAt: resolvedAt }];
    const refresher = new AlertmanagerRefresher({ receivers: [am], links: { externalUrl: '' }, alerts: () => alerts, logger: silentLogger });
    try {
      const renewal = refresher.push(am);
      await secondArrived;
      let settled = false;
      const waiting = refresher.settled(resolutionOf(alerts[2 * BATCH] as AlertSummary, 'am')).then(() => (settled = true));
      await new Promise((r) => setTimeout(r, 300));
      // The first batch answered, the second held: the third is not sent over it, and a notification waiting for
      // the batch that carries its alert (here the third) still waits.
      expect(bodies).toHaveLength(2);
      expect(settled).toBe(false);
      release();
      await renewal;
      await waiting;
      expect(bodies.map((b) => hookNames(b).length)).toEqual([BATCH, BATCH, 1]);
      const posted = bodies.flatMap(hookNames);
      expect(posted.sort()).toEqual(alerts.map((a) => a.labels['hook_name']).sort());
      expect(new Set(posted).size).toBe(alerts.length);
      // The resolved alert keeps its end; every other one is renewed firing.
      const last = JSON.parse(bodies[2] ?? '[]') as PostableAlert[];
      expect(last.map((a) => a.endsAt)).toEqual([resolvedAt]);
      expect(refresher.byReceiver.get('am')).toEqual({ delivered: 3, failed: 0 });
    } finally {
      await refresher.stop();
      await sink.close();
    }
  });

  it('hold a notification only until the answer to the batch carrying its alert; one of an alert not carried goes at once', async () => {
    const sink = new WebhookSink();
    // What the receiver saw, in order: each renewal batch as it arrives (held until answered), each notification.
    const log: string[] = [];
    const answers = [1, 2, 3].map(() => {
      let resolve = (): void => undefined;
      return { held: new Promise<void>((r) => (resolve = r)), answer: () => resolve() };
    });
    let batches = 0;
    sink.reply = (q) => {
      if (q.headers['webhook-id']) {
        log.push(`posted ${hookNames(q.body).join()}`);
        return { status: 200 };
      }
      log.push(`batch ${++batches}`);
      return { status: 200, hold: answers[batches - 1]?.held };
    };
    const answer = (k: number): void => {
      log.push(`batch ${k} answered`);
      answers[k - 1]?.answer();
    };
    const seen = (entry: string): Promise<true> => waitFor(entry, async () => (log.includes(entry) ? true : undefined), 5000);
    const quiet = (): Promise<void> => new Promise((r) => setTimeout(r, 300));
    await sink.start();
    const [receiver] = parseReceivers([{ name: 'am', type: 'alertmanager', url: sink.url, resendInterval: '1m' }]);
    const am = receiver as NonNullable<typeof receiver>;
    // Three batches: h0-h255, h256-h511, h512. h513 is not in the renewal.
    const listed = firingAlerts(2 * BATCH + 2);
    const carried = listed.slice(0, 2 * BATCH + 1);
    const refresher = new AlertmanagerRefresher({ receivers: [am], links: { externalUrl: '' }, alerts: () => carried, logger: silentLogger });
    const dispatcher = new Dispatcher({ receivers: [am], links: { externalUrl: '' }, logger: silentLogger, deadlineMs: 60_000, maxQueue: 10, ready: (n) => refresher.settled(n) });
    try {
      const renewal = refresher.push(am);
      await seen('batch 1');
      // Resolutions of an alert in the third batch, of one in the first, and of one the renewal does not carry.
      for (const i of [2 * BATCH, 0, 2 * BATCH + 1]) dispatcher.enqueue(resolutionOf(listed[i] as AlertSummary, 'am'));
      await seen('posted h513');
      await quiet();
      expect(log).toEqual(['batch 1', 'posted h513']);
      // The first batch answered: its alert's resolution goes, the second batch held meanwhile.
      answer(1);
      await seen('posted h0');
      await seen('batch 2');
      await quiet();
      expect(log.slice(0, 3)).toEqual(['batch 1', 'posted h513', 'batch 1 answered']);
      expect(log.slice(3).sort()).toEqual(['batch 2', 'posted h0']);
      // The second answered: the third batch is posted, and the resolution of its alert waits for its answer.
      answer(2);
      await seen('batch 3');
      await quiet();
      expect(log).not.toContain('posted h512');
      answer(3);
      await seen('posted h512');
      expect(log.slice(-2)).toEqual(['batch 3 answered', 'posted h512']);
      await renewal;
      await dispatcher.idle();
      expect(dispatcher.stats).toMatchObject({ delivered: 3, failed: 0 });
      expect(refresher.byReceiver.get('am')).toEqual({ delivered: 3, failed: 0 });
    } finally {
      answers.forEach((a) => a.answer());
      await dispatcher.stop();
      await refresher.stop();
      await sink.close();
    }
  });

  it('count each batch: one refused does not stop the others; one not answered ends the renewal there, the next interval posts all again', async () => {
    const sink = new WebhookSink();
    let replies: SinkReply[] = [];
    let seen = 0;
    sink.reply = () => replies[seen++] ?? { status: 200 };
    await sink.start();
    const logs: string[] = [];
    const [receiver] = parseReceivers([{ name: 'am', type: 'alertmanager', url: sink.url, resendInterval: '1m', timeout: '1500ms' }]);
    const am = receiver as NonNullable<typeof receiver>;
    const alerts = firingAlerts(2 * BATCH + 1);
    const refresher = new AlertmanagerRefresher({ receivers: [am], links: { externalUrl: '' }, alerts: () => alerts, logger: createLogger({ level: 'info', write: (l) => logs.push(l) }) });
    try {
      // The first batch refused (a body Alertmanager will not take): the two others are still posted and taken.
      replies = [{ status: 400 }];
      await refresher.push(am);
      expect(sink.requests.map((q) => q.status)).toEqual([400, 200, 200]);
      expect(refresher.byReceiver.get('am')).toEqual({ delivered: 2, failed: 1 });
      expect(logs.filter((l) => l.includes('cannot renew'))).toHaveLength(1);
      // The first batch not answered within the receiver's timeout: the others would wait as long, and every
      // notification waiting for the renewal with them. The renewal ends there.
      seen = 0;
      replies = [{ status: 200, delayMs: 4000 }];
      await refresher.push(am);
      expect(seen).toBe(1);
      expect(refresher.byReceiver.get('am')).toEqual({ delivered: 2, failed: 2 });
      // Logged once per outage.
      expect(logs.filter((l) => l.includes('cannot renew'))).toHaveLength(1);
      // The next renewal posts every batch again.
      seen = 0;
      replies = [];
      const before = sink.requests.length;
      await refresher.push(am);
      expect(sink.requests.slice(before).map((q) => hookNames(q.body).length)).toEqual([BATCH, BATCH, 1]);
      expect(refresher.byReceiver.get('am')).toEqual({ delivered: 5, failed: 2 });
      expect(logs.filter((l) => l.includes('reachable again'))).toHaveLength(1);
    } finally {
      await refresher.stop();
      await sink.close();
    }
  });
});

describe('alertmanager receiver test notification', () => {
  it('is posted resolved on arrival (endsAt = startsAt); a notification of a rule is posted firing', () => {
    const [receiver] = parseReceivers([{ name: 'am', type: 'alertmanager', url: 'http://am:9093', resendInterval: '1m' }]);
    const render = alertmanagerApiRenderer({ externalUrl: '' }, receiver!, () => Date.parse('2026-12-01T00:00:30.000Z'));
    const n: Notification = {
      webhookId: 'msg_1', receiver: 'am', status: 'firing', createdAtMs: 0,
      alert: { id: 'a', fingerprint: 'f', rule: 'hookwatch_test', labels: { alertname: 'hookwatch_test' }, annotations: {}, startsAt: '2026-12-01T00:00:00.000Z', endsAt: null, hookId: null },
    };
    expect(JSON.parse(render.render({ ...n, test: true }))).toEqual([expect.objectContaining({ startsAt: '2026-12-01T00:00:00.000Z', endsAt: '2026-12-01T00:00:00.000Z' })]);
    expect(JSON.parse(render.render(n))).toEqual([expect.objectContaining({ endsAt: '2026-12-01T00:04:30.000Z' })]);
  });
});

describe('alertmanager receiver settings', () => {
  it('names the v2 alerts endpoint from a base URL, keeping a route prefix', () => {
    expect(alertmanagerAlertsUrl('http://am:9093')).toBe('http://am:9093/api/v2/alerts');
    expect(alertmanagerAlertsUrl('http://am:9093/prefix/')).toBe('http://am:9093/prefix/api/v2/alerts');
    expect(alertmanagerAlertsUrl('http://am:9093/api/v2/alerts')).toBe('http://am:9093/api/v2/alerts');
  });

  it('turns basicAuth and bearerToken into an Authorization header and rejects mixed or misplaced settings', () => {
    const [basic] = parseReceivers([{ name: 'am', type: 'alertmanager', url: 'http://am:9093', basicAuth: { username: 'u', password: 'pass:word' } }]);
    expect(basic?.headers['Authorization']).toBe(`Basic ${Buffer.from('u:pass:word').toString('base64')}`);
    expect(basic?.resendIntervalMs).toBe(60_000);
    const [bearer] = parseReceivers([{ name: 'am', type: 'alertmanager', url: 'http://am:9093', bearerToken: 'tok-1234567890abcd' }]);
    expect(bearer?.headers['Authorization']).toBe('Bearer tok-1234567890abcd');
    expect(alertingSecrets([basic!, bearer!], {})).toEqual(expect.arrayContaining(['pass:word', 'tok-1234567890abcd']));
    const printed = JSON.stringify(redactReceivers([{ name: 'a', type: 'alertmanager', url: 'http://am:9093', basicAuth: { username: 'u', password: 'pass:word' } }, { name: 'b', type: 'alertmanager', url: 'http://am:9093', bearerToken: 'tok-1234567890abcd' }]));
    expect(printed).not.toContain('pass:word');
    expect(printed).not.toContain('tok-1234567890abcd');
    expect(printed).toContain('"username":"u"');
    expect(() => parseReceivers([{ name: 'am', type: 'alertmanager', url: 'http://am:9093', bearerToken: 'x', basicAuth: { username: 'u', password: 'p' } }])).toThrow(/basicAuth or bearerToken, not both/);
    expect(() => parseReceivers([{ name: 'w', type: 'webhook', url: 'http://x', resendInterval: '1m' }])).toThrow(/resendInterval: only for type alertmanager/);
    expect(() => parseReceivers([{ name: 'w', type: 'pagerduty', url: 'http://x' }])).toThrow(/type: expected webhook, slack, alertmanager/);
    // The files are read when alerting starts (net/tls.ts), named by the receiver's settings.
    expect(parseReceivers([{ name: 'am', type: 'alertmanager', url: 'https://am', tls: { caFile: '/nonexistent/ca.pem', reloadInterval: '5m' } }])[0]?.tls).toEqual({
      section: 'alerting.receivers[0].tls', caFile: '/nonexistent/ca.pem', certFile: '', keyFile: '', serverName: '', insecureSkipVerify: false, minVersion: '1.2', reloadIntervalMs: 300_000,
    });
    expect(() => parseReceivers([{ name: 'am', type: 'alertmanager', url: 'https://am', tls: { certFile: '/x' } }])).toThrow('alerting.receivers[0].tls.certFile and alerting.receivers[0].tls.keyFile go together');
    expect(() => parseReceivers([{ name: 'am', type: 'alertmanager', url: 'https://am', tls: { reloadInterval: '10ms' } }])).toThrow(/tls\.reloadInterval/);
    expect(() => parseReceivers([{ name: 'am', type: 'alertmanager', url: 'https://am', tls: { serverName: 'a b' } }])).toThrow('invalid value for alerting.receivers[0].tls.serverName');
    expect(parseReceivers([{ name: 'am', type: 'alertmanager', url: 'https://am', tls: { minVersion: '1.3' } }])[0]?.tls?.minVersion).toBe('1.3');
    expect(() => parseReceivers([{ name: 'am', type: 'alertmanager', url: 'https://am', tls: { minVersion: 1.1 } }])).toThrow('invalid value "1.1" for alerting.receivers[0].tls.minVersion: expected one of 1.2, 1.3');
    // tls beside an http:// URL would speak no TLS: refused as forward.tls.* is with an http:// forward.endpoint, the URL not shown.
    const plain = (tls: Record<string, unknown>): (() => unknown) => () => parseReceivers([{ name: 'w', type: 'webhook', url: 'http://hooks.example.com/T0/secret-path', tls }]);
    expect(plain({ caFile: '/etc/ca.pem' })).toThrow('alerting.receivers[0].tls.caFile is set but alerting.receivers[0].url is not an https:// URL, so no TLS is spoken with the receiver: write the url as https://host:port, or unset alerting.receivers[0].tls.*');
    expect(plain({ insecureSkipVerify: true })).toThrow(/^alerting\.receivers\[0\]\.tls\.insecureSkipVerify is set but alerting\.receivers\[0\]\.url is not an https:\/\/ URL/);
    expect(plain({ minVersion: 1.3 })).toThrow(/^alerting\.receivers\[0\]\.tls\.minVersion is set but/);
    expect(plain({})).toThrow(/^alerting\.receivers\[0\]\.tls is set but/);
    expect(plain({ caFile: '/etc/ca.pem' })).not.toThrow(/secret-path/);
    const pasted = '-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n';
    expect(() => parseReceivers([{ name: 'am', type: 'alertmanager', url: 'https://am', tls: { certFile: '/x', keyFile: pasted } }])).toThrow('alerting.receivers[0].tls.keyFile: expected the path of a file, not its contents');
    expect(() => parseReceivers([{ name: 'am', type: 'alertmanager', url: 'https://am', tls: { certFile: '/x', keyFile: pasted } }])).not.toThrow(/MIGHAgEA/);
  });
});

describe('receiver tls', () => {
  it('trusts the configured CA (and only with it), over a real TLS connection', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-tls-'));
    const gen = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=alertmanager.test',
      '-addext', 'subjectAltName=DNS:alertmanager.test,IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { encoding: 'utf8' });
    expect(gen.status, gen.stderr).toBe(0);
    const seen: string[] = [];
    const server = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (req, res) => {
      seen.push(String(req.headers['authorization']));
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
      const send = (tls: unknown): ReturnType<typeof sendWithRetry> => {
        const [r] = parseReceivers([{ name: 'am', type: 'alertmanager', url, bearerToken: 'tok-abcdef-0123456', ...(tls ? { tls } : {}) }]);
        return sendWithRetry(() => ({ body: '[]', headers: r!.headers }), { url: r!.url, timeoutMs: 5000, deadlineMs: Date.now() + 5000, maxAttempts: 1, tls: r!.tls ? ClientTlsCredentials.open(r!.tls, silentLogger) : null });
      };
      expect((await send(null)).outcome).toBe('failed');
      expect(await send({ caFile: join(dir, 'cert.pem') })).toMatchObject({ outcome: 'delivered', httpStatus: 200 });
      expect((await send({ caFile: join(dir, 'cert.pem'), serverName: 'other.test' })).outcome).toBe('failed');
      expect((await send({ insecureSkipVerify: true })).outcome).toBe('delivered');
      expect(seen).toEqual(['Bearer tok-abcdef-0123456', 'Bearer tok-abcdef-0123456']);
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
