/**
 * startWorker in a real process started with options Node refuses in a worker's execArgv (V8 flags, an option of
 * the whole process) and a preload: the worker runs its module with its workerData, the preload ran in it too,
 * and its heap is bounded as the main thread's is, or by the bound it is given (heapLimits), whatever the flag that
 * bounds the main thread's heap and wherever it was given (node's command line or NODE_OPTIONS). The main thread
 * keeps its own bound once a worker has started.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writePreload } from '../test/support/preloads.ts';

const dir = mkdtempSync(`${tmpdir()}/hookwatch-worker-thread-`);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const MiB = 1024 * 1024;

/** Writes the module `name` in `dir`; returns its path. */
function writeModule(name: string, lines: readonly string[]): string {
  const path = join(dir, name);
  writeFileSync(path, [...lines, ''].join('\n'));
  return path;
}

const IMPORT_WORKER_THREAD = `const { heapLimits, startWorker } = await import(${JSON.stringify(new URL('./worker-thread.ts', import.meta.url).href)});`;

/** A worker's module: answers its workerData, the threads the preload ran in, and its heap's limit. */
const module = writeModule('module.mjs', [
  "import { parentPort, workerData } from 'node:worker_threads';",
  "import { getHeapStatistics } from 'node:v8';",
  'parentPort.postMessage({ workerData, preloaded: globalThis.preloaded, heapLimit: getHeapStatistics().heap_size_limit });',
]);

/** Starts a worker given no bound, then one given 40 MiB of old space; prints their answers and the main thread's heap limit. */
const main = writeModule('main.mjs', [
  "import { pathToFileURL } from 'node:url';",
  "import { getHeapStatistics } from 'node:v8';",
  IMPORT_WORKER_THREAD,
  'const answer = (worker) => new Promise((resolve, reject) => {',
  '  worker.once(\'error\', reject);',
  '  worker.once(\'message\', (m) => { resolve(m); void worker.terminate(); });',
  '});',
  'try {',
  `  const m = await answer(startWorker(pathToFileURL(${JSON.stringify(module)}), { workerData: { path: 'x.db' } }));`,
  `  const bounded = await answer(startWorker(pathToFileURL(${JSON.stringify(module)}), { workerData: {}, resourceLimits: heapLimits(40 * 1024 * 1024) }));`,
  `  const again = await answer(startWorker(pathToFileURL(${JSON.stringify(module)}), { workerData: {} }));`,
  '  console.log(JSON.stringify({ ...m, againHeapLimit: again.heapLimit, boundedHeapLimit: bounded.heapLimit, mainHeapLimit: getHeapStatistics().heap_size_limit }));',
  '} catch (err) {',
  '  console.log(JSON.stringify({ error: err.message }));',
  '  process.exit(1);',
  '}',
]);

/** Runs main.mjs with `flag` on node's command line or in NODE_OPTIONS, and the other options on the command line. */
function runMain(flag: string, where: 'argv' | 'NODE_OPTIONS', preload: string): { status: number | null; stderr: string; answer: Record<string, unknown> } {
  const nodeArgs = ['--expose-gc', '--title=hookwatch-worker-test', '--import', preload];
  const env = { ...process.env, NODE_OPTIONS: where === 'NODE_OPTIONS' ? flag : '' };
  const args = where === 'argv' ? [flag, ...nodeArgs, main] : [...nodeArgs, main];
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 30_000, env });
  return { status: r.status, stderr: r.stderr, answer: r.stdout === '' ? {} : JSON.parse(r.stdout) as Record<string, unknown> };
}

describe.each([
  // 96 MiB of old space, and the young generation's share: far below the default of some 4 GiB.
  ['--max-old-space-size=96', (limit: number) => limit < 512 * MiB],
  // 5% of the memory of the machine (or of the container's limit): below the default too.
  ['--max-old-space-size-percentage=5', (limit: number) => limit < 4096 * MiB],
  // The whole heap, young generation included.
  ['--max-heap-size=120', (limit: number) => limit === 120 * MiB],
])('under %s', (flag, bounded) => {
  it.each(['argv', 'NODE_OPTIONS'] as const)('starts a worker from %s with its preloads, the main thread\'s heap bound, or its own', async (where) => {
    const preload = await writePreload(dir, 'preload.mjs', ["import { threadId } from 'node:worker_threads';", '(globalThis.preloaded ??= []).push(threadId);']);
    const { status, stderr, answer } = runMain(flag, where, preload);
    expect(stderr).toBe('');
    expect(answer).toMatchObject({ workerData: { path: 'x.db' }, preloaded: [1] });
    // The flag holds for the main thread.
    expect(bounded(answer['mainHeapLimit'] as number)).toBe(true);
    // A worker given no bound has the main thread's heap limit, the first and those after.
    expect(answer['heapLimit']).toBe(answer['mainHeapLimit']);
    expect(answer['againHeapLimit']).toBe(answer['mainHeapLimit']);
    // A worker given a bound of its own has it, not the flag's (which V8 would otherwise apply to every heap):
    // 40 MiB of old space and the young generation's 24 MiB.
    expect(answer['boundedHeapLimit']).toBe((40 + 24) * MiB);
    expect(status).toBe(0);
  });
});

it('keeps the main thread\'s heap bound once a worker has started', () => {
  // Starts a worker given a bound (the flag is then off V8's flags), then holds 1 MiB after 1 MiB until the heap
  // is full, printing how much it holds.
  const fill = writeModule('fill.mjs', [
    "import { pathToFileURL } from 'node:url';",
    "import { getHeapStatistics } from 'node:v8';",
    IMPORT_WORKER_THREAD,
    `const worker = startWorker(pathToFileURL(${JSON.stringify(module)}), { workerData: {}, resourceLimits: heapLimits(40 * 1024 * 1024) });`,
    "await new Promise((resolve, reject) => { worker.once('error', reject); worker.once('message', resolve); });",
    'await worker.terminate();',
    "console.log(JSON.stringify({ mainHeapLimit: getHeapStatistics().heap_size_limit }));",
    'const held = [];',
    'for (let i = 0; i < 4096; i++) {',
    '  held.push(new Array(128 * 1024).fill(i));', // 1 MiB: 128 Ki 8-byte slots.
    "  console.log(JSON.stringify({ held: held.length }));",
    '}',
  ]);
  const r = spawnSync(process.execPath, ['--max-old-space-size=64', fill], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, NODE_OPTIONS: '' } });
  const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { mainHeapLimit?: number; held?: number });
  expect(lines[0]!.mainHeapLimit).toBeLessThan(512 * MiB);
  // The process died of its heap being full, holding some 64 MiB and not far beyond.
  expect(r.stderr).toMatch(/heap out of memory/i);
  expect(r.status === null ? r.signal : r.status).not.toBe(0);
  const held = lines.at(-1)!.held ?? 0;
  expect(held).toBeGreaterThan(32);
  expect(held).toBeLessThan(96);
});
