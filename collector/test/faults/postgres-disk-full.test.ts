/**
 * PostgreSQL's data disk full: the database lives in a tablespace on a small tmpfs that is then filled. A
 * connection opened meanwhile fails at startup (`FATAL: could not write init file`, SQLSTATE XX000, once the
 * relation cache's init file was invalidated), as every connection the pools open after the ones they held were
 * lost. hookwatch must answer as for any outage: OTLP/HTTP 503 with Retry-After, gRPC UNAVAILABLE, the API 503,
 * acknowledge nothing, and take the same batches again once space is back.
 */
import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { HooksResponse } from '../../../shared/src/api.ts';
import { eventually, getJson, postOtlp, startTestService, type TestService } from '../helpers.ts';
import { startTestServer, type TestServer } from '../support/postgres/server.ts';
import { emitExecutions } from '../support/service.ts';
import { fillFilesystem as fill, mountTmpfs, unmountTmpfs } from '../support/tmpfs.ts';

const mount = mountTmpfs(40, 'hookwatch-pgfull-');
let server: TestServer | undefined;
let service: TestService | undefined;
let admin: pg.Client | undefined;

afterAll(async () => {
  await service?.close();
  await admin?.end().catch(() => undefined);
  // The server's files in the tablespace go before the tmpfs holding them.
  await server?.stop();
  if (mount) unmountTmpfs(mount);
});


/** An OTLP/JSON logs body of one hook_execution_complete of `hook`. */
function hookRecordJson(hook: string, timeMs: number): string {
  const attributes = Object.entries({ 'event.name': 'hook_execution_complete', hook_event: 'PostToolUse', hook_name: hook, 'session.id': 'disk-full', 'event.sequence': '0', num_hooks: '1', num_success: '1' })
    .map(([key, value]) => ({ key, value: { stringValue: value } }));
  return JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: `${timeMs}000000`, attributes }] }] }] });
}

const json = { 'content-type': 'application/json' };
const RANGE = 'from=now-1h&to=now%2B1h';

describe('PostgreSQL data disk full', () => {
  it.skipIf(!mount)('new connections failing at startup give 503 + Retry-After, gRPC UNAVAILABLE and API 503, and writes resume when space is back (needs root to mount a tmpfs; skipped only outside CI)', { timeout: 120_000 }, async () => {
    const dir = mount as string;
    server = await startTestServer();
    // The tablespace's folder belongs to the server's user (`postgres` when the tests run as root).
    const ts = join(dir, 'ts');
    mkdirSync(ts);
    chownSync(ts, Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), Number(execFileSync('id', ['-g', 'postgres']).toString().trim()));
    const maintenance = new pg.Client({ connectionString: server.url() });
    await maintenance.connect();
    try {
      await maintenance.query(`CREATE TABLESPACE small LOCATION '${ts}'`);
      await maintenance.query('CREATE DATABASE hwfull TABLESPACE small');
    } finally {
      await maintenance.end();
    }
    const db = server.url('hwfull');
    service = await startTestService({ HOOKWATCH_DB: db });
    const otlp = service.otlpHttpUrl;
    const api = service.httpUrl;

    expect((await postOtlp(otlp, '/v1/logs', hookRecordJson('PostToolUse:Before', Date.now()), json)).status).toBe(200);
    const before = await getJson<HooksResponse>(api, `/api/v1/hooks?${RANGE}`);
    expect(before.status).toBe(200);
    const hookId = before.body.hooks[0]?.id as string;
    expect(hookId).toMatch(/^[0-9a-f]{16}$/);

    // Connected before the disk fills: once it is full, no new connection to the database starts.
    admin = new pg.Client({ connectionString: db });
    await admin.connect();
    const filler = fill(dir);
    // The relation cache's init file goes, as the server removes it when the catalogs change (an ANALYZE, DDL):
    // each new connection then has to write it again. The connections hookwatch holds are ended, so its pools
    // open new ones.
    const catalog = (await admin.query<{ path: string }>(`SELECT pg_relation_filepath('pg_class') AS path`)).rows[0]?.path as string;
    // pg_tblspc/<oid>/<version folder>/<database oid>/<file>: the database's folder under the tablespace's location.
    rmSync(join(ts, ...catalog.split('/').slice(2, 4), 'pg_internal.init'));
    // What the file took is filled too.
    const topUp = fill(dir, 'top-up');
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
    const probe = new pg.Client({ connectionString: db });
    probe.on('error', () => undefined);
    const startup = await probe.connect().then(async () => {
      await probe.end();
      return 'connected';
    }, (err: unknown) => err as { code?: string; severity?: string; message?: string });
    expect(startup, 'a new connection fails at startup').toMatchObject({ code: 'XX000', severity: 'FATAL', message: 'could not write init file' });

    const refused = hookRecordJson('PostToolUse:DiskFull', Date.now());
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await postOtlp(otlp, '/v1/logs', refused, json);
      expect({ status: res.status, body: res.body.toString('utf8') }).toEqual({ status: 503, body: expect.stringContaining('the store cannot take writes right now') });
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    const grpc = await emitExecutions(service.otlpGrpcUrl, [{ hookEvent: 'PostToolUse', hookName: 'PostToolUse:DiskFullGrpc' }], {}, { protocol: 'grpc' });
    // UNAVAILABLE (14), which the exporter's retry policy covers, not INTERNAL (13).
    expect(grpc.errors).toEqual([expect.stringMatching(/^14 UNAVAILABLE: the store cannot take writes right now/)]);
    for (const path of [`/api/v1/hooks?${RANGE}`, `/api/v1/hooks/${hookId}`, `/api/v1/hooks/${hookId}/series?${RANGE}`, `/api/v1/hooks/${hookId}/breakdown?dimension=user.id&${RANGE}`,
      `/api/v1/hooks/${hookId}/guard-trims?${RANGE}`, `/api/v1/hooks/${hookId}/commands?${RANGE}`, `/api/v1/overview?${RANGE}`, `/api/v1/fleet/series?${RANGE}`]) {
      const res = await fetch(`${api}${path}`);
      expect({ path, status: res.status }).toEqual({ path, status: 503 });
      expect(Number(res.headers.get('retry-after')), path).toBeGreaterThan(0);
      expect(await res.json(), path).toMatchObject({ error: { code: 'unavailable' } });
    }

    rmSync(filler);
    rmSync(topUp);
    // The client's retry of the refused batch now goes through, and a new batch too.
    expect((await postOtlp(otlp, '/v1/logs', refused, json)).status).toBe(200);
    expect((await postOtlp(otlp, '/v1/logs', hookRecordJson('PostToolUse:After', Date.now()), json)).status).toBe(200);
    const after = await eventually('the API to answer again', async () => {
      const r = await getJson<HooksResponse>(api, `/api/v1/hooks?${RANGE}`);
      return r.status === 200 ? r.body : undefined;
    });
    // Each acknowledged batch once; the gRPC export refused during the episode is not there.
    expect(Object.fromEntries(after.hooks.map((h) => [h.hookName, h.executions]))).toEqual({ 'PostToolUse:Before': 1, 'PostToolUse:DiskFull': 1, 'PostToolUse:After': 1 });
  });
});
