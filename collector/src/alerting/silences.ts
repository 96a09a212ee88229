/**
 * Silences as Alertmanager has them: matchers (=, !=, =~, !~, regexes anchored), a window, and who and why.
 * Regexes are RE2 (re2js), as in Alertmanager, which relies on Go's RE2: matching is linear in the input, so no
 * pattern can freeze the process on a long label value. Perl-only syntax (backreferences, lookaround) is refused.
 */
import { randomUUID } from 'node:crypto';
import { RE2JS } from 're2js';
import type { Silence, SilenceMatcher } from '../../../shared/src/api.ts';
import type { SilenceRecord } from './model.ts';
import { BadParameterError, echoed } from '../request-error.ts';
import { nearestName } from '../config/env-names.ts';
import { formatRfc3339, parseRfc3339 } from '../rfc3339.ts';

/** A silence request the API could not accept; the message and `parameter` name the field. */
export class SilenceError extends BadParameterError {
  override name = 'SilenceError';
}

const MAX_MATCHERS = 20;
/** A label name as alerts carry them (Prometheus' label name syntax). */
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]{0,127}$/;
const MAX_REGEX = 256;
const regexCache = new Map<string, RE2JS | Error>();

/** The compiled pattern, or the reason RE2 cannot compile it; both cached. */
function compiled(pattern: string): RE2JS | Error {
  let re = regexCache.get(pattern);
  if (!re) {
    try {
      re = RE2JS.compile(pattern);
    } catch (err) {
      re = err instanceof Error ? err : new Error(String(err));
    }
    if (regexCache.size > 1000) regexCache.clear();
    regexCache.set(pattern, re);
  }
  return re;
}

/** Anchored at both ends, as Alertmanager anchors matchers. A pattern RE2 refuses (only possible for silences
 * stored before patterns were checked with RE2) matches nothing rather than failing every alert read. */
function fullMatch(pattern: string, value: string): boolean {
  const re = compiled(pattern);
  return re instanceof Error ? false : re.matches(value);
}

/**
 * True when one matcher accepts the labels (a missing label is the empty string, as in Alertmanager). A dotted
 * name, which only a silence made before such names were refused can hold, reads the label it stands for (alert
 * labels write a dimension's dots as _): organization.id matches organization_id, as its author meant.
 */
export function matcherMatches(m: SilenceMatcher, labels: Record<string, string>): boolean {
  const value = labels[m.name.includes('.') ? m.name.replace(/\./g, '_') : m.name] ?? '';
  const hit = m.isRegex ? fullMatch(m.value, value) : value === m.value;
  return (m.isEqual ?? true) ? hit : !hit;
}

/** True when every matcher accepts the labels. */
export function silenceMatches(s: SilenceRecord, labels: Record<string, string>): boolean {
  return s.matchers.every((m) => matcherMatches(m, labels));
}

/** active, pending (starts later) or expired, at `now`. */
export function silenceState(s: SilenceRecord, now: number): Silence['state'] {
  if (s.endsAtMs <= now) return 'expired';
  if (s.startsAtMs > now) return 'pending';
  return 'active';
}

/** The API shape of a silence. */
export function toSilence(s: SilenceRecord, now: number): Silence {
  return {
    id: s.id,
    matchers: s.matchers,
    startsAt: formatRfc3339(s.startsAtMs),
    endsAt: formatRfc3339(s.endsAtMs),
    createdBy: s.createdBy,
    comment: s.comment,
    state: silenceState(s, now),
  };
}

function time(v: unknown, field: string): number {
  const t = typeof v === 'string' ? parseRfc3339(v) : undefined;
  // A day not on the calendar (2027-02-30) is refused, not rolled over into the next month.
  if (t === undefined) throw new SilenceError(field, `${field} must be an RFC 3339 time such as 2026-11-30T12:00:00Z, on a day of the calendar`);
  return t;
}

/**
 * PostgreSQL keeps no NUL in JSON (the silence could never be stored there, and a retry would fail the same way),
 * and no alert label holds one (ingest refuses it): refused on every store alike.
 */
function noNul(v: string, field: string): void {
  if (v.includes('\u0000')) throw new SilenceError(field, `${field} contains a NUL character (\\u0000), which a silence cannot hold`);
}

/** The label names alerts can carry now (settings.ts alertLabelNames), and those of alerting.externalLabels. */
export interface AlertLabelNames {
  carried: readonly string[];
  external: readonly string[];
}

/**
 * What to tell the author of a silence whose matchers name a label no alert can carry with the rules configured
 * now: one line per such label, naming it and the labels alerts carry. The silence is taken all the same, as
 * Alertmanager takes it (a rule added by a reload may carry the label), but such a matcher reads the label as
 * empty: an = or =~ one that the empty string fails mutes nothing, a != or !~ one holds for every alert. An
 * external label is said as such: hookwatch's alerts do not carry it, only what its receivers are sent.
 */
