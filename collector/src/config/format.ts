/**
 * Setting values as people write them: `30d` rather than 2592000000 ms, `20MiB` rather than 20971520 bytes.
 * Shared by `hookwatch --help`, `hookwatch config` and the generated reference, and accepted back by the
 * loader, so what one prints the other reads.
 */
import type { Setting } from './setting.ts';
import { formatDuration } from './values.ts';

export { formatDuration };

const BYTE_UNITS: [number, string][] = [[1024 ** 3, 'GiB'], [1024 ** 2, 'MiB'], [1024, 'KiB']];

/** 20971520 -> `20MiB`; a size no binary unit divides stays a plain number of bytes. */
export function formatSize(n: number): string {
  for (const [size, unit] of BYTE_UNITS) if (n >= size && n % size === 0) return `${n / size}${unit}`;
  return String(n);
}

/** A duration or size setting's value in its human form; any other value unchanged. */
export function humanValue(s: Setting, v: unknown): unknown {
  if (s.type === 'duration' && typeof v === 'number') return formatDuration(v);
  if (s.type === 'bytes' && typeof v === 'number') return formatSize(v);
  return v;
}
