/**
 * Runs `hookwatch scan` with the given arguments in this process and prints, as JSON, its exit code, wall time,
 * and resident memory before and at peak. Used by the large-file test and scripts/scan-1gb.ts, in a child
 * process so that the figures are the scan's own.
 *
 *   node collector/test/support/memory-probe.ts --json <file>
 */
import { runScan } from '../../src/tools/scan/index.ts';

/** What the probe prints. */
export interface ProbeReport {
  exitCode: number;
  wallMs: number;
  baselineRssBytes: number;
  maxRssBytes: number;
  stdout: string;
  stderr: string;
}

const baselineRssBytes = process.memoryUsage().rss;
const stdout: string[] = [];
const stderr: string[] = [];
const started = performance.now();
const exitCode = await runScan(process.argv.slice(2), {
  stdout: (s) => stdout.push(s),
  stderr: (s) => stderr.push(s),
  env: process.env,
  cwd: process.cwd(),
});
const report: ProbeReport = {
  exitCode,
  wallMs: Math.round(performance.now() - started),
  baselineRssBytes,
  maxRssBytes: process.resourceUsage().maxRSS * 1024,
  stdout: stdout.join(''),
  stderr: stderr.join(''),
};
process.stdout.write(`${JSON.stringify(report)}\n`);
