import { parseArgs } from 'node:util';
import type { ParseArgsConfig } from 'node:util';
import { didYouMean } from '../../cli/suggest.ts';
import { otlpSignalUrl, redactUrlCredentials, safeEndpoint } from '../../net/otlp-url.ts';
import { plural } from './format.ts';

/** A mistake in how the tool was called or configured; the tools print it with the usage hint and exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The error codes of parseArgs's strict checks, each a mistake in how the tool was called. */
const PARSE_ARGS_CODES = new Set(['ERR_PARSE_ARGS_UNKNOWN_OPTION', 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE', 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL']);

/**
 * parseArgs (strict by default: unknown options are errors) that throws UsageError with a message in the
 * tools' own words ("unknown flag --bogus (did you mean --budget?)") instead of Node's parseArgs text. The
 * error's code says what is wrong; the arguments, read again as parseArgs's tokens, say which one.
 */
export function parseToolArgs<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code !== 'string' || !PARSE_ARGS_CODES.has(code)) throw error;
    throw new UsageError(usageProblem(config, code));
  }
}

/** What parseArgs refused (with `code`), named from the tokens of a lenient parse of the same arguments. */
function usageProblem(config: ParseArgsConfig, code: string): string {
  const options = config.options ?? {};
  const { tokens } = parseArgs({ ...config, strict: false, allowPositionals: true, tokens: true });
  const known = (name: string): boolean => Object.hasOwn(options, name);
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    const first = tokens.find((t) => t.kind === 'positional');
    return `unexpected argument${first ? ` ${JSON.stringify(first.value)}` : ''}`;
  }
  for (const t of tokens) {
    if (t.kind !== 'option') continue;
    if (!known(t.name)) {
      if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown flag ${t.rawName}${didYouMean(t.name, Object.keys(options), '--')}`;
      continue;
    }
    // parseArgs takes the next argument as a string option's value even when it looks like an option (then,
    // strictly, refuses it as ambiguous): both are a flag given no value.
    const takesValue = options[t.name]?.type === 'string';
    if (takesValue && (t.value === undefined || (!t.inlineValue && t.value.startsWith('-')))) return `flag ${t.rawName} needs a value`;
    if (!takesValue && t.value !== undefined) return `flag ${t.rawName} takes no value`;
  }
  return code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? 'unknown flag' : 'a flag is missing its value';
}

/**
 * Parses a whole-number option; the message names the option (or `label`, such as the variable it came from)
 * and the bad value.
 */
export function parseWholeNumber(name: string, raw: string, min = 0, max = Number.MAX_SAFE_INTEGER, label = `--${name}`): number {
  const trimmed = raw.trim();
  const value = Number(trimmed);
  if (!/^\d+$/.test(trimmed) || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    throw new UsageError(`${label}: expected a whole number ${range}, got "${raw}"`);
  }
  return value;
}

/**
 * A size, from a flag or a variable (`label`): `64MiB`, `500KB` (KB, MB and GB count 1,000 bytes, KiB, MiB and GiB
 * 1,024) or a plain number of bytes, a whole number of them, at least `min`; `examples` are named when it is not.
 * `parseBytes` is the configuration's, passed in so a tool loads it only when a size is given.
 */
export function parseSize(parseBytes: (raw: string) => number | undefined, raw: string, label: string, examples: string, min = 0): number {
  const bytes = parseBytes(raw);
  if (bytes === undefined || !Number.isSafeInteger(bytes) || bytes < min) {
    throw new UsageError(`${label}: expected a size ${min > 0 ? `of at least ${plural(min, 'byte')} ` : ''}such as ${examples}, got "${raw}"`);
  }
  return bytes;
}

/**
 * Longest --timeout of guard and check, in seconds (about 24 days): a timer holds at most 2^31 - 1 ms, and Node
 * fires a longer one at once (with a TimeoutOverflowWarning), which would stop the hook as soon as it started.
 */
export const MAX_TIMEOUT_SECONDS = Math.floor(0x7fffffff / 1000);

/** A --timeout in seconds (guard and check): a whole number from 1 to MAX_TIMEOUT_SECONDS. */
export function parseTimeoutSeconds(raw: string): number {
  return parseWholeNumber('timeout', raw, 1, MAX_TIMEOUT_SECONDS);
}

/**
 * Longest kill grace (--kill-grace of guard and check): whoever runs the hook has given up on it once it is
 * stopped, and may kill the tool before a longer grace ends, which would leave the command running orphaned.
 */
const MAX_KILL_GRACE_MS = 60_000;

/**
 * A kill grace, from --kill-grace or HOOKWATCH_GUARD_KILL_GRACE (`label`): a duration with a unit, more than 0 and
 * at most a minute. `parseDuration` is the configuration's, passed in so a tool loads it only when a grace is given.
 */
export function parseKillGrace(parseDuration: (raw: string) => number | undefined, raw: string, label: string): number {
  // A bare number is refused: "5" meant seconds to whoever wrote it, and would be 5 ms.
  const ms = /^\s*[\d.]+\s*$/.test(raw) ? undefined : parseDuration(raw);
  if (ms === undefined || ms < 1 || ms > MAX_KILL_GRACE_MS) throw new UsageError(`${label}: expected a duration from 1ms to 1m such as 5s or 1500ms, got "${raw}"`);
  return ms;
}

/**
 * The OTLP/HTTP logs URL for what the user gave to `flag`: a base URL gets `/v1/logs`, a full `/v1/logs` URL is
 * kept. Checked when the tool starts, so a typo is an error at once rather than records silently lost later.
 */
export function otlpLogsUrl(target: string, flag: string): string {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    // Quoted without a password or query (a token may sit there): the message goes to a terminal, or to stderr
    // of every hook the guard wraps.
    throw new UsageError(`${flag}: not a URL: "${redactUrlCredentials(target).replace(/[?#].*$/s, '')}" (expected e.g. http://hookwatch:4318)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${flag}: expected an http(s) URL, got "${safeEndpoint(target)}"`);
  return otlpSignalUrl(url, 'logs', { fullAllowed: true });
}
