import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

import { countCodePoints, headCodeUnits } from '../common/format.ts';
import { unfinishedBytes } from '../guard/capture.ts';
import { MAX_CAPTURED_STDOUT_BYTES, MAX_KEPT_PLAIN_STDOUT_BYTES, MAX_READ_STDERR_BYTES, MAX_READ_STDOUT_BYTES } from '../common/limits.ts';
import { KILL_GRACE_MS } from '../common/io.ts';
import { descendants } from '../common/processes.ts';
import { Utf16Counter } from '../common/utf16-count.ts';

/** How to run one hook command. */
export interface HookRun {
  /** The command line, run by the shell as Claude Code does for `"type": "command"` hooks. */
  command: string;
  /** Written to the hook's stdin as JSON, then stdin is closed. */
  input: unknown;
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  shell: string;
  /** How long a stopped hook gets to end before SIGKILL (--kill-grace; KILL_GRACE_MS by default). */
  killGraceMs?: number;
  maxCapturedStdoutBytes?: number;
  /** Most stdout read (MAX_READ_STDOUT_BYTES by default): past it the hook is stopped, as at its timeout. */
  maxReadStdoutBytes?: number;
  /** Most stderr read (MAX_READ_STDERR_BYTES by default): past it the hook is stopped, as at its timeout. */
  maxReadStderrBytes?: number;
}

/** What a hook run produced. */
export interface HookRunResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  durationMs: number;
  /** Stdout as text, whole unless stdoutComplete is false (then only the first part). */
  stdout: string;
  /** Stdout length in UTF-16 code units, counted over all of it even past the capture limit. */
  stdoutChars: number;
  /** Stdout length in code points (an emoji one, where it is two code units), counted over all of it too. */
  stdoutCodePoints: number;
  stdoutComplete: boolean;
  /** Bytes of stdout read: all the hook printed, or up to the most read (stdoutStopped). */
  stdoutBytes: number;
  /**
   * Set when the hook printed more stdout than is read: reading stopped there and the hook was stopped, as at its
   * timeout. stdoutChars and stdoutCodePoints count what was read.
   */
  stdoutStopped: boolean;
  /** Stderr, first part only: shown on request, never measured (it does not reach the model on success). */
  stderrHead: string;
  stderrChars: number;
  /** Bytes of stderr read: all the hook printed, or up to the most read (stderrStopped). */
  stderrBytes: number;
  /**
   * Set when the hook printed more stderr than is read: reading stopped there and the hook was stopped, as at its
   * timeout. stderrChars counts what was read.
   */
  stderrStopped: boolean;
  /** Set when the command could not be started at all. */
  spawnError?: string;
  /** Set when hookwatch check itself was stopped (Ctrl-C, SIGTERM) while the hook ran: the hook was stopped too. */
  interrupted?: NodeJS.Signals;
}

const STDERR_KEPT_CHARS = 4_000;
/**
 * Signals that stop hookwatch check (Ctrl-C at a terminal, a CI job cancelled, a closed terminal). The hook runs
 * in a process group of its own, which they do not reach: they are passed on to it, so it never outlives check.
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Collects a stream as text, keeping up to `maxBytes` of it and counting UTF-16 code units and code points for all
 * of it (without decoding what is valid UTF-8: Utf16Counter). Text that cannot be a JSON object (its first character
 * other than white space, as String.prototype.trim takes it, is not `{`) is kept up to `plainMaxBytes` only. What
 * is kept is held as the bytes read, and decoded once, when finished: held as text as well, an output kept whole
 * took twice the memory.
 */
class TextCollector {
  private readonly counter = new Utf16Counter();
  /** Decodes the first bytes, until a character other than white space says whether this may be a JSON object. */
  private readonly lead = new StringDecoder('utf8');
  private kept: Buffer[] = [];
  private keptBytes = 0;
  private maxBytes: number;
  private readonly plainMaxBytes: number;
  /** Whether a character other than white space was seen yet (then maxBytes is settled). */
  private begun = false;
  /** Bytes given so far. */
  bytes = 0;
  complete = true;
  /** Code points of all of it, once finished. */
  codePoints = 0;

  constructor(maxBytes: number, plainMaxBytes = maxBytes) {
    this.maxBytes = maxBytes;
    this.plainMaxBytes = plainMaxBytes;
  }

