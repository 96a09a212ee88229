import type { Dirent } from 'node:fs';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Readable } from 'node:stream';

import { OUTPUT_CAP_CHARS, PREVIEW_CHARS } from '../../../../shared/src/cliff.ts';
import type { OutputKind } from '../../../../shared/src/cliff.ts';
import { measureStdout } from '../check/measure.ts';
import { isObject } from '../common/capped-fields.ts';
import { formatCount, headCodeUnits, plural } from '../common/format.ts';
import { MAX_CAPTURED_STDOUT_BYTES } from '../common/limits.ts';
import { readLines } from '../common/lines.ts';
import type { LineStats } from '../common/lines.ts';
import { digestOf, PendingOutputs } from './output-links.ts';
import type { DeliveryRecordKeys, PendingOutput } from './output-links.ts';
import { findPersistedOutputs, isHookOutputPath, isMarkerText, mayHoldMarker, savedPathSession } from './persisted-marker.ts';
import { redactCommand } from '../../hooks/redact-command.ts';
import type { PersistedOutput } from './persisted-marker.ts';

/** How a hook command ended, from the attachment type Claude Code recorded. */
export type HookOutcome = 'success' | 'blocking' | 'nonBlockingError' | 'cancelled';

/**
 * What became of one output string: delivered whole, persisted (saved to a file, the model got a preview), or
 * unconfirmed (a string of a command's JSON stdout whose delivery record the transcript does not hold).
 */
export type OutputOutcome = 'delivered' | 'persisted' | 'unconfirmed';

/** Shown where the transcript does not say which command produced an output. */
export const UNKNOWN_COMMAND = '(command not recorded)';

/**
 * One run of a hook command (a `hook_success` or hook error record), counted once by its record id; or a run that
 * only a delivery record shows (its output string linked to no run record), with its command unknown.
 */
export interface HookRun {
  kind: 'run';
  /** Stable across scans of the same transcript: the record's uuid (or session and line when it has none). */
  id: string;
  sessionId: string;
  /** As telemetry names the hook: the event with its matcher (`SessionStart:startup`, `PostToolUse:Bash`). */
  hookName: string;
  hookEvent: string;
  command: string | undefined;
  outcome: HookOutcome;
  timestamp: string | undefined;
  file: string;
  lineNumber: number;
}

/** One output string and what became of it. */
export interface HookOutput {
  kind: 'output';
  /**
   * Stable across scans: for a string of a command's JSON output, its run and field whatever its outcome; else the
   * saved file for a persisted output, or the record id and the string's place.
   */
  id: string;
  /**
   * The id the previous release gave a string of a command's JSON output that it linked to the record delivering
   * it (that record's id and the string's place, or the saved file), so that hookwatch counts once an output it
   * stored under that id.
   */
  previousId?: string;
  sessionId: string;
  hookName: string;
  hookEvent: string;
  /** The command that printed it; undefined when the transcript does not link the string to a command. */
  command: string | undefined;
  field: OutputKind;
  outcome: OutputOutcome;
  /** Length in UTF-16 code units; null when the transcript does not show it (a persisted plain output quoted only as a marker). */
  chars: number | null;
  /** Where it was saved and the preview the model got instead (persisted outputs). */
  saved: PersistedOutput | undefined;
  timestamp: string | undefined;
  file: string;
  lineNumber: number;
}

/** What a scan reports to a sink: command runs and output outcomes. */
export type Finding = HookRun | HookOutput;

/** Delivery counts of a hook, a command, a session or everything. */
export interface DeliveryCounts {
  /** Command runs (hook_success and hook error records, and runs only a delivery record shows). */
  runs: number;
  /** Output strings whose outcome the transcript shows. */
  outputs: number;
  /** Outputs the model received whole. */
  delivered: number;
  /** Outputs saved to a file instead of delivered (what telemetry's num_outputs_persisted counts). */
  outputsPersisted: number;
  /** JSON output strings whose delivery record is missing: neither delivered nor persisted as far as the transcript shows. */
  unconfirmed: number;
  /**
   * Of those, the ones over the cap by their size: Claude Code saves every such string to a file, so they did not
   * reach the model whole whatever record is missing (a transcript cut off mid-write, say).
   */
  unconfirmedOverCap: number;
  /** Largest delivered output; a delivered output is never over the cap. */
  largestDeliveredChars: number | null;
  /** Largest output of known size, delivered or not. */
  largestOutputChars: number | null;
}

/** Per-command totals within a hook. */
export interface CommandSummary extends DeliveryCounts {
  command: string;
}

/** Per-hook totals, then per command. */
export interface HookSummary extends DeliveryCounts {
  hookName: string;
  hookEvent: string;
  commands: CommandSummary[];
}

/** Per-session totals, with the hooks that ran in the session. */
export interface SessionSummary extends DeliveryCounts {
  sessionId: string;
  files: string[];
  hooks: HookSummary[];
}

