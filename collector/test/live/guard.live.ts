/**
 * The guard with the real Claude Code 2.1.332 (run with `npm run test:live`; outside `npm test` because the
 * client is a ~400 MB download). A SessionStart hook prints a 15,000-character additionalContext and another a
 * 12,000-character plain stdout, both through `hookwatch guard` installed by `--install`. Claude Code's own
 * telemetry, received by a real hookwatch, must show nothing persisted, and the transcript must hold the kept
 * front and the pointer lines.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HooksResponse } from '../../../shared/src/api.ts';
import type { GuardTrimsResponse } from '../../../shared/src/guard-trims.ts';
import { hookId } from '../../src/hooks/extract.ts';
import { OUTPUT_CAP_CHARS } from '../../../shared/src/cliff.ts';
import { getJson, startTestService, tempDir } from '../helpers.ts';
import type { TestService } from '../helpers.ts';
import { runGuard } from '../../src/tools/guard/index.ts';
import { locateClaudeCode } from './claude-code.ts';

const run = promisify(execFile);

/** Lines `context line 0`, `context line 1`, ... cut to `chars`: the front is recognisable in the transcript. */
const hookScript = (prefix: string, chars: number, json: boolean): string => `#!/bin/sh
exec "${process.execPath}" -e '
let s = ""; for (let i = 0; s.length < ${chars}; i++) s += "${prefix} line " + i + "\\n";
s = s.slice(0, ${chars});
process.stdout.write(${json ? 'JSON.stringify({ hookSpecificOutput: { hookEventName: "SessionStart", additionalContext: s } })' : 's'});
'
`;

let claude: string;
let service: TestService;
let scratch: ReturnType<typeof tempDir>;

beforeAll(async () => {
  claude = await locateClaudeCode();
  service = await startTestService();
  scratch = tempDir('hookwatch-live-');
}, 20 * 60_000);

afterAll(async () => {
  await service?.close();
  scratch?.cleanup();
});

/** `hookwatch guard --install` on the project's settings, as a user would run it; returns what it printed. */
async function installIn(project: string): Promise<string> {
  const printed: string[] = [];
  const exit = await runGuard(['--install'], {
    stdin: process.stdin,
    stdout: (data) => {
      printed.push(data.toString());
      return Promise.resolve();
    },
    stderr: (s) => printed.push(s),
    env: process.env,
    cwd: project,
  });
  expect(exit, printed.join('')).toEqual({ code: 0 });
  return printed.join('');
}

/** `claude -p hi` offline in `project`, exporting its telemetry to `otlp`; its failing API call is expected. */
async function runClaude(project: string, home: string, otlp: string, extra: NodeJS.ProcessEnv): Promise<void> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    ANTHROPIC_API_KEY: 'sk-ant-fake-000',
    // Nothing listens on port 9: the API call fails after the SessionStart hooks ran and were exported.
    ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
    CLAUDE_CODE_MAX_RETRIES: '0',
    CLAUDE_CODE_ENABLE_TELEMETRY: '1',
    OTEL_LOGS_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
    OTEL_LOGS_EXPORT_INTERVAL: '500',
    ...extra,
  };
  await run(claude, ['-p', 'hi'], { cwd: project, env, timeout: 120_000 }).catch((error: unknown) => error);
}

interface Figures {
  outputsPersisted: number;
  additionalContextChars: number | null;
  stdoutChars: number | null;
}

