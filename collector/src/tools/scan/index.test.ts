import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { captureIO } from '../../../test/support/capture-io.ts';
import { runScan } from './index.ts';
import { logsUrl } from './send.ts';
import { hookRecord, messageRecord, persistedMarker } from '../../../test/support/synthetic-transcript.ts';

/** The shape of `scan --json`, as far as these tests read it. */
interface ScanOutput {
  ok: boolean;
  complete: boolean;
  totals: { records: number; runs: number; outputs: number; delivered: number; outputsPersisted: number; duplicateRecords: number; unparsableLines: number; oversizedLines: number; recordsWithoutId: number; lines: number };
  hooks: { hookName: string; hookEvent: string; runs: number; outputs: number; delivered: number; outputsPersisted: number; largestDeliveredChars: number | null; largestOutputChars: number | null; commands: { command: string }[] }[];
  sessions: { sessionId: string; runs: number; outputs: number; delivered: number; outputsPersisted: number; files: string[]; hooks: { hookName: string; outputsPersisted: number }[] }[];
  files: { path: string; unparsableLines: number; truncatedLastLine: boolean; hookRecords: number; duplicateRecords: number; oversizedLines: number; error?: string }[];
  persistedOutputs: { sessionId: string; hookName: string; command?: string; savedPath: string; sizeLabel: string; chars: number | null; preview?: string }[];
  send?: { url: string; emitted: number; exported: number; failed: number; notSent: number; error?: string };
}

const BIN = fileURLToPath(new URL('../../../bin/hookwatch.mjs', import.meta.url));

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hookwatch-scan-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const SESSION_A = 'aaaaaaaa-0000-4000-8000-000000000001';
const SESSION_B = 'bbbbbbbb-0000-4000-8000-000000000002';
const savedPath = (session: string, id: string): string => `/home/dev/.claude/projects/-home-dev-project/${session}/tool-results/hook-${id}-0.txt`;
const jsonl = (records: unknown[]): string => records.map((r) => JSON.stringify(r)).join('\n') + '\n';
/** Writes the records as a transcript `name` in the test's folder; returns its path. */
async function transcript(name: string, records: unknown[]): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, jsonl(records));
  return file;
}

/** Session A: a SessionStart output persisted (its record written twice), the other hooks delivered. */
function sessionARecords(): unknown[] {
  const persistedStart = hookRecord({
    uuid: 'hook-a-1',
    sessionId: SESSION_A,
    hookName: 'SessionStart:startup',
    content: persistedMarker({ savedPath: savedPath(SESSION_A, 'a1'), sizeLabel: '11.7KB', preview: `${'C'.repeat(1989)}PREVIEW_END` }),
    timestamp: '2026-11-30T08:00:00.500Z',
  });
  return [
    messageRecord({ uuid: 'msg-a-1', sessionId: SESSION_A, role: 'user', text: 'hi' }),
    persistedStart,
    hookRecord({ uuid: 'hook-a-2', sessionId: SESSION_A, hookName: 'SessionStart:startup', stdout: 'P'.repeat(500) }),
    hookRecord({ uuid: 'hook-a-3', sessionId: SESSION_A, hookName: 'UserPromptSubmit', stdout: 'U'.repeat(100) }),
    // The same record again (Claude Code rewrites records, e.g. on resume): counted once.
    persistedStart,
    // A tool result persisted with the same marker: not a hook output, not counted.
    messageRecord({ uuid: 'msg-a-2', sessionId: SESSION_A, role: 'user', text: persistedMarker({ savedPath: '/home/dev/.claude/projects/p/s/tool-results/toolu_01.txt', preview: 'tool' }) }),
    messageRecord({ uuid: 'msg-a-3', sessionId: SESSION_A, role: 'assistant', text: 'done' }),
  ];
}

/** Session B: a PostToolUse additionalContext persisted; the file ends in a record cut off mid-write. */
function sessionBText(): string {
  return (
    jsonl([
      hookRecord({ uuid: 'hook-b-1', sessionId: SESSION_B, hookName: 'PreToolUse:Bash', stdout: 'x'.repeat(50) }),
      hookRecord({
        uuid: 'hook-b-2',
        sessionId: SESSION_B,
        hookName: 'PostToolUse:Bash',
        type: 'hook_additional_context',
        content: [persistedMarker({ savedPath: savedPath(SESSION_B, 'b2'), sizeLabel: '10.3KB', preview: 'C'.repeat(2000) })],
      }),
      hookRecord({ uuid: 'hook-b-3', sessionId: SESSION_B, hookName: 'Stop', stdout: 'S'.repeat(9_999) }),
    ]) + '{"parentUuid":null,"attachment":{"type":"hook_success","hookName":"Stop","stdout":"SSSS'
  );
}

async function scan(argv: string[], env: NodeJS.ProcessEnv = { ...process.env }): Promise<{ code: number; out: string; err: string }> {
  const captured = captureIO(dir, env);
  const code = await runScan(argv, captured.io);
  return { code, out: captured.stdout(), err: captured.stderr() };
}

async function scanJson(argv: string[]): Promise<{ code: number; result: ScanOutput; err: string }> {
  const { code, out, err } = await scan(['--json', ...argv]);
  return { code, result: JSON.parse(out) as ScanOutput, err };
}