/** What reading one file found. */
export interface FileSummary {
  /** The file; or a folder that could not be listed, with its error. */
  path: string;
  bytes: number;
  lines: number;
  /** Lines that are not JSON (skipped), including a cut-off last line. */
  unparsableLines: number;
  /** Number of the first of them, to name in a report. */
  firstUnparsableLine?: number;
  /** Lines over the line limit, skipped without being buffered. */
  oversizedLines: number;
  /** Number of the first of them. */
  firstOversizedLine?: number;
  /** True when the last line had no newline and did not parse: a record cut off mid-write. */
  truncatedLastLine: boolean;
  hookRecords: number;
  /** Hook records whose id was already counted (a resumed session repeats the records of the one it continues). */
  duplicateRecords: number;
  /** Set when the file could not be read. */
  error?: string;
}

/** A persisted output as listed in the report. */
export interface PersistedListing extends PersistedOutput {
  sessionId: string;
  hookName: string;
  command: string | undefined;
  chars: number | null;
  file: string;
  lineNumber: number;
}

/** Everything a scan found. */
export interface ScanResult {
  files: FileSummary[];
  totals: DeliveryCounts & {
    /** Unique hook records (runs plus the records that deliver JSON output strings). */
    records: number;
    lines: number;
    bytes: number;
    unparsableLines: number;
    oversizedLines: number;
    duplicateRecords: number;
    recordsWithoutId: number;
    /** Records that repeat what went to the model (api-request-blob and the like): read for nothing, never counted. */
    requestCopies: number;
    /** Records of a type this version of hookwatch does not know, by type: skipped. */
    skippedRecordTypes: Record<string, number>;
  };
  hooks: HookSummary[];
  sessions: SessionSummary[];
  /** The first persisted outputs found (bounded), for the report. */
  persistedOutputs: PersistedListing[];
}

/** Receives each finding once, in file order; awaited, so a slow consumer slows the scan (back-pressure). */
export type FindingSink = (finding: Finding) => void | Promise<void>;

/** Most persisted outputs listed individually in a report; the counts cover all of them. */
export const MAX_LISTED_PERSISTED = 200;
const MAX_WALK_DEPTH = 12;
/** Distinct unknown record types remembered by name; more are counted under "(other)". */
const MAX_SKIPPED_TYPES = 50;

/** Top-level record types of Claude Code transcripts that hold no hook result of their own. */
const KNOWN_RECORD_TYPES = new Set([
  'user', 'assistant', 'attachment', 'system', 'summary', 'queue-operation', 'atis-latch', 'tools-used', 'last-prompt',
  'cost-state', 'file-history-snapshot', 'custom-title', 'progress',
]);
/** Top-level records that copy what was sent to the model (markers included): never counted. */
const REQUEST_COPY_TYPES = new Set(['api-request', 'api-request-blob', 'api-request-shape']);
/** Attachment records that copy what was sent to the model. */
const REQUEST_COPY_ATTACHMENTS = new Set(['prompt_snapshot']);
const RUN_TYPES: Record<string, HookOutcome> = {
  hook_success: 'success',
  hook_blocking_error: 'blocking',
  hook_non_blocking_error: 'nonBlockingError',
  hook_cancelled: 'cancelled',
};
const DELIVERY_TYPES: Record<string, OutputKind> = {
  hook_additional_context: 'additionalContext',
  hook_system_message: 'systemMessage',
  hook_initial_user_message: 'initialUserMessage',
};

const NO_RECORD = 'no transcript record in it';
/** What a transcript of no lines at all is said to be. */
export const EMPTY_TRANSCRIPT = `empty: ${NO_RECORD}`;

/** A transcript file to read, or a folder that could not be listed (`error` set). */
export interface TranscriptPath {
  path: string;
  error?: string;
}

/**
 * Files to read for the given paths: files as given, directories searched recursively for `*.jsonl`. A file is
 * listed once however often the paths reach it (a folder given twice, a folder and a file in it, a link to it).
 * Symbolic links are followed (a project folder kept on another disk), each folder read once: a link back up the
 * tree ends there.
 */
