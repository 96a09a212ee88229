/**
 * A replica started before its PostgreSQL answers (in Kubernetes the database often comes up after the pod, or
 * restarts at the same moment): it must not exit, but listen at once, alive (/healthz) and not ready (/readyz),
 * answer every OTLP request 503 with Retry-After (nothing acknowledged before it is committed), try the database
 * again and again, and once it answers migrate and serve. postgres.startTimeout bounds the wait when set (for
 * another replica's migration too). A
 * SIGTERM or SIGINT while it waits (or waits for another replica's migration) stops it at once, exit 0; one while
 * it migrates exits 1 at once, and the next start migrates.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { expect, it } from 'vitest';
import { MIGRATION_LOCK_KEY, MIGRATIONS } from './index.ts';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { queryOnce } from '../../../test/support/postgres/server.ts';
import { persistedOutputBody } from '../../../test/support/postgres/replicas.ts';
import { logEntries, spawnReplica as spawnOn, waitFor, type SpawnedReplica } from '../../../test/support/serve-process.ts';
import { freePort } from '../../../test/support/free-port.ts';
import { scrapeMetrics } from '../../../test/support/prometheus-text.ts';
import { emitExecutions, type RecordingExporter } from '../../../test/support/service.ts';

const fx = useReplicaFixture();

/** Logged at warn, the first failure at once, then at most once per 10 s with the attempts since. */
const UNREACHABLE = 'postgres not reachable at start; trying again';
/** Each failed attempt, logged at debug (log.level debug, DEBUG below) with the most its pause lasts. */
const ATTEMPT_FAILED = 'postgres start attempt failed';
const DEBUG = { HOOKWATCH_LOG_LEVEL: 'debug' };

/** A replica on fixed free ports (known before it logs `hookwatch started`), killed after the test. */
function spawnReplica(db: string, env: Record<string, string> = {}): Promise<SpawnedReplica> {
  return spawnOn({ db, cwd: mkdtempSync(join(fx.dir(), 'replica-')), env, defer: (fn) => fx.defer(fn) });
}

async function postLogs(otlpHttpUrl: string, session: string): Promise<Response> {
  const res = await fetch(`${otlpHttpUrl}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: persistedOutputBody(Date.now(), session) });
  await res.arrayBuffer();
  return res;
}

it('waits for a PostgreSQL that is down at start: alive, not ready, OTLP 503 with Retry-After, then migrates and serves', async () => {
  const server = fx.server();
  const db = await server.createDatabase();
  const r = await server.down(async () => {
    const r = await spawnReplica(db, DEBUG);
    await waitFor('/healthz answering while the database is down', async () => ((await fetch(`${r.httpUrl}/healthz`).catch(() => undefined))?.status === 200 ? true : undefined), 30_000, 100);
    const ready = await fetch(`${r.httpUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { status: string }).status).toBe('not ready');
    // The API has no store to read yet: "retry later", as during an outage.
    const hooks = await fetch(`${r.httpUrl}/api/v1/hooks`);
    expect([hooks.status, hooks.headers.get('retry-after')]).toEqual([503, expect.stringMatching(/^\d+$/)]);
    const refused = await postLogs(r.otlpHttpUrl, 'while-down');
    expect([refused.status, refused.headers.get('retry-after')]).toEqual([503, expect.stringMatching(/^\d+$/)]);
    // Tried again and again, each failure logged at debug, the password nowhere.
    await waitFor('two failed attempts logged', async () => (logEntries(r.lines(), ATTEMPT_FAILED).length >= 2 ? true : undefined), 30_000, 100);
    return r;
  });
  const replica = await r.starting;
  fx.adopt([replica]);
  await waitFor('/readyz ready once the database is up', async () => ((await fetch(`${r.httpUrl}/readyz`)).status === 200 ? true : undefined), 30_000, 100);
  expect((await postLogs(r.otlpHttpUrl, 'after-up')).status).toBe(200);
  // The one batch acknowledged, and nothing of the one refused.
  expect(await queryOnce<{ n: string }>(db, 'SELECT count(*)::text AS n FROM events')).toEqual([{ n: '1' }]);
  expect(replica.child.exitCode).toBeNull();
  expect(logEntries(r.lines(), ATTEMPT_FAILED)[0]).toMatchObject({ level: 'debug', attempt: 1, retryWithinMs: 500 });
  // The first at warn at once; the later ones are in the lines after it.
  expect(logEntries(r.lines(), UNREACHABLE)[0]).toMatchObject({ level: 'warn', attempt: 1, attempts: 1, err: expect.any(String) });
  expect(r.lines().join('\n')).not.toContain(server.password);
}, 120_000);

