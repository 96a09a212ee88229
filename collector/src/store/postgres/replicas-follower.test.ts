/**
 * Three real replicas on one real PostgreSQL answer as one service, whichever one a request reaches:
 * a persisted output posted to a follower is notified at once (the follower signals the leader), a silence
 * created on one replica is read and honoured on the others at once and can be expired through any of them, and
 * every replica names the same leader (GET /api/v1/cluster and /metrics). No evaluation timer runs within a test
 * (10 min) and the lease outlives any stall of a loaded machine (60 s): what is notified was signalled, whatever
 * the signal took.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AlertsResponse, ClusterResponse, Silence } from '../../../../shared/src/api.ts';
import { startTestServer, type TestServer } from '../../../test/support/postgres/server.ts';
import { persistedOutputBody, postLogs, startCluster, startWebhookReceiver, writeAlertingConfig, type WebhookReceiver } from '../../../test/support/postgres/replicas.ts';
import { waitFor, type Replica } from '../../../test/support/serve-process.ts';

let server: TestServer;
let dir: string;
let hook: WebhookReceiver;
let db: pg.Client;
let three: Replica[];
let leader: Replica;
let followers: Replica[];

beforeAll(async () => {
  server = await startTestServer();
  dir = mkdtempSync(join(tmpdir(), 'hookwatch-follower-'));
  hook = await startWebhookReceiver();
  // No evaluation timer within a test: only the signal from the follower gets its output notified.
  const c = await startCluster(server, dir, { HOOKWATCH_CONFIG: writeAlertingConfig(dir, hook.url), HOOKWATCH_POSTGRES_LEASE_TTL: '60s', HOOKWATCH_ALERT_EVALUATION_INTERVAL: '10m' });
  ({ replicas: three, db, leader, followers } = c);
}, 120_000);
afterAll(async () => {
  await Promise.all((three ?? []).map((r) => r.stop(3000)));
  await db?.end();
  await hook?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function post(r: Replica, body: string): Promise<void> {
  expect(await postLogs(r, body)).toBe(200);
}

async function getJson<T>(r: Replica, path: string): Promise<T> {
  const res = await fetch(r.httpUrl + path);
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

it('notifies a persisted output posted to a follower at once, through its signal to the leader', async () => {
  // Warm up each process (first request, first transaction) with a record that fires nothing, and let every
  // replica heartbeat once: what is measured is the path from a follower's commit to the leader's webhook.
  for (const [i, r] of three.entries()) await post(r, persistedOutputBody(Date.now(), `warm-${i}`, 'Warmup').replace('"24000"', '"10"').replace('"num_outputs_persisted","value":{"stringValue":"1"}', '"num_outputs_persisted","value":{"stringValue":"0"}'));
  await waitFor('three replicas heartbeating', async () => ((await getJson<ClusterResponse>(leader, '/api/v1/cluster')).replicas.length === 3 ? true : undefined), 10_000, 100);
  // And the leader's own alert path once (not measured).
  await post(leader, persistedOutputBody(Date.now(), 'warm-leader', 'Warmup'));
  await waitFor('the warm-up webhook', async () => hook.deliveries.find((x) => x.labels['hook_name'] === 'Warmup'), 15_000, 10);
  const latencies: number[] = [];
  for (const [i, name] of ['PostToolUse:Bash', 'PostToolUse:Edit', 'Stop'].entries()) {
    const follower = followers[i % 2]!;
    const sent = Date.now();
    await post(follower, persistedOutputBody(sent, `follower-${i}`, name));
    const d = await waitFor(`the webhook for ${name}`, async () => hook.deliveries.find((x) => x.labels['hook_name'] === name), 15_000, 10);
    latencies.push(d.at - sent);
  }
  // eslint-disable-next-line no-console
  console.log(`follower ingest to webhook: ${latencies.join(', ')} ms`);
  // Every replica lists the same firing alerts, read from the shared state.
  for (const r of three) {
    const a = await getJson<AlertsResponse>(r, '/api/v1/alerts?state=firing');
    expect(a.alerts.map((x) => x.labels['hook_name']).sort(), r.httpUrl).toEqual(['PostToolUse:Bash', 'PostToolUse:Edit', 'Stop', 'Warmup']);
  }
}, 60_000);

it('a silence created on one replica is read and honoured on the others at once, and expires through any', async () => {
  const [creator, other] = followers as [Replica, Replica];
  const res = await fetch(`${creator.httpUrl}/api/v1/silences`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ matchers: [{ name: 'hook_name', value: 'SessionStart' }], endsAt: new Date(Date.now() + 3_600_000).toISOString(), createdBy: 'sre', comment: 'maintenance' }),
  });
  expect(res.status).toBe(201);
  const { silence } = (await res.json()) as { silence: Silence };
  for (const r of [leader, other]) {
    await waitFor(`the silence on ${r.httpUrl}`, async () => ((await getJson<{ silences: Silence[] }>(r, '/api/v1/silences')).silences.some((s) => s.id === silence.id) ? true : undefined), 15_000, 20);
  }

  // Straight away: a matching alert (through the other follower) is muted, a different one is notified.
  await post(other, persistedOutputBody(Date.now(), 'silenced-session', 'SessionStart'));
  await post(other, persistedOutputBody(Date.now(), 'loud-session', 'UserPromptSubmit'));
  await waitFor('the unsilenced alert', async () => hook.deliveries.find((x) => x.labels['hook_name'] === 'UserPromptSubmit'), 15_000, 10);
  for (const r of three) {
    const a = await getJson<AlertsResponse>(r, '/api/v1/alerts?state=firing');
    const muted = a.alerts.find((x) => x.labels['hook_name'] === 'SessionStart');
    expect(muted?.silencedBy, r.httpUrl).toEqual([silence.id]);
  }
  await new Promise((r) => setTimeout(r, 500));
  expect(hook.deliveries.filter((x) => x.labels['hook_name'] === 'SessionStart')).toEqual([]);

  // Expired through a replica that did not create it: found (not 404), and the muted alert is notified at once.
  const del = await fetch(`${leader.httpUrl}/api/v1/silences/${silence.id}`, { method: 'DELETE' });
  expect(del.status).toBe(200);
  await waitFor('the alert once unmuted', async () => hook.deliveries.find((x) => x.labels['hook_name'] === 'SessionStart'), 15_000, 10);
  const onCreator = await getJson<{ silences: Silence[] }>(creator, '/api/v1/silences');
  expect(onCreator.silences.find((s) => s.id === silence.id)?.state).toBe('expired');
}, 60_000);

it('every replica names the same leader, epoch and replicas in GET /api/v1/cluster and /metrics', async () => {
  const views = await Promise.all(three.map((r) => getJson<ClusterResponse>(r, '/api/v1/cluster')));
  const holder = (await db.query<{ holder: string; epoch: string }>('SELECT holder, epoch::text AS epoch FROM leader_lease')).rows[0]!;
  for (const [i, v] of views.entries()) {
    expect(v.backend).toBe('postgres');
    expect(v.leader?.replica).toBe(holder.holder);
    expect(v.leader?.epoch).toBe(Number(holder.epoch));
    expect(v.replicas).toHaveLength(3);
    expect(v.replicas.filter((r) => r.leader)).toHaveLength(1);
    expect(v.replicas.every((r) => r.alive)).toBe(true);
    expect(v.replicas.find((r) => r.self)?.replica).toBe(v.self);
    expect(v.self.split(':').at(-2)).toBe(String(three[i]!.pid));
  }
  for (const r of three) {
    const text = await (await fetch(`${r.httpUrl}/metrics`)).text();
    expect(text).toContain(`hookwatch_leader ${r === leader ? 1 : 0}\n`);
    // Every replica listens for the others' signals.
    expect(text).toContain('hookwatch_cluster_signals_listening 1\n');
    expect(text).toContain(`hookwatch_cluster_leader_info{replica="${holder.holder}"} 1`);
    expect(text).toContain(`hookwatch_cluster_leader_epoch ${holder.epoch}`);
    expect(text.match(/^hookwatch_cluster_replica_heartbeat_timestamp_seconds\{/gm)).toHaveLength(3);
  }
}, 60_000);