export async function collectTranscriptFiles(paths: readonly string[]): Promise<TranscriptPath[]> {
  const files: TranscriptPath[] = [];
  const seen = new Set<string>();
  const walked = new Set<string>();
  const add = async (file: string): Promise<void> => {
    // A file gone since its folder was listed (a session deleted meanwhile) is still listed: reading it then
    // records its error as that file's, as for any unreadable file, and the rest of the scan goes on.
    const real = await realpath(file).catch(() => undefined);
    if (real === undefined) {
      files.push({ path: file });
      return;
    }
    if (seen.has(real)) return;
    seen.add(real);
    files.push({ path: file });
  };
  const walk = async (dir: string): Promise<void> => {
    const real = await realpath(dir).catch(() => dir);
    if (walked.has(real)) return;
    walked.add(real);
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      // Likewise a folder gone since its parent was listed (Claude Code removed a session's folder meanwhile):
      // listed with its error, reported as unreadable as such a file is, and the rest of the scan goes on.
      files.push({ path: dir, error: error instanceof Error ? error.message : String(error) });
      return;
    }
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      const full = join(dir, entry.name);
      // What a link leads to; a link that leads nowhere (or loops) and is named as a transcript is listed, and
      // reading it then names its error.
      const target = entry.isSymbolicLink() ? await stat(full).catch(() => undefined) : entry;
      if (target?.isDirectory()) await walk(full);
      else if ((target === undefined || target.isFile()) && entry.name.endsWith('.jsonl')) await add(full);
    }
  };
  for (const path of paths) {
    const info = await stat(path);
    if (info.isDirectory()) await walk(path);
    else await add(path);
  }
  return files;
}

export function emptyCounts(): DeliveryCounts {
  return { runs: 0, outputs: 0, delivered: 0, outputsPersisted: 0, unconfirmed: 0, unconfirmedOverCap: 0, largestDeliveredChars: null, largestOutputChars: null };
}

function addFinding(counts: DeliveryCounts, finding: Finding): void {
  if (finding.kind === 'run') {
    counts.runs++;
    return;
  }
  const max = (a: number | null, b: number | null): number | null => (b === null ? a : Math.max(a ?? 0, b));
  if (finding.outcome === 'unconfirmed') {
    counts.unconfirmed++;
    if (finding.chars !== null && finding.chars > OUTPUT_CAP_CHARS) counts.unconfirmedOverCap++;
  } else {
    counts.outputs++;
    if (finding.outcome === 'delivered') {
      counts.delivered++;
      counts.largestDeliveredChars = max(counts.largestDeliveredChars, finding.chars);
    } else counts.outputsPersisted++;
  }
  counts.largestOutputChars = max(counts.largestOutputChars, finding.chars);
}

/** Every string inside a JSON value (bounded depth), for finding markers wherever Claude Code put them. */
function collectStrings(value: unknown, into: string[], depth = 0): void {
  if (typeof value === 'string') into.push(value);
  else if (depth < MAX_WALK_DEPTH && Array.isArray(value)) for (const item of value) collectStrings(item, into, depth + 1);
  else if (depth < MAX_WALK_DEPTH && isObject(value)) for (const item of Object.values(value)) collectStrings(item, into, depth + 1);
}

/** A record's content as a list of strings (a string, or an array of strings; anything else: none). */
function contentStrings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string');
  return [];
}

const MARKER_BYTES = Buffer.from('<persisted-output>');

interface HookCounts {
  summary: Omit<HookSummary, 'commands'>;
  commands: Map<string, CommandSummary>;
}

/** Where a finding comes from in a file, and the record's common fields. */
interface RecordContext {
  recordId: string;
  sessionId: string;
  timestamp: string | undefined;
  file: string;
  lineNumber: number;
}

/**
 * Reads Claude Code transcripts and tells, per hook, per command and per session, which hook output strings
 * reached the model whole and which were saved to a file (the 10,000-character cliff). Records are counted once
 * by `uuid`, persisted outputs once by the file they were saved to; files are streamed line by line.
 */
export class TranscriptScanner {
  private readonly sink: FindingSink | undefined;
  private readonly seenIds = new Set<string>();
  private readonly seenSavedPaths = new Set<string>();
  /** Hook name (with matcher) of the latest run per session and event, for delivery records that carry the bare event. */
  private readonly latestHookName = new Map<string, string>();
  /**
   * The latest hook record of each session (its uuid, event and firing), for the record after it that carries no
   * id of its firing (firingOf): one per session, not one per record, so memory follows the sessions read.
   */
  private readonly lastHookRecord = new Map<string, { uuid: string; hookEvent: string; firing: string }>();
  /**
   * Command runs counted from delivery records alone, by firing and place in the records' content: the output kinds
   * each such run delivered (a command printing two kinds of output ran once; two strings of one kind, twice).
   */
  private readonly unrecordedRuns = new Map<string, Set<OutputKind>[]>();
  private readonly hooks = new Map<string, HookCounts>();
  private readonly sessions = new Map<string, { summary: Omit<SessionSummary, 'hooks' | 'files'>; files: Set<string>; hooks: Map<string, HookCounts> }>();
  private readonly files: FileSummary[] = [];
  private readonly persistedOutputs: PersistedListing[] = [];
  private readonly totals: ScanResult['totals'] = {
    ...emptyCounts(), records: 0, lines: 0, bytes: 0, unparsableLines: 0, oversizedLines: 0, duplicateRecords: 0, recordsWithoutId: 0,
    requestCopies: 0, skippedRecordTypes: {},
  };

