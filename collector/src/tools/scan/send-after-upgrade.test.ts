/**
 * `scan --send` of transcripts the previous release already sent: the outputs it stored under the ids it gave them
 * are counted once, on both stores.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import type { TranscriptCommandsResponse } from '../../../../shared/src/transcript-api.ts';
import { getJson, postOtlp, startTestService, type TestService } from '../../../test/helpers.ts';
import { captureIO } from '../../../test/support/capture-io.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { hookId } from '../../hooks/extract.ts';
import { runScan } from './index.ts';

const PROJECTS = fileURLToPath(new URL('../../../testdata/claude-code-2.1.332/transcripts-a/projects/', import.meta.url));
/** What the previous release's `scan --send` posted for PROJECTS (see the folder's README). */
const PREVIOUS_RELEASE_SEND = readFileSync(new URL('../../../testdata/scan-send-previous-release/transcripts-a.logs.json', import.meta.url));
/** Just after the fixture sessions (2026-11-30T23:19Z). */
const NOW = Date.parse('2026-12-01T00:00:00Z');
const RANGE = 'from=now-7d';
const HOOKS = [
  ['SessionStart', 'SessionStart:startup'],
  ['UserPromptSubmit', 'UserPromptSubmit'],
  ['PreToolUse', 'PreToolUse:Bash'],
  ['PostToolUse', 'PostToolUse:Bash'],
  ['Stop', 'Stop'],
] as const;

const pg = useTestServer();

const backends: { name: string; db: () => Promise<Record<string, string>> }[] = [
  { name: 'sqlite', db: async () => ({}) },
  { name: 'postgres', db: async () => ({ HOOKWATCH_DB: await pg.server().createDatabase() }) },
];

/** Each hook's "Commands" rows, as the API gives them. */
async function commands(service: TestService): Promise<Record<string, TranscriptCommandsResponse['commands']>> {
  const out: Record<string, TranscriptCommandsResponse['commands']> = {};
  for (const [event, name] of HOOKS) {
    out[name] = (await getJson<TranscriptCommandsResponse>(service.httpUrl, `/api/v1/hooks/${hookId(event, name)}/commands?${RANGE}`)).body.commands;
  }
  return out;
}

describe.each(backends)('scan --send after an upgrade, on $name', (backend) => {
  it('counts once the outputs the previous release stored under its ids when the same transcripts are sent again', async () => {
    const service = await startTestService(await backend.db(), { now: () => NOW });
    try {
      expect((await postOtlp(service.otlpHttpUrl, '/v1/logs', PREVIOUS_RELEASE_SEND, { 'content-type': 'application/json' })).status).toBe(200);
      const stored = service.ingest.stats.transcriptFindings;
      expect(stored).toBe(28);
      const before = await commands(service);
      const short = (rows: TranscriptCommandsResponse['commands']): unknown[] =>
        rows.map((c) => [c.command.replace(/^.*emit\.js /, ''), c.runs, c.outputs, c.delivered, c.persisted, c.unconfirmed]);
      expect(short(before['SessionStart:startup']!)).toEqual([
        ['ctx 12000', 2, 2, 0, 2, 0],
        ['plain 10001', 2, 2, 0, 2, 0],
        ['ctx 10000', 2, 2, 2, 0, 0],
      ]);
      expect(short(before['PostToolUse:Bash']!)).toEqual([['ctx 10500', 2, 2, 0, 2, 0]]);

      const captured = captureIO(service.dir, { ...process.env });
      expect(await runScan(['--json', '--send', service.otlpHttpUrl, PROJECTS], captured.io)).toBe(1);
      const sent = (JSON.parse(captured.stdout()) as { send: { emitted: number; exported: number; failed: number } }).send;
      expect(sent).toMatchObject({ emitted: 28, exported: 28, failed: 0 });

      expect(await commands(service)).toEqual(before);
      expect(service.ingest.stats.transcriptFindings).toBe(stored);
      expect(service.ingest.stats.transcriptFindingDuplicates).toBe(28);
    } finally {
      await service.close();
    }
  }, 60_000);
});
