import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { Worker, type ResourceLimits, type WorkerOptions } from 'node:worker_threads';

/** collector/bin/worker-thread.mjs, the entry of every worker thread. */
const ENTRY = new URL('../bin/worker-thread.mjs', import.meta.url);

/**
 * A worker thread running `module`. It has Node's options as a worker gets them by default: those of the process
 * that apply to one thread (preloads, module resolution, warnings), whether from node's command line or
 * NODE_OPTIONS. V8's flags (`--max-old-space-size`, `--stack-size`) and the options of the whole process
 * (`--title`, `--openssl-config`) are left out, as they already hold for every thread (the heap's bound as
 * workerLimits gives it): an execArgv of its own, where Node refuses them
 * (ERR_WORKER_INVALID_EXEC_ARGV), would fail every worker of a process started with one.
 * The entry loads collector/bin/quiet-warnings.mjs, then `module`: a worker has a process object of its own,
 * and Node 24.0 to 24.2 warn again in it that type stripping and SQLite are experimental, as its first .ts module
 * and node:sqlite load, on the stderr that hookwatch.mjs keeps them off for the main thread.
 */
export function startWorker(module: URL, options: Omit<WorkerOptions, 'argv' | 'execArgv'> = {}): Worker {
  return new Worker(ENTRY, { ...options, resourceLimits: workerLimits(options.resourceLimits), argv: [module.href] });
}

const MiB = 1024 * 1024;

/** The main thread's heap limit in MiB, once workerLimits has taken V8's heap flags off; undefined before. */
let mainHeapMb: number | undefined;

/**
 * The bounds a worker starts with. V8 reads `--max-old-space-size` and `--max-heap-size` (which node's
 * `--max-old-space-size-percentage` turns into the first) for every heap it makes, over a worker's own
 * resourceLimits: under either, a worker given a smaller bound (heapLimits) would get the flag's instead. So the
 * first worker takes both off V8's flags, whether node was given one or not (the main thread's heap, made at the
 * start, keeps the bound it has), and a worker given no old space of its own gets the main thread's heap limit
 * (v8.getHeapStatistics, whichever flag set it, or none), as it would have under the flag: the young generation
 * it is given or WORKER_YOUNG_GENERATION_MB, and the rest of that limit as old space.
 */
function workerLimits(limits: ResourceLimits | undefined): ResourceLimits {
  if (mainHeapMb === undefined) {
    mainHeapMb = getHeapStatistics().heap_size_limit / MiB;
    setFlagsFromString('--max-old-space-size=0');
    setFlagsFromString('--max-heap-size=0');
  }
  if (limits?.maxOldGenerationSizeMb !== undefined) return limits;
  const youngMb = limits?.maxYoungGenerationSizeMb ?? WORKER_YOUNG_GENERATION_MB;
  const oldMb = Math.max(1, mainHeapMb - YOUNG_GENERATION_SHARE * youngMb);
  return { ...limits, maxOldGenerationSizeMb: oldMb, maxYoungGenerationSizeMb: youngMb };
}

/**
 * The young generation of a worker given a heap bound (heapLimits), or none (workerLimits), in MiB: V8 counts one
 * and a half times it in the heap's limit (24 MiB, YOUNG_GENERATION_SHARE). Left to Node, a worker's would be the
 * main thread's (192 MiB of its 448 under the Deployment's flag); with this one the JSON parse of a body of
 * otlp.maxRequestBytes and the largest read queries measured no slower.
 */
export const WORKER_YOUNG_GENERATION_MB = 16;

/** The MiB of a heap's limit per MiB of its young generation. */
const YOUNG_GENERATION_SHARE = 1.5;

/**
 * A worker's own heap bound: an old space of `oldSpaceBytes` (as `--max-old-space-size` sets the main thread's)
 * and WORKER_YOUNG_GENERATION_MB. A worker that needs more stops with ERR_WORKER_OUT_OF_MEMORY, failing only what
 * it held, where without one it may grow as far as the main thread's heap and the process be killed at the
 * container's memory limit.
 */
export function heapLimits(oldSpaceBytes: number): ResourceLimits {
  return { maxOldGenerationSizeMb: Math.max(1, Math.ceil(oldSpaceBytes / MiB)), maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB };
}
