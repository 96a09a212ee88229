import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { MAX_LINE_BYTES } from '../common/limits.ts';
import type { ProbeReport } from '../../../test/support/memory-probe.ts';
import { writeLargeTranscript } from '../../../test/support/synthetic-transcript.ts';
import type { LargeTranscriptFacts } from '../../../test/support/synthetic-transcript.ts';

const run = promisify(execFile);
const probe = fileURLToPath(new URL('../../../test/support/memory-probe.ts', import.meta.url));
const MiB = 1024 * 1024;

/**
 * A 1 GB file is too slow for CI on two cores; a 240 MB one with a line over the 64 MiB limit shows the same
 * thing: memory does not grow with the file or with its longest line. scripts/scan-1gb.ts runs the full size.
 */
describe('scan: a large transcript in bounded memory', () => {
  let dir: string;
  let file: string;
  let facts: LargeTranscriptFacts;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hookwatch-large-'));
    file = join(dir, 'large.jsonl');
    facts = await writeLargeTranscript(file, { targetBytes: 240 * 1024 * 1024, hugeLineBytes: MAX_LINE_BYTES + MiB });
  }, 120_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('counts every hook record of a 240 MB file, skips the over-long line, and stays under 200 MB of extra memory', async () => {
    expect(facts.bytes).toBeGreaterThan(240 * 1024 * 1024);
    // In a child process, so the peak RSS is the scan's own and not the test runner's.
    const { stdout } = await run(process.execPath, [probe, '--json', file], { maxBuffer: 64 * MiB });
    const report = JSON.parse(stdout) as ProbeReport;
    const result = JSON.parse(report.stdout) as {
      totals: { bytes: number; lines: number; records: number; outputsPersisted: number; duplicateRecords: number; unparsableLines: number; oversizedLines: number };
      sessions: unknown[];
      files: { truncatedLastLine: boolean }[];
    };
    expect(result.totals).toEqual(
      expect.objectContaining({
        bytes: facts.bytes,
        lines: facts.lines,
        records: facts.hookRecords,
        outputsPersisted: facts.persistedRecords,
        duplicateRecords: facts.duplicateRecords,
        unparsableLines: facts.unparsableLines,
        oversizedLines: 1,
      }),
    );
    expect(result.sessions).toHaveLength(facts.sessions);
    expect(result.files[0]?.truncatedLastLine).toBe(true);
    expect(report.exitCode).toBe(1);

    const growth = report.maxRssBytes - report.baselineRssBytes;
    expect(growth, `peak RSS ${Math.round(report.maxRssBytes / MiB)} MiB from ${Math.round(report.baselineRssBytes / MiB)} MiB`).toBeLessThan(200 * MiB);
  }, 120_000);
});
