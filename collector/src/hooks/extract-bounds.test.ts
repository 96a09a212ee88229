/**
 * Counts and sizes are bounded per record, so sums over a range cannot overflow the stores' 64-bit integers:
 * about 1,200 records carrying num_success = 2^53 - 1 made SQLite's SUM() fail with "integer overflow" and
 * every query over that range (API, alert rules) fail until retention removed them.
 */
import { describe, expect, it } from 'vitest';
import type { AnyValue, LogsRequest } from '../otlp/model.ts';
import { SqliteStore } from '../store/sqlite/index.ts';
import { MAX_COUNT, extractHookEvents, parseCount } from './extract.ts';

function request(n: number, value: string): LogsRequest {
  const attrs = (i: number): Map<string, AnyValue> => new Map<string, AnyValue>(Object.entries({
    'event.name': 'hook_execution_complete', hook_event: 'Stop', hook_name: 'Stop', 'session.id': 's', 'event.sequence': String(i),
    'event.timestamp': new Date(Date.UTC(2026, 10, 30, 8, i % 2)).toISOString(), num_hooks: '1', num_success: value, stdout_chars: '10', num_outputs_persisted: '0',
  }));
  return { resourceLogs: [{ resource: new Map(), scopeLogs: [{ scope: { name: '', version: '' }, logRecords: Array.from({ length: n }, (_, i) => ({ timeUnixNano: 0n, observedTimeUnixNano: 0n, eventName: '', body: undefined, attributes: attrs(i) })) }] }] };
}

describe('count bounds', () => {
  it('accepts up to MAX_COUNT and rejects the record above it', () => {
    expect(parseCount(String(MAX_COUNT), 'n')).toBe(MAX_COUNT);
    expect(parseCount(MAX_COUNT, 'n')).toBe(MAX_COUNT);
    expect(() => parseCount(String(MAX_COUNT + 1), 'num_success')).toThrow(/num_success/);
    expect(() => parseCount(Number.MAX_SAFE_INTEGER, 'num_success')).toThrow(/num_success/);
  });

  it('huge counts are rejected records, and the range stays queryable', async () => {
    const store = new SqliteStore({ path: ':memory:' });
    try {
      const x = extractHookEvents(request(1200, '9007199254740991'), { nearThreshold: 8000, dimensions: [] });
      expect(x.rejected).toBe(1200);
      // Stored one record per batch, as separate clients would, so the additions happen in SQL.
      for (const e of extractHookEvents(request(1200, String(MAX_COUNT)), { nearThreshold: 8000, dimensions: [] }).events) await store.ingest([e]);
      const range = { fromMs: Date.UTC(2026, 10, 30), toMs: Date.UTC(2026, 11, 1) };
      const c = [...(await store.hookCounters(range)).values()][0];
      expect(c?.success).toBe(1200 * MAX_COUNT);
      expect([...(await store.hookCounters({ ...range, filters: { 'hookwatch.source': 'otlp' } })).values()][0]?.success).toBe(1200 * MAX_COUNT);
    } finally {
      await store.close();
    }
  });
});
