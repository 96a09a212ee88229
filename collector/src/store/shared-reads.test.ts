import { describe, expect, it } from 'vitest';
import { SharedReads } from './shared-reads.ts';

type G = 'hook' | 'client';

/** A reader that records each run's groupings and answers `${grouping}@${key}` for each. */
function reader(): { runs: string[][]; run: (key: string) => (gs: readonly G[]) => Promise<Map<G, string>> } {
  const runs: string[][] = [];
  return {
    runs,
    run: (key) => async (gs) => {
      runs.push([key, ...gs]);
      return new Map(gs.map((g) => [g, `${g}@${key}`]));
    },
  };
}

describe('SharedReads', () => {
  it('answers every grouping asked of one stretch in the same turn with one run, and each caller its own grouping', async () => {
    const shared = new SharedReads<G, string>();
    const r = reader();
    const got = await Promise.all([
      shared.read('a', 'hook', r.run('a')),
      shared.read('a', 'client', r.run('a')),
      shared.read('a', 'hook', r.run('a')),
      shared.read('b', 'client', r.run('b')),
    ]);
    expect(got).toEqual(['hook@a', 'client@a', 'hook@a', 'client@b']);
    expect(r.runs).toEqual([['a', 'hook', 'client'], ['b', 'client']]);
  });

  it('reads a stretch asked again in a later turn again', async () => {
    const shared = new SharedReads<G, string>();
    const r = reader();
    expect(await shared.read('a', 'hook', r.run('a'))).toBe('hook@a');
    expect(await shared.read('a', 'client', r.run('a'))).toBe('client@a');
    expect(r.runs).toEqual([['a', 'hook'], ['a', 'client']]);
  });

  it('fails every read that joined a run that failed, and reads again afterwards', async () => {
    const shared = new SharedReads<G, string>();
    const boom = async (): Promise<Map<G, string>> => {
      throw new Error('database is locked');
    };
    const results = await Promise.allSettled([shared.read('a', 'hook', boom), shared.read('a', 'client', boom)]);
    expect(results.map((x) => (x.status === 'rejected' ? (x.reason as Error).message : x.value))).toEqual(['database is locked', 'database is locked']);
    const r = reader();
    expect(await shared.read('a', 'client', r.run('a'))).toBe('client@a');
  });

  it('fails a read whose grouping the run did not answer, instead of leaving it waiting', async () => {
    const shared = new SharedReads<G, string>();
    const partial = async (): Promise<Map<G, string>> => new Map([['hook', 'h']]);
    const results = await Promise.allSettled([shared.read('a', 'hook', partial), shared.read('a', 'client', partial)]);
    expect(results[0]).toEqual({ status: 'fulfilled', value: 'h' });
    expect(results[1]?.status).toBe('rejected');
  });
});