  get chars(): number {
    return this.counter.units;
  }

  push(chunk: Buffer): void {
    this.bytes += chunk.length;
    this.counter.count(chunk);
    if (!this.begun) {
      const lead = this.lead.write(chunk).trimStart();
      this.begun = lead !== '';
      if (this.begun && !lead.startsWith('{')) this.maxBytes = Math.min(this.maxBytes, this.plainMaxBytes);
    }
    if (!this.complete) return;
    if (this.keptBytes + chunk.length <= this.maxBytes) {
      this.kept.push(chunk);
      this.keptBytes += chunk.length;
      return;
    }
    this.complete = false;
    // Past the limit: what is kept is only ever shown (the output is too large to parse as JSON), so no more of it
    // than of plain text, which frees the rest of an output that looked like a JSON object.
    const head: Buffer[] = [];
    let left = Math.min(this.maxBytes, this.plainMaxBytes);
    for (const part of [...this.kept, chunk]) {
      if (left === 0) break;
      head.push(part.subarray(0, left));
      left -= head.at(-1)?.length ?? 0;
    }
    // A copy: the chunks it was cut from are let go.
    this.kept = [Buffer.concat(head)];
    this.keptBytes = this.kept[0]?.length ?? 0;
  }

  /** The text kept: all of it, or (not complete) its head, cut between two characters. */
  finish(): string {
    this.codePoints = this.counter.countedCodePoints + countCodePoints(this.counter.end());
    const bytes = Buffer.concat(this.kept, this.keptBytes);
    this.kept = [];
    return (this.complete ? bytes : bytes.subarray(0, bytes.length - unfinishedBytes(bytes))).toString('utf8');
  }
}

/**
 * Runs a hook the way Claude Code runs a command hook: `<shell> -c <command>` in the project directory, the
 * input JSON on stdin, a timeout after which the hook (its whole process group, so children of the shell too)
 * is stopped (SIGTERM), and killed once the kill grace is over. A stop signal sent to hookwatch check while the
 * hook runs is passed on to the hook's group (which Ctrl-C does not reach) and marks the result `interrupted`.
 * Stdout is read up to `maxReadStdoutBytes`: a hook that prints more is stopped there as at its timeout, its stdout
 * no longer read (`stdoutStopped`); stderr likewise up to `maxReadStderrBytes` (`stderrStopped`). Never throws:
 * failures are in the result.
 */
