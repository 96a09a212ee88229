import { closeSync, fstatSync, openSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { parseArgs } from 'node:util';

import { OUTPUT_CAP_CHARS } from '../../../../shared/src/cliff.ts';
import { printable } from '../../../../shared/src/printable.ts';
import { MAX_TIMEOUT_SECONDS, parseKillGrace, parseTimeoutSeconds, parseToolArgs, parseWholeNumber, UsageError } from '../common/args.ts';
import { KILL_GRACE_MS } from '../common/io.ts';
import { makeDir } from '../../make-dir.ts';
import { DEFAULT_SPILL_BYTES } from './capture.ts';
import { GUARD_ENV } from './env.ts';
import { DEFAULT_KEEP_FOR_MS, DEFAULT_KEEP_SIZE_BYTES, parseKeepFor, parseKeepSize, pruneSaved, savedName } from './keep.ts';
import type { Keep, SavedKind } from './keep.ts';
import { runGuarded } from './run.ts';
import type { GuardedRunResult } from './run.ts';
import { DEFAULT_GUARD_BUDGET, guardStdout, MIN_GUARD_BUDGET, trimAbove, trimText } from './trim.ts';
import type { Trimmed } from './trim.ts';

const HELP = `Usage: hookwatch guard [options] -- <command> [args...]
       hookwatch guard --install [.claude/settings.json] [--budget <chars>]
       hookwatch guard --uninstall [.claude/settings.json]

Runs a hook command exactly as Claude Code would (same stdin, environment, working directory; stderr and the
exit code passed through) and keeps each output string within a budget before Claude Code measures it. Claude
Code delivers up to 10,000 characters (UTF-16 code units) whole and replaces anything longer with a
~2,000-character preview; the guard keeps the front of an over-budget string, cut at a line or word boundary,
and ends it with one line saying how much was left out and which file holds the full output.

Without --budget (or HOOKWATCH_GUARD_BUDGET), a string of up to ${OUTPUT_CAP_CHARS.toLocaleString('en-US')} code units, which Claude Code delivers
whole, passes untouched, and a longer one is cut to ${DEFAULT_GUARD_BUDGET.toLocaleString('en-US')}. A budget given is the largest string kept:
any string longer is cut to it, even one Claude Code would deliver whole.

Plain stdout is measured whole; with JSON output, the strings Claude Code caps (those hookwatch check measures:
hookSpecificOutput.additionalContext, systemMessage, and initialUserMessage under hookSpecificOutput or else at
the top level) are trimmed separately and the rest is untouched, a top-level additionalContext included (Claude
Code neither delivers nor caps it). Output with nothing to trim, and the output of a command that exits non-zero,
passes through byte for byte, but for a stopped run's output past the 8 MiB held in memory: cut as plain text,
so the guard ends at once; and for one past what is saved of it (--keep-size): cut as plain text too.
Where the full output cannot be saved (--dir), it passes through unchanged, one past 8 MiB as it comes.

One argument after -- is a command line run by the shell (as in a settings file); several are run directly. In a
settings file, single-quote the command line after -- (as --install does): -- '"$CLAUDE_PROJECT_DIR"/hook.sh'.
One argument that is the path of an existing file is run as that file, not split again at a space in the path,
so -- "$CLAUDE_PROJECT_DIR"/hook.sh works too.

A mistake in the guard's own flags or HOOKWATCH_GUARD_* variables never stops the hook (exit 2 would block
every tool call): that setting keeps its default, the command runs, and the mistake is named on stderr after
the command's own stderr, unless the command exits 2 (Claude Code gives that stderr to the model as the
reason for the block: it stays exactly the command's). Without a command to run the guard exits 1.

Options:
  --budget <chars>     largest output string kept, in UTF-16 code units, ${MIN_GUARD_BUDGET} to ${OUTPUT_CAP_CHARS} (HOOKWATCH_GUARD_BUDGET;
                       default: up to ${OUTPUT_CAP_CHARS} kept whole, a longer string cut to ${DEFAULT_GUARD_BUDGET})
  --timeout <seconds>  stop the command after this long (SIGTERM, then SIGKILL after the kill grace), at most
                       ${MAX_TIMEOUT_SECONDS} (about 24 days); default: no own timeout
  --kill-grace <time>  how long a stopped command (Claude Code's timeout, or --timeout) gets to end before SIGKILL,
                       from 1ms to 1m, such as 5s or 1500ms (default 1s; HOOKWATCH_GUARD_KILL_GRACE); longer lets
                       a hook flush on stop, but Claude Code may kill the guard first and leave the command running.
                       The stop reaches all the command started (its process group), once each: a hook file
                       that /bin/sh (dash) runs as its child too, though the shell ends on it at once
  --dir <dir>          where full outputs are saved (default $TMPDIR/hookwatch-guard-<uid>; HOOKWATCH_GUARD_DIR)
  --keep-for <time>    a run that saves an output removes the saved outputs older than this, at least 1h (default
                       7d; HOOKWATCH_GUARD_KEEP_FOR)
  --keep-size <size>   then the oldest others until those left fit this size (default 1GiB; HOOKWATCH_GUARD_KEEP_SIZE);
                       only files the guard saved are removed, never the ones of the run itself, nor to fit the
                       size one saved in the last minute. One output is saved up to this size (at least 8MiB):
                       past it, it is counted but not written, and the pointer line says the file holds its first
                       bytes only
  --report <url>       send one OTLP log record per trimmed output to this hookwatch (e.g. http://hookwatch:4318;
                       HOOKWATCH_GUARD_REPORT), in the background, without delaying the hook, once the output is
                       written in full (a stopped or killed run, or a closed stdout, reports nothing);
                       HOOKWATCH_GUARD_NO_REPORT=1 turns reports off whatever --report says (hookwatch check sets
                       it for the hooks it runs: their input is made up); a report not delivered is said in
                       one line on stderr, at a terminal at once, else by the next run that reports
  --shell <path>       shell for a one-argument command line (default /bin/sh)
  --install [file]     wrap every command hook of a settings file (default .claude/settings.json); the file from
                       before the first change is kept as <file>.hookwatch-backup, never overwritten. A hook with
                       fields the guard does not know (anything but type, command and timeout) is left as it is,
                       and named on stderr. The wrapped command starts with exec: Claude Code's timeout signals
                       only the shell it runs the hook with, and /bin/sh (dash) would not pass it on to the guard.
                       A command an earlier release wrapped without exec is given it, its options kept
  --uninstall [file]   unwrap them again, back to the original commands; when nothing else changed, the file is
                       the backup again, byte for byte, and the backup is removed. Only commands in the exact form
                       --install writes are unwrapped; a guard call written another way is left as it is (and
                       --install never wraps a command that calls the guard already)
  --command <prefix>   with --install: how hooks should call the guard (default: this node and hookwatch), one
                       command and its arguments, not a shell line (it follows exec), recorded
                       in <file>.hookwatch-guard.json for --uninstall (which also takes it, when that record is gone);
                       --budget and --report given with --install are written into every wrapped command; the
                       other options of a run (--dir, --keep-for, --keep-size, --timeout, --kill-grace, --shell) go
                       in <prefix>, and given on their own with --install they are an error
  -h, --help           this help (on stdout, when no command follows --; with one, the command runs and --help
                       is named on stderr, as is --command without --install or --uninstall)
`;

/**
 * Set (to anything but the empty string) in a guard's environment, no trim is reported, whatever --report or
 * HOOKWATCH_GUARD_REPORT say: `hookwatch check` sets it, so a CI run of a guarded hook on made-up input never
 * shows on the real hook's pages.
 */
export const GUARD_NO_REPORT_ENV = GUARD_ENV.noReport;

/** How the guard process should end: with the command's exit code, or killed by the command's signal. */
export type GuardExit = { code: number } | { signal: NodeJS.Signals };

/** The process pieces the guard uses; tests pass their own. */
export interface GuardIO {
  stdin: Readable & { isTTY?: boolean };
  /** Resolves once `data` is written in full; rejects when it cannot be (the reader of the hook's output is gone). */
  stdout: (data: string | Buffer) => Promise<void>;
  stderr: (s: string) => void;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/**
 * A stdout spilled to a file (past HOOKWATCH_GUARD_SPILL_BYTES, 8 MiB by default and at most) that may be one JSON
 * object is read back and parsed up to this many times the spill size (64 MiB by default); past it, it passes through
 * unchanged.
 */
const MAX_SPILLED_JSON_SPILLS = 8;

/**
 * Whether a spilled stdout may be one JSON object, to be parsed whole: it begins with `{` and ends with `}`, and
 * is not JSON Lines (a first line that is a whole JSON value with more after it).
 */
function mayBeOneObject(head: string, path: string): boolean {
  const text = head.trimStart();
  // A head of white space alone says nothing: the output goes on past it, and may be an object still.
  if (text === '') return startsLikeObject(path) && endsLikeObject(path);
  if (!text.startsWith('{')) return false;
  const newline = text.indexOf('\n');
  if (newline !== -1 && text.slice(newline + 1).trim() !== '') {
    try {
      JSON.parse(text.slice(0, newline));
      return false;
    } catch {
      // The first line is not a whole value: one object over several lines, perhaps.
    }
  }
  return endsLikeObject(path);
}

/** Bytes read at a time to find where white space around a spilled output ends. */
const EDGE_BLOCK_BYTES = 64 * 1024;

/**
 * Whether a file's first character that is not white space is `{`, as a JSON object's is. Read from the start a
 * block at a time: any amount of white space may come before the object (JSON.parse of the trimmed output takes it).
 */
function startsLikeObject(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const decoder = new StringDecoder('utf8');
    const block = Buffer.alloc(EDGE_BLOCK_BYTES);
    for (let read = readSync(fd, block); read > 0; read = readSync(fd, block)) {
      const head = decoder.write(block.subarray(0, read)).trimStart();
      if (head !== '') return head.startsWith('{');
    }
    return false;
  } finally {
    closeSync(fd);
  }
}

/** Whether `byte` continues a UTF-8 character (10xxxxxx) rather than starting one. */
const continuesCharacter = (byte: number | undefined): boolean => byte !== undefined && (byte & 0xc0) === 0x80;

/**
 * Whether a file's last character that is not white space is `}`, as a JSON object's is. Read from the end a
 * block at a time: any amount of white space may follow the object. White space is what trimming the output for
 * JSON.parse takes (String.prototype.trim, as guardStdout does for an output held in memory): U+3000, U+2028 or
 * NBSP too, each several bytes in UTF-8, so a block is decoded from the first character that starts in it.
 */
function endsLikeObject(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const block = Buffer.alloc(EDGE_BLOCK_BYTES);
    for (let end = fstatSync(fd).size; end > 0;) {
      const start = Math.max(0, end - block.length);
      readSync(fd, block, 0, end - start, start);
      // A character cut by the block's start is read whole with the block before (a UTF-8 one has at most 3
      // continuation bytes; more are invalid, and decode as U+FFFD, which is not white space either way).
      let from = 0;
      while (start > 0 && from < 3 && continuesCharacter(block[from])) from++;
      const tail = block.toString('utf8', from, end - start).trimEnd();
      if (tail !== '') return tail.endsWith('}');
      end = start + from;
    }
    return false;
  } finally {
    closeSync(fd);
  }
}

