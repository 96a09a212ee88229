/**
 * Acceptance for replicas: three real hookwatch processes on one real PostgreSQL.
 * 1. Fed concurrently by several real OpenTelemetry exporters through a proxy that drops responses (so clients
 *    retry, often onto another replica), every replica reports exactly what the clients sent.
 * 2. SIGKILL of the leader while an alert is pending: another replica takes the lease within a few ticks and
 *    the alert fires once (one webhook-id, one delivery).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider, type LogRecordExporter, type ReadableLogRecord } from '@opentelemetry/sdk-logs';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { OverviewResponse } from '../../../../shared/src/api.ts';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { leaseHolderPid, persistedOutputBody, startDroppingProxy, type DroppingProxy } from '../../../test/support/postgres/replicas.ts';
import { startReplica, waitFor, type Replica } from '../../../test/support/serve-process.ts';

const fx = useReplicaFixture();

async function startReplicas(n: number, db: string, env: Record<string, string> = {}): Promise<Replica[]> {
  // Generous start timeout: three Node processes starting at once on a busy 2-core CI machine take a while.
  const started = await Promise.all(Array.from({ length: n }, () => startReplica({ db, cwd: mkdtempSync(join(fx.dir(), 'replica-')), env, startTimeoutMs: 90_000 })));
  fx.adopt(started);
  return started;
}

async function getJson<T>(base: string, path: string): Promise<T> {
  const r = await fetch(base + path);
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
}

/** An export's final result: code 0 is success (ExportResultCode.SUCCESS). */
interface ExportResult {
  code: number;
  error?: Error;
}

