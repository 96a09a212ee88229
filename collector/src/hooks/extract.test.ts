import { describe, expect, it } from 'vitest';
import type { AnyValue, LogRecord, LogsRequest } from '../otlp/model.ts';
import { classifyExecution } from './cliff.ts';
import { extractHookEvents, hookEventKind, parseCount } from './extract.ts';
import { FINDING_EVENT_NAME, MAX_COMMAND, extractTranscriptFindings } from './transcript-findings.ts';

function record(attrs: Record<string, AnyValue>, extra: Partial<LogRecord> = {}): LogRecord {
  return { timeUnixNano: 1_764_000_000_000_000_000n, observedTimeUnixNano: 0n, eventName: '', body: undefined, attributes: new Map(Object.entries(attrs)), ...extra };
}

function request(records: LogRecord[], resource: Record<string, AnyValue> = {}): LogsRequest {
  return { resourceLogs: [{ resource: new Map(Object.entries(resource)), scopeLogs: [{ scope: { name: 'com.anthropic.claude_code.events', version: '2.1.332' }, logRecords: records }] }] };
}

const base = { 'event.name': 'hook_execution_complete', hook_event: 'SessionStart', hook_name: 'SessionStart:startup' };
const opts = { nearThreshold: 8000, dimensions: ['team'] };

describe('recognising hook events', () => {
  it('by attribute event.name, by LogRecord event_name, or by body', () => {
    expect(hookEventKind(record({ 'event.name': 'hook_execution_complete' }))).toBe('complete');
    expect(hookEventKind(record({}, { eventName: 'hook_execution_start' }))).toBe('start');
    expect(hookEventKind(record({}, { body: 'claude_code.hook_execution_complete' }))).toBe('complete');
    expect(hookEventKind(record({ 'event.name': 'user_prompt' }, { body: 'claude_code.user_prompt' }))).toBeUndefined();
  });
});

describe('numbers arrive as strings, ints or doubles', () => {
  it('accepts "2", 2, 2n-as-number and 2.0', () => {
    expect(parseCount('2', 'n')).toBe(2);
    expect(parseCount(2, 'n')).toBe(2);
    expect(parseCount(2.0, 'n')).toBe(2);
    expect(parseCount(' 7 ', 'n')).toBe(7);
    expect(parseCount(undefined, 'n')).toBeNull();
  });
  for (const bad of ['-1', 'abc', '1.5', '', '1e3', NaN, Infinity, -1, 1.5, true, 2n ** 70n] as AnyValue[]) {
    it(`rejects ${String(bad)}`, () => {
      expect(() => parseCount(bad, 'num_success')).toThrow(/num_success/);
    });
  }
  it('intValue and doubleValue forms give the same event as strings', () => {
    const asStrings = extractHookEvents(request([record({ ...base, num_hooks: '2', num_success: '2', stdout_chars: '12578', num_outputs_persisted: '1' })]), opts).events[0]!;
    const asNumbers = extractHookEvents(request([record({ ...base, num_hooks: 2, num_success: 2.0, stdout_chars: 12578, num_outputs_persisted: 1 })]), opts).events[0]!;
    expect({ ...asNumbers, dedupKey: '', legacyKey: '', receivedMs: 0 }).toEqual({ ...asStrings, dedupKey: '', legacyKey: '', receivedMs: 0 });
  });
});

describe('unknown is not zero', () => {
  it('an event without size attributes has null sizes and status unknown', () => {
    const e = extractHookEvents(request([record({ ...base, num_hooks: '1', num_success: '1' })]), opts).events[0]!;
    expect(e.sizesKnown).toBe(false);
    expect(e.stdoutChars).toBeNull();
    expect(e.outputsPersisted).toBeNull();
    expect(e.status).toBe('unknown');
  });
});

