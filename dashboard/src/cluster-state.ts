/**
 * The replicas panel's state, without the DOM: who leads, whether a failover is under way, and each replica's
 * last heartbeat, from GET /api/v1/cluster. Unit-tested in Node.
 */
import type { ClusterResponse } from '../../shared/src/api.ts';
import { dateTime } from './format.ts';

export type ClusterView =
  | { kind: 'single'; text: string }
  | { kind: 'led'; replica: string; after: string; rows: string[][] }
  | { kind: 'failover'; text: string; rows: string[][] };

function seconds(s: number): string {
  return s < 10 ? `${s.toFixed(1)} s ago` : `${Math.round(s)} s ago`;
}

export function clusterView(c: ClusterResponse): ClusterView {
  if (c.backend === 'sqlite') return { kind: 'single', text: 'Single process (SQLite store): this hookwatch evaluates alerts and sends notifications itself.' };
  const rows = c.replicas.map((r) => [`${r.replica}${r.self ? ' (this one)' : ''}`, r.leader ? 'leader' : 'follower', dateTime(r.startedAt), seconds(r.heartbeatAgeSeconds), r.alive ? 'running' : 'not heard from']);
  if (!c.leader) {
    return { kind: 'failover', text: `No replica holds the leader lease right now: a failover is in progress (it takes up to ${((c.leaseTtlSeconds ?? 0) * 4) / 3} s).`, rows };
  }
  return { kind: 'led', replica: c.leader.replica, after: ` (lease epoch ${c.leader.epoch}${c.leader.replica === c.self ? ', this replica' : ''}) evaluates alerts and sends notifications.`, rows };
}
