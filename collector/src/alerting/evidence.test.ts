/** When an alert's evidence begins (rules.ts withEvidence): read once, as the alert becomes active. */
import { describe, expect, it } from 'vitest';
import { withEvidence, type Candidate } from './rules.ts';

function candidate(hook: string, read: () => Promise<number | null>): Candidate {
  return { labels: { alertname: 'persisted', hook_name: hook }, annotations: {}, hookId: hook, readEvidence: read };
}

describe('withEvidence', () => {
  it('reads it for the candidates that become alerts only, and keeps a candidate whose read fails, its time unknown', async () => {
    const reads: string[] = [];
    const errors: unknown[] = [];
    const out = await withEvidence([
      candidate('new', async () => {
        reads.push('new');
        return 1_000;
      }),
      candidate('active', async () => {
        reads.push('active');
        return 2_000;
      }),
      candidate('failing', async () => {
        reads.push('failing');
        throw new Error('store unavailable');
      }),
      { labels: { alertname: 'growth', hook_name: 'read' }, annotations: {}, hookId: 'read', evidenceFromMs: 3_000 },
    ], (c) => c.labels['hook_name'] !== 'active', (err) => errors.push(err));
    expect(reads).toEqual(['new', 'failing']);
    expect(out.map((c) => [c.labels['hook_name'], c.evidenceFromMs])).toEqual([['new', 1_000], ['active', undefined], ['failing', undefined], ['read', 3_000]]);
    // Nothing left to read later: the candidates go on to the lifecycle as plain data.
    expect(out.every((c) => c.readEvidence === undefined)).toBe(true);
    expect(errors).toEqual([new Error('store unavailable')]);
  });

  it('reads no more in an evaluation once a read failed: a store gone away is not waited on once per alert', async () => {
    const reads: string[] = [];
    const errors: unknown[] = [];
    const failing = (hook: string): Candidate => candidate(hook, async () => {
      reads.push(hook);
      throw new Error('timeout exceeded when trying to connect');
    });
    const out = await withEvidence([failing('a'), failing('b'), failing('c')], () => true, (err) => errors.push(err));
    expect(reads).toEqual(['a']);
    expect(errors).toHaveLength(1);
    // Every candidate still goes on, its time unknown: the alerts go pending, their links from when they became active.
    expect(out.map((c) => [c.labels['hook_name'], c.evidenceFromMs, c.readEvidence])).toEqual([['a', undefined, undefined], ['b', undefined, undefined], ['c', undefined, undefined]]);
  });

  it('reads what guard trimmed of the hook once, for a new alert, into its annotations; a trend\'s time read with it is kept', async () => {
    const reads: string[] = [];
    const guarded = (hook: string, evidenceFromMs?: number): Candidate => ({
      labels: { alertname: 'growth', hook_name: hook }, annotations: { summary: hook }, hookId: hook, ...(evidenceFromMs === undefined ? {} : { evidenceFromMs }),
      readGuard: async () => {
        reads.push(hook);
        return hook === 'unguarded' ? null : { guard_trims: '2' };
      },
    });
    const out = await withEvidence([guarded('new', 5_000), guarded('active', 6_000), guarded('unguarded')], (c) => c.labels['hook_name'] !== 'active', () => undefined);
    expect(reads).toEqual(['new', 'unguarded']);
    expect(out.map((c) => [c.labels['hook_name'], c.evidenceFromMs, c.annotations])).toEqual([
      ['new', 5_000, { summary: 'new', guard_trims: '2' }],
      ['active', 6_000, { summary: 'active' }],
      ['unguarded', undefined, { summary: 'unguarded' }],
    ]);
    expect(out.every((c) => c.readGuard === undefined)).toBe(true);
  });
});
