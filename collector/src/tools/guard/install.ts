import { copyFile, readFile, rename, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { UsageError } from '../common/args.ts';
import { parseHookSetup } from '../check/settings.ts';

/** Suffix of the copy of a settings file taken before the first change. */
export const BACKUP_SUFFIX = '.hookwatch-backup';

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
}

/** A plain word passes through the shell unchanged; anything else is single-quoted. */
export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_/.:=@%+,-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** The inverse of shellQuote for one word; undefined when `word` is not something shellQuote produces. */
export function shellUnquote(word: string): string | undefined {
  if (/^[A-Za-z0-9_/.:=@%+,-]+$/.test(word)) return word;
  const match = /^'((?:[^']|'\\'')*)'$/.exec(word);
  return match ? (match[1] ?? '').replace(/'\\''/g, `'`) : undefined;
}

/** `<node> <hookwatch bin> guard`: absolute paths, so the hook runs the same Node 24 whatever PATH Claude Code has. */
export function defaultGuardPrefix(): string {
  const bin = fileURLToPath(new URL('../../../bin/hookwatch.mjs', import.meta.url));
  return `${shellQuote(process.execPath)} ${shellQuote(bin)} guard`;
}

/** Marks a wrapped command: everything after it is the original command line, shell-quoted as one word. */
const WRAP = / guard(?: --budget \d+)?(?: --report \S+)? -- /;

/** The original command of a command wrapped by the guard, or undefined when `command` is not wrapped. */
export function unwrapCommand(command: string): string | undefined {
  const match = WRAP.exec(command);
  if (!match) return undefined;
  return shellUnquote(command.slice(match.index + match[0].length));
}

/** Wraps one command line (already wrapped ones are left as they are). */
export function wrapCommand(command: string, prefix: string, budget: number | undefined, report?: string): string {
  if (unwrapCommand(command) !== undefined) return command;
  return `${prefix}${budget === undefined ? '' : ` --budget ${budget}`}${report === undefined ? '' : ` --report ${shellQuote(report)}`} -- ${shellQuote(command)}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Wraps (or unwraps) every command hook of a settings file in place. Idempotent; the first change keeps a copy
 * of the file beside it; the write is atomic (a temporary file renamed over the original).
 */
export async function installGuard(options: InstallOptions): Promise<string> {
  const path = resolve(options.cwd, options.settingsPath);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${path} (${error instanceof Error ? error.message : String(error)})`);
  }
  // Validates the hooks section the way check does, with messages naming the bad key.
  parseHookSetup(text, path);
  const settings = JSON.parse(text) as Record<string, unknown>;
  const prefix = options.prefix ?? defaultGuardPrefix();
  let changed = 0;
  let total = 0;
  if (isObject(settings.hooks)) {
    for (const groups of Object.values(settings.hooks) as Record<string, unknown>[][]) {
      for (const group of groups) {
        for (const hook of group.hooks as Record<string, unknown>[]) {
          if (hook.type !== 'command' || typeof hook.command !== 'string') continue;
          total++;
          const next = options.mode === 'install' ? wrapCommand(hook.command, prefix, options.budget, options.report) : (unwrapCommand(hook.command) ?? hook.command);
          if (next !== hook.command) {
            hook.command = next;
            changed++;
          }
        }
      }
    }
  }
  const verb = options.mode === 'install' ? 'wrapped' : 'unwrapped';
  if (changed === 0) return `hookwatch guard: ${path}: nothing to change (${total} command hook(s), none left to be ${verb})\n`;
  const backup = `${path}${BACKUP_SUFFIX}`;
  let backupNote = '';
  if (options.mode === 'install') {
    await copyFile(path, backup);
    backupNote = `; the previous file is in ${backup}`;
  }
  const temporary = `${path}.hookwatch-${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(settings, null, 2)}\n`);
  await rename(temporary, path);
  return `hookwatch guard: ${path}: ${verb} ${changed} of ${total} command hook(s)${backupNote}\n`;
}