/** Why a command that is there cannot be started: a file without execute permission, a folder, a noexec mount. */
const NOT_RUNNABLE = new Set(['EACCES', 'EPERM']);

/** Parsed options of a guarded run. */
interface GuardOptions {
  budget: number;
  /** Strings longer than this are cut to the budget (trimAbove). */
  limit: number;
  timeoutMs: number | undefined;
  /** How long a stopped command gets before SIGKILL. */
  killGraceMs: number;
  dir: string;
  keep: Keep;
  report: string | undefined;
  shell: string;
  /** Stdout bytes held in memory before the rest goes to a file (HOOKWATCH_GUARD_SPILL_BYTES, for tests). */
  spillBytes: number;
}

/** `$TMPDIR/hookwatch-guard-<uid>`: one folder per user, so a shared /tmp never mixes users' hook output. */
function defaultDir(): string {
  return join(tmpdir(), `hookwatch-guard-${process.getuid?.() ?? 'user'}`);
}

const GUARD_FLAGS = {
  budget: { type: 'string' },
  timeout: { type: 'string' },
  'kill-grace': { type: 'string' },
  dir: { type: 'string' },
  'keep-for': { type: 'string' },
  'keep-size': { type: 'string' },
  report: { type: 'string' },
  shell: { type: 'string' },
  install: { type: 'boolean' },
  uninstall: { type: 'boolean' },
  command: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Flags of a guarded run that --install does not write into the commands it wraps. */
const RUN_ONLY_FLAGS = ['dir', 'keep-for', 'keep-size', 'timeout', 'kill-grace', 'shell'] as const;

/**
 * Why flags given with --install or --uninstall would do nothing, or undefined when each one is used: --install
 * writes --budget and --report into every wrapped command and nothing else of a run, and --uninstall takes only
 * --command. Said, not ignored: the user asked for them, and a hook run without them would not show it.
 */
function setupUnusedFlags(mode: 'install' | 'uninstall', values: Record<string, string | boolean | undefined>): string | undefined {
  const names = mode === 'install' ? RUN_ONLY_FLAGS : (['budget', 'report', ...RUN_ONLY_FLAGS] as const);
  const given = names.filter((name) => values[name] !== undefined).map((name) => `--${name}`);
  if (given.length === 0) return undefined;
  const list = given.join(', ');
  if (mode === 'uninstall') return `--uninstall takes a settings file and --command only, not ${list}; nothing was changed`;
  return `--install writes --budget and --report into the wrapped commands, not ${list}; give ${given.length === 1 ? 'it' : 'them'} in the guard call of --command instead (--command '<node> <hookwatch.mjs> guard ${given[0]} …'); nothing was changed`;
}

/**
 * What a flag's value written with a space leaves standing after it: a figure or a unit (the `s` of `--timeout 30 s`,
 * the `MiB` of `--keep-size 2 MiB`), never a command's name.
 */
const VALUE_REMNANT = /^(?:[\d.,_]+|ms|s|m|h|d|b|[kmgt]i?b|secs?|seconds?|mins?|minutes?|hours?|days?|bytes?)$/i;

/**
 * The arguments before "--" that begin a command, from the first of them on: no flag takes it, and it is not what a
 * value written with a space leaves after it. Then what follows "--" is the rest of that command (its arguments),
 * and run alone it would be another command. An unknown flag takes the argument after it, as a value.
 */
function commandBeforeDash(own: readonly string[]): string[] {
  const { tokens } = parseArgs({ args: [...own], allowPositionals: true, options: GUARD_FLAGS, strict: false, tokens: true });
  const begun: string[] = [];
  let valueNext = false;
  let afterValue = false;
  for (const t of tokens) {
    if (t.kind === 'option') {
      const known = Object.hasOwn(GUARD_FLAGS, t.name);
      valueNext = !known && t.inlineValue !== true;
      afterValue = t.value !== undefined;
    } else if (t.kind === 'positional') {
      if (begun.length > 0 || (!valueNext && (!afterValue || !VALUE_REMNANT.test(t.value)))) begun.push(t.value);
      else [valueNext, afterValue] = [false, true];
    }
  }
  return begun;
}

/** The budget from a flag or the variable; `label` names where it came from in the error. */
function parseBudget(raw: string, label: string): number {
  return parseWholeNumber('budget', raw, MIN_GUARD_BUDGET, OUTPUT_CAP_CHARS, label);
}

/**
 * One line of the guard's own: what it names (a command, a settings file and its events, matchers and fields, a
 * variable's value) written out as printable() gives it, so none can forge a line of its own or reach the
 * terminal as an escape sequence. The line break that ends it stays.
 */
function ownLine(line: string): string {
  return `${printable(line.endsWith('\n') ? line.slice(0, -1) : line)}\n`;
}

/** `hookwatch guard`: runs a hook command and keeps its output strings within the budget. */
export async function runGuard(argv: readonly string[], processIO: GuardIO): Promise<GuardExit> {
  // Every message the guard writes on stderr is one line (the command's stderr does not pass through here).
  const io: GuardIO = { ...processIO, stderr: (line) => processIO.stderr(ownLine(line)) };
  try {
    return await guard(argv, io);
  } catch (error) {
    // One line, not a stack. Once the command has run, guardCommand ends as it did whatever goes wrong.
    io.stderr(`hookwatch guard: ${error instanceof Error ? error.message : String(error)}\n`);
    return { code: 1 };
  }
}

async function guard(argv: readonly string[], io: GuardIO): Promise<GuardExit> {
  const split = argv.indexOf('--');
  const own = split === -1 ? [...argv] : argv.slice(0, split);
  const command = split === -1 ? [] : argv.slice(split + 1);
  const fail = (error: unknown, code: number): GuardExit => {
    const message = error instanceof Error ? error.message : String(error);
    io.stderr(`hookwatch guard: ${message}\n`);
    if (error instanceof UsageError) io.stderr('Run "hookwatch guard --help" for usage.\n');
    return { code };
  };
  // The guard's own warnings about a run, written once the command has ended (see afterRun).
  const warnings: string[] = [];
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseToolArgs({ args: own, allowPositionals: true, options: GUARD_FLAGS });
  } catch (error) {
    // --install and --uninstall run at a terminal: a mistake there is a usage error (2), as below.
    if (own.includes('--install') || own.includes('--uninstall')) return fail(error, 2);
    // With a hook to run, a flag the guard does not take is named and left out: the hook still runs.
    if (command.length === 0 || !(error instanceof UsageError)) return fail(error, 1);
    warnings.push(`hookwatch guard: ${error.message}; ignored, the command runs\n`);
    // Read leniently: an unknown flag's value reads as a stray argument, which goes with it.
    parsed = { ...parseArgs({ args: own, allowPositionals: true, options: GUARD_FLAGS, strict: false }), positionals: [] };
  }
  const { values, positionals } = parsed;
  const text = (name: keyof typeof GUARD_FLAGS): string | undefined => (typeof values[name] === 'string' ? values[name] : undefined);
  // With a hook to run (a settings entry), stdout is the hook's output: help there would replace it. The hook
  // runs and the flag is named, as other mistakes in the guard's flags are.
  if (values['help'] === true && command.length === 0) {
    // A reader that stops early (| head) has what it wanted.
    await io.stdout(HELP).catch(() => undefined);
    return { code: 0 };
  }
  if (values['help'] === true) warnings.push('hookwatch guard: --help with a command to run; ignored, the command runs ("hookwatch guard --help" prints the help)\n');
  if (values['install'] === true || values['uninstall'] === true) {
    // Run at a terminal, not as a hook: a mistake is an error, exit 2, and nothing is written.
    try {
      if (values['install'] === true && values['uninstall'] === true) throw new UsageError('give --install or --uninstall, not both');
      if (command.length > 0 || positionals.length > 1) throw new UsageError('--install and --uninstall take one settings file, not a command');
      const unused = setupUnusedFlags(values['install'] === true ? 'install' : 'uninstall', values);
      if (unused !== undefined) throw new UsageError(unused);
      const flagBudget = text('budget');
      const report = text('report');
      const { installGuard } = await import('./install.ts');
      const message = await installGuard({
        settingsPath: positionals[0] ?? join('.claude', 'settings.json'),
        cwd: io.cwd,
        mode: values['install'] === true ? 'install' : 'uninstall',
        prefix: text('command'),
        budget: flagBudget === undefined ? undefined : parseBudget(flagBudget, '--budget'),
        report: report === undefined ? undefined : (await import('./report.ts')).logsUrl(report).replace(/\/v1\/logs$/, ''),
        warn: io.stderr,
      });
      await io.stdout(ownLine(message));
      return { code: 0 };
    } catch (error) {
      return fail(error, 2);
    }
  }
  if (positionals.length > 0 && command.length === 0) return fail(new UsageError(`put the hook command after "--": hookwatch guard -- ${positionals.join(' ')}`), 1);
  // A command begun before "--" (`hookwatch guard echo -- rm -rf build`): what follows "--" is the rest of it, and
  // is not run as a command of its own.
  const begun = command.length > 0 ? commandBeforeDash(own) : [];
  if (begun.length > 0) return fail(new UsageError(`put the hook command after "--": hookwatch guard -- ${[...begun, ...command].join(' ')}`), 1);
  // With a command after "--", what else stands before it is a mistake in the guard's flags (a value written with a
  // space, `--timeout 30 s`): named, and the hook runs, as for any other.
  if (positionals.length > 0) warnings.push(`hookwatch guard: unexpected argument${positionals.length > 1 ? 's' : ''} ${positionals.map((p) => JSON.stringify(p)).join(' ')} before "--"; ignored, the command runs\n`);
  if (values['command'] !== undefined) warnings.push('hookwatch guard: --command is for --install and --uninstall; ignored, the command runs\n');
  if (command.length === 0) return fail(new UsageError('no command given (hookwatch guard -- <command> [args...])'), 1);
  const exit = await guardCommand(command, await runOptions(text, io, warnings), io);
  afterRun(exit, warnings, io);
  return exit;
}

