import { constants, homedir } from 'node:os';
import { basename, dirname, resolve } from 'node:path';

import { OUTPUT_CAP_CHARS } from '../../../../shared/src/cliff.ts';
import { MAX_TIMEOUT_SECONDS, parseKillGrace, parseTimeoutSeconds, parseToolArgs, parseWholeNumber, UsageError } from '../common/args.ts';
import { parseDuration } from '../../config/values.ts';
import { EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE } from '../common/io.ts';
import { claudeConfigDir } from '../common/claude-dir.ts';
import { printable } from '../common/format.ts';
import type { ToolIO } from '../common/io.ts';
import { buildHookInput, HOOK_EVENTS, matcherQuery, matcherSelects, SESSION_START_SOURCES, valueForMatcher } from './hook-input.ts';
import { measureStdout } from './measure.ts';
import type { MeasuredStdout } from './measure.ts';
import { checkJson, checkText, hookFails } from './report.ts';
import type { HookCheck, HookCheckStatus, ProjectDirFrom, SkippedHook } from './report.ts';
import { runHook } from './run-hook.ts';
import { fieldList, isUserSettings, loadHookSetup, userSettingsDirs } from './settings.ts';
import { oneWordCommandLine, shellQuote } from '../common/shell-quote.ts';
import { GUARD_NO_REPORT_ENV } from '../guard/index.ts';
import { didYouMean } from '../../cli/suggest.ts';

/** Claude Code's default timeout of a command hook, in seconds. */
export const DEFAULT_HOOK_TIMEOUT_SECONDS = 60;

const HELP = `Usage: hookwatch check [options] -- <hook command...>
       hookwatch check [options] --settings .claude/settings.json

Runs a hook command the way Claude Code does (through a shell, in the project directory, with the event's
input JSON on stdin, CLAUDE_PROJECT_DIR set and a timeout) and measures every string Claude Code measures
against its 10,000-character cap: plain stdout, or additionalContext (under hookSpecificOutput),
systemMessage and initialUserMessage of JSON output. Lengths are UTF-16 code units (JS string length), so an
emoji counts 2. Exactly 10,000 is delivered; 10,001 is saved to a file and the model sees a ~2,000-character
preview, while the hook still reports success. One argument after -- is a command line, as in a settings file,
unless it is the path of an existing file (it holds a /), which runs as that file even when the path holds a
space; several arguments are one command and its arguments.

Hooks run with HOOKWATCH_GUARD_NO_REPORT=1: one wrapped with "hookwatch guard" trims its output as it would for
Claude Code, so what is measured is what would be delivered, but reports no trims to hookwatch (--report,
HOOKWATCH_GUARD_REPORT): the input is made up, and its trims must not show on the real hook's pages.

Stdout is read up to 256 MiB: a hook that prints more (yes, a loop that never ends) is over the cap however it
goes on, and is stopped there as at its timeout and reported as STOPPED (status too-much-output, with the bytes
read as stdoutBytes, in --json). Of a stdout that may be a JSON object (its first character other than white
space is {) up to 64 MiB is held in memory to be parsed; of any other, and of one past that, its first 1 MiB; the
rest is only counted. Stderr, which is not measured (its first 4,000 characters are kept to be shown), is read up
to 256 MiB too: a hook that prints more of it (yes >&2) is stopped there and reported as STOPPED (status
too-much-stderr, with stderrBytes, in --json), where it would keep a core busy until its timeout.

Options:
  --event <name>         hook event to simulate (default SessionStart; with --settings, only hooks of this event);
                         a name Claude Code does not fire (nor the settings file uses) is refused
  --budget <chars>       also fail when an output is longer than this (at most 10000; e.g. 9500)
  --timeout <seconds>    hook timeout (default ${DEFAULT_HOOK_TIMEOUT_SECONDS}; a hook's own "timeout" in settings wins), at most ${MAX_TIMEOUT_SECONDS}
                         (about 24 days, the longest a timer holds); a longer "timeout" in settings is named on
                         stderr and the hook checked with ${MAX_TIMEOUT_SECONDS}
  --kill-grace <time>    how long a stopped hook (its timeout, or Ctrl-C) gets to end before SIGKILL, from 1ms to
                         1m, such as 5s or 1500ms (default 1s), as with the guard's --kill-grace; check does not
                         read HOOKWATCH_GUARD_KILL_GRACE, which reaches the hooks (and a guard wrapping one) as set
  --settings <file>      check every command hook of a Claude Code settings file
  --project-dir <dir>    CLAUDE_PROJECT_DIR and working directory (default: the folder holding the .claude/ of
                         --settings, else the current folder; the current folder too for user-level settings,
                         ~/.claude or $CLAUDE_CONFIG_DIR, whose hooks Claude Code runs in the session's project)
  --source <source>      SessionStart source: startup, resume, clear or compact (default startup or the matcher)
  --prompt <text>        UserPromptSubmit prompt
  --tool-name <name>     Pre/PostToolUse tool name (default Bash or the matcher)
  --shell <path>         shell that runs the command (default /bin/sh, as with "-c")
  --json                 machine-readable output (projectDir names the folder the hooks ran in, projectDirFrom
                         where it came from: flag, settings or cwd)
  --show-output          print what the model sees of an output over the cap (its preview) and stderr;
                         hidden by default, since hook output can hold secrets and CI logs are widely read
  --show-content         print outputs and stderr as far as check keeps them (implies --show-output): whole, or
                         the first 1 MiB of a larger plain stdout and 4,000 characters of stderr, as each
                         heading says ("its first 1,048,576 of 2,097,152 characters")
  -h, --help             this help

With --settings, a group runs only when its matcher selects the firing, as in Claude Code (names exactly,
patterns as regular expressions). The hooks it leaves out, and hooks that are no commands ("prompt"), are
shown as SKIPPED with the reason (under skipped with --json): counted apart, as a test runner counts a skipped
test, neither passed nor failed, so they change no exit status. A command hook with fields hookwatch
does not know (anything but type, command and timeout) is not run, and named on stderr: its command alone may
not be what Claude Code runs. Such a check is INCOMPLETE, never OK: what that hook prints is unknown.

Exit status: 0 every output within the cap (and budget), 1 an output over the cap or budget, or a hook that
timed out, failed or printed more than 256 MiB of stdout or stderr, 2 bad usage or no hook selected by the firing, 4 nothing found over the cap or budget but
hooks of the selected event were not checked for fields hookwatch does not know (INCOMPLETE, not OK),
killed by the signal when stopped by Ctrl-C or SIGTERM, so a shell loop calling check stops too (the hook
running then is stopped too; nothing is reported; a shell shows 130 or 143).
`;


