/**
 * Recognises the records `hookwatch guard --report` sends (event.name `hookwatch.guard_trim`, one per output it
 * trimmed) and turns them into rows for the store. They name the hook the way Claude Code's telemetry does, so
 * they land on the same hook page; they never count as executions.
 */
import { createHash } from 'node:crypto';

import { GUARD_FIELDS, GUARD_TRIM_EVENT, GUARD_TRIM_UID, type GuardField } from '../../../shared/src/guard-trims.ts';
import type { AnyValue, LogRecord, LogsRequest } from '../otlp/model.ts';
import type { GuardTrim } from '../store/guard-trims.ts';
import { hookId, parseCount, recordTime } from './extract.ts';
import { RecordCollector, collect, type RecordExtract } from './record-extract.ts';

const MAX_NAME = 1024;

/** Guard trims found in a request, and the guard records that could not be used. */
export interface GuardTrimExtract {
  trims: GuardTrim[];
  rejected: number;
  problems: string[];
}

/** True for a guard trim record (by attribute event.name, LogRecord event_name or body). */
export function isGuardTrim(rec: LogRecord): boolean {
  return rec.attributes.get('event.name') === GUARD_TRIM_EVENT || rec.eventName === GUARD_TRIM_EVENT || rec.body === GUARD_TRIM_EVENT;
}

function str(value: AnyValue | undefined, key: string, required: boolean): string {
  if (value === undefined || value === null) {
    if (required) throw new Error(`${key} is missing`);
    return '';
  }
  if (typeof value !== 'string') throw new Error(`${key} must be a string`);
  if (value.length > MAX_NAME) throw new Error(`${key} longer than ${MAX_NAME} characters`);
  return value.trim();
}

function toTrim(rec: LogRecord, now: () => number): GuardTrim {
  const get = (k: string): AnyValue | undefined => rec.attributes.get(k);
  const hookEvent = str(get('hook_event'), 'hook_event', true);
  if (hookEvent === '') throw new Error('hook_event is missing');
  const hookName = str(get('hook_name'), 'hook_name', false) || hookEvent;
  const field = str(get('field'), 'field', true);
  if (!(GUARD_FIELDS as readonly string[]).includes(field)) throw new Error(`field "${field.slice(0, 60)}" is not one of ${GUARD_FIELDS.join(', ')}`);
  const sentChars = parseCount(get('sent_chars'), 'sent_chars');
  const keptChars = parseCount(get('kept_chars'), 'kept_chars');
  if (sentChars === null || keptChars === null) throw new Error('sent_chars and kept_chars are required');
  const stamp = get('event.timestamp');
  const timeMs = recordTime(rec, stamp, now);
  const sessionId = typeof get('session.id') === 'string' ? (get('session.id') as string).slice(0, MAX_NAME) : '';
  const uid = str(get(GUARD_TRIM_UID), GUARD_TRIM_UID, false);
  // A retried request resends the same record: its content is its identity, with the guard's id of the trim when it
  // sends one (two identical commands of one event, run in parallel, trim alike in the same millisecond).
  const content = [hookEvent, hookName, field, sentChars, keptChars, sessionId, typeof stamp === 'string' ? stamp : '', rec.timeUnixNano.toString()];
  const material = (uid === '' ? content : [...content, uid]).join('\u0000');
  return {
    dedupKey: createHash('sha1').update(material).digest('base64url'),
    hookId: hookId(hookEvent, hookName),
    hookEvent,
    hookName,
    timeMs,
    field: field as GuardField,
    sentChars,
    keptChars,
    sessionId,
  };
}

/** Takes the guard trims among the records it visits, for a walk shared with other kinds of records. */
export function guardTrimCollector(now: () => number = Date.now): RecordCollector<GuardTrim> {
  return new RecordCollector(isGuardTrim, (rec) => toTrim(rec, now), (err): err is Error => err instanceof Error);
}

/** What a guardTrimCollector took. */
export function guardTrimExtract({ items, rejected, problems }: RecordExtract<GuardTrim>): GuardTrimExtract {
  return { trims: items, rejected, problems };
}

/** Every guard trim record of a request; a bad one is rejected on its own, never the batch. */
export function extractGuardTrims(req: LogsRequest, now: () => number = Date.now): GuardTrimExtract {
  return guardTrimExtract(collect(req, guardTrimCollector(now)));
}
