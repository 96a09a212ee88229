/**
 * main.ts and guard/main.ts run as the script node was started with (`node collector/src/main.ts serve`, as the
 * image's entry point and `docker exec ... backup` start it) on every Node the engines range takes, and run
 * nothing when imported: collector/bin/hookwatch.mjs imports them and runs the command itself.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { HOOKWATCH_BIN, outputOf } from '../test/support/hookwatch-process.ts';
import type { ProcessOutput } from '../test/support/hookwatch-process.ts';
import { loadedModulesPreload, noImportMetaMainPreload } from '../test/support/preloads.ts';
import { HOOKWATCH_VERSION } from './version.ts';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
const GUARD_MAIN = fileURLToPath(new URL('./tools/guard/main.ts', import.meta.url));
const VERSION_LINE = `hookwatch ${HOOKWATCH_VERSION} (Node.js ${process.versions.node})\n`;

let dir: string;
/** `--import` of the preload that makes this Node read import.meta.main as 24.0 and 24.1 do: undefined. */
let asNode24Dot0: string[];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hookwatch-main-'));
  asNode24Dot0 = ['--import', await noImportMetaMainPreload(dir)];
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** `node <nodeArgs...> <script> <args...>` in the test folder; what it wrote and how it ended. */
function node(nodeArgs: readonly string[], script: string, args: readonly string[], input = ''): Promise<ProcessOutput> {
  const child = spawn(process.execPath, [...nodeArgs, script, ...args], { cwd: dir, env: { ...process.env, HOOKWATCH_GUARD_DIR: dir }, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.end(input);
  return outputOf(child);
}

describe('main.ts started by node', () => {
  it('runs the command on every Node 24, 24.0 and 24.1 included, which have no import.meta.main', async () => {
    for (const nodeArgs of [[], asNode24Dot0]) {
      expect(await node(nodeArgs, MAIN, ['version'])).toEqual({ code: 0, stdout: VERSION_LINE, stderr: '' });
      // A failing command still says why and exits non-zero, where nothing ran and it exited 0.
      const unknown = await node(nodeArgs, MAIN, ['--db']);
      expect([unknown.code, unknown.stdout, unknown.stderr]).toEqual([2, '', expect.stringContaining('--db') as unknown]);
      expect(await node(nodeArgs, GUARD_MAIN, ['--', 'echo', 'guarded'], '{}')).toEqual({ code: 0, stdout: 'guarded\n', stderr: '' });
    }
  });

  it('runs it started through a symbolic link to main.ts, and runs nothing when imported', async () => {
    const link = join(dir, 'hookwatch-main.ts');
    await symlink(MAIN, link);
    expect(await node(asNode24Dot0, link, ['version'])).toEqual({ code: 0, stdout: VERSION_LINE, stderr: '' });
    // The bin imports main.ts and runs the command itself: once.
    expect(await node(asNode24Dot0, HOOKWATCH_BIN, ['version'])).toEqual({ code: 0, stdout: VERSION_LINE, stderr: '' });
    // Imported by another script, main.ts runs nothing of its own.
    const importer = join(dir, 'imports-main.mjs');
    await writeFile(importer, `await import(${JSON.stringify(pathToFileURL(MAIN).href)});\nawait import(${JSON.stringify(pathToFileURL(GUARD_MAIN).href)});\nconsole.log('imported');\n`);
    expect(await node(asNode24Dot0, importer, ['version'])).toEqual({ code: 0, stdout: 'imported\n', stderr: '' });
  });
});

describe('check started on its own', () => {
  it('loads none of the service: no configuration, store, server or command-line code of serve', async () => {
    const list = join(dir, 'loaded-modules.txt');
    const preload = await loadedModulesPreload(dir, list);
    const src = fileURLToPath(new URL('.', import.meta.url));
    // As a user runs it (the bin), and as the image does (node collector/src/main.ts).
    for (const script of [HOOKWATCH_BIN, MAIN]) {
      const ran = await node(['--import', preload], script, ['check', '--', 'printf checked']);
      expect(ran.code, ran.stderr).toBe(0);
      expect(ran.stdout).toMatch(/^OK: 1 hook checked/m);
      const loaded = (await readFile(list, 'utf8')).split('\n').map((url) => fileURLToPath(url).slice(src.length));
      expect(loaded).toContain('tools/check/index.ts');
      expect(loaded.filter((path) => /^(cli\/(main|help|args)|config\/(index|load|schema)|service)\.ts$|^(store|api|receiver|otlp|pipeline|alerting|forward|notify)\//.test(path))).toEqual([]);
    }
  });
});
