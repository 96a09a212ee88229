import * as fs from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, describe, expect, it, vi } from 'vitest';

/**
 * A guard run taking the failure line while a sender writes one, in the one order that could lose it: the other
 * side's step run at the point between this side's two (read and remove; open and write).
 */
const between = vi.hoisted(() => ({ afterRead: undefined as (() => void) | undefined, inWrite: undefined as (() => void) | undefined }));
vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof fs>();
  const readFileSync = ((...args: Parameters<typeof real.readFileSync>) => {
    const read = real.readFileSync(...args);
    const step = between.afterRead;
    between.afterRead = undefined;
    step?.();
    return read;
  }) as typeof real.readFileSync;
  const writeFileSync = ((path: fs.PathOrFileDescriptor, data: string | NodeJS.ArrayBufferView, options?: fs.WriteFileOptions) => {
    const step = between.inWrite;
    if (step === undefined || typeof path === 'number') return real.writeFileSync(path, data, options);
    between.inWrite = undefined;
    // As writeFileSync does it: the file opened (and emptied), then written.
    const fd = real.openSync(path, 'w', 0o600);
    try {
      step();
      if (typeof data === 'string') real.writeSync(fd, data);
      else real.writeSync(fd, data);
    } finally {
      real.closeSync(fd);
    }
  }) as typeof real.writeFileSync;
  return { ...real, default: { ...real, readFileSync, writeFileSync }, readFileSync, writeFileSync };
});

const { takeReportFailure } = await import('./report.ts');
const { sayFailure } = await import('./report-send.ts');

let dir: string | undefined;
afterEach(async () => {
  between.afterRead = undefined;
  between.inWrite = undefined;
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe('the line a failed trim report leaves in the guard\'s folder', () => {
  it('is not lost when a sender writes a new one while a run takes the last', async () => {
    dir = await mkdtemp(join(tmpdir(), 'hookwatch-report-failed-'));
    const file = join(dir, 'report-failed.txt');
    await writeFile(file, 'first failure\n');
    between.afterRead = () => sayFailure(file, 'second failure');
    expect(takeReportFailure(dir)).toBe('hookwatch guard: an earlier trim report was not delivered: first failure\n');
    expect(takeReportFailure(dir)).toBe('hookwatch guard: an earlier trim report was not delivered: second failure\n');
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('is never taken half written: a run looking while a sender writes it finds none, and a later one finds it whole', async () => {
    dir = await mkdtemp(join(tmpdir(), 'hookwatch-report-failed-'));
    const folder = dir;
    const file = join(folder, 'report-failed.txt');
    let meanwhile: string | undefined = 'not looked';
    between.inWrite = () => (meanwhile = takeReportFailure(folder));
    sayFailure(file, 'connection refused');
    expect(meanwhile).toBeUndefined();
    expect(await readFile(file, 'utf8')).toBe('connection refused\n');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(takeReportFailure(folder)).toBe('hookwatch guard: an earlier trim report was not delivered: connection refused\n');
    expect(fs.readdirSync(folder)).toEqual([]);
  });
});
