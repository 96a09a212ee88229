/**
 * Event time: event.timestamp (Claude Code's ISO string) first, then timeUnixNano, then observedTimeUnixNano, then
 * the clock. A timestamp before 1970 is not a real Claude Code time: it falls back instead of reaching the store,
 * whose integer bucket arithmetic (time_ms / step) * step truncates toward zero and misplaces negative times.
 */
import { describe, expect, it } from 'vitest';
import type { AnyValue, LogRecord, LogsRequest } from '../otlp/model.ts';
import { extractHookEvents } from './extract.ts';

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
});