  private readonly maxLineBytes: number | undefined;

  constructor(options: { sink?: FindingSink; maxLineBytes?: number } = {}) {
    this.sink = options.sink;
    this.maxLineBytes = options.maxLineBytes;
  }

  /** Records a path that could not be read at all (a folder that could not be listed), as an unreadable file is. */
  unreadable(path: string, error: string): FileSummary {
    const file: FileSummary = {
      path, bytes: 0, lines: 0, unparsableLines: 0, oversizedLines: 0, truncatedLastLine: false, hookRecords: 0, duplicateRecords: 0, error,
    };
    this.files.push(file);
    return file;
  }

  /**
   * Reads one transcript file; a file that cannot be read is recorded with its error, not thrown. With `input`
   * (standard input), that stream is read and `path` only names it.
   */
  async scanFile(path: string, input?: Readable): Promise<FileSummary> {
    const stats: LineStats = { lines: 0, bytes: 0, oversizedLines: 0 };
    const file: FileSummary = {
      path, bytes: 0, lines: 0, unparsableLines: 0, oversizedLines: 0, truncatedLastLine: false, hookRecords: 0, duplicateRecords: 0,
    };
    const fallbackSession = basename(path).replace(/\.jsonl$/, '');
    const pending = new PendingOutputs();
    // Lines read, and those that are transcript records (JSON objects with a type): a file with lines and no
    // record is not a transcript (a README, a JSON document), not one with a few corrupt lines.
    let read = 0;
    let records = 0;
    try {
      const options = this.maxLineBytes === undefined ? { stats } : { stats, maxLineBytes: this.maxLineBytes };
      for await (const line of readLines(input ?? path, options)) {
        if (line.bytes.length === 0 || isBlank(line.bytes)) continue;
        read++;
        let parsed: unknown;
        try {
          parsed = JSON.parse(line.bytes.toString('utf8'));
        } catch {
          file.unparsableLines++;
          file.firstUnparsableLine ??= line.lineNumber;
          if (line.unterminated) file.truncatedLastLine = true;
          continue;
        }
        if (!isObject(parsed)) {
          file.unparsableLines++;
          file.firstUnparsableLine ??= line.lineNumber;
          continue;
        }
        if (typeof parsed.type === 'string') records++;
        await this.consider(parsed, { file, pending, fallbackSession, lineNumber: line.lineNumber, mayHoldMarker: line.bytes.includes(MARKER_BYTES) });
      }
    } catch (error) {
      file.error = error instanceof Error ? error.message : String(error);
    }
    // Unreadable as a transcript, as a file that cannot be opened is; a lone line cut off mid-write (a session
    // just begun) is not that. Lines over the line limit were not read: they may be records.
    if (file.error === undefined && records === 0 && read > 0 && stats.oversizedLines === 0 && !(read === 1 && file.truncatedLastLine)) {
      // The lines that are not JSON objects are counted as unparsable beside this; the others are said here.
      const untyped = read - file.unparsableLines;
      const why = untyped > 0 ? ` (${formatCount(untyped)} JSON without a record type)` : '';
      file.error = `not a Claude Code transcript: none of its ${plural(read, 'non-blank line')} could be read as a transcript record${why}`;
    }
    // A transcript with no line to read vouches for nothing (a file created and never written, standard input with
    // nothing piped in): not a clean one. Lines over the line limit were not read: they may be records.
    if (file.error === undefined && read === 0 && stats.oversizedLines === 0) {
      file.error = stats.lines === 0 ? EMPTY_TRANSCRIPT : `only blank lines: ${NO_RECORD}`;
    }
    // JSON output strings whose delivery record never came (a session cut off, a record lost).
    for (const entry of pending.drain()) await this.emitUnconfirmed(entry, path);
    file.bytes = stats.bytes;
    file.lines = stats.lines;
    file.oversizedLines = stats.oversizedLines;
    if (stats.firstOversizedLine !== undefined) file.firstOversizedLine = stats.firstOversizedLine;
    this.files.push(file);
    this.totals.bytes += file.bytes;
    this.totals.lines += file.lines;
    this.totals.unparsableLines += file.unparsableLines;
    this.totals.oversizedLines += file.oversizedLines;
    this.totals.duplicateRecords += file.duplicateRecords;
    return file;
  }

