/**
 * An alert on a hook that `hookwatch guard` trims says so, driven as users drive it: the guard's report sent by its
 * own OTLP exporter, hook events over OTLP that raise a `headroom` or `persisted` alert, the notification at a real
 * webhook receiver and the alert as the alerts API lists it. What guard trimmed is read as the alert becomes
 * active, and again when guard trims of its hook are stored while it is active (a report that arrives after the
 * hook event, a guard installed while the alert fires): never by the evaluations of the alert, and never notified
 * by itself.
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
/** Its trim report arrives after the hook event that raises its alert. */
const RACED = 'UserPromptSubmit:raced';
/** Wrapped with guard while its `persisted` alert fires. */
const FIXED = 'PreToolUse:fixed';

let service: RunningService;
let sink: WebhookSink;
let cleanup: () => void;
beforeAll(async () => {
  sink = new WebhookSink();
  await sink.start();
  const dir = tempDir('hookwatch-alert-guard-');
  cleanup = dir.cleanup;
  const yaml = JSON.stringify({ alerting: { rules: [{ kind: 'headroom', window: '1h' }, { kind: 'persisted', window: '1h' }], receivers: [{ name: 'ops', url: `${sink.url}/hook` }] } });
  service = await startService(configFromYaml(dir.dir, yaml), { logger: silentLogger });
});
afterAll(async () => {
  await service?.stop();
  await sink?.close();
  cleanup?.();
});

async function guardReport(trims: { sentChars: number; keptChars: number }[], hookName = GUARDED): Promise<void> {
  await sendReport(`${service.otlpHttpUrl}/v1/logs`, { hookEvent: hookName.split(':')[0] as string, hookName, sessionId: 'guarded-1', trims: trims.map((t) => ({ field: 'stdout', ...t })) });
}

async function hookOutputs(records: { hookName: string; chars: number; outputsPersisted?: number }[]): Promise<void> {
  const body = otlpHookBody(records.map((r, i) => ({ hookName: r.hookName, timeMs: Date.now(), outputsPersisted: r.outputsPersisted ?? 0, additionalContextChars: r.chars, sessionId: `s-${i}` })));
  expect((await postOtlp(service.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
}

const listed = async (hookName: string): Promise<AlertSummary | undefined> =>
  (await getJson<AlertsResponse>(service.httpUrl, '/api/v1/alerts')).body.alerts.find((a) => a.labels['hook_name'] === hookName);

const guardKeys = (annotations: Record<string, string> | undefined): string[] => Object.keys(annotations ?? {}).filter((k) => k.startsWith('guard'));

/** The notifications delivered so far, per hook name. */
function notifiedPerHook(): Map<string, number> {
  const out = new Map<string, number>();
  for (const a of sink.bodies<AlertmanagerWebhookBody>().flatMap((b) => b.alerts)) out.set(a.labels['hook_name'] ?? '', (out.get(a.labels['hook_name'] ?? '') ?? 0) + 1);
  return out;
}

/** Waits for an alert's notification and returns its annotations. */
async function notifiedAnnotations(hookName: string): Promise<Record<string, string>> {
  return eventually(`the notification of ${hookName}`, async () => sink.bodies<AlertmanagerWebhookBody>().flatMap((b) => b.alerts).find((a) => a.labels['hook_name'] === hookName)?.annotations);
}

/** The guard annotations of a hook's alert in the alerts API once it counts `trims` trims. */
async function guardNoted(hookName: string, trims: string): Promise<AlertSummary> {
  return eventually(`the guard annotations of ${hookName}`, async () => {
    const a = await listed(hookName);
    return a?.annotations['guard_trims'] === trims ? a : undefined;
  });
}

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
    expect(guardKeys(plain?.annotations)).toEqual([]);

    const api = await listed(GUARDED);
    expect(api?.state).toBe('firing');
    expect(api?.annotations).toMatchObject({ guard: guarded?.annotations['guard'], guard_trims: '2', guard_largest_output: '14200' });
    expect(guardKeys((await listed(PLAIN))?.annotations)).toEqual([]);
  });

  it('reads the trims again when more are stored while the alert is active, and the evaluations after that keep what it read', async () => {
    await guardReport([{ sentChars: 30_000, keptChars: 9_500 }]);
    const api = await guardNoted(GUARDED, '3');
    expect(api.annotations).toMatchObject({ guard_largest_output: '30000', largest_output: '9060' });
    expect(api.annotations['guard']).toBe('`hookwatch guard` already trims this hook: 3 outputs trimmed in the 1h before the alert became active and since; the largest was 30,000 characters (stdout), 9,500 delivered.');
    // A larger output (9,660 characters of stdout): the alert's own annotations follow it at the evaluation this ingest runs.
    await hookOutputs([{ hookName: GUARDED, chars: 9_600 }]);
    const evaluated = await eventually('the alert evaluated again', async () => {
      const a = await listed(GUARDED);
      return a?.annotations['largest_output'] === '9660' ? a : undefined;
    });
    expect(evaluated.annotations).toMatchObject({ guard: api.annotations['guard'], guard_trims: '3', guard_largest_output: '30000' });
  });

  it('a trim report stored after the hook event that raised the alert: the alert takes the guard annotations', async () => {
    // Claude Code exports the hook event on its own interval, the guard right after the output: either comes first.
    await hookOutputs([{ hookName: RACED, chars: 9_200 }]);
    expect(guardKeys(await notifiedAnnotations(RACED))).toEqual([]);
    await guardReport([{ sentChars: 12_000, keptChars: 9_500 }], RACED);
    const api = await guardNoted(RACED, '1');
    expect(api.state).toBe('firing');
    expect(api.annotations).toMatchObject({ guard_largest_output: '12000', largest_output: '9260' });
    expect(api.annotations['guard']).toBe('`hookwatch guard` already trims this hook: 1 output trimmed in the 1h before the alert became active and since; the largest was 12,000 characters (stdout), 9,500 delivered.');
  });

  it('a hook wrapped with guard while its persisted alert fires: the alert takes the guard annotations, counting each report', async () => {
    await hookOutputs([{ hookName: FIXED, chars: 24_000, outputsPersisted: 1 }]);
    expect(guardKeys(await notifiedAnnotations(FIXED))).toEqual([]);
    await guardReport([{ sentChars: 24_060, keptChars: 9_500 }], FIXED);
    await guardNoted(FIXED, '1');
    await guardReport([{ sentChars: 25_000, keptChars: 9_500 }], FIXED);
    const api = await guardNoted(FIXED, '2');
    expect(api.labels['alertname']).toBe('persisted');
    expect(api.annotations).toMatchObject({ guard_largest_output: '25000', outputs_persisted: '1' });
  });

  it('notifies nothing for the guard annotations it adds: they go out with the alert\'s next notification', async () => {
    // A new alert after every change above: its notification comes after any the changes would have sent.
    await hookOutputs([{ hookName: 'Stop:marker', chars: 9_000 }]);
    await notifiedAnnotations('Stop:marker');
    expect(Object.fromEntries(notifiedPerHook())).toEqual({ [GUARDED]: 1, [PLAIN]: 1, [RACED]: 1, [FIXED]: 1, 'Stop:marker': 1 });
  });
});
