/**
 * A replica started before its PostgreSQL answers (in Kubernetes the database often comes up after the pod, or
 * restarts at the same moment): it must not exit, but listen at once, alive (/healthz) and not ready (/readyz),
 * answer every OTLP request 503 with Retry-After (nothing acknowledged before it is committed), try the database
 * again and again, and once it answers migrate and serve. postgres.startTimeout bounds the wait when set.
 */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { queryOnce } from '../../../test/support/postgres/server.ts';
import { logEntries, persistedOutputBody, startReplica, waitFor, type Replica } from '../../../test/support/postgres/replicas.ts';
import { freePort } from '../../../test/support/free-port.ts';

const fx = useReplicaFixture();

/** Starts a replica on fixed free ports (known before it logs `hookwatch started`), killed after the test. */
async function spawnReplica(db: string, env: Record<string, string> = {}): Promise<{ starting: Promise<Replica>; otlpHttpUrl: string; httpUrl: string; lines: () => string[] }> {
  const [otlp, grpc, http] = [await freePort(), await freePort(), await freePort()];
  const lines: string[] = [];
  const starting = startReplica({
    db, cwd: mkdtempSync(join(fx.dir(), 'replica-')), startTimeoutMs: 90_000,
    env: { HOOKWATCH_OTLP_HTTP_ADDR: `127.0.0.1:${otlp}`, HOOKWATCH_OTLP_GRPC_ADDR: `127.0.0.1:${grpc}`, HOOKWATCH_HTTP_ADDR: `127.0.0.1:${http}`, ...env },
    onSpawn: (child) => {
      child.stderr?.setEncoding('utf8').on('data', (c: string) => lines.push(...c.split('\n').filter((l) => l !== '')));
      fx.defer(async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGKILL');
        await new Promise((resolve) => child.once('exit', resolve));
      });
    },
  });
  // Looked at by the test (it may never start, or exit as it should); not an unhandled rejection meanwhile.
  starting.catch(() => {});
  return { starting, otlpHttpUrl: `http://127.0.0.1:${otlp}`, httpUrl: `http://127.0.0.1:${http}`, lines: () => lines };
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
    const r = await spawnReplica(db);
    await waitFor('/healthz answering while the database is down', async () => ((await fetch(`${r.httpUrl}/healthz`).catch(() => undefined))?.status === 200 ? true : undefined), 30_000, 100);
    const ready = await fetch(`${r.httpUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { status: string }).status).toBe('not ready');
    // The API has no store to read yet: "retry later", as during an outage.
    const hooks = await fetch(`${r.httpUrl}/api/v1/hooks`);
    expect([hooks.status, hooks.headers.get('retry-after')]).toEqual([503, expect.stringMatching(/^\d+$/)]);
    const refused = await postLogs(r.otlpHttpUrl, 'while-down');
    expect([refused.status, refused.headers.get('retry-after')]).toEqual([503, expect.stringMatching(/^\d+$/)]);
    // Tried again and again, each failure logged once, the password nowhere.
    await waitFor('two failed attempts logged', async () => (logEntries(r.lines(), 'postgres not reachable at start; trying again').length >= 2 ? true : undefined), 30_000, 100);
    return r;
  });
  const replica = await r.starting;
  fx.adopt([replica]);
  await waitFor('/readyz ready once the database is up', async () => ((await fetch(`${r.httpUrl}/readyz`)).status === 200 ? true : undefined), 30_000, 100);
  expect((await postLogs(r.otlpHttpUrl, 'after-up')).status).toBe(200);
  // The one batch acknowledged, and nothing of the one refused.
  expect(await queryOnce<{ n: string }>(db, 'SELECT count(*)::text AS n FROM events')).toEqual([{ n: '1' }]);
  expect(replica.child.exitCode).toBeNull();
  const attempts = logEntries(r.lines(), 'postgres not reachable at start; trying again');
  expect(attempts.length).toBeGreaterThanOrEqual(2);
  expect(attempts[0]).toMatchObject({ level: 'warn', attempt: 1, retryInMs: expect.any(Number) });
  expect(r.lines().join('\n')).not.toContain(server.password);
}, 120_000);

it('gives up after postgres.startTimeout when the database never answers, and exits 1 saying why', async () => {
  const server = fx.server();
  const db = await server.createDatabase();
  await server.down(async () => {
    const r = await spawnReplica(db, { HOOKWATCH_POSTGRES_START_TIMEOUT: '2s' });
    await expect(r.starting).rejects.toThrow(/exited \(1\)/);
    // Tried again until the bound, not given up on at the first refusal.
    expect(logEntries(r.lines(), 'postgres not reachable at start; trying again').length).toBeGreaterThanOrEqual(2);
    expect(r.lines().join('\n')).toMatch(/cannot open the PostgreSQL store/);
    expect(r.lines().join('\n')).not.toContain(server.password);
  });
}, 120_000);

it('does not wait for a database that refuses its password: exits 1 at once, the password nowhere', async () => {
  const server = fx.server();
  const db = await server.createDatabase();
  const wrong = `wrong-${server.password}-pw`;
  const r = await spawnReplica(db.replace(`:${server.password}@`, `:${wrong}@`));
  await expect(r.starting).rejects.toThrow(/exited \(1\)/);
  expect(logEntries(r.lines(), 'postgres not reachable at start; trying again')).toEqual([]);
  expect(r.lines().join('\n')).toMatch(/cannot open the PostgreSQL store/);
  expect(r.lines().join('\n')).not.toContain(wrong);
}, 60_000);
