import { constants } from 'node:os';
import type { Readable } from 'node:stream';

/**
 * What a CLI tool may touch: its output streams, its environment and its working directory. Passing them in
 * (instead of using `process`) lets tests run a tool in-process and read exactly what a user would see.
 */
export interface ToolIO {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  /** What `-` reads (scan -); the process's stdin when not given. */
  stdin?: Readable;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /**
   * Ends the process as killed by `signal` once what it wrote is out (flushOutput, then exitBySignal). Given for
   * the real process only: a tool run in-process (tests) returns 128 + the signal's number instead.
   */
  stoppedBy?: (signal: NodeJS.Signals) => Promise<never>;
}

/**
 * Resolves once what was written to stdout and stderr is handed to the OS: a pipe takes 64 KiB at a time, and
 * process.exit would drop what it has not taken yet (a `scan --json | jq` would read a cut report). An empty
 * write calls back once the ones before it are flushed.
 */
export async function flushOutput(): Promise<void> {
  await Promise.all([process.stdout, process.stderr].map((stream) => new Promise((resolve) => {
    if (stream.destroyed || !stream.writable) resolve(undefined);
    else stream.write('', () => resolve(undefined));
  })));
}

/** The process's own streams, environment and directory; a command stopped by a signal ends killed by it. */
export function processIO(): ToolIO {
  return {
    stdout: (s: string) => void process.stdout.write(s),
    stderr: (s: string) => void process.stderr.write(s),
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
    stoppedBy: async (signal) => {
      await flushOutput();
      return exitBySignal(signal);
    },
  };
}

/**
 * Ends this process killed by `signal`, as a shell expects of a command stopped by Ctrl-C or SIGTERM: a status of
 * 128 + n alone tells bash (waiting for a foreground command) that the command handled the signal, and a loop
 * calling it carries on. The handlers go first, or the signal would only call them again.
 */
export function exitBySignal(signal: NodeJS.Signals): never {
  process.removeAllListeners(signal);
  // Node ignores SIGPIPE from the start and takes SIGUSR1 for its inspector: the last listener of a signal, once
  // removed, leaves it the default action (to end the process) instead. SIGKILL and SIGSTOP take no listener.
  if (signal !== 'SIGKILL' && signal !== 'SIGSTOP') process.on(signal, () => undefined).removeAllListeners(signal);
  process.kill(process.pid, signal);
  // A signal whose default action is not to terminate: fall back to the shell's convention.
  process.exit(128 + (constants.signals[signal] ?? 15));
}

/**
 * After SIGTERM (a hook's timeout, or a stop signal passed on to it), how long a hook command gets before SIGKILL
 * unless --kill-grace (guard and check) says otherwise. Short: a hook stopped by its timeout has been given up on
 * already, and whoever stopped it may soon kill the tool that runs it, leaving the command running orphaned.
 */
export const KILL_GRACE_MS = 1_000;

/** Exit codes shared by the tools: 0 clean, 1 findings (the check failed loudly), 2 usage or input error. */
export const EXIT_OK = 0;
export const EXIT_FINDINGS = 1;
export const EXIT_USAGE = 2;
/** The findings could not be sent to the hookwatch server. */
export const EXIT_SEND_FAILED = 3;
/** Nothing was found lost, but part of the input was skipped unread (a line over the line limit): the result is unknown. */
export const EXIT_INCOMPLETE = 4;
