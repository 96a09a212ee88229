import { describe, expect, it } from 'vitest';
import { networkErrorCode, networkErrorWords, readableError } from './network-error.ts';

describe('network errors in words', () => {
  it('says a known code in words with the code, and reads it back from them or from the bare code stored before', () => {
    const words = networkErrorWords('ECONNREFUSED', 'example.test:443');
    expect(words).toBe('connection refused (ECONNREFUSED): nothing listens at example.test:443');
    expect(networkErrorCode(words ?? '')).toBe('ECONNREFUSED');
    expect(networkErrorCode('ECONNREFUSED')).toBe('ECONNREFUSED');
    expect(readableError('ECONNREFUSED; gave up: the next attempt would pass the delivery deadline')).toBe('connection refused (ECONNREFUSED): nothing listens at that address; gave up: the next attempt would pass the delivery deadline');
  });

  it('takes the names of an object\'s own properties for no code: stored text is read as it is', () => {
    for (const text of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
      expect(networkErrorWords(text)).toBeUndefined();
      expect(networkErrorCode(text)).toBeUndefined();
      expect(readableError(text)).toBe(text);
      expect(readableError(`${text}; gave up`)).toBe(`${text}; gave up`);
    }
  });
});
