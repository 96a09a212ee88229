/**
 * A running replica whose password the server stops accepting (rotated on the server: ALTER ROLE ... PASSWORD and
 * the role's sessions ended). The store is unavailable, not broken: OTLP and the API answer 503 (clients retry),
 * /readyz says why, one line a minute says so without the password, and it serves again once the password works.
 * At start, a refused password still ends the process (store/open.ts).
 */
import pg from 'pg';
import { expect, it } from 'vitest';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { persistedOutputBody, postLogs } from '../../../test/support/postgres/replicas.ts';
import { waitFor } from '../../../test/support/serve-process.ts';

const fx = useReplicaFixture();
const secret = (): string => `pw-${Math.random().toString(36).slice(2)}-${Date.now().toString(36)}`;

it('a password refused at runtime makes the store unavailable (503, not ready, one line) until it works again', { timeout: 120_000 }, async () => {
  const db = await fx.server().createDatabase();
  const admin = new pg.Client({ connectionString: db });
  await admin.connect();
  fx.defer(() => admin.end());
  const role = `hw_${Date.now().toString(36)}`;
  const first = secret();
  const rotated = secret();
  await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${first}'`);
  await admin.query(`ALTER DATABASE ${new URL(db).pathname.slice(1)} OWNER TO ${role}`);
  await admin.query(`ALTER SCHEMA public OWNER TO ${role}`);
  const url = new URL(db);
  url.username = role;
  url.password = first;
  const replica = await fx.replica(url.toString(), {});
  await fx.post(replica, persistedOutputBody(Date.now(), 'before'));

  await admin.query(`ALTER ROLE ${role} PASSWORD '${rotated}'`);
  await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role]);
  const from = replica.lines.length;
  const ready = async (): Promise<{ status: number; body: string }> => {
    const res = await fetch(`${replica.httpUrl}/readyz`);
    return { status: res.status, body: await res.text() };
  };
  const notReady = await waitFor('not ready', async () => {
    const r = await ready();
    return r.status === 503 ? r : undefined;
  }, 30_000, 200);
  expect(notReady.body).toMatch(/password authentication failed/);
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`${replica.otlpHttpUrl}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: persistedOutputBody(Date.now(), `during-${i}`) });
    await res.arrayBuffer();
    expect([res.status, res.headers.get('retry-after') !== null]).toEqual([503, true]);
    expect((await fetch(`${replica.httpUrl}/api/v1/hooks?from=now-1h`)).status).toBe(503);
    expect((await fetch(`${replica.httpUrl}/api/v1/cluster`)).status).toBe(503);
  }
  const during = replica.lines.slice(from);
  const said = (text: string): string[] => during.filter((l) => l.includes(text));
  // One line about the refusal, naming its cause, however many requests met it; none an error with a stack.
  expect(said('postgres refuses this replica')).toHaveLength(1);
  expect(said('postgres refuses this replica')[0]).toMatch(/password authentication failed/);
  // No request is a failure of hookwatch's (`otlp request failed`, `api request failed`, each with its stack).
  expect(said('request failed')).toEqual([]);
  // However many requests and evaluations met it: the store's line once, the alert evaluation's at most once
  // (its ticks), each without a stack.
  const evaluations = said('alert evaluation failed');
  expect(evaluations.length).toBeLessThanOrEqual(1);
  // Dashboards poll /api/v1/cluster: its line once too, as the OTLP refusals' are.
  expect(said('cluster state unavailable')).toHaveLength(1);
  expect([...said('postgres refuses this replica'), ...evaluations, ...said('cluster state unavailable')].filter((l) => l.includes('    at '))).toEqual([]);
  for (const l of during) expect(l).not.toContain(first);
  for (const l of during) expect(l).not.toContain(rotated);

  // The password set back (or the replica's configuration to the new one): it serves again, without a restart.
  await admin.query(`ALTER ROLE ${role} PASSWORD '${first}'`);
  await waitFor('ready again', async () => ((await ready()).status === 200 ? true : undefined), 30_000, 200);
  expect(await postLogs(replica, persistedOutputBody(Date.now(), 'after'))).toBe(200);
  expect((await fetch(`${replica.httpUrl}/api/v1/cluster`)).status).toBe(200);
});