export function silenceWarnings(matchers: readonly SilenceMatcher[], labels: AlertLabelNames): string[] {
  const said = new Set<string>();
  const out: string[] = [];
  matchers.forEach((m, i) => {
    if (labels.carried.includes(m.name) || said.has(m.name)) return;
    said.add(m.name);
    const effect = `this matcher reads it as empty and ${matcherMatches(m, {}) ? 'holds for every alert' : 'matches no alert: the silence mutes nothing'}`;
    const carried = `alerts carry: ${labels.carried.join(', ')}`;
    if (labels.external.includes(m.name)) {
      out.push(`matchers[${i}]: ${m.name} is an external label (alerting.externalLabels), added only to what receivers are sent: the alerts a silence in hookwatch matches do not carry it, and ${effect} (${carried})`);
      return;
    }
    const near = nearestName(m.name, labels.carried);
    out.push(`matchers[${i}]: no alert rule configured gives alerts the label ${m.name}${near ? ` (did you mean ${near}?)` : ''}; until one does, ${effect} (${carried})`);
  });
  return out;
}

/** Validates a POST /api/v1/silences body into a new silence. */
export function parseSilence(body: unknown, now: number): SilenceRecord {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new SilenceError('body', 'expected a JSON object with matchers, endsAt, createdBy and comment');
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) {
    if (!['matchers', 'startsAt', 'endsAt', 'createdBy', 'comment'].includes(k)) throw new SilenceError(k, `unknown field ${echoed(k)}`);
  }
  if (!Array.isArray(b['matchers']) || b['matchers'].length === 0) throw new SilenceError('matchers', 'matchers must be a non-empty list');
  if (b['matchers'].length > MAX_MATCHERS) throw new SilenceError('matchers', `at most ${MAX_MATCHERS} matchers`);
  const matchers: SilenceMatcher[] = b['matchers'].map((m: unknown, i: number) => {
    const f = `matchers[${i}]`;
    if (m === null || typeof m !== 'object' || Array.isArray(m)) throw new SilenceError(f, `${f} must be an object with name and value`);
    const x = m as Record<string, unknown>;
    if (typeof x['name'] !== 'string' || !LABEL_NAME.test(x['name'])) {
      // Alert labels never hold a dot (a groupBy dimension's dots become _): such a matcher would match no label,
      // so a silence on organization.id would mute nothing, and organization.id!=x every alert of its other matchers.
      const hint = typeof x['name'] === 'string' && /^[a-zA-Z_][a-zA-Z0-9_.]{0,127}$/.test(x['name'])
        ? `: alert labels write dots as _ (${x['name'].replace(/\./g, '_')})` : ' (letters, digits and _, not starting with a digit)';
      throw new SilenceError(`${f}.name`, `${f}.name must be a label name${hint}`);
    }
    if (typeof x['value'] !== 'string' || x['value'].length > 1024) throw new SilenceError(`${f}.value`, `${f}.value must be a string of at most 1024 characters`);
    noNul(x['value'], `${f}.value`);
    for (const flag of ['isRegex', 'isEqual']) {
      if (x[flag] !== undefined && typeof x[flag] !== 'boolean') throw new SilenceError(`${f}.${flag}`, `${f}.${flag} must be true or false`);
    }
    const isRegex = x['isRegex'] === true;
    if (isRegex) {
      if (x['value'].length > MAX_REGEX) throw new SilenceError(`${f}.value`, `${f}.value: a regex may be at most ${MAX_REGEX} characters`);
      const re = compiled(x['value']);
      if (re instanceof Error) throw new SilenceError(`${f}.value`, `${f}.value is not a valid RE2 regular expression: ${re.message}`);
    }
    return { name: x['name'], value: x['value'], isRegex, isEqual: x['isEqual'] !== false };
  });
  // A silence of = and =~ matchers that all match the empty string would mute every alert: refused, as
  // Alertmanager refuses it. As there, != and !~ never count as matching it (a silence of them alone is taken).
  if (matchers.every((m) => (m.isEqual ?? true) && matcherMatches(m, {}))) throw new SilenceError('matchers', 'at least one matcher must not match the empty string');
  const startsAtMs = b['startsAt'] === undefined ? now : time(b['startsAt'], 'startsAt');
  const endsAtMs = time(b['endsAt'], 'endsAt');
  if (endsAtMs <= startsAtMs) {
    // Without startsAt the silence starts now: an endsAt already passed (a date copied from an example) says so.
    throw new SilenceError('endsAt', b['startsAt'] === undefined ? `endsAt ${String(b['endsAt'])} has passed: a silence without startsAt starts now` : 'endsAt must be later than startsAt');
  }
  if (endsAtMs <= now) throw new SilenceError('endsAt', 'endsAt must be in the future');
  // A start already passed becomes now, as Alertmanager moves a new silence's: the silence mutes from when it is
  // made, and says so, never that it was in force before anyone made it.
  const text = (k: 'createdBy' | 'comment'): string => {
    const v = b[k];
    if (typeof v !== 'string' || v.trim() === '' || v.length > 1000) throw new SilenceError(k, `${k} must be a non-empty string of at most 1000 characters`);
    noNul(v, k);
    return v;
  };
  return { id: randomUUID(), matchers, startsAtMs: Math.max(startsAtMs, now), endsAtMs, createdBy: text('createdBy'), comment: text('comment'), createdAtMs: now };
}
