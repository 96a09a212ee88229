/**
 * Benchmark of `hookwatch scan` on a 1 GiB transcript: generates the file (Claude Code's record shape, hook
 * records among long messages, duplicates, unparsable lines, one line over the 64 MiB line limit and a cut-off
 * last line), scans it in a child process and prints wall time and peak RSS. Too slow for `npm test` on two cores;
 * collector/src/tools/scan/large-file.test.ts runs the same at 240 MB.
 *
 *   node scripts/scan-1gb.ts [--size-mib 1024] [--keep]
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';

import { MAX_LINE_BYTES } from '../collector/src/tools/common/limits.ts';
import type { ProbeReport } from '../collector/test/support/memory-probe.ts';
import { writeLargeTranscript } from '../collector/test/support/synthetic-transcript.ts';

const MiB = 1024 * 1024;
const { values } = parseArgs({ options: { 'size-mib': { type: 'string', default: '1024' }, keep: { type: 'boolean', default: false } } });
const sizeMiB = Number(values['size-mib']);
if (!Number.isFinite(sizeMiB) || sizeMiB <= 0) throw new Error(`--size-mib: expected a positive number, got ${values['size-mib']}`);

const probe = fileURLToPath(new URL('../collector/test/support/memory-probe.ts', import.meta.url));
const dir = await mkdtemp(join(tmpdir(), 'hookwatch-scan-1gb-'));
const file = join(dir, 'transcript.jsonl');
try {
  const writeStarted = performance.now();
  const facts = await writeLargeTranscript(file, { targetBytes: sizeMiB * MiB, hugeLineBytes: MAX_LINE_BYTES + MiB });
  console.log(`generated ${file}: ${(facts.bytes / MiB).toFixed(0)} MiB, ${facts.lines} lines, ${facts.hookRecords} hook records in ${((performance.now() - writeStarted) / 1000).toFixed(1)} s`);

  const { stdout } = await promisify(execFile)(process.execPath, [probe, '--json', file], { maxBuffer: 256 * MiB });
  const report = JSON.parse(stdout) as ProbeReport;
  const totals = (JSON.parse(report.stdout) as { totals: Record<string, number> }).totals;
  const matches =
    totals.bytes === facts.bytes &&
    totals.records === facts.hookRecords &&
    totals.outputsPersisted === facts.persistedRecords &&
    totals.duplicateRecords === facts.duplicateRecords &&
    totals.unparsableLines === facts.unparsableLines &&
    totals.oversizedLines === facts.oversizedLines;

  console.log(`scan exit code:   ${report.exitCode} (1 = persisted outputs found, as generated)`);
  console.log(`wall time:        ${(report.wallMs / 1000).toFixed(2)} s (${(facts.bytes / MiB / (report.wallMs / 1000)).toFixed(0)} MiB/s)`);
  console.log(`RSS before scan:  ${(report.baselineRssBytes / MiB).toFixed(0)} MiB`);
  console.log(`peak RSS:         ${(report.maxRssBytes / MiB).toFixed(0)} MiB (growth ${((report.maxRssBytes - report.baselineRssBytes) / MiB).toFixed(0)} MiB)`);
  console.log(`counts:           ${JSON.stringify(totals)}`);
  console.log(`counts match the generated file: ${matches ? 'yes' : 'NO'}`);
  if (!matches) process.exitCode = 1;
} finally {
  if (values.keep) console.log(`kept ${file}`);
  else await rm(dir, { recursive: true, force: true });
}