export function runHook(run: HookRun): Promise<HookRunResult> {
  const started = performance.now();
  return new Promise((resolve) => {
    const stdout = new TextCollector(run.maxCapturedStdoutBytes ?? MAX_CAPTURED_STDOUT_BYTES, MAX_KEPT_PLAIN_STDOUT_BYTES);
    const maxReadStdoutBytes = run.maxReadStdoutBytes ?? MAX_READ_STDOUT_BYTES;
    let stdoutStopped = false;
    const stderr = new TextCollector(STDERR_KEPT_CHARS * 4);
    const maxReadStderrBytes = run.maxReadStderrBytes ?? MAX_READ_STDERR_BYTES;
    let stderrStopped = false;
    let timedOut = false;
    let interrupted: NodeJS.Signals | undefined;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];

    // The stop signals are caught before the hook starts: the hook may run, and be seen running, before this process
    // is scheduled again, and a signal then, with no listener yet, would end this process at once, saying nothing
    // and leaving the hook running. A signal reaches listeners from the event loop, so onStopSignal, added below
    // in the same turn, is the one that handles it.
    const catching = (): void => undefined;
    for (const sig of STOP_SIGNALS) process.on(sig, catching);
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(run.shell, ['-c', run.command], {
        cwd: run.cwd,
        env: run.env,
        stdio: ['pipe', 'pipe', 'pipe'],
        // Its own process group, so a timeout can kill what the shell started, not only the shell.
        detached: true,
      });
    } catch (err) {
      for (const sig of STOP_SIGNALS) process.off(sig, catching);
      throw err;
    }

    /**
     * Signals the hook's group. SIGKILL also goes to what runs below the hook outside the group, found before the
     * group dies: a guard runs its command in a group of its own, and killed before it kills that command, would
     * leave it running. Other signals go to the group only: a guard passes them on to its command, which would
     * otherwise get two (a second stop signal is "kill now" to many programs).
     */
    const killGroup = (signal: NodeJS.Signals): void => {
      if (child.pid === undefined) return;
      const below = signal === 'SIGKILL' ? descendants(child.pid, child.pid) : [];
      for (const pid of [-child.pid, ...below]) {
        try {
          process.kill(pid, signal);
        } catch {
          // Already gone.
        }
      }
    };

    const settle = (exitCode: number | null, signal: NodeJS.Signals | null, spawnError?: string): void => {
      if (settled) return;
      settled = true;
      for (const timer of timers) clearTimeout(timer);
      for (const sig of STOP_SIGNALS) process.off(sig, onStopSignal);
      const stdoutText = stdout.finish();
      const stderrText = stderr.finish();
      resolve({
        exitCode,
        signal,
        timedOut,
        durationMs: Math.round(performance.now() - started),
        stdout: stdoutText,
        stdoutChars: stdout.chars,
        stdoutCodePoints: stdout.codePoints,
        // What was read of a stopped hook's stdout is never all of it.
        stdoutComplete: stdout.complete && !stdoutStopped,
        stdoutBytes: stdout.bytes,
        stdoutStopped,
        // Never half of an emoji at the end: the heading counts what it shows.
        stderrHead: headCodeUnits(stderrText, STDERR_KEPT_CHARS),
        stderrChars: stderr.chars,
        stderrBytes: stderr.bytes,
        stderrStopped,
        ...(spawnError === undefined ? {} : { spawnError }),
        ...(interrupted === undefined ? {} : { interrupted }),
      });
    };

    /** Stops the hook's group with `signal`, then SIGKILL after a grace period, then stops waiting for its pipes. */
    let stopping = false;
    const stop = (signal: NodeJS.Signals): void => {
      killGroup(signal);
      if (stopping) return;
      stopping = true;
      timers.push(
        setTimeout(() => {
          killGroup('SIGKILL');
          // A grandchild that left the group may still hold the pipes open: stop waiting for it a moment later.
          timers.push(
            setTimeout(() => {
              child.stdout.destroy();
              child.stderr.destroy();
              settle(child.exitCode, child.signalCode);
            }, KILL_GRACE_MS),
          );
        }, run.killGraceMs ?? KILL_GRACE_MS),
      );
    };
    // A second stop signal kills the hook at once.
    const onStopSignal = (signal: NodeJS.Signals): void => {
      const again = interrupted !== undefined;
      interrupted ??= signal;
      stop(again ? 'SIGKILL' : signal);
    };
    for (const sig of STOP_SIGNALS) {
      process.on(sig, onStopSignal);
      process.off(sig, catching);
    }

    const timeout = setTimeout(() => {
      timedOut = true;
      stop('SIGTERM');
    }, run.timeoutMs);
    timers.push(timeout);

    /**
     * Reads `chunk` into `collector` up to `maxBytes` read in all; past it, reads no further (a hook still writing
     * gets SIGPIPE) and stops the hook as at its timeout, which then no longer applies. False once past it.
     */
    const readUpTo = (collector: TextCollector, chunk: Buffer, maxBytes: number, stream: Readable): boolean => {
      const room = maxBytes - collector.bytes;
      if (chunk.length <= room) {
        collector.push(chunk);
        return true;
      }
      collector.push(chunk.subarray(0, room));
      stream.destroy();
      clearTimeout(timeout);
      stop('SIGTERM');
      return false;
    };
    // Stdout past the most read is over the cap however it goes on.
    child.stdout.on('data', (chunk: Buffer) => {
      if (!stdoutStopped && !readUpTo(stdout, chunk, maxReadStdoutBytes, child.stdout)) stdoutStopped = true;
    });
    // Stderr is never measured, but one without end would be read until the timeout, a core busy all the while.
    child.stderr.on('data', (chunk: Buffer) => {
      if (!stderrStopped && !readUpTo(stderr, chunk, maxReadStderrBytes, child.stderr)) stderrStopped = true;
    });
    child.on('error', (error) => settle(null, null, error.message));
    // 'close' waits for the pipes too: output written just before exit is not lost.
    child.on('close', (code, signal) => settle(code, signal));

    // A hook that does not read its stdin makes the write fail with EPIPE; that is not an error of the hook.
    child.stdin.on('error', () => undefined);
    child.stdin.end(`${JSON.stringify(run.input)}\n`);
  });
}
