// The entry of hookwatch's worker threads (collector/src/worker-thread.ts): Node's experimental warnings filtered
// before any .ts module loads, then the worker's own module, given as the thread's one argument.
import './quiet-warnings.mjs';

await import(process.argv[2]);
