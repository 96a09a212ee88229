/**
 * Reads transcripts with the scanner in this process and prints, as JSON, the heap it keeps once they are read
 * (after a full garbage collection) and the hook records it counted. Run with --expose-gc, in a child process so
 * that the heap is the scan's own:
 *
 *   node --expose-gc collector/test/support/scan-heap-probe.ts <file>...
 */
import { TranscriptScanner } from '../../src/tools/scan/transcript.ts';

/** What the probe prints. */
export interface HeapProbeReport {
  retainedBytes: number;
  records: number;
}

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
gc();
const before = process.memoryUsage().heapUsed;
const scanner = new TranscriptScanner();
for (const file of process.argv.slice(2)) await scanner.scanFile(file);
gc();
const retainedBytes = process.memoryUsage().heapUsed - before;
// Read after the measure: the scanner and all it holds were alive when it was taken.
const report: HeapProbeReport = { retainedBytes, records: scanner.result().totals.records };
process.stdout.write(`${JSON.stringify(report)}\n`);
