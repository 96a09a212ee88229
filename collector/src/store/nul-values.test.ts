/**
 * A NUL character (U+0000) in one record's attribute: PostgreSQL cannot store it in text or JSON, SQLite can.
 * Both backends answer the same way: that record is rejected with a reason (OTLP partial success), the good
 * records of the batch are stored, and a filter value with NUL is a 400.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OverviewResponse } from '../../../shared/src/api.ts';
import { loadConfig, toConfig } from '../config/index.ts';
import { startService, type RunningService } from '../service.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { useTestServer } from '../../test/support/postgres/fixture.ts';
import { tempDir } from '../../test/helpers.ts';

const tmp = tempDir();
const pg = useTestServer();
afterAll(() => tmp.cleanup());

function record(i: number, attrs: Record<string, string> = {}): unknown {
  const all = {
    'event.name': 'hook_execution_complete', hook_event: 'PostToolUse', hook_name: 'PostToolUse:Bash', 'session.id': 'nul-session', 'event.sequence': String(i),
    'user.id': 'user-a', team: 'platform', num_hooks: '1', num_success: '1', stdout_chars: String(100 + i), num_outputs_persisted: '0', ...attrs,
  };
  return { timeUnixNano: `${Date.now() - 60_000}000000`, attributes: Object.entries(all).map(([key, v]) => ({ key, value: { stringValue: v } })) };
}

const backends: { name: string; db: () => Promise<string> }[] = [
  { name: 'sqlite', db: async () => join(tmp.dir, `nul-${Date.now()}.db`) },
  { name: 'postgres', db: () => pg.server().createDatabase() },
];

describe.each(backends)('NUL in an attribute on $name', (backend) => {
  let service: RunningService;
  beforeAll(async () => {
    const config = toConfig(loadConfig({ env: {
      HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0', HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0', HOOKWATCH_HTTP_ADDR: '127.0.0.1:0', HOOKWATCH_DB: await backend.db(), HOOKWATCH_DIMENSIONS: 'team',
    } }));
    service = await startService(config, { logger: silentLogger });
  }, 60_000);
  afterAll(() => service?.stop());

  it('rejects the record with a reason and stores the good records of the batch', async () => {
    const records = Array.from({ length: 10 }, (_, i) => record(i));
    records[3] = record(3, { 'user.id': 'bad\u0000user' });
    records[7] = record(7, { team: 'plat\u0000form' });
    const res = await fetch(`${service.otlpHttpUrl}/v1/logs`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'claude-code' } }] }, scopeLogs: [{ logRecords: records }] }] }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { partialSuccess?: { rejectedLogRecords?: string | number; errorMessage?: string } };
    expect(Number(body.partialSuccess?.rejectedLogRecords)).toBe(2);
    expect(body.partialSuccess?.errorMessage).toContain('logRecords[3]: user.id contains a NUL character');
    expect(body.partialSuccess?.errorMessage).toContain('logRecords[7]: team contains a NUL character');
    const o = (await (await fetch(`${service.httpUrl}/api/v1/overview?from=now-1h&to=now%2B1h`)).json()) as OverviewResponse;
    expect(o.totals.executions).toBe(8);
  });

  it('answers a filter value with NUL with 400 naming the parameter', async () => {
    const res = await fetch(`${service.httpUrl}/api/v1/overview?from=now-1h&team=a%00b`);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { parameter?: string; message: string } };
    expect(body.error.parameter).toBe('team');
    expect(body.error.message).toContain('NUL');
  });
});
