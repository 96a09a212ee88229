import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';

import { StdoutCapture } from './capture.ts';
import type { CapturedStdout } from './capture.ts';
import { descendants, groupRuns, running } from '../common/processes.ts';
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
  /** Most bytes of stdout saved to the spill file (StdoutCapture). */
  saveBytes: number;
  headChars: number;
  spillPath: () => string;
  /** Writes stdout on, where it cannot be spilled (StdoutCapture); never rejects. */
  passOn: (data: Buffer) => Promise<void>;
}

/** How the wrapped command ended. */
export interface GuardedRunResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: CapturedStdout;
  /** Whether a stop signal (passed on, or the guard's own --timeout) stopped the run. */
  stopped: boolean;
  /** The first part of what arrived on stdin (the hook input JSON). */
  input: string;
  /** Why the command could not be started (ENOENT: not found; EACCES: found, but not to be run). */
  spawnError: NodeJS.ErrnoException | undefined;
}

/**
 * Runs the command with the guard's environment, working directory and stderr, its stdin copied through (and
 * its head kept), and its stdout captured. Stop signals sent to the guard (Claude Code's timeout) and the
 * guard's own --timeout are passed on to the command, in its own process group with all it started there (at a
 * terminal, to all it started: stopTargets); what is still running a second later, or at a second stop signal, is killed (SIGKILL) with what runs below
 * the command (killStopped). Once a stopped command and its group are gone the guard stops waiting, as Claude
 * Code does: what left the group (setsid) may hold stdout open and is left running. A stopped run ends as the
 * stop made it end: by the command's own status when the stop ended it with one, else by the stop signal (never
 * as a success).
 */
