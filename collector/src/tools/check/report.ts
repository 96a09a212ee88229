import { OUTPUT_CAP_CHARS, PREVIEW_CHARS } from '../../../../shared/src/cliff.ts';
import { formatCount, outputBlock, plural, printable, renderTable } from '../common/format.ts';
import { MAX_READ_STDERR_BYTES, MAX_READ_STDOUT_BYTES } from '../common/limits.ts';
import { callsGuard, defaultGuardPrefix, guardReportGiven, wrapCommand } from '../guard/install.ts';
import { DEFAULT_GUARD_BUDGET } from '../guard/trim.ts';
import type { MeasuredOutput, MeasuredStdout } from './measure.ts';
import { shellQuote } from '../common/shell-quote.ts';
import type { HookRunResult } from './run-hook.ts';

/**
 * measured: exit 0, outputs measured; blocked: exit 2 (Claude Code shows stderr, ignores stdout);
 * failed: another non-zero exit; timed-out: killed at the timeout (Claude Code cancels it, nothing is delivered);
 * too-much-output: printed more stdout than check reads (MAX_READ_STDOUT_BYTES), stopped there;
 * too-much-stderr: printed more stderr than check reads (MAX_READ_STDERR_BYTES), stopped there;
 * not-started: the shell could not be started.
 */
export type HookCheckStatus = 'measured' | 'blocked' | 'failed' | 'timed-out' | 'too-much-output' | 'too-much-stderr' | 'not-started';

/** One checked hook: what ran, how it ended, and its measured outputs. */
export interface HookCheck {
  hookName: string;
  event: string;
  matcher: string | undefined;
  command: string;
  /** Where the hook is in the settings file, when checked from one. */
  location: string | undefined;
  timeoutSeconds: number;
  status: HookCheckStatus;
  run: HookRunResult;
  measured: MeasuredStdout;
}

/** True when this hook makes the check fail: an output over the cap or the budget, or no measurement possible. */
export function hookFails(hook: HookCheck): boolean {
  if (hook.status === 'failed' || hook.status === 'timed-out' || hook.status === 'too-much-output' || hook.status === 'too-much-stderr' || hook.status === 'not-started') return true;
  return hook.measured.outputs.some((o) => o.persisted || o.overBudget);
}

/**
 * A hook of a settings file that check did not run: its matcher does not select the firing checked, or it is no
 * command hook. Counted apart, as a test runner counts a skipped test: neither passed nor failed.
 */
export interface SkippedHook {
  event: string;
  matcher: string | undefined;
  /** Undefined for a hook that is not a command. */
  command: string | undefined;
  /** The hook's type: "command", or what it is when not a command ("prompt"). */
  type: string;
  location: string;
  because: 'matcher' | 'type';
  reason: string;
}

/** Where the hooks' folder came from: --project-dir, the folder holding the settings file's .claude/, or the current folder. */
export type ProjectDirFrom = 'flag' | 'settings' | 'cwd';

/** How much hook text a report may print: none by default (CI logs are read by many; hooks inject secrets). */
export interface ReportOptions {
  budget: number | undefined;
  /** The preview the model sees of an output over the cap, and stderr's head (--show-output). */
  showOutput: boolean;
  /** Whole outputs and stderr (--show-content; implies showOutput). */
  showContent: boolean;
  /** Hooks of a settings file not run for fields hookwatch does not know (none when not given). */
  notChecked?: readonly { location: string; fields: string[] }[];
  /** Hooks of a settings file the firing checked leaves out, or that are no commands (none when not given). */
  skipped?: readonly SkippedHook[];
  /** Where the hooks ran, their CLAUDE_PROJECT_DIR: named when the shell could not find or run a command. */
  projectDir?: string;
  /** Where projectDir came from. */
  projectDirFrom?: ProjectDirFrom;
  /** True when HOOKWATCH_GUARD_REPORT is set (not empty) in the environment the hooks run with. */
  guardReportSet?: boolean;
  /** The settings file checked (absolute), named in the guard --install line the report recommends. */
  settingsPath?: string;
}

function outputJson(output: MeasuredOutput, options: ReportOptions): Record<string, unknown> {
  const { content, preview, ...rest } = output;
  const showPreview = options.showOutput || options.showContent;
  return { ...rest, ...(preview === undefined || !showPreview ? {} : { preview }), ...(options.showContent ? { content } : {}) };
}

