/**
 * Fault test: PostgreSQL restarted (`pg_ctl restart -m fast`) while real OpenTelemetry exporters send to three
 * replicas. Every connection, idle or inside an ingest transaction, is cut at once. No replica may exit, every
 * export acknowledged with 200 must be stored, and the replicas ingest again once the server is back.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider, type LogRecordExporter, type ReadableLogRecord } from '@opentelemetry/sdk-logs';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../../test/support/postgres/server.ts';
import { persistedOutputBody } from '../../../test/support/postgres/replicas.ts';
import { startReplica, waitFor, type Replica } from '../../../test/support/serve-process.ts';

let server: TestServer;
let dir: string;
const replicas: Replica[] = [];

beforeAll(async () => {
  server = await startTestServer();
  dir = mkdtempSync(join(tmpdir(), 'hookwatch-restart-'));
});
afterAll(async () => {
  await Promise.all(replicas.splice(0).map((r) => r.stop(3000)));
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it('survives a PostgreSQL restart under load: no replica exits and every acknowledged event is stored', async () => {
  const db = await server.createDatabase();
  const three = await Promise.all(Array.from({ length: 3 }, () => startReplica({ db, cwd: mkdtempSync(join(dir, 'replica-')), env: { HOOKWATCH_POSTGRES_LEASE_TTL: '2s' }, startTimeoutMs: 90_000 })));
  replicas.push(...three);

  const CLIENTS = 6;
  const PER_CLIENT = 600;
  /** stdout_chars is unique per record: it names the record in the events table. */
  const acked: number[] = [];
  let failedExports = 0;
  let restarted = false;
  const clients = Array.from({ length: CLIENTS }, async (_, c) => {
    const inner = new OTLPLogExporter({ url: `${three[c % 3]!.otlpHttpUrl}/v1/logs`, timeoutMillis: 20_000 });
    const exporter: LogRecordExporter = {
      export: (records: ReadableLogRecord[], cb) => inner.export(records, (r) => {
        if (r.code === 0) for (const rec of records) acked.push(Number(rec.attributes['stdout_chars']));
        else failedExports++;
        cb(r);
      }),
      shutdown: () => inner.shutdown(),
      forceFlush: () => inner.forceFlush(),
    };
    const provider = new LoggerProvider({
      resource: resourceFromAttributes({ 'service.name': 'claude-code', 'service.version': '2.1.332' }),
      processors: [new BatchLogRecordProcessor({ exporter, maxExportBatchSize: 20, scheduledDelayMillis: 5, maxQueueSize: 8192 })],
    });
    const logger = provider.getLogger('com.anthropic.claude_code.events', '2.1.332');
    const t0 = Date.now();
    for (let i = 0; i < PER_CLIENT; i++) {
      logger.emit({
        body: 'claude_code.hook_execution_complete',
        attributes: {
          'event.name': 'hook_execution_complete', 'event.timestamp': new Date(t0 - (PER_CLIENT - i) * 100).toISOString(), 'event.sequence': i,
          'session.id': `restart-${c}`, hook_event: 'PostToolUse', hook_name: 'PostToolUse:Bash', num_hooks: '1', num_success: '1',
          stdout_chars: String(c * 100_000 + i + 1), num_outputs_persisted: '0',
        },
      });
      // Spread the records over the restart: the load is running when the server goes away.
      if (i % 20 === 19) await new Promise((r) => setTimeout(r, restarted ? 5 : 25));
    }
    await provider.forceFlush();
    await provider.shutdown();
  });
  // Restart once every client has had batches acknowledged, while they keep sending.
  await waitFor('acknowledged exports from the clients', async () => (acked.length >= CLIENTS * 60 ? true : undefined), 60_000);
  await server.restart();
  restarted = true;
  // Settled, not all: a client whose replica died would reject, and the count of dead replicas is the point.
  const ended = await Promise.allSettled(clients);

  const exits = three.map((r) => ({ pid: r.pid, exitCode: r.child.exitCode, signal: r.child.signalCode }));
  const crashed = exits.filter((e) => e.exitCode !== null || e.signal !== null);
  const lost = three.flatMap((r) => r.lines.filter((l) => /unhandled|uncaught/i.test(l)));
  // eslint-disable-next-line no-console
  console.log(`restart under load: ${crashed.length} of 3 replicas exited; ${acked.length} records acknowledged, ${failedExports} exports failed`);
  // The restart did cut connections in use: at least one replica saw one go.
  expect(three.some((r) => r.lines.some((l) => l.includes('postgres connection lost')))).toBe(true);
  expect(crashed).toEqual([]);
  expect(ended.filter((e) => e.status === 'rejected')).toEqual([]);
  expect(lost).toEqual([]);
  expect(acked.length).toBeGreaterThan(CLIENTS * 60);

  const client = new pg.Client({ connectionString: db });
  await client.connect();
  try {
    const r = await client.query<{ v: string }>('SELECT stdout_chars::text AS v FROM events');
    const stored = new Set(r.rows.map((x) => Number(x.v)));
    const missing = acked.filter((v) => !stored.has(v));
    expect(missing).toEqual([]);
  } finally {
    await client.end();
  }
  // Every replica answers again once the server is back (its pool reconnected).
  for (const r of three) {
    await waitFor(`${r.httpUrl} ready`, async () => ((await fetch(`${r.httpUrl}/readyz`)).status === 200 ? true : undefined), 20_000, 200);
  }
}, 120_000);