  private async consider(
    record: Record<string, unknown>,
    at: { file: FileSummary; pending: PendingOutputs; fallbackSession: string; lineNumber: number; mayHoldMarker: boolean },
  ): Promise<void> {
    const type = typeof record.type === 'string' ? record.type : '(no type)';
    const attachment = isObject(record.attachment) ? record.attachment : undefined;
    const attachmentType = typeof attachment?.type === 'string' ? attachment.type : '';
    if (REQUEST_COPY_TYPES.has(type) || (type === 'attachment' && REQUEST_COPY_ATTACHMENTS.has(attachmentType))) {
      this.totals.requestCopies++;
      return;
    }
    const isHookRecord = type === 'attachment' && attachment !== undefined && attachmentType.startsWith('hook');
    if (!isHookRecord) {
      if (!KNOWN_RECORD_TYPES.has(type)) this.skipType(type);
      if (at.mayHoldMarker) await this.considerStrayMarkers(record, at);
      return;
    }

    const uuid = typeof record.uuid === 'string' ? record.uuid : undefined;
    const sessionId = stringField(record.sessionId) ?? at.fallbackSession;
    if (uuid === undefined) this.totals.recordsWithoutId++;
    else if (this.seenIds.has(uuid)) {
      at.file.duplicateRecords++;
      return;
    } else this.seenIds.add(uuid);
    at.file.hookRecords++;
    this.totals.records++;

    const ctx: RecordContext = {
      recordId: uuid ?? `${sessionId}:${basename(at.file.path)}:${at.lineNumber}`,
      sessionId,
      timestamp: stringField(record.timestamp),
      file: at.file.path,
      lineNumber: at.lineNumber,
    };
    const hookEvent = stringField(attachment.hookEvent) ?? stringField(attachment.hookName)?.split(':')[0] ?? '(unknown event)';
    const firing = this.firingOf(record, attachment, hookEvent, ctx);
    const runOutcome = RUN_TYPES[attachmentType];
    const deliveryKind = DELIVERY_TYPES[attachmentType];
    if (runOutcome !== undefined) await this.considerRun(attachment, runOutcome, hookEvent, ctx, at.pending);
    else if (deliveryKind !== undefined) await this.considerDelivery(attachment, deliveryKind, hookEvent, firing, ctx, at.pending);
    else {
      // A hook record type this version does not know: skipped, but an output it says was persisted still counts.
      // Its wording is not known either: a marker counts where it starts a string, as Claude Code puts it in place
      // of an output, or further in when it names a hook output's saved file, as outside hook records (a mention
      // of the tag names none).
      this.skipType(`attachment:${attachmentType}`);
      const strings: string[] = [];
      collectStrings(attachment, strings);
      const hookName = this.hookNameFor(attachment, hookEvent, sessionId);
      const markers = strings.filter(mayHoldMarker).flatMap((text) => findPersistedOutputs(text).filter((m) => isMarkerText(text) || isHookOutputPath(m.savedPath)));
      let index = 0;
      for (const marker of markers) {
        await this.emitPersisted(marker, { hookName, hookEvent, command: commandOf(attachment), field: 'stdout', chars: null }, ctx, index++);
      }
    }
  }

  /** A command's run: its plain stdout is one output (delivered or persisted); its JSON fields wait for their delivery records. */
  private async considerRun(attachment: Record<string, unknown>, outcome: HookOutcome, hookEvent: string, ctx: RecordContext, pending: PendingOutputs): Promise<void> {
    const hookName = stringField(attachment.hookName) ?? hookEvent;
    const command = commandOf(attachment);
    this.latestHookName.set(`${ctx.sessionId}\u0000${hookEvent}`, hookName);
    await this.emit({ kind: 'run', id: ctx.recordId, sessionId: ctx.sessionId, hookName, hookEvent, command, outcome, timestamp: ctx.timestamp, file: ctx.file, lineNumber: ctx.lineNumber });

    const stdout = typeof attachment.stdout === 'string' ? attachment.stdout : undefined;
    const content = contentStrings(attachment.content).join('');
    const where = { hookName, hookEvent, command };
    const markers = isMarkerText(content) ? hookOutputMarkers(content, stdout) : [];
    if (markers.length > 0) {
      // Plain stdout over the cap: the raw stdout (when the record holds it) gives the size.
      const chars = stdout !== undefined && !isMarkerText(stdout) ? stdout.length : null;
      let index = 0;
      for (const marker of markers) await this.emitPersisted(marker, { ...where, field: 'stdout', chars }, ctx, index++);
      return;
    }
    if (outcome !== 'success') return;
    if (content.length > 0) {
      await this.emitOutput({ ...where, field: 'stdout', outcome: 'delivered', chars: content.length, saved: undefined }, ctx, `${ctx.recordId}#stdout`);
      return;
    }
    if (stdout === undefined || stdout.length === 0) return;
    const measured = measureStdout(stdout, stdout.length, true, undefined);
    if (measured.format !== 'json') return;
    const toolUseId = stringField(attachment.toolUseID);
    for (const output of measured.outputs) {
      // An empty string cannot have been saved to a file, and its delivery record (if any) is skipped: delivered.
      if (output.sent === 0) {
        await this.emitOutput({ ...where, field: output.kind, outcome: 'delivered', chars: 0, saved: undefined }, ctx, `${ctx.recordId}#${output.kind}`);
        continue;
      }
      pending.add({
        runId: ctx.recordId, sessionId: ctx.sessionId, hookName, hookEvent, toolUseId, command, kind: output.kind,
        chars: output.sent, digest: digestOf(output.content), timestamp: ctx.timestamp,
      });
    }
  }

