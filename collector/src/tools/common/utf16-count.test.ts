import { StringDecoder } from 'node:string_decoder';

import { describe, expect, it } from 'vitest';

import { seededRandom as random } from '../../../test/support/random.ts';
import { Utf16Counter } from './utf16-count.ts';

/** Whole characters of 1 to 4 bytes, and sequences a decoder replaces: a stray continuation byte, an unfinished emoji, a surrogate, 0xf8. */
const PIECES = ['a', '\n', 'é', '€', '中', '😀', 'abcdefgh'].map((s) => Buffer.from(s)).concat(
  [[0x80], [0xff], [0xf0, 0x9f], [0xf0, 0x9f, 0x98], [0xe2, 0x82], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xf8]].map((b) => Buffer.from(b)),
);

describe('Utf16Counter', () => {
  it('counts what a StringDecoder gives, however the stream is cut into chunks and whichever are decoded', () => {
    const next = random(42);
    for (let n = 0; n < 20_000; n++) {
      const bytes = Buffer.concat(Array.from({ length: 1 + Math.floor(next() * 40) }, () => PIECES[Math.floor(next() * PIECES.length)] ?? Buffer.alloc(0)));
      const reference = new StringDecoder('utf8');
      const expected = reference.write(bytes).length + reference.end().length;
      const counter = new Utf16Counter();
      let decoded = '';
      for (let at = 0; at < bytes.length;) {
        const end = Math.min(bytes.length, at + 1 + Math.floor(next() * 9));
        // Some chunks decoded (the head a tool keeps), the others only counted.
        if (n % 3 === 0 || (n % 3 === 1 && next() < 0.5)) decoded += counter.text(bytes.subarray(at, end));
        else counter.count(bytes.subarray(at, end));
        at = end;
      }
      const rest = counter.end();
      decoded += rest;
      expect(counter.units, bytes.toString('hex')).toBe(expected);
      if (n % 3 === 0) expect(decoded).toBe(bytes.toString('utf8'));
      // Every chunk only counted: its code points are all of them, but for what end() gave.
      if (n % 3 === 2) expect(counter.countedCodePoints + [...rest].length, bytes.toString('hex')).toBe([...bytes.toString('utf8')].length);
    }
  });

  it('counts long valid chunks at any alignment in memory, in code units and code points: ASCII, and characters of 2, 3 and 4 bytes', () => {
    for (const text of ['plain text\n'.repeat(500), 'é€😀 中文 ok'.repeat(300), '😀'.repeat(777)]) {
      for (let offset = 0; offset < 8; offset++) {
        const bytes = Buffer.concat([Buffer.alloc(offset), Buffer.from(text)]).subarray(offset);
        const counter = new Utf16Counter();
        counter.count(bytes);
        counter.end();
        expect(counter.units, `${text.slice(0, 12)} at ${offset}`).toBe(text.length);
        expect(counter.countedCodePoints, `${text.slice(0, 12)} at ${offset}`).toBe([...text].length);
      }
    }
  });
});

describe('Utf16Counter at every cut', () => {
  /** Sequences a decoder takes whole, in part, or replaces: overlong forms, surrogates, past U+10FFFF, a BOM, bytes never in UTF-8. */
  const SEQUENCES = [
    [0xef, 0xbb, 0xbf], [0xf0, 0x9f, 0x98, 0x80], [0xf4, 0x8f, 0xbf, 0xbf], [0xe2, 0x82, 0xac], [0xc3, 0xa9], [0xed, 0x9f, 0xbf],
    [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf], [0xf4, 0x90, 0x80, 0x80], [0xf5, 0x80, 0x80, 0x80], [0xc0, 0x80], [0xc1, 0xbf],
    [0xe0, 0x80, 0x80], [0xe0, 0x9f, 0xbf], [0xf0, 0x80, 0x80, 0x80], [0xf0, 0x8f, 0xbf, 0xbf], [0xf0, 0x9f, 0x98], [0xe2, 0x82],
    [0xf0, 0x9f], [0x80], [0xbf, 0xbf, 0xbf, 0xbf], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xfe], [0xff], [0xc2], [0xf0],
  ];
  /** What stands around it: nothing, ASCII, an emoji left unfinished, a whole one. */
  const AROUND = [[], [0x61], [0xf0, 0x9f], [0xf0, 0x9f, 0x98, 0x80]];

  it('counts what a StringDecoder gives in code units and code points, each of three chunks (empty ones too) decoded or only counted', () => {
    // Each case is checked as it runs, and those that differ listed at the end (code units/code points, got for wanted).
    const wrong: string[] = [];
    for (const before of AROUND) {
      for (const sequence of SEQUENCES) {
        for (const after of AROUND) {
          // Twelve ASCII bytes after: counted from the bytes, four at a time, past what the decoder holds.
          const bytes = Buffer.from([...before, ...sequence, ...after, ...Buffer.from('twelve bytes')]);
          const reference = new StringDecoder('utf8');
          const expected = reference.write(bytes) + reference.end();
          const want = [expected.length, [...expected].length];
          for (let i = 0; i <= bytes.length; i++) {
            for (let j = i; j <= bytes.length; j++) {
              for (let decoded = 0; decoded < 8; decoded++) {
                const counter = new Utf16Counter();
                let text = '';
                [bytes.subarray(0, i), bytes.subarray(i, j), bytes.subarray(j)].forEach((chunk, k) => {
                  if ((decoded >> k) & 1) text += counter.text(chunk);
                  else counter.count(chunk);
                });
                text += counter.end();
                const got = [counter.units, [...text].length + counter.countedCodePoints];
                if (got[0] !== want[0] || got[1] !== want[1] || (decoded === 7 && text !== expected)) {
                  wrong.push(`${bytes.toString('hex')} cut at ${i} and ${j}, decoded ${decoded.toString(2)}: ${got.join('/')} for ${want.join('/')}`);
                }
              }
            }
          }
        }
      }
    }
    expect(wrong.slice(0, 10), `${wrong.length} cases`).toEqual([]);
  });
});
