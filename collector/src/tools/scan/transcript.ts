import { readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';

import { PREVIEW_CHARS } from '../../../../shared/src/cliff.ts';
import { headCodeUnits } from '../common/format.ts';
import { readLines } from '../common/lines.ts';
import type { LineStats } from '../common/lines.ts';
import { findPersistedOutputs, isHookOutputPath, mayHoldMarker } from './persisted-marker.ts';
import type { PersistedOutput } from './persisted-marker.ts';

/** How a hook command ended, from the attachment type Claude Code recorded. */
export type HookOutcome = 'success' | 'blocking' | 'nonBlockingError' | 'cancelled';

/** Output sizes of one hook record, in UTF-16 code units; only those that can be read from the record. */
export interface KnownChars {
  stdout?: number;
  additionalContext?: number;
  systemMessage?: number;
  initialUserMessage?: number;
}

/** One hook result found in a transcript (first sighting of its record id). */
export interface HookRecord {
  uuid: string | undefined;
  sessionId: string;
  hookName: string;
  hookEvent: string;
  /** `attachment.type`, e.g. hook_success; `(unattributed)` for a hook output marker outside a hook record. */
  recordType: string;
  outcome: HookOutcome;
  timestamp: string | undefined;
  file: string;
  lineNumber: number;
  /** Persisted outputs in this record, unique by saved path. */
  persisted: PersistedOutput[];
  /** Of those, the ones whose saved file no earlier record named (what `outputsPersisted` counts). */
  newlyPersisted: number;
  chars: KnownChars;
}

/** Delivery counts of a hook, a session, or a hook within a session. */
export interface DeliveryCounts {
  /** Unique hook records. */
  records: number;
  /** Records with no persisted output: what the hook printed reached the model whole. */
  delivered: number;
  /** Records with at least one output saved to a file instead of delivered. */
  persisted: number;
  /** Outputs saved to a file (unique saved files). */
  outputsPersisted: number;
  /** Largest output, in UTF-16 code units, among delivered records whose size the transcript shows. */
  largestDeliveredChars: number | null;
}

/** Per-hook totals. */
export interface HookSummary extends DeliveryCounts {
  hookName: string;
  hookEvent: string;
}

/** Per-session totals, with the hooks that ran in the session. */
export interface SessionSummary extends DeliveryCounts {
  sessionId: string;
  files: string[];
  hooks: HookSummary[];
}

/** What reading one file found. */
export interface FileSummary {
  path: string;
  bytes: number;
  lines: number;
  /** Lines that are not JSON (skipped), including a cut-off last line. */
  unparsableLines: number;
  /** Lines over the line limit, skipped without being buffered. */
  oversizedLines: number;
  /** True when the last line had no newline and did not parse: a record cut off mid-write. */
  truncatedLastLine: boolean;
  hookRecords: number;
  /** Hook records whose id was already counted (Claude Code can write a record more than once). */
  duplicateRecords: number;
  /** Set when the file could not be read. */
  error?: string;
}

/** A persisted output as listed in the report. */
export interface PersistedListing extends PersistedOutput {
  sessionId: string;
  hookName: string;
  uuid: string | undefined;
  file: string;
  lineNumber: number;
}

/** Everything a scan found. */
export interface ScanResult {
  files: FileSummary[];
  totals: DeliveryCounts & { lines: number; bytes: number; unparsableLines: number; oversizedLines: number; duplicateRecords: number; recordsWithoutId: number };
  hooks: HookSummary[];
  sessions: SessionSummary[];
  /** The first persisted outputs found (bounded), for the report. */
  persistedOutputs: PersistedListing[];
}

/** Receives each hook record once, in file order; awaited, so a slow consumer slows the scan (back-pressure). */
export type HookRecordSink = (record: HookRecord) => void | Promise<void>;

/** Most persisted outputs listed individually in a report; the counts cover all of them. */
export const MAX_LISTED_PERSISTED = 200;
const MAX_WALK_DEPTH = 12;

/** Files to read for the given paths: files as given, directories searched recursively for `*.jsonl`. */
export async function collectTranscriptFiles(paths: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true });
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      const full = join(dir, entry.name);
      // Symbolic links are not followed: a link back up the tree would loop.
      if (entry.isDirectory()) await walk(full);
      else if (entry.isFile() && entry.name.endsWith('.jsonl')) files.push(full);
    }
  };
  for (const path of paths) {
    const info = await stat(path);
    if (info.isDirectory()) await walk(path);
    else files.push(path);
  }
  return files;
}

function emptyCounts(): DeliveryCounts {
  return { records: 0, delivered: 0, persisted: 0, outputsPersisted: 0, largestDeliveredChars: null };
}

function addRecord(counts: DeliveryCounts, record: HookRecord): void {
  counts.records++;
  if (record.persisted.length > 0) {
    counts.persisted++;
  } else {
    counts.delivered++;
    const largest = largestKnownChars(record.chars);
    if (largest !== null) counts.largestDeliveredChars = Math.max(counts.largestDeliveredChars ?? 0, largest);
  }
  counts.outputsPersisted += record.newlyPersisted;
}