describe('the cliff, as Claude Code applies it', () => {
  const facts = (ac: number, persisted: number | null, numHooks: number | null = 1) => ({ numHooks, stdoutChars: ac + 30, additionalContextChars: ac, systemMessageChars: 0, initialUserMessageChars: 0, outputsPersisted: persisted });
  it('exactly 10,000 is delivered (near), 10,001 is persisted (over)', () => {
    expect(classifyExecution(facts(10_000, 0), 8000)).toBe('near');
    expect(classifyExecution(facts(10_001, 1), 8000)).toBe('over');
  });
  it('persisted is the ground truth: a sum over the cap across two hooks is not "over" by itself', () => {
    expect(classifyExecution(facts(12_000, 0, 2), 8000)).toBe('near');
    expect(classifyExecution(facts(12_000, 1, 2), 8000)).toBe('over');
  });
  it('without the persisted count, only a provable single string over the cap is over', () => {
    expect(classifyExecution(facts(10_001, null, 1), 8000)).toBe('over');
    expect(classifyExecution(facts(12_000, null, 2), 8000)).toBe('near');
  });
  it('without num_hooks the sizes may be a sum over any number of commands: they prove nothing over, the persisted count still does', () => {
    expect(classifyExecution(facts(12_000, null, null), 8000)).toBe('near');
    expect(classifyExecution(facts(12_000, 1, null), 8000)).toBe('over');
    expect(classifyExecution(facts(12_000, 0, null), 8000)).toBe('near');
  });
  it('an emoji-heavy output is measured in UTF-16 code units', () => {
    const text = '😀'.repeat(5_001); // 5,001 code points, 10,002 UTF-16 code units
    expect([...text].length).toBe(5_001);
    expect(classifyExecution(facts(text.length, 1), 8000)).toBe('over');
    const fits = '😀'.repeat(5_000);
    expect(classifyExecution(facts(fits.length, 0), 8000)).toBe('near');
  });
  it('small outputs are ok', () => {
    expect(classifyExecution(facts(100, 0), 8000)).toBe('ok');
  });
});

describe('a record with a bad count is rejected alone', () => {
  it('reports the path and reason, keeps the good records', () => {
    const x = extractHookEvents(request([
      record({ ...base, num_success: '-1' }),
      record({ ...base, num_success: '1' }),
      record({ 'event.name': 'hook_execution_complete' }),
      record({ 'event.name': 'user_prompt' }),
    ]), opts);
    expect(x.events.length).toBe(1);
    expect(x.rejected).toBe(2);
    expect(x.otherRecords).toBe(1);
    expect(x.problems[0]).toMatch(/logRecords\[0\]: num_success "-1"/);
    expect(x.problems[1]).toMatch(/logRecords\[2\]: hook_event is missing/);
  });
});

describe('a record named as an overflow hook', () => {
  it('is refused, its name repeated as any client value, at most 64 characters of it', () => {
    const refused = (hookEvent: string): string | undefined => extractHookEvents(request([record({ ...base, hook_event: hookEvent, hook_name: `${hookEvent}:(overflow)` })]), opts).problems[0];
    expect(refused('Stop')).toBe('resourceLogs[0].scopeLogs[0].logRecords[0]: hook_name "Stop:(overflow)" is the name of the hook that counts new hook names past store.maxHooks');
    expect(refused('E'.repeat(1000))).toBe(`resourceLogs[0].scopeLogs[0].logRecords[0]: hook_name "${'E'.repeat(64)}…" is the name of the hook that counts new hook names past store.maxHooks`);
  });
});

describe('a record with a hook name or event over 1,024 characters', () => {
  const at = 'resourceLogs[0].scopeLogs[0].logRecords[0]: ';
  const finding = { 'event.name': FINDING_EVENT_NAME, 'hookwatch.finding.id': 'f-1', 'hookwatch.finding.kind': 'run' };
  /** The reasons a hook event and a transcript finding with `attrs` are refused for. */
  const refused = (attrs: Record<string, AnyValue>): (string | undefined)[] => [
    extractHookEvents(request([record({ ...base, ...attrs })]), opts).problems[0],
    extractTranscriptFindings(request([record({ ...finding, ...attrs })])).problems[0],
  ];

  it('is refused, naming the attribute that is too long', () => {
    expect(refused({ hook_event: 'Stop', hook_name: 'N'.repeat(1025) })).toEqual([`${at}hook_name longer than 1024 characters`, `${at}hook_name longer than 1024 characters`]);
    expect(refused({ hook_event: 'E'.repeat(1025), hook_name: 'Stop' })).toEqual([`${at}hook_event longer than 1024 characters`, `${at}hook_event longer than 1024 characters`]);
    // Without hook_name, the hook is named by its event: the event is what the client should shorten.
    expect(refused({ hook_event: 'E'.repeat(1025), hook_name: '' })).toEqual([`${at}hook_event longer than 1024 characters`, `${at}hook_event longer than 1024 characters`]);
    expect(refused({ hook_event: 'E'.repeat(1024), hook_name: 'N'.repeat(1024) })).toEqual([undefined, undefined]);
  });
});

