/**
 * Setting values as people write them: `30d` rather than 2592000000 ms, `20MiB` rather than 20971520 bytes.
 * Shared by `hookwatch --help`, `hookwatch config` and the generated reference, and accepted back by the
 * loader, so what one prints the other reads.
 */
import type { Setting } from './setting.ts';
import { formatDuration, formatSize } from './values.ts';

export { formatDuration, formatSize };

/** A duration or size setting's value in its human form; any other value unchanged. */
export function humanValue(s: Setting, v: unknown): unknown {
  if (s.type === 'duration' && typeof v === 'number') return formatDuration(v);
  if (s.type === 'bytes' && typeof v === 'number') return formatSize(v);
  return v;
}
