/**
 * An upgrade on PostgreSQL, as an operator runs it: two replicas share the database, receive the real Claude Code
 * captures, fire alerts to a webhook and keep a silence; the schema is the one a release left. Then a rolling
 * restart: replica A is restarted first while B goes on serving and ingesting, then B. From the previous release
 * (PostgreSQL migration 18) there is nothing to migrate; from the release before it (migration 17: the
 * late-arrival index of migration 18 did not exist) the first replica restarted builds it while the other ingests,
 * held up by a long read and never holding up ingest.
 * Either way no OTLP request gets an error it may not retry, every event sent is stored, every view answers as
 * before, the alerts and the silence are carried over, and the lease passes from A to B to A without anything
 * already delivered being notified again.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../src/store/postgres/index.ts';
import { postOtlp } from './helpers.ts';
import { WebhookSink } from './support/alerting.ts';
import { useReplicaFixture } from './support/postgres/fixture.ts';
import { leading } from './support/postgres/replicas.ts';
import { logEntries, waitFor, type Replica } from './support/serve-process.ts';
import { emitExecutions } from './support/service.ts';
import { PG_UNDO_DAY_CHANGES } from './support/downgrade.ts';
import { capturesNow, evaluations, silenceBash, upgradeConfigYaml, views } from './support/upgrade.ts';

/**
 * The schema each release left: its last migration, and what the later ones add, taken back. Migration 20's column
 * (sizes_may_sum) stays: the replicas serving before the restart run this version, which writes it (the release's
 * own do not name it, and get its default); migration 20 adds it only where it is missing.
 */
const RELEASES = [
  { name: 'the previous release', schema: 18, undo: PG_UNDO_DAY_CHANGES },
  { name: 'the release before it', schema: 17, undo: `DROP INDEX events_late_arrival; ${PG_UNDO_DAY_CHANGES}` },
];

/** ExportResultCode.SUCCESS: the exporter got a 2xx, at once or after retrying what it may retry. */
const EXPORT_SUCCESS = 0;
/** The hook the traffic of the rollout goes to, three hours before the captures: outside the views' range. */
const ROLLOUT_HOOK = 'PreToolUse:Rollout';
const ROLLOUT_AGO_MS = 3 * 3_600_000;

const fx = useReplicaFixture();

/** hook_execution_start and _complete records in the captures: what the events table holds of them. */
function executionsIn(captures: { body: string }[]): number {
  type Body = { resourceLogs?: { scopeLogs: { logRecords: { attributes: { key: string; value: { stringValue?: string } }[] }[] }[] }[] };
  const records = captures.flatMap((c) => ((JSON.parse(c.body) as Body).resourceLogs ?? []).flatMap((rl) => rl.scopeLogs.flatMap((sl) => sl.logRecords)));
  return records.filter((r) => r.attributes.some((a) => a.key === 'event.name' && /^hook_execution_(start|complete)$/.test(a.value.stringValue ?? ''))).length;
}

/**
 * OTLP traffic through the real exporters to the replicas serving, in turn, one small batch at a time, over
 * OTLP/HTTP and OTLP/gRPC by turns, until stopped: what each export ended with (ExportResultCode, after the
 * exporter's own retries) and its errors. A replica leaves `serving` (as a load balancer's endpoints) and the
 * batch in flight ends before it stops.
 */
