/**
 * Transcript findings: what `hookwatch scan --send` reports from Claude Code transcripts (command runs and
 * output outcomes), as OTLP log records of their own event name. They are stored apart from telemetry's
 * hook_execution_complete events, by their stable id, so sending the same transcripts again counts nothing twice
 * and telemetry figures never include them.
 */
import type { AnyValue, LogRecord, LogsRequest } from '../otlp/model.ts';
import { hookId, recordTime } from './extract.ts';
import { redactCommand } from './redact-command.ts';
import { runToEnd } from '../paced.ts';
import { RecordCollector, collect, type RecordExtract } from './record-extract.ts';

/** The event name (attribute event.name and body) of a transcript finding. */
export const FINDING_EVENT_NAME = 'hookwatch.transcript_finding';

/** Attribute keys of a finding record (all values strings, numbers included, like Claude Code's). */
export const FINDING_ATTRIBUTES = {
  id: 'hookwatch.finding.id',
  /** The id the previous release gave the same output (scan --send of the same transcripts before an upgrade). */
  previousId: 'hookwatch.finding.previous_id',
  kind: 'hookwatch.finding.kind',
  source: 'hookwatch.source',
  timestamp: 'event.timestamp',
  session: 'session.id',
  hookEvent: 'hook_event',
  hookName: 'hook_name',
  command: 'hook_command',
  runOutcome: 'run_outcome',
  field: 'output_field',
  outcome: 'output_outcome',
  chars: 'output_chars',
} as const;

export const FINDING_KINDS = ['run', 'output'] as const;
export const OUTPUT_OUTCOMES = ['delivered', 'persisted', 'unconfirmed'] as const;

/** A finding as stored. */
export interface TranscriptFinding {
  id: string;
  /** The id the previous release's `scan --send` gave the same output: stored under it, the finding is not stored again. */
  previousId?: string;
  kind: (typeof FINDING_KINDS)[number];
  hookId: string;
  hookEvent: string;
  hookName: string;
  /** The command; empty when the transcript does not name it. */
  command: string;
  sessionId: string;
  timeMs: number;
  /** Output field (stdout, additionalContext, ...) or the run's outcome (success, blocking, ...). */
  field: string;
  /** Output outcome; empty for a run. */
  outcome: string;
  chars: number | null;
}

const MAX_ID = 2048;
const MAX_NAME = 1024;
/** Longer commands are cut (a command line is not a place for data). */
export const MAX_COMMAND = 2048;
/**
 * How far past MAX_COMMAND a longer command is read to redact it (redaction takes time linear in what it reads,
 * from any sender): a credential that begins before the cut and is at most this long is redacted whole.
 */
const COMMAND_MARGIN = 256;
const MAX_CHARS = 0xffffffff;

/** True for a transcript finding record. */
export function isTranscriptFinding(rec: LogRecord): boolean {
  const name = rec.attributes.get('event.name');
  return name === FINDING_EVENT_NAME || rec.eventName === FINDING_EVENT_NAME || (name === undefined && rec.body === FINDING_EVENT_NAME);
}

export interface FindingExtract {
  findings: TranscriptFinding[];
  rejected: number;
  problems: string[];
}

/** Takes the findings among the records it visits, for a walk shared with other kinds of records. */
export function findingCollector(now: () => number = Date.now): RecordCollector<TranscriptFinding> {
  return new RecordCollector(isTranscriptFinding, (rec) => toFinding(rec, now), (err): err is Error => err instanceof FindingProblem);
}

/** What a findingCollector took, its commands as stored (storedCommand). */
export function findingExtract(taken: RecordExtract<TranscriptFinding>): FindingExtract {
  return runToEnd(findingExtractSteps(taken));
}

/**
 * findingExtract in slices of at most REDACT_SLICE_MS: redacting a command costs up to milliseconds (linear in the
 * MAX_COMMAND + COMMAND_MARGIN characters read), and one request may carry thousands of findings, each with a
 * command of its own. Each distinct command is redacted once.
 */
export function* findingExtractSteps({ items, rejected, problems }: RecordExtract<TranscriptFinding>): Generator<void, FindingExtract, void> {
  const stored = new Map<string, string>();
  let sliceFrom = performance.now();
  for (const finding of items) {
    let command = stored.get(finding.command);
    if (command === undefined) {
      if (performance.now() - sliceFrom > REDACT_SLICE_MS) {
        yield;
        sliceFrom = performance.now();
      }
      command = storedCommand(finding.command);
      stored.set(finding.command, command);
    }
    finding.command = command;
  }
  return { findings: items, rejected, problems };
}

/** The longest a slice of findingExtractSteps runs before the event loop is served. */
const REDACT_SLICE_MS = 10;

/** The findings of a request; a record that cannot be used is rejected on its own with a reason. */
export function extractTranscriptFindings(req: LogsRequest, now: () => number = Date.now): FindingExtract {
  return findingExtract(collect(req, findingCollector(now)));
}

