/**
 * What a setting row is, and what a stage's settings module may use to read and check its rows. A leaf: every
 * stage's `settings.ts` imports this (and `values.ts`) and nothing else of config/, so the stages own their
 * settings without config/ knowing them and without an import cycle.
 */
import { durationProblem, formatDuration, parseDuration } from './values.ts';

/** `file`: the path of a file (a certificate, a key); text a file would hold, given in its place, is refused unechoed. */
export type ValueType = 'string' | 'file' | 'addr' | 'int' | 'bytes' | 'duration' | 'enum' | 'list' | 'bool' | 'object';

export interface Setting {
  /** Dotted path in the config file, e.g. `otlp.http.addr`. */
  key: string;
  /** Environment variable; undefined for file-only settings (rules, receivers). */
  env?: string;
  type: ValueType;
  default: unknown;
  description: string;
  /** Redacted in `hookwatch config`, logs, errors and API responses. */
  secret?: boolean;
  /** Partial redaction for values that hold a secret inside (a password in a URL). */
  redactValue?: (value: unknown) => unknown;
  /** Allowed values for `enum`. */
  values?: readonly string[];
  /** Inclusive bounds for numbers (int, bytes, duration in ms). */
  min?: number;
  max?: number;
  /** Validator for `object` settings; returns a message naming what is wrong, or undefined. */
  validate?: (value: unknown) => string | undefined;
  /** A relative file path by default: read from the hookwatch folder, as `npm start` reads it (config/default-paths.ts). */
  pathDefault?: boolean;
  /** Applied by a reload of the configuration (SIGHUP, POST /-/reload); every other setting takes a restart. */
  reloadable?: boolean;
  /**
   * Where, in an `object` setting's value from the file, the values are text (label values, header values): a
   * path of keys, `*` for every key of a mapping, `[]` for every item of a list (`[].labels.*`, each item's
   * labels). A number or a boolean written there is read as the file writes it (`1.10`, `0x1F`, `True`), not as
   * the number (`1.1`, `31`), as Go's YAML reads it into a string.
   */
  textValues?: string;
}

/** A configuration that hookwatch refuses to start with; the message names the setting. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * A file a path setting names (`db`, `forward.queue.path`) that cannot be opened, or whose folder cannot be made
 * (under /proc, say), with the setting, so the message can say which one to change.
 */
export class SettingPathError extends Error {
  override name = 'SettingPathError';
  /** The setting's key, e.g. `db`. */
  readonly setting: string;
  readonly path: string;
  /** What went wrong, without the setting: `cannot make its folder (ENOENT: ...)`. */
  readonly detail: string;

  /** `detail`: what the caller can say of `cause` (the file and what to do), in place of the system's error. */
  constructor(setting: string, path: string, cause: NodeJS.ErrnoException, detail = `${cause.syscall === 'mkdir' ? 'cannot make its folder' : 'cannot open it'} (${cause.message})`) {
    super(`${setting} ${path}: ${detail}`, { cause });
    this.setting = setting;
    this.path = path;
    this.detail = detail;
  }
}

/**
 * Runs `open`; a file system error it throws comes back as a SettingPathError naming `setting`, as does any error
 * `explain` has words for (what failed and what to do, said in place of the error's message).
 */
export function openFor<T>(setting: string, path: string, open: () => T, explain: (err: unknown) => string | undefined = () => undefined): T {
  try {
    return open();
  } catch (err) {
    const detail = explain(err);
    if (detail !== undefined) throw new SettingPathError(setting, path, err as NodeJS.ErrnoException, detail);
    if (typeof (err as NodeJS.ErrnoException).syscall === 'string') throw new SettingPathError(setting, path, err as NodeJS.ErrnoException);
    throw err;
  }
}

/** A problem inside a structured setting (a rule, a receiver), thrown by the stage's parser; the message names the key. */
export class SettingError extends Error {
  override name = 'SettingError';
}

/** Wraps a parser that throws SettingError as a row's `validate` function (message or undefined). */
export function validator(parse: (raw: unknown) => unknown): (raw: unknown) => string | undefined {
  return (raw) => {
    try {
      parse(raw);
      return undefined;
    } catch (err) {
      if (err instanceof SettingError) return err.message;
      throw err;
    }
  };
}

/**
 * The loaded values as a stage reads them: by key, checked against the type the stage expects (a key missing
 * from the table, or a row whose type no longer matches, fails at start with the key's name).
 */
export interface SettingValues {
  /** The value as loaded, for the object settings that a stage parses itself. */
  raw(key: string): unknown;
  string(key: string): string;
  /** Numbers, durations (ms) and byte sizes. */
  number(key: string): number;
  boolean(key: string): boolean;
  list(key: string): string[];
  /** One of `allowed`, which must match the row's enum values. */
  oneOf<T extends string>(key: string, allowed: readonly T[]): T;
  /** True when nothing (file, environment, flag) set the key: a default may then follow another setting. */
  isDefault(key: string): boolean;
}

/** A YAML/JSON mapping (not null, not a list). */
export function isMapping(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A duration inside a structured setting (`alerting.rules[0].for`), in ms, or a SettingError naming `key`. */
export function durationWithin(v: unknown, key: string, min: number, max: number): number {
  const problem = durationProblem(v);
  if (problem) throw new SettingError(`${key}: ${problem}`);
  const ms = parseDuration(v);
  if (ms === undefined) throw new SettingError(`${key}: expected a duration such as 30s, 5m, 1h or 14d`);
  if (ms < min || ms > max) throw new SettingError(`${key}: must be between ${formatDuration(min)} and ${formatDuration(max)}`);
  return ms;
}
