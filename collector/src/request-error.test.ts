import { describe, expect, it } from 'vitest';
import { echoed } from './request-error.ts';

describe('echoed: a client value as a refusal repeats it', () => {
  it('quotes a value of up to 64 characters whole, as JSON', () => {
    expect(echoed('a'.repeat(64))).toBe(`"${'a'.repeat(64)}"`);
    expect(echoed('x"\n')).toBe('"x\\"\\n"');
  });

  it('cuts a longer value to 64 characters, with an ellipsis inside the quotes', () => {
    expect(echoed('a'.repeat(65))).toBe(`"${'a'.repeat(64)}…"`);
    expect(echoed('a'.repeat(16 * 1024))).toBe(`"${'a'.repeat(64)}…"`);
  });

  it('never cuts between the two halves of a character outside the BMP', () => {
    // The emoji's first half is the 64th character: it is left out whole, second half and all.
    expect(echoed(`${'a'.repeat(63)}😀${'b'.repeat(10)}`)).toBe(`"${'a'.repeat(63)}…"`);
    // Ending at the 64th character, it stays.
    expect(echoed(`${'a'.repeat(62)}😀${'b'.repeat(10)}`)).toBe(`"${'a'.repeat(62)}😀…"`);
  });
});
