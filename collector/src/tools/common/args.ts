import { parseArgs } from 'node:util';
import type { ParseArgsConfig } from 'node:util';

/** A mistake in how the tool was called or configured; the tools print it with the usage hint and exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** parseArgs (strict by default: unknown options are errors) that throws UsageError instead of a TypeError. */
export function parseToolArgs<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
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
