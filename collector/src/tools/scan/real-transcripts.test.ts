import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { OUTPUT_CAP_CHARS } from '../../../../shared/src/cliff.ts';
import { captureIO } from '../../../test/support/capture-io.ts';
import { runScan } from './index.ts';
import type { DeliveryCounts } from './transcript.ts';

/** Transcripts the real Claude Code 2.1.332 wrote, with the telemetry the same sessions exported. */
const TESTDATA = fileURLToPath(new URL('../../../testdata/claude-code-2.1.332/', import.meta.url));
const FIXTURES = ['transcripts-a', 'transcripts-b'];
const FIXTURE = join(TESTDATA, 'transcripts-a');
const PROJECT = join(FIXTURE, 'projects', '-home-dev-proj');
const SESSION_A = '229cfef5-26c4-44fa-86e5-e4dea73819d9';

type Counts = DeliveryCounts;
interface ScanOutput {
  totals: Counts & { records: number; duplicateRecords: number; requestCopies: number; skippedRecordTypes: Record<string, number> };
  hooks: (Counts & { hookName: string; hookEvent: string; commands: (Counts & { command: string })[] })[];
  sessions: (Counts & { sessionId: string; hooks: (Counts & { hookName: string })[] })[];
}
interface TelemetryHooks {
  hooks: { hookName: string; success: number; outputsPersisted: number }[];
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hookwatch-real-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function scan(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const captured = captureIO(dir, { ...process.env });
  const code = await runScan(argv, captured.io);
  return { code, out: captured.stdout(), err: captured.stderr() };
}

async function scanJson(path: string): Promise<{ code: number; result: ScanOutput }> {
  const { code, out } = await scan(['--json', path]);
  return { code, result: JSON.parse(out) as ScanOutput };
}

/** Every count row of a scan: hooks, their commands, sessions and their hooks. */
function allRows(result: ScanOutput): Counts[] {
  return [result.totals, ...result.hooks, ...result.hooks.flatMap((h) => h.commands), ...result.sessions, ...result.sessions.flatMap((s) => s.hooks)];
}

const command = (mode: string, n: number): string => `node "$CLAUDE_PROJECT_DIR"/.claude/hooks/emit.js ${mode} ${n}`;

describe('scan on real Claude Code 2.1.332 transcripts', () => {
  describe.each(FIXTURES)('%s', (name) => {
    const fixture = join(TESTDATA, name);

    it('agrees with the telemetry of the same sessions, per hook name', async () => {
      const telemetry = JSON.parse(await readFile(join(fixture, 'telemetry-hooks.json'), 'utf8')) as TelemetryHooks;
      const { code, result } = await scanJson(join(fixture, 'projects'));
      const persisted = (hooks: { hookName: string; outputsPersisted: number }[]): Record<string, number> =>
        Object.fromEntries(hooks.map((h) => [h.hookName, h.outputsPersisted]).sort());
      // Same hook names (SessionStart:startup, not the bare SessionStart; no "(unknown hook)"), same persisted counts.
      expect(persisted(result.hooks)).toEqual(persisted(telemetry.hooks));
      expect(result.totals.outputsPersisted).toBe(telemetry.hooks.reduce((sum, h) => sum + h.outputsPersisted, 0));
      // Commands run, including a UserPromptSubmit command with JSON output, which has no hook_success record in
      // 2.1.332: its delivery record shows it ran.
      for (const hook of telemetry.hooks) {
        expect(result.hooks.find((h) => h.hookName === hook.hookName)?.runs, hook.hookName).toBe(hook.success);
      }
      const runs = telemetry.hooks.reduce((sum, h) => sum + h.success, 0);
      expect(result.totals.runs).toBe(runs);
      expect(result.sessions.map((s) => s.runs)).toEqual([runs / 2, runs / 2]);
      expect(code).toBe(1);
    });

    // Claude Code writes the saved file's path unquoted to the end of the line: a home folder holding a space
    // (`C:\\Users\\John Smith`) must neither cut the path nor merge every output saved under it into one.
    it('agrees with the telemetry when the home folder holds a space', async () => {
      const telemetry = JSON.parse(await readFile(join(fixture, 'telemetry-hooks.json'), 'utf8')) as TelemetryHooks;
      const projects = join(dir, `${name}-spaced`);
      await cp(join(fixture, 'projects'), projects, { recursive: true });
      const project = join(projects, '-home-dev-proj');
      for (const file of (await readdir(project)).filter((f) => f.endsWith('.jsonl'))) {
        const text = await readFile(join(project, file), 'utf8');
        expect(text).toContain('/home/dev/home/');
        await writeFile(join(project, file), text.replaceAll('/home/dev/home/', '/home/John Smith/'));
      }
      const { result } = await scanJson(projects);
      expect(result.totals.outputsPersisted).toBe(telemetry.hooks.reduce((sum, h) => sum + h.outputsPersisted, 0));
      const { out } = await scan([projects]);
      expect(out).toContain('/home/John Smith/');
      expect(out).not.toMatch(/\/home\/John(?! Smith\/)/);
    });

    it('never reports a delivered output over the cap', async () => {
      const { result } = await scanJson(join(fixture, 'projects'));
      const delivered = allRows(result).map((row) => row.largestDeliveredChars ?? 0);
      expect(Math.max(...delivered)).toBeLessThanOrEqual(OUTPUT_CAP_CHARS);
      for (const row of allRows(result)) expect(row.delivered + row.outputsPersisted).toBe(row.outputs);
    });
  });

  it('tells the three SessionStart commands apart: 10,000 delivered, 10,001 plain persisted, 12,000 JSON persisted', async () => {
    const { result } = await scanJson(join(FIXTURE, 'projects'));
    const start = result.hooks.find((h) => h.hookName === 'SessionStart:startup');
    const rows = Object.fromEntries(
      (start?.commands ?? []).map((c) => [c.command, [c.runs, c.delivered, c.outputsPersisted, c.largestDeliveredChars, c.largestOutputChars]]),
    );
    expect(rows).toEqual({
      [command('ctx', 10000)]: [2, 2, 0, 10_000, 10_000],
      [command('plain', 10001)]: [2, 0, 2, null, 10_001],
      [command('ctx', 12000)]: [2, 0, 2, null, 12_000],
    });
    const post = result.hooks.find((h) => h.hookName === 'PostToolUse:Bash')?.commands;
    expect(post?.map((c) => [c.command, c.outputsPersisted, c.largestOutputChars])).toEqual([[`HOOK_EVENT=PostToolUse ${command('ctx', 10500)}`, 2, 10_500]]);
  });

  it('tells apart the commands of one tool event, and counts emoji in UTF-16 code units', async () => {
    const { result } = await scanJson(join(TESTDATA, 'transcripts-b', 'projects'));
    const rows = (hookName: string): unknown[] =>
      (result.hooks.find((h) => h.hookName === hookName)?.commands ?? []).map((c) => [c.command.replace(/^.*emit\.js /, ''), c.runs, c.delivered, c.outputsPersisted, c.largestOutputChars]);
    expect(rows('PostToolUse:Bash')).toEqual([['ctx 10500', 2, 0, 2, 10_500], ['ctx 3000', 2, 2, 0, 3_000]]);
    expect(rows('SessionStart:startup')).toEqual([['plain 20000', 2, 0, 2, 20_000], ['sysmsg 10001', 2, 0, 2, 10_001], ['ctx 9999', 2, 2, 0, 9_999]]);
    expect(rows('Stop')).toEqual([['emoji 5001', 2, 0, 2, 10_002]]);
    // The JSON command's run record is not in the transcript: its run and persisted output are counted, its command not guessed.
    expect(rows('UserPromptSubmit')).toEqual([['(command not recorded)', 2, 0, 2, 10_001], ['plain 500', 2, 2, 0, 500]]);
  });

  it('names the command in the text report', async () => {
    const { out } = await scan([join(FIXTURE, 'projects')]);
    expect(out).toMatch(/^ {2}SessionStart:startup +2 +2 +0 +2 +- +12,000 +node "\$CLAUDE_PROJECT_DIR"\/\.claude\/hooks\/emit\.js ctx 12000$/m);
    expect(out).toMatch(/^ {2}SessionStart:startup +2 +2 +2 +0 +10,000 +10,000 +node "\$CLAUDE_PROJECT_DIR"\/\.claude\/hooks\/emit\.js ctx 10000$/m);
    expect(out).not.toContain('(unknown hook)');
    expect(out).toMatch(/^FAIL: 8 hook outputs in 2 sessions were over/m);
  });

  it('fails a transcript cut off before the delivery record of an output over the cap by its size', async () => {
    // The session's first three records, then the start of the fourth: the 12,000-character JSON output ran, its
    // persisted-output record never made it to disk. Claude Code saves every string over the cap to a file.
    const lines = (await readFile(join(PROJECT, `${SESSION_A}.jsonl`), 'utf8')).split('\n');
    const cut = join(dir, 'cut-off', 'projects', 'p');
    await mkdir(cut, { recursive: true });
    await writeFile(join(cut, 'session.jsonl'), `${lines.slice(0, 3).join('\n')}\n${lines[3]!.slice(0, 3_000)}`);
    const { code, result } = await scanJson(join(dir, 'cut-off'));
    expect(result.totals).toMatchObject({ outputsPersisted: 0, unconfirmed: 1, unconfirmedOverCap: 1, largestOutputChars: 12_000 });
    expect((result as unknown as { ok: boolean }).ok).toBe(false);
    expect(code).toBe(1);
    const text = (await scan([join(dir, 'cut-off')])).out;
    expect(text).toContain('FAIL: 1 hook output in 1 session was over the 10,000-character cap');
    expect(text).toContain('known by size alone');
    expect(text).not.toContain('OK:');
  });

  it('never passes when hook records were skipped as too long', async () => {
    // At 2,000 bytes every record holding a persisted output is over the line limit; what is left was delivered.
    const { code, out } = await scan(['--max-line-bytes', '2000', join(FIXTURE, 'projects')]);
    expect(out).toContain('28 oversized lines skipped');
    expect(out).not.toContain('OK:');
    expect(out).toMatch(/^INCOMPLETE: 28 lines over the line limit of 2,000 bytes were skipped unread/m);
    expect(code).toBe(4);
  });

  describe('in a folder holding what real ones hold', () => {
    let projects: string;
    let result: ScanOutput;
    let code: number;
    let text: string;

    beforeAll(async () => {
      projects = join(dir, 'projects');
      const project = join(projects, '-home-dev-proj');
      await cp(PROJECT, project, { recursive: true });
      const lines = (await readFile(join(PROJECT, `${SESSION_A}.jsonl`), 'utf8')).split('\n').filter(Boolean);
      const records = lines.map((line) => JSON.parse(line) as Record<string, unknown> & { attachment?: Record<string, unknown> });
      const find = (type: string, hookName: string): Record<string, unknown> & { attachment: Record<string, unknown> } => {
        const found = records.find((r) => r.attachment?.type === type && r.attachment.hookName === hookName && (type !== 'hook_success' || String(r.attachment.command).endsWith('ctx 12000') || hookName !== 'SessionStart:startup'));
        if (!found?.attachment) throw new Error(`fixture lacks ${type} ${hookName}`);
        return found as Record<string, unknown> & { attachment: Record<string, unknown> };
      };
      const renamePath = (text: string, from: string, to: string): string => text.split(from).join(to);

      // A resumed session: Claude Code writes the earlier records again, with their ids, into the new file.
      await writeFile(join(project, 'aaaaaaaa-resumed-session.jsonl'), `${lines.join('\n')}\n`);

      // Compaction: SessionStart runs again with source "compact"; its delivery record carries the bare event name.
      const compactRun = structuredClone(find('hook_success', 'SessionStart:startup'));
      Object.assign(compactRun, { uuid: 'compact-run-1' });
      Object.assign(compactRun.attachment, { hookName: 'SessionStart:compact', toolUseID: 'compact-tool-1' });
      const compactContext = structuredClone(find('hook_additional_context', 'SessionStart'));
      const persistedEntry = (compactContext.attachment.content as string[])[0]!;
      Object.assign(compactContext, { uuid: 'compact-context-1' });
      compactContext.attachment.content = [renamePath(persistedEntry, 'hook-025a9fb1-f5ba-4f20-934e-b6cd14441215-', 'hook-compact-tool-1-')];
      // A JSON output whose delivery record never came (the session was cut off): unconfirmed, not delivered.
      const lostRun = structuredClone(find('hook_success', 'SessionStart:startup'));
      Object.assign(lostRun, { uuid: 'lost-run-1' });
      Object.assign(lostRun.attachment, { hookName: 'SessionStart:compact', toolUseID: 'lost-tool-1', command: command('ctx', 500), stdout: JSON.stringify({ hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: 'L'.repeat(500) } }) });
      const unknown = { type: 'some-future-record', sessionId: SESSION_A, uuid: 'future-1' };
      await writeFile(join(project, 'bbbbbbbb-compacted.jsonl'), [compactRun, compactContext, unknown, lostRun].map((r) => JSON.stringify(r)).join('\n') + '\n');

      // A subagent transcript inside the session folder, beside tool-results/.
      const subRun = structuredClone(find('hook_success', 'PostToolUse:Bash'));
      Object.assign(subRun, { uuid: 'sub-run-1', isSidechain: true });
      Object.assign(subRun.attachment, { toolUseID: 'toolu_sub1' });
      const subContext = structuredClone(find('hook_additional_context', 'PostToolUse:Bash'));
      Object.assign(subContext, { uuid: 'sub-context-1', isSidechain: true });
      Object.assign(subContext.attachment, {
        toolUseID: 'toolu_sub1',
        content: (subContext.attachment.content as string[]).map((entry) => renamePath(entry, 'hook-toolu_mock5-', 'hook-toolu_sub1-')),
      });
      await mkdir(join(project, SESSION_A, 'subagents'), { recursive: true });
      await writeFile(join(project, SESSION_A, 'subagents', 'agent-1.jsonl'), [subRun, subContext].map((r) => JSON.stringify(r)).join('\n') + '\n');

      ({ code, result } = await scanJson(projects));
      text = (await scan([projects])).out;
    });

    it('counts a resumed session once', () => {
      expect(result.totals.duplicateRecords).toBe(9);
      expect(result.hooks.find((h) => h.hookName === 'SessionStart:startup')).toMatchObject({ runs: 6, outputsPersisted: 4 });
    });

    it('attributes the compaction SessionStart to SessionStart:compact and its command', () => {
      const compact = result.hooks.find((h) => h.hookName === 'SessionStart:compact');
      expect(compact?.commands.map((c) => [c.command, c.runs, c.outputsPersisted, c.unconfirmed])).toEqual([
        [command('ctx', 12000), 1, 1, 0],
        [command('ctx', 500), 1, 0, 1],
      ]);
      expect(result.hooks.some((h) => h.hookName === 'SessionStart')).toBe(false);
    });

    it('reads subagent transcripts, skips and counts unknown record types, and does not count request copies', () => {
      expect(result.hooks.find((h) => h.hookName === 'PostToolUse:Bash')).toMatchObject({ runs: 3, outputsPersisted: 3 });
      expect(result.totals.skippedRecordTypes).toEqual({ 'some-future-record': 1 });
      expect(result.totals.requestCopies).toBeGreaterThan(0);
      expect(result.hooks.some((h) => h.hookName === '(unknown hook)')).toBe(false);
      expect(result.totals.outputsPersisted).toBe(8 + 1 + 1);
      expect(Math.max(...allRows(result).map((row) => row.largestDeliveredChars ?? 0))).toBe(OUTPUT_CAP_CHARS);
    });

    it('says so when a JSON output has no delivery record, and still fails on the persisted ones', () => {
      expect(text).toContain('UNKNOWN: 1 output string of JSON hook output has no delivery record');
      expect(text).toContain('1 record of unknown type skipped (some-future-record: 1)');
      expect(code).toBe(1);
    });

    it('adds up: each session is the sum of its hooks, each hook of its commands, the totals of either', () => {
      const fields = ['runs', 'outputs', 'delivered', 'outputsPersisted', 'unconfirmed', 'unconfirmedOverCap'] as const;
      const sum = (rows: Counts[]): Record<string, number> => Object.fromEntries(fields.map((f) => [f, rows.reduce((n, row) => n + row[f], 0)]));
      const pick = (row: Counts): Record<string, number> => Object.fromEntries(fields.map((f) => [f, row[f]]));
      expect(result.totals.unconfirmed).toBe(1);
      for (const session of result.sessions) expect(pick(session), session.sessionId).toEqual(sum(session.hooks));
      for (const hook of result.hooks) expect(pick(hook), hook.hookName).toEqual(sum(hook.commands));
      expect(pick(result.totals)).toEqual(sum(result.sessions));
      expect(pick(result.totals)).toEqual(sum(result.hooks));
      expect(text).toContain('"outputs" is delivered plus persisted in every table; "unconfirmed" outputs are counted apart');
    });
  });
});