/** What `check --json` prints: stable keys for CI; hook text only with --show-output (previews) or --show-content (whole). */
export function checkJson(hooks: HookCheck[], options: ReportOptions): unknown {
  return {
    tool: 'hookwatch check',
    capChars: OUTPUT_CAP_CHARS,
    previewChars: PREVIEW_CHARS,
    budget: options.budget ?? null,
    projectDir: options.projectDir ?? null,
    projectDirFrom: options.projectDirFrom ?? null,
    ok: !hooks.some(hookFails) && (options.notChecked ?? []).length === 0,
    complete: (options.notChecked ?? []).length === 0,
    notChecked: options.notChecked ?? [],
    skipped: (options.skipped ?? []).map((hook) => ({
      event: hook.event,
      matcher: hook.matcher ?? null,
      command: hook.command ?? null,
      type: hook.type,
      location: hook.location,
      because: hook.because,
      reason: hook.reason,
    })),
    hooks: hooks.map((hook) => ({
      hookName: hook.hookName,
      event: hook.event,
      matcher: hook.matcher ?? null,
      command: hook.command,
      location: hook.location ?? null,
      timeoutSeconds: hook.timeoutSeconds,
      status: hook.status,
      fails: hookFails(hook),
      exitCode: hook.run.exitCode,
      signal: hook.run.signal,
      timedOut: hook.run.timedOut,
      durationMs: hook.run.durationMs,
      stdoutChars: hook.run.stdoutChars,
      stdoutComplete: hook.run.stdoutComplete,
      stdoutBytes: hook.run.stdoutBytes,
      stderrChars: hook.run.stderrChars,
      stderrBytes: hook.run.stderrBytes,
      ...(hook.run.spawnError === undefined ? {} : { spawnError: hook.run.spawnError }),
      format: hook.measured.format,
      ...(hook.measured.jsonError === undefined ? {} : { jsonError: hook.measured.jsonError }),
      outputs: hook.measured.outputs.map((o) => outputJson(o, options)),
      ...(options.showContent || options.showOutput ? { stderr: hook.run.stderrHead } : {}),
    })),
  };
}

function statusText(output: MeasuredOutput, budget: number | undefined): string {
  switch (output.status) {
    case 'over':
      return `OVER the cap: saved to a file, the model sees a ~${formatCount(PREVIEW_CHARS)}-character preview`;
    case 'over-budget':
      return `over the budget of ${formatCount(budget ?? 0)}`;
    case 'near':
      return 'near the cap';
    default:
      return 'ok';
  }
}

/** 268435456 -> "256 MiB"; a size that is no whole number of MiB in bytes. */
function sizeText(bytes: number): string {
  const mib = bytes / 1024 / 1024;
  return Number.isInteger(mib) ? `${formatCount(mib)} MiB` : plural(bytes, 'byte');
}

function runText(hook: HookCheck): string {
  const { run } = hook;
  const duration = `${formatCount(run.durationMs)} ms`;
  switch (hook.status) {
    case 'not-started':
      return `could not start: ${printable(run.spawnError ?? 'unknown error')}`;
    case 'timed-out':
      return (
        `TIMED OUT after ${formatCount(hook.timeoutSeconds)} s and was stopped: Claude Code cancels such a hook and none ` +
        `of its output reaches the model (${formatCount(run.stdoutChars)} stdout characters were printed before it ended)`
      );
    case 'too-much-output':
      return (
        `STOPPED after ${sizeText(run.stdoutBytes)} of stdout, the most check reads: far over the cap, so Claude Code would save ` +
        `it to a file and the model would see a ~${formatCount(PREVIEW_CHARS)}-character preview at most (nothing, if the hook ` +
        `does not end within its timeout); check read no further and stopped the hook (${formatCount(run.stdoutChars)} stdout characters read)`
      );
    case 'too-much-stderr':
      return (
        `STOPPED after ${sizeText(run.stderrBytes)} of stderr, the most check reads of it: stderr is not measured, but a hook ` +
        `that prints this much of it is broken whatever it prints next (Claude Code reads all of a hook's stderr, and ` +
        `cancels a hook that does not end within its timeout, none of its output reaching the model); check read no ` +
        `further and stopped the hook (${formatCount(run.stdoutChars)} stdout characters read)`
      );
    case 'failed':
      return `FAILED${run.exitCode === null && run.signal !== null ? `: killed by ${run.signal}` : ` with exit ${run.exitCode ?? '?'}`} after ${duration}: Claude Code reports a non-blocking error and the model gets none of its stdout`;
    case 'blocked':
      return `exit 2 (blocking) after ${duration}: Claude Code passes stderr on instead of stdout; stdout not measured`;
    default:
      return `exit 0 after ${duration}; stdout ${plural(run.stdoutChars, 'character')}, ${hook.measured.format === 'json' ? 'JSON output' : hook.measured.format === 'plain' ? 'plain text' : 'empty'}`;
  }
}