/** Wraps an exporter to record the final result of every export (after its own retries). */
function recording(inner: LogRecordExporter, results: ExportResult[]): LogRecordExporter {
  return {
    export: (records: ReadableLogRecord[], cb: (r: ExportResult) => void) => inner.export(records, (r) => {
      results.push(r);
      cb(r);
    }),
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}

describe('replicas on one PostgreSQL', () => {
  it('count exactly what concurrent clients sent, whatever retries cross replicas', async () => {
    const db = await fx.server().createDatabase();
    const three = await startReplicas(3, db);
    const proxy: DroppingProxy = await startDroppingProxy(() => three.map((r) => r.otlpHttpUrl), { dropEvery: 3 });
    fx.defer(() => proxy.close());

    const CLIENTS = 3;
    const PER_CLIENT = 400;
    const now = Date.now();
    const sent = { executions: 0, success: 0, stdout: 0, persisted: 0 };
    const results: ExportResult[] = [];
    await Promise.all(Array.from({ length: CLIENTS }, async (_, c) => {
      const exporter = recording(new OTLPLogExporter({ url: `${proxy.url}/v1/logs`, timeoutMillis: 20_000 }), results);
      const provider = new LoggerProvider({
        resource: resourceFromAttributes({ 'service.name': 'claude-code', 'service.version': '2.1.332', team: `team-${c % 2}` }),
        processors: [new BatchLogRecordProcessor({ exporter, maxExportBatchSize: 40, scheduledDelayMillis: 10, maxQueueSize: 4096 })],
      });
      const logger = provider.getLogger('com.anthropic.claude_code.events', '2.1.332');
      for (let i = 0; i < PER_CLIENT; i++) {
        const stdout = (i * 131 + c * 17) % 14_000;
        const persisted = stdout > 10_000 ? 1 : 0;
        const success = i % 10 === 0 ? 0 : 1;
        sent.executions++;
        sent.success += success;
        sent.stdout += stdout;
        sent.persisted += persisted;
        const hookName = ['PostToolUse:Bash', 'PostToolUse:Edit', 'UserPromptSubmit'][i % 3] as string;
        logger.emit({
          body: 'claude_code.hook_execution_complete',
          attributes: {
            'event.name': 'hook_execution_complete',
            'event.timestamp': new Date(now - (PER_CLIENT - i) * 1000).toISOString(),
            'event.sequence': i,
            'session.id': `session-${c}`,
            'user.id': `user-${c}`,
            hook_event: hookName.split(':')[0] as string,
            hook_name: hookName,
            num_hooks: '1',
            num_success: String(success),
            num_blocking: String(1 - success),
            stdout_chars: String(stdout),
            num_outputs_persisted: String(persisted),
            total_duration_ms: '12',
          },
        });
        if (i % 100 === 99) await new Promise((r) => setTimeout(r, 5));
      }
      await provider.forceFlush();
      await provider.shutdown();
    }));

    // Every export succeeded in the end (the exporters retried what the proxy dropped).
    expect(results.length).toBeGreaterThan(0);
    expect(results.filter((r) => r.code !== 0)).toEqual([]);
    expect(proxy.stats.dropped).toBeGreaterThan(0);
    expect(proxy.stats.refused).toBeGreaterThan(0);
    // Retries did cross replicas after the first replica had already stored the batch.
    const crossed = [...proxy.bodies.values()].filter((f) => f.first !== 'passed' && f.statuses[0] === 200 && new Set(f.sentTo).size > 1);
    expect(crossed.length).toBeGreaterThan(0);

    const from = new Date(now - 2 * 3_600_000).toISOString();
    const to = new Date(now + 3_600_000).toISOString();
    for (const r of three) {
      const o = await getJson<OverviewResponse>(r.httpUrl, `/api/v1/overview?from=${from}&to=${to}`);
      expect(o.totals.executions, r.httpUrl).toBe(sent.executions);
      expect(o.totals.success).toBe(sent.success);
      expect(o.totals.sumChars.stdout).toBe(sent.stdout);
      expect(o.totals.outputsPersisted).toBe(sent.persisted);
      expect(o.hooks).toBe(3);
    }
    const client = new pg.Client({ connectionString: db });
    await client.connect();
    try {
      const events = await client.query<{ n: string }>('SELECT count(*)::text AS n FROM events');
      expect(Number(events.rows[0]?.n)).toBe(sent.executions);
    } finally {
      await client.end();
    }
    for (const r of three) expect(r.lines.join('\n')).not.toContain(fx.server().password);
  }, 180_000);

  it('fails over when the leader is killed while an alert is pending, and the alert fires once', async () => {
    const db = await fx.server().createDatabase();
    const deliveries: { webhookId: string; status: string; at: number }[] = [];
    const hook: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { status?: string };
        deliveries.push({ webhookId: String(req.headers['webhook-id']), status: String(body.status), at: Date.now() });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    fx.defer(() => new Promise<void>((resolve) => {
      hook.close(() => resolve());
      hook.closeAllConnections();
    }));
    const forMs = 3000;
    const config = join(fx.dir(), `alerting-${Date.now()}.yaml`);
    writeFileSync(config, [
      'alerting:',
      '  rules:',
      '    - kind: persisted',
      '      name: persisted_output',
      `      for: ${forMs}ms`,
      '  receivers:',
      '    - name: team-hook',
      '      type: webhook',
      `      url: http://127.0.0.1:${(hook.address() as AddressInfo).port}/alerts`,
      '',
    ].join('\n'));
    const ttlMs = 1000;
    const three = await startReplicas(3, db, { HOOKWATCH_CONFIG: config, HOOKWATCH_POSTGRES_LEASE_TTL: `${ttlMs}ms`, HOOKWATCH_ALERT_EVALUATION_INTERVAL: '200ms' });
    const client = new pg.Client({ connectionString: db });
    await client.connect();
    fx.defer(() => client.end());
    const holderPid = (): Promise<number | undefined> => leaseHolderPid(client);
    const leaderPid = await waitFor('a leader', holderPid, 5000);
    const leader = three.find((r) => r.pid === leaderPid);
    expect(leader).toBeDefined();
    const followers = three.filter((r) => r !== leader);

    // A persisted output arrives at a follower; the leader sees it in the shared store and the alert goes pending.
    const body = persistedOutputBody(Date.now(), 'failover-session');
    const posted = await fetch(`${followers[0]!.otlpHttpUrl}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(posted.status).toBe(200);
    const pendingId = await waitFor('the alert to be pending', async () => {
      const r = await client.query<{ id: string }>("SELECT id FROM alert_instances WHERE state = 'pending'");
      return r.rows[0]?.id;
    }, 5000);
    expect(deliveries).toEqual([]);

    leader!.child.kill('SIGKILL');
    const killedAt = Date.now();
    await leader!.exited;
    const next = await waitFor('another replica to take the lease', async () => {
      const pid = await holderPid();
      return pid !== undefined && pid !== leaderPid ? pid : undefined;
    }, 10_000, 20);
    const takeoverMs = Date.now() - killedAt;
    expect(followers.map((f) => f.pid)).toContain(next);
    // Within ttl plus one renewal period, plus scheduling slack: "a few evaluation ticks".
    expect(takeoverMs).toBeLessThan(ttlMs + ttlMs / 3 + 1500);

    await waitFor('the firing notification', async () => (deliveries.some((d) => d.status === 'firing') ? true : undefined), forMs + 10_000);
    // Several more evaluation ticks and renewals: nothing more may arrive.
    await new Promise((r) => setTimeout(r, 2000));
    const firing = deliveries.filter((d) => d.status === 'firing');
    expect(firing).toHaveLength(1);
    expect(firing[0]!.at).toBeGreaterThan(killedAt);
    // The new leader took over the same alert episode (reloaded from the shared state), not a new one.
    const outbox = await client.query<{ webhook_id: string; alert_id: string; done: string | null }>('SELECT webhook_id, alert_id, done FROM alert_notifications');
    expect(outbox.rows).toEqual([{ webhook_id: firing[0]!.webhookId, alert_id: pendingId, done: 'delivered' }]);
    const newLeader = three.find((r) => r.pid === next)!;
    expect(newLeader.lines.some((l) => l.includes('leader lease acquired'))).toBe(true);
  }, 180_000);
});
