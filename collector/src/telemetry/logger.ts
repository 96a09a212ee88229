/**
 * hookwatch's own log: one JSON object per line on stderr, with levels. Known secret values are scrubbed
 * from every line, whatever field they end up in. An Error field keeps its name, message, stack and cause
 * chain (bounded), so a 500 in the log says where it came from, not only what it said.
 */
import { MIN_SECRET_CHARS } from '../config/values.ts';

export type Level = 'debug' | 'info' | 'warn' | 'error';

const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** Scrubs these values too from now on (the secrets of a reloaded configuration); absent: the logger has no list. */
  addSecrets?(values: readonly string[]): void;
  /** Writes from this level on (a reloaded log.level); absent: the logger has no level of its own. */
  setLevel?(level: Level): void;
}

export interface LoggerOptions {
  level: Level;
  /** Values that must never appear in a log line (tokens, webhook URLs, signing keys). */
  secrets?: readonly string[];
  write?: (line: string) => void;
  now?: () => Date;
}

/** How many causes deep an error is written; a longer chain (or a cycle) ends in a note. */
const MAX_CAUSE_DEPTH = 5;
/** At most this much of one stack; the frames that matter are at the top. */
const MAX_STACK_CHARS = 8_000;
/** At most this many of an AggregateError's errors (a connection attempt per address, say). */
const MAX_AGGREGATE_ERRORS = 5;

/** An Error as a plain object: name, message, code, stack, cause (recursively) and an AggregateError's errors. */
export function serializeError(err: Error, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = { name: err.name, message: err.message };
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') out.code = code;
  if (typeof err.stack === 'string') out.stack = err.stack.length > MAX_STACK_CHARS ? `${err.stack.slice(0, MAX_STACK_CHARS)}...` : err.stack;
  if (err instanceof AggregateError && Array.isArray(err.errors)) {
    out.errors = err.errors.slice(0, MAX_AGGREGATE_ERRORS).map((e: unknown) => (e instanceof Error ? nested(e, depth) : e));
  }
  if (err.cause !== undefined) out.cause = err.cause instanceof Error ? nested(err.cause, depth) : err.cause;
  return out;
}

function nested(err: Error, depth: number): Record<string, unknown> | string {
  return depth + 1 >= MAX_CAUSE_DEPTH ? `(more causes not shown: ${err.name}: ${err.message})` : serializeError(err, depth + 1);
}

export function createLogger(opts: LoggerOptions): Logger {
  let min = ORDER[opts.level];
  // A secret is scrubbed as written and as JSON escapes it inside a string (a quote or backslash in a password).
  const scrubbed = (values: readonly string[]): string[] => [...new Set(values.filter((s) => s.length >= MIN_SECRET_CHARS).flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]))]
    .sort((a, b) => b.length - a.length);
  let secrets = scrubbed(opts.secrets ?? []);
  const write = opts.write ?? ((line: string) => process.stderr.write(line + '\n'));
  const now = opts.now ?? (() => new Date());
  const log = (level: Level, msg: string, fields?: Record<string, unknown>): void => {
    if (ORDER[level] < min) return;
    let line = JSON.stringify({ time: now().toISOString(), level, msg, ...fields }, (_k, v: unknown) => {
      if (v instanceof Error) return serializeError(v);
      if (typeof v === 'bigint') return v.toString();
      return v;
    });
    for (const s of secrets) line = line.split(s).join('<redacted>');
    write(line);
  };
  return {
    debug: (m, f) => log('debug', m, f),
    info: (m, f) => log('info', m, f),
    warn: (m, f) => log('warn', m, f),
    error: (m, f) => log('error', m, f),
    addSecrets: (values) => {
      secrets = scrubbed([...secrets, ...values]);
    },
    setLevel: (level) => {
      min = ORDER[level];
    },
  };
}

/** A logger that drops everything (tests, tools). */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
