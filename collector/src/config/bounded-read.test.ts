/**
 * The bounded reader behind the config file and the TLS files: a file up to the bound comes back whole, byte for
 * byte, however the reads split it (a pipe gives a few bytes at a time); one past it is refused.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileTooLargeError, readBounded, readBoundedSync } from './bounded-read.ts';
import { tempDir } from '../../test/helpers.ts';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function folder(): string {
  const tmp = tempDir('hookwatch-bounded-');
  cleanups.push(tmp.cleanup);
  return tmp.dir;
}

describe('readBoundedSync and readBounded', () => {
  it('give a file up to the bound whole, and refuse one byte more naming the bound and what the file is for', async () => {
    const dir = folder();
    const max = 200_000;
    const bytes = randomBytes(max);
    writeFileSync(join(dir, 'fits'), bytes);
    writeFileSync(join(dir, 'over'), Buffer.concat([bytes, Buffer.from('x')]));
    writeFileSync(join(dir, 'empty'), '');
    expect(readBoundedSync(join(dir, 'fits'), max, 'PEM file').equals(bytes)).toBe(true);
    expect((await readBounded(join(dir, 'fits'), max, 'PEM file')).equals(bytes)).toBe(true);
    expect(readBoundedSync(join(dir, 'empty'), max, 'PEM file')).toHaveLength(0);
    const refused = 'it holds more than 200000, more than any PEM file needs: is it the file meant?';
    expect(() => readBoundedSync(join(dir, 'over'), max, 'PEM file')).toThrow(new FileTooLargeError(refused));
    await expect(readBounded(join(dir, 'over'), max, 'PEM file')).rejects.toThrow(new FileTooLargeError(refused));
    expect(() => readBoundedSync('/dev/zero', 1024 * 1024, 'configuration')).toThrow('it holds more than 1MiB, more than any configuration needs');
    expect(() => readBoundedSync(join(dir, 'missing'), max, 'PEM file')).toThrow(expect.objectContaining({ code: 'ENOENT' }) as Error);
  });

  it('read a pipe written a few bytes at a time whole', async () => {
    const dir = folder();
    const fifo = join(dir, 'fifo');
    const made = spawn('mkfifo', [fifo]);
    await new Promise<void>((resolve, reject) => made.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`mkfifo exited ${code}`)))));
    // 3000 writes of 7 bytes, each flushed on its own by a shell loop: the reader sees many short reads.
    const writer = spawn('sh', ['-c', `i=0; while [ $i -lt 3000 ]; do printf 'abcdef\\n'; i=$((i+1)); done > '${fifo}'`]);
    cleanups.push(() => writer.kill());
    const text = (await readBounded(fifo, 4 * 1024 * 1024, 'configuration')).toString('utf8');
    expect(text).toBe('abcdef\n'.repeat(3000));
  });
});