it('holds an OTLP/gRPC export sent before the database is up and commits it once it is: acknowledged, stored once', async () => {
  const server = fx.server();
  const db = await server.createDatabase();
  let exported: Promise<RecordingExporter> | undefined;
  const r = await server.down(async () => {
    const r = await spawnReplica(db, DEBUG);
    // Into the fifth pause between attempts (8 s): as long as a hold lasts.
    const fifth = await waitFor('five failed attempts logged', async () => logEntries(r.lines(), ATTEMPT_FAILED)[4], 30_000, 20);
    expect(fifth).toMatchObject({ attempt: 5, retryWithinMs: 8000 });
    // Through OpenTelemetry's JavaScript gRPC exporter (Claude Code's): it sends nothing again after an error.
    exported = emitExecutions(r.otlpGrpcUrl, [{ hookEvent: 'PostToolUse', hookName: 'PostToolUse:Late' }], {}, { protocol: 'grpc' });
    return r;
  });
  // The database is up: the held export brings the next attempt forward, and is committed once the store opens.
  const exporter = await exported!;
  expect(exporter.errors).toEqual([]);
  expect(exporter.codes).toEqual([0]);
  const replica = await r.starting;
  fx.adopt([replica]);
  expect(await queryOnce<{ n: string }>(db, 'SELECT count(*)::text AS n FROM events')).toEqual([{ n: '1' }]);
  // Held (its first try refused: the store not open), then committed; not refused and sent again.
  const heldFamily = (await scrapeMetrics(replica.httpUrl)).families.get('hookwatch_otlp_requests_held_total');
  const held = Object.fromEntries((heldFamily?.samples ?? []).filter((x) => x.labels['transport'] === 'grpc').map((x) => [x.labels['outcome'], x.value]));
  expect(held).toEqual({ committed: 1, unavailable: 0, cancelled: 0, refused: 0 });
}, 120_000);

it('gives up after postgres.startTimeout when the database never answers, and exits 1 saying why', async () => {
  const server = fx.server();
  const db = await server.createDatabase();
  await server.down(async () => {
    const r = await spawnReplica(db, { HOOKWATCH_POSTGRES_START_TIMEOUT: '2s' });
    await expect(r.starting).rejects.toThrow(/exited \(1\)/);
    // Tried again until the bound, not given up on at the first refusal.
    const attempts = logEntries(r.lines(), UNREACHABLE).reduce((n, e) => n + (e['attempts'] as number), 0);
    expect(attempts).toBeGreaterThanOrEqual(2);
    expect(r.lines().join('\n')).toMatch(/cannot open the PostgreSQL store/);
    expect(r.lines().join('\n')).not.toContain(server.password);
  });
}, 120_000);

it('warns of ports open to all without credentials at once, not once the database answers', async () => {
  // A database nothing answers: the start never gets past its wait.
  const db = `postgres://hookwatch:late-pw@127.0.0.1:${await freePort()}/hookwatch`;
  const grpc = await freePort();
  const r = await spawnReplica(db, { HOOKWATCH_OTLP_GRPC_ADDR: `0.0.0.0:${grpc}` });
  await waitFor('/healthz answering while the database is out of reach', async () => ((await fetch(`${r.httpUrl}/healthz`).catch(() => undefined))?.status === 200 ? true : undefined), 30_000, 100);
  await waitFor('the exposure warning', async () => logEntries(r.lines(), `the OTLP receivers listen on 0.0.0.0:${grpc} without otlp.ingestToken: anyone who can reach them can send telemetry`)[0], 10_000, 50);
  expect(logEntries(r.lines(), 'hookwatch started')).toEqual([]);
}, 60_000);

