/**
 * Event time: event.timestamp (Claude Code's ISO string) first, then timeUnixNano, then observedTimeUnixNano, then
 * the clock. A timestamp before 1970 is not a real Claude Code time: it falls back instead of reaching the store,
 * whose integer bucket arithmetic (time_ms / step) * step truncates toward zero and misplaces negative times.
 * Guard trims and transcript findings are timed the same way.
 */
import { describe, expect, it } from 'vitest';
import type { AnyValue, LogRecord, LogsRequest } from '../otlp/model.ts';
import { GUARD_TRIM_EVENT } from '../../../shared/src/guard-trims.ts';
import { extractHookEvents } from './extract.ts';
import { extractGuardTrims } from './guard-trim.ts';
import { FINDING_EVENT_NAME, extractTranscriptFindings } from './transcript-findings.ts';

const NANOS = 1_796_025_322_293_000_000n;

function one(attrs: Record<string, AnyValue>, rec: Partial<LogRecord> = {}): number | undefined {
  const req: LogsRequest = { resourceLogs: [{ resource: new Map(), scopeLogs: [{ scope: { name: '', version: '' }, logRecords: [{
    timeUnixNano: NANOS, observedTimeUnixNano: 0n, eventName: '', body: undefined,
    attributes: new Map(Object.entries({ 'event.name': 'hook_execution_complete', hook_event: 'Stop', hook_name: 'Stop', ...attrs })), ...rec,
  }] }] }] };
  return extractHookEvents(req, { nearThreshold: 8000, dimensions: [], now: () => 42_000 }).events[0]?.timeMs;
}

describe('event time', () => {
  it('prefers event.timestamp, then timeUnixNano, then observedTimeUnixNano, then now', () => {
    expect(one({ 'event.timestamp': '2026-11-30T07:55:22.293Z' }, { timeUnixNano: 0n })).toBe(Date.parse('2026-11-30T07:55:22.293Z'));
    expect(one({ 'event.timestamp': 'not a time' })).toBe(Number(NANOS / 1_000_000n));
    expect(one({}, { timeUnixNano: 0n, observedTimeUnixNano: 5_000_000n })).toBe(5);
    expect(one({}, { timeUnixNano: 0n })).toBe(42_000);
  });

  it('a timestamp before 1970 falls back to timeUnixNano; no event gets a negative time', () => {
    expect(one({ 'event.timestamp': '1969-12-31T23:30:00Z' })).toBe(Number(NANOS / 1_000_000n));
    expect(one({ 'event.timestamp': '0001-01-01T00:00:00Z' }, { timeUnixNano: 0n })).toBe(42_000);
  });

  it('a timestamp in toISOString form, or one character off it, is the instant Date.parse reads, or falls back as Date.parse does', () => {
    const fromRecord = Number(NANOS / 1_000_000n);
    const stamps = [
      '2026-11-30T07:55:22.293Z', '1970-01-01T00:00:00.000Z', '2024-02-29T23:59:59.999Z', '2026-02-28T00:00:00.000Z',
      '2026-01-31T12:00:00.000Z', '2026-04-31T12:00:00.000Z', '2026-02-30T12:00:00.000Z', '2026-11-30T24:00:00.000Z',
      '2026-11-30T07:60:22.293Z', '2026-11-30T07:55:60.293Z', '2026-13-30T07:55:22.293Z', '2026-00-30T07:55:22.293Z',
      '2026-11-00T07:55:22.293Z', '2026-11-30T07:55:22.293z', '2026-11-30 07:55:22.293Z', '2026-11-30T07:55:22,293Z',
      '2026-11-30T07:55:22.29xZ', '1969-12-31T23:59:59.999Z', '0099-11-30T07:55:22.293Z', '2026-11-30T07:55:22.293+00',
      '+02026-11-30T07:55:22.293Z', '2026-11-30T07:55:22.2930Z', '2026-11-30T07:55:22Z', '2026-11-30T07:55:22.293',
      '2026-12-07T06:40:09.807Z', '1999-12-15T23:59:59.999Z', '1965-06-15T00:00:00.001Z', '2100-01-01T00:00:00.010Z',
      // Times spread over 1970 to 2100, every field's digits taking many values.
      ...Array.from({ length: 2000 }, (_, i) => new Date(Math.floor(((i * 7919) % 2000) / 2000 * 4_102_444_800_000) + i * 37).toISOString()),
    ];
    for (const stamp of stamps) {
      const ms = Date.parse(stamp);
      // Without an offset Date.parse reads the local time: timed by the record instead (the test above).
      const zoned = /(Z|z|[+-]\d\d:?\d\d)$/.test(stamp);
      expect(one({ 'event.timestamp': stamp }), stamp).toBe(Number.isFinite(ms) && ms >= 0 && zoned ? ms : fromRecord);
    }
  });
});

describe('guard trims and transcript findings are timed as hook events', () => {
  /** One record of `attrs`, stamped NANOS, extracted as a guard trim and as a transcript finding. */
  function times(stamp: AnyValue): { trim: number | undefined; finding: number | undefined } {
    const request = (attrs: Record<string, AnyValue>): LogsRequest => ({ resourceLogs: [{ resource: new Map(), scopeLogs: [{ scope: { name: '', version: '' }, logRecords: [{
      timeUnixNano: NANOS, observedTimeUnixNano: 0n, eventName: '', body: undefined, attributes: new Map(Object.entries({ ...attrs, 'event.timestamp': stamp })),
    }] }] }] });
    const trim = extractGuardTrims(request({ 'event.name': GUARD_TRIM_EVENT, hook_event: 'Stop', field: 'stdout', sent_chars: '12000', kept_chars: '9500' }), () => 42_000);
    const finding = extractTranscriptFindings(request({ 'event.name': FINDING_EVENT_NAME, 'hookwatch.finding.id': 'f-1', 'hookwatch.finding.kind': 'run', hook_event: 'Stop' }), () => 42_000);
    return { trim: trim.trims[0]?.timeMs, finding: finding.findings[0]?.timeMs };
  }

  it('a timestamp without an offset, or no time, or before 1970, is the same instant in any receiver time zone: timeUnixNano', () => {
    const zone = process.env['TZ'];
    const wall = new Date(Number(NANOS / 1_000_000n)).toISOString().slice(0, 23);
    const fromRecord = Number(NANOS / 1_000_000n);
    try {
      for (const tz of ['UTC', 'Asia/Kolkata', 'America/Los_Angeles']) {
        process.env['TZ'] = tz;
        for (const stamp of [wall, '1', 'Dec 5 03:00', '1969-12-31T23:30:00Z']) expect(times(stamp), `${stamp} in ${tz}`).toEqual({ trim: fromRecord, finding: fromRecord });
        expect(times('2026-11-30T13:25:22.293+05:30'), tz).toEqual({ trim: Date.parse('2026-11-30T07:55:22.293Z'), finding: Date.parse('2026-11-30T07:55:22.293Z') });
      }
    } finally {
      if (zone === undefined) delete process.env['TZ'];
      else process.env['TZ'] = zone;
    }
  });
});
