/** The real hookwatch bin run as a process, as a user at a terminal runs it, and what a process wrote. */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

/** collector/bin/hookwatch.mjs, what the `hookwatch` command runs. */
export const HOOKWATCH_BIN = fileURLToPath(new URL('../../bin/hookwatch.mjs', import.meta.url));

/** How a process ended, and everything it wrote. */
export interface ProcessOutput {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** What `child` writes until it closes, and its exit code; rejects when it could not be started. */
export function outputOf(child: ChildProcessByStdio<Writable | null, Readable, Readable>): Promise<ProcessOutput> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs `hookwatch <args>` with this Node in `cwd`, with `env` (this process's by default) and no input. */
export function runHookwatch(args: readonly string[], { cwd, env = process.env }: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<ProcessOutput> {
  return outputOf(spawn(process.execPath, [HOOKWATCH_BIN, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] }));
}