/** What the shell's exit 127 and 126 mean (stderr, which says so too, is hidden by default). */
const SHELL_EXITS: Partial<Record<number, string>> = {
  127: 'the shell found no such command',
  126: 'the shell found the command but could not run it (is the file executable?)',
};

function shellExitText(hook: HookCheck, projectDir: string | undefined): string {
  const meaning = hook.status === 'failed' && hook.run.exitCode !== null ? SHELL_EXITS[hook.run.exitCode] : undefined;
  if (meaning === undefined) return '';
  const where = projectDir === undefined ? '' : `; it ran in ${printable(projectDir)}, the CLAUDE_PROJECT_DIR it was given (--project-dir to change it)`;
  return `  exit ${hook.run.exitCode}: ${meaning}${where}\n`;
}

/**
 * Until the hook itself is fixed, the guard turns the cliff into a ceiling: ~9,500 delivered instead of ~2,000.
 * A settings file checked gets the --install line for that file. A hook checked on its own gets the command line
 * that wraps it, as --install writes it: absolute paths of this Node and hookwatch, since Claude Code's PATH need
 * not hold a `hookwatch` (a hook calling it would then fail and deliver nothing). Printed as settings.json holds
 * it, to be pasted in as it is.
 */
function guardAdvice(over: HookCheck[], settingsPath: string | undefined): string {
  const gain = `so each output keeps its first ~${formatCount(DEFAULT_GUARD_BUDGET)} characters and a pointer to the rest instead of a ~${formatCount(PREVIEW_CHARS)}-character preview`;
  // The file checked, absolute, and this Node and hookwatch: the line works wherever it is run from, hookwatch on
  // PATH or not (started through npm, it is not).
  if (settingsPath !== undefined) return `Until the hook is fixed: "${printable(`${defaultGuardPrefix()} --install ${shellQuote(settingsPath)}`)}" wraps every command hook of it, ${gain}.\n`;
  const unguarded = over.filter((h) => !callsGuard(h.command));
  if (unguarded.length === 0) return '';
  // JSON writes out control characters, printable() what JSON leaves as it is: still a JSON string to paste.
  const lines = unguarded.map((h) => `  "command": ${printable(JSON.stringify(wrapCommand(h.command, defaultGuardPrefix(), undefined)), { json: true })}\n`);
  return `Until the hook is fixed: run it through hookwatch guard, ${gain}; in settings.json:\n${lines.join('')}(or "hookwatch guard --install <settings file>" wraps every command hook of the file this way)\n`;
}

/**
 * How much of an output a heading shows: all of it, or the head check kept (the first 1 MiB of a larger plain
 * stdout, the first characters of stderr), so that nobody takes a head for the whole output.
 */
function shownPart(shown: number, all: number): string {
  return shown >= all ? ', whole' : `: its first ${formatCount(shown)} of ${formatCount(all)} characters, all check keeps`;
}

/**
 * The human-readable report: a block per hook, then a verdict line. What comes from the settings file or the hook
 * (commands, events, locations, output) is printed as printable() gives it.
 */
