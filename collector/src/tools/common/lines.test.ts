import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { readLines } from './lines.ts';
import type { LineStats } from './lines.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hookwatch-lines-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function collect(content: string | Buffer, options: { maxLineBytes?: number; chunkBytes?: number } = {}) {
  const path = join(dir, `f-${Math.random().toString(36).slice(2)}.txt`);
  await writeFile(path, content);
  const stats: LineStats = { lines: 0, bytes: 0, oversizedLines: 0 };
  const lines: { n: number; text: string; unterminated: boolean }[] = [];
  for await (const line of readLines(path, { ...options, stats })) {
    lines.push({ n: line.lineNumber, text: line.bytes.toString('utf8'), unterminated: line.unterminated });
  }
  return { lines, stats };
}

describe('readLines', () => {
  it('splits lines across read chunks, strips CRLF and marks an unterminated last line', async () => {
    const { lines, stats } = await collect('alpha\r\nbeta\n\ngamma-without-newline', { chunkBytes: 3 });
    expect(lines).toEqual([
      { n: 1, text: 'alpha', unterminated: false },
      { n: 2, text: 'beta', unterminated: false },
      { n: 3, text: '', unterminated: false },
      { n: 4, text: 'gamma-without-newline', unterminated: true },
    ]);
    expect(stats).toEqual({ lines: 4, bytes: 34, oversizedLines: 0 });
  });

  it('keeps multi-byte characters split between chunks intact', async () => {
    const { lines } = await collect('😀é😀\nx\n', { chunkBytes: 1 });
    expect(lines.map((l) => l.text)).toEqual(['😀é😀', 'x']);
  });

  it('skips lines over the limit, whether they fit in one chunk or span many, and goes on after them', async () => {
    const long = 'y'.repeat(100);
    const { lines, stats } = await collect(`ok1\n${long}\nok2\n${long}`, { maxLineBytes: 50, chunkBytes: 16 });
    expect(lines.map((l) => l.text)).toEqual(['ok1', 'ok2']);
    expect(stats.oversizedLines).toBe(2);
    expect(stats.lines).toBe(4);

    const inOneChunk = await collect(`${long}\nok\n`, { maxLineBytes: 50, chunkBytes: 1024 });
    expect(inOneChunk.lines.map((l) => l.text)).toEqual(['ok']);
    expect(inOneChunk.stats.oversizedLines).toBe(1);
  });

  it('accepts a line of exactly the limit', async () => {
    const { lines, stats } = await collect(`${'z'.repeat(50)}\n`, { maxLineBytes: 50, chunkBytes: 7 });
    expect(lines[0]?.text.length).toBe(50);
    expect(stats.oversizedLines).toBe(0);
  });

  it('refuses a UTF-16 file by its byte order mark, little- or big-endian, however it is read', async () => {
    for (const bom of [[0xff, 0xfe], [0xfe, 0xff]]) {
      const text = Buffer.from('{"type":"user"}\n', 'utf16le');
      const content = Buffer.concat([Buffer.from(bom), bom[0] === 0xfe ? text.swap16() : text]);
      for (const chunkBytes of [1, 1024]) await expect(collect(content, { chunkBytes })).rejects.toThrow(/^UTF-16 encoded, not UTF-8/);
    }
    // A UTF-8 file whose first character merely starts with such a byte is not mistaken for one.
    expect((await collect(Buffer.from('ÿþ\n'))).lines.map((l) => l.text)).toEqual(['ÿþ']);
  });

  it('yields nothing for an empty file', async () => {
    const { lines, stats } = await collect('');
    expect(lines).toEqual([]);
    expect(stats.lines).toBe(0);
  });
});
