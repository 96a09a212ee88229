/**
 * `npm run bench:replicas [-- --quick] [--trials N]`: "alerts within a second from any replica". Three real
 * replicas (`hookwatch serve`) on one real PostgreSQL (a throwaway cluster, started as the tests start it), the
 * default evaluation interval (10 s) and lease; a persisted output is posted to a FOLLOWER, which commits it and
 * signals the leader (LISTEN/NOTIFY), and the leader evaluates and notifies. Measured: the time from the OTLP 200 to
 * the webhook request at a local receiver, p50/p95/max over 20 trials (6 with --quick). Baseline: the same posted to
 * the LEADER, trials alternating in the same run, so the ratio is what the signal costs. Goal: under 1 s.
 *
 * Each trial uses a new hook name, so each is a new alert (pending -> firing -> notified), not a repeat. Which
 * replica leads is read from the lease row before each trial, so a lease that moved meanwhile does not mislabel it.
 * The notes count the listening connections lost and the leases lost during the run, as the replicas logged them:
 * a slow trial with neither was the machine's load.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { leaseHolderPid, persistedOutputBody, postLogs, startCluster, startWebhookReceiver, writeAlertingConfig } from '../collector/test/support/postgres/replicas.ts';
import { startTestServer } from '../collector/test/support/postgres/server.ts';
import { waitFor, type Replica } from '../collector/test/support/serve-process.ts';
import { percentile, result, runTrialsStandalone, type BenchResult, type TrialOptions } from './lib/result.ts';
import { startedAsScript } from '../collector/src/tools/common/entry.ts';

/** The goal: notified within a second, whichever replica the output reached. */
const GOAL_MS = 1000;

export async function run(opts: TrialOptions): Promise<BenchResult[]> {
  const trials = opts.trials ?? (opts.quick ? 6 : 20);
  const log = opts.log ?? (() => {});
  const server = await startTestServer();
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-bench-replicas-'));
  const hook = await startWebhookReceiver();
  const viaFollower: number[] = [];
  const viaLeader: number[] = [];
  let replicas: Replica[] = [];
  let events: string;
  try {
    const cluster = await startCluster(server, dir, { HOOKWATCH_CONFIG: writeAlertingConfig(dir, hook.url) });
    replicas = cluster.replicas;
    const { db } = cluster;
    try {
      // One alert through each replica first (not measured): the first request and transaction of each process.
      for (const [i, r] of replicas.entries()) await measure(r, `warm-${i}`, `Warmup:${i}`);
      for (let i = 0; i < trials; i++) {
        for (const toLeader of i % 2 === 0 ? [false, true] : [true, false]) {
          const pid = await leaseHolderPid(db);
          const leader = replicas.find((r) => r.pid === pid);
          const followers = replicas.filter((r) => r.pid !== pid);
          const target = toLeader ? leader : followers[i % followers.length];
          if (!target) throw new Error(`no ${toLeader ? 'leader' : 'follower'} (lease held by ${pid})`);
          const ms = await measure(target, `trial-${i}-${toLeader ? 'l' : 'f'}`, `PostToolUse:bench${i}${toLeader ? 'L' : 'F'}`);
          (toLeader ? viaLeader : viaFollower).push(ms);
          log(`trial ${i} via ${toLeader ? 'leader' : 'follower'}: ${ms} ms`);
        }
      }
    } finally {
      await db.end();
    }
  } finally {
    // What would explain a slow trial besides the machine's load: a listening connection lost, a change of leader.
    const said = (msg: string): number => replicas.reduce((n, r) => n + r.lines.filter((l) => l.includes(`"msg":"${msg}"`)).length, 0);
    events = `listening connections lost: ${said('replica signal connection lost; reconnecting')}, leader leases lost: ${said('leader lease lost')}`;
    await Promise.all(replicas.map((r) => r.stop(3000)));
    await hook.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  /** Posts a persisted output to r; the ms from its 200 to the webhook request naming the hook. */
  async function measure(r: Replica, session: string, hookName: string): Promise<number> {
    const status = await postLogs(r, persistedOutputBody(Date.now(), session, hookName));
    const okAt = Date.now();
    if (status !== 200) throw new Error(`OTLP answered ${status}`);
    const d = await waitFor(`the webhook for ${hookName}`, async () => hook.deliveries.find((x) => x.labels['hook_name'] === hookName), 30_000, 5);
    return d.at - okAt;
  }

  const notes = `3 replicas, one PostgreSQL, default evaluation interval (10 s); ${trials} trials each way, alternating, new hook per trial; from the OTLP 200 to the webhook request on loopback; ${events}`;
  const figures = (label: string, pick: (s: number[]) => number): BenchResult =>
    result(`alert via a follower (200 -> webhook): ${label}`, pick(viaFollower), 'ms', `posted to the leader, ${label}`, pick(viaLeader), `${notes}; goal under ${GOAL_MS} ms`);
  return [
    figures('p50', (s) => percentile(s, 50)),
    figures('p95', (s) => percentile(s, 95)),
    figures('max', (s) => Math.max(...s)),
  ];
}

const USAGE = `Usage: node bench/replicas.ts [--quick] [--trials N]

Alerts within a second from any replica: three replicas on one throwaway PostgreSQL; writes
bench/results/replicas.json.
  --quick               smoke-test sizes (seconds, not minutes)
  --trials N            trials (default 20; 6 with --quick)
  --help                this help
`;

if (startedAsScript(import.meta.url)) await runTrialsStandalone(run, USAGE, 'replicas');
