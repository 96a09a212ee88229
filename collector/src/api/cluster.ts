/**
 * GET /api/v1/cluster: which replica leads (lease holder and its fencing epoch) and every replica's last
 * heartbeat, read from the shared store so every replica answers the same. A single SQLite process is its own
 * leader. Replica ids are host:pid:random; no address, URL or credential is shown.
 */
import express, { type Router } from 'express';
import type { ClusterResponse } from '../../../shared/src/api.ts';
import type { ClusterState } from '../store/model.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { MetricsRegistry } from '../telemetry/metrics.ts';
import { ThrottledLine } from '../telemetry/throttled-line.ts';
import { unavailable } from './index.ts';
import { onlyParams } from './params.ts';
import { clusterResponse } from './wire.ts';

export interface ClusterSource {
  cluster(): Promise<ClusterState>;
  leader: { isLeader(): boolean; epoch?(): number | null };
  /** Whether the connection listening for other replicas' signals is up; undefined without one (SQLite). */
  signalsListening?(): boolean | undefined;
}

/**
 * How often, at most, a failed read of the cluster state is logged: dashboards and probes poll the route every few
 * seconds, and while the store is away each would log a line of its own.
 */
const UNAVAILABLE_LOG_MS = 60_000;

export function createClusterRouter(opts: { coordination: ClusterSource; logger: Logger }): Router {
  const router = express.Router();
  let cause = '';
  const failures = new ThrottledLine(UNAVAILABLE_LOG_MS, () => performance.now(), (requests) => {
    opts.logger.warn(`cluster state unavailable: ${cause}`, { requests });
  });
  router.get('/api/v1/cluster', async (req, res) => {
    onlyParams(req.query as Record<string, unknown>, []);
    try {
      const body: ClusterResponse = clusterResponse(await opts.coordination.cluster());
      res.json(body);
    } catch (err) {
      // The store's message (scrubbed of the URL and password), not its stack: the cause is the store's.
      cause = err instanceof Error ? err.message : String(err);
      failures.note();
      unavailable(res, 'the shared store cannot be read right now; retry');
    }
  });
  return router;
}

/** /metrics: this replica's role, the leader (by name) and its lease epoch, each replica's last heartbeat. */
export function registerClusterMetrics(metrics: MetricsRegistry, source: ClusterSource): void {
  metrics.collectedGauge('cluster', {
    name: 'hookwatch_leader', help: '1 while this replica holds the leader lease (alert evaluation, notifications, retention), else 0.',
    collect: (set) => set({}, source.leader.isLeader() ? 1 : 0),
  });
  metrics.collectedGauge('cluster', {
    name: 'hookwatch_cluster_signals_listening', help: '1 while this replica listens for the other replicas\' signals (PostgreSQL LISTEN), 0 while that connection reconnects; no sample on SQLite.',
    collect: (set) => {
      const listening = source.signalsListening?.();
      if (listening !== undefined) set({}, listening ? 1 : 0);
    },
  });
  // The store may be away: this replica's own role is still known; the shared view then has no samples.
  const shared = metrics.perScrape(() => source.cluster().catch(() => undefined));
  metrics.collectedGauge('cluster', {
    name: 'hookwatch_cluster_leader_info', help: 'The replica holding the leader lease (value 1; no sample while no replica holds it).', labelNames: ['replica'],
    collect: async (set) => {
      const leader = (await shared())?.leader;
      if (leader) set({ replica: leader.replica }, 1);
    },
  });
  metrics.collectedGauge('cluster', {
    name: 'hookwatch_cluster_leader_epoch', help: 'Fencing epoch of the current leader lease (increments on every change of leader).',
    collect: async (set) => {
      const leader = (await shared())?.leader;
      if (leader) set({}, leader.epoch);
    },
  });
  metrics.collectedGauge('cluster', {
    name: 'hookwatch_cluster_replica_heartbeat_timestamp_seconds', help: 'Unix time of each replica\'s last heartbeat in the shared store.', labelNames: ['replica'],
    collect: async (set) => {
      for (const r of (await shared())?.replicas ?? []) set({ replica: r.replica }, r.lastHeartbeatMs / 1000);
    },
  });
}