export function checkText(hooks: HookCheck[], options: ReportOptions): string {
  const showPreview = options.showOutput || options.showContent;
  const out: string[] = [];
  for (const hook of hooks) {
    out.push(`${printable(hook.hookName)}  ${printable(hook.command)}${hook.location === undefined ? '' : `  (${printable(hook.location)})`}\n`);
    out.push(`  ${runText(hook)}\n`);
    out.push(shellExitText(hook, options.projectDir));
    // Said only of a guard that would have reported its trims, by --report or HOOKWATCH_GUARD_REPORT.
    if (callsGuard(hook.command) && (options.guardReportSet === true || guardReportGiven(hook.command))) out.push('  hookwatch guard ran with HOOKWATCH_GUARD_NO_REPORT=1: its trims of this made-up input are not reported to hookwatch\n');
    if (hook.measured.jsonError !== undefined) out.push(`  stdout starts with "{" but is not a JSON object (${printable(hook.measured.jsonError)}): measured as plain text\n`);
    if (hook.status === 'measured' && hook.measured.outputs.length > 0) {
      const rows = hook.measured.outputs.map((o) => [
        o.field,
        formatCount(o.sent),
        `${o.persisted ? '~' : ''}${formatCount(o.delivered)}`,
        formatCount(o.headroom),
        ...(options.budget === undefined ? [] : [formatCount(options.budget - o.sent)]),
        statusText(o, options.budget),
      ]);
      const header = ['output', 'sent', 'delivered', 'headroom', ...(options.budget === undefined ? [] : ['budget left']), 'status'];
      out.push(renderTable(header, rows, '  '));
      for (const o of hook.measured.outputs) {
        if (o.codePoints !== o.sent) {
          out.push(`  ${o.field}: ${formatCount(o.codePoints)} code points but ${formatCount(o.sent)} UTF-16 code units; Claude Code counts the latter (emoji and other characters outside the BMP count 2)\n`);
        }
      }
      for (const o of hook.measured.outputs) {
        if (o.preview !== undefined && showPreview) {
          out.push(`  --- what the model sees of ${o.field}: the first ${formatCount(o.preview.length)} of ${formatCount(o.sent)} characters ---\n`);
          out.push(`${outputBlock(o.preview)}\n  --- end of preview ---\n`);
        } else if (o.preview !== undefined) {
          out.push(`  ${o.field}: the model sees only its first ${formatCount(o.preview.length)} characters (--show-output prints them; hidden by default, hook output can hold secrets)\n`);
        }
        if (options.showContent) out.push(`  --- ${o.field}${shownPart(o.content.length, o.sent)} ---\n${outputBlock(o.content)}\n  --- end of ${o.field} ---\n`);
      }
    }
    if (showPreview && hook.run.stderrChars > 0) out.push(`  --- stderr${shownPart(hook.run.stderrHead.length, hook.run.stderrChars)} ---\n${outputBlock(hook.run.stderrHead)}\n  --- end of stderr ---\n`);
    else if (hook.run.stderrChars > 0) out.push(`  stderr: ${plural(hook.run.stderrChars, 'character')} (--show-output prints it)\n`);
    out.push('\n');
  }

  // After the hooks that ran, and never with a status of theirs: a hook left out is not ok, only not checked.
  for (const hook of options.skipped ?? []) {
    out.push(`${printable(hook.event)}  ${printable(hook.command ?? `a "${hook.type}" hook`)}  (${printable(hook.location)})\n  SKIPPED, not checked: ${printable(hook.reason)}\n\n`);
  }

  const outputs = hooks.flatMap((h) => h.measured.outputs);
  const over = outputs.filter((o) => o.persisted).length;
  const overBudget = outputs.filter((o) => !o.persisted && o.overBudget).length;
  const unmeasured = hooks.filter((h) => h.status === 'failed' || h.status === 'timed-out' || h.status === 'not-started').length;
  const tooMuch = hooks.filter((h) => h.status === 'too-much-output').length;
  const tooMuchStderr = hooks.filter((h) => h.status === 'too-much-stderr').length;
  const problems = [
    over > 0 ? `${plural(over, 'output')} over the ${formatCount(OUTPUT_CAP_CHARS)}-character cap (saved to a file, not delivered)` : '',
    overBudget > 0 ? `${plural(overBudget, 'output')} over the budget of ${formatCount(options.budget ?? 0)}` : '',
    unmeasured > 0 ? `${plural(unmeasured, 'hook')} timed out or failed` : '',
    tooMuch > 0 ? `${plural(tooMuch, 'hook')} printed more stdout than check reads (${sizeText(MAX_READ_STDOUT_BYTES)})` : '',
    tooMuchStderr > 0 ? `${plural(tooMuchStderr, 'hook')} printed more stderr than check reads (${sizeText(MAX_READ_STDERR_BYTES)})` : '',
  ].filter(Boolean);
  if (problems.length > 0) out.push(`FAIL: ${problems.join('; ')}.\n`);
  if (over > 0) out.push(guardAdvice(hooks.filter((h) => h.measured.outputs.some((o) => o.persisted)), options.settingsPath));
  const within = `every output within the ${options.budget === undefined ? `${formatCount(OUTPUT_CAP_CHARS)}-character cap` : `budget of ${formatCount(options.budget)}`}`;
  const notChecked = options.notChecked?.length ?? 0;
  // OK only when nothing failed: a hook that timed out or failed was not measured, and over budget is not within
  // it; and only when every hook was run: one left out for fields hookwatch does not know may print anything.
  if (over === 0 && problems.length === 0 && notChecked === 0) out.push(`OK: ${plural(hooks.length, 'hook')} checked, ${within}.\n`);
  if (notChecked > 0) {
    const checked = problems.length === 0 ? `${plural(hooks.length, 'hook')} checked, ${within}; ` : '';
    out.push(
      `INCOMPLETE: ${checked}${plural(notChecked, 'command hook')} not run for fields hookwatch does not know (named on stderr): ` +
        `${notChecked === 1 ? 'its output is' : 'their outputs are'} unknown.\n`,
    );
  }
  const skipped = options.skipped?.length ?? 0;
  if (skipped > 0) out.push(`SKIPPED: ${plural(skipped, 'hook')} not run, so not checked (reasons above): neither passed nor failed.\n`);
  return out.join('');
}
