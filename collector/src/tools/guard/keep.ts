/**
 * How long the guard keeps the full outputs it saves. A hook that prints 50 MB on every session start would
 * otherwise leave 50 MB behind each time, until the disk is full. Files are removed after a while (a session can
 * go on pointing at one for days) and the folder is kept under a total size, oldest first. Only files the guard
 * saved, found by their name, are ever removed.
 */
import { lstatSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';

import { GUARD_FIELDS, type GuardField } from '../../../../shared/src/guard-trims.ts';
import { parseSize, UsageError } from '../common/args.ts';
// Types only: the parsers are loaded only when a keep setting is given (see ValueParsers).
import type { parseBytes, parseDuration } from '../../config/values.ts';

/** Saved outputs older than this are removed: long enough for a session that goes on for days to read its file. */
export const DEFAULT_KEEP_FOR_MS = 7 * 86_400_000;
/** Shortest --keep-for: a file removed sooner could still be named to a running session. */
export const MIN_KEEP_FOR_MS = 3_600_000;
/** The folder is kept under this many bytes of saved outputs, the oldest removed first. */
export const DEFAULT_KEEP_SIZE_BYTES = 1024 ** 3;

/**
 * A saved output modified this recently is never removed to fit the size: it may be the output of a guarded hook
 * running beside this one (Claude Code runs an event's hooks in parallel), just named to the model, or still
 * being written.
 */
const IN_USE_MS = 60_000;

/**
 * The copies of the line saying why a report failed, `report-failed.txt.<pid>`, being written (sayFailure) or
 * taken (takeReportFailure).
 */
const REPORT_FAILED_COPY = /^report-failed\.txt\.\d+$/;
/**
 * A copy untouched this long is one whose process ended before removing it (killed, or the machine stopped): one
 * lives for the few microseconds of a write and a rename, or of a rename, a read and a removal.
 */
const STALE_COPY_MS = 60_000;

/** How saved outputs are kept. */
export interface Keep {
  forMs: number;
  sizeBytes: number;
}

/** What a saved output holds: a trimmed field, or a stdout streamed to the file as it arrived. */
export type SavedKind = GuardField | 'spill';

/**
 * The name of a saved output: the time in milliseconds, the guard's pid and what it holds. Nothing but these
 * names is ever removed.
 */
export function savedName(time: number, pid: number, kind: SavedKind): string {
  return `${time}-${pid}-${kind}.txt`;
}

const escape = (s: string): string => s.replace(/[.]/g, '\\.');
/** The names savedName gives (13 digits of milliseconds hold every time from 2001 to 2286). */
const SAVED_NAME = new RegExp(`^\\d{13}-\\d+-(?:${[...GUARD_FIELDS, 'spill'].map(escape).join('|')})\\.txt$`);

/**
 * Removes the saved outputs in `dir` last modified more than `keep.forMs` ago, then the oldest others until the
 * rest fit `keep.sizeBytes`; never one named in `current` (those of this run), nor to fit the size one modified in
 * the last minute (IN_USE_MS). Only regular files with a saved
 * output's name, of this user, are removed: a link (never followed), a folder or anyone else's file is left.
 * The copies of the failure line of a report (REPORT_FAILED_COPY) untouched for STALE_COPY_MS go too, on the same
 * terms, best effort (one that cannot be removed is tried again by the next run). A process's pid says nothing
 * there: the folder may be shared with another pid namespace (a container), where a pid not running here is a
 * sender writing. Returns the first problem met (the folder cannot be read, a file cannot be removed), or undefined; it goes on
 * past a file it cannot remove.
 */
export function pruneSaved(dir: string, keep: Keep, current: ReadonlySet<string>, now = Date.now()): string | undefined {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    return (error as Error).message;
  }
  let problem: string | undefined;
  const gone = (error: unknown): boolean => {
    // Removed meanwhile, by a guard running beside this one: not a problem.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true;
    problem ??= (error as Error).message;
    return false;
  };
  const remove = (path: string): boolean => {
    try {
      unlinkSync(path);
      return true;
    } catch (error) {
      return gone(error);
    }
  };
  const uid = process.getuid?.();
  const older: { path: string; mtimeMs: number; size: number }[] = [];
  let total = 0;
  for (const name of names) {
    const copy = REPORT_FAILED_COPY.test(name);
    if (!copy && !SAVED_NAME.test(name)) continue;
    const path = join(dir, name);
    let st;
    try {
      st = lstatSync(path);
    } catch (error) {
      gone(error);
      continue;
    }
    if (!st.isFile() || (uid !== undefined && st.uid !== uid)) continue;
    if (copy) {
      // Its change time too: a rename (a run taking the line) keeps the time the line was written, which may be
      // long ago, and the run reads the copy after it.
      if (now - Math.max(st.mtimeMs, st.ctimeMs) > STALE_COPY_MS) {
        try {
          unlinkSync(path);
        } catch {
          // Removed meanwhile by a run beside this one, or not this run's to remove.
        }
      }
      continue;
    }
    if (!current.has(name) && now - st.mtimeMs > keep.forMs && remove(path)) continue;
    total += st.size;
    if (!current.has(name) && now - st.mtimeMs >= IN_USE_MS) older.push({ path, mtimeMs: st.mtimeMs, size: st.size });
  }
  older.sort((a, b) => a.mtimeMs - b.mtimeMs);
  for (const file of older) {
    if (total <= keep.sizeBytes) break;
    if (remove(file.path)) total -= file.size;
  }
  return problem;
}

/** The parsers of settings as people write them (`7d`, `1GiB`), loaded only when a keep setting is given. */
interface ValueParsers {
  parseDuration: typeof parseDuration;
  parseBytes: typeof parseBytes;
}

/** --keep-for or HOOKWATCH_GUARD_KEEP_FOR (`label`): a duration with a unit, at least MIN_KEEP_FOR_MS. */
export function parseKeepFor(parsers: ValueParsers, raw: string, label: string): number {
  const ms = /^\s*[\d.]+\s*$/.test(raw) ? undefined : parsers.parseDuration(raw);
  if (ms === undefined || ms < MIN_KEEP_FOR_MS) throw new UsageError(`${label}: expected a duration of at least 1h such as 7d or 36h, got "${raw}"`);
  return ms;
}

/** --keep-size or HOOKWATCH_GUARD_KEEP_SIZE (`label`): a size such as 1GiB or 500MB. */
export function parseKeepSize(parsers: ValueParsers, raw: string, label: string): number {
  return parseSize(parsers.parseBytes, raw, label, '1GiB or 500MB');
}
