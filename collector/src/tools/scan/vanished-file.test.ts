import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type * as FsPromises from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { captureIO } from '../../../test/support/capture-io.ts';
import { hookRecord } from '../../../test/support/synthetic-transcript.ts';
import { runScan } from './index.ts';

// A transcript deleted between the listing of its folder and the look at where it really is, and a folder deleted
// between the listing of its parent and its own: each deletion is made to happen at that very moment.
vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof FsPromises>();
  return {
    ...fs,
    realpath: async (path: string) => {
      if (path.endsWith('vanishing.jsonl')) await fs.rm(path, { force: true });
      return fs.realpath(path);
    },
    readdir: (async (path: string, options: never) => {
      if (path.endsWith('vanishing-folder')) await fs.rm(path, { recursive: true, force: true });
      return fs.readdir(path, options);
    }) as typeof fs.readdir,
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

describe('scan: a folder deleted while its parent is read', () => {
  it('names that folder as unreadable and still reads the others', async () => {
    const projects = join(dir, 'projects-folder');
    const record = (uuid: string): string => `${JSON.stringify(hookRecord({ uuid, sessionId: 'aaaaaaaa-0000-4000-8000-000000000002', hookName: 'Stop', stdout: 'S'.repeat(10) }))}\n`;
    // As Claude Code leaves a session: its transcript, and beside it a folder of the same name (subagents, tool results).
    await mkdir(join(projects, 'p', 'vanishing-folder', 'subagents'), { recursive: true });
    await writeFile(join(projects, 'p', 'vanishing-folder', 'subagents', 'agent-1.jsonl'), record('hook-sub'));
    await writeFile(join(projects, 'p', 'zz-kept.jsonl'), record('hook-kept-2'));
    const captured = captureIO(dir, { ...process.env });
    const code = await runScan(['--json', projects], captured.io);
    expect(captured.stderr()).toBe('');
    const result = JSON.parse(captured.stdout()) as { totals: { runs: number }; files: { path: string; error?: string }[] };
    expect(result.files.map((f) => [f.path, f.error === undefined ? 'read' : 'unreadable'])).toEqual([
      [join(projects, 'p', 'vanishing-folder'), 'unreadable'],
      [join(projects, 'p', 'zz-kept.jsonl'), 'read'],
    ]);
    expect(result.files[0]?.error).toContain('ENOENT');
    expect(result.totals.runs).toBe(1);
    // As for an unreadable file: not a pass, and the text report says what was not read.
    expect(code).toBe(2);
    const text = captureIO(dir, { ...process.env });
    await mkdir(join(projects, 'p', 'vanishing-folder'));
    expect(await runScan([projects], text.io)).toBe(2);
    expect(text.stdout()).toContain(`${join(projects, 'p', 'vanishing-folder')}: unreadable: ENOENT`);
    expect(text.stdout()).toContain('UNREADABLE: 1 file could not be read');
  });
});
