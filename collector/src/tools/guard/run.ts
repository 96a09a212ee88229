import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';

import { StdoutCapture } from './capture.ts';
import type { CapturedStdout } from './capture.ts';
import { descendants, running } from '../common/processes.ts';
import { oneWordCommandLine } from '../common/shell-quote.ts';

/**
 * Hook input kept for naming the hook in reports. Most inputs are a few KB; a tool's input or response can be far
 * larger (a Write of a big file), and then only this head is kept: the members naming the hook come first.
 */
const MAX_INPUT_HEAD_BYTES = 1024 * 1024;
/** After a stopped command exits, how long output already in the pipe is still read. */
const STOPPED_OUTPUT_GRACE_MS = 50;
/** Signals forwarded to the command: what a supervisor (Claude Code on a timeout, a terminal) sends to stop it. */
const FORWARDED_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

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
  /** How long a stopped command gets before SIGKILL (KILL_GRACE_MS). */
  killGraceMs: number;
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
  /** Why the command could not be started (ENOENT: not found; EACCES: found, but not to be run). */
  spawnError: NodeJS.ErrnoException | undefined;
}

/**
 * Runs the command with the guard's environment, working directory and stderr, its stdin copied through (and
 * its head kept), and its stdout captured. Stop signals sent to the guard (Claude Code's timeout) and the
 * guard's own --timeout are passed on to the command; one still running a second later, or at a second stop
 * signal, is killed (SIGKILL) with what runs below it (killStopped). Once a stopped command is gone the guard
 * stops waiting, as Claude Code does: what a command line started in the background may hold stdout open and is
 * left running, as it would be without the guard. A stopped run ends as the stop made it end: by the command's
 * own status when the stop ended it with one, else by the stop signal (never as a success).
 */
export function runGuarded(run: GuardedRun): Promise<GuardedRunResult> {
  return new Promise((resolve) => {
    const capture = new StdoutCapture({ spillBytes: run.spillBytes, headChars: run.headChars, spillPath: run.spillPath });
    const interactive = run.stdin.isTTY === true;
    const [file, ...args] = commandArgv(run.command, run.shell);
    // Listened for before the command starts: spawn() may return only once the command has run for a while, and
    // a stop signal in between would otherwise end the guard and leave the command running, never told.
    const onSignal = (signal: NodeJS.Signals): void => onStopSignal(signal);
    for (const signal of FORWARDED_SIGNALS) process.on(signal, onSignal);
    // In the guard's own session and group, as under Claude Code: it keeps the terminal a hook may prompt on.
    const child = spawn(file ?? '', args, { stdio: [interactive ? 'inherit' : 'pipe', 'pipe', 'inherit'] });
    /** How the command exited, once it has (stdout may stay open after). */
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    /** The signal that stopped the run (a forwarded one, or SIGTERM of the timeout), and whether the command had exited already. */
    let stoppedBy: NodeJS.Signals | null = null;
    let exitedBeforeStop = false;
    /** What the stop signals besides the command (for the guard's own timeout, what the command started). */
    let stopAlso: readonly number[] = [];
    /** Whether the SIGKILL of a stopped command is still to come, and whether it found the command running. */
    let killPending = false;
    let killedStopped = false;
    const inputParts: Buffer[] = [];
    let inputBytes = 0;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    /** Sends `signal` to `pids` and to the command while it runs; a process already gone is skipped. */
    const signalAll = (signal: NodeJS.Signals, pids: readonly number[]): void => {
      for (const pid of pids) {
        try {
          process.kill(pid, signal);
        } catch {
          // Gone already.
        }
      }
      if (exited === undefined) child.kill(signal);
    };
    /**
     * After the grace period, or at a second stop signal, a command still running is killed (SIGKILL) with what
     * runs below it then, as `timeout -k` does: one that ignores the stop signal would otherwise run on past the
     * guard, and be orphaned once whoever stopped the guard kills it. What the stop signalled besides the command
     * gets SIGKILL too. Once only: the grace period's timer may still fire after a second signal.
     */
    const killStopped = (): void => {
      if (!killPending) return;
      killPending = false;
      killedStopped = exited === undefined;
      signalAll('SIGKILL', [...stopAlso.filter(running), ...(killedStopped && child.pid !== undefined ? descendants(child.pid) : [])]);
      if (exited !== undefined) afterStop();
    };
    const stop = (signal: NodeJS.Signals, also: readonly number[] = []): void => {
      if (stoppedBy === null) {
        stoppedBy = signal;
        exitedBeforeStop = exited !== undefined;
        stopAlso = also;
        killPending = true;
        timers.push(setTimeout(killStopped, run.killGraceMs));
      }
      signalAll(signal, also);
      if (exited !== undefined) afterStop();
    };
    // A stop signal while a stop waits out its grace period (a second Ctrl-C) kills at once, as docker and
    // systemd do: whoever sends it has stopped waiting.
    const onStopSignal = (signal: NodeJS.Signals): void => (killPending ? killStopped() : stop(signal));

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

    const settle = (exitCode: number | null, signal: NodeJS.Signals | null, spawnError?: NodeJS.ErrnoException): void => {
      if (settled) return;
      settled = true;
      for (const timer of timers) clearTimeout(timer);
      for (const sig of FORWARDED_SIGNALS) process.off(sig, onSignal);
      run.stdin.off('data', onInput);
      run.stdin.unpipe();
      run.stdin.pause();
      resolve({ exitCode, signal, stdout: capture.finish(), input: Buffer.concat(inputParts).toString('utf8'), spawnError });
    };

    /**
     * A stopped command is gone: what is already in the pipe is read for a moment, then the run ends, once what
     * the stop signalled besides the command is gone or killed too. A command the guard killed (killStopped) ends
     * the run by the stop signal, not by that SIGKILL.
     */
    const afterStop = (): void => {
      if (killPending && stopAlso.some(running)) return;
      timers.push(setTimeout(() => {
        child.stdout?.destroy();
        const own = exited !== undefined && !exitedBeforeStop && !killedStopped && !(exited.code === 0 && exited.signal === null);
        settle(own ? (exited?.code ?? null) : null, own ? (exited?.signal ?? null) : stoppedBy);
      }, STOPPED_OUTPUT_GRACE_MS));
    };

    child.stdout?.on('data', (chunk: Buffer) => capture.push(chunk));
    child.on('error', (error) => settle(null, null, error));
    child.on('exit', (code, signal) => {
      exited = { code, signal };
      if (stoppedBy !== null) afterStop();
    });
    // 'close' waits for stdout to end too, so output written just before exit is kept.
    child.on('close', (code, signal) => {
      if (stoppedBy === null) settle(code, signal);
    });

    if (run.timeoutMs !== undefined) {
      // The guard's own timeout ends what the command started as well, found while the command still runs.
      timers.push(setTimeout(() => stop('SIGTERM', exited === undefined && child.pid !== undefined ? descendants(child.pid) : []), run.timeoutMs));
    }
  });
}