  /**
   * The firing (one firing of a hook event, all its commands) a hook record belongs to. Claude Code 2.1.332 names
   * the firing in a record's `toolUseID` (the tool call's id for tool events, an id generated per firing for the
   * others), except in SessionStart's `hook_additional_context`, whose toolUseID is only the event's name and tells
   * no firing from another; a record without a toolUseID tells none either. It writes the records of one firing
   * one after the other, each the child (`parentUuid`) of the record before it, and the next firing of the event
   * only after other records (the next prompt, the model's reply). So a record that does not name its firing
   * belongs to the firing of its parent when that parent is the session's hook record just before it, of the same
   * event, and starts a firing of its own otherwise.
   */
  private firingOf(record: Record<string, unknown>, attachment: Record<string, unknown>, hookEvent: string, ctx: RecordContext): string {
    const toolUseId = stringField(attachment.toolUseID);
    let firing: string;
    if (toolUseId !== undefined && toolUseId !== hookEvent) firing = `${ctx.sessionId}\u0000${hookEvent}\u0000${toolUseId}`;
    else {
      const parentUuid = stringField(record.parentUuid);
      const parent = this.lastHookRecord.get(ctx.sessionId);
      firing = parent !== undefined && parentUuid === parent.uuid && parent.hookEvent === hookEvent ? parent.firing : ctx.recordId;
    }
    const uuid = stringField(record.uuid);
    if (uuid !== undefined) this.lastHookRecord.set(ctx.sessionId, { uuid, hookEvent, firing });
    return firing;
  }

  /**
   * A record that delivers JSON output strings: one outcome per string, each linked to the command that printed it.
   * A string no run record accounts for still had a command run (Claude Code 2.1.332 writes no `hook_success` for a
   * UserPromptSubmit command with JSON output): that run is counted, its command unknown, once per command of the
   * firing (firingOf). The transcript does not say which strings one command printed: those of one firing at the
   * same place in their records' content are taken as one command's (its additionalContext and its systemMessage
   * come in two records), unless they are of the same kind, which one command prints once (two commands of one
   * tool event each deliver through a record of their own, both strings first in their content).
   */
  private async considerDelivery(
    attachment: Record<string, unknown>, kind: OutputKind, hookEvent: string, firing: string, ctx: RecordContext, pending: PendingOutputs,
  ): Promise<void> {
    const keys: DeliveryRecordKeys = { sessionId: ctx.sessionId, hookEvent, toolUseId: stringField(attachment.toolUseID), kind };
    const unlinkedName = this.hookNameFor(attachment, hookEvent, ctx.sessionId);
    const unrecordedRun = async (index: number, part = 0): Promise<void> => {
      const place = `${firing}\u0000${index}.${part}`;
      const runs = this.unrecordedRuns.get(place) ?? [];
      const same = runs.find((kinds) => !kinds.has(kind));
      if (same !== undefined) {
        same.add(kind);
        return;
      }
      runs.push(new Set([kind]));
      this.unrecordedRuns.set(place, runs);
      await this.emit({
        kind: 'run', id: `${ctx.recordId}#run${index}${part > 0 ? `.${part}` : ''}`, sessionId: ctx.sessionId, hookName: unlinkedName, hookEvent, command: undefined,
        outcome: 'success', timestamp: ctx.timestamp, file: ctx.file, lineNumber: ctx.lineNumber,
      });
    };
    const entries = contentStrings(attachment.content);
    for (const [index, text] of entries.entries()) {
      // A string the command printed word for word was delivered, even when it starts with a marker (a tool's,
      // relayed by the hook); Claude Code's own marker is never the text a command printed.
      const printed = text.length > 0 && isMarkerText(text) ? pending.claimDelivered(keys, text) : undefined;
      const markers = printed === undefined && isMarkerText(text) ? hookOutputMarkers(text, undefined) : [];
      if (markers.length > 0) {
        let part = 0;
        for (const marker of markers) {
          const link = pending.claimPersisted(keys, marker);
          if (!link) await unrecordedRun(index, part++);
          const where = link ? { hookName: link.hookName, hookEvent, command: link.command, chars: link.chars } : { hookName: unlinkedName, hookEvent, command: undefined, chars: null };
          await this.emitPersisted(marker, { ...where, field: kind }, ctx, index, link && commandOutputId(link));
        }
      } else if (text.length > 0) {
        const link = printed ?? pending.claimDelivered(keys, text);
        if (!link) await unrecordedRun(index);
        const ownId = `${ctx.recordId}#${index}`;
        await this.emitOutput(
          { hookName: link?.hookName ?? unlinkedName, hookEvent, command: link?.command, field: kind, outcome: 'delivered', chars: text.length, saved: undefined },
          ctx,
          link ? commandOutputId(link) : ownId,
          link && ownId,
        );
      }
    }
  }

