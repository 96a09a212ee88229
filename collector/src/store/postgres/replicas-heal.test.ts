/**
 * Fault test on a real replica and a real PostgreSQL: the network between them drops every flow without a word
 * (new connections unanswered), then heals. The pools' connections from before the cut are dead for good. Once
 * the replica has found the database unreachable (its readiness check, or its listening connection's check, left
 * unanswered), the batches and queries sent after the heal must run on new connections and be answered at once,
 * not "retry later" after the statement bound (60 s + 5 s) spent on a dead one. Nor may those sent into the cut
 * hold their connections (and a pool's every slot) after the heal: they are answered once the database answers.
 */
import { expect, it } from 'vitest';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { startFlowProxy, type FlowProxy } from '../../../test/support/postgres/flow-proxy.ts';
import { persistedOutputBody } from '../../../test/support/postgres/replicas.ts';
import { logEntries, timedFetch, waitFor, type Replica, type TimedAnswer } from '../../../test/support/serve-process.ts';

const fx = useReplicaFixture();
/** How soon a batch and a query sent after the heal must be answered. */
const ANSWERED_WITHIN_MS = 5000;
/** How long a request is waited for here: past the statement bound, so a request stuck on a dead connection shows it. */
const WAIT_MS = 75_000;
/** Logged once the database answers again, with how many connections still waiting from before the outage it closed. */
const CLOSED_AFTER_HEAL = 'postgres answers again; connections waiting since it did not closed';

/** A replica through a flow proxy, whose pools hold several connections, idle when the cut comes. */
async function warmReplica(): Promise<{ replica: Replica; proxy: FlowProxy }> {
  const url = await fx.server().createDatabase();
  const proxy = await startFlowProxy(fx.server());
  fx.defer(() => proxy.close());
  const replica = await fx.replica(proxy.via(url), {});
  await Promise.all(Array.from({ length: 4 }, (_, i) => fx.post(replica, persistedOutputBody(Date.now(), `before-cut-${i}`))));
  const reads = await Promise.all(Array.from({ length: 3 }, () => fetch(`${replica.httpUrl}/api/v1/hooks?from=now-1h`).then((r) => r.status)));
  expect(reads).toEqual([200, 200, 200]);
  return { replica, proxy };
}

/** A batch and a dashboard query sent together after the heal: both answered 200 within ANSWERED_WITHIN_MS. */
async function expectAnsweredAtOnce(replica: Replica, what: string): Promise<void> {
  const [batch, query] = await Promise.all([
    timedFetch(`${replica.otlpHttpUrl}/v1/logs`, WAIT_MS, { method: 'POST', headers: { 'content-type': 'application/json' }, body: persistedOutputBody(Date.now(), 'after-heal') }),
    timedFetch(`${replica.httpUrl}/api/v1/hooks?from=now-1h`, WAIT_MS),
  ]);
  // eslint-disable-next-line no-console
  console.log(`after the heal (${what}): batch ${JSON.stringify(batch)}, query ${JSON.stringify(query)}`);
  expect(batch.status).toBe(200);
  expect(query.status).toBe(200);
  expect(batch.ms, 'ms to acknowledge a batch sent after the heal').toBeLessThan(ANSWERED_WITHIN_MS);
  expect(query.ms, 'ms to answer a query sent after the heal').toBeLessThan(ANSWERED_WITHIN_MS);
  // Said once, when the idle connections were closed; none of them reported lost.
  expect(logEntries(replica.lines, 'postgres did not answer; idle connections closed').map((e) => e['level'])).toEqual(['warn']);
  expect(logEntries(replica.lines, 'postgres connection lost')).toEqual([]);
}

it('after /readyz said the database was unreachable, a batch and a query sent after the heal are answered at once', async () => {
  const { replica, proxy } = await warmReplica();
  expect(proxy.cutOff()).toBeGreaterThan(0);
  await waitFor('/readyz to say not ready', async () => ((await fetch(`${replica.httpUrl}/readyz`)).status === 503 ? true : undefined), 10_000, 200);
  proxy.heal();
  await waitFor('/readyz to say ready', async () => ((await fetch(`${replica.httpUrl}/readyz`)).status === 200 ? true : undefined), 10_000, 200);
  await expectAnsweredAtOnce(replica, '/readyz said not ready');
}, 240_000);

