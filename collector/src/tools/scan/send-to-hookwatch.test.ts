/** `scan --send` against a running hookwatch: findings are stored once however often they are sent, apart from telemetry. */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import type { HooksResponse } from '../../../../shared/src/api.ts';
import type { TranscriptCommandsResponse } from '../../../../shared/src/transcript-api.ts';
import { fixtureRequests, getJson, postOtlp, startTestService, type TestService } from '../../../test/helpers.ts';
import { hookId } from '../../hooks/extract.ts';
import { captureIO } from '../../../test/support/capture-io.ts';
import { runScan } from './index.ts';

const PROJECTS = fileURLToPath(new URL('../../../testdata/claude-code-2.1.332/transcripts-a/projects/', import.meta.url));
/** Just after the fixture sessions (2026-11-30T23:19Z). */
const NOW = Date.parse('2026-12-01T00:00:00Z');
const RANGE = 'from=now-7d';

interface ScanSummary {
  hooks: { hookName: string; hookEvent: string; commands: { command: string; runs: number; outputs: number; delivered: number; outputsPersisted: number; largestOutputChars: number | null; largestDeliveredChars: number | null }[] }[];
  send: { emitted: number; exported: number; failed: number; error?: string };
}

let service: TestService;
beforeAll(async () => {
  service = await startTestService({}, { now: () => NOW });
});
afterAll(async () => {
  await service.close();
});

async function send(): Promise<{ code: number; result: ScanSummary }> {
  const captured = captureIO(service.dir, { ...process.env });
  const code = await runScan(['--json', '--send', service.otlpHttpUrl, PROJECTS], captured.io);
  return { code, result: JSON.parse(captured.stdout()) as ScanSummary };
}

const commandsOf = async (hookEvent: string, hookName: string): Promise<TranscriptCommandsResponse> =>
  (await getJson<TranscriptCommandsResponse>(service.httpUrl, `/api/v1/hooks/${hookId(hookEvent, hookName)}/commands?${RANGE}`)).body;