export function runGuarded(run: GuardedRun): Promise<GuardedRunResult> {
  return new Promise((resolve) => {
    const capture = new StdoutCapture({ spillBytes: run.spillBytes, saveBytes: run.saveBytes, headChars: run.headChars, spillPath: run.spillPath, passOn: run.passOn });
    const interactive = run.stdin.isTTY === true;
    const [file, ...args] = commandArgv(run.command, run.shell);
    // Listened for before the command starts: spawn() may return only once the command has run for a while, and
    // a stop signal in between would otherwise end the guard and leave the command running, never told.
    const onSignal = (signal: NodeJS.Signals): void => onStopSignal(signal);
    for (const signal of FORWARDED_SIGNALS) process.on(signal, onSignal);
    // Not at a terminal (under Claude Code, which runs hooks without a controlling terminal already), in a process
    // group (and session) of its own: a stop signal sent to the group reaches all the command started there, once
    // each, though the shell running a hook file (dash, which does not exec a lone command) ends on it at once
    // without passing it on. At a terminal, in the guard's group: the terminal's Ctrl-C reaches it there, and it
    // keeps the terminal a hook may prompt on.
    const child = spawn(file ?? '', args, { stdio: [interactive ? 'inherit' : 'pipe', 'pipe', 'inherit'], detached: !interactive });
    /** The command's process group (its pid), where it has one of its own. */
    const group = interactive ? undefined : child.pid;
    /** How the command exited, once it has (stdout may stay open after). */
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    /** The signal that stopped the run (a forwarded one, or SIGTERM of the timeout), and whether the command had exited already. */
    let stoppedBy: NodeJS.Signals | null = null;
    let exitedBeforeStop = false;
    /** What the stop signals besides the command and its group (stopTargets). */
    let stopAlso: readonly number[] = [];
    /** Without a group of its own, what ran below the command at the stop: killed with it, though the shell that started it may be gone by then. */
    let belowAtStop: readonly number[] = [];
    /** Whether the SIGKILL of a stopped command is still to come, and whether it found the command running. */
    let killPending = false;
    let killedStopped = false;
    const inputParts: Buffer[] = [];
    let inputBytes = 0;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    /**
     * Sends `signal` to `pids` and to the command's group, or without one to the command while it runs; a process
     * already gone is skipped.
     */
    const signalAll = (signal: NodeJS.Signals, pids: readonly number[]): void => {
      for (const pid of group === undefined ? pids : [-group, ...pids]) {
        try {
          process.kill(pid, signal);
        } catch {
          // Gone already.
        }
      }
      if (group === undefined && exited === undefined) child.kill(signal);
    };
    /** What runs below the command now, while it runs; with `outside`, only what left that group. */
    const below = (outside: number | undefined): number[] => (exited === undefined && child.pid !== undefined ? descendants(child.pid, outside) : []);
    /**
     * What a stop signals besides the command: with a group of its own, what left the group; at a terminal, all
     * the command started for a SIGTERM passed on (`kill <pid>` reaches the guard alone), and nothing more for a
     * SIGINT or SIGHUP passed on: the terminal's Ctrl-C and its hangup reach its foreground group, the command's
     * processes with the guard, already, and a signal passed on to them once more could be the second that kills
     * at once.
     */
    const stopTargets = (signal: NodeJS.Signals, forwarded: boolean): number[] => {
      if (group !== undefined) return below(group);
      return forwarded && signal !== 'SIGTERM' ? [] : below(undefined);
    };
    /**
     * After the grace period, or at a second stop signal, a command still running is killed (SIGKILL) with what
     * runs below it then, as `timeout -k` does: one that ignores the stop signal would otherwise run on past the
     * guard, and be orphaned once whoever stopped the guard kills it. What the stop signalled besides the command
     * gets SIGKILL too, with what it started since (a hook file whose shell is gone, and so no longer below the
     * command, starting a child again). Once only: the grace period's timer may still fire after a second signal.
     */
    const killStopped = (): void => {
      if (!killPending) return;
      killPending = false;
      killedStopped = exited === undefined;
      const left = [...new Set([...stopAlso, ...belowAtStop])].filter(running);
      signalAll('SIGKILL', [...new Set([...left, ...descendants(left), ...below(undefined)])]);
      if (exited !== undefined) afterStop();
    };
    const stop = (signal: NodeJS.Signals, forwarded: boolean): void => {
      if (stoppedBy === null) {
        stoppedBy = signal;
        exitedBeforeStop = exited !== undefined;
        belowAtStop = group === undefined ? below(undefined) : [];
        stopAlso = stopTargets(signal, forwarded);
        killPending = true;
        timers.push(setTimeout(killStopped, run.killGraceMs));
      }
      signalAll(signal, stopAlso);
      if (exited !== undefined) afterStop();
    };
    // A stop signal while a stop waits out its grace period (a second Ctrl-C) kills at once, as docker and
    // systemd do: whoever sends it has stopped waiting.
    const onStopSignal = (signal: NodeJS.Signals): void => (killPending ? killStopped() : stop(signal, true));

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
      const stdout = capture.finish();
      const result = { exitCode, signal, stdout, stopped: stoppedBy !== null, input: Buffer.concat(inputParts).toString('utf8'), spawnError };
      // What was passed on as it came is written before the run ends.
      void capture.passedOn().then(() => resolve(result));
    };

    /** While a stop waits out its grace period, whether what it signalled besides the command still runs. */
    const stopRuns = (): boolean => killPending && (stopAlso.some(running) || (group !== undefined && groupRuns(group)));
    /** Whether a look whether stopRuns still holds is due: nothing else says when what it waits for has ended. */
    let looking = false;
    /**
     * A stopped command is gone: what is already in the pipe is read for a moment, then the run ends, once what
     * the stop signalled besides the command (its group included) is gone or killed too. A command the guard
     * killed (killStopped) ends the run by the stop signal, not by that SIGKILL.
     */
    const afterStop = (): void => {
      if (stopRuns()) {
        if (!looking) {
          looking = true;
          timers.push(setTimeout(() => {
            looking = false;
            afterStop();
          }, STOPPED_OUTPUT_GRACE_MS));
        }
        return;
      }
      timers.push(setTimeout(() => {
        child.stdout?.destroy();
        const own = exited !== undefined && !exitedBeforeStop && !killedStopped && !(exited.code === 0 && exited.signal === null);
        settle(own ? (exited?.code ?? null) : null, own ? (exited?.signal ?? null) : stoppedBy);
      }, STOPPED_OUTPUT_GRACE_MS));
    };

    child.stdout?.on('data', (chunk: Buffer) => {
      const writing = capture.push(chunk);
      // Output passed on as it comes is read no faster than it is written: memory stays bounded.
      if (writing === undefined) return;
      child.stdout?.pause();
      void writing.then(() => child.stdout?.resume());
    });
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
      timers.push(setTimeout(() => stop('SIGTERM', false), run.timeoutMs));
    }
  });
}