function rolloutTraffic(serving: Replica[], atMs: number): { sent(): number; codes: number[]; errors: string[]; drain(): Promise<void>; stop(): Promise<void> } {
  const codes: number[] = [];
  const errors: string[] = [];
  let sent = 0;
  let stopped = false;
  let inFlight: Promise<unknown> = Promise.resolve();
  const loop = (async () => {
    for (let k = 0; !stopped; k++) {
      const target = serving[k % serving.length]!;
      const batch = Array.from({ length: 5 }, () => ({ hookEvent: 'PreToolUse', hookName: ROLLOUT_HOOK, stdoutChars: 120, outputsPersisted: 0 }));
      const grpc = k % 2 === 1;
      inFlight = emitExecutions(grpc ? target.otlpGrpcUrl : target.otlpHttpUrl, batch, {}, { atMs: atMs + k * 10, protocol: grpc ? 'grpc' : 'http/protobuf' }).then((r) => {
        codes.push(...r.codes);
        errors.push(...r.errors);
        sent += batch.length;
      });
      await inFlight;
    }
  })();
  return {
    sent: () => sent,
    codes,
    errors,
    drain: () => inFlight.then(() => undefined),
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

describe('upgrade on PostgreSQL, replica by replica', () => {
  it('finds the previous release\'s schema three migrations behind (19, the days\' change generations; 20, the count of executions whose sizes may be sums; 21, the stored findings\' commands redacted), as the upgrade notes say (README "Upgrading")', () => {
    expect(RELEASES[0]!.schema).toBe(MIGRATIONS.length - 3);
  });

  it.each(RELEASES)('from $name (schema $schema): views, alerts and silences carry over, no request fails, nothing is notified twice', async (release) => {
    const sink = new WebhookSink();
    await sink.start();
    fx.defer(() => sink.close());
    const config = join(fx.dir(), `upgrade-${release.schema}.yaml`);
    writeFileSync(config, upgradeConfigYaml(sink.url));
    const url = await fx.server().createDatabase();
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    fx.defer(() => db.end());
    const replica = (): Promise<Replica> => fx.replica(url, { HOOKWATCH_CONFIG: config, HOOKWATCH_POSTGRES_LEASE_TTL: '2s' });
    const leads = (r: Replica): Promise<true> => leading(db, r);
    /** Waits for `r`'s evaluations to go on past three more than now: the ones that could notify again have run. */
    const evaluatesOn = async (r: Replica): Promise<void> => {
      const started = await evaluations(r.httpUrl);
      await expect.poll(() => evaluations(r.httpUrl), { timeout: 20_000 }).toBeGreaterThan(started + 2);
    };
    const events = async (): Promise<number> => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM events')).rows[0]!.n);
    const now = Date.now();
    const range = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 3_600_000).toISOString()}`;

    // The release's replicas: A leads, B follows; the captures arrive at both.
    const a = await replica();
    await leads(a);
    const b = await replica();
    // SessionStart:startup and PostToolUse:Bash persist an output each: two alerts, the second one silenced first.
    expect(await silenceBash(b.httpUrl, now)).toBe(201);
    const captures = capturesNow(now);
    for (const [i, r] of captures.entries()) expect((await postOtlp((i % 2 ? b : a).otlpHttpUrl, r.path, r.body, { 'content-type': 'application/json' })).status).toBe(200);
    await sink.waitFor(1, 20_000);
    await evaluatesOn(a);
    expect(sink.requests).toHaveLength(1);
    const seen = await views(a.httpUrl, range);
    expect((seen['alerts'] as unknown[]).length).toBeGreaterThan(0);
    expect(await views(b.httpUrl, range)).toEqual(seen);
    const notified = sink.requests.length;
    const stored = await events();
    expect(stored).toBe(executionsIn(captures));

    // The schema as the release left it, under its running replicas.
    if (release.undo) await db.query(release.undo);
    await db.query('DELETE FROM schema_migrations WHERE version > $1', [release.schema]);

    const serving = [a, b];
    const traffic = rolloutTraffic(serving, now - ROLLOUT_AGO_MS);
    const leave = async (r: Replica): Promise<void> => {
      serving.splice(serving.indexOf(r), 1);
      await traffic.drain();
      await r.stop();
    };
    /** Waits until a few more batches got through, so the replicas serving now have had some of them. */
    const moreTraffic = async (): Promise<void> => {
      const from = traffic.sent();
      await waitFor('more rollout traffic', async () => (traffic.sent() >= from + 20 ? true : undefined), 30_000);
    };

    // A restarts: B leads meanwhile, serves the same views and ingests while A's start migrates the schema.
    await moreTraffic();
    await leave(a);
    await leads(b);
    expect(await views(b.httpUrl, range)).toEqual(seen);
    // A long read (a dashboard's, a dump) holds a snapshot: A's index build, if any, waits for it, and B ingests meanwhile.
    const reader = new pg.Client({ connectionString: url });
    await reader.connect();
    fx.defer(() => reader.end());
    await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await reader.query('SELECT count(*) FROM events');
    let a2Started = false;
    const starting = replica().finally(() => {
      a2Started = true;
    });
    // Only an index build waits for the read; migration 19 (tables and triggers) goes on beside it.
    if (MIGRATIONS.slice(release.schema).some((m) => typeof m === 'object' && 'build' in m)) {
      await waitFor('the index build waiting for the read', async () => ((await db.query("SELECT 1 FROM pg_stat_activity WHERE query LIKE 'CREATE INDEX CONCURRENTLY%' AND wait_event_type = 'Lock'")).rowCount ? true : undefined), 60_000);
      await moreTraffic();
      expect(a2Started).toBe(false);
    }
    await reader.query('COMMIT');
    const a2 = await starting;
    serving.push(a2);
    expect(logEntries(a2.lines, 'postgres schema migrated')).toEqual(release.schema < MIGRATIONS.length ? [expect.objectContaining({ from: release.schema, to: MIGRATIONS.length })] : []);
    await evaluatesOn(b);
    await moreTraffic();
    expect(await views(a2.httpUrl, range)).toEqual(seen);

    // Then B: the restarted A leads.
    await leave(b);
    await leads(a2);
    await evaluatesOn(a2);
    const b2 = await replica();
    serving.push(b2);
    expect(logEntries(b2.lines, 'postgres schema migrated')).toEqual([]);
    await moreTraffic();
    await traffic.stop();

    // Every export succeeded, none retried into a failure; every event sent is stored once.
    expect(traffic.codes.length).toBeGreaterThan(0);
    expect(traffic.errors).toEqual([]);
    expect(traffic.codes.filter((c) => c !== EXPORT_SUCCESS)).toEqual([]);
    expect(await events()).toBe(stored + traffic.sent());
    const schema = await db.query<{ v: number; valid: boolean | null }>(
      "SELECT (SELECT MAX(version) FROM schema_migrations) AS v, (SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('events_late_arrival')) AS valid",
    );
    expect(schema.rows[0]).toEqual({ v: MIGRATIONS.length, valid: true });

    // Both new replicas answer as the release did; nothing was notified again through both hand-overs.
    expect(await views(a2.httpUrl, range)).toEqual(seen);
    expect(await views(b2.httpUrl, range)).toEqual(seen);
    await evaluatesOn(a2);
    expect(sink.requests.length).toBe(notified);
    expect(sink.requests.map((r) => r.headers['webhook-id'])).toEqual([...new Set(sink.requests.map((r) => r.headers['webhook-id']))]);
    // The lease passed A -> B -> A2 and never to B2: one takeover each, at increasing epochs. (A leader that stops
    // trusting its lease for a renewal answered late, under a 2 s ttl, and renews it again keeps its epoch: that
    // is no takeover.)
    const epochs = [a, b, a2, b2].map((r) => [...new Set(logEntries(r.lines, 'leader lease acquired').map((e) => e['epoch']))]);
    expect(epochs.map((e) => e.length)).toEqual([1, 1, 1, 0]);
    expect(epochs.flat()).toEqual([...(epochs.flat() as number[])].sort((x, y) => x - y));
    expect(new Set(epochs.flat()).size).toBe(3);
  }, 240_000);
});
