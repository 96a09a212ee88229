import { parseArgs } from 'node:util';
import type { ParseArgsConfig } from 'node:util';
import { didYouMean } from '../../cli/suggest.ts';

/** A mistake in how the tool was called or configured; the tools print it with the usage hint and exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * parseArgs (strict by default: unknown options are errors) that throws UsageError with a message in the
 * tools' own words ("unknown flag --bogus (did you mean --budget?)") instead of Node's parseArgs text.
 */
export function parseToolArgs<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    const e = error as { code?: string; message?: string };
    const flag = /'(-[^' ]+)/.exec(e.message ?? '')?.[1];
    const names = Object.keys(config.options ?? {});
    if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && flag) {
      throw new UsageError(`unknown flag ${flag}${didYouMean(flag.replace(/^-+/, '').split('=')[0] ?? '', names, '--')}`);
    }
    if (e.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && flag) {
      const takesValue = (config.options?.[flag.replace(/^-+/, '')] as { type?: string } | undefined)?.type === 'string';
      throw new UsageError(takesValue ? `flag ${flag} needs a value` : `flag ${flag} takes no value`);
    }
    if (e.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') throw new UsageError(`unexpected argument${/'([^']*)'/.exec(e.message ?? '')?.[1] ? ` "${/'([^']*)'/.exec(e.message ?? '')?.[1]}"` : ''}`);
    throw new UsageError(e.message ?? String(error));
  }
}

/** Parses a whole-number option; the message names the option and the bad value. */
export function parseWholeNumber(name: string, raw: string, min = 0): number {
  const trimmed = raw.trim();
  const value = Number(trimmed);
  if (!/^\d+$/.test(trimmed) || !Number.isSafeInteger(value) || value < min) {
    throw new UsageError(`--${name}: expected a whole number >= ${min}, got "${raw}"`);
  }
  return value;
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
    throw new UsageError(`${flag}: not a URL: "${target}" (expected e.g. http://hookwatch:4318)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${flag}: expected an http(s) URL, got "${target}"`);
  if (!url.pathname.endsWith('/v1/logs')) url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/logs`;
  return url.toString();
}