function largestKnownChars(chars: KnownChars): number | null {
  const known = Object.values(chars).filter((n): n is number => typeof n === 'number');
  return known.length === 0 ? null : Math.max(...known);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every string inside a JSON value (bounded depth), for finding markers wherever Claude Code put them. */
function collectStrings(value: unknown, into: string[], depth = 0): void {
  if (typeof value === 'string') into.push(value);
  else if (depth < MAX_WALK_DEPTH && Array.isArray(value)) for (const item of value) collectStrings(item, into, depth + 1);
  else if (depth < MAX_WALK_DEPTH && isObject(value)) for (const item of Object.values(value)) collectStrings(item, into, depth + 1);
}

function outcomeOf(recordType: string): HookOutcome {
  if (recordType === 'hook_blocking_error') return 'blocking';
  if (recordType === 'hook_non_blocking_error') return 'nonBlockingError';
  if (recordType === 'hook_cancelled') return 'cancelled';
  return 'success';
}

/** Length of a field when it is text without a marker (with a marker, its length is the marker's, not the output's). */
function textLength(value: unknown): number | undefined {
  if (typeof value === 'string') return mayHoldMarker(value) ? undefined : value.length;
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) {
    if (value.some((item: string) => mayHoldMarker(item))) return undefined;
    return value.reduce((sum: number, item: string) => sum + item.length, 0);
  }
  return undefined;
}

function knownChars(attachment: Record<string, unknown>, recordType: string): KnownChars {
  const chars: KnownChars = {};
  const stdout = textLength(attachment.stdout) ?? (recordType === 'hook_success' ? textLength(attachment.content) : undefined);
  if (stdout !== undefined) chars.stdout = stdout;
  const context = recordType === 'hook_additional_context' ? textLength(attachment.content) : textLength(attachment.additionalContext);
  if (context !== undefined) chars.additionalContext = context;
  const systemMessage = textLength(attachment.systemMessage);
  if (systemMessage !== undefined) chars.systemMessage = systemMessage;
  const initialUserMessage = textLength(attachment.initialUserMessage);
  if (initialUserMessage !== undefined) chars.initialUserMessage = initialUserMessage;
  return chars;
}

const ATTACHMENT_BYTES = Buffer.from('"attachment"');
const MARKER_BYTES = Buffer.from('<persisted-output>');

/**
 * Reads Claude Code transcripts and counts, per hook and per session, the hook outputs that reached the model
 * and those that were saved to a file (the 10,000-character cliff). Records are counted once by `uuid`.
 */
export class TranscriptScanner {
  private readonly sink: HookRecordSink | undefined;
  private readonly seenIds = new Set<string>();
  private readonly seenSavedPaths = new Set<string>();
  private readonly hooks = new Map<string, HookSummary>();
  private readonly sessions = new Map<string, { summary: SessionSummary; files: Set<string>; hooks: Map<string, HookSummary> }>();
  private readonly files: FileSummary[] = [];
  private readonly persistedOutputs: PersistedListing[] = [];
  private readonly totals: ScanResult['totals'] = {
    ...emptyCounts(), lines: 0, bytes: 0, unparsableLines: 0, oversizedLines: 0, duplicateRecords: 0, recordsWithoutId: 0,
  };

  private readonly maxLineBytes: number | undefined;

  constructor(options: { sink?: HookRecordSink; maxLineBytes?: number } = {}) {
    this.sink = options.sink;
    this.maxLineBytes = options.maxLineBytes;
  }

  /** Reads one transcript file; a file that cannot be read is recorded with its error, not thrown. */
  async scanFile(path: string): Promise<FileSummary> {
    const stats: LineStats = { lines: 0, bytes: 0, oversizedLines: 0 };
    const file: FileSummary = {
      path, bytes: 0, lines: 0, unparsableLines: 0, oversizedLines: 0, truncatedLastLine: false, hookRecords: 0, duplicateRecords: 0,
    };
    const fallbackSession = basename(path).replace(/\.jsonl$/, '');
    try {
      const options = this.maxLineBytes === undefined ? { stats } : { stats, maxLineBytes: this.maxLineBytes };
      for await (const line of readLines(path, options)) {
        if (line.bytes.length === 0 || isBlank(line.bytes)) continue;
        let parsed: unknown;
        try {
          parsed = JSON.parse(line.bytes.toString('utf8'));
        } catch {
          file.unparsableLines++;
          if (line.unterminated) file.truncatedLastLine = true;
          continue;
        }
        if (!isObject(parsed)) {
          file.unparsableLines++;
          continue;
        }
        const mayMatter = line.bytes.includes(ATTACHMENT_BYTES) || line.bytes.includes(MARKER_BYTES);
        if (mayMatter) await this.consider(parsed, file, fallbackSession, line.lineNumber);
      }
    } catch (error) {
      file.error = error instanceof Error ? error.message : String(error);
    }
    file.bytes = stats.bytes;
    file.lines = stats.lines;
    file.oversizedLines = stats.oversizedLines;
    this.files.push(file);
    this.totals.bytes += file.bytes;
    this.totals.lines += file.lines;
    this.totals.unparsableLines += file.unparsableLines;
    this.totals.oversizedLines += file.oversizedLines;
    this.totals.duplicateRecords += file.duplicateRecords;
    return file;
  }