/**
 * Writes the guard's warnings about its own settings after the command's stderr, and not at all when the command
 * exits 2: Claude Code then gives that stderr to the model as the reason for the block, which must stay exactly
 * the command's.
 */
function afterRun(exit: GuardExit, warnings: readonly string[], io: GuardIO): void {
  if ('code' in exit && exit.code === 2) return;
  for (const warning of warnings) io.stderr(warning);
}

/**
 * The options of a guarded run. Each bad one is named in `warnings` and keeps its default: the guard must not stop
 * the hook it wraps over its own settings (a typo in HOOKWATCH_GUARD_REPORT, set for every hook, would).
 */
async function runOptions(text: (name: keyof typeof GUARD_FLAGS) => string | undefined, io: GuardIO, warnings: string[]): Promise<GuardOptions> {
  const lenient = <T>(parse: () => T, fallback: T, instead: string): T => {
    try {
      return parse();
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      warnings.push(`hookwatch guard: ${error.message}; ${instead}\n`);
      return fallback;
    }
  };
  /** The flag's value, else the variable's (an empty one is unset), with the name a message gives it; undefined when neither. */
  const given: GivenOption = (flag, variable) => {
    const flagValue = text(flag);
    if (flagValue !== undefined) return [flagValue, `--${flag}`];
    const envValue = io.env[variable] || undefined;
    return envValue === undefined ? undefined : [envValue, variable];
  };
  const budgetText = given('budget', GUARD_ENV.budget);
  const givenBudget = lenient(
    () => (budgetText === undefined ? undefined : parseBudget(...budgetText)),
    undefined, `the default is used (strings of up to ${OUTPUT_CAP_CHARS.toLocaleString('en-US')} characters left whole, longer ones cut to ${DEFAULT_GUARD_BUDGET.toLocaleString('en-US')})`);
  const timeout = text('timeout');
  const timeoutMs = lenient(() => (timeout === undefined ? undefined : parseTimeoutSeconds(timeout) * 1000), undefined, 'the command runs without the guard\'s own timeout');
  const killGrace = given('kill-grace', GUARD_ENV.killGrace);
  // The duration parser is loaded only when a grace is given: most runs take the default.
  const killGraceMs = killGrace === undefined ? KILL_GRACE_MS : await (async () => {
    const { parseDuration } = await import('../../config/values.ts');
    return lenient(() => parseKillGrace(parseDuration, ...killGrace), KILL_GRACE_MS, 'a stopped command is killed after the default 1s');
  })();
  const report = io.env[GUARD_NO_REPORT_ENV] ? undefined : given('report', GUARD_ENV.report);
  const checkedReport = report === undefined ? undefined : await (async () => {
    const { logsUrl } = await import('./report.ts');
    return lenient(() => (logsUrl(...report), report[0]), undefined, 'trims are not reported');
  })();
  // Smaller spills let tests reach the spilled paths without writing 8 MiB; never more, which memory must hold.
  const spill = io.env[GUARD_ENV.spillBytes] || undefined;
  const spillBytes = spill === undefined ? DEFAULT_SPILL_BYTES : lenient(
    () => parseWholeNumber('spill', spill, 1, DEFAULT_SPILL_BYTES, GUARD_ENV.spillBytes),
    DEFAULT_SPILL_BYTES, `the default is used (an output past ${DEFAULT_SPILL_BYTES / 1024 / 1024} MiB goes to a file)`);
  return {
    budget: givenBudget ?? DEFAULT_GUARD_BUDGET,
    limit: trimAbove(givenBudget),
    timeoutMs,
    killGraceMs,
    keep: await keepOptions(given, lenient),
    // Absolute: the pointer line names the file for the model, which does not run in the hook's directory.
    dir: resolve(io.cwd, text('dir') ?? (io.env[GUARD_ENV.dir] || defaultDir())),
    report: checkedReport,
    shell: text('shell') ?? '/bin/sh',
    spillBytes,
  };
}