describe("a transcript finding's previous id", () => {
  const finding = { 'event.name': FINDING_EVENT_NAME, 'hookwatch.finding.id': 'run-1#additionalContext', 'hookwatch.finding.kind': 'output', hook_event: 'Stop', output_field: 'additionalContext', output_outcome: 'delivered' };
  const extract = (attrs: Record<string, AnyValue>): ReturnType<typeof extractTranscriptFindings> => extractTranscriptFindings(request([record({ ...finding, ...attrs })]));

  it('is kept up to 2,048 characters, absent when not sent, and refused beyond', () => {
    expect(extract({ 'hookwatch.finding.previous_id': 'rec-2#1' }).findings.map((f) => [f.id, f.previousId])).toEqual([['run-1#additionalContext', 'rec-2#1']]);
    expect(extract({ 'hookwatch.finding.previous_id': 'P'.repeat(2048) }).findings[0]?.previousId).toBe('P'.repeat(2048));
    expect(extract({}).findings[0]).not.toHaveProperty('previousId');
    expect(extract({ 'hookwatch.finding.previous_id': 'P'.repeat(2049) })).toMatchObject({
      findings: [], rejected: 1, problems: ['resourceLogs[0].scopeLogs[0].logRecords[0]: hookwatch.finding.previous_id longer than 2048 characters'],
    });
  });
});

describe("a transcript finding's command", () => {
  const finding = { 'event.name': FINDING_EVENT_NAME, 'hookwatch.finding.id': 'run-1', 'hookwatch.finding.kind': 'run', hook_event: 'Stop' };
  const command = (value: string): string | undefined => extractTranscriptFindings(request([record({ ...finding, hook_command: value })])).findings[0]?.command;

  it('is taken with its credentials redacted, whoever sent it, and a command redacted before unchanged', () => {
    const sent = 'curl -H "Authorization: token ghp_abcdefghijklmnop1234" https://hooks.slack.com/services/T0123/B0456/abcdefSECRETxyz';
    const redacted = 'curl -H "Authorization: token [redacted]" https://hooks.slack.com/[redacted]';
    expect(command(sent)).toBe(redacted);
    expect(command(redacted)).toBe(redacted);
    expect(command('node emit.js ctx 12000')).toBe('node emit.js ctx 12000');
  });

  it('is cut to 2,048 characters after it is redacted, never leaving part of a credential at the cut', () => {
    const token = 'ghp_abcdefghijklmnop1234';
    // The token across the cut: only its first characters would be left, too few to be recognised as a token.
    for (const pad of [MAX_COMMAND - 10, MAX_COMMAND - 4, MAX_COMMAND + 100, MAX_COMMAND + 250, MAX_COMMAND + 260]) {
      for (const tail of ['', ' x'.repeat(5000)]) {
        const got = command(`${'a'.repeat(pad)} ${token}${tail}`) ?? '';
        expect(got.length, `${pad} ${tail.length}`).toBeLessThanOrEqual(MAX_COMMAND);
        expect(got, `${pad} ${tail.length}`).not.toMatch(/ghp_[a-z]/);
      }
    }
    // A long command without credentials is cut at 2,048 characters, as before.
    expect(command('x'.repeat(3000))).toBe('x'.repeat(MAX_COMMAND));
    expect(command(`${'x '.repeat(1500)}`)).toBe('x '.repeat(1024));
  });
});

describe('a record with several bad counts', () => {
  it('is rejected for the first one read: num_hooks, then the sizes, then the execution counts', () => {
    const bad = { num_hooks: 'x', stdout_chars: '-1', num_outputs_persisted: 'y', num_success: '-1', total_duration_ms: 'z' };
    const first = (attrs: Record<string, AnyValue>): string | undefined => extractHookEvents(request([record({ ...base, ...attrs })]), opts).problems[0];
    expect(first(bad)).toMatch(/: num_hooks "x"/);
    expect(first({ ...bad, num_hooks: '1' })).toMatch(/: stdout_chars "-1"/);
    expect(first({ ...bad, num_hooks: '1', stdout_chars: '1' })).toMatch(/: num_outputs_persisted "y"/);
    expect(first({ ...bad, num_hooks: '1', stdout_chars: '1', num_outputs_persisted: '0' })).toMatch(/: num_success "-1"/);
    // A start carries no sizes: they are not read, so a bad one does not reject it.
    const start = extractHookEvents(request([record({ ...base, 'event.name': 'hook_execution_start', stdout_chars: '-1', num_hooks: '2' })]), opts);
    expect(start.problems).toEqual([]);
    expect(start.events[0]).toMatchObject({ kind: 'start', stdoutChars: null, numHooks: 2, sizesKnown: false, status: 'unknown' });
  });
});