  private async consider(record: Record<string, unknown>, file: FileSummary, fallbackSession: string, lineNumber: number): Promise<void> {
    const attachment = record.attachment;
    const isHookRecord = record.type === 'attachment' && isObject(attachment) && typeof attachment.type === 'string' && attachment.type.startsWith('hook');
    const strings: string[] = [];
    collectStrings(isHookRecord ? attachment : record, strings);
    let markers = strings.filter(mayHoldMarker).flatMap(findPersistedOutputs);
    // Outside a hook record, only markers of hook output files count (tool results use the same marker).
    if (!isHookRecord) markers = markers.filter((marker) => isHookOutputPath(marker.savedPath));
    if (!isHookRecord && markers.length === 0) return;

    const uuid = typeof record.uuid === 'string' ? record.uuid : undefined;
    if (uuid === undefined) this.totals.recordsWithoutId++;
    else if (this.seenIds.has(uuid)) {
      file.duplicateRecords++;
      return;
    } else this.seenIds.add(uuid);
    file.hookRecords++;

    // One output can be quoted in several fields of a record (content and stdout): unique by saved file.
    const unique = new Map<string, PersistedOutput>();
    markers.forEach((marker, index) => unique.set(marker.savedPath ?? `#${index}`, marker));
    const persisted = [...unique.values()];
    let newlyPersisted = 0;
    for (const marker of persisted) {
      if (marker.savedPath === undefined) newlyPersisted++;
      else if (!this.seenSavedPaths.has(marker.savedPath)) {
        this.seenSavedPaths.add(marker.savedPath);
        newlyPersisted++;
      }
    }

    const hookAttachment = isHookRecord ? attachment : {};
    const recordType = isHookRecord ? String(hookAttachment.type) : '(unattributed)';
    const hookName = stringField(hookAttachment.hookName) ?? stringField(hookAttachment.hookEvent) ?? '(unknown hook)';
    const hook: HookRecord = {
      uuid,
      sessionId: stringField(record.sessionId) ?? fallbackSession,
      hookName,
      hookEvent: stringField(hookAttachment.hookEvent) ?? hookName.split(':')[0] ?? hookName,
      recordType,
      outcome: outcomeOf(recordType),
      timestamp: stringField(record.timestamp),
      file: file.path,
      lineNumber,
      persisted,
      newlyPersisted,
      chars: isHookRecord ? knownChars(hookAttachment, recordType) : {},
    };
    this.tally(hook);
    if (this.sink) await this.sink(hook);
  }

  private tally(record: HookRecord): void {
    addRecord(this.totals, record);
    const hookKey = `${record.hookEvent}\u0000${record.hookName}`;
    let hook = this.hooks.get(hookKey);
    if (!hook) {
      hook = { hookName: record.hookName, hookEvent: record.hookEvent, ...emptyCounts() };
      this.hooks.set(hookKey, hook);
    }
    addRecord(hook, record);

    let session = this.sessions.get(record.sessionId);
    if (!session) {
      session = { summary: { sessionId: record.sessionId, files: [], hooks: [], ...emptyCounts() }, files: new Set(), hooks: new Map() };
      this.sessions.set(record.sessionId, session);
    }
    addRecord(session.summary, record);
    session.files.add(record.file);
    let sessionHook = session.hooks.get(hookKey);
    if (!sessionHook) {
      sessionHook = { hookName: record.hookName, hookEvent: record.hookEvent, ...emptyCounts() };
      session.hooks.set(hookKey, sessionHook);
    }
    addRecord(sessionHook, record);

    for (const marker of record.persisted) {
      if (this.persistedOutputs.length >= MAX_LISTED_PERSISTED) break;
      this.persistedOutputs.push({
        ...marker,
        preview: headCodeUnits(marker.preview, PREVIEW_CHARS),
        sessionId: record.sessionId,
        hookName: record.hookName,
        uuid: record.uuid,
        file: record.file,
        lineNumber: record.lineNumber,
      });
    }
  }

  /** The totals so far; hooks and sessions sorted with the most persisted first. */
  result(): ScanResult {
    const byPersisted = <T extends DeliveryCounts>(a: T, b: T): number => b.outputsPersisted - a.outputsPersisted || b.records - a.records;
    return {
      files: [...this.files],
      totals: { ...this.totals },
      hooks: [...this.hooks.values()].sort(byPersisted),
      sessions: [...this.sessions.values()]
        .map(({ summary, files, hooks }) => ({ ...summary, files: [...files], hooks: [...hooks.values()].sort(byPersisted) }))
        .sort(byPersisted),
      persistedOutputs: [...this.persistedOutputs],
    };
  }
}

function stringField(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function isBlank(bytes: Buffer): boolean {
  for (const byte of bytes) if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return false;
  return true;
}
