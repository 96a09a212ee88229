/**
 * Outputs trimmed by `hookwatch guard`, as both backends store them: one row per trimmed output string, in their
 * own table beside the hook events (the guard's records are not Claude Code executions and must not change
 * any hook counter). The SQL is shared; each backend passes its own placeholder style and runner.
 */
import type { GuardField } from '../../../shared/src/guard-trims.ts';
import { floorSql } from './segments.ts';

/** One trimmed output as ingested from a guard record. */
export interface GuardTrim {
  /** Idempotency key: a retried OTLP request stores nothing twice. */
  dedupKey: string;
  hookId: string;
  hookEvent: string;
  hookName: string;
  timeMs: number;
  field: GuardField;
  sentChars: number;
  keptChars: number;
  sessionId: string;
}

/** A hook's trims over a range, bucketed by `stepMs` aligned to the epoch (as series buckets are). */
export interface GuardTrimStats {
  trims: number;
  largest: { field: GuardField; sentChars: number; keptChars: number; timeMs: number } | null;
  buckets: { startMs: number; trims: number; maxSentChars: number; maxKeptChars: number }[];
}

/** The table and its index; `int` is the backend's 64-bit integer type. Idempotent, like every later migration re-run by an upgrade. */
export function guardTrimsDdl(int: string): string {
  return `CREATE TABLE IF NOT EXISTS guard_trims (
    dedup_key TEXT PRIMARY KEY,
    hook_id TEXT NOT NULL,
    hook_event TEXT NOT NULL,
    hook_name TEXT NOT NULL,
    time_ms ${int} NOT NULL,
    field TEXT NOT NULL,
    sent_chars ${int} NOT NULL,
    kept_chars ${int} NOT NULL,
    session_id TEXT NOT NULL
  );
  CREATE INDEX IF NOT EXISTS guard_trims_hook_time ON guard_trims (hook_id, time_ms);`;
}

const COLUMNS = ['dedup_key', 'hook_id', 'hook_event', 'hook_name', 'time_ms', 'field', 'sent_chars', 'kept_chars', 'session_id'] as const;

/**
 * The statements, with placeholders made by `p(n)` (1-based): `?n` for SQLite, `$n` for PostgreSQL; the insert
 * takes `rows` rows. The step is cast so that SQLite, which binds JS numbers as REAL, divides integers.
 */
export function guardTrimSql(p: (n: number) => string, rows = 1): { insert: string; buckets: string; largest: string } {
  const range = `hook_id = ${p(1)} AND time_ms >= ${p(2)} AND time_ms < ${p(3)}`;
  const values = Array.from({ length: rows }, (_, r) => `(${COLUMNS.map((_c, c) => p(r * COLUMNS.length + c + 1)).join(', ')})`);
  const step = `CAST(${p(4)} AS BIGINT)`;
  return {
    insert: `INSERT INTO guard_trims (${COLUMNS.join(', ')}) VALUES ${values.join(', ')} ON CONFLICT (dedup_key) DO NOTHING`,
    buckets: `SELECT ${floorSql('time_ms', step)} AS start_ms, COUNT(*) AS trims, MAX(sent_chars) AS max_sent, MAX(kept_chars) AS max_kept
      FROM guard_trims WHERE ${range} GROUP BY start_ms ORDER BY start_ms`,
    largest: `SELECT field, sent_chars, kept_chars, time_ms FROM guard_trims WHERE ${range} ORDER BY sent_chars DESC, time_ms DESC LIMIT 1`,
  };
}

/** The values of one row, in column order. */
export function guardTrimValues(t: GuardTrim): (string | number)[] {
  return [t.dedupKey, t.hookId, t.hookEvent, t.hookName, t.timeMs, t.field, t.sentChars, t.keptChars, t.sessionId];
}

/** Builds the stats from the rows of the bucket and largest queries (PostgreSQL returns BIGINT as text). */
export function guardTrimStats(bucketRows: Record<string, unknown>[], largestRows: Record<string, unknown>[]): GuardTrimStats {
  const buckets = bucketRows.map((r) => ({ startMs: Number(r.start_ms), trims: Number(r.trims), maxSentChars: Number(r.max_sent), maxKeptChars: Number(r.max_kept) }));
  const top = largestRows[0];
  return {
    trims: buckets.reduce((n, b) => n + b.trims, 0),
    largest: top === undefined ? null : { field: String(top.field) as GuardField, sentChars: Number(top.sent_chars), keptChars: Number(top.kept_chars), timeMs: Number(top.time_ms) },
    buckets,
  };
}
