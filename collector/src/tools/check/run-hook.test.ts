import { describe, expect, it } from 'vitest';

import { measureStdout } from './measure.ts';
import { runHook } from './run-hook.ts';

const base = { input: { hook_event_name: 'SessionStart' }, cwd: process.cwd(), env: process.env, timeoutMs: 10_000, shell: '/bin/sh' };

describe('runHook', () => {
  it('counts every character past the capture limit but keeps only the head, and then does not parse JSON', async () => {
    const command = `node -e 'process.stdout.write(JSON.stringify({ systemMessage: "é".repeat(6000) }))'`;
    const run = await runHook({ ...base, command, maxCapturedStdoutBytes: 4096 });
    expect(run.exitCode).toBe(0);
    expect(run.stdoutComplete).toBe(false);
    expect(run.stdoutChars).toBe(6000 + '{"systemMessage":""}'.length);
    expect(run.stdout.length).toBeLessThan(run.stdoutChars);

    const measured = measureStdout(run.stdout, run.stdoutChars, run.stdoutComplete, undefined);
    expect(measured.format).toBe('plain');
    expect(measured.jsonError).toBe('output too large to parse as JSON');
    expect(measured.outputs[0]).toMatchObject({ kind: 'stdout', sent: run.stdoutChars, persisted: false });
  });

  it('reports a shell that cannot be started instead of throwing', async () => {
    const run = await runHook({ ...base, command: 'true', shell: '/nonexistent/shell' });
    expect(run.spawnError).toMatch(/ENOENT/);
    expect(run.exitCode).toBeNull();
  });

  it('keeps the exit code and the stderr of a hook that fails, and ignores a hook that does not read stdin', async () => {
    const run = await runHook({ ...base, command: 'echo problem >&2; exit 3' });
    expect(run).toMatchObject({ exitCode: 3, timedOut: false, stderrHead: 'problem\n', stderrChars: 8, stdoutChars: 0 });
  });
});