/** A run option given by its flag or else its environment variable: the text and the name it was given under. */
type GivenOption = (flag: keyof typeof GUARD_FLAGS, variable: string) => [text: string, label: string] | undefined;

/**
 * How long and up to what size saved outputs are kept: --keep-for and --keep-size, else HOOKWATCH_GUARD_KEEP_FOR
 * and HOOKWATCH_GUARD_KEEP_SIZE, else the defaults. The parsers of durations and sizes are loaded only when one
 * is given: most runs take the defaults.
 */
async function keepOptions(given: GivenOption, lenient: <T>(parse: () => T, fallback: T, instead: string) => T): Promise<Keep> {
  const keepFor = given('keep-for', GUARD_ENV.keepFor);
  const keepSize = given('keep-size', GUARD_ENV.keepSize);
  if (keepFor === undefined && keepSize === undefined) return { forMs: DEFAULT_KEEP_FOR_MS, sizeBytes: DEFAULT_KEEP_SIZE_BYTES };
  const parsers = await import('../../config/values.ts');
  return {
    forMs: keepFor === undefined ? DEFAULT_KEEP_FOR_MS : lenient(() => parseKeepFor(parsers, ...keepFor), DEFAULT_KEEP_FOR_MS, 'saved outputs are kept for the default 7d'),
    sizeBytes: keepSize === undefined ? DEFAULT_KEEP_SIZE_BYTES : lenient(() => parseKeepSize(parsers, ...keepSize), DEFAULT_KEEP_SIZE_BYTES, 'saved outputs are kept up to the default 1GiB'),
  };
}