  /** Markers outside hook records: repeats of outputs already counted, or (rarely) an output no hook record names. */
  private async considerStrayMarkers(record: Record<string, unknown>, at: { file: FileSummary; fallbackSession: string; lineNumber: number }): Promise<void> {
    const strings: string[] = [];
    collectStrings(record, strings);
    const sessionId = stringField(record.sessionId) ?? at.fallbackSession;
    // Only markers of hook output files count (tool results use the same marker), and only those saved in this
    // session's own folder: a tool result can quote another session's marker (grep over ~/.claude/projects).
    const ownSessions = new Set([sessionId, at.fallbackSession]);
    const ours = (savedPath: string | undefined): boolean => {
      const session = savedPathSession(savedPath);
      return session !== undefined && ownSessions.has(session);
    };
    const markers = strings
      .filter(mayHoldMarker)
      .flatMap(findPersistedOutputs)
      .filter((m) => isHookOutputPath(m.savedPath) && ours(m.savedPath) && !this.seenSavedPaths.has(m.savedPath!));
    if (markers.length === 0) return;
    const uuid = stringField(record.uuid);
    const ctx: RecordContext = {
      recordId: uuid ?? `${sessionId}:${basename(at.file.path)}:${at.lineNumber}`, sessionId, timestamp: stringField(record.timestamp), file: at.file.path, lineNumber: at.lineNumber,
    };
    let index = 0;
    for (const marker of markers) {
      await this.emitPersisted(marker, { hookName: '(unknown hook)', hookEvent: '(unknown event)', command: undefined, field: 'stdout', chars: null }, ctx, index++);
    }
  }

  /** The hook name of a delivery record as telemetry names it: its own when it has a matcher, else that of the latest run of its event. */
  private hookNameFor(attachment: Record<string, unknown>, hookEvent: string, sessionId: string): string {
    const own = stringField(attachment.hookName);
    if (own !== undefined && own !== hookEvent) return own;
    return this.latestHookName.get(`${sessionId}\u0000${hookEvent}`) ?? own ?? hookEvent;
  }

  private async emitPersisted(
    marker: PersistedOutput,
    where: { hookName: string; hookEvent: string; command: string | undefined; field: OutputKind; chars: number | null },
    ctx: RecordContext,
    index: number,
    commandOutput?: string,
  ): Promise<void> {
    if (marker.savedPath !== undefined) {
      // The same saved file quoted again (a resumed session, a rewritten record) is one output.
      if (this.seenSavedPaths.has(marker.savedPath)) return;
      this.seenSavedPaths.add(marker.savedPath);
    }
    const ownId = marker.savedPath !== undefined ? `saved:${marker.savedPath}` : `${ctx.recordId}#persisted${index}`;
    const chars = where.chars ?? (await savedOutputChars(marker.savedPath, ctx));
    await this.emitOutput({ ...where, chars, outcome: 'persisted', saved: marker }, ctx, commandOutput ?? ownId, commandOutput && ownId);
  }

  private async emitUnconfirmed(entry: PendingOutput, file: string): Promise<void> {
    await this.emit({
      kind: 'output', id: commandOutputId(entry), sessionId: entry.sessionId, hookName: entry.hookName, hookEvent: entry.hookEvent,
      command: entry.command, field: entry.kind, outcome: 'unconfirmed', chars: entry.chars, saved: undefined, timestamp: entry.timestamp, file, lineNumber: 0,
    });
  }

  private async emitOutput(
    what: { hookName: string; hookEvent: string; command: string | undefined; field: OutputKind; outcome: OutputOutcome; chars: number | null; saved: PersistedOutput | undefined },
    ctx: RecordContext,
    id: string,
    previousId?: string,
  ): Promise<void> {
    await this.emit({
      kind: 'output', id, ...(previousId === undefined ? {} : { previousId }), sessionId: ctx.sessionId, timestamp: ctx.timestamp, file: ctx.file,
      lineNumber: ctx.lineNumber, ...what,
    });
  }

  private async emit(finding: Finding): Promise<void> {
    this.tally(finding);
    if (this.sink) await this.sink(finding);
  }

  private skipType(type: string): void {
    const counts = this.totals.skippedRecordTypes;
    const key = type in counts || Object.keys(counts).length < MAX_SKIPPED_TYPES ? type : '(other)';
    counts[key] = (counts[key] ?? 0) + 1;
  }

