/**
 * Evaluations on ingest under a sustained stream, driven as clients drive them: OTLP/HTTP batches posted back to
 * back to a real server by a few clients at once, each carrying a persisted output, the notifications at a real
 * webhook receiver and the evaluations counted on /metrics. The first batch after a quiet spell is evaluated at once; while batches keep
 * coming the evaluations start INGEST_SPACING_MS apart at least, each reading every rule the batches since the last
 * one triggered: an alert a batch makes true mid-stream, or the stream's last batch, fires within a second.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AlertsResponse } from '../../shared/src/api.ts';
import { INGEST_SPACING_MS } from '../src/alerting/engine.ts';
import type { AlertmanagerWebhookBody } from '../src/notify/alertmanager.ts';
import { otlpHookBody, WebhookSink } from './support/alerting.ts';
import { sampleValue, scrapeMetrics } from './support/prometheus-text.ts';
import { eventually, getJson, postOtlp, startTestService, type TestService } from './helpers.ts';

/** How long the stream lasts. */
const STREAM_MS = 2_000;
/** Clients posting back to back at once: many batches per spacing interval even when each post waits on a loaded disk. */
const CLIENTS = 4;

let service: TestService;
let sink: WebhookSink;
beforeAll(async () => {
  sink = new WebhookSink();
  await sink.start();
  // The timer's evaluations (every rule, each 10 minutes here) do not run during the stream: every one counted is on ingest.
  const yaml = JSON.stringify({ alerting: { evaluationInterval: '10m', rules: [{ kind: 'persisted', window: '1h' }], receivers: [{ name: 'ops', url: `${sink.url}/hook` }] } });
  service = await startTestService({}, { yaml });
});
afterAll(async () => {
  await service?.close();
  await sink?.close();
});

/** hookwatch_alert_evaluations_total on /metrics. */
async function evaluations(): Promise<number> {
  const value = sampleValue((await scrapeMetrics(service.httpUrl)).families, 'hookwatch_alert_evaluations_total');
  expect(value).toBeDefined();
  return value as number;
}

async function postPersisted(hookName: string): Promise<void> {
  const body = otlpHookBody([{ hookName, timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000 }]);
  expect((await postOtlp(service.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
}

/** When the webhook received the firing of the alert of `hookName`, by the receiver's clock; undefined before. */
function firedAt(hookName: string): number | undefined {
  return sink.delivered().find((r) => (JSON.parse(r.body) as AlertmanagerWebhookBody).alerts.some((a) => a.status === 'firing' && a.labels['hook_name'] === hookName))?.at;
}

it('evaluates a sustained stream at most once per spacing interval, and what it makes true mid-stream or at its end fires within a second', { timeout: 60_000 }, async () => {
  // The evaluation at the start is done, and a first batch after the quiet spell is notified at once.
  await postPersisted('PostToolUse:stream');
  await eventually('the stream hook\'s alert', async () => firedAt('PostToolUse:stream'), 5_000);
  await new Promise((r) => setTimeout(r, INGEST_SPACING_MS));
  const before = await evaluations();

  // Back to back from each client, each batch a persisted output of the hook whose alert fires already: each
  // triggers the rule. One batch halfway through makes another alert true.
  const started = performance.now();
  let batches = 0;
  let midstream: number | undefined;
  const client = async (): Promise<void> => {
    while (performance.now() - started < STREAM_MS) {
      if (midstream === undefined && performance.now() - started >= STREAM_MS / 2) {
        // From its acknowledgement (the commit): the post itself queues behind the other clients' fsynced batches.
        midstream = 0;
        await postPersisted('UserPromptSubmit:midstream');
        midstream = Date.now();
      } else {
        await postPersisted('PostToolUse:stream');
      }
      batches++;
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, client));
  // The last batch of the stream makes another alert true: the evaluation after the stream reads it.
  await postPersisted('Stop:last');
  const last = Date.now();
  batches++;
  const streamMs = performance.now() - started;
  expect(midstream).toBeDefined();
  const mid = await eventually('the mid-stream alert', async () => firedAt('UserPromptSubmit:midstream'), 5_000);
  expect(mid - (midstream as number)).toBeLessThan(1000);
  const end = await eventually('the alert of the last batch', async () => firedAt('Stop:last'), 5_000);
  expect(end - last).toBeLessThan(1000);
  await new Promise((r) => setTimeout(r, INGEST_SPACING_MS));

  // Each evaluation counted started after `before` was read, INGEST_SPACING_MS after the one before at least: those
  // that started during the stream, and one at most after it (the batches since the last start, read at the next).
  // Nothing else runs meanwhile (no batch, the timer's every 10 minutes).
  const ran = (await evaluations()) - before;
  const bound = Math.floor(streamMs / INGEST_SPACING_MS) + 2;
  // The stream gave the spacing something to hold: more than two batches per evaluation it allows.
  expect(batches).toBeGreaterThan(2 * bound);
  expect(ran).toBeGreaterThanOrEqual(2);
  expect(ran).toBeLessThanOrEqual(bound);
  const firing = (await getJson<AlertsResponse>(service.httpUrl, '/api/v1/alerts?state=firing')).body.alerts.map((a) => a.labels['hook_name']);
  expect(firing.sort()).toEqual(['PostToolUse:stream', 'Stop:last', 'UserPromptSubmit:midstream']);
  // Each alert notified once: the evaluations of the stream found the stream hook's firing already.
  expect(sink.delivered()).toHaveLength(3);
});
