/**
 * Fault test: PostgreSQL crashes and restarts (`pg_ctl restart -m immediate`: no checkpoint, recovery from the
 * WAL) while every one of three replicas has batches in flight. Each batch is answered either 200, and is then
 * in the database after the recovery, or 503 with Retry-After (an exporter sends it again); no replica exits;
 * each one's /readyz says not ready while the server is down and ready again once it is back, by itself.
 */
import { expect, it } from 'vitest';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { queryOnce } from '../../../test/support/postgres/server.ts';
import { persistedOutputBody } from '../../../test/support/postgres/replicas.ts';
import { type Replica } from '../../../test/support/serve-process.ts';

// Acknowledged commits must survive the crash: the test server's default turns synchronous_commit off.
const fx = useReplicaFixture({ settings: { synchronous_commit: 'on' } });

interface Answer {
  /** stdout_chars of the batch's one record: names it in the events table. */
  n: number;
  status: number;
  retryAfter: string | null;
  /** When the answer came (Date.now()). */
  at: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

it('a crash of PostgreSQL under load: every 200 is stored, every other answer is 503 with Retry-After, /readyz follows', async () => {
  const { replicas, db } = await fx.cluster({ HOOKWATCH_POSTGRES_LEASE_TTL: '2s' });
  // The test's own connection dies with the server: the events are read on a new one after.
  db.on('error', () => {});
  const url = fx.server().url(db.database);
  const answers: Answer[] = [];
  const readiness = new Map<Replica, number[]>(replicas.map((r) => [r, []]));
  let n = 0;
  let running = true;
  const posters = replicas.flatMap((r) => [0, 1].map(async () => {
    while (running) {
      const k = ++n;
      const body = persistedOutputBody(Date.now(), `crash-${k}`).replace('"24000"', `"${k}"`);
      const res = await fetch(`${r.otlpHttpUrl}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await res.arrayBuffer();
      answers.push({ n: k, status: res.status, retryAfter: res.headers.get('retry-after'), at: Date.now() });
      await sleep(5);
    }
  }));
  /** Each replica's /readyz statuses, a new entry at each change. */
  const probes = replicas.map(async (r) => {
    const seen = readiness.get(r) as number[];
    while (running) {
      const status = (await fetch(`${r.httpUrl}/readyz`, { signal: AbortSignal.timeout(2000) }).catch(() => ({ status: 0 }))).status;
      if (seen.at(-1) !== status) seen.push(status);
      await sleep(50);
    }
  });
  await sleep(1500);
  await fx.server().restart('immediate');
  const back = Date.now();
  await sleep(4000);
  running = false;
  await Promise.all([...posters, ...probes]);

  const stored = new Set((await queryOnce<{ v: string }>(url, 'SELECT stdout_chars::text AS v FROM events')).map((r) => Number(r.v)));
  const acked = answers.filter((a) => a.status === 200);
  const refused = answers.filter((a) => a.status !== 200);
  // eslint-disable-next-line no-console
  console.log(`immediate restart: ${answers.length} batches, ${acked.length} answered 200, ${refused.length} refused; /readyz ${JSON.stringify([...readiness.values()])}`);
  expect(replicas.map((r) => r.child.exitCode ?? r.child.signalCode)).toEqual([null, null, null]);
  expect(acked.filter((a) => !stored.has(a.n))).toEqual([]);
  // The crash met batches in flight, and each of those was refused as retryable.
  expect(refused.length).toBeGreaterThan(0);
  expect(refused.filter((a) => a.status !== 503 || !/^\d+$/.test(a.retryAfter ?? ''))).toEqual([]);
  // Batches are stored again after the recovery, on every replica's own new connections.
  expect(acked.filter((a) => a.at > back).length).toBeGreaterThan(0);
  for (const seen of readiness.values()) {
    expect(seen[0]).toBe(200);
    expect(seen).toContain(503);
    expect(seen.at(-1)).toBe(200);
  }
}, 120_000);
