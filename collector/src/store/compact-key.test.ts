/**
 * The stored dedup key's bytes (sql.ts compactKey) never change for the same text key: databases hold them, and
 * a retry is found as a duplicate only under the very bytes its first delivery was stored with.
 */
import { describe, expect, it } from 'vitest';
import { compactKey, keyTimeMs } from './sql.ts';

describe('compactKey', () => {
  it('keeps the bytes stored databases hold, for time-prefixed keys, bare hashes and any other text', () => {
    const timed = `${(1_764_547_200_123).toString(36).padStart(9, '0')}I3Qb8vJ2mJm2aW5yX0o1ZkLwQp4`;
    expect(keyTimeMs(timed)).toBe(1_764_547_200_123);
    expect(compactKey(timed).toString('hex')).toBe('019ad735847bb03b037339d20702f8a9');
    // The event time is the first 6 bytes, big-endian.
    expect(compactKey(timed).readUIntBE(0, 6)).toBe(1_764_547_200_123);
    const golden: [string, string][] = [
      ['mi4a0xq9cI3Qb8vJ2mJm2aW5yX0o1ZkLwQp4', '39bd16552b300abe7dc915b69047db5f'],
      // Not 36 characters: no time prefix, 16 bytes of SHA-256.
      ['I3Qb8vJ2mJm2aW5yX0o1ZkLwQp4', '94292a25d64b5da896bb7ab2a2feb363'],
      ['0mi4a0xq9cI3Qb8vJ2mJm2aW5yX0o1ZkLwQp4', '5dbfbe3d9844f256692c0fbabb18ecd0'],
      ['mi4a0xq9cI3Qb8vJ2mJm2aW5yX0o1ZkLwQp4sUhe', 'ba583f18b74c2edb5f588711576dfcdf'],
      // Text beyond ASCII is hashed as UTF-8.
      ['finding:é✓/run/1', 'e3636f167c94c2710dd9467ce71a6497'],
      ['', 'e3b0c44298fc1c149afbf4c8996fb924'],
    ];
    for (const [key, hex] of golden) expect(compactKey(key).toString('hex'), key).toBe(hex);
  });
});
