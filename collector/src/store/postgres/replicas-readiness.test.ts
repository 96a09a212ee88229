/**
 * Fault test on a real replica and a real PostgreSQL: the network between them is cut off without a word (every
 * packet lost, new connections never answered), then heals. Kubernetes asks /readyz every few seconds and gives up
 * on an answer after a few (1 s by default): the replica must say it is not ready within a few seconds of the cut,
 * and ready again within a few seconds of the heal, answering each probe within its bound, never from behind a
 * connection the cut left dead.
 */
import { expect, it } from 'vitest';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { startFlowProxy } from '../../../test/support/postgres/flow-proxy.ts';
import { persistedOutputBody } from '../../../test/support/postgres/replicas.ts';
import { timedFetch, waitFor, type Replica, type TimedAnswer } from '../../../test/support/serve-process.ts';

/** A readiness probe's period and timeout (the probe gives up on an answer after that long). */
const PROBE_EVERY_MS = 1000;
const PROBE_TIMEOUT_MS = 5000;
/** How long /readyz may take to answer, the database cut off or not (the store's readiness bound, 2 s, and some). */
const ANSWER_WITHIN_MS = 3000;
/** How soon after the cut, and after the heal, /readyz must tell. */
const TELLS_WITHIN_MS = 6000;
const fx = useReplicaFixture();

interface Probe extends TimedAnswer {
  /** When it was sent, from the start of the probing (ms). */
  at: number;
}

/** One GET /readyz, given up on after PROBE_TIMEOUT_MS as a probe does. */
async function probe(r: Replica, t0: number): Promise<Probe> {
  const at = Math.round(performance.now() - t0);
  return { at, ...(await timedFetch(`${r.httpUrl}/readyz`, PROBE_TIMEOUT_MS)) };
}

/** Probes every PROBE_EVERY_MS (each after the one before) until `until` holds for one, or for `forMs`; returns them in order. */
async function probeUntil(r: Replica, until: (p: Probe) => boolean, forMs: number): Promise<Probe[]> {
  const t0 = performance.now();
  const probes: Probe[] = [];
  while (performance.now() - t0 < forMs) {
    const p = await probe(r, t0);
    probes.push(p);
    if (until(p)) return probes;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, PROBE_EVERY_MS - p.ms)));
  }
  return probes;
}

it('/readyz says not ready within seconds of a silent network cut, and ready within seconds of it healing', async () => {
  const url = await fx.server().createDatabase();
  const proxy = await startFlowProxy(fx.server());
  fx.defer(() => proxy.close());
  const replica = await fx.replica(proxy.via(url), {});
  // The pools hold connections the cut will leave dead: a batch stored and a dashboard answer read.
  await fx.post(replica, persistedOutputBody(Date.now(), 'before-cut'));
  expect((await fetch(`${replica.httpUrl}/api/v1/hooks?from=now-1h`)).status).toBe(200);
  await waitFor('ready', async () => ((await probe(replica, performance.now())).status === 200 ? true : undefined), 10_000);

  expect(proxy.cutOff()).toBeGreaterThan(0);
  // A batch sent now waits on a connection that is dead (it is answered "retry later" after the statement bound).
  void fetch(`${replica.otlpHttpUrl}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: persistedOutputBody(Date.now(), 'during-cut') }).catch(() => {});
  const cut = await probeUntil(replica, (p) => p.status !== 200, 70_000);
  // Cut off a while longer: each probe meanwhile answers "not ready" within its bound.
  const during = await probeUntil(replica, () => false, 8000);
  proxy.heal();
  const healed = await probeUntil(replica, (p) => p.status === 200, 90_000);
  // eslint-disable-next-line no-console
  console.log(`readiness through a network cut: after the cut ${JSON.stringify(cut)}; while cut ${JSON.stringify(during)}; after the heal ${JSON.stringify(healed)}`);

  const told = (probes: Probe[]): number => (probes.at(-1)?.at ?? Infinity) + (probes.at(-1)?.ms ?? 0);
  expect(cut.at(-1)?.status).toBe(503);
  expect(told(cut), 'ms from the cut to a "not ready"').toBeLessThan(TELLS_WITHIN_MS);
  expect(during.map((p) => p.status)).toEqual(during.map(() => 503));
  expect(healed.at(-1)?.status).toBe(200);
  expect(told(healed), 'ms from the heal to a "ready"').toBeLessThan(TELLS_WITHIN_MS);
  const slowest = Math.max(...[...cut, ...during, ...healed].map((p) => p.ms));
  expect(slowest, 'the slowest /readyz answer (ms)').toBeLessThan(ANSWER_WITHIN_MS);
}, 240_000);
