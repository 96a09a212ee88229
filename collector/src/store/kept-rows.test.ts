import { describe, expect, it } from 'vitest';
import { KeptRows } from './kept-rows.ts';

const entry = (n: number, tag = ''): { tag: string; rows: number[] } => ({ tag, rows: Array.from({ length: n }, (_, i) => i) });

describe('KeptRows', () => {
  it('drops the least recently used first, past its entries or its rows together', () => {
    const kept = new KeptRows<ReturnType<typeof entry>>(3, 10, 10);
    kept.set('a', entry(2));
    kept.set('b', entry(2));
    kept.set('c', entry(2));
    expect(kept.get('a')?.rows.length).toBe(2); // a is now the most recently used
    kept.set('d', entry(2)); // past 3 entries: b goes
    expect([kept.get('b'), kept.size, kept.rows]).toEqual([undefined, 3, 6]);
    kept.set('e', entry(7)); // past 10 rows: c, then a go
    expect([kept.get('c'), kept.get('a'), kept.get('d')?.rows.length, kept.rows]).toEqual([undefined, undefined, 2, 9]);
  });

  it('replaces what a key held, counting its rows once, and keeps no entry larger than its share', () => {
    const kept = new KeptRows<ReturnType<typeof entry>>(4, 100, 5);
    kept.set('a', entry(3, 'old'));
    kept.set('a', entry(4, 'new'));
    expect([kept.get('a')?.tag, kept.size, kept.rows]).toEqual(['new', 1, 4]);
    // Too large to keep: what the key held goes too, never left to answer for the newer rows.
    kept.set('a', entry(6, 'large'));
    expect([kept.get('a'), kept.size, kept.rows]).toEqual([undefined, 0, 0]);
    kept.set('b', entry(5));
    kept.delete('b');
    kept.delete('b');
    kept.set('c', entry(1));
    kept.clear();
    expect([kept.size, kept.rows]).toEqual([0, 0]);
  });
});
