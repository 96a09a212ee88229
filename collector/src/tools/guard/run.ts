import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';

import { StdoutCapture } from './capture.ts';
import type { CapturedStdout } from './capture.ts';
import { oneWordCommandLine } from '../common/shell-quote.ts';

/**
 * Hook input kept for naming the hook in reports. Most inputs are a few KB; a tool's input or response can be far
 * larger (a Write of a big file), and then only this head is kept: the members naming the hook come first.
 */
const MAX_INPUT_HEAD_BYTES = 1024 * 1024;
/** After SIGTERM on timeout, how long the command gets before SIGKILL. */
const KILL_GRACE_MS = 1_000;
/** After a stopped command exits, how long output already in the pipe is still read. */
const STOPPED_OUTPUT_GRACE_MS = 50;
/** Signals forwarded to the command: what a supervisor (Claude Code on a timeout, a terminal) sends to stop it. */
const FORWARDED_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

/**
 * The processes below `root` now (children, their children...), from /proc; none where there is no /proc. The
 * guard's own timeout stops them with the command: a command line's pipeline (`curl | jq`) would otherwise
 * outlive it.
 */
export function descendants(root: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const childrenOf = new Map<number, number[]>();
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const list = childrenOf.get(ppid) ?? [];
    list.push(Number(entry));
    childrenOf.set(ppid, list);
  }
  const out: number[] = [];
  const queue = [root];
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    for (const child of childrenOf.get(pid) ?? []) {
      out.push(child);
      queue.push(child);
    }
  }
  return out;
}

/** The argv that runs `command`: several words directly, one word as a command line (oneWordCommandLine). */
export function commandArgv(command: readonly string[], shell: string): string[] {
  if (command.length !== 1) return [...command];
  return [shell, '-c', oneWordCommandLine(command[0] ?? '')];
}

/** How to run the wrapped command. */
export interface GuardedRun {
  /** argv of the command; one element is a command line for the shell, as in a settings file (see commandArgv). */
  command: readonly string[];
  shell: string;
  stdin: Readable & { isTTY?: boolean };
  timeoutMs: number | undefined;
  spillBytes: number;
  headChars: number;
  spillPath: () => string;
}

/** How the wrapped command ended. */
export interface GuardedRunResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: CapturedStdout;
  /** The first part of what arrived on stdin (the hook input JSON). */
  input: string;
  spawnError: string | undefined;
}

/**
 * Runs the command with the guard's environment, working directory and stderr, its stdin copied through (and
 * its head kept), and its stdout captured. Stop signals sent to the guard (Claude Code's timeout) and the
 * guard's own --timeout are passed on to the command. Once a stopped command is gone the guard stops waiting,
 * as Claude Code does: what a command line started in the background may hold stdout open and is left running,
 * as it would be without the guard. A stopped run ends as the stop made it end: by the command's own status when
 * the stop ended it with one, else by the stop signal (never as a success).
 */
export function runGuarded(run: GuardedRun): Promise<GuardedRunResult> {
  return new Promise((resolve) => {
    const capture = new StdoutCapture({ spillBytes: run.spillBytes, headChars: run.headChars, spillPath: run.spillPath });
    const interactive = run.stdin.isTTY === true;
    const [file, ...args] = commandArgv(run.command, run.shell);
    // In the guard's own session and group, as under Claude Code: it keeps the terminal a hook may prompt on.
    const child = spawn(file ?? '', args, { stdio: [interactive ? 'inherit' : 'pipe', 'pipe', 'inherit'] });
    /** How the command exited, once it has (stdout may stay open after). */
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    /** The signal that stopped the run (a forwarded one, or SIGTERM of the timeout), and whether the command had exited already. */
    let stoppedBy: NodeJS.Signals | null = null;
    let exitedBeforeStop = false;
    const inputParts: Buffer[] = [];
    let inputBytes = 0;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    const stop = (signal: NodeJS.Signals): void => {
      if (stoppedBy === null) {
        stoppedBy = signal;
        exitedBeforeStop = exited !== undefined;
      }
      if (exited === undefined) child.kill(signal);
      else afterStop();
    };
    for (const signal of FORWARDED_SIGNALS) process.on(signal, stop);

    const onInput = (chunk: Buffer): void => {
      if (inputBytes >= MAX_INPUT_HEAD_BYTES) return;
      inputParts.push(chunk);
      inputBytes += chunk.length;
    };
    if (!interactive && child.stdin) {
      // A command that does not read its input closes the pipe early: that is not an error of the hook.
      child.stdin.on('error', () => undefined);
      run.stdin.on('data', onInput);
      run.stdin.pipe(child.stdin);
    }

    const settle = (exitCode: number | null, signal: NodeJS.Signals | null, spawnError?: string): void => {
      if (settled) return;
      settled = true;
      for (const timer of timers) clearTimeout(timer);
      for (const sig of FORWARDED_SIGNALS) process.off(sig, stop);
      run.stdin.off('data', onInput);
      run.stdin.unpipe();
      run.stdin.pause();
      resolve({ exitCode, signal, stdout: capture.finish(), input: Buffer.concat(inputParts).toString('utf8'), spawnError });
    };

    /** A stopped command is gone: what is already in the pipe is read for a moment, then the run ends. */
    const afterStop = (): void => {
      timers.push(setTimeout(() => {
        child.stdout?.destroy();
        const own = exited !== undefined && !exitedBeforeStop && !(exited.code === 0 && exited.signal === null);
        settle(own ? (exited?.code ?? null) : null, own ? (exited?.signal ?? null) : stoppedBy);
      }, STOPPED_OUTPUT_GRACE_MS));
    };

    child.stdout?.on('data', (chunk: Buffer) => capture.push(chunk));
    child.on('error', (error) => settle(null, null, error.message));
    child.on('exit', (code, signal) => {
      exited = { code, signal };
      if (stoppedBy !== null) afterStop();
    });
    // 'close' waits for stdout to end too, so output written just before exit is kept.
    child.on('close', (code, signal) => {
      if (stoppedBy === null) settle(code, signal);
    });

    if (run.timeoutMs !== undefined) {
      timers.push(
        setTimeout(() => {
          // The guard's own timeout ends what the command started as well, found while the command still runs.
          const below = exited === undefined && child.pid !== undefined ? descendants(child.pid) : [];
          const signalAll = (signal: NodeJS.Signals): void => {
            for (const pid of below) {
              try {
                process.kill(pid, signal);
              } catch {
                // Gone already.
              }
            }
          };
          signalAll('SIGTERM');
          stop('SIGTERM');
          timers.push(setTimeout(() => {
            signalAll('SIGKILL');
            if (exited === undefined) child.kill('SIGKILL');
          }, KILL_GRACE_MS));
        }, run.timeoutMs),
      );
    }
  });
}