describe('scan --send to hookwatch', () => {
  it('shows the counts once when the same transcripts are sent twice, and leaves telemetry figures alone', async () => {
    // Telemetry of a real session first, to see that transcript findings never add to it.
    for (const request of fixtureRequests('run5-mockapi-tools-httpjson').filter((r) => r.path === '/v1/logs')) {
      expect((await postOtlp(service.otlpHttpUrl, request.path, request.body, { 'content-type': request.contentType })).status).toBe(200);
    }
    const telemetryBefore = (await getJson<HooksResponse>(service.httpUrl, `/api/v1/hooks?${RANGE}`)).body.hooks;
    expect(telemetryBefore.length).toBeGreaterThan(0);

    const first = await send();
    expect(first.code).toBe(1);
    expect(first.result.send.failed).toBe(0);
    expect(first.result.send.exported).toBe(first.result.send.emitted);
    const afterFirst = await commandsOf('SessionStart', 'SessionStart:startup');

    const second = await send();
    expect(second.result.send.exported).toBe(first.result.send.emitted);
    expect(service.ingest.stats.transcriptFindings).toBe(first.result.send.emitted);
    expect(service.ingest.stats.transcriptFindingDuplicates).toBe(first.result.send.emitted);

    const afterSecond = await commandsOf('SessionStart', 'SessionStart:startup');
    expect(afterSecond).toEqual(afterFirst);
    expect(afterSecond.source).toBe('transcript');
    // What the server shows per command is what scan found, counted once.
    const scanned = first.result.hooks.find((h) => h.hookName === 'SessionStart:startup')?.commands ?? [];
    expect(afterSecond.commands.map((c) => [c.command, c.runs, c.outputs, c.delivered, c.persisted, c.largestOutputChars, c.largestDeliveredChars]).sort()).toEqual(
      scanned.map((c) => [c.command, c.runs, c.outputs, c.delivered, c.outputsPersisted, c.largestOutputChars, c.largestDeliveredChars]).sort(),
    );
    expect(afterSecond.commands.map((c) => [c.command.replace(/^.*emit\.js /, ''), c.runs, c.persisted, c.largestOutputChars])).toEqual([
      ['ctx 12000', 2, 2, 12_000],
      ['plain 10001', 2, 2, 10_001],
      ['ctx 10000', 2, 0, 10_000],
    ]);
    expect((await commandsOf('UserPromptSubmit', 'UserPromptSubmit')).commands).toEqual([
      { command: '', runs: 2, outputs: 2, delivered: 0, persisted: 2, unconfirmed: 0, largestOutputChars: 10_001, largestDeliveredChars: null, sessions: 2 },
    ]);

    // Telemetry's figures are exactly what they were: transcript findings are not hook_execution_complete events.
    expect((await getJson<HooksResponse>(service.httpUrl, `/api/v1/hooks?${RANGE}`)).body.hooks).toEqual(telemetryBefore);
  });

  it('shows the final outcomes once when a transcript sent while it was being written is sent again complete', async () => {
    const own = await startTestService({}, { now: () => NOW });
    const session = '229cfef5-26c4-44fa-86e5-e4dea73819d9';
    const whole = await readFile(join(PROJECTS, '-home-dev-proj', `${session}.jsonl`), 'utf8');
    const file = join(own.dir, 'projects', 'p', `${session}.jsonl`);
    const sendNow = async (text: string): Promise<void> => {
      await writeFile(file, text);
      const captured = captureIO(own.dir, { ...process.env });
      await runScan(['--send', own.otlpHttpUrl, file], captured.io);
      expect(captured.stdout()).toMatch(/^Sent \d+ findings/m);
    };
    try {
      await mkdir(join(own.dir, 'projects', 'p'), { recursive: true });
      // Sent while Claude Code was writing: the SessionStart commands have run, the record delivering their
      // JSON output is half written, so their outputs are unconfirmed.
      const lines = whole.split('\n');
      await sendNow(`${lines.slice(0, 5).join('\n')}\n${lines[5]!.slice(0, 5_000)}`);
      const early = (await getJson<TranscriptCommandsResponse>(own.httpUrl, `/api/v1/hooks/${hookId('SessionStart', 'SessionStart:startup')}/commands?${RANGE}`)).body;
      expect(early.commands.reduce((n, c) => n + c.unconfirmed, 0)).toBe(2);
      await sendNow(whole);
      const final = (await getJson<TranscriptCommandsResponse>(own.httpUrl, `/api/v1/hooks/${hookId('SessionStart', 'SessionStart:startup')}/commands?${RANGE}`)).body;
      expect(final.commands.map((c) => [c.command.replace(/^.*emit\.js /, ''), c.runs, c.outputs, c.delivered, c.persisted, c.unconfirmed])).toEqual([
        ['ctx 12000', 1, 1, 0, 1, 0],
        ['plain 10001', 1, 1, 0, 1, 0],
        ['ctx 10000', 1, 1, 1, 0, 0],
      ]);
    } finally {
      await own.close();
    }
  });

  it('sends the OTEL_EXPORTER_OTLP_HEADERS of its environment, so a hookwatch with an ingest token takes the findings', async () => {
    const token = 'scan-send-token-0123456789';
    const guarded = await startTestService({ HOOKWATCH_INGEST_TOKEN: token }, { now: () => NOW });
    const scan = async (): Promise<{ code: number; result: ScanSummary }> => {
      const captured = captureIO(guarded.dir, { ...process.env });
      const code = await runScan(['--json', '--send', guarded.otlpHttpUrl, PROJECTS], captured.io);
      return { code, result: JSON.parse(captured.stdout()) as ScanSummary };
    };
    try {
      // Without the header the server refuses them: the scan says so with exit 3.
      vi.stubEnv('OTEL_EXPORTER_OTLP_HEADERS', '');
      const refused = await scan();
      expect(refused.code).toBe(3);
      expect(refused.result.send.exported).toBe(0);
      // The answer's own message, and the setting that carries the token, not only "Unauthorized".
      expect(refused.result.send.error).toContain('401 Unauthorized: missing or wrong bearer token');
      expect(refused.result.send.error).toContain('OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer <token>"');
      expect(refused.result.send.error).not.toContain(token);
      vi.stubEnv('OTEL_EXPORTER_OTLP_HEADERS', `Authorization=Bearer ${token}`);
      const accepted = await scan();
      expect(accepted.code).toBe(1);
      expect(accepted.result.send.failed).toBe(0);
      expect(accepted.result.send.exported).toBe(accepted.result.send.emitted);
      expect(guarded.ingest.stats.transcriptFindings).toBe(accepted.result.send.emitted);
    } finally {
      vi.unstubAllEnvs();
      await guarded.close();
    }
  });

  it('sent to the API port, says what the server answered: where OTLP goes', async () => {
    const captured = captureIO(service.dir, { ...process.env });
    const code = await runScan(['--send', service.httpUrl, PROJECTS], captured.io);
    expect(code).toBe(3);
    const port = new URL(service.otlpHttpUrl).port;
    expect(captured.stdout()).toContain(`/v1/logs failed: 404 Not Found: POST /v1/logs: this port serves the API and dashboard; OTLP goes to the OTLP/HTTP port, ${port}`);
  });

  it('sent to the gRPC port, says that the server does not speak HTTP/1.1 and which port --send takes', async () => {
    const captured = captureIO(service.dir, { ...process.env });
    const code = await runScan(['--send', service.otlpGrpcUrl, PROJECTS], captured.io);
    expect(code).toBe(3);
    expect(captured.stdout()).toContain(`Sending to ${service.otlpGrpcUrl}/v1/logs failed: Parse Error: Expected HTTP/, RTSP/ or ICE/ (the server did not answer in HTTP/1.1: an OTLP/gRPC port? --send takes the OTLP/HTTP port, 4318 by default) (0 of `);
  });

  it('refuses a finding without an id, naming the problem', async () => {
    const record = { attributes: [['event.name', 'hookwatch.transcript_finding'], ['hookwatch.finding.kind', 'run'], ['hook_event', 'Stop']].map(([key, v]) => ({ key, value: { stringValue: v } })) };
    const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [record] }] }] }), { 'content-type': 'application/json' });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString('utf8'))).toMatchObject({ partialSuccess: { rejectedLogRecords: '1', errorMessage: expect.stringContaining('hookwatch.finding.id is missing') } });
  });
});