describe('scan: counting delivered and persisted hook outputs', () => {
  let projects: string;
  beforeAll(async () => {
    projects = join(dir, 'projects');
    await mkdir(join(projects, '-home-dev-project', 'nested'), { recursive: true });
    await writeFile(join(projects, '-home-dev-project', `${SESSION_A}.jsonl`), jsonl(sessionARecords()));
    await writeFile(join(projects, '-home-dev-project', 'nested', `${SESSION_B}.jsonl`), sessionBText());
    await writeFile(join(projects, '-home-dev-project', 'notes.txt'), persistedMarker({ savedPath: savedPath(SESSION_A, 'zz'), preview: 'not a transcript' }));
  });

  it('reports per hook and per session, counting a record written twice once, and fails', async () => {
    const { code, result } = await scanJson([projects]);
    expect(result.files.map((f) => [f.path.slice(projects.length), f.hookRecords, f.duplicateRecords, f.unparsableLines, f.truncatedLastLine])).toEqual([
      [`/-home-dev-project/${SESSION_A}.jsonl`, 3, 1, 0, false],
      [`/-home-dev-project/nested/${SESSION_B}.jsonl`, 3, 0, 1, true],
    ]);
    expect(result.totals).toMatchObject({ records: 6, runs: 6, outputs: 6, delivered: 4, outputsPersisted: 2, duplicateRecords: 1, unparsableLines: 1, oversizedLines: 0, recordsWithoutId: 0 });
    const hooks = Object.fromEntries(result.hooks.map((h) => [h.hookName, [h.runs, h.outputs, h.delivered, h.outputsPersisted, h.largestDeliveredChars]]));
    expect(hooks).toEqual({
      'SessionStart:startup': [2, 2, 1, 1, 500],
      // Its delivery record shows the command ran, though the file holds no run record for it.
      'PostToolUse:Bash': [1, 1, 0, 1, null],
      UserPromptSubmit: [1, 1, 1, 0, 100],
      'PreToolUse:Bash': [1, 1, 1, 0, 50],
      Stop: [1, 1, 1, 0, 9_999],
    });
    const sessions = Object.fromEntries(result.sessions.map((s) => [s.sessionId, [s.runs, s.outputs, s.delivered, s.outputsPersisted]]));
    expect(sessions).toEqual({ [SESSION_A]: [3, 3, 2, 1], [SESSION_B]: [3, 3, 2, 1] });
    expect(result.persistedOutputs.map((p) => [p.sessionId, p.hookName, p.command, p.savedPath, p.sizeLabel])).toEqual([
      [SESSION_A, 'SessionStart:startup', '"$CLAUDE_PROJECT_DIR"/.claude/hooks/SessionStart.sh', savedPath(SESSION_A, 'a1'), '11.7KB'],
      [SESSION_B, 'PostToolUse:Bash', undefined, savedPath(SESSION_B, 'b2'), '10.3KB'],
    ]);
    expect(result.ok).toBe(false);
    expect(code).toBe(1);
  });

  it('counts one run for a command whose two kinds of output came in two delivery records and no run record', async () => {
    // Claude Code 2.1.332 writes no hook_success for a UserPromptSubmit command with JSON output.
    const delivery = (uuid: string, toolUseID: string, type: string, content: string | string[]): Record<string, unknown> => {
      const record = hookRecord({ uuid, sessionId: SESSION_A, hookName: 'UserPromptSubmit', type, content });
      (record.attachment as Record<string, unknown>).toolUseID = toolUseID;
      return record;
    };
    const file = await transcript('two-kinds.jsonl', [
      delivery('ups-1', 'hook-1', 'hook_additional_context', ['context for the first prompt']),
      delivery('ups-2', 'hook-1', 'hook_system_message', 'a message for the first prompt'),
      delivery('ups-3', 'hook-2', 'hook_additional_context', ['context for the second prompt']),
    ]);
    const { result } = await scanJson([file]);
    expect(result.totals).toMatchObject({ runs: 2, outputs: 3, delivered: 3 });
    expect(result.hooks.map((h) => [h.hookName, h.runs, h.outputs])).toEqual([['UserPromptSubmit', 2, 3]]);
  });

  it('counts one run per command of a firing whose delivery records carry no toolUseID of their own', async () => {
    // Delivery records with no run record; toolUseID as given (null: none), parent as written.
    const delivery = (uuid: string, parentUuid: string | null, hookName: string, toolUseID: string | null, type: string, content: string | string[]): Record<string, unknown> => {
      const record = hookRecord({ uuid, sessionId: SESSION_A, hookName, type, content });
      const attachment = record.attachment as Record<string, unknown>;
      if (toolUseID === null) delete attachment.toolUseID;
      else attachment.toolUseID = toolUseID;
      return { ...record, parentUuid };
    };
    const message = (uuid: string, parentUuid: string): Record<string, unknown> => ({
      ...messageRecord({ uuid, sessionId: SESSION_A, role: 'user', text: 'next prompt' }), parentUuid,
    });
    const file = await transcript('no-tool-use-id.jsonl', [
      // SessionStart as 2.1.332 writes it: a systemMessage with the firing's id, then the additionalContexts of all
      // its commands in one record whose toolUseID is only the event's name, the child of the record before it.
      // The first command printed both kinds, the second an additionalContext only: two runs.
      delivery('start-1', null, 'SessionStart:startup', 'firing-start-1', 'hook_system_message', 'a message at start'),
      delivery('start-2', 'start-1', 'SessionStart', 'SessionStart', 'hook_additional_context', ['context of the first command', 'context of the second command']),
      // A firing whose records carry no toolUseID at all: one command printed both kinds, another a systemMessage (two runs)...
      message('prompt-1', 'start-2'),
      delivery('prompt-1-a', 'prompt-1', 'UserPromptSubmit', null, 'hook_additional_context', ['context for the first prompt']),
      delivery('prompt-1-b', 'prompt-1-a', 'UserPromptSubmit', null, 'hook_system_message', 'a message for the first prompt'),
      delivery('prompt-1-c', 'prompt-1-b', 'UserPromptSubmit', null, 'hook_system_message', 'another command for the first prompt'),
      // ...and the next firing of the same event, after the next prompt: a run of its own.
      message('prompt-2', 'prompt-1-c'),
      delivery('prompt-2-a', 'prompt-2', 'UserPromptSubmit', null, 'hook_system_message', 'a message for the second prompt'),
    ]);
    const { result } = await scanJson([file]);
    const byEvent = (event: string): number[] =>
      result.hooks.filter((h) => h.hookEvent === event).reduce(([runs, outputs], h) => [runs! + h.runs, outputs! + h.outputs], [0, 0]);
    expect(byEvent('SessionStart')).toEqual([2, 3]);
    expect(byEvent('UserPromptSubmit')).toEqual([3, 4]);
    expect(result.totals).toMatchObject({ runs: 5, outputs: 7, delivered: 7 });
  });

  it('links each persisted output of a firing to its command by its size label, which counts UTF-16 code units', async () => {
    // Claude Code 2.1.332 labels a saved output with its length in UTF-16 code units over 1,024, to one decimal:
    // 5,001 emoji (10,002 code units, 20,004 bytes) read "9.8KB", as the real transcripts-b show. Two commands of one
    // SessionStart firing, both persisted: the emoji one's marker comes first, its run second.
    const emoji = '\u{1F600}'.repeat(5_001);
    const ascii = 'a'.repeat(12_000);
    const run = (uuid: string, command: string, context: string): Record<string, unknown> => {
      const record = hookRecord({ uuid, sessionId: SESSION_A, hookName: 'SessionStart:startup', stdout: JSON.stringify({ hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: context } }), content: '' });
      Object.assign(record.attachment as Record<string, unknown>, { toolUseID: 'firing-emoji', command });
      return record;
    };
    const saved = (hash: string): string => savedPath(SESSION_A, `firing-emoji-SessionStart-${hash}-additionalContext`);
    const delivery = hookRecord({
      uuid: 'emoji-delivery', sessionId: SESSION_A, hookName: 'SessionStart', type: 'hook_additional_context',
      content: [
        persistedMarker({ savedPath: saved('e'), sizeLabel: '9.8KB', preview: emoji.slice(0, 2_000) }),
        persistedMarker({ savedPath: saved('a'), sizeLabel: '11.7KB', preview: ascii.slice(0, 2_000) }),
      ],
    });
    (delivery.attachment as Record<string, unknown>).toolUseID = 'SessionStart';
    const file = await transcript('emoji-labels.jsonl', [run('emoji-run-1', 'ascii.sh', ascii), { ...run('emoji-run-2', 'emoji.sh', emoji), parentUuid: 'emoji-run-1' }, { ...delivery, parentUuid: 'emoji-run-2' }]);
    const ran = spawnSync(process.execPath, [BIN, 'scan', '--json', file], { encoding: 'utf8', cwd: dir, timeout: 20_000 });
    expect(ran.status).toBe(1);
    const result = JSON.parse(ran.stdout) as ScanOutput;
    expect(result.persistedOutputs.map((p) => [p.savedPath, p.command, p.chars])).toEqual([[saved('e'), 'emoji.sh', 10_002], [saved('a'), 'ascii.sh', 12_000]]);
    expect(result.totals).toMatchObject({ runs: 2, outputsPersisted: 2, unconfirmed: 0 });
  });

  it('counts two runs for two commands of one firing that each delivered the same kind at the same place', async () => {
    // As 2.1.332 writes two commands of one tool event: a record each, same toolUseID, one entry each.
    const delivery = (uuid: string, parentUuid: string | null, content: string): Record<string, unknown> => {
      const record = hookRecord({ uuid, sessionId: SESSION_A, hookName: 'PostToolUse:Bash', type: 'hook_additional_context', content: [content] });
      (record.attachment as Record<string, unknown>).toolUseID = 'toolu_same';
      return { ...record, parentUuid };
    };
    const file = await transcript('same-kind-twice.jsonl', [delivery('post-1', null, 'context of the first command'), delivery('post-2', 'post-1', 'context of the second command')]);
    const { result } = await scanJson([file]);
    expect(result.hooks.map((h) => [h.hookName, h.runs, h.outputs])).toEqual([['PostToolUse:Bash', 2, 2]]);
  });

  it('reads a file once however often the paths reach it', async () => {
    const once = await scanJson([projects]);
    const sessionFile = join(projects, '-home-dev-project', `${SESSION_A}.jsonl`);
    const twice = await scanJson([projects, projects, sessionFile, `${projects}/./-home-dev-project/../`]);
    expect(twice.result.files.map((f) => f.path)).toEqual(once.result.files.map((f) => f.path));
    expect(twice.result.totals).toEqual(once.result.totals);
    expect((await scan([projects, projects])).out).toMatch(/^Scanned 2 files /);
    expect(twice.code).toBe(1);
  });

  it('follows a symbolic link to a project folder or a transcript, reading each once, and stops at links that loop', async () => {
    const root = join(dir, 'linked');
    await mkdir(join(root, 'projects'), { recursive: true });
    await mkdir(join(root, 'elsewhere', 'project'), { recursive: true });
    await writeFile(join(root, 'elsewhere', 'project', 'kept-elsewhere.jsonl'), jsonl(sessionARecords()));
    await writeFile(join(root, 'elsewhere', 'single.jsonl'), jsonl([hookRecord({ uuid: 'h-linked', sessionId: 's-linked', hookName: 'Stop', stdout: 'ok' })]));
    // A project folder kept on another disk, a transcript linked in, links that loop: to the folder they are in,
    // back up the tree, and to itself.
    await symlink(join(root, 'elsewhere', 'project'), join(root, 'projects', 'project'));
    await symlink(join(root, 'elsewhere', 'single.jsonl'), join(root, 'projects', 'single.jsonl'));
    await symlink('.', join(root, 'projects', 'here'));
    await symlink('../../projects', join(root, 'elsewhere', 'project', 'up'));
    await symlink('self.jsonl', join(root, 'projects', 'self.jsonl'));
    const { code, result } = await scanJson([join(root, 'projects')]);
    expect(result.files.map((f) => [f.path.slice(root.length), (f as { error?: string }).error?.replace(/,.*/, '')])).toEqual([
      ['/projects/project/kept-elsewhere.jsonl', undefined],
      ['/projects/self.jsonl', 'ELOOP: too many symbolic links encountered'],
      ['/projects/single.jsonl', undefined],
    ]);
    expect(result.totals).toMatchObject({ records: 4, outputsPersisted: 1 });
    expect(code).toBe(1);
  });

  it('prints no hook output unless --show-content, and then only the previews', async () => {
    const plain = await scan([projects]);
    expect(plain.code).toBe(1);
    expect(plain.out).not.toContain('PREVIEW_END');
    expect(plain.out).toMatch(/^FAIL: 2 hook outputs in 2 sessions were over the 10,000-character cap/m);
    expect(plain.out).toContain(`last line cut off`);
    expect((await scan(['--json', projects])).out).not.toContain('PREVIEW_END');

    const shown = await scan(['--show-content', projects]);
    expect(shown.out).toContain(`${'C'.repeat(1989)}PREVIEW_END\n`);
    expect(shown.out).not.toContain('P'.repeat(500));
  });

  it('never prints a delivered size as the largest output of a hook whose persisted output has no known size', async () => {
    // SessionStart:startup persisted an output the transcript gives no size for, and delivered 500 characters:
    // its largest output was over the cap, not 500. PostToolUse:Bash persisted one and delivered none.
    const { out } = await scan([projects]);
    const rows = (table: string): string[] => out.split(`\n${table}\n`)[1]?.split('\n\n')[0]?.split('\n').slice(1) ?? [];
    const cells = (row: string | undefined): string[] => row?.trim().split(/\s{2,}/) ?? [];
    const hooks = rows('Per hook (named as telemetry names them; sizes in characters, UTF-16 code units)');
    // hook, event, runs, outputs, delivered, persisted, largest delivered, largest output
    expect(cells(hooks.find((r) => r.includes('SessionStart:startup'))).slice(2)).toEqual(['2', '2', '1', '1', '500', '>10,000']);
    expect(cells(hooks.find((r) => r.includes('PostToolUse:Bash'))).slice(2)).toEqual(['1', '1', '0', '1', '-', '>10,000']);
    expect(cells(hooks.find((r) => r.includes('UserPromptSubmit'))).slice(2)).toEqual(['1', '1', '1', '0', '100', '100']);
    const sessions = rows('Per session');
    expect(cells(sessions.find((r) => r.includes(SESSION_A))).slice(1, 7)).toEqual(['3', '3', '2', '1', '500', '>10,000']);
    // --json keeps the largest output of known size, as its field says, beside the persisted count.
    const { result } = await scanJson([projects]);
    expect(result.hooks.find((h) => h.hookName === 'SessionStart:startup')).toMatchObject({ outputsPersisted: 1, largestOutputChars: 500 });
  });

  it('defaults to ~/.claude/projects', async () => {
    const home = join(dir, 'home');
    await mkdir(join(home, '.claude', 'projects', 'p'), { recursive: true });
    await writeFile(join(home, '.claude', 'projects', 'p', 's.jsonl'), jsonl([hookRecord({ uuid: 'h1', sessionId: 's', hookName: 'Stop', stdout: 'ok' })]));
    const { code, out } = await scan([], { ...process.env, HOME: home, CLAUDE_CONFIG_DIR: undefined });
    expect(out).toContain('OK: every hook output reached the model whole');
    expect(code).toBe(0);
  });

  it('defaults to $CLAUDE_CONFIG_DIR/projects when that is set, where Claude Code then writes its transcripts', async () => {
    const config = join(dir, 'claude-config');
    await cp(fileURLToPath(new URL('../../../testdata/claude-code-2.1.332/transcripts-a/projects/', import.meta.url)), join(config, 'projects'), { recursive: true });
    // No ~/.claude/projects at all: a scan that looked there would exit 2.
    const env = { PATH: process.env['PATH'] ?? '', HOME: join(dir, 'home-without-claude'), CLAUDE_CONFIG_DIR: config };
    const run = spawnSync(process.execPath, [BIN, 'scan', '--json'], { env, encoding: 'utf8', cwd: dir, timeout: 20_000 });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(1);
    expect((JSON.parse(run.stdout) as { totals: { outputsPersisted: number } }).totals.outputsPersisted).toBe(8);
  });

  it('without a path and without ~/.claude/projects, says that is where transcripts are looked for and what to give instead', () => {
    const home = join(dir, 'home-without-claude');
    const run = spawnSync(process.execPath, [BIN, 'scan'], { env: { PATH: process.env['PATH'] ?? '', HOME: home }, encoding: 'utf8', cwd: dir, timeout: 20_000 });
    expect(run.stderr).toBe(`hookwatch scan: no such file or directory: ${home}/.claude/projects, where Claude Code writes its transcripts (none on this machine yet?); give the paths of transcripts to scan, or set CLAUDE_CONFIG_DIR to the folder Claude Code uses instead of ~/.claude\nRun "hookwatch scan --help" for usage.\n`);
    expect(run.status).toBe(2);
  });

  it('names a $CLAUDE_CONFIG_DIR it cannot read with its line breaks and bidi controls written out', () => {
    const config = join(dir, 'config\u202E\nOK: every hook output reached the model whole');
    const env = { PATH: process.env['PATH'] ?? '', HOME: join(dir, 'home-without-claude'), CLAUDE_CONFIG_DIR: config };
    const run = spawnSync(process.execPath, [BIN, 'scan'], { env, encoding: 'utf8', cwd: dir, timeout: 20_000 });
    expect(run.stderr).toBe(`hookwatch scan: no such file or directory: ${dir}/config\\u202e\\nOK: every hook output reached the model whole/projects, where Claude Code writes its transcripts under CLAUDE_CONFIG_DIR; give the paths of transcripts to scan\nRun "hookwatch scan --help" for usage.\n`);
    expect(run.stdout).toBe('');
    expect(run.status).toBe(2);
  });

  it('attributes a hook output marker outside a hook record, and counts records without an id by line', async () => {
    const file = await transcript('odd.jsonl', [
      messageRecord({ uuid: 'm1', sessionId: 's-odd', role: 'user', text: persistedMarker({ savedPath: savedPath('s-odd', 'orphan'), preview: 'x' }) }),
      { type: 'attachment', sessionId: 's-odd', attachment: { type: 'hook_success', hookName: 'Stop', stdout: 'no id' } },
      { type: 'attachment', sessionId: 's-odd', attachment: { type: 'hook_success', hookName: 'Stop', stdout: 'no id' } },
      ['not', 'an', 'object'],
    ]);
    const { code, result } = await scanJson([file]);
    expect(result.hooks.map((h) => [h.hookName, h.runs, h.outputsPersisted])).toEqual([
      ['(unknown hook)', 0, 1],
      ['Stop', 2, 0],
    ]);
    expect(result.totals).toMatchObject({ recordsWithoutId: 2, unparsableLines: 1 });
    expect(code).toBe(1);
  });

  it('reads the first record of a transcript saved with a byte order mark', async () => {
    // An editor or a Windows tool that rewrote the file put a BOM before the first record.
    const file = join(dir, 'bom.jsonl');
    const first = hookRecord({ uuid: 'h-bom', sessionId: 's-bom', hookName: 'SessionStart:startup', content: persistedMarker({ savedPath: savedPath('s-bom', 'h-bom'), preview: 'x' }) });
    await writeFile(file, `\uFEFF${jsonl([first, hookRecord({ uuid: 'h-bom-2', sessionId: 's-bom', hookName: 'Stop', stdout: 'ok' })])}`);
    const { code, result } = await scanJson([file]);
    expect(result.totals).toMatchObject({ records: 2, unparsableLines: 0, outputsPersisted: 1 });
    expect(code).toBe(1);
  });

  it('prints a file name, a command or a preview with line breaks and terminal escapes as text that cannot forge a verdict', async () => {
    const forged = '\nOK: every hook output reached the model whole\n\u001b]0;title\u0007\u001b[2J';
    const folder = join(dir, 'hostile-names');
    await mkdir(folder, { recursive: true });
    const persisted = hookRecord({ uuid: 'h-esc', sessionId: `s-esc${forged}`, hookName: `Stop${forged}`, content: persistedMarker({ savedPath: savedPath('s-esc', 'h-esc'), preview: `preview${forged}` }) });
    (persisted.attachment as Record<string, unknown>).command = `./stop.sh${forged}`;
    await writeFile(join(folder, `session${forged}.jsonl`), `${jsonl([persisted, { type: `new-type${forged}`, uuid: 'u-esc' }])}not json\n`);
    const { code, out } = await scan(['--show-content', folder]);
    expect(code).toBe(1);
    expect(out.split('\n').filter((line) => /^(OK|FAIL|INCOMPLETE|UNKNOWN):/.test(line))).toEqual([
      expect.stringMatching(/^FAIL: 1 hook output in 1 session /),
      expect.stringMatching(/^INCOMPLETE: 1 line could not be parsed; /),
    ]);
    expect([...out].filter((c) => c !== '\n' && (c < ' ' || (c >= '\u007f' && c <= '\u009f')))).toEqual([]);
    expect(out).toContain('./stop.sh\\nOK: every hook output reached the model whole\\n\\u001b]0;title\\u0007\\u001b[2J');
  });

  it('prints bidirectional controls and invisible format characters of a name, a command or a file name escaped, emoji whole', () => {
    // U+202E turns the rest of its line around at a terminal: "#\u202Ehs.kcatta" shows as "#attack.sh", and a
    // file name could make its line of the report read as another. Zero-width and tag characters hide text.
    const emoji = '\u{1F469}\u{1F3FD}\u200D\u{1F4BB} \u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F} \u{1F3F3}\uFE0F\u200D\u{1F308}';
    const folder = join(dir, 'bidi-names');
    mkdirSync(folder, { recursive: true });
    const persisted = hookRecord({ uuid: 'h-bidi', sessionId: 's-bidi\u2066', hookName: `Stop\u202E:KO ${emoji}`, content: persistedMarker({ savedPath: savedPath('s-bidi', 'h-bidi'), preview: 'preview\u200F\u2028x' }) });
    (persisted.attachment as Record<string, unknown>).command = './stop.sh #\u202Ehs.kcatta\u200B\u2069\u{E0041}\uFEFF\u061C\u200E';
    writeFileSync(join(folder, 'session\u202Elnosj.jsonl'), `${jsonl([persisted])}not json\n`);
    const run = spawnSync(process.execPath, [BIN, 'scan', '--show-content', folder], { encoding: 'utf8', cwd: dir, timeout: 20_000 });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(1);
    expect([...run.stdout].filter((c) => /[\p{Bidi_Control}\u200B\uFEFF\u2028\u2029]/u.test(c))).toEqual([]);
    expect(run.stdout).toContain('./stop.sh #\\u202ehs.kcatta\\u200b\\u2069\\u{e0041}\\ufeff\\u061c\\u200e');
    expect(run.stdout).toContain(`Stop\\u202e:KO ${emoji}`);
    expect(run.stdout).toContain('s-bidi\\u2066');
    expect(run.stdout).toContain('session\\u202elnosj.jsonl: 1 unparsable line');
    expect(run.stdout).toContain('preview\\u200f\\u2028x');
  });

  it("does not count another session's hook output marker quoted in a tool result", async () => {
    // Claude ran `grep -r persisted-output ~/.claude/projects`: the result quotes session B's marker.
    const quoted = `${savedPath(SESSION_B, 'b2')}:${persistedMarker({ savedPath: savedPath(SESSION_B, 'b2'), preview: 'C'.repeat(200) })}`;
    const file = await transcript('quotes-another-session.jsonl', [
      hookRecord({ uuid: 'h-grep', sessionId: 's-grep', hookName: 'Stop', stdout: 'ok' }),
      messageRecord({ uuid: 'm-grep', sessionId: 's-grep', role: 'user', text: quoted }),
    ]);
    const { code, out } = await scan([file]);
    expect(out).not.toContain('(unknown hook)');
    expect(out).toContain('OK: every hook output reached the model whole');
    expect(code).toBe(0);
  });

  it('skips a line over --max-line-bytes and still reads the lines after it', async () => {
    const file = await transcript('long-line.jsonl', [
      messageRecord({ uuid: 'm1', sessionId: 's-long', role: 'assistant', text: 'z'.repeat(5_000) }),
      hookRecord({ uuid: 'h1', sessionId: 's-long', hookName: 'Stop', content: persistedMarker({ savedPath: savedPath('s-long', 'h1'), preview: 'x' }) }),
    ]);
    const { code, result } = await scanJson(['--max-line-bytes', '2048', file]);
    expect(result.totals).toMatchObject({ lines: 2, oversizedLines: 1, records: 1, outputsPersisted: 1 });
    expect(code).toBe(1);
  });

  it('takes --max-line-bytes as a size with a unit, as the guard takes --keep-size', async () => {
    const file = await transcript('long-line-units.jsonl', [
      messageRecord({ uuid: 'm-units', sessionId: 's-units', role: 'assistant', text: 'z'.repeat(5_000) }),
      hookRecord({ uuid: 'h-units', sessionId: 's-units', hookName: 'Stop', stdout: 'ok' }),
    ]);
    const run = (args: string[]) => spawnSync(process.execPath, [BIN, 'scan', '--json', ...args, file], { encoding: 'utf8', cwd: dir, timeout: 20_000 });
    // KiB is 1,024 bytes, KB 1,000: the 5 KB line is over 2KiB and 4KB, and within 8KiB and 6KB.
    for (const [size, oversized] of [['2KiB', 1], ['4KB', 1], ['8KiB', 0], ['6KB', 0], ['1MiB', 0], ['5000', 1]] as const) {
      const ran = run(['--max-line-bytes', size]);
      expect(ran.stderr).toBe('');
      expect((JSON.parse(ran.stdout) as ScanOutput).totals).toMatchObject({ oversizedLines: oversized, records: 1 });
    }
    expect(run(['--max-line-bytes', '2KiB']).status).toBe(4);
    expect(spawnSync(process.execPath, [BIN, 'scan', '--max-line-bytes', '2KiB', file], { encoding: 'utf8', cwd: dir, timeout: 20_000 }).stdout)
      .toMatch(/^INCOMPLETE: 1 line over the line limit of 2,048 bytes was skipped unread/m);
  });

  it('does not pass when a line was skipped as too long: the output in it is unknown, exit 4', async () => {
    const file = await transcript('skipped-hook-line.jsonl', [
      hookRecord({ uuid: 'h1', sessionId: 's-skip', hookName: 'SessionStart:startup', content: persistedMarker({ savedPath: savedPath('s-skip', 'h1'), preview: 'x'.repeat(3_000) }) }),
      hookRecord({ uuid: 'h2', sessionId: 's-skip', hookName: 'Stop', stdout: 'ok' }),
    ]);
    const text = await scan(['--max-line-bytes', '2048', file]);
    expect(text.out).not.toContain('OK:');
    expect(text.out).toMatch(/^INCOMPLETE: 1 line over the line limit of 2,048 bytes was skipped unread/m);
    expect(text.code).toBe(4);
    const { code, result } = await scanJson(['--max-line-bytes', '2048', file]);
    expect(result).toMatchObject({ ok: false, complete: false, totals: { oversizedLines: 1, outputsPersisted: 0 } });
    expect(code).toBe(4);
    expect((await scan(['--help'])).out).toContain('4 nothing found persisted but lines over --max-line-bytes were skipped');
  });

  it('does not pass a transcript whose last record is cut off mid-write: the output in it is unknown, exit 4', async () => {
    // Scanned while Claude Code was writing a hook record whose output it had saved to a file.
    const persisted = hookRecord({ uuid: 'h-cut', sessionId: 's-cut', hookName: 'SessionStart:startup', content: persistedMarker({ savedPath: savedPath('s-cut', 'h-cut'), preview: 'x'.repeat(500) }) });
    const file = join(dir, 'being-written.jsonl');
    await writeFile(file, `${jsonl([hookRecord({ uuid: 'h-ok', sessionId: 's-cut', hookName: 'Stop', stdout: 'ok' })])}${JSON.stringify(persisted).slice(0, 400)}`);
    const text = await scan([file]);
    expect(text.out).not.toMatch(/^OK/m);
    expect(text.out).toMatch(/^INCOMPLETE: 1 file ended in a line cut off mid-write/m);
    expect(text.code).toBe(4);
    const { code, result } = await scanJson([file]);
    expect(result).toMatchObject({ ok: false, complete: false, totals: { records: 1, unparsableLines: 1 } });
    expect(code).toBe(4);
    // Scanned again once the record is written whole: the persisted output is found.
    await writeFile(file, jsonl([hookRecord({ uuid: 'h-ok', sessionId: 's-cut', hookName: 'Stop', stdout: 'ok' }), persisted]));
    expect((await scanJson([file])).code).toBe(1);
  });

  it('does not pass a transcript with a line that is not JSON: a record cut off there may hold a lost output, exit 4', async () => {
    // A record cut off mid-write with the next one written on the same line: neither can be read.
    const persisted = hookRecord({ uuid: 'h-glued', sessionId: 's-glued', hookName: 'SessionStart:startup', content: persistedMarker({ savedPath: savedPath('s-glued', 'h-glued'), preview: 'x'.repeat(500) }) });
    const stop = hookRecord({ uuid: 'h-glued-2', sessionId: 's-glued', hookName: 'Stop', stdout: 'ok' });
    const file = join(dir, 'glued.jsonl');
    await writeFile(file, `${JSON.stringify(persisted).slice(0, 400)}${jsonl([messageRecord({ uuid: 'm-glued', sessionId: 's-glued', role: 'user', text: 'hi' }), stop])}`);
    const text = await scan([file]);
    expect(text.out).not.toMatch(/^OK/m);
    expect(text.out).toMatch(/^INCOMPLETE: 1 line could not be parsed; a hook output there may have been saved to a file without this scan seeing it\.$/m);
    expect(text.code).toBe(4);
    const { code, result } = await scanJson([file]);
    expect(result).toMatchObject({ ok: false, complete: false, totals: { records: 1, unparsableLines: 1, outputsPersisted: 0 } });
    expect(result.files[0]).toMatchObject({ unparsableLines: 1, truncatedLastLine: false });
    expect(code).toBe(4);
    // A cut-off last line is said once, as that.
    await writeFile(file, `${jsonl([stop])}${JSON.stringify(persisted).slice(0, 400)}`);
    expect((await scan([file])).out).toMatch(/^INCOMPLETE: 1 file ended in a line cut off mid-write \(a transcript still being written: scan it again once written\); a hook/m);
  });

  it('refuses a --max-line-bytes over the longest line it can read as text', async () => {
    const file = await transcript('max-line-cap.jsonl', [hookRecord({ uuid: 'h-cap', sessionId: 's-cap', hookName: 'Stop', stdout: 'ok' })]);
    const { code, err } = await scan(['--max-line-bytes', '1GiB', file]);
    expect(err).toContain('--max-line-bytes: at most 536,870,888 bytes (512.0 MiB), the longest line JavaScript can hold as a string, got "1GiB"');
    expect(code).toBe(2);
    expect((await scan(['--max-line-bytes', '536870888', file])).code).toBe(0);
  });

  it('names the line of the first unparsable line and of the first line over the limit of each file', async () => {
    const records = [
      hookRecord({ uuid: 'h-where-1', sessionId: 's-where', hookName: 'Stop', stdout: 'ok' }),
      messageRecord({ uuid: 'm-where', sessionId: 's-where', role: 'assistant', text: 'z'.repeat(5_000) }),
      hookRecord({ uuid: 'h-where-2', sessionId: 's-where', hookName: 'Stop', stdout: 'ok' }),
    ];
    const file = join(dir, 'where.jsonl');
    await writeFile(file, `${jsonl(records.slice(0, 2))}{"type":"attachment",\n${jsonl(records.slice(2))}not json\n`);
    const { out } = await scan(['--max-line-bytes', '2048', file]);
    expect(out).toContain(`${file}: 2 unparsable lines (first at line 3), 1 line over the line limit (line 2)\n`);
    const { result } = await scanJson(['--max-line-bytes', '2048', file]);
    expect(result.files[0]).toMatchObject({ unparsableLines: 2, firstUnparsableLine: 3, oversizedLines: 1, firstOversizedLine: 2 });
  });

  it('counts as delivered a hook output that only mentions the persisted-output tag', async () => {
    // A hook telling the model about Claude Code's markers: its text reached the model whole.
    const text = 'Large outputs come back wrapped in <persisted-output> tags; read the saved file they name.';
    const plain = hookRecord({ uuid: 'h-tag-1', sessionId: 's-tag', hookName: 'SessionStart:startup', stdout: text });
    const json = hookRecord({ uuid: 'h-tag-2', sessionId: 's-tag', hookName: 'SessionStart:startup', stdout: JSON.stringify({ hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: text } }), content: '' });
    const delivery = hookRecord({ uuid: 'h-tag-3', sessionId: 's-tag', hookName: 'SessionStart', type: 'hook_additional_context', content: [text] });
    (delivery.attachment as Record<string, unknown>).toolUseID = 'SessionStart';
    const file = await transcript('mentions-the-tag.jsonl', [plain, json, { ...delivery, parentUuid: 'h-tag-2' }]);
    const { code, result } = await scanJson([file]);
    expect(result.totals).toMatchObject({ runs: 2, outputs: 2, delivered: 2, outputsPersisted: 0, unconfirmed: 0 });
    expect(code).toBe(0);
  });

  it("counts as delivered a hook output that starts with a tool's persisted-output marker it relays", async () => {
    // A hook passing on a tool result Claude Code had saved: the marker names the tool's file, and the hook's
    // output (its stdout, or the JSON string a delivery record repeats word for word) reached the model whole.
    const relayed = `${persistedMarker({ savedPath: '/home/dev/.claude/projects/p/abc/tool-results/toolu_01.txt', sizeLabel: '30.0KB', preview: 'old tool output' })}\n(relayed by my hook)`;
    const plain = hookRecord({ uuid: 'h-relay-1', sessionId: 's-relay', hookName: 'Stop', stdout: relayed });
    const json = hookRecord({ uuid: 'h-relay-2', sessionId: 's-relay', hookName: 'PostToolUse:Bash', stdout: JSON.stringify({ hookSpecificOutput: { hookEventName: 'PostToolUse', additionalContext: relayed } }), content: '' });
    const delivery = hookRecord({ uuid: 'h-relay-3', sessionId: 's-relay', hookName: 'PostToolUse:Bash', type: 'hook_additional_context', content: [relayed] });
    (delivery.attachment as Record<string, unknown>).toolUseID = (json.attachment as Record<string, unknown>).toolUseID;
    // Without the hook's raw stdout the record still tells: the saved file is a tool's, not a hook output's.
    const contentOnly = hookRecord({ uuid: 'h-relay-4', sessionId: 's-relay', hookName: 'Stop', content: relayed });
    const file = await transcript('relayed-marker.jsonl', [plain, json, { ...delivery, parentUuid: 'h-relay-2' }, contentOnly]);
    const { code, result } = await scanJson([file]);
    expect(result.totals).toMatchObject({ runs: 3, outputs: 3, delivered: 3, outputsPersisted: 0, unconfirmed: 0 });
    expect(result.hooks.map((h) => [h.hookName, h.runs, h.delivered, h.largestDeliveredChars])).toEqual([
      ['Stop', 2, 2, relayed.length],
      ['PostToolUse:Bash', 1, 1, relayed.length],
    ]);
    expect(result.persistedOutputs).toEqual([]);
    expect(code).toBe(0);
  });

  it('counts an empty JSON output string as delivered, not as one waiting for a delivery record', async () => {
    // additionalContext "": nothing can be saved to a file; Claude Code's delivery record holds [""] or is missing.
    const emptyContext = (uuid: string): Record<string, unknown> =>
      hookRecord({ uuid, sessionId: 's-empty', hookName: 'PreToolUse:Bash', stdout: JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', additionalContext: '' } }), content: '' });
    const withRecord = emptyContext('h-empty-1');
    const delivery = hookRecord({ uuid: 'h-empty-2', sessionId: 's-empty', hookName: 'PreToolUse:Bash', type: 'hook_additional_context', content: [''] });
    (delivery.attachment as Record<string, unknown>).toolUseID = (withRecord.attachment as Record<string, unknown>).toolUseID;
    const file = await transcript('empty-context.jsonl', [withRecord, { ...delivery, parentUuid: 'h-empty-1' }, emptyContext('h-empty-3')]);
    const { code, result } = await scanJson([file]);
    expect(result.totals).toMatchObject({ runs: 2, outputs: 2, delivered: 2, unconfirmed: 0, largestDeliveredChars: 0 });
    expect(code).toBe(0);
    const { out } = await scan([file]);
    expect(out).not.toContain('UNKNOWN');
    expect(out).toMatch(/^OK: every hook output reached the model whole/m);
  });

  it('still counts a persisted output that a hook record of an unknown type names after some text of its own', async () => {
    // A record type a later Claude Code writes, wording its output as its system records do: "<hook> ...: <marker>".
    const marker = persistedMarker({ savedPath: savedPath('s-new', 'h-new'), preview: 'x'.repeat(300) });
    const future = hookRecord({ uuid: 'h-new', sessionId: 's-new', hookName: 'Stop', type: 'hook_future_feedback', content: [`Stop hook feedback: ${marker}`] });
    // Its mention of the tag, with no saved file of a hook named, is no persisted output.
    const mention = hookRecord({ uuid: 'h-new-2', sessionId: 's-new', hookName: 'Stop', type: 'hook_future_feedback', content: ['Outputs come back in <persisted-output> tags.'] });
    const file = await transcript('future-type.jsonl', [future, mention]);
    const { code, result } = await scanJson([file]);
    expect(result.totals).toMatchObject({ records: 2, outputsPersisted: 1 });
    expect(result.persistedOutputs.map((p) => p.savedPath)).toEqual([savedPath('s-new', 'h-new')]);
    expect(code).toBe(1);
  });

  it('passes when nothing was persisted', async () => {
    const file = await transcript('clean.jsonl', [hookRecord({ uuid: 'h1', sessionId: 's-clean', hookName: 'SessionStart:startup', stdout: 'x'.repeat(10_000) })]);
    const { code, result } = await scanJson([file]);
    expect(result.ok).toBe(true);
    expect(result.hooks[0]?.largestDeliveredChars).toBe(10_000);
    expect(code).toBe(0);
  });

  it('exits 2 on a missing path or a bad option', async () => {
    const missing = await scan([join(dir, 'does-not-exist')]);
    expect(missing.err).toContain('no such file or directory');
    expect(missing.code).toBe(2);
    // A link that loops is there, but leads nowhere: said as such, not as a missing file.
    const loop = join(dir, 'loop.jsonl');
    await symlink('loop.jsonl', loop);
    const looping = await scan([loop]);
    expect(looping.err).toContain(`a symbolic link that loops: ${loop}`);
    expect(looping.code).toBe(2);
    for (const value of ['big', '0', '1.3KiB', '2 MiBs']) {
      const bad = await scan(['--max-line-bytes', value, dir]);
      expect(bad.err).toContain(`--max-line-bytes: expected a size of at least 1 byte such as 64MiB or 500KB, got "${value}"`);
      expect(bad.code).toBe(2);
    }
    expect((await scan(['--help'])).out).toMatch(/^Usage: hookwatch scan/);
  });

  it('exits 2 on a file that is not a transcript, saying how many lines could not be read, and never says OK', async () => {
    const readme = join(dir, 'README.md');
    await writeFile(readme, '# A project\n\nSome words.\n\n- a list\n');
    const text = await scan([readme]);
    // Five lines, two of them blank: the count of lines read agrees with the summary's count of lines scanned.
    expect(text.out).toContain(`${readme}: unreadable: not a Claude Code transcript: none of its 3 non-blank lines could be read as a transcript record, 3 unparsable lines`);
    expect(text.out).toContain('Scanned 1 file (35 B, 5 lines)');
    expect(text.out).not.toContain('OK');
    // The verdict word is the exit status's (2, unreadable input), not INCOMPLETE's (4).
    expect(text.out).toContain('UNREADABLE: 1 file could not be read; a hook output there may have been saved to a file without this scan seeing it.\n');
    expect(text.out).not.toContain('INCOMPLETE');
    expect(text.code).toBe(2);
    // JSON that is not JSON Lines of transcript entries: a document over several lines, or objects without a type.
    const pretty = join(dir, 'settings.json');
    await writeFile(pretty, JSON.stringify({ hooks: { Stop: [] } }, null, 2));
    const untyped = join(dir, 'rows.jsonl');
    await writeFile(untyped, '{"a":1}\n{"a":2}\n');
    for (const [file, why] of [[pretty, '5 non-blank lines could be read as a transcript record'], [untyped, '2 non-blank lines could be read as a transcript record (2 JSON without a record type)']] as const) {
      const { code, result } = await scanJson([file]);
      expect((result.files[0] as { error?: string }).error).toContain(why);
      expect(result.ok).toBe(false);
      expect(code).toBe(2);
    }
    // A transcript with a corrupt line is still read, not as unreadable input: the line is counted, and leaves the
    // scan incomplete.
    const corrupt = join(dir, 'corrupt.jsonl');
    await writeFile(corrupt, `${jsonl([hookRecord({ uuid: 'c1', sessionId: 's-corrupt', hookName: 'Stop', stdout: 'fine' })])}not json\n`);
    const tolerated = await scanJson([corrupt]);
    expect(tolerated.result.totals).toMatchObject({ unparsableLines: 1, records: 1, delivered: 1 });
    expect(tolerated.result.files[0]?.error).toBeUndefined();
    expect(tolerated.code).toBe(4);
  });

  it('names a transcript saved as UTF-16 as that, and exits 2', async () => {
    const text = jsonl([hookRecord({ uuid: 'h-u16', sessionId: 's-u16', hookName: 'Stop', stdout: 'ok' }), messageRecord({ uuid: 'm-u16', sessionId: 's-u16', role: 'user', text: 'hi' })]);
    const file = join(dir, 'utf16.jsonl');
    await writeFile(file, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]));
    const { code, out } = await scan([file]);
    expect(out).toContain(`${file}: unreadable: UTF-16 encoded, not UTF-8 (byte order mark FF FE); Claude Code writes transcripts in UTF-8\n`);
    expect(out).not.toContain('cut off');
    expect(out).not.toMatch(/^OK/m);
    expect(code).toBe(2);
    const { result } = await scanJson([file]);
    expect(result.files[0]).toMatchObject({ truncatedLastLine: false, unparsableLines: 0 });
    expect(result.ok).toBe(false);
  });

  it('reads one transcript from standard input for a path of -, and fails on an empty one', async () => {
    // The real command: a transcript piped in (from ssh, a CI artifact) counts as the same file read from disk.
    const file = join(dir, 'projects', '-home-dev-project', `${SESSION_A}.jsonl`);
    const fromDisk = await scanJson([file]);
    const run = (args: string[], input: string) => spawnSync(process.execPath, [BIN, 'scan', ...args], { input, encoding: 'utf8', cwd: dir, timeout: 20_000 });
    const piped = run(['--json', '-'], await readFile(file, 'utf8'));
    expect(piped.stderr).toBe('');
    expect(piped.status).toBe(1);
    const result = JSON.parse(piped.stdout) as ScanOutput;
    expect(result.totals).toEqual(fromDisk.result.totals);
    expect(result.hooks).toEqual(fromDisk.result.hooks);
    expect(result.files.map((f) => f.path)).toEqual(['(stdin)']);
    // Given with a folder, both are read; given twice, standard input is read once.
    const both = run(['--json', '-', join(dir, 'projects'), '-'], await readFile(file, 'utf8'));
    expect((JSON.parse(both.stdout) as ScanOutput).files.map((f) => f.path.replace(dir, ''))).toEqual([
      `/projects/-home-dev-project/${SESSION_A}.jsonl`, `/projects/-home-dev-project/nested/${SESSION_B}.jsonl`, '(stdin)',
    ]);
    // Nothing piped in (the command before the pipe failed) never passes.
    const empty = run(['-'], '');
    expect(empty.stdout).toContain('(stdin): unreadable: nothing arrived on standard input');
    expect(empty.stdout).not.toMatch(/^OK/m);
    expect(empty.status).toBe(2);
  });

  it('never passes an empty transcript, given as a file, on standard input or in a folder', async () => {
    // A transcript with no record vouches for nothing: the same verdict whichever way it came.
    const run = (args: string[], input = '') => spawnSync(process.execPath, [BIN, 'scan', ...args], { input, encoding: 'utf8', cwd: dir, timeout: 20_000 });
    const empty = join(dir, 'empty-transcript.jsonl');
    await writeFile(empty, '');
    const blank = join(dir, 'blank-transcript.jsonl');
    await writeFile(blank, '\n  \n\n');
    for (const file of [empty, blank]) {
      const fromFile = run([file]);
      expect(fromFile.stdout).toContain(`${file}: unreadable: `);
      expect(fromFile.stdout).not.toMatch(/^OK/m);
      expect(fromFile.status).toBe(2);
    }
    expect(run([empty]).stdout).toContain(`${empty}: unreadable: empty: no transcript record in it`);
    expect(run([blank]).stdout).toContain(`${blank}: unreadable: only blank lines: no transcript record in it`);
    const blankStdin = run(['-'], '\n\n');
    expect(blankStdin.stdout).toContain('(stdin): unreadable: only blank lines: no transcript record in it');
    expect(blankStdin.status).toBe(2);
    // One empty file among transcripts that pass: named, and no OK.
    const folder = join(dir, 'with-an-empty-one');
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'fine.jsonl'), jsonl([hookRecord({ uuid: 'h-fine', sessionId: 's-fine', hookName: 'Stop', stdout: 'ok' })]));
    await writeFile(join(folder, 'empty.jsonl'), '');
    const inFolder = run(['--json', folder]);
    const result = JSON.parse(inFolder.stdout) as ScanOutput;
    expect(result.ok).toBe(false);
    expect(result.files.map((f) => [f.path, f.error])).toEqual([[join(folder, 'empty.jsonl'), 'empty: no transcript record in it'], [join(folder, 'fine.jsonl'), undefined]]);
    expect(inFolder.status).toBe(2);
  });

  it('exits 2 when the paths hold no transcripts, so a job pointed at the wrong folder fails', async () => {
    const empty = join(dir, 'empty', 'nested');
    await mkdir(empty, { recursive: true });
    await writeFile(join(empty, 'notes.txt'), 'not a transcript');
    const { code, out, err } = await scan([join(dir, 'empty')]);
    expect(err).toContain(`no transcripts found under ${join(dir, 'empty')}`);
    expect(out).not.toContain('OK');
    expect(code).toBe(2);
  });
});

