/**
 * Reads a backup's copy back with `PRAGMA quick_check` (backup.ts) on a thread of its own: the main thread stays
 * free to take a signal meanwhile, and a stopped backup does not wait for the check to end.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { quickCheck } from './backup.ts';

parentPort?.postMessage(quickCheck((workerData as { path: string }).path));
