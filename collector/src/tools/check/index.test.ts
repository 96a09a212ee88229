import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { OUTPUT_CAP_CHARS, PREVIEW_CHARS } from '../../../../shared/src/cliff.ts';
import { captureIO } from '../../../test/support/capture-io.ts';
import { HOOKWATCH_BIN as BIN, outputOf, runHookwatch, type ProcessOutput } from '../../../test/support/hookwatch-process.ts';
import { hookwatchThroughNpm, PACKAGE_ROOT, shellPath } from '../../../test/support/npm-run.ts';
import { alive, waitFor } from '../../../test/support/processes.ts';
import { groupRuns } from '../common/processes.ts';
import { defaultGuardPrefix, wrapCommand } from '../guard/install.ts';
import { runCheck } from './index.ts';
import { matcherSelects } from './hook-input.ts';
import type { MeasuredOutput } from './measure.ts';

const testdata = fileURLToPath(new URL('../testdata/', import.meta.url));
/** The real hook setup that produced the Claude Code 2.1.332 fixtures (settings.json and hooks/). */
const realSetup = fileURLToPath(new URL('../../../testdata/claude-code-2.1.332/hook-setups/proj3-tools/', import.meta.url));

/** The shape of `check --json`, as far as these tests read it. */
interface CheckOutput {
  ok: boolean;
  budget: number | null;
  projectDir: string;
  projectDirFrom: 'flag' | 'settings' | 'cwd';
  hooks: {
    hookName: string;
    event: string;
    status: string;
    fails: boolean;
    exitCode: number | null;
    timedOut: boolean;
    durationMs: number;
    stdoutChars: number;
    format: string;
    location: string | null;
    /** As measured; JSON leaves out a preview that is not set, and the content without --show-content. */
    outputs: (Omit<MeasuredOutput, 'preview' | 'content'> & { preview?: string; content?: string })[];
  }[];
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hookwatch-check-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The pid a hook wrote to `file` once started; throws when none is there within 20 s, far longer than a start takes. */
async function pidFrom(file: string): Promise<number> {
  let pid = NaN;
  await waitFor(async () => {
    pid = Number.parseInt(await readFile(file, 'utf8').catch(() => ''), 10);
    return !Number.isNaN(pid);
  }, { what: `a pid in ${file}`, withinMs: 20_000 });
  return pid;
}

/** Resolves once the process group `pid` leads (a hook's shell and what it started) is gone, not left running on its own. */
async function groupGone(pid: number): Promise<void> {
  await waitFor(async () => !groupRuns(pid), { what: `process group ${pid} gone`, withinMs: 20_000 });
}

/** Writes an executable hook script into the temp dir and returns its path. */
async function hookScript(name: string, body: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, body);
  await chmod(path, 0o755);
  return path;
}

/** A project `name` under the test folder whose .claude/settings.json holds `settings`; its path. */
async function settingsFile(name: string, settings: unknown): Promise<string> {
  const path = join(dir, name, '.claude', 'settings.json');
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, JSON.stringify(settings));
  return path;
}

/** A node hook script that prints what `js` evaluates to (a string) on stdout. */
async function nodeHook(name: string, js: string): Promise<string> {
  return hookScript(name, `#!/usr/bin/env node\nprocess.stdout.write(${js});\n`);
}

async function check(argv: string[], cwd = dir): Promise<{ code: number; out: string; err: string }> {
  const captured = captureIO(cwd);
  const code = await runCheck(argv, captured.io);
  return { code, out: captured.stdout(), err: captured.stderr() };
}

async function checkJson(argv: string[], cwd = dir): Promise<{ code: number; result: CheckOutput; err: string }> {
  const { code, out, err } = await check(['--json', ...argv], cwd);
  return { code, result: JSON.parse(out) as CheckOutput, err };
}

