/**
 * Node preloads (`node --import`) the tests run hookwatch with, to have it behave as on an older Node the engines
 * range takes. noImportMetaMainPreload makes import.meta.main read undefined, as on Node 24.0 and 24.1, which
 * lack it. experimentalWarningsPreload does what Node 24.0 to 24.2 do under the Node the tests run on: warn on
 * stderr that type stripping and SQLite are experimental as the first .ts module loads, in every thread (a worker
 * thread has a process object of its own, and warns again).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Writes `lines` as the preload `name` (`node --import <it>`) in `dir`; returns its path. */
export async function writePreload(dir: string, name: string, lines: readonly string[]): Promise<string> {
  const preload = join(dir, name);
  await writeFile(preload, [...lines, ''].join('\n'));
  return preload;
}

/** Writes, in `dir`, a preload that warns so, and of $ALSO too when set; returns its path. */
export function experimentalWarningsPreload(dir: string): Promise<string> {
  return writePreload(dir, 'type-stripping-warning.mjs', [
    "import { registerHooks } from 'node:module';",
    'let warned = false;',
    'registerHooks({ load(url, context, nextLoad) {',
    "  if (!warned && url.endsWith('.ts')) {",
    '    warned = true;',
    "    process.emitWarning('Type Stripping is an experimental feature and might change at any time', 'ExperimentalWarning');",
    "    process.emitWarning('SQLite is an experimental feature and might change at any time', 'ExperimentalWarning');",
    "    if (process.env.ALSO) process.emitWarning(process.env.ALSO, 'ExperimentalWarning');",
    '  }',
    '  return nextLoad(url, context);',
    '} });',
  ]);
}

/**
 * Writes, in `dir`, a preload that makes import.meta.main read undefined in every .ts module, as Node 24.0 and 24.1
 * have it (it came in 24.2); returns its path. It goes with a process's execArgv to the processes it starts.
 */
export function noImportMetaMainPreload(dir: string): Promise<string> {
  return writePreload(dir, 'no-import-meta-main.mjs', [
    "import { registerHooks } from 'node:module';",
    'registerHooks({ load(url, context, nextLoad) {',
    '  const loaded = nextLoad(url, context);',
    "  return url.endsWith('.ts') ? { ...loaded, source: String(loaded.source).replaceAll('import.meta.main', 'undefined') } : loaded;",
    '} });',
  ]);
}

/**
 * Writes, in `dir`, a preload that lists in `file`, as the process exits, every hookwatch source module (.ts) it
 * loaded, one URL a line; returns its path.
 */
export function loadedModulesPreload(dir: string, file: string): Promise<string> {
  return writePreload(dir, 'loaded-modules.mjs', [
    "import { registerHooks } from 'node:module';",
    "import { writeFileSync } from 'node:fs';",
    'const loaded = [];',
    'registerHooks({ load(url, context, nextLoad) {',
    "  if (url.endsWith('.ts')) loaded.push(url);",
    '  return nextLoad(url, context);',
    '} });',
    `process.on('exit', () => writeFileSync(${JSON.stringify(file)}, loaded.join('\\n')));`,
  ]);
}