/**
 * Throws unless `dir` belongs to this user and no one else may write in it. The model is told to read the files
 * saved there: in a folder another user made first in a shared /tmp (the default path is predictable), or one
 * others may write in, someone else could put their own text in place of a saved output, and so into the session.
 */
function checkPrivateDir(dir: string): void {
  const uid = process.getuid?.();
  if (uid === undefined) return;
  const st = statSync(dir);
  if (st.uid !== uid) throw new Error(`${dir} belongs to another user (uid ${st.uid}), who could replace the saved output`);
  if ((st.mode & 0o022) !== 0) throw new Error(`${dir} can be written by other users (mode ${(st.mode & 0o777).toString(8)}), who could replace the saved output; chmod 700 it`);
}

async function guardCommand(command: readonly string[], options: GuardOptions, io: GuardIO): Promise<GuardExit> {
  const time = Date.now();
  const pathFor = (field: SavedKind): string => join(options.dir, savedName(time, process.pid, field));
  const ensureDir = (): void => {
    // Mode 0700: the files hold whatever the hook printed.
    makeDir(options.dir, 0o700);
    checkPrivateDir(options.dir);
  };
  const { spillBytes } = options;
  // Why the output could not be written in full (Claude Code closed the pipe after its timeout): then it never
  // reached the model, and no trim of it is reported.
  let unwritten: string | undefined;
  const write = async (data: string | Buffer): Promise<void> => {
    if (unwritten !== undefined) return;
    try {
      await io.stdout(data);
    } catch (error) {
      unwritten = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    }
  };
  const result = await runGuarded({
    command,
    shell: options.shell,
    stdin: io.stdin,
    timeoutMs: options.timeoutMs,
    killGraceMs: options.killGraceMs,
    spillBytes,
    // No one output's copy is larger than the folder may hold (but for the share held in memory, saved whole).
    saveBytes: options.keep.sizeBytes,
    headChars: options.budget,
    spillPath: () => {
      ensureDir();
      return pathFor('spill');
    },
    passOn: write,
  });
  if (result.spawnError !== undefined) {
    io.stderr(`hookwatch guard: cannot run ${command[0] ?? ''}: ${result.spawnError.message}\n`);
    // As a shell (and env, timeout) says it: 126 for a command found but not to be run, 127 for one not found.
    return { code: NOT_RUNNABLE.has(result.spawnError.code ?? '') ? 126 : 127 };
  }
  const ended: GuardExit = result.signal !== null ? { signal: result.signal } : { code: result.exitCode ?? 1 };
  // A command that exits 2 blocks: Claude Code gives its stderr to the model as the reason, which stays exactly the
  // command's, so the guard says nothing there of its own.
  const blocked = 'code' in ended && ended.code === 2;
  try {
    await deliver(result, options, io, { pathFor, ensureDir, write, unwritten: () => unwritten, blocked });
  } catch (error) {
    // Whatever went wrong once the command ran (its spill file removed under the guard, say), the guard ends as
    // the command did: an exit of its own would turn a hook that blocks, or one that succeeded, into an error.
    if (!blocked) io.stderr(`hookwatch guard: cannot deliver the output (${(error as Error).message})\n`);
  }
  if (unwritten !== undefined && !blocked) io.stderr(`hookwatch guard: the output could not be written (${unwritten})\n`);
  return ended;
}