describe('hookwatch guard with the real Claude Code', () => {
  it('keeps a 15,000-character additionalContext and a 12,000-character stdout under the cap, with pointers', async () => {
    const project = join(scratch.dir, 'project');
    const home = join(scratch.dir, 'home');
    const guardDir = join(scratch.dir, 'full-outputs');
    await mkdir(join(project, '.claude', 'hooks'), { recursive: true });
    await mkdir(home, { recursive: true });
    await writeFile(join(project, '.claude', 'hooks', 'context.sh'), hookScript('context', 15_000, true));
    await writeFile(join(project, '.claude', 'hooks', 'plain.sh'), hookScript('plain', 12_000, false));
    for (const f of ['context.sh', 'plain.sh']) await chmod(join(project, '.claude', 'hooks', f), 0o755);
    const hook = (name: string): { type: string; command: string } => ({ type: 'command', command: `"$CLAUDE_PROJECT_DIR"/.claude/hooks/${name}` });
    await writeFile(join(project, '.claude', 'settings.json'), JSON.stringify({ hooks: { SessionStart: [{ hooks: [hook('context.sh'), hook('plain.sh')] }] } }, null, 2));

    expect(await installIn(project)).toContain('wrapped 2 of 2');
    await runClaude(project, home, service.otlpHttpUrl, {
      HOOKWATCH_GUARD_DIR: guardDir,
      // Claude Code passes its environment on to hooks: the guard reports each trim to the same hookwatch.
      HOOKWATCH_GUARD_REPORT: service.otlpHttpUrl,
    });

    const figures = await waitForFigures(service.httpUrl);
    // Logged so a run shows the numbers, not only pass/fail.
    process.stdout.write(`live figures: ${JSON.stringify(figures)}\n`);
    expect(figures.outputsPersisted).toBe(0);
    expect(figures.additionalContextChars).not.toBeNull();
    expect(figures.additionalContextChars ?? Infinity).toBeLessThan(OUTPUT_CAP_CHARS);
    expect(figures.additionalContextChars ?? 0).toBeGreaterThan(9_000);

    const projects = join(home, '.claude', 'projects');
    const folders = await readdir(projects);
    const transcripts = (await Promise.all(folders.map(async (f) => (await readdir(join(projects, f))).filter((n) => n.endsWith('.jsonl')).map((n) => join(projects, f, n))))).flat();
    expect(transcripts.length).toBeGreaterThan(0);
    const transcript = (await Promise.all(transcripts.map((t) => readFile(t, 'utf8')))).join('\n');
    const delivered = transcript
      .split('\n')
      .filter((line) => line.includes('"hook_success"'))
      .map((line) => JSON.parse(line) as { attachment: { stdout?: string; content?: string } })
      .map((record) => `${record.attachment.stdout ?? ''}`);
    const context = delivered.find((s) => s.includes('context line 0'));
    const plain = delivered.find((s) => s.startsWith('plain line 0\nplain line 1\n'));
    expect(context).toBeDefined();
    expect(plain).toBeDefined();
    const pointer = /\[hookwatch guard: ([\d,]+) more characters left out; the full output is in (\S+)\]/;
    for (const text of [context ?? '', plain ?? '']) {
      const match = pointer.exec(text);
      expect(match, text.slice(-300)).not.toBeNull();
      expect(match?.[2]?.startsWith(guardDir)).toBe(true);
    }
    expect(transcript).not.toContain('<persisted-output>');
    const plainFull = await readFile(pointer.exec(plain ?? '')?.[2] ?? '', 'utf8');
    expect(plainFull.length).toBe(12_000);

    // The hook page's data: both trims, each sent over the cap and delivered under it.
    const startup = hookId('SessionStart', 'SessionStart:startup');
    let trims: GuardTrimsResponse | undefined;
    for (let i = 0; i < 200 && (trims?.trims ?? 0) < 2; i++) {
      trims = (await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${startup}/guard-trims`)).body;
      if ((trims.trims ?? 0) < 2) await new Promise((r) => setTimeout(r, 100));
    }
    process.stdout.write(`live guard trims: ${JSON.stringify(trims)}\n`);
    expect(trims?.trims).toBe(2);
    expect(trims?.largest).toMatchObject({ field: 'hookSpecificOutput.additionalContext', sentChars: 15_000 });
    expect(trims?.largest?.keptChars).toBeLessThan(OUTPUT_CAP_CHARS);
  }, 240_000);
});

describe('a guarded hook that Claude Code times out', () => {
  it('is stopped with the guard: the command does not outlive the timeout, and Claude Code reports it cancelled', async () => {
    const own = await startTestService();
    try {
      const project = join(scratch.dir, 'timeout-project');
      const home = join(scratch.dir, 'timeout-home');
      const pidFile = join(scratch.dir, 'hook.pid');
      await mkdir(join(project, '.claude'), { recursive: true });
      await mkdir(home, { recursive: true });
      const command = `echo $$ > '${pidFile}'; exec sleep 120`;
      await writeFile(join(project, '.claude', 'settings.json'), JSON.stringify({ hooks: { SessionStart: [{ hooks: [{ type: 'command', command, timeout: 2 }] }] } }));
      expect(await installIn(project)).toContain('wrapped 1 of 1');
      await runClaude(project, home, own.otlpHttpUrl, {});
      const pid = Number((await readFile(pidFile, 'utf8')).trim());
      expect(pid).toBeGreaterThan(0);
      let alive = true;
      for (let i = 0; i < 100 && alive; i++) {
        try {
          process.kill(pid, 0);
          await new Promise((r) => setTimeout(r, 100));
        } catch {
          alive = false;
        }
      }
      expect(alive, 'the hook command outlived Claude Code\'s timeout').toBe(false);
      const deadline = Date.now() + 60_000;
      let cancelled = 0;
      while (Date.now() < deadline && cancelled === 0) {
        const { body } = await getJson<HooksResponse>(own.httpUrl, '/api/v1/hooks');
        cancelled = body.hooks.find((h) => h.hookName === 'SessionStart:startup')?.cancelled ?? 0;
        if (cancelled === 0) await new Promise((r) => setTimeout(r, 250));
      }
      expect(cancelled).toBe(1);
    } finally {
      await own.close();
    }
  }, 240_000);
});

async function waitForFigures(base: string): Promise<Figures> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { body } = await getJson<HooksResponse>(base, '/api/v1/hooks');
    const hook = body.hooks.find((h) => h.hookName === 'SessionStart:startup' && h.executions > 0);
    if (hook) return { outputsPersisted: hook.outputsPersisted, additionalContextChars: hook.maxChars.additionalContext, stdoutChars: hook.maxChars.stdout };
    if (Date.now() > deadline) throw new Error(`no SessionStart:startup execution reached hookwatch: ${JSON.stringify(body.hooks)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