/** Decoded OTLP/JSON log records with their attributes flattened. */
interface ReceivedRecord {
  resource: Record<string, unknown>;
  scope: { name: string; version?: string };
  body: unknown;
  attributes: Record<string, { stringValue?: string }>;
}

describe('scan --send', () => {
  let server: Server;
  let received: { path: string; contentType: string; records: ReceivedRecord[] }[];
  let status = 200;
  /** When set, the answer to the nth request of the test (from 1), in place of status. */
  let answerFor: ((n: number) => number) | undefined;
  let base: string;

  beforeAll(async () => {
    received = [];
    server = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceLogs: { resource: { attributes: { key: string; value: { stringValue?: string } }[] }; scopeLogs: { scope: { name: string; version?: string }; logRecords: { body: unknown; attributes: { key: string; value: { stringValue?: string } }[] }[] }[] }[];
        };
        const records: ReceivedRecord[] = [];
        for (const rl of body.resourceLogs) {
          const resource = Object.fromEntries(rl.resource.attributes.map((a) => [a.key, a.value.stringValue]));
          for (const sl of rl.scopeLogs) {
            for (const lr of sl.logRecords) records.push({ resource, scope: sl.scope, body: lr.body, attributes: Object.fromEntries(lr.attributes.map((a) => [a.key, a.value])) });
          }
        }
        received.push({ path: req.url ?? '', contentType: req.headers['content-type'] ?? '', records });
        const answer = answerFor?.(received.length) ?? status;
        res.writeHead(answer, { 'content-type': 'application/json' });
        res.end(answer === 200 ? '{}' : '{"code":3,"message":"bad request"}');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.close();
    await once(server, 'close');
  });

  it('posts one finding per command run and per output, with its source and a stable id, never as telemetry', async () => {
    const file = await transcript('send.jsonl', sessionARecords());
    received = [];
    const { code, result } = await scanJson(['--send', base, file]);
    expect(result.send).toEqual({ url: `${base}/v1/logs`, emitted: 6, exported: 6, failed: 0, notSent: 0 });
    expect(code).toBe(1);

    expect(received.map((r) => [r.path, r.contentType])).toEqual([['/v1/logs', 'application/json']]);
    const records = received.flatMap((r) => r.records);
    expect(records).toHaveLength(6);
    for (const record of records) {
      // Not Claude Code's scope or event: hookwatch keeps these apart from hook_execution_complete telemetry.
      expect(record.resource['service.name']).toBe('hookwatch-scan');
      expect(record.scope.name).toBe('hookwatch.scan');
      expect(record.body).toEqual({ stringValue: 'hookwatch.transcript_finding' });
      for (const [key, value] of Object.entries(record.attributes)) expect(Object.keys(value), key).toEqual(['stringValue']);
    }
    const flat = records.map((r) => Object.fromEntries(Object.entries(r.attributes).map(([k, v]) => [k, v.stringValue])));
    expect(flat[0]).toEqual({
      'event.name': 'hookwatch.transcript_finding',
      'event.timestamp': '2026-11-30T08:00:00.500Z',
      'hookwatch.source': 'transcript',
      'hookwatch.finding.id': 'hook-a-1',
      'hookwatch.finding.kind': 'run',
      'session.id': SESSION_A,
      hook_event: 'SessionStart',
      hook_name: 'SessionStart:startup',
      hook_command: '"$CLAUDE_PROJECT_DIR"/.claude/hooks/SessionStart.sh',
      run_outcome: 'success',
    });
    expect(flat[1]).toMatchObject({
      'hookwatch.finding.id': `saved:${savedPath(SESSION_A, 'a1')}`,
      'hookwatch.finding.kind': 'output',
      hook_name: 'SessionStart:startup',
      output_field: 'stdout',
      output_outcome: 'persisted',
    });
    // Size unknown (the record quotes only the marker): absent, never zero.
    expect(flat[1]).not.toHaveProperty('output_chars');
    expect(flat[3]).toMatchObject({ 'hookwatch.finding.id': 'hook-a-2#stdout', output_outcome: 'delivered', output_chars: '500' });
    expect(flat[5]).toMatchObject({ hook_name: 'UserPromptSubmit', output_outcome: 'delivered', output_chars: '100' });
  });

  it('never sends or prints a credential in a command line', async () => {
    const record = hookRecord({ uuid: 'h-secret', sessionId: 's-secret', hookName: 'Stop', stdout: 'ok' });
    (record.attachment as Record<string, unknown>).command = 'SLACK_TOKEN=xoxb-123-456 ./notify.sh --password hunter2';
    const file = await transcript('secret-command.jsonl', [record]);
    received = [];
    const { out } = await scan(['--send', base, file]);
    const sent = JSON.stringify(received);
    for (const text of [out, sent]) {
      expect(text).toContain('SLACK_TOKEN=[redacted] ./notify.sh --password [redacted]');
      expect(text).not.toContain('xoxb-123-456');
      expect(text).not.toContain('hunter2');
    }
  });

  it('never sends or prints a header credential, a token or a webhook URL in a command line', async () => {
    const command =
      'curl -s -H "Authorization: token ghp_abcdefghijklmnop1234" -H "X-Api-Key: abc123secret" -u admin:hunter2 -X POST https://hooks.slack.com/services/T0123/B0456/abcdefSECRETxyz -d @- && node notify.js --key sk-ant-api03-abcdefghijk https://discord.com/api/webhooks/123/SECRETTOKEN';
    const record = hookRecord({ uuid: 'h-webhook', sessionId: 's-webhook', hookName: 'Stop', stdout: 'ok' });
    (record.attachment as Record<string, unknown>).command = command;
    const file = await transcript('webhook-command.jsonl', [record]);
    received = [];
    const { out } = await scan(['--send', base, file]);
    const { result } = await scanJson([file]);
    const sent = JSON.stringify(received);
    expect(received.flatMap((r) => r.records)).toHaveLength(2);
    const redacted =
      'curl -s -H "Authorization: token [redacted]" -H "X-Api-Key: [redacted]" -u admin:[redacted] -X POST https://hooks.slack.com/[redacted] -d @- && node notify.js --key [redacted] https://discord.com/[redacted]';
    expect(out).toContain(redacted);
    expect(result.hooks[0]?.commands.map((c) => c.command)).toEqual([redacted]);
    const sentCommands = received.flatMap((r) => r.records).map((r) => r.attributes.hook_command?.stringValue);
    expect(sentCommands).toEqual([redacted, redacted]);
    for (const text of [out, JSON.stringify(result), sent]) {
      for (const secret of ['ghp_abcdefghijklmnop1234', 'abc123secret', 'hunter2', 'T0123', 'SECRET', 'sk-ant-api03']) expect(text).not.toContain(secret);
    }
  });

  it('never prints the user, password or query of the --send URL, sent or refused', async () => {
    const file = await transcript('send-credentials.jsonl', [hookRecord({ uuid: 'h-cred', sessionId: 's', hookName: 'Stop', stdout: 'ok' })]);
    const target = base.replace('http://', 'http://ops:Pw-9f3k2@') + '/v1/logs?token=Q-s3cret';
    try {
      for (const answer of [200, 400]) {
        status = answer;
        const { out } = await scan(['--send', target, file]);
        const { result } = await scanJson(['--send', target, file]);
        expect(out).toContain(answer === 200 ? `to ${base}/v1/logs\n` : `Sending to ${base}/v1/logs failed`);
        expect(result.send?.url).toBe(`${base}/v1/logs`);
        for (const text of [out, JSON.stringify(result)]) {
          expect(text).not.toContain('Pw-9f3k2');
          expect(text).not.toContain('Q-s3cret');
          expect(text).not.toContain('ops:');
        }
      }
    } finally {
      status = 200;
    }
  });

  it('exits 3 and says so when the server refuses the events', async () => {
    const file = await transcript('send-refused.jsonl', [hookRecord({ uuid: 'h1', sessionId: 's', hookName: 'Stop', stdout: 'ok' })]);
    status = 400;
    try {
      const { code, out } = await scan(['--send', `${base}/v1/logs`, file]);
      expect(out).toContain(`Sending to ${base}/v1/logs failed`);
      expect(out).toContain('(0 of 2 findings sent; the rest not sent)');
      expect(code).toBe(3);
    } finally {
      status = 200;
    }
  });

  it('says how many of all the findings were sent when sending stops part way, and is not ok in --json', async () => {
    // 1,500 runs with an output each: 3,000 findings; the first request is taken, the second refused.
    const records = Array.from({ length: 1_500 }, (_, i) => hookRecord({ uuid: `h-part-${i}`, sessionId: 's-part', hookName: 'Stop', stdout: 'ok' }));
    const file = await transcript('send-part.jsonl', records);
    answerFor = (n) => (n === 1 ? 200 : 400);
    try {
      received = [];
      const { code, out } = await scan(['--send', base, file]);
      expect(out).toContain(`Sending to ${base}/v1/logs failed`);
      expect(out).toContain('(500 of 3,000 findings sent; the rest not sent)');
      expect(code).toBe(3);
      received = [];
      const json = await scanJson(['--send', base, file]);
      expect(json.result.send).toMatchObject({ emitted: 1_000, exported: 500, failed: 500, notSent: 2_000 });
      expect(json.result).toMatchObject({ ok: false, complete: true });
      expect(json.code).toBe(3);
    } finally {
      answerFor = undefined;
    }
  });

  it('builds the logs URL from a base URL, keeps a full one, and rejects what is not http', () => {
    expect(logsUrl('http://hookwatch:4318')).toBe('http://hookwatch:4318/v1/logs');
    expect(logsUrl('http://hookwatch:4318/')).toBe('http://hookwatch:4318/v1/logs');
    expect(logsUrl('https://example.com/otlp')).toBe('https://example.com/otlp/v1/logs');
    expect(logsUrl('http://hookwatch:4318/v1/logs')).toBe('http://hookwatch:4318/v1/logs');
    expect(() => logsUrl('hookwatch:4318')).toThrow(/expected an http\(s\) URL/);
    expect(() => logsUrl('not a url')).toThrow(/not a URL/);
  });
});
