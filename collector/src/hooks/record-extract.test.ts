/** One bad record is rejected with a reason that points at it; the rest of the batch is kept. */
import { describe, expect, it } from 'vitest';
import type { LogRecord, LogsRequest } from '../otlp/model.ts';
import { extractRecords } from './record-extract.ts';

const record = (name: string): LogRecord => ({ timeUnixNano: 0n, observedTimeUnixNano: 0n, eventName: name, body: undefined, attributes: new Map() });
const request = (...scopes: string[][]): LogsRequest => ({
  resourceLogs: [{ resource: new Map(), scopeLogs: scopes.map((names) => ({ scope: { name: '', version: '' }, logRecords: names.map(record) })) }],
});

class Bad extends Error {}
const isBad = (err: unknown): err is Error => err instanceof Bad;
const convert = (rec: LogRecord): string => {
  if (rec.eventName.startsWith('bad')) throw new Bad(`${rec.eventName} is not usable`);
  if (rec.eventName === 'bug') throw new TypeError('a fault of ours');
  return rec.eventName.toUpperCase();
};
const wanted = (rec: LogRecord): boolean => rec.eventName !== 'other';

describe('extractRecords', () => {
  it('converts the records it accepts and rejects a bad one by itself, naming where it is', () => {
    const out = extractRecords(request(['a', 'other'], ['bad-1', 'b']), wanted, convert, isBad);
    expect(out).toEqual({ items: ['A', 'B'], rejected: 1, problems: ['resourceLogs[0].scopeLogs[1].logRecords[0]: bad-1 is not usable'] });
  });

  it('counts every rejection but keeps five reasons', () => {
    const out = extractRecords(request(['bad-1', 'bad-2', 'bad-3', 'bad-4', 'bad-5', 'bad-6', 'bad-7', 'c']), wanted, convert, isBad);
    expect(out.items).toEqual(['C']);
    expect(out.rejected).toBe(7);
    expect(out.problems).toHaveLength(5);
  });

  it('lets an error that is not a rejection through', () => {
    expect(() => extractRecords(request(['a', 'bug']), wanted, convert, isBad)).toThrow(TypeError);
  });
});