describe('dimensions and idempotency keys', () => {
  it('record attributes win over resource attributes; extra dimensions are kept', () => {
    const e = extractHookEvents(request([record({ ...base, team: 'payments', 'session.id': 's1', 'event.sequence': '3' })], { team: 'platform', 'service.name': 'claude-code', 'service.version': '2.1.332' }), opts).events[0]!;
    expect(e.extra).toEqual({ team: 'payments' });
    expect(e.serviceVersion).toBe('2.1.332');
  });
  it('the same record gives the same key; another sequence number another key', () => {
    const a = extractHookEvents(request([record({ ...base, 'session.id': 's1', 'event.sequence': '3', 'event.timestamp': '2026-11-30T07:55:22.996Z' })]), opts).events[0]!;
    const b = extractHookEvents(request([record({ ...base, 'session.id': 's1', 'event.sequence': '3', 'event.timestamp': '2026-11-30T07:55:22.996Z' })]), opts).events[0]!;
    const c = extractHookEvents(request([record({ ...base, 'session.id': 's1', 'event.sequence': '4', 'event.timestamp': '2026-11-30T07:55:22.996Z' })]), opts).events[0]!;
    expect(a.dedupKey).toBe(b.dedupKey);
    expect(a.dedupKey).not.toBe(c.dedupKey);
    expect(a.timeMs).toBe(Date.parse('2026-11-30T07:55:22.996Z'));
  });
  it('keys sort by the event time, so one batch lands together in the unique index', () => {
    const at = (ts: string, seq: string): string => extractHookEvents(request([record({ ...base, 'session.id': 's1', 'event.sequence': seq, 'event.timestamp': ts })]), opts).events[0]!.dedupKey;
    const keys = [at('2026-11-30T07:55:22.996Z', '9'), at('2026-11-30T07:55:22.997Z', '1'), at('2026-12-01T00:00:00.000Z', '5'), at('2031-01-01T00:00:00.000Z', '2')];
    expect([...keys].sort()).toEqual(keys);
    expect(new Set(keys.map((k) => k.length)).size).toBe(1);
  });
  it('a record with no time at all keys on its content alone, so a retry received later still matches', () => {
    let clock = 1_000;
    const o = { ...opts, now: () => clock };
    const rec = (): LogRecord => record({ ...base, num_success: '1' }, { timeUnixNano: 0n, observedTimeUnixNano: 0n });
    const a = extractHookEvents(request([rec()]), o).events[0]!;
    clock = 90_000_000;
    const b = extractHookEvents(request([rec()]), o).events[0]!;
    expect(a.timeMs).not.toBe(b.timeMs);
    expect(a.dedupKey).toBe(b.dedupKey);
  });
  it('the time comes only from what the key covers, so envelope times never split one event in two', () => {
    const at = (nanos: bigint, extra: Record<string, AnyValue> = {}) => extractHookEvents(request([record({ ...base, 'session.id': 's1', 'event.sequence': '3', ...extra }, { timeUnixNano: nanos, observedTimeUnixNano: nanos })]), opts).events[0]!;
    // Session + sequence without event.timestamp: timeUnixNano is not part of the key, so it gives no prefix.
    expect(at(1n * 10n ** 18n).dedupKey).toBe(at(2n * 10n ** 18n).dedupKey);
    expect(at(1n * 10n ** 18n).legacyKey).toBeUndefined();
    // A timestamp without an offset means different instants in different time zones: no prefix either.
    const local = at(0n, { 'event.timestamp': '2026-11-30T07:55:22.996' });
    expect(local.dedupKey).toHaveLength(27);
    const zoned = at(0n, { 'event.timestamp': '2026-11-30T08:55:22.996+01:00' });
    expect(zoned.dedupKey.slice(0, 9)).toBe(Date.parse('2026-11-30T07:55:22.996Z').toString(36).padStart(9, '0'));
    // The bare hash is kept as the key the event had before keys began with its time.
    expect(zoned.dedupKey.slice(9)).toBe(zoned.legacyKey);
  });
  it('without a session id the whole content is the key', () => {
    const a = extractHookEvents(request([record({ ...base, num_success: '1' })]), opts).events[0]!;
    const b = extractHookEvents(request([record({ ...base, num_success: '2' })]), opts).events[0]!;
    expect(a.dedupKey).not.toBe(b.dedupKey);
  });
});