it('does not wait for a database that refuses its password: exits 1 at once, the password nowhere', async () => {
  const server = fx.server();
  const db = await server.createDatabase();
  const wrong = `wrong-${server.password}-pw`;
  const r = await spawnReplica(db.replace(`:${server.password}@`, `:${wrong}@`));
  await expect(r.starting).rejects.toThrow(/exited \(1\)/);
  expect(logEntries(r.lines(), UNREACHABLE)).toEqual([]);
  expect(r.lines().join('\n')).toMatch(/cannot open the PostgreSQL store/);
  expect(r.lines().join('\n')).not.toContain(wrong);
}, 60_000);

/** What /readyz answers: its status, and its reason when not ready. */
async function readiness(httpUrl: string): Promise<{ status: number; reason?: string }> {
  const res = await fetch(`${httpUrl}/readyz`);
  const { reason } = (await res.json()) as { reason?: string };
  return { status: res.status, ...(reason === undefined ? {} : { reason }) };
}

/** Sends `signal` to a replica still starting and resolves with how it exited and how long that took (ms). */
async function signalled(child: ChildProcess, signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }> {
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const t0 = performance.now();
  child.kill(signal);
  const [code, by] = await exited;
  return { code, signal: by, ms: performance.now() - t0 };
}

it('stops at once on SIGTERM while it waits for a database that is down, exit 0: nothing was accepted', async () => {
  const server = fx.server();
  const db = await server.createDatabase();
  await server.down(async () => {
    const r = await spawnReplica(db, DEBUG);
    // Into the fourth wait between attempts (4 s): a stop that waited for the next attempt would take that long.
    const fourth = await waitFor('four failed attempts logged', async () => logEntries(r.lines(), ATTEMPT_FAILED)[3], 30_000, 50);
    expect(fourth).toMatchObject({ attempt: 4, retryWithinMs: 4000 });
    const exit = await signalled(r.child, 'SIGTERM');
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
    expect(exit.ms).toBeLessThan(2000);
    expect(logEntries(r.lines(), 'stopped while waiting for the database')).toEqual([expect.objectContaining({ level: 'info', signal: 'SIGTERM' })]);
    expect(logEntries(r.lines(), 'signal during start: exiting now')).toEqual([]);
    expect(r.lines().join('\n')).not.toContain(server.password);
  });
}, 120_000);

it('stops at once on SIGINT during an attempt the database does not answer, exit 0', async () => {
  const server = fx.server();
  const db = await server.createDatabase();
  // A frozen server: the connection is accepted by the kernel and nothing answers, so the attempt waits for its
  // connect timeout (10 s).
  await server.frozen(async () => {
    const r = await spawnReplica(db);
    await waitFor('/healthz answering while the attempt waits', async () => ((await fetch(`${r.httpUrl}/healthz`).catch(() => undefined))?.status === 200 ? true : undefined), 30_000, 100);
    const exit = await signalled(r.child, 'SIGINT');
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
    expect(exit.ms).toBeLessThan(5000);
    // No attempt had ended yet.
    expect(logEntries(r.lines(), UNREACHABLE)).toEqual([]);
    expect(logEntries(r.lines(), 'stopped while waiting for the database')).toEqual([expect.objectContaining({ signal: 'SIGINT' })]);
  });
}, 120_000);

