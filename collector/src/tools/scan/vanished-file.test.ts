import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type * as FsPromises from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { captureIO } from '../../../test/support/capture-io.ts';
import { hookRecord } from '../../../test/support/synthetic-transcript.ts';
import { runScan } from './index.ts';

// A transcript deleted between the listing of its folder and the look at where it really is: the deletion is
// made to happen at that very moment.
vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof FsPromises>();
  return {
    ...fs,
    realpath: async (path: string) => {
      if (path.endsWith('vanishing.jsonl')) await fs.rm(path, { force: true });
      return fs.realpath(path);
    },
  };
});

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hookwatch-scan-vanished-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('scan: a transcript deleted while the folder is read', () => {
  it('names that file as unreadable and still reads the others', async () => {
    const projects = join(dir, 'projects');
    await mkdir(projects, { recursive: true });
    const record = (uuid: string): string => `${JSON.stringify(hookRecord({ uuid, sessionId: 'aaaaaaaa-0000-4000-8000-000000000001', hookName: 'Stop', stdout: 'S'.repeat(10) }))}\n`;
    await writeFile(join(projects, 'kept.jsonl'), record('hook-kept'));
    await writeFile(join(projects, 'vanishing.jsonl'), record('hook-gone'));
    const captured = captureIO(dir, { ...process.env });
    const code = await runScan(['--json', projects], captured.io);
    expect(captured.stderr()).toBe('');
    const result = JSON.parse(captured.stdout()) as { totals: { runs: number }; files: { path: string; error?: string }[] };
    expect(result.files.map((f) => [f.path, f.error === undefined ? 'read' : 'unreadable'])).toEqual([
      [join(projects, 'kept.jsonl'), 'read'],
      [join(projects, 'vanishing.jsonl'), 'unreadable'],
    ]);
    expect(result.files[1]?.error).toContain('ENOENT');
    expect(result.totals.runs).toBe(1);
    // As for any unreadable file: not a pass.
    expect(code).toBe(2);
  });
});
