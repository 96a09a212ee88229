import { Worker, type WorkerOptions } from 'node:worker_threads';

/** collector/bin/worker-thread.mjs, the entry of every worker thread. */
const ENTRY = new URL('../bin/worker-thread.mjs', import.meta.url);

/**
 * A worker thread running `module`. It has Node's options as a worker gets them by default: those of the process
 * that apply to one thread (preloads, module resolution, warnings), whether from node's command line or
 * NODE_OPTIONS. V8's flags (`--max-old-space-size`, `--stack-size`) and the options of the whole process
 * (`--title`, `--openssl-config`) are left out, as they already hold for every thread: an execArgv of its own,
 * where Node refuses them (ERR_WORKER_INVALID_EXEC_ARGV), would fail every worker of a process started with one.
 * The entry loads collector/bin/quiet-warnings.mjs, then `module`: a worker has a process object of its own,
 * and Node 24.0 to 24.2 warn again in it that type stripping and SQLite are experimental, as its first .ts module
 * and node:sqlite load, on the stderr that hookwatch.mjs keeps them off for the main thread.
 */
export function startWorker(module: URL, options: Omit<WorkerOptions, 'argv' | 'execArgv'> = {}): Worker {
  return new Worker(ENTRY, { ...options, argv: [module.href] });
}
