/** The real hookwatch bin run as a process, as a user at a terminal runs it, and what a process wrote. */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

import { TestRunner } from 'vitest';

import { descendants } from '../../src/tools/common/processes.ts';

/** collector/bin/hookwatch.mjs, what the `hookwatch` command runs. */
export const HOOKWATCH_BIN = fileURLToPath(new URL('../../bin/hookwatch.mjs', import.meta.url));

/** How a process ended, and everything it wrote. */
export interface ProcessOutput {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** How long a process may run: `withinMs`, by default the time left to the test running it (WITHIN_MS at most). */
export interface RunBound {
  withinMs?: number;
}

/** The longest a process may run by default: far longer than any of these runs takes, on a loaded machine too. */
const WITHIN_MS = 90_000;
/** A default bound ends this long before the test's own timeout: the process's output, not only the timeout, is told. */
const BEFORE_TEST_TIMEOUT_MS = 2_000;
/** How much of the end of each output the error of a process past its bound shows. */
const TAIL_CHARS = 4_096;

/**
 * The least a default bound gives: a process started in the last moments of its test still gets to run (past the
 * test's timeout then, which tells it), where a bound of 0 killed it at once.
 */
const MIN_WITHIN_MS = 1_000;

/** WITHIN_MS, or less where the test (the one running now) times out sooner; MIN_WITHIN_MS at least. */
export function defaultWithinMs(test: { timeout: number; result?: { startTime?: number } } | undefined = TestRunner.getCurrentTest(), now = Date.now()): number {
  const started = test?.result?.startTime;
  if (test === undefined || started === undefined) return WITHIN_MS;
  return Math.max(MIN_WITHIN_MS, Math.min(WITHIN_MS, started + test.timeout - BEFORE_TEST_TIMEOUT_MS - now));
}

/**
 * Kills `pid` and what runs below it, each with the process group it leads: a hook that hookwatch check runs is in a
 * group of its own, and would go on writing into a pipe no one reads. A pid that leads no group names none.
 */
function killAll(pid: number): void {
  for (const below of [pid, ...descendants(pid)]) {
    for (const target of [below, -below]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // Already gone, or no group.
      }
    }
  }
}

/**
 * What `child` writes until it closes, and its exit code; rejects when it could not be started. A child still
 * running past its bound is killed with what it started, and the error names it and ends with what it wrote last:
 * a hung process fails its test saying where it hung, instead of leaving it to the test's timeout.
 */
export function outputOf(child: ChildProcessByStdio<Writable | null, Readable, Readable>, { withinMs = defaultWithinMs() }: RunBound = {}): Promise<ProcessOutput> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const bound = setTimeout(() => {
      if (child.pid !== undefined) killAll(child.pid);
      const ran = ((performance.now() - started) / 1000).toFixed(1);
      reject(new Error(
        `${child.spawnargs.join(' ')} still ran after ${ran} s (bound ${withinMs / 1000} s): killed, with what it started\n` +
          `--- last of its stdout ---\n${stdout.slice(-TAIL_CHARS)}\n--- last of its stderr ---\n${stderr.slice(-TAIL_CHARS)}`,
      ));
    }, withinMs);
    child.on('error', (error) => {
      clearTimeout(bound);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(bound);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs `hookwatch <args>` with this Node in `cwd`, with `env` (this process's by default) and no input. */
export function runHookwatch(args: readonly string[], { cwd, env = process.env, withinMs }: { cwd: string; env?: NodeJS.ProcessEnv } & RunBound): Promise<ProcessOutput> {
  return outputOf(spawn(process.execPath, [HOOKWATCH_BIN, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] }), withinMs === undefined ? {} : { withinMs });
}