/**
 * Refuses an --event that is no hook event Claude Code fires (nor one of `alsoKnown`, those of the settings file),
 * naming the nearest: a typo would otherwise run the hooks with input for an event that never fires, or with
 * --settings select nothing.
 */
function checkEvent(event: string, alsoKnown: readonly string[]): void {
  const known = [...new Set([...HOOK_EVENTS, ...alsoKnown])];
  if (known.includes(event)) return;
  throw new UsageError(`--event: "${event}" is not a Claude Code hook event${didYouMean(event, known)}; known: ${known.join(', ')}`);
}

/** One hook to run: from the command line or from a settings file. */
interface PlannedHook {
  event: string;
  matcher: string | undefined;
  command: string;
  timeoutSeconds: number;
  location: string | undefined;
}

/** `hookwatch check`: runs hooks like Claude Code and measures their output against the cap. Returns the exit code. */
export async function runCheck(argv: string[], io: ToolIO): Promise<number> {
  try {
    const { values, positionals } = parseToolArgs({
      args: argv,
      allowPositionals: true,
      options: {
        event: { type: 'string' },
        budget: { type: 'string' },
        timeout: { type: 'string' },
        'kill-grace': { type: 'string' },
        settings: { type: 'string' },
        'project-dir': { type: 'string' },
        source: { type: 'string' },
        prompt: { type: 'string' },
        'tool-name': { type: 'string' },
        shell: { type: 'string', default: '/bin/sh' },
        json: { type: 'boolean', default: false },
        'show-output': { type: 'boolean', default: false },
        'show-content': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
    if (values.help) {
      io.stdout(HELP);
      return EXIT_OK;
    }
    // Above the cap a budget would pass outputs Claude Code persists: it is a margin under the cap, not over it.
    const budget = values.budget === undefined ? undefined : parseWholeNumber('budget', values.budget, 1, OUTPUT_CAP_CHARS);
    const defaultTimeout = values.timeout === undefined ? DEFAULT_HOOK_TIMEOUT_SECONDS : parseTimeoutSeconds(values.timeout);
    const killGraceMs = values['kill-grace'] === undefined ? undefined : parseKillGrace(parseDuration, values['kill-grace'], '--kill-grace');
    if (values.source !== undefined && !(SESSION_START_SOURCES as readonly string[]).includes(values.source)) {
      throw new UsageError(`--source: expected one of ${SESSION_START_SOURCES.join(', ')}, got "${values.source}"`);
    }

    const settingsPath = values.settings === undefined ? undefined : resolve(io.cwd, values.settings);
    if (values.event !== undefined && settingsPath === undefined) checkEvent(values.event, []);
    const home = io.env.HOME ?? homedir();
    // Claude Code runs the hooks of user-level settings in the project a session is in, never in $HOME: without
    // --project-dir they run in the current folder, as in a session started here, and the report says so.
    const userLevel = values['project-dir'] === undefined && settingsPath !== undefined && await isUserSettings(settingsPath, userSettingsDirs(home, io));
    let projectDir = io.cwd;
    let projectDirFrom: ProjectDirFrom = 'cwd';
    if (values['project-dir'] !== undefined) {
      projectDir = resolve(io.cwd, values['project-dir']);
      projectDirFrom = 'flag';
    } else if (settingsPath !== undefined && !userLevel && basename(dirname(settingsPath)) === '.claude') {
      projectDir = dirname(dirname(settingsPath));
      projectDirFrom = 'settings';
    }

    const planned: PlannedHook[] = [];
    /** Command hooks of the selected event not run for fields hookwatch does not know: the check is incomplete. */
    const notChecked: { location: string; fields: string[] }[] = [];
    /** Hooks left out by the firing checked, or that are no commands: in the report as skipped, never as ok. */
    const skipped: SkippedHook[] = [];
    if (settingsPath !== undefined) {
      if (positionals.length > 0) throw new UsageError('give either --settings or a hook command, not both');
      const setup = await loadHookSetup(settingsPath);
      // An event the file keys hooks under is one its Claude Code fires, listed here or not.
      if (values.event !== undefined) checkEvent(values.event, [...setup.hooks, ...setup.skipped, ...setup.unknown].map((h) => h.event));
      const selected = (hook: { event: string }): boolean => values.event === undefined || hook.event === values.event;
      for (const hook of setup.hooks.filter(selected)) {
        let timeoutSeconds = hook.timeoutSeconds ?? defaultTimeout;
        // Longer than a timer holds, it would fire at once and stop the hook as it started: the longest is used.
        if (timeoutSeconds > MAX_TIMEOUT_SECONDS) {
          io.stderr(`hookwatch check: ${printable(hook.location)}.timeout: ${timeoutSeconds} seconds is longer than a timer holds; the hook is checked with ${MAX_TIMEOUT_SECONDS} (about 24 days) instead\n`);
          timeoutSeconds = MAX_TIMEOUT_SECONDS;
        }
        planned.push({ ...hook, timeoutSeconds });
      }
      for (const hook of setup.skipped.filter(selected)) {
        skipped.push({ event: hook.event, matcher: undefined, command: undefined, type: hook.type, location: hook.location, because: 'type', reason: 'not a command hook; check runs command hooks only' });
      }
      for (const unknown of setup.unknown.filter(selected)) {
        notChecked.push({ location: unknown.location, fields: unknown.fields });
        io.stderr(`hookwatch check: ${printable(`${unknown.location} has fields hookwatch does not know (${fieldList(unknown.fields)})`)}: not checked, its command alone may not be what Claude Code runs\n`);
      }
      if (planned.length === 0) {
        // Another event's hooks are likely the ones meant: they are named.
        const others = [...new Set(setup.hooks.map((h) => h.event))];
        const has = values.event === undefined || others.length === 0 ? '' : ` (it has them for ${others.join(', ')})`;
        io.stderr(`hookwatch check: ${printable(`no command hooks${values.event === undefined ? '' : ` for ${values.event}`} in ${settingsPath}${has}`)}\n`);
        return EXIT_USAGE;
      }
      if (userLevel) {
        io.stderr(`hookwatch check: ${printable(settingsPath)} holds user-level settings: its hooks run with CLAUDE_PROJECT_DIR=${printable(projectDir)}, the current folder, as in a session started there; pass --project-dir <your project> to run them as in that project\n`);
      }
    } else {
      if (positionals.length === 0) throw new UsageError('no hook command given (hookwatch check -- <command...>)');
      const command = positionals.length === 1 ? oneWordCommandLine(positionals[0] ?? '') : positionals.map(shellQuote).join(' ');
      planned.push({ event: values.event ?? 'SessionStart', matcher: undefined, command, timeoutSeconds: defaultTimeout, location: undefined });
    }

    // A guard wrapping a hook measures and trims as it would for Claude Code, but reports nothing: a trim of
    // made-up input must not show on the real hook's pages.
    const env: NodeJS.ProcessEnv = { ...io.env, CLAUDE_PROJECT_DIR: projectDir, [GUARD_NO_REPORT_ENV]: '1' };
    const checks: HookCheck[] = [];
    // One at a time: simpler to read, and a machine running CI is not flooded by many hooks at once.
    for (const hook of planned) {
      const matched = valueForMatcher(hook.matcher);
      const source = values.source ?? (matched !== undefined && (SESSION_START_SOURCES as readonly string[]).includes(matched) ? matched : undefined);
      const toolName = values['tool-name'] ?? matched;
      const trigger = matched === 'manual' || matched === 'auto' ? matched : undefined;
      const input = buildHookInput({
        event: hook.event,
        projectDir,
        configDir: claudeConfigDir(home, io),
        ...(source === undefined ? {} : { source }),
        ...(values.prompt === undefined ? {} : { prompt: values.prompt }),
        ...(toolName === undefined ? {} : { toolName }),
        ...(trigger === undefined ? {} : { trigger }),
      });
      const query = matcherQuery(input);
      // Claude Code runs a group only when its matcher selects the firing: one that does not is not measured
      // under a name it would never have.
      if (query !== undefined && !matcherSelects(hook.matcher, query)) {
        const flag = hook.event === 'SessionStart' ? ' (give --source with a value it selects)' : input.tool_name !== undefined ? ' (give --tool-name with a tool it selects)' : '';
        const reason = `matcher ${JSON.stringify(hook.matcher)} does not select ${JSON.stringify(query)}, so Claude Code would not run it for this firing${flag}`;
        skipped.push({ event: hook.event, matcher: hook.matcher, command: hook.command, type: 'command', location: hook.location ?? hook.event, because: 'matcher', reason });
        continue;
      }
      const run = await runHook({ command: hook.command, input, cwd: projectDir, env, timeoutMs: hook.timeoutSeconds * 1000, killGraceMs, shell: values.shell });
      if (run.interrupted !== undefined) {
        // Stopped from outside: no verdict, and no later hook runs. Ends as a shell reports a stopped command.
        io.stderr(`hookwatch check: stopped by ${run.interrupted} while ${printable(hook.location ?? hook.command)} ran; it was stopped too, nothing was reported\n`);
        // Killed by the same signal, so that a shell loop calling check stops too.
        await io.stoppedBy?.(run.interrupted);
        return 128 + (constants.signals[run.interrupted] ?? 15);
      }
      let status: HookCheckStatus = 'measured';
      if (run.spawnError !== undefined) status = 'not-started';
      else if (run.stdoutStopped) status = 'too-much-output';
      else if (run.stderrStopped) status = 'too-much-stderr';
      else if (run.timedOut) status = 'timed-out';
      else if (run.exitCode === 2) status = 'blocked';
      else if (run.exitCode !== 0) status = 'failed';
      const measured: MeasuredStdout = status === 'measured' ? measureStdout(run.stdout, run.stdoutChars, run.stdoutComplete, budget, run.stdoutCodePoints) : { format: 'empty', outputs: [] };
      checks.push({
        hookName: query === undefined ? hook.event : `${hook.event}:${query}`,
        event: hook.event,
        matcher: hook.matcher,
        command: hook.command,
        location: hook.location,
        timeoutSeconds: hook.timeoutSeconds,
        status,
        run,
        measured,
      });
    }

    if (checks.length === 0) {
      for (const hook of skipped) io.stderr(`hookwatch check: ${printable(`${hook.location}: ${hook.reason}`)}: not checked\n`);
      io.stderr('hookwatch check: no hook would run for this firing: nothing checked\n');
      return EXIT_USAGE;
    }
    const options = {
      budget, showOutput: values['show-output'], showContent: values['show-content'], notChecked, skipped, projectDir, projectDirFrom, settingsPath,
      guardReportSet: Boolean(io.env.HOOKWATCH_GUARD_REPORT),
    };
    io.stdout(values.json ? `${JSON.stringify(checkJson(checks, options), null, 2)}\n` : checkText(checks, options));
    if (checks.some(hookFails)) return EXIT_FINDINGS;
    // Nothing found over, but hooks were left unrun: their outputs are unknown, which is not a pass.
    return notChecked.length > 0 ? EXIT_INCOMPLETE : EXIT_OK;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`hookwatch check: ${printable(error.message)}\nRun "hookwatch check --help" for usage.\n`);
      return EXIT_USAGE;
    }
    io.stderr(`hookwatch check: ${printable(error instanceof Error ? error.message : String(error))}\n`);
    return EXIT_USAGE;
  }
}