it('stops at once on SIGTERM while another replica holds the migration lock, exit 0: it had changed nothing', async () => {
  const db = await fx.server().createDatabase();
  const migrating = new pg.Client({ connectionString: db });
  await migrating.connect();
  fx.defer(() => migrating.end());
  await migrating.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
  const r = await spawnReplica(db);
  await waitFor('the replica waiting for the migration lock', async () => logEntries(r.lines(), 'waiting for another replica to finish migrating the schema')[0], 30_000, 50);
  // Not the last failure to connect: what it waits for now.
  expect(await readiness(r.httpUrl)).toEqual({ status: 503, reason: 'waiting for another replica to finish migrating the schema' });
  const exit = await signalled(r.child, 'SIGTERM');
  expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
  expect(exit.ms).toBeLessThan(2000);
  expect(logEntries(r.lines(), 'stopped while waiting for the database')).toEqual([expect.objectContaining({ signal: 'SIGTERM' })]);
}, 120_000);

it('exits 1 at once on SIGTERM while it migrates the schema, and the next start migrates it', async () => {
  const db = await fx.server().createDatabase();
  // The migration blocked at its first read of schema_migrations, this replica holding the migration lock.
  const blocker = new pg.Client({ connectionString: db });
  await blocker.connect();
  fx.defer(() => blocker.end());
  await blocker.query('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())');
  await blocker.query('BEGIN; LOCK TABLE schema_migrations IN ACCESS EXCLUSIVE MODE');
  const r = await spawnReplica(db);
  await waitFor('the migration waiting for its lock', async () => {
    // pg_locks, not pg_stat_activity: that one is read once per transaction, and the blocker's stays open.
    const waiting = await blocker.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'schema_migrations'::regclass AND NOT granted`);
    return waiting.rows[0]!.n > 0 ? true : undefined;
  }, 30_000, 50);
  expect(logEntries(r.lines(), 'postgres schema migrating')).toEqual([]);
  expect(await readiness(r.httpUrl)).toEqual({ status: 503, reason: 'migrating the database schema' });
  const exit = await signalled(r.child, 'SIGTERM');
  // Not a clean stop: the start was cut short (the server rolls back the migration's transaction under way).
  expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 1, signal: null });
  expect(exit.ms).toBeLessThan(2000);
  expect(logEntries(r.lines(), 'signal during start: exiting now')).toEqual([expect.objectContaining({ signal: 'SIGTERM' })]);
  expect(logEntries(r.lines(), 'stopped while waiting for the database')).toEqual([]);
  await blocker.query('ROLLBACK');
  const next = await fx.replica(db, {});
  // As SQLite's line: the versions, and how long the migration took.
  expect(logEntries(next.lines, 'postgres schema migrated')).toEqual([expect.objectContaining({ from: 0, to: MIGRATIONS.length, durationMs: expect.any(Number) })]);
  expect(await queryOnce<{ v: number }>(db, 'SELECT MAX(version) AS v FROM schema_migrations')).toEqual([{ v: MIGRATIONS.length }]);
}, 120_000);

it('gives up after postgres.startTimeout while another replica holds the migration lock, and exits 1 saying why', async () => {
  const db = await fx.server().createDatabase();
  const migrating = new pg.Client({ connectionString: db });
  await migrating.connect();
  fx.defer(() => migrating.end());
  await migrating.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
  const t0 = performance.now();
  const r = await spawnReplica(db, { HOOKWATCH_POSTGRES_START_TIMEOUT: '3s' });
  await waitFor('the replica waiting for the migration lock', async () => logEntries(r.lines(), 'waiting for another replica to finish migrating the schema')[0], 30_000, 50);
  await expect(r.starting).rejects.toThrow(/exited \(1\)/);
  // Waited out the bound, not given up at the first refusal of the lock, and not much past it.
  const ms = performance.now() - t0;
  expect(ms).toBeGreaterThanOrEqual(3000);
  expect(ms).toBeLessThan(15_000);
  expect(r.lines().join('\n')).toMatch(/cannot open the PostgreSQL store: another replica held the schema migration lock past postgres\.startTimeout \(3s\)/);
  // It changed nothing: the schema is the other replica's to migrate.
  expect(await queryOnce<{ t: string | null }>(db, `SELECT to_regclass('schema_migrations')::text AS t`)).toEqual([{ t: null }]);
}, 120_000);