class FindingProblem extends Error {}

function toFinding(rec: LogRecord, now: () => number): TranscriptFinding {
  const get = (key: string, limit: number, required: boolean): string => {
    const value: AnyValue | undefined = rec.attributes.get(key);
    if (value === undefined || value === null || value === '') {
      if (required) throw new FindingProblem(`${key} is missing`);
      return '';
    }
    if (typeof value !== 'string') throw new FindingProblem(`${key} must be a string`);
    return value.length > limit ? value.slice(0, limit) : value;
  };
  const id = get(FINDING_ATTRIBUTES.id, MAX_ID + 1, true);
  if (id.length > MAX_ID) throw new FindingProblem(`${FINDING_ATTRIBUTES.id} longer than ${MAX_ID} characters`);
  const previousId = get(FINDING_ATTRIBUTES.previousId, MAX_ID + 1, false);
  if (previousId.length > MAX_ID) throw new FindingProblem(`${FINDING_ATTRIBUTES.previousId} longer than ${MAX_ID} characters`);
  const kind = get(FINDING_ATTRIBUTES.kind, 16, true);
  if (!(FINDING_KINDS as readonly string[]).includes(kind)) throw new FindingProblem(`${FINDING_ATTRIBUTES.kind} must be one of ${FINDING_KINDS.join(', ')}`);
  const hookEvent = get(FINDING_ATTRIBUTES.hookEvent, MAX_NAME + 1, true);
  const hookName = get(FINDING_ATTRIBUTES.hookName, MAX_NAME + 1, false) || hookEvent;
  if (hookEvent.length > MAX_NAME) throw new FindingProblem(`${FINDING_ATTRIBUTES.hookEvent} longer than ${MAX_NAME} characters`);
  if (hookName.length > MAX_NAME) throw new FindingProblem(`${FINDING_ATTRIBUTES.hookName} longer than ${MAX_NAME} characters`);
  let outcome = '';
  let field: string;
  let chars: number | null = null;
  if (kind === 'output') {
    outcome = get(FINDING_ATTRIBUTES.outcome, 16, true);
    if (!(OUTPUT_OUTCOMES as readonly string[]).includes(outcome)) throw new FindingProblem(`${FINDING_ATTRIBUTES.outcome} must be one of ${OUTPUT_OUTCOMES.join(', ')}`);
    field = get(FINDING_ATTRIBUTES.field, 64, true);
    const rawChars = get(FINDING_ATTRIBUTES.chars, 16, false);
    if (rawChars !== '') {
      if (!/^\d{1,10}$/.test(rawChars) || Number(rawChars) > MAX_CHARS) throw new FindingProblem(`${FINDING_ATTRIBUTES.chars} ${JSON.stringify(rawChars)} is not a whole number of characters`);
      chars = Number(rawChars);
    }
  } else {
    field = get(FINDING_ATTRIBUTES.runOutcome, 64, false) || 'success';
  }
  const timeMs = recordTime(rec, get(FINDING_ATTRIBUTES.timestamp, 64, false), now);
  return {
    id, ...(previousId === '' ? {} : { previousId }), kind: kind as TranscriptFinding['kind'], hookId: hookId(hookEvent, hookName), hookEvent, hookName,
    // As read; findingExtractSteps makes it the command stored, off this walk over the records.
    command: get(FINDING_ATTRIBUTES.command, MAX_COMMAND + COMMAND_MARGIN + 1, false), sessionId: get(FINDING_ATTRIBUTES.session, MAX_NAME, false),
    timeMs, field, outcome, chars,
  };
}

/**
 * The command as stored and served: credential-looking values redacted (redact-command.ts) whoever sent it (`scan`
 * redacts before sending; an older one, or another sender, may not), then cut to MAX_COMMAND. Of a command longer
 * than what is read, the last COMMAND_MARGIN characters read are left out too: a credential cut there could be
 * too short to be recognised.
 */
function storedCommand(read: string): string {
  if (read.length <= MAX_COMMAND + COMMAND_MARGIN) return redactCommand(read).slice(0, MAX_COMMAND);
  const redacted = redactCommand(read.slice(0, MAX_COMMAND + COMMAND_MARGIN));
  return redacted.slice(0, Math.min(MAX_COMMAND, redacted.length - COMMAND_MARGIN));
}

/**
 * A command stored before the server redacted commands, as it would be stored now: redacted, and of one cut at
 * MAX_COMMAND, the last COMMAND_MARGIN characters left out as storedCommand does (a credential cut there could be
 * too short to be recognised).
 */
export function redactStoredCommand(command: string): string {
  const redacted = redactCommand(command);
  return command.length < MAX_COMMAND ? redacted : redacted.slice(0, Math.min(MAX_COMMAND, redacted.length - COMMAND_MARGIN));
}
