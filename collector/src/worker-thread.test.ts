/**
 * startWorker in a real process started with options Node refuses in a worker's execArgv (V8 flags, an option of
 * the whole process) and a preload: the worker runs its module with its workerData, the preload ran in it too,
 * and its heap is bounded as the main thread's is, or by the bound it is given (heapLimits), whatever the flag.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { writePreload } from '../test/support/preloads.ts';

const dir = mkdtempSync(`${tmpdir()}/hookwatch-worker-thread-`);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes the module `name` in `dir`; returns its path. */
function writeModule(name: string, lines: readonly string[]): string {
  const path = join(dir, name);
  writeFileSync(path, [...lines, ''].join('\n'));
  return path;
}

it('starts a worker in a process given V8 and whole-process options, with its preloads and its heap bound', async () => {
  const preload = await writePreload(dir, 'preload.mjs', ["import { threadId } from 'node:worker_threads';", '(globalThis.preloaded ??= []).push(threadId);']);
  const module = writeModule('module.mjs', [
    "import { parentPort, workerData } from 'node:worker_threads';",
    "import { getHeapStatistics } from 'node:v8';",
    'parentPort.postMessage({ workerData, preloaded: globalThis.preloaded, heapLimit: getHeapStatistics().heap_size_limit });',
  ]);
  const main = writeModule('main.mjs', [
    "import { pathToFileURL } from 'node:url';",
    "import { getHeapStatistics } from 'node:v8';",
    `const { heapLimits, startWorker } = await import(${JSON.stringify(new URL('./worker-thread.ts', import.meta.url).href)});`,
    'const answer = (worker) => new Promise((resolve, reject) => {',
    '  worker.once(\'error\', reject);',
    '  worker.once(\'message\', (m) => { resolve(m); void worker.terminate(); });',
    '});',
    'try {',
    `  const m = await answer(startWorker(pathToFileURL(${JSON.stringify(module)}), { workerData: { path: 'x.db' } }));`,
    `  const bounded = await answer(startWorker(pathToFileURL(${JSON.stringify(module)}), { workerData: {}, resourceLimits: heapLimits(40 * 1024 * 1024) }));`,
    '  console.log(JSON.stringify({ ...m, boundedHeapLimit: bounded.heapLimit, mainHeapLimit: getHeapStatistics().heap_size_limit }));',
    '} catch (err) {',
    '  console.log(JSON.stringify({ error: err.message }));',
    '  process.exit(1);',
    '}',
  ]);
  const nodeArgs = ['--max-old-space-size=96', '--expose-gc', '--title=hookwatch-worker-test', '--import', preload];
  const r = spawnSync(process.execPath, [...nodeArgs, main], { encoding: 'utf8', timeout: 20_000 });
  expect(r.stderr).toBe('');
  const answer = JSON.parse(r.stdout) as Record<string, unknown>;
  expect(answer).toMatchObject({ workerData: { path: 'x.db' }, preloaded: [1] });
  expect(answer['heapLimit']).toBe(answer['mainHeapLimit']);
  // 96 MiB of old generation, and the young generation's share: far below the default of some 4 GiB.
  expect(answer['heapLimit']).toBeLessThan(512 * 1024 * 1024);
  // A worker given a bound of its own has it, not the flag's (which V8 would otherwise apply to every heap):
  // 40 MiB of old space and the young generation's 24 MiB.
  expect(answer['boundedHeapLimit']).toBe((40 + 24) * 1024 * 1024);
  expect(r.status).toBe(0);
});
