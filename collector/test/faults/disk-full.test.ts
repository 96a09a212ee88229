/**
 * The store's disk refusing writes: the database lives on a tiny tmpfs that is then filled, so SQLite really
 * fails with SQLITE_FULL (tests run as root, so chmod would not stop a write; a full disk does). hookwatch must
 * answer 503 + Retry-After (retryable), keep serving, acknowledge nothing it did not store, and take writes
 * again once space is back.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { HooksResponse } from '../../../shared/src/api.ts';
import { batchTemplate, stamp } from '../../../bench/lib/batch.ts';
import { getJson, postOtlp, startTestService, type TestService } from '../helpers.ts';
import { fillFilesystem as fill, mountTmpfs, unmountTmpfs } from '../support/tmpfs.ts';

const mount = mountTmpfs(4, 'hookwatch-full-');
let service: TestService | undefined;

afterAll(async () => {
  await service?.stop();
  if (mount) unmountTmpfs(mount);
});


describe('the store cannot write', () => {
  it.skipIf(!mount)('a full disk gives 503 + Retry-After, nothing is acknowledged that is not stored, and writes resume when space is back (needs root to mount a tmpfs; skipped only outside CI)', async () => {
    const dir = mount as string;
    service = await startTestService({}, { dir });
    const small = batchTemplate(64, 'protobuf');
    const large = batchTemplate(512, 'protobuf');
    const headers = { 'content-type': 'application/x-protobuf' };
    const url = service.otlpHttpUrl;

    expect((await postOtlp(url, '/v1/logs', stamp(small), headers)).status).toBe(200);

    const filler = fill(dir);
    const refused = stamp(large);
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await postOtlp(url, '/v1/logs', refused, headers);
      expect(res.status).toBe(503);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(res.body.toString('latin1')).toContain('the store cannot take writes right now');
    }
    // Reads keep working while writes are refused.
    expect((await getJson(service.httpUrl, '/api/v1/hooks?from=now-30d&to=now%2B1d')).status).toBe(200);

    rmSync(filler);
    // The client's retry of the refused batch now goes through, and new batches too.
    expect((await postOtlp(url, '/v1/logs', refused, headers)).status).toBe(200);
    expect((await postOtlp(url, '/v1/logs', stamp(large), headers)).status).toBe(200);

    const { body } = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-30d&to=now%2B1d');
    const executions = body.hooks.reduce((n, h) => n + h.executions, 0);
    const starts = body.hooks.reduce((n, h) => n + h.starts, 0);
    // A quarter of the records are hook_execution_complete, a quarter hook_execution_start: each batch once.
    expect(executions).toBe((64 + 512 + 512) / 4);
    expect(starts).toBe((64 + 512 + 512) / 4);
  });

  it.skipIf(!mount)('a start on a full disk names the setting and the file that could not be written, and exits 1 (needs root to mount a tmpfs; skipped only outside CI)', () => {
    const dir = join(mount as string, 'start');
    mkdirSync(dir);
    const db = join(dir, 'hookwatch.db');
    const filler = fill(mount as string, 'start-filler');
    try {
      const main = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
      const run = spawnSync(process.execPath, [main, 'serve'], {
        env: { PATH: process.env['PATH'] ?? '', HOOKWATCH_DB: db, HOOKWATCH_FORWARD_QUEUE_PATH: join(dir, 'forward-queue.db'), HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0', HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0', HOOKWATCH_HTTP_ADDR: '127.0.0.1:0' },
        encoding: 'utf8', timeout: 60_000,
      });
      expect({ status: run.status, stderr: run.stderr }).toEqual({
        status: 1,
        stderr: `hookwatch: db ${db} (HOOKWATCH_DB, --db): cannot take the store's lock ${db}.lock: the disk is full: free space on its file system, or set db to a file on another one\n`,
      });
    } finally {
      rmSync(filler);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
