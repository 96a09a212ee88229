/**
 * A NUL character (U+0000) in one record's attribute: PostgreSQL cannot store it in text or JSON, SQLite can.
 * Both backends answer the same way: that record is rejected with a reason (OTLP partial success), the good
 * records of the batch are stored, and a filter value or a hook name search with NUL is a 400. A silence with NUL in a matcher's value,
 * its author or its comment is a 400 naming the field on both, not a 503 PostgreSQL would answer forever.
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

  // No hook name holds NUL either: a search for one could match nothing, and is refused as a filter's value is.
  it.each([
    ['/api/v1/overview?from=now-1h&team=a%00b', 'team'],
    ['/api/v1/hooks?name=%00', 'name'],
    ['/api/v1/hooks?name=PostToolUse%00', 'name'],
  ])('answers %s with 400 naming %s', async (path, parameter) => {
    const res = await fetch(`${service.httpUrl}${path}`);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { parameter?: string; message: string } };
    expect(body.error.parameter).toBe(parameter);
    expect(body.error.message).toContain('NUL');
  });
});

describe.each(backends)('NUL in a silence on $name', (backend) => {
  let service: RunningService;
  beforeAll(async () => {
    const config = toConfig(loadConfig({ env: {
      HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0', HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0', HOOKWATCH_HTTP_ADDR: '127.0.0.1:0', HOOKWATCH_DB: await backend.db(),
    } }));
    service = await startService(config, { logger: silentLogger });
  }, 60_000);
  afterAll(() => service?.stop());

  const silence = { matchers: [{ name: 'alertname', value: 'HookOutputPersisted' }], endsAt: '2099-01-01T00:00:00Z', createdBy: 'ops', comment: 'maintenance' };
  it.each([
    ['matchers[0].value', { ...silence, matchers: [{ name: 'alertname', value: 'Hook\u0000OutputPersisted' }] }],
    ['createdBy', { ...silence, createdBy: 'o\u0000ps' }],
    ['comment', { ...silence, comment: 'main\u0000tenance' }],
  ])('refuses NUL in %s with 400 naming it, and keeps no silence', async (field, body) => {
    const res = await fetch(`${service.httpUrl}/api/v1/silences`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const answer = (await res.json()) as { error?: { code: string; parameter?: string; message: string } };
    expect(res.status).toBe(400);
    expect(answer.error).toMatchObject({ code: 'bad_parameter', parameter: field });
    expect(answer.error?.message).toContain('NUL');
    const list = (await (await fetch(`${service.httpUrl}/api/v1/silences`)).json()) as { total: number };
    expect(list.total).toBe(0);
  });
});