/** Runs the real `hookwatch check` in `cwd` (`dir` by default), as a user at a terminal does; its exit code and output. */
function checkCli(argv: string[], { cwd = dir, env = process.env }: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<ProcessOutput> {
  return runHookwatch(['check', ...argv], { cwd, env });
}

function onlyOutput(result: CheckOutput) {
  expect(result.hooks).toHaveLength(1);
  expect(result.hooks[0]?.outputs).toHaveLength(1);
  const output = result.hooks[0]?.outputs[0];
  if (!output) throw new Error('no output');
  return output;
}

describe('check: the cliff at 10,000 characters', () => {
  it('delivers exactly 10,000 characters of plain stdout whole and passes', async () => {
    const hook = await hookScript('exact.sh', `#!/bin/sh\nhead -c ${OUTPUT_CAP_CHARS} /dev/zero | tr '\\0' x\n`);
    const { code, result } = await checkJson(['--', hook]);
    const output = onlyOutput(result);
    expect(output).toMatchObject({ kind: 'stdout', sent: 10_000, delivered: 10_000, headroom: 0, persisted: false, status: 'near' });
    expect(output.preview).toBeUndefined();
    expect(result.ok).toBe(true);
    expect(code).toBe(0);
  });

  it('runs a hook file whose path holds a space, given as one word (a shell expanded "$CLAUDE_PROJECT_DIR" already)', async () => {
    await mkdir(join(dir, 'sp ace'), { recursive: true });
    const hook = await hookScript(join('sp ace', 'brief.sh'), '#!/bin/sh\nprintf brief-ok\n');
    const { code, result } = await checkJson(['--', hook]);
    expect(onlyOutput(result)).toMatchObject({ kind: 'stdout', sent: 'brief-ok'.length });
    expect(code).toBe(0);
  });

  it('fails at 10,001 characters and shows the 2,000-character preview the model gets', async () => {
    const hook = await nodeHook('over-by-one.mjs', `'A'.repeat(${PREVIEW_CHARS}) + 'B'.repeat(${OUTPUT_CAP_CHARS + 1 - PREVIEW_CHARS})`);
    const { code, result } = await checkJson(['--show-output', '--', hook]);
    const output = onlyOutput(result);
    expect(output).toMatchObject({ sent: 10_001, delivered: PREVIEW_CHARS, headroom: -1, persisted: true, status: 'over' });
    expect(output.preview).toBe('A'.repeat(PREVIEW_CHARS));
    expect(result.hooks[0]?.fails).toBe(true);
    expect(code).toBe(1);

    const text = await check(['--show-output', '--', hook]);
    expect(text.code).toBe(1);
    expect(text.out).toMatch(/stdout\s+10,001\s+~2,000\s+-1\s+OVER the cap/);
    expect(text.out).toContain(`${'A'.repeat(PREVIEW_CHARS)}\n  --- end of preview ---`);
    expect(text.out).toMatch(/^FAIL: 1 output over the 10,000-character cap/m);
  });

  it('prints no hook output (nor stderr) unless --show-output is given: CI logs are widely read', async () => {
    const hook = await nodeHook('token-in-output.mjs', `(process.stderr.write('STDERR_TOKEN'), 'ghp_PREVIEWTOKEN'.repeat(1000))`);
    const plain = await check(['--', hook]);
    expect(plain.code).toBe(1);
    expect(plain.out).not.toContain('ghp_PREVIEWTOKEN');
    expect(plain.out).not.toContain('STDERR_TOKEN');
    expect(plain.out).toContain('the model sees only its first 2,000 characters (--show-output prints them');
    const json = await checkJson(['--', hook]);
    expect(JSON.stringify(json.result)).not.toContain('PREVIEWTOKEN');
    expect(JSON.stringify(json.result)).not.toContain('STDERR_TOKEN');
    const shown = await check(['--show-output', '--', hook]);
    expect(shown.out).toContain('ghp_PREVIEWTOKEN');
    expect(shown.out).toContain('STDERR_TOKEN');
  });

  it('never prints output past the preview unless --show-content is given', async () => {
    const hook = await nodeHook('secret-tail.mjs', `'p'.repeat(${PREVIEW_CHARS}) + 'SECRET_TAIL'.repeat(1000)`);
    const plain = await check(['--', hook]);
    expect(plain.code).toBe(1);
    expect(plain.out).not.toContain('SECRET_TAIL');
    const json = await check(['--json', '--', hook]);
    expect(json.out).not.toContain('SECRET_TAIL');

    const shown = await check(['--show-content', '--', hook]);
    expect(shown.out).toContain('SECRET_TAIL'.repeat(1000));
  });

  it('--show-content titles an output and a stderr it kept only the head of by how much it shows, and one kept whole as whole', async () => {
    // 2 MiB of plain text: check keeps its first 1 MiB; 5,000 characters of stderr: it keeps the first 4,000.
    const keptBytes = 1024 * 1024;
    const hook = await hookScript('long-plain.sh', `#!/bin/sh\nnode -e 'process.stdout.write("x".repeat(${2 * keptBytes})); process.stderr.write("e".repeat(5000))'\n`);
    const shown = await checkCli(['--show-content', '--', hook]);
    expect(shown.code, shown.stderr).toBe(1);
    expect(shown.stdout).toContain(`  --- stdout: its first 1,048,576 of 2,097,152 characters, all check keeps ---\n    ${'x'.repeat(keptBytes)}\n  --- end of stdout ---\n`);
    expect(shown.stdout).not.toContain('whole');
    expect(shown.stdout).toContain(`  --- stderr: its first 4,000 of 5,000 characters, all check keeps ---\n    ${'e'.repeat(4000)}\n  --- end of stderr ---\n`);

    const small = await hookScript('short-plain.sh', `#!/bin/sh\nprintf 'all of it'\nprintf 'err' >&2\n`);
    const whole = await checkCli(['--show-content', '--', small]);
    expect(whole.code, whole.stderr).toBe(0);
    expect(whole.stdout).toContain('  --- stdout, whole ---\n    all of it\n  --- end of stdout ---\n');
    expect(whole.stdout).toContain('  --- stderr, whole ---\n    err\n  --- end of stderr ---\n');
  });
});

describe('check: UTF-16 code units, not characters', () => {
  it('counts an emoji as 2: 5,000 emoji are exactly the cap, 5,001 are over although only 5,001 code points', async () => {
    const atCap = await nodeHook('emoji-5000.mjs', `'😀'.repeat(5000)`);
    const under = await checkJson(['--', atCap]);
    expect(onlyOutput(under.result)).toMatchObject({ sent: 10_000, codePoints: 5_000, persisted: false });
    expect(under.code).toBe(0);

    const overCap = await nodeHook('emoji-5001.mjs', `'😀'.repeat(5001)`);
    const over = await checkJson(['--show-output', '--', overCap]);
    const output = onlyOutput(over.result);
    expect(output).toMatchObject({ sent: 10_002, codePoints: 5_001, persisted: true, delivered: PREVIEW_CHARS });
    expect(output.preview).toBe('😀'.repeat(1000));
    expect(over.code).toBe(1);

    const text = await check(['--', overCap]);
    expect(text.out).toContain('5,001 code points but 10,002 UTF-16 code units');
  });

  it('never cuts an emoji in half in the preview, and counts what it delivers the same in --json and the report', async () => {
    // 'a' then emoji: code unit 2,000 is the high half of an emoji; the preview stops before it, 1,999 code units.
    const hook = await nodeHook('emoji-odd.mjs', `'a' + '😀'.repeat(6000)`);
    const json = await checkCli(['--json', '--show-output', '--', hook]);
    const output = onlyOutput(JSON.parse(json.stdout) as CheckOutput);
    expect(output.preview).toBe('a' + '😀'.repeat(999));
    expect(output.preview?.isWellFormed()).toBe(true);
    expect(output).toMatchObject({ sent: 12_001, delivered: PREVIEW_CHARS - 1, persisted: true });
    const text = await checkCli(['--show-output', '--', hook]);
    expect(text.stdout).toMatch(/^ {2}stdout +12,001 +~1,999 +-2,001 +OVER/m);
    expect(text.stdout).toContain('--- what the model sees of stdout: the first 1,999 of 12,001 characters ---');
    const hidden = await checkCli(['--', hook]);
    expect(hidden.stdout).toContain('stdout: the model sees only its first 1,999 characters');
  });

  it('counts the code points of an output past what it keeps, an emoji as one', async () => {
    // 17,000,000 emoji, 68,000,000 bytes: past the 64 MiB (67,108,864 bytes) check keeps of a stdout that may be
    // JSON, and the 1 MiB it keeps of plain text; within the 256 MiB it reads.
    const hook = await nodeHook('emoji-68mb.mjs', `'😀'.repeat(17_000_000)`);
    const json = await checkCli(['--json', '--', hook]);
    const result = JSON.parse(json.stdout) as CheckOutput;
    expect(onlyOutput(result)).toMatchObject({ sent: 34_000_000, codePoints: 17_000_000, persisted: true });
    const text = await checkCli(['--', hook]);
    expect(text.stdout).toContain('17,000,000 code points but 34,000,000 UTF-16 code units');
  }, 60_000);

  it('counts 3-byte CJK characters as 1 each: 10,000 of them (30,000 bytes) still arrive whole', async () => {
    const hook = await nodeHook('cjk.mjs', `'漢'.repeat(10000)`);
    const { code, result } = await checkJson(['--', hook]);
    expect(onlyOutput(result)).toMatchObject({ sent: 10_000, codePoints: 10_000, persisted: false });
    expect(code).toBe(0);
  });
});

describe('check: JSON output', () => {
  it('measures additionalContext, systemMessage and initialUserMessage each on its own, not the JSON wrapper', async () => {
    const hook = await nodeHook(
      'json-mixed.mjs',
      `JSON.stringify({ systemMessage: 'S'.repeat(9000), hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: 'C'.repeat(12000), initialUserMessage: 'I'.repeat(10000) } })`,
    );
    const { code, result } = await checkJson(['--show-output', '--', hook]);
    const [hookResult] = result.hooks;
    expect(hookResult?.format).toBe('json');
    expect(hookResult?.stdoutChars).toBeGreaterThan(31_000);
    const byField = Object.fromEntries((hookResult?.outputs ?? []).map((o) => [o.field, o]));
    expect(Object.keys(byField).sort()).toEqual(['hookSpecificOutput.additionalContext', 'hookSpecificOutput.initialUserMessage', 'systemMessage']);
    expect(byField['hookSpecificOutput.additionalContext']).toMatchObject({ kind: 'additionalContext', sent: 12_000, delivered: PREVIEW_CHARS, headroom: -2_000, persisted: true });
    expect(byField['hookSpecificOutput.additionalContext']?.preview).toBe('C'.repeat(PREVIEW_CHARS));
    expect(byField.systemMessage).toMatchObject({ kind: 'systemMessage', sent: 9_000, delivered: 9_000, headroom: 1_000, persisted: false, status: 'near' });
    expect(byField['hookSpecificOutput.initialUserMessage']).toMatchObject({ sent: 10_000, persisted: false });
    expect(byField.systemMessage?.preview).toBeUndefined();
    expect(code).toBe(1);
  });

  it('passes JSON output whose stdout is over 10,000 when every field is under', async () => {
    const hook = await nodeHook('json-under.mjs', `JSON.stringify({ systemMessage: 'S'.repeat(6000), hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: 'C'.repeat(9000) } })`);
    const { code, result } = await checkJson(['--', hook]);
    expect(result.hooks[0]?.stdoutChars).toBeGreaterThan(15_000);
    expect(result.hooks[0]?.outputs.map((o) => [o.kind, o.sent, o.persisted])).toEqual([
      ['additionalContext', 9_000, false],
      ['systemMessage', 6_000, false],
    ]);
    expect(code).toBe(0);
  });

  it('fails outputs over --budget although under the cap, and passes them with a larger budget', async () => {
    const hook = await nodeHook('json-budget.mjs', `JSON.stringify({ hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: 'C'.repeat(9600) }, systemMessage: 'ok' })`);
    const tight = await checkJson(['--budget', '9500', '--', hook]);
    expect(tight.result.budget).toBe(9_500);
    expect(tight.result.hooks[0]?.outputs.map((o) => [o.kind, o.status, o.overBudget])).toEqual([
      ['additionalContext', 'over-budget', true],
      ['systemMessage', 'ok', false],
    ]);
    expect(tight.code).toBe(1);
    const text = await check(['--budget', '9500', '--', hook]);
    expect(text.out).toMatch(/^FAIL: 1 output over the budget of 9,500\.$/m);
    expect(text.out).not.toMatch(/^OK:/m);

    const roomy = await checkJson(['--budget', '9700', '--', hook]);
    expect(roomy.code).toBe(0);
  });

  it('treats stdout that starts with "{" but is not JSON as plain text', async () => {
    const hook = await nodeHook('broken-json.mjs', `'{"systemMessage": ' + 'x'.repeat(10500)`);
    const { code, result, err } = await checkJson(['--', hook]);
    expect(err).toBe('');
    expect(result.hooks[0]?.format).toBe('plain');
    expect(onlyOutput(result)).toMatchObject({ kind: 'stdout', persisted: true });
    expect(code).toBe(1);
  });
});

describe('check: running the hook like Claude Code', () => {
  it('kills a hook at its timeout, with what the shell started, and fails', async () => {
    // The shell ignores SIGTERM and its child sleeps: only killing the process group with SIGKILL ends it.
    const hook = await hookScript('slow.sh', `#!/bin/sh\ntrap '' TERM\nprintf 'started'\nsleep 30\nprintf 'never'\n`);
    const started = Date.now();
    const { code, result } = await checkJson(['--timeout', '1', '--', hook]);
    const elapsed = Date.now() - started;
    expect(result.hooks[0]).toMatchObject({ status: 'timed-out', timedOut: true, fails: true, stdoutChars: 7, outputs: [] });
    expect(elapsed).toBeLessThan(8_000);
    expect(code).toBe(1);

    const text = await check(['--timeout', '1', '--', `sleep 30`]);
    expect(text.out).toContain('TIMED OUT after 1 s');
    expect(text.out).toMatch(/^FAIL: 1 hook timed out or failed\.$/m);
    expect(text.out).not.toMatch(/^OK:/m);
  });

  it('stops reading a hook that prints without end at 256 MiB, stops the hook and fails, holding only the head of its output', async () => {
    const readLimit = 256 * 1024 * 1024;
    const pidFile = join(dir, 'endless.pid');
    const hook = await hookScript('endless.sh', `#!/bin/sh\necho $$ > '${pidFile}'\nexec yes\n`);
    /** Runs the real command, sampling the peak memory of its process (VmHWM) until it ends. */
    const measured = async (args: string[]): Promise<ProcessOutput & { peakKiB: number }> => {
      const child = spawn(process.execPath, [BIN, 'check', ...args], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      let peakKiB = 0;
      const sample = (): void => {
        const status = readFileSync(`/proc/${child.pid}/status`, { encoding: 'utf8', flag: 'r' });
        peakKiB = Math.max(peakKiB, Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1] ?? 0));
      };
      const sampling = setInterval(() => {
        try {
          sample();
        } catch {
          // Ended between two samples.
        }
      }, 20);
      const output = await outputOf(child);
      clearInterval(sampling);
      return { ...output, peakKiB };
    };
    // Within a timeout long enough to read the limit many times over: check stops at the limit, not the timeout.
    const json = await measured(['--json', '--timeout', '20', '--', hook]);
    expect(json.code, json.stderr).toBe(1);
    const [result] = (JSON.parse(json.stdout) as CheckOutput).hooks as (CheckOutput['hooks'][number] & { stdoutBytes?: number; stdoutComplete?: boolean })[];
    expect(result).toMatchObject({ status: 'too-much-output', fails: true, timedOut: false, stdoutBytes: readLimit, stdoutChars: readLimit, stdoutComplete: false, outputs: [] });
    // `yes` itself is stopped, not left writing into a pipe no one reads.
    const pid = await pidFrom(pidFile);
    await waitFor(async () => !alive(pid));
    // Memory: check with a hook that prints nothing holds about 65 MB. Of an endless output only the first 1 MiB
    // is kept, and what is read past it is freed as Node collects its read buffers (some 70 MB at the peak, more
    // when the collector falls behind on a loaded machine); the
    // previous version kept 64 MiB of it as text, some 240 MB more at the peak.
    const idle = await measured(['--json', '--', 'true']);
    expect(idle.code, idle.stderr).toBe(0);
    expect(idle.peakKiB).toBeGreaterThan(0);
    expect(json.peakKiB - idle.peakKiB).toBeLessThan(192 * 1024);

    const text = await measured(['--timeout', '20', '--', hook]);
    expect(text.code, text.stderr).toBe(1);
    expect(text.stdout).toContain('  STOPPED after 256 MiB of stdout, the most check reads: far over the cap');
    expect(text.stdout).toMatch(/^FAIL: 1 hook printed more stdout than check reads \(256 MiB\)\.$/m);
    expect(text.peakKiB - idle.peakKiB).toBeLessThan(192 * 1024);
  }, 120_000);

  it('stops reading a hook that prints without end on stderr at 256 MiB, stops the hook and fails', async () => {
    const readLimit = 256 * 1024 * 1024;
    const pidFile = join(dir, 'endless-stderr.pid');
    const hook = await hookScript('endless-stderr.sh', `#!/bin/sh\necho $$ > '${pidFile}'\nprintf 'some stdout'\nexec yes >&2\n`);
    // Within a timeout long enough to read the limit many times over: check stops at the limit, not the timeout.
    const json = await checkCli(['--json', '--show-output', '--timeout', '20', '--', hook]);
    expect(json.code, json.stderr).toBe(1);
    const [result] = (JSON.parse(json.stdout) as CheckOutput).hooks as (CheckOutput['hooks'][number] & { stdoutBytes?: number; stderrBytes?: number; stderrChars?: number; stderr?: string })[];
    expect(result).toMatchObject({ status: 'too-much-stderr', fails: true, timedOut: false, stderrBytes: readLimit, stderrChars: readLimit, stdoutBytes: 11, stdoutChars: 11, outputs: [] });
    expect(result?.stderr).toBe('y\n'.repeat(2000));
    // `yes` itself is stopped, not left writing into a pipe no one reads.
    const pid = await pidFrom(pidFile);
    await waitFor(async () => !alive(pid));

    const text = await checkCli(['--timeout', '20', '--', hook]);
    expect(text.code, text.stderr).toBe(1);
    expect(text.stdout).toContain('  STOPPED after 256 MiB of stderr, the most check reads of it:');
    expect(text.stdout).toMatch(/^FAIL: 1 hook printed more stderr than check reads \(256 MiB\)\.$/m);
    expect(text.stdout).not.toMatch(/^OK:/m);
  }, 120_000);

  it('takes a timeout up to what a timer holds: a longer --timeout is refused, a longer "timeout" in settings is checked with the longest', async () => {
    // Past 2^31 - 1 ms, Node fires a timer at once: the hook would be stopped as soon as it started.
    const refused = await checkCli(['--timeout', '2147484', '--', 'sleep 0.3; printf ran']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--timeout: expected a whole number from 1 to 2147483, got "2147484"');
    const longest = await checkCli(['--json', '--timeout', '2147483', '--', 'sleep 0.3; printf ran']);
    expect(longest.code, longest.stderr).toBe(0);
    expect(longest.stderr).toBe('');

    // A "never" written in a settings file: what Claude Code does with it is its own, the check runs the hook.
    const path = await settingsFile('timeout-past-a-timer', { hooks: { SessionStart: [{ hooks: [{ type: 'command', command: 'sleep 0.3; printf ran', timeout: 99_999_999 }] }] } });
    const ran = await checkCli(['--json', '--settings', path]);
    expect(ran.code, ran.stderr).toBe(0);
    expect((JSON.parse(ran.stdout) as CheckOutput).hooks[0]).toMatchObject({ status: 'measured', timedOut: false, stdoutChars: 3 });
    expect(ran.stderr).toBe('hookwatch check: hooks.SessionStart[0].hooks[0].timeout: 99999999 seconds is longer than a timer holds; the hook is checked with 2147483 (about 24 days) instead\n');
  });

  it('gives a hook stopped at its timeout the --kill-grace to flush before SIGKILL, a second by default', async () => {
    // On SIGTERM the hook takes 1.5 s to flush, then prints and exits: within a 6 s grace (room for a loaded machine), past the default 1 s.
    const hook = await hookScript('slow-flush.sh', `#!/bin/sh\ntrap 'sleep 1.5; printf flushed; exit 0' TERM\nprintf 'started '\nsleep 30 & wait\n`);
    const graced = await checkCli(['--json', '--timeout', '1', '--kill-grace', '6s', '--', hook]);
    expect(graced.code, graced.stderr).toBe(1);
    expect((JSON.parse(graced.stdout) as CheckOutput).hooks[0]).toMatchObject({ status: 'timed-out', timedOut: true, stdoutChars: 'started flushed'.length });
    const text = await checkCli(['--timeout', '1', '--kill-grace', '6s', '--', hook]);
    expect(text.stdout).toContain('TIMED OUT after 1 s and was stopped: Claude Code cancels such a hook and none of its output reaches the model (15 stdout characters were printed before it ended)');

    const killed = await checkCli(['--json', '--timeout', '1', '--', hook]);
    expect(killed.code, killed.stderr).toBe(1);
    expect((JSON.parse(killed.stdout) as CheckOutput).hooks[0]).toMatchObject({ status: 'timed-out', timedOut: true, stdoutChars: 'started '.length });
  });

  it.each([
    ['SIGINT', ''],
    // A hook that ignores SIGTERM is killed after the grace period.
    ['SIGTERM', `trap '' TERM\n`],
  ] as const)('stopped by %s, the real command stops the hook it runs as well and ends killed by that signal', async (signal, trap) => {
    // The hook runs in a process group of its own, which Ctrl-C at a terminal does not reach.
    const pidFile = join(dir, `hook-${signal}.pid`);
    const hook = await hookScript(`stopped-${signal}.sh`, `#!/bin/sh\n${trap}echo $$ > '${pidFile}'\nsleep 60\nsleep 60\n`);
    const child = spawn(process.execPath, [BIN, 'check', '--', hook], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
    const pid = await pidFrom(pidFile);
    child.kill(signal);
    // Killed by it, not exiting 130 or 143, which tells a shell the command handled the signal.
    expect(await exited).toEqual({ code: null, signal });
    expect(stderr).toBe(`hookwatch check: stopped by ${signal} while ${hook} ran; it was stopped too, nothing was reported\n`);
    expect(stdout).toBe('');
    await groupGone(pid);
  });

  it('stopped by Ctrl-C in a shell loop, the loop stops too', async () => {
    // The hook sleeps on its first run only: a loop that carried on would check it again, and pass.
    const pidFile = join(dir, 'hook-loop.pid');
    const hook = await hookScript('stopped-loop.sh', `#!/bin/sh
[ -e '${pidFile}' ] && exit 0
echo $$ > '${pidFile}'
sleep 60
`);
    const loop = `for i in 1 2; do "$0" "$1" check -- "$2"; echo "carried on after $i"; done`;
    // bash, in a process group of its own as a terminal's foreground job is, with hookwatch check in it.
    const shell = spawn('bash', ['-c', loop, process.execPath, BIN, hook], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    shell.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    shell.stderr.resume();
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => shell.on('close', (code, signal) => resolve({ code, signal })));
    const pid = await pidFrom(pidFile);
    // Ctrl-C at a terminal signals the foreground process group: bash and hookwatch check, not the hook.
    process.kill(-(shell.pid ?? NaN), 'SIGINT');
    // bash waits for the command, sees it killed by SIGINT and stops the loop (it carries on after a status of 130).
    expect(await exited).toEqual({ code: null, signal: 'SIGINT' });
    expect(stdout).toBe('');
    await groupGone(pid);
  });

  it('passes the event input on stdin, CLAUDE_PROJECT_DIR in the environment, and runs in the project directory', async () => {
    const projectDir = await mkdtemp(join(dir, 'project-'));
    const record = join(dir, 'seen-input.json');
    const hook = await hookScript(
      'record-input.mjs',
      `#!/usr/bin/env node
import { readFileSync, writeFileSync } from 'node:fs';
const input = JSON.parse(readFileSync(0, 'utf8'));
writeFileSync(${JSON.stringify(record)}, JSON.stringify({ input, projectDir: process.env.CLAUDE_PROJECT_DIR, cwd: process.cwd() }));
`,
    );
    const seen = async (argv: string[]) => {
      const { code } = await checkJson([...argv, '--project-dir', projectDir, '--', hook]);
      expect(code).toBe(0);
      return JSON.parse(await readFile(record, 'utf8')) as { input: Record<string, unknown>; projectDir: string; cwd: string };
    };

    const start = await seen([]);
    expect(start.projectDir).toBe(projectDir);
    expect(start.cwd).toBe(projectDir);
    expect(start.input).toMatchObject({ hook_event_name: 'SessionStart', source: 'startup', cwd: projectDir });
    expect(start.input.session_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(start.input.transcript_path).toMatch(new RegExp(`/\\.claude/projects/[^/]+/${String(start.input.session_id)}\\.jsonl$`));

    // Under CLAUDE_CONFIG_DIR, Claude Code writes its transcripts there, not under ~/.claude (as scan reads them).
    const configDir = join(dir, 'claude-config');
    const underConfig = captureIO(dir, { ...process.env, HOME: join(dir, 'home'), CLAUDE_CONFIG_DIR: configDir });
    expect(await runCheck(['--json', '--project-dir', projectDir, '--', hook], underConfig.io)).toBe(0);
    const configured = (JSON.parse(await readFile(record, 'utf8')) as { input: Record<string, unknown> }).input;
    expect(configured.transcript_path).toBe(join(configDir, 'projects', projectDir.replace(/[^A-Za-z0-9]/g, '-'), `${String(configured.session_id)}.jsonl`));
    const underHome = captureIO(dir, { ...process.env, HOME: join(dir, 'home'), CLAUDE_CONFIG_DIR: '' });
    expect(await runCheck(['--json', '--project-dir', projectDir, '--', hook], underHome.io)).toBe(0);
    const inHome = (JSON.parse(await readFile(record, 'utf8')) as { input: Record<string, unknown> }).input;
    expect(inHome.transcript_path).toBe(join(dir, 'home', '.claude', 'projects', projectDir.replace(/[^A-Za-z0-9]/g, '-'), `${String(inHome.session_id)}.jsonl`));

    const prompt = await seen(['--event', 'UserPromptSubmit', '--prompt', 'fix the build']);
    expect(prompt.input).toMatchObject({ hook_event_name: 'UserPromptSubmit', prompt: 'fix the build' });

    const post = await seen(['--event', 'PostToolUse']);
    expect(post.input).toMatchObject({ hook_event_name: 'PostToolUse', tool_name: 'Bash', tool_input: { command: 'git status' } });
    expect(post.input.tool_response).toMatchObject({ stdout: expect.any(String) as unknown });

    const pre = await seen(['--event', 'PreToolUse', '--tool-name', 'Write']);
    expect(pre.input).toMatchObject({ tool_name: 'Write', tool_input: { file_path: join(projectDir, 'hookwatch-check.txt') } });
    expect(pre.input.tool_response).toBeUndefined();
  });

  it('reports a failing hook (exit 1) as a failure and a blocking one (exit 2) without measuring stdout', async () => {
    const failing = await checkJson(['--', `echo partial; echo oops >&2; exit 1`]);
    expect(failing.result.hooks[0]).toMatchObject({ status: 'failed', exitCode: 1, outputs: [] });
    expect(failing.code).toBe(1);

    const blocking = await checkJson(['--event', 'PreToolUse', '--', `echo no >&2; exit 2`]);
    expect(blocking.result.hooks[0]).toMatchObject({ status: 'blocked', exitCode: 2, hookName: 'PreToolUse:Bash', fails: false });
    expect(blocking.code).toBe(0);

    // A hook killed by a signal has no exit status: the report names the signal as what ended it.
    const killed = await check(['--', 'kill -KILL $$']);
    expect(killed.code).toBe(1);
    expect(killed.out).toMatch(/^ {2}FAILED: killed by SIGKILL after [\d,]+ ms: Claude Code reports a non-blocking error/m);
  });

  it('says what exit 127 and 126 mean, and where the hook ran, since its stderr is hidden by default', async () => {
    // The real setup keeps settings.json beside hooks/, not in a .claude/ folder: "$CLAUDE_PROJECT_DIR"/.claude/hooks
    // is then not found, as it would not be in Claude Code started here.
    const notFound = await checkCli(['--settings', join(realSetup, 'settings.json'), '--event', 'UserPromptSubmit']);
    expect(notFound.code).toBe(1);
    expect(notFound.stdout).toContain(`  exit 127: the shell found no such command; it ran in ${dir}, the CLAUDE_PROJECT_DIR it was given (--project-dir to change it)\n`);
    const project = join(dir, 'real-project');
    await cp(realSetup, join(project, '.claude'), { recursive: true });
    const fixed = await checkCli(['--settings', join(realSetup, 'settings.json'), '--event', 'UserPromptSubmit', '--project-dir', project]);
    expect(fixed).toMatchObject({ code: 0, stdout: expect.stringContaining('OK: 1 hook checked') as unknown });

    const script = join(dir, 'not-executable.sh');
    await writeFile(script, '#!/bin/sh\necho hi\n');
    const notRunnable = await checkCli(['--', script]);
    expect(notRunnable.code).toBe(1);
    expect(notRunnable.stdout).toContain('  exit 126: the shell found the command but could not run it (is the file executable?);');
  });

  it('quotes a command given as several arguments so each reaches the hook unchanged', async () => {
    const hook = await nodeHook('args.mjs', `process.argv.slice(2).join('|')`);
    const { result } = await checkJson(['--show-content', '--', 'node', hook, 'two words', "it's"]);
    expect(onlyOutput(result).content).toBe("two words|it's");
  });
});

describe('check --settings', () => {
  it('given an event the file has no command hooks for, names the events it has them for', async () => {
    const path = await settingsFile('other-events', { hooks: {
      SessionStart: [{ hooks: [{ type: 'command', command: 'true' }] }],
      UserPromptSubmit: [{ hooks: [{ type: 'command', command: 'true' }, { type: 'command', command: 'true' }] }],
      Stop: [{ hooks: [{ type: 'prompt', prompt: 'done?' }] }],
    } });
    const run = await checkCli(['--settings', path, '--event', 'PreToolUse']);
    expect(run.stderr).toBe(`hookwatch check: no command hooks for PreToolUse in ${path} (it has them for SessionStart, UserPromptSubmit)\n`);
    expect(run.code).toBe(2);
  });

  it('checks every command hook of the real 2.1.332 hook setup and finds the two outputs Claude Code persisted', async () => {
    // Laid out as a project's .claude folder in a temporary place: its SessionEnd hook writes into $CLAUDE_PROJECT_DIR.
    const project = join(dir, 'proj3-tools');
    await cp(realSetup, join(project, '.claude'), { recursive: true });
    const { code, result } = await checkJson(['--settings', join(project, '.claude', 'settings.json')]);
    const summary = result.hooks.map((h) => [h.hookName, h.status, ...h.outputs.map((o) => `${o.kind}=${o.sent}${o.persisted ? ' persisted' : ''}`)]);
    // The same figures as the telemetry Claude Code 2.1.332 sent for this setup (fixtures README).
    expect(summary).toEqual([
      ['SessionStart:startup', 'measured', 'additionalContext=12000 persisted'],
      ['SessionStart:startup', 'measured', 'stdout=500'],
      ['UserPromptSubmit', 'measured', 'stdout=100'],
      ['PreToolUse:Bash', 'measured', 'stdout=50'],
      ['PostToolUse:Bash', 'measured', 'additionalContext=10500 persisted'],
      ['Stop', 'measured', 'stdout=10'],
      ['SessionEnd', 'measured', 'stdout=20'],
    ]);
    expect(result.hooks[0]?.location).toBe('hooks.SessionStart[0].hooks[0]');
    expect(code).toBe(1);
    // CLAUDE_PROJECT_DIR pointed at the folder holding .claude/: the SessionEnd hook wrote its marker there.
    await expect(readFile(join(project, 'sessionend_marker.txt'), 'utf8')).resolves.toMatch(/^\d+/);

    const onlyUps = await checkJson(['--settings', join(project, '.claude', 'settings.json'), '--event', 'UserPromptSubmit']);
    expect(onlyUps.result.hooks.map((h) => h.hookName)).toEqual(['UserPromptSubmit']);
    expect(onlyUps.code).toBe(0);
  });

  it('runs the hooks of user-level settings in the current folder, as Claude Code in a session started there, and says so', async () => {
    const home = await mkdtemp(join(dir, 'home-'));
    const project = await mkdtemp(join(dir, 'user-project-'));
    const settings = { hooks: { SessionStart: [{ hooks: [{ type: 'command', command: 'printf "%s|%s" "$CLAUDE_PROJECT_DIR" "$(pwd)"' }] }] } };
    const userSettings = join(home, '.claude', 'settings.json');
    const configDirSettings = join(home, 'claude-config', 'settings.json');
    for (const path of [userSettings, configDirSettings]) {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, JSON.stringify(settings));
    }
    const env = { ...process.env, HOME: home, CLAUDE_CONFIG_DIR: join(home, 'claude-config') };
    const ranIn = (ran: { stdout: string }): string | undefined => (JSON.parse(ran.stdout) as CheckOutput).hooks[0]?.outputs[0]?.content;
    // --json names the folder the hooks ran in, and why that one, for every run.
    const where = (ran: { stdout: string }): [string, string] => {
      const result = JSON.parse(ran.stdout) as CheckOutput;
      return [result.projectDir, result.projectDirFrom];
    };
    const note = (path: string, where: string): string =>
      `hookwatch check: ${path} holds user-level settings: its hooks run with CLAUDE_PROJECT_DIR=${where}, the current folder, as in a session started there; pass --project-dir <your project> to run them as in that project\n`;
    for (const path of [userSettings, configDirSettings]) {
      const ran = await checkCli(['--json', '--show-content', '--settings', path], { cwd: project, env });
      expect([ran.code, ranIn(ran), ran.stderr], path).toEqual([0, `${project}|${project}`, note(path, project)]);
      expect(where(ran), path).toEqual([project, 'cwd']);
    }
    // Given a project, the hooks run there, and nothing needs saying.
    const other = await mkdtemp(join(dir, 'other-project-'));
    const given = await checkCli(['--json', '--show-content', '--settings', userSettings, '--project-dir', other], { cwd: project, env });
    expect([given.code, ranIn(given), given.stderr]).toEqual([0, `${other}|${other}`, '']);
    expect(where(given)).toEqual([other, 'flag']);
    // A project's own settings still run in the folder holding its .claude/, wherever check is started.
    const own = await settingsFile('own-project', settings);
    const projectLevel = await checkCli(['--json', '--show-content', '--settings', own], { cwd: project, env });
    expect([projectLevel.code, ranIn(projectLevel), projectLevel.stderr]).toEqual([0, `${join(dir, 'own-project')}|${join(dir, 'own-project')}`, '']);
    expect(where(projectLevel)).toEqual([join(dir, 'own-project'), 'settings']);
    // A hook given on the command line runs in the current folder.
    const alone = await checkCli(['--json', '--show-content', '--', settings.hooks.SessionStart[0]?.hooks[0]?.command ?? ''], { cwd: project, env });
    expect([alone.code, ranIn(alone), ...where(alone)]).toEqual([0, `${project}|${project}`, project, 'cwd']);
  });

  it('runs only the groups whose matcher selects the firing, and says which it left out', async () => {
    const group = (matcher: string, n: number) => ({ matcher, hooks: [{ type: 'command', command: `printf '%${n}s' x` }] });
    const path = await settingsFile('matchers', { hooks: { PreToolUse: [group('Bash', 10), group('Edit|Write', 20), group('*', 30), group('mcp__.*', 40)], SessionStart: [group('startup', 50), group('resume', 60)] } });
    const sizes = (r: { result: { hooks: { hookName: string; outputs: { sent: number }[] }[] } }) => r.result.hooks.map((h) => [h.hookName, h.outputs[0]?.sent]);

    const edit = await check(['--json', '--settings', path, '--event', 'PreToolUse', '--tool-name', 'Edit']);
    expect(sizes({ result: JSON.parse(edit.out) })).toEqual([['PreToolUse:Edit', 20], ['PreToolUse:Edit', 30]]);
    expect((JSON.parse(edit.out) as { skipped: { location: string; reason: string }[] }).skipped).toEqual([
      { location: 'hooks.PreToolUse[0].hooks[0]', reason: 'matcher "Bash" does not select "Edit", so Claude Code would not run it for this firing (give --tool-name with a tool it selects)' },
      { location: 'hooks.PreToolUse[3].hooks[0]', reason: expect.stringContaining('matcher "mcp__.*" does not select "Edit"') as unknown },
    ].map((s) => expect.objectContaining(s) as unknown));

    // Each group gets a value its matcher selects when none is given; a pattern can be given one.
    const byMatcher = await checkJson(['--settings', path, '--event', 'PreToolUse']);
    expect(sizes(byMatcher)).toEqual([['PreToolUse:Bash', 10], ['PreToolUse:Edit', 20], ['PreToolUse:Bash', 30]]);
    const mcp = await checkJson(['--settings', path, '--event', 'PreToolUse', '--tool-name', 'mcp__github__search']);
    expect(sizes(mcp)).toEqual([['PreToolUse:mcp__github__search', 30], ['PreToolUse:mcp__github__search', 40]]);
    // A pattern is tested anywhere in the name, as Claude Code tests it; plain names match exactly.
    expect(matcherSelects('Edit.*', 'NotebookEdit')).toBe(true);
    expect(matcherSelects('^mcp__', 'mcp__github__search')).toBe(true);
    expect(matcherSelects('Write', 'MultiWrite')).toBe(false);
    expect(matcherSelects('Edit|Write', 'Write')).toBe(true);
    expect(matcherSelects('[', 'Bash')).toBe(false);

    const resume = await checkJson(['--settings', path, '--event', 'SessionStart', '--source', 'resume']);
    expect(sizes(resume)).toEqual([['SessionStart:resume', 60]]);
    // Nothing selected at all: nothing checked, said so.
    const none = await check(['--settings', path, '--event', 'SessionStart', '--source', 'clear']);
    expect(none.err).toContain('no hook would run for this firing');
    expect(none.err).toContain('hooks.SessionStart[1].hooks[0]: matcher "resume" does not select "clear", so Claude Code would not run it for this firing (give --source with a value it selects): not checked\n');
    expect(none.code).toBe(2);
  });

  it('prints the guarded command of a hook with invisible characters as a JSON string settings.json can take, tag characters included', async () => {
    // An override and tag characters (beyond U+FFFF) in a comment of the command: written out, and still JSON.
    const command = `printf '%12000s' x # \u202Eok\u{E0041}\u{E0042} \u{1F469}\u200D\u{1F4BB}`;
    const run = captureIO(dir);
    expect(await runCheck(['--', command], run.io)).toBe(1);
    const printed = /^ {2}"command": (".*")$/m.exec(run.stdout())?.[1];
    expect(printed).toBeDefined();
    expect([...(printed as string)].filter((c) => /[\p{Cc}\p{Cf}]/u.test(c) && c !== '\u200D')).toEqual([]);
    expect(JSON.parse(printed as string)).toBe(wrapCommand(command, defaultGuardPrefix(), undefined));
  });

  it('prints a command, an event, a matcher and hook output with line breaks, terminal escapes and bidi controls as text that cannot forge a verdict', async () => {
    const forged = '\nOK: 9 hooks checked, every output within the 10,000-character cap.\n';
    const path = await settingsFile('hostile-text', { hooks: {
      // A command of two lines, the second a verdict; an override turns "hs.kcatta" around to read "attack.sh".
      Stop: [{ hooks: [{ type: 'command', command: `printf ok; : '${forged}' #\u202Ehs.kcatta\u200B` }] }],
      // stdout over the cap and stderr, both holding a verdict line, a terminal escape and an override.
      'Stop\u2066': [{ hooks: [{ type: 'command', command: `printf '\\033[2J\\342\\200\\256x${forged.replace(/\n/g, '\\n')}%10000s' y; printf '\\033]0;title\\007${forged.replace(/\n/g, '\\n')}' >&2` }] }],
      PreToolUse: [{ matcher: 'mcp\u202E.*', hooks: [{ type: 'command', command: `true${forged}` }] }],
    } });
    const run = await checkCli(['--settings', path, '--show-content']);
    const lines = run.stdout.split('\n');
    expect(lines.filter((line) => /^(OK|FAIL|INCOMPLETE|SKIPPED):/.test(line))).toEqual([
      'FAIL: 1 output over the 10,000-character cap (saved to a file, not delivered).',
      'SKIPPED: 1 hook not run, so not checked (reasons above): neither passed nor failed.',
    ]);
    expect([...run.stdout].filter((c) => c !== '\n' && /[\p{Cc}\p{Cf}]/u.test(c))).toEqual([]);
    expect(run.stdout).toContain("Stop  printf ok; : '\\nOK: 9 hooks checked, every output within the 10,000-character cap.\\n' #\\u202ehs.kcatta\\u200b  (hooks.Stop[0].hooks[0])\n  exit 0 after ");
    expect(run.stdout).toContain('Stop\\u2066  printf ');
    expect(run.stdout).toContain('(hooks.Stop\\u2066[0].hooks[0])\n');
    expect(run.stdout).toContain('PreToolUse  true\\nOK: 9 hooks checked, every output within the 10,000-character cap.\\n  (hooks.PreToolUse[0].hooks[0])\n');
    expect(run.stdout).toContain('SKIPPED, not checked: matcher "mcp\\u202e.*" does not select "Bash"');
    // Hook output keeps its lines, each indented under the block's heading, its escapes written out.
    expect(run.stdout).toContain('  --- what the model sees of stdout: the first 2,000 of 10,074 characters ---\n    \\u001b[2J\\u202ex\n    OK: 9 hooks checked');
    expect(run.stdout).toContain('  --- stderr, whole ---\n    \\u001b]0;title\\u0007\n    OK: 9 hooks checked');
    expect(run.code).toBe(1);

    // What stderr names of the file (events, field names) likewise.
    const unknown = await settingsFile('hostile-fields', { hooks: { 'Stop\u202E': [{ hooks: [{ type: 'command', command: 'true', [`x${forged}`]: 1 }] }] } });
    const named = await checkCli(['--settings', unknown]);
    expect(named.stderr).toBe(
      'hookwatch check: hooks.Stop\\u202e[0].hooks[0] has fields hookwatch does not know ("x\\nOK: 9 hooks checked, every output within the 10,000-character cap.\\n"): ' +
        'not checked, its command alone may not be what Claude Code runs\n' +
        `hookwatch check: no command hooks in ${unknown}\n`,
    );
    expect(named.code).toBe(2);
  });

  it('shows the hooks a firing leaves out as skipped, with the reason, never as OK, and does not fail for them', async () => {
    const command = (n: number) => ({ type: 'command', command: `printf '%${n}s' x` });
    const path = await settingsFile('skipped', { hooks: {
      PreToolUse: [{ matcher: 'Bash', hooks: [command(10)] }, { matcher: 'mcp__.*', hooks: [command(40)] }],
      Stop: [{ hooks: [command(5), { type: 'prompt', prompt: 'judge' }] }],
    } });
    // The default firing of PreToolUse is Bash: the mcp__.* group is not run, and the prompt hook is no command.
    const text = await checkCli(['--settings', path]);
    expect(text.stdout).toContain(
      `PreToolUse  printf '%40s' x  (hooks.PreToolUse[1].hooks[0])\n` +
        '  SKIPPED, not checked: matcher "mcp__.*" does not select "Bash", so Claude Code would not run it for this firing (give --tool-name with a tool it selects)\n',
    );
    expect(text.stdout).toContain('Stop  a "prompt" hook  (hooks.Stop[0].hooks[1])\n  SKIPPED, not checked: not a command hook; check runs command hooks only\n');
    expect(text.stdout).toContain('OK: 2 hooks checked, every output within the 10,000-character cap.\nSKIPPED: 2 hooks not run, so not checked (reasons above): neither passed nor failed.\n');
    // Named once, in the report; no block of a skipped hook says ok.
    expect(text.stderr).toBe('');
    expect(text.stdout.split('\n\n').filter((block) => block.includes('SKIPPED, not checked')).join('')).not.toMatch(/\bok\b|OK/);
    // As a test runner counts a skipped test: apart, not a failure.
    expect(text.code).toBe(0);

    const json = await checkJson(['--settings', path]);
    expect(json.result.hooks.map((h) => h.location)).toEqual(['hooks.PreToolUse[0].hooks[0]', 'hooks.Stop[0].hooks[0]']);
    expect(json.result).toMatchObject({
      ok: true,
      skipped: [
        { event: 'Stop', matcher: null, command: null, type: 'prompt', location: 'hooks.Stop[0].hooks[1]', because: 'type', reason: 'not a command hook; check runs command hooks only' },
        { event: 'PreToolUse', matcher: 'mcp__.*', command: "printf '%40s' x", type: 'command', location: 'hooks.PreToolUse[1].hooks[0]', because: 'matcher', reason: expect.stringContaining('does not select "Bash"') as unknown },
      ],
    });
    expect(json.code).toBe(0);

    // A firing that selects it runs it, and skips the group it does not select.
    const mcp = await checkJson(['--settings', path, '--event', 'PreToolUse', '--tool-name', 'mcp__github__search']);
    expect(mcp.result.hooks.map((h) => h.location)).toEqual(['hooks.PreToolUse[1].hooks[0]']);
    expect(mcp.result).toMatchObject({ ok: true, skipped: [{ location: 'hooks.PreToolUse[0].hooks[0]', because: 'matcher' }] });
  });

  it('does not measure a command hook with fields it does not know, and says so', async () => {
    const hooks = [{ type: 'command', command: 'echo', args: ['x'.repeat(12_000)] }, { type: 'command', command: 'echo fine' }];
    const path = await settingsFile('unknown-fields', { hooks: { Stop: [{ hooks }] } });
    const { code, result, err } = await checkJson(['--settings', path]);
    expect(err).toContain('hookwatch check: hooks.Stop[0].hooks[0] has fields hookwatch does not know ("args"): not checked');
    expect(result.hooks.map((h) => h.location)).toEqual(['hooks.Stop[0].hooks[1]']);
    // What the hook left out prints is unknown: never a pass.
    expect(result).toMatchObject({ ok: false, complete: false, notChecked: [{ location: 'hooks.Stop[0].hooks[0]', fields: ['args'] }] });
    expect(code).toBe(4);
    const text = await check(['--settings', path]);
    expect(text.out).not.toContain('OK');
    expect(text.out).toContain('INCOMPLETE: 1 hook checked, every output within the 10,000-character cap; 1 command hook not run for fields hookwatch does not know (named on stderr): its output is unknown.\n');
    expect(text.code).toBe(4);
  });

  it('says FAIL, exit 1, when a hook checked is over the cap, whatever was left out', async () => {
    const hooks = [{ type: 'command', command: 'echo', args: ['x'] }, { type: 'command', command: `head -c 12000 /dev/zero | tr '\\0' x` }];
    const path = await settingsFile('unknown-fields-over', { hooks: { Stop: [{ hooks }] } });
    const { code, out } = await check(['--settings', path]);
    expect(out).toContain('FAIL: 1 output over the 10,000-character cap');
    expect(out).toContain('INCOMPLETE: 1 command hook not run for fields hookwatch does not know');
    expect(out).not.toContain('OK');
    expect(code).toBe(1);
  });

  it('names, and counts as left out, only hooks of the --event checked', async () => {
    const path = await settingsFile('unknown-fields-event', { hooks: {
      Stop: [{ hooks: [{ type: 'command', command: 'echo stop', args: ['x'] }, { type: 'prompt', prompt: 'judge' }] }],
      SessionStart: [{ hooks: [{ type: 'command', command: 'echo start' }] }],
    } });
    const { code, out, err } = await check(['--settings', path, '--event', 'SessionStart']);
    expect(err).toBe('');
    expect(out).toContain('OK: 1 hook checked');
    expect(code).toBe(0);
  });

  it.each([
    ['command-not-a-string.json', 'hooks.SessionStart[0].hooks[0].command: expected a non-empty string'],
    ['hooks-not-an-object.json', 'hooks: expected an object of events'],
    ['timeout-not-positive.json', 'hooks.Stop[0].hooks[0].timeout: expected a number of seconds > 0'],
    ['not-json.json', 'not valid JSON'],
  ])('rejects %s naming the mistake', async (file, message) => {
    const path = join(testdata, 'settings', file);
    const { code, err, out } = await check(['--settings', path]);
    expect(out).toBe('');
    expect(err).toContain(`hookwatch check: ${path}: ${message}`);
    expect(code).toBe(2);
  });
});

describe('check: usage', () => {
  it('runs the hooks of a settings file in its project when started with npm run from another folder, guarded ones too', async () => {
    const project = join(dir, 'npm-run-project');
    const path = join(project, '.claude', 'settings.json');
    await mkdir(dirname(path), { recursive: true });
    const hooks = [{ type: 'command', command: 'pwd' }, { type: 'command', command: wrapCommand('pwd', defaultGuardPrefix(), undefined) }];
    await writeFile(path, JSON.stringify({ hooks: { SessionStart: [{ hooks }] } }));
    // As the README has it: `npm --prefix /path/to/hookwatch run hookwatch -- ...`, here from the test folder.
    const ran = await hookwatchThroughNpm('npm run', ['check', '--json', '--show-content', '--settings', path], { cwd: dir, env: { PATH: process.env['PATH'] ?? '', HOME: dir } });
    expect(ran.code).toBe(0);
    const result = JSON.parse(ran.stdout) as CheckOutput;
    expect(result.hooks.map((h) => h.outputs[0]?.content)).toEqual([`${project}\n`, `${project}\n`]);
  });

  it.each(['npm run', 'npx'] as const)('started with %s, runs hooks with the PATH and variables of the shell npm was started from', async (start) => {
    // A folder the user put first on PATH before running npm: kept, and first, as in the shell.
    const path = `${join(dir, 'user-bin')}${delimiter}${shellPath()}`;
    const hook = 'echo "$PATH"; command -v vitest || echo none; env | grep ^npm_ | wc -l';
    const ran = await hookwatchThroughNpm(start, ['check', '--json', '--show-content', '--', hook], { cwd: dir, env: { PATH: path, HOME: dir } });
    expect(ran.code, ran.stderr).toBe(0);
    const [hookPath, vitest, npmVariables] = (onlyOutput(JSON.parse(ran.stdout) as CheckOutput).content ?? '').split('\n');
    // npm puts the package's node_modules/.bin (its Node 24, vitest, tsc...) first; Claude Code would not.
    expect(hookPath?.split(delimiter)).not.toContain(join(PACKAGE_ROOT, 'node_modules', '.bin'));
    expect(hookPath).toBe(path);
    expect(vitest).toBe('none');
    expect(npmVariables?.trim()).toBe('0');
  });

  it('says that a guarded hook reported no trims only when its guard would have reported them', async () => {
    const guarded = (options: string): string => `${process.execPath} ${BIN} guard${options} -- "printf guarded"`;
    const env = { ...process.env };
    delete env['HOOKWATCH_GUARD_REPORT'];
    const line = 'hookwatch guard ran with HOOKWATCH_GUARD_NO_REPORT=1: its trims of this made-up input are not reported to hookwatch';
    const cases: [command: string, env: NodeJS.ProcessEnv, said: boolean][] = [
      [guarded(''), env, false],
      [guarded(' --budget 9000'), env, false],
      [guarded(' --report http://127.0.0.1:61010'), env, true],
      [guarded(' --report=http://127.0.0.1:61010'), env, true],
      [`HOOKWATCH_GUARD_REPORT=http://127.0.0.1:61010 ${guarded('')}`, env, true],
      [guarded(''), { ...env, HOOKWATCH_GUARD_REPORT: 'http://127.0.0.1:61010' }, true],
      // Set but empty, the variable is unset to the guard.
      [guarded(''), { ...env, HOOKWATCH_GUARD_REPORT: '' }, false],
    ];
    for (const [command, given, said] of cases) {
      const ran = await checkCli(['--', command], { env: given });
      expect(ran.stdout, command).toContain('OK: 1 hook checked');
      expect(ran.stdout.includes(line), command).toBe(said);
    }
  });

  it('takes an --event that the settings file keys hooks under, listed or not', async () => {
    const path = await settingsFile('own-event', { hooks: { NewerEvent: [{ hooks: [{ type: 'command', command: 'echo newer' }] }] } });
    const { code, out } = await check(['--settings', path, '--event', 'NewerEvent']);
    expect(out).toContain('OK: 1 hook checked');
    expect(code).toBe(0);
  });

  it('prints help and exits 0', async () => {
    const { code, out } = await check(['--help']);
    expect(out).toMatch(/^Usage: hookwatch check/);
    expect(out).toContain('--kill-grace <time>');
    expect(code).toBe(0);
  });

  it.each([
    [[], 'no hook command given'],
    [['--budget', 'lots', '--', 'true'], '--budget: expected a whole number from 1 to 10000, got "lots"'],
    [['--budget', '20000', '--', 'true'], '--budget: expected a whole number from 1 to 10000, got "20000"'],
    [['--timeout', '0', '--', 'true'], '--timeout: expected a whole number from 1 to 2147483, got "0"'],
    // The same durations as the guard's --kill-grace, refused in the same words.
    [['--kill-grace', '5', '--', 'true'], '--kill-grace: expected a duration from 1ms to 1m such as 5s or 1500ms, got "5"'],
    [['--kill-grace', '2m', '--', 'true'], '--kill-grace: expected a duration from 1ms to 1m such as 5s or 1500ms, got "2m"'],
    [['--source', 'boot', '--', 'true'], '--source: expected one of startup, resume, clear, compact'],
    [['--frobnicate', '--', 'true'], 'unknown flag --frobnicate'],
    [['--bugdet', '9500', '--', 'true'], 'unknown flag --bugdet (did you mean --budget?)'],
    [['--event'], 'flag --event needs a value'],
    [['--event', 'Bogus', '--', 'true'], '--event: "Bogus" is not a Claude Code hook event; known: SessionStart, UserPromptSubmit,'],
    [['--event', 'PostToolUSe', '--', 'true'], '--event: "PostToolUSe" is not a Claude Code hook event (did you mean PostToolUse?)'],
    [['--event', 'SesionStart', '--settings', join(realSetup, 'settings.json')], '(did you mean SessionStart?)'],
  ])('rejects %j with exit 2', async (argv, message) => {
    const { code, err } = await check(argv);
    expect(err).toContain(message);
    expect(code).toBe(2);
  });
});