  private tally(finding: Finding): void {
    addFinding(this.totals, finding);
    tallyHook(this.hooks, finding);
    let session = this.sessions.get(finding.sessionId);
    if (!session) {
      session = { summary: { sessionId: finding.sessionId, ...emptyCounts() }, files: new Set(), hooks: new Map() };
      this.sessions.set(finding.sessionId, session);
    }
    addFinding(session.summary, finding);
    session.files.add(finding.file);
    tallyHook(session.hooks, finding);

    if (finding.kind === 'output' && finding.saved !== undefined && this.persistedOutputs.length < MAX_LISTED_PERSISTED) {
      this.persistedOutputs.push({
        ...finding.saved,
        preview: headCodeUnits(finding.saved.preview, PREVIEW_CHARS),
        sessionId: finding.sessionId,
        hookName: finding.hookName,
        command: finding.command,
        chars: finding.chars,
        file: finding.file,
        lineNumber: finding.lineNumber,
      });
    }
  }

  /** The totals so far; hooks, commands and sessions sorted with the most persisted first. */
  result(): ScanResult {
    return {
      files: [...this.files],
      totals: { ...this.totals, skippedRecordTypes: { ...this.totals.skippedRecordTypes } },
      hooks: hookSummaries(this.hooks),
      sessions: [...this.sessions.values()]
        .map(({ summary, files, hooks }) => ({ ...summary, files: [...files], hooks: hookSummaries(hooks) }))
        .sort(byPersisted),
      persistedOutputs: [...this.persistedOutputs],
    };
  }
}

/**
 * Size of a persisted output from the file Claude Code saved it to, when the record does not show it: the path
 * the marker names, or the same file in the `<session>/tool-results/` folder beside the transcript (a copied or
 * moved projects folder). Null when neither is there or the file is too large to read.
 */
async function savedOutputChars(savedPath: string | undefined, ctx: RecordContext): Promise<number | null> {
  if (savedPath === undefined) return null;
  const name = basename(savedPath);
  const session = basename(dirname(dirname(savedPath)));
  for (const candidate of [savedPath, join(dirname(ctx.file), session, 'tool-results', name), join(dirname(ctx.file), 'tool-results', name)]) {
    try {
      const info = await stat(candidate);
      if (!info.isFile() || info.size > MAX_CAPTURED_STDOUT_BYTES) continue;
      return (await readFile(candidate, 'utf8')).length;
    } catch {
      // Not there: try the next place.
    }
  }
  return null;
}

/**
 * The id of a JSON output string of a command's run, whatever its outcome: one transcript sent while Claude Code
 * was still writing the string's delivery record gives it as unconfirmed, the same sent again complete gives its
 * outcome under the same id, which hookwatch then stores in place of the unconfirmed one. The previous release
 * gave a linked string the delivery record's id and the string's place, or the saved file (HookOutput.previousId).
 */
function commandOutputId(entry: PendingOutput): string {
  return `${entry.runId}#${entry.kind}`;
}

function byPersisted<T extends DeliveryCounts>(a: T, b: T): number {
  return b.outputsPersisted - a.outputsPersisted || b.runs - a.runs || b.outputs - a.outputs;
}

function tallyHook(hooks: Map<string, HookCounts>, finding: Finding): void {
  const key = `${finding.hookEvent}\u0000${finding.hookName}`;
  let hook = hooks.get(key);
  if (!hook) {
    hook = { summary: { hookName: finding.hookName, hookEvent: finding.hookEvent, ...emptyCounts() }, commands: new Map() };
    hooks.set(key, hook);
  }
  addFinding(hook.summary, finding);
  const command = finding.command ?? UNKNOWN_COMMAND;
  let row = hook.commands.get(command);
  if (!row) {
    row = { command, ...emptyCounts() };
    hook.commands.set(command, row);
  }
  addFinding(row, finding);
}

function hookSummaries(hooks: Map<string, HookCounts>): HookSummary[] {
  return [...hooks.values()].map(({ summary, commands }) => ({ ...summary, commands: [...commands.values()].sort(byPersisted) })).sort(byPersisted);
}

/**
 * The markers of a hook output string that starts with one and stands for an output Claude Code saved: none when
 * the raw stdout beside it is that same string or within the cap (Claude Code delivered it: a hook relaying a
 * tool's marker), and only those naming a hook output's saved file (`tool-results/hook-...`), not a tool's.
 */
function hookOutputMarkers(text: string, stdout: string | undefined): PersistedOutput[] {
  if (stdout !== undefined && (stdout === text || stdout.length <= OUTPUT_CAP_CHARS)) return [];
  return findPersistedOutputs(text).filter((marker) => isHookOutputPath(marker.savedPath));
}

/** The command a hook record names, with credential-looking values redacted (it is reported and may be sent). */
function commandOf(attachment: Record<string, unknown>): string | undefined {
  const command = stringField(attachment.command);
  return command === undefined ? undefined : redactCommand(command);
}

function stringField(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function isBlank(bytes: Buffer): boolean {
  for (const byte of bytes) if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return false;
  return true;
}
