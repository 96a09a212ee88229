/**
 * Fault test: the leader's signal connection across PostgreSQL outages, with real replicas. Once the database is
 * back the leader listens again as soon as one of its other connections succeeds (not when its reconnect backoff
 * runs out, up to 10 s later), and a follower's signal sent while the leader could not hear it is not left to
 * the evaluation timer: the leader evaluates once it listens again. The timer is set to 10 minutes, so only
 * those paths can notify within the tests.
 */
import pg from 'pg';
import { expect, it } from 'vitest';
import { useReplicaFixture } from '../../../test/support/postgres/fixture.ts';
import { persistedOutputBody, postLogs, writeAlertingConfig, type TestCluster, type WebhookReceiver } from '../../../test/support/postgres/replicas.ts';
import { logEntries, waitFor, type Replica } from '../../../test/support/serve-process.ts';

const fx = useReplicaFixture();
const LOST = 'replica signal connection lost; reconnecting';
const RESTORED = 'replica signal connection restored';

/** A cluster whose leader stays leader through the outages below (so no takeover evaluates in its place). */
async function cluster(): Promise<TestCluster & { hook: WebhookReceiver; url: string }> {
  const hook = await fx.webhook();
  const c = await fx.cluster({ HOOKWATCH_CONFIG: writeAlertingConfig(fx.dir(), hook.url), HOOKWATCH_POSTGRES_LEASE_TTL: '60s', HOOKWATCH_ALERT_EVALUATION_INTERVAL: '10m' });
  // The test's own connection dies with the server: only asked before.
  c.db.on('error', () => {});
  return { ...c, hook, url: fx.server().url(c.db.database) };
}

async function signalsListening(r: Replica): Promise<string | undefined> {
  const text = await (await fetch(`${r.httpUrl}/metrics`)).text();
  return /^hookwatch_cluster_signals_listening (\d)$/m.exec(text)?.[1];
}

async function leaseEpoch(url: string): Promise<string | undefined> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<{ epoch: string }>("SELECT epoch::text AS epoch FROM leader_lease WHERE name = 'hookwatch'")).rows[0]?.epoch;
  } finally {
    await c.end();
  }
}

/** Posts until a replica stores it (its pool may still hold connections the restart cut: 503, then 200). */
async function store(r: Replica, body: string): Promise<void> {
  await waitFor(`${r.httpUrl} storing the batch`, async () => ((await postLogs(r, body)) === 200 ? true : undefined), 30_000, 200);
}

it('listens again as soon as PostgreSQL is back, not when its reconnect backoff runs out, and hears followers at once', async () => {
  const { leader, followers, hook } = await cluster();
  expect(await signalsListening(leader)).toBe('1');
  await fx.server().down(async () => {
    // Down long enough for the leader's listening connection to back off to 8 s or more.
    await waitFor('the leader backing off', async () => logEntries(leader.lines, LOST).find((l) => Number(l['retryMs']) >= 8000), 60_000, 100);
    expect(await signalsListening(leader)).toBe('0');
  });
  // A scrape reads the cluster view on the store's pool: its new connection says the database answers again.
  await waitFor('the leader listening again', async () => ((await signalsListening(leader)) === '1' ? true : undefined), 60_000, 100);
  // Back by an attempt brought forward when the database answered, not by the backoff's next one.
  expect(logEntries(leader.lines, RESTORED).map((l) => l['aheadOfBackoff'])).toEqual([true]);
  // While the database was down, the backoff alone paced the attempts: no loop, no flood of lines.
  expect(logEntries(leader.lines, LOST).length).toBeLessThanOrEqual(8);

  await store(followers[0]!, persistedOutputBody(Date.now(), 'after-outage', 'PostToolUse:Bash'));
  await waitFor('the webhook for the follower\'s batch', async () => hook.deliveries.find((d) => d.labels['hook_name'] === 'PostToolUse:Bash'), 30_000, 50);
}, 180_000);

it('evaluates once it listens again: a follower\'s signal sent while the leader could not hear it still notifies', async () => {
  const { leader, followers, hook, url } = await cluster();
  const epoch = await leaseEpoch(url);
  let heard: string | undefined;
  // A paused leader across a restart: its listening session is gone while the follower signals.
  leader.child.kill('SIGSTOP');
  try {
    await fx.server().restart();
    const watcher = new pg.Client({ connectionString: url });
    watcher.on('notification', (m) => {
      if (m.channel === 'hookwatch_ingest') heard = m.payload;
    });
    await watcher.connect();
    try {
      await watcher.query('LISTEN hookwatch_ingest');
      await store(followers[0]!, persistedOutputBody(Date.now(), 'while-deaf', 'Stop'));
      // The follower's signal has gone out, and the leader had no session to hear it.
      await waitFor('the follower\'s signal', async () => heard, 30_000, 20);
    } finally {
      await watcher.end();
    }
  } finally {
    leader.child.kill('SIGCONT');
  }
  expect(heard).toBe('["persisted_output"]');
  await waitFor('the webhook for the missed signal', async () => hook.deliveries.find((d) => d.labels['hook_name'] === 'Stop'), 30_000, 50);
  expect(logEntries(leader.lines, RESTORED)).toHaveLength(1);
  // Notified by the leader it was, without a takeover (which would have evaluated too).
  expect(await leaseEpoch(url)).toBe(epoch);
}, 180_000);