it('answers the API with 503 and Retry-After while PostgreSQL is down, every route, and serves again after', async () => {
  const db = await server.createDatabase();
  const replica = await startReplica({ db, cwd: mkdtempSync(join(dir, 'replica-')), env: { HOOKWATCH_POSTGRES_LEASE_TTL: '2s' }, startTimeoutMs: 90_000 });
  replicas.push(replica);
  const sent = await fetch(`${replica.otlpHttpUrl}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: persistedOutputBody(Date.now(), 'down-1') });
  expect(sent.status).toBe(200);
  const hooks = (await (await fetch(`${replica.httpUrl}/api/v1/hooks`)).json()) as { hooks: { id: string }[] };
  const id = hooks.hooks[0]?.id ?? '';
  const routes = ['/api/v1/hooks', '/api/v1/overview', '/api/v1/alerts', '/api/v1/silences', '/api/v1/cluster', `/api/v1/hooks/${id}/series`, `/api/v1/hooks/${id}/guard-trims`];
  const retryAfter: Record<string, string | null> = {};
  await server.down(async () => {
    for (const route of routes) {
      const res = await fetch(`${replica.httpUrl}${route}`);
      const body = await res.text();
      expect([route, res.status, res.headers.get('content-type')?.split(';')[0]]).toEqual([route, 503, 'application/json']);
      // One error path for the whole API: the same wait and the same body shape, whichever route was asked.
      retryAfter[route] = res.headers.get('retry-after');
      expect(retryAfter[route], route).toMatch(/^\d+$/);
      expect(JSON.parse(body), route).toEqual({ error: { code: 'unavailable', message: expect.any(String) } });
      // No stack, no file paths: the answer names the problem only.
      expect(body, route).not.toMatch(/\.ts:\d+|at [A-Z]\w+\./);
    }
  });
  expect(retryAfter).toEqual(Object.fromEntries(routes.map((r) => [r, retryAfter['/api/v1/hooks']])));
  for (const route of routes) {
    await waitFor(`${route} served again`, async () => ((await fetch(`${replica.httpUrl}${route}`)).status === 200 ? true : undefined), 20_000, 200);
  }
  expect(replica.lines.filter((l) => /"level":"error"/.test(l) && /api request failed/.test(l))).toEqual([]);
}, 120_000);
