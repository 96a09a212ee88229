/**
 * Storage of transcript findings (`hookwatch scan --send`), shared by both backends: a table of its own, apart
 * from telemetry's events and rollups, keyed by the finding's stable id so a finding sent twice is stored once.
 */
import type { TranscriptCommandRow } from './model.ts';
import { redactStoredCommand, type TranscriptFinding } from '../hooks/transcript-findings.ts';

/** The schema migration that adds the table (appended to each backend's MIGRATIONS). */
export function transcriptFindingsDdl(int: string): string {
  return `
    CREATE TABLE IF NOT EXISTS transcript_findings (
      finding_id TEXT PRIMARY KEY,
      kind TEXT NOT NULL,
      hook_id TEXT NOT NULL,
      hook_event TEXT NOT NULL,
      hook_name TEXT NOT NULL,
      command TEXT NOT NULL,
      session_id TEXT NOT NULL,
      time_ms ${int} NOT NULL,
      field TEXT NOT NULL,
      outcome TEXT NOT NULL,
      chars ${int}
    );
    CREATE INDEX IF NOT EXISTS transcript_findings_hook_time ON transcript_findings (hook_id, time_ms);
  `;
}

/**
 * The schema migration that redacts the commands stored before the server redacted them (a sender other than the
 * current `scan` may have sent credentials): each distinct command once (hooks/transcript-findings.ts
 * redactStoredCommand, `redact` its SQL function on SQLite), every row of it rewritten. Commands are no key: two
 * commands that become one are counted as one by commandsQuery's GROUP BY, no row is merged or lost.
 */
export function redactStoredCommandsSql(redact: string): string {
  return `
    CREATE TEMPORARY TABLE hookwatch_redacted AS
      SELECT command AS old, ${redact}(command) AS new FROM (SELECT DISTINCT command FROM transcript_findings WHERE command <> '') AS c;
    DELETE FROM hookwatch_redacted WHERE old = new;
    UPDATE transcript_findings SET command = (SELECT new FROM hookwatch_redacted WHERE old = transcript_findings.command)
      WHERE command IN (SELECT old FROM hookwatch_redacted);
    DROP TABLE hookwatch_redacted;
  `;
}

/**
 * The same on PostgreSQL, which cannot call the redaction in SQL: the distinct commands are read, redacted here and
 * written back in one statement, in the migration's transaction.
 */
export async function redactStoredCommands(query: (sql: string, params?: unknown[]) => Promise<{ rows: { command: string }[] }>): Promise<number> {
  const olds: string[] = [];
  const news: string[] = [];
  for (const { command } of (await query(`SELECT DISTINCT command FROM transcript_findings WHERE command <> ''`)).rows) {
    const redacted = redactStoredCommand(command);
    if (redacted !== command) {
      olds.push(command);
      news.push(redacted);
    }
  }
  if (olds.length > 0) {
    await query(`UPDATE transcript_findings AS f SET command = r.new FROM unnest($1::text[], $2::text[]) AS r (old, new) WHERE f.command = r.old`, [olds, news]);
  }
  return olds.length;
}

export const FINDING_COLUMNS = ['finding_id', 'kind', 'hook_id', 'hook_event', 'hook_name', 'command', 'session_id', 'time_ms', 'field', 'outcome', 'chars'] as const;

export function findingValues(f: TranscriptFinding): (string | number | null)[] {
  return [f.id, f.kind, f.hookId, f.hookEvent, f.hookName, f.command, f.sessionId, f.timeMs, f.field, f.outcome, f.chars];
}

/**
 * How a finding already stored is met again: left as it is (the same transcripts sent again), except an output
 * stored as unconfirmed, which takes the outcome sent since (its transcript was sent while Claude Code was still
 * writing the record that delivered it). A known outcome is never turned back into unconfirmed.
 */
export const FINDING_ON_CONFLICT = `ON CONFLICT (finding_id) DO UPDATE SET outcome = excluded.outcome, chars = excluded.chars
  WHERE transcript_findings.outcome = 'unconfirmed' AND excluded.outcome IN ('delivered', 'persisted')`;

/**
 * True for a finding not stored under the id the previous release's `scan --send` gave the same output
 * (TranscriptFinding.previousId, `param` its SQL parameter or column; NULL when it has none): an output that
 * release stored is not stored a second time under its current id when the same transcripts are sent again.
 */
export function notStoredUnderPreviousId(param: string): string {
  return `NOT EXISTS (SELECT 1 FROM transcript_findings AS stored WHERE stored.finding_id = ${param})`;
}

/**
 * Each finding id of a batch once (one statement may not store a row twice): of an output named twice, the
 * finding with its outcome known.
 */
export function uniqueFindings(findings: readonly TranscriptFinding[]): TranscriptFinding[] {
  const byId = new Map<string, TranscriptFinding>();
  for (const f of findings) {
    const had = byId.get(f.id);
    if (had === undefined || (had.outcome === 'unconfirmed' && (f.outcome === 'delivered' || f.outcome === 'persisted'))) byId.set(f.id, f);
  }
  return [...byId.values()];
}

/** Per-command figures of one hook over [from, to); `p(n)` renders the n-th (1-based) parameter: hook id, from, to. */
export function commandsQuery(p: (n: number) => string): string {
  return `
    SELECT command,
      SUM(CASE WHEN kind = 'run' THEN 1 ELSE 0 END) AS runs,
      SUM(CASE WHEN kind = 'output' AND outcome IN ('delivered', 'persisted') THEN 1 ELSE 0 END) AS outputs,
      SUM(CASE WHEN kind = 'output' AND outcome = 'delivered' THEN 1 ELSE 0 END) AS delivered,
      SUM(CASE WHEN kind = 'output' AND outcome = 'persisted' THEN 1 ELSE 0 END) AS persisted,
      SUM(CASE WHEN kind = 'output' AND outcome = 'unconfirmed' THEN 1 ELSE 0 END) AS unconfirmed,
      MAX(CASE WHEN kind = 'output' THEN chars END) AS largest_output,
      MAX(CASE WHEN kind = 'output' AND outcome = 'delivered' THEN chars END) AS largest_delivered,
      COUNT(DISTINCT session_id) AS sessions
    FROM transcript_findings
    WHERE hook_id = ${p(1)} AND time_ms >= ${p(2)} AND time_ms < ${p(3)}
    GROUP BY command
    ORDER BY persisted DESC, runs DESC, command`;
}

/** A row of commandsQuery as the store gives it (drivers return counts as numbers, bigints or strings). */
export function toCommandRow(row: Record<string, unknown>): TranscriptCommandRow {
  const n = (v: unknown): number => Number(v ?? 0);
  const nullable = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
  return {
    command: String(row.command ?? ''),
    runs: n(row.runs),
    outputs: n(row.outputs),
    delivered: n(row.delivered),
    persisted: n(row.persisted),
    unconfirmed: n(row.unconfirmed),
    largestOutputChars: nullable(row.largest_output),
    largestDeliveredChars: nullable(row.largest_delivered),
    sessions: n(row.sessions),
  };
}

/** What storing a batch of findings did. */
export interface FindingsResult {
  inserted: number;
  /**
   * Findings already stored (the same transcripts sent again, outputs the previous release stored under their
   * previous id included), an output's unconfirmed outcome not counted as one.
   */
  duplicates: number;
}
