/**
 * An alert on a hook that `hookwatch guard` trims says so, driven as users drive it: the guard's report sent by its
 * own OTLP exporter, hook events over OTLP that raise a `headroom` alert, the notification at a real webhook
 * receiver and the alert as the alerts API lists it. What guard trimmed is read once, as the alert becomes
 * active: the evaluations of the alert after that keep it, and read no more.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlertSummary, AlertsResponse } from '../../shared/src/api.ts';
import type { GuardTrimsResponse } from '../../shared/src/guard-trims.ts';
import { hookId } from '../src/hooks/extract.ts';
import type { AlertmanagerWebhookBody } from '../src/notify/alertmanager.ts';
import { startService, type RunningService } from '../src/service.ts';
import { silentLogger } from '../src/telemetry/logger.ts';
import { sendReport } from '../src/tools/guard/report-send.ts';
import { otlpHookBody, WebhookSink } from './support/alerting.ts';
import { configFromYaml } from './support/service.ts';
import { eventually, getJson, postOtlp, tempDir } from './helpers.ts';

const GUARDED = 'SessionStart:startup';
const PLAIN = 'PostToolUse:plain';

let service: RunningService;
let sink: WebhookSink;
let cleanup: () => void;
beforeAll(async () => {
  sink = new WebhookSink();
  await sink.start();
  const dir = tempDir('hookwatch-alert-guard-');
  cleanup = dir.cleanup;
  const yaml = JSON.stringify({ alerting: { rules: [{ kind: 'headroom', window: '1h' }], receivers: [{ name: 'ops', url: `${sink.url}/hook` }] } });
  service = await startService(configFromYaml(dir.dir, yaml), { logger: silentLogger });
});
afterAll(async () => {
  await service?.stop();
  await sink?.close();
  cleanup?.();
});

async function guardReport(trims: { sentChars: number; keptChars: number }[]): Promise<void> {
  await sendReport(`${service.otlpHttpUrl}/v1/logs`, { hookEvent: 'SessionStart', hookName: GUARDED, sessionId: 'guarded-1', trims: trims.map((t) => ({ field: 'stdout', ...t })) });
}

async function hookOutputs(records: { hookName: string; chars: number }[]): Promise<void> {
  const body = otlpHookBody(records.map((r, i) => ({ hookName: r.hookName, timeMs: Date.now(), outputsPersisted: 0, additionalContextChars: r.chars, sessionId: `s-${i}` })));
  expect((await postOtlp(service.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
}

const listed = async (hookName: string): Promise<AlertSummary | undefined> =>
  (await getJson<AlertsResponse>(service.httpUrl, '/api/v1/alerts')).body.alerts.find((a) => a.labels['hook_name'] === hookName);

describe('alerts on a guarded hook', () => {
  it('say what guard trimmed of the hook, in the notification and the alerts API; alerts of other hooks say nothing of it', async () => {
    await guardReport([{ sentChars: 14_200, keptChars: 9_500 }, { sentChars: 11_000, keptChars: 9_500 }]);
    const trims = await eventually('the guard trims stored', async () => {
      const r = (await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${hookId('SessionStart', GUARDED)}/guard-trims?from=now-1h`)).body;
      return r.trims === 2 ? r : undefined;
    });
    expect(trims.largest?.sentChars).toBe(14_200);

    await hookOutputs([{ hookName: GUARDED, chars: 9_000 }, { hookName: PLAIN, chars: 9_000 }]);
    await sink.waitFor(2, 10_000);
    const notified = sink.bodies<AlertmanagerWebhookBody>().flatMap((b) => b.alerts);
    const guarded = notified.find((a) => a.labels['hook_name'] === GUARDED);
    const plain = notified.find((a) => a.labels['hook_name'] === PLAIN);
    expect(guarded?.annotations).toMatchObject({ guard_trims: '2', guard_largest_output: '14200', largest_output: '9060' });
    expect(guarded?.annotations['guard']).toBe('`hookwatch guard` already trims this hook: 2 outputs trimmed in the 1h before the alert became active; the largest was 14,200 characters (stdout), 9,500 delivered.');
    expect(plain).toBeDefined();
    expect(Object.keys(plain?.annotations ?? {}).filter((k) => k.startsWith('guard'))).toEqual([]);

    const api = await listed(GUARDED);
    expect(api?.state).toBe('firing');
    expect(api?.annotations).toMatchObject({ guard: guarded?.annotations['guard'], guard_trims: '2', guard_largest_output: '14200' });
    expect(Object.keys((await listed(PLAIN))?.annotations ?? {}).filter((k) => k.startsWith('guard'))).toEqual([]);
  });

  it('keeps what it read as the alert became active while the alert stays active, however much the guard trims meanwhile', async () => {
    await guardReport([{ sentChars: 30_000, keptChars: 9_500 }]);
    await eventually('the third guard trim stored', async () => {
      const r = (await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${hookId('SessionStart', GUARDED)}/guard-trims?from=now-1h`)).body;
      return r.trims === 3 ? r : undefined;
    });
    // A larger output (9,660 characters of stdout): the alert's own annotations follow it at the evaluation this ingest runs.
    await hookOutputs([{ hookName: GUARDED, chars: 9_600 }]);
    const api = await eventually('the alert evaluated again', async () => {
      const a = await listed(GUARDED);
      return a?.annotations['largest_output'] === '9660' ? a : undefined;
    });
    expect(api.annotations).toMatchObject({ guard_trims: '2', guard_largest_output: '14200' });
  });
});
