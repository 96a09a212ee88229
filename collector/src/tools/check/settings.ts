import { readFile, realpath, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';

import { claudeConfigDir } from '../common/claude-dir.ts';
import { UsageError } from '../common/args.ts';
import { isObject } from '../common/capped-fields.ts';
import { MAX_SETTINGS_BYTES } from '../common/limits.ts';

/** One `"type": "command"` hook of a settings file. */
export interface CommandHook {
  event: string;
  matcher: string | undefined;
  command: string;
  /** Seconds, as configured; undefined means Claude Code's default (60). */
  timeoutSeconds: number | undefined;
  /** Where it is in the file, for messages: `hooks.SessionStart[0].hooks[1]`. */
  location: string;
}

/** The command hooks of a settings file, and the hooks that are not commands (not run by check). */
export interface HookSetup {
  hooks: CommandHook[];
  skipped: { location: string; event: string; type: string }[];
  /** Command hooks with fields hookwatch does not know (not run by check): their command alone may not be what runs. */
  unknown: { location: string; event: string; fields: string[] }[];
}

/** The fields of a command hook that hookwatch knows what they mean. */
const KNOWN_COMMAND_HOOK_FIELDS = new Set(['type', 'command', 'timeout']);

/**
 * The fields of a command hook that hookwatch does not know. What such a field changes in how Claude Code runs
 * the hook (arguments, another shell...) is not guessed: a hook that has one is neither run by check nor wrapped
 * by guard --install.
 */
export function unknownHookFields(hook: Record<string, unknown>): string[] {
  return Object.keys(hook).filter((key) => !KNOWN_COMMAND_HOOK_FIELDS.has(key));
}

/** `"args", "shell"`: field names for a message. */
export function fieldList(fields: readonly string[]): string {
  return fields.map((f) => JSON.stringify(f)).join(', ');
}

/**
 * `text` past the byte order mark that starts a file saved as "UTF-8 with BOM" (PowerShell and Notepad save one),
 * as Claude Code reads a settings file.
 */
export function withoutByteOrderMark(text: string): string {
  return text.startsWith('\uFEFF') ? text.slice(1) : text;
}

/**
 * Parses the `hooks` section of a Claude Code settings file:
 * `{"hooks": {"<Event>": [{"matcher": "...", "hooks": [{"type": "command", "command": "...", "timeout": 30}]}]}}`.
 * Strict: a malformed entry is an error naming its key, not silently skipped.
 */
export function parseHookSetup(text: string, source: string): HookSetup {
  let settings: unknown;
  try {
    settings = JSON.parse(withoutByteOrderMark(text));
  } catch (error) {
    throw new UsageError(`${source}: not valid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  if (!isObject(settings)) throw new UsageError(`${source}: expected a JSON object`);
  const setup: HookSetup = { hooks: [], skipped: [], unknown: [] };
  if (settings.hooks === undefined) return setup;
  if (!isObject(settings.hooks)) throw new UsageError(`${source}: hooks: expected an object of events`);
  for (const [event, groups] of Object.entries(settings.hooks)) {
    if (!Array.isArray(groups)) throw new UsageError(`${source}: hooks.${event}: expected an array of matcher groups`);
    groups.forEach((group: unknown, groupIndex) => {
      const groupAt = `hooks.${event}[${groupIndex}]`;
      if (!isObject(group)) throw new UsageError(`${source}: ${groupAt}: expected an object with "hooks"`);
      if (group.matcher !== undefined && typeof group.matcher !== 'string') throw new UsageError(`${source}: ${groupAt}.matcher: expected a string`);
      if (!Array.isArray(group.hooks)) throw new UsageError(`${source}: ${groupAt}.hooks: expected an array`);
      const matcher = group.matcher === undefined || group.matcher === '' ? undefined : group.matcher;
      group.hooks.forEach((hook: unknown, hookIndex) => {
        const location = `${groupAt}.hooks[${hookIndex}]`;
        if (!isObject(hook)) throw new UsageError(`${source}: ${location}: expected an object`);
        if (typeof hook.type !== 'string') throw new UsageError(`${source}: ${location}.type: expected a string such as "command"`);
        if (hook.type !== 'command') {
          setup.skipped.push({ location, event, type: hook.type });
          return;
        }
        if (typeof hook.command !== 'string' || hook.command.trim() === '') throw new UsageError(`${source}: ${location}.command: expected a non-empty string`);
        if (hook.timeout !== undefined && (typeof hook.timeout !== 'number' || !(hook.timeout > 0))) {
          throw new UsageError(`${source}: ${location}.timeout: expected a number of seconds > 0`);
        }
        const unknown = unknownHookFields(hook);
        if (unknown.length > 0) setup.unknown.push({ location, event, fields: unknown });
        else setup.hooks.push({ event, matcher, command: hook.command, timeoutSeconds: hook.timeout, location });
      });
    });
  }
  return setup;
}

/** Reads and parses a settings file (bounded in size). */
export async function loadHookSetup(path: string): Promise<HookSetup> {
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch (error) {
    throw new UsageError(`--settings: cannot read ${path} (${error instanceof Error ? error.message : String(error)})`);
  }
  if (size > MAX_SETTINGS_BYTES) throw new UsageError(`--settings: ${path} is ${size} bytes, over the ${MAX_SETTINGS_BYTES}-byte limit for a settings file`);
  return parseHookSetup(await readFile(path, 'utf8'), path);
}

/** The folders Claude Code reads user-level settings from: ~/.claude, and $CLAUDE_CONFIG_DIR when that is set. */
export function userSettingsDirs(home: string, io: { cwd: string; env: NodeJS.ProcessEnv }): string[] {
  return [join(home, '.claude'), ...(io.env.CLAUDE_CONFIG_DIR ? [claudeConfigDir(home, io)] : [])];
}

/** True when the settings file at `path` lies in one of `userDirs` (symbolic links followed): user-level settings. */
export async function isUserSettings(path: string, userDirs: readonly string[]): Promise<boolean> {
  const real = (p: string): Promise<string> => realpath(p).catch(() => resolve(p));
  const dir = await real(dirname(path));
  return (await Promise.all(userDirs.map(real))).includes(dir);
}
