import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HeapProbeReport } from '../../../test/support/scan-heap-probe.ts';
import { hookRecord } from '../../../test/support/synthetic-transcript.ts';

const run = promisify(execFile);
const probe = fileURLToPath(new URL('../../../test/support/scan-heap-probe.ts', import.meta.url));
const RECORDS = 100_000;
const SESSIONS = 20;

/**
 * What the scan keeps per hook record once it is read: its uuid (a record repeated by a resumed session counts
 * once), not what the record said. A heavy user's ~/.claude/projects holds millions of hook records.
 */
describe('scan: memory per hook record', () => {
  let dir: string;
  let file: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hookwatch-records-'));
    file = join(dir, 'many-records.jsonl');
    const out = createWriteStream(file, { highWaterMark: 1024 * 1024 });
    for (let i = 0; i < RECORDS; i++) {
      const session = i % SESSIONS;
      const record = {
        ...hookRecord({
          uuid: `${String(i).padStart(8, '0')}-0000-4000-8000-${String(session).padStart(12, '0')}`,
          sessionId: `aaaaaaaa-0000-4000-8000-${String(session).padStart(12, '0')}`, hookName: 'PostToolUse:Bash', stdout: 'ok',
        }),
        parentUuid: i >= SESSIONS ? `${String(i - SESSIONS).padStart(8, '0')}-0000-4000-8000-${String(session).padStart(12, '0')}` : null,
      };
      if (!out.write(`${JSON.stringify(record)}\n`)) await once(out, 'drain');
    }
    out.end();
    await once(out, 'finish');
  }, 60_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps little more than the record ids, not an entry per record for each thing it tracks', async () => {
    const { stdout } = await run(process.execPath, ['--expose-gc', probe, file], { maxBuffer: 1024 * 1024 });
    const report = JSON.parse(stdout) as HeapProbeReport;
    expect(report.records).toBe(RECORDS);
    const perRecord = report.retainedBytes / RECORDS;
    expect(perRecord, `${Math.round(perRecord)} bytes kept per hook record`).toBeLessThan(200);
  }, 60_000);
});
