import { constants } from 'node:fs';
import { access, chmod, copyFile, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';

import { applyEdits, modify } from 'jsonc-parser';
import type { Edit } from 'jsonc-parser';

import { UsageError } from '../common/args.ts';
import { fieldList, parseHookSetup, unknownHookFields, withoutByteOrderMark } from '../check/settings.ts';
import { isObject } from '../common/capped-fields.ts';
import { shellQuote, shellUnquote } from '../common/shell-quote.ts';

export { shellQuote, shellUnquote };

/** Suffix of the copy of a settings file taken before the first change. */
export const BACKUP_SUFFIX = '.hookwatch-backup';

/** Suffix of the record, beside a settings file, of the prefixes its commands were wrapped with. */
export const STATE_SUFFIX = '.hookwatch-guard.json';

/** What --install / --uninstall should do. */
export interface InstallOptions {
  settingsPath: string;
  cwd: string;
  mode: 'install' | 'uninstall';
  /** How a hook calls the guard, e.g. `hookwatch guard`; default: this node running this hookwatch. */
  prefix: string | undefined;
  budget: number | undefined;
  /** Written into each wrapped command as --report, when given. */
  report: string | undefined;
  /** Where a hook left alone is named (stderr). */
  warn: (message: string) => void;
}

/** `<node> <hookwatch bin> guard`: absolute paths, so the hook runs the same Node 24 whatever PATH Claude Code has. */
export function defaultGuardPrefix(): string {
  const bin = fileURLToPath(new URL('../../../bin/hookwatch.mjs', import.meta.url));
  return `${shellQuote(process.execPath)} ${shellQuote(bin)} guard`;
}

/** The guard options --install writes between the prefix and ` -- `, as they end the part before it. */
const GUARD_OPTIONS = '(?: --budget \\d+)?(?: --report \\S+)?$';
const OPTIONS_ONLY = new RegExp(`^${GUARD_OPTIONS}`);
/** The options at the end of a wrapped command's head. */
const TRAILING_OPTIONS = new RegExp(GUARD_OPTIONS);
/** A word naming hookwatch: `hookwatch`, `/usr/local/bin/hookwatch`, `…/collector/bin/hookwatch.mjs`, quoted or not. */
const HOOKWATCH_WORD = /^['"]?(?:\S*\/)?hookwatch(?:\.mjs)?['"]?$/;

/**
 * Written before the guard call, so that the shell Claude Code runs the line with becomes the guard. Claude Code
 * stops a hook on its timeout by signalling that shell alone, and /bin/sh on Debian and Ubuntu (dash) runs even a
 * lone command as a child: without exec, the signal ends the shell and never reaches the guard, which runs on
 * with the hook. Earlier releases wrote the line without it; such a line is still recognised as wrapped.
 */
const EXEC = 'exec ';

/** A guard call without its leading `exec `, if it has one. */
function withoutExec(call: string): string {
  return call.startsWith(EXEC) ? call.slice(EXEC.length) : call;
}

/**
 * Whether a guard call can follow `exec`: one command and its arguments, not a shell line (`cd x && ...`) nor one
 * starting with a variable assignment (`NAME=value ...`, which exec would look up as a command). What is quoted,
 * in single or double quotes (`"C:/Program Files (x86)/nodejs/node"`), is part of a word.
 */
function singleCommand(call: string): boolean {
  const unquoted = withoutExec(call).replace(/'[^']*'|"(?:[^"\\]|\\.)*"/g, "''");
  return !/^\s*[A-Za-z_][A-Za-z0-9_]*=/.test(unquoted) && !/[;&|()<>`\n]/.test(unquoted);
}

/**
 * The original command of a command --install wrapped, or undefined when `command` is not one. It is exactly what
 * --install writes: `exec <prefix>[ --budget N][ --report URL] -- <original, shell-quoted as one word>`, where the
 * prefix is one of `prefixes` (those installs used), or the same without `exec`, as earlier releases wrote it. A
 * guard call written another way is the user's own, never unwrapped.
 */
export function unwrapCommand(command: string, prefixes: readonly string[]): string | undefined {
  return splitWrapped(command, installedBy(prefixes))?.original;
}

/** Whether the head of a wrapped command is one of `prefixes`, then the options --install writes; `exec` or not. */
function installedBy(prefixes: readonly string[]): (head: string) => boolean {
  return (head) => {
    const call = withoutExec(head);
    return prefixes.some((p) => call.startsWith(withoutExec(p)) && OPTIONS_ONLY.test(call.slice(withoutExec(p).length)));
  };
}

/**
 * Whether a command line calls the guard in any form (`hookwatch guard --timeout 10 -- ./x.sh`, `<node> <bin>
 * guard -- "$CLAUDE_PROJECT_DIR"/x.sh`...): a word naming hookwatch, then `guard`, then a `--` word. Its output
 * is guarded already.
 */
export function callsGuard(command: string): boolean {
  return guardWord(command.trim().split(/\s+/)) !== -1;
}

/** The index of the `guard` word of a guard call among a command line's words (callsGuard), or -1. */
function guardWord(words: readonly string[]): number {
  return words.findIndex((word, i) => word === 'guard' && HOOKWATCH_WORD.test(words[i - 1] ?? '') && words.includes('--', i + 1));
}

/**
 * Whether a command line that calls the guard tells it where to report its trims: `--report` among the guard's
 * options (before its `--`), or HOOKWATCH_GUARD_REPORT set to a value on the line. The variable may also come
 * from the environment the command runs in, which the line does not show.
 */
export function guardReportGiven(command: string): boolean {
  const words = command.trim().split(/\s+/);
  const at = guardWord(words);
  if (at === -1) return false;
  const options = words.slice(at + 1, words.indexOf('--', at + 1));
  return options.some((word) => word === '--report' || word.startsWith('--report=')) || /(?:^|[\s;&|(])HOOKWATCH_GUARD_REPORT=(?!['"]{2}(?:\s|$))\S/.test(command);
}

/**
 * The quoted word after the first ` -- ` whose head (the guard call and its options) `isGuardCall` accepts, and
 * that head; the original may hold ` -- ` itself.
 */
function splitWrapped(command: string, isGuardCall: (head: string) => boolean): { head: string; original: string } | undefined {
  for (let at = command.indexOf(' -- '); at !== -1; at = command.indexOf(' -- ', at + 1)) {
    const original = shellUnquote(command.slice(at + ' -- '.length));
    const head = command.slice(0, at);
    if (original !== undefined && at > 0 && isGuardCall(head)) return { head, original };
  }
  return undefined;
}

/** True when a command --install wrapped carries another --budget or --report than those given (undefined: any). */
function otherOptions(command: string, known: readonly string[], budget: number | undefined, report: string | undefined): boolean {
  const head = splitWrapped(command, installedBy(known))?.head;
  if (head === undefined) return false;
  const options = TRAILING_OPTIONS.exec(head)?.[0] ?? '';
  const had = { budget: / --budget (\d+)/.exec(options)?.[1], report: / --report (\S+)/.exec(options)?.[1] };
  return (budget !== undefined && had.budget !== String(budget)) || (report !== undefined && had.report !== shellQuote(report));
}

/**
 * Wraps one command line, with `exec` (EXEC). One wrapped already (by `prefix` or one of `known`) keeps its
 * options, and gains the `exec` an earlier release did not write; one that calls the guard otherwise stays as it is.
 */
export function wrapCommand(command: string, prefix: string, budget: number | undefined, report?: string, known: readonly string[] = []): string {
  const wrapped = splitWrapped(command, installedBy([prefix, ...known]));
  if (wrapped !== undefined) return wrapped.head.startsWith(EXEC) || !singleCommand(wrapped.head) ? command : `${EXEC}${command}`;
  if (callsGuard(command)) return command;
  return `${EXEC}${withoutExec(prefix)}${budget === undefined ? '' : ` --budget ${budget}`}${report === undefined ? '' : ` --report ${shellQuote(report)}`} -- ${shellQuote(command)}`;
}

/**
 * The prefixes the commands of a settings file were wrapped with, kept beside it (`<file>.hookwatch-guard.json`)
 * so that --uninstall recognises a custom --command without being given it again; empty when there is none.
 */
async function readPrefixes(statePath: string): Promise<string[]> {
  try {
    const state = JSON.parse(await readFile(statePath, 'utf8')) as unknown;
    const prefixes = isObject(state) && Array.isArray(state.prefixes) ? (state.prefixes as unknown[]) : [];
    return prefixes.filter((p): p is string => typeof p === 'string' && p !== '');
  } catch {
    return [];
  }
}

/**
 * Writes `text` to `path` atomically: a temporary file renamed over it, with the permissions of the file it
 * replaces (a settings file may hold tokens in `env`: one kept 0600 stays 0600). The temporary file is only
 * ever readable by its owner until then.
 */
async function writeAtomically(path: string, text: string): Promise<void> {
  const mode = await stat(path).then((s) => s.mode & 0o7777, () => 0o644);
  const temporary = `${path}.hookwatch-${process.pid}.tmp`;
  await writeFile(temporary, text, { mode: 0o600 });
  await chmod(temporary, mode);
  await rename(temporary, path);
}

/**
 * Wraps (or unwraps) every command hook of a settings file in place, changing nothing in the file but those
 * command strings (its layout, number spellings such as 1.0 and integers past 2^53 keep their bytes). Idempotent; the first change keeps a copy
 * of the file beside it, which later changes never overwrite; the write is atomic (a temporary file renamed over
 * the original). Unwrapping gives each original command back exactly, and the backup's bytes when nothing else
 * in the file changed since.
 */
export async function installGuard(options: InstallOptions): Promise<string> {
  // A settings file that is a link (to a dotfiles repository, say) is changed where it lives, and stays a link.
  const given = resolve(options.cwd, options.settingsPath);
  const path = await realpath(given).catch(() => given);
  let raw: string;
  try {
    raw = await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${path} (${error instanceof Error ? error.message : String(error)})`);
  }
  // A byte order mark (PowerShell and Notepad save one; Claude Code reads the file all the same) is held aside
  // while the JSON after it is read and edited, and written back in front of it.
  const text = withoutByteOrderMark(raw);
  const mark = raw.slice(0, raw.length - text.length);
  // Validates the hooks section the way check does, with messages naming the bad key.
  parseHookSetup(text, path);
  const settings = JSON.parse(text) as Record<string, unknown>;
  const statePath = `${path}${STATE_SUFFIX}`;
  const recorded = await readPrefixes(statePath);
  const prefix = options.prefix ?? defaultGuardPrefix();
  if (options.mode === 'install' && !singleCommand(prefix)) {
    throw new UsageError('--command follows exec in the wrapped commands: give one command and its arguments, not a shell line (env NAME=value hookwatch guard sets a variable); nothing was changed');
  }
  // Every prefix a command may have been wrapped with: the ones recorded, this one, and the default.
  const known = [...new Set([...recorded, prefix, defaultGuardPrefix()])];
  const edits: Edit[] = [];
  let changed = 0;
  /** Of those changed, the ones an earlier release wrapped without `exec`, given it. */
  let upgraded = 0;
  let total = 0;
  let lookWrapped = 0;
  let keepOther = 0;
  if (isObject(settings.hooks)) {
    for (const [event, groups] of Object.entries(settings.hooks) as [string, Record<string, unknown>[]][]) {
      for (const [groupIndex, group] of groups.entries()) {
        for (const [hookIndex, hook] of (group.hooks as Record<string, unknown>[]).entries()) {
          if (hook.type !== 'command' || typeof hook.command !== 'string') continue;
          const unknown = unknownHookFields(hook);
          if (options.mode === 'install' && unknown.length > 0) {
            // Wrapping only "command" could change what such a hook runs: the guard does not guess what the field means.
            options.warn(`hookwatch guard: ${where(event, groupIndex, group, hookIndex)} has fields the guard does not know (${fieldList(unknown)}): left as it is, not wrapped\n`);
            continue;
          }
          total++;
          const next = options.mode === 'install' ? wrapCommand(hook.command, prefix, options.budget, options.report, known) : unwrapFully(hook.command, known);
          if (next !== hook.command) {
            if (options.mode === 'install' && unwrapCommand(hook.command, known) !== undefined) upgraded++;
            hook.command = next;
            // Only the command string changes: the rest of the file keeps its bytes (layout, 1.0, integers past 2^53).
            edits.push(...modify(text, ['hooks', event, groupIndex, 'hooks', hookIndex, 'command'], next, {}));
            changed++;
          } else if (options.mode === 'uninstall' && callsGuard(hook.command)) {
            // Not in the form --install writes with a prefix it knows: the user's own guard call.
            lookWrapped++;
            options.warn(`hookwatch guard: ${where(event, groupIndex, group, hookIndex)} calls the guard in a form --install did not write: left as it is\n`);
          } else if (options.mode === 'uninstall' && splitWrapped(hook.command, () => true) !== undefined) {
            // Perhaps wrapped with another --command: only the hint below says so, since `npm run lint -- --fix`
            // ends in ` -- <word>` too and calls no guard.
            lookWrapped++;
          } else if (options.mode === 'install' && otherOptions(hook.command, known, options.budget, options.report)) keepOther++;
        }
      }
    }
  }
  const verb = options.mode === 'install' ? 'wrapped' : 'unwrapped';
  const backup = `${path}${BACKUP_SUFFIX}`;
  if (changed === 0) {
    // Only a file hookwatch changed before (it has a backup) is likely to hold commands wrapped with an unknown prefix.
    let hint =
      lookWrapped > 0 && (await access(backup).then(() => true, () => false))
        ? `; ${lookWrapped} look wrapped by another prefix: give it as --command <prefix> to unwrap them`
        : '';
    // Commands already wrapped keep the options they were wrapped with: say how to change them.
    if (keepOther > 0) {
      hint += `; ${keepOther} wrapped with another --budget or --report keep it: run --uninstall, then --install with the new ones`;
    }
    return `hookwatch guard: ${path}: nothing to change (${total} command hook(s), none left to be ${verb})${hint}\n`;
  }
  let note = '';
  let restored = false;
  let newText = mark + applyEdits(text, edits);
  // The edits name keys by path; a file where that is ambiguous (a key given twice) is not changed blindly.
  if (!sameJson(newText, settings)) throw new UsageError(`${path}: cannot change the commands in place (is a key given twice?); nothing written`);
  if (options.mode === 'install') {
    try {
      // COPYFILE_EXCL: the backup is the file from before hookwatch first changed it; a later change keeps it.
      await copyFile(path, backup, constants.COPYFILE_EXCL);
      note = `; the previous file is in ${backup}`;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      note = `; ${backup} already holds the file from before hookwatch first changed it; kept as it is`;
    }
    if (!recorded.includes(prefix)) await writeAtomically(statePath, `${JSON.stringify({ about: 'how hookwatch guard --install wrapped the commands of the file beside it, for --uninstall', prefixes: [...recorded, prefix] }, null, 2)}\n`);
  } else {
    const original = await readFile(backup, 'utf8').catch(() => undefined);
    if (original !== undefined && sameJson(original, settings)) {
      newText = original;
      restored = true;
      note = `; the file is again byte for byte as before hookwatch changed it, so ${backup} was removed`;
    }
  }
  await writeAtomically(path, newText);
  // Nothing recognised is left wrapped: the record of the prefixes has done its work.
  if (options.mode === 'uninstall') await rm(statePath, { force: true });
  // The file is the backup again: kept, it would outlive edits made after this and be taken for the original by
  // the next --install.
  if (restored) await rm(backup, { force: true });
  const gave = upgraded > 0 ? `; ${upgraded} wrapped without exec by an earlier hookwatch now start the guard with exec, so that Claude Code's timeout signal reaches it` : '';
  return `hookwatch guard: ${path}: ${verb} ${changed - upgraded} of ${total} command hook(s)${gave}${note}\n`;
}

/** A hook for a message: `hooks.PreToolUse[0].hooks[1] (PreToolUse, matcher "Bash")`. */
function where(event: string, groupIndex: number, group: Record<string, unknown>, hookIndex: number): string {
  const matcher = typeof group.matcher === 'string' && group.matcher !== '' ? `, matcher ${JSON.stringify(group.matcher)}` : '';
  return `hooks.${event}[${groupIndex}].hooks[${hookIndex}] (${event}${matcher})`;
}

/** The original under every layer of wrapping (an older hookwatch could wrap a custom --command twice). */
function unwrapFully(command: string, known: readonly string[]): string {
  let original = command;
  for (let inner = unwrapCommand(original, known); inner !== undefined; inner = unwrapCommand(original, known)) original = inner;
  return original;
}

/** True when `text` (after a byte order mark, if any) holds the same JSON value as `value` (key order aside). */
function sameJson(text: string, value: unknown): boolean {
  try {
    return isDeepStrictEqual(JSON.parse(withoutByteOrderMark(text)), value);
  } catch {
    return false;
  }
}