it('a dashboard refresh and a batch sent into the cut hold no connection after the heal: answered at once, and so is new work', async () => {
  const { replica, proxy } = await warmReplica();
  expect(proxy.cutOff()).toBeGreaterThan(0);
  // A dashboard refreshing (as many queries as the read pool has connections) and an exporter sending, just after
  // the cut: sent on connections the cut dropped, where no answer ever comes.
  const answeredAt = (a: Promise<TimedAnswer>): Promise<TimedAnswer & { at: number }> => a.then((r) => ({ ...r, at: performance.now() }));
  const queries = Array.from({ length: 2 }, () => answeredAt(timedFetch(`${replica.httpUrl}/api/v1/hooks?from=now-1h`, WAIT_MS)));
  const batch = answeredAt(timedFetch(`${replica.otlpHttpUrl}/v1/logs`, WAIT_MS, { method: 'POST', headers: { 'content-type': 'application/json' }, body: persistedOutputBody(Date.now(), 'into-cut') }));
  await waitFor('/readyz to say not ready', async () => ((await fetch(`${replica.httpUrl}/readyz`)).status === 503 ? true : undefined), 10_000, 200);
  proxy.heal();
  const healedAt = performance.now();
  await waitFor('/readyz to say ready', async () => ((await fetch(`${replica.httpUrl}/readyz`)).status === 200 ? true : undefined), 10_000, 200);
  await expectAnsweredAtOnce(replica, 'requests were sent into the cut');
  // Those sent into the cut were answered as soon as the database answered again: the batch "retry later" (its
  // connection closed, nothing acknowledged), each query 503 likewise, or 200 if it had waited for a connection.
  const intoCut = { batch: await batch, queries: await Promise.all(queries) };
  const afterHeal = (a: TimedAnswer & { at: number }): { status: TimedAnswer['status']; afterHealMs: number } => ({ status: a.status, afterHealMs: Math.round(a.at - healedAt) });
  // eslint-disable-next-line no-console
  console.log(`sent into the cut: batch ${JSON.stringify(afterHeal(intoCut.batch))}, queries ${JSON.stringify(intoCut.queries.map(afterHeal))}`);
  expect(intoCut.batch.status).toBe(503);
  for (const a of [intoCut.batch, ...intoCut.queries]) {
    expect([200, 503]).toContain(a.status);
    expect(a.at - healedAt, 'ms from the heal to the answer of a request sent into the cut').toBeLessThan(ANSWERED_WITHIN_MS);
  }
  const closed = logEntries(replica.lines, CLOSED_AFTER_HEAL);
  expect(closed.map((e) => e['level'])).toEqual(['warn']);
  expect(closed[0]?.['connections']).toBeGreaterThanOrEqual(2);
}, 240_000);

/** Waits until the listening connection was found lost in the cut, and the store's own check of the database after it. */
async function listeningFoundLost(replica: Replica): Promise<void> {
  await waitFor('the listening connection to be found lost', async () => (logEntries(replica.lines, 'replica signal connection lost; reconnecting').length > 0 ? true : undefined), 10_000, 100);
  // The store then asks the database on a connection of its own, which has 2 s to answer.
  await new Promise((r) => setTimeout(r, 3000));
}

it('with no readiness probe, once the listening connection found the database unreachable, the same holds', async () => {
  const { replica, proxy } = await warmReplica();
  expect(proxy.cutOff()).toBeGreaterThan(0);
  await listeningFoundLost(replica);
  proxy.heal();
  await expectAnsweredAtOnce(replica, 'the listening connection was found lost');
}, 240_000);

it('with no readiness probe nor batches, a dashboard refreshing through the cut is answered once the listening connection is back', async () => {
  const { replica, proxy } = await warmReplica();
  const hooks = `${replica.httpUrl}/api/v1/hooks?from=now-1h`;
  expect(proxy.cutOff()).toBeGreaterThan(0);
  const intoCut = Array.from({ length: 2 }, () => timedFetch(hooks, WAIT_MS));
  await listeningFoundLost(replica);
  proxy.heal();
  // Nothing but the listening connection (and the lease's) tells the replica the database answers again.
  await waitFor('the listening connection to be restored', async () => (logEntries(replica.lines, 'replica signal connection restored').length > 0 ? true : undefined), 20_000, 100);
  const query = await timedFetch(hooks, WAIT_MS);
  const sentIntoCut = await Promise.all(intoCut);
  // eslint-disable-next-line no-console
  console.log(`after the listening connection was restored: query ${JSON.stringify(query)}; sent into the cut ${JSON.stringify(sentIntoCut)}`);
  expect(query.status).toBe(200);
  expect(query.ms, 'ms to answer a query sent after the heal').toBeLessThan(ANSWERED_WITHIN_MS);
  for (const a of sentIntoCut) expect([200, 503]).toContain(a.status);
  expect(logEntries(replica.lines, CLOSED_AFTER_HEAL).map((e) => e['level'])).toEqual(['warn']);
}, 240_000);
