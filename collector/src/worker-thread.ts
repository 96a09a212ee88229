import { setFlagsFromString } from 'node:v8';
import { Worker, type ResourceLimits, type WorkerOptions } from 'node:worker_threads';

/** collector/bin/worker-thread.mjs, the entry of every worker thread. */
const ENTRY = new URL('../bin/worker-thread.mjs', import.meta.url);

/**
 * A worker thread running `module`. It has Node's options as a worker gets them by default: those of the process
 * that apply to one thread (preloads, module resolution, warnings), whether from node's command line or
 * NODE_OPTIONS. V8's flags (`--max-old-space-size`, `--stack-size`) and the options of the whole process
 * (`--title`, `--openssl-config`) are left out, as they already hold for every thread (the heap's for a worker not
 * given `resourceLimits` of its own: heapLimits): an execArgv of its own, where Node refuses them
 * (ERR_WORKER_INVALID_EXEC_ARGV), would fail every worker of a process started with one.
 * The entry loads collector/bin/quiet-warnings.mjs, then `module`: a worker has a process object of its own,
 * and Node 24.0 to 24.2 warn again in it that type stripping and SQLite are experimental, as its first .ts module
 * and node:sqlite load, on the stderr that hookwatch.mjs keeps them off for the main thread.
 */
export function startWorker(module: URL, options: Omit<WorkerOptions, 'argv' | 'execArgv'> = {}): Worker {
  return new Worker(ENTRY, { ...options, resourceLimits: workerLimits(options.resourceLimits), argv: [module.href] });
}

/** `--max-old-space-size` as this process was given it (node's command line after NODE_OPTIONS), in MiB. */
export function oldSpaceFlag(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env['NODE_OPTIONS'] ?? ''): number | undefined {
  let mb: number | undefined;
  for (const args of [nodeOptions, execArgv.join(' ')]) {
    for (const m of args.matchAll(/(?:^|\s)--max[-_]old[-_]space[-_]size(?:=|\s+)(\d+)(?=\s|$)/g)) mb = Number(m[1]);
  }
  return mb;
}

/** The flag's old space, once workerLimits has taken it off V8's flags; undefined before, or without the flag. */
let flagged: number | undefined;
let released = false;

/**
 * The bounds a worker starts with. V8 reads `--max-old-space-size` for every heap it makes, over a worker's own
 * maxOldGenerationSizeMb: under the flag, a worker given a smaller bound (heapLimits) would get the flag's
 * instead. So the first worker takes the flag off V8's flags (the main thread's heap, made at the start, keeps the
 * bound it has), and a worker given no old space of its own gets the flag's, as it would have under the flag.
 */
function workerLimits(limits: ResourceLimits | undefined): ResourceLimits | undefined {
  if (!released) {
    released = true;
    flagged = oldSpaceFlag();
    if (flagged !== undefined && flagged > 0) setFlagsFromString('--max-old-space-size=0');
  }
  if (limits?.maxOldGenerationSizeMb !== undefined || flagged === undefined || flagged <= 0) return limits;
  return { ...limits, maxOldGenerationSizeMb: flagged };
}

const MiB = 1024 * 1024;

/**
 * The young generation of a worker given a heap bound (heapLimits), in MiB: V8 counts one and a half times it in
 * the heap's limit (24 MiB). Left to Node, a worker's would be the main thread's (192 MiB of its 448 under the
 * Deployment's flag); with this one the JSON parse of a body of otlp.maxRequestBytes and the largest read
 * queries measured no slower.
 */
export const WORKER_YOUNG_GENERATION_MB = 16;

/**
 * A worker's own heap bound: an old space of `oldSpaceBytes` (as `--max-old-space-size` sets the main thread's)
 * and WORKER_YOUNG_GENERATION_MB. A worker that needs more stops with ERR_WORKER_OUT_OF_MEMORY, failing only what
 * it held, where without one it may grow as far as the main thread's heap and the process be killed at the
 * container's memory limit.
 */
export function heapLimits(oldSpaceBytes: number): ResourceLimits {
  return { maxOldGenerationSizeMb: Math.max(1, Math.ceil(oldSpaceBytes / MiB)), maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB };
}
