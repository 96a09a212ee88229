import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { alive, waitFor } from '../../../test/support/processes.ts';
import { shellQuote } from '../common/shell-quote.ts';
import { measureStdout } from './measure.ts';
import { runHook } from './run-hook.ts';

const BIN = fileURLToPath(new URL('../../../bin/hookwatch.mjs', import.meta.url));

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

  it('counts past the capture limit in UTF-16 code units as Claude Code decodes the output, and in code points, invalid bytes and emoji included', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hookwatch-run-hook-'));
    try {
      // Runs of ASCII, 2-, 3- and 4-byte characters longer than a read of the pipe, between invalid sequences.
      const pieces = [Buffer.from('plain ascii '.repeat(9_777)), Buffer.from('é€😀 ✓'.repeat(10_013)), Buffer.from([0xff]), Buffer.from('😀'.repeat(20_039)), Buffer.from([0xf0, 0x9f, 0x98]), Buffer.from('中文'.repeat(15_011))];
      const bytes = Buffer.concat(Array.from({ length: 3 }, () => pieces).flat());
      const file = join(dir, 'mixed-output.bin');
      await writeFile(file, bytes);
      const run = await runHook({ ...base, command: `cat ${shellQuote(file)}`, maxCapturedStdoutBytes: 4096 });
      expect([run.exitCode, run.stdoutComplete]).toEqual([0, false]);
      expect(run.stdoutChars).toBe(bytes.toString('utf8').length);
      expect(run.stdoutCodePoints).toBe([...bytes.toString('utf8')].length);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps a stdout that may be a JSON object whole to parse it, and only the first 1 MiB of plain text, counting all of both', async () => {
    const size = 3 * 1024 * 1024;
    // White space before the `{` (a byte order mark, U+3000, line breaks) is what JSON.parse of the trimmed output takes.
    const json = await runHook({ ...base, command: `node -e 'process.stdout.write("\\ufeff\\u3000\\n" + JSON.stringify({ systemMessage: "j".repeat(${size}) }))'` });
    expect([json.exitCode, json.stdoutComplete, json.stdout.length, json.stdoutChars]).toEqual([0, true, json.stdoutChars, size + 23]);
    expect(measureStdout(json.stdout, json.stdoutChars, json.stdoutComplete, undefined).outputs).toMatchObject([{ field: 'systemMessage', sent: size }]);
    const plain = await runHook({ ...base, command: `node -e 'process.stdout.write("\\n  " + "é".repeat(${size / 2}))'` });
    expect([plain.exitCode, plain.stdoutComplete, plain.stdoutChars, plain.stdoutCodePoints, plain.stdoutBytes]).toEqual([0, false, size / 2 + 3, size / 2 + 3, size + 3]);
    // 1 MiB less the 3 bytes before the é's holds 524,286 of them and half of the next, which is not kept.
    expect(plain.stdout).toBe(`\n  ${'é'.repeat(524_286)}`);
    // Past what is held of it to be parsed, an output that looked like a JSON object is plain text: no more of it
    // is kept than of any.
    const large = await runHook({ ...base, command: `node -e 'process.stdout.write(JSON.stringify({ systemMessage: "j".repeat(${size}) }))'`, maxCapturedStdoutBytes: 2 * 1024 * 1024 });
    expect([large.exitCode, large.stdoutComplete, large.stdoutChars, large.stdout.length]).toEqual([0, false, size + 20, 1024 * 1024]);
    expect(large.stdout.startsWith('{"systemMessage":"jjj')).toBe(true);
    expect(measureStdout(large.stdout, large.stdoutChars, large.stdoutComplete, undefined)).toMatchObject({ format: 'plain', jsonError: 'output too large to parse as JSON' });
  });

  it('reads stdout up to its limit: a hook that prints exactly that much is measured, one that prints more is stopped there', async () => {
    const limit = 100_000;
    const exact = await runHook({ ...base, command: `head -c ${limit} /dev/zero | tr '\\0' x`, maxReadStdoutBytes: limit });
    expect(exact).toMatchObject({ exitCode: 0, stdoutStopped: false, stdoutBytes: limit, stdoutChars: limit });
    // One byte more, then the hook waits: stopped at once, not at its timeout, by the stop signal.
    const more = await runHook({ ...base, command: `head -c ${limit + 1} /dev/zero | tr '\\0' x; sleep 30`, maxReadStdoutBytes: limit });
    expect(more).toMatchObject({ exitCode: null, signal: 'SIGTERM', timedOut: false, stdoutStopped: true, stdoutBytes: limit, stdoutChars: limit, stdoutComplete: false });
    expect(more.durationMs).toBeLessThan(base.timeoutMs);
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

  it('kills a timed-out guarded hook that ignores SIGTERM, though the guard runs it in a process group of its own', async () => {
    // The SIGKILL to the hook's group reaches the guard, not the group the guard runs the command line in: killed
    // first, the guard would leave the command running.
    const dir = await mkdtemp(join(tmpdir(), 'hookwatch-run-hook-'));
    const started = join(dir, 'started');
    const line = `trap '' TERM; sleep 60 & echo $$ $! > ${shellQuote(started)}; wait`;
    let pids: number[] = [];
    try {
      const run = await runHook({ ...base, command: `exec ${shellQuote(process.execPath)} ${shellQuote(BIN)} guard -- ${shellQuote(line)}`, timeoutMs: 1_000 });
      pids = (await readFile(started, 'utf8')).trim().split(' ').map(Number);
      expect(run.timedOut).toBe(true);
      await waitFor(async () => !pids.some(alive)).catch(() => undefined);
      expect(pids.filter(alive)).toEqual([]);
    } finally {
      for (const pid of pids.filter(alive)) process.kill(pid, 'SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  }, 15_000);
});
