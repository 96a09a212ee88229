/**
 * OTLP/gRPC exports while PostgreSQL restarts, as Claude Code sends them with OTEL_EXPORTER_OTLP_PROTOCOL=grpc:
 * through OpenTelemetry's JavaScript gRPC exporter, which sends nothing again after an error. A hookwatch on a real
 * PostgreSQL server holds the exports the store cannot take while it is down, and commits them once it is back:
 * each acknowledged, each stored once. An outage longer than the exporter's timeout still ends in UNAVAILABLE,
 * answered before that timeout, with nothing acknowledged.
 */
import { describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/helpers.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { queryOnce } from '../../../test/support/postgres/server.ts';
import { scrapeMetrics } from '../../../test/support/prometheus-text.ts';
import { emitExecutions, type RecordingExporter } from '../../../test/support/service.ts';

const pg = useTestServer();
/** ExportResultCode: the exporter got an answer of success, or reported a failure (it drops the batch). */
const SUCCESS = 0;
const FAILURE = 1;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A hookwatch on a fresh database of the test server, stopped after the test, and that database's URL. */
async function serviceOnPostgres(env: Record<string, string> = {}): Promise<{ service: TestService; db: string }> {
  const db = await pg.server().createDatabase();
  const service = await startTestService({ HOOKWATCH_DB: db, ...env });
  pg.defer(() => service.close());
  return { service, db };
}

async function storedEvents(db: string): Promise<number> {
  return Number((await queryOnce<{ n: string }>(db, 'SELECT count(*) AS n FROM events'))[0]?.n);
}

/** hookwatch_otlp_requests_held_total of the gRPC port, by outcome. */
async function held(service: TestService): Promise<Record<string, number>> {
  const family = (await scrapeMetrics(service.httpUrl)).families.get('hookwatch_otlp_requests_held_total');
  return Object.fromEntries((family?.samples ?? []).filter((s) => s.labels['transport'] === 'grpc').map((s) => [s.labels['outcome'], s.value]));
}

/** An OTLP/JSON logs body of one hook_execution_complete of `hook`. */
function hookRecordJson(hook: string): string {
  const attributes = Object.entries({ 'event.name': 'hook_execution_complete', hook_event: 'PostToolUse', hook_name: hook, 'session.id': 'outage-http', 'event.sequence': '0', num_hooks: '1', num_success: '1' })
    .map(([key, value]) => ({ key, value: { stringValue: value } }));
  return JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: `${Date.now()}000000`, attributes }] }] }] });
}

/** `n` executions of `hook` in one batch, over gRPC through the real exporter (10 s timeout). */
function exportBatch(service: TestService, hook: string, n: number): Promise<RecordingExporter> {
  return emitExecutions(service.otlpGrpcUrl, Array.from({ length: n }, () => ({ hookEvent: 'PostToolUse', hookName: hook })), {}, { protocol: 'grpc' });
}

describe('OTLP/gRPC exports while PostgreSQL restarts', () => {
  it('are held while the database is down and committed once it is back: each acknowledged, each stored once', { timeout: 90_000 }, async () => {
    const { service, db } = await serviceOnPostgres();
    expect((await exportBatch(service, 'PostToolUse:Before', 2)).codes).toEqual([SUCCESS]);

    // Four batches sent into a 2 s outage (pg_ctl stop, then start), half a second apart.
    const sent: Promise<RecordingExporter>[] = [];
    await pg.server().down(async () => {
      for (let i = 0; i < 4; i++) {
        sent.push(exportBatch(service, `PostToolUse:Outage${i}`, 3));
        await sleep(500);
      }
    });
    const exporters = await Promise.all(sent);
    expect(exporters.map((e) => e.codes), `the exporter's errors: ${exporters.flatMap((e) => e.errors).join('; ')}`).toEqual([[SUCCESS], [SUCCESS], [SUCCESS], [SUCCESS]]);
    expect(await storedEvents(db)).toBe(2 + 4 * 3);
    // Counted once each in the views too (the rollups add only what was newly inserted).
    const overview = await (await fetch(`${service.httpUrl}/api/v1/overview?from=now-1h&to=now%2B1h`)).json() as { totals: { executions: number } };
    expect(overview.totals.executions).toBe(2 + 4 * 3);
    expect(await held(service)).toEqual({ committed: 4, unavailable: 0, cancelled: 0, refused: 0 });
  });

  it('commits every one of many held exports once the database is back, none refused for the batches waiting', { timeout: 90_000 }, async () => {
    // One batch may wait for the store at a time: a batch that arrives while another's try waits for it finds
    // hookwatch overloaded, and retried all at once, every held export but one would.
    const { service, db } = await serviceOnPostgres({ HOOKWATCH_OTLP_MAX_PENDING_REQUESTS: '1' });
    expect((await exportBatch(service, 'PostToolUse:Before', 1)).codes).toEqual([SUCCESS]);

    const batches = 12;
    const sent: Promise<RecordingExporter>[] = [];
    await pg.server().down(async () => {
      for (let i = 0; i < batches; i++) {
        sent.push(exportBatch(service, `PostToolUse:Herd${i}`, 2));
        await sleep(30);
      }
      await sleep(1000);
    });
    const exporters = await Promise.all(sent);
    // Every export held, acknowledged and committed once.
    expect(exporters.map((e) => e.codes), `the exporter's errors: ${exporters.flatMap((e) => e.errors).join('; ')}`).toEqual(new Array(batches).fill([SUCCESS]));
    expect(await held(service)).toEqual({ committed: batches, unavailable: 0, cancelled: 0, refused: 0 });
    expect(await storedEvents(db)).toBe(1 + batches * 2);
  });

  it('answers UNAVAILABLE before the exporter\'s timeout when the database stays down longer, with nothing acknowledged', { timeout: 90_000 }, async () => {
    const { service, db } = await serviceOnPostgres();
    expect((await exportBatch(service, 'PostToolUse:Before', 1)).codes).toEqual([SUCCESS]);

    const { exporter, http } = await pg.server().down(async () => {
      const grpc = exportBatch(service, 'PostToolUse:LongOutage', 3);
      // OTLP/HTTP is answered at once meanwhile: its exporters send the batch again after the Retry-After.
      const res = await fetch(`${service.otlpHttpUrl}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: hookRecordJson('PostToolUse:LongOutageHttp') });
      const answeredFirst = await Promise.race([grpc.then(() => false), sleep(0).then(() => true)]);
      return { exporter: await grpc, http: { status: res.status, retryAfter: res.headers.get('retry-after'), answeredFirst } };
    });
    expect(http).toEqual({ status: 503, retryAfter: '2', answeredFirst: true });
    expect(exporter.codes).toEqual([FAILURE]);
    // UNAVAILABLE (14) from hookwatch, not the exporter's own DEADLINE_EXCEEDED (4): answered within its 10 s.
    expect(exporter.errors).toEqual([expect.stringMatching(/^14 UNAVAILABLE: the store cannot take writes right now/)]);
    expect(await held(service)).toEqual({ committed: 0, unavailable: 1, cancelled: 0, refused: 0 });
    expect(await storedEvents(db)).toBe(1);
  });
});