/** What deliver shares with guardCommand. */
interface Delivery {
  pathFor: (field: SavedKind) => string;
  ensureDir: () => void;
  /** Writes to stdout; never rejects (a failure is kept for `unwritten`). */
  write: (data: string | Buffer) => Promise<void>;
  /** Why the output could not be written in full, once it could not. */
  unwritten: () => string | undefined;
  /** Whether the command exits 2 (a block): then the guard writes nothing of its own on stderr. */
  blocked: boolean;
}

/** Delivers the output of a command that ran: as written, or trimmed with the full output saved. */
async function deliver(result: GuardedRunResult, options: GuardOptions, io: GuardIO, { pathFor, ensureDir, write, unwritten, blocked }: Delivery): Promise<void> {
  const captured = result.stdout;
  if (captured.kind === 'passed') {
    // No file to spill to: the output went on as it came, unchanged. Said where it would have been cut.
    if ((result.exitCode === 0 || result.stopped) && !blocked) {
      io.stderr(`hookwatch guard: cannot save the full output in ${options.dir} (${captured.problem}); output passed through unchanged\n`);
    }
    return;
  }
  // The output exactly as the command wrote it.
  const passThrough = async (): Promise<void> => {
    if (captured.kind === 'held') {
      if (captured.bytes.length > 0) await write(captured.bytes);
      return;
    }
    const { createReadStream } = await import('node:fs');
    for await (const chunk of createReadStream(captured.path)) {
      await write(chunk as Buffer);
      if (unwritten() !== undefined) break;
    }
    // Passed through whole: no pointer names the spill file, so it goes.
    rmSync(captured.path, { force: true });
  };
  /** Where the spill file was cut (the output went on past what is saved), if it was. */
  const cutAt = captured.kind === 'spilled' ? captured.cutAt : undefined;
  // Claude Code only measures (and only delivers) the stdout of a hook that exits 0: anything else passes as is,
  // but for the output of a stopped run spilled to its file: the stop is to end the hook in time, and writing
  // what it printed until then (gigabytes, from `yes`) would keep it running on. That output is cut as plain
  // text, as one of a hook that exits 0 would be, and the pointer line names the file that holds it all. So is
  // one past what is saved: its file does not hold it all, to be passed on as written.
  if (result.exitCode !== 0 && !(captured.kind === 'spilled' && (result.stopped || cutAt !== undefined))) {
    await passThrough();
    return;
  }
  // The whole output as text: in memory, or a spilled one that may be a JSON object, read back to be parsed
  // (Claude Code parses it too; trimmed as plain text, its decision and other fields would be lost).
  let whole: string | undefined;
  if (captured.kind === 'held') whole = captured.bytes.toString('utf8');
  else if (!result.stopped && cutAt === undefined && mayBeOneObject(captured.head, captured.path)) {
    const maxJsonBytes = MAX_SPILLED_JSON_SPILLS * options.spillBytes;
    const size = statSync(captured.path).size;
    if (size > maxJsonBytes) {
      io.stderr(`hookwatch guard: a JSON output of ${size} bytes is more than the guard parses (${maxJsonBytes}); passed through unchanged\n`);
      await passThrough();
      return;
    }
    whole = readFileSync(captured.path, 'utf8');
  }
  const guarded = whole === undefined ? undefined : guardStdout(whole, options.budget, pathFor, options.limit);
  let trimmed: Trimmed[];
  // The files this run saved and a pointer line names.
  let saved: string[] = [];
  if (captured.kind === 'spilled' && guarded?.format !== 'json') {
    // Plain text too large to hold: measured whole, like Claude Code would; the spill file holds the full output,
    // or as much of it as is saved (then it is cut here, whatever its length: it cannot pass on as written).
    const cut = trimText(captured.head, options.budget, captured.path, captured.chars, cutAt === undefined ? options.limit : 0, cutAt);
    if (cut === undefined) {
      // Nothing to trim, though spilled (HOOKWATCH_GUARD_SPILL_BYTES under the cap's size): the head in memory holds
      // only the budget, so the output goes as written, from its file.
      await passThrough();
      return;
    }
    await write(cut.text);
    trimmed = [{ field: 'stdout', sentChars: captured.chars, keptChars: cut.text.length, full: '' }];
    saved = [captured.path];
  } else if (guarded !== undefined) {
    try {
      if (guarded.trimmed.length > 0) ensureDir();
      // 'wx': a new file only, never through a link someone else left in the folder. Plain stdout is saved as
      // the bytes the command wrote (invalid UTF-8 included), a JSON field as its text.
      for (const cut of guarded.trimmed) {
        writeFileSync(pathFor(cut.field), cut.field === 'stdout' && captured.kind === 'held' ? captured.bytes : cut.full, { mode: 0o600, flag: 'wx' });
      }
    } catch (error) {
      // A pointer to a file that is not there helps nobody: deliver what Claude Code would have got without the guard.
      io.stderr(`hookwatch guard: cannot save the full output in ${options.dir} (${(error as Error).message}); output passed through unchanged\n`);
      await passThrough();
      return;
    }
    if (guarded.replacement === undefined) await passThrough();
    else {
      await write(guarded.replacement);
      // A spilled JSON output's fields are saved on their own: the spill file is not pointed at.
      if (captured.kind === 'spilled') rmSync(captured.path, { force: true });
    }
    trimmed = guarded.trimmed;
    saved = trimmed.map((cut) => pathFor(cut.field));
  } else trimmed = [];
  // A stopped run's output never reached the model: no trim of it is reported.
  if (trimmed.length > 0 && options.report !== undefined && unwritten() === undefined && !result.stopped) {
    // Loaded only when there is something to report: most runs trim nothing.
    const { reportInBackground, takeReportFailure } = await import('./report.ts');
    const { hookIdentity } = await import('./hook-identity.ts');
    // A block's stderr is the command's alone: an earlier failure is kept in the folder for a later run to say.
    const earlier = blocked ? undefined : takeReportFailure(options.dir);
    if (earlier !== undefined) io.stderr(earlier);
    reportInBackground(options.report, { ...hookIdentity(result.input), trims: trimmed.map(({ field, sentChars, keptChars }) => ({ field, sentChars, keptChars })) }, options.dir);
  }
  // Only a run that saved a file looks at the folder (most save nothing), once its output is delivered; a
  // failure costs the hook nothing but the line saying why.
  if (saved.length > 0) {
    const problem = pruneSaved(options.dir, options.keep, new Set(saved.map((path) => basename(path))));
    if (problem !== undefined) io.stderr(`hookwatch guard: cannot remove old saved outputs in ${options.dir} (${problem}); they are kept\n`);
  }
}
