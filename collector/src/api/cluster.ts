/**
 * GET /api/v1/cluster: which replica leads (lease holder and its fencing epoch) and every replica's last
 * heartbeat, read from the shared store so every replica answers the same. A single SQLite process is its own
 * leader. Replica ids are host:pid:random; no address, URL or credential is shown.
 */
import express, { type Router } from 'express';
import type { ClusterResponse } from '../../../shared/src/api.ts';
import type { ClusterState } from '../store/model.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { MetricFamily } from '../telemetry/metrics.ts';
import { clusterResponse } from './wire.ts';

export interface ClusterSource {
  cluster(): Promise<ClusterState>;
  leader: { isLeader(): boolean; epoch?(): number | null };
}

export function createClusterRouter(opts: { coordination: ClusterSource; logger: Logger }): Router {
  const router = express.Router();
  router.get('/api/v1/cluster', async (_req, res) => {
    try {
      const body: ClusterResponse = clusterResponse(await opts.coordination.cluster());
      res.json(body);
    } catch (err) {
      opts.logger.warn('cluster state unavailable', { err });
      res.status(503).set('retry-after', '1').json({ error: { code: 'unavailable', message: 'the shared store cannot be read right now; retry' } });
    }
  });
  return router;
}

/** /metrics: this replica's role, the leader (by name) and its lease epoch, each replica's last heartbeat. */
export async function clusterFamilies(source: ClusterSource): Promise<MetricFamily[]> {
  const families: MetricFamily[] = [
    { name: 'hookwatch_leader', type: 'gauge', help: '1 while this replica holds the leader lease (alert evaluation, notifications, retention), else 0.', samples: [{ value: source.leader.isLeader() ? 1 : 0 }] },
  ];
  let c: ClusterState;
  try {
    c = await source.cluster();
  } catch {
    // The store is away: this replica's own role is still known; the shared view is not.
    return families;
  }
  families.push(
    { name: 'hookwatch_cluster_leader_info', type: 'gauge', help: 'The replica holding the leader lease (value 1; no sample while no replica holds it).', samples: c.leader ? [{ labels: { replica: c.leader.replica }, value: 1 }] : [] },
    { name: 'hookwatch_cluster_leader_epoch', type: 'gauge', help: 'Fencing epoch of the current leader lease (increments on every change of leader).', samples: c.leader ? [{ value: c.leader.epoch }] : [] },
    {
      name: 'hookwatch_cluster_replica_heartbeat_timestamp_seconds', type: 'gauge', help: 'Unix time of each replica\'s last heartbeat in the shared store.',
      samples: c.replicas.map((r) => ({ labels: { replica: r.replica }, value: r.lastHeartbeatMs / 1000 })),
    },
  );
  return families;
}
