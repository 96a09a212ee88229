/**
 * Node's options for a worker thread: the process's own, as a worker gets by default, and a preload
 * (collector/bin/quiet-warnings.mjs). A worker has a process object of its own: Node 24.0 to 24.2 warn again in
 * it that type stripping and SQLite are experimental, as its first .ts module and node:sqlite load, on the stderr
 * that hookwatch.mjs keeps them off for the main thread.
 */
export function workerExecArgv(): string[] {
  return [...process.execArgv, '--import', new URL('../bin/quiet-warnings.mjs', import.meta.url).href];
}
