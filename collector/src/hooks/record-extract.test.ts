/** One bad record is rejected with a reason that points at it; the rest of the batch is kept. */
import { describe, expect, it } from 'vitest';
import { GUARD_TRIM_EVENT } from '../../../shared/src/guard-trims.ts';
import type { AnyValue, LogRecord, LogsRequest } from '../otlp/model.ts';
import { extractHookEvents } from './extract.ts';
import { extractGuardTrims, guardTrimCollector, guardTrimExtract } from './guard-trim.ts';
import { extractRecords } from './record-extract.ts';
import { FINDING_EVENT_NAME, extractTranscriptFindings, findingCollector, findingExtract, findingExtractSteps } from './transcript-findings.ts';

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

describe('kinds sharing the hook events\' walk', () => {
  const at = (attrs: Record<string, AnyValue>): LogRecord => ({ timeUnixNano: 1_764_000_000_000_000_000n, observedTimeUnixNano: 0n, eventName: '', body: undefined, attributes: new Map(Object.entries(attrs)) });
  const hook = at({ 'event.name': 'hook_execution_complete', hook_event: 'Stop', hook_name: 'Stop', 'session.id': 's', 'event.sequence': '1', stdout_chars: '12' });
  const finding = at({ 'event.name': FINDING_EVENT_NAME, 'hookwatch.finding.id': 'f-1', 'hookwatch.finding.kind': 'run', hook_event: 'Stop' });
  const badFinding = at({ 'event.name': FINDING_EVENT_NAME, 'hookwatch.finding.kind': 'run', hook_event: 'Stop' });
  const trim = at({ 'event.name': GUARD_TRIM_EVENT, hook_event: 'Stop', field: 'stdout', sent_chars: '12000', kept_chars: '9500' });
  const badTrim = at({ 'event.name': GUARD_TRIM_EVENT, hook_event: 'Stop', field: 'stdout', sent_chars: '-1', kept_chars: '9500' });
  const req: LogsRequest = {
    resourceLogs: [
      { resource: new Map(), scopeLogs: [{ scope: { name: '', version: '' }, logRecords: [hook, badTrim, finding, at({ 'event.name': 'user_prompt' })] }] },
      { resource: new Map(), scopeLogs: [{ scope: { name: '', version: '' }, logRecords: [] }, { scope: { name: '', version: '' }, logRecords: [trim, badFinding, hook] }] },
    ],
  };
  const opts = { nearThreshold: 8000, dimensions: [], now: () => 42_000 };

  it('take what walks of their own take, rejections and their positions included, and leave the hook events as they were', () => {
    const findings = findingCollector(() => 42_000);
    const trims = guardTrimCollector(() => 42_000);
    const x = extractHookEvents(req, { ...opts, others: [findings, trims] });
    expect(x).toEqual(extractHookEvents(req, opts));
    expect(x.events).toHaveLength(2);
    const f = findingExtract(findings.out);
    const g = guardTrimExtract(trims.out);
    expect(f).toEqual(extractTranscriptFindings(req, () => 42_000));
    expect(g).toEqual(extractGuardTrims(req, () => 42_000));
    expect(f.findings.map((r) => r.id)).toEqual(['f-1']);
    expect(f.problems).toEqual(['resourceLogs[1].scopeLogs[1].logRecords[1]: hookwatch.finding.id is missing']);
    expect(g.trims.map((r) => r.sentChars)).toEqual([12000]);
    expect(g.problems).toHaveLength(1);
    expect(g.problems[0]).toMatch(/^resourceLogs\[0\]\.scopeLogs\[0\]\.logRecords\[1\]: sent_chars /);
  });
});

describe('findingExtractSteps', () => {
  const at = (attrs: Record<string, string>): LogRecord => ({ timeUnixNano: 0n, observedTimeUnixNano: 0n, eventName: '', body: undefined, attributes: new Map<string, AnyValue>(Object.entries(attrs)) });
  const findings = (commands: (i: number) => string, n: number): LogsRequest => ({
    resourceLogs: [{
      resource: new Map(),
      scopeLogs: [{
        scope: { name: '', version: '' },
        logRecords: Array.from({ length: n }, (_, i) => at({ 'event.name': FINDING_EVENT_NAME, 'hookwatch.finding.id': `f-${i}`, 'hookwatch.finding.kind': 'run', hook_event: 'Stop', hook_command: commands(i) })),
      }],
    }],
  });

  it('redacts the commands of thousands of findings in slices, the event loop served between them, to what a walk straight through gives', () => {
    // Commands of 2,304 characters each that redaction reads whole (milliseconds each): one slice for them all
    // would hold the process for seconds.
    const req = findings((i) => `${i} ${'-token'.repeat(400)}`.slice(0, 2304) + ' --api-key s3cr3t', 1500);
    const collector = findingCollector(() => 42_000);
    for (const [k, rec] of req.resourceLogs[0]!.scopeLogs[0]!.logRecords.entries()) collector.visit(rec, 0, 0, k);
    const steps = findingExtractSteps(collector.out);
    let pauses = 0;
    let s = steps.next();
    while (!s.done) {
      pauses++;
      s = steps.next();
    }
    expect(pauses).toBeGreaterThan(10);
    expect(s.value).toEqual(extractTranscriptFindings(req, () => 42_000));
    expect(s.value.findings.every((f) => !f.command.includes('s3cr3t'))).toBe(true);
  });

  it('redacts a command that thousands of findings share once, in one slice', () => {
    const collector = findingCollector(() => 42_000);
    const req = findings(() => 'curl -H "Authorization: token ghp_abcdefghijklmnop1234" https://example.com', 5000);
    for (const [k, rec] of req.resourceLogs[0]!.scopeLogs[0]!.logRecords.entries()) collector.visit(rec, 0, 0, k);
    const steps = findingExtractSteps(collector.out);
    const s = steps.next();
    expect(s.done).toBe(true);
    expect(new Set(s.value!.findings.map((f) => f.command))).toEqual(new Set(['curl -H "Authorization: token [redacted]" https://example.com']));
  });
});
