/** Only the four hook event names are hook events: names that happen to be Object.prototype members are other records. */
import { describe, expect, it } from 'vitest';
import type { AnyValue, LogRecord, LogsRequest } from '../otlp/model.ts';
import { SqliteStore } from '../store/sqlite/index.ts';
import { extractHookEvents, hookEventKind } from './extract.ts';

function rec(attrs: Record<string, AnyValue>, extra: Partial<LogRecord> = {}): LogRecord {
  return { timeUnixNano: 1_796_025_322_293_000_000n, observedTimeUnixNano: 0n, eventName: '', body: undefined, attributes: new Map(Object.entries(attrs)), ...extra };
}

const NAMES = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'];

describe('event names', () => {
  it.each(NAMES)('%s is not a hook event, by attribute, event_name or body', (name) => {
    expect(hookEventKind(rec({ 'event.name': name }))).toBeUndefined();
    expect(hookEventKind(rec({}, { eventName: name }))).toBeUndefined();
    expect(hookEventKind(rec({}, { body: name }))).toBeUndefined();
  });

  it('a batch mixing such a record with a real hook event stores the hook event', async () => {
    const hook = rec({ 'event.name': 'hook_execution_complete', hook_event: 'Stop', hook_name: 'Stop', 'session.id': 's', 'event.sequence': '1', num_hooks: '1', num_success: '1' });
    const req: LogsRequest = { resourceLogs: [{ resource: new Map(), scopeLogs: [{ scope: { name: '', version: '' }, logRecords: [rec({ 'event.name': 'constructor', hook_event: 'Stop' }), hook] }] }] };
    const x = extractHookEvents(req, { nearThreshold: 8000, dimensions: [] });
    expect(x.events.map((e) => e.kind)).toEqual(['complete']);
    expect(x.otherRecords).toBe(1);
    const store = new SqliteStore({ path: ':memory:' });
    try {
      expect((await store.ingest(x.events)).inserted).toHaveLength(1);
    } finally {
      await store.close();
    }
  });
});
